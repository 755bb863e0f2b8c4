//! The `google-clouddns` provider: publishes each Domain's RRsets in the
//! Google Cloud DNS managed zone with the same `dnsName` (or one of
//! `--google-zone`), through the Cloud DNS v1 REST API ([`api`]), sharing
//! the zone safely with other tools.
//!
//! * Credentials: Google's `google-cloud-auth` (a service-account key in
//!   `GOOGLE_APPLICATION_CREDENTIALS`, GKE Workload Identity through the
//!   metadata server, workload identity federation with an
//!   `external_account` file), or a bearer token given as is
//!   ([`api::Credentials`]). The project is `--google-project`, else the
//!   metadata server's.
//! * Ownership: every record set fedns writes gets a TXT registry record
//!   in external-dns's format at its affixed name (`a-<name>` for the A
//!   record set of `<name>`, [`crate::plan::registry`]): Cloud DNS holds one
//!   TXT record set per name, so the registry record never shares a name
//!   with what it owns. Record sets without one of fedns's owner id are
//!   never changed or deleted; a desired RRset colliding with them is a
//!   conflict.
//! * Writes: Cloud DNS changes are atomic, and a deletion must match the
//!   stored record set exactly (TTL, rrdatas, routing policy). An update is
//!   the deletion of the record set as read plus the addition of the new
//!   one in one change: a compare-and-swap. When another writer changed a
//!   record set since it was read (412 `conditionNotMet`), created one
//!   (409 `alreadyExists`) or deleted one (404 `notFound`), the zone is
//!   read again and planned again (at most `max_replans` times); what
//!   still fails is reported on its DNSEndpoint. Changes are packed within
//!   Cloud DNS's per-change quotas ([`batch`]), a name's deletions and
//!   additions always in one change; a change refused for its content
//!   (400 `invalid`, 403 `quotaExceeded`) is halved until the refused
//!   names stand alone, so one bad RRset never blocks the rest.
//! * Routing policies natively ([`records`]): `Weighted` → `wrr`,
//!   `Nearest` → `geo`, `Failover` → `primaryBackup`; else published as
//!   `All` and reported `PolicyDowngraded`.
//! * Retries: 429 (`rateLimitExceeded`), 5xx and transport errors, with
//!   exponential backoff and jitter (`backon`); requests spaced to
//!   `requests_per_second`.
//! * Idle: a zone whose desired RRsets did not change since its last clean
//!   sync costs no API call; a full resync reads and repairs every zone.
//!
//! Layer: a provider. It may use `plan` (desired RRsets, the planner, the
//! registry and value formats) and the `provider` contract; never `source`
//! nor another provider (`embedded`, `route53`, `coredns_etcd`).

pub mod api;
pub mod batch;
pub mod records;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::RecordType;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::plan::desired::{DesiredRRset, DesiredZones};
use crate::plan::planner::{self, CurrentRRset};
use crate::plan::registry::{self, Ownership};
use crate::provider::{AppliedCache, ErrorScope, Provider, ProviderMetrics, RateLimit, SyncMode, SyncReport};
use api::{ApiError, Client, Credentials, RecordSet};
use batch::{ChangeLimits, Unit};

/// The provider's name in conditions, metrics and logs.
pub const NAME: &str = "google-clouddns";

/// TTL of registry TXT records: external-dns's Google provider gives
/// record sets without a configured TTL 300 s, and its registry records
/// have none.
pub const REGISTRY_TTL: u32 = 300;

/// Settings of the Google Cloud DNS provider.
#[derive(Debug, Clone)]
pub struct CloudDnsConfig {
    /// Owner id written into registry records.
    pub owner_id: String,
    /// external-dns's `--txt-wildcard-replacement`: the first label of a
    /// wildcard's registry record name in place of `*` (empty: none, and
    /// wildcards are refused, as Cloud DNS refuses `a-*.…`).
    pub txt_wildcard_replacement: String,
    /// Project holding the managed zones; None: the metadata server's.
    pub project: Option<String>,
    /// Managed zones to use, by name; empty: find each Domain's zone by
    /// `dnsName`.
    pub zones: Vec<String>,
    /// Only zones of this visibility (`public` or `private`); None: any.
    pub visibility: Option<String>,
    /// API root URL (a stand-in, a proxy); None: `https://dns.googleapis.com`.
    pub endpoint: Option<String>,
    /// A bearer token to use as is; None: Application Default Credentials.
    pub access_token: Option<String>,
    /// Requests per second at most.
    pub requests_per_second: f64,
    /// Attempts per request on 429/5xx, the first included.
    pub max_attempts: u32,
    /// First retry delay; doubles per attempt, with jitter.
    pub initial_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// Timeout of one attempt.
    pub attempt_timeout: Duration,
    /// How long to poll a change until `done`.
    pub change_wait: Duration,
    /// Quotas of one change.
    pub limits: ChangeLimits,
    /// Re-reads and re-plans of a zone after a compare-and-swap failure
    /// (412/409/404) in one sync.
    pub max_replans: usize,
}

impl Default for CloudDnsConfig {
    fn default() -> Self {
        CloudDnsConfig {
            owner_id: "fedns".into(),
            txt_wildcard_replacement: String::new(),
            project: None,
            zones: Vec::new(),
            visibility: None,
            endpoint: None,
            access_token: None,
            requests_per_second: 10.0,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            attempt_timeout: Duration::from_secs(30),
            change_wait: Duration::from_secs(60),
            limits: ChangeLimits::default(),
            max_replans: 3,
        }
    }
}

/// The planned work for one zone: change units and what to report.
pub type ZonePlan = planner::ZonePlan<Unit>;

/// The provider.
pub struct GoogleCloudDns {
    config: CloudDnsConfig,
    client: tokio::sync::Mutex<Option<Client>>,
    /// Managed zone of each apex: (name, public?).
    zones: std::sync::Mutex<BTreeMap<String, (String, bool)>>,
    limit: Arc<RateLimit>,
    applied: AppliedCache,
    metrics: ProviderMetrics,
}

impl std::fmt::Debug for GoogleCloudDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleCloudDns")
            .field("project", &self.config.project)
            .field("endpoint", &self.config.endpoint)
            .field("zones", &self.config.zones)
            .finish_non_exhaustive()
    }
}

/// Why a change failed.
enum WriteError {
    /// Someone changed the zone since it was read (412, 409, 404): read
    /// again and plan again.
    Stale(ApiError),
    /// Cloud DNS refused the change's content (400, 403 quotaExceeded):
    /// split it.
    Refused(ApiError),
    /// Anything else (retries exhausted, no access): stop the zone.
    Failed(String),
}

/// What a change's error means for the plan.
fn classify(error: ApiError, zone: &str) -> WriteError {
    match (error.status, error.reason.as_str()) {
        (412, _) | (409, _) | (404, "notFound") => WriteError::Stale(error),
        (400, _) | (403, "quotaExceeded") => WriteError::Refused(error),
        _ => WriteError::Failed(format!("changing records of managed zone {zone}: {error}")),
    }
}

/// One line for the DNSEndpoint: what Cloud DNS said and what it means.
fn explain(error: &ApiError) -> String {
    let what = match (error.status, error.reason.as_str()) {
        (412, _) => "the record set changed in Cloud DNS since fedns read it (another writer); fedns re-read and re-planned and it kept changing, so it was left as it is until the next resync",
        (409, _) => "a record set of that name and type appeared in Cloud DNS since fedns read it (another writer); it was not overwritten",
        (404, _) => "a record set fedns meant to replace or delete was gone from Cloud DNS (another writer)",
        (403, _) => "the change exceeds a Cloud DNS quota (per change or per zone)",
        _ => "Cloud DNS refused the record set",
    };
    format!("{what}: {error}")
}

impl GoogleCloudDns {
    /// A provider for `config`, counting into `metrics` (no connection yet).
    pub fn new(config: CloudDnsConfig, metrics: ProviderMetrics) -> Self {
        GoogleCloudDns {
            limit: Arc::new(RateLimit::new(config.requests_per_second)),
            config,
            client: tokio::sync::Mutex::new(None),
            zones: std::sync::Mutex::new(BTreeMap::new()),
            applied: AppliedCache::default(),
            metrics,
        }
    }

    /// The metrics this provider counts into.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.metrics
    }

    /// The client, made on first use (credentials, project).
    async fn client(&self) -> Result<Client, String> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let http = api::http_client(self.config.attempt_timeout)?;
        let credentials = match &self.config.access_token {
            Some(token) => Credentials::Token(token.clone()),
            None => Credentials::application_default()?,
        };
        let project = match &self.config.project {
            Some(project) => project.clone(),
            None => api::metadata_project(&http).await?,
        };
        let client = Client::new(
            http,
            self.config.endpoint.as_deref().unwrap_or(api::GOOGLE_ENDPOINT),
            &project,
            credentials,
            api::Retry {
                max_attempts: self.config.max_attempts.max(1),
                initial_backoff: self.config.initial_backoff,
                max_backoff: self.config.max_backoff,
                attempt_timeout: self.config.attempt_timeout,
            },
            self.limit.clone(),
            self.metrics.clone(),
        );
        *slot = Some(client.clone());
        Ok(client)
    }

    fn zone_cache(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (String, bool)>> {
        self.zones.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn visible(&self, zone: &api::ManagedZone) -> bool {
        self.config
            .visibility
            .as_deref()
            .is_none_or(|v| zone.visibility.as_deref().unwrap_or("public") == v)
    }

    /// The managed zone serving `apex`, by name, and whether it is public;
    /// None when there is none (of those given with `--google-zone`, if
    /// any).
    async fn zone_name(&self, client: &Client, apex: &str) -> Result<Option<(String, bool)>, String> {
        if let Some(found) = self.zone_cache().get(apex) {
            return Ok(Some(found.clone()));
        }
        // Cloud DNS leaves `visibility` out for public zones (its default).
        let public = |zone: &api::ManagedZone| zone.visibility.as_deref().unwrap_or("public") == "public";
        let found = if self.config.zones.is_empty() {
            let zones = client
                .zones_named(&records::encode_name(apex))
                .await
                .map_err(|e| format!("listing managed zones named {apex}: {e}"))?;
            let names: Vec<(String, bool)> = zones
                .iter()
                .filter(|z| records::decode_name(&z.dns_name) == apex && self.visible(z))
                .map(|z| (z.name.clone(), public(z)))
                .collect();
            match names.as_slice() {
                [] => None,
                [one] => Some(one.clone()),
                _ => {
                    return Err(format!(
                    "{} managed zones are named {apex} ({}); choose one with --google-zone or --google-zone-visibility",
                    names.len(),
                    names.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                ))
                }
            }
        } else {
            let mut found = None;
            for name in &self.config.zones {
                let zone = client
                    .zone(name)
                    .await
                    .map_err(|e| format!("reading managed zone {name} (--google-zone): {e}"))?;
                if records::decode_name(&zone.dns_name) == apex && self.visible(&zone) {
                    found = Some((zone.name.clone(), public(&zone)));
                    break;
                }
            }
            found
        };
        if let Some(zone) = &found {
            self.zone_cache().insert(apex.to_owned(), zone.clone());
        }
        Ok(found)
    }

    /// Plans one zone: `held` is every record set Cloud DNS holds in it;
    /// `public` tells a public managed zone from a private one.
    pub fn plan_zone(&self, apex: &str, public: bool, desired: &[DesiredRRset], held: &[RecordSet]) -> ZonePlan {
        let zone = ZoneSettings {
            owner: &self.config.owner_id,
            txt_wildcard_replacement: &self.config.txt_wildcard_replacement,
            public,
        };
        plan_zone_in(&zone, apex, desired, held)
    }

    /// Applies `units` in changes; refused changes are halved down to
    /// single names, which go into `report.rejected`. `last` turns a
    /// compare-and-swap failure into a refusal (no re-plan left).
    async fn apply(
        &self,
        client: &Client,
        apex: &str,
        zone: &str,
        units: Vec<Unit>,
        last: bool,
        report: &mut SyncReport,
    ) -> Result<(), WriteError> {
        let mut pending = batch::pack(units, self.config.limits);
        pending.reverse();
        while let Some(units) = pending.pop() {
            let result = client
                .apply(zone, &batch::change_of(&units), self.config.change_wait)
                .await;
            let refused = match result.map_err(|e| classify(e, zone)) {
                Ok(_) => {
                    report.writes += 1;
                    report.changes += units.len();
                    self.metrics.changes_applied(NAME, apex, units.len());
                    continue;
                }
                Err(WriteError::Stale(e)) if !last => return Err(WriteError::Stale(e)),
                Err(WriteError::Stale(e) | WriteError::Refused(e)) => e,
                Err(failed) => return Err(failed),
            };
            // Halve at a name boundary: a name's units stay together.
            let middle = units.len() / 2;
            let split = (middle..units.len())
                .chain((1..middle).rev())
                .find(|&i| i > 0 && units[i].name != units[i - 1].name);
            match split {
                Some(at) => {
                    tracing::info!(
                        provider = NAME,
                        zone = apex,
                        changes = units.len(),
                        "Cloud DNS refused a change ({refused}); splitting it"
                    );
                    let mut first = units;
                    let second = first.split_off(at);
                    pending.push(second);
                    pending.push(first);
                }
                None => {
                    for unit in units {
                        tracing::warn!(provider = NAME, zone = apex, name = %unit.name, record_type = %unit.record_type, "Cloud DNS refused the change: {refused}");
                        report.rejected.push((unit.name, unit.record_type, explain(&refused)));
                    }
                }
            }
        }
        Ok(())
    }

    async fn sync_zone(
        &self,
        client: &Client,
        apex: &str,
        desired: &[DesiredRRset],
        report: &mut SyncReport,
    ) -> Result<(), String> {
        let Some((zone, public)) = self.zone_name(client, apex).await? else {
            if desired.is_empty() {
                return Ok(());
            }
            return Err(if self.config.zones.is_empty() {
                format!("no Cloud DNS managed zone has dnsName {apex}.; create it (gcloud dns managed-zones create) or name one with --google-zone")
            } else {
                format!("none of the managed zones given with --google-zone has dnsName {apex}.")
            });
        };
        let mut round = 0;
        loop {
            let held = client.record_sets(&zone).await.map_err(|e| {
                if e.status == 404 {
                    // The zone is gone (or was recreated): look it up again.
                    self.zone_cache().remove(apex);
                }
                format!("listing record sets of managed zone {zone}: {e}")
            })?;
            let plan = self.plan_zone(apex, public, desired, &held);
            self.metrics.records_owned(NAME, apex, plan.owned);
            let mut findings = SyncReport {
                conflicts: plan.conflicts,
                rejected: plan.rejected,
                downgraded: plan.downgraded,
                ..SyncReport::default()
            };
            let count = plan.units.len();
            let last = round >= self.config.max_replans;
            let result = self.apply(client, apex, &zone, plan.units, last, &mut findings).await;
            if let Err(WriteError::Stale(e)) = &result {
                // Read again and plan again: what was applied stands, the
                // findings come from the next plan.
                tracing::info!(
                    provider = NAME,
                    zone = apex,
                    "another writer changed the zone ({e}); reading it again"
                );
                report.writes += findings.writes;
                report.changes += findings.changes;
                round += 1;
                continue;
            }
            report.merge(findings);
            match result {
                Ok(()) => {
                    if count > 0 {
                        tracing::info!(provider = NAME, zone = apex, managed_zone = %zone, changes = count, "applied changes");
                    }
                    return Ok(());
                }
                Err(WriteError::Stale(e) | WriteError::Refused(e)) => return Err(explain(&e)),
                Err(WriteError::Failed(e)) => return Err(e),
            }
        }
    }

    /// Brings Cloud DNS in line with `desired`, zone by zone.
    pub async fn sync_all(&self, desired: &DesiredZones, mode: SyncMode) -> SyncReport {
        let started = Instant::now();
        let mut report = SyncReport::default();
        if mode == SyncMode::Full {
            // Zones may have been recreated: look their names up again.
            self.zone_cache().clear();
        }
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!(provider = NAME, "no Cloud DNS client (retried soon): {e}");
                self.metrics.api_call(NAME, "credentials", false);
                self.applied.clear();
                report.errors.push((ErrorScope::Provider, e));
                return report;
            }
        };
        let (_, pending) = self.applied.pending(desired, mode, &mut report);
        for (apex, rrsets) in pending {
            let mut outcome = SyncReport::default();
            let result = self.sync_zone(&client, &apex, rrsets, &mut outcome).await;
            self.applied.finish(NAME, &apex, rrsets, result, outcome, &mut report);
        }
        self.metrics.sync_duration(NAME, started);
        report
    }
}

impl Provider for GoogleCloudDns {
    fn name(&self) -> &'static str {
        NAME
    }

    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport> {
        Box::pin(self.sync_all(desired, mode))
    }
}

/// The registry record set for a desired RRset, as external-dns's TXT
/// registry writes it for Google: one quoted string at the affixed name.
fn registry_record_set(owner: &str, ownership: &Ownership<RecordSet>, rrset: &DesiredRRset) -> RecordSet {
    let resource = rrset.sources.iter().next().map(|s| registry::resource_of(s));
    RecordSet {
        name: records::encode_name(&ownership.txt_name(&rrset.name, rrset.record_type)),
        rtype: "TXT".into(),
        ttl: REGISTRY_TTL,
        rrdatas: vec![crate::plan::txt::presentation(&[registry::txt_value(
            owner,
            resource.as_deref(),
        )])],
        routing_policy: None,
    }
}

/// The owner id and resource of a registry record set, if it holds a
/// registry value.
fn registry_value(set: &RecordSet) -> Option<(String, Option<String>)> {
    (set.rtype == "TXT")
        .then(|| {
            set.rrdatas
                .iter()
                .find_map(|t| registry::parse_value(&crate::plan::txt::concatenated(t)))
        })
        .flatten()
}

/// What planning a zone depends on besides its contents.
struct ZoneSettings<'a> {
    /// fedns's owner id.
    owner: &'a str,
    /// `--txt-wildcard-replacement` (empty: none).
    txt_wildcard_replacement: &'a str,
    /// A public managed zone (a `primaryBackup` policy there needs a health
    /// check)?
    public: bool,
}

/// The plan for one zone of a private managed zone with no wildcard
/// replacement (the planning tests' default).
#[cfg(test)]
fn plan_zone(owner: &str, apex: &str, desired: &[DesiredRRset], held: &[RecordSet]) -> ZonePlan {
    let zone = ZoneSettings {
        owner,
        txt_wildcard_replacement: "",
        public: false,
    };
    plan_zone_in(&zone, apex, desired, held)
}

/// The plan for one zone (see [`GoogleCloudDns::plan_zone`]).
fn plan_zone_in(zone: &ZoneSettings<'_>, apex: &str, desired: &[DesiredRRset], held: &[RecordSet]) -> ZonePlan {
    let owner = zone.owner;
    let mut out = ZonePlan::default();
    // Cloud DNS refuses `*` inside a label (an asterisk only as a whole
    // first label).
    let mut ownership: Ownership<RecordSet> = Ownership::new(zone.txt_wildcard_replacement, false);
    let mut plain: Vec<&RecordSet> = Vec::new();
    let mut candidates = Vec::new();
    for set in held {
        match registry_value(set) {
            Some((record_owner, resource)) => candidates.push(registry::RegistryCandidate {
                name: records::decode_name(&set.name),
                set_identifier: String::new(),
                owner: record_owner,
                resource,
                held: set,
            }),
            None => plain.push(set),
        }
    }
    let (registry_records, data) = registry::sort_candidates(candidates, zone.txt_wildcard_replacement, owner);
    plain.extend(data);
    for c in registry_records {
        ownership.claim(&c.name, "", c.owner, c.held.clone(), owner);
    }

    // What Cloud DNS holds, as the planner sees it.
    let mut current: Vec<CurrentRRset> = Vec::new();
    let mut raw_of: BTreeMap<(String, RecordType), &RecordSet> = BTreeMap::new();
    let mut other_names: BTreeMap<String, String> = BTreeMap::new();
    for set in plain {
        let name = records::decode_name(&set.name);
        match records::current_of(set) {
            Some((record_type, targets)) => {
                current.push(CurrentRRset {
                    owner: ownership.owner(&name, record_type, ""),
                    name: name.clone(),
                    record_type,
                    ttl: set.ttl,
                    targets,
                    set_identifier: String::new(),
                    policy: String::new(),
                });
                raw_of.insert((name, record_type), set);
            }
            None => {
                other_names.insert(name, format!("a {} record", set.rtype));
            }
        }
    }
    current.extend(ownership.orphan_claims(owner, |name, t, _| raw_of.contains_key(&(name.to_owned(), t))));
    out.owned = current.iter().filter(|c| c.owner.as_deref() == Some(owner)).count();

    // What fedns wants, in Cloud DNS's terms: a routed RRset is one record
    // set holding its policy, compared by its pseudo-target.
    let mut policies: BTreeMap<(String, RecordType), Value> = BTreeMap::new();
    let mut allowed: Vec<DesiredRRset> = Vec::new();
    for rrset in desired {
        if !ownership.admit(rrset, apex, "Cloud DNS", &mut out) {
            continue;
        }
        let mut plain = DesiredRRset {
            routing: None,
            set_identifier: String::new(),
            ..rrset.clone()
        };
        if let Some(why) = rrset.answer_limit_lost("Cloud DNS") {
            out.downgraded.push((rrset.name.clone(), rrset.record_type, why));
        }
        match records::routing_policy(rrset, zone.public) {
            Ok(Some(policy)) => {
                if let Some(why) = rrset.routing.as_ref().and_then(|r| r.stickiness_lost("Cloud DNS")) {
                    out.downgraded.push((rrset.name.clone(), rrset.record_type, why));
                }
                plain.targets = vec![records::policy_target(rrset.record_type, &policy)];
                policies.insert((rrset.name.clone(), rrset.record_type), policy);
            }
            Ok(None) => {}
            Err(why) => out.downgraded.push((rrset.name.clone(), rrset.record_type, why)),
        }
        match other_names.get(&rrset.name) {
            Some(what) if rrset.record_type == RecordType::CNAME => out.conflicts.push((rrset.clone(), what.clone())),
            _ => allowed.push(plain),
        }
    }

    let plan = planner::plan(&allowed, &current, owner);
    out.conflicts
        .extend(plan.conflicts.into_iter().map(planner::Conflict::reported));

    let ours = |name: &str, t: RecordType| ownership.ours(owner, name, t, "");
    let mut touched: BTreeSet<(String, RecordType)> = BTreeSet::new();
    for change in plan.changes {
        let mut unit = Unit {
            name: change.name().to_owned(),
            record_type: RecordType::A,
            deletions: Vec::new(),
            additions: Vec::new(),
        };
        match change {
            planner::Change::Create(d) | planner::Change::Update { desired: d, .. } => {
                unit.record_type = d.record_type;
                let key = (d.name.clone(), d.record_type);
                if let Some(held) = raw_of.get(&key) {
                    unit.deletions.push((*held).clone());
                }
                unit.additions.push(records::record_set(&d, policies.get(&key)));
                let registry = registry_record_set(owner, &ownership, &d);
                match ours(&d.name, d.record_type) {
                    Some(txt) if txt.rrdatas == registry.rrdatas && txt.ttl == registry.ttl => {}
                    Some(txt) => {
                        unit.deletions.push(txt.clone());
                        unit.additions.push(registry);
                    }
                    None => unit.additions.push(registry),
                }
                touched.insert(key);
            }
            planner::Change::Delete(c) => {
                unit.record_type = c.record_type;
                let key = (c.name.clone(), c.record_type);
                if let Some(held) = raw_of.get(&key) {
                    unit.deletions.push((*held).clone());
                }
                if let Some(txt) = ours(&c.name, c.record_type) {
                    unit.deletions.push(txt.clone());
                }
                touched.insert(key);
            }
        }
        out.units.push(unit);
    }
    // Our registry records whose RRset is gone and not wanted: clean up.
    let keep = |name: &str, t: RecordType, _: &str| {
        let key = (name.to_owned(), t);
        raw_of.contains_key(&key) || touched.contains(&key)
    };
    for (name, record_type, txt) in ownership.stale(owner, keep) {
        out.units.push(Unit {
            name: name.to_owned(),
            record_type,
            deletions: vec![txt.clone()],
            additions: Vec::new(),
        });
    }
    out.units.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests;
