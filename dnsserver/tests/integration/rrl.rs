//! Response rate limiting: a UDP flood from 127.0.0.2
//! is held to the configured rate (±10 %) per second, every second
//! limited response slips out truncated; other names asked from
//! 127.0.0.3 and the flooded name asked from another /24 get every answer,
//! and TCP from the flooding address is never limited.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_dnsserver::hickory_proto::rr::RecordType;
use fedns_dnsserver::{DnsMetrics, DnsServer, RrlConfig, ServerConfig, ZoneStore};

const RATE: u32 = 100;
const SECONDS: u64 = 5;

/// Answers (not truncated) and truncated answers received, per 1-s bin
/// since the flood began.
fn flood(server: SocketAddr, stop: Arc<AtomicBool>) -> (Vec<u32>, Vec<u32>, u64) {
    let socket = UdpSocket::bind("127.0.0.2:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let receiver = socket.try_clone().unwrap();
    let started = Instant::now();
    let stop_rx = stop.clone();
    let reader = std::thread::spawn(move || {
        let bins = SECONDS as usize + 2;
        let (mut full, mut truncated) = (vec![0u32; bins], vec![0u32; bins]);
        let mut buf = [0u8; 4096];
        while !stop_rx.load(Ordering::Relaxed) {
            if let Ok((len, _)) = receiver.recv_from(&mut buf) {
                let bin = (started.elapsed().as_secs() as usize).min(bins - 1);
                if len >= 12 && buf[2] & 0x02 != 0 {
                    truncated[bin] += 1;
                } else {
                    full[bin] += 1;
                }
            }
        }
        (full, truncated)
    });
    let packet = simple_query("www.example.com.", RecordType::A, Some((1232, false)));
    let mut sent = 0u64;
    while started.elapsed() < Duration::from_secs(SECONDS) {
        for _ in 0..20 {
            let _ = socket.send_to(&packet, server);
            sent += 1;
        }
        // About 2,000 queries per second: 20 times the rate.
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (full, truncated) = reader.join().unwrap();
    (full, truncated, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_held_to_the_rate_and_others_are_answered() {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        rrl: RrlConfig {
            rate: RATE,
            slip: 2,
            ..RrlConfig::default()
        },
        ..ServerConfig::default()
    };
    let metrics = DnsMetrics::new();
    let server = DnsServer::start(config, store, metrics.clone()).await.unwrap();
    let addr = server.udp_addrs()[0];
    let tcp_addr = server.tcp_addrs()[0];

    tokio::task::spawn_blocking(move || {
        let stop = Arc::new(AtomicBool::new(false));
        let flood_stop = stop.clone();
        let flooder = std::thread::spawn(move || flood(addr, flood_stop));
        std::thread::sleep(Duration::from_millis(500));

        // Meanwhile: 127.0.0.3 asks other names, 127.0.1.3 (another /24)
        // the flooded one, and 127.0.0.2 the flooded one over TCP.
        let asks = |source: &str, names: &[&str]| {
            let socket = UdpSocket::bind(format!("{source}:0")).unwrap();
            socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let (mut asked, mut answered) = (0, 0);
            let mut buf = [0u8; 4096];
            for round in 0..40 {
                let name = names[round % names.len()];
                socket.send_to(&simple_query(name, RecordType::A, None), addr).unwrap();
                asked += 1;
                if let Ok((len, _)) = socket.recv_from(&mut buf) {
                    if len > 12 && buf[2] & 0x02 == 0 && buf[7] > 0 {
                        answered += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(40));
            }
            (asked, answered)
        };
        let (asked, answered) = asks(
            "127.0.0.3",
            &["mail.example.com.", "ns1.example.com.", "ns2.example.com."],
        );
        assert_eq!(answered, asked, "127.0.0.3 lost answers to other names");
        let (asked, answered) = asks("127.0.1.3", &["www.example.com."]);
        assert_eq!(answered, asked, "another /24 lost answers to the flooded name");
        let mut tcp_answers = 0;
        for _ in 0..50 {
            if tcp_from("127.0.0.2", tcp_addr).is_some() {
                tcp_answers += 1;
            }
        }
        assert_eq!(tcp_answers, 50, "TCP from the flooding address was limited");

        let (full, truncated, sent) = flooder.join().unwrap();
        println!("flood: {sent} queries; answers per second {full:?}; truncated {truncated:?}");
        // The whole seconds in the middle (one server window starts in
        // each; a window's answers can straddle a boundary, the total not).
        let middle = &full[1..SECONDS as usize];
        let per_second = f64::from(middle.iter().sum::<u32>()) / middle.len() as f64;
        println!("flood held to {per_second:.1} answers per second (rate {RATE})");
        assert!(
            (f64::from(RATE) * 0.9..=f64::from(RATE) * 1.1).contains(&per_second),
            "{per_second} answers per second, want {RATE} ± 10 %"
        );
        // Slip 2: every other limited response went out truncated.
        let limited: u32 = truncated.iter().sum();
        assert!(limited > 0);
        let (dropped, slipped) = metrics.rrl_stats();
        println!("rrl: dropped {dropped}, slipped {slipped}");
        assert!(slipped > 0 && dropped > 0);
        assert!(
            (slipped as f64 / dropped as f64 - 1.0).abs() < 0.1,
            "slip 2: as many truncated as dropped"
        );
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// One TCP query for the flooded name from `source`: the answer count.
fn tcp_from(source: &str, server: SocketAddr) -> Option<u16> {
    use std::io::{Read, Write};
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket
        .bind(&format!("{source}:0").parse::<SocketAddr>().ok()?.into())
        .ok()?;
    socket.connect_timeout(&server.into(), Duration::from_secs(2)).ok()?;
    let mut stream: std::net::TcpStream = socket.into();
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let packet = simple_query("www.example.com.", RecordType::A, None);
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&packet);
    stream.write_all(&framed).ok()?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut buf).ok()?;
    let ancount = u16::from_be_bytes([buf[6], buf[7]]);
    (ancount > 0 && buf[2] & 0x02 == 0).then_some(ancount)
}

/// A random-name flood of a signed zone with compact denial (RFC 9824:
/// NOERROR, an NSEC at the query name, signed when answered) from one
/// address: every answer is a new name, but negative answers count per
/// zone, so the flood is held to the rate (it was answered about 7,500
/// times a second with `--rrl-rate 100`, each answer signed), and another
/// /24 still gets its answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_name_flood_of_a_signed_zone_is_held_to_the_rate() {
    let (zone, _) = crate::dnssec::two_name_zone(fedns_dnsserver::DenialOfExistence::Compact);
    let store = ZoneStore::new();
    store.publish(vec![zone]);
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        rrl: RrlConfig {
            rate: RATE,
            slip: 0,
            ..RrlConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let addr = server.udp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        let socket = UdpSocket::bind("127.0.0.2:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let receiver = socket.try_clone().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_rx = stop.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut answers = 0u64;
            while !stop_rx.load(Ordering::Relaxed) {
                if receiver.recv_from(&mut buf).is_ok() {
                    answers += 1;
                }
            }
            answers
        });
        let started = Instant::now();
        let mut sent = 0u64;
        while started.elapsed() < Duration::from_secs(3) {
            for _ in 0..20 {
                let qname = format!("r{sent}.example.com.");
                let _ = socket.send_to(&simple_query(&qname, RecordType::A, Some((1232, true))), addr);
                sent += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let elapsed = started.elapsed().as_secs_f64();
        // Another /24 asking one missing name is answered.
        let other = UdpSocket::bind("127.0.1.2:0").unwrap();
        other.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        other
            .send_to(
                &simple_query("missing.example.com.", RecordType::A, Some((1232, true))),
                addr,
            )
            .unwrap();
        let mut buf = [0u8; 4096];
        assert!(other.recv_from(&mut buf).is_ok(), "another /24 lost its answer");
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        let answers = reader.join().unwrap();
        let per_second = answers as f64 / elapsed;
        println!(
            "random-name flood: {sent} queries in {elapsed:.1} s, {answers} answered ({per_second:.0}/s; rate {RATE})"
        );
        // Three windows of RATE, one more at the edges.
        assert!(
            answers <= u64::from(RATE) * 4,
            "{answers} answers to {sent} random names in {elapsed:.1} s: not limited per zone"
        );
    })
    .await
    .unwrap();
}
