//! Argo CD's cluster Secrets as a member source: Secrets labelled
//! `argocd.argoproj.io/secret-type: cluster` in Argo CD's namespace, with
//! keys `name`, `server` and `config` (Argo CD's declarative setup,
//! `docs/operator-manual/declarative-setup.md`, "Clusters"). `config` is
//! the JSON of Argo CD's `ClusterConfig` (`pkg/apis/application/v1alpha1/types.go`).
//!
//! Credentials read from `config`: `bearerToken`; `tlsClientConfig`
//! (`caData`, `certData`/`keyData` client certificates, `insecure`,
//! `serverName`), `proxyUrl`. Not supported, reported on the Secret:
//! `execProviderConfig` (fedns does not run a command a Secret names:
//! whoever can write a Secret in Argo CD's namespace would choose it),
//! `awsAuthConfig` (needs a cloud's IAM) and `username`/`password`.

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::Store;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use super::{base64_field, each_translated, engine_member, topology_from_labels, Inventory, MemberSource, Translated};
use crate::members::client::{secret_value, Connection};

/// Label (and value) that makes a Secret an Argo CD cluster.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// Value of [`SECRET_TYPE_LABEL`] on cluster Secrets.
pub const SECRET_TYPE_CLUSTER: &str = "cluster";

/// Argo CD's `ClusterConfig` (the fields fedns reads or reports).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfig {
    /// Basic-auth user (not supported).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// Bearer token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bearer_token: String,
    /// TLS settings and client certificate.
    #[serde(default)]
    pub tls_client_config: TlsClientConfig,
    /// AWS IAM authentication (not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_auth_config: Option<serde_json::Value>,
    /// Credential plugin (not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_provider_config: Option<serde_json::Value>,
    /// Proxy URL between Argo CD (here fedns) and the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
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
        each_translated(clusters, &self.recorder, |s| translate(s, namespace))
    }
}

/// How an Argo CD cluster Secret becomes a member, named by its key `name`
/// (the Secret's name when that key is missing, with an error). Region and
/// zone from the Secret's labels `topology.kubernetes.io/region` and
/// `topology.kubernetes.io/zone` (Argo CD's cluster labels), else the
/// member's Nodes. Argo CD keeps no readiness in the Secret: none is seeded.
pub(crate) fn translate(secret: &Secret, namespace: &str) -> Translated {
    let text = |key: &str| {
        secret_value(secret, key)
            .and_then(|v| String::from_utf8(v).ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let name = text("name").unwrap_or_else(|| secret.name_any());
    let server = text("server").unwrap_or_default();
    let (region, zones) = topology_from_labels(secret.labels());
    Translated {
        member: engine_member(&name, namespace, "argocd", &server, region, zones, None),
        connection: connection(secret, text("name").is_some(), &server, text("config")),
        engine_ready: None,
    }
}

fn connection(secret: &Secret, named: bool, server: &str, config: Option<String>) -> Result<Connection, String> {
    let id = format!(
        "Secret {}/{}",
        secret.namespace().unwrap_or_default(),
        secret.name_any()
    );
    if !named {
        return Err(format!("{id} has no key name"));
    }
    if server.is_empty() {
        return Err(format!("{id} has no key server"));
    }
    let config = config.ok_or_else(|| format!("{id} has no key config"))?;
    let config: ClusterConfig = serde_json::from_str(&config)
        .map_err(|e| format!("{id} key config is not Argo CD's ClusterConfig JSON: {e}"))?;
    if config.exec_provider_config.is_some() {
        return Err(format!(
            "{id}: config.execProviderConfig is not supported (fedns runs no credential plugins); give the cluster a bearerToken or tlsClientConfig.certData/keyData"
        ));
    }
    if config.aws_auth_config.is_some() {
        return Err(format!(
            "{id}: config.awsAuthConfig is not supported (it needs AWS IAM, which fedns does not use); give the cluster a bearerToken or tlsClientConfig.certData/keyData"
        ));
    }
    let tls = &config.tls_client_config;
    let identity = match (tls.cert_data.is_empty(), tls.key_data.is_empty()) {
        (true, true) => None,
        (false, false) => Some((
            base64_field(&tls.cert_data, "config.tlsClientConfig.certData")?,
            base64_field(&tls.key_data, "config.tlsClientConfig.keyData")?,
        )),
        _ => return Err(format!("{id}: config.tlsClientConfig needs both certData and keyData")),
    };
    let token = Some(config.bearer_token.trim().to_owned()).filter(|t| !t.is_empty());
    if token.is_none() && identity.is_none() {
        let basic = if config.username.is_empty() {
            ""
        } else {
            " (username/password is not supported)"
        };
        return Err(format!(
            "{id}: config has neither bearerToken nor tlsClientConfig.certData/keyData{basic}"
        ));
    }
    let ca_pem = if tls.ca_data.is_empty() {
        None
    } else {
        Some(base64_field(&tls.ca_data, "config.tlsClientConfig.caData")?)
    };
    Ok(Connection {
        api_endpoint: server.to_owned(),
        ca_pem,
        ca_origin: format!("{id} config.tlsClientConfig.caData"),
        insecure: tls.insecure,
        token,
        client_identity: identity,
        tls_server_name: Some(tls.server_name.clone()).filter(|n| !n.is_empty()),
        proxy_url: Some(config.proxy_url.clone()).filter(|p| !p.is_empty()),
        ..Connection::default()
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
            &secret(json!({"name": "w1", "server": "https://127.0.0.1:6443", "config": config.to_string()})),
            "fedns-system",
        );
        assert_eq!(t.member.metadata.name.as_deref(), Some("w1"));
        assert_eq!(t.member.spec.region.as_deref(), Some("us"));
        assert_eq!(t.member.spec.zones, vec!["us-1"]);
        assert!(t.engine_ready.is_none());
        let c = t.connection.unwrap();
        assert_eq!(c.token.as_deref(), Some("tok"));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert_eq!(c.client_identity, Some((b"cert".to_vec(), b"key".to_vec())));
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(c.proxy_url.as_deref(), Some("http://127.0.0.1:3128"));
    }

    #[test]
    fn unsupported_and_malformed_configs_are_clear_errors() {
        let err = |data: serde_json::Value| translate(&secret(data), "ns").connection.unwrap_err();
        let server = "https://127.0.0.1:6443";
        let exec = json!({"execProviderConfig": {"command": "argocd-k8s-auth", "apiVersion": "client.authentication.k8s.io/v1beta1"}});
        assert!(err(json!({"name": "w1", "server": server, "config": exec.to_string()}))
            .contains("execProviderConfig is not supported"));
        let aws = json!({"awsAuthConfig": {"clusterName": "prod", "roleARN": "arn:aws:iam::1:role/x"}});
        assert!(err(json!({"name": "w1", "server": server, "config": aws.to_string()}))
            .contains("awsAuthConfig is not supported"));
        assert!(err(json!({"name": "w1", "server": server, "config": "{not json"}))
            .contains("key config is not Argo CD's ClusterConfig JSON"));
        assert!(
            err(json!({"name": "w1", "server": server, "config": "{\"username\": \"u\", \"password\": \"p\"}"}))
                .contains("username/password is not supported")
        );
        assert!(err(
            json!({"name": "w1", "server": server, "config": "{\"tlsClientConfig\": {\"certData\": \"Y2VydA==\"}}"})
        )
        .contains("needs both certData and keyData"));
        assert!(err(json!({"name": "w1", "server": server, "config": "{\"bearerToken\": \"t\", \"tlsClientConfig\": {\"caData\": \"%%\"}}"}))
            .contains("caData is not base64"));
        assert!(err(json!({"name": "w1", "config": "{}"})).ends_with("has no key server"));
        let t = translate(&secret(json!({"server": server})), "ns");
        assert_eq!(
            t.member.metadata.name.as_deref(),
            Some("cluster-w1"),
            "named by the Secret"
        );
        assert_eq!(t.connection.unwrap_err(), "Secret argocd/cluster-w1 has no key name");
    }
}
