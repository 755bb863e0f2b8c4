//! The compact facts fedns reads of a member's Gateway API objects:
//! Gateways and ListenerSets with their listeners, GatewayClasses, routes
//! of every kind with their parent refs and status entries, the
//! conditions they carry, and the `multiclusterdns.fedns.io/` annotations
//! automatic records read. Field names and defaults follow
//! kubernetes-sigs/gateway-api v1.6.1 (`apis/v1/gateway_types.go`,
//! `apis/v1/shared_types.go`, `apis/v1/httproute_types.go`).

use std::sync::Arc;

use kube::api::DynamicObject;
use serde::Deserialize;

/// The Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// `GatewayStatusAddress.type` default (`apis/v1/gateway_types.go`).
const IP_ADDRESS: &str = "IPAddress";
/// A DNS name to reach the Gateway (`apis/v1/shared_types.go`).
const HOSTNAME_ADDRESS: &str = "Hostname";

/// A condition's status: `Some(true)` for `"True"`, `Some(false)` for
/// `"False"`, `None` when absent or `Unknown`.
fn condition(conditions: &[Condition], type_: &str) -> Option<bool> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .and_then(|c| match c.status.as_str() {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        })
}

#[derive(Debug, Default, Deserialize)]
struct Condition {
    #[serde(rename = "type", default)]
    type_: String,
    #[serde(default)]
    status: String,
}

// ---- Gateways ----

/// One listener of a Gateway (`spec.listeners[]`) with its status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenerFacts {
    /// `name` (the `sectionName` routes use).
    pub name: Box<str>,
    /// `hostname` (unset: any).
    pub hostname: Option<Box<str>>,
    /// `port`.
    pub port: i32,
    /// `protocol` (`HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP`, or a domain-prefixed one).
    pub protocol: Box<str>,
    /// `allowedRoutes.namespaces.from` (default `Same`).
    pub from: Box<str>,
    /// `allowedRoutes.kinds[]` as (group, kind); empty: the protocol's kinds.
    pub kinds: Box<[(Box<str>, Box<str>)]>,
    /// `status.listeners[name]` has `Programmed=True`.
    pub programmed: bool,
    /// `status.listeners[name]` has `Conflicted=True`.
    pub conflicted: bool,
}

/// What fedns reads of a member's Gateway, or of a ListenerSet
/// (`apis/v1/listenerset_types.go`: listeners of the same shape, attached
/// to the Gateway its `spec.parentRef` names, whose addresses they use).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayFacts {
    /// Its listeners.
    pub listeners: Box<[ListenerFacts]>,
    /// `status.addresses[]` as (type, value); type defaults to `IPAddress`
    /// (a ListenerSet has none of its own).
    pub addresses: Box<[(Box<str>, Box<str>)]>,
    /// The `Programmed` condition.
    pub programmed: Option<bool>,
    /// The `Accepted` condition.
    pub accepted: Option<bool>,
    /// A ListenerSet's `spec.parentRef`: its Gateway as (namespace, name)
    /// (namespace default: the ListenerSet's). `None` for a Gateway, or a
    /// parent of another kind.
    pub parent: Option<(Box<str>, Box<str>)>,
    /// A Gateway's `spec.gatewayClassName`.
    pub class: Option<Box<str>>,
    /// The controller of its GatewayClass, filled in by
    /// [`GatewayApi::parent`](super::GatewayApi::parent) (routes' status
    /// entries count only when written by it).
    pub controller: ClassController,
}

/// The controller of a Gateway's GatewayClass, as fedns could learn it
/// (`apis/v1/gatewayclass_types.go` `spec.controllerName`). Only the
/// `status.parents[]` entry whose `controllerName` is the class's
/// controller speaks for the Gateway (`RouteParentStatus.ControllerName`:
/// "the controller that wrote this status"); another controller's entry
/// for the same parent says nothing about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ClassController {
    /// Not looked up (facts as read from the object).
    #[default]
    Unknown,
    /// `spec.controllerName` of the Gateway's GatewayClass.
    Known(Box<str>),
    /// The member serves GatewayClasses, but not the one the Gateway names.
    NoClass(Box<str>),
    /// GatewayClasses are not readable in the member (not served, not yet
    /// listed, or forbidden): entries are taken as they are.
    Unreadable,
}

/// What fedns reads of a member's GatewayClass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassFacts {
    /// `spec.controllerName`.
    pub controller: Box<str>,
}

impl ClassFacts {
    /// The facts of a GatewayClass as JSON.
    pub fn of(object: &DynamicObject) -> Self {
        ClassFacts {
            controller: object
                .data
                .pointer("/spec/controllerName")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .into(),
        }
    }
}

impl GatewayFacts {
    /// The facts of `object` (a Gateway or a ListenerSet as JSON); what
    /// does not parse is left at its default (an unparsable object serves
    /// nothing).
    pub fn of(object: &DynamicObject) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Gateway {
            spec: Spec,
            status: Status,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Spec {
            listeners: Vec<Listener>,
            parent_ref: Option<ParentGateway>,
            gateway_class_name: Option<String>,
        }
        /// `ParentGatewayReference` (`apis/v1/shared_types.go`).
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct ParentGateway {
            group: Option<String>,
            kind: Option<String>,
            name: String,
            namespace: Option<String>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Listener {
            name: String,
            hostname: Option<String>,
            port: i32,
            protocol: String,
            allowed_routes: Option<AllowedRoutes>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct AllowedRoutes {
            namespaces: Option<Namespaces>,
            kinds: Vec<GroupKind>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Namespaces {
            from: Option<String>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct GroupKind {
            group: Option<String>,
            kind: String,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Status {
            addresses: Vec<Address>,
            conditions: Vec<Condition>,
            listeners: Vec<ListenerStatus>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Address {
            #[serde(rename = "type")]
            type_: Option<String>,
            value: String,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct ListenerStatus {
            name: String,
            conditions: Vec<Condition>,
        }
        let gateway: Gateway = serde_json::from_value(object.data.clone()).unwrap_or_default();
        let listeners = gateway
            .spec
            .listeners
            .into_iter()
            .map(|l| {
                let status = gateway.status.listeners.iter().find(|s| s.name == l.name);
                let allowed = l.allowed_routes.unwrap_or_default();
                ListenerFacts {
                    programmed: status.and_then(|s| condition(&s.conditions, "Programmed")) == Some(true),
                    conflicted: status.and_then(|s| condition(&s.conditions, "Conflicted")) == Some(true),
                    name: l.name.into(),
                    hostname: l.hostname.map(Into::into),
                    port: l.port,
                    protocol: l.protocol.into(),
                    from: allowed
                        .namespaces
                        .and_then(|n| n.from)
                        .unwrap_or_else(|| "Same".into())
                        .into(),
                    kinds: allowed
                        .kinds
                        .into_iter()
                        .map(|k| (k.group.unwrap_or_else(|| GATEWAY_GROUP.into()).into(), k.kind.into()))
                        .collect(),
                }
            })
            .collect();
        GatewayFacts {
            listeners,
            addresses: gateway
                .status
                .addresses
                .into_iter()
                .map(|a| (a.type_.unwrap_or_else(|| IP_ADDRESS.into()).into(), a.value.into()))
                .collect(),
            programmed: condition(&gateway.status.conditions, "Programmed"),
            accepted: condition(&gateway.status.conditions, "Accepted"),
            parent: gateway
                .spec
                .parent_ref
                .filter(|p| {
                    p.group.as_deref().unwrap_or(GATEWAY_GROUP) == GATEWAY_GROUP
                        && p.kind.as_deref().unwrap_or("Gateway") == "Gateway"
                })
                .map(|p| {
                    let namespace = p
                        .namespace
                        .or_else(|| object.metadata.namespace.clone())
                        .unwrap_or_default();
                    (namespace.into(), p.name.into())
                }),
            class: gateway.spec.gateway_class_name.map(Into::into),
            controller: ClassController::Unknown,
        }
    }

    /// Its addresses as core/v1 `LoadBalancerIngress` points (`IPAddress`
    /// → `ip`, `Hostname` → `hostname`), and a line for each address of
    /// another type, which fedns cannot publish (`NamedAddress`, domain-
    /// prefixed types: implementation-specific).
    pub fn load_balancer_points(&self) -> (Vec<k8s_openapi::api::core::v1::LoadBalancerIngress>, Vec<String>) {
        let mut points = Vec::new();
        let mut skipped = Vec::new();
        for (type_, value) in self.addresses.iter() {
            match &**type_ {
                IP_ADDRESS => match value.parse::<std::net::IpAddr>() {
                    Ok(ip) => points.push(k8s_openapi::api::core::v1::LoadBalancerIngress {
                        ip: Some(ip.to_string()),
                        ..Default::default()
                    }),
                    Err(_) => skipped.push(format!("address {value:?} of type IPAddress is no IP address")),
                },
                HOSTNAME_ADDRESS => points.push(k8s_openapi::api::core::v1::LoadBalancerIngress {
                    hostname: Some(value.to_string()),
                    ..Default::default()
                }),
                other => skipped.push(format!("address {value:?} of type {other} cannot be published")),
            }
        }
        (points, skipped)
    }
}

// ---- routes ----

/// A `parentRef` (`apis/v1/shared_types.go` `ParentReference`), defaults
/// applied except `namespace` (the route's, filled by the reader).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentRef {
    /// `group` (default `gateway.networking.k8s.io`).
    pub group: Box<str>,
    /// `kind` (default `Gateway`).
    pub kind: Box<str>,
    /// `namespace` (default: the route's).
    pub namespace: Box<str>,
    /// `name`.
    pub name: Box<str>,
    /// `sectionName` (a listener's name).
    pub section_name: Option<Box<str>>,
    /// `port`.
    pub port: Option<i32>,
}

impl ParentRef {
    /// Names the same parent object (group, kind, namespace, name).
    pub fn same_object(&self, other: &ParentRef) -> bool {
        (&self.group, &self.kind, &self.namespace, &self.name)
            == (&other.group, &other.kind, &other.namespace, &other.name)
    }
}

/// One `status.parents[]` entry of a route.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParentStatus {
    /// `parentRef`.
    pub parent: ParentRef,
    /// `controllerName`: the controller that wrote the entry.
    pub controller: Box<str>,
    /// `Accepted` condition.
    pub accepted: Option<bool>,
    /// `ResolvedRefs` condition.
    pub resolved_refs: Option<bool>,
}

/// What fedns reads of a member's route (any kind).
///
/// Its lists and strings are shared (`Arc`), so a copy costs a few
/// reference counts: the cache hands out copies
/// ([`FactCache::get`](crate::members::cache::FactCache::get)), and every
/// route's reconcile takes one per member. A Gateway change reaching 2,000
/// routes of 50 members copied them whole about 200,000 times (a preview
/// and a full reconcile per route): a third of the previews' time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteFacts {
    /// `spec.hostnames` (empty for TCPRoute and UDPRoute).
    pub hostnames: Arc<[Box<str>]>,
    /// `spec.parentRefs`.
    pub parent_refs: Arc<[ParentRef]>,
    /// `status.parents`.
    pub parents: Arc<[ParentStatus]>,
    /// Backend Services (`rules[].backendRefs[]` of group `""` and kind
    /// `Service`) as (namespace, name), sorted, each once.
    pub backends: Arc<[(Box<str>, Box<str>)]>,
    /// The first `rules[].matches[].path` of type `PathPrefix` or `Exact`
    /// (HTTPRoute): a health check's default path.
    pub first_path: Option<Arc<str>>,
    /// `metadata.uid` (an automatic record's owner reference).
    pub uid: Option<Arc<str>>,
    /// The `multiclusterdns.fedns.io/` annotations (automatic records):
    /// (key, value), sorted by key.
    pub fedns_annotations: Arc<[(Box<str>, Box<str>)]>,
}

impl RouteFacts {
    /// The facts of `object` (a route of any kind, as JSON).
    pub fn of(object: &DynamicObject) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Route {
            spec: Spec,
            status: Status,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Spec {
            hostnames: Vec<String>,
            parent_refs: Vec<Parent>,
            rules: Vec<Rule>,
        }
        #[derive(Deserialize, Default, Clone)]
        #[serde(default, rename_all = "camelCase")]
        struct Parent {
            group: Option<String>,
            kind: Option<String>,
            namespace: Option<String>,
            name: String,
            section_name: Option<String>,
            port: Option<i32>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Rule {
            backend_refs: Vec<Backend>,
            matches: Vec<Match>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Backend {
            group: Option<String>,
            kind: Option<String>,
            namespace: Option<String>,
            name: String,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Match {
            path: Option<PathMatch>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct PathMatch {
            #[serde(rename = "type")]
            type_: Option<String>,
            value: Option<String>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Status {
            parents: Vec<ParentEntry>,
        }
        #[derive(Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct ParentEntry {
            parent_ref: Parent,
            controller_name: String,
            conditions: Vec<Condition>,
        }
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        let route: Route = serde_json::from_value(object.data.clone()).unwrap_or_default();
        let parent = |p: Parent| ParentRef {
            group: p.group.unwrap_or_else(|| GATEWAY_GROUP.into()).into(),
            kind: p.kind.unwrap_or_else(|| "Gateway".into()).into(),
            namespace: p.namespace.unwrap_or_else(|| namespace.clone()).into(),
            name: p.name.into(),
            section_name: p.section_name.map(Into::into),
            port: p.port,
        };
        let mut backends: Vec<(Box<str>, Box<str>)> = route
            .spec
            .rules
            .iter()
            .flat_map(|r| r.backend_refs.iter())
            .filter(|b| {
                b.group.as_deref().unwrap_or("").is_empty() && b.kind.as_deref().unwrap_or("Service") == "Service"
            })
            .map(|b| {
                (
                    b.namespace.clone().unwrap_or_else(|| namespace.clone()).into(),
                    b.name.clone().into(),
                )
            })
            .collect();
        backends.sort();
        backends.dedup();
        let first_path = route
            .spec
            .rules
            .iter()
            .flat_map(|r| r.matches.iter())
            .filter_map(|m| m.path.as_ref())
            .find(|p| matches!(p.type_.as_deref().unwrap_or("PathPrefix"), "PathPrefix" | "Exact"))
            .map(|p| p.value.clone().unwrap_or_else(|| "/".into()).into());
        RouteFacts {
            hostnames: route.spec.hostnames.into_iter().map(Into::into).collect(),
            parent_refs: route.spec.parent_refs.into_iter().map(parent).collect(),
            parents: route
                .status
                .parents
                .into_iter()
                .map(|p| ParentStatus {
                    accepted: condition(&p.conditions, "Accepted"),
                    resolved_refs: condition(&p.conditions, "ResolvedRefs"),
                    controller: p.controller_name.into(),
                    parent: parent(p.parent_ref),
                })
                .collect(),
            backends: backends.into(),
            first_path,
            uid: object.metadata.uid.as_deref().map(Into::into),
            fedns_annotations: fedns_annotations(object.metadata.annotations.iter().flatten()).into(),
        }
    }

    /// The facts of a kubefed federated route (`types.kubefed.io/v1beta1`
    /// `Federated<Kind>`, as `kubefedctl enable` generates it): its
    /// `spec.template` is the route; the fedns annotations are read from
    /// the federated object and, where absent there, from the template.
    pub fn of_federated(object: &DynamicObject) -> Self {
        let template = object.data.pointer("/spec/template").cloned().unwrap_or_default();
        let inner = DynamicObject {
            types: None,
            metadata: kube::api::ObjectMeta {
                namespace: object.metadata.namespace.clone(),
                name: object.metadata.name.clone(),
                ..Default::default()
            },
            data: template.clone(),
        };
        let mut facts = RouteFacts::of(&inner);
        let from_template: std::collections::BTreeMap<String, String> =
            serde_json::from_value(template.pointer("/metadata/annotations").cloned().unwrap_or_default())
                .unwrap_or_default();
        let mut annotations: std::collections::BTreeMap<String, String> = from_template;
        annotations.extend(
            object
                .metadata
                .annotations
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        facts.fedns_annotations = fedns_annotations(annotations.iter()).into();
        facts.uid = object.metadata.uid.as_deref().map(Into::into);
        // A template has no status: what it says of parents is the members'.
        facts.parents = Arc::new([]);
        facts
    }

    /// Names Gateway `namespace/name` among its parents (spec or status).
    pub fn names_gateway(&self, namespace: &str, name: &str) -> bool {
        self.names_parent("Gateway", namespace, name)
    }

    /// Names parent `kind` (`Gateway`, `ListenerSet`) `namespace/name`
    /// among its parents (spec or status).
    pub fn names_parent(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.parent_refs
            .iter()
            .chain(self.parents.iter().map(|p| &p.parent))
            .any(|p| &*p.kind == kind && &*p.namespace == namespace && &*p.name == name)
    }

    /// Routes to Service `namespace/name`.
    pub fn routes_to(&self, namespace: &str, name: &str) -> bool {
        self.backends.iter().any(|(ns, n)| &**ns == namespace && &**n == name)
    }
}

/// The kind of a set of listeners attached to a Gateway.
pub const LISTENER_SET: &str = "ListenerSet";

/// The prefix of the annotations automatic records read.
const FEDNS_ANNOTATION_PREFIX: &str = "multiclusterdns.fedns.io/";

fn fedns_annotations<'a>(all: impl Iterator<Item = (&'a String, &'a String)>) -> Box<[(Box<str>, Box<str>)]> {
    let mut kept: Vec<(Box<str>, Box<str>)> = all
        .filter(|(k, _)| k.starts_with(FEDNS_ANNOTATION_PREFIX))
        .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
        .collect();
    kept.sort();
    kept.into_boxed_slice()
}
