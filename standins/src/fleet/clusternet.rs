//! Clusternet's socket proxy, as clusternet-hub serves it on the parent's
//! API server: `/apis/proxies.clusternet.io/v1alpha1/sockets/ID/proxy/direct/<path>`
//! forwards the request to the child whose `ManagedCluster` is labelled
//! `clusters.clusternet.io/cluster-id: ID`, at its `status.apiserverURL`,
//! with the child's token the caller passes as Clusternet's clients do
//! (impersonating `clusternet` with extra `clusternet-token`, header
//! `Impersonate-Extra-Clusternet-Token`). The child's CA is read from the
//! `child-cluster-deployer` Secret (key `ca.crt`) beside the ManagedCluster;
//! the real hub tunnels through the agent's websocket instead. Served only
//! when a `managedclusters.clusters.clusternet.io` CRD is registered.

use std::sync::Arc;

use base64::Engine;
use fedns_kube_emulator::{ApiError, Body, Filter, Proxy, ProxyPath, Store};
use futures::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;

use super::forward::{endpoint_authority, forward_to, Target};

/// The header carrying the child's token (`Impersonate-Extra-` + `clusternet-token`).
const TOKEN_HEADER: &str = "impersonate-extra-clusternet-token";

fn target(store: &Store, id: &str, token: String) -> Result<Target, ApiError> {
    let info = store
        .resource("clusters.clusternet.io", "v1beta1", "managedclusters")
        .ok_or_else(|| ApiError::no_route("/apis/clusters.clusternet.io/v1beta1/managedclusters"))?;
    let list = store.list(&info, &Filter::default(), None, None)?;
    let managed = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["metadata"]["labels"]["clusters.clusternet.io/cluster-id"].as_str() == Some(id))
        .ok_or_else(|| ApiError::bad_request(format!("no cluster id is {id}")))?;
    let endpoint = managed["status"]["apiserverURL"].as_str().unwrap_or_default();
    if endpoint.is_empty() {
        return Err(ApiError::unavailable(format!(
            "cannot retrieve valid apiserver url for cluster {id}"
        )));
    }
    let (authority, host) = endpoint_authority(id, endpoint)?;
    let namespace = managed["metadata"]["namespace"].as_str().unwrap_or_default();
    let secrets = store
        .resource("", "v1", "secrets")
        .ok_or_else(|| ApiError::internal("secrets are not served"))?;
    let secret = store
        .get(&secrets, Some(namespace), "child-cluster-deployer")
        .map_err(|_| {
            ApiError::unavailable(format!(
                "cluster {id}: Secret {namespace}/child-cluster-deployer is missing"
            ))
        })?;
    let ca_pem = secret["data"]["ca.crt"]
        .as_str()
        .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
        .ok_or_else(|| ApiError::unavailable(format!("cluster {id}: its Secret has no key ca.crt")))?;
    Ok(Target {
        authority,
        host,
        token,
        ca_pem,
    })
}

/// Clusternet's socket proxy on an emulator standing in for a parent
/// cluster with clusternet-hub ([`fedns_kube_emulator::Emulator::serve_proxy`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusternetSocketProxy;

impl Proxy for ClusternetSocketProxy {
    fn path(&self) -> ProxyPath {
        ProxyPath {
            group: "proxies.clusternet.io",
            version: "v1alpha1",
            resource: "sockets",
            subresource: &["proxy", "direct"],
        }
    }

    /// Forwards `request` to child `id`'s API server at `/<rest>`.
    fn forward(
        &self,
        store: Arc<Store>,
        id: String,
        rest: Vec<String>,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<Body>, ApiError>> {
        Box::pin(async move {
            let token = request
                .headers()
                .get(TOKEN_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    ApiError::unavailable(format!(
                        "cluster {id}: no child token (impersonate user clusternet with extra clusternet-token)"
                    ))
                })?;
            let target = target(&store, &id, token)?;
            forward_to(target, &id, &rest, request).await
        })
    }
}
