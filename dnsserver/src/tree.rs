//! The build-time view of the served zones, and the RFC 1034 §4.3.2
//! answer algorithm run over it.
//!
//! The snapshot builder runs [`Tree::resolve`] for every (name, type) worth
//! pre-rendering; the query path runs it only for the rare answers that
//! cannot be pre-rendered (wildcard synthesis, names below a zone cut).

use std::collections::{BTreeMap, BTreeSet};

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use rustc_hash::FxHashMap;

use crate::routing::RoutingPolicy;
use crate::transfer::ZoneVersion;
use crate::zone::ZoneContent;

/// Longest CNAME chain followed for one answer. Chains longer than this (or
/// looping) end with what was gathered so far, as Knot and BIND do.
pub(crate) const MAX_CNAME_CHAIN: usize = 16;

/// Lower-cased wire-format name: length-prefixed labels ending in the root
/// label (RFC 1035 §3.1). The hash key of every name.
pub(crate) type Key = Box<[u8]>;

/// The key of `name` (lower-cased, wire format, ending in 0).
pub(crate) fn wire_key(name: &Name) -> Key {
    let mut key = Vec::with_capacity(name.len() + 2);
    for label in name.iter() {
        key.push(label.len() as u8);
        key.extend(label.iter().map(u8::to_ascii_lowercase));
    }
    key.push(0);
    key.into_boxed_slice()
}

/// One RRset: shared TTL (RFC 2181 §5.2) and its RDATA.
#[derive(Debug, Clone)]
pub(crate) struct RRset {
    pub ttl: u32,
    pub rdatas: Vec<RData>,
}

/// One owner name, possibly an empty non-terminal (no RRsets).
#[derive(Debug)]
pub(crate) struct Node {
    /// The owner, lower case, fully qualified.
    pub name: Name,
    /// Index into [`Tree::zones`].
    pub zone: usize,
    pub rrsets: BTreeMap<RecordType, RRset>,
    /// The delegation point at or above this node (below the apex), if any.
    pub cut: Option<Key>,
    /// A `*` child exists (RFC 4592 wildcard).
    pub wildcard_child: bool,
}

/// Per-zone facts the answer path needs.
#[derive(Debug)]
pub(crate) struct ZoneInfo {
    pub apex: Name,
    pub apex_key: Key,
    /// The SOA RR for negative answers: TTL = min(SOA TTL, MINIMUM) (RFC 2308 §3).
    pub negative_soa: Record,
    pub serial: u32,
    pub rrset_count: usize,
}

/// A record the builder left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRecord {
    /// Owner name as given.
    pub name: String,
    /// RR type as given.
    pub record_type: String,
    /// Why it was skipped, one line.
    pub reason: String,
}

/// The outcome of the answer algorithm for one question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolution {
    pub rcode: ResponseCode,
    pub authoritative: bool,
    pub answers: Vec<Record>,
    pub authorities: Vec<Record>,
    pub additionals: Vec<Record>,
}

impl Resolution {
    fn new() -> Self {
        Resolution {
            rcode: ResponseCode::NoError,
            authoritative: true,
            answers: Vec::new(),
            authorities: Vec::new(),
            additionals: Vec::new(),
        }
    }
}

/// The RRsets one variant of a routed name holds at that name.
pub(crate) type VariantSets = BTreeMap<RecordType, RRset>;

/// A routed name as the tree keeps it (see [`crate::RoutedName`]).
#[derive(Debug)]
pub(crate) struct RoutedNode {
    pub name: Name,
    pub zone: usize,
    pub policy: RoutingPolicy,
    /// Per variant: id (set identifier), weight, region, RRsets.
    pub ids: Vec<String>,
    pub weights: Vec<u32>,
    pub regions: Vec<Option<String>>,
    pub sets: Vec<VariantSets>,
}

/// All served zones and their names.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub zones: Vec<ZoneInfo>,
    pub nodes: FxHashMap<Key, Node>,
    /// Routed names, by index; `routed_keys` finds them by key.
    pub routed: Vec<RoutedNode>,
    pub routed_keys: FxHashMap<Key, usize>,
}

/// The RRsets a resolution uses at one routed name instead of its plain
/// ones: (index into [`Tree::routed`], the variant's RRsets).
pub(crate) type Override<'a> = Option<(usize, &'a VariantSets)>;

impl Tree {
    /// Builds the tree from zone contents with their serials. Records that
    /// cannot be served are skipped and reported, never fatal.
    pub fn build(contents: &[(ZoneContent, u32)]) -> (Tree, Vec<SkippedRecord>) {
        let mut tree = Tree::default();
        let mut skipped = Vec::new();
        let skip = |skipped: &mut Vec<SkippedRecord>, name: &Name, rtype: RecordType, reason: String| {
            skipped.push(SkippedRecord {
                name: name.to_ascii(),
                record_type: rtype.to_string(),
                reason,
            });
        };

        // Zones: unique apexes; deeper zones win names below them.
        let mut apexes: BTreeSet<Key> = BTreeSet::new();
        let mut accepted: Vec<&(ZoneContent, u32)> = Vec::new();
        for entry in contents {
            let apex = entry.0.apex.to_lowercase();
            if !apexes.insert(wire_key(&apex)) {
                skip(
                    &mut skipped,
                    &apex,
                    RecordType::SOA,
                    "zone is given twice; the first one is served".into(),
                );
                continue;
            }
            accepted.push(entry);
        }

        for (content, serial) in accepted {
            let apex = fqdn(content.apex.to_lowercase());
            let zone = tree.zones.len();
            let soa_fields = &content.soa;
            let soa_rdata = SOA::new(
                fqdn(soa_fields.mname.clone()),
                fqdn(soa_fields.rname.clone()),
                *serial,
                clamp_i32(soa_fields.refresh),
                clamp_i32(soa_fields.retry),
                clamp_i32(soa_fields.expire),
                soa_fields.minimum,
            );
            let negative_soa = Record::from_rdata(
                apex.clone(),
                soa_fields.ttl.min(soa_fields.minimum),
                RData::SOA(soa_rdata.clone()),
            );
            tree.zones.push(ZoneInfo {
                apex_key: wire_key(&apex),
                apex: apex.clone(),
                negative_soa,
                serial: *serial,
                rrset_count: 0,
            });
            let apex_node = tree.node_mut(&apex, zone);
            apex_node.rrsets.insert(
                RecordType::SOA,
                RRset {
                    ttl: soa_fields.ttl,
                    rdatas: vec![RData::SOA(soa_rdata)],
                },
            );
            if !content.name_servers.is_empty() {
                let mut targets: Vec<Name> = content.name_servers.iter().map(|n| fqdn(n.to_lowercase())).collect();
                targets.sort();
                targets.dedup();
                apex_node.rrsets.insert(
                    RecordType::NS,
                    RRset {
                        ttl: soa_fields.ttl,
                        rdatas: targets
                            .into_iter()
                            .map(|t| RData::NS(hickory_proto::rr::rdata::NS(t)))
                            .collect(),
                    },
                );
            }

            for record in &content.records {
                let owner = fqdn(record.name.to_lowercase());
                let rtype = record.record_type();
                if record.dns_class != DNSClass::IN {
                    skip(
                        &mut skipped,
                        &owner,
                        rtype,
                        format!("class {} is not served; only IN", record.dns_class),
                    );
                    continue;
                }
                if !apex.zone_of(&owner) {
                    skip(&mut skipped, &owner, rtype, format!("name is outside zone {apex}"));
                    continue;
                }
                if let Some(deeper) = contents.iter().map(|c| c.0.apex.to_lowercase()).find(|other| {
                    other.num_labels() > apex.num_labels() && apex.zone_of(other) && fqdn(other.clone()).zone_of(&owner)
                }) {
                    skip(
                        &mut skipped,
                        &owner,
                        rtype,
                        format!("name belongs to the more specific zone {deeper}"),
                    );
                    continue;
                }
                match rtype {
                    RecordType::SOA => {
                        skip(
                            &mut skipped,
                            &owner,
                            rtype,
                            "SOA records come from the zone settings".into(),
                        );
                        continue;
                    }
                    RecordType::OPT | RecordType::ANY | RecordType::AXFR | RecordType::IXFR => {
                        skip(&mut skipped, &owner, rtype, "meta type cannot be served".into());
                        continue;
                    }
                    RecordType::NS | RecordType::CNAME if owner == apex => {
                        skip(
                            &mut skipped,
                            &owner,
                            rtype,
                            "apex NS come from the zone settings; a CNAME cannot sit at the apex".into(),
                        );
                        continue;
                    }
                    _ => {}
                }
                if record.data.record_type() != rtype {
                    skip(&mut skipped, &owner, rtype, "RDATA does not match the type".into());
                    continue;
                }
                let node = tree.node_mut(&owner, zone);
                let set = node.rrsets.entry(rtype).or_insert(RRset {
                    ttl: record.ttl,
                    rdatas: Vec::new(),
                });
                set.ttl = set.ttl.min(record.ttl);
                if !set.rdatas.contains(&record.data) {
                    set.rdatas.push(record.data.clone());
                }
            }
        }

        for (zone, (content, _)) in tree_zone_contents(&tree, contents) {
            for routed in &content.routed {
                tree.add_routed(zone, routed, &mut skipped);
            }
        }
        tree.enforce_cname_exclusivity(&mut skipped);
        tree.add_empty_non_terminals();
        tree.mark_cuts_and_wildcards();
        let counts: Vec<usize> = {
            let mut c = vec![0; tree.zones.len()];
            for node in tree.nodes.values() {
                c[node.zone] += node.rrsets.len();
            }
            c
        };
        for (zone, count) in tree.zones.iter_mut().zip(counts) {
            zone.rrset_count = count;
        }
        (tree, skipped)
    }

    /// The records of the zones `keep` selects (by lower-case apex), as
    /// served: one [`ZoneVersion`] per zone, for transfers.
    pub fn versions(&self, keep: &dyn Fn(&Name) -> bool) -> Vec<ZoneVersion> {
        let wanted: Vec<bool> = self.zones.iter().map(|z| keep(&z.apex)).collect();
        if !wanted.contains(&true) {
            return Vec::new();
        }
        let mut soas: Vec<Option<Record>> = vec![None; self.zones.len()];
        let mut records: Vec<Vec<Record>> = vec![Vec::new(); self.zones.len()];
        for node in self.nodes.values() {
            if !wanted[node.zone] {
                continue;
            }
            for (rtype, set) in &node.rrsets {
                for rdata in &set.rdatas {
                    let record = Record::from_rdata(node.name.clone(), set.ttl, rdata.clone());
                    if *rtype == RecordType::SOA {
                        soas[node.zone] = Some(record);
                    } else {
                        records[node.zone].push(record);
                    }
                }
            }
        }
        self.zones
            .iter()
            .zip(soas.into_iter().zip(records))
            .filter_map(|(zone, (soa, records))| Some(ZoneVersion::new(zone.apex.clone(), soa?, records)))
            .collect()
    }

    /// Adds one routed name of `zone`, or skips it (reported) when its
    /// name has no plain records, holds a CNAME, or a variant is empty.
    fn add_routed(&mut self, zone: usize, routed: &crate::RoutedName, skipped: &mut Vec<SkippedRecord>) {
        let owner = fqdn(routed.name.to_lowercase());
        let mut skip = |reason: String| {
            skipped.push(SkippedRecord {
                name: owner.to_ascii(),
                record_type: "*".into(),
                reason,
            })
        };
        let key = wire_key(&owner);
        match self.nodes.get(&key) {
            Some(node) if node.zone == zone && !node.rrsets.contains_key(&RecordType::CNAME) => {}
            Some(_) => {
                return skip("a routed name must hold addresses of its own zone, not a CNAME; policy ignored".into())
            }
            None => return skip("a routed name needs its plain records too; policy ignored".into()),
        }
        if self.routed_keys.contains_key(&key) {
            return skip("routed twice; the first policy is used".into());
        }
        let mut node = RoutedNode {
            name: owner.clone(),
            zone,
            policy: routed.policy.clone(),
            ids: Vec::new(),
            weights: Vec::new(),
            regions: Vec::new(),
            sets: Vec::new(),
        };
        for variant in &routed.variants {
            let mut sets = VariantSets::new();
            for record in &variant.records {
                let rtype = record.record_type();
                if fqdn(record.name.to_lowercase()) != owner
                    || record.data.record_type() != rtype
                    || matches!(rtype, RecordType::CNAME | RecordType::SOA | RecordType::NS)
                {
                    skip(format!(
                        "variant {}: a {rtype} record that cannot be routed; left out",
                        variant.id
                    ));
                    continue;
                }
                let set = sets.entry(rtype).or_insert(RRset {
                    ttl: record.ttl,
                    rdatas: Vec::new(),
                });
                set.ttl = set.ttl.min(record.ttl);
                if !set.rdatas.contains(&record.data) {
                    set.rdatas.push(record.data.clone());
                }
            }
            if sets.is_empty() {
                skip(format!("variant {} has no records; left out", variant.id));
                continue;
            }
            node.ids.push(variant.id.clone());
            node.weights.push(variant.weight);
            node.regions.push(variant.region.clone());
            node.sets.push(sets);
        }
        if node.sets.is_empty() {
            return skip("no variant has records; policy ignored".into());
        }
        self.routed_keys.insert(key, self.routed.len());
        self.routed.push(node);
    }

    fn node_mut(&mut self, name: &Name, zone: usize) -> &mut Node {
        self.nodes.entry(wire_key(name)).or_insert_with(|| Node {
            name: name.clone(),
            zone,
            rrsets: BTreeMap::new(),
            cut: None,
            wildcard_child: false,
        })
    }

    /// RFC 1034 §3.6.2 / RFC 2181 §10.1: a CNAME owner has no other data,
    /// and one CNAME only. Other data wins (A/AAAA beat CNAME, DESIGN.md).
    fn enforce_cname_exclusivity(&mut self, skipped: &mut Vec<SkippedRecord>) {
        for node in self.nodes.values_mut() {
            if !node.rrsets.contains_key(&RecordType::CNAME) {
                continue;
            }
            if node.rrsets.len() > 1 {
                node.rrsets.remove(&RecordType::CNAME);
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "CNAME".into(),
                    reason: "a CNAME cannot share its owner with other data (RFC 1034 §3.6.2); other data kept".into(),
                });
                continue;
            }
            let Some(cname) = node.rrsets.get_mut(&RecordType::CNAME) else {
                continue;
            };
            if cname.rdatas.len() > 1 {
                cname.rdatas.sort_by_key(|r| r.to_string());
                cname.rdatas.truncate(1);
                skipped.push(SkippedRecord {
                    name: node.name.to_ascii(),
                    record_type: "CNAME".into(),
                    reason: "more than one CNAME target (RFC 2181 §10.1); the first in sort order kept".into(),
                });
            }
        }
    }

    /// Every ancestor of a name, up to its apex, exists as a node
    /// (RFC 4592 §2.2.2: empty non-terminals answer NODATA).
    fn add_empty_non_terminals(&mut self) {
        let names: Vec<(Name, usize)> = self.nodes.values().map(|n| (n.name.clone(), n.zone)).collect();
        for (name, zone) in names {
            let apex_labels = self.zones[zone].apex.num_labels();
            let mut current = name;
            while current.num_labels() > apex_labels {
                current = current.base_name();
                let key = wire_key(&current);
                if self.nodes.contains_key(&key) {
                    break;
                }
                self.node_mut(&current, zone);
            }
        }
    }

    fn mark_cuts_and_wildcards(&mut self) {
        let mut cuts: Vec<(Key, Key)> = Vec::new();
        let mut wildcard_parents: Vec<Key> = Vec::new();
        for (key, node) in &self.nodes {
            if node.name.is_wildcard() {
                wildcard_parents.push(wire_key(&node.name.base_name()));
            }
            let apex_labels = self.zones[node.zone].apex.num_labels();
            // The highest NS-owning ancestor-or-self below the apex.
            let mut current = node.name.clone();
            let mut cut = None;
            while current.num_labels() > apex_labels {
                let ckey = wire_key(&current);
                if self
                    .nodes
                    .get(&ckey)
                    .is_some_and(|n| n.rrsets.contains_key(&RecordType::NS))
                {
                    cut = Some(ckey);
                }
                current = current.base_name();
            }
            if let Some(cut) = cut {
                cuts.push((key.clone(), cut));
            }
        }
        for (key, cut) in cuts {
            if let Some(node) = self.nodes.get_mut(&key) {
                node.cut = Some(cut);
            }
        }
        for key in wildcard_parents {
            if let Some(node) = self.nodes.get_mut(&key) {
                node.wildcard_child = true;
            }
        }
    }

    /// The zone serving `name`: the one with the longest apex containing it.
    pub fn zone_for(&self, name: &Name) -> Option<usize> {
        self.zones
            .iter()
            .enumerate()
            .filter(|(_, z)| z.apex.zone_of(name))
            .max_by_key(|(_, z)| z.apex.num_labels())
            .map(|(i, _)| i)
    }

    /// RFC 1034 §4.3.2 for one question, with RFC 4592 wildcards,
    /// referrals at zone cuts, and minimal ANY (RFC 8482 §4.1). CNAME
    /// chains are followed inside the zone of the question only, as Knot
    /// does: records of another zone would be out of bailiwick for the
    /// resolver, which discards them (RFC 2181 §5.4.1), so they only cost
    /// octets. `None`: the name is in no served zone (REFUSED).
    pub fn resolve(&self, qname: &Name, qtype: RecordType) -> Option<Resolution> {
        self.resolve_routed(qname, qtype, None).map(|(res, _)| res)
    }

    /// [`Tree::resolve`], answering the routed name of `variant` with the
    /// variant's RRsets; also returns the first routed name the answer
    /// went through (its answer depends on the variant).
    pub fn resolve_routed(
        &self,
        qname: &Name,
        qtype: RecordType,
        variant: Override<'_>,
    ) -> Option<(Resolution, Option<usize>)> {
        let mut touched = None;
        let res = self.resolve_inner(qname, qtype, variant, &mut touched)?;
        Some((res, touched))
    }

    fn resolve_inner(
        &self,
        qname: &Name,
        qtype: RecordType,
        variant: Override<'_>,
        touched: &mut Option<usize>,
    ) -> Option<Resolution> {
        let qname = fqdn(qname.clone());
        let question_zone = self.zone_for(&qname)?;
        let mut res = Resolution::new();
        let mut current = qname;
        let mut seen: Vec<Key> = Vec::new();
        for _ in 0..=MAX_CNAME_CHAIN {
            let zone = match self.zone_for(&current) {
                Some(zone) if zone == question_zone => zone,
                // The chain left the zone: the resolver continues it.
                _ => return Some(res),
            };
            let key = wire_key(&current);
            if seen.contains(&key) {
                return Some(res); // CNAME loop: stop, as Knot does
            }
            seen.push(key.clone());

            let (node, synthesized) = match self.nodes.get(&key) {
                Some(node) => (node, false),
                None => {
                    let encloser = self.closest_encloser(&current, zone);
                    if encloser.cut.is_some() {
                        self.referral(encloser, &mut res);
                        return Some(res);
                    }
                    if encloser.wildcard_child {
                        let wild = Name::from_ascii("*")
                            .and_then(|w| w.append_name(&encloser.name))
                            .ok()
                            .and_then(|w| self.nodes.get(&wire_key(&w)));
                        match wild {
                            Some(wild) => (wild, true),
                            None => return Some(self.nxdomain(zone, res)),
                        }
                    } else {
                        return Some(self.nxdomain(zone, res));
                    }
                }
            };
            if let Some(cut_key) = &node.cut {
                let at_cut = !synthesized && cut_key == &key;
                if !(at_cut && qtype == RecordType::DS) {
                    let cut = &self.nodes[cut_key];
                    self.referral(cut, &mut res);
                    return Some(res);
                }
                // DS at a cut is answered by the parent: NODATA here (no DNSSEC).
                res.authorities.push(self.zones[zone].negative_soa.clone());
                return Some(res);
            }
            let owner = current.clone();
            let mut rrsets = &node.rrsets;
            if let Some(&routed) = self.routed_keys.get(&key).filter(|_| !synthesized) {
                touched.get_or_insert(routed);
                if let Some((_, sets)) = variant.filter(|(r, _)| *r == routed) {
                    rrsets = sets;
                }
            }
            if qtype == RecordType::ANY {
                // RFC 8482 §4.1: one RRset is enough; the first in type order.
                match rrsets.iter().next() {
                    Some((rtype, set)) => push_rrset(&mut res.answers, &owner, *rtype, set),
                    None => res.authorities.push(self.zones[zone].negative_soa.clone()),
                }
                return Some(res);
            }
            if let Some(set) = rrsets.get(&qtype) {
                push_rrset(&mut res.answers, &owner, qtype, set);
                self.add_additionals(qtype, set, &mut res);
                return Some(res);
            }
            if let Some(cname) = rrsets.get(&RecordType::CNAME) {
                push_rrset(&mut res.answers, &owner, RecordType::CNAME, cname);
                match cname.rdatas.first() {
                    Some(RData::CNAME(target)) => current = fqdn(target.0.to_lowercase()),
                    _ => return Some(res),
                }
                continue;
            }
            res.authorities.push(self.zones[zone].negative_soa.clone());
            return Some(res);
        }
        Some(res)
    }

    /// The deepest existing ancestor of `name` in `zone` (the apex at worst).
    fn closest_encloser(&self, name: &Name, zone: usize) -> &Node {
        let apex_labels = self.zones[zone].apex.num_labels();
        let mut current = name.clone();
        while current.num_labels() > apex_labels {
            current = current.base_name();
            if let Some(node) = self.nodes.get(&wire_key(&current)) {
                return node;
            }
        }
        &self.nodes[&self.zones[zone].apex_key]
    }

    fn nxdomain(&self, zone: usize, mut res: Resolution) -> Resolution {
        res.rcode = ResponseCode::NXDomain;
        res.authorities.push(self.zones[zone].negative_soa.clone());
        res
    }

    /// RFC 1034 §4.3.2 step 3b: NS of the cut in authority, glue in additional.
    fn referral(&self, cut: &Node, res: &mut Resolution) {
        if res.answers.is_empty() {
            res.authoritative = false;
        }
        if let Some(ns) = cut.rrsets.get(&RecordType::NS) {
            push_rrset(&mut res.authorities, &cut.name, RecordType::NS, ns);
            for rdata in &ns.rdatas {
                if let RData::NS(target) = rdata {
                    self.push_addresses(&target.0, &mut res.additionals, true);
                }
            }
        }
    }

    /// Additional section processing (RFC 1034 §4.3.2 step 6) for NS, MX
    /// and SRV targets with addresses in the served zones.
    fn add_additionals(&self, rtype: RecordType, set: &RRset, res: &mut Resolution) {
        for rdata in &set.rdatas {
            let target = match (rtype, rdata) {
                (RecordType::NS, RData::NS(ns)) => &ns.0,
                (RecordType::MX, RData::MX(mx)) => &mx.exchange,
                (RecordType::SRV, RData::SRV(srv)) => &srv.target,
                _ => continue,
            };
            self.push_addresses(target, &mut res.additionals, false);
        }
    }

    fn push_addresses(&self, target: &Name, out: &mut Vec<Record>, glue: bool) {
        let Some(node) = self.nodes.get(&wire_key(&fqdn(target.to_lowercase()))) else {
            return;
        };
        if node.cut.is_some() && !glue {
            return; // below a cut: not authoritative data
        }
        for rtype in [RecordType::A, RecordType::AAAA] {
            if let Some(set) = node.rrsets.get(&rtype) {
                push_rrset(out, &node.name, rtype, set);
            }
        }
    }

    /// Every RR type present anywhere, plus the query types that behave
    /// differently from an absent type (ANY, DS at cuts).
    pub fn query_types(&self) -> Vec<RecordType> {
        let mut types: BTreeSet<RecordType> = self.nodes.values().flat_map(|n| n.rrsets.keys().copied()).collect();
        types.insert(RecordType::ANY);
        types.insert(RecordType::DS);
        types.into_iter().collect()
    }
}

/// The zone index each accepted content got, in build order.
fn tree_zone_contents<'a>(tree: &Tree, contents: &'a [(ZoneContent, u32)]) -> Vec<(usize, &'a (ZoneContent, u32))> {
    contents
        .iter()
        .filter_map(|entry| {
            let apex = wire_key(&fqdn(entry.0.apex.to_lowercase()));
            let zone = tree.zones.iter().position(|z| z.apex_key == apex)?;
            Some((zone, entry))
        })
        .collect::<Vec<_>>()
        .into_iter()
        // A duplicate apex maps to the first zone; keep only its first content.
        .fold(
            Vec::new(),
            |mut acc: Vec<(usize, &(ZoneContent, u32))>, (zone, entry)| {
                if !acc.iter().any(|(z, _)| *z == zone) {
                    acc.push((zone, entry));
                }
                acc
            },
        )
}

fn push_rrset(out: &mut Vec<Record>, owner: &Name, rtype: RecordType, set: &RRset) {
    debug_assert!(set.rdatas.iter().all(|r| r.record_type() == rtype));
    out.extend(
        set.rdatas
            .iter()
            .map(|rdata| Record::from_rdata(owner.clone(), set.ttl, rdata.clone())),
    );
}

fn fqdn(mut name: Name) -> Name {
    name.set_fqdn(true);
    name
}

fn clamp_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}
