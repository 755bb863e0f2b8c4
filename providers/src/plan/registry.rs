//! Ownership records in external-dns's TXT registry format, so fedns and
//! external-dns can share a zone (external-dns `docs/registry/txt.md`,
//! `registry/txt/registry.go` and `registry/mapper/mapper.go`: the
//! `AffixNameMapper` with no prefix or suffix). Shared by the Route53 and
//! Google Cloud DNS providers.
//!
//! * The registry record of an RRset `<first>.<rest>` of type T is a TXT
//!   RRset at `<t>-<first>.<rest>` (T in lower case: `a-nginx.example.com`
//!   for the A RRset of `nginx.example.com`), the "new format" that
//!   external-dns writes with `--txt-new-format-only` and that never collides
//!   with a CNAME;
//! * its value is one character-string:
//!   `heritage=external-dns,external-dns/owner=<owner id>,external-dns/resource=<kind>/<namespace>/<name>`;
//! * external-dns's legacy format (the TXT at the record's own name, for
//!   every type) is read, never written: a legacy record of another owner
//!   still keeps fedns off that name.

use std::collections::BTreeMap;

use fedns_api::RecordType;

use crate::plan::desired::DesiredRRset;
use crate::plan::planner::{CurrentRRset, ZonePlan};

/// The `heritage` label every registry value starts with.
const HERITAGE: &str = "heritage=external-dns";
/// Label holding the owner id.
const OWNER_LABEL: &str = "external-dns/owner";
/// Label holding the source object.
const RESOURCE_LABEL: &str = "external-dns/resource";

/// Owner name of the registry TXT RRset for the `record_type` RRset at
/// `name` (normalised: lower case, no trailing dot).
pub fn txt_name(name: &str, record_type: RecordType) -> String {
    format!("{}-{name}", record_type.to_string().to_ascii_lowercase())
}

/// The registry value for an RRset owned by `owner` and made from
/// `resource` (`crd/<namespace>/<name>`), as the TXT's single
/// character-string (unquoted).
pub fn txt_value(owner: &str, resource: Option<&str>) -> String {
    match resource {
        Some(resource) => format!("{HERITAGE},{OWNER_LABEL}={owner},{RESOURCE_LABEL}={resource}"),
        None => format!("{HERITAGE},{OWNER_LABEL}={owner}"),
    }
}

/// The labels of a registry value, if `text` (one unquoted TXT string) is
/// one: the owner id (empty when absent), and the resource.
pub fn parse_value(text: &str) -> Option<(String, Option<String>)> {
    let mut parts = text.split(',');
    if parts.next()?.trim() != HERITAGE {
        return None;
    }
    let mut owner = String::new();
    let mut resource = None;
    for part in parts {
        match part.split_once('=') {
            Some((OWNER_LABEL, value)) => owner = value.to_owned(),
            Some((RESOURCE_LABEL, value)) => resource = Some(value.to_owned()),
            _ => {}
        }
    }
    Some((owner, resource))
}

/// What a registry record at `txt_name` may stand for: the new-format
/// (name, type) it names, if its first label has a type prefix, and always
/// the legacy reading (the name itself, any type).
pub fn covered(txt_name: &str) -> (Option<(String, RecordType)>, String) {
    let typed = RecordType::ALL.iter().find_map(|t| {
        let prefix = format!("{}-", t.to_string().to_ascii_lowercase());
        txt_name
            .strip_prefix(&prefix)
            .filter(|rest| !rest.is_empty() && !rest.starts_with('.'))
            .map(|rest| (rest.to_owned(), *t))
    });
    (typed, txt_name.to_owned())
}

/// The resource label for a DNSEndpoint `namespace/name`, as external-dns's
/// CRD source writes it.
pub fn resource_of(source: &str) -> String {
    format!("crd/{source}")
}

/// Ownership as the registry records of a zone state it; `T` is the
/// provider's own record set type, kept so a registry record can be
/// deleted exactly as read.
#[derive(Debug)]
pub struct Ownership<T> {
    /// New-format registry records: (name, type, set identifier) →
    /// (owner, the TXT as held). external-dns gives the registry record of
    /// a routed record set the same set identifier (Route53); Cloud DNS has
    /// none (empty).
    pub typed: BTreeMap<(String, RecordType, String), (String, T)>,
    /// Legacy registry records of other owners: name → owner.
    pub legacy: BTreeMap<String, String>,
}

impl<T> Default for Ownership<T> {
    fn default() -> Self {
        Ownership {
            typed: BTreeMap::new(),
            legacy: BTreeMap::new(),
        }
    }
}

impl<T: Clone> Ownership<T> {
    /// Records a registry record at `txt_name` (normalised) owned by
    /// `record_owner`; `our_owner` is fedns's owner id, whose registry
    /// records are always new-format and never read as legacy claims.
    pub fn claim(&mut self, txt_name: &str, set_identifier: &str, record_owner: String, held: T, our_owner: &str) {
        let (typed, legacy) = covered(txt_name);
        if let Some((name, record_type)) = typed {
            self.typed.insert(
                (name, record_type, set_identifier.to_owned()),
                (record_owner.clone(), held),
            );
        }
        if record_owner != our_owner {
            self.legacy.insert(legacy, record_owner);
        }
    }

    /// The owner of the `record_type` RRset at `name`: its new-format
    /// registry record's, else a legacy record's at the name.
    pub fn owner(&self, name: &str, record_type: RecordType, set_identifier: &str) -> Option<String> {
        self.typed
            .get(&(name.to_owned(), record_type, set_identifier.to_owned()))
            .map(|(owner, _)| owner.clone())
            .or_else(|| self.legacy.get(name).cloned())
    }

    /// May fedns write `rrset` in the zone `apex` of `provider` (its name
    /// in messages)? Not when its registry record would fall outside the
    /// zone (records at the apex: reported in `plan.rejected`), nor when a
    /// legacy registry record of another owner claims its name
    /// (external-dns reads it as owning every type there and would delete
    /// ours: `plan.conflicts`).
    pub fn admit<U>(&self, rrset: &DesiredRRset, apex: &str, provider: &str, plan: &mut ZonePlan<U>) -> bool {
        let txt_name = txt_name(&rrset.name, rrset.record_type);
        if !txt_name.ends_with(&format!(".{apex}")) {
            plan.rejected.push((
                rrset.name.clone(),
                rrset.record_type,
                format!("its ownership record {txt_name} would fall outside the zone {apex}; records at the apex are not published to {provider}"),
            ));
            return false;
        }
        if let Some(holder) = self.legacy.get(&rrset.name) {
            plan.conflicts.push((rrset.clone(), format!("owner {holder:?}")));
            return false;
        }
        true
    }

    /// Other owners' registry records whose RRset is gone (`held(name,
    /// type, set identifier)` false): they still claim it, as empty
    /// RRsets the planner will not touch.
    pub fn orphan_claims(&self, our_owner: &str, held: impl Fn(&str, RecordType, &str) -> bool) -> Vec<CurrentRRset> {
        self.typed
            .iter()
            .filter(|((name, record_type, set), (owner, _))| owner != our_owner && !held(name, *record_type, set))
            .map(|((name, record_type, set), (owner, _))| CurrentRRset {
                name: name.clone(),
                record_type: *record_type,
                ttl: 0,
                targets: Vec::new(),
                owner: Some(owner.clone()),
                set_identifier: set.clone(),
                policy: String::new(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_in_external_dns_format() {
        assert_eq!(txt_name("nginx.example.com", RecordType::A), "a-nginx.example.com");
        assert_eq!(
            txt_name("*.apps.example.com", RecordType::AAAA),
            "aaaa-*.apps.example.com"
        );
        assert_eq!(
            txt_value("fedns", Some("crd/ns/nginx")),
            "heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/nginx"
        );
        assert_eq!(
            parse_value("heritage=external-dns,external-dns/owner=team-a,external-dns/resource=service/default/web"),
            Some(("team-a".into(), Some("service/default/web".into())))
        );
        assert_eq!(parse_value("v=spf1 -all"), None);
        assert_eq!(parse_value(""), None);
        assert_eq!(
            covered("cname-www.example.com"),
            (
                Some(("www.example.com".into(), RecordType::CNAME)),
                "cname-www.example.com".into()
            )
        );
        assert_eq!(covered("www.example.com"), (None, "www.example.com".into()));
        assert_eq!(covered("a-.example.com").0, None);
    }
}
