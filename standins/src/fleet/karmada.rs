//! Karmada's cluster proxy, as karmada-aggregated-apiserver serves it:
//! `/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy/<path>` forwards
//! the request to member NAME's API server, found from the `Cluster`
//! object in this emulator (`spec.apiEndpoint`, `spec.secretRef` →
//! Secret keys `token` and `caBundle`, raw PEM), with that token. Served
//! only when a `clusters.cluster.karmada.io` CRD is registered, so an
//! emulator can stand in for a Karmada control plane with pull-mode
//! members. Responses (watch streams too) are streamed back as they come.

use std::sync::Arc;

use base64::Engine;
use fedns_kube_emulator::{ApiError, Body, Proxy, ProxyPath, Store};
use futures::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;

use super::forward::{endpoint_authority, forward_to, Target};

/// Karmada's cluster proxy on an emulator standing in for a
/// karmada-apiserver ([`fedns_kube_emulator::Emulator::serve_proxy`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct KarmadaClusterProxy;

impl Proxy for KarmadaClusterProxy {
    fn path(&self) -> ProxyPath {
        ProxyPath {
            group: "cluster.karmada.io",
            version: "v1alpha1",
            resource: "clusters",
            subresource: &["proxy"],
        }
    }

    /// Forwards `request` to member `name`'s API server at `/<rest>`.
    fn forward(
        &self,
        store: Arc<Store>,
        name: String,
        rest: Vec<String>,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<Body>, ApiError>> {
        Box::pin(async move {
            let target = target(&store, &name)?;
            forward_to(target, &name, &rest, request).await
        })
    }
}

fn target(store: &Store, name: &str) -> Result<Target, ApiError> {
    let info = store
        .resource("cluster.karmada.io", "v1alpha1", "clusters")
        .ok_or_else(|| ApiError::no_route("/apis/cluster.karmada.io/v1alpha1/clusters"))?;
    let object = store.get(&info, None, name)?;
    let endpoint = object["spec"]["apiEndpoint"].as_str().unwrap_or_default();
    let (authority, host) = endpoint_authority(name, endpoint)?;
    let reference = &object["spec"]["secretRef"];
    let secrets = store
        .resource("", "v1", "secrets")
        .ok_or_else(|| ApiError::internal("secrets are not served"))?;
    let secret = store
        .get(
            &secrets,
            Some(reference["namespace"].as_str().unwrap_or_default()),
            reference["name"].as_str().unwrap_or_default(),
        )
        .map_err(|_| ApiError::unavailable(format!("cluster {name}: the Secret of spec.secretRef is missing")))?;
    let decode = |key: &str| -> Option<Vec<u8>> {
        secret["data"][key]
            .as_str()
            .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
    };
    let token = decode("token")
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| ApiError::unavailable(format!("cluster {name}: its Secret has no key token")))?;
    let ca_pem = decode("caBundle")
        .ok_or_else(|| ApiError::unavailable(format!("cluster {name}: its Secret has no key caBundle")))?;
    Ok(Target {
        authority,
        host,
        token: token.trim().to_owned(),
        ca_pem,
    })
}
