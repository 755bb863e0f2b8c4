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
//! * `failoverDelaySeconds`/`failbackDelaySeconds`: a change of that state
//!   takes effect (is reported, notifies the users) only after it held that
//!   long ([`hysteresis`]).

pub mod hysteresis;
pub mod probe;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::sync::{Notify, Semaphore};

pub use probe::{ProbeSpec, ProbeTls};

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
}

/// The state of one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

type TargetKey = (IpAddr, Check);

/// A target's number: the schedule and running probes refer to a target by
/// it, so a probe clones and hashes no strings (the check's path and host).
/// Never reused, so a slot of a removed target can't fire a new one.
type TargetId = u64;

struct Target<K> {
    key: Arc<TargetKey>,
    prepared: Arc<probe::Prepared>,
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
                                key,
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
        targets.get(&(address, check.clone())).map(|t| AddressState {
            state: t.damped.effective,
            since: t.since.clone(),
            last_error: t.last_error.clone(),
            pending: t
                .damped
                .pending()
                .map(|state| (state, t.observed_since.clone(), t.takes_effect_at.clone())),
        })
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
    loop {
        let Some(strong) = inner.upgrade() else { return };
        let now = Instant::now();
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
                if target.damped.observed == State::Unknown
                    && target.successes == 0
                    && target.failures == 0
                    && !target.running
                {
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
                let result = probe::probe(address, &key.1.spec, &prepared, &inner.tls, &mut kept).await;
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
        let observed = target.damped.observed;
        let before = target.damped.effective;
        let mut state = observed;
        match result {
            Ok(()) => {
                target.successes = target.successes.saturating_add(1);
                target.failures = 0;
                target.last_error = None;
                let needed = if observed == State::Down {
                    check.success_threshold
                } else {
                    1
                };
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
        let now = Instant::now();
        target.damped.observe(state, now);
        if state != observed {
            let delay = target.damped.delay(check.failover_delay, check.failback_delay);
            let wall = jiff::Timestamp::now();
            target.observed_since = rfc3339_after(wall, Duration::ZERO);
            target.takes_effect_at = rfc3339_after(wall, delay);
            if target.damped.pending().is_some() && !delay.is_zero() {
                tracing::info!(
                    address = %SocketAddr::new(target.key.0, check.spec.port),
                    host = %check.spec.host,
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
                from = before.as_str(),
                to = target.damped.effective.as_str(),
                error = target.last_error.as_deref().unwrap_or(""),
                "data-plane probe state changed"
            );
            inner.metrics.transition(target.damped.effective);
            notify.extend(target.users.iter().cloned());
        } else if state != observed {
            // A change waiting for its delay, or one undone before its
            // delay ran out: answers stay, status shows the pending state.
            notify.extend(target.users.iter().cloned());
        }
    }
    for user in notify {
        (inner.notify)(user);
    }
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
