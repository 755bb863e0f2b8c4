//! A stand-in for a load balancer: an HTTP (or HTTPS) responder on one
//! loopback address, so data-plane health probes have something real to
//! reach. It can be stopped and started again on the same address (a dead
//! load balancer), made to answer with another status, or to accept
//! connections and never answer (a hung backend). It can also refuse
//! clients by source address, as a firewall on one path would: connections
//! from them are closed unanswered, while every other client is served
//! (`fedns sandbox isolate`: one vantage point cut off).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// How the responder behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Answers every request with the configured status.
    Answer,
    /// Accepts connections and never answers.
    Hang,
}

#[derive(Debug)]
struct Shared {
    status: AtomicU16,
    hang: std::sync::atomic::AtomicBool,
    requests: AtomicUsize,
    open: AtomicUsize,
    most_open: AtomicUsize,
    /// Clients (source addresses) whose connections are closed unanswered.
    refused: Mutex<HashSet<IpAddr>>,
    /// The body of every answer.
    body: Mutex<Bytes>,
    /// A header every request must carry, else 403.
    required_header: Mutex<Option<(http::HeaderName, http::HeaderValue)>>,
}

impl Shared {
    fn refuses(&self, client: IpAddr) -> bool {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).contains(&client)
    }
}

/// One responder. Dropping it stops it.
#[derive(Debug)]
pub struct Responder {
    address: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    shared: Arc<Shared>,
    running: Mutex<Option<watch::Sender<()>>>,
}

impl Responder {
    /// Starts answering 200 on `address` (port 0: pick one), over TLS with
    /// `tls` when given.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(address: SocketAddr, tls: Option<Arc<rustls::ServerConfig>>) -> std::io::Result<Responder> {
        let listener = TcpListener::bind(address).await?;
        let responder = Responder {
            address: listener.local_addr()?,
            tls,
            shared: Arc::new(Shared {
                status: AtomicU16::new(200),
                hang: std::sync::atomic::AtomicBool::new(false),
                requests: AtomicUsize::new(0),
                open: AtomicUsize::new(0),
                most_open: AtomicUsize::new(0),
                refused: Mutex::new(HashSet::new()),
                body: Mutex::new(Bytes::from_static(b"fedns sandbox load balancer\n")),
                required_header: Mutex::new(None),
            }),
            running: Mutex::new(None),
        };
        responder.serve(listener);
        Ok(responder)
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Whether it is accepting connections.
    pub fn is_running(&self) -> bool {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Stops accepting and closes every open connection (a dead load
    /// balancer: connections are refused).
    pub fn stop(&self) {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Starts again on the same address.
    ///
    /// # Errors
    /// The address cannot be bound again.
    pub async fn resume(&self) -> std::io::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let listener = TcpListener::bind(self.address).await?;
        self.serve(listener);
        Ok(())
    }

    /// The HTTP status every request gets from now on.
    pub fn set_status(&self, status: u16) {
        self.shared.status.store(status, Ordering::Relaxed);
    }

    /// The body every answer carries from now on.
    pub fn set_body(&self, body: impl Into<Bytes>) {
        *self.shared.body.lock().unwrap_or_else(|e| e.into_inner()) = body.into();
    }

    /// From now on a request without header `name: value` is answered
    /// 403 (a health endpoint that wants a token); None: no such rule.
    pub fn require_header(&self, header: Option<(http::HeaderName, http::HeaderValue)>) {
        *self.shared.required_header.lock().unwrap_or_else(|e| e.into_inner()) = header;
    }

    /// Answer, or accept and never answer.
    pub fn set_mode(&self, mode: Mode) {
        self.shared.hang.store(mode == Mode::Hang, Ordering::Relaxed);
    }

    /// Refuses `client` (a source address) from now on: its new
    /// connections are closed at once and its open ones at their next
    /// request, unanswered; other clients are served as before.
    pub fn refuse(&self, client: IpAddr) {
        self.shared
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(client);
    }

    /// Serves `client` again.
    pub fn admit(&self, client: IpAddr) {
        self.shared
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&client);
    }

    /// The clients refused now.
    pub fn refused(&self) -> Vec<IpAddr> {
        let mut refused: Vec<IpAddr> = self
            .shared
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        refused.sort();
        refused
    }

    /// Requests answered or held so far.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// The most connections it had open at once.
    pub fn most_open(&self) -> usize {
        self.shared.most_open.load(Ordering::Relaxed)
    }

    fn serve(&self, listener: TcpListener) {
        let (stop, mut stopped) = watch::channel(());
        let shared = self.shared.clone();
        let tls = self.tls.clone().map(TlsAcceptor::from);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = stopped.changed() => return,
                };
                let Ok((tcp, peer)) = accepted else { continue };
                if shared.refuses(peer.ip()) {
                    drop(tcp);
                    continue;
                }
                let shared = shared.clone();
                let tls = tls.clone();
                let closed = stopped.clone();
                tokio::spawn(async move {
                    let open = shared.open.fetch_add(1, Ordering::Relaxed) + 1;
                    shared.most_open.fetch_max(open, Ordering::Relaxed);
                    let service_shared = shared.clone();
                    let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let shared = service_shared.clone();
                        async move {
                            if shared.refuses(peer.ip()) {
                                // An error closes the connection unanswered.
                                return Err(RefusedClient(peer.ip()));
                            }
                            shared.requests.fetch_add(1, Ordering::Relaxed);
                            if shared.hang.load(Ordering::Relaxed) {
                                std::future::pending::<()>().await;
                            }
                            let mut status = shared.status.load(Ordering::Relaxed);
                            let required = shared.required_header.lock().unwrap_or_else(|e| e.into_inner()).clone();
                            if let Some((name, value)) = required {
                                if request.headers().get(&name) != Some(&value) {
                                    status = 403;
                                }
                            }
                            let body = shared.body.lock().unwrap_or_else(|e| e.into_inner()).clone();
                            hyper::Response::builder()
                                .status(status)
                                .body(Full::new(body))
                                .map_err(|_| RefusedClient(peer.ip()))
                        }
                    });
                    fedns_loopback::serve::connection(tcp, tls, service, closed).await;
                    shared.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
        });
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop);
    }
}

/// The error that closes a refused client's connection.
#[derive(Debug)]
struct RefusedClient(IpAddr);

impl std::fmt::Display for RefusedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client {} is refused", self.0)
    }
}

impl std::error::Error for RefusedClient {}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop();
    }
}
