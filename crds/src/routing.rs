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

/// fedns property (external-dns has none): `Weighted` answers sticky per
/// client subnet; the value is the IPv4 and IPv6 prefix lengths,
/// `24,56`. Its presence marks stickiness.
pub const FEDNS_STICKY_CLIENT_SUBNET: &str = "fedns/sticky-client-subnet";

/// fedns property (external-dns has none): at most this many addresses per
/// family in one answer (`spec.routing.maxAnswers`), on every endpoint of
/// the global name, routed or not.
pub const FEDNS_MAX_ANSWERS: &str = "fedns/max-answers";

/// The largest `maxAnswers` (a UDP answer of 64 A records is 1,050
/// octets with the question: still under the 1,232-octet EDNS size).
pub const MAX_ANSWERS_LIMIT: i64 = 64;

/// Default IPv4 prefix of a sticky client subnet (resolvers' usual ECS /24).
pub const DEFAULT_STICKY_IPV4_PREFIX: i64 = 24;
/// Default IPv6 prefix of a sticky client subnet (/56, a typical site).
pub const DEFAULT_STICKY_IPV6_PREFIX: i64 = 56;

/// Whether a client keeps its cluster from one query to the next.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum Stickiness {
    /// Each query is drawn afresh (Route53's weighted semantics).
    #[default]
    None,
    /// The client's subnet (the ECS address, else the query's source,
    /// cut to `clientSubnetPrefix`) picks the cluster by weighted
    /// rendezvous hashing: shares still follow the weights, a failed
    /// cluster's subnets move and only they, and they return with it.
    ClientSubnet,
}

/// The prefix lengths that make a client subnet for `stickiness:
/// ClientSubnet` (also the answer's RFC 7871 SCOPE PREFIX-LENGTH).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSubnetPrefix {
    /// IPv4 prefix length, 8..32 (default 24).
    #[serde(default = "default_ipv4_prefix")]
    #[schemars(range(min = 8, max = 32))]
    pub ipv4: i64,
    /// IPv6 prefix length, 16..128 (default 56).
    #[serde(default = "default_ipv6_prefix")]
    #[schemars(range(min = 16, max = 128))]
    pub ipv6: i64,
}

fn default_ipv4_prefix() -> i64 {
    DEFAULT_STICKY_IPV4_PREFIX
}

fn default_ipv6_prefix() -> i64 {
    DEFAULT_STICKY_IPV6_PREFIX
}

impl Default for ClientSubnetPrefix {
    fn default() -> Self {
        ClientSubnetPrefix {
            ipv4: DEFAULT_STICKY_IPV4_PREFIX,
            ipv6: DEFAULT_STICKY_IPV6_PREFIX,
        }
    }
}

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
    {"rule": "!has(self.fallback) || size(self.fallback) == 0 || self.policy == 'Nearest'", "message": "fallback applies to policy Nearest only"},
    {"rule": "!has(self.stickiness) || self.stickiness == 'None' || self.policy != 'All'", "message": "stickiness applies to policies Weighted, Failover and Nearest (All answers every cluster: use Weighted with equal weights)"},
    {"rule": "!has(self.clientSubnetPrefix) || (has(self.stickiness) && self.stickiness == 'ClientSubnet')", "message": "clientSubnetPrefix applies to stickiness ClientSubnet only"}
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
    /// `None` (default: every query drawn afresh) or `ClientSubnet` (a
    /// client subnet keeps its cluster, chosen by weighted rendezvous
    /// hashing of the subnet). `Weighted`: among every cluster, by weight;
    /// `Failover`: one cluster of the answering priority group instead of
    /// all of them; `Nearest`: one cluster of the client's region (or of
    /// the fallback set) instead of all of them. Not with `All`.
    #[serde(default, skip_serializing_if = "is_not_sticky")]
    pub stickiness: Stickiness,
    /// `stickiness: ClientSubnet`: the prefix lengths of a client subnet
    /// (default IPv4 /24, IPv6 /56).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_subnet_prefix: Option<ClientSubnetPrefix>,
    /// At most this many addresses per family (A, AAAA) in one answer of
    /// the global name, 1..64, with any policy (unset: no limit). A set
    /// with more is answered a window of its addresses: with `All`,
    /// `Failover` and `Nearest` windows rotate over the set (each address
    /// in the same share of answers); with `Weighted` the drawn cluster's
    /// addresses come first, then other clusters' in an order drawn by
    /// weight. With stickiness a client subnet keeps its window. Route53:
    /// `All` becomes multivalue answer record sets when the limit is 8 or
    /// more (Route53 answers up to 8), otherwise `PolicyDowngraded`; Cloud
    /// DNS has no limit (`PolicyDowngraded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 64))]
    pub max_answers: Option<i64>,
}

fn is_not_sticky(stickiness: &Stickiness) -> bool {
    *stickiness == Stickiness::None
}

impl Routing {
    /// The sticky prefix lengths (IPv4, IPv6) when answers are sticky per
    /// client subnet (any policy but `All`).
    pub fn sticky_prefixes(&self) -> Option<(i64, i64)> {
        (self.policy != RoutingPolicy::All && self.stickiness == Stickiness::ClientSubnet).then(|| {
            let prefix = self.client_subnet_prefix.unwrap_or_default();
            (prefix.ipv4, prefix.ipv6)
        })
    }
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
