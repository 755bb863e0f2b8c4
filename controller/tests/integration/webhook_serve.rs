//! `fedns webhook-provider` (in process) against fedns's own webhook
//! client standing in for external-dns (it speaks the protocol as
//! external-dns does: the wire format is checked against external-dns's
//! examples in fedns-providers), on an emulated host cluster, with the
//! controller answering what was published: negotiation offers the
//! Domains' zones, adjustendpoints normalises names and leaves out types
//! fedns does not publish, records round-trip byte for byte (external-dns's
//! TXT registry records included), a second instance claiming a name
//! another holds is refused, a caller without the token is refused, and
//! the name resolves through fedns's DNS server. Who may call: no start
//! beyond loopback without authentication, TLS with a generated
//! certificate, mutual TLS refusing a client without a certificate; and a
//! DNSEndpoint of another namespace labelled as an instance's does not
//! keep that instance off names the controller would give it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fedns_api::DNSEndpoint;
use fedns_controller::cli::webhook_provider::auth::BearerToken;
use fedns_controller::cli::webhook_provider::metrics::WebhookMetrics;
use fedns_controller::cli::webhook_provider::{serve, serve_tls, tls, WebhookServer, OWNER_LABEL};
use fedns_kube_emulator::Emulator;
use fedns_providers::webhook::api::{Changes, Client, Retry, WireEndpoint};
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
            token: token.map(BearerToken::new),
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
    // Another instance in the same namespace.
    let b = external_dns(&start(&host, "team-a", "cluster-b", None).await);

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
    // external-dns's registry records are kept for it (GET /records gives
    // them back) and never published: a registry value in DNS would hand
    // the record it names to whoever it names.
    assert!(dig(dns, "a-www.example.com", "TXT", false).is_empty());
    assert!(a
        .records()
        .await
        .unwrap()
        .iter()
        .any(|e| e.dns_name.starts_with("a-www.") && !e.labels.contains_key("fedns.io/ownership-record")));
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
        // A hostile tenant (namespace team-a here) above, below and beside
        // other namespaces' names, as the issue reproduced it.
        (
            "a delegation above another namespace's service names",
            vec![ep("team-b.myfed.svc.example.com", "NS", 30, &["ns.attacker.test"])],
            "belongs to Domain fedns-system/myfed's namespace fedns-system",
        ),
        (
            "a certificate challenge for another namespace's service name",
            vec![ep(
                "_acme-challenge.web.team-b.myfed.svc.example.com",
                "TXT",
                30,
                &["token"],
            )],
            "service name of namespace team-b",
        ),
        (
            "a wildcard",
            vec![ep("*.example.com", "A", 30, &["192.0.2.66"])],
            "is a wildcard",
        ),
        (
            "the apex's certificate challenge",
            vec![ep("_acme-challenge.example.com", "TXT", 30, &["token"])],
            "underscore name of the zone apex",
        ),
        (
            "a name below a name another namespace holds",
            vec![ep("evil.shop.example.com", "A", 30, &["192.0.2.66"])],
            "shop.example.com, above or below it, is held by the federation's DNSEndpoint shop/ingress-shop",
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
        "fedns_webhook_requests_total{path=\"/records\",method=\"POST\",code=\"500\"} 10",
        "fedns_webhook_refused_changes_total{rule=\"held\"} 2",
        "fedns_webhook_refused_changes_total{rule=\"reserved\"} 3",
        "fedns_webhook_refused_changes_total{rule=\"cname\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"zone\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"namespace\"} 1",
        "fedns_webhook_refused_changes_total{rule=\"service-name\"} 2",
        "fedns_webhook_records 1",
    ] {
        assert!(text.contains(line), "/metrics lacks {line}:\n{text}");
    }
}

/// A DNSEndpoint of another namespace labelled as an instance's, and older
/// than the instance's own, keeps it off no name the controller would not
/// give that DNSEndpoint (a service name of the instance's namespace, a
/// zone whose selector leaves its namespace out); where the controller
/// does honour it (a zone admitting every namespace), the name is held, but
/// no longer as "another external-dns instance's". The controller then
/// serves what was accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_in_another_namespace_does_not_make_an_instance() {
    let emulator = Emulator::start().await.unwrap();
    let host = client_of(&emulator).await;
    // `apps` sorts before `team-a`: it holds a claim made in the same second.
    install_crds(&host, &["fedns-system", "team-a", "apps"]).await;
    create_myfed_domain(&host, serde_json::json!({"domain": "example.com"})).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(host.clone());
    namespaces
        .patch(
            "team-a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"dns": "external"}}})),
        )
        .await
        .unwrap();
    let domains: Api<fedns_api::Domain> = Api::namespaced(host.clone(), "fedns-system");
    domains
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                "metadata": {"name": "inner", "namespace": "fedns-system"},
                "spec": {"domain": "example.net", "allowedNamespaces": {
                    "from": "Selector", "selector": {"matchLabels": {"dns": "external"}}}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let tenant: Api<DNSEndpoint> = Api::namespaced(host.clone(), "apps");
    tenant
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
                "metadata": {"name": "external-dns-cluster-a", "namespace": "apps",
                             "labels": {OWNER_LABEL: "cluster-a"}},
                "spec": {"endpoints": [
                    {"dnsName": "web.team-a.myfed.svc.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "www.example.net", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "shop.example.com", "recordType": "A", "targets": ["192.0.2.66"]}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let a = external_dns(&start(&host, "team-a", "cluster-a", None).await);
    for name in ["web.team-a.myfed.svc.example.com", "www.example.net"] {
        a.apply(&Changes {
            create: vec![ep(name, "A", 30, &["192.0.2.10"])],
            ..Changes::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let refused = a
        .apply(&Changes {
            create: vec![ep("shop.example.com", "A", 30, &["192.0.2.10"])],
            ..Changes::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.status, Some(500));
    assert!(
        refused
            .message
            .contains("held by the federation's DNSEndpoint apps/external-dns-cluster-a"),
        "{refused}"
    );
    assert_eq!(a.records().await.unwrap().len(), 2);

    // The controller agrees: the instance's names are its, the tenant's is the tenant's.
    let dir = temp_dir("webhook-label");
    emulator.write_kubeconfig(&dir.join("host.kubeconfig")).unwrap();
    let dns = free_port();
    let _controller = spawn_controller(&dir, dns, free_port(), &["--udp-workers", "1"]);
    eventually("the instance's names answered by fedns's DNS server", || {
        let got = [
            dig(dns, "web.team-a.myfed.svc.example.com", "A", false),
            dig(dns, "www.example.net", "A", false),
        ];
        saw(format!("{got:?}"));
        got.iter().all(|g| g == &["192.0.2.10"])
    })
    .await;
    assert_eq!(dig(dns, "shop.example.com", "A", false), ["192.0.2.66"]);
}

/// `fedns webhook-provider --listen 0.0.0.0:...` without a token or client
/// certificates does not start, and says which flag to set (it stops
/// before binding anything or reading the kubeconfig).
#[test]
fn no_start_beyond_loopback_without_authentication() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args([
            "webhook-provider",
            "--kubeconfig=/nonexistent/host.kubeconfig",
            "--namespace=team-a",
            "--owner=cluster-a",
            "--listen=0.0.0.0:8888",
            "--health-listen=127.0.0.1:0",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("--listen 0.0.0.0:8888 is not a loopback address") && stderr.contains("set --token-file"),
        "{stderr}"
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate
/// signed by it, as PEM files in `dir` (`ca.crt`, `tls.crt`, `tls.key`,
/// `client.crt`, `client.key`).
fn write_certificates(dir: &Path, ca_name: &str) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, ca_name);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.crt"), ca.pem()).unwrap();
    for (name, sans, usage) in [
        ("tls", vec!["127.0.0.1".to_owned()], ExtendedKeyUsagePurpose::ServerAuth),
        ("client", vec![], ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let mut params = CertificateParams::new(sans).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("fedns-test-{name}"));
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// `GET /records` over TLS to `addr`, trusting the CA in `dir`, presenting
/// the client certificate in `client` (a directory [`write_certificates`]
/// wrote) if any: the response's head and body, or why there is none.
async fn tls_records(addr: std::net::SocketAddr, dir: &Path, client: Option<&Path>) -> Result<String, String> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(dir.join("ca.crt")).unwrap())
        .unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(client) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_file(client.join("client.crt")).unwrap()],
                PrivateKeyDer::from_pem_file(client.join("client.key")).unwrap(),
            )
            .unwrap(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::IpAddress(addr.ip().into());
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    stream
        .write_all(b"GET /records HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("writing: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(|e| format!("reading: {e}"))?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// TLS with a generated certificate: the protocol answers over it; with
/// mutual TLS (through the binary, as deployed), a client without a
/// certificate, or with one of another CA, gets no answer, and one with
/// the CA's certificate does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_mutual_tls() {
    let emulator = Emulator::start().await.unwrap();
    let host = client_of(&emulator).await;
    install_crds(&host, &["fedns-system", "team-a"]).await;
    let dir = temp_dir("webhook-tls");
    write_certificates(&dir, "fedns-test-ca");
    let stranger = dir.join("stranger");
    std::fs::create_dir_all(&stranger).unwrap();
    write_certificates(&stranger, "fedns-test-other-ca");

    let files = tls::CertificateFiles::load(&dir.join("tls.crt"), &dir.join("tls.key")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    serve_tls(
        listener,
        WebhookServer {
            client: host.clone(),
            namespace: "team-a".into(),
            owner: "cluster-a".into(),
            domain_namespace: "fedns-system".into(),
            token: None,
            metrics: WebhookMetrics::default(),
        },
        tls::server_config(files, None).unwrap(),
    );
    let answer = tls_records(addr, &dir, None).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("[]\n"),
        "{answer}"
    );

    // Mutual TLS, through the binary.
    emulator.write_kubeconfig(&dir.join("host.kubeconfig")).unwrap();
    let port = free_port();
    let path = |name: &str| dir.join(name).display().to_string();
    let _provider = spawn_fedns(&[
        "webhook-provider",
        &format!("--kubeconfig={}", path("host.kubeconfig")),
        "--namespace=team-a",
        "--owner=cluster-a",
        &format!("--listen=127.0.0.1:{port}"),
        &format!("--health-listen=127.0.0.1:{}", free_port()),
        &format!("--tls-cert-file={}", path("tls.crt")),
        &format!("--tls-key-file={}", path("tls.key")),
        &format!("--tls-client-ca-file={}", path("ca.crt")),
    ]);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut answer = Err(String::new());
    let started = std::time::Instant::now();
    while started.elapsed() < EVENTUALLY {
        answer = tls_records(addr, &dir, Some(&dir)).await;
        if answer.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answer = answer.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    for (what, client) in [("no certificate", None), ("another CA's", Some(stranger.as_path()))] {
        match tls_records(addr, &dir, client).await {
            Err(why) => println!("{what}: {why}"),
            Ok(answer) => assert!(!answer.contains("HTTP/1.1"), "{what}: answered {answer}"),
        }
    }
}
