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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::k8s_openapi::api::core::v1::{Namespace, Node, Service};
use fedns_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use fedns_api::{DNSEndpoint, Domain, MemberCluster, NamespacesFrom, ServiceDNSRecord};
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

use super::answer::{self, Decision, FederationView, Inputs, MemberView, RecordView};
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

/// The host side as the caches hold it now.
fn host_state(host: &HostCaches, member: &str) -> HostState {
    let records = host.records.state();
    HostState {
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
            let computed = answer::compute_owned(&inputs, &ownership);
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
                    }
                }
            }
            last = now;
            let changed_owners = sink.set_extra_zones(computed.zones);
            if changed_owners > 0 {
                metrics.updated(&config.member);
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
        // A change, a publish, or a look at the state file now and then.
        let _ = tokio::time::timeout(STATE_WRITE_INTERVAL, async {
            tokio::select! {
                _ = changed.notified() => {}
                // Only the first publish matters here (see `host_ready`);
                // a closed channel must not make this loop spin.
                r = source.changed(), if source.borrow().publishes == 0 => {
                    if r.is_err() { std::future::pending::<()>().await }
                }
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
