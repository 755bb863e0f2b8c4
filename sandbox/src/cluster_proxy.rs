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
use bytes::Bytes;
use futures::StreamExt;
use http::{header, Request, Response, Uri};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::cluster::{Body, Cluster, MAX_BODY};
use crate::status::ApiError;

/// Where and how to reach one member: `host:port`, the host for TLS,
/// its bearer token and CA bundle (PEM).
pub(crate) struct Target {
    pub(crate) authority: String,
    pub(crate) host: String,
    pub(crate) token: String,
    pub(crate) ca_pem: Vec<u8>,
}

/// `host:port` (443 by default) and the bare host of an API endpoint
/// (`https://host:port`, or `host:port` without a scheme).
pub(crate) fn endpoint_authority(name: &str, endpoint: &str) -> Result<(String, String), ApiError> {
    let uri: Uri = if endpoint.contains("://") {
        endpoint.parse()
    } else {
        format!("https://{endpoint}").parse()
    }
    .map_err(|_| ApiError::unavailable(format!("cluster {name}: API endpoint {endpoint:?} is not a URL")))?;
    let authority = uri
        .authority()
        .map(|a| a.to_string())
        .ok_or_else(|| ApiError::unavailable(format!("cluster {name}: API endpoint {endpoint:?} has no host")))?;
    let host = uri.host().unwrap_or_default().trim_matches(['[', ']']).to_owned();
    let authority = if uri.port().is_some() {
        authority
    } else {
        format!("{authority}:443")
    };
    Ok((authority, host))
}

fn target(cluster: &Cluster, name: &str) -> Result<Target, ApiError> {
    let store = &cluster.store;
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

/// Forwards `request` to member `name`'s API server at `/<rest>`.
pub async fn forward(
    cluster: &Arc<Cluster>,
    name: &str,
    rest: &[&str],
    request: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let target = target(cluster, name)?;
    forward_to(target, name, rest, request).await
}

/// Forwards `request` to `target` at `/<rest>` with the target's token;
/// only the request's content type and accept headers go along.
pub(crate) async fn forward_to(
    target: Target,
    name: &str,
    rest: &[&str],
    request: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let unavailable =
        |what: &str, e: &dyn std::fmt::Display| ApiError::unavailable(format!("cluster {name}: {what}: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&target.ca_pem) {
        let cert = cert.map_err(|e| unavailable("caBundle is not PEM", &e))?;
        roots.add(cert).map_err(|e| unavailable("caBundle", &e))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| unavailable("TLS", &e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server_name = ServerName::try_from(target.host.clone()).map_err(|e| unavailable("server name", &e))?;
    let tcp = tokio::net::TcpStream::connect(&target.authority)
        .await
        .map_err(|e| unavailable("connect", &e))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| unavailable("TLS handshake", &e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| unavailable("HTTP handshake", &e))?;
    tokio::spawn(connection);

    let (parts, body) = request.into_parts();
    let body = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|_| ApiError::too_large(MAX_BODY))?
        .to_bytes();
    let mut path = format!("/{}", rest.join("/"));
    if let Some(query) = parts.uri.query() {
        path = format!("{path}?{query}");
    }
    let mut builder = Request::builder()
        .method(parts.method)
        .uri(path)
        .header(header::HOST, &target.authority)
        .header(header::AUTHORIZATION, format!("Bearer {}", target.token));
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = parts.headers.get(&name) {
            builder = builder.header(name, value);
        }
    }
    let upstream = builder
        .body(Full::new(body))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let response = sender
        .send_request(upstream)
        .await
        .map_err(|e| unavailable("request", &e))?;
    let (parts, body) = response.into_parts();
    // Stream the member's answer back; a broken upstream ends the stream.
    let stream = body
        .into_data_stream()
        .take_while(|chunk| futures::future::ready(chunk.is_ok()))
        .filter_map(|chunk| futures::future::ready(chunk.ok().map(|b: Bytes| Ok(Frame::data(b)))));
    Ok(Response::from_parts(parts, BodyExt::boxed(StreamBody::new(stream))))
}
