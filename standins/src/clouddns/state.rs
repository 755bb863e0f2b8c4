//! Projects, managed zones, their record sets and their changes; applying
//! a change atomically with the real API's checks and error order.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::error::GoogleError;
use super::records::{self, RecordSet};
use super::Quota;

/// Whether a zone is served on the internet or to VPC networks only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// `public`.
    Public,
    /// `private`.
    Private,
}

impl Visibility {
    /// The JSON value.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
        }
    }
}

/// One change, as received and applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Sequential per zone, from `"0"` (the zone's creation).
    pub id: String,
    /// Record sets added.
    pub additions: Vec<RecordSet>,
    /// Record sets deleted.
    pub deletions: Vec<RecordSet>,
    /// RFC 3339 time the change was accepted.
    pub start_time: String,
    /// `false` for changes made through [`super::CloudDns`]'s Rust API
    /// (zone creation, another writer), `true` for `POST …/changes`.
    pub from_api: bool,
    accepted: Instant,
}

impl Change {
    /// `pending` until the change delay has passed, then `done`.
    pub fn status(&self, delay: Duration) -> &'static str {
        if self.accepted.elapsed() >= delay {
            "done"
        } else {
            "pending"
        }
    }

    /// The `dns#change` JSON with `status`.
    pub fn to_json(&self, status: &str) -> Value {
        json!({
            "kind": "dns#change",
            "id": self.id,
            "startTime": self.start_time,
            "status": status,
            "additions": self.additions.iter().map(RecordSet::to_json).collect::<Vec<_>>(),
            "deletions": self.deletions.iter().map(RecordSet::to_json).collect::<Vec<_>>(),
        })
    }
}

/// One managed zone.
#[derive(Debug, Clone)]
pub struct Zone {
    /// Numeric id (a decimal string on the wire).
    pub id: u64,
    /// The zone's name (`my-zone`).
    pub name: String,
    /// The zone's DNS name, absolute (`example.com.`).
    pub dns_name: String,
    /// `public` or `private`.
    pub visibility: Visibility,
    /// RFC 3339.
    pub creation_time: String,
    /// The apex NS rrdatas.
    pub name_servers: Vec<String>,
    /// Record sets by (name, type).
    pub rrsets: BTreeMap<(String, String), RecordSet>,
    /// Every change, oldest first.
    pub changes: Vec<Change>,
}

impl Zone {
    /// The `dns#managedZone` JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "kind": "dns#managedZone",
            "name": self.name,
            "dnsName": self.dns_name,
            "description": "",
            "id": self.id.to_string(),
            "nameServers": self.name_servers,
            "creationTime": self.creation_time,
            "visibility": self.visibility.as_str(),
        })
    }

    fn record_change(&mut self, additions: Vec<RecordSet>, deletions: Vec<RecordSet>, from_api: bool) -> Change {
        let change = Change {
            id: self.changes.len().to_string(),
            additions,
            deletions,
            start_time: now(),
            from_api,
            accepted: Instant::now(),
        };
        self.changes.push(change.clone());
        change
    }
}

/// RFC 3339 UTC with milliseconds, as Google writes times.
pub fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// All projects.
#[derive(Debug, Default)]
pub struct State {
    /// Zones by project, then by zone name.
    pub projects: BTreeMap<String, BTreeMap<String, Zone>>,
    next_zone_id: u64,
}

impl State {
    /// Projects named in the configuration, with no zones.
    pub fn with_projects(projects: &[String]) -> State {
        State {
            projects: projects.iter().map(|p| (p.clone(), BTreeMap::new())).collect(),
            next_zone_id: 0,
        }
    }

    /// The zone named `zone` (or with that numeric id).
    ///
    /// # Errors
    /// 404 for an unknown project or zone.
    pub fn zone_mut(&mut self, project: &str, zone: &str) -> Result<&mut Zone, GoogleError> {
        let zones = self
            .projects
            .get_mut(project)
            .ok_or_else(|| GoogleError::not_found("parameters.project", project))?;
        let key = if zones.contains_key(zone) {
            Some(zone.to_owned())
        } else {
            zones
                .values()
                .find(|z| z.id.to_string() == zone)
                .map(|z| z.name.clone())
        };
        key.and_then(|k| zones.get_mut(&k))
            .ok_or_else(|| GoogleError::not_found("parameters.managedZone", zone))
    }

    /// Creates a zone with its apex SOA and NS record sets (change `"0"`).
    ///
    /// # Errors
    /// 404 unknown project, 400 bad name or DNS name, 409 name taken.
    pub fn create_zone(
        &mut self,
        project: &str,
        name: &str,
        dns_name: &str,
        visibility: Visibility,
    ) -> Result<Zone, GoogleError> {
        let dns_name = dns_name.to_ascii_lowercase();
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && !name.ends_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            return Err(GoogleError::invalid_value("entity.managedZone.name", name));
        }
        if dns_name == "." || !super::names::valid_name(&dns_name, false) {
            return Err(GoogleError::invalid_value("entity.managedZone.dnsName", &dns_name));
        }
        let index = self.next_zone_id;
        let zones = self
            .projects
            .get_mut(project)
            .ok_or_else(|| GoogleError::not_found("parameters.project", project))?;
        if zones.contains_key(name) {
            return Err(GoogleError::new(
                409,
                "alreadyExists",
                format!("The resource 'entity.managedZone' named '{name}' already exists"),
            ));
        }
        self.next_zone_id += 1;
        let (name_servers, primary): (Vec<String>, String) = match visibility {
            Visibility::Public => {
                let letter = char::from(b'a' + u8::try_from(index % 5).unwrap_or(0));
                let servers: Vec<String> = (1..=4)
                    .map(|n| format!("ns-cloud-{letter}{n}.googledomains.com."))
                    .collect();
                let primary = servers[0].clone();
                (servers, primary)
            }
            Visibility::Private => (
                vec!["ns-gcp-private.googledomains.com.".to_owned()],
                "ns-gcp-private.googledomains.com.".to_owned(),
            ),
        };
        let soa = RecordSet {
            name: dns_name.clone(),
            rtype: "SOA".into(),
            ttl: 21600,
            rrdatas: vec![format!(
                "{primary} cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"
            )],
            routing_policy: None,
        };
        let ns = RecordSet {
            name: dns_name.clone(),
            rtype: "NS".into(),
            ttl: 21600,
            rrdatas: name_servers.clone(),
            routing_policy: None,
        };
        let mut zone = Zone {
            id: 7_400_000_000_000_000_000 + index * 7919,
            name: name.to_owned(),
            dns_name: dns_name.clone(),
            visibility,
            creation_time: now(),
            name_servers,
            rrsets: BTreeMap::new(),
            changes: Vec::new(),
        };
        zone.rrsets.insert((dns_name.clone(), "NS".into()), ns.clone());
        zone.rrsets.insert((dns_name, "SOA".into()), soa.clone());
        zone.record_change(vec![ns, soa], Vec::new(), false);
        zones.insert(name.to_owned(), zone.clone());
        Ok(zone)
    }
}

/// Applies a `POST …/changes` body to `zone`: everything is checked before
/// anything is written, so an error leaves the zone as it was.
///
/// Order of checks: the body's shape and every record set (400), the
/// per-change quotas (403), deletions exist (404) and match exactly (412),
/// additions are new (409), the resulting zone keeps one CNAME per name
/// and its apex SOA and NS (400), the per-zone quota (403).
///
/// # Errors
/// The first failed check, in Google's error shape.
pub fn apply_change(zone: &mut Zone, body: &Value, quota: &Quota) -> Result<Change, GoogleError> {
    let Some(object) = body.as_object() else {
        return Err(GoogleError::required("entity.change"));
    };
    let list = |key: &str| -> Result<Vec<Value>, GoogleError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.clone()),
            Some(other) => Err(GoogleError::invalid_value(
                &format!("entity.change.{key}"),
                &other.to_string(),
            )),
        }
    };
    let addition_values = list("additions")?;
    let deletion_values = list("deletions")?;
    if addition_values.is_empty() && deletion_values.is_empty() {
        return Err(GoogleError::required("entity.change"));
    }
    let mut additions = Vec::with_capacity(addition_values.len());
    for (i, value) in addition_values.iter().enumerate() {
        additions.push(records::parse(
            value,
            &format!("entity.change.additions[{i}]"),
            &zone.dns_name,
        )?);
    }
    if zone.visibility == Visibility::Public {
        for (i, set) in additions.iter().enumerate() {
            records::check_public_policy(set, &format!("entity.change.additions[{i}]"))?;
        }
    }
    let mut deletions = Vec::with_capacity(deletion_values.len());
    for (i, value) in deletion_values.iter().enumerate() {
        deletions.push(records::parse(
            value,
            &format!("entity.change.deletions[{i}]"),
            &zone.dns_name,
        )?);
    }
    for (kind, sets) in [("additions", &additions), ("deletions", &deletions)] {
        let mut seen = BTreeSet::new();
        for (i, set) in sets.iter().enumerate() {
            if !seen.insert((set.name.clone(), set.rtype.clone())) {
                return Err(GoogleError::invalid(format!(
                    "The resource 'entity.change.{kind}[{i}]' named '{}' appears more than once in the change.",
                    set.label()
                )));
            }
        }
    }
    for set in &additions {
        if set.rtype == "SOA" && set.name != zone.dns_name {
            return Err(GoogleError::invalid(format!(
                "The resource record set '{}' is invalid because an SOA record set may exist only at the zone apex '{}'.",
                set.label(),
                zone.dns_name
            )));
        }
    }
    // Per-change quotas.
    let mut quota_errors = Vec::new();
    if additions.len() > quota.rrset_additions_per_change {
        quota_errors.push(GoogleError::quota("additions per change"));
    }
    if deletions.len() > quota.rrset_deletions_per_change {
        quota_errors.push(GoogleError::quota("deletions per change"));
    }
    let octets: usize = additions.iter().chain(&deletions).map(RecordSet::rrdata_octets).sum();
    if octets > quota.total_rrdata_size_per_change {
        quota_errors.push(GoogleError::quota("total rrdata size per change"));
    }
    if additions
        .iter()
        .any(|s| s.record_count() > quota.resource_records_per_rrset)
    {
        quota_errors.push(GoogleError::quota("resource records per rrset"));
    }
    let mut quota_errors = quota_errors.into_iter();
    if let Some(mut first) = quota_errors.next() {
        first.more = quota_errors.map(|e| (e.reason, e.message)).collect();
        return Err(first);
    }
    // Deletions against the stored record sets.
    let mut result = zone.rrsets.clone();
    for (i, deletion) in deletions.iter().enumerate() {
        let key = (deletion.name.clone(), deletion.rtype.clone());
        let Some(stored) = result.get(&key) else {
            return Err(GoogleError::not_found(
                &format!("entity.change.deletions[{i}]"),
                &deletion.label(),
            ));
        };
        if !stored.matches_exactly(deletion) {
            return Err(GoogleError::new(
                412,
                "conditionNotMet",
                format!("Precondition not met for 'entity.change.deletions[{i}]'"),
            ));
        }
        result.remove(&key);
    }
    for (i, addition) in additions.iter().enumerate() {
        let key = (addition.name.clone(), addition.rtype.clone());
        if result.contains_key(&key) {
            return Err(GoogleError::new(
                409,
                "alreadyExists",
                format!(
                    "The resource 'entity.change.additions[{i}]' named '{}' already exists",
                    addition.label()
                ),
            ));
        }
        result.insert(key, addition.clone());
    }
    // The zone as it would be.
    for (i, addition) in additions.iter().enumerate() {
        let others: Vec<&str> = result
            .keys()
            .filter(|(name, rtype)| name == &addition.name && rtype != &addition.rtype)
            .map(|(_, rtype)| rtype.as_str())
            .collect();
        let conflict = if addition.rtype == "CNAME" {
            !others.is_empty()
        } else {
            others.contains(&"CNAME")
        };
        if conflict {
            return Err(GoogleError::invalid(format!(
                "The resource record set 'entity.change.additions[{i}]' is invalid because the DNS name '{}' may have either one CNAME resource record set or resource record sets of other types, but not both.",
                addition.name
            )));
        }
    }
    for rtype in ["SOA", "NS"] {
        if !result.contains_key(&(zone.dns_name.clone(), rtype.to_owned())) {
            let index = deletions
                .iter()
                .position(|d| d.name == zone.dns_name && d.rtype == rtype)
                .unwrap_or(0);
            return Err(GoogleError::invalid(format!(
                "The resource record set 'entity.change.deletions[{index}]' is invalid because the {rtype} record set at the zone apex '{}' may only be replaced, within one change, never deleted.",
                zone.dns_name
            )));
        }
    }
    if result.len() > quota.rrsets_per_managed_zone && result.len() > zone.rrsets.len() {
        return Err(GoogleError::quota("rrsets per managed zone"));
    }
    zone.rrsets = result;
    Ok(zone.record_change(additions, deletions, true))
}

/// Replaces (or creates) one record set outside the API, as another writer
/// would; recorded as a change with `from_api: false`. The record set is
/// checked as an addition is (so the zone holds only what Cloud DNS could
/// hold), except for CNAME conflicts.
///
/// # Errors
/// 400 as for an addition (field path `recordSet`).
pub fn write_behind(zone: &mut Zone, set: &RecordSet) -> Result<Change, GoogleError> {
    let set = records::parse(&set.to_json(), "recordSet", &zone.dns_name)?;
    let key = (set.name.clone(), set.rtype.clone());
    let old = zone.rrsets.insert(key, set.clone());
    Ok(zone.record_change(vec![set], old.into_iter().collect(), false))
}

/// Deletes one record set outside the API; `None` when absent.
pub fn delete_behind(zone: &mut Zone, name: &str, rtype: &str) -> Option<Change> {
    let old = zone.rrsets.remove(&(name.to_ascii_lowercase(), rtype.to_owned()))?;
    Some(zone.record_change(Vec::new(), vec![old], false))
}
