//! A stand-in Gateway API controller for an emulated member: it writes the
//! status a Gateway controller writes, so that fedns reads Gateways and
//! routes as it would in a real cluster. Shapes and condition reasons are
//! gateway-api v1.6.1's (8bb74df00e56ec8f944d48c25e6c1c9c2f6848e3):
//! `GatewayStatus` (`apis/v1/gateway_types.go`: `addresses`, `conditions`
//! `Accepted`/`Programmed`, `listeners[]` with `supportedKinds`,
//! `attachedRoutes` and conditions `Accepted`, `Programmed`,
//! `ResolvedRefs`, `Conflicted`) and `RouteStatus.parents[]`
//! (`apis/v1/shared_types.go`: `parentRef`, `controllerName`, conditions
//! `Accepted` with reasons `Accepted`, `NotAllowedByListeners`,
//! `NoMatchingListenerHostname`, `NoMatchingParent`, and `ResolvedRefs`
//! with `ResolvedRefs` or `BackendNotFound`).
//!
//! Like a real controller it handles only the Gateways of its own
//! GatewayClasses (`spec.controllerName` [`CONTROLLER_NAME`]), and in a
//! route's `status.parents` writes only its own entries, leaving other
//! controllers' as they are (`RouteParentStatus.ControllerName`), so a
//! real Gateway setup can run beside it.
//!
//! What it decides: a Gateway of one of its classes is accepted and programmed at
//! the addresses it is given (one pool per member, as a cloud load
//! balancer would assign); each HTTPRoute and GRPCRoute parentRef naming
//! one of its Gateways is accepted when some listener its `sectionName`
//! and `port` pick carries the kind, admits the namespace (`Same`, `All`;
//! `Selector` is admitted) and intersects a hostname ([`intersects`],
//! written here from the Gateway API's rules rather than shared with
//! fedns, so a mistake in fedns's own intersection shows in its tests);
//! ResolvedRefs is `True` when every
//! Service backend exists. What it does not do: route traffic, TLS,
//! ReferenceGrants, ListenerSets, TLS/TCP/UDP routes, GatewayClass status,
//! conflicts between listeners (none is ever `Conflicted`).

use serde_json::{json, Value};

use fedns_kube_emulator::{Filter, PatchKind, Store, Target};

/// The controller name it writes in `status.parents[].controllerName`.
pub const CONTROLLER_NAME: &str = "sandbox.fedns.io/gateway-controller";

const GROUP: &str = "gateway.networking.k8s.io";
const ROUTES: [(&str, &str); 2] = [("httproutes", "HTTPRoute"), ("grpcroutes", "GRPCRoute")];

fn list(store: &Store, group: &str, plural: &str) -> Vec<Value> {
    let Some(info) = store.resource(group, "v1", plural) else {
        return Vec::new();
    };
    store
        .list(&info, &Filter::default(), None, None)
        .ok()
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// A condition as `metav1.Condition`, keeping `lastTransitionTime` from
/// `old` when the status did not change.
fn condition(old: &Value, type_: &str, status: bool, reason: &str, message: &str, generation: &Value) -> Value {
    let status = if status { "True" } else { "False" };
    let since = old
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_ && c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
        .unwrap_or_else(|| jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "observedGeneration": generation, "lastTransitionTime": since})
}

/// The route kinds a listener of `protocol` carries (its
/// `allowedRoutes.kinds` when set).
fn supported_kinds(listener: &Value) -> Vec<&'static str> {
    let by_protocol: &[&'static str] = match text(listener, "/protocol") {
        "HTTP" | "HTTPS" => &["HTTPRoute", "GRPCRoute"],
        "TLS" => &["TLSRoute"],
        "TCP" => &["TCPRoute"],
        "UDP" => &["UDPRoute"],
        _ => &[],
    };
    let listed: Vec<&str> = listener
        .pointer("/allowedRoutes/kinds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|k| k["group"].as_str().unwrap_or(GROUP) == GROUP)
        .filter_map(|k| k["kind"].as_str())
        .collect();
    by_protocol
        .iter()
        .copied()
        .filter(|k| listed.is_empty() || listed.contains(k))
        .collect()
}

/// Why `listener` of a Gateway in `gateway_ns` does not take route `route`
/// (kind `kind`, in `route_ns`), as a route condition reason; None: it does.
fn refusal(listener: &Value, gateway_ns: &str, kind: &str, route: &Value, route_ns: &str) -> Option<&'static str> {
    if !supported_kinds(listener).contains(&kind) {
        return Some("NotAllowedByListeners");
    }
    let from = listener
        .pointer("/allowedRoutes/namespaces/from")
        .and_then(Value::as_str)
        .unwrap_or("Same");
    if from == "Same" && gateway_ns != route_ns || from == "None" {
        return Some("NotAllowedByListeners");
    }
    let listener_host = listener["hostname"].as_str();
    let hosts: Vec<Option<&str>> = match route.pointer("/spec/hostnames").and_then(Value::as_array) {
        Some(hosts) if !hosts.is_empty() => hosts.iter().map(Value::as_str).collect(),
        _ => vec![None],
    };
    // Both unset intersect (any hostname), though they name nothing.
    let intersects = hosts.iter().any(|h| intersects(listener_host, *h));
    (!intersects).then_some("NoMatchingListenerHostname")
}

/// Whether a listener's hostname and a route's intersect, by the rules of
/// gateway-api's `site/content/en/docs/concepts/hostnames.md`: unset is
/// `*`, which takes anything; precise names must be equal; a wildcard
/// `*.d` matches names with one or more labels before `.d`, and two
/// wildcards intersect when one's domain is within the other's.
pub fn intersects(listener: Option<&str>, route: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (listener.filter(|h| *h != "*"), route.filter(|h| *h != "*")) else {
        return true;
    };
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let covered = |wild: &str, name: &str| {
        // `*.d` covers `x.d`, `y.x.d` and `*.x.d`, never `d` itself.
        wild.strip_prefix("*.")
            .is_some_and(|domain| name.len() > domain.len() + 1 && name.ends_with(&format!(".{domain}")))
    };
    a == b || covered(&a, &b) || covered(&b, &a)
}

/// Writes the status of every Gateway, HTTPRoute and GRPCRoute in `store`
/// that differs from what this controller would write; Gateways get
/// `addresses` (`(type, value)`, e.g. `("IPAddress", "127.0.10.1")`).
/// Returns how many objects it wrote. A member without the Gateway API
/// CRDs has nothing to write.
pub fn reconcile(store: &Store, addresses: &[(String, String)]) -> usize {
    let classes: Vec<String> = list(store, GROUP, "gatewayclasses")
        .iter()
        .filter(|c| text(c, "/spec/controllerName") == CONTROLLER_NAME)
        .map(|c| text(c, "/metadata/name").to_owned())
        .collect();
    // Only the Gateways of this controller's classes.
    let gateways: Vec<Value> = list(store, GROUP, "gateways")
        .into_iter()
        .filter(|g| classes.iter().any(|c| c == text(g, "/spec/gatewayClassName")))
        .collect();
    let routes: Vec<(&str, Value)> = ROUTES
        .iter()
        .flat_map(|(plural, kind)| list(store, GROUP, plural).into_iter().map(move |r| (*kind, r)))
        .collect();
    let services = list(store, "", "services");
    let service_exists = |ns: &str, name: &str| {
        services
            .iter()
            .any(|s| text(s, "/metadata/namespace") == ns && text(s, "/metadata/name") == name)
    };
    let mut written = 0;
    // Routes first: a Gateway's attachedRoutes counts the accepted ones.
    let mut attached: std::collections::BTreeMap<(String, String, String), u64> = Default::default();
    for (kind, route) in &routes {
        let route_ns = text(route, "/metadata/namespace");
        let generation = route.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
        let old_parents = route.pointer("/status/parents").cloned().unwrap_or(json!([]));
        let mut parents = Vec::new();
        for parent in route
            .pointer("/spec/parentRefs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if parent["group"].as_str().unwrap_or(GROUP) != GROUP
                || parent["kind"].as_str().unwrap_or("Gateway") != "Gateway"
            {
                continue;
            }
            let gateway_ns = parent["namespace"].as_str().unwrap_or(route_ns);
            let gateway_name = text(parent, "/name");
            // A parent that does not resolve is not listed.
            let Some(gateway) = gateways
                .iter()
                .find(|g| text(g, "/metadata/namespace") == gateway_ns && text(g, "/metadata/name") == gateway_name)
            else {
                continue;
            };
            let picked: Vec<&Value> = gateway
                .pointer("/spec/listeners")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|l| parent["sectionName"].as_str().is_none_or(|s| l["name"] == s))
                .filter(|l| parent["port"].as_i64().is_none_or(|p| l["port"].as_i64() == Some(p)))
                .collect();
            let refusals: Vec<Option<&str>> = picked
                .iter()
                .map(|l| refusal(l, gateway_ns, kind, route, route_ns))
                .collect();
            let (accepted, reason) = if picked.is_empty() {
                (false, "NoMatchingParent")
            } else if refusals.iter().any(Option::is_none) {
                (true, "Accepted")
            } else {
                (
                    false,
                    refusals
                        .iter()
                        .flatten()
                        .next()
                        .copied()
                        .unwrap_or("NotAllowedByListeners"),
                )
            };
            if accepted {
                for (listener, refused) in picked.iter().zip(&refusals) {
                    if refused.is_none() {
                        *attached
                            .entry((
                                gateway_ns.to_owned(),
                                gateway_name.to_owned(),
                                text(listener, "/name").to_owned(),
                            ))
                            .or_default() += 1;
                    }
                }
            }
            let missing: Vec<&str> = route
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|r| r["backendRefs"].as_array().into_iter().flatten())
                .filter(|b| {
                    b["group"].as_str().unwrap_or("").is_empty() && b["kind"].as_str().unwrap_or("Service") == "Service"
                })
                .filter(|b| !service_exists(b["namespace"].as_str().unwrap_or(route_ns), text(b, "/name")))
                .filter_map(|b| b["name"].as_str())
                .collect();
            let mut parent_ref = parent.clone();
            parent_ref["group"] = json!(GROUP);
            parent_ref["kind"] = json!("Gateway");
            let old = old_parents
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["parentRef"]["name"] == gateway_name && p["controllerName"] == CONTROLLER_NAME)
                .map(|p| p["conditions"].clone())
                .unwrap_or(Value::Null);
            let resolved = missing.is_empty();
            parents.push(json!({
                "parentRef": parent_ref,
                "controllerName": CONTROLLER_NAME,
                "conditions": [
                    condition(&old, "Accepted", accepted, reason, "", &generation),
                    condition(&old, "ResolvedRefs", resolved,
                              if resolved { "ResolvedRefs" } else { "BackendNotFound" },
                              &if resolved { String::new() } else { format!("no Service {}", missing.join(", ")) },
                              &generation),
                ],
            }));
        }
        // Other controllers' entries stay as they are, before ours.
        let mut all: Vec<Value> = old_parents
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["controllerName"] != CONTROLLER_NAME)
            .cloned()
            .collect();
        all.extend(parents);
        let status = json!({"parents": all});
        if route.get("status").unwrap_or(&json!({"parents": []})) != &status {
            let plural = ROUTES
                .iter()
                .find(|(_, k)| k == kind)
                .map(|(p, _)| *p)
                .unwrap_or("httproutes");
            written += write_status(store, plural, route, status);
        }
    }
    for gateway in &gateways {
        let ns = text(gateway, "/metadata/namespace");
        let name = text(gateway, "/metadata/name");
        let generation = gateway.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
        let old = gateway.pointer("/status/conditions").cloned().unwrap_or(Value::Null);
        let old_listeners = gateway.pointer("/status/listeners").cloned().unwrap_or(json!([]));
        let listeners: Vec<Value> = gateway
            .pointer("/spec/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|l| {
                let listener_name = text(l, "/name");
                let old = old_listeners
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|o| o["name"] == listener_name)
                    .map(|o| o["conditions"].clone())
                    .unwrap_or(Value::Null);
                let kinds: Vec<Value> = supported_kinds(l).iter().map(|k| json!({"group": GROUP, "kind": k})).collect();
                let supported = !kinds.is_empty();
                json!({
                    "name": listener_name,
                    "supportedKinds": kinds,
                    "attachedRoutes": attached.get(&(ns.to_owned(), name.to_owned(), listener_name.to_owned())).copied().unwrap_or(0),
                    "conditions": [
                        condition(&old, "Accepted", supported, if supported { "Accepted" } else { "UnsupportedProtocol" }, "", &generation),
                        condition(&old, "Programmed", supported, if supported { "Programmed" } else { "Invalid" }, "", &generation),
                        condition(&old, "ResolvedRefs", true, "ResolvedRefs", "", &generation),
                        condition(&old, "Conflicted", false, "NoConflicts", "", &generation),
                    ],
                })
            })
            .collect();
        let status = json!({
            "addresses": addresses.iter().map(|(t, v)| json!({"type": t, "value": v})).collect::<Vec<_>>(),
            "conditions": [
                condition(&old, "Accepted", true, "Accepted", "", &generation),
                condition(&old, "Programmed", !addresses.is_empty(),
                          if addresses.is_empty() { "AddressNotAssigned" } else { "Programmed" }, "", &generation),
            ],
            "listeners": listeners,
        });
        if gateway.get("status") != Some(&status) {
            written += write_status(store, "gateways", gateway, status);
        }
    }
    written
}

fn write_status(store: &Store, plural: &str, object: &Value, status: Value) -> usize {
    let Some(info) = store.resource(GROUP, "v1", plural) else {
        return 0;
    };
    let ns = text(object, "/metadata/namespace");
    let name = text(object, "/metadata/name");
    // The whole status replaced (lists are atomic in a merge patch).
    let patch = json!({"status": status});
    match store.patch(
        &info,
        Some(ns),
        name,
        PatchKind::Merge,
        patch,
        Some("gateway-controller"),
        Target::Status,
    ) {
        Ok(_) => 1,
        Err(e) => {
            tracing::warn!(object = %format!("{plural} {ns}/{name}"), error = %e, "stand-in Gateway controller: status not written");
            0
        }
    }
}

/// Runs [`reconcile`] on `store` every `period` until the task is dropped.
pub async fn run(store: std::sync::Arc<Store>, addresses: Vec<(String, String)>, period: std::time::Duration) {
    loop {
        reconcile(&store, &addresses);
        tokio::time::sleep(period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of gateway-api's `examples/standard/basic-http.yaml`
    /// without status gets the status a controller writes; a route
    /// naming a hostname no listener has is `NoMatchingListenerHostname`.
    /// The example table of hostnames.md.
    #[test]
    fn hostnames_intersect_as_the_concept_doc_says() {
        for (listener, route, want) in [
            ("www.example.com", "www.example.com", true),
            ("*.example.com", "www.example.com", true),
            ("*.example.com", "sub.domain.example.com", true),
            ("www.example.com", "*.example.com", true),
            ("*.example.com", "*.example.com", true),
            ("*.com", "*.example.com", true),
            ("*", "www.example.com", true),
            ("*.example.com", "example.com", false),
            ("www.example.com", "web.example.com", false),
            ("*.example.com", "www.badexample.com", false),
        ] {
            assert_eq!(intersects(Some(listener), Some(route)), want, "{listener} ∩ {route}");
        }
        assert!(intersects(None, Some("a.example.com")) && intersects(None, None));
    }

    #[test]
    fn writes_the_status_a_gateway_controller_writes() {
        let store = Store::new(100);
        fedns_kube_emulator::seed_text(&store, "crds", &crate::upstream_crds::gateway_api_yaml()).unwrap();
        let example = crate::upstream_crds::examples::GATEWAY_API;
        // The spec only: status is what the stand-in writes.
        let spec_only: String = example
            .split("\n---\n")
            .map(|d| d.split("\nstatus:\n").next().unwrap_or(d).to_owned())
            .collect::<Vec<_>>()
            .join("\n---\n");
        let mut text = spec_only
            .replace("example.net/gateway-controller", CONTROLLER_NAME)
            .replace("\"example.com\"", "\"shop.example.com\"")
            .replace("    port: 80", "    port: 80\n    hostname: \"*.example.com\"");
        text.push_str(
            "\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: stray, namespace: default}\n\
             spec: {parentRefs: [{name: example-gateway}], hostnames: [x.example.org], rules: [{backendRefs: [{name: gone, port: 80}]}]}\n",
        );
        fedns_kube_emulator::seed_text(&store, "objects", &text).unwrap();
        let addresses = vec![("IPAddress".to_owned(), "127.0.10.1".to_owned())];
        assert!(reconcile(&store, &addresses) >= 3);
        // Nothing changes the second time.
        assert_eq!(reconcile(&store, &addresses), 0);
        let gateways = store.resource(GROUP, "v1", "gateways").unwrap();
        let gateway = store.get(&gateways, Some("default"), "example-gateway").unwrap();
        assert_eq!(gateway["status"]["addresses"][0]["value"], "127.0.10.1");
        assert_eq!(gateway["status"]["conditions"][1]["type"], "Programmed");
        assert_eq!(gateway["status"]["listeners"][0]["attachedRoutes"], 1);
        let routes = store.resource(GROUP, "v1", "httproutes").unwrap();
        let route = store.get(&routes, Some("default"), "example-route").unwrap();
        let conditions = &route["status"]["parents"][0]["conditions"];
        assert_eq!(
            (conditions[0]["status"].as_str(), conditions[0]["reason"].as_str()),
            (Some("True"), Some("Accepted"))
        );
        // example-svc does not exist in this store.
        assert_eq!(conditions[1]["reason"], "BackendNotFound");
        let stray = store.get(&routes, Some("default"), "stray").unwrap();
        assert_eq!(
            stray["status"]["parents"][0]["conditions"][0]["reason"],
            "NoMatchingListenerHostname"
        );
    }

    /// A Gateway of another controller's class is left alone, and a
    /// route's entries written by another controller are kept beside this
    /// controller's own.
    #[test]
    fn other_classes_and_other_controllers_entries_are_left_alone() {
        let store = Store::new(100);
        fedns_kube_emulator::seed_text(&store, "crds", &crate::upstream_crds::gateway_api_yaml()).unwrap();
        let objects = format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {{name: ours}}\nspec: {{controllerName: {CONTROLLER_NAME}}}\n---\n\
             apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {{name: theirs}}\nspec: {{controllerName: example.net/other}}\n---\n\
             apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: mine, namespace: default}}\n\
             spec: {{gatewayClassName: ours, listeners: [{{name: http, protocol: HTTP, port: 80}}]}}\n---\n\
             apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: other, namespace: default}}\n\
             spec: {{gatewayClassName: theirs, listeners: [{{name: http, protocol: HTTP, port: 80}}]}}\n---\n\
             apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: both, namespace: default}}\n\
             spec: {{parentRefs: [{{name: mine}}, {{name: other}}], hostnames: [a.example.com]}}\n\
             status: {{parents: [{{parentRef: {{name: other}}, controllerName: example.net/other, conditions: \
             [{{type: Accepted, status: \"True\", reason: Accepted, message: \"\", lastTransitionTime: \"2026-11-26T00:00:00Z\"}}]}}]}}\n"
        );
        fedns_kube_emulator::seed_text(&store, "objects", &objects).unwrap();
        reconcile(&store, &[("IPAddress".to_owned(), "127.0.10.1".to_owned())]);
        let gateways = store.resource(GROUP, "v1", "gateways").unwrap();
        let other = store.get(&gateways, Some("default"), "other").unwrap();
        assert!(other.get("status").is_none_or(|s| s["addresses"].is_null()), "{other}");
        let mine = store.get(&gateways, Some("default"), "mine").unwrap();
        assert_eq!(mine["status"]["addresses"][0]["value"], "127.0.10.1");
        let routes = store.resource(GROUP, "v1", "httproutes").unwrap();
        let route = store.get(&routes, Some("default"), "both").unwrap();
        let entries: Vec<(&str, &str)> = route["status"]["parents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (text(p, "/parentRef/name"), text(p, "/controllerName")))
            .collect();
        assert_eq!(entries, [("other", "example.net/other"), ("mine", CONTROLLER_NAME)]);
    }
}
