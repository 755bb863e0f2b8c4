//! A member's Gateway API caches ([`GatewayApi`]) and the watches that
//! keep them: its Gateways, GatewayClasses, ListenerSets and routes
//! ([`spawn_watches`]), or the route templates in a cluster that holds
//! them ([`spawn_route_templates`]); each kind's watch tries its versions
//! in turn and marks the kind not served on a 404 from every one.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fedns_api::RouteKind;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::{watcher, WatchStreamExt};
use tokio::task::JoinHandle;

use super::facts::{ClassController, ClassFacts, GatewayFacts, RouteFacts, LISTENER_SET};
use super::versions::{apis_of, kind_index, resource, Served, NOT_SERVED_RETRY};
use crate::members::cache::{FactCache, Relist};
use crate::members::watch::WatchBackoff;

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

    /// Whether every kind (Gateways, GatewayClasses, ListenerSets and
    /// the routes) has been listed or found not served.
    pub fn listed(&self) -> bool {
        self.served
            .iter()
            .all(|s| Served::from_u8(s.load(Ordering::Relaxed)) != Served::Unknown)
    }
}

/// Starts the watches of a member's Gateways and routes. `routes_changed`
/// is called with (kind, namespace, name) of the routes that changed or
/// may serve differently: one route that changed, or at once every route
/// a Gateway, GatewayClass or ListenerSet change reaches (so the workers
/// see them as one batch); `kind_state_changed` when a kind turns served
/// or not served.
pub(in crate::members) fn spawn_watches(
    member: &str,
    client: &kube::Client,
    caches: &Arc<GatewayApi>,
    routes_changed: impl Fn(Vec<(RouteKind, String, String)>) + Clone + Send + Sync + 'static,
    kind_state_changed: impl Fn() + Clone + Send + Sync + 'static,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    {
        let caches_for_gateways = caches.clone();
        let changed = routes_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, "Gateway", "gateways"),
            caches.gateways.clone(),
            GatewayFacts::of,
            caches.served[0].clone(),
            kind_state_changed.clone(),
            move |ns: String, name: String| changed(routes_through_gateway(&caches_for_gateways, &ns, &name)),
        ));
    }
    {
        // A GatewayClass's change (its controller) reaches every route
        // through a Gateway of that class.
        let caches_for_classes = caches.clone();
        let changed = routes_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, "GatewayClass", "gatewayclasses"),
            caches.classes.clone(),
            ClassFacts::of,
            caches.served[7].clone(),
            kind_state_changed.clone(),
            move |_: String, class: String| {
                let mut routes = Vec::new();
                for (ns, name) in caches_for_classes
                    .gateways
                    .matching(|g| g.class.as_deref() == Some(class.as_str()))
                {
                    routes.extend(routes_through_gateway(&caches_for_classes, &ns, &name));
                }
                changed(routes);
            },
        ));
    }
    {
        let caches_for_sets = caches.clone();
        let changed = routes_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, LISTENER_SET, "listenersets"),
            caches.listener_sets.clone(),
            GatewayFacts::of,
            caches.served[6].clone(),
            kind_state_changed.clone(),
            move |ns: String, name: String| {
                let mut routes = Vec::new();
                for kind in RouteKind::ALL {
                    for (route_ns, route) in caches_for_sets
                        .routes(kind)
                        .matching(|f| f.names_parent(LISTENER_SET, &ns, &name))
                    {
                        routes.push((kind, route_ns, route));
                    }
                }
                changed(routes);
            },
        ));
    }
    for (i, kind) in RouteKind::ALL.into_iter().enumerate() {
        let changed = routes_changed.clone();
        tasks.push(spawn_kind(
            member.to_owned(),
            apis_of(client, kind.as_str(), kind.plural()),
            caches.routes[i].clone(),
            RouteFacts::of,
            caches.served[1 + i].clone(),
            kind_state_changed.clone(),
            move |ns, name| changed(vec![(kind, ns, name)]),
        ));
    }
    tasks
}

/// Every route that names Gateway `ns/name`, or one of its ListenerSets:
/// a change of the Gateway reaches them.
fn routes_through_gateway(caches: &GatewayApi, ns: &str, name: &str) -> Vec<(RouteKind, String, String)> {
    let sets = caches
        .listener_sets
        .matching(|s| s.parent.as_ref().is_some_and(|(n, g)| **n == *ns && **g == *name));
    let mut routes = Vec::new();
    for kind in RouteKind::ALL {
        for (route_ns, route) in caches.routes(kind).matching(|f| {
            f.names_gateway(ns, name) || sets.iter().any(|(s_ns, s)| f.names_parent(LISTENER_SET, s_ns, s))
        }) {
            routes.push((kind, route_ns, route));
        }
    }
    routes
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
fn spawn_kind<T: Clone + PartialEq + Send + Sync + 'static>(
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
                        if cache.apply(&ns, &name, facts(&object)) {
                            on_change(ns, name);
                        }
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
fn backoff() -> WatchBackoff {
    WatchBackoff::new(
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
}
