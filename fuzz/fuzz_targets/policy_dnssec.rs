//! Any byte string in, from any client address: the answer path of names
//! under traffic policies (Weighted, sticky Weighted, Nearest with a
//! client-network table, Every with an answer limit and stickiness) in a
//! zone signed with compact denial, where answers are chosen per client
//! (its address or EDNS Client Subnet) and signed as they are made.
//! The first octet picks the client's family, the next 4 or 16 octets are
//! its address, the rest is the request.
#![no_main]

use std::net::IpAddr;
use std::sync::OnceLock;

use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{
    check_answer_from, ClientRegions, DenialOfExistence, DnssecAlgorithm, DnssecConfig, DnssecKey, RoutedName,
    RoutedVariant, RoutingPolicy, Snapshot, ZoneContent, ZoneStore,
};
use libfuzzer_sys::fuzz_target;

fn snapshot() -> &'static Snapshot {
    static STORE: OnceLock<std::sync::Arc<Snapshot>> = OnceLock::new();
    STORE.get_or_init(|| {
        // The fixture below is constant and valid: these cannot fail.
        let name = |s: &str| Name::from_ascii(s).expect("fixture name");
        let rr = |owner: &str, t: RecordType, data: &str| {
            Record::from_rdata(name(owner), 30, RData::try_from_str(t, data).expect("fixture rdata"))
        };
        let variant = |owner: &str, id: &str, weight: u32, region: Option<&str>, ips: &[&str]| RoutedVariant {
            id: id.into(),
            weight,
            region: region.map(str::to_owned),
            records: ips
                .iter()
                .map(|ip| rr(owner, if ip.contains(':') { RecordType::AAAA } else { RecordType::A }, ip))
                .collect(),
        };
        let mut zone = ZoneContent::new(name("example.com."));
        zone.records = vec![
            rr("a.example.com.", RecordType::A, "192.0.2.1"),
            rr("c.example.com.", RecordType::CNAME, "w.example.com."),
            rr("*.wild.example.com.", RecordType::TXT, "\"wild\""),
            rr("sub.example.com.", RecordType::NS, "ns.sub.example.com."),
            rr("ns.sub.example.com.", RecordType::A, "192.0.2.53"),
        ];
        let policies = [
            ("w.example.com.", RoutingPolicy::Weighted, None, None),
            (
                "s.example.com.",
                RoutingPolicy::StickyWeighted { v4_prefix: 24, v6_prefix: 56 },
                None,
                None,
            ),
            (
                "n.example.com.",
                RoutingPolicy::Nearest { fallback: vec!["eu".into()] },
                None,
                Some((24, 56)),
            ),
            ("e.example.com.", RoutingPolicy::Every, Some(2), Some((24, 56))),
        ];
        for (owner, policy, max_answers, sticky_within) in policies {
            for ip in ["192.0.2.10", "2001:db8::10"] {
                zone.records.push(rr(owner, if ip.contains(':') { RecordType::AAAA } else { RecordType::A }, ip));
            }
            zone.routed.push(RoutedName {
                name: name(owner),
                policy,
                variants: vec![
                    variant(owner, "east", 1, Some("us"), &["192.0.2.10", "192.0.2.11", "2001:db8::10"]),
                    variant(owner, "west", 3, Some("us"), &["198.51.100.10"]),
                    variant(owner, "eu", 0, Some("eu"), &["203.0.113.10", "2001:db8::20"]),
                ],
                max_answers,
                sticky_within,
            });
        }
        zone.client_regions = ClientRegions {
            networks: vec![
                ("10.0.0.0/8".parse().expect("fixture network"), "us".into()),
                ("2001:db8:1::/48".parse().expect("fixture network"), "eu".into()),
            ],
            ..ClientRegions::default()
        };
        let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
        let pkcs8 = DnssecKey::generate_pkcs8(algorithm).expect("a key");
        zone.dnssec = Some(DnssecConfig {
            key: DnssecKey::from_pkcs8(algorithm, &pkcs8).expect("a key"),
            zone_signing_key: None,
            standby: Vec::new(),
            signature_validity: 14 * 86_400,
            signature_refresh: 7 * 86_400,
            denial: DenialOfExistence::Compact,
        });
        let store = ZoneStore::new();
        let outcome = store.publish(vec![zone]);
        assert!(outcome.skipped.is_empty(), "fixture: {:?}", outcome.skipped);
        store.load()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&family, rest)) = data.split_first() else { return };
    let (source, request) = if family & 1 == 0 {
        let Some((address, request)) = rest.split_first_chunk::<4>() else { return };
        (IpAddr::from(*address), request)
    } else {
        let Some((address, request)) = rest.split_first_chunk::<16>() else { return };
        (IpAddr::from(*address), request)
    };
    if let Err(e) = check_answer_from(snapshot(), request, source) {
        panic!("{e}");
    }
});
