//! A Gateway change that reaches many routes: 40 HTTPRoutes behind one
//! Gateway per member, each followed by a RouteDNSRecord. When member a's
//! Gateway gets a new address, every route's answer moves to it through
//! the controller's preview (the specs published before they are
//! written, `fedns_dnsendpoint_previews_total`), and every DNSEndpoint is
//! written with it afterwards. Changed and changed back at once, every
//! answer and every DNSEndpoint ends at the first address (no preview is
//! left standing). A hostile tenant's routes behind the same Gateway,
//! previewed in the same change, take no other namespace's name.
//! Addresses are TEST-NET ones: nothing probes them.

use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::DNSEndpoint;
use fedns_controller::federation::Federation;
use kube::api::{Api, ListParams};
use serde_json::json;

/// Routes behind each Gateway.
const ROUTES: usize = 40;

/// An accepted HTTPRoute `namespace/name` for `hostnames` through the
/// member's Gateway `infra/gw`, to the Service `web` of its namespace.
fn route_yaml(namespace: &str, name: &str, hostnames: &[&str]) -> String {
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": type_, "message": "",
               "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:00:00Z"})
    };
    let route = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "infra"}],
                 "hostnames": hostnames,
                 "rules": [{"backendRefs": [{"name": "web", "port": 8080}]}]},
        "status": {"parents": [{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "infra"},
                                "controllerName": "example.net/gateway-controller",
                                "conditions": [condition("Accepted"), condition("ResolvedRefs")]}]},
    });
    format!("---\n{}\n", serde_json::to_string(&route).unwrap())
}

/// Member `m`'s extra routes `ns/r<i>` for `r<i>.example.com` through its
/// Gateway `infra/gw` (beside `crate::routes_e2e::member_yaml`'s `shop`).
fn routes_yaml() -> String {
    (0..ROUTES)
        .map(|i| route_yaml("ns", &format!("r{i}"), &[&format!("r{i}.example.com")]))
        .collect()
}

/// A RouteDNSRecord `namespace/name` following the HTTPRoute of its name.
fn record_yaml(namespace: &str, name: &str) -> String {
    format!(
        "---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec: {{routeKind: HTTPRoute, recordTTL: 5}}\n"
    )
}

fn records_yaml() -> String {
    (0..ROUTES).map(|i| record_yaml("ns", &format!("r{i}"))).collect()
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

/// Namespace `mallory`'s routes in member a, behind the same shared
/// Gateway as `ns`'s: one at a name `ns` holds, one below a name `ns`
/// holds, and one of its own (the apex and service names above are in
/// `tenancy_e2e`).
const MALLORY: [(&str, &str); 3] = [
    ("same", "r0.example.com"),
    ("below", "x.r1.example.com"),
    ("own", "promo.example.com"),
];

fn mallory_member_yaml() -> String {
    let mut yaml = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: mallory}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: mallory}\nspec: {ports: [{port: 8080}]}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-abcde\n  namespace: mallory\n  labels: {kubernetes.io/service-name: web}\naddressType: IPv4\nendpoints:\n  - addresses: [\"10.1.0.6\"]\n    conditions: {ready: true}\n".to_owned();
    for (name, host) in MALLORY {
        yaml.push_str(&route_yaml("mallory", name, &[host]));
    }
    yaml
}

/// A hostile tenant inside a previewed fan-out. Namespace `mallory` has
/// routes behind member a's shared Gateway claiming a name `ns` holds and
/// a name below one, each with its RouteDNSRecord made after `ns`'s, so
/// its DNSEndpoints exist and are refused. When a's Gateway moves, the
/// change reaches `ns`'s 40 records and mallory's 3 together and is
/// previewed: mallory's proposals go through the same publishing rules as
/// its stored DNSEndpoints, so no answer for `ns`'s names ever shows
/// mallory's route (member a alone), the name below stays unpublished,
/// and mallory's own name follows the Gateway like anyone's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenant_in_a_previewed_fan_out_changes_no_other_answer() {
    let dir = temp_dir("fan-out-tenancy");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, ip) in [("a", "203.0.113.81"), ("b", "203.0.113.82")] {
        let mut yaml = crate::routes_e2e::member_yaml(&format!("region-{name}"), ip) + &routes_yaml();
        if name == "a" {
            yaml.push_str(&mallory_member_yaml());
        }
        federation.member(name).unwrap().seed_yaml(name, &yaml).unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: mallory}}\n{}",
                records_yaml()
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let first = vec!["203.0.113.81".to_owned(), "203.0.113.82".to_owned()];
    eventually("every route of ns answers both Gateways", || {
        answers(dns_port).iter().all(|a| *a == first)
    })
    .await;

    // creationTimestamp has whole seconds: mallory's records come later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let records: Api<fedns_api::RouteDNSRecord> = Api::namespaced(host.clone(), "mallory");
    for (name, _) in MALLORY {
        let record = serde_yaml_ng::from_str(&record_yaml("mallory", name)).unwrap();
        records.create(&Default::default(), &record).await.unwrap();
    }
    eventually("mallory's own name is served", || {
        dig(dns_port, "promo.example.com", "A", false) == ["203.0.113.81"]
    })
    .await;
    let mallory: Api<DNSEndpoint> = Api::namespaced(host.clone(), "mallory");
    let refusals = || async {
        let list = mallory.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .filter_map(|e| Some((e.metadata.name.clone()?, e.status.as_ref()?)))
            .flat_map(|(name, s)| {
                s.conditions
                    .iter()
                    .filter(|c| c.type_ == "embedded/Published" && c.status == "False")
                    .map(move |c| format!("{name}: {}: {}", c.reason, c.message))
            })
            .collect::<Vec<_>>()
    };
    let started = Instant::now();
    while refusals().await.len() < 2 {
        assert!(
            started.elapsed() < EVENTUALLY,
            "mallory's DNSEndpoints are not refused: {:?}",
            refusals().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("refused before the change: {:?}", refusals().await);
    assert_eq!(dig_status(dns_port, "x.r1.example.com", "A"), "NXDOMAIN");

    // A client asks for ns's names all along the change.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let querier = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut asked, mut bad) = (0usize, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for name in ["r0.example.com", "r1.example.com", "x.r1.example.com"] {
                    let Some((status, answer)) = dig_reply(dns_port, name, "A") else {
                        continue; // no reply within 1 s: no answer to judge
                    };
                    asked += 1;
                    // ns's names always hold member b; the name below
                    // is never published.
                    let fine = if name.starts_with("x.") {
                        status == "NXDOMAIN"
                    } else {
                        status == "NOERROR" && answer.iter().any(|a| a == "203.0.113.82")
                    };
                    if !fine {
                        bad.push(format!("{name}: {status} {answer:?}"));
                    }
                }
            }
            (asked, bad)
        })
    };

    let previews = || metric(metrics_port, "fedns_dnsendpoint_previews_total");
    let before = previews().await;
    set_gateway_address(&federation, "a", "203.0.113.90");
    let moved = vec!["203.0.113.82".to_owned(), "203.0.113.90".to_owned()];
    let took = eventually("every route of ns and mallory's own follow a's Gateway", || {
        answers(dns_port).iter().all(|a| *a == moved)
            && dig(dns_port, "promo.example.com", "A", false) == ["203.0.113.90"]
    })
    .await;
    let previewed = previews().await - before;
    // The writes land too; then the answers are checked once more.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (asked, bad) = querier.join().unwrap();
    println!(
        "{} routes moved in {took:?}; {previewed} DNSEndpoints previewed; {asked} answers, {} wrong",
        ROUTES + 1,
        bad.len()
    );
    assert!(previewed >= 1.0, "the change was previewed ({previewed})");
    assert!(bad.is_empty(), "answers that show mallory's claim: {bad:?}");
    assert!(answers(dns_port).iter().all(|a| *a == moved), "{:?}", answers(dns_port));
    assert_eq!(dig_status(dns_port, "x.r1.example.com", "A"), "NXDOMAIN");
    let refused = refusals().await;
    println!("refused after the change: {refused:?}");
    for name in ["route-same", "route-below"] {
        assert!(
            refused.iter().any(|r| r.starts_with(name) && r.contains("ns/")),
            "{name} is refused naming ns's holder: {refused:?}"
        );
    }
    federation.stop();
}
