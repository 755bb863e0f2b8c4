//! Who may publish a name: one name, one owner.
//!
//! * A zone admits DNSEndpoints only from the namespaces its Domain's
//!   `spec.allowedNamespaces` lets in (Gateway API's
//!   `allowedRoutes.namespaces`: `All`, the default; `Same`; `Selector`).
//! * A service name `S.N.F.svc.<apex>` of the zone's federation `F` (and
//!   its region and zone forms `S.N.F.svc.R.<apex>`,
//!   `S.N.F.svc.Z.R.<apex>`) may only be claimed from namespace `N`.
//! * Of the DNSEndpoints that claim one owner name, the oldest holds it
//!   (`metadata.creationTimestamp`, then namespace/name: the rule Gateway
//!   API uses for conflicting routes). Objects without a timestamp
//!   (`fedns dns-server --manifests`) are ordered by namespace/name.

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
    rule: Rule,
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
        ZoneAdmission {
            namespace: domain.metadata.namespace.clone().unwrap_or_default(),
            federation: domain.metadata.name.clone().unwrap_or_default(),
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
        let domain = format!("{}/{}", self.namespace, self.federation);
        match &self.rule {
            Rule::All => Ok(()),
            Rule::Same if namespace == self.namespace => Ok(()),
            Rule::Same => Err(format!(
                "Domain {domain} admits DNSEndpoints from its own namespace only (allowedNamespaces.from: Same)"
            )),
            Rule::Selector(selector) => {
                let empty = BTreeMap::new();
                if selector.matches(labels.get(namespace).unwrap_or(&empty)) {
                    Ok(())
                } else {
                    Err(format!(
                        "namespace {namespace} does not match Domain {domain}'s allowedNamespaces selector ({selector})"
                    ))
                }
            }
            Rule::Broken(message) => Err(format!("Domain {domain}: {message}")),
        }
    }

    /// The namespace that owns `owner` when it is a service name of this
    /// zone's federation (`S.N.F.svc[.R[.Z]].<apex>`), else None.
    pub fn service_namespace<'a>(&self, owner: &'a str, apex: &str) -> Option<&'a str> {
        let relative = owner.strip_suffix(apex)?.strip_suffix('.')?;
        let labels: Vec<&str> = relative.split('.').collect();
        let is_service = (4..=6).contains(&labels.len()) && labels[3] == "svc" && labels[2] == self.federation;
        is_service.then(|| labels[1])
    }
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
            None
        );
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
}
