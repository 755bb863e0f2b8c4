//! Traffic policies (`spec.routing`) written into the DNSEndpoint in
//! external-dns's vocabulary: one endpoint per healthy cluster (and
//! address family) with `setIdentifier` = the cluster and the
//! `providerSpecific` properties external-dns defines for Route53
//! (`aws/weight`, `aws/failover`, `aws/region`), plus fedns's own where
//! external-dns has none (`fedns/nearest-region`, `fedns/nearest-fallback`).
//!
//! Health has been applied before: the shards given are the healthy ones
//! (or the last-known set when health failed open), so the policy only
//! chooses among clusters that may be answered.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use fedns_api::routing::{
    GeoRegion, AWS_FAILOVER, AWS_GEO_CONTINENT, AWS_GEO_COUNTRY, AWS_REGION, AWS_WEIGHT, FEDNS_MAX_ANSWERS,
    FEDNS_NEAREST_FALLBACK, FEDNS_NEAREST_REGION, FEDNS_STICKY_CLIENT_SUBNET,
};
use fedns_api::{Endpoint, ProviderSpecificProperty, RecordType, Routing, RoutingPolicy};

use super::model::{BuildProblem, DRAIN_STEPS};

/// One healthy cluster as a policy sees it.
#[derive(Debug, Clone)]
pub struct PolicyShard {
    /// MemberCluster name (the set identifier).
    pub cluster: String,
    /// Its region, if known.
    pub region: Option<String>,
    /// Its load balancer addresses.
    pub addresses: BTreeSet<IpAddr>,
}

/// Problems of `routing` the schema cannot see: names in `weights`,
/// `priorities` or `fallback` that are neither a member cluster
/// (`clusters`) nor a region of one (`regions`), a name in two priority
/// groups, `Nearest` on a Domain without a client table. The policy still
/// applies; an unknown name just matches nothing.
pub fn check(
    routing: &Routing,
    clusters: &BTreeSet<String>,
    regions: &BTreeSet<String>,
    domain_places_clients: bool,
) -> Vec<BuildProblem> {
    let mut problems = Vec::new();
    let unknown = |problems: &mut Vec<BuildProblem>, field: &str, name: &str, what: &str| {
        problems.push(BuildProblem {
            cluster: None,
            message: format!("spec.routing.{field}: {name:?} is not {what}; it matches nothing"),
        })
    };
    for name in routing.weights.keys() {
        if !clusters.contains(name) && !regions.contains(name) {
            unknown(&mut problems, "weights", name, "a member cluster or a region");
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, group) in routing.priorities.iter().enumerate() {
        for name in group {
            if !clusters.contains(name) && !regions.contains(name) {
                unknown(&mut problems, "priorities", name, "a member cluster or a region");
            }
            if let Some(first) = seen.insert(name, index) {
                if first != index {
                    problems.push(BuildProblem {
                        cluster: None,
                        message: format!(
                            "spec.routing.priorities: {name:?} is in groups {first} and {index}; group {first} counts"
                        ),
                    });
                }
                seen.insert(name, first);
            }
        }
    }
    for name in &routing.fallback {
        if !regions.contains(name) {
            unknown(&mut problems, "fallback", name, "a region of a member cluster");
        }
    }
    match routing.policy {
        RoutingPolicy::Failover if routing.priorities.is_empty() => problems.push(BuildProblem {
            cluster: None,
            message: "spec.routing: policy Failover without priorities answers every healthy cluster".into(),
        }),
        RoutingPolicy::Nearest if !domain_places_clients => problems.push(BuildProblem {
            cluster: None,
            message: "spec.routing: policy Nearest, but the Domain has no clientRegions or geoRegions; every client gets the fallback order".into(),
        }),
        _ => {}
    }
    problems
}

/// The priority group of a cluster: the first group naming it or its
/// region; clusters in no group come last.
fn group_of(routing: &Routing, shard: &PolicyShard) -> usize {
    routing
        .priorities
        .iter()
        .position(|group| {
            group
                .iter()
                .any(|n| *n == shard.cluster || Some(n.as_str()) == shard.region.as_deref())
        })
        .unwrap_or(routing.priorities.len())
}

/// `routing` while clusters drain (`spec.drainSeconds`; `draining`:
/// cluster and the tenths of its weight it keeps): for `Weighted`, every
/// weight times 10 and each draining cluster's own weight times its
/// tenths, so its share falls in steps and the others keep their ratios
/// (weights over 25 would pass Route53's 255: then only the draining
/// cluster's weight changes, to its tenths rounded).
/// Other policies are returned as they are (a draining cluster is served
/// whole until its drain ends). `region_of` gives a cluster's region.
pub fn drained(routing: &Routing, draining: &[(String, u32)], region_of: &dyn Fn(&str) -> Option<String>) -> Routing {
    if routing.policy != RoutingPolicy::Weighted || draining.is_empty() {
        return routing.clone();
    }
    let mut out = routing.clone();
    let steps = i64::from(DRAIN_STEPS);
    // Route53 takes weights up to 255: scale by 10 only while that holds;
    // larger weights are fine-grained enough to take their tenths as they
    // are (rounded).
    let scale = routing
        .weights
        .values()
        .max()
        .copied()
        .unwrap_or(0)
        .saturating_mul(steps)
        <= ROUTE53_MAX_WEIGHT;
    if scale {
        for weight in out.weights.values_mut() {
            *weight = weight.saturating_mul(steps);
        }
    }
    for (cluster, tenths) in draining {
        let weight = weight_of(routing, cluster, region_of(cluster).as_deref());
        let kept = weight.saturating_mul(i64::from(*tenths));
        out.weights
            .insert(cluster.clone(), if scale { kept } else { (kept + steps / 2) / steps });
    }
    out
}

/// The largest weight Route53 takes (`aws/weight`, 0..=255).
const ROUTE53_MAX_WEIGHT: i64 = 255;

/// The weight of a cluster: its own entry, else its region's, else 0.
pub fn weight_of(routing: &Routing, cluster: &str, region: Option<&str>) -> i64 {
    routing
        .weights
        .get(cluster)
        .or_else(|| region.and_then(|r| routing.weights.get(r)))
        .copied()
        .unwrap_or(0)
}

/// Whether `region` names an AWS region (`us-east-1`, `eu-central-2`,
/// `us-gov-west-1`, `ap-southeast-4`), so Route53 latency records can use it.
pub fn is_aws_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    let (first, rest) = match parts.as_slice() {
        [first, rest @ ..] if rest.len() >= 2 => (first, rest),
        _ => return false,
    };
    let letters = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase());
    first.len() == 2
        && letters(first)
        && rest[..rest.len() - 1].iter().all(|p| letters(p))
        && rest[rest.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !rest[rest.len() - 1].is_empty()
}

fn property(name: &str, value: impl Into<String>) -> ProviderSpecificProperty {
    ProviderSpecificProperty {
        name: name.to_owned(),
        value: value.into(),
    }
}

fn per_family(name: &str, shard: &PolicyShard, ttl: i64, properties: &[ProviderSpecificProperty]) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for (rtype, v6) in [(RecordType::A, false), (RecordType::AAAA, true)] {
        let targets: Vec<String> = shard
            .addresses
            .iter()
            .filter(|a| a.is_ipv6() == v6)
            .map(ToString::to_string)
            .collect();
        if targets.is_empty() {
            continue;
        }
        out.push(Endpoint {
            dns_name: name.to_owned(),
            targets,
            record_type: rtype,
            set_identifier: shard.cluster.clone(),
            record_ttl: Some(ttl),
            labels: Default::default(),
            provider_specific: properties.to_vec(),
        });
    }
    out
}

/// The endpoints of `name` under `routing` (a policy other than `All`):
/// one per cluster and address family. `Failover` writes the first group
/// with a healthy cluster as `PRIMARY` and the next as `SECONDARY` (what
/// Route53 can express); later groups appear when those fail.
pub fn policy_endpoints(name: &str, routing: &Routing, shards: &[PolicyShard], ttl: i64) -> Vec<Endpoint> {
    let shards: Vec<&PolicyShard> = shards.iter().filter(|s| !s.addresses.is_empty()).collect();
    let mut out = Vec::new();
    match routing.policy {
        RoutingPolicy::All => {}
        RoutingPolicy::Weighted => {
            for shard in shards {
                let weight = weight_of(routing, &shard.cluster, shard.region.as_deref());
                let properties = vec![property(AWS_WEIGHT, weight.to_string())];
                out.extend(per_family(name, shard, ttl, &properties));
            }
        }
        RoutingPolicy::Failover => {
            let groups: BTreeSet<usize> = shards.iter().map(|s| group_of(routing, s)).collect();
            let mut roles = groups.into_iter();
            let primary = roles.next();
            let secondary = roles.next();
            for shard in shards {
                let group = Some(group_of(routing, shard));
                let role = if group == primary {
                    "PRIMARY"
                } else if group == secondary {
                    "SECONDARY"
                } else {
                    continue;
                };
                out.extend(per_family(name, shard, ttl, &[property(AWS_FAILOVER, role)]));
            }
        }
        RoutingPolicy::Nearest => {
            for shard in shards {
                let region = shard.region.clone().unwrap_or_default();
                let mut properties = vec![property(FEDNS_NEAREST_REGION, region.clone())];
                if !routing.fallback.is_empty() {
                    properties.push(property(FEDNS_NEAREST_FALLBACK, routing.fallback.join(",")));
                }
                if is_aws_region(&region) {
                    properties.push(property(AWS_REGION, region));
                }
                out.extend(per_family(name, shard, ttl, &properties));
            }
        }
    }
    if let Some((v4, v6)) = routing.sticky_prefixes() {
        for endpoint in &mut out {
            endpoint
                .provider_specific
                .push(property(FEDNS_STICKY_CLIENT_SUBNET, format!("{v4},{v6}")));
        }
    }
    out
}

/// Adds `fedns/max-answers` (`spec.routing.maxAnswers`) to every endpoint
/// of the global name, routed or not.
pub fn add_max_answers(endpoints: &mut [Endpoint], routing: Option<&Routing>) {
    let Some(n) = routing.and_then(|r| r.max_answers) else {
        return;
    };
    for endpoint in endpoints {
        endpoint
            .provider_specific
            .push(property(FEDNS_MAX_ANSWERS, n.to_string()));
    }
}

/// Adds external-dns's geolocation property (`aws/geolocation-country-code`
/// or `aws/geolocation-continent-code`) to each `Nearest` endpoint whose
/// region maps to exactly one location in the Domains' `geoRegions` (the
/// first Domain listing the region counts) and is not an AWS region (that
/// one carries `aws/region`: external-dns takes one routing policy per
/// endpoint). An external-dns user reading these DNSEndpoints then gets the
/// same geolocation record sets. A region with several locations would need
/// one endpoint per location; it is left to fedns's own route53 provider,
/// which expands it from the Domain (docs/providers.md).
pub fn add_geolocation(endpoints: &mut [Endpoint], geo_regions: &[&GeoRegion]) {
    for endpoint in endpoints {
        let property_of = |name: &str| {
            endpoint
                .provider_specific
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.value.clone())
        };
        let Some(region) = property_of(FEDNS_NEAREST_REGION).filter(|r| !r.is_empty()) else {
            continue;
        };
        if property_of(AWS_REGION).is_some() || property_of(AWS_GEO_COUNTRY).is_some() {
            continue;
        }
        let Some(geo) = geo_regions.iter().find(|g| g.region == region) else {
            continue;
        };
        let location = match (geo.countries.as_slice(), geo.continents.as_slice()) {
            ([country], []) => (AWS_GEO_COUNTRY, country),
            ([], [continent]) => (AWS_GEO_CONTINENT, continent),
            _ => continue,
        };
        endpoint
            .provider_specific
            .push(property(location.0, location.1.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(cluster: &str, region: &str, ips: &[&str]) -> PolicyShard {
        PolicyShard {
            cluster: cluster.into(),
            region: (!region.is_empty()).then(|| region.into()),
            addresses: ips.iter().map(|i| i.parse().unwrap()).collect(),
        }
    }

    fn props(e: &Endpoint) -> Vec<String> {
        e.provider_specific
            .iter()
            .map(|p| format!("{}={}", p.name, p.value))
            .collect()
    }

    fn routing(policy: RoutingPolicy) -> Routing {
        Routing {
            policy,
            ..Default::default()
        }
    }

    #[test]
    fn sticky_weighted_writes_the_subnet_prefixes() {
        let mut r = routing(RoutingPolicy::Weighted);
        r.stickiness = fedns_api::routing::Stickiness::ClientSubnet;
        let shards = [shard("east", "us-east-1", &["203.0.113.1"])];
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert_eq!(props(&e[0]), ["aws/weight=0", "fedns/sticky-client-subnet=24,56"]);
        r.client_subnet_prefix = Some(fedns_api::routing::ClientSubnetPrefix { ipv4: 20, ipv6: 48 });
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert_eq!(props(&e[0])[1], "fedns/sticky-client-subnet=20,48");
        // Not sticky: no property.
        r.stickiness = fedns_api::routing::Stickiness::None;
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert_eq!(props(&e[0]), ["aws/weight=0"]);
    }

    #[test]
    fn sticky_failover_and_nearest_and_max_answers_are_written_too() {
        let shards = [shard("east", "us-east-1", &["203.0.113.1"])];
        let mut r = routing(RoutingPolicy::Nearest);
        r.stickiness = fedns_api::routing::Stickiness::ClientSubnet;
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert!(
            props(&e[0]).contains(&"fedns/sticky-client-subnet=24,56".to_string()),
            "{:?}",
            props(&e[0])
        );
        let mut r = routing(RoutingPolicy::Failover);
        r.priorities = vec![vec!["us-east-1".into()]];
        r.stickiness = fedns_api::routing::Stickiness::ClientSubnet;
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert_eq!(
            props(&e[0]),
            ["aws/failover=PRIMARY", "fedns/sticky-client-subnet=24,56"]
        );
        // maxAnswers goes on every endpoint of the name, routed or not.
        let mut e = e;
        r.max_answers = Some(2);
        add_max_answers(&mut e, Some(&r));
        assert_eq!(props(&e[0])[2], "fedns/max-answers=2");
        let mut plain = vec![e[0].clone()];
        add_max_answers(&mut plain, None);
        assert_eq!(plain[0].provider_specific.len(), 3, "no routing: unchanged");
    }

    #[test]
    fn weighted_writes_one_endpoint_per_cluster_and_family() {
        let mut r = routing(RoutingPolicy::Weighted);
        r.weights.insert("east".into(), 3);
        r.weights.insert("eu-west-1".into(), 1);
        let shards = [
            shard("east", "us-east-1", &["203.0.113.1", "2001:db8::1"]),
            shard("eu", "eu-west-1", &["203.0.113.2"]),
            shard("lab", "", &["203.0.113.3"]),
        ];
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        let rows: Vec<String> = e
            .iter()
            .map(|e| format!("{} {} {}", e.set_identifier, e.record_type, props(e).join(",")))
            .collect();
        assert_eq!(
            rows,
            [
                "east A aws/weight=3",
                "east AAAA aws/weight=3",
                "eu A aws/weight=1",
                "lab A aws/weight=0"
            ]
        );
    }

    #[test]
    fn failover_marks_the_first_two_healthy_groups() {
        let mut r = routing(RoutingPolicy::Failover);
        r.priorities = vec![vec!["us-east-1".into()], vec!["west".into()], vec!["eu".into()]];
        let all = [
            shard("east", "us-east-1", &["203.0.113.1"]),
            shard("west", "us-west-2", &["203.0.113.2"]),
            shard("eu", "eu-west-1", &["203.0.113.3"]),
        ];
        let roles = |shards: &[PolicyShard]| -> Vec<String> {
            policy_endpoints("n.example.com", &r, shards, 30)
                .iter()
                .map(|e| format!("{} {}", e.set_identifier, props(e).join(",")))
                .collect()
        };
        assert_eq!(
            roles(&all),
            ["east aws/failover=PRIMARY", "west aws/failover=SECONDARY"]
        );
        // east unhealthy: west is primary, eu secondary.
        assert_eq!(
            roles(&all[1..]),
            ["west aws/failover=PRIMARY", "eu aws/failover=SECONDARY"]
        );
    }

    #[test]
    fn nearest_writes_regions_and_aws_regions_where_they_are() {
        let mut r = routing(RoutingPolicy::Nearest);
        r.fallback = vec!["us-east-1".into(), "europe".into()];
        let shards = [
            shard("east", "us-east-1", &["203.0.113.1"]),
            shard("eu", "europe", &["203.0.113.2"]),
        ];
        let e = policy_endpoints("n.example.com", &r, &shards, 30);
        assert_eq!(
            props(&e[0]),
            [
                "fedns/nearest-region=us-east-1",
                "fedns/nearest-fallback=us-east-1,europe",
                "aws/region=us-east-1"
            ]
        );
        assert_eq!(
            props(&e[1]),
            ["fedns/nearest-region=europe", "fedns/nearest-fallback=us-east-1,europe"]
        );
    }

    #[test]
    fn nearest_carries_geolocation_where_one_location_names_the_region() {
        let r = routing(RoutingPolicy::Nearest);
        let shards = [
            shard("east", "us-east-1", &["203.0.113.1"]),
            shard("eu", "europe", &["203.0.113.2"]),
            shard("de", "germany", &["203.0.113.3"]),
            shard("apac", "asia", &["203.0.113.4"]),
            shard("lab", "", &["203.0.113.5"]),
        ];
        let geo = |region: &str, countries: &[&str], continents: &[&str]| GeoRegion {
            region: region.into(),
            countries: countries.iter().map(|c| (*c).to_owned()).collect(),
            continents: continents.iter().map(|c| (*c).to_owned()).collect(),
        };
        let table = [
            geo("us-east-1", &["US"], &[]),
            geo("europe", &[], &["EU"]),
            geo("germany", &["DE"], &[]),
            geo("asia", &["JP", "SG"], &[]),
        ];
        let refs: Vec<&GeoRegion> = table.iter().collect();
        let mut e = policy_endpoints("n.example.com", &r, &shards, 30);
        add_geolocation(&mut e, &refs);
        let by = |cluster: &str| props(e.iter().find(|e| e.set_identifier == cluster).unwrap());
        // An AWS region keeps its latency routing only (one policy per endpoint).
        assert_eq!(by("east"), ["fedns/nearest-region=us-east-1", "aws/region=us-east-1"]);
        assert_eq!(
            by("eu"),
            ["fedns/nearest-region=europe", "aws/geolocation-continent-code=EU"]
        );
        assert_eq!(
            by("de"),
            ["fedns/nearest-region=germany", "aws/geolocation-country-code=DE"]
        );
        // Two locations would need two endpoints: left to fedns's route53 provider.
        assert_eq!(by("apac"), ["fedns/nearest-region=asia"]);
        assert_eq!(by("lab"), ["fedns/nearest-region="]);
    }

    #[test]
    fn unknown_names_are_reported() {
        let mut r = routing(RoutingPolicy::Weighted);
        r.weights.insert("east".into(), 1);
        r.weights.insert("nowhere".into(), 1);
        let clusters: BTreeSet<String> = ["east".to_string()].into();
        let regions: BTreeSet<String> = ["us-east-1".to_string()].into();
        let p = check(&r, &clusters, &regions, true);
        assert_eq!(p.len(), 1);
        assert!(p[0].message.contains("\"nowhere\""), "{p:?}");
        let mut r = routing(RoutingPolicy::Nearest);
        r.fallback = vec!["east".into()];
        let p = check(&r, &clusters, &regions, false);
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn aws_regions() {
        for r in ["us-east-1", "eu-central-2", "us-gov-west-1", "ap-southeast-4"] {
            assert!(is_aws_region(r), "{r}");
        }
        for r in ["europe", "us-east", "east-1", "US-EAST-1", "us-east-1a", ""] {
            assert!(!is_aws_region(r), "{r}");
        }
    }
}
