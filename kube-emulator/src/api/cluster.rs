//! What every request handler reads of its cluster: the store, the tokens
//! and the authenticators added, the proxies served, fault switches and
//! the request log; below the handler that routes requests.

use std::sync::Arc;
use std::time::Duration;

use crate::api::extensions::{Proxy, TokenAuthenticator};
use crate::api::faults::Faults;
use crate::api::request_log::RequestLog;
use crate::store::Store;

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
