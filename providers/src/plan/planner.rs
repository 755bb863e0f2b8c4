//! The planner shared by the external providers: desired RRsets against
//! what a provider holds, honouring ownership (external-dns's shape).
//!
//! * a desired RRset the provider lacks → create;
//! * one it holds, owned by us, with other targets or TTL → update;
//! * one it holds, owned by us, no longer desired → delete;
//! * a desired name the provider holds under another owner (or none) →
//!   conflict: reported on the DNSEndpoint, never overwritten.

use std::collections::{BTreeMap, BTreeSet};

use fedns_api::RecordType;

use crate::plan::desired::DesiredRRset;

/// An RRset as a provider holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentRRset {
    /// Owner name, normalised (lower case, no trailing dot).
    pub name: String,
    /// RR type.
    pub record_type: RecordType,
    /// TTL in seconds.
    pub ttl: u32,
    /// Targets in the provider's presentation form, sorted.
    pub targets: Vec<String>,
    /// Owner id recorded with it (None: not created by an owner-aware tool).
    pub owner: Option<String>,
    /// Set identifier of a routed record set (Route53); empty otherwise.
    pub set_identifier: String,
    /// Its routing attribute, as [`DesiredRRset::policy_key`] writes it.
    pub policy: String,
}

/// One change to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create a new RRset.
    Create(DesiredRRset),
    /// Replace an owned RRset.
    Update {
        /// What the provider holds.
        current: CurrentRRset,
        /// What it should hold.
        desired: DesiredRRset,
    },
    /// Remove an owned RRset.
    Delete(CurrentRRset),
}

impl Change {
    /// The owner name the change concerns.
    pub fn name(&self) -> &str {
        match self {
            Change::Create(d) | Change::Update { desired: d, .. } => &d.name,
            Change::Delete(c) => &c.name,
        }
    }
}

/// A desired RRset held back because another owner holds the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// What we wanted.
    pub desired: DesiredRRset,
    /// Who holds it (None: a record with no owner).
    pub holder: Option<String>,
}

/// Changes and conflicts for one zone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Changes to apply, sorted by name.
    pub changes: Vec<Change>,
    /// Conflicts to report.
    pub conflicts: Vec<Conflict>,
}

impl Plan {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

impl Conflict {
    /// The conflict as a provider reports it: (what we wanted, who holds it).
    pub fn reported(self) -> (DesiredRRset, String) {
        let holder = self.holder_text();
        (self.desired, holder)
    }

    /// Who holds the name, in the words of a condition message:
    /// `owner "x"`, or `a record with no owner`.
    pub fn holder_text(&self) -> String {
        self.holder
            .as_ref()
            .map_or_else(|| "a record with no owner".into(), |h| format!("owner {h:?}"))
    }
}

/// A provider's planned work for one zone: its own change units (`U`),
/// and what it reports.
#[derive(Debug)]
pub struct ZonePlan<U> {
    /// Logical changes, in order.
    pub units: Vec<U>,
    /// Desired RRsets held back: (RRset, holder).
    pub conflicts: Vec<(DesiredRRset, String)>,
    /// Desired RRsets the provider cannot express: (name, type, why).
    pub rejected: Vec<(String, RecordType, String)>,
    /// RRsets published without their traffic policy: (name, type, why).
    pub downgraded: Vec<(String, RecordType, String)>,
    /// RRsets owned by fedns now.
    pub owned: usize,
}

impl<U> Default for ZonePlan<U> {
    fn default() -> Self {
        ZonePlan {
            units: Vec::new(),
            conflicts: Vec::new(),
            rejected: Vec::new(),
            downgraded: Vec::new(),
            owned: 0,
        }
    }
}

fn sorted(targets: &[String]) -> Vec<String> {
    let set: BTreeSet<String> = targets.iter().cloned().collect();
    set.into_iter().collect()
}

/// Plans one zone. `owner` is our owner id; `current` is everything the
/// provider holds in the zone, of any owner.
pub fn plan(desired: &[DesiredRRset], current: &[CurrentRRset], owner: &str) -> Plan {
    // Keyed by (name, type, set identifier): routed record sets (Route53)
    // are one per set identifier.
    let mut held: BTreeMap<(&str, RecordType, &str), &CurrentRRset> = BTreeMap::new();
    let mut foreign_names: BTreeMap<&str, Option<String>> = BTreeMap::new();
    for rrset in current {
        held.insert(
            (rrset.name.as_str(), rrset.record_type, rrset.set_identifier.as_str()),
            rrset,
        );
        if rrset.owner.as_deref() != Some(owner) {
            foreign_names.insert(rrset.name.as_str(), rrset.owner.clone());
        }
    }
    let mut out = Plan::default();
    let mut wanted: BTreeSet<(&str, RecordType, &str)> = BTreeSet::new();
    let foreign_at = |name: &str, t: RecordType| {
        held.iter()
            .any(|((n, ty, _), c)| *n == name && *ty == t && c.owner.as_deref() != Some(owner))
    };
    for d in desired {
        wanted.insert((d.name.as_str(), d.record_type, d.set_identifier.as_str()));
        // Another owner at this name: a CNAME there, or the same type, or
        // any of our CNAMEs would collide with it.
        if let Some(holder) = foreign_names.get(d.name.as_str()) {
            let collides = foreign_at(&d.name, d.record_type)
                || d.record_type == RecordType::CNAME
                || foreign_at(&d.name, RecordType::CNAME);
            if collides {
                out.conflicts.push(Conflict {
                    desired: d.clone(),
                    holder: holder.clone(),
                });
                continue;
            }
        }
        match held.get(&(d.name.as_str(), d.record_type, d.set_identifier.as_str())) {
            None => out.changes.push(Change::Create(d.clone())),
            Some(c) if c.owner.as_deref() == Some(owner) => {
                if c.ttl != d.ttl || sorted(&c.targets) != sorted(&d.targets) || c.policy != d.policy_key() {
                    out.changes.push(Change::Update {
                        current: (*c).clone(),
                        desired: d.clone(),
                    });
                }
            }
            Some(_) => unreachable!("foreign RRsets were handled above"),
        }
    }
    for c in current {
        if c.owner.as_deref() == Some(owner)
            && !wanted.contains(&(c.name.as_str(), c.record_type, c.set_identifier.as_str()))
        {
            out.changes.push(Change::Delete(c.clone()));
        }
    }
    out.changes.sort_by(|a, b| a.name().cmp(b.name()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(name: &str, t: RecordType, targets: &[&str], ttl: u32) -> DesiredRRset {
        DesiredRRset {
            name: name.into(),
            record_type: t,
            ttl,
            targets: targets.iter().map(|s| s.to_string()).collect(),
            provider_specific: vec![],
            sources: ["ns/service-nginx".to_string()].into(),
            routing: None,
            set_identifier: String::new(),
        }
    }

    fn current(name: &str, t: RecordType, targets: &[&str], ttl: u32, owner: Option<&str>) -> CurrentRRset {
        CurrentRRset {
            name: name.into(),
            record_type: t,
            ttl,
            targets: targets.iter().map(|s| s.to_string()).collect(),
            owner: owner.map(str::to_owned),
            set_identifier: String::new(),
            policy: String::new(),
        }
    }

    #[test]
    fn creates_updates_deletes_only_what_we_own() {
        let d = vec![
            desired("a.example.com", RecordType::A, &["192.0.2.1"], 30),
            desired("b.example.com", RecordType::A, &["192.0.2.2", "192.0.2.3"], 30),
            desired("same.example.com", RecordType::A, &["192.0.2.9"], 30),
        ];
        let c = vec![
            current("b.example.com", RecordType::A, &["192.0.2.2"], 30, Some("fedns")),
            current("same.example.com", RecordType::A, &["192.0.2.9"], 30, Some("fedns")),
            current("old.example.com", RecordType::A, &["192.0.2.4"], 30, Some("fedns")),
            current(
                "theirs.example.com",
                RecordType::A,
                &["192.0.2.5"],
                30,
                Some("someone-else"),
            ),
        ];
        let p = plan(&d, &c, "fedns");
        let kinds: Vec<(&str, &str)> = p
            .changes
            .iter()
            .map(|ch| {
                (
                    ch.name(),
                    match ch {
                        Change::Create(_) => "create",
                        Change::Update { .. } => "update",
                        Change::Delete(_) => "delete",
                    },
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("a.example.com", "create"),
                ("b.example.com", "update"),
                ("old.example.com", "delete")
            ]
        );
        assert!(p.conflicts.is_empty());
    }

    #[test]
    fn idle_when_nothing_changed() {
        let d = vec![desired("a.example.com", RecordType::A, &["192.0.2.2", "192.0.2.1"], 30)];
        let c = vec![current(
            "a.example.com",
            RecordType::A,
            &["192.0.2.1", "192.0.2.2"],
            30,
            Some("fedns"),
        )];
        assert!(plan(&d, &c, "fedns").is_empty());
    }

    #[test]
    fn foreign_records_are_conflicts_never_changed() {
        let d = vec![
            desired("taken.example.com", RecordType::A, &["192.0.2.1"], 30),
            desired("cname.example.com", RecordType::CNAME, &["x.example.com"], 30),
            desired("mixed.example.com", RecordType::AAAA, &["2001:db8::1"], 30),
        ];
        let c = vec![
            current(
                "taken.example.com",
                RecordType::A,
                &["198.51.100.1"],
                300,
                Some("external-dns"),
            ),
            current("cname.example.com", RecordType::A, &["198.51.100.2"], 300, None),
            current(
                "mixed.example.com",
                RecordType::A,
                &["198.51.100.3"],
                300,
                Some("external-dns"),
            ),
        ];
        let p = plan(&d, &c, "fedns");
        assert_eq!(p.conflicts.len(), 2);
        assert_eq!(p.conflicts[0].holder.as_deref(), Some("external-dns"));
        // An AAAA beside someone's A at the same name does not collide.
        assert_eq!(p.changes, vec![Change::Create(d[2].clone())]);
    }
}
