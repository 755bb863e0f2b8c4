//! The prober's state: every target (address, check) with its own probes'
//! count, the quorum's last decision and the failover/failback damping,
//! and the shared inner state the scheduler, the decisions and the
//! [`super::DataPlane`] handle all work on.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};

use super::check::{Check, State};
use super::hysteresis;
use super::metrics::ProbeMetrics;
use super::policy::Allowance;
use super::probe::{self, ProbeTls};
use super::vantage::{Decision, Report};

pub(super) type TargetKey = (IpAddr, Check);

/// A target's number: the schedule and running probes refer to a target by
/// it, so a probe clones and hashes no strings (the check's path and host).
/// Never reused, so a slot of a removed target can't fire a new one.
pub(super) type TargetId = u64;

pub(super) struct Target<K> {
    pub(super) key: Arc<TargetKey>,
    /// [`super::vantage::report_key`] of the key's [`super::vantage::target_id`]: how
    /// agents' reports name it.
    pub(super) report_key: Arc<str>,
    pub(super) prepared: Arc<probe::Prepared>,
    /// What the controller's own probes say (after the thresholds).
    pub(super) own: State,
    /// When `own` last changed (RFC 3339).
    pub(super) own_since: String,
    /// The quorum's last decision.
    pub(super) decision: Decision,
    /// A hash of every vantage point's state and standing on this target
    /// at the last decision: when it changes the users are told, so
    /// status shows each vantage point's view (see [`super::decision::ballots_hash`]).
    pub(super) ballots_hash: u64,
    /// `damped.observed` is the quorum's decision; `effective` what
    /// answers follow.
    pub(super) damped: hysteresis::Damped,
    /// When `damped.observed` last changed (RFC 3339).
    pub(super) observed_since: String,
    /// When a pending change takes effect if it holds (RFC 3339).
    pub(super) takes_effect_at: String,
    /// When `damped.effective` last changed (RFC 3339).
    pub(super) since: String,
    pub(super) last_error: Option<String>,
    pub(super) successes: u32,
    pub(super) failures: u32,
    pub(super) next_due: Instant,
    pub(super) running: bool,
    pub(super) users: BTreeSet<K>,
    /// The HTTP(S) connection kept between probes (taken while one runs).
    pub(super) kept: Option<probe::KeptConnection>,
    /// Why the address is not probed unless a user's allowance covers it
    /// ([`super::policy::classify`]'s message; None: any address may be).
    pub(super) refusal: Option<Arc<str>>,
    /// Users whose allowance covers the address.
    pub(super) allowed_by: BTreeSet<K>,
    /// Not probed: a `refusal` and no user allowing it. Down at once, with
    /// the refusal as its error; kept from the agents.
    pub(super) refused: bool,
}

impl<K: Ord> Target<K> {
    /// Whether it is refused by its users' allowances as they are now.
    pub(super) fn refused_now(&self) -> bool {
        self.refusal.is_some() && self.allowed_by.is_empty()
    }
}

/// What one user wants probed, and what it may have probed.
#[derive(Debug, PartialEq)]
pub(super) struct Wanted {
    pub(super) targets: BTreeSet<TargetKey>,
    pub(super) allowance: Allowance,
}

/// Every target, by id and by (address, check).
pub(super) struct Targets<K> {
    pub(super) ids: HashMap<Arc<TargetKey>, TargetId>,
    pub(super) by_id: HashMap<TargetId, Target<K>>,
    pub(super) next_id: TargetId,
}

impl<K> Targets<K> {
    pub(super) fn get(&self, key: &TargetKey) -> Option<&Target<K>> {
        self.ids.get(key).and_then(|id| self.by_id.get(id))
    }
}

pub(super) struct Inner<K> {
    pub(super) targets: Mutex<Targets<K>>,
    /// When each target is due next, earliest first (stale entries of
    /// removed or rescheduled targets are skipped when popped), so a wake-up
    /// costs O(log n) per due probe instead of a scan of every target.
    pub(super) schedule: Mutex<BinaryHeap<Reverse<(Instant, TargetId)>>>,
    /// What each user (record) wants, to replace and forget it.
    pub(super) wanted: Mutex<BTreeMap<K, Wanted>>,
    pub(super) wake: Arc<Notify>,
    pub(super) permits: Arc<Semaphore>,
    pub(super) in_flight: std::sync::atomic::AtomicUsize,
    pub(super) max_in_flight: std::sync::atomic::AtomicUsize,
    pub(super) tls: ProbeTls,
    /// The source address probes are sent from (None: the kernel's choice).
    pub(super) source: Option<IpAddr>,
    /// This host's own addresses ([`super::policy::host_addresses`]),
    /// refused as probe targets unless allowed.
    pub(super) own_addresses: Vec<IpAddr>,
    /// The agents' last reports, by vantage point (member) name.
    pub(super) reports: Mutex<BTreeMap<String, Report>>,
    /// The controller's own probes see every address Down (its own
    /// network, see [`super::vantage`]); refreshed by the scheduler.
    pub(super) own_impaired: std::sync::atomic::AtomicBool,
    pub(super) notify: Box<dyn Fn(K) + Send + Sync>,
    pub(super) metrics: ProbeMetrics,
}

/// `now` plus `delay`, RFC 3339 to the second.
pub(super) fn rfc3339_after(now: jiff::Timestamp, delay: Duration) -> String {
    let later = jiff::SignedDuration::try_from(delay)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .unwrap_or(now);
    later.round(jiff::Unit::Second).unwrap_or(later).to_string()
}

pub(super) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .to_string()
}

/// Where in its period a target's probes fall: a stable hash of the target,
/// so probes of many addresses spread evenly over the period.
pub(super) fn offset_in_period(key: &TargetKey) -> Duration {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    let period_ms = u64::try_from(key.1.period.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(hasher.finish() % period_ms)
}
