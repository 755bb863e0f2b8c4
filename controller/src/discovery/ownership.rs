//! Who may hold a name of a discovery zone: the rules the public zones
//! apply ([`fedns_providers::plan::ownership`]), applied to the names a
//! member-side replica answers.
//!
//! * A Domain's `spec.allowedNamespaces` admits the same namespaces into
//!   its discovery zone `F.svc.<cluster-domain>` as into its public zone;
//!   a record of any other namespace is left out.
//! * A service name `S.N.F.svc.<cluster-domain>` (what a pod's `S.N.F`
//!   completes to) comes only from records in namespace `N`: a `dnsPrefix`
//!   of another namespace that would land on it is refused (`NotAllowed`),
//!   here and on the host (`crate::records::prefix`, for the record's
//!   `InputValid` condition).
//! * Of the records claiming one name, the oldest holds it
//!   (`metadata.creationTimestamp`, then namespace/name), as for
//!   DNSEndpoints; never the first in sort order.

use std::collections::BTreeMap;

use fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use fedns_api::{Domain, ServiceDNSRecord};
use fedns_providers::plan::ownership::{NamespaceLabels, ZoneAdmission};
use kube::ResourceExt;

/// What the ownership rules of the discovery zones read besides
/// the discovery answer's `Inputs`: each Domain's admission rule, the namespace
/// labels its selector matches, and each record's age.
///
/// [`Ownership::default`] knows no Domain (every namespace admitted) and
/// no age (claims ordered by namespace/name); the service-name rule
/// applies all the same.
#[derive(Debug, Clone, Default)]
pub struct Ownership {
    /// By federation (Domain name).
    admissions: BTreeMap<String, ZoneAdmission>,
    labels: NamespaceLabels,
    /// `metadata.creationTimestamp` by record id `namespace/name`.
    created: BTreeMap<String, Time>,
}

/// The order in which records' claims to one name are honoured: oldest
/// first; records without a timestamp after those with one; then by
/// namespace/name.
pub type ClaimOrder<'a> = (bool, Option<&'a Time>, &'a str, &'a str);

impl Ownership {
    /// The rules of `domains` (the host's Domains), with `labels` for
    /// `Selector` admissions and the records' `creationTimestamp`s by
    /// `namespace/name` in `created`.
    pub fn new(domains: &[Domain], labels: NamespaceLabels, created: BTreeMap<String, Time>) -> Ownership {
        Ownership {
            admissions: domains.iter().map(|d| (d.name_any(), ZoneAdmission::of(d))).collect(),
            labels,
            created,
        }
    }

    /// [`Ownership::new`] from the host's objects as listed.
    pub fn from_objects(domains: &[Domain], records: &[ServiceDNSRecord], labels: NamespaceLabels) -> Ownership {
        Ownership::new(domains, labels, record_ages(records.iter()))
    }

    /// Whether records of `namespace` may publish into federation
    /// `federation`'s discovery zone (always, for a federation whose Domain
    /// is not known here).
    ///
    /// # Errors
    /// One line naming the rule that refused.
    pub fn admits(&self, federation: &str, namespace: &str) -> Result<(), String> {
        match self.admissions.get(federation) {
            Some(admission) => admission.admits(namespace, &self.labels),
            None => Ok(()),
        }
    }

    /// The claim order of the record `namespace/service` (a
    /// ServiceDNSRecord, named as its Service; see [`ClaimOrder`]).
    pub fn claim_order<'a>(&'a self, namespace: &'a String, service: &'a String) -> ClaimOrder<'a> {
        let created = self.created.get(&format!("{namespace}/{service}"));
        (created.is_none(), created, namespace, service)
    }

    /// The namespace a name of federation `federation`'s discovery zone
    /// belongs to (`S.N.F.svc.<cluster_domain>`, as the public zone's
    /// service names), else None. `name` may end in a dot.
    pub fn discovery_namespace(&self, federation: &str, name: &str, cluster_domain: &str) -> Option<String> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let apex = cluster_domain.trim_end_matches('.').to_ascii_lowercase();
        match self.admissions.get(federation) {
            Some(admission) => admission.service_namespace(&name, &apex).map(str::to_owned),
            None => service_namespace_of(federation, &name, &apex),
        }
    }
}

/// `metadata.creationTimestamp` of each record, by `namespace/name`.
pub fn record_ages<'a>(records: impl Iterator<Item = &'a ServiceDNSRecord>) -> BTreeMap<String, Time> {
    records
        .filter_map(|r| {
            let created = r.metadata.creation_timestamp.clone()?;
            Some((
                format!("{}/{}", r.namespace().unwrap_or_default(), r.name_any()),
                created,
            ))
        })
        .collect()
}

/// The namespace `name` belongs to by the public zones' service-name rule,
/// for a federation with no Domain at hand (a bare Domain of that name).
fn service_namespace_of(federation: &str, name: &str, apex: &str) -> Option<String> {
    let bare: Result<Domain, _> = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
        "kind": "Domain",
        "metadata": {"name": federation},
        "spec": {"domain": apex},
    }));
    match bare {
        Ok(domain) => ZoneAdmission::of(&domain)
            .service_namespace(name, apex)
            .map(str::to_owned),
        // Not expected (the JSON above is a valid Domain); the exact
        // service-name form `S.N.F.svc` then.
        Err(_) => {
            let relative = name.strip_suffix(apex)?.strip_suffix('.')?;
            let labels: Vec<&str> = relative.split('.').collect();
            (labels.len() == 4 && labels[2] == federation && labels[3] == "svc").then(|| labels[1].to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::{AllowedNamespaces, NamespacesFrom};

    fn domain(allowed: Option<AllowedNamespaces>) -> Domain {
        let mut domain: Domain = serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "Domain",
            "metadata": {"name": "myfed", "namespace": "fedns-system"},
            "spec": {"domain": "example.com"},
        }))
        .unwrap();
        domain.spec.allowed_namespaces = allowed;
        domain
    }

    #[test]
    fn admission_follows_the_domain_and_unknown_federations_admit_all() {
        let same = domain(Some(AllowedNamespaces {
            from: NamespacesFrom::Same,
            selector: None,
        }));
        let ownership = Ownership::new(&[same], NamespaceLabels::new(), BTreeMap::new());
        assert!(ownership.admits("myfed", "fedns-system").is_ok());
        assert!(ownership.admits("myfed", "mallory").is_err());
        assert!(ownership.admits("other", "mallory").is_ok());
        assert!(Ownership::default().admits("myfed", "mallory").is_ok());
    }

    #[test]
    fn discovery_names_belong_to_their_namespace_with_or_without_a_domain() {
        let known = Ownership::new(&[domain(None)], NamespaceLabels::new(), BTreeMap::new());
        for ownership in [&known, &Ownership::default()] {
            let of = |name: &str| ownership.discovery_namespace("myfed", name, "cluster.local.");
            assert_eq!(of("nginx.ns.myfed.svc.cluster.local."), Some("ns".to_owned()));
            assert_eq!(of("NGINX.Ns.myfed.svc.cluster.local"), Some("ns".to_owned()));
            assert_eq!(of("www.myfed.svc.cluster.local."), None);
            assert_eq!(of("nginx.ns.other.svc.cluster.local."), None);
        }
    }
}
