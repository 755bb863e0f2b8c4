//! `--snapshot-file`: the served zones kept in a file across restarts,
//! for `fedns controller` and `fedns dns-server`. At start the file is
//! served at once ([`restore`]); while the process runs, a thread writes
//! the served zones again after they change ([`Saver`]).
//!
//! Why: a restarted server otherwise answers only once every object is
//! listed and every record computed and rendered again, which at
//! 1,000,000 shards took half a minute on two cores
//! (`bench/controller.sh`); from the file it answers within a second,
//! with the same stored answers and serials. The file is a cache, never a
//! source: the publisher lists and publishes everything as after any
//! start, and that publish keeps the restored answers where the content
//! is the same and replaces them where not (`ZoneStore::restore_snapshot`).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fedns_dnsserver::{SnapshotFileError, ZoneStore};

use crate::cli::SnapshotArgs;

/// The shortest time between two writes of the file.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// How many times as long as the last write took the saver waits before
/// the next (a write of a large zone costs about a second of a core).
const INTERVAL_PER_WRITE: u32 = 10;

/// How often the saver looks for a change.
const TICK: Duration = Duration::from_secs(1);

/// Serves the file of `args` from `store` when it is usable (see
/// `ZoneStore::restore_snapshot`); logs what was restored, or why
/// nothing was. Returns whether the store serves it now.
pub fn restore(store: &ZoneStore, args: &SnapshotArgs) -> bool {
    let Some(path) = &args.snapshot_file else {
        return false;
    };
    let started = Instant::now();
    match store.restore_snapshot(path, Duration::from_secs(args.snapshot_max_age)) {
        Ok(restored) => {
            let age = restored.saved_at.elapsed().unwrap_or_default();
            tracing::info!(
                path = %path.display(),
                names = restored.names,
                zones = restored.zones.len(),
                octets = restored.octets,
                age_s = age.as_secs(),
                took_ms = started.elapsed().as_millis() as u64,
                "serving the zones saved in the snapshot file until they are published again"
            );
            true
        }
        Err(SnapshotFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!(path = %path.display(), "no snapshot file yet: answering once the zones are published");
            false
        }
        Err(error) => {
            tracing::warn!("{error}; answering once the zones are published");
            false
        }
    }
}

/// The thread writing the served zones to the file after they change.
pub struct Saver {
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Saver {
    /// Starts the saver of `args`' file for `store`, or `None` without a
    /// file; `restored`: what the store serves now came from that file
    /// ([`restore`]), so it is not written again until it changes.
    pub fn spawn(store: Arc<ZoneStore>, args: &SnapshotArgs, restored: bool) -> Option<Saver> {
        let path = args.snapshot_file.clone()?;
        let (stop, stopped) = mpsc::channel();
        // What a restore served counts as saved: it is the file.
        let saved = if restored { store.updates() } else { u64::MAX };
        let thread = std::thread::Builder::new()
            .name("fedns-snapshot".into())
            .spawn(move || save_loop(&store, &path, saved, &stopped))
            .map_err(
                |e| tracing::error!(error = %e, "cannot start the snapshot file's writer; the zones are not saved"),
            )
            .ok()?;
        Some(Saver {
            stop,
            thread: Some(thread),
        })
    }

    /// Writes the file once more if the zones changed since the last
    /// write (a restart then starts from the newest), and stops.
    pub async fn finish(mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// Writes `path` whenever the store's snapshot changed (its update count
/// is no longer `saved`) and the interval since the last write passed;
/// once more when told to stop.
fn save_loop(store: &ZoneStore, path: &PathBuf, mut saved: u64, stopped: &mpsc::Receiver<()>) {
    let mut interval = MIN_INTERVAL;
    let mut last_write: Option<Instant> = None;
    let mut writes = 0u64;
    // The last refusal logged, so a lasting one is said once.
    let mut said: Option<String> = None;
    loop {
        let stopping = match stopped.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        let due = last_write.is_none_or(|at| at.elapsed() >= interval);
        if store.updates() != saved && (due || stopping) {
            let started = Instant::now();
            match store.save_snapshot(path) {
                Ok(written) => {
                    let took = started.elapsed();
                    saved = written.updates;
                    interval = MIN_INTERVAL.max(took * INTERVAL_PER_WRITE);
                    last_write = Some(Instant::now());
                    writes += 1;
                    said = None;
                    let fields = (written.names, written.octets, took.as_millis() as u64);
                    if writes == 1 {
                        tracing::info!(path = %path.display(), names = fields.0, octets = fields.1, took_ms = fields.2, "served zones written to the snapshot file (again after each change, at most every {} s)", interval.as_secs());
                    } else {
                        tracing::debug!(path = %path.display(), names = fields.0, octets = fields.1, took_ms = fields.2, "served zones written to the snapshot file");
                    }
                }
                Err(SnapshotFileError::NothingPublished) => {}
                Err(error) => {
                    // Checked again at the next change, not every tick.
                    saved = store.updates();
                    last_write = Some(Instant::now());
                    let text = error.to_string();
                    if matches!(error, SnapshotFileError::Unsaveable(_)) {
                        // An older file would serve, at the next start,
                        // answers of a kind these zones no longer have
                        // (unsigned ones of a zone now signed).
                        match std::fs::remove_file(path) {
                            Ok(()) => {
                                tracing::info!(path = %path.display(), "snapshot file removed: the zones served now are not kept")
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => {
                                tracing::warn!(path = %path.display(), error = %e, "cannot remove the snapshot file of zones no longer kept")
                            }
                        }
                    }
                    if said.as_deref() != Some(text.as_str()) {
                        match error {
                            SnapshotFileError::Unsaveable(_) => tracing::info!(path = %path.display(), "{text}"),
                            _ => tracing::warn!(path = %path.display(), "{text}; tried again after the next change"),
                        }
                        said = Some(text);
                    }
                }
            }
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use fedns_dnsserver::hickory_proto::rr::rdata::CNAME;
    use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
    use fedns_dnsserver::{ZoneContent, ZoneStore};

    use super::*;

    fn zone(addresses: u8, wildcard: bool) -> ZoneContent {
        let mut zone = ZoneContent::new(Name::from_ascii("example.com.").unwrap());
        for i in 1..=addresses {
            zone.records.push(Record::from_rdata(
                Name::from_ascii("www.example.com.").unwrap(),
                30,
                RData::A(std::net::Ipv4Addr::new(10, 0, 0, i).into()),
            ));
        }
        if wildcard {
            zone.records.push(Record::from_rdata(
                Name::from_ascii("*.w.example.com.").unwrap(),
                30,
                RData::CNAME(CNAME(Name::from_ascii("www.example.com.").unwrap())),
            ));
        }
        zone
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(30), "{what}: not within 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn args(path: &std::path::Path) -> SnapshotArgs {
        SnapshotArgs {
            snapshot_file: Some(path.to_owned()),
            snapshot_max_age: 60,
        }
    }

    /// Names the restored store serves at www.example.com.
    fn restored_addresses(path: &std::path::Path) -> usize {
        let store = ZoneStore::new();
        assert!(restore(&store, &args(path)));
        store.load().rrset_count()
    }

    #[tokio::test]
    async fn the_saver_writes_changes_removes_a_file_of_zones_no_longer_kept_and_writes_last_on_finish() {
        let dir = std::env::temp_dir().join(format!("fedns-saver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("zones.snapshot");
        let store = ZoneStore::new();
        store.publish(vec![zone(1, false)]);
        let saver = Saver::spawn(store.clone(), &args(&path), false).unwrap();
        wait_for("the first write", || path.exists());
        let rrsets = restored_addresses(&path);

        // A wildcard: these zones are not kept, and the older file goes.
        store.publish(vec![zone(1, true)]);
        wait_for("the file of zones no longer kept removed", || !path.exists());

        // Kept again; then a change just before the end is written by finish.
        store.publish(vec![zone(2, false)]);
        wait_for("written again", || path.exists());
        store.publish(vec![zone(3, false)]);
        let updates = store.updates();
        saver.finish().await;
        let restored = ZoneStore::new();
        assert!(restore(&restored, &args(&path)));
        assert_eq!(restored.load().zones(), store.load().zones(), "the last serial written");
        assert!(restored.load().rrset_count() >= rrsets);
        assert_eq!(store.updates(), updates);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
