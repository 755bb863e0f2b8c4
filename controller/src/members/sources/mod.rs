//! Where members come from: fedns's own `MemberCluster` objects, or the
//! cluster registry of the propagation engine or fleet tool the user
//! already runs (Karmada `Cluster`, kubefed `KubeFedCluster`, Clusternet
//! `ManagedCluster`, Cluster API `Cluster`, Argo CD cluster Secrets,
//! SIG Multicluster `ClusterProfile`), read as they are.
//!
//! An engine's cluster is run exactly as a MemberCluster would be: each
//! becomes an in-memory MemberCluster (never stored: fedns writes nothing
//! into an engine's objects, nor copies them) whose status the prober keeps
//! and `/debug/explain` shows; Events go to the engine's object.
//!
//! Health: fedns's own probes decide. The engine's `Ready` condition seeds
//! a member's state when fedns starts (so a restart does not drop healthy
//! clusters while probes warm up), and is reported beside fedns's view,
//! but never overrides it: the engine probes every 10 s or more from its
//! control plane, so its `Ready=False` often means the control plane lost
//! the member rather than the member's Services failing, and fedns's
//! probes (every `periodSeconds`, with thresholds) see that themselves.

pub mod argocd;
pub mod capi;
pub mod clusternet;
pub mod clusterprofile;
pub mod karmada;
pub mod kubefed;

use std::collections::BTreeSet;

use crate::events::Recorder;
use fedns_api::{MemberCluster, MemberClusterSpec, MemberClusterStatus};
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::client::Connection;

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
    /// Cluster API `Cluster` objects (`clusters.cluster.x-k8s.io/v1beta2`) and
    /// their `<name>-kubeconfig` Secrets.
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
    pub(crate) connection: Result<Connection, String>,
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
/// reported on its object; its current context is used. Only inline
/// credentials are accepted (`token`, `client-certificate-data` and
/// `client-key-data`, `certificate-authority-data`, user name and
/// password): a kubeconfig read from a Secret may not name a file or a
/// command on fedns's machine (`tokenFile`, `client-certificate`,
/// `certificate-authority`, `exec`, `auth-provider`), or whoever writes
/// that Secret could have fedns run a program or send its own files.
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
    let user = context
        .user
        .as_ref()
        .and_then(|name| kubeconfig.auth_infos.iter().find(|u| &u.name == name))
        .and_then(|u| u.auth_info.as_ref());
    let refused: Vec<&str> = [
        ("certificate-authority", cluster.certificate_authority.is_some()),
        ("tokenFile", user.is_some_and(|u| u.token_file.is_some())),
        (
            "client-certificate",
            user.is_some_and(|u| u.client_certificate.is_some()),
        ),
        ("client-key", user.is_some_and(|u| u.client_key.is_some())),
        ("exec", user.is_some_and(|u| u.exec.is_some())),
        ("auth-provider", user.is_some_and(|u| u.auth_provider.is_some())),
    ]
    .into_iter()
    .filter_map(|(field, set)| set.then_some(field))
    .collect();
    if !refused.is_empty() {
        return Err(format!(
            "{origin}: the kubeconfig uses {}, which fedns does not use from a Secret (only inline data: token, client-certificate-data/client-key-data, certificate-authority-data)",
            refused.join(", ")
        ));
    }
    Ok(Connection {
        api_endpoint: server,
        kubeconfig: Some(text),
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

/// A member a source asks for.
pub(crate) struct Desired {
    /// Which source.
    pub(crate) source: MemberSource,
    /// The MemberCluster it runs as (the object itself for `fedns`).
    pub(crate) cluster: MemberCluster,
    /// How to reach it, or why it cannot be reached.
    pub(crate) connection: Result<Connection, String>,
    /// The engine's own Ready.
    pub(crate) engine_ready: Option<EngineReady>,
    /// Where its Events go: the engine's object and a recorder for the API
    /// server holding it (`None`: the MemberCluster, in the host).
    pub(crate) event_target: Option<(Recorder, ObjectReference)>,
}

impl Desired {
    pub(crate) fn name(&self) -> String {
        self.cluster.name_any()
    }
}

/// The Karmada control plane: its Clusters and Secrets, its client
/// configuration (for the cluster proxy) and an Event recorder there.
#[derive(Clone)]
pub struct KarmadaInputs {
    /// `Cluster` objects.
    pub clusters: Store<karmada::Cluster>,
    /// Secrets (only keys `token` and `caBundle` are kept).
    pub secrets: Store<Secret>,
    /// Client configuration of the Karmada API server.
    pub config: kube::Config,
    /// Events on Clusters.
    pub recorder: Recorder,
}

/// kubefed's namespace in the host: its KubeFedClusters and Secrets.
#[derive(Clone)]
pub struct KubefedInputs {
    /// `KubeFedCluster` objects.
    pub clusters: Store<kubefed::KubeFedCluster>,
    /// Secrets of that namespace.
    pub secrets: Store<Secret>,
    /// Events on KubeFedClusters.
    pub recorder: Recorder,
}

/// Every configured source's caches, in `--member-source` order.
#[derive(Clone, Default)]
pub struct Sources {
    /// `--member-source` order (the first source naming a cluster wins).
    pub order: Vec<MemberSource>,
    /// MemberClusters and their Secrets (controller namespace).
    pub fedns: Option<(Store<MemberCluster>, Store<Secret>)>,
    /// Karmada.
    pub karmada: Option<KarmadaInputs>,
    /// kubefed.
    pub kubefed: Option<KubefedInputs>,
    /// Clusternet.
    pub clusternet: Option<clusternet::ClusternetInputs>,
    /// Cluster API.
    pub capi: Option<capi::CapiInputs>,
    /// Argo CD.
    pub argocd: Option<argocd::ArgocdInputs>,
    /// ClusterProfile.
    pub clusterprofile: Option<clusterprofile::ClusterProfileInputs>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("order", &self.order)
            .finish_non_exhaustive()
    }
}

impl Sources {
    /// Every member asked for, and the ones dropped because an earlier
    /// source already has a cluster of that name (with the message).
    pub(crate) fn desired(&self, namespace: &str) -> (Vec<Desired>, Vec<(Desired, String)>) {
        let mut all = Vec::new();
        for source in &self.order {
            match source {
                MemberSource::Fedns => {
                    if let Some((clusters, secrets)) = &self.fedns {
                        for cluster in clusters.state() {
                            let secret = cluster
                                .spec
                                .secret_ref
                                .as_ref()
                                .and_then(|r| secrets.state().into_iter().find(|s| s.name_any() == r.name));
                            all.push(Desired {
                                source: MemberSource::Fedns,
                                connection: Connection::from_member_cluster(&cluster.spec, secret.as_deref()),
                                cluster: (*cluster).clone(),
                                engine_ready: None,
                                event_target: None,
                            });
                        }
                    }
                }
                MemberSource::Karmada => {
                    if let Some(inputs) = &self.karmada {
                        for cluster in inputs.clusters.state() {
                            let t = karmada::translate(&cluster, &inputs.secrets, &inputs.config, namespace);
                            all.push(Desired {
                                source: MemberSource::Karmada,
                                cluster: t.member,
                                connection: t.connection,
                                engine_ready: t.engine_ready,
                                event_target: Some((inputs.recorder.clone(), cluster.object_ref(&()))),
                            });
                        }
                    }
                }
                MemberSource::Kubefed => {
                    if let Some(inputs) = &self.kubefed {
                        for cluster in inputs.clusters.state() {
                            let t = kubefed::translate(&cluster, &inputs.secrets, namespace);
                            all.push(Desired {
                                source: MemberSource::Kubefed,
                                cluster: t.member,
                                connection: t.connection,
                                engine_ready: t.engine_ready,
                                event_target: Some((inputs.recorder.clone(), cluster.object_ref(&()))),
                            });
                        }
                    }
                }
                MemberSource::Clusternet => all.extend(inventory(self.clusternet.as_ref(), namespace)),
                MemberSource::Capi => all.extend(inventory(self.capi.as_ref(), namespace)),
                MemberSource::Argocd => all.extend(inventory(self.argocd.as_ref(), namespace)),
                MemberSource::Clusterprofile => all.extend(inventory(self.clusterprofile.as_ref(), namespace)),
            }
        }
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut first: std::collections::BTreeMap<String, MemberSource> = Default::default();
        let (mut kept, mut dropped) = (Vec::new(), Vec::new());
        for desired in all {
            let name = desired.name();
            if seen.insert(name.clone()) {
                first.insert(name, desired.source);
                kept.push(desired);
            } else {
                let message = format!(
                    "a {} cluster named {name} is already a member; this one is ignored (member names are unique across --member-source)",
                    first.get(&name).map_or("", |s| s.as_str())
                );
                dropped.push((desired, message));
            }
        }
        (kept, dropped)
    }
}

/// The members an inventory source asks for (none when it is not configured).
fn inventory(inputs: Option<&impl Inventory>, namespace: &str) -> Vec<Desired> {
    let Some(inputs) = inputs else {
        return Vec::new();
    };
    inputs
        .members(namespace)
        .into_iter()
        .map(|(t, recorder, reference)| Desired {
            source: inputs.source(),
            cluster: t.member,
            connection: t.connection,
            engine_ready: t.engine_ready,
            event_target: Some((recorder, reference)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::events::Reporter;
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    /// A store holding `objects` (for the sources' tests).
    pub(super) fn store<K>(objects: &[serde_json::Value]) -> Store<K>
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + 'static,
    {
        let (store, mut writer) = reflector::store();
        for o in objects {
            writer.apply_watcher_event(&watcher::Event::Apply(serde_json::from_value(o.clone()).unwrap()));
        }
        store
    }

    #[tokio::test]
    async fn a_name_taken_by_an_earlier_source_is_dropped_with_a_message() {
        let client = kube::Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().unwrap())).unwrap();
        let recorder = Recorder::new(
            client,
            Reporter {
                controller: "test".into(),
                instance: None,
            },
        );
        let members: Store<MemberCluster> = store(&[json!({
            "apiVersion": "core.fedns.io/v1alpha1", "kind": "MemberCluster",
            "metadata": {"name": "c1", "namespace": "fedns-system"},
            "spec": {"apiEndpoint": "https://10.0.0.1"},
        })]);
        let clusters: Store<kubefed::KubeFedCluster> = store(&[
            json!({"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
                "metadata": {"name": "c1", "namespace": "kube-federation-system"},
                "spec": {"apiEndpoint": "https://10.0.0.2", "secretRef": {"name": "s"}}}),
            json!({"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
                "metadata": {"name": "c2", "namespace": "kube-federation-system"},
                "spec": {"apiEndpoint": "https://10.0.0.3", "secretRef": {"name": "s"}}}),
        ]);
        let sources = Sources {
            order: vec![MemberSource::Fedns, MemberSource::Kubefed],
            fedns: Some((members, store(&[]))),
            kubefed: Some(KubefedInputs {
                clusters,
                secrets: store(&[]),
                recorder,
            }),
            ..Sources::default()
        };
        let (kept, dropped) = sources.desired("fedns-system");
        let kept: Vec<(String, MemberSource)> = kept.iter().map(|d| (d.name(), d.source)).collect();
        assert_eq!(
            kept,
            vec![("c1".into(), MemberSource::Fedns), ("c2".into(), MemberSource::Kubefed)]
        );
        assert_eq!(dropped.len(), 1);
        assert!(
            dropped[0].1.contains("a fedns cluster named c1 is already a member"),
            "{}",
            dropped[0].1
        );
        let c2 = sources
            .desired("fedns-system")
            .0
            .into_iter()
            .find(|d| d.name() == "c2")
            .unwrap();
        assert_eq!(
            c2.cluster.annotations().get(SOURCE_ANNOTATION).map(String::as_str),
            Some("kubefed")
        );
        assert!(c2.connection.unwrap_err().contains("Secret kube-federation-system/s"));
    }
}
