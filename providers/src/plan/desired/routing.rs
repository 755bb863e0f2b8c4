//! Traffic policies: an endpoint's routing properties read and checked,
//! and the routed names the embedded server answers from.

use std::collections::BTreeMap;

use fedns_api::routing::{
    AWS_FAILOVER, AWS_REGION, AWS_WEIGHT, FEDNS_NEAREST_FALLBACK, FEDNS_NEAREST_REGION, FEDNS_STICKY_CLIENT_SUBNET,
    MAX_WEIGHT,
};
use fedns_api::RoutingPolicy;
use fedns_dnsserver::hickory_proto::rr::Record;

use super::model::{max_answers_of, DesiredRRset, RoutedMember};
use super::targets::{parse_target, to_name};

/// The routing facts one endpoint carries, before merging.
#[derive(Debug, Clone)]
pub(super) struct EndpointRouting {
    pub(super) policy: RoutingPolicy,
    pub(super) member: RoutedMember,
    pub(super) fallback: Vec<String>,
    /// `Weighted` sticky per client subnet: (IPv4, IPv6) prefix lengths.
    pub(super) sticky: Option<(u8, u8)>,
}

/// Reads an endpoint's routing properties: `None` when it carries no
/// policy (no set identifier, or none of the properties fedns routes by);
/// `Err` with a reason when a value is invalid.
pub(super) fn endpoint_routing(endpoint: &fedns_api::Endpoint) -> Option<Result<EndpointRouting, String>> {
    if endpoint.set_identifier.is_empty() {
        return None;
    }
    let get = |key: &str| {
        endpoint
            .provider_specific
            .iter()
            .find(|p| p.name == key)
            .map(|p| p.value.trim().to_owned())
    };
    let weight = get(AWS_WEIGHT);
    let failover = get(AWS_FAILOVER);
    let nearest = get(FEDNS_NEAREST_REGION);
    let aws_region = get(AWS_REGION);
    let policy = match (&weight, &failover, nearest.is_some() || aws_region.is_some()) {
        (Some(_), None, false) => RoutingPolicy::Weighted,
        (None, Some(_), false) => RoutingPolicy::Failover,
        (None, None, true) => RoutingPolicy::Nearest,
        (None, None, false) => return None,
        _ => {
            return Some(Err(format!(
            "set {}: more than one routing policy ({AWS_WEIGHT}, {AWS_FAILOVER}, {AWS_REGION}/{FEDNS_NEAREST_REGION})",
            endpoint.set_identifier
        )))
        }
    };
    let weight = match weight {
        Some(w) => match w.parse::<i64>() {
            Ok(v) if (0..=MAX_WEIGHT).contains(&v) => Some(v as u32),
            _ => {
                return Some(Err(format!(
                    "set {}: {AWS_WEIGHT} {w:?} is not a whole number 0..{MAX_WEIGHT}",
                    endpoint.set_identifier
                )))
            }
        },
        None => None,
    };
    let failover = match failover {
        Some(f) if f == "PRIMARY" || f == "SECONDARY" => Some(f),
        Some(f) => {
            return Some(Err(format!(
                "set {}: {AWS_FAILOVER} {f:?} must be PRIMARY or SECONDARY",
                endpoint.set_identifier
            )))
        }
        None => None,
    };
    let region = nearest.clone().or(aws_region.clone()).filter(|r| !r.is_empty());
    let fallback = get(FEDNS_NEAREST_FALLBACK)
        .map(|f| {
            f.split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let sticky = match get(FEDNS_STICKY_CLIENT_SUBNET) {
        None => None,
        Some(value) => match parse_sticky(&value) {
            Some(prefixes) => Some(prefixes),
            None => {
                return Some(Err(format!(
                    "set {}: {FEDNS_STICKY_CLIENT_SUBNET} {value:?} is not IPV4,IPV6 prefix lengths (e.g. 24,56; 8..32 and 16..128)",
                    endpoint.set_identifier
                )))
            }
        },
    };
    Some(Ok(EndpointRouting {
        policy,
        member: RoutedMember {
            set_identifier: endpoint.set_identifier.clone(),
            targets: Vec::new(),
            weight,
            failover,
            region,
            aws_region,
            provider_specific: endpoint
                .provider_specific
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect(),
            geo: None,
        },
        fallback,
        sticky,
    }))
}

/// `24,56` → (24, 56); IPv4 8..32, IPv6 16..128.
fn parse_sticky(value: &str) -> Option<(u8, u8)> {
    let (v4, v6) = value.split_once(',')?;
    let v4: u8 = v4.trim().parse().ok().filter(|p| (8..=32).contains(p))?;
    let v6: u8 = v6.trim().parse().ok().filter(|p| (16..=128).contains(p))?;
    Some((v4, v6))
}

/// The GeoIP part of a zone's client table as (`country:DE` or
/// `continent:EU`, region).
pub(super) fn locations_of(regions: &fedns_dnsserver::ClientRegions) -> Vec<(String, String)> {
    let countries = regions
        .countries
        .iter()
        .map(|(c, r)| (format!("country:{c}"), r.clone()));
    let continents = regions
        .continents
        .iter()
        .map(|(c, r)| (format!("continent:{c}"), r.clone()));
    countries.chain(continents).collect()
}

/// The embedded server's routed names of one zone's RRsets: `Weighted`
/// and `Nearest` names, one variant per set identifier with its A and
/// AAAA records; and, for `fedns/max-answers` or stickiness, `Failover`
/// names (their RRsets hold the active role: one variant per cluster of
/// it) and plain names (one variant of every address) as `Every`.
pub(super) fn routed_names(rrsets: &[DesiredRRset]) -> Vec<fedns_dnsserver::RoutedName> {
    use fedns_dnsserver::{RoutedName, RoutedVariant, RoutingPolicy as Served};
    let mut by_name: BTreeMap<&str, Vec<&DesiredRRset>> = BTreeMap::new();
    for set in rrsets {
        if !matches!(set.record_type, fedns_api::RecordType::A | fedns_api::RecordType::AAAA) {
            continue;
        }
        let limited = matches!(max_answers_of(&set.provider_specific), Some(Ok(_)));
        let wanted = match &set.routing {
            Some(r) if r.policy == RoutingPolicy::Failover => limited || r.sticky.is_some(),
            Some(_) => true,
            None => limited,
        };
        if wanted {
            by_name.entry(&set.name).or_default().push(set);
        }
    }
    let mut out = Vec::new();
    for (name, sets) in by_name {
        let Some(owner) = to_name(name) else { continue };
        let max_answers = sets
            .iter()
            .find_map(|s| max_answers_of(&s.provider_specific).and_then(Result::ok));
        let mut variants: BTreeMap<String, RoutedVariant> = BTreeMap::new();
        let mut push =
            |id: &str, weight: Option<u32>, region: Option<&String>, set: &DesiredRRset, targets: &[String]| {
                let variant = variants.entry(id.to_owned()).or_insert_with(|| RoutedVariant {
                    id: id.to_owned(),
                    weight: weight.unwrap_or(0),
                    region: region.cloned(),
                    records: Vec::new(),
                });
                for target in targets {
                    if let Ok(rdata) = parse_target(set.record_type, target) {
                        variant.records.push(Record::from_rdata(owner.clone(), set.ttl, rdata));
                    }
                }
            };
        let first = sets[0].routing.as_ref();
        let policy = match first {
            Some(r) if r.policy == RoutingPolicy::Weighted => match r.sticky {
                Some((v4_prefix, v6_prefix)) => Served::StickyWeighted { v4_prefix, v6_prefix },
                None => Served::Weighted,
            },
            Some(r) if r.policy == RoutingPolicy::Nearest => Served::Nearest {
                fallback: r.fallback.clone(),
            },
            _ => Served::Every,
        };
        for set in &sets {
            match &set.routing {
                Some(routing) => {
                    for member in &routing.members {
                        // Failover: only the active role, which the RRset holds.
                        if routing.policy == RoutingPolicy::Failover
                            && !member.targets.iter().all(|t| set.targets.contains(t))
                        {
                            continue;
                        }
                        push(
                            &member.set_identifier,
                            member.weight,
                            member.region.as_ref(),
                            set,
                            &member.targets,
                        );
                    }
                }
                None => push("all", None, None, set, &set.targets),
            }
        }
        out.push(RoutedName {
            name: owner,
            policy,
            variants: variants.into_values().collect(),
            max_answers,
            sticky_within: first.and_then(|r| r.sticky),
        });
    }
    out
}
