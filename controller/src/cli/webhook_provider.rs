//! `fedns webhook-provider`: fedns's zones as an external-dns webhook
//! provider, so an unmodified external-dns in any member cluster
//! (`--provider=webhook`) publishes into the federation's DNS.
//!
//! It serves the protocol external-dns speaks (the same wire types as
//! fedns's own client, `fedns_providers::webhook::api`, read from
//! kubernetes-sigs/external-dns commit 2bf1bf8af: `provider/webhook/api/httpapi.go`
//! for routes and statuses) and keeps what one external-dns instance
//! publishes in one DNSEndpoint of the host cluster,
//! `<namespace>/external-dns-<owner>` (label
//! `multiclusterdns.fedns.io/webhook-owner`), which the controller
//! publishes like any other: the Domain's `allowedNamespaces`, the
//! one-name-one-owner rule across every DNSEndpoint (the oldest claim
//! keeps a name), health and policies of the embedded server.
//!
//! * `GET /` (and any other path): the Domains' zones as
//!   `{"include": [...]}` with the media type as `Content-Type`.
//! * `GET /records`: the DNSEndpoint's endpoints, as stored (external-dns's
//!   TXT registry records included, byte for byte, so it keeps owning them).
//! * `POST /adjustendpoints`: names lower-cased without the trailing dot;
//!   endpoints of a type fedns does not publish are left out (so
//!   external-dns does not try them again each cycle).
//! * `POST /records`: the changes applied to the DNSEndpoint (created,
//!   replaced with its resourceVersion, retried on a write conflict,
//!   deleted when empty), 204. Checked before anything is stored
//!   ([`admission`]): whatever the federation would then not serve is
//!   refused with 500 naming the rule or the holder (external-dns logs it
//!   and retries next interval; the protocol has no per-record refusal):
//!   a type fedns does not publish, a name in no Domain's zone, a
//!   namespace the Domain does not admit, another namespace's service
//!   name, a CNAME beside other data at one name, a name another
//!   DNSEndpoint (another instance's, or the federation's own records')
//!   claimed first. Kubernetes errors are 500 (a soft error to
//!   external-dns).
//! * `/metrics` on the health port: requests by path and status, refused
//!   changes by rule, endpoints held ([`metrics`]).
//! * Who may call ([`auth`], [`tls`]): on loopback (the default,
//!   `127.0.0.1:8888`: external-dns as a sidecar in the same pod, which
//!   sends no credentials) anyone in the pod. Any other address is refused
//!   at start unless callers are authenticated: `--token-file` (a bearer
//!   token on every request, compared in constant time, else 401) or
//!   `--tls-client-ca-file` (a client certificate on every connection).
//!   `--tls-cert-file` and `--tls-key-file` serve the protocol over TLS.
//! * Which DNSEndpoint is another instance's (in refusal messages): one
//!   in `--namespace` labelled as an instance's and named after it; a
//!   label elsewhere is any namespace's to write, so it counts for nothing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use fedns_api::{DNSEndpoint, Domain, Endpoint, ProviderSpecificProperty, RecordType};
use fedns_providers::plan::ownership::{is_registry_value, OWNERSHIP_RECORD_LABEL};
use fedns_providers::webhook::api::{Changes, Property, WireEndpoint, MEDIA_TYPE};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::Client;
use tokio::net::TcpListener;

use super::WebhookProviderArgs;

pub mod admission;
pub mod auth;
pub mod metrics;
pub mod tls;

use auth::BearerToken;
use metrics::WebhookMetrics;

/// Label naming the external-dns instance a DNSEndpoint is written for.
pub const OWNER_LABEL: &str = "multiclusterdns.fedns.io/webhook-owner";

/// Largest request body, octets (external-dns's default cap, 32 MiB).
const MAX_BODY: usize = 32 << 20;

/// Longest a TLS handshake may take before the connection is closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What one server needs.
#[derive(Clone)]
pub struct WebhookServer {
    /// Client of the host cluster.
    pub client: Client,
    /// Namespace of this instance's DNSEndpoint.
    pub namespace: String,
    /// This external-dns instance's name.
    pub owner: String,
    /// Namespace of the Domains.
    pub domain_namespace: String,
    /// Bearer token required on every protocol request, if any.
    pub token: Option<BearerToken>,
    /// What `/metrics` reports.
    pub metrics: WebhookMetrics,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("namespace", &self.namespace)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

fn media(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, MEDIA_TYPE)], body).into_response()
}

/// A provider error as external-dns's server helper reports it: 500 (a
/// soft error to external-dns), here with the reason as the body.
fn failed(why: String) -> Response {
    tracing::warn!("webhook provider: {why}");
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n")).into_response()
}

fn json_body<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut body = serde_json::to_vec(value).unwrap_or_default();
    body.push(b'\n');
    body
}

impl WebhookServer {
    /// The name of this instance's DNSEndpoint.
    pub fn object_name(&self) -> String {
        format!("external-dns-{}", self.owner)
    }

    fn authorised(&self, headers: &HeaderMap) -> bool {
        self.token.as_ref().is_none_or(|token| token.authorises(headers))
    }

    async fn stored(&self) -> Result<Option<DNSEndpoint>, kube::Error> {
        Api::<DNSEndpoint>::namespaced(self.client.clone(), &self.namespace)
            .get_opt(&self.object_name())
            .await
    }

    async fn write(&self, endpoints: Vec<Endpoint>) -> Result<(), kube::Error> {
        let api: Api<DNSEndpoint> = Api::namespaced(self.client.clone(), &self.namespace);
        let name = self.object_name();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = match api.get_opt(&name).await? {
                None if endpoints.is_empty() => return Ok(()),
                None => {
                    let object = DNSEndpoint {
                        metadata: ObjectMeta {
                            name: Some(name.clone()),
                            namespace: Some(self.namespace.clone()),
                            labels: Some(BTreeMap::from([(OWNER_LABEL.to_owned(), self.owner.clone())])),
                            ..ObjectMeta::default()
                        },
                        spec: fedns_api::DNSEndpointSpec {
                            endpoints: endpoints.clone(),
                        },
                        status: None,
                    };
                    api.create(&PostParams::default(), &object).await.map(|_| ())
                }
                Some(_) if endpoints.is_empty() => api.delete(&name, &Default::default()).await.map(|_| ()),
                Some(mut object) => {
                    object.spec.endpoints = endpoints.clone();
                    api.replace(&name, &PostParams::default(), &object).await.map(|_| ())
                }
            };
            match result {
                Err(kube::Error::Api(e)) if e.code == 409 && attempt < 5 => continue,
                other => return other,
            }
        }
    }
}

/// A name as external-dns compares it: lower case, no trailing dot.
pub(crate) fn normal(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn key_of(e: &WireEndpoint) -> (String, String, String) {
    e.key()
}

fn wire_of(e: &Endpoint) -> WireEndpoint {
    WireEndpoint {
        dns_name: e.dns_name.clone(),
        targets: e.targets.clone(),
        record_type: e.record_type.as_str().to_owned(),
        set_identifier: e.set_identifier.clone(),
        record_ttl: e.record_ttl.unwrap_or(0),
        labels: {
            let mut labels = e.labels.clone();
            labels.remove(OWNERSHIP_RECORD_LABEL);
            labels
        },
        provider_specific: e
            .provider_specific
            .iter()
            .map(|p| Property {
                name: p.name.clone(),
                value: p.value.clone(),
            })
            .collect(),
    }
}

/// An endpoint as fedns stores it; None for a type fedns does not publish.
fn endpoint_of(e: &WireEndpoint) -> Option<Endpoint> {
    Some(Endpoint {
        dns_name: e.dns_name.clone(),
        targets: e.targets.clone(),
        record_type: RecordType::from_mnemonic(&e.record_type.to_ascii_uppercase())?,
        set_identifier: e.set_identifier.clone(),
        record_ttl: (e.record_ttl > 0).then_some(e.record_ttl),
        labels: {
            // external-dns's TXT registry records are kept for it to read
            // back, never published.
            let mut labels = e.labels.clone();
            let registry = e.record_type.eq_ignore_ascii_case("TXT")
                && e.targets
                    .iter()
                    .any(|t| is_registry_value(&fedns_providers::plan::txt::concatenated(t)));
            if registry {
                labels.insert(OWNERSHIP_RECORD_LABEL.to_owned(), "true".to_owned());
            }
            labels
        },
        provider_specific: e
            .provider_specific
            .iter()
            .map(|p| ProviderSpecificProperty {
                name: p.name.clone(),
                value: p.value.clone(),
            })
            .collect(),
    })
}

async fn negotiate(State(server): State<Arc<WebhookServer>>, headers: HeaderMap) -> Response {
    if !server.authorised(&headers) {
        return (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
    }
    let domains: Api<Domain> = Api::namespaced(server.client.clone(), &server.domain_namespace);
    match domains.list(&ListParams::default()).await {
        Ok(list) => {
            let mut include: Vec<String> = list.items.iter().map(|d| normal(&d.spec.domain)).collect();
            include.sort();
            include.dedup();
            media(StatusCode::OK, json_body(&serde_json::json!({ "include": include })))
        }
        Err(e) => failed(format!("listing Domains in {}: {e}", server.domain_namespace)),
    }
}

async fn records(State(server): State<Arc<WebhookServer>>, headers: HeaderMap) -> Response {
    if !server.authorised(&headers) {
        return (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
    }
    match server.stored().await {
        Ok(object) => {
            let endpoints: Vec<WireEndpoint> = object
                .map(|o| o.spec.endpoints.iter().map(wire_of).collect())
                .unwrap_or_default();
            server.metrics.set_records(endpoints.len());
            media(StatusCode::OK, json_body(&endpoints))
        }
        Err(e) => failed(format!(
            "reading DNSEndpoint {}/{}: {e}",
            server.namespace,
            server.object_name()
        )),
    }
}

async fn adjust(State(server): State<Arc<WebhookServer>>, headers: HeaderMap, body: Bytes) -> Response {
    if !server.authorised(&headers) {
        return (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
    }
    let Ok(endpoints) = serde_json::from_slice::<Option<Vec<WireEndpoint>>>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not a JSON array of endpoints\n").into_response();
    };
    let adjusted: Vec<WireEndpoint> = endpoints
        .unwrap_or_default()
        .into_iter()
        .filter(|e| RecordType::from_mnemonic(&e.record_type.to_ascii_uppercase()).is_some())
        .map(|mut e| {
            e.dns_name = normal(&e.dns_name);
            e.record_type = e.record_type.to_ascii_uppercase();
            e
        })
        .collect();
    media(StatusCode::OK, json_body(&adjusted))
}

async fn apply(State(server): State<Arc<WebhookServer>>, headers: HeaderMap, body: Bytes) -> Response {
    if !server.authorised(&headers) {
        return (StatusCode::UNAUTHORIZED, "a bearer token is required\n").into_response();
    }
    let Ok(changes) = serde_json::from_slice::<Changes>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not external-dns changes\n").into_response();
    };
    if changes.update_old.len() != changes.update_new.len() {
        return (StatusCode::BAD_REQUEST, "updateOld and updateNew differ in length\n").into_response();
    }
    let current = match server.stored().await {
        Ok(object) => object.map(|o| o.spec.endpoints).unwrap_or_default(),
        Err(e) => {
            return failed(format!(
                "reading DNSEndpoint {}/{}: {e}",
                server.namespace,
                server.object_name()
            ))
        }
    };
    let mut by_key: BTreeMap<(String, String, String), WireEndpoint> =
        current.iter().map(wire_of).map(|e| (key_of(&e), e)).collect();
    for gone in changes.update_old.iter().chain(&changes.delete) {
        by_key.remove(&key_of(gone));
    }
    for new in changes.create.iter().chain(&changes.update_new) {
        by_key.insert(key_of(new), new.clone());
    }
    let changed: Vec<&WireEndpoint> = changes.create.iter().chain(&changes.update_new).collect();
    let result: Vec<&WireEndpoint> = by_key.values().collect();
    match admission::refusal(&server, &changed, &result).await {
        Ok(None) => {}
        Ok(Some(refusal)) => {
            server.metrics.refused(refusal.rule);
            return failed(refusal.message);
        }
        Err(why) => return failed(why),
    }
    let endpoints: Vec<Endpoint> = by_key.values().filter_map(endpoint_of).collect();
    let count = endpoints.len();
    match server.write(endpoints).await {
        Ok(()) => {
            server.metrics.set_records(count);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => failed(format!(
            "writing DNSEndpoint {}/{}: {e}",
            server.namespace,
            server.object_name()
        )),
    }
}

/// The protocol's routes, counted into the server's metrics.
fn router(server: WebhookServer) -> Router {
    let metrics = server.metrics.clone();
    Router::new()
        .route("/records", get(records).post(apply))
        .route("/adjustendpoints", post(adjust))
        .fallback(negotiate)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let metrics = metrics.clone();
                async move {
                    let path = match request.uri().path() {
                        p @ ("/records" | "/adjustendpoints") => p.to_owned(),
                        _ => "/".to_owned(),
                    };
                    let method = request.method().as_str().to_owned();
                    let response = next.run(request).await;
                    metrics.request(&path, &method, response.status().as_u16());
                    response
                }
            },
        ))
        .with_state(Arc::new(server))
}

/// Serves the protocol on `listener` in the background, in plain HTTP
/// (whoever binds `listener` decides who can reach it: see
/// [`auth::check_exposure`]).
pub fn serve(listener: TcpListener, server: WebhookServer) -> tokio::task::JoinHandle<()> {
    let app = router(server);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "webhook provider stopped");
        }
    })
}

/// Serves the protocol on `listener` in the background over TLS with
/// `config` ([`tls::server_config`]): HTTP/1.1 on each connection whose
/// handshake completes within 10 s (a client without the certificate
/// mutual TLS requires fails it, and the connection is closed).
pub fn serve_tls(
    listener: TcpListener,
    server: WebhookServer,
    config: Arc<rustls::ServerConfig>,
) -> tokio::task::JoinHandle<()> {
    let app = router(server);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(error = %e, "webhook provider: accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "webhook provider: TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "webhook provider: TLS handshake timed out");
                        return;
                    }
                };
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let mut app = app.clone();
                    async move { tower::Service::call(&mut app, request).await }
                });
                if let Err(e) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(%peer, error = %e, "webhook provider: connection ended");
                }
            });
        }
    })
}

/// Reads the bearer token in `path` (surrounding white space trimmed).
///
/// # Errors
/// The file cannot be read or holds only white space.
fn read_token(path: &std::path::Path) -> anyhow::Result<BearerToken> {
    let token = std::fs::read_to_string(path).with_context(|| format!("reading the token file {}", path.display()))?;
    let token = token.trim();
    // An empty token would refuse every request, silently.
    anyhow::ensure!(
        !token.is_empty(),
        "the token file {} is empty: put the bearer token external-dns's proxy sends in it",
        path.display()
    );
    Ok(BearerToken::new(token))
}

/// `fedns webhook-provider`.
///
/// # Errors
/// `--listen` is not loopback and neither `--token-file` nor
/// `--tls-client-ca-file` is set; a token, certificate, key or CA file is
/// unreadable or unusable; the host cluster is unreachable; or an address
/// cannot be bound. All but the last two are found before anything is
/// contacted or bound.
pub async fn run(args: &WebhookProviderArgs) -> anyhow::Result<()> {
    auth::check_exposure(
        args.listen,
        args.token_file.is_some(),
        args.tls_client_ca_file.is_some(),
    )
    .map_err(anyhow::Error::msg)?;
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    let tls = match (&args.tls_cert_file, &args.tls_key_file) {
        (Some(cert), Some(key)) => {
            let files = tls::CertificateFiles::load(cert, key)?;
            let config = tls::server_config(Arc::clone(&files), args.tls_client_ca_file.as_deref())?;
            Some((files, config))
        }
        (None, None) => None,
        // clap requires both; said again for callers that build the args.
        _ => anyhow::bail!("--tls-cert-file and --tls-key-file go together"),
    };
    anyhow::ensure!(
        tls.is_some() || args.tls_client_ca_file.is_none(),
        "--tls-client-ca-file needs --tls-cert-file and --tls-key-file"
    );
    if token.is_some() && tls.is_none() && !auth::is_loopback(args.listen.ip()) {
        tracing::warn!(
            listen = %args.listen,
            "webhook provider: the bearer token crosses the network in clear text; set --tls-cert-file and --tls-key-file"
        );
    }
    let client = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let metrics = WebhookMetrics::default();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let state = crate::http::HttpState::new(registry);
    crate::http::serve(args.health_listen, state.clone())
        .await
        .with_context(|| format!("binding {} (/healthz, /metrics)", args.health_listen))?;
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {} (the webhook protocol)", args.listen))?;
    let bound: SocketAddr = listener.local_addr()?;
    let server = WebhookServer {
        client,
        namespace: args.namespace.clone(),
        owner: args.owner.clone(),
        domain_namespace: args.domain_namespace.clone(),
        token,
        metrics,
    };
    let _watch = match tls {
        Some((files, config)) => {
            serve_tls(listener, server, config);
            Some(files.watch(tls::RELOAD_EVERY))
        }
        None => {
            serve(listener, server);
            None
        }
    };
    state.set_ready(true);
    tracing::info!(
        addr = %bound,
        namespace = %args.namespace,
        owner = %args.owner,
        tls = args.tls_cert_file.is_some(),
        client_certificates = args.tls_client_ca_file.is_some(),
        token = args.token_file.is_some(),
        "webhook provider listening"
    );
    crate::http::shutdown_signal().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A client of a cluster that is never called (the requests here do
    /// not reach Kubernetes).
    fn offline_client() -> Client {
        Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap()
    }

    /// POST /adjustendpoints with `authorization`, on one connection: the status.
    async fn adjust_status(addr: SocketAddr, authorization: Option<&str>) -> u16 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let header = authorization
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /adjustendpoints HTTP/1.1\r\nHost: localhost\r\n{header}Content-Type: {MEDIA_TYPE}\r\n\
             Content-Length: 2\r\nConnection: close\r\n\r\n[]"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
    }

    #[tokio::test]
    async fn only_the_token_passes() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        serve(
            listener,
            WebhookServer {
                client: offline_client(),
                namespace: "team-a".into(),
                owner: "cluster-a".into(),
                domain_namespace: "fedns-system".into(),
                token: Some(BearerToken::new("s3cret-token")),
                metrics: WebhookMetrics::default(),
            },
        );
        assert_eq!(adjust_status(addr, Some("Bearer s3cret-token")).await, 200);
        for wrong in [
            None,
            Some("Bearer s3cret-tokem"),
            Some("Bearer s3cret"),
            Some("Bearer s3cret-token-and-more"),
            Some("Basic s3cret-token"),
        ] {
            assert_eq!(adjust_status(addr, wrong).await, 401, "{wrong:?}");
        }
    }

    fn args(listen: &str) -> WebhookProviderArgs {
        WebhookProviderArgs {
            kubeconfig: Some("/nonexistent/fedns-test.kubeconfig".into()),
            namespace: "team-a".into(),
            owner: "cluster-a".into(),
            domain_namespace: "fedns-system".into(),
            listen: listen.parse().unwrap(),
            health_listen: "127.0.0.1:0".parse().unwrap(),
            token_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
        }
    }

    #[tokio::test]
    async fn no_start_beyond_loopback_without_authentication() {
        for listen in ["0.0.0.0:0", "[::]:0"] {
            let refused = format!("{:#}", run(&args(listen)).await.unwrap_err());
            assert!(
                refused.contains("is not a loopback address")
                    && refused.contains("--token-file")
                    && refused.contains("--tls-client-ca-file"),
                "{listen}: {refused}"
            );
        }
        // Loopback gets past the check (to the kubeconfig, missing here).
        let later = format!("{:#}", run(&args("127.0.0.1:0")).await.unwrap_err());
        assert!(!later.contains("loopback"), "{later}");
    }
}
