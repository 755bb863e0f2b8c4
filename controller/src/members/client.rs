//! A member's kube client, built from a [`Connection`] (endpoint, CA
//! bundle, credentials, proxy) that each member source fills in, and the
//! fingerprint of those inputs that says when to build a new one.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use base64::Engine;
use fedns_api::MemberClusterSpec;
use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use super::credentials::{ConnectError, CredentialPolicy};
use super::eks_token::{EksAuth, EksAuthorization, EksTokens};

/// A finished client from a [`kube::client::ClientBuilder`], with EKS
/// tokens put on every request when `$eks` is set. (A macro: the
/// builder's service type differs per transport.) The filter needs a
/// service it can clone, so a buffer goes under it.
macro_rules! finish {
    ($builder:expr, $eks:expr) => {{
        let builder = $builder;
        match $eks {
            Some(auth) => builder
                .with_layer(&tower::buffer::BufferLayer::new(1024))
                .with_layer(&tower::filter::AsyncFilterLayer::new(auth))
                .build(),
            None => builder.build(),
        }
    }};
}

/// How to reach one member's API server, whatever registered it.
#[derive(Clone, Default)]
pub(crate) struct Connection {
    /// URL of the API server (`https://host:port`; a bare `host:port`, as
    /// Karmada and kubefed allow, is read as https).
    pub(crate) api_endpoint: String,
    /// PEM CA bundle (raw, not base64).
    pub(crate) ca_pem: Option<Vec<u8>>,
    /// Where the CA bundle came from, for error messages (`spec.caBundle`).
    pub(crate) ca_origin: String,
    /// Skip TLS verification.
    pub(crate) insecure: bool,
    /// Bearer token.
    pub(crate) token: Option<String>,
    /// PEM client certificate and its PEM private key (both or neither).
    pub(crate) client_identity: Option<(Vec<u8>, Vec<u8>)>,
    /// Name to check the serving certificate against instead of the endpoint's host.
    pub(crate) tls_server_name: Option<String>,
    /// A whole kubeconfig (its current context), instead of the above.
    pub(crate) kubeconfig: Option<String>,
    /// Where the credentials came from, for messages (`Secret
    /// fedns-system/c1 key kubeconfig`, `Secret argocd/cluster-c1`).
    pub(crate) origin: String,
    /// The kubeconfig's exec plugin is the operator's own (a
    /// `--clusterprofile-provider-file` provider), not the inventory
    /// object's: it runs without `--allow-exec-plugin`.
    pub(crate) operator_exec: bool,
    /// HTTP(S) or SOCKS5 proxy to reach the API server through (Karmada
    /// and kubefed `spec.proxyURL`, Argo CD `proxyUrl`).
    pub(crate) proxy_url: Option<String>,
    /// Headers sent to an HTTP(S) proxy on its `CONNECT` request, each
    /// name with its values (Karmada `spec.proxyHeader`); a fleet's
    /// egress proxy may require them (a tenant, its own credentials).
    /// Requests inside the tunnel do not carry them.
    pub(crate) proxy_headers: Vec<(String, Vec<String>)>,
    /// User name and password (HTTP basic authentication; Argo CD `username`/`password`).
    pub(crate) basic_auth: Option<(String, String)>,
    /// A credential plugin run as client-go runs it (kube-rs's exec
    /// authenticator: `KUBERNETES_EXEC_INFO`, its `cluster` when
    /// `provideClusterInfo` is set, the token cached until its
    /// `expirationTimestamp`); its `cluster` already filled in.
    pub(crate) exec: Option<kube::config::ExecConfig>,
    /// EKS tokens made in process (Argo CD `awsAuthConfig`), put on each
    /// request instead of any other credential.
    pub(crate) eks: Option<EksAuth>,
    /// A client configuration used as it is, instead of the fields above:
    /// another API server's proxy path (Karmada pull mode:
    /// `/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy`; Clusternet),
    /// or the configuration fedns itself was started with (Argo CD's
    /// in-cluster entry).
    pub(crate) through: Option<Config>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("api_endpoint", &self.api_endpoint)
            .field("through", &self.through.as_ref().map(|c| c.cluster_url.to_string()))
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A hash of everything that needs a new client when it changes.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.api_endpoint.hash(&mut hasher);
        self.ca_pem.hash(&mut hasher);
        self.insecure.hash(&mut hasher);
        self.token.hash(&mut hasher);
        self.client_identity.hash(&mut hasher);
        self.tls_server_name.hash(&mut hasher);
        self.kubeconfig.hash(&mut hasher);
        self.operator_exec.hash(&mut hasher);
        self.proxy_url.hash(&mut hasher);
        self.proxy_headers.hash(&mut hasher);
        self.basic_auth.hash(&mut hasher);
        self.eks.hash(&mut hasher);
        if let Some(exec) = &self.exec {
            // `cluster` is not serialized with the rest.
            serde_json::to_string(exec).unwrap_or_default().hash(&mut hasher);
            serde_json::to_string(&exec.cluster)
                .unwrap_or_default()
                .hash(&mut hasher);
        }
        if let Some(through) = &self.through {
            through.cluster_url.to_string().hash(&mut hasher);
            // A token or password put into it (Argo CD's in-cluster entry) rotates.
            use secrecy::ExposeSecret;
            through
                .auth_info
                .token
                .as_ref()
                .map(|t| t.expose_secret().to_owned())
                .hash(&mut hasher);
            through.auth_info.username.hash(&mut hasher);
            through
                .auth_info
                .password
                .as_ref()
                .map(|p| p.expose_secret().to_owned())
                .hash(&mut hasher);
            through.proxy_url.as_ref().map(ToString::to_string).hash(&mut hasher);
            // Impersonation extras carry a member's token through a proxy (Clusternet).
            through.auth_info.impersonate.hash(&mut hasher);
            let mut extra: Vec<_> = through.auth_info.impersonate_user_extra.iter().flatten().collect();
            extra.sort();
            extra.hash(&mut hasher);
        }
        hasher.finish()
    }

    /// A MemberCluster's connection: its spec and its Secret (key `token`
    /// or key `kubeconfig`). Errors are one-line messages for the
    /// `AuthFailed` condition.
    pub(crate) fn from_member_cluster(spec: &MemberClusterSpec, secret: Option<&Secret>) -> Result<Connection, String> {
        let mut connection = Connection {
            api_endpoint: spec.api_endpoint.clone(),
            insecure: spec.insecure_skip_tls_verify,
            ca_origin: "spec.caBundle".into(),
            ..Connection::default()
        };
        if let Some(bundle) = &spec.ca_bundle {
            connection.ca_pem = Some(
                base64::engine::general_purpose::STANDARD
                    .decode(bundle.trim())
                    .map_err(|e| format!("spec.caBundle is not base64: {e}"))?,
            );
        }
        if let Some(reference) = &spec.secret_ref {
            let secret = secret.ok_or_else(|| format!("Secret {} (spec.secretRef) not found", reference.name))?;
            if let Some(kubeconfig) = secret_value(secret, "kubeconfig") {
                connection.origin = format!("Secret {} key kubeconfig", secret.name_any());
                connection.kubeconfig =
                    Some(String::from_utf8(kubeconfig).map_err(|_| "Secret key kubeconfig is not UTF-8".to_owned())?);
            } else {
                let token = secret_value(secret, "token")
                    .ok_or_else(|| format!("Secret {} has neither key token nor key kubeconfig", secret.name_any()))?;
                connection.token = Some(token_text(token)?);
            }
        }
        Ok(connection)
    }

    /// What `policy` refuses of these credentials (the shared check of
    /// every member source and of `fedns explain --from-cluster`): a
    /// kubeconfig's files, auth providers and exec plugins, an exec
    /// plugin (Argo CD `execProviderConfig`), EKS tokens (Argo CD
    /// `awsAuthConfig`). A configuration of fedns's own (`through`) is
    /// not checked.
    ///
    /// # Errors
    /// The refusal, reason `CredentialsRefused`, naming the field.
    pub(crate) fn check(&self, policy: &CredentialPolicy) -> Result<(), ConnectError> {
        if self.through.is_some() {
            return Ok(());
        }
        let origin = if self.origin.is_empty() {
            "the credentials"
        } else {
            self.origin.as_str()
        };
        if let Some(text) = &self.kubeconfig {
            policy
                .check_kubeconfig(text, origin, self.operator_exec)
                .map_err(ConnectError::refused)?;
        }
        if let Some(exec) = &self.exec {
            policy
                .check_exec(exec, &format!("{origin}: config.execProviderConfig"))
                .map_err(ConnectError::refused)?;
        }
        if self.eks.is_some() {
            policy
                .check_eks(&self.api_endpoint, self.insecure, origin)
                .map_err(ConnectError::refused)?;
        }
        Ok(())
    }

    /// Builds the client, once `policy` allows the credentials
    /// ([`Connection::check`]): nothing of them is run or read before.
    ///
    /// # Errors
    /// `CredentialsRefused` from the check; any other failure is
    /// `AuthFailed`, a one-line message.
    pub(crate) async fn build(&self, policy: &CredentialPolicy) -> Result<Client, ConnectError> {
        self.check(policy)?;
        self.build_checked().await.map_err(ConnectError::from)
    }

    /// Builds the client from credentials already checked.
    async fn build_checked(&self) -> Result<Client, String> {
        let mut config = if let Some(through) = &self.through {
            through.clone()
        } else if let Some(text) = &self.kubeconfig {
            let kubeconfig =
                Kubeconfig::from_yaml(text).map_err(|e| format!("Secret key kubeconfig does not parse: {e}"))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("Secret key kubeconfig is not usable: {e}"))?
        } else {
            if self.api_endpoint.trim().is_empty() {
                return Err("no API endpoint (spec.apiEndpoint is empty)".into());
            }
            let endpoint = if self.api_endpoint.contains("://") {
                self.api_endpoint.clone()
            } else {
                // Karmada and kubefed allow `host:port` without a scheme.
                format!("https://{}", self.api_endpoint)
            };
            let url: http::Uri = endpoint
                .parse()
                .map_err(|e| format!("API endpoint {:?} is not a URL: {e}", self.api_endpoint))?;
            let mut config = Config::new(url);
            config.accept_invalid_certs = self.insecure;
            if let Some(pem) = &self.ca_pem {
                let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(pem)
                    .map(|c| c.map(|c| c.to_vec()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("{} is not a PEM certificate bundle: {e}", self.ca_origin))?;
                if certs.is_empty() {
                    return Err(format!("{} holds no PEM certificate", self.ca_origin));
                }
                config.root_cert = Some(certs);
            }
            if let Some(token) = &self.token {
                config.auth_info.token = Some(secrecy::SecretString::from(token.clone()));
            }
            if let Some((user, password)) = &self.basic_auth {
                config.auth_info.username = Some(user.clone());
                config.auth_info.password = Some(secrecy::SecretString::from(password.clone()));
            }
            config.auth_info.exec = self.exec.clone();
            if let Some((cert, key)) = &self.client_identity {
                let b64 = |pem: &[u8]| base64::engine::general_purpose::STANDARD.encode(pem);
                config.auth_info.client_certificate_data = Some(b64(cert));
                config.auth_info.client_key_data = Some(secrecy::SecretString::from(b64(key)));
            }
            config.tls_server_name = self.tls_server_name.clone();
            if let Some(proxy) = &self.proxy_url {
                config.proxy_url = Some(
                    proxy
                        .parse()
                        .map_err(|e| format!("proxy URL {proxy:?} is not a URL: {e}"))?,
                );
            }
            config
        };
        // Probes need each failure as it happens; watches have their own backoff.
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(5));
        let headers = proxy_connect_headers(&self.proxy_headers)?;
        let tunnelled = config
            .proxy_url
            .as_ref()
            .is_some_and(|p| matches!(p.scheme_str(), Some("http" | "https")));
        if config.auth_info.exec.is_some() {
            // kube-rs runs the plugin while it builds the client, and
            // waits for it: not on a runtime worker.
            return tokio::task::spawn_blocking(move || {
                if tunnelled && !headers.is_empty() {
                    client_with_connect_headers(config, headers, None)
                } else {
                    Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
                }
            })
            .await
            .map_err(|e| format!("cannot build a client: {e}"))?;
        }
        let eks = self
            .eks
            .clone()
            .map(|auth| EksAuthorization(std::sync::Arc::new(EksTokens::new(auth))));
        if tunnelled && !headers.is_empty() {
            return client_with_connect_headers(config, headers, eks);
        }
        // Headers for a SOCKS5 proxy have nowhere to go (Karmada sets
        // them only as an HTTP transport's CONNECT headers).
        let builder =
            kube::client::ClientBuilder::try_from(config).map_err(|e| format!("cannot build a client: {e}"))?;
        Ok(finish!(builder, eks))
    }
}

/// `headers` (name, values) as the header map of a CONNECT request.
fn proxy_connect_headers(headers: &[(String, Vec<String>)]) -> Result<http::HeaderMap, String> {
    let mut map = http::HeaderMap::new();
    for (name, values) in headers {
        let header = http::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("proxy header name {name:?} is not a valid HTTP header name"))?;
        for value in values {
            let value = http::HeaderValue::from_str(value.trim())
                .map_err(|_| format!("proxy header {name}: value {value:?} is not a valid HTTP header value"))?;
            map.append(header.clone(), value);
        }
    }
    Ok(map)
}

/// A client whose HTTP(S) proxy tunnels carry `headers` on `CONNECT`.
/// kube-rs's own client builder sends only the proxy URL's user
/// information there, so this assembles the same stack from kube-rs's
/// parts (its TLS connector, its base-URI and extra-header layers) around
/// hyper-util's proxy tunnel, which takes extra CONNECT headers. Only
/// static credentials go with it (a token, a user and password: what
/// Karmada's Secrets hold), sent as an `Authorization` header, or EKS
/// tokens (`eks`).
fn client_with_connect_headers(
    mut config: Config,
    headers: http::HeaderMap,
    eks: Option<EksAuthorization>,
) -> Result<Client, String> {
    use hyper_util::client::legacy::connect::{proxy::Tunnel, HttpConnector};
    use kube::client::{ClientBuilder, ConfigExt};
    use secrecy::ExposeSecret;

    let auth = std::mem::take(&mut config.auth_info);
    if auth.exec.is_some() || auth.auth_provider.is_some() || auth.token_file.is_some() {
        return Err("proxy headers go only with a bearer token or a user name and password".into());
    }
    let authorization = match (&auth.token, &auth.username, &auth.password) {
        (Some(token), _, _) => Some(format!("Bearer {}", token.expose_secret())),
        (None, Some(user), Some(password)) => Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.expose_secret()))
        )),
        _ => None,
    };
    if let Some(value) = authorization {
        let mut value =
            http::HeaderValue::from_str(&value).map_err(|_| "the credentials are not a valid HTTP header value")?;
        value.set_sensitive(true);
        config.headers.push((http::header::AUTHORIZATION, value));
    }
    // Client certificates stay: TLS with the member, inside the tunnel.
    config.auth_info.client_certificate_data = auth.client_certificate_data;
    config.auth_info.client_key_data = auth.client_key_data;

    let err = |e: kube::Error| format!("cannot build a client: {e}");
    let proxy = config.proxy_url.clone().ok_or("no proxy URL")?;
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(config.connect_timeout);
    // The same stack over either tunnel (plain or TLS to the proxy).
    macro_rules! over {
        ($tunnel:expr) => {{
            let connector = config.rustls_https_connector_with_connector($tunnel).map_err(err)?;
            let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build::<_, kube::client::Body>(connector);
            let builder = ClientBuilder::new(http, config.default_namespace.clone())
                .with_layer(&config.extra_headers_layer().map_err(err)?)
                .with_layer(&config.base_uri_layer());
            Ok(finish!(builder, eks))
        }};
    }
    if proxy.scheme_str() == Some("https") {
        let to_proxy = config.rustls_https_connector_with_connector(tcp).map_err(err)?;
        over!(Tunnel::new(proxy, to_proxy).with_headers(headers))
    } else {
        over!(Tunnel::new(proxy, tcp).with_headers(headers))
    }
}

/// A Secret's value under `key`, from `data` or `stringData`.
pub(crate) fn secret_value(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| v.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|v| v.as_bytes().to_vec())
        })
}

/// A bearer token from a Secret value: UTF-8, surrounding white space dropped, not empty.
pub(crate) fn token_text(token: Vec<u8>) -> Result<String, String> {
    let token = String::from_utf8(token).map_err(|_| "Secret key token is not UTF-8".to_owned())?;
    let token = token.trim();
    if token.is_empty() {
        return Err("Secret key token is empty".into());
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connection {
        Connection {
            api_endpoint: "https://127.0.0.1:6443".into(),
            token: Some("t".into()),
            ..Connection::default()
        }
    }

    #[test]
    fn every_credential_input_changes_the_fingerprint() {
        let base = connection().fingerprint();
        let mut identity = connection();
        identity.client_identity = Some((b"cert".to_vec(), b"key".to_vec()));
        let mut server_name = connection();
        server_name.tls_server_name = Some("kubernetes".into());
        let mut proxy_headers = connection();
        proxy_headers.proxy_headers = vec![("X-Tenant".into(), vec!["a".into()])];
        let mut basic = connection();
        basic.basic_auth = Some(("u".into(), "p".into()));
        let exec = |arg: &str| {
            let mut c = connection();
            c.exec = Some(kube::config::ExecConfig {
                command: Some("plugin".into()),
                cluster: Some(kube::config::ExecAuthCluster {
                    server: Some(arg.into()),
                    ..Default::default()
                }),
                ..Default::default()
            });
            c.fingerprint()
        };
        let through = |token: &str| {
            let mut config = Config::new("https://127.0.0.1:6443/proxy".parse().unwrap());
            config.auth_info.impersonate_user_extra =
                Some([("clusternet-token".to_owned(), vec![token.to_owned()])].into());
            Connection {
                through: Some(config),
                ..Connection::default()
            }
            .fingerprint()
        };
        let all = [
            base,
            identity.fingerprint(),
            server_name.fingerprint(),
            proxy_headers.fingerprint(),
            basic.fingerprint(),
            exec("https://a"),
            exec("https://b"),
            through("a"),
            through("b"),
        ];
        let distinct: std::collections::BTreeSet<u64> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{all:?}");
    }

    /// A MemberCluster Secret's kubeconfig whose user is `user`.
    fn member_secret(user: &str) -> (MemberClusterSpec, Secret) {
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: w, cluster: {{server: 'https://127.0.0.1:1'}}}}]\nusers: [{{name: u, user: {user}}}]\ncontexts: [{{name: c, context: {{cluster: w, user: u}}}}]\ncurrent-context: c\n"
        );
        let secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c1-credentials", "namespace": "fedns-system"},
            "stringData": {"kubeconfig": kubeconfig},
        }))
        .unwrap();
        let spec = serde_json::from_value(serde_json::json!({
            "apiEndpoint": "https://127.0.0.1:1", "secretRef": {"name": "c1-credentials"},
        }))
        .unwrap();
        (spec, secret)
    }

    /// Issue #57: a MemberCluster Secret's `exec` ran in the controller
    /// (and in `fedns explain --from-cluster`). Now nothing runs unless
    /// the command is allowed; then exactly that command runs.
    #[tokio::test]
    async fn a_member_secret_exec_runs_only_when_its_command_is_allowed() {
        let dir = std::env::temp_dir().join(format!("fedns-exec-refused-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let marker = dir.join("ran");
        let credential = r#"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}"#;
        let user = format!(
            "{{exec: {{command: sh, args: ['-c', 'touch {}; echo \"{credential}\"'], apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}}}}",
            marker.display()
        );
        let (spec, secret) = member_secret(&user);
        let connection = Connection::from_member_cluster(&spec, Some(&secret)).unwrap();

        let Err(err) = connection.build(&CredentialPolicy::default()).await else {
            panic!("a Secret's exec plugin was accepted without --allow-exec-plugin")
        };
        assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED);
        assert!(
            err.message
                .starts_with("Secret c1-credentials key kubeconfig: user \"u\" exec runs command \"sh\""),
            "{err}"
        );
        assert!(!marker.exists(), "the refused plugin ran");

        let other = CredentialPolicy {
            exec_plugins: ["/bin/sh".to_owned()].into(),
            ..CredentialPolicy::default()
        };
        assert!(connection.build(&other).await.is_err(), "a path is not the name");
        assert!(!marker.exists());

        let allowed = CredentialPolicy {
            exec_plugins: ["sh".to_owned()].into(),
            ..CredentialPolicy::default()
        };
        connection.build(&allowed).await.unwrap();
        assert!(marker.exists(), "the allowed plugin did not run");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue #57: `tokenFile` (and the other file fields) sent fedns's own
    /// files (its ServiceAccount token) to the Secret's server.
    #[tokio::test]
    async fn a_member_secret_naming_files_is_refused() {
        for (user, field) in [
            (
                "{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}",
                "tokenFile",
            ),
            (
                "{client-certificate: /etc/c.pem, client-key: /etc/k.pem}",
                "client-certificate",
            ),
            (
                "{auth-provider: {name: gcp, config: {cmd-path: /bin/id}}}",
                "auth-provider",
            ),
        ] {
            let (spec, secret) = member_secret(user);
            let connection = Connection::from_member_cluster(&spec, Some(&secret)).unwrap();
            let Err(err) = connection.build(&CredentialPolicy::default()).await else {
                panic!("{field} was accepted")
            };
            assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED, "{err}");
            assert!(err.message.contains(&format!("user \"u\" has {field}")), "{err}");
        }
        let (spec, secret) = member_secret("{token: t}");
        let connection = Connection::from_member_cluster(&spec, Some(&secret)).unwrap();
        assert!(connection.build(&CredentialPolicy::default()).await.is_ok());
    }

    #[tokio::test]
    async fn a_client_identity_goes_to_tls() {
        let mut c = connection();
        c.tls_server_name = Some("kubernetes".into());
        let policy = CredentialPolicy::default();
        assert!(c.build(&policy).await.is_ok());
        c.client_identity = Some((b"not a certificate".to_vec(), b"not a key".to_vec()));
        let Err(err) = c.build(&policy).await else {
            panic!("a client identity that is not PEM was accepted")
        };
        assert_eq!(err.reason, fedns_api::conditions::AUTH_FAILED);
        assert!(err.message.starts_with("cannot build a client"), "{err}");
    }
}
