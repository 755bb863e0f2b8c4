//! Traffic policies: one owner name, several pre-rendered answers, one
//! picked per query.
//!
//! The publishing pipeline hands a zone its [`RoutedName`]s (the variants
//! of a name: one per cluster, with a weight and a region) and its
//! [`ClientRegions`] (where clients are: a CIDR table and GeoIP country or
//! continent codes). At snapshot build time every variant's answer is
//! rendered ([`super::snapshot`]); here live the query-time pieces:
//! * [`Route`]: how a query picks a variant: a weighted random pick
//!   (`Weighted`) or the client's region (`Nearest`);
//! * [`ClientTable`]: a client address → region lookup over sorted,
//!   disjoint intervals (longest prefix of the CIDR table wins), falling
//!   back to a GeoIP database; it also gives the RFC 7871 SCOPE
//!   PREFIX-LENGTH: the shortest prefix of the client's address whose
//!   whole block gets the same region;
//! * [`GeoIpDb`]: a MaxMind DB file read with the `maxminddb` crate.
//!
//! Nothing here allocates per query.

use std::cell::Cell;
use std::net::IpAddr;
use std::path::Path;

use hickory_proto::rr::Record;
use ipnet::IpNet;

/// How the variants of a [`RoutedName`] are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RoutingPolicy {
    /// One variant per answer, with probability weight/Σ weights; when
    /// every weight is 0, uniformly (Route53's weighted semantics).
    Weighted,
    /// `Weighted`, sticky per client subnet: the client's address cut to
    /// `v4_prefix` (IPv4) or `v6_prefix` (IPv6) bits always gets the same
    /// variant while that variant stays. The variant is chosen by weighted
    /// rendezvous (highest random weight) hashing of the subnet, so each
    /// variant still gets its weight's share of subnets, a removed variant
    /// moves only the subnets it had (the rest keep theirs), and they
    /// return when it does. The answer carries the prefix as its RFC 7871
    /// SCOPE PREFIX-LENGTH, so resolvers cache it per subnet. A query
    /// without a client address (ECS SOURCE PREFIX-LENGTH 0) is answered as
    /// `Weighted`. Prefixes longer than the family's are cut to 32 / 128.
    StickyWeighted {
        /// Bits of an IPv4 client address that pick the variant (NS1's and
        /// resolvers' usual /24).
        v4_prefix: u8,
        /// Bits of an IPv6 client address that pick the variant (/56).
        v6_prefix: u8,
    },
    /// The variants of the client's region; else the first region of
    /// `fallback` that has variants; else every variant.
    Nearest {
        /// Region order tried when the client's region has no variant.
        fallback: Vec<String>,
    },
    /// Every variant together, as a plain name answers. A name is routed
    /// this way only for what [`RoutedName::max_answers`] or
    /// [`RoutedName::sticky_within`] add (fedns's `All` and `Failover`,
    /// whose RRsets hold the active role already).
    Every,
}

/// One way of answering a routed name: one cluster's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedVariant {
    /// The set identifier (the cluster), for reports.
    pub id: String,
    /// Relative weight (`Weighted`).
    pub weight: u32,
    /// The cluster's region (`Nearest`); `None`: only in "every variant".
    pub region: Option<String>,
    /// The variant's RRsets at the name (A and/or AAAA), owner = the name.
    pub records: Vec<Record>,
}

/// A name whose answer depends on the query: see [`RoutingPolicy`].
/// The zone's plain `records` at this name are the answer given when no
/// variant applies (e.g. a zone transfer): the union of every variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedName {
    /// The owner name (inside the zone).
    pub name: hickory_proto::rr::Name,
    /// How a variant is picked.
    pub policy: RoutingPolicy,
    /// At least one.
    pub variants: Vec<RoutedVariant>,
    /// At most this many addresses per family (A, AAAA) in one answer
    /// (NS1's "select first N", Akamai's handout limit). A chosen set with
    /// more is answered a window of `max_answers` of its addresses: for
    /// `Weighted` the drawn variant's addresses first, then those of the
    /// others in an order drawn by weight without replacement (one order
    /// per first variant, fixed so it can be pre-rendered; weight 0 left
    /// out while any has weight) until the limit; windows are drawn per
    /// query, or by client subnet when the name is sticky. `None` or 0:
    /// no limit.
    pub max_answers: Option<u16>,
    /// `Nearest` and `Every`: one variant of the chosen set per client
    /// subnet (the address cut to these IPv4 and IPv6 prefix lengths),
    /// picked by rendezvous hashing as [`RoutingPolicy::StickyWeighted`]
    /// does, instead of the whole set. The scope of the answer is the
    /// longer of the placement's and the subnet's prefix. Ignored by the
    /// `Weighted` policies (`StickyWeighted` is their sticky form).
    pub sticky_within: Option<(u8, u8)>,
}

/// Where clients are, for `Nearest` (the Domain's `spec.clientRegions`
/// and `spec.geoRegions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ClientRegions {
    /// Client networks and their region; the longest prefix wins.
    pub networks: Vec<(IpNet, String)>,
    /// ISO 3166-1 alpha-2 country code (upper case) → region, read from
    /// the GeoIP database's `country.iso_code`.
    pub countries: Vec<(String, String)>,
    /// Continent code (`EU`, `NA`, ...) → region, from `continent.code`;
    /// a country entry wins over its continent.
    pub continents: Vec<(String, String)>,
}

impl ClientRegions {
    /// No mapping at all.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty() && self.countries.is_empty() && self.continents.is_empty()
    }
}

/// A MaxMind DB (GeoIP2 / GeoLite2 Country or City) loaded in memory.
pub struct GeoIpDb {
    reader: maxminddb::Reader<Vec<u8>>,
    path: String,
}

impl std::fmt::Debug for GeoIpDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoIpDb").field("path", &self.path).finish()
    }
}

/// Where a GeoIP lookup put an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeoLocation<'a> {
    /// `country.iso_code`, if the database has one.
    pub country: Option<&'a str>,
    /// `continent.code`, if the database has one.
    pub continent: Option<&'a str>,
    /// Prefix length of the database network holding the address (in the
    /// address's own family).
    pub prefix_len: u8,
}

impl GeoIpDb {
    /// Reads the MaxMind DB file at `path`.
    ///
    /// # Errors
    /// A one-line reason naming the file (missing, unreadable, or not a
    /// MaxMind DB).
    pub fn open(path: &Path) -> Result<GeoIpDb, String> {
        let reader =
            maxminddb::Reader::open_readfile(path).map_err(|e| format!("GeoIP database {}: {e}", path.display()))?;
        Ok(GeoIpDb {
            reader,
            path: path.display().to_string(),
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The database's `database_type`, e.g. `GeoLite2-Country`.
    pub fn database_type(&self) -> &str {
        &self.reader.metadata().database_type
    }

    /// Looks `addr` up; strings borrow from the database (no allocation).
    pub fn locate(&self, addr: IpAddr) -> Option<GeoLocation<'_>> {
        use maxminddb::PathElement::Key;
        let result = self.reader.lookup(addr).ok()?;
        let prefix_len = result.network().ok()?.prefix();
        if !result.has_data() {
            return Some(GeoLocation {
                country: None,
                continent: None,
                prefix_len,
            });
        }
        let country = result
            .decode_path::<&str>(&[Key("country"), Key("iso_code")])
            .ok()
            .flatten();
        let continent = result
            .decode_path::<&str>(&[Key("continent"), Key("code")])
            .ok()
            .flatten();
        Some(GeoLocation {
            country,
            continent,
            prefix_len,
        })
    }
}

/// No region: the client is somewhere no table or database places.
pub(crate) const NO_REGION: u16 = u16::MAX;

/// One interval of the client table: `[start, end]` → region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Interval {
    start: u128,
    end: u128,
    region: u16,
}

/// Per-zone client → region lookup, built once per snapshot.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ClientTable {
    /// Region names; region ids index this.
    pub regions: Vec<String>,
    /// Disjoint, sorted, covering all of 0..=2^32-1.
    v4: Box<[Interval]>,
    /// Disjoint, sorted, covering all of 0..=2^128-1.
    v6: Box<[Interval]>,
    countries: Box<[([u8; 2], u16)]>,
    continents: Box<[([u8; 2], u16)]>,
    /// Region id of clients nothing else places (None: no fallback).
    fallback: Option<u16>,
}

/// Where a client was placed, and how far that holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Region id, or [`NO_REGION`].
    pub region: u16,
    /// RFC 7871 SCOPE PREFIX-LENGTH: every address sharing this many
    /// leading bits with the client is placed the same way.
    pub scope: u8,
}

fn code(s: &str) -> Option<[u8; 2]> {
    let b = s.as_bytes();
    (b.len() == 2).then(|| [b[0].to_ascii_uppercase(), b[1].to_ascii_uppercase()])
}

impl ClientTable {
    /// Builds the table of one zone; `extra_regions` (regions of variants)
    /// get ids too. Problems (same network given twice with different
    /// regions, bad codes) are returned as lines; the first entry wins.
    pub fn build(regions: &ClientRegions, extra_regions: &[&str]) -> (ClientTable, Vec<String>) {
        let mut problems = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let id = |name: &str, names: &mut Vec<String>| -> u16 {
            match names.iter().position(|n| n == name) {
                Some(i) => i as u16,
                None => {
                    names.push(name.to_owned());
                    (names.len() - 1) as u16
                }
            }
        };
        let mut networks: Vec<(IpNet, u16)> = Vec::new();
        for (net, region) in &regions.networks {
            let net = net.trunc();
            let region_id = id(region, &mut names);
            match networks.iter().find(|(n, _)| *n == net) {
                Some((_, other)) if *other != region_id => problems.push(format!(
                    "client network {net} is given for regions {} and {region}; the first is used",
                    names[*other as usize]
                )),
                Some(_) => {}
                None => networks.push((net, region_id)),
            }
        }
        for region in extra_regions {
            id(region, &mut names);
        }
        let mut codes = |list: &[(String, String)], what: &str, names: &mut Vec<String>| {
            let mut out: Vec<([u8; 2], u16)> = Vec::new();
            for (c, region) in list {
                match code(c) {
                    Some(c) if !out.iter().any(|(o, _)| *o == c) => out.push((c, id(region, names))),
                    Some(_) => problems.push(format!("{what} code {c} is given twice; the first is used")),
                    None => problems.push(format!("{what} code {c:?} is not two letters; ignored")),
                }
            }
            out.into_boxed_slice()
        };
        let countries = codes(&regions.countries, "country", &mut names);
        let continents = codes(&regions.continents, "continent", &mut names);
        let paint = |v6: bool| -> Box<[Interval]> {
            let max = if v6 { u128::MAX } else { u32::MAX as u128 };
            let mut intervals = vec![Interval {
                start: 0,
                end: max,
                region: NO_REGION,
            }];
            let mut nets: Vec<(u128, u8, u16)> = networks
                .iter()
                .filter_map(|(net, region)| match net {
                    IpNet::V4(n) if !v6 => Some((u32::from(n.network()) as u128, n.prefix_len(), *region)),
                    IpNet::V6(n) if v6 => Some((u128::from(n.network()), n.prefix_len(), *region)),
                    _ => None,
                })
                .collect();
            // Shorter prefixes first: longer ones paint over them.
            nets.sort_by_key(|n| n.1);
            let bits = if v6 { 128 } else { 32 };
            for (start, len, region) in nets {
                let end = start | host_mask(len, bits);
                paint_interval(&mut intervals, start, end, region);
            }
            intervals.dedup_by(|b, a| {
                if a.region == b.region && a.end.checked_add(1) == Some(b.start) {
                    a.end = b.end;
                    true
                } else {
                    false
                }
            });
            intervals.into_boxed_slice()
        };
        let table = ClientTable {
            v4: paint(false),
            v6: paint(true),
            countries,
            continents,
            regions: names,
            fallback: None,
        };
        (table, problems)
    }

    /// The id of region `name`, if the table knows it.
    #[cfg(test)]
    pub fn region_id(&self, name: &str) -> Option<u16> {
        self.regions.iter().position(|n| n == name).map(|i| i as u16)
    }

    /// Gives clients nothing else places the region `name` (see
    /// [`crate::ZoneContent::default_client_region`]); None or a region no
    /// variant of the zone has: no fallback.
    pub fn set_fallback(&mut self, name: Option<&str>) {
        self.fallback = name
            .and_then(|name| self.regions.iter().position(|n| n == name))
            .map(|i| i as u16);
    }

    /// Places `addr`: the CIDR table first, then `geo` (when the table
    /// leaves the address in a gap and the zone maps codes), then the
    /// zone's fallback region. No allocation.
    #[inline]
    pub fn place(&self, addr: IpAddr, geo: Option<&GeoIpDb>) -> Placement {
        let placed = self.place_by_tables(addr, geo);
        if let (NO_REGION, Some(fallback)) = (placed.region, self.fallback) {
            return Placement {
                region: fallback,
                scope: placed.scope,
            };
        }
        placed
    }

    #[inline]
    fn place_by_tables(&self, addr: IpAddr, geo: Option<&GeoIpDb>) -> Placement {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        let (value, bits, intervals) = match addr {
            IpAddr::V4(v4) => (u32::from(v4) as u128, 32u8, &self.v4),
            IpAddr::V6(v6) => (u128::from(v6), 128u8, &self.v6),
        };
        let index = intervals.partition_point(|i| i.end < value);
        let Some(interval) = intervals.get(index) else {
            return Placement {
                region: NO_REGION,
                scope: 0,
            };
        };
        let scope = block_scope(value, interval.start, interval.end, bits);
        if interval.region != NO_REGION || (self.countries.is_empty() && self.continents.is_empty()) {
            return Placement {
                region: interval.region,
                scope,
            };
        }
        let Some(location) = geo.and_then(|g| g.locate(addr)) else {
            return Placement {
                region: NO_REGION,
                scope,
            };
        };
        // The answer holds where both the gap and the database's network do.
        let scope = scope.max(location.prefix_len.min(bits));
        let find = |list: &[([u8; 2], u16)], c: Option<&str>| {
            let c = code(c?)?;
            list.iter().find(|(k, _)| *k == c).map(|(_, r)| *r)
        };
        let region = find(&self.countries, location.country)
            .or_else(|| find(&self.continents, location.continent))
            .unwrap_or(NO_REGION);
        Placement { region, scope }
    }
}

/// Checks of a table read from a snapshot file (see `zone::store::saved`):
/// what [`ClientTable::place`] relies on.
impl ClientTable {
    /// Whether the table is one [`ClientTable::build`] could have made:
    /// each family's intervals sorted, adjacent and covering every
    /// address, every region id naming a region (or [`NO_REGION`]).
    ///
    /// # Errors
    /// The first broken rule, one line.
    pub(crate) fn check(&self) -> Result<(), String> {
        let regions = self.regions.len();
        let known = |id: u16| id == NO_REGION || usize::from(id) < regions;
        for (intervals, max, family) in [(&self.v4, u32::MAX as u128, "IPv4"), (&self.v6, u128::MAX, "IPv6")] {
            let mut next = 0u128;
            for (i, interval) in intervals.iter().enumerate() {
                if interval.start != next || interval.end < interval.start || !known(interval.region) {
                    return Err(format!("{family} client interval {i} does not follow the one before"));
                }
                next = interval.end.wrapping_add(1);
                if interval.end == max && i + 1 != intervals.len() {
                    return Err(format!("{family} client intervals go past the last address"));
                }
            }
            if intervals.last().is_none_or(|last| last.end != max) {
                return Err(format!("{family} client intervals do not cover every address"));
            }
        }
        let coded = self.countries.iter().chain(self.continents.iter());
        if coded
            .map(|(_, id)| *id)
            .chain(self.fallback)
            .any(|id| !known(id) || id == NO_REGION)
        {
            return Err("a client region id names no region".into());
        }
        Ok(())
    }
}

impl Route {
    /// Whether every variant this route can pick is one of the `variants`
    /// rendered for its name, and a `Nearest` route's zone one of
    /// `zones`: what the query path indexes with the pick (a route read
    /// from a snapshot file, see `zone::store::saved`).
    ///
    /// # Errors
    /// The first broken rule, one line.
    pub(crate) fn check(&self, variants: usize, zones: usize) -> Result<(), String> {
        let within = |len: usize, what: &str| {
            if len == variants && variants > 0 {
                Ok(())
            } else {
                Err(format!("{what} has {len} entries for {variants} variants"))
            }
        };
        match self {
            Route::Weighted { cumulative } => within(cumulative.len(), "a weighted route"),
            Route::Sticky {
                cumulative,
                seeds,
                weights,
                ..
            } => {
                within(cumulative.len(), "a sticky route")?;
                within(seeds.len(), "a sticky route's seeds")?;
                within(weights.len(), "a sticky route's weights")
            }
            Route::Nearest {
                zone,
                by_region,
                unknown,
            } => {
                if *zone as usize >= zones {
                    return Err(format!("a nearest route names zone {zone} of {zones}"));
                }
                if by_region
                    .iter()
                    .chain(std::iter::once(unknown))
                    .any(|v| usize::from(*v) >= variants)
                {
                    return Err(format!("a nearest route picks past its {variants} variants"));
                }
                Ok(())
            }
            Route::Split(split) => {
                if matches!(split.base, Route::Split(_)) {
                    return Err("a split route's first stage is split again".into());
                }
                split.base.check(split.groups.len(), zones)?;
                if split
                    .groups
                    .iter()
                    .any(|&(start, count)| start as usize + (count as usize).max(1) > variants)
                {
                    return Err(format!("a split route's group goes past its {variants} variants"));
                }
                within(split.seeds.len(), "a split route's seeds")?;
                within(split.weights.len(), "a split route's weights")?;
                within(split.cumulative.len(), "a split route's weights")
            }
        }
    }
}

/// The host bits of a `/len` prefix in a `bits`-bit address.
fn host_mask(len: u8, bits: u8) -> u128 {
    let full = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
    if len >= bits {
        0
    } else {
        full >> len
    }
}

/// The shortest prefix length whose block around `value` lies inside
/// `[start, end]`.
#[inline]
fn block_scope(value: u128, start: u128, end: u128, bits: u8) -> u8 {
    for len in 0..=bits {
        let host = host_mask(len, bits);
        let block_start = value & !host;
        let block_end = block_start | host;
        if block_start >= start && block_end <= end {
            return len;
        }
    }
    bits
}

/// Overwrites `[start, end]` with `region`, splitting what it overlaps.
fn paint_interval(intervals: &mut Vec<Interval>, start: u128, end: u128, region: u16) {
    let mut out = Vec::with_capacity(intervals.len() + 2);
    for i in intervals.iter() {
        if i.end < start || i.start > end {
            out.push(*i);
            continue;
        }
        if i.start < start {
            out.push(Interval {
                start: i.start,
                end: start - 1,
                region: i.region,
            });
        }
        if i.start <= start {
            out.push(Interval { start, end, region });
        }
        if i.end > end {
            out.push(Interval {
                start: end + 1,
                end: i.end,
                region: i.region,
            });
        }
    }
    *intervals = out;
}

/// How a query picks one of a name's variants.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Route {
    /// Cumulative weights, one per variant; the last is the total.
    Weighted { cumulative: Box<[u32]> },
    /// Weighted rendezvous hashing of the client's subnet
    /// ([`RoutingPolicy::StickyWeighted`]): per variant its seed (its id
    /// hashed) and its weight; `cumulative` answers queries without a
    /// client address, as `Weighted`.
    Sticky {
        cumulative: Box<[u32]>,
        seeds: Box<[u64]>,
        weights: Box<[f64]>,
        v4_prefix: u8,
        v6_prefix: u8,
    },
    /// Variant per region id of the zone's [`ClientTable`]; `unknown`
    /// for clients in no region (or a region with no entry).
    Nearest {
        zone: u32,
        by_region: Box<[u16]>,
        unknown: u16,
    },
    /// Two stages ([`RoutedName::max_answers`], [`RoutedName::sticky_within`]):
    /// `base` (never `Split`) picks a group, then one of the group's
    /// rendered variants is picked: by weighted rendezvous hashing of the
    /// client subnet when `prefixes` is set and the client is known, else
    /// at random by weight.
    Split(Box<SplitRoute>),
}

/// The second stage of [`Route::Split`]; every array but `groups` is
/// indexed by rendered variant.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct SplitRoute {
    pub base: Route,
    /// Per variant of `base`: (first rendered variant, count).
    pub groups: Box<[(u32, u32)]>,
    /// Rendezvous seed of each rendered variant.
    pub seeds: Box<[u64]>,
    /// Rendezvous weight of each rendered variant.
    pub weights: Box<[f64]>,
    /// Cumulative integer weights, restarting at each group.
    pub cumulative: Box<[u32]>,
    /// IPv4 and IPv6 prefix lengths of a sticky client subnet.
    pub prefixes: Option<(u8, u8)>,
}

impl SplitRoute {
    /// The rendered variant of group `group` a client gets, and the scope
    /// the pick adds (0 unless hashed by subnet). A sticky pick scopes the
    /// answer to the client's subnet even when the group holds one
    /// cluster: the choice was made for that subnet, and a resolver must
    /// not keep it for a wider block (the group may hold several clusters
    /// again before the TTL ends, and another subnet of the block would
    /// then get another one). No allocation.
    #[inline]
    pub(crate) fn pick_in(&self, group: usize, client: Option<IpAddr>) -> (usize, u8) {
        let Some(&(start, count)) = self.groups.get(group) else {
            return (group, 0);
        };
        let (start, count) = (start as usize, count as usize);
        let range = start..start + count;
        match (self.prefixes, client) {
            (Some((v4, v6)), Some(addr)) => {
                let (key, scope) = subnet_key(addr, v4, v6);
                if count <= 1 {
                    return (start, scope);
                }
                (
                    start + rendezvous_pick(key, &self.seeds[range.clone()], &self.weights[range]),
                    scope,
                )
            }
            _ if count <= 1 => (start, 0),
            _ => (start + weighted_pick(&self.cumulative[range]), 0),
        }
    }
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A fast per-thread pseudo-random number (splitmix64): plenty for
/// spreading answers by weight, not for anything secret.
#[inline]
pub(crate) fn next_random() -> u64 {
    RNG.with(|state| {
        let mut s = state.get();
        if s == 0 {
            // Seed once per thread from the std hasher's random keys.
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(&s as *const u64 as usize);
            s = h.finish() | 1;
        }
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// Picks a variant index from cumulative weights (total > 0).
#[inline]
pub(crate) fn weighted_pick(cumulative: &[u32]) -> usize {
    let total = *cumulative.last().unwrap_or(&0);
    if total == 0 {
        return 0;
    }
    // Multiply-shift instead of modulo: unbiased enough (2^-32) and cheap.
    let r = ((next_random() >> 32) * total as u64) >> 32;
    cumulative.partition_point(|&c| (c as u64) <= r)
}

/// SplitMix64's finaliser: a fast, well-spread 64-bit mix (not for
/// anything secret).
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hash of `addr`'s subnet (the address cut to `v4_prefix` or
/// `v6_prefix` bits, at most 32 / 128) and that prefix length, the answer's
/// SCOPE PREFIX-LENGTH. The family is part of the hash: `0.0.0.0/0` and
/// `::/0` are different subnets.
#[inline]
pub(crate) fn subnet_key(addr: IpAddr, v4_prefix: u8, v6_prefix: u8) -> (u64, u8) {
    match addr {
        IpAddr::V4(a) => {
            let prefix = v4_prefix.min(32);
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            let subnet = u32::from(a) & mask;
            (mix64(u64::from(subnet) ^ (u64::from(prefix) << 32) ^ (4 << 40)), prefix)
        }
        IpAddr::V6(a) => {
            let prefix = v6_prefix.min(128);
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            let subnet = u128::from(a) & mask;
            let high = mix64((subnet >> 64) as u64 ^ (u64::from(prefix) << 8) ^ 6);
            (mix64(subnet as u64 ^ high), prefix)
        }
    }
}

/// A variant's rendezvous seed: its id hashed (FNV-1a, then mixed), so a
/// subnet's score for a variant depends on neither the other variants nor
/// their order.
pub(crate) fn variant_seed(id: &str) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix64(h)
}

/// The rendezvous seed of window `window` of the variant seeded `seed`:
/// a window's score does not depend on the other windows either.
pub(crate) fn window_seed(seed: u64, window: usize) -> u64 {
    mix64(seed ^ (window as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Weighted rendezvous hashing: the variant `i` with the highest
/// `weights[i] / -ln(u_i)`, where `u_i` in (0, 1) is the subnet `key`
/// mixed with `seeds[i]`. The chance of a variant is exactly its share of
/// the weights (the scores are exponential variables whose minimum is
/// taken in proportion to the rates), and a subnet's scores do not change
/// when another variant comes or goes. Weights of 0 are never chosen;
/// with no positive weight, index 0.
#[inline]
pub(crate) fn rendezvous_pick(key: u64, seeds: &[u64], weights: &[f64]) -> usize {
    let mut best = 0;
    let mut best_score = f64::NEG_INFINITY;
    for (i, (&seed, &weight)) in seeds.iter().zip(weights).enumerate() {
        if weight <= 0.0 {
            continue;
        }
        let score = rendezvous_score(key, seed, weight);
        if score > best_score {
            best_score = score;
            best = i;
        }
    }
    best
}

/// The weighted rendezvous score `weight / -ln(u)` of the variant seeded
/// `seed` for `key`. Sorting variants by it, highest first, is a weighted
/// draw without replacement (Efraimidis and Spirakis), fixed per key.
#[inline]
pub(crate) fn rendezvous_score(key: u64, seed: u64, weight: f64) -> f64 {
    // 53 random bits, centred in their interval: u is never 0 or 1.
    let u = ((mix64(key ^ seed) >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
    weight / -u.ln()
}

/// Variants of a Nearest name as sets of input variant indices: for each
/// region id of `table`, the variant set answered, and the set for unknown
/// clients. Returns (distinct sets, by_region index into sets, unknown).
pub(crate) fn nearest_sets(
    variants: &[RoutedVariant],
    fallback: &[String],
    table: &ClientTable,
) -> (Vec<Vec<usize>>, Vec<u16>, u16) {
    let of_region = |region: &str| -> Vec<usize> {
        (0..variants.len())
            .filter(|&i| variants[i].region.as_deref() == Some(region))
            .collect()
    };
    let everything: Vec<usize> = (0..variants.len()).collect();
    let after_fallback = || -> Vec<usize> {
        fallback
            .iter()
            .map(|r| of_region(r))
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| everything.clone())
    };
    let mut sets: Vec<Vec<usize>> = Vec::new();
    let intern = |set: Vec<usize>, sets: &mut Vec<Vec<usize>>| -> u16 {
        match sets.iter().position(|s| *s == set) {
            Some(i) => i as u16,
            None => {
                sets.push(set);
                (sets.len() - 1) as u16
            }
        }
    };
    let unknown_set = after_fallback();
    let unknown = intern(unknown_set, &mut sets);
    let mut by_region = Vec::with_capacity(table.regions.len());
    for region in &table.regions {
        let set = of_region(region);
        let set = if set.is_empty() { after_fallback() } else { set };
        by_region.push(intern(set, &mut sets));
    }
    (sets, by_region, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variant each of `subnets` IPv4 /24s (10.0.0.0/24 upward) gets.
    fn sticky_choices(ids: &[&str], weights: &[f64], subnets: u32) -> Vec<&'static str> {
        let seeds: Vec<u64> = ids.iter().map(|id| variant_seed(id)).collect();
        (0..subnets)
            .map(|i| {
                let addr = IpAddr::V4(std::net::Ipv4Addr::from(0x0A00_0000 + (i << 8) + 7));
                let (key, scope) = subnet_key(addr, 24, 56);
                assert_eq!(scope, 24);
                let id = ids[rendezvous_pick(key, &seeds, weights)];
                // 'static for the caller's comparisons.
                ["a", "b", "c", "d"].into_iter().find(|x| *x == id).unwrap_or("?")
            })
            .collect()
    }

    /// Shares over 100,000 subnets follow the weights (Pearson's χ² with
    /// 3 degrees of freedom below 16.27, p > 0.001). The hash is fixed,
    /// so the figure is the same on every run.
    #[test]
    fn sticky_shares_follow_the_weights() {
        let ids = ["a", "b", "c", "d"];
        let weights = [1.0, 2.0, 3.0, 4.0];
        let n = 100_000;
        let choices = sticky_choices(&ids, &weights, n);
        let mut chi2 = 0.0;
        for (id, w) in ids.iter().zip(weights) {
            let observed = choices.iter().filter(|c| *c == id).count() as f64;
            let expected = f64::from(n) * w / 10.0;
            chi2 += (observed - expected).powi(2) / expected;
            println!("{id}: weight {w}, {observed} subnets (expected {expected})");
        }
        println!("chi-squared {chi2:.2} (3 degrees of freedom; p > 0.001 below 16.27)");
        assert!(chi2 < 16.27, "chi-squared {chi2}");
    }

    /// One of 4 equal clusters fails: only its subnets move (at most
    /// 1/4 + 1 % of all; a fresh random pick per query would move ~3/4);
    /// when it returns, the same subnets come back to it.
    #[test]
    fn sticky_moves_only_the_failed_clusters_subnets_and_brings_them_back() {
        let n = 100_000;
        let before = sticky_choices(&["a", "b", "c", "d"], &[1.0; 4], n);
        let during = sticky_choices(&["a", "b", "d"], &[1.0; 3], n);
        let moved = before.iter().zip(&during).filter(|(b, d)| b != d).count();
        let fraction = moved as f64 / f64::from(n);
        println!(
            "c fails: {moved} of {n} subnets change cluster ({:.2} %)",
            fraction * 100.0
        );
        assert!(fraction <= 0.25 + 0.01, "{fraction}");
        assert!(
            before.iter().zip(&during).all(|(b, d)| b == d || *b == "c"),
            "only c's subnets may move"
        );
        let after = sticky_choices(&["a", "b", "c", "d"], &[1.0; 4], n);
        assert_eq!(before, after, "c's subnets return to it");
        // Order of the variants does not matter either.
        let reordered = sticky_choices(&["d", "c", "b", "a"], &[1.0; 4], n);
        assert_eq!(before, reordered);
    }

    #[test]
    fn a_subnet_is_the_address_cut_to_its_prefix() {
        let key = |a: &str, v4, v6| subnet_key(a.parse().unwrap(), v4, v6);
        assert_eq!(key("192.0.2.1", 24, 56), key("192.0.2.254", 24, 56));
        assert_ne!(key("192.0.2.1", 24, 56).0, key("192.0.3.1", 24, 56).0);
        assert_eq!(key("2001:db8:0:ff::1", 24, 56), key("2001:db8:0:aa::2", 24, 56));
        assert_ne!(key("2001:db8:0:100::1", 24, 56).0, key("2001:db8:0:200::1", 24, 56).0);
        // Out-of-range prefixes are cut to the family's length; /0 is one subnet per family.
        assert_eq!(key("192.0.2.1", 40, 200).1, 32);
        assert_eq!(key("2001:db8::1", 40, 200).1, 128);
        assert_eq!(key("192.0.2.1", 0, 0), key("198.51.100.1", 0, 0));
        assert_ne!(key("192.0.2.1", 0, 0).0, key("2001:db8::1", 0, 0).0);
        // A weight of 0 is never chosen while another has weight.
        let seeds = [variant_seed("a"), variant_seed("b")];
        for i in 0..1000u64 {
            assert_eq!(rendezvous_pick(mix64(i), &seeds, &[0.0, 1.0]), 1);
        }
    }

    fn regions(networks: &[(&str, &str)]) -> ClientRegions {
        ClientRegions {
            networks: networks
                .iter()
                .map(|(n, r)| (n.parse().unwrap(), r.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn longest_prefix_wins_with_exact_scope() {
        let (table, problems) = ClientTable::build(
            &regions(&[("10.0.0.0/8", "eu"), ("10.1.0.0/16", "us"), ("192.0.2.0/24", "us")]),
            &[],
        );
        assert!(problems.is_empty());
        let eu = table.region_id("eu").unwrap();
        let us = table.region_id("us").unwrap();
        let place = |a: &str| table.place(a.parse().unwrap(), None);
        assert_eq!(place("10.1.2.3"), Placement { region: us, scope: 16 });
        // 10.2.x.x: in the /8 but next to the /16, so only a /16 (10.2/16
        // holds no other entry) answers the same... the shortest block
        // inside the eu interval 10.2.0.0-10.255.255.255 around it is /15.
        assert_eq!(place("10.2.3.4"), Placement { region: eu, scope: 15 });
        assert_eq!(place("10.200.3.4"), Placement { region: eu, scope: 9 });
        assert_eq!(place("192.0.2.77"), Placement { region: us, scope: 24 });
        assert_eq!(place("8.8.8.8").region, NO_REGION);
        assert_eq!(place("::ffff:10.1.0.1").region, us);
        assert_eq!(
            place("2001:db8::1"),
            Placement {
                region: NO_REGION,
                scope: 0
            }
        );
    }

    #[test]
    fn duplicate_network_with_another_region_is_reported() {
        let (table, problems) = ClientTable::build(&regions(&[("10.0.0.0/8", "eu"), ("10.0.0.0/8", "us")]), &[]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(table.place("10.0.0.1".parse().unwrap(), None).region, 0);
    }

    #[test]
    fn weighted_pick_follows_weights() {
        let cumulative = [1u32, 1, 4]; // weights 1, 0, 3
        let mut counts = [0usize; 3];
        for _ in 0..40_000 {
            counts[weighted_pick(&cumulative)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((9_000..11_000).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn nearest_sets_fall_back_in_order() {
        let v = |id: &str, region: Option<&str>| RoutedVariant {
            id: id.into(),
            weight: 0,
            region: region.map(Into::into),
            records: vec![],
        };
        let variants = [v("a", Some("eu")), v("b", Some("us")), v("c", None)];
        let (table, _) = ClientTable::build(&regions(&[("10.0.0.0/8", "asia")]), &["eu", "us"]);
        let (sets, by_region, unknown) = nearest_sets(&variants, &["us".into()], &table);
        let asia = table.region_id("asia").unwrap() as usize;
        let eu = table.region_id("eu").unwrap() as usize;
        assert_eq!(sets[by_region[asia] as usize], vec![1]);
        assert_eq!(sets[by_region[eu] as usize], vec![0]);
        assert_eq!(sets[unknown as usize], vec![1]);
        let (sets, _, unknown) = nearest_sets(&variants, &[], &table);
        assert_eq!(sets[unknown as usize], vec![0, 1, 2]);
    }
}
