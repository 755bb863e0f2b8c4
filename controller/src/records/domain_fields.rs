//! Which of a Domain's fields the records read, so that an edit of only
//! the others (the zone's own settings) requeues none of them.
//!
//! The records read a Domain's `spec.domain` (the names under it), its
//! regions (`geoRegions`, `clientRegions`: routing and the geolocation
//! labels of each endpoint), `probeAllowedNetworks` and who may publish
//! (`allowedNamespaces`, `grants`). The SOA timers, `hostmaster`, the
//! name servers, zone transfers and DNSSEC are the publisher's alone. An
//! edit of those requeued every record (20,000 reconciles at 1,000,000
//! shards) for no change; now only the publisher republishes.
//!
//! Fields are left out by name, so a field added later counts as read
//! until it is listed here.

use std::hash::{Hash, Hasher};

use fedns_api::Domain;

/// `spec` fields only the publisher reads (their JSON names).
pub const PUBLISHER_ONLY: [&str; 6] = [
    "nameServers",
    "nameServerAddresses",
    "hostmaster",
    "soa",
    "transfer",
    "dnssec",
];

/// A hash of what records read of `domain`: its identity (uid) and its
/// spec without [`PUBLISHER_ONLY`]. Equal hashes: no record's outcome
/// changed.
pub fn read_by_records(domain: &Domain) -> u64 {
    let mut spec = serde_json::to_value(&domain.spec).unwrap_or_default();
    if let Some(fields) = spec.as_object_mut() {
        for field in PUBLISHER_ONLY {
            fields.remove(field);
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    domain.metadata.uid.hash(&mut hasher);
    // serde_json's map keeps its keys sorted: the text is canonical.
    spec.to_string().hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(spec: serde_json::Value) -> Domain {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
            "metadata": {"name": "myfed", "namespace": "fedns-system", "uid": "u1"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn zone_settings_change_nothing_records_read() {
        let base = read_by_records(&domain(serde_json::json!({"domain": "example.com"})));
        for settings in [
            serde_json::json!({"domain": "example.com", "soa": {"minimum": 61}}),
            serde_json::json!({"domain": "example.com", "hostmaster": "root.example.com"}),
            serde_json::json!({"domain": "example.com", "nameServers": ["ns1.example.com"]}),
        ] {
            assert_eq!(read_by_records(&domain(settings.clone())), base, "{settings}");
        }
        for read in [
            serde_json::json!({"domain": "example.org"}),
            serde_json::json!({"domain": "example.com", "geoRegions": [{"region": "eu", "countries": ["DE"]}]}),
            serde_json::json!({"domain": "example.com", "probeAllowedNetworks": ["10.0.0.0/8"]}),
        ] {
            assert_ne!(read_by_records(&domain(read.clone())), base, "{read}");
        }
    }
}
