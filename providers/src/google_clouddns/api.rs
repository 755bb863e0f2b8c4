//! The Cloud DNS v1 REST API, as much of it as the provider uses
//! (<https://cloud.google.com/dns/docs/reference/rest/v1>):
//! `managedZones.list` (filter `dnsName`, paged), `managedZones.get`,
//! `resourceRecordSets.list` (paged), `changes.create` and `changes.get`.
//!
//! Every call carries an OAuth 2.0 access token from [`Credentials`]
//! (Google's `google-cloud-auth` library: a service-account key file, the
//! metadata server for GKE Workload Identity, or workload identity
//! federation; never hand-rolled OAuth), is spaced by the provider's
//! [`RateLimit`], and is retried with exponential backoff and jitter
//! (`backon`) on 429 (`rateLimitExceeded`), 5xx and transport errors.
//! Errors come back as [`ApiError`]: the HTTP status and Google's `reason`
//! (`conditionNotMet`, `alreadyExists`, `notFound`, `quotaExceeded`, …)
//! from the error envelope (<https://cloud.google.com/apis/design/errors>).

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::{error_chain, ProviderMetrics, RateLimit};

use super::NAME;

/// Google's production endpoint.
pub const GOOGLE_ENDPOINT: &str = "https://dns.googleapis.com";

/// The OAuth scope Cloud DNS needs for reads and changes.
pub const SCOPE: &str = "https://www.googleapis.com/auth/ndev.clouddns.readwrite";

/// Where access tokens come from.
#[derive(Clone)]
pub enum Credentials {
    /// A bearer token given as is (`GOOGLE_OAUTH_ACCESS_TOKEN`; tests, the
    /// sandbox's stand-in, tokens minted outside fedns).
    Token(String),
    /// Application Default Credentials through `google-cloud-auth`:
    /// `GOOGLE_APPLICATION_CREDENTIALS` (a `service_account` key or an
    /// `external_account` configuration for workload identity federation),
    /// else gcloud's application-default file, else the metadata server
    /// (GKE Workload Identity, a GCE service account). `source` says which
    /// one, for error messages.
    Google {
        /// The library's credentials (they cache and refresh the token).
        credentials: google_cloud_auth::credentials::AccessTokenCredentials,
        /// Which source Application Default Credentials picked.
        source: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source())
    }
}

impl Credentials {
    /// Application Default Credentials with the Cloud DNS scope.
    ///
    /// # Errors
    /// The source that was tried (the key file and its `type`, gcloud's
    /// file, or the metadata server) and the library's reason, e.g. a key
    /// file that is not JSON or lacks `private_key`.
    pub fn application_default() -> Result<Credentials, String> {
        // The library signs key-file JWTs and makes its TLS connections
        // through the process's rustls provider: ring, never aws-lc.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let source = adc_source();
        google_cloud_auth::credentials::Builder::default()
            .with_scopes([SCOPE])
            .build_access_token_credentials()
            .map(|credentials| Credentials::Google {
                credentials,
                source: source.clone(),
            })
            .map_err(|e| format!("Google credentials from {source}: {}", error_chain(&e)))
    }

    /// One line naming the source, for errors and logs.
    pub fn source(&self) -> String {
        match self {
            Credentials::Token(_) => "an access token (GOOGLE_OAUTH_ACCESS_TOKEN)".into(),
            Credentials::Google { source, .. } => source.clone(),
        }
    }

    /// A current access token.
    ///
    /// # Errors
    /// The source tried and why it gave no token (metadata server
    /// unreachable, key refused by Google's token endpoint, …).
    pub async fn token(&self) -> Result<String, String> {
        match self {
            Credentials::Token(token) => Ok(token.clone()),
            Credentials::Google { credentials, source } => credentials
                .access_token()
                .await
                .map(|t| t.token)
                .map_err(|e| format!("no access token from {source}: {}", error_chain(&e))),
        }
    }
}

/// Which source Application Default Credentials will use, by the same
/// order the library follows (<https://google.aip.dev/auth/4110>).
fn adc_source() -> String {
    if let Some(path) = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
        let path = std::path::PathBuf::from(path);
        let kind = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
        let what = match kind.as_deref() {
            Some("service_account") => "a service-account key".to_owned(),
            Some("external_account") => "a workload identity federation configuration (external_account)".to_owned(),
            Some(other) => format!("credentials of type {other}"),
            None => "a credentials file".to_owned(),
        };
        return format!("{what} at {} (GOOGLE_APPLICATION_CREDENTIALS)", path.display());
    }
    let gcloud = std::env::var_os("CLOUDSDK_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config/gcloud")))
        .map(|dir| dir.join("application_default_credentials.json"));
    match gcloud {
        Some(path) if path.exists() => format!("gcloud's application-default credentials at {}", path.display()),
        _ => "the metadata server (GKE Workload Identity or the instance's service account)".into(),
    }
}

/// A failed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status; 0 for a transport error or no token.
    pub status: u16,
    /// Google's first `errors[].reason` (`conditionNotMet`,
    /// `alreadyExists`, `notFound`, `quotaExceeded`, `rateLimitExceeded`,
    /// `invalid`, …), or a word of fedns's (`transport`, `credentials`,
    /// `decode`).
    pub reason: String,
    /// Google's message, or what failed.
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.status == 0 {
            write!(f, "{}: {}", self.reason, self.message)
        } else {
            write!(f, "HTTP {} {}: {}", self.status, self.reason, self.message)
        }
    }
}

impl ApiError {
    fn local(reason: &str, message: String) -> ApiError {
        ApiError {
            status: 0,
            reason: reason.into(),
            message,
        }
    }

    /// Worth another attempt: 429, 5xx, transport errors.
    pub fn retryable(&self) -> bool {
        self.status == 429 || self.status >= 500 || self.reason == "transport"
    }
}

/// The error envelope: `{"error": {"code", "message", "errors": [{"reason",
/// "message"}], "status"}}`.
fn parse_error(status: u16, body: &[u8]) -> ApiError {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = &value["error"];
    let reason = error["errors"][0]["reason"]
        .as_str()
        .or_else(|| error["status"].as_str())
        .unwrap_or("error")
        .to_owned();
    let message = error["message"].as_str().map_or_else(
        || String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
        str::to_owned,
    );
    ApiError {
        status,
        reason,
        message,
    }
}

/// A managed zone (`dns#managedZone`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ManagedZone {
    /// The zone's name (its id in URLs).
    pub name: String,
    /// Absolute DNS name, with the trailing dot.
    pub dns_name: String,
    /// `public` or `private` (absent: public).
    #[serde(default)]
    pub visibility: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ZonePage {
    #[serde(default)]
    managed_zones: Vec<ManagedZone>,
    next_page_token: Option<String>,
}

/// A record set (`dns#resourceRecordSet`) as Cloud DNS holds it: `rrdatas`
/// or a `routingPolicy` (`wrr`, `geo`, `primaryBackup`), kept exactly as
/// read so a deletion can match it (Cloud DNS deletes only an exact match).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecordSet {
    /// Absolute name, with the trailing dot.
    pub name: String,
    /// Record type (`A`, `TXT`, …).
    #[serde(rename = "type")]
    pub rtype: String,
    /// TTL in seconds.
    #[serde(default)]
    pub ttl: u32,
    /// Values in presentation form; empty when routed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rrdatas: Vec<String>,
    /// The routing policy, as read or as fedns builds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_policy: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordPage {
    #[serde(default)]
    rrsets: Vec<RecordSet>,
    next_page_token: Option<String>,
}

/// A change (`dns#change`): applied atomically, `pending` until served.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Record sets to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additions: Vec<RecordSet>,
    /// Record sets to delete (each an exact match of the stored set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletions: Vec<RecordSet>,
    /// Set by Cloud DNS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `pending` or `done`, set by Cloud DNS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Retry and pacing of the client.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// First delay; doubles per attempt, with jitter.
    pub initial_backoff: Duration,
    /// Longest delay.
    pub max_backoff: Duration,
    /// Timeout of one attempt.
    pub attempt_timeout: Duration,
}

/// A Cloud DNS client for one project.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// `<endpoint>/dns/v1/projects/<project>`.
    base: String,
    credentials: Credentials,
    retry: Retry,
    limit: Arc<RateLimit>,
    metrics: ProviderMetrics,
}

/// An HTTP client on rustls with ring and the system's roots.
///
/// # Errors
/// reqwest refusing the configuration (never in practice).
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, String> {
    crate::provider::http_client(timeout)
}

impl Client {
    /// A client of `project` at `endpoint` (Google's, or a stand-in).
    pub fn new(
        http: reqwest::Client,
        endpoint: &str,
        project: &str,
        credentials: Credentials,
        retry: Retry,
        limit: Arc<RateLimit>,
        metrics: ProviderMetrics,
    ) -> Client {
        Client {
            http,
            base: format!("{}/dns/v1/projects/{project}", endpoint.trim_end_matches('/')),
            credentials,
            retry,
            limit,
            metrics,
        }
    }

    /// One call with retries: `operation` names it in metrics.
    async fn call(
        &self,
        operation: &'static str,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Change>,
    ) -> Result<Vec<u8>, ApiError> {
        let url = format!("{}{path}", self.base);
        let attempt = || async {
            self.limit.acquire().await;
            let token = self
                .credentials
                .token()
                .await
                .map_err(|e| ApiError::local("credentials", e))?;
            let mut request = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(token)
                .query(query)
                .timeout(self.retry.attempt_timeout);
            if let Some(body) = body {
                request = request.json(body);
            }
            let result = async {
                let response = request
                    .send()
                    .await
                    .map_err(|e| ApiError::local("transport", format!("{url}: {}", error_chain(&e))))?;
                let status = response.status().as_u16();
                let bytes = response
                    .bytes()
                    .await
                    .map_err(|e| ApiError::local("transport", format!("{url}: {}", error_chain(&e))))?;
                if (200..300).contains(&status) {
                    Ok(bytes.to_vec())
                } else {
                    Err(parse_error(status, &bytes))
                }
            }
            .await;
            self.metrics.api_call(NAME, operation, result.is_ok());
            result
        };
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.retry.initial_backoff)
            .with_max_delay(self.retry.max_backoff)
            .with_max_times(self.retry.max_attempts.saturating_sub(1) as usize)
            .with_jitter();
        attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(ApiError::retryable)
            .notify(|e, after| {
                tracing::info!(provider = NAME, operation, "retrying in {after:?}: {e}");
            })
            .await
            .map_err(|e| match e.status {
                401 | 403 if e.reason != "quotaExceeded" => ApiError {
                    message: format!("{} (credentials: {})", e.message, self.credentials.source()),
                    ..e
                },
                _ => e,
            })
    }

    fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, ApiError> {
        serde_json::from_slice(bytes).map_err(|e| ApiError::local("decode", format!("{what}: {e}")))
    }

    /// `managedZones.list` with `dnsName` (absolute), every page.
    ///
    /// # Errors
    /// The first failed call.
    pub async fn zones_named(&self, dns_name: &str) -> Result<Vec<ManagedZone>, ApiError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("dnsName", dns_name.to_owned())];
            query.extend(token.take().map(|t| ("pageToken", t)));
            let bytes = self
                .call("list_zones", reqwest::Method::GET, "/managedZones", &query, None)
                .await?;
            let page: ZonePage = Self::decode(&bytes, "managedZones.list")?;
            out.extend(page.managed_zones);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// `managedZones.get`.
    ///
    /// # Errors
    /// 404 `notFound` for an unknown zone; any failed call.
    pub async fn zone(&self, name: &str) -> Result<ManagedZone, ApiError> {
        let bytes = self
            .call(
                "get_zone",
                reqwest::Method::GET,
                &format!("/managedZones/{name}"),
                &[],
                None,
            )
            .await?;
        Self::decode(&bytes, "managedZones.get")
    }

    /// `resourceRecordSets.list`, every page.
    ///
    /// # Errors
    /// The first failed call.
    pub async fn record_sets(&self, zone: &str) -> Result<Vec<RecordSet>, ApiError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("maxResults", "1000".to_owned())];
            query.extend(token.take().map(|t| ("pageToken", t)));
            let bytes = self
                .call(
                    "list_records",
                    reqwest::Method::GET,
                    &format!("/managedZones/{zone}/rrsets"),
                    &query,
                    None,
                )
                .await?;
            let page: RecordPage = Self::decode(&bytes, "resourceRecordSets.list")?;
            out.extend(page.rrsets);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// `changes.create`, then `changes.get` (with backoff) until `done` or
    /// `wait` has passed; a change still pending then is applied already
    /// (record sets show it at once) and only not yet served everywhere.
    ///
    /// # Errors
    /// The refusal (412 `conditionNotMet`, 409 `alreadyExists`, 404
    /// `notFound`, 403 `quotaExceeded`, 400 `invalid`) or a failed call.
    pub async fn apply(&self, zone: &str, change: &Change, wait: Duration) -> Result<Change, ApiError> {
        let path = format!("/managedZones/{zone}/changes");
        let bytes = self
            .call("create_change", reqwest::Method::POST, &path, &[], Some(change))
            .await?;
        let created: Change = Self::decode(&bytes, "changes.create")?;
        let Some(id) = created
            .id
            .clone()
            .filter(|_| created.status.as_deref() == Some("pending"))
        else {
            return Ok(created);
        };
        // `changes.get` until `done`, with backoff (100 ms doubling to 5 s)
        // for at most `wait`; a failed call ends the wait with its error.
        let get = || async {
            let bytes = self
                .call("get_change", reqwest::Method::GET, &format!("{path}/{id}"), &[], None)
                .await
                .map_err(Err)?;
            let change: Change = Self::decode(&bytes, "changes.get").map_err(Err)?;
            match change.status.as_deref() {
                Some("pending") => Err(Ok(change)),
                _ => Ok(change),
            }
        };
        let polling = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(5))
            .with_total_delay(Some(wait))
            .without_max_times();
        match get
            .retry(polling)
            .sleep(tokio::time::sleep)
            .when(|outcome: &Result<Change, ApiError>| outcome.is_ok())
            .await
        {
            Ok(done) | Err(Ok(done)) => Ok(done),
            Err(Err(error)) => Err(error),
        }
    }
}

/// The project of the machine, from the metadata server
/// (`computeMetadata/v1/project/project-id`; `GCE_METADATA_HOST` overrides
/// the host, as Google's libraries allow).
///
/// # Errors
/// The metadata server unreachable (not on GCP) or answering otherwise.
pub async fn metadata_project(http: &reqwest::Client) -> Result<String, String> {
    let host = std::env::var("GCE_METADATA_HOST").unwrap_or_else(|_| "metadata.google.internal".into());
    let url = format!("http://{host}/computeMetadata/v1/project/project-id");
    let response = http
        .get(&url)
        .header("Metadata-Flavor", "Google")
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .map_err(|e| format!("no --google-project, and the metadata server ({url}) did not answer: {e}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() || text.trim().is_empty() {
        return Err(format!(
            "no --google-project, and the metadata server ({url}) answered {status}"
        ));
    }
    Ok(text.trim().to_owned())
}
