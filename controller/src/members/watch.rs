//! The watches of one member: a reflector per kind (Services,
//! EndpointSlices, Ingresses, Nodes) keeping only the fields the controller
//! reads, each stream's last success and failure, and the index of
//! EndpointSlices with a ready endpoint.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::reflector;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Resource, ResourceExt};
use tokio::task::JoinHandle;

use crate::records::queue::{Queue, RecordKey};

/// EndpointSlice label naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Last success and failure of one watch stream.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct WatchHealth {
    pub(super) last_ok: Option<Instant>,
    pub(super) last_error: Option<Instant>,
}

/// Ready EndpointSlices per Service, and each slice's Service (to undo it).
#[derive(Debug, Default)]
pub struct SliceIndex {
    pub(super) ready: std::collections::HashMap<(String, String), BTreeSet<String>>,
    owner: std::collections::HashMap<(String, String), String>,
}

impl SliceIndex {
    fn apply(&mut self, slice: &EndpointSlice) -> Option<(String, String)> {
        let namespace = slice.metadata.namespace.clone().unwrap_or_default();
        let name = slice.metadata.name.clone().unwrap_or_default();
        self.remove(&namespace, &name);
        let service = slice.labels().get(SERVICE_NAME_LABEL)?.clone();
        let ready = slice
            .endpoints
            .iter()
            .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true));
        self.owner.insert((namespace.clone(), name.clone()), service.clone());
        if ready {
            self.ready
                .entry((namespace.clone(), service.clone()))
                .or_default()
                .insert(name);
        }
        Some((namespace, service))
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<(String, String)> {
        let service = self.owner.remove(&(namespace.to_owned(), name.to_owned()))?;
        let key = (namespace.to_owned(), service);
        if let Some(set) = self.ready.get_mut(&key) {
            set.remove(name);
            if set.is_empty() {
                self.ready.remove(&key);
            }
        }
        Some(key)
    }
}

/// Reflector wiring for one resource of one member.
pub(super) struct WatchCtx {
    pub(super) member: String,
    pub(super) synced: Arc<[AtomicBool; 4]>,
    pub(super) watches: Arc<Mutex<[WatchHealth; 4]>>,
}

impl WatchCtx {
    pub(super) fn spawn<K>(
        &self,
        index: usize,
        api: Api<K>,
        writer: reflector::store::Writer<K>,
        slim: fn(&mut K),
        on_change: impl Fn(&K) + Send + 'static,
    ) -> JoinHandle<()>
    where
        K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        let store = writer.as_reader();
        tokio::spawn(async move {
            let ready_flag = synced.clone();
            tokio::spawn(async move {
                if store.wait_until_ready().await.is_ok() {
                    ready_flag[index].store(true, Ordering::Relaxed);
                }
            });
            // Memory proportional to what is used: keep only the fields the
            // controller reads (at 40,000 shards whole objects cost GiBs).
            let stream = reflector::reflector(
                writer,
                watcher(api, watcher::Config::default()).modify(move |o: &mut K| {
                    let meta = o.meta_mut();
                    meta.managed_fields = None;
                    meta.annotations = None;
                    meta.owner_references = None;
                    slim(o);
                }),
            )
            .backoff(member_backoff())
            .touched_objects();
            futures::pin_mut!(stream);
            while let Some(item) = stream.next().await {
                let mut health = watches.lock().unwrap_or_else(|e| e.into_inner());
                match item {
                    Ok(object) => {
                        health[index].last_ok = Some(Instant::now());
                        drop(health);
                        on_change(&object);
                    }
                    Err(e) => {
                        health[index].last_error = Some(Instant::now());
                        tracing::debug!(member = %member, error = %e, "member watch failed; retrying");
                    }
                }
            }
        })
    }

    /// EndpointSlices: a reflector plus the ready-slice index, kept from
    /// the raw watch events (a relist builds a new index and swaps it in).
    pub(super) fn spawn_slices(
        &self,
        api: Api<EndpointSlice>,
        writer: reflector::store::Writer<EndpointSlice>,
        index: Arc<RwLock<SliceIndex>>,
        queue: Queue,
    ) -> JoinHandle<()> {
        const SLOT: usize = 1;
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        tokio::spawn(async move {
            let stream = reflector::reflector(
                writer,
                watcher(api, watcher::Config::default()).modify(|slice: &mut EndpointSlice| {
                    slice.metadata.managed_fields = None;
                    slice.metadata.annotations = None;
                    slice.metadata.owner_references = None;
                    slim_slice(slice);
                }),
            )
            .backoff(member_backoff());
            futures::pin_mut!(stream);
            let mut pending: Option<SliceIndex> = None;
            while let Some(item) = stream.next().await {
                let event = match item {
                    Ok(event) => {
                        watches.lock().unwrap_or_else(|e| e.into_inner())[SLOT].last_ok = Some(Instant::now());
                        event
                    }
                    Err(e) => {
                        watches.lock().unwrap_or_else(|e| e.into_inner())[SLOT].last_error = Some(Instant::now());
                        tracing::debug!(member = %member, error = %e, "member watch failed; retrying");
                        continue;
                    }
                };
                match event {
                    watcher::Event::Init => pending = Some(SliceIndex::default()),
                    watcher::Event::InitApply(slice) => {
                        if let Some(p) = pending.as_mut() {
                            p.apply(&slice);
                        }
                    }
                    watcher::Event::InitDone => {
                        if let Some(p) = pending.take() {
                            let services: BTreeSet<(String, String)> =
                                p.owner.iter().map(|((ns, _), svc)| (ns.clone(), svc.clone())).collect();
                            *index.write().unwrap_or_else(|e| e.into_inner()) = p;
                            synced[SLOT].store(true, Ordering::Relaxed);
                            for (ns, svc) in services {
                                queue.push(RecordKey::Service(ns, svc));
                            }
                        }
                    }
                    watcher::Event::Apply(slice) => {
                        if let Some((ns, svc)) = index.write().unwrap_or_else(|e| e.into_inner()).apply(&slice) {
                            queue.push(RecordKey::Service(ns, svc));
                        }
                    }
                    watcher::Event::Delete(slice) => {
                        let ns = slice.metadata.namespace.clone().unwrap_or_default();
                        let name = slice.metadata.name.clone().unwrap_or_default();
                        if let Some((ns, svc)) = index.write().unwrap_or_else(|e| e.into_inner()).remove(&ns, &name) {
                            queue.push(RecordKey::Service(ns, svc));
                        }
                    }
                }
            }
        })
    }
}

/// Member API servers are often close by: retry within 2 s, so a
/// recovered cluster is watched again before its probes pass.
fn member_backoff() -> kube::runtime::watcher::ExponentialBackoff {
    kube::runtime::watcher::ExponentialBackoff::from(
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(2))
            .with_factor(2.0)
            .with_jitter()
            .without_max_times(),
    )
}

// What the controller reads of each kind; the rest is dropped on arrival.
pub(super) fn slim_service(service: &mut Service) {
    // The first port's number stays: a health check probes it by default.
    let first_port = service
        .spec
        .as_ref()
        .and_then(|spec| spec.ports.as_ref())
        .and_then(|ports| ports.first())
        .map(|port| port.port);
    service.spec = first_port.map(|port| k8s_openapi::api::core::v1::ServiceSpec {
        ports: Some(vec![k8s_openapi::api::core::v1::ServicePort {
            port,
            ..Default::default()
        }]),
        ..Default::default()
    });
    service.metadata.labels = None;
}

fn slim_slice(slice: &mut EndpointSlice) {
    slice.ports = None;
    for endpoint in &mut slice.endpoints {
        endpoint.addresses.clear();
        endpoint.target_ref = None;
        endpoint.hints = None;
        endpoint.deprecated_topology = None;
    }
    // Readiness is all that counts: one ready endpoint stands for the slice.
    let ready = slice
        .endpoints
        .iter()
        .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true));
    slice.endpoints.truncate(1);
    if let Some(first) = slice.endpoints.first_mut() {
        let conditions = first.conditions.get_or_insert_with(Default::default);
        conditions.ready = Some(ready);
    }
}

pub(super) fn slim_ingress(ingress: &mut Ingress) {
    ingress.spec = None;
    ingress.metadata.labels = None;
}

pub(super) fn slim_node(node: &mut Node) {
    node.spec = None;
    node.status = None;
}
