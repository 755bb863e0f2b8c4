//! Any byte string in, from a client allowed to transfer: the transfer
//! path (AXFR, IXFR, and TSIG-signed requests with their verification and
//! replay check) of a zone with a TSIG key and a journal.
#![no_main]

use std::net::IpAddr;
use std::sync::OnceLock;

use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{check_transfer, TransferPolicy, TsigAlgorithm, TsigKey, ZoneContent, ZoneStore};
use libfuzzer_sys::fuzz_target;

fn store() -> &'static ZoneStore {
    static STORE: OnceLock<std::sync::Arc<ZoneStore>> = OnceLock::new();
    STORE.get_or_init(|| {
        // The fixture below is constant and valid: these cannot fail.
        let name = |s: &str| Name::from_ascii(s).expect("fixture name");
        let rr = |owner: &str, t: RecordType, data: &str| {
            Record::from_rdata(name(owner), 30, RData::try_from_str(t, data).expect("fixture rdata"))
        };
        let mut zone = ZoneContent::new(name("example.com."));
        zone.records = vec![
            rr("a.example.com.", RecordType::A, "192.0.2.1"),
            rr("t.example.com.", RecordType::TXT, "\"text\""),
        ];
        zone.transfer = TransferPolicy {
            allow: vec!["127.0.0.0/8".parse().expect("fixture network")],
            keys: vec![TsigKey::new("xfr.example.", TsigAlgorithm::HmacSha256, vec![7; 32]).expect("fixture key")],
            notify: Vec::new(),
        };
        let store = ZoneStore::new();
        store.publish(vec![zone.clone()]);
        // A second version, so IXFR has a journal to answer from.
        zone.records.push(rr("b.example.com.", RecordType::A, "192.0.2.2"));
        store.publish(vec![zone]);
        store
    })
}

fuzz_target!(|data: &[u8]| {
    let peer = IpAddr::from([127, 0, 0, 1]);
    if let Err(e) = check_transfer(store(), data, peer) {
        panic!("{e}");
    }
});
