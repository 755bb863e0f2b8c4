//! DNS records: the ServiceDNSRecord and IngressDNSRecord reconcilers, the
//! DNSEndpoint [`builder`], their work [`queue`] and the load balancer host
//! name [`resolver`]. May read [`crate::members`] and call the host API and [`crate::metrics`].

pub mod builder;
mod context;
pub mod queue;
pub mod resolver;

pub use context::{run_workers, RecordContext, FIELD_MANAGER, INPUT_VALID};
