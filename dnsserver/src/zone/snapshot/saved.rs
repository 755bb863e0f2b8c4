//! A [`Snapshot`] as the snapshot file holds it (the file itself:
//! `zone::store::saved`): every chunk's arena and entries as they are, so
//! that a restarted server answers with the same stored responses without
//! rendering them again, and the checks a chunk read back passes before
//! the query path may index it.
//!
//! Written as a head ([`HeadOut`], read as [`HeadIn`]) and one frame per
//! chunk ([`ChunkOut`], read as [`ChunkIn`]): the same fields in the same
//! order, borrowed when written and owned when read, so writing copies
//! no arena and reading holds one chunk's frame at a time.
//!
//! Only snapshots whose answers are all stored are saved: a snapshot that
//! keeps its tree (wildcards, zone cuts: answered at query time) or holds
//! a signed zone (its keys stay in their Secrets, never in a file) is not
//! ([`Snapshot::unsaveable`]).

use std::sync::Arc;

use hashbrown::HashTable;
use serde::{Deserialize, Serialize};

use super::{
    chunk_index, hash_key, AnswerSet, Chunk, NameAnswers, Snapshot, Span, ZoneAnswers, ZoneSummary, MAX_CHUNK_BITS,
    NO_ROUTE, NO_SIGNED, SOA_LAST,
};
use crate::zone::routing::{ClientTable, GeoIpDb, Route};
use crate::zone::snapshot::RouteReport;
use crate::zone::tree::SkippedRecord;

/// One zone's answer data, as written.
#[derive(Serialize)]
pub(crate) struct ZoneOut<'a> {
    apex_labels: u8,
    #[serde(with = "serde_bytes")]
    negative_soa_tail: &'a [u8],
    clients: &'a ClientTable,
    serial: u32,
    pending: Option<(u32, u64)>,
}

/// One zone's answer data, as read.
#[derive(Deserialize)]
pub(crate) struct ZoneIn {
    apex_labels: u8,
    #[serde(with = "serde_bytes")]
    negative_soa_tail: Vec<u8>,
    clients: ClientTable,
    serial: u32,
    pending: Option<(u32, u64)>,
}

/// Everything of a snapshot but its chunks, as written.
#[derive(Serialize)]
pub(crate) struct HeadOut<'a> {
    chunk_bits: u32,
    zones: Vec<ZoneOut<'a>>,
    summaries: &'a [ZoneSummary],
    zone_skipped: &'a [SkippedRecord],
    skipped: &'a [SkippedRecord],
    pending: &'a [Box<[u8]>],
}

/// Everything of a snapshot but its chunks, as read.
#[derive(Deserialize)]
pub(crate) struct HeadIn {
    chunk_bits: u32,
    zones: Vec<ZoneIn>,
    summaries: Vec<ZoneSummary>,
    zone_skipped: Vec<SkippedRecord>,
    skipped: Vec<SkippedRecord>,
    pending: Vec<Box<[u8]>>,
}

impl HeadIn {
    /// How many chunk frames follow the head.
    pub(crate) fn chunk_count(&self) -> usize {
        1usize << self.chunk_bits.min(MAX_CHUNK_BITS)
    }

    /// The head's own checks: a chunk count a build makes, one summary
    /// per zone, valid client tables.
    ///
    /// # Errors
    /// The first broken rule, one line.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.chunk_bits > MAX_CHUNK_BITS {
            return Err(format!("{} chunk bits (at most {MAX_CHUNK_BITS})", self.chunk_bits));
        }
        if self.summaries.len() != self.zones.len() {
            return Err(format!(
                "{} zone summaries for {} zones",
                self.summaries.len(),
                self.zones.len()
            ));
        }
        for (zone, summary) in self.zones.iter().zip(&self.summaries) {
            zone.clients
                .check()
                .map_err(|e| format!("zone {}: {e}", summary.apex))?;
        }
        Ok(())
    }
}

/// One chunk, as written.
#[derive(Serialize)]
pub(crate) struct ChunkOut<'a> {
    #[serde(with = "serde_bytes")]
    arena: &'a [u8],
    entries: Vec<NameAnswers>,
    type_answers: &'a [(u16, Span)],
    variant_answers: &'a [AnswerSet],
    routes: &'a [Route],
    reports: &'a [RouteReport],
    skipped: &'a [(Box<[u8]>, SkippedRecord)],
}

/// One chunk, as read.
#[derive(Deserialize)]
pub(crate) struct ChunkIn {
    #[serde(with = "serde_bytes")]
    arena: Vec<u8>,
    entries: Vec<NameAnswers>,
    type_answers: Vec<(u16, Span)>,
    variant_answers: Vec<AnswerSet>,
    routes: Vec<Route>,
    reports: Vec<RouteReport>,
    skipped: Vec<(Box<[u8]>, SkippedRecord)>,
}

impl Snapshot {
    /// Why this snapshot cannot be saved to a file, or `None` when it can:
    /// it keeps its tree for answers made at query time, or a zone is
    /// signed.
    pub(crate) fn unsaveable(&self) -> Option<&'static str> {
        if self.tree.is_some() {
            return Some("a zone has wildcards or zone cuts, answered at query time");
        }
        if self.zones.iter().any(|z| z.dnssec.is_some() || z.nsec_chain.is_some()) {
            return Some("a zone is signed (its keys are never written to a file)");
        }
        None
    }

    /// The head to write (see [`Snapshot::unsaveable`] first).
    pub(crate) fn head_out(&self) -> HeadOut<'_> {
        HeadOut {
            chunk_bits: self.chunk_bits,
            zones: self
                .zones
                .iter()
                .map(|z| ZoneOut {
                    apex_labels: z.apex_labels,
                    negative_soa_tail: &z.negative_soa_tail,
                    clients: &z.clients,
                    serial: z.serial,
                    pending: z.pending,
                })
                .collect(),
            summaries: &self.summaries,
            zone_skipped: &self.zone_skipped,
            skipped: &self.skipped,
            pending: &self.pending,
        }
    }

    /// The chunks to write, in order.
    pub(crate) fn chunks_out(&self) -> impl Iterator<Item = ChunkOut<'_>> {
        self.chunks.iter().map(|chunk| ChunkOut {
            arena: &chunk.arena,
            entries: chunk.table.iter().copied().collect(),
            type_answers: &chunk.type_answers,
            variant_answers: &chunk.variant_answers,
            routes: &chunk.routes,
            reports: &chunk.reports,
            skipped: &chunk.skipped,
        })
    }

    /// The snapshot of a read `head` and its `chunks` (each checked by
    /// [`ChunkIn::into_chunk`]), with the GeoIP database `geo`.
    pub(crate) fn from_saved(head: HeadIn, chunks: Vec<Chunk>, geo: Option<Arc<GeoIpDb>>) -> Snapshot {
        Snapshot {
            chunks: chunks.into_iter().map(Arc::new).collect(),
            chunk_bits: head.chunk_bits,
            zones: head
                .zones
                .into_iter()
                .map(|z| {
                    let mut answers = ZoneAnswers {
                        apex_labels: z.apex_labels,
                        negative_soa_tail: z.negative_soa_tail.into_boxed_slice(),
                        clients: Arc::new(z.clients),
                        serial: z.serial,
                        pending: None,
                        dnssec: None,
                        pending_soa_tail: None,
                        nsec_chain: None,
                    };
                    answers.set_pending(z.pending);
                    answers
                })
                .collect(),
            summaries: head.summaries,
            tree: None,
            zone_skipped: head.zone_skipped,
            skipped: head.skipped,
            geo,
            pending: head.pending.into_boxed_slice(),
        }
    }
}

impl ChunkIn {
    /// The chunk at `index` of a snapshot whose head is `head`, once every
    /// offset the query path follows is checked: spans inside the arena,
    /// type and variant ranges inside their tables, zones, routes and
    /// their picks inside theirs, no signed answers (never saved), and
    /// each name in the chunk its hash selects.
    ///
    /// # Errors
    /// The first broken rule, one line.
    pub(crate) fn into_chunk(self, index: usize, head: &HeadIn) -> Result<Chunk, String> {
        let arena = self.arena.len();
        // In 64 bits: a start and length read from a file may overflow 32.
        let span_ok = |span: Span| u64::from(span.start) + u64::from(span.len & !SOA_LAST) <= arena as u64;
        let types_ok = |start: u32, len: u16| start as usize + usize::from(len) <= self.type_answers.len();
        let set_ok = |set: &AnswerSet| span_ok(set.other) && types_ok(set.types_start, set.types_len);
        if self.type_answers.iter().any(|(_, span)| !span_ok(*span)) {
            return Err(format!("chunk {index}: a type's answer lies outside its arena"));
        }
        if self.variant_answers.iter().any(|set| !set_ok(set)) {
            return Err(format!("chunk {index}: a variant's answers lie outside the chunk"));
        }
        if self.routes.len() != self.reports.len() {
            return Err(format!(
                "chunk {index}: {} routes, {} reports",
                self.routes.len(),
                self.reports.len()
            ));
        }
        for (route, report) in self.routes.iter().zip(&self.reports) {
            route
                .check(report.variants.len(), head.zones.len())
                .map_err(|e| format!("chunk {index}: {}: {e}", report.name))?;
        }
        let mut table = HashTable::with_capacity(self.entries.len());
        for entry in &self.entries {
            let set = AnswerSet {
                other: entry.other,
                types_start: entry.types_start,
                types_len: entry.types_len,
            };
            if !span_ok(entry.key) || !set_ok(&set) {
                return Err(format!("chunk {index}: a name's answers lie outside the chunk"));
            }
            if entry.zone as usize >= head.zones.len() {
                return Err(format!(
                    "chunk {index}: a name of zone {} of {}",
                    entry.zone,
                    head.zones.len()
                ));
            }
            if entry.signed != NO_SIGNED || entry.below_cut || entry.wildcard_child {
                return Err(format!("chunk {index}: a name answered at query time or signed"));
            }
            if entry.route != NO_ROUTE {
                let variants = self
                    .reports
                    .get(entry.route as usize)
                    .map(|r| r.variants.len())
                    .ok_or_else(|| format!("chunk {index}: a name's route {} is not there", entry.route))?;
                if entry.variants_start as usize + variants > self.variant_answers.len() {
                    return Err(format!("chunk {index}: a routed name's variants lie outside the chunk"));
                }
            }
            let key = &self.arena[entry.key.range()];
            let hash = hash_key(key);
            if chunk_index(hash, head.chunk_bits) != index {
                return Err(format!("chunk {index}: holds a name of another chunk"));
            }
            let arena = &self.arena;
            table.insert_unique(hash, *entry, |e: &NameAnswers| hash_key(&arena[e.key.range()]));
        }
        Ok(Chunk {
            arena: self.arena,
            table,
            type_answers: self.type_answers,
            variant_answers: self.variant_answers,
            signed_sets: Vec::new(),
            routes: self.routes,
            reports: self.reports,
            skipped: self.skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Chunks whose offsets leave the chunk are refused, whatever the
    //! file's checksum says (a file written by hand with a matching one).

    use hickory_proto::rr::{Name, RData, Record};

    use super::*;
    use crate::zone::content::ZoneContent;
    use crate::zone::routing::{ClientRegions, RoutedName, RoutedVariant, RoutingPolicy};

    fn name(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    /// A zone of 300 names, two of them routed (weighted, nearest).
    fn snapshot() -> Snapshot {
        let mut zone = ZoneContent::new(name("example.com."));
        zone.client_regions = ClientRegions {
            networks: vec![("192.0.2.0/24".parse().unwrap(), "eu".into())],
            ..Default::default()
        };
        for i in 0..300u32 {
            let owner = name(&format!("n{i}.example.com."));
            zone.records.push(Record::from_rdata(
                owner,
                30,
                RData::A(std::net::Ipv4Addr::from(0x0a00_0000 + i).into()),
            ));
        }
        for (owner, policy) in [
            ("w.example.com.", RoutingPolicy::Weighted),
            ("near.example.com.", RoutingPolicy::Nearest { fallback: vec![] }),
        ] {
            let owner = name(owner);
            let variant = |i: u8, region: &str| RoutedVariant {
                id: format!("c{i}"),
                weight: 1,
                region: Some(region.into()),
                records: vec![Record::from_rdata(
                    owner.clone(),
                    30,
                    RData::A(std::net::Ipv4Addr::new(198, 51, 100, i).into()),
                )],
            };
            let variants = vec![variant(1, "eu"), variant(2, "us")];
            zone.records
                .extend(variants.iter().flat_map(|v| v.records.iter().cloned()));
            zone.routed.push(RoutedName {
                name: owner,
                policy,
                variants,
                max_answers: None,
                sticky_within: None,
            });
        }
        Snapshot::build(&[(zone, 1)])
    }

    fn round_trip<T: Serialize, U: serde::de::DeserializeOwned>(value: &T) -> U {
        postcard::from_bytes(&postcard::to_allocvec(value).unwrap()).unwrap()
    }

    #[test]
    fn chunks_read_back_are_checked_offset_by_offset() {
        let snapshot = snapshot();
        let head: HeadIn = round_trip(&snapshot.head_out());
        head.check().unwrap();
        let chunks: Vec<ChunkIn> = snapshot.chunks_out().map(|c| round_trip(&c)).collect();
        assert_eq!(chunks.len(), head.chunk_count());
        assert!(chunks.len() > 1, "several chunks");
        // Each chunk as it was passes; the routed names' chunks are known.
        let routed: Vec<usize> = chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.routes.is_empty())
            .map(|(i, _)| i)
            .collect();
        assert!(!routed.is_empty());
        for (index, chunk) in chunks.iter().enumerate() {
            let again: ChunkIn = round_trip(&ChunkOut {
                arena: &chunk.arena,
                entries: chunk.entries.clone(),
                type_answers: &chunk.type_answers,
                variant_answers: &chunk.variant_answers,
                routes: &chunk.routes,
                reports: &chunk.reports,
                skipped: &chunk.skipped,
            });
            again.into_chunk(index, &head).unwrap();
        }
        let reread = |index: usize| -> ChunkIn { round_trip(&snapshot.chunks_out().nth(index).unwrap()) };
        type Mutation = (&'static str, fn(&mut ChunkIn));
        let mutations: [Mutation; 9] = [
            ("a key past the arena", |c| {
                c.entries[0].key.start = c.arena.len() as u32
            }),
            ("a length past 32 bits", |c| c.entries[0].other.len = u32::MAX >> 1),
            ("types past the table", |c| c.entries[0].types_start = u32::MAX - 1),
            ("another zone", |c| c.entries[0].zone = 3),
            ("a signed name", |c| c.entries[0].signed = 0),
            ("a type answer past the arena", |c| {
                c.type_answers.push((
                    1,
                    Span {
                        start: 0,
                        len: u32::MAX >> 1,
                    },
                ));
            }),
            ("a route past the routes", |c| {
                let entry = c.entries.iter_mut().find(|e| e.route != NO_ROUTE).unwrap();
                entry.route = 9;
            }),
            ("variants past the table", |c| {
                let entry = c.entries.iter_mut().find(|e| e.route != NO_ROUTE).unwrap();
                entry.variants_start = c.variant_answers.len() as u32;
            }),
            ("a pick past the variants", |c| {
                for route in &mut c.routes {
                    match route {
                        Route::Weighted { cumulative } => *cumulative = vec![1, 2, 3].into_boxed_slice(),
                        Route::Nearest { unknown, .. } => *unknown = 7,
                        _ => {}
                    }
                }
            }),
        ];
        for (what, mutate) in mutations {
            let index = routed[0];
            let mut chunk = reread(index);
            mutate(&mut chunk);
            assert!(chunk.into_chunk(index, &head).is_err(), "{what}: accepted");
        }
        // A chunk read as another chunk holds names of another chunk.
        let index = routed[0];
        assert!(reread(index).into_chunk((index + 1) % chunks.len(), &head).is_err());
    }

    #[test]
    fn heads_with_broken_client_tables_are_refused() {
        let snapshot = snapshot();
        let mut head: HeadIn = round_trip(&snapshot.head_out());
        head.check().unwrap();
        head.chunk_bits = MAX_CHUNK_BITS + 1;
        assert!(head.check().is_err());
        let mut head: HeadIn = round_trip(&snapshot.head_out());
        head.summaries.clear();
        assert!(head.check().is_err());
        let mut head: HeadIn = round_trip(&snapshot.head_out());
        head.zones[0].clients.regions.clear();
        assert!(head.check().is_err(), "region ids naming no region");
    }
}
