//! An immutable, pre-rendered view of every served zone.
//!
//! All the work of answering happens here, once per published change: for
//! every owner name and every query type that can make a difference, the
//! whole response message is rendered by hickory-proto and stored. The
//! query path ([`crate::answer`]) then only hashes the question name, copies
//! the stored bytes and patches the ID, the flags and the question's case.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;

use hashbrown::HashTable;
use hickory_proto::rr::{Name, RecordType};
use rustc_hash::FxBuildHasher;

use crate::render::{record_without_owner, render};
use crate::routing::{nearest_sets, weighted_pick, ClientTable, GeoIpDb, Route, RoutingPolicy};
use crate::transfer::ZoneVersion;
use crate::tree::{Override, RRset, SkippedRecord, Tree, VariantSets};
use crate::zone::ZoneContent;

/// The largest stored response that still fits one message over TCP
/// (65,535 octets, RFC 1035 §4.2.2) with the OPT RR the query path may
/// append: 11 octets plus an ECS option of up to 24 (RFC 7871 §6).
const MAX_STORED_MESSAGE: usize = 65_535 - 11 - 24;

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
    /// Index into [`Snapshot::routes`], or [`NO_ROUTE`]: the answer depends
    /// on the query (a traffic policy).
    route: u32,
    /// First of this name's entries in [`Snapshot::variant_answers`], one
    /// per variant of its route.
    variants_start: u32,
}

/// [`NameAnswers::route`] of names without a policy.
const NO_ROUTE: u32 = u32::MAX;

/// The stored answers of one variant of a routed name.
#[derive(Debug, Clone, Copy)]
struct AnswerSet {
    other: Span,
    types_start: u32,
    types_len: u16,
}

/// Per-zone data of the NXDOMAIN fast path.
#[derive(Debug)]
pub(crate) struct ZoneAnswers {
    /// Labels in the apex (without the root).
    pub apex_labels: u8,
    /// The negative SOA RR without its owner (see [`record_without_owner`]).
    pub negative_soa_tail: Box<[u8]>,
    /// Where clients are (`Nearest` names of this zone).
    pub clients: ClientTable,
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
    routes: Vec<Route>,
    variant_answers: Vec<AnswerSet>,
    /// The GeoIP database `Nearest` names fall back to.
    geo: Option<Arc<GeoIpDb>>,
    /// Per route: the routed name and its variants, for reports.
    route_reports: Vec<RouteReport>,
}

/// What a routed name answers, for `explain` and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteReport {
    /// The routed owner name.
    pub name: String,
    /// `Weighted` or `Nearest`.
    pub policy: String,
    /// Per variant: the set identifiers (clusters) whose records it holds.
    pub variants: Vec<Vec<String>>,
}

/// Which variant of a routed name one client gets, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientChoice {
    /// The client's region, if placed.
    pub region: Option<String>,
    /// RFC 7871 SCOPE PREFIX-LENGTH the answer carries.
    pub scope: u8,
    /// The clusters answered (for `Weighted`: every candidate, one per answer).
    pub variants: Vec<String>,
    /// The policy.
    pub policy: String,
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
        Snapshot::build_keeping(contents, &|_| false, None).0
    }

    /// [`Snapshot::build`] with a GeoIP database for `Nearest` names.
    pub fn build_with_geoip(contents: &[(ZoneContent, u32)], geo: Option<Arc<GeoIpDb>>) -> Snapshot {
        Snapshot::build_keeping(contents, &|_| false, geo).0
    }

    /// [`Snapshot::build`], also returning the records of every zone whose
    /// apex (lower case, fully qualified) `keep` selects, as served.
    pub(crate) fn build_keeping(
        contents: &[(ZoneContent, u32)],
        keep: &dyn Fn(&Name) -> bool,
        geo: Option<Arc<GeoIpDb>>,
    ) -> (Snapshot, Vec<ZoneVersion>) {
        let (tree, mut skipped) = Tree::build(contents);
        let tables = client_tables(&tree, contents, &mut skipped);
        let versions = tree.versions(keep);
        let query_types = tree.query_types();
        let mut snapshot = Snapshot {
            zones: tree
                .zones
                .iter()
                .zip(tables)
                .map(|(zone, clients)| ZoneAnswers {
                    apex_labels: zone.apex.num_labels(),
                    negative_soa_tail: record_without_owner(&zone.negative_soa)
                        .unwrap_or_default()
                        .into_boxed_slice(),
                    clients,
                })
                .collect(),
            geo,
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
        // Every routed name: its query-time route and the RRsets of each
        // variant it renders.
        let mut route_sets: Vec<Vec<VariantSets>> = Vec::with_capacity(tree.routed.len());
        for routed in &tree.routed {
            let (route, sets, report) = route_of(routed, &snapshot.zones[routed.zone].clients);
            snapshot.routes.push(route);
            snapshot.route_reports.push(report);
            route_sets.push(sets);
        }
        let mut needs_tree = false;
        let mut answers: Vec<(u16, Vec<u8>)> = Vec::new();
        for (key, node) in &tree.nodes {
            let touched: std::cell::Cell<Option<usize>> = std::cell::Cell::new(None);
            let render_type = |qtype: RecordType, variant: Override<'_>| -> Option<Vec<u8>> {
                let (resolution, routed) = tree.resolve_routed(&node.name, qtype, variant)?;
                if touched.get().is_none() {
                    touched.set(routed);
                }
                render(&node.name, ABSENT_TYPE, &resolution)
            };
            let Some(other) = render_type(ABSENT_TYPE, None) else {
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason: "its answer could not be encoded".into(),
                });
                continue;
            };
            answers.clear();
            for &qtype in &query_types {
                if let Some(bytes) = render_type(qtype, None) {
                    if bytes != other {
                        answers.push((u16::from(qtype), bytes));
                    }
                }
            }
            if let Some(largest) = std::iter::once(other.len())
                .chain(answers.iter().map(|(_, bytes)| bytes.len()))
                .max()
                .filter(|len| *len > MAX_STORED_MESSAGE)
            {
                // Still stored (clients get TC), but said: no transport can
                // carry it, and nothing else would tell the operator.
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "*".into(),
                    reason: format!(
                        "its answer is {largest} octets, more than one DNS message holds (65,535, RFC 1035 §4.2.2, \
                         less room for OPT); clients get TC and no records: publish fewer targets under this name"
                    ),
                });
            }
            needs_tree |= node.cut.is_some() || node.wildcard_child;
            let Some(mut entry) = snapshot.store_name(
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
            if let Some(route) = touched.get() {
                // The answer goes through a routed name: one answer set per variant.
                let start = snapshot.variant_answers.len() as u32;
                let mut complete = true;
                for sets in &route_sets[route] {
                    let variant = Some((route, sets));
                    let Some(other) = render_type(ABSENT_TYPE, variant) else {
                        complete = false;
                        break;
                    };
                    answers.clear();
                    for &qtype in &query_types {
                        if let Some(bytes) = render_type(qtype, variant) {
                            if bytes != other {
                                answers.push((u16::from(qtype), bytes));
                            }
                        }
                    }
                    match snapshot.store_set(&other, &answers) {
                        Some(set) => snapshot.variant_answers.push(set),
                        None => complete = false,
                    }
                }
                if complete {
                    entry.route = route as u32;
                    entry.variants_start = start;
                } else {
                    snapshot.variant_answers.truncate(start as usize);
                    skipped.push(SkippedRecord {
                        name: node.name.to_ascii(),
                        record_type: "*".into(),
                        reason: "a policy variant could not be encoded; every variant is answered together".into(),
                    });
                }
            }
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
        })
    }

    /// Appends one answer set (the answer for absent types and the
    /// answers of other types) to the arena.
    fn store_set(&mut self, other: &[u8], answers: &[(u16, Vec<u8>)]) -> Option<AnswerSet> {
        let total = other.len() + answers.iter().map(|(_, a)| a.len()).sum::<usize>();
        if self.arena.len() + total > u32::MAX as usize {
            return None;
        }
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
        Some(AnswerSet {
            other,
            types_start,
            types_len: answers.len() as u16,
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

    /// The stored response of `entry` for `qtype` for a client at
    /// `client` (None: unknown, e.g. an ECS option with SOURCE
    /// PREFIX-LENGTH 0), and the SCOPE PREFIX-LENGTH (RFC 7871 §7.2.1) it
    /// holds for: 0 unless the answer depends on the client's address.
    #[inline]
    pub(crate) fn response(&self, entry: &NameAnswers, qtype: u16, client: Option<IpAddr>) -> (&[u8], u8) {
        if entry.route == NO_ROUTE {
            return (
                self.answer_of(entry.other, entry.types_start, entry.types_len, qtype),
                0,
            );
        }
        let (variant, scope) = self.pick(entry.route as usize, client);
        let set = self.variant_answers[entry.variants_start as usize + variant];
        (self.answer_of(set.other, set.types_start, set.types_len, qtype), scope)
    }

    /// The variant of route `route` a client gets, and the scope.
    #[inline]
    fn pick(&self, route: usize, client: Option<IpAddr>) -> (usize, u8) {
        match &self.routes[route] {
            Route::Weighted { cumulative } => (weighted_pick(cumulative), 0),
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
        }
    }

    #[inline]
    fn answer_of(&self, other: Span, types_start: u32, types_len: u16, qtype: u16) -> &[u8] {
        let start = types_start as usize;
        // A handful of entries: a linear scan beats anything cleverer.
        for (t, span) in &self.type_answers[start..start + types_len as usize] {
            if *t == qtype {
                return self.slice(*span);
            }
        }
        self.slice(other)
    }

    /// Every routed name, with its policy and variants.
    pub fn routes(&self) -> &[RouteReport] {
        &self.route_reports
    }

    /// Which variant of the routed name `name` (lower case, fully
    /// qualified, e.g. `www.example.com.`) a client at `client` gets;
    /// `None` when the name has no policy.
    pub fn choice_for(&self, name: &str, client: Option<IpAddr>) -> Option<ClientChoice> {
        let route = self.route_reports.iter().position(|r| r.name == name)?;
        let report = &self.route_reports[route];
        let (region, scope) = match (&self.routes[route], client) {
            (Route::Nearest { zone, .. }, Some(addr)) => {
                let table = &self.zones[*zone as usize].clients;
                let placed = table.place(addr, self.geo.as_deref());
                (table.regions.get(placed.region as usize).cloned(), placed.scope)
            }
            _ => (None, 0),
        };
        let variants = match &self.routes[route] {
            Route::Weighted { .. } => report.variants.iter().flatten().cloned().collect(),
            Route::Nearest { .. } => report.variants[self.pick(route, client).0].clone(),
        };
        Some(ClientChoice {
            region,
            scope,
            variants,
            policy: report.policy.clone(),
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
        self.table.len()
    }

    /// Octets of stored keys and answers.
    pub fn arena_bytes(&self) -> usize {
        self.arena.len()
    }

    /// The GeoIP database in use, if any.
    pub fn geoip(&self) -> Option<&GeoIpDb> {
        self.geo.as_deref()
    }

    /// The slow path: resolve and render at query time.
    pub(crate) fn render_now(&self, qname: &Name, qtype: RecordType) -> Option<Vec<u8>> {
        let resolution = self.tree.as_ref()?.resolve(&qname.to_lowercase(), qtype)?;
        render(qname, qtype, &resolution)
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
                .routed
                .iter()
                .filter(|r| r.zone == index)
                .flat_map(|r| r.regions.iter().flatten().map(String::as_str))
                .collect();
            let Some((content, _)) = content else {
                return ClientTable::default();
            };
            let (table, problems) = ClientTable::build(&content.client_regions, &regions);
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
fn route_of(routed: &crate::tree::RoutedNode, table: &ClientTable) -> (Route, Vec<VariantSets>, RouteReport) {
    let mut report = RouteReport {
        name: routed.name.to_ascii().to_lowercase(),
        policy: String::new(),
        variants: Vec::new(),
    };
    match &routed.policy {
        RoutingPolicy::Weighted => {
            report.policy = "Weighted".into();
            // Route53's semantics: weight 0 gets nothing while any
            // variant has weight; when all are 0, all share equally.
            let any = routed.weights.iter().any(|&w| w > 0);
            let mut total = 0u32;
            let cumulative: Vec<u32> = routed
                .weights
                .iter()
                .map(|&w| {
                    total = total.saturating_add(if any { w } else { 1 });
                    total
                })
                .collect();
            report.variants = routed.ids.iter().map(|id| vec![id.clone()]).collect();
            (
                Route::Weighted {
                    cumulative: cumulative.into_boxed_slice(),
                },
                routed.sets.clone(),
                report,
            )
        }
        RoutingPolicy::Nearest { fallback } => {
            report.policy = "Nearest".into();
            let variants: Vec<crate::RoutedVariant> = routed
                .regions
                .iter()
                .zip(&routed.ids)
                .map(|(region, id)| crate::RoutedVariant {
                    id: id.clone(),
                    weight: 0,
                    region: region.clone(),
                    records: Vec::new(),
                })
                .collect();
            let (sets, by_region, unknown) = nearest_sets(&variants, fallback, table);
            let rendered: Vec<VariantSets> = sets
                .iter()
                .map(|set| merge_sets(set.iter().map(|&i| &routed.sets[i])))
                .collect();
            report.variants = sets
                .iter()
                .map(|set| set.iter().map(|&i| routed.ids[i].clone()).collect())
                .collect();
            (
                Route::Nearest {
                    zone: routed.zone as u32,
                    by_region: by_region.into_boxed_slice(),
                    unknown,
                },
                rendered,
                report,
            )
        }
    }
}

/// The union of several variants' RRsets (smallest TTL per type).
fn merge_sets<'a>(sets: impl Iterator<Item = &'a VariantSets>) -> VariantSets {
    let mut out = VariantSets::new();
    for sets in sets {
        for (rtype, set) in sets {
            let merged = out.entry(*rtype).or_insert(RRset {
                ttl: set.ttl,
                rdatas: Vec::new(),
            });
            merged.ttl = merged.ttl.min(set.ttl);
            for rdata in &set.rdatas {
                if !merged.rdatas.contains(rdata) {
                    merged.rdatas.push(rdata.clone());
                }
            }
        }
    }
    for set in out.values_mut() {
        set.rdatas.sort_by_key(|r| r.to_string());
    }
    out
}
