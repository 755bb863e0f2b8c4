//! The `embedded` sink: publishes desired zones to fedns's own DNS server.

use std::sync::Arc;

use fedns_dnsserver::{PublishOutcome, ZoneStore};

use crate::desired::DesiredZones;

/// Feeds a [`ZoneStore`]; every [`EmbeddedSink::apply`] publishes the
/// complete desired state (the store rebuilds only when it changed).
#[derive(Debug, Clone)]
pub struct EmbeddedSink {
    store: Arc<ZoneStore>,
}

impl EmbeddedSink {
    /// A sink publishing into `store`.
    pub fn new(store: Arc<ZoneStore>) -> Self {
        EmbeddedSink { store }
    }

    /// The store this sink publishes into.
    pub fn store(&self) -> &Arc<ZoneStore> {
        &self.store
    }

    /// Publishes `desired`. Records the DNS server could not serve come
    /// back in the outcome's `skipped` list.
    pub fn apply(&self, desired: &DesiredZones) -> PublishOutcome {
        let outcome = self.store.publish(desired.contents());
        if outcome.changed {
            for zone in &outcome.zones {
                tracing::info!(zone = %zone.apex, serial = zone.serial, rrsets = zone.rrset_count, "published zone");
            }
        }
        for skipped in &outcome.skipped {
            tracing::warn!(name = %skipped.name, record_type = %skipped.record_type, reason = %skipped.reason, "record not served");
        }
        outcome
    }
}
