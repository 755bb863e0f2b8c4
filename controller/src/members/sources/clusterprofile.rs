//! SIG Multicluster's `ClusterProfile` (`multicluster.x-k8s.io/v1alpha1`,
//! namespaced; the cluster inventory API of KEP-4322, types in
//! `kubernetes-sigs/cluster-inventory-api` `apis/v1alpha1/clusterprofile_types.go`)
//! as a member source. Only the fields fedns reads are declared; every
//! field is optional, so that no object fails to decode.
//!
//! Access, as the API defines it: `status.accessProviders[]` (or the
//! older `status.credentialProviders[]`), each a provider name and a
//! kubeconfig `cluster` (server, CA, TLS server name, proxy URL,
//! extensions). fedns uses the provider named by
//! `--clusterprofile-access-provider` and implements the `secretreader`
//! provider's contract itself (`plugins/secretreader` in that repository):
//! the bearer token is key `token` of the Secret `<consumer
//! namespace>/<clusterName>`, `clusterName` from the cluster's
//! `client.authentication.k8s.io/exec` extension, else the profile's
//! name. Exec plugins of other providers are not run.

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{
    base64_field, each_translated, engine_member, lenient, ready_from_conditions, topology_from_labels, Inventory,
    InventoryCondition, MemberSource, Translated, REGION_LABEL, ZONE_LABEL,
};
use crate::members::client::{secret_value, token_text, Connection};

/// `ClusterProfile.spec` (the fields fedns reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterProfile",
    plural = "clusterprofiles",
    namespaced,
    status = "ClusterProfileStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub display_name: String,
}

/// `ClusterProfile.status` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// Conditions; `ControlPlaneHealthy` is the cluster manager's view.
    #[serde(default, deserialize_with = "lenient")]
    pub conditions: Vec<InventoryCondition>,
    /// Name/value properties (ClusterProperty, KEP-2149).
    #[serde(default, deserialize_with = "lenient")]
    pub properties: Vec<Property>,
    /// How to reach the cluster, per access provider.
    #[serde(default, deserialize_with = "lenient")]
    pub access_providers: Vec<AccessProvider>,
    /// The older name of `accessProviders`.
    #[serde(default, deserialize_with = "lenient")]
    pub credential_providers: Vec<AccessProvider>,
}

/// A `Property` of the status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Property {
    /// Property name.
    #[serde(default, deserialize_with = "lenient")]
    pub name: String,
    /// Property value.
    #[serde(default, deserialize_with = "lenient")]
    pub value: String,
}

/// An `AccessProvider`: a provider name and the kubeconfig `Cluster` it gives.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct AccessProvider {
    /// Provider name (`secretreader`, ...).
    #[serde(default, deserialize_with = "lenient")]
    pub name: String,
    /// A kubeconfig `clusters[].cluster` (`k8s.io/client-go/tools/clientcmd/api/v1`).
    #[serde(default, deserialize_with = "lenient")]
    pub cluster: KubeconfigCluster,
}

/// A kubeconfig v1 `Cluster` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct KubeconfigCluster {
    /// API server URL.
    #[serde(default, deserialize_with = "lenient")]
    pub server: String,
    /// Name to verify the server's certificate against.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub tls_server_name: String,
    /// Skip verification of the server's certificate.
    #[serde(default, deserialize_with = "lenient")]
    pub insecure_skip_tls_verify: bool,
    /// PEM CA bundle, base64 in JSON.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub certificate_authority_data: String,
    /// Proxy URL.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "lenient")]
    pub proxy_url: String,
    /// Named extensions (`client.authentication.k8s.io/exec` carries the
    /// provider's own settings).
    #[serde(default, deserialize_with = "lenient")]
    pub extensions: Vec<NamedExtension>,
}

/// A kubeconfig `NamedExtension`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct NamedExtension {
    /// Extension name.
    #[serde(default, deserialize_with = "lenient")]
    pub name: String,
    /// Its settings (any JSON).
    #[serde(default, deserialize_with = "lenient")]
    pub extension: serde_json::Value,
}

/// The access provider fedns implements itself.
pub const SECRETREADER: &str = "secretreader";
/// Extension whose `clusterName` names the secretreader's Secret.
pub const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// The inventory cluster: ClusterProfiles, the Secrets of the consumer
/// namespace (for `secretreader`), the provider to use and an Event recorder.
#[derive(Clone)]
pub struct ClusterProfileInputs {
    /// `ClusterProfile` objects.
    pub profiles: Store<ClusterProfile>,
    /// Secrets of the consumer namespace (only key `token` is kept).
    pub secrets: Store<Secret>,
    /// The consumer namespace.
    pub secret_namespace: String,
    /// The access provider to use (`secretreader`).
    pub provider: String,
    /// Events on ClusterProfiles.
    pub recorder: Recorder,
}

impl Inventory for ClusterProfileInputs {
    fn source(&self) -> MemberSource {
        MemberSource::Clusterprofile
    }

    fn members(&self, namespace: &str) -> Vec<(Translated, Recorder, ObjectReference)> {
        each_translated(self.profiles.state(), &self.recorder, |p| translate(p, self, namespace))
    }
}

/// How a `ClusterProfile` becomes a member: region and zones from its
/// status properties `topology.kubernetes.io/region` and
/// `topology.kubernetes.io/zone` (a comma-separated list), else its labels
/// of those keys, else the member's Nodes; `ControlPlaneHealthy` seeds its state.
pub(crate) fn translate(profile: &ClusterProfile, inputs: &ClusterProfileInputs, namespace: &str) -> Translated {
    let name = profile.name_any();
    let status = profile.status.clone().unwrap_or_default();
    let property = |key: &str| {
        status
            .properties
            .iter()
            .find(|p| p.name == key)
            .map(|p| p.value.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let (label_region, label_zones) = topology_from_labels(profile.labels());
    let region = property(REGION_LABEL).or(label_region);
    let zones = match property(ZONE_LABEL) {
        Some(list) => list
            .split(',')
            .map(|z| z.trim().to_owned())
            .filter(|z| !z.is_empty())
            .collect(),
        None => label_zones,
    };
    let ready = ready_from_conditions(&status.conditions, &["ControlPlaneHealthy"]);
    let provider = status
        .access_providers
        .iter()
        .chain(&status.credential_providers)
        .find(|p| p.name == inputs.provider);
    let connection = match provider {
        Some(p) => connection(&name, p, inputs),
        None => Err(format!(
            "status.accessProviders has no provider named {:?} (it has: {})",
            inputs.provider,
            status
                .access_providers
                .iter()
                .chain(&status.credential_providers)
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    let endpoint = provider.map(|p| p.cluster.server.clone()).unwrap_or_default();
    Translated {
        member: engine_member(
            &name,
            namespace,
            "clusterprofile",
            &endpoint,
            region,
            zones,
            ready.as_ref(),
        ),
        connection,
        engine_ready: ready,
    }
}

fn connection(name: &str, provider: &AccessProvider, inputs: &ClusterProfileInputs) -> Result<Connection, String> {
    if provider.name != SECRETREADER {
        return Err(format!(
            "access provider {:?} is not supported (fedns implements {SECRETREADER:?} and runs no exec plugins)",
            provider.name
        ));
    }
    let cluster = &provider.cluster;
    if cluster.server.trim().is_empty() {
        return Err(format!("access provider {SECRETREADER}: cluster.server is empty"));
    }
    let cluster_name = cluster
        .extensions
        .iter()
        .find(|e| e.name == EXEC_EXTENSION)
        .and_then(|e| e.extension.get("clusterName"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(name);
    let ns = &inputs.secret_namespace;
    let secret = inputs
        .secrets
        .get(&ObjectRef::new(cluster_name).within(ns))
        .ok_or_else(|| format!("Secret {ns}/{cluster_name} (the {SECRETREADER} provider's token) not found"))?;
    let token = secret_value(&secret, "token").ok_or_else(|| format!("Secret {ns}/{cluster_name} has no key token"))?;
    let ca_pem = if cluster.certificate_authority_data.is_empty() {
        None
    } else {
        Some(base64_field(
            &cluster.certificate_authority_data,
            "cluster.certificate-authority-data",
        )?)
    };
    Ok(Connection {
        api_endpoint: cluster.server.clone(),
        ca_pem,
        ca_origin: "cluster.certificate-authority-data".into(),
        insecure: cluster.insecure_skip_tls_verify,
        token: Some(token_text(token)?),
        tls_server_name: Some(cluster.tls_server_name.clone()).filter(|n| !n.is_empty()),
        proxy_url: Some(cluster.proxy_url.clone()).filter(|p| !p.is_empty()),
        ..Connection::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::sources::tests::store;
    use kube::runtime::events::Reporter;
    use serde_json::json;

    fn inputs(secrets: &[serde_json::Value]) -> ClusterProfileInputs {
        let client = kube::Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().unwrap())).unwrap();
        ClusterProfileInputs {
            profiles: store(&[]),
            secrets: store(secrets),
            secret_namespace: "fedns-system".into(),
            provider: SECRETREADER.into(),
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: "test".into(),
                    instance: None,
                },
            ),
        }
    }

    fn profile(status: serde_json::Value) -> ClusterProfile {
        serde_json::from_value(json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
            "metadata": {"name": "p1", "namespace": "fleet", "labels": {REGION_LABEL: "label-region"}},
            "spec": {"displayName": "p1", "clusterManager": {"name": "ocm"}},
            "status": status,
        }))
        .unwrap()
    }

    fn provider(name: &str, extensions: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "cluster": {"server": "https://127.0.0.1:6443",
            "certificate-authority-data": "LS0tLS0=", "tls-server-name": "kubernetes", "extensions": extensions}})
    }

    const TOKEN: &str = "dG9rZW4=";

    #[tokio::test]
    async fn secretreader_properties_and_control_plane_healthy() {
        let p = profile(json!({
            "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy", "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "properties": [{"name": REGION_LABEL, "value": "eu"}, {"name": ZONE_LABEL, "value": "eu-1, eu-2"}],
            "accessProviders": [provider("other", json!([])),
                provider(SECRETREADER, json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "spoke-1"}}]))],
        }));
        let i =
            inputs(&[json!({"metadata": {"name": "spoke-1", "namespace": "fedns-system"}, "data": {"token": TOKEN}})]);
        let t = translate(&p, &i, "fedns-system");
        let c = t.connection.unwrap();
        assert_eq!(c.token.as_deref(), Some("token"));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(t.member.spec.region.as_deref(), Some("eu"), "properties before labels");
        assert_eq!(t.member.spec.zones, vec!["eu-1", "eu-2"]);
        assert_eq!(t.engine_ready.unwrap().summary(), "True");
    }

    #[tokio::test]
    async fn older_credential_providers_and_the_profile_name() {
        let p = profile(json!({"credentialProviders": [provider(SECRETREADER, json!([]))]}));
        let i = inputs(&[json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": TOKEN}})]);
        let t = translate(&p, &i, "ns");
        assert!(t.connection.is_ok());
        assert_eq!(t.member.spec.region.as_deref(), Some("label-region"));
        assert!(t.engine_ready.is_none());
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let err = |status: serde_json::Value, secrets: &[serde_json::Value]| {
            translate(&profile(status), &inputs(secrets), "ns")
                .connection
                .unwrap_err()
        };
        assert_eq!(
            err(json!({"accessProviders": [provider("kubelogin", json!([]))]}), &[]),
            "status.accessProviders has no provider named \"secretreader\" (it has: kubelogin)"
        );
        assert_eq!(
            err(json!({"accessProviders": [provider(SECRETREADER, json!([]))]}), &[]),
            "Secret fedns-system/p1 (the secretreader provider's token) not found"
        );
        let no_token = [json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {}})];
        assert_eq!(
            err(
                json!({"accessProviders": [provider(SECRETREADER, json!([]))]}),
                &no_token
            ),
            "Secret fedns-system/p1 has no key token"
        );
        assert!(err(
            json!({"accessProviders": [{"name": SECRETREADER, "cluster": {}}]}),
            &no_token
        )
        .contains("cluster.server is empty"));
        let mut i = inputs(&[]);
        i.provider = "kubelogin".into();
        let p = profile(json!({"accessProviders": [provider("kubelogin", json!([]))]}));
        assert!(translate(&p, &i, "ns")
            .connection
            .unwrap_err()
            .contains("\"kubelogin\" is not supported"));
    }
}
