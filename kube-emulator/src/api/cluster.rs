//! What every request handler reads of its cluster (the store, the token,
//! fault switches), below the request handling (`api`) and the proxies
//! that forward to other clusters, which `api` calls.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

use crate::api::extensions::{Proxy, TokenAuthenticator};
use crate::api::faults::Faults;
use crate::api::request_log::RequestLog;
use crate::store::Store;

/// Response body: a whole JSON document or a watch stream.
pub type Body = BoxBody<Bytes, Infallible>;

/// Largest request body, in octets (kube-apiserver's default is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// What a request handler needs of its cluster.
pub struct Cluster {
    /// The objects.
    pub store: Arc<Store>,
    /// The bearer token every request must carry.
    pub token: String,
    /// Further bearer tokens accepted (a ServiceAccount's, say), added by
    /// [`crate::Emulator::accept_token`].
    pub extra_tokens: std::sync::RwLock<Vec<String>>,
    /// Authenticators for tokens that are none of the above, in the order
    /// added ([`crate::Emulator::add_token_authenticator`]).
    pub authenticators: std::sync::RwLock<Vec<Arc<dyn TokenAuthenticator>>>,
    /// Proxy subresources served on other systems' behalf
    /// ([`crate::Emulator::serve_proxy`]).
    pub proxies: std::sync::RwLock<Vec<Arc<dyn Proxy>>>,
    /// Fault switches.
    pub faults: Faults,
    /// `host:port` for discovery documents.
    pub server_address: String,
    /// Interval of watch BOOKMARK events.
    pub bookmark_interval: Duration,
    /// The Kubernetes version reported by `/version`.
    pub version: (u32, u32),
    /// Requests received, while recording.
    pub requests: RequestLog,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server_address", &self.server_address)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}
