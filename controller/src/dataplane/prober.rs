//! The [`DataPlane`] handle: what the record reconcilers and the agents'
//! report exchange call (want, forget, state, set_report, the vantage
//! points' summary, the target list and the own report), and its start.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::Quorum;
use ipnet::IpNet;
use tokio::sync::{Notify, Semaphore};

use super::check::{Check, State};
use super::decision::{apply_decision, ballots};
use super::hysteresis;
use super::metrics::ProbeMetrics;
use super::policy::{self, Allowance};
use super::probe::{self, ProbeTls};
use super::scheduler::schedule;
use super::targets::{now_rfc3339, Inner, Target, TargetKey, Targets, Wanted};
use super::vantage::{self, Ballot, Decision, Report};

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
            own_addresses: policy::host_addresses(),
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

    /// Sets what `user` wants probed: (address, check) pairs, each probed
    /// as given, whatever its address (an agent's list, which the
    /// controller filtered; see [`DataPlane::want_allowing`] for the
    /// controller's records). Targets no user wants any more are dropped.
    pub fn want(&self, user: &K, targets: impl IntoIterator<Item = (IpAddr, Check)>) {
        self.want_with(user, targets.into_iter().collect(), Allowance::Everything);
    }

    /// Sets what `user` (a record) wants probed, as [`DataPlane::want`]
    /// does, except that an address [`policy::classify`] refuses
    /// (loopback, link-local, unspecified, this host's own) is probed only
    /// inside `allowed` (its Domains' `spec.probeAllowedNetworks`). A
    /// refused target is not probed and not given to the agents: it is
    /// Down, its error saying why. A target several users share is probed
    /// when one of them allows it.
    pub fn want_allowing(&self, user: &K, targets: impl IntoIterator<Item = (IpAddr, Check)>, allowed: &[IpNet]) {
        self.want_with(
            user,
            targets.into_iter().collect(),
            Allowance::Networks(allowed.to_vec()),
        );
    }

    fn want_with(&self, user: &K, new: BTreeSet<TargetKey>, allowance: Allowance) {
        let old = {
            let mut wanted = self.inner.wanted.lock().unwrap_or_else(|e| e.into_inner());
            let entry = Wanted {
                targets: new.clone(),
                allowance: allowance.clone(),
            };
            if wanted.get(user) == Some(&entry) {
                return;
            }
            if new.is_empty() {
                wanted.remove(user).map(|w| w.targets).unwrap_or_default()
            } else {
                wanted
                    .insert(user.clone(), entry)
                    .map(|w| w.targets)
                    .unwrap_or_default()
            }
        };
        let now = Instant::now();
        let mut added = false;
        let mut notify = Vec::new();
        {
            let mut guard = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
            let targets = &mut *guard;
            // Targets whose users or allowances changed: refused or not, again.
            let mut touched = Vec::new();
            for key in old.difference(&new) {
                let Some(&id) = targets.ids.get(key) else { continue };
                if let Some(target) = targets.by_id.get_mut(&id) {
                    target.users.remove(user);
                    target.allowed_by.remove(user);
                    if target.users.is_empty() {
                        targets.by_id.remove(&id);
                        targets.ids.remove(key);
                    } else {
                        touched.push(id);
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
                                refusal: policy::classify(key.0, &self.inner.own_addresses)
                                    .map(|r| r.message(key.0).into()),
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
                                allowed_by: BTreeSet::new(),
                                refused: false,
                            },
                        );
                        schedule.push(Reverse((now, id)));
                        added = true;
                        id
                    }
                };
                if let Some(target) = targets.by_id.get_mut(&id) {
                    target.users.insert(user.clone());
                    if allowance.allows(target.key.0) {
                        target.allowed_by.insert(user.clone());
                    } else {
                        target.allowed_by.remove(user);
                    }
                    touched.push(id);
                }
            }
            let reports = self.inner.reports.lock().unwrap_or_else(|e| e.into_inner());
            let own_impaired = self.inner.own_impaired.load(std::sync::atomic::Ordering::Relaxed);
            for id in touched {
                let Some(target) = targets.by_id.get_mut(&id) else {
                    continue;
                };
                let refused = target.refused_now();
                if refused == target.refused {
                    continue;
                }
                target.refused = refused;
                target.own = State::Unknown;
                target.own_since = now_rfc3339();
                target.successes = 0;
                target.failures = 0;
                target.kept = None;
                if refused {
                    // Not probed: a slot still scheduled is dropped when it fires.
                    target.last_error = target.refusal.as_deref().map(str::to_owned);
                    tracing::warn!(
                        address = %target.key.0,
                        port = target.key.1.spec.port,
                        host = %target.key.1.spec.host,
                        "{}",
                        target.last_error.as_deref().unwrap_or("probe target refused")
                    );
                } else {
                    // Allowed now: a new address, probed at once.
                    target.last_error = None;
                    target.damped = hysteresis::Damped::new(now);
                    target.decision = Decision {
                        state: State::Unknown,
                        counted: 0,
                        down: 0,
                    };
                    target.since = now_rfc3339();
                    target.next_due = now;
                    schedule.push(Reverse((now, id)));
                    added = true;
                }
                apply_decision(&self.inner, target, &reports, own_impaired, now, jiff::Timestamp::now());
                notify.extend(target.users.iter().filter(|u| *u != user).cloned());
            }
            drop(reports);
            self.inner
                .metrics
                .targets
                .set(i64::try_from(targets.by_id.len()).unwrap_or(i64::MAX));
        }
        if added {
            self.inner.wake.notify_one();
        }
        notify.sort();
        notify.dedup();
        for other in notify {
            (self.inner.notify)(other);
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
            let probed = || targets.by_id.values().filter(|t| !t.refused);
            let down = probed().filter(|t| t.own == State::Down).count();
            // Agents are silent by the periods of the targets they probe:
            // not by those kept from them.
            let period = probed()
                .filter(|t| !vantage::controller_only(&t.key.1))
                .map(|t| t.key.1.period)
                .min();
            (down, probed().count(), period)
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

    /// Every target the agents get ([`vantage::TargetList`], without a
    /// nonce: each member's copy gets its own): all but those whose check
    /// carries request headers or a CA bundle ([`vantage::controller_only`]),
    /// which only this prober probes, and those refused ([`policy`]),
    /// which nobody probes.
    pub fn target_list(&self) -> vantage::TargetList {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        let mut list: Vec<vantage::TargetSpec> = targets
            .by_id
            .values()
            .filter(|t| !t.refused && !vantage::controller_only(&t.key.1))
            .map(|t| vantage::TargetSpec::of(t.key.0, &t.key.1))
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        vantage::TargetList {
            nonce: String::new(),
            targets: list,
        }
    }

    /// What this prober's own probes say of each target, as an agent
    /// reports it ([`vantage::ReportDoc::targets`]), written `now`, without
    /// a nonce (the agent adds the one of the list it probes).
    pub fn own_report(&self, source: Option<IpAddr>) -> vantage::ReportDoc {
        let targets = self.inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        vantage::ReportDoc {
            reported_at: jiff::Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .unwrap_or_else(|_| jiff::Timestamp::now())
                .to_string(),
            nonce: String::new(),
            source: source.map(|s| s.to_string()),
            targets: targets
                .by_id
                .values()
                .filter(|t| !t.refused)
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

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::ProbeProtocol;

    fn tcp_check(port: u16, period_ms: u64) -> Check {
        Check {
            spec: super::super::ProbeSpec {
                protocol: ProbeProtocol::Tcp,
                port,
                path: "/".into(),
                host: "www.example.com".into(),
                server_name: "www.example.com".into(),
                statuses: vec![(200, 399)],
                expected_body: None,
                headers: Vec::new(),
                timeout: Duration::from_millis(500),
                insecure: false,
                ca_pem: None,
            },
            period: Duration::from_millis(period_ms),
            failure_threshold: 1,
            success_threshold: 1,
            failover_delay: Duration::ZERO,
            failback_delay: Duration::ZERO,
            quorum: fedns_api::Quorum::Majority,
        }
    }

    /// Issue #57 item 4: a loopback target is refused without an
    /// allowance (not probed, not given to the agents, Down with the
    /// reason), probed once allowed, and refused again when the allowance
    /// goes; an agent's `want` probes what it is given.
    #[tokio::test]
    async fn loopback_targets_are_probed_only_where_allowed() -> Result<(), Box<dyn std::error::Error>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let accepting = {
            let accepted = accepted.clone();
            tokio::spawn(async move {
                while listener.accept().await.is_ok() {
                    accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        };
        let address: IpAddr = "127.0.0.1".parse()?;
        let check = tcp_check(port, 100);
        let notified = Arc::new(Mutex::new(Vec::new()));
        let plane: DataPlane<u8> = {
            let notified = notified.clone();
            DataPlane::start(
                super::super::ProbeTls::new(&[]).map_err(|e| e.to_string())?,
                4,
                super::super::ProbeMetrics::default(),
                move |user| notified.lock().unwrap_or_else(|e| e.into_inner()).push(user),
            )?
        };
        plane.want_allowing(&1, [(address, check.clone())], &[]);
        let refused = plane.state(address, &check).ok_or("a target")?;
        assert_eq!(refused.state, State::Down, "{refused:?}");
        assert_eq!(
            refused.last_error.as_deref(),
            Some("probe target 127.0.0.1 is loopback; not probed (Domain spec.probeAllowedNetworks can allow it)")
        );
        assert_eq!(refused.vantage_points.len(), 1, "the agents have no say: {refused:?}");
        assert!(plane.target_list().targets.is_empty(), "not given to the agents");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 0, "never probed");
        assert_eq!(plane.state(address, &check).map(|s| s.state), Some(State::Down));
        let vantage = plane.vantage_points();
        assert_eq!((vantage[0].probed, vantage[0].down), (0, 0), "{vantage:?}");

        // Allowed (the Domain's spec.probeAllowedNetworks): probed, Up.
        plane.want_allowing(&1, [(address, check.clone())], &["127.0.0.0/8".parse()?]);
        let started = std::time::Instant::now();
        while plane.state(address, &check).map(|s| s.state) != Some(State::Up) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{:?}",
                plane.state(address, &check)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await; // the accept task's turn
        assert!(accepted.load(std::sync::atomic::Ordering::Relaxed) > 0);
        assert_eq!(plane.target_list().targets.len(), 1);
        // A second user sharing the target without the allowance: still
        // probed (one user allows it).
        plane.want_allowing(&2, [(address, check.clone())], &[]);
        assert_eq!(plane.state(address, &check).map(|s| s.state), Some(State::Up));
        // The allowance gone for both: refused again at once; the other
        // user is told.
        notified.lock().unwrap_or_else(|e| e.into_inner()).clear();
        plane.want_allowing(&1, [(address, check.clone())], &[]);
        let state = plane.state(address, &check).ok_or("a target")?;
        assert_eq!(state.state, State::Down);
        assert!(state.last_error.unwrap_or_default().contains("is loopback"));
        assert_eq!(*notified.lock().unwrap_or_else(|e| e.into_inner()), [2]);
        // An agent probes the list it is given as it is.
        plane.forget(&1);
        plane.forget(&2);
        plane.want(&3, [(address, check.clone())]);
        assert_ne!(plane.state(address, &check).map(|s| s.state), Some(State::Down));
        accepting.abort();
        Ok(())
    }

    /// Targets whose check carries headers or a CA bundle are not in the
    /// agents' list; the agents' reports, which cannot name them, are no
    /// ballot on them (not "not probed", not silent by their shorter
    /// period): the controller decides them alone.
    #[tokio::test]
    async fn targets_kept_from_the_agents_are_decided_by_the_controller_alone() -> Result<(), Box<dyn std::error::Error>>
    {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let address: IpAddr = "127.0.0.1".parse()?;
        let plain = tcp_check(port, 1000);
        let mut with_token = tcp_check(port, 100);
        with_token.spec.headers = vec![("Authorization".into(), "Bearer s3cret".into())];
        let mut with_ca = tcp_check(port, 100);
        with_ca.spec.ca_pem = Some("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".into());
        let plane: DataPlane<u8> = DataPlane::start(
            super::super::ProbeTls::new(&[]).map_err(|e| e.to_string())?,
            4,
            super::super::ProbeMetrics::default(),
            |_| {},
        )?;
        plane.want(
            &0,
            [
                (address, plain.clone()),
                (address, with_token.clone()),
                (address, with_ca.clone()),
            ],
        );
        let list = plane.target_list();
        assert_eq!(list.targets.len(), 1, "{list:?}");
        assert_eq!(list.targets[0].id, vantage::target_id(address, &plain));
        // An agent's report on the plain target, 300 ms old: fresh for its
        // 1 s period, not for the 100 ms of the targets it was not given.
        let written = jiff::Timestamp::now() - jiff::SignedDuration::from_millis(300);
        let json = serde_json::json!({
            "reportedAt": written.to_string(),
            "targets": {
                vantage::report_key(&list.targets[0].id): {"address": "127.0.0.1", "state": "Up", "since": written.to_string()}
            }
        });
        plane.set_report("member-a", Some(Report::parse_received(&json.to_string(), written)?));
        let started = std::time::Instant::now();
        loop {
            let states: Vec<State> = [&plain, &with_token, &with_ca]
                .iter()
                .filter_map(|c| plane.state(address, c))
                .map(|s| s.state)
                .collect();
            if states == [State::Up; 3] {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{states:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for check in [&with_token, &with_ca] {
            let state = plane.state(address, check).ok_or("a target")?;
            let names: Vec<&str> = state.vantage_points.iter().map(|b| b.vantage_point.as_str()).collect();
            assert_eq!(names, [vantage::CONTROLLER], "{state:?}");
            assert_eq!((state.decision.counted, state.decision.down), (1, 0));
        }
        let plain_state = plane.state(address, &plain).ok_or("a target")?;
        assert_eq!(plain_state.vantage_points.len(), 2, "{plain_state:?}");
        assert_eq!(plain_state.decision.counted, 2);
        let agent = plane
            .vantage_points()
            .into_iter()
            .find(|v| v.name == "member-a")
            .ok_or("the agent's summary")?;
        assert!(!agent.silent, "silent by the period of targets it never had: {agent:?}");
        drop(listener);
        Ok(())
    }
}
