//! `spec.minHealthy` end to end: a cluster with too few of its load
//! balancer addresses passing their probes, or too few ready endpoints,
//! leaves the answer whole, while it would otherwise stay with what is
//! left. Load balancers are real responders on loopback (127.0.42.x);
//! answers are read with `dig`, reasons from the controller's
//! `/debug/explain`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::health_e2e::PROBED_HOST_YAML;
use fedns_api::ServiceDNSRecord;
use fedns_controller::federation::Federation;
use fedns_standins::responder::Responder;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

fn member_yaml(region: &str, ips: &[&str], port: u16, endpoints: usize) -> String {
    let points: Vec<String> = ips.iter().map(|ip| format!("{{ip: \"{ip}\"}}")).collect();
    let endpoints: Vec<String> = (0..endpoints)
        .map(|i| format!("  - addresses: [\"10.1.0.{}\"]\n    conditions: {{ready: true}}", i + 1))
        .collect();
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {region}a}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: {port}}}]}}
status: {{loadBalancer: {{ingress: [{points}]}}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints:
{endpoints}
"#,
        points = points.join(", "),
        endpoints = endpoints.join("\n")
    )
}

/// A federation of `members` (name, load balancer IPs, endpoints), each
/// IP answered by a responder (one port for all, in the order given),
/// with ServiceDNSRecord `ns/nginx` probed every second and `spec_extra`
/// (YAML lines at the spec's indentation) added to its spec; the
/// controller running.
struct Started {
    responders: Vec<Responder>,
    federation: Federation,
    dns_port: u16,
    metrics_port: u16,
    _controller: Process,
}

async fn start(tag: &str, members: &[(&str, &[&str], usize)], spec_extra: &str) -> Started {
    let ips: Vec<&str> = members.iter().flat_map(|m| m.1.iter().copied()).collect();
    let first = Responder::start(format!("{}:0", ips[0]).parse().unwrap(), None)
        .await
        .unwrap();
    let port = first.address().port();
    let mut responders = vec![first];
    for ip in &ips[1..] {
        responders.push(
            Responder::start(SocketAddr::new(ip.parse().unwrap(), port), None)
                .await
                .unwrap(),
        );
    }
    let dir = temp_dir(tag);
    let names: Vec<&str> = members.iter().map(|m| m.0).collect();
    let federation = Federation::start(&dir, "fedns-system", &names).await.unwrap();
    for (name, ips, endpoints) in members {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &member_yaml(&format!("region-{name}"), ips, port, *endpoints))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    let record = format!(
        "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: ServiceDNSRecord\nmetadata: {{name: nginx, namespace: ns}}\nspec:\n  domainRef: myfed\n  recordTTL: 5\n  healthCheck: {{protocol: HTTP, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1}}\n{spec_extra}\n"
    );
    federation
        .host
        .seed_yaml("host", &format!("{PROBED_HOST_YAML}---\n{record}"))
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    Started {
        responders,
        federation,
        dns_port,
        metrics_port,
        _controller: controller,
    }
}

fn answers_are(port: u16, want: &[&str]) -> bool {
    dig(port, GLOBAL, "A", false) == want
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_below_its_minimum_leaves_whole() {
    // a: two addresses, 2 endpoints; b: one address, 4 endpoints.
    let Started {
        responders,
        federation,
        dns_port,
        metrics_port,
        _controller,
    } = start(
        "min-healthy",
        &[("a", &["127.0.42.1", "127.0.42.2"], 2), ("b", &["127.0.42.3"], 4)],
        "  minHealthy: {addresses: \"100%\", endpoints: \"50%\"}",
    )
    .await;
    let all = ["127.0.42.1", "127.0.42.2", "127.0.42.3"];
    eventually("every address and endpoint up", || answers_are(dns_port, &all)).await;

    // One of a's two load balancer addresses fails: under "100%" a leaves
    // whole (without a minimum it would stay on 127.0.42.1).
    responders[1].stop();
    eventually("a below minHealthy.addresses", || {
        answers_are(dns_port, &["127.0.42.3"])
    })
    .await;
    explained(
        metrics_port,
        GLOBAL,
        "below minHealthy.addresses 100%: 1 of 2 address(es) passing, 2 needed",
    )
    .await;
    responders[1].resume().await.unwrap();
    eventually("a's address back", || answers_are(dns_port, &all)).await;

    // 1 of b's 4 endpoints ready: below 50 %.
    let b = client_of(federation.member("b").unwrap()).await;
    let slices: Api<EndpointSlice> = Api::namespaced(b, "ns");
    let endpoints = |ready: usize| {
        let list: Vec<_> = (0..4)
            .map(|i| json!({"addresses": [format!("10.1.0.{}", i + 1)], "conditions": {"ready": i < ready}}))
            .collect();
        json!({"endpoints": list})
    };
    slices
        .patch("nginx-abcde", &PatchParams::default(), &Patch::Merge(endpoints(1)))
        .await
        .unwrap();
    eventually("b below minHealthy.endpoints", || {
        answers_are(dns_port, &["127.0.42.1", "127.0.42.2"])
    })
    .await;
    explained(
        metrics_port,
        GLOBAL,
        "below minHealthy.endpoints 50%: 1 of 4 endpoint(s) ready, 2 needed",
    )
    .await;
    slices
        .patch("nginx-abcde", &PatchParams::default(), &Patch::Merge(endpoints(2)))
        .await
        .unwrap();
    eventually("b at 2 of 4", || answers_are(dns_port, &all)).await;

    // Every cluster below its minimum: fail-open, as for any health removal.
    responders[1].stop();
    slices
        .patch("nginx-abcde", &PatchParams::default(), &Patch::Merge(endpoints(0)))
        .await
        .unwrap();
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let started = Instant::now();
    loop {
        let record = records.get("nginx").await.unwrap();
        let ready = record
            .status
            .as_ref()
            .and_then(|s| fedns_api::conditions::get(&s.conditions, "Ready").cloned());
        if ready.as_ref().is_some_and(|c| c.reason == "AllUnhealthy") {
            println!("fail-open after {:?}", started.elapsed());
            break;
        }
        assert_ne!(dig_status(dns_port, GLOBAL, "A"), "NXDOMAIN");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no AllUnhealthy within 30 s: {ready:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    federation.stop();
}

/// `spec.fallbackTarget` answers when no cluster counts healthy, before
/// fail-open: its clusters whatever their probes say, or a CNAME out of
/// the federation; without it, fail-open as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_target_answers_before_fail_open() {
    let Started {
        responders,
        federation,
        dns_port,
        metrics_port,
        _controller,
    } = start(
        "fallback-target",
        &[("a", &["127.0.43.1"], 1), ("b", &["127.0.43.2"], 1)],
        "  fallbackTarget: {clusters: [b]}",
    )
    .await;
    let (first, second) = (&responders[0], &responders[1]);
    let both = ["127.0.43.1", "127.0.43.2"];
    eventually("both healthy", || answers_are(dns_port, &both)).await;
    first.stop();
    eventually("a down", || answers_are(dns_port, &["127.0.43.2"])).await;
    // Both down: the fallback cluster b, not fail-open's a and b.
    second.stop();
    eventually("both down: fallbackTarget b", || answers_are(dns_port, &["127.0.43.2"])).await;
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let reason = |record: &ServiceDNSRecord| {
        record
            .status
            .as_ref()
            .and_then(|s| fedns_api::conditions::get(&s.conditions, "Ready").map(|c| c.reason.clone()))
    };
    let started = Instant::now();
    while reason(&records.get("nginx").await.unwrap()).as_deref() != Some("ServingFallback") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no Ready=False ServingFallback within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    explained(metrics_port, GLOBAL, "served as spec.fallbackTarget").await;
    // Not fail-open's both: b alone, well after the condition was written.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        dig(dns_port, GLOBAL, "A", false),
        ["127.0.43.2"],
        "the fallback cluster only"
    );

    // A CNAME out of the federation instead.
    let patch = |target: serde_json::Value| Patch::Merge(json!({"spec": {"fallbackTarget": target}}));
    records
        .patch(
            "nginx",
            &PatchParams::default(),
            &patch(json!({"clusters": null, "cname": "maintenance.example.net"})),
        )
        .await
        .unwrap();
    eventually("both down: CNAME to the fallback", || {
        answers_are(dns_port, &["maintenance.example.net."])
    })
    .await;
    // No fallback target: fail-open serves every cluster.
    records
        .patch("nginx", &PatchParams::default(), &patch(serde_json::Value::Null))
        .await
        .unwrap();
    eventually("no fallbackTarget: fail-open", || answers_are(dns_port, &both)).await;
    // Health back: the clusters themselves.
    first.resume().await.unwrap();
    eventually("a back", || answers_are(dns_port, &["127.0.43.1"])).await;
    federation.stop();
}
