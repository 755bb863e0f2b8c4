//! One zone with 200,000 names publishes. Domain and
//! DNSEndpoint objects (the shape the controller writes: global, region and
//! zone names of 50,000 Services) go through the desired-zone computation,
//! the embedded sink's snapshot build and a DNS server on loopback, which
//! `dig` then asks. Prints the time of each step and the process's peak
//! memory (figures, not assertions: the machine is shared).

use std::time::Instant;

use fedns_api::{DNSEndpoint, Domain};
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneStore};
use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::plan::desired::desired_zones;
use serde_json::json;

/// Names in the zone: 200,000, or `FEDNS_LARGE_ZONE_NAMES` (to see how
/// the figures grow with the count).
fn name_target() -> usize {
    std::env::var("FEDNS_LARGE_ZONE_NAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// Each Service gives a global, a region and a zone name.
const NAMES_PER_SERVICE: usize = 3;

fn global(i: usize) -> String {
    format!("s{i}.ns.myfed.svc.example.com")
}

fn endpoint_object(i: usize) -> DNSEndpoint {
    let a = format!("10.{}.{}.1", (i >> 8) & 255, i & 255);
    let b = format!("10.{}.{}.2", (i >> 8) & 255, i & 255);
    serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": format!("service-s{i}"), "namespace": "ns",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"endpoints": [
            {"dnsName": global(i), "recordType": "A", "targets": [a, b], "recordTTL": 30},
            {"dnsName": format!("s{i}.ns.myfed.svc.eu.example.com"), "recordType": "A", "targets": [a], "recordTTL": 30},
            {"dnsName": format!("s{i}.ns.myfed.svc.eu-1a.eu.example.com"), "recordType": "A", "targets": [b], "recordTTL": 30},
        ]},
    }))
    .expect("a valid DNSEndpoint")
}

/// This process's peak resident set (`VmHWM`), in MiB; 0 off Linux.
fn peak_rss_mib() -> u64 {
    proc_status_mib("VmHWM:")
}

/// This process's resident set now (`VmRSS`), in MiB; 0 off Linux.
fn rss_mib() -> u64 {
    proc_status_mib("VmRSS:")
}

/// [`rss_mib`] after glibc's `malloc_trim(0)`: what is still in use, not
/// what the allocator keeps from earlier peaks.
fn trimmed_rss_mib() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim only releases free heap memory.
        unsafe {
            malloc_trim(0);
        }
    }
    rss_mib()
}

fn proc_status_mib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

fn dig(port: u16, name: &str, rtype: &str, tcp: bool) -> String {
    let mut command = std::process::Command::new("dig");
    command.args([
        "+time=5",
        "+tries=2",
        "-p",
        &port.to_string(),
        "@127.0.0.1",
        name,
        rtype,
    ]);
    if tcp {
        command.arg("+tcp");
    }
    let out = command.output().expect("dig (Debian bind9-dnsutils) must be installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn status(answer: &str) -> &str {
    answer
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .and_then(|s| s.split(',').next())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_with_200000_names_publishes_and_answers() {
    let domain: Domain = serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed", "namespace": "fedns-system"},
        "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"]},
    }))
    .unwrap();
    let names_wanted = name_target();
    let services = names_wanted.div_ceil(NAMES_PER_SERVICE);
    let started = Instant::now();
    let endpoints: Vec<DNSEndpoint> = (0..services).map(endpoint_object).collect();
    let objects_time = started.elapsed();
    let objects_rss = rss_mib();

    let started = Instant::now();
    let desired = desired_zones(std::slice::from_ref(&domain), &endpoints);
    let desired_time = started.elapsed();
    let desired_rss = rss_mib();
    assert!(
        desired.problems.is_empty(),
        "{:?}",
        &desired.problems[..desired.problems.len().min(3)]
    );
    assert_eq!(desired.zones.len(), 1);
    let names = services * NAMES_PER_SERVICE;
    assert!(names >= names_wanted);
    assert_eq!(desired.zones[0].rrsets.len(), names);

    let store = ZoneStore::new();
    let sink = EmbeddedSink::new(store.clone());
    let started = Instant::now();
    let outcome = sink.apply(&desired);
    let build_time = started.elapsed();
    let built_rss = rss_mib();
    let built_peak = peak_rss_mib();
    assert!(
        outcome.changed && outcome.skipped.is_empty(),
        "{:?}",
        outcome.skipped.first()
    );
    let snapshot = store.load();
    assert!(snapshot.name_count() >= names, "{} names served", snapshot.name_count());

    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store.clone(), DnsMetrics::new())
        .await
        .unwrap();
    let port = server.udp_addrs()[0].port();
    for i in [0, services / 2, services - 1] {
        let answer = tokio::task::spawn_blocking(move || dig(port, &global(i).to_uppercase(), "A", false))
            .await
            .unwrap();
        assert_eq!(status(&answer), "NOERROR", "{answer}");
        assert!(
            answer.contains(&format!("10.{}.{}.1", (i >> 8) & 255, i & 255)),
            "{answer}"
        );
        assert!(answer.contains(";; flags: qr aa"), "{answer}");
    }
    let answer = tokio::task::spawn_blocking(move || {
        dig(
            port,
            &format!("s{}.ns.myfed.svc.eu-1a.eu.example.com", services - 1),
            "A",
            true,
        )
    })
    .await
    .unwrap();
    assert_eq!(status(&answer), "NOERROR", "{answer}");
    let answer = tokio::task::spawn_blocking(move || dig(port, "nope.ns.myfed.svc.example.com", "A", false))
        .await
        .unwrap();
    assert_eq!(status(&answer), "NXDOMAIN", "{answer}");
    assert!(answer.contains("SOA"), "NXDOMAIN carries the SOA: {answer}");

    println!(
        "large zone: {names} names ({} rrsets, {} arena bytes): objects {objects_time:?}, desired zones {desired_time:?}, \
         snapshot build {build_time:?}; RSS after the objects {objects_rss} MiB, after desired zones {desired_rss} MiB, \
         after the build {built_rss} MiB (peak {built_peak} MiB)",
        snapshot.rrset_count(),
        snapshot.arena_bytes(),
    );
    drop(desired);
    drop(endpoints);
    println!(
        "large zone: RSS with only the snapshot kept {} MiB, {} MiB once the allocator returns free memory",
        rss_mib(),
        trimmed_rss_mib()
    );
    server.shutdown().await;
}

/// One name with more addresses than a DNS message holds (65,535 octets
/// over TCP: about 4,000 A records). Checked: the rest of the zone still
/// publishes and answers, and the server answers that name over UDP and
/// TCP without a hang or a crash, and the publish reports the name (its
/// answer is an empty one with TC set, even over TCP: no transport
/// carries it). Printed: what the answers hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_with_more_addresses_than_a_message_holds() {
    let targets: Vec<String> = (0..5000).map(|i| format!("10.8.{}.{}", i / 250, i % 250 + 1)).collect();
    let desired = fedns_e2e::desired(
        "example.com",
        json!([
            {"dnsName": "big.ns.myfed.svc.example.com", "recordType": "A", "targets": targets},
            {"dnsName": "small.ns.myfed.svc.example.com", "recordType": "A", "targets": ["192.0.2.1"]},
        ]),
    );
    let store = ZoneStore::new();
    let outcome = EmbeddedSink::new(store.clone()).apply(&desired);
    println!("skipped: {:?}", outcome.skipped);
    assert!(
        outcome
            .skipped
            .iter()
            .any(|s| s.name == "big.ns.myfed.svc.example.com." && s.reason.contains("more than one DNS message holds")),
        "{:?}",
        outcome.skipped
    );
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store.clone(), DnsMetrics::new())
        .await
        .unwrap();
    let port = server.udp_addrs()[0].port();
    let small = tokio::task::spawn_blocking(move || dig(port, "small.ns.myfed.svc.example.com", "A", false))
        .await
        .unwrap();
    assert_eq!(status(&small), "NOERROR", "{small}");
    assert!(small.contains("192.0.2.1"), "{small}");
    let udp = tokio::task::spawn_blocking(move || dig(port, "big.ns.myfed.svc.example.com", "A", false))
        .await
        .unwrap();
    let tcp = tokio::task::spawn_blocking(move || dig(port, "big.ns.myfed.svc.example.com", "A", true))
        .await
        .unwrap();
    let answers = |text: &str| text.lines().filter(|l| l.contains("\tA\t")).count();
    println!(
        "5,000 addresses at one name: UDP {} ({} A), TCP {} ({} A)",
        status(&udp),
        answers(&udp),
        status(&tcp),
        answers(&tcp)
    );
    println!(
        "{}",
        tcp.lines()
            .filter(|l| l.starts_with(";;"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    server.shutdown().await;
}
