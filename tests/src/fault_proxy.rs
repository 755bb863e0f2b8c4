//! A loopback HTTP proxy between a Route53 client and moto that injects
//! the failures Route53 produces: throttling (HTTP 400 `Throttling`),
//! HTTP 429 and 5xx, and batches refused as a whole (HTTP 400
//! `InvalidChangeBatch`). It logs every request it sees.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// Failures to inject.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Answer this many next requests with `Throttling`.
    pub throttle_next: usize,
    /// Then this many with `PriorRequestNotComplete` (HTTP 400).
    pub prior_request_next: usize,
    /// Answer the next requests with these HTTP statuses, one each.
    pub fail_next: Vec<u16>,
    /// Throttle every request until cleared.
    pub throttle_all: bool,
    /// Refuse every change request whose body contains this text.
    pub poison: Option<String>,
}

/// One request the proxy saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Route53 operation: `change_records`, `list_records`, `list_zones`,
    /// `get_zone`, `create_zone` or `other`.
    pub operation: &'static str,
    /// What the proxy did instead of forwarding, if anything: `throttled`,
    /// `prior-request`, `failed`, `refused`.
    pub injected: Option<&'static str>,
}

#[derive(Default)]
struct State {
    faults: Faults,
    seen: Vec<Seen>,
}

/// The running proxy; stops with the test's runtime.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

fn operation(method: &hyper::Method, path: &str) -> &'static str {
    let path = path.trim_end_matches('/');
    match (method.as_str(), path) {
        ("POST", p) if p.ends_with("/rrset") => "change_records",
        ("GET", p) if p.ends_with("/rrset") => "list_records",
        ("GET", p) if p.ends_with("/hostedzonesbyname") => "list_zones",
        ("GET", p) if p.contains("/hostedzone/") => "get_zone",
        ("POST", p) if p.ends_with("/hostedzone") => "create_zone",
        _ => "other",
    }
}

fn error_response(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    let body = format!(
        "<?xml version=\"1.0\"?>\n<ErrorResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\">\
         <Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>\
         <RequestId>fedns-fault-proxy</RequestId></ErrorResponse>"
    );
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert("content-type", hyper::header::HeaderValue::from_static("text/xml"));
    response
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`http://127.0.0.1:<port>`).
    pub async fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let state: Arc<Mutex<State>> = Arc::default();
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let upstream = upstream.trim_end_matches('/').to_owned();
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                let client = client.clone();
                let upstream = upstream.clone();
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let state = state.clone();
                    let client = client.clone();
                    let upstream = upstream.clone();
                    async move { Ok::<_, Infallible>(handle(request, &state, &client, &upstream).await) }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FaultProxy { addr, state }
    }

    /// The proxy's URL, to give the client as its endpoint.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the failures to inject.
    pub fn set_faults(&self, faults: Faults) {
        self.state.lock().unwrap().faults = faults;
    }

    /// Every request seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Requests seen so far.
    pub fn count(&self) -> usize {
        self.state.lock().unwrap().seen.len()
    }
}

async fn handle(
    request: Request<Incoming>,
    state: &Mutex<State>,
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    upstream: &str,
) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return error_response(StatusCode::BAD_REQUEST, "ProxyError", &e.to_string()),
    };
    let op = operation(&parts.method, parts.uri.path());
    let mut status = 503;
    let injected = {
        let mut state = state.lock().unwrap();
        let faults = &mut state.faults;
        let injected = if faults.throttle_all {
            Some("throttled")
        } else if faults.throttle_next > 0 {
            faults.throttle_next -= 1;
            Some("throttled")
        } else if faults.prior_request_next > 0 {
            faults.prior_request_next -= 1;
            Some("prior-request")
        } else if !faults.fail_next.is_empty() {
            status = faults.fail_next.remove(0);
            Some("failed")
        } else if op == "change_records"
            && faults
                .poison
                .as_ref()
                .is_some_and(|p| String::from_utf8_lossy(&body).contains(p.as_str()))
        {
            Some("refused")
        } else {
            None
        };
        state.seen.push(Seen {
            operation: op,
            injected,
        });
        injected
    };
    match injected {
        Some("throttled") => return error_response(StatusCode::BAD_REQUEST, "Throttling", "Rate exceeded"),
        Some("prior-request") => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "PriorRequestNotComplete",
                "The request was rejected because Route 53 was still processing a prior request.",
            )
        }
        Some("failed") => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            return error_response(status, "InjectedFailure", "try again");
        }
        Some(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "InvalidChangeBatch",
                "[RRSet of type A with DNS name poison.example.com. is not permitted]",
            )
        }
        None => {}
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut forward = Request::builder().method(parts.method).uri(format!("{upstream}{path}"));
    for (name, value) in &parts.headers {
        forward = forward.header(name, value);
    }
    let forward = match forward.body(Full::new(body)) {
        Ok(forward) => forward,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, "ProxyError", &e.to_string()),
    };
    match client.request(forward).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            Response::from_parts(parts, Full::new(body))
        }
        Err(e) => error_response(StatusCode::BAD_GATEWAY, "ProxyError", &e.to_string()),
    }
}
