//! Forwarding one request to a member's API server, shared by the Karmada
//! and Clusternet proxies: TLS with the member's CA, the member's bearer
//! token, the request's body (at most [`MAX_BODY`] octets), content type
//! and accept headers; the answer (watch streams too) streamed back.

use std::sync::Arc;

use bytes::Bytes;
use fedns_kube_emulator::{ApiError, Body, MAX_BODY};
use futures::StreamExt;
use http::{header, Request, Response, Uri};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// Where and how to reach one member: `host:port`, the host for TLS,
/// its bearer token and CA bundle (PEM).
pub(super) struct Target {
    pub(super) authority: String,
    pub(super) host: String,
    pub(super) token: String,
    pub(super) ca_pem: Vec<u8>,
}

/// `host:port` (443 by default) and the bare host of an API endpoint
/// (`https://host:port`, or `host:port` without a scheme).
pub(super) fn endpoint_authority(name: &str, endpoint: &str) -> Result<(String, String), ApiError> {
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

/// Forwards `request` to `target` at `/<rest>` with the target's token;
/// only the request's content type and accept headers go along.
pub(super) async fn forward_to(
    target: Target,
    name: &str,
    rest: &[String],
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
