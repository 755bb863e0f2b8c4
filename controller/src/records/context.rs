//! The reconcilers' context: the host client, caches, member registry,
//! resolver and leadership they read, and the writes they share (the
//! DNSEndpoint, compared before it is applied; Warning Events on change).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::events::Recorder;
use fedns_api::conditions;
use fedns_api::names;
use fedns_api::{
    DNSEndpoint, DNSEndpointSpec, Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, ServiceDNSRecord,
};
use k8s_openapi::api::core::v1::LoadBalancerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use super::model::{self, BuildProblem, Topology};
use super::object_size::{self, TooLarge};
use super::resolver::HostnameResolver;
use crate::members::{Member, Registry};
use crate::metrics::ControllerMetrics;

/// Field manager of the controller's server-side applies.
pub const FIELD_MANAGER: &str = "fedns-controller";

/// One record's last shard per cluster: cluster → the shard (the record
/// kind's shard type; a record id names its kind) as compact JSON bytes.
/// One per shard of the federation, so kept small: about 100 bytes where
/// the typed shard costs about 500 (its strings and vectors each a
/// separate allocation) and a `serde_json::Value` about 2 KiB; a vector
/// sorted by cluster rather than a `BTreeMap`, whose nodes cost about 60
/// octets an entry more.
#[derive(Debug, Default)]
pub struct LastShards(Vec<(Box<str>, Box<[u8]>)>);

impl LastShards {
    fn position(&self, cluster: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(held, _)| (**held).cmp(cluster))
    }

    /// The last shard of `cluster`.
    pub fn get(&self, cluster: &str) -> Option<&[u8]> {
        self.position(cluster).ok().map(|at| &*self.0[at].1)
    }

    /// Sets the last shard of `cluster`.
    pub fn insert(&mut self, cluster: &str, shard: Box<[u8]>) {
        match self.position(cluster) {
            Ok(at) => self.0[at].1 = shard,
            Err(at) => self.0.insert(at, (cluster.into(), shard)),
        }
    }

    /// Forgets `cluster`.
    pub fn remove(&mut self, cluster: &str) {
        if let Ok(at) = self.position(cluster) {
            self.0.remove(at);
        }
    }

    /// Holds no shard.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Everything the reconcilers read and write.
pub struct RecordContext {
    /// Host cluster client.
    pub host: Client,
    /// Controller namespace (Domains, MemberClusters).
    pub namespace: String,
    /// Member clusters.
    pub registry: Arc<Registry>,
    /// ServiceDNSRecords.
    pub services: Store<ServiceDNSRecord>,
    /// IngressDNSRecords.
    pub ingresses: Store<IngressDNSRecord>,
    /// RouteDNSRecords.
    pub routes: Store<RouteDNSRecord>,
    /// Domains.
    pub domains: Store<Domain>,
    /// DNSEndpoints (to compare before writing).
    pub endpoints: Store<DNSEndpoint>,
    /// DNSEndpoint specs computed and being written: the publisher of this
    /// process publishes them at once, and the DNSEndpoint watch knows
    /// their writes coming back
    /// ([`fedns_providers::source::pending`]).
    pub pending: Arc<fedns_providers::source::pending::PendingEndpoints>,
    /// MemberClusters (for the federation's topology).
    pub clusters: Store<MemberCluster>,
    /// Load balancer host names.
    pub resolver: HostnameResolver,
    /// Whether this replica leads (only the leader writes).
    pub leader: watch::Receiver<bool>,
    /// Metrics.
    pub metrics: Arc<ControllerMetrics>,
    /// Events.
    pub recorder: Recorder,
    /// Data-plane prober (None: probes off, e.g. in unit tests).
    pub dataplane: Option<crate::dataplane::DataPlane<crate::queue::RecordKey>>,
    /// The last shard each member served for each record (record id →
    /// cluster → shard), so a member whose API server is down can come
    /// back on its last-known addresses once their probes pass again.
    /// In memory: after a restart, `status.dns` is the last-known set.
    pub last_shards: Mutex<BTreeMap<String, LastShards>>,
    /// Each record's `status.dns`, which the record reflectors move out
    /// of the cached objects (see [`super::PublishedShards`]).
    pub published: Arc<super::PublishedShards>,
    /// Records serving their last-known set (fail-open), by record id.
    pub failing_open: Mutex<BTreeSet<String>>,
    /// Problems last reported per record, so Events are sent on change.
    pub reported: Mutex<BTreeMap<String, Vec<String>>>,
    /// Largest DNSEndpoint written, in bytes of JSON (`--max-object-bytes`,
    /// default [`super::object_size::DEFAULT_MAX_OBJECT_BYTES`]).
    pub max_object_bytes: usize,
    /// Records whose DNSEndpoint is over `max_object_bytes`, by record id.
    pub too_large: Mutex<BTreeSet<String>>,
}

/// How far a reconcile goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Everything: the DNSEndpoint written, the record's status, Events,
    /// probes' requeues.
    Full,
    /// Only the record's DNSEndpoint computed and, where it changes one the
    /// record owns, proposed to this process's publisher
    /// ([`RecordContext::preview_endpoint`]); nothing written. A change
    /// that reaches many records (a Gateway's addresses, every route
    /// attached to it) is previewed for all of them first, so that every
    /// answer changes at the speed of the computation; the full reconciles
    /// follow and write the same specs.
    Preview,
}

/// What [`RecordContext::write_endpoint`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum EndpointWrite {
    /// Written, or already as desired, or this replica does not lead.
    Done,
    /// Over the size limit: not sent (the previous DNSEndpoint stays).
    TooLarge(TooLarge),
}

impl EndpointWrite {
    /// The `Ready` condition's message when the DNSEndpoint was not written.
    pub(super) fn too_large_message(&self) -> Option<String> {
        match self {
            EndpointWrite::Done => None,
            EndpointWrite::TooLarge(t) => Some(t.message()),
        }
    }
}

impl std::fmt::Debug for RecordContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordContext").finish_non_exhaustive()
    }
}

impl RecordContext {
    /// Queues `key` again after `delay` (a drain's next step).
    pub fn requeue_after(&self, key: crate::queue::RecordKey, delay: std::time::Duration) {
        let queue = self.registry.queue().clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.push(key);
        });
    }

    pub(super) fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// Every member cluster's name and effective region (healthy or not).
    pub(super) fn cluster_regions(&self) -> BTreeMap<String, Option<String>> {
        let running: BTreeMap<String, Arc<Member>> = self
            .registry
            .members()
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        self.clusters
            .state()
            .iter()
            .map(|cluster| {
                let name = cluster.name_any();
                let region = match running.get(&name) {
                    Some(member) => member.topology().0,
                    None => cluster
                        .spec
                        .region
                        .clone()
                        .or(cluster.status.as_ref().and_then(|s| s.region.clone())),
                };
                (name, region)
            })
            .collect()
    }

    /// Problems of a record's `spec.routing` against the federation's
    /// clusters and regions and the client tables of `domains` (the
    /// Domains its names are in).
    pub(super) fn routing_problems(
        &self,
        routing: Option<&fedns_api::Routing>,
        domains: &[&Domain],
    ) -> Vec<BuildProblem> {
        let Some(routing) = routing else {
            return Vec::new();
        };
        let clusters = self.cluster_regions();
        let regions: std::collections::BTreeSet<String> = clusters.values().flatten().cloned().collect();
        let names: std::collections::BTreeSet<String> = clusters.into_keys().collect();
        let places = domains
            .iter()
            .any(|d| !d.spec.client_regions.is_empty() || !d.spec.geo_regions.is_empty());
        super::routing::check(routing, &names, &regions, places)
    }

    /// The Domains whose zones hold any of `hosts`.
    pub(super) fn domains_of(&self, hosts: &[String]) -> Vec<Arc<Domain>> {
        self.domains
            .state()
            .into_iter()
            .filter(|d| {
                let zone = names::normalize_hostname(&d.spec.domain).unwrap_or_default();
                hosts.iter().any(|h| {
                    names::normalize_hostname(h).is_ok_and(|h| !zone.is_empty() && names::is_subdomain(&h, &zone))
                })
            })
            .collect()
    }

    /// region → zones of every member, healthy or not.
    pub(super) fn topology(&self) -> Topology {
        let running: BTreeMap<String, Arc<Member>> = self
            .registry
            .members()
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        let mut topology = Topology::new();
        let engine = self.registry.engine_members();
        for cluster in self.clusters.state().iter().map(|c| c.as_ref()).chain(engine.iter()) {
            let (region, zones) = match running.get(&cluster.name_any()) {
                Some(member) => member.topology(),
                None => {
                    let status = cluster.status.clone().unwrap_or_default();
                    let region = cluster.spec.region.clone().or(status.region);
                    let zones = if cluster.spec.zones.is_empty() {
                        status.zones
                    } else {
                        cluster.spec.zones.clone()
                    };
                    (region, zones)
                }
            };
            let Some(region) = region.filter(|r| names::validate_label(r).is_ok()) else {
                continue;
            };
            let entry = topology.entry(region).or_default();
            entry.extend(zones.into_iter().filter(|z| names::validate_label(z).is_ok()));
        }
        topology
    }

    pub(super) async fn report(
        &self,
        key: &str,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        problems: &[BuildProblem],
    ) {
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        let changed = {
            let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
            let changed = reported.get(key) != Some(&messages);
            reported.insert(key.to_owned(), messages.clone());
            changed
        };
        if !changed || messages.is_empty() || !self.is_leader() {
            return;
        }
        for message in &messages {
            tracing::warn!(record = %key, "{message}");
        }
        let event = Event {
            type_: EventType::Warning,
            reason: conditions::INVALID_INPUT.into(),
            note: Some(messages.join("; ").chars().take(1000).collect()),
            action: "BuildEndpoints".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }

    /// Notes whether record `key` fails open now; on a change, a Warning
    /// (or Normal, when it ends) Event and the metrics.
    pub(super) async fn fail_open(
        &self,
        key: &str,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        failing: bool,
        clusters: usize,
    ) {
        let (changed, now) = {
            let mut set = self.failing_open.lock().unwrap_or_else(|e| e.into_inner());
            let changed = if failing {
                set.insert(key.to_owned())
            } else {
                set.remove(key)
            };
            (changed, set.len())
        };
        if !changed {
            return;
        }
        self.metrics.failing_open(now, failing);
        let (type_, note) = if failing {
            tracing::warn!(record = %key, clusters, "health would remove every cluster: serving the last-known addresses");
            (
                EventType::Warning,
                format!("health would remove every cluster; serving the last-known addresses of {clusters} cluster(s)"),
            )
        } else {
            tracing::info!(record = %key, "a cluster passes its health checks again: fail-open ended");
            (
                EventType::Normal,
                "a cluster is healthy again; fail-open ended".to_owned(),
            )
        };
        if !self.is_leader() {
            return;
        }
        let event = Event {
            type_,
            reason: conditions::ALL_UNHEALTHY.into(),
            note: Some(note),
            action: "SelectClusters".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }

    /// Whether DNSEndpoint `namespace/name` is stored and owned by the
    /// object of `uid`: a [`Pass::Preview`] computes nothing otherwise.
    pub(super) fn owns_endpoint(&self, namespace: &str, name: &str, uid: Option<&str>) -> bool {
        let Some(uid) = uid else { return false };
        self.endpoints
            .get(&ObjectRef::new(name).within(namespace))
            .is_some_and(|current| current.owner_references().iter().any(|o| o.uid == uid))
    }

    /// [`Pass::Preview`]'s end: `endpoints`, when they change the stored
    /// DNSEndpoint `namespace/name` that `owner` owns, are proposed to the
    /// publisher of this process (leader only); nothing is written, and a
    /// DNSEndpoint not yet stored, not owned, or too large is left to the
    /// full reconcile.
    pub(super) fn preview_endpoint(
        &self,
        namespace: &str,
        name: &str,
        owner: &OwnerReference,
        endpoints: &[fedns_api::Endpoint],
    ) {
        if !self.is_leader() {
            return;
        }
        let Some(current) = self.endpoints.get(&ObjectRef::new(name).within(namespace)) else {
            return;
        };
        if !current.owner_references().iter().any(|o| o.uid == owner.uid) || current.spec.endpoints == endpoints {
            return;
        }
        // The endpoints alone over the limit: the full reconcile reports it.
        let bytes = serde_json::to_vec(endpoints).map_or(usize::MAX, |v| v.len());
        if bytes.saturating_add(object_size::SERVER_ADDED_BYTES) > self.max_object_bytes {
            return;
        }
        self.pending.propose(namespace, name, endpoints);
        self.metrics.dnsendpoint_previewed();
    }

    pub(super) async fn write_endpoint(
        &self,
        namespace: &str,
        name: &str,
        owner: OwnerReference,
        endpoints: Vec<fedns_api::Endpoint>,
        since: Instant,
    ) -> Result<EndpointWrite, kube::Error> {
        let spec = DNSEndpointSpec { endpoints };
        let current = self.endpoints.get(&ObjectRef::new(name).within(namespace));
        let owned = current
            .as_ref()
            .is_some_and(|c| c.owner_references().iter().any(|o| o.uid == owner.uid));
        if current.as_ref().is_some_and(|c| c.spec == spec) && owned {
            // What is stored is what is wanted: a proposal of another spec
            // (a preview computed before the state moved back) goes.
            self.pending.withdraw(namespace, name);
            return Ok(EndpointWrite::Done);
        }
        if !self.is_leader() {
            // Only the leader's proposals are published; one left from
            // before leadership was lost must not come back with it.
            self.pending.withdraw(namespace, name);
            return Ok(EndpointWrite::Done);
        }
        let id = format!("{namespace}/{name}");
        let object = json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "DNSEndpoint",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "fedns"},
                "ownerReferences": [owner],
            },
            // `endpoints` always written, `[]` included: the typed spec
            // leaves an empty list out, and an apply that omits a field
            // only removes it where the server tracks field ownership
            // (the emulator merges; found by the RouteDNSRecord test).
            "spec": {"endpoints": spec.endpoints},
        });
        // Never send what the API server (etcd) would refuse: the write
        // would fail on every retry while the record said nothing useful.
        let bytes = match object_size::check(&id, &object, &spec, self.max_object_bytes) {
            Ok(bytes) => bytes,
            Err(too_large) => {
                self.pending.withdraw(namespace, name);
                return Ok(EndpointWrite::TooLarge(too_large));
            }
        };
        // Published from now on, while the write goes out: a change that
        // reaches thousands of records answers as each is computed, not
        // as each write comes back. Only a DNSEndpoint this record already
        // owns: who may publish a name is decided on the stored object.
        if owned {
            self.pending.propose(namespace, name, &spec.endpoints);
        } else {
            self.pending.written(namespace, name, &spec.endpoints);
        }
        let applied = super::status::patch_unread::<DNSEndpoint>(
            &self.host,
            namespace,
            name,
            None,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await;
        if let Err(error) = applied {
            // Until the retry, the stored spec is what is published.
            self.pending.withdraw(namespace, name);
            // The server's limit may be lower than ours: a size refusal is
            // reported like ours, not retried forever.
            return match object_size::refusal(&error) {
                Some(refused) => Ok(EndpointWrite::TooLarge(TooLarge {
                    endpoint: id,
                    bytes,
                    limit: self.max_object_bytes,
                    endpoints: spec.endpoints.len(),
                    targets: spec.endpoints.iter().map(|e| e.targets.len()).sum(),
                    refused: Some(refused),
                })),
                None => Err(error),
            };
        }
        self.metrics.dnsendpoint_written(since.elapsed());
        tracing::debug!(dnsendpoint = %id, endpoints = spec.endpoints.len(), bytes, "DNSEndpoint written");
        Ok(EndpointWrite::Done)
    }

    /// Notes whether record `key`'s DNSEndpoint is over the size limit;
    /// on a change, a Warning Event (Normal when it fits again), a log line
    /// and the metric.
    pub(super) async fn note_size(
        &self,
        key: &str,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        write: &EndpointWrite,
    ) {
        let too_large = match write {
            EndpointWrite::TooLarge(t) => Some(t),
            EndpointWrite::Done => None,
        };
        if !self.is_leader() {
            // Only the leader writes, so only it knows; a follower counts none.
            let mut set = self.too_large.lock().unwrap_or_else(|e| e.into_inner());
            if set.remove(key) {
                self.metrics.dnsendpoints_too_large(set.len());
            }
            return;
        }
        let (changed, now) = {
            let mut set = self.too_large.lock().unwrap_or_else(|e| e.into_inner());
            let changed = match too_large {
                Some(_) => set.insert(key.to_owned()),
                None => set.remove(key),
            };
            (changed, set.len())
        };
        if !changed {
            return;
        }
        self.metrics.dnsendpoints_too_large(now);
        let (type_, note) = match too_large {
            Some(t) => {
                tracing::warn!(record = %key, dnsendpoint = %t.endpoint, bytes = t.bytes, limit = t.limit, "DNSEndpoint over the object size limit: not written");
                (EventType::Warning, t.message())
            }
            None => {
                tracing::info!(record = %key, "DNSEndpoint fits the object size limit again");
                (
                    EventType::Normal,
                    "the DNSEndpoint fits the object size limit again and is written".to_owned(),
                )
            }
        };
        let event = Event {
            type_,
            reason: conditions::OBJECT_TOO_LARGE.into(),
            note: Some(note.chars().take(1000).collect()),
            action: "WriteDNSEndpoint".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }

    /// A record was deleted: forget its host names, probe targets and
    /// last-known shards, and delete its DNSEndpoint if fedns made it.
    pub(super) async fn record_gone(
        &self,
        record: &crate::queue::RecordKey,
        namespace: &str,
        endpoint_name: &str,
    ) -> Result<(), kube::Error> {
        let key = record.id();
        self.resolver.forget(&key, &BTreeSet::new());
        if let Some(dataplane) = &self.dataplane {
            dataplane.forget(record);
        }
        self.last_shards.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        self.published.forget(&key);
        self.delete_endpoint_if_orphaned(namespace, endpoint_name).await
    }

    pub(super) async fn delete_endpoint_if_orphaned(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        let Some(current) = self.endpoints.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        let ours = current.labels().get("app.kubernetes.io/managed-by").map(String::as_str) == Some("fedns");
        if !ours || !self.is_leader() {
            return Ok(());
        }
        let api: Api<DNSEndpoint> = Api::namespaced(self.host.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Registers the host names in `lbs` for record `key` (re-resolved
    /// every `ttl` seconds), drops those it no longer uses, and returns
    /// what is resolved now.
    pub(super) fn resolve_lb_hostnames<'a>(
        &self,
        key: &str,
        lbs: impl Iterator<Item = &'a LoadBalancerStatus>,
        ttl: i64,
    ) -> super::resolver::Resolved {
        let ttl = Duration::from_secs(u64::try_from(ttl.max(1)).unwrap_or(30));
        let hostnames: BTreeSet<String> = lbs.flat_map(model::lb_hostnames).collect();
        for host in &hostnames {
            self.resolver.want(host, ttl, key);
        }
        self.resolver.forget(key, &hostnames);
        self.resolver.snapshot()
    }
}

pub(super) fn owner_of<K: Resource<DynamicType = ()>>(object: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: object.meta().name.clone().unwrap_or_default(),
        uid: object.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

pub(super) fn has_lb_address(lb: &LoadBalancerStatus) -> bool {
    lb.ingress.as_ref().is_some_and(|i| {
        i.iter().any(|i| {
            i.ip.as_deref().is_some_and(|v| !v.is_empty()) || i.hostname.as_deref().is_some_and(|v| !v.is_empty())
        })
    })
}
