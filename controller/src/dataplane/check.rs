//! What a record asks of an address ([`Check`]) and what the data plane
//! says of it ([`State`]): the words every other file of the folder uses.

use std::hash::Hash;
use std::time::Duration;

use fedns_api::Quorum;

use super::probe::ProbeSpec;

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
    /// How many vantage points must say Down ([`super::vantage`]).
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
