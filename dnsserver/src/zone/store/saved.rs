//! The snapshot file: the served [`Snapshot`] and each zone's serial
//! state, written by [`ZoneStore::save_snapshot`] and read back by
//! [`ZoneStore::restore_snapshot`] when a process starts, so that it
//! answers at once with what it served before instead of after listing
//! and computing every record again (at 1,000,000 shards that took half a
//! minute; the answers rendered from the same content are the same).
//!
//! The file is a cache of what this process already published, never a
//! source: the publisher still lists every object and publishes whole
//! after a restore, and when that content's fingerprint equals the
//! restored zone's the restored answers stay (no serial moves, nothing is
//! rendered again), else the new ones replace them.
//!
//! Layout (integers little-endian):
//!
//! | octets | what |
//! |---|---|
//! | 8 | `FEDNSZS1` |
//! | 4 + n | the writer's build ([`build_identity`]): a file of another build is never read further |
//! | 8 | when it was written, Unix milliseconds |
//! | 4 + n, repeated | frames, each a length and a postcard (serde) message: first the zones' serial state and the snapshot's head, then one frame per chunk of names |
//! | 32 | SHA-256 of every octet before it |
//!
//! A file is read whole only after its build and age pass; every chunk is
//! checked before it is used (`snapshot::saved`), and nothing is served
//! unless the checksum matches. The file is written beside its path and
//! renamed over it, readable by its owner only.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{unix_millis, ZoneState, ZoneStore};
use crate::zone::snapshot::{ChunkIn, HeadIn, HeadOut, Snapshot, ZoneSummary};

/// The file's first octets.
const MAGIC: &[u8; 8] = b"FEDNSZS1";

/// Bumped whenever the file's layout changes (the build identity changes
/// with every binary anyway).
const FORMAT: u32 = 1;

/// What a saved or restored snapshot file held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedSnapshot {
    /// The file's size in octets.
    pub octets: u64,
    /// Owner names with stored answers.
    pub names: usize,
    /// The zones, with the serials they were served with.
    pub zones: Vec<ZoneSummary>,
    /// When the file was written.
    pub saved_at: SystemTime,
    /// [`ZoneStore::updates`] of the snapshot saved (saving only): a
    /// later save with the same count would write the same file.
    pub updates: u64,
}

/// Why a snapshot was not saved or not restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotFileError {
    /// The served snapshot is of a kind never written to a file.
    #[error("the served zones are not saved: {0}")]
    Unsaveable(&'static str),
    /// Nothing was published yet: there is nothing to save.
    #[error("nothing is published yet")]
    NothingPublished,
    /// The store already publishes: a restore would go back in time.
    #[error("the DNS server already serves what it published; a saved snapshot is not restored over it")]
    AlreadyPublished,
    /// The running executable cannot be identified (its size and time).
    #[error("this process cannot identify its own build: {0}")]
    NoIdentity(String),
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file was written by another build.
    #[error("{path} was written by another build ({found}); this is {ours}: not read")]
    OtherBuild {
        /// The file.
        path: PathBuf,
        /// Its writer's build.
        found: String,
        /// This process's build.
        ours: String,
    },
    /// The file is older than allowed.
    #[error("{path} was written {age_s} s ago, more than the {max_s} s allowed: not read")]
    TooOld {
        /// The file.
        path: PathBuf,
        /// Its age, seconds.
        age_s: u64,
        /// The age allowed, seconds.
        max_s: u64,
    },
    /// The file is not a snapshot file, is cut short, or does not check.
    #[error("{path} is not a valid snapshot file: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why, one line.
        reason: String,
    },
}

/// The build of this process as a snapshot file records it: the crate's
/// version, the file layout, and the running executable's size and
/// modification time, which differ between any two builds. A stored
/// answer is only ever served by the build that rendered it.
///
/// # Errors
/// The executable's metadata cannot be read.
pub(crate) fn build_identity() -> Result<String, SnapshotFileError> {
    let no = |e: std::io::Error| SnapshotFileError::NoIdentity(e.to_string());
    let exe = std::env::current_exe().map_err(no)?;
    let meta = std::fs::metadata(&exe).map_err(no)?;
    let modified = meta
        .modified()
        .map_err(no)?
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(format!(
        "fedns-dnsserver {} format {FORMAT}, executable of {} octets modified at {}.{:09}",
        env!("CARGO_PKG_VERSION"),
        meta.len(),
        modified.as_secs(),
        modified.subsec_nanos()
    ))
}

/// The first frame: each zone's serial state (by apex, as the store keys
/// it) and the snapshot's head.
#[derive(Serialize)]
struct StateOut<'a> {
    zones: Vec<(&'a str, ZoneState)>,
    head: HeadOut<'a>,
}

/// The first frame, read.
#[derive(Deserialize)]
struct StateIn {
    zones: Vec<(String, ZoneState)>,
    head: HeadIn,
}

/// A writer hashing what passes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader hashing what it reads, refusing to read past `left` octets.
struct Checked<R> {
    inner: R,
    hasher: Sha256,
    left: u64,
}

impl<R: Read> Checked<R> {
    /// Reads exactly `buf.len()` octets.
    fn take(&mut self, buf: &mut [u8]) -> Result<(), String> {
        if buf.len() as u64 > self.left {
            return Err("cut short".into());
        }
        self.inner.read_exact(buf).map_err(|e| format!("cut short: {e}"))?;
        self.hasher.update(&*buf);
        self.left -= buf.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// One length-prefixed block into `buf` (its length at most what is
    /// left of the file, so a wrong length cannot make it allocate more).
    fn block(&mut self, buf: &mut Vec<u8>) -> Result<(), String> {
        let len = self.u32()? as usize;
        if len as u64 > self.left {
            return Err(format!("a frame of {len} octets, {} left", self.left));
        }
        buf.clear();
        buf.resize(len, 0);
        self.take(buf)
    }

    /// One frame, decoded.
    fn frame<T: serde::de::DeserializeOwned>(&mut self, buf: &mut Vec<u8>) -> Result<T, String> {
        self.block(buf)?;
        postcard::from_bytes(buf).map_err(|e| format!("a frame does not decode: {e}"))
    }
}

/// Writes one length-prefixed postcard frame.
fn write_frame<W: Write, T: Serialize>(out: &mut W, value: &T) -> std::io::Result<()> {
    let bytes = postcard::to_allocvec(value).map_err(std::io::Error::other)?;
    let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("a frame over 4 GiB"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&bytes)
}

impl ZoneStore {
    /// Writes the served snapshot and each zone's serial state to `path`
    /// (beside it first, then renamed over it; mode 0600), for
    /// [`ZoneStore::restore_snapshot`] after a restart. Takes about as
    /// long as copying the stored answers once (about 1 s for the
    /// 340,000 names of 1,000,000 shards); the store's lock is held only
    /// while the snapshot to write is taken, so publishing goes on.
    ///
    /// # Errors
    /// Nothing published yet; a snapshot never saved (signed zones,
    /// wildcards or zone cuts: [`SnapshotFileError::Unsaveable`]); the
    /// build cannot be identified; the file cannot be written.
    pub fn save_snapshot(&self, path: &Path) -> Result<SavedSnapshot, SnapshotFileError> {
        let (zones, snapshot, updates) = {
            let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (state.zones.clone(), self.current.load_full(), self.updates())
        };
        if updates == 0 || zones.is_empty() {
            return Err(SnapshotFileError::NothingPublished);
        }
        if let Some(why) = snapshot.unsaveable() {
            return Err(SnapshotFileError::Unsaveable(why));
        }
        let identity = build_identity()?;
        let saved_at = SystemTime::now();
        let io = |source| SnapshotFileError::Io {
            path: path.to_owned(),
            source,
        };
        let partial = partial_path(path);
        let written = write_file(&partial, &identity, saved_at, &zones, &snapshot).map_err(|source| {
            let _ = std::fs::remove_file(&partial);
            SnapshotFileError::Io {
                path: partial.clone(),
                source,
            }
        })?;
        std::fs::rename(&partial, path).map_err(io)?;
        Ok(SavedSnapshot {
            octets: written,
            names: snapshot.name_count(),
            zones: snapshot.zones(),
            saved_at,
            updates,
        })
    }

    /// Serves the snapshot saved in `path` by [`ZoneStore::save_snapshot`]
    /// of this same build, with each zone's serial state, when nothing is
    /// published yet and the file is at most `max_age` old. The next
    /// whole publish then keeps it where the content is the same (no new
    /// serial, nothing rendered) and replaces it where not; changed names
    /// need that whole publish first (the tree they are applied to is
    /// built by it).
    ///
    /// # Errors
    /// The store publishes already; the file is missing or unreadable,
    /// of another build, too old, or does not check (cut short, a wrong
    /// checksum, an offset outside its chunk): nothing is served from it.
    pub fn restore_snapshot(&self, path: &Path, max_age: Duration) -> Result<SavedSnapshot, SnapshotFileError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.zones.is_empty() || self.updates() > 0 {
            return Err(SnapshotFileError::AlreadyPublished);
        }
        let io = |source| SnapshotFileError::Io {
            path: path.to_owned(),
            source,
        };
        let invalid = |reason: String| SnapshotFileError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let octets = file.metadata().map_err(io)?.len();
        let body = octets
            .checked_sub(32)
            .ok_or_else(|| invalid("shorter than its checksum".into()))?;
        let mut reader = Checked {
            inner: BufReader::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            left: body,
        };
        let mut magic = [0u8; 8];
        reader.take(&mut magic).map_err(invalid)?;
        if &magic != MAGIC {
            return Err(invalid("not a fedns snapshot file".into()));
        }
        let mut buf = Vec::new();
        reader.block(&mut buf).map_err(invalid)?;
        let found = String::from_utf8_lossy(&buf).into_owned();
        let ours = build_identity()?;
        if found != ours {
            return Err(SnapshotFileError::OtherBuild {
                path: path.to_owned(),
                found,
                ours,
            });
        }
        let saved_ms = reader.u64().map_err(invalid)?;
        let saved_at = UNIX_EPOCH + Duration::from_millis(saved_ms);
        let age = Duration::from_millis(unix_millis().saturating_sub(saved_ms));
        if age > max_age {
            return Err(SnapshotFileError::TooOld {
                path: path.to_owned(),
                age_s: age.as_secs(),
                max_s: max_age.as_secs(),
            });
        }
        let first: StateIn = reader.frame(&mut buf).map_err(invalid)?;
        first.head.check().map_err(invalid)?;
        let mut chunks = Vec::with_capacity(first.head.chunk_count());
        for index in 0..first.head.chunk_count() {
            let chunk: ChunkIn = reader.frame(&mut buf).map_err(invalid)?;
            chunks.push(chunk.into_chunk(index, &first.head).map_err(invalid)?);
        }
        if reader.left != 0 {
            return Err(invalid(format!("{} octets after the last chunk", reader.left)));
        }
        let digest = reader.hasher.finalize();
        let mut trailer = [0u8; 32];
        reader
            .inner
            .read_exact(&mut trailer)
            .map_err(|e| invalid(format!("no checksum: {e}")))?;
        if digest.as_slice() != trailer {
            return Err(invalid("its checksum does not match its content".into()));
        }
        let geo = self.geo.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let snapshot = Snapshot::from_saved(first.head, chunks, geo);
        let zones: BTreeMap<String, ZoneState> = first.zones.into_iter().collect();
        let restored = SavedSnapshot {
            octets,
            names: snapshot.name_count(),
            zones: snapshot.zones(),
            saved_at,
            updates: 0,
        };
        state.zones = zones;
        self.restored.store(true, Ordering::Relaxed);
        self.current.store(Arc::new(snapshot));
        self.updates.fetch_add(1, Ordering::Relaxed);
        Ok(restored)
    }
}

/// Where a file is written before it is renamed to `path`.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    path.with_file_name(name)
}

/// Writes the file (see the module docs) to `path`; returns its size.
fn write_file(
    path: &Path,
    identity: &str,
    saved_at: SystemTime,
    zones: &BTreeMap<String, ZoneState>,
    snapshot: &Snapshot,
) -> std::io::Result<u64> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    let mut out = Hashing {
        inner: BufWriter::with_capacity(1 << 20, file),
        hasher: Sha256::new(),
        written: 0,
    };
    out.write_all(MAGIC)?;
    out.write_all(&u32::try_from(identity.len()).unwrap_or(u32::MAX).to_le_bytes())?;
    out.write_all(identity.as_bytes())?;
    let saved_ms = saved_at
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    out.write_all(&saved_ms.to_le_bytes())?;
    write_frame(
        &mut out,
        &StateOut {
            zones: zones.iter().map(|(apex, zone)| (apex.as_str(), *zone)).collect(),
            head: snapshot.head_out(),
        },
    )?;
    for chunk in snapshot.chunks_out() {
        write_frame(&mut out, &chunk)?;
    }
    let Hashing {
        mut inner,
        hasher,
        written,
    } = out;
    let digest = hasher.finalize();
    inner.write_all(&digest)?;
    inner.flush()?;
    Ok(written + digest.len() as u64)
}
