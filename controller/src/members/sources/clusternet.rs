//! Clusternet's `ManagedCluster` (`clusters.clusternet.io/v1beta1`,
//! namespaced, one per child cluster in its `clusternet-<id>` namespace of
//! the parent cluster) as a member source. Only the fields fedns reads are
//! declared, as in Clusternet's Go types (`pkg/apis/clusters/v1beta1/types.go`);
//! every field is optional, so that no object fails to decode.
//!
//! Credentials: clusternet-agent stores the child's deployer credentials
//! in the parent, the Secret `child-cluster-deployer` in the cluster's
//! namespace (`pkg/known/constant.go`), keys `token`, `ca.crt` and
//! `apiserver-advertise-url`. They are used as Clusternet's own deployer
//! uses them (`GetChildClusterConfig`, `pkg/utils/kubeconfig.go`): a child
//! with `status.useSocket` (its agent keeps a tunnel to the hub; its API
//! server is not reachable from the parent) is reached through the hub's
//! socket proxy, `/apis/proxies.clusternet.io/v1alpha1/sockets/<clusterId>/proxy/direct`
//! on the parent's API server with fedns's parent credentials, the child's
//! token passed as Clusternet expects it (impersonating user `clusternet`
//! with extra `clusternet-token`); any other child directly, at the
//! Secret's URL with its token and CA. The hub proxies only children with
//! a tunnel (`pkg/hub/exchanger/exchanger.go` dials through the agent's
//! session), so with `--clusternet-through-hub` (fedns has no route to the
//! children) a child without one is reported unreachable by design.
//!
//! Readiness is the ManagedCluster's `Ready` condition, as Clusternet reads
//! it: the agent sets it from its probes (`(livez && readyz) || healthz`,
//! `pkg/controllers/clusters/clusterstatus`), the hub sets it `Unknown`
//! when the agent stops reporting (`pkg/controllers/clusters/clusterlifecycle`).

use crate::events::Recorder;
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};

use super::{
    each_translated, engine_member, lenient, ready_from_conditions, topology_from_labels, Inventory,
    InventoryCondition, MemberSource, Translated,
};
use crate::members::client::{secret_value, token_text, Connection};
use crate::members::credentials::ConnectError;

/// Clusternet's `ManagedCluster.spec` (the fields fedns reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "clusters.clusternet.io",
    version = "v1beta1",
    kind = "ManagedCluster",
    plural = "managedclusters",
    namespaced,
    status = "ManagedClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSpec {
    /// The child's UUID (the socket proxy's path names it).
    #[serde(default, rename = "clusterId", deserialize_with = "lenient")]
    pub cluster_id: String,
    /// `Push`, `Pull` or `Dual`.
    #[serde(default, deserialize_with = "lenient")]
    pub sync_mode: String,
}

/// Clusternet's `ManagedCluster.status` (the fields fedns reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterStatus {
    /// The child's API server as its agent advertises it.
    #[serde(default, rename = "apiserverURL", deserialize_with = "lenient")]
    pub apiserver_url: String,
    /// The child's `/readyz`, as its agent last saw it.
    #[serde(default, deserialize_with = "lenient")]
    pub readyz: bool,
    /// The child's `/livez`.
    #[serde(default, deserialize_with = "lenient")]
    pub livez: bool,
    /// The child's `/healthz` (deprecated upstream, kept for older agents).
    #[serde(default, deserialize_with = "lenient")]
    pub healthz: bool,
    /// The child is reached through the agent's websocket (hub socket proxy).
    #[serde(default, deserialize_with = "lenient")]
    pub use_socket: bool,
    /// Conditions: `Ready` (agent or hub), `ClusterInit`.
    #[serde(default, deserialize_with = "lenient")]
    pub conditions: Vec<InventoryCondition>,
}

/// The ManagedCluster's readiness condition (`clusterapi.ClusterReady`).
pub const READY_CONDITION: &str = "Ready";

/// The Secret clusternet-agent writes per child in the parent.
pub const CHILD_SECRET: &str = "child-cluster-deployer";
/// Its key holding the child's API server URL (`known.ClusterAPIServerURLKey`).
pub const URL_KEY: &str = "apiserver-advertise-url";
/// Label with the child's UUID on its objects in the parent.
pub const CLUSTER_ID_LABEL: &str = "clusters.clusternet.io/cluster-id";

/// Why a child without a tunnel is not a member with `--clusternet-through-hub`.
pub const NO_TUNNEL: &str = "unreachable by design: status.useSocket is false, so clusternet-hub has no tunnel to this child and does not proxy it; fedns would dial it directly (child-cluster-deployer's apiserver-advertise-url), which --clusternet-through-hub rules out";

/// The hub's socket proxy path for child `cluster_id`, after the parent's URL.
pub fn proxy_path(cluster_id: &str) -> String {
    format!("/apis/proxies.clusternet.io/v1alpha1/sockets/{cluster_id}/proxy/direct")
}

/// The parent cluster: ManagedClusters, `child-cluster-deployer` Secrets,
/// its client configuration (for the socket proxy) and an Event recorder.
#[derive(Clone)]
pub struct ClusternetInputs {
    /// `ManagedCluster` objects.
    pub clusters: Store<ManagedCluster>,
    /// `child-cluster-deployer` Secrets (keys `token`, `ca.crt`, `apiserver-advertise-url` kept).
    pub secrets: Store<Secret>,
    /// Client configuration of the parent's API server.
    pub config: kube::Config,
    /// fedns has no route to the children: only those with a tunnel
    /// (`useSocket`) are reached, through the hub; the others are reported.
    pub through_hub: bool,
    /// Events on ManagedClusters.
    pub recorder: Recorder,
}

impl Inventory for ClusternetInputs {
    fn source(&self) -> MemberSource {
        MemberSource::Clusternet
    }

    fn members(&self, namespace: &str) -> Vec<(Translated, Recorder, ObjectReference)> {
        each_translated(self.clusters.state(), &self.recorder, |c| translate(c, self, namespace))
    }
}

/// How a `ManagedCluster` becomes a member, named by the object: region and
/// zone from its labels `topology.kubernetes.io/region` and
/// `topology.kubernetes.io/zone` (clusternet-agent's `--cluster-labels`),
/// else the member's Nodes; the `Ready` condition seeds its state once
/// the agent or the hub has set it.
pub(crate) fn translate(cluster: &ManagedCluster, inputs: &ClusternetInputs, namespace: &str) -> Translated {
    let name = cluster.name_any();
    let (region, zones) = topology_from_labels(cluster.labels());
    let ready = cluster
        .status
        .as_ref()
        .and_then(|s| ready_from_conditions(&s.conditions, &[READY_CONDITION]));
    let connection = connection(cluster, inputs);
    let endpoint = match &connection {
        Ok(c) => c.api_endpoint.clone(),
        Err(_) => cluster
            .status
            .as_ref()
            .map(|s| s.apiserver_url.clone())
            .unwrap_or_default(),
    };
    Translated {
        member: engine_member(&name, namespace, "clusternet", &endpoint, region, zones, ready.as_ref()),
        connection: connection.map_err(ConnectError::from),
        engine_ready: ready,
    }
}

fn connection(cluster: &ManagedCluster, inputs: &ClusternetInputs) -> Result<Connection, String> {
    let use_socket = cluster.status.as_ref().is_some_and(|s| s.use_socket);
    if !use_socket && inputs.through_hub {
        return Err(NO_TUNNEL.to_owned());
    }
    let ns = cluster.namespace().unwrap_or_default();
    let secret = inputs
        .secrets
        .get(&ObjectRef::new(CHILD_SECRET).within(&ns))
        .ok_or_else(|| {
            format!("Secret {ns}/{CHILD_SECRET} (the child's credentials, written by clusternet-agent) not found")
        })?;
    let token = token_text(
        secret_value(&secret, "token").ok_or_else(|| format!("Secret {ns}/{CHILD_SECRET} has no key token"))?,
    )?;
    if use_socket {
        let id = cluster.spec.cluster_id.trim();
        if id.is_empty() {
            return Err("spec.clusterId is empty (the hub's socket proxy needs it)".into());
        }
        let mut config = inputs.config.clone();
        let url = format!(
            "{}{}",
            config.cluster_url.to_string().trim_end_matches('/'),
            proxy_path(id)
        );
        config.cluster_url = url
            .parse()
            .map_err(|e| format!("socket proxy URL {url:?} is not a URL: {e}"))?;
        config.auth_info.impersonate = Some("clusternet".into());
        config.auth_info.impersonate_user_extra =
            Some([("clusternet-token".to_owned(), vec![token])].into_iter().collect());
        return Ok(Connection {
            api_endpoint: url,
            through: Some(config),
            ..Connection::default()
        });
    }
    let url = secret_value(&secret, URL_KEY)
        .and_then(|u| String::from_utf8(u).ok())
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .or_else(|| {
            cluster
                .status
                .as_ref()
                .map(|s| s.apiserver_url.clone())
                .filter(|u| !u.is_empty())
        })
        .ok_or_else(|| format!("neither Secret {ns}/{CHILD_SECRET} key {URL_KEY} nor status.apiserverURL is set"))?;
    Ok(Connection {
        api_endpoint: url,
        ca_pem: secret_value(&secret, "ca.crt").filter(|c| !c.is_empty()),
        ca_origin: format!("Secret {ns}/{CHILD_SECRET} key ca.crt"),
        token: Some(token),
        ..Connection::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::sources::test_support::store;
    use crate::members::sources::{REGION_LABEL, ZONE_LABEL};
    use kube::runtime::events::Reporter;
    use serde_json::json;

    fn inputs(secret: serde_json::Value, through_hub: bool) -> ClusternetInputs {
        let parent = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        let client = kube::Client::try_from(parent.clone()).unwrap();
        ClusternetInputs {
            clusters: store(&[]),
            secrets: store(&[
                json!({"metadata": {"name": CHILD_SECRET, "namespace": "clusternet-abcde"},
                "stringData": secret}),
            ]),
            config: parent,
            through_hub,
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: "test".into(),
                    instance: None,
                },
            ),
        }
    }

    fn cluster(status: serde_json::Value) -> ManagedCluster {
        serde_json::from_value(json!({
            "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": {"name": "child1", "namespace": "clusternet-abcde",
                "labels": {CLUSTER_ID_LABEL: "5f1d", REGION_LABEL: "ap", ZONE_LABEL: "ap-1"}},
            "spec": {"clusterId": "5f1d", "syncMode": "Dual", "clusterType": "EdgeCluster"},
            "status": status,
        }))
        .unwrap()
    }

    /// The agent's `Ready` condition of a healthy child (`getCondition`).
    const AGENT_READY: fn() -> serde_json::Value = || {
        json!({"type": "Ready", "status": "True", "reason": "ManagedClusterReady",
            "message": "managed cluster is ready.", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };

    const SECRET: fn() -> serde_json::Value =
        || json!({"token": "tok", "ca.crt": "-----", URL_KEY: "https://127.0.0.1:7443"});

    #[tokio::test]
    async fn a_child_with_stored_credentials_is_reached_directly() {
        let c = cluster(
            json!({"readyz": true, "livez": true, "healthz": true, "apiserverURL": "https://10.0.0.9",
            "conditions": [AGENT_READY()]}),
        );
        let t = translate(&c, &inputs(SECRET(), false), "fedns-system");
        let connection = t.connection.unwrap();
        assert_eq!(
            connection.api_endpoint, "https://127.0.0.1:7443",
            "the Secret's URL first"
        );
        assert_eq!(connection.token.as_deref(), Some("tok"));
        assert_eq!(connection.ca_pem.as_deref(), Some(&b"-----"[..]));
        assert!(connection.through.is_none());
        assert_eq!(t.member.spec.region.as_deref(), Some("ap"));
        assert_eq!(t.member.spec.zones, vec!["ap-1"]);
        assert_eq!(t.engine_ready.unwrap().summary(), "True");
    }

    #[tokio::test]
    async fn a_socket_child_goes_through_the_hub_proxy_with_its_token() {
        let c = cluster(json!({"useSocket": true, "readyz": false, "livez": true}));
        for (c, through_hub) in [(c.clone(), false), (c, true)] {
            let t = translate(&c, &inputs(SECRET(), through_hub), "ns");
            let through = t.connection.unwrap().through.unwrap();
            assert_eq!(
                through.cluster_url.to_string(),
                "https://127.0.0.1:6443/apis/proxies.clusternet.io/v1alpha1/sockets/5f1d/proxy/direct"
            );
            assert_eq!(through.auth_info.impersonate.as_deref(), Some("clusternet"));
            assert_eq!(
                through.auth_info.impersonate_user_extra.unwrap()["clusternet-token"],
                vec!["tok".to_owned()]
            );
        }
    }

    /// A child without a tunnel, with `--clusternet-through-hub`: the hub
    /// would not proxy it (`pkg/hub/exchanger/exchanger.go` redials through
    /// the agent's session), so it is reported unreachable by design, not
    /// dialled through the hub to fail there.
    #[tokio::test]
    async fn a_child_without_a_tunnel_is_not_sent_through_the_hub() {
        let c = cluster(
            json!({"useSocket": false, "readyz": true, "livez": true, "healthz": true,
            "apiserverURL": "https://127.0.0.1:7443", "conditions": [AGENT_READY()]}),
        );
        let t = translate(&c, &inputs(SECRET(), true), "ns");
        assert_eq!(t.connection.unwrap_err().message, NO_TUNNEL);
        assert_eq!(t.member.spec.api_endpoint, "https://127.0.0.1:7443");
        let direct = translate(&c, &inputs(SECRET(), false), "ns").connection.unwrap();
        assert!(direct.through.is_none(), "without the flag: dialled directly");
    }

    /// Readiness is the `Ready` condition, as the agent and the hub write it
    /// (clusternet/clusternet 19245baa35587e3f5d8a02511915c85744b3d606:
    /// the agent's `getCondition` in
    /// `pkg/controllers/clusters/clusterstatus/clusterstatus_controller.go`,
    /// the hub's `generateClusterReadyCondition` and `updateClusterConditions`
    /// in `pkg/controllers/clusters/clusterlifecycle/clusterlifecycle_controller.go`,
    /// its test data in `clusterlifecycle_controller_test.go`).
    #[tokio::test]
    async fn readiness_is_the_ready_condition_as_clusternet_writes_it() {
        let ready = |status: serde_json::Value| {
            translate(&cluster(status), &inputs(SECRET(), false), "ns")
                .engine_ready
                .map(|r| r.summary())
        };
        // The agent: ready from healthz alone, `(livez && readyz) || healthz`.
        assert_eq!(
            ready(json!({"healthz": true, "livez": true, "readyz": false, "conditions": [AGENT_READY()]})).as_deref(),
            Some("True")
        );
        // The hub, the agent silent past the grace period: Unknown, the
        // probes it last posted still in the status until the hub writes.
        let stopped = json!({"type": "Ready", "status": "Unknown", "reason": "ClusterStatusUnknown",
            "message": "Clusternet agent stopped posting cluster status.",
            "lastTransitionTime": "2026-01-01T00:10:00Z"});
        let unknown = "Unknown (ClusterStatusUnknown): Clusternet agent stopped posting cluster status.";
        for probes in [json!(true), json!(false)] {
            assert_eq!(
                ready(json!({"healthz": probes, "livez": probes, "readyz": probes,
                    "lastObservedTime": "2026-01-01T00:00:00Z", "heartbeatFrequencySeconds": 60,
                    "conditions": [stopped.clone()]}))
                .as_deref(),
                Some(unknown)
            );
        }
        // The agent's own NotReady.
        assert_eq!(
            ready(
                json!({"healthz": false, "livez": true, "readyz": false, "conditions": [{"type": "Ready",
                "status": "False", "reason": "ManagedClusterNotReady", "message": "managed cluster is not ready.",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
            )
            .as_deref(),
            Some("False (ManagedClusterNotReady): managed cluster is not ready.")
        );
        // No condition yet (a new cluster): nothing seeded.
        assert_eq!(ready(json!({"readyz": true, "livez": true})), None);
    }

    #[test]
    fn ill_typed_fields_decode_to_defaults_not_an_error() {
        let c: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "clusters.clusternet.io/v1beta1", "kind": "ManagedCluster",
            "metadata": {"name": "odd", "namespace": "clusternet-odd"},
            "spec": {"clusterId": 1234, "syncMode": ["Push"]},
            "status": {"readyz": "yes", "useSocket": true, "apiserverURL": {"x": 1}},
        }))
        .unwrap();
        assert_eq!(c.spec.cluster_id, "1234", "a number is taken as its text");
        assert_eq!(c.spec.sync_mode, "");
        let status = c.status.unwrap();
        assert!(!status.readyz && status.use_socket);
        assert_eq!(status.apiserver_url, "");
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let err = |c: ManagedCluster, secret: serde_json::Value| {
            translate(&c, &inputs(secret, false), "ns")
                .connection
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(cluster(json!({})), json!({"ca.crt": "x"})),
            "Secret clusternet-abcde/child-cluster-deployer has no key token"
        );
        assert!(err(cluster(json!({})), json!({"token": "t"})).contains("nor status.apiserverURL is set"));
        let mut no_id = cluster(json!({"useSocket": true}));
        no_id.spec.cluster_id.clear();
        assert!(err(no_id, SECRET()).contains("spec.clusterId is empty"));
        let mut elsewhere = cluster(json!({}));
        elsewhere.metadata.namespace = Some("clusternet-other".into());
        assert!(err(elsewhere, SECRET()).contains("Secret clusternet-other/child-cluster-deployer"));
        let t = translate(&cluster(json!({})), &inputs(json!({"token": "t"}), false), "ns");
        assert!(t.connection.is_err());
        assert_eq!(t.member.metadata.name.as_deref(), Some("child1"));
    }
}
