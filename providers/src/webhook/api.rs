//! The external-dns webhook provider protocol, client side: the wire
//! types and the four calls, exactly as external-dns speaks them.
//!
//! Source: kubernetes-sigs/external-dns v0.22.0-12-g2bf1bf8af (commit
//! 2bf1bf8af2b70f23579f9147c1f7e9394f7f83d5):
//! `provider/webhook/webhook.go` (the client: what it sends, which status
//! it requires, what it retries), `provider/webhook/api/httpapi.go` (the
//! media type, the paths, the server helper's statuses),
//! `endpoint/endpoint.go` (`Endpoint` JSON: every field `omitempty`,
//! `recordTTL` 0 meaning "not configured"), `plan/plan.go` (`Changes`:
//! `create`, `updateOld`, `updateNew`, `delete`, the update lists paired
//! by index) and `endpoint/domain_filter.go` (the negotiated filter:
//! `include`/`exclude` or `regexInclude`/`regexExclude`, and `Match`).
//!
//! * Negotiation: `GET <url>` with `Accept: <media type>`; any 2xx whose
//!   `Content-Type` is exactly the media type; the body is the provider's
//!   domain filter. Retried (transport errors and 5xx) a few times with
//!   exponential backoff, as external-dns does; 3xx/4xx are final.
//! * `GET <url>/records` → 200 and a JSON array (or `null`).
//! * `POST <url>/adjustendpoints` → 200 and the adjusted array.
//! * `POST <url>/records` with the changes → 204.
//!
//! A status 500..=510 or a transport error is transient (external-dns
//! calls it a soft error and retries at the next interval); any other
//! status is the provider refusing the request. Responses are read up to
//! a size cap (external-dns's `--webhook-provider-max-body-size`, 32 MiB).
//! The protocol has no authentication: external-dns sends none.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// The media type of every body, and the `Content-Type` negotiation must
/// answer with (`provider/webhook/api/httpapi.go`, `MediaTypeFormatAndVersion`).
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// external-dns's default cap on a response body, in octets (32 MiB).
pub const DEFAULT_MAX_BODY: usize = 32 << 20;

/// `null` or absent read as the type's default (Go encodes a nil slice as
/// `null`).
fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One `providerSpecific` property.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Property {
    /// Property name (`webhook/<x>` when set by annotation).
    #[serde(default)]
    pub name: String,
    /// Its value.
    #[serde(default)]
    pub value: String,
}

/// external-dns's `Endpoint` as JSON: every field omitted when empty,
/// `recordTTL` 0 meaning "not configured".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireEndpoint {
    /// Owner name, without the trailing dot.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub dns_name: String,
    /// Targets in external-dns's form (TXT: the text itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub targets: Vec<String>,
    /// `A`, `AAAA`, `CNAME`, `TXT`, ...
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub record_type: String,
    /// Set identifier of a routed record.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub set_identifier: String,
    /// TTL in seconds; 0: not configured.
    #[serde(
        default,
        rename = "recordTTL",
        skip_serializing_if = "is_zero",
        deserialize_with = "null_as_default"
    )]
    pub record_ttl: i64,
    /// external-dns's labels (`owner`, `resource`, `ownedRecord`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub labels: BTreeMap<String, String>,
    /// Provider-specific properties.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub provider_specific: Vec<Property>,
}

impl WireEndpoint {
    /// (name lower-cased without the trailing dot, type, set identifier):
    /// what identifies a record set.
    pub fn key(&self) -> (String, String, String) {
        (
            self.dns_name.trim_end_matches('.').to_ascii_lowercase(),
            self.record_type.to_ascii_uppercase(),
            self.set_identifier.clone(),
        )
    }
}

/// external-dns's `plan.Changes`: `updateOld[i]` is replaced by
/// `updateNew[i]`. Read with Go's leniency for the keys' case
/// (`Create`, `UpdateOld`, ...; external-dns's own server test sends
/// `Create` and `Delete`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    /// Records to create.
    #[serde(alias = "Create")]
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub create: Vec<WireEndpoint>,
    /// Records as held, each replaced by the same index of `update_new`.
    #[serde(alias = "UpdateOld")]
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub update_old: Vec<WireEndpoint>,
    /// Their replacements.
    #[serde(alias = "UpdateNew")]
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub update_new: Vec<WireEndpoint>,
    /// Records to delete, as held.
    #[serde(alias = "Delete")]
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub delete: Vec<WireEndpoint>,
}

impl Changes {
    /// Nothing to send?
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update_old.is_empty() && self.update_new.is_empty() && self.delete.is_empty()
    }

    /// How many endpoints the request carries.
    pub fn len(&self) -> usize {
        self.create.len() + self.update_old.len() + self.update_new.len() + self.delete.len()
    }

    /// Appends `other`'s lists.
    pub fn extend(&mut self, other: Changes) {
        self.create.extend(other.create);
        self.update_old.extend(other.update_old);
        self.update_new.extend(other.update_new);
        self.delete.extend(other.delete);
    }
}

/// The domain filter a provider answers negotiation with
/// (`endpoint/domain_filter.go`): names under `include` (all when empty)
/// and not under `exclude`; or, when either regular expression is set,
/// not matching `regex_exclude` and matching `regex_include` (when set).
#[derive(Debug, Clone, Default)]
pub struct DomainFilter {
    include: Vec<String>,
    exclude: Vec<String>,
    regex_include: Option<regex::Regex>,
    regex_exclude: Option<regex::Regex>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DomainFilterSerde {
    #[serde(default, deserialize_with = "null_as_default")]
    include: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    exclude: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    regex_include: String,
    #[serde(default, deserialize_with = "null_as_default")]
    regex_exclude: String,
}

/// external-dns's `normalizeDomain`: no trailing dot, UTS 46 mapped
/// (lower case) and in Unicode form (`xn--r28h.org` is `😍.org`). Go's
/// profile processes transitionally (ß becomes ss); the `idna` crate does
/// not: only names with ß, ς or joiners compare otherwise.
fn normalize(domain: &str) -> String {
    let (unicode, _) = idna::domain_to_unicode(domain.trim().trim_end_matches('.'));
    unicode
}

impl DomainFilter {
    /// Parses a negotiation body.
    ///
    /// # Errors
    /// Not JSON of that shape, both the list and the regular-expression
    /// form ("cannot have both domain list and regex", as external-dns
    /// says), or a regular expression that does not compile.
    pub fn parse(body: &[u8]) -> Result<DomainFilter, String> {
        // An object only (serde would also take an array as a struct).
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("the domain filter is not valid JSON: {e}"))?;
        if !value.is_object() {
            return Err(format!("the domain filter is not a JSON object: {value}"));
        }
        let raw: DomainFilterSerde = serde_json::from_value(value)
            .map_err(|e| format!("the domain filter is not of the expected shape: {e}"))?;
        let lists = !raw.include.is_empty() || !raw.exclude.is_empty();
        let regexes = !raw.regex_include.is_empty() || !raw.regex_exclude.is_empty();
        if lists && regexes {
            return Err("the domain filter has both domain lists and regular expressions".into());
        }
        let compile = |what: &str, text: &str| -> Result<Option<regex::Regex>, String> {
            if text.is_empty() {
                return Ok(None);
            }
            regex::Regex::new(text)
                .map(Some)
                .map_err(|e| format!("the domain filter's {what} {text:?} does not compile: {e}"))
        };
        let clean = |list: Vec<String>| -> Vec<String> {
            list.iter().map(|d| normalize(d)).filter(|d| !d.is_empty()).collect()
        };
        Ok(DomainFilter {
            include: clean(raw.include),
            exclude: clean(raw.exclude),
            regex_include: compile("regexInclude", &raw.regex_include)?,
            regex_exclude: compile("regexExclude", &raw.regex_exclude)?,
        })
    }

    /// Does the filter take `domain`? (external-dns's `Match`.)
    pub fn matches(&self, domain: &str) -> bool {
        let domain = normalize(domain);
        if self.regex_include.is_some() || self.regex_exclude.is_some() {
            if self.regex_exclude.as_ref().is_some_and(|r| r.is_match(&domain)) {
                return false;
            }
            return self.regex_include.as_ref().is_none_or(|r| r.is_match(&domain));
        }
        let under = |filters: &[String], empty: bool| {
            if filters.is_empty() {
                return empty;
            }
            filters.iter().any(|filter| {
                (filter.starts_with('.') && domain.ends_with(filter.as_str()))
                    || domain == *filter
                    || domain.ends_with(&format!(".{filter}"))
            })
        };
        under(&self.include, true) && !under(&self.exclude, false)
    }

    /// One line for logs and conditions.
    pub fn describe(&self) -> String {
        match (&self.regex_include, &self.regex_exclude) {
            (None, None) if self.include.is_empty() && self.exclude.is_empty() => "every domain".into(),
            (None, None) => format!("include {:?}, exclude {:?}", self.include, self.exclude),
            (include, exclude) => format!(
                "regexInclude {:?}, regexExclude {:?}",
                include.as_ref().map(|r| r.as_str()),
                exclude.as_ref().map(|r| r.as_str())
            ),
        }
    }
}

/// A call that failed: the HTTP status (None: no response at all) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// The status the provider answered with; None for a transport error,
    /// a timeout or an unreadable body.
    pub status: Option<u16>,
    /// One line.
    pub message: String,
    /// The provider's `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an
    /// HTTP-date, as a delay from now), when it sent one.
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl CallError {
    /// A failure without a status (transport, timeout, body).
    fn without_status(message: String) -> CallError {
        CallError {
            status: None,
            message,
            retry_after: None,
        }
    }

    /// Worth retrying later: no answer, or 500..=510 (external-dns's
    /// `isRetryableError`).
    pub fn transient(&self) -> bool {
        self.status.is_none_or(|s| (500..=510).contains(&s))
    }

    /// The provider asks to slow down: 429 Too Many Requests (RFC 6585
    /// §4) or 503 Service Unavailable, which say nothing about the records
    /// sent: the whole provider waits, nothing is split or refused.
    pub fn throttled(&self) -> bool {
        matches!(self.status, Some(429 | 503))
    }
}

/// A `Retry-After` header's value as a delay from `now`: delay-seconds or
/// an HTTP-date (RFC 9110 §10.2.3); None when it is neither.
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Retries of negotiation.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts, the first included (external-dns: 5).
    pub attempts: u32,
    /// First delay (external-dns: 0.5 s, then ×1.5 with jitter).
    pub initial: Duration,
}

/// The client of one webhook provider.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
    max_body: usize,
}

/// One response: its status, `Content-Type`, body (up to the cap) and
/// `Retry-After` (parsed).
struct Reply {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    retry_after: Option<Duration>,
}

impl Client {
    /// A client of the provider at `url` (e.g. `http://localhost:8888`),
    /// each call bounded by `timeout`, responses by `max_body` octets.
    ///
    /// # Errors
    /// The HTTP client cannot be built (TLS roots).
    pub fn new(url: &str, timeout: Duration, max_body: usize) -> Result<Client, String> {
        let http = crate::provider::http_client(timeout)?;
        Ok(Client {
            http,
            url: url.trim_end_matches('/').to_owned(),
            max_body,
        })
    }

    /// The provider's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends `request`: the [`Reply`].
    async fn send(&self, what: &str, request: reqwest::RequestBuilder) -> Result<Reply, CallError> {
        let transport = |e: reqwest::Error| {
            CallError::without_status(format!("{what} {}: {}", self.url, crate::provider::error_chain(&e)))
        };
        let mut response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE).unwrap_or_default();
        let retry_after =
            header(reqwest::header::RETRY_AFTER).and_then(|v| parse_retry_after(&v, std::time::SystemTime::now()));
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > self.max_body {
                return Err(CallError::without_status(format!(
                    "{what} {}: the response is over {} octets",
                    self.url, self.max_body
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Reply {
            status,
            content_type,
            body,
            retry_after,
        })
    }

    /// The reply's status is `want`, else an error naming what the
    /// provider said (and its `Retry-After`).
    fn expect(&self, what: &str, want: u16, reply: &Reply) -> Result<(), CallError> {
        if reply.status == want {
            return Ok(());
        }
        let status = reply.status;
        let text = String::from_utf8_lossy(&reply.body[..reply.body.len().min(300)])
            .trim()
            .to_owned();
        Err(CallError {
            status: Some(status),
            message: format!(
                "{what} {}: status {status} (expected {want}){}",
                self.url,
                if text.is_empty() {
                    String::new()
                } else {
                    format!(": {text}")
                }
            ),
            retry_after: reply.retry_after,
        })
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, what: &str, body: &[u8]) -> Result<T, CallError> {
        serde_json::from_slice(body).map_err(|e| {
            CallError::without_status(format!("{what} {}: the answer is not the expected JSON: {e}", self.url))
        })
    }

    /// Negotiation: the provider's domain filter.
    ///
    /// # Errors
    /// After `retry.attempts` transient failures, or at once on a refusal,
    /// a wrong `Content-Type` or a filter that does not parse.
    pub async fn negotiate(&self, retry: Retry) -> Result<DomainFilter, CallError> {
        use backon::{ExponentialBuilder, Retryable};
        let once = || async {
            let request = self.http.get(&self.url).header(reqwest::header::ACCEPT, MEDIA_TYPE);
            let reply = self.send("negotiating with", request).await?;
            if !(200..300).contains(&reply.status) {
                self.expect("negotiating with", 200, &reply)?;
            }
            let (status, content_type) = (reply.status, reply.content_type.as_str());
            if content_type != MEDIA_TYPE {
                return Err(CallError {
                    status: Some(status),
                    message: format!(
                        "negotiating with {}: Content-Type {content_type:?}, not {MEDIA_TYPE:?}: not an external-dns webhook provider (or another protocol version)",
                        self.url
                    ),
                    retry_after: None,
                });
            }
            DomainFilter::parse(&reply.body).map_err(|e| CallError {
                status: Some(status),
                message: format!("negotiating with {}: {e}", self.url),
                retry_after: None,
            })
        };
        once.retry(
            ExponentialBuilder::default()
                .with_min_delay(retry.initial)
                .with_factor(1.5)
                .with_jitter()
                .with_max_times(retry.attempts.saturating_sub(1) as usize),
        )
        // external-dns retries negotiation on transport errors and any 5xx.
        .when(|e: &CallError| e.status.is_none_or(|s| s >= 500))
        .await
    }

    /// `GET /records`: every record the provider holds (in its filter).
    ///
    /// # Errors
    /// Anything but 200 with a JSON array (or `null`).
    pub async fn records(&self) -> Result<Vec<WireEndpoint>, CallError> {
        let request = self
            .http
            .get(format!("{}/records", self.url))
            .header(reqwest::header::ACCEPT, MEDIA_TYPE);
        let reply = self.send("reading records from", request).await?;
        self.expect("reading records from", 200, &reply)?;
        let records: Option<Vec<WireEndpoint>> = self.decode("reading records from", &reply.body)?;
        Ok(records.unwrap_or_default())
    }

    /// `POST /adjustendpoints`: `endpoints` as the provider will hold them.
    ///
    /// # Errors
    /// Anything but 200 with a JSON array (or `null`).
    pub async fn adjust(&self, endpoints: &[WireEndpoint]) -> Result<Vec<WireEndpoint>, CallError> {
        let body =
            serde_json::to_vec(endpoints).map_err(|e| CallError::without_status(format!("encoding endpoints: {e}")))?;
        let request = self
            .http
            .post(format!("{}/adjustendpoints", self.url))
            .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE)
            .header(reqwest::header::ACCEPT, MEDIA_TYPE)
            .body(body);
        let reply = self.send("adjusting endpoints with", request).await?;
        self.expect("adjusting endpoints with", 200, &reply)?;
        let adjusted: Option<Vec<WireEndpoint>> = self.decode("adjusting endpoints with", &reply.body)?;
        Ok(adjusted.unwrap_or_default())
    }

    /// `POST /records`: applies `changes`.
    ///
    /// # Errors
    /// Anything but 204.
    pub async fn apply(&self, changes: &Changes) -> Result<(), CallError> {
        let body =
            serde_json::to_vec(changes).map_err(|e| CallError::without_status(format!("encoding changes: {e}")))?;
        let request = self
            .http
            .post(format!("{}/records", self.url))
            .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE)
            .body(body);
        let reply = self.send("applying changes with", request).await?;
        self.expect("applying changes with", 204, &reply)
    }
}
