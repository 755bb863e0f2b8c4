//! Traffic policies of a record's global name (`spec.routing` of
//! ServiceDNSRecord and IngressDNSRecord) and where clients are (the
//! Domain's `spec.clientRegions` and `spec.geoRegions`).
//!
//! In the DNSEndpoint a policy is written in external-dns's vocabulary
//! (`setIdentifier` per cluster, `providerSpecific` `aws/weight`,
//! `aws/failover`, `aws/region`); the property names are here so the
//! controller, the embedded sink and the route53 provider agree.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::CIDR_PATTERN;

/// The largest weight: Route53's (`ResourceRecordSet.Weight` 0..255).
pub const MAX_WEIGHT: i64 = 255;

/// external-dns's Route53 property: relative weight of a weighted record set.
pub const AWS_WEIGHT: &str = "aws/weight";
/// external-dns's Route53 property: `PRIMARY` or `SECONDARY` failover record set.
pub const AWS_FAILOVER: &str = "aws/failover";
/// external-dns's Route53 property: AWS region of a latency record set.
pub const AWS_REGION: &str = "aws/region";
/// external-dns's Route53 property: continent code of a geolocation record set.
pub const AWS_GEO_CONTINENT: &str = "aws/geolocation-continent-code";
/// external-dns's Route53 property: country code of a geolocation record set.
pub const AWS_GEO_COUNTRY: &str = "aws/geolocation-country-code";
/// fedns property (external-dns has none): `Nearest` — the cluster's
/// region (empty: the cluster has none). Its presence marks the policy.
pub const FEDNS_NEAREST_REGION: &str = "fedns/nearest-region";
/// fedns property: `Nearest` — `spec.routing.fallback`, comma-separated.
pub const FEDNS_NEAREST_FALLBACK: &str = "fedns/nearest-fallback";

/// How the global name answers among the healthy clusters.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub enum RoutingPolicy {
    /// Every healthy cluster's addresses in every answer (kubefed's model).
    #[default]
    All,
    /// One cluster per answer, chosen with probability weight/Σ weights.
    Weighted,
    /// The first priority group that has a healthy cluster.
    Failover,
    /// The clusters of the client's region, else along `fallback`, else all.
    Nearest,
}

impl RoutingPolicy {
    /// The name as written in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingPolicy::All => "All",
            RoutingPolicy::Weighted => "Weighted",
            RoutingPolicy::Failover => "Failover",
            RoutingPolicy::Nearest => "Nearest",
        }
    }
}

/// `spec.routing`: the traffic policy of the global name. Region and zone
/// names are not affected; health (and fail-open) apply first.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.weights) || size(self.weights) == 0 || self.policy == 'Weighted'", "message": "weights apply to policy Weighted only"},
    {"rule": "!has(self.priorities) || size(self.priorities) == 0 || self.policy == 'Failover'", "message": "priorities apply to policy Failover only"},
    {"rule": "self.policy != 'Failover' || (has(self.priorities) && size(self.priorities) > 0)", "message": "policy Failover needs priorities"},
    {"rule": "!has(self.fallback) || size(self.fallback) == 0 || self.policy == 'Nearest'", "message": "fallback applies to policy Nearest only"}
]))]
pub struct Routing {
    /// `All` (default), `Weighted`, `Failover` or `Nearest`.
    #[serde(default)]
    pub policy: RoutingPolicy,
    /// `Weighted`: cluster or region name → weight 0..255 (a cluster's own
    /// entry wins over its region's). Clusters without an entry get 0:
    /// standby, answered only when no cluster with weight is healthy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "weights_schema")]
    pub weights: BTreeMap<String, i64>,
    /// `Failover`: groups of region or cluster names, highest priority
    /// first; the first group with a healthy cluster is answered. Clusters
    /// in no group form a last, implicit group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 64), inner(length(min = 1, max = 63))))]
    pub priorities: Vec<Vec<String>>,
    /// `Nearest`: regions tried in order when the client's region has no
    /// healthy cluster (or the client is in no known region).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 63)))]
    pub fallback: Vec<String>,
}

fn weights_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({
        "type": "object",
        "maxProperties": 256,
        "additionalProperties": { "type": "integer", "format": "int64", "minimum": 0, "maximum": MAX_WEIGHT },
    })
}

/// One row of the Domain's client table: clients in `cidr` are in `region`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientRegion {
    /// Client network in CIDR notation (`198.51.100.0/24`, `2001:db8::/32`).
    #[schemars(length(min = 3, max = 49), pattern(CIDR_PATTERN))]
    pub cidr: String,
    /// The region (as in MemberCluster `status.region`).
    #[schemars(length(min = 1, max = 63))]
    pub region: String,
}

/// GeoIP codes placed in one region (the `--geoip-db` database's
/// `country.iso_code` and `continent.code`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeoRegion {
    /// The region.
    #[schemars(length(min = 1, max = 63))]
    pub region: String,
    /// ISO 3166-1 alpha-2 country codes, e.g. `DE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^[A-Z]{2}$")))]
    pub countries: Vec<String>,
    /// Continent codes: `AF`, `AN`, `AS`, `EU`, `NA`, `OC`, `SA`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^(AF|AN|AS|EU|NA|OC|SA)$")))]
    pub continents: Vec<String>,
}
