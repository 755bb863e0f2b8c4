//! kubefed's `KubeFedCluster` (`core.kubefed.io/v1beta1`, namespaced, in
//! the kubefed namespace, `kube-federation-system` by default) as a member
//! source. Only the fields fedns reads are declared, as in kubefed's CRD
//! (`kubefedclusters.core.kubefed.io`); unknown fields are ignored.

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{engine_member, EngineReady, Translated};
use crate::members::client::{secret_value, token_text, Connection};
use crate::members::credentials::ConnectError;

/// `KubeFedCluster.spec` (the fields fedns reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "core.kubefed.io",
    version = "v1beta1",
    kind = "KubeFedCluster",
    plural = "kubefedclusters",
    namespaced,
    status = "KubeFedClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct KubeFedClusterSpec {
    /// `https://host:port`, `host:port`, an IP or `IP:port`.
    #[serde(default)]
    pub api_endpoint: String,
    /// PEM CA bundle, base64 in JSON (a Go `[]byte`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// Secret in the same namespace with key `token`.
    #[serde(default)]
    pub secret_ref: SecretReference,
    /// TLS checks to skip: `*`, `SubjectName`, `ValidityPeriod`.
    #[serde(default, rename = "disabledTLSValidations", skip_serializing_if = "Vec::is_empty")]
    pub disabled_tls_validations: Vec<String>,
    /// Proxy (http, https or socks5 URL) between the control plane and the member.
    #[serde(default, rename = "proxyURL", skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
}

/// kubefed's `LocalSecretReference`: a name in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecretReference {
    /// Name of the Secret.
    #[serde(default)]
    pub name: String,
}

/// `KubeFedCluster.status` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct KubeFedClusterStatus {
    /// kubefed's `ClusterCondition`s (`Ready`, `Offline`, `ConfigMalformed`).
    #[serde(default)]
    pub conditions: Vec<ClusterCondition>,
    /// Region kubefed found on the member's Nodes (written by kubefed up to
    /// v0.6; later releases leave it empty and fedns reads the Nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Zones kubefed found on the member's Nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}

/// kubefed's `ClusterCondition`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ClusterCondition {
    /// `Ready`, `Offline` or `ConfigMalformed`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Reason of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Message of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// kubefed's own verdict on a cluster, as its `util.IsClusterReady` reads
/// it (kubefed `pkg/controller/util/federated_informer.go`): ready only
/// with `Ready=True`. kubefed's cluster controller
/// (`pkg/controller/kubefedcluster/clusterclient.go`, `GetClusterStatus`)
/// writes the whole condition list on each probe: `Ready=True`;
/// `Ready=False` + `Offline=False` when `/healthz` is not ok; only
/// `Offline=True` when the cluster cannot be reached; only
/// `ConfigMalformed=True` without a client. None before its first probe.
fn engine_ready(conditions: &[ClusterCondition]) -> Option<EngineReady> {
    let of = |c: &ClusterCondition, status: &str| EngineReady {
        status: status.to_owned(),
        reason: c.reason.clone().unwrap_or_default(),
        message: c.message.clone().unwrap_or_default(),
    };
    if let Some(ready) = conditions.iter().find(|c| c.type_ == "Ready") {
        return Some(of(ready, &ready.status));
    }
    // No Ready condition: not ready to kubefed; say why from the
    // condition that is True (Offline, ConfigMalformed).
    conditions
        .iter()
        .find(|c| c.status == "True")
        .or_else(|| conditions.first())
        .map(|c| {
            let mut ready = of(c, "False");
            if ready.reason.is_empty() {
                ready.reason.clone_from(&c.type_);
            }
            ready
        })
}

/// How a `KubeFedCluster` becomes a member.
pub(crate) fn translate(cluster: &KubeFedCluster, secrets: &Store<Secret>, namespace: &str) -> Translated {
    let name = cluster.name_any();
    let status = cluster.status.clone().unwrap_or_default();
    let ready = engine_ready(&status.conditions);
    let region = status.region.clone().filter(|r| !r.is_empty());
    Translated {
        member: engine_member(
            &name,
            namespace,
            "kubefed",
            &cluster.spec.api_endpoint,
            region,
            status.zones.clone(),
            ready.as_ref(),
        ),
        connection: connection(cluster, secrets).map_err(ConnectError::from),
        engine_ready: ready,
    }
}

fn connection(cluster: &KubeFedCluster, secrets: &Store<Secret>) -> Result<Connection, String> {
    let spec = &cluster.spec;
    let namespace = cluster.namespace().unwrap_or_default();
    if spec.api_endpoint.trim().is_empty() {
        return Err("spec.apiEndpoint is empty".into());
    }
    if spec.secret_ref.name.is_empty() {
        return Err("spec.secretRef.name is empty".into());
    }
    let secret = secrets
        .get(&ObjectRef::new(&spec.secret_ref.name).within(&namespace))
        .ok_or_else(|| format!("Secret {namespace}/{} (spec.secretRef) not found", spec.secret_ref.name))?;
    let token = secret_value(&secret, "token")
        .ok_or_else(|| format!("Secret {namespace}/{} has no key token", spec.secret_ref.name))?;
    let ca_pem = match &spec.ca_bundle {
        Some(bundle) if !bundle.trim().is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(bundle.trim())
                .map_err(|e| format!("spec.caBundle is not base64: {e}"))?,
        ),
        _ => None,
    };
    // rustls cannot skip only the subject-name or only the validity check:
    // any disabled validation turns verification off, as `*` does.
    let insecure = !spec.disabled_tls_validations.is_empty();
    Ok(Connection {
        api_endpoint: spec.api_endpoint.clone(),
        ca_pem,
        ca_origin: "spec.caBundle".into(),
        insecure,
        token: Some(token_text(token)?),
        // kubefed sets it as the transport's proxy (`pkg/controller/util/cluster_util.go`).
        proxy_url: Some(spec.proxy_url.trim().to_owned()).filter(|p| !p.is_empty()),
        ..Connection::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    fn secrets() -> Store<Secret> {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Apply(
            serde_json::from_value(
                json!({"metadata": {"name": "c1-token", "namespace": "kube-federation-system"},
                "data": {"token": "dG9rZW4="}}),
            )
            .unwrap(),
        ));
        store
    }

    /// The three condition lists kubefed's cluster controller writes
    /// (`clusterclient.go`, `GetClusterStatus`), and none yet.
    #[test]
    fn engine_readiness_follows_kubefeds_own_reading_of_its_conditions() {
        let conditions = |list: serde_json::Value| -> Vec<ClusterCondition> { serde_json::from_value(list).unwrap() };
        let ready = engine_ready(&conditions(json!([{"type": "Ready", "status": "True",
            "reason": "ClusterReady", "message": "/healthz responded with ok", "lastProbeTime": "2026-01-01T00:00:00Z"}])))
        .unwrap();
        assert_eq!(ready.summary(), "True");
        let not_ok = engine_ready(&conditions(json!([
            {"type": "Ready", "status": "False", "reason": "ClusterNotReady",
             "message": "/healthz responded without ok", "lastProbeTime": "2026-01-01T00:00:00Z"},
            {"type": "Offline", "status": "False", "reason": "ClusterReachable",
             "message": "cluster is reachable", "lastProbeTime": "2026-01-01T00:00:00Z"}])))
        .unwrap();
        assert_eq!(
            not_ok.summary(),
            "False (ClusterNotReady): /healthz responded without ok"
        );
        // Unreachable: only Offline=True, no Ready condition at all.
        let offline = engine_ready(&conditions(json!([{"type": "Offline", "status": "True",
            "reason": "ClusterNotReachable", "message": "cluster is not reachable: dial tcp: i/o timeout",
            "lastProbeTime": "2026-01-01T00:00:00Z"}])))
        .unwrap();
        assert_eq!(
            offline.summary(),
            "False (ClusterNotReachable): cluster is not reachable: dial tcp: i/o timeout"
        );
        let malformed = engine_ready(&conditions(json!([{"type": "ConfigMalformed", "status": "True",
            "reason": "ClusterConfigMalformed", "message": "cluster's configuration may be malformed",
            "lastProbeTime": "2026-01-01T00:00:00Z"}])))
        .unwrap();
        assert_eq!(malformed.status, "False");
        assert_eq!(malformed.reason, "ClusterConfigMalformed");
        assert_eq!(engine_ready(&[]), None);
    }

    fn cluster(spec: serde_json::Value, status: serde_json::Value) -> KubeFedCluster {
        serde_json::from_value(json!({
            "apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
            "metadata": {"name": "c1", "namespace": "kube-federation-system"},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn reads_endpoint_ca_token_tls_and_status_topology() {
        let c = cluster(
            json!({"apiEndpoint": "https://10.0.0.2:6443", "caBundle": "LS0tLS0=",
                "secretRef": {"name": "c1-token"}, "disabledTLSValidations": ["SubjectName"],
                "proxyURL": "http://127.0.0.1:3128"}),
            json!({"region": "us", "zones": ["us-1"], "conditions": [{"type": "Ready", "status": "True",
                "lastProbeTime": "2026-01-01T00:00:00Z"}]}),
        );
        let t = translate(&c, &secrets(), "fedns-system");
        let connection = t.connection.unwrap();
        assert_eq!(connection.token.as_deref(), Some("token"));
        assert_eq!(connection.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert!(connection.insecure, "any disabled validation turns verification off");
        assert_eq!(connection.proxy_url.as_deref(), Some("http://127.0.0.1:3128"));
        assert_eq!(t.member.spec.region.as_deref(), Some("us"));
        assert_eq!(t.member.spec.zones, vec!["us-1"]);
        assert_eq!(t.engine_ready.unwrap().summary(), "True");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let no_endpoint = cluster(json!({"apiEndpoint": "", "secretRef": {"name": "c1-token"}}), json!({}));
        assert_eq!(
            translate(&no_endpoint, &secrets(), "ns")
                .connection
                .unwrap_err()
                .message,
            "spec.apiEndpoint is empty"
        );
        let bad_ca = cluster(
            json!({"apiEndpoint": "https://x", "caBundle": "%%%", "secretRef": {"name": "c1-token"}}),
            json!({}),
        );
        assert!(translate(&bad_ca, &secrets(), "ns")
            .connection
            .unwrap_err()
            .message
            .contains("not base64"));
        let no_secret = cluster(
            json!({"apiEndpoint": "https://x", "secretRef": {"name": "nope"}}),
            json!({}),
        );
        assert!(translate(&no_secret, &secrets(), "ns")
            .connection
            .unwrap_err()
            .message
            .contains("not found"));
    }
}
