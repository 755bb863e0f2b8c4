//! 100,000 random and truncated packets over UDP and TCP to a running
//! server; afterwards it still answers correctly.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::ResponseCode;
use fedns_dnsserver::hickory_proto::rr::RecordType;
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneStore};

/// xorshift64*: a small deterministic generator, so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A mix: pure noise, valid queries cut at a random point, and valid
/// queries with a few bytes flipped.
fn garbage(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    match rng.below(3) {
        0 => (0..rng.below(600)).map(|_| rng.next() as u8).collect(),
        1 => {
            let seed = &seeds[rng.below(seeds.len())];
            seed[..rng.below(seed.len() + 1)].to_vec()
        }
        _ => {
            let mut packet = seeds[rng.below(seeds.len())].clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(packet.len());
                packet[at] = rng.next() as u8;
            }
            packet
        }
    }
}

fn assert_still_answers(udp: SocketAddr, tcp: SocketAddr) {
    let packet = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, Some((1232, false)));
    // The fuzzing client's TCP connections count against its per-client
    // limit until the server has seen them close; on a loaded machine a
    // new one may be refused for a moment. Asked again for up to 30 s.
    let started = Instant::now();
    let tcp_answer = loop {
        match query_tcp(tcp, &packet) {
            Ok(m) => break m,
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                println!("TCP query refused after the fuzzing ({e}); asking again");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("no TCP answer within 30 s after the fuzzing: {e}"),
        }
    };
    for m in [query_udp(udp, &packet).unwrap(), tcp_answer] {
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert_eq!(rrs(&m.answers).len(), 3);
    }
    let nx = query_udp(udp, &simple_query("nope.example.com.", RecordType::A, None)).unwrap();
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_random_and_truncated_packets() {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let udp = server.udp_addrs()[0];
    let tcp = server.tcp_addrs()[0];

    tokio::task::spawn_blocking(move || {
        let seeds: Vec<Vec<u8>> = [
            ("nginx.ns.myfed.svc.example.com.", RecordType::A),
            ("big.example.com.", RecordType::A),
            ("foo.wild.example.com.", RecordType::TXT),
            ("host.sub.example.com.", RecordType::A),
            ("www.example.com.", RecordType::ANY),
        ]
        .iter()
        .flat_map(|(n, t)| [simple_query(n, *t, None), simple_query(n, *t, Some((4096, true)))])
        .collect();
        let mut rng = Rng(0x5EED_F00D);
        let started = Instant::now();

        // UDP: 90,000 packets, sent in bursts with a short pause so the
        // kernel buffer is not the thing under test.
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        let mut sink = [0u8; 65_535];
        for i in 0..90_000 {
            let packet = garbage(&mut rng, &seeds);
            let _ = socket.send_to(&packet, udp);
            if i % 64 == 0 {
                while socket.recv_from(&mut sink).is_ok() {}
            }
        }
        // TCP: 10,000 packets over 100 connections, some framed with a
        // wrong length, some connections cut mid-message.
        for _ in 0..100 {
            let Ok(mut stream) = TcpStream::connect(tcp) else {
                continue;
            };
            let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
            for _ in 0..100 {
                let packet = garbage(&mut rng, &seeds);
                let claimed = if rng.below(10) == 0 {
                    rng.below(600)
                } else {
                    packet.len()
                };
                let mut framed = (claimed as u16).to_be_bytes().to_vec();
                framed.extend_from_slice(&packet);
                if stream.write_all(&framed).is_err() {
                    break;
                }
            }
        }
        println!("sent 100,000 packets in {:?}", started.elapsed());
        assert_still_answers(udp, tcp);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// The fuzz target's invariants (`fuzz/fuzz_targets/packet.rs`) over
/// 200,000 generated packets, in process: every response is well formed.
#[test]
fn generated_packets_keep_every_invariant() {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let snapshot = store.load();
    let seeds: Vec<Vec<u8>> = [
        ("nginx.ns.myfed.svc.example.com.", RecordType::A),
        ("big.example.com.", RecordType::A),
        ("foo.wild.example.com.", RecordType::TXT),
        ("host.sub.example.com.", RecordType::A),
        ("nothing.example.com.", RecordType::AAAA),
        ("www.example.net.", RecordType::A),
    ]
    .iter()
    .flat_map(|(n, t)| [simple_query(n, *t, None), simple_query(n, *t, Some((4096, true)))])
    .collect();
    let mut rng = Rng(0xF022);
    for i in 0..200_000 {
        let packet = garbage(&mut rng, &seeds);
        if let Err(e) = fedns_dnsserver::check_answer(&snapshot, &packet) {
            panic!("packet {i} {packet:02x?}: {e}");
        }
    }
}

/// Listeners on IPv6 loopback answer over UDP and TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_ipv6_listeners() {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let config = ServerConfig {
        listen: vec!["[::1]:0".parse().unwrap()],
        udp_workers: 2,
        ..ServerConfig::default()
    };
    let server = match DnsServer::start(config, store, DnsMetrics::new()).await {
        Ok(server) => server,
        Err(e) if std::net::UdpSocket::bind("[::1]:0").is_err() => {
            println!("skipped: no IPv6 loopback on this machine ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let (udp, tcp) = (server.udp_addrs()[0], server.tcp_addrs()[0]);
    tokio::task::spawn_blocking(move || {
        let packet = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::AAAA, None);
        let socket = UdpSocket::bind("[::1]:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        socket.send_to(&packet, udp).unwrap();
        let mut buf = [0u8; 1500];
        let (len, _) = socket.recv_from(&mut buf).unwrap();
        let m = fedns_dnsserver::hickory_proto::op::Message::from_vec(&buf[..len]).unwrap();
        assert_eq!(rrs(&m.answers).len(), 1);
        let m = query_tcp(tcp, &packet).unwrap();
        assert_eq!(rrs(&m.answers).len(), 1);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// TCP (RFC 7766): several pipelined queries on one connection are all
/// answered in order; an idle connection is closed; at the cap a new
/// connection is admitted by closing the longest-idle one (RFC 7766
/// §6.2.3; more in `tcp_pressure.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_pipelining_idle_timeout_and_cap() {
    use std::io::Read;
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        tcp_idle_timeout: Duration::from_millis(500),
        max_tcp_connections: 2,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let tcp = server.tcp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        // Three queries written at once, three answers back in order.
        let mut stream = TcpStream::connect(tcp).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let names = [
            "nginx.ns.myfed.svc.example.com.",
            "www.example.com.",
            "nothing.example.com.",
        ];
        let mut burst = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut packet = simple_query(name, RecordType::A, None);
            packet[1] = i as u8;
            burst.extend_from_slice(&(packet.len() as u16).to_be_bytes());
            burst.extend_from_slice(&packet);
        }
        stream.write_all(&burst).unwrap();
        for i in 0..3 {
            let mut len = [0u8; 2];
            stream.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
            stream.read_exact(&mut body).unwrap();
            let m = fedns_dnsserver::hickory_proto::op::Message::from_vec(&body).unwrap();
            assert_eq!(m.metadata.id & 0xff, i as u16);
            assert_eq!(m.queries[0].name.to_ascii(), names[i as usize]);
        }
        // Idle: closed by the server after the timeout (read returns 0).
        let started = Instant::now();
        let mut buf = [0u8; 1];
        assert_eq!(stream.read(&mut buf).unwrap_or(0), 0);
        let idle = started.elapsed();
        assert!(
            idle >= Duration::from_millis(400) && idle < Duration::from_secs(2),
            "closed after {idle:?}"
        );

        // Cap of 2: a third connection is answered, and the longest-idle
        // one (a) is closed for it at once; b stays open.
        let mut a = TcpStream::connect(tcp).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut b = TcpStream::connect(tcp).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let m = query_tcp(tcp, &simple_query(names[0], RecordType::A, None)).unwrap();
        assert_eq!(rrs(&m.answers).len(), 3);
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(a.read(&mut buf).unwrap_or(0), 0);
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "the longest-idle connection was not closed promptly"
        );
        b.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let still_open = b.read(&mut buf).map_err(|e| e.kind());
        assert!(
            matches!(
                still_open,
                Err(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
            ),
            "b should still be open: {still_open:?}"
        );
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// The transfer path (AXFR, IXFR and TSIG-signed requests, which the
/// listeners hand to the transfer code) keeps its invariants for 100,000
/// generated requests: transfers allowed from loopback with a TSIG key, a
/// journal for IXFR, seeds with a TSIG record (a wrong MAC, a time far
/// off, an unknown key) cut and flipped at random.
#[test]
fn generated_transfer_requests_keep_every_invariant() {
    use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query};
    use fedns_dnsserver::hickory_proto::rr::rdata::tsig::{TsigAlgorithm, TSIG};
    use fedns_dnsserver::hickory_proto::rr::{RData, Record};
    use fedns_dnsserver::{TransferPolicy, TsigAlgorithm as KeyAlgorithm, TsigKey};

    let key = TsigKey::new("xfr.example.", KeyAlgorithm::HmacSha256, vec![7; 32]).unwrap();
    let mut zones = fixture_zones();
    zones[0].transfer = TransferPolicy {
        allow: vec!["127.0.0.0/8".parse().unwrap()],
        keys: vec![key],
        notify: Vec::new(),
    };
    let store = ZoneStore::new();
    store.publish(zones.clone());
    zones[0].records.push(Record::from_rdata(
        name("new.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.99"),
    ));
    store.publish(zones);
    let signed = |qtype: RecordType, key_name: &str, time: u64| {
        let mut message = Message::new(0x4242, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(name("example.com."), qtype));
        let tsig = TSIG::new(
            TsigAlgorithm::HmacSha256,
            time,
            300,
            vec![1; 32],
            0x4242,
            None,
            Vec::new(),
        );
        message.add_additional(Record::from_rdata(name(key_name), 0, RData::TSIG(tsig)));
        message.to_vec().unwrap()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let seeds: Vec<Vec<u8>> = vec![
        simple_query("example.com.", RecordType::AXFR, None),
        simple_query("example.com.", RecordType::IXFR, None),
        simple_query("example.com.", RecordType::SOA, Some((1232, false))),
        signed(RecordType::AXFR, "xfr.example.", now),
        signed(RecordType::IXFR, "xfr.example.", now),
        signed(RecordType::SOA, "xfr.example.", now),
        signed(RecordType::AXFR, "xfr.example.", 1),
        signed(RecordType::AXFR, "other.example.", now),
    ];
    let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let mut rng = Rng(0x7F12);
    for i in 0..100_000 {
        let packet = garbage(&mut rng, &seeds);
        if let Err(e) = fedns_dnsserver::check_transfer(&store, &packet, loopback) {
            panic!("packet {i} {packet:02x?}: {e}");
        }
    }
}
