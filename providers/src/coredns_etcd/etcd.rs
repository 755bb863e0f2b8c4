//! A small etcd v3 client over etcd's JSON gateway (grpc-gateway), served
//! by every etcd ≥ 3.4 on its client port: `POST /v3/kv/range`,
//! `/v3/kv/put`, `/v3/kv/deleterange`, `/v3/kv/txn` and
//! `/v3/auth/authenticate` (<https://etcd.io/docs/v3.5/dev-guide/api_grpc_gateway/>).
//!
//! Why the gateway and not gRPC: the gRPC client crates compile etcd's
//! `.proto` files with `protoc` at build time, so every machine that built
//! fedns needed a protobuf compiler and its well-known types. The gateway
//! speaks JSON over HTTP/1.1, which `reqwest` (rustls with ring) already
//! covers; keys and values travel base64-encoded, int64s as decimal
//! strings, as the proto3 JSON mapping says.
//!
//! The client holds no connection state that an etcd restart could break:
//! each request goes to the endpoint that answered last, then to the
//! others in order; a connection error moves on to the next one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::provider::error_chain;

/// Connection settings of an [`EtcdClient`].
#[derive(Debug, Clone)]
pub struct EtcdClientConfig {
    /// Client URLs, e.g. `http://127.0.0.1:2379` or `https://etcd-0:2379`.
    pub endpoints: Vec<String>,
    /// TLS settings for `https://` endpoints; None: the system's roots and
    /// no client certificate.
    pub tls: Option<EtcdTls>,
    /// User name and password for etcd's auth (`/v3/auth/authenticate`);
    /// None when auth is off.
    pub credentials: Option<(String, String)>,
    /// Connect and request timeout.
    pub timeout: Duration,
}

/// TLS to etcd: a CA to trust and/or a client identity (PEM files).
#[derive(Debug, Clone, Default)]
pub struct EtcdTls {
    /// CA certificate(s); None: the system's trusted roots.
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key.
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// What went wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// The settings cannot work (unreadable PEM file, bad URL).
    #[error("etcd client settings: {0}")]
    Config(String),
    /// No endpoint could be reached.
    #[error("no etcd endpoint reachable ({endpoints}): {last}")]
    Unreachable {
        /// The endpoints tried.
        endpoints: String,
        /// The last connection error.
        last: String,
    },
    /// etcd answered with an error (HTTP status and etcd's message).
    #[error("etcd {operation}: HTTP {status}: {message}")]
    Api {
        /// The gateway path, e.g. `kv/txn`.
        operation: String,
        /// HTTP status.
        status: u16,
        /// etcd's `message` or `error` field, or the body.
        message: String,
    },
    /// The answer was not the JSON the gateway sends.
    #[error("etcd {operation}: unreadable answer: {detail}")]
    Decode {
        /// The gateway path.
        operation: String,
        /// What did not parse.
        detail: String,
    },
}

/// One key and its value as etcd stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key (fedns's keys are UTF-8 paths; other bytes are replaced).
    pub key: String,
    /// The raw value.
    pub value: Vec<u8>,
    /// The revision of the key's last change.
    pub mod_revision: i64,
}

/// One operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    /// Write `value` at `key`.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: String,
    },
}

/// A condition a transaction checks before it applies anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnGuard {
    /// The key's `mod_revision` still equals this one (nobody changed it
    /// since it was read).
    Unchanged {
        /// The key.
        key: String,
        /// The revision it was read at.
        mod_revision: i64,
    },
    /// The key does not exist.
    Absent {
        /// The key.
        key: String,
    },
}

/// The etcd v3 client. Cheap to clone.
#[derive(Clone)]
pub struct EtcdClient {
    http: reqwest::Client,
    endpoints: Arc<Vec<String>>,
    /// Index of the endpoint that answered last.
    preferred: Arc<AtomicUsize>,
    credentials: Option<(String, String)>,
    /// The auth token, fetched on first use and again when etcd says it expired.
    token: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClient")
            .field("endpoints", &self.endpoints)
            .field("auth", &self.credentials.is_some())
            .finish_non_exhaustive()
    }
}

/// The first key after every key that starts with `prefix` (etcd's
/// `range_end` for a prefix range: the last byte < 0xff incremented).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0] // every key (etcd's convention for an all-0xff prefix)
}

/// A proto3-JSON int64 (a decimal string, or a number from some gateways).
fn int64(value: &Value) -> i64 {
    match value {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn tls_config(tls: Option<&EtcdTls>) -> Result<rustls::ClientConfig, EtcdError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    match tls.and_then(|t| t.ca_file.as_ref()) {
        Some(ca) => {
            let certs = CertificateDer::pem_file_iter(ca)
                .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
                .map_err(|e| EtcdError::Config(format!("reading CA file {}: {e}", ca.display())))?;
            if certs.is_empty() {
                return Err(EtcdError::Config(format!(
                    "CA file {} holds no certificate",
                    ca.display()
                )));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| EtcdError::Config(format!("CA file {}: {e}", ca.display())))?;
            }
        }
        None => {
            // The system's roots; unreadable ones are skipped, as curl does.
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EtcdError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots);
    let config = match tls.and_then(|t| t.identity.as_ref()) {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
                .map_err(|e| EtcdError::Config(format!("reading client certificate {}: {e}", cert.display())))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| EtcdError::Config(format!("reading client key {}: {e}", key.display())))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| EtcdError::Config(format!("client certificate {}: {e}", cert.display())))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(config)
}

impl EtcdClient {
    /// A client for `config`; connects on first use.
    ///
    /// # Errors
    /// [`EtcdError::Config`]: no endpoint, or a PEM file that cannot be
    /// read or used.
    pub fn new(config: &EtcdClientConfig) -> Result<EtcdClient, EtcdError> {
        if config.endpoints.is_empty() {
            return Err(EtcdError::Config("no etcd endpoint given".into()));
        }
        for endpoint in &config.endpoints {
            let url =
                reqwest::Url::parse(endpoint).map_err(|e| EtcdError::Config(format!("endpoint {endpoint:?}: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(EtcdError::Config(format!(
                    "endpoint {endpoint:?}: the scheme must be http or https"
                )));
            }
        }
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls_config(config.tls.as_ref())?)
            .connect_timeout(config.timeout)
            .timeout(config.timeout)
            .build()
            .map_err(|e| EtcdError::Config(format!("HTTP client: {e}")))?;
        Ok(EtcdClient {
            http,
            endpoints: Arc::new(
                config
                    .endpoints
                    .iter()
                    .map(|e| e.trim_end_matches('/').to_owned())
                    .collect(),
            ),
            preferred: Arc::new(AtomicUsize::new(0)),
            credentials: config.credentials.clone(),
            token: Arc::new(Mutex::new(None)),
        })
    }

    /// Sends one gateway request (`path` below `/v3/`, e.g. `kv/range`)
    /// and returns etcd's JSON answer. Tries every endpoint on connection
    /// errors; fetches (and on expiry refetches) the auth token.
    ///
    /// # Errors
    /// [`EtcdError::Unreachable`], [`EtcdError::Api`], [`EtcdError::Decode`].
    pub async fn call(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let mut retried_auth = false;
        loop {
            let token = if self.credentials.is_some() && path != "auth/authenticate" {
                Some(self.token().await?)
            } else {
                None
            };
            match self.send(path, body, token.as_deref()).await {
                // etcd says "invalid auth token" once a token expired
                // (simple tokens last 5 minutes by default).
                Err(EtcdError::Api { message, .. })
                    if token.is_some() && !retried_auth && message.contains("token") =>
                {
                    retried_auth = true;
                    *self.token.lock().await = None;
                }
                other => return other,
            }
        }
    }

    async fn send(&self, path: &str, body: &Value, token: Option<&str>) -> Result<Value, EtcdError> {
        let count = self.endpoints.len();
        let first = self.preferred.load(Ordering::Relaxed) % count;
        let mut last = String::new();
        for offset in 0..count {
            let index = (first + offset) % count;
            let url = format!("{}/v3/{path}", self.endpoints[index]);
            let mut request = self.http.post(&url).json(body);
            if let Some(token) = token {
                request = request.header(reqwest::header::AUTHORIZATION, token);
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) => {
                    last = format!("{url}: {}", error_chain(&e));
                    continue;
                }
            };
            self.preferred.store(index, Ordering::Relaxed);
            let status = response.status();
            let text = response.text().await.map_err(|e| EtcdError::Decode {
                operation: path.to_owned(),
                detail: error_chain(&e),
            })?;
            let parsed = serde_json::from_str::<Value>(&text);
            let failed = !status.is_success() || parsed.as_ref().is_ok_and(|v| v.get("error").is_some());
            if failed {
                let body = text.trim().chars().take(300).collect::<String>();
                let message = parsed
                    .ok()
                    .and_then(|v| {
                        v.get("message")
                            .or_else(|| v.get("error"))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or(body);
                return Err(EtcdError::Api {
                    operation: path.to_owned(),
                    status: status.as_u16(),
                    message: explain(message),
                });
            }
            let value = parsed.map_err(|e| EtcdError::Decode {
                operation: path.to_owned(),
                detail: format!("{e}: {}", text.chars().take(200).collect::<String>()),
            })?;
            return Ok(value);
        }
        Err(EtcdError::Unreachable {
            endpoints: self.endpoints.join(","),
            last,
        })
    }

    async fn token(&self) -> Result<String, EtcdError> {
        let mut guard = self.token.lock().await;
        if let Some(token) = guard.as_ref() {
            return Ok(token.clone());
        }
        let Some((name, password)) = &self.credentials else {
            return Err(EtcdError::Config("no credentials".into()));
        };
        let answer = self
            .send("auth/authenticate", &json!({"name": name, "password": password}), None)
            .await?;
        let token = answer
            .get("token")
            .and_then(Value::as_str)
            .ok_or_else(|| EtcdError::Decode {
                operation: "auth/authenticate".into(),
                detail: "no token in the answer".into(),
            })?
            .to_owned();
        *guard = Some(token.clone());
        Ok(token)
    }

    /// Every key that starts with `prefix`, in key order.
    ///
    /// # Errors
    /// As [`EtcdClient::call`].
    pub async fn range_prefix(&self, prefix: &str) -> Result<Vec<KeyValue>, EtcdError> {
        #[derive(Deserialize)]
        struct Kv {
            #[serde(default)]
            key: String,
            #[serde(default)]
            value: String,
            #[serde(default)]
            mod_revision: Value,
        }
        let body = json!({
            "key": B64.encode(prefix),
            "range_end": B64.encode(prefix_end(prefix.as_bytes())),
        });
        let answer = self.call("kv/range", &body).await?;
        let decode_error = |detail: String| EtcdError::Decode {
            operation: "kv/range".into(),
            detail,
        };
        let kvs: Vec<Kv> = match answer.get("kvs") {
            Some(kvs) => serde_json::from_value(kvs.clone()).map_err(|e| decode_error(e.to_string()))?,
            None => Vec::new(), // proto3 JSON omits an empty list
        };
        kvs.into_iter()
            .map(|kv| {
                let key = B64.decode(&kv.key).map_err(|e| decode_error(format!("key: {e}")))?;
                let value = B64.decode(&kv.value).map_err(|e| decode_error(format!("value: {e}")))?;
                Ok(KeyValue {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    value,
                    mod_revision: int64(&kv.mod_revision),
                })
            })
            .collect()
    }

    /// Writes one key.
    ///
    /// # Errors
    /// As [`EtcdClient::call`].
    pub async fn put(&self, key: &str, value: &str) -> Result<(), EtcdError> {
        self.call("kv/put", &json!({"key": B64.encode(key), "value": B64.encode(value)}))
            .await
            .map(drop)
    }

    /// Removes every key that starts with `prefix`; returns how many.
    ///
    /// # Errors
    /// As [`EtcdClient::call`].
    pub async fn delete_prefix(&self, prefix: &str) -> Result<u64, EtcdError> {
        let body = json!({
            "key": B64.encode(prefix),
            "range_end": B64.encode(prefix_end(prefix.as_bytes())),
        });
        let answer = self.call("kv/deleterange", &body).await?;
        Ok(answer.get("deleted").map_or(0, int64).max(0) as u64)
    }

    /// The store's current revision (from a response header).
    ///
    /// # Errors
    /// As [`EtcdClient::call`].
    pub async fn revision(&self) -> Result<i64, EtcdError> {
        let answer = self
            .call("kv/range", &json!({"key": B64.encode("\0"), "count_only": true}))
            .await?;
        Ok(answer.pointer("/header/revision").map_or(0, int64))
    }

    /// Applies `ops` in one transaction if every guard holds. Returns
    /// false, applying nothing, when a guard failed (someone else changed
    /// one of the keys since it was read).
    ///
    /// # Errors
    /// As [`EtcdClient::call`].
    pub async fn txn(&self, guards: &[TxnGuard], ops: &[TxnOp]) -> Result<bool, EtcdError> {
        let compare: Vec<Value> = guards
            .iter()
            .map(|guard| match guard {
                TxnGuard::Unchanged { key, mod_revision } => json!({
                    "key": B64.encode(key), "result": "EQUAL", "target": "MOD",
                    "mod_revision": mod_revision.to_string(),
                }),
                TxnGuard::Absent { key } => json!({
                    "key": B64.encode(key), "result": "EQUAL", "target": "CREATE",
                    "create_revision": "0",
                }),
            })
            .collect();
        let success: Vec<Value> = ops
            .iter()
            .map(|op| match op {
                TxnOp::Put { key, value } => {
                    json!({"request_put": {"key": B64.encode(key), "value": B64.encode(value)}})
                }
                TxnOp::Delete { key } => json!({"request_delete_range": {"key": B64.encode(key)}}),
            })
            .collect();
        let answer = self
            .call("kv/txn", &json!({"compare": compare, "success": success}))
            .await?;
        // proto3 JSON leaves `succeeded` out when it is false.
        Ok(answer.get("succeeded").and_then(Value::as_bool).unwrap_or(false))
    }
}

/// etcd's message, with what to do where etcd's own words do not say it.
fn explain(message: String) -> String {
    // etcd maps a client certificate's CommonName to a user only over gRPC;
    // with auth on, its JSON gateway refuses any certificate that has one.
    if message.contains("CommonName of client sending a request against gateway") {
        return format!(
            "{message} (etcd's auth is on and the client certificate has a CommonName: \
             use a client certificate without one, with --etcd-username and FEDNS_ETCD_PASSWORD)"
        );
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_range_end() {
        assert_eq!(prefix_end(b"/skydns/"), b"/skydns0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn int64_in_both_json_forms() {
        assert_eq!(int64(&json!("42")), 42);
        assert_eq!(int64(&json!(42)), 42);
        assert_eq!(int64(&json!(null)), 0);
    }

    #[test]
    fn the_gateway_common_name_refusal_says_what_to_do() {
        let message = explain("CommonName of client sending a request against gateway will be ignored".into());
        assert!(message.contains("without one"), "{message}");
        assert_eq!(
            explain("etcdserver: user name is empty".into()),
            "etcdserver: user name is empty"
        );
    }

    #[test]
    fn bad_settings_are_reported() {
        let config = |endpoints: Vec<&str>| EtcdClientConfig {
            endpoints: endpoints.into_iter().map(str::to_owned).collect(),
            tls: None,
            credentials: None,
            timeout: Duration::from_secs(1),
        };
        assert!(matches!(EtcdClient::new(&config(vec![])), Err(EtcdError::Config(_))));
        let error = EtcdClient::new(&config(vec!["unix:///run/etcd.sock"])).unwrap_err();
        assert!(error.to_string().contains("http or https"), "{error}");
        let mut missing = config(vec!["https://127.0.0.1:2379"]);
        missing.tls = Some(EtcdTls {
            ca_file: Some("/nonexistent/ca.pem".into()),
            identity: None,
        });
        let error = EtcdClient::new(&missing).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");
    }
}
