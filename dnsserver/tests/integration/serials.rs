//! A store following recorded serials (`SerialMode::Follow`, so that every
//! DNS server replica of a Domain serves one serial for one content):
//! a zone's serial is the one recorded for its content, answers switch to a
//! new one at the record's instant without another publish, and transfers
//! move only to versions built from the recorded content.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::Message;
use fedns_dnsserver::hickory_proto::rr::{RData, Record, RecordType};
use fedns_dnsserver::{
    answer, AnswerConfig, RecordedSerial, SerialMode, TransferPolicy, Transport, ZoneContent, ZoneStore,
};

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The serial in the SOA `store` answers for `qname` (the apex SOA, or
/// the negative answer's SOA).
fn serial_answered(store: &ZoneStore, qname: &str) -> u32 {
    let packet = simple_query(qname, RecordType::SOA, None);
    let mut out = Vec::new();
    answer(
        &store.load(),
        &packet,
        Transport::Udp,
        &AnswerConfig::default(),
        &mut out,
    )
    .unwrap();
    let message = Message::from_vec(&out).unwrap();
    message
        .answers
        .iter()
        .chain(message.authorities.iter())
        .find_map(|r| match &r.data {
            RData::SOA(soa) => Some(soa.serial),
            _ => None,
        })
        .unwrap()
}

fn zone(records: &[(&str, &str)]) -> ZoneContent {
    let mut zone = fixture_zones().into_iter().next().unwrap();
    // No wildcard, no delegation: the store keeps its tree and takes
    // recorded serials in place.
    zone.records
        .retain(|r| !r.name.is_wildcard() && r.record_type() != RecordType::NS && !r.name.to_ascii().contains("sub."));
    for (owner, address) in records {
        zone.records
            .push(Record::from_rdata(name(owner), 30, rdata(RecordType::A, address)));
    }
    zone.transfer = TransferPolicy {
        allow: vec!["127.0.0.1/32".parse().unwrap()],
        ..TransferPolicy::default()
    };
    zone
}

fn follow(serial: u32, content: u64, active_from_ms: u64, previous: Option<u32>) -> SerialMode {
    let record = RecordedSerial {
        serial,
        content,
        active_from_ms,
        previous,
    };
    SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), Some(record))]))
}

/// example.com followed, nothing recorded for it yet.
fn nothing_recorded() -> SerialMode {
    SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), None)]))
}

#[test]
fn a_follower_serves_recorded_serials_from_their_instant() {
    let store = ZoneStore::new();
    let apex = name("example.com.");
    let _ = store.set_serial_mode(nothing_recorded());
    store.publish(vec![zone(&[("a.example.com.", "192.0.2.1")])]);
    let first = store.serial_states().remove(0);
    assert!(!first.confirmed, "nothing recorded yet: {first:?}");
    assert_eq!(serial_answered(&store, "example.com."), 0);

    // The record of this content, due: served, and transfers have it.
    assert_eq!(store.set_serial_mode(follow(100, first.content, 0, None)), Ok(true));
    assert_eq!(serial_answered(&store, "example.com."), 100);
    assert!(store.serial_states()[0].confirmed);

    // New content: answered at once, under the same serial until its
    // record comes due.
    store.publish(vec![zone(&[("a.example.com.", "192.0.2.2")])]);
    let second = store.serial_states().remove(0);
    assert_ne!(second.content, first.content);
    assert_eq!(serial_answered(&store, "example.com."), 100);
    let due = now_ms() + 300;
    store
        .set_serial_mode(follow(200, second.content, due, Some(100)))
        .unwrap();
    // A third content before the instant: the version held is the second.
    store.publish(vec![zone(&[("a.example.com.", "192.0.2.3")])]);
    assert_eq!(serial_answered(&store, "example.com."), 100);
    assert_eq!(serial_answered(&store, "missing.example.com."), 100);
    assert_eq!(store.next_serial_due(), Some(due));
    // The instant: answers switch by themselves (no publish), the negative
    // SOA too.
    std::thread::sleep(Duration::from_millis(350));
    assert_eq!(serial_answered(&store, "example.com."), 200);
    assert_eq!(serial_answered(&store, "missing.example.com."), 200);
    // Taken up, transfers move to the version of the second content.
    assert_eq!(
        store.set_serial_mode(follow(200, second.content, due, Some(100))),
        Ok(true)
    );
    assert_eq!(store.journal(&apex), vec![(100, 200)]);
    assert_eq!(store.serial_states()[0].serial, 200);
    assert_eq!(store.next_serial_due(), None);

    // A record of content this store never had: shown once due, without
    // its version (transfers stay at 200).
    store.set_serial_mode(follow(300, 0xDEAD, 0, Some(200))).unwrap();
    assert_eq!(serial_answered(&store, "example.com."), 300);
    assert!(!store.serial_states()[0].confirmed);
    assert_eq!(store.journal(&apex), vec![(100, 200)]);
    // Never below a recorded serial shown.
    let third = store.serial_states()[0].content;
    store.set_serial_mode(follow(250, third, 0, Some(200))).unwrap();
    assert_eq!(serial_answered(&store, "example.com."), 300);
}

/// A record that reaches a store only after its instant, for a zone it
/// serves with an older serial, is counted once (a replica that showed the
/// previous serial meanwhile); a store starting on a due record is not late.
#[test]
fn records_learned_after_their_instant_are_counted() {
    let store = ZoneStore::new();
    let _ = store.set_serial_mode(follow(100, 0xA, 0, None));
    store.publish(vec![zone(&[("a.example.com.", "192.0.2.1")])]);
    assert_eq!(serial_answered(&store, "example.com."), 100);
    assert_eq!(store.late_serial_records(), 0, "a store starting on a due record");
    let late = follow(200, 0xB, now_ms() - 500, Some(100));
    store.set_serial_mode(late.clone()).unwrap();
    assert_eq!(serial_answered(&store, "example.com."), 200);
    assert_eq!(store.late_serial_records(), 1);
    store.set_serial_mode(late).unwrap();
    assert_eq!(store.late_serial_records(), 1, "the same record again");
    store
        .set_serial_mode(follow(300, 0xC, now_ms() + 60_000, Some(200)))
        .unwrap();
    assert_eq!(store.late_serial_records(), 1, "a record on time");
}

/// A store that starts while a record is pending for other content shows
/// the previous serial with a switch at the instant. When the writer's
/// next record (its `previous` the pending one) arrives after that instant
/// but before the store applied the switch (the writer records it at that
/// very instant), the store shows the pending record's serial, not the one
/// before: one whole record behind the other replicas, until the next
/// instant, was how the replicas test
/// (controller/tests/integration/replicas.rs) once failed.
#[test]
fn a_switch_not_yet_applied_survives_the_next_record() {
    let store = ZoneStore::new();
    let pending_until = now_ms() + 300;
    let _ = store.set_serial_mode(follow(200, 0xB, pending_until, Some(100)));
    store.publish(vec![zone(&[("a.example.com.", "192.0.2.1")])]);
    assert_eq!(serial_answered(&store, "example.com."), 100, "before the instant");
    std::thread::sleep(Duration::from_millis(pending_until.saturating_sub(now_ms()) + 20));
    assert_eq!(serial_answered(&store, "example.com."), 200, "at the instant");
    // The next record (not yet due) arrives before the store was told
    // the first came due.
    let content = store.serial_states()[0].content;
    store
        .set_serial_mode(follow(300, content, now_ms() + 60_000, Some(200)))
        .unwrap();
    assert_eq!(
        serial_answered(&store, "example.com."),
        200,
        "the serial went back to the one before the first record"
    );
}

/// With a wildcard the store keeps no tree: taking a record needs a whole
/// publish, which then serves it.
#[test]
fn a_zone_with_a_wildcard_takes_recorded_serials_at_its_next_publish() {
    let store = ZoneStore::new();
    let _ = store.set_serial_mode(nothing_recorded());
    let mut content = zone(&[]);
    content.records.push(Record::from_rdata(
        name("*.w.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.9"),
    ));
    store.publish(vec![content.clone()]);
    let state = store.serial_states().remove(0);
    assert_eq!(
        store.set_serial_mode(follow(100, state.content, 0, None)),
        Err(fedns_dnsserver::NeedsWholePublish)
    );
    store.publish(vec![content]);
    assert_eq!(serial_answered(&store, "example.com."), 100);
    assert_eq!(store.journal(&name("example.com.")), Vec::new());
    assert!(store.serial_states()[0].confirmed);
}
