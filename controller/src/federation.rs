//! An emulated federation on loopback: one host cluster with the fedns
//! CRDs and several member clusters, each a `fedns-kube-emulator` emulator with
//! its own port, CA and token, and a kubeconfig written per cluster.
//! Used by `fedns sandbox` and by the end-to-end tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine as _;
use fedns_kube_emulator::{Emulator, EmulatorConfig};
use serde_json::json;

/// The running clusters.
#[derive(Debug, Clone)]
pub struct Federation {
    /// The host cluster (fedns CRDs, MemberClusters, Domains, records).
    pub host: Emulator,
    /// Member clusters by name.
    pub members: BTreeMap<String, Emulator>,
    /// Where kubeconfigs are written (`<name>.kubeconfig`).
    pub state_dir: PathBuf,
    /// The controller namespace in the host cluster.
    pub namespace: String,
}

impl Federation {
    /// Starts a host and one emulator per member name, installs the fedns
    /// CRDs and `namespace` in the host, and writes
    /// `<state_dir>/<cluster>.kubeconfig` for each (`host` for the host).
    ///
    /// # Errors
    /// An emulator cannot start or a file cannot be written.
    pub async fn start(state_dir: &Path, namespace: &str, members: &[&str]) -> anyhow::Result<Federation> {
        std::fs::create_dir_all(state_dir).with_context(|| format!("creating {}", state_dir.display()))?;
        let host = Emulator::start_with(EmulatorConfig {
            name: "host".into(),
            ..EmulatorConfig::default()
        })
        .await?;
        host.write_kubeconfig(&state_dir.join("host.kubeconfig"))?;
        let crds = fedns_api::crd::crds_yaml()?;
        host.seed_yaml("fedns crds", &crds)?;
        host.seed_yaml(
            "namespace",
            &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"),
        )?;
        let mut federation = Federation {
            host,
            members: BTreeMap::new(),
            state_dir: state_dir.to_owned(),
            namespace: namespace.to_owned(),
        };
        for name in members {
            federation.add_member(name).await?;
        }
        Ok(federation)
    }

    /// Starts one more member emulator (not yet registered).
    ///
    /// # Errors
    /// The emulator cannot start or its kubeconfig cannot be written.
    pub async fn add_member(&mut self, name: &str) -> anyhow::Result<Emulator> {
        let member = Emulator::start_with(EmulatorConfig {
            name: name.into(),
            ..EmulatorConfig::default()
        })
        .await?;
        member.write_kubeconfig(&self.state_dir.join(format!("{name}.kubeconfig")))?;
        self.members.insert(name.to_owned(), member.clone());
        Ok(member)
    }

    /// The member emulator `name`.
    ///
    /// # Errors
    /// No such member.
    pub fn member(&self, name: &str) -> anyhow::Result<&Emulator> {
        self.members
            .get(name)
            .with_context(|| format!("no member cluster named {name}"))
    }

    /// Replaces `{{url:NAME}}`, `{{ca:NAME}}` (base64 PEM) and
    /// `{{token:NAME}}` in manifest text with member NAME's values.
    pub fn render(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (name, member) in &self.members {
            let ca = base64::engine::general_purpose::STANDARD.encode(member.ca_pem());
            out = out
                .replace(&format!("{{{{url:{name}}}}}"), &member.url())
                .replace(&format!("{{{{ca:{name}}}}}"), &ca)
                .replace(&format!("{{{{token:{name}}}}}"), member.token());
        }
        out
    }

    /// Registers member `name` in the host: a token Secret and a
    /// MemberCluster pointing at the emulator (CA bundle and token).
    ///
    /// # Errors
    /// The host rejects the objects.
    pub fn register(&self, name: &str, extra_spec: serde_json::Value) -> anyhow::Result<()> {
        let member = self.member(name)?;
        let ca = base64::engine::general_purpose::STANDARD.encode(member.ca_pem());
        let mut spec = json!({
            "apiEndpoint": member.url(),
            "caBundle": ca,
            "secretRef": {"name": format!("{name}-token")},
        });
        json_merge(&mut spec, &extra_spec);
        let objects = json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": format!("{name}-token"), "namespace": self.namespace},
                    "type": "Opaque",
                    "stringData": {"token": member.token()},
                },
                {
                    "apiVersion": "core.fedns.io/v1alpha1", "kind": "MemberCluster",
                    "metadata": {"name": name, "namespace": self.namespace},
                    "spec": spec,
                },
            ],
        });
        self.host
            .seed_yaml(&format!("member {name}"), &serde_json::to_string(&objects)?)?;
        Ok(())
    }

    /// Makes the host stand in for a propagation engine's control plane:
    /// registers `engine`'s cluster CRD (Karmada `clusters.cluster.karmada.io`,
    /// cluster-scoped; kubefed `kubefedclusters.core.kubefed.io` in
    /// `kube-federation-system`) and the namespace its Secrets live in.
    /// Karmada serves `Cluster` from its aggregated API server, not a CRD;
    /// the emulator serves the same paths, and the cluster proxy beside them
    /// (Clusternet: the socket proxy), from `fedns-standins`.
    ///
    /// # Errors
    /// The host rejects the objects.
    pub fn install_engine(&self, engine: Engine) -> anyhow::Result<()> {
        self.install_engine_in(&self.host, engine)
    }

    /// As [`Federation::install_engine`], in `plane` (an engine control
    /// plane apart from the host, e.g. a karmada-apiserver).
    ///
    /// # Errors
    /// `plane` rejects the objects.
    pub fn install_engine_in(&self, plane: &Emulator, engine: Engine) -> anyhow::Result<()> {
        plane.seed_yaml(engine.as_str(), &engine.crd_yaml())?;
        // The engine's own proxy beside its objects, as its aggregated API
        // server (Karmada) or hub (Clusternet) serves it.
        match engine {
            Engine::Karmada => plane.serve_proxy(std::sync::Arc::new(fedns_standins::fleet::KarmadaClusterProxy)),
            Engine::Clusternet => plane.serve_proxy(std::sync::Arc::new(fedns_standins::fleet::ClusternetSocketProxy)),
            Engine::Kubefed | Engine::Capi | Engine::Argocd | Engine::Clusterprofile => {}
        }
        Ok(())
    }

    /// Registers member `name` with `engine`, as a user of that engine has
    /// it: Karmada, a `Cluster` (Push mode, `apiEndpoint`, `secretRef` to a
    /// Secret in `karmada-cluster` with keys `token` and `caBundle`);
    /// kubefed, a `KubeFedCluster` in `kube-federation-system` (`apiEndpoint`,
    /// `caBundle`, `secretRef.name` to a Secret with key `token`).
    /// `extra_spec` is merged into the spec (top-level keys; `null` removes one).
    /// For the inventories (Clusternet, Cluster API, Argo CD, ClusterProfile:
    /// see [`inventory_objects`]) `extra_spec` is merged deeply into the
    /// inventory object itself (`metadata`, `spec`, `status`; Argo CD: into
    /// the Secret, its `stringData.config` an object here).
    ///
    /// # Errors
    /// The host rejects the objects.
    pub fn register_engine(&self, engine: Engine, name: &str, extra_spec: serde_json::Value) -> anyhow::Result<()> {
        self.register_engine_in(&self.host, engine, name, extra_spec)
    }

    /// As [`Federation::register_engine`], in `plane`.
    ///
    /// # Errors
    /// `plane` rejects the objects.
    pub fn register_engine_in(
        &self,
        plane: &Emulator,
        engine: Engine,
        name: &str,
        extra_spec: serde_json::Value,
    ) -> anyhow::Result<()> {
        let member = self.member(name)?;
        let ca = base64::engine::general_purpose::STANDARD.encode(member.ca_pem());
        let (secret, cluster) = match engine {
            Engine::Karmada => {
                let mut spec = json!({
                    "syncMode": "Push",
                    "apiEndpoint": member.url(),
                    "secretRef": {"namespace": KARMADA_SECRET_NAMESPACE, "name": name},
                });
                json_merge(&mut spec, &extra_spec);
                (
                    json!({
                        "apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": name, "namespace": KARMADA_SECRET_NAMESPACE},
                        "stringData": {"token": member.token(), "caBundle": member.ca_pem()},
                    }),
                    json!({
                        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                        "metadata": {"name": name},
                        "spec": spec,
                    }),
                )
            }
            Engine::Clusternet | Engine::Capi | Engine::Argocd | Engine::Clusterprofile => {
                let objects = json!({"apiVersion": "v1", "kind": "List", "items": inventory_objects(engine, name, member, &extra_spec)});
                plane.seed_yaml(
                    &format!("{} cluster {name}", engine.as_str()),
                    &serde_json::to_string(&objects)?,
                )?;
                return Ok(());
            }
            Engine::Kubefed => {
                let mut spec = json!({
                    "apiEndpoint": member.url(),
                    "caBundle": ca,
                    "secretRef": {"name": format!("{name}-token")},
                });
                json_merge(&mut spec, &extra_spec);
                (
                    json!({
                        "apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": format!("{name}-token"), "namespace": KUBEFED_NAMESPACE},
                        "stringData": {"token": member.token()},
                    }),
                    json!({
                        "apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
                        "metadata": {"name": name, "namespace": KUBEFED_NAMESPACE},
                        "spec": spec,
                    }),
                )
            }
        };
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [secret, cluster]});
        plane.seed_yaml(
            &format!("{} cluster {name}", engine.as_str()),
            &serde_json::to_string(&objects)?,
        )?;
        Ok(())
    }

    /// Stops every emulator.
    pub fn stop(&self) {
        for member in self.members.values() {
            member.stop();
        }
        self.host.stop();
    }
}

/// The objects registering member `name` (the emulator `member`) with an
/// inventory, as that inventory's own controllers write them:
/// - Clusternet: namespace `clusternet-<name>`, the `child-cluster-deployer`
///   Secret (keys `token`, `ca.crt`, `apiserver-advertise-url`) and a
///   `ManagedCluster` (`spec.clusterId` [`clusternet_id`], label
///   `clusters.clusternet.io/cluster-id`, status `readyz`/`livez`/`healthz`
///   true, the agent's `Ready=True` condition and `apiserverURL`);
/// - Cluster API: in namespace [`CAPI_NAMESPACE`], the Secret
///   `<name>-kubeconfig` (key `value`: a token kubeconfig) and a `Cluster`
///   (`controlPlaneEndpoint`, condition `Available=True`);
/// - Argo CD: a Secret in [`ARGOCD_NAMESPACE`] labelled
///   `argocd.argoproj.io/secret-type: cluster` with `name`, `server` and
///   `config` (`bearerToken`, `tlsClientConfig.caData`);
/// - ClusterProfile: in [`CLUSTERPROFILE_NAMESPACE`] a `ClusterProfile`
///   whose `secretreader` access provider gives the server and CA, and
///   the token Secret `<name>` in [`CLUSTERPROFILE_SECRET_NAMESPACE`].
///
/// `extra` is merged deeply into the inventory object (`null` removes a key).
pub fn inventory_objects(
    engine: Engine,
    name: &str,
    member: &Emulator,
    extra: &serde_json::Value,
) -> Vec<serde_json::Value> {
    let ca = base64::engine::general_purpose::STANDARD.encode(member.ca_pem());
    let url = member.url();
    let mut objects = match engine {
        Engine::Clusternet => {
            let namespace = format!("clusternet-{name}");
            let id = clusternet_id(name);
            vec![
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
                json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "child-cluster-deployer", "namespace": namespace,
                        "labels": {"clusters.clusternet.io/cluster-id": id}},
                    "stringData": {"token": member.token(), "ca.crt": member.ca_pem(), "apiserver-advertise-url": url}}),
                json!({"apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
                    "metadata": {"name": name, "namespace": namespace,
                        "labels": {"clusters.clusternet.io/cluster-id": id, "clusters.clusternet.io/cluster-name": name}},
                    "spec": {"clusterId": id, "clusterType": "EdgeCluster", "syncMode": "Dual"},
                    // As clusternet-agent posts it (clusternet/clusternet
                    // 19245baa35587e3f5d8a02511915c85744b3d606,
                    // pkg/controllers/clusters/clusterstatus/clusterstatus_controller.go).
                    "status": {"apiserverURL": url, "readyz": true, "livez": true, "healthz": true, "useSocket": false,
                        "lastObservedTime": "2026-01-01T00:00:00Z", "heartbeatFrequencySeconds": 60,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "ManagedClusterReady",
                            "message": "managed cluster is ready.", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
            ]
        }
        Engine::Capi => {
            let port = member.addr().port();
            vec![
                json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
                    "metadata": {"name": format!("{name}-kubeconfig"), "namespace": CAPI_NAMESPACE,
                        "labels": {"cluster.x-k8s.io/cluster-name": name}},
                    "stringData": {"value": member.kubeconfig_yaml()}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                    "metadata": {"name": name, "namespace": CAPI_NAMESPACE},
                    "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": port}},
                    "status": {"phase": "Provisioned", "conditions": [{"type": "Available", "status": "True",
                        "reason": "Available", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
            ]
        }
        Engine::Argocd => vec![json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("cluster-{name}"), "namespace": ARGOCD_NAMESPACE,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {"name": name, "server": url,
                "config": {"bearerToken": member.token(), "tlsClientConfig": {"insecure": false, "caData": ca}}}})],
        Engine::Clusterprofile => vec![
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": CLUSTERPROFILE_SECRET_NAMESPACE},
                "stringData": {"token": member.token()}}),
            json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                "metadata": {"name": name, "namespace": CLUSTERPROFILE_NAMESPACE,
                    "labels": {"x-k8s.io/cluster-manager": "fedns-sandbox"}},
                "spec": {"displayName": name, "clusterManager": {"name": "fedns-sandbox"}},
                "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                    "accessProviders": [{"name": "secretreader", "cluster": {"server": url,
                        "certificate-authority-data": ca,
                        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": name}}]}}]}}),
        ],
        Engine::Karmada | Engine::Kubefed => Vec::new(),
    };
    if let Some(object) = objects.last_mut() {
        if engine == Engine::Argocd {
            json_merge_deep(object, extra);
            let config = object["stringData"]["config"].to_string();
            object["stringData"]["config"] = json!(config);
        } else {
            json_merge_deep(object, extra);
        }
    }
    objects
}

/// The Clusternet cluster ID (a UUID) of sandbox member `name`.
pub fn clusternet_id(name: &str) -> String {
    let mut hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    hex.truncate(12);
    format!("5f1d0000-0000-4000-8000-{hex:0>12}")
}

fn json_merge_deep(target: &mut serde_json::Value, patch: &serde_json::Value) {
    if let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else if v.is_object() && t.get(k).is_some_and(serde_json::Value::is_object) {
                // The condition above found an object at `k`: present.
                json_merge_deep(t.get_mut(k).expect("checked"), v);
            } else {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

fn json_merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    if let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Namespace of the Secrets of Karmada's Clusters (`karmadactl join` uses it).
pub const KARMADA_SECRET_NAMESPACE: &str = "karmada-cluster";
/// kubefed's namespace (its default).
pub const KUBEFED_NAMESPACE: &str = "kube-federation-system";

/// Namespace of the sandbox's Cluster API Clusters.
pub const CAPI_NAMESPACE: &str = "fleet";
/// Argo CD's namespace (its default).
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// Namespace of the sandbox's ClusterProfiles.
pub const CLUSTERPROFILE_NAMESPACE: &str = "fleet";
/// The consumer namespace of the `secretreader` access provider (fedns's).
pub const CLUSTERPROFILE_SECRET_NAMESPACE: &str = "fedns-system";

/// A propagation engine or fleet inventory whose cluster registry fedns reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Karmada: `clusters.cluster.karmada.io/v1alpha1`.
    Karmada,
    /// kubefed v2: `kubefedclusters.core.kubefed.io/v1beta1`.
    Kubefed,
    /// Clusternet: `managedclusters.clusters.clusternet.io/v1beta1`.
    Clusternet,
    /// Cluster API: `clusters.cluster.x-k8s.io/v1beta2` and kubeconfig Secrets.
    Capi,
    /// Argo CD: cluster Secrets.
    Argocd,
    /// SIG Multicluster: `clusterprofiles.multicluster.x-k8s.io/v1alpha1`.
    Clusterprofile,
}

impl Engine {
    /// The `--member-source` name: `karmada`, `kubefed`, `clusternet`,
    /// `capi`, `argocd` or `clusterprofile`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Karmada => "karmada",
            Engine::Kubefed => "kubefed",
            Engine::Clusternet => "clusternet",
            Engine::Capi => "capi",
            Engine::Argocd => "argocd",
            Engine::Clusterprofile => "clusterprofile",
        }
    }

    /// The `--member-source` reading this engine's clusters.
    pub fn member_source(self) -> crate::members::MemberSource {
        use crate::members::MemberSource;
        match self {
            Engine::Karmada => MemberSource::Karmada,
            Engine::Kubefed => MemberSource::Kubefed,
            Engine::Clusternet => MemberSource::Clusternet,
            Engine::Capi => MemberSource::Capi,
            Engine::Argocd => MemberSource::Argocd,
            Engine::Clusterprofile => MemberSource::Clusterprofile,
        }
    }

    /// The engine's cluster CRD and the namespaces its objects and Secrets
    /// live in, as YAML documents. kubefed, Clusternet, Cluster API and
    /// ClusterProfile get their upstream CRDs
    /// ([`fedns_standins::upstream_crds`]), so the emulator refuses and
    /// prunes what their real API servers do. Karmada has no CRD to take:
    /// it serves `Cluster` from its aggregated API server (its last CRD,
    /// v0.10.1, lacks fields of today's API and would prune them), so an
    /// open schema stands in. Argo CD keeps clusters in Secrets.
    pub fn crd_yaml(self) -> String {
        use fedns_standins::upstream_crds;
        match self {
            Engine::Karmada => KARMADA_CRD.to_owned(),
            // kubefed's FederatedService CRD is not vendored: fedns only
            // needs the kind served, so it keeps an open schema.
            Engine::Kubefed => [upstream_crds::KUBEFED_CLUSTERS, KUBEFED_EXTRA].concat(),
            Engine::Clusternet => upstream_crds::CLUSTERNET_MANAGED_CLUSTERS.to_owned(),
            Engine::Capi => [upstream_crds::CAPI_CLUSTERS, &namespace_yaml(CAPI_NAMESPACE)].concat(),
            Engine::Argocd => namespace_yaml(ARGOCD_NAMESPACE),
            Engine::Clusterprofile => [
                upstream_crds::CLUSTER_PROFILES,
                &namespace_yaml(CLUSTERPROFILE_NAMESPACE),
            ]
            .concat(),
        }
    }
}

const KARMADA_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusters.cluster.karmada.io}
spec:
  group: cluster.karmada.io
  scope: Cluster
  names: {kind: Cluster, listKind: ClusterList, plural: clusters, singular: cluster}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: karmada-cluster}
"#;

/// What kubefed's install adds beside `KubeFedCluster` that fedns uses:
/// the `FederatedService` kind and kubefed's namespace.
const KUBEFED_EXTRA: &str = r#"---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: federatedservices.types.kubefed.io}
spec:
  group: types.kubefed.io
  scope: Namespaced
  names: {kind: FederatedService, listKind: FederatedServiceList, plural: federatedservices, singular: federatedservice}
  versions:
    - name: v1beta1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-federation-system}
"#;

/// A Namespace, as a YAML document.
fn namespace_yaml(name: &str) -> String {
    format!("---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n")
}
