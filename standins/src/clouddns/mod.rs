//! # A Google Cloud DNS v1 REST API stand-in
//!
//! Google Cloud DNS cannot be reached from the machines fedns is tested on,
//! so [`CloudDns::start`] serves its REST API (`/dns/v1/projects/{project}/…`)
//! on `127.0.0.1:<free port>`, over plain HTTP, or over HTTPS with a
//! certificate from a CA it generates ([`CloudDnsConfig::tls`],
//! [`CloudDns::ca_pem`]). It implements the documented semantics and
//! nothing friendlier, so a provider written against it behaves against
//! the real service.
//!
//! ## What it does
//! * A bearer token on every request (`Authorization: Bearer …`, one of
//!   [`CloudDnsConfig::tokens`]): missing → 401 `required`, wrong → 401
//!   `authError`, both `UNAUTHENTICATED`. Unknown project → 404 `notFound`
//!   (`parameters.project`).
//! * `GET projects/{project}` (with the configured [`Quota`]),
//!   `GET managedZones` (filter `dnsName`, paging with `maxResults`,
//!   `pageToken`/`nextPageToken`), `GET managedZones/{zone}` (by name or
//!   numeric id; 404 `notFound` `parameters.managedZone`).
//! * Zones are created through [`CloudDns::create_zone`], `public` or
//!   `private`, with their apex SOA and NS record sets as Cloud DNS makes
//!   them (`ns-cloud-{a..e}{1..4}.googledomains.com.`, SOA
//!   `ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600
//!   3600 259200 300`, TTL 21600; `ns-gcp-private.googledomains.com.` for
//!   private zones) recorded as change `"0"`.
//! * `GET managedZones/{zone}/rrsets` (filters `name` and `type`; `type`
//!   needs `name`; paging), `GET rrsets/{name}/{type}`. Record sets are
//!   `{kind, name, type, ttl, rrdatas}` or `{kind, name, type, ttl,
//!   routingPolicy}`; routing policies `wrr`, `geo` (`enableFencing`) and
//!   `primaryBackup` (`primaryTargets`, `backupGeoTargets`,
//!   `trickleTraffic`) are checked for shape and stored and echoed exactly
//!   as sent.
//! * `POST managedZones/{zone}/changes` is atomic: every record set is
//!   checked, then the per-change quotas, then deletions (missing → 404
//!   `notFound`; not exactly equal to the stored set in name, type, TTL,
//!   rrdatas in any order and routing policy → 412 `conditionNotMet`
//!   "Precondition not met for 'entity.change.deletions[i]'"), then
//!   additions (existing name and type → 409 `alreadyExists`), then the
//!   zone as it would be (a CNAME beside other types at one name, or the
//!   apex SOA/NS deleted without being replaced in the same change → 400
//!   `invalid`), then the per-zone record-set quota (403 `quotaExceeded`);
//!   only then deletions and additions are applied. 400 `invalid` /
//!   `required` name the field as Google does
//!   (`entity.change.additions[2].ttl`): name not absolute or outside the
//!   zone, unknown type, rrdata not in the type's presentation format
//!   (A, AAAA, CNAME, NS, PTR, MX, SRV, SOA, TXT/SPF with quoting and
//!   255-octet strings, CAA, DS, TLSA, SSHFP, DNSKEY, HTTPS/SVCB; NAPTR and
//!   IPSECKEY only non-empty), duplicate rrdatas, more than one CNAME or SOA
//!   rrdata, no rrdatas, TTL outside 0..=2³¹−1, both rrdatas and a routing
//!   policy, one name and type twice in additions or in deletions, SOA
//!   below the apex. Per-change quotas (403 `quotaExceeded`, "The change
//!   would exceed quota for additions per change." …): 1,000 additions,
//!   1,000 deletions, 100,000 rrdata octets, 100 rrdatas per record set;
//!   10,000 record sets per zone; all adjustable ([`CloudDns::set_quota`]).
//! * The Change: `{kind: "dns#change", id, status, startTime, additions,
//!   deletions}`, ids sequential per zone; `pending` when created, `done`
//!   once [`CloudDnsConfig::change_delay`] has passed. Record sets show the
//!   change at once (as Cloud DNS's API does; "pending" is about serving).
//!   `GET changes/{id}`, `GET changes` (paging, `sortBy=changeSequence`,
//!   `sortOrder`).
//! * Errors in Google's envelope `{"error": {"code", "message", "errors":
//!   [{"domain": "global", "reason", "message"}], "status"}}` with the
//!   canonical status (`INVALID_ARGUMENT`, `UNAUTHENTICATED`,
//!   `PERMISSION_DENIED`, `NOT_FOUND`, `ALREADY_EXISTS`,
//!   `FAILED_PRECONDITION`, `RESOURCE_EXHAUSTED`, `INTERNAL`,
//!   `UNAVAILABLE`).
//! * Faults: [`CloudDns::fail_next`] (the next N authenticated requests get
//!   429 `rateLimitExceeded`, 500 or 503 `backendError`),
//!   [`CloudDns::set_fault_rate`], [`CloudDns::set_latency`]; another writer
//!   ([`CloudDns::write_record_set`], [`CloudDns::delete_record_set`]) for
//!   compare-and-swap tests; [`CloudDns::record_sets`] and
//!   [`CloudDns::changes`] for assertions.
//!
//! ## What it does not do (compared with Cloud DNS)
//! * No DNS serving at all (nothing answers queries on port 53), so no
//!   propagation; `pending` → `done` is only a timer.
//! * No zone creation, update or deletion over REST (501
//!   `notImplemented`), no `rrsets` create/patch/delete methods (changes
//!   only), no `managedZoneOperations`, `policies`, `responsePolicies`,
//!   `dnsKeys`, no DNSSEC (`signatureRrdatas` are ignored), no peering,
//!   forwarding or reverse-lookup zones, no `clientOperationId`
//!   idempotency, no `fields` partial responses, no batch requests.
//! * No IAM: any configured token may do anything in any configured
//!   project; no OAuth, no service accounts, no 403 `forbidden`.
//! * Routing policies are checked for shape only: health checks are not
//!   run, locations are not checked against GCP regions, private-zone-only
//!   rules (internal load balancers) are not enforced.
//! * Names are lower-cased when stored; Unicode/IDN names are rejected
//!   rather than converted. Record data is stored as sent, not
//!   canonicalised (Cloud DNS may rewrite e.g. AAAA or TXT formatting).
//! * Private zones have no `privateVisibilityConfig` (no networks); zones
//!   have no `description`, labels, `dnssecConfig` or `cloudLoggingConfig`
//!   beyond empty defaults.
//! * The default page size (100), the largest honoured `maxResults`
//!   (1,000) and the ordering (by name, then type) are the stand-in's
//!   choices; page tokens are opaque but not signed.
//! * Error messages follow the ones Cloud DNS is known to return where they
//!   are known (412, 404, 409, quota); others are worded in the same style
//!   but are the stand-in's own. Only the first failed check is reported,
//!   except that every exceeded per-change quota is listed in `errors[]`.
//! * Injected faults come after authentication; real rate limits are not
//!   modelled beyond what is injected.

mod error;
mod http;
mod names;
mod policy;
mod records;
mod rrdata;
mod state;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub use error::GoogleError;
pub use records::RecordSet;
pub use state::{Change, Visibility};

/// Limits Cloud DNS enforces (its defaults; `GET projects/{project}`
/// reports them as `quota`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Record sets a zone may hold (apex SOA and NS included).
    pub rrsets_per_managed_zone: usize,
    /// Additions in one change.
    pub rrset_additions_per_change: usize,
    /// Deletions in one change.
    pub rrset_deletions_per_change: usize,
    /// Octets of rrdata (additions and deletions) in one change.
    pub total_rrdata_size_per_change: usize,
    /// Rrdatas in one record set (per routing-policy item).
    pub resource_records_per_rrset: usize,
}

impl Default for Quota {
    fn default() -> Self {
        Quota {
            rrsets_per_managed_zone: 10_000,
            rrset_additions_per_change: 1_000,
            rrset_deletions_per_change: 1_000,
            total_rrdata_size_per_change: 100_000,
            resource_records_per_rrset: 100,
        }
    }
}

/// Settings of one stand-in.
#[derive(Debug, Clone)]
pub struct CloudDnsConfig {
    /// Projects that exist (others get 404).
    pub projects: Vec<String>,
    /// Bearer tokens accepted (empty: one random token, see
    /// [`CloudDns::token`]).
    pub tokens: Vec<String>,
    /// How long a change stays `pending`.
    pub change_delay: Duration,
    /// Page size when `maxResults` is absent.
    pub page_size: usize,
    /// Limits.
    pub quota: Quota,
    /// Serve HTTPS (certificate for 127.0.0.1 from a generated CA) instead
    /// of HTTP.
    pub tls: bool,
    /// Loopback port (None: a free one).
    pub port: Option<u16>,
}

impl Default for CloudDnsConfig {
    fn default() -> Self {
        CloudDnsConfig {
            projects: vec!["fedns-test".into()],
            tokens: Vec::new(),
            change_delay: Duration::from_secs(1),
            page_size: 100,
            quota: Quota::default(),
            tls: false,
            port: None,
        }
    }
}

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429 `rateLimitExceeded`, `RESOURCE_EXHAUSTED`.
    RateLimited,
    /// 500 `backendError`, `INTERNAL`.
    Internal,
    /// 503 `backendError`, `UNAVAILABLE`.
    Unavailable,
}

impl Fault {
    fn error(self) -> GoogleError {
        match self {
            Fault::RateLimited => GoogleError::new(
                429,
                "rateLimitExceeded",
                "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute' of service 'dns.googleapis.com'.",
            ),
            Fault::Internal => GoogleError::new(500, "backendError", "Internal error encountered."),
            Fault::Unavailable => GoogleError::new(503, "backendError", "The service is currently unavailable."),
        }
    }
}

#[derive(Debug, Default)]
struct Faults {
    queue: VecDeque<Fault>,
    rate: Option<(Fault, u64)>,
    latency: Duration,
    seen: u64,
}

/// Why the stand-in could not start.
#[derive(Debug, thiserror::Error)]
pub enum CloudDnsError {
    /// Binding the port failed.
    #[error("binding 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    /// Certificate generation failed.
    #[error("generating TLS certificates: {0}")]
    Tls(String),
}

#[derive(Debug)]
struct Inner {
    state: Mutex<state::State>,
    tokens: Vec<String>,
    page_size: usize,
    quota: Mutex<Quota>,
    change_delay: Mutex<Duration>,
    faults: Mutex<Faults>,
    requests: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, state::State> {
        lock(&self.state)
    }
    fn quota(&self) -> Quota {
        *lock(&self.quota)
    }
    fn change_delay(&self) -> Duration {
        *lock(&self.change_delay)
    }
    fn faults(&self) -> MutexGuard<'_, Faults> {
        lock(&self.faults)
    }
    fn next_fault(&self) -> Option<Fault> {
        let mut faults = self.faults();
        if let Some(fault) = faults.queue.pop_front() {
            return Some(fault);
        }
        let (fault, ppm) = faults.rate?;
        // Evenly spread (a Weyl sequence), as the Kubernetes emulator does.
        let n = faults.seen;
        faults.seen += 1;
        (n.wrapping_mul(618_034) % 1_000_000 < ppm).then_some(fault)
    }
}

/// A managed zone as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedZone {
    /// Numeric id, as a decimal string.
    pub id: String,
    /// Zone name.
    pub name: String,
    /// Absolute DNS name.
    pub dns_name: String,
    /// Apex NS rrdatas.
    pub name_servers: Vec<String>,
    /// Public or private.
    pub visibility: Visibility,
}

/// A running stand-in. Cheap to clone; it serves until the last clone is
/// dropped.
#[derive(Clone)]
pub struct CloudDns {
    inner: Arc<Inner>,
    addr: SocketAddr,
    ca_pem: Option<String>,
    _stop: Arc<watch::Sender<()>>,
}

impl std::fmt::Debug for CloudDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudDns")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl CloudDns {
    /// Starts serving on `127.0.0.1`. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// See [`CloudDnsError`].
    pub async fn start(config: CloudDnsConfig) -> Result<CloudDns, CloudDnsError> {
        let tls = if config.tls {
            Some(fedns_loopback::tls::generate("clouddns").map_err(CloudDnsError::Tls)?)
        } else {
            None
        };
        let tokens = if config.tokens.is_empty() {
            vec![uuid::Uuid::new_v4().simple().to_string()]
        } else {
            config.tokens.clone()
        };
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], config.port.unwrap_or(0)))).await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner {
            state: Mutex::new(state::State::with_projects(&config.projects)),
            tokens,
            page_size: config.page_size.max(1),
            quota: Mutex::new(config.quota),
            change_delay: Mutex::new(config.change_delay),
            faults: Mutex::new(Faults::default()),
            requests: AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(());
        let acceptor = tls.as_ref().map(|t| TlsAcceptor::from(t.server_config.clone()));
        serve(listener, inner.clone(), acceptor, stopped);
        let dns = CloudDns {
            inner,
            addr,
            ca_pem: tls.map(|t| t.ca_pem),
            _stop: Arc::new(stop),
        };
        tracing::info!(url = %dns.url(), "Cloud DNS stand-in started");
        Ok(dns)
    }

    /// `http://127.0.0.1:<port>` (or `https://`).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `<url>/dns/v1/projects/<project>`, the base of every call.
    pub fn base_url(&self, project: &str) -> String {
        format!("{}/dns/v1/projects/{project}", self.url())
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// PEM of the CA to trust, when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The first accepted token.
    pub fn token(&self) -> &str {
        &self.inner.tokens[0]
    }

    /// Creates a managed zone with its apex SOA and NS record sets.
    ///
    /// # Errors
    /// Unknown project (404), bad zone name or DNS name (400), name taken
    /// (409).
    pub fn create_zone(
        &self,
        project: &str,
        name: &str,
        dns_name: &str,
        visibility: Visibility,
    ) -> Result<ManagedZone, GoogleError> {
        let zone = self.inner.state().create_zone(project, name, dns_name, visibility)?;
        Ok(ManagedZone {
            id: zone.id.to_string(),
            name: zone.name,
            dns_name: zone.dns_name,
            name_servers: zone.name_servers,
            visibility: zone.visibility,
        })
    }

    /// Every record set of a zone, by name then type.
    ///
    /// # Errors
    /// Unknown project or zone (404).
    pub fn record_sets(&self, project: &str, zone: &str) -> Result<Vec<RecordSet>, GoogleError> {
        Ok(self
            .inner
            .state()
            .zone_mut(project, zone)?
            .rrsets
            .values()
            .cloned()
            .collect())
    }

    /// Every change of a zone, oldest first (change `"0"` is its creation;
    /// [`Change::from_api`] tells the ones received over REST).
    ///
    /// # Errors
    /// Unknown project or zone (404).
    pub fn changes(&self, project: &str, zone: &str) -> Result<Vec<Change>, GoogleError> {
        Ok(self.inner.state().zone_mut(project, zone)?.changes.clone())
    }

    /// Another writer: creates or replaces one record set, bypassing the
    /// change checks except the record set's own validity (name in the
    /// zone, type, TTL, rrdatas or routing policy).
    ///
    /// # Errors
    /// Unknown project or zone (404); an invalid record set (400).
    pub fn write_record_set(&self, project: &str, zone: &str, set: RecordSet) -> Result<Change, GoogleError> {
        let mut state = self.inner.state();
        state::write_behind(state.zone_mut(project, zone)?, &set)
    }

    /// Another writer: deletes one record set; `None` when it was absent.
    ///
    /// # Errors
    /// Unknown project or zone (404).
    pub fn delete_record_set(
        &self,
        project: &str,
        zone: &str,
        name: &str,
        rtype: &str,
    ) -> Result<Option<Change>, GoogleError> {
        let mut state = self.inner.state();
        Ok(state::delete_behind(state.zone_mut(project, zone)?, name, rtype))
    }

    /// How long new and existing changes stay `pending`.
    pub fn set_change_delay(&self, delay: Duration) {
        *lock(&self.inner.change_delay) = delay;
    }

    /// The current change delay.
    pub fn change_delay(&self) -> Duration {
        self.inner.change_delay()
    }

    /// Replaces the limits.
    pub fn set_quota(&self, quota: Quota) {
        *lock(&self.inner.quota) = quota;
    }

    /// The next `count` authenticated requests fail with `fault`.
    pub fn fail_next(&self, fault: Fault, count: usize) {
        self.inner.faults().queue.extend(std::iter::repeat_n(fault, count));
    }

    /// A share (0.0..=1.0, evenly spread) of authenticated requests fail
    /// with `fault`; 0.0 stops it.
    pub fn set_fault_rate(&self, fault: Fault, rate: f64) {
        let ppm = (rate.clamp(0.0, 1.0) * 1_000_000.0).round();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ppm = ppm as u64;
        self.inner.faults().rate = (ppm > 0).then_some((fault, ppm));
    }

    /// Added latency on every request.
    pub fn set_latency(&self, latency: Duration) {
        self.inner.faults().latency = latency;
    }

    /// Clears queued faults, the fault rate and latency.
    pub fn clear_faults(&self) {
        *self.inner.faults() = Faults::default();
    }

    /// Requests received so far (all, failed ones included).
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(std::sync::atomic::Ordering::Relaxed)
    }
}

fn serve(listener: TcpListener, inner: Arc<Inner>, tls: Option<TlsAcceptor>, stopped: watch::Receiver<()>) {
    fedns_loopback::serve::accept_loop(listener, tls, stopped, move || {
        let inner = inner.clone();
        service_fn(move |request| http::handle(inner.clone(), request))
    });
}
