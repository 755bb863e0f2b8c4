//! Who may publish a name: one name, one owner, hierarchically.
//!
//! * A zone admits DNSEndpoints only from the namespaces its Domain's
//!   `spec.allowedNamespaces` lets in (Gateway API's
//!   `allowedRoutes.namespaces`: `All`, the default; `Same`; `Selector`).
//! * A service name `S.N.F.svc.<apex>` of the zone's federation `F` (and
//!   its region and zone forms `S.N.F.svc.R.<apex>`,
//!   `S.N.F.svc.Z.R.<apex>`) and every name below it (`_acme-challenge.…`,
//!   `_http._tcp.…`, deeper labels) may only be claimed from namespace `N`.
//! * Reserved names belong to the Domain's namespace: the apex, the names
//!   from `N.F.svc` up (`N.F.svc`, `F.svc`, `svc`, with their region
//!   forms), the zone's name-server hosts, delegations (an NS RRset below
//!   the apex) and wildcards (`*.…`). The Domain's `spec.grants` may give
//!   such names, and any other name, to one namespace; a granted name is
//!   then closed to every other namespace but the Domain's.
//! * Of the DNSEndpoints that claim one owner name, the oldest holds it
//!   (`metadata.creationTimestamp`, then namespace/name: the rule Gateway
//!   API uses for conflicting routes). Objects without a timestamp
//!   (`fedns dns-server --manifests`) are ordered by namespace/name.
//! * Outside service names, a claim also conflicts with an older claim of
//!   another namespace at a name above or below it (below the apex): an
//!   NS cut, a wildcard, CoreDNS-etcd's key nesting and ACME's
//!   `_acme-challenge` all let a name change what its neighbours answer
//!   or certify. Names in one [`ZoneAdmission::hierarchy_group`] are
//!   therefore decided together.

use std::collections::BTreeMap;

use fedns_api::{AllowedNamespaces, Domain, NamespacesFrom};
use kube::core::{Selector, SelectorExt as _};

/// Labels of each namespace by name, for Domains that admit namespaces by
/// selector. A namespace missing here has no labels.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// What one zone's Domain admits.
#[derive(Debug, Clone)]
pub struct ZoneAdmission {
    /// The Domain's namespace.
    pub namespace: String,
    /// The Domain's name: the federation name in service names.
    pub federation: String,
    /// The zone apex, normalised (lower case, no trailing dot); empty when
    /// the Domain's `spec.domain` does not parse.
    pub apex: String,
    /// The zone's name-server hosts (normalised), inside the zone or not.
    name_servers: Vec<String>,
    /// `(namespace, host name)` of every grant, host names normalised.
    grants: Vec<(String, String)>,
    rule: Rule,
}

/// Where an owner name sits in a zone, which decides who may claim it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place<'a> {
    /// At or below a service name of namespace `.0`.
    Service(&'a str),
    /// A name reserved to the Domain's namespace; `.0` says which kind
    /// (for messages).
    Reserved(&'static str),
    /// Any other name: the first claim holds.
    Open,
}

/// Why a claim is refused by the rules (before any other claim counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// One line naming the rule and whom the name belongs to.
    pub message: String,
}

#[derive(Debug, Clone)]
enum Rule {
    All,
    Same,
    Selector(Selector),
    /// The selector did not parse: nothing is admitted until it is fixed.
    Broken(String),
}

impl ZoneAdmission {
    /// The admission rule of `domain`.
    pub fn of(domain: &Domain) -> ZoneAdmission {
        let allowed = domain.spec.allowed_namespaces.clone().unwrap_or_default();
        let apex = fedns_api::names::normalize_owner_name(&domain.spec.domain).unwrap_or_default();
        let mut name_servers: Vec<String> = domain
            .spec
            .name_servers
            .iter()
            .filter_map(|ns| fedns_api::names::normalize_owner_name(ns).ok())
            .collect();
        if domain.spec.name_servers.is_empty() && !apex.is_empty() {
            name_servers.push(format!("ns1.{apex}"));
        }
        let grants = domain
            .spec
            .grants
            .iter()
            .flat_map(|grant| {
                grant.hostnames.iter().filter_map(|host| {
                    let (wild, rest) = match host.strip_prefix("*.") {
                        Some(rest) => ("*.", rest),
                        None => ("", host.as_str()),
                    };
                    let normal = fedns_api::names::normalize_owner_name(rest).ok()?;
                    Some((grant.namespace.clone(), format!("{wild}{normal}")))
                })
            })
            .collect();
        ZoneAdmission {
            namespace: domain.metadata.namespace.clone().unwrap_or_default(),
            federation: domain.metadata.name.clone().unwrap_or_default(),
            apex,
            name_servers,
            grants,
            rule: rule_of(&allowed),
        }
    }

    /// A problem with the Domain's rule itself (an unparsable selector).
    pub fn problem(&self) -> Option<&str> {
        match &self.rule {
            Rule::Broken(message) => Some(message),
            _ => None,
        }
    }

    /// Whether DNSEndpoints of `namespace` may publish into the zone; Err
    /// says why not.
    ///
    /// # Errors
    /// One line naming the rule that refused.
    pub fn admits(&self, namespace: &str, labels: &NamespaceLabels) -> Result<(), String> {
        // Only a refusal names the Domain (this runs for every endpoint).
        let domain = || format!("{}/{}", self.namespace, self.federation);
        match &self.rule {
            Rule::All => Ok(()),
            Rule::Same if namespace == self.namespace => Ok(()),
            Rule::Same => Err(format!(
                "Domain {} admits DNSEndpoints from its own namespace only (allowedNamespaces.from: Same)",
                domain()
            )),
            Rule::Selector(selector) => {
                let empty = BTreeMap::new();
                if selector.matches(labels.get(namespace).unwrap_or(&empty)) {
                    Ok(())
                } else {
                    Err(format!(
                        "namespace {namespace} does not match Domain {}'s allowedNamespaces selector ({selector})",
                        domain()
                    ))
                }
            }
            Rule::Broken(message) => Err(format!("Domain {}: {message}", domain())),
        }
    }

    /// The namespace that owns `owner` when it is a service name of this
    /// zone's federation (`S.N.F.svc[.R[.Z]].<apex>`) or a name below one
    /// (`_acme-challenge.S.N.F.svc.<apex>`), else None.
    pub fn service_namespace<'a>(&self, owner: &'a str, apex: &str) -> Option<&'a str> {
        match svc_position(owner, apex, &self.federation)? {
            (labels, i) if i >= 3 => Some(labels[i - 2]),
            _ => None,
        }
    }

    /// Where `owner` (normalised, inside the zone) sits, for a record of
    /// `record_type`.
    pub fn place<'a>(&self, owner: &'a str, record_type: fedns_api::RecordType) -> Place<'a> {
        let apex = self.apex.as_str();
        if let Some((labels, i)) = svc_position(owner, apex, &self.federation) {
            return match i {
                i if i >= 3 => Place::Service(labels[i - 2]),
                2 => Place::Reserved("a namespace's name N.F.svc, above its service names"),
                1 => Place::Reserved("the federation's name F.svc, above its service names"),
                _ => Place::Reserved("the name svc, above the federation's service names"),
            };
        }
        if owner == apex {
            return Place::Reserved("the zone apex");
        }
        // `_acme-challenge.X`, `_sip._tcp.X`: names that speak for X (a
        // certificate, a service of X) are X's.
        if let Some((first, base)) = owner.split_once('.') {
            if first.starts_with('_') {
                if base == apex {
                    return Place::Reserved(
                        "an underscore name of the zone apex (e.g. _acme-challenge, which certifies the apex and its wildcard)",
                    );
                }
                if let Place::Reserved(what) = self.place(base, fedns_api::RecordType::TXT) {
                    return Place::Reserved(what);
                }
            }
        }
        if owner == "*" || owner.starts_with("*.") {
            return Place::Reserved("a wildcard");
        }
        if record_type == fedns_api::RecordType::NS {
            return Place::Reserved("a delegation (an NS RRset below the apex)");
        }
        if self.name_servers.iter().any(|ns| ns == owner) {
            return Place::Reserved("a name server of the zone");
        }
        Place::Open
    }

    /// The namespaces `spec.grants` give `owner` to (empty: none).
    fn granted_to(&self, owner: &str) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .grants
            .iter()
            .filter(|(_, host)| match host.strip_prefix("*.") {
                Some(parent) => owner.len() > parent.len() && fedns_api::names::is_subdomain(owner, parent),
                None if *host == self.apex => owner == host,
                None => fedns_api::names::is_subdomain(owner, host),
            })
            .map(|(namespace, _)| namespace.as_str())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// May `namespace` claim `owner` (normalised, inside the zone) for a
    /// record of `record_type`, by the rules alone (service names,
    /// reserved names, grants; not `allowedNamespaces`, see
    /// [`ZoneAdmission::admits`], nor other claims)?
    ///
    /// # Errors
    /// A [`Refusal`] naming the rule and the namespace the name belongs
    /// to (reported as `NotAllowed`).
    pub fn may_claim(&self, namespace: &str, owner: &str, record_type: fedns_api::RecordType) -> Result<(), Refusal> {
        // Only refusals name the Domain: the common case allocates nothing.
        let domain = || format!("{}/{}", self.namespace, self.federation);
        let place = self.place(owner, record_type);
        if let Place::Service(owning) = place {
            if owning == namespace {
                return Ok(());
            }
            return Err(Refusal {
                message: format!(
                    "{owner} is at or below a service name of namespace {owning}, which only namespace {owning} can publish"
                ),
            });
        }
        if namespace == self.namespace {
            return Ok(());
        }
        let granted = self.granted_to(owner);
        if !granted.is_empty() {
            if granted.contains(&namespace) {
                return Ok(());
            }
            return Err(Refusal {
                message: format!(
                    "Domain {} grants {owner} to namespace {} (spec.grants)",
                    domain(),
                    granted.join(", ")
                ),
            });
        }
        match place {
            Place::Reserved(what) => Err(Refusal {
                message: format!(
                    "{owner} is {what}, which belongs to Domain {}'s namespace {} unless its spec.grants give it to a namespace",
                    domain(),
                    self.namespace
                ),
            }),
            _ => Ok(()),
        }
    }

    /// The group of names whose claims are decided together
    /// (hierarchically): every name below the apex outside service names,
    /// grouped by its label just below the apex (`www` for
    /// `a.www.example.com`); None for the apex, service names and names
    /// outside the zone. Two names of different groups are never above
    /// or below each other.
    pub fn hierarchy_group(&self, owner: &str) -> Option<String> {
        let relative = owner.strip_suffix(self.apex.as_str())?.strip_suffix('.')?;
        if matches!(svc_position(owner, &self.apex, &self.federation), Some((_, i)) if i >= 3) {
            return None;
        }
        let top = relative.rsplit('.').next()?;
        Some(format!("{top}.{}", self.apex))
    }
}

/// The labels of `owner` below `apex` (leftmost first) and the index of
/// the `svc` label of this federation's service-name layout
/// (`… F svc [R [Z]]`), if the name has one: `i >= 3` is a service name
/// or below one, smaller `i` a name above the service names.
fn svc_position<'a>(owner: &'a str, apex: &str, federation: &str) -> Option<(Vec<&'a str>, usize)> {
    if apex.is_empty() {
        return None;
    }
    let relative = owner.strip_suffix(apex)?.strip_suffix('.')?;
    let labels: Vec<&str> = relative.split('.').collect();
    let n = labels.len();
    // The svc label is followed by at most two labels (region, zone).
    (n.saturating_sub(3)..n)
        .rev()
        .find(|&i| labels[i] == "svc" && (i == 0 || labels[i - 1] == federation))
        .map(|i| (labels, i))
}

/// Endpoint label (`spec.endpoints[].labels`) marking a TXT as an
/// ownership record kept for its writer, never published: what `fedns
/// webhook-provider` stores for external-dns's TXT registry (external-dns
/// reads it back from the provider, not from DNS). A registry-valued TXT
/// with this label is left out silently; without it, it is refused and
/// reported. Anyone may set it: it only keeps a record out of DNS.
pub const OWNERSHIP_RECORD_LABEL: &str = "fedns.io/ownership-record";

/// Whether one TXT string (unquoted, strings joined) is an ownership
/// registry value: external-dns's `heritage=external-dns,…` (its
/// `endpoint/labels.go` reads any value whose first comma-separated part
/// is that), the format fedns's own registry records use too. Such a TXT
/// is never desired state: publishing it would hand another record to
/// whoever it names.
pub fn is_registry_value(text: &str) -> bool {
    text.split(',').next().map(str::trim) == Some("heritage=external-dns")
}

fn rule_of(allowed: &AllowedNamespaces) -> Rule {
    match allowed.from {
        NamespacesFrom::All => Rule::All,
        NamespacesFrom::Same => Rule::Same,
        NamespacesFrom::Selector => match &allowed.selector {
            None => Rule::Broken("allowedNamespaces.from is Selector but no selector is set".into()),
            Some(selector) => match Selector::try_from(selector.clone()) {
                Ok(selector) => Rule::Selector(selector),
                Err(e) => Rule::Broken(format!("allowedNamespaces.selector: {}", e.0)),
            },
        },
    }
}

/// The order in which claims to one name are honoured: older first, then
/// by namespace/name. `created` is RFC 3339 as the API server writes it
/// (None for manifests, which have no timestamps).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClaimOrder {
    /// Objects without a timestamp sort after those with one.
    missing_timestamp: bool,
    created: Option<fedns_api::k8s_openapi::jiff::Timestamp>,
    namespace: String,
    name: String,
}

impl ClaimOrder {
    /// The claim order of an object from its metadata.
    pub fn of(meta: &fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> ClaimOrder {
        let created = meta.creation_timestamp.as_ref().map(|t| t.0);
        ClaimOrder {
            missing_timestamp: created.is_none(),
            created,
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use fedns_api::DomainSpec;

    fn domain(allowed: Option<AllowedNamespaces>) -> Domain {
        let mut d = Domain::new(
            "myfed",
            DomainSpec {
                domain: "example.com".into(),
                name_servers: vec![],
                name_server_addresses: vec![],
                hostmaster: None,
                soa: Default::default(),
                allowed_namespaces: allowed,
                grants: vec![],
                probe_allowed_networks: vec![],
                transfer: None,
                client_regions: vec![],
                geo_regions: vec![],
                dnssec: None,
            },
        );
        d.metadata.namespace = Some("fedns-system".into());
        d
    }

    #[test]
    fn service_names_belong_to_their_namespace() {
        let zone = ZoneAdmission::of(&domain(None));
        let apex = "example.com";
        assert_eq!(
            zone.service_namespace("web.shop.myfed.svc.example.com", apex),
            Some("shop")
        );
        assert_eq!(
            zone.service_namespace("web.shop.myfed.svc.us-west-2.example.com", apex),
            Some("shop")
        );
        assert_eq!(
            zone.service_namespace("web.shop.myfed.svc.us-west-2a.us-west-2.example.com", apex),
            Some("shop")
        );
        assert_eq!(
            zone.service_namespace("web.shop.other.svc.example.com", apex),
            None,
            "another federation"
        );
        assert_eq!(zone.service_namespace("www.example.com", apex), None);
        assert_eq!(
            zone.service_namespace("a.b.c.d.e.web.shop.myfed.svc.example.com", apex),
            Some("shop"),
            "a name below a service name is the service's namespace's"
        );
        assert_eq!(
            zone.service_namespace("_acme-challenge.web.shop.myfed.svc.us-west-2.example.com", apex),
            Some("shop")
        );
        assert_eq!(zone.service_namespace("shop.myfed.svc.example.com", apex), None);
        assert_eq!(zone.service_namespace("web.shop.myfed.svc.example.org", apex), None);
    }

    #[test]
    fn admission_rules() {
        let labels: NamespaceLabels = BTreeMap::from([(
            "team-a".to_owned(),
            BTreeMap::from([("dns".to_owned(), "yes".to_owned())]),
        )]);
        let all = ZoneAdmission::of(&domain(None));
        assert!(all.admits("anything", &labels).is_ok());
        let same = ZoneAdmission::of(&domain(Some(AllowedNamespaces {
            from: NamespacesFrom::Same,
            selector: None,
        })));
        assert!(same.admits("fedns-system", &labels).is_ok());
        assert!(same.admits("team-a", &labels).unwrap_err().contains("own namespace"));
        let selector = ZoneAdmission::of(&domain(Some(AllowedNamespaces {
            from: NamespacesFrom::Selector,
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("dns".to_owned(), "yes".to_owned())])),
                ..Default::default()
            }),
        })));
        assert!(selector.admits("team-a", &labels).is_ok());
        assert!(selector.admits("team-b", &labels).is_err());
        let broken = ZoneAdmission::of(&domain(Some(AllowedNamespaces {
            from: NamespacesFrom::Selector,
            selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "dns".into(),
                    operator: "Sometimes".into(),
                    values: None,
                }]),
                ..Default::default()
            }),
        })));
        assert!(broken.problem().is_some());
        assert!(
            broken.admits("team-a", &labels).is_err(),
            "a broken rule admits nothing"
        );
        let missing = ZoneAdmission::of(&domain(Some(AllowedNamespaces {
            from: NamespacesFrom::Selector,
            selector: None,
        })));
        assert!(missing.problem().unwrap().contains("no selector"));
    }

    fn granting(grants: Vec<fedns_api::NameGrant>) -> ZoneAdmission {
        let mut d = domain(None);
        d.spec.grants = grants;
        ZoneAdmission::of(&d)
    }

    #[test]
    fn places_of_names() {
        use fedns_api::RecordType::{A, NS, TXT};
        let zone = ZoneAdmission::of(&domain(None));
        assert_eq!(zone.place("web.shop.myfed.svc.example.com", A), Place::Service("shop"));
        assert_eq!(
            zone.place("x.web.shop.myfed.svc.example.com", NS),
            Place::Service("shop")
        );
        for reserved in [
            "example.com",
            "shop.myfed.svc.example.com",
            "shop.myfed.svc.eu.example.com",
            "myfed.svc.example.com",
            "svc.example.com",
            "*.example.com",
            "*.apps.example.com",
            "ns1.example.com",
        ] {
            assert!(matches!(zone.place(reserved, TXT), Place::Reserved(_)), "{reserved}");
        }
        assert!(matches!(zone.place("sub.example.com", NS), Place::Reserved(_)));
        assert_eq!(zone.place("www.example.com", A), Place::Open);
        assert_eq!(zone.place("_acme-challenge.www.example.com", TXT), Place::Open);
        assert_eq!(
            zone.place("x.other.svc.example.com", A),
            Place::Open,
            "another federation's"
        );
    }

    #[test]
    fn claims_by_rule() {
        use fedns_api::RecordType::{A, NS, TXT};
        let zone = granting(vec![
            fedns_api::NameGrant {
                namespace: "team-a".into(),
                hostnames: vec!["*.apps.example.com".into(), "team.example.com".into()],
            },
            fedns_api::NameGrant {
                namespace: "web".into(),
                hostnames: vec!["example.com".into()],
            },
        ]);
        // Service names: their namespace only, not even the Domain's.
        assert!(zone
            .may_claim("shop", "_acme-challenge.web.shop.myfed.svc.example.com", TXT)
            .is_ok());
        let e = zone
            .may_claim("mallory", "_acme-challenge.web.shop.myfed.svc.example.com", TXT)
            .unwrap_err();
        assert!(e.message.contains("namespace shop"), "{}", e.message);
        assert!(zone
            .may_claim("fedns-system", "web.shop.myfed.svc.example.com", A)
            .is_err());
        // Reserved: the Domain's namespace, or a grantee.
        let e = zone.may_claim("mallory", "shop.myfed.svc.example.com", NS).unwrap_err();
        assert!(e.message.contains("fedns-system"), "{}", e.message);
        assert!(zone.may_claim("fedns-system", "shop.myfed.svc.example.com", NS).is_ok());
        assert!(zone.may_claim("mallory", "*.example.com", A).is_err());
        assert!(zone.may_claim("mallory", "ns1.example.com", A).is_err());
        assert!(zone.may_claim("mallory", "example.com", TXT).is_err());
        assert!(zone.may_claim("web", "example.com", TXT).is_ok(), "the apex is granted");
        assert!(zone.may_claim("web", "www.example.com", A).is_ok(), "an open name");
        // A grant: the grantee's, closed to others, delegations included.
        assert!(zone.may_claim("team-a", "*.apps.example.com", A).is_ok());
        assert!(zone.may_claim("team-a", "x.apps.example.com", A).is_ok());
        assert!(zone.may_claim("team-a", "team.example.com", NS).is_ok());
        assert!(zone
            .may_claim("team-a", "_acme-challenge.team.example.com", TXT)
            .is_ok());
        let e = zone.may_claim("mallory", "x.apps.example.com", A).unwrap_err();
        assert!(
            e.message.contains("grants x.apps.example.com to namespace team-a"),
            "{}",
            e.message
        );
        assert!(zone
            .may_claim("mallory", "_acme-challenge.team.example.com", TXT)
            .is_err());
        assert!(
            zone.may_claim("mallory", "apps.example.com", A).is_ok(),
            "*. gives only names below"
        );
        assert!(
            zone.may_claim("team-a", "sub.example.com", NS).is_err(),
            "an ungranted delegation"
        );
    }

    #[test]
    fn hierarchy_groups() {
        let zone = ZoneAdmission::of(&domain(None));
        assert_eq!(
            zone.hierarchy_group("a.www.example.com").as_deref(),
            Some("www.example.com")
        );
        assert_eq!(
            zone.hierarchy_group("www.example.com").as_deref(),
            Some("www.example.com")
        );
        assert_eq!(
            zone.hierarchy_group("shop.myfed.svc.example.com").as_deref(),
            Some("svc.example.com")
        );
        assert_eq!(zone.hierarchy_group("web.shop.myfed.svc.example.com"), None);
        assert_eq!(zone.hierarchy_group("example.com"), None);
        assert_eq!(zone.hierarchy_group("example.org"), None);
    }
}
