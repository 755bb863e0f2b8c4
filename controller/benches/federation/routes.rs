//! Part `routes` of the federation bench: MEMBERS members × ROUTES
//! HTTPRoutes (default 50 × 2,000 = 100,000 shards), each member's routes
//! attached to one Gateway whose address is the member's, every route
//! followed by a RouteDNSRecord. Printed side by side with the same
//! members × as many Services (the peer run: the targets are the
//! Services'): the cold start's convergence and the controller's peak RSS,
//! their ratios, and a Gateway address change in one member → the changed
//! answer of one of its routes and of the last of them (a Gateway change
//! reaches every route attached to it).

use std::time::{Duration, Instant};

use fedns_controller::federation::Federation;
use serde_json::{json, Value};

use super::{
    dns_settled, env, every_endpoint_converged, free_port, peak_rss_mib, percentile, query_a, scale, start_controller,
    wait_every, wait_for, ScaleRun,
};

/// A condition as a Gateway controller writes it (`metav1.Condition`).
fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": type_, "message": "",
           "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:00:00Z"})
}

/// A member's objects: a Node, Gateway `infra/gw` at `ip` (one HTTP
/// listener for `*.example.com`), `routes` HTTPRoutes `ns/r<i>` for
/// `r<i>.example.com` accepted by it, routing to Service `ns/web` with a
/// ready endpoint. Shaped as gateway-api v1.6.1's types define them.
fn member_objects(region: &str, zone: &str, ip: &str, routes: usize) -> String {
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": format!("node-{zone}"), "labels": {"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "infra"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "gw", "namespace": "infra", "generation": 1},
               "spec": {"gatewayClassName": "example", "listeners": [
                   {"name": "web", "protocol": "HTTP", "port": 80, "hostname": "*.example.com",
                    "allowedRoutes": {"namespaces": {"from": "All"}}}]},
               "status": {"addresses": [{"type": "IPAddress", "value": ip}],
                          "conditions": [condition("Accepted"), condition("Programmed")],
                          "listeners": [{"name": "web", "attachedRoutes": routes,
                                         "supportedKinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
                                         "conditions": [condition("Accepted"), condition("Programmed")]}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "ns"},
               "spec": {"ports": [{"port": 8080}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abcde", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]}),
    ];
    for i in 0..routes {
        items.push(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": format!("r{i}"), "namespace": "ns", "generation": 1},
            "spec": {"parentRefs": [{"name": "gw", "namespace": "infra"}],
                     "hostnames": [format!("r{i}.example.com")],
                     "rules": [{"backendRefs": [{"name": "web", "port": 8080}]}]},
            "status": {"parents": [{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "infra"},
                                    "controllerName": "example.net/gateway-controller",
                                    "conditions": [condition("Accepted"), condition("ResolvedRefs")]}]},
        }));
    }
    serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()
}

fn host_objects(routes: usize) -> String {
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
               "metadata": {"name": "myfed", "namespace": "fedns-system"}, "spec": {"domain": "example.com"}}),
    ];
    for i in 0..routes {
        items.push(json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "RouteDNSRecord",
                          "metadata": {"name": format!("r{i}"), "namespace": "ns"}, "spec": {"routeKind": "HTTPRoute"}}));
    }
    serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()
}

/// The route run; returns its convergence (seconds, None if it did not)
/// and the controller's peak RSS (MiB).
fn route_scale(runtime: &tokio::runtime::Runtime, members: usize, routes: usize) -> ScaleRun {
    let dir = std::env::temp_dir().join(format!("fedns-bench-routes-{}", std::process::id()));
    let names: Vec<String> = (0..members).map(|m| format!("m{m}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let seeded = Instant::now();
    let federation = runtime
        .block_on(Federation::start(&dir, "fedns-system", &refs))
        .unwrap();
    let crds = fedns_standins::upstream_crds::gateway_api_yaml();
    let ip_of = |m: usize| format!("10.{}.{}.1", m / 200, m % 200);
    for (m, name) in names.iter().enumerate() {
        let region = format!("region-{}", m % 4);
        let zone = format!("{region}{}", ["a", "b", "c"][m % 3]);
        let member = federation.member(name).unwrap();
        member.seed_yaml("gateway-api", &crds).unwrap();
        member
            .seed_yaml(name, &member_objects(&region, &zone, &ip_of(m), routes))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation.host.seed_yaml("host", &host_objects(routes)).unwrap();
    println!(
        "routes: {members} members × {routes} HTTPRoutes = {} shards, seeded in {:.1} s",
        members * routes,
        seeded.elapsed().as_secs_f64()
    );
    let port = free_port();
    let metrics_port = free_port();
    let started = Instant::now();
    let controller = start_controller(&federation, port, metrics_port);
    std::thread::sleep(Duration::from_millis(300));
    let pid = controller.pid();
    // Converged when every record's DNSEndpoint holds every member's
    // Gateway address for its hostname (checked as the Services run does).
    let converged = every_endpoint_converged(&federation, routes, members, |endpoint| {
        format!("{}.example.com", endpoint.trim_start_matches("route-"))
    });
    let last = format!("r{}.example.com", routes - 1);
    let served = wait_for(Duration::from_secs(120), || query_a(port, &last).len() == members);
    let mut run = ScaleRun {
        p99: None,
        converged: None,
        peak_rss: f64::NAN,
    };
    if converged.is_some() && served.is_some() {
        let settled_at = dns_settled(metrics_port, started);
        run.converged = Some(settled_at.as_secs_f64());
        run.peak_rss = peak_rss_mib(pid);
        println!(
            "routes: converged from a cold start in {:.1} s, DNS settled (Services' target < 30 s at 40,000 shards); controller peak RSS {:.0} MiB",
            settled_at.as_secs_f64(),
            run.peak_rss
        );
        // Gateway address changes in m0: each reaches every route there.
        let member = federation.member("m0").unwrap();
        let gateways = member
            .store()
            .resource("gateway.networking.k8s.io", "v1", "gateways")
            .unwrap();
        let middle = format!("r{}.example.com", routes / 2);
        let (mut first, mut whole) = (Vec::new(), Vec::new());
        for n in 0..env("ROUTE_CHANGES", 10) {
            let ip = format!("10.250.{}.{}", n / 250, n % 250 + 1);
            let changed = Instant::now();
            member
                .store()
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
            let Some(one) = wait_for(Duration::from_secs(60), || query_a(port, &middle).contains(&ip)) else {
                println!("routes: Gateway change {n} not served for {middle} within 60 s; stopping the changes");
                break;
            };
            if wait_every(Duration::from_secs(60), Duration::from_millis(5), || {
                query_a(port, &last).contains(&ip)
            })
            .is_none()
            {
                println!("routes: Gateway change {n} not served for {last} within 60 s; stopping the changes");
                break;
            }
            first.push(one);
            whole.push(changed.elapsed());
            std::thread::sleep(Duration::from_secs(2));
        }
        if !first.is_empty() {
            first.sort();
            whole.sort();
            println!(
                "routes: Gateway address change (reaching {routes} routes) → answer over {} changes: one route p50 {:.0} ms, p99 {:.0} ms; its last route p50 {:.0} ms, p99 {:.0} ms",
                first.len(),
                percentile(&first, 0.5).as_secs_f64() * 1e3,
                percentile(&first, 0.99).as_secs_f64() * 1e3,
                percentile(&whole, 0.5).as_secs_f64() * 1e3,
                percentile(&whole, 0.99).as_secs_f64() * 1e3,
            );
            run.p99 = Some(percentile(&first, 0.99));
        }
        println!(
            "routes: controller peak RSS after the changes {:.0} MiB",
            peak_rss_mib(pid)
        );
    } else {
        run.peak_rss = peak_rss_mib(pid);
        println!(
            "routes: NOT converged after {:.0} s; controller peak RSS {:.0} MiB",
            started.elapsed().as_secs_f64(),
            run.peak_rss
        );
    }
    drop(controller);
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
    run
}

/// Part `routes`: the Services peer run, then the routes, then the ratios.
pub(super) fn run(runtime: &tokio::runtime::Runtime) {
    let members = env("MEMBERS", 50);
    let routes = env("ROUTES", 2000);
    println!("routes: the peer run first: {members} members × {routes} Services (no changes, Domain edit or restart)");
    let services = scale(runtime, members, routes, None, false);
    let route_run = route_scale(runtime, members, routes);
    match (services.converged, route_run.converged) {
        (Some(s), Some(r)) => println!(
            "routes vs Services at {} shards: convergence {r:.1} s vs {s:.1} s ({:.2}×), peak RSS {:.0} vs {:.0} MiB ({:.2}×)",
            members * routes,
            r / s.max(1e-6),
            route_run.peak_rss,
            services.peak_rss,
            route_run.peak_rss / services.peak_rss.max(1e-6),
        ),
        _ => println!("routes vs Services: a run did not converge; no ratio"),
    }
}
