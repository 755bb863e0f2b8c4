//! The member registry: one [`Member`] per member cluster (a MemberCluster,
//! or a cluster of an engine's or fleet tool's registry: `sources/`),
//! started with its kube client (`client.rs`), its reflectors (`watch.rs`)
//! and its health prober (`probe.rs`). The MemberCluster status and
//! Events it writes are in `status.rs`.
//!
//! A member's connection (endpoint, CA, credentials) is fingerprinted; a
//! changed spec or Secret rebuilds the client and its watches. Anything
//! else (cordon, topology overrides, probe settings) is applied in place.
//!
//! A member is its name, but an inventory may rename a cluster while its
//! object stays (Argo CD: key `name` of the same cluster Secret). Such a
//! rename is a handover, not a removal and an addition: the member under
//! the old name keeps running, and serving its records, until the one
//! under the new name is warm (connected, its caches listed, Ready), then
//! it goes; see [`Retiring`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::events::Recorder;
use fedns_api::conditions;
use fedns_api::MemberCluster;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::events::EventType;
use kube::runtime::reflector;
use kube::{Client, ResourceExt};
use tokio::sync::{watch, Notify};

use super::cache::{FactCache, IngressFacts, ServiceFacts};
use super::member::{Health, Member, Settings};
use super::sources::{Desired, EngineReady, MemberSource, Sources};
use super::watch::{slim_node, spawn_service_exports, SliceIndex, WatchCtx, WatchHealth};
use crate::metrics::ControllerMetrics;
use crate::queue::{Queue, RecordKey};

/// A member from an engine's registry.
pub(super) struct EngineMember {
    pub(super) cluster: MemberCluster,
    pub(super) source: MemberSource,
    pub(super) engine_ready: Option<EngineReady>,
    pub(super) event_target: Option<(Recorder, ObjectReference)>,
    /// The engine's object it comes from ([`Desired::origin`]): what a
    /// renamed member is recognised by.
    pub(super) origin: Option<String>,
}

/// How long a renamed member's old name may keep serving while the new
/// one warms up. The new name is normally warm within a few seconds (its
/// lists, and no probe when its connection is the old one's: it starts
/// from the old name's health); one that cannot get there (unreachable,
/// its Nodes forbidden) no longer holds the old name's records after this.
const RENAME_GRACE: Duration = Duration::from_secs(60);

/// How often the registry looks at a pending rename.
const RENAME_CHECK: Duration = Duration::from_millis(200);

/// A member whose inventory object now names it otherwise (issue #58: an
/// Argo CD cluster Secret's `name` changed). Its records must not go
/// while the member under the new name has no caches and no health yet
/// (the name would answer NXDOMAIN for that second or more), so the old
/// member stays in the registry, probed, watched and publishing as
/// before, until its successor is connected, has listed everything it
/// watches and is Ready; then it is removed, and the records name the
/// successor only. While both run, each contributes the same cluster's
/// shard under its own name (the same addresses).
///
/// It goes at once when its successor cannot be connected (as a member
/// whose Secret broke would), when its object names no cluster any more,
/// and after [`RENAME_GRACE`] in any case.
#[derive(Debug, Clone)]
pub(super) struct Retiring {
    /// The name it is handing over to.
    pub(super) successor: String,
    /// When the rename was seen.
    pub(super) since: Instant,
}

/// Shared context of the registry.
pub struct Registry {
    pub(super) members: RwLock<BTreeMap<String, Arc<Member>>>,
    /// Engine members (Karmada, kubefed) by name: their in-memory
    /// MemberCluster and where their Events go.
    pub(super) engine_clusters: RwLock<BTreeMap<String, EngineMember>>,
    pub(super) failures: Mutex<BTreeMap<String, String>>,
    pub(super) queue: Queue,
    pub(super) host: Client,
    pub(super) namespace: String,
    pub(super) leader: watch::Receiver<bool>,
    pub(super) recorder: Recorder,
    pub(super) metrics: Arc<ControllerMetrics>,
    /// With `--auto-records`: watch every member's MCS ServiceExports and
    /// wake this on their changes and on its routes' changes (annotated
    /// routes make records).
    pub(super) service_exports: Mutex<Option<Arc<Notify>>>,
    /// Renamed members still serving under their old name, by that name.
    pub(super) retiring: Mutex<BTreeMap<String, Retiring>>,
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
            engine_clusters: RwLock::new(BTreeMap::new()),
            failures: Mutex::new(BTreeMap::new()),
            queue,
            host,
            namespace,
            leader,
            recorder,
            metrics,
            service_exports: Mutex::new(None),
            retiring: Mutex::new(BTreeMap::new()),
        })
    }

    /// Is `name` a member from an engine (its status kept in memory)?
    pub(super) fn is_engine_member(&self, name: &str) -> bool {
        self.engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(name)
    }

    /// Watch every member's MCS ServiceExports from now on (members
    /// started later), waking `changed` on their changes.
    pub fn watch_service_exports(&self, changed: Arc<Notify>) {
        *self.service_exports.lock().unwrap_or_else(|e| e.into_inner()) = Some(changed);
    }

    /// The record queue (to requeue a record later).
    pub fn queue(&self) -> &Queue {
        &self.queue
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

    pub(super) fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// Reconciles the running members with what the sources ask for
    /// (MemberClusters, Karmada Clusters, KubeFedClusters, and their
    /// Secrets), until the process ends.
    pub async fn run(self: Arc<Self>, sources: Sources, changed: Arc<Notify>) {
        let mut leader = self.leader.clone();
        // Without leader election the sender is gone at once and the
        // receiver keeps "leader": nothing to follow.
        let mut follow_leader = leader.has_changed().is_ok();
        loop {
            self.sync(&sources).await;
            // A rename under way is looked at again until it is done: its
            // end (the successor warm) is no change of the sources.
            let renaming = !self.retiring.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
            tokio::select! {
                () = changed.notified() => {}
                () = tokio::time::sleep(RENAME_CHECK), if renaming => {}
                result = leader.changed(), if follow_leader => match result {
                    Ok(()) => {
                        if *leader.borrow_and_update() {
                            // A failing member seen while standing by was
                            // logged but neither written to its status nor
                            // evented (both are the leader's); forget the
                            // failures so this sync reports them.
                            self.failures.lock().unwrap_or_else(|e| e.into_inner()).clear();
                        }
                    }
                    Err(_) => follow_leader = false,
                },
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The in-memory MemberClusters of engine members (Karmada, kubefed),
    /// with the status fedns's probes keep: for topology and explain.
    pub fn engine_members(&self) -> Vec<MemberCluster> {
        self.engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|e| e.cluster.clone())
            .collect()
    }

    async fn sync(self: &Arc<Self>, sources: &Sources) {
        let (desired, dropped) = sources.desired(&self.namespace);
        let clashes: std::collections::BTreeSet<String> = dropped
            .iter()
            .map(|(d, _)| format!("{}/{}", d.source.as_str(), d.name()))
            .collect();
        for (clash, message) in dropped {
            let key = format!("{}/{}", clash.source.as_str(), clash.name());
            let first = self
                .failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, message.clone())
                .as_ref()
                != Some(&message);
            if first {
                tracing::warn!(member = %clash.name(), source = clash.source.as_str(), "{message}");
                if let Some((recorder, object)) = &clash.event_target {
                    self.publish(
                        recorder,
                        object,
                        EventType::Warning,
                        "NameConflict",
                        "Register",
                        &message,
                    )
                    .await;
                }
            }
        }
        let wanted: BTreeMap<String, &Desired> = desired.iter().map(|d| (d.name(), d)).collect();
        // Renames: the name each engine object now gives its cluster, and
        // the object each running engine member came from.
        let named_now: BTreeMap<String, String> = desired
            .iter()
            .filter_map(|d| d.origin().map(|origin| (origin, d.name())))
            .collect();
        let origin_of: BTreeMap<String, String> = self
            .engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(|(name, e)| e.origin.clone().map(|origin| (name.clone(), origin)))
            .collect();
        // Members that went away; a renamed one stays until its successor
        // is warm (checked once the successor is started, below).
        let removed: Vec<String> = {
            let mut members = self.members.write().unwrap_or_else(|e| e.into_inner());
            let mut retiring = self.retiring.lock().unwrap_or_else(|e| e.into_inner());
            // A name wanted again (renamed back, or now another object's)
            // is no longer handed over: it runs as any wanted member.
            retiring.retain(|name, _| !wanted.contains_key(name));
            let gone: Vec<String> = members.keys().filter(|n| !wanted.contains_key(*n)).cloned().collect();
            let mut removed = Vec::new();
            for name in gone {
                let successor = origin_of
                    .get(&name)
                    .and_then(|origin| named_now.get(origin))
                    .filter(|successor| **successor != name);
                match successor {
                    Some(successor) => {
                        let entry = retiring.entry(name.clone()).or_insert_with(|| {
                            tracing::info!(member = %name, new_name = %successor, "member cluster renamed; the old name serves until the new one is warm");
                            Retiring {
                                successor: successor.clone(),
                                since: Instant::now(),
                            }
                        });
                        // Renamed again before the handover: to the latest name.
                        entry.successor.clone_from(successor);
                    }
                    None => {
                        members.remove(&name);
                        retiring.remove(&name);
                        removed.push(name);
                    }
                }
            }
            retiring.retain(|name, _| members.contains_key(name));
            removed
        };
        if !removed.is_empty() {
            tracing::info!(members = ?removed, "member clusters removed");
            self.queue.push_all();
        }
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|n, _| wanted.contains_key(n) || clashes.contains(n));
        let retiring = self.retiring.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The connection each renamed member's old name runs with.
        let old_fingerprints: BTreeMap<String, u64> = {
            let members = self.members.read().unwrap_or_else(|e| e.into_inner());
            retiring
                .keys()
                .filter_map(|old| members.get(old).map(|m| (old.clone(), m.fingerprint)))
                .collect()
        };
        {
            // Engine members: keep fedns's status, take the rest from the
            // engine. A renamed member's old name keeps its entry (its
            // status, Events, source) while it serves.
            let mut engine = self.engine_clusters.write().unwrap_or_else(|e| e.into_inner());
            engine.retain(|n, _| {
                wanted.get(n).is_some_and(|d| d.source != MemberSource::Fedns) || retiring.contains_key(n)
            });
            for d in desired.iter().filter(|d| d.source != MemberSource::Fedns) {
                let mut cluster = d.cluster.clone();
                if let Some(existing) = engine.get(&d.name()) {
                    if existing.cluster.status.is_some() {
                        cluster.status = existing.cluster.status.clone();
                    }
                } else if let Some(status) = handed_over_status(d, &retiring, &old_fingerprints, &engine) {
                    // The new name of a renamed member reaching the same
                    // API server the same way: it starts from the old
                    // name's health, as a restart starts from the last
                    // persisted one.
                    cluster.status = Some(status);
                }
                engine.insert(
                    d.name(),
                    EngineMember {
                        cluster,
                        source: d.source,
                        engine_ready: d.engine_ready.clone(),
                        event_target: d.event_target.clone(),
                        origin: d.origin(),
                    },
                );
            }
        }

        for d in &desired {
            let name = d.name();
            let cluster = self.current_cluster_cached(d);
            let connection = match &d.connection {
                Ok(connection) => connection,
                Err(e) => {
                    self.member_failed(&cluster, e.reason, &e.message).await;
                    continue;
                }
            };
            let fingerprint = connection.fingerprint();
            let existing = self
                .members
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&name)
                .cloned();
            match existing {
                Some(member) if member.fingerprint == fingerprint => {
                    let settings = Settings::from_spec(&cluster.spec);
                    let mut records_see_it = false;
                    member.settings.send_if_modified(|s| {
                        let changed = *s != settings;
                        records_see_it =
                            s.cordoned != settings.cordoned || s.region != settings.region || s.zones != settings.zones;
                        *s = settings;
                        changed
                    });
                    if records_see_it {
                        // Records read cordoned, region and zones from
                        // here: every record again now, not at the
                        // prober's next health change (an uncordon that
                        // came before the prober saw the cordon would
                        // change no health and queue nothing).
                        self.queue.push_all();
                    }
                }
                _ => match connection.build(&sources.credentials).await {
                    Ok(client) => {
                        let member = self.start_member(&cluster, client, fingerprint);
                        self.members
                            .write()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(name.clone(), member);
                        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                        tracing::info!(member = %name, source = d.source.as_str(), endpoint = %connection.api_endpoint, "member cluster connected");
                        self.queue.push_all();
                    }
                    Err(e) => self.member_failed(&cluster, e.reason, &e.message).await,
                },
            }
        }
        self.retire_renamed();
        self.update_member_gauges();
    }

    /// Ends the renames whose new name is warm (or cannot be, or took
    /// longer than [`RENAME_GRACE`]): the old name's member goes.
    fn retire_renamed(&self) {
        let done: Vec<(String, Retiring, &'static str)> = {
            let members = self.members.read().unwrap_or_else(|e| e.into_inner());
            self.retiring
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter_map(|(old, r)| {
                    let why = match members.get(&r.successor) {
                        None => "the new name could not be connected",
                        Some(m) if is_warm(m) => "the new name is warm",
                        Some(_) if r.since.elapsed() >= RENAME_GRACE => {
                            "the new name is not warm after the grace period"
                        }
                        Some(_) => return None,
                    };
                    Some((old.clone(), r.clone(), why))
                })
                .collect()
        };
        if done.is_empty() {
            return;
        }
        {
            let mut members = self.members.write().unwrap_or_else(|e| e.into_inner());
            let mut retiring = self.retiring.lock().unwrap_or_else(|e| e.into_inner());
            let mut engine = self.engine_clusters.write().unwrap_or_else(|e| e.into_inner());
            for (old, _, _) in &done {
                members.remove(old);
                retiring.remove(old);
                engine.remove(old);
            }
        }
        for (old, r, why) in &done {
            tracing::info!(member = %old, new_name = %r.successor, after = ?r.since.elapsed(), "renamed member cluster handed over: {why}");
        }
        self.queue.push_all();
    }

    /// The MemberCluster a desired member runs as, with fedns's latest
    /// status for an engine member.
    fn current_cluster_cached(&self, d: &Desired) -> MemberCluster {
        if d.source == MemberSource::Fedns {
            return d.cluster.clone();
        }
        self.engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&d.name())
            .map(|e| e.cluster.clone())
            .unwrap_or_else(|| d.cluster.clone())
    }

    /// A member that cannot be connected: stop it, report once per
    /// message, with `reason` (`AuthFailed`, `CredentialsRefused`) on its
    /// `Ready` condition and its Event.
    async fn member_failed(&self, cluster: &MemberCluster, reason: &str, message: &str) {
        let name = cluster.name_any();
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
            .insert(name.clone(), message.to_owned())
            .as_deref()
            != Some(message);
        if first {
            tracing::warn!(member = %name, "{message}");
            self.write_status(
                cluster,
                &Health {
                    ready: false,
                    reason: reason.to_owned(),
                    message: message.to_owned(),
                },
                None,
                None,
                true,
            )
            .await;
            // Action `Connect`, not `Probe`: Events are aggregated per
            // (reason, action), and this message must not be folded into an
            // earlier probe failure's.
            self.event_for(cluster, EventType::Warning, reason, "Connect", message)
                .await;
        }
    }

    pub(super) fn update_member_gauges(&self) {
        let members = self.members();
        let ready = members.iter().filter(|m| m.is_healthy()).count();
        let failed: Vec<String> = self
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .filter(|k| !k.contains('/'))
            .cloned()
            .collect();
        self.metrics.set_members(ready, members.len() - ready + failed.len());
        let engine = self.engine_clusters.read().unwrap_or_else(|e| e.into_inner());
        let states: Vec<(String, &'static str, bool, Option<Option<bool>>)> = members
            .iter()
            .map(|m| (m.name.clone(), m.is_healthy()))
            .chain(failed.into_iter().map(|n| (n, false)))
            .map(|(name, ready)| match engine.get(&name) {
                Some(e) => {
                    let engine_ready = e.engine_ready.as_ref().and_then(|r| match r.status.as_str() {
                        "True" => Some(true),
                        "False" => Some(false),
                        _ => None,
                    });
                    (name, e.source.as_str(), ready, Some(engine_ready))
                }
                None => (name, MemberSource::Fedns.as_str(), ready, None),
            })
            .collect();
        self.metrics.set_member_states(&states);
    }

    fn start_member(self: &Arc<Self>, cluster: &MemberCluster, client: Client, fingerprint: u64) -> Arc<Member> {
        let name = cluster.name_any();
        let services: Arc<FactCache<ServiceFacts>> = Arc::default();
        let ingresses: Arc<FactCache<IngressFacts>> = Arc::default();
        let (nodes, nodes_writer) = reflector::store();
        let nodes_version: Arc<AtomicU64> = Arc::default();
        let synced: Arc<[AtomicBool; 4]> = Arc::new(Default::default());
        let watches: Arc<Mutex<[WatchHealth; 4]>> = Arc::new(Mutex::new(Default::default()));
        let queue = self.queue.clone();
        let mut tasks = Vec::new();
        let ctx = WatchCtx {
            member: name.clone(),
            synced: synced.clone(),
            watches: watches.clone(),
            queue: queue.clone(),
        };
        tasks.push(ctx.spawn_facts(
            0,
            Api::<Service>::all(client.clone()),
            services.clone(),
            ServiceFacts::of,
            {
                let queue = queue.clone();
                move |ns, name| queue.push(RecordKey::Service(ns, name))
            },
        ));
        let ready_slices: Arc<RwLock<SliceIndex>> = Arc::default();
        let gateway_api: Arc<super::gateway::GatewayApi> = Arc::default();
        tasks.extend(super::gateway::spawn_watches(
            &name,
            &client,
            &gateway_api,
            {
                let queue = queue.clone();
                // With --auto-records an annotated route may make a record.
                let auto_records = self.service_exports.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let member = name.clone();
                move |routes: Vec<(fedns_api::RouteKind, String, String)>| {
                    if routes.is_empty() {
                        return;
                    }
                    if routes.len() > 1 {
                        tracing::debug!(member = %member, routes = routes.len(), "a Gateway API object's change reaches these routes");
                    }
                    queue.push_many(routes.into_iter().map(|(_, ns, route)| RecordKey::Route(ns, route)));
                    if let Some(changed) = &auto_records {
                        changed.notify_one();
                    }
                }
            },
            {
                // A kind served or gone: every route record says so (no
                // other record reads Gateway API kinds).
                let queue = queue.clone();
                move || queue.push_all_routes()
            },
        ));
        tasks.push(ctx.spawn_slices(
            Api::<EndpointSlice>::all(client.clone()),
            ready_slices.clone(),
            queue.clone(),
            {
                // A Service's readiness also decides the Ingresses routing
                // to it or served by it (`spec.backends`).
                let (queue, services, ingresses) = (queue.clone(), services.clone(), ingresses.clone());
                let gateway_api = gateway_api.clone();
                move |ns: String, svc: String| {
                    let facts = services.get(&ns, &svc);
                    let mut keys: Vec<RecordKey> = ingresses
                        .depending_on(&ns, &svc, facts.as_ref())
                        .into_iter()
                        .map(|(ns, ingress)| RecordKey::Ingress(ns, ingress))
                        .collect();
                    // And the routes whose backend it is.
                    for kind in fedns_api::RouteKind::ALL {
                        for (ns, route) in gateway_api.routes(kind).matching(|r| r.routes_to(&ns, &svc)) {
                            keys.push(RecordKey::Route(ns, route));
                        }
                    }
                    keys.push(RecordKey::Service(ns, svc));
                    // At once: the workers see a batch (see `records::worker`).
                    queue.push_many(keys);
                }
            },
        ));
        tasks.push(ctx.spawn_facts(
            2,
            Api::<Ingress>::all(client.clone()),
            ingresses.clone(),
            IngressFacts::of,
            {
                let queue = queue.clone();
                move |ns: String, name: String| {
                    // A RouteDNSRecord of the same name may fall back on it.
                    queue.push(RecordKey::Route(ns.clone(), name.clone()));
                    queue.push(RecordKey::Ingress(ns, name));
                }
            },
        ));
        tasks.push(ctx.spawn(
            3,
            Api::<Node>::all(client.clone()),
            nodes_writer,
            slim_node,
            nodes_version.clone(),
        ));

        // Start from the last persisted state, so a controller restart
        // does not take healthy clusters out of DNS while probes warm up.
        let persisted_ready = cluster
            .status
            .as_ref()
            .is_some_and(|s| conditions::is_true(&s.conditions, conditions::READY));
        let settings = Settings::from_spec(&cluster.spec);
        let (settings_tx, _) = watch::channel(settings.clone());
        let exports_changed = self.service_exports.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let service_exports = exports_changed.map(|changed| {
            let (store, listed, task) = spawn_service_exports(name.clone(), client.clone(), changed);
            tasks.push(task);
            (store, listed)
        });
        let member = Arc::new(Member {
            name: name.clone(),
            client: client.clone(),
            services,
            ingresses,
            nodes,
            nodes_version,
            topology_memo: Mutex::default(),
            gateway_api,
            service_exports,
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

/// The status a renamed member's new name (`desired`) starts from: its
/// old name's, when both reach the cluster with the same connection
/// (`fingerprints`: the old names' connections).
fn handed_over_status(
    desired: &Desired,
    retiring: &BTreeMap<String, Retiring>,
    fingerprints: &BTreeMap<String, u64>,
    engine: &BTreeMap<String, EngineMember>,
) -> Option<fedns_api::MemberClusterStatus> {
    let connection = desired.connection.as_ref().ok()?;
    let name = desired.name();
    let (old, _) = retiring.iter().find(|(_, r)| r.successor == name)?;
    if fingerprints.get(old) != Some(&connection.fingerprint()) {
        return None;
    }
    engine.get(old).and_then(|e| e.cluster.status.clone())
}

/// A member ready to take over a name's records: Ready (or cordoned: it
/// serves nothing either way), and every cache the records read listed
/// (Services, EndpointSlices, Ingresses, Nodes, the Gateway API kinds,
/// and ServiceExports when watched).
fn is_warm(member: &Member) -> bool {
    use super::gateway::Served;
    (member.is_healthy() || member.is_cordoned())
        && member.is_synced()
        && member.gateway_api.routes_listed()
        && member.gateway_api.gateways_served() != Served::Unknown
        && member
            .service_exports
            .as_ref()
            .is_none_or(|(_, listed)| listed.load(Ordering::Relaxed))
}
