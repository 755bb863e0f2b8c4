//! `maxAnswers` and stickiness inside a policy's chosen set, on the real
//! server over loopback and on the snapshot (for counts over many client
//! subnets): at most N addresses per family in each answer, every address
//! getting its share; a sticky name's window and cluster follow the client
//! subnet, and when one cluster of a set fails only its subnets move.

use std::collections::BTreeMap;

use fedns_dnsserver::hickory_proto::rr::{Record, RecordType};
use fedns_dnsserver::{RoutedName, RoutedVariant, RoutingPolicy, Snapshot, ZoneContent};

use crate::common::{name, rdata};
use crate::routing::{addresses, ask_from, ecs_of, query, serve};

const NAME: &str = "many.example.com.";

/// `clusters` clusters `c0`.. each with `per_cluster` IPv4 addresses
/// (203.0.113.x, answer data only: nothing is contacted) and one IPv6
/// address, regions `eu` for even and `us` for odd indices, weight i+1.
fn zone(
    clusters: usize,
    per_cluster: usize,
    policy: RoutingPolicy,
    max: Option<u16>,
    sticky: Option<(u8, u8)>,
) -> ZoneContent {
    let mut zone = ZoneContent::new(name("example.com."));
    let mut variants = Vec::new();
    for c in 0..clusters {
        let mut records = Vec::new();
        for k in 0..per_cluster {
            let ip = format!("203.0.113.{}", c * per_cluster + k + 1);
            records.push(Record::from_rdata(name(NAME), 30, rdata(RecordType::A, &ip)));
        }
        let ip6 = format!("2001:db8::{:x}", c + 1);
        records.push(Record::from_rdata(name(NAME), 30, rdata(RecordType::AAAA, &ip6)));
        zone.records.extend(records.iter().cloned());
        variants.push(RoutedVariant {
            id: format!("c{c}"),
            weight: c as u32 + 1,
            region: Some(if c % 2 == 0 { "eu" } else { "us" }.into()),
            records,
        });
    }
    zone.routed.push(RoutedName {
        name: name(NAME),
        policy,
        variants,
        max_answers: max,
        sticky_within: sticky,
    });
    zone.client_regions.networks = vec![("10.0.0.0/7".parse().unwrap(), "eu".into())];
    zone
}

/// `maxAnswers: 2` on a name answering all of 10 clusters (fedns's `All`):
/// every answer holds 2 A and 1 AAAA (the only one per cluster... 10 in
/// all, so 2), and each address is in about a tenth of... 2/10 of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cluster_with_max_answers_rotates_windows_of_n() {
    let (_server, addr) = serve(vec![zone(10, 1, RoutingPolicy::Every, Some(2), None)], None).await;
    tokio::task::spawn_blocking(move || {
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        const N: u32 = 3_000;
        for _ in 0..N {
            let m = ask_from("127.0.0.1", addr, &query(NAME, RecordType::A, None));
            let got = addresses(&m);
            assert_eq!(got.len(), 2, "{got:?}");
            assert_ne!(got[0], got[1]);
            for a in got {
                *seen.entry(a).or_default() += 1;
            }
        }
        println!("{N} answers of 2 of 10 addresses: {seen:?}");
        assert_eq!(seen.len(), 10, "every address is answered");
        for (a, n) in &seen {
            // Expected 600 each (2/10 of 3,000); binomial σ ≈ 22.
            assert!((450..=750).contains(n), "{a}: {n}");
        }
        let m = ask_from("127.0.0.1", addr, &query(NAME, RecordType::AAAA, None));
        assert_eq!(addresses(&m).len(), 2, "per family");
    })
    .await
    .unwrap();
}

/// Weighted with `maxAnswers: 3`: the drawn cluster, then others drawn by
/// weight without replacement; every answer 3 distinct addresses; heavier
/// clusters in more answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_with_max_answers_fills_in_an_order_drawn_by_weight() {
    let (_server, addr) = serve(vec![zone(10, 1, RoutingPolicy::Weighted, Some(3), None)], None).await;
    tokio::task::spawn_blocking(move || {
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        for _ in 0..2_000 {
            let got = addresses(&ask_from("127.0.0.1", addr, &query(NAME, RecordType::A, None)));
            assert_eq!(got.len(), 3, "{got:?}");
            for a in got {
                *seen.entry(a).or_default() += 1;
            }
        }
        println!("2,000 answers of 3: {seen:?}");
        assert_eq!(seen.len(), 10);
        // c9 (weight 10) is in more answers than c0 (weight 1).
        assert!(seen["203.0.113.10"] > seen["203.0.113.1"], "{seen:?}");
    })
    .await
    .unwrap();
}

/// Sticky Weighted with `maxAnswers: 2` over clusters of 4 addresses: a
/// subnet keeps the same 2 addresses (and SCOPE /24); other subnets get
/// other windows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_windows_follow_the_client_subnet() {
    let policy = RoutingPolicy::StickyWeighted {
        v4_prefix: 24,
        v6_prefix: 56,
    };
    let (_server, addr) = serve(vec![zone(3, 4, policy, Some(2), None)], None).await;
    tokio::task::spawn_blocking(move || {
        let ask = |subnet: &str| ask_from("127.0.0.1", addr, &query(NAME, RecordType::A, Some((subnet, 24))));
        let first = ask("192.0.2.0");
        assert_eq!(addresses(&first).len(), 2);
        assert_eq!(ecs_of(&first), Some((24, 24)));
        for _ in 0..20 {
            assert_eq!(addresses(&ask("192.0.2.0")), addresses(&first));
        }
        let mut answers = std::collections::BTreeSet::new();
        for i in 0..200u32 {
            answers.insert(addresses(&ask(&format!("10.{}.{}.0", i / 256, i % 256))));
        }
        println!("200 subnets got {} distinct answers of 2", answers.len());
        assert!(answers.len() >= 6, "windows differ between subnets: {answers:?}");
    })
    .await
    .unwrap();
}

/// The cluster each of `subnets` /24s (from 10.0.0.0 on, all in the
/// zone's eu network 10.0.0.0/7) gets from a snapshot of `zone`.
fn choices(zone: &ZoneContent, subnets: u32) -> Vec<Vec<String>> {
    let snapshot = Snapshot::build(&[(zone.clone(), 1)]);
    (0..subnets)
        .map(|i| {
            let client = std::net::Ipv4Addr::from(0x0A00_0000 + (i << 8) + 9);
            let choice = snapshot.choice_for(NAME, Some(client.into())).expect("routed");
            assert_eq!(
                choice.scope, 24,
                "the subnet's prefix is longer than the placement's /7"
            );
            choice.variants
        })
        .collect()
}

/// `Nearest` sticky within the region (the `eu` clusters c0, c2, c4, c6):
/// each of 100,000 client /24s in eu gets one cluster, a quarter each; c2
/// failing moves only its subnets (≤ 1/4 + 1 %), and they come back.
#[test]
fn nearest_sticky_within_the_region_moves_only_the_failed_clusters_subnets() {
    let policy = || RoutingPolicy::Nearest { fallback: vec![] };
    let all = zone(8, 1, policy(), None, Some((24, 56)));
    let n = 100_000;
    let before = choices(&all, n);
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for c in &before {
        assert_eq!(c.len(), 1, "one cluster per subnet: {c:?}");
        *counts.entry(c[0].as_str()).or_default() += 1;
    }
    println!("{n} eu subnets: {counts:?}");
    assert_eq!(counts.keys().copied().collect::<Vec<_>>(), ["c0", "c2", "c4", "c6"]);
    let chi2: f64 = counts
        .values()
        .map(|&o| (f64::from(o) - f64::from(n) / 4.0).powi(2) / (f64::from(n) / 4.0))
        .sum();
    println!("chi-squared {chi2:.2} (3 degrees of freedom; p > 0.001 below 16.27)");
    assert!(chi2 < 16.27);
    let mut without = all.clone();
    without.routed[0].variants.retain(|v| v.id != "c2");
    let c2_ips: Vec<String> = all.routed[0].variants[2]
        .records
        .iter()
        .map(|r| r.data.to_string())
        .collect();
    without.records.retain(|r| !c2_ips.contains(&r.data.to_string()));
    let during = choices(&without, n);
    let moved = before.iter().zip(&during).filter(|(b, d)| b != d).count();
    println!(
        "c2 fails: {moved} of {n} subnets change cluster ({:.2} %)",
        moved as f64 * 100.0 / f64::from(n)
    );
    assert!(moved as f64 / f64::from(n) <= 0.26);
    assert!(before.iter().zip(&during).all(|(b, d)| b == d || b[0] == "c2"));
    assert_eq!(choices(&all, n), before, "c2's subnets return");
}

/// `Every` (fedns's `Failover`, whose RRsets hold the active role) sticky
/// within: one cluster per subnet instead of all of them, and the scope
/// is the subnet's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_set_sticky_within_answers_one_cluster_per_subnet() {
    let (_server, addr) = serve(vec![zone(4, 1, RoutingPolicy::Every, None, Some((24, 56)))], None).await;
    tokio::task::spawn_blocking(move || {
        let ask = |subnet: &str| ask_from("127.0.0.1", addr, &query(NAME, RecordType::A, Some((subnet, 24))));
        let first = ask("192.0.2.0");
        assert_eq!(addresses(&first).len(), 1);
        assert_eq!(ecs_of(&first), Some((24, 24)));
        assert_eq!(addresses(&ask("192.0.2.0")), addresses(&first));
        // No client subnet: one cluster drawn per query.
        let got = addresses(&ask_from(
            "127.0.0.1",
            addr,
            &query(NAME, RecordType::A, Some(("0.0.0.0", 0))),
        ));
        assert_eq!(got.len(), 1);
    })
    .await
    .unwrap();
}

/// Explain's view: the report says the limit and the clusters of each
/// window; a client without subnet sees every candidate.
#[test]
fn reports_say_the_limit_and_the_clusters_of_each_window() {
    let snapshot = Snapshot::build(&[(zone(4, 1, RoutingPolicy::Every, Some(2), None), 1)]);
    let routes = snapshot.routes();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].max_answers, Some(2));
    assert!(routes[0].policy.contains("at most 2"), "{}", routes[0].policy);
    assert_eq!(routes[0].variants.len(), 4, "one window per starting address");
    assert!(
        routes[0].variants.iter().all(|v| v.len() == 2),
        "{:?}",
        routes[0].variants
    );
    let choice = snapshot.choice_for(NAME, None).unwrap();
    assert_eq!(choice.variants.len(), 4);
}

/// ECS SCOPE of a sticky answer when the chosen set holds one cluster
/// (a Failover tier or a Nearest region with one member): the longer of
/// the placement's prefix and the sticky subnet's prefix, as with several
/// clusters, so no resolver keeps the subnet's choice for a wider block.
/// Each case: (policy, clusters, sticky prefixes, client subnet, source
/// prefix, region networks, expected SCOPE).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_scope_is_the_subnets_even_with_one_cluster() {
    type Case = (
        &'static str,
        RoutingPolicy,
        usize,
        (u8, u8),
        &'static str,
        u8,
        &'static str,
        u8,
    );
    let nearest = || RoutingPolicy::Nearest { fallback: vec![] };
    let cases: Vec<Case> = vec![
        (
            "Failover tier of one, /24",
            RoutingPolicy::Every,
            1,
            (24, 56),
            "192.0.2.0",
            24,
            "10.0.0.0/7",
            24,
        ),
        (
            "Failover tier of one, /16 source",
            RoutingPolicy::Every,
            1,
            (24, 56),
            "192.0.0.0",
            16,
            "10.0.0.0/7",
            24,
        ),
        (
            "Failover tier of one, /20 sticky",
            RoutingPolicy::Every,
            1,
            (20, 48),
            "192.0.2.0",
            24,
            "10.0.0.0/7",
            20,
        ),
        (
            "Failover tier of one, /32 sticky",
            RoutingPolicy::Every,
            1,
            (32, 128),
            "192.0.2.7",
            32,
            "10.0.0.0/7",
            32,
        ),
        (
            "Failover tier of one, IPv6 /56",
            RoutingPolicy::Every,
            1,
            (24, 56),
            "2001:db8:1:200::",
            56,
            "10.0.0.0/7",
            56,
        ),
        (
            "Failover tier of one, IPv6 /48 sticky",
            RoutingPolicy::Every,
            1,
            (24, 48),
            "2001:db8:1::",
            56,
            "10.0.0.0/7",
            48,
        ),
        (
            "Nearest region of one, region /7",
            nearest(),
            2,
            (24, 56),
            "10.1.2.0",
            24,
            "10.0.0.0/7",
            24,
        ),
        (
            "Nearest region of one, region /28",
            nearest(),
            2,
            (24, 56),
            "10.1.2.0",
            24,
            "10.1.2.0/28",
            28,
        ),
        (
            "Nearest region of one, /16 sticky",
            nearest(),
            2,
            (16, 56),
            "10.1.2.0",
            24,
            "10.0.0.0/7",
            16,
        ),
    ];
    for (what, policy, clusters, sticky, subnet, source, networks, expected) in cases {
        let mut content = zone(clusters, 1, policy, None, Some(sticky));
        content.client_regions.networks = vec![(networks.parse().unwrap(), "eu".into())];
        let (_server, addr) = serve(vec![content], None).await;
        let reply = tokio::task::spawn_blocking(move || {
            ask_from("127.0.0.1", addr, &query(NAME, RecordType::A, Some((subnet, source))))
        })
        .await
        .unwrap();
        println!(
            "{what}: {subnet}/{source} → {:?} SCOPE {:?}",
            addresses(&reply),
            ecs_of(&reply)
        );
        assert_eq!(addresses(&reply).len(), 1, "{what}: one cluster");
        assert_eq!(ecs_of(&reply), Some((source, expected)), "{what}");
    }
}
