//! Traffic policies on the real server over loopback: Weighted answers
//! follow the weights (χ² test), Nearest places the client by EDNS Client
//! Subnet (RFC 7871, with the SCOPE PREFIX-LENGTH of the table entry), by
//! the source address (several 127.0.0.x sources) and by a GeoIP file;
//! malformed ECS options get FORMERR.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use fedns_dnsserver::hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsCode, EdnsOption};
use fedns_dnsserver::hickory_proto::rr::{Record, RecordType};
use fedns_dnsserver::{
    ClientRegions, DnsMetrics, DnsServer, GeoIpDb, RoutedName, RoutedVariant, RoutingPolicy, ServerConfig, ZoneStore,
};

use crate::common::{fixture_zones, name, rdata, temp_dir};

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com.";

fn variant(id: &str, weight: u32, region: Option<&str>, ips: &[&str]) -> RoutedVariant {
    RoutedVariant {
        id: id.into(),
        weight,
        region: region.map(Into::into),
        records: ips
            .iter()
            .map(|ip| {
                let rtype = if ip.contains(':') {
                    RecordType::AAAA
                } else {
                    RecordType::A
                };
                Record::from_rdata(name(GLOBAL), 30, rdata(rtype, ip))
            })
            .collect(),
    }
}

/// The fixture zone with `nginx` routed by `policy` over three clusters:
/// east 203.0.113.10, west 203.0.113.11, eu 198.51.100.20 (the fixture's
/// plain records at that name are exactly their union).
fn routed_zones(policy: RoutingPolicy, weights: [u32; 3], regions: ClientRegions) -> Vec<fedns_dnsserver::ZoneContent> {
    let mut zones = fixture_zones();
    zones[0].routed.push(RoutedName {
        name: name(GLOBAL),
        policy,
        variants: vec![
            variant("east", weights[0], Some("us-east-1"), &["203.0.113.10", "2001:db8::10"]),
            variant("west", weights[1], Some("us-west-2"), &["203.0.113.11"]),
            variant("eu", weights[2], Some("eu-west-1"), &["198.51.100.20"]),
        ],
        max_answers: None,
        sticky_within: None,
    });
    zones[0].client_regions = regions;
    zones
}

pub(crate) async fn serve(zones: Vec<fedns_dnsserver::ZoneContent>, geo: Option<GeoIpDb>) -> (DnsServer, SocketAddr) {
    let store = ZoneStore::new();
    store.set_geoip(geo.map(Arc::new));
    let outcome = store.publish(zones);
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let addr = server.udp_addrs()[0];
    (server, addr)
}

pub(crate) fn query(qname: &str, qtype: RecordType, ecs: Option<(&str, u8)>) -> Vec<u8> {
    let mut message = Message::new(0x4242, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(name(qname), qtype));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    if let Some((addr, source)) = ecs {
        let addr: IpAddr = addr.parse().unwrap();
        edns.options_mut()
            .insert(EdnsOption::Subnet(ClientSubnet::new(addr, source, 0)));
    }
    message.set_edns(edns);
    message.to_vec().unwrap()
}

pub(crate) fn ask_from(source: &str, addr: SocketAddr, packet: &[u8]) -> Message {
    let socket = UdpSocket::bind((source, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    socket.send_to(packet, addr).unwrap();
    let mut buf = [0u8; 4096];
    let (len, _) = socket.recv_from(&mut buf).unwrap();
    Message::from_vec(&buf[..len]).unwrap()
}

pub(crate) fn addresses(m: &Message) -> Vec<String> {
    let mut out: Vec<String> = m
        .answers
        .iter()
        .filter(|r| matches!(r.record_type(), RecordType::A | RecordType::AAAA))
        .map(|r| r.data.to_string())
        .collect();
    out.sort();
    out
}

/// The ECS option of a response: (source, scope).
pub(crate) fn ecs_of(m: &Message) -> Option<(u8, u8)> {
    let edns = m.edns.as_ref()?;
    match edns.options().get(EdnsCode::Subnet)? {
        EdnsOption::Subnet(subnet) => Some((subnet.source_prefix(), subnet.scope_prefix())),
        _ => None,
    }
}

/// Upper tail of the χ² distribution with 2 degrees of freedom: e^(-x/2).
fn chi2_p_2dof(x: f64) -> f64 {
    (-x / 2.0).exp()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_answers_follow_the_weights() {
    let (_server, addr) = serve(
        routed_zones(RoutingPolicy::Weighted, [1, 3, 6], ClientRegions::default()),
        None,
    )
    .await;
    tokio::task::spawn_blocking(move || {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let packet = query(GLOBAL, RecordType::A, None);
        let mut counts = [0u64; 3];
        let mut buf = [0u8; 4096];
        const N: u64 = 10_000;
        for _ in 0..N {
            socket.send_to(&packet, addr).unwrap();
            let (len, _) = socket.recv_from(&mut buf).unwrap();
            let m = Message::from_vec(&buf[..len]).unwrap();
            match addresses(&m).as_slice() {
                [a] if a == "203.0.113.10" => counts[0] += 1,
                [a] if a == "203.0.113.11" => counts[1] += 1,
                [a] if a == "198.51.100.20" => counts[2] += 1,
                other => panic!("one cluster per answer, got {other:?}"),
            }
        }
        let expected = [N as f64 * 0.1, N as f64 * 0.3, N as f64 * 0.6];
        let chi2: f64 = counts
            .iter()
            .zip(expected)
            .map(|(&o, e)| (o as f64 - e).powi(2) / e)
            .sum();
        let p = chi2_p_2dof(chi2);
        println!("weighted 1:3:6 over {N} queries: {counts:?}, χ² = {chi2:.2}, p = {p:.4}");
        assert!(
            p > 0.001,
            "answers do not follow the weights: {counts:?}, χ² {chi2:.2}, p {p}"
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weight_zero_is_standby_and_all_zero_shares() {
    let (_server, addr) = serve(
        routed_zones(RoutingPolicy::Weighted, [0, 5, 0], ClientRegions::default()),
        None,
    )
    .await;
    let (_server2, addr2) = serve(
        routed_zones(RoutingPolicy::Weighted, [0, 0, 0], ClientRegions::default()),
        None,
    )
    .await;
    tokio::task::spawn_blocking(move || {
        let packet = query(GLOBAL, RecordType::A, None);
        for _ in 0..200 {
            assert_eq!(addresses(&ask_from("127.0.0.1", addr, &packet)), ["203.0.113.11"]);
        }
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            seen.insert(addresses(&ask_from("127.0.0.1", addr2, &packet)));
        }
        assert_eq!(seen.len(), 3, "all-zero weights share equally: {seen:?}");
    })
    .await
    .unwrap();
}

fn table() -> ClientRegions {
    ClientRegions {
        networks: vec![
            ("192.0.2.0/24".parse().unwrap(), "eu-west-1".into()),
            ("192.0.2.128/25".parse().unwrap(), "us-west-2".into()),
            ("2001:db8:100::/40".parse().unwrap(), "us-east-1".into()),
            ("127.0.0.2/32".parse().unwrap(), "eu-west-1".into()),
            ("127.0.0.3/32".parse().unwrap(), "us-west-2".into()),
            ("10.0.0.0/8".parse().unwrap(), "ap-south-1".into()),
        ],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nearest_by_client_subnet_with_scope() {
    let policy = RoutingPolicy::Nearest {
        fallback: vec!["us-west-2".into()],
    };
    let (_server, addr) = serve(routed_zones(policy, [0; 3], table()), None).await;
    tokio::task::spawn_blocking(move || {
        let ask = |ecs: Option<(&str, u8)>| ask_from("127.0.0.1", addr, &query(GLOBAL, RecordType::A, ecs));
        // 192.0.2.0/24 → eu, but its upper half → us-west-2: the eu answer
        // holds for the lower /25 only.
        let m = ask(Some(("192.0.2.0", 24)));
        assert_eq!(addresses(&m), ["198.51.100.20"]);
        assert_eq!(ecs_of(&m), Some((24, 25)), "SCOPE covers only the eu half");
        let m = ask(Some(("192.0.2.200", 32)));
        assert_eq!(addresses(&m), ["203.0.113.11"]);
        assert_eq!(ecs_of(&m), Some((32, 25)));
        // IPv6 client subnet.
        let m = ask(Some(("2001:db8:100::", 56)));
        assert_eq!(addresses(&m), ["203.0.113.10"]);
        assert_eq!(ecs_of(&m), Some((56, 40)));
        // A region with no cluster follows the fallback.
        let m = ask(Some(("10.1.2.0", 24)));
        assert_eq!(addresses(&m), ["203.0.113.11"], "ap-south-1 falls back to us-west-2");
        assert_eq!(ecs_of(&m), Some((24, 8)));
        // Unknown client: fallback too; SCOPE is the gap's block.
        let m = ask(Some(("8.8.8.0", 24)));
        assert_eq!(addresses(&m), ["203.0.113.11"]);
        let (_, scope) = ecs_of(&m).unwrap();
        assert!(scope <= 24 && scope > 0, "scope {scope}");
        // SOURCE PREFIX-LENGTH 0: no client information, answer for everyone.
        let m = ask(Some(("0.0.0.0", 0)));
        assert_eq!(addresses(&m), ["203.0.113.11"]);
        assert_eq!(ecs_of(&m), Some((0, 0)));
        // A name without a policy echoes ECS with SCOPE 0.
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query("mail.example.com.", RecordType::A, Some(("192.0.2.0", 24))),
        );
        assert_eq!(addresses(&m), ["192.0.2.25"]);
        assert_eq!(ecs_of(&m), Some((24, 0)));
        // A CNAME to the routed name follows the client's variant.
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query("www.example.com.", RecordType::A, Some(("192.0.2.0", 24))),
        );
        assert_eq!(addresses(&m), ["198.51.100.20"]);
        assert_eq!(ecs_of(&m), Some((24, 25)));
        // AAAA of a variant without IPv6: NODATA for that client.
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query(GLOBAL, RecordType::AAAA, Some(("192.0.2.0", 24))),
        );
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(addresses(&m).is_empty(), "{:?}", m.answers);
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query(GLOBAL, RecordType::AAAA, Some(("2001:db8:100::", 48))),
        );
        assert_eq!(addresses(&m), ["2001:db8::10"]);
    })
    .await
    .unwrap();
}

/// Sticky weighted answers over UDP: one subnet always gets one cluster
/// (the same answer to `dig +subnet=` twice, and to every address of the
/// subnet), SCOPE is the sticky prefix, subnets spread by weight, and a
/// query without client information is answered as Weighted with SCOPE 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_weighted_by_client_subnet() {
    let policy = RoutingPolicy::StickyWeighted {
        v4_prefix: 24,
        v6_prefix: 56,
    };
    let (_server, addr) = serve(routed_zones(policy, [1, 1, 2], ClientRegions::default()), None).await;
    tokio::task::spawn_blocking(move || {
        let ask = |ecs: Option<(&str, u8)>| ask_from("127.0.0.1", addr, &query(GLOBAL, RecordType::A, ecs));
        let first = ask(Some(("192.0.2.0", 24)));
        assert_eq!(addresses(&first).len(), 1, "one cluster per answer");
        assert_eq!(ecs_of(&first), Some((24, 24)));
        for _ in 0..20 {
            assert_eq!(addresses(&ask(Some(("192.0.2.0", 24)))), addresses(&first));
        }
        // Any address of the subnet, as a /32: the same cluster, SCOPE /24.
        let host = ask(Some(("192.0.2.77", 32)));
        assert_eq!(addresses(&host), addresses(&first));
        assert_eq!(ecs_of(&host), Some((32, 24)));
        // IPv6: SCOPE /56.
        assert_eq!(ecs_of(&ask(Some(("2001:db8:0:100::", 64)))), Some((64, 56)));
        // Without client information: Weighted, SCOPE 0.
        assert_eq!(ecs_of(&ask(Some(("0.0.0.0", 0)))), Some((0, 0)));
        // 400 subnets spread roughly 1:1:2 (east, west, eu).
        let mut counts = std::collections::BTreeMap::<String, u32>::new();
        for i in 0..400u32 {
            let subnet = format!("10.{}.{}.0", i / 256, i % 256);
            let m = ask(Some((subnet.as_str(), 24)));
            *counts.entry(addresses(&m).join(",")).or_default() += 1;
        }
        println!("400 subnets: {counts:?}");
        assert_eq!(counts.len(), 3, "{counts:?}");
        let eu = counts.get("198.51.100.20").copied().unwrap_or_default();
        assert!((140..=260).contains(&eu), "eu (weight 2 of 4) got {eu} of 400");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nearest_by_source_address() {
    let policy = RoutingPolicy::Nearest { fallback: vec![] };
    let (_server, addr) = serve(routed_zones(policy, [0; 3], table()), None).await;
    tokio::task::spawn_blocking(move || {
        let packet = query(GLOBAL, RecordType::A, None);
        let m = ask_from("127.0.0.2", addr, &packet);
        assert_eq!(addresses(&m), ["198.51.100.20"]);
        assert_eq!(ecs_of(&m), None, "no ECS asked, none answered");
        assert_eq!(addresses(&ask_from("127.0.0.3", addr, &packet)), ["203.0.113.11"]);
        // 127.0.0.4 is in no region and there is no fallback: every cluster.
        assert_eq!(
            addresses(&ask_from("127.0.0.4", addr, &packet)),
            ["198.51.100.20", "203.0.113.10", "203.0.113.11"]
        );
    })
    .await
    .unwrap();
}

fn write_mmdb(dir: &std::path::Path, entries: &[&str]) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("target/venv/bin/python");
    let out = dir.join("geo.mmdb");
    let status = std::process::Command::new(&python)
        .arg(root.join("scripts/make-test-mmdb.py"))
        .arg(&out)
        .args(entries)
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}; run ./scripts/test.sh --deps-only", python.display()));
    assert!(
        status.success(),
        "make-test-mmdb.py failed (is mmdb-writer in target/venv?)"
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nearest_by_geoip_file() {
    let dir = temp_dir("geoip");
    let path = write_mmdb(
        &dir,
        &[
            "127.0.0.64/26=DE/EU",
            "127.0.0.128/26=CA/NA",
            "127.0.0.192/26=/NA",
            "10.0.0.0/8=IN/AS",
        ],
    );
    let geo = GeoIpDb::open(&path).unwrap();
    assert_eq!(geo.database_type(), "GeoIP2-Country");
    let regions = ClientRegions {
        networks: vec![("127.0.0.70/32".parse().unwrap(), "us-west-2".into())],
        countries: vec![("DE".into(), "eu-west-1".into())],
        continents: vec![("NA".into(), "us-east-1".into())],
    };
    let policy = RoutingPolicy::Nearest { fallback: vec![] };
    let (_server, addr) = serve(routed_zones(policy, [0; 3], regions), Some(geo)).await;
    tokio::task::spawn_blocking(move || {
        let packet = query(GLOBAL, RecordType::A, None);
        // Country DE → eu-west-1.
        assert_eq!(addresses(&ask_from("127.0.0.65", addr, &packet)), ["198.51.100.20"]);
        // The CIDR table wins over the database.
        assert_eq!(addresses(&ask_from("127.0.0.70", addr, &packet)), ["203.0.113.11"]);
        // Country CA is not mapped; its continent NA is.
        assert_eq!(addresses(&ask_from("127.0.0.130", addr, &packet)), ["203.0.113.10"]);
        assert_eq!(addresses(&ask_from("127.0.0.200", addr, &packet)), ["203.0.113.10"]);
        // By ECS: the scope is the database network's (/26 inside ::/0).
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query(GLOBAL, RecordType::A, Some(("127.0.0.128", 32))),
        );
        assert_eq!(addresses(&m), ["203.0.113.10"]);
        assert_eq!(ecs_of(&m), Some((32, 26)));
        // Mapped nowhere: every cluster.
        assert_eq!(addresses(&ask_from("127.0.0.9", addr, &packet)).len(), 3);
    })
    .await
    .unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_missing_or_broken_geoip_file_is_a_clear_error() {
    let err = GeoIpDb::open(std::path::Path::new("/nonexistent/geo.mmdb")).unwrap_err();
    assert!(err.contains("/nonexistent/geo.mmdb"), "{err}");
    let dir = temp_dir("geoip-bad");
    let bad = dir.join("bad.mmdb");
    std::fs::write(&bad, b"not a maxmind db").unwrap();
    let err = GeoIpDb::open(&bad).unwrap_err();
    assert!(err.contains("bad.mmdb"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_client_subnet_gets_formerr() {
    let policy = RoutingPolicy::Nearest { fallback: vec![] };
    let (_server, addr) = serve(routed_zones(policy, [0; 3], table()), None).await;
    tokio::task::spawn_blocking(move || {
        let good = query(GLOBAL, RecordType::A, Some(("192.0.2.0", 24)));
        // Find the ECS option (code 8) and corrupt it in several ways.
        let at = good
            .windows(4)
            .rposition(|w| w == [0, 8, 0, 7])
            .expect("ECS option in the query");
        let with = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut p = good.clone();
            edit(&mut p);
            ask_from("127.0.0.1", addr, &p)
        };
        // Unknown FAMILY 3.
        let m = with(&|p| p[at + 5] = 3);
        assert_eq!(m.metadata.response_code, ResponseCode::FormErr);
        // Address bits set beyond SOURCE PREFIX-LENGTH (/20 with .0.0 → bit 21 set).
        let m = with(&|p| {
            p[at + 6] = 20;
            p[at + 10] = 0x0A;
        });
        assert_eq!(m.metadata.response_code, ResponseCode::FormErr);
        // SOURCE PREFIX-LENGTH 33 for IPv4.
        let m = with(&|p| p[at + 6] = 33);
        assert_eq!(m.metadata.response_code, ResponseCode::FormErr);
        // The untouched query still answers.
        assert_eq!(addresses(&ask_from("127.0.0.1", addr, &good)), ["198.51.100.20"]);
    })
    .await
    .unwrap();
}

/// A zone answered through forwarders (`follow_cnames_across_zones`, as
/// fedns's member-side discovery zone): its CNAME into the federation zone
/// comes back with the rest of the chain and the final addresses; a client
/// nothing places gets the zone's default client region (the member's
/// region); without the setting the chain stops at the zone's edge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chain_across_zones_and_default_client_region() {
    use fedns_dnsserver::hickory_proto::rr::{Name, RData};
    let policy = RoutingPolicy::Nearest {
        fallback: vec!["us-west-2".into()],
    };
    let discovery_name = "nginx.ns.myfed.svc.cluster.local.";
    let build = |follow: bool| {
        let mut zones = routed_zones(policy.clone(), [0; 3], table());
        zones[0].default_client_region = Some("eu-west-1".into());
        let mut discovery = fedns_dnsserver::ZoneContent::new(name("myfed.svc.cluster.local."));
        discovery.follow_cnames_across_zones = follow;
        discovery.records.push(Record::from_rdata(
            name(discovery_name),
            5,
            RData::CNAME(fedns_dnsserver::hickory_proto::rr::rdata::CNAME(name(GLOBAL))),
        ));
        zones.push(discovery);
        zones
    };
    let (_server, addr) = serve(build(true), None).await;
    let (_plain, plain_addr) = serve(build(false), None).await;
    tokio::task::spawn_blocking(move || {
        let m = ask_from("127.0.0.1", addr, &query(discovery_name, RecordType::A, None));
        let owners: Vec<Name> = m.answers.iter().map(|r| r.name.clone()).collect();
        assert_eq!(owners.first(), Some(&name(discovery_name)), "{m}");
        assert_eq!(addresses(&m), ["198.51.100.20"], "the default region eu-west-1: {m}");
        // ECS still wins over the default region.
        let m = ask_from(
            "127.0.0.1",
            addr,
            &query(discovery_name, RecordType::A, Some(("192.0.2.200", 32))),
        );
        assert_eq!(addresses(&m), ["203.0.113.11"], "{m}");
        // Missing type at the end of the chain: NODATA with the chain.
        let m = ask_from("127.0.0.1", addr, &query(discovery_name, RecordType::MX, None));
        assert_eq!(m.response_code, ResponseCode::NoError);
        assert_eq!(m.answers.len(), 1, "{m}");
        let m = ask_from("127.0.0.1", plain_addr, &query(discovery_name, RecordType::A, None));
        assert_eq!(m.answers.len(), 1, "only the CNAME without the setting: {m}");
    })
    .await
    .unwrap();
}
