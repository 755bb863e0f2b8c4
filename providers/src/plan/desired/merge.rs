//! Validating and merging: every Domain and DNSEndpoint into the desired
//! zones, with the rules of the [folder docs](super).

use std::collections::{BTreeMap, BTreeSet};

use fedns_api::{names, DNSEndpoint, Domain, RecordType, RoutingPolicy, TsigKeyReference};
use fedns_dnsserver::hickory_proto::rr::{RData, Record};
use fedns_dnsserver::ZoneContent;

use super::model::max_answers_of;
use super::model::{
    DesiredRRset, DesiredZone, DesiredZones, DomainProblem, EndpointProblem, ProblemKind, RoutedMember, RoutedSet,
    DEFAULT_TTL,
};
use super::routing::{endpoint_routing, locations_of, routed_names, EndpointRouting};
use super::targets::{canonical_target, parse_target, to_name};
use super::zone::{clamp_u32, client_regions_of, zone_of};
use crate::plan::ownership::{is_registry_value, ClaimOrder, NamespaceLabels, ZoneAdmission, OWNERSHIP_RECORD_LABEL};

fn object_key(meta: &fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Computes the desired zones from every Domain and DNSEndpoint, with no
/// namespace labels known (a `Selector` Domain admits only namespaces its
/// selector matches with no labels).
pub fn desired_zones(domains: &[Domain], endpoints: &[DNSEndpoint]) -> DesiredZones {
    desired_zones_with(domains, endpoints, &NamespaceLabels::new())
}

/// Computes the desired zones from every Domain and DNSEndpoint;
/// `namespaces` gives the labels `allowedNamespaces` selectors match.
/// `endpoints` may be the objects or shared pointers to them (a watch
/// cache's `Arc`s: copying every DNSEndpoint per publish cost 30 MiB at
/// 40,000 shards).
pub fn desired_zones_with<E: std::borrow::Borrow<DNSEndpoint>>(
    domains: &[Domain],
    endpoints: &[E],
    namespaces: &NamespaceLabels,
) -> DesiredZones {
    let mut out = DesiredZones::default();
    let mut admissions: BTreeMap<String, ZoneAdmission> = BTreeMap::new();

    // Zones by apex; the first Domain (by namespace/name) for an apex wins.
    let mut sorted_domains: Vec<&Domain> = domains.iter().collect();
    sorted_domains.sort_by_key(|d| object_key(&d.metadata));
    let mut zones: BTreeMap<String, (String, ZoneContent)> = BTreeMap::new();
    let mut transfer_keys: BTreeMap<String, Vec<TsigKeyReference>> = BTreeMap::new();
    let mut dnssec: BTreeMap<String, fedns_api::DnssecSpec> = BTreeMap::new();
    for domain in sorted_domains {
        let (namespace, name) = object_key(&domain.metadata);
        match zone_of(domain) {
            Ok((apex, content)) => {
                if let Some((owner, _)) = zones.get(&apex) {
                    out.domain_problems.push(DomainProblem {
                        namespace,
                        name,
                        message: format!("zone {apex} is already served by Domain {owner}"),
                    });
                } else {
                    let (client_regions, region_problems) = client_regions_of(domain);
                    if !region_problems.is_empty() {
                        out.client_region_problems.push(DomainProblem {
                            namespace: namespace.clone(),
                            name: name.clone(),
                            message: region_problems.join("; "),
                        });
                    }
                    let mut content = content;
                    content.client_regions = client_regions;
                    let admission = ZoneAdmission::of(domain);
                    if let Some(problem) = admission.problem() {
                        out.domain_problems.push(DomainProblem {
                            namespace: namespace.clone(),
                            name: name.clone(),
                            message: format!("{problem}; no DNSEndpoint is admitted"),
                        });
                    }
                    admissions.insert(apex.clone(), admission);
                    let keys = domain
                        .spec
                        .transfer
                        .as_ref()
                        .map(|t| t.tsig_keys.clone())
                        .unwrap_or_default();
                    transfer_keys.insert(apex.clone(), keys);
                    if let Some(spec) = domain.spec.dnssec.as_ref().filter(|d| d.enabled) {
                        dnssec.insert(apex.clone(), spec.clone());
                    }
                    zones.insert(apex, (format!("{namespace}/{name}"), content));
                }
            }
            Err(message) => out.domain_problems.push(DomainProblem {
                namespace,
                name,
                message,
            }),
        }
    }

    // Claims: which object holds each (apex, owner name). Objects are
    // visited oldest first, so the first admitted claim of a name holds it.
    let mut ordered: Vec<&DNSEndpoint> = endpoints.iter().map(std::borrow::Borrow::borrow).collect();
    ordered.sort_by_cached_key(|e| ClaimOrder::of(&e.metadata));
    let mut holders: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut hierarchy = Hierarchy::default();

    // Merge endpoints into RRsets keyed by (zone apex, name, type).
    let mut rrsets: BTreeMap<(String, String, RecordType), (DesiredRRset, Vec<RData>)> = BTreeMap::new();
    // Routed endpoints per (apex, name): (type, routing, parsed targets,
    // source); and names that also have endpoints without a policy.
    type RoutedPart = (RecordType, EndpointRouting, Vec<RData>, String);
    let mut routed_parts: BTreeMap<(String, String), Vec<RoutedPart>> = BTreeMap::new();
    let mut plain_names: BTreeSet<(String, String)> = BTreeSet::new();
    let mut routing_problems: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    for endpoint_object in ordered {
        let (namespace, object) = object_key(&endpoint_object.metadata);
        let source = format!("{namespace}/{object}");
        let problem_of = |kind: ProblemKind, dns_name: &str, message: String| EndpointProblem {
            namespace: namespace.clone(),
            name: object.clone(),
            dns_name: dns_name.to_owned(),
            message,
            kind,
        };
        let problem = |dns_name: &str, message: String| problem_of(ProblemKind::InvalidInput, dns_name, message);
        for endpoint in &endpoint_object.spec.endpoints {
            let owner = match names::normalize_owner_name(&endpoint.dns_name) {
                Ok(owner) => owner,
                Err(e) => {
                    out.problems.push(problem(&endpoint.dns_name, format!("dnsName: {e}")));
                    continue;
                }
            };
            let Some(apex) = zones
                .keys()
                .filter(|apex| names::is_subdomain(&owner, apex))
                .max_by_key(|apex| apex.len())
                .cloned()
            else {
                out.problems.push(problem(
                    &owner,
                    "name is outside every Domain; not published".to_owned(),
                ));
                continue;
            };
            if let Some((domain, content)) = zones.get(&apex) {
                let is_name_server = content
                    .name_server_addresses
                    .iter()
                    .any(|(ns, _)| ns.to_ascii().trim_end_matches('.').eq_ignore_ascii_case(&owner));
                if is_name_server {
                    out.problems.push(problem_of(
                        ProblemKind::Conflict,
                        &owner,
                        format!("the name is a name server of Domain {domain}, whose spec.nameServerAddresses give its addresses; not published"),
                    ));
                    continue;
                }
            }
            if let Some(admission) = admissions.get(&apex) {
                if let Err(why) = admission.admits(&namespace, namespaces) {
                    out.problems.push(problem_of(
                        ProblemKind::NotAllowed,
                        &owner,
                        format!("not published: {why}"),
                    ));
                    continue;
                }
                if let Err(refusal) = admission.may_claim(&namespace, &owner, endpoint.record_type) {
                    out.problems.push(problem_of(
                        ProblemKind::NotAllowed,
                        &owner,
                        format!("{}; not published", refusal.message),
                    ));
                    continue;
                }
            }
            if endpoint.record_type == RecordType::TXT
                && endpoint
                    .targets
                    .iter()
                    .any(|t| is_registry_value(&crate::plan::txt::concatenated(t)))
            {
                if endpoint.labels.contains_key(OWNERSHIP_RECORD_LABEL) {
                    continue;
                }
                out.problems.push(problem_of(
                    ProblemKind::NotAllowed,
                    &owner,
                    "a TXT holding an ownership registry value (heritage=external-dns,…) is never published: it would make fedns or external-dns believe it owns another record".to_owned(),
                ));
                continue;
            }
            let group = admissions.get(&apex).and_then(|a| a.hierarchy_group(&owner));
            if group.is_some() {
                if let Some((name, (held_by, held_source))) = hierarchy.neighbour(&apex, &owner, &namespace) {
                    let (where_, name) = if name.len() < owner.len() {
                        ("above it", name)
                    } else {
                        ("below it", name)
                    };
                    out.problems.push(problem_of(
                        ProblemKind::Conflict,
                        &owner,
                        format!("{name}, {where_}, is held by DNSEndpoint {held_source} of namespace {held_by}, which claimed it first (outside service names a namespace's names also keep other namespaces off the names above and below them); not published"),
                    ));
                    continue;
                }
            }
            let holder = holders
                .entry((apex.clone(), owner.clone()))
                .or_insert_with(|| source.clone());
            if *holder != source {
                out.problems.push(problem_of(
                    ProblemKind::Conflict,
                    &owner,
                    format!("the name is held by DNSEndpoint {holder}, which claimed it first; not published"),
                ));
                continue;
            }
            if owner == apex && matches!(endpoint.record_type, RecordType::NS | RecordType::CNAME) {
                out.problems.push(problem(
                    &owner,
                    format!(
                        "{} at the zone apex is not allowed; set Domain nameServers instead",
                        endpoint.record_type
                    ),
                ));
                continue;
            }
            if group.is_some() {
                hierarchy.hold(&apex, &owner, &namespace, &source);
            }
            let ttl = endpoint.record_ttl.map_or(DEFAULT_TTL, |t| clamp_u32(t, 1));
            // The RRset's targets are set from the parsed RDATA below (in
            // canonical form): only the RDATA is kept here.
            let mut parsed = Vec::with_capacity(endpoint.targets.len());
            for target in &endpoint.targets {
                match parse_target(endpoint.record_type, target) {
                    Ok(rdata) => parsed.push(rdata),
                    Err(e) => out.problems.push(problem(&owner, e)),
                }
            }
            if parsed.is_empty() {
                continue;
            }
            let key = (apex.clone(), owner.clone());
            let properties: Vec<(String, String)> = endpoint
                .provider_specific
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect();
            if let Some(Err(why)) = max_answers_of(&properties) {
                out.problems.push(problem(&owner, why));
            }
            match endpoint_routing(endpoint) {
                None => {
                    plain_names.insert(key);
                }
                Some(Err(why)) => {
                    plain_names.insert(key.clone());
                    routing_problems.entry(key).or_default().push((source.clone(), why));
                }
                Some(Ok(_)) if !matches!(endpoint.record_type, RecordType::A | RecordType::AAAA) => {
                    plain_names.insert(key.clone());
                    routing_problems.entry(key).or_default().push((
                        source.clone(),
                        format!(
                            "set {}: routing applies to A and AAAA records only; this {} is published for every client",
                            endpoint.set_identifier, endpoint.record_type
                        ),
                    ));
                }
                Some(Ok(routing)) => routed_parts.entry(key).or_default().push((
                    endpoint.record_type,
                    routing,
                    parsed.clone(),
                    source.clone(),
                )),
            }
            let entry = rrsets
                .entry((apex, owner.clone(), endpoint.record_type))
                .or_insert_with(|| {
                    (
                        DesiredRRset {
                            name: owner.clone(),
                            record_type: endpoint.record_type,
                            ttl,
                            targets: Vec::new(),
                            provider_specific: endpoint
                                .provider_specific
                                .iter()
                                .map(|p| (p.name.clone(), p.value.clone()))
                                .collect(),
                            sources: BTreeSet::new(),
                            routing: None,
                            set_identifier: String::new(),
                        },
                        Vec::new(),
                    )
                });
            entry.0.ttl = entry.0.ttl.min(ttl);
            entry.0.sources.insert(source.clone());
            if entry.1.is_empty() {
                entry.1 = parsed;
            } else {
                entry.1.extend(parsed);
            }
        }
    }

    // Traffic policies: one policy per name, every endpoint of the name
    // routed; otherwise the name is answered as All and the reason reported.
    for ((apex, owner), parts) in routed_parts {
        let key = (apex.clone(), owner.clone());
        let policies: BTreeSet<RoutingPolicy> = parts.iter().map(|p| p.1.policy).collect();
        let why = if plain_names.contains(&key) {
            Some("some endpoints of the name carry no routing policy (or an invalid one)".to_owned())
        } else if policies.len() > 1 {
            Some(format!(
                "its endpoints mix policies {}",
                policies.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
            ))
        } else {
            None
        };
        if let Some(why) = why {
            for (_, _, _, source) in &parts {
                routing_problems
                    .entry(key.clone())
                    .or_default()
                    .push((source.clone(), format!("{why}; every client gets every address")));
            }
            continue;
        }
        let policy = parts[0].1.policy;
        let fallback = parts
            .iter()
            .map(|p| p.1.fallback.clone())
            .find(|f| !f.is_empty())
            .unwrap_or_default();
        let sticky = parts.iter().find_map(|p| p.1.sticky);
        // Failover: providers without policies publish the active role.
        let active_role = (policy == RoutingPolicy::Failover).then(|| {
            if parts.iter().any(|p| p.1.member.failover.as_deref() == Some("PRIMARY")) {
                "PRIMARY"
            } else {
                "SECONDARY"
            }
        });
        for rtype in [RecordType::A, RecordType::AAAA] {
            let Some(entry) = rrsets.get_mut(&(apex.clone(), owner.clone(), rtype)) else {
                continue;
            };
            let mut members: BTreeMap<String, (RoutedMember, Vec<RData>)> = BTreeMap::new();
            for (t, routing, rdatas, _) in &parts {
                if *t != rtype {
                    continue;
                }
                let member = members
                    .entry(routing.member.set_identifier.clone())
                    .or_insert_with(|| (routing.member.clone(), Vec::new()));
                member.1.extend(rdatas.iter().cloned());
            }
            if let Some(role) = active_role {
                entry.1 = members
                    .values()
                    .filter(|(m, _)| m.failover.as_deref() == Some(role))
                    .flat_map(|(_, r)| r.iter().cloned())
                    .collect();
                if entry.1.is_empty() {
                    // This type has only the other role: keep it all.
                    entry.1 = members.values().flat_map(|(_, r)| r.iter().cloned()).collect();
                }
            }
            entry.0.routing = Some(RoutedSet {
                policy,
                members: members
                    .into_values()
                    .map(|(mut m, rdatas)| {
                        let mut targets: Vec<String> = rdatas.iter().map(canonical_target).collect();
                        targets.sort();
                        targets.dedup();
                        m.targets = targets;
                        m
                    })
                    .collect(),
                fallback: fallback.clone(),
                sticky,
                locations: if policy == RoutingPolicy::Nearest {
                    zones
                        .get(&apex)
                        .map(|(_, content)| locations_of(&content.client_regions))
                        .unwrap_or_default()
                } else {
                    Vec::new()
                },
            });
        }
    }
    for ((_, owner), problems) in routing_problems {
        for (source, message) in problems {
            let (namespace, object) = source.split_once('/').unwrap_or(("", &source));
            out.problems.push(EndpointProblem {
                namespace: namespace.to_owned(),
                name: object.to_owned(),
                dns_name: owner.clone(),
                message,
                kind: ProblemKind::InvalidInput,
            });
        }
    }

    // A/AAAA beat CNAME; one CNAME target only.
    let names_with_addresses: BTreeSet<(String, String)> = rrsets
        .keys()
        .filter(|(_, _, t)| matches!(t, RecordType::A | RecordType::AAAA))
        .map(|(z, n, _)| (z.clone(), n.clone()))
        .collect();
    let names_with_data: BTreeSet<(String, String)> = rrsets
        .keys()
        .filter(|(_, _, t)| *t != RecordType::CNAME)
        .map(|(z, n, _)| (z.clone(), n.clone()))
        .collect();
    rrsets.retain(|(zone, name, rtype), (set, _)| {
        if *rtype != RecordType::CNAME || !names_with_data.contains(&(zone.clone(), name.clone())) {
            return true;
        }
        let winner = if names_with_addresses.contains(&(zone.clone(), name.clone())) {
            "A/AAAA"
        } else {
            "other data"
        };
        for source in &set.sources {
            let (namespace, object) = source.split_once('/').unwrap_or(("", source));
            out.problems.push(EndpointProblem {
                namespace: namespace.to_owned(),
                name: object.to_owned(),
                dns_name: name.clone(),
                message: format!("CNAME dropped: {winner} at the same name win (RFC 1034 §3.6.2)"),
                kind: ProblemKind::InvalidInput,
            });
        }
        false
    });

    let mut by_zone: BTreeMap<String, Vec<(DesiredRRset, Vec<RData>)>> = BTreeMap::new();
    for ((apex, _, _), entry) in rrsets {
        by_zone.entry(apex).or_default().push(entry);
    }
    for (apex, (domain, mut content)) in zones {
        let mut zone_rrsets = Vec::new();
        for (mut set, rdatas) in by_zone.remove(&apex).unwrap_or_default() {
            let Some(owner) = to_name(&set.name) else { continue };
            let mut unique: Vec<(String, RData)> = rdatas.into_iter().map(|r| (canonical_target(&r), r)).collect();
            unique.sort_by(|a, b| a.0.cmp(&b.0));
            unique.dedup_by(|a, b| a.0 == b.0);
            if set.record_type == RecordType::CNAME && unique.len() > 1 {
                for source in &set.sources {
                    let (namespace, object) = source.split_once('/').unwrap_or(("", source));
                    out.problems.push(EndpointProblem {
                        namespace: namespace.to_owned(),
                        name: object.to_owned(),
                        dns_name: set.name.clone(),
                        message: format!(
                            "a CNAME has one target (RFC 2181 §10.1); kept {}, dropped {}",
                            unique[0].0,
                            unique[1..].iter().map(|u| u.0.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                        kind: ProblemKind::InvalidInput,
                    });
                }
                unique.truncate(1);
            }
            set.targets = Vec::with_capacity(unique.len());
            content.records.reserve(unique.len());
            for (target, rdata) in unique {
                set.targets.push(target);
                content.records.push(Record::from_rdata(owner.clone(), set.ttl, rdata));
            }
            zone_rrsets.push(set);
        }
        content.routed = routed_names(&zone_rrsets);
        out.zones.push(DesiredZone {
            domain,
            content,
            rrsets: zone_rrsets,
            transfer_keys: transfer_keys.remove(&apex).unwrap_or_default(),
            dnssec: dnssec.remove(&apex),
        });
    }
    out.problems.sort();
    out.problems.dedup();
    out
}

/// The names held so far outside service names, for the hierarchical
/// rule: (apex, owner name with its labels reversed) → (namespace,
/// `namespace/name` of the DNSEndpoint holding it).
#[derive(Default)]
struct Hierarchy(BTreeMap<(String, String), (String, String)>);

/// `www.example.com` → `com.example.www`: names below a name then share
/// its key followed by a dot, one range of the map.
fn reversed(name: &str) -> String {
    name.rsplit('.').collect::<Vec<_>>().join(".")
}

impl Hierarchy {
    fn hold(&mut self, apex: &str, owner: &str, namespace: &str, source: &str) {
        self.0
            .entry((apex.to_owned(), reversed(owner)))
            .or_insert_with(|| (namespace.to_owned(), source.to_owned()));
    }

    /// A name above `owner` (below the apex) or below it held by another
    /// namespace than `namespace`: (that name, (namespace, source)).
    fn neighbour(&self, apex: &str, owner: &str, namespace: &str) -> Option<(String, (String, String))> {
        let other = |held: &(String, String)| held.0 != namespace;
        let mut above = owner;
        while let Some((_, parent)) = above.split_once('.') {
            if parent.len() <= apex.len() {
                break;
            }
            if let Some(held) = self.0.get(&(apex.to_owned(), reversed(parent))).filter(|h| other(h)) {
                return Some((parent.to_owned(), held.clone()));
            }
            above = parent;
        }
        let prefix = format!("{}.", reversed(owner));
        self.0
            .range((apex.to_owned(), prefix.clone())..)
            .take_while(|((zone, key), _)| zone == apex && key.starts_with(&prefix))
            .find(|(_, held)| other(held))
            .map(|((_, key), held)| (reversed(key), held.clone()))
    }
}
