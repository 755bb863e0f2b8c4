//! The host objects the controller runs on, cached before anything reads
//! them: MemberClusters and Secrets (the member sources'), the records,
//! Domains and DNSEndpoints, and what each change wakes or requeues.

use std::sync::Arc;

use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, ServiceDNSRecord};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::ResourceExt;
use tokio::sync::Notify;

use fedns_providers::source::pending::PendingEndpoints;

use super::host_caches::{reflect, reflect_records, reflect_spec_changes, Changed, Reflected};
use crate::queue::{Queue, RecordKey};
use crate::records;
use crate::records::domain_fields::{Reach, RecordReads};

/// The host caches, each listed once, and what their changes notify.
pub(super) struct HostObjects {
    pub(super) clusters: Reflected<MemberCluster>,
    pub(super) secrets: Reflected<Secret>,
    pub(super) services: Reflected<ServiceDNSRecord>,
    pub(super) ingresses: Reflected<IngressDNSRecord>,
    pub(super) routes: Reflected<RouteDNSRecord>,
    pub(super) domains: Reflected<Domain>,
    pub(super) endpoints: Reflected<DNSEndpoint>,
    /// Wakes the member registry on MemberCluster and Secret changes.
    pub(super) members_changed: Arc<Notify>,
    /// Wakes the auto-records loop (when on) on record and Domain changes.
    pub(super) auto_changed: Arc<Notify>,
    /// Wakes the publisher on DNSEndpoint changes.
    pub(super) publisher_changed: Arc<Notify>,
    /// DNSEndpoint specs the records computed, published before their
    /// writes land (shared by the records and the publisher).
    pub(super) pending: Arc<PendingEndpoints>,
    /// The records' `status.dns`, kept outside their caches.
    pub(super) published: Arc<records::PublishedShards>,
}

/// Starts the host caches and waits until each has listed.
pub(super) async fn host_caches(host: &kube::Client, namespace: &str, queue: &Queue) -> HostObjects {
    let members_changed = Arc::new(Notify::new());
    let clusters = reflect(Api::<MemberCluster>::namespaced(host.clone(), namespace), {
        let changed = members_changed.clone();
        move |_: &MemberCluster| changed.notify_one()
    });
    let secrets = reflect(Api::<Secret>::namespaced(host.clone(), namespace), {
        let changed = members_changed.clone();
        move |_: &Secret| changed.notify_one()
    });
    // Wakes the auto-records loop (when on) on record and Domain changes.
    let auto_changed = Arc::new(Notify::new());
    let published = Arc::new(records::PublishedShards::default());
    let services = reflect_records(Api::<ServiceDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |change: Changed<'_, ServiceDNSRecord>| {
            // Gone while the watch was down: the API server's garbage
            // collector deletes their DNSEndpoints (owner references).
            if let Changed::Spec(r) | Changed::Deleted(r) = change {
                queue.push(RecordKey::Service(r.namespace().unwrap_or_default(), r.name_any()));
                auto.notify_one();
            }
        }
    });
    let ingresses = reflect_records(Api::<IngressDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |change: Changed<'_, IngressDNSRecord>| {
            // Gone while the watch was down: the API server's garbage
            // collector deletes their DNSEndpoints (owner references).
            if let Changed::Spec(r) | Changed::Deleted(r) = change {
                queue.push(RecordKey::Ingress(r.namespace().unwrap_or_default(), r.name_any()));
                auto.notify_one();
            }
        }
    });
    let routes = reflect_records(Api::<RouteDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |change: Changed<'_, RouteDNSRecord>| {
            // Gone while the watch was down: the API server's garbage
            // collector deletes their DNSEndpoints (owner references).
            if let Changed::Spec(r) | Changed::Deleted(r) = change {
                queue.push(RecordKey::Route(r.namespace().unwrap_or_default(), r.name_any()));
                auto.notify_one();
            }
        }
    });
    // Every record reads its Domain's spec, none its status, which the
    // publisher rewrites after every publish (the serial): only spec
    // changes requeue records, and of those only the records the edited
    // fields reach (see `records::domain_fields`).
    let domains = reflect_spec_changes(Api::<Domain>::namespaced(host.clone(), namespace), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        let stores = (services.store.clone(), ingresses.store.clone(), routes.store.clone());
        let read = std::sync::Mutex::new(std::collections::HashMap::<String, RecordReads>::new());
        move |change: Changed<'_, Domain>| {
            let mut read = read.lock().unwrap_or_else(|e| e.into_inner());
            let reach = match change {
                Changed::Spec(domain) if domain.metadata.deletion_timestamp.is_none() => {
                    let id = format!("{}/{}", domain.namespace().unwrap_or_default(), domain.name_any());
                    let now = RecordReads::of(domain);
                    now.reach_since(read.insert(id, now).as_ref())
                }
                Changed::Spec(domain) | Changed::Deleted(domain) => {
                    read.remove(&format!(
                        "{}/{}",
                        domain.namespace().unwrap_or_default(),
                        domain.name_any()
                    ));
                    Reach::every()
                }
                Changed::Gone => Reach::every(),
            };
            drop(read);
            if reach.is_none() {
                // A setting only the publisher reads (SOA timers, name
                // servers, transfers, DNSSEC): no record changes.
                return;
            }
            if reach.every {
                queue.push_all();
            } else {
                queue.push_many(reached_records(&stores, reach));
            }
            auto.notify_one();
        }
    });
    // Shared with the publisher (one cache of every DNSEndpoint, not two).
    let publisher_changed = Arc::new(Notify::new());
    let pending = Arc::new(PendingEndpoints::waking(publisher_changed.clone()));
    let endpoints = reflect_spec_changes(Api::<DNSEndpoint>::all(host.clone()), {
        // A DNSEndpoint edited or deleted by hand is put back by its record
        // (the publisher's status writes are no edit, and the controller's
        // own writes coming back requeue nothing). One gone while the
        // watch was down is put back by the periodic pass.
        let queue = queue.clone();
        let publisher_changed = publisher_changed.clone();
        let pending = pending.clone();
        move |change: Changed<'_, DNSEndpoint>| {
            publisher_changed.notify_one();
            let e = match change {
                Changed::Spec(e) if pending.is_echo(e) => return,
                Changed::Spec(e) => e,
                Changed::Deleted(e) => {
                    pending.withdraw(&e.namespace().unwrap_or_default(), &e.name_any());
                    e
                }
                Changed::Gone => return,
            };
            let ns = e.namespace().unwrap_or_default();
            for owner in e.owner_references() {
                match owner.kind.as_str() {
                    "ServiceDNSRecord" => queue.push(RecordKey::Service(ns.clone(), owner.name.clone())),
                    "IngressDNSRecord" => queue.push(RecordKey::Ingress(ns.clone(), owner.name.clone())),
                    "RouteDNSRecord" => queue.push(RecordKey::Route(ns.clone(), owner.name.clone())),
                    _ => {}
                }
            }
        }
    });
    clusters.wait().await;
    secrets.wait().await;
    services.wait().await;
    ingresses.wait().await;
    routes.wait().await;
    domains.wait().await;
    endpoints.wait().await;
    tracing::info!("host cluster caches ready");
    HostObjects {
        clusters,
        secrets,
        services,
        ingresses,
        routes,
        domains,
        endpoints,
        members_changed,
        auto_changed,
        publisher_changed,
        pending,
        published,
    }
}

/// The records a Domain edit of `reach` (less than every record) can
/// change: those with `spec.routing` for a regions edit, those with
/// `spec.healthCheck` for a `probeAllowedNetworks` edit.
fn reached_records(
    (services, ingresses, routes): &(
        kube::runtime::reflector::Store<ServiceDNSRecord>,
        kube::runtime::reflector::Store<IngressDNSRecord>,
        kube::runtime::reflector::Store<RouteDNSRecord>,
    ),
    reach: Reach,
) -> Vec<RecordKey> {
    fn keys_of<K: kube::Resource<DynamicType = ()> + Clone + 'static>(
        store: &kube::runtime::reflector::Store<K>,
        reached: impl Fn(&K) -> bool,
        key: impl Fn(String, String) -> RecordKey,
    ) -> impl Iterator<Item = RecordKey> {
        store
            .state()
            .into_iter()
            .filter(move |r| reached(r))
            .map(move |r| key(r.namespace().unwrap_or_default(), r.name_any()))
    }
    keys_of(
        services,
        |r| reach.reaches(r.spec.routing.is_some(), r.spec.health_check.is_some()),
        RecordKey::Service,
    )
    .chain(keys_of(
        ingresses,
        |r| reach.reaches(r.spec.routing.is_some(), r.spec.health_check.is_some()),
        RecordKey::Ingress,
    ))
    .chain(keys_of(
        routes,
        |r| reach.reaches(r.spec.routing.is_some(), r.spec.health_check.is_some()),
        RecordKey::Route,
    ))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};

    fn store_of<K>(objects: Vec<serde_json::Value>) -> reflector::Store<K>
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + 'static,
    {
        let (reader, mut writer) = reflector::store::<K>();
        for object in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(serde_json::from_value(object).unwrap()));
        }
        reader
    }

    fn record(kind: &str, name: &str, spec: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": "ns"},
            "spec": spec,
        })
    }

    #[test]
    fn a_domain_edit_reaches_the_records_that_read_what_changed() {
        let routing = serde_json::json!({"policy": "Nearest"});
        let check = serde_json::json!({"protocol": "HTTP"});
        let stores = (
            store_of::<ServiceDNSRecord>(vec![
                record("ServiceDNSRecord", "plain", serde_json::json!({"domainRef": "myfed"})),
                record(
                    "ServiceDNSRecord",
                    "routed",
                    serde_json::json!({"domainRef": "myfed", "routing": routing}),
                ),
                record(
                    "ServiceDNSRecord",
                    "probed",
                    serde_json::json!({"domainRef": "myfed", "healthCheck": check}),
                ),
            ]),
            store_of::<IngressDNSRecord>(vec![
                record(
                    "IngressDNSRecord",
                    "plain",
                    serde_json::json!({"hosts": ["a.example.com"]}),
                ),
                record(
                    "IngressDNSRecord",
                    "routed",
                    serde_json::json!({"hosts": ["b.example.com"], "routing": routing}),
                ),
            ]),
            store_of::<RouteDNSRecord>(vec![
                record("RouteDNSRecord", "plain", serde_json::json!({})),
                record("RouteDNSRecord", "probed", serde_json::json!({"healthCheck": check})),
            ]),
        );
        let ids = |reach: Reach| {
            let mut ids: Vec<String> = reached_records(&stores, reach).iter().map(RecordKey::id).collect();
            ids.sort();
            ids
        };
        let regions = Reach {
            routed: true,
            ..Reach::default()
        };
        assert_eq!(ids(regions), ["ingress:ns/routed", "service:ns/routed"]);
        let networks = Reach {
            probed: true,
            ..Reach::default()
        };
        assert_eq!(ids(networks), ["route:ns/probed", "service:ns/probed"]);
        assert_eq!(ids(Reach::every()).len(), 7);
        assert!(ids(Reach::default()).is_empty());
    }
}
