//! The pipeline's Kubernetes source: reflectors of Domains and
//! DNSEndpoints; every change (debounced) updates the desired zones (only
//! the names of changed DNSEndpoints, [`crate::plan::incremental`]), hands the
//! changes to the sinks, and reports back on the objects:
//! `DNSEndpoint.status` (`<provider>/Published`, `observedGeneration`),
//! `Domain.status` (`Ready`, `serial`, `recordCount`), and a Warning
//! Event when an endpoint's problems change.
//!
//! Namespace labels are watched (metadata only) once a Domain admits
//! namespaces by selector; until they are listed nothing is republished,
//! so a zone never loses names for want of labels.
//!
//! While the API server is unreachable the reflectors retry with backoff
//! and nothing is republished, so the sink keeps serving the last good
//! state; a reflector swaps its contents only once a relist is complete,
//! so a restart never publishes a half-listed state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fedns_api::conditions;
use fedns_api::k8s_openapi::api::core::v1::{Namespace, Secret};
use fedns_api::{DNSEndpoint, Domain, NamespacesFrom};
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::{watch, Notify};

use super::cpu_bound::{cpu_bound, pipelined};
use crate::embedded::EmbeddedSink;
use crate::plan::desired::{desired_zones_with, name_server_addresses_check, zone_apex, DesiredZones};
use crate::plan::incremental::{IncrementalZones, Update};
use crate::plan::ownership::NamespaceLabels;
use crate::provider::{ErrorScope, Provider, SyncMode, SyncReport};
use crate::source::domain_finalizer;
use crate::source::serial_records;
use crate::source::spec_changes::{SpecChange, SpecChanges};

/// Settings of the Kubernetes source.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Namespace of the Domain objects (the controller namespace);
    /// None: all namespaces.
    pub domain_namespace: Option<String>,
    /// Wait this long after a change for more changes before publishing.
    pub debounce: Duration,
    /// Write status and Events back (off for read-only replicas).
    pub write_status: bool,
    /// Full resync of external providers (repairs drift, retries errors).
    pub resync_interval: Duration,
    /// Leadership (true: this replica leads). While it does not, external
    /// providers are not synced and nothing is written back, so replicas
    /// never race each other's writes; on winning, a full sync runs.
    /// None: always lead.
    pub leader: Option<watch::Receiver<bool>>,
    /// Manage [`fedns_api::PROVIDER_RECORDS_FINALIZER`] on Domains: add it
    /// while external providers are configured, and on deletion remove a
    /// Domain's records from them before releasing it. Set by the
    /// controller; never by `fedns dns-server`, which syncs no provider and
    /// would release Domains before their records are gone.
    pub domain_finalizer: bool,
    /// A DNSEndpoint watch cache the process already keeps (the
    /// controller's), instead of a second one: at 1,000,000 shards each
    /// copy is about 190 MiB. None: the source watches DNSEndpoints itself.
    pub endpoints: Option<SharedEndpoints>,
    /// How long after the writer records a zone's next serial every
    /// replica starts serving it (`Domain.status.serialRecord`, see
    /// [`serial_records`]): longer than a watch event takes to reach
    /// every replica, so they switch together.
    pub serial_activation_delay: Duration,
}

/// A DNSEndpoint watch cache shared with the source: its store, and the
/// Notify its watch wakes on every change of a DNSEndpoint's spec and on
/// deletion (status writes need not wake it).
#[derive(Clone)]
pub struct SharedEndpoints {
    /// The cache (every namespace).
    pub store: Store<DNSEndpoint>,
    /// Woken by the cache's watch, and by the controller's proposals.
    pub changed: Arc<Notify>,
    /// Specs the controller of this process computed and is writing,
    /// published while this process leads (see [`super::pending`]).
    pub pending: Option<Arc<super::pending::PendingEndpoints>>,
}

impl std::fmt::Debug for SharedEndpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEndpoints").finish_non_exhaustive()
    }
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            domain_namespace: Some("fedns-system".into()),
            debounce: Duration::from_millis(20),
            write_status: true,
            resync_interval: Duration::from_secs(60),
            leader: None,
            domain_finalizer: false,
            endpoints: None,
            serial_activation_delay: Duration::from_secs(1),
        }
    }
}

/// Publishing progress, for readiness and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceState {
    /// Publishes done since start.
    pub publishes: u64,
}

/// Where the pipeline publishes.
#[derive(Debug, Clone, Default)]
pub struct Sinks {
    /// fedns's own DNS server.
    pub embedded: Option<EmbeddedSink>,
    /// External providers (Route53, CoreDNS through etcd), synced in turn.
    pub providers: Vec<Arc<dyn Provider>>,
}

/// One thing a provider could not publish for a DNSEndpoint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Problem {
    /// Condition reason: `InvalidInput`, `Conflict` or `ProviderError`.
    reason: &'static str,
    /// One line.
    message: String,
}

/// Per provider: its name, and per DNSEndpoint (`namespace/name`) the
/// problems it had publishing it.
type ProviderResults = Vec<(&'static str, BTreeMap<String, Vec<Problem>>)>;

/// Condition reason for a provider's failure.
const PROVIDER_ERROR: &str = "ProviderError";

/// Runs the source until the process ends. `state` reports each publish.
pub async fn run(client: Client, config: SourceConfig, sinks: Sinks, state: watch::Sender<SourceState>) {
    let domains_api: Api<Domain> = match &config.domain_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let endpoints_api: Api<DNSEndpoint> = Api::all(client.clone());
    let (domains, domain_writer) = reflector::store();
    let pending = config.endpoints.as_ref().and_then(|shared| shared.pending.clone());
    let (endpoints, changed) = match &config.endpoints {
        Some(shared) => (shared.store.clone(), shared.changed.clone()),
        None => {
            let changed = Arc::new(Notify::new());
            let (endpoints, endpoint_writer) = reflector::store();
            spawn_reflector(
                endpoints_api,
                endpoint_writer,
                changed.clone(),
                "DNSEndpoint",
                |_| None,
                None,
            );
            (endpoints, changed)
        }
    };
    // A Domain's serial record wakes the publisher too (the writer records
    // the next one after it), and the serial follower at once.
    let records_changed = Arc::new(Notify::new());
    spawn_reflector(
        domains_api,
        domain_writer,
        changed.clone(),
        "Domain",
        |d: &Domain| serde_json::to_string(&serial_records::record_version(d)).ok(),
        Some(records_changed.clone()),
    );
    if !super::ready::store_ready(&domains).await || !super::ready::store_ready(&endpoints).await {
        return;
    }
    tracing::info!("Domain and DNSEndpoint caches ready");
    // Records reach the DNS server on their own task, never behind a pass.
    let serials_need_publish = sinks.embedded.as_ref().map(|sink| {
        serial_records::spawn_follower(domains.clone(), sink.store().clone(), records_changed, changed.clone())
    });
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "fedns-publisher".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    let mut reported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut reported_releases: BTreeMap<String, String> = BTreeMap::new();
    let mut mode = SyncMode::Full;
    let mut leader = config.leader.clone();
    let mut leadership_open = leader.is_some();
    let mut namespaces: Option<Store<PartialObjectMeta<Namespace>>> = None;
    let mut zones = IncrementalZones::new(!sinks.providers.is_empty());
    if sinks.providers.is_empty() && sinks.embedded.is_some() {
        // Only the embedded server: a whole computation (the first
        // publish, a Domain edit) goes to it in parts, never holding every
        // record at once (about 1 GiB at 1,000,000 shards).
        zones = zones.in_parts(WHOLE_PUBLISH_PART_NAMES);
    }
    let mut retry_providers = false;
    let mut status_retries: std::collections::HashSet<String> = Default::default();
    // DNSEndpoints whose status write was left for the next pass (a pass
    // spends at most STATUS_BUDGET on them), and written then.
    let mut status_deferred: std::collections::HashSet<String> = Default::default();
    let mut record_retry = false;
    // The embedded sink's extra zones changed their set: publish whole.
    let mut whole_wanted = false;
    let whole_notify = sinks.embedded.as_ref().map(|e| e.whole_wanted().clone());
    loop {
        let leading = leader.as_ref().is_none_or(|l| *l.borrow());
        let domain_state = domains.state();
        let wants_labels = domain_state.iter().any(|d| {
            d.spec
                .allowed_namespaces
                .as_ref()
                .is_some_and(|a| a.from == NamespacesFrom::Selector)
        });
        if wants_labels && namespaces.is_none() {
            let (store, writer) = reflector::store();
            // Metadata only: labels are all the source needs.
            let api = Api::<PartialObjectMeta<Namespace>>::all(client.clone());
            spawn_reflector(api, writer, changed.clone(), "Namespace", |_| None, None);
            namespaces = Some(store);
        }
        let labels: NamespaceLabels = match &namespaces {
            Some(store) if wants_labels => {
                if tokio::time::timeout(Duration::from_secs(10), store.wait_until_ready())
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "a Domain admits namespaces by selector, but Namespaces cannot be listed yet \
                         (RBAC: list/watch namespaces); serving the last published state"
                    );
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    continue;
                }
                store
                    .state()
                    .iter()
                    .map(|n| (n.name_any(), n.labels().clone()))
                    .collect()
            }
            _ => NamespaceLabels::new(),
        };
        let manage_finalizer = config.domain_finalizer && config.write_status && leading;
        if manage_finalizer && !sinks.providers.is_empty() {
            // Before publishing, so no record reaches a provider unguarded.
            domain_finalizer::guard(&client, &domain_state).await;
        }
        // Only the names whose DNSEndpoints changed are recomputed and
        // republished (everything when Domains or namespace labels changed).
        let domain_list: Vec<Domain> = domain_state.iter().map(|d| (**d).clone()).collect();
        // A store keeping no tree took the serials recorded for every
        // replica only so far: this pass publishes whole (see
        // `serial_records::spawn_follower`).
        let serials_need_publish = serials_need_publish
            .as_ref()
            .is_some_and(|flag| flag.swap(false, std::sync::atomic::Ordering::SeqCst));
        // With the controller's proposals in place of what they replace
        // (only the leader's controller proposes).
        let (endpoint_list, proposed) = match &pending {
            Some(pending) if leading => pending.overlay(endpoints.state()),
            _ => (endpoints.state(), Default::default()),
        };
        let pass_started = std::time::Instant::now();
        let update = cpu_bound(|| zones.update(&domain_list, &endpoint_list, &labels));
        let update_kind = match &update {
            Update::Full(_) => "full",
            Update::Whole(_) => "whole in parts",
            Update::Names(_) => "changed names",
            Update::Settings { .. } => "zone settings",
            Update::Unchanged => "unchanged",
        };
        // Zone settings changed with no record: providers sync all the same.
        let settings_changed = matches!(update, Update::Settings { .. });
        // The embedded server's whole records, when it cannot take changed
        // names (only the records are wanted: RRsets and problems go).
        let publish_whole = |sink: &EmbeddedSink| {
            cpu_bound(|| {
                let mut full = desired_zones_with(&domain_list, &endpoint_list, &labels);
                for zone in &mut full.zones {
                    zone.rrsets = Vec::new();
                }
                full.problems = Vec::new();
                sink.apply_taking(&mut full);
            })
        };
        // External providers read every RRset; the embedded server and the
        // status reports need only the problems and the zones' settings.
        let with_rrsets = !sinks.providers.is_empty();
        let (mut desired, changes) = match update {
            Update::Full(full) => (*full, None),
            Update::Whole(settings) => {
                // Published here, in parts: then like a publish of no
                // change, with every name's problems known.
                if let Some(sink) = &sinks.embedded {
                    let wanted = EmbeddedSink::wanted_secrets(&settings);
                    if !wanted.is_empty() {
                        sink.set_tsig_secrets(read_tsig_secrets(&client, &wanted).await);
                    }
                    let wanted = EmbeddedSink::wanted_dnssec_secrets(&settings);
                    if !wanted.is_empty() {
                        sink.set_dnssec_secrets(super::dnssec_keys::read_or_create(&client, &wanted).await);
                    }
                    // The next part is computed while the server applies
                    // this one.
                    let next_part = || zones.next_part(&domain_list, &endpoint_list, &labels);
                    let published = cpu_bound(|| pipelined(next_part, |parts| sink.apply_in_parts(&settings, parts)));
                    if published.is_none() {
                        // Every name is computed all the same: the state
                        // must know every name for the changes after.
                        cpu_bound(|| while zones.next_part(&domain_list, &endpoint_list, &labels).is_some() {});
                        tracing::info!(
                            "the DNS server cannot build these zones name by name; computing and publishing them whole at once"
                        );
                        publish_whole(sink);
                    }
                }
                (cpu_bound(|| zones.desired(with_rrsets)), Some(Vec::new()))
            }
            Update::Settings { settings, names } => {
                // Published here, over the records served; the names that
                // changed meanwhile go as changes below.
                let mut names = Some(names);
                if let Some(sink) = &sinks.embedded {
                    let wanted = EmbeddedSink::wanted_secrets(&settings);
                    if !wanted.is_empty() {
                        sink.set_tsig_secrets(read_tsig_secrets(&client, &wanted).await);
                    }
                    if cpu_bound(|| sink.apply_settings(&settings)).is_none() {
                        tracing::info!(
                            "the DNS server cannot take these zone settings over the records it serves; publishing every zone whole"
                        );
                        publish_whole(sink);
                        names = Some(Vec::new());
                    }
                }
                (cpu_bound(|| zones.desired(with_rrsets)), names)
            }
            Update::Names(changes) => (cpu_bound(|| zones.desired(with_rrsets)), Some(changes)),
            Update::Unchanged => (cpu_bound(|| zones.desired(with_rrsets)), Some(Vec::new())),
        };
        let unchanged = changes.as_ref().is_some_and(Vec::is_empty) && !settings_changed;
        let invalid = by_source(desired.problems.iter().map(|p| {
            (
                format!("{}/{}", p.namespace, p.name),
                Problem {
                    reason: p.kind.reason(),
                    message: format!("{}: {}", p.dns_name, p.message),
                },
            )
        }));
        let mut results: ProviderResults = Vec::new();
        let wanted_secrets = EmbeddedSink::wanted_secrets(&desired);
        let wanted_dnssec = EmbeddedSink::wanted_dnssec_secrets(&desired);
        if let Some(sink) = &sinks.embedded {
            let keys_changed =
                !wanted_secrets.is_empty() && sink.set_tsig_secrets(read_tsig_secrets(&client, &wanted_secrets).await);
            // DNSSEC keys (Secrets made when absent), and signatures due
            // to be made again: publish whole.
            let keys_changed = keys_changed
                | (!wanted_dnssec.is_empty()
                    && sink.set_dnssec_secrets(super::dnssec_keys::read_or_create(&client, &wanted_dnssec).await))
                | sink.resign_due();
            match changes {
                None => {
                    if sinks.providers.is_empty() {
                        // Only providers read the RRsets: free them before
                        // the snapshot build (the memory peak of a whole
                        // publish).
                        for zone in &mut desired.zones {
                            zone.rrsets = Vec::new();
                        }
                    }
                    cpu_bound(|| sink.apply_taking(&mut desired));
                }
                // New TSIG keys go into the zones' transfer settings, a
                // store keeping no tree takes recorded serials only so, and
                // the embedded sink's extra zones changed their set: publish
                // whole.
                Some(_) if keys_changed || serials_need_publish || whole_wanted => publish_whole(sink),
                Some(changes) if changes.is_empty() => {}
                Some(changes) => {
                    if cpu_bound(|| sink.apply_changes(changes)).is_none() {
                        // A change the server's incremental path does not
                        // take (a wildcard, a zone cut, a client region the
                        // zone's table lacks): publish whole.
                        tracing::info!(
                            "the DNS server cannot apply these changed names one by one; publishing every zone whole"
                        );
                        publish_whole(sink);
                    }
                }
            }
            results.push(("embedded", invalid.clone()));
        }
        let published_at = pass_started.elapsed();
        let mut failing = false;
        let mut errors = Vec::new();
        let provider_desired = domain_finalizer::for_providers(&desired, &domain_state);
        // Nothing changed and nothing to retry or repair: providers are in sync.
        let providers_due = !(unchanged && mode == SyncMode::Changed && !retry_providers);
        for provider in sinks.providers.iter().filter(|_| leading && providers_due) {
            let report = provider.sync(&provider_desired, mode).await;
            for (scope, error) in &report.errors {
                tracing::warn!(provider = provider.name(), ?scope, "{error}");
            }
            failing |= report.failed();
            results.push((
                provider.name(),
                provider_problems(provider.name(), &provider_desired, &report, &invalid),
            ));
            errors.push((provider.name(), report.errors));
        }
        retry_providers = failing;
        if manage_finalizer {
            domain_finalizer::release(&client, &recorder, &domain_state, &errors, &mut reported_releases).await;
        }
        if let Some(sink) = sinks.embedded.as_ref().filter(|_| config.write_status && leading) {
            record_retry =
                !serial_records::record_serials(&client, &domain_state, sink.store(), config.serial_activation_delay)
                    .await;
        }
        state.send_modify(|s| s.publishes += 1);
        let statuses_started = pass_started.elapsed();
        let mut status_scope = "none";
        if config.write_status && leading {
            let served = sinks.embedded.as_ref().map(|e| e.store().load().zones());
            let geoip_problem = sinks.embedded.as_ref().and_then(|e| e.store().geoip_problem());
            let dnssec_problems = sinks.embedded.as_ref().map(|e| e.dnssec_problems()).unwrap_or_default();
            // Only DNSEndpoints the update touched, and those whose last
            // status write failed; every one after a full computation, with
            // external providers (their findings may concern any), and on
            // full syncs (leadership won, resync).
            let only = match zones.touched() {
                Some(touched) if sinks.providers.is_empty() && mode == SyncMode::Changed => {
                    // A proposal's status is written once its write lands
                    // (the stored copy is touched then).
                    let mut only: std::collections::HashSet<String> =
                        touched.iter().filter(|id| !proposed.contains(*id)).cloned().collect();
                    only.extend(status_retries.drain());
                    only.extend(status_deferred.drain());
                    Some(only)
                }
                _ => None,
            };
            status_scope = if only.is_some() {
                "changed DNSEndpoints"
            } else {
                "every DNSEndpoint"
            };
            (status_retries, status_deferred) = write_statuses(
                &client,
                &recorder,
                &domains,
                &endpoints,
                only.as_ref(),
                &desired,
                &results,
                served,
                StatusProblems {
                    geoip: geoip_problem,
                    dnssec: dnssec_problems,
                },
                &mut reported,
            )
            .await;
        }
        // What a change arriving now waits for: a slow pass is told.
        let took = pass_started.elapsed();
        let level_info = took >= SLOW_PASS;
        macro_rules! pass_log {
            ($level:ident) => {
                tracing::$level!(
                    update = update_kind,
                    ?mode,
                    compute_and_publish_ms = published_at.as_millis() as u64,
                    providers_ms = (statuses_started - published_at).as_millis() as u64,
                    statuses_ms = (took - statuses_started).as_millis() as u64,
                    statuses = status_scope,
                    "publisher pass took {} ms",
                    took.as_millis()
                )
            };
        }
        if level_info {
            pass_log!(info);
        } else {
            pass_log!(debug);
        }
        // Wait for a change, or resync external providers (sooner after errors).
        let resync = if failing {
            Duration::from_secs(5)
        } else {
            config.resync_interval
        };
        // A recorded serial coming due: the writer records the next one
        // (the serial follower applies it to the DNS server).
        let serial_due = sinks.embedded.as_ref().and_then(|sink| sink.store().next_serial_due());
        let until_due = serial_due.map_or(Duration::ZERO, |due| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            Duration::from_millis(due).saturating_sub(now)
        });
        let mut debounce = config.debounce;
        whole_wanted = false;
        mode = tokio::select! {
            _ = changed.notified() => SyncMode::Changed,
            _ = notified(whole_notify.as_deref()) => {
                whole_wanted = true;
                SyncMode::Changed
            }
            _ = tokio::time::sleep(until_due), if serial_due.is_some() => {
                debounce = Duration::ZERO;
                SyncMode::Changed
            }
            _ = tokio::time::sleep(RECORD_RETRY), if record_retry => SyncMode::Changed,
            // Status writes left over by the last pass: go on with them,
            // after any change that arrived (a change is published first).
            _ = std::future::ready(()), if !status_deferred.is_empty() => SyncMode::Changed,
            // TSIG and DNSSEC key Secrets are read, not watched: look again
            // now and then (signed zones: also whether re-signing is due).
            _ = tokio::time::sleep(TSIG_SECRET_RECHECK),
                if sinks.embedded.is_some() && !(wanted_secrets.is_empty() && wanted_dnssec.is_empty()) => {
                SyncMode::Changed
            }
            _ = tokio::time::sleep(resync), if !sinks.providers.is_empty() => {
                if failing { SyncMode::Changed } else { SyncMode::Full }
            }
            result = leadership_change(&mut leader), if leadership_open => {
                // A closed channel keeps its last value for good.
                leadership_open = result.is_ok();
                SyncMode::Full
            }
        };
        // Coalesce bursts (a controller writing many DNSEndpoints at once).
        if !debounce.is_zero() {
            tokio::time::sleep(debounce).await;
        }
    }
}

/// A publisher pass at least this long is logged at info with its phases
/// (a change that arrives during it waits that long).
const SLOW_PASS: Duration = Duration::from_secs(1);

/// Names per part of a whole publish to the embedded server: small enough
/// that a part's records stay a small share of the controller's memory,
/// large enough that the per-part pass over the DNSEndpoints stays
/// negligible. A name holds a record per member cluster serving it: with
/// 50 members, parts of 8,192 names held about 70 MiB at once (the peak
/// of a Domain edit at 100,000 shards); parts of 2,048 hold about a quarter.
const WHOLE_PUBLISH_PART_NAMES: usize = 2048;

/// How soon a serial record that could not be written is tried again.
const RECORD_RETRY: Duration = Duration::from_secs(1);

/// DNSEndpoint status writes sent at once.
const STATUS_WRITES_IN_FLIGHT: usize = 16;

/// The longest a pass spends starting DNSEndpoint status writes; the rest
/// go in the next passes (measured at 1,000,000 shards: the status writes
/// after a cold start took 14–17 s in one pass, and a change that came
/// meanwhile was published only after them).
const STATUS_BUDGET: Duration = Duration::from_millis(250);

/// How often Secrets holding TSIG keys are read again (key rotation).
const TSIG_SECRET_RECHECK: Duration = Duration::from_secs(60);

/// Reads the Secrets `spec.transfer.tsigKeys` name: (namespace, Secret,
/// data key) → value. A Secret that cannot be read is left out (its zone's
/// transfers stay off) and logged.
async fn read_tsig_secrets(
    client: &Client,
    wanted: &[(String, String)],
) -> BTreeMap<(String, String, String), Vec<u8>> {
    let mut out = BTreeMap::new();
    for (namespace, name) in wanted {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        match api.get_opt(name).await {
            Ok(Some(secret)) => {
                for (key, value) in secret.data.unwrap_or_default() {
                    out.insert((namespace.clone(), name.clone(), key), value.0);
                }
                for (key, value) in secret.string_data.unwrap_or_default() {
                    out.insert((namespace.clone(), name.clone(), key), value.into_bytes());
                }
            }
            Ok(None) => tracing::warn!(%namespace, secret = %name, "TSIG key Secret not found"),
            Err(e) => tracing::warn!(%namespace, secret = %name, error = %e, "TSIG key Secret cannot be read"),
        }
    }
    out
}

/// The most serious of `reasons`: a provider error, then a conflict, then
/// a namespace not allowed, else invalid input.
fn worst_reason(reasons: &[&'static str]) -> &'static str {
    if !reasons.is_empty() && reasons.iter().all(|r| *r == conditions::POLICY_DOWNGRADED) {
        return conditions::POLICY_DOWNGRADED;
    }
    [PROVIDER_ERROR, conditions::CONFLICT, conditions::NOT_ALLOWED]
        .into_iter()
        .find(|r| reasons.contains(r))
        .unwrap_or(conditions::INVALID_INPUT)
}

/// Waits for `notify`; pending forever without one.
async fn notified(notify: Option<&Notify>) {
    match notify {
        Some(notify) => notify.notified().await,
        None => std::future::pending().await,
    }
}

/// Waits for the next change of leadership; pending forever without one.
async fn leadership_change(leader: &mut Option<watch::Receiver<bool>>) -> Result<(), watch::error::RecvError> {
    match leader.as_mut() {
        Some(leader) => leader.changed().await,
        None => std::future::pending().await,
    }
}

fn by_source(items: impl Iterator<Item = (String, Problem)>) -> BTreeMap<String, Vec<Problem>> {
    let mut out: BTreeMap<String, Vec<Problem>> = BTreeMap::new();
    for (source, problem) in items {
        out.entry(source).or_default().push(problem);
    }
    out
}

/// Conflicts, nested names, refused changes and errors of a provider's
/// sync, by DNSEndpoint, on top of the endpoints' own invalid data.
fn provider_problems(
    provider: &str,
    desired: &DesiredZones,
    report: &SyncReport,
    invalid: &BTreeMap<String, Vec<Problem>>,
) -> BTreeMap<String, Vec<Problem>> {
    let mut out = invalid.clone();
    let mut add = |sources: &std::collections::BTreeSet<String>, reason: &'static str, message: String| {
        for source in sources {
            out.entry(source.clone()).or_default().push(Problem {
                reason,
                message: message.clone(),
            });
        }
    };
    let rrsets = || desired.zones.iter().flat_map(|z| z.rrsets.iter());
    for (rrset, holder) in &report.conflicts {
        add(
            &rrset.sources,
            conditions::CONFLICT,
            format!(
                "{} {}: the name is held by {holder} in {provider}; not published there",
                rrset.name, rrset.record_type
            ),
        );
    }
    for (inner, outer) in &report.nested {
        for rrset in rrsets().filter(|r| &r.name == inner || &r.name == outer) {
            add(
                &rrset.sources,
                conditions::CONFLICT,
                format!("{inner} is nested under {outer}: CoreDNS answers {outer} with {inner}'s records too"),
            );
        }
    }
    for (name, record_type, message) in &report.downgraded {
        for rrset in rrsets().filter(|r| &r.name == name && r.record_type == *record_type) {
            add(
                &rrset.sources,
                conditions::POLICY_DOWNGRADED,
                format!("{name} {record_type}: {message}"),
            );
        }
    }
    for (name, record_type, message) in &report.rejected {
        for rrset in rrsets().filter(|r| &r.name == name) {
            add(
                &rrset.sources,
                PROVIDER_ERROR,
                format!("{name} {record_type}: {provider} refused it: {message}"),
            );
        }
    }
    for (scope, error) in &report.errors {
        for zone in &desired.zones {
            let apex = zone.content.apex.to_ascii();
            let hit = match scope {
                ErrorScope::Provider => true,
                ErrorScope::Zone(z) => apex.trim_end_matches('.') == z,
            };
            if hit {
                for rrset in &zone.rrsets {
                    add(&rrset.sources, PROVIDER_ERROR, format!("{provider}: {error}"));
                }
            }
        }
    }
    for problems in out.values_mut() {
        problems.sort();
        problems.dedup();
    }
    out
}

/// Watches `api` into `writer`, waking `changed` when an object's spec
/// may have changed (see [`SpecChanges`]) or its `extra` (a part of its
/// status that matters to the publisher) did, and `extra_changed` too
/// when its `extra` did.
fn spawn_reflector<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    changed: Arc<Notify>,
    kind: &'static str,
    extra: fn(&K) -> Option<String>,
    extra_changed: Option<Arc<Notify>>,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    tokio::spawn(async move {
        let stream = reflector::reflector(
            writer,
            // Never read, and on a real API server often larger than the object.
            watcher(api, watcher::Config::default()).modify(|o: &mut K| o.meta_mut().managed_fields = None),
        )
        .default_backoff();
        futures::pin_mut!(stream);
        // Not for status writes: the publisher's own after every publish.
        let mut specs = SpecChanges::default();
        let mut extras: std::collections::HashMap<String, Option<String>> = Default::default();
        // A relist's objects reach the store only at its end (InitDone):
        // what changed during it wakes again then, so no reader is left
        // with the state from before the relist.
        let mut relist_woke = (false, false);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    let mut wake = !matches!(specs.observe(&event), SpecChange::None);
                    let mut extra_wake = false;
                    if let watcher::Event::Apply(object) | watcher::Event::InitApply(object) = &event {
                        let key = format!(
                            "{}/{}",
                            object.meta().namespace.as_deref().unwrap_or_default(),
                            object.meta().name.as_deref().unwrap_or_default()
                        );
                        let value = extra(object);
                        if value.is_some() && extras.get(&key) != Some(&value) {
                            wake = true;
                            extra_wake = true;
                        }
                        extras.insert(key, value);
                    }
                    match &event {
                        watcher::Event::Init => relist_woke = (false, false),
                        watcher::Event::InitApply(_) => {
                            relist_woke = (relist_woke.0 || wake, relist_woke.1 || extra_wake);
                        }
                        watcher::Event::InitDone => {
                            wake |= relist_woke.0;
                            extra_wake |= relist_woke.1;
                            relist_woke = (false, false);
                        }
                        _ => {}
                    }
                    if extra_wake {
                        if let Some(notify) = &extra_changed {
                            notify.notify_one();
                        }
                    }
                    if wake {
                        changed.notify_one();
                    }
                }
                Err(e) => {
                    tracing::warn!(kind, error = %e, "watch failed; retrying with backoff (serving the last state)")
                }
            }
        }
    });
}

/// What the embedded server found wrong with Domains' settings, for
/// their conditions.
struct StatusProblems {
    /// Why no GeoIP database could be read (`spec.geoRegions`).
    geoip: Option<String>,
    /// Why a Domain (`namespace/name`) asking for DNSSEC is unsigned.
    dnssec: BTreeMap<String, String>,
}

/// Writes the status of the DNSEndpoints `only` names (every one when
/// `None`) and of every Domain. Returns the DNSEndpoints whose write
/// failed (retried on the next change) and those whose write was left for
/// the next pass: writes are started for at most [`STATUS_BUDGET`] per
/// pass, so a burst of them cannot hold up the next publish.
#[allow(clippy::too_many_arguments)]
async fn write_statuses(
    client: &Client,
    recorder: &Recorder,
    domains: &Store<Domain>,
    endpoints: &Store<DNSEndpoint>,
    only: Option<&std::collections::HashSet<String>>,
    desired: &DesiredZones,
    results: &ProviderResults,
    served: Option<Vec<fedns_dnsserver::ZoneSummary>>,
    problems: StatusProblems,
    reported: &mut BTreeMap<String, Vec<String>>,
) -> (std::collections::HashSet<String>, std::collections::HashSet<String>) {
    let StatusProblems {
        geoip: geoip_problem,
        dnssec: dnssec_problems,
    } = problems;
    let mut patches = Vec::new();
    // Every DNSEndpoint, or those `only` names (`namespace/name`) that exist.
    let visit: Vec<Arc<DNSEndpoint>> = match only {
        None => endpoints.state(),
        Some(ids) => ids
            .iter()
            .filter_map(|id| {
                let (namespace, name) = id.split_once('/')?;
                endpoints.get(&ObjectRef::new(name).within(namespace))
            })
            .collect(),
    };
    for endpoint in visit {
        let namespace = endpoint.namespace().unwrap_or_default();
        let name = endpoint.name_any();
        let key = format!("{namespace}/{name}");
        let mut status = endpoint.status.clone().unwrap_or_default();
        let generation = endpoint.metadata.generation;
        let mut changed = status.observed_generation != generation;
        let mut problems: Vec<String> = Vec::new();
        let mut reasons: Vec<&'static str> = Vec::new();
        for (provider, by_endpoint) in results {
            let mine = by_endpoint.get(&key).cloned().unwrap_or_default();
            let only_downgrades = mine.iter().all(|p| p.reason == conditions::POLICY_DOWNGRADED);
            let (ok, reason, message) = if mine.is_empty() {
                (
                    true,
                    "Published",
                    format!("all {} endpoints are published", endpoint.spec.endpoints.len()),
                )
            } else if only_downgrades {
                let messages: Vec<&str> = mine.iter().map(|p| p.message.as_str()).collect();
                (
                    true,
                    conditions::POLICY_DOWNGRADED,
                    format!(
                        "published; {} without their traffic policy: {}",
                        mine.len(),
                        messages.join("; ")
                    ),
                )
            } else {
                // The most serious reason names the condition.
                let reason = worst_reason(&mine.iter().map(|p| p.reason).collect::<Vec<_>>());
                let messages: Vec<&str> = mine.iter().map(|p| p.message.as_str()).collect();
                (
                    false,
                    reason,
                    format!(
                        "{} problem(s), the rest is published: {}",
                        mine.len(),
                        messages.join("; ")
                    ),
                )
            };
            changed |= conditions::set(
                &mut status.conditions,
                &conditions::published_type(provider),
                ok,
                reason,
                &message,
                generation,
            );
            for p in mine {
                reasons.push(p.reason);
                if !problems.contains(&p.message) {
                    problems.push(p.message);
                }
            }
        }
        let message = problems.join("; ");
        status.observed_generation = generation;
        if reported.get(&key) != Some(&problems) {
            if !problems.is_empty() {
                let event = Event {
                    type_: EventType::Warning,
                    reason: worst_reason(&reasons).into(),
                    note: Some(message.chars().take(1000).collect()),
                    action: "Publish".into(),
                    secondary: None,
                };
                if let Err(e) = recorder.publish(&event, &endpoint.object_ref(&())).await {
                    tracing::debug!(error = %e, dnsendpoint = %key, "could not record an Event");
                }
                for problem in &problems {
                    tracing::warn!(dnsendpoint = %key, "{problem}");
                }
            }
            reported.insert(key.clone(), problems);
        }
        if changed {
            patches.push((namespace, name, key, json!({"status": status})));
        }
    }
    // Several at once: after a cold start every DNSEndpoint has a status to
    // write, and one after another they held up the next publish for
    // seconds at 100,000 shards.
    let deadline = std::time::Instant::now() + STATUS_BUDGET;
    let mut pending = patches.into_iter();
    // Taken while the budget lasts; what is left is written by the next pass.
    let within_budget = std::iter::from_fn(|| {
        if std::time::Instant::now() < deadline {
            pending.next()
        } else {
            None
        }
    });
    let failed: std::collections::HashSet<String> = futures::stream::iter(within_budget)
        .map(|(namespace, name, key, patch)| async move {
            let api: Api<DNSEndpoint> = Api::namespaced(client.clone(), &namespace);
            match api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(dnsendpoint = %key, error = %e, "status update failed (retried on the next change)");
                    Some(key)
                }
            }
        })
        .buffer_unordered(STATUS_WRITES_IN_FLIGHT)
        .filter_map(std::future::ready)
        .collect()
        .await;
    let deferred: std::collections::HashSet<String> = pending.map(|(_, _, key, _)| key).collect();
    if !deferred.is_empty() {
        tracing::debug!(
            left = deferred.len(),
            "DNSEndpoint status writes left for the next pass"
        );
    }
    // One set, not a scan per key: that was quadratic in DNSEndpoints.
    match only {
        None => {
            let present: std::collections::HashSet<String> = endpoints
                .state()
                .iter()
                .map(|e| format!("{}/{}", e.namespace().unwrap_or_default(), e.name_any()))
                .collect();
            reported.retain(|key, _| present.contains(key));
        }
        Some(ids) => {
            for id in ids {
                let gone = id
                    .split_once('/')
                    .is_none_or(|(namespace, name)| endpoints.get(&ObjectRef::new(name).within(namespace)).is_none());
                if gone {
                    reported.remove(id);
                }
            }
        }
    }

    let Some(served) = served else {
        return (failed, deferred);
    };
    for domain in domains.state() {
        let namespace = domain.namespace().unwrap_or_default();
        let name = domain.name_any();
        let problem = desired
            .domain_problems
            .iter()
            .find(|p| p.namespace == namespace && p.name == name);
        let apex = zone_apex(&domain);
        let summary = served.iter().find(|z| Some(&z.apex) == apex.as_ref());
        let mut status = domain.status.clone().unwrap_or_default();
        let generation = domain.metadata.generation;
        let mut changed = match (problem, summary) {
            (Some(p), _) => conditions::set(
                &mut status.conditions,
                conditions::READY,
                false,
                conditions::INVALID_INPUT,
                &p.message,
                generation,
            ),
            (None, Some(z)) => conditions::set(
                &mut status.conditions,
                conditions::READY,
                true,
                "Serving",
                &format!("zone {} served with serial {}", z.apex, z.serial),
                generation,
            ),
            (None, None) => conditions::set(
                &mut status.conditions,
                conditions::READY,
                false,
                "NotServed",
                "the zone is not served yet",
                generation,
            ),
        };
        changed |= set_client_regions_condition(&domain, desired, geoip_problem.as_deref(), &mut status.conditions);
        changed |= set_name_server_addresses_condition(&domain, &mut status.conditions);
        let dnssec_problem = dnssec_problems.get(&format!("{namespace}/{name}"));
        let ds = summary.map(|z| z.ds_records.as_slice()).unwrap_or_default();
        if set_dnssec_condition(&domain, dnssec_problem.map(String::as_str), ds, &mut status.conditions) {
            changed = true;
            if let Some(problem) = dnssec_problem {
                let event = Event {
                    type_: EventType::Warning,
                    reason: conditions::SIGNING_FAILED.into(),
                    note: Some(
                        format!("{problem}; the zone is served unsigned")
                            .chars()
                            .take(1000)
                            .collect(),
                    ),
                    action: "Sign".into(),
                    secondary: None,
                };
                if let Err(e) = recorder.publish(&event, &domain.object_ref(&())).await {
                    tracing::debug!(error = %e, domain = %format!("{namespace}/{name}"), "could not record an Event");
                }
            }
        }
        // `serial` and `serialRecord` are written by the serial records
        // alone (serial_records.rs), under the Domain's resourceVersion:
        // the cached copies here may be older.
        let count = summary.map(|z| z.rrset_count as i64);
        changed |= status.record_count != count || status.observed_generation != generation;
        status.record_count = count;
        let ds_records = summary.map(|z| z.ds_records.clone()).unwrap_or_default();
        changed |= status.ds_records != ds_records;
        status.ds_records = ds_records;
        status.observed_generation = generation;
        if changed {
            let api: Api<Domain> = Api::namespaced(client.clone(), &namespace);
            let mut patch = json!({"status": status});
            if let Some(fields) = patch.get_mut("status").and_then(|s| s.as_object_mut()) {
                fields.remove("serial");
                fields.remove("serialRecord");
            }
            if let Err(e) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::warn!(domain = %format!("{namespace}/{name}"), error = %e, "status update failed (retried on the next change)");
            }
        }
    }
    (failed, deferred)
}

/// The Domain condition `DNSSEC`, only while `spec.dnssec.enabled`
/// (removed otherwise): True `Signed` with the DS records `ds` once the
/// zone is served signed, False `SigningFailed` with `problem` when it
/// cannot be, False `NotSigned` before that is known. Returns whether the
/// condition changed.
fn set_dnssec_condition(
    domain: &Domain,
    problem: Option<&str>,
    ds: &[String],
    list: &mut Vec<fedns_api::Condition>,
) -> bool {
    if !domain.spec.dnssec.as_ref().is_some_and(|d| d.enabled) {
        let before = list.len();
        list.retain(|c| c.type_ != conditions::DNSSEC);
        return list.len() != before;
    }
    let generation = domain.metadata.generation;
    match (problem, ds.first()) {
        (Some(problem), _) => conditions::set(
            list,
            conditions::DNSSEC,
            false,
            conditions::SIGNING_FAILED,
            &format!("{problem}; the zone is served unsigned"),
            generation,
        ),
        (None, Some(ds)) => conditions::set(
            list,
            conditions::DNSSEC,
            true,
            "Signed",
            &format!("zone signed; DS for the parent zone: {ds}"),
            generation,
        ),
        (None, None) => conditions::set(
            list,
            conditions::DNSSEC,
            false,
            "NotSigned",
            "the zone is not signed yet",
            generation,
        ),
    }
}

/// The Domain condition `NameServerAddresses` (see
/// [`name_server_addresses_check`]): False with reason `MissingAddresses`
/// when an in-zone name server has none, `InvalidInput` when only entries
/// were left out.
fn set_name_server_addresses_condition(domain: &Domain, list: &mut Vec<fedns_api::Condition>) -> bool {
    let generation = domain.metadata.generation;
    match name_server_addresses_check(domain) {
        Ok(summary) => conditions::set(
            list,
            conditions::NAME_SERVER_ADDRESSES,
            true,
            "Valid",
            &summary,
            generation,
        ),
        Err((missing, problem)) => {
            let reason = if missing {
                conditions::MISSING_ADDRESSES
            } else {
                conditions::INVALID_INPUT
            };
            conditions::set(
                list,
                conditions::NAME_SERVER_ADDRESSES,
                false,
                reason,
                &problem,
                generation,
            )
        }
    }
}

/// The Domain condition `ClientRegionsValid` (only on Domains with
/// `clientRegions` or `geoRegions`): False with the entries left out, or
/// with reason `GeoIPUnavailable` when `geoRegions` is set and the
/// embedded server has no GeoIP database.
fn set_client_regions_condition(
    domain: &Domain,
    desired: &DesiredZones,
    geoip_problem: Option<&str>,
    list: &mut Vec<fedns_api::Condition>,
) -> bool {
    if domain.spec.client_regions.is_empty() && domain.spec.geo_regions.is_empty() {
        let before = list.len();
        list.retain(|c| c.type_ != conditions::CLIENT_REGIONS_VALID);
        return list.len() != before;
    }
    let namespace = domain.namespace().unwrap_or_default();
    let name = domain.name_any();
    let generation = domain.metadata.generation;
    let problem = desired
        .client_region_problems
        .iter()
        .find(|p| p.namespace == namespace && p.name == name);
    let geo_missing = (!domain.spec.geo_regions.is_empty()).then_some(geoip_problem).flatten();
    match (problem, geo_missing) {
        (Some(p), _) => conditions::set(
            list,
            conditions::CLIENT_REGIONS_VALID,
            false,
            conditions::INVALID_INPUT,
            &format!("{}; the other entries are used", p.message),
            generation,
        ),
        (None, Some(why)) => conditions::set(
            list,
            conditions::CLIENT_REGIONS_VALID,
            false,
            conditions::GEOIP_UNAVAILABLE,
            &format!("spec.geoRegions cannot be used: {why}; clients are placed by spec.clientRegions only"),
            generation,
        ),
        (None, None) => conditions::set(
            list,
            conditions::CLIENT_REGIONS_VALID,
            true,
            "Valid",
            &format!(
                "{} client network(s), {} GeoIP region(s)",
                domain.spec.client_regions.len(),
                domain.spec.geo_regions.len()
            ),
            generation,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_serious_reason_names_conditions_and_events() {
        assert_eq!(worst_reason(&[]), conditions::INVALID_INPUT);
        assert_eq!(
            worst_reason(&[conditions::INVALID_INPUT, conditions::CONFLICT]),
            conditions::CONFLICT
        );
        assert_eq!(
            worst_reason(&[conditions::CONFLICT, PROVIDER_ERROR, conditions::INVALID_INPUT]),
            PROVIDER_ERROR
        );
    }
}
