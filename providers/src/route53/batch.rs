//! Packing changes into `ChangeResourceRecordSets` requests within Route53's
//! quotas (Route53 Developer Guide, "Quotas on ChangeResourceRecordSets
//! requests"): at most 1,000 `ResourceRecord` elements and 32,000 characters
//! of `Value` per request, both counted twice for UPSERT.

use aws_sdk_route53::types::{Change, ChangeAction};
use fedns_api::RecordType;

/// Quotas of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Weighted `ResourceRecord` elements (UPSERT counts twice); Route53: 1,000.
    pub max_records: usize,
    /// Weighted characters of values (UPSERT counts twice); Route53: 32,000.
    pub max_value_chars: usize,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits {
            max_records: 1000,
            max_value_chars: 32_000,
        }
    }
}

/// One logical change: the record change and its registry TXT change,
/// which must succeed or fail together.
#[derive(Debug, Clone)]
pub struct Unit {
    /// Owner name of the RRset.
    pub name: String,
    /// Its type.
    pub record_type: RecordType,
    /// The Route53 changes.
    pub changes: Vec<Change>,
}

impl Unit {
    /// (weighted records, weighted value characters) of the unit.
    pub fn weight(&self) -> (usize, usize) {
        let mut records = 0;
        let mut chars = 0;
        for change in &self.changes {
            let factor = if *change.action() == ChangeAction::Upsert { 2 } else { 1 };
            let Some(rrset) = change.resource_record_set() else {
                continue;
            };
            // An ALIAS has no ResourceRecord; count it as one element anyway.
            records += factor * rrset.resource_records().len().max(1);
            chars += factor
                * rrset
                    .resource_records()
                    .iter()
                    .map(|r| r.value().chars().count())
                    .sum::<usize>();
        }
        (records, chars)
    }
}

/// Groups `units` in order into batches within `limits`. A unit larger
/// than the limits on its own gets a batch of its own (Route53 rejects it,
/// and that rejection is reported for it alone).
pub fn pack(units: Vec<Unit>, limits: BatchLimits) -> Vec<Vec<Unit>> {
    let mut batches: Vec<Vec<Unit>> = Vec::new();
    let mut current: Vec<Unit> = Vec::new();
    let (mut records, mut chars) = (0, 0);
    for unit in units {
        let (r, c) = unit.weight();
        if !current.is_empty() && (records + r > limits.max_records || chars + c > limits.max_value_chars) {
            batches.push(std::mem::take(&mut current));
            records = 0;
            chars = 0;
        }
        records += r;
        chars += c;
        current.push(unit);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route53::tests::held;

    fn unit(name: &str, action: ChangeAction, values: &[&str]) -> Unit {
        let rrset = held(name, "A", 60, values);
        Unit {
            name: name.into(),
            record_type: RecordType::A,
            changes: vec![Change::builder()
                .action(action)
                .resource_record_set(rrset)
                .build()
                .unwrap()],
        }
    }

    #[test]
    fn packs_within_record_and_character_quotas() {
        let limits = BatchLimits::default();
        let units: Vec<Unit> = (0..2500)
            .map(|i| unit(&format!("n{i}.example.com."), ChangeAction::Create, &["192.0.2.1"]))
            .collect();
        let batches = pack(units, limits);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![1000, 1000, 500]);

        // UPSERT counts twice.
        let upserts: Vec<Unit> = (0..600)
            .map(|i| unit(&format!("n{i}.example.com."), ChangeAction::Upsert, &["192.0.2.1"]))
            .collect();
        assert_eq!(pack(upserts, limits).len(), 2);

        // 255-character values: 32,000 / 255 = 125 per batch.
        let long = "x".repeat(255);
        let texts: Vec<Unit> = (0..300)
            .map(|i| unit(&format!("t{i}.example.com."), ChangeAction::Create, &[long.as_str()]))
            .collect();
        let batches = pack(texts, limits);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![125, 125, 50]);
        for batch in &batches {
            let chars: usize = batch.iter().map(|u| u.weight().1).sum();
            assert!(chars <= limits.max_value_chars);
        }
    }
}
