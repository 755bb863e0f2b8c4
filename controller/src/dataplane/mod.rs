//! Data-plane health: probes of every published load balancer address
//! (`spec.healthCheck` of ServiceDNSRecord and IngressDNSRecord), the
//! agents' reports, the quorum and the failover/failback delays. The one
//! place that decides whether an address is Up or Down.
//!
//! Owns the probe targets, their schedule and their Up/Down state. The
//! prober calls nothing of the rest of the controller but the `notify`
//! callback it is given, which the record reconcilers use to requeue a
//! record whose addresses changed state; only [`agent_reports`] reaches the
//! members (through [`crate::members::Registry`]) to exchange ConfigMaps
//! with the agents.
//!
//! | file | decides or does |
//! |---|---|
//! | [`check`](Check) | what a record asks ([`Check`]) and an address's [`State`] |
//! | [`policy`] | which addresses may be probed at all (loopback, link-local, … refused unless a Domain allows them) |
//! | [`probe`] | one probe (TCP, HTTP, HTTPS) of one address |
//! | `scheduler` | when each target is probed; a probe's result against the thresholds |
//! | [`vantage`] | the quorum: which vantage points count and what they say together |
//! | [`hysteresis`] | the failover/failback delays |
//! | `decision` | the ballots, the tally and the delays applied to one target |
//! | `targets` | the state the prober keeps per target |
//! | `prober` | the [`DataPlane`] handle the reconcilers and the exchange call |
//! | [`agent_reports`] | the exchange with the agents: target lists out, reports in (ConfigMaps) |
//! | `metrics` | [`ProbeMetrics`] (`fedns_probe_*`) |
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
//!   points counted say so, and never on one agent's word alone. Reports
//!   echo their member's target-list nonce. With no agent the controller
//!   alone decides.
//! * Refused targets ([`policy`]): a loopback, link-local, unspecified or
//!   own-host address is not probed unless the record's Domain allows it
//!   (`spec.probeAllowedNetworks`); it is Down, saying why.
//! * `failoverDelaySeconds`/`failbackDelaySeconds`: a change of that state
//!   takes effect (is reported, notifies the users) only after it held that
//!   long ([`hysteresis`]).

pub mod agent_reports;
mod check;
mod decision;
pub mod hysteresis;
mod metrics;
pub mod policy;
pub mod probe;
mod prober;
mod scheduler;
mod targets;
pub mod vantage;

pub use check::{Check, State};
pub use metrics::ProbeMetrics;
pub use probe::{ProbeSpec, ProbeTls};
pub use prober::{AddressState, DataPlane, VantagePointSummary};
