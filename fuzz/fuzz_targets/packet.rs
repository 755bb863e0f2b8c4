//! Any byte string in, a well-formed response (or none) out: the
//! packet-to-answer path of the embedded DNS server.
#![no_main]

use std::sync::OnceLock;

use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{check_answer, Snapshot, ZoneContent, ZoneStore};
use libfuzzer_sys::fuzz_target;

fn snapshot() -> &'static Snapshot {
    static STORE: OnceLock<std::sync::Arc<Snapshot>> = OnceLock::new();
    STORE.get_or_init(|| {
        // The fixture below is constant and valid: these cannot fail.
        let name = |s: &str| Name::from_ascii(s).expect("fixture name");
        let rr = |owner: &str, t: RecordType, data: &str| {
            Record::from_rdata(name(owner), 30, RData::try_from_str(t, data).expect("fixture rdata"))
        };
        let mut zone = ZoneContent::new(name("example.com."));
        zone.records = vec![
            rr("a.example.com.", RecordType::A, "192.0.2.1"),
            rr("a.example.com.", RecordType::AAAA, "2001:db8::1"),
            rr("c.example.com.", RecordType::CNAME, "a.example.com."),
            rr("loop.example.com.", RecordType::CNAME, "loop.example.com."),
            rr("*.w.example.com.", RecordType::TXT, "\"wild\""),
            rr("sub.example.com.", RecordType::NS, "ns.sub.example.com."),
            rr("ns.sub.example.com.", RecordType::A, "192.0.2.53"),
            rr("x.y.z.example.com.", RecordType::A, "192.0.2.2"),
        ];
        for i in 0..60 {
            zone.records.push(rr("big.example.com.", RecordType::A, &format!("198.51.100.{i}")));
        }
        let store = ZoneStore::new();
        store.publish(vec![zone]);
        store.load()
    })
}

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_answer(snapshot(), data) {
        panic!("{e}");
    }
});
