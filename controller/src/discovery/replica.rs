//! The member-side replica's discovery task: watches (read-only) the
//! host's Domains, ServiceDNSRecords and this member's MemberCluster, and
//! the member's Services, EndpointSlices and the Node it runs on;
//! recomputes the discovery zones ([`super::answer`]) on every change and
//! hands them to the embedded sink, which applies only the owners whose
//! records changed.
//!
//! Static stability: the watches retry on their own and keep their last
//! contents, so while the host is unreachable the replica serves the last
//! federation state and keeps following local readiness; the host side is
//! also saved to `--state-file` and read back at start, so a restart
//! during a host outage answers too ([`super::state_file`]).
//!
//! No answer from a half-filled view: the first discovery zones are
//! handed over only once the member's caches (Services, EndpointSlices,
//! the Node) hold their first full list and the federation side is whole
//! (the host caches listed, the host's Namespaces too while a Domain
//! admits namespaces by selector, and the publishing source's first
//! publish done, or a saved state served). Before that a Service not yet
//! listed would read as "no local Service" and be answered with a CNAME
//! to a global name not yet published: a CNAME with no address.
//!
//! No CNAME to a name not published (docs/discovery.md, "Starting up"):
//! a record whose DNSEndpoint the view does not hold yet is pending
//! ([`super::answer::compute_known`]), and so is a fallback whose target
//! the federation zones served here do not answer with an address yet
//! (`name_served`). A pending name answered before goes on being
//! answered; one never answered is answered SERVFAIL ("cannot answer
//! now": resolvers retry and cache no denial) for [`PENDING_HOLD`] at most,
//! then left out (`serve_plan`), while the rest of its zone is served.
//! The replica is ready ([`run`]'s `served`) once every discovery zone it
//! hands over is in the store the listeners answer from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::k8s_openapi::api::core::v1::{Namespace, Node, Service};
use fedns_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use fedns_api::{conditions, DNSEndpoint, Domain, MemberCluster, NamespacesFrom, ServiceDNSRecord};
use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{AnswerConfig, Snapshot, Transport, ZoneContent};
use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::plan::ownership::NamespaceLabels;
use fedns_providers::source::ready::store_ready;
use futures::StreamExt;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::{watch, Notify};

use super::answer::{
    self, Decision, EndpointKnowledge, EndpointsView, FederationView, Inputs, MemberView, PendingName, RecordProgress,
    RecordView,
};
use super::metrics::DiscoveryMetrics;
use super::ownership::{self, Ownership};
use super::state_file::{self, HostState};
use fedns_providers::source::kube_source::SourceState;

/// Settings of the member-side discovery task.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// This member's MemberCluster name.
    pub member: String,
    /// The host's controller namespace (Domains, MemberClusters).
    pub namespace: String,
    /// The member's cluster domain, e.g. `cluster.local`.
    pub cluster_domain: String,
    /// The Node this replica runs on (`NODE_NAME`), for its zone.
    pub node_name: Option<String>,
    /// Where the last host-side state is kept (None: not kept).
    pub state_file: Option<PathBuf>,
}

/// The watch caches of the host side, shared with the publishing source
/// (DNSEndpoints) so the process keeps one copy.
#[derive(Clone)]
pub struct HostCaches {
    domains: Store<Domain>,
    records: Store<ServiceDNSRecord>,
    members: Store<MemberCluster>,
    /// DNSEndpoints: the source reads this cache instead of its own.
    pub endpoints: Store<DNSEndpoint>,
    /// Woken by every DNSEndpoint change (the source waits on it).
    pub endpoints_changed: Arc<Notify>,
    ready: Arc<AtomicBool>,
    namespaces: NamespaceCache,
}

/// The host's Namespaces (their labels), watched once some Domain admits
/// namespaces by selector (the host identity then needs list/watch on
/// namespaces, as the publishing source does).
#[derive(Clone)]
struct NamespaceCache {
    client: Client,
    changed: Arc<Notify>,
    /// The store and whether it holds its first full list.
    watch: Arc<std::sync::OnceLock<NamespaceWatch>>,
}

/// The host's Namespace store and whether it holds its first full list.
type NamespaceWatch = (Store<PartialObjectMeta<Namespace>>, Arc<AtomicBool>);

impl NamespaceCache {
    /// Whether the labels are all there for `domains`: at once when no
    /// Domain admits by selector, else once the Namespaces are listed
    /// (the watch starts at the first call that wants them).
    fn ready_for(&self, domains: &[Arc<Domain>]) -> bool {
        if !domains.iter().any(|d| wants_labels(d)) {
            return true;
        }
        let (_, listed) = self.watch.get_or_init(|| {
            let (store, writer) = reflector::store();
            spawn_watch(
                Api::<PartialObjectMeta<Namespace>>::all(self.client.clone()),
                watcher::Config::default(),
                writer,
                vec![self.changed.clone()],
                "Namespace",
            );
            let listed = Arc::new(AtomicBool::new(false));
            let (waiting, flag, changed) = (store.clone(), listed.clone(), self.changed.clone());
            tokio::spawn(async move {
                if store_ready(&waiting).await {
                    tracing::info!("host Namespaces listed (a Domain admits namespaces by selector)");
                    flag.store(true, Ordering::Release);
                    changed.notify_one();
                }
            });
            (store, listed)
        });
        listed.load(Ordering::Acquire)
    }

    /// The labels of every Namespace listed so far (none before a Domain
    /// wanted them).
    fn labels(&self) -> NamespaceLabels {
        self.watch.get().map_or_else(NamespaceLabels::new, |(store, _)| {
            store
                .state()
                .iter()
                .map(|n| (n.name_any(), n.labels().clone()))
                .collect()
        })
    }
}

/// Whether `domain` admits namespaces by label selector.
fn wants_labels(domain: &Domain) -> bool {
    domain
        .spec
        .allowed_namespaces
        .as_ref()
        .is_some_and(|a| a.from == NamespacesFrom::Selector)
}

/// The member's caches.
#[derive(Clone)]
struct MemberCaches {
    services: Store<Service>,
    slices: Store<EndpointSlice>,
    nodes: Store<Node>,
}

/// Starts the host watches (all read-only); `changed` is woken by every
/// change of the discovery inputs.
pub fn watch_host(client: &Client, config: &ReplicaConfig, changed: Arc<Notify>) -> HostCaches {
    let ns = config.namespace.as_str();
    let (domains, w) = reflector::store();
    spawn_watch(
        Api::namespaced(client.clone(), ns),
        watcher::Config::default(),
        w,
        vec![changed.clone()],
        "Domain",
    );
    let (records, w) = reflector::store();
    spawn_watch(
        Api::all(client.clone()),
        watcher::Config::default(),
        w,
        vec![changed.clone()],
        "ServiceDNSRecord",
    );
    let (members, w) = reflector::store();
    let one = watcher::Config::default().fields(&format!("metadata.name={}", config.member));
    spawn_watch(
        Api::namespaced(client.clone(), ns),
        one,
        w,
        vec![changed.clone()],
        "MemberCluster",
    );
    let endpoints_changed = Arc::new(Notify::new());
    let (endpoints, w) = reflector::store();
    spawn_watch(
        Api::all(client.clone()),
        watcher::Config::default(),
        w,
        vec![endpoints_changed.clone(), changed.clone()],
        "DNSEndpoint",
    );
    let ready = Arc::new(AtomicBool::new(false));
    let caches = HostCaches {
        domains,
        records,
        members,
        endpoints,
        endpoints_changed,
        ready: ready.clone(),
        namespaces: NamespaceCache {
            client: client.clone(),
            changed: changed.clone(),
            watch: Arc::default(),
        },
    };
    let waiting = caches.clone();
    let span = tracing::Span::current();
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            // The MemberCluster is not waited for: under a propagation
            // engine's registry (--member-source) there is none, and the
            // answers then fall back to the global name.
            // The DNSEndpoint cache has a second waiter (the publishing
            // source): see `store_ready` for why not `wait_until_ready`.
            let all = futures::future::join3(
                store_ready(&waiting.domains),
                store_ready(&waiting.records),
                store_ready(&waiting.endpoints),
            )
            .await;
            if all == (true, true, true) {
                tracing::info!("host caches ready (Domains, ServiceDNSRecords, DNSEndpoints)");
                ready.store(true, Ordering::Release);
                changed.notify_one();
            }
        },
        span,
    ));
    caches
}

fn watch_member(client: &Client, config: &ReplicaConfig, changed: &Arc<Notify>) -> MemberCaches {
    let (services, w) = reflector::store();
    spawn_watch(
        Api::all(client.clone()),
        watcher::Config::default(),
        w,
        vec![changed.clone()],
        "Service",
    );
    let (slices, w) = reflector::store();
    spawn_watch(
        Api::all(client.clone()),
        watcher::Config::default(),
        w,
        vec![changed.clone()],
        "EndpointSlice",
    );
    let (nodes, w) = reflector::store();
    if let Some(node) = &config.node_name {
        let one = watcher::Config::default().fields(&format!("metadata.name={node}"));
        spawn_watch(Api::all(client.clone()), one, w, vec![changed.clone()], "Node");
    }
    MemberCaches {
        services,
        slices,
        nodes,
    }
}

/// A reflector that wakes every `notify` on each event and retries with
/// backoff (keeping its contents) when the API server is unreachable.
fn spawn_watch<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    notify: Vec<Arc<Notify>>,
    kind: &'static str,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let span = tracing::Span::current();
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            let stream = reflector::reflector(
                writer,
                watcher(api, config).modify(|o: &mut K| o.meta_mut().managed_fields = None),
            )
            .default_backoff();
            futures::pin_mut!(stream);
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => {
                        if matches!(event, watcher::Event::InitDone) {
                            tracing::debug!(kind, "listed");
                        }
                        notify.iter().for_each(|n| n.notify_one())
                    }
                    Err(e) => {
                        tracing::warn!(kind, error = %e, "watch failed; retrying with backoff (serving the last state)")
                    }
                }
            }
        },
        span,
    ));
}

/// A ServiceDNSRecord as the discovery zones read it.
pub fn record_view(record: &ServiceDNSRecord) -> RecordView {
    RecordView {
        namespace: record.namespace().unwrap_or_default(),
        service: record.name_any(),
        domain_ref: record.spec.domain_ref.clone(),
        external_name: record.spec.external_name.clone(),
        dns_prefix: record.spec.dns_prefix.clone(),
    }
}

/// A MemberCluster as the discovery zones read it: the region and zones
/// the controller found (status), else the spec's overrides.
pub fn member_view(member: &MemberCluster) -> MemberView {
    let status = member.status.clone().unwrap_or_default();
    MemberView {
        region: status.region.or_else(|| member.spec.region.clone()),
        zones: if status.zones.is_empty() {
            member.spec.zones.clone()
        } else {
            status.zones
        },
        cordoned: member.spec.cordoned,
    }
}

/// A Domain as the discovery zones read it.
pub fn federation_view(domain: &Domain) -> FederationView {
    FederationView {
        name: domain.name_any(),
        domain: domain.spec.domain.clone(),
    }
}

/// What `record`'s status says of the controller's handling of its
/// generation (see [`RecordProgress`]). The controller writes a record's
/// DNSEndpoint before its status; it writes none only when the Domain is
/// missing (`Ready=False DomainNotFound`) or the DNSEndpoint would be too
/// large (`Ready=False ObjectTooLarge`).
pub fn record_progress(record: &ServiceDNSRecord) -> RecordProgress {
    let Some(status) = &record.status else {
        return RecordProgress::NotObserved;
    };
    if status.observed_generation.is_none() || status.observed_generation != record.metadata.generation {
        return RecordProgress::NotObserved;
    }
    let without = conditions::get(&status.conditions, conditions::READY).is_some_and(|c| {
        c.status == "False" && [conditions::DOMAIN_NOT_FOUND, conditions::OBJECT_TOO_LARGE].contains(&c.reason.as_str())
    });
    if without {
        RecordProgress::ObservedWithout
    } else {
        RecordProgress::Observed
    }
}

/// What `state` knows of each record's DNSEndpoint (`N/service-S`, the
/// name the controller gives it), by record `namespace/name`.
pub fn endpoint_knowledge(state: &HostState) -> BTreeMap<String, EndpointKnowledge> {
    let by_name: BTreeMap<(String, String), &DNSEndpoint> = state
        .endpoints
        .iter()
        .map(|e| ((e.namespace().unwrap_or_default(), e.name_any()), e))
        .collect();
    state
        .records
        .iter()
        .map(|record| {
            let id = format!("{}/{}", record.namespace, record.service);
            let progress = state.record_progress.get(&id).copied().unwrap_or_default();
            let key = (record.namespace.clone(), format!("service-{}", record.service));
            let knowledge = match (by_name.get(&key), progress) {
                (Some(endpoint), progress) => EndpointKnowledge::Present {
                    names: endpoint
                        .spec
                        .endpoints
                        .iter()
                        .map(|e| e.dns_name.trim_end_matches('.').to_ascii_lowercase())
                        .collect(),
                    current: progress == RecordProgress::Observed,
                },
                (None, RecordProgress::ObservedWithout) => EndpointKnowledge::Absent,
                (None, _) => EndpointKnowledge::Unknown,
            };
            (id, knowledge)
        })
        .collect()
}

/// Whether a CNAME to `name` (fully qualified) leads somewhere in
/// `snapshot`: the server answers it with an address (A or AAAA, through
/// the CNAME chain in the zones it serves), or with a chain that leaves
/// those zones (a resolver follows it). Not when the chain ends in NXDOMAIN
/// or NODATA here: a CNAME to it would be a CNAME with no address. Asked
/// through the server's own answer path, as a client's query would be.
fn name_served(snapshot: &Snapshot, name: &str) -> bool {
    let Ok(qname) = Name::from_ascii(name) else {
        return false;
    };
    [RecordType::A, RecordType::AAAA].into_iter().any(|qtype| {
        let Some(reply) = ask_snapshot(snapshot, &qname, qtype) else {
            return false;
        };
        if reply.metadata.response_code != ResponseCode::NoError {
            return false;
        }
        if reply
            .answers
            .iter()
            .any(|r| matches!(r.data, RData::A(_) | RData::AAAA(_)))
        {
            return true;
        }
        match reply.answers.last().map(|r| &r.data) {
            Some(RData::CNAME(target)) => ask_snapshot(snapshot, &target.0, RecordType::SOA)
                .is_some_and(|r| r.metadata.response_code == ResponseCode::Refused),
            _ => false,
        }
    })
}

/// `snapshot`'s answer to `qname` `qtype` (None: no readable answer).
fn ask_snapshot(snapshot: &Snapshot, qname: &Name, qtype: RecordType) -> Option<Message> {
    let mut message = Message::new(0, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(qname.clone(), qtype));
    let packet = message.to_vec().ok()?;
    let mut out = Vec::new();
    fedns_dnsserver::answer(snapshot, &packet, Transport::Tcp, &AnswerConfig::default(), &mut out)?;
    Message::from_vec(&out).ok()
}

/// How long a name is answered SERVFAIL while it is pending (its
/// DNSEndpoint not known yet), counted from the first view that has it
/// pending: time for a controller starting with the replica (or a new
/// record's controller pass) to have the DNSEndpoints written. After it
/// the name is left out (NXDOMAIN) and logged: a record the controller
/// does not handle must not keep a resolver retrying for ever.
pub const PENDING_HOLD: Duration = Duration::from_secs(30);

/// What is handed to the server: `computed`, with each pending name that
/// was served before answered still (from `last`, the zones handed over
/// last: the CNAME it was served with; a name served with the local
/// Service's addresses gets the CNAME it would hold without knowing, as
/// the local Service is no answer any more), and each pending name
/// without an answer before put in its zone's `pending` (answered
/// SERVFAIL: "cannot answer now", which resolvers retry and do not cache
/// as a denial) while `holding` it (name → still within
/// [`PENDING_HOLD`]). Returns the zones and the names answered SERVFAIL.
fn serve_plan(
    computed: Vec<ZoneContent>,
    pending: &BTreeMap<String, PendingName>,
    last: &[ZoneContent],
    holding: &dyn Fn(&str) -> bool,
) -> (Vec<ZoneContent>, BTreeSet<String>) {
    let apex = |zone: &ZoneContent| zone.apex.to_ascii().to_ascii_lowercase();
    let mut servfail = BTreeSet::new();
    let mut out = Vec::with_capacity(computed.len());
    for mut zone in computed {
        let apex_text = apex(&zone);
        let wanted: BTreeSet<&String> = pending
            .iter()
            .filter(|(_, p)| p.zone == apex_text)
            .map(|(n, _)| n)
            .collect();
        if wanted.is_empty() {
            out.push(zone);
            continue;
        }
        let mut before: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
        for record in last.iter().filter(|z| apex(z) == apex_text).flat_map(|z| &z.records) {
            let name = record.name.to_ascii().to_ascii_lowercase();
            if wanted.contains(&name) {
                before.entry(name).or_default().push(record);
            }
        }
        for name in &wanted {
            if before.contains_key(*name) || !holding(name) {
                continue;
            }
            if let Ok(owner) = Name::from_ascii(name.as_str()) {
                zone.pending.push(owner);
                servfail.insert((*name).clone());
            }
        }
        for (name, records) in before {
            if records.iter().any(|r| r.record_type() == RecordType::CNAME) {
                zone.records.extend(records.into_iter().cloned());
            } else if let Some(pending) = pending.get(&name) {
                zone.records.extend(pending.records.iter().cloned());
            }
        }
        out.push(zone);
    }
    (out, servfail)
}

/// The host side as the caches hold it now.
fn host_state(host: &HostCaches, member: &str) -> HostState {
    let records = host.records.state();
    HostState {
        record_progress: records
            .iter()
            .map(|r| {
                (
                    format!("{}/{}", r.namespace().unwrap_or_default(), r.name_any()),
                    record_progress(r),
                )
            })
            .filter(|(_, p)| *p != RecordProgress::NotObserved)
            .collect(),
        federations: host.domains.state().iter().map(|d| federation_view(d)).collect(),
        records: records.iter().map(|r| record_view(r)).collect(),
        namespace_labels: host.namespaces.labels(),
        record_created: ownership::record_ages(records.iter().map(|r| &**r)),
        member: host
            .members
            .state()
            .iter()
            .find(|m| m.name_any() == member)
            .map(|m| member_view(m)),
        domains: host.domains.state().iter().map(|d| (**d).clone()).collect(),
        endpoints: host.endpoints.state().iter().map(|e| (**e).clone()).collect(),
    }
}

/// How often the state file is written at most, in seconds.
const STATE_WRITE_INTERVAL: Duration = Duration::from_secs(5);

/// Runs the discovery task until the process ends. `host` watches are
/// already started ([`watch_host`]); `changed` is the Notify they wake.
/// `saved`, read from the state file, stands for the host until its
/// caches are ready. `source` counts the publishing source's publishes:
/// without a saved state, nothing is answered before its first one.
/// `served` turns true (once) when the discovery zones are served: every
/// zone handed over is in the store the listeners answer from and none is
/// held back (the replica's readiness).
#[allow(clippy::too_many_arguments)] // the task's whole wiring, passed once
pub async fn run(
    host: HostCaches,
    member_client: Client,
    config: ReplicaConfig,
    sink: EmbeddedSink,
    changed: Arc<Notify>,
    saved: Option<HostState>,
    metrics: DiscoveryMetrics,
    mut source: watch::Receiver<SourceState>,
    served: watch::Sender<bool>,
) {
    let member = watch_member(&member_client, &config, &changed);
    let waiting = Instant::now();
    let listed = futures::future::join3(store_ready(&member.services), store_ready(&member.slices), async {
        // Without NODE_NAME no Node is watched: nothing to wait for.
        config.node_name.is_none() || store_ready(&member.nodes).await
    })
    .await;
    if listed != (true, true, true) {
        tracing::error!(member = %config.member, "a member watch ended before its first list; discovery stops");
        return;
    }
    tracing::info!(member = %config.member, elapsed_ms = waiting.elapsed().as_millis() as u64, "member caches ready (Services, EndpointSlices, Node)");
    let mut last: BTreeMap<String, Decision> = BTreeMap::new();
    let mut last_problems: std::collections::BTreeSet<String> = Default::default();
    let mut last_saved_hash = None;
    let mut last_write: Option<Instant> = None;
    let mut last_region = saved
        .as_ref()
        .and_then(|s| s.member.as_ref().and_then(|m| m.region.clone()));
    let mut fallback = saved;
    // The zones handed over last, the apexes ever handed over, when each
    // zone was first computed (the hold of a zone with pending names
    // counts from there), and the zones held back last (logged when they
    // change).
    let mut handed_zones: Vec<ZoneContent> = Vec::new();
    let mut first_seen: BTreeMap<String, Instant> = BTreeMap::new();
    let mut last_held: BTreeSet<String> = BTreeSet::new();
    let mut ready = false;
    // Fallback targets found served (see `name_served`).
    let mut confirmed: std::collections::HashSet<String> = Default::default();
    loop {
        // The federation side is whole once its caches are listed and the
        // global names they hold are published (a CNAME fallback points
        // at one of them).
        let host_ready = host.ready.load(Ordering::Acquire)
            && source.borrow().publishes > 0
            && host.namespaces.ready_for(&host.domains.state());
        let state = if host_ready {
            let state = host_state(&host, &config.member);
            fallback = None;
            Some(state)
        } else {
            fallback.clone()
        };
        let node_zone = member.nodes.state().first().and_then(|node| {
            crate::members::effective_topology(&None, &[], std::slice::from_ref(node))
                .1
                .into_iter()
                .next()
        });
        let mut awaiting = !ready;
        let mut hold_left = None;
        if let Some(state) = &state {
            // Nearest names answer this member's region to clients nothing
            // else places (the cluster DNS forwarding from inside).
            let region = state.member.as_ref().and_then(|m| m.region.clone());
            if region != last_region {
                tracing::info!(member = %config.member, ?region, "default client region");
                sink.set_default_client_region(region.clone());
                sink.whole_wanted().notify_one();
                last_region = region;
            }
            let inputs = Inputs {
                cluster_domain: config.cluster_domain.clone(),
                federations: state.federations.clone(),
                records: state.records.clone(),
                member: state.member.clone(),
                node_zone,
                services: super::local::local_services(
                    member.services.state().iter().map(|s| &**s),
                    member.slices.state().iter().map(|s| &**s),
                ),
            };
            let ownership = Ownership::new(
                &state.domains,
                state.namespace_labels.clone(),
                state.record_created.clone(),
            );
            let knowledge = endpoint_knowledge(state);
            let snapshot = sink.store().load();
            // A target found served once stays so for this check: it only
            // gates a name's first answer (a chain that ends nowhere later
            // is the federation's state, answered as it is).
            let found = std::cell::RefCell::new(std::mem::take(&mut confirmed));
            let is_served = |name: &str| {
                if found.borrow().contains(name) {
                    return true;
                }
                let served = name_served(&snapshot, name);
                if served {
                    found.borrow_mut().insert(name.to_owned());
                }
                served
            };
            let view = EndpointsView {
                records: &knowledge,
                served: &is_served,
            };
            let computed = answer::compute_known(&inputs, &ownership, Some(&view));
            drop(snapshot);
            confirmed = found.into_inner();
            let targets: BTreeSet<&str> = computed
                .decisions
                .iter()
                .filter_map(|d| match &d.decision {
                    Decision::Fallback { target, .. } | Decision::Pending { target, .. } => Some(target.as_str()),
                    Decision::Local(_) => None,
                })
                .collect();
            confirmed.retain(|t| targets.contains(t.as_str()));
            // Each problem once, not at every recomputation.
            for problem in computed.problems.iter().filter(|p| !last_problems.contains(*p)) {
                tracing::warn!(member = %config.member, "{problem}");
            }
            last_problems = computed.problems.iter().cloned().collect();
            let (local, fallback_count) = computed.counts();
            metrics.set_names(&config.member, local, fallback_count);
            let now: BTreeMap<String, Decision> = computed
                .decisions
                .iter()
                .map(|d| (d.owner.clone(), d.decision.clone()))
                .collect();
            for (owner, decision) in &now {
                if last.get(owner) != Some(decision) {
                    match decision {
                        Decision::Local(addrs) => {
                            tracing::info!(member = %config.member, %owner, ?addrs, "discovery answer: the local Service")
                        }
                        Decision::Fallback { target, reason } => {
                            tracing::info!(member = %config.member, %owner, %target, %reason, "discovery answer: CNAME to the federated name")
                        }
                        Decision::Pending { target, reason } => {
                            tracing::info!(member = %config.member, %owner, %target, %reason, "discovery answer: pending")
                        }
                    }
                }
            }
            last = now;
            // When each pending name was first seen pending (its hold
            // counts from there); a name no longer pending starts again.
            let now = Instant::now();
            first_seen.retain(|name, _| computed.pending.contains_key(name));
            for name in computed.pending.keys() {
                first_seen.entry(name.clone()).or_insert(now);
            }
            let since = |name: &str| first_seen.get(name).map_or(Duration::ZERO, |t| t.elapsed());
            let holding = |name: &str| since(name) < PENDING_HOLD;
            let (zones, held) = serve_plan(computed.zones, &computed.pending, &handed_zones, &holding);
            if held != last_held {
                if !held.is_empty() {
                    tracing::info!(member = %config.member, names = ?held, "discovery names answered SERVFAIL: pending");
                }
                let released = last_held
                    .difference(&held)
                    .filter(|name| computed.pending.contains_key(*name));
                for name in released {
                    if let Some(pending) = computed.pending.get(name) {
                        tracing::warn!(member = %config.member, %name, record = %pending.record, reason = %pending.reason,
                            "still pending after {}s: no longer answered", PENDING_HOLD.as_secs());
                    }
                }
                last_held = held.clone();
            }
            hold_left = held.iter().map(|name| PENDING_HOLD.saturating_sub(since(name))).min();
            awaiting |= !computed.pending.is_empty();
            let changed_owners = sink.set_extra_zones(zones.clone());
            handed_zones = zones;
            if changed_owners > 0 {
                metrics.updated(&config.member);
            }
            if !ready {
                // Ready once the store the listeners answer from holds
                // every discovery zone handed over (a new zone set is
                // published whole by the source's next pass).
                let in_store: BTreeSet<String> = sink
                    .store()
                    .load()
                    .zones()
                    .into_iter()
                    .map(|z| z.apex.to_ascii_lowercase())
                    .collect();
                if handed_zones
                    .iter()
                    .all(|z| in_store.contains(&z.apex.to_ascii().to_ascii_lowercase()))
                {
                    tracing::info!(member = %config.member, zones = handed_zones.len(), "discovery zones served: ready");
                    ready = true;
                    served.send_replace(true);
                }
            }
            if host_ready {
                if let Some(path) = &config.state_file {
                    let due = last_write.is_none_or(|t| t.elapsed() >= STATE_WRITE_INTERVAL);
                    let hash = state_file::content_hash(state);
                    if due && last_saved_hash != Some(hash) {
                        match state_file::save(path, state) {
                            Ok(()) => {
                                last_saved_hash = Some(hash);
                                tracing::debug!(path = %path.display(), "saved the host-side state");
                            }
                            Err(e) => tracing::warn!(path = %path.display(), "{e}"),
                        }
                        last_write = Some(Instant::now());
                    }
                }
            }
        }
        // A change, a publish, the end of a hold, or a look at the state
        // file now and then.
        let wait = hold_left.map_or(STATE_WRITE_INTERVAL, |left| left.min(STATE_WRITE_INTERVAL));
        let _ = tokio::time::timeout(wait, async {
            tokio::select! {
                _ = changed.notified() => {}
                // Publishes matter until the first (see `host_ready`), and
                // while readiness or a pending name waits for one; a closed
                // channel must not make this loop spin.
                r = source.changed(), if awaiting || source.borrow().publishes == 0 => {
                    if r.is_err() { std::future::pending::<()>().await }
                }
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_dnsserver::hickory_proto::rr::rdata::{CNAME, TXT};

    fn record(status: serde_json::Value, generation: i64) -> ServiceDNSRecord {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
            "metadata": {"name": "nginx", "namespace": "ns", "generation": generation},
            "spec": {"domainRef": "myfed"},
            "status": status,
        }))
        .unwrap()
    }

    fn ready(reason: &str) -> serde_json::Value {
        serde_json::json!({"type": "Ready", "status": "False", "reason": reason, "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z"})
    }

    #[test]
    fn record_progress_reads_the_observed_generation_and_why_nothing_was_written() {
        assert_eq!(
            record_progress(&record(serde_json::json!(null), 1)),
            RecordProgress::NotObserved
        );
        let observed = serde_json::json!({"observedGeneration": 2, "conditions": [ready("NoHealthyEndpoints")]});
        assert_eq!(
            record_progress(&record(observed.clone(), 3)),
            RecordProgress::NotObserved
        );
        assert_eq!(record_progress(&record(observed, 2)), RecordProgress::Observed);
        for reason in ["DomainNotFound", "ObjectTooLarge"] {
            let without = serde_json::json!({"observedGeneration": 2, "conditions": [ready(reason)]});
            assert_eq!(record_progress(&record(without, 2)), RecordProgress::ObservedWithout);
        }
    }

    #[test]
    fn endpoint_knowledge_finds_service_dnsendpoints_by_name() {
        let view = |service: &str| RecordView {
            namespace: "ns".into(),
            service: service.into(),
            domain_ref: "myfed".into(),
            external_name: None,
            dns_prefix: None,
        };
        let endpoint: DNSEndpoint = serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": "service-nginx", "namespace": "ns"},
            "spec": {"endpoints": [{"dnsName": "Nginx.ns.myfed.svc.example.com.", "recordType": "A", "targets": ["192.0.2.1"]}]},
        }))
        .unwrap();
        let state = HostState {
            records: vec![view("nginx"), view("new"), view("gone")],
            endpoints: vec![endpoint],
            record_progress: BTreeMap::from([
                ("ns/nginx".to_owned(), RecordProgress::Observed),
                ("ns/gone".to_owned(), RecordProgress::ObservedWithout),
            ]),
            ..Default::default()
        };
        let known = endpoint_knowledge(&state);
        assert_eq!(
            known["ns/nginx"],
            EndpointKnowledge::Present {
                names: ["nginx.ns.myfed.svc.example.com".to_owned()].into(),
                current: true
            }
        );
        assert_eq!(known["ns/new"], EndpointKnowledge::Unknown);
        assert_eq!(known["ns/gone"], EndpointKnowledge::Absent);
    }

    fn zone(apex: &str, names: &[&str]) -> ZoneContent {
        let apex = Name::from_ascii(apex).unwrap();
        let mut zone = ZoneContent::new(apex);
        for name in names {
            let target = Name::from_ascii("x.example.com.").unwrap();
            zone.records.push(Record::from_rdata(
                Name::from_ascii(name).unwrap(),
                5,
                RData::CNAME(CNAME(target)),
            ));
        }
        zone
    }

    fn pending(name: &str, apex: &str) -> (String, PendingName) {
        (
            name.to_owned(),
            PendingName {
                record: "ns/nginx".into(),
                zone: apex.into(),
                reason: "waiting".into(),
                records: zone(apex, &[name]).records,
            },
        )
    }

    fn names(zones: &[ZoneContent]) -> Vec<String> {
        zones
            .iter()
            .flat_map(|z| z.records.iter().map(|r| r.name.to_ascii()))
            .collect()
    }

    /// A zone never served with a pending name is held back while holding
    /// (REFUSED, not ready), then served without it; a zone served before
    /// keeps a pending name's last records, or leaves it out.
    #[test]
    fn serve_plan_answers_new_pending_names_servfail_and_keeps_last_answers() {
        let (a, b) = ("a.svc.cluster.local.", "b.svc.cluster.local.");
        let nginx = "nginx.ns.a.svc.cluster.local.";
        let computed = || {
            vec![
                zone(a, &["ok.ns.a.svc.cluster.local."]),
                zone(b, &["ok.ns.b.svc.cluster.local."]),
            ]
        };
        let waiting = BTreeMap::from([pending(nginx, a)]);
        // Never answered: SERVFAIL while held, its zone's other names served.
        let (zones, held) = serve_plan(computed(), &waiting, &[], &|_| true);
        assert_eq!(held, BTreeSet::from([nginx.to_owned()]));
        assert_eq!(zones.len(), 2);
        assert_eq!(zones[0].pending, [Name::from_ascii(nginx).unwrap()]);
        assert!(zones[1].pending.is_empty());
        assert!(!names(&zones).contains(&nginx.to_owned()));
        // The hold over: left out (NXDOMAIN).
        let (zones, held) = serve_plan(computed(), &waiting, &[], &|_| false);
        assert!(held.is_empty() && zones[0].pending.is_empty());
        assert!(!names(&zones).contains(&nginx.to_owned()));
        // Served before with the name: its last records stay.
        let last = [zone(a, &["ok.ns.a.svc.cluster.local.", nginx])];
        let (zones, held) = serve_plan(computed(), &waiting, &last, &|_| true);
        assert!(held.is_empty());
        assert_eq!(names(&zones[..1]), ["ok.ns.a.svc.cluster.local.", nginx]);
        // Served before without it (a new record): SERVFAIL meanwhile.
        let (zones, held) = serve_plan(computed(), &waiting, &[zone(a, &[])], &|_| true);
        assert_eq!(names(&zones[..1]), ["ok.ns.a.svc.cluster.local."]);
        assert_eq!(held.len(), 1);
        // Served before with the local Service's address: not that any
        // more, the CNAME it would hold without knowing.
        let mut local = zone(a, &[]);
        local.records.push(Record::from_rdata(
            Name::from_ascii(nginx).unwrap(),
            5,
            RData::A("10.96.0.10".parse().unwrap()),
        ));
        let (zones, _) = serve_plan(computed(), &waiting, &[local], &|_| true);
        let kept: Vec<String> = zones[0]
            .records
            .iter()
            .map(|r| format!("{} {}", r.name, r.record_type()))
            .collect();
        assert_eq!(
            kept,
            [
                "ok.ns.a.svc.cluster.local. CNAME",
                "nginx.ns.a.svc.cluster.local. CNAME"
            ]
        );
    }

    #[test]
    fn name_served_wants_an_address_or_a_chain_leaving_the_zones() {
        let store = fedns_dnsserver::ZoneStore::new();
        let name = |n: &str| Name::from_ascii(n).unwrap();
        let cname = |owner: &str, target: &str| Record::from_rdata(name(owner), 5, RData::CNAME(CNAME(name(target))));
        let mut content = ZoneContent::new(name("example.com."));
        content.records.extend([
            Record::from_rdata(
                name("nginx.ns.myfed.svc.example.com."),
                5,
                RData::A("192.0.2.1".parse().unwrap()),
            ),
            Record::from_rdata(
                name("v6.ns.myfed.svc.example.com."),
                5,
                RData::AAAA("2001:db8::1".parse().unwrap()),
            ),
            // zone → region → global, as a DNSEndpoint publishes them.
            cname(
                "nginx.ns.myfed.svc.us-east-1.example.com.",
                "nginx.ns.myfed.svc.example.com.",
            ),
            cname(
                "nginx.ns.myfed.svc.z.us-east-1.example.com.",
                "nginx.ns.myfed.svc.us-east-1.example.com.",
            ),
            // No cluster answers: the region's CNAME to a global name not there.
            cname(
                "empty.ns.myfed.svc.us-east-1.example.com.",
                "empty.ns.myfed.svc.example.com.",
            ),
            // spec.fallbackTarget: out of the federation.
            cname("out.ns.myfed.svc.example.com.", "www.example.org."),
            Record::from_rdata(name("txt.example.com."), 5, RData::TXT(TXT::new(vec!["x".into()]))),
        ]);
        store.publish(vec![content]);
        let snapshot = store.load();
        for served in [
            "nginx.ns.myfed.svc.example.com.",
            "NGINX.ns.myfed.svc.example.com",
            "nginx.ns.myfed.svc.z.us-east-1.example.com.",
            "v6.ns.myfed.svc.example.com.",
            "out.ns.myfed.svc.example.com.",
        ] {
            assert!(name_served(&snapshot, served), "{served}");
        }
        for not in [
            "other.ns.myfed.svc.example.com.",
            "empty.ns.myfed.svc.us-east-1.example.com.",
            "txt.example.com.",
            "nginx.ns.myfed.svc.example.org.",
            "bad..name.",
        ] {
            assert!(!name_served(&snapshot, not), "{not}");
        }
    }
}
