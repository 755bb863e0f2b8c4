//! The request path, above the store: what every handler reads of its
//! cluster ([`cluster`]: the store, tokens, fault switches, the request
//! log), the fault switches and the request log themselves, what other
//! systems add to a server ([`extensions`]: proxy subresources, token
//! authenticators), and the handler that routes each request
//! (`handler.rs`) to discovery, a proxy or the store's verbs.

pub mod body;
pub mod cluster;
pub mod extensions;
pub mod faults;
mod handler;
pub mod request_log;

pub use body::{Body, MAX_BODY};
pub use cluster::Cluster;
pub use handler::handle;
