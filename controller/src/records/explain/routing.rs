//! The traffic policy's part of an explanation: which clusters a client
//! in a given place is sent to, and why ([`explain_routing`]).

use fedns_api::DNSEndpoint;
use serde::Serialize;

/// A name's traffic policy as the DNS server applies it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RoutingExplanation {
    /// `Weighted`, `Failover` or `Nearest`.
    pub policy: String,
    /// One line per cluster (set identifier): its addresses and its
    /// weight and share, failover role, or region.
    pub members: Vec<String>,
    /// `Nearest`: the region order after the client's own.
    pub fallback: Vec<String>,
    /// `maxAnswers`, when the name has more addresses than it: one line
    /// saying how many of how many each answer holds, and which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_limit: Option<String>,
    /// What the client asked about gets, if one was given.
    pub client: Option<ClientExplanation>,
}

/// Which variant one client gets, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClientExplanation {
    /// The client subnet asked about (as an ECS option would carry it).
    pub subnet: String,
    /// The region the client is placed in, if any.
    pub region: Option<String>,
    /// The SCOPE PREFIX-LENGTH the answer carries (RFC 7871).
    pub scope: u8,
    /// The clusters whose addresses the client is answered with
    /// (`Weighted`: one of them per answer).
    pub clusters: Vec<String>,
    /// One line: why.
    pub reason: String,
}

/// The traffic policy of `name` and, with `client`, which variant that
/// client gets: computed with the DNS server's own code (desired zones
/// from the Domains and DNSEndpoints, a snapshot, its client placement),
/// optionally with a GeoIP database. `None` when the name has no policy.
pub fn explain_routing(
    name: &str,
    domains: &[fedns_api::Domain],
    endpoints: &[DNSEndpoint],
    client: Option<ipnet::IpNet>,
    geo: Option<std::sync::Arc<fedns_dnsserver::GeoIpDb>>,
) -> Option<RoutingExplanation> {
    use fedns_api::RoutingPolicy;
    let wanted = name.trim_end_matches('.').to_ascii_lowercase();
    let desired = fedns_providers::plan::desired::desired_zones(domains, endpoints);
    let zone = desired
        .zones
        .iter()
        .find(|z| z.rrsets.iter().any(|r| r.name == wanted))?;
    let limit = zone
        .rrsets
        .iter()
        .filter(|r| r.name == wanted)
        .filter_map(|r| r.answer_limit().map(|n| (n, r.targets.len(), r.record_type)))
        .max();
    let answer_limit = limit.map(|(n, total, rtype)| {
        format!(
            "maxAnswers {n}: each answer holds at most {n} {rtype} address(es) of the chosen set (this name has {total}); \
             a window of them, rotated per query, kept per client subnet when sticky"
        )
    });
    let Some(routing) = zone
        .rrsets
        .iter()
        .filter(|r| r.name == wanted)
        .find_map(|r| r.routing.as_ref())
    else {
        // All with an answer limit: every address, N at a time.
        answer_limit.as_ref()?;
        let targets: Vec<&str> = zone
            .rrsets
            .iter()
            .filter(|r| r.name == wanted)
            .flat_map(|r| r.targets.iter().map(String::as_str))
            .collect();
        return Some(RoutingExplanation {
            policy: "All".into(),
            members: vec![format!("every healthy cluster: {}", targets.join(" "))],
            fallback: Vec::new(),
            answer_limit,
            client: client.map(|subnet| ClientExplanation {
                subnet: subnet.to_string(),
                region: None,
                scope: 0,
                clusters: vec!["every healthy cluster".into()],
                reason:
                    "All does not depend on the client: each answer holds a window of the addresses, rotated per query"
                        .into(),
            }),
        });
    };
    let members: std::collections::BTreeMap<&str, Vec<&fedns_providers::plan::desired::RoutedMember>> =
        z_members(zone, &wanted);
    let total: u32 = members.values().filter_map(|m| m[0].weight).sum();
    let lines = members
        .iter()
        .map(|(id, ms)| {
            let targets: Vec<&str> = ms.iter().flat_map(|m| m.targets.iter().map(String::as_str)).collect();
            let m = ms[0];
            let detail = match routing.policy {
                RoutingPolicy::Weighted => {
                    let w = m.weight.unwrap_or(0);
                    let share = if total > 0 {
                        format!("{:.1} % of answers", 100.0 * f64::from(w) / f64::from(total))
                    } else {
                        "all weights 0: equal shares".to_owned()
                    };
                    format!("weight {w} ({share})")
                }
                RoutingPolicy::Failover => format!("failover {}", m.failover.as_deref().unwrap_or("?")),
                _ => format!("region {}", m.region.as_deref().unwrap_or("(none)")),
            };
            format!("{id}: {} — {detail}", targets.join(" "))
        })
        .collect();
    let mut out = RoutingExplanation {
        policy: match routing.sticky {
            Some((v4, v6)) => format!("{}, sticky per client subnet (/{v4}, /{v6})", routing.policy.as_str()),
            None => routing.policy.as_str().to_owned(),
        },
        members: lines,
        fallback: routing.fallback.clone(),
        answer_limit,
        client: None,
    };
    let Some(subnet) = client else {
        return Some(out);
    };
    let address = (subnet.prefix_len() > 0).then(|| subnet.trunc().network());
    out.client = Some(match routing.policy {
        RoutingPolicy::Failover if routing.sticky.is_none() || address.is_none() => {
            let active: Vec<String> = members
                .iter()
                .filter(|(_, ms)| ms[0].failover.as_deref() == Some("PRIMARY"))
                .map(|(id, _)| id.to_string())
                .collect();
            let (clusters, why) = if active.is_empty() {
                (
                    members.keys().map(|s| s.to_string()).collect(),
                    "no PRIMARY cluster is healthy: the SECONDARY group answers",
                )
            } else {
                (
                    active,
                    "the first priority group with a healthy cluster (PRIMARY) answers",
                )
            };
            ClientExplanation {
                subnet: subnet.to_string(),
                region: None,
                scope: 0,
                clusters,
                reason: format!("Failover does not depend on the client: {why}"),
            }
        }
        _ => {
            let snapshot = fedns_dnsserver::Snapshot::build_with_geoip(&[(zone.content.clone(), 1)], geo);
            let choice = snapshot.choice_for(&format!("{wanted}."), address)?;
            let sticky = routing.sticky;
            let subnet_text = |client: std::net::IpAddr| {
                ipnet::IpNet::new(client, choice.scope).map_or_else(|_| client.to_string(), |n| n.trunc().to_string())
            };
            let reason = match (routing.policy, &choice.region, address) {
                (RoutingPolicy::Failover, _, Some(client)) => format!(
                    "Failover with ClientSubnet stickiness: of the answering priority group, the client's subnet {} hashes (rendezvous) to this cluster and keeps it while it is healthy (SCOPE {})",
                    subnet_text(client),
                    choice.scope
                ),
                (RoutingPolicy::Nearest, Some(region), Some(client))
                    if sticky.is_some() && members.values().any(|ms| ms[0].region.as_deref() == Some(region.as_str())) =>
                {
                    format!(
                        "the client is in region {region}, which has healthy clusters; with ClientSubnet stickiness its subnet {} hashes (rendezvous) to this one of them (SCOPE {})",
                        subnet_text(client),
                        choice.scope
                    )
                }
                (RoutingPolicy::Weighted, _, Some(client)) if sticky.is_some() => format!(
                    "Weighted with ClientSubnet stickiness: the client's subnet {} hashes (weighted rendezvous) to this cluster and keeps it while it is healthy; resolvers cache the answer for that subnet (SCOPE {})",
                    subnet_text(client),
                    choice.scope
                ),
                (RoutingPolicy::Weighted, _, None) if sticky.is_some() => {
                    "SOURCE PREFIX-LENGTH 0: no client subnet to hash, so each answer holds one of these clusters, by weight".to_owned()
                }
                (RoutingPolicy::Weighted, _, _) => {
                    "Weighted does not depend on the client: each answer holds one of these clusters, by weight".to_owned()
                }
                (_, _, None) => "SOURCE PREFIX-LENGTH 0: no client information; the answer for everybody (fallback order, else every cluster)".to_owned(),
                (_, Some(region), _) if members.values().any(|ms| ms[0].region.as_deref() == Some(region.as_str())) => {
                    format!("the client is in region {region}, which has healthy clusters")
                }
                (_, Some(region), _) => format!(
                    "the client is in region {region}, which has no healthy cluster: fallback {:?}, else every cluster",
                    routing.fallback
                ),
                (_, None, _) => format!(
                    "the client is in no known region (Domain clientRegions/geoRegions): fallback {:?}, else every cluster",
                    routing.fallback
                ),
            };
            let clusters = if routing.policy == RoutingPolicy::Weighted && (sticky.is_none() || address.is_none()) {
                // Route53's semantics: weight 0 is standby while any has weight.
                let weighted: Vec<String> = members
                    .iter()
                    .filter(|(_, ms)| ms[0].weight.unwrap_or(0) > 0)
                    .map(|(id, _)| id.to_string())
                    .collect();
                if weighted.is_empty() {
                    choice.variants
                } else {
                    weighted
                }
            } else {
                choice.variants
            };
            ClientExplanation {
                subnet: subnet.to_string(),
                region: choice.region,
                scope: choice.scope,
                clusters,
                reason,
            }
        }
    });
    Some(out)
}

/// The routed members of `name` in `zone`, by set identifier (A and AAAA).
fn z_members<'a>(
    zone: &'a fedns_providers::plan::desired::DesiredZone,
    name: &str,
) -> std::collections::BTreeMap<&'a str, Vec<&'a fedns_providers::plan::desired::RoutedMember>> {
    let mut out: std::collections::BTreeMap<&str, Vec<&fedns_providers::plan::desired::RoutedMember>> =
        Default::default();
    for rrset in zone.rrsets.iter().filter(|r| r.name == name) {
        for member in rrset.routing.iter().flat_map(|r| r.members.iter()) {
            out.entry(member.set_identifier.as_str()).or_default().push(member);
        }
    }
    out
}
