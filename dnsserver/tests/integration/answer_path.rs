//! The query path and the store through the public API, without sockets.

use std::sync::Arc;

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::{Message, ResponseCode};
use fedns_dnsserver::hickory_proto::rr::{RData, Record, RecordType};
use fedns_dnsserver::{answer, AnswerConfig, Transport, ZoneContent, ZoneStore};

fn ask(store: &ZoneStore, qname: &str, qtype: RecordType, edns: EdnsOpt, transport: Transport) -> Message {
    let packet = simple_query(qname, qtype, edns);
    let mut out = Vec::new();
    answer(&store.load(), &packet, transport, &AnswerConfig::default(), &mut out).expect("an answer");
    Message::from_vec(&out).expect("decodable response")
}

fn store_with_fixture() -> Arc<ZoneStore> {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    store
}

#[test]
fn empty_store_refuses_everything() {
    let store = ZoneStore::new();
    let m = ask(&store, "example.com.", RecordType::SOA, None, Transport::Udp);
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    assert!(!m.metadata.authoritative);
}

#[test]
fn serial_rises_only_when_a_zone_changes() {
    let store = ZoneStore::new();
    let first = store.publish(fixture_zones());
    assert!(first.changed);
    let again = store.publish(fixture_zones());
    assert!(!again.changed, "an identical publish must not rebuild");
    assert_eq!(first.zones, again.zones);
    assert_eq!(store.updates(), 1);

    let mut zones = fixture_zones();
    zones[0].records.push(Record::from_rdata(
        name("new.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.99"),
    ));
    let changed = store.publish(zones);
    assert!(changed.changed);
    let serial =
        |o: &fedns_dnsserver::PublishOutcome, apex: &str| o.zones.iter().find(|z| z.apex == apex).unwrap().serial;
    assert!(fedns_dnsserver::serial_gt(
        serial(&changed, "example.com."),
        serial(&first, "example.com.")
    ));
    assert_eq!(
        serial(&changed, "example.org."),
        serial(&first, "example.org."),
        "untouched zone keeps its serial"
    );

    let m = ask(&store, "example.com.", RecordType::SOA, None, Transport::Udp);
    match &m.answers[0].data {
        RData::SOA(soa) => assert_eq!(soa.serial, serial(&changed, "example.com.")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn seeded_serial_keeps_rising_across_restarts() {
    let store = ZoneStore::new();
    let far_future = u32::MAX - 10;
    store.seed_serial("example.com", far_future);
    let outcome = store.publish(fixture_zones());
    let serial = outcome.zones.iter().find(|z| z.apex == "example.com.").unwrap().serial;
    assert!(
        fedns_dnsserver::serial_gt(serial, far_future),
        "{serial} after {far_future}"
    );
}

#[test]
fn unservable_records_are_skipped_and_reported() {
    let mut zone = ZoneContent::new(name("example.com."));
    zone.records.push(Record::from_rdata(
        name("a.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.1"),
    ));
    zone.records.push(Record::from_rdata(
        name("a.example.com."),
        30,
        rdata(RecordType::CNAME, "b.example.com."),
    ));
    zone.records.push(Record::from_rdata(
        name("outside.example.net."),
        30,
        rdata(RecordType::A, "192.0.2.2"),
    ));
    zone.records.push(Record::from_rdata(
        name("example.com."),
        30,
        rdata(RecordType::CNAME, "x.example.com."),
    ));
    let store = ZoneStore::new();
    let outcome = store.publish(vec![zone]);
    let reasons: Vec<String> = outcome
        .skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.name, s.record_type, s.reason))
        .collect();
    assert_eq!(outcome.skipped.len(), 3, "{reasons:#?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("a.example.com. CNAME") && r.contains("RFC 1034")),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("outside.example.net.") && r.contains("outside zone")),
        "{reasons:#?}"
    );
    // The A record survives the CNAME conflict (A/AAAA beat CNAME).
    let m = ask(&store, "a.example.com.", RecordType::A, None, Transport::Udp);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].record_type(), RecordType::A);
}

#[test]
fn large_answers_truncate_over_udp_and_fit_over_tcp() {
    let store = store_with_fixture();
    let udp = ask(
        &store,
        "big.example.com.",
        RecordType::A,
        Some((1232, false)),
        Transport::Udp,
    );
    assert!(udp.metadata.truncation);
    assert!(udp.answers.is_empty());
    assert_eq!(udp.edns.as_ref().map(|e| e.max_payload()), Some(1232));
    let tcp = ask(
        &store,
        "big.example.com.",
        RecordType::A,
        Some((1232, false)),
        Transport::Tcp,
    );
    assert!(!tcp.metadata.truncation);
    assert_eq!(tcp.answers.len(), 100);
    // Without EDNS the limit is 512 octets.
    let medium = ask(&store, "medium.example.com.", RecordType::A, None, Transport::Udp);
    assert!(medium.metadata.truncation);
    let medium = ask(
        &store,
        "medium.example.com.",
        RecordType::A,
        Some((1232, false)),
        Transport::Udp,
    );
    assert_eq!(medium.answers.len(), 40);
}

#[test]
fn tiny_packets_and_responses_get_no_answer() {
    let store = store_with_fixture();
    let mut out = Vec::new();
    for len in 0..12 {
        assert!(answer(
            &store.load(),
            &vec![0u8; len],
            Transport::Udp,
            &AnswerConfig::default(),
            &mut out
        )
        .is_none());
    }
    let mut response = simple_query("example.com.", RecordType::A, None);
    response[2] |= 0x80; // QR: a response
    assert!(answer(
        &store.load(),
        &response,
        Transport::Udp,
        &AnswerConfig::default(),
        &mut out
    )
    .is_none());
}

#[test]
fn id_rd_and_cd_are_copied_and_question_echoed_as_asked() {
    let store = store_with_fixture();
    let mut packet = simple_query("NgInX.ns.myfed.svc.EXAMPLE.com.", RecordType::A, None);
    packet[0] = 0xBE;
    packet[1] = 0xEF;
    packet[3] |= 0x10; // CD
    let mut out = Vec::new();
    answer(
        &store.load(),
        &packet,
        Transport::Udp,
        &AnswerConfig::default(),
        &mut out,
    )
    .unwrap();
    let m = Message::from_vec(&out).unwrap();
    assert_eq!(m.metadata.id, 0xBEEF);
    assert!(m.metadata.recursion_desired);
    assert!(m.metadata.checking_disabled);
    assert!(!m.metadata.recursion_available);
    assert!(m.metadata.authoritative);
    assert_eq!(m.queries[0].name.to_ascii(), "NgInX.ns.myfed.svc.EXAMPLE.com.");
    assert_eq!(m.answers.len(), 3);
}

/// Readers never see a half-built snapshot: while one thread publishes
/// alternating contents, another always gets one of the two full answers.
#[test]
fn publishes_are_atomic_for_readers() {
    let store = ZoneStore::new();
    let zone = |n: u8| {
        let mut z = ZoneContent::new(name("example.com."));
        for i in 0..50u8 {
            z.records.push(Record::from_rdata(
                name(&format!("h{i}.example.com.")),
                30,
                rdata(RecordType::A, &format!("192.0.2.{n}")),
            ));
        }
        z
    };
    store.publish(vec![zone(1)]);
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || {
            for round in 0..200u32 {
                store.publish(vec![zone(if round % 2 == 0 { 2 } else { 1 })]);
            }
        })
    };
    let mut seen = std::collections::BTreeSet::new();
    while !writer.is_finished() {
        let snapshot = store.load();
        // All 50 names in one snapshot agree.
        let mut values = std::collections::BTreeSet::new();
        for i in 0..50 {
            let packet = simple_query(&format!("h{i}.example.com."), RecordType::A, None);
            let mut out = Vec::new();
            answer(&snapshot, &packet, Transport::Udp, &AnswerConfig::default(), &mut out).unwrap();
            let m = Message::from_vec(&out).unwrap();
            values.insert(m.answers[0].data.to_string());
        }
        assert_eq!(values.len(), 1, "one snapshot mixed two versions: {values:?}");
        seen.extend(values);
    }
    writer.join().unwrap();
    assert!(!seen.is_empty());
}

/// 5,000 A records at one name make an answer of about 80,000 octets: no
/// message carries it (65,535 at most over TCP). It is reported, and the
/// rest of the zone is served.
#[test]
fn an_answer_larger_than_any_message_is_reported() {
    let mut zone = ZoneContent::new(name("example.com."));
    for i in 0..5_000u32 {
        let address = std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string();
        zone.records.push(Record::from_rdata(
            name("huge.example.com."),
            30,
            rdata(RecordType::A, &address),
        ));
    }
    zone.records.push(Record::from_rdata(
        name("small.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.1"),
    ));
    let store = ZoneStore::new();
    let outcome = store.publish(vec![zone]);
    let reasons: Vec<String> = outcome
        .skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.name, s.record_type, s.reason))
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("huge.example.com.") && r.contains("more than one DNS message holds")),
        "{reasons:#?}"
    );
    assert!(
        !reasons.iter().any(|r| r.starts_with("small.example.com.")),
        "{reasons:#?}"
    );
    let m = ask(&store, "small.example.com.", RecordType::A, None, Transport::Tcp);
    assert_eq!(m.answers.len(), 1);
    let m = ask(&store, "huge.example.com.", RecordType::A, None, Transport::Tcp);
    assert!(m.metadata.truncation, "no transport carries it: TC");
}

/// In-zone name server addresses (zone settings): answered as A/AAAA with
/// the SOA TTL, a record given for such a name is skipped and reported,
/// and a change listing that name keeps the addresses; a change of the
/// addresses is a new serial.
#[test]
fn in_zone_name_server_addresses_come_from_the_settings() {
    let mut zone = ZoneContent::new(name("example.com."))
        .with_record(name("ns1.example.com."), 300, rdata(RecordType::A, "203.0.113.1"))
        .with_record(name("www.example.com."), 300, rdata(RecordType::A, "203.0.113.2"));
    zone.name_server_addresses = vec![
        (name("NS1.example.com."), "192.0.2.53".parse().unwrap()),
        (name("ns1.example.com."), "2001:db8::53".parse().unwrap()),
        (name("ns1.other.net."), "198.51.100.1".parse().unwrap()),
    ];
    let store = ZoneStore::new();
    let first = store.publish(vec![zone.clone()]);
    let skipped: Vec<String> = first
        .skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.name, s.record_type, s.reason))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("ns1.other.net. A: name is outside zone")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("ns1.example.com. A: name is an in-zone name server")),
        "{skipped:?}"
    );
    let a = ask(&store, "ns1.example.com.", RecordType::A, None, Transport::Udp);
    assert_eq!(rrs(&a.answers), ["ns1.example.com. 30 in a 192.0.2.53"]);
    let aaaa = ask(&store, "ns1.example.com.", RecordType::AAAA, None, Transport::Udp);
    assert_eq!(rrs(&aaaa.answers), ["ns1.example.com. 30 in aaaa 2001:db8::53"]);

    // A change listing the name: its records are skipped, the addresses stay.
    store
        .publish_changes(vec![fedns_dnsserver::ZoneChanges {
            apex: name("example.com."),
            names: vec![(
                name("ns1.example.com."),
                vec![Record::from_rdata(
                    name("ns1.example.com."),
                    60,
                    rdata(RecordType::A, "203.0.113.9"),
                )],
            )],
            routed: vec![],
        }])
        .expect("applied name by name");
    let a = ask(&store, "ns1.example.com.", RecordType::A, None, Transport::Udp);
    assert_eq!(rrs(&a.answers), ["ns1.example.com. 30 in a 192.0.2.53"]);

    // New addresses: a new serial.
    zone.name_server_addresses.truncate(1);
    zone.name_server_addresses[0].1 = "192.0.2.54".parse().unwrap();
    let second = store.publish(vec![zone]);
    assert!(second.changed);
    assert_ne!(first.zones, second.zones);
    let aaaa = ask(&store, "ns1.example.com.", RecordType::AAAA, None, Transport::Udp);
    assert!(aaaa.answers.is_empty(), "NODATA: {aaaa:?}");
    let a = ask(&store, "ns1.example.com.", RecordType::A, None, Transport::Udp);
    assert_eq!(rrs(&a.answers), ["ns1.example.com. 30 in a 192.0.2.54"]);
}

/// `answer_kind` reads each answer's shape from the response, as the
/// `fedns_dns_answers_total{kind}` metric counts it.
#[test]
fn answers_are_classified_by_shape() {
    use fedns_dnsserver::{answer_kind, AnswerKind};
    let store = store_with_fixture();
    let kind = |qname: &str, qtype: RecordType| {
        let packet = simple_query(qname, qtype, None);
        let mut out = Vec::new();
        answer(
            &store.load(),
            &packet,
            Transport::Udp,
            &AnswerConfig::default(),
            &mut out,
        )
        .expect("an answer");
        answer_kind(&out)
    };
    assert_eq!(
        kind("nginx.ns.myfed.svc.example.com.", RecordType::A),
        AnswerKind::Records
    );
    assert_eq!(kind("WWW.example.com.", RecordType::A), AnswerKind::Cname);
    assert_eq!(kind("www.example.com.", RecordType::CNAME), AnswerKind::Records);
    assert_eq!(kind("missing.example.com.", RecordType::A), AnswerKind::NxDomain);
    assert_eq!(kind("mail.example.com.", RecordType::AAAA), AnswerKind::NoData);
    assert_eq!(kind("example.net.", RecordType::A), AnswerKind::Other);
    // Truncated (TC) and unreadable responses.
    assert_eq!(kind("big.example.com.", RecordType::A), AnswerKind::Other);
    assert_eq!(answer_kind(&[0; 5]), AnswerKind::Other);
    assert_eq!(
        answer_kind(&[0, 0, 0x80, 0, 0, 1, 0, 1, 0, 0, 0, 0, 7, b'x']),
        AnswerKind::Other
    );
}
