//! Member clusters: the registry (one client, four watches and a health
//! prober per MemberCluster) and the MemberCluster status it writes.
//! May call the host API, [`crate::metrics`], and [`crate::records::queue`] to ask for reconciles.

mod registry;

pub use registry::{effective_topology, Health, Member, Registry, SliceIndex, TOPOLOGY_CONDITION};
