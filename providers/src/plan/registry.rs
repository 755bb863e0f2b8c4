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
//!   still keeps fedns off that name;
//! * a wildcard's first label `*` is replaced by `--txt-wildcard-replacement`
//!   when one is given (`*.apps.example.com` → `a-wildcard.apps.example.com`
//!   with `wildcard`), as external-dns's `AffixNameMapper.ToTXTName` does;
//!   reading, a registry record whose first label (after the type) is the
//!   replacement stands for the wildcard. Without one, the asterisk stays
//!   (`a-*.apps.example.com`): a valid name in Route53 (an ordinary octet
//!   there), refused by Cloud DNS, which allows `*` only as a whole first
//!   label, so there a wildcard is refused at plan time naming the flag;
//! * an ownership record name with a label over 63 octets (a 60-octet
//!   first label plus `aaaa-`) or over 253 octets is no DNS name:
//!   external-dns then writes no ownership record at all
//!   (`endpoint.NewEndpoint` returns nil for a label over 63 and
//!   `generateTXTRecordWithFilter` skips it), leaving the record unowned;
//!   fedns refuses the RRset at plan time instead, reported on its
//!   DNSEndpoint, since a record it cannot own it could never update or
//!   delete.
//!
//! external-dns source read for these rules: kubernetes-sigs/external-dns
//! v0.22.0-12-g2bf1bf8af (commit 2bf1bf8af2b70f23579f9147c1f7e9394f7f83d5),
//! `registry/mapper/mapper.go` (`ToTXTName`, `ToEndpointName`),
//! `registry/txt/registry.go` (`wildcardReplacement` in `Records`,
//! `generateTXTRecordWithFilter`) and `endpoint/endpoint.go`
//! (`NewEndpointWithTTL`, the 63-octet label check).

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

/// Longest label of a DNS name, in octets (RFC 1035 §2.3.4).
pub const MAX_LABEL: usize = 63;
/// Longest DNS name in presentation form without the final dot, in octets
/// (RFC 1035 §2.3.4: 255 on the wire).
pub const MAX_NAME: usize = 253;

/// Owner name of the registry TXT RRset for the `record_type` RRset at
/// `name` (normalised: lower case, no trailing dot); a leading `*` label
/// becomes `wildcard_replacement` when that is not empty (external-dns's
/// `--txt-wildcard-replacement`).
pub fn txt_name(name: &str, record_type: RecordType, wildcard_replacement: &str) -> String {
    let (first, rest) = match name.split_once('.') {
        Some((first, rest)) => (first, Some(rest)),
        None => (name, None),
    };
    let first = if first == "*" && !wildcard_replacement.is_empty() {
        wildcard_replacement
    } else {
        first
    };
    let t = record_type.to_string().to_ascii_lowercase();
    match rest {
        Some(rest) => format!("{t}-{first}.{rest}"),
        None => format!("{t}-{first}"),
    }
}

/// Why the registry record name `txt_name` cannot be written, if it cannot:
/// a label over 63 octets, a name over 253, or (when `asterisk_in_labels`
/// is false, as in Cloud DNS) an asterisk inside a label.
pub fn txt_name_problem(txt_name: &str, asterisk_in_labels: bool) -> Option<String> {
    if let Some(label) = txt_name.split('.').find(|l| l.len() > MAX_LABEL) {
        return Some(format!(
            "its ownership record name {txt_name} has a label of {} octets ({label}), over the {MAX_LABEL} DNS allows; shorten the first label of the name (external-dns writes no ownership record for such a name)",
            label.len()
        ));
    }
    if txt_name.len() > MAX_NAME {
        return Some(format!(
            "its ownership record name {txt_name} is {} octets long, over the {MAX_NAME} DNS allows; shorten the name",
            txt_name.len()
        ));
    }
    if !asterisk_in_labels && txt_name.contains('*') {
        return Some(format!(
            "its ownership record name {txt_name} is not a valid name here (an asterisk is allowed only as a whole leftmost label); start fedns with --txt-wildcard-replacement (external-dns's flag, for example --txt-wildcard-replacement=wildcard) so the ownership records of wildcards replace the asterisk"
        ));
    }
    None
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
/// (name, type) it names, if its first label has a type prefix (a first
/// label equal to a non-empty `wildcard_replacement` standing for `*`, as
/// external-dns reads it), and always the legacy reading (the name itself,
/// any type).
pub fn covered(txt_name: &str, wildcard_replacement: &str) -> (Option<(String, RecordType)>, String) {
    let typed = RecordType::ALL.iter().find_map(|t| {
        let prefix = format!("{}-", t.to_string().to_ascii_lowercase());
        txt_name
            .strip_prefix(&prefix)
            .filter(|rest| !rest.is_empty() && !rest.starts_with('.'))
            .map(|rest| (unreplaced(rest, wildcard_replacement), *t))
    });
    (typed, txt_name.to_owned())
}

/// `name` with a first label equal to `wildcard_replacement` (not empty)
/// turned back into `*`.
fn unreplaced(name: &str, wildcard_replacement: &str) -> String {
    if wildcard_replacement.is_empty() {
        return name.to_owned();
    }
    match name.split_once('.') {
        Some((first, rest)) if first == wildcard_replacement => format!("*.{rest}"),
        None if name == wildcard_replacement => "*".to_owned(),
        _ => name.to_owned(),
    }
}

/// The resource label for a DNSEndpoint `namespace/name`, as external-dns's
/// CRD source writes it.
pub fn resource_of(source: &str) -> String {
    format!("crd/{source}")
}

/// A TXT RRset of a zone holding a registry value, as read: its name
/// (normalised), set identifier (empty: none), the value's owner id and
/// resource, and the provider's record as held.
#[derive(Debug, Clone)]
pub struct RegistryCandidate<T> {
    /// Owner name of the TXT RRset.
    pub name: String,
    /// Set identifier (Route53), empty elsewhere.
    pub set_identifier: String,
    /// `external-dns/owner` of the value (empty when absent).
    pub owner: String,
    /// `external-dns/resource` of the value.
    pub resource: Option<String>,
    /// The record as held.
    pub held: T,
}

/// Sorts a zone's registry-valued TXT RRsets into the registry records
/// that are believed and those that are data: a TXT that has a registry
/// record of its own (`txt-<name>`, any owner) is some owner's desired
/// TXT, not a statement of ownership, and is returned as data; it claims
/// nothing. A value naming `our_owner` is believed to be fedns's only
/// when its resource is a DNSEndpoint (`crd/<namespace>/<name>`, which
/// every registry record fedns writes carries); otherwise it is read as
/// another owner's, so fedns never deletes or overwrites a record on its
/// word.
pub fn sort_candidates<T>(
    candidates: Vec<RegistryCandidate<T>>,
    wildcard_replacement: &str,
    our_owner: &str,
) -> (Vec<RegistryCandidate<T>>, Vec<T>) {
    let names: std::collections::BTreeSet<String> = candidates.iter().map(|c| c.name.clone()).collect();
    let mut registry = Vec::new();
    let mut data = Vec::new();
    for mut candidate in candidates {
        if names.contains(&txt_name(&candidate.name, RecordType::TXT, wildcard_replacement)) {
            data.push(candidate.held);
            continue;
        }
        let crd = candidate
            .resource
            .as_deref()
            .is_some_and(|r| r.strip_prefix("crd/").is_some_and(|rest| rest.split('/').count() == 2));
        if candidate.owner == our_owner && !crd {
            candidate.owner = format!(
                "{our_owner} (a registry record whose resource {:?} is no DNSEndpoint: not written by fedns)",
                candidate.resource.as_deref().unwrap_or_default()
            );
        }
        registry.push(candidate);
    }
    (registry, data)
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
    /// `--txt-wildcard-replacement` (empty: none).
    pub wildcard_replacement: String,
    /// Does the provider take `*` inside a label as an ordinary octet
    /// (Route53), or refuse it (Cloud DNS)?
    pub asterisk_in_labels: bool,
}

impl<T> Default for Ownership<T> {
    fn default() -> Self {
        Ownership::new("", true)
    }
}

impl<T> Ownership<T> {
    /// No registry records yet, for a provider that names wildcards'
    /// registry records with `wildcard_replacement` (empty: none) and does
    /// (`asterisk_in_labels`) or does not accept `*` inside a label.
    pub fn new(wildcard_replacement: &str, asterisk_in_labels: bool) -> Self {
        Ownership {
            typed: BTreeMap::new(),
            legacy: BTreeMap::new(),
            wildcard_replacement: wildcard_replacement.to_ascii_lowercase(),
            asterisk_in_labels,
        }
    }

    /// The registry record name for the `record_type` RRset at `name`.
    pub fn txt_name(&self, name: &str, record_type: RecordType) -> String {
        txt_name(name, record_type, &self.wildcard_replacement)
    }
}

impl<T: Clone> Ownership<T> {
    /// Records a registry record at `txt_name` (normalised) owned by
    /// `record_owner`; `our_owner` is fedns's owner id, whose registry
    /// records are always new-format and never read as legacy claims.
    pub fn claim(&mut self, txt_name: &str, set_identifier: &str, record_owner: String, held: T, our_owner: &str) {
        let (typed, legacy) = covered(txt_name, &self.wildcard_replacement);
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
    /// ours: `plan.conflicts`), nor when its registry record name is no
    /// valid name there ([`txt_name_problem`]) or would be the one of the
    /// wildcard beside it (a first label equal to the wildcard
    /// replacement): both in `plan.rejected`.
    pub fn admit<U>(&self, rrset: &DesiredRRset, apex: &str, provider: &str, plan: &mut ZonePlan<U>) -> bool {
        let txt_name = self.txt_name(&rrset.name, rrset.record_type);
        let mut reject = |why: String| {
            plan.rejected.push((rrset.name.clone(), rrset.record_type, why));
            false
        };
        if let Some(why) = txt_name_problem(&txt_name, self.asterisk_in_labels) {
            return reject(format!("{why}; not published to {provider}"));
        }
        let first = rrset.name.split('.').next().unwrap_or_default();
        if !self.wildcard_replacement.is_empty() && first == self.wildcard_replacement {
            return reject(format!(
                "its ownership record {txt_name} would also be the one of the wildcard *.{} (--txt-wildcard-replacement={}); not published to {provider}",
                rrset.name.split_once('.').map_or("", |(_, rest)| rest),
                self.wildcard_replacement
            ));
        }
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

    /// `our_owner`'s registry record of the `record_type` RRset at `name`
    /// (set identifier `set`), as held.
    pub fn ours(&self, our_owner: &str, name: &str, record_type: RecordType, set: &str) -> Option<&T> {
        self.typed
            .get(&(name.to_owned(), record_type, set.to_owned()))
            .filter(|(owner, _)| owner == our_owner)
            .map(|(_, held)| held)
    }

    /// `our_owner`'s registry records to clean up: those whose RRset
    /// `keep(name, type, set identifier)` says is neither held nor being
    /// written, as (name, type, the record as held).
    pub fn stale<'a>(
        &'a self,
        our_owner: &str,
        keep: impl Fn(&str, RecordType, &str) -> bool,
    ) -> Vec<(&'a str, RecordType, &'a T)> {
        self.typed
            .iter()
            .filter(|((name, record_type, set), (owner, _))| owner == our_owner && !keep(name, *record_type, set))
            .map(|((name, record_type, _), (_, held))| (name.as_str(), *record_type, held))
            .collect()
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
        assert_eq!(txt_name("nginx.example.com", RecordType::A, ""), "a-nginx.example.com");
        assert_eq!(
            txt_name("*.apps.example.com", RecordType::AAAA, ""),
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
            covered("cname-www.example.com", ""),
            (
                Some(("www.example.com".into(), RecordType::CNAME)),
                "cname-www.example.com".into()
            )
        );
        assert_eq!(covered("www.example.com", ""), (None, "www.example.com".into()));
        assert_eq!(covered("a-.example.com", "").0, None);
    }

    fn desired(name: &str, record_type: RecordType) -> DesiredRRset {
        DesiredRRset {
            name: name.into(),
            record_type,
            ttl: 60,
            targets: vec!["192.0.2.1".into()],
            provider_specific: vec![],
            sources: Default::default(),
            routing: None,
            set_identifier: String::new(),
        }
    }

    /// external-dns's `--txt-wildcard-replacement`: the registry record of
    /// `*.wild.example.com` is `a-wildcard.wild.example.com`, and reading
    /// it back claims the wildcard (`AffixNameMapper.ToTXTName` and
    /// `TXTRegistry.Records`).
    #[test]
    fn wildcard_registry_names_use_the_replacement_both_ways() {
        assert_eq!(
            txt_name("*.wild.example.com", RecordType::A, "wildcard"),
            "a-wildcard.wild.example.com"
        );
        assert_eq!(
            txt_name("web.wild.example.com", RecordType::A, "wildcard"),
            "a-web.wild.example.com"
        );
        assert_eq!(
            covered("a-wildcard.wild.example.com", "wildcard").0,
            Some(("*.wild.example.com".into(), RecordType::A))
        );
        let mut ownership: Ownership<()> = Ownership::new("wildcard", false);
        ownership.claim("a-wildcard.wild.example.com", "", "team-a".into(), (), "fedns");
        assert_eq!(
            ownership.owner("*.wild.example.com", RecordType::A, ""),
            Some("team-a".into())
        );

        let mut plan: ZonePlan<()> = ZonePlan::default();
        let with = Ownership::<()>::new("wildcard", false);
        assert!(with.admit(
            &desired("*.wild.example.com", RecordType::A),
            "example.com",
            "Cloud DNS",
            &mut plan
        ));
        // The literal name would share the wildcard's registry record.
        assert!(!with.admit(
            &desired("wildcard.wild.example.com", RecordType::A),
            "example.com",
            "Cloud DNS",
            &mut plan
        ));
        assert!(
            plan.rejected[0].2.contains("also be the one of the wildcard"),
            "{:?}",
            plan.rejected
        );
    }

    #[test]
    fn registry_names_that_are_no_valid_names_are_refused_at_plan_time() {
        // Without a replacement, Cloud DNS cannot hold `a-*.…`: refused,
        // naming the flag; Route53 takes the asterisk as an octet.
        let mut plan: ZonePlan<()> = ZonePlan::default();
        let clouddns = Ownership::<()>::new("", false);
        assert!(!clouddns.admit(
            &desired("*.wild.example.com", RecordType::A),
            "example.com",
            "Cloud DNS",
            &mut plan
        ));
        assert!(
            plan.rejected[0].2.contains("--txt-wildcard-replacement"),
            "{:?}",
            plan.rejected
        );
        let route53 = Ownership::<()>::new("", true);
        assert!(route53.admit(
            &desired("*.wild.example.com", RecordType::A),
            "example.com",
            "Route53",
            &mut plan
        ));

        // A 60-octet first label: `a-` fits (62), `aaaa-` does not (65).
        let long = format!("{}.example.com", "l".repeat(60));
        let mut plan: ZonePlan<()> = ZonePlan::default();
        assert!(route53.admit(&desired(&long, RecordType::A), "example.com", "Route53", &mut plan));
        assert!(!route53.admit(&desired(&long, RecordType::AAAA), "example.com", "Route53", &mut plan));
        assert!(!clouddns.admit(&desired(&long, RecordType::AAAA), "example.com", "Cloud DNS", &mut plan));
        assert_eq!(plan.rejected.len(), 2);
        assert!(plan.rejected[0].2.contains("65 octets"), "{:?}", plan.rejected);
        assert_eq!(txt_name_problem(&txt_name(&long, RecordType::A, ""), false), None);
    }

    #[test]
    fn a_registry_value_that_is_data_claims_nothing_and_ours_needs_a_dnsendpoint() {
        let candidate = |name: &str, owner: &str, resource: Option<&str>| RegistryCandidate {
            name: name.into(),
            set_identifier: String::new(),
            owner: owner.into(),
            resource: resource.map(str::to_owned),
            held: name.to_owned(),
        };
        let (registry, data) = sort_candidates(
            vec![
                // A tenant's TXT forging fedns's ownership of www, written by
                // fedns with its own registry record beside it.
                candidate("a-www.example.com", "fedns", Some("crd/mallory/x")),
                candidate("txt-a-www.example.com", "fedns", Some("crd/mallory/x")),
                candidate("a-api.example.com", "fedns", Some("crd/shop/api")),
                candidate("a-old.example.com", "fedns", None),
                candidate("a-ext.example.com", "external-dns", None),
            ],
            "",
            "fedns",
        );
        assert_eq!(data, ["a-www.example.com"]);
        let owners: Vec<(&str, &str)> = registry.iter().map(|c| (c.name.as_str(), c.owner.as_str())).collect();
        assert_eq!(owners[0], ("txt-a-www.example.com", "fedns"));
        assert_eq!(owners[1], ("a-api.example.com", "fedns"));
        assert!(
            owners[2].1.starts_with("fedns (a registry record whose resource"),
            "{owners:?}"
        );
        assert_eq!(owners[3], ("a-ext.example.com", "external-dns"));
    }
}
