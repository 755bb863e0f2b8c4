//! `fedns controller` against an emulated federation: three members in
//! two regions and three zones, plus a host cluster, through real
//! kubeconfigs; answers checked with `dig`. Failover waits with a 30 s
//! deadline and prints the time it took (the target, measured in bench/,
//! is under 5 s).

mod common;

use std::time::Duration;

use common::*;
use fedns_api::{DNSEndpoint, MemberCluster, ServiceDNSRecord};
use fedns_controller::federation::Federation;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

fn member_yaml(region: &str, zone: &str, ips: &[&str]) -> String {
    let ingress: Vec<String> = ips.iter().map(|ip| format!("{{ip: \"{ip}\"}}")).collect();
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{zone}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {zone}}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: 80}}]}}
status: {{loadBalancer: {{ingress: [{ingress}]}}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: true}}
ports: [{{port: 80}}]
"#,
        ingress = ingress.join(", ")
    )
}

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
spec: {domainRef: myfed, recordTTL: 30, dnsPrefix: www}
"#;

struct Setup {
    federation: Federation,
    dns_port: u16,
    metrics_port: u16,
    _controller: Process,
}

async fn setup(extra_members: &[(&str, &str, &str, &[&str])]) -> Setup {
    let dir = temp_dir("controller");
    let mut names = vec!["east-a", "east-b", "west"];
    names.extend(extra_members.iter().map(|m| m.0));
    let federation = Federation::start(&dir, "fedns-system", &names).await.unwrap();
    let seeds: Vec<(&str, &str, &str, &[&str])> = vec![
        ("east-a", "us-east-1", "us-east-1a", &["203.0.113.10"]),
        ("east-b", "us-east-1", "us-east-1b", &["203.0.113.20"]),
        ("west", "us-west-2", "us-west-2a", &["198.51.100.10", "2001:db8::10"]),
    ];
    for (name, region, zone, ips) in seeds.iter().chain(extra_members.iter()) {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &member_yaml(region, zone, ips))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let dns_port = free_port();
    let metrics_port = free_port();
    let controller = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        dir.join("host.kubeconfig").to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics_port}"),
        "--udp-workers",
        "1",
    ]);
    Setup {
        federation,
        dns_port,
        metrics_port,
        _controller: controller,
    }
}

fn table(endpoint: &DNSEndpoint) -> Vec<String> {
    let mut rows: Vec<String> = endpoint
        .spec
        .endpoints
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_and_fails_over() {
    let s = setup(&[]).await;
    let host = client_of(&s.federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    let expected = vec![
        "nginx.ns.myfed.svc.example.com A 198.51.100.10,203.0.113.10,203.0.113.20",
        "nginx.ns.myfed.svc.example.com AAAA 2001:db8::10",
        "nginx.ns.myfed.svc.us-east-1.example.com A 203.0.113.10,203.0.113.20",
        "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com A 203.0.113.10",
        "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com A 203.0.113.20",
        "nginx.ns.myfed.svc.us-west-2.example.com A 198.51.100.10",
        "nginx.ns.myfed.svc.us-west-2.example.com AAAA 2001:db8::10",
        "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com A 198.51.100.10",
        "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com AAAA 2001:db8::10",
        "www.example.com CNAME nginx.ns.myfed.svc.example.com",
    ];
    let mut last = Vec::new();
    for _ in 0..600 {
        if let Ok(e) = endpoints.get("service-nginx").await {
            last = table(&e);
            if last == expected {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last, expected, "DNSEndpoint service-nginx");
    let dnsendpoint = endpoints.get("service-nginx").await.unwrap();
    let owner = &dnsendpoint.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ServiceDNSRecord", "nginx")
    );

    let port = s.dns_port;
    eventually("the embedded server answers the global name", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.10", "203.0.113.20"]
    })
    .await;
    assert_eq!(dig(port, GLOBAL, "AAAA", true), ["2001:db8::10"]);
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1.example.com", "A", false),
        ["203.0.113.10", "203.0.113.20"]
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com", "A", false),
        ["203.0.113.20"]
    );
    assert_eq!(
        dig(port, "www.example.com", "A", false).len(),
        4,
        "CNAME plus three addresses"
    );

    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let record = records.get("nginx").await.unwrap();
    let status = record.status.unwrap();
    assert_eq!(status.dns.len(), 3);
    assert_eq!(status.domain.as_deref(), Some("example.com"));
    assert!(fedns_api::conditions::is_true(&status.conditions, "Ready"));
    let clusters: Api<MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    let west_status = clusters.get("west").await.unwrap().status.unwrap();
    assert_eq!(west_status.region.as_deref(), Some("us-west-2"));
    assert_eq!(west_status.zones, ["us-west-2a"]);
    assert!(west_status.kubernetes_version.is_some());
    assert!(west_status.last_probe_time.is_some());

    // 1. A member's API server stops: it leaves every answer; its names fall back by CNAME.
    let west = s.federation.member("west").unwrap().clone();
    west.stop();
    let took = eventually("failover after the west API server stops", || {
        dig(port, GLOBAL, "A", false) == ["203.0.113.10", "203.0.113.20"]
    })
    .await;
    println!("failover time: {took:?}");
    assert!(dig(port, GLOBAL, "AAAA", false).is_empty());
    let region = dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false);
    assert_eq!(
        region,
        ["203.0.113.10", "203.0.113.20", "nginx.ns.myfed.svc.example.com."]
    );
    let zone = dig(port, "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com", "A", false);
    assert!(
        zone.contains(&"nginx.ns.myfed.svc.us-west-2.example.com.".to_string()),
        "{zone:?}"
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com", "A", false),
        ["203.0.113.10"]
    );
    let reason = clusters.get("west").await.unwrap().status.unwrap();
    let ready = fedns_api::conditions::get(&reason.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ClusterNotReachable")
    );
    west.resume().await.unwrap();
    eventually("west comes back after its API server returns", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 2. Endpoints become not ready in east-b.
    let east_b = s.federation.member("east-b").unwrap().clone();
    let slices_info = east_b
        .store()
        .resource("discovery.k8s.io", "v1", "endpointslices")
        .unwrap();
    let set_ready = |ready: bool| {
        east_b
            .store()
            .patch(
                &slices_info,
                Some("ns"),
                "nginx-abcde",
                fedns_sandbox::PatchKind::Json,
                json!([{"op": "replace", "path": "/endpoints/0/conditions/ready", "value": ready}]),
                None,
                fedns_sandbox::Target::Main,
            )
            .unwrap()
    };
    set_ready(false);
    eventually("east-b leaves when its endpoints are not ready", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.10"]
    })
    .await;
    set_ready(true);
    eventually("east-b returns with ready endpoints", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 3. The load balancer address disappears in east-a.
    let east_a = s.federation.member("east-a").unwrap().clone();
    let services_info = east_a.store().resource("", "v1", "services").unwrap();
    let set_lb = |ingress: serde_json::Value| {
        east_a
            .store()
            .patch(
                &services_info,
                Some("ns"),
                "nginx",
                fedns_sandbox::PatchKind::Merge,
                json!({"status": {"loadBalancer": {"ingress": ingress}}}),
                None,
                fedns_sandbox::Target::Status,
            )
            .unwrap()
    };
    set_lb(json!([]));
    eventually("east-a leaves without a load balancer address", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.20"]
    })
    .await;
    set_lb(json!([{"ip": "203.0.113.10"}]));
    eventually("east-a returns with its address", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 4. Cordon and uncordon.
    let cordon = |value: bool| {
        let clusters = clusters.clone();
        async move {
            clusters
                .patch(
                    "east-a",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"cordoned": value}})),
                )
                .await
                .unwrap();
        }
    };
    cordon(true).await;
    eventually("a cordoned cluster leaves", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.20"]
    })
    .await;
    let cordoned = clusters.get("east-a").await.unwrap().status.unwrap();
    assert_eq!(
        fedns_api::conditions::get(&cordoned.conditions, "Ready")
            .unwrap()
            .reason,
        "Cordoned"
    );
    cordon(false).await;
    eventually("an uncordoned cluster returns", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 5. A member deleted.
    clusters.delete("west", &DeleteParams::default()).await.unwrap();
    eventually("a deleted member leaves", || {
        dig(port, GLOBAL, "A", false) == ["203.0.113.10", "203.0.113.20"]
    })
    .await;

    // Metrics.
    let (code, body) = http_get(&format!("http://127.0.0.1:{}/metrics", s.metrics_port)).await;
    assert_eq!(code, 200);
    for metric in [
        "fedns_member_clusters{state=\"ready\"}",
        "fedns_member_probe_duration_seconds_bucket",
        "fedns_reconciles_total",
        "fedns_dnsendpoint_writes_total",
        "fedns_change_to_dnsendpoint_write_seconds_bucket",
        "fedns_dns_queries_total",
    ] {
        assert!(body.contains(metric), "{metric} missing from /metrics");
    }
    s.federation.stop();
}
