//! Data-plane health: probes of every published load balancer address
//! (`spec.healthCheck` of ServiceDNSRecord and IngressDNSRecord).
//!
//! Owns the probe targets, their schedule and their Up/Down state; calls
//! nothing of the rest of the controller but the `notify` callback it is
//! given, which the record reconcilers use to requeue a record whose
//! addresses changed state.
//!
//! * A target is (address, check); records that share one share its probes.
//! * Each target is probed every `periodSeconds`, its first probe placed at
//!   a hash-spread offset inside the period, so 10,000 addresses do not fire
//!   at once; at most `concurrency` probes run at a time.
//! * `failureThreshold` consecutive failures turn an address Down,
//!   `successThreshold` consecutive successes turn it Up again (Kubernetes
//!   probe semantics); a new address is Unknown until its first result and
//!   counts as passing meanwhile (no flap at start-up).
//! * Vantage points ([`vantage`]): agents in the members probe the same
//!   addresses and report; an address is Down when `quorum` of the vantage
//!   points counted say so. With no agent the controller alone decides.
//! * `failoverDelaySeconds`/`failbackDelaySeconds`: a change of that state
//!   takes effect (is reported, notifies the users) only after it held that
//!   long ([`hysteresis`]).

pub mod agent_reports;
pub mod hysteresis;
pub mod probe;
pub mod vantage;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::Quorum;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::sync::{Notify, Semaphore};

pub use probe::{ProbeSpec, ProbeTls};
use vantage::{Ballot, Decision, Report, Standing, Vote};

/// A check as a record asks for it: what to probe and how often.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Check {
    /// What one probe does.
    pub spec: ProbeSpec,
    /// Between two probes of one address.
    pub period: Duration,
    /// Consecutive failures that make an address Down.
    pub failure_threshold: u32,
    /// Consecutive successes that make a Down address Up.
    pub success_threshold: u32,
    /// How long Down must hold before it takes effect (zero: at once).
    pub failover_delay: Duration,
    /// How long Up must hold after Down before it takes effect (zero: at once).
    pub failback_delay: Duration,
    /// How many vantage points must say Down ([`vantage`]).
    pub quorum: Quorum,
}

/// The state of one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Not probed yet: counts as passing.
    Unknown,
    /// Passing.
    Up,
    /// Failed `failureThreshold` times in a row.
    Down,
}

impl State {
    /// `Up`, `Down`, `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unknown => "Unknown",
            State::Up => "Up",
            State::Down => "Down",
        }
    }
}

/// What is known of one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressState {
    /// Current (effective) state: what answers follow.
    pub state: State,
    /// When it entered that state (RFC 3339).
    pub since: String,
    /// The last failure, if the last probe failed.
    pub last_error: Option<String>,
    /// What the probes say while it waits for the failover or failback
    /// delay: that state, since when and when it takes effect if it holds
    /// (RFC 3339; at the first probe after that, so up to one
    /// `periodSeconds` later).
    pub pending: Option<(State, String, String)>,
    /// What each vantage point says (the controller first, then the agents
    /// by name); only the controller when no agent reports.
    pub vantage_points: Vec<Ballot>,
    /// The quorum's decision (before the delays) and the quorum asked for.
    pub decision: Decision,
    /// The check's quorum.
    pub quorum: Quorum,
}

type TargetKey = (IpAddr, Check);

/// A target's number: the schedule and running probes refer to a target by
/// it, so a probe clones and hashes no strings (the check's path and host).
/// Never reused, so a slot of a removed target can't fire a new one.
type TargetId = u64;

struct Target<K> {
    key: Arc<TargetKey>,
    /// [`vantage::report_key`] of the key's [`vantage::target_id`]: how
    /// agents' reports name it.
    report_key: Arc<str>,
    prepared: Arc<probe::Prepared>,
    /// What the controller's own probes say (after the thresholds).
    own: State,
    /// When `own` last changed (RFC 3339).
    own_since: String,
    /// The quorum's last decision.
    decision: Decision,
    /// A hash of every vantage point's state and standing on this target
    /// at the last decision: when it changes the users are told, so
    /// status shows each vantage point's view (see [`ballots_hash`]).
    ballots_hash: u64,
    /// `damped.observed` is the quorum's decision; `effective` what
    /// answers follow.
    damped: hysteresis::Damped,
    /// When `damped.observed` last changed (RFC 3339).
    observed_since: String,
    /// When a pending change takes effect if it holds (RFC 3339).
    takes_effect_at: String,
    /// When `damped.effective` last changed (RFC 3339).
    since: String,
    last_error: Option<String>,
    successes: u32,
    failures: u32,
    next_due: Instant,
    running: bool,
    users: BTreeSet<K>,
    /// The HTTP(S) connection kept between probes (taken while one runs).
    kept: Option<probe::KeptConnection>,
}

/// Every target, by id and by (address, check).
struct Targets<K> {
    ids: HashMap<Arc<TargetKey>, TargetId>,
    by_id: HashMap<TargetId, Target<K>>,
    next_id: TargetId,
}

impl<K> Targets<K> {
    fn get(&self, key: &TargetKey) -> Option<&Target<K>> {
        self.ids.get(key).and_then(|id| self.by_id.get(id))
    }
}

struct Inner<K> {
    targets: Mutex<Targets<K>>,
    /// When each target is due next, earliest first (stale entries of
    /// removed or rescheduled targets are skipped when popped), so a wake-up
    /// costs O(log n) per due probe instead of a scan of every target.
    schedule: Mutex<BinaryHeap<Reverse<(Instant, TargetId)>>>,
    /// What each user (record) wants, to replace and forget it.
    wanted: Mutex<BTreeMap<K, BTreeSet<TargetKey>>>,
    wake: Arc<Notify>,
    permits: Arc<Semaphore>,
    in_flight: std::sync::atomic::AtomicUsize,
    max_in_flight: std::sync::atomic::AtomicUsize,
    tls: ProbeTls,
    /// The source address probes are sent from (None: the kernel's choice).
    source: Option<IpAddr>,
    /// The agents' last reports, by vantage point (member) name.
    reports: Mutex<BTreeMap<String, Report>>,
    /// The controller's own probes see every address Down (its own
    /// network, see [`vantage`]); refreshed by the scheduler.
    own_impaired: std::sync::atomic::AtomicBool,
    notify: Box<dyn Fn(K) + Send + Sync>,
    metrics: ProbeMetrics,
}

/// The prober. Cheap to clone.
pub struct DataPlane<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for DataPlane<K> {
    fn clone(&self) -> Self {
        DataPlane {
            inner: self.inner.clone(),
        }
    }
}

impl<K> std::fmt::Debug for DataPlane<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataPlane").finish_non_exhaustive()
    }
}

/// `now` plus `delay`, RFC 3339 to the second.
fn rfc3339_after(now: jiff::Timestamp, delay: Duration) -> String {
    let later = jiff::SignedDuration::try_from(delay)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .unwrap_or(now);
    later.round(jiff::Unit::Second).unwrap_or(later).to_string()
}

fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .to_string()
}

/// Where in its period a target's probes fall: a stable hash of the target,
/// so probes of many addresses spread evenly over the period.
fn offset_in_period(key: &TargetKey) -> Duration {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    let period_ms = u64::try_from(key.1.period.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(hasher.finish() % period_ms)
}

impl<K> DataPlane<K>
where
    K: Clone + Ord + Send + Sync + std::fmt::Debug + 'static,
{
    /// Starts the scheduler and its probes on a thread of their own
    /// (`fedns-probe`, a single-threaded tokio runtime: thousands of short
    /// exchanges a second cost less without cross-thread wake-ups, and a
    /// slow reconcile never delays a probe). `notify` is called, on that
    /// thread, with every user of an address whose state changed; at most
    /// `concurrency` probes run at once. The thread ends when the last
    /// clone of the prober is dropped.
    ///
    /// # Errors
    /// The OS refuses the thread, or the runtime's I/O driver (epoll).
    pub fn start(
        tls: ProbeTls,
        concurrency: usize,
        metrics: ProbeMetrics,
        notify: impl Fn(K) + Send + Sync + 'static,
    ) -> std::io::Result<DataPlane<K>> {
        DataPlane::start_from(None, tls, concurrency, metrics, notify)
    }

    /// [`DataPlane::start`] with probes sent from `source` (a vantage
    /// point's own address; None: the kernel's choice).
    ///
    /// # Errors
    /// As [`DataPlane::start`].
    pub fn start_from(
        source: Option<IpAddr>,
        tls: ProbeTls,
        concurrency: usize,
        metrics: ProbeMetrics,
        notify: impl Fn(K) + Send + Sync + 'static,
    ) -> std::io::Result<DataPlane<K>> {
        let inner = Arc::new(Inner {
            targets: Mutex::new(Targets {
                ids: HashMap::new(),
                by_id: HashMap::new(),
                next_id: 0,
            }),
            schedule: Mutex::new(BinaryHeap::new()),
            wanted: Mutex::new(BTreeMap::new()),
            wake: Arc::new(Notify::new()),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            in_flight: Default::default(),
            max_in_flight: Default::default(),
            tls,
            source,
            reports: Mutex::new(BTreeMap::new()),
            own_impaired: Default::default(),
            notify: Box::new(notify),
            metrics,
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("fedns-probe".into())
            .spawn(move || runtime.block_on(schedule(weak)))?;
        Ok(DataPlane { inner })
    }

    /// Sets what `user` wants probed: (address, check) pairs. Targets no
    /// user wants any more are dropped.
    pub fn want(&self, user: &K, targets: impl IntoIterator<Item = (IpAddr, Check)>) {
        let new: BTreeSet<TargetKey> = targets.into_iter().collect();
        let old = {
            let mut wanted = self.inner.wanted.lock().unwrap_or_else(|e| e.into_inner());
            if wanted.get(user) == Some(&new) {
                return;
            }
            if new.is_empty() {
                wanted.remove(user).unwrap_or_default()
            } else {
                wanted.insert(user.clone(), new.clone()).unwrap_or_default()
            }
        };
        let now = Instant::now();
        let mut added = false;
        {
            let mut guard = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
            let targets = &mut *guard;
            for key in old.difference(&new) {
                let Some(&id) = targets.ids.get(key) else { continue };
                if let Some(target) = targets.by_id.get_mut(&id) {
                    target.users.remove(user);
                    if target.users.is_empty() {
                        targets.by_id.remove(&id);
                        targets.ids.remove(key);
                    }
                }
            }
            let mut schedule = self.inner.schedule.lock().unwrap_or_else(|e| e.into_inner());
            for key in &new {
                let id = match targets.ids.get(key) {
                    Some(&id) => id,
                    None => {
                        let id = targets.next_id;
                        targets.next_id += 1;
                        let key = Arc::new(key.clone());
                        targets.ids.insert(key.clone(), id);
                        targets.by_id.insert(
                            id,
                            Target {
                                prepared: Arc::new(probe::Prepared::new(&key.1.spec)),
                                report_key: vantage::report_key(&vantage::target_id(key.0, &key.1)).into(),
                                key,
                                own: State::Unknown,
                                own_since: now_rfc3339(),
                                decision: Decision {
                                    state: State::Unknown,
                                    counted: 0,
                                    down: 0,
                                },
                                ballots_hash: 0,
                                damped: hysteresis::Damped::new(now),
                                observed_since: now_rfc3339(),
                                takes_effect_at: now_rfc3339(),
                                since: now_rfc3339(),
                                last_error: None,
                                successes: 0,
                                failures: 0,
                                // A new address is probed at once, then on its slot.
                                next_due: now,
                                running: false,
                                users: BTreeSet::new(),
                                kept: None,
                            },
                        );
                        schedule.push(Reverse((now, id)));
                        added = true;
                        id
                    }
                };
                if let Some(target) = targets.by_id.get_mut(&id) {
                    target.users.insert(user.clone());
                }
            }
            self.inner
                .metrics
                .targets
                .set(i64::try_from(targets.by_id.len()).unwrap_or(i64::MAX));
        }
        if added {
            self.inner.wake.notify_one();
        }
    }

    /// Drops everything `user` wanted.
    pub fn forget(&self, user: &K) {
        self.want(user, std::iter::empty());
    }

    /// What is known of `address` under `check` (None: not a target).
    pub fn state(&self, address: IpAddr, check: &Check) -> Option<AddressState> {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        let target = targets.get(&(address, check.clone()))?;
        let reports = self.inner.reports.lock().unwrap_or_else(|e| e.into_inner());
        let own_impaired = self.inner.own_impaired.load(std::sync::atomic::Ordering::Relaxed);
        Some(AddressState {
            state: target.damped.effective,
            since: target.since.clone(),
            last_error: target.last_error.clone(),
            pending: target
                .damped
                .pending()
                .map(|state| (state, target.observed_since.clone(), target.takes_effect_at.clone())),
            vantage_points: ballots(target, &reports, own_impaired, jiff::Timestamp::now()),
            decision: target.decision.clone(),
            quorum: check.quorum,
        })
    }

    /// Takes vantage point `name`'s new report (None: it has none any
    /// more) and decides every target again; users of targets whose state
    /// changed are notified.
    pub fn set_report(&self, name: &str, report: Option<Report>) {
        {
            let mut reports = self.inner.reports.lock().unwrap_or_else(|e| e.into_inner());
            match report {
                Some(report) => reports.insert(name.to_owned(), report),
                None => reports.remove(name),
            };
        }
        self.decide_all();
    }

    /// Decides every target again (a report came or went, or reports went
    /// silent); notifies the users of those whose state changed.
    pub fn decide_all(&self) {
        let mut notify = Vec::new();
        {
            let mut targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
            let reports = self.inner.reports.lock().unwrap_or_else(|e| e.into_inner());
            let own_impaired = self.inner.own_impaired.load(std::sync::atomic::Ordering::Relaxed);
            let now = Instant::now();
            let wall = jiff::Timestamp::now();
            for target in targets.by_id.values_mut() {
                if apply_decision(&self.inner, target, &reports, own_impaired, now, wall) {
                    notify.extend(target.users.iter().cloned());
                }
            }
        }
        notify.sort();
        notify.dedup();
        for user in notify {
            (self.inner.notify)(user);
        }
    }

    /// Every vantage point that reported, with its report's age (seconds),
    /// whether it is impaired, and how many targets it sees Down of how
    /// many; the controller first.
    pub fn vantage_points(&self) -> Vec<VantagePointSummary> {
        let now = jiff::Timestamp::now();
        let (own_down, total, smallest_period) = {
            let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
            let down = targets.by_id.values().filter(|t| t.own == State::Down).count();
            let period = targets.by_id.values().map(|t| t.key.1.period).min();
            (down, targets.by_id.len(), period)
        };
        let mut out = vec![VantagePointSummary {
            name: vantage::CONTROLLER.to_owned(),
            age_seconds: 0.0,
            silent: false,
            impaired: self.inner.own_impaired.load(std::sync::atomic::Ordering::Relaxed),
            down: own_down,
            probed: total,
        }];
        let reports = self.inner.reports.lock().unwrap_or_else(|e| e.into_inner());
        for (name, report) in reports.iter() {
            out.push(VantagePointSummary {
                name: name.clone(),
                age_seconds: report.age(now),
                silent: smallest_period.is_some_and(|period| !report.is_fresh(period, now)),
                impaired: report.impaired,
                down: report.votes.values().filter(|v| v.state == State::Down).count(),
                probed: report.votes.len(),
            });
        }
        out
    }

    /// Every target, as the agents get it ([`vantage::TargetList`]).
    pub fn target_list(&self) -> vantage::TargetList {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        let mut list: Vec<vantage::TargetSpec> = targets
            .by_id
            .values()
            .map(|t| vantage::TargetSpec::of(t.key.0, &t.key.1))
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        vantage::TargetList { targets: list }
    }

    /// What this prober's own probes say of each target, as an agent
    /// reports it ([`vantage::ReportDoc::targets`]), written `now`.
    pub fn own_report(&self, source: Option<IpAddr>) -> vantage::ReportDoc {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        vantage::ReportDoc {
            reported_at: jiff::Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .unwrap_or_else(|_| jiff::Timestamp::now())
                .to_string(),
            source: source.map(|s| s.to_string()),
            targets: targets
                .by_id
                .values()
                .map(|t| {
                    (
                        t.report_key.to_string(),
                        vantage::VoteDoc {
                            address: t.key.0,
                            state: t.own.as_str().to_owned(),
                            since: t.own_since.clone(),
                            last_error: t.last_error.clone(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// The smallest `periodSeconds` of the targets (None: no target).
    pub fn smallest_period(&self) -> Option<Duration> {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        targets.by_id.values().map(|t| t.key.1.period).min()
    }

    /// The most probes that ran at once so far.
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many addresses are probed.
    pub fn target_count(&self) -> usize {
        self.inner.targets.lock().unwrap_or_else(|e| e.into_inner()).by_id.len()
    }
}

/// The shortest time between two rounds of starting due probes.
const BATCH: Duration = Duration::from_millis(50);

/// The scheduler: starts every due probe, then sleeps until the next one
/// is due (or a new target arrives). Ends when the prober is dropped.
async fn schedule<K>(inner: std::sync::Weak<Inner<K>>)
where
    K: Clone + Ord + Send + Sync + std::fmt::Debug + 'static,
{
    let mut due = Vec::new();
    let mut impaired_checked: Option<Instant> = None;
    loop {
        let Some(strong) = inner.upgrade() else { return };
        let now = Instant::now();
        if impaired_checked.is_none_or(|at| now.duration_since(at) >= IMPAIRED_EVERY) {
            impaired_checked = Some(now);
            refresh_own_impaired(&strong);
        }
        let next = {
            // Lock order: targets, then the schedule.
            let mut targets = strong.targets.lock().unwrap_or_else(|e| e.into_inner());
            let mut schedule = strong.schedule.lock().unwrap_or_else(|e| e.into_inner());
            while schedule.peek().is_some_and(|Reverse((at, _))| *at <= now) {
                let Some(Reverse((at, id))) = schedule.pop() else {
                    break;
                };
                let Some(target) = targets.by_id.get_mut(&id) else {
                    continue; // no longer wanted
                };
                if target.next_due != at {
                    continue; // a stale slot
                }
                // Fixed rate on the target's own slot in its period.
                let period = target.key.1.period;
                let mut next_due = at + period;
                if target.own == State::Unknown && target.successes == 0 && target.failures == 0 && !target.running {
                    next_due = now + offset_in_period(&target.key).max(Duration::from_millis(1)).min(period);
                }
                if next_due <= now {
                    next_due = now + period;
                }
                target.next_due = next_due;
                schedule.push(Reverse((next_due, id)));
                if target.running {
                    continue; // still probing from the last slot: skip this one
                }
                target.running = true;
                due.push((id, target.key.clone(), target.prepared.clone(), target.kept.take()));
            }
            schedule
                .peek()
                .map_or(now + Duration::from_secs(1), |Reverse((at, _))| *at)
        };
        for (id, key, prepared, mut kept) in due.drain(..) {
            let inner = strong.clone();
            tokio::spawn(async move {
                let Ok(_permit) = inner.permits.clone().acquire_owned().await else {
                    return;
                };
                use std::sync::atomic::Ordering::Relaxed;
                let running = inner.in_flight.fetch_add(1, Relaxed) + 1;
                inner.max_in_flight.fetch_max(running, Relaxed);
                let address = SocketAddr::new(key.0, key.1.spec.port);
                let started = Instant::now();
                let result = probe::probe(address, inner.source, &key.1.spec, &prepared, &inner.tls, &mut kept).await;
                inner.in_flight.fetch_sub(1, Relaxed);
                inner
                    .metrics
                    .observe(key.1.spec.protocol, result.is_ok(), started.elapsed());
                record(&inner, id, result, kept);
            });
        }
        // Hold only the wake-up while sleeping, so dropping the prober ends this task.
        let wake = strong.wake.clone();
        drop(strong);
        // Due probes are started in rounds at least BATCH apart: a round's
        // answers then come back together, one wake-up and one epoll_wait
        // for many instead of one per probe (at 2,000 probes a second this
        // is a fifth of the prober's CPU). A probe starts at most BATCH late.
        let wait = next.saturating_duration_since(Instant::now()).max(BATCH);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = wake.notified() => {}
        }
    }
}

/// How often the scheduler checks whether the controller's own probes see
/// every address Down (impaired, see [`vantage`]).
const IMPAIRED_EVERY: Duration = Duration::from_secs(1);

/// Sets [`Inner::own_impaired`] from the targets' own states; decides
/// every target again when it changed and agents report.
fn refresh_own_impaired<K>(inner: &Inner<K>)
where
    K: Clone + Ord + Send + Sync + std::fmt::Debug + 'static,
{
    let impaired = {
        let targets = inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        vantage::is_impaired(targets.by_id.values().map(|t| (t.key.0, t.own)))
    };
    let before = inner.own_impaired.swap(impaired, std::sync::atomic::Ordering::Relaxed);
    if before != impaired {
        tracing::warn!(
            impaired,
            "the controller's own probes see every load balancer address down: its own network, not \
             the load balancers; while agents report, it is not counted"
        );
    }
}

/// Every vantage point's say on `target`: the controller's own probes,
/// then each agent's report (with whether it counts: fresh within
/// 2 × `periodSeconds`, not impaired, probed it).
fn ballots<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> Vec<Ballot> {
    let period = target.key.1.period;
    let mut out = Vec::with_capacity(reports.len() + 1);
    out.push(Ballot {
        vantage_point: vantage::CONTROLLER.to_owned(),
        vote: Vote {
            state: target.own,
            since: target.own_since.clone(),
            last_error: target.last_error.clone(),
        },
        standing: if own_impaired && !reports.is_empty() {
            Standing::Impaired
        } else {
            Standing::Counted
        },
    });
    for (name, report) in reports {
        let vote = report.votes.get(&*target.report_key).cloned();
        let standing = if !report.is_fresh(period, now) {
            Standing::Silent
        } else if report.impaired {
            Standing::Impaired
        } else if vote.as_ref().is_none_or(|v| v.state == State::Unknown) {
            Standing::NotProbed
        } else {
            Standing::Counted
        };
        out.push(Ballot {
            vantage_point: name.clone(),
            vote: vote.unwrap_or(Vote {
                state: State::Unknown,
                since: String::new(),
                last_error: None,
            }),
            standing,
        });
    }
    out
}

/// The quorum's decision on `target` without allocating (the hot path of
/// [`DataPlane::decide_all`]; [`ballots`] has the same rules).
fn tally<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> Decision {
    let period = target.key.1.period;
    let mut counted = 0;
    let mut down = 0;
    let mut count = |state: State| {
        if state != State::Unknown {
            counted += 1;
            down += usize::from(state == State::Down);
        }
    };
    if !own_impaired || reports.is_empty() {
        count(target.own);
    }
    for report in reports.values() {
        if !report.is_fresh(period, now) || report.impaired {
            continue;
        }
        if let Some(vote) = report.votes.get(&*target.report_key) {
            count(vote.state);
        }
    }
    if counted == 0 {
        return Decision {
            state: target.own,
            counted: 0,
            down: usize::from(target.own == State::Down),
        };
    }
    let state = if target.key.1.quorum.is_down(down, counted) {
        State::Down
    } else {
        State::Up
    };
    Decision { state, counted, down }
}

/// A hash of what each vantage point says of `target` and whether it
/// counts (the rules of [`ballots`]), without allocating.
fn ballots_hash<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    target.own.hash(&mut hasher);
    (own_impaired && !reports.is_empty()).hash(&mut hasher);
    let period = target.key.1.period;
    for (name, report) in reports {
        name.hash(&mut hasher);
        report.is_fresh(period, now).hash(&mut hasher);
        report.impaired.hash(&mut hasher);
        report.votes.get(&*target.report_key).map(|v| v.state).hash(&mut hasher);
    }
    hasher.finish()
}

/// The source address of a prober's probes, for its log lines: several
/// probers (the controller's and, in `fedns sandbox`, every member's agent)
/// may share one log, and each reports the same address's changes.
fn probe_source(source: Option<IpAddr>) -> String {
    source.map_or_else(|| "this host".to_owned(), |s| s.to_string())
}

/// Decides `target` again and applies the failover/failback delays; true
/// when its users should be told (the effective state changed, a pending
/// change began or ended, or a vantage point's view or standing changed).
fn apply_decision<K>(
    inner: &Inner<K>,
    target: &mut Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: Instant,
    wall: jiff::Timestamp,
) -> bool {
    let decision = tally(target, reports, own_impaired, wall);
    let hash = ballots_hash(target, reports, own_impaired, wall);
    let views_changed = hash != target.ballots_hash && !reports.is_empty();
    target.ballots_hash = hash;
    let check = &target.key.1;
    let observed = target.damped.observed;
    let before = target.damped.effective;
    let state = decision.state;
    target.decision = decision;
    target.damped.observe(state, now);
    if state != observed {
        let delay = target.damped.delay(check.failover_delay, check.failback_delay);
        target.observed_since = rfc3339_after(wall, Duration::ZERO);
        target.takes_effect_at = rfc3339_after(wall, delay);
        if target.damped.pending().is_some() && !delay.is_zero() {
            tracing::info!(
                address = %SocketAddr::new(target.key.0, check.spec.port),
                host = %check.spec.host,
                probed_from = %probe_source(inner.source),
                probes_say = state.as_str(),
                state = before.as_str(),
                delay_seconds = delay.as_secs(),
                "data-plane probe state changed; takes effect once it held for the failover/failback delay"
            );
        }
    }
    if target.damped.settle(check.failover_delay, check.failback_delay, now) {
        target.since = now_rfc3339();
        tracing::info!(
            address = %SocketAddr::new(target.key.0, check.spec.port),
            host = %check.spec.host,
            probed_from = %probe_source(inner.source),
            from = before.as_str(),
            to = target.damped.effective.as_str(),
            error = target.last_error.as_deref().unwrap_or(""),
            vantage_points_counted = target.decision.counted,
            saying_down = target.decision.down,
            "data-plane probe state changed"
        );
        inner.metrics.transition(target.damped.effective);
        return true;
    }
    // A change waiting for its delay, or one undone before its delay ran
    // out: answers stay, status shows the pending state (and each vantage
    // point's view).
    state != observed || views_changed
}

/// Applies one probe result; notifies the users on a state change.
fn record<K>(inner: &Inner<K>, id: TargetId, result: Result<(), String>, kept: Option<probe::KeptConnection>)
where
    K: Clone + Ord + Send + Sync + std::fmt::Debug + 'static,
{
    let mut notify = Vec::new();
    {
        let mut targets = inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        let Some(target) = targets.by_id.get_mut(&id) else {
            return;
        };
        target.running = false;
        target.kept = kept;
        let check = &target.key.1;
        let own = target.own;
        let mut state = own;
        match result {
            Ok(()) => {
                target.successes = target.successes.saturating_add(1);
                target.failures = 0;
                target.last_error = None;
                let needed = if own == State::Down { check.success_threshold } else { 1 };
                if target.successes >= needed {
                    state = State::Up;
                }
            }
            Err(error) => {
                target.failures = target.failures.saturating_add(1);
                target.successes = 0;
                if target.failures >= check.failure_threshold {
                    state = State::Down;
                }
                target.last_error = Some(error);
            }
        }
        if state != own {
            target.own = state;
            target.own_since = now_rfc3339();
        }
        let reports = inner.reports.lock().unwrap_or_else(|e| e.into_inner());
        let own_impaired = inner.own_impaired.load(std::sync::atomic::Ordering::Relaxed);
        if apply_decision(
            inner,
            target,
            &reports,
            own_impaired,
            Instant::now(),
            jiff::Timestamp::now(),
        ) {
            notify.extend(target.users.iter().cloned());
        }
    }
    for user in notify {
        (inner.notify)(user);
    }
}

/// One vantage point at a glance ([`DataPlane::vantage_points`]).
#[derive(Debug, Clone, PartialEq)]
pub struct VantagePointSummary {
    /// `controller` or the member the agent runs in.
    pub name: String,
    /// Seconds since its report was written (0 for the controller).
    pub age_seconds: f64,
    /// Older than 2 × the smallest `periodSeconds` of the targets.
    pub silent: bool,
    /// Sees every address Down (its own network).
    pub impaired: bool,
    /// Targets it sees Down.
    pub down: usize,
    /// Targets it reports on.
    pub probed: usize,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProbeLabel {
    protocol: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabel {
    to: &'static str,
}

/// Data-plane probe metrics (`fedns_probe_*`).
#[derive(Debug, Clone)]
pub struct ProbeMetrics {
    probes: Family<ProbeLabel, Counter>,
    duration: Family<ProbeLabel, Histogram, fn() -> Histogram>,
    transitions: Family<TransitionLabel, Counter>,
    targets: Gauge,
    /// The series of `probes` and `duration`, by [protocol][passed], taken
    /// from the families once so a probe neither hashes labels nor locks.
    series: Arc<[[(Counter, Histogram); 2]; 3]>,
}

fn probe_histogram() -> Histogram {
    Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
}

impl Default for ProbeMetrics {
    /// Metrics registered nowhere (tests).
    fn default() -> Self {
        let probes = Family::<ProbeLabel, Counter>::default();
        let duration = Family::<ProbeLabel, Histogram, fn() -> Histogram>::new_with_constructor(probe_histogram);
        let series = ["TCP", "HTTP", "HTTPS"].map(|protocol| {
            ["fail", "pass"].map(|result| {
                let label = ProbeLabel { protocol, result };
                (
                    probes.get_or_create(&label).clone(),
                    duration.get_or_create(&label).clone(),
                )
            })
        });
        ProbeMetrics {
            probes,
            duration,
            transitions: Family::default(),
            targets: Gauge::default(),
            series: Arc::new(series),
        }
    }
}

impl ProbeMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> ProbeMetrics {
        let metrics = ProbeMetrics::default();
        registry.register(
            "fedns_probe",
            "Data-plane probes by protocol and result (pass, fail)",
            metrics.probes.clone(),
        );
        registry.register(
            "fedns_probe_duration_seconds",
            "Duration of data-plane probes, in seconds",
            metrics.duration.clone(),
        );
        registry.register(
            "fedns_probe_transitions",
            "Load balancer addresses changing state (to Up or Down)",
            metrics.transitions.clone(),
        );
        registry.register(
            "fedns_probe_targets",
            "Load balancer addresses probed (address and check pairs)",
            metrics.targets.clone(),
        );
        metrics
    }

    fn observe(&self, protocol: fedns_api::ProbeProtocol, passed: bool, took: Duration) {
        let protocol = match protocol {
            fedns_api::ProbeProtocol::Tcp => 0,
            fedns_api::ProbeProtocol::Http => 1,
            fedns_api::ProbeProtocol::Https => 2,
        };
        let (count, duration) = &self.series[protocol][usize::from(passed)];
        count.inc();
        duration.observe(took.as_secs_f64());
    }

    fn transition(&self, to: State) {
        self.transitions
            .get_or_create(&TransitionLabel { to: to.as_str() })
            .inc();
    }
}
