//! What the record files share, below all of them: the problems a build
//! reports, the topology, resolved load balancer host names and the drain's
//! step count. It sits here, not in the builder or the health selection
//! that use it, so that the builder, the routing policies, the resolver,
//! the health selection and the context can import it without importing
//! each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use fedns_api::names;
use k8s_openapi::api::core::v1::LoadBalancerStatus;

/// Something skipped while building, for a condition and an Event.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BuildProblem {
    /// Member cluster concerned, if any.
    pub cluster: Option<String>,
    /// One line.
    pub message: String,
}

/// Resolved addresses of load-balancer host names (AWS ELB style).
pub trait HostnameAddresses {
    /// The addresses of `hostname`, if resolved.
    fn addresses(&self, hostname: &str) -> Option<Vec<IpAddr>>;
}

impl HostnameAddresses for BTreeMap<String, Vec<IpAddr>> {
    fn addresses(&self, hostname: &str) -> Option<Vec<IpAddr>> {
        self.get(hostname).cloned()
    }
}

/// Host names in load balancer statuses that need resolving.
pub fn lb_hostnames(lb: &LoadBalancerStatus) -> Vec<String> {
    lb.ingress
        .iter()
        .flatten()
        .filter(|i| i.ip.as_deref().is_none_or(str::is_empty))
        .filter_map(|i| i.hostname.as_deref())
        .filter_map(|h| names::normalize_hostname(h).ok())
        .collect()
}

/// The federation's topology: region → zones, from every member.
pub type Topology = BTreeMap<String, BTreeSet<String>>;

/// Steps a drain (`spec.drainSeconds`) lowers a cluster's weight in.
pub(super) const DRAIN_STEPS: u32 = 10;
