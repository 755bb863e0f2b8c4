//! Incremental desired zones: a change touches only the names it affects.
//!
//! [`crate::plan::desired::desired_zones_with`] computes every zone from every
//! DNSEndpoint. Its rules (one owner per name, merging, policies, A/AAAA
//! beating CNAME) all work name by name: what a name publishes depends only
//! on the Domains, the namespace labels and the DNSEndpoints that mention
//! that name. So after a change, [`IncrementalZones::update`] finds the
//! names the changed DNSEndpoints mention (before and after), runs the same
//! computation on just the DNSEndpoints mentioning those names (each cut
//! down to those names), and replaces those names' RRsets and problems.
//! A change to the Domains or the namespace labels recomputes everything.
//!
//! One rule reaches beyond a name: outside service names, a claim also
//! conflicts with claims above and below it
//! ([`crate::plan::ownership`]). Such names are tracked in groups
//! ([`ZoneAdmission::hierarchy_group`]: a zone's names below one label
//! under its apex), and a change to one name of a group recomputes the
//! whole group; service names, nearly all names at scale, are in none.
//!
//! A DNSEndpoint counts as changed when its uid or `metadata.generation`
//! changed (the resourceVersion when it has no generation): status writes,
//! which the publisher itself makes after every publish, change nothing.
//! A new version whose endpoints hash as before ([`content_hash`]) is no
//! change either: the publisher may have published a spec before the API
//! server stored it ([`crate::source::pending`]), and the stored copy
//! arriving later needs no second computation.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use fedns_api::{names, DNSEndpoint, Domain};
use fedns_dnsserver::hickory_proto::rr::{Name, Record};
use fedns_dnsserver::{RoutedName, ZoneContent};

use crate::plan::desired::{
    desired_zones_with, DesiredRRset, DesiredZone, DesiredZones, DomainProblem, EndpointProblem,
};
use crate::plan::ownership::{NamespaceLabels, ZoneAdmission};

/// The key a name is tracked under: the normalised owner name (lower case,
/// no trailing dot), or the `dnsName` as written when it does not parse
/// (its problem is reported under that text).
fn name_key(dns_name: &str) -> String {
    names::normalize_owner_name(dns_name).unwrap_or_else(|_| dns_name.to_owned())
}

/// A name key or a `namespace/name` as the state keeps it: one allocation
/// shared by every map holding it (at 1,000,000 shards each of about
/// 340,000 name keys was held as its own `String` by the endpoint, the
/// name index and the zone: about 60 MiB more).
type Key = Arc<str>;

/// `namespace/name` of an object.
fn object_id(endpoint: &DNSEndpoint) -> String {
    format!(
        "{}/{}",
        endpoint.metadata.namespace.as_deref().unwrap_or_default(),
        endpoint.metadata.name.as_deref().unwrap_or_default()
    )
}

/// What identifies a DNSEndpoint's spec: uid, and generation (or the
/// resourceVersion where the API server keeps no generation).
fn spec_version(endpoint: &DNSEndpoint) -> (String, String) {
    let meta = &endpoint.metadata;
    let version = match meta.generation {
        Some(generation) => format!("g{generation}"),
        None => format!("r{}", meta.resource_version.as_deref().unwrap_or_default()),
    };
    (meta.uid.clone().unwrap_or_default(), version)
}

/// A content hash of a DNSEndpoint's endpoints (its whole spec).
pub fn content_hash(endpoints: &[fedns_api::Endpoint]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    endpoints.hash(&mut hasher);
    hasher.finish()
}

/// A hash of `ids` (one per Domain, in any order) and the namespace labels.
fn hash_with_labels<T: Hash + Ord>(mut ids: Vec<T>, labels: &NamespaceLabels) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    ids.sort();
    ids.hash(&mut hasher);
    for (namespace, labels) in labels {
        namespace.hash(&mut hasher);
        labels.hash(&mut hasher);
    }
    hasher.finish()
}

/// The inputs that change every zone: each Domain's identity, generation
/// and deletion, and the namespace labels.
fn base_fingerprint(domains: &[Domain], labels: &NamespaceLabels) -> u64 {
    let ids: Vec<_> = domains
        .iter()
        .map(|d| {
            let m = &d.metadata;
            (
                m.namespace.clone(),
                m.name.clone(),
                m.uid.clone(),
                m.generation,
                m.resource_version.clone().filter(|_| m.generation.is_none()),
                m.deletion_timestamp.is_some(),
            )
        })
        .collect();
    hash_with_labels(ids, labels)
}

/// The Domain spec fields no record depends on: the zone's own settings
/// and the controller's `probeAllowedNetworks`.
const SETTINGS_FIELDS: [&str; 4] = ["soa", "hostmaster", "transfer", "probeAllowedNetworks"];
/// The Domain spec fields only `Nearest` names' records depend on (their
/// variants' locations): the client table.
const REGION_FIELDS: [&str; 2] = ["clientRegions", "geoRegions"];

/// Each Domain's spec fields `fields` (camelCase), as JSON text.
fn spec_fields(domain: &Domain, keep: impl Fn(&str) -> bool) -> String {
    let mut spec = serde_json::to_value(&domain.spec).unwrap_or_default();
    if let Some(fields) = spec.as_object_mut() {
        fields.retain(|field, _| keep(field));
    }
    spec.to_string()
}

/// A hash of each Domain's client table ([`REGION_FIELDS`]).
fn regions_fingerprint(domains: &[Domain]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut tables: Vec<_> = domains
        .iter()
        .map(|d| {
            (
                d.metadata.namespace.clone(),
                d.metadata.name.clone(),
                spec_fields(d, |field| REGION_FIELDS.contains(&field)),
            )
        })
        .collect();
    tables.sort();
    tables.hash(&mut hasher);
    hasher.finish()
}

/// True when one of `endpoint`'s endpoints is a `Nearest` variant (a set
/// identifier and a region), whose records depend on the client table.
fn routes_by_region(endpoint: &DNSEndpoint) -> bool {
    endpoint.spec.endpoints.iter().any(|e| {
        !e.set_identifier.is_empty()
            && e.provider_specific
                .iter()
                .any(|p| p.name == fedns_api::routing::FEDNS_NEAREST_REGION || p.name == fedns_api::routing::AWS_REGION)
    })
}

/// The inputs that change records: as [`base_fingerprint`] but with each
/// Domain's spec in place of its generation, less [`SETTINGS_FIELDS`] and
/// [`REGION_FIELDS`]. Two states with the same value differ at most in
/// those fields, so every record computed under one holds under the
/// other, but for `Nearest` names when the client tables differ.
fn records_fingerprint(domains: &[Domain], labels: &NamespaceLabels) -> u64 {
    let ids: Vec<_> = domains
        .iter()
        .map(|d| {
            let m = &d.metadata;
            (
                m.namespace.clone(),
                m.name.clone(),
                m.uid.clone(),
                m.deletion_timestamp.is_some(),
                spec_fields(d, |field| {
                    !SETTINGS_FIELDS.contains(&field) && !REGION_FIELDS.contains(&field)
                }),
            )
        })
        .collect();
    hash_with_labels(ids, labels)
}

/// One DNSEndpoint as last seen.
#[derive(Debug)]
struct Seen {
    version: (String, String),
    /// [`content_hash`] of its endpoints.
    content: u64,
    /// Name keys of its endpoints (shared with the name index).
    names: Vec<Key>,
}

/// `namespace/name` of the DNSEndpoints mentioning one name: a sorted
/// vector, as most names have one (a `BTreeSet` node costs about 280
/// octets, one per name of every zone).
#[derive(Debug, Default)]
struct Holders(Vec<Key>);

impl Holders {
    fn insert(&mut self, id: &Key) {
        if let Err(at) = self.0.binary_search_by(|held| (**held).cmp(&**id)) {
            self.0.insert(at, id.clone());
        }
    }

    fn remove(&mut self, id: &str) {
        if let Ok(at) = self.0.binary_search_by(|held| (**held).cmp(id)) {
            self.0.remove(at);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn iter(&self) -> std::slice::Iter<'_, Key> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Holders {
    type Item = &'a Key;
    type IntoIter = std::slice::Iter<'a, Key>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// One served zone's state between updates.
#[derive(Debug)]
struct ZoneState {
    /// `namespace/name` of the Domain.
    domain: String,
    /// The zone without records or routed names (SOA, NS, transfer policy,
    /// client table).
    template: ZoneContent,
    transfer_keys: Vec<fedns_api::TsigKeyReference>,
    dnssec: Option<fedns_api::DnssecSpec>,
    /// RRsets by owner name, each sorted by type.
    names: BTreeMap<Key, Vec<DesiredRRset>>,
}

/// Records that changed in one zone: every listed owner name's records
/// replace its old ones (empty: the name has none any more), with the
/// routed names among them; the embedded server's incremental input.
pub type ZoneRecordChanges = fedns_dnsserver::ZoneChanges;

/// What one [`IncrementalZones::update`] did.
#[derive(Debug)]
pub enum Update {
    /// Nothing desired changed.
    Unchanged,
    /// Everything was recomputed: the whole desired state (records
    /// included), to publish whole.
    Full(Box<DesiredZones>),
    /// Everything is to be recomputed, in parts (a state made with
    /// [`IncrementalZones::in_parts`]): the zones' settings and the
    /// Domains' problems, without records or endpoint problems. The
    /// records come from [`IncrementalZones::next_part`], some names at a
    /// time, until it returns `None`; publish them whole, e.g. with
    /// `ZoneStore::publish_in_parts`.
    Whole(Box<DesiredZones>),
    /// Some names changed: their records per zone. The state
    /// ([`IncrementalZones::desired`]) holds the rest.
    Names(Vec<ZoneRecordChanges>),
    /// Only settings of the Domains changed (SOA values, `hostmaster`,
    /// transfers): every record stands. `settings` are the zones' new
    /// settings (no records), as in [`Update::Whole`], to publish over
    /// the records served (`ZoneStore::publish_settings`); `names` the
    /// records of names whose DNSEndpoints changed meanwhile, to apply
    /// after them, as in [`Update::Names`].
    Settings {
        settings: Box<DesiredZones>,
        names: Vec<ZoneRecordChanges>,
    },
}

/// Desired zones kept between publishes, updated name by name.
#[derive(Debug, Default)]
pub struct IncrementalZones {
    /// Keep every RRset (external providers read them); else only which
    /// names each zone has, which is all the embedded server's changes need.
    keep_rrsets: bool,
    base: Option<u64>,
    /// [`records_fingerprint`] and [`regions_fingerprint`] of the state
    /// `base` describes.
    records_base: Option<u64>,
    regions_base: Option<u64>,
    endpoints: HashMap<String, Seen>,
    /// Name key → `namespace/name` of every DNSEndpoint mentioning it.
    by_name: HashMap<Key, Holders>,
    zones: Vec<ZoneState>,
    /// Problems by name key.
    problems: HashMap<String, Vec<EndpointProblem>>,
    domain_problems: Vec<DomainProblem>,
    client_region_problems: Vec<DomainProblem>,
    /// `namespace/name` of the DNSEndpoints the last update may have
    /// changed the outcome of; None: every one (a full computation).
    touched: Option<HashSet<String>>,
    /// Names per part of a whole computation; None: whole computations
    /// are made at once ([`Update::Full`]).
    part_names: Option<usize>,
    /// Name keys a whole computation in parts has still to compute.
    pending: Vec<Key>,
    /// Name keys a whole computation in parts computed early, with a
    /// name of their hierarchy group.
    done_early: HashSet<Key>,
    /// `namespace/name` → position in the DNSEndpoints a whole computation
    /// in parts reads, made at its first part: each part made every
    /// DNSEndpoint's id to find its own few instead (at 1,000,000 shards
    /// 20,000 ids in each of about 170 parts; 2.5% of a restart's CPU).
    part_index: Option<HashMap<String, usize>>,
    /// Tracked name keys by hierarchy group (names outside service names
    /// only).
    groups: HashMap<String, HashSet<Key>>,
    /// The zones' admission rules, from the Domains of the last update.
    admissions: Vec<ZoneAdmission>,
}

impl IncrementalZones {
    /// The DNSEndpoints (`namespace/name`) whose published state or
    /// problems the last [`IncrementalZones::update`] may have changed:
    /// those changed or gone, and every other one naming the same names
    /// (a name's holder can change). None: all of them.
    pub fn touched(&self) -> Option<&HashSet<String>> {
        self.touched.as_ref()
    }

    /// An empty state: the first update recomputes everything.
    /// `keep_rrsets`: keep every RRset for [`IncrementalZones::desired`]
    /// (external providers); without it only the names are kept (about
    /// 40 MiB less at 100,000 shards).
    pub fn new(keep_rrsets: bool) -> Self {
        IncrementalZones {
            keep_rrsets,
            ..Default::default()
        }
    }

    /// Makes whole computations go in parts of `names` names
    /// ([`Update::Whole`]) instead of at once: without external providers
    /// nothing needs every record at the same time, and at 1,000,000
    /// shards every record at once was about 1 GiB.
    pub fn in_parts(mut self, names: usize) -> Self {
        self.part_names = Some(names.max(1));
        self
    }

    /// Forget everything: the next update recomputes every zone.
    pub fn reset(&mut self) {
        *self = IncrementalZones {
            part_names: self.part_names,
            ..IncrementalZones::new(self.keep_rrsets)
        };
    }

    /// Brings the state up to date with `domains`, `endpoints` and
    /// `labels`, recomputing only the names whose DNSEndpoints changed
    /// (everything when the Domains or labels changed).
    pub fn update<E: std::borrow::Borrow<DNSEndpoint>>(
        &mut self,
        domains: &[Domain],
        endpoints: &[E],
        labels: &NamespaceLabels,
    ) -> Update {
        let base = base_fingerprint(domains, labels);
        let records_base = records_fingerprint(domains, labels);
        let regions_base = regions_fingerprint(domains);
        if self.base != Some(base) {
            self.admissions = domains.iter().map(ZoneAdmission::of).collect();
        }
        self.part_index = None;
        if !self.pending.is_empty() {
            // A whole computation in parts was left unfinished: begin again.
            self.pending = Vec::new();
            self.base = None;
        }
        if self.base.is_some() && self.base != Some(base) && self.records_base == Some(records_base) {
            // Only zone settings changed: every name keeps its records,
            // but `Nearest` names when the client table changed.
            if let Some(settings) = self.new_settings(domains, labels) {
                self.base = Some(base);
                if self.regions_base != Some(regions_base) {
                    // Forgotten, they count as new below: their names are
                    // computed again (their index entries are the same).
                    for endpoint in endpoints {
                        let endpoint = endpoint.borrow();
                        if routes_by_region(endpoint) {
                            self.endpoints.remove(&object_id(endpoint));
                        }
                    }
                }
                return match self.update(domains, endpoints, labels) {
                    Update::Names(names) => Update::Settings { settings, names },
                    Update::Unchanged => Update::Settings {
                        settings,
                        names: Vec::new(),
                    },
                    // Started over (cannot happen with the same zones):
                    // that result holds the new settings too.
                    other => other,
                };
            }
        }
        self.records_base = Some(records_base);
        self.regions_base = Some(regions_base);
        if self.base != Some(base) && self.part_names.is_some() {
            // The zones from the Domains alone; every name is pending.
            let settings = desired_zones_with::<DNSEndpoint>(domains, &[], labels);
            self.load(&settings, endpoints);
            self.pending = self.by_name.keys().cloned().collect();
            self.pending.sort_unstable_by(|a, b| b.cmp(a));
            self.done_early.clear();
            self.base = Some(base);
            self.touched = None;
            return Update::Whole(Box::new(settings));
        }
        if self.base != Some(base) {
            let desired = desired_zones_with(domains, endpoints, labels);
            self.load(&desired, endpoints);
            self.base = Some(base);
            self.touched = None;
            return Update::Full(Box::new(desired));
        }

        // Which names changed: those of new, changed and gone DNSEndpoints.
        let mut dirty: HashSet<Key> = HashSet::new();
        let mut touched: HashSet<String> = HashSet::new();
        let mut present: HashSet<String> = HashSet::with_capacity(endpoints.len());
        let mut by_id: HashMap<String, &DNSEndpoint> = HashMap::new();
        for endpoint in endpoints {
            let endpoint = endpoint.borrow();
            let id = object_id(endpoint);
            let version = spec_version(endpoint);
            present.insert(id.clone());
            if self.endpoints.get(&id).is_some_and(|seen| seen.version == version) {
                by_id.insert(id, endpoint);
                continue;
            }
            let content = content_hash(&endpoint.spec.endpoints);
            touched.insert(id.clone());
            if let Some(seen) = self
                .endpoints
                .get_mut(&id)
                .filter(|seen| seen.version.0 == version.0 && seen.content == content)
            {
                // A new version of the same content (a spec published
                // before it was stored, now stored): its status is due,
                // its names are as computed.
                seen.version = version;
                by_id.insert(id, endpoint);
                continue;
            }
            if let Some(old) = self.endpoints.remove(&id) {
                self.unindex(&id, &old.names);
                dirty.extend(old.names);
            }
            let names = self.index_endpoint(&id, endpoint);
            dirty.extend(names.iter().cloned());
            self.endpoints.insert(
                id.clone(),
                Seen {
                    version,
                    content,
                    names,
                },
            );
            by_id.insert(id, endpoint);
        }
        let gone: Vec<String> = self
            .endpoints
            .keys()
            .filter(|id| !present.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            touched.insert(id.clone());
            if let Some(old) = self.endpoints.remove(&id) {
                self.unindex(&id, &old.names);
                dirty.extend(old.names);
            }
        }
        if dirty.is_empty() {
            self.touched = Some(touched);
            return Update::Unchanged;
        }
        let related = self.related(&dirty);
        dirty.extend(related);

        // The same computation over the DNSEndpoints of those names only,
        // each cut down to those names.
        let holders: BTreeSet<&Key> = dirty
            .iter()
            .filter_map(|name| self.by_name.get(name))
            .flatten()
            .collect();
        touched.extend(holders.iter().map(|id| id.to_string()));
        self.touched = Some(touched);
        match self.recompute(domains, &by_id, &dirty, labels) {
            Some(changes) => Update::Names(changes),
            None => {
                // A zone the last full computation did not have: cannot
                // happen while the Domains are unchanged; start over.
                self.base = None;
                self.update(domains, endpoints, labels)
            }
        }
    }

    /// Takes the zones' settings from `domains` (whose records are as in
    /// the state: see [`records_fingerprint`]): their templates, transfer
    /// keys and the Domains' problems. None, changing nothing, when the
    /// zones come out otherwise than the state has them.
    fn new_settings(&mut self, domains: &[Domain], labels: &NamespaceLabels) -> Option<Box<DesiredZones>> {
        let settings = desired_zones_with::<DNSEndpoint>(domains, &[], labels);
        let same_zones = settings.zones.len() == self.zones.len()
            && settings
                .zones
                .iter()
                .zip(&self.zones)
                .all(|(new, old)| new.domain == old.domain && new.content.apex == old.template.apex);
        if !same_zones {
            return None;
        }
        for (new, old) in settings.zones.iter().zip(&mut self.zones) {
            old.template = template_of(&new.content);
            old.transfer_keys.clone_from(&new.transfer_keys);
            old.dnssec.clone_from(&new.dnssec);
        }
        self.domain_problems.clone_from(&settings.domain_problems);
        self.client_region_problems.clone_from(&settings.client_region_problems);
        Some(Box::new(settings))
    }

    /// The next part of a whole computation begun by [`Update::Whole`]:
    /// the records of some names, to publish with the parts before it.
    /// `None` once every name is done (and when no whole computation is
    /// under way). Give it the same Domains, DNSEndpoints and labels as
    /// the update that began it.
    pub fn next_part<E: std::borrow::Borrow<DNSEndpoint>>(
        &mut self,
        domains: &[Domain],
        endpoints: &[E],
        labels: &NamespaceLabels,
    ) -> Option<Vec<ZoneRecordChanges>> {
        let count = self.pending.len().min(self.part_names?);
        if count == 0 {
            self.part_index = None;
            return None;
        }
        let mut names: HashSet<Key> = self
            .pending
            .split_off(self.pending.len() - count)
            .into_iter()
            .filter(|name| !self.done_early.remove(name))
            .collect();
        // A name is decided with its hierarchy group: the group's other
        // names are computed now, and skipped when their turn comes.
        let related = self.related(&names);
        for name in related {
            if names.insert(name.clone()) {
                self.done_early.insert(name);
            }
        }
        let wanted: HashSet<&Key> = names.iter().filter_map(|n| self.by_name.get(n)).flatten().collect();
        // The same DNSEndpoints come with every part of one computation; a
        // list of another length is another list: indexed again.
        if self
            .part_index
            .as_ref()
            .is_some_and(|index| index.len() != endpoints.len())
        {
            self.part_index = None;
        }
        let index = self.part_index.get_or_insert_with(|| {
            endpoints
                .iter()
                .enumerate()
                .map(|(at, endpoint)| (object_id(endpoint.borrow()), at))
                .collect()
        });
        let is = |endpoint: &DNSEndpoint, id: &str| {
            id.split_once('/').is_some_and(|(namespace, name)| {
                endpoint.metadata.namespace.as_deref().unwrap_or_default() == namespace
                    && endpoint.metadata.name.as_deref().unwrap_or_default() == name
            })
        };
        let by_id: HashMap<String, &DNSEndpoint> = wanted
            .iter()
            .filter_map(|id| {
                let at = index.get(&***id).and_then(|at| endpoints.get(*at)).map(|e| e.borrow());
                // Looked up by position, the id checked: a list in another
                // order (never within one computation) is searched.
                let endpoint = match at {
                    Some(endpoint) if is(endpoint, id) => endpoint,
                    _ => endpoints.iter().map(|e| e.borrow()).find(|e| is(e, id))?,
                };
                Some((id.to_string(), endpoint))
            })
            .collect();
        match self.recompute(domains, &by_id, &names, labels) {
            Some(changes) => Some(changes),
            None => {
                // Cannot happen (the zones came from the same Domains):
                // the next update starts over, this part publishes nothing.
                tracing::warn!("a part named a zone its Domains lack; everything is recomputed on the next update");
                self.base = None;
                Some(Vec::new())
            }
        }
    }

    /// Recomputes the names `dirty` from the DNSEndpoints holding them
    /// (`by_id`: `namespace/name` → object, at least those), each cut down
    /// to those names; replaces their RRsets and problems. Returns their
    /// records per zone; None when a zone comes out that the state lacks.
    fn recompute(
        &mut self,
        domains: &[Domain],
        by_id: &HashMap<String, &DNSEndpoint>,
        dirty: &HashSet<Key>,
        labels: &NamespaceLabels,
    ) -> Option<Vec<ZoneRecordChanges>> {
        let holders: BTreeSet<&Key> = dirty
            .iter()
            .filter_map(|name| self.by_name.get(name))
            .flatten()
            .collect();
        // An object whose every name is dirty goes as it is (a whole
        // computation in parts: nearly every object), only the others as
        // a copy cut down to the dirty names.
        let cut: Vec<Cow<'_, DNSEndpoint>> = holders
            .into_iter()
            .filter_map(|id| by_id.get(&**id))
            .map(|endpoint| {
                let endpoint: &DNSEndpoint = endpoint;
                let wanted: Vec<bool> = endpoint
                    .spec
                    .endpoints
                    .iter()
                    .map(|e| dirty.contains(name_key(&e.dns_name).as_str()))
                    .collect();
                if wanted.iter().all(|w| *w) {
                    return Cow::Borrowed(endpoint);
                }
                let mut part = DNSEndpoint::new("", Default::default());
                part.metadata = endpoint.metadata.clone();
                part.spec.endpoints = endpoint
                    .spec
                    .endpoints
                    .iter()
                    .zip(&wanted)
                    .filter(|(_, wanted)| **wanted)
                    .map(|(e, _)| e.clone())
                    .collect();
                Cow::Owned(part)
            })
            .collect();
        let partial = desired_zones_with(domains, &cut, labels);

        for name in dirty {
            self.problems.remove(&**name);
        }
        for problem in partial.problems {
            self.problems
                .entry(name_key(&problem.dns_name))
                .or_default()
                .push(problem);
        }
        // Old RRsets of the dirty names go; the partial result's come in.
        let mut changes: BTreeMap<usize, BTreeMap<Key, NameRecords>> = BTreeMap::new();
        for (index, zone) in self.zones.iter_mut().enumerate() {
            for name in dirty {
                if zone.names.remove(name).is_some() {
                    changes
                        .entry(index)
                        .or_default()
                        .insert(name.clone(), (Vec::new(), None));
                }
            }
        }
        for zone in partial.zones {
            let index = self.zones.iter().position(|z| z.template.apex == zone.content.apex)?;
            let (_, names) = split_zone(zone);
            for (name, (rrsets, records, routed)) in names {
                let rrsets = if self.keep_rrsets { rrsets } else { Vec::new() };
                let name = self.shared_key(&name);
                self.zones[index].names.insert(name.clone(), rrsets);
                changes.entry(index).or_default().insert(name, (records, routed));
            }
        }
        Some(
            changes
                .into_iter()
                .map(|(index, names)| {
                    let mut out = ZoneRecordChanges {
                        apex: self.zones[index].template.apex.clone(),
                        ..Default::default()
                    };
                    for (name, (records, routed)) in names {
                        // The records carry the owner already made (a name
                        // left without records is made here).
                        let owner = match records.first() {
                            Some(record) => record.name.clone(),
                            None => match Name::from_ascii(format!("{name}.")) {
                                Ok(owner) => owner,
                                Err(_) => continue,
                            },
                        };
                        out.names.push((owner, records));
                        out.routed.extend(routed);
                    }
                    out
                })
                .collect(),
        )
    }

    /// Removes `id` from the index entries of `names`.
    fn unindex(&mut self, id: &str, names: &[Key]) {
        for name in names {
            if let Some(ids) = self.by_name.get_mut(name) {
                ids.remove(id);
                if ids.is_empty() {
                    self.by_name.remove(name);
                    if let Some(group) = self.group_of(name) {
                        if let Some(members) = self.groups.get_mut(&group) {
                            members.remove(name);
                            if members.is_empty() {
                                self.groups.remove(&group);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Adds DNSEndpoint `id` to the index entries of its names; returns
    /// their shared keys (one shared id for all of them).
    fn index_endpoint(&mut self, id: &str, endpoint: &DNSEndpoint) -> Vec<Key> {
        let id = Key::from(id);
        names_of(endpoint).iter().map(|name| self.index(name, &id)).collect()
    }

    /// Adds `id` to the index entry of `name`; returns the name's shared
    /// key.
    fn index(&mut self, name: &str, id: &Key) -> Key {
        let key = self.shared_key(name);
        let holders = self.by_name.entry(key.clone()).or_default();
        let new = holders.is_empty();
        holders.insert(id);
        if new {
            if let Some(group) = self.group_of(name) {
                self.groups.entry(group).or_default().insert(key.clone());
            }
        }
        key
    }

    /// The key of `name` the index holds already, or a new one.
    fn shared_key(&self, name: &str) -> Key {
        match self.by_name.get_key_value(name) {
            Some((key, _)) => key.clone(),
            None => Key::from(name),
        }
    }

    /// The hierarchy group of a name key (see [`ZoneAdmission::hierarchy_group`]),
    /// in the zone with the longest apex holding it.
    fn group_of(&self, name: &str) -> Option<String> {
        self.admissions
            .iter()
            .filter(|zone| !zone.apex.is_empty() && names::is_subdomain(name, &zone.apex))
            .max_by_key(|zone| zone.apex.len())?
            .hierarchy_group(name)
    }

    /// The tracked names sharing a hierarchy group with one of `names`
    /// (not those names themselves).
    fn related(&self, names: &HashSet<Key>) -> Vec<Key> {
        let groups: HashSet<String> = names.iter().filter_map(|name| self.group_of(name)).collect();
        groups
            .iter()
            .filter_map(|group| self.groups.get(group))
            .flatten()
            .filter(|name| !names.contains(*name))
            .cloned()
            .collect()
    }

    /// Replaces the whole state with a full computation's result.
    fn load<E: std::borrow::Borrow<DNSEndpoint>>(&mut self, desired: &DesiredZones, endpoints: &[E]) {
        self.endpoints.clear();
        self.by_name.clear();
        self.groups.clear();
        for endpoint in endpoints {
            let endpoint = endpoint.borrow();
            let id = object_id(endpoint);
            let names = self.index_endpoint(&id, endpoint);
            self.endpoints.insert(
                id,
                Seen {
                    version: spec_version(endpoint),
                    content: content_hash(&endpoint.spec.endpoints),
                    names,
                },
            );
        }
        self.zones = desired
            .zones
            .iter()
            .map(|zone| {
                let mut names: BTreeMap<Key, Vec<DesiredRRset>> = BTreeMap::new();
                for set in &zone.rrsets {
                    let sets = names.entry(self.shared_key(&set.name)).or_default();
                    if self.keep_rrsets {
                        sets.push(set.clone());
                    }
                }
                let template = template_of(&zone.content);
                ZoneState {
                    domain: zone.domain.clone(),
                    template,
                    transfer_keys: zone.transfer_keys.clone(),
                    dnssec: zone.dnssec.clone(),
                    names,
                }
            })
            .collect();
        self.problems.clear();
        for problem in &desired.problems {
            self.problems
                .entry(name_key(&problem.dns_name))
                .or_default()
                .push(problem.clone());
        }
        self.domain_problems = desired.domain_problems.clone();
        self.client_region_problems = desired.client_region_problems.clone();
    }

    /// The desired state for external providers and status reports: every
    /// zone's settings and every problem, and with `with_rrsets` every
    /// zone's RRsets (a copy of all of them: only providers need it; only
    /// kept when made with `keep_rrsets`). Zone
    /// contents carry no records (the embedded server has them; providers
    /// read `rrsets`).
    pub fn desired(&self, with_rrsets: bool) -> DesiredZones {
        let mut problems: Vec<EndpointProblem> = self.problems.values().flatten().cloned().collect();
        problems.sort();
        problems.dedup();
        DesiredZones {
            zones: self
                .zones
                .iter()
                .map(|zone| DesiredZone {
                    domain: zone.domain.clone(),
                    content: template_of(&zone.template),
                    rrsets: if with_rrsets {
                        zone.names.values().flatten().cloned().collect()
                    } else {
                        Vec::new()
                    },
                    transfer_keys: zone.transfer_keys.clone(),
                    dnssec: zone.dnssec.clone(),
                })
                .collect(),
            problems,
            domain_problems: self.domain_problems.clone(),
            client_region_problems: self.client_region_problems.clone(),
        }
    }

    /// Every problem, by DNSEndpoint (`namespace/name`).
    pub fn problems(&self) -> impl Iterator<Item = &EndpointProblem> {
        self.problems.values().flatten()
    }
}

/// The name keys of a DNSEndpoint's endpoints, deduplicated.
fn names_of(endpoint: &DNSEndpoint) -> Vec<String> {
    let mut names: Vec<String> = endpoint.spec.endpoints.iter().map(|e| name_key(&e.dns_name)).collect();
    names.sort();
    names.dedup();
    names
}

/// One owner name's records and routed name, as published.
type NameRecords = (Vec<Record>, Option<RoutedName>);

/// Per owner name of one computed zone: its RRsets, records and routed
/// name. Records follow the RRsets in order, one per target (as
/// `desired_zones_with` lays them out).
type NameParts = (Vec<DesiredRRset>, Vec<Record>, Option<RoutedName>);

fn split_zone(zone: DesiredZone) -> (ZoneContent, BTreeMap<String, NameParts>) {
    let mut content = zone.content;
    let records = std::mem::take(&mut content.records);
    let routed = std::mem::take(&mut content.routed);
    let mut names: BTreeMap<String, NameParts> = BTreeMap::new();
    let mut records = records.into_iter();
    for set in zone.rrsets {
        let count = set.targets.len();
        let entry = names.entry(set.name.clone()).or_default();
        entry.1.extend(records.by_ref().take(count));
        entry.0.push(set);
    }
    for name in routed {
        let key = name.name.to_ascii().trim_end_matches('.').to_ascii_lowercase();
        if let Some(entry) = names.get_mut(&key) {
            entry.2 = Some(name);
        }
    }
    (content, names)
}

/// A zone's settings without its records or routed names.
fn template_of(content: &ZoneContent) -> ZoneContent {
    ZoneContent {
        apex: content.apex.clone(),
        soa: content.soa.clone(),
        name_servers: content.name_servers.clone(),
        name_server_addresses: content.name_server_addresses.clone(),
        records: Vec::new(),
        transfer: content.transfer.clone(),
        routed: Vec::new(),
        client_regions: content.client_regions.clone(),
        dnssec: content.dnssec.clone(),
        default_client_region: content.default_client_region.clone(),
        follow_cnames_across_zones: content.follow_cnames_across_zones,
        pending: content.pending.clone(),
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    pub use fedns_api::{DNSEndpointSpec, DomainSpec, Endpoint, RecordType};

    pub fn domain() -> Domain {
        let mut d = Domain::new(
            "myfed",
            DomainSpec {
                domain: "example.com".into(),
                name_servers: vec!["ns1.example.com".into()],
                name_server_addresses: vec![],
                hostmaster: None,
                soa: Default::default(),
                allowed_namespaces: None,
                grants: vec![],
                probe_allowed_networks: vec![],
                transfer: None,
                client_regions: vec![],
                geo_regions: vec![],
                dnssec: None,
            },
        );
        d.metadata.namespace = Some("fedns-system".into());
        d.metadata.generation = Some(1);
        d
    }

    pub fn ep(dns_name: &str, rtype: RecordType, targets: &[&str]) -> Endpoint {
        Endpoint {
            dns_name: dns_name.into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            record_type: rtype,
            set_identifier: String::new(),
            record_ttl: None,
            labels: Default::default(),
            provider_specific: vec![],
        }
    }

    pub fn weighted(dns_name: &str, set: &str, weight: &str, target: &str) -> Endpoint {
        let mut e = ep(dns_name, RecordType::A, &[target]);
        e.set_identifier = set.into();
        e.provider_specific = vec![fedns_api::ProviderSpecificProperty {
            name: fedns_api::routing::AWS_WEIGHT.into(),
            value: weight.into(),
        }];
        e
    }

    pub fn object(name: &str, created: &str, generation: i64, eps: Vec<Endpoint>) -> DNSEndpoint {
        let mut d = DNSEndpoint::new(name, DNSEndpointSpec { endpoints: eps });
        d.metadata.namespace = Some("ns".into());
        d.metadata.uid = Some(format!("uid-{name}"));
        d.metadata.generation = Some(generation);
        d.metadata.creation_timestamp = Some(fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            created.parse().unwrap(),
        ));
        d
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    /// Records by owner, as the embedded server would hold them.
    type Served = BTreeMap<String, (Vec<String>, Option<String>)>;

    fn served_of(desired: &DesiredZones) -> Served {
        let mut out = Served::new();
        for zone in &desired.zones {
            for record in &zone.content.records {
                out.entry(record.name.to_ascii())
                    .or_default()
                    .0
                    .push(record.to_string());
            }
            for routed in &zone.content.routed {
                out.entry(routed.name.to_ascii()).or_default().1 = Some(format!("{routed:?}"));
            }
        }
        for value in out.values_mut() {
            value.0.sort();
        }
        out
    }

    fn apply(served: &mut Served, changes: &[ZoneRecordChanges]) {
        for zone in changes {
            for (name, records) in &zone.names {
                let mut records: Vec<String> = records.iter().map(|r| r.to_string()).collect();
                records.sort();
                let routed = zone.routed.iter().find(|r| r.name == *name).map(|r| format!("{r:?}"));
                if records.is_empty() && routed.is_none() {
                    served.remove(&name.to_ascii());
                } else {
                    served.insert(name.to_ascii(), (records, routed));
                }
            }
        }
    }

    /// After every step the incremental state, and the records the
    /// changes leave served, equal a full computation.
    #[test]
    fn every_step_equals_a_full_computation() {
        let t1 = "2026-01-01T00:00:00Z";
        let t2 = "2026-01-02T00:00:00Z";
        let steps: Vec<(&str, Vec<DNSEndpoint>)> = vec![
            (
                "start",
                vec![
                    object(
                        "e1",
                        t1,
                        1,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.1"]),
                            ep("b.example.com", RecordType::CNAME, &["x.example.net"]),
                        ],
                    ),
                    object(
                        "e2",
                        t2,
                        1,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.2"]),
                            ep("c.example.com", RecordType::A, &["192.0.2.3"]),
                        ],
                    ),
                ],
            ),
            (
                "e1 changes a target and adds an invalid name and a bad target",
                vec![
                    object(
                        "e1",
                        t1,
                        2,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.9", "not-an-ip"]),
                            ep("b.example.com", RecordType::CNAME, &["x.example.net"]),
                            ep("bad..name", RecordType::A, &["192.0.2.1"]),
                            ep("outside.example.org", RecordType::A, &["192.0.2.1"]),
                        ],
                    ),
                    object(
                        "e2",
                        t2,
                        1,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.2"]),
                            ep("c.example.com", RecordType::A, &["192.0.2.3"]),
                        ],
                    ),
                ],
            ),
            (
                "e1 goes: e2 now holds a",
                vec![object(
                    "e2",
                    t2,
                    1,
                    vec![
                        ep("a.example.com", RecordType::A, &["192.0.2.2"]),
                        ep("c.example.com", RecordType::A, &["192.0.2.3"]),
                    ],
                )],
            ),
            (
                "e3 adds a weighted name and an address beside e2's CNAME-less c",
                vec![
                    object(
                        "e2",
                        t2,
                        2,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.2"]),
                            ep("c.example.com", RecordType::CNAME, &["y.example.net"]),
                            ep("c.example.com", RecordType::A, &["192.0.2.3"]),
                        ],
                    ),
                    object(
                        "e3",
                        t2,
                        1,
                        vec![
                            weighted("w.example.com", "east", "1", "192.0.2.10"),
                            weighted("w.example.com", "west", "3", "192.0.2.11"),
                        ],
                    ),
                ],
            ),
            (
                "e3's weights change",
                vec![
                    object(
                        "e2",
                        t2,
                        2,
                        vec![
                            ep("a.example.com", RecordType::A, &["192.0.2.2"]),
                            ep("c.example.com", RecordType::CNAME, &["y.example.net"]),
                            ep("c.example.com", RecordType::A, &["192.0.2.3"]),
                        ],
                    ),
                    object(
                        "e3",
                        t2,
                        2,
                        vec![
                            weighted("w.example.com", "east", "5", "192.0.2.10"),
                            weighted("w.example.com", "west", "3", "192.0.2.12"),
                        ],
                    ),
                ],
            ),
            ("everything goes", vec![]),
        ];
        check_steps(IncrementalZones::new(true), &steps);
        // The first computation in parts, one name a part.
        check_steps(IncrementalZones::new(true).in_parts(1), &steps);
    }

    /// Names above and below each other are decided together: a change
    /// at one name changes its neighbours' outcome, and the incremental
    /// state still equals a full computation.
    #[test]
    fn hierarchical_claims_recompute_their_neighbours() {
        let of = |namespace: &str, name: &str, created: &str, generation: i64, eps: Vec<Endpoint>| {
            let mut o = object(name, created, generation, eps);
            o.metadata.namespace = Some(namespace.into());
            o.metadata.uid = Some(format!("uid-{namespace}-{name}"));
            o
        };
        let api = |created: &str| {
            of(
                "team-a",
                "api",
                created,
                1,
                vec![ep("api.example.com", RecordType::A, &["192.0.2.1"])],
            )
        };
        let below = of(
            "team-b",
            "v1",
            "2026-01-02T00:00:00Z",
            1,
            vec![
                ep("v1.api.example.com", RecordType::A, &["192.0.2.2"]),
                ep("other.example.com", RecordType::A, &["192.0.2.3"]),
            ],
        );
        let steps: Vec<(&str, Vec<DNSEndpoint>)> = vec![
            (
                "team-a holds api, team-b's v1.api below it is refused",
                vec![api("2026-01-01T00:00:00Z"), below.clone()],
            ),
            ("team-a's object goes: v1.api is published", vec![below.clone()]),
            (
                "team-a comes back, newer: api is refused now",
                vec![api("2026-01-03T00:00:00Z"), below.clone()],
            ),
            ("team-b goes: api is published", vec![api("2026-01-03T00:00:00Z")]),
        ];
        check_steps(IncrementalZones::new(true), &steps);
        check_steps(IncrementalZones::new(true).in_parts(1), &steps);
        // Starting in parts from a state where the name below comes first.
        check_steps(
            IncrementalZones::new(true).in_parts(1),
            &[("both at once", vec![api("2026-01-03T00:00:00Z"), below])],
        );
    }

    fn check_steps(mut zones: IncrementalZones, steps: &[(&str, Vec<DNSEndpoint>)]) {
        let domains = [domain()];
        let labels = NamespaceLabels::new();
        let mut served = Served::new();
        for (i, (what, objects)) in steps.iter().enumerate() {
            let full = desired_zones_with(&domains, objects, &labels);
            match zones.update(&domains, objects, &labels) {
                Update::Full(desired) => {
                    assert_eq!(i, 0, "{what}: only the first update is full");
                    served = served_of(&desired);
                }
                Update::Whole(settings) => {
                    assert_eq!(i, 0, "{what}: only the first update is whole");
                    assert!(settings.zones.iter().all(|z| z.content.records.is_empty()));
                    let mut parts = 0;
                    while let Some(changes) = zones.next_part(&domains, objects, &labels) {
                        apply(&mut served, &changes);
                        parts += 1;
                    }
                    assert!(parts >= 1, "{what}: one name a part");
                }
                Update::Names(changes) => {
                    assert!(i > 0);
                    apply(&mut served, &changes);
                }
                Update::Settings { .. } => panic!("{what}: the Domains did not change"),
                Update::Unchanged => panic!("{what}: a change was missed"),
            }
            let state = zones.desired(true);
            let rrsets = |d: &DesiredZones| d.zones.iter().flat_map(|z| z.rrsets.clone()).collect::<Vec<_>>();
            assert_eq!(rrsets(&state), rrsets(&full), "{what}: RRsets");
            assert_eq!(state.problems, full.problems, "{what}: problems");
            assert_eq!(served, served_of(&full), "{what}: served records");
            // The same objects again (a status write): nothing to do.
            assert!(
                matches!(zones.update(&domains, objects, &labels), Update::Unchanged),
                "{what}"
            );
        }
    }

    #[test]
    fn parts_find_their_objects_in_a_list_of_another_order() {
        let domains = [domain()];
        let labels = NamespaceLabels::new();
        let objects: Vec<DNSEndpoint> = (0..6)
            .map(|i| {
                object(
                    &format!("e{i}"),
                    "2026-01-01T00:00:00Z",
                    1,
                    vec![ep(&format!("n{i}.example.com"), RecordType::A, &["192.0.2.1"])],
                )
            })
            .collect();
        let full = desired_zones_with(&domains, &objects, &labels);
        let mut reversed = objects.clone();
        reversed.reverse();
        let mut zones = IncrementalZones::new(true).in_parts(2);
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Whole(_)));
        let mut served = Served::new();
        // The first part indexes the list by position; the later ones come
        // with the same objects in another order.
        let mut list: &[DNSEndpoint] = &objects;
        while let Some(changes) = zones.next_part(&domains, list, &labels) {
            apply(&mut served, &changes);
            list = &reversed;
        }
        assert_eq!(served, served_of(&full));
    }

    #[test]
    fn a_domain_change_recomputes_everything() {
        let mut domains = vec![domain()];
        let labels = NamespaceLabels::new();
        let objects = vec![object(
            "e1",
            "2026-01-01T00:00:00Z",
            1,
            vec![ep("a.example.com", RecordType::A, &["192.0.2.1"])],
        )];
        let mut zones = IncrementalZones::new(false);
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Full(_)));
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Unchanged));
        // A field records depend on (here the name servers, whose names
        // no record may take).
        domains[0].metadata.generation = Some(2);
        domains[0].spec.name_servers.push("ns2.example.com".into());
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Full(_)));

        // In parts: a whole computation left unfinished begins again.
        let mut zones = IncrementalZones::new(false).in_parts(10);
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Whole(_)));
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Whole(_)));
        while zones.next_part(&domains, &objects, &labels).is_some() {}
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Unchanged));
        domains[0].metadata.generation = Some(3);
        domains[0].spec.allowed_namespaces = Some(fedns_api::AllowedNamespaces {
            from: fedns_api::NamespacesFrom::Same,
            selector: None,
        });
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Whole(_)));
    }

    /// A client table edit (a new region) computes again only the names
    /// routed `Nearest` (their variants' locations come from the table).
    #[test]
    fn a_client_table_edit_recomputes_only_nearest_names() {
        let mut domains = vec![domain()];
        domains[0].spec.client_regions = vec![fedns_api::ClientRegion {
            cidr: "192.0.2.0/24".into(),
            region: "eu".into(),
        }];
        let labels = NamespaceLabels::new();
        let nearest = |set: &str, region: &str, target: &str| {
            let mut e = ep("near.example.com", RecordType::A, &[target]);
            e.set_identifier = set.into();
            e.provider_specific = vec![fedns_api::ProviderSpecificProperty {
                name: fedns_api::routing::FEDNS_NEAREST_REGION.into(),
                value: region.into(),
            }];
            e
        };
        let objects = vec![
            object(
                "near",
                "2026-01-01T00:00:00Z",
                1,
                vec![nearest("a", "eu", "192.0.2.1"), nearest("b", "us", "192.0.2.2")],
            ),
            object(
                "plain",
                "2026-01-01T00:00:00Z",
                1,
                vec![ep("plain.example.com", RecordType::A, &["192.0.2.3"])],
            ),
        ];
        let mut zones = IncrementalZones::new(true).in_parts(1);
        zones.update(&domains, &objects, &labels);
        while zones.next_part(&domains, &objects, &labels).is_some() {}
        domains[0].metadata.generation = Some(2);
        domains[0].spec.client_regions.push(fedns_api::ClientRegion {
            cidr: "198.51.100.0/24".into(),
            region: "us".into(),
        });
        let Update::Settings { settings, names } = zones.update(&domains, &objects, &labels) else {
            panic!("a client table edit recomputed every record");
        };
        assert_eq!(settings.zones[0].content.client_regions.networks.len(), 2);
        let changed: Vec<String> = names
            .iter()
            .flat_map(|zone| zone.names.iter().map(|(name, _)| name.to_ascii()))
            .collect();
        assert_eq!(changed, ["near.example.com."]);
        let full = desired_zones_with(&domains, &objects, &labels);
        let routed = |zone: &ZoneContent| format!("{:?}", zone.routed);
        assert_eq!(
            format!("{:?}", names[0].routed),
            routed(&full.zones[0].content),
            "the Nearest name's variants as a full computation has them"
        );
        let desired = zones.desired(true);
        assert_eq!(desired.zones[0].content, template_of(&full.zones[0].content));
        assert!(matches!(zones.update(&domains, &objects, &labels), Update::Unchanged));
    }

    /// An edit of SOA values, `hostmaster` or transfers changes no record:
    /// the zones' settings alone come out, with the names changed in the
    /// same update, and the state then equals a full computation.
    #[test]
    fn a_settings_edit_keeps_every_record() {
        let mut domains = vec![domain()];
        let labels = NamespaceLabels::new();
        let e1 = |generation, target| {
            object(
                "e1",
                "2026-01-01T00:00:00Z",
                generation,
                vec![ep("a.example.com", RecordType::A, &[target])],
            )
        };
        let e2 = object(
            "e2",
            "2026-01-01T00:00:00Z",
            1,
            vec![ep("b.example.com", RecordType::A, &["192.0.2.2"])],
        );
        for in_parts in [false, true] {
            let mut zones = IncrementalZones::new(true);
            if in_parts {
                zones = zones.in_parts(1);
            }
            let mut objects = vec![e1(1, "192.0.2.1"), e2.clone()];
            zones.update(&domains, &objects, &labels);
            while zones.next_part(&domains, &objects, &labels).is_some() {}
            domains[0].metadata.generation = Some(domains[0].metadata.generation.unwrap() + 1);
            domains[0].spec.soa.minimum += 1;
            domains[0].spec.soa.ttl += 1;
            domains[0].spec.hostmaster = Some(format!("dns{}.example.com", domains[0].spec.soa.ttl));
            domains[0].spec.transfer = Some(fedns_api::ZoneTransfer {
                allow: vec!["127.0.0.0/8".into()],
                ..Default::default()
            });
            let Update::Settings { settings, names } = zones.update(&domains, &objects, &labels) else {
                panic!("a settings edit recomputed records");
            };
            assert!(names.is_empty());
            assert!(settings.zones[0].rrsets.is_empty() && settings.zones[0].content.records.is_empty());
            assert_eq!(
                settings.zones[0].content.soa.minimum,
                domains[0].spec.soa.minimum as u32
            );
            assert_eq!(
                zones.touched().map(HashSet::len),
                Some(0),
                "no DNSEndpoint's outcome changed"
            );
            let full = desired_zones_with(&domains, &objects, &labels);
            let desired = zones.desired(true);
            assert_eq!(desired.zones[0].content, template_of(&full.zones[0].content));
            let mut want = full.zones[0].rrsets.clone();
            let mut got = desired.zones[0].rrsets.clone();
            want.sort();
            got.sort();
            assert_eq!(got, want);
            assert!(matches!(zones.update(&domains, &objects, &labels), Update::Unchanged));

            // With a DNSEndpoint changed in the same update: its names too.
            domains[0].metadata.generation = Some(domains[0].metadata.generation.unwrap() + 1);
            domains[0].spec.soa.refresh += 1;
            objects[0] = e1(2, "192.0.2.9");
            let Update::Settings { names, .. } = zones.update(&domains, &objects, &labels) else {
                panic!("a settings edit recomputed records");
            };
            let changed: Vec<String> = names
                .iter()
                .flat_map(|zone| zone.names.iter().map(|(name, _)| name.to_ascii()))
                .collect();
            assert_eq!(changed, ["a.example.com."]);
            assert_eq!(zones.touched().map(|t| t.contains("ns/e1")), Some(true));
        }
    }
}

#[cfg(test)]
mod hostile_settings_tests {
    use super::tests_support::*;
    use super::*;
    use fedns_api::RecordType;

    /// A tenant whose DNSEndpoint arrives in the same pass as a Domain
    /// settings edit (the `Update::Settings` path) takes no name of another
    /// namespace: not directly, above, below, nor through a forged registry
    /// value. The names it carries are the full computation's, every attack
    /// is a problem of the attacker, and the victim's records stay.
    #[test]
    fn a_tenants_claims_in_a_settings_edit_pass_take_no_other_namespaces_name() {
        let web = "web.shop.myfed.svc.example.com";
        let mut victim = object(
            "service-web",
            "2026-01-01T00:00:00Z",
            1,
            vec![
                ep(web, RecordType::A, &["192.0.2.10"]),
                ep("www.example.com", RecordType::A, &["192.0.2.11"]),
            ],
        );
        victim.metadata.namespace = Some("shop".into());
        let attacks = vec![
            ep(web, RecordType::A, &["203.0.113.66"]),
            ep("www.example.com", RecordType::A, &["203.0.113.66"]),
            ep("shop.myfed.svc.example.com", RecordType::NS, &["ns.attacker.test"]),
            ep(&format!("_acme-challenge.{web}"), RecordType::TXT, &["token"]),
            ep(&format!("evil.{web}"), RecordType::A, &["203.0.113.66"]),
            ep("a.www.example.com", RecordType::A, &["203.0.113.66"]),
            ep("_acme-challenge.www.example.com", RecordType::TXT, &["token"]),
            ep("example.com", RecordType::CAA, &["0 issue \"attacker.test\""]),
            ep(
                "a-www.example.com",
                RecordType::TXT,
                &["heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/shop/service-web"],
            ),
        ];
        let attacked: std::collections::BTreeSet<String> = attacks.iter().map(|e| e.dns_name.clone()).collect();
        let mut mallory = object("evil", "2026-06-01T00:00:00Z", 1, attacks);
        mallory.metadata.namespace = Some("mallory".into());
        let labels = NamespaceLabels::new();
        for in_parts in [false, true] {
            let mut domains = vec![domain()];
            let mut zones = IncrementalZones::new(true);
            if in_parts {
                zones = zones.in_parts(1);
            }
            let before = vec![victim.clone()];
            zones.update(&domains, &before, &labels);
            while zones.next_part(&domains, &before, &labels).is_some() {}
            // The settings edit and the attack, one pass.
            domains[0].metadata.generation = Some(2);
            domains[0].spec.soa.minimum += 1;
            domains[0].spec.transfer = Some(fedns_api::ZoneTransfer {
                allow: vec!["127.0.0.0/8".into()],
                ..Default::default()
            });
            let after = vec![victim.clone(), mallory.clone()];
            let Update::Settings { names, .. } = zones.update(&domains, &after, &labels) else {
                panic!("a settings edit recomputed every record");
            };
            let full = desired_zones_with(&domains, &after, &labels);
            let alone = desired_zones_with(&domains, &before, &labels);
            // The names carried hold what a full computation holds: the
            // victim's records, or nothing where only the attacker named.
            for zone in &names {
                for (owner, records) in &zone.names {
                    let want: Vec<_> = full.zones[0]
                        .content
                        .records
                        .iter()
                        .filter(|r| r.name.to_ascii() == owner.to_ascii())
                        .cloned()
                        .collect();
                    let mut records = records.clone();
                    let mut want = want;
                    records.sort_by_key(|r| format!("{r}"));
                    want.sort_by_key(|r| format!("{r}"));
                    assert_eq!(records, want, "in parts {in_parts}: {owner}");
                    assert!(
                        records
                            .iter()
                            .all(|r| !format!("{r}").contains("203.0.113.66") && !format!("{r}").contains("attacker")),
                        "in parts {in_parts}: an attacker's record at {owner}: {records:?}"
                    );
                }
            }
            let desired = zones.desired(true);
            let mut got = desired.zones[0].rrsets.clone();
            let mut want = alone.zones[0].rrsets.clone();
            got.sort();
            want.sort();
            assert_eq!(
                got, want,
                "in parts {in_parts}: the zone holds the victim's records only"
            );
            let refused: std::collections::BTreeSet<String> = desired
                .problems
                .iter()
                .filter(|p| p.namespace == "mallory")
                .map(|p| p.dns_name.clone())
                .collect();
            assert_eq!(refused, attacked, "in parts {in_parts}: every attack is reported");
            assert!(
                !desired.problems.iter().any(|p| p.namespace == "shop"),
                "in parts {in_parts}: {:?}",
                desired.problems
            );
        }
    }
}

#[cfg(test)]
mod touched_tests {
    use super::tests_support::*;
    use super::*;
    use fedns_api::RecordType;

    /// A DNSEndpoint going touches the one that now holds its name too.
    #[test]
    fn touched_names_every_dnsendpoint_of_a_changed_name() {
        let domains = [domain()];
        let labels = NamespaceLabels::new();
        let e1 = object(
            "e1",
            "2026-01-01T00:00:00Z",
            1,
            vec![ep("a.example.com", RecordType::A, &["192.0.2.1"])],
        );
        let e2 = object(
            "e2",
            "2026-01-02T00:00:00Z",
            1,
            vec![ep("a.example.com", RecordType::A, &["192.0.2.2"])],
        );
        let e3 = object(
            "e3",
            "2026-01-02T00:00:00Z",
            1,
            vec![ep("c.example.com", RecordType::A, &["192.0.2.3"])],
        );
        let mut zones = IncrementalZones::new(false);
        zones.update(&domains, &[e1.clone(), e2.clone(), e3.clone()], &labels);
        assert_eq!(zones.touched(), None, "a full computation touches every one");
        zones.update(&domains, &[e2, e3], &labels);
        let mut touched: Vec<&String> = zones.touched().unwrap().iter().collect();
        touched.sort();
        assert_eq!(touched, ["ns/e1", "ns/e2"]);
    }

    /// A spec published before it was stored (a controller's proposal,
    /// `source::pending`) comes back as a new version with the same
    /// content: its status is due, nothing is recomputed.
    #[test]
    fn the_same_content_under_a_new_version_recomputes_nothing() {
        let domains = [domain()];
        let labels = NamespaceLabels::new();
        let at = |generation, target| {
            object(
                "e1",
                "2026-01-01T00:00:00Z",
                generation,
                vec![ep("a.example.com", RecordType::A, &[target])],
            )
        };
        let mut zones = IncrementalZones::new(false);
        zones.update(&domains, &[at(1, "192.0.2.1")], &labels);
        assert!(matches!(
            zones.update(&domains, &[at(2, "192.0.2.1")], &labels),
            Update::Unchanged
        ));
        assert_eq!(
            zones.touched().map(|t| t.contains("ns/e1")),
            Some(true),
            "its status is due"
        );
        match zones.update(&domains, &[at(3, "192.0.2.7")], &labels) {
            Update::Names(changes) => assert!(!changes.is_empty(), "new content: its names are recomputed"),
            _ => panic!("a content change is a change of names"),
        }
        // A new object (another uid) of the same content is a change.
        let mut again = at(3, "192.0.2.7");
        again.metadata.uid = Some("uid-other".into());
        assert!(matches!(zones.update(&domains, &[again], &labels), Update::Names(_)));
    }
}
