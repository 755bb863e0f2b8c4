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
        IngressFacts {
            load_balancer: LoadBalancer(points),
        }
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

impl<T: Clone> FactCache<T> {
    /// The facts of `namespace/name`, if the member has that object.
    pub fn get(&self, namespace: &str, name: &str) -> Option<T> {
        self.read().get(namespace)?.get(name).cloned()
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

    /// Sets `namespace/name`.
    pub(super) fn apply(&self, namespace: &str, name: &str, facts: T) {
        insert(&mut self.write(), namespace, name, facts);
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
    /// `(namespace, name)` that was or is now held (what may have changed).
    pub(super) fn replace(&self, listed: Relist<T>) -> Vec<(String, String)> {
        let mut objects = self.write();
        let old = std::mem::replace(&mut *objects, listed.objects);
        let mut touched: Vec<(String, String)> = Vec::new();
        for (namespace, names) in objects.iter() {
            touched.extend(names.keys().map(|name| (namespace.to_string(), name.to_string())));
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
    fn relist_replaces_only_once_complete_and_reports_what_went() {
        let cache: FactCache<u32> = FactCache::default();
        cache.apply("a", "kept", 1);
        cache.apply("a", "gone", 2);
        cache.apply("b", "gone-too", 3);
        let mut relist = Relist::default();
        relist.apply("a", "kept", 10);
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
        assert_eq!(cache.len(), 2);
        cache.delete("c", "new");
        cache.delete("c", "never");
        assert_eq!(cache.len(), 1);
        assert!(!cache.is_empty());
    }
}
