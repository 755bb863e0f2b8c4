//! Cluster API's `Cluster` (`cluster.x-k8s.io/v1beta2`, namespaced, in the
//! management cluster) as a member source. Only the fields fedns reads are
//! declared, as in Cluster API's Go types (`api/core/v1beta2/cluster_types.go`);
//! unknown fields are ignored and every field is optional, so that no
//! object fails to decode.
//!
//! Credentials: the admin kubeconfig Cluster API writes for each cluster,
//! the Secret `<cluster>-kubeconfig` in the Cluster's namespace, key
//! `value` (`util/secret/consts.go`, `KubeconfigDataName`): client
//! certificates or tokens, whatever it holds. The Secret is watched, so a
//! rotated kubeconfig (Cluster API renews it before its certificate
//! expires) is used within seconds.
//!
//! Only that Secret is ever requested: one watch per Cluster, by name
//! (field selector `metadata.name=<cluster>-kubeconfig`), started and
//! stopped as Clusters come and go ([`KubeconfigSecrets`]). Cluster API
//! writes the cluster's CA, etcd, service-account and front-proxy keys
//! beside it with the same `cluster.x-k8s.io/cluster-name` label and the
//! same type (kubernetes-sigs/cluster-api
//! ae7ff047db499ac3858ade268ba38db8c9f128bb, `util/secret/certificates.go`
//! `AsSecret`, `util/kubeconfig/kubeconfig.go` `GenerateSecretWithOwner`),
//! so a watch by label would bring those private keys to fedns too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::events::Recorder;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{
    each_translated, engine_member, kubeconfig_connection, lenient, ready_from_conditions, topology_from_labels,
    Inventory, InventoryCondition, MemberSource, Translated,
};
use crate::members::client::{secret_value, Connection};
use crate::members::credentials::ConnectError;

/// Cluster API's `Cluster.spec` (the fields fedns reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Cluster",
    plural = "clusters",
    namespaced,
    status = "ClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Where the workload cluster's API server is (shown; the kubeconfig is what is used).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
}

/// Cluster API's `Cluster` as servers before Cluster API v1.11 serve it
/// (`cluster.x-k8s.io/v1beta1` only; kubernetes-sigs/cluster-api v1.10.0
/// `api/v1beta1/cluster_types.go`). The fields fedns reads have the v1beta2 shapes, so it
/// becomes a [`Cluster`] ([`From`]); its readiness is the v1beta1 `Ready`
/// condition ([`READY_V1BETA1_CONDITION`]). Read only where the server
/// serves no v1beta2 (see [`ServedVersion`]).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta1",
    kind = "Cluster",
    root = "ClusterV1Beta1",
    plural = "clusters",
    namespaced,
    status = "ClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterV1Beta1Spec {
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
}

impl From<ClusterV1Beta1> for Cluster {
    fn from(old: ClusterV1Beta1) -> Cluster {
        Cluster {
            metadata: old.metadata,
            spec: ClusterSpec {
                control_plane_endpoint: old.spec.control_plane_endpoint,
            },
            status: old.status,
        }
    }
}

/// Which version of `Cluster` the management cluster serves, chosen once
/// at start from its discovery: v1beta2 (Cluster API v1.11 and later, and
/// where neither is served yet), else v1beta1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedVersion {
    /// `cluster.x-k8s.io/v1beta2`: readiness is `Available`.
    V1Beta2,
    /// `cluster.x-k8s.io/v1beta1` only: readiness is `Ready`.
    V1Beta1,
}

impl ServedVersion {
    /// The condition type that is the Cluster's readiness in this version.
    pub fn ready_condition(self) -> &'static str {
        match self {
            ServedVersion::V1Beta2 => AVAILABLE_CONDITION,
            ServedVersion::V1Beta1 => READY_V1BETA1_CONDITION,
        }
    }
}

/// Cluster API's `APIEndpoint`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ApiEndpoint {
    /// Host name or IP.
    #[serde(default, deserialize_with = "lenient")]
    pub host: String,
    /// TCP port.
    #[serde(default, deserialize_with = "lenient")]
    pub port: i32,
}

/// Cluster API's `Cluster.status` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ClusterStatus {
    /// Conditions (`metav1.Condition`); `Available` is the Cluster's
    /// readiness. v1beta2 has no `Ready` here: the old v1beta1 conditions
    /// are served under `status.deprecated.v1beta1.conditions`.
    #[serde(default, deserialize_with = "lenient")]
    pub conditions: Vec<InventoryCondition>,
    /// `Pending`, `Provisioning`, `Provisioned`, `Deleting`, `Failed`, `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub phase: Option<String>,
}

/// The v1beta2 Cluster's readiness condition (`ClusterAvailableCondition`,
/// `api/core/v1beta2/cluster_types.go`).
pub const AVAILABLE_CONDITION: &str = "Available";
/// The v1beta1 Cluster's readiness condition (`ReadyCondition`, a summary
/// of `ControlPlaneReady` and `InfrastructureReady`; kubernetes-sigs/cluster-api
/// v1.10.0 `api/v1beta1/condition_consts.go`).
pub const READY_V1BETA1_CONDITION: &str = "Ready";

/// Suffix of the kubeconfig Secret Cluster API writes per cluster.
pub const KUBECONFIG_SUFFIX: &str = "-kubeconfig";
/// Key of the kubeconfig in that Secret.
pub const KUBECONFIG_KEY: &str = "value";
/// Label Cluster API puts on the Secrets of a cluster (the kubeconfig Secret too).
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// Type of the Secrets Cluster API writes (`ClusterSecretType`,
/// `api/core/v1beta2/common_types.go`); a kubeconfig Secret of another
/// type was not written by Cluster API and is not used.
pub const SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

/// The name of `cluster`'s kubeconfig Secret.
pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}{KUBECONFIG_SUFFIX}")
}

/// One Cluster's kubeconfig Secret watch: its cache, whether it has
/// listed yet, and its task (aborted when the Cluster goes).
pub struct KubeconfigWatch {
    /// The watch's cache (at most the one Secret).
    pub store: Store<Secret>,
    /// Set once the watch has listed: before, "not found" would be a guess.
    pub listed: Arc<AtomicBool>,
    /// The watch's task, if any (none in unit tests).
    pub task: Option<tokio::task::AbortHandle>,
}

impl Drop for KubeconfigWatch {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The kubeconfig Secret of each Cluster (namespace, name), each from its
/// own watch by name, so that the cluster's other Secrets are never read.
#[derive(Clone, Default)]
pub struct KubeconfigSecrets(Arc<Mutex<BTreeMap<(String, String), KubeconfigWatch>>>);

/// What is known of a Cluster's kubeconfig Secret.
enum Lookup {
    NotWatched,
    NotListed,
    Missing,
    Found(Arc<Secret>),
}

impl KubeconfigSecrets {
    /// Keeps the watches of `clusters` (namespace, name), stopping the
    /// others and starting the missing ones with `start(namespace, secret name)`.
    pub fn sync(
        &self,
        clusters: impl IntoIterator<Item = (String, String)>,
        mut start: impl FnMut(&str, &str) -> KubeconfigWatch,
    ) {
        let wanted: BTreeSet<(String, String)> = clusters.into_iter().collect();
        let mut watches = self.0.lock().unwrap_or_else(|e| e.into_inner());
        watches.retain(|key, _| wanted.contains(key));
        for (namespace, cluster) in wanted {
            if !watches.contains_key(&(namespace.clone(), cluster.clone())) {
                let watch = start(&namespace, &kubeconfig_secret_name(&cluster));
                watches.insert((namespace, cluster), watch);
            }
        }
    }

    /// The Clusters (namespace, name) watched, in order.
    pub fn watched(&self) -> Vec<(String, String)> {
        let watches = self.0.lock().unwrap_or_else(|e| e.into_inner());
        watches.keys().cloned().collect()
    }

    fn lookup(&self, namespace: &str, cluster: &str) -> Lookup {
        let watches = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(watch) = watches.get(&(namespace.to_owned(), cluster.to_owned())) else {
            return Lookup::NotWatched;
        };
        let name = kubeconfig_secret_name(cluster);
        match watch.store.get(&ObjectRef::new(&name).within(namespace)) {
            Some(secret) => Lookup::Found(secret),
            None if watch.listed.load(Ordering::Relaxed) => Lookup::Missing,
            None => Lookup::NotListed,
        }
    }
}

/// The management cluster: its Clusters, their kubeconfig Secrets, and an
/// Event recorder there.
#[derive(Clone)]
pub struct CapiInputs {
    /// `Cluster` objects.
    pub clusters: Store<Cluster>,
    /// Each Cluster's kubeconfig Secret (only key `value` is kept).
    pub secrets: KubeconfigSecrets,
    /// Events on Clusters.
    pub recorder: Recorder,
    /// The version the Clusters are read in (which condition is readiness).
    pub version: ServedVersion,
}

impl Inventory for CapiInputs {
    fn source(&self) -> MemberSource {
        MemberSource::Capi
    }

    fn members(&self, namespace: &str) -> Vec<(Translated, Recorder, ObjectReference)> {
        each_translated(self.clusters.state(), &self.recorder, |c| {
            translate(c, &self.secrets, namespace, self.version)
        })
    }
}

/// How a Cluster API `Cluster` becomes a member: region and zones from its
/// labels `topology.kubernetes.io/region` and `topology.kubernetes.io/zone`
/// (else the member's Nodes); the readiness condition of the `version`
/// read (v1beta2 `Available`, v1beta1 `Ready`) seeds its state (a Cluster
/// that has none yet seeds nothing).
pub(crate) fn translate(
    cluster: &Cluster,
    secrets: &KubeconfigSecrets,
    namespace: &str,
    version: ServedVersion,
) -> Translated {
    let name = cluster.name_any();
    let (region, zones) = topology_from_labels(cluster.labels());
    let ready = cluster
        .status
        .as_ref()
        .and_then(|s| ready_from_conditions(&s.conditions, &[version.ready_condition()]));
    let connection = connection(cluster, secrets);
    let endpoint = match (&connection, &cluster.spec.control_plane_endpoint) {
        (Ok(c), _) => c.api_endpoint.clone(),
        (Err(_), Some(e)) if !e.host.is_empty() => format!("https://{}:{}", e.host, e.port),
        _ => String::new(),
    };
    Translated {
        member: engine_member(&name, namespace, "capi", &endpoint, region, zones, ready.as_ref()),
        connection: connection.map_err(ConnectError::from),
        engine_ready: ready,
    }
}

fn connection(cluster: &Cluster, secrets: &KubeconfigSecrets) -> Result<Connection, String> {
    let namespace = cluster.namespace().unwrap_or_default();
    let secret_name = kubeconfig_secret_name(&cluster.name_any());
    let secret = match secrets.lookup(&namespace, &cluster.name_any()) {
        Lookup::Found(secret) => secret,
        Lookup::NotWatched | Lookup::NotListed => {
            return Err(format!(
                "Secret {namespace}/{secret_name} (Cluster API's kubeconfig Secret) not read yet"
            ))
        }
        Lookup::Missing => {
            return Err(format!(
                "Secret {namespace}/{secret_name} (Cluster API's kubeconfig Secret) not found"
            ))
        }
    };
    let type_ = secret.type_.as_deref().unwrap_or_default();
    if type_ != SECRET_TYPE {
        return Err(format!(
            "Secret {namespace}/{secret_name} has type {type_:?}, not Cluster API's {SECRET_TYPE}"
        ));
    }
    let value = secret_value(&secret, KUBECONFIG_KEY)
        .ok_or_else(|| format!("Secret {namespace}/{secret_name} has no key {KUBECONFIG_KEY}"))?;
    kubeconfig_connection(value, &format!("Secret {namespace}/{secret_name} key {KUBECONFIG_KEY}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::sources::test_support::store;
    use crate::members::sources::{REGION_LABEL, ZONE_LABEL};
    use serde_json::json;

    const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters: [{name: w, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: w, user: u}}]\ncurrent-context: c\n";

    fn cluster(labels: serde_json::Value, status: serde_json::Value) -> Cluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "w1", "namespace": "fleet", "labels": labels},
            "spec": {"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}, "topology": {"classRef": {"name": "x"}}},
            "status": status,
        }))
        .unwrap()
    }

    /// `w1`'s watch, listed, holding `secrets`.
    fn watched(secrets: &[serde_json::Value]) -> KubeconfigSecrets {
        let watched = KubeconfigSecrets::default();
        watched.sync([("fleet".to_owned(), "w1".to_owned())], |_, _| KubeconfigWatch {
            store: store(secrets),
            listed: Arc::new(AtomicBool::new(true)),
            task: None,
        });
        watched
    }

    fn secret(data: serde_json::Value) -> KubeconfigSecrets {
        watched(&[json!({"metadata": {"name": "w1-kubeconfig", "namespace": "fleet",
            "labels": {CLUSTER_NAME_LABEL: "w1"}}, "type": SECRET_TYPE, "stringData": data})])
    }

    /// A v1beta1 Cluster (servers before Cluster API v1.11) becomes the
    /// same Cluster; its readiness is `Ready`, and an `Available` among
    /// its conditions (never written there) would not count.
    #[test]
    fn a_v1beta1_cluster_is_read_with_its_ready_condition() {
        let old: ClusterV1Beta1 = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": "ns"},
            "spec": {"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}},
            "status": {"phase": "Provisioned", "conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Ready", "status": "False", "severity": "Error", "reason": "ControlPlaneNotReady",
                 "message": "0 of 1 ready"}]},
        }))
        .unwrap();
        let c = Cluster::from(old);
        assert_eq!(c.spec.control_plane_endpoint.as_ref().unwrap().host, "10.0.0.1");
        let t = translate(&c, &secret(json!({"value": KUBECONFIG})), "ns", ServedVersion::V1Beta1);
        assert_eq!(
            t.engine_ready.unwrap().summary(),
            "False (ControlPlaneNotReady): 0 of 1 ready"
        );
    }

    #[test]
    fn reads_the_kubeconfig_secret_labels_and_conditions() {
        let c = cluster(
            json!({REGION_LABEL: "eu", ZONE_LABEL: "eu-1"}),
            json!({"phase": "Provisioned", "conditions": [{"type": "Available", "status": "False",
                "reason": "NotAvailable", "message": "RemoteConnectionProbe failed"}]}),
        );
        let t = translate(
            &c,
            &secret(json!({"value": KUBECONFIG})),
            "fedns-system",
            ServedVersion::V1Beta2,
        );
        let connection = t.connection.unwrap();
        assert_eq!(connection.kubeconfig.as_deref(), Some(KUBECONFIG));
        assert_eq!(t.member.spec.api_endpoint, "https://127.0.0.1:6443");
        assert_eq!(t.member.spec.region.as_deref(), Some("eu"));
        assert_eq!(t.member.spec.zones, vec!["eu-1"]);
        assert_eq!(
            t.engine_ready.unwrap().summary(),
            "False (NotAvailable): RemoteConnectionProbe failed"
        );
    }

    /// v1beta2 serves the v1beta1 `Ready` only under
    /// `status.deprecated.v1beta1.conditions`, never beside `Available`: a
    /// Cluster shaped as Cluster API writes it (kubernetes-sigs/cluster-api
    /// ae7ff047db499ac3858ade268ba38db8c9f128bb, `api/core/v1beta2/cluster_types.go`
    /// `ClusterStatus.Deprecated`, condition types in the same file) is read
    /// by `Available`, and without one (not computed yet) seeds nothing.
    #[test]
    fn available_is_read_and_the_deprecated_ready_is_not() {
        let deprecated = json!({"v1beta1": {"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        let c = cluster(
            json!({}),
            json!({"phase": "Provisioned", "deprecated": deprecated, "conditions": [
                {"type": "RemoteConnectionProbe", "status": "False", "reason": "ProbeFailed",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Available", "status": "False", "reason": "NotAvailable",
                    "message": "* RemoteConnectionProbe: Remote connection probe failed",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        let t = translate(&c, &secret(json!({"value": KUBECONFIG})), "ns", ServedVersion::V1Beta2);
        assert_eq!(
            t.engine_ready.unwrap().summary(),
            "False (NotAvailable): * RemoteConnectionProbe: Remote connection probe failed"
        );
        assert_eq!(t.member.spec.region, None, "no label: the member's Nodes give it");
        let c = cluster(json!({}), json!({"phase": "Provisioning", "deprecated": deprecated}));
        assert!(
            translate(&c, &secret(json!({"value": KUBECONFIG})), "ns", ServedVersion::V1Beta2)
                .engine_ready
                .is_none()
        );
    }

    /// Watches follow the Clusters: one started per new Cluster (for its
    /// kubeconfig Secret's name only), stopped when its Cluster goes.
    #[tokio::test]
    async fn watches_follow_the_clusters() {
        let watched = KubeconfigSecrets::default();
        let started = Mutex::new(Vec::new());
        let task = tokio::spawn(std::future::pending::<()>());
        let abort = task.abort_handle();
        let start = |namespace: &str, name: &str| {
            started.lock().unwrap().push(format!("{namespace}/{name}"));
            KubeconfigWatch {
                store: store(&[]),
                listed: Arc::default(),
                task: (name == "w1-kubeconfig").then(|| abort.clone()),
            }
        };
        let key = |n: &str, c: &str| (n.to_owned(), c.to_owned());
        watched.sync([key("fleet", "w1"), key("other", "w2")], start);
        watched.sync([key("fleet", "w1"), key("other", "w2")], start);
        assert_eq!(*started.lock().unwrap(), ["fleet/w1-kubeconfig", "other/w2-kubeconfig"]);
        watched.sync([key("other", "w2")], start);
        assert_eq!(watched.watched(), [key("other", "w2")]);
        assert!(task.await.unwrap_err().is_cancelled(), "w1's watch is stopped");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let c = cluster(json!({}), json!({}));
        let err = translate(&c, &watched(&[]), "ns", ServedVersion::V1Beta2)
            .connection
            .unwrap_err()
            .message;
        assert_eq!(
            err,
            "Secret fleet/w1-kubeconfig (Cluster API's kubeconfig Secret) not found"
        );
        let err = translate(&c, &KubeconfigSecrets::default(), "ns", ServedVersion::V1Beta2)
            .connection
            .unwrap_err()
            .message;
        assert_eq!(
            err,
            "Secret fleet/w1-kubeconfig (Cluster API's kubeconfig Secret) not read yet"
        );
        let opaque = watched(&[json!({"metadata": {"name": "w1-kubeconfig", "namespace": "fleet"},
            "type": "Opaque", "stringData": {"value": KUBECONFIG}})]);
        let err = translate(&c, &opaque, "ns", ServedVersion::V1Beta2)
            .connection
            .unwrap_err()
            .message;
        assert_eq!(
            err,
            "Secret fleet/w1-kubeconfig has type \"Opaque\", not Cluster API's cluster.x-k8s.io/secret"
        );
        let t = translate(&c, &secret(json!({"other": "x"})), "ns", ServedVersion::V1Beta2);
        assert_eq!(
            t.connection.unwrap_err().message,
            "Secret fleet/w1-kubeconfig has no key value"
        );
        assert_eq!(
            t.member.spec.api_endpoint, "https://10.0.0.1:6443",
            "the spec's endpoint is shown"
        );
        let err = translate(
            &c,
            &secret(json!({"value": "{not yaml: ["})),
            "ns",
            ServedVersion::V1Beta2,
        )
        .connection
        .unwrap_err()
        .message;
        assert!(
            err.starts_with("Secret fleet/w1-kubeconfig key value does not parse as a kubeconfig"),
            "{err}"
        );
        let err = translate(
            &c,
            &secret(json!({"value": "apiVersion: v1\nkind: Config\n"})),
            "ns",
            ServedVersion::V1Beta2,
        )
        .connection
        .unwrap_err()
        .message;
        assert!(err.contains("no current-context"), "{err}");
        let exec = KUBECONFIG.replace(
            "user: {token: t}",
            "user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token, exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}",
        );
        // Files and commands are refused where every connection is checked,
        // before anything of it is read or run.
        let connection = translate(&c, &secret(json!({"value": exec})), "ns", ServedVersion::V1Beta2)
            .connection
            .unwrap();
        let err = connection
            .check(&crate::members::CredentialPolicy::default())
            .unwrap_err();
        assert_eq!(err.reason, crate::members::CREDENTIALS_REFUSED);
        assert!(
            err.message
                .starts_with("Secret fleet/w1-kubeconfig key value: user \"u\" has tokenFile"),
            "{err}"
        );
        assert!(
            err.message.contains("user \"u\" exec runs command \"sh\"; fedns runs a credential plugin named by a Secret or an inventory object only when it is started with --allow-exec-plugin=sh"),
            "{err}"
        );
    }
}
