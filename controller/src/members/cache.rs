//! Compact caches of a member's Services and Ingresses: per object only
//! what the reconcilers and `/debug/explain` read, so that the controller
//! holds at most 2 KiB per shard. A kube reflector's store keeps whole objects (their
//! metadata and spec alone are about 2 KiB even with the unread fields
//! dropped); these keep namespace → name → facts, tens of bytes plus the
//! load balancer addresses.
//!
//! Filled from the watch stream with a reflector's semantics: a (re)list
//! builds a new map that replaces the old one only once it is complete.

use std::collections::HashMap;
use std::sync::RwLock;

use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus, Service};
use k8s_openapi::api::networking::v1::Ingress;

/// One load balancer ingress point: `status.loadBalancer.ingress[]` of a
/// Service (core/v1 `LoadBalancerIngress`) or an Ingress (networking/v1
/// `IngressLoadBalancerIngress`, whose `ip` and `hostname` are kept).
#[derive(Debug, Clone, PartialEq)]
struct IngressPoint {
    ip: Option<Box<str>>,
    hostname: Option<Box<str>>,
    /// `ipMode` and `ports`, rare: boxed so the common point stays small.
    rest: Option<Box<PointRest>>,
}

/// A point's `ipMode` and `ports`.
type PointRest = (Option<String>, Option<Vec<k8s_openapi::api::core::v1::PortStatus>>);

impl IngressPoint {
    fn to_core(&self) -> LoadBalancerIngress {
        let (ip_mode, ports) = self.rest.as_deref().cloned().unwrap_or_default();
        LoadBalancerIngress {
            ip: self.ip.as_deref().map(str::to_owned),
            hostname: self.hostname.as_deref().map(str::to_owned),
            ip_mode,
            ports,
        }
    }
}

/// A load balancer status as kept: its ingress points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadBalancer(Box<[IngressPoint]>);

impl LoadBalancer {
    fn from_core(status: Option<&LoadBalancerStatus>) -> Self {
        let points = status
            .and_then(|s| s.ingress.as_ref())
            .map(|items| {
                items
                    .iter()
                    .map(|i| IngressPoint {
                        ip: i.ip.as_deref().map(Box::from),
                        hostname: i.hostname.as_deref().map(Box::from),
                        rest: (i.ip_mode.is_some() || i.ports.is_some())
                            .then(|| Box::new((i.ip_mode.clone(), i.ports.clone()))),
                    })
                    .collect()
            })
            .unwrap_or_default();
        LoadBalancer(points)
    }

    /// Has at least one ingress point (with or without an address).
    pub fn has_ingress(&self) -> bool {
        !self.0.is_empty()
    }

    /// Shares an address (an IP or a host name) with `other`: the Service
    /// of an ingress controller and the Ingresses it serves show the same.
    pub fn shares_address_with(&self, other: &LoadBalancer) -> bool {
        self.0.iter().any(|a| {
            other
                .0
                .iter()
                .any(|b| (a.ip.is_some() && a.ip == b.ip) || (a.hostname.is_some() && a.hostname == b.hostname))
        })
    }

    /// As core/v1 `LoadBalancerStatus` (`ingress: None` when it has none),
    /// the shape `status.dns` carries.
    pub fn to_status(&self) -> LoadBalancerStatus {
        LoadBalancerStatus {
            ingress: (!self.0.is_empty()).then(|| self.0.iter().map(IngressPoint::to_core).collect()),
        }
    }
}

/// What fedns reads of a member's Service.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceFacts {
    /// `spec.ports[0].port`: a health check probes it by default.
    pub first_port: Option<i32>,
    /// `spec.type` is `LoadBalancer`: an MCS ServiceExport makes a record
    /// only for such a Service.
    pub is_load_balancer_type: bool,
    /// `status.loadBalancer`.
    pub load_balancer: LoadBalancer,
}

impl ServiceFacts {
    /// The facts of `service`.
    pub fn of(service: &Service) -> Self {
        let spec = service.spec.as_ref();
        ServiceFacts {
            first_port: spec
                .and_then(|s| s.ports.as_ref())
                .and_then(|p| p.first())
                .map(|p| p.port),
            is_load_balancer_type: spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer"),
            load_balancer: LoadBalancer::from_core(service.status.as_ref().and_then(|s| s.load_balancer.as_ref())),
        }
    }
}

/// What fedns reads of a member's Ingress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngressFacts {
    /// `status.loadBalancer`, its points' `ip` and `hostname`.
    pub load_balancer: LoadBalancer,
    /// The Services it routes to (`spec.defaultBackend.service.name` and
    /// every `spec.rules[].http.paths[].backend.service.name`), sorted,
    /// each once; resource backends are not Services and not kept.
    pub backends: Box<[Box<str>]>,
}

impl IngressFacts {
    /// The facts of `ingress`.
    pub fn of(ingress: &Ingress) -> Self {
        let points = ingress
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .map(|items| {
                items
                    .iter()
                    .map(|i| IngressPoint {
                        ip: i.ip.as_deref().map(Box::from),
                        hostname: i.hostname.as_deref().map(Box::from),
                        rest: None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let spec = ingress.spec.as_ref();
        let mut backends: Vec<Box<str>> = spec
            .and_then(|s| s.default_backend.as_ref())
            .into_iter()
            .chain(
                spec.and_then(|s| s.rules.as_ref())
                    .into_iter()
                    .flatten()
                    .filter_map(|rule| rule.http.as_ref())
                    .flat_map(|http| http.paths.iter().map(|path| &path.backend)),
            )
            .filter_map(|backend| backend.service.as_ref())
            .map(|service| Box::from(service.name.as_str()))
            .collect();
        backends.sort();
        backends.dedup();
        IngressFacts {
            load_balancer: LoadBalancer(points),
            backends: backends.into_boxed_slice(),
        }
    }
}

impl FactCache<IngressFacts> {
    /// The Ingresses whose readiness depends on Service `namespace/name`
    /// (whose facts are `service`, if the member has it): those in its
    /// namespace routing to it, and, when it is a LoadBalancer Service,
    /// those anywhere showing one of its addresses (it is their ingress
    /// controller's).
    pub fn depending_on(&self, namespace: &str, name: &str, service: Option<&ServiceFacts>) -> Vec<(String, String)> {
        let controller = service
            .filter(|s| s.is_load_balancer_type && s.load_balancer.has_ingress())
            .map(|s| &s.load_balancer);
        let objects = self.read();
        let mut found = Vec::new();
        for (ns, names) in objects.iter() {
            let same_namespace = &**ns == namespace;
            if !same_namespace && controller.is_none() {
                continue;
            }
            for (ingress, facts) in names {
                let routes_to = same_namespace && facts.backends.iter().any(|b| &**b == name);
                let served_by = controller.is_some_and(|lb| lb.shares_address_with(&facts.load_balancer));
                if routes_to || served_by {
                    found.push((ns.to_string(), ingress.to_string()));
                }
            }
        }
        found
    }
}

impl FactCache<ServiceFacts> {
    /// The LoadBalancer Services showing an address of `load_balancer`
    /// (an Ingress's): its ingress controller's, as `namespace/name`.
    pub fn controllers_of(&self, load_balancer: &LoadBalancer) -> Vec<(String, String)> {
        let objects = self.read();
        let mut found = Vec::new();
        for (ns, names) in objects.iter() {
            for (name, facts) in names {
                if facts.is_load_balancer_type && facts.load_balancer.shares_address_with(load_balancer) {
                    found.push((ns.to_string(), name.to_string()));
                }
            }
        }
        found.sort();
        found
    }
}

/// namespace → name → facts.
type Objects<T> = HashMap<Box<str>, HashMap<Box<str>, T>>;

/// One member's cache of one kind: namespace → name → facts (`T`).
#[derive(Debug)]
pub struct FactCache<T> {
    objects: RwLock<Objects<T>>,
}

impl<T> Default for FactCache<T> {
    fn default() -> Self {
        FactCache {
            objects: RwLock::new(HashMap::new()),
        }
    }
}

impl<T: Clone + PartialEq> FactCache<T> {
    /// Sets `namespace/name`; returns whether its facts changed (or it is
    /// new). A watch event that changes nothing fedns reads (a Gateway's
    /// condition timestamps, a route's annotations) reaches no record.
    pub(super) fn apply(&self, namespace: &str, name: &str, facts: T) -> bool {
        let mut objects = self.write();
        if objects.get(namespace).and_then(|names| names.get(name)) == Some(&facts) {
            return false;
        }
        insert(&mut objects, namespace, name, facts);
        true
    }

    /// The facts of `namespace/name`, if the member has that object.
    pub fn get(&self, namespace: &str, name: &str) -> Option<T> {
        self.read().get(namespace)?.get(name).cloned()
    }

    /// Every `(namespace, name)` whose facts satisfy `pred`.
    pub fn matching(&self, pred: impl Fn(&T) -> bool) -> Vec<(String, String)> {
        let objects = self.read();
        let mut found = Vec::new();
        for (ns, names) in objects.iter() {
            for (name, facts) in names {
                if pred(facts) {
                    found.push((ns.to_string(), name.to_string()));
                }
            }
        }
        found
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.read().values().map(HashMap::len).sum()
    }

    /// Holds nothing.
    pub fn is_empty(&self) -> bool {
        self.read().values().all(HashMap::is_empty)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects<T>> {
        self.objects.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects<T>> {
        self.objects.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes `namespace/name`.
    pub(super) fn delete(&self, namespace: &str, name: &str) {
        let mut objects = self.write();
        if let Some(names) = objects.get_mut(namespace) {
            names.remove(name);
            if names.is_empty() {
                objects.remove(namespace);
            }
        }
    }

    /// Replaces everything with a completed list; returns every
    /// `(namespace, name)` whose facts changed: new, gone, or different.
    /// A relist after a watch was cut (every few minutes on a real API
    /// server) reaches only what changed meanwhile: a Gateway listed again
    /// with the same facts requeues none of the routes attached to it.
    pub(super) fn replace(&self, listed: Relist<T>) -> Vec<(String, String)> {
        let mut objects = self.write();
        let old = std::mem::replace(&mut *objects, listed.objects);
        let mut touched: Vec<(String, String)> = Vec::new();
        for (namespace, names) in objects.iter() {
            let before = old.get(namespace);
            touched.extend(
                names
                    .iter()
                    .filter(|(name, facts)| before.and_then(|b| b.get(*name)) != Some(*facts))
                    .map(|(name, _)| (namespace.to_string(), name.to_string())),
            );
        }
        // Objects gone while the watch was down: their records change too.
        for (namespace, names) in &old {
            let now = objects.get(namespace);
            for name in names.keys() {
                if now.is_none_or(|n| !n.contains_key(name)) {
                    touched.push((namespace.to_string(), name.to_string()));
                }
            }
        }
        drop(objects);
        drop(old);
        touched
    }
}

/// A list in progress, swapped in by [`FactCache::replace`] once complete.
#[derive(Debug)]
pub(super) struct Relist<T> {
    objects: Objects<T>,
}

impl<T> Default for Relist<T> {
    fn default() -> Self {
        Relist {
            objects: HashMap::new(),
        }
    }
}

impl<T> Relist<T> {
    pub(super) fn apply(&mut self, namespace: &str, name: &str, facts: T) {
        insert(&mut self.objects, namespace, name, facts);
    }
}

fn insert<T>(objects: &mut Objects<T>, namespace: &str, name: &str, facts: T) {
    match objects.get_mut(namespace) {
        Some(names) => {
            names.insert(Box::from(name), facts);
        }
        None => {
            objects.insert(Box::from(namespace), HashMap::from([(Box::from(name), facts)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PortStatus, ServicePort, ServiceSpec, ServiceStatus};

    fn service(type_: &str, port: i32, points: Vec<LoadBalancerIngress>) -> Service {
        Service {
            spec: Some(ServiceSpec {
                type_: Some(type_.into()),
                ports: Some(vec![
                    ServicePort {
                        port,
                        ..Default::default()
                    },
                    ServicePort {
                        port: 9999,
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            status: Some(ServiceStatus {
                load_balancer: Some(LoadBalancerStatus { ingress: Some(points) }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn service_facts_keep_what_is_read() {
        let point = LoadBalancerIngress {
            ip: Some("192.0.2.1".into()),
            hostname: Some("lb.example.com".into()),
            ip_mode: Some("Proxy".into()),
            ports: Some(vec![PortStatus {
                port: 80,
                protocol: "TCP".into(),
                error: None,
            }]),
        };
        let facts = ServiceFacts::of(&service("LoadBalancer", 8080, vec![point.clone()]));
        assert_eq!(facts.first_port, Some(8080));
        assert!(facts.is_load_balancer_type);
        assert!(facts.load_balancer.has_ingress());
        // Every field of the status comes back as it was.
        assert_eq!(
            facts.load_balancer.to_status(),
            LoadBalancerStatus {
                ingress: Some(vec![point])
            }
        );
        let plain = ServiceFacts::of(&service("ClusterIP", 80, vec![]));
        assert!(!plain.is_load_balancer_type);
        assert!(!plain.load_balancer.has_ingress());
        assert_eq!(plain.load_balancer.to_status(), LoadBalancerStatus::default());
        assert_eq!(ServiceFacts::of(&Service::default()), ServiceFacts::default());
    }

    #[test]
    fn relist_replaces_only_once_complete_and_reports_what_changed() {
        let cache: FactCache<u32> = FactCache::default();
        cache.apply("a", "kept", 1);
        cache.apply("a", "gone", 2);
        cache.apply("b", "gone-too", 3);
        assert!(!cache.apply("a", "gone", 2), "the same facts again: no change");
        cache.apply("b", "same", 5);
        let mut relist = Relist::default();
        relist.apply("a", "kept", 10);
        relist.apply("b", "same", 5);
        relist.apply("c", "new", 4);
        // Until replaced, readers see the old contents.
        assert_eq!(cache.get("a", "gone"), Some(2));
        let mut touched = cache.replace(relist);
        touched.sort();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            touched,
            vec![
                pair("a", "gone"),
                pair("a", "kept"),
                pair("b", "gone-too"),
                pair("c", "new")
            ]
        );
        assert_eq!(cache.get("a", "kept"), Some(10));
        assert_eq!(cache.get("a", "gone"), None);
        assert_eq!(cache.get("b", "gone-too"), None);
        assert_eq!(cache.len(), 3);
        cache.delete("c", "new");
        cache.delete("c", "never");
        assert_eq!(cache.len(), 2);
        assert!(!cache.is_empty());
    }

    #[test]
    fn an_ingress_knows_its_backends_and_who_depends_on_a_service() {
        let ingress: Ingress = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "shop", "namespace": "ns"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}},
                "rules": [{"http": {"paths": [
                    {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 80}}}},
                    {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                    {"path": "/static", "pathType": "Prefix", "backend": {"resource": {"kind": "Bucket", "name": "b"}}}]}}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
        }))
        .unwrap();
        let facts = IngressFacts::of(&ingress);
        assert_eq!(&*facts.backends, [Box::from("api"), Box::from("web")]);
        let ingresses: FactCache<IngressFacts> = FactCache::default();
        ingresses.apply("ns", "shop", facts);
        let controller = ServiceFacts::of(&service(
            "LoadBalancer",
            80,
            vec![LoadBalancerIngress {
                ip: Some("203.0.113.7".into()),
                ..Default::default()
            }],
        ));
        let shop = vec![("ns".to_owned(), "shop".to_owned())];
        assert_eq!(ingresses.depending_on("ns", "api", None), shop);
        assert_eq!(ingresses.depending_on("ns", "db", None), Vec::<(String, String)>::new());
        assert_eq!(
            ingresses.depending_on("other", "api", None),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            ingresses.depending_on("ingress-nginx", "controller", Some(&controller)),
            shop
        );
        let services: FactCache<ServiceFacts> = FactCache::default();
        services.apply("ingress-nginx", "controller", controller);
        assert_eq!(
            services.controllers_of(&IngressFacts::of(&ingress).load_balancer),
            [("ingress-nginx".to_owned(), "controller".to_owned())]
        );
    }
}
