//! Karmada's `Cluster` (`cluster.karmada.io/v1alpha1`, cluster-scoped,
//! served by karmada-aggregated-apiserver) as a member source. Only the
//! fields fedns reads are declared, as in Karmada's Go types
//! (`pkg/apis/cluster/v1alpha1/types.go`); unknown fields are ignored.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{engine_member, EngineReady, Translated};
use crate::members::client::{secret_value, token_text, Connection};
use crate::members::credentials::ConnectError;

/// Karmada's `Cluster.spec` (the fields fedns reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.karmada.io",
    version = "v1alpha1",
    kind = "Cluster",
    plural = "clusters",
    status = "ClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// `Push` (the control plane reaches the member) or `Pull` (karmada-agent
    /// runs in the member; fedns goes through the cluster proxy).
    #[serde(default)]
    pub sync_mode: String,
    /// `https://host:port`, `host:port`, an IP or `IP:port`.
    #[serde(default)]
    pub api_endpoint: String,
    /// Secret holding `token` and `caBundle` (raw PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    /// Skip verification of the member's serving certificate.
    #[serde(default, rename = "insecureSkipTLSVerification")]
    pub insecure_skip_tls_verification: bool,
    /// Proxy (http, https or socks5 URL) between the control plane and the member.
    #[serde(default, rename = "proxyURL")]
    pub proxy_url: String,
    /// Headers the proxy requires, sent on `CONNECT`; a value holding
    /// commas is several values (Karmada's `ParseProxyHeaders`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub proxy_header: std::collections::BTreeMap<String, String>,
    /// Region of the member.
    #[serde(default)]
    pub region: String,
    /// Deprecated single zone (read when `zones` is empty).
    #[serde(default)]
    pub zone: String,
    /// Zones of the member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}

/// Karmada's `LocalSecretReference`: namespace and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct LocalSecretReference {
    /// Namespace of the Secret.
    #[serde(default)]
    pub namespace: String,
    /// Name of the Secret.
    #[serde(default)]
    pub name: String,
}

/// Karmada's `Cluster.status` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Kubernetes version of the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// `metav1.Condition`s; `Ready` is Karmada's own view of the member.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Secret keys Karmada defines (`SecretTokenKey`, `SecretCADataKey`).
const TOKEN_KEY: &str = "token";
const CA_KEY: &str = "caBundle";

/// The aggregated API path through which Karmada proxies requests to a member.
pub fn proxy_path(cluster: &str) -> String {
    format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy")
}

/// How a Karmada `Cluster` becomes a member. `karmada` is the client
/// configuration of the Karmada control plane (for pull-mode clusters).
pub(crate) fn translate(
    cluster: &Cluster,
    secrets: &Store<Secret>,
    karmada: &kube::Config,
    namespace: &str,
) -> Translated {
    let name = cluster.name_any();
    let spec = &cluster.spec;
    let zones = if spec.zones.is_empty() {
        Some(spec.zone.clone()).filter(|z| !z.is_empty()).into_iter().collect()
    } else {
        spec.zones.clone()
    };
    let region = Some(spec.region.clone()).filter(|r| !r.is_empty());
    let ready = cluster.status.as_ref().and_then(|s| {
        s.conditions.iter().find(|c| c.type_ == "Ready").map(|c| EngineReady {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        })
    });
    let connection = connection(&name, spec, secrets, karmada);
    Translated {
        member: engine_member(
            &name,
            namespace,
            "karmada",
            &spec.api_endpoint,
            region,
            zones,
            ready.as_ref(),
        ),
        connection: connection.map_err(ConnectError::from),
        engine_ready: ready,
    }
}

fn connection(
    name: &str,
    spec: &ClusterSpec,
    secrets: &Store<Secret>,
    karmada: &kube::Config,
) -> Result<Connection, String> {
    if spec.sync_mode.eq_ignore_ascii_case("Pull") {
        // The control plane cannot reach a pull-mode member; its aggregated
        // API server proxies to it (through karmada-agent's tunnel or the
        // member's endpoint), with the caller's Karmada credentials.
        let mut config = karmada.clone();
        let base = config.cluster_url.to_string();
        let url = format!("{}{}", base.trim_end_matches('/'), proxy_path(name));
        config.cluster_url = url
            .parse()
            .map_err(|e| format!("cluster proxy URL {url:?} is not a URL: {e}"))?;
        return Ok(Connection {
            api_endpoint: url,
            through: Some(config),
            ..Connection::default()
        });
    }
    if spec.api_endpoint.trim().is_empty() {
        return Err("spec.apiEndpoint is empty (a Push cluster needs one)".into());
    }
    let reference = spec
        .secret_ref
        .as_ref()
        .ok_or_else(|| "spec.secretRef is not set (a Push cluster needs a token)".to_owned())?;
    let secret = secrets
        .get(&ObjectRef::new(&reference.name).within(&reference.namespace))
        .ok_or_else(|| {
            format!(
                "Secret {}/{} (spec.secretRef) not found",
                reference.namespace, reference.name
            )
        })?;
    let token = secret_value(&secret, TOKEN_KEY).ok_or_else(|| {
        format!(
            "Secret {}/{} has no key {TOKEN_KEY}",
            reference.namespace, reference.name
        )
    })?;
    Ok(Connection {
        api_endpoint: spec.api_endpoint.clone(),
        ca_pem: secret_value(&secret, CA_KEY).filter(|c| !c.is_empty()),
        ca_origin: format!("Secret {}/{} key {CA_KEY}", reference.namespace, reference.name),
        insecure: spec.insecure_skip_tls_verification,
        token: Some(token_text(token)?),
        proxy_url: Some(spec.proxy_url.clone()).filter(|p| !p.is_empty()),
        proxy_headers: proxy_headers(spec),
        ..Connection::default()
    })
}

/// `spec.proxyHeader` as CONNECT headers, only with a `spec.proxyURL`,
/// each value split at commas: as Karmada's member client does
/// (`pkg/util/membercluster_client.go` sets them, through
/// `pkg/util/round_trippers.go`, as the transport's `ProxyConnectHeader`).
fn proxy_headers(spec: &ClusterSpec) -> Vec<(String, Vec<String>)> {
    if spec.proxy_url.is_empty() {
        return Vec::new();
    }
    spec.proxy_header
        .iter()
        .map(|(name, values)| (name.clone(), values.split(',').map(str::to_owned).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    fn secrets(objects: &[serde_json::Value]) -> Store<Secret> {
        let (store, mut writer) = reflector::store();
        for o in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(serde_json::from_value(o.clone()).unwrap()));
        }
        store
    }

    fn cluster(spec: serde_json::Value) -> Cluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "member1"},
            "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                "message": "cluster is not reachable", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    fn karmada() -> kube::Config {
        kube::Config::new("https://karmada.example:5443".parse().unwrap())
    }

    const SECRET: &str = "karmada-cluster";

    #[test]
    fn push_cluster_reads_endpoint_secret_and_topology() {
        let store = secrets(&[json!({"metadata": {"name": "member1", "namespace": SECRET},
            "data": {"token": "dG9rZW4K", "caBundle": "LS0tLS0="}})]);
        let c = cluster(json!({"syncMode": "Push", "apiEndpoint": "10.0.0.1:6443",
            "secretRef": {"namespace": SECRET, "name": "member1"},
            "insecureSkipTLSVerification": true, "proxyURL": "socks5://127.0.0.1:1080",
            "proxyHeader": {"Proxy-Authorization": "Basic dTpw", "X-Tenant": "a,b"},
            "region": "eu", "zone": "eu-1"}));
        let t = translate(&c, &store, &karmada(), "fedns-system");
        let connection = t.connection.unwrap();
        assert_eq!(connection.token.as_deref(), Some("token"));
        assert_eq!(connection.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert!(connection.insecure);
        assert_eq!(connection.proxy_url.as_deref(), Some("socks5://127.0.0.1:1080"));
        assert_eq!(
            connection.proxy_headers,
            vec![
                ("Proxy-Authorization".to_owned(), vec!["Basic dTpw".to_owned()]),
                ("X-Tenant".to_owned(), vec!["a".to_owned(), "b".to_owned()]),
            ]
        );
        assert!(connection.through.is_none());
        assert_eq!(t.member.spec.region.as_deref(), Some("eu"));
        assert_eq!(
            t.member.spec.zones,
            vec!["eu-1"],
            "the older zone field when zones is empty"
        );
        assert_eq!(t.engine_ready.unwrap().status, "False");
        assert_eq!(
            t.member.status.unwrap().conditions[0].status,
            "False",
            "the engine's Ready seeds the state"
        );
    }

    #[test]
    fn pull_cluster_goes_through_the_cluster_proxy() {
        let c = cluster(json!({"syncMode": "Pull", "zones": ["a", "b"], "zone": "ignored"}));
        let t = translate(&c, &secrets(&[]), &karmada(), "fedns-system");
        let connection = t.connection.unwrap();
        let through = connection.through.unwrap();
        assert_eq!(
            through.cluster_url.to_string(),
            "https://karmada.example:5443/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy"
        );
        assert_eq!(t.member.spec.zones, vec!["a", "b"]);
        assert_eq!(t.member.spec.region, None, "no region: the member's Nodes give it");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let store = secrets(&[json!({"metadata": {"name": "member1", "namespace": SECRET},
            "data": {"caBundle": "LS0tLS0="}})]);
        let reference = json!({"namespace": SECRET, "name": "member1"});
        let no_endpoint = cluster(json!({"syncMode": "Push", "secretRef": reference}));
        let err = translate(&no_endpoint, &store, &karmada(), "ns")
            .connection
            .unwrap_err()
            .message;
        assert!(err.contains("spec.apiEndpoint is empty"), "{err}");
        let no_token = cluster(json!({"syncMode": "Push", "apiEndpoint": "https://10.0.0.1", "secretRef": reference}));
        let err = translate(&no_token, &store, &karmada(), "ns")
            .connection
            .unwrap_err()
            .message;
        assert_eq!(err, "Secret karmada-cluster/member1 has no key token");
        let no_secret = cluster(json!({"syncMode": "Push", "apiEndpoint": "https://10.0.0.1",
            "secretRef": {"namespace": SECRET, "name": "other"}}));
        let err = translate(&no_secret, &store, &karmada(), "ns")
            .connection
            .unwrap_err()
            .message;
        assert!(err.contains("not found"), "{err}");
    }
}
