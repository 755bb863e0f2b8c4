//! Planning against hand-built zone contents (no API calls).

use std::collections::BTreeSet;

use fedns_api::{RecordType, RoutingPolicy};
use serde_json::json;

use super::*;
use crate::plan::desired::{RoutedMember, RoutedSet};

fn held(name: &str, rtype: &str, ttl: u32, rrdatas: &[&str]) -> RecordSet {
    RecordSet {
        name: name.into(),
        rtype: rtype.into(),
        ttl,
        rrdatas: rrdatas.iter().map(|s| s.to_string()).collect(),
        routing_policy: None,
    }
}

/// A registry record exactly as external-dns's TXT registry writes it
/// through its Google provider (`registry/txt/registry.go`: labels
/// serialised with quotes; `provider/google/google.go`: TTL 300).
fn registry(name: &str, owner: &str) -> RecordSet {
    held(
        name,
        "TXT",
        300,
        &[&format!(
            "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=crd/ns/web\""
        )],
    )
}

fn want(name: &str, t: RecordType, targets: &[&str]) -> DesiredRRset {
    DesiredRRset {
        name: name.into(),
        record_type: t,
        ttl: 60,
        targets: targets.iter().map(|s| s.to_string()).collect(),
        provider_specific: vec![],
        sources: BTreeSet::from(["ns/web".to_owned()]),
        routing: None,
        set_identifier: String::new(),
    }
}

fn routed(name: &str, policy: RoutingPolicy, members: &[(&str, &str, &str)]) -> DesiredRRset {
    let members: Vec<RoutedMember> = members
        .iter()
        .map(|(id, attribute, target)| RoutedMember {
            set_identifier: id.to_string(),
            targets: vec![target.to_string()],
            weight: attribute.strip_prefix("weight=").map(|w| w.parse().unwrap()),
            failover: attribute
                .split(',')
                .find_map(|a| a.strip_prefix("failover="))
                .map(str::to_owned),
            region: attribute
                .split(',')
                .find_map(|a| a.strip_prefix("region="))
                .map(str::to_owned),
            aws_region: None,
            provider_specific: vec![],
            geo: None,
        })
        .collect();
    let mut targets: Vec<String> = members.iter().flat_map(|m| m.targets.clone()).collect();
    targets.sort();
    DesiredRRset {
        targets,
        routing: Some(RoutedSet {
            policy,
            members,
            fallback: vec![],
            locations: vec![],
        }),
        ..want(name, RecordType::A, &[])
    }
}

fn apex() -> Vec<RecordSet> {
    vec![
        held(
            "example.com.",
            "SOA",
            21600,
            &["ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"],
        ),
        held("example.com.", "NS", 21600, &["ns-cloud-a1.googledomains.com."]),
    ]
}

/// (deletion or addition, type, name) of every record set, in order.
fn summary(plan: &ZonePlan) -> Vec<(&'static str, String, String)> {
    plan.units
        .iter()
        .flat_map(|u| {
            u.deletions
                .iter()
                .map(|d| ("del", d.rtype.clone(), d.name.clone()))
                .chain(u.additions.iter().map(|a| ("add", a.rtype.clone(), a.name.clone())))
        })
        .collect()
}

#[test]
fn clouddns_plan_creates_records_with_registry_records_in_external_dns_format() {
    let desired = vec![
        want("www.example.com", RecordType::A, &["192.0.2.1"]),
        want("v6.example.com", RecordType::AAAA, &["2001:db8::1"]),
        want("alias.example.com", RecordType::CNAME, &["www.example.com"]),
        want(
            "txt.example.com",
            RecordType::TXT,
            &["\"a \\\"quoted\\\" text\" \"two\""],
        ),
    ];
    let plan = plan_zone("fedns", "example.com", &desired, &apex());
    assert_eq!(plan.units.len(), 4);
    let cname = plan.units.iter().find(|u| u.name == "alias.example.com").unwrap();
    assert_eq!(cname.additions[0].rrdatas, ["www.example.com."]);
    assert_eq!(cname.additions[1].name, "cname-alias.example.com.");
    assert_eq!(
        cname.additions[1].rrdatas,
        ["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/web\""]
    );
    let txt = plan.units.iter().find(|u| u.name == "txt.example.com").unwrap();
    assert_eq!(txt.additions[0].rrdatas, ["\"a \\\"quoted\\\" text\" \"two\""]);
    assert!(plan.conflicts.is_empty() && plan.rejected.is_empty());

    // Once written, nothing to do: Cloud DNS's spelling is not a change.
    let mut zone = apex();
    for unit in &plan.units {
        zone.extend(unit.additions.iter().cloned());
    }
    let alias = zone.iter_mut().find(|s| s.rtype == "CNAME").unwrap();
    alias.rrdatas = vec!["WWW.Example.COM.".into()];
    let again = plan_zone("fedns", "example.com", &desired, &zone);
    assert!(again.units.is_empty(), "{:?}", summary(&again));
    assert_eq!(again.owned, 4);
}

#[test]
fn clouddns_update_is_the_exact_deletion_and_the_addition_in_one_unit() {
    let mut zone = apex();
    zone.push(held("www.example.com.", "A", 60, &["192.0.2.1"]));
    zone.push(registry("a-www.example.com.", "fedns"));
    zone.push(held("old.example.com.", "A", 60, &["192.0.2.9"]));
    zone.push(registry("a-old.example.com.", "fedns"));
    let desired = vec![want("www.example.com", RecordType::A, &["192.0.2.2"])];
    let plan = plan_zone("fedns", "example.com", &desired, &zone);
    assert_eq!(
        summary(&plan),
        [
            ("del", "A".into(), "old.example.com.".into()),
            ("del", "TXT".into(), "a-old.example.com.".into()),
            ("del", "A".into(), "www.example.com.".into()),
            ("add", "A".into(), "www.example.com.".into()),
        ]
    );
    // The deletion is the record set exactly as read (compare-and-swap).
    let www = &plan.units[1];
    assert_eq!(www.deletions[0], zone[2]);
}

#[test]
fn clouddns_records_of_other_owners_are_never_touched() {
    let mut zone = apex();
    // external-dns (owner "default") owns web's A record set.
    zone.push(held("web.example.com.", "A", 300, &["198.51.100.1"]));
    zone.push(registry("a-web.example.com.", "default"));
    // A record made by hand.
    zone.push(held("hand.example.com.", "A", 300, &["198.51.100.2"]));
    // A legacy registry record claims every type at its name.
    zone.push(registry("legacy.example.com.", "old-tool"));
    // A registry record whose RRset is gone still claims it.
    zone.push(registry("aaaa-gone.example.com.", "default"));
    let desired = vec![
        want("web.example.com", RecordType::A, &["192.0.2.1"]),
        want("web.example.com", RecordType::AAAA, &["2001:db8::1"]),
        want("hand.example.com", RecordType::A, &["192.0.2.2"]),
        want("legacy.example.com", RecordType::A, &["192.0.2.3"]),
        want("gone.example.com", RecordType::AAAA, &["2001:db8::2"]),
    ];
    let plan = plan_zone("fedns", "example.com", &desired, &zone);
    let held_back: Vec<(&str, &str)> = plan
        .conflicts
        .iter()
        .map(|(d, holder)| (d.name.as_str(), holder.as_str()))
        .collect();
    assert!(
        held_back.contains(&("web.example.com", "owner \"default\"")),
        "{held_back:?}"
    );
    assert!(held_back.contains(&("hand.example.com", "a record with no owner")));
    assert!(held_back.contains(&("legacy.example.com", "owner \"old-tool\"")));
    assert!(held_back.contains(&("gone.example.com", "owner \"default\"")));
    // Only the AAAA beside external-dns's A is written; nothing is deleted.
    assert_eq!(
        summary(&plan),
        [
            ("add", "AAAA".into(), "web.example.com.".into()),
            ("add", "TXT".into(), "aaaa-web.example.com.".into()),
        ]
    );
}

#[test]
fn clouddns_routing_policies_are_native_or_downgraded() {
    let weighted = routed(
        "w.example.com",
        RoutingPolicy::Weighted,
        &[("a", "weight=3", "192.0.2.1"), ("b", "weight=1", "192.0.2.2")],
    );
    assert_eq!(
        records::routing_policy(&weighted).unwrap().unwrap(),
        json!({"wrr": {"items": [
            {"weight": 3.0, "rrdatas": ["192.0.2.1"]},
            {"weight": 1.0, "rrdatas": ["192.0.2.2"]},
        ]}})
    );
    let nearest = routed(
        "n.example.com",
        RoutingPolicy::Nearest,
        &[
            ("a", "region=europe-west1", "192.0.2.1"),
            ("b", "region=us-central1", "192.0.2.2"),
            ("c", "region=europe-west1", "192.0.2.3"),
        ],
    );
    assert_eq!(
        records::routing_policy(&nearest).unwrap().unwrap(),
        json!({"geo": {"enableFencing": false, "items": [
            {"location": "europe-west1", "rrdatas": ["192.0.2.1", "192.0.2.3"]},
            {"location": "us-central1", "rrdatas": ["192.0.2.2"]},
        ]}})
    );
    let failover = routed(
        "f.example.com",
        RoutingPolicy::Failover,
        &[
            ("a", "failover=PRIMARY,region=us-east1", "192.0.2.1"),
            ("b", "failover=SECONDARY,region=europe-west4", "192.0.2.2"),
        ],
    );
    assert_eq!(
        records::routing_policy(&failover).unwrap().unwrap(),
        json!({"primaryBackup": {
            "primaryTargets": {"externalEndpoints": ["192.0.2.1"]},
            "backupGeoTargets": {"items": [{"location": "europe-west4", "rrdatas": ["192.0.2.2"]}]},
            "trickleTraffic": 0.0,
        }})
    );
    // Failover endpoints as fedns builds them (no region): one backup item.
    let plain_failover = routed(
        "pf.example.com",
        RoutingPolicy::Failover,
        &[
            ("a", "failover=PRIMARY", "192.0.2.1"),
            ("b", "failover=SECONDARY", "192.0.2.2"),
            ("c", "failover=SECONDARY", "192.0.2.3"),
        ],
    );
    assert_eq!(
        records::routing_policy(&plain_failover).unwrap().unwrap()["primaryBackup"]["backupGeoTargets"],
        json!({"items": [{"location": records::DEFAULT_BACKUP_LOCATION, "rrdatas": ["192.0.2.2", "192.0.2.3"]}]})
    );
    // AWS regions, and one tier only: downgraded, published as All.
    let aws = routed(
        "aws.example.com",
        RoutingPolicy::Nearest,
        &[
            ("a", "region=us-east-1", "192.0.2.1"),
            ("b", "region=eu-west-1", "192.0.2.2"),
        ],
    );
    let one_tier = routed(
        "one.example.com",
        RoutingPolicy::Failover,
        &[("a", "failover=PRIMARY,region=us-east1", "192.0.2.1")],
    );
    let plan = plan_zone(
        "fedns",
        "example.com",
        &[weighted, nearest, failover, aws, one_tier],
        &apex(),
    );
    let downgraded: Vec<&str> = plan.downgraded.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(downgraded, ["aws.example.com", "one.example.com"]);
    assert!(
        plan.downgraded[0].2.contains("region us-east-1"),
        "{:?}",
        plan.downgraded
    );
    let aws_unit = plan.units.iter().find(|u| u.name == "aws.example.com").unwrap();
    assert_eq!(aws_unit.additions[0].rrdatas, ["192.0.2.1", "192.0.2.2"]);
    assert!(aws_unit.additions[0].routing_policy.is_none());
    let w = plan.units.iter().find(|u| u.name == "w.example.com").unwrap();
    assert!(w.additions[0].rrdatas.is_empty() && w.additions[0].routing_policy.is_some());
}

#[test]
fn clouddns_a_policy_echoed_with_other_spelling_is_not_a_change_but_a_new_weight_is() {
    let desired = vec![routed(
        "w.example.com",
        RoutingPolicy::Weighted,
        &[("a", "weight=3", "192.0.2.1"), ("b", "weight=1", "192.0.2.2")],
    )];
    let mut zone = apex();
    let mut set = held("w.example.com.", "A", 60, &[]);
    set.routing_policy = Some(
        json!({"kind": "dns#rRSetRoutingPolicy", "wrr": {"kind": "dns#rRSetRoutingPolicyWrrPolicy", "items": [
            {"kind": "dns#rRSetRoutingPolicyWrrPolicyWrrPolicyItem", "weight": 1, "rrdatas": ["192.0.2.2"]},
            {"weight": 3, "rrdatas": ["192.0.2.1"]},
        ]}}),
    );
    zone.push(set.clone());
    zone.push(registry("a-w.example.com.", "fedns"));
    let plan = plan_zone("fedns", "example.com", &desired, &zone);
    assert!(plan.units.is_empty(), "{:?}", summary(&plan));

    let heavier = vec![routed(
        "w.example.com",
        RoutingPolicy::Weighted,
        &[("a", "weight=5", "192.0.2.1"), ("b", "weight=1", "192.0.2.2")],
    )];
    let plan = plan_zone("fedns", "example.com", &heavier, &zone);
    // One record set holds the whole policy: read-modify-write with the
    // exact deletion of what was read.
    assert_eq!(plan.units.len(), 1);
    assert_eq!(plan.units[0].deletions, vec![set]);
    assert_eq!(
        plan.units[0].additions[0].routing_policy.as_ref().unwrap()["wrr"]["items"][0]["weight"],
        5.0
    );
}

#[test]
fn clouddns_changes_split_at_the_quotas_and_keep_a_names_units_together() {
    let desired: Vec<DesiredRRset> = (0..1500)
        .map(|i| want(&format!("n{i:04}.example.com"), RecordType::A, &["192.0.2.1"]))
        .collect();
    let plan = plan_zone("fedns", "example.com", &desired, &apex());
    // Two additions per name (record set and registry record).
    let batches = batch::pack(plan.units, ChangeLimits::default());
    assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [500, 500, 500]);
    for b in &batches {
        assert!(batch::change_of(b).additions.len() <= 1000);
    }
    // rrdata octets: 255-octet TXT strings, two per record set.
    let long = format!("\"{}\" \"{}\"", "x".repeat(255), "y".repeat(255));
    let texts: Vec<DesiredRRset> = (0..300)
        .map(|i| want(&format!("t{i:03}.example.com"), RecordType::TXT, &[long.as_str()]))
        .collect();
    let plan = plan_zone("fedns", "example.com", &texts, &apex());
    let batches = batch::pack(plan.units, ChangeLimits::default());
    assert!(batches.len() >= 2);
    for b in &batches {
        let change = batch::change_of(b);
        let bytes: usize = change.additions.iter().map(batch::rrdata_bytes).sum();
        assert!(bytes <= 100_000, "{bytes}");
    }
    // A type change at one name (A → CNAME) stays in one change.
    let mut zone = apex();
    zone.push(held("x.example.com.", "A", 60, &["192.0.2.1"]));
    zone.push(registry("a-x.example.com.", "fedns"));
    let plan = plan_zone(
        "fedns",
        "example.com",
        &[want("x.example.com", RecordType::CNAME, &["www.example.com"])],
        &zone,
    );
    let limits = ChangeLimits {
        max_additions: 1,
        max_deletions: 1,
        max_rrdata_bytes: 10,
    };
    assert_eq!(batch::pack(plan.units, limits).len(), 1);
}

#[test]
fn clouddns_region_names_and_apex_records() {
    for region in [
        "us-central1",
        "europe-west12",
        "northamerica-northeast2",
        "me-central2",
        "asia-southeast1",
    ] {
        assert!(records::is_gcp_region(region), "{region}");
    }
    for region in ["us-east-1", "eu-west-1", "europe", "west1", "us-", "mars-north1"] {
        assert!(!records::is_gcp_region(region), "{region}");
    }
    let plan = plan_zone(
        "fedns",
        "example.com",
        &[want("example.com", RecordType::A, &["192.0.2.1"])],
        &apex(),
    );
    assert!(plan.units.is_empty());
    assert!(plan.rejected[0].2.contains("outside the zone"));
}
