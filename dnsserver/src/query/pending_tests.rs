//! Names a zone lists as pending (`ZoneContent::pending`) are answered
//! SERVFAIL, whatever the type, through the whole query path (tests).
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{Name, RData, RecordType};

use crate::query::answer::{answer, AnswerConfig, Transport};
use crate::query::check::check_answer;
use crate::zone::content::ZoneContent;
use crate::zone::snapshot::Snapshot;

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn ask(snapshot: &Snapshot, qname: &str, qtype: RecordType) -> (Vec<u8>, Message) {
    let mut message = Message::new(7, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(name(qname), qtype));
    let packet = message.to_vec().unwrap();
    check_answer(snapshot, &packet).unwrap();
    let mut out = Vec::new();
    answer(snapshot, &packet, Transport::Udp, &AnswerConfig::default(), &mut out).unwrap();
    (packet, Message::from_vec(&out).unwrap())
}

/// A pending name gets SERVFAIL for every type, the question echoed
/// and no records; a sibling, a name below it and the apex are
/// answered; a CNAME to it stops there; without pending names the
/// same zone answers as before.
#[test]
fn pending_names_get_servfail_and_nothing_else_does() {
    let ip = |last: u8| RData::A(std::net::Ipv4Addr::new(192, 0, 2, last).into());
    let zone = ZoneContent::new(name("example.com."))
        .with_record(name("sibling.example.com."), 30, ip(1))
        .with_record(name("x.wait.example.com."), 30, ip(2))
        .with_record(
            name("alias.example.com."),
            30,
            RData::CNAME(CNAME(name("wait.example.com."))),
        );
    let pending = ZoneContent {
        pending: vec![name("WAIT.example.com"), name("wait.elsewhere.org.")],
        ..zone.clone()
    };
    let snapshot = Snapshot::build(&[(pending, 1)]);
    for qtype in [
        RecordType::A,
        RecordType::AAAA,
        RecordType::TXT,
        RecordType::ANY,
        RecordType::SOA,
    ] {
        let (packet, response) = ask(&snapshot, "wAiT.example.com.", qtype);
        assert_eq!(response.response_code, ResponseCode::ServFail, "{qtype}");
        assert!(response.answers.is_empty() && response.authorities.is_empty() && response.additionals.is_empty());
        assert_eq!(response.queries.len(), 1);
        assert_eq!(response.queries[0].name, name("wAiT.example.com."));
        assert_eq!(response.queries[0].query_type, qtype);
        assert_eq!(response.id, u16::from_be_bytes([packet[0], packet[1]]));
    }
    let (_, sibling) = ask(&snapshot, "sibling.example.com.", RecordType::A);
    assert_eq!(sibling.response_code, ResponseCode::NoError);
    assert_eq!(sibling.answers.len(), 1);
    let (_, below) = ask(&snapshot, "x.wait.example.com.", RecordType::A);
    assert_eq!(below.response_code, ResponseCode::NoError);
    assert_eq!(below.answers.len(), 1);
    let (_, missing) = ask(&snapshot, "y.wait.example.com.", RecordType::A);
    assert_eq!(missing.response_code, ResponseCode::NXDomain);
    let (_, apex) = ask(&snapshot, "example.com.", RecordType::SOA);
    assert_eq!(apex.response_code, ResponseCode::NoError);
    // The chain stops at the pending name: the resolver asks it next.
    let (_, alias) = ask(&snapshot, "alias.example.com.", RecordType::A);
    assert_eq!(alias.response_code, ResponseCode::NoError);
    assert_eq!(alias.answers.len(), 1);
    assert_eq!(alias.answers[0].record_type(), RecordType::CNAME);
    // A pending name outside the zone is ignored (REFUSED as before).
    let (_, outside) = ask(&snapshot, "wait.elsewhere.org.", RecordType::A);
    assert_eq!(outside.response_code, ResponseCode::Refused);
    // Without pending names: the empty non-terminal answers NODATA.
    let plain = Snapshot::build(&[(zone, 1)]);
    let (_, wait) = ask(&plain, "wait.example.com.", RecordType::A);
    assert_eq!(wait.response_code, ResponseCode::NoError);
}
