//! What `fedns webhook-provider` will not serve, decided before anything
//! is stored: external-dns learns of a refusal only from the answer to
//! `POST /records` (500, a soft error it logs and retries; the protocol
//! has no per-record refusal), so a change the federation would then not
//! publish (a DNSEndpoint condition external-dns never reads) must be
//! refused there, naming the rule or the holder.
//!
//! A name another DNSEndpoint holds is refused only when the controller
//! would honour that claim: a DNSEndpoint of a namespace the zone does not
//! admit, or claiming another namespace's service name, holds nothing, so
//! it cannot keep an instance off a name. A holder is called another
//! external-dns instance's only when it is in this instance's namespace,
//! labelled ([`super::OWNER_LABEL`]) and named as an instance's DNSEndpoint
//! is: any namespace can put the label on its own DNSEndpoints.

use std::collections::{BTreeMap, BTreeSet};

use fedns_api::{DNSEndpoint, Domain, NamespacesFrom};
use fedns_providers::plan::ownership::{ClaimOrder, NamespaceLabels, ZoneAdmission};
use fedns_providers::webhook::api::WireEndpoint;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

use super::{normal, WebhookServer};

/// Why a change is refused: the metric label and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `type`, `zone`, `namespace`, `service-name`, `reserved` (a name of the Domain's
    /// namespace or granted to another), `cname` or `held` (by an older claim, at
    /// the name or above or below it).
    pub rule: &'static str,
    /// One line for external-dns's log.
    pub message: String,
}

impl Refusal {
    fn new(rule: &'static str, message: String) -> Refusal {
        Refusal { rule, message }
    }
}

/// The zone (Domain) holding `name`: the one with the longest apex.
fn zone_of<'a>(domains: &'a [Domain], name: &str) -> Option<&'a Domain> {
    domains
        .iter()
        .filter(|d| {
            let apex = normal(&d.spec.domain);
            name == apex || name.ends_with(&format!(".{apex}"))
        })
        .max_by_key(|d| d.spec.domain.len())
}

/// Names in `result` (the instance's whole set once the changes are
/// applied) where a CNAME shares its owner name with other data, which
/// RFC 1034 §3.6.2 (and RFC 2181 §10.1) forbid: what external-dns 0.17
/// and earlier write with their TXT registry in its old format (the
/// ownership TXT at the record's own name; 0.18 writes `cname-<name>`).
fn cname_clashes(result: &[&WireEndpoint]) -> BTreeSet<String> {
    let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in result {
        types
            .entry(normal(&e.dns_name))
            .or_default()
            .insert(e.record_type.to_ascii_uppercase());
    }
    types
        .into_iter()
        .filter(|(_, t)| t.contains("CNAME") && t.len() > 1)
        .map(|(name, _)| name)
        .collect()
}

/// Whether the controller would honour `other`'s claim of `name` (in the
/// zone of `domain`): its namespace is admitted and the name is not
/// another namespace's service name. `labels` caches namespaces' labels
/// (read for a Domain that admits by selector); a namespace that cannot be
/// read counts as admitted, so an unknown claim still holds the name (the
/// controller may well honour it).
async fn honoured(
    server: &WebhookServer,
    domain: &Domain,
    other: &DNSEndpoint,
    name: &str,
    labels: &mut NamespaceLabels,
) -> bool {
    let namespace = other.metadata.namespace.as_deref().unwrap_or_default();
    let admission = ZoneAdmission::of(domain);
    let claims_by_rule = other
        .spec
        .endpoints
        .iter()
        .filter(|e| normal(&e.dns_name) == name)
        .any(|e| admission.may_claim(namespace, name, e.record_type).is_ok());
    if !claims_by_rule {
        return false;
    }
    let selector = domain
        .spec
        .allowed_namespaces
        .as_ref()
        .is_some_and(|a| a.from == NamespacesFrom::Selector);
    if selector && !labels.contains_key(namespace) {
        match Api::<Namespace>::all(server.client.clone()).get_opt(namespace).await {
            Ok(found) => {
                let own = found.and_then(|n| n.metadata.labels).unwrap_or_default();
                labels.insert(namespace.to_owned(), own);
            }
            Err(e) => {
                tracing::debug!(namespace, error = %e, "webhook provider: a holder's Namespace is unreadable; its claim counts");
                return true;
            }
        }
    }
    admission.admits(namespace, labels).is_ok()
}

/// Whether `other` is another external-dns instance's DNSEndpoint, as
/// this server writes its own: in the server's namespace, labelled with an
/// owner and named after it.
fn is_instance(server: &WebhookServer, other: &DNSEndpoint) -> bool {
    let Some(owner) = other.metadata.labels.as_ref().and_then(|l| l.get(super::OWNER_LABEL)) else {
        return false;
    };
    other.metadata.namespace.as_deref() == Some(server.namespace.as_str())
        && other.metadata.name.as_deref() == Some(format!("external-dns-{owner}").as_str())
}

/// The first reason the server will not serve `changed` (the created and
/// updated endpoints) with `result` as the instance's whole set, or None.
///
/// # Errors
/// The host cluster could not be read (the caller answers 500 too, as a
/// provider error).
pub async fn refusal(
    server: &WebhookServer,
    changed: &[&WireEndpoint],
    result: &[&WireEndpoint],
) -> Result<Option<Refusal>, String> {
    for e in changed {
        if fedns_api::RecordType::from_mnemonic(&e.record_type.to_ascii_uppercase()).is_none() {
            return Ok(Some(Refusal::new(
                "type",
                format!(
                    "record type {:?} of {} is not one fedns publishes",
                    e.record_type, e.dns_name
                ),
            )));
        }
    }
    if changed.is_empty() {
        return Ok(None);
    }
    let domains = Api::<Domain>::namespaced(server.client.clone(), &server.domain_namespace)
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing Domains in {}: {e}", server.domain_namespace))?
        .items;
    let mut labels: Option<NamespaceLabels> = None;
    let mut zones: BTreeMap<String, &Domain> = BTreeMap::new();
    for e in changed {
        let name = normal(&e.dns_name);
        let Some(domain) = zone_of(&domains, &name) else {
            let zones: Vec<String> = domains.iter().map(|d| normal(&d.spec.domain)).collect();
            return Ok(Some(Refusal::new(
                "zone",
                format!("{name} is in no zone of the federation (zones: {})", zones.join(", ")),
            )));
        };
        zones.insert(name.clone(), domain);
        let admission = ZoneAdmission::of(domain);
        let selector = domain
            .spec
            .allowed_namespaces
            .as_ref()
            .is_some_and(|a| a.from == NamespacesFrom::Selector);
        if selector && labels.is_none() {
            let namespace = Api::<Namespace>::all(server.client.clone())
                .get_opt(&server.namespace)
                .await
                .map_err(|e| format!("reading Namespace {}: {e}", server.namespace))?;
            let own = namespace.and_then(|n| n.metadata.labels).unwrap_or_default();
            labels = Some(BTreeMap::from([(server.namespace.clone(), own)]));
        }
        if let Err(why) = admission.admits(&server.namespace, labels.as_ref().unwrap_or(&BTreeMap::new())) {
            return Ok(Some(Refusal::new("namespace", format!("{name}: {why}"))));
        }
        let record_type = fedns_api::RecordType::from_mnemonic(&e.record_type.to_ascii_uppercase())
            .unwrap_or(fedns_api::RecordType::A);
        if let Err(refusal) = admission.may_claim(&server.namespace, &name, record_type) {
            let rule = if admission.service_namespace(&name, &admission.apex).is_some() {
                "service-name"
            } else {
                "reserved"
            };
            return Ok(Some(Refusal::new(rule, refusal.message)));
        }
    }
    let changed_names: BTreeSet<String> = changed.iter().map(|e| normal(&e.dns_name)).collect();
    if let Some(name) = cname_clashes(result).into_iter().find(|n| changed_names.contains(n)) {
        return Ok(Some(Refusal::new(
            "cname",
            format!(
                "{name}: a CNAME cannot share its name with other data (RFC 1034 §3.6.2); external-dns 0.17 and earlier \
                 write their ownership TXT at the record's own name: run external-dns 0.18 or later, or set --txt-prefix"
            ),
        )));
    }
    // One name, one owner: the oldest DNSEndpoint whose claim of a name
    // the controller honours keeps it, so a name another DNSEndpoint
    // claimed first would never be served from here.
    let all = Api::<DNSEndpoint>::all(server.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing DNSEndpoints: {e}"))?
        .items;
    let ours = all.iter().find(|o| {
        o.metadata.namespace.as_deref() == Some(server.namespace.as_str())
            && o.metadata.name.as_deref() == Some(server.object_name().as_str())
    });
    let our_order = ours.map(|o| ClaimOrder::of(&o.metadata));
    let mut holder_labels = labels.unwrap_or_default();
    for other in &all {
        if ours.is_some_and(|o| std::ptr::eq(o, other)) {
            continue;
        }
        let theirs = ClaimOrder::of(&other.metadata);
        // Not created yet: ours would be the newest claim of all.
        if our_order.as_ref().is_some_and(|ours| theirs >= *ours) {
            continue;
        }
        for e in &other.spec.endpoints {
            let name = normal(&e.dns_name);
            // The name itself, or (outside service names, other namespaces
            // only) a name above or below one of ours.
            let Some((ours_name, domain)) = zones.get(&name).map(|d| (name.clone(), *d)).or_else(|| {
                if other.metadata.namespace.as_deref() == Some(server.namespace.as_str()) {
                    return None;
                }
                zones
                    .iter()
                    .find(|(changed, domain)| {
                        let admission = ZoneAdmission::of(domain);
                        admission.hierarchy_group(changed).is_some()
                            && admission.hierarchy_group(&name).is_some()
                            && (fedns_api::names::is_subdomain(changed, &name)
                                || fedns_api::names::is_subdomain(&name, changed))
                    })
                    .map(|(changed, domain)| (changed.clone(), *domain))
            }) else {
                continue;
            };
            if !honoured(server, domain, other, &name, &mut holder_labels).await {
                continue;
            }
            let holder = format!(
                "{}/{}",
                other.metadata.namespace.as_deref().unwrap_or_default(),
                other.metadata.name.as_deref().unwrap_or_default()
            );
            let whose = if is_instance(server, other) {
                "another external-dns instance's DNSEndpoint"
            } else {
                "the federation's DNSEndpoint"
            };
            let what = if ours_name == name {
                format!("{} is held by {whose} {holder}, which claimed it first", e.dns_name)
            } else {
                format!(
                    "{ours_name}: {name}, above or below it, is held by {whose} {holder}, which claimed it first (outside service names a namespace's names keep other namespaces off the names above and below them)"
                )
            };
            return Ok(Some(Refusal::new("held", what)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(name: &str, record_type: &str) -> WireEndpoint {
        WireEndpoint {
            dns_name: name.into(),
            record_type: record_type.into(),
            ..WireEndpoint::default()
        }
    }

    #[test]
    fn a_cname_beside_other_data_clashes() {
        let (cname, txt, a, other) = (
            ep("www.example.com", "CNAME"),
            ep("WWW.example.com.", "TXT"),
            ep("api.example.com", "A"),
            ep("cname-www.example.com", "TXT"),
        );
        assert_eq!(
            cname_clashes(&[&cname, &txt, &a]),
            BTreeSet::from(["www.example.com".to_owned()])
        );
        assert!(
            cname_clashes(&[&cname, &other, &a]).is_empty(),
            "the 0.18 registry name"
        );
    }
}
