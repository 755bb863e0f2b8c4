//! RouteDNSRecord end to end: three emulated members, two serving the
//! upstream Gateway API CRDs (gateway-api v1.6.1, vendored) with a Gateway
//! and an HTTPRoute shaped as a Gateway controller leaves them, the third
//! without Gateway API at all. The answer (`dig`) follows the route's
//! status, the listener's, the Gateway's addresses and the route's
//! backends; the member without the CRDs is one line of the `Attached`
//! condition. Addresses are TEST-NET ones: nothing probes them here.

use crate::common::*;
use fedns_api::RouteDNSRecord;
use fedns_controller::federation::Federation;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::time::Duration;

const NAME: &str = "shop.example.com";

fn gateway_resource(plural: &str, kind: &str) -> ApiResource {
    ApiResource {
        group: "gateway.networking.k8s.io".into(),
        version: "v1".into(),
        api_version: "gateway.networking.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// A member's Gateway `infra/gw` (listener `web`, HTTP 80, any hostname
/// under example.com, routes from every namespace) at `ip`, an HTTPRoute
/// `ns/shop` for shop.example.com accepted by it, its backend Service
/// `ns/web` with a ready endpoint. Status as `GatewayStatus` and
/// `RouteParentStatus` define it (gateway-api `apis/v1`).
pub(crate) fn member_yaml(region: &str, ip: &str) -> String {
    let condition = |type_: &str| {
        format!(
            "{{type: {type_}, status: \"True\", reason: {type_}, message: \"\", observedGeneration: 1, lastTransitionTime: \"2026-11-26T00:00:00Z\"}}"
        )
    };
    format!(
        r#"{crds}
---
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {region}a}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: infra}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: ns}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: example}}
spec: {{controllerName: example.net/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: infra, generation: 1}}
spec:
  gatewayClassName: example
  listeners:
    - name: web
      protocol: HTTP
      port: 80
      hostname: "*.example.com"
      allowedRoutes: {{namespaces: {{from: All}}}}
status:
  addresses: [{{type: IPAddress, value: "{ip}"}}]
  conditions: [{accepted}, {programmed}]
  listeners:
    - name: web
      attachedRoutes: 1
      supportedKinds: [{{group: gateway.networking.k8s.io, kind: HTTPRoute}}]
      conditions: [{accepted}, {programmed}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: shop, namespace: ns, generation: 1}}
spec:
  parentRefs: [{{name: gw, namespace: infra}}]
  hostnames: ["{NAME}"]
  rules:
    - matches: [{{path: {{type: PathPrefix, value: /shop}}}}]
      backendRefs: [{{name: web, port: 8080}}]
status:
  parents:
    - parentRef: {{group: gateway.networking.k8s.io, kind: Gateway, name: gw, namespace: infra}}
      controllerName: example.net/gateway-controller
      conditions: [{accepted}, {resolved}]
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: ns}}
spec: {{ports: [{{port: 8080}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: true}}
"#,
        crds = fedns_standins::upstream_crds::gateway_api_yaml(),
        accepted = condition("Accepted"),
        programmed = condition("Programmed"),
        resolved = condition("ResolvedRefs"),
    )
}

async fn patch_status(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: &str,
    name: &str,
    status: serde_json::Value,
) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| panic!("status of {} {namespace}/{name}: {e}", resource.kind));
}

async fn attached(records: &Api<RouteDNSRecord>, name: &str) -> (String, String) {
    let record = records.get(name).await.unwrap();
    record
        .status
        .as_ref()
        .and_then(|s| fedns_api::conditions::get(&s.conditions, fedns_controller::records::ATTACHED))
        .map(|c| (c.status.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_is_published_as_its_gateways_and_status_say() {
    let dir = temp_dir("routes");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b", "c"]).await.unwrap();
    for (name, ip) in [("a", "203.0.113.71"), ("b", "203.0.113.72")] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &member_yaml(&format!("region-{name}"), ip))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    // c: no Gateway API CRDs; an Ingress-only member.
    federation
        .member("c")
        .unwrap()
        .seed_yaml(
            "c",
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-c, labels: {topology.kubernetes.io/region: region-c}}\n",
        )
        .unwrap();
    federation.register("c", json!({})).unwrap();
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}---\n{}",
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {name: shop, namespace: ns}\nspec: {routeKind: HTTPRoute, recordTTL: 5}\n"
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let (a, b) = (
        client_of(federation.member("a").unwrap()).await,
        client_of(federation.member("b").unwrap()).await,
    );
    let records: Api<RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let both = ["203.0.113.71", "203.0.113.72"];
    eventually("the route's hostname from both Gateways", || {
        dig(dns_port, NAME, "A", false) == both
    })
    .await;
    // The member without Gateway API is one line of one condition.
    let (status, message) = attached(&records, "shop").await;
    assert_eq!(status, "True", "{message}");
    assert!(
        message.contains("c: the member serves no HTTPRoute") || message.contains("c: the member serves no Gateway"),
        "{message}"
    );
    let record = records.get("shop").await.unwrap();
    let dns = record.status.unwrap().dns;
    assert_eq!(dns.len(), 2, "{dns:?}");
    assert_eq!(dns[0].hostnames[0].hostname, NAME);
    assert_eq!(dns[0].hostnames[0].listeners, ["infra/gw/web"]);

    let gateways = gateway_resource("gateways", "Gateway");
    let routes = gateway_resource("httproutes", "HTTPRoute");
    let condition = |type_: &str, status: &str| {
        json!({"type": type_, "status": status, "reason": if status == "True" { type_ } else { "Pending" },
               "message": "", "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:01:00Z"})
    };

    // b's listener is no longer programmed: b leaves the name.
    let listener = |programmed: &str| {
        json!([{"name": "web", "attachedRoutes": 1,
                "supportedKinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
                "conditions": [condition("Accepted", "True"), condition("Programmed", programmed)]}])
    };
    patch_status(&b, &gateways, "infra", "gw", json!({"listeners": listener("False")})).await;
    eventually("b's listener not programmed", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.71"]
    })
    .await;
    let (_, message) = attached(&records, "shop").await;
    assert!(
        message.contains("b: Gateway infra/gw: listener web: it is not Programmed"),
        "{message}"
    );
    // `fedns explain` (the controller's /debug/explain) names it too.
    let explanation = explained(metrics_port, NAME, "listener web: it is not Programmed").await;
    assert!(explanation.contains("RouteDNSRecord ns/shop"), "{explanation}");
    patch_status(&b, &gateways, "infra", "gw", json!({"listeners": listener("True")})).await;
    eventually("b's listener programmed again", || {
        dig(dns_port, NAME, "A", false) == both
    })
    .await;

    // a's route is no longer accepted: a leaves.
    let parents = |accepted: &str| {
        json!([{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "infra"},
                "controllerName": "example.net/gateway-controller",
                "conditions": [condition("Accepted", accepted), condition("ResolvedRefs", "True")]}])
    };
    patch_status(&a, &routes, "ns", "shop", json!({"parents": parents("False")})).await;
    eventually("a's route not accepted", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.72"]
    })
    .await;
    patch_status(&a, &routes, "ns", "shop", json!({"parents": parents("True")})).await;
    eventually("a's route accepted again", || dig(dns_port, NAME, "A", false) == both).await;

    // b's Gateway loses its address: b leaves; it gets a new one: back.
    patch_status(&b, &gateways, "infra", "gw", json!({"addresses": null})).await;
    eventually("b's Gateway without an address", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.71"]
    })
    .await;
    patch_status(
        &b,
        &gateways,
        "infra",
        "gw",
        json!({"addresses": [{"type": "IPAddress", "value": "203.0.113.73"}]}),
    )
    .await;
    eventually("b's Gateway at its new address", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.71", "203.0.113.73"]
    })
    .await;

    // a's backend has no ready endpoint: a leaves (spec.backends defaults to Any).
    let slices: Api<EndpointSlice> = Api::namespaced(a.clone(), "ns");
    let ready = |ready: bool| json!({"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": ready}}]});
    slices
        .patch("web-abcde", &PatchParams::default(), &Patch::Merge(ready(false)))
        .await
        .unwrap();
    eventually("a's backend without endpoints", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.73"]
    })
    .await;
    let (_, message) = attached(&records, "shop").await;
    assert!(
        message.contains("a: its backend Services have no ready endpoints"),
        "{message}"
    );
    slices
        .patch("web-abcde", &PatchParams::default(), &Patch::Merge(ready(true)))
        .await
        .unwrap();
    eventually("a's backend ready again", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.71", "203.0.113.73"]
    })
    .await;

    // The route is deleted in both: the name goes, the condition says so.
    for member in [&a, &b] {
        let api: Api<DynamicObject> = Api::namespaced_with(member.clone(), "ns", &routes);
        api.delete("shop", &Default::default()).await.unwrap();
    }
    eventually("no member has the route", || {
        dig_status(dns_port, NAME, "A") == "NXDOMAIN"
    })
    .await;
    let (status, message) = attached(&records, "shop").await;
    assert_eq!(status, "False", "{message}");
    assert!(message.contains("a: no HTTPRoute ns/shop"), "{message}");
    let dns = records.get("shop").await.unwrap().status.unwrap().dns;
    assert!(dns.is_empty(), "status.dns keeps a cluster that left: {dns:?}");
}

/// Waits (30 s at most) until DNSEndpoint `name` satisfies `check`.
async fn wait_for_endpoint(
    endpoints: &Api<fedns_api::DNSEndpoint>,
    name: &str,
    check: impl Fn(Option<&fedns_api::DNSEndpoint>) -> bool,
) {
    let started = std::time::Instant::now();
    loop {
        if check(endpoints.get_opt(name).await.unwrap().as_ref()) {
            println!("DNSEndpoint {name}: after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "DNSEndpoint {name}: not as expected within 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// An Ingress `ns/shop` at `ip` in a member (the Gateway API CRDs
/// installed, no Gateway yet).
fn ingress_member_yaml(region: &str, ip: &str) -> String {
    format!(
        r#"{crds}
---
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: ns}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: shop, namespace: ns}}
spec:
  rules:
    - host: {NAME}
      http:
        paths:
          - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 8080}}}}}}}}
status: {{loadBalancer: {{ingress: [{{ip: "{ip}"}}]}}}}
"#,
        crds = fedns_standins::upstream_crds::gateway_api_yaml(),
    )
}

/// The documented move from Ingress to Gateway API (docs/operations.md,
/// "Moving a name from Ingress to Gateway API"), while a client queries
/// the name every few milliseconds: a RouteDNSRecord with
/// `ingressFallback` is created beside the IngressDNSRecord, the
/// IngressDNSRecord is deleted, then member a gets a Gateway and its
/// Ingress goes. No answer ever lacks a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_a_name_from_ingress_to_gateway_loses_no_cluster() {
    let dir = temp_dir("ingress-to-gateway");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, ip) in [("a", "203.0.113.81"), ("b", "203.0.113.82")] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &ingress_member_yaml(&format!("region-{name}"), ip))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}---\n{}",
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: IngressDNSRecord\nmetadata: {name: shop, namespace: ns}\nspec: {hosts: [shop.example.com], recordTTL: 5}\n"
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    eventually("the Ingress record answers", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.81", "203.0.113.82"]
    })
    .await;

    // A client asks all along; every answer must hold a (its Ingress or
    // its Gateway) and b.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Two clients, so the answers are dense around each step.
    let queriers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut answers, mut timeouts, mut bad) = (0usize, 0usize, Vec::new());
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // A query the loaded machine left unanswered for 1 s is
                    // no answer at all, so it cannot lack a cluster; it is
                    // counted apart.
                    let Some((status, answer)) = dig_reply(dns_port, NAME, "A") else {
                        timeouts += 1;
                        continue;
                    };
                    let has_a = answer.iter().any(|a| a == "203.0.113.81" || a == "203.0.113.83");
                    let has_b = answer.iter().any(|a| a == "203.0.113.82");
                    answers += 1;
                    if !(status == "NOERROR" && has_a && has_b) {
                        bad.push(format!("{status} {answer:?}"));
                    }
                }
                (answers, timeouts, bad)
            })
        })
        .collect();

    // 1. The RouteDNSRecord beside it: its DNSEndpoint is the newer claim
    //    of the name, so the Ingress record keeps answering.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let records: Api<RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let record: RouteDNSRecord = serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "RouteDNSRecord",
        "metadata": {"name": "shop", "namespace": "ns"},
        "spec": {"hosts": [NAME], "ingressFallback": true, "recordTTL": 5}
    }))
    .unwrap();
    records.create(&Default::default(), &record).await.unwrap();
    let endpoints: Api<fedns_api::DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    wait_for_endpoint(&endpoints, "route-shop", |e| {
        e.is_some_and(|e| e.spec.endpoints.first().is_some_and(|e| e.targets.len() == 2))
    })
    .await;

    // 2. The IngressDNSRecord goes: the route record's claim takes over.
    let ingress_records: Api<fedns_api::IngressDNSRecord> = Api::namespaced(host.clone(), "ns");
    ingress_records.delete("shop", &Default::default()).await.unwrap();
    wait_for_endpoint(&endpoints, "ingress-shop", |e| e.is_none()).await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;

    // 3. Member a gets a Gateway and the route; then its Ingress goes.
    let gateway = member_yaml("region-a", "203.0.113.83");
    // The member's objects less the CRDs, Node and Namespaces it has: the
    // route's backend Service first (it serves the Ingress already in a
    // real cluster; a route is served only while its backends have ready
    // endpoints), then the Gateway and the route.
    let documents = |kinds: &[&str]| -> String {
        gateway
            .split("\n---\n")
            .filter(|d| kinds.iter().any(|k| d.contains(k)))
            .map(|d| format!("---\n{d}\n"))
            .collect()
    };
    let member_a = federation.member("a").unwrap();
    member_a
        .seed_yaml(
            "a-backend",
            &documents(&["kind: Service\n", "kind: EndpointSlice\n", "{name: infra}"]),
        )
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    member_a
        .seed_yaml(
            "a-gateway",
            &documents(&["kind: GatewayClass\n", "kind: Gateway\n", "kind: HTTPRoute\n"]),
        )
        .unwrap();
    eventually("a is served through its Gateway", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.82", "203.0.113.83"]
    })
    .await;
    let a = client_of(federation.member("a").unwrap()).await;
    let ingresses: Api<k8s_openapi::api::networking::v1::Ingress> = Api::namespaced(a.clone(), "ns");
    ingresses.delete("shop", &Default::default()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(dig(dns_port, NAME, "A", false), ["203.0.113.82", "203.0.113.83"]);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut answers, mut timeouts, mut bad) = (0, 0, Vec::new());
    for querier in queriers {
        let (n, t, b) = querier.join().unwrap();
        answers += n;
        timeouts += t;
        bad.extend(b);
    }
    println!(
        "{answers} answers while moving, {} without a cluster; {timeouts} queries timed out (1 s)",
        bad.len()
    );
    assert!(answers > 20, "too few answers: {answers}");
    // The server answers a query in microseconds; more than a few lost
    // under load would be a stalled answer path, not a slow machine.
    assert!(
        timeouts * 10 <= answers,
        "{timeouts} of {} queries timed out",
        answers + timeouts
    );
    assert!(bad.is_empty(), "answers without a cluster: {bad:?}");
}

/// Two routes in different namespaces claiming one hostname, each with its
/// RouteDNSRecord: the one-name-one-owner rules hold for routes as for the
/// other kinds. The earlier record's DNSEndpoint keeps the name; the other
/// namespace's is refused (`Published=False`, `Conflict`, naming the
/// holder) and never changes the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_routes_claiming_one_hostname_have_one_owner() {
    let dir = temp_dir("routes-one-owner");
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    let condition = |type_: &str| {
        format!(
            "{{type: {type_}, status: \"True\", reason: {type_}, message: \"\", observedGeneration: 1, lastTransitionTime: \"2026-11-26T00:00:00Z\"}}"
        )
    };
    let (accepted, programmed, resolved) = (
        condition("Accepted"),
        condition("Programmed"),
        condition("ResolvedRefs"),
    );
    let gateway = |name: &str, ip: &str| {
        format!(
            r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: example}}
spec: {{controllerName: example.net/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: {name}, namespace: infra, generation: 1}}
spec:
  gatewayClassName: example
  listeners: [{{name: web, protocol: HTTP, port: 80, allowedRoutes: {{namespaces: {{from: All}}}}}}]
status:
  addresses: [{{type: IPAddress, value: "{ip}"}}]
  conditions: [{accepted}, {programmed}]
  listeners:
    - {{name: web, attachedRoutes: 1, supportedKinds: [{{group: gateway.networking.k8s.io, kind: HTTPRoute}}], conditions: [{accepted}, {programmed}]}}
"#
        )
    };
    let route = |namespace: &str, gateway: &str| {
        format!(
            r#"
---
apiVersion: v1
kind: Namespace
metadata: {{name: {namespace}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, namespace: {namespace}, generation: 1}}
spec:
  parentRefs: [{{name: {gateway}, namespace: infra}}]
  hostnames: ["{NAME}"]
status:
  parents:
    - parentRef: {{group: gateway.networking.k8s.io, kind: Gateway, name: {gateway}, namespace: infra}}
      controllerName: example.net/gateway-controller
      conditions: [{accepted}, {resolved}]
"#
        )
    };
    let member = format!(
        "{}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: infra}}\n{}{}{}{}",
        fedns_standins::upstream_crds::gateway_api_yaml(),
        gateway("gw1", "203.0.113.91"),
        gateway("gw2", "203.0.113.92"),
        route("one", "gw1"),
        route("two", "gw2"),
    );
    federation.member("a").unwrap().seed_yaml("a", &member).unwrap();
    federation.register("a", json!({})).unwrap();
    let record = |namespace: &str| {
        format!(
            "---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {namespace}}}\n---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {{name: web, namespace: {namespace}}}\nspec: {{recordTTL: 5}}\n"
        )
    };
    federation
        .host
        .seed_yaml("host", &format!("{MYFED_HOST_YAML}{}", record("one")))
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    eventually("namespace one's route answers", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.91"]
    })
    .await;
    // creationTimestamp has whole seconds: the second claim is later.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    federation.host.seed_yaml("host-two", &record("two")).unwrap();
    let host = client_of(&federation.host).await;
    let two: Api<fedns_api::DNSEndpoint> = Api::namespaced(host.clone(), "two");
    let started = std::time::Instant::now();
    let (reason, message) = loop {
        let condition = two.get_opt("route-web").await.unwrap().and_then(|e| {
            e.status
                .and_then(|s| fedns_api::conditions::get(&s.conditions, "embedded/Published").cloned())
                .filter(|c| c.status == "False")
        });
        if let Some(c) = condition {
            println!("route-web in two refused after {:?}", started.elapsed());
            break (c.reason, c.message);
        }
        assert!(started.elapsed() < EVENTUALLY, "two/route-web never refused");
        assert_eq!(
            dig(dns_port, NAME, "A", false),
            ["203.0.113.91"],
            "the later claim changed the answer"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(reason, "Conflict", "{message}");
    assert!(message.contains("one/route-web, which claimed it first"), "{message}");
    for _ in 0..10 {
        assert_eq!(dig(dns_port, NAME, "A", false), ["203.0.113.91"]);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A member's Gateway `infra/gw-tcp` (listener `db`, TCP 5432) at `ip` and
/// a TCPRoute `ns/db` of gateway-api v1.4.1's experimental channel
/// (`v1alpha2`, the only version such a member serves), accepted by it and
/// annotated for an automatic record named db.example.com.
fn v1alpha2_tcp_route_yaml(ip: &str) -> String {
    let condition = |type_: &str| {
        format!(
            "{{type: {type_}, status: \"True\", reason: {type_}, message: \"\", observedGeneration: 1, lastTransitionTime: \"2026-11-26T00:00:00Z\"}}"
        )
    };
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: example}}
spec: {{controllerName: example.net/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw-tcp, namespace: infra, generation: 1}}
spec:
  gatewayClassName: example
  listeners:
    - {{name: db, protocol: TCP, port: 5432, allowedRoutes: {{namespaces: {{from: All}}}}}}
status:
  addresses: [{{type: IPAddress, value: "{ip}"}}]
  conditions: [{accepted}, {programmed}]
  listeners:
    - name: db
      attachedRoutes: 1
      supportedKinds: [{{group: gateway.networking.k8s.io, kind: TCPRoute}}]
      conditions: [{accepted}, {programmed}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata:
  name: db
  namespace: ns
  generation: 1
  annotations: {{multiclusterdns.fedns.io/domain: myfed, multiclusterdns.fedns.io/hosts: db.example.com}}
spec:
  parentRefs: [{{name: gw-tcp, namespace: infra, sectionName: db}}]
  rules: [{{backendRefs: [{{name: web, port: 8080}}]}}]
status:
  parents:
    - parentRef: {{group: gateway.networking.k8s.io, kind: Gateway, name: gw-tcp, namespace: infra, sectionName: db}}
      controllerName: example.net/gateway-controller
      conditions: [{accepted}, {resolved}]
"#,
        accepted = condition("Accepted"),
        programmed = condition("Programmed"),
        resolved = condition("ResolvedRefs"),
    )
}

async fn wait_route_record(records: &Api<RouteDNSRecord>, name: &str, present: bool) -> Option<RouteDNSRecord> {
    let started = std::time::Instant::now();
    loop {
        match records.get_opt(name).await.unwrap() {
            Some(r) if present => {
                println!("RouteDNSRecord {name} made after {:?}", started.elapsed());
                return Some(r);
            }
            None if !present => {
                println!("RouteDNSRecord {name} gone after {:?}", started.elapsed());
                return None;
            }
            _ => {}
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "RouteDNSRecord {name} present={present} not reached in {EVENTUALLY:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `--auto-records` for routes: an annotated HTTPRoute template in the host
/// makes a RouteDNSRecord it owns; an annotated TCPRoute in a member that
/// serves TCPRoute only as `v1alpha2` (gateway-api v1.4.1 experimental)
/// makes one too, and is published from that version; removing the
/// annotation or the route removes the record and the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_routes_make_records_from_any_served_version() {
    let dir = temp_dir("routes-auto");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    let (ip_a, ip_b) = ("203.0.113.81", "203.0.113.82");
    federation
        .member("a")
        .unwrap()
        .seed_yaml("a", &member_yaml("region-a", ip_a))
        .unwrap();
    // b: TCPRoute as gateway-api v1.4.1's experimental channel serves it.
    let b_yaml = member_yaml("region-b", ip_b).replace(
        &fedns_standins::upstream_crds::gateway_api_yaml(),
        &fedns_standins::upstream_crds::gateway_api_yaml_with_v1alpha2_tcproutes(),
    );
    assert!(b_yaml.contains("v1alpha2"), "b serves the v1.4.1 TCPRoute CRD");
    let b = federation.member("b").unwrap();
    b.seed_yaml("b", &b_yaml).unwrap();
    b.seed_yaml("b-tcp", &v1alpha2_tcp_route_yaml(ip_b)).unwrap();
    federation.register("a", json!({})).unwrap();
    // b's TCPRoute makes a record: b allows its namespace and name.
    federation
        .register(
            "b",
            json!({"autoRecords": {"namespaces": ["ns"], "hostnames": ["db.example.com"]}}),
        )
        .unwrap();
    // The host holds the templates: an annotated HTTPRoute and a plain one.
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}{crds}---\n{}",
                r#"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: shop
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed, multiclusterdns.fedns.io/ttl: "20"}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["shop.example.com"]
  rules: [{backendRefs: [{name: web, port: 8080}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: plain, namespace: ns}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["plain.example.com"]
"#,
                crds = fedns_standins::upstream_crds::gateway_api_yaml(),
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1", "--auto-records"]);
    let host = client_of(&federation.host).await;
    let records: Api<RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let routes: Api<DynamicObject> =
        Api::namespaced_with(host.clone(), "ns", &gateway_resource("httproutes", "HTTPRoute"));

    let shop = wait_route_record(&records, "shop", true).await.unwrap();
    assert_eq!(shop.spec.route_kind, fedns_api::RouteKind::HTTPRoute);
    assert_eq!(shop.spec.record_ttl, 20);
    assert!(shop.spec.hosts.is_empty(), "every hostname the route serves");
    let template_uid = routes.get("shop").await.unwrap().metadata.uid.unwrap();
    let owner = &shop.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("HTTPRoute", template_uid.as_str())
    );
    assert_eq!(
        shop.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app.kubernetes.io/managed-by"))
            .map(String::as_str),
        Some("fedns")
    );
    eventually("shop.example.com from both members' Gateways", || {
        dig(dns_port, NAME, "A", false) == [ip_a, ip_b]
    })
    .await;

    // The member's v1alpha2 TCPRoute: a record of its own, no owner (it
    // lives in a member), published with b's Gateway address.
    let db = wait_route_record(&records, "db", true).await.unwrap();
    assert_eq!(db.spec.route_kind, fedns_api::RouteKind::TCPRoute);
    assert_eq!(db.spec.hosts, ["db.example.com"]);
    assert!(db.metadata.owner_references.unwrap_or_default().is_empty());
    eventually("db.example.com from b's v1alpha2 TCPRoute", || {
        dig(dns_port, "db.example.com", "A", false) == [ip_b]
    })
    .await;
    assert!(
        records.get_opt("plain").await.unwrap().is_none(),
        "no annotation, no record"
    );
    assert!(
        controller.log_contains("watching /apis/gateway.networking.k8s.io/v1alpha2/tcproutes"),
        "b's TCPRoutes are watched in the version b serves"
    );

    // The annotation removed from the template: record and name go.
    routes
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"multiclusterdns.fedns.io/domain": null}}})),
        )
        .await
        .unwrap();
    wait_route_record(&records, "shop", false).await;
    eventually("shop.example.com gone", || {
        dig_status(dns_port, NAME, "A") == "NXDOMAIN"
    })
    .await;

    // The member's route deleted: its record and name go.
    let b_client = client_of(b).await;
    let tcp_routes: Api<DynamicObject> = Api::namespaced_with(
        b_client,
        "ns",
        &ApiResource {
            version: "v1alpha2".into(),
            api_version: "gateway.networking.k8s.io/v1alpha2".into(),
            ..gateway_resource("tcproutes", "TCPRoute")
        },
    );
    tcp_routes
        .delete("db", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    wait_route_record(&records, "db", false).await;
    eventually("db.example.com gone", || {
        dig_status(dns_port, "db.example.com", "A") == "NXDOMAIN"
    })
    .await;
    federation.stop();
}

/// A Gateway `infra/gw-ls` at `ip` that admits ListenerSets from every
/// namespace, a ListenerSet `ns/team` attached to it (listener `api`,
/// HTTP 8080, api.example.com; `accepted` its Accepted status), and an
/// HTTPRoute `ns/api` whose parent is the ListenerSet's listener. Shaped as
/// gateway-api v1.6.1's `apis/v1/listenerset_types.go` and
/// `gateway_types.go` (`AllowedListeners`) define them.
fn listener_set_yaml(ip: &str, accepted: &str) -> String {
    let condition = |type_: &str, status: &str| {
        format!(
            "{{type: {type_}, status: \"{status}\", reason: {type_}, message: \"\", observedGeneration: 1, lastTransitionTime: \"2026-11-26T00:00:00Z\"}}"
        )
    };
    format!(
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {{name: example}}
spec: {{controllerName: example.net/gateway-controller}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw-ls, namespace: infra, generation: 1}}
spec:
  gatewayClassName: example
  allowedListeners: {{namespaces: {{from: All}}}}
  listeners:
    - {{name: main, protocol: HTTP, port: 80, hostname: main.example.com}}
status:
  addresses: [{{type: IPAddress, value: "{ip}"}}]
  conditions: [{gw_accepted}, {gw_programmed}]
  listeners:
    - {{name: main, attachedRoutes: 0, supportedKinds: [{{group: gateway.networking.k8s.io, kind: HTTPRoute}}], conditions: [{gw_programmed}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {{name: team, namespace: ns, generation: 1}}
spec:
  parentRef: {{name: gw-ls, namespace: infra}}
  listeners:
    - {{name: api, protocol: HTTP, port: 8080, hostname: api.example.com, allowedRoutes: {{namespaces: {{from: Same}}}}}}
status:
  conditions: [{set_accepted}, {gw_programmed}]
  listeners:
    - {{name: api, attachedRoutes: 1, supportedKinds: [{{group: gateway.networking.k8s.io, kind: HTTPRoute}}], conditions: [{gw_programmed}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: api, namespace: ns, generation: 1}}
spec:
  parentRefs: [{{group: gateway.networking.k8s.io, kind: ListenerSet, name: team, sectionName: api}}]
  rules: [{{backendRefs: [{{name: web, port: 8080}}]}}]
status:
  parents:
    - parentRef: {{group: gateway.networking.k8s.io, kind: ListenerSet, name: team, namespace: ns, sectionName: api}}
      controllerName: example.net/gateway-controller
      conditions: [{route_accepted}, {route_resolved}]
"#,
        gw_accepted = condition("Accepted", "True"),
        gw_programmed = condition("Programmed", "True"),
        set_accepted = condition("Accepted", accepted),
        route_accepted = condition("Accepted", "True"),
        route_resolved = condition("ResolvedRefs", "True"),
    )
}

/// A route attached to a ListenerSet (standard since gateway-api v1.6.0)
/// is published with the addresses of the ListenerSet's Gateway; the
/// Gateway not accepting the set takes the name out, and a change of the
/// Gateway's address reaches the route through the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_on_a_listener_set_is_served_at_its_gateways_addresses() {
    let dir = temp_dir("routes-listenerset");
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    let a = federation.member("a").unwrap();
    a.seed_yaml("a", &member_yaml("region-a", "203.0.113.91")).unwrap();
    a.seed_yaml("a-ls", &listener_set_yaml("203.0.113.92", "True")).unwrap();
    federation.register("a", json!({})).unwrap();
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}---\n{}",
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {name: api, namespace: ns}\nspec: {routeKind: HTTPRoute, recordTTL: 5}\n"
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let records: Api<RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let member = client_of(a).await;
    eventually("api.example.com at the ListenerSet's Gateway address", || {
        dig(dns_port, "api.example.com", "A", false) == ["203.0.113.92"]
    })
    .await;
    let record = records.get("api").await.unwrap();
    let dns = record.status.unwrap().dns;
    assert_eq!(dns[0].hostnames[0].listeners, ["ns/team/api"], "{dns:?}");

    // The Gateway's address changes: the route follows through the set.
    let gateways = gateway_resource("gateways", "Gateway");
    patch_status(
        &member,
        &gateways,
        "infra",
        "gw-ls",
        json!({"addresses": [{"type": "IPAddress", "value": "203.0.113.93"}]}),
    )
    .await;
    eventually("the new Gateway address", || {
        dig(dns_port, "api.example.com", "A", false) == ["203.0.113.93"]
    })
    .await;

    // The Gateway no longer accepts the ListenerSet: the name goes, and
    // the condition says why.
    let sets = gateway_resource("listenersets", "ListenerSet");
    let refused = json!({"type": "Accepted", "status": "False", "reason": "NotAllowed", "message": "",
                         "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:01:00Z"});
    let programmed = json!({"type": "Programmed", "status": "True", "reason": "Programmed", "message": "",
                            "observedGeneration": 1, "lastTransitionTime": "2026-11-26T00:00:00Z"});
    patch_status(
        &member,
        &sets,
        "ns",
        "team",
        json!({"conditions": [refused, programmed]}),
    )
    .await;
    eventually("api.example.com gone with the ListenerSet refused", || {
        dig_status(dns_port, "api.example.com", "A") == "NXDOMAIN"
    })
    .await;
    let (_, message) = attached(&records, "api").await;
    assert!(
        message.contains("ListenerSet ns/team: not Accepted by its Gateway"),
        "{message}"
    );
    federation.stop();
}

/// A route without hostnames on a `*.example.com` listener serves the
/// wildcard: it is published as the RFC 4592 wildcard owner name, which
/// answers names nothing else publishes and never a name another record
/// owns, nor names below one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_without_hostnames_publishes_its_listeners_wildcard() {
    let dir = temp_dir("routes-wildcard");
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    let a = federation.member("a").unwrap();
    a.seed_yaml("a", &member_yaml("region-a", "203.0.113.101")).unwrap();
    // A second Gateway at another address, and a route without hostnames
    // attached to it (the `shop` route stays on the first).
    let catchall = member_yaml("region-a", "203.0.113.102");
    let catchall = catchall
        .split("\n---\n")
        .filter(|doc| {
            let doc = doc.trim_start();
            doc.starts_with("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n")
                || doc.starts_with("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n")
        })
        .map(|doc| {
            doc.replace("name: gw,", "name: gw-catchall,")
                .replace("{name: gw, namespace: infra}", "{name: gw-catchall, namespace: infra}")
                .replace("name: gw, namespace: infra}", "name: gw-catchall, namespace: infra}")
                .replace("name: shop,", "name: catchall,")
                .replace(&format!("  hostnames: [\"{NAME}\"]\n"), "")
        })
        .collect::<Vec<_>>()
        .join("\n---\n");
    assert!(
        catchall.contains("gw-catchall") && !catchall.contains(NAME),
        "{catchall}"
    );
    a.seed_yaml("a-catchall", &catchall).unwrap();
    federation.register("a", json!({})).unwrap();
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{}---\n{}---\n{}",
                // A wildcard belongs to the Domain's namespace unless granted.
                MYFED_HOST_YAML.replace(
                    "spec: {domain: example.com}",
                    "spec: {domain: example.com, grants: [{namespace: ns, hostnames: [\"*.example.com\"]}]}"
                ),
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {name: shop, namespace: ns}\nspec: {routeKind: HTTPRoute, recordTTL: 5}\n",
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: RouteDNSRecord\nmetadata: {name: catchall, namespace: ns}\nspec: {routeKind: HTTPRoute, recordTTL: 5}\n"
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    eventually("a name under the wildcard from the catch-all Gateway", || {
        dig(dns_port, "anything.example.com", "A", false) == ["203.0.113.102"]
    })
    .await;
    eventually("shop.example.com from its own route", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.101"]
    })
    .await;
    // Below a name that exists, the wildcard does not answer (RFC 4592 §2.2.1).
    assert_eq!(dig_status(dns_port, &format!("x.{NAME}"), "A"), "NXDOMAIN");
    let host = client_of(&federation.host).await;
    let records: Api<RouteDNSRecord> = Api::namespaced(host, "ns");
    let record = records.get("catchall").await.unwrap();
    let dns = record.status.unwrap().dns;
    assert_eq!(dns[0].hostnames[0].hostname, "*.example.com", "{dns:?}");

    // A policy picks answers per name asked: a wildcard is then not
    // published, and InputValid says so.
    records
        .patch(
            "catchall",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"routing": {"policy": "Failover", "priorities": [["region-a"]]}}})),
        )
        .await
        .unwrap();
    eventually("the wildcard withdrawn under a Failover policy", || {
        dig_status(dns_port, "anything.example.com", "A") == "NXDOMAIN"
    })
    .await;
    let record = records.get("catchall").await.unwrap();
    let input_valid = record
        .status
        .as_ref()
        .and_then(|s| fedns_api::conditions::get(&s.conditions, fedns_controller::records::INPUT_VALID))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        input_valid.contains("*.example.com is a wildcard: not published with spec.routing.policy Failover"),
        "{input_valid}"
    );
    assert_eq!(dig(dns_port, NAME, "A", false), ["203.0.113.101"]);
    federation.stop();
}

/// Routes in namespace `mallory` of a member, annotated for records: one
/// for every name under example.com (a wildcard), one for
/// www.mallory.example.com; both accepted by the member's Gateway
/// `infra/gw` (listener `*.example.com`, routes from every namespace).
fn mallory_routes_yaml() -> String {
    let condition = |type_: &str| {
        format!(
            "{{type: {type_}, status: \"True\", reason: {type_}, message: \"\", observedGeneration: 1, lastTransitionTime: \"2026-11-26T00:00:00Z\"}}"
        )
    };
    let route = |name: &str, hostname: &str| {
        format!(
            r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
  namespace: mallory
  generation: 1
  annotations: {{multiclusterdns.fedns.io/domain: myfed}}
spec:
  parentRefs: [{{name: gw, namespace: infra}}]
  hostnames: ["{hostname}"]
status:
  parents:
    - parentRef: {{group: gateway.networking.k8s.io, kind: Gateway, name: gw, namespace: infra}}
      controllerName: example.net/gateway-controller
      conditions: [{accepted}, {resolved}]
"#,
            accepted = condition("Accepted"),
            resolved = condition("ResolvedRefs"),
        )
    };
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: mallory}}\n{}{}",
        route("grab", "*.example.com"),
        route("www", "www.mallory.example.com")
    )
}

/// The `AutoRecordsRefused` condition of MemberCluster `name`: (status, message).
async fn refused_condition(members: &Api<fedns_api::MemberCluster>, name: &str) -> Option<(String, String)> {
    let member = members.get(name).await.unwrap();
    member
        .status
        .as_ref()
        .and_then(|s| fedns_api::conditions::get(&s.conditions, "AutoRecordsRefused"))
        .map(|c| (c.status.clone(), c.message.clone()))
}

/// A tenant with rights only in namespace `mallory` of a member annotates
/// a route for `*.example.com`: with `--auto-records` it made a host
/// record for the whole zone. Now a member's routes make records only
/// where its MemberCluster allows them (`spec.autoRecords`): without an
/// allowance nothing is made, the refusal is logged and on the
/// MemberCluster; allowed `mallory` with www.mallory.example.com, that
/// route's record is made and answered, the wildcard still is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_routes_make_records_only_where_its_member_cluster_allows() {
    let dir = temp_dir("routes-auto-allow");
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    let ip_a = "203.0.113.85";
    let a = federation.member("a").unwrap();
    a.seed_yaml("a", &member_yaml("region-a", ip_a)).unwrap();
    a.seed_yaml("mallory", &mallory_routes_yaml()).unwrap();
    federation.register("a", json!({})).unwrap();
    federation
        .host
        .seed_yaml(
            "host",
            &format!("{MYFED_HOST_YAML}---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: mallory}}\n"),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1", "--auto-records"]);
    let host = client_of(&federation.host).await;
    let records: Api<RouteDNSRecord> = Api::namespaced(host.clone(), "mallory");
    let members: Api<fedns_api::MemberCluster> = Api::namespaced(host.clone(), "fedns-system");

    // No allowance: both refused, on the MemberCluster and in the log.
    let started = std::time::Instant::now();
    let message = loop {
        if let Some((status, message)) = refused_condition(&members, "a").await {
            if message.starts_with("2 ") {
                assert_eq!(status, "True", "{message}");
                break message;
            }
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "no AutoRecordsRefused on MemberCluster a"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("refused after {:?}: {message}", started.elapsed());
    assert!(
        message.contains("HTTPRoute mallory/grab") && message.contains("HTTPRoute mallory/www"),
        "{message}"
    );
    assert!(message.contains("no spec.autoRecords"), "{message}");
    eventually("the refusal logged", || {
        controller.log_contains("makes no record") && controller.log_contains("mallory")
    })
    .await;
    for name in ["grab", "www"] {
        assert!(
            records.get_opt(name).await.unwrap().is_none(),
            "{name}: no record without an allowance"
        );
    }
    assert_eq!(dig_status(dns_port, "anything.example.com", "A"), "NXDOMAIN");

    // The operator allows mallory one name: that route's record is made.
    members
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"autoRecords": {
                "namespaces": ["mallory"],
                "hostnames": ["www.mallory.example.com"],
            }}})),
        )
        .await
        .unwrap();
    let www = wait_route_record(&records, "www", true).await.unwrap();
    assert!(www.metadata.owner_references.unwrap_or_default().is_empty());
    eventually("www.mallory.example.com from a's Gateway", || {
        dig(dns_port, "www.mallory.example.com", "A", false) == [ip_a]
    })
    .await;
    let started = std::time::Instant::now();
    loop {
        let (status, message) = refused_condition(&members, "a").await.unwrap_or_default();
        if message.starts_with("1 ") {
            assert_eq!(status, "True");
            assert!(message.contains("HTTPRoute mallory/grab"), "{message}");
            assert!(message.contains("*.example.com"), "{message}");
            break;
        }
        assert!(started.elapsed() < EVENTUALLY, "the condition still says {message}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The wildcard stays refused: no record, no answer for the zone.
    assert!(records.get_opt("grab").await.unwrap().is_none());
    assert_eq!(dig_status(dns_port, "anything.example.com", "A"), "NXDOMAIN");
    federation.stop();
}
