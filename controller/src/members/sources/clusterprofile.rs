//! SIG Multicluster's `ClusterProfile` (`multicluster.x-k8s.io/v1alpha1`,
//! namespaced; the cluster inventory API of KEP-4322, types in
//! `kubernetes-sigs/cluster-inventory-api` `apis/v1alpha1/clusterprofile_types.go`)
//! as a member source. Only the fields fedns reads are declared; every
//! field is optional, so that no object fails to decode.
//!
//! Access, as the API defines it: `status.accessProviders[]` (or the
//! older `status.credentialProviders[]`), each a provider name and a
//! kubeconfig `cluster` (server, CA, TLS server name, proxy URL,
//! extensions); the consumer maps provider names to exec plugins in a
//! provider file (`pkg/access/config.go`: `{"providers": [{"name",
//! "execConfig"}]}`, `--clusterprofile-provider-file`). The provider is
//! chosen as that library chooses it: the first of the consumer's
//! providers, in the file's order, that the profile offers (the profile's
//! own order does not matter). fedns adds one provider after the file's:
//! `secretreader`, whose contract (`plugins/secretreader` in that
//! repository) it implements itself unless the file names it: the bearer
//! token is key `token` of the Secret `<consumer namespace>/<clusterName>`
//! in the consumer's own cluster (fedns's host, where the plugin would
//! run), `clusterName` from the cluster's `client.authentication.k8s.io/exec`
//! extension, required as the plugin requires it, and equal to the
//! profile's name (the plugin's README names the Secret
//! `<CONSUMER_NAMESPACE>/<CLUSTER_PROFILE_NAME>`): whoever writes a
//! profile's status may not pick another Secret of that namespace. A provider of the file
//! runs as an exec credential plugin, never interactive, given the
//! cluster's info (that extension passed as `config`) when its
//! `provideClusterInfo` is set. The extensions adding exec arguments or
//! environment (`clusterprofiles.multicluster.x-k8s.io/exec/additional-*`)
//! are not applied.

use crate::events::Recorder;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{
    base64_field, each_translated, engine_member, lenient, ready_from_conditions, topology_from_labels, Inventory,
    InventoryCondition, MemberSource, Translated, REGION_LABEL, ZONE_LABEL,
};
use crate::members::client::{secret_value, token_text, Connection};
use crate::members::credentials::ConnectError;

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

/// The consumer's provider file (`pkg/access/config.go` `Config`):
/// provider names and the exec credential plugin each runs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ProviderFile {
    /// The providers.
    #[serde(default)]
    pub providers: Vec<ExecProvider>,
}

/// One provider of the file: its name and a kubeconfig `ExecConfig`
/// (`apiVersion`, `command`, `args`, `env`, `provideClusterInfo`...), kept as JSON.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExecProvider {
    /// The name access providers refer to.
    pub name: String,
    /// The exec plugin.
    pub exec_config: serde_json::Value,
}

impl ProviderFile {
    /// Reads and checks a provider file (JSON).
    ///
    /// # Errors
    /// The file cannot be read, is not that JSON, or a provider has no
    /// `execConfig.command`: a one-line message naming the file.
    pub fn read(path: &std::path::Path) -> Result<ProviderFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let file: ProviderFile = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a ClusterProfile provider file: {e}", path.display()))?;
        if let Some(p) = file.providers.iter().find(|p| {
            p.exec_config
                .get("command")
                .and_then(|c| c.as_str())
                .is_none_or(str::is_empty)
        }) {
            return Err(format!(
                "{}: provider {:?} has no execConfig.command",
                path.display(),
                p.name
            ));
        }
        Ok(file)
    }
}

/// The inventory cluster: ClusterProfiles, the Secrets of the consumer
/// namespace (for `secretreader`), the exec providers and an Event recorder.
#[derive(Clone)]
pub struct ClusterProfileInputs {
    /// `ClusterProfile` objects.
    pub profiles: Store<ClusterProfile>,
    /// Secrets of the consumer namespace in the consumer's own cluster,
    /// fedns's host (only key `token` is kept).
    pub secrets: Store<Secret>,
    /// The consumer namespace.
    pub secret_namespace: String,
    /// Exec providers of the provider file.
    pub exec_providers: ProviderFile,
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
    let provider = chosen_provider(&status, &inputs.exec_providers);
    let connection = match provider {
        Some(p) => connection(&name, p, inputs),
        None => Err(ConnectError::from(format!(
            "status.accessProviders has no provider fedns knows (it has: {}; fedns knows: {})",
            status
                .access_providers
                .iter()
                .chain(&status.credential_providers)
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            consumer_order(&inputs.exec_providers).join(", ")
        ))),
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

/// The provider names the consumer uses, in its order of preference: the
/// provider file's, then fedns's built-in `secretreader` unless the file
/// names it (the file's own `secretreader` is run as its plugin).
fn consumer_order(file: &ProviderFile) -> Vec<&str> {
    let mut order: Vec<&str> = file.providers.iter().map(|p| p.name.as_str()).collect();
    if !order.contains(&SECRETREADER) {
        order.push(SECRETREADER);
    }
    order
}

/// The access provider of `status` the consumer uses, chosen as the
/// access library does (`getClusterAccessorFromClusterProfile` in
/// `pkg/access/config.go` of kubernetes-sigs/cluster-inventory-api): the
/// profile's providers by name, `credentialProviders` first and
/// `accessProviders` replacing one of the same name; then the first name
/// of the consumer's order the profile offers. The profile's own order
/// does not matter: the consumer decides which credentials it trusts.
fn chosen_provider<'a>(status: &'a ClusterProfileStatus, file: &ProviderFile) -> Option<&'a AccessProvider> {
    let mut offered: std::collections::BTreeMap<&str, &AccessProvider> = Default::default();
    for p in status.credential_providers.iter().chain(&status.access_providers) {
        offered.insert(p.name.as_str(), p);
    }
    consumer_order(file)
        .into_iter()
        .find_map(|name| offered.get(name).copied())
}

/// How profile `profile` is reached through `provider`. The built-in
/// `secretreader` reads only the Secret named after the profile
/// (`<consumer namespace>/<profile name>`, the plugin's documented
/// contract): a `clusterName` naming any other Secret of the consumer
/// namespace (another member's token, say) is refused, or whoever writes
/// the profile's status could have fedns send that token to a server of
/// their choosing.
fn connection(
    profile: &str,
    provider: &AccessProvider,
    inputs: &ClusterProfileInputs,
) -> Result<Connection, ConnectError> {
    let cluster = &provider.cluster;
    if cluster.server.trim().is_empty() {
        return Err(format!("access provider {}: cluster.server is empty", provider.name).into());
    }
    if let Some(exec) = inputs.exec_providers.providers.iter().find(|p| p.name == provider.name) {
        return exec_connection(cluster, exec).map_err(ConnectError::from);
    }
    // The secretreader plugin (plugins/secretreader/cmd/plugin/main.go)
    // needs `clusterName` in the cluster's exec extension and has no
    // fallback: the profile's name is not the Secret's.
    let cluster_name = cluster
        .extensions
        .iter()
        .find(|e| e.name == EXEC_EXTENSION)
        .and_then(|e| e.extension.get("clusterName"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            format!("access provider {SECRETREADER}: no clusterName in the cluster's extension {EXEC_EXTENSION} (it names the Secret holding the token)")
        })?;
    let ns = &inputs.secret_namespace;
    if cluster_name != profile {
        return Err(ConnectError::refused(format!(
            "access provider {SECRETREADER}: clusterName {cluster_name:?} is not the ClusterProfile's name; fedns reads the token of profile {profile} only from Secret {ns}/{profile} (<consumer namespace>/<ClusterProfile name>), never another Secret"
        )));
    }
    let secret = inputs
        .secrets
        .get(&ObjectRef::new(cluster_name).within(ns))
        .ok_or_else(|| format!("Secret {ns}/{cluster_name} (the {SECRETREADER} provider's token) not found"))?;
    let token = secret_value(&secret, "token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("Secret {ns}/{cluster_name} has no key token"))?;
    let ca_pem = if cluster.certificate_authority_data.is_empty() {
        None
    } else {
        Some(base64_field(
            &cluster.certificate_authority_data,
            "cluster.certificate-authority-data",
        )?)
    };
    let token = token_text(token)?;
    Ok(Connection {
        api_endpoint: cluster.server.clone(),
        ca_pem,
        ca_origin: "cluster.certificate-authority-data".into(),
        insecure: cluster.insecure_skip_tls_verify,
        token: Some(token),
        tls_server_name: Some(cluster.tls_server_name.clone()).filter(|n| !n.is_empty()),
        proxy_url: Some(cluster.proxy_url.clone()).filter(|p| !p.is_empty()),
        ..Connection::default()
    })
}

/// A kubeconfig of the access provider's cluster whose user runs the
/// provider's exec plugin (kube-rs runs it as client-go would, and again
/// when the credential expires), with the cluster's info when the file's
/// `execConfig.provideClusterInfo` asks for it.
fn exec_connection(cluster: &KubeconfigCluster, exec: &ExecProvider) -> Result<Connection, String> {
    let mut exec_config = exec.exec_config.clone();
    if let Some(config) = exec_config.as_object_mut() {
        // As the access library builds it: never interactive (a controller
        // has no terminal); `provideClusterInfo` as the file says.
        config.insert("interactiveMode".into(), serde_json::Value::String("Never".into()));
    }
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "profile", "cluster": cluster}],
        "users": [{"name": exec.name, "user": {"exec": exec_config}}],
        "contexts": [{"name": "profile", "context": {"cluster": "profile", "user": exec.name}}],
        "current-context": "profile",
    });
    let text = serde_yaml_ng::to_string(&kubeconfig)
        .map_err(|e| format!("access provider {}: cannot write its kubeconfig: {e}", exec.name))?;
    Ok(Connection {
        api_endpoint: cluster.server.clone(),
        kubeconfig: Some(text),
        origin: format!("access provider {}", exec.name),
        // The plugin is the provider file's, which the operator wrote.
        operator_exec: true,
        ..Connection::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::sources::test_support::store;
    use kube::runtime::events::Reporter;
    use serde_json::json;

    fn inputs(secrets: &[serde_json::Value]) -> ClusterProfileInputs {
        let client = kube::Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().unwrap())).unwrap();
        ClusterProfileInputs {
            profiles: store(&[]),
            secrets: store(secrets),
            secret_namespace: "fedns-system".into(),
            exec_providers: ProviderFile::default(),
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
                provider(SECRETREADER, json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "p1"}}]))],
        }));
        let i = inputs(&[json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": TOKEN}})]);
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
    async fn older_credential_providers_are_read() {
        let p = profile(json!({"credentialProviders": [provider(SECRETREADER,
            json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "p1"}}]))]}));
        let i = inputs(&[json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": TOKEN}})]);
        let t = translate(&p, &i, "ns");
        assert!(t.connection.is_ok());
        assert_eq!(t.member.spec.region.as_deref(), Some("label-region"));
        assert!(t.engine_ready.is_none());
    }

    /// The consumer's order decides, not the profile's (`pkg/access/config.go`
    /// `getClusterAccessorFromClusterProfile`): a profile offering
    /// `secretreader` first, with no Secret for it, is reached through the
    /// provider the operator configured. Status shaped as the cluster
    /// inventory API documents it (kubernetes-sigs/cluster-inventory-api
    /// 8375ac21498c5d46948b9e0bd19d4bbb8cc2b219,
    /// `plugins/secretreader/cmd/plugin/README.md`; the order as
    /// `pkg/access/config_test.go` checks it).
    #[tokio::test]
    async fn the_consumer_provider_order_decides_not_the_profile_order() {
        let mut i = inputs(&[]);
        i.exec_providers = serde_json::from_value(json!({"providers": [{"name": "kubelogin",
            "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin"}}]}))
        .unwrap();
        let p = profile(json!({"accessProviders": [
            provider(SECRETREADER, json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "spoke-1"}}])),
            provider("kubelogin", json!([]))]}));
        let c = translate(&p, &i, "ns").connection.unwrap();
        assert!(c.kubeconfig.unwrap().contains("command: kubelogin"));

        // The same name in both lists: accessProviders replaces the older one.
        let p = profile(json!({
            "credentialProviders": [{"name": "kubelogin", "cluster": {"server": "https://127.0.0.1:1"}}],
            "accessProviders": [provider("kubelogin", json!([]))]}));
        assert_eq!(
            translate(&p, &i, "ns").connection.unwrap().api_endpoint,
            "https://127.0.0.1:6443"
        );

        // Neither the file's nor secretreader offered: no provider, the
        // consumer's order in the message.
        let p = profile(json!({"accessProviders": [provider("other", json!([]))]}));
        assert_eq!(
            translate(&p, &i, "ns").connection.unwrap_err().message,
            "status.accessProviders has no provider fedns knows (it has: other; fedns knows: kubelogin, secretreader)"
        );
    }

    /// Issue #57: a profile's `clusterName` chose which Secret of the
    /// consumer namespace the token came from (any with key `token`:
    /// another member's credentials), sent to the profile's server. Now
    /// only the Secret named after the profile is read.
    #[tokio::test]
    async fn secretreader_reads_only_the_secret_named_after_the_profile() {
        let p = profile(json!({"accessProviders": [provider(SECRETREADER,
            json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "other-member-token"}}]))]}));
        let i = inputs(&[
            json!({"metadata": {"name": "other-member-token", "namespace": "fedns-system"}, "data": {"token": TOKEN}}),
            json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": TOKEN}}),
        ]);
        let err = translate(&p, &i, "ns").connection.unwrap_err();
        assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED);
        assert_eq!(
            err.message,
            "access provider secretreader: clusterName \"other-member-token\" is not the ClusterProfile's name; fedns reads the token of profile p1 only from Secret fedns-system/p1 (<consumer namespace>/<ClusterProfile name>), never another Secret"
        );
    }

    /// A provider of the operator's provider file runs without
    /// --allow-exec-plugin: the operator named it there.
    #[tokio::test]
    async fn a_provider_file_plugin_passes_the_credential_check() {
        let mut i = inputs(&[]);
        i.exec_providers = serde_json::from_value(json!({"providers": [{"name": "kubelogin",
            "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin"}}]}))
        .unwrap();
        let p = profile(json!({"accessProviders": [provider("kubelogin", json!([]))]}));
        let c = translate(&p, &i, "ns").connection.unwrap();
        assert_eq!(c.check(&crate::members::CredentialPolicy::default()), Ok(()));
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let err = |status: serde_json::Value, secrets: &[serde_json::Value]| {
            translate(&profile(status), &inputs(secrets), "ns")
                .connection
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(json!({"accessProviders": [provider("kubelogin", json!([]))]}), &[]),
            "status.accessProviders has no provider fedns knows (it has: kubelogin; fedns knows: secretreader)"
        );
        // secretreader needs clusterName (the plugin has no fallback to the
        // profile's name, plugins/secretreader/cmd/plugin/main.go).
        let p1_secret = [json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": TOKEN}})];
        assert_eq!(
            err(json!({"accessProviders": [provider(SECRETREADER, json!([]))]}), &p1_secret),
            "access provider secretreader: no clusterName in the cluster's extension client.authentication.k8s.io/exec (it names the Secret holding the token)"
        );
        let named = json!([{"name": EXEC_EXTENSION, "extension": {"clusterName": "p1"}}]);
        assert_eq!(
            err(json!({"accessProviders": [provider(SECRETREADER, named.clone())]}), &[]),
            "Secret fedns-system/p1 (the secretreader provider's token) not found"
        );
        let no_token = [json!({"metadata": {"name": "p1", "namespace": "fedns-system"}, "data": {"token": ""}})];
        assert_eq!(
            err(json!({"accessProviders": [provider(SECRETREADER, named)]}), &no_token),
            "Secret fedns-system/p1 has no key token"
        );
        assert!(err(
            json!({"accessProviders": [{"name": SECRETREADER, "cluster": {}}]}),
            &no_token
        )
        .contains("cluster.server is empty"));
    }

    #[tokio::test]
    async fn an_exec_provider_of_the_file_runs_with_the_cluster_info() {
        let mut i = inputs(&[]);
        i.exec_providers = serde_json::from_value(json!({"providers": [{"name": "kubelogin",
            "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin", "args": ["get-token"],
                "provideClusterInfo": true, "interactiveMode": "Always"}}]}))
        .unwrap();
        let p = profile(json!({"accessProviders": [provider("other", json!([])),
            provider("kubelogin", json!([{"name": EXEC_EXTENSION, "extension": {"audience": "spoke"}}])),
            provider(SECRETREADER, json!([]))]}));
        let c = translate(&p, &i, "ns").connection.unwrap();
        assert_eq!(c.api_endpoint, "https://127.0.0.1:6443");
        let text = c.kubeconfig.unwrap();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let exec = kubeconfig.auth_infos[0]
            .auth_info
            .as_ref()
            .unwrap()
            .exec
            .as_ref()
            .unwrap();
        assert_eq!(exec.command.as_deref(), Some("kubelogin"));
        assert!(exec.provide_cluster_info, "{text}");
        assert_eq!(exec.interactive_mode, Some(kube::config::ExecInteractiveMode::Never));
        let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("LS0tLS0="));
        assert_eq!(
            cluster.extensions.as_ref().unwrap()[0].extension,
            json!({"audience": "spoke"})
        );
    }

    #[test]
    fn a_provider_file_without_a_command_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("fedns-providers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("providers.json");
        std::fs::write(
            &path,
            r#"{"providers": [{"name": "x", "execConfig": {"apiVersion": "v1"}}]}"#,
        )
        .unwrap();
        assert!(ProviderFile::read(&path)
            .unwrap_err()
            .ends_with("provider \"x\" has no execConfig.command"));
        std::fs::write(&path, "{").unwrap();
        assert!(ProviderFile::read(&path)
            .unwrap_err()
            .contains("is not a ClusterProfile provider file"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
