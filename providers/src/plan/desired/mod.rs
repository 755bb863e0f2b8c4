//! Desired record sets: Domains and DNSEndpoints turned into zones.
//!
//! Rules (DESIGN.md "Names and failover", "Publishing"):
//! * each Domain is one zone; a DNSEndpoint's `dnsName` goes to the Domain
//!   with the longest apex containing it; names outside every Domain are
//!   reported and skipped;
//! * targets are parsed per type (A: IPv4, AAAA: IPv6, CNAME/NS/PTR: host
//!   names, MX `pref host`, SRV `prio weight port host`, TXT as
//!   [`crate::plan::txt`] says (quoted: presentation form; else one string split at
//!   255 octets), CAA in master-file form); an invalid target is reported and
//!   skipped, its valid siblings kept;
//! * endpoints with the same name and type merge: union of targets,
//!   deduplicated, sorted; the smallest TTL wins (RFC 2181 §5.2);
//! * A/AAAA beat CNAME at one name (RFC 1034 §3.6.2 forbids both): the
//!   CNAME is dropped and reported;
//! * one name, one owner ([`crate::plan::ownership`]): a name is published from
//!   the oldest DNSEndpoint that claims it, if its namespace may publish it;
//!   every other claim is reported (`Conflict` or `NotAllowed`) and skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

use fedns_api::routing::{
    AWS_FAILOVER, AWS_REGION, AWS_WEIGHT, FEDNS_NEAREST_FALLBACK, FEDNS_NEAREST_REGION, MAX_WEIGHT,
};
use fedns_api::{names, DNSEndpoint, Domain, RecordType, RoutingPolicy, TsigKeyReference};
use fedns_dnsserver::hickory_proto::rr::rdata::{self, MX, SRV, TXT};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
use fedns_dnsserver::{SoaFields, ZoneContent};

use crate::plan::ownership::{ClaimOrder, NamespaceLabels, ZoneAdmission};

/// TTL used when an endpoint has no `recordTTL`, in seconds.
pub const DEFAULT_TTL: u32 = fedns_api::DEFAULT_RECORD_TTL as u32;

/// Something in one DNSEndpoint that was not published, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EndpointProblem {
    /// Namespace of the DNSEndpoint.
    pub namespace: String,
    /// Name of the DNSEndpoint.
    pub name: String,
    /// The `dnsName` concerned.
    pub dns_name: String,
    /// One line saying what was skipped and why.
    pub message: String,
    /// What kind of problem (the condition reason it gives).
    pub kind: ProblemKind,
}

/// The kind of an [`EndpointProblem`], ordered from least to most serious.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A value that does not parse or cannot be served (`InvalidInput`).
    #[default]
    InvalidInput,
    /// The namespace may not publish the name (`NotAllowed`).
    NotAllowed,
    /// An older DNSEndpoint holds the name (`Conflict`).
    Conflict,
}

impl ProblemKind {
    /// The condition reason (`fedns_api::conditions`).
    pub fn reason(self) -> &'static str {
        match self {
            ProblemKind::InvalidInput => fedns_api::conditions::INVALID_INPUT,
            ProblemKind::NotAllowed => fedns_api::conditions::NOT_ALLOWED,
            ProblemKind::Conflict => fedns_api::conditions::CONFLICT,
        }
    }
}

/// A Domain that could not be served, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainProblem {
    /// Namespace of the Domain.
    pub namespace: String,
    /// Name of the Domain.
    pub name: String,
    /// One line.
    pub message: String,
}

/// One merged RRset as desired, before any provider's format.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DesiredRRset {
    /// Owner name, normalised (lower case, no trailing dot).
    pub name: String,
    /// RR type.
    pub record_type: RecordType,
    /// TTL in seconds.
    pub ttl: u32,
    /// Targets as given, deduplicated and sorted (presentation form).
    pub targets: Vec<String>,
    /// `providerSpecific` of the first endpoint that named this RRset.
    pub provider_specific: Vec<(String, String)>,
    /// The DNSEndpoints (`namespace/name`) that contributed.
    pub sources: BTreeSet<String>,
    /// The traffic policy of this RRset's name, when its endpoints carry
    /// one (`setIdentifier` plus `aws/weight`, `aws/failover`,
    /// `aws/region` or `fedns/nearest-region`). `targets` is then what a
    /// provider without policies publishes: the union of every member
    /// (`Weighted`, `Nearest`) or the active failover role's (`Failover`).
    pub routing: Option<RoutedSet>,
    /// Set identifier of one routed record set, for providers that publish
    /// each member of a routed RRset on its own (Route53); empty otherwise.
    pub set_identifier: String,
}

impl DesiredRRset {
    /// The routing attribute of one member record set (`set_identifier`
    /// non-empty, `routing` holding that one member): `weight=N`,
    /// `failover=PRIMARY|SECONDARY` or `region=R`; empty otherwise.
    pub fn policy_key(&self) -> String {
        let Some(routing) = self.routing.as_ref().filter(|_| !self.set_identifier.is_empty()) else {
            return String::new();
        };
        let Some(member) = routing.members.first() else {
            return String::new();
        };
        match routing.policy {
            RoutingPolicy::Weighted => format!("weight={}", member.weight.unwrap_or(0)),
            RoutingPolicy::Failover => format!("failover={}", member.failover.as_deref().unwrap_or("PRIMARY")),
            RoutingPolicy::Nearest => match &member.geo {
                Some(location) => format!("geo={location}"),
                None => format!("region={}", member.aws_region.as_deref().unwrap_or_default()),
            },
            RoutingPolicy::All => String::new(),
        }
    }
}

/// The members of a routed RRset: one per set identifier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RoutedSet {
    /// `Weighted`, `Failover` or `Nearest` (never `All`).
    pub policy: RoutingPolicy,
    /// Sorted by set identifier.
    pub members: Vec<RoutedMember>,
    /// `Nearest`: the region order after the client's own.
    pub fallback: Vec<String>,
    /// `Nearest`: the Domain's GeoIP table, (`country:DE` or
    /// `continent:EU`, region), for providers that route by location
    /// (Route53 geolocation record sets).
    pub locations: Vec<(String, String)>,
}

/// One set identifier's share of a routed RRset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RoutedMember {
    /// The endpoint's `setIdentifier` (the cluster, for fedns's own).
    pub set_identifier: String,
    /// Targets, canonical, sorted.
    pub targets: Vec<String>,
    /// `aws/weight` (`Weighted`).
    pub weight: Option<u32>,
    /// `aws/failover`: `PRIMARY` or `SECONDARY` (`Failover`).
    pub failover: Option<String>,
    /// The region (`Nearest`): `fedns/nearest-region`, else `aws/region`.
    pub region: Option<String>,
    /// `aws/region` as given (Route53 latency records).
    pub aws_region: Option<String>,
    /// Every providerSpecific property of the endpoint.
    pub provider_specific: Vec<(String, String)>,
    /// A geolocation record set's location (`country:DE`, `continent:EU`,
    /// `country:*` for the default), set by providers that expand
    /// `Nearest` that way (Route53); None otherwise.
    pub geo: Option<String>,
}

/// The routing facts one endpoint carries, before merging.
#[derive(Debug, Clone)]
struct EndpointRouting {
    policy: RoutingPolicy,
    member: RoutedMember,
    fallback: Vec<String>,
}

/// Reads an endpoint's routing properties: `None` when it carries no
/// policy (no set identifier, or none of the properties fedns routes by);
/// `Err` with a reason when a value is invalid.
fn endpoint_routing(endpoint: &fedns_api::Endpoint) -> Option<Result<EndpointRouting, String>> {
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
    }))
}

/// One zone as desired.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredZone {
    /// `namespace/name` of the Domain.
    pub domain: String,
    /// The zone, with the RRsets as hickory records.
    pub content: ZoneContent,
    /// The RRsets in provider-neutral form, sorted by (name, type).
    pub rrsets: Vec<DesiredRRset>,
    /// `spec.transfer.tsigKeys`: the embedded sink resolves them (from
    /// Secrets, or `--tsig-key-file`) into `content.transfer.keys`.
    pub transfer_keys: Vec<TsigKeyReference>,
}

/// The whole desired state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DesiredZones {
    /// One per servable Domain, sorted by apex.
    pub zones: Vec<DesiredZone>,
    /// Skipped endpoint data, sorted.
    pub problems: Vec<EndpointProblem>,
    /// Domains not served.
    pub domain_problems: Vec<DomainProblem>,
    /// Domains served, with parts of their client table left out
    /// (`spec.clientRegions`, `spec.geoRegions`).
    pub client_region_problems: Vec<DomainProblem>,
}

impl DesiredZones {
    /// The zone contents, for the embedded DNS server.
    pub fn contents(&self) -> Vec<ZoneContent> {
        self.zones.iter().map(|z| z.content.clone()).collect()
    }

    /// Problems of one DNSEndpoint.
    pub fn problems_of<'a>(&'a self, namespace: &'a str, name: &'a str) -> impl Iterator<Item = &'a EndpointProblem> {
        self.problems
            .iter()
            .filter(move |p| p.namespace == namespace && p.name == name)
    }
}

fn object_key(meta: &fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

fn to_name(normalised: &str) -> Option<Name> {
    Name::from_ascii(format!("{normalised}.")).ok()
}

fn clamp_u32(v: i64, min: u32) -> u32 {
    u32::try_from(v).unwrap_or(if v < 0 { min } else { u32::MAX }).max(min)
}

/// Builds the zone of one Domain (no records yet).
/// The apex of the zone `domain` serves, as [`DesiredZone`] contents render
/// it (`example.com.`: lower case, trailing dot); None when `spec.domain`
/// is not a valid host name (such a Domain serves no zone).
pub fn zone_apex(domain: &Domain) -> Option<String> {
    names::normalize_hostname(&domain.spec.domain)
        .ok()
        .map(|apex| format!("{apex}."))
}

fn zone_of(domain: &Domain) -> Result<(String, ZoneContent), String> {
    let apex = names::normalize_hostname(&domain.spec.domain).map_err(|e| format!("spec.domain: {e}"))?;
    let apex_name = to_name(&apex).ok_or_else(|| format!("spec.domain {apex:?} is not a DNS name"))?;
    let mut zone = ZoneContent::new(apex_name);
    let mut servers = Vec::new();
    for ns in &domain.spec.name_servers {
        let ns = names::normalize_hostname(ns).map_err(|e| format!("spec.nameServers: {e}"))?;
        servers.push(to_name(&ns).ok_or_else(|| format!("spec.nameServers: {ns:?} is not a DNS name"))?);
    }
    if !servers.is_empty() {
        zone.soa.mname = servers[0].clone();
        zone.name_servers = servers;
    }
    if let Some(hostmaster) = &domain.spec.hostmaster {
        let rname = names::normalize_hostname(hostmaster).map_err(|e| format!("spec.hostmaster: {e}"))?;
        zone.soa.rname = to_name(&rname).ok_or_else(|| format!("spec.hostmaster {rname:?} is not a DNS name"))?;
    }
    let soa = &domain.spec.soa;
    zone.soa = SoaFields {
        ttl: clamp_u32(soa.ttl, 1),
        refresh: clamp_u32(soa.refresh, 1),
        retry: clamp_u32(soa.retry, 1),
        expire: clamp_u32(soa.expire, 1),
        minimum: clamp_u32(soa.minimum, 1),
        ..zone.soa
    };
    if let Some(transfer) = &domain.spec.transfer {
        for cidr in &transfer.allow {
            let net = cidr
                .parse::<ipnet::IpNet>()
                .or_else(|_| cidr.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("spec.transfer.allow: {cidr:?} is not a network in CIDR notation"))?;
            zone.transfer.allow.push(net.trunc());
        }
        for target in &transfer.notify {
            let addr = target
                .parse::<std::net::SocketAddr>()
                .map_err(|_| format!("spec.transfer.notify: {target:?} is not address:port"))?;
            zone.transfer.notify.push(addr);
        }
    }
    Ok((apex, zone))
}

/// The Domain's client table for `Nearest` names; problems (invalid
/// networks, one network given for two regions) are returned as lines and
/// the offending entry is left out, the rest kept.
pub fn client_regions_of(domain: &Domain) -> (fedns_dnsserver::ClientRegions, Vec<String>) {
    let mut out = fedns_dnsserver::ClientRegions::default();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<ipnet::IpNet, String> = BTreeMap::new();
    for entry in &domain.spec.client_regions {
        let Ok(net) = entry.cidr.parse::<ipnet::IpNet>() else {
            problems.push(format!(
                "spec.clientRegions: {:?} is not a network in CIDR notation; left out",
                entry.cidr
            ));
            continue;
        };
        let net = net.trunc();
        match seen.get(&net) {
            Some(region) if *region != entry.region => {
                problems.push(format!(
                    "spec.clientRegions: {net} is given for regions {region} and {}; {region} (the first) is used",
                    entry.region
                ));
                continue;
            }
            Some(_) => continue,
            None => {
                seen.insert(net, entry.region.clone());
            }
        }
        out.networks.push((net, entry.region.clone()));
    }
    let mut countries: BTreeMap<String, String> = BTreeMap::new();
    let mut continents: BTreeMap<String, String> = BTreeMap::new();
    for geo in &domain.spec.geo_regions {
        for (codes, map, what, list) in [
            (&geo.countries, &mut countries, "country", &mut out.countries),
            (&geo.continents, &mut continents, "continent", &mut out.continents),
        ] {
            for code in codes {
                let code = code.trim().to_ascii_uppercase();
                if code.len() != 2 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
                    problems.push(format!(
                        "spec.geoRegions: {what} code {code:?} is not two letters; left out"
                    ));
                    continue;
                }
                match map.get(&code) {
                    Some(region) if *region != geo.region => problems.push(format!(
                        "spec.geoRegions: {what} {code} is given for regions {region} and {}; {region} (the first) is used",
                        geo.region
                    )),
                    Some(_) => {}
                    None => {
                        map.insert(code.clone(), geo.region.clone());
                        list.push((code, geo.region.clone()));
                    }
                }
            }
        }
    }
    (out, problems)
}

/// Parses one target of `rtype` into RDATA.
///
/// # Errors
/// A one-line reason naming the target.
pub fn parse_target(rtype: RecordType, target: &str) -> Result<RData, String> {
    let host = |s: &str| -> Result<Name, String> {
        let n = names::normalize_hostname(s).map_err(|e| e.to_string())?;
        to_name(&n).ok_or_else(|| format!("{s:?} is not a DNS name"))
    };
    let number = |s: Option<&str>, what: &str| -> Result<u16, String> {
        s.ok_or_else(|| format!("missing {what}"))?
            .parse::<u16>()
            .map_err(|_| format!("{what} must be 0..65535"))
    };
    let fields: Vec<&str> = target.split_whitespace().collect();
    let result = match rtype {
        RecordType::A => target
            .parse::<Ipv4Addr>()
            .map(|ip| RData::A(ip.into()))
            .map_err(|_| "not an IPv4 address".to_owned()),
        RecordType::AAAA => target
            .parse::<Ipv6Addr>()
            .map(|ip| RData::AAAA(ip.into()))
            .map_err(|_| "not an IPv6 address".to_owned()),
        RecordType::CNAME => host(target).map(|n| RData::CNAME(rdata::CNAME(n))),
        RecordType::NS => host(target).map(|n| RData::NS(rdata::NS(n))),
        RecordType::PTR => host(target).map(|n| RData::PTR(rdata::PTR(n))),
        RecordType::TXT => crate::plan::txt::strings_of_target(target)
            .map(|strings| RData::TXT(TXT::from_bytes(strings.iter().map(Vec::as_slice).collect()))),
        RecordType::MX => match fields.as_slice() {
            [pref, exchange] => Ok(RData::MX(MX::new(number(Some(pref), "preference")?, host(exchange)?))),
            _ => Err("MX target must be \"<preference> <host>\"".to_owned()),
        },
        RecordType::SRV => match fields.as_slice() {
            [prio, weight, port, host_name] => Ok(RData::SRV(SRV::new(
                number(Some(prio), "priority")?,
                number(Some(weight), "weight")?,
                number(Some(port), "port")?,
                host(host_name)?,
            ))),
            _ => Err("SRV target must be \"<priority> <weight> <port> <host>\"".to_owned()),
        },
        RecordType::CAA => RData::try_from_str(fedns_dnsserver::hickory_proto::rr::RecordType::CAA, target)
            .map_err(|e| format!("not a CAA value: {e}")),
    };
    result.map_err(|e| format!("{} target {target:?}: {e}", rtype))
}

/// The presentation form providers publish: addresses as Rust prints
/// them (IPv6 compressed, RFC 5952), names without the trailing dot, TXT
/// as quoted character-strings ([`crate::plan::txt::presentation`]).
pub fn canonical_target(rdata: &RData) -> String {
    let trim = |n: &Name| n.to_ascii().trim_end_matches('.').to_owned();
    match rdata {
        RData::A(a) => a.0.to_string(),
        RData::AAAA(a) => a.0.to_string(),
        RData::CNAME(n) => trim(&n.0),
        RData::NS(n) => trim(&n.0),
        RData::PTR(n) => trim(&n.0),
        RData::MX(mx) => format!("{} {}", mx.preference, trim(&mx.exchange)),
        RData::SRV(srv) => format!("{} {} {} {}", srv.priority, srv.weight, srv.port, trim(&srv.target)),
        RData::TXT(txt) => crate::plan::txt::presentation(&txt.txt_data),
        other => other.to_string(),
    }
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
            if let Some(admission) = admissions.get(&apex) {
                if let Err(why) = admission.admits(&namespace, namespaces) {
                    out.problems.push(problem_of(
                        ProblemKind::NotAllowed,
                        &owner,
                        format!("not published: {why}"),
                    ));
                    continue;
                }
                if let Some(owning) = admission.service_namespace(&owner, &apex) {
                    if owning != namespace {
                        out.problems.push(problem_of(
                            ProblemKind::NotAllowed,
                            &owner,
                            format!("a service name of namespace {owning} can only be published from namespace {owning}; not published"),
                        ));
                        continue;
                    }
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
            let ttl = endpoint.record_ttl.map_or(DEFAULT_TTL, |t| clamp_u32(t, 1));
            let mut parsed = Vec::new();
            let mut targets = Vec::new();
            for target in &endpoint.targets {
                match parse_target(endpoint.record_type, target) {
                    Ok(rdata) => {
                        parsed.push(rdata);
                        targets.push(target.clone());
                    }
                    Err(e) => out.problems.push(problem(&owner, e)),
                }
            }
            if parsed.is_empty() {
                continue;
            }
            let key = (apex.clone(), owner.clone());
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
            entry.0.targets.extend(targets);
            entry.0.sources.insert(source.clone());
            entry.1.extend(parsed);
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
            let mut unique: Vec<(String, RData)> = rdatas.iter().map(|r| (canonical_target(r), r.clone())).collect();
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
            set.targets = unique.iter().map(|u| u.0.clone()).collect();
            for (_, rdata) in unique {
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
        });
    }
    out.problems.sort();
    out.problems.dedup();
    out
}

/// The GeoIP part of a zone's client table as (`country:DE` or
/// `continent:EU`, region).
fn locations_of(regions: &fedns_dnsserver::ClientRegions) -> Vec<(String, String)> {
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

/// The embedded server's routed names (`Weighted`, `Nearest`) of one
/// zone's RRsets: one variant per set identifier with its A and AAAA
/// records. `Failover` needs none: its RRsets already hold the active role.
fn routed_names(rrsets: &[DesiredRRset]) -> Vec<fedns_dnsserver::RoutedName> {
    use fedns_dnsserver::{RoutedName, RoutedVariant, RoutingPolicy as Served};
    let mut by_name: BTreeMap<&str, Vec<&DesiredRRset>> = BTreeMap::new();
    for set in rrsets {
        if set
            .routing
            .as_ref()
            .is_some_and(|r| r.policy != RoutingPolicy::Failover)
        {
            by_name.entry(&set.name).or_default().push(set);
        }
    }
    let mut out = Vec::new();
    for (name, sets) in by_name {
        let Some(owner) = to_name(name) else { continue };
        let Some(first) = sets[0].routing.as_ref() else {
            continue;
        };
        let policy = match first.policy {
            RoutingPolicy::Weighted => Served::Weighted,
            _ => Served::Nearest {
                fallback: first.fallback.clone(),
            },
        };
        let mut variants: BTreeMap<&str, RoutedVariant> = BTreeMap::new();
        for set in &sets {
            let Some(routing) = &set.routing else { continue };
            for member in &routing.members {
                let variant = variants.entry(&member.set_identifier).or_insert_with(|| RoutedVariant {
                    id: member.set_identifier.clone(),
                    weight: member.weight.unwrap_or(0),
                    region: member.region.clone(),
                    records: Vec::new(),
                });
                for target in &member.targets {
                    if let Ok(rdata) = parse_target(set.record_type, target) {
                        variant.records.push(Record::from_rdata(owner.clone(), set.ttl, rdata));
                    }
                }
            }
        }
        out.push(RoutedName {
            name: owner,
            policy,
            variants: variants.into_values().collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::{DNSEndpointSpec, DomainSpec, Endpoint};
    use fedns_dnsserver::hickory_proto::rr::RecordType as WireType;

    fn domain(name: &str, zone: &str) -> Domain {
        let mut d = Domain::new(
            name,
            DomainSpec {
                domain: zone.into(),
                name_servers: vec![format!("ns1.{zone}")],
                hostmaster: None,
                soa: Default::default(),
                allowed_namespaces: None,
                transfer: None,
                client_regions: vec![],
                geo_regions: vec![],
            },
        );
        d.metadata.namespace = Some("fedns-system".into());
        d
    }

    fn ep(dns_name: &str, rtype: RecordType, targets: &[&str], ttl: Option<i64>) -> Endpoint {
        Endpoint {
            dns_name: dns_name.into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            record_type: rtype,
            set_identifier: String::new(),
            record_ttl: ttl,
            labels: Default::default(),
            provider_specific: vec![],
        }
    }

    fn endpoints(name: &str, eps: Vec<Endpoint>) -> DNSEndpoint {
        let mut d = DNSEndpoint::new(name, DNSEndpointSpec { endpoints: eps });
        d.metadata.namespace = Some("ns".into());
        d
    }

    fn rrset<'a>(desired: &'a DesiredZones, name: &str, rtype: RecordType) -> Option<&'a DesiredRRset> {
        desired
            .zones
            .iter()
            .flat_map(|z| &z.rrsets)
            .find(|r| r.name == name && r.record_type == rtype)
    }

    #[test]
    fn merges_targets_by_name_and_type() {
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    ep(
                        "n.example.com",
                        RecordType::A,
                        &["203.0.113.2", "203.0.113.1"],
                        Some(60),
                    ),
                    ep(
                        "N.Example.COM.",
                        RecordType::A,
                        &["203.0.113.1", "198.51.100.1"],
                        Some(30),
                    ),
                ],
            )],
        );
        assert!(desired.problems.is_empty(), "{:?}", desired.problems);
        let set = rrset(&desired, "n.example.com", RecordType::A).unwrap();
        assert_eq!(set.targets, ["198.51.100.1", "203.0.113.1", "203.0.113.2"]);
        assert_eq!(set.ttl, 30, "smallest TTL wins");
        assert_eq!(set.sources.len(), 1);
        let records = &desired.zones[0].content.records;
        assert_eq!(records.iter().filter(|r| r.record_type() == WireType::A).count(), 3);
    }

    /// A DNSEndpoint in `namespace`, created at `created` (RFC 3339; None:
    /// no timestamp, as in manifests).
    fn claim(namespace: &str, name: &str, created: Option<&str>, eps: Vec<Endpoint>) -> DNSEndpoint {
        let mut d = endpoints(name, eps);
        d.metadata.namespace = Some(namespace.into());
        d.metadata.creation_timestamp = created
            .map(|t| fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t.parse().expect("RFC 3339")));
        d
    }

    fn kinds(desired: &DesiredZones, namespace: &str, name: &str) -> Vec<(ProblemKind, String)> {
        desired
            .problems_of(namespace, name)
            .map(|p| (p.kind, p.message.clone()))
            .collect()
    }

    #[test]
    fn one_name_one_owner_the_oldest_claim_holds() {
        let web = "web.shop.myfed.svc.example.com";
        let holder = claim(
            "shop",
            "service-web",
            Some("2026-01-01T00:00:00Z"),
            vec![ep(web, RecordType::A, &["203.0.113.10"], Some(30))],
        );
        // Another namespace names the same name, with a lower TTL: refused
        // twice over (a service name of `shop`; and the name is held).
        let hijack = claim(
            "evil",
            "grab",
            Some("2026-02-01T00:00:00Z"),
            vec![
                ep(web, RecordType::A, &["192.0.2.66"], Some(5)),
                ep("www.example.com", RecordType::A, &["192.0.2.67"], None),
            ],
        );
        // A newer object in `shop` itself: the name is held.
        let late = claim(
            "shop",
            "late",
            Some("2026-03-01T00:00:00Z"),
            vec![ep(web, RecordType::AAAA, &["2001:db8::66"], None)],
        );
        let zones = [domain("myfed", "example.com")];
        let desired = desired_zones(&zones, &[late.clone(), hijack.clone(), holder.clone()]);
        let set = rrset(&desired, web, RecordType::A).unwrap();
        assert_eq!(
            (set.targets.as_slice(), set.ttl),
            (&["203.0.113.10".to_owned()][..], 30)
        );
        assert!(
            rrset(&desired, web, RecordType::AAAA).is_none(),
            "the newer claim is not merged"
        );
        assert!(
            rrset(&desired, "www.example.com", RecordType::A).is_some(),
            "an unclaimed name is fine"
        );
        let evil = kinds(&desired, "evil", "grab");
        assert_eq!(evil.len(), 1, "{evil:?}");
        assert_eq!(evil[0].0, ProblemKind::NotAllowed);
        assert!(evil[0].1.contains("namespace shop"), "{evil:?}");
        let late_problems = kinds(&desired, "shop", "late");
        assert_eq!(late_problems[0].0, ProblemKind::Conflict);
        assert!(late_problems[0].1.contains("shop/service-web"), "{late_problems:?}");
        assert!(kinds(&desired, "shop", "service-web").is_empty());

        // The holder goes: the next oldest claim takes over.
        let desired = desired_zones(&zones, &[late, hijack]);
        assert_eq!(
            rrset(&desired, web, RecordType::AAAA).unwrap().targets,
            ["2001:db8::66"]
        );
        assert!(
            rrset(&desired, web, RecordType::A).is_none(),
            "evil still may not publish shop's name"
        );
    }

    #[test]
    fn ties_and_manifests_go_by_namespace_and_name() {
        let same_time = Some("2026-01-01T00:00:00Z");
        let a = claim(
            "b-ns",
            "a",
            same_time,
            vec![ep("x.example.com", RecordType::A, &["203.0.113.1"], None)],
        );
        let b = claim(
            "a-ns",
            "z",
            same_time,
            vec![ep("x.example.com", RecordType::A, &["203.0.113.2"], None)],
        );
        let zones = [domain("myfed", "example.com")];
        let desired = desired_zones(&zones, &[a.clone(), b.clone()]);
        assert_eq!(
            rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
            ["203.0.113.2"]
        );
        assert_eq!(kinds(&desired, "b-ns", "a")[0].0, ProblemKind::Conflict);
        // No timestamps at all (manifests): namespace/name decides too.
        let untimed = |d: &DNSEndpoint| {
            let mut d = d.clone();
            d.metadata.creation_timestamp = None;
            d
        };
        let desired = desired_zones(&zones, &[untimed(&a), untimed(&b)]);
        assert_eq!(
            rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
            ["203.0.113.2"]
        );
        // An object with a timestamp is older than one without.
        let desired = desired_zones(&zones, &[a, untimed(&b)]);
        assert_eq!(
            rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
            ["203.0.113.1"]
        );
    }

    #[test]
    fn allowed_namespaces_limit_who_publishes_into_a_zone() {
        use fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
        use fedns_api::{AllowedNamespaces, NamespacesFrom};
        let mut zone = domain("myfed", "example.com");
        zone.spec.allowed_namespaces = Some(AllowedNamespaces {
            from: NamespacesFrom::Selector,
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("fedns.io/publish".to_owned(), "true".to_owned())])),
                ..Default::default()
            }),
        });
        let team = |ns: &str| {
            claim(
                ns,
                "e",
                None,
                vec![ep(&format!("{ns}.example.com"), RecordType::A, &["203.0.113.1"], None)],
            )
        };
        let labels: NamespaceLabels = BTreeMap::from([(
            "team-a".to_owned(),
            BTreeMap::from([("fedns.io/publish".to_owned(), "true".to_owned())]),
        )]);
        let desired = desired_zones_with(&[zone.clone()], &[team("team-a"), team("team-b")], &labels);
        assert!(rrset(&desired, "team-a.example.com", RecordType::A).is_some());
        assert!(rrset(&desired, "team-b.example.com", RecordType::A).is_none());
        assert_eq!(kinds(&desired, "team-b", "e")[0].0, ProblemKind::NotAllowed);
        zone.spec.allowed_namespaces = Some(AllowedNamespaces {
            from: NamespacesFrom::Same,
            selector: None,
        });
        let desired = desired_zones(&[zone], &[team("team-a"), team("fedns-system")]);
        assert!(rrset(&desired, "team-a.example.com", RecordType::A).is_none());
        assert!(rrset(&desired, "fedns-system.example.com", RecordType::A).is_some());
    }

    #[test]
    fn addresses_beat_cname() {
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    ep("n.example.com", RecordType::CNAME, &["other.example.com"], None),
                    ep("n.example.com", RecordType::AAAA, &["2001:db8::1"], None),
                ],
            )],
        );
        assert!(rrset(&desired, "n.example.com", RecordType::CNAME).is_none());
        assert_eq!(
            rrset(&desired, "n.example.com", RecordType::AAAA).unwrap().targets,
            ["2001:db8::1"]
        );
        assert_eq!(desired.problems.len(), 1);
        assert!(
            desired.problems[0].message.contains("CNAME dropped"),
            "{:?}",
            desired.problems
        );
    }

    #[test]
    fn invalid_targets_are_skipped_and_reported_siblings_kept() {
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    ep(
                        "n.example.com",
                        RecordType::A,
                        &["203.0.113.1", "not-an-ip", "2001:db8::1"],
                        None,
                    ),
                    ep("v6.example.com", RecordType::AAAA, &["203.0.113.1"], None),
                    ep("c.example.com", RecordType::CNAME, &["bad_name.example.com"], None),
                    ep("s.example.com", RecordType::SRV, &["0 5 80"], None),
                ],
            )],
        );
        assert_eq!(
            rrset(&desired, "n.example.com", RecordType::A).unwrap().targets,
            ["203.0.113.1"]
        );
        assert!(rrset(&desired, "v6.example.com", RecordType::AAAA).is_none());
        let messages: Vec<&str> = desired.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 5, "{messages:#?}");
        assert!(messages
            .iter()
            .any(|m| m.contains("\"not-an-ip\"") && m.contains("IPv4")));
    }

    #[test]
    fn names_outside_every_domain_are_reported() {
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![ep("n.example.org", RecordType::A, &["203.0.113.1"], None)],
            )],
        );
        assert_eq!(desired.zones[0].rrsets.len(), 0);
        assert_eq!(desired.problems[0].dns_name, "n.example.org");
        assert!(desired.problems[0].message.contains("outside every Domain"));
        assert_eq!(desired.problems_of("ns", "a").count(), 1);
    }

    #[test]
    fn the_most_specific_domain_wins_and_duplicates_are_reported() {
        let desired = desired_zones(
            &[
                domain("a", "example.com"),
                domain("b", "sub.example.com"),
                domain("c", "example.com"),
            ],
            &[endpoints(
                "x",
                vec![ep("n.sub.example.com", RecordType::A, &["203.0.113.1"], None)],
            )],
        );
        assert_eq!(desired.zones.len(), 2);
        let sub = desired.zones.iter().find(|z| z.domain == "fedns-system/b").unwrap();
        assert_eq!(sub.rrsets.len(), 1);
        assert_eq!(desired.domain_problems.len(), 1);
        assert!(desired.domain_problems[0].message.contains("already served"));
    }

    #[test]
    fn parses_every_supported_type() {
        for (rtype, target) in [
            (RecordType::A, "192.0.2.1"),
            (RecordType::AAAA, "2001:db8::1"),
            (RecordType::CNAME, "www.example.com"),
            (RecordType::NS, "ns.example.com."),
            (RecordType::PTR, "host.example.com"),
            (RecordType::TXT, "heritage=external-dns,external-dns/owner=fedns"),
            (RecordType::MX, "10 mail.example.com"),
            (RecordType::SRV, "0 50 443 web.example.com"),
            (RecordType::CAA, "0 issue \"letsencrypt.org\""),
        ] {
            parse_target(rtype, target).unwrap_or_else(|e| panic!("{rtype} {target}: {e}"));
        }
        let long = "x".repeat(600);
        match parse_target(RecordType::TXT, &long).unwrap() {
            RData::TXT(txt) => assert_eq!(txt.txt_data.len(), 3),
            other => panic!("{other:?}"),
        }
    }

    fn routed(dns_name: &str, rtype: RecordType, set: &str, targets: &[&str], props: &[(&str, &str)]) -> Endpoint {
        let mut e = ep(dns_name, rtype, targets, Some(30));
        e.set_identifier = set.into();
        e.provider_specific = props
            .iter()
            .map(|(n, v)| fedns_api::ProviderSpecificProperty {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect();
        e
    }

    #[test]
    fn weighted_endpoints_become_a_routed_name_and_a_union() {
        let n = "w.example.com";
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_WEIGHT, "1")]),
                    routed(n, RecordType::AAAA, "east", &["2001:db8::1"], &[(AWS_WEIGHT, "1")]),
                    routed(n, RecordType::A, "west", &["203.0.113.2"], &[(AWS_WEIGHT, "3")]),
                ],
            )],
        );
        assert!(desired.problems.is_empty(), "{:?}", desired.problems);
        let a = rrset(&desired, n, RecordType::A).unwrap();
        assert_eq!(a.targets, ["203.0.113.1", "203.0.113.2"], "the All answer is the union");
        let routing = a.routing.as_ref().unwrap();
        assert_eq!(routing.policy, RoutingPolicy::Weighted);
        assert_eq!(routing.members.len(), 2);
        assert_eq!(routing.members[1].weight, Some(3));
        let zone = &desired.zones[0].content;
        assert_eq!(zone.routed.len(), 1);
        let variants = &zone.routed[0].variants;
        assert_eq!(variants.len(), 2);
        assert_eq!(variants[0].id, "east");
        assert_eq!(variants[0].records.len(), 2, "A and AAAA of east");
    }

    #[test]
    fn failover_publishes_the_active_role() {
        let n = "f.example.com";
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_FAILOVER, "PRIMARY")]),
                    routed(
                        n,
                        RecordType::A,
                        "west",
                        &["203.0.113.2"],
                        &[(AWS_FAILOVER, "SECONDARY")],
                    ),
                ],
            )],
        );
        assert!(desired.problems.is_empty(), "{:?}", desired.problems);
        let a = rrset(&desired, n, RecordType::A).unwrap();
        assert_eq!(a.targets, ["203.0.113.1"]);
        assert!(desired.zones[0].content.routed.is_empty());
        // Only the secondary left (the primary is unhealthy): it answers.
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![routed(
                    n,
                    RecordType::A,
                    "west",
                    &["203.0.113.2"],
                    &[(AWS_FAILOVER, "SECONDARY")],
                )],
            )],
        );
        assert_eq!(rrset(&desired, n, RecordType::A).unwrap().targets, ["203.0.113.2"]);
    }

    #[test]
    fn nearest_reads_region_and_fallback() {
        let n = "n.example.com";
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    routed(
                        n,
                        RecordType::A,
                        "east",
                        &["203.0.113.1"],
                        &[
                            (FEDNS_NEAREST_REGION, "us-east-1"),
                            (FEDNS_NEAREST_FALLBACK, "us-east-1, eu"),
                        ],
                    ),
                    routed(n, RecordType::A, "lab", &["203.0.113.9"], &[(FEDNS_NEAREST_REGION, "")]),
                ],
            )],
        );
        assert!(desired.problems.is_empty(), "{:?}", desired.problems);
        let routed = &desired.zones[0].content.routed[0];
        assert_eq!(
            routed.policy,
            fedns_dnsserver::RoutingPolicy::Nearest {
                fallback: vec!["us-east-1".into(), "eu".into()]
            }
        );
        assert_eq!(routed.variants[0].region.as_deref(), Some("us-east-1"));
        assert_eq!(routed.variants[1].region, None);
    }

    #[test]
    fn bad_or_mixed_routing_is_reported_and_answered_as_all() {
        let n = "m.example.com";
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![
                    routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_WEIGHT, "-1")]),
                    routed(n, RecordType::A, "west", &["203.0.113.2"], &[(AWS_WEIGHT, "2")]),
                    routed(
                        "x.example.com",
                        RecordType::A,
                        "a",
                        &["203.0.113.3"],
                        &[(AWS_WEIGHT, "1")],
                    ),
                    routed(
                        "x.example.com",
                        RecordType::A,
                        "b",
                        &["203.0.113.4"],
                        &[(AWS_FAILOVER, "PRIMARY")],
                    ),
                    routed(
                        "y.example.com",
                        RecordType::A,
                        "a",
                        &["203.0.113.5"],
                        &[(AWS_FAILOVER, "MAYBE")],
                    ),
                ],
            )],
        );
        let messages: Vec<&str> = desired.problems.iter().map(|p| p.message.as_str()).collect();
        assert!(
            messages.iter().any(|m| m.contains("\"-1\" is not a whole number")),
            "{messages:#?}"
        );
        assert!(messages.iter().any(|m| m.contains("mix policies")), "{messages:#?}");
        assert!(
            messages.iter().any(|m| m.contains("PRIMARY or SECONDARY")),
            "{messages:#?}"
        );
        // Nothing is lost: every address is served to everyone.
        assert_eq!(
            rrset(&desired, n, RecordType::A).unwrap().targets,
            ["203.0.113.1", "203.0.113.2"]
        );
        assert!(rrset(&desired, n, RecordType::A).unwrap().routing.is_none());
        assert_eq!(
            rrset(&desired, "x.example.com", RecordType::A).unwrap().targets.len(),
            2
        );
        assert!(desired.zones[0].content.routed.is_empty());
    }

    #[test]
    fn client_table_problems_are_reported_and_the_rest_kept() {
        let mut d = domain("myfed", "example.com");
        d.spec.client_regions = vec![
            fedns_api::ClientRegion {
                cidr: "10.0.0.0/8".into(),
                region: "eu".into(),
            },
            fedns_api::ClientRegion {
                cidr: "10.0.0.0/8".into(),
                region: "us".into(),
            },
            fedns_api::ClientRegion {
                cidr: "300.0.0.0/8".into(),
                region: "us".into(),
            },
            fedns_api::ClientRegion {
                cidr: "192.0.2.0/24".into(),
                region: "us".into(),
            },
        ];
        let desired = desired_zones(&[d], &[]);
        assert_eq!(desired.zones.len(), 1, "the zone is still served");
        assert_eq!(desired.client_region_problems.len(), 1);
        let message = &desired.client_region_problems[0].message;
        assert!(
            message.contains("10.0.0.0/8 is given for regions eu and us"),
            "{message}"
        );
        assert!(message.contains("\"300.0.0.0/8\" is not a network"), "{message}");
        assert_eq!(desired.zones[0].content.client_regions.networks.len(), 2);
    }
}
