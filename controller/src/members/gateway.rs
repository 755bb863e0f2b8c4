//! A member's Gateway API objects (`gateway.networking.k8s.io`, `v1`, or
//! the version an older gateway-api release serves, see [`versions`]):
//! compact facts of its Gateways and routes, as `RouteDNSRecord`s read
//! them, and the watches that keep them. Field names and defaults follow
//! kubernetes-sigs/gateway-api v1.6.1 (`apis/v1/gateway_types.go`,
//! `apis/v1/shared_types.go`, `apis/v1/httproute_types.go`).
//!
//! Optional kinds: a member without the Gateway API CRDs (or without one
//! route kind) answers 404; the kind is then marked not served, logged
//! once, and listed again every [`NOT_SERVED_RETRY`] (no error storm).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fedns_api::RouteKind;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::{watcher, WatchStreamExt};
use serde::Deserialize;
use tokio::task::JoinHandle;

use super::cache::{FactCache, Relist};

/// The Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// How often a kind the member does not serve (404) is listed again.
pub const NOT_SERVED_RETRY: Duration = Duration::from_secs(10);

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
    /// [`GatewayApi::parent`] (routes' status entries count only when
    /// written by it).
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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteFacts {
    /// `spec.hostnames` (empty for TCPRoute and UDPRoute).
    pub hostnames: Box<[Box<str>]>,
    /// `spec.parentRefs`.
    pub parent_refs: Box<[ParentRef]>,
    /// `status.parents`.
    pub parents: Box<[ParentStatus]>,
    /// Backend Services (`rules[].backendRefs[]` of group `""` and kind
    /// `Service`) as (namespace, name), sorted, each once.
    pub backends: Box<[(Box<str>, Box<str>)]>,
    /// The first `rules[].matches[].path` of type `PathPrefix` or `Exact`
    /// (HTTPRoute): a health check's default path.
    pub first_path: Option<Box<str>>,
    /// `metadata.uid` (an automatic record's owner reference).
    pub uid: Option<Box<str>>,
    /// The `multiclusterdns.fedns.io/` annotations (automatic records):
    /// (key, value), sorted by key.
    pub fedns_annotations: Box<[(Box<str>, Box<str>)]>,
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
            backends: backends.into_boxed_slice(),
            first_path,
            uid: object.metadata.uid.as_deref().map(Into::into),
            fedns_annotations: fedns_annotations(object.metadata.annotations.iter().flatten()),
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
        facts.fedns_annotations = fedns_annotations(annotations.iter());
        facts.uid = object.metadata.uid.as_deref().map(Into::into);
        // A template has no status: what it says of parents is the members'.
        facts.parents = Box::new([]);
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

// ---- caches and watches ----

/// Whether a member serves a Gateway API kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Not listed yet.
    Unknown,
    /// Listed: the caches hold the member's objects.
    Yes,
    /// The member answered 404: no such kind (no CRD installed).
    No,
    /// The member answered 403: fedns's identity may not list the kind
    /// (its RBAC lacks `gateway.networking.k8s.io`). Counts as listed, so
    /// nothing waits for it.
    Forbidden,
}

impl Served {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => Served::Yes,
            2 => Served::No,
            3 => Served::Forbidden,
            _ => Served::Unknown,
        }
    }
}

/// One member's Gateway API caches: its Gateways and its routes by kind,
/// and whether each kind is served.
#[derive(Debug, Default)]
pub struct GatewayApi {
    /// Gateways.
    pub gateways: Arc<FactCache<GatewayFacts>>,
    /// Routes, one cache per kind ([`RouteKind::ALL`] order).
    pub routes: [Arc<FactCache<RouteFacts>>; 5],
    /// ListenerSets (standard since gateway-api v1.6.0).
    pub listener_sets: Arc<FactCache<GatewayFacts>>,
    /// GatewayClasses (cluster-scoped: namespace "").
    pub classes: Arc<FactCache<ClassFacts>>,
    /// Served state of Gateways, then each route kind, then ListenerSets,
    /// then GatewayClasses (as [`Served`]).
    served: [Arc<AtomicU8>; 8],
}

impl GatewayApi {
    /// The cache of `kind`'s routes.
    pub fn routes(&self, kind: RouteKind) -> &FactCache<RouteFacts> {
        &self.routes[kind_index(kind)]
    }

    /// Whether the member serves Gateways.
    pub fn gateways_served(&self) -> Served {
        Served::from_u8(self.served[0].load(Ordering::Relaxed))
    }

    /// Whether the member serves `kind`.
    pub fn routes_served(&self, kind: RouteKind) -> Served {
        Served::from_u8(self.served[1 + kind_index(kind)].load(Ordering::Relaxed))
    }

    /// The parent a route's `parentRef` names, as the Gateway its routes
    /// attach to: a Gateway's facts; for a ListenerSet, its listeners with
    /// its Gateway's addresses (a ListenerSet not `Accepted=True` by its
    /// Gateway, or one whose Gateway says `Programmed=False`, serves
    /// nothing).
    ///
    /// # Errors
    /// Why there is no such parent to serve through, for the `Attached`
    /// condition.
    pub fn parent(&self, kind: &str, namespace: &str, name: &str) -> Result<GatewayFacts, String> {
        match kind {
            "Gateway" => self
                .gateways
                .get(namespace, name)
                .map(|mut gateway| {
                    gateway.controller = self.controller_of(gateway.class.as_deref());
                    gateway
                })
                .ok_or_else(|| "not found in the member".to_owned()),
            LISTENER_SET => {
                let set = self.listener_sets.get(namespace, name).ok_or_else(|| {
                    match Served::from_u8(self.served[6].load(Ordering::Relaxed)) {
                        Served::Yes => "not found in the member".to_owned(),
                        _ => "not found: the member serves no ListenerSet".to_owned(),
                    }
                })?;
                if set.accepted != Some(true) {
                    return Err(
                        "not Accepted by its Gateway (the Gateway's allowedListeners, or its parentRef)".into(),
                    );
                }
                let Some((gw_ns, gw_name)) = set.parent.clone() else {
                    return Err("its spec.parentRef names no Gateway".into());
                };
                let gateway = self
                    .gateways
                    .get(&gw_ns, &gw_name)
                    .ok_or_else(|| format!("its Gateway {gw_ns}/{gw_name} is not found in the member"))?;
                Ok(GatewayFacts {
                    listeners: set.listeners,
                    addresses: gateway.addresses,
                    programmed: match (gateway.programmed, set.programmed) {
                        (Some(false), _) | (_, Some(false)) => Some(false),
                        (a, b) => a.or(b),
                    },
                    accepted: set.accepted,
                    parent: set.parent,
                    controller: self.controller_of(gateway.class.as_deref()),
                    class: gateway.class,
                })
            }
            _ => Err("only Gateway and ListenerSet parents are followed".into()),
        }
    }

    /// The controller of GatewayClass `class`, as far as the member lets
    /// fedns know it.
    fn controller_of(&self, class: Option<&str>) -> ClassController {
        match Served::from_u8(self.served[7].load(Ordering::Relaxed)) {
            Served::Yes => {
                let class = class.unwrap_or_default();
                match self.classes.get("", class) {
                    Some(facts) => ClassController::Known(facts.controller),
                    None => ClassController::NoClass(class.into()),
                }
            }
            _ => ClassController::Unreadable,
        }
    }

    /// Whether every route kind has been listed or found not served.
    pub fn routes_listed(&self) -> bool {
        RouteKind::ALL
            .into_iter()
            .all(|k| self.routes_served(k) != Served::Unknown)
    }
}

fn kind_index(kind: RouteKind) -> usize {
    RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

/// The versions of a kind fedns reads, most preferred first: `v1`, then
/// what earlier gateway-api releases served (checked against the CRDs of
/// v1.0.0 to v1.6.1): Gateway and HTTPRoute `v1beta1` (before v1.0),
/// GRPCRoute `v1alpha2` (v1.0 experimental), TLSRoute `v1alpha3` (v1.3–v1.4
/// experimental) and `v1alpha2`, TCPRoute and UDPRoute `v1alpha2`
/// (experimental until v1.6). Every field fedns reads has the same name
/// and meaning in each.
fn versions(kind: &str) -> &'static [&'static str] {
    match kind {
        "Gateway" | "HTTPRoute" => &["v1", "v1beta1"],
        // Before v1.6 only the experimental XListenerSet
        // (gateway.networking.x-k8s.io), not read.
        "ListenerSet" => &["v1"],
        "GatewayClass" => &["v1", "v1beta1"],
        "GRPCRoute" | "TCPRoute" | "UDPRoute" => &["v1", "v1alpha2"],
        "TLSRoute" => &["v1", "v1alpha3", "v1alpha2"],
        _ => &["v1"],
    }
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `kind`'s API in each version of [`versions`].
fn apis_of(client: &kube::Client, kind: &str, plural: &str) -> Vec<Api<DynamicObject>> {
    versions(kind)
        .iter()
        .map(|v| Api::all_with(client.clone(), &resource(GATEWAY_GROUP, v, kind, plural)))
        .collect()
}

/// Starts the watches of a member's Gateways and routes. `route_changed`
/// is called with (kind, namespace, name) of every route that changed or
/// may serve differently (its Gateway changed); `kind_state_changed` when
/// a kind turns served or not served.
pub(super) fn spawn_watches(
    member: &str,
    client: &kube::Client,
    caches: &Arc<GatewayApi>,
    route_changed: impl Fn(RouteKind, String, String) + Clone + Send + Sync + 'static,
    kind_state_changed: impl Fn() + Clone + Send + Sync + 'static,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    {
        let caches_for_gateways = caches.clone();
        let changed = route_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, "Gateway", "gateways"),
            caches.gateways.clone(),
            GatewayFacts::of,
            caches.served[0].clone(),
            kind_state_changed.clone(),
            move |ns: String, name: String| routes_through_gateway(&caches_for_gateways, &ns, &name, &changed),
        ));
    }
    {
        // A GatewayClass's change (its controller) reaches every route
        // through a Gateway of that class.
        let caches_for_classes = caches.clone();
        let changed = route_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, "GatewayClass", "gatewayclasses"),
            caches.classes.clone(),
            ClassFacts::of,
            caches.served[7].clone(),
            kind_state_changed.clone(),
            move |_: String, class: String| {
                for (ns, name) in caches_for_classes
                    .gateways
                    .matching(|g| g.class.as_deref() == Some(class.as_str()))
                {
                    routes_through_gateway(&caches_for_classes, &ns, &name, &changed);
                }
            },
        ));
    }
    {
        let caches_for_sets = caches.clone();
        let changed = route_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, LISTENER_SET, "listenersets"),
            caches.listener_sets.clone(),
            GatewayFacts::of,
            caches.served[6].clone(),
            kind_state_changed.clone(),
            move |ns: String, name: String| {
                for kind in RouteKind::ALL {
                    for (route_ns, route) in caches_for_sets
                        .routes(kind)
                        .matching(|f| f.names_parent(LISTENER_SET, &ns, &name))
                    {
                        changed(kind, route_ns, route);
                    }
                }
            },
        ));
    }
    for (i, kind) in RouteKind::ALL.into_iter().enumerate() {
        let changed = route_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, kind.as_str(), kind.plural()),
            caches.routes[i].clone(),
            RouteFacts::of,
            caches.served[1 + i].clone(),
            kind_state_changed.clone(),
            move |ns, name| changed(kind, ns, name),
        ));
    }
    tasks
}

/// Calls `changed` for every route that names Gateway `ns/name`, or one
/// of its ListenerSets: a change of the Gateway reaches them.
fn routes_through_gateway(caches: &GatewayApi, ns: &str, name: &str, changed: &impl Fn(RouteKind, String, String)) {
    let sets = caches
        .listener_sets
        .matching(|s| s.parent.as_ref().is_some_and(|(n, g)| **n == *ns && **g == *name));
    for kind in RouteKind::ALL {
        for (route_ns, route) in caches.routes(kind).matching(|f| {
            f.names_gateway(ns, name) || sets.iter().any(|(s_ns, s)| f.names_parent(LISTENER_SET, s_ns, s))
        }) {
            changed(kind, route_ns, route);
        }
    }
}

/// Starts watches of the route *templates* in a cluster that holds them
/// (the host, Karmada's control plane, Clusternet's parent) into
/// `caches.routes`, for automatic records: the routes of every kind, or
/// with `kubefed` kubefed's federated routes (`types.kubefed.io/v1beta1`
/// `FederatedHTTPRoute` etc., as `kubefedctl enable` names them), read by
/// [`RouteFacts::of_federated`]. `changed` is called on every change.
pub fn spawn_route_templates(
    label: &str,
    client: &kube::Client,
    caches: &Arc<GatewayApi>,
    kubefed: bool,
    changed: impl Fn() + Clone + Send + Sync + 'static,
) -> Vec<JoinHandle<()>> {
    RouteKind::ALL
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            let apis = if kubefed {
                let federated = resource(
                    KUBEFED_TYPES_GROUP,
                    "v1beta1",
                    &format!("Federated{}", kind.as_str()),
                    &format!("federated{}", kind.plural()),
                );
                vec![Api::all_with(client.clone(), &federated)]
            } else {
                apis_of(client, kind.as_str(), kind.plural())
            };
            let facts: fn(&DynamicObject) -> RouteFacts = if kubefed {
                RouteFacts::of_federated
            } else {
                RouteFacts::of
            };
            let on_change = changed.clone();
            spawn_kind(
                label.to_owned(),
                apis,
                caches.routes[i].clone(),
                facts,
                caches.served[1 + i].clone(),
                changed.clone(),
                move |_, _| on_change(),
            )
        })
        .collect()
}

/// kubefed's group of federated types.
const KUBEFED_TYPES_GROUP: &str = "types.kubefed.io";

/// Watches one optional kind into `cache` with a reflector's semantics
/// (see [`FactCache::replace`]). `apis` are its versions, most preferred
/// first: a 404 on listing one tries the next; a 404 from every one marks
/// the kind not served (logged once) and starts again from the first
/// after [`NOT_SERVED_RETRY`].
fn spawn_kind<T: Clone + Send + Sync + 'static>(
    member: String,
    apis: Vec<Api<DynamicObject>>,
    cache: Arc<FactCache<T>>,
    facts: fn(&DynamicObject) -> T,
    served: Arc<AtomicU8>,
    state_changed: impl Fn() + Send + 'static,
    on_change: impl Fn(String, String) + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let set = |state: Served| {
            let value = match state {
                Served::Unknown => 0,
                Served::Yes => 1,
                Served::No => 2,
                Served::Forbidden => 3,
            };
            served.swap(value, Ordering::Relaxed) != value
        };
        let Some(first) = apis.first() else { return };
        let kind = first.resource_url().rsplit('/').next().unwrap_or_default().to_owned();
        let mut version = 0;
        let mut not_found = 0;
        let mut watching: Option<String> = None;
        loop {
            let api = apis[version].clone();
            let url = api.resource_url().to_owned();
            let stream = watcher(api, watcher::Config::default().page_size(100)).backoff(backoff());
            futures::pin_mut!(stream);
            let mut pending: Option<Relist<T>> = None;
            while let Some(item) = stream.next().await {
                let event = match item {
                    Ok(event) => event,
                    Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) if status.code == 404 => {
                        not_found += 1;
                        break;
                    }
                    Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) if status.code == 403 => {
                        if set(Served::Forbidden) {
                            tracing::warn!(member = %member, resource = %url, "fedns may not list {url} (403: {}); grant get/list/watch on it. Treated as none; asked again every {} s", status.message, NOT_SERVED_RETRY.as_secs());
                            for (ns, name) in cache.replace(Relist::default()) {
                                on_change(ns, name);
                            }
                            state_changed();
                        }
                        tokio::time::sleep(NOT_SERVED_RETRY).await;
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(member = %member, resource = %url, error = %e, "Gateway API watch failed; retrying");
                        continue;
                    }
                };
                let id = |o: &DynamicObject| {
                    (
                        o.metadata.namespace.clone().unwrap_or_default(),
                        o.metadata.name.clone().unwrap_or_default(),
                    )
                };
                match event {
                    watcher::Event::Init => pending = Some(Relist::default()),
                    watcher::Event::InitApply(object) => {
                        if let Some(p) = pending.as_mut() {
                            let (ns, name) = id(&object);
                            p.apply(&ns, &name, facts(&object));
                        }
                    }
                    watcher::Event::InitDone => {
                        not_found = 0;
                        if watching.as_deref() != Some(url.as_str()) {
                            tracing::info!(member = %member, "watching {url}");
                            watching = Some(url.clone());
                        }
                        if let Some(p) = pending.take() {
                            let touched = cache.replace(p);
                            if set(Served::Yes) {
                                state_changed();
                            }
                            for (ns, name) in touched {
                                on_change(ns, name);
                            }
                        }
                    }
                    watcher::Event::Apply(object) => {
                        let (ns, name) = id(&object);
                        cache.apply(&ns, &name, facts(&object));
                        on_change(ns, name);
                    }
                    watcher::Event::Delete(object) => {
                        let (ns, name) = id(&object);
                        cache.delete(&ns, &name);
                        on_change(ns, name);
                    }
                }
            }
            // The stream ended on a 404: this version is not served.
            version = (version + 1) % apis.len();
            if not_found >= apis.len() {
                not_found = 0;
                version = 0;
                watching = None;
                if set(Served::No) {
                    let tried: Vec<&str> = apis.iter().map(|a| a.resource_url()).collect();
                    tracing::info!(member = %member, resource = %kind, "the cluster serves no {kind} (404 from {}); listed again every {} s", tried.join(", "), NOT_SERVED_RETRY.as_secs());
                    // Whatever was cached is gone with the kind.
                    for (ns, name) in cache.replace(Relist::default()) {
                        on_change(ns, name);
                    }
                    state_changed();
                }
                tokio::time::sleep(NOT_SERVED_RETRY).await;
            }
        }
    })
}

/// A failing watch retries within 2 s (1 s doubled at most by the
/// jitter), as the member's other watches; a missing kind is asked for
/// again every [`NOT_SERVED_RETRY`].
fn backoff() -> super::watch::WatchBackoff {
    super::watch::WatchBackoff::new(
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(200))
            .with_max_delay(Duration::from_secs(1))
            .with_factor(2.0)
            .with_jitter()
            .without_max_times(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A ListenerSet (`apis/v1/listenerset_types.go`) attached to Gateway
    /// `infra/gw`: as a route's parent it has its own listeners and the
    /// Gateway's addresses, and is no parent while the Gateway has not
    /// accepted it or the Gateway is missing. (Attachment through it:
    /// `records::gateway::attach` tests and `routes_e2e`.)
    #[test]
    fn a_listener_set_is_a_parent_with_its_gateways_addresses() {
        let ok = |t: &str| serde_json::json!({"type": t, "status": "True"});
        let api = GatewayApi::default();
        api.gateways.apply(
            "infra",
            "gw",
            GatewayFacts::of(&object(
                "infra",
                serde_json::json!({
                    "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                    "metadata": {"name": "gw"},
                    "spec": {"gatewayClassName": "c", "allowedListeners": {"namespaces": {"from": "All"}},
                             "listeners": [{"name": "main", "port": 80, "protocol": "HTTP", "hostname": "main.example.com"}]},
                    "status": {"addresses": [{"value": "127.0.0.21"}], "conditions": [ok("Programmed")]}
                }),
            )),
        );
        let set = |accepted: &str| {
            GatewayFacts::of(&object(
                "team",
                serde_json::json!({
                    "apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
                    "metadata": {"name": "team-set"},
                    "spec": {"parentRef": {"name": "gw", "namespace": "infra"},
                             "listeners": [{"name": "api", "port": 8080, "protocol": "HTTP", "hostname": "*.team.example.com"}]},
                    "status": {"conditions": [{"type": "Accepted", "status": accepted}, ok("Programmed")],
                               "listeners": [{"name": "api", "attachedRoutes": 1, "conditions": [ok("Programmed")]}]}
                }),
            ))
        };
        let facts = set("True");
        assert_eq!(facts.parent, Some(("infra".into(), "gw".into())));
        api.listener_sets.apply("team", "team-set", facts);
        let parent = api.parent(LISTENER_SET, "team", "team-set").unwrap();
        assert_eq!(parent.listeners.len(), 1);
        assert_eq!(&*parent.listeners[0].name, "api");
        assert_eq!(parent.listeners[0].port, 8080);
        assert!(parent.listeners[0].programmed);
        assert_eq!(&*parent.addresses, [(Box::from("IPAddress"), Box::from("127.0.0.21"))]);
        assert_eq!(parent.programmed, Some(true));
        // Not accepted by its Gateway: no parent.
        api.listener_sets.apply("team", "team-set", set("False"));
        let why = api.parent(LISTENER_SET, "team", "team-set").unwrap_err();
        assert!(why.contains("not Accepted by its Gateway"), "{why}");
        // Its Gateway gone: no parent.
        api.listener_sets.apply("team", "team-set", set("True"));
        api.gateways.delete("infra", "gw");
        let why = api.parent(LISTENER_SET, "team", "team-set").unwrap_err();
        assert!(why.contains("its Gateway infra/gw is not found"), "{why}");
        // Other kinds are no parents fedns follows.
        assert!(api.parent("Service", "team", "x").is_err());
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

    #[test]
    fn older_gateway_api_versions_are_asked_for_after_v1() {
        assert_eq!(versions("TCPRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("UDPRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("TLSRoute"), ["v1", "v1alpha3", "v1alpha2"]);
        assert_eq!(versions("GRPCRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("HTTPRoute"), ["v1", "v1beta1"]);
        assert_eq!(versions(LISTENER_SET), ["v1"]);
    }
}
