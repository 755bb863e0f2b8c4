//! The member registry: one [`Member`] per MemberCluster, started with its
//! kube client (`client.rs`), its reflectors (`watch.rs`) and its health
//! prober (`probe.rs`); and the MemberCluster status and Events.
//!
//! A member's connection (endpoint, CA, credentials) is fingerprinted; a
//! changed spec or Secret rebuilds the client and its watches. Anything
//! else (cordon, topology overrides, probe settings) is applied in place.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use fedns_api::conditions;
use fedns_api::{MemberCluster, MemberClusterStatus};
use k8s_openapi::api::core::v1::{Node, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::{watch, Notify};

use super::client::{build_client, connection_fingerprint};
use super::member::{Member, Settings};
use super::probe::Health;
use super::watch::{slim_ingress, slim_node, slim_service, SliceIndex, WatchCtx, WatchHealth};
use crate::metrics::ControllerMetrics;
use crate::records::queue::{Queue, RecordKey};

/// Condition reporting a member without a region (it serves the global
/// name only).
pub const TOPOLOGY_CONDITION: &str = "TopologyKnown";

/// Shared context of the registry.
pub struct Registry {
    members: RwLock<BTreeMap<String, Arc<Member>>>,
    failures: Mutex<BTreeMap<String, String>>,
    pub(super) queue: Queue,
    host: Client,
    namespace: String,
    leader: watch::Receiver<bool>,
    recorder: Recorder,
    pub(super) metrics: Arc<ControllerMetrics>,
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

    pub(super) fn is_leader(&self) -> bool {
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

    pub(super) fn update_member_gauges(&self) {
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

    pub(super) async fn current_cluster(&self, name: &str) -> Option<MemberCluster> {
        Api::<MemberCluster>::namespaced(self.host.clone(), &self.namespace)
            .get(name)
            .await
            .ok()
    }

    pub(super) async fn write_status(
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

    pub(super) async fn event(&self, cluster: &MemberCluster, kind: EventType, reason: &str, message: &str) {
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
