//! What other systems add to an emulated API server, without the emulator
//! knowing them: proxy subresources served beside the API's own paths
//! (Karmada's cluster proxy, Clusternet's socket proxy: in a real control
//! plane an aggregated API server answers them) and bearer-token
//! authenticators beside the cluster's own tokens (kube-apiserver's
//! webhook token authentication, e.g. aws-iam-authenticator for EKS).
//! The stand-ins that implement them live in `fedns-standins`.

use std::sync::Arc;

use futures::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;

use crate::api::body::Body;
use crate::status::ApiError;
use crate::store::Store;

/// Where a proxy subresource is served:
/// `/apis/{group}/{version}/{resource}/{name}/{subresource…}/<rest>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyPath {
    /// API group, e.g. `cluster.karmada.io`.
    pub group: &'static str,
    /// API version, e.g. `v1alpha1`.
    pub version: &'static str,
    /// The resource's plural, e.g. `clusters`.
    pub resource: &'static str,
    /// The path segments after the object's name, e.g. `["proxy"]` or
    /// `["proxy", "direct"]`.
    pub subresource: &'static [&'static str],
}

impl ProxyPath {
    /// The object's name and the rest of the path when `segments` (the
    /// request path split at `/`) is under this proxy.
    pub fn matches<'a>(&self, segments: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
        let [apis, group, version, resource, name, rest @ ..] = segments else {
            return None;
        };
        if *apis != "apis" || *group != self.group || *version != self.version || *resource != self.resource {
            return None;
        }
        let rest = rest.strip_prefix(self.subresource)?;
        Some((name, rest))
    }
}

/// A proxy subresource served by the emulator on another system's behalf
/// ([`crate::Emulator::serve_proxy`]).
pub trait Proxy: Send + Sync + 'static {
    /// The paths it serves.
    fn path(&self) -> ProxyPath;

    /// Answers one request for object `name`, `rest` the path after the
    /// subresource (already split at `/`), reading what it needs from
    /// `store` (the emulator's objects). Errors are answered as `Status`
    /// objects, as the API server's own.
    fn forward(
        &self,
        store: Arc<Store>,
        name: String,
        rest: Vec<String>,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<Body>, ApiError>>;
}

/// A bearer-token authenticator consulted for tokens that are none of the
/// cluster's own ([`crate::Emulator::add_token_authenticator`]).
pub trait TokenAuthenticator: Send + Sync + 'static {
    /// Whether `token` is of the kind this authenticator judges (e.g. its
    /// prefix); tokens no authenticator claims are refused at once.
    fn claims(&self, token: &str) -> bool;

    /// `Ok` when `token` is accepted, else the reason, which is logged
    /// (the client sees only 401 Unauthorized, as from a real server).
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

#[cfg(test)]
mod tests {
    use super::ProxyPath;

    const KARMADA: ProxyPath = ProxyPath {
        group: "cluster.karmada.io",
        version: "v1alpha1",
        resource: "clusters",
        subresource: &["proxy"],
    };
    const CLUSTERNET: ProxyPath = ProxyPath {
        group: "proxies.clusternet.io",
        version: "v1alpha1",
        resource: "sockets",
        subresource: &["proxy", "direct"],
    };

    fn split(path: &str) -> Vec<&str> {
        path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn a_proxy_path_takes_only_its_subresource() {
        let path = split("/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/services");
        let (name, rest) = KARMADA.matches(&path).unwrap();
        assert_eq!((name, rest), ("m1", &["api", "v1", "services"][..]));
        // The object itself, its status, another group or version: the API's own.
        for other in [
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1",
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1/status",
            "/apis/cluster.karmada.io/v1beta1/clusters/m1/proxy/api",
            "/api/v1/namespaces/default/services",
        ] {
            assert_eq!(KARMADA.matches(&split(other)), None, "{other}");
        }
        let path = split("/apis/proxies.clusternet.io/v1alpha1/sockets/id-1/proxy/direct/api/v1/nodes");
        assert_eq!(CLUSTERNET.matches(&path), Some(("id-1", &["api", "v1", "nodes"][..])));
        // `proxy` without `direct` is not Clusternet's path.
        let path = split("/apis/proxies.clusternet.io/v1alpha1/sockets/id-1/proxy/api");
        assert_eq!(CLUSTERNET.matches(&path), None);
    }
}
