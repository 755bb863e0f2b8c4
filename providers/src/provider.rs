//! What every external provider shares: the [`Provider`] trait the
//! pipeline drives, the [`SyncReport`] it gets back, and the provider
//! metrics.
//!
//! A provider is given the whole desired state on every change. It keeps
//! what it last applied per zone, so a [`SyncMode::Changed`] sync of a zone
//! whose desired RRsets did not change makes no API call at all (idle means
//! idle); a [`SyncMode::Full`] sync reads the provider's state again and
//! repairs drift.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fedns_api::RecordType;
use futures::future::BoxFuture;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::plan::desired::{DesiredRRset, DesiredZones};

/// How much work a sync may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Only zones whose desired RRsets changed since their last successful
    /// sync are read and written.
    Changed,
    /// Every zone is read and repaired (periodic resync).
    Full,
}

/// What went wrong, and how widely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorScope {
    /// The provider as a whole (unreachable, bad credentials): every zone.
    Provider,
    /// One zone, by apex (no trailing dot).
    Zone(String),
}

/// What one sync did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Write calls made (etcd transactions, Route53 change batches); 0
    /// when idle.
    pub writes: usize,
    /// RRset changes applied.
    pub changes: usize,
    /// Desired RRsets held back: (RRset, who holds the name).
    pub conflicts: Vec<(DesiredRRset, String)>,
    /// Names nested under another published name: (inner, outer).
    pub nested: Vec<(String, String)>,
    /// Single changes the provider refused: (owner name, type, message).
    /// The rest of the zone was applied.
    pub rejected: Vec<(String, RecordType, String)>,
    /// Failures that stopped a zone or the whole provider; retried on the
    /// next sync.
    pub errors: Vec<(ErrorScope, String)>,
    /// RRsets published without their traffic policy (the provider cannot
    /// express it; every member is published, `All`): (owner name, type,
    /// why). Reported as `<provider>/Published=True reason PolicyDowngraded`.
    pub downgraded: Vec<(String, RecordType, String)>,
}

impl SyncReport {
    /// Anything to retry soon?
    ///
    /// Refused changes are not: they are retried on the periodic resync,
    /// not every few seconds.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Adds `other`'s counts and findings to this report.
    pub fn merge(&mut self, other: SyncReport) {
        self.writes += other.writes;
        self.changes += other.changes;
        self.conflicts.extend(other.conflicts);
        self.nested.extend(other.nested);
        self.rejected.extend(other.rejected);
        self.errors.extend(other.errors);
        self.downgraded.extend(other.downgraded);
    }
}

/// A publishing target outside the process (Route53, CoreDNS via etcd).
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// Short name used in conditions (`<name>/Published`), metrics and
    /// logs, e.g. `route53`.
    fn name(&self) -> &'static str;

    /// Brings the provider in line with `desired`. Never panics and never
    /// returns early on one zone's failure: every problem is in the report.
    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport>;
}

/// Per zone, the desired RRsets last applied without error and what that
/// sync found (conflicts, nested names, refused changes): a zone whose
/// desired RRsets are unchanged is skipped by a [`SyncMode::Changed`] sync,
/// and its findings are reported again so conditions stay true.
#[derive(Debug, Default)]
pub struct AppliedCache {
    zones: Mutex<BTreeMap<String, (Vec<DesiredRRset>, SyncReport)>>,
}

impl AppliedCache {
    /// If `zone` need not be synced in `mode`, adds its last findings to
    /// `report` and returns true.
    pub fn replay(&self, zone: &str, rrsets: &[DesiredRRset], mode: SyncMode, report: &mut SyncReport) -> bool {
        if mode == SyncMode::Full {
            return false;
        }
        match self.lock().get(zone) {
            Some((applied, findings)) if applied.as_slice() == rrsets => {
                report.merge(findings.clone());
                true
            }
            _ => false,
        }
    }

    /// Records a sync of `zone` that ended without error, and its findings.
    pub fn applied(&self, zone: &str, rrsets: &[DesiredRRset], outcome: &SyncReport) {
        let findings = SyncReport {
            conflicts: outcome.conflicts.clone(),
            nested: outcome.nested.clone(),
            rejected: outcome.rejected.clone(),
            downgraded: outcome.downgraded.clone(),
            ..SyncReport::default()
        };
        self.lock().insert(zone.to_owned(), (rrsets.to_vec(), findings));
    }

    /// The zones of `desired` a sync in `mode` must visit, as (apex
    /// without the trailing dot, RRsets); the findings of the others are
    /// replayed into `report`. Forgets zones no longer desired. Returns
    /// every desired apex too.
    pub fn pending<'a>(
        &self,
        desired: &'a DesiredZones,
        mode: SyncMode,
        report: &mut SyncReport,
    ) -> (Vec<String>, Vec<(String, &'a [DesiredRRset])>) {
        let mut apexes = Vec::new();
        let mut pending = Vec::new();
        for zone in &desired.zones {
            let apex = zone.content.apex.to_ascii().trim_end_matches('.').to_owned();
            apexes.push(apex.clone());
            if !self.replay(&apex, &zone.rrsets, mode, report) {
                pending.push((apex, zone.rrsets.as_slice()));
            }
        }
        self.retain(&apexes);
        (apexes, pending)
    }

    /// Records how one zone's sync ended: applied (its findings kept for
    /// replay), or failed (forgotten, so synced next time; the error goes
    /// into `outcome` as [`ErrorScope::Zone`]); then adds `outcome` to
    /// `report`.
    pub fn finish(
        &self,
        provider: &'static str,
        apex: &str,
        rrsets: &[DesiredRRset],
        result: Result<(), String>,
        mut outcome: SyncReport,
        report: &mut SyncReport,
    ) {
        match result {
            Ok(()) => self.applied(apex, rrsets, &outcome),
            Err(e) => {
                tracing::warn!(provider, zone = %apex, "sync failed (retried soon): {e}");
                self.forget(apex);
                outcome.errors.push((ErrorScope::Zone(apex.to_owned()), e));
            }
        }
        report.merge(outcome);
    }

    /// Forgets `zone` (it failed, or may have drifted): synced next time.
    pub fn forget(&self, zone: &str) {
        self.lock().remove(zone);
    }

    /// Forgets every zone.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Keeps only the zones in `zones` (removed Domains).
    pub fn retain(&self, zones: &[String]) {
        self.lock().retain(|z, _| zones.contains(z));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Vec<DesiredRRset>, SyncReport)>> {
        // Each use is one map operation, so a panic elsewhere cannot leave
        // the map half-written: a poisoned lock is still consistent.
        self.zones.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ZoneLabel {
    provider: &'static str,
    zone: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabel {
    provider: &'static str,
    operation: &'static str,
    result: &'static str,
}

fn sync_histogram() -> Histogram {
    Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0])
}

/// Metrics of the external providers (prometheus-client); cheap to clone,
/// all clones update the same series.
#[derive(Debug, Clone)]
pub struct ProviderMetrics {
    changes: Family<ZoneLabel, Counter>,
    calls: Family<CallLabel, Counter>,
    /// Calls per provider, all operations and results (not exported: the
    /// sum of `calls`, kept for tests and logs).
    calls_total: Family<ProviderLabel, Counter>,
    sync_seconds: Family<ProviderLabel, Histogram, fn() -> Histogram>,
    owned: Family<ZoneLabel, Gauge>,
}

impl Default for ProviderMetrics {
    /// Metrics registered nowhere (tests, tools).
    fn default() -> Self {
        ProviderMetrics {
            changes: Family::default(),
            calls: Family::default(),
            calls_total: Family::default(),
            sync_seconds: Family::new_with_constructor(sync_histogram),
            owned: Family::default(),
        }
    }
}

impl ProviderMetrics {
    /// Creates the metrics and registers them in `registry`:
    /// `fedns_provider_changes_applied_total{provider,zone}`,
    /// `fedns_provider_api_calls_total{provider,operation,result}`,
    /// `fedns_provider_sync_duration_seconds{provider}`,
    /// `fedns_provider_records_owned{provider,zone}`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = ProviderMetrics::default();
        registry.register(
            "fedns_provider_changes_applied",
            "RRset changes applied to a provider, by zone",
            metrics.changes.clone(),
        );
        registry.register(
            "fedns_provider_api_calls",
            "Provider API calls by operation and result (ok, error)",
            metrics.calls.clone(),
        );
        registry.register(
            "fedns_provider_sync_duration_seconds",
            "Duration of provider syncs, in seconds",
            metrics.sync_seconds.clone(),
        );
        registry.register(
            "fedns_provider_records_owned",
            "RRsets the provider holds under fedns's owner id, by zone (as of the last read)",
            metrics.owned.clone(),
        );
        metrics
    }

    /// Counts `n` applied changes in `zone`.
    pub fn changes_applied(&self, provider: &'static str, zone: &str, n: usize) {
        self.changes
            .get_or_create(&ZoneLabel {
                provider,
                zone: zone.to_owned(),
            })
            .inc_by(n as u64);
    }

    /// Counts one API call.
    pub fn api_call(&self, provider: &'static str, operation: &'static str, ok: bool) {
        self.calls
            .get_or_create(&CallLabel {
                provider,
                operation,
                result: if ok { "ok" } else { "error" },
            })
            .inc();
        self.calls_total.get_or_create(&ProviderLabel { provider }).inc();
    }

    /// API calls counted so far for `provider` (every operation and
    /// result); for tests and logs.
    pub fn api_calls_total(&self, provider: &'static str) -> u64 {
        self.calls_total.get_or_create(&ProviderLabel { provider }).get()
    }

    /// Records how long a sync took.
    pub fn sync_duration(&self, provider: &'static str, started: Instant) {
        self.sync_seconds
            .get_or_create(&ProviderLabel { provider })
            .observe(started.elapsed().as_secs_f64());
    }

    /// Sets the number of owned RRsets in `zone`.
    pub fn records_owned(&self, provider: &'static str, zone: &str, n: usize) {
        self.owned
            .get_or_create(&ZoneLabel {
                provider,
                zone: zone.to_owned(),
            })
            .set(n as i64);
    }
}

/// An error and its sources in one line ("error sending request:
/// connection refused"), each source once.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

/// Spaces calls at most `per_second` apart; shared by every caller of one
/// provider, so a sync never exceeds the provider's API rate.
#[derive(Debug)]
pub struct RateLimit {
    period: Duration,
    next: Mutex<Option<tokio::time::Instant>>,
}

impl RateLimit {
    /// At most `per_second` calls per second (values ≤ 0: unlimited).
    pub fn new(per_second: f64) -> Self {
        let period = if per_second > 0.0 {
            Duration::from_secs_f64(1.0 / per_second)
        } else {
            Duration::ZERO
        };
        RateLimit {
            period,
            next: Mutex::new(None),
        }
    }

    /// Waits for the next slot. After a quiet spell the next call goes at
    /// once; calls never burst to catch up.
    pub async fn acquire(&self) {
        let at = {
            let mut next = self.next.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = tokio::time::Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + self.period);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

/// An HTTP client for a provider's API: rustls with the ring provider
/// (set here, not process-wide: reqwest's rustls has none of its own) and
/// the system's root certificates, each request bounded by `timeout`,
/// connecting within 5 s.
///
/// # Errors
/// TLS set-up or the client cannot be built.
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, String> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("building the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rate_limit_spaces_calls() {
        let limit = RateLimit::new(20.0);
        let started = Instant::now();
        for _ in 0..5 {
            limit.acquire().await;
        }
        // Five calls at 20 per second: the first at once, then 50 ms apart.
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        let unlimited = RateLimit::new(0.0);
        let started = Instant::now();
        for _ in 0..1000 {
            unlimited.acquire().await;
        }
        println!("1000 unlimited acquires: {:?}", started.elapsed());
    }

    #[test]
    fn metrics_are_exposed_under_their_names() {
        let mut registry = Registry::default();
        let metrics = ProviderMetrics::new(&mut registry);
        metrics.api_call("route53", "change_records", true);
        metrics.api_call("route53", "list_records", false);
        metrics.changes_applied("route53", "example.com", 3);
        metrics.records_owned("route53", "example.com", 7);
        metrics.sync_duration("route53", Instant::now());
        assert_eq!(metrics.api_calls_total("route53"), 2);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "fedns_provider_api_calls_total{provider=\"route53\",operation=\"change_records\",result=\"ok\"} 1",
            "fedns_provider_api_calls_total{provider=\"route53\",operation=\"list_records\",result=\"error\"} 1",
            "fedns_provider_changes_applied_total{provider=\"route53\",zone=\"example.com\"} 3",
            "fedns_provider_records_owned{provider=\"route53\",zone=\"example.com\"} 7",
            "fedns_provider_sync_duration_seconds_count{provider=\"route53\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn applied_cache_replays_findings_until_the_zone_changes() {
        let cache = AppliedCache::default();
        let rrsets = vec![];
        let mut report = SyncReport::default();
        assert!(!cache.replay("example.com", &rrsets, SyncMode::Changed, &mut report));
        let outcome = SyncReport {
            writes: 3,
            nested: vec![("a.b.example.com".into(), "b.example.com".into())],
            ..SyncReport::default()
        };
        cache.applied("example.com", &rrsets, &outcome);
        assert!(cache.replay("example.com", &rrsets, SyncMode::Changed, &mut report));
        assert_eq!((report.writes, report.nested.len()), (0, 1));
        assert!(!cache.replay("example.com", &rrsets, SyncMode::Full, &mut report));
        cache.forget("example.com");
        assert!(!cache.replay("example.com", &rrsets, SyncMode::Changed, &mut report));
    }
}
