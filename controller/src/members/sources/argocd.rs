//! Argo CD's cluster Secrets as a member source: Secrets labelled
//! `argocd.argoproj.io/secret-type: cluster` in Argo CD's namespace, with
//! keys `name`, `server` and `config` (Argo CD's declarative setup,
//! `docs/operator-manual/declarative-setup.md`, "Clusters"). `config` is
//! the JSON of Argo CD's `ClusterConfig` (`pkg/apis/application/v1alpha1/types.go`).
//! What is accepted and how a cluster is reached follow Argo CD
//! (argoproj/argo-cd `util/db/cluster.go` `SecretToCluster`, and
//! `Cluster.RawRestConfig` in `pkg/apis/application/v1alpha1/types.go`):
//!
//! - `name` and `config` may be missing: the member is then named by the
//!   Secret, and the config is empty. Only a `config` that is not JSON is
//!   an error. `server` loses trailing slashes.
//! - `https://kubernetes.default.svc` is Argo CD's own cluster, reached
//!   with the configuration fedns was started with for the Argo CD
//!   inventory (its `--argocd-kubeconfig`, else fedns's kubeconfig, else
//!   the pod's service account), with `bearerToken` or
//!   `username`/`password` in place of its credentials when set.
//! - Other servers: `execProviderConfig` (a credential plugin, run as
//!   client-go runs it, never interactively), else `bearerToken`,
//!   `username`/`password` and `tlsClientConfig` (`caData`,
//!   `certData`/`keyData`, `insecure`, `serverName`), or none; `proxyUrl`
//!   for every cluster. A plugin runs only when the operator named its
//!   command (`--allow-exec-plugin`, matched exactly, as Argo CD's own
//!   `argocd-k8s-auth`); otherwise the member is refused
//!   ([`crate::members::credentials`]): whoever can write cluster Secrets
//!   in Argo CD's namespace would choose what fedns runs.
//! - `awsAuthConfig` comes first, as in Argo CD, which runs
//!   `argocd-k8s-auth aws --cluster-name C [--role-arn R] [--profile P]`:
//!   fedns makes the same EKS token in process (a presigned STS
//!   `GetCallerIdentity` covering `x-k8s-aws-id: C`, from the AWS
//!   credential chain of fedns's pod, through the profile and the role
//!   when set; [`crate::members::eks_token`]), renewed before it expires.
//!   Only with `--allow-argocd-aws-auth`, and only for an EKS endpoint
//!   (`https://<id>.<zone>.<region>.eks.amazonaws.com`) whose
//!   certificate is verified: the token carries fedns's AWS identity.

use crate::events::Recorder;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::config::{ExecAuthCluster, ExecConfig, ExecInteractiveMode};
use kube::runtime::reflector::Store;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use super::{base64_field, each_translated, engine_member, topology_from_labels, Inventory, MemberSource, Translated};
use crate::members::client::{secret_value, Connection};
use crate::members::credentials::ConnectError;
use crate::members::eks_token::EksAuth;

/// Label (and value) that makes a Secret an Argo CD cluster.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// Value of [`SECRET_TYPE_LABEL`] on cluster Secrets.
pub const SECRET_TYPE_CLUSTER: &str = "cluster";
/// The server address Argo CD reads as its own cluster
/// (`KubernetesInternalAPIServerAddr`).
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";

/// Argo CD's `ClusterConfig` (the fields fedns reads or reports).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfig {
    /// Basic-auth user.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// Basic-auth password.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub password: String,
    /// Bearer token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bearer_token: String,
    /// TLS settings and client certificate.
    #[serde(default)]
    pub tls_client_config: TlsClientConfig,
    /// AWS IAM authentication (EKS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_auth_config: Option<AwsAuthConfig>,
    /// Credential plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_provider_config: Option<ExecProviderConfig>,
    /// Proxy URL between Argo CD (here fedns) and the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
}

/// Argo CD's `AWSAuthConfig`: an EKS cluster reached with the pod's AWS
/// identity.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AwsAuthConfig {
    /// The EKS cluster's name (signed into the token).
    #[serde(default)]
    pub cluster_name: String,
    /// A role to assume first (note Argo CD's spelling, `roleARN`).
    #[serde(default, rename = "roleARN", skip_serializing_if = "String::is_empty")]
    pub role_arn: String,
    /// A profile of the shared AWS configuration files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile: String,
}

/// Argo CD's `ExecProviderConfig`: a client-go credential plugin.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExecProviderConfig {
    /// Command to run.
    #[serde(default)]
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables added to fedns's own.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// `client.authentication.k8s.io/v1` or `v1beta1`: the ExecCredential version exchanged.
    #[serde(default)]
    pub api_version: String,
    /// Shown when the command cannot be run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub install_hint: String,
    /// Pass the cluster (server, CA, `config`) in `KUBERNETES_EXEC_INFO`.
    #[serde(default)]
    pub provide_cluster_info: bool,
    /// Cluster-specific data for the plugin (`spec.cluster.config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// Argo CD's `TLSClientConfig`; the `*Data` fields are Go `[]byte`,
/// base64 in JSON, each PEM once decoded.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TlsClientConfig {
    /// Skip verification of the server's certificate.
    #[serde(default)]
    pub insecure: bool,
    /// Name to verify the server's certificate against.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    /// Client certificate (base64 of PEM).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_data: String,
    /// Client key (base64 of PEM).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_data: String,
    /// CA bundle (base64 of PEM).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_data: String,
}

/// Argo CD's namespace: its cluster Secrets and an Event recorder there.
#[derive(Clone)]
pub struct ArgocdInputs {
    /// Cluster Secrets (selected by label; keys `name`, `server`, `config` kept).
    pub secrets: Store<Secret>,
    /// Events on the Secrets.
    pub recorder: Recorder,
    /// The client configuration of the cluster holding the Secrets, which
    /// reaches the in-cluster entry ([`IN_CLUSTER_SERVER`]); `None`: that
    /// entry is reported as unreachable.
    pub in_cluster: Option<kube::Config>,
}

impl Inventory for ArgocdInputs {
    fn source(&self) -> MemberSource {
        MemberSource::Argocd
    }

    fn members(&self, namespace: &str) -> Vec<(Translated, Recorder, ObjectReference)> {
        let clusters = self
            .secrets
            .state()
            .into_iter()
            .filter(|s| s.labels().get(SECRET_TYPE_LABEL).map(String::as_str) == Some(SECRET_TYPE_CLUSTER))
            .collect();
        each_translated(clusters, &self.recorder, |s| {
            translate(s, self.in_cluster.as_ref(), namespace)
        })
    }
}

/// How an Argo CD cluster Secret becomes a member, named by its key `name`
/// (the Secret's name when that key is missing or empty). Region and
/// zone from the Secret's labels `topology.kubernetes.io/region` and
/// `topology.kubernetes.io/zone` (Argo CD's cluster labels), else the
/// member's Nodes. Argo CD keeps no readiness in the Secret: none is seeded.
/// `in_cluster` reaches [`IN_CLUSTER_SERVER`].
pub(crate) fn translate(secret: &Secret, in_cluster: Option<&kube::Config>, namespace: &str) -> Translated {
    let text = |key: &str| {
        secret_value(secret, key)
            .and_then(|v| String::from_utf8(v).ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let name = text("name").unwrap_or_else(|| secret.name_any());
    let server = text("server").unwrap_or_default().trim_end_matches('/').to_owned();
    let (region, zones) = topology_from_labels(secret.labels());
    Translated {
        member: engine_member(&name, namespace, "argocd", &server, region, zones, None),
        connection: connection(secret, &server, text("config"), in_cluster).map_err(ConnectError::from),
        engine_ready: None,
    }
}

fn connection(
    secret: &Secret,
    server: &str,
    config: Option<String>,
    in_cluster: Option<&kube::Config>,
) -> Result<Connection, String> {
    let id = format!(
        "Secret {}/{}",
        secret.namespace().unwrap_or_default(),
        secret.name_any()
    );
    if server.is_empty() {
        return Err(format!("{id} has no key server"));
    }
    let config: ClusterConfig = match config {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{id} key config is not Argo CD's ClusterConfig JSON: {e}"))?,
        None => ClusterConfig::default(),
    };
    let proxy_url = Some(config.proxy_url.trim().to_owned()).filter(|p| !p.is_empty());
    if server == IN_CLUSTER_SERVER {
        return in_cluster_connection(&id, &config, proxy_url, in_cluster);
    }
    let tls = &config.tls_client_config;
    let ca_pem = if tls.ca_data.is_empty() {
        None
    } else {
        Some(base64_field(&tls.ca_data, "config.tlsClientConfig.caData")?)
    };
    let identity = match (tls.cert_data.is_empty(), tls.key_data.is_empty()) {
        (true, true) => None,
        (false, false) => Some((
            base64_field(&tls.cert_data, "config.tlsClientConfig.certData")?,
            base64_field(&tls.key_data, "config.tlsClientConfig.keyData")?,
        )),
        _ => return Err(format!("{id}: config.tlsClientConfig needs both certData and keyData")),
    };
    let mut connection = Connection {
        api_endpoint: server.to_owned(),
        ca_pem,
        ca_origin: format!("{id} config.tlsClientConfig.caData"),
        insecure: tls.insecure,
        client_identity: identity,
        tls_server_name: Some(tls.server_name.clone()).filter(|n| !n.is_empty()),
        proxy_url,
        origin: id.clone(),
        ..Connection::default()
    };
    // Argo CD's order: AWS, then a plugin, then static credentials; the
    // first two ignore bearerToken and username/password.
    if let Some(aws) = &config.aws_auth_config {
        let nonempty = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        // Argo CD passes an empty name on; the token would then be
        // refused by every cluster, so say so here.
        let cluster_name =
            nonempty(&aws.cluster_name).ok_or_else(|| format!("{id}: config.awsAuthConfig.clusterName is empty"))?;
        connection.eks = Some(EksAuth {
            cluster_name,
            role_arn: nonempty(&aws.role_arn),
            profile: nonempty(&aws.profile),
        });
        return Ok(connection);
    }
    if let Some(exec) = &config.exec_provider_config {
        connection.exec = Some(exec_config(&id, exec, &connection)?);
        return Ok(connection);
    }
    connection.token = Some(config.bearer_token.trim().to_owned()).filter(|t| !t.is_empty());
    if !config.username.is_empty() || !config.password.is_empty() {
        connection.basic_auth = Some((config.username.clone(), config.password.clone()));
    }
    Ok(connection)
}

/// Argo CD's own cluster: fedns's configuration for the cluster holding
/// the Secrets, its credentials replaced by the Secret's `bearerToken`
/// or `username`/`password` when either is set (Argo CD overrides the
/// in-cluster credentials the same way; the Secret's TLS settings and
/// plugins are not read for it).
fn in_cluster_connection(
    id: &str,
    config: &ClusterConfig,
    proxy_url: Option<String>,
    in_cluster: Option<&kube::Config>,
) -> Result<Connection, String> {
    let mut through = in_cluster.cloned().ok_or_else(|| {
        format!("{id}: {IN_CLUSTER_SERVER} is Argo CD's own cluster, and fedns has no configuration for it")
    })?;
    let token = config.bearer_token.trim();
    if !token.is_empty() || !config.username.is_empty() || !config.password.is_empty() {
        through.auth_info = kube::config::AuthInfo::default();
        if !token.is_empty() {
            through.auth_info.token = Some(secrecy::SecretString::from(token.to_owned()));
        }
        if !config.username.is_empty() || !config.password.is_empty() {
            through.auth_info.username = Some(config.username.clone());
            through.auth_info.password = Some(secrecy::SecretString::from(config.password.clone()));
        }
    }
    if let Some(proxy) = &proxy_url {
        through.proxy_url = Some(
            proxy
                .parse()
                .map_err(|e| format!("{id}: config.proxyUrl {proxy:?} is not a URL: {e}"))?,
        );
    }
    Ok(Connection {
        api_endpoint: IN_CLUSTER_SERVER.to_owned(),
        through: Some(through),
        ..Connection::default()
    })
}

/// Argo CD's `execProviderConfig` as kube-rs's exec configuration, never
/// interactive (as Argo CD sets it), with the cluster's server, CA, TLS
/// name, proxy and `config` when `provideClusterInfo` is set.
fn exec_config(id: &str, exec: &ExecProviderConfig, connection: &Connection) -> Result<ExecConfig, String> {
    if exec.command.trim().is_empty() {
        return Err(format!("{id}: config.execProviderConfig.command is empty"));
    }
    // client-go refuses any other ExecCredential version (v1alpha1 is gone).
    const VERSIONS: [&str; 2] = [
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
    ];
    if !VERSIONS.contains(&exec.api_version.as_str()) {
        return Err(format!(
            "{id}: config.execProviderConfig.apiVersion {:?} is not one of {}",
            exec.api_version,
            VERSIONS.join(", ")
        ));
    }
    let env = exec
        .env
        .iter()
        .map(|(name, value)| [("name".to_owned(), name.clone()), ("value".to_owned(), value.clone())].into())
        .collect();
    let cluster = exec.provide_cluster_info.then(|| ExecAuthCluster {
        server: Some(connection.api_endpoint.clone()),
        insecure_skip_tls_verify: Some(connection.insecure).filter(|i| *i),
        certificate_authority_data: connection.ca_pem.clone(),
        proxy_url: connection.proxy_url.clone(),
        tls_server_name: connection.tls_server_name.clone(),
        config: exec.config.clone(),
    });
    Ok(ExecConfig {
        api_version: Some(exec.api_version.clone()),
        command: Some(exec.command.clone()),
        args: Some(exec.args.clone()).filter(|a| !a.is_empty()),
        env: Some(env).filter(|e: &Vec<_>| !e.is_empty()),
        install_hint: Some(exec.install_hint.clone()).filter(|h| !h.is_empty()),
        interactive_mode: Some(ExecInteractiveMode::Never),
        provide_cluster_info: exec.provide_cluster_info,
        cluster,
        ..ExecConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::sources::{REGION_LABEL, ZONE_LABEL};
    use serde_json::json;

    fn secret(data: serde_json::Value) -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": "cluster-w1", "namespace": "argocd",
                "labels": {SECRET_TYPE_LABEL: "cluster", REGION_LABEL: "us", ZONE_LABEL: "us-1"}},
            "stringData": data,
        }))
        .unwrap()
    }

    #[test]
    fn reads_token_tls_and_labels() {
        let config = json!({"bearerToken": "tok", "tlsClientConfig": {"insecure": false, "caData": "LS0tLS0=",
            "serverName": "kubernetes", "certData": "Y2VydA==", "keyData": "a2V5"}, "proxyUrl": "http://127.0.0.1:3128"});
        let t = translate(
            &secret(json!({"name": "w1", "server": "https://127.0.0.1:6443/", "config": config.to_string()})),
            None,
            "fedns-system",
        );
        assert_eq!(t.member.metadata.name.as_deref(), Some("w1"));
        assert_eq!(t.member.spec.region.as_deref(), Some("us"));
        assert_eq!(t.member.spec.zones, vec!["us-1"]);
        assert!(t.engine_ready.is_none());
        let c = t.connection.unwrap();
        assert_eq!(
            c.api_endpoint, "https://127.0.0.1:6443",
            "trailing slash dropped, as Argo CD does"
        );
        assert_eq!(c.token.as_deref(), Some("tok"));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert_eq!(c.client_identity, Some((b"cert".to_vec(), b"key".to_vec())));
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(c.proxy_url.as_deref(), Some("http://127.0.0.1:3128"));
    }

    /// Shapes Argo CD's `SecretToCluster` (argoproj/argo-cd
    /// 37ee0097cf851bc2dd7665fc081bbce61a7e836e, `util/db/cluster.go`)
    /// accepts: no `name` (named by the Secret), no `config` (no
    /// credentials), user name and password.
    #[test]
    fn a_secret_without_name_or_config_is_accepted_as_argo_cd_does() {
        let t = translate(&secret(json!({"server": "https://127.0.0.1:6443"})), None, "ns");
        assert_eq!(
            t.member.metadata.name.as_deref(),
            Some("cluster-w1"),
            "named by the Secret"
        );
        let c = t.connection.unwrap();
        assert_eq!(c.api_endpoint, "https://127.0.0.1:6443");
        assert!(c.token.is_none() && c.client_identity.is_none() && c.exec.is_none());
        let basic = json!({"username": "u", "password": "p"}).to_string();
        let c = translate(
            &secret(json!({"server": "https://127.0.0.1:6443", "config": basic})),
            None,
            "ns",
        )
        .connection
        .unwrap();
        assert_eq!(c.basic_auth, Some(("u".to_owned(), "p".to_owned())));
    }

    #[test]
    fn the_in_cluster_entry_is_fedns_own_configuration() {
        let own = kube::Config::new("https://127.0.0.1:7443".parse().unwrap());
        // As Argo CD writes its in-cluster Secret: no credentials.
        let t = translate(
            &secret(
                json!({"name": "in-cluster", "server": "https://kubernetes.default.svc/",
                "config": "{\"tlsClientConfig\":{\"insecure\":false}}"}),
            ),
            Some(&own),
            "ns",
        );
        let through = t.connection.unwrap().through.unwrap();
        assert_eq!(through.cluster_url.to_string(), "https://127.0.0.1:7443/");
        assert!(through.auth_info.token.is_none());
        // A bearer token replaces the configuration's credentials.
        let c = translate(
            &secret(json!({"server": IN_CLUSTER_SERVER, "config": "{\"bearerToken\":\"sa\"}"})),
            Some(&own),
            "ns",
        )
        .connection
        .unwrap();
        use secrecy::ExposeSecret;
        let token = c.through.as_ref().unwrap().auth_info.token.as_ref().unwrap();
        assert_eq!(token.expose_secret(), "sa");
        let err = translate(&secret(json!({"server": IN_CLUSTER_SERVER})), None, "ns")
            .connection
            .unwrap_err()
            .message;
        assert!(err.contains("Argo CD's own cluster"), "{err}");
    }

    /// `execProviderConfig` as Argo CD's `RawRestConfig` passes it to
    /// client-go (argoproj/argo-cd 37ee0097cf851bc2dd7665fc081bbce61a7e836e,
    /// `pkg/apis/application/v1alpha1/types.go`): never interactive, the
    /// cluster's info with `config` when `provideClusterInfo` is set; a
    /// bearer token beside it is not used.
    #[test]
    fn an_exec_provider_config_runs_as_client_go_would() {
        let config = json!({"bearerToken": "ignored", "tlsClientConfig": {"caData": "LS0tLS0=", "serverName": "kubernetes"},
            "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["gcp"], "env": {"A": "1"},
                "apiVersion": "client.authentication.k8s.io/v1beta1", "provideClusterInfo": true,
                "config": {"clusterName": "w1"}}});
        let c = translate(
            &secret(json!({"name": "w1", "server": "https://127.0.0.1:6443", "config": config.to_string()})),
            None,
            "ns",
        )
        .connection
        .unwrap();
        assert!(c.token.is_none(), "Argo CD does not use bearerToken with a plugin");
        let exec = c.exec.unwrap();
        assert_eq!(exec.command.as_deref(), Some("argocd-k8s-auth"));
        assert_eq!(exec.args, Some(vec!["gcp".to_owned()]));
        assert_eq!(
            exec.api_version.as_deref(),
            Some("client.authentication.k8s.io/v1beta1")
        );
        assert_eq!(exec.interactive_mode, Some(ExecInteractiveMode::Never));
        assert_eq!(exec.env.unwrap()[0]["name"], "A");
        let cluster = exec.cluster.unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some(&b"-----"[..]));
        assert_eq!(cluster.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(cluster.config, Some(json!({"clusterName": "w1"})));
    }

    /// `awsAuthConfig` comes before a plugin and static credentials, as in
    /// Argo CD's `RawRestConfig` (the same file): its fields become the
    /// in-process EKS token's inputs, and nothing else authenticates.
    #[test]
    fn an_aws_auth_config_makes_eks_tokens_and_nothing_else_authenticates() {
        let config = json!({"bearerToken": "ignored", "tlsClientConfig": {"caData": "LS0tLS0="},
            "awsAuthConfig": {"clusterName": "prod", "roleARN": "arn:aws:iam::123456789012:role/argocd", "profile": "fleet"},
            "execProviderConfig": {"command": "never", "apiVersion": "client.authentication.k8s.io/v1"}});
        let c = translate(
            &secret(json!({"name": "w1", "server": "https://127.0.0.1:6443", "config": config.to_string()})),
            None,
            "ns",
        )
        .connection
        .unwrap();
        assert_eq!(
            c.eks,
            Some(EksAuth {
                cluster_name: "prod".into(),
                role_arn: Some("arn:aws:iam::123456789012:role/argocd".into()),
                profile: Some("fleet".into()),
            })
        );
        assert!(c.token.is_none() && c.exec.is_none() && c.basic_auth.is_none());
        assert_eq!(c.ca_pem.as_deref(), Some(&b"-----"[..]), "the TLS settings stay");
    }

    fn check(
        c: &Connection,
        exec_plugins: &[&str],
        aws: bool,
    ) -> Result<(), crate::members::credentials::ConnectError> {
        c.check(&crate::members::CredentialPolicy {
            exec_plugins: exec_plugins.iter().map(|p| (*p).to_owned()).collect(),
            argocd_aws_auth: aws,
        })
    }

    /// Issue #57: a cluster Secret's `execProviderConfig` ran whatever
    /// command it named. Now only a command the operator allowed, matched
    /// exactly, as Argo CD's own `argocd-k8s-auth`.
    #[test]
    fn an_exec_provider_config_runs_only_an_allowed_command() {
        let config = |command: &str| {
            json!({"execProviderConfig": {"command": command, "args": ["gcp"],
                "apiVersion": "client.authentication.k8s.io/v1beta1"}})
            .to_string()
        };
        let c = |command: &str| {
            translate(
                &secret(json!({"name": "w1", "server": "https://127.0.0.1:6443", "config": config(command)})),
                None,
                "ns",
            )
            .connection
            .unwrap()
        };
        let err = check(&c("id"), &[], false).unwrap_err();
        assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED);
        assert_eq!(
            err.message,
            "Secret argocd/cluster-w1: config.execProviderConfig runs command \"id\"; fedns runs a credential plugin named by a Secret or an inventory object only when it is started with --allow-exec-plugin=id"
        );
        assert!(check(&c("argocd-k8s-auth"), &[], false).is_err());
        assert_eq!(check(&c("argocd-k8s-auth"), &["argocd-k8s-auth"], false), Ok(()));
        assert!(check(&c("/tmp/argocd-k8s-auth"), &["argocd-k8s-auth"], false).is_err());
        assert!(check(&c("id"), &["argocd-k8s-auth"], false).is_err());
    }

    /// Issue #57: `awsAuthConfig` had fedns sign EKS tokens with its own
    /// AWS identity for any server. Now only with --allow-argocd-aws-auth,
    /// for an EKS endpoint whose certificate is verified.
    #[test]
    fn an_aws_auth_config_needs_the_flag_and_an_eks_endpoint() {
        let c = |server: &str, insecure: bool| {
            let config = json!({"awsAuthConfig": {"clusterName": "prod"}, "tlsClientConfig": {"insecure": insecure}});
            translate(
                &secret(json!({"name": "w1", "server": server, "config": config.to_string()})),
                None,
                "ns",
            )
            .connection
            .unwrap()
        };
        let eks = "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com";
        let err = check(&c(eks, false), &[], false).unwrap_err();
        assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED);
        assert!(
            err.message.contains("only when started with --allow-argocd-aws-auth"),
            "{err}"
        );
        assert_eq!(check(&c(eks, false), &[], true), Ok(()));
        for server in [
            "https://127.0.0.1:6443",
            "https://attacker.example",
            "http://a.gr7.eu-west-1.eks.amazonaws.com",
        ] {
            let err = check(&c(server, false), &[], true).unwrap_err();
            assert!(err.message.contains("is not an EKS endpoint"), "{server}: {err}");
        }
        assert!(check(&c(eks, true), &[], true)
            .unwrap_err()
            .message
            .contains("tlsClientConfig.insecure"));
    }

    /// Argo CD's own cluster is reached with fedns's own configuration,
    /// which the check leaves alone (it is the operator's).
    #[test]
    fn the_in_cluster_entry_is_not_checked() {
        let mut own = kube::Config::new("https://127.0.0.1:7443".parse().unwrap());
        own.auth_info.exec = Some(kube::config::ExecConfig {
            command: Some("aws".into()),
            ..Default::default()
        });
        let c = translate(&secret(json!({"server": IN_CLUSTER_SERVER})), Some(&own), "ns")
            .connection
            .unwrap();
        assert_eq!(check(&c, &[], false), Ok(()));
    }

    #[test]
    fn unsupported_and_malformed_configs_are_clear_errors() {
        let err = |data: serde_json::Value| translate(&secret(data), None, "ns").connection.unwrap_err().message;
        let server = "https://127.0.0.1:6443";
        let aws = json!({"awsAuthConfig": {"roleARN": "arn:aws:iam::1:role/x"}});
        assert!(err(json!({"name": "w1", "server": server, "config": aws.to_string()}))
            .contains("config.awsAuthConfig.clusterName is empty"));
        let old =
            json!({"execProviderConfig": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1alpha1"}});
        assert!(err(json!({"name": "w1", "server": server, "config": old.to_string()}))
            .contains("apiVersion \"client.authentication.k8s.io/v1alpha1\" is not one of"));
        let no_command = json!({"execProviderConfig": {"apiVersion": "client.authentication.k8s.io/v1"}});
        assert!(
            err(json!({"name": "w1", "server": server, "config": no_command.to_string()})).contains("command is empty")
        );
        assert!(err(json!({"name": "w1", "server": server, "config": "{not json"}))
            .contains("key config is not Argo CD's ClusterConfig JSON"));
        assert!(err(
            json!({"name": "w1", "server": server, "config": "{\"tlsClientConfig\": {\"certData\": \"Y2VydA==\"}}"})
        )
        .contains("needs both certData and keyData"));
        assert!(err(json!({"name": "w1", "server": server, "config": "{\"bearerToken\": \"t\", \"tlsClientConfig\": {\"caData\": \"%%\"}}"}))
            .contains("caData is not base64"));
        assert!(err(json!({"name": "w1", "config": "{}"})).ends_with("has no key server"));
    }
}
