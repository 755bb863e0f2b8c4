//! What a pod in one member cluster gets for `S.N.F.svc.<cluster-domain>`:
//! computed as one zone per federation (Domain `F`), the discovery zone
//! `F.svc.<cluster-domain>`, from the host's view (Domains,
//! ServiceDNSRecords, the member's MemberCluster) and the member's own
//! (Services, EndpointSlice readiness, the zone of the node it runs on).
//!
//! kubefed v1's rules (kube-dns's federation support):
//! * the member's own Service `N/S` has a ready endpoint and the member is
//!   not cordoned: the owner holds A/AAAA of its ClusterIP(s) (a headless
//!   Service: its ready endpoint addresses, as kube-dns answered headless
//!   Services);
//! * otherwise: a CNAME to the federated name of the member's zone,
//!   `S.N.F.svc.<zone>.<region>.<domain>` (the region name when the member
//!   has no zone, the global name when it has no region); the DNS server
//!   follows it into the federation zone (zone → region → global, with
//!   health, policies and fail-open), so the answer carries the whole chain.
//!
//! `externalName` replaces `S` as for the public names; `dnsPrefix` gives
//! `<dnsPrefix>.F.svc.<cluster-domain>`, a CNAME to the discovery owner.
//! Names with no record get NXDOMAIN and missing types NODATA from the
//! server's answer path, with the zone's SOA (RFC 2308).
//!
//! Pending names ([`compute_known`], the replica's path): a fallback CNAME
//! is only as good as the federated name it points at, which the
//! controller publishes in the record's DNSEndpoint (`N/service-S`). Until
//! the replica's view holds that DNSEndpoint (or knows the controller
//! wrote none, [`RecordProgress::ObservedWithout`]) and the federation
//! zones it serves hold the chosen target, the name is *pending*: left out
//! of the zone content and listed in [`Computed::pending`], never a CNAME
//! to a name not published. A local answer needs no DNSEndpoint and is
//! never pending.
//!
//! Ownership ([`super::ownership`]), as in the public zones: records of
//! namespaces the Domain's `allowedNamespaces` does not admit are left
//! out; `S.N.F.svc.<cluster-domain>` comes only from namespace `N` (a
//! `dnsPrefix` of another namespace landing on it is refused); of the
//! records claiming one name the oldest holds it, the others are reported.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use fedns_dnsserver::hickory_proto::rr::rdata::{A, AAAA, CNAME};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
use fedns_dnsserver::{SoaFields, ZoneContent};

use super::ownership::Ownership;

/// TTL of discovery answers, in seconds: short, since local readiness
/// flips them (CoreDNS's `kubernetes` plugin answers with 5 s too).
pub const DISCOVERY_TTL: u32 = 5;

/// A federation as the discovery zones need it: Domain `metadata.name`
/// (`F`) and `spec.domain` (the public zone).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FederationView {
    /// `F`, the Domain's name.
    pub name: String,
    /// The public zone, e.g. `example.com`.
    pub domain: String,
}

/// A ServiceDNSRecord as the discovery zones need it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct RecordView {
    /// Namespace `N` (of the record and of the Service in every member).
    pub namespace: String,
    /// Service name `S`.
    pub service: String,
    /// `spec.domainRef`: the federation `F`.
    pub domain_ref: String,
    /// `spec.externalName` (replaces `S` in names).
    pub external_name: Option<String>,
    /// `spec.dnsPrefix`.
    pub dns_prefix: Option<String>,
}

/// This member as the host sees it (its MemberCluster).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberView {
    /// Effective region (`status.region`, else `spec.region`).
    pub region: Option<String>,
    /// Effective zones (`status.zones`, else `spec.zones`).
    pub zones: Vec<String>,
    /// `spec.cordoned`.
    pub cordoned: bool,
}

/// The member's own Service `N/S`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalService {
    /// `spec.clusterIPs` (or `spec.clusterIP`), without `None`.
    pub cluster_ips: Vec<IpAddr>,
    /// `clusterIP: None`.
    pub headless: bool,
    /// Addresses of ready endpoints of its EndpointSlices (readiness as
    /// fedns's health reads it: a missing `ready` condition means ready).
    pub ready_addresses: BTreeSet<IpAddr>,
    /// Some EndpointSlice of it has a ready endpoint.
    pub ready: bool,
    /// Ready endpoints over all its EndpointSlices (for `fedns explain`).
    pub ready_endpoints: usize,
}

/// Everything the discovery zones are computed from.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The cluster domain, e.g. `cluster.local`.
    pub cluster_domain: String,
    /// Every federation (Domain) of the host.
    pub federations: Vec<FederationView>,
    /// Every ServiceDNSRecord.
    pub records: Vec<RecordView>,
    /// This member's MemberCluster; None: not known (yet), so no local
    /// answer is trusted beyond what the last state said.
    pub member: Option<MemberView>,
    /// `topology.kubernetes.io/zone` of the node this replica runs on.
    pub node_zone: Option<String>,
    /// The member's Services by (namespace, name).
    pub services: BTreeMap<(String, String), LocalService>,
}

/// What one discovery owner answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The member's own Service: these addresses.
    Local(Vec<IpAddr>),
    /// A CNAME to this federated name, for this reason.
    Fallback {
        /// The zone, region or global name (fully qualified).
        target: String,
        /// Why not local, one phrase.
        reason: String,
    },
    /// No answer yet: the fallback's target is not known to be published
    /// (see [`compute_known`]); the owner is left out of the zone content.
    Pending {
        /// The federated name the fallback would point at (fully qualified).
        target: String,
        /// What is awaited, one phrase.
        reason: String,
    },
}

/// What a ServiceDNSRecord's `status` says of the controller's handling
/// of its current `metadata.generation` (saved with the host-side state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RecordProgress {
    /// No status, or one of an older generation: the controller has not
    /// handled the record as it is (its DNSEndpoint may be missing or old).
    #[default]
    NotObserved,
    /// `status.observedGeneration` is the record's generation: the
    /// controller wrote the DNSEndpoint of this generation (it writes the
    /// DNSEndpoint first, then the status).
    Observed,
    /// Observed, and `Ready=False` says the controller wrote no
    /// DNSEndpoint for it (`DomainNotFound`, `ObjectTooLarge`): known
    /// absent.
    ObservedWithout,
}

/// What the replica's view knows of one record's DNSEndpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointKnowledge {
    /// Not in the (listed) DNSEndpoint cache, and the record's status does
    /// not say there is none: the controller has not written it yet.
    Unknown,
    /// Known absent: the controller handled the record's generation and
    /// wrote no DNSEndpoint ([`RecordProgress::ObservedWithout`]).
    Absent,
    /// In the cache.
    Present {
        /// Its `dnsName`s, lower case, without the trailing dot.
        names: BTreeSet<String>,
        /// It is the DNSEndpoint of the record's generation
        /// ([`RecordProgress::Observed`]).
        current: bool,
    },
}

/// The DNSEndpoint side of [`compute_known`].
pub struct EndpointsView<'a> {
    /// By record `namespace/name`; a record not here is
    /// [`EndpointKnowledge::Unknown`].
    pub records: &'a BTreeMap<String, EndpointKnowledge>,
    /// Whether a CNAME to a federated name (fully qualified, lower case)
    /// leads somewhere now: the server answers the name with an address,
    /// or with a chain leaving the zones it serves.
    pub served: &'a dyn Fn(&str) -> bool,
}

/// A discovery name not answered yet ([`Decision::Pending`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingName {
    /// ServiceDNSRecord `namespace/name`.
    pub record: String,
    /// The discovery zone's apex (`F.svc.<cluster-domain>.`).
    pub zone: String,
    /// What is awaited, one phrase.
    pub reason: String,
    /// What the name would hold without knowing the DNSEndpoints (the
    /// CNAME to the fallback target; for an alias, its CNAME to the
    /// owner), for a name that must go on being answered.
    pub records: Vec<Record>,
}

/// One owner of a discovery zone and its decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerDecision {
    /// ServiceDNSRecord `namespace/name`.
    pub record: String,
    /// Owner name, fully qualified, lower case.
    pub owner: String,
    /// What it answers.
    pub decision: Decision,
}

/// The computed discovery zones.
#[derive(Debug, Clone, Default)]
pub struct Computed {
    /// One zone per federation, `F.svc.<cluster-domain>.`.
    pub zones: Vec<ZoneContent>,
    /// Per record owner (not the `dnsPrefix` aliases), sorted by owner.
    pub decisions: Vec<OwnerDecision>,
    /// The `dnsPrefix` aliases answered: alias → the owner it points at
    /// (both fully qualified, lower case).
    pub aliases: BTreeMap<String, String>,
    /// Names no record answers because a rule refused every claim to them
    /// (not admitted, another namespace's service name), with why.
    pub refused: BTreeMap<String, String>,
    /// Records and names left out, one line each (a name that is no valid
    /// DNS name, a namespace not admitted, a name another namespace or an
    /// older record holds).
    pub problems: Vec<String>,
    /// Names left out of the zones until their answer is known (owners and
    /// their `dnsPrefix` aliases, fully qualified, lower case); only
    /// [`compute_known`] finds any.
    pub pending: BTreeMap<String, PendingName>,
}

impl Computed {
    /// (local, fallback) owner counts; pending owners count in neither.
    pub fn counts(&self) -> (usize, usize) {
        let count = |local: bool| {
            self.decisions
                .iter()
                .filter(|d| match d.decision {
                    Decision::Local(_) => local,
                    Decision::Fallback { .. } => !local,
                    Decision::Pending { .. } => false,
                })
                .count()
        };
        (count(true), count(false))
    }
}

/// The discovery zone apex of federation `federation`:
/// `<federation>.svc.<cluster_domain>.`.
pub fn discovery_apex(federation: &str, cluster_domain: &str) -> String {
    format!(
        "{}.svc.{}.",
        federation.to_ascii_lowercase(),
        cluster_domain.trim_end_matches('.').to_ascii_lowercase()
    )
}

/// The zone this member's fallback goes to: the node's zone when the
/// member has it, else the member's first zone (kube-dns took its node's
/// `topology.kubernetes.io/zone` label the same way).
pub fn chosen_zone<'a>(member: &'a MemberView, node_zone: Option<&'a str>) -> Option<&'a str> {
    match node_zone {
        Some(zone) if member.zones.iter().any(|z| z == zone) => Some(zone),
        _ => member.zones.first().map(String::as_str),
    }
}

/// The federated name a fallback CNAME points at: `P.<zone>.<region>.D`,
/// `P.<region>.D` without a zone, `P.D` without a region (`P` =
/// `S.N.F.svc`, lower case, no trailing dot).
pub fn fallback_target(prefix: &str, domain: &str, member: Option<&MemberView>, node_zone: Option<&str>) -> String {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let region = member.and_then(|m| m.region.as_deref());
    match (region, member.and_then(|m| chosen_zone(m, node_zone))) {
        (Some(region), Some(zone)) => format!("{prefix}.{zone}.{region}.{domain}."),
        (Some(region), None) => format!("{prefix}.{region}.{domain}."),
        _ => format!("{prefix}.{domain}."),
    }
}

/// The federated names a fallback may point at, most specific first:
/// the zone name and the region name when the member has them (see
/// [`fallback_target`]), then the global name.
pub fn fallback_targets(
    prefix: &str,
    domain: &str,
    member: Option<&MemberView>,
    node_zone: Option<&str>,
) -> Vec<String> {
    let first = fallback_target(prefix, domain, member, node_zone);
    let region_only = member.map(|m| MemberView {
        zones: Vec::new(),
        ..m.clone()
    });
    let mut out = vec![first];
    for name in [
        fallback_target(prefix, domain, region_only.as_ref(), None),
        fallback_target(prefix, domain, None, None),
    ] {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Computes the discovery zones from `inputs` with no Domain's admission
/// rule or record age known ([`Ownership::default`]: every namespace
/// admitted, claims ordered by namespace/name); see [`compute_owned`].
pub fn compute(inputs: &Inputs) -> Computed {
    compute_owned(inputs, &Ownership::default())
}

/// Computes the discovery zones from `inputs` under the ownership rules
/// `ownership` ([`super::ownership`]). Never fails: a record whose names
/// are not valid DNS names, or that the rules leave out, is reported in
/// [`Computed::problems`]; a name two records claim goes to the oldest
/// claim, never to the first in sort order. Every fallback target is
/// taken as published (`fedns explain`'s view); the replica answers with
/// [`compute_known`].
pub fn compute_owned(inputs: &Inputs, ownership: &Ownership) -> Computed {
    compute_known(inputs, ownership, None)
}

/// [`compute_owned`], knowing the records' DNSEndpoints (`endpoints`;
/// None: every target taken as published). A record whose answer would be
/// a fallback CNAME gets, by what its DNSEndpoint is:
///
/// * not known ([`EndpointKnowledge::Unknown`]): pending;
/// * present ([`EndpointKnowledge::Present`]): a CNAME to the most specific of the
///   zone, region and global names ([`fallback_targets`]) it holds, once
///   the server answers that name with an address or a chain leaving its
///   zones ([`EndpointsView::served`]); before (the federation zones'
///   publish on its way, or no cluster answering yet, as in the
///   DNSEndpoint a controller writes before it has read its members), and
///   while it holds none of them, pending;
/// * known absent ([`EndpointKnowledge::Absent`]): a CNAME to the first, as without
///   knowledge (the controller publishes nothing for it).
///
/// Pending owners and their `dnsPrefix` aliases are left out of the
/// zones and listed in [`Computed::pending`].
pub fn compute_known(inputs: &Inputs, ownership: &Ownership, endpoints: Option<&EndpointsView<'_>>) -> Computed {
    let mut out = Computed::default();
    let mut federations: Vec<&FederationView> = inputs.federations.iter().collect();
    federations.sort();
    federations.dedup_by(|a, b| a.name == b.name);
    for federation in federations {
        let apex_text = discovery_apex(&federation.name, &inputs.cluster_domain);
        let Ok(apex) = Name::from_ascii(&apex_text) else {
            out.problems.push(format!(
                "Domain {}: {apex_text} is not a valid zone name",
                federation.name
            ));
            continue;
        };
        let mut zone = ZoneContent::new(apex.clone());
        zone.soa = SoaFields {
            ttl: DISCOVERY_TTL,
            minimum: DISCOVERY_TTL,
            ..zone.soa
        };
        zone.follow_cnames_across_zones = true;
        let mut records: Vec<&RecordView> = inputs
            .records
            .iter()
            .filter(|r| r.domain_ref == federation.name)
            .collect();
        // Oldest claim first: the first claim of a name holds it.
        records.sort_by(|a, b| {
            ownership
                .claim_order(&a.namespace, &a.service)
                .cmp(&ownership.claim_order(&b.namespace, &b.service))
                .then_with(|| a.cmp(b))
        });
        records.dedup();
        // Name → the record (`namespace/name`) holding it.
        let mut holders: BTreeMap<String, String> = BTreeMap::new();
        for record in records {
            let id = format!("{}/{}", record.namespace, record.service);
            if let Err(why) = ownership.admits(&federation.name, &record.namespace) {
                let label = record.external_name.as_deref().unwrap_or(&record.service);
                let owner = format!("{label}.{}.{apex_text}", record.namespace).to_ascii_lowercase();
                let problem = format!("ServiceDNSRecord {id}: left out of discovery zone {apex_text}: {why}");
                out.refused.entry(owner).or_insert_with(|| problem.clone());
                out.problems.push(problem);
                continue;
            }
            let (decision, rrs, alias) = match owner_records(inputs, federation, &apex_text, record, endpoints) {
                Ok(built) => built,
                Err(problem) => {
                    out.problems.push(problem);
                    continue;
                }
            };
            if let Some(holder) = holders.get(&decision.owner) {
                out.problems.push(format!(
                    "ServiceDNSRecord {id}: {} is held by ServiceDNSRecord {holder}, whose claim is older; not answered (Conflict)",
                    decision.owner
                ));
                continue;
            }
            holders.insert(decision.owner.clone(), id.clone());
            let owner = decision.owner.clone();
            let pending = match &decision.decision {
                Decision::Pending { reason, .. } => Some(PendingName {
                    record: id.clone(),
                    zone: apex_text.clone(),
                    reason: reason.clone(),
                    records: Vec::new(),
                }),
                _ => None,
            };
            if let Some(pending) = &pending {
                let records = rrs;
                out.pending.insert(
                    owner.clone(),
                    PendingName {
                        records,
                        ..pending.clone()
                    },
                );
            } else {
                zone.records.extend(rrs);
            }
            out.decisions.push(decision);
            let Some((alias_text, alias_record)) = alias else {
                continue;
            };
            let prefix = record.dns_prefix.as_deref().unwrap_or_default();
            let owning = ownership.discovery_namespace(&federation.name, &alias_text, &inputs.cluster_domain);
            let refusal = match owning {
                Some(owning) if owning != record.namespace => Some(format!(
                    "ServiceDNSRecord {id}: dnsPrefix {prefix}: {alias_text} is a service name of namespace {owning}, \
                     which only namespace {owning} can publish; not answered (NotAllowed)"
                )),
                _ if alias_text == owner => Some(format!(
                    "ServiceDNSRecord {id}: dnsPrefix {prefix} names the record's own discovery name; no alias"
                )),
                _ => None,
            };
            if let Some(problem) = refusal {
                out.refused.entry(alias_text).or_insert_with(|| problem.clone());
                out.problems.push(problem);
            } else if let Some(holder) = holders.get(&alias_text) {
                out.problems.push(format!(
                    "ServiceDNSRecord {id}: dnsPrefix {prefix}: {alias_text} is held by ServiceDNSRecord {holder}, \
                     whose claim is older; not answered (Conflict)"
                ));
            } else {
                holders.insert(alias_text.clone(), id);
                // An alias of a pending owner would be a CNAME to a name
                // not in the zone: pending with it.
                match pending {
                    Some(pending) => {
                        let records = vec![alias_record];
                        out.pending
                            .insert(alias_text.clone(), PendingName { records, ..pending });
                    }
                    None => zone.records.push(alias_record),
                }
                out.aliases.insert(alias_text, owner);
            }
        }
        out.refused.retain(|name, _| !holders.contains_key(name));
        out.zones.push(zone);
    }
    out.decisions.sort_by(|a, b| a.owner.cmp(&b.owner));
    out
}

/// A `dnsPrefix` alias: its name (fully qualified, lower case) and its
/// CNAME to the owner.
type Alias = (String, Record);

/// The records of one ServiceDNSRecord's discovery owner, and its
/// `dnsPrefix` alias (name, CNAME record) apart: whether it may be
/// answered is the caller's to decide.
fn owner_records(
    inputs: &Inputs,
    federation: &FederationView,
    apex: &str,
    record: &RecordView,
    endpoints: Option<&EndpointsView<'_>>,
) -> Result<(OwnerDecision, Vec<Record>, Option<Alias>), String> {
    let label = record.external_name.as_deref().unwrap_or(&record.service);
    let id = format!("{}/{}", record.namespace, record.service);
    let owner_text = format!("{label}.{}.{apex}", record.namespace).to_ascii_lowercase();
    let bad = |what: &str, e: &dyn std::fmt::Display| format!("ServiceDNSRecord {id}: {what}: {e}");
    let owner = Name::from_ascii(&owner_text).map_err(|e| bad(&owner_text, &e))?;
    let local = inputs.services.get(&(record.namespace.clone(), record.service.clone()));
    let cordoned = inputs.member.as_ref().is_some_and(|m| m.cordoned);
    let addresses: Vec<IpAddr> = match local {
        Some(s) if s.headless => s.ready_addresses.iter().copied().collect(),
        Some(s) => s.cluster_ips.clone(),
        None => Vec::new(),
    };
    let reason = match local {
        _ if cordoned => Some("this member is cordoned".to_owned()),
        None => Some(format!("this member has no Service {id}")),
        Some(s) if !s.ready => Some(format!("Service {id} has no ready endpoint here")),
        Some(_) if addresses.is_empty() => Some(format!("Service {id} has no ClusterIP here")),
        Some(_) => None,
    };
    let mut rrs = Vec::new();
    let decision = match reason {
        None => {
            for ip in &addresses {
                let rdata = match ip {
                    IpAddr::V4(v4) => RData::A(A(*v4)),
                    IpAddr::V6(v6) => RData::AAAA(AAAA(*v6)),
                };
                rrs.push(Record::from_rdata(owner.clone(), DISCOVERY_TTL, rdata));
            }
            Decision::Local(addresses)
        }
        Some(reason) => {
            let prefix = format!("{label}.{}.{}.svc", record.namespace, federation.name).to_ascii_lowercase();
            let targets = fallback_targets(
                &prefix,
                &federation.domain,
                inputs.member.as_ref(),
                inputs.node_zone.as_deref(),
            );
            // Pending: the CNAME to the first target is what the name
            // would hold without knowing (the caller keeps it apart).
            let (target_text, pending) = match chosen_target(&id, record, targets, endpoints) {
                Ok(target) => (target, None),
                Err((target, awaited)) => (target, Some(awaited)),
            };
            let target = Name::from_ascii(&target_text).map_err(|e| bad(&target_text, &e))?;
            rrs.push(Record::from_rdata(
                owner.clone(),
                DISCOVERY_TTL,
                RData::CNAME(CNAME(target)),
            ));
            match pending {
                None => Decision::Fallback {
                    target: target_text,
                    reason,
                },
                Some(awaited) => Decision::Pending {
                    target: target_text,
                    reason: awaited,
                },
            }
        }
    };
    let alias = match &record.dns_prefix {
        Some(prefix) => {
            let alias_text = format!("{}.{apex}", prefix.trim_end_matches('.')).to_ascii_lowercase();
            let alias = Name::from_ascii(&alias_text).map_err(|e| bad(&alias_text, &e))?;
            let cname = Record::from_rdata(alias, DISCOVERY_TTL, RData::CNAME(CNAME(owner)));
            Some((alias_text, cname))
        }
        None => None,
    };
    Ok((
        OwnerDecision {
            record: id,
            owner: owner_text,
            decision,
        },
        rrs,
        alias,
    ))
}

/// The fallback target of record `id` among `targets` (most specific
/// first, never empty), as [`compute_known`] chooses it; `Err` with the
/// target it would be and what is awaited while the name is pending.
fn chosen_target(
    id: &str,
    record: &RecordView,
    targets: Vec<String>,
    endpoints: Option<&EndpointsView<'_>>,
) -> Result<String, (String, String)> {
    let first = targets.first().cloned().unwrap_or_default();
    let Some(view) = endpoints else {
        return Ok(first);
    };
    let endpoint = format!("DNSEndpoint {}/service-{}", record.namespace, record.service);
    match view.records.get(id).unwrap_or(&EndpointKnowledge::Unknown) {
        EndpointKnowledge::Unknown => Err((
            first,
            format!("the controller has not written {endpoint} (or its status) yet"),
        )),
        EndpointKnowledge::Absent => Ok(first),
        EndpointKnowledge::Present { names, current } => {
            let held = targets.iter().find(|t| names.contains(t.trim_end_matches('.')));
            match held {
                Some(target) if (view.served)(target) => Ok(target.clone()),
                Some(target) => Err((
                    target.clone(),
                    format!("{endpoint} holds {target}, which leads to no address here (yet)"),
                )),
                None if *current => Err((
                    first,
                    format!("{endpoint} holds none of the record's names (no cluster answers it yet)"),
                )),
                None => Err((
                    first,
                    format!("{endpoint} was written for an older generation of the record and holds none of its names"),
                )),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::discovery::ownership::Ownership;

    /// One federation `myfed` (example.com), record ns/nginx (dnsPrefix
    /// www), member us-east-1 with zones a and b, node in b, the local
    /// Service ready (shared by the explain tests).
    pub(crate) fn inputs() -> Inputs {
        let mut services = BTreeMap::new();
        services.insert(
            ("ns".into(), "nginx".into()),
            LocalService {
                cluster_ips: vec!["10.96.0.10".parse().unwrap(), "fd00::10".parse().unwrap()],
                ready: true,
                ..Default::default()
            },
        );
        Inputs {
            cluster_domain: "cluster.local".into(),
            federations: vec![FederationView {
                name: "myfed".into(),
                domain: "example.com".into(),
            }],
            records: vec![RecordView {
                namespace: "ns".into(),
                service: "nginx".into(),
                domain_ref: "myfed".into(),
                external_name: None,
                dns_prefix: Some("www".into()),
            }],
            member: Some(MemberView {
                region: Some("us-east-1".into()),
                zones: vec!["us-east-1a".into(), "us-east-1b".into()],
                cordoned: false,
            }),
            node_zone: Some("us-east-1b".into()),
            services,
        }
    }

    fn records(c: &Computed) -> Vec<String> {
        let mut out: Vec<String> = c.zones[0]
            .records
            .iter()
            .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn ready_local_service_answers_its_cluster_ips() {
        let c = compute(&inputs());
        assert_eq!(c.zones[0].apex.to_ascii(), "myfed.svc.cluster.local.");
        assert!(c.zones[0].follow_cnames_across_zones);
        assert_eq!(
            records(&c),
            [
                "nginx.ns.myfed.svc.cluster.local. A 10.96.0.10",
                "nginx.ns.myfed.svc.cluster.local. AAAA fd00::10",
                "www.myfed.svc.cluster.local. CNAME nginx.ns.myfed.svc.cluster.local.",
            ]
        );
        assert_eq!(c.counts(), (1, 0));
    }

    #[test]
    fn unready_missing_or_cordoned_falls_back_to_the_node_zone_name() {
        let want = "nginx.ns.myfed.svc.cluster.local. CNAME nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com.";
        let mut unready = inputs();
        unready.services.values_mut().for_each(|s| s.ready = false);
        let mut missing = inputs();
        missing.services.clear();
        let mut cordoned = inputs();
        cordoned.member.as_mut().unwrap().cordoned = true;
        for case in [unready, missing, cordoned] {
            let c = compute(&case);
            assert_eq!(records(&c)[0], want);
            assert_eq!(c.counts(), (0, 1));
        }
    }

    #[test]
    fn zone_region_global_targets_and_external_name() {
        let mut i = inputs();
        i.services.clear();
        i.node_zone = Some("elsewhere".into());
        i.records[0].external_name = Some("web".into());
        let c = compute(&i);
        assert_eq!(
            records(&c)[0],
            "web.ns.myfed.svc.cluster.local. CNAME web.ns.myfed.svc.us-east-1a.us-east-1.example.com."
        );
        i.member.as_mut().unwrap().zones.clear();
        assert!(records(&compute(&i))[0].ends_with("CNAME web.ns.myfed.svc.us-east-1.example.com."));
        i.member = None;
        assert!(records(&compute(&i))[0].ends_with("CNAME web.ns.myfed.svc.example.com."));
    }

    #[test]
    fn headless_answers_ready_endpoint_addresses() {
        let mut i = inputs();
        let s = i.services.values_mut().next().unwrap();
        s.headless = true;
        s.cluster_ips.clear();
        s.ready_addresses = ["10.0.1.21".parse().unwrap()].into();
        assert_eq!(
            records(&compute(&i))[0],
            "nginx.ns.myfed.svc.cluster.local. A 10.0.1.21"
        );
    }

    /// A record of `namespace/service` in `myfed` with `dns_prefix`.
    fn record(namespace: &str, service: &str, dns_prefix: Option<&str>) -> RecordView {
        RecordView {
            namespace: namespace.into(),
            service: service.into(),
            domain_ref: "myfed".into(),
            external_name: None,
            dns_prefix: dns_prefix.map(Into::into),
        }
    }

    /// Domain `fedns-system/myfed` with `allowed` as its
    /// `spec.allowedNamespaces` (JSON).
    fn domain(allowed: serde_json::Value) -> fedns_api::Domain {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "Domain",
            "metadata": {"name": "myfed", "namespace": "fedns-system"},
            "spec": {"domain": "example.com", "allowedNamespaces": allowed},
        }))
        .unwrap()
    }

    /// Ownership with every Domain admitting all and these creation times.
    fn aged(created: &[(&str, &str)]) -> Ownership {
        let created = created
            .iter()
            .map(|(id, at)| {
                let at = fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at.parse().unwrap());
                (id.to_string(), at)
            })
            .collect();
        Ownership::new(
            &[domain(serde_json::json!({"from": "All"}))],
            Default::default(),
            created,
        )
    }

    /// The zone's records at `name` (fully qualified).
    fn at(c: &Computed, name: &str) -> Vec<String> {
        records(c)
            .into_iter()
            .filter(|r| r.starts_with(&format!("{name} ")))
            .collect()
    }

    #[test]
    fn a_prefix_from_another_namespace_never_takes_a_service_name() {
        // mallory/a (a name that sorts before ns/nginx) asks for
        // dnsPrefix nginx.ns: nginx.ns.myfed.svc.cluster.local.
        let victim = "nginx.ns.myfed.svc.cluster.local.";
        let mut local = inputs();
        local.records.insert(0, record("mallory", "a", Some("nginx.ns")));
        let mut fallback = local.clone();
        fallback.services.values_mut().for_each(|s| s.ready = false);
        for (case, want) in [
            (
                &local,
                vec![format!("{victim} A 10.96.0.10"), format!("{victim} AAAA fd00::10")],
            ),
            (
                &fallback,
                vec![format!(
                    "{victim} CNAME nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com."
                )],
            ),
        ] {
            // Oldest or not, with or without the Domain known.
            for ownership in [Ownership::default(), aged(&[("mallory/a", "2020-01-01T00:00:00Z")])] {
                let c = compute_owned(case, &ownership);
                assert_eq!(at(&c, victim), want);
                let problem = c.problems.iter().find(|p| p.contains("mallory/a")).expect("reported");
                assert!(
                    problem.contains("NotAllowed") && problem.contains("namespace ns"),
                    "{problem}"
                );
                // mallory's own name is answered as usual.
                assert_eq!(at(&c, "a.mallory.myfed.svc.cluster.local.").len(), 1);
                assert!(!c.aliases.contains_key(victim));
            }
        }
        // Without ns/nginx the name is NXDOMAIN, and says why.
        let mut gone = local.clone();
        gone.records.retain(|r| r.namespace == "mallory");
        let c = compute(&gone);
        assert!(at(&c, victim).is_empty(), "{:?}", records(&c));
        assert!(c.refused[victim].contains("NotAllowed"));
        // The record's own namespace may alias its own service names;
        // a prefix naming the record's own name is no alias.
        let mut own = inputs();
        own.records.push(record("ns", "web", Some("nginx.ns")));
        own.records[0].dns_prefix = Some("nginx.ns".into());
        let c = compute(&own);
        assert_eq!(at(&c, victim).len(), 2, "{:?}", records(&c));
        assert!(c
            .problems
            .iter()
            .any(|p| p.contains("ns/nginx") && p.contains("own discovery name")));
        assert!(c
            .problems
            .iter()
            .any(|p| p.contains("ns/web") && p.contains("Conflict")));
    }

    #[test]
    fn a_collision_goes_to_the_oldest_claim_not_the_first_in_sort_order() {
        // Two records of one namespace ask for `www`; ns/aaa sorts first
        // but ns/nginx is older.
        let mut i = inputs();
        i.records.push(record("ns", "aaa", Some("www")));
        let www = "www.myfed.svc.cluster.local.";
        let c = compute_owned(
            &i,
            &aged(&[("ns/nginx", "2024-01-01T00:00:00Z"), ("ns/aaa", "2024-06-01T00:00:00Z")]),
        );
        assert_eq!(at(&c, www), [format!("{www} CNAME nginx.ns.myfed.svc.cluster.local.")]);
        assert!(c
            .problems
            .iter()
            .any(|p| p.contains("ns/aaa") && p.contains("held by ServiceDNSRecord ns/nginx")));
        // The other way round; and records of other namespaces too.
        i.records.push(record("other", "zzz", Some("www")));
        let c = compute_owned(
            &i,
            &aged(&[
                ("ns/nginx", "2024-01-01T00:00:00Z"),
                ("ns/aaa", "2024-06-01T00:00:00Z"),
                ("other/zzz", "2023-01-01T00:00:00Z"),
            ]),
        );
        assert_eq!(at(&c, www), [format!("{www} CNAME zzz.other.myfed.svc.cluster.local.")]);
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        // No timestamps: namespace/name; a record with one comes first.
        let c = compute(&i);
        assert_eq!(at(&c, www), [format!("{www} CNAME aaa.ns.myfed.svc.cluster.local.")]);
        let c = compute_owned(&i, &aged(&[("other/zzz", "2024-01-01T00:00:00Z")]));
        assert_eq!(at(&c, www), [format!("{www} CNAME zzz.other.myfed.svc.cluster.local.")]);
        // Two records of one namespace with one owner name (externalName):
        // the older answers it, and the other's alias goes with it.
        let mut i = inputs();
        i.services.values_mut().for_each(|s| s.ready = false);
        let mut web = record("ns", "web", Some("shop"));
        web.external_name = Some("nginx".into());
        i.records.push(web);
        let c = compute_owned(
            &i,
            &aged(&[("ns/web", "2024-01-01T00:00:00Z"), ("ns/nginx", "2024-06-01T00:00:00Z")]),
        );
        let decision = c
            .decisions
            .iter()
            .find(|d| d.owner == "nginx.ns.myfed.svc.cluster.local.");
        assert_eq!(decision.unwrap().record, "ns/web");
        assert_eq!(c.decisions.len(), 1);
        assert!(at(&c, www).is_empty(), "ns/nginx holds nothing: {:?}", records(&c));
        assert_eq!(at(&c, "shop.myfed.svc.cluster.local.").len(), 1);
        // Every owner name holds one CNAME at most, whatever the order.
        for c in [compute(&i), c] {
            let names: Vec<String> = records(&c)
                .iter()
                .filter(|r| r.contains(" CNAME "))
                .map(|r| r.split(' ').next().unwrap().to_owned())
                .collect();
            let mut unique = names.clone();
            unique.dedup();
            assert_eq!(names, unique);
        }
    }

    #[test]
    fn namespaces_the_domain_does_not_admit_stay_out() {
        let mut i = inputs();
        i.records.push(record("fedns-system", "api", None));
        let same = Ownership::new(
            &[domain(serde_json::json!({"from": "Same"}))],
            Default::default(),
            Default::default(),
        );
        let c = compute_owned(&i, &same);
        assert_eq!(
            c.decisions.iter().map(|d| d.record.as_str()).collect::<Vec<_>>(),
            ["fedns-system/api"]
        );
        assert!(at(&c, "www.myfed.svc.cluster.local.").is_empty());
        let problem = c.problems.iter().find(|p| p.contains("ns/nginx")).unwrap();
        assert!(
            problem.contains("left out of discovery zone myfed.svc.cluster.local."),
            "{problem}"
        );
        assert!(c.refused.contains_key("nginx.ns.myfed.svc.cluster.local."));
        // A selector, with the namespaces' labels.
        let selector = domain(serde_json::json!({"from": "Selector", "selector": {"matchLabels": {"dns": "yes"}}}));
        let labels = BTreeMap::from([("ns".to_owned(), BTreeMap::from([("dns".to_owned(), "yes".to_owned())]))]);
        let c = compute_owned(&i, &Ownership::new(&[selector], labels, Default::default()));
        assert_eq!(
            c.decisions.iter().map(|d| d.record.as_str()).collect::<Vec<_>>(),
            ["ns/nginx"]
        );
    }

    #[test]
    fn records_of_other_federations_and_bad_names_stay_out() {
        let mut i = inputs();
        i.records.push(RecordView {
            domain_ref: "other".into(),
            ..i.records[0].clone()
        });
        i.records.push(RecordView {
            service: "bad..name".into(),
            ..i.records[0].clone()
        });
        let c = compute(&i);
        assert_eq!(c.zones.len(), 1);
        assert_eq!(c.decisions.len(), 1);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
    }

    /// The zone, region and global names of ns/nginx for `inputs()`.
    const ZONE: &str = "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com.";
    const REGION: &str = "nginx.ns.myfed.svc.us-east-1.example.com.";
    const GLOBAL: &str = "nginx.ns.myfed.svc.example.com.";

    /// [`compute_known`] with ns/nginx's DNSEndpoint known as `knowledge`
    /// (None: not in the map) and the server answering `served`.
    fn known(i: &Inputs, knowledge: Option<EndpointKnowledge>, served: &[&str]) -> Computed {
        let records: BTreeMap<String, EndpointKnowledge> =
            knowledge.into_iter().map(|k| ("ns/nginx".to_owned(), k)).collect();
        let served = |name: &str| served.contains(&name);
        let view = EndpointsView {
            records: &records,
            served: &served,
        };
        compute_known(i, &Ownership::default(), Some(&view))
    }

    fn present(names: &[&str], current: bool) -> Option<EndpointKnowledge> {
        Some(EndpointKnowledge::Present {
            names: names.iter().map(|n| n.trim_end_matches('.').to_owned()).collect(),
            current,
        })
    }

    #[test]
    fn fallback_targets_go_from_the_zone_to_the_global_name() {
        let i = inputs();
        let prefix = "nginx.ns.myfed.svc";
        let member = i.member.as_ref();
        assert_eq!(
            fallback_targets(prefix, "example.com", member, Some("us-east-1b")),
            [ZONE, REGION, GLOBAL]
        );
        assert_eq!(fallback_targets(prefix, "example.com", None, None), [GLOBAL]);
    }

    /// Before the controller wrote ns/nginx's DNSEndpoint a fallback name
    /// is pending: no CNAME (to a name nobody publishes) and no NXDOMAIN
    /// record left behind: the owner and its alias are out of the zone and
    /// listed as pending. A local answer needs no DNSEndpoint.
    #[test]
    fn without_its_dnsendpoint_a_fallback_name_is_pending_not_a_cname_to_nothing() {
        let mut i = inputs();
        i.services.values_mut().for_each(|s| s.ready = false);
        let owner = "nginx.ns.myfed.svc.cluster.local.";
        for knowledge in [None, Some(EndpointKnowledge::Unknown)] {
            let c = known(&i, knowledge, &[ZONE, REGION, GLOBAL]);
            assert!(records(&c).is_empty(), "{:?}", records(&c));
            assert_eq!(
                c.pending.keys().map(String::as_str).collect::<Vec<_>>(),
                [owner, "www.myfed.svc.cluster.local."]
            );
            let pending = &c.pending[owner];
            assert_eq!(
                (pending.record.as_str(), pending.zone.as_str()),
                ("ns/nginx", "myfed.svc.cluster.local.")
            );
            assert!(
                pending.reason.contains("DNSEndpoint ns/service-nginx"),
                "{}",
                pending.reason
            );
            // Kept apart: the CNAME it would hold without knowing.
            assert_eq!(pending.records.len(), 1);
            assert_eq!(pending.records[0].data.to_string(), ZONE);
            assert!(matches!(&c.decisions[0].decision, Decision::Pending { target, .. } if target == ZONE));
            assert_eq!(c.counts(), (0, 0));
            // The zone itself is there (its apex answers), without the name.
            assert_eq!(c.zones.len(), 1);
        }
        // Local: answered whatever the DNSEndpoint.
        let c = known(&inputs(), None, &[]);
        assert!(c.pending.is_empty());
        assert_eq!(c.counts(), (1, 0));
        // Without knowledge (explain's view), the CNAME as before.
        assert_eq!(records(&compute(&i))[0], format!("{owner} CNAME {ZONE}"));
    }

    #[test]
    fn a_present_dnsendpoint_answers_once_its_target_is_served() {
        let mut i = inputs();
        i.services.values_mut().for_each(|s| s.ready = false);
        let owner = "nginx.ns.myfed.svc.cluster.local.";
        let all = [ZONE, REGION, GLOBAL];
        // Held and served: the zone name.
        let c = known(&i, present(&all, true), &all);
        assert!(c.pending.is_empty());
        assert_eq!(at(&c, owner), [format!("{owner} CNAME {ZONE}")]);
        assert_eq!(c.counts(), (0, 1));
        // Held, leading to no address here (yet): pending, whatever the
        // generation.
        for current in [true, false] {
            let c = known(&i, present(&all, current), &[REGION, GLOBAL]);
            assert!(
                c.pending[owner].reason.contains("leads to no address"),
                "{:?}",
                c.pending
            );
            assert!(at(&c, owner).is_empty());
        }
        // The DNSEndpoint has no zone name (the controller did not know
        // the member's zone when it wrote it): the region name, not a
        // CNAME to a name it does not publish.
        let c = known(&i, present(&[REGION, GLOBAL], true), &[REGION, GLOBAL]);
        assert_eq!(at(&c, owner), [format!("{owner} CNAME {REGION}")]);
        // It holds none of them (a controller that has not read its
        // members yet writes it empty): pending, saying why.
        let c = known(&i, present(&[], true), &[]);
        assert!(
            c.pending[owner].reason.contains("no cluster answers it yet"),
            "{:?}",
            c.pending
        );
        let other = ["other.ns.myfed.svc.example.com"];
        let c = known(&i, present(&other, false), &[]);
        assert!(c.pending[owner].reason.contains("older generation"), "{:?}", c.pending);
        // Known absent (the controller wrote none for this generation).
        let c = known(&i, Some(EndpointKnowledge::Absent), &[]);
        assert_eq!(at(&c, owner), [format!("{owner} CNAME {ZONE}")]);
        assert!(c.pending.is_empty());
    }
}
