//! Part `routes` of the federation bench: MEMBERS members × ROUTES
//! HTTPRoutes (default 50 × 2,000 = 100,000 shards), each member's routes
//! attached to one Gateway whose address is the member's, every route
//! followed by a RouteDNSRecord. Printed side by side with the same
//! members × as many Services (the peer run: the targets are the
//! Services'): the cold start's convergence and the controller's peak RSS,
//! their ratios, and a Gateway address change in one member → the changed
//! answer of the first of its routes and of the last of them (a Gateway
//! change reaches every route attached to it).

use std::time::{Duration, Instant};

use fedns_controller::federation::Federation;
use serde_json::{json, Value};

use super::{
    dns_settled, env, every_endpoint_converged, free_port, old_and_new, peak_rss_mib, percentile, print_ratio, query_a,
    query_many, scale, start_controller, wait_every, wait_for, ScaleRun,
};

/// A condition as a Gateway controller writes it (`metav1.Condition`).
fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": type_, "message": "",
           "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:00:00Z"})
}

/// A member's objects: a Node, GatewayClass `example`, Gateway `infra/gw` at `ip` (one HTTP
/// listener for `*.example.com`), `routes` HTTPRoutes `ns/r<i>` for
/// `r<i>.example.com` accepted by it, routing to Service `ns/web` with a
/// ready endpoint. Shaped as gateway-api v1.6.1's types define them.
fn member_objects(region: &str, zone: &str, ip: &str, routes: usize) -> String {
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": format!("node-{zone}"), "labels": {"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "infra"}}),
        // The class the Gateway names, of the controller that accepted the
        // routes (a Gateway of a class the member lacks serves nothing).
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "example", "generation": 1},
               "spec": {"controllerName": "example.net/gateway-controller"},
               "status": {"conditions": [condition("Accepted")]}}),
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

/// What the route run measured: its cold start (as a [`ScaleRun`], `p50`
/// and `p99` those of the first route's answer) and the last route's
/// answer p50/p99.
struct RouteRun {
    run: ScaleRun,
    last_p50: Option<Duration>,
    last_p99: Option<Duration>,
}

/// The route run.
fn route_scale(runtime: &tokio::runtime::Runtime, members: usize, routes: usize) -> RouteRun {
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
    let mut run = ScaleRun::new();
    let (mut last_p50, mut last_p99) = (None, None);
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
        // Every 100th route is watched while a change spreads: the first
        // of them to answer the new address is the first route's time;
        // once all of them do, every route is checked until all do (the
        // last route's time).
        let sample: Vec<String> = (0..routes).step_by(100).map(|i| format!("r{i}.example.com")).collect();
        let every: Vec<String> = (0..routes).map(|i| format!("r{i}.example.com")).collect();
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
            let mut left: Vec<&str> = sample.iter().map(String::as_str).collect();
            let mut one = None;
            // Every 10 ms (20 queries), the sweep of every route left every
            // 200 ms, each sweep's queries asked at once (`query_many`): a
            // sweep is not stretched by the machine's load (one query after
            // another took seconds), and the bench's queries (at most
            // 10,000 a second) take little of the cores the controller is
            // measured on (sweeps every 50 ms made every run slower).
            let keep_unchanged = |left: &mut Vec<&str>| {
                let answers = query_many(port, left);
                let mut answers = answers.into_iter();
                left.retain(|_| !answers.next().unwrap_or_default().contains(&ip));
            };
            let sampled = wait_every(Duration::from_secs(60), Duration::from_millis(10), || {
                keep_unchanged(&mut left);
                if one.is_none() && left.len() < sample.len() {
                    one = Some(changed.elapsed());
                }
                left.is_empty()
            });
            let mut left: Vec<&str> = every.iter().map(String::as_str).collect();
            let all = sampled.and_then(|_| {
                wait_every(Duration::from_secs(60), Duration::from_millis(200), || {
                    keep_unchanged(&mut left);
                    left.is_empty()
                })
            });
            let (Some(one), Some(_)) = (one, all) else {
                println!(
                    "routes: Gateway change {n} not served for every route within 60 s ({} left); stopping the changes",
                    left.len()
                );
                break;
            };
            first.push(one);
            whole.push(changed.elapsed());
            std::thread::sleep(Duration::from_secs(2));
        }
        if !first.is_empty() {
            first.sort();
            whole.sort();
            println!(
                "routes: Gateway address change (reaching {routes} routes) → answer over {} changes: first route p50 {:.0} ms, p99 {:.0} ms; its last route p50 {:.0} ms, p99 {:.0} ms",
                first.len(),
                percentile(&first, 0.5).as_secs_f64() * 1e3,
                percentile(&first, 0.99).as_secs_f64() * 1e3,
                percentile(&whole, 0.5).as_secs_f64() * 1e3,
                percentile(&whole, 0.99).as_secs_f64() * 1e3,
            );
            run.p50 = Some(percentile(&first, 0.5));
            run.p99 = Some(percentile(&first, 0.99));
            last_p50 = Some(percentile(&whole, 0.5));
            last_p99 = Some(percentile(&whole, 0.99));
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
    RouteRun {
        run,
        last_p50,
        last_p99,
    }
}

/// Part `routes`: the Services peer run (this build's binary; `PEER=0`
/// skips it), then the routes (the old binary's first when `FEDNS_OLD`
/// is set), then the ratios.
pub(super) fn run(runtime: &tokio::runtime::Runtime) {
    let members = env("MEMBERS", 50);
    let routes = env("ROUTES", 2000);
    let services = (env("PEER", 1) == 1).then(|| {
        println!(
            "routes: the peer run first: {members} members × {routes} Services (no changes, Domain edit or restart)"
        );
        scale(runtime, members, routes, None, false)
    });
    let (old, new) = old_and_new("routes", || route_scale(runtime, members, routes));
    match (services.and_then(|s| s.converged), new.run.converged) {
        (Some(s), Some(r)) => println!(
            "routes vs Services at {} shards: convergence {r:.1} s vs {s:.1} s ({:.2}×), peak RSS {:.0} vs {:.0} MiB ({:.2}×)",
            members * routes,
            r / s.max(1e-6),
            new.run.peak_rss,
            services.map_or(f64::NAN, |s| s.peak_rss),
            new.run.peak_rss / services.map_or(f64::NAN, |s| s.peak_rss).max(1e-6),
        ),
        _ => println!("routes vs Services: no peer run, or a run did not converge; no ratio"),
    }
    if let Some(old) = old {
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        let label = "routes";
        print_ratio(
            label,
            "cold start → converged",
            old.run.converged,
            new.run.converged,
            "s",
        );
        print_ratio(label, "peak RSS", Some(old.run.peak_rss), Some(new.run.peak_rss), "MiB");
        let latencies = [
            ("first route p50", old.run.p50, new.run.p50),
            ("first route p99", old.run.p99, new.run.p99),
            ("last route p50", old.last_p50, new.last_p50),
            ("last route p99", old.last_p99, new.last_p99),
        ];
        for (what, old, new) in latencies {
            print_ratio(label, &format!("Gateway change → {what}"), ms(old), ms(new), "ms");
        }
    }
}
