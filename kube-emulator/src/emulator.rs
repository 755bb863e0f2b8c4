//! One emulated cluster: HTTPS on a loopback port with a bearer token,
//! a kubeconfig for it, and fault injection.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::api::extensions::{Proxy, TokenAuthenticator};
use crate::api::faults::Faults;
use crate::api::request_log::{LoggedRequest, RequestLog};
use crate::api::{self, Cluster};
use crate::store::Store;
use fedns_loopback::tls;

/// Settings of one emulator.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Cluster name (kubeconfig cluster/context/user name).
    pub name: String,
    /// Bearer token (None: a random one).
    pub token: Option<String>,
    /// Loopback port (None: a free one).
    pub port: Option<u16>,
    /// Watch events kept for resuming watches; older versions get 410.
    pub history_limit: usize,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Kubernetes version reported by `/version`, (major, minor).
    pub version: (u32, u32),
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            name: "emulated".into(),
            token: None,
            port: None,
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(5),
            version: (1, 33),
        }
    }
}

/// Why an emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// Binding the port failed.
    #[error("binding 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port.
        port: u16,
        /// The error.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating TLS certificates: {0}")]
    Tls(String),
    /// Writing the kubeconfig failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

struct Running {
    accept: JoinHandle<()>,
    /// Dropping this sender closes every open connection.
    _connections: watch::Sender<()>,
}

/// A running emulated cluster. Cheap to clone; all clones control the
/// same instance. Dropping the last clone does not stop the server: call
/// [`Emulator::stop`].
#[derive(Clone)]
pub struct Emulator {
    cluster: Arc<Cluster>,
    name: String,
    port: u16,
    ca_pem: String,
    acceptor: TlsAcceptor,
    running: Arc<Mutex<Option<Running>>>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("name", &self.name)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// Starts an emulator with default settings on a free loopback port.
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// See [`EmulatorError`].
    pub async fn start() -> Result<Emulator, EmulatorError> {
        Self::start_with(EmulatorConfig::default()).await
    }

    /// Starts an emulator with `config`.
    ///
    /// # Errors
    /// See [`EmulatorError`].
    pub async fn start_with(config: EmulatorConfig) -> Result<Emulator, EmulatorError> {
        let tls = tls::generate(&config.name).map_err(EmulatorError::Tls)?;
        let token = config
            .token
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
        let listener = bind(config.port.unwrap_or(0))?;
        let port = listener
            .local_addr()
            .map_err(|source| EmulatorError::Bind { port: 0, source })?
            .port();
        let cluster = Arc::new(Cluster {
            store: Store::new(config.history_limit),
            token,
            authenticators: std::sync::RwLock::new(Vec::new()),
            proxies: std::sync::RwLock::new(Vec::new()),
            extra_tokens: std::sync::RwLock::new(Vec::new()),
            faults: Faults::default(),
            server_address: format!("127.0.0.1:{port}"),
            bookmark_interval: config.bookmark_interval,
            version: config.version,
            requests: RequestLog::default(),
        });
        let emulator = Emulator {
            cluster,
            name: config.name,
            port,
            ca_pem: tls.ca_pem,
            acceptor: TlsAcceptor::from(tls.server_config),
            running: Arc::new(Mutex::new(None)),
        };
        emulator.serve(listener);
        tracing::info!(cluster = %emulator.name, url = %emulator.url(), "Kubernetes API emulator started");
        Ok(emulator)
    }

    fn serve(&self, listener: TcpListener) {
        let (connections, closed) = watch::channel(());
        let cluster = self.cluster.clone();
        let acceptor = self.acceptor.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let acceptor = acceptor.clone();
                let cluster = cluster.clone();
                let mut closed = closed.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |request| api::handle(cluster.clone(), request));
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = closed.changed() => {}
                    }
                });
            }
        });
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = Some(Running {
            accept,
            _connections: connections,
        });
    }

    /// The cluster name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The loopback address served.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The bearer token.
    pub fn token(&self) -> &str {
        &self.cluster.token
    }

    /// Accepts `token` as a bearer token from now on, beside
    /// [`Emulator::token`] (with the same rights: the emulator enforces no
    /// RBAC), as a real server accepts a ServiceAccount's token.
    pub fn accept_token(&self, token: &str) {
        self.cluster
            .extra_tokens
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(token.to_owned());
    }

    /// Accepts, from now on, the bearer tokens `authenticator` accepts
    /// among those it claims, beside [`Emulator::token`], as kube-apiserver
    /// with webhook token authentication (an EKS API server with
    /// aws-iam-authenticator, say). Authenticators added earlier are asked
    /// first.
    pub fn add_token_authenticator(&self, authenticator: Arc<dyn TokenAuthenticator>) {
        self.cluster
            .authenticators
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(authenticator);
    }

    /// Serves `proxy`'s paths from now on (a proxy already serving the same
    /// paths is replaced), as an aggregated API server beside a real one.
    pub fn serve_proxy(&self, proxy: Arc<dyn Proxy>) {
        let mut proxies = self
            .cluster
            .proxies
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        proxies.retain(|p| p.path() != proxy.path());
        proxies.push(proxy);
    }

    /// PEM of the CA that signed the server certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The objects, for in-process seeding and inspection.
    pub fn store(&self) -> &Arc<Store> {
        &self.cluster.store
    }

    /// A kubeconfig (YAML) for this cluster: server, CA data and token;
    /// context and user are named after the cluster.
    pub fn kubeconfig_yaml(&self) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes());
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.name, "cluster": {"server": self.url(), "certificate-authority-data": ca}}],
            "users": [{"name": self.name, "user": {"token": self.cluster.token}}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": self.name, "namespace": "default"}}],
            "current-context": self.name,
            "preferences": {},
        });
        serde_yaml_ng::to_string(&config).unwrap_or_default()
    }

    /// Writes [`Emulator::kubeconfig_yaml`] to `path` (mode 0600 on Unix).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), EmulatorError> {
        let write_error = |source| EmulatorError::Write {
            path: path.display().to_string(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error)?;
        }
        std::fs::write(path, self.kubeconfig_yaml()).map_err(write_error)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(write_error)?;
        }
        Ok(())
    }

    /// Is the API server accepting connections (not stopped)?
    pub fn is_running(&self) -> bool {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Stops serving: the port refuses connections and open connections
    /// (watches included) are closed. Data is kept.
    pub fn stop(&self) {
        if let Some(running) = self.running.lock().unwrap_or_else(|e| e.into_inner()).take() {
            running.accept.abort();
            tracing::info!(cluster = %self.name, "Kubernetes API emulator stopped");
        }
    }

    /// Serves again on the same port, with the same data.
    ///
    /// # Errors
    /// The port cannot be bound again.
    pub async fn resume(&self) -> Result<(), EmulatorError> {
        if self.is_running() {
            return Ok(());
        }
        // The old listener closes asynchronously after abort: retry briefly.
        let mut attempt = 0;
        let listener = loop {
            match bind(self.port) {
                Ok(listener) => break listener,
                Err(e) if attempt < 50 => {
                    attempt += 1;
                    tracing::debug!(error = %e, "port not free yet");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e),
            }
        };
        self.serve(listener);
        tracing::info!(cluster = %self.name, "Kubernetes API emulator resumed");
        Ok(())
    }

    /// While `true`, requests are accepted but never answered.
    pub fn set_hang(&self, hang: bool) {
        self.cluster.faults.hang.send_replace(hang);
    }

    /// Fraction of requests (0.0–1.0) answered 503 ServiceUnavailable.
    pub fn set_error_rate(&self, rate: f64) {
        let ppm = (rate.clamp(0.0, 1.0) * 1_000_000.0) as u64;
        self.cluster.faults.error_ppm.store(ppm, Ordering::Relaxed);
    }

    /// Latency added to every request.
    pub fn set_latency(&self, latency: Duration) {
        self.cluster
            .faults
            .latency_us
            .store(latency.as_micros().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// Starts (`true`) or stops and clears (`false`) logging the requests
    /// this emulator receives; off at start.
    pub fn record_requests(&self, on: bool) {
        self.cluster.requests.set_recording(on);
    }

    /// The requests received while recording, oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.cluster.requests.snapshot()
    }

    /// Ends every open watch stream now (clients must resume).
    pub fn drop_watches(&self) {
        self.cluster.faults.watch_epoch.send_modify(|e| *e += 1);
    }
}

fn bind(port: u16) -> Result<TcpListener, EmulatorError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let bind_error = |source| EmulatorError::Bind { port, source };
    let socket = TcpSocket::new_v4().map_err(bind_error)?;
    socket.set_reuseaddr(true).map_err(bind_error)?;
    socket.bind(addr).map_err(bind_error)?;
    socket.listen(1024).map_err(bind_error)
}
