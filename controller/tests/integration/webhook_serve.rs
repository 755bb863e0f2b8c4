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
use fedns_controller::cli::webhook_provider::{serve, WebhookServer, OWNER_LABEL};
use fedns_providers::webhook::api::{Changes, Client, Retry, WireEndpoint};
use fedns_sandbox::Emulator;
use kube::api::Api;

use crate::common::*;

async fn start(host: &kube::Client, namespace: &str, owner: &str, token: Option<&str>) -> String {
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
