//! # An external-dns webhook provider stand-in
//!
//! A webhook provider (Cloudflare's, PowerDNS's, ...) cannot run here, so
//! [`WebhookProvider::start`] serves the protocol on `127.0.0.1:<free
//! port>` over plain HTTP, in front of an in-memory zone, as a provider
//! built on external-dns's own server helper does. Written from
//! kubernetes-sigs/external-dns commit
//! 2bf1bf8af2b70f23579f9147c1f7e9394f7f83d5:
//! `provider/webhook/api/httpapi.go` (routes, statuses, the media type),
//! `endpoint/endpoint.go` (the Endpoint JSON), `plan/plan.go` (Changes).
//!
//! ## What it does
//! * `GET /` (any path the others do not take, as the helper's catch-all
//!   `/`): the domain filter `{"include": [...]}` (or `{}`), with
//!   `Content-Type: application/external.dns.webhook+json;version=1`.
//! * `GET /records`: every record held (200, a JSON array, the media
//!   type). `POST /records`: the changes (`create`, `updateOld`/`updateNew`
//!   paired, `delete`; any key may be absent), applied all or nothing:
//!   204 when applied; 500 with an empty body when the provider refuses
//!   them (the helper answers 500 for any provider error): a type it does
//!   not support ([`WebhookProviderConfig::types`]), a name outside its
//!   filter, a create of a record it holds, an `updateOld` or `delete` of
//!   one it does not, update lists of different lengths. A body that does
//!   not decode: 400; over the size cap: 413; another method: 400.
//! * `POST /adjustendpoints` (POST only, else 400): the endpoints as it
//!   will hold them: names lower-cased without the trailing dot, TTLs
//!   below [`WebhookProviderConfig::min_ttl`] (a "not configured" 0
//!   included) raised to it, as providers with a TTL floor do.
//! * Faults: [`WebhookProvider::fail_next`] (the next N requests get a
//!   status, e.g. 503), [`WebhookProvider::fail_next_writes`] (the next N
//!   `POST /records` only), [`WebhookProvider::set_retry_after`] (those
//!   faults carry `Retry-After`), [`WebhookProvider::set_latency`] (a slow
//!   provider), [`WebhookProvider::stop`]/[`WebhookProvider::resume`]
//!   (connections refused: the port is closed and opened again).
//!   [`WebhookProvider::records`] and [`WebhookProvider::requests`] for
//!   assertions; [`WebhookProvider::put`] writes as another tool would.
//!
//! ## What it does not do
//! * No DNS serving; no authentication (the protocol has none); no
//!   `/healthz` or `/metrics` listener; no provider-specific properties
//!   are interpreted (they are stored and echoed); targets are stored as
//!   sent, validated only where external-dns validates (MX, SRV).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The protocol's media type (`httpapi.go`, `MediaTypeFormatAndVersion`).
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// What the stand-in provider accepts.
#[derive(Debug, Clone)]
pub struct WebhookProviderConfig {
    /// Domains it serves, answered at negotiation as `include`; empty:
    /// every domain (`{}`).
    pub domain_filter: Vec<String>,
    /// Record types it supports.
    pub types: Vec<String>,
    /// TTL floor applied by adjustendpoints (0: none).
    pub min_ttl: i64,
    /// Largest request body, octets (external-dns's default 32 MiB).
    pub max_body: usize,
}

impl Default for WebhookProviderConfig {
    fn default() -> Self {
        WebhookProviderConfig {
            domain_filter: Vec::new(),
            types: ["A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS", "PTR", "CAA"]
                .iter()
                .map(|t| t.to_string())
                .collect(),
            min_ttl: 0,
            max_body: 32 << 20,
        }
    }
}

type Key = (String, String, String);

struct Inner {
    config: WebhookProviderConfig,
    records: Mutex<BTreeMap<Key, Value>>,
    /// (requests left, status) of an injected fault.
    fail: Mutex<(usize, u16)>,
    /// (`POST /records` requests left, status) of an injected fault.
    fail_writes: Mutex<(usize, u16)>,
    /// A `Retry-After` (seconds) sent with injected faults.
    retry_after: Mutex<Option<u64>>,
    /// Delay before every answer.
    latency: Mutex<std::time::Duration>,
    requests: AtomicU64,
}

/// A running stand-in provider; stops when the last handle is dropped.
pub struct WebhookProvider {
    inner: Arc<Inner>,
    addr: SocketAddr,
    stop: Mutex<Option<watch::Sender<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `dnsName` lower-cased without the trailing dot, the type upper-cased,
/// the set identifier: what identifies a record.
fn key_of(endpoint: &Value) -> Key {
    let text = |field: &str| {
        endpoint
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (
        text("dnsName").trim_end_matches('.').to_ascii_lowercase(),
        text("recordType").to_ascii_uppercase(),
        text("setIdentifier"),
    )
}

fn respond(status: u16, content_type: Option<&str>, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// `response` with a `Retry-After: seconds` header (RFC 9110 §10.2.3),
/// when `seconds` is set.
fn with_retry_after(mut response: Response<Full<Bytes>>, seconds: Option<u64>) -> Response<Full<Bytes>> {
    if let Some(value) = seconds.and_then(|s| http::HeaderValue::from_str(&s.to_string()).ok()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn json_of(value: &Value) -> Vec<u8> {
    let mut body = serde_json::to_vec(value).unwrap_or_default();
    // Go's json.Encoder ends with a newline.
    body.push(b'\n');
    body
}

impl Inner {
    fn in_filter(&self, name: &str) -> bool {
        self.config.domain_filter.is_empty()
            || self
                .config
                .domain_filter
                .iter()
                .any(|d| name == d || name.ends_with(&format!(".{d}")))
    }

    /// Applies `changes` all or nothing; why not.
    fn apply(&self, changes: &Value) -> Result<(), String> {
        let list = |field: &str| -> Vec<Value> {
            changes
                .get(field)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (create, old, new, delete) = (list("create"), list("updateOld"), list("updateNew"), list("delete"));
        if old.len() != new.len() {
            return Err(format!("{} updateOld but {} updateNew", old.len(), new.len()));
        }
        let mut records = lock(&self.records);
        let mut next = records.clone();
        for endpoint in create.iter().chain(&new) {
            let (name, rtype, _) = key_of(endpoint);
            if !self.config.types.contains(&rtype) {
                return Err(format!("record type {rtype:?} of {name} is not supported"));
            }
            if !self.in_filter(&name) {
                return Err(format!("{name} is not in a zone of this provider"));
            }
            check_endpoint(&rtype, endpoint)?;
        }
        for endpoint in old.iter().chain(&delete) {
            if next.remove(&key_of(endpoint)).is_none() {
                return Err(format!("{:?} is not held", key_of(endpoint)));
            }
        }
        for endpoint in new.iter() {
            next.insert(key_of(endpoint), endpoint.clone());
        }
        for endpoint in &create {
            if next.insert(key_of(endpoint), endpoint.clone()).is_some() {
                return Err(format!("{:?} already exists", key_of(endpoint)));
            }
        }
        *records = next;
        Ok(())
    }

    /// The adjusted form of one endpoint.
    fn adjust(&self, mut endpoint: Value) -> Value {
        let (name, _, _) = key_of(&endpoint);
        if let Some(object) = endpoint.as_object_mut() {
            object.insert("dnsName".into(), json!(name));
            let ttl = object.get("recordTTL").and_then(Value::as_i64).unwrap_or(0);
            if ttl < self.config.min_ttl {
                object.insert("recordTTL".into(), json!(self.config.min_ttl));
            }
        }
        endpoint
    }
}

async fn handle(inner: Arc<Inner>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    inner.requests.fetch_add(1, Ordering::Relaxed);
    let latency = *lock(&inner.latency);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    {
        let mut fail = lock(&inner.fail);
        if fail.0 > 0 {
            fail.0 -= 1;
            return Ok(with_retry_after(
                respond(fail.1, None, b"injected fault\n".to_vec()),
                *lock(&inner.retry_after),
            ));
        }
    }
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let limit = inner.config.max_body;
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(respond(413, None, b"request body too large\n".to_vec())),
    };
    let decode = || serde_json::from_slice::<Value>(&body);
    Ok(match path.as_str() {
        "/records" => match method {
            Method::GET => {
                let records: Vec<Value> = lock(&inner.records).values().cloned().collect();
                respond(200, Some(MEDIA_TYPE), json_of(&Value::Array(records)))
            }
            Method::POST => match decode() {
                Ok(_) if lock(&inner.fail_writes).0 > 0 => {
                    let mut fail = lock(&inner.fail_writes);
                    fail.0 -= 1;
                    with_retry_after(
                        respond(fail.1, None, b"injected fault\n".to_vec()),
                        *lock(&inner.retry_after),
                    )
                }
                Ok(changes) if changes.is_object() => match inner.apply(&changes) {
                    Ok(()) => respond(204, None, Vec::new()),
                    Err(why) => {
                        tracing::debug!("webhook stand-in refused changes: {why}");
                        respond(500, None, Vec::new())
                    }
                },
                _ => respond(400, None, b"invalid changes\n".to_vec()),
            },
            _ => respond(400, None, b"method not allowed\n".to_vec()),
        },
        "/adjustendpoints" if method == Method::POST => match decode() {
            Ok(Value::Array(endpoints)) => {
                let adjusted: Vec<Value> = endpoints.into_iter().map(|e| inner.adjust(e)).collect();
                respond(200, Some(MEDIA_TYPE), json_of(&Value::Array(adjusted)))
            }
            _ => respond(400, None, b"invalid endpoints\n".to_vec()),
        },
        "/adjustendpoints" => respond(400, None, b"method not allowed\n".to_vec()),
        _ => {
            let filter = if inner.config.domain_filter.is_empty() {
                json!({})
            } else {
                json!({"include": inner.config.domain_filter})
            };
            respond(200, Some(MEDIA_TYPE), json_of(&filter))
        }
    })
}

/// external-dns's `CheckEndpoint` for the types it validates
/// (`endpoint/endpoint.go` at v0.22.0, commit
/// 994f908d4abdfe5fbf38f2f61613ed570432e43a: `NewMXRecord` :640-655,
/// `NewSRVRecord` :659-687): an MX target is `preference host` with a
/// 16-bit preference; an SRV target is `priority weight port host.` with
/// 16-bit numbers and an absolute host ("Target host does not end with a
/// dot"). external-dns never sends other forms: its sources skip such
/// endpoints (`source/wrappers/dedupsource.go`).
fn check_endpoint(record_type: &str, endpoint: &Value) -> Result<(), String> {
    let targets = endpoint
        .get("targets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for target in targets.iter().filter_map(Value::as_str) {
        let fields: Vec<&str> = target.split_whitespace().collect();
        let numbers = |n: &[&str]| n.iter().all(|f| f.parse::<u16>().is_ok());
        let ok = match record_type {
            "MX" => fields.len() == 2 && numbers(&fields[..1]),
            "SRV" => fields.len() == 4 && numbers(&fields[..3]) && fields[3].ends_with('.'),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "invalid {record_type} target {target:?} (external-dns's CheckEndpoint refuses it)"
            ));
        }
    }
    Ok(())
}

fn serve(listener: TcpListener, inner: Arc<Inner>, stopped: watch::Receiver<()>) {
    fedns_loopback::serve::accept_loop(listener, None, stopped, move || {
        let inner = inner.clone();
        service_fn(move |request| handle(inner.clone(), request))
    });
}

impl WebhookProvider {
    /// Starts a provider with `config` on a free loopback port.
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn start(config: WebhookProviderConfig) -> std::io::Result<WebhookProvider> {
        // A port below the ephemeral range, never handed out twice: after
        // `stop`, nothing else (a client's ephemeral port, another test's
        // port-0 bind) can take it before `resume` binds it again.
        let port = fedns_loopback::ports::free_loopback_port()?;
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner {
            config,
            records: Mutex::new(BTreeMap::new()),
            fail: Mutex::new((0, 500)),
            fail_writes: Mutex::new((0, 500)),
            retry_after: Mutex::new(None),
            latency: Mutex::new(std::time::Duration::ZERO),
            requests: AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(());
        serve(listener, inner.clone(), stopped);
        Ok(WebhookProvider {
            inner,
            addr,
            stop: Mutex::new(Some(stop)),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every record held, as JSON endpoints, by (name, type, set identifier).
    pub fn records(&self) -> Vec<Value> {
        lock(&self.inner.records).values().cloned().collect()
    }

    /// Writes `endpoint` as another tool would (no checks).
    pub fn put(&self, endpoint: Value) {
        lock(&self.inner.records).insert(key_of(&endpoint), endpoint);
    }

    /// Requests served so far.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// The next `n` requests get `status` (and a short body).
    pub fn fail_next(&self, n: usize, status: u16) {
        *lock(&self.inner.fail) = (n, status);
    }

    /// The next `n` `POST /records` requests get `status` (reads and
    /// adjustments still answer).
    pub fn fail_next_writes(&self, n: usize, status: u16) {
        *lock(&self.inner.fail_writes) = (n, status);
    }

    /// Injected faults from now on carry `Retry-After: seconds` (None:
    /// no header), as a throttling provider answers 429 or 503.
    pub fn set_retry_after(&self, seconds: Option<u64>) {
        *lock(&self.inner.retry_after) = seconds;
    }

    /// Delays every answer by `latency` (a slow provider).
    pub fn set_latency(&self, latency: std::time::Duration) {
        *lock(&self.inner.latency) = latency;
    }

    /// Closes the port: connections are refused until [`Self::resume`].
    pub fn stop(&self) {
        lock(&self.stop).take();
    }

    /// Opens the same port again, with the records kept.
    ///
    /// # Errors
    /// The port was taken meanwhile.
    pub async fn resume(&self) -> std::io::Result<()> {
        let listener = TcpListener::bind(self.addr).await?;
        let (stop, stopped) = watch::channel(());
        serve(listener, self.inner.clone(), stopped);
        *lock(&self.stop) = Some(stop);
        Ok(())
    }
}
