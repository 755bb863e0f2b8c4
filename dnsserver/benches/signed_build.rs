//! Figures, not assertions: the snapshot build time and the stored answer
//! octets of a 100,000-name zone, unsigned and signed with each algorithm
//! (`cargo bench -p fedns-dnsserver --bench signed_build`).

use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
use fedns_dnsserver::{DnssecAlgorithm, DnssecConfig, DnssecKey, Snapshot, ZoneContent};

fn main() {
    let apex = Name::from_ascii("example.com.").expect("a valid apex");
    let mut zone = ZoneContent::new(apex);
    for i in 0..100_000u32 {
        let owner = Name::from_ascii(format!("svc-{i}.ns.myfed.svc.example.com.")).expect("a valid owner name");
        let ip = std::net::Ipv4Addr::from(0x0A00_0000 + i);
        zone.records.push(Record::from_rdata(owner, 30, RData::A(ip.into())));
    }
    for algorithm in [
        None,
        Some(DnssecAlgorithm::EcdsaP256Sha256),
        Some(DnssecAlgorithm::Ed25519),
    ] {
        let mut zone = zone.clone();
        zone.dnssec = algorithm.map(|algorithm| {
            let pkcs8 = DnssecKey::generate_pkcs8(algorithm).expect("a generated key");
            DnssecConfig {
                key: DnssecKey::from_pkcs8(algorithm, &pkcs8).expect("the generated key loads"),
                zone_signing_key: None,
                standby: Vec::new(),
                signature_validity: 1_209_600,
                signature_refresh: 604_800,
                denial: Default::default(),
            }
        });
        let started = std::time::Instant::now();
        let snapshot = Snapshot::build(&[(zone, 1)]);
        println!(
            "{algorithm:?}: 100,000 names built in {:?}, {} MB stored answers",
            started.elapsed(),
            snapshot.arena_bytes() / 1_000_000
        );
    }
}
