//! One request through the emulator: authentication, fault injection,
//! then by path to discovery, a proxy subresource or a resource verb
//! (bodies and watch streams in the shapes kube-apiserver uses).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

use crate::api::body::{Body, MAX_BODY};
use crate::api::cluster::Cluster;
use crate::api::extensions::Proxy;
use crate::status::{success_status, ApiError};
use crate::store::resources::ResourceInfo;
use crate::store::selectors::{FieldSelector, LabelSelector};
use crate::store::{filter_event, Filter, PatchKind, Target};

fn json_response(code: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

fn error_response(error: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(code, &error.to_status())
}

/// Parsed query string.
struct Query(HashMap<String, String>);

impl Query {
    fn parse(query: Option<&str>) -> Self {
        Query(
            form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }
    fn filter(&self, namespace: Option<String>) -> Result<Filter, ApiError> {
        Ok(Filter {
            namespace,
            labels: LabelSelector::parse(self.get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(self.get("fieldSelector").unwrap_or(""))?,
        })
    }
    fn resource_version(&self) -> Result<Option<u64>, ApiError> {
        match self.get("resourceVersion").filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}"))),
        }
    }
}

/// Where a resource request points.
#[derive(Debug)]
struct Route {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse_resource_path(group: &str, version: &str, rest: &[&str]) -> Option<Route> {
    let route = |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| Route {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace: namespace.map(str::to_owned),
        plural: plural.to_owned(),
        name: name.map(str::to_owned),
        subresource: sub.map(str::to_owned),
    };
    match rest {
        [plural] => Some(route(None, plural, None, None)),
        [plural, name] => Some(route(None, plural, Some(name), None)),
        ["namespaces", name, sub @ ("status" | "finalize")] => Some(route(None, "namespaces", Some(name), Some(sub))),
        ["namespaces", ns, plural] => Some(route(Some(ns), plural, None, None)),
        [plural, name, sub] => Some(route(None, plural, Some(name), Some(sub))),
        ["namespaces", ns, plural, name] => Some(route(Some(ns), plural, Some(name), None)),
        ["namespaces", ns, plural, name, sub] => Some(route(Some(ns), plural, Some(name), Some(sub))),
        _ => None,
    }
}

/// Handles one request.
pub async fn handle(cluster: Arc<Cluster>, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    cluster
        .requests
        .record(request.method().as_str(), request.uri().path(), request.uri().query());
    if cluster.faults.before_request().await {
        return Ok(error_response(&ApiError::unavailable(
            "injected fault: the server is unavailable",
        )));
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let authorized = match bearer {
        Some(token) if token == cluster.token => true,
        Some(token)
            if cluster
                .extra_tokens
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .any(|t| t == token) =>
        {
            true
        }
        Some(token) => authenticated(&cluster, token).await,
        None => false,
    };
    if !authorized {
        return Ok(error_response(&ApiError::unauthorized()));
    }
    let response = match route(&cluster, request).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    };
    Ok(response)
}

/// Whether an authenticator added to the cluster accepts `token` (the
/// first that claims it decides); a refusal is logged with its reason
/// (the client sees only 401, as from a real API server).
async fn authenticated(cluster: &Cluster, token: &str) -> bool {
    let authenticator = cluster
        .authenticators
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|a| a.claims(token))
        .cloned();
    let Some(authenticator) = authenticator else {
        return false;
    };
    match authenticator.authenticate(token).await {
        Ok(()) => true,
        Err(reason) => {
            tracing::info!(server = %cluster.server_address, %reason, "token refused");
            false
        }
    }
}

/// The proxy subresource `segments` falls under, with the object's name
/// and the rest of the path.
fn proxy_for(cluster: &Cluster, segments: &[&str]) -> Option<(Arc<dyn Proxy>, String, Vec<String>)> {
    let proxies = cluster
        .proxies
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    proxies.iter().find_map(|proxy| {
        let (name, rest) = proxy.path().matches(segments)?;
        Some((
            proxy.clone(),
            name.to_owned(),
            rest.iter().map(|s| (*s).to_owned()).collect(),
        ))
    })
}

async fn route(cluster: &Arc<Cluster>, request: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let path = request.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let get = request.method() == Method::GET;
    // A proxy subresource (`/apis/G/V/R/NAME/SUB…`, six segments at least)
    // shadows none of the paths below, so it is looked up once, first.
    if let Some((proxy, name, rest)) = proxy_for(cluster, &segments) {
        return proxy.forward(cluster.store.clone(), name, rest, request).await;
    }
    match segments.as_slice() {
        ["version"] if get => {
            let (major, minor) = cluster.version;
            Ok(json_response(
                StatusCode::OK,
                &json!({
                    "major": major.to_string(), "minor": minor.to_string(),
                    "gitVersion": format!("v{major}.{minor}.0-fedns-emulator"),
                    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "none", "compiler": "rustc",
                    "platform": "linux/amd64",
                }),
            ))
        }
        [probe @ ("healthz" | "readyz" | "livez"), ..] if get => {
            let _ = probe;
            Ok(Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(Full::new(Bytes::from_static(b"ok")).boxed())
                .map_err(|e| ApiError::internal(e.to_string()))?)
        }
        ["openapi", "v2"] if get => {
            let accept = request
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            openapi_v2(accept, cluster.version)
        }
        ["api"] if get => Ok(json_response(
            StatusCode::OK,
            &cluster.store.with_registry(|r| r.api_versions(&cluster.server_address)),
        )),
        ["apis"] if get => Ok(json_response(
            StatusCode::OK,
            &cluster.store.with_registry(|r| r.api_groups()),
        )),
        ["api", "v1"] if get => discovery(cluster, "", "v1", &path),
        ["apis", group, version] if get => discovery(cluster, group, version, &path),
        ["apis", group] if get => {
            let groups = cluster.store.with_registry(|r| r.api_groups());
            let found = groups["groups"]
                .as_array()
                .and_then(|g| g.iter().find(|g| g["name"] == *group))
                .cloned();
            match found {
                Some(mut g) => {
                    g["kind"] = json!("APIGroup");
                    g["apiVersion"] = json!("v1");
                    Ok(json_response(StatusCode::OK, &g))
                }
                None => Err(ApiError::no_route(&path)),
            }
        }
        ["api", "v1", rest @ ..] => match parse_resource_path("", "v1", rest) {
            Some(r) => resource(cluster, r, request).await,
            None => Err(ApiError::no_route(&path)),
        },
        ["apis", group, version, rest @ ..] => match parse_resource_path(group, version, rest) {
            Some(r) => resource(cluster, r, request).await,
            None => Err(ApiError::no_route(&path)),
        },
        _ => Err(ApiError::no_route(&path)),
    }
}

/// Content type of the OpenAPI v2 document in protobuf, as kube-apiserver
/// answers it (old clients ask for `...spec.v2@v1.0+protobuf`, but Go's
/// `mime.ParseMediaType`, which client-go applies to every response,
/// rejects the `@`).
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: a document without paths or definitions, in protobuf
/// (gnostic's `openapi.v2.Document`, which kubectl asks for) or JSON. The
/// emulator publishes no schemas: kubectl's client-side validation finds
/// none for any kind and lets every object through (as it does for kinds a
/// real server has no schema for), and server-side field validation is not
/// advertised.
fn openapi_v2(accept: &str, (major, minor): (u32, u32)) -> Result<Response<Body>, ApiError> {
    let version = format!("v{major}.{minor}.0-fedns-emulator");
    if !accept.contains("protobuf") {
        return Ok(json_response(
            StatusCode::OK,
            &json!({
                "swagger": "2.0",
                "info": {"title": "fedns-kube-emulator", "version": version},
                "paths": {},
                "definitions": {},
            }),
        ));
    }
    // Length-delimited fields (wire type 2, length as a varint):
    // Document { swagger = 1; info = 2; paths = 8 }, Info { title = 1; version = 2 }.
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2];
        let mut len = bytes.len();
        while len >= 0x80 {
            out.push((len & 0x7f) as u8 | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(bytes);
        out
    }
    let info = [field(1, b"fedns-kube-emulator"), field(2, version.as_bytes())].concat();
    let document = [field(1, b"2.0"), field(2, &info), field(8, &[])].concat();
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, OPENAPI_V2_PROTOBUF)
        .body(Full::new(Bytes::from(document)).boxed())
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn discovery(cluster: &Cluster, group: &str, version: &str, path: &str) -> Result<Response<Body>, ApiError> {
    cluster
        .store
        .with_registry(|r| r.api_resources(group, version))
        .map(|doc| json_response(StatusCode::OK, &doc))
        .ok_or_else(|| ApiError::no_route(path))
}

async fn read_body(request: Request<Incoming>) -> Result<(String, Bytes), ApiError> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > MAX_BODY) {
        return Err(ApiError::too_large(MAX_BODY));
    }
    let body = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|_| ApiError::too_large(MAX_BODY))?
        .to_bytes();
    Ok((content_type, body))
}

fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

fn parse_body(content_type: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    match content_type {
        "application/json" | "" | "*/*" => parse_json(bytes),
        "application/yaml" | "application/apply-patch+yaml" => {
            let text =
                std::str::from_utf8(bytes).map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
            serde_yaml_ng::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("the request body is not valid YAML: {e}")))
        }
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

async fn resource(
    cluster: &Arc<Cluster>,
    route: Route,
    request: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    let query = Query::parse(request.uri().query());
    // `dryRun=All` (the only value the API accepts): the same path on a
    // scratch copy of the cluster, so it refuses what a real write would.
    let scratch;
    let store = if request.method() != Method::GET && query.get("dryRun").is_some() {
        if query.get("dryRun") != Some("All") {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {:?}: supported values: \"All\"",
                query.get("dryRun").unwrap_or_default()
            )));
        }
        scratch = cluster.store.scratch();
        &scratch
    } else {
        &cluster.store
    };
    let info = store
        .resource(&route.group, &route.version, &route.plural)
        .ok_or_else(|| ApiError::no_route(request.uri().path()))?;
    if route.namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_route(request.uri().path()));
    }
    let target = match route.subresource.as_deref() {
        None => Target::Main,
        Some("status") if info.has_status => Target::Status,
        Some(other) => return Err(ApiError::no_route(&format!("{}/{other}", info.plural))),
    };
    let namespace = route.namespace.clone();
    let ns = namespace.as_deref();
    let method = request.method().clone();
    match (method, route.name.as_deref()) {
        (Method::GET, Some(name)) => Ok(json_response(StatusCode::OK, &store.get(&info, ns, name)?)),
        (Method::GET, None) if query.flag("watch") => watch(cluster, &info, &query, namespace),
        (Method::GET, None) => {
            let filter = query.filter(namespace)?;
            let limit = query.get("limit").and_then(|l| l.parse().ok());
            Ok(json_response(
                StatusCode::OK,
                &store.list_page(&info, &filter, limit, query.get("continue"))?,
            ))
        }
        (Method::POST, None) => {
            let (content_type, bytes) = read_body(request).await?;
            let object = parse_body(&content_type, &bytes)?;
            Ok(json_response(StatusCode::CREATED, &store.create(&info, ns, object)?))
        }
        (Method::PUT, Some(name)) => {
            let (content_type, bytes) = read_body(request).await?;
            let object = parse_body(&content_type, &bytes)?;
            Ok(json_response(
                StatusCode::OK,
                &store.update(&info, ns, name, object, target)?,
            ))
        }
        (Method::PATCH, Some(name)) => {
            let (content_type, bytes) = read_body(request).await?;
            let kind = match content_type.as_str() {
                "application/merge-patch+json" => PatchKind::Merge,
                "application/json-patch+json" => PatchKind::Json,
                "application/strategic-merge-patch+json" => PatchKind::Strategic,
                "application/apply-patch+yaml" => PatchKind::Apply,
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            let patch = parse_body(
                if kind == PatchKind::Apply {
                    "application/yaml"
                } else {
                    "application/json"
                },
                &bytes,
            )?;
            let result = store.patch(&info, ns, name, kind, patch, query.get("fieldManager"), target)?;
            Ok(json_response(StatusCode::OK, &result))
        }
        (Method::DELETE, Some(name)) => Ok(json_response(StatusCode::OK, &store.delete(&info, ns, name)?)),
        (Method::DELETE, None) => {
            let filter = query.filter(namespace)?;
            store.delete_collection(&info, &filter)?;
            Ok(json_response(StatusCode::OK, &success_status()))
        }
        (method, _) => Err(ApiError::method_not_allowed(format!("{method} is not supported here"))),
    }
}

fn event_line(kind: &str, object: &impl serde::Serialize) -> Bytes {
    /// A watch event (`{"type","object"}`), serialized without a copy of
    /// its object (which `json!` would make).
    #[derive(serde::Serialize)]
    struct Line<'a, T> {
        #[serde(rename = "type")]
        kind: &'a str,
        object: &'a T,
    }
    let mut line = serde_json::to_vec(&Line { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn bookmark(info: &ResourceInfo, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        &json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": metadata}),
    )
}

/// `?watch=true`: a stream of `{"type","object"}` lines.
fn watch(
    cluster: &Arc<Cluster>,
    info: &ResourceInfo,
    query: &Query,
    namespace: Option<String>,
) -> Result<Response<Body>, ApiError> {
    let filter = query.filter(namespace)?;
    let since = query.resource_version()?;
    let send_initial = query.flag("sendInitialEvents");
    let bookmarks = query.flag("allowWatchBookmarks");
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(Frame::data(bytes)), rx))
    });
    let response = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(StreamBody::new(stream).boxed())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let start = match cluster.store.watch(info, &filter, since, send_initial) {
        Ok(start) => start,
        Err(error) => {
            // As kube-apiserver: 200, then one ERROR event with the Status.
            let line = event_line("ERROR", &error.to_status());
            tokio::spawn(async move {
                let _ = tx.send(line).await;
            });
            return Ok(response);
        }
    };
    let info = info.clone();
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let mut last_rv = start.rv;
        for (kind, object) in &start.initial {
            if tx.send(event_line(kind.as_str(), &**object)).await.is_err() {
                return;
            }
        }
        if send_initial && tx.send(bookmark(&info, last_rv, true)).await.is_err() {
            return;
        }
        let mut live = start.live;
        let mut epoch = cluster.faults.watch_epoch.subscribe();
        epoch.mark_unchanged();
        let mut ticker = tokio::time::interval(cluster.bookmark_interval);
        ticker.tick().await;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            let line = tokio::select! {
                received = live.recv() => match received {
                    Ok(event) => {
                        last_rv = event.rv;
                        match filter_event(&info, &filter, &event) {
                            Some((kind, object)) => event_line(kind.as_str(), &*object),
                            None => continue,
                        }
                    }
                    // Too slow a reader: end the stream; the client resumes
                    // from its last version (or relists after 410).
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if bookmarks => bookmark(&info, last_rv, false),
                _ = &mut deadline => return,
                _ = epoch.changed() => return,
                _ = tx.closed() => return,
            };
            if tx.send(line).await.is_err() {
                return;
            }
        }
    });
    Ok(response)
}
