//! The decision on one target: each vantage point's ballot, the quorum's
//! tally, and the failover/failback delays applied to it. The place that
//! decides whether an address is Up or Down.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::check::State;
use super::targets::{now_rfc3339, rfc3339_after, Inner, Target};
use super::vantage::{self, Ballot, Decision, Report, Standing, Vote};

/// No report: what a target kept from the agents is decided with.
static NO_REPORTS: BTreeMap<String, Report> = BTreeMap::new();

/// The reports that have a say on `target`: none for a target the agents
/// are never given ([`vantage::controller_only`]: its check carries
/// headers or a CA bundle; or refused, [`super::policy`]), so their
/// silence on it is neither a vote nor a failure and the controller
/// decides it alone; else `reports`.
fn reports_on<'a, K>(target: &Target<K>, reports: &'a BTreeMap<String, Report>) -> &'a BTreeMap<String, Report> {
    if target.refused || vantage::controller_only(&target.key.1) {
        &NO_REPORTS
    } else {
        reports
    }
}

/// Every vantage point's say on `target`: the controller's own probes,
/// then each agent's report (with whether it counts: fresh within
/// 2 × `periodSeconds`, not impaired, probed it).
pub(super) fn ballots<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> Vec<Ballot> {
    if target.refused {
        // Not probed: the refusal is the only say.
        return vec![Ballot {
            vantage_point: vantage::CONTROLLER.to_owned(),
            vote: Vote {
                state: State::Down,
                since: target.since.clone(),
                last_error: target.last_error.clone(),
            },
            standing: Standing::Counted,
        }];
    }
    let reports = reports_on(target, reports);
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
/// [`super::DataPlane::decide_all`]; [`ballots`] has the same rules).
pub(super) fn tally<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> Decision {
    if target.refused {
        return Decision {
            state: State::Down,
            counted: 0,
            down: 0,
        };
    }
    let reports = reports_on(target, reports);
    let period = target.key.1.period;
    let mut counted = 0;
    let mut down = 0;
    let mut count = |state: State| {
        if state != State::Unknown {
            counted += 1;
            down += usize::from(state == State::Down);
        }
    };
    let own_counted = !own_impaired || reports.is_empty();
    if own_counted {
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
    let own_down = own_counted && target.own == State::Down;
    let state = if target.key.1.quorum.is_down(down, counted) && vantage::corroborated(down, own_down) {
        State::Down
    } else {
        State::Up
    };
    Decision { state, counted, down }
}

/// A hash of what each vantage point says of `target` and whether it
/// counts (the rules of [`ballots`]), without allocating.
pub(super) fn ballots_hash<K>(
    target: &Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: jiff::Timestamp,
) -> u64 {
    let reports = reports_on(target, reports);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    target.refused.hash(&mut hasher);
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
pub(super) fn probe_source(source: Option<IpAddr>) -> String {
    source.map_or_else(|| "this host".to_owned(), |s| s.to_string())
}

/// Decides `target` again and applies the failover/failback delays; true
/// when its users should be told (the effective state changed, a pending
/// change began or ended, or a vantage point's view or standing changed).
pub(super) fn apply_decision<K>(
    inner: &Inner<K>,
    target: &mut Target<K>,
    reports: &BTreeMap<String, Report>,
    own_impaired: bool,
    now: Instant,
    wall: jiff::Timestamp,
) -> bool {
    if target.refused {
        return apply_refused(inner, target, now);
    }
    let decision = tally(target, reports, own_impaired, wall);
    let hash = ballots_hash(target, reports, own_impaired, wall);
    let views_changed = hash != target.ballots_hash && !reports_on(target, reports).is_empty();
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

/// A refused target ([`super::policy`]): Down at once, not after the
/// failover delay (nothing flaps: it is a setting, not a probe), decided
/// by no vantage point. True when its effective state changed.
pub(super) fn apply_refused<K>(inner: &Inner<K>, target: &mut Target<K>, now: Instant) -> bool {
    target.decision = tally(target, &NO_REPORTS, false, jiff::Timestamp::now());
    target.ballots_hash = 0;
    if target.damped.observed != State::Down {
        target.damped.observe(State::Down, now);
        target.observed_since = now_rfc3339();
        target.takes_effect_at = target.observed_since.clone();
    }
    if target.damped.effective == State::Down {
        return false;
    }
    target.damped.effective = State::Down;
    target.since = now_rfc3339();
    inner.metrics.transition(State::Down);
    true
}
