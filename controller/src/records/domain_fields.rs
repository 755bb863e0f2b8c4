//! Which of a Domain's fields the records read, so that an edit requeues
//! only the records whose outcome it can change.
//!
//! The records read a Domain's `spec.domain` (the names under it), who may
//! publish (`allowedNamespaces`, `grants`), its regions (`geoRegions`,
//! `clientRegions`) and `probeAllowedNetworks`. The SOA timers,
//! `hostmaster`, the name servers, zone transfers and DNSSEC are the
//! publisher's alone: an edit of those requeues no record (it requeued
//! 20,000 reconciles at 1,000,000 shards for no change).
//!
//! Of the fields records read, two groups reach only some records:
//! * the regions only records with `spec.routing` (the routing checks
//!   and the geolocation properties of `Nearest` endpoints,
//!   `records::routing`); the publisher reads them too, for its own
//!   answers, and republishes on its own;
//! * `probeAllowedNetworks` only records with `spec.healthCheck` (what
//!   their data-plane probes may reach, `records::health`).
//!
//! A region added to a Domain at 1,000,000 shards requeued every record
//! (20,000 reconciles, each computing the same DNSEndpoint again); now it
//! requeues the records that route by region. Fields are grouped by name,
//! so a field added later counts as read by every record until it is
//! listed here.

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

/// `spec` fields only records with `spec.routing` read.
pub const ROUTING_ONLY: [&str; 2] = ["clientRegions", "geoRegions"];

/// `spec` fields only records with `spec.healthCheck` read.
pub const PROBES_ONLY: [&str; 1] = ["probeAllowedNetworks"];

/// Hashes of what records read of a Domain, by who reads it; see
/// [`RecordReads::reach_since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordReads {
    /// The identity (uid) and every read field outside the groups below.
    every: u64,
    /// [`ROUTING_ONLY`].
    routing: u64,
    /// [`PROBES_ONLY`].
    probes: u64,
}

/// Which records an edit of a Domain can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reach {
    /// Every record.
    pub every: bool,
    /// Records with `spec.routing`.
    pub routed: bool,
    /// Records with `spec.healthCheck`.
    pub probed: bool,
}

impl Reach {
    /// Every record (a Domain new, deleted or its names edited).
    pub fn every() -> Reach {
        Reach {
            every: true,
            ..Reach::default()
        }
    }

    /// Whether the edit reaches no record.
    pub fn is_none(&self) -> bool {
        *self == Reach::default()
    }

    /// Whether a record with (or without) `spec.routing` and
    /// `spec.healthCheck` is reached.
    pub fn reaches(&self, routed: bool, probed: bool) -> bool {
        self.every || (self.routed && routed) || (self.probed && probed)
    }
}

impl RecordReads {
    /// What the records read of `domain`.
    pub fn of(domain: &Domain) -> RecordReads {
        let spec = serde_json::to_value(&domain.spec).unwrap_or_default();
        let empty = serde_json::Map::new();
        let fields = spec.as_object().unwrap_or(&empty);
        let hash = |keep: &dyn Fn(&str) -> bool| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            domain.metadata.uid.hash(&mut hasher);
            // serde_json's map keeps its keys sorted: the text is canonical.
            for (name, value) in fields.iter().filter(|(name, _)| keep(name)) {
                name.hash(&mut hasher);
                value.to_string().hash(&mut hasher);
            }
            hasher.finish()
        };
        RecordReads {
            every: hash(&|name| {
                !PUBLISHER_ONLY.contains(&name) && !ROUTING_ONLY.contains(&name) && !PROBES_ONLY.contains(&name)
            }),
            routing: hash(&|name| ROUTING_ONLY.contains(&name)),
            probes: hash(&|name| PROBES_ONLY.contains(&name)),
        }
    }

    /// Which records an edit from `before` (`None`: a Domain not seen
    /// before, which reaches every record) to `self` can change.
    pub fn reach_since(&self, before: Option<&RecordReads>) -> Reach {
        match before {
            None => Reach::every(),
            Some(before) => Reach {
                every: self.every != before.every,
                routed: self.routing != before.routing,
                probed: self.probes != before.probes,
            },
        }
    }
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

    fn reach(before: serde_json::Value, after: serde_json::Value) -> Reach {
        let before = RecordReads::of(&domain(before));
        RecordReads::of(&domain(after)).reach_since(Some(&before))
    }

    #[test]
    fn zone_settings_change_nothing_records_read() {
        let base = serde_json::json!({"domain": "example.com"});
        for settings in [
            serde_json::json!({"domain": "example.com", "soa": {"minimum": 61}}),
            serde_json::json!({"domain": "example.com", "hostmaster": "root.example.com"}),
            serde_json::json!({"domain": "example.com", "nameServers": ["ns1.example.com"]}),
        ] {
            assert!(reach(base.clone(), settings.clone()).is_none(), "{settings}");
        }
        let every = Reach {
            every: true,
            ..Reach::default()
        };
        for read in [
            serde_json::json!({"domain": "example.org"}),
            serde_json::json!({"domain": "example.com", "allowedNamespaces": {"from": "Same"}}),
        ] {
            assert_eq!(reach(base.clone(), read.clone()), every, "{read}");
        }
        assert_eq!(RecordReads::of(&domain(base)).reach_since(None), every, "a new Domain");
    }

    #[test]
    fn regions_reach_routed_records_and_probe_networks_probed_ones() {
        let base = serde_json::json!({"domain": "example.com"});
        let regions = reach(
            base.clone(),
            serde_json::json!({"domain": "example.com", "geoRegions": [{"region": "eu", "countries": ["DE"]}]}),
        );
        assert_eq!(
            regions,
            Reach {
                routed: true,
                ..Reach::default()
            }
        );
        assert!(regions.reaches(true, false) && !regions.reaches(false, true) && !regions.reaches(false, false));
        let clients = reach(
            base.clone(),
            serde_json::json!({"domain": "example.com", "clientRegions": [{"cidr": "10.0.0.0/8", "region": "eu"}]}),
        );
        assert!(clients.routed && !clients.every && !clients.probed, "{clients:?}");
        let networks = reach(
            base,
            serde_json::json!({"domain": "example.com", "probeAllowedNetworks": ["10.0.0.0/8"]}),
        );
        assert!(
            networks.reaches(false, true) && !networks.reaches(true, false),
            "{networks:?}"
        );
    }
}
