//! "Why is my cluster (not) in DNS": every cluster behind a published name
//! with its control-plane state, cordon, endpoint readiness (when the
//! caller can see members), each load balancer address with its probe
//! state, and the reason it is or is not in the answer. Built from the
//! objects alone (`fedns explain`, read from the host cluster) or with the
//! controller's member caches (`/debug/explain` on the metrics port).

mod build;
mod render;
mod routing;

pub use build::{ds_records_for, explain, ClusterExplanation, Explanation, Followed, MemberFacts};
pub use render::render;
pub use routing::{explain_routing, ClientExplanation, RoutingExplanation};
