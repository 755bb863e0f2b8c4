//! The member registry: one kube client and one set of reflectors
//! (Services, EndpointSlices, Ingresses, Nodes) per MemberCluster, a
//! health prober per member, and the MemberCluster status.
//!
//! A member's connection (endpoint, CA, credentials) is fingerprinted; a
//! changed spec or Secret rebuilds the client and its watches. Anything
//! else (cordon, topology overrides, probe settings) is applied in place.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use fedns_api::conditions;
use fedns_api::{MemberCluster, MemberClusterSpec, MemberClusterStatus};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Config, Resource, ResourceExt};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use serde_json::json;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::metrics::ControllerMetrics;
use crate::records::queue::{Queue, RecordKey};

/// Node labels giving a cluster's region and zone, newest first.
const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];
const ZONE_LABELS: [&str; 2] = ["topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"];
/// EndpointSlice label naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Condition reporting a member without a region (it serves the global
/// name only).
pub const TOPOLOGY_CONDITION: &str = "TopologyKnown";

/// Why a member is not Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Ready (probes pass, thresholds met).
    pub ready: bool,
    /// Condition reason.
    pub reason: String,
    /// Condition message.
    pub message: String,
}

/// Settings applied without rebuilding the client.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    cordoned: bool,
    region: Option<String>,
    zones: Vec<String>,
    period: Duration,
    timeout: Duration,
    failure_threshold: u32,
    success_threshold: u32,
}

impl Settings {
    fn from_spec(spec: &MemberClusterSpec) -> Self {
        let hc = &spec.health_check;
        let secs = |s: i32| Duration::from_secs(u64::try_from(s.max(1)).unwrap_or(1));
        Settings {
            cordoned: spec.cordoned,
            region: spec.region.clone(),
            zones: spec.zones.clone(),
            period: secs(hc.period_seconds),
            timeout: secs(hc.timeout_seconds),
            failure_threshold: u32::try_from(hc.failure_threshold.max(1)).unwrap_or(1),
            success_threshold: u32::try_from(hc.success_threshold.max(1)).unwrap_or(1),
        }
    }
}

/// Last success and failure of one watch stream.
#[derive(Debug, Default, Clone, Copy)]
struct WatchHealth {
    last_ok: Option<Instant>,
    last_error: Option<Instant>,
}

/// One member's live state.
pub struct Member {
    /// MemberCluster name.
    pub name: String,
    /// Its Services.
    pub services: Store<Service>,
    /// Its EndpointSlices.
    pub slices: Store<EndpointSlice>,
    /// Its Ingresses.
    pub ingresses: Store<Ingress>,
    /// Its Nodes.
    pub nodes: Store<Node>,
    healthy: AtomicBool,
    /// EndpointSlices with a ready endpoint, by Service: (namespace,
    /// service) → ready slice names. Kept from the watch events.
    ready_slices: Arc<RwLock<SliceIndex>>,
    synced: Arc<[AtomicBool; 4]>,
    watches: Arc<Mutex<[WatchHealth; 4]>>,
    settings: watch::Sender<Settings>,
    fingerprint: u64,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        for task in self.tasks.get_mut().unwrap_or_else(|e| e.into_inner()).iter() {
            task.abort();
        }
    }
}

/// Ready EndpointSlices per Service, and each slice's Service (to undo it).
#[derive(Debug, Default)]
pub struct SliceIndex {
    ready: std::collections::HashMap<(String, String), BTreeSet<String>>,
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

impl Member {
    /// Does Service `namespace/service` have an EndpointSlice with a ready
    /// endpoint (a missing `ready` condition means ready, per the API)?
    pub fn has_ready_endpoints(&self, namespace: &str, service: &str) -> bool {
        self.ready_slices
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .ready
            .contains_key(&(namespace.to_owned(), service.to_owned()))
    }

    /// Ready and not cordoned: its shards go into DNS.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// Every reflector has completed its first list.
    pub fn is_synced(&self) -> bool {
        self.synced.iter().all(|s| s.load(Ordering::Relaxed))
    }

    /// Effective region and zones: spec overrides, else Node labels.
    pub fn topology(&self) -> (Option<String>, Vec<String>) {
        let settings = self.settings.borrow().clone();
        effective_topology(&settings.region, &settings.zones, &self.nodes.state())
    }

    /// Every watch stream has failed within `window`. A failing watch
    /// retries (and fails again) at least every 2 s, while a healthy one
    /// that resumed quietly emits nothing, so recent errors are the signal.
    fn all_watches_failing(&self, window: Duration) -> bool {
        let now = Instant::now();
        let watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.iter().all(|w| match w.last_error {
            Some(error) => now.duration_since(error) < window && w.last_ok.is_none_or(|ok| ok < error),
            None => false,
        })
    }
}

/// Effective region and zones (DESIGN.md: spec override, else
/// `topology.kubernetes.io/*` Node labels, else the legacy
/// `failure-domain.beta.kubernetes.io/*`).
pub fn effective_topology(
    region: &Option<String>,
    zones: &[String],
    nodes: &[Arc<Node>],
) -> (Option<String>, Vec<String>) {
    let label = |keys: &[&str], node: &Node| -> Option<String> {
        let labels = node.metadata.labels.as_ref()?;
        keys.iter()
            .find_map(|k| labels.get(*k).filter(|v| !v.is_empty()).cloned())
    };
    let region = region.clone().or_else(|| {
        let mut found: BTreeMap<String, usize> = BTreeMap::new();
        for node in nodes {
            if let Some(r) = label(&REGION_LABELS, node) {
                *found.entry(r).or_default() += 1;
            }
        }
        // Several regions in one cluster: the most common one.
        found
            .into_iter()
            .max_by_key(|(r, n)| (*n, std::cmp::Reverse(r.clone())))
            .map(|(r, _)| r)
    });
    let zones = if zones.is_empty() {
        let set: BTreeSet<String> = nodes.iter().filter_map(|n| label(&ZONE_LABELS, n)).collect();
        set.into_iter().collect()
    } else {
        zones.to_vec()
    };
    (region, zones)
}

/// Shared context of the registry.
pub struct Registry {
    members: RwLock<BTreeMap<String, Arc<Member>>>,
    failures: Mutex<BTreeMap<String, String>>,
    queue: Queue,
    host: Client,
    namespace: String,
    leader: watch::Receiver<bool>,
    recorder: Recorder,
    metrics: Arc<ControllerMetrics>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry writing MemberCluster status in `namespace`.
    pub fn new(
        host: Client,
        namespace: String,
        queue: Queue,
        leader: watch::Receiver<bool>,
        recorder: Recorder,
        metrics: Arc<ControllerMetrics>,
    ) -> Arc<Registry> {
        Arc::new(Registry {
            members: RwLock::new(BTreeMap::new()),
            failures: Mutex::new(BTreeMap::new()),
            queue,
            host,
            namespace,
            leader,
            recorder,
            metrics,
        })
    }

    /// Every running member.
    pub fn members(&self) -> Vec<Arc<Member>> {
        self.members
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// Reconciles the running members with the MemberCluster objects and
    /// their Secrets, until the process ends.
    pub async fn run(self: Arc<Self>, clusters: Store<MemberCluster>, secrets: Store<Secret>, changed: Arc<Notify>) {
        loop {
            self.sync(&clusters, &secrets).await;
            changed.notified().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn sync(self: &Arc<Self>, clusters: &Store<MemberCluster>, secrets: &Store<Secret>) {
        let wanted: BTreeMap<String, Arc<MemberCluster>> =
            clusters.state().into_iter().map(|c| (c.name_any(), c)).collect();
        // Members that went away.
        let removed: Vec<String> = {
            let mut members = self.members.write().unwrap_or_else(|e| e.into_inner());
            let gone: Vec<String> = members.keys().filter(|n| !wanted.contains_key(*n)).cloned().collect();
            for name in &gone {
                members.remove(name);
            }
            gone
        };
        if !removed.is_empty() {
            tracing::info!(members = ?removed, "member clusters removed");
            self.queue.push_all();
        }
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|n, _| wanted.contains_key(n));

        for (name, cluster) in wanted {
            let secret = cluster
                .spec
                .secret_ref
                .as_ref()
                .and_then(|r| secrets.state().into_iter().find(|s| s.name_any() == r.name));
            let fingerprint = connection_fingerprint(&cluster.spec, secret.as_deref());
            let existing = self
                .members
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&name)
                .cloned();
            match existing {
                Some(member) if member.fingerprint == fingerprint => {
                    let settings = Settings::from_spec(&cluster.spec);
                    member.settings.send_if_modified(|s| {
                        let changed = *s != settings;
                        *s = settings;
                        changed
                    });
                }
                _ => match build_client(&cluster.spec, secret.as_deref()).await {
                    Ok(client) => {
                        let member = self.start_member(&cluster, client, fingerprint);
                        self.members
                            .write()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(name.clone(), member);
                        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                        tracing::info!(member = %name, endpoint = %cluster.spec.api_endpoint, "member cluster connected");
                        self.queue.push_all();
                    }
                    Err(message) => {
                        let was_running = self
                            .members
                            .write()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&name)
                            .is_some();
                        if was_running {
                            self.queue.push_all();
                        }
                        let first = self
                            .failures
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(name.clone(), message.clone())
                            .as_ref()
                            != Some(&message);
                        if first {
                            tracing::warn!(member = %name, "{message}");
                            self.write_status(
                                &cluster,
                                &Health {
                                    ready: false,
                                    reason: conditions::AUTH_FAILED.into(),
                                    message: message.clone(),
                                },
                                None,
                                None,
                                true,
                            )
                            .await;
                            self.event(&cluster, EventType::Warning, conditions::AUTH_FAILED, &message)
                                .await;
                        }
                    }
                },
            }
        }
        self.update_member_gauges();
    }

    fn update_member_gauges(&self) {
        let members = self.members();
        let ready = members.iter().filter(|m| m.is_healthy()).count();
        let failed = self.failures.lock().unwrap_or_else(|e| e.into_inner()).len();
        self.metrics.set_members(ready, members.len() - ready + failed);
    }

    fn start_member(self: &Arc<Self>, cluster: &MemberCluster, client: Client, fingerprint: u64) -> Arc<Member> {
        let name = cluster.name_any();
        let (services, services_writer) = reflector::store();
        let (slices, slices_writer) = reflector::store();
        let (ingresses, ingresses_writer) = reflector::store();
        let (nodes, nodes_writer) = reflector::store();
        let synced: Arc<[AtomicBool; 4]> = Arc::new(Default::default());
        let watches: Arc<Mutex<[WatchHealth; 4]>> = Arc::new(Mutex::new(Default::default()));
        let queue = self.queue.clone();
        let mut tasks = Vec::new();
        let ctx = WatchCtx {
            member: name.clone(),
            synced: synced.clone(),
            watches: watches.clone(),
        };
        tasks.push(
            ctx.spawn(0, Api::<Service>::all(client.clone()), services_writer, slim_service, {
                let queue = queue.clone();
                move |svc: &Service| queue.push(RecordKey::Service(svc.namespace().unwrap_or_default(), svc.name_any()))
            }),
        );
        let ready_slices: Arc<RwLock<SliceIndex>> = Arc::default();
        tasks.push(ctx.spawn_slices(
            Api::<EndpointSlice>::all(client.clone()),
            slices_writer,
            ready_slices.clone(),
            queue.clone(),
        ));
        tasks.push(ctx.spawn(
            2,
            Api::<Ingress>::all(client.clone()),
            ingresses_writer,
            slim_ingress,
            {
                let queue = queue.clone();
                move |ing: &Ingress| queue.push(RecordKey::Ingress(ing.namespace().unwrap_or_default(), ing.name_any()))
            },
        ));
        tasks.push(ctx.spawn(
            3,
            Api::<Node>::all(client.clone()),
            nodes_writer,
            slim_node,
            |_: &Node| {},
        ));

        // Start from the last persisted state, so a controller restart
        // does not take healthy clusters out of DNS while probes warm up.
        let persisted_ready = cluster
            .status
            .as_ref()
            .is_some_and(|s| conditions::is_true(&s.conditions, conditions::READY));
        let settings = Settings::from_spec(&cluster.spec);
        let (settings_tx, _) = watch::channel(settings.clone());
        let member = Arc::new(Member {
            name: name.clone(),
            services,
            slices,
            ingresses,
            nodes,
            healthy: AtomicBool::new(persisted_ready && !settings.cordoned),
            ready_slices,
            synced,
            watches,
            settings: settings_tx,
            fingerprint,
            tasks: Mutex::new(tasks),
        });
        let prober =
            tokio::spawn(
                self.clone()
                    .probe_loop(Arc::downgrade(&member), client, cluster.clone(), persisted_ready),
            );
        // The member owns its prober too: dropping the member stops it.
        member.tasks.lock().unwrap_or_else(|e| e.into_inner()).push(prober);
        member
    }
}

// What the controller reads of each kind; the rest is dropped on arrival.
fn slim_service(service: &mut Service) {
    service.spec = None;
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

fn slim_ingress(ingress: &mut Ingress) {
    ingress.spec = None;
    ingress.metadata.labels = None;
}

fn slim_node(node: &mut Node) {
    node.spec = None;
    node.status = None;
}

impl WatchCtx {
    /// EndpointSlices: a reflector plus the ready-slice index, kept from
    /// the raw watch events (a relist builds a new index and swaps it in).
    fn spawn_slices(
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

/// Reflector wiring for one resource of one member.
struct WatchCtx {
    member: String,
    synced: Arc<[AtomicBool; 4]>,
    watches: Arc<Mutex<[WatchHealth; 4]>>,
}

impl WatchCtx {
    fn spawn<K>(
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
}

impl Registry {
    async fn probe_loop(
        self: Arc<Self>,
        member: std::sync::Weak<Member>,
        client: Client,
        cluster: MemberCluster,
        persisted_ready: bool,
    ) {
        let name = cluster.name_any();
        let mut ready = persisted_ready;
        let (mut successes, mut failures) = (0u32, 0u32);
        let mut version: Option<String> = cluster.status.as_ref().and_then(|s| s.kubernetes_version.clone());
        let mut last = (None::<Health>, None::<(Option<String>, Vec<String>)>, false);
        let mut last_write = Instant::now() - Duration::from_secs(3600);
        let mut was_leader = false;
        loop {
            let Some(member) = member.upgrade() else { return };
            let settings = member.settings.borrow().clone();
            let started = Instant::now();
            let mut outcome = probe(&client, settings.timeout).await;
            self.metrics.observe_probe(&name, started.elapsed());
            let window = settings.period + Duration::from_secs(3);
            if outcome.is_ok() && member.all_watches_failing(window) {
                outcome = Err((
                    conditions::CLUSTER_NOT_REACHABLE,
                    "every watch stream of this cluster is failing".to_owned(),
                ));
            }
            match &outcome {
                Ok(()) => {
                    successes += 1;
                    failures = 0;
                    if !ready && successes >= settings.success_threshold {
                        ready = true;
                    }
                    if version.is_none() {
                        version = client.apiserver_version().await.ok().map(|v| v.git_version);
                    }
                }
                Err(_) => {
                    failures += 1;
                    successes = 0;
                    if ready && failures >= settings.failure_threshold {
                        ready = false;
                    }
                }
            }
            let health = match (&outcome, ready, settings.cordoned) {
                (_, _, true) => Health {
                    ready: false,
                    reason: conditions::CORDONED.into(),
                    message: "spec.cordoned is true: drained from DNS".into(),
                },
                (Ok(()), true, false) => Health {
                    ready: true,
                    reason: conditions::CLUSTER_READY.into(),
                    message: "/readyz answers ok".into(),
                },
                (Ok(()), false, false) => Health {
                    ready: false,
                    reason: conditions::CLUSTER_NOT_READY.into(),
                    message: format!(
                        "{successes} of {} successful probes needed to become Ready",
                        settings.success_threshold
                    ),
                },
                (Err((reason, message)), _, false) => Health {
                    ready: ready && !settings.cordoned,
                    reason: if ready {
                        conditions::CLUSTER_READY.into()
                    } else {
                        (*reason).into()
                    },
                    message: if ready {
                        format!(
                            "probe failed ({failures} of {} before not Ready): {message}",
                            settings.failure_threshold
                        )
                    } else {
                        message.clone()
                    },
                },
            };
            let healthy = health.ready;
            let topology = member.topology();
            let changed_health = member.healthy.swap(healthy, Ordering::Relaxed) != healthy;
            if changed_health {
                tracing::info!(member = %name, ready = healthy, reason = %health.reason, "{}", health.message);
                self.queue.push_all();
                self.update_member_gauges();
            }
            let topology_changed = last.1.as_ref() != Some(&topology);
            if topology_changed && last.1.is_some() {
                self.queue.push_all();
            }
            let leader = self.is_leader();
            let health_changed =
                last.0.as_ref().map(|h| (&h.ready, &h.reason)) != Some((&health.ready, &health.reason));
            let due = last_write.elapsed() >= Duration::from_secs(10);
            if leader && (health_changed || topology_changed || due || !was_leader || last.2 != version.is_some()) {
                if let Some(current) = self.current_cluster(&name).await {
                    if health_changed && last.0.is_some() {
                        let kind = if health.ready {
                            EventType::Normal
                        } else {
                            EventType::Warning
                        };
                        self.event(&current, kind, &health.reason, &health.message).await;
                    }
                    self.write_status(&current, &health, Some(topology.clone()), version.clone(), false)
                        .await;
                    last_write = Instant::now();
                }
            }
            was_leader = leader;
            last = (Some(health), Some(topology), version.is_some());
            drop(member);
            let elapsed = started.elapsed();
            tokio::time::sleep(settings.period.saturating_sub(elapsed)).await;
        }
    }

    async fn current_cluster(&self, name: &str) -> Option<MemberCluster> {
        Api::<MemberCluster>::namespaced(self.host.clone(), &self.namespace)
            .get(name)
            .await
            .ok()
    }

    async fn write_status(
        &self,
        cluster: &MemberCluster,
        health: &Health,
        topology: Option<(Option<String>, Vec<String>)>,
        version: Option<String>,
        force: bool,
    ) {
        if !self.is_leader() && !force {
            return;
        }
        if !self.is_leader() {
            return;
        }
        let mut status = cluster.status.clone().unwrap_or_default();
        let generation = cluster.metadata.generation;
        conditions::set(
            &mut status.conditions,
            conditions::READY,
            health.ready,
            &health.reason,
            &health.message,
            generation,
        );
        if let Some((region, zones)) = topology {
            match &region {
                Some(r) => conditions::set(&mut status.conditions, TOPOLOGY_CONDITION, true, "RegionKnown", &format!("region {r}"), generation),
                None => conditions::set(
                    &mut status.conditions,
                    TOPOLOGY_CONDITION,
                    false,
                    "NoRegion",
                    "no region: set spec.region or label the Nodes with topology.kubernetes.io/region; the cluster serves the global name only",
                    generation,
                ),
            };
            status.region = region;
            status.zones = zones;
        }
        if version.is_some() {
            status.kubernetes_version = version;
        }
        status.last_probe_time = Some(Time(jiff::Timestamp::now()));
        status.observed_generation = generation;
        let patch = json!({"status": status_json(&status)});
        let api: Api<MemberCluster> = Api::namespaced(self.host.clone(), &self.namespace);
        if let Err(e) = api
            .patch_status(&cluster.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(member = %cluster.name_any(), error = %e, "cannot write MemberCluster status");
        }
    }

    async fn event(&self, cluster: &MemberCluster, kind: EventType, reason: &str, message: &str) {
        if !self.is_leader() {
            return;
        }
        let event = Event {
            type_: kind,
            reason: reason.to_owned(),
            note: Some(message.chars().take(1000).collect()),
            action: "Probe".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &cluster.object_ref(&())).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }
}

fn status_json(status: &MemberClusterStatus) -> serde_json::Value {
    serde_json::to_value(status).unwrap_or_else(|_| json!({}))
}

/// GET /readyz (falling back to /healthz where /readyz is unknown) with a
/// timeout. Errors: (condition reason, message).
async fn probe(client: &Client, timeout: Duration) -> Result<(), (&'static str, String)> {
    for path in ["/readyz", "/healthz"] {
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| (conditions::CLUSTER_NOT_READY, e.to_string()))?;
        match tokio::time::timeout(timeout, client.request_text(request)).await {
            Err(_) => {
                return Err((
                    conditions::CLUSTER_NOT_REACHABLE,
                    format!("GET {path} timed out after {timeout:?}"),
                ))
            }
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(kube::Error::Api(status))) if status.code == 404 && path == "/readyz" => continue,
            Ok(Err(kube::Error::Api(status))) if status.code == 401 || status.code == 403 => {
                return Err((
                    conditions::AUTH_FAILED,
                    format!("GET {path}: {} {}", status.code, status.message),
                ))
            }
            Ok(Err(kube::Error::Api(status))) => {
                return Err((
                    conditions::CLUSTER_NOT_READY,
                    format!("GET {path}: {} {}", status.code, status.message),
                ))
            }
            Ok(Err(e)) => return Err((conditions::CLUSTER_NOT_REACHABLE, format!("GET {path}: {e}"))),
        }
    }
    Err((
        conditions::CLUSTER_NOT_READY,
        "neither /readyz nor /healthz is served".into(),
    ))
}

/// A hash of everything that needs a new client when it changes.
fn connection_fingerprint(spec: &MemberClusterSpec, secret: Option<&Secret>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    spec.api_endpoint.hash(&mut hasher);
    spec.ca_bundle.hash(&mut hasher);
    spec.insecure_skip_tls_verify.hash(&mut hasher);
    spec.secret_ref.as_ref().map(|r| &r.name).hash(&mut hasher);
    if let Some(secret) = secret {
        for (k, v) in secret.data.iter().flatten() {
            k.hash(&mut hasher);
            v.0.hash(&mut hasher);
        }
        for (k, v) in secret.string_data.iter().flatten() {
            k.hash(&mut hasher);
            v.hash(&mut hasher);
        }
    }
    hasher.finish()
}

fn secret_value(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| v.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|v| v.as_bytes().to_vec())
        })
}

/// Builds a client for a member. Errors are one-line messages for the
/// `AuthFailed` condition.
async fn build_client(spec: &MemberClusterSpec, secret: Option<&Secret>) -> Result<Client, String> {
    let secret_name = spec.secret_ref.as_ref().map(|r| r.name.as_str());
    let secret = match (secret_name, secret) {
        (Some(name), None) => return Err(format!("Secret {name} (spec.secretRef) not found")),
        (_, secret) => secret,
    };
    let mut config = match secret.and_then(|s| secret_value(s, "kubeconfig")) {
        Some(kubeconfig) => {
            let text = String::from_utf8(kubeconfig).map_err(|_| "Secret key kubeconfig is not UTF-8".to_owned())?;
            let kubeconfig =
                Kubeconfig::from_yaml(&text).map_err(|e| format!("Secret key kubeconfig does not parse: {e}"))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("Secret key kubeconfig is not usable: {e}"))?
        }
        None => {
            let url: http::Uri = spec
                .api_endpoint
                .parse()
                .map_err(|e| format!("spec.apiEndpoint {:?} is not a URL: {e}", spec.api_endpoint))?;
            let mut config = Config::new(url);
            config.accept_invalid_certs = spec.insecure_skip_tls_verify;
            if let Some(bundle) = &spec.ca_bundle {
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(bundle.trim())
                    .map_err(|e| format!("spec.caBundle is not base64: {e}"))?;
                let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&pem)
                    .map(|c| c.map(|c| c.to_vec()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("spec.caBundle is not a PEM certificate bundle: {e}"))?;
                if certs.is_empty() {
                    return Err("spec.caBundle holds no PEM certificate".into());
                }
                config.root_cert = Some(certs);
            }
            if let Some(secret) = secret {
                let token = secret_value(secret, "token")
                    .ok_or_else(|| format!("Secret {} has neither key token nor key kubeconfig", secret.name_any()))?;
                let token = String::from_utf8(token).map_err(|_| "Secret key token is not UTF-8".to_owned())?;
                config.auth_info = AuthInfo {
                    token: Some(secrecy::SecretString::from(token.trim().to_owned())),
                    ..AuthInfo::default()
                };
            }
            config
        }
    };
    // Probes need each failure as it happens; watches have their own backoff.
    config.default_retry = false;
    config.connect_timeout = Some(Duration::from_secs(5));
    Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}
