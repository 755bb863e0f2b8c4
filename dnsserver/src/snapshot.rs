//! An immutable, pre-rendered view of every served zone.
//!
//! All the work of answering happens here, once per published change: for
//! every owner name and every query type that can make a difference, the
//! whole response message is rendered by hickory-proto and stored. The
//! query path ([`crate::answer`]) then only hashes the question name, copies
//! the stored bytes and patches the ID, the flags and the question's case.

use hickory_proto::rr::{Name, RecordType};
use rustc_hash::FxHashMap;

use crate::render::{record_without_owner, render};
use crate::tree::{Key, SkippedRecord, Tree};
use crate::zone::ZoneContent;

/// Answers stored for one owner name.
#[derive(Debug)]
pub(crate) struct NameAnswers {
    /// Index into [`Snapshot::zones`].
    pub zone: u32,
    /// Query types whose answer differs from `other`, sorted by type.
    pub by_type: Box<[(u16, Box<[u8]>)]>,
    /// The answer for every other query type.
    pub other: Box<[u8]>,
    /// At or below a zone cut: names below it need a referral rendered at
    /// query time.
    pub below_cut: bool,
    /// Has a `*` child: missing names below it are synthesised at query time.
    pub wildcard_child: bool,
}

impl NameAnswers {
    /// The stored response for `qtype`.
    #[inline]
    pub fn for_type(&self, qtype: u16) -> &[u8] {
        // A handful of entries: a linear scan beats a binary search here.
        for (t, bytes) in self.by_type.iter() {
            if *t == qtype {
                return bytes;
            }
        }
        &self.other
    }
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
#[derive(Debug, Default)]
pub struct Snapshot {
    pub(crate) tree: Tree,
    pub(crate) names: FxHashMap<Key, NameAnswers>,
    pub(crate) zones: Vec<ZoneAnswers>,
    skipped: Vec<SkippedRecord>,
}

/// A query type unused by any RRset: its answer stands for all absent types.
const ABSENT_TYPE: RecordType = RecordType::Unknown(65_280);

impl Snapshot {
    /// An empty snapshot: every query is REFUSED.
    pub fn empty() -> Self {
        Snapshot::default()
    }

    /// Builds a snapshot from zones and their SOA serials. Records that
    /// cannot be served are left out and listed in [`Snapshot::skipped`].
    pub fn build(contents: &[(ZoneContent, u32)]) -> Snapshot {
        let (tree, mut skipped) = Tree::build(contents);
        let query_types = tree.query_types();
        let zones = tree
            .zones
            .iter()
            .map(|zone| ZoneAnswers {
                apex_labels: zone.apex.num_labels(),
                negative_soa_tail: record_without_owner(&zone.negative_soa)
                    .unwrap_or_default()
                    .into_boxed_slice(),
            })
            .collect();
        let mut names = FxHashMap::default();
        names.reserve(tree.nodes.len());
        for (key, node) in &tree.nodes {
            let render_type = |qtype: RecordType| -> Option<Vec<u8>> {
                let resolution = tree.resolve(&node.name, qtype)?;
                render(&node.name, qtype, &resolution)
            };
            let Some(other) = render_type(ABSENT_TYPE) else {
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason: "its answer could not be encoded".into(),
                });
                continue;
            };
            let by_type: Vec<(u16, Box<[u8]>)> = query_types
                .iter()
                .filter_map(|&qtype| {
                    let bytes = render_type(qtype)?;
                    (bytes != other).then(|| (u16::from(qtype), bytes.into_boxed_slice()))
                })
                .collect();
            names.insert(
                key.clone(),
                NameAnswers {
                    zone: node.zone as u32,
                    by_type: by_type.into_boxed_slice(),
                    other: other.into_boxed_slice(),
                    below_cut: node.cut.is_some(),
                    wildcard_child: node.wildcard_child,
                },
            );
        }
        Snapshot {
            tree,
            names,
            zones,
            skipped,
        }
    }

    /// Records left out while building, with reasons.
    pub fn skipped(&self) -> &[SkippedRecord] {
        &self.skipped
    }

    /// One summary per served zone.
    pub fn zones(&self) -> Vec<ZoneSummary> {
        self.tree
            .zones
            .iter()
            .map(|z| ZoneSummary {
                apex: z.apex.to_ascii(),
                serial: z.serial,
                rrset_count: z.rrset_count,
            })
            .collect()
    }

    /// Total RRsets served.
    pub fn rrset_count(&self) -> usize {
        self.tree.zones.iter().map(|z| z.rrset_count).sum()
    }

    /// Owner names served (empty non-terminals included).
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// The slow path: resolve and render at query time.
    pub(crate) fn render_now(&self, qname: &Name, qtype: RecordType) -> Option<Vec<u8>> {
        let resolution = self.tree.resolve(&qname.to_lowercase(), qtype)?;
        render(qname, qtype, &resolution)
    }
}
