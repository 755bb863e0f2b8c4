//! The sources together: every configured source's caches ([`Sources`])
//! and the members they ask for ([`Desired`]), the first source naming a
//! cluster winning.

use std::collections::BTreeSet;

use crate::events::Recorder;
use fedns_api::MemberCluster;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};

use super::translate::{EngineReady, Inventory, MemberSource};
use super::{argocd, capi, clusternet, clusterprofile, karmada, kubefed};
use crate::members::client::Connection;
use crate::members::credentials::{ConnectError, CredentialPolicy};

/// A member a source asks for.
pub(crate) struct Desired {
    /// Which source.
    pub(crate) source: MemberSource,
    /// The MemberCluster it runs as (the object itself for `fedns`).
    pub(crate) cluster: MemberCluster,
    /// How to reach it, or why it cannot be reached.
    pub(crate) connection: Result<Connection, ConnectError>,
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

    /// The engine's object this member comes from (source, kind,
    /// namespace and name of its Event target: an Argo CD cluster
    /// Secret, a Karmada Cluster, ...), which stays when the cluster is
    /// renamed (Argo CD's key `name`); `None` for a MemberCluster, whose
    /// name is its object's.
    pub(crate) fn origin(&self) -> Option<String> {
        if self.source == MemberSource::Fedns {
            return None;
        }
        let (_, object) = self.event_target.as_ref()?;
        Some(format!(
            "{}/{}/{}/{}",
            self.source.as_str(),
            object.kind.as_deref().unwrap_or_default(),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref()?
        ))
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
    /// What every source's credentials may hold beyond inline data
    /// (`--allow-exec-plugin`, `--allow-argocd-aws-auth`); checked before
    /// a member's client is built.
    pub credentials: CredentialPolicy,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("order", &self.order)
            .field("credentials", &self.credentials)
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
                                connection: Connection::from_member_cluster(&cluster.spec, secret.as_deref())
                                    .map_err(ConnectError::from),
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
    use crate::members::sources::test_support::store;
    use crate::members::sources::SOURCE_ANNOTATION;
    use kube::runtime::events::Reporter;
    use serde_json::json;

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
        assert!(c2
            .connection
            .as_ref()
            .unwrap_err()
            .message
            .contains("Secret kube-federation-system/s"));
        // What a member is recognised by across a rename: its engine object.
        assert_eq!(
            c2.origin().as_deref(),
            Some("kubefed/KubeFedCluster/kube-federation-system/c2")
        );
        let c1 = sources
            .desired("fedns-system")
            .0
            .into_iter()
            .find(|d| d.name() == "c1")
            .unwrap();
        assert_eq!(c1.origin(), None, "a MemberCluster's name is its object's");
    }
}
