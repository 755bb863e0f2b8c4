//! The query path allocates nothing once its output buffer has grown:
//! checked with a counting global allocator (this test binary only) over
//! answers of plain, Weighted and Nearest names, with and without EDNS
//! Client Subnet.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::IpAddr;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsOption};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::answer::{answer_from, AnswerConfig, Transport};
use crate::zone::content::ZoneContent;
use crate::zone::routing::{ClientRegions, RoutedName, RoutedVariant, RoutingPolicy};
use crate::zone::snapshot::Snapshot;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn a(owner: &str, ip: &str) -> Record {
    Record::from_rdata(
        name(owner),
        30,
        RData::A(ip.parse::<std::net::Ipv4Addr>().unwrap().into()),
    )
}

fn zone() -> ZoneContent {
    let mut zone = ZoneContent::new(name("example.com."));
    let ips = ["203.0.113.1", "203.0.113.2", "203.0.113.3"];
    for owner in [
        "plain.example.com.",
        "w.example.com.",
        "n.example.com.",
        "s.example.com.",
        "m.example.com.",
        "ns.example.com.",
    ] {
        for ip in ips {
            zone.records.push(a(owner, ip));
        }
    }
    zone.records.push(Record::from_rdata(
        name("www.example.com."),
        30,
        RData::CNAME(hickory_proto::rr::rdata::CNAME(name("n.example.com."))),
    ));
    let variants = |owner: &str| -> Vec<RoutedVariant> {
        ips.iter()
            .enumerate()
            .map(|(i, ip)| RoutedVariant {
                id: format!("c{i}"),
                weight: i as u32 + 1,
                region: Some(["eu", "us", "ap"][i].into()),
                records: vec![a(owner, ip)],
            })
            .collect()
    };
    zone.routed = vec![
        RoutedName {
            name: name("w.example.com."),
            policy: RoutingPolicy::Weighted,
            variants: variants("w.example.com."),
            max_answers: None,
            sticky_within: None,
        },
        RoutedName {
            name: name("s.example.com."),
            policy: RoutingPolicy::StickyWeighted {
                v4_prefix: 24,
                v6_prefix: 56,
            },
            variants: variants("s.example.com."),
            max_answers: None,
            sticky_within: None,
        },
        RoutedName {
            name: name("n.example.com."),
            policy: RoutingPolicy::Nearest {
                fallback: vec!["us".into()],
            },
            variants: variants("n.example.com."),
            max_answers: None,
            sticky_within: None,
        },
        // maxAnswers on a sticky Weighted name (windows picked by subnet).
        RoutedName {
            name: name("m.example.com."),
            policy: RoutingPolicy::StickyWeighted {
                v4_prefix: 24,
                v6_prefix: 56,
            },
            variants: variants("m.example.com."),
            max_answers: Some(2),
            sticky_within: None,
        },
        // Nearest, sticky within the region's set.
        RoutedName {
            name: name("ns.example.com."),
            policy: RoutingPolicy::Nearest { fallback: vec![] },
            variants: variants("ns.example.com."),
            max_answers: Some(1),
            sticky_within: Some((24, 56)),
        },
    ];
    zone.client_regions = ClientRegions {
        networks: vec![
            ("192.0.2.0/24".parse().unwrap(), "eu".into()),
            ("2001:db8::/32".parse().unwrap(), "ap".into()),
        ],
        ..Default::default()
    };
    zone
}

fn query(qname: &str, ecs: Option<(&str, u8)>) -> Vec<u8> {
    let mut message = Message::new(7, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(name(qname), RecordType::A));
    let mut edns = Edns::new();
    if let Some((addr, prefix)) = ecs {
        edns.options_mut()
            .insert(EdnsOption::Subnet(ClientSubnet::new(addr.parse().unwrap(), prefix, 0)));
    }
    message.set_edns(edns);
    message.to_vec().unwrap()
}

#[test]
fn the_query_path_does_not_allocate() {
    let snapshot = Snapshot::build(&[(zone(), 1)]);
    assert!(snapshot.skipped().is_empty(), "{:?}", snapshot.skipped());
    let queries: Vec<Vec<u8>> = ["plain", "w", "s", "n", "m", "ns", "www", "missing"]
        .iter()
        .flat_map(|label| {
            let qname = format!("{label}.example.com.");
            [
                query(&qname, None),
                query(&qname, Some(("192.0.2.0", 24))),
                query(&qname, Some(("2001:db8::", 48))),
                query(&qname, Some(("0.0.0.0", 0))),
            ]
        })
        .collect();
    let config = AnswerConfig::default();
    let source: IpAddr = "198.51.100.9".parse().unwrap();
    let mut out = Vec::with_capacity(4096);
    // Warm up: thread-locals (the random number state) and the buffer.
    for q in &queries {
        answer_from(&snapshot, q, Transport::Udp, &config, source, &mut out).unwrap();
    }
    // The counter counts (a check of the check).
    let probe = ALLOCATIONS.with(Cell::get);
    drop(std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert!(
        ALLOCATIONS.with(Cell::get) > probe,
        "the counting allocator is not in use"
    );
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..200 {
        for q in &queries {
            answer_from(&snapshot, q, Transport::Udp, &config, source, &mut out).unwrap();
        }
    }
    let allocations = ALLOCATIONS.with(Cell::get) - before;
    assert_eq!(allocations, 0, "{allocations} allocations on the query path");
}

fn query_do(qname: &str, qtype: RecordType, ecs: Option<(&str, u8)>) -> Vec<u8> {
    let mut message = Message::new(7, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(name(qname), qtype));
    let mut edns = Edns::new();
    edns.set_dnssec_ok(true);
    edns.set_max_payload(1232);
    if let Some((addr, prefix)) = ecs {
        edns.options_mut()
            .insert(EdnsOption::Subnet(ClientSubnet::new(addr.parse().unwrap(), prefix, 0)));
    }
    message.set_edns(edns);
    message.to_vec().unwrap()
}

/// With DO in a signed zone: pre-signed answers (plain, Weighted,
/// Nearest, CNAME chain, NODATA) are copied out, and a missing name's
/// compact-denial NSEC is signed on the stack (or, denying by NSEC
/// chain, its pre-signed links are found by binary search); nothing
/// allocates.
#[test]
fn signed_answers_do_not_allocate() {
    use crate::zone::signing_key::{DenialOfExistence, DnssecAlgorithm, DnssecConfig, DnssecKey};
    let modes = [
        (DnssecAlgorithm::EcdsaP256Sha256, DenialOfExistence::Compact),
        (DnssecAlgorithm::Ed25519, DenialOfExistence::Compact),
        (DnssecAlgorithm::EcdsaP256Sha256, DenialOfExistence::Nsec),
    ];
    for (algorithm, denial) in modes {
        let mut zone = zone();
        let pkcs8 = DnssecKey::generate_pkcs8(algorithm).unwrap();
        zone.dnssec = Some(DnssecConfig {
            key: DnssecKey::from_pkcs8(algorithm, &pkcs8).unwrap(),
            zone_signing_key: None,
            standby: Vec::new(),
            signature_validity: 1_209_600,
            signature_refresh: 604_800,
            denial,
        });
        let snapshot = Snapshot::build(&[(zone, 1)]);
        assert!(snapshot.skipped().is_empty(), "{:?}", snapshot.skipped());
        let mut queries: Vec<Vec<u8>> = ["plain", "w", "n", "www", "missing", "a.b.missing"]
            .iter()
            .flat_map(|label| {
                let qname = format!("{label}.example.com.");
                [
                    query_do(&qname, RecordType::A, None),
                    query_do(&qname, RecordType::A, Some(("192.0.2.0", 24))),
                    query_do(&qname, RecordType::TXT, Some(("2001:db8::", 48))),
                ]
            })
            .collect();
        queries.push(query_do("example.com.", RecordType::DNSKEY, None));
        queries.push(query_do("example.com.", RecordType::SOA, None));
        let config = AnswerConfig::default();
        let source: IpAddr = "198.51.100.9".parse().unwrap();
        let mut out = Vec::with_capacity(4096);
        for q in &queries {
            answer_from(&snapshot, q, Transport::Udp, &config, source, &mut out).unwrap();
            let response = Message::from_vec(&out).unwrap_or_else(|e| panic!("{denial:?}: {e}: {out:?}"));
            let signed = response
                .answers
                .iter()
                .chain(&response.authorities)
                .any(|r| r.record_type() == RecordType::RRSIG);
            assert!(signed, "no RRSIG in {response:?}");
        }
        let before = ALLOCATIONS.with(Cell::get);
        let started = std::time::Instant::now();
        for _ in 0..50 {
            for q in &queries {
                answer_from(&snapshot, q, Transport::Udp, &config, source, &mut out).unwrap();
            }
        }
        let elapsed = started.elapsed();
        let allocations = ALLOCATIONS.with(Cell::get) - before;
        assert_eq!(allocations, 0, "{allocations} allocations on the signed query path");
        // A figure, not an assertion: with compact denial the missing
        // names sign per query.
        let nx = query_do("missing.example.com.", RecordType::A, None);
        let started = std::time::Instant::now();
        for _ in 0..200 {
            answer_from(&snapshot, &nx, Transport::Udp, &config, source, &mut out).unwrap();
        }
        println!(
            "{algorithm:?}, {denial:?}: {} queries in {elapsed:?}; a missing name: {:?} each",
            50 * queries.len(),
            started.elapsed() / 200
        );
    }
}
