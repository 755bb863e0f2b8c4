//! One serial per zone content for every DNS server replica: the
//! `Domain.status.serialRecord` each replica follows, and its writing by
//! the replica that writes status.
//!
//! Every replica (the controller's, `fedns dns-server`'s, read-only or
//! not) serves a zone's serial only as recorded in its Domain's status:
//! [`spawn_follower`] gives its DNS server the records
//! ([`recorded_serials`]) as soon as its Domain cache has them, which serves a
//! recorded serial once its own content has the recorded fingerprint and
//! the record's `activeFromUnixMs` has come (see
//! `fedns_dnsserver::SerialMode`). The writer ([`record_serials`]) records
//! a new serial when its content differs from the record: above the
//! record's and above what it served (RFC 1982), due
//! [`crate::source::kube_source::SourceConfig::serial_activation_delay`]
//! later, so replicas that see the record within that delay switch
//! together. A record not yet due is never replaced (changes arriving
//! meanwhile wait for the next record, so serials keep moving under a
//! stream of changes). The write carries the Domain's `resourceVersion`: of
//! two writers at once one fails and tries again with the other's record,
//! so a serial is never recorded for two contents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fedns_api::{Domain, SerialRecord};
use fedns_dnsserver::{next_serial, serial_gt, RecordedSerial, SerialMode, ZoneStore};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::Notify;

use crate::plan::desired::zone_apex;

/// Unix time in milliseconds.
fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `status.serialRecord` of `domain` as the DNS server takes it; None when
/// absent or malformed.
fn record_of(domain: &Domain) -> Option<RecordedSerial> {
    let record = domain.status.as_ref()?.serial_record.as_ref()?;
    Some(RecordedSerial {
        serial: u32::try_from(record.serial).ok()?,
        content: u64::from_str_radix(&record.content, 16).ok()?,
        active_from_ms: u64::try_from(record.active_from_unix_ms).ok()?,
        previous: record.previous.and_then(|p| u32::try_from(p).ok()),
    })
}

/// Every Domain's zone, by apex (lower case, fully qualified), with the
/// serial recorded in its status, for `ZoneStore::set_serial_mode`. Zones
/// the store serves besides (the embedded sink's extra zones) are assigned
/// their serials by the store.
pub fn recorded_serials(domains: &[Arc<Domain>]) -> SerialMode {
    let mut recorded = BTreeMap::new();
    for domain in domains {
        if let Some(apex) = zone_apex(domain) {
            let record = record_of(domain);
            let entry = recorded.entry(apex.to_ascii_lowercase()).or_insert(None);
            if entry.is_none() {
                *entry = record;
            }
        }
    }
    SerialMode::Follow(recorded)
}

/// Applies the serials recorded in `domains` to `store` now, then on its
/// own task whenever `records_changed` is notified (a Domain's record
/// changed in the cache) and whenever a record comes due (transfers move
/// to its version then).
///
/// A record must reach every replica's DNS server before its instant. The
/// publisher's pass (status writes, provider syncs, Secret reads: API
/// calls that can take seconds) is no place to wait for it: a record that
/// arrived during a pass used to be applied only at the next, and a
/// writer's own record only after the status writes of the pass that
/// wrote it, so a slow pass let one replica show the previous serial
/// after the others had switched.
///
/// Returns a flag set when the store keeps no tree to change serials in
/// (zones with wildcards or zone cuts): the publisher then publishes whole
/// (it is woken through `publisher`) and clears the flag.
pub fn spawn_follower(
    domains: Store<Domain>,
    store: Arc<ZoneStore>,
    records_changed: Arc<Notify>,
    publisher: Arc<Notify>,
) -> Arc<AtomicBool> {
    let needs_whole = Arc::new(AtomicBool::new(false));
    let apply = {
        let needs_whole = needs_whole.clone();
        move |store: &ZoneStore, domains: &Store<Domain>| {
            if store.set_serial_mode(recorded_serials(&domains.state())).is_err() {
                needs_whole.store(true, Ordering::SeqCst);
                publisher.notify_one();
            }
        }
    };
    // Before the first publish: a zone is served with its record's serial
    // only when its content is the one recorded.
    apply(&store, &domains);
    tokio::spawn(async move {
        loop {
            let until_due = store
                .next_serial_due()
                .map(|due| Duration::from_millis(due.saturating_sub(unix_millis())).max(Duration::from_millis(1)));
            tokio::select! {
                _ = records_changed.notified() => {}
                _ = tokio::time::sleep(until_due.unwrap_or_default()), if until_due.is_some() => {}
            }
            // The store's lock is held through a whole publish (seconds at
            // 1,000,000 shards): wait for it off the async workers.
            let (store_ref, domains_ref, apply_ref) = (store.clone(), domains.clone(), apply.clone());
            if tokio::task::spawn_blocking(move || apply_ref(&store_ref, &domains_ref))
                .await
                .is_err()
            {
                tracing::warn!("applying recorded serials panicked; trying again at the next record");
            }
        }
    });
    needs_whole
}

/// What of a Domain wakes the publisher when it changes besides its spec:
/// its serial record.
pub fn record_version(domain: &Domain) -> Option<SerialRecord> {
    domain.status.as_ref()?.serial_record.clone()
}

/// Records a new serial for every zone `store` serves whose content
/// differs from its Domain's record, unless that record is not yet due.
/// A write that fails (a conflict with another writer, the API server
/// away) is logged; false then: call again soon.
pub async fn record_serials(client: &Client, domains: &[Arc<Domain>], store: &ZoneStore, delay: Duration) -> bool {
    let mut all_written = true;
    let now_ms = unix_millis();
    let now_s = u32::try_from((now_ms / 1000) & u64::from(u32::MAX)).unwrap_or(0);
    for zone in store.serial_states() {
        let Some(domain) = domains
            .iter()
            .find(|d| zone_apex(d).is_some_and(|apex| apex.eq_ignore_ascii_case(&zone.apex)))
        else {
            continue;
        };
        let record = record_of(domain);
        if record.is_some_and(|r| r.content == zone.content || !r.due(now_ms)) {
            continue;
        }
        // Above every serial recorded or served: the record's, the legacy
        // `status.serial`, and this replica's own.
        let legacy = domain
            .status
            .as_ref()
            .and_then(|s| s.serial)
            .and_then(|s| u32::try_from(s).ok());
        let mut floor = zone.serial;
        for serial in record.map(|r| r.serial).into_iter().chain(legacy) {
            if serial_gt(serial, floor) {
                floor = serial;
            }
        }
        let serial = next_serial(floor, now_s);
        let active_from = now_ms.saturating_add(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        let new = SerialRecord {
            serial: i64::from(serial),
            content: format!("{:016x}", zone.content),
            active_from_unix_ms: i64::try_from(active_from).unwrap_or(i64::MAX),
            // A zone's first record: replicas show 0 until then.
            previous: Some(record.map(|r| r.serial).or(legacy).map_or(0, i64::from)),
        };
        let namespace = domain.namespace().unwrap_or_default();
        let name = domain.name_any();
        let api: Api<Domain> = Api::namespaced(client.clone(), &namespace);
        // The resourceVersion makes it a compare-and-swap: a record
        // written meanwhile by another writer wins, and this one is
        // computed again from it.
        let patch = json!({
            "metadata": {"resourceVersion": domain.resource_version()},
            "status": {"serial": serial, "serialRecord": new},
        });
        let writing = std::time::Instant::now();
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) if writing.elapsed() > delay / 2 => tracing::warn!(
                domain = %format!("{namespace}/{name}"),
                zone = %zone.apex,
                serial,
                took_ms = writing.elapsed().as_millis() as u64,
                activation_delay_ms = delay.as_millis() as u64,
                "recorded the zone's next serial, but the write took more than half the activation delay: \
                 replicas may learn it after its instant and switch at different times"
            ),
            Ok(_) => tracing::info!(
                domain = %format!("{namespace}/{name}"),
                zone = %zone.apex,
                serial,
                content = %new.content,
                "recorded the zone's next serial"
            ),
            // Another write came first (often this writer's own status
            // write, or its last record, not yet in the cache).
            Err(kube::Error::Api(e)) if e.code == 409 => {
                all_written = false;
                tracing::debug!(domain = %format!("{namespace}/{name}"), "serial record conflict; tried again shortly");
            }
            Err(e) => {
                all_written = false;
                tracing::info!(
                    domain = %format!("{namespace}/{name}"),
                    error = %e,
                    "could not record the zone's serial (tried again shortly)"
                );
            }
        }
    }
    all_written
}
