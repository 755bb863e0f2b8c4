//! Which hostnames a route serves in one member, and through which
//! Gateways: the Gateway API's attachment rules, recomputed per listener.
//!
//! A route's `status.parents[]` entry with `Accepted=True` says only that
//! *some* listener of that parent took it (`RouteParentStatus`,
//! `apis/v1/shared_types.go`). Per listener fedns checks again what the
//! Gateway API defines (`apis/v1/gateway_types.go` `Listener`,
//! `AllowedRoutes`; `site/content/en/docs/concepts/hostnames.md`):
//!
//! - the parent entry names a `spec.parentRefs[]` object (group, kind,
//!   namespace, name); its `sectionName` and `port` pick the listeners;
//! - the entry's `controllerName` is the controller of the Gateway's
//!   GatewayClass (another controller's entry for the same parent says
//!   nothing about it); where GatewayClasses cannot be read, entries are
//!   taken as they are and the record says so;
//! - the listener's protocol carries the route's kind (HTTP/HTTPS:
//!   HTTPRoute and GRPCRoute; TLS: TLSRoute; TCP: TCPRoute; UDP:
//!   UDPRoute), and `allowedRoutes.kinds`, when set, lists it;
//! - `allowedRoutes.namespaces.from`: `Same` (default) and `All` are
//!   checked here; `Selector` needs Namespace labels fedns does not read
//!   in members, so the parent's `Accepted=True` is trusted for it;
//! - the listener reports `Programmed=True` and not `Conflicted=True`;
//! - the hostnames intersect ([`fedns_api::gateway::intersect`]).
//!
//! Addresses are the Gateway's `status.addresses` ("All intersected
//! hostnames ... MUST resolve to all addresses in that Gateway's
//! status.addresses", hostnames.md "DNS").

use std::collections::{BTreeMap, BTreeSet};

use fedns_api::{RouteHostname, RouteKind};
use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus};

use crate::members::gateway::{ClassController, GatewayFacts, ListenerFacts, RouteFacts, GATEWAY_GROUP, LISTENER_SET};
use fedns_api::gateway::{intersect, is_wildcard};

/// What a route serves in one member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Served {
    /// The hostnames served, sorted, each with its Gateways' addresses.
    pub hostnames: Vec<RouteHostname>,
    /// Every address of every Gateway serving a hostname.
    pub load_balancer: LoadBalancerStatus,
    /// What was left out and why (a wildcard, an address of a type that
    /// cannot be published), for the record's conditions.
    pub notes: Vec<String>,
    /// The port of the first listener serving a hostname: a health
    /// check's default port.
    pub first_port: Option<i32>,
}

/// Whether a listener's `protocol` carries routes of `kind` (the
/// protocol → kinds table of `Listener.protocol` and `AllowedRoutes.kinds`
/// in `apis/v1/gateway_types.go`).
pub fn protocol_carries(protocol: &str, kind: RouteKind) -> bool {
    match kind {
        RouteKind::HTTPRoute | RouteKind::GRPCRoute => matches!(protocol, "HTTP" | "HTTPS"),
        RouteKind::TLSRoute => protocol == "TLS",
        RouteKind::TCPRoute => protocol == "TCP",
        RouteKind::UDPRoute => protocol == "UDP",
    }
}

/// Why a listener does not take the route, or `None` when it does.
fn listener_refuses(
    listener: &ListenerFacts,
    kind: RouteKind,
    route_namespace: &str,
    gateway_namespace: &str,
) -> Option<&'static str> {
    if !protocol_carries(&listener.protocol, kind) {
        return Some("its protocol carries no route of this kind");
    }
    if !listener.kinds.is_empty()
        && !listener
            .kinds
            .iter()
            .any(|(group, k)| &**group == GATEWAY_GROUP && &**k == kind.as_str())
    {
        return Some("allowedRoutes.kinds does not list this kind");
    }
    match &*listener.from {
        "All" | "Selector" => {}
        "Same" => {
            if route_namespace != gateway_namespace {
                return Some("allowedRoutes admits routes of its own namespace only");
            }
        }
        _ => return Some("allowedRoutes.namespaces admits no route"),
    }
    if listener.conflicted {
        return Some("it is Conflicted");
    }
    if !listener.programmed {
        return Some("it is not Programmed");
    }
    None
}

/// The hostnames route `route_namespace/…` of `kind` (facts `route`)
/// serves in one member whose parents `parent(kind, namespace, name)`
/// returns (a Gateway, or a ListenerSet as its Gateway's addresses with
/// its own listeners: [`GatewayApi::parent`](crate::members::gateway::GatewayApi::parent);
/// `Err`: why there is none).
/// `hosts` is the record's `spec.hosts`: when set, only those names
/// (and for TCPRoute/UDPRoute, which carry none, exactly those).
///
/// # Errors
/// The reason nothing is served (one line per parent considered), when no
/// hostname is.
pub fn served(
    kind: RouteKind,
    route_namespace: &str,
    route: &RouteFacts,
    hosts: &[String],
    parent_of: impl Fn(&str, &str, &str) -> Result<GatewayFacts, String>,
) -> Result<Served, String> {
    let wanted: BTreeSet<String> = hosts
        .iter()
        .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        .collect();
    let mut reasons: Vec<String> = Vec::new();
    let mut notes: BTreeSet<String> = BTreeSet::new();
    // hostname → (listener ids, addresses)
    let mut names: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    let mut points: Vec<LoadBalancerIngress> = Vec::new();
    let mut first_port: Option<i32> = None;
    if route.parents.is_empty() {
        return Err("no Gateway has accepted it (status.parents is empty)".into());
    }
    for parent in route.parents.iter() {
        let p = &parent.parent;
        let id = format!("{}/{}", p.namespace, p.name);
        let what = &*p.kind;
        if &*p.group != GATEWAY_GROUP || !matches!(what, "Gateway" | LISTENER_SET) {
            reasons.push(format!(
                "parent {what} {id}: only Gateway and ListenerSet parents are followed"
            ));
            continue;
        }
        if !route.parent_refs.iter().any(|spec| spec.same_object(p)) {
            reasons.push(format!("{what} {id}: in status.parents but not in spec.parentRefs"));
            continue;
        }
        if parent.accepted != Some(true) {
            reasons.push(format!(
                "{what} {id}: has not accepted the route (Accepted is not True)"
            ));
            continue;
        }
        if parent.resolved_refs == Some(false) {
            reasons.push(format!(
                "{what} {id}: ResolvedRefs=False (a backend cannot be resolved)"
            ));
            continue;
        }
        let gw = match parent_of(what, &p.namespace, &p.name) {
            Ok(gw) => gw,
            Err(why) => {
                reasons.push(format!("{what} {id}: {why}"));
                continue;
            }
        };
        match &gw.controller {
            ClassController::Known(controller) if *controller != parent.controller => {
                reasons.push(format!(
                    "{what} {id}: its status.parents entry is written by {:?}, not by {controller}, the controller of the Gateway's GatewayClass",
                    parent.controller
                ));
                continue;
            }
            ClassController::NoClass(class) => {
                reasons.push(format!(
                    "{what} {id}: its GatewayClass {class:?} is not found in the member"
                ));
                continue;
            }
            ClassController::Unreadable => {
                notes.insert(format!(
                    "{what} {id}: GatewayClasses are not readable in the member, so the status entry's controllerName ({}) is not checked",
                    parent.controller
                ));
            }
            ClassController::Known(_) | ClassController::Unknown => {}
        }
        if gw.programmed == Some(false) {
            reasons.push(format!("{what} {id}: not Programmed"));
            continue;
        }
        let (gw_points, skipped) = gw.load_balancer_points();
        notes.extend(skipped.into_iter().map(|s| format!("{what} {id}: {s}")));
        if gw_points.is_empty() {
            reasons.push(format!("{what} {id}: has no usable status.addresses"));
            continue;
        }
        let values: BTreeSet<String> = gw_points
            .iter()
            .filter_map(|pt| pt.ip.clone().or_else(|| pt.hostname.clone()))
            .collect();
        let mut took_any = false;
        let mut refusals: Vec<String> = Vec::new();
        for listener in gw.listeners.iter() {
            if p.section_name.as_deref().is_some_and(|s| s != &*listener.name) {
                continue;
            }
            if p.port.is_some_and(|port| port != listener.port) {
                continue;
            }
            if let Some(why) = listener_refuses(listener, kind, route_namespace, &p.namespace) {
                refusals.push(format!("listener {}: {why}", listener.name));
                continue;
            }
            let listener_id = format!("{id}/{}", listener.name);
            let mut yielded: Vec<String> = Vec::new();
            if kind.has_hostnames() {
                let route_names: Vec<Option<&str>> = if route.hostnames.is_empty() {
                    vec![None]
                } else {
                    route.hostnames.iter().map(|h| Some(&**h)).collect()
                };
                for name in route_names {
                    if let Some(hostname) = intersect(listener.hostname.as_deref(), name) {
                        yielded.push(hostname);
                    }
                }
                if yielded.is_empty() {
                    refusals.push(format!("listener {}: no hostname intersects", listener.name));
                    continue;
                }
            } else {
                // TCPRoute/UDPRoute: the names are the record's hosts.
                yielded.extend(wanted.iter().cloned());
            }
            for hostname in yielded {
                // With spec.hosts only those names, a wildcard serving
                // each host under it; without, every name, a wildcard as
                // the RFC 4592 wildcard owner name it is.
                let published: Vec<String> = if wanted.is_empty() {
                    vec![hostname]
                } else if is_wildcard(&hostname) {
                    wanted
                        .iter()
                        .filter(|h| intersect(Some(&hostname), Some(h.as_str())).as_deref() == Some(h.as_str()))
                        .cloned()
                        .collect()
                } else if wanted.contains(&hostname) {
                    vec![hostname]
                } else {
                    Vec::new()
                };
                for hostname in published {
                    took_any = true;
                    first_port.get_or_insert(listener.port);
                    let entry = names.entry(hostname).or_default();
                    entry.0.insert(listener_id.clone());
                    entry.1.extend(values.iter().cloned());
                }
            }
        }
        if took_any {
            for pt in gw_points {
                if !points.contains(&pt) {
                    points.push(pt);
                }
            }
        } else if refusals.is_empty() {
            reasons.push(format!(
                "{what} {id}: no listener matches the parentRef's sectionName/port"
            ));
        } else {
            reasons.push(format!("{what} {id}: {}", refusals.join("; ")));
        }
    }
    if names.is_empty() {
        if !kind.has_hostnames() && wanted.is_empty() {
            reasons.push(format!(
                "a {} carries no hostnames: spec.hosts must name them",
                kind.as_str()
            ));
        }
        reasons.extend(notes);
        return Err(reasons.join("; "));
    }
    Ok(Served {
        hostnames: names
            .into_iter()
            .map(|(hostname, (listeners, addresses))| RouteHostname {
                hostname,
                addresses: addresses.into_iter().collect(),
                listeners: listeners.into_iter().collect(),
            })
            .collect(),
        load_balancer: LoadBalancerStatus { ingress: Some(points) },
        notes: notes.into_iter().collect(),
        first_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::DynamicObject;

    fn gateway(
        listeners: serde_json::Value,
        listener_status: serde_json::Value,
        addresses: serde_json::Value,
    ) -> GatewayFacts {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "c", "listeners": listeners},
            "status": {"addresses": addresses, "listeners": listener_status,
                       "conditions": [{"type": "Programmed", "status": "True"}]}
        }))
        .unwrap();
        GatewayFacts::of(&object)
    }

    /// The three listeners of the conformance test
    /// `httproute-hostname-intersection.yaml`, all programmed, from every
    /// namespace.
    fn conformance_gateway() -> GatewayFacts {
        let listener = |name: &str, host: &str| {
            serde_json::json!({"name": name, "port": 80, "protocol": "HTTP", "hostname": host,
                               "allowedRoutes": {"namespaces": {"from": "All"}}})
        };
        let status =
            |name: &str| serde_json::json!({"name": name, "conditions": [{"type": "Programmed", "status": "True"}]});
        gateway(
            serde_json::json!([
                listener("listener-1", "very.specific.com"),
                listener("listener-2", "*.wildcard.io"),
                listener("listener-3", "*.anotherwildcard.io")
            ]),
            serde_json::json!([status("listener-1"), status("listener-2"), status("listener-3")]),
            serde_json::json!([{"type": "IPAddress", "value": "127.0.0.10"}]),
        )
    }

    fn route(hostnames: &[&str], parent: serde_json::Value, conditions: serde_json::Value) -> RouteFacts {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "r", "namespace": "app"},
            "spec": {"parentRefs": [parent.clone()], "hostnames": hostnames,
                     "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]},
            "status": {"parents": [{"parentRef": parent, "controllerName": "example.net/gw",
                                    "conditions": conditions}]}
        }))
        .unwrap();
        RouteFacts::of(&object)
    }

    /// A member's parents from a Gateway lookup (ListenerSets: none).
    fn by_gateway(
        gateway: impl Fn(&str, &str) -> Option<GatewayFacts>,
    ) -> impl Fn(&str, &str, &str) -> Result<GatewayFacts, String> {
        move |kind, ns, name| match kind {
            "Gateway" => gateway(ns, name).ok_or_else(|| "not found in the member".to_owned()),
            _ => Err("no such parent here".to_owned()),
        }
    }

    fn accepted() -> serde_json::Value {
        serde_json::json!([{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}])
    }

    fn names(served: &Result<Served, String>) -> Vec<String> {
        served
            .as_ref()
            .map(|s| s.hostnames.iter().map(|h| h.hostname.clone()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_conformance_routes_serve_their_intersections() {
        let gw = conformance_gateway();
        let parent = serde_json::json!({"name": "gw", "namespace": "infra"});
        let lookup = |ns: &str, name: &str| (ns == "infra" && name == "gw").then(|| gw.clone());
        for (hostnames, want) in [
            (vec!["very.specific.com"], vec!["very.specific.com"]),
            (
                vec!["foo.wildcard.io", "bar.wildcard.io", "foo.bar.wildcard.io"],
                vec!["bar.wildcard.io", "foo.bar.wildcard.io", "foo.wildcard.io"],
            ),
            (vec!["*.specific.com"], vec!["very.specific.com"]),
            (vec!["*.anotherwildcard.io"], vec!["*.anotherwildcard.io"]),
            (vec!["specific.but.wrong.com", "wildcard.io"], vec![]),
        ] {
            let r = route(&hostnames, parent.clone(), accepted());
            let got = served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup));
            assert_eq!(names(&got), want, "{hostnames:?}: {got:?}");
        }
        // The wildcard ∩ wildcard is the wildcard owner name (RFC 4592);
        // with spec.hosts, the hosts under it.
        let r = route(&["*.anotherwildcard.io"], parent.clone(), accepted());
        assert_eq!(
            names(&served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup))),
            vec!["*.anotherwildcard.io"]
        );
        let hosts = vec!["a.anotherwildcard.io".to_owned(), "b.elsewhere.io".to_owned()];
        assert_eq!(
            names(&served(RouteKind::HTTPRoute, "app", &r, &hosts, by_gateway(lookup))),
            vec!["a.anotherwildcard.io"]
        );
        // A route without hostnames takes each listener's own.
        let r = route(&[], parent.clone(), accepted());
        assert_eq!(
            names(&served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup))),
            vec!["*.anotherwildcard.io", "*.wildcard.io", "very.specific.com"]
        );
        // sectionName picks one listener.
        let section = serde_json::json!({"name": "gw", "namespace": "infra", "sectionName": "listener-2"});
        let r = route(&["very.specific.com", "a.wildcard.io"], section, accepted());
        assert_eq!(
            names(&served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup))),
            vec!["a.wildcard.io"]
        );
        // spec.hosts limits what is published.
        let r = route(&["foo.wildcard.io", "bar.wildcard.io"], parent.clone(), accepted());
        let hosts = vec!["bar.wildcard.io".to_owned()];
        assert_eq!(
            names(&served(RouteKind::HTTPRoute, "app", &r, &hosts, by_gateway(lookup))),
            hosts
        );
    }

    #[test]
    fn a_route_not_accepted_or_unresolved_or_on_an_unprogrammed_listener_serves_nothing() {
        let gw = conformance_gateway();
        let lookup = |_: &str, _: &str| Some(gw.clone());
        let parent = serde_json::json!({"name": "gw", "namespace": "infra"});
        let refused =
            serde_json::json!([{"type": "Accepted", "status": "False", "reason": "NoMatchingListenerHostname"}]);
        let r = route(&["very.specific.com"], parent.clone(), refused);
        let why = served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup)).unwrap_err();
        assert!(why.contains("has not accepted"), "{why}");
        let unresolved =
            serde_json::json!([{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "False"}]);
        let r = route(&["very.specific.com"], parent.clone(), unresolved);
        assert!(served(RouteKind::HTTPRoute, "app", &r, &[], by_gateway(lookup))
            .unwrap_err()
            .contains("ResolvedRefs=False"));
        // The listener's status says Programmed=False.
        let mut unprogrammed = conformance_gateway();
        let mut listeners = unprogrammed.listeners.to_vec();
        listeners[0].programmed = false;
        unprogrammed.listeners = listeners.into();
        let r = route(&["very.specific.com"], parent.clone(), accepted());
        let why = served(
            RouteKind::HTTPRoute,
            "app",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| Some(unprogrammed.clone())),
        )
        .unwrap_err();
        assert!(why.contains("listener listener-1: it is not Programmed"), "{why}");
        // A Gateway without addresses, or missing, serves nothing.
        let mut bare = conformance_gateway();
        bare.addresses = Box::new([]);
        assert!(served(
            RouteKind::HTTPRoute,
            "app",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| Some(bare.clone()))
        )
        .unwrap_err()
        .contains("no usable status.addresses"));
        assert!(served(
            RouteKind::HTTPRoute,
            "app",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| None)
        )
        .unwrap_err()
        .contains("not found"));
        // A GRPCRoute rides the same HTTP listeners; a TLSRoute does not.
        assert_eq!(
            names(&served(RouteKind::GRPCRoute, "app", &r, &[], by_gateway(lookup))),
            vec!["very.specific.com"]
        );
        assert!(served(RouteKind::TLSRoute, "app", &r, &[], by_gateway(lookup))
            .unwrap_err()
            .contains("protocol carries no route of this kind"));
    }

    #[test]
    fn allowed_routes_namespaces_and_kinds_are_honoured() {
        let listener =
            serde_json::json!([{"name": "web", "port": 80, "protocol": "HTTP", "hostname": "shop.example.com"}]);
        let status = serde_json::json!([{"name": "web", "conditions": [{"type": "Programmed", "status": "True"}]}]);
        let gw = gateway(
            listener,
            status.clone(),
            serde_json::json!([{"value": "127.0.0.11"}, {"type": "Hostname", "value": "lb.example.net"}]),
        );
        let parent = serde_json::json!({"name": "gw", "namespace": "infra"});
        let r = route(&[], parent.clone(), accepted());
        // Default `from: Same`: a route in another namespace is refused.
        let why = served(
            RouteKind::HTTPRoute,
            "app",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| Some(gw.clone())),
        )
        .unwrap_err();
        assert!(why.contains("own namespace only"), "{why}");
        let ok = served(
            RouteKind::HTTPRoute,
            "infra",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| Some(gw.clone())),
        )
        .unwrap();
        assert_eq!(ok.hostnames[0].hostname, "shop.example.com");
        assert_eq!(ok.hostnames[0].addresses, vec!["127.0.0.11", "lb.example.net"]);
        assert_eq!(ok.hostnames[0].listeners, vec!["infra/gw/web"]);
        assert_eq!(ok.load_balancer.ingress.as_ref().map(Vec::len), Some(2));
        // allowedRoutes.kinds without HTTPRoute.
        let grpc_only = serde_json::json!([{"name": "web", "port": 80, "protocol": "HTTP",
            "allowedRoutes": {"namespaces": {"from": "All"}, "kinds": [{"kind": "GRPCRoute"}]}}]);
        let gw = gateway(grpc_only, status, serde_json::json!([{"value": "127.0.0.11"}]));
        let r = route(&["a.example.com"], parent, accepted());
        let why = served(
            RouteKind::HTTPRoute,
            "app",
            &r,
            &[],
            by_gateway(|_: &str, _: &str| Some(gw.clone())),
        )
        .unwrap_err();
        assert!(why.contains("allowedRoutes.kinds"), "{why}");
        assert_eq!(
            names(&served(
                RouteKind::GRPCRoute,
                "app",
                &r,
                &[],
                by_gateway(|_: &str, _: &str| Some(gw.clone()))
            )),
            vec!["a.example.com"]
        );
    }

    #[test]
    fn a_tcp_route_serves_the_records_hosts() {
        let gw = gateway(
            serde_json::json!([{"name": "db", "port": 5432, "protocol": "TCP", "allowedRoutes": {"namespaces": {"from": "All"}}}]),
            serde_json::json!([{"name": "db", "conditions": [{"type": "Programmed", "status": "True"}]}]),
            serde_json::json!([{"value": "127.0.0.12"}]),
        );
        let r = route(
            &[],
            serde_json::json!({"name": "gw", "namespace": "infra", "port": 5432}),
            accepted(),
        );
        let lookup = |_: &str, _: &str| Some(gw.clone());
        assert!(served(RouteKind::TCPRoute, "app", &r, &[], by_gateway(lookup))
            .unwrap_err()
            .contains("spec.hosts must name them"));
        let hosts = vec!["db.example.com".to_owned()];
        assert_eq!(
            names(&served(RouteKind::TCPRoute, "app", &r, &hosts, by_gateway(lookup))),
            hosts
        );
    }

    /// A route whose parent is a ListenerSet takes the listeners and
    /// addresses its parent lookup gives (see `GatewayApi::parent`); its
    /// listeners are named after the set.
    #[test]
    fn a_route_on_a_listener_set_is_served_on_its_listeners() {
        let set = gateway(
            serde_json::json!([{"name": "api", "port": 8080, "protocol": "HTTP", "hostname": "*.team.example.com"}]),
            serde_json::json!([{"name": "api", "conditions": [{"type": "Programmed", "status": "True"}]}]),
            serde_json::json!([{"value": "127.0.0.21"}]),
        );
        let parent =
            serde_json::json!({"kind": "ListenerSet", "name": "team-set", "namespace": "app", "sectionName": "api"});
        let r = route(&["api.team.example.com"], parent, accepted());
        let lookup = |kind: &str, ns: &str, name: &str| match (kind, ns, name) {
            ("ListenerSet", "app", "team-set") => Ok(set.clone()),
            _ => Err("not found in the member".to_owned()),
        };
        let got = served(RouteKind::HTTPRoute, "app", &r, &[], lookup).unwrap();
        assert_eq!(got.hostnames[0].hostname, "api.team.example.com");
        assert_eq!(got.hostnames[0].addresses, ["127.0.0.21"]);
        assert_eq!(got.hostnames[0].listeners, ["app/team-set/api"]);
        assert_eq!(got.first_port, Some(8080));
        let why = served(RouteKind::HTTPRoute, "app", &r, &[], |_: &str, _: &str, _: &str| {
            Err("not Accepted by its Gateway".to_owned())
        })
        .unwrap_err();
        assert!(
            why.contains("ListenerSet app/team-set: not Accepted by its Gateway"),
            "{why}"
        );
    }

    /// Gateway API conformance `httproute-invalid-parentref-controller`
    /// in spirit: a route's only `status.parents[]` entry written by
    /// another controller than the Gateway class's says nothing, and
    /// nothing is served; the class controller's own entry beside it
    /// serves; a Gateway whose class is missing serves nothing; where
    /// classes cannot be read, entries count and the record says so.
    #[test]
    fn only_the_gateway_class_controllers_entry_counts() {
        let gw = |controller: ClassController| GatewayFacts {
            controller,
            ..conformance_gateway()
        };
        let ours = ClassController::Known("example.net/gateway-controller".into());
        let parent = serde_json::json!({"name": "gw", "namespace": "infra"});
        let entry = |controller: &str| serde_json::json!({"parentRef": parent, "controllerName": controller, "conditions": accepted()});
        let route_with = |entries: Vec<serde_json::Value>| {
            let object: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": "r", "namespace": "app"},
                "spec": {"parentRefs": [parent], "hostnames": ["very.specific.com"]},
                "status": {"parents": entries}
            }))
            .unwrap();
            RouteFacts::of(&object)
        };
        let serve = |route: &RouteFacts, class: ClassController| {
            let facts = gw(class);
            served(
                RouteKind::HTTPRoute,
                "app",
                route,
                &[],
                by_gateway(move |_, _| Some(facts.clone())),
            )
        };
        let other_only = route_with(vec![entry("example.net/other-controller")]);
        let refused = serve(&other_only, ours.clone()).unwrap_err();
        assert!(
            refused.contains("written by \"example.net/other-controller\""),
            "{refused}"
        );
        let both = route_with(vec![
            entry("example.net/other-controller"),
            entry("example.net/gateway-controller"),
        ]);
        assert_eq!(names(&serve(&both, ours)), ["very.specific.com"]);
        let missing = serve(&both, ClassController::NoClass("gone".into())).unwrap_err();
        assert!(missing.contains("GatewayClass \"gone\" is not found"), "{missing}");
        let unreadable = serve(&other_only, ClassController::Unreadable).unwrap();
        let hostnames: Vec<&str> = unreadable.hostnames.iter().map(|h| h.hostname.as_str()).collect();
        assert_eq!(hostnames, ["very.specific.com"]);
        assert!(
            unreadable.notes.iter().any(|n| n.contains("not checked")),
            "{:?}",
            unreadable.notes
        );
    }
}
