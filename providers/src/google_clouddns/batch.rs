//! Packing record-set changes into Cloud DNS changes within its per-change
//! quotas (<https://cloud.google.com/dns/quotas>): at most 1,000
//! additions, 1,000 deletions and 100,000 octets of rrdata (additions and
//! deletions together) per change. A change is atomic, so everything one
//! owner name needs (its deletions, its additions, their registry records)
//! goes into one change.

use fedns_api::RecordType;
use serde_json::Value;

use super::api::{Change, RecordSet};

/// Quotas of one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLimits {
    /// Additions per change (Cloud DNS: 1,000; `--google-batch-change-size`).
    pub max_additions: usize,
    /// Deletions per change (Cloud DNS: 1,000).
    pub max_deletions: usize,
    /// Octets of rrdata per change, additions and deletions (Cloud DNS:
    /// 100,000).
    pub max_rrdata_bytes: usize,
}

impl Default for ChangeLimits {
    fn default() -> Self {
        ChangeLimits {
            max_additions: 1000,
            max_deletions: 1000,
            max_rrdata_bytes: 100_000,
        }
    }
}

/// One logical change: a record set's deletion and/or addition with its
/// registry TXT's, which must succeed or fail together.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// Owner name of the RRset (fedns's form).
    pub name: String,
    /// Its type.
    pub record_type: RecordType,
    /// Record sets to delete, exactly as read.
    pub deletions: Vec<RecordSet>,
    /// Record sets to add.
    pub additions: Vec<RecordSet>,
}

/// Octets of rrdata in a record set, routing-policy items included.
pub fn rrdata_bytes(set: &RecordSet) -> usize {
    fn strings(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len(),
            Value::Array(items) => items.iter().map(strings).sum(),
            Value::Object(map) => map
                .iter()
                .filter(|(k, _)| {
                    matches!(
                        k.as_str(),
                        "rrdatas"
                            | "externalEndpoints"
                            | "items"
                            | "wrr"
                            | "geo"
                            | "primaryBackup"
                            | "primaryTargets"
                            | "backupGeoTargets"
                    )
                })
                .map(|(_, v)| strings(v))
                .sum(),
            _ => 0,
        }
    }
    set.rrdatas.iter().map(String::len).sum::<usize>() + set.routing_policy.as_ref().map_or(0, strings)
}

impl Unit {
    /// (additions, deletions, rrdata octets).
    pub fn weight(&self) -> (usize, usize, usize) {
        let bytes = self.additions.iter().chain(&self.deletions).map(rrdata_bytes).sum();
        (self.additions.len(), self.deletions.len(), bytes)
    }
}

/// The change holding `units`.
pub fn change_of(units: &[Unit]) -> Change {
    Change {
        additions: units.iter().flat_map(|u| u.additions.iter().cloned()).collect(),
        deletions: units.iter().flat_map(|u| u.deletions.iter().cloned()).collect(),
        ..Change::default()
    }
}

/// Groups `units` in order into changes within `limits`, never splitting
/// the units of one owner name. A name larger than the limits on its own
/// gets a change of its own (Cloud DNS refuses it with `quotaExceeded`,
/// reported for that name alone).
pub fn pack(units: Vec<Unit>, limits: ChangeLimits) -> Vec<Vec<Unit>> {
    let mut groups: Vec<Vec<Unit>> = Vec::new();
    for unit in units {
        match groups.last_mut() {
            Some(group) if group[0].name == unit.name => group.push(unit),
            _ => groups.push(vec![unit]),
        }
    }
    let mut batches: Vec<Vec<Unit>> = Vec::new();
    let mut current: Vec<Unit> = Vec::new();
    let (mut adds, mut dels, mut bytes) = (0, 0, 0);
    for group in groups {
        let (a, d, b) = group
            .iter()
            .map(Unit::weight)
            .fold((0, 0, 0), |s, w| (s.0 + w.0, s.1 + w.1, s.2 + w.2));
        let over =
            adds + a > limits.max_additions || dels + d > limits.max_deletions || bytes + b > limits.max_rrdata_bytes;
        if !current.is_empty() && over {
            batches.push(std::mem::take(&mut current));
            (adds, dels, bytes) = (0, 0, 0);
        }
        adds += a;
        dels += d;
        bytes += b;
        current.extend(group);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}
