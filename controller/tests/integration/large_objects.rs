//! A DNSEndpoint over the object size limit is never sent.
//! `fedns controller --max-object-bytes` set low, one member, two
//! Services: `nginx` (one address) fits, `huge` (300 addresses) does not.
//! `huge` gets Ready=False reason ObjectTooLarge and a Warning Event, its
//! DNSEndpoint never holds the 300 addresses (the emulator has no size
//! limit: an attempt would have succeeded), and `nginx` keeps publishing
//! changes.
//! When `huge` shrinks it is written and Ready again.

use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::{conditions, DNSEndpoint, ServiceDNSRecord};
use fedns_controller::federation::Federation;
use fedns_controller::records::object_size::SERVER_ADDED_BYTES;
use k8s_openapi::api::events::v1::Event;
use kube::api::Api;
use serde_json::json;

const NGINX: &str = "nginx.ns.myfed.svc.example.com";
const HUGE: &str = "huge.ns.myfed.svc.example.com";

fn service_yaml(name: &str, ips: &[String]) -> String {
    let ingress: Vec<String> = ips.iter().map(|ip| format!("{{ip: \"{ip}\"}}")).collect();
    format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: 80}}]}}
status: {{loadBalancer: {{ingress: [{}]}}}}
"#,
        ingress.join(", ")
    )
}

const MEMBER_YAML: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/region: eu, topology.kubernetes.io/zone: eu-1a}
"#;

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, allowServiceWithoutEndpoints: true}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: huge, namespace: ns}
spec: {domainRef: myfed, allowServiceWithoutEndpoints: true}
"#;

/// Polls the async `check` until it gives a value (30 s at most).
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            println!("{what}: after {:?}", started.elapsed());
            return value;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn ready_of(records: &Api<ServiceDNSRecord>, name: &str) -> Option<(String, String, String)> {
    let record = records.get(name).await.ok()?;
    let status = record.status?;
    let ready = conditions::get(&status.conditions, conditions::READY)?;
    Some((ready.status.clone(), ready.reason.clone(), ready.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_dnsendpoint_is_reported_never_sent() {
    let dir = temp_dir("large-objects");
    let federation = Federation::start(&dir, "fedns-system", &["m1"]).await.unwrap();
    let member = federation.member("m1").unwrap().clone();
    let many: Vec<String> = (0..300).map(|i| format!("10.9.{}.{}", i / 250, i % 250 + 1)).collect();
    member.seed_yaml("m1", MEMBER_YAML).unwrap();
    member
        .seed_yaml("nginx", &service_yaml("nginx", &["203.0.113.10".into()]))
        .unwrap();
    member.seed_yaml("huge", &service_yaml("huge", &many)).unwrap();
    federation.register("m1", json!({})).unwrap();
    federation.host.seed_yaml("host", HOST_YAML).unwrap();

    // 300 addresses on three names are about 16 KB of JSON; one address fits.
    let limit = SERVER_ADDED_BYTES + 8 * 1024;
    let dns_port = free_port();
    let metrics_port = free_port();
    let _controller = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        dir.join("host.kubeconfig").to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics_port}"),
        "--udp-workers",
        "1",
        "--max-object-bytes",
        &limit.to_string(),
    ]);
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");

    eventually("nginx answers", || dig(dns_port, NGINX, "A", false) == ["203.0.113.10"]).await;
    let (status, reason, message) = wait_for("huge is reported too large", || async {
        ready_of(&records, "huge")
            .await
            .filter(|r| r.1 == conditions::OBJECT_TOO_LARGE)
    })
    .await;
    println!("huge: Ready={status} {reason}: {message}");
    assert_eq!(status, "False");
    assert!(
        message.contains("ns/service-huge") && message.contains(&format!("{limit}-byte")),
        "{message}"
    );
    assert!(
        message.contains("300 targets") || message.contains("targets"),
        "{message}"
    );
    let event = wait_for("a Warning Event on huge", || async {
        let events: Api<Event> = Api::namespaced(host.clone(), "ns");
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("huge")
                && e.reason.as_deref() == Some(conditions::OBJECT_TOO_LARGE)
        })
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event.note.as_deref().unwrap_or_default().contains("not written"),
        "{event:?}"
    );
    let (_, text) = http_get(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert!(text.contains("fedns_dnsendpoints_too_large 1"), "metric: {text}");

    // Never attempted: the emulator would have stored it. (A DNSEndpoint
    // without targets may be there: written before the member's Service
    // was seen; it stays as it was.)
    let small = || async {
        let stored = endpoints.get_opt("service-huge").await.unwrap();
        stored.is_none_or(|e| e.spec.endpoints.iter().all(|e| e.targets.len() < 300))
    };
    assert!(small().await, "the oversized DNSEndpoint was written");
    assert_eq!(dig_status(dns_port, HUGE, "A"), "NXDOMAIN");
    assert!(conditions::is_true(
        &records.get("nginx").await.unwrap().status.unwrap().conditions,
        conditions::READY
    ));

    // Every other record keeps publishing: nginx's address changes.
    let services = member.store().resource("", "v1", "services").unwrap();
    let set_lb = |name: &str, ips: &[String]| {
        let ingress: Vec<serde_json::Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        member
            .store()
            .patch(
                &services,
                Some("ns"),
                name,
                fedns_kube_emulator::PatchKind::Merge,
                json!({"status": {"loadBalancer": {"ingress": ingress}}}),
                None,
                fedns_kube_emulator::Target::Status,
            )
            .unwrap()
    };
    set_lb("nginx", &["203.0.113.11".into()]);
    eventually("nginx publishes its new address while huge is too large", || {
        dig(dns_port, NGINX, "A", false) == ["203.0.113.11"]
    })
    .await;
    assert!(small().await, "the oversized DNSEndpoint was written");

    // huge shrinks: written, answered, Ready again.
    set_lb("huge", &many[..2]);
    eventually("huge is published once it fits", || {
        dig(dns_port, HUGE, "A", false) == ["10.9.0.1", "10.9.0.2"]
    })
    .await;
    let (status, reason, _) = wait_for("huge is Ready", || async {
        ready_of(&records, "huge").await.filter(|r| r.0 == "True")
    })
    .await;
    assert_eq!(reason, "Published");
    let (_, text) = http_get(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert!(text.contains("fedns_dnsendpoints_too_large 0"), "metric: {text}");
    println!("huge: Ready={status} {reason}");
}
