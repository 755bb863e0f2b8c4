//! What every member source shares: the annotations and labels fedns reads
//! and writes, the [`MemberSource`] names, an engine's own `Ready`, and the
//! translation of an engine's cluster into an in-memory MemberCluster
//! ([`Translated`], [`engine_member`], the [`Inventory`] trait each source
//! implements, and the helpers their translations use).

use crate::events::Recorder;
use fedns_api::{MemberCluster, MemberClusterSpec, MemberClusterStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use serde::{Deserialize, Serialize};

use crate::members::client::Connection;
use crate::members::credentials::ConnectError;

/// Annotation on an engine member's in-memory MemberCluster naming its source.
pub const SOURCE_ANNOTATION: &str = "fedns.io/member-source";
/// Annotation on an engine member's in-memory MemberCluster with the
/// engine's own `Ready` condition: `True`, or `False (Reason): message`.
pub const ENGINE_READY_ANNOTATION: &str = "fedns.io/engine-ready";

/// A registry of member clusters fedns reads (`--member-source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum MemberSource {
    /// fedns's `MemberCluster` objects in the controller namespace.
    Fedns,
    /// Karmada `Cluster` objects (`clusters.cluster.karmada.io/v1alpha1`).
    Karmada,
    /// kubefed `KubeFedCluster` objects (`kubefedclusters.core.kubefed.io/v1beta1`).
    Kubefed,
    /// Clusternet `ManagedCluster` objects (`managedclusters.clusters.clusternet.io/v1beta1`).
    Clusternet,
    /// Cluster API `Cluster` objects (`clusters.cluster.x-k8s.io/v1beta2`;
    /// v1beta1 where the server serves only that) and their
    /// `<name>-kubeconfig` Secrets.
    Capi,
    /// Argo CD cluster Secrets (label `argocd.argoproj.io/secret-type: cluster`).
    Argocd,
    /// SIG Multicluster `ClusterProfile` objects (`clusterprofiles.multicluster.x-k8s.io/v1alpha1`).
    Clusterprofile,
}

impl MemberSource {
    /// The name used in metrics labels and annotations.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberSource::Fedns => "fedns",
            MemberSource::Karmada => "karmada",
            MemberSource::Kubefed => "kubefed",
            MemberSource::Clusternet => "clusternet",
            MemberSource::Capi => "capi",
            MemberSource::Argocd => "argocd",
            MemberSource::Clusterprofile => "clusterprofile",
        }
    }
}

/// An engine's own `Ready` condition for a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineReady {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

impl EngineReady {
    /// `True`, or `False (Reason): message`.
    pub fn summary(&self) -> String {
        if self.status == "True" {
            "True".into()
        } else {
            format!("{} ({}): {}", self.status, self.reason, self.message)
        }
    }
}

/// One engine cluster, translated.
pub(crate) struct Translated {
    pub(crate) member: MemberCluster,
    pub(crate) connection: Result<Connection, ConnectError>,
    pub(crate) engine_ready: Option<EngineReady>,
}

/// The in-memory MemberCluster standing for an engine's cluster: its
/// endpoint, topology overrides and default probe settings, with the
/// engine's `Ready` as the starting status.
pub(crate) fn engine_member(
    name: &str,
    namespace: &str,
    source: &str,
    api_endpoint: &str,
    region: Option<String>,
    zones: Vec<String>,
    ready: Option<&EngineReady>,
) -> MemberCluster {
    let mut member = MemberCluster::new(
        name,
        MemberClusterSpec {
            api_endpoint: api_endpoint.to_owned(),
            ca_bundle: None,
            insecure_skip_tls_verify: false,
            secret_ref: None,
            region,
            zones,
            cordoned: false,
            drain_seconds: 0,
            health_check: Default::default(),
            auto_records: None,
        },
    );
    member.metadata.namespace = Some(namespace.to_owned());
    let mut annotations = std::collections::BTreeMap::new();
    annotations.insert(SOURCE_ANNOTATION.to_owned(), source.to_owned());
    if let Some(ready) = ready {
        annotations.insert(ENGINE_READY_ANNOTATION.to_owned(), ready.summary());
    }
    member.metadata.annotations = Some(annotations);
    if let Some(ready) = ready {
        let mut status = MemberClusterStatus::default();
        fedns_api::conditions::set(
            &mut status.conditions,
            fedns_api::conditions::READY,
            ready.status == "True",
            if ready.status == "True" {
                fedns_api::conditions::CLUSTER_READY
            } else {
                fedns_api::conditions::CLUSTER_NOT_READY
            },
            &format!("not probed yet; {source} reports Ready={}", ready.summary()),
            None,
        );
        member.status = Some(status);
    }
    member
}

/// Label (on an inventory object: a Cluster API `Cluster`, an Argo CD
/// cluster Secret, a Clusternet `ManagedCluster`, a `ClusterProfile`)
/// giving the member's region; the well-known Node label's key.
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";
/// As [`REGION_LABEL`], for the member's zone (one zone; a label value
/// cannot hold a list).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Region and zones from an inventory object's labels ([`REGION_LABEL`],
/// [`ZONE_LABEL`]); `None`/empty where absent (then the member's Nodes give them).
pub(crate) fn topology_from_labels(
    labels: &std::collections::BTreeMap<String, String>,
) -> (Option<String>, Vec<String>) {
    let value = |key: &str| labels.get(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    (value(REGION_LABEL), value(ZONE_LABEL).into_iter().collect())
}

/// A condition as the inventories write them: `metav1.Condition`, or
/// Cluster API's older `v1beta1` condition (no required reason). Every
/// field is optional so that no object fails to decode.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct InventoryCondition {
    /// Condition type (`Available`, `Ready`, `ControlPlaneHealthy`, ...).
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default, deserialize_with = "lenient")]
    pub status: String,
    /// Reason of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub reason: Option<String>,
    /// Message of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub message: Option<String>,
}

/// The first condition of `types` (in that order of preference) found in
/// `conditions`, as the engine's Ready.
pub(crate) fn ready_from_conditions(conditions: &[InventoryCondition], types: &[&str]) -> Option<EngineReady> {
    types.iter().find_map(|t| {
        conditions.iter().find(|c| c.type_ == *t).map(|c| EngineReady {
            status: c.status.clone(),
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        })
    })
}

/// A whole kubeconfig (`origin` names where it came from, for errors)
/// as a connection: checked to parse here, so that a malformed one is
/// reported on its object; its current context is used. What it may
/// hold is decided where every connection is checked
/// ([`Connection::check`]): inline credentials only (`token`,
/// `client-certificate-data` and `client-key-data`,
/// `certificate-authority-data`, user name and password); a file or a
/// command on fedns's machine (`tokenFile`, `client-certificate`,
/// `certificate-authority`, `auth-provider`, `exec` unless its command is
/// allowed) is refused, or whoever writes that Secret could have fedns run
/// a program or send its own files.
pub(crate) fn kubeconfig_connection(text: Vec<u8>, origin: &str) -> Result<Connection, String> {
    let text = String::from_utf8(text).map_err(|_| format!("{origin} is not UTF-8"))?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)
        .map_err(|e| format!("{origin} does not parse as a kubeconfig: {e}"))?;
    let context_name = kubeconfig
        .current_context
        .as_deref()
        .ok_or_else(|| format!("{origin}: the kubeconfig has no current-context"))?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| format!("{origin}: the kubeconfig has no context {context_name:?}"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| format!("{origin}: the kubeconfig has no cluster {:?}", context.cluster))?;
    let server = cluster.server.clone().ok_or_else(|| {
        format!(
            "{origin}: the kubeconfig has no server for cluster {:?}",
            context.cluster
        )
    })?;
    Ok(Connection {
        api_endpoint: server,
        kubeconfig: Some(text),
        origin: origin.to_owned(),
        ..Connection::default()
    })
}

/// Base64 text (a Go `[]byte` in JSON) decoded; `what` names the field in errors.
pub(crate) fn base64_field(value: &str, what: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .map_err(|e| format!("{what} is not base64: {e}"))
}

/// Deserializes a field of an inventory object, its type's default when
/// the value does not fit (a number where a string is wanted...): one
/// malformed object must not fail the decoding of a whole watch list. A
/// number or boolean where a string is wanted is taken as its text.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    let value = match value {
        serde_json::Value::Number(n) => serde_json::from_value(serde_json::Value::Number(n.clone()))
            .or_else(|_| serde_json::from_value(serde_json::Value::String(n.to_string()))),
        serde_json::Value::Bool(b) => serde_json::from_value(serde_json::Value::Bool(b))
            .or_else(|_| serde_json::from_value(serde_json::Value::String(b.to_string()))),
        other => serde_json::from_value(other),
    };
    Ok(value.unwrap_or_default())
}

/// Each of `objects` translated by `translate`, with where its Events go
/// (`recorder`, the object itself): what [`Inventory::members`] returns.
pub(crate) fn each_translated<K>(
    objects: Vec<std::sync::Arc<K>>,
    recorder: &Recorder,
    translate: impl Fn(&K) -> Translated,
) -> Vec<(Translated, Recorder, ObjectReference)>
where
    K: Resource<DynamicType = ()>,
{
    objects
        .iter()
        .map(|o| (translate(o), recorder.clone(), o.object_ref(&())))
        .collect()
}

/// A member source's inputs: every member it asks for, translated.
pub(crate) trait Inventory {
    /// Which source this is.
    fn source(&self) -> MemberSource;
    /// Each member: its translation and where its Events go.
    fn members(&self, namespace: &str) -> Vec<(Translated, Recorder, ObjectReference)>;
}

/// What the sources' tests share.
#[cfg(test)]
pub(crate) mod test_support {
    use kube::runtime::reflector::Store;
    use kube::runtime::{reflector, watcher};

    /// A store holding `objects` (for the sources' tests).
    pub(crate) fn store<K>(objects: &[serde_json::Value]) -> Store<K>
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + 'static,
    {
        let (store, mut writer) = reflector::store();
        for o in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(serde_json::from_value(o.clone()).unwrap()));
        }
        store
    }
}
