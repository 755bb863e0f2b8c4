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

    /// EndpointSlices: only the ready-slice index, kept from the raw watch
    /// events (a relist builds a new index and swaps it in). No copy of the
    /// slices is kept: nothing reads them, and at 40,000 shards that copy
    /// was a quarter of the controller's memory.
    pub(super) fn spawn_slices(
        &self,
        api: Api<EndpointSlice>,
        index: Arc<RwLock<SliceIndex>>,
        queue: Queue,
    ) -> JoinHandle<()> {
        const SLOT: usize = 1;
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        tokio::spawn(async move {
            let stream = watcher(api, watcher::Config::default())
                .modify(|slice: &mut EndpointSlice| {
                    slice.metadata.managed_fields = None;
                    slice.metadata.annotations = None;
                    slice.metadata.owner_references = None;
                    slim_slice(slice);
                })
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
    // So is the type: an MCS ServiceExport makes a record only for a LoadBalancer Service.
    let type_ = service.spec.as_ref().and_then(|spec| spec.type_.clone());
    service.spec = first_port.map(|port| k8s_openapi::api::core::v1::ServiceSpec {
        ports: Some(vec![k8s_openapi::api::core::v1::ServicePort {
            port,
            ..Default::default()
        }]),
        type_: type_.clone(),
        ..Default::default()
    });
    if service.spec.is_none() && type_.is_some() {
        service.spec = Some(k8s_openapi::api::core::v1::ServiceSpec {
            type_,
            ..Default::default()
        });
    }
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

/// The MCS ServiceExport resource (`multicluster.x-k8s.io/v1alpha1`, KEP-1645).
pub fn service_export_resource() -> kube::discovery::ApiResource {
    kube::discovery::ApiResource {
        group: "multicluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "multicluster.x-k8s.io/v1alpha1".into(),
        kind: "ServiceExport".into(),
        plural: "serviceexports".into(),
    }
}

/// Watches a member's ServiceExports: a store of their metadata, a flag
/// set once they are listed (or the member has no such kind: 404), and
/// `changed` woken on every change. Not one of the member's health watches.
pub(super) fn spawn_service_exports(
    member: String,
    client: kube::Client,
    changed: std::sync::Arc<tokio::sync::Notify>,
) -> (
    reflector::Store<kube::api::DynamicObject>,
    Arc<AtomicBool>,
    JoinHandle<()>,
) {
    let resource = service_export_resource();
    let api: Api<kube::api::DynamicObject> = Api::all_with(client, &resource);
    let writer = reflector::store::Writer::new(resource);
    let store = writer.as_reader();
    let listed = Arc::new(AtomicBool::new(false));
    let flag = listed.clone();
    let task = tokio::spawn(async move {
        let stream = reflector::reflector(
            writer,
            watcher(api, watcher::Config::default()).modify(|o: &mut kube::api::DynamicObject| {
                o.metadata.managed_fields = None;
                o.data = serde_json::Value::Null;
            }),
        )
        .backoff(member_backoff());
        futures::pin_mut!(stream);
        let mut missing_logged = false;
        while let Some(item) = stream.next().await {
            match item {
                Ok(watcher::Event::InitDone) => {
                    flag.store(true, Ordering::Relaxed);
                    changed.notify_one();
                }
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => changed.notify_one(),
                Ok(_) => {}
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) if status.code == 404 => {
                    // No MCS API in this member: nothing is exported.
                    if !flag.swap(true, Ordering::Relaxed) {
                        changed.notify_one();
                    }
                    if !missing_logged {
                        tracing::info!(member = %member, "no ServiceExport kind (multicluster.x-k8s.io/v1alpha1) in this member");
                        missing_logged = true;
                    }
                }
                Err(e) => tracing::debug!(member = %member, error = %e, "ServiceExport watch failed; retrying"),
            }
        }
    });
    (store, listed, task)
}
