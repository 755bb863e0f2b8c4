//! `fedns webhook-provider` (in process) against fedns's own webhook
//! client standing in for external-dns (it speaks the protocol as
//! external-dns does: the wire format is checked against external-dns's
//! examples in fedns-providers), on an emulated host cluster, with the
//! controller answering what was published: negotiation offers the
//! Domains' zones, adjustendpoints normalises names and leaves out types
//! fedns does not publish, records round-trip byte for byte (external-dns's
//! TXT registry records included), a second instance claiming a name
//! another holds is refused, a caller without the token is refused, and
//! the name resolves through fedns's DNS server.

use std::time::Duration;

use fedns_api::DNSEndpoint;
use fedns_controller::cli::webhook_provider::metrics::WebhookMetrics;
use fedns_controller::cli::webhook_provider::{serve, WebhookServer, OWNER_LABEL};
use fedns_providers::webhook::api::{Changes, Client, Retry, WireEndpoint};
use fedns_sandbox::Emulator;
use kube::api::Api;

use crate::common::*;

async fn start(host: &kube::Client, namespace: &str, owner: &str, token: Option<&str>) -> String {
    start_counted(host, namespace, owner, token, WebhookMetrics::default()).await
}

/// [`start`], counting into `metrics`.
async fn start_counted(
    host: &kube::Client,
    namespace: &str,
    owner: &str,
    token: Option<&str>,
    metrics: WebhookMetrics,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    serve(
        listener,
        WebhookServer {
            client: host.clone(),
            namespace: namespace.into(),
            owner: owner.into(),
            domain_namespace: "fedns-system".into(),
            token: token.map(Into::into),
            metrics,
        },
    );
    url
}

fn external_dns(url: &str) -> Client {
    Client::new(url, Duration::from_secs(5), 32 << 20).unwrap()
}

fn ep(name: &str, rtype: &str, ttl: i64, targets: &[&str]) -> WireEndpoint {
    WireEndpoint {
        dns_name: name.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        record_type: rtype.into(),
        record_ttl: ttl,
        ..WireEndpoint::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_dns_publishes_into_fedns_through_the_webhook_provider() {
    let emulator = Emulator::start().await.unwrap();
    let host = client_of(&emulator).await;
    install_crds(&host, &["fedns-system", "team-a", "team-b"]).await;
    create_myfed_domain(&host, serde_json::json!({"domain": "example.com"})).await;
    let a = external_dns(&start(&host, "team-a", "cluster-a", None).await);
    let b = external_dns(&start(&host, "team-b", "cluster-b", None).await);

    let retry = Retry {
        attempts: 1,
        initial: Duration::from_millis(10),
    };
    let filter = a.negotiate(retry).await.unwrap();
    assert!(
        filter.matches("www.example.com") && !filter.matches("www.example.org"),
        "{}",
        filter.describe()
    );

    let adjusted = a
        .adjust(&[
            ep("WWW.Example.com.", "A", 0, &["192.0.2.10"]),
            ep("x.example.com", "NAPTR", 0, &["1"]),
        ])
        .await
        .unwrap();
    assert_eq!(adjusted, [ep("www.example.com", "A", 0, &["192.0.2.10"])]);

    // What external-dns's TXT registry writes beside its record.
    let mut registry = ep(
        "a-www.example.com",
        "TXT",
        0,
        &["\"heritage=external-dns,external-dns/owner=cluster-a,external-dns/resource=service/default/web\""],
    );
    registry.labels.insert("ownedRecord".into(), "www.example.com".into());
    let record = ep("www.example.com", "A", 30, &["192.0.2.10"]);
    a.apply(&Changes {
        create: vec![record.clone(), registry.clone()],
        ..Changes::default()
    })
    .await
    .unwrap();
    let mut held = a.records().await.unwrap();
    held.sort_by_key(|e| e.dns_name.clone());
    assert_eq!(held, [registry.clone(), record.clone()], "byte for byte");
    let stored: Api<DNSEndpoint> = Api::namespaced(host.clone(), "team-a");
    let object = stored.get("external-dns-cluster-a").await.unwrap();
    assert_eq!(object.metadata.labels.unwrap_or_default()[OWNER_LABEL], "cluster-a");

    // Another instance claiming the name: refused, naming the holder.
    let refused = b
        .apply(&Changes {
            create: vec![ep("www.example.com", "A", 30, &["192.0.2.20"])],
            ..Changes::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.status, Some(500));
    assert!(
        refused
            .message
            .contains("held by another external-dns instance's DNSEndpoint team-a/external-dns-cluster-a"),
        "{refused}"
    );
    assert!(b.records().await.unwrap().is_empty());

    // An update and a delete as external-dns sends them.
    let moved = ep("www.example.com", "A", 30, &["192.0.2.11"]);
    a.apply(&Changes {
        update_old: vec![record.clone()],
        update_new: vec![moved.clone()],
        create: vec![ep("api.example.com", "A", 30, &["192.0.2.12"])],
        ..Changes::default()
    })
    .await
    .unwrap();
    assert_eq!(a.records().await.unwrap().len(), 3);

    // A caller without the token of a server that requires one.
    let guarded = external_dns(&start(&host, "team-b", "cluster-c", Some("s3cret")).await);
    let refused = guarded.records().await.unwrap_err();
    assert_eq!(refused.status, Some(401), "{refused}");

    // The controller publishes the DNSEndpoint: the name resolves.
    let dir = temp_dir("webhook-serve");
    emulator.write_kubeconfig(&dir.join("host.kubeconfig")).unwrap();
    let dns = free_port();
    let _controller = spawn_controller(&dir, dns, free_port(), &["--udp-workers", "1"]);
    let took = eventually("www.example.com answered by fedns's DNS server", || {
        let got = dig(dns, "www.example.com", "A", false);
        saw(format!("{got:?}"));
        got == ["192.0.2.11"]
    })
    .await;
    println!("answered after {took:?}");
    assert_eq!(dig(dns, "api.example.com", "A", false), ["192.0.2.12"]);
    assert_eq!(
        dig(dns, "a-www.example.com", "TXT", false),
        ["\"heritage=external-dns,external-dns/owner=cluster-a,external-dns/resource=service/default/web\""]
    );
}

/// Every change the federation would not then serve is refused before
/// anything is stored (500 naming the rule or the holder: external-dns
/// sees nothing else), and counted on `/metrics`: a name the federation's
/// own records claimed first, a CNAME with an ownership TXT at its own
/// name (external-dns 0.17's registry), a name in no zone, a namespace the
/// Domain does not admit, another namespace's service name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_would_not_be_served_is_refused_before_it_is_stored() {
    let emulator = Emulator::start().await.unwrap();
    let host = client_of(&emulator).await;
    install_crds(&host, &["fedns-system", "team-a", "shop"]).await;
    create_myfed_domain(&host, serde_json::json!({"domain": "example.com"})).await;
    let domains: Api<fedns_api::Domain> = Api::namespaced(host.clone(), "fedns-system");
    domains
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                "metadata": {"name": "inner", "namespace": "fedns-system"},
                "spec": {"domain": "example.net", "allowedNamespaces": {"from": "Same"}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    // The federation's own record of shop.example.com (an Ingress record's).
    let federation: Api<DNSEndpoint> = Api::namespaced(host.clone(), "shop");
    federation
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
                "metadata": {"name": "ingress-shop", "namespace": "shop"},
                "spec": {"endpoints": [{"dnsName": "shop.example.com", "recordType": "A", "targets": ["192.0.2.30"]}]}})).unwrap(),
        )
        .await
        .unwrap();
    let metrics = WebhookMetrics::default();
    let a = external_dns(&start_counted(&host, "team-a", "cluster-a", None, metrics.clone()).await);
    a.apply(&Changes {
        create: vec![ep("www.example.com", "A", 30, &["192.0.2.10"])],
        ..Changes::default()
    })
    .await
    .unwrap();
    let before = a.records().await.unwrap();
    let mut legacy_registry = ep(
        "alias.example.com",
        "TXT",
        0,
        &["\"heritage=external-dns,external-dns/owner=cluster-a,external-dns/resource=service/default/web\""],
    );
    legacy_registry
        .labels
        .insert("ownedRecord".into(), "alias.example.com".into());
    let cases: Vec<(&str, Vec<WireEndpoint>, &str)> = vec![
        (
            "a name the federation's records hold",
            vec![ep("shop.example.com", "A", 30, &["192.0.2.40"])],
            "held by the federation's DNSEndpoint shop/ingress-shop",
        ),
        (
            "a CNAME with its ownership TXT at its own name",
            vec![
                ep("alias.example.com", "CNAME", 30, &["www.example.com"]),
                legacy_registry,
            ],
            "RFC 1034",
        ),
        (
            "a name in no zone",
            vec![ep("www.example.org", "A", 30, &["192.0.2.41"])],
            "in no zone of the federation",
        ),
        (
            "a zone that admits its own namespace only",
            vec![ep("www.example.net", "A", 30, &["192.0.2.42"])],
            "allowedNamespaces.from: Same",
        ),
        (
            "another namespace's service name",
            vec![ep("web.team-b.myfed.svc.example.com", "A", 30, &["192.0.2.43"])],
            "service name of namespace team-b",
        ),
    ];
    for (what, create, needle) in cases {
        let refused = a
            .apply(&Changes {
                create,
                ..Changes::default()
            })
            .await
            .unwrap_err();
        println!("{what}: {} {}", refused.status.unwrap_or_default(), refused.message);
        assert_eq!(refused.status, Some(500), "{what}");
        assert!(refused.message.contains(needle), "{what}: {refused}");
        assert_eq!(a.records().await.unwrap(), before, "{what}: nothing stored");
    }
    let mut text = String::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        "fedns_webhook_requests_total{path=\"/records\",method=\"POST\",code=\"204\"} 1",
        "fedns_webhook_requests_total{path=\"/records\",method=\"POST\",code=\"500\"} 5",
        "fedns_webhook_refused_changes_total{rule=\"held\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"cname\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"zone\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"namespace\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"service-name\"} 1",
        "fedns_webhook_records 1",
    ] {
        assert!(text.contains(line), "/metrics lacks {line}:\n{text}");
    }
}
