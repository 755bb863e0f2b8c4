//! Member clusters: the [`Registry`] keeps one [`Member`] per MemberCluster
//! (client, watches, health prober; [`gateway`]: its Gateway API objects) and writes the MemberCluster status.
//! May call the host API, [`crate::metrics`], and [`crate::queue`]
//! (to ask for reconciles); nothing of `records`.

pub mod cache;
pub(crate) mod client;
pub mod credentials;
pub(crate) mod eks_token;
pub mod gateway;
mod member;
mod probe;
mod registry;
pub mod sources;
mod status;
mod watch;

pub use credentials::{CredentialPolicy, CREDENTIALS_REFUSED};
pub use member::{effective_topology, Health, Member};
pub use registry::Registry;
pub use sources::{MemberSource, Sources};
pub use status::{AUTO_RECORDS_NOT_ALLOWED, AUTO_RECORDS_REFUSED, TOPOLOGY_CONDITION};
pub use watch::{endpoint_is_ready, SliceIndex};
