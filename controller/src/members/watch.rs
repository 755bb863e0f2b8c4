//! The watches of one member: compact caches of its Services and Ingresses
//! (`cache.rs`), the index of EndpointSlices with a ready endpoint, a
//! reflector of its Nodes (few, for the topology labels), and each stream's
//! last success and failure.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::reflector;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Resource, ResourceExt};
use tokio::task::JoinHandle;

use super::cache::{FactCache, Relist};
use crate::queue::Queue;

/// EndpointSlice label naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Last success and failure of one watch stream.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct WatchHealth {
    pub(super) last_ok: Option<Instant>,
    pub(super) last_error: Option<Instant>,
}

/// Objects per page of a member's initial list (and relists): 100 against
/// kube's default 500. Each page is one HTTP response, and the connection's
/// read buffer keeps the size of the largest response it read for as long
/// as the connection lives; with 500-object pages the member watches' buffers
/// held about 0.7 MiB per member at 2,000 Services each.
const MEMBER_LIST_PAGE: u32 = 100;

/// The watcher configuration of every member watch.
fn member_watch_config() -> watcher::Config {
    watcher::Config::default().page_size(MEMBER_LIST_PAGE)
}

/// Endpoints of EndpointSlices, counted per Service (ready, all), and
/// each slice's Service and counts (to undo them). Names are kept once
/// per namespace; a Service's name is shared by its two entries.
#[derive(Debug, Default)]
pub struct SliceIndex {
    /// namespace → Service → its endpoints (ready, all) over its slices
    /// (only Services with at least one endpoint).
    ready: HashMap<Box<str>, HashMap<Arc<str>, Counts>>,
    /// namespace → slice → (its Service, its counts).
    owner: HashMap<Box<str>, HashMap<Box<str>, SliceOwner>>,
}

/// Endpoints (ready, all).
type Counts = (u32, u32);

/// A slice's Service and its endpoint counts.
type SliceOwner = (Arc<str>, Counts);

/// The readiness rule of fedns's health, for one endpoint of an
/// EndpointSlice: its `conditions.ready`, where a missing condition means
/// ready (as the EndpointSlice API says). Member-side discovery uses the
/// same rule for its local-first answers.
pub fn endpoint_is_ready(endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> bool {
    endpoint.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true)
}

impl SliceIndex {
    /// Does Service `namespace/service` have a slice with a ready endpoint?
    pub fn is_ready(&self, namespace: &str, service: &str) -> bool {
        self.endpoints(namespace, service).0 > 0
    }

    /// The endpoints of Service `namespace/service` over its slices:
    /// (ready, all).
    pub fn endpoints(&self, namespace: &str, service: &str) -> (u32, u32) {
        self.ready
            .get(namespace)
            .and_then(|s| s.get(service))
            .copied()
            .unwrap_or_default()
    }

    fn apply(&mut self, slice: &EndpointSlice) -> Option<(String, String)> {
        let namespace = slice.metadata.namespace.as_deref().unwrap_or_default();
        let name = slice.metadata.name.as_deref().unwrap_or_default();
        self.remove(namespace, name);
        let service: Arc<str> = Arc::from(slice.labels().get(SERVICE_NAME_LABEL)?.as_str());
        let (ready, all) = endpoint_counts(slice);
        let key = (namespace.to_owned(), service.to_string());
        let shared = if all > 0 {
            // Share the Service's name with its counts when it has them.
            let counts = self.ready.entry(Box::from(namespace)).or_default();
            let shared = match counts.get_key_value(&*service) {
                Some((existing, _)) => existing.clone(),
                None => service,
            };
            let entry = counts.entry(shared.clone()).or_default();
            entry.0 = entry.0.saturating_add(ready);
            entry.1 = entry.1.saturating_add(all);
            shared
        } else {
            service
        };
        self.owner
            .entry(Box::from(namespace))
            .or_default()
            .insert(Box::from(name), (shared, (ready, all)));
        Some(key)
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<(String, String)> {
        let slices = self.owner.get_mut(namespace)?;
        let (service, (ready, all)) = slices.remove(name)?;
        if slices.is_empty() {
            self.owner.remove(namespace);
        }
        if all > 0 {
            if let Some(counts) = self.ready.get_mut(namespace) {
                if let Some(count) = counts.get_mut(&*service) {
                    count.0 = count.0.saturating_sub(ready);
                    count.1 = count.1.saturating_sub(all);
                    if count.1 == 0 {
                        counts.remove(&*service);
                    }
                }
                if counts.is_empty() {
                    self.ready.remove(namespace);
                }
            }
        }
        Some((namespace.to_owned(), service.to_string()))
    }

    /// Every Service some slice names.
    fn services(&self) -> BTreeSet<(String, String)> {
        self.owner
            .iter()
            .flat_map(|(ns, slices)| slices.values().map(move |(svc, _)| (ns.to_string(), svc.to_string())))
            .collect()
    }
}

/// Reflector wiring for one resource of one member.
pub(super) struct WatchCtx {
    pub(super) member: String,
    pub(super) synced: Arc<[AtomicBool; 4]>,
    pub(super) watches: Arc<Mutex<[WatchHealth; 4]>>,
    /// Where every record is queued again once the member is synced.
    pub(super) queue: Queue,
}

/// Marks the kind in slot `index` as listed. When that makes the member
/// synced (every kind listed), every record is queued again: a record
/// reconciled before then kept this member's last published state, and
/// the kind listed last may have touched no record of its own (a member
/// with no Ingresses), so nothing else would redo them.
fn mark_synced(synced: &[AtomicBool; 4], index: usize, queue: &Queue) {
    let was = synced[index].swap(true, Ordering::AcqRel);
    if !was && synced.iter().all(|s| s.load(Ordering::Acquire)) {
        queue.push_all();
    }
}

impl WatchCtx {
    /// A reflector store of whole objects less what `slim` drops: for
    /// Nodes, a few per member (a per-Service kind uses [`Self::spawn_facts`]).
    /// `version` goes up by one after each watch event has been applied to
    /// the store (a relist's end, which can drop objects, included), so a
    /// value worked out from the store can be kept until it moves.
    pub(super) fn spawn<K>(
        &self,
        index: usize,
        api: Api<K>,
        writer: reflector::store::Writer<K>,
        slim: fn(&mut K),
        version: Arc<AtomicU64>,
    ) -> JoinHandle<()>
    where
        K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        let store = writer.as_reader();
        let queue = self.queue.clone();
        tokio::spawn(async move {
            let ready_flag = synced.clone();
            tokio::spawn(async move {
                if fedns_providers::source::ready::store_ready(&store).await {
                    mark_synced(&ready_flag, index, &queue);
                }
            });
            // Memory proportional to what is used: keep only the fields the
            // controller reads (at 40,000 shards whole objects cost GiBs).
            let stream = reflector::reflector(
                writer,
                watcher(api, member_watch_config()).modify(move |o: &mut K| {
                    let meta = o.meta_mut();
                    meta.managed_fields = None;
                    meta.annotations = None;
                    meta.owner_references = None;
                    slim(o);
                }),
            )
            .backoff(member_backoff());
            futures::pin_mut!(stream);
            while let Some(item) = stream.next().await {
                let mut health = watches.lock().unwrap_or_else(|e| e.into_inner());
                match item {
                    Ok(_) => {
                        health[index].last_ok = Some(Instant::now());
                        drop(health);
                        // The reflector applied the event before yielding it.
                        version.fetch_add(1, Ordering::Release);
                    }
                    Err(e) => {
                        health[index].last_error = Some(Instant::now());
                        tracing::debug!(member = %member, error = %e, "member watch failed; retrying");
                    }
                }
            }
        })
    }

    /// A compact cache (Services, Ingresses): of each object only
    /// `facts(object)`, kept from the raw watch events with a reflector's
    /// semantics (a relist builds a new map and swaps it in once complete;
    /// the kind counts as synced from its first complete list). Every
    /// object whose facts an event or a relist changed (new, different or
    /// deleted) is passed to `on_change` as (namespace, name); an event
    /// that changes nothing fedns reads requeues no record.
    pub(super) fn spawn_facts<K, T>(
        &self,
        index: usize,
        api: Api<K>,
        cache: Arc<FactCache<T>>,
        facts: fn(&K) -> T,
        on_change: impl Fn(String, String) + Send + 'static,
    ) -> JoinHandle<()>
    where
        K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
        T: Clone + PartialEq + Send + Sync + 'static,
    {
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        let queue = self.queue.clone();
        tokio::spawn(async move {
            let stream = watcher(api, member_watch_config()).backoff(member_backoff());
            futures::pin_mut!(stream);
            let mut pending: Option<Relist<T>> = None;
            while let Some(item) = stream.next().await {
                let event = match item {
                    Ok(event) => {
                        watches.lock().unwrap_or_else(|e| e.into_inner())[index].last_ok = Some(Instant::now());
                        event
                    }
                    Err(e) => {
                        watches.lock().unwrap_or_else(|e| e.into_inner())[index].last_error = Some(Instant::now());
                        tracing::debug!(member = %member, error = %e, "member watch failed; retrying");
                        continue;
                    }
                };
                let id = |o: &K| {
                    let meta = o.meta();
                    (
                        meta.namespace.clone().unwrap_or_default(),
                        meta.name.clone().unwrap_or_default(),
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
                        if let Some(p) = pending.take() {
                            let touched = cache.replace(p);
                            mark_synced(&synced, index, &queue);
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
        })
    }

    /// EndpointSlices: only the ready-slice index, kept from the raw watch
    /// events (a relist builds a new index and swaps it in). No copy of the
    /// slices is kept: nothing reads them, and at 40,000 shards that copy
    /// was a quarter of the controller's memory. `on_change(namespace,
    /// service)` is called for each Service whose readiness may have changed.
    pub(super) fn spawn_slices(
        &self,
        api: Api<EndpointSlice>,
        index: Arc<RwLock<SliceIndex>>,
        queue: Queue,
        on_change: impl Fn(String, String) + Send + 'static,
    ) -> JoinHandle<()> {
        const SLOT: usize = 1;
        let member = self.member.clone();
        let synced = self.synced.clone();
        let watches = self.watches.clone();
        tokio::spawn(async move {
            let stream = watcher(api, member_watch_config())
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
                            // The Services named before or after the relist:
                            // one gone while the watch was down changes too.
                            let mut services = p.services();
                            let old = std::mem::replace(&mut *index.write().unwrap_or_else(|e| e.into_inner()), p);
                            services.extend(old.services());
                            drop(old);
                            mark_synced(&synced, SLOT, &queue);
                            for (ns, svc) in services {
                                on_change(ns, svc);
                            }
                        }
                    }
                    watcher::Event::Apply(slice) => {
                        let changed = index.write().unwrap_or_else(|e| e.into_inner()).apply(&slice);
                        if let Some((ns, svc)) = changed {
                            on_change(ns, svc);
                        }
                    }
                    watcher::Event::Delete(slice) => {
                        let ns = slice.metadata.namespace.clone().unwrap_or_default();
                        let name = slice.metadata.name.clone().unwrap_or_default();
                        let changed = index.write().unwrap_or_else(|e| e.into_inner()).remove(&ns, &name);
                        if let Some((ns, svc)) = changed {
                            on_change(ns, svc);
                        }
                    }
                }
            }
        })
    }
}

/// Member API servers are often close by: retry within 2 s (1 s doubled
/// at most by the jitter), so a recovered cluster is watched again before
/// its probes pass.
fn member_backoff() -> WatchBackoff {
    WatchBackoff::new(
        backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(1))
            .with_factor(2.0)
            .with_jitter()
            .without_max_times(),
    )
}

/// A watch stream's backoff that grows while its lists keep failing.
///
/// kube's `StreamBackoff` resets the backoff on every `Ok` item, and the
/// watcher yields `Ok(Event::Init)` before each list, before the list is
/// even sent: a watch whose list kept failing (its member down, a kind
/// it does not serve, a 403) was retried at the shortest delay, 5 to 10
/// times a second for as long as it failed, each retry to a member that
/// is down a new connection (a new CONNECT tunnel through a
/// `proxyURL`). Here a reset is taken only from the second `Ok` in a row
/// after a failure: a list that succeeds yields `Init` and then its
/// objects or `InitDone`, a lone `Init` between failures is no success.
pub(super) struct WatchBackoff {
    inner: watcher::ExponentialBackoff,
    /// `Ok` items since the last failure (2 at most).
    oks: u8,
}

impl WatchBackoff {
    /// This backoff over `builder`'s delays.
    pub(super) fn new(builder: backon::ExponentialBuilder) -> Self {
        WatchBackoff {
            inner: watcher::ExponentialBackoff::from(builder),
            oks: 0,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    /// The delay after a failure.
    fn next(&mut self) -> Option<Duration> {
        self.oks = 0;
        self.inner.next()
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    /// An `Ok` item: a reset from the second in a row.
    fn reset(&mut self) {
        self.oks = self.oks.saturating_add(1).min(2);
        if self.oks >= 2 {
            kube::runtime::utils::Backoff::reset(&mut self.inner);
        }
    }
}

// What the controller reads of each kind; the rest is dropped on arrival.
fn slim_slice(slice: &mut EndpointSlice) {
    slice.ports = None;
    // Only the counts of endpoints (ready, all) are read: they replace
    // the endpoints, in an annotation of this in-memory copy
    // ([`ENDPOINT_COUNTS`]; its other annotations are already dropped).
    let all = slice.endpoints.len();
    let ready = slice.endpoints.iter().filter(|e| endpoint_is_ready(e)).count();
    slice.endpoints = Vec::new();
    slice.metadata.annotations = Some([(ENDPOINT_COUNTS.to_owned(), format!("{ready},{all}"))].into());
}

/// The annotation [`slim_slice`] leaves on its copy of a slice:
/// `<ready>,<all>` endpoints. Never written to an API server.
const ENDPOINT_COUNTS: &str = "fedns.internal/endpoint-counts";

/// A slice's endpoints (ready, all): from [`ENDPOINT_COUNTS`] on a slimmed
/// copy, else counted.
fn endpoint_counts(slice: &EndpointSlice) -> (u32, u32) {
    let counted = slice
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ENDPOINT_COUNTS))
        .and_then(|v| v.split_once(','))
        .and_then(|(ready, all)| Some((ready.parse().ok()?, all.parse().ok()?)));
    counted.unwrap_or_else(|| {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        (
            count(slice.endpoints.iter().filter(|e| endpoint_is_ready(e)).count()),
            count(slice.endpoints.len()),
        )
    })
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
            watcher(api, member_watch_config()).modify(|o: &mut kube::api::DynamicObject| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions};

    /// Issue #58: the watcher's `Init` (yielded before every list) reset
    /// the backoff, so a list failing for ever was retried at the shortest
    /// delay. Now only a success resets it.
    #[test]
    fn a_lone_init_between_failures_does_not_reset_the_backoff() {
        use kube::runtime::utils::Backoff;
        let mut backoff = WatchBackoff::new(
            backon::ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(100))
                .with_max_delay(Duration::from_secs(1))
                .with_factor(2.0)
                .without_max_times(),
        );
        let mut delays = Vec::new();
        for _ in 0..6 {
            delays.push(backoff.next().unwrap().as_millis());
            backoff.reset(); // Init: the next list is about to be sent
        }
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        // A list that succeeds: Init, then its objects (or InitDone).
        backoff.reset();
        assert_eq!(backoff.next().unwrap().as_millis(), 100, "a success resets it");
    }

    fn slice(name: &str, service: Option<&str>, ready: Option<bool>) -> EndpointSlice {
        let mut slice = EndpointSlice::default();
        slice.metadata.namespace = Some("ns".into());
        slice.metadata.name = Some(name.into());
        slice.metadata.labels = service.map(|s| [(SERVICE_NAME_LABEL.to_owned(), s.to_owned())].into());
        slice.endpoints = vec![Endpoint {
            conditions: Some(EndpointConditions {
                ready,
                ..Default::default()
            }),
            ..Default::default()
        }];
        slice
    }

    #[test]
    fn slice_index_counts_ready_slices_per_service() {
        let mut index = SliceIndex::default();
        let key = Some(("ns".to_owned(), "web".to_owned()));
        assert_eq!(index.apply(&slice("web-a", Some("web"), Some(true))), key);
        // A missing `ready` condition means ready.
        assert_eq!(index.apply(&slice("web-b", Some("web"), None)), key);
        assert!(index.is_ready("ns", "web"));
        assert!(!index.is_ready("other", "web"));
        assert_eq!(index.endpoints("ns", "web"), (2, 2));
        // One slice turns not ready: the other still counts.
        index.apply(&slice("web-a", Some("web"), Some(false)));
        assert!(index.is_ready("ns", "web"));
        assert_eq!(index.endpoints("ns", "web"), (1, 2));
        assert_eq!(index.remove("ns", "web-b"), key);
        assert!(!index.is_ready("ns", "web"));
        assert_eq!(index.endpoints("ns", "web"), (0, 1));
        // The slimmed copy the watch keeps counts the same.
        let mut three = slice("web-c", Some("web"), Some(true));
        three.endpoints.push(three.endpoints[0].clone());
        three.endpoints.push(Endpoint {
            conditions: Some(EndpointConditions {
                ready: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        });
        slim_slice(&mut three);
        assert!(three.endpoints.is_empty());
        index.apply(&three);
        assert_eq!(index.endpoints("ns", "web"), (2, 4));
        index.remove("ns", "web-c");
        // A not-ready slice still names its Service (a relist queues it).
        assert_eq!(index.services(), [("ns".to_owned(), "web".to_owned())].into());
        // A slice moved to another Service leaves the first.
        index.apply(&slice("web-a", Some("api"), Some(true)));
        assert!(index.is_ready("ns", "api"));
        assert_eq!(index.services(), [("ns".to_owned(), "api".to_owned())].into());
        // A slice without the service-name label is dropped.
        assert_eq!(index.apply(&slice("web-a", None, Some(true))), None);
        assert!(!index.is_ready("ns", "api"));
        assert!(index.services().is_empty());
        assert_eq!(index.remove("ns", "never"), None);
        assert!(index.ready.is_empty() && index.owner.is_empty());
    }
}
