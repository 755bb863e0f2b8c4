//! The published snapshot, swapped atomically, and SOA serial bookkeeping.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use hickory_proto::rr::Name;

use super::content::ZoneContent;
use super::routing::RoutedName;
use super::serials::{choose, late_records, next_due, Decision, RecordedSerial, SerialMode, Shown};
use super::snapshot::{Snapshot, ZoneSummary};
use super::tree::{record_hash, routed_hash, wire_key, OwnerChange, SkippedRecord, Tree, Unsupported};
use super::version::{TransferPolicy, TransferZone, ZoneRef, ZoneVersion};

pub use super::serials::{next_serial, serial_gt};

mod saved;
pub use saved::{SavedSnapshot, SnapshotFileError};

/// Unix time in milliseconds.
fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn unix_seconds() -> u32 {
    // Serial arithmetic wraps, so truncating to 32 bits is what RFC 1982 wants.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(1)
}

/// Changes to one served zone's records, for [`ZoneStore::publish_changes`].
///
/// Zone-level settings (SOA values, apex NS, client regions, transfer
/// policy) are not part of it: change those with a full
/// [`ZoneStore::publish`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZoneChanges {
    /// Apex of a zone last published by [`ZoneStore::publish`] (fully
    /// qualified; case does not matter).
    pub apex: Name,
    /// Owner name -> every record it has after the change (empty: the name
    /// has no records any more). Each listed owner's records are replaced
    /// as a whole; records are as in [`ZoneContent::records`] and must
    /// carry the owner's name (others are skipped and reported). An owner
    /// listed twice gets its last listing.
    pub names: Vec<(Name, Vec<hickory_proto::rr::Record>)>,
    /// [`RoutedName`] of every owner in `names` that is routed after the
    /// change; a listed owner absent here is no longer routed.
    pub routed: Vec<RoutedName>,
}

/// [`ZoneStore::set_serial_mode`] could not update serials in place:
/// publish the content whole again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsWholePublish;

/// One served zone as [`ZoneStore::serial_states`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSerialState {
    /// Lower-case fully qualified apex, e.g. `example.com.`.
    pub apex: String,
    /// Fingerprint of the zone's content: its SOA fields but the serial,
    /// apex NS, records and routed names, independent of their order. The
    /// same content gives the same fingerprint in every process of the
    /// same build.
    pub content: u64,
    /// The SOA serial served.
    pub serial: u32,
    /// The serial names this content on every replica (always, when the
    /// store assigns serials itself).
    pub confirmed: bool,
}

/// What one [`ZoneStore::publish`] or [`ZoneStore::publish_changes`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishOutcome {
    /// A new snapshot was swapped in (false: nothing changed).
    pub changed: bool,
    /// Every zone now served.
    pub zones: Vec<ZoneSummary>,
    /// Records left out of the new snapshot, with reasons.
    pub skipped: Vec<SkippedRecord>,
}

#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct ZoneState {
    fingerprint: u64,
    serial: u32,
    /// The parts of the fingerprint (see [`fingerprint`]), kept so an
    /// incremental change can update it.
    settings: u64,
    records: u64,
    routed: u64,
    /// The zone's transfers serve the version recorded for `serial` (see
    /// [`SerialMode`]; always, when the store assigns serials).
    confirmed: bool,
    /// `serial` came from a [`RecordedSerial`].
    from_record: bool,
    /// The serial answers show from a moment on (see [`Decision::pending`]).
    pending: Option<(u32, u64)>,
}

impl ZoneState {
    fn shown(&self) -> Shown {
        Shown {
            fingerprint: self.fingerprint,
            serial: self.serial,
            confirmed: self.confirmed,
            from_record: self.from_record,
        }
    }

    /// `self` with the serial of `decision`.
    fn decided(self, decision: &Decision) -> ZoneState {
        ZoneState {
            serial: decision.serial,
            confirmed: decision.confirmed,
            from_record: decision.from_record,
            pending: decision.pending,
            ..self
        }
    }

    /// Whether `decision` changes what is served or transferred.
    fn moved_by(&self, fingerprint: u64, decision: &Decision) -> bool {
        (
            self.fingerprint,
            self.serial,
            self.confirmed,
            self.from_record,
            self.pending,
        ) != (
            fingerprint,
            decision.serial,
            decision.confirmed,
            decision.from_record,
            decision.pending,
        ) || decision.capture.is_some()
            || decision.activate_held
    }
}

/// The parts of a [`StoreState`] a serial decision reads (for callers
/// holding its tree).
struct SerialInputs<'a> {
    mode: &'a SerialMode,
    zones: &'a BTreeMap<String, ZoneState>,
    held: &'a BTreeMap<String, Held>,
    unversioned: &'a BTreeSet<String>,
}

impl<'a> From<&'a StoreState> for SerialInputs<'a> {
    fn from(state: &'a StoreState) -> Self {
        SerialInputs {
            mode: &state.mode,
            zones: &state.zones,
            held: &state.held,
            unversioned: &state.unversioned,
        }
    }
}

/// [`StoreState::decide`]; `now`: Unix time in seconds and in
/// milliseconds.
fn decide_in<'a>(inputs: impl Into<SerialInputs<'a>>, apex: &str, fingerprint: u64, now: (u32, u64)) -> Decision {
    let inputs = inputs.into();
    let old = inputs.zones.get(apex).map(ZoneState::shown);
    let held = inputs.held.get(apex).map(|h| &h.record);
    let unversioned = inputs.unversioned.contains(apex);
    choose(inputs.mode, apex, old, held, unversioned, fingerprint, now)
}

/// A zone assigned serials here whose signatures are re-made keeps no
/// serial: `decision` gets the next one after `old`'s (secondaries must
/// fetch the new signatures). A followed zone keeps the serial recorded
/// for its content; its answers get the new signatures all the same.
fn resigned(decision: &mut Decision, old: Option<&ZoneState>, now_s: u32) {
    if let Some(old) = old.filter(|o| decision.assigned && o.serial != 0 && o.serial == decision.serial) {
        decision.serial = next_serial(old.serial, now_s);
    }
}

/// `snapshot` and its `tree` of a whole publish, with the pending serials
/// of `decisions` (apex, decision) set.
fn with_pending(
    mut snapshot: Snapshot,
    mut tree: Option<Tree>,
    decisions: &[(String, Decision)],
) -> (Snapshot, Option<Tree>) {
    let apexes: Vec<String> = snapshot.zones().iter().map(|z| normalise_apex(&z.apex)).collect();
    for (apex, decision) in decisions {
        let Some(index) = apexes.iter().position(|a| a == apex) else {
            continue;
        };
        snapshot.set_pending_serial(index, decision.pending);
        if let Some(tree) = tree.as_mut() {
            tree.set_pending_serial(index, decision.pending);
        }
    }
    (snapshot, tree)
}

/// A version built for a [`RecordedSerial`] not yet due: transfers move
/// to it when it is (`None`: the zone takes no part in transfers).
#[derive(Debug)]
struct Held {
    record: RecordedSerial,
    version: Option<ZoneVersion>,
}

/// What publishes keep between calls.
#[derive(Debug, Default)]
struct StoreState {
    zones: BTreeMap<String, ZoneState>,
    /// The build-time tree of the served snapshot, for
    /// [`ZoneStore::publish_changes`]; `None` before the first publish and
    /// while the snapshot itself keeps the tree (wildcards, zone cuts).
    tree: Option<Tree>,
    /// Transfer policies of the zones last published in full.
    policies: BTreeMap<Name, Arc<TransferPolicy>>,
    /// The settings (no records) of the zones last published in full, in
    /// their order, for [`ZoneStore::publish_settings`].
    settings: Vec<ZoneContent>,
    /// How serials are chosen.
    mode: SerialMode,
    /// Versions held for records not yet due, by apex as in `zones`.
    held: BTreeMap<String, Held>,
    /// Zones taking part in transfers without a version yet, by apex as in
    /// `zones` (see [`ZoneStore::unversioned`]).
    unversioned: BTreeSet<String>,
}

impl StoreState {
    /// The serial decision for content `fingerprint` of `apex` (see
    /// [`choose`]).
    fn decide(&self, apex: &str, fingerprint: u64, now_s: u32, now_ms: u64) -> Decision {
        decide_in(self, apex, fingerprint, (now_s, now_ms))
    }

    /// The transfer versions to install after a publish that built `built`
    /// under `decisions` (apex, decision): held versions coming due, and
    /// captured versions due at once; captured versions not yet due are
    /// held. `keys`: the snapshot whose zone keys re-sign the SOA of a
    /// signed version given a record's serial.
    fn settle(
        &mut self,
        decisions: &[(String, Decision)],
        built: Vec<ZoneVersion>,
        keys: &Snapshot,
    ) -> Vec<ZoneVersion> {
        let assigned: BTreeSet<&str> = decisions
            .iter()
            .filter(|(_, d)| d.assigned)
            .map(|(apex, _)| apex.as_str())
            .collect();
        let (mut out, built): (Vec<ZoneVersion>, Vec<ZoneVersion>) = built
            .into_iter()
            .partition(|v| assigned.contains(normalise_apex(&v.apex.to_ascii()).as_str()));
        for apex in &assigned {
            self.held.remove(*apex);
        }
        for (apex, _) in decisions.iter().filter(|(_, d)| d.activate_held) {
            if let Some(held) = self.held.remove(apex) {
                out.extend(held.version.map(|v| keys.version_at(v, held.record.serial)));
            }
        }
        let mut built: BTreeMap<String, ZoneVersion> = built
            .into_iter()
            .map(|v| (normalise_apex(&v.apex.to_ascii()), v))
            .collect();
        for (apex, decision) in decisions {
            let Some(record) = decision.capture else { continue };
            let version = built.remove(apex);
            if decision.confirmed && decision.serial == record.serial {
                self.held.remove(apex);
                out.extend(version.map(|v| keys.version_at(v, record.serial)));
            } else {
                self.held.insert(apex.clone(), Held { record, version });
            }
        }
        out
    }
}

/// Holds the served [`Snapshot`]. Readers call [`ZoneStore::load`] (or keep
/// an [`arc_swap::Cache`] of [`ZoneStore::handle`]) and never wait; a
/// publish builds the next snapshot beside the current one and swaps it in
/// whole, so no reader sees a half-built zone.
#[derive(Debug)]
pub struct ZoneStore {
    current: ArcSwap<Snapshot>,
    state: Mutex<StoreState>,
    updates: AtomicU64,
    /// See [`ZoneStore::late_serial_records`].
    late_serial_records: AtomicU64,
    /// See [`ZoneStore::serves_restored`].
    restored: std::sync::atomic::AtomicBool,
    /// How long the last snapshot build or update took, in nanoseconds.
    last_build_nanos: AtomicU64,
    /// Transfer-enabled zones by lower-cased apex: policy, current
    /// version and IXFR journal.
    transfers: Mutex<BTreeMap<Name, Arc<Mutex<TransferZone>>>>,
    /// Bumped whenever a transfer-enabled zone's serial or policy changes
    /// (the NOTIFY task watches it).
    transfer_changes: tokio::sync::watch::Sender<u64>,
    transfer_counters: TransferCounters,
    /// MACs of signed requests accepted lately (TSIG replay check).
    recent_macs: super::tsig_key::RecentMacs,
    /// GeoIP database for `Nearest` names.
    geo: Mutex<Option<Arc<super::routing::GeoIpDb>>>,
    /// Why the GeoIP database given could not be read, if it could not.
    geo_problem: Mutex<Option<String>>,
}

/// Zone transfer and NOTIFY counters, read by the metrics collector.
#[derive(Debug, Default)]
pub struct TransferCounters {
    /// Full transfers sent (AXFR, or IXFR answered with the whole zone).
    pub axfr: Counter,
    /// Incremental transfers sent.
    pub ixfr: Counter,
    /// Transfer requests refused (address, key, zone).
    pub refused: Counter,
    /// Signed requests whose TSIG did not verify.
    pub tsig_failures: Counter,
    /// NOTIFY messages sent (retries included).
    pub notify_sent: Counter,
    /// NOTIFY messages acknowledged.
    pub notify_acked: Counter,
    /// NOTIFYs given up after every retry.
    pub notify_failed: Counter,
}

/// A monotonic counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for ZoneStore {
    fn default() -> Self {
        ZoneStore {
            current: ArcSwap::from_pointee(Snapshot::empty()),
            state: Mutex::new(StoreState::default()),
            updates: AtomicU64::new(0),
            late_serial_records: AtomicU64::new(0),
            restored: std::sync::atomic::AtomicBool::new(false),
            last_build_nanos: AtomicU64::new(0),
            transfers: Mutex::new(BTreeMap::new()),
            transfer_changes: tokio::sync::watch::Sender::new(0),
            transfer_counters: TransferCounters::default(),
            recent_macs: Default::default(),
            geo: Mutex::new(None),
            geo_problem: Mutex::new(None),
        }
    }
}

impl ZoneStore {
    /// A store serving nothing (every query REFUSED).
    pub fn new() -> Arc<ZoneStore> {
        Arc::new(ZoneStore::default())
    }

    /// The snapshot served now.
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The swap cell, for readers that cache it per thread.
    pub fn handle(&self) -> &ArcSwap<Snapshot> {
        &self.current
    }

    /// Snapshots swapped in since start.
    pub fn updates(&self) -> u64 {
        self.updates.load(Ordering::Relaxed)
    }

    /// Whether the snapshot served is the one
    /// [`ZoneStore::restore_snapshot`] restored, with no whole publish
    /// since (which keeps or replaces it).
    pub fn serves_restored(&self) -> bool {
        self.restored.load(Ordering::Relaxed)
    }

    /// Recorded serials that reached this store only after their instant
    /// (see [`ZoneStore::set_serial_mode`]), since start.
    pub fn late_serial_records(&self) -> u64 {
        self.late_serial_records.load(Ordering::Relaxed)
    }

    /// How long building the last published snapshot took, in seconds (0
    /// before the first): a full build for [`ZoneStore::publish`] (every
    /// zone is built in one snapshot, so with one zone this is that zone's
    /// build time), the incremental update for
    /// [`ZoneStore::publish_changes`].
    pub fn last_build_seconds(&self) -> f64 {
        self.last_build_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Starts `apex`'s serial at `serial` (e.g. the `Domain.status.serial`
    /// of a previous run), so serials keep rising across restarts. Only
    /// raises a serial, never lowers it.
    pub fn seed_serial(&self, apex: &str, serial: u32) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let zone = state.zones.entry(normalise_apex(apex)).or_default();
        if serial_gt(serial, zone.serial) || zone.serial == 0 {
            zone.serial = serial;
            zone.confirmed = true;
            zone.from_record = true;
        }
    }

    /// Chooses serials by `mode` from now on, and applies it to the zones
    /// served: a zone whose content has a due [`RecordedSerial`] is served
    /// with it (its transfers move to this version); see
    /// [`super::serials`]. Call again when the records change and at
    /// [`ZoneStore::next_serial_due`]. A record new here that is due
    /// already for a zone served with a lower serial arrived late: it is
    /// logged (warning) and counted ([`ZoneStore::late_serial_records`]).
    ///
    /// Returns whether a new snapshot was swapped in.
    ///
    /// # Errors
    /// [`NeedsWholePublish`]: the store keeps no tree to update serials in
    /// (zones with wildcards or zone cuts); the mode is set, and the next
    /// [`ZoneStore::publish`] of the same content applies it.
    ///
    /// [`RecordedSerial`]: super::serials::RecordedSerial
    pub fn set_serial_mode(&self, mode: SerialMode) -> Result<bool, NeedsWholePublish> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let store_state = &mut *guard;
        let (now, now_ms) = (unix_seconds(), unix_millis());
        let shown = |apex: &str| store_state.zones.get(apex).map(|z| z.serial);
        for late in late_records(&store_state.mode, &mode, shown, now_ms) {
            self.late_serial_records.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                zone = %late.apex,
                serial = late.serial,
                shown = late.shown,
                late_ms = late.late_ms,
                "a recorded serial reached this replica after its instant: until now it answered with the \
                 previous serial while replicas that had the record on time answered with the new one \
                 (a slow API server or watch; the writer's activation delay is too short for it)"
            );
        }
        store_state.mode = mode;
        store_state.unversioned = self.unversioned(&store_state.policies);
        let current = self.current.load_full();
        let served: BTreeSet<String> = current.zones().iter().map(|z| normalise_apex(&z.apex)).collect();
        store_state.held.retain(|apex, _| served.contains(apex));
        let mut decisions: Vec<(String, Decision)> = Vec::new();
        for (apex, zone) in &store_state.zones {
            if !served.contains(apex) {
                continue;
            }
            let decision = store_state.decide(apex, zone.fingerprint, now, now_ms);
            if zone.moved_by(zone.fingerprint, &decision) {
                decisions.push((apex.clone(), decision));
            }
        }
        if decisions.is_empty() {
            return Ok(false);
        }
        if store_state.tree.is_none() {
            return Err(NeedsWholePublish);
        }
        let started = std::time::Instant::now();
        let mut captured: BTreeSet<Name> = BTreeSet::new();
        let mut serial_changed = false;
        let built = {
            let StoreState {
                zones, tree, policies, ..
            } = &mut *store_state;
            let Some(tree) = tree.as_mut() else {
                return Err(NeedsWholePublish);
            };
            for (apex, decision) in &decisions {
                let Ok(name) = Name::from_ascii(apex) else { continue };
                let key = wire_key(&fqdn_lower(&name));
                let Some(index) = tree.zones.iter().position(|z| z.apex_key == key) else {
                    continue;
                };
                if tree.zones[index].serial != decision.serial {
                    tree.set_serial(index, decision.serial);
                    serial_changed = true;
                }
                if tree.zones[index].pending_serial != decision.pending {
                    tree.set_pending_serial(index, decision.pending);
                    serial_changed = true;
                }
                if decision.assigned || decision.capture.is_some() {
                    captured.insert(tree.zones[index].apex.clone());
                }
                if let Some(zone) = zones.get_mut(apex) {
                    *zone = zone.decided(decision);
                }
            }
            if captured.iter().any(|apex| policies.contains_key(apex)) {
                tree.versions(&|apex| policies.contains_key(apex) && captured.contains(apex))
            } else {
                Vec::new()
            }
        };
        let snapshot = match &store_state.tree {
            Some(tree) if serial_changed => Some(current.updated(tree, &rustc_hash::FxHashSet::default())),
            _ => None,
        };
        let keys: &Snapshot = snapshot.as_ref().unwrap_or(&*current);
        // Transfers carry the signatures the answers carry; unchanged
        // RRsets keep the last version's.
        let built = match &store_state.tree {
            Some(tree) if !built.is_empty() => {
                let previous = self.previous_versions(&built);
                keys.sign_versions(tree, built, &previous)
            }
            _ => built,
        };
        let versions = store_state.settle(&decisions, built, keys);
        self.last_build_nanos.store(
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.update_transfers(&store_state.policies, versions);
        if let Some(snapshot) = snapshot {
            self.current.store(Arc::new(snapshot));
            self.updates.fetch_add(1, Ordering::Relaxed);
        }
        Ok(true)
    }

    /// Unix time in milliseconds at which a recorded serial not yet due
    /// becomes due (call [`ZoneStore::set_serial_mode`] then), if any.
    pub fn next_serial_due(&self) -> Option<u64> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let recorded = match &state.mode {
            SerialMode::Assign => None,
            SerialMode::Follow(recorded) => Some(recorded.values().flatten()),
        };
        let held = state.held.values().map(|h| &h.record);
        next_due(held.chain(recorded.into_iter().flatten()), unix_millis())
    }

    /// Each served zone's content fingerprint and the serial shown for it,
    /// for the writer of [`RecordedSerial`]s.
    ///
    /// [`RecordedSerial`]: super::serials::RecordedSerial
    pub fn serial_states(&self) -> Vec<ZoneSerialState> {
        let served: BTreeSet<String> = self.load().zones().iter().map(|z| normalise_apex(&z.apex)).collect();
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .zones
            .iter()
            .filter(|(apex, _)| served.contains(*apex))
            .map(|(apex, zone)| ZoneSerialState {
                apex: apex.clone(),
                content: zone.fingerprint,
                serial: zone.serial,
                confirmed: zone.confirmed,
            })
            .collect()
    }

    /// Uses `db` for the GeoIP fallback of `Nearest` names from the next
    /// snapshot on (call before the first [`ZoneStore::publish`]).
    pub fn set_geoip(&self, db: Option<Arc<super::routing::GeoIpDb>>) {
        *self.geo.lock().unwrap_or_else(|e| e.into_inner()) = db;
    }

    /// Reads the GeoIP database at `path` for the next snapshots. On error
    /// the store keeps serving without one and remembers why
    /// ([`ZoneStore::geoip_problem`]).
    ///
    /// # Errors
    /// The file is missing, unreadable or not a MaxMind DB.
    pub fn load_geoip(&self, path: &std::path::Path) -> Result<(), String> {
        let result = super::routing::GeoIpDb::open(path);
        let (db, problem) = match result {
            Ok(db) => (Some(Arc::new(db)), None),
            Err(e) => (None, Some(e)),
        };
        self.set_geoip(db);
        (*self.geo_problem.lock().unwrap_or_else(|e| e.into_inner())).clone_from(&problem);
        match problem {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Why no GeoIP database is in use: `None` when one is loaded; else
    /// the read error, or that none was given.
    pub fn geoip_problem(&self) -> Option<String> {
        if self.geo.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
            return None;
        }
        Some(
            self.geo_problem
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_else(|| "no GeoIP database is loaded (start the server with --geoip-db PATH)".into()),
        )
    }

    /// Publishes `zones` as the complete set served. Zones whose content
    /// changed get a new serial; unchanged zones keep theirs; when nothing
    /// changed at all, the snapshot is not rebuilt. Afterwards
    /// [`ZoneStore::publish_changes`] can change names of these zones.
    pub fn publish(&self, zones: Vec<ZoneContent>) -> PublishOutcome {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let store_state = &mut *guard;
        self.restored.store(false, Ordering::Relaxed);
        let (now, now_ms) = (unix_seconds(), unix_millis());
        // Signatures near expiry are made again by a full build; zones
        // assigned serials here get a new serial (secondaries must fetch
        // the new signatures).
        let resign = self.current.load().resign_due(now);
        let mut changed = store_state.zones.len() != zones.len() || resign;
        // Zones taking part in transfers, by apex, with their policies.
        let policies: BTreeMap<Name, Arc<TransferPolicy>> = zones
            .iter()
            .filter(|z| z.transfer.enabled())
            .map(|z| (fqdn_lower(&z.apex), Arc::new(z.transfer.clone())))
            .collect();
        store_state.unversioned = self.unversioned(&policies);
        {
            // A zone that starts taking part needs its records: rebuild.
            let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
            changed |= policies.keys().any(|apex| {
                transfers
                    .get(apex)
                    .is_none_or(|zone| zone.lock().unwrap_or_else(|e| e.into_inner()).version.is_none())
            });
        }
        store_state.settings = zones.iter().map(settings_only).collect();
        let mut next: BTreeMap<String, ZoneState> = BTreeMap::new();
        let mut with_serials = Vec::with_capacity(zones.len());
        let mut decisions: Vec<(String, Decision)> = Vec::new();
        // Zones whose transfer version is built: those assigned a serial,
        // and those capturing a record.
        let mut versioned: BTreeSet<Name> = BTreeSet::new();
        for zone in zones {
            let apex = normalise_apex(&zone.apex.to_ascii());
            let settings = settings_hash(&zone, now);
            let records = zone
                .records
                .iter()
                .fold(0u64, |sum, r| sum.wrapping_add(record_hash(r)));
            let routed = zone.routed.iter().fold(0u64, |sum, r| sum.wrapping_add(routed_hash(r)));
            let fingerprint = fingerprint(settings, records, routed);
            let mut decision = store_state.decide(&apex, fingerprint, now, now_ms);
            if resign && zone.dnssec.is_some() {
                resigned(&mut decision, store_state.zones.get(&apex), now);
            }
            changed |= store_state
                .zones
                .get(&apex)
                .is_none_or(|o| o.moved_by(fingerprint, &decision));
            if decision.assigned || decision.capture.is_some() {
                versioned.insert(fqdn_lower(&zone.apex));
            }
            let serial = decision.serial;
            next.insert(
                apex.clone(),
                ZoneState {
                    fingerprint,
                    settings,
                    records,
                    routed,
                    ..ZoneState::default()
                }
                .decided(&decision),
            );
            decisions.push((apex, decision));
            with_serials.push((zone, serial));
        }
        let state = &mut store_state.zones;
        if !changed && state.keys().eq(next.keys()) {
            self.update_transfers(&policies, Vec::new());
            store_state.policies = policies;
            let current = self.current.load();
            return PublishOutcome {
                changed: false,
                zones: current.zones(),
                skipped: current.skipped().to_vec(),
            };
        }
        // Keep serials of zones that went away, in case they come back.
        for (apex, old) in std::mem::take(&mut *state) {
            next.entry(apex).or_insert(ZoneState {
                fingerprint: 0,
                serial: old.serial,
                ..ZoneState::default()
            });
        }
        *state = next;
        let geo = self.geo.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let started = std::time::Instant::now();
        // The old tree goes first: two at once would double the peak.
        store_state.tree = None;
        let (snapshot, versions, tree) = Snapshot::build_keeping(
            &with_serials,
            &|apex| policies.contains_key(apex) && versioned.contains(apex),
            geo,
        );
        let (snapshot, tree) = with_pending(snapshot, tree, &decisions);
        let versions = store_state.settle(&decisions, versions, &snapshot);
        self.swap_in(store_state, snapshot, versions, tree, policies, started)
    }

    /// As [`ZoneStore::publish`], with the records given in parts rather
    /// than all at once: `zones` gives each zone's settings (its `records`
    /// and `routed` are ignored), and `next_part` the records of some
    /// owners at a time, as [`ZoneChanges`] of those zones (each owner in
    /// one part only), until it returns `None`. Only the part in hand and
    /// the tree being built are held: a whole publish of 1,000,000 shards
    /// held every record as a hickory `Record`, about 1 GiB, beside the
    /// served snapshot. The result, serials included, is what
    /// [`ZoneStore::publish`] of the same records gives.
    ///
    /// Returns `None`, having published nothing, when a part cannot be
    /// applied owner by owner (a wildcard or a delegation below an apex,
    /// a zone `zones` lacks): publish the whole content with
    /// [`ZoneStore::publish`] instead. The names
    /// [`ZoneStore::publish_changes`] can change after that are then those
    /// of the next whole publish.
    pub fn publish_in_parts(
        &self,
        mut zones: Vec<ZoneContent>,
        next_part: &mut dyn FnMut() -> Option<Vec<ZoneChanges>>,
    ) -> Option<PublishOutcome> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let store_state = &mut *guard;
        for zone in &mut zones {
            zone.records = Vec::new();
            zone.routed = Vec::new();
        }
        let policies: BTreeMap<Name, Arc<TransferPolicy>> = zones
            .iter()
            .filter(|z| z.transfer.enabled())
            .map(|z| (fqdn_lower(&z.apex), Arc::new(z.transfer.clone())))
            .collect();
        store_state.unversioned = self.unversioned(&policies);
        let started = std::time::Instant::now();
        // The old tree goes first: two at once would double the peak.
        store_state.tree = None;
        let settings: Vec<(ZoneContent, u32)> = zones.into_iter().map(|zone| (zone, 0)).collect();
        let (mut tree, zone_skipped) = Tree::build(&settings);
        while let Some(part) = next_part() {
            for change in part {
                let apex_key = wire_key(&fqdn_lower(&change.apex));
                let Some(zone) = tree.zones.iter().position(|z| z.apex_key == apex_key) else {
                    tracing::debug!(apex = %change.apex, "records for a zone not given; a whole publish is needed");
                    return None;
                };
                match tree.plan(zone, &change.names, &change.routed) {
                    Ok(plan) => tree.apply_unserved(plan),
                    Err(why) => {
                        tracing::debug!(reason = %why.0, "publish in parts not possible; a whole publish is needed");
                        return None;
                    }
                }
            }
        }

        Some(self.publish_tree(store_state, tree, zone_skipped, settings, policies, started))
    }

    /// The end of a publish whose records are all in `tree` (built from
    /// `settings`, then given its records): serials by the rules of
    /// [`ZoneStore::publish`], then the snapshot served from the tree.
    fn publish_tree(
        &self,
        store_state: &mut StoreState,
        mut tree: Tree,
        zone_skipped: Vec<SkippedRecord>,
        mut settings: Vec<(ZoneContent, u32)>,
        policies: BTreeMap<Name, Arc<TransferPolicy>>,
        started: std::time::Instant,
    ) -> PublishOutcome {
        self.restored.store(false, Ordering::Relaxed);
        store_state.settings = settings.iter().map(|(zone, _)| settings_only(zone)).collect();
        // Serials by the rules of `publish`: the records' and routed names'
        // hashes are the sums of the owners' that the tree kept.
        let (now, now_ms) = (unix_seconds(), unix_millis());
        let mut decisions: Vec<(String, Decision)> = Vec::new();
        // Zones whose transfer version is built: those assigned a serial,
        // and those capturing a record.
        let mut versioned: BTreeSet<Name> = BTreeSet::new();
        let resign = self.current.load().resign_due(now);
        let mut changed = store_state.zones.len() != tree.zones.len() || resign;
        {
            let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
            changed |= policies.keys().any(|apex| {
                transfers
                    .get(apex)
                    .is_none_or(|zone| zone.lock().unwrap_or_else(|e| e.into_inner()).version.is_none())
            });
        }
        let mut next: BTreeMap<String, ZoneState> = BTreeMap::new();
        for index in 0..tree.zones.len() {
            let apex_name = tree.zones[index].apex.clone();
            let apex = normalise_apex(&apex_name.to_ascii());
            let settings_of = settings
                .iter()
                .find(|(c, _)| c.apex.to_lowercase() == apex_name.to_lowercase())
                .map(|(c, _)| settings_hash(c, now))
                .unwrap_or_default();
            let (records, routed) = tree.hash_sums(index);
            let fingerprint = fingerprint(settings_of, records, routed);
            let mut decision = store_state.decide(&apex, fingerprint, now, now_ms);
            if resign && tree.zones[index].dnssec.is_some() {
                resigned(&mut decision, store_state.zones.get(&apex), now);
            }
            changed |= store_state
                .zones
                .get(&apex)
                .is_none_or(|o| o.moved_by(fingerprint, &decision));
            if decision.assigned || decision.capture.is_some() {
                versioned.insert(fqdn_lower(&apex_name));
            }
            let serial = decision.serial;
            tree.set_serial(index, serial);
            for (content, content_serial) in &mut settings {
                if content.apex.to_lowercase() == apex_name.to_lowercase() {
                    *content_serial = serial;
                }
            }
            next.insert(
                apex.clone(),
                ZoneState {
                    fingerprint,
                    settings: settings_of,
                    records,
                    routed,
                    ..ZoneState::default()
                }
                .decided(&decision),
            );
            decisions.push((apex, decision));
        }
        let state = &mut store_state.zones;
        if !changed && state.keys().eq(next.keys()) {
            // The tree is the served content's: keep it for publish_changes.
            store_state.tree = Some(tree);
            self.update_transfers(&policies, Vec::new());
            store_state.policies = policies;
            let current = self.current.load();
            return PublishOutcome {
                changed: false,
                zones: current.zones(),
                skipped: current.skipped().to_vec(),
            };
        }
        for (apex, old) in std::mem::take(&mut *state) {
            next.entry(apex).or_insert(ZoneState {
                fingerprint: 0,
                serial: old.serial,
                ..ZoneState::default()
            });
        }
        *state = next;
        let geo = self.geo.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (snapshot, versions, tree) = Snapshot::from_tree(
            tree,
            zone_skipped,
            &settings,
            &|apex| policies.contains_key(apex) && versioned.contains(apex),
            geo,
        );
        let (snapshot, tree) = with_pending(snapshot, tree, &decisions);
        let versions = store_state.settle(&decisions, versions, &snapshot);
        self.swap_in(store_state, snapshot, versions, tree, policies, started)
    }

    /// Publishes new settings of the zones served now over the records
    /// last published: SOA values (timers, MNAME, RNAME and the TTL, which
    /// is also the apex NS's and the in-zone name server addresses'), the
    /// transfer policy and the client table. Every other RRset and routed
    /// name stays as it is; the snapshot is rendered again from the kept
    /// tree (negative answers carry the SOA) instead of being built from
    /// every record again. Serials follow the rules of
    /// [`ZoneStore::publish`]: a changed SOA is a changed zone, whose
    /// secondaries are notified.
    ///
    /// `zones`: the zones of the last whole publish, in its order (their
    /// `records` and `routed` are ignored). Returns `None`, having
    /// published nothing, when anything else differs (a zone added, gone
    /// or moved; name servers or their addresses; signing; pending names;
    /// the default client region) or no tree is kept (nothing published
    /// whole yet; zones with wildcards or zone cuts): publish whole then.
    pub fn publish_settings(&self, zones: &[ZoneContent]) -> Option<PublishOutcome> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let store_state = &mut *guard;
        let kept = store_state.tree.as_ref()?;
        if zones.len() != store_state.settings.len()
            || !zones
                .iter()
                .zip(&store_state.settings)
                .all(|(new, old)| differs_in_settings_only(new, old))
        {
            return None;
        }
        let settings: Vec<(ZoneContent, u32)> = zones.iter().map(|zone| (settings_only(zone), 0)).collect();
        // The zones' settings alone: their SOA, apex and name server RRsets.
        let (fresh, zone_skipped) = Tree::build(&settings);
        if fresh.zones.len() != kept.zones.len()
            || fresh
                .zones
                .iter()
                .zip(&kept.zones)
                .any(|(a, b)| a.apex_key != b.apex_key)
        {
            return None;
        }
        let started = std::time::Instant::now();
        let mut tree = store_state.tree.take()?;
        for (index, info) in fresh.zones.iter().enumerate() {
            let zone = &mut tree.zones[index];
            zone.negative_soa = info.negative_soa.clone();
            zone.soa_ttl = info.soa_ttl;
            // Records given for these owners' settings types are skipped
            // (the settings win), so the fresh RRsets are what a whole
            // build would hold.
            let owners = std::iter::once(info.apex_key.clone()).chain(info.settings_owners.iter().map(wire_key));
            for key in owners {
                let (Some(from), Some(to)) = (fresh.nodes.get(&key), tree.nodes.get_mut(&key)) else {
                    continue;
                };
                for (rtype, set) in &from.rrsets {
                    to.rrsets.insert(*rtype, set.clone());
                }
            }
        }
        let policies: BTreeMap<Name, Arc<TransferPolicy>> = settings
            .iter()
            .filter(|(z, _)| z.transfer.enabled())
            .map(|(z, _)| (fqdn_lower(&z.apex), Arc::new(z.transfer.clone())))
            .collect();
        store_state.unversioned = self.unversioned(&policies);
        Some(self.publish_tree(store_state, tree, zone_skipped, settings, policies, started))
    }

    /// Serves `snapshot` (built since `started`) of a whole publish, keeping
    /// `tree` for [`ZoneStore::publish_changes`] and installing the
    /// transfer `policies` and `versions`.
    fn swap_in(
        &self,
        store_state: &mut StoreState,
        snapshot: Snapshot,
        versions: Vec<ZoneVersion>,
        tree: Option<Tree>,
        policies: BTreeMap<Name, Arc<TransferPolicy>>,
        started: std::time::Instant,
    ) -> PublishOutcome {
        self.last_build_nanos.store(
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        store_state.tree = tree;
        self.update_transfers(&policies, versions);
        store_state.policies = policies;
        let outcome = PublishOutcome {
            changed: true,
            zones: snapshot.zones(),
            skipped: snapshot.skipped().to_vec(),
        };
        self.current.store(Arc::new(snapshot));
        self.updates.fetch_add(1, Ordering::Relaxed);
        outcome
    }
}

impl ZoneStore {
    /// Applies `changes` on top of the zones last published: each listed
    /// owner's records (and routed name) are replaced. Zones whose records
    /// really changed get a new serial, by the same rules as
    /// [`ZoneStore::publish`] (a full publish of the resulting content would
    /// give the same serials; unchanged content: no new serial and
    /// `changed: false`). The snapshot is updated by re-rendering only the
    /// changed names, the empty non-terminals that appear or go away, and
    /// the names whose answers go through them (CNAME chains, NS/MX/SRV
    /// additional records); the other names' stored answers are shared or
    /// copied. Transfer-enabled zones that changed get a new journal entry
    /// (their records are listed again: that costs time proportional to
    /// the zone, not a rebuild of its answers).
    ///
    /// Returns `None`, with nothing applied, when the caller must publish
    /// the full content instead: a change names a zone not served, nothing
    /// was published in full yet, or the change is one this path does not
    /// handle: wildcards or zone cuts (in the zone at all, or appearing),
    /// a routed name with a region the zone's client table does not know,
    /// or a routed name whose owner is not listed in `names`. Record types
    /// appearing in or going from the zone are applied like any change:
    /// only names holding the type, or whose CNAME/NS/MX/SRV lead to one,
    /// answer it otherwise than an absent type, and those are re-rendered.
    pub fn publish_changes(&self, changes: Vec<ZoneChanges>) -> Option<PublishOutcome> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        state.unversioned = self.unversioned(&state.policies);
        let tree = state.tree.as_mut()?;
        let current = self.current.load_full();
        // One entry per zone: changes to the same apex are merged in order.
        let mut merged: Vec<(usize, ZoneChanges)> = Vec::new();
        for change in changes {
            let apex_key = wire_key(&fqdn_lower(&change.apex));
            let zone = tree.zones.iter().position(|z| z.apex_key == apex_key)?;
            match merged.iter_mut().find(|(z, _)| *z == zone) {
                Some((_, into)) => {
                    into.names.extend(change.names);
                    into.routed.extend(change.routed);
                }
                None => merged.push((zone, change)),
            }
        }
        let unsupported = |why: Unsupported| {
            tracing::debug!(reason = %why.0, "incremental publish not possible; a full publish is needed");
        };
        let mut owners: Vec<OwnerChange> = Vec::new();
        let mut zones: Vec<(usize, String)> = Vec::new();
        for (zone, change) in &merged {
            let plan = match tree.plan(*zone, &change.names, &change.routed) {
                Ok(plan) => plan,
                Err(why) => {
                    unsupported(why);
                    return None;
                }
            };
            if !current.knows_regions(*zone, plan.iter().flat_map(OwnerChange::regions)) {
                unsupported(Unsupported("a routed name has a region the client table lacks".into()));
                return None;
            }
            owners.extend(plan);
            zones.push((*zone, normalise_apex(&tree.zones[*zone].apex.to_ascii())));
        }
        // Serials: the fingerprint a full publish of the result would have.
        let (now, now_ms) = (unix_seconds(), unix_millis());
        let mut next: Vec<(usize, String, ZoneState, Decision)> = Vec::new();
        for (zone, apex) in &zones {
            let old = state.zones.get(apex).copied()?;
            let (mut records, mut routed) = (old.records, old.routed);
            for owner in owners.iter().filter(|o| o.zone == *zone) {
                let before = tree.owner_hashes(*zone, &owner.key);
                records = records.wrapping_sub(before.records).wrapping_add(owner.hashes.records);
                routed = routed.wrapping_sub(before.routed).wrapping_add(owner.hashes.routed);
            }
            let fingerprint = fingerprint(old.settings, records, routed);
            let inputs = SerialInputs {
                mode: &state.mode,
                zones: &state.zones,
                held: &state.held,
                unversioned: &state.unversioned,
            };
            let decision = decide_in(inputs, apex, fingerprint, (now, now_ms));
            if !old.moved_by(fingerprint, &decision) && old.serial != 0 {
                continue;
            }
            next.push((
                *zone,
                apex.clone(),
                ZoneState {
                    fingerprint,
                    records,
                    routed,
                    ..old
                }
                .decided(&decision),
                decision,
            ));
        }
        if next.is_empty() {
            return Some(PublishOutcome {
                changed: false,
                zones: current.zones(),
                skipped: current.skipped().to_vec(),
            });
        }
        let started = std::time::Instant::now();
        let dirty = tree.apply(owners);
        // Zones whose transfer version is built: those assigned a serial,
        // and those capturing a record.
        let mut changed_apexes: BTreeSet<Name> = BTreeSet::new();
        let mut decisions: Vec<(String, Decision)> = Vec::new();
        for (zone, apex, zone_state, decision) in next {
            tree.set_serial(zone, zone_state.serial);
            tree.set_pending_serial(zone, decision.pending);
            if decision.assigned || decision.capture.is_some() {
                changed_apexes.insert(tree.zones[zone].apex.clone());
            }
            state.zones.insert(apex.clone(), zone_state);
            decisions.push((apex, decision));
        }
        let snapshot = current.updated(tree, &dirty);
        let policies = &state.policies;
        let built = if changed_apexes.iter().any(|apex| policies.contains_key(apex)) {
            let versions = tree.versions(&|apex| policies.contains_key(apex) && changed_apexes.contains(apex));
            // Unchanged RRsets keep the signatures the last version has.
            let previous = self.previous_versions(&versions);
            snapshot.sign_versions(tree, versions, &previous)
        } else {
            Vec::new()
        };
        let versions = state.settle(&decisions, built, &snapshot);
        let policies = &state.policies;
        self.last_build_nanos.store(
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.update_transfers(policies, versions);
        let outcome = PublishOutcome {
            changed: true,
            zones: snapshot.zones(),
            skipped: snapshot.skipped().to_vec(),
        };
        self.current.store(Arc::new(snapshot));
        self.updates.fetch_add(1, Ordering::Relaxed);
        Some(outcome)
    }

    /// The transfer versions served now of the zones of `versions`.
    fn previous_versions(&self, versions: &[ZoneVersion]) -> Vec<Arc<ZoneVersion>> {
        let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
        versions
            .iter()
            .filter_map(|v| transfers.get(&v.apex))
            .filter_map(|zone| zone.lock().unwrap_or_else(|e| e.into_inner()).version.clone())
            .collect()
    }

    /// Installs `policies` (zones absent from it stop taking part) and the
    /// new `versions`, journaling differences; wakes the NOTIFY task when
    /// a serial or a policy changed.
    fn update_transfers(&self, policies: &BTreeMap<Name, Arc<TransferPolicy>>, versions: Vec<ZoneVersion>) {
        let mut transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = false;
        let before = transfers.len();
        transfers.retain(|apex, _| policies.contains_key(apex));
        changed |= transfers.len() != before;
        for (apex, policy) in policies {
            let zone = transfers
                .entry(apex.clone())
                .or_insert_with(|| Arc::new(Mutex::new(TransferZone::new(policy.clone()))));
            let mut zone = zone.lock().unwrap_or_else(|e| e.into_inner());
            if zone.policy != *policy {
                zone.policy = policy.clone();
                changed = true;
            }
        }
        for version in versions {
            if let Some(zone) = transfers.get(&version.apex) {
                let mut zone = zone.lock().unwrap_or_else(|e| e.into_inner());
                if zone.version.as_ref().map(|v| v.serial) != Some(version.serial) {
                    changed = true;
                }
                zone.advance(version);
            }
        }
        drop(transfers);
        if changed {
            self.transfer_changes.send_modify(|generation| *generation += 1);
        }
    }

    /// Apexes (as in [`StoreState::zones`]) of the zones in `policies`
    /// whose transfers have no version yet.
    fn unversioned(&self, policies: &BTreeMap<Name, Arc<TransferPolicy>>) -> BTreeSet<String> {
        let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
        policies
            .keys()
            .filter(|apex| {
                transfers
                    .get(*apex)
                    .is_none_or(|zone| zone.lock().unwrap_or_else(|e| e.into_inner()).version.is_none())
            })
            .map(|apex| normalise_apex(&apex.to_ascii()))
            .collect()
    }

    /// The transfer-enabled zone holding `name` (lower case), if any.
    pub(crate) fn transfer_zone_of(&self, name: &Name) -> Option<ZoneRef> {
        let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
        let mut current = fqdn_lower(name);
        loop {
            if let Some(zone) = transfers.get(&current) {
                let policy = zone.lock().unwrap_or_else(|e| e.into_inner()).policy.clone();
                return Some((policy, current, zone.clone()));
            }
            if current.is_root() {
                return None;
            }
            current = current.base_name();
        }
    }

    /// Every transfer-enabled zone: apex, policy and current SOA record
    /// (if loaded), for the NOTIFY task.
    pub(crate) fn transfer_zones(&self) -> Vec<NotifyZone> {
        let transfers = self.transfers.lock().unwrap_or_else(|e| e.into_inner());
        transfers
            .iter()
            .map(|(apex, zone)| {
                let zone = zone.lock().unwrap_or_else(|e| e.into_inner());
                let soa = zone.version.as_ref().map(|v| (v.serial, v.soa.clone()));
                (apex.clone(), zone.policy.clone(), soa)
            })
            .collect()
    }

    /// A receiver that sees a new value whenever a transfer-enabled zone's
    /// serial or policy changes.
    pub fn transfer_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.transfer_changes.subscribe()
    }

    /// Zone transfer and NOTIFY counters.
    pub fn transfer_counters(&self) -> &TransferCounters {
        &self.transfer_counters
    }

    /// The MACs of signed requests accepted lately (TSIG replay check).
    pub fn recent_macs(&self) -> &super::tsig_key::RecentMacs {
        &self.recent_macs
    }

    /// The IXFR journal of `apex`: (from, to) serial pairs, oldest first.
    pub fn journal(&self, apex: &Name) -> Vec<(u32, u32)> {
        let Some((_, _, zone)) = self.transfer_zone_of(apex) else {
            return Vec::new();
        };
        let zone = zone.lock().unwrap_or_else(|e| e.into_inner());
        let current = zone.version.as_ref().map_or(0, |v| v.serial);
        let froms: Vec<u32> = zone.journal.iter().map(|d| d.from).collect();
        froms
            .iter()
            .enumerate()
            .map(|(i, from)| (*from, froms.get(i + 1).copied().unwrap_or(current)))
            .collect()
    }
}

/// A zone as the NOTIFY task sees it: apex, policy, serial and SOA.
pub(crate) type NotifyZone = (Name, Arc<TransferPolicy>, Option<(u32, hickory_proto::rr::Record)>);

pub(crate) fn fqdn_lower(name: &Name) -> Name {
    let mut name = name.to_lowercase();
    name.set_fqdn(true);
    name
}

fn normalise_apex(apex: &str) -> String {
    let lower = apex.to_ascii_lowercase();
    if lower.ends_with('.') {
        lower
    } else {
        format!("{lower}.")
    }
}

/// A hash of a zone's settings: SOA values, apex NS and their in-zone
/// addresses (order and case do not matter) and client regions.
/// `now_s`: Unix time in seconds; a signed zone's hash changes with its
/// signing period (`now_s / signatureRefresh`), so re-signing gives new
/// content, hence a new recorded serial every replica follows and a
/// transfer version carrying the new signatures (secondaries of an
/// unchanged zone must not keep signatures until they expire).
/// `zone` without its records and routed names: its settings.
fn settings_only(zone: &ZoneContent) -> ZoneContent {
    ZoneContent {
        apex: zone.apex.clone(),
        soa: zone.soa.clone(),
        name_servers: zone.name_servers.clone(),
        name_server_addresses: zone.name_server_addresses.clone(),
        records: Vec::new(),
        transfer: zone.transfer.clone(),
        routed: Vec::new(),
        client_regions: zone.client_regions.clone(),
        dnssec: zone.dnssec.clone(),
        default_client_region: zone.default_client_region.clone(),
        follow_cnames_across_zones: zone.follow_cnames_across_zones,
        pending: zone.pending.clone(),
    }
}

/// `new` and `old` are the same zone, differing at most in what
/// [`ZoneStore::publish_settings`] changes: SOA values, the transfer
/// policy and the client table.
fn differs_in_settings_only(new: &ZoneContent, old: &ZoneContent) -> bool {
    new.apex.to_lowercase() == old.apex.to_lowercase()
        && new.name_servers == old.name_servers
        && new.name_server_addresses == old.name_server_addresses
        && new.dnssec == old.dnssec
        && new.default_client_region == old.default_client_region
        && new.follow_cnames_across_zones == old.follow_cnames_across_zones
        && new.pending == old.pending
}

fn settings_hash(zone: &ZoneContent, now_s: u32) -> u64 {
    use crate::zone::signing_key::DnssecKey;
    let mut ns: Vec<String> = zone.name_servers.iter().map(|n| n.to_lowercase().to_string()).collect();
    ns.sort();
    let mut addresses: Vec<(String, std::net::IpAddr)> = zone
        .name_server_addresses
        .iter()
        .map(|(n, ip)| (n.to_lowercase().to_string(), *ip))
        .collect();
    addresses.sort();
    let mut hasher = DefaultHasher::new();
    ns.hash(&mut hasher);
    addresses.hash(&mut hasher);
    format!("{:?}", zone.soa).hash(&mut hasher);
    zone.client_regions.hash(&mut hasher);
    // Names answered SERVFAIL for now: a change is a change of the zone
    // (hashed only when some are, so other zones keep their fingerprint).
    if !zone.pending.is_empty() {
        let mut pending: Vec<String> = zone.pending.iter().map(|n| n.to_lowercase().to_string()).collect();
        pending.sort();
        pending.hash(&mut hasher);
    }
    // Signing on or off, a new key, new timings or another denial: a new serial (the
    // DNSKEY RRset and every signature change).
    zone.dnssec
        .as_ref()
        .map(|d| {
            (
                d.key.algorithm(),
                d.key.key_tag(),
                hickory_proto::dnssec::PublicKey::public_bytes(d.key.dnskey().public_key()).to_vec(),
                d.signature_validity,
                d.signature_refresh,
                signing_period(now_s, d.signature_refresh),
                d.denial,
            )
        })
        .hash(&mut hasher);
    // A zone-signing key, standby keys, a key's flags: only hashed when
    // present, so a CSK zone's fingerprint (and recorded serial) is what
    // it was before key modes existed.
    if let Some(d) = zone
        .dnssec
        .as_ref()
        .filter(|d| d.zone_signing_key.is_some() || !d.standby.is_empty() || d.key.flags() != DnssecKey::SEP_FLAGS)
    {
        let key = |k: &DnssecKey| {
            (
                k.algorithm(),
                k.key_tag(),
                k.flags(),
                hickory_proto::dnssec::PublicKey::public_bytes(k.dnskey().public_key()).to_vec(),
            )
        };
        (
            key(&d.key),
            d.zone_signing_key.as_ref().map(key),
            d.standby.iter().map(key).collect::<Vec<_>>(),
        )
            .hash(&mut hasher);
    }
    zone.default_client_region.hash(&mut hasher);
    zone.follow_cnames_across_zones.hash(&mut hasher);
    hasher.finish()
}

/// The signing period `now_s` falls in: `now_s / refresh` (refresh in
/// seconds; 0 counts as 1).
fn signing_period(now_s: u32, refresh: u32) -> u32 {
    now_s / refresh.max(1)
}

/// A hash of a zone's content from its settings hash and the wrapping
/// sums of its records' and routed names' hashes ([`record_hash`],
/// [`routed_hash`]): independent of record order, and updatable one
/// owner at a time.
fn fingerprint(settings: u64, records: u64, routed: u64) -> u64 {
    let mut hasher = DefaultHasher::new();
    (settings, records, routed).hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signed zone's content changes with its signing period, an
    /// unsigned zone's never with time.
    #[test]
    fn signed_zones_change_content_each_signing_period() {
        use crate::zone::signing_key::{DnssecAlgorithm, DnssecConfig, DnssecKey};
        let mut zone = ZoneContent::new(Name::from_ascii("example.com.").unwrap());
        let t = 1_800_000_000u32;
        assert_eq!(settings_hash(&zone, t), settings_hash(&zone, t + 10_000_000));
        let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
        zone.dnssec = Some(DnssecConfig {
            key: DnssecKey::from_pkcs8(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap()).unwrap(),
            zone_signing_key: None,
            standby: Vec::new(),
            signature_validity: 1_209_600,
            signature_refresh: 604_800,
            denial: Default::default(),
        });
        let start = t - t % 604_800;
        assert_eq!(settings_hash(&zone, start), settings_hash(&zone, start + 604_799));
        assert_ne!(settings_hash(&zone, start), settings_hash(&zone, start + 604_800));
    }

    /// Every key counts in the settings hash: a standby key added, a ZSK
    /// made active (and the old one standby), flags; a CSK zone hashes as
    /// it did before key modes (a ZSK or standby key only adds to it).
    #[test]
    fn settings_hash_covers_every_key() {
        use crate::zone::signing_key::{DnssecAlgorithm, DnssecConfig, DnssecKey};
        let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
        let make =
            |flags| DnssecKey::with_flags(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap(), flags).unwrap();
        let (ksk, zsk1, zsk2) = (make(257), make(256), make(256));
        let t = 1_800_000_000u32;
        let hash = |config: DnssecConfig| {
            let mut zone = ZoneContent::new(Name::from_ascii("example.com.").unwrap());
            zone.dnssec = Some(config);
            settings_hash(&zone, t)
        };
        let csk = DnssecConfig::csk(ksk.clone(), 1_209_600, 604_800);
        let before = DnssecConfig {
            zone_signing_key: Some(zsk1.clone()),
            standby: vec![zsk2.clone()],
            ..csk.clone()
        };
        let after = DnssecConfig {
            zone_signing_key: Some(zsk2.clone()),
            standby: vec![zsk1.clone()],
            ..csk.clone()
        };
        let no_standby = DnssecConfig {
            standby: Vec::new(),
            ..before.clone()
        };
        let hashes = [hash(csk.clone()), hash(before.clone()), hash(after), hash(no_standby)];
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(hash(before.clone()), hash(before));
        let pkcs8 = DnssecKey::generate_pkcs8(algorithm).unwrap();
        let as_zsk = DnssecConfig::csk(DnssecKey::with_flags(algorithm, &pkcs8, 256).unwrap(), 7200, 3600);
        let as_csk = DnssecConfig::csk(DnssecKey::from_pkcs8(algorithm, &pkcs8).unwrap(), 7200, 3600);
        assert_ne!(hash(as_zsk), hash(as_csk));
    }
}
