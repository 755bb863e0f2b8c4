//! The Cloud DNS stand-in, driven through real HTTP on loopback with
//! hyper's client, as a provider would drive Cloud DNS.

mod changes;
mod invalid;
mod limits;
mod policies;
mod reads;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fedns_standins::clouddns::{CloudDns, CloudDnsConfig, Fault, Quota, RecordSet, Visibility};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

const PROJECT: &str = "fedns-test";
const TOKEN: &str = "test-token";

async fn start() -> CloudDns {
    start_with(CloudDnsConfig {
        tokens: vec![TOKEN.into()],
        change_delay: Duration::from_millis(300),
        ..CloudDnsConfig::default()
    })
    .await
}

async fn start_with(config: CloudDnsConfig) -> CloudDns {
    let dns = CloudDns::start(config).await.expect("start");
    dns.create_zone(PROJECT, "example", "example.com.", Visibility::Public)
        .expect("zone");
    dns
}

async fn send<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "dns.googleapis.com");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let response = sender
        .send_request(request.body(Full::new(Bytes::from(bytes))).unwrap())
        .await
        .expect("request");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    let value = serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body)));
    (status, value)
}

/// A GET of the zone list with one raw header.
async fn send_with_header(stream: TcpStream, name: &str, value: &str) -> (u16, Value) {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = http::Request::builder()
        .uri(format!("/dns/v1/projects/{PROJECT}/managedZones"))
        .header("host", "dns.googleapis.com")
        .header(name, value)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.expect("request");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).expect("JSON"))
}

/// One call with `token`; `path` is below `/dns/v1/projects/{PROJECT}`
/// unless it starts with `/dns/`.
async fn call_as(dns: &CloudDns, token: Option<&str>, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let uri = if path.starts_with("/dns/") {
        path.to_owned()
    } else {
        format!("/dns/v1/projects/{PROJECT}{path}")
    };
    let tcp = TcpStream::connect(dns.addr()).await.expect("connect");
    send(tcp, method, &uri, token, body).await
}

async fn call(dns: &CloudDns, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    call_as(dns, Some(TOKEN), method, path, body).await
}

async fn change(dns: &CloudDns, additions: Value, deletions: Value) -> (u16, Value) {
    call(
        dns,
        "POST",
        "/managedZones/example/changes",
        Some(&json!({"additions": additions, "deletions": deletions})),
    )
    .await
}

fn a(name: &str, ttl: u32, ips: &[&str]) -> Value {
    json!({"name": name, "type": "A", "ttl": ttl, "rrdatas": ips})
}

/// Asserts Google's error envelope with `code`, `reason`, `status`, and
/// returns its message.
fn expect_error(result: &(u16, Value), code: u16, reason: &str, status: &str) -> String {
    let (got, body) = result;
    assert_eq!(*got, code, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["status"], status, "{body}");
    assert_eq!(error["errors"][0]["domain"], "global", "{body}");
    assert_eq!(error["errors"][0]["reason"], reason, "{body}");
    assert_eq!(error["errors"][0]["message"], error["message"], "{body}");
    error["message"].as_str().unwrap().to_owned()
}

/// All pages of a list, with `maxResults`.
async fn all_pages(dns: &CloudDns, path: &str, field: &str, max: usize) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut uri = format!("{path}{separator}maxResults={max}");
        if let Some(t) = &token {
            uri.push_str(&format!("&pageToken={t}"));
        }
        let (status, body) = call(dns, "GET", &uri, None).await;
        assert_eq!(status, 200, "{body}");
        let page = body[field].as_array().cloned().unwrap_or_default();
        assert!(page.len() <= max);
        items.extend(page);
        pages += 1;
        match body["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => return (items, pages),
        }
    }
}
