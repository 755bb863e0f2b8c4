//! The listeners never share a UDP port with another socket. The UDP
//! workers bind with SO_REUSEPORT, which lets any socket of the same user
//! join the port and take a share of its queries: a server that was
//! dropped but kept answering did exactly that to the next server the
//! kernel gave the same port, and answered for it with its own zones
//! (a test saw another test's DNSSEC signatures).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::ResponseCode;
use fedns_dnsserver::hickory_proto::rr::RecordType;
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneStore};

fn config(listen: SocketAddr) -> ServerConfig {
    ServerConfig {
        listen: vec![listen],
        udp_workers: 2,
        ..ServerConfig::default()
    }
}

/// `example.com` with only `owner` (an A record) in it.
fn zone_with(owner: &str) -> Vec<fedns_dnsserver::ZoneContent> {
    let mut zones = fixture_zones();
    zones.truncate(1);
    zones[0].records.retain(|r| r.name.to_ascii().starts_with("ns"));
    zones[0]
        .records
        .push(fedns_dnsserver::hickory_proto::rr::Record::from_rdata(
            name(owner),
            30,
            rdata(RecordType::A, "192.0.2.7"),
        ));
    zones
}

fn rcode_of(addr: SocketAddr, qname: &str) -> ResponseCode {
    query_udp(addr, &simple_query(qname, RecordType::A, None))
        .unwrap()
        .metadata
        .response_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_udp_port_is_never_shared_and_a_dropped_server_lets_go() {
    let first_store = ZoneStore::new();
    first_store.publish(zone_with("first.example.com."));
    let first = DnsServer::start(config("127.0.0.1:0".parse().unwrap()), first_store, DnsMetrics::new())
        .await
        .unwrap();
    let addr = first.udp_addrs()[0];
    assert_eq!(first.tcp_addrs()[0], addr, "UDP and TCP on one port");

    // The same fixed port while the first server holds it: an error after
    // the wait, not a second member of the first one's port group.
    let second_store = ZoneStore::new();
    second_store.publish(zone_with("second.example.com."));
    let started = Instant::now();
    let refused = DnsServer::start(config(addr), second_store.clone(), DnsMetrics::new()).await;
    let err = refused.expect_err("a port another server holds must not be shared");
    println!("held port refused after {:?}: {err}", started.elapsed());
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    // Every query still reaches the first server.
    for _ in 0..50 {
        assert_eq!(rcode_of(addr, "first.example.com."), ResponseCode::NoError);
    }

    // Dropped, the first server lets the port go: the second binds it
    // (waiting for the workers to close their sockets) and alone answers.
    drop(first);
    let started = Instant::now();
    let second = DnsServer::start(config(addr), second_store, DnsMetrics::new())
        .await
        .expect("the port of a dropped server is free again");
    println!("port of the dropped server bound after {:?}", started.elapsed());
    assert_eq!(second.udp_addrs()[0], addr);
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..200 {
        // New source port per query, so the kernel's hash would spread
        // them over every socket in the port's group.
        assert_eq!(rcode_of(addr, "second.example.com."), ResponseCode::NoError);
        assert_eq!(rcode_of(addr, "first.example.com."), ResponseCode::NXDomain);
        assert!(Instant::now() < deadline);
    }
    second.shutdown().await;
}

/// Port 0 picks a port no other UDP socket holds, even one bound with
/// SO_REUSEPORT (which a plain port-0 bind of a SO_REUSEPORT socket may
/// be handed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_zero_never_joins_a_reuseport_group() {
    use socket2::{Domain, Protocol, Socket, Type};
    // Strangers: SO_REUSEPORT UDP sockets on 2,000 loopback ports (fewer
    // if descriptors run short), about 7 % of the ephemeral range: with
    // 30 servers, a server joining a stranger's port shows in about 9 of
    // 10 runs.
    let mut strangers = Vec::new();
    let mut held = std::collections::HashSet::new();
    for _ in 0..2000 {
        let Ok(socket) = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)) else {
            break;
        };
        socket.set_reuse_port(true).unwrap();
        socket.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
        held.insert(socket.local_addr().unwrap().as_socket().unwrap().port());
        strangers.push(socket);
    }
    // Room for the servers' own descriptors.
    let keep = strangers.len().saturating_sub(200);
    for socket in strangers.drain(keep..) {
        held.remove(&socket.local_addr().unwrap().as_socket().unwrap().port());
    }
    let stranger_count = strangers.len();
    let mut servers = Vec::new();
    for _ in 0..30 {
        let store = ZoneStore::new();
        store.publish(zone_with("x.example.com."));
        let server = DnsServer::start(config("127.0.0.1:0".parse().unwrap()), store, DnsMetrics::new())
            .await
            .unwrap();
        let port = server.udp_addrs()[0].port();
        assert!(!held.contains(&port), "port {port} is a stranger's");
        assert!(held.insert(port), "two servers on port {port}");
        servers.push(server);
    }
    println!("30 servers on 30 ports of their own beside {stranger_count} SO_REUSEPORT strangers");
}
