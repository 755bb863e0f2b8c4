//! The `route53` provider (aws-sdk-route53): publishes each Domain's RRsets
//! in the Route53 hosted zone of the same name (or one of
//! `--route53-zone-id`), sharing the zone safely with other tools.
//!
//! * Ownership: every RRset fedns writes gets an external-dns TXT registry
//!   record ([`crate::plan::registry`]); RRsets without one of fedns's owner id are never
//!   changed or deleted, and a desired RRset colliding with them is a
//!   conflict.
//! * Writes: CREATE for new RRsets (so a record that appeared meanwhile is
//!   refused, never overwritten), UPSERT for updates, DELETE with the exact
//!   values read; packed into requests within Route53's quotas ([`batch`]);
//!   a request refused as a whole (`InvalidChangeBatch`, `InvalidInput`) is
//!   halved until the refused changes stand alone, so one bad RRset never
//!   blocks the rest.
//! * Retries: the SDK's standard retry strategy (exponential backoff with
//!   full jitter, at most `max_attempts` attempts) on throttling
//!   (`Throttling`, `PriorRequestNotComplete`), HTTP 429 and 5xx, and
//!   transport errors; requests are spaced to `requests_per_second`.
//! * Idle: a zone whose desired RRsets did not change since its last clean
//!   sync costs no API call; a full resync reads and repairs every zone.
//!
//! Layer: a provider. It may use `plan` (desired RRsets, the planner, the
//! TXT format) and the `provider` contract; never `source` nor another
//! provider (`embedded`, `coredns_etcd`).

pub mod batch;
pub mod records;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use aws_sdk_route53::config::retry::RetryConfig;
use aws_sdk_route53::config::timeout::TimeoutConfig;
use aws_sdk_route53::config::{Credentials, Region};
use aws_sdk_route53::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_route53::operation::change_resource_record_sets::ChangeResourceRecordSetsError;
use aws_sdk_route53::types::{Change, ChangeAction, ChangeBatch, ResourceRecordSet, RrType};
use aws_sdk_route53::Client;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use aws_smithy_runtime::client::retries::classifiers::HttpStatusCodeClassifier;
use fedns_api::RecordType;
use futures::future::BoxFuture;

use crate::plan::desired::{DesiredRRset, DesiredZones};
use crate::plan::planner::{self, CurrentRRset};
use crate::plan::registry::{self, Ownership};
use crate::provider::{AppliedCache, Provider, ProviderMetrics, RateLimit, SyncMode, SyncReport};
use batch::{BatchLimits, Unit};
use records::Held;

/// The provider's name in conditions, metrics and logs.
pub const NAME: &str = "route53";

/// HTTP statuses retried besides throttling error codes: 429 and the
/// transient 5xx.
const RETRIED_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

/// TTL of registry TXT records of ALIAS records, which have no TTL.
const ALIAS_REGISTRY_TTL: u32 = 300;

/// Settings of the Route53 provider.
#[derive(Debug, Clone)]
pub struct Route53Config {
    /// Owner id written into registry records.
    pub owner_id: String,
    /// external-dns's `--txt-wildcard-replacement`: the first label of a
    /// wildcard's registry record name in place of `*` (empty: none; the
    /// registry record is then `a-*.…`, which Route53 takes with the
    /// asterisk as an ordinary octet, as external-dns writes it there).
    pub txt_wildcard_replacement: String,
    /// Hosted zones to use, by id (`Z…`); empty: find each Domain's zone by
    /// name.
    pub zone_ids: Vec<String>,
    /// API endpoint URL (moto, a proxy); None: AWS's.
    pub endpoint: Option<String>,
    /// Signing region; None: from the AWS chain, else `us-east-1`
    /// (Route53 is global).
    pub region: Option<String>,
    /// Explicit access key id and secret; None: the standard AWS chain
    /// (environment, profile, web identity, container, instance metadata).
    pub static_credentials: Option<(String, String)>,
    /// Requests per second at most (Route53 allows 5 per account).
    pub requests_per_second: f64,
    /// Attempts per request, first included (SDK standard retry strategy).
    pub max_attempts: u32,
    /// First retry delay; doubles per attempt, with full jitter.
    pub initial_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// Timeout of one attempt.
    pub attempt_timeout: Duration,
    /// Quotas of one change request.
    pub batch_limits: BatchLimits,
}

impl Default for Route53Config {
    fn default() -> Self {
        Route53Config {
            owner_id: "fedns".into(),
            txt_wildcard_replacement: String::new(),
            zone_ids: Vec::new(),
            endpoint: None,
            region: None,
            static_credentials: None,
            requests_per_second: 4.0,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            attempt_timeout: Duration::from_secs(30),
            batch_limits: BatchLimits::default(),
        }
    }
}

/// The planned work for one zone: change units and what to report.
pub type ZonePlan = planner::ZonePlan<Unit>;

/// The provider.
pub struct Route53 {
    config: Route53Config,
    client: tokio::sync::OnceCell<Client>,
    zone_ids: Mutex<BTreeMap<String, String>>,
    limit: RateLimit,
    applied: AppliedCache,
    /// Per zone (apex): what Route53 holds, as last read and then patched
    /// with every change applied since. A `Changed` sync plans against it
    /// instead of listing the zone again (at 34,000 names a listing is
    /// over 100 requests, at 5 per second); a `Full` sync, any failure and
    /// any refused change read the zone again.
    held: Mutex<BTreeMap<String, Vec<ResourceRecordSet>>>,
    metrics: ProviderMetrics,
}

/// The identity of a record set in a zone: (name as fedns spells it, type,
/// set identifier).
fn held_key(rrset: &ResourceRecordSet) -> (String, String, Option<String>) {
    (
        records::decode_name(rrset.name()),
        rrset.r#type().as_str().to_owned(),
        rrset.set_identifier().map(str::to_owned),
    )
}

/// `held` after `changes` were applied.
fn patch_held(held: &mut Vec<ResourceRecordSet>, changes: &[Change]) {
    for change in changes {
        let Some(rrset) = change.resource_record_set() else {
            continue;
        };
        let key = held_key(rrset);
        held.retain(|h| held_key(h) != key);
        if *change.action() != ChangeAction::Delete {
            held.push(rrset.clone());
        }
    }
}

impl std::fmt::Debug for Route53 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route53")
            .field("endpoint", &self.config.endpoint)
            .field("zone_ids", &self.config.zone_ids)
            .finish_non_exhaustive()
    }
}

/// One line for an SDK error: the service's code and message, or the
/// transport error with its causes (timeouts, refused connections).
fn describe<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match error {
        SdkError::ServiceError(service) => {
            let e = service.err();
            format!(
                "{}: {}",
                e.code().unwrap_or("error"),
                e.message().unwrap_or("no message")
            )
        }
        other => DisplayErrorContext(other).to_string(),
    }
}

/// Why a change request failed.
enum WriteError {
    /// Route53 refused the batch's content: split it.
    Refused(String),
    /// Anything else (retries exhausted, access denied): stop the zone.
    Failed(String),
}

impl Route53 {
    /// A provider for `config`, counting into `metrics` (no connection yet).
    pub fn new(config: Route53Config, metrics: ProviderMetrics) -> Self {
        Route53 {
            limit: RateLimit::new(config.requests_per_second),
            config,
            client: tokio::sync::OnceCell::new(),
            zone_ids: Mutex::new(BTreeMap::new()),
            applied: AppliedCache::default(),
            held: Mutex::new(BTreeMap::new()),
            metrics,
        }
    }

    fn held_cache(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<ResourceRecordSet>>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The metrics this provider counts into.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.metrics
    }

    async fn client(&self) -> Client {
        self.client
            .get_or_init(|| async {
                let http = aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
                    .build_https();
                let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
                if let Some(region) = &self.config.region {
                    loader = loader.region(Region::new(region.clone()));
                }
                if let Some((key, secret)) = &self.config.static_credentials {
                    loader = loader.credentials_provider(Credentials::new(key, secret, None, None, "fedns-static"));
                }
                let shared = loader.load().await;
                let mut builder = aws_sdk_route53::config::Builder::from(&shared)
                    .retry_config(
                        RetryConfig::standard()
                            .with_max_attempts(self.config.max_attempts.max(1))
                            .with_initial_backoff(self.config.initial_backoff)
                            .with_max_backoff(self.config.max_backoff),
                    )
                    .retry_classifier(HttpStatusCodeClassifier::new_from_codes(RETRIED_STATUSES.to_vec()))
                    .timeout_config(
                        TimeoutConfig::builder()
                            .operation_attempt_timeout(self.config.attempt_timeout)
                            .connect_timeout(Duration::from_secs(5))
                            .build(),
                    );
                if shared.region().is_none() {
                    builder = builder.region(Region::new("us-east-1"));
                }
                if let Some(endpoint) = &self.config.endpoint {
                    builder = builder.endpoint_url(endpoint);
                }
                Client::from_conf(builder.build())
            })
            .await
            .clone()
    }

    fn cached_zone_id(&self, apex: &str) -> Option<String> {
        self.zone_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(apex)
            .cloned()
    }

    /// The id of the hosted zone serving `apex`; None when no hosted zone
    /// (of those given with `--route53-zone-id`, if any) is named `apex`.
    async fn zone_id(&self, client: &Client, apex: &str) -> Result<Option<String>, String> {
        if let Some(id) = self.cached_zone_id(apex) {
            return Ok(Some(id));
        }
        let strip = |id: &str| id.trim_start_matches("/hostedzone/").to_owned();
        let id = if self.config.zone_ids.is_empty() {
            self.limit.acquire().await;
            let response = client
                .list_hosted_zones_by_name()
                .dns_name(format!("{apex}."))
                .max_items(10)
                .send()
                .await;
            self.metrics.api_call(NAME, "list_zones", response.is_ok());
            let response = response.map_err(|e| format!("listing hosted zones: {}", describe(&e)))?;
            let ids: Vec<String> = response
                .hosted_zones()
                .iter()
                .filter(|z| records::decode_name(z.name()) == apex)
                .map(|z| strip(z.id()))
                .collect();
            match ids.as_slice() {
                [id] => id.clone(),
                [] => return Ok(None),
                _ => {
                    return Err(format!(
                        "{} hosted zones are named {apex} ({}); choose one with --route53-zone-id",
                        ids.len(),
                        ids.join(", ")
                    ))
                }
            }
        } else {
            let mut found = None;
            for id in &self.config.zone_ids {
                self.limit.acquire().await;
                let response = client.get_hosted_zone().id(id).send().await;
                self.metrics.api_call(NAME, "get_zone", response.is_ok());
                let response = response.map_err(|e| format!("reading hosted zone {id}: {}", describe(&e)))?;
                if response
                    .hosted_zone()
                    .is_some_and(|z| records::decode_name(z.name()) == apex)
                {
                    found = Some(strip(id));
                    break;
                }
            }
            match found {
                Some(id) => id,
                None => return Ok(None),
            }
        };
        self.zone_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(apex.to_owned(), id.clone());
        Ok(Some(id))
    }

    /// Every RRset of the zone, following pagination.
    async fn read_zone(&self, client: &Client, zone_id: &str) -> Result<Vec<ResourceRecordSet>, String> {
        let mut out = Vec::new();
        let mut start: Option<(String, Option<RrType>, Option<String>)> = None;
        loop {
            self.limit.acquire().await;
            let mut request = client
                .list_resource_record_sets()
                .hosted_zone_id(zone_id)
                .max_items(300);
            if let Some((name, record_type, identifier)) = &start {
                request = request
                    .start_record_name(name)
                    .set_start_record_type(record_type.clone())
                    .set_start_record_identifier(identifier.clone());
            }
            let response = request.send().await;
            self.metrics.api_call(NAME, "list_records", response.is_ok());
            let response = response.map_err(|e| format!("listing records of zone {zone_id}: {}", describe(&e)))?;
            out.extend(response.resource_record_sets().iter().cloned());
            match response.next_record_name() {
                Some(next) if response.is_truncated() => {
                    start = Some((
                        next.to_owned(),
                        response.next_record_type().cloned(),
                        response.next_record_identifier().map(str::to_owned),
                    ))
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Plans one zone: `held` is everything Route53 holds in it.
    pub fn plan_zone(
        &self,
        apex: &str,
        zone_id: &str,
        desired: &[DesiredRRset],
        held: &[ResourceRecordSet],
    ) -> ZonePlan {
        plan_zone_with(
            &self.config.owner_id,
            &self.config.txt_wildcard_replacement,
            apex,
            zone_id,
            desired,
            held,
        )
    }

    /// Sends one change request.
    async fn write(&self, client: &Client, zone_id: &str, units: &[Unit]) -> Result<(), WriteError> {
        let changes: Vec<Change> = units.iter().flat_map(|u| u.changes.iter().cloned()).collect();
        let batch = ChangeBatch::builder()
            .comment("fedns")
            .set_changes(Some(changes))
            .build()
            .map_err(|e| WriteError::Failed(e.to_string()))?;
        self.limit.acquire().await;
        let response = client
            .change_resource_record_sets()
            .hosted_zone_id(zone_id)
            .change_batch(batch)
            .send()
            .await;
        self.metrics.api_call(NAME, "change_records", response.is_ok());
        let Err(error) = response else { return Ok(()) };
        let refused = match error.as_service_error() {
            Some(ChangeResourceRecordSetsError::InvalidChangeBatch(e)) => {
                let mut messages = e.messages().to_vec();
                messages.extend(e.message().map(str::to_owned));
                Some(messages.join("; "))
            }
            Some(e @ ChangeResourceRecordSetsError::InvalidInput(_)) => {
                Some(e.message().unwrap_or("invalid input").into())
            }
            _ => None,
        };
        Err(match refused {
            Some(message) => WriteError::Refused(message),
            None => WriteError::Failed(format!("changing records: {}", describe(&error))),
        })
    }

    /// Applies `units` in batches; refused batches are halved down to the
    /// single refused units, which go into `report.rejected`.
    async fn apply(
        &self,
        client: &Client,
        apex: &str,
        zone_id: &str,
        units: Vec<Unit>,
        report: &mut SyncReport,
        held: &mut Vec<ResourceRecordSet>,
    ) -> Result<(), String> {
        let mut pending: Vec<Vec<Unit>> = batch::pack(units, self.config.batch_limits);
        pending.reverse();
        while let Some(batch) = pending.pop() {
            match self.write(client, zone_id, &batch).await {
                Ok(()) => {
                    for unit in &batch {
                        patch_held(held, &unit.changes);
                    }
                    report.writes += 1;
                    report.changes += batch.len();
                    self.metrics.changes_applied(NAME, apex, batch.len());
                }
                Err(WriteError::Refused(message)) if batch.len() == 1 => {
                    let unit = &batch[0];
                    tracing::warn!(provider = NAME, zone = apex, name = %unit.name, record_type = %unit.record_type, "Route53 refused the change: {message}");
                    report.rejected.push((unit.name.clone(), unit.record_type, message));
                }
                Err(WriteError::Refused(message)) => {
                    tracing::info!(
                        provider = NAME,
                        zone = apex,
                        changes = batch.len(),
                        "Route53 refused a batch ({message}); splitting it"
                    );
                    let mut first = batch;
                    let second = first.split_off(first.len() / 2);
                    pending.push(second);
                    pending.push(first);
                }
                Err(WriteError::Failed(message)) => return Err(message),
            }
        }
        Ok(())
    }

    async fn sync_zone(
        &self,
        client: &Client,
        apex: &str,
        desired: &[DesiredRRset],
        mode: SyncMode,
        report: &mut SyncReport,
    ) -> Result<(), String> {
        let Some(zone_id) = self.zone_id(client, apex).await? else {
            if desired.is_empty() {
                // Nothing to publish and no zone that could hold anything
                // of ours (a deleted Domain whose hosted zone is gone too).
                return Ok(());
            }
            return Err(if self.config.zone_ids.is_empty() {
                format!("no Route53 hosted zone is named {apex}; create it or set --route53-zone-id")
            } else {
                format!("none of the hosted zones given with --route53-zone-id is {apex}")
            });
        };
        let cached = match mode {
            SyncMode::Changed => self.held_cache().get(apex).cloned(),
            SyncMode::Full => None,
        };
        let mut held = match cached {
            Some(held) => held,
            None => {
                self.held_cache().remove(apex);
                self.read_zone(client, &zone_id).await?
            }
        };
        let plan = self.plan_zone(apex, &zone_id, desired, &held);
        self.metrics.records_owned(NAME, apex, plan.owned);
        report.conflicts.extend(plan.conflicts);
        report.rejected.extend(plan.rejected);
        report.downgraded.extend(plan.downgraded);
        if plan.units.is_empty() {
            self.held_cache().insert(apex.to_owned(), held);
            return Ok(());
        }
        let (writes, changes) = (report.writes, report.changes);
        let rejected = report.rejected.len();
        let result = self.apply(client, apex, &zone_id, plan.units, report, &mut held).await;
        if result.is_ok() && report.rejected.len() == rejected {
            self.held_cache().insert(apex.to_owned(), held);
        } else {
            // Read again next time: what a refused or failed batch left is
            // not known here.
            self.held_cache().remove(apex);
        }
        tracing::info!(
            provider = NAME,
            zone = apex,
            zone_id = %zone_id,
            requests = report.writes - writes,
            changes = report.changes - changes,
            "applied changes"
        );
        result
    }

    /// Brings Route53 in line with `desired`, zone by zone.
    pub async fn sync_all(&self, desired: &DesiredZones, mode: SyncMode) -> SyncReport {
        let started = Instant::now();
        let mut report = SyncReport::default();
        if mode == SyncMode::Full {
            // Zones may have been recreated: look their ids up again.
            self.zone_ids
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clear();
        }
        let client = self.client().await;
        let (apexes, pending) = self.applied.pending(desired, mode, &mut report);
        for (apex, rrsets) in pending {
            let mut outcome = SyncReport::default();
            let result = self.sync_zone(&client, &apex, rrsets, mode, &mut outcome).await;
            if result.is_err() {
                self.held_cache().remove(&apex);
            }
            self.applied.finish(NAME, &apex, rrsets, result, outcome, &mut report);
        }
        self.held_cache().retain(|apex, _| apexes.contains(apex));
        self.metrics.sync_duration(NAME, started);
        report
    }
}

impl Provider for Route53 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport> {
        Box::pin(self.sync_all(desired, mode))
    }
}

/// The plan for one zone with no wildcard replacement (the planning
/// tests' default).
#[cfg(test)]
fn plan_zone(owner: &str, apex: &str, zone_id: &str, desired: &[DesiredRRset], held: &[ResourceRecordSet]) -> ZonePlan {
    plan_zone_with(owner, "", apex, zone_id, desired, held)
}

/// The plan for one zone (see [`Route53::plan_zone`]); registry records of
/// wildcards are named with `txt_wildcard_replacement` (empty: none).
fn plan_zone_with(
    owner: &str,
    txt_wildcard_replacement: &str,
    apex: &str,
    zone_id: &str,
    desired: &[DesiredRRset],
    held: &[ResourceRecordSet],
) -> ZonePlan {
    let mut out = ZonePlan::default();
    // Route53 takes `*` inside a label as an ordinary octet (`\052`).
    let mut ownership: Ownership<Held> = Ownership::new(txt_wildcard_replacement, true);
    let mut records: Vec<Held> = Vec::new();
    let mut candidates = Vec::new();
    for raw in held {
        let held = records::decode(raw);
        let registry_value = (held.record_type == Some(RecordType::TXT))
            .then(|| {
                held.targets
                    .iter()
                    .find_map(|t| registry::parse_value(&crate::plan::txt::concatenated(t)))
            })
            .flatten();
        match registry_value {
            Some((record_owner, resource)) => candidates.push(registry::RegistryCandidate {
                name: held.name.clone(),
                set_identifier: held.set_identifier.clone().unwrap_or_default(),
                owner: record_owner,
                resource,
                held,
            }),
            None => records.push(held),
        }
    }
    let (registry_records, data) = registry::sort_candidates(candidates, txt_wildcard_replacement, owner);
    records.extend(data);
    for c in registry_records {
        ownership.claim(&c.name, &c.set_identifier, c.owner, c.held, owner);
    }

    // What Route53 holds, as the planner sees it.
    let mut current: Vec<CurrentRRset> = Vec::new();
    let mut raw_of: BTreeMap<(String, RecordType, String), Held> = BTreeMap::new();
    let mut other_names: BTreeMap<String, String> = BTreeMap::new();
    for held in records {
        match held.record_type {
            // Plain record sets, and routed ones of the kinds fedns writes
            // (weighted, failover, latency).
            Some(record_type) if held.set_identifier.is_none() || !held.policy.is_empty() => {
                let set = held.set_identifier.clone().unwrap_or_default();
                let record_owner = ownership.owner(&held.name, record_type, &set);
                current.push(CurrentRRset {
                    name: held.name.clone(),
                    record_type,
                    ttl: held.ttl,
                    targets: held.targets.clone(),
                    owner: record_owner,
                    set_identifier: set.clone(),
                    policy: held.policy.clone(),
                });
                raw_of.insert((held.name.clone(), record_type, set), held);
            }
            _ => {
                let what = format!("a {} record", held.raw.r#type().as_str());
                other_names.insert(held.name.clone(), what);
            }
        }
    }
    // A foreign registry record whose RRset is gone still claims it.
    current.extend(ownership.orphan_claims(owner, |name, t, set| {
        raw_of.contains_key(&(name.to_owned(), t, set.to_owned()))
    }));
    out.owned = current.iter().filter(|c| c.owner.as_deref() == Some(owner)).count();

    // What fedns wants, in Route53's terms: routed RRsets as one record
    // set per set identifier where Route53 can express the policy.
    let mut expanded: Vec<DesiredRRset> = Vec::new();
    for rrset in desired {
        match routed_record_sets(rrset) {
            Ok(sets) => {
                if let Some(why) = rrset.routing.as_ref().and_then(|r| r.stickiness_lost("Route53")) {
                    out.downgraded.push((rrset.name.clone(), rrset.record_type, why));
                }
                // Routed record sets have no answer limit (multivalue
                // answers are a policy of their own).
                if let (Some(routing), Some(n)) = (
                    rrset
                        .routing
                        .as_ref()
                        .filter(|r| r.policy != fedns_api::RoutingPolicy::All),
                    rrset.answer_limit(),
                ) {
                    let why = format!(
                        "Route53 has no answer limit for {} record sets: published {} with every address of the chosen set; at most {n} per answer come from fedns's own DNS server only",
                        routing.policy.as_str(),
                        routing.policy.as_str()
                    );
                    out.downgraded.push((rrset.name.clone(), rrset.record_type, why));
                }
                expanded.extend(sets)
            }
            Err(why) => {
                out.downgraded.push((rrset.name.clone(), rrset.record_type, why));
                expanded.push(DesiredRRset {
                    routing: None,
                    ..rrset.clone()
                });
            }
        }
    }
    let mut allowed: Vec<DesiredRRset> = Vec::new();
    for rrset in &expanded {
        if !ownership.admit(rrset, apex, "Route53", &mut out) {
            continue;
        }
        match records::for_route53(rrset, apex, zone_id) {
            Ok(rrset) => match other_names.get(&rrset.name) {
                Some(what) if rrset.record_type == RecordType::CNAME => out.conflicts.push((rrset, what.clone())),
                _ => allowed.push(rrset),
            },
            Err(e) => out.rejected.push((rrset.name.clone(), rrset.record_type, e)),
        }
    }

    let plan = planner::plan(&allowed, &current, owner);
    out.conflicts
        .extend(plan.conflicts.into_iter().map(planner::Conflict::reported));

    let mut built = |units: &mut Vec<Unit>,
                     name: &str,
                     record_type: RecordType,
                     changes: Result<Vec<Change>, String>| {
        match changes {
            Ok(changes) => units.push(Unit {
                name: name.to_owned(),
                record_type,
                changes,
            }),
            Err(e) => out.rejected.push((name.to_owned(), record_type, e)),
        }
    };
    let mut units = Vec::new();
    let mut touched: BTreeSet<(String, RecordType, String)> = BTreeSet::new();
    for change in plan.changes {
        match change {
            planner::Change::Create(d) | planner::Change::Update { desired: d, .. } => {
                let key = (d.name.clone(), d.record_type, d.set_identifier.clone());
                let action = if raw_of.contains_key(&key) {
                    ChangeAction::Upsert
                } else {
                    ChangeAction::Create
                };
                let changes = records::build_routed_rrset(
                    &d.name,
                    d.record_type,
                    d.ttl,
                    &d.targets,
                    &d.set_identifier,
                    &d.policy_key(),
                )
                .and_then(|record| {
                    Ok(vec![
                        change_of(action, record)?,
                        change_of(ChangeAction::Upsert, registry_rrset(owner, &ownership, &d)?)?,
                    ])
                });
                touched.insert(key);
                built(&mut units, &d.name, d.record_type, changes);
            }
            planner::Change::Delete(c) => {
                let key = (c.name.clone(), c.record_type, c.set_identifier.clone());
                let mut changes = Vec::new();
                if let Some(held) = raw_of.get(&key) {
                    changes.push(change_of(ChangeAction::Delete, held.raw.clone()));
                }
                if let Some((_, txt)) = ownership.typed.get(&key) {
                    changes.push(change_of(ChangeAction::Delete, txt.raw.clone()));
                }
                touched.insert(key);
                built(&mut units, &c.name, c.record_type, changes.into_iter().collect());
            }
        }
    }
    // Our registry records whose RRset is gone and not wanted: clean up.
    for ((name, record_type, set), (record_owner, txt)) in &ownership.typed {
        let key = (name.clone(), *record_type, set.clone());
        if record_owner == owner && !raw_of.contains_key(&key) && !touched.contains(&key) {
            built(
                &mut units,
                name,
                *record_type,
                change_of(ChangeAction::Delete, txt.raw.clone()).map(|c| vec![c]),
            );
        }
    }
    out.units = units;
    out
}

fn change_of(action: ChangeAction, rrset: ResourceRecordSet) -> Result<Change, String> {
    Change::builder()
        .action(action)
        .resource_record_set(rrset)
        .build()
        .map_err(|e| e.to_string())
}

/// The registry TXT RRset of a desired RRset. For a routed record set it
/// carries the same set identifier and routing policy, as external-dns's
/// TXT registry writes it (the registry endpoint copies `SetIdentifier`
/// and `ProviderSpecific`), so external-dns reads fedns's ownership the
/// same way.
fn registry_rrset(owner: &str, ownership: &Ownership<Held>, rrset: &DesiredRRset) -> Result<ResourceRecordSet, String> {
    let resource = rrset.sources.iter().next().map(|s| registry::resource_of(s));
    let ttl = if rrset.ttl == 0 { ALIAS_REGISTRY_TTL } else { rrset.ttl };
    records::build_routed_rrset(
        &ownership.txt_name(&rrset.name, rrset.record_type),
        RecordType::TXT,
        ttl,
        &[registry::txt_value(owner, resource.as_deref())],
        &rrset.set_identifier,
        &rrset.policy_key(),
    )
}

/// `Nearest` as geolocation record sets from the Domain's geo table: one
/// per country or continent whose region has clusters (`SetIdentifier`
/// `country-DE`, `continent-EU`), answering that region's clusters, and a
/// default location (`*`) answering the fallback order's first region with
/// clusters, else every cluster.
fn geolocation_record_sets(
    routing: &crate::plan::desired::RoutedSet,
    one: &dyn Fn(crate::plan::desired::RoutedMember, Vec<String>) -> DesiredRRset,
) -> Vec<DesiredRRset> {
    let targets_of = |region: Option<&str>| -> Vec<String> {
        let mut targets: Vec<String> = routing
            .members
            .iter()
            .filter(|m| region.is_none() || m.region.as_deref() == region)
            .flat_map(|m| m.targets.iter().cloned())
            .collect();
        targets.sort();
        targets.dedup();
        targets
    };
    let member = |location: &str| crate::plan::desired::RoutedMember {
        set_identifier: if location == "country:*" {
            "default".to_owned()
        } else {
            location.replace(':', "-")
        },
        geo: Some(location.to_owned()),
        ..routing.members[0].clone()
    };
    let mut out = Vec::new();
    for (location, region) in &routing.locations {
        let targets = targets_of(Some(region));
        if !targets.is_empty() {
            out.push(one(member(location), targets));
        }
    }
    let default = routing
        .fallback
        .iter()
        .map(|r| targets_of(Some(r)))
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| targets_of(None));
    out.push(one(member("country:*"), default));
    out
}

/// A plain RRset with an answer limit (`fedns/max-answers`) of 8 or more
/// as multivalue answer record sets, one per address (`SetIdentifier` =
/// the address): Route53 answers up to 8 of them, so at most the limit.
/// Without a limit, or with fewer addresses than it: as it is.
///
/// # Errors
/// A limit under 8, which Route53 cannot keep (the caller publishes all).
fn multivalue_record_sets(rrset: &DesiredRRset) -> Result<Vec<DesiredRRset>, String> {
    use crate::plan::desired::{RoutedMember, RoutedSet};
    let Some(n) = rrset.answer_limit() else {
        return Ok(vec![rrset.clone()]);
    };
    if n < ROUTE53_MULTIVALUE_ANSWERS {
        return Err(format!(
            "Route53 multivalue answers hold up to {ROUTE53_MULTIVALUE_ANSWERS} records, more than maxAnswers {n}: all {} addresses are answered; at most {n} per answer come from fedns's own DNS server only",
            rrset.targets.len()
        ));
    }
    Ok(rrset
        .targets
        .iter()
        .map(|target| {
            let member = RoutedMember {
                set_identifier: target.clone(),
                targets: vec![target.clone()],
                weight: None,
                failover: None,
                region: None,
                aws_region: None,
                provider_specific: rrset.provider_specific.clone(),
                geo: None,
            };
            DesiredRRset {
                targets: vec![target.clone()],
                set_identifier: target.clone(),
                routing: Some(RoutedSet {
                    policy: fedns_api::RoutingPolicy::All,
                    members: vec![member],
                    fallback: Vec::new(),
                    sticky: None,
                    locations: Vec::new(),
                }),
                ..rrset.clone()
            }
        })
        .collect())
}

/// How many healthy records Route53 puts in a multivalue answer.
const ROUTE53_MULTIVALUE_ANSWERS: u16 = 8;

/// One routed RRset as Route53 record sets: `Weighted` → one weighted
/// record set per member (`SetIdentifier` = the cluster, `Weight`);
/// `Failover` → a `PRIMARY` and a `SECONDARY` record set (several clusters
/// of one role share one, named by their set identifiers joined with `+`);
/// `Nearest` → one latency record set per member when every member's
/// region is a distinct AWS region (`aws/region`). A plain RRset comes back
/// as it is.
///
/// # Errors
/// Why Route53 cannot express the policy (the caller publishes `All`).
fn routed_record_sets(rrset: &DesiredRRset) -> Result<Vec<DesiredRRset>, String> {
    use crate::plan::desired::{RoutedMember, RoutedSet};
    use fedns_api::RoutingPolicy;
    let Some(routing) = rrset.routing.as_ref().filter(|r| r.policy != RoutingPolicy::All) else {
        return multivalue_record_sets(rrset);
    };

    let one = |member: RoutedMember, targets: Vec<String>| DesiredRRset {
        targets,
        set_identifier: member.set_identifier.clone(),
        routing: Some(RoutedSet {
            policy: routing.policy,
            members: vec![member],
            fallback: Vec::new(),
            sticky: None,
            locations: Vec::new(),
        }),
        ..rrset.clone()
    };
    match routing.policy {
        RoutingPolicy::Weighted => Ok(routing
            .members
            .iter()
            .map(|m| one(m.clone(), m.targets.clone()))
            .collect()),
        RoutingPolicy::Failover => {
            let mut out = Vec::new();
            for role in ["PRIMARY", "SECONDARY"] {
                let members: Vec<&RoutedMember> = routing
                    .members
                    .iter()
                    .filter(|m| m.failover.as_deref() == Some(role))
                    .collect();
                if members.is_empty() {
                    continue;
                }
                let mut targets: Vec<String> = members.iter().flat_map(|m| m.targets.iter().cloned()).collect();
                targets.sort();
                targets.dedup();
                let ids: Vec<&str> = members.iter().map(|m| m.set_identifier.as_str()).collect();
                let member = RoutedMember {
                    set_identifier: ids.join("+"),
                    ..members[0].clone()
                };
                out.push(one(member, targets));
            }
            Ok(out)
        }
        RoutingPolicy::Nearest => {
            let regions: Vec<Option<&str>> = routing.members.iter().map(|m| m.aws_region.as_deref()).collect();
            let distinct: std::collections::BTreeSet<&Option<&str>> = regions.iter().collect();
            let latency = match routing.members.iter().find(|m| m.aws_region.is_none()) {
                Some(member) => Err(format!(
                    "Route53 latency records need an AWS region for every cluster; {} has {}",
                    member.set_identifier,
                    member
                        .region
                        .as_deref()
                        .map_or("none".to_owned(), |r| format!("region {r}"))
                )),
                None if distinct.len() != regions.len() => Err(
                    "Route53 latency records allow one record set per AWS region and several clusters share one".into(),
                ),
                None => Ok(()),
            };
            match latency {
                Ok(()) => Ok(routing
                    .members
                    .iter()
                    .map(|m| one(m.clone(), m.targets.clone()))
                    .collect()),
                Err(why) if routing.locations.is_empty() => {
                    Err(format!("{why}, and the Domain has no geoRegions — published as All"))
                }
                Err(_) => Ok(geolocation_record_sets(routing, &one)),
            }
        }
        RoutingPolicy::All => Ok(vec![rrset.clone()]),
    }
}

#[cfg(test)]
mod tests;
