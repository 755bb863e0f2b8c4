//! One member's live state: its caches (of Services and Ingresses only
//! what fedns reads; Nodes; of EndpointSlices only which Services have a
//! ready endpoint), whether it is healthy and
//! synced, the settings applied without a new client, and its effective
//! region and zones.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use fedns_api::MemberClusterSpec;
use k8s_openapi::api::core::v1::Node;
use kube::api::DynamicObject;
use kube::runtime::reflector::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::cache::{FactCache, IngressFacts, ServiceFacts};
use super::watch::{SliceIndex, WatchHealth};

/// Node labels giving a cluster's region and zone, newest first.
const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];
const ZONE_LABELS: [&str; 2] = ["topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"];

/// Settings applied without rebuilding the client.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Settings {
    pub(super) cordoned: bool,
    pub(super) region: Option<String>,
    pub(super) zones: Vec<String>,
    pub(super) period: Duration,
    pub(super) timeout: Duration,
    pub(super) failure_threshold: u32,
    pub(super) success_threshold: u32,
}

impl Settings {
    pub(super) fn from_spec(spec: &MemberClusterSpec) -> Self {
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

/// One member's live state.
pub struct Member {
    /// MemberCluster name.
    pub name: String,
    /// A client of the member's API server (the controller's credentials
    /// there).
    pub client: kube::Client,
    /// Its Services: what fedns reads of each.
    pub services: Arc<FactCache<ServiceFacts>>,
    /// Its Ingresses: what fedns reads of each.
    pub ingresses: Arc<FactCache<IngressFacts>>,
    /// Its Nodes.
    pub nodes: Store<Node>,
    /// Goes up after each Node watch event is applied to `nodes`.
    pub(super) nodes_version: Arc<AtomicU64>,
    /// The effective topology last worked out (see [`Member::topology`]).
    pub(super) topology_memo: Mutex<Option<TopologyMemo>>,
    /// Its Gateways and routes (Gateway API), where it serves them.
    pub gateway_api: Arc<super::gateway::GatewayApi>,
    /// Its MCS ServiceExports (`multicluster.x-k8s.io/v1alpha1`), watched
    /// only with `--auto-records`, and whether they have been listed once
    /// (or the member serves no such kind).
    pub service_exports: Option<(Store<DynamicObject>, Arc<AtomicBool>)>,
    pub(super) healthy: AtomicBool,
    /// EndpointSlices with a ready endpoint, by Service: (namespace,
    /// service) → ready slice names. Kept from the watch events.
    pub(super) ready_slices: Arc<RwLock<SliceIndex>>,
    pub(super) synced: Arc<[AtomicBool; 4]>,
    pub(super) watches: Arc<Mutex<[WatchHealth; 4]>>,
    pub(super) settings: watch::Sender<Settings>,
    pub(super) fingerprint: u64,
    pub(super) tasks: Mutex<Vec<JoinHandle<()>>>,
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

impl Member {
    /// The endpoints of Service `namespace/service` in its EndpointSlices:
    /// (ready, all).
    pub fn endpoint_counts(&self, namespace: &str, service: &str) -> (u32, u32) {
        self.ready_slices
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .endpoints(namespace, service)
    }

    /// Does Service `namespace/service` have an EndpointSlice with a ready
    /// endpoint (a missing `ready` condition means ready, per the API)?
    pub fn has_ready_endpoints(&self, namespace: &str, service: &str) -> bool {
        self.ready_slices
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_ready(namespace, service)
    }

    /// Ready and not cordoned: its shards go into DNS.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// `spec.cordoned`: drained on purpose.
    pub fn is_cordoned(&self) -> bool {
        self.settings.borrow().cordoned
    }

    /// Every reflector has completed its first list.
    pub fn is_synced(&self) -> bool {
        self.synced.iter().all(|s| s.load(Ordering::Relaxed))
    }

    /// Effective region and zones: spec overrides, else Node labels.
    ///
    /// Worked out again only when the Nodes or the overrides changed since
    /// the last time: every reconcile asks it of every member, several
    /// times (at 1,000,000 shards 3.6 of a cold start's 113 CPU-s went to
    /// copying the settings and the Node list and counting labels).
    pub fn topology(&self) -> (Option<String>, Vec<String>) {
        // Read before the Nodes: the watch raises it only after applying
        // an event, so what is worked out below saw every event up to it.
        let nodes_version = self.nodes_version.load(Ordering::Acquire);
        let settings = self.settings.borrow();
        let mut memo = self.topology_memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(memo) = memo
            .as_ref()
            .filter(|m| m.nodes_version == nodes_version && m.region == settings.region && m.zones == settings.zones)
        {
            return memo.topology.clone();
        }
        let topology = effective_topology(&settings.region, &settings.zones, &self.nodes.state());
        *memo = Some(TopologyMemo {
            nodes_version,
            region: settings.region.clone(),
            zones: settings.zones.clone(),
            topology: topology.clone(),
        });
        topology
    }

    /// Every watch stream has failed within `window`. A failing watch
    /// retries (and fails again) at least every 2 s, while a healthy one
    /// that resumed quietly emits nothing, so recent errors are the signal.
    pub(super) fn all_watches_failing(&self, window: Duration) -> bool {
        let now = Instant::now();
        let watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.iter().all(|w| match w.last_error {
            Some(error) => now.duration_since(error) < window && w.last_ok.is_none_or(|ok| ok < error),
            None => false,
        })
    }
}

/// A member's effective topology and what it was worked out from: the
/// Node watch's version and the spec's overrides.
#[derive(Debug)]
pub(super) struct TopologyMemo {
    nodes_version: u64,
    region: Option<String>,
    zones: Vec<String>,
    topology: (Option<String>, Vec<String>),
}

/// Effective region and zones (the spec's override, else
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
