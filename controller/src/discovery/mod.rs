//! Cross-cluster service discovery inside the member clusters
//! (docs/discovery.md): a pod resolving
//! `nginx.ns.myfed` (through its search path,
//! `nginx.ns.myfed.svc.cluster.local`) gets its own cluster's Service when
//! that has a ready endpoint, else a CNAME chain to the nearest healthy
//! cluster's federated name, answered by a member-side replica of the
//! embedded DNS server to which the member's stock cluster DNS forwards
//! one domain.
//!
//! | module | job |
//! |---|---|
//! | [`answer`] | the discovery zones, computed from host and member inputs (pure) |
//! | [`ownership`] | who may hold a discovery name: `allowedNamespaces`, service names, the oldest claim |
//! | [`local`] | the member's Services and their readiness, as the answer reads them |
//! | [`explain`] | what a pod in a member gets for a name, and why (`fedns explain --from-cluster`) |
//! | [`replica`] | the watches and the loop feeding the embedded sink |
//! | [`state_file`] | the last host-side state on disk (static stability) |
//! | [`forward`] | the CoreDNS / kube-dns / dnsmasq forwarding configuration |
//! | [`metrics`] | per-member answer counts |

pub mod answer;
pub mod explain;
pub mod forward;
pub mod local;
pub mod member_side;
pub mod metrics;
pub mod ownership;
pub mod replica;
pub mod state_file;
