//! Tests of the facts read from objects as gateway-api's examples and a
//! Gateway controller write them (`facts.rs`).

use kube::api::DynamicObject;

use super::facts::*;

fn object(namespace: &str, value: serde_json::Value) -> DynamicObject {
    let mut object: DynamicObject = serde_json::from_value(value).unwrap();
    object.metadata.namespace = Some(namespace.into());
    object
}

/// The Gateway of gateway-api's `examples/standard/basic-http.yaml`
/// with the status a Gateway controller writes (`GatewayStatus` in
/// `apis/v1/gateway_types.go`).
#[test]
fn gateway_facts_read_listeners_status_and_addresses() {
    let gateway = object(
        "default",
        serde_json::json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "example-gateway"},
            "spec": {"gatewayClassName": "example-gateway-class", "listeners": [
                {"name": "http", "protocol": "HTTP", "port": 80},
                {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "*.example.com",
                 "allowedRoutes": {"namespaces": {"from": "All"}, "kinds": [{"kind": "HTTPRoute"}]}}]},
            "status": {
                "addresses": [{"type": "IPAddress", "value": "192.0.2.10"}, {"value": "2001:db8::1"},
                              {"type": "Hostname", "value": "lb.example.net"}, {"type": "NamedAddress", "value": "x"}],
                "conditions": [{"type": "Accepted", "status": "True"}, {"type": "Programmed", "status": "True"}],
                "listeners": [{"name": "http", "attachedRoutes": 1, "supportedKinds": [],
                               "conditions": [{"type": "Programmed", "status": "True"}]},
                              {"name": "https", "attachedRoutes": 0, "supportedKinds": [],
                               "conditions": [{"type": "Programmed", "status": "False"}]}]}
        }),
    );
    let facts = GatewayFacts::of(&gateway);
    assert_eq!(facts.listeners.len(), 2);
    assert_eq!(
        (&*facts.listeners[0].from, facts.listeners[0].programmed),
        ("Same", true)
    );
    assert_eq!(facts.listeners[1].hostname.as_deref(), Some("*.example.com"));
    assert_eq!(&*facts.listeners[1].from, "All");
    assert_eq!(
        &*facts.listeners[1].kinds,
        [(Box::from(GATEWAY_GROUP), Box::from("HTTPRoute"))]
    );
    assert!(!facts.listeners[1].programmed);
    assert_eq!((facts.accepted, facts.programmed), (Some(true), Some(true)));
    let (points, skipped) = facts.load_balancer_points();
    assert_eq!(points.len(), 3);
    assert_eq!(points[1].ip.as_deref(), Some("2001:db8::1"));
    assert_eq!(points[2].hostname.as_deref(), Some("lb.example.net"));
    assert_eq!(skipped.len(), 1, "{skipped:?}");
}

/// An HTTPRoute as in gateway-api's `examples/standard/basic-http.yaml`,
/// with the `status.parents` shape of `RouteParentStatus`.
#[test]
fn route_facts_read_parents_backends_and_path() {
    let route = object(
        "default",
        serde_json::json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "example-route"},
            "spec": {"parentRefs": [{"name": "example-gateway", "sectionName": "http"}],
                     "hostnames": ["example.com"],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/login"}}],
                                "backendRefs": [{"name": "example-svc", "port": 8080},
                                                {"name": "other", "namespace": "shop", "port": 80},
                                                {"group": "example.io", "kind": "Bucket", "name": "b"}]}]},
            "status": {"parents": [{"parentRef": {"name": "example-gateway", "sectionName": "http"},
                                    "controllerName": "example.net/gateway-controller",
                                    "conditions": [{"type": "Accepted", "status": "True"},
                                                   {"type": "ResolvedRefs", "status": "False"}]}]}
        }),
    );
    let facts = RouteFacts::of(&route);
    assert_eq!(&*facts.hostnames, [Box::from("example.com")]);
    let parent = &facts.parent_refs[0];
    assert_eq!(
        (&*parent.group, &*parent.kind, &*parent.namespace, &*parent.name),
        (GATEWAY_GROUP, "Gateway", "default", "example-gateway")
    );
    assert_eq!(parent.section_name.as_deref(), Some("http"));
    assert!(facts.parents[0].parent.same_object(parent));
    assert_eq!(
        (facts.parents[0].accepted, facts.parents[0].resolved_refs),
        (Some(true), Some(false))
    );
    assert_eq!(facts.backends.len(), 2);
    assert!(facts.routes_to("default", "example-svc") && facts.routes_to("shop", "other"));
    assert_eq!(facts.first_path.as_deref(), Some("/login"));
    assert!(facts.names_gateway("default", "example-gateway"));
    assert!(!facts.names_gateway("other", "example-gateway"));
}

/// A kubefed federated route (`kubefedctl enable` of
/// `httproutes.gateway.networking.k8s.io`): its `spec.template` is the
/// route; fedns annotations from the object win over the template's;
/// the template's status (none) says nothing of parents.
#[test]
fn a_federated_route_is_read_from_its_template() {
    let mut federated = object(
        "ns",
        serde_json::json!({
            "apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedHTTPRoute",
            "metadata": {"name": "shop", "uid": "u-1",
                         "annotations": {"multiclusterdns.fedns.io/ttl": "60", "other.io/x": "y"}},
            "spec": {"template": {"metadata": {"annotations": {"multiclusterdns.fedns.io/domain": "myfed",
                                                                "multiclusterdns.fedns.io/ttl": "30"}},
                                  "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["shop.example.com"]}},
                     "placement": {"clusters": [{"name": "a"}]}}
        }),
    );
    federated.metadata.uid = Some("u-1".into());
    let facts = RouteFacts::of_federated(&federated);
    assert_eq!(&*facts.hostnames, [Box::from("shop.example.com")]);
    assert_eq!(&*facts.parent_refs[0].namespace, "ns");
    assert!(facts.parents.is_empty());
    assert_eq!(facts.uid.as_deref(), Some("u-1"));
    let annotations: Vec<(&str, &str)> = facts.fedns_annotations.iter().map(|(k, v)| (&**k, &**v)).collect();
    assert_eq!(
        annotations,
        [
            ("multiclusterdns.fedns.io/domain", "myfed"),
            ("multiclusterdns.fedns.io/ttl", "60")
        ]
    );
}
