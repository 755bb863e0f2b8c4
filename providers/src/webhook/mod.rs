//! The `webhook` provider: publishes each Domain's RRsets to an
//! external-dns webhook provider (Cloudflare, PowerDNS, Infoblox, NS1,
//! deSEC, Hetzner, an RFC 2136 bridge, ...) over the protocol external-dns
//! itself speaks ([`api`]), sharing the zone safely with other tools.
//!
//! * Negotiation once per connection: the provider's domain filter. A zone
//!   the filter does not take is not synced (reported on the Domain's
//!   DNSEndpoints as an error naming the filter); within a taken zone,
//!   names the filter refuses are rejected one by one.
//! * Per sync: `GET /records` once, then per zone the desired RRsets go
//!   through `POST /adjustendpoints` (so the provider's own normalisation,
//!   a TTL floor or a lower-cased target, becomes what fedns wants and
//!   never causes a rewrite loop), are planned against what the provider
//!   holds, and the changes are sent with `POST /records`.
//! * Ownership: external-dns's TXT registry ([`crate::plan::registry`]),
//!   its records written through the same protocol as ordinary TXT
//!   endpoints (`a-<name>` holding the quoted heritage string, no TTL), as
//!   external-dns's registry does over a webhook. Records without one of
//!   fedns's owner id are never changed; a desired RRset colliding with
//!   them is a conflict.
//! * Batching and isolation: at most `max_endpoints_per_request`
//!   endpoints per `POST /records` (a name's record and its registry
//!   record always together). A request the provider refuses (a status
//!   other than 204 and outside 500..=510) is halved until the refused
//!   names stand alone; those are reported on their DNSEndpoint and the
//!   rest is applied. 500..=510 is split the same way (external-dns's
//!   server helper answers 500 for any provider error), but more than a
//!   few such failures in a row, or no answer at all, stop the zone until
//!   the next sync (soon); other zones go on. 429 and 503 ask to slow
//!   down and say nothing of the records: the request is not split, and
//!   nothing is sent to that provider for its `Retry-After` (else 1 s,
//!   doubling while it keeps asking), at most 5 minutes.
//! * Other tools' ownership records among the desired RRsets (an
//!   external-dns publishing into fedns through `fedns webhook-provider`)
//!   are not published on: fedns's own registry record for the name takes
//!   their place.
//! * Traffic policies: the protocol defines none, and no provider's
//!   `webhook/<x>` properties mean the same thing, so routed names are
//!   published with every member (`All`) and reported `PolicyDowngraded`,
//!   as `maxAnswers` is.
//!
//! Layer: a provider. It may use `plan` and the `provider` contract; never
//! `source` nor another provider.

pub mod api;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use fedns_api::RecordType;
use futures::future::BoxFuture;

use crate::plan::desired::{DesiredRRset, DesiredZones};
use crate::plan::planner::{self, CurrentRRset, ZonePlan};
use crate::plan::registry::{self, Ownership};
use crate::provider::{AppliedCache, ErrorScope, Provider, ProviderMetrics, SyncMode, SyncReport};
use api::{CallError, Changes, Client, DomainFilter, WireEndpoint};

/// The provider's name in conditions, metrics and logs.
pub const NAME: &str = "webhook";

/// Requests failing with 500..=510 in a row before a zone's sync stops.
const MAX_FAILED_IN_A_ROW: usize = 6;

/// After a 429 or 503 without `Retry-After`: the first wait, doubled at
/// each such answer in a row.
const THROTTLE_FIRST: Duration = Duration::from_secs(1);
/// The longest wait after a 429 or 503, whatever `Retry-After` says.
const THROTTLE_CAP: Duration = Duration::from_secs(300);

/// How a zone's sync stopped.
#[derive(Debug)]
enum Stop {
    /// The provider failed (no answer, or 500..=510 too often): retried at
    /// the next sync.
    Failed(String),
    /// The provider asked to slow down (429, 503): it is left alone for a
    /// while ([`Webhook::throttle`]).
    Throttled(CallError),
}

/// A provider's backoff after 429 or 503.
#[derive(Debug, Clone, Copy, Default)]
struct Throttle {
    /// Nothing is sent to the provider before this.
    until: Option<Instant>,
    /// The wait after the next 429/503 without `Retry-After`.
    next: Option<Duration>,
}

/// Settings of the webhook provider.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// The providers' URLs (external-dns's `--webhook-provider-url`,
    /// default `http://localhost:8888`); each zone goes to the first whose
    /// negotiated domain filter takes it.
    pub urls: Vec<String>,
    /// Owner id written into registry records.
    pub owner_id: String,
    /// external-dns's `--txt-wildcard-replacement` (empty: none).
    pub txt_wildcard_replacement: String,
    /// Bound of one call (external-dns: read 5 s + write 10 s).
    pub timeout: Duration,
    /// Negotiation retries (external-dns: 5 attempts from 0.5 s).
    pub negotiate: api::Retry,
    /// Largest response body, octets (external-dns: 32 MiB).
    pub max_body: usize,
    /// Endpoints per `POST /records` at most.
    pub max_endpoints_per_request: usize,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            urls: vec!["http://localhost:8888".into()],
            owner_id: "fedns".into(),
            txt_wildcard_replacement: String::new(),
            timeout: Duration::from_secs(15),
            negotiate: api::Retry {
                attempts: 5,
                initial: Duration::from_millis(500),
            },
            max_body: api::DEFAULT_MAX_BODY,
            max_endpoints_per_request: 500,
        }
    }
}

/// The webhook provider.
pub struct Webhook {
    config: WebhookConfig,
    /// Per URL, the client and the negotiated filter, once negotiated.
    sessions: tokio::sync::Mutex<Vec<Option<Session>>>,
    /// Per URL, its backoff after 429 or 503.
    throttles: std::sync::Mutex<Vec<Throttle>>,
    applied: AppliedCache,
    metrics: ProviderMetrics,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("urls", &self.config.urls)
            .finish_non_exhaustive()
    }
}

/// One negotiated provider.
#[derive(Debug, Clone)]
struct Session {
    client: Client,
    filter: std::sync::Arc<DomainFilter>,
}

/// One logical change: a name's record and its registry record, sent in
/// one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Owner name.
    pub name: String,
    /// Its type.
    pub record_type: RecordType,
    /// The endpoints to send.
    pub changes: Changes,
}

impl Webhook {
    /// A provider for `config`, counting into `metrics` (no connection yet).
    pub fn new(config: WebhookConfig, metrics: ProviderMetrics) -> Self {
        Webhook {
            sessions: tokio::sync::Mutex::new(vec![None; config.urls.len()]),
            throttles: std::sync::Mutex::new(vec![Throttle::default(); config.urls.len()]),
            config,
            applied: AppliedCache::default(),
            metrics,
        }
    }

    /// The metrics this provider counts into.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.metrics
    }

    /// Each URL's client and domain filter, negotiated on first use (and
    /// again after a failure); a URL that cannot be negotiated gives its
    /// reason.
    async fn sessions(&self) -> Vec<Result<Session, String>> {
        let mut slots = self.sessions.lock().await;
        let mut out = Vec::with_capacity(self.config.urls.len());
        for (url, slot) in self.config.urls.iter().zip(slots.iter_mut()) {
            if let Some(session) = slot.as_ref() {
                out.push(Ok(session.clone()));
                continue;
            }
            let negotiated = async {
                let client = Client::new(url, self.config.timeout, self.config.max_body)?;
                let filter = client.negotiate(self.config.negotiate).await;
                self.metrics.api_call(NAME, "negotiate", filter.is_ok());
                let filter = std::sync::Arc::new(filter.map_err(|e| e.message)?);
                tracing::info!(provider = NAME, url = %url, filter = %filter.describe(), "negotiated with the webhook provider");
                Ok::<Session, String>(Session { client, filter })
            }
            .await;
            if let Ok(session) = &negotiated {
                *slot = Some(session.clone());
            }
            out.push(negotiated);
        }
        out
    }

    /// Negotiate with the provider at `index` again at the next sync (it
    /// may have restarted with another filter).
    async fn forget_session(&self, index: usize) {
        if let Some(slot) = self.sessions.lock().await.get_mut(index) {
            *slot = None;
        }
    }

    /// The provider at `index` answered 429 or 503: nothing is sent to it
    /// for its `Retry-After`, else for a wait doubling from
    /// [`THROTTLE_FIRST`], at most [`THROTTLE_CAP`]; every zone it takes
    /// waits (none is split or refused over it). Returns the zone's error.
    fn throttle(&self, index: usize, error: &CallError) -> String {
        let mut throttles = self.throttles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(throttle) = throttles.get_mut(index) else {
            return error.message.clone();
        };
        let doubling = throttle.next.unwrap_or(THROTTLE_FIRST);
        let wait = error.retry_after.unwrap_or(doubling).min(THROTTLE_CAP);
        throttle.until = Some(Instant::now() + wait);
        throttle.next = Some((doubling * 2).min(THROTTLE_CAP));
        let why = match error.retry_after {
            Some(_) => "its Retry-After",
            None => "no Retry-After: doubling",
        };
        tracing::warn!(
            provider = NAME,
            url = %self.config.urls.get(index).map(String::as_str).unwrap_or_default(),
            wait_seconds = wait.as_secs_f64(),
            "the webhook provider asks to slow down ({error}); nothing sent to it for {wait:?} ({why})"
        );
        format!("{error}; the provider is throttling: nothing is sent to it for {wait:?} ({why})")
    }

    /// How long the provider at `index` is still left alone, if it is.
    fn throttled_for(&self, index: usize) -> Option<Duration> {
        let throttles = self.throttles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let until = throttles.get(index)?.until?;
        until
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
    }

    /// A zone synced with the provider at `index`: its backoff starts over.
    fn unthrottle(&self, index: usize) {
        let mut throttles = self.throttles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(throttle) = throttles.get_mut(index) {
            *throttle = Throttle::default();
        }
    }

    /// Plans one zone (see [`plan_zone`]).
    pub fn plan_zone(&self, apex: &str, desired: &[DesiredRRset], held: &[WireEndpoint]) -> ZonePlan<Unit> {
        plan_zone(
            &self.config.owner_id,
            &self.config.txt_wildcard_replacement,
            apex,
            desired,
            held,
        )
    }

    /// Sends `units` in requests of at most `max_endpoints_per_request`
    /// endpoints; refused requests are halved down to single units, which
    /// go into `report.rejected`.
    ///
    /// # Errors
    /// A transient failure: the zone stops until the next sync; 429 or
    /// 503: the provider is throttled ([`Stop::Throttled`]).
    async fn apply(&self, client: &Client, apex: &str, units: Vec<Unit>, report: &mut SyncReport) -> Result<(), Stop> {
        let mut pending = pack(units, self.config.max_endpoints_per_request.max(1));
        pending.reverse();
        // external-dns's server helper answers 500 for any provider error,
        // a refused record included: a 5xx request is split like a refused
        // one, but failures in a row past this bound mean the provider is
        // failing, not a record: the zone stops and is retried soon.
        let mut failed_in_a_row = 0;
        // Records that failed alone with 500..=510: refused, unless the
        // provider turns out to be failing as a whole (then the zone stops
        // and they are retried with it).
        let mut suspect: Vec<(String, RecordType, String)> = Vec::new();
        while let Some(units) = pending.pop() {
            let mut changes = Changes::default();
            for unit in &units {
                changes.extend(unit.changes.clone());
            }
            let result = client.apply(&changes).await;
            self.metrics.api_call(NAME, "apply", result.is_ok());
            let refused = match result {
                Ok(()) => {
                    failed_in_a_row = 0;
                    report.rejected.append(&mut suspect);
                    report.writes += 1;
                    report.changes += units.len();
                    self.metrics.changes_applied(NAME, apex, units.len());
                    continue;
                }
                // No answer at all: the provider is down.
                Err(e) if e.status.is_none() => return Err(Stop::Failed(e.message)),
                // Slow down: says nothing of these records; the rest waits.
                Err(e) if e.throttled() => {
                    report.rejected.append(&mut suspect);
                    return Err(Stop::Throttled(e));
                }
                Err(e) if e.transient() => {
                    failed_in_a_row += 1;
                    if failed_in_a_row > MAX_FAILED_IN_A_ROW {
                        return Err(Stop::Failed(format!(
                            "{e} ({failed_in_a_row} requests in a row failed)"
                        )));
                    }
                    e
                }
                Err(e) => e,
            };
            if units.len() > 1 {
                tracing::info!(
                    provider = NAME,
                    zone = apex,
                    changes = units.len(),
                    "the provider refused a request ({refused}); splitting it"
                );
                let mut first = units;
                let second = first.split_off(first.len() / 2);
                pending.push(second);
                pending.push(first);
            } else {
                for unit in units {
                    tracing::warn!(provider = NAME, zone = apex, name = %unit.name, record_type = %unit.record_type, "the provider refused the change: {refused}");
                    let rejected = (
                        unit.name,
                        unit.record_type,
                        format!("the webhook provider refused it: {refused}"),
                    );
                    if refused.transient() {
                        suspect.push(rejected);
                    } else {
                        report.rejected.push(rejected);
                    }
                }
            }
        }
        report.rejected.append(&mut suspect);
        Ok(())
    }

    /// The desired RRsets of a zone as the provider will hold them
    /// (`POST /adjustendpoints`); those it drops are rejected.
    async fn adjusted(
        &self,
        client: &Client,
        desired: &[DesiredRRset],
        report: &mut SyncReport,
    ) -> Result<Vec<DesiredRRset>, CallError> {
        if desired.is_empty() {
            return Ok(Vec::new());
        }
        let wire: Vec<WireEndpoint> = desired.iter().map(|d| endpoint_of(d, None)).collect();
        let result = client.adjust(&wire).await;
        self.metrics.api_call(NAME, "adjust", result.is_ok());
        let adjusted = result?;
        let by_key: BTreeMap<(String, String, String), &WireEndpoint> = adjusted.iter().map(|e| (e.key(), e)).collect();
        let mut out = Vec::with_capacity(desired.len());
        for rrset in desired {
            let key = (rrset.name.clone(), rrset.record_type.as_str().to_owned(), String::new());
            match by_key.get(&key) {
                Some(endpoint) => {
                    let mut rrset = rrset.clone();
                    rrset.ttl = u32::try_from(endpoint.record_ttl.max(0)).unwrap_or(u32::MAX);
                    rrset.targets = targets_of(rrset.record_type, &endpoint.targets);
                    out.push(rrset);
                }
                None => report.rejected.push((
                    rrset.name.clone(),
                    rrset.record_type,
                    "the webhook provider's adjustendpoints left it out (a record it does not support)".into(),
                )),
            }
        }
        Ok(out)
    }

    async fn sync_zone(
        &self,
        client: &Client,
        filter: &DomainFilter,
        apex: &str,
        desired: &[DesiredRRset],
        held: &[WireEndpoint],
        report: &mut SyncReport,
    ) -> Result<(), Stop> {
        let mut taken = Vec::new();
        for rrset in desired {
            if is_registry_record(rrset) {
                // Another tool's ownership record (an external-dns that
                // published into fedns): metadata, not data to publish on;
                // fedns's own registry record takes its place here.
                tracing::debug!(provider = NAME, name = %rrset.name, "external-dns ownership record not published on");
                continue;
            }
            if filter.matches(&rrset.name) {
                taken.push(rrset.clone());
            } else {
                report.rejected.push((
                    rrset.name.clone(),
                    rrset.record_type,
                    format!(
                        "the webhook provider's domain filter ({}) does not take the name",
                        filter.describe()
                    ),
                ));
            }
        }
        for rrset in &taken {
            if let Some(why) = rrset.answer_limit_lost("the external-dns webhook protocol") {
                report.downgraded.push((rrset.name.clone(), rrset.record_type, why));
            }
            if let Some(routing) = rrset
                .routing
                .as_ref()
                .filter(|r| r.policy != fedns_api::RoutingPolicy::All)
            {
                report.downgraded.push((
                    rrset.name.clone(),
                    rrset.record_type,
                    format!(
                        "the external-dns webhook protocol carries no traffic policy: {} published as All ({} members in every answer)",
                        routing.policy.as_str(),
                        routing.members.len()
                    ),
                ));
            }
        }
        let taken: Vec<DesiredRRset> = taken
            .into_iter()
            .map(|rrset| DesiredRRset {
                routing: None,
                set_identifier: String::new(),
                ..rrset
            })
            .collect();
        let adjusted = self.adjusted(client, &taken, report).await.map_err(|e| {
            if e.throttled() {
                Stop::Throttled(e)
            } else {
                Stop::Failed(e.message)
            }
        })?;
        let in_zone: Vec<WireEndpoint> = held
            .iter()
            .filter(|e| {
                let name = e.key().0;
                name == apex || name.ends_with(&format!(".{apex}"))
            })
            .cloned()
            .collect();
        let plan = self.plan_zone(apex, &adjusted, &in_zone);
        self.metrics.records_owned(NAME, apex, plan.owned);
        report.conflicts.extend(plan.conflicts);
        report.rejected.extend(plan.rejected);
        let count = plan.units.len();
        let (applied_before, refused_before) = (report.changes, report.rejected.len());
        let result = self.apply(client, apex, plan.units, report).await;
        let applied = report.changes - applied_before;
        let refused = report.rejected.len() - refused_before;
        if count > 0 && applied > 0 {
            tracing::info!(provider = NAME, zone = apex, applied, refused, "applied changes");
        } else if count > 0 && refused > 0 {
            tracing::warn!(
                provider = NAME,
                zone = apex,
                refused,
                "no change applied: the provider refused every one"
            );
        }
        result
    }

    /// Brings the webhook providers in line with `desired`, zone by zone:
    /// each zone to the first provider whose negotiated filter takes it.
    pub async fn sync_all(&self, desired: &DesiredZones, mode: SyncMode) -> SyncReport {
        let started = Instant::now();
        let mut report = SyncReport::default();
        let sessions = self.sessions().await;
        if sessions.iter().all(Result::is_err) {
            let why: Vec<String> = sessions.into_iter().filter_map(Result::err).collect();
            tracing::warn!(
                provider = NAME,
                "no webhook provider (retried soon): {}",
                why.join("; ")
            );
            self.applied.clear();
            report.errors.push((ErrorScope::Provider, why.join("; ")));
            return report;
        }
        let (_, pending) = self.applied.pending(desired, mode, &mut report);
        // Each provider's records, read once per sync when one of its zones
        // is synced.
        let mut held: BTreeMap<usize, Result<Vec<WireEndpoint>, String>> = BTreeMap::new();
        for (apex, rrsets) in pending {
            let mut outcome = SyncReport::default();
            let chosen = sessions
                .iter()
                .enumerate()
                .find_map(|(i, s)| s.as_ref().ok().filter(|s| s.filter.matches(&apex)).map(|s| (i, s)));
            let result = match chosen {
                None if rrsets.is_empty() => Ok(()),
                None => Err(self.untaken(&apex, &sessions)),
                Some((index, _)) if self.throttled_for(index).is_some() => Err(format!(
                    "the webhook provider {} asked to slow down: nothing is sent to it for {:?} more",
                    self.config.urls[index],
                    self.throttled_for(index).unwrap_or_default()
                )),
                Some((index, session)) => {
                    let records = match held.entry(index) {
                        std::collections::btree_map::Entry::Occupied(read) => read.into_mut(),
                        std::collections::btree_map::Entry::Vacant(slot) => {
                            let records = session.client.records().await;
                            self.metrics.api_call(NAME, "records", records.is_ok());
                            let records = match records {
                                Ok(records) => Ok(records),
                                Err(e) if e.throttled() => Err(self.throttle(index, &e)),
                                Err(e) => {
                                    if !e.transient() {
                                        self.forget_session(index).await;
                                    }
                                    Err(e.message)
                                }
                            };
                            slot.insert(records)
                        }
                    };
                    match records {
                        Ok(records) => match self
                            .sync_zone(&session.client, &session.filter, &apex, rrsets, records, &mut outcome)
                            .await
                        {
                            Ok(()) => {
                                self.unthrottle(index);
                                Ok(())
                            }
                            Err(Stop::Failed(why)) => Err(why),
                            Err(Stop::Throttled(e)) => Err(self.throttle(index, &e)),
                        },
                        Err(e) => Err(e.clone()),
                    }
                }
            };
            self.applied.finish(NAME, &apex, rrsets, result, outcome, &mut report);
        }
        self.metrics.sync_duration(NAME, started);
        report
    }

    /// Why no provider takes the zone `apex`: each one's filter, or why it
    /// could not be asked.
    fn untaken(&self, apex: &str, sessions: &[Result<Session, String>]) -> String {
        let each: Vec<String> = self
            .config
            .urls
            .iter()
            .zip(sessions)
            .map(|(url, s)| match s {
                Ok(s) => format!("{url} (its domain filter: {})", s.filter.describe()),
                Err(e) => format!("{url} (not negotiated: {e})"),
            })
            .collect();
        format!("no webhook provider takes the zone {apex}: {}", each.join("; "))
    }
}

impl Provider for Webhook {
    fn name(&self) -> &'static str {
        NAME
    }

    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport> {
        Box::pin(self.sync_all(desired, mode))
    }
}

/// A TXT RRset holding an external-dns ownership value (`heritage=external-dns,...`).
fn is_registry_record(rrset: &DesiredRRset) -> bool {
    rrset.record_type == RecordType::TXT
        && rrset
            .targets
            .iter()
            .any(|t| registry::parse_value(&crate::plan::txt::concatenated(t)).is_some())
}

/// Targets of a desired RRset as external-dns endpoints carry them
/// (external-dns v0.22.0, `endpoint/endpoint.go`): TXT as the text itself
/// (its character-strings joined); SRV as `priority weight port host.`,
/// the host absolute, which `NewSRVRecord` requires (:659-687) and every
/// external-dns source writes (`source/service.go` :757); CNAME, NS, MX
/// and PTR host names without the trailing dot, as `NewEndpointWithTTL`
/// strips it (:292-319; fedns's canonical form already); the rest as they
/// are.
fn wire_targets(rrset: &DesiredRRset) -> Vec<String> {
    rrset
        .targets
        .iter()
        .map(|t| match rrset.record_type {
            RecordType::TXT => crate::plan::txt::concatenated(t),
            RecordType::SRV => crate::plan::presentation::absolute_value(RecordType::SRV, t),
            _ => t.clone(),
        })
        .collect()
}

/// Targets a provider holds in fedns's canonical form, sorted.
fn targets_of(record_type: RecordType, targets: &[String]) -> Vec<String> {
    let mut out: Vec<String> = targets
        .iter()
        .map(|t| match record_type {
            RecordType::TXT => crate::plan::txt::presentation(&crate::plan::txt::split(t.as_bytes())),
            _ => crate::plan::presentation::canonical_value(record_type, t),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A desired RRset as an endpoint; `labels` for a registry record.
fn endpoint_of(rrset: &DesiredRRset, labels: Option<BTreeMap<String, String>>) -> WireEndpoint {
    WireEndpoint {
        dns_name: rrset.name.clone(),
        targets: wire_targets(rrset),
        record_type: rrset.record_type.as_str().to_owned(),
        set_identifier: String::new(),
        record_ttl: i64::from(rrset.ttl),
        labels: labels.unwrap_or_default(),
        provider_specific: Vec::new(),
    }
}

/// The registry record for a desired RRset, as external-dns's TXT registry
/// writes it over a webhook: a TXT endpoint at the affixed name holding the
/// quoted heritage string, no TTL, label `ownedRecord` = the name.
fn registry_endpoint(owner: &str, ownership: &Ownership<WireEndpoint>, rrset: &DesiredRRset) -> WireEndpoint {
    let resource = rrset.sources.iter().next().map(|s| registry::resource_of(s));
    WireEndpoint {
        dns_name: ownership.txt_name(&rrset.name, rrset.record_type),
        targets: vec![format!("\"{}\"", registry::txt_value(owner, resource.as_deref()))],
        record_type: "TXT".into(),
        set_identifier: String::new(),
        record_ttl: 0,
        labels: BTreeMap::from([("ownedRecord".to_owned(), rrset.name.clone())]),
        provider_specific: Vec::new(),
    }
}

/// The owner id of a registry endpoint, if it is one.
fn registry_owner(endpoint: &WireEndpoint) -> Option<String> {
    if !endpoint.record_type.eq_ignore_ascii_case("TXT") {
        return None;
    }
    endpoint
        .targets
        .iter()
        .find_map(|t| registry::parse_value(t.trim().trim_matches('"')))
        .map(|(owner, _)| owner)
}

/// Same registry content (targets, ignoring quoting)?
fn same_registry(a: &WireEndpoint, b: &WireEndpoint) -> bool {
    let text = |e: &WireEndpoint| -> Vec<String> {
        e.targets
            .iter()
            .map(|t| t.trim().trim_matches('"').to_owned())
            .collect()
    };
    text(a) == text(b)
}

/// The plan for one zone: `held` is every endpoint the provider holds in
/// it (registry records included), `desired` the zone's RRsets as adjusted
/// by the provider.
pub fn plan_zone(
    owner: &str,
    txt_wildcard_replacement: &str,
    apex: &str,
    desired: &[DesiredRRset],
    held: &[WireEndpoint],
) -> ZonePlan<Unit> {
    let mut out = ZonePlan::default();
    let mut ownership: Ownership<WireEndpoint> = Ownership::new(txt_wildcard_replacement, true);
    let mut plain: Vec<&WireEndpoint> = Vec::new();
    for endpoint in held {
        match registry_owner(endpoint) {
            Some(record_owner) => ownership.claim(&endpoint.key().0, "", record_owner, endpoint.clone(), owner),
            None => plain.push(endpoint),
        }
    }
    let mut current: Vec<CurrentRRset> = Vec::new();
    let mut raw_of: BTreeMap<(String, RecordType), &WireEndpoint> = BTreeMap::new();
    for endpoint in plain {
        let (name, rtype, set) = endpoint.key();
        let Some(record_type) = RecordType::from_mnemonic(&rtype) else {
            continue;
        };
        current.push(CurrentRRset {
            owner: ownership.owner(&name, record_type, &set),
            name: name.clone(),
            record_type,
            ttl: u32::try_from(endpoint.record_ttl.max(0)).unwrap_or(u32::MAX),
            targets: targets_of(record_type, &endpoint.targets),
            set_identifier: set.clone(),
            policy: String::new(),
        });
        raw_of.insert((name, record_type), endpoint);
    }
    current.extend(ownership.orphan_claims(owner, |name, t, _| raw_of.contains_key(&(name.to_owned(), t))));
    out.owned = current.iter().filter(|c| c.owner.as_deref() == Some(owner)).count();

    let allowed: Vec<DesiredRRset> = desired
        .iter()
        .filter(|rrset| ownership.admit(rrset, apex, "the webhook provider", &mut out))
        .cloned()
        .collect();
    let plan = planner::plan(&allowed, &current, owner);
    out.conflicts
        .extend(plan.conflicts.into_iter().map(planner::Conflict::reported));
    let ours = |name: &str, t: RecordType| ownership.ours(owner, name, t, "");
    let mut touched: BTreeSet<(String, RecordType)> = BTreeSet::new();
    for change in plan.changes {
        let mut changes = Changes::default();
        let (name, record_type) = match change {
            planner::Change::Create(d) | planner::Change::Update { desired: d, .. } => {
                let key = (d.name.clone(), d.record_type);
                let new = endpoint_of(&d, None);
                match raw_of.get(&key) {
                    Some(held) => {
                        changes.update_old.push((*held).clone());
                        changes.update_new.push(new);
                    }
                    None => changes.create.push(new),
                }
                let registry = registry_endpoint(owner, &ownership, &d);
                match ours(&d.name, d.record_type) {
                    Some(txt) if same_registry(txt, &registry) => {}
                    Some(txt) => {
                        changes.update_old.push(txt.clone());
                        changes.update_new.push(registry);
                    }
                    None => changes.create.push(registry),
                }
                touched.insert(key.clone());
                key
            }
            planner::Change::Delete(c) => {
                let key = (c.name.clone(), c.record_type);
                if let Some(held) = raw_of.get(&key) {
                    changes.delete.push((*held).clone());
                }
                if let Some(txt) = ours(&c.name, c.record_type) {
                    changes.delete.push(txt.clone());
                }
                touched.insert(key.clone());
                key
            }
        };
        out.units.push(Unit {
            name,
            record_type,
            changes,
        });
    }
    // Our registry records whose record is gone and not wanted: clean up.
    let keep = |name: &str, t: RecordType, _: &str| {
        let key = (name.to_owned(), t);
        raw_of.contains_key(&key) || touched.contains(&key)
    };
    for (name, record_type, txt) in ownership.stale(owner, keep) {
        out.units.push(Unit {
            name: name.to_owned(),
            record_type,
            changes: Changes {
                delete: vec![txt.clone()],
                ..Changes::default()
            },
        });
    }
    out.units.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `units` in requests of at most `max` endpoints (a unit larger than that
/// goes alone).
fn pack(units: Vec<Unit>, max: usize) -> Vec<Vec<Unit>> {
    let mut out: Vec<Vec<Unit>> = Vec::new();
    let mut size = 0;
    for unit in units {
        let n = unit.changes.len();
        match out.last_mut() {
            Some(batch) if size + n <= max => {
                batch.push(unit);
                size += n;
            }
            _ => {
                out.push(vec![unit]);
                size = n;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
