//! What the desired state is made of: zones of merged RRsets (with their
//! routing members), and the problems found on the way.

use std::collections::BTreeSet;

use fedns_api::{RecordType, RoutingPolicy, TsigKeyReference};
use fedns_dnsserver::ZoneContent;

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
            // A multivalue answer record set (Route53, for `maxAnswers`).
            RoutingPolicy::All => "multivalue=true".to_owned(),
        }
    }

    /// `fedns/max-answers` of this RRset when it has more targets than
    /// that: the limit a provider must keep or report as lost.
    pub fn answer_limit(&self) -> Option<u16> {
        if !matches!(self.record_type, RecordType::A | RecordType::AAAA) {
            return None;
        }
        let n = max_answers_of(&self.provider_specific)?.ok()?;
        (self.targets.len() > usize::from(n)).then_some(n)
    }

    /// Why `provider` (a product name) cannot keep this RRset's answer
    /// limit, for providers without any: `None` when it has none to keep.
    pub fn answer_limit_lost(&self, provider: &str) -> Option<String> {
        let n = self.answer_limit()?;
        Some(format!(
            "{provider} has no answer limit: all {} addresses are answered; at most {n} per answer come from fedns's own DNS server only",
            self.targets.len()
        ))
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
    /// `Weighted` sticky per client subnet: the (IPv4, IPv6) prefix
    /// lengths of a subnet (`fedns/sticky-client-subnet`).
    pub sticky: Option<(u8, u8)>,
    /// `Nearest`: the Domain's GeoIP table, (`country:DE` or
    /// `continent:EU`, region), for providers that route by location
    /// (Route53 geolocation record sets).
    pub locations: Vec<(String, String)>,
}

impl RoutedSet {
    /// Why `provider` (a product name for the message, e.g. `"Route53"`)
    /// cannot keep this set's client-subnet stickiness: `None` unless the
    /// set is sticky. Neither Route53 weighted record sets nor Cloud DNS
    /// `wrr` policies hash a client's subnet onto one member; each query
    /// is drawn afresh by weight. The set is still published as plain
    /// weighted, and the loss is reported as `PolicyDowngraded`.
    pub fn stickiness_lost(&self, provider: &str) -> Option<String> {
        let (v4, v6) = self.sticky?;
        Some(format!(
            "{provider} has no client-subnet stickiness: published as plain weighted (each query drawn afresh by weight); \
             answers sticky per /{v4} (IPv4) and /{v6} (IPv6) client subnet come from fedns's own DNS server only"
        ))
    }
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
    /// `spec.dnssec` when signing is enabled: the embedded sink resolves
    /// its key (from a Secret, or `--dnssec-key-dir`) into
    /// `content.dnssec`. External providers ignore it: they never get
    /// DNSSEC records from fedns (Route53 signs with its own keys).
    pub dnssec: Option<fedns_api::DnssecSpec>,
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

/// An endpoint's `fedns/max-answers` (`providerSpecific` as name/value
/// pairs): `None` when absent, `Err` with a reason when it is not a whole
/// number 1..64.
pub(crate) fn max_answers_of(properties: &[(String, String)]) -> Option<Result<u16, String>> {
    let value = properties
        .iter()
        .find(|(name, _)| name == fedns_api::routing::FEDNS_MAX_ANSWERS)?
        .1
        .trim();
    Some(match value.parse::<i64>() {
        Ok(n) if (1..=fedns_api::routing::MAX_ANSWERS_LIMIT).contains(&n) => Ok(n as u16),
        _ => Err(format!(
            "{} {value:?} is not a whole number 1..{}; answered without a limit",
            fedns_api::routing::FEDNS_MAX_ANSWERS,
            fedns_api::routing::MAX_ANSWERS_LIMIT
        )),
    })
}
