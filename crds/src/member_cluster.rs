//! `MemberCluster` (`core.fedns.io/v1alpha1`): one cluster of the federation,
//! how to reach it, and its probed health.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{LABEL_PATTERN, MAX_LABEL_OCTETS, MAX_NAME_OCTETS, OWNER_NAME_PATTERN};

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
    /// What of this member may make records in the host under
    /// `--auto-records`: its annotated Gateway API routes and MCS
    /// ServiceExports, from these namespaces, publishing these names.
    /// Absent: nothing of this member makes a record (templates in the
    /// host and in an engine's control plane need no allowance). For a
    /// member from an engine or inventory (`--member-source`), a
    /// MemberCluster of the member's name in the controller's namespace
    /// holds its allowance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_records: Option<AutoRecordsAllowance>,
}

/// Which of a member's annotated objects may make records in the host
/// (`spec.autoRecords` of a [`MemberCluster`]). A record is made only when
/// its namespace is listed and every name it would publish is inside
/// `hostnames`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoRecordsAllowance {
    /// Namespaces of the member whose annotated routes and ServiceExports
    /// may make records (in the namespace of the same name in the host).
    /// Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    #[schemars(inner(length(min = 1, max = MAX_LABEL_OCTETS), pattern(LABEL_PATTERN)))]
    pub namespaces: Vec<String>,
    /// Host names those records may publish (a route's hostnames, its
    /// `multiclusterdns.fedns.io/hosts` annotation, a ServiceExport's
    /// `dns-prefix` name): `www.example.com` is that name and every name
    /// below it; `*.apps.example.com` every name below `apps.example.com`
    /// (its wildcard included), not `apps.example.com` itself. Empty: no
    /// such name (a ServiceExport without `dns-prefix` needs none: its
    /// service names are its namespace's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    #[schemars(inner(length(min = 1, max = MAX_NAME_OCTETS), pattern(OWNER_NAME_PATTERN)))]
    pub hostnames: Vec<String>,
}

impl AutoRecordsAllowance {
    /// Whether `namespace` is one of [`AutoRecordsAllowance::namespaces`].
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
    }

    /// Whether `hostname` (a host name, or a wildcard `*.suffix` standing
    /// for every name below `suffix`) lies inside one of
    /// [`AutoRecordsAllowance::hostnames`]. Case and a trailing dot are
    /// ignored.
    pub fn allows_hostname(&self, hostname: &str) -> bool {
        self.hostnames.iter().any(|pattern| hostname_covers(pattern, hostname))
    }
}

/// Whether host-name pattern `pattern` (`www.example.com`: that name and
/// every name below; `*.apps.example.com`: every name below
/// `apps.example.com`) covers `hostname`, itself a name or a wildcard
/// (`*.example.com`: every name below `example.com`). Case and a trailing
/// dot are ignored; an empty pattern or name covers nothing.
pub fn hostname_covers(pattern: &str, hostname: &str) -> bool {
    let normal = |n: &str| n.trim().trim_end_matches('.').to_ascii_lowercase();
    let (pattern, hostname) = (normal(pattern), normal(hostname));
    // (the name, whether only the names strictly below it are meant)
    let split = |n: &str| match n.strip_prefix("*.") {
        Some(suffix) => (suffix.to_owned(), true),
        None => (n.to_owned(), false),
    };
    let ((base, below_only), (name, name_below_only)) = (split(&pattern), split(&hostname));
    if base.is_empty() || name.is_empty() || base == "*" || name == "*" {
        return false;
    }
    if name == base {
        return !below_only || name_below_only;
    }
    crate::names::is_subdomain(&name, &base)
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
    /// `ClusterNotReady`, `Cordoned` or `AuthFailed`; `TopologyKnown`;
    /// `AutoRecordsRefused` (`True`, reason `NotAllowed`: how many of the
    /// member's annotated objects `spec.autoRecords` does not allow, and
    /// the first of them).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_covers_its_name_and_below_a_wildcard_pattern_only_below() {
        let cases = [
            ("www.example.com", "www.example.com", true),
            ("www.example.com", "WWW.Example.com.", true),
            ("www.example.com", "a.www.example.com", true),
            ("www.example.com", "*.www.example.com", true),
            ("www.example.com", "example.com", false),
            ("www.example.com", "*.example.com", false),
            ("www.example.com", "xwww.example.com", false),
            ("*.apps.example.com", "apps.example.com", false),
            ("*.apps.example.com", "a.apps.example.com", true),
            ("*.apps.example.com", "*.apps.example.com", true),
            ("*.apps.example.com", "*.a.apps.example.com", true),
            ("*.apps.example.com", "*.example.com", false),
            ("example.com", "*.example.com", true),
            ("", "example.com", false),
            ("example.com", "", false),
            ("example.com", "*.", false),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(hostname_covers(pattern, name), want, "{pattern} covers {name}");
        }
        let allowance = AutoRecordsAllowance {
            namespaces: vec!["team-a".into()],
            hostnames: vec!["www.example.com".into(), "*.apps.example.com".into()],
        };
        assert!(allowance.allows_namespace("team-a") && !allowance.allows_namespace("mallory"));
        assert!(allowance.allows_hostname("x.apps.example.com") && !allowance.allows_hostname("example.com"));
        assert!(!AutoRecordsAllowance::default().allows_hostname("www.example.com"));
    }
}
