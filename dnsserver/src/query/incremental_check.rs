//! [`ZoneStore::publish_changes`] against full builds: random sequences of
//! changes (adds, removals, A/AAAA/TXT/MX/CNAME, CNAME chains and loops,
//! routed names, empty non-terminals appearing and going away, records of
//! a deeper zone, CNAME conflicts), and after every step every stored
//! answer of every name for every query type, NXDOMAIN probes through the
//! query path, the skipped list, zone summaries and routes compared with
//! [`Snapshot::build`] of the same content and serials. Also the serial
//! rules and the cases that return `None`.

use std::collections::BTreeMap;
use std::sync::Arc;

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::rdata::{CNAME, MX, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::answer::{answer, AnswerConfig, Transport};
use crate::zone::content::ZoneContent;
use crate::zone::routing::{ClientRegions, RoutedName, RoutedVariant, RoutingPolicy};
use crate::zone::snapshot::Snapshot;
use crate::zone::store::{ZoneChanges, ZoneStore};
use crate::zone::tree::wire_key;
use crate::zone::version::TransferPolicy;

/// splitmix64: a seeded, reproducible sequence for the test.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

pub(super) fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

pub(super) const APEX: &str = "example.com.";
const DEEPER: &str = "sub.example.com.";

/// Owner names the random changes pick from: several levels (for empty
/// non-terminals), the apex, and names of the deeper zone.
pub(super) fn pool() -> Vec<String> {
    let mut names = vec![APEX.to_owned()];
    for i in 0..6 {
        names.push(format!("a{i}.{APEX}"));
        for j in 0..3 {
            names.push(format!("b{j}.a{i}.{APEX}"));
        }
        names.push(format!("c.b0.a{i}.{APEX}"));
    }
    names.push(format!("x.{DEEPER}"));
    names
}

/// The content of one owner: records and routed name.
#[derive(Clone, Default)]
pub(super) struct Owner {
    pub(super) records: Vec<Record>,
    pub(super) routed: Option<RoutedName>,
}

pub(super) fn a(owner: &Name, ip: [u8; 4]) -> Record {
    Record::from_rdata(owner.clone(), 30, RData::A(std::net::Ipv4Addr::from(ip).into()))
}

/// A random set of records for `owner`, maybe routed.
pub(super) fn random_owner(rng: &mut Rng, owner: &str, pool: &[String]) -> Owner {
    let owner_name = name(owner);
    let mut records = Vec::new();
    let target = |rng: &mut Rng| -> Name {
        match rng.below(10) {
            0 => name("elsewhere.example.net."),
            1 => name(&format!("missing{}.{APEX}", rng.below(2))),
            _ => name(&pool[rng.below(pool.len())]),
        }
    };
    let kind = rng.below(10);
    match kind {
        0 => {} // removal
        1 | 2 => records.push(Record::from_rdata(
            owner_name.clone(),
            30 + rng.below(2) as u32 * 30,
            RData::CNAME(CNAME(target(rng))),
        )),
        _ => {
            for _ in 0..1 + rng.below(3) {
                records.push(a(&owner_name, [192, 0, 2, rng.below(8) as u8 + 1]));
            }
            if rng.chance(30) {
                records.push(Record::from_rdata(
                    owner_name.clone(),
                    30,
                    RData::AAAA(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, rng.below(4) as u16 + 1).into()),
                ));
            }
            if rng.chance(25) {
                records.push(Record::from_rdata(
                    owner_name.clone(),
                    60,
                    RData::TXT(TXT::new(vec![format!("t{}", rng.below(3))])),
                ));
            }
            if rng.chance(15) {
                records.push(Record::from_rdata(
                    owner_name.clone(),
                    60,
                    RData::MX(MX::new(10, target(rng))),
                ));
            }
            if rng.chance(5) {
                // A CNAME beside other data: reported and left out.
                records.push(Record::from_rdata(
                    owner_name.clone(),
                    30,
                    RData::CNAME(CNAME(target(rng))),
                ));
            }
        }
    }
    let has_a = records.iter().any(|r| r.record_type() == RecordType::A);
    let routed = (has_a && rng.chance(35)).then(|| {
        let regions = ["eu", "us", "ap"];
        let variants = (0..1 + rng.below(3))
            .map(|i| RoutedVariant {
                id: format!("c{i}"),
                weight: rng.below(3) as u32,
                // "ap" is unknown to the client table: a full publish is needed.
                region: Some(regions[if rng.chance(5) { 2 } else { rng.below(2) }].into()),
                records: vec![a(&owner_name, [198, 51, 100, i as u8 + 1])],
            })
            .collect();
        RoutedName {
            name: owner_name.clone(),
            max_answers: rng.chance(30).then_some(1),
            sticky_within: rng.chance(30).then_some((24, 56)),
            policy: if rng.chance(50) {
                RoutingPolicy::Weighted
            } else {
                RoutingPolicy::Nearest {
                    fallback: vec!["us".into()],
                }
            },
            variants,
        }
    });
    Owner { records, routed }
}

/// The served content: per zone, owner -> records and routed name.
pub(super) struct Model {
    pub(super) zones: BTreeMap<String, BTreeMap<String, Owner>>,
    /// 0: the zones' default settings; else edited settings (SOA values,
    /// transfers, client table) that differ with each value.
    settings_edit: u32,
}

impl Model {
    pub(super) fn contents(&self) -> Vec<ZoneContent> {
        self.zones
            .iter()
            .map(|(apex, owners)| {
                let mut zone = ZoneContent::new(name(apex));
                zone.name_servers = vec![name(&format!("ns1.{apex}")), name(&format!("ns2.{apex}"))];
                if apex == DEEPER {
                    // An in-zone name server address: its TTL is the SOA's.
                    zone.name_server_addresses = vec![(name(&format!("ns1.{apex}")), "192.0.2.54".parse().unwrap())];
                }
                for owner in owners.values() {
                    zone.records.extend(owner.records.iter().cloned());
                    zone.routed.extend(owner.routed.iter().cloned());
                }
                if apex == APEX {
                    zone.client_regions = ClientRegions {
                        networks: vec![
                            ("192.0.2.0/24".parse().unwrap(), "eu".into()),
                            ("198.51.100.0/24".parse().unwrap(), "us".into()),
                        ],
                        ..Default::default()
                    };
                }
                let edit = self.settings_edit;
                if edit > 0 {
                    zone.soa.ttl = 60 + edit;
                    zone.soa.minimum = 20 + edit;
                    zone.soa.refresh = 1800 + edit;
                    zone.soa.retry = 300 + edit;
                    zone.soa.expire = 604_800 + edit;
                    zone.soa.rname = name(&format!("dns{edit}.example.net."));
                    zone.soa.mname = name(&format!("ns2.{apex}"));
                    zone.transfer = TransferPolicy {
                        allow: vec!["127.0.0.0/8".parse().unwrap()],
                        ..TransferPolicy::default()
                    };
                    if apex == APEX {
                        zone.client_regions
                            .networks
                            .push(("203.0.113.0/24".parse().unwrap(), "eu".into()));
                    }
                }
                zone
            })
            .collect()
    }
}

/// Records every type the changes use, at names the changes never touch
/// (so the set of types served stays and changes apply incrementally),
/// plus a routed name using both known regions.
fn anchors() -> Model {
    let mut apex_owners: BTreeMap<String, Owner> = BTreeMap::new();
    let anchor = name(&format!("anchor.{APEX}"));
    let ns1 = name(&format!("ns1.{APEX}"));
    apex_owners.insert(
        ns1.to_ascii(),
        Owner {
            records: vec![a(&ns1, [192, 0, 2, 53])],
            routed: None,
        },
    );
    apex_owners.insert(
        anchor.to_ascii(),
        Owner {
            records: vec![
                a(&anchor, [192, 0, 2, 99]),
                Record::from_rdata(anchor.clone(), 30, RData::AAAA("2001:db8::99".parse().unwrap())),
                Record::from_rdata(anchor.clone(), 30, RData::TXT(TXT::new(vec!["anchor".into()]))),
                Record::from_rdata(anchor.clone(), 30, RData::MX(MX::new(5, name(&format!("a0.{APEX}"))))),
            ],
            routed: Some(RoutedName {
                name: anchor.clone(),
                max_answers: None,
                sticky_within: None,
                policy: RoutingPolicy::Nearest { fallback: vec![] },
                variants: ["eu", "us"]
                    .iter()
                    .enumerate()
                    .map(|(i, region)| RoutedVariant {
                        id: format!("c{i}"),
                        weight: 1,
                        region: Some((*region).into()),
                        records: vec![a(&anchor, [192, 0, 2, 99])],
                    })
                    .collect(),
            }),
        },
    );
    let alias = name(&format!("alias.{APEX}"));
    apex_owners.insert(
        alias.to_ascii(),
        Owner {
            records: vec![Record::from_rdata(
                alias.clone(),
                30,
                RData::CNAME(CNAME(name(&format!("a1.{APEX}")))),
            )],
            routed: None,
        },
    );
    let mut deeper: BTreeMap<String, Owner> = BTreeMap::new();
    let y = name(&format!("y.{DEEPER}"));
    deeper.insert(
        y.to_ascii(),
        Owner {
            records: vec![a(&y, [192, 0, 2, 7])],
            routed: None,
        },
    );
    let mut zones = BTreeMap::new();
    zones.insert(APEX.to_owned(), apex_owners);
    zones.insert(DEEPER.to_owned(), deeper);
    Model {
        zones,
        settings_edit: 0,
    }
}

fn query(qname: &Name, qtype: RecordType) -> Vec<u8> {
    let mut message = Message::new(7, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(qname.clone(), qtype));
    message.to_vec().unwrap()
}

const TYPES: [RecordType; 11] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::TXT,
    RecordType::CNAME,
    RecordType::MX,
    RecordType::NS,
    RecordType::SOA,
    RecordType::ANY,
    RecordType::DS,
    RecordType::SRV,
    RecordType::Unknown(65_280),
];

/// Everything a client can see of `got` equals what a full build of the
/// same content with the same serials gives.
pub(super) fn assert_same_as_full_build(got: &Snapshot, model: &Model, step: usize, seed: u64) {
    let context = format!("seed {seed}, step {step}");
    let want = assert_same_as_build_of(got, model.contents(), &context);
    assert_eq!(got.skipped(), want.skipped(), "{context}: skipped");
    assert_eq!(got.routes(), want.routes(), "{context}: routes");
    // The query path, NXDOMAIN fast path included.
    let config = AnswerConfig::default();
    let (mut out_got, mut out_want) = (Vec::new(), Vec::new());
    let mut probes: Vec<Name> = pool().iter().map(|n| name(n)).collect();
    probes.extend(pool().iter().map(|n| name(&format!("zz.{n}"))));
    probes.push(name("missing0.example.com."));
    probes.push(name("nothing.sub.example.com."));
    for probe in probes {
        // Routed answers are picked at random: compared above, set by set.
        if want
            .stored_responses(&wire_key(&probe), 1)
            .is_some_and(|answers| answers.len() > 1)
        {
            continue;
        }
        for qtype in [RecordType::A, RecordType::TXT, RecordType::SOA] {
            let packet = query(&probe, qtype);
            answer(got, &packet, Transport::Tcp, &config, &mut out_got);
            answer(&want, &packet, Transport::Tcp, &config, &mut out_want);
            assert_eq!(out_got, out_want, "{context}: query path for {probe} {qtype}");
        }
    }
}

/// The model's records as parts of at most `size` owners each, zone by
/// zone, for [`ZoneStore::publish_in_parts`].
pub(super) fn parts_of(model: &Model, size: usize) -> Vec<Vec<ZoneChanges>> {
    let mut parts = Vec::new();
    for (apex, owners) in &model.zones {
        let owners: Vec<(&String, &Owner)> = owners.iter().collect();
        for chunk in owners.chunks(size) {
            let mut change = ZoneChanges {
                apex: name(apex),
                ..ZoneChanges::default()
            };
            for (owner, content) in chunk {
                change.names.push((name(owner), content.records.clone()));
                change.routed.extend(content.routed.clone());
            }
            parts.push(vec![change]);
        }
    }
    parts
}

/// The anchors and random records at about half of `pool`'s names.
pub(super) fn random_model(rng: &mut Rng, pool: &[String]) -> Model {
    let mut model = anchors();
    for owner in pool {
        if rng.chance(50) {
            let zone = if owner.ends_with(DEEPER) { DEEPER } else { APEX };
            let content = random_owner(rng, owner, pool);
            model.zones.get_mut(zone).unwrap().insert(owner.clone(), content);
        }
    }
    model
}

/// `seed`'s random sequence of `steps` changes; the first publish goes
/// in parts of three owners when `in_parts`. Returns how many steps were
/// applied incrementally and how many needed a full publish.
fn run_sequence(seed: u64, steps: usize, in_parts: bool) -> (usize, usize) {
    let mut rng = Rng(seed);
    let pool = pool();
    let mut model = random_model(&mut rng, &pool);
    let store = ZoneStore::new();
    let first = if in_parts {
        let mut parts = parts_of(&model, 3).into_iter();
        store
            .publish_in_parts(model.contents(), &mut || parts.next())
            .expect("no wildcard or delegation: every part applies")
    } else {
        store.publish(model.contents())
    };
    assert!(first.changed);
    // The fingerprints and serials are a full publish's.
    assert!(!store.publish(model.contents()).changed, "seed {seed}: first publish");
    assert_same_as_full_build(&store.load(), &model, 0, seed);
    let (mut incremental, mut full) = (0, 0);
    for step in 1..=steps {
        let mut changes: BTreeMap<String, ZoneChanges> = BTreeMap::new();
        let count = 1 + rng.below(4);
        for _ in 0..count {
            let owner = &pool[rng.below(pool.len())];
            // Mostly changes of example.com.; its names under sub. are
            // skipped records there (the deeper zone serves them).
            let zone = if owner.ends_with(DEEPER) && rng.chance(70) {
                DEEPER
            } else {
                APEX
            };
            let content = if rng.chance(10) {
                // Listed again unchanged.
                model.zones[zone].get(owner).cloned().unwrap_or_default()
            } else {
                random_owner(&mut rng, owner, &pool)
            };
            let entry = changes.entry(zone.to_owned()).or_insert_with(|| ZoneChanges {
                apex: name(zone),
                ..ZoneChanges::default()
            });
            entry.names.retain(|(n, _)| n != &name(owner));
            entry.routed.retain(|r| r.name != name(owner));
            entry.names.push((name(owner), content.records.clone()));
            entry.routed.extend(content.routed.clone());
            let owners = model.zones.get_mut(zone).unwrap();
            if content.records.is_empty() && content.routed.is_none() {
                owners.remove(owner);
            } else {
                owners.insert(owner.clone(), content);
            }
        }
        let before = store.load().zones();
        match store.publish_changes(changes.into_values().collect()) {
            Some(outcome) => {
                incremental += 1;
                let after = store.load();
                assert_eq!(outcome.zones, after.zones(), "seed {seed}, step {step}");
                assert_eq!(outcome.skipped, after.skipped(), "seed {seed}, step {step}");
                // A full publish of the same content is no change: the
                // incremental fingerprints and serials are a full publish's.
                let again = store.publish(model.contents());
                assert!(
                    !again.changed,
                    "seed {seed}, step {step}: a full publish of the same content changed the zones"
                );
                if !outcome.changed {
                    assert_eq!(before, after.zones(), "seed {seed}, step {step}: serials kept");
                }
            }
            None => {
                full += 1;
                store.publish(model.contents());
            }
        }
        assert_same_as_full_build(&store.load(), &model, step, seed);
    }
    (incremental, full)
}

#[test]
fn random_changes_answer_like_full_builds() {
    let seeds: Vec<u64> = match std::env::var("FEDNS_INCREMENTAL_SEED") {
        Ok(seed) => vec![seed.parse().unwrap()],
        Err(_) => (1..=12).collect(),
    };
    let (mut incremental, mut full) = (0, 0);
    for seed in seeds {
        let (i, f) = run_sequence(seed, 40, false);
        incremental += i;
        full += f;
    }
    println!("{incremental} steps applied incrementally, {full} needed a full publish");
    assert!(incremental > full * 3, "{incremental} incremental, {full} full");
}

/// New zone settings over the records last published
/// ([`ZoneStore::publish_settings`]): after random records (published
/// whole or in parts) and random changes to them, edited SOA values
/// (TTL, negative TTL, timers, MNAME, RNAME), transfers and client table
/// answer like a full build of the same content, with the serial a full
/// publish would give.
#[test]
fn new_settings_over_kept_records_answer_like_full_builds() {
    for seed in 1..=8u64 {
        let in_parts = seed % 2 == 0;
        let mut model = random_model(&mut Rng(seed), &pool());
        let store = ZoneStore::new();
        if in_parts {
            let mut parts = parts_of(&model, 3).into_iter();
            store.publish_in_parts(model.contents(), &mut || parts.next()).unwrap();
        } else {
            store.publish(model.contents());
        }
        for edit in 1..=3 {
            let before = store.load().zones();
            model.settings_edit = edit;
            let Some(outcome) = store.publish_settings(&model.contents()) else {
                // Only zones with wildcards or cuts keep no tree; the
                // model has neither.
                panic!("seed {seed}, edit {edit}: settings not published over the kept records");
            };
            assert!(outcome.changed, "seed {seed}, edit {edit}");
            let after = store.load();
            assert_eq!(outcome.zones, after.zones(), "seed {seed}, edit {edit}");
            for (old, new) in before.iter().zip(after.zones()) {
                assert_ne!(
                    old.serial, new.serial,
                    "seed {seed}, edit {edit}: a new SOA is a new serial"
                );
            }
            // A full publish of the same content is no change: the
            // fingerprints and serials are a full publish's.
            assert!(
                !store.publish(model.contents()).changed,
                "seed {seed}, edit {edit}: a full publish of the same content changed the zones"
            );
            assert_same_as_full_build(&store.load(), &model, edit as usize, seed);
        }
        // Changes to names still apply after it.
        let owner = name(&format!("a0.{APEX}"));
        let change = ZoneChanges {
            apex: name(APEX),
            names: vec![(owner.clone(), vec![a(&owner, [192, 0, 2, 7])])],
            ..ZoneChanges::default()
        };
        model.zones.get_mut(APEX).unwrap().insert(
            owner.to_ascii(),
            Owner {
                records: vec![a(&owner, [192, 0, 2, 7])],
                routed: None,
            },
        );
        assert!(store.publish_changes(vec![change]).is_some(), "seed {seed}");
        assert_same_as_full_build(&store.load(), &model, 4, seed);
    }
}

/// What [`ZoneStore::publish_settings`] does not take: other name
/// servers or addresses, another set of zones, and a store that has
/// published nothing whole.
#[test]
fn settings_beyond_soa_transfers_and_clients_need_a_whole_publish() {
    let store = ZoneStore::new();
    assert!(
        store.publish_settings(&[small_zone()]).is_none(),
        "nothing published yet"
    );
    store.publish(vec![small_zone()]);
    let mut other_servers = small_zone();
    other_servers.name_servers.push(name("ns9.example.com."));
    assert!(store.publish_settings(&[other_servers]).is_none());
    let mut addresses = small_zone();
    addresses.name_server_addresses = vec![(name("ns1.example.com."), "192.0.2.1".parse().unwrap())];
    assert!(store.publish_settings(&[addresses]).is_none());
    assert!(store
        .publish_settings(&[small_zone(), ZoneContent::new(name("other.test."))])
        .is_none());
    assert!(store.publish_settings(&[]).is_none());
    // Settings as they are: nothing changes, nothing is rebuilt.
    let serial = store.load().zones()[0].serial;
    let outcome = store.publish_settings(&[small_zone()]).unwrap();
    assert!(!outcome.changed);
    assert_eq!(store.load().zones()[0].serial, serial);
}

pub(super) fn small_zone() -> ZoneContent {
    let apex = name(APEX);
    let www = name("www.example.com.");
    let mut zone = ZoneContent::new(apex);
    zone.records.push(a(&www, [192, 0, 2, 1]));
    zone.records.push(Record::from_rdata(
        name("txt.example.com."),
        30,
        RData::TXT(TXT::new(vec!["x".into()])),
    ));
    zone
}

fn change(owner: &str, records: Vec<Record>) -> ZoneChanges {
    ZoneChanges {
        apex: name(APEX),
        names: vec![(name(owner), records)],
        routed: Vec::new(),
    }
}

#[test]
fn serials_follow_the_full_publish_rules() {
    let store = ZoneStore::new();
    assert_eq!(store.publish_changes(vec![change("www.example.com.", vec![])]), None);
    store.seed_serial(APEX, 1000);
    store.publish(vec![small_zone()]);
    let serial = store.load().zones()[0].serial;
    let updates = store.updates();

    // The same records again: nothing changes, no serial.
    let www = name("www.example.com.");
    let same = store
        .publish_changes(vec![change("www.example.com.", vec![a(&www, [192, 0, 2, 1])])])
        .unwrap();
    assert!(!same.changed);
    assert_eq!(same.zones[0].serial, serial);
    assert_eq!(store.updates(), updates);

    // A new address: a new serial, in every answer that carries the SOA.
    let new = store
        .publish_changes(vec![change("www.example.com.", vec![a(&www, [192, 0, 2, 2])])])
        .unwrap();
    assert!(new.changed);
    let next = new.zones[0].serial;
    assert!(crate::zone::store::serial_gt(next, serial));
    assert_eq!(store.updates(), updates + 1);
    assert!(store.last_build_seconds() > 0.0);
    let snapshot = store.load();
    let config = AnswerConfig::default();
    let mut out = Vec::new();
    for (qname, qtype) in [
        ("www.example.com.", RecordType::TXT), // NODATA, stored before the change
        ("txt.example.com.", RecordType::A),   // NODATA of an unchanged name
        ("nope.example.com.", RecordType::A),  // NXDOMAIN fast path
        ("example.com.", RecordType::SOA),     // the SOA itself
    ] {
        answer(
            &snapshot,
            &query(&name(qname), qtype),
            Transport::Udp,
            &config,
            &mut out,
        );
        let message = Message::from_vec(&out).unwrap();
        let soa = message
            .answers
            .iter()
            .chain(&message.authorities)
            .find_map(|r| match &r.data {
                RData::SOA(soa) => Some(soa.serial),
                _ => None,
            });
        assert_eq!(soa, Some(next), "{qname} {qtype}");
    }
    // The full content after the change publishes as unchanged.
    let mut full = small_zone();
    full.records[0] = a(&www, [192, 0, 2, 2]);
    assert!(!store.publish(vec![full]).changed);
}

#[test]
fn changes_that_need_a_full_publish_return_none_and_apply_nothing() {
    let store = ZoneStore::new();
    store.publish(vec![small_zone()]);
    let before = store.load();
    let updates = store.updates();
    let www = name("www.example.com.");
    let unknown_zone = ZoneChanges {
        apex: name("example.org."),
        ..ZoneChanges::default()
    };
    let wildcard = change("*.example.com.", vec![a(&name("*.example.com."), [192, 0, 2, 9])]);
    let cut = change(
        "child.example.com.",
        vec![Record::from_rdata(
            name("child.example.com."),
            30,
            RData::NS(hickory_proto::rr::rdata::NS(name("ns.elsewhere.net."))),
        )],
    );
    let routed_unlisted = ZoneChanges {
        apex: name(APEX),
        names: Vec::new(),
        routed: vec![RoutedName {
            name: www.clone(),
            max_answers: None,
            sticky_within: None,
            policy: RoutingPolicy::Weighted,
            variants: Vec::new(),
        }],
    };
    let mut with_good = unknown_zone.clone();
    with_good.names = vec![(www.clone(), vec![a(&www, [192, 0, 2, 3])])];
    for changes in [
        vec![unknown_zone],
        vec![change("www.example.com.", vec![a(&www, [192, 0, 2, 3])]), with_good],
        vec![wildcard],
        vec![cut],
        vec![routed_unlisted],
    ] {
        assert_eq!(store.publish_changes(changes.clone()), None, "{changes:?}");
        assert!(Arc::ptr_eq(&before, &store.load()));
        assert_eq!(store.updates(), updates);
    }
    // A zone with a wildcard is always published in full.
    let mut wild = small_zone();
    wild.records.push(a(&name("*.example.com."), [192, 0, 2, 9]));
    store.publish(vec![wild]);
    assert_eq!(
        store.publish_changes(vec![change("www.example.com.", vec![a(&www, [192, 0, 2, 3])])]),
        None
    );
}

#[test]
fn transfer_zones_get_a_journal_entry_per_incremental_change() {
    let store = ZoneStore::new();
    let mut zone = small_zone();
    zone.transfer = TransferPolicy {
        allow: vec!["127.0.0.0/8".parse().unwrap()],
        ..TransferPolicy::default()
    };
    store.publish(vec![zone]);
    let apex = name(APEX);
    assert!(store.journal(&apex).is_empty());
    let www = name("www.example.com.");
    let outcome = store
        .publish_changes(vec![change("www.example.com.", vec![a(&www, [192, 0, 2, 4])])])
        .unwrap();
    let journal = store.journal(&apex);
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(journal[0].1, outcome.zones[0].serial);
}

/// Every stored answer of `got` against a full build of `contents` with
/// `got`'s serials; returns that build.
/// A whole publish in parts gives what a whole publish gives, and the
/// tree it leaves takes name-by-name changes as one built whole does.
#[test]
fn publishing_in_parts_answers_like_a_whole_publish() {
    for seed in 1..=12 {
        let (incremental, _) = run_sequence(seed, 10, true);
        assert!(incremental > 0, "seed {seed}");
    }
}

/// What a part cannot apply owner by owner (a wildcard, a zone not given)
/// publishes nothing and says so; the served snapshot stays.
#[test]
fn parts_that_need_a_whole_publish_return_none() {
    let store = ZoneStore::new();
    store.publish(vec![small_zone()]);
    let served = store.load();
    let wildcard = change("*.example.com.", vec![a(&name("*.example.com."), [192, 0, 2, 9])]);
    let mut parts = vec![vec![wildcard]].into_iter();
    assert!(store
        .publish_in_parts(vec![small_zone()], &mut || parts.next())
        .is_none());
    let elsewhere = ZoneChanges {
        apex: name("example.net."),
        names: vec![(
            name("www.example.net."),
            vec![a(&name("www.example.net."), [192, 0, 2, 1])],
        )],
        ..ZoneChanges::default()
    };
    let mut parts = vec![vec![elsewhere]].into_iter();
    assert!(store
        .publish_in_parts(vec![small_zone()], &mut || parts.next())
        .is_none());
    assert!(Arc::ptr_eq(&served, &store.load()), "nothing was published");
    // The next whole publish works as before.
    let mut parts = Vec::<Vec<ZoneChanges>>::new().into_iter();
    let mut bare = small_zone();
    bare.records.clear();
    assert!(store.publish_in_parts(vec![bare], &mut || parts.next()).is_some());
}

/// A zone that starts empty (every first start) and grows name by name
/// has its chunks split as it grows, as a whole build of the same names
/// would: an update then copies a chunk of a few hundred names, not one
/// holding every name.
#[test]
fn a_zone_grown_name_by_name_is_split_into_chunks() {
    let store = ZoneStore::new();
    let mut zone = ZoneContent::new(name(APEX));
    store.publish(vec![zone.clone()]);
    assert_eq!(store.load().chunk_count(), 1);
    for batch in 0..10u8 {
        let mut change = ZoneChanges {
            apex: name(APEX),
            ..ZoneChanges::default()
        };
        for i in 0..100u8 {
            let owner = name(&format!("n{batch}-{i}.{APEX}"));
            let record = a(&owner, [192, 0, 2, i + 1]);
            zone.records.push(record.clone());
            change.names.push((owner, vec![record]));
        }
        assert!(store.publish_changes(vec![change]).is_some(), "batch {batch}");
    }
    let got = store.load();
    // 1,001 names (the apex too): 4 chunks, as Snapshot::build makes.
    assert_eq!(got.chunk_count(), 4);
    assert_same_as_build_of(&got, vec![zone], "grown name by name");
}

fn assert_same_as_build_of(got: &Snapshot, contents: Vec<ZoneContent>, context: &str) -> Snapshot {
    let serials: BTreeMap<String, u32> = got.zones().into_iter().map(|z| (z.apex, z.serial)).collect();
    let contents: Vec<(ZoneContent, u32)> = contents
        .into_iter()
        .map(|c| {
            let serial = serials[&c.apex.to_ascii()];
            (c, serial)
        })
        .collect();
    let want = Snapshot::build(&contents);
    assert_same_answers(got, &want, context);
    want
}

/// `got` serves the zones, names and stored answers `want` serves.
pub(super) fn assert_same_answers(got: &Snapshot, want: &Snapshot, context: &str) {
    assert_eq!(got.zones(), want.zones(), "{context}: zone summaries");
    assert_eq!(got.keys(), want.keys(), "{context}: names served");
    for key in want.keys() {
        for qtype in TYPES {
            let qtype = u16::from(qtype);
            assert_eq!(
                got.stored_responses(&key, qtype),
                want.stored_responses(&key, qtype),
                "{context}: answers of {key:?} type {qtype}"
            );
        }
    }
}

/// A type new to the zone, or its last RRset going, is applied name by
/// name like any change (the bench's zone loses its last CNAME fallbacks
/// as it converges; a whole publish then cost 1.9 s and the memory peak).
#[test]
fn record_types_appearing_and_going_are_applied_incrementally() {
    let store = ZoneStore::new();
    let www = name("www.example.com.");
    let alias = name("alias.example.com.");
    let mut zone = small_zone();
    zone.records.push(Record::from_rdata(
        alias.clone(),
        30,
        RData::CNAME(hickory_proto::rr::rdata::CNAME(www.clone())),
    ));
    store.publish(vec![zone.clone()]);
    let aaaa = Record::from_rdata(www.clone(), 30, RData::AAAA("2001:db8::1".parse().unwrap()));
    let steps: Vec<(&str, ZoneChanges)> = vec![
        (
            "AAAA appears",
            change("www.example.com.", vec![a(&www, [192, 0, 2, 1]), aaaa.clone()]),
        ),
        ("TXT goes", change("txt.example.com.", vec![])),
        ("AAAA goes", change("www.example.com.", vec![a(&www, [192, 0, 2, 1])])),
        ("CNAME goes", change("alias.example.com.", vec![])),
    ];
    for (what, step) in steps {
        let (owner, records) = step.names[0].clone();
        zone.records.retain(|r| r.name != owner);
        zone.records.extend(records);
        assert!(store.publish_changes(vec![step]).is_some(), "{what}: not applied");
        assert_same_as_build_of(&store.load(), vec![zone.clone()], what);
    }
}

/// A whole render on several threads (each owning a range of chunks)
/// stores what the one-thread render stores: every name's answers, the
/// skipped list, the routes and the query path's answers.
#[test]
fn a_render_on_several_threads_stores_what_one_thread_does() {
    let mut rng = Rng(0x5eed_7e4d);
    let mut model = random_model(&mut rng, &pool());
    // Enough names for many chunks (128 names each).
    let zone = model.zones.get_mut(APEX).unwrap();
    for i in 0..3000u32 {
        let owner = format!("bulk{i}.{APEX}");
        let ip = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
        zone.insert(
            owner.clone(),
            Owner {
                records: vec![a(&name(&owner), ip)],
                routed: None,
            },
        );
    }
    let contents: Vec<(ZoneContent, u32)> = model.contents().into_iter().map(|c| (c, 7)).collect();
    let render = |threads| {
        let (tree, skipped) = crate::zone::tree::Tree::build(&contents);
        Snapshot::from_tree_on(tree, skipped, &contents, &|_| false, None, Some(threads)).0
    };
    let one = render(1);
    assert!(one.chunk_count() >= 16, "{} chunks", one.chunk_count());
    for threads in [2, 3, 5] {
        let many = render(threads);
        let context = format!("{threads} threads");
        assert_eq!(many.chunk_count(), one.chunk_count(), "{context}: chunks");
        assert_same_answers(&many, &one, &context);
        assert_eq!(many.skipped(), one.skipped(), "{context}: skipped");
        assert_eq!(many.routes(), one.routes(), "{context}: routes");
    }
    // The model itself answers as its full build does.
    assert_same_as_build_of(&one, model.contents(), "one thread");
}
