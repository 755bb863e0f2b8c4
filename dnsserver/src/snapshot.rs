//! An immutable, pre-rendered view of every served zone.
//!
//! All the work of answering happens here, once per published change: for
//! every owner name and every query type that can make a difference, the
//! whole response message is rendered by hickory-proto and stored. The
//! query path ([`crate::answer`]) then only hashes the question name, copies
//! the stored bytes and patches the ID, the flags and the question's case.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use hickory_proto::rr::{Name, RecordType};
use rustc_hash::FxBuildHasher;

use crate::render::{record_without_owner, render};
use crate::transfer::ZoneVersion;
use crate::tree::{SkippedRecord, Tree};
use crate::zone::ZoneContent;

/// A range of [`Snapshot::arena`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    #[inline]
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// Answers stored for one owner name (all bytes live in the arena).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NameAnswers {
    /// The lower-cased wire-format owner name.
    key: Span,
    /// Index into [`Snapshot::zones`].
    pub zone: u32,
    /// The answer for every query type not listed in `types`.
    other: Span,
    /// First entry in [`Snapshot::type_answers`] and how many.
    types_start: u32,
    types_len: u16,
    /// At or below a zone cut: names below it need a referral rendered at
    /// query time.
    pub below_cut: bool,
    /// Has a `*` child: missing names below it are synthesised at query time.
    pub wildcard_child: bool,
}

/// Per-zone data of the NXDOMAIN fast path.
#[derive(Debug)]
pub(crate) struct ZoneAnswers {
    /// Labels in the apex (without the root).
    pub apex_labels: u8,
    /// The negative SOA RR without its owner (see [`record_without_owner`]).
    pub negative_soa_tail: Box<[u8]>,
}

/// Facts about one served zone, for status reports and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSummary {
    /// The apex, e.g. `example.com.`.
    pub apex: String,
    /// The SOA serial served.
    pub serial: u32,
    /// RRsets in the zone, SOA and NS included.
    pub rrset_count: usize,
}

/// Every served zone, immutable once built. Share it as `Arc<Snapshot>`.
///
/// Layout: one byte arena holds every owner key and every stored answer;
/// a hash table of small fixed-size entries points into it. Answers that
/// are byte-identical for one name (e.g. A and ANY at an A-only name) are
/// stored once.
#[derive(Debug, Default)]
pub struct Snapshot {
    arena: Vec<u8>,
    table: HashTable<NameAnswers>,
    type_answers: Vec<(u16, Span)>,
    pub(crate) zones: Vec<ZoneAnswers>,
    summaries: Vec<ZoneSummary>,
    /// Kept only when some answer must be rendered at query time
    /// (wildcards, zone cuts).
    tree: Option<Tree>,
    skipped: Vec<SkippedRecord>,
}

/// A query type unused by any RRset: its answer stands for all absent types.
/// Every stored answer carries it in its question, which the query path
/// overwrites with the type asked, so answers differing only in the asked
/// type are stored once.
const ABSENT_TYPE: RecordType = RecordType::Unknown(65_280);

impl Snapshot {
    /// An empty snapshot: every query is REFUSED.
    pub fn empty() -> Self {
        Snapshot::default()
    }

    /// Builds a snapshot from zones and their SOA serials. Records that
    /// cannot be served are left out and listed in [`Snapshot::skipped`].
    pub fn build(contents: &[(ZoneContent, u32)]) -> Snapshot {
        Snapshot::build_keeping(contents, &|_| false).0
    }

    /// [`Snapshot::build`], also returning the records of every zone whose
    /// apex (lower case, fully qualified) `keep` selects, as served.
    pub(crate) fn build_keeping(
        contents: &[(ZoneContent, u32)],
        keep: &dyn Fn(&Name) -> bool,
    ) -> (Snapshot, Vec<ZoneVersion>) {
        let (tree, mut skipped) = Tree::build(contents);
        let versions = tree.versions(keep);
        let query_types = tree.query_types();
        let mut snapshot = Snapshot {
            zones: tree
                .zones
                .iter()
                .map(|zone| ZoneAnswers {
                    apex_labels: zone.apex.num_labels(),
                    negative_soa_tail: record_without_owner(&zone.negative_soa)
                        .unwrap_or_default()
                        .into_boxed_slice(),
                })
                .collect(),
            summaries: tree
                .zones
                .iter()
                .map(|z| ZoneSummary {
                    apex: z.apex.to_ascii(),
                    serial: z.serial,
                    rrset_count: z.rrset_count,
                })
                .collect(),
            table: HashTable::with_capacity(tree.nodes.len()),
            ..Snapshot::default()
        };
        let mut needs_tree = false;
        let mut answers: Vec<(u16, Vec<u8>)> = Vec::new();
        for (key, node) in &tree.nodes {
            let render_type = |qtype: RecordType| -> Option<Vec<u8>> {
                let resolution = tree.resolve(&node.name, qtype)?;
                render(&node.name, ABSENT_TYPE, &resolution)
            };
            let Some(other) = render_type(ABSENT_TYPE) else {
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason: "its answer could not be encoded".into(),
                });
                continue;
            };
            answers.clear();
            for &qtype in &query_types {
                if let Some(bytes) = render_type(qtype) {
                    if bytes != other {
                        answers.push((u16::from(qtype), bytes));
                    }
                }
            }
            needs_tree |= node.cut.is_some() || node.wildcard_child;
            let Some(entry) = snapshot.store_name(
                key,
                node.zone as u32,
                &other,
                &answers,
                node.cut.is_some(),
                node.wildcard_child,
            ) else {
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason: "the snapshot is over 4 GiB; name left out".into(),
                });
                continue;
            };
            let hash = FxBuildHasher.hash_one(key.as_ref());
            let arena = &snapshot.arena;
            snapshot
                .table
                .insert_unique(hash, entry, |e| FxBuildHasher.hash_one(&arena[e.key.range()]));
        }
        snapshot.arena.shrink_to_fit();
        snapshot.type_answers.shrink_to_fit();
        snapshot.tree = needs_tree.then_some(tree);
        snapshot.skipped = skipped;
        (snapshot, versions)
    }

    /// Appends one name's key and answers to the arena. `None` when the
    /// arena would pass 4 GiB (offsets are 32-bit).
    fn store_name(
        &mut self,
        key: &[u8],
        zone: u32,
        other: &[u8],
        answers: &[(u16, Vec<u8>)],
        below_cut: bool,
        wildcard_child: bool,
    ) -> Option<NameAnswers> {
        let total = key.len() + other.len() + answers.iter().map(|(_, a)| a.len()).sum::<usize>();
        if self.arena.len() + total > u32::MAX as usize {
            return None;
        }
        let key = self.push(key);
        let other = self.push(other);
        let types_start = self.type_answers.len() as u32;
        let mut stored: Vec<(Span, &[u8])> = Vec::new();
        for (qtype, bytes) in answers {
            // Identical bytes for another type of this name: share them.
            let span = match stored.iter().find(|(_, b)| *b == bytes.as_slice()) {
                Some((span, _)) => *span,
                None => {
                    let span = self.push(bytes);
                    stored.push((span, bytes));
                    span
                }
            };
            self.type_answers.push((*qtype, span));
        }
        Some(NameAnswers {
            key,
            zone,
            other,
            types_start,
            types_len: answers.len() as u16,
            below_cut,
            wildcard_child,
        })
    }

    fn push(&mut self, bytes: &[u8]) -> Span {
        let span = Span {
            start: self.arena.len() as u32,
            len: bytes.len() as u32,
        };
        self.arena.extend_from_slice(bytes);
        span
    }

    #[inline]
    fn slice(&self, span: Span) -> &[u8] {
        &self.arena[span.range()]
    }

    /// The stored answers of the owner name `key` (lower-cased wire format).
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<&NameAnswers> {
        let hash = FxBuildHasher.hash_one(key);
        self.table.find(hash, |entry| self.slice(entry.key) == key)
    }

    /// The stored response of `entry` for `qtype`.
    #[inline]
    pub(crate) fn response(&self, entry: &NameAnswers, qtype: u16) -> &[u8] {
        let start = entry.types_start as usize;
        // A handful of entries: a linear scan beats anything cleverer.
        for (t, span) in &self.type_answers[start..start + entry.types_len as usize] {
            if *t == qtype {
                return self.slice(*span);
            }
        }
        self.slice(entry.other)
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
        self.table.len()
    }

    /// Octets of stored keys and answers.
    pub fn arena_bytes(&self) -> usize {
        self.arena.len()
    }

    /// The slow path: resolve and render at query time.
    pub(crate) fn render_now(&self, qname: &Name, qtype: RecordType) -> Option<Vec<u8>> {
        let resolution = self.tree.as_ref()?.resolve(&qname.to_lowercase(), qtype)?;
        render(qname, qtype, &resolution)
    }
}
