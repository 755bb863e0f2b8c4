//! TCP under pressure (RFC 7766 §6.2.3): idle connections cannot lock new
//! clients out. The flood comes from 127.0.0.2, the measured clients from
//! 127.0.0.3, the server listens on 127.0.0.1 (Linux routes all of
//! 127.0.0.0/8 to the loopback interface).
//!
//! Times are printed; the only timing asserts are the requirement "an
//! answer within 1 s" and generous windows around the idle timeouts.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::{Message, ResponseCode};
use fedns_dnsserver::hickory_proto::rr::RecordType;
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, TcpStats, ZoneStore};
use socket2::{Domain, Protocol, Socket, Type};

const FLOOD_SOURCE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const CLIENT_SOURCE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// More idle connections than the default cap (1,024).
const FLOOD_CONNECTIONS: usize = 1_100;

/// Raises the soft RLIMIT_NOFILE to the hard limit. Fails the test, with
/// the reason, when even the hard limit is below `needed`: skipping would
/// hide that the flood was never tried.
fn raise_open_files_limit(needed: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit(RLIMIT_NOFILE)");
    if soft >= needed {
        return;
    }
    assert!(
        hard >= needed,
        "this test holds about {needed} sockets in one process (the flood's and the server's ends), \
         but the hard RLIMIT_NOFILE is {hard}: raise it (ulimit -Hn, or LimitNOFILE in systemd) to run it"
    );
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("setrlimit(RLIMIT_NOFILE)");
    println!("raised RLIMIT_NOFILE from {soft} to {hard}");
}

/// A blocking TCP connection from `source` (port chosen by the kernel).
fn connect_from(source: Ipv4Addr, target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())?;
    socket.connect_timeout(&target.into(), Duration::from_secs(5))?;
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(stream)
}

fn framed(packet: &[u8]) -> Vec<u8> {
    let mut out = (packet.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(packet);
    out
}

fn read_framed(stream: &mut TcpStream) -> std::io::Result<Message> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len)?;
    let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut body)?;
    Message::from_vec(&body).map_err(|e| std::io::Error::other(e.to_string()))
}

/// A fresh connection from `source`, one query, its answer; with the time
/// from connect to answer.
fn tcp_query_from(source: Ipv4Addr, target: SocketAddr, packet: &[u8]) -> (std::io::Result<Message>, Duration) {
    let started = Instant::now();
    let result = connect_from(source, target).and_then(|mut stream| {
        stream.write_all(&framed(packet))?;
        read_framed(&mut stream)
    });
    (result, started.elapsed())
}

/// True once the peer closed `stream` (read returns 0 or fails), within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// `connections` clients on `source` that connect, send nothing, and
/// reconnect as soon as the server closes them, on their own thread and
/// runtime (so the server's runtime is not theirs). Stopped on drop.
struct Flood {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    connects: Arc<AtomicU64>,
}

impl Flood {
    fn start(target: SocketAddr, source: Ipv4Addr, connections: usize) -> Flood {
        let connects = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let counter = connects.clone();
        let thread = std::thread::Builder::new()
            .name("tcp-flood".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("flood runtime");
                runtime.block_on(async move {
                    for _ in 0..connections {
                        let counter = counter.clone();
                        tokio::spawn(async move {
                            loop {
                                let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                };
                                if socket.bind(SocketAddr::V4(SocketAddrV4::new(source, 0))).is_err() {
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                }
                                match tokio::time::timeout(Duration::from_secs(3), socket.connect(target)).await {
                                    Ok(Ok(mut stream)) => {
                                        counter.fetch_add(1, Ordering::Relaxed);
                                        // Idle: wait for the server to close, then reconnect.
                                        let mut buf = [0u8; 64];
                                        let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await;
                                    }
                                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                                }
                            }
                        });
                    }
                    // The tasks (and their sockets) are dropped with the runtime.
                    let _ = stopped.await;
                });
            })
            .expect("flood thread");
        Flood {
            stop: Some(stop),
            thread: Some(thread),
            connects,
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(name: &str, times: &mut [Duration]) -> String {
    times.sort();
    format!(
        "{name}: {} answers, p50 {:?}, p99 {:?}, max {:?}",
        times.len(),
        percentile(times, 0.5),
        percentile(times, 0.99),
        times.last().copied().unwrap_or_default()
    )
}

/// The measured client's side of a flood: for `duration`, every 100 ms a
/// fresh TCP connection from 127.0.0.3 asks alternately a small name and
/// the 1.7 KB one (what truncated UDP answers fall back to), and a UDP
/// query is sent; meanwhile one long-lived connection from 127.0.0.3
/// pipelines three queries every 50 ms and must never be closed.
/// Returns (TCP times, UDP times, pipelined queries answered).
fn measure_while_flooded(udp: SocketAddr, tcp: SocketAddr, duration: Duration) -> (Vec<Duration>, Vec<Duration>, u64) {
    let small = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None);
    let big = simple_query("big.example.com.", RecordType::A, None);
    let stop = Arc::new(AtomicBool::new(false));

    let pipeliner = {
        let stop = stop.clone();
        let names = [
            "nginx.ns.myfed.svc.example.com.",
            "www.example.com.",
            "nothing.example.com.",
        ];
        let mut stream = connect_from(CLIENT_SOURCE, tcp).expect("pipelining client connects");
        std::thread::spawn(move || -> Result<u64, String> {
            let started = Instant::now();
            let mut answered = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut burst = Vec::new();
                for (i, name) in names.iter().enumerate() {
                    let mut packet = simple_query(name, RecordType::A, None);
                    packet[1] = i as u8;
                    burst.extend_from_slice(&framed(&packet));
                }
                let at = started.elapsed();
                stream
                    .write_all(&burst)
                    .map_err(|e| format!("pipelining connection failed at {at:?} after {answered} answers: {e}"))?;
                for (i, name) in names.iter().enumerate() {
                    let m = read_framed(&mut stream)
                        .map_err(|e| format!("pipelining connection closed at {at:?} after {answered} answers: {e}"))?;
                    if m.metadata.id & 0xff != i as u16 || m.queries[0].name.to_ascii() != *name {
                        return Err(format!("answer {answered} out of order: {m:?}"));
                    }
                    answered += 1;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(answered)
        })
    };

    let mut tcp_times = Vec::new();
    let mut udp_times = Vec::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    let mut i = 0u64;
    while started.elapsed() < duration {
        let (packet, expected) = if i.is_multiple_of(2) { (&small, 3) } else { (&big, 100) };
        let (result, took) = tcp_query_from(CLIENT_SOURCE, tcp, packet);
        match result {
            Ok(m) if m.metadata.response_code == ResponseCode::NoError && m.answers.len() == expected => {
                if took >= Duration::from_secs(1) {
                    failures.push(format!("TCP query {i} at {:?} took {took:?}", started.elapsed()));
                }
                tcp_times.push(took);
            }
            Ok(m) => failures.push(format!("TCP query {i}: wrong answer {m:?}")),
            Err(e) => failures.push(format!("TCP query {i} at {:?}: {e} after {took:?}", started.elapsed())),
        }
        let udp_started = Instant::now();
        match query_udp(udp, &small) {
            Ok(m) if m.answers.len() == 3 => udp_times.push(udp_started.elapsed()),
            Ok(m) => failures.push(format!("UDP query {i}: wrong answer {m:?}")),
            Err(e) => failures.push(format!("UDP query {i}: {e}")),
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let pipelined = match pipeliner.join().expect("pipelining thread") {
        Ok(answered) => answered,
        Err(e) => {
            failures.push(e);
            0
        }
    };
    assert!(
        failures.is_empty(),
        "{} failures of {i} probes, first ones: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    (tcp_times, udp_times, pipelined)
}

fn check_loopback_sources() {
    for source in [FLOOD_SOURCE, CLIENT_SOURCE] {
        if let Err(e) = std::net::UdpSocket::bind((source, 0)) {
            panic!("cannot bind {source} (this test needs 127.0.0.0/8 on the loopback interface): {e}");
        }
    }
}

async fn start_server(config: ServerConfig) -> (DnsServer, Arc<DnsMetrics>) {
    let store = ZoneStore::new();
    store.publish(fixture_zones());
    let metrics = DnsMetrics::new();
    let server = DnsServer::start(config, store, metrics.clone()).await.unwrap();
    (server, metrics)
}

/// A server with the default TCP limits (per client: 64) and room for a
/// flood of [`FLOOD_CONNECTIONS`] in this process; with the per-client limit.
async fn start_with_default_limits() -> (DnsServer, Arc<DnsMetrics>, u64) {
    raise_open_files_limit(3 * FLOOD_CONNECTIONS as u64 + 256);
    check_loopback_sources();
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let limit = config.max_tcp_connections_per_client as u64;
    assert_eq!(limit, fedns_dnsserver::DEFAULT_MAX_TCP_CONNECTIONS_PER_CLIENT as u64);
    let (server, metrics) = start_server(config).await;
    (server, metrics, limit)
}

/// Waits until `ready` holds of the server's TCP counters (or panics after 60 s).
fn wait_for(metrics: &DnsMetrics, what: &str, ready: impl Fn(&TcpStats) -> bool) -> Duration {
    let started = Instant::now();
    loop {
        let stats = metrics.tcp_stats();
        if ready(&stats) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: not within 60 s: {stats:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The scenario: default cap (1,024) and idle timeout (10 s): 1,100
/// idle connections from 127.0.0.2 that reconnect whenever closed. The
/// per-client limit is lifted so the cap itself is what is under test (a
/// flood spread over many addresses gets there the same way). For 30 s a
/// client on 127.0.0.3 gets every TCP answer within 1 s, a connection that
/// pipelines real queries is never closed, and UDP answers as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_flood_at_the_cap_cannot_lock_out_new_tcp_clients() {
    raise_open_files_limit(3 * FLOOD_CONNECTIONS as u64 + 256);
    check_loopback_sources();
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        max_tcp_connections_per_client: 0,
        ..ServerConfig::default()
    };
    assert_eq!(config.max_tcp_connections, 1024);
    assert_eq!(config.tcp_idle_timeout, Duration::from_secs(10));
    let (server, metrics) = start_server(config).await;
    let (udp, tcp) = (server.udp_addrs()[0], server.tcp_addrs()[0]);

    tokio::task::spawn_blocking(move || {
        // UDP before the flood, for comparison.
        let small = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None);
        let mut udp_before: Vec<Duration> = (0..50)
            .map(|_| {
                let started = Instant::now();
                query_udp(udp, &small).expect("UDP answer before the flood");
                started.elapsed()
            })
            .collect();
        println!("before the flood, {}", summary("UDP", &mut udp_before));

        let flood = Flood::start(tcp, FLOOD_SOURCE, FLOOD_CONNECTIONS);
        let setup = wait_for(&metrics, "the flood fills the cap", |s| {
            s.open >= 1024 && flood.connects.load(Ordering::Relaxed) >= FLOOD_CONNECTIONS as u64
        });
        let at_start = metrics.tcp_stats();
        println!("flood of {FLOOD_CONNECTIONS} idle connections at the cap after {setup:?}: {at_start:?}");

        let (mut tcp_times, mut udp_times, pipelined) = measure_while_flooded(udp, tcp, Duration::from_secs(30));
        let at_end = metrics.tcp_stats();
        let reconnects = flood.connects.load(Ordering::Relaxed);
        drop(flood);
        println!(
            "during 30 s of flood, {}",
            summary("TCP from 127.0.0.3", &mut tcp_times)
        );
        println!("during 30 s of flood, {}", summary("UDP", &mut udp_times));
        println!("pipelined queries answered on one connection: {pipelined}");
        println!(
            "flood connects: {reconnects}; server: {} evicted, {} closed after the shorter idle timeout, \
             {} after the idle timeout, {} refused at the cap; {at_end:?}",
            at_end.evicted - at_start.evicted,
            at_end.closed_load_timeout - at_start.closed_load_timeout,
            at_end.closed_idle_timeout - at_start.closed_idle_timeout,
            at_end.refused_cap - at_start.refused_cap,
        );
        assert!(tcp_times.len() >= 100, "too few probes: {}", tcp_times.len());
        assert!(pipelined > 0);
        assert!(at_end.evicted > at_start.evicted, "the flood never met the cap");
        assert!(at_end.open <= 1024, "over the cap: {at_end:?}");
    })
    .await
    .unwrap();
    // Idle connections close at shutdown.
    server.shutdown().await;
}

/// The default per-client limit (64): the same flood from one address
/// holds 64 connections, each new one closing the flood's own longest-idle
/// (counted), so it never reaches the cap; 127.0.0.3 is answered within
/// 1 s throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_limit_holds_one_address_to_its_share() {
    let (server, metrics, limit) = start_with_default_limits().await;
    let (udp, tcp) = (server.udp_addrs()[0], server.tcp_addrs()[0]);
    tokio::task::spawn_blocking(move || {
        let flood = Flood::start(tcp, FLOOD_SOURCE, FLOOD_CONNECTIONS);
        let setup = wait_for(&metrics, "the flood meets the per-client limit", |s| {
            s.open >= limit && s.evicted_per_client >= FLOOD_CONNECTIONS as u64
        });
        println!(
            "flood held to {limit} connections after {setup:?}: {:?}",
            metrics.tcp_stats()
        );
        let (mut tcp_times, mut udp_times, pipelined) = measure_while_flooded(udp, tcp, Duration::from_secs(5));
        let stats = metrics.tcp_stats();
        drop(flood);
        println!("{}", summary("TCP from 127.0.0.3", &mut tcp_times));
        println!("{}", summary("UDP", &mut udp_times));
        println!("pipelined queries answered: {pipelined}; server: {stats:?}");
        // The flood's 64, plus at most the two 127.0.0.3 connections.
        assert!(stats.open <= limit + 2, "{stats:?}");
        assert_eq!(stats.evicted, 0, "the cap was never reached: {stats:?}");
        assert!(stats.evicted_per_client > FLOOD_CONNECTIONS as u64, "{stats:?}");
        assert_eq!(
            stats.refused_per_client, 0,
            "the flood is idle, never mid-message: {stats:?}"
        );
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// A client at its own per-client limit is not locked out by its own idle
/// connections (a resolver pool behind one address): 1,100 idle
/// connections held open from 127.0.0.2, then fresh queries from 127.0.0.2
/// are answered within 1 s each, the client's longest-idle connection
/// closing for the first (a finished query frees its own place for the
/// next); other clients are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_at_its_limit_is_not_locked_out_by_its_own_idle_connections() {
    let (server, metrics, limit) = start_with_default_limits().await;
    let tcp = server.tcp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        // Held open and idle, never reconnecting: what a pool's idle
        // connections look like.
        let idle: Vec<TcpStream> = (0..FLOOD_CONNECTIONS)
            .map(|i| connect_from(FLOOD_SOURCE, tcp).unwrap_or_else(|e| panic!("idle connection {i}: {e}")))
            .collect();
        let setup = wait_for(&metrics, "the idle connections are admitted", |s| {
            s.accepted >= FLOOD_CONNECTIONS as u64
        });
        let held = metrics.tcp_stats();
        println!(
            "{} idle connections opened in {:?} (+{setup:?}); server: {held:?}",
            idle.len(),
            started.elapsed()
        );
        assert!(held.open <= limit, "the client holds at most its limit: {held:?}");
        let small = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None);
        let mut times = Vec::new();
        for (i, source) in std::iter::repeat_n(FLOOD_SOURCE, 20)
            .chain(std::iter::repeat_n(CLIENT_SOURCE, 5))
            .enumerate()
        {
            let (result, took) = tcp_query_from(source, tcp, &small);
            let m = result.unwrap_or_else(|e| panic!("query {i} from {source}: {e} after {took:?}"));
            assert_eq!(m.answers.len(), 3, "query {i} from {source}: {m:?}");
            assert!(took < Duration::from_secs(1), "query {i} from {source} took {took:?}");
            times.push(took);
        }
        let stats = metrics.tcp_stats();
        println!(
            "{}; server: {stats:?}",
            summary("fresh TCP queries beside the idle ones", &mut times)
        );
        assert!(
            stats.evicted_per_client > FLOOD_CONNECTIONS as u64 - limit,
            "the client's own idle connections made room: {stats:?}"
        );
        assert_eq!(stats.refused_per_client, 0, "{stats:?}");
        assert_eq!(stats.evicted, 0, "the cap was never reached: {stats:?}");
        drop(idle);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Above the high-water mark (3/4 of the cap) idle connections are closed
/// after the shorter timeout, down to the mark; the rest wait for the full
/// idle timeout. Cap 8 (mark 6), idle timeout 4 s (shorter one: 1 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_shortens_above_the_high_water_mark() {
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        tcp_idle_timeout: Duration::from_secs(4),
        max_tcp_connections: 8,
        ..ServerConfig::default()
    };
    assert_eq!(config.tcp_high_water(), 6);
    assert_eq!(config.tcp_load_idle_timeout(), Duration::from_secs(1));
    let (server, metrics) = start_server(config).await;
    let tcp = server.tcp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let mut stream = TcpStream::connect(tcp).unwrap();
                std::thread::spawn(move || {
                    assert!(
                        closed_within(&mut stream, Duration::from_secs(10)),
                        "not closed within 10 s"
                    );
                    started.elapsed()
                })
            })
            .collect();
        let mut closed: Vec<Duration> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        closed.sort();
        println!("8 idle connections closed after {closed:?}");
        let stats = metrics.tcp_stats();
        println!("{stats:?}");
        assert_eq!(stats.closed_load_timeout, 2, "{stats:?}");
        assert_eq!(stats.closed_idle_timeout, 6, "{stats:?}");
        for early in &closed[..2] {
            assert!(
                *early >= Duration::from_millis(700) && *early < Duration::from_secs(3),
                "{closed:?}"
            );
        }
        for late in &closed[2..] {
            assert!(*late >= Duration::from_millis(3500), "{closed:?}");
        }
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// At the cap, a connection with part of a message received is not closed
/// for a newcomer (the newcomer is, when nothing else is idle); an idle
/// one is; the half-sent queries are answered once complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_spares_connections_mid_message() {
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        max_tcp_connections: 2,
        ..ServerConfig::default()
    };
    let (server, metrics) = start_server(config).await;
    let tcp = server.tcp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        let query = framed(&simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None));
        let (head, tail) = query.split_at(7);
        let open = |stream: &mut TcpStream| {
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        };
        // x and y: half a query each.
        let mut x = TcpStream::connect(tcp).unwrap();
        let mut y = TcpStream::connect(tcp).unwrap();
        open(&mut x);
        open(&mut y);
        x.write_all(head).unwrap();
        y.write_all(head).unwrap();
        std::thread::sleep(Duration::from_millis(200));

        // z: nothing is idle, so z is the one closed.
        let mut z = TcpStream::connect(tcp).unwrap();
        let started = Instant::now();
        assert!(closed_within(&mut z, Duration::from_secs(2)), "z was admitted");
        println!("z closed at accept after {:?}", started.elapsed());
        assert_eq!(metrics.tcp_stats().refused_cap, 1);

        // x completes its query and is answered; now x is idle.
        x.write_all(tail).unwrap();
        assert_eq!(read_framed(&mut x).unwrap().answers.len(), 3);
        std::thread::sleep(Duration::from_millis(100));

        // w: x (idle) is closed for it, y (mid-message) is not.
        let mut w = TcpStream::connect(tcp).unwrap();
        open(&mut w);
        w.write_all(&query).unwrap();
        assert_eq!(read_framed(&mut w).unwrap().answers.len(), 3);
        let started = Instant::now();
        assert!(closed_within(&mut x, Duration::from_secs(2)), "x was not closed");
        println!("x closed for w after {:?}", started.elapsed());
        y.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        y.write_all(tail).unwrap();
        assert_eq!(read_framed(&mut y).unwrap().answers.len(), 3, "y's query was cut");
        let stats = metrics.tcp_stats();
        println!("{stats:?}");
        assert_eq!(stats.evicted, 1);
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Connections whose clients send queries but never read the answers fill
/// their socket buffers, and the server's writes block. Such a write,
/// blocked for longer than a stalled message may be, no longer protects
/// its connection at the cap: a new client is answered (before, every
/// connection was "answering" and the new one was closed at accept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_read_are_evicted_at_the_cap() {
    check_loopback_sources();
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        max_tcp_connections: 2,
        max_tcp_connections_per_client: 0,
        ..ServerConfig::default()
    };
    let (server, metrics) = start_server(config).await;
    let tcp = server.tcp_addrs()[0];
    tokio::task::spawn_blocking(move || {
        let query = framed(&simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None));
        let batch: Vec<u8> = query.iter().copied().cycle().take(query.len() * 1000).collect();
        // Two non-readers: each writes queries until its own writes block
        // (the server stopped reading: its answers fill both buffers).
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                let batch = batch.clone();
                std::thread::spawn(move || {
                    let mut stream = connect_from(FLOOD_SOURCE, tcp).unwrap();
                    stream.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
                    let mut sent = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        match stream.write(&batch) {
                            Ok(n) => sent += n,
                            Err(_) => std::thread::sleep(Duration::from_millis(50)),
                        }
                    }
                    (stream, sent)
                })
            })
            .collect();
        wait_for(&metrics, "two connections open", |s| s.open == 2);
        // Past a stalled message's time with both writes blocked.
        std::thread::sleep(Duration::from_millis(2500)); // the server's STALLED_MESSAGE is 1 s
        let started = Instant::now();
        let (answer, took) = tcp_query_from(
            CLIENT_SOURCE,
            tcp,
            &simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None),
        );
        println!("a new client's answer after {took:?} (waited {:?})", started.elapsed());
        assert_eq!(answer.expect("answered").answers.len(), 3);
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            let (_, sent) = writer.join().unwrap();
            println!("a non-reader wrote {sent} octets of queries");
        }
        let stats = metrics.tcp_stats();
        println!("{stats:?}");
        assert!(stats.evicted >= 1, "{stats:?}");
    })
    .await
    .unwrap();
    server.shutdown().await;
}
