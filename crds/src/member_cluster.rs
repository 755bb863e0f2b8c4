//! `MemberCluster` (`core.fedns.io/v1alpha1`): one cluster of the federation,
//! how to reach it, and its probed health.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{LABEL_PATTERN, MAX_LABEL_OCTETS};

/// Spec of a member cluster: where its API server is, how to authenticate,
/// where it sits (region/zones), and how to probe it.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "core.fedns.io",
    version = "v1alpha1",
    kind = "MemberCluster",
    namespaced,
    status = "MemberClusterStatus",
    derive = "PartialEq",
    shortname = "mc",
    category = "fedns",
    doc = "A member cluster of the federation: its API endpoint, credentials, location and health.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Region", type_ = "string", json_path = ".status.region"),
    printcolumn(name = "Zones", type_ = "string", json_path = ".status.zones"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.kubernetesVersion"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct MemberClusterSpec {
    /// URL of the member's API server, e.g. `https://10.0.0.1:6443`.
    #[schemars(schema_with = "crate::schema::api_endpoint")]
    pub api_endpoint: String,
    /// PEM CA bundle for the API server's certificate, base64-encoded.
    /// Absent: the system roots (or `insecureSkipTLSVerify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::base64")]
    pub ca_bundle: Option<String>,
    /// Skip TLS verification of the API server. For tests only.
    #[serde(default, rename = "insecureSkipTLSVerify")]
    pub insecure_skip_tls_verify: bool,
    /// Secret in this namespace holding key `token` (a bearer token) or key
    /// `kubeconfig` (a whole kubeconfig; its current context is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Region override. Absent: taken from the member's Node labels.
    /// Must be a DNS label, since it becomes one in region names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_LABEL_OCTETS), pattern(LABEL_PATTERN))]
    pub region: Option<String>,
    /// Zone overrides. Empty: taken from the member's Node labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = MAX_LABEL_OCTETS), pattern(LABEL_PATTERN)))]
    pub zones: Vec<String>,
    /// Drain this cluster from DNS on purpose (maintenance). Its status
    /// reads `Ready=False` with reason `Cordoned`.
    #[serde(default)]
    pub cordoned: bool,
    /// With `cordoned`: seconds over which the cluster's share of answers
    /// is lowered to nothing instead of dropping it at once. `Weighted`
    /// names: its weight falls in ten steps (90 %, 80 %, … 0 % of it, the
    /// other clusters' weights scaled by 10 meanwhile); other policies
    /// keep it whole until the time is up (caches holding its address
    /// age out meanwhile). Counted from the cordon (the `Ready=False`
    /// `Cordoned` condition's transition time). 0 (default): at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0, max = 86400))]
    pub drain_seconds: i32,
    /// How the controller probes the member's API server.
    #[serde(default)]
    pub health_check: HealthCheck,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Reference to a Secret in the MemberCluster's own namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct SecretReference {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// Probe settings, in the shape of a Kubernetes container probe.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// Seconds between probes.
    #[serde(default = "HealthCheck::default_period_seconds")]
    #[schemars(range(min = 1, max = 3600))]
    pub period_seconds: i32,
    /// Seconds before one probe counts as failed.
    #[serde(default = "HealthCheck::default_timeout_seconds")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: i32,
    /// Consecutive failed probes that make a Ready cluster not Ready.
    #[serde(default = "HealthCheck::default_failure_threshold")]
    #[schemars(range(min = 1, max = 1000))]
    pub failure_threshold: i32,
    /// Consecutive successful probes that make a not-Ready cluster Ready.
    #[serde(default = "HealthCheck::default_success_threshold")]
    #[schemars(range(min = 1, max = 1000))]
    pub success_threshold: i32,
}

impl HealthCheck {
    fn default_period_seconds() -> i32 {
        1
    }
    fn default_timeout_seconds() -> i32 {
        1
    }
    fn default_failure_threshold() -> i32 {
        3
    }
    fn default_success_threshold() -> i32 {
        2
    }
}

impl Default for HealthCheck {
    fn default() -> Self {
        HealthCheck {
            period_seconds: Self::default_period_seconds(),
            timeout_seconds: Self::default_timeout_seconds(),
            failure_threshold: Self::default_failure_threshold(),
            success_threshold: Self::default_success_threshold(),
        }
    }
}

/// Observed state of a member cluster, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberClusterStatus {
    /// `Ready` with reasons `ClusterReady`, `ClusterNotReachable`,
    /// `ClusterNotReady`, `Cordoned` or `AuthFailed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Effective region: spec override, else Node label
    /// `topology.kubernetes.io/region`, else `failure-domain.beta.kubernetes.io/region`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Effective zones, found the same way as `region`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// `gitVersion` from the member's `/version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// When the last probe finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
