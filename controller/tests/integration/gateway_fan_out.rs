//! A Gateway change that reaches many routes: 40 HTTPRoutes behind one
//! Gateway per member, each followed by a RouteDNSRecord. When member a's
//! Gateway gets a new address, every route's answer moves to it through
//! the controller's preview (the specs published before they are
//! written, `fedns_dnsendpoint_previews_total`), and every DNSEndpoint is
//! written with it afterwards. Changed and changed back at once, every
//! answer and every DNSEndpoint ends at the first address (no preview is
//! left standing). Addresses are TEST-NET ones: nothing probes them.

use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::DNSEndpoint;
use fedns_controller::federation::Federation;
use kube::api::{Api, ListParams};
use serde_json::json;

/// Routes behind each Gateway.
const ROUTES: usize = 40;

/// Member `m`'s extra routes `ns/r<i>` for `r<i>.example.com` through its
/// Gateway `infra/gw` (beside `crate::routes_e2e::member_yaml`'s `shop`).
fn routes_yaml() -> String {
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": type_, "message": "",
               "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:00:00Z"})
    };
    (0..ROUTES)
        .map(|i| {
            let route = json!({
                "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": format!("r{i}"), "namespace": "ns", "generation": 1},
                "spec": {"parentRefs": [{"name": "gw", "namespace": "infra"}],
                         "hostnames": [format!("r{i}.example.com")],
                         "rules": [{"backendRefs": [{"name": "web", "port": 8080}]}]},
                "status": {"parents": [{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "infra"},
                                        "controllerName": "example.net/gateway-controller",
                                        "conditions": [condition("Accepted"), condition("ResolvedRefs")]}]},
            });
            format!("---\n{}\n", serde_json::to_string(&route).unwrap())
        })
        .collect()
}

fn records_yaml() -> String {
    (0..ROUTES)
        .map(|i| {
            format!(
                "---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {{name: r{i}, namespace: ns}}\nspec: {{routeKind: HTTPRoute, recordTTL: 5}}\n"
            )
        })
        .collect()
}

/// Sets member `member`'s Gateway `infra/gw` address to `ip`.
fn set_gateway_address(federation: &Federation, member: &str, ip: &str) {
    let store = federation.member(member).unwrap().store();
    let gateways = store.resource("gateway.networking.k8s.io", "v1", "gateways").unwrap();
    store
        .patch(
            &gateways,
            Some("infra"),
            "gw",
            fedns_kube_emulator::PatchKind::Merge,
            json!({"status": {"addresses": [{"type": "IPAddress", "value": ip}]}}),
            None,
            fedns_kube_emulator::Target::Status,
        )
        .unwrap();
}

/// Every route's answer, in order.
fn answers(port: u16) -> Vec<Vec<String>> {
    (0..ROUTES)
        .map(|i| dig(port, &format!("r{i}.example.com"), "A", false))
        .collect()
}

/// Whether every route DNSEndpoint holds `ip` (and none `not`).
async fn every_endpoint_has(endpoints: &Api<DNSEndpoint>, ip: &str, not: &str) -> bool {
    let list = endpoints.list(&ListParams::default()).await.unwrap();
    let routes: Vec<&DNSEndpoint> = list
        .items
        .iter()
        .filter(|e| e.metadata.name.as_deref().is_some_and(|n| n.starts_with("route-r")))
        .collect();
    routes.len() == ROUTES
        && routes.iter().all(|e| {
            let targets: Vec<&String> = e.spec.endpoints.iter().flat_map(|p| p.targets.iter()).collect();
            targets.iter().any(|t| *t == ip) && !targets.iter().any(|t| *t == not)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_change_reaching_many_routes_is_previewed_then_written() {
    let dir = temp_dir("fan-out");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, ip) in [("a", "203.0.113.81"), ("b", "203.0.113.82")] {
        let yaml = crate::routes_e2e::member_yaml(&format!("region-{name}"), ip) + &routes_yaml();
        federation.member(name).unwrap().seed_yaml(name, &yaml).unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation
        .host
        .seed_yaml("host", &format!("{MYFED_HOST_YAML}{}", records_yaml()))
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "ns");
    let first = vec!["203.0.113.81".to_owned(), "203.0.113.82".to_owned()];
    eventually("every route answers both Gateways", || {
        answers(dns_port).iter().all(|a| *a == first)
    })
    .await;
    // The cold start's writes settled: the DNSEndpoints exist and hold both.
    let settle = Instant::now();
    while !every_endpoint_has(&endpoints, "203.0.113.81", "203.0.113.90").await {
        assert!(settle.elapsed() < Duration::from_secs(30), "DNSEndpoints not written");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let previews = || metric(metrics_port, "fedns_dnsendpoint_previews_total");
    let before = previews().await;

    // a's Gateway moves: every route follows, previewed.
    set_gateway_address(&federation, "a", "203.0.113.90");
    let moved = vec!["203.0.113.82".to_owned(), "203.0.113.90".to_owned()];
    let took = eventually("every route answers a's new address", || {
        answers(dns_port).iter().all(|a| *a == moved)
    })
    .await;
    let previewed = previews().await - before;
    println!("{ROUTES} routes moved in {took:?}; {previewed} DNSEndpoints previewed");
    assert!(previewed >= 1.0, "the change was previewed ({previewed})");
    let written = Instant::now();
    while !every_endpoint_has(&endpoints, "203.0.113.90", "203.0.113.81").await {
        assert!(
            written.elapsed() < Duration::from_secs(30),
            "the new address not written to every DNSEndpoint"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Moved and moved back before the writes: everything ends where it began.
    set_gateway_address(&federation, "a", "203.0.113.91");
    set_gateway_address(&federation, "a", "203.0.113.90");
    tokio::time::sleep(Duration::from_secs(3)).await;
    eventually("every route answers a's address of before", || {
        answers(dns_port).iter().all(|a| *a == moved)
    })
    .await;
    let stored = Instant::now();
    while !every_endpoint_has(&endpoints, "203.0.113.90", "203.0.113.91").await {
        assert!(
            stored.elapsed() < Duration::from_secs(30),
            "a DNSEndpoint kept the address in between"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And it stays so: no preview left standing over a stored spec.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(answers(dns_port).iter().all(|a| *a == moved), "{:?}", answers(dns_port));
    federation.stop();
}

/// A metric's value from the controller's `/metrics` (0 when absent).
async fn metric(port: u16, name: &str) -> f64 {
    // Through the tests' own HTTP client: a fresh machine has no curl
    // (the fresh-machine rehearsal found this test relying on it).
    let (code, body) = http_get(&format!("http://127.0.0.1:{port}/metrics")).await;
    assert_eq!(code, 200, "/metrics answered {code}: {body}");
    body.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0.0)
}
