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
            sticky: None,
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
        records::routing_policy(&weighted, false).unwrap().unwrap(),
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
        records::routing_policy(&nearest, false).unwrap().unwrap(),
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
        records::routing_policy(&failover, false).unwrap().unwrap(),
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
        records::routing_policy(&plain_failover, false).unwrap().unwrap()["primaryBackup"]["backupGeoTargets"],
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

/// A record set as Cloud DNS echoes it: `kind` fields added, fields at
/// their default value left out (`weight: 0`, `trickleTraffic: 0`,
/// `enableFencing: false`), items in another order.
fn as_google_echoes(set: &RecordSet) -> RecordSet {
    fn strip(value: &Value) -> Option<Value> {
        match value {
            Value::Null => None,
            Value::Bool(false) => None,
            Value::Number(n) if n.as_f64() == Some(0.0) => None,
            Value::Array(items) if items.is_empty() => None,
            Value::Array(items) => Some(Value::Array(items.iter().rev().filter_map(strip).collect())),
            Value::Object(map) => {
                let mut out: serde_json::Map<String, Value> = map
                    .iter()
                    .filter_map(|(k, v)| strip(v).map(|v| (k.clone(), v)))
                    .collect();
                out.insert("kind".into(), json!("dns#rRSetRoutingPolicy"));
                Some(Value::Object(out))
            }
            other => Some(other.clone()),
        }
    }
    RecordSet {
        routing_policy: set.routing_policy.as_ref().and_then(strip),
        ..set.clone()
    }
}

fn zone_settings(public: bool, replacement: &str) -> ZoneSettings<'_> {
    ZoneSettings {
        owner: "fedns",
        txt_wildcard_replacement: replacement,
        public,
    }
}

#[test]
fn clouddns_unchanged_routing_policies_make_no_changes_over_ten_resyncs() {
    let desired = vec![
        routed(
            "w.example.com",
            RoutingPolicy::Weighted,
            &[("a", "weight=0", "192.0.2.1"), ("b", "weight=2", "192.0.2.2")],
        ),
        routed(
            "n.example.com",
            RoutingPolicy::Nearest,
            &[
                ("a", "region=europe-west1", "192.0.2.1"),
                ("b", "region=us-central1", "192.0.2.2"),
            ],
        ),
        routed(
            "f.example.com",
            RoutingPolicy::Failover,
            &[
                ("a", "failover=PRIMARY,region=us-east1", "192.0.2.1"),
                ("b", "failover=SECONDARY,region=europe-west4", "192.0.2.2"),
                ("c", "failover=SECONDARY,region=asia-east1", "192.0.2.3"),
            ],
        ),
    ];
    let mut zone = apex();
    let first = plan_zone("fedns", "example.com", &desired, &zone);
    assert_eq!(first.units.len(), 3, "{:?}", summary(&first));
    for unit in &first.units {
        zone.extend(unit.additions.iter().map(as_google_echoes));
    }
    assert!(zone.iter().any(|s| s
        .routing_policy
        .as_ref()
        .is_some_and(|p| p["wrr"]["items"][1].get("weight").is_none())));
    for resync in 0..10 {
        let plan = plan_zone("fedns", "example.com", &desired, &zone);
        assert!(plan.units.is_empty(), "resync {resync}: {:?}", summary(&plan));
    }
}

#[test]
fn clouddns_wildcards_use_the_wildcard_replacement_or_are_refused() {
    let desired = vec![want("*.wild.example.com", RecordType::A, &["192.0.2.1"])];
    // No replacement: `a-*.wild.example.com.` is no Cloud DNS name.
    let plan = plan_zone("fedns", "example.com", &desired, &apex());
    assert!(plan.units.is_empty(), "{:?}", summary(&plan));
    assert!(
        plan.rejected[0].2.contains("--txt-wildcard-replacement"),
        "{:?}",
        plan.rejected
    );

    let settings = zone_settings(true, "wildcard");
    let plan = plan_zone_in(&settings, "example.com", &desired, &apex());
    assert_eq!(
        summary(&plan),
        [
            ("add", "A".into(), "*.wild.example.com.".into()),
            ("add", "TXT".into(), "a-wildcard.wild.example.com.".into()),
        ]
    );
    // Read back, the registry record owns the wildcard: nothing to do, and
    // the registry record is not taken for an orphan.
    let mut zone = apex();
    zone.extend(plan.units[0].additions.iter().cloned());
    let again = plan_zone_in(&settings, "example.com", &desired, &zone);
    assert!(again.units.is_empty(), "{:?}", summary(&again));
    assert_eq!(again.owned, 1);
    // Gone from the desired state: both deleted.
    let gone = plan_zone_in(&settings, "example.com", &[], &zone);
    assert_eq!(summary(&gone).len(), 2, "{:?}", summary(&gone));

    // A 60-octet first label: its AAAA's registry record would have a
    // 65-octet label; refused, the A (62) published.
    let long = format!("{}.example.com", "l".repeat(60));
    let plan = plan_zone(
        "fedns",
        "example.com",
        &[
            want(&long, RecordType::A, &["192.0.2.1"]),
            want(&long, RecordType::AAAA, &["2001:db8::1"]),
        ],
        &apex(),
    );
    assert_eq!(plan.units.len(), 1);
    assert_eq!(plan.rejected.len(), 1);
    assert_eq!(plan.rejected[0].1, RecordType::AAAA);
    assert!(plan.rejected[0].2.contains("over the 63"), "{:?}", plan.rejected);
}

#[test]
fn clouddns_health_checks_are_full_urls_and_public_failover_needs_one() {
    let failover = |check: Option<&str>| {
        let mut rrset = routed(
            "f.example.com",
            RoutingPolicy::Failover,
            &[
                ("a", "failover=PRIMARY,region=us-east1", "192.0.2.1"),
                ("b", "failover=SECONDARY,region=europe-west4", "192.0.2.2"),
            ],
        );
        if let Some(check) = check {
            rrset.provider_specific = vec![(records::HEALTH_CHECK.into(), check.into())];
        }
        rrset
    };
    let full = "https://www.googleapis.com/compute/v1/projects/my-project/global/healthChecks/web";
    // The short form is expanded; the full and regional forms kept.
    for (given, sent) in [
        ("projects/my-project/global/healthChecks/web", full),
        (full, full),
        (
            "projects/my-project/regions/europe-west4/healthChecks/web",
            "https://www.googleapis.com/compute/v1/projects/my-project/regions/europe-west4/healthChecks/web",
        ),
    ] {
        let policy = records::routing_policy(&failover(Some(given)), true).unwrap().unwrap();
        assert_eq!(policy["healthCheck"], sent, "{given}");
    }
    // Not a health check: downgraded, saying which forms are accepted.
    for bad in [
        "web",
        "projects/my-project/healthChecks/web",
        "https://compute.googleapis.com/compute/v1/projects/my-project/global/healthChecks/web",
        "projects/my-project/regions/europe-west5/healthChecks/web",
    ] {
        let why = records::routing_policy(&failover(Some(bad)), false).unwrap_err();
        assert!(why.contains("global/healthChecks/NAME"), "{bad}: {why}");
    }
    // No health check: a private zone takes the policy, a public one not.
    assert!(records::routing_policy(&failover(None), false).unwrap().is_some());
    let plan = plan_zone_in(&zone_settings(true, ""), "example.com", &[failover(None)], &apex());
    assert_eq!(plan.downgraded.len(), 1);
    assert!(
        plan.downgraded[0].2.contains(records::HEALTH_CHECK),
        "{:?}",
        plan.downgraded
    );
    assert!(plan.units[0].additions[0].routing_policy.is_none());
    assert_eq!(plan.units[0].additions[0].rrdatas, ["192.0.2.1", "192.0.2.2"]);
    let plan = plan_zone_in(
        &zone_settings(true, ""),
        "example.com",
        &[failover(Some(full))],
        &apex(),
    );
    assert!(plan.downgraded.is_empty(), "{:?}", plan.downgraded);
}

#[test]
fn clouddns_locations_that_are_not_google_cloud_regions_are_downgraded() {
    assert!(records::gcp_regions().count() >= 40);
    assert!(records::is_gcp_region("europe-west4"));
    // Shaped like a region, but there is no such region.
    for missing in ["europe-west5", "us-central9", "asia-south7"] {
        assert!(!records::is_gcp_region(missing), "{missing}");
    }
    let nearest = routed(
        "n.example.com",
        RoutingPolicy::Nearest,
        &[
            ("a", "region=europe-west5", "192.0.2.1"),
            ("b", "region=us-central1", "192.0.2.2"),
        ],
    );
    let plan = plan_zone("fedns", "example.com", &[nearest], &apex());
    assert_eq!(plan.downgraded.len(), 1);
    assert!(
        plan.downgraded[0]
            .2
            .contains("europe-west5, which is not a Google Cloud region"),
        "{:?}",
        plan.downgraded
    );
    assert!(plan.units[0].additions[0].routing_policy.is_none());
}

#[test]
fn clouddns_sticky_weighted_is_wrr_and_reported_downgraded() {
    let mut sticky = routed(
        "s.example.com",
        RoutingPolicy::Weighted,
        &[("a", "weight=3", "192.0.2.1"), ("b", "weight=1", "192.0.2.2")],
    );
    sticky.routing.as_mut().unwrap().sticky = Some((20, 48));
    let plan = plan_zone("fedns", "example.com", &[sticky], &apex());
    let unit = plan.units.iter().find(|u| u.name == "s.example.com").unwrap();
    assert!(unit.additions[0]
        .routing_policy
        .as_ref()
        .is_some_and(|p| p.get("wrr").is_some()));
    assert_eq!(plan.downgraded.len(), 1, "{:?}", plan.downgraded);
    let why = &plan.downgraded[0].2;
    assert!(
        why.contains("Cloud DNS has no client-subnet stickiness") && why.contains("/48"),
        "{why}"
    );
}
