//! An emulated federation on loopback: one host cluster with the fedns
//! CRDs and several member clusters, each a `fedns-sandbox` emulator with
//! its own port, CA and token, and a kubeconfig written per cluster.
//! Used by `fedns sandbox` and by the end-to-end tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine as _;
use fedns_sandbox::{Emulator, EmulatorConfig};
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
    /// the emulator serves the same paths, and the cluster proxy beside them.
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
        plane.seed_yaml(engine.as_str(), engine.crd_yaml())?;
        Ok(())
    }

    /// Registers member `name` with `engine`, as a user of that engine has
    /// it: Karmada, a `Cluster` (Push mode, `apiEndpoint`, `secretRef` to a
    /// Secret in `karmada-cluster` with keys `token` and `caBundle`);
    /// kubefed, a `KubeFedCluster` in `kube-federation-system` (`apiEndpoint`,
    /// `caBundle`, `secretRef.name` to a Secret with key `token`).
    /// `extra_spec` is merged into the spec (top-level keys; `null` removes one).
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

/// A propagation engine whose cluster registry fedns reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Karmada: `clusters.cluster.karmada.io/v1alpha1`.
    Karmada,
    /// kubefed v2: `kubefedclusters.core.kubefed.io/v1beta1`.
    Kubefed,
}

impl Engine {
    /// `karmada` or `kubefed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Karmada => "karmada",
            Engine::Kubefed => "kubefed",
        }
    }

    /// The engine's cluster CRD (schema: any fields kept, status
    /// subresource) and the namespace of its Secrets.
    fn crd_yaml(self) -> &'static str {
        match self {
            Engine::Karmada => KARMADA_CRD,
            Engine::Kubefed => KUBEFED_CRD,
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

const KUBEFED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kubefedclusters.core.kubefed.io}
spec:
  group: core.kubefed.io
  scope: Namespaced
  names: {kind: KubeFedCluster, listKind: KubeFedClusterList, plural: kubefedclusters, singular: kubefedcluster}
  versions:
    - name: v1beta1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
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
