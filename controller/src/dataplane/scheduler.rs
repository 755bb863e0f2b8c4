//! The scheduler: starts due probes, applies each probe's result to the
//! controller's own state (thresholds), and watches whether the
//! controller's own probes are impaired.

use std::cmp::Reverse;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::check::State;
use super::decision::apply_decision;
use super::probe;
use super::targets::{now_rfc3339, offset_in_period, Inner, TargetId};
use super::vantage;

/// The shortest time between two rounds of starting due probes.
pub(super) const BATCH: Duration = Duration::from_millis(50);

/// The scheduler: starts every due probe, then sleeps until the next one
/// is due (or a new target arrives). Ends when the prober is dropped.
pub(super) async fn schedule<K>(inner: std::sync::Weak<Inner<K>>)
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
                if target.next_due != at || target.refused {
                    continue; // a stale slot, or a target not probed (refused)
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
pub(super) const IMPAIRED_EVERY: Duration = Duration::from_secs(1);

/// Sets [`Inner::own_impaired`] from the targets' own states; decides
/// every target again when it changed and agents report.
pub(super) fn refresh_own_impaired<K>(inner: &Inner<K>)
where
    K: Clone + Ord + Send + Sync + std::fmt::Debug + 'static,
{
    let impaired = {
        let targets = inner.targets.lock().unwrap_or_else(|e| e.into_inner());
        vantage::is_impaired(targets.by_id.values().filter(|t| !t.refused).map(|t| (t.key.0, t.own)))
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

/// Applies one probe result; notifies the users on a state change.
pub(super) fn record<K>(inner: &Inner<K>, id: TargetId, result: Result<(), String>, kept: Option<probe::KeptConnection>)
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
        if target.refused {
            return; // refused while it ran: its result is not used
        }
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
