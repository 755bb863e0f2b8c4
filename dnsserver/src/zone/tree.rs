//! The build-time view of the served zones: names, RRsets, routed names,
//! and what replacing one owner's records changes. The answer algorithm
//! run over it is `resolve.rs`.

use std::collections::{BTreeMap, BTreeSet};

use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use rustc_hash::{FxHashMap, FxHashSet};

use super::content::ZoneContent;
use super::rdatas::Rdatas;
use super::routing::RoutingPolicy;
use super::version::ZoneVersion;

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

/// The name whose [`wire_key`] is `key`; `None` for a malformed key.
pub(crate) fn name_of_key(key: &[u8]) -> Option<Name> {
    let mut labels: Vec<&[u8]> = Vec::new();
    let mut at = 0;
    loop {
        let len = *key.get(at)? as usize;
        if len == 0 {
            break;
        }
        labels.push(key.get(at + 1..at + 1 + len)?);
        at += 1 + len;
    }
    let mut name = Name::from_labels(labels).ok()?;
    name.set_fqdn(true);
    Some(name)
}

/// One RRset: shared TTL (RFC 2181 §5.2) and its RDATA.
#[derive(Debug, Clone)]
pub(crate) struct RRset {
    pub ttl: u32,
    pub rdatas: Rdatas,
}

/// The RRsets of one owner (or one variant of a routed name) by type, in
/// type order. A sorted vector: most owners hold one or two types, and a
/// `BTreeMap` node would cost about 400 octets per owner, kept for as
/// long as the tree is (see [`crate::ZoneStore::publish_changes`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct RRsets(Vec<(RecordType, RRset)>);

impl RRsets {
    pub fn new() -> Self {
        RRsets(Vec::new())
    }

    fn position(&self, rtype: RecordType) -> Result<usize, usize> {
        self.0.binary_search_by(|(t, _)| t.cmp(&rtype))
    }

    pub fn get(&self, rtype: &RecordType) -> Option<&RRset> {
        self.position(*rtype).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, rtype: &RecordType) -> Option<&mut RRset> {
        self.position(*rtype).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, rtype: &RecordType) -> bool {
        self.position(*rtype).is_ok()
    }

    pub fn insert(&mut self, rtype: RecordType, set: RRset) {
        match self.position(rtype) {
            Ok(i) => self.0[i].1 = set,
            Err(i) => self.0.insert(i, (rtype, set)),
        }
    }

    /// The RRset of `rtype`, inserting `set` first when there is none.
    pub fn get_or_insert(&mut self, rtype: RecordType, set: RRset) -> &mut RRset {
        let i = match self.position(rtype) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (rtype, set));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn remove(&mut self, rtype: &RecordType) -> Option<RRset> {
        self.position(*rtype).ok().map(|i| self.0.remove(i).1)
    }

    pub fn keys(&self) -> impl Iterator<Item = &RecordType> {
        self.0.iter().map(|(t, _)| t)
    }

    pub fn values(&self) -> impl Iterator<Item = &RRset> {
        self.0.iter().map(|(_, s)| s)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut RRset> {
        self.0.iter_mut().map(|(_, s)| s)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&RecordType, &RRset)> {
        self.0.iter().map(|(t, s)| (t, s))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Drops spare capacity (the tree is kept between publishes).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
        for (_, set) in &mut self.0 {
            set.rdatas.shrink_to_fit();
        }
    }
}

impl<'a> IntoIterator for &'a RRsets {
    type Item = (&'a RecordType, &'a RRset);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (RecordType, RRset)>,
        fn(&'a (RecordType, RRset)) -> (&'a RecordType, &'a RRset),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(t, s)| (t, s))
    }
}

impl Extend<(RecordType, RRset)> for RRsets {
    fn extend<I: IntoIterator<Item = (RecordType, RRset)>>(&mut self, iter: I) {
        for (rtype, set) in iter {
            self.insert(rtype, set);
        }
    }
}

/// One owner name, possibly an empty non-terminal (no RRsets).
#[derive(Debug)]
pub(crate) struct Node {
    /// The owner, lower case, fully qualified.
    pub name: Name,
    /// Index into [`Tree::zones`].
    pub zone: usize,
    pub rrsets: RRsets,
    /// The delegation point at or above this node (below the apex), if any.
    pub cut: Option<Key>,
    /// A `*` child exists (RFC 4592 wildcard).
    pub wildcard_child: bool,
    /// Nodes one label below this one (an empty non-terminal without
    /// children goes away).
    pub children: u32,
}

/// Per-zone facts the answer path needs.
#[derive(Debug)]
pub(crate) struct ZoneInfo {
    pub apex: Name,
    pub apex_key: Key,
    /// The SOA RR for negative answers: TTL = min(SOA TTL, MINIMUM) (RFC 2308 §3).
    pub negative_soa: Record,
    pub serial: u32,
    /// A serial answers show from a moment on: (serial, Unix time in
    /// milliseconds); see [`super::serials`].
    pub pending_serial: Option<(u32, u64)>,
    pub rrset_count: usize,
    /// Owners whose A/AAAA come from the zone settings (in-zone name
    /// server addresses); records given for them are skipped.
    pub settings_owners: Vec<Name>,
    /// [`ZoneContent::follow_cnames_across_zones`].
    pub follow_cnames_across_zones: bool,
    /// [`ZoneContent::pending`]: keys of the names inside the apex,
    /// sorted, without duplicates.
    pub pending: Vec<Key>,
    /// DNSSEC signing, if the zone is signed.
    pub dnssec: Option<super::signing_key::DnssecConfig>,
    /// TTL of the SOA RRset (the original TTL its RRSIG covers).
    pub soa_ttl: u32,
}

/// The zone's SOA record with the SOA RRset's own TTL and current serial.
pub(crate) fn apex_soa(zone: &ZoneInfo) -> Option<Record> {
    let mut soa = zone.negative_soa.clone();
    soa.ttl = zone.soa_ttl;
    Some(soa)
}

/// A record the builder left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedRecord {
    /// Owner name as given.
    pub name: String,
    /// RR type as given.
    pub record_type: String,
    /// Why it was skipped, one line.
    pub reason: String,
}

/// The RRsets one variant of a routed name holds at that name.
pub(crate) type VariantSets = RRsets;

/// A routed name as the tree keeps it (see [`super::routing::RoutedName`]).
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
    /// [`super::routing::RoutedName::max_answers`] (0 taken as none).
    pub max_answers: Option<u16>,
    /// [`super::routing::RoutedName::sticky_within`].
    pub sticky_within: Option<(u8, u8)>,
}

/// All served zones and their names.
///
/// Besides what answers need, the tree keeps what replacing one owner's
/// records later needs ([`Tree::plan`], [`Tree::apply`]): per owner the
/// hash of its records as given and its skipped records, per target name
/// the owners whose answers go through it, and per RR type its RRset count.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub zones: Vec<ZoneInfo>,
    pub nodes: FxHashMap<Key, Node>,
    /// Routed names by index (a freed index is `None` until reused);
    /// `routed_keys` finds them by key.
    routed: Vec<Option<RoutedNode>>,
    routed_free: Vec<usize>,
    pub routed_keys: FxHashMap<Key, usize>,
    /// CNAME, NS, MX and SRV target (key) -> owners whose RRsets (or
    /// routed variants) name it: their answers change with the target's.
    referrers: FxHashMap<Key, Vec<Key>>,
    /// Per zone: owner key -> hashes of its records and routed names as
    /// given (see [`record_hash`]); owners with neither are absent.
    owner_hashes: Vec<FxHashMap<Key, OwnerHashes>>,
    /// Skipped records, by (zone, owner key).
    owner_skips: BTreeMap<(usize, Key), Vec<SkippedRecord>>,
    /// RRsets per type over all nodes (the query types rendered).
    type_counts: BTreeMap<RecordType, usize>,
}

/// Hashes of what one owner was given (wrapping sums, so order does not matter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OwnerHashes {
    pub records: u64,
    pub routed: u64,
}

/// An order-independent hash of one record as given: owner (lower case,
/// fully qualified), TTL, class, type and RDATA.
pub(crate) fn record_hash(record: &Record) -> u64 {
    record_hash_at(&wire_key(&fqdn(record.name.to_lowercase())), record)
}

/// [`record_hash`] of a record whose owner's key (`wire_key` of the lower
/// case, fully qualified owner) the caller has already made.
fn record_hash_at(owner_key: &[u8], record: &Record) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    owner_key.hash(&mut hasher);
    record.ttl.hash(&mut hasher);
    u16::from(record.dns_class).hash(&mut hasher);
    u16::from(record.record_type()).hash(&mut hasher);
    record.data.hash(&mut hasher);
    hasher.finish()
}

/// A hash of one routed name as given.
pub(crate) fn routed_hash(routed: &super::routing::RoutedName) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{routed:?}").hash(&mut hasher);
    hasher.finish()
}

/// What replacing one owner's records and routed names gives, computed
/// before anything is applied (see [`Tree::plan`]).
#[derive(Debug)]
pub(crate) struct OwnerChange {
    pub zone: usize,
    pub key: Key,
    pub name: Name,
    /// The node's RRsets after the change (empty: no records); only
    /// applied when `zone` is the zone serving the name.
    rrsets: RRsets,
    routed: Option<RoutedNode>,
    skips: Vec<SkippedRecord>,
    pub hashes: OwnerHashes,
}

impl OwnerChange {
    /// Regions of the routed name's variants after the change.
    pub fn regions(&self) -> impl Iterator<Item = &str> {
        self.routed
            .iter()
            .flat_map(|r| r.regions.iter().flatten().map(String::as_str))
    }
}

/// Why a change cannot be applied incrementally (the caller publishes the
/// full content instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub String);

impl Tree {
    /// Builds the tree from zone contents with their serials. Records that
    /// cannot be served are skipped and reported, never fatal: zone-level
    /// problems are returned, per-owner ones kept in the tree
    /// ([`Tree::owner_skips`]).
    pub fn build(contents: &[(ZoneContent, u32)]) -> (Tree, Vec<SkippedRecord>) {
        let mut tree = Tree::default();
        let mut skipped = Vec::new();

        // Zones: unique apexes; deeper zones win names below them.
        let mut apexes: BTreeSet<Key> = BTreeSet::new();
        let mut accepted: Vec<&(ZoneContent, u32)> = Vec::new();
        for entry in contents {
            let apex = entry.0.apex.to_lowercase();
            if !apexes.insert(wire_key(&apex)) {
                skipped.push(skip_entry(
                    &apex,
                    RecordType::SOA,
                    "zone is given twice; the first one is served".into(),
                ));
                continue;
            }
            accepted.push(entry);
        }
        for (content, serial) in &accepted {
            let apex = fqdn(content.apex.to_lowercase());
            let zone = tree.zones.len();
            let (info, apex_sets) = zone_info(&apex, content, *serial);
            tree.zones.push(info);
            tree.owner_hashes.push(FxHashMap::default());
            tree.node_mut(&apex, zone).rrsets = apex_sets;
        }
        for (zone, (content, _)) in accepted.iter().enumerate() {
            let ttl = content.soa.ttl;
            let mut owners = Vec::new();
            for (host, ip) in &content.name_server_addresses {
                let owner = fqdn(host.to_lowercase());
                let data = match ip {
                    std::net::IpAddr::V4(v4) => RData::A((*v4).into()),
                    std::net::IpAddr::V6(v6) => RData::AAAA((*v6).into()),
                };
                let record = Record::from_rdata(owner.clone(), ttl, data);
                match tree.check_record(zone, &owner, &record) {
                    Ok(()) => {
                        merge_record(&mut tree.node_mut(&owner, zone).rrsets, &record);
                        if !owners.contains(&owner) {
                            owners.push(owner);
                        }
                    }
                    Err(reason) => skipped.push(skip_entry(&owner, record.record_type(), reason)),
                }
            }
            // Only now: the check above would refuse an owner's second address.
            tree.zones[zone].settings_owners = owners;
        }
        for (zone, (content, _)) in accepted.iter().enumerate() {
            for record in &content.records {
                let owner = fqdn(record.name.to_lowercase());
                let key = wire_key(&owner);
                let hash = record_hash(record);
                match tree.owner_hashes[zone].get_mut(&key) {
                    Some(h) => h.records = h.records.wrapping_add(hash),
                    None => {
                        tree.owner_hashes[zone].insert(
                            key.clone(),
                            OwnerHashes {
                                records: hash,
                                routed: 0,
                            },
                        );
                    }
                }
                match tree.check_record(zone, &owner, record) {
                    Ok(()) => merge_record(&mut tree.node_mut(&owner, zone).rrsets, record),
                    Err(reason) => tree.owner_skips.entry((zone, key)).or_default().push(skip_entry(
                        &owner,
                        record.record_type(),
                        reason,
                    )),
                }
            }
        }
        for (zone, (content, _)) in accepted.iter().enumerate() {
            for routed in &content.routed {
                let owner = fqdn(routed.name.to_lowercase());
                let key = wire_key(&owner);
                let hashes = tree.owner_hashes[zone].entry(key.clone()).or_default();
                hashes.routed = hashes.routed.wrapping_add(routed_hash(routed));
                // Only this zone's records count: another zone's node at
                // the name (a more specific zone holding it) is no plain
                // record of this routed name, and the incremental path
                // judges it the same way.
                let node = tree
                    .nodes
                    .get(&key)
                    .filter(|n| n.zone == zone)
                    .map(|n| (n.zone, &n.rrsets));
                let mut skips = Vec::new();
                let already = tree.routed_keys.contains_key(&key);
                if let Some(node) = routed_node(zone, &owner, routed, node, already, &mut skips) {
                    tree.insert_routed(key.clone(), node);
                }
                if !skips.is_empty() {
                    tree.owner_skips.entry((zone, key)).or_default().extend(skips);
                }
            }
        }
        for (key, node) in tree.nodes.iter_mut() {
            node.rrsets.shrink_to_fit();
            if let Some(skip) = enforce_cname_exclusivity(&node.name, &mut node.rrsets) {
                tree.owner_skips.entry((node.zone, key.clone())).or_default().push(skip);
            }
        }
        tree.add_empty_non_terminals();
        tree.mark_cuts_and_wildcards();
        let mut counts = vec![0; tree.zones.len()];
        let mut parents: Vec<Key> = Vec::new();
        for (key, node) in &tree.nodes {
            counts[node.zone] += node.rrsets.len();
            for rtype in node.rrsets.keys() {
                *tree.type_counts.entry(*rtype).or_default() += 1;
            }
            if node.name.num_labels() > tree.zones[node.zone].apex.num_labels() {
                parents.push(wire_key(&node.name.base_name()));
            }
            for target in targets(&node.rrsets) {
                add_referrer(&mut tree.referrers, target, key);
            }
        }
        for parent in parents {
            if let Some(node) = tree.nodes.get_mut(&parent) {
                node.children += 1;
            }
        }
        let routed_targets: Vec<(Key, Key)> = tree
            .routed_keys
            .iter()
            .filter_map(|(key, &i)| Some((key, tree.routed.get(i)?.as_ref()?)))
            .flat_map(|(key, node)| node.sets.iter().flat_map(targets).map(move |t| (t, key.clone())))
            .collect();
        for (target, key) in routed_targets {
            add_referrer(&mut tree.referrers, target, &key);
        }
        for (zone, count) in tree.zones.iter_mut().zip(counts) {
            zone.rrset_count = count;
        }
        (tree, skipped)
    }

    /// Records skipped per owner (record checks, routed names, CNAME
    /// exclusivity), in owner order.
    pub fn owner_skips(&self) -> impl Iterator<Item = &SkippedRecord> {
        self.owner_skips.values().flatten()
    }

    /// The wrapping sums of the record and routed-name hashes of every
    /// owner of `zone` (see [`OwnerHashes`]).
    pub fn hash_sums(&self, zone: usize) -> (u64, u64) {
        self.owner_hashes.get(zone).map_or((0, 0), |owners| {
            owners.values().fold((0u64, 0u64), |(records, routed), h| {
                (records.wrapping_add(h.records), routed.wrapping_add(h.routed))
            })
        })
    }

    /// The hashes of what `zone`'s owner `key` was given.
    pub fn owner_hashes(&self, zone: usize, key: &[u8]) -> OwnerHashes {
        self.owner_hashes
            .get(zone)
            .and_then(|m| m.get(key))
            .copied()
            .unwrap_or_default()
    }

    /// The routed name of index `index` (see [`Tree::resolve_routed`]).
    pub fn routed(&self, index: usize) -> Option<&RoutedNode> {
        self.routed.get(index)?.as_ref()
    }

    /// Every routed name with its index.
    pub fn routed_nodes(&self) -> impl Iterator<Item = (usize, &RoutedNode)> {
        self.routed
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, r.as_ref()?)))
    }

    /// Sets the serial zone `zone`'s answers show from a moment on
    /// (`None`: none).
    pub fn set_pending_serial(&mut self, zone: usize, pending: Option<(u32, u64)>) {
        if let Some(info) = self.zones.get_mut(zone) {
            info.pending_serial = pending;
        }
    }

    /// Sets zone `zone`'s serial: its SOA RRset and negative SOA.
    pub fn set_serial(&mut self, zone: usize, serial: u32) {
        let Some(info) = self.zones.get_mut(zone) else {
            return;
        };
        info.serial = serial;
        if let RData::SOA(soa) = &mut info.negative_soa.data {
            soa.serial = serial;
        }
        if let Some(set) = self
            .nodes
            .get_mut(&info.apex_key)
            .and_then(|n| n.rrsets.get_mut(&RecordType::SOA))
        {
            for rdata in set.rdatas.others_mut() {
                if let RData::SOA(soa) = rdata {
                    soa.serial = serial;
                }
            }
        }
    }

    /// Why `record` given for `owner` (lower case, fully qualified) in
    /// `zone` cannot be served, if it cannot.
    fn check_record(&self, zone: usize, owner: &Name, record: &Record) -> Result<(), String> {
        let placed = self.check_owner(zone, owner);
        self.check_record_at(zone, owner, placed.as_ref().map_err(String::as_str).copied(), record)
    }

    /// The checks of [`Tree::check_record`] that depend on the owner only:
    /// the name is inside zone `zone` and no more specific zone holds it.
    fn check_owner(&self, zone: usize, owner: &Name) -> Result<(), String> {
        let apex = &self.zones[zone].apex;
        if !apex.zone_of(owner) {
            return Err(format!("name is outside zone {apex}"));
        }
        if let Some(deeper) = self
            .zones
            .iter()
            .map(|z| &z.apex)
            .find(|other| other.num_labels() > apex.num_labels() && apex.zone_of(other) && other.zone_of(owner))
        {
            return Err(format!("name belongs to the more specific zone {deeper}"));
        }
        Ok(())
    }

    /// [`Tree::check_record`] with the owner's checks already made
    /// (`placed`, from [`Tree::check_owner`]): one owner's many records
    /// check its placement once.
    fn check_record_at(
        &self,
        zone: usize,
        owner: &Name,
        placed: Result<(), &str>,
        record: &Record,
    ) -> Result<(), String> {
        let apex = &self.zones[zone].apex;
        let rtype = record.record_type();
        if record.dns_class != DNSClass::IN {
            return Err(format!("class {} is not served; only IN", record.dns_class));
        }
        placed.map_err(str::to_owned)?;
        match rtype {
            RecordType::SOA => return Err("SOA records come from the zone settings".into()),
            RecordType::OPT | RecordType::ANY | RecordType::AXFR | RecordType::IXFR => {
                return Err("meta type cannot be served".into())
            }
            RecordType::NS | RecordType::CNAME if owner == apex => {
                return Err("apex NS come from the zone settings; a CNAME cannot sit at the apex".into())
            }
            _ => {}
        }
        if record.data.record_type() != rtype {
            return Err("RDATA does not match the type".into());
        }
        if self.zones[zone].settings_owners.contains(owner) {
            return Err("name is an in-zone name server; its addresses come from the zone settings".into());
        }
        Ok(())
    }

    fn insert_routed(&mut self, key: Key, node: RoutedNode) {
        let index = match self.routed_free.pop() {
            Some(index) => {
                self.routed[index] = Some(node);
                index
            }
            None => {
                self.routed.push(Some(node));
                self.routed.len() - 1
            }
        };
        self.routed_keys.insert(key, index);
    }

    /// What replacing the records of the owners in `names` (and their
    /// routed names, `routed`) of `zone` gives, without applying it.
    ///
    /// # Errors
    /// [`Unsupported`] when the change cannot be applied name by name: a
    /// wildcard or a delegation (NS below the apex) is involved, the set of
    /// RR types served changes, or a routed name is not among `names`.
    pub fn plan(
        &self,
        zone: usize,
        names: &[(Name, Vec<Record>)],
        routed: &[super::routing::RoutedName],
    ) -> Result<Vec<OwnerChange>, Unsupported> {
        let info = &self.zones[zone];
        let mut owners: Vec<(Key, Name, &[Record], Vec<&super::routing::RoutedName>)> = Vec::new();
        let mut index: FxHashMap<Key, usize> = FxHashMap::default();
        for (owner, records) in names {
            let name = fqdn(owner.to_lowercase());
            if name.iter().any(|label| label == b"*") {
                return Err(Unsupported(format!("{name} is a wildcard name")));
            }
            let key = wire_key(&name);
            match index.get(&key) {
                // Listed twice: the last listing is the owner's records.
                Some(&i) => owners[i].2 = records,
                None => {
                    index.insert(key.clone(), owners.len());
                    owners.push((key, name, records, Vec::new()));
                }
            }
        }
        for r in routed {
            let key = wire_key(&fqdn(r.name.to_lowercase()));
            match index.get(&key) {
                Some(&i) => owners[i].3.push(r),
                None => {
                    return Err(Unsupported(format!(
                        "routed name {} is not among the changed names",
                        r.name
                    )))
                }
            }
        }
        let mut changes = Vec::with_capacity(owners.len());
        for (key, name, records, routed) in owners {
            let mut skips = Vec::new();
            let mut hashes = OwnerHashes::default();
            let mut rrsets = RRsets::new();
            // What the zone settings put at this owner stays: the apex's
            // SOA and NS, an in-zone name server's addresses.
            let mut from_settings = Vec::new();
            if key == info.apex_key {
                from_settings.extend([RecordType::SOA, RecordType::NS]);
            }
            if info.settings_owners.contains(&name) {
                from_settings.extend([RecordType::A, RecordType::AAAA]);
            }
            if let Some(node) = self.nodes.get(&key).filter(|_| !from_settings.is_empty()) {
                rrsets.extend(
                    node.rrsets
                        .iter()
                        .filter(|(t, _)| from_settings.contains(t))
                        .map(|(t, s)| (*t, s.clone())),
                );
            }
            // The owner's own checks and key, once for all its records.
            let placed = self.check_owner(zone, &name);
            for record in records {
                // Names compare without regard to case (RFC 4343); `name`
                // is fully qualified, as a record's owner nearly always is.
                let own = if record.name.is_fqdn() {
                    record.name == name
                } else {
                    fqdn(record.name.clone()) == name
                };
                if !own {
                    skips.push(skip_entry(
                        &fqdn(record.name.to_lowercase()),
                        record.record_type(),
                        format!("listed under the owner {name}, not its own; left out"),
                    ));
                    continue;
                }
                hashes.records = hashes.records.wrapping_add(record_hash_at(&key, record));
                match self.check_record_at(zone, &name, placed.as_ref().map_err(String::as_str).copied(), record) {
                    Ok(()) => merge_record(&mut rrsets, record),
                    Err(reason) => skips.push(skip_entry(&name, record.record_type(), reason)),
                }
            }
            let owns = self.zone_for(&name) == Some(zone);
            let node = (!rrsets.is_empty()).then_some((zone, &rrsets));
            let mut routed_node_new = None;
            for r in routed {
                hashes.routed = hashes.routed.wrapping_add(routed_hash(r));
                if let Some(node) = routed_node(zone, &name, r, node, routed_node_new.is_some(), &mut skips) {
                    routed_node_new = Some(node);
                }
            }
            skips.extend(enforce_cname_exclusivity(&name, &mut rrsets));
            rrsets.shrink_to_fit();
            if owns && key != info.apex_key && rrsets.contains_key(&RecordType::NS) {
                return Err(Unsupported(format!("{name} becomes a delegation (NS below the apex)")));
            }
            changes.push(OwnerChange {
                zone,
                key,
                name,
                rrsets,
                routed: routed_node_new,
                skips,
                hashes,
            });
        }
        Ok(changes)
    }

    /// Applies what [`Tree::plan`] computed. Returns every name whose
    /// answers may have changed: the owners, empty non-terminals that
    /// appeared or went away, and (transitively) every owner whose CNAME,
    /// NS, MX or SRV names one of those.
    pub fn apply(&mut self, changes: Vec<OwnerChange>) -> FxHashSet<Key> {
        let mut dirty: FxHashSet<Key> = FxHashSet::default();
        self.apply_changes(changes, &mut dirty, true);
        // Names whose answers go through a changed one.
        let mut queue: Vec<Key> = dirty.iter().cloned().collect();
        while let Some(key) = queue.pop() {
            if let Some(owners) = self.referrers.get(&key) {
                for owner in owners {
                    if dirty.insert(owner.clone()) {
                        queue.push(owner.clone());
                    }
                }
            }
        }
        dirty
    }

    /// [`Tree::apply`] for a tree that is being built and not yet served
    /// (`ZoneStore::publish_in_parts`): every answer is rendered from it
    /// anyway, so which ones changed is not worked out.
    pub fn apply_unserved(&mut self, changes: Vec<OwnerChange>) {
        let mut dirty: FxHashSet<Key> = FxHashSet::default();
        self.apply_changes(changes, &mut dirty, false);
    }

    /// [`Tree::apply`] without following referrers; the owners themselves
    /// go into `dirty` only with `track` (empty non-terminals always do).
    fn apply_changes(&mut self, changes: Vec<OwnerChange>, dirty: &mut FxHashSet<Key>, track: bool) {
        for change in changes {
            let OwnerChange {
                zone,
                key,
                name,
                rrsets,
                routed,
                skips,
                hashes,
            } = change;
            if hashes == OwnerHashes::default() {
                self.owner_hashes[zone].remove(&key);
            } else {
                self.owner_hashes[zone].insert(key.clone(), hashes);
            }
            if skips.is_empty() {
                self.owner_skips.remove(&(zone, key.clone()));
            } else {
                self.owner_skips.insert((zone, key.clone()), skips);
            }
            if self.zone_for(&name) != Some(zone) {
                continue; // records of a name another zone serves: all skipped
            }
            if track {
                dirty.insert(key.clone());
            }
            // Out with the old RRsets and routed name...
            if let Some(old) = self.nodes.get(&key) {
                let old_targets: Vec<Key> = targets(&old.rrsets).collect();
                let old_types: Vec<RecordType> = old.rrsets.keys().copied().collect();
                remove_referrer(&mut self.referrers, old_targets, &key);
                self.zones[zone].rrset_count -= old_types.len();
                for t in old_types {
                    if let Some(count) = self.type_counts.get_mut(&t) {
                        *count -= 1;
                        if *count == 0 {
                            self.type_counts.remove(&t);
                        }
                    }
                }
            }
            if let Some(index) = self.routed_keys.remove(&key) {
                if let Some(old) = self.routed.get_mut(index).and_then(Option::take) {
                    remove_referrer(&mut self.referrers, old.sets.iter().flat_map(targets).collect(), &key);
                }
                self.routed_free.push(index);
            }
            // ...in with the new.
            for target in targets(&rrsets) {
                add_referrer(&mut self.referrers, target, &key);
            }
            self.zones[zone].rrset_count += rrsets.len();
            for t in rrsets.keys() {
                *self.type_counts.entry(*t).or_default() += 1;
            }
            if let Some(routed) = routed {
                for target in routed.sets.iter().flat_map(targets) {
                    add_referrer(&mut self.referrers, target, &key);
                }
                self.insert_routed(key.clone(), routed);
            }
            let apex = key == self.zones[zone].apex_key;
            match self.nodes.get_mut(&key) {
                Some(node) => {
                    node.rrsets = rrsets;
                    if node.rrsets.is_empty() && node.children == 0 && !apex {
                        self.unlink(&key, zone, dirty);
                    }
                }
                None if !rrsets.is_empty() => {
                    self.link_parent(&name, zone, dirty);
                    self.nodes.insert(
                        key,
                        Node {
                            name,
                            zone,
                            rrsets,
                            cut: None,
                            wildcard_child: false,
                            children: 0,
                        },
                    );
                }
                None => {}
            }
        }
    }

    /// A node was added for `name`: count it at its parent, adding empty
    /// non-terminals up to the first existing ancestor.
    fn link_parent(&mut self, name: &Name, zone: usize, dirty: &mut FxHashSet<Key>) {
        let apex_labels = self.zones[zone].apex.num_labels();
        let mut current = name.clone();
        while current.num_labels() > apex_labels {
            let parent = current.base_name();
            let key = wire_key(&parent);
            if let Some(node) = self.nodes.get_mut(&key) {
                node.children += 1;
                return;
            }
            self.node_mut(&parent, zone).children = 1;
            dirty.insert(key);
            current = parent;
        }
    }

    /// Removes the childless, empty node `key` and the empty
    /// non-terminals above it that are left without children.
    fn unlink(&mut self, key: &[u8], zone: usize, dirty: &mut FxHashSet<Key>) {
        let apex_labels = self.zones[zone].apex.num_labels();
        let Some(node) = self.nodes.remove(key) else {
            return;
        };
        dirty.insert(key.into());
        let mut current = node.name;
        while current.num_labels() > apex_labels {
            let parent = current.base_name();
            let pkey = wire_key(&parent);
            let Some(node) = self.nodes.get_mut(&pkey) else {
                return;
            };
            node.children = node.children.saturating_sub(1);
            if node.children > 0 || !node.rrsets.is_empty() || parent.num_labels() <= apex_labels {
                return;
            }
            self.nodes.remove(&pkey);
            dirty.insert(pkey);
            current = parent;
        }
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
                    let record = Record::from_rdata(node.name.clone(), set.ttl, rdata.into_owned());
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

    fn node_mut(&mut self, name: &Name, zone: usize) -> &mut Node {
        self.nodes.entry(wire_key(name)).or_insert_with(|| Node {
            name: name.clone(),
            zone,
            rrsets: RRsets::new(),
            cut: None,
            wildcard_child: false,
            children: 0,
        })
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

    /// The targets (CNAME, NS, MX, SRV names) of zone `zone` that are not
    /// names of the tree, each with the owners naming it.
    pub fn missing_targets(&self, zone: usize) -> impl Iterator<Item = (&Key, &Vec<Key>)> + '_ {
        self.referrers.iter().filter(move |(target, _)| {
            !self.nodes.contains_key(*target) && name_of_key(target).is_some_and(|n| self.zone_for(&n) == Some(zone))
        })
    }

    /// The key of `*.<closest encloser>` of the name whose key is `key`
    /// in zone `zone`; `None` when it would pass 255 octets.
    pub fn wildcard_of_encloser(&self, key: &[u8], zone: usize) -> Option<Key> {
        let name = name_of_key(key)?;
        let encloser = self.closest_encloser(&name, zone);
        let wildcard = Name::from_ascii("*").ok()?.append_name(&encloser.name).ok()?;
        Some(wire_key(&wildcard))
    }

    /// Adds `keys` to `dirty` with, transitively, every owner whose CNAME,
    /// NS, MX or SRV names one of them (their answers go through it).
    pub fn with_referrers(&self, keys: Vec<Key>, dirty: &mut FxHashSet<Key>) {
        let mut queue = keys;
        while let Some(key) = queue.pop() {
            if let Some(owners) = self.referrers.get(&key) {
                for owner in owners {
                    if !dirty.contains(owner) {
                        queue.push(owner.clone());
                    }
                }
            }
            dirty.insert(key);
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

    /// Every RR type present anywhere, plus the query types that behave
    /// differently from an absent type (ANY, DS at cuts).
    pub fn query_types(&self) -> Vec<RecordType> {
        let mut types: BTreeSet<RecordType> = self.type_counts.keys().copied().collect();
        types.insert(RecordType::ANY);
        types.insert(RecordType::DS);
        types.into_iter().collect()
    }
}

fn skip_entry(name: &Name, rtype: RecordType, reason: String) -> SkippedRecord {
    SkippedRecord {
        name: name.to_ascii(),
        record_type: rtype.to_string(),
        reason,
    }
}

/// Zone facts and the apex's SOA and NS RRsets from a zone's settings.
fn zone_info(apex: &Name, content: &ZoneContent, serial: u32) -> (ZoneInfo, RRsets) {
    let soa_fields = &content.soa;
    let soa_rdata = SOA::new(
        fqdn(soa_fields.mname.clone()),
        fqdn(soa_fields.rname.clone()),
        serial,
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
    let mut sets = RRsets::new();
    sets.insert(
        RecordType::SOA,
        RRset {
            ttl: soa_fields.ttl,
            rdatas: std::iter::once(RData::SOA(soa_rdata)).collect(),
        },
    );
    if !content.name_servers.is_empty() {
        let mut targets: Vec<Name> = content.name_servers.iter().map(|n| fqdn(n.to_lowercase())).collect();
        targets.sort();
        targets.dedup();
        sets.insert(
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
    if let Some(dnssec) = &content.dnssec {
        // RFC 4035 §2.1: the apex DNSKEY RRset, TTL as the SOA's: the
        // active keys (CSK, or KSK and ZSK) and the standby ones.
        sets.insert(
            RecordType::DNSKEY,
            RRset {
                ttl: soa_fields.ttl,
                rdatas: dnssec
                    .published()
                    .into_iter()
                    .map(|key| RData::DNSSEC(hickory_proto::dnssec::rdata::DNSSECRData::DNSKEY(key.dnskey().clone())))
                    .collect(),
            },
        );
    }
    let info = ZoneInfo {
        apex_key: wire_key(apex),
        apex: apex.clone(),
        negative_soa,
        serial,
        pending_serial: None,
        rrset_count: 0,
        settings_owners: Vec::new(),
        dnssec: content.dnssec.clone(),
        soa_ttl: soa_fields.ttl,
        follow_cnames_across_zones: content.follow_cnames_across_zones,
        pending: pending_keys(apex, &content.pending),
    };
    (info, sets)
}

/// The keys of the `pending` names inside `apex`, sorted, without
/// duplicates.
fn pending_keys(apex: &Name, pending: &[Name]) -> Vec<Key> {
    let mut keys: Vec<Key> = pending
        .iter()
        .map(|name| fqdn(name.to_lowercase()))
        .filter(|name| apex.zone_of(name))
        .map(|name| wire_key(&name))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Adds one accepted record to its owner's RRsets: the smallest TTL of
/// an RRset wins (RFC 2181 §5.2), duplicates are dropped.
fn merge_record(rrsets: &mut RRsets, record: &Record) {
    let set = rrsets.get_or_insert(
        record.record_type(),
        RRset {
            ttl: record.ttl,
            rdatas: Rdatas::new(),
        },
    );
    set.ttl = set.ttl.min(record.ttl);
    if !set.rdatas.contains(&record.data) {
        set.rdatas.push(record.data.clone());
    }
}

/// The routed name `routed` of `zone` at `owner`, or `None` (reported in
/// `skips`) when the owner's node (`node`: its zone and RRsets before CNAME
/// exclusivity) has no records of this zone or holds a CNAME, when the
/// owner is `already` routed, or when no variant has records.
fn routed_node(
    zone: usize,
    owner: &Name,
    routed: &super::routing::RoutedName,
    node: Option<(usize, &RRsets)>,
    already: bool,
    skips: &mut Vec<SkippedRecord>,
) -> Option<RoutedNode> {
    let mut skip = |reason: String| {
        skips.push(SkippedRecord {
            name: owner.to_ascii(),
            record_type: "*".into(),
            reason,
        })
    };
    match node {
        Some((node_zone, rrsets)) if node_zone == zone && !rrsets.contains_key(&RecordType::CNAME) => {}
        Some(_) => {
            skip("a routed name must hold addresses, not a CNAME; policy ignored".into());
            return None;
        }
        None => {
            skip("a routed name needs its plain records too, in its own zone; policy ignored".into());
            return None;
        }
    }
    if already {
        skip("routed twice; the first policy is used".into());
        return None;
    }
    let mut node = RoutedNode {
        name: owner.clone(),
        zone,
        policy: routed.policy.clone(),
        ids: Vec::new(),
        weights: Vec::new(),
        regions: Vec::new(),
        sets: Vec::new(),
        max_answers: routed.max_answers.filter(|&n| n > 0),
        sticky_within: routed.sticky_within,
    };
    for variant in &routed.variants {
        let mut sets = VariantSets::new();
        for record in &variant.records {
            let rtype = record.record_type();
            if fqdn(record.name.to_lowercase()) != *owner
                || record.data.record_type() != rtype
                || matches!(rtype, RecordType::CNAME | RecordType::SOA | RecordType::NS)
            {
                skip(format!(
                    "variant {}: a {rtype} record that cannot be routed; left out",
                    variant.id
                ));
                continue;
            }
            merge_record(&mut sets, record);
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
        skip("no variant has records; policy ignored".into());
        return None;
    }
    Some(node)
}

/// RFC 1034 §3.6.2 / RFC 2181 §10.1: a CNAME owner has no other data,
/// and one CNAME only. Other data wins (A/AAAA beat CNAME, as the
/// desired zones already decide in `fedns-providers`).
fn enforce_cname_exclusivity(name: &Name, rrsets: &mut RRsets) -> Option<SkippedRecord> {
    if !rrsets.contains_key(&RecordType::CNAME) {
        return None;
    }
    if rrsets.len() > 1 {
        rrsets.remove(&RecordType::CNAME);
        return Some(SkippedRecord {
            name: name.to_ascii(),
            record_type: "CNAME".into(),
            reason: "a CNAME cannot share its owner with other data (RFC 1034 §3.6.2); other data kept".into(),
        });
    }
    let cname = rrsets.get_mut(&RecordType::CNAME)?;
    if cname.rdatas.len() > 1 {
        cname.rdatas.sort_by_text();
        cname.rdatas.truncate(1);
        return Some(SkippedRecord {
            name: name.to_ascii(),
            record_type: "CNAME".into(),
            reason: "more than one CNAME target (RFC 2181 §10.1); the first in sort order kept".into(),
        });
    }
    None
}

/// Keys of the names the answers at an owner with `rrsets` go through:
/// CNAME targets, and NS, MX and SRV targets (additional section).
fn targets(rrsets: &RRsets) -> impl Iterator<Item = Key> + '_ {
    rrsets.values().flat_map(|set| &set.rdatas).filter_map(|rdata| {
        let target = match &*rdata {
            RData::CNAME(c) => &c.0,
            RData::NS(ns) => &ns.0,
            RData::MX(mx) => &mx.exchange,
            RData::SRV(srv) => &srv.target,
            _ => return None,
        };
        Some(wire_key(&fqdn(target.to_lowercase())))
    })
}

fn add_referrer(referrers: &mut FxHashMap<Key, Vec<Key>>, target: Key, owner: &[u8]) {
    let owners = referrers.entry(target).or_default();
    if !owners.iter().any(|o| o.as_ref() == owner) {
        owners.push(owner.into());
    }
}

fn remove_referrer(referrers: &mut FxHashMap<Key, Vec<Key>>, targets: Vec<Key>, owner: &[u8]) {
    for target in targets {
        if let Some(owners) = referrers.get_mut(&target) {
            owners.retain(|o| o.as_ref() != owner);
            if owners.is_empty() {
                referrers.remove(&target);
            }
        }
    }
}

pub(crate) fn fqdn(mut name: Name) -> Name {
    name.set_fqdn(true);
    name
}

fn clamp_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}
