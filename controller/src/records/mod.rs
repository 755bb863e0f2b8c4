//! DNS records: one reconciler per kind (ServiceDNSRecord, IngressDNSRecord,
//! RouteDNSRecord)
//! sharing a [`RecordContext`], fed by the work queue ([`crate::queue`]), writing the
//! DNSEndpoints the [`builder`] makes. May read [`crate::members`] and call
//! the host API and [`crate::metrics`].

pub mod auto;
pub mod backends;
pub mod builder;
mod context;
pub mod domain_fields;
pub mod explain;
pub mod gateway;
mod health;
mod ingress;
mod model;
pub mod object_size;
pub mod prefix;
pub mod published;
pub mod resolver;
mod route;
pub mod routing;
mod schedule;
mod service;
mod status;
mod worker;

pub use context::{RecordContext, FIELD_MANAGER};
pub use published::PublishedShards;
pub use route::{route_problem, ATTACHED};
pub use status::INPUT_VALID;
pub use worker::run_workers;
