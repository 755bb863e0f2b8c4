//! DNS records: one reconciler per kind (ServiceDNSRecord, IngressDNSRecord)
//! sharing a [`RecordContext`], fed by the work queue ([`crate::queue`]), writing the
//! DNSEndpoints the [`builder`] makes. May read [`crate::members`] and call
//! the host API and [`crate::metrics`].

pub mod auto;
pub mod backends;
pub mod builder;
mod context;
pub mod explain;
mod health;
mod ingress;
mod model;
pub mod object_size;
pub mod published;
pub mod resolver;
pub mod routing;
mod schedule;
mod service;
mod status;
mod worker;

pub use context::{RecordContext, FIELD_MANAGER};
pub use published::PublishedShards;
pub use status::INPUT_VALID;
pub use worker::run_workers;
