//! How long one changed name takes to reach the served
//! snapshot, full publish against `ZoneStore::publish_changes`, in a zone
//! shaped like tests/tests/integration/large_zone.rs (a global, a region
//! and a zone name per Service; 200,001 names by default). Prints figures,
//! asserts nothing (the machine is shared).
//!
//! Usage: `cargo run --release --example publish_changes`
//! (env: `NAMES=200001 ROUNDS=20`).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
use fedns_dnsserver::{ZoneChanges, ZoneContent, ZoneStore};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn name(s: &str) -> Name {
    Name::from_ascii(s).expect("a valid name")
}

fn a(owner: &Name, ip: Ipv4Addr) -> Record {
    Record::from_rdata(owner.clone(), 30, RData::A(ip.into()))
}

/// The three names of Service `i` and their records.
fn service(i: usize, generation: u8) -> Vec<(Name, Vec<Record>)> {
    let one = Ipv4Addr::new(10, (i >> 8) as u8, i as u8, 1);
    let two = Ipv4Addr::new(10, (i >> 8) as u8, i as u8, 2 + generation);
    let global = name(&format!("s{i}.ns.myfed.svc.example.com."));
    let region = name(&format!("s{i}.ns.myfed.svc.eu.example.com."));
    let zone = name(&format!("s{i}.ns.myfed.svc.eu-1a.eu.example.com."));
    vec![
        (global.clone(), vec![a(&global, one), a(&global, two)]),
        (region.clone(), vec![a(&region, one)]),
        (zone.clone(), vec![a(&zone, two)]),
    ]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let names = env("NAMES", 200_001);
    let rounds = env("ROUNDS", 20).max(1);
    let services = names.div_ceil(3);
    let apex = name("example.com.");
    let mut zone = ZoneContent::new(apex.clone());
    for i in 0..services {
        for (_, records) in service(i, 0) {
            zone.records.extend(records);
        }
    }
    let store = ZoneStore::new();
    let started = Instant::now();
    let outcome = store.publish(vec![zone.clone()]);
    let full = started.elapsed();
    let snapshot = store.load();
    println!(
        "zone: {} names served ({} owners given), {} RRsets, {} octets of stored answers",
        snapshot.name_count(),
        services * 3,
        outcome.zones[0].rrset_count,
        snapshot.arena_bytes()
    );
    println!(
        "full publish (cold): {} (snapshot build {}); RSS after it {} MiB (the zone given, the snapshot and what the store keeps for changes)",
        ms(full),
        ms(Duration::from_secs_f64(store.last_build_seconds())),
        trimmed_rss_mib()
    );

    // A full publish of the same content with one name changed: what a
    // change costs without publish_changes.
    let mut changed = zone.clone();
    changed.records[1] = a(&changed.records[1].name, Ipv4Addr::new(192, 0, 2, 1));
    let started = Instant::now();
    assert!(store.publish(vec![changed]).changed);
    let full_one = started.elapsed();
    println!(
        "full publish, one name changed: {} (snapshot build {})",
        ms(full_one),
        ms(Duration::from_secs_f64(store.last_build_seconds()))
    );
    store.publish(vec![zone]);

    for batch in [1usize, 10, 100] {
        let mut walls = Vec::with_capacity(rounds);
        let mut builds = Vec::with_capacity(rounds);
        for round in 0..rounds {
            // `batch` owners of different Services, new addresses each round.
            let names: Vec<(Name, Vec<Record>)> = (0..batch)
                .map(|k| {
                    let i = (k * 7919 + round * 104_729) % services;
                    service(i, (round % 200) as u8 + 1).swap_remove(0)
                })
                .collect();
            let changes = vec![ZoneChanges {
                apex: apex.clone(),
                names,
                routed: Vec::new(),
            }];
            let started = Instant::now();
            let outcome = store
                .publish_changes(changes)
                .expect("a plain change applies incrementally");
            walls.push(started.elapsed());
            builds.push(Duration::from_secs_f64(store.last_build_seconds()));
            assert!(outcome.changed);
        }
        walls.sort();
        builds.sort();
        println!(
            "publish_changes of {batch} name(s), {rounds} rounds: wall p50 {} p99 {} max {}; snapshot update p50 {}",
            ms(percentile(&walls, 0.5)),
            ms(percentile(&walls, 0.99)),
            ms(*walls.last().expect("rounds > 0")),
            ms(percentile(&builds, 0.5)),
        );
        if batch == 1 {
            let ratio = full_one.as_secs_f64() / percentile(&walls, 0.5).as_secs_f64();
            println!("one changed name: full publish / publish_changes = {ratio:.0}x");
        }
    }
    println!("peak RSS {} MiB", peak_rss_mib());
}

/// This process's peak resident set (`VmHWM`), in MiB; 0 off Linux.
fn peak_rss_mib() -> u64 {
    proc_status_mib("VmHWM:")
}

/// This process's resident set (`VmRSS`) after glibc's `malloc_trim(0)`:
/// what is in use, not what the allocator keeps from earlier peaks.
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
    proc_status_mib("VmRSS:")
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
