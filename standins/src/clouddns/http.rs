//! The REST surface: authentication, injected faults, routing of
//! `/dns/v1/projects/{project}/…`, paging and JSON bodies.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::error::GoogleError;
use super::state::{self, Zone};
use super::Inner;

/// Largest request body accepted, in octets.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Largest `maxResults` honoured (larger values are lowered to it).
const MAX_PAGE: usize = 1000;

fn json_response(code: u16, value: &Value) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec_pretty(value).unwrap_or_else(|_| b"{}".to_vec());
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json; charset=UTF-8")
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn error_response(error: &GoogleError) -> Response<Full<Bytes>> {
    let mut response = json_response(error.code, &error.to_json());
    if error.code == 401 {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"https://accounts.google.com/\""),
        );
    }
    response
}

/// Handles one request.
pub async fn handle(inner: Arc<Inner>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    inner.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let latency = inner.faults().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let auth_message = "Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";
    // No Authorization header: `required`; one that is not a known bearer
    // token (another scheme included): `authError`.
    match token.as_deref().map(|t| t.strip_prefix("Bearer ")) {
        None => {
            let mut error = GoogleError::new(
                401,
                "required",
                format!("Request is missing required authentication credential. {auth_message}"),
            );
            error.location = Some(("Authorization", "header"));
            return Ok(error_response(&error));
        }
        Some(t) if !t.is_some_and(|t| inner.tokens.iter().any(|known| known == t)) => {
            let mut error = GoogleError::new(
                401,
                "authError",
                format!("Request had invalid authentication credentials. {auth_message}"),
            );
            error.location = Some(("Authorization", "header"));
            return Ok(error_response(&error));
        }
        Some(_) => {}
    }
    if let Some(fault) = inner.next_fault() {
        return Ok(error_response(&fault.error()));
    }
    Ok(match route(&inner, request).await {
        Ok(value) => json_response(200, &value),
        Err(error) => error_response(&error),
    })
}

fn query(request: &Request<Incoming>) -> HashMap<String, String> {
    request
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn page_size(inner: &Inner, query: &HashMap<String, String>) -> Result<usize, GoogleError> {
    match query.get("maxResults") {
        None => Ok(inner.page_size),
        Some(text) => match text.parse::<i64>() {
            Ok(0) => Ok(inner.page_size),
            Ok(n) if n > 0 => Ok(usize::try_from(n).unwrap_or(MAX_PAGE).min(MAX_PAGE)),
            _ => Err(GoogleError::invalid_value("parameters.maxResults", text)),
        },
    }
}

fn encode_token(key: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key)
}

fn decode_token(query: &HashMap<String, String>) -> Result<Option<String>, GoogleError> {
    let Some(token) = query.get("pageToken").filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| GoogleError::invalid_value("parameters.pageToken", token))
}

/// Items after the token's key, at most `size`, and the next token.
fn page<T>(items: Vec<(String, T)>, after: Option<&str>, size: usize) -> (Vec<T>, Option<String>) {
    let mut rest: Vec<(String, T)> = items
        .into_iter()
        .filter(|(key, _)| after.is_none_or(|a| key.as_str() > a))
        .collect();
    let more = rest.len() > size;
    rest.truncate(size);
    let next = if more {
        rest.last().map(|(k, _)| encode_token(k))
    } else {
        None
    };
    (rest.into_iter().map(|(_, v)| v).collect(), next)
}

fn with_token(mut value: Value, next: Option<String>) -> Value {
    if let Some(token) = next {
        value["nextPageToken"] = json!(token);
    }
    value
}

fn not_implemented(what: &str) -> GoogleError {
    GoogleError::new(
        501,
        "notImplemented",
        format!("The Cloud DNS stand-in does not implement {what}."),
    )
}

async fn route(inner: &Arc<Inner>, request: Request<Incoming>) -> Result<Value, GoogleError> {
    let path = request.uri().path().to_owned();
    let segments: Vec<String> = path.trim_matches('/').split('/').map(percent_decode).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = request.method().clone();
    let query = query(&request);
    let get = method == Method::GET;
    let Some(["dns", "v1", "projects", project, rest @ ..]) = Some(segments.as_slice()) else {
        return Err(GoogleError::new(
            404,
            "notFound",
            format!("The requested URL {path} was not found."),
        ));
    };
    let project = (*project).to_owned();
    match rest {
        [] if get => project_json(inner, &project),
        ["managedZones"] if get => list_zones(inner, &project, &query),
        ["managedZones", zone] if get => with_zone(inner, &project, zone, |z| Ok(z.to_json())),
        ["managedZones", zone, "rrsets"] if get => list_rrsets(inner, &project, zone, &query),
        ["managedZones", zone, "rrsets", name, rtype] if get => {
            let key = (name.to_ascii_lowercase(), (*rtype).to_owned());
            with_zone(inner, &project, zone, |z| {
                z.rrsets
                    .get(&key)
                    .map(super::RecordSet::to_json)
                    .ok_or_else(|| GoogleError::not_found("parameters.name", &format!("{} ({})", key.0, key.1)))
            })
        }
        ["managedZones", zone, "changes"] if method == Method::POST => {
            let bytes = Limited::new(request.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|_| GoogleError::new(413, "invalid", "The request body is too large."))?
                .to_bytes();
            let body: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
                Value::Null
            } else {
                serde_json::from_slice(&bytes)
                    .map_err(|e| GoogleError::new(400, "parseError", format!("Parse Error: {e}")))?
            };
            let quota = inner.quota();
            let mut state = inner.state();
            let zone = state.zone_mut(&project, zone)?;
            let change = state::apply_change(zone, &body, &quota)?;
            Ok(change.to_json("pending"))
        }
        ["managedZones", zone, "changes"] if get => list_changes(inner, &project, zone, &query),
        ["managedZones", zone, "changes", id] if get => {
            let delay = inner.change_delay();
            with_zone(inner, &project, zone, |z| {
                z.changes
                    .iter()
                    .find(|c| c.id == *id)
                    .map(|c| c.to_json(c.status(delay)))
                    .ok_or_else(|| GoogleError::not_found("parameters.changeId", id))
            })
        }
        ["managedZones"] | ["managedZones", _] => Err(not_implemented(&format!(
            "{method} on managed zones (zones are created through its Rust API)"
        ))),
        ["managedZones", _, "rrsets", ..] => Err(not_implemented(&format!("{method} on rrsets (use changes.create)"))),
        _ => Err(GoogleError::new(
            404,
            "notFound",
            format!("The requested URL {path} was not found."),
        )),
    }
}

/// `%XX` escapes of one path segment decoded (`+` stays `+` in paths).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn with_zone(
    inner: &Inner,
    project: &str,
    zone: &str,
    f: impl FnOnce(&Zone) -> Result<Value, GoogleError>,
) -> Result<Value, GoogleError> {
    let mut state = inner.state();
    let zone = state.zone_mut(project, zone)?;
    f(zone)
}

fn project_json(inner: &Inner, project: &str) -> Result<Value, GoogleError> {
    let state = inner.state();
    let zones = state
        .projects
        .get(project)
        .ok_or_else(|| GoogleError::not_found("parameters.project", project))?;
    let quota = inner.quota();
    Ok(json!({
        "kind": "dns#project",
        "id": project,
        "number": "1",
        "quota": {
            "kind": "dns#quota",
            "managedZones": 10000,
            "rrsetsPerManagedZone": quota.rrsets_per_managed_zone,
            "rrsetAdditionsPerChange": quota.rrset_additions_per_change,
            "rrsetDeletionsPerChange": quota.rrset_deletions_per_change,
            "totalRrdataSizePerChange": quota.total_rrdata_size_per_change,
            "resourceRecordsPerRrset": quota.resource_records_per_rrset,
        },
        "zoneCount": zones.len(),
    }))
}

fn list_zones(inner: &Inner, project: &str, query: &HashMap<String, String>) -> Result<Value, GoogleError> {
    let size = page_size(inner, query)?;
    let after = decode_token(query)?;
    let state = inner.state();
    let zones = state
        .projects
        .get(project)
        .ok_or_else(|| GoogleError::not_found("parameters.project", project))?;
    let filter = query.get("dnsName").map(|d| d.to_ascii_lowercase());
    let items: Vec<(String, Value)> = zones
        .values()
        .filter(|z| filter.as_ref().is_none_or(|d| &z.dns_name == d))
        .map(|z| (z.name.clone(), z.to_json()))
        .collect();
    let (items, next) = page(items, after.as_deref(), size);
    Ok(with_token(
        json!({"kind": "dns#managedZonesListResponse", "managedZones": items}),
        next,
    ))
}

fn list_rrsets(
    inner: &Inner,
    project: &str,
    zone: &str,
    query: &HashMap<String, String>,
) -> Result<Value, GoogleError> {
    let size = page_size(inner, query)?;
    let after = decode_token(query)?;
    let name = query.get("name").map(|n| n.to_ascii_lowercase());
    let rtype = query.get("type");
    if rtype.is_some() && name.is_none() {
        return Err(GoogleError::invalid(
            "Invalid value for 'parameters.type': the 'name' parameter must also be present.",
        ));
    }
    with_zone(inner, project, zone, |z| {
        let items: Vec<(String, Value)> = z
            .rrsets
            .values()
            .filter(|s| name.as_ref().is_none_or(|n| &s.name == n))
            .filter(|s| rtype.is_none_or(|t| &s.rtype == t))
            .map(|s| (format!("{}\n{}", s.name, s.rtype), s.to_json()))
            .collect();
        let (items, next) = page(items, after.as_deref(), size);
        Ok(with_token(
            json!({"kind": "dns#resourceRecordSetsListResponse", "rrsets": items}),
            next,
        ))
    })
}

fn list_changes(
    inner: &Inner,
    project: &str,
    zone: &str,
    query: &HashMap<String, String>,
) -> Result<Value, GoogleError> {
    let size = page_size(inner, query)?;
    let after = decode_token(query)?;
    if let Some(sort_by) = query.get("sortBy") {
        if sort_by != "changeSequence" && sort_by != "CHANGE_SEQUENCE" {
            return Err(GoogleError::invalid_value("parameters.sortBy", sort_by));
        }
    }
    let descending = match query.get("sortOrder").map(String::as_str) {
        None | Some("ascending") => false,
        Some("descending") => true,
        Some(other) => return Err(GoogleError::invalid_value("parameters.sortOrder", other)),
    };
    let delay = inner.change_delay();
    with_zone(inner, project, zone, |z| {
        // Keys sort in the listing's order: the sequence, or its complement
        // (stable while changes are added between pages).
        let mut items: Vec<(String, Value)> = z
            .changes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let i = u64::try_from(i).unwrap_or(u64::MAX);
                let position = if descending { u64::MAX - i } else { i };
                (format!("{position:020}"), c.to_json(c.status(delay)))
            })
            .collect();
        items.sort_by(|a, b| a.0.cmp(&b.0));
        let (items, next) = page(items, after.as_deref(), size);
        Ok(with_token(
            json!({"kind": "dns#changesListResponse", "changes": items}),
            next,
        ))
    })
}
