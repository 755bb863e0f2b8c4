//! Data-plane health of a record's load balancers (`spec.healthCheck`) and
//! what to serve when health would empty a name (`spec.whenAllUnhealthy`),
//! shared by ServiceDNSRecord and IngressDNSRecord.
//!
//! Modelled on Route53 health checks (protocol, port, path, interval,
//! failure threshold; "when every record of a set is unhealthy, answer as if
//! all were healthy") with Kubernetes probe names (`periodSeconds`,
//! `timeoutSeconds`, `failureThreshold`, `successThreshold`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{HOSTNAME_PATTERN, MAX_NAME_OCTETS};

/// One HTTP status or an inclusive range, `200` or `200-399`.
pub const STATUS_RANGE_PATTERN: &str = r"^[1-5][0-9][0-9](-[1-5][0-9][0-9])?$";

/// How the controller probes every published load balancer address.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.caCertificateRef) || self.protocol == 'HTTPS'", "message": "caCertificateRef applies to protocol HTTPS only"},
    {"rule": "!has(self.caCertificateRef) || !has(self.insecureSkipTlsVerify) || !self.insecureSkipTlsVerify", "message": "caCertificateRef and insecureSkipTlsVerify exclude each other"}
]))]
pub struct DataPlaneCheck {
    /// `TCP` (connect), `HTTP` or `HTTPS` (a GET answered with an expected status).
    pub protocol: ProbeProtocol,
    /// Port to probe. Default: the Service's first port (ServiceDNSRecord),
    /// 80 for HTTP and TCP, 443 for HTTPS (IngressDNSRecord).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// HTTP path (HTTP/HTTPS).
    #[serde(default = "default_path")]
    #[schemars(length(min = 1, max = 2048), pattern(r"^/"))]
    pub path: String,
    /// Host header (HTTP/HTTPS), and TLS SNI unless `serverName` is set.
    /// Default: the record's global name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub host: Option<String>,
    /// HTTPS: the TLS server name sent (SNI) and the name the certificate
    /// is checked against, when it differs from `host` (Route53's SNI
    /// setting, separate from its host name). Default: `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub server_name: Option<String>,
    /// HTTP/HTTPS: a string the first 5,120 octets of the answer's body
    /// must contain, besides a passing status (Route53's `SearchString`,
    /// which it looks for in the same 5,120 bytes; at most 255
    /// characters, as there). A body cut short (closed or timed out
    /// before 5,120 octets or its end) is searched as far as it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub expected_body: Option<String>,
    /// HTTP/HTTPS: request headers sent with each probe (a token a
    /// health endpoint wants, a tenant header), at most 16. `Host` is set
    /// by `host`, `User-Agent` is `fedns-health-check`; neither may be
    /// given here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub headers: Vec<ProbeHeader>,
    /// Statuses that pass: each `NNN` or `NNN-NNN` (100..599). Default `200-399`.
    #[serde(default = "default_statuses")]
    #[schemars(length(min = 1), inner(pattern(STATUS_RANGE_PATTERN)))]
    pub expected_statuses: Vec<String>,
    /// Seconds between two probes of one address.
    #[serde(default = "default_period")]
    #[schemars(range(min = 1, max = 3600))]
    pub period_seconds: i32,
    /// Seconds a probe may take (connect, TLS and answer together).
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 60))]
    pub timeout_seconds: i32,
    /// Consecutive failures that take a passing address out.
    #[serde(default = "default_failure_threshold")]
    #[schemars(range(min = 1, max = 100))]
    pub failure_threshold: i32,
    /// Consecutive successes that bring a failed address back.
    #[serde(default = "default_success_threshold")]
    #[schemars(range(min = 1, max = 100))]
    pub success_threshold: i32,
    /// HTTPS: accept any certificate (self-signed, another name).
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
    /// HTTPS: trust only the CA certificates (PEM) in this ConfigMap or
    /// Secret of the record's namespace instead of the system's roots
    /// (a private CA in front of the load balancers; Akamai liveness
    /// tests' custom CA, Gateway API BackendTLSPolicy's
    /// `caCertificateRefs`). Read at every reconcile, so a rotated bundle
    /// is used from the next resync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate_ref: Option<CaCertificateRef>,
    /// Seconds an address's probes must have said Down, without a break,
    /// before it leaves the answers (Akamai GTM's `failover_delay`).
    /// 0 (default): as soon as `failureThreshold` probes failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0, max = 3600))]
    pub failover_delay_seconds: i32,
    /// Seconds a Down address's probes must have said Up again, without a
    /// break, before it returns to the answers (Akamai GTM's
    /// `failback_delay`): an address that flaps every few seconds then stays
    /// out instead of making the answers flap. 0 (default): as soon as
    /// `successThreshold` probes passed.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0, max = 3600))]
    pub failback_delay_seconds: i32,
    /// How many vantage points (the controller and each `fedns agent` in a
    /// member that reported within 2 × `periodSeconds`) must see an
    /// address Down for it to be Down: `Majority` (default), `Unanimous`
    /// (Down only when every one sees it down: the most conservative),
    /// `AnyOne` (Down as soon as one does: the most eager), or a number
    /// 1..=100 (at least that many; all of them when fewer report). The
    /// older spellings `Any` (= `Unanimous`) and `All` (= `AnyOne`) are
    /// still read. Anything else is refused at admission.
    /// Whatever this says, one agent alone never takes an address out: a
    /// Down needs the controller's own probes to agree or a second vantage
    /// point. Without agents the controller alone decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quorum")]
    pub quorum: Option<Quorum>,
}

/// Where a probe's CA bundle is (`healthCheck.caCertificateRef`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaCertificateRef {
    /// `ConfigMap` (default) or `Secret`.
    #[serde(default)]
    pub kind: CaCertificateKind,
    /// Its name, in the record's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key holding the PEM bundle (default `ca.crt`, as in
    /// kube-root-ca.crt ConfigMaps and TLS Secrets).
    #[serde(default = "default_ca_key")]
    #[schemars(length(min = 1, max = 253), pattern(r"^[-._a-zA-Z0-9]+$"))]
    pub key: String,
}

fn default_ca_key() -> String {
    "ca.crt".into()
}

/// The kind of object a CA bundle is read from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CaCertificateKind {
    /// A ConfigMap (`data`; fedns may read ConfigMaps in every namespace).
    #[default]
    ConfigMap,
    /// A Secret (`data`, base64): fedns needs `get` on Secrets in that
    /// namespace, which its manifests do not grant (a Role the operator adds).
    Secret,
}

/// One request header of a probe.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!(self.name.lowerAscii() in ['host', 'user-agent', 'content-length', 'transfer-encoding', 'connection'])", "message": "Host comes from healthCheck.host; User-Agent, Content-Length, Transfer-Encoding and Connection are the prober's"}
]))]
pub struct ProbeHeader {
    /// Header name (an RFC 9110 token).
    #[schemars(length(min = 1, max = 128), pattern(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub name: String,
    /// Value (visible ASCII and spaces; no line breaks).
    #[schemars(length(max = 1024), pattern(r"^[\x20-\x7E]*$"))]
    pub value: String,
}

/// `spec.minHealthy`: how much of a cluster must be up for it to count
/// for the record at all (Cloudflare's `minimum_origins`, Akamai GTM's
/// "minimum live servers"); below it the cluster is down for this
/// record, as if its probes failed (fail-open and `fallback` then apply
/// as for any cluster health removed).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MinHealthy {
    /// Of the cluster's load balancer addresses (IPs, and the addresses
    /// its host names resolve to), how many must pass their probes: a
    /// count or a percentage. Needs `healthCheck` (without it every
    /// address counts as passing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::threshold")]
    pub addresses: Option<Threshold>,
    /// Of the endpoints in the EndpointSlices of the Service (a
    /// ServiceDNSRecord's) or of the ingress controller's Service (an
    /// IngressDNSRecord's: the LoadBalancer Service showing the Ingress's
    /// address), how many must be ready: a count or a percentage. A
    /// cluster where 1 of 10 replicas is left then stops taking a full
    /// share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::threshold")]
    pub endpoints: Option<Threshold>,
}

/// A minimum: a count, or a percentage of a total (rounded up: 50 % of
/// 3 is 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Threshold {
    /// At least this many (1..=10000).
    Count(u32),
    /// At least this percentage (1..=100) of the total.
    Percent(u8),
}

impl Threshold {
    /// How many of `total` are needed.
    pub fn required(self, total: u32) -> u32 {
        match self {
            Threshold::Count(n) => n,
            Threshold::Percent(p) => (u64::from(total) * u64::from(p)).div_ceil(100) as u32,
        }
    }

    /// Whether `healthy` of `total` meet it.
    pub fn met(self, healthy: u32, total: u32) -> bool {
        healthy >= self.required(total)
    }
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Threshold::Count(n) => write!(f, "{n}"),
            Threshold::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for Threshold {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Threshold::Count(n) => serializer.serialize_u32(*n),
            Threshold::Percent(_) => serializer.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        let refuse =
            |what: String| serde::de::Error::custom(format!("minimum {what} is not 1..10000 or \"1%\"..\"100%\""));
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => u32::try_from(n)
                .ok()
                .filter(|n| (1..=10_000).contains(n))
                .map(Threshold::Count)
                .ok_or_else(|| refuse(n.to_string())),
            Raw::Text(text) => text
                .strip_suffix('%')
                .and_then(|p| p.parse::<u8>().ok())
                .filter(|p| (1..=100).contains(p))
                .map(Threshold::Percent)
                .ok_or_else(|| refuse(format!("{text:?}"))),
        }
    }
}

/// `spec.healthCheck.quorum` (see [`DataPlaneCheck::quorum`]). Written as
/// a string (`Majority`, `Unanimous`, `AnyOne`) or an integer, as
/// Kubernetes' int-or-string fields are. The spellings before the rename,
/// `Any` (read as `Unanimous`) and `All` (read as `AnyOne`), are still
/// accepted; they are written back with the new names.
///
/// [`Quorum::is_down`] is the count alone. The data plane adds one rule
/// on top, whatever the quorum: an agent alone never takes an address
/// out; a Down needs a second vantage point or the controller's own
/// probes agreeing (`fedns_controller::dataplane::vantage::decide`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quorum {
    /// More than half of the vantage points counted.
    #[default]
    Majority,
    /// Every vantage point counted: out only when all see it down (the
    /// most conservative; formerly spelled `Any`).
    Unanimous,
    /// One vantage point: out when any one sees it down (the most eager;
    /// formerly spelled `All`).
    AnyOne,
    /// At least this many (1..=100), or all counted when fewer are.
    AtLeast(u32),
}

impl Quorum {
    /// Whether `down` Down votes of `counted` vantage points make an
    /// address Down. No vantage point counted: not Down (nothing says so).
    pub fn is_down(self, down: usize, counted: usize) -> bool {
        if counted == 0 || down == 0 {
            return false;
        }
        match self {
            Quorum::Majority => down * 2 > counted,
            Quorum::Unanimous => down == counted,
            Quorum::AnyOne => true,
            Quorum::AtLeast(n) => down >= (n as usize).min(counted),
        }
    }
}

impl std::fmt::Display for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Quorum::Majority => f.write_str("Majority"),
            Quorum::Unanimous => f.write_str("Unanimous"),
            Quorum::AnyOne => f.write_str("AnyOne"),
            Quorum::AtLeast(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Quorum {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Quorum::AtLeast(n) => serializer.serialize_u32(*n),
            named => serializer.serialize_str(&named.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Quorum {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        let count = |n: i64| {
            u32::try_from(n)
                .ok()
                .filter(|n| (1..=100).contains(n))
                .map(Quorum::AtLeast)
                .ok_or_else(|| serde::de::Error::custom(format!("quorum {n} is not 1..100")))
        };
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => count(n),
            Raw::Text(text) => match text.as_str() {
                "Majority" => Ok(Quorum::Majority),
                // `Any` and `All`: the spellings before the rename (they
                // read backwards: `Any` needed every vantage point).
                "Unanimous" | "Any" => Ok(Quorum::Unanimous),
                "AnyOne" | "All" => Ok(Quorum::AnyOne),
                other => match other.parse::<i64>() {
                    Ok(n) => count(n),
                    Err(_) => Err(serde::de::Error::custom(format!(
                        "quorum {other:?} is not Majority, Unanimous, AnyOne or a number"
                    ))),
                },
            },
        }
    }
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Probe protocol.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
pub enum ProbeProtocol {
    /// A TCP connect.
    #[serde(rename = "TCP")]
    Tcp,
    /// An HTTP GET.
    #[serde(rename = "HTTP")]
    Http,
    /// An HTTPS GET (certificate checked against `host` unless skipped).
    #[serde(rename = "HTTPS")]
    Https,
}

/// `spec.fallbackTarget`: what answers when no cluster counts healthy (by
/// health, `minHealthy`, endpoints or backends), before fail-open
/// (Cloudflare Load Balancing's `fallback_pool`). Exactly one of the two.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "(has(self.clusters) && size(self.clusters) > 0) != has(self.cname)", "message": "fallbackTarget takes clusters or cname, exactly one"}
]))]
pub struct FallbackTarget {
    /// Clusters answered then whatever their probes and `minHealthy` say
    /// (a standby pool, a cluster serving a maintenance page); each must
    /// still have the Service or Ingress with a load balancer address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 253)))]
    pub clusters: Vec<String>,
    /// A name outside the federation the record's names then point to
    /// (CNAME), e.g. a static site or another provider's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub cname: Option<String>,
}

/// What a record serves when health alone would remove every cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum WhenAllUnhealthy {
    /// Keep serving the last-known addresses of every cluster (fail open,
    /// as Route53 does when every record of a set is unhealthy).
    #[default]
    ServeLastKnown,
    /// Serve nothing: the global name loses its addresses.
    ServeNone,
}

/// The probe state of one load balancer address.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddressHealth {
    /// Member cluster.
    pub cluster: String,
    /// The probed address (an IP, or an IP resolved from a load balancer host name).
    pub address: String,
    /// `Up`, `Down` or `Unknown` (not probed yet).
    pub state: String,
    /// Since when (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The last failure, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// What the probes say now when it differs from `state` and waits for
    /// `failoverDelaySeconds` or `failbackDelaySeconds` to take effect
    /// (`Up` or `Down`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_state: Option<String>,
    /// Since when the probes say `pendingState` (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_since: Option<String>,
    /// When `pendingState` takes effect if the probes keep saying it
    /// (RFC 3339; at the first probe from then on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_effective_at: Option<String>,
    /// What each vantage point says of the address (the controller, then
    /// each member's `fedns agent`), when agents report; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vantage_points: Vec<VantagePointHealth>,
    /// The quorum's decision when agents report, e.g. `Majority: 1 of 3
    /// vantage points counted say Down`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<String>,
}

/// One vantage point's view of one load balancer address.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VantagePointHealth {
    /// `controller`, or the member cluster whose agent this is.
    pub name: String,
    /// `Up`, `Down` or `Unknown`, after the thresholds.
    pub state: String,
    /// Since when (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Its last failure, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Whether its view counts: `counted`, `silent ...` (no report within
    /// 2 × periodSeconds), `impaired ...` (it sees every address down),
    /// `not probed yet`.
    pub standing: String,
}

fn default_path() -> String {
    "/".into()
}
fn default_statuses() -> Vec<String> {
    vec!["200-399".into()]
}
fn default_period() -> i32 {
    5
}
fn default_timeout() -> i32 {
    2
}
fn default_failure_threshold() -> i32 {
    3
}
fn default_success_threshold() -> i32 {
    2
}

impl DataPlaneCheck {
    /// The accepted statuses as inclusive ranges.
    ///
    /// # Errors
    /// A value the schema cannot check: a range whose end is below its start.
    pub fn status_ranges(&self) -> Result<Vec<(u16, u16)>, String> {
        self.expected_statuses
            .iter()
            .map(|value| {
                let parse = |s: &str| {
                    s.trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|n| (100..=599).contains(n))
                        .ok_or_else(|| {
                            format!("healthCheck.expectedStatuses: {value:?} is not NNN or NNN-NNN (100..599)")
                        })
                };
                let (low, high) = match value.split_once('-') {
                    Some((low, high)) => (parse(low)?, parse(high)?),
                    None => {
                        let n = parse(value)?;
                        (n, n)
                    }
                };
                if high < low {
                    return Err(format!("healthCheck.expectedStatuses: {value:?} ends before it starts"));
                }
                Ok((low, high))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(statuses: &[&str]) -> DataPlaneCheck {
        serde_json::from_value(serde_json::json!({"protocol": "HTTP", "expectedStatuses": statuses})).unwrap()
    }

    #[test]
    fn defaults_and_status_ranges() {
        let c: DataPlaneCheck = serde_json::from_value(serde_json::json!({"protocol": "TCP"})).unwrap();
        assert_eq!(
            (
                c.period_seconds,
                c.timeout_seconds,
                c.failure_threshold,
                c.success_threshold
            ),
            (5, 2, 3, 2)
        );
        assert_eq!(c.path, "/");
        assert_eq!((c.failover_delay_seconds, c.failback_delay_seconds), (0, 0));
        assert!(!serde_json::to_string(&c).unwrap().contains("DelaySeconds"));
        assert_eq!(c.status_ranges().unwrap(), [(200, 399)]);
        assert_eq!(c.quorum, None);
        assert_eq!(
            check(&["204", "300-302"]).status_ranges().unwrap(),
            [(204, 204), (300, 302)]
        );
        assert!(check(&["399-200"]).status_ranges().unwrap_err().contains("ends before"));
    }
}

#[cfg(test)]
mod threshold_tests {
    use super::*;

    #[test]
    fn thresholds_read_counts_and_percentages_and_round_up() -> Result<(), serde_json::Error> {
        let read = |v: serde_json::Value| serde_json::from_value::<Threshold>(v);
        assert_eq!(read(serde_json::json!(2))?, Threshold::Count(2));
        assert_eq!(read(serde_json::json!("50%"))?, Threshold::Percent(50));
        for bad in [
            serde_json::json!(0),
            serde_json::json!("0%"),
            serde_json::json!("101%"),
            serde_json::json!("2"),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(serde_json::to_value(Threshold::Percent(30))?, serde_json::json!("30%"));
        assert_eq!(Threshold::Percent(50).required(3), 2);
        assert_eq!(Threshold::Percent(10).required(10), 1);
        assert!(!Threshold::Percent(30).met(1, 10) && Threshold::Percent(30).met(3, 10));
        assert!(!Threshold::Count(2).met(1, 1) && Threshold::Count(2).met(2, 5));
        Ok(())
    }
}

#[cfg(test)]
mod quorum_tests {
    use super::*;

    #[test]
    fn quorum_reads_names_and_numbers_and_decides() -> Result<(), serde_json::Error> {
        let read = |v: serde_json::Value| serde_json::from_value::<Quorum>(v);
        assert_eq!(read(serde_json::json!("Majority"))?, Quorum::Majority);
        assert_eq!(read(serde_json::json!("Unanimous"))?, Quorum::Unanimous);
        assert_eq!(read(serde_json::json!("AnyOne"))?, Quorum::AnyOne);
        // The spellings before the rename are aliases, written back new.
        assert_eq!(read(serde_json::json!("Any"))?, Quorum::Unanimous);
        assert_eq!(read(serde_json::json!("All"))?, Quorum::AnyOne);
        assert_eq!(serde_json::to_value(Quorum::AnyOne)?, serde_json::json!("AnyOne"));
        assert_eq!(read(serde_json::json!(2))?, Quorum::AtLeast(2));
        assert_eq!(read(serde_json::json!("2"))?, Quorum::AtLeast(2));
        let error = |v| read(v).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error(serde_json::json!(0)).contains("1..100"));
        assert!(error(serde_json::json!("Most")).contains("Majority"));
        assert_eq!(serde_json::to_value(Quorum::AtLeast(3))?, serde_json::json!(3));
        assert_eq!(serde_json::to_value(Quorum::Unanimous)?, serde_json::json!("Unanimous"));
        // Three vantage points.
        assert!(!Quorum::Majority.is_down(1, 3) && Quorum::Majority.is_down(2, 3));
        assert!(!Quorum::Unanimous.is_down(2, 3) && Quorum::Unanimous.is_down(3, 3));
        assert!(Quorum::AnyOne.is_down(1, 3) && !Quorum::AnyOne.is_down(0, 3));
        assert!(!Quorum::AtLeast(2).is_down(1, 3) && Quorum::AtLeast(2).is_down(2, 3));
        // Fewer counted than the number asks: all of them.
        assert!(Quorum::AtLeast(5).is_down(2, 2));
        // One vantage point (no agent): today's behaviour under every quorum.
        for quorum in [Quorum::Majority, Quorum::Unanimous, Quorum::AnyOne, Quorum::AtLeast(2)] {
            assert!(quorum.is_down(1, 1) && !quorum.is_down(0, 1));
        }
        Ok(())
    }
}
