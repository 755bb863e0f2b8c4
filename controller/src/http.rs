//! The HTTP endpoint of every long-running subcommand: `/metrics`
//! (Prometheus text format), `/healthz` (the process runs) and `/readyz`
//! (it has something to serve); and the debug endpoint,
//! `/debug/explain?name=` (why each cluster is or is not behind a name;
//! the controller only). The debug endpoint shows every cluster's
//! addresses and health, so it has a listener of its own, on loopback by
//! default ([`debug_listener`]), apart from the metrics one scrapers reach.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// Shared state of the HTTP endpoint.
pub struct HttpState {
    /// Everything `/metrics` reports.
    pub registry: Registry,
    /// What `/readyz` reports (unless draining).
    pub ready: AtomicBool,
    /// Set on the shutdown signal: `/readyz` answers 503 from then on,
    /// whatever `ready` says.
    pub draining: AtomicBool,
    /// Answers `/debug/explain?name=NAME[&output=json]`; unset: 404.
    pub explain: std::sync::OnceLock<ExplainHook>,
}

/// Explains a name: (name, JSON output?) → the body.
pub type ExplainHook = Arc<dyn Fn(&str, bool) -> String + Send + Sync>;

impl std::fmt::Debug for HttpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpState")
            .field("ready", &self.ready)
            .field("draining", &self.draining)
            .field("explain", &self.explain.get().is_some())
            .finish_non_exhaustive()
    }
}

impl HttpState {
    /// Not ready until [`HttpState::set_ready`].
    pub fn new(registry: Registry) -> Arc<HttpState> {
        Arc::new(HttpState {
            registry,
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            explain: std::sync::OnceLock::new(),
        })
    }

    /// Marks the process ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }
}

async fn metrics(State(state): State<Arc<HttpState>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("encoding metrics failed: {e}\n"),
        ),
    }
}

#[derive(Debug, serde::Deserialize)]
struct ExplainQuery {
    name: String,
    #[serde(default)]
    output: Option<String>,
}

async fn explain(
    State(state): State<Arc<HttpState>>,
    axum::extract::Query(query): axum::extract::Query<ExplainQuery>,
) -> impl IntoResponse {
    let Some(hook) = state.explain.get() else {
        return (
            StatusCode::NOT_FOUND,
            "explain is served by `fedns controller` only\n".to_owned(),
        );
    };
    (
        StatusCode::OK,
        hook(&query.name, query.output.as_deref() == Some("json")),
    )
}

async fn readyz(State(state): State<Arc<HttpState>>) -> impl IntoResponse {
    if state.draining.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else if state.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

/// Where the debug endpoint listens, given `--debug-addr` (`debug`) and
/// the metrics listener's address: the given address; unset, the metrics
/// listener itself when that is on loopback (nothing beyond the machine
/// reaches either), else [`DEFAULT_DEBUG_ADDR`]. `None`: on the metrics
/// listener.
pub fn debug_listener(debug: Option<SocketAddr>, metrics: SocketAddr) -> Option<SocketAddr> {
    match debug {
        Some(addr) if addr == metrics => None,
        Some(addr) => Some(addr),
        None if metrics.ip().is_loopback() => None,
        None => Some(DEFAULT_DEBUG_ADDR),
    }
}

/// The debug endpoint's address when the metrics one is not on loopback:
/// `127.0.0.1:8081` (reach it with `kubectl port-forward`).
pub const DEFAULT_DEBUG_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8081);

/// Binds `addr` and serves the endpoint in the background, with the debug
/// endpoint too when `with_debug`. Returns the bound address (useful with
/// port 0).
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(addr: SocketAddr, state: Arc<HttpState>) -> std::io::Result<SocketAddr> {
    serve_with(addr, state, true).await
}

/// [`serve`], the debug endpoint included or not.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve_with(addr: SocketAddr, state: Arc<HttpState>, with_debug: bool) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let mut app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz));
    if with_debug {
        app = app.route("/debug/explain", get(explain));
    }
    let app = app.with_state(state);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "HTTP endpoint stopped");
        }
    });
    tracing::info!(addr = %bound, debug = with_debug, "HTTP endpoint (/metrics, /healthz, /readyz) listening");
    Ok(bound)
}

/// Binds `addr` and serves the debug endpoint alone (`/debug/explain`) in
/// the background. Returns the bound address.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve_debug(addr: SocketAddr, state: Arc<HttpState>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new().route("/debug/explain", get(explain)).with_state(state);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "debug endpoint stopped");
        }
    });
    if !bound.ip().is_loopback() {
        tracing::warn!(addr = %bound, "the debug endpoint (/debug/explain: every cluster's addresses and health) listens beyond loopback");
    }
    tracing::info!(addr = %bound, "debug endpoint (/debug/explain) listening");
    Ok(bound)
}

/// The drain after the shutdown signal of a DNS-serving process: `/readyz`
/// answers 503 at once, and the caller's DNS listeners stay open for
/// `drain`, so the removal of this pod's endpoint reaches kube-proxy on
/// every node (and load balancers' health checks) before queries stop
/// being answered. A second SIGTERM or Ctrl-C cuts the drain short.
/// `drain` zero: only `/readyz` changes.
pub async fn drain(state: &HttpState, drain: std::time::Duration) {
    state.draining.store(true, Ordering::Relaxed);
    if drain.is_zero() {
        return;
    }
    tracing::info!(
        seconds = drain.as_secs_f64(),
        "draining: /readyz answers 503, DNS still answered until the drain ends"
    );
    tokio::select! {
        () = tokio::time::sleep(drain) => tracing::info!("drain over; closing the DNS listeners"),
        () = shutdown_signal() => tracing::warn!("second shutdown signal: drain cut short"),
    }
}

/// Resolves when SIGTERM or SIGINT (Ctrl-C) arrives.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops this process");
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debug_endpoint_stays_on_loopback_unless_asked() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:9090".parse().unwrap();
        assert_eq!(debug_listener(None, any), Some(DEFAULT_DEBUG_ADDR));
        assert_eq!(debug_listener(None, local), None, "on the loopback metrics listener");
        assert_eq!(
            debug_listener(Some(any), any),
            None,
            "asked for on the metrics listener"
        );
        let chosen: SocketAddr = "127.0.0.1:9999".parse().unwrap();
        assert_eq!(debug_listener(Some(chosen), any), Some(chosen));
    }

    /// With the metrics listener beyond loopback (as deploy/ binds it),
    /// `/debug/explain` is not on it: 404 there, answered on the debug one.
    #[tokio::test]
    async fn explain_is_not_on_a_metrics_listener_beyond_loopback() {
        let state = HttpState::new(Registry::default());
        let _ = state
            .explain
            .set(Arc::new(|name: &str, _| format!("explained {name}\n")));
        let metrics = serve_with("127.0.0.1:0".parse().unwrap(), state.clone(), false)
            .await
            .unwrap();
        let debug = serve_debug("127.0.0.1:0".parse().unwrap(), state).await.unwrap();
        let get = |addr: SocketAddr, path: &'static str| async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            stream
                .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            stream.read_to_string(&mut out).await.unwrap();
            out
        };
        assert!(get(metrics, "/debug/explain?name=a").await.starts_with("HTTP/1.1 404"));
        assert!(get(metrics, "/metrics").await.starts_with("HTTP/1.1 200"));
        let answer = get(debug, "/debug/explain?name=a").await;
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("explained a"),
            "{answer}"
        );
        assert!(get(debug, "/metrics").await.starts_with("HTTP/1.1 404"));
    }
}
