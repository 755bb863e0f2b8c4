//! An immutable, pre-rendered view of every served zone.
//!
//! All the work of answering happens here, once per published change: for
//! every owner name and every query type that can make a difference, the
//! whole response message is rendered by hickory-proto and stored. The
//! query path ([`crate::query::answer`]) then only hashes the question name, copies
//! the stored bytes and patches the ID, the flags and the question's case.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;

use hashbrown::HashTable;
use hickory_proto::rr::{Name, RecordType};
use rustc_hash::FxBuildHasher;

use super::content::ZoneContent;
use super::dnssec::{Denied, Signer, ZoneKeys};
use super::nsec_chain::{canonical_key, NsecChain, MAX_CANONICAL_KEY};
use super::render::{record_without_owner, render};
use super::resolve::{Override, Resolution};
use super::routing::{nearest_sets, weighted_pick, ClientTable, GeoIpDb, Route, RoutingPolicy};
use super::signing_key::DenialOfExistence;
use super::tree::{RRset, SkippedRecord, Tree, VariantSets};
use super::version::ZoneVersion;

mod saved;
pub(crate) use saved::{ChunkIn, HeadIn, HeadOut};

/// The largest stored response that still fits one message over TCP
/// (65,535 octets, RFC 1035 §4.2.2) with the OPT RR the query path may
/// append: 11 octets plus an ECS option of up to 24 (RFC 7871 §6).
const MAX_STORED_MESSAGE: usize = 65_535 - 11 - 24;

/// [`Span::len`] bit: the stored message ends with its zone's SOA RR, so
/// the query path writes the zone's current serial into it (octets
/// len-20..len-16: SERIAL is followed by REFRESH, RETRY, EXPIRE and
/// MINIMUM, RFC 1035 §3.3.13). Stored answers thus stay valid when only
/// the serial changes.
const SOA_LAST: u32 = 1 << 31;

/// Octets from SERIAL to the end of an SOA RR.
pub(crate) const SERIAL_FROM_END: usize = 20;

/// Names per chunk a full build aims at (see [`Snapshot`]).
const NAMES_PER_CHUNK: usize = 128;
/// At most 2^16 chunks.
const MAX_CHUNK_BITS: u32 = 16;
/// Arena octets an incremental update sets aside per name it renders
/// again, at least (an A answer of 50 addresses is about 900 octets).
const RENDER_ROOM_PER_NAME: usize = 1024;

/// A range of a chunk's arena.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Span {
    start: u32,
    /// Length, with [`SOA_LAST`] set for answers ending with the SOA.
    len: u32,
}

impl Span {
    #[inline]
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + (self.len & !SOA_LAST)) as usize
    }

    #[inline]
    fn soa_last(self) -> bool {
        self.len & SOA_LAST != 0
    }
}

/// Answers stored for one owner name (all bytes live in its chunk's arena).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct NameAnswers {
    /// The lower-cased wire-format owner name.
    key: Span,
    /// Index into [`Snapshot::zones`].
    pub zone: u32,
    /// The answer for every query type not listed in `types`.
    other: Span,
    /// First entry in [`Chunk::type_answers`] and how many.
    types_start: u32,
    types_len: u16,
    /// At or below a zone cut: names below it need a referral rendered at
    /// query time.
    pub below_cut: bool,
    /// Has a `*` child: missing names below it are synthesised at query time.
    pub wildcard_child: bool,
    /// Index into [`Chunk::routes`], or [`NO_ROUTE`]: the answer depends
    /// on the query (a traffic policy).
    route: u32,
    /// First of this name's entries in [`Chunk::variant_answers`], one
    /// per variant of its route.
    variants_start: u32,
    /// In a signed zone: index into [`Chunk::signed_sets`] of the answers
    /// with DNSSEC records (for DO queries), followed by one set per
    /// variant of its route; else [`NO_SIGNED`].
    signed: u32,
}

/// [`NameAnswers::route`] of names without a policy.
const NO_ROUTE: u32 = u32::MAX;

/// [`NameAnswers::signed`] of names without signed answers.
const NO_SIGNED: u32 = u32::MAX;

/// What the query path writes into a stored response after copying it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tail<'a> {
    /// Nothing.
    None,
    /// The response ends with the zone's SOA RR: write this serial
    /// [`SERIAL_FROM_END`] octets before its end.
    Serial(u32),
    /// A signed response whose SOA RRset was left out: append these
    /// octets (SOA RR and its RRSIG, for the current serial) and count
    /// two more RRs in the authority section, or in the answer section
    /// when the authority section is empty (an SOA query).
    SignedSoa(&'a [u8]),
}

/// The stored answers of one variant of a routed name.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct AnswerSet {
    other: Span,
    types_start: u32,
    types_len: u16,
}

/// One rendered message, before it is stored.
#[derive(Debug, PartialEq, Eq)]
struct Rendered {
    bytes: Vec<u8>,
    /// The message ends with the zone's SOA RR (see [`SOA_LAST`]).
    soa_last: bool,
}

/// Per-zone data of the NXDOMAIN fast path and of routed answers.
#[derive(Debug)]
pub(crate) struct ZoneAnswers {
    /// Labels in the apex (without the root).
    pub apex_labels: u8,
    /// The negative SOA RR without its owner (see [`record_without_owner`]).
    pub negative_soa_tail: Box<[u8]>,
    /// Where clients are (`Nearest` names of this zone).
    pub clients: Arc<ClientTable>,
    /// The SOA serial, written into stored answers ending with the SOA.
    pub serial: u32,
    /// The serial shown instead from a moment on: (serial, Unix time in
    /// milliseconds), so replicas switch at the same instant whatever
    /// their publishing is doing then (see `zone::serials`).
    pub pending: Option<(u32, u64)>,
    /// The zone's signing state, if it is signed.
    pub dnssec: Option<Arc<ZoneKeys>>,
    /// Of a signed zone with a `pending` serial: the SOA RR and its RRSIG
    /// for that serial (as [`ZoneKeys::soa_tail`] is for `serial`), signed
    /// when the serial was set, so the query path only picks one.
    pub pending_soa_tail: Option<Box<[u8]>>,
    /// Of a signed zone denying by NSEC chain: the chain, every link
    /// signed (see `zone::nsec_chain`).
    pub nsec_chain: Option<Arc<NsecChain>>,
}

impl ZoneAnswers {
    /// The serial answers show now. Reads the clock only while a switch is
    /// pending.
    #[inline]
    pub(crate) fn serial_now(&self) -> u32 {
        match self.pending {
            Some((serial, from_ms)) if unix_millis() >= from_ms => serial,
            _ => self.serial,
        }
    }

    /// The signed SOA tail of `keys` (this zone's) for the serial
    /// [`ZoneAnswers::serial_now`] shows: the SOA RR and an RRSIG that
    /// validates for it. Reads the clock only while a switch is pending.
    #[inline]
    pub(crate) fn soa_tail_now<'a>(&'a self, keys: &'a ZoneKeys) -> &'a [u8] {
        match (self.pending, &self.pending_soa_tail) {
            (Some((_, from_ms)), Some(tail)) if unix_millis() >= from_ms => tail,
            _ => &keys.soa_tail,
        }
    }

    /// Sets the pending serial, signing its SOA when the zone is signed.
    fn set_pending(&mut self, pending: Option<(u32, u64)>) {
        self.pending_soa_tail = match (pending, &self.dnssec) {
            (Some((serial, _)), Some(keys)) => keys.soa_tail_for(serial),
            _ => None,
        };
        self.pending = pending;
    }
}

/// Unix time in milliseconds.
fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Facts about one served zone, for status reports and metrics.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ZoneSummary {
    /// The apex, e.g. `example.com.`.
    pub apex: String,
    /// The SOA serial served.
    pub serial: u32,
    /// RRsets in the zone, SOA and NS included.
    pub rrset_count: usize,
    /// For a signed zone, the DS record to put in the parent zone
    /// (presentation format, SHA-256 digest, RFC 4509); else empty.
    pub ds_records: Vec<String>,
}

/// One slice of the served names (by hash), immutable once built and
/// shared between snapshots: an update rebuilds only the chunks holding
/// changed names.
///
/// Layout: one byte arena holds every owner key and every stored answer;
/// a hash table of small fixed-size entries points into it. Answers that
/// are byte-identical for one name (e.g. A and ANY at an A-only name) are
/// stored once.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    arena: Vec<u8>,
    table: HashTable<NameAnswers>,
    type_answers: Vec<(u16, Span)>,
    variant_answers: Vec<AnswerSet>,
    /// Signed answer sets (see [`NameAnswers::signed`]).
    signed_sets: Vec<AnswerSet>,
    /// Query-time routes of this chunk's names, and what each answers.
    routes: Vec<Route>,
    reports: Vec<RouteReport>,
    /// Names of this chunk whose answers were reported, and why.
    skipped: Vec<(Box<[u8]>, SkippedRecord)>,
}

/// One name's stored answers and the chunk holding them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found<'a> {
    chunk: &'a Chunk,
    pub entry: &'a NameAnswers,
}

/// Every served zone, immutable once built. Share it as `Arc<Snapshot>`.
///
/// The names are split by hash into 2^n [`Chunk`]s held in `Arc`s (about
/// [`NAMES_PER_CHUNK`] names each after a full build), so an incremental
/// update ([`Snapshot::updated`]) copies and re-renders only the chunks
/// of the names it changes and shares the others with the previous
/// snapshot. Serials live per zone, outside the stored answers.
#[derive(Debug)]
pub struct Snapshot {
    chunks: Vec<Arc<Chunk>>,
    /// log2 of the chunk count.
    chunk_bits: u32,
    pub(crate) zones: Vec<ZoneAnswers>,
    summaries: Vec<ZoneSummary>,
    /// Kept only when some answer must be rendered at query time
    /// (wildcards, zone cuts).
    tree: Option<Tree>,
    /// Problems of whole zones (given twice, client tables).
    zone_skipped: Vec<SkippedRecord>,
    /// Everything skipped: zones, records, answers.
    skipped: Vec<SkippedRecord>,
    /// The GeoIP database `Nearest` names fall back to.
    geo: Option<Arc<GeoIpDb>>,
    /// Keys of every zone's pending names ([`ZoneContent::pending`]),
    /// sorted: answered SERVFAIL. Empty in the common case, where the
    /// query path's check is one length test.
    pending: Box<[Box<[u8]>]>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            chunks: vec![Arc::new(Chunk::default())],
            chunk_bits: 0,
            zones: Vec::new(),
            summaries: Vec::new(),
            tree: None,
            zone_skipped: Vec::new(),
            skipped: Vec::new(),
            geo: None,
            pending: Box::default(),
        }
    }
}

/// What a routed name answers, for `explain` and tests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RouteReport {
    /// The routed owner name.
    pub name: String,
    /// `Weighted` or `Nearest`.
    pub policy: String,
    /// Per rendered variant: the set identifiers (clusters) whose records
    /// it holds.
    pub variants: Vec<Vec<String>>,
    /// At most this many addresses per family in one answer.
    pub max_answers: Option<u16>,
}

/// Which variant of a routed name one client gets, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientChoice {
    /// The client's region, if placed.
    pub region: Option<String>,
    /// RFC 7871 SCOPE PREFIX-LENGTH the answer carries.
    pub scope: u8,
    /// The clusters answered (when the answer is drawn per query: every
    /// candidate, e.g. for `Weighted` one per answer).
    pub variants: Vec<String>,
    /// The policy.
    pub policy: String,
    /// At most this many addresses per family in one answer.
    pub max_answers: Option<u16>,
}

/// A query type unused by any RRset: its answer stands for all absent types.
/// Every stored answer carries it in its question, which the query path
/// overwrites with the type asked, so answers differing only in the asked
/// type are stored once.
const ABSENT_TYPE: RecordType = RecordType::Unknown(65_280);

#[inline]
fn hash_key(key: &[u8]) -> u64 {
    FxBuildHasher.hash_one(key)
}

/// The chunk of a name's hash: bits 32.. (the chunk's own table uses the
/// low bits and the top 7).
#[inline]
fn chunk_index(hash: u64, bits: u32) -> usize {
    ((hash >> 32) as usize) & ((1usize << bits) - 1)
}

fn chunk_bits(names: usize) -> u32 {
    let chunks = (names / NAMES_PER_CHUNK).max(1);
    (usize::BITS - 1 - chunks.leading_zeros()).min(MAX_CHUNK_BITS)
}

impl Snapshot {
    /// An empty snapshot: every query is REFUSED.
    pub fn empty() -> Self {
        Snapshot::default()
    }

    /// Builds a snapshot from zones and their SOA serials. Records that
    /// cannot be served are left out and listed in [`Snapshot::skipped`].
    pub fn build(contents: &[(ZoneContent, u32)]) -> Snapshot {
        Snapshot::build_keeping(contents, &|_| false, None).0
    }

    /// [`Snapshot::build`] with a GeoIP database for `Nearest` names.
    pub fn build_with_geoip(contents: &[(ZoneContent, u32)], geo: Option<Arc<GeoIpDb>>) -> Snapshot {
        Snapshot::build_keeping(contents, &|_| false, geo).0
    }

    /// [`Snapshot::build`], also returning the records of every zone whose
    /// apex (lower case, fully qualified) `keep` selects, as served, and
    /// the build-time tree for later [`Snapshot::updated`] calls (`None`
    /// when the snapshot keeps it for query-time answers: wildcards or
    /// zone cuts, which incremental updates do not handle).
    pub(crate) fn build_keeping(
        contents: &[(ZoneContent, u32)],
        keep: &dyn Fn(&Name) -> bool,
        geo: Option<Arc<GeoIpDb>>,
    ) -> (Snapshot, Vec<ZoneVersion>, Option<Tree>) {
        let (tree, zone_skipped) = Tree::build(contents);
        Snapshot::from_tree(tree, zone_skipped, contents, keep, geo)
    }

    /// The snapshot serving `tree` (built by [`Tree::build`] from
    /// `contents`, which give the zones' client tables, perhaps with its
    /// records applied afterwards by [`Tree::apply`]); `zone_skipped`: what
    /// [`Tree::build`] reported of whole zones. Returns it with the zones'
    /// transfer versions and the tree, as [`Snapshot::build_keeping`].
    pub(crate) fn from_tree(
        tree: Tree,
        zone_skipped: Vec<SkippedRecord>,
        contents: &[(ZoneContent, u32)],
        keep: &dyn Fn(&Name) -> bool,
        geo: Option<Arc<GeoIpDb>>,
    ) -> (Snapshot, Vec<ZoneVersion>, Option<Tree>) {
        Snapshot::from_tree_on(tree, zone_skipped, contents, keep, geo, None)
    }

    /// [`Snapshot::from_tree`] rendering on `threads` threads (`None`:
    /// as [`render_threads`] decides; signed zones always render on one).
    pub(crate) fn from_tree_on(
        tree: Tree,
        mut zone_skipped: Vec<SkippedRecord>,
        contents: &[(ZoneContent, u32)],
        keep: &dyn Fn(&Name) -> bool,
        geo: Option<Arc<GeoIpDb>>,
        threads: Option<usize>,
    ) -> (Snapshot, Vec<ZoneVersion>, Option<Tree>) {
        let tables = client_tables(&tree, contents, &mut zone_skipped);
        let versions = tree.versions(keep);
        let now = unix_now();
        let zones: Vec<ZoneAnswers> = tree
            .zones
            .iter()
            .zip(tables)
            .map(|(zone, clients)| zone_answers(zone, Arc::new(clients), now, None))
            .collect();
        let bits = chunk_bits(tree.nodes.len());
        let mut chunks: Vec<Chunk> = (0..1usize << bits).map(|_| Chunk::default()).collect();
        let needs_tree = tree
            .nodes
            .values()
            .any(|node| node.cut.is_some() || node.wildcard_child);
        // The chains first: negative answers of chain-signed zones carry links.
        let mut signer = Signer::new();
        let chains: Vec<Option<Arc<NsecChain>>> = (0..zones.len())
            .map(|i| nsec_chain(&tree, i, &zones[i], &mut signer, None))
            .collect();
        let mut zones = zones;
        attach_chains(&mut zones, chains);
        let threads = match threads {
            Some(threads) if zones.iter().all(|zone| zone.dnssec.is_none()) => threads,
            _ => render_threads(tree.nodes.len(), &zones),
        };
        let versions = if threads > 1 {
            render_in_parallel(&tree, &zones, &mut chunks, bits, threads);
            // No zone is signed: transfers carry no signatures to share.
            sign_versions(&zones, &tree, versions, &mut signer)
        } else {
            let mut renderer = Renderer::new(&tree, &zones, signer);
            for (key, node) in &tree.nodes {
                let hash = hash_key(key);
                renderer.render_into(&mut chunks[chunk_index(hash, bits)], key, node, hash);
            }
            let mut signer = renderer.signer.borrow_mut();
            // Transfers carry the signatures the answers carry.
            sign_versions(&zones, &tree, versions, &mut signer)
        };
        let mut snapshot = Snapshot {
            chunks: chunks
                .into_iter()
                .map(|mut chunk| {
                    chunk.shrink();
                    Arc::new(chunk)
                })
                .collect(),
            chunk_bits: bits,
            zones,
            summaries: summaries(&tree),
            tree: None,
            zone_skipped,
            skipped: Vec::new(),
            geo,
            pending: pending_of(&tree),
        };
        snapshot.skipped = snapshot.collect_skipped(&tree);
        if needs_tree {
            snapshot.tree = Some(tree);
            (snapshot, versions, None)
        } else {
            (snapshot, versions, Some(tree))
        }
    }

    /// The snapshot after `tree` (this snapshot's tree, changed by
    /// [`Tree::apply`]) changed the names `dirty`: chunks without a dirty
    /// name are shared, the others copied with the dirty names re-rendered
    /// (or left out when gone). Serials, negative SOAs and summaries come
    /// from `tree`; client tables and the GeoIP database stay.
    pub(crate) fn updated(&self, tree: &Tree, dirty: &rustc_hash::FxHashSet<Box<[u8]>>) -> Snapshot {
        // The chunk count follows the names: a zone that started empty
        // (every first start) had one chunk, and every update then copied a
        // chunk holding every name (40 ms a change at 170,000 names). Once
        // the names outgrow the chunks, every chunk is split as it is
        // copied: a chunk's index is the low bits of its names' hash, so
        // new chunk `i` takes its names from old chunk `i & old_mask` only,
        // and no third copy of the answers is held while splitting.
        let bits = chunk_bits(tree.nodes.len()).max(self.chunk_bits);
        let old_mask = (1usize << self.chunk_bits) - 1;
        let zones: Vec<ZoneAnswers> = tree
            .zones
            .iter()
            .enumerate()
            .map(|(i, zone)| {
                let old = self.zones.get(i);
                let clients = old.map(|z| z.clients.clone()).unwrap_or_default();
                let oldest = old.and_then(|z| z.dnssec.as_ref()).map(|k| k.oldest_expiration);
                zone_answers(zone, clients, unix_now(), oldest)
            })
            .collect();
        // The chains first: negative answers of chain-signed zones carry
        // links, so the names whose links changed are dirty too.
        let mut signer = Signer::new();
        let chains: Vec<Option<Arc<NsecChain>>> = (0..zones.len())
            .map(|i| {
                let old = self.zones.get(i).filter(|old| {
                    let same_keys = match (&old.dnssec, &zones[i].dnssec) {
                        (Some(a), Some(b)) => a.config == b.config,
                        _ => false,
                    };
                    same_keys && old.nsec_chain.is_some()
                });
                let old_chain = old.and_then(|o| o.nsec_chain.as_deref());
                let apex = &tree.zones[i].apex_key;
                let touched = dirty.iter().any(|key| key.ends_with(apex));
                match (old.and_then(|o| o.nsec_chain.clone()), touched) {
                    (Some(chain), false) => Some(chain),
                    _ => nsec_chain(tree, i, &zones[i], &mut signer, old_chain),
                }
            })
            .collect();
        let mut zones = zones;
        attach_chains(&mut zones, chains);
        let mut dirty = dirty.clone();
        for (i, zone) in zones.iter().enumerate() {
            let old = self.zones.get(i).and_then(|z| z.nsec_chain.as_deref());
            chain_dependents(tree, i, old, zone.nsec_chain.as_deref(), &mut dirty);
        }
        let dirty = &dirty;
        let mut by_chunk: rustc_hash::FxHashMap<usize, Vec<(&[u8], u64)>> = rustc_hash::FxHashMap::default();
        for key in dirty {
            let hash = hash_key(key);
            by_chunk
                .entry(chunk_index(hash, bits))
                .or_default()
                .push((key.as_ref(), hash));
        }
        let split = bits != self.chunk_bits;
        // Unsplit, the chunks without a dirty name are shared as they are.
        let mut chunks: Vec<Arc<Chunk>> = if split {
            Vec::with_capacity(1 << bits)
        } else {
            self.chunks.clone()
        };
        {
            let mut renderer = Renderer::new(tree, &zones, signer);
            let rebuilt: Vec<usize> = if split {
                (0..1usize << bits).collect()
            } else {
                by_chunk.keys().copied().collect()
            };
            for index in rebuilt {
                let old = &self.chunks[index & old_mask];
                let keys = by_chunk.remove(&index).unwrap_or_default();
                let share = if split {
                    (old.table.len() >> (bits - self.chunk_bits)) + 1
                } else {
                    old.table.len()
                };
                // Room for the names kept and for those rendered again, so
                // the arena is not moved as it grows: at 1,000,000 shards
                // growing it was a third of a cold start's rendering (the
                // rendered names are the chunk's new ones, whose answers
                // are as large as its largest). `shrink` returns the rest.
                let per_name = old.arena.len() / old.table.len().max(1);
                let room = keys.len() * (2 * per_name).max(RENDER_ROOM_PER_NAME);
                let mut chunk = Chunk {
                    arena: Vec::with_capacity(old.arena.len() * share / old.table.len().max(1) + room),
                    table: HashTable::with_capacity(share + keys.len()),
                    type_answers: Vec::with_capacity(
                        old.type_answers.len() * share / old.table.len().max(1) + 2 * keys.len(),
                    ),
                    ..Chunk::default()
                };
                // A name of the old chunk is copied when it belongs in this
                // one and is not rendered again.
                let kept = |key: &[u8], hash: u64| (!split || chunk_index(hash, bits) == index) && !dirty.contains(key);
                for entry in old.table.iter() {
                    let key = old.slice(entry.key);
                    let hash = hash_key(key);
                    if !kept(key, hash) {
                        continue;
                    }
                    let copied = chunk.copy_entry(old, entry);
                    chunk.insert(hash, copied);
                }
                chunk
                    .skipped
                    .extend(old.skipped.iter().filter(|(key, _)| kept(key, hash_key(key))).cloned());
                for (key, hash) in keys {
                    if let Some(node) = tree.nodes.get(key) {
                        renderer.render_into(&mut chunk, key, node, hash);
                    }
                }
                chunk.shrink();
                let chunk = Arc::new(chunk);
                if split {
                    chunks.push(chunk);
                } else {
                    chunks[index] = chunk;
                }
            }
        }
        let mut snapshot = Snapshot {
            chunks,
            chunk_bits: bits,
            zones,
            summaries: summaries(tree),
            tree: None,
            zone_skipped: self.zone_skipped.clone(),
            skipped: Vec::new(),
            geo: self.geo.clone(),
            pending: pending_of(tree),
        };
        snapshot.skipped = snapshot.collect_skipped(tree);
        snapshot
    }

    /// How many chunks the names are split into.
    #[cfg(test)]
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Zone problems, then per-owner skipped records (by zone and owner),
    /// then answers that could not be stored (by name).
    fn collect_skipped(&self, tree: &Tree) -> Vec<SkippedRecord> {
        let mut answers: Vec<&SkippedRecord> = self
            .chunks
            .iter()
            .flat_map(|c| c.skipped.iter().map(|(_, s)| s))
            .collect();
        answers.sort_by(|a, b| (&a.name, &a.reason).cmp(&(&b.name, &b.reason)));
        self.zone_skipped
            .iter()
            .chain(tree.owner_skips())
            .chain(answers)
            .cloned()
            .collect()
    }

    /// Whether zone `zone`'s client table knows every region of `regions`
    /// (a routed name with a new region needs a new table: full build).
    pub(crate) fn knows_regions<'a>(&self, zone: usize, mut regions: impl Iterator<Item = &'a str>) -> bool {
        let Some(zone) = self.zones.get(zone) else {
            return false;
        };
        regions.all(|region| zone.clients.regions.iter().any(|r| r == region))
    }

    /// Whether `key` (lower-cased wire format) is a pending name
    /// ([`ZoneContent::pending`]), answered SERVFAIL.
    #[inline]
    pub(crate) fn is_pending(&self, key: &[u8]) -> bool {
        !self.pending.is_empty() && self.pending.binary_search_by(|k| (**k).cmp(key)).is_ok()
    }

    /// The stored answers of the owner name `key` (lower-cased wire format).
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Found<'_>> {
        let hash = hash_key(key);
        let chunk = self.chunks.get(chunk_index(hash, self.chunk_bits))?;
        chunk
            .table
            .find(hash, |entry| chunk.slice(entry.key) == key)
            .map(|entry| Found { chunk, entry })
    }

    /// The stored response of `found` for `qtype` for a client at
    /// `client` (None: unknown, e.g. an ECS option with SOURCE
    /// PREFIX-LENGTH 0), the SCOPE PREFIX-LENGTH (RFC 7871 §7.2.1) it
    /// holds for (0 unless the answer depends on the client's address),
    /// and what to write into it after copying ([`Tail`]). With
    /// `dnssec_ok` (the DO bit, RFC 3225) a signed zone's answers carry
    /// their RRSIGs and denial NSECs (RFC 4035 §3.1).
    #[inline]
    pub(crate) fn response<'a>(
        &'a self,
        found: &Found<'a>,
        qtype: u16,
        client: Option<IpAddr>,
        dnssec_ok: bool,
    ) -> (&'a [u8], u8, Tail<'a>) {
        let (chunk, entry) = (found.chunk, found.entry);
        let signed = dnssec_ok && entry.signed != NO_SIGNED;
        let (span, scope) = if entry.route == NO_ROUTE {
            let set = if signed {
                chunk.signed_sets[entry.signed as usize]
            } else {
                AnswerSet {
                    other: entry.other,
                    types_start: entry.types_start,
                    types_len: entry.types_len,
                }
            };
            (chunk.answer_of(set.other, set.types_start, set.types_len, qtype), 0)
        } else {
            let (variant, scope) = self.pick(&chunk.routes[entry.route as usize], client);
            let set = if signed {
                chunk.signed_sets[entry.signed as usize + 1 + variant]
            } else {
                chunk.variant_answers[entry.variants_start as usize + variant]
            };
            (chunk.answer_of(set.other, set.types_start, set.types_len, qtype), scope)
        };
        let tail = match self.zones.get(entry.zone as usize) {
            Some(zone) if span.soa_last() => match (&zone.dnssec, signed) {
                (Some(keys), true) => Tail::SignedSoa(zone.soa_tail_now(keys)),
                _ => Tail::Serial(zone.serial_now()),
            },
            _ => Tail::None,
        };
        (chunk.slice(span), scope, tail)
    }

    /// The rendered variant of `route` a client gets, and the scope.
    #[inline]
    fn pick(&self, route: &Route, client: Option<IpAddr>) -> (usize, u8) {
        match route {
            Route::Split(split) => {
                let (group, scope) = self.pick_base(&split.base, client);
                let (variant, sticky_scope) = split.pick_in(group, client);
                (variant, scope.max(sticky_scope))
            }
            base => self.pick_base(base, client),
        }
    }

    /// The variant of a one-stage `route` (anything but `Split`).
    #[inline]
    fn pick_base(&self, route: &Route, client: Option<IpAddr>) -> (usize, u8) {
        match route {
            Route::Weighted { cumulative } => (weighted_pick(cumulative), 0),
            Route::Sticky {
                cumulative,
                seeds,
                weights,
                v4_prefix,
                v6_prefix,
            } => match client {
                None => (weighted_pick(cumulative), 0),
                Some(addr) => {
                    let (key, scope) = super::routing::subnet_key(addr, *v4_prefix, *v6_prefix);
                    (super::routing::rendezvous_pick(key, seeds, weights), scope)
                }
            },
            Route::Nearest {
                zone,
                by_region,
                unknown,
            } => match client {
                None => (*unknown as usize, 0),
                Some(addr) => {
                    let placed = self.zones[*zone as usize].clients.place(addr, self.geo.as_deref());
                    let variant = by_region.get(placed.region as usize).unwrap_or(unknown);
                    (*variant as usize, placed.scope)
                }
            },
            // Never a base; answered as its first group's first variant.
            Route::Split(_) => (0, 0),
        }
    }

    /// Every routed name, with its policy and variants, by name.
    pub fn routes(&self) -> Vec<RouteReport> {
        let mut reports: Vec<RouteReport> = self.chunks.iter().flat_map(|c| c.reports.iter().cloned()).collect();
        reports.sort_by(|a, b| a.name.cmp(&b.name));
        reports.dedup_by(|a, b| a.name == b.name);
        reports
    }

    /// Which variant of the routed name `name` (lower case, fully
    /// qualified, e.g. `www.example.com.`) a client at `client` gets;
    /// `None` when the name has no policy.
    pub fn choice_for(&self, name: &str, client: Option<IpAddr>) -> Option<ClientChoice> {
        let owner = Name::from_ascii(name).ok()?;
        let found = self.lookup(&super::tree::wire_key(&owner))?;
        let (chunk, entry) = (found.chunk, found.entry);
        let route = chunk.routes.get(entry.route as usize)?;
        let report = &chunk.reports[entry.route as usize];
        if report.name != name {
            return None; // a CNAME to a routed name, not the name itself
        }
        let (base, split) = match route {
            Route::Split(split) => (&split.base, Some(&**split)),
            other => (other, None),
        };
        let (region, scope) = match (base, client) {
            (Route::Nearest { zone, .. }, Some(addr)) => {
                let table = &self.zones[*zone as usize].clients;
                let placed = table.place(addr, self.geo.as_deref());
                (table.regions.get(placed.region as usize).cloned(), placed.scope)
            }
            _ => (None, 0),
        };
        // The base variants this client can get: one when the base is
        // decided by the client (Nearest; Sticky with a known client).
        let base_count = split.map_or(report.variants.len(), |s| s.groups.len());
        let (groups, mut scope): (Vec<usize>, u8) = match (base, client) {
            (Route::Nearest { .. }, _) | (Route::Sticky { .. }, Some(_)) => {
                let (group, base_scope) = self.pick_base(base, client);
                (vec![group], base_scope.max(scope))
            }
            _ => ((0..base_count).collect(), scope),
        };
        let mut rendered: Vec<usize> = Vec::new();
        for group in groups {
            match split {
                None => rendered.push(group),
                Some(split) => match (split.prefixes, client) {
                    (Some(_), Some(_)) => {
                        let (variant, sticky_scope) = split.pick_in(group, client);
                        scope = scope.max(sticky_scope);
                        rendered.push(variant);
                    }
                    _ => {
                        let (start, count) = split.groups.get(group).copied().unwrap_or((group as u32, 1));
                        rendered.extend(start as usize..(start + count) as usize);
                    }
                },
            }
        }
        let mut variants: Vec<String> = Vec::new();
        for id in rendered.iter().filter_map(|&i| report.variants.get(i)).flatten() {
            if !variants.contains(id) {
                variants.push(id.clone());
            }
        }
        Some(ClientChoice {
            region,
            scope,
            variants,
            policy: report.policy.clone(),
            max_answers: report.max_answers,
        })
    }

    /// `versions` (of zones of `tree`, this snapshot's) with the DNSSEC
    /// records of signed zones added (see [`sign_versions`]); an RRset
    /// also in one of the `previous` versions (same apex) keeps the
    /// signature it has there, so an incremental publish signs only what
    /// changed.
    pub(crate) fn sign_versions(
        &self,
        tree: &Tree,
        versions: Vec<ZoneVersion>,
        previous: &[Arc<ZoneVersion>],
    ) -> Vec<ZoneVersion> {
        let mut signer = Signer::new();
        for old in previous {
            signer.remember(old.records.iter().map(|(_, r)| r).chain(std::iter::once(&old.soa)));
        }
        sign_versions(&self.zones, tree, versions, &mut signer)
    }

    /// `version` under SOA serial `serial` (see [`ZoneVersion::with_serial`]);
    /// a signed version (one holding an RRSIG of its SOA) gets its SOA
    /// signed again for that serial with this snapshot's keys of the
    /// zone, so transfers announce a serial their signature validates.
    pub(crate) fn version_at(&self, version: ZoneVersion, serial: u32) -> ZoneVersion {
        if version.serial == serial {
            return version;
        }
        let version = version.with_serial(serial);
        if !version.records.iter().any(|(_, r)| covers_soa(r)) {
            return version;
        }
        let keys = self
            .zones
            .iter()
            .filter_map(|z| z.dnssec.as_deref())
            .find(|k| k.apex == version.apex);
        let Some(rrsig) = keys.and_then(|keys| Signer::new().rrsig(keys, std::slice::from_ref(&version.soa))) else {
            tracing::warn!(apex = %version.apex, serial, "cannot sign the SOA of a transfer version again");
            return version;
        };
        let records: Vec<hickory_proto::rr::Record> = version
            .records
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| !covers_soa(r))
            .chain(std::iter::once(rrsig))
            .collect();
        ZoneVersion::new(version.apex, version.soa, records)
    }

    /// Some signed zone serves a signature with fewer than its
    /// `signature_refresh` seconds left at `now` (seconds since the
    /// epoch): the next [`crate::ZoneStore::publish`] re-signs everything.
    pub fn resign_due(&self, now: u32) -> bool {
        self.zones.iter().any(|z| {
            let Some(keys) = z.dnssec.as_ref() else {
                return false;
            };
            // Links kept from earlier snapshots carry older signatures.
            let chain_due = z
                .nsec_chain
                .as_ref()
                .and_then(|c| c.oldest_expiration())
                .is_some_and(|oldest| now.saturating_add(keys.config.signature_refresh) >= oldest);
            keys.resign_due(now) || chain_due
        })
    }

    /// Records left out while building, with reasons.
    pub fn skipped(&self) -> &[SkippedRecord] {
        &self.skipped
    }

    /// One summary per served zone.
    pub fn zones(&self) -> Vec<ZoneSummary> {
        self.summaries.clone()
    }

    /// Total RRsets served.
    pub fn rrset_count(&self) -> usize {
        self.summaries.iter().map(|z| z.rrset_count).sum()
    }

    /// Owner names served (empty non-terminals included).
    pub fn name_count(&self) -> usize {
        self.chunks.iter().map(|c| c.table.len()).sum()
    }

    /// Octets of stored keys and answers.
    pub fn arena_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.arena.len()).sum()
    }

    /// The GeoIP database in use, if any.
    pub fn geoip(&self) -> Option<&GeoIpDb> {
        self.geo.as_deref()
    }

    /// Sets the serial zone `zone` (as in [`Snapshot::zones`]) shows from
    /// a moment on, before the snapshot is served (a signed zone's SOA is
    /// signed for it now).
    pub(crate) fn set_pending_serial(&mut self, zone: usize, pending: Option<(u32, u64)>) {
        if let Some(answers) = self.zones.get_mut(zone) {
            answers.set_pending(pending);
        }
    }

    /// The slow path: resolve and render at query time. With
    /// `dnssec_ok` in a signed zone the answer is signed now, as if the
    /// name asked existed (a wildcard's answer is signed at the query
    /// name, so it needs no proof that no closer name exists; RFC 9824
    /// servers do the same).
    pub(crate) fn render_now(&self, qname: &Name, qtype: RecordType, dnssec_ok: bool) -> Option<Vec<u8>> {
        let tree = self.tree.as_ref()?;
        let lower = qname.to_lowercase();
        let mut resolution = tree.resolve(&lower, qtype)?;
        let index = tree.zone_for(&super::tree::fqdn(lower.clone()));
        let zone = index.and_then(|zone| self.zones.get(zone));
        // A pending serial come due shows here too (signed below, now).
        if let (Some(answers), Some(info)) = (zone, index.and_then(|i| tree.zones.get(i))) {
            let serial = answers.serial_now();
            if serial != answers.serial {
                for record in resolution.answers.iter_mut().chain(resolution.authorities.iter_mut()) {
                    match &mut record.data {
                        hickory_proto::rr::RData::SOA(soa) if record.name == info.apex => soa.serial = serial,
                        _ => {}
                    }
                }
            }
        }
        let keys = zone.filter(|_| dnssec_ok).and_then(|zone| zone.dnssec.as_ref());
        let Some(keys) = keys else {
            return render(qname, qtype, &resolution);
        };
        let denied = |name: &Name| denial(tree, &self.zones, name, None);
        let (signed, _) = Signer::new().sign_resolution(keys, &lower, &resolution, &denied, true)?;
        render(qname, qtype, &signed)
    }

    /// Every stored response of the owner `key` for `qtype`, one per
    /// variant (one for names without a policy), with the serial written
    /// in: what a client can get. For tests comparing snapshots.
    #[cfg(test)]
    pub(crate) fn stored_responses(&self, key: &[u8], qtype: u16) -> Option<Vec<Vec<u8>>> {
        let found = self.lookup(key)?;
        let (chunk, entry) = (found.chunk, found.entry);
        let serial = self.zones[entry.zone as usize].serial;
        let finish = |span: Span| {
            let mut bytes = chunk.slice(span).to_vec();
            if span.soa_last() {
                let at = bytes.len() - SERIAL_FROM_END;
                bytes[at..at + 4].copy_from_slice(&serial.to_be_bytes());
            }
            bytes
        };
        if entry.route == NO_ROUTE {
            return Some(vec![finish(chunk.answer_of(
                entry.other,
                entry.types_start,
                entry.types_len,
                qtype,
            ))]);
        }
        let count = chunk.reports[entry.route as usize].variants.len();
        let mut out: Vec<Vec<u8>> = (0..count)
            .map(|i| {
                let set = chunk.variant_answers[entry.variants_start as usize + i];
                finish(chunk.answer_of(set.other, set.types_start, set.types_len, qtype))
            })
            .collect();
        out.sort();
        Some(out)
    }

    /// Every served owner key, for tests.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = self
            .chunks
            .iter()
            .flat_map(|c| c.table.iter().map(|e| c.slice(e.key).to_vec()))
            .collect();
        keys.sort();
        keys
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
}

/// The pending names of every zone of `tree`, sorted.
fn pending_of(tree: &Tree) -> Box<[Box<[u8]>]> {
    let mut keys: Vec<Box<[u8]>> = tree.zones.iter().flat_map(|z| z.pending.iter().cloned()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_boxed_slice()
}

/// The per-zone answer data of `zone`; for a signed zone, signatures made
/// `now`, the oldest still served expiring at `oldest` (incremental
/// updates keep older chunks' signatures).
fn zone_answers(zone: &super::tree::ZoneInfo, clients: Arc<ClientTable>, now: u32, oldest: Option<u32>) -> ZoneAnswers {
    let dnssec = zone.dnssec.as_ref().and_then(|config| {
        let soa = super::tree::apex_soa(zone)?;
        let mut keys = ZoneKeys::new(config, &zone.apex, &soa, zone.negative_soa.ttl, now)?;
        if let Some(oldest) = oldest {
            keys.oldest_expiration = keys.oldest_expiration.min(oldest);
        }
        Some(Arc::new(keys))
    });
    let mut answers = ZoneAnswers {
        apex_labels: zone.apex.num_labels(),
        negative_soa_tail: record_without_owner(&zone.negative_soa)
            .unwrap_or_default()
            .into_boxed_slice(),
        clients,
        serial: zone.serial,
        pending: None,
        dnssec,
        pending_soa_tail: None,
        nsec_chain: None,
    };
    answers.set_pending(zone.pending_serial);
    answers
}

/// The NSEC chain of zone `index` of `tree` when it is signed and denies
/// by NSEC chain (`None` otherwise, and when the chain cannot be signed:
/// the zone then answers with compact denial, which is valid too).
/// Links of `previous` (the same zone's chain, same keys) are kept where
/// unchanged.
fn nsec_chain(
    tree: &Tree,
    index: usize,
    zone: &ZoneAnswers,
    signer: &mut Signer,
    previous: Option<&NsecChain>,
) -> Option<Arc<NsecChain>> {
    let keys = zone.dnssec.as_ref()?;
    if keys.config.denial != DenialOfExistence::Nsec {
        return None;
    }
    let chain = NsecChain::build(tree, index, keys, signer, previous, unix_now());
    if chain.is_none() {
        tracing::warn!(zone = %keys.apex, "cannot sign the NSEC chain; denying with compact denial");
    }
    chain.map(Arc::new)
}

/// Adds to `dirty` the names of zone `zone` of `tree` whose stored
/// answers carry a link of the zone's NSEC chain that differs between the
/// `old` and `new` chains, and (transitively) the names whose answers go
/// through them: an owner's or empty non-terminal's NODATA carries the
/// link covering it; a CNAME, NS, MX or SRV target that does not exist is
/// denied by the links covering it and its closest encloser's wildcard.
/// Every name of the zone when only one of the chains exists.
fn chain_dependents(
    tree: &Tree,
    zone: usize,
    old: Option<&NsecChain>,
    new: Option<&NsecChain>,
    dirty: &mut rustc_hash::FxHashSet<Box<[u8]>>,
) {
    let (old, new) = match (old, new) {
        (None, None) => return,
        (Some(old), Some(new)) if std::ptr::eq(old, new) => return,
        (Some(old), Some(new)) => (old, new),
        _ => {
            dirty.extend(
                tree.nodes
                    .iter()
                    .filter(|(_, n)| n.zone == zone)
                    .map(|(k, _)| k.clone()),
            );
            return;
        }
    };
    let mut scratch = [0u8; MAX_CANONICAL_KEY];
    let mut changed =
        |wire: &[u8]| canonical_key(wire, &mut scratch).is_some_and(|len| !new.same_cover(old, &scratch[..len]));
    let mut found: Vec<Box<[u8]>> = Vec::new();
    for (key, node) in &tree.nodes {
        if node.zone == zone && !dirty.contains(key) && changed(key) {
            found.push(key.clone());
        }
    }
    for (target, owners) in tree.missing_targets(zone) {
        let wildcard = tree.wildcard_of_encloser(target, zone);
        if changed(target) || wildcard.as_deref().is_some_and(&mut changed) {
            found.extend(owners.iter().cloned());
        }
    }
    tree.with_referrers(found, dirty);
}

/// Gives each zone its chain ([`Snapshot::resign_due`] counts the links'
/// signatures).
fn attach_chains(zones: &mut [ZoneAnswers], chains: Vec<Option<Arc<NsecChain>>>) {
    for (zone, chain) in zones.iter_mut().zip(chains) {
        zone.nsec_chain = chain;
    }
}

fn summaries(tree: &Tree) -> Vec<ZoneSummary> {
    tree.zones
        .iter()
        .map(|z| ZoneSummary {
            apex: z.apex.to_ascii(),
            serial: z.serial,
            rrset_count: z.rrset_count,
            ds_records: z
                .dnssec
                .as_ref()
                .and_then(|d| d.key.ds_record(&z.apex, z.soa_ttl).ok())
                .into_iter()
                .collect(),
        })
        .collect()
}

impl Chunk {
    fn shrink(&mut self) {
        self.arena.shrink_to_fit();
        self.type_answers.shrink_to_fit();
        self.variant_answers.shrink_to_fit();
        self.signed_sets.shrink_to_fit();
    }

    fn insert(&mut self, hash: u64, entry: NameAnswers) {
        let arena = &self.arena;
        self.table
            .insert_unique(hash, entry, |e| hash_key(&arena[e.key.range()]));
    }

    /// Appends one name's key and answers to the arena. `None` when the
    /// arena would pass 2 GiB (offsets are 31-bit).
    fn store_name(
        &mut self,
        key: &[u8],
        zone: u32,
        other: &Rendered,
        answers: &[(u16, Rendered)],
        below_cut: bool,
        wildcard_child: bool,
    ) -> Option<NameAnswers> {
        let total = key.len() + other.bytes.len() + answers.iter().map(|(_, a)| a.bytes.len()).sum::<usize>();
        if self.arena.len() + total > (SOA_LAST - 1) as usize {
            return None;
        }
        let key = self.push(key, false);
        let set = self.store_set(other, answers)?;
        Some(NameAnswers {
            key,
            zone,
            other: set.other,
            types_start: set.types_start,
            types_len: set.types_len,
            below_cut,
            wildcard_child,
            route: NO_ROUTE,
            variants_start: 0,
            signed: NO_SIGNED,
        })
    }

    /// Appends one answer set (the answer for absent types and the
    /// answers of other types) to the arena.
    fn store_set(&mut self, other: &Rendered, answers: &[(u16, Rendered)]) -> Option<AnswerSet> {
        let total = other.bytes.len() + answers.iter().map(|(_, a)| a.bytes.len()).sum::<usize>();
        if self.arena.len() + total > (SOA_LAST - 1) as usize {
            return None;
        }
        let other = self.push(&other.bytes, other.soa_last);
        let types_start = self.type_answers.len() as u32;
        let mut stored: Vec<(Span, &[u8])> = Vec::new();
        for (qtype, rendered) in answers {
            // Identical bytes for another type of this name: share them.
            let span = match stored.iter().find(|(_, b)| *b == rendered.bytes.as_slice()) {
                Some((span, _)) => *span,
                None => {
                    let span = self.push(&rendered.bytes, rendered.soa_last);
                    stored.push((span, &rendered.bytes));
                    span
                }
            };
            self.type_answers.push((*qtype, span));
        }
        Some(AnswerSet {
            other,
            types_start,
            types_len: answers.len() as u16,
        })
    }

    /// Copies one answer set of `old` into this chunk, sharing what the
    /// original shared.
    fn copy_set(&mut self, old: &Chunk, set: AnswerSet) -> AnswerSet {
        let other = self.push(old.slice(set.other), set.other.soa_last());
        let types_start = self.type_answers.len() as u32;
        let start = set.types_start as usize;
        let mut copied: Vec<(Span, Span)> = Vec::new();
        for &(qtype, span) in &old.type_answers[start..start + set.types_len as usize] {
            let new = match copied.iter().find(|(o, _)| *o == span) {
                Some((_, new)) => *new,
                None => {
                    let new = self.push(old.slice(span), span.soa_last());
                    copied.push((span, new));
                    new
                }
            };
            self.type_answers.push((qtype, new));
        }
        AnswerSet {
            other,
            types_start,
            types_len: set.types_len,
        }
    }

    /// Copies one name's entry (key, answers, route and variants) of `old`.
    fn copy_entry(&mut self, old: &Chunk, entry: &NameAnswers) -> NameAnswers {
        let key = self.push(old.slice(entry.key), false);
        let set = self.copy_set(
            old,
            AnswerSet {
                other: entry.other,
                types_start: entry.types_start,
                types_len: entry.types_len,
            },
        );
        let mut copied = NameAnswers {
            key,
            other: set.other,
            types_start: set.types_start,
            types_len: set.types_len,
            route: NO_ROUTE,
            variants_start: 0,
            signed: NO_SIGNED,
            ..*entry
        };
        if entry.signed != NO_SIGNED {
            let count = 1 + old.reports.get(entry.route as usize).map_or(0, |r| r.variants.len());
            copied.signed = self.signed_sets.len() as u32;
            for i in 0..count {
                if let Some(&set) = old.signed_sets.get(entry.signed as usize + i) {
                    let set = self.copy_set(old, set);
                    self.signed_sets.push(set);
                }
            }
        }
        if let (Some(route), Some(report)) = (
            old.routes.get(entry.route as usize),
            old.reports.get(entry.route as usize),
        ) {
            copied.route = self.routes.len() as u32;
            self.routes.push(route.clone());
            self.reports.push(report.clone());
            copied.variants_start = self.variant_answers.len() as u32;
            for i in 0..report.variants.len() {
                let set = old.variant_answers[entry.variants_start as usize + i];
                let set = self.copy_set(old, set);
                self.variant_answers.push(set);
            }
        }
        copied
    }

    fn push(&mut self, bytes: &[u8], soa_last: bool) -> Span {
        let span = Span {
            start: self.arena.len() as u32,
            len: bytes.len() as u32 | if soa_last { SOA_LAST } else { 0 },
        };
        self.arena.extend_from_slice(bytes);
        span
    }

    #[inline]
    fn slice(&self, span: Span) -> &[u8] {
        &self.arena[span.range()]
    }

    #[inline]
    fn answer_of(&self, other: Span, types_start: u32, types_len: u16, qtype: u16) -> Span {
        let start = types_start as usize;
        // A handful of entries: a linear scan beats anything cleverer.
        for (t, span) in &self.type_answers[start..start + types_len as usize] {
            if *t == qtype {
                return *span;
            }
        }
        other
    }
}

/// A routed name's query-time route, the RRsets of each variant it
/// renders, and its report.
type RouteParts = (Route, Vec<VariantSets>, RouteReport);

/// Renders names of one tree into chunks.
/// Names below which a whole render stays on one thread: starting
/// threads costs more than rendering a small tree.
const PARALLEL_RENDER_NAMES: usize = 16 * 1024;

/// How many threads render a whole snapshot of `names` owner names: one
/// per available core (at most [`MAX_RENDER_THREADS`]) for a large tree
/// of unsigned zones, else one. Signed zones render on one thread: their
/// signatures are cached by signed data as they are made, so the
/// answers and the transfers carry the same RRSIG (ECDSA signatures of
/// the same RRset differ from one signing to the next).
fn render_threads(names: usize, zones: &[ZoneAnswers]) -> usize {
    if names < PARALLEL_RENDER_NAMES || zones.iter().any(|zone| zone.dnssec.is_some()) {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_RENDER_THREADS)
}

/// The most threads a whole render uses.
const MAX_RENDER_THREADS: usize = 4;

/// Renders every name of `tree` (unsigned zones only) into `chunks`
/// (`1 << bits` of them) on `threads` threads, each owning a contiguous
/// range of chunks. Chunks are independent, and each one receives its
/// names in the order the one-thread render gives them, so the bytes
/// stored are the same.
fn render_in_parallel(tree: &Tree, zones: &[ZoneAnswers], chunks: &mut [Chunk], bits: u32, threads: usize) {
    let per_thread = chunks.len().div_ceil(threads.max(1));
    std::thread::scope(|scope| {
        for (part, owned) in chunks.chunks_mut(per_thread).enumerate() {
            let first = part * per_thread;
            scope.spawn(move || {
                let mut renderer = Renderer::new(tree, zones, Signer::new());
                for (key, node) in &tree.nodes {
                    let hash = hash_key(key);
                    let Some(chunk) = chunk_index(hash, bits)
                        .checked_sub(first)
                        .and_then(|index| owned.get_mut(index))
                    else {
                        continue;
                    };
                    renderer.render_into(chunk, key, node, hash);
                }
            });
        }
    });
}

struct Renderer<'a> {
    tree: &'a Tree,
    zones: &'a [ZoneAnswers],
    query_types: Vec<RecordType>,
    /// Routes by [`Tree::routed`] index, computed when first needed.
    routes: rustc_hash::FxHashMap<usize, RouteParts>,
    /// Signatures made for this build, by signed data.
    signer: std::cell::RefCell<Signer>,
}

impl<'a> Renderer<'a> {
    /// A renderer signing with `signer` (and its cached signatures).
    fn new(tree: &'a Tree, zones: &'a [ZoneAnswers], signer: Signer) -> Self {
        Renderer {
            tree,
            zones,
            query_types: tree.query_types(),
            routes: rustc_hash::FxHashMap::default(),
            signer: std::cell::RefCell::new(signer),
        }
    }

    /// Renders every answer of `node` (owner `key`, hash `hash`) into
    /// `chunk`; problems go to the chunk's skipped list.
    fn render_into(&mut self, chunk: &mut Chunk, key: &[u8], node: &super::tree::Node, hash: u64) {
        let tree = self.tree;
        let skip = |chunk: &mut Chunk, reason: String| {
            chunk.skipped.push((
                key.into(),
                SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason,
                },
            ));
        };
        let touched: std::cell::Cell<Option<usize>> = std::cell::Cell::new(None);
        let signer = &self.signer;
        let zones = self.zones;
        // `unless`: the absent type's unsigned resolution; a type resolving
        // the same is not rendered (None), as its bytes would be the same
        // (most names hold one or two of the zone's types, and encoding
        // was most of a whole render).
        let render_type = |qtype: RecordType,
                           variant: Override<'_>,
                           keys: Option<&ZoneKeys>,
                           unless: Option<&Resolution>|
         -> Option<(Rendered, Resolution)> {
            let (resolution, routed) = tree.resolve_routed(&node.name, qtype, variant)?;
            if touched.get().is_none() {
                touched.set(routed);
            }
            if keys.is_none() && unless.is_some_and(|absent| *absent == resolution) {
                return None;
            }
            if let Some(keys) = keys {
                let denied = |name: &Name| denial(tree, zones, name, variant);
                let (signed, soa_last) =
                    signer
                        .borrow_mut()
                        .sign_resolution(keys, &node.name, &resolution, &denied, false)?;
                let rendered = Rendered {
                    bytes: render(&node.name, ABSENT_TYPE, &signed)?,
                    soa_last,
                };
                return Some((rendered, resolution));
            }
            let soa_last = resolution
                .additionals
                .last()
                .or(resolution.authorities.last())
                .or(resolution.answers.last())
                .is_some_and(|r| r.record_type() == RecordType::SOA);
            let rendered = Rendered {
                bytes: render(&node.name, ABSENT_TYPE, &resolution)?,
                soa_last,
            };
            Some((rendered, resolution))
        };
        let query_types = &self.query_types;
        // Signed answers (`keys`) are rendered only for the types whose
        // unsigned answer differs from the absent type's (`differing`): an
        // equal unsigned answer is the same resolution, so it signs the same.
        let render_all = |variant: Override<'_>,
                          keys: Option<(&ZoneKeys, &[(u16, Rendered)])>|
         -> Option<(Rendered, Vec<(u16, Rendered)>)> {
            let (other, absent) = render_type(ABSENT_TYPE, variant, keys.map(|k| k.0), None)?;
            let mut answers = Vec::new();
            let types: Vec<RecordType> = match keys {
                Some((_, differing)) => differing.iter().map(|(t, _)| RecordType::from(*t)).collect(),
                None => query_types.clone(),
            };
            for qtype in types {
                if let Some((rendered, _)) = render_type(qtype, variant, keys.map(|k| k.0), Some(&absent)) {
                    if rendered.bytes != other.bytes {
                        answers.push((u16::from(qtype), rendered));
                    }
                }
            }
            Some((other, answers))
        };
        let keys = self.zones.get(node.zone).and_then(|z| z.dnssec.clone());
        let Some((other, answers)) = render_all(None, None) else {
            skip(chunk, "its answer could not be encoded".into());
            return;
        };
        if let Some(largest) = std::iter::once(other.bytes.len())
            .chain(answers.iter().map(|(_, r)| r.bytes.len()))
            .max()
            .filter(|len| *len > MAX_STORED_MESSAGE)
        {
            // Still stored (clients get TC), but said: no transport can
            // carry it, and nothing else would tell the operator.
            skip(
                chunk,
                format!(
                    "its answer is {largest} octets, more than one DNS message holds (65,535, RFC 1035 §4.2.2, \
                     less room for OPT); clients get TC and no records: publish fewer targets under this name"
                ),
            );
        }
        let Some(mut entry) = chunk.store_name(
            key,
            node.zone as u32,
            &other,
            &answers,
            node.cut.is_some(),
            node.wildcard_child,
        ) else {
            skip(chunk, "the snapshot chunk is over 2 GiB; name left out".into());
            return;
        };
        if let Some(route) = touched.get() {
            // The answer goes through a routed name: one answer set per variant.
            if !self.routes.contains_key(&route) {
                let Some(routed) = tree.routed(route) else {
                    chunk.insert(hash, entry);
                    return;
                };
                let parts = route_of(routed, &self.zones[routed.zone].clients);
                self.routes.insert(route, parts);
            }
            let (route_query, sets, report) = &self.routes[&route];
            let start = chunk.variant_answers.len() as u32;
            let mut complete = true;
            let mut differing: Vec<Vec<(u16, Rendered)>> = Vec::with_capacity(sets.len());
            for sets in sets {
                let variant = Some((route, sets));
                let Some((other, answers)) = render_all(variant, None) else {
                    complete = false;
                    break;
                };
                match chunk.store_set(&other, &answers) {
                    Some(set) => chunk.variant_answers.push(set),
                    None => complete = false,
                }
                differing.push(answers);
            }
            if complete {
                entry.route = chunk.routes.len() as u32;
                entry.variants_start = start;
                chunk.routes.push(route_query.clone());
                chunk.reports.push(report.clone());
                if let Some(keys) = &keys {
                    let mut signed = Vec::with_capacity(sets.len() + 1);
                    let variants = std::iter::once((None, answers.as_slice())).chain(
                        sets.iter()
                            .zip(&differing)
                            .map(|(sets, d)| (Some((route, sets)), d.as_slice())),
                    );
                    for (variant, differing) in variants {
                        match render_all(variant, Some((keys, differing))).and_then(|(o, a)| chunk.store_set(&o, &a)) {
                            Some(set) => signed.push(set),
                            None => break,
                        }
                    }
                    if signed.len() == sets.len() + 1 {
                        entry.signed = chunk.signed_sets.len() as u32;
                        chunk.signed_sets.extend(signed);
                    } else {
                        skip(
                            chunk,
                            "its signed answers could not be made; DO queries get them unsigned".into(),
                        );
                    }
                }
                chunk.insert(hash, entry);
                return;
            } else {
                chunk.variant_answers.truncate(start as usize);
                skip(
                    chunk,
                    "a policy variant could not be encoded; every variant is answered together".into(),
                );
            }
        }
        if let Some(keys) = &keys {
            match render_all(None, Some((keys, answers.as_slice()))).and_then(|(o, a)| chunk.store_set(&o, &a)) {
                Some(set) => {
                    entry.signed = chunk.signed_sets.len() as u32;
                    chunk.signed_sets.push(set);
                }
                None => skip(
                    chunk,
                    "its signed answers could not be made; DO queries get them unsigned".into(),
                ),
            }
        }
        chunk.insert(hash, entry);
    }
}

/// One client table per zone of `tree`, from the zone's `client_regions`
/// and the regions of its routed names; problems are reported as skipped.
fn client_tables(tree: &Tree, contents: &[(ZoneContent, u32)], skipped: &mut Vec<SkippedRecord>) -> Vec<ClientTable> {
    tree.zones
        .iter()
        .enumerate()
        .map(|(index, zone)| {
            let content = contents
                .iter()
                .find(|(c, _)| c.apex.to_lowercase() == zone.apex.to_lowercase());
            let regions: Vec<&str> = tree
                .routed_nodes()
                .map(|(_, r)| r)
                .filter(|r| r.zone == index)
                .flat_map(|r| r.regions.iter().flatten().map(String::as_str))
                .collect();
            let Some((content, _)) = content else {
                return ClientTable::default();
            };
            let (mut table, problems) = ClientTable::build(&content.client_regions, &regions);
            table.set_fallback(content.default_client_region.as_deref());
            skipped.extend(problems.into_iter().map(|reason| SkippedRecord {
                name: zone.apex.to_ascii(),
                record_type: "clientRegions".into(),
                reason,
            }));
            table
        })
        .collect()
}

/// The query-time route of one routed name, the RRsets of each variant it
/// renders, and its report.
fn route_of(routed: &super::tree::RoutedNode, table: &ClientTable) -> (Route, Vec<VariantSets>, RouteReport) {
    let mut report = RouteReport {
        name: routed.name.to_ascii().to_lowercase(),
        policy: String::new(),
        variants: Vec::new(),
        max_answers: routed.max_answers,
    };
    // Route53's semantics: weight 0 gets nothing while any variant has
    // weight; when all are 0, all share equally.
    let any_weight = routed.weights.iter().any(|&w| w > 0);
    let effective_weight = |w: u32| if any_weight { w } else { 1 };
    let cumulative = || -> Box<[u32]> {
        let mut total = 0u32;
        routed
            .weights
            .iter()
            .map(|&w| {
                total = total.saturating_add(effective_weight(w));
                total
            })
            .collect()
    };
    let one_each = || -> Vec<Vec<usize>> { (0..routed.ids.len()).map(|i| vec![i]).collect() };
    // The base route and, per base variant, the input variants it holds.
    let (base, members, sticky_within): (Route, Vec<Vec<usize>>, Option<(u8, u8)>) = match &routed.policy {
        RoutingPolicy::Weighted => {
            report.policy = "Weighted".into();
            let route = Route::Weighted {
                cumulative: cumulative(),
            };
            (route, one_each(), None)
        }
        RoutingPolicy::StickyWeighted { v4_prefix, v6_prefix } => {
            report.policy = format!("Weighted, sticky per client subnet (/{v4_prefix}, /{v6_prefix})");
            let prefixes = ((*v4_prefix).min(32), (*v6_prefix).min(128));
            let route = Route::Sticky {
                cumulative: cumulative(),
                seeds: routed.ids.iter().map(|id| super::routing::variant_seed(id)).collect(),
                weights: routed.weights.iter().map(|&w| f64::from(effective_weight(w))).collect(),
                v4_prefix: prefixes.0,
                v6_prefix: prefixes.1,
            };
            // Windows of a sticky name are sticky too.
            (route, one_each(), Some(prefixes))
        }
        RoutingPolicy::Nearest { fallback } => {
            report.policy = "Nearest".into();
            let variants: Vec<super::routing::RoutedVariant> = routed
                .regions
                .iter()
                .zip(&routed.ids)
                .map(|(region, id)| super::routing::RoutedVariant {
                    id: id.clone(),
                    weight: 0,
                    region: region.clone(),
                    records: Vec::new(),
                })
                .collect();
            let (sets, by_region, unknown) = nearest_sets(&variants, fallback, table);
            let route = Route::Nearest {
                zone: routed.zone as u32,
                by_region: by_region.into_boxed_slice(),
                unknown,
            };
            (route, sets, routed.sticky_within)
        }
        RoutingPolicy::Every => {
            report.policy = "All".into();
            let route = Route::Weighted {
                cumulative: Box::new([1]),
            };
            (route, vec![(0..routed.ids.len()).collect()], routed.sticky_within)
        }
    };
    let sticky_within = sticky_within.map(|(v4, v6)| (v4.min(32), v6.min(128)));
    if let (Some((v4, v6)), RoutingPolicy::Nearest { .. } | RoutingPolicy::Every) =
        (routed.sticky_within, &routed.policy)
    {
        report
            .policy
            .push_str(&format!(", sticky per client subnet (/{v4}, /{v6}) within the set"));
    }
    if let Some(n) = routed.max_answers {
        report.policy.push_str(&format!(", at most {n} address(es) per family"));
    }
    let split_by_cluster =
        routed.sticky_within.is_some() && matches!(routed.policy, RoutingPolicy::Nearest { .. } | RoutingPolicy::Every);
    if routed.max_answers.is_none() && !split_by_cluster {
        let rendered: Vec<VariantSets> = members
            .iter()
            .map(|set| match set.as_slice() {
                [one] => routed.sets[*one].clone(),
                many => merge_sets(many.iter().map(|&i| &routed.sets[i])),
            })
            .collect();
        report.variants = members
            .iter()
            .map(|set| set.iter().map(|&i| routed.ids[i].clone()).collect())
            .collect();
        return (base, rendered, report);
    }
    // Two stages: each base variant becomes a group of rendered variants
    // (one per cluster when sticky within the set; windows of at most
    // `max_answers` addresses per family).
    let weighted = matches!(
        routed.policy,
        RoutingPolicy::Weighted | RoutingPolicy::StickyWeighted { .. }
    );
    let mut split = super::routing::SplitRoute {
        base,
        groups: Box::new([]),
        seeds: Box::new([]),
        weights: Box::new([]),
        cumulative: Box::new([]),
        prefixes: sticky_within,
    };
    let (mut groups, mut seeds, mut weights, mut cumulative) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rendered: Vec<VariantSets> = Vec::new();
    for set in &members {
        let start = rendered.len() as u32;
        // (input variants, seed, weight, RRsets) of each part of the group.
        let parts: Vec<(Vec<usize>, u64, VariantSets)> = if split_by_cluster && set.len() > 1 {
            set.iter()
                .map(|&i| {
                    (
                        vec![i],
                        super::routing::variant_seed(&routed.ids[i]),
                        routed.sets[i].clone(),
                    )
                })
                .collect()
        } else if weighted && routed.max_answers.is_some() {
            // The drawn variant first, then the others in an order drawn
            // by weight without replacement (fixed per first variant, so
            // pre-rendered), to the limit.
            let first = set[0];
            let key = super::routing::variant_seed(&routed.ids[first]);
            let score = |i: usize| {
                let weight = f64::from(effective_weight(routed.weights[i]));
                super::routing::rendezvous_score(key, super::routing::variant_seed(&routed.ids[i]), weight)
            };
            let mut following: Vec<usize> = (0..routed.ids.len())
                .filter(|&i| i != first && effective_weight(routed.weights[i]) > 0)
                .collect();
            following.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
            let n = usize::from(routed.max_answers.unwrap_or(u16::MAX));
            let (sets, used) = filled(routed, first, &following, n);
            vec![(used, super::routing::variant_seed(&routed.ids[first]), sets)]
        } else {
            let sets = match set.as_slice() {
                [one] => routed.sets[*one].clone(),
                many => merge_sets(many.iter().map(|&i| &routed.sets[i])),
            };
            vec![(set.clone(), 0, sets)]
        };
        let mut total = 0u32;
        for (used, seed, sets) in parts {
            let windows = match routed.max_answers {
                Some(n) => address_windows(&sets, usize::from(n)),
                None => vec![sets],
            };
            let count = windows.len();
            for (k, window) in windows.into_iter().enumerate() {
                let ids: Vec<String> = used
                    .iter()
                    .filter(|&&i| shares_an_address(&routed.sets[i], &window))
                    .map(|&i| routed.ids[i].clone())
                    .collect();
                report.variants.push(ids);
                seeds.push(if count == 1 {
                    seed
                } else {
                    super::routing::window_seed(seed, k)
                });
                weights.push(1.0 / count as f64);
                total = total.saturating_add((WINDOW_WEIGHT / count as u32).max(1));
                cumulative.push(total);
                rendered.push(window);
            }
        }
        groups.push((start, rendered.len() as u32 - start));
    }
    split.groups = groups.into_boxed_slice();
    split.seeds = seeds.into_boxed_slice();
    split.weights = weights.into_boxed_slice();
    split.cumulative = cumulative.into_boxed_slice();
    (Route::Split(Box::new(split)), rendered, report)
}

/// The integer weight a part of a group shares among its windows.
const WINDOW_WEIGHT: u32 = 1 << 20;

/// At most this many windows of one set: past it, windows start evenly
/// spaced, so each address is still in about the same number of them.
const MAX_WINDOWS: usize = 64;

/// `sets` cut to at most `n` addresses per family: one window when every
/// family fits, else cyclic windows over the (sorted) addresses, one per
/// starting address of the largest family (at most [`MAX_WINDOWS`]);
/// each address is in the same number of windows. Other types are kept.
fn address_windows(sets: &VariantSets, n: usize) -> Vec<VariantSets> {
    let n = n.max(1);
    let is_address = |t: &RecordType| matches!(t, RecordType::A | RecordType::AAAA);
    let largest = sets
        .iter()
        .filter(|(t, _)| is_address(t))
        .map(|(_, s)| s.rdatas.len())
        .max()
        .unwrap_or(0);
    if largest <= n {
        return vec![sets.clone()];
    }
    let count = largest.min(MAX_WINDOWS);
    (0..count)
        .map(|k| {
            let mut window = VariantSets::new();
            for (rtype, set) in sets.iter() {
                let all: Vec<_> = set.rdatas.iter().collect();
                let rdatas = if is_address(rtype) && all.len() > n {
                    let from = k * all.len() / count;
                    (0..n)
                        .map(|j| all[(from + j) % all.len()].clone().into_owned())
                        .collect()
                } else {
                    set.rdatas.clone()
                };
                window.insert(*rtype, RRset { ttl: set.ttl, rdatas });
            }
            window
        })
        .collect()
}

/// `Weighted` with a limit: variant `first`'s RRsets, each address family
/// filled up to `n` from `following` in order (duplicates skipped); and
/// the variants used.
fn filled(routed: &super::tree::RoutedNode, first: usize, following: &[usize], n: usize) -> (VariantSets, Vec<usize>) {
    let mut out = routed.sets[first].clone();
    let mut used = vec![first];
    for &other in following {
        let mut took = false;
        for (rtype, set) in routed.sets[other].iter() {
            if !matches!(rtype, RecordType::A | RecordType::AAAA) {
                continue;
            }
            let merged = out.get_or_insert(
                *rtype,
                RRset {
                    ttl: set.ttl,
                    rdatas: super::rdatas::Rdatas::new(),
                },
            );
            for rdata in &set.rdatas {
                if merged.rdatas.len() >= n {
                    break;
                }
                if !merged.rdatas.contains(&rdata) {
                    merged.ttl = merged.ttl.min(set.ttl);
                    merged.rdatas.push(rdata.into_owned());
                    took = true;
                }
            }
        }
        if took {
            used.push(other);
        }
    }
    (out, used)
}

/// Whether `window` holds one of `sets`' A or AAAA records.
fn shares_an_address(sets: &VariantSets, window: &VariantSets) -> bool {
    sets.iter()
        .filter(|(t, _)| matches!(t, RecordType::A | RecordType::AAAA))
        .any(|(t, set)| {
            window
                .get(t)
                .is_some_and(|w| set.rdatas.iter().any(|r| w.rdatas.contains(&r)))
        })
}

/// The union of several variants' RRsets (smallest TTL per type).
fn merge_sets<'a>(sets: impl Iterator<Item = &'a VariantSets>) -> VariantSets {
    let mut out = VariantSets::new();
    for sets in sets {
        for (rtype, set) in sets {
            let merged = out.get_or_insert(
                *rtype,
                RRset {
                    ttl: set.ttl,
                    rdatas: super::rdatas::Rdatas::new(),
                },
            );
            merged.ttl = merged.ttl.min(set.ttl);
            for rdata in &set.rdatas {
                if !merged.rdatas.contains(&rdata) {
                    merged.rdatas.push(rdata.into_owned());
                }
            }
        }
    }
    for set in out.values_mut() {
        set.rdatas.sort_by_text();
    }
    out
}

/// The denial of `name` in a negative answer or referral: from the NSEC
/// chain of its zone when the zone denies by chain (`None` when the
/// chain has no proof: the answer is not signed rather than given a
/// compact-denial NSEC), else what a compact-denial NSEC needs.
fn denial(tree: &Tree, zones: &[ZoneAnswers], name: &Name, variant: Override<'_>) -> Option<Denied> {
    let lower = super::tree::fqdn(name.to_lowercase());
    let zone = tree.zone_for(&lower);
    match zone.and_then(|i| zones.get(i)?.nsec_chain.as_deref()) {
        Some(chain) => chain.denial(tree, zone?, &lower),
        None => Some(denied_at(tree, name, variant)),
    }
}

/// What the tree holds at `name` for a compact-denial NSEC: its types
/// (those of `variant` at a routed name), or that it does not exist.
fn denied_at(tree: &Tree, name: &Name, variant: Override<'_>) -> Denied {
    let key = super::tree::wire_key(&super::tree::fqdn(name.to_lowercase()));
    let Some(node) = tree.nodes.get(&key) else {
        // A name a wildcard answers for exists for the client.
        return tree.wildcard_types(name).map_or(Denied::Missing, Denied::Exists);
    };
    let routed = tree.routed_keys.get(&key);
    let types: Vec<RecordType> = match variant {
        Some((index, sets)) if routed == Some(&index) => sets.keys().copied().collect(),
        _ => node.rrsets.keys().copied().collect(),
    };
    Denied::Exists(types)
}

/// `versions` with, for each signed zone, what secondaries need to serve
/// it signed without signing it themselves (RFC 4035 §2): an RRSIG for
/// every authoritative RRset (not a delegation's NS RRset, not glue) and
/// a full NSEC chain (RFC 4034 §4) over the authoritative names and
/// delegations in canonical order (RFC 4034 §6.1), since a secondary
/// cannot make compact-denial NSECs per query.
/// `record` is an RRSIG covering an SOA RRset.
fn covers_soa(record: &hickory_proto::rr::Record) -> bool {
    match &record.data {
        hickory_proto::rr::RData::DNSSEC(hickory_proto::dnssec::rdata::DNSSECRData::RRSIG(sig)) => {
            sig.input().type_covered == RecordType::SOA
        }
        _ => false,
    }
}

fn sign_versions(
    zones: &[ZoneAnswers],
    tree: &Tree,
    versions: Vec<ZoneVersion>,
    signer: &mut Signer,
) -> Vec<ZoneVersion> {
    versions
        .into_iter()
        .map(|version| {
            let apex_key = super::tree::wire_key(&version.apex);
            let keys = tree
                .zones
                .iter()
                .position(|z| z.apex_key == apex_key)
                .and_then(|i| zones.get(i)?.dnssec.as_ref());
            let Some(keys) = keys else {
                return version;
            };
            signed_version(keys, tree, &version, signer).unwrap_or(version)
        })
        .collect()
}

fn signed_version(keys: &ZoneKeys, tree: &Tree, version: &ZoneVersion, signer: &mut Signer) -> Option<ZoneVersion> {
    let mut sets: std::collections::BTreeMap<(Name, RecordType), Vec<hickory_proto::rr::Record>> =
        std::collections::BTreeMap::new();
    for record in std::iter::once(&version.soa).chain(version.records.iter().map(|(_, r)| r)) {
        sets.entry((record.name.to_lowercase(), record.record_type()))
            .or_default()
            .push(record.clone());
    }
    // Below a cut: glue, not authoritative; at a cut: the child's NS.
    let place = |name: &Name| -> (bool, bool) {
        let key = super::tree::wire_key(name);
        match tree.nodes.get(&key).and_then(|n| n.cut.as_ref()) {
            Some(cut) if *cut == key => (true, false),
            Some(_) => (false, true),
            None => (false, false),
        }
    };
    let mut records: Vec<hickory_proto::rr::Record> = Vec::with_capacity(version.records.len() * 3);
    let mut names: Vec<(Name, Vec<RecordType>)> = Vec::new();
    for ((owner, rtype), set) in &sets {
        let (at_cut, glue) = place(owner);
        if glue {
            continue;
        }
        match names.last_mut() {
            Some((name, types)) if name == owner => types.push(*rtype),
            _ => names.push((owner.clone(), vec![*rtype])),
        }
        if *rtype != RecordType::SOA {
            records.extend(set.iter().cloned());
        }
        if !(at_cut && *rtype == RecordType::NS) {
            records.push(signer.rrsig(keys, set)?);
        }
    }
    // Glue records travel unsigned.
    for ((owner, _), set) in &sets {
        if place(owner).1 {
            records.extend(set.iter().cloned());
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (owner, types)) in names.iter().enumerate() {
        let next = &names[(i + 1) % names.len()].0;
        let mut types = types.clone();
        types.extend([RecordType::RRSIG, RecordType::NSEC]);
        let nsec = hickory_proto::rr::Record::from_rdata(
            owner.clone(),
            keys.nsec_ttl,
            hickory_proto::rr::RData::DNSSEC(hickory_proto::dnssec::rdata::DNSSECRData::NSEC(
                hickory_proto::dnssec::rdata::NSEC::new(next.clone(), types),
            )),
        );
        let rrsig = signer.rrsig(keys, std::slice::from_ref(&nsec))?;
        records.push(nsec);
        records.push(rrsig);
    }
    Some(ZoneVersion::new(version.apex.clone(), version.soa.clone(), records))
}
