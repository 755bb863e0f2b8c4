//! Failover and failback delays (`spec.healthCheck.failoverDelaySeconds`,
//! `failbackDelaySeconds`, Akamai GTM's `failover_delay`/`failback_delay`):
//! what the probes say of an address (its *observed* state, after
//! `failureThreshold`/`successThreshold`) becomes its *effective* state,
//! the one answers follow, only once it has held for the delay of that
//! direction. An address that flaps every few seconds then leaves once and
//! stays out, instead of making the answers flap with it.
//!
//! Pure state, no clock of its own: the prober calls [`Damped::settle`]
//! after every probe result, so a change takes effect at the first probe
//! after the delay ran out (at most one `periodSeconds` late). Both delays
//! 0 (the defaults): the effective state is the observed one, as before.

use std::time::{Duration, Instant};

use super::State;

/// The observed and effective state of one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damped {
    /// What the probes say (after the thresholds).
    pub observed: State,
    /// When `observed` last changed.
    pub observed_at: Instant,
    /// What answers follow.
    pub effective: State,
}

impl Damped {
    /// A new address: Unknown both ways, observed from `now`.
    pub fn new(now: Instant) -> Damped {
        Damped {
            observed: State::Unknown,
            observed_at: now,
            effective: State::Unknown,
        }
    }

    /// Records what the probes say at `now`.
    pub fn observe(&mut self, state: State, now: Instant) {
        if state != self.observed {
            self.observed = state;
            self.observed_at = now;
        }
    }

    /// The delay a change from the effective to the observed state waits:
    /// `failover` to Down, `failback` from Down to Up, none from Unknown
    /// to Up (a new address counts as passing already).
    pub fn delay(&self, failover: Duration, failback: Duration) -> Duration {
        match (self.effective, self.observed) {
            (_, State::Down) => failover,
            (State::Down, State::Up) => failback,
            _ => Duration::ZERO,
        }
    }

    /// Applies a change that has held for its delay at `now`; true when
    /// the effective state changed.
    pub fn settle(&mut self, failover: Duration, failback: Duration, now: Instant) -> bool {
        if self.observed == self.effective {
            return false;
        }
        if now.saturating_duration_since(self.observed_at) < self.delay(failover, failback) {
            return false;
        }
        self.effective = self.observed;
        true
    }

    /// The observed state while it waits to take effect (None: nothing waits).
    pub fn pending(&self) -> Option<State> {
        (self.observed != self.effective).then_some(self.observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn no_delay_follows_the_probes_at_once() {
        let t0 = Instant::now();
        let mut d = Damped::new(t0);
        d.observe(State::Up, t0);
        assert!(d.settle(Duration::ZERO, Duration::ZERO, t0));
        d.observe(State::Down, t0);
        assert!(d.settle(Duration::ZERO, Duration::ZERO, t0));
        assert_eq!((d.effective, d.pending()), (State::Down, None));
    }

    #[test]
    fn a_change_takes_effect_only_after_it_held_for_its_delay() {
        let t0 = Instant::now();
        let (failover, failback) = (2 * S, 10 * S);
        let mut d = Damped::new(t0);
        d.observe(State::Up, t0);
        assert!(d.settle(failover, failback, t0), "Unknown to Up waits for nothing");
        d.observe(State::Down, t0 + S);
        assert!(!d.settle(failover, failback, t0 + 2 * S));
        assert_eq!(d.pending(), Some(State::Down));
        assert!(d.settle(failover, failback, t0 + 3 * S), "Down held 2 s");
        assert_eq!(d.effective, State::Down);
        // Flapping: up 1 s, down 1 s never holds Up for 10 s.
        for i in 0..20u32 {
            let at = t0 + 4 * S + i * S;
            d.observe(if i % 2 == 0 { State::Up } else { State::Down }, at);
            d.settle(failover, failback, at + S / 2);
            assert_eq!(d.effective, State::Down, "flap {i}");
        }
        let up_at = t0 + 30 * S;
        d.observe(State::Up, up_at);
        assert!(!d.settle(failover, failback, up_at + 9 * S));
        assert!(d.settle(failover, failback, up_at + 10 * S));
        assert_eq!((d.effective, d.pending()), (State::Up, None));
    }

    #[test]
    fn a_change_undone_before_its_delay_never_takes_effect() {
        let t0 = Instant::now();
        let mut d = Damped::new(t0);
        d.observe(State::Up, t0);
        d.settle(5 * S, Duration::ZERO, t0);
        d.observe(State::Down, t0 + S);
        d.observe(State::Up, t0 + 2 * S);
        assert!(!d.settle(5 * S, Duration::ZERO, t0 + 10 * S));
        assert_eq!((d.effective, d.pending()), (State::Up, None));
    }
}
