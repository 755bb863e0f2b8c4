//! Vantage points: health decided from several places.
//!
//! The controller probes every load balancer address itself (one vantage
//! point). A `fedns agent` in a member cluster probes the same addresses
//! from there (one more each) and reports what it sees. An address is Down
//! when the record's `healthCheck.quorum` of the vantage points counted say
//! so; counted are the controller and every agent whose report is fresh
//! (written within 2 × `periodSeconds`) and that is not impaired.
//!
//! * **Corroborated** ([`corroborated`]): whatever the quorum, one agent
//!   alone never takes an address out. A report is a ConfigMap in a
//!   member, and whoever can write it there could otherwise take another
//!   member's healthy load balancer out of every answer (with `quorum:
//!   AnyOne`, one vote is enough). A Down needs the controller's own
//!   probes (counted) to say Down too, or at least two vantage points.
//! * **Bound to the list** ([`Nonces`]): each member's target list carries
//!   a random nonce of its own, new whenever that member's list changes;
//!   the agent echoes it in its report. A report with another nonce
//!   (copied from another member, of an older list once the agent echoed
//!   the newer one, an earlier controller's, or from an agent too old to
//!   echo one) is not taken, and is counted
//!   (`fedns_vantage_point_reports_refused_total`).
//!
//! * **Silent:** an agent whose last report is older than 2 × the check's
//!   `periodSeconds` is not counted (and is reported: explain, metrics,
//!   an Event).
//! * **Impaired:** a vantage point that sees every address it probes Down
//!   (at least [`IMPAIRED_MIN_ADDRESSES`] distinct addresses) is taken to
//!   have lost its own network rather than every load balancer at once,
//!   and is not counted; the controller included, as long as another
//!   vantage point is. This is how a vantage point's own failure is told
//!   apart from a target's.
//! * **No agent** (none reports): the controller alone decides, exactly as
//!   before vantage points existed.
//! * **Controller only** ([`controller_only`]): a check carrying request
//!   `headers` (tokens) or a CA bundle is a tenant's secret or private
//!   trust; its targets are never written into the members' ConfigMaps,
//!   the agents do not probe them, and the controller alone decides them
//!   (the agents' reports, which do not name them, are not asked).
//!
//! The formats the controller and the agents exchange through ConfigMaps in
//! each member (see docs/vantage-points.md) are here too: [`TargetList`]
//! (controller → agents) and [`ReportDoc`] (agent → controller).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::Duration;

use fedns_api::{ProbeProtocol, Quorum};
use serde::{Deserialize, Serialize};

use super::{Check, ProbeSpec, State};

/// The controller's own vantage point's name.
pub const CONTROLLER: &str = "controller";

/// Distinct addresses a vantage point must see all Down to count as
/// impaired (with one address, all Down is just that address down).
pub const IMPAIRED_MIN_ADDRESSES: usize = 2;

/// ConfigMap (in each member's agent namespace) listing what to probe:
/// data key [`TARGETS_KEY`], a [`TargetList`] in JSON. Written by the
/// controller.
pub const TARGETS_CONFIGMAP: &str = "fedns-probe-targets";
/// The data key of [`TARGETS_CONFIGMAP`].
pub const TARGETS_KEY: &str = "targets.json";
/// ConfigMap (same namespace) holding the agent's [`ReportDoc`] under
/// [`REPORT_KEY`]. Written by the agent, read by the controller.
pub const REPORT_CONFIGMAP: &str = "fedns-probe-report";
/// The data key of [`REPORT_CONFIGMAP`].
pub const REPORT_KEY: &str = "report.json";

/// The stable id of a target (address and check) both sides use:
/// `PROTOCOL address port path host period`, e.g.
/// `HTTP 127.0.10.1 8080 /healthz www.example.com 5000ms`.
pub fn target_id(address: IpAddr, check: &Check) -> String {
    let protocol = match check.spec.protocol {
        ProbeProtocol::Tcp => "TCP",
        ProbeProtocol::Http => "HTTP",
        ProbeProtocol::Https => "HTTPS",
    };
    let mut id = format!(
        "{protocol} {address} {} {} {} {}ms",
        check.spec.port,
        check.spec.path,
        check.spec.host,
        check.period.as_millis()
    );
    // Set only by the newer settings, so the ids of checks without them
    // stay as they were.
    if check.spec.server_name != check.spec.host {
        id.push_str(" sni ");
        id.push_str(&check.spec.server_name);
    }
    if check.spec.expected_body.is_some() || !check.spec.headers.is_empty() || check.spec.ca_pem.is_some() {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(
            serde_json::to_vec(&(&check.spec.expected_body, &check.spec.headers, &check.spec.ca_pem))
                .unwrap_or_default(),
        );
        id.push_str(" request ");
        id.extend(digest.iter().take(4).map(|b| format!("{b:02x}")));
    }
    id
}

/// The key of target `id` in a report: the first 8 octets of its SHA-256
/// in hex (16 characters), so a report of 10,000 targets stays well
/// inside a ConfigMap's 1 MiB.
pub fn report_key(id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the targets of `check` stay with the controller: a check with
/// request headers (documented for tokens) or a CA bundle carries what a
/// tenant gave the host cluster only, so it is never copied into another
/// cluster (the members' [`TARGETS_CONFIGMAP`]). The controller alone
/// probes and decides such a target.
pub fn controller_only(check: &Check) -> bool {
    !check.spec.headers.is_empty() || check.spec.ca_pem.is_some()
}

/// What the agents probe: every target the controller probes but those
/// [`controller_only`] (and those refused, [`super::policy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetList {
    /// The member's nonce for this list ([`Nonces`]): its agent echoes it
    /// in [`ReportDoc::nonce`]. Empty in the prober's own list, which is
    /// the same for every member; each member's copy gets its own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    /// The targets, by [`target_id`] order.
    pub targets: Vec<TargetSpec>,
}

/// One target as agents read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetSpec {
    /// [`target_id`].
    pub id: String,
    /// The load balancer address.
    pub address: IpAddr,
    /// `TCP`, `HTTP` or `HTTPS`.
    pub protocol: ProbeProtocol,
    /// Port.
    pub port: u16,
    /// HTTP path.
    pub path: String,
    /// Host header, and TLS SNI unless `serverName` is set.
    pub host: String,
    /// TLS server name when it differs from `host` (absent from a report
    /// of an agent older than this field: `host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accepted HTTP statuses, inclusive ranges.
    pub statuses: Vec<(u16, u16)>,
    /// A string the body's first 5,120 octets must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_body: Option<String>,
    /// Extra request headers (name, value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// Milliseconds a probe may take.
    pub timeout_ms: u64,
    /// Accept any certificate.
    #[serde(default)]
    pub insecure: bool,
    /// Trust only these CA certificates (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
    /// Milliseconds between probes (`periodSeconds` × 1000).
    pub period_ms: u64,
    /// Consecutive failures that make the address Down.
    pub failure_threshold: u32,
    /// Consecutive successes that make it Up again.
    pub success_threshold: u32,
}

impl TargetList {
    /// The data of ConfigMap [`TARGETS_CONFIGMAP`]: [`TARGETS_KEY`] → this
    /// list as JSON, leaving out every target that carries request headers
    /// or a CA bundle ([`TargetSpec::carries_secrets`]; the prober's list
    /// has none already, this keeps it so whatever the list holds).
    ///
    /// # Errors
    /// The list cannot be encoded as JSON.
    pub fn config_map_data(&self) -> Result<BTreeMap<String, String>, serde_json::Error> {
        Ok(BTreeMap::from([(
            TARGETS_KEY.to_owned(),
            self.json_with_nonce(&self.nonce)?,
        )]))
    }

    /// This list as JSON with `nonce` (one member's copy), leaving out
    /// every target that carries request headers or a CA bundle, as
    /// [`TargetList::config_map_data`] does.
    ///
    /// # Errors
    /// The list cannot be encoded as JSON.
    pub fn json_with_nonce(&self, nonce: &str) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct Shared<'a> {
            #[serde(skip_serializing_if = "no_nonce")]
            nonce: &'a str,
            targets: Vec<&'a TargetSpec>,
        }
        fn no_nonce(nonce: &&str) -> bool {
            nonce.is_empty()
        }
        serde_json::to_string(&Shared {
            nonce,
            targets: self.targets.iter().filter(|t| !t.carries_secrets()).collect(),
        })
    }
}

impl TargetSpec {
    /// Whether it carries request headers or a CA bundle: it stays with
    /// the controller ([`controller_only`]).
    pub fn carries_secrets(&self) -> bool {
        !self.headers.is_empty() || self.ca_pem.is_some()
    }

    /// The spec of `address` under `check`.
    pub fn of(address: IpAddr, check: &Check) -> TargetSpec {
        TargetSpec {
            id: target_id(address, check),
            address,
            protocol: check.spec.protocol,
            port: check.spec.port,
            path: check.spec.path.clone(),
            host: check.spec.host.clone(),
            server_name: Some(check.spec.server_name.clone()).filter(|n| *n != check.spec.host),
            statuses: check.spec.statuses.clone(),
            expected_body: check.spec.expected_body.clone(),
            headers: check.spec.headers.clone(),
            timeout_ms: u64::try_from(check.spec.timeout.as_millis()).unwrap_or(u64::MAX).max(1),
            insecure: check.spec.insecure,
            ca_pem: check.spec.ca_pem.clone(),
            period_ms: u64::try_from(check.period.as_millis()).unwrap_or(u64::MAX).max(1),
            failure_threshold: check.failure_threshold,
            success_threshold: check.success_threshold,
        }
    }

    /// The check an agent runs: the controller's, without delays (those
    /// apply once, to the quorum's decision) or quorum.
    pub fn check(&self) -> Check {
        Check {
            spec: ProbeSpec {
                protocol: self.protocol,
                port: self.port,
                path: self.path.clone(),
                host: self.host.clone(),
                server_name: self.server_name.clone().unwrap_or_else(|| self.host.clone()),
                statuses: self.statuses.clone(),
                expected_body: self.expected_body.clone(),
                headers: self.headers.clone(),
                timeout: Duration::from_millis(self.timeout_ms.max(1)),
                insecure: self.insecure,
                ca_pem: self.ca_pem.clone(),
            },
            period: Duration::from_millis(self.period_ms.max(1)),
            failure_threshold: self.failure_threshold.max(1),
            success_threshold: self.success_threshold.max(1),
            failover_delay: Duration::ZERO,
            failback_delay: Duration::ZERO,
            quorum: Quorum::Majority,
        }
    }
}

/// An agent's report: what it sees of each target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportDoc {
    /// When the agent wrote it (RFC 3339, its clock). Rewritten at least
    /// every `periodSeconds` (the smallest of its targets'), changed or not.
    pub reported_at: String,
    /// The nonce of the target list the agent probes ([`TargetList::nonce`]),
    /// echoed: the controller takes a report only with its member's nonce.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    /// The agent's own source address for probes, for explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// By [`report_key`] of the [`target_id`].
    pub targets: BTreeMap<String, VoteDoc>,
}

/// One target in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoteDoc {
    /// The address probed (to tell an impaired agent: every address down).
    pub address: IpAddr,
    /// `Up`, `Down` or `Unknown` (after the thresholds).
    pub state: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// The last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// What one vantage point says of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vote {
    /// After the thresholds.
    pub state: State,
    /// Since when (RFC 3339).
    pub since: String,
    /// The last failure.
    pub last_error: Option<String>,
}

/// How far ahead of the controller's clock a report's `reportedAt` may be
/// (the clocks of two clusters differ a little). Further ahead, the report
/// is invalid: one dated in the future would never go stale, and would
/// keep voting after its agent stopped.
pub const MAX_CLOCK_AHEAD: Duration = Duration::from_secs(10);

/// An agent's report as the controller holds it.
#[derive(Debug, Clone)]
pub struct Report {
    /// When the agent says it wrote it.
    pub reported_at: jiff::Timestamp,
    /// When the controller received it (its own clock).
    pub received_at: jiff::Timestamp,
    /// The target list's nonce it echoes (empty: none).
    pub nonce: String,
    /// The agent's probe source address.
    pub source: Option<String>,
    /// By [`report_key`].
    pub votes: HashMap<String, Vote>,
    /// It sees every one of at least [`IMPAIRED_MIN_ADDRESSES`] addresses Down.
    pub impaired: bool,
}

impl Report {
    /// Reads an agent's report, received now.
    ///
    /// # Errors
    /// As [`Report::parse_received`].
    pub fn parse(json: &str) -> Result<Report, String> {
        Report::parse_received(json, jiff::Timestamp::now())
    }

    /// Reads an agent's report the controller received at `received_at`.
    ///
    /// # Errors
    /// Not JSON of a [`ReportDoc`], `reportedAt` is not RFC 3339, or it is
    /// more than [`MAX_CLOCK_AHEAD`] after `received_at`.
    pub fn parse_received(json: &str, received_at: jiff::Timestamp) -> Result<Report, String> {
        let doc: ReportDoc = serde_json::from_str(json).map_err(|e| format!("{REPORT_KEY}: {e}"))?;
        let reported_at: jiff::Timestamp = doc
            .reported_at
            .parse()
            .map_err(|e| format!("{REPORT_KEY}: reportedAt {:?}: {e}", doc.reported_at))?;
        let ahead = reported_at.duration_since(received_at);
        if ahead > jiff::SignedDuration::try_from(MAX_CLOCK_AHEAD).unwrap_or(jiff::SignedDuration::MAX) {
            return Err(format!(
                "{REPORT_KEY}: reportedAt {reported_at} is {:.0} s after it was received: a report from the future is not counted (at most {} s of clock difference)",
                ahead.as_secs_f64(),
                MAX_CLOCK_AHEAD.as_secs()
            ));
        }
        let mut addresses: Vec<(IpAddr, State)> = Vec::new();
        let votes: HashMap<String, Vote> = doc
            .targets
            .into_iter()
            .map(|(id, vote)| {
                let state = match vote.state.as_str() {
                    "Up" => State::Up,
                    "Down" => State::Down,
                    _ => State::Unknown,
                };
                (
                    id,
                    (
                        vote.address,
                        Vote {
                            state,
                            since: vote.since,
                            last_error: vote.last_error,
                        },
                    ),
                )
            })
            .collect::<HashMap<String, (IpAddr, Vote)>>()
            .into_iter()
            .map(|(id, (address, vote))| {
                addresses.push((address, vote.state));
                (id, vote)
            })
            .collect();
        let impaired = is_impaired(addresses.into_iter());
        Ok(Report {
            reported_at,
            received_at,
            nonce: doc.nonce,
            source: doc.source,
            votes,
            impaired,
        })
    }

    /// When it was written, as far as the controller can tell: the
    /// earlier of `reportedAt` and its receipt, so neither an agent's
    /// clock ahead nor an old report read again after a restart makes it
    /// look newer than it is.
    fn written(&self) -> jiff::Timestamp {
        self.reported_at.min(self.received_at)
    }

    /// Whether it counts for a check of `period` at `now`: written within
    /// 2 × `period` ([`Report::written`]).
    pub fn is_fresh(&self, period: Duration, now: jiff::Timestamp) -> bool {
        let age = now.duration_since(self.written());
        age <= jiff::SignedDuration::try_from(period * 2).unwrap_or(jiff::SignedDuration::MAX)
    }

    /// Seconds since it was written at `now` (0 for a clock ahead).
    pub fn age(&self, now: jiff::Timestamp) -> f64 {
        now.duration_since(self.written()).as_secs_f64().max(0.0)
    }
}

/// A new nonce: 16 octets from the system's random source, in hex.
///
/// # Errors
/// The system's random source failed.
pub fn new_nonce() -> Result<String, String> {
    let mut octets = [0u8; 16];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut octets)
        .map_err(|e| format!("the system's random source: {e:?}"))?;
    Ok(octets.iter().map(|b| format!("{b:02x}")).collect())
}

/// Earlier nonces kept per member, to tell a stale report from a foreign one.
const RETIRED_KEPT: usize = 8;

/// The nonce of the target list each member was given, and the judge of a
/// report's nonce: a report is taken only with its own member's nonce of
/// the list it holds, of the one being written to it, or of the list
/// before until its agent has echoed the newer one (a report in flight
/// when the list changed, or the last one a restarted controller reads
/// back). Any other nonce is refused ([`NonceRefusal`]).
#[derive(Debug, Default)]
pub struct Nonces {
    members: std::sync::Mutex<HashMap<String, MemberNonces>>,
}

#[derive(Debug, Default)]
struct MemberNonces {
    /// The nonce of the list the member holds (written, or found there).
    current: Option<String>,
    /// The nonce of a list being written (taken already: the agent may
    /// answer before the write returns).
    pending: Option<String>,
    /// The nonce of the list before `current`, taken until the agent
    /// echoes `current`.
    previous: Option<String>,
    /// Earlier nonces, newest last.
    retired: std::collections::VecDeque<String>,
}

impl MemberNonces {
    fn retire(&mut self, nonce: String) {
        if !self.retired.contains(&nonce) {
            self.retired.push_back(nonce);
            while self.retired.len() > RETIRED_KEPT {
                self.retired.pop_front();
            }
        }
    }

    fn takes(&self, nonce: &str) -> bool {
        [&self.current, &self.pending, &self.previous]
            .into_iter()
            .any(|n| n.as_deref() == Some(nonce))
    }

    fn knows(&self, nonce: &str) -> bool {
        self.takes(nonce) || self.retired.iter().any(|n| n == nonce)
    }
}

/// Why a report was not taken ([`Nonces::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NonceRefusal {
    /// It echoes no nonce: an agent older than this controller, or not an
    /// agent's report.
    Missing,
    /// An earlier target list's nonce of the same member, after its
    /// agent echoed a newer one.
    Stale,
    /// Another member's nonce (named): copied from there.
    OtherMember(String),
    /// A nonce this controller never gave: an earlier controller's, or
    /// made up.
    Unknown,
}

impl NonceRefusal {
    /// The metric label: `missing`, `stale`, `other-member`, `unknown`.
    pub fn reason(&self) -> &'static str {
        match self {
            NonceRefusal::Missing => "missing",
            NonceRefusal::Stale => "stale",
            NonceRefusal::OtherMember(_) => "other-member",
            NonceRefusal::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for NonceRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NonceRefusal::Missing => f.write_str(
                "the report echoes no target-list nonce (an agent older than the controller, or not written by an agent)",
            ),
            NonceRefusal::Stale => f.write_str("the report echoes the nonce of an older target list"),
            NonceRefusal::OtherMember(other) => {
                write!(f, "the report echoes the nonce of member {other}'s target list (copied from there)")
            }
            NonceRefusal::Unknown => {
                f.write_str("the report echoes a nonce this controller never wrote (an earlier controller's, or made up)")
            }
        }
    }
}

impl Nonces {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, MemberNonces>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new nonce for `member`'s next target list, taken from now on
    /// (with the one it holds).
    ///
    /// # Errors
    /// The system's random source failed ([`new_nonce`]).
    pub fn issue(&self, member: &str) -> Result<String, String> {
        let nonce = new_nonce()?;
        let mut members = self.lock();
        let entry = members.entry(member.to_owned()).or_default();
        if let Some(before) = entry.pending.replace(nonce.clone()) {
            entry.retire(before);
        }
        Ok(nonce)
    }

    /// `member` now holds the list of `nonce`: the one it held before is
    /// taken until its agent echoes `nonce`, then stale.
    pub fn written(&self, member: &str, nonce: &str) {
        let mut members = self.lock();
        let entry = members.entry(member.to_owned()).or_default();
        if entry.pending.as_deref() == Some(nonce) {
            entry.pending = None;
        }
        if entry.current.as_deref() != Some(nonce) {
            let before = entry.current.replace(nonce.to_owned());
            if let Some(older) = std::mem::replace(&mut entry.previous, before) {
                entry.retire(older);
            }
        }
    }

    /// `member` was found holding a list of `nonce` (read back when its
    /// watch starts: a restarted controller takes the agent's last report,
    /// and those until the agent echoes the list it writes); ignored once
    /// this controller wrote one.
    pub fn found(&self, member: &str, nonce: &str) {
        if nonce.is_empty() {
            return;
        }
        let mut members = self.lock();
        let entry = members.entry(member.to_owned()).or_default();
        if entry.current.is_none() && !entry.knows(nonce) {
            entry.current = Some(nonce.to_owned());
        }
    }

    /// Forgets `member` (it left the federation).
    pub fn forget(&self, member: &str) {
        self.lock().remove(member);
    }

    /// Whether a report of `member` echoing `nonce` is taken. Once the
    /// agent echoes the list the member holds, the list before is stale.
    ///
    /// # Errors
    /// Why not.
    pub fn check(&self, member: &str, nonce: &str) -> Result<(), NonceRefusal> {
        if nonce.is_empty() {
            return Err(NonceRefusal::Missing);
        }
        let mut members = self.lock();
        if let Some(own) = members.get_mut(member).filter(|m| m.takes(nonce)) {
            if own.current.as_deref() == Some(nonce) {
                if let Some(older) = own.previous.take() {
                    own.retire(older);
                }
            }
            return Ok(());
        }
        let own = members.get(member);
        if own.is_some_and(|m| m.knows(nonce)) {
            return Err(NonceRefusal::Stale);
        }
        match members.iter().find(|(name, m)| *name != member && m.knows(nonce)) {
            Some((other, _)) => Err(NonceRefusal::OtherMember(other.clone())),
            None => Err(NonceRefusal::Unknown),
        }
    }
}

/// Whether `states` (address, state) show a vantage point that lost its
/// own network: every one of at least [`IMPAIRED_MIN_ADDRESSES`] distinct
/// addresses Down.
pub fn is_impaired(states: impl Iterator<Item = (IpAddr, State)>) -> bool {
    let mut addresses = std::collections::HashSet::new();
    for (address, state) in states {
        if state != State::Down {
            return false;
        }
        addresses.insert(address);
    }
    addresses.len() >= IMPAIRED_MIN_ADDRESSES
}

/// Why a vantage point is or is not counted for one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Its vote counts.
    Counted,
    /// Its report is older than 2 × `periodSeconds`.
    Silent,
    /// It sees every address Down: its own network, not the targets.
    Impaired,
    /// It has not probed this target yet (or does not list it).
    NotProbed,
}

impl Standing {
    /// `counted`, `silent`, `impaired`, `not probed yet`.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Counted => "counted",
            Standing::Silent => "silent (no report within 2 × periodSeconds)",
            Standing::Impaired => "impaired (sees every address down: its own network)",
            Standing::NotProbed => "not probed yet",
        }
    }
}

/// One vantage point's say on one target, with its standing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ballot {
    /// `controller` or the member the agent runs in.
    pub vantage_point: String,
    /// What it says (Unknown when it has not probed).
    pub vote: Vote,
    /// Whether it counts.
    pub standing: Standing,
}

/// The quorum's decision on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The state the quorum decided (before failover/failback delays).
    pub state: State,
    /// Vantage points counted, and how many of them say Down.
    pub counted: usize,
    /// Of `counted`, saying Down.
    pub down: usize,
}

/// Whether `down` Down votes may take an address out at all, whatever the
/// quorum: `own_down` (the controller's own probes, counted, say Down) or
/// at least two vantage points say so. One agent alone never does: its
/// report is a ConfigMap in its member, which whoever can write there
/// could rewrite. The controller alone (no agent counted) still decides
/// as before vantage points existed.
pub fn corroborated(down: usize, own_down: bool) -> bool {
    own_down || down >= 2
}

/// Decides a target from its `ballots` (the controller's first, as
/// [`Ballot`]s are listed) under `quorum`.
///
/// * No ballot counted: the controller's own vote (`own`) alone, as
///   before vantage points (it may be impaired: with nobody else, it is
///   still all there is).
/// * Else Down when `quorum.is_down(down, counted)` and the Down is
///   [`corroborated`]; otherwise Up.
pub fn decide(own: State, ballots: &[Ballot], quorum: Quorum) -> Decision {
    let counted: Vec<&Ballot> = ballots
        .iter()
        .filter(|b| b.standing == Standing::Counted && b.vote.state != State::Unknown)
        .collect();
    if counted.is_empty() {
        return Decision {
            state: own,
            counted: 0,
            down: usize::from(own == State::Down),
        };
    }
    let down = counted.iter().filter(|b| b.vote.state == State::Down).count();
    let own_down = ballots.first().is_some_and(|b| {
        b.vantage_point == CONTROLLER && b.standing == Standing::Counted && b.vote.state == State::Down
    });
    let state = if quorum.is_down(down, counted.len()) && corroborated(down, own_down) {
        State::Down
    } else {
        State::Up
    };
    Decision {
        state,
        counted: counted.len(),
        down,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ballot(name: &str, state: State, standing: Standing) -> Ballot {
        Ballot {
            vantage_point: name.into(),
            vote: Vote {
                state,
                since: String::new(),
                last_error: None,
            },
            standing,
        }
    }

    #[test]
    fn one_vantage_point_cut_off_stays_and_a_majority_takes_it_out() {
        use Standing::Counted;
        let one_cut = [
            ballot(CONTROLLER, State::Down, Counted),
            ballot("us-east-1", State::Up, Counted),
            ballot("eu-west-1", State::Up, Counted),
        ];
        assert_eq!(decide(State::Down, &one_cut, Quorum::Majority).state, State::Up);
        assert_eq!(decide(State::Down, &one_cut, Quorum::AnyOne).state, State::Down);
        assert_eq!(decide(State::Down, &one_cut, Quorum::Unanimous).state, State::Up);
        let two_cut = [
            ballot(CONTROLLER, State::Down, Counted),
            ballot("us-east-1", State::Down, Counted),
            ballot("eu-west-1", State::Up, Counted),
        ];
        let decision = decide(State::Down, &two_cut, Quorum::Majority);
        assert_eq!((decision.state, decision.counted, decision.down), (State::Down, 3, 2));
        assert_eq!(decide(State::Down, &two_cut, Quorum::AtLeast(3)).state, State::Up);
    }

    /// Issue #57 item 3: a report rewritten in one member must not take
    /// out a load balancer the controller and the other members reach,
    /// whatever the quorum (under `AnyOne`, formerly `All`, one vote was
    /// enough).
    #[test]
    fn one_agent_alone_never_takes_an_address_out() {
        use Standing::Counted;
        let one_agent = [
            ballot(CONTROLLER, State::Up, Counted),
            ballot("us-east-1", State::Down, Counted),
            ballot("us-west-2", State::Up, Counted),
            ballot("eu-west-1", State::Up, Counted),
        ];
        for quorum in [Quorum::AnyOne, Quorum::AtLeast(1), Quorum::Majority, Quorum::Unanimous] {
            let decision = decide(State::Up, &one_agent, quorum);
            assert_eq!(
                (decision.state, decision.counted, decision.down),
                (State::Up, 4, 1),
                "{quorum}"
            );
        }
        // Nobody else counted (the controller impaired or not probed yet,
        // the others silent): one agent is still not enough.
        let alone = [
            ballot(CONTROLLER, State::Down, Standing::Impaired),
            ballot("us-east-1", State::Down, Counted),
            ballot("us-west-2", State::Up, Standing::Silent),
        ];
        for quorum in [Quorum::AnyOne, Quorum::Unanimous, Quorum::AtLeast(1)] {
            assert_eq!(decide(State::Down, &alone, quorum).state, State::Up, "{quorum}");
        }
        // Corroborated, it counts as the quorum says: the controller's own
        // probes agreeing, or a second agent.
        let with_controller = [
            ballot(CONTROLLER, State::Down, Counted),
            ballot("us-east-1", State::Down, Counted),
            ballot("us-west-2", State::Up, Counted),
        ];
        assert_eq!(decide(State::Down, &with_controller, Quorum::AnyOne).state, State::Down);
        let two_agents = [
            ballot(CONTROLLER, State::Up, Counted),
            ballot("us-east-1", State::Down, Counted),
            ballot("us-west-2", State::Down, Counted),
        ];
        assert_eq!(decide(State::Up, &two_agents, Quorum::AnyOne).state, State::Down);
        assert_eq!(decide(State::Up, &two_agents, Quorum::Majority).state, State::Down);
        assert_eq!(decide(State::Up, &two_agents, Quorum::Unanimous).state, State::Up);
        assert!(corroborated(1, true) && corroborated(2, false) && !corroborated(1, false));
    }

    /// Issue #57 item 3: a report is bound to the target list its member
    /// was given: another member's nonce, an older list's, none or one
    /// never given are refused, each for its reason.
    #[test]
    fn reports_are_taken_only_with_their_members_nonce() -> Result<(), String> {
        let nonces = Nonces::default();
        let east = nonces.issue("us-east-1")?;
        let west = nonces.issue("us-west-2")?;
        assert_eq!(east.len(), 32);
        assert_ne!(east, west);
        // Taken from the moment it is issued (the agent may answer before
        // the write returns).
        assert_eq!(nonces.check("us-east-1", &east), Ok(()));
        nonces.written("us-east-1", &east);
        nonces.written("us-west-2", &west);
        assert_eq!(nonces.check("us-east-1", &east), Ok(()));
        assert_eq!(
            nonces.check("us-east-1", &west),
            Err(NonceRefusal::OtherMember("us-west-2".into()))
        );
        assert_eq!(nonces.check("us-east-1", ""), Err(NonceRefusal::Missing));
        assert_eq!(nonces.check("us-east-1", "0123"), Err(NonceRefusal::Unknown));
        // A new list: the old nonce is taken (reports in flight) until the
        // agent echoes the new one, then it is stale.
        let newer = nonces.issue("us-east-1")?;
        assert_eq!(nonces.check("us-east-1", &east), Ok(()));
        nonces.written("us-east-1", &newer);
        assert_eq!(nonces.check("us-east-1", &east), Ok(()));
        assert_eq!(nonces.check("us-east-1", &newer), Ok(()));
        assert_eq!(nonces.check("us-east-1", &east), Err(NonceRefusal::Stale));
        assert_eq!(nonces.check("us-east-1", &newer), Ok(()));
        // A restarted controller takes the nonce a member holds until the
        // agent echoes its own; once written, a nonce found is ignored.
        let restarted = Nonces::default();
        restarted.found("us-east-1", &newer);
        assert_eq!(restarted.check("us-east-1", &newer), Ok(()));
        let own = restarted.issue("us-east-1")?;
        restarted.written("us-east-1", &own);
        assert_eq!(restarted.check("us-east-1", &newer), Ok(()), "the agent's last report");
        assert_eq!(restarted.check("us-east-1", &own), Ok(()));
        assert_eq!(restarted.check("us-east-1", &newer), Err(NonceRefusal::Stale));
        restarted.found("us-east-1", &east);
        assert_eq!(restarted.check("us-east-1", &east), Err(NonceRefusal::Unknown));
        restarted.forget("us-east-1");
        assert_eq!(restarted.check("us-east-1", &own), Err(NonceRefusal::Unknown));
        for refusal in [
            NonceRefusal::Missing,
            NonceRefusal::Stale,
            NonceRefusal::OtherMember("x".into()),
            NonceRefusal::Unknown,
        ] {
            assert!(!refusal.to_string().is_empty() && !refusal.reason().is_empty());
        }
        Ok(())
    }

    #[test]
    fn the_nonce_travels_in_the_list_and_back_in_the_report() -> Result<(), Box<dyn std::error::Error>> {
        let list = TargetList {
            nonce: String::new(),
            targets: Vec::new(),
        };
        assert_eq!(list.json_with_nonce("")?, r#"{"targets":[]}"#);
        let json = list.json_with_nonce("abc")?;
        let back: TargetList = serde_json::from_str(&json)?;
        assert_eq!(back.nonce, "abc");
        let report = r#"{"reportedAt":"2026-11-25T20:00:00Z","nonce":"abc","targets":{}}"#;
        assert_eq!(Report::parse(report)?.nonce, "abc");
        let older = r#"{"reportedAt":"2026-11-25T20:00:00Z","targets":{}}"#;
        assert_eq!(Report::parse(older)?.nonce, "");
        Ok(())
    }

    #[test]
    fn silent_and_impaired_vantage_points_are_not_counted() {
        let ballots = [
            ballot(CONTROLLER, State::Up, Standing::Counted),
            ballot("us-east-1", State::Down, Standing::Silent),
            ballot("eu-west-1", State::Down, Standing::Impaired),
        ];
        let decision = decide(State::Up, &ballots, Quorum::Majority);
        assert_eq!((decision.state, decision.counted), (State::Up, 1));
    }

    #[test]
    fn without_agents_the_controller_decides_as_before() {
        for own in [State::Unknown, State::Up, State::Down] {
            let ballots = [ballot(CONTROLLER, own, Standing::Counted)];
            for quorum in [Quorum::Majority, Quorum::Unanimous, Quorum::AnyOne, Quorum::AtLeast(2)] {
                assert_eq!(decide(own, &ballots, quorum).state, own, "{own:?} {quorum}");
            }
        }
        // The controller impaired and nobody else: still its own word.
        let ballots = [ballot(CONTROLLER, State::Down, Standing::Impaired)];
        assert_eq!(decide(State::Down, &ballots, Quorum::Majority).state, State::Down);
    }

    #[test]
    fn reports_parse_and_tell_an_impaired_agent() -> Result<(), Box<dyn std::error::Error>> {
        let json = r#"{"reportedAt":"2026-11-25T20:00:00Z","targets":{
            "k1":{"address":"127.0.10.1","state":"Down","since":"2026-11-25T19:59:00Z","lastError":"refused"},
            "k2":{"address":"127.0.10.2","state":"Down","since":"2026-11-25T19:59:00Z"}}}"#;
        let report = Report::parse(json)?;
        assert!(report.impaired, "every address down");
        assert_eq!(report.votes.len(), 2);
        let now: jiff::Timestamp = "2026-11-25T20:00:01.5Z".parse()?;
        assert!(report.is_fresh(Duration::from_secs(1), now));
        assert!(!report.is_fresh(Duration::from_secs(1), now + jiff::SignedDuration::from_secs(1)));
        let one_down = r#"{"reportedAt":"2026-11-25T20:00:00Z","targets":{
            "k1":{"address":"127.0.10.1","state":"Down","since":"x"},
            "k2":{"address":"127.0.10.2","state":"Up","since":"x"}}}"#;
        assert!(!Report::parse(one_down)?.impaired);
        assert!(Report::parse("{").err().unwrap_or_default().contains(REPORT_KEY));
        // A report dated in the future is refused; a little ahead is a
        // clock difference, aged from its receipt.
        let received: jiff::Timestamp = "2026-11-25T20:00:00Z".parse().unwrap();
        let future = r#"{"reportedAt":"2099-01-01T00:00:00Z","targets":{}}"#;
        let refused = Report::parse_received(future, received).unwrap_err();
        assert!(refused.contains("from the future"), "{refused}");
        let ahead = Report::parse_received(r#"{"reportedAt":"2026-11-25T20:00:05Z","targets":{}}"#, received)?;
        let later = received + jiff::SignedDuration::from_secs(3);
        assert!(ahead.is_fresh(Duration::from_secs(1), later - jiff::SignedDuration::from_secs(1)));
        assert!(!ahead.is_fresh(Duration::from_secs(1), later), "aged from its receipt");
        // An old report read again (a controller restart) is as old as it says.
        let old = Report::parse_received(r#"{"reportedAt":"2026-11-25T19:00:00Z","targets":{}}"#, received)?;
        assert!(!old.is_fresh(Duration::from_secs(10), received));
        assert!(Report::parse(r#"{"reportedAt":"yesterday","targets":{}}"#)
            .err()
            .unwrap_or_default()
            .contains("reportedAt"));
        Ok(())
    }

    #[test]
    fn targets_with_headers_or_a_ca_bundle_stay_out_of_the_members_config_maps(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let plain = Check {
            spec: ProbeSpec {
                protocol: ProbeProtocol::Https,
                port: 8443,
                path: "/healthz".into(),
                host: "www.example.com".into(),
                server_name: "www.example.com".into(),
                statuses: vec![(200, 399)],
                expected_body: Some("OK".into()),
                headers: Vec::new(),
                timeout: Duration::from_secs(2),
                insecure: false,
                ca_pem: None,
            },
            period: Duration::from_secs(5),
            failure_threshold: 3,
            success_threshold: 2,
            failover_delay: Duration::ZERO,
            failback_delay: Duration::ZERO,
            quorum: Quorum::Majority,
        };
        let mut with_token = plain.clone();
        with_token.spec.headers = vec![("Authorization".into(), "Bearer tenant-token-s3cret".into())];
        let mut with_ca = plain.clone();
        with_ca.spec.ca_pem =
            Some("-----BEGIN CERTIFICATE-----\nTENANT-PRIVATE-CA\n-----END CERTIFICATE-----\n".into());
        assert!(!controller_only(&plain) && controller_only(&with_token) && controller_only(&with_ca));
        let list = TargetList {
            nonce: "n0nce".into(),
            targets: vec![
                TargetSpec::of("127.0.10.1".parse()?, &plain),
                TargetSpec::of("127.0.10.2".parse()?, &with_token),
                TargetSpec::of("127.0.10.3".parse()?, &with_ca),
            ],
        };
        let data = list.config_map_data()?;
        assert_eq!(data.keys().collect::<Vec<_>>(), [TARGETS_KEY]);
        let json = &data[TARGETS_KEY];
        for secret in [
            "tenant-token-s3cret",
            "Authorization",
            "TENANT-PRIVATE-CA",
            "127.0.10.2",
            "127.0.10.3",
        ] {
            assert!(!json.contains(secret), "{secret} in the members' ConfigMap: {json}");
        }
        let back: TargetList = serde_json::from_str(json)?;
        assert_eq!(back.targets, [TargetSpec::of("127.0.10.1".parse()?, &plain)]);
        assert_eq!(back.nonce, "n0nce");
        Ok(())
    }

    #[test]
    fn target_specs_round_trip_to_the_agents_check() -> Result<(), Box<dyn std::error::Error>> {
        let check = Check {
            spec: ProbeSpec {
                protocol: ProbeProtocol::Http,
                port: 8080,
                path: "/healthz".into(),
                host: "www.example.com".into(),
                server_name: "www.example.com".into(),
                statuses: vec![(200, 399)],
                expected_body: None,
                headers: Vec::new(),
                timeout: Duration::from_secs(2),
                insecure: false,
                ca_pem: None,
            },
            period: Duration::from_secs(5),
            failure_threshold: 3,
            success_threshold: 2,
            failover_delay: Duration::from_secs(9),
            failback_delay: Duration::from_secs(9),
            quorum: Quorum::AnyOne,
        };
        let address: IpAddr = "127.0.10.1".parse()?;
        let spec = TargetSpec::of(address, &check);
        assert_eq!(spec.id, "HTTP 127.0.10.1 8080 /healthz www.example.com 5000ms");
        // The newer settings make another target, and reach the agent.
        let mut path = check.clone();
        path.spec.server_name = "origin.example.com".into();
        path.spec.expected_body = Some("OK".into());
        path.spec.headers = vec![("X-Tenant".into(), "a".into())];
        let with_path = TargetSpec::of(address, &path);
        assert!(
            with_path
                .id
                .starts_with("HTTP 127.0.10.1 8080 /healthz www.example.com 5000ms sni origin.example.com request "),
            "{}",
            with_path.id
        );
        let back: TargetSpec = serde_json::from_str(&serde_json::to_string(&with_path)?)?;
        assert_eq!(back.check().spec, path.spec);
        let json = serde_json::to_string(&TargetList {
            nonce: String::new(),
            targets: vec![spec.clone()],
        })?;
        let back: TargetList = serde_json::from_str(&json)?;
        let agent = back.targets[0].check();
        assert_eq!(agent.spec, check.spec);
        assert_eq!(
            (agent.failover_delay, agent.failback_delay),
            (Duration::ZERO, Duration::ZERO)
        );
        assert_eq!(target_id(address, &agent), spec.id);
        assert_eq!(report_key(&spec.id).len(), 16);
        assert_ne!(
            report_key(&spec.id),
            report_key("HTTP 127.0.10.2 8080 /healthz www.example.com 5000ms")
        );
        Ok(())
    }
}
