//! Planning against hand-built zone contents (no API calls).

use std::collections::BTreeSet;

use aws_sdk_route53::types::{ChangeAction, ResourceRecord, ResourceRecordSet, RrType};
use fedns_api::RecordType;

use super::*;

/// An RRset as Route53 would hold it.
pub(crate) fn held(name: &str, rr_type: &str, ttl: i64, values: &[&str]) -> ResourceRecordSet {
    ResourceRecordSet::builder()
        .name(name)
        .r#type(RrType::from(rr_type))
        .ttl(ttl)
        .set_resource_records(Some(
            values
                .iter()
                .map(|v| ResourceRecord::builder().value(*v).build().unwrap())
                .collect(),
        ))
        .build()
        .unwrap()
}

fn registry(name: &str, owner: &str) -> ResourceRecordSet {
    held(
        name,
        "TXT",
        300,
        &[&format!(
            "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=crd/ns/x\""
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

fn apex_records() -> Vec<ResourceRecordSet> {
    vec![
        held(
            "example.com.",
            "SOA",
            900,
            &["ns-1.awsdns.com. hostmaster.example.com. 1 7200 900 1209600 86400"],
        ),
        held("example.com.", "NS", 172800, &["ns-1.awsdns.com."]),
    ]
}

/// (action, type, name) of every change, in order.
/// The apex records and every record set `plan` writes, as Route53 would
/// hold them after it.
fn applied(plan: &ZonePlan) -> Vec<ResourceRecordSet> {
    let mut zone = apex_records();
    for unit in &plan.units {
        for change in &unit.changes {
            zone.push(change.resource_record_set().unwrap().clone());
        }
    }
    zone
}

fn summary(plan: &ZonePlan) -> Vec<(String, String, String)> {
    plan.units
        .iter()
        .flat_map(|u| u.changes.iter())
        .map(|c| {
            let rrset = c.resource_record_set().unwrap();
            (
                c.action().as_str().to_owned(),
                rrset.r#type().as_str().to_owned(),
                rrset.name().to_owned(),
            )
        })
        .collect()
}

fn row(action: &str, t: &str, name: &str) -> (String, String, String) {
    (action.into(), t.into(), name.into())
}

#[test]
fn creates_records_with_their_registry_records() {
    let desired = vec![
        want("www.example.com", RecordType::A, &["192.0.2.1", "192.0.2.2"]),
        want("alias.example.com", RecordType::CNAME, &["www.example.com"]),
    ];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &apex_records());
    assert!(plan.conflicts.is_empty() && plan.rejected.is_empty(), "{plan:?}");
    assert_eq!(
        summary(&plan),
        vec![
            row("CREATE", "CNAME", "alias.example.com."),
            row("UPSERT", "TXT", "cname-alias.example.com."),
            row("CREATE", "A", "www.example.com."),
            row("UPSERT", "TXT", "a-www.example.com."),
        ]
    );
    let txt = plan.units[0].changes[1].resource_record_set().unwrap();
    assert_eq!(
        txt.resource_records()[0].value(),
        "\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/web\""
    );
    let cname = plan.units[0].changes[0].resource_record_set().unwrap();
    assert_eq!(cname.resource_records()[0].value(), "www.example.com.");
    assert_eq!(plan.owned, 0);
}

#[test]
fn owned_records_are_updated_and_deleted_exactly() {
    let mut zone = apex_records();
    zone.push(held("www.example.com.", "A", 60, &["192.0.2.1"]));
    zone.push(registry("a-www.example.com.", "fedns"));
    zone.push(held("old.example.com.", "AAAA", 60, &["2001:db8::1"]));
    zone.push(registry("aaaa-old.example.com.", "fedns"));
    zone.push(held("same.example.com.", "CNAME", 60, &["WWW.Example.com."]));
    zone.push(registry("cname-same.example.com.", "fedns"));
    let desired = vec![
        want("same.example.com", RecordType::CNAME, &["www.example.com"]),
        want("www.example.com", RecordType::A, &["192.0.2.9"]),
    ];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    assert_eq!(plan.owned, 3);
    assert_eq!(
        summary(&plan),
        vec![
            row("DELETE", "AAAA", "old.example.com."),
            row("DELETE", "TXT", "aaaa-old.example.com."),
            row("UPSERT", "A", "www.example.com."),
            row("UPSERT", "TXT", "a-www.example.com."),
        ],
        "same.example.com differs only in spelling: no change"
    );
    // A DELETE carries the values exactly as read.
    let deleted = plan.units[0].changes[0].resource_record_set().unwrap();
    assert_eq!(deleted.resource_records()[0].value(), "2001:db8::1");
    assert_eq!(deleted.ttl(), Some(60));
}

#[test]
fn records_of_other_owners_are_never_touched() {
    let mut zone = apex_records();
    // external-dns's record, new format.
    zone.push(held("app.example.com.", "A", 300, &["198.51.100.1"]));
    zone.push(registry("a-app.example.com.", "cluster-b"));
    // A record made by hand (no registry record).
    zone.push(held("manual.example.com.", "CNAME", 300, &["elsewhere.example.net."]));
    // A legacy-format registry record claims every type at its name.
    zone.push(held("legacy.example.com.", "A", 300, &["198.51.100.2"]));
    zone.push(registry("legacy.example.com.", "old-tool"));
    // A registry record whose RRset is gone still claims it.
    zone.push(registry("a-claimed.example.com.", "cluster-b"));
    // A weighted record (routing policy) is never fedns's.
    let weighted = ResourceRecordSet::builder()
        .name("weighted.example.com.")
        .r#type(RrType::A)
        .set_identifier("blue")
        .weight(10)
        .ttl(60)
        .resource_records(ResourceRecord::builder().value("198.51.100.3").build().unwrap())
        .build()
        .unwrap();
    zone.push(weighted);
    let desired = vec![
        want("app.example.com", RecordType::A, &["192.0.2.1"]),
        want("manual.example.com", RecordType::A, &["192.0.2.2"]),
        want("legacy.example.com", RecordType::AAAA, &["2001:db8::2"]),
        want("claimed.example.com", RecordType::A, &["192.0.2.3"]),
        want("weighted.example.com", RecordType::CNAME, &["www.example.com"]),
        want("free.example.com", RecordType::A, &["192.0.2.4"]),
    ];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    let mut conflicts: Vec<(String, String)> = plan
        .conflicts
        .iter()
        .map(|(r, holder)| (r.name.clone(), holder.clone()))
        .collect();
    conflicts.sort();
    assert_eq!(
        conflicts,
        vec![
            ("app.example.com".into(), "owner \"cluster-b\"".into()),
            ("claimed.example.com".into(), "owner \"cluster-b\"".into()),
            ("legacy.example.com".into(), "owner \"old-tool\"".into()),
            ("manual.example.com".into(), "a record with no owner".into()),
            // A routed record set nobody owns is a record with no owner.
            ("weighted.example.com".into(), "a record with no owner".into()),
        ]
    );
    assert_eq!(
        summary(&plan),
        vec![
            row("CREATE", "A", "free.example.com."),
            row("UPSERT", "TXT", "a-free.example.com."),
        ],
        "only the free name is written"
    );
    assert_eq!(plan.owned, 0);
}

#[test]
fn orphaned_registry_records_are_cleaned_and_apex_records_refused() {
    let mut zone = apex_records();
    zone.push(registry("a-gone.example.com.", "fedns"));
    zone.push(registry("a-back.example.com.", "fedns"));
    let desired = vec![
        want("back.example.com", RecordType::A, &["192.0.2.1"]),
        want("example.com", RecordType::A, &["192.0.2.2"]),
    ];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    assert_eq!(
        summary(&plan),
        vec![
            row("CREATE", "A", "back.example.com."),
            row("UPSERT", "TXT", "a-back.example.com."),
            row("DELETE", "TXT", "a-gone.example.com."),
        ]
    );
    assert_eq!(plan.rejected.len(), 1);
    assert!(plan.rejected[0].2.contains("outside the zone"), "{:?}", plan.rejected);
}

#[test]
fn alias_records_plan_as_a_records() {
    let mut alias = want(
        "lb.example.com",
        RecordType::CNAME,
        &["my-lb-1.eu-west-1.elb.amazonaws.com"],
    );
    alias.provider_specific = vec![("alias".into(), "true".into())];
    let plan = plan_zone(
        "fedns",
        "example.com",
        "Z1",
        std::slice::from_ref(&alias),
        &apex_records(),
    );
    assert_eq!(
        summary(&plan),
        vec![
            row("CREATE", "A", "lb.example.com."),
            row("UPSERT", "TXT", "a-lb.example.com."),
        ]
    );
    let record = plan.units[0].changes[0].resource_record_set().unwrap().clone();
    assert_eq!(record.alias_target().unwrap().hosted_zone_id(), "Z32O12XQLNTSW2");
    assert_eq!(*plan.units[0].changes[0].action(), ChangeAction::Create);

    // Once held (and owned), the same alias is no change.
    let mut zone = apex_records();
    zone.push(record);
    zone.push(registry("a-lb.example.com.", "fedns"));
    let plan = plan_zone("fedns", "example.com", "Z1", &[alias], &zone);
    assert!(plan.units.is_empty(), "{:?}", summary(&plan));
    assert_eq!(plan.owned, 1);
}

fn routed(name: &str, policy: fedns_api::RoutingPolicy, members: &[(&str, &str, &str)]) -> DesiredRRset {
    use crate::plan::desired::{RoutedMember, RoutedSet};
    let mut rrset = want(name, RecordType::A, &[]);
    let members: Vec<RoutedMember> = members
        .iter()
        .map(|(id, attribute, target)| RoutedMember {
            set_identifier: id.to_string(),
            targets: vec![target.to_string()],
            weight: attribute.strip_prefix("weight=").map(|w| w.parse().unwrap()),
            failover: attribute.strip_prefix("failover=").map(str::to_owned),
            region: attribute.strip_prefix("region=").map(str::to_owned),
            aws_region: attribute
                .strip_prefix("region=")
                .filter(|r| r.contains('-'))
                .map(str::to_owned),
            provider_specific: vec![],
            geo: None,
        })
        .collect();
    rrset.targets = members.iter().flat_map(|m| m.targets.clone()).collect();
    rrset.routing = Some(RoutedSet {
        policy,
        members,
        fallback: vec![],
        sticky: None,
        locations: vec![],
    });
    rrset
}

/// (set identifier, routing attribute) of every record set the plan writes.
fn routed_rows(plan: &ZonePlan) -> Vec<(String, String, String)> {
    plan.units
        .iter()
        .flat_map(|u| u.changes.iter())
        .map(|c| {
            let rrset = c.resource_record_set().unwrap();
            let held = crate::route53::records::decode(rrset);
            (
                rrset.name().to_owned(),
                rrset.set_identifier().unwrap_or_default().to_owned(),
                held.policy,
            )
        })
        .collect()
}

#[test]
fn routing_policies_become_route53_routing_record_sets_with_matching_registry_records() {
    use fedns_api::RoutingPolicy;
    let desired = vec![
        routed(
            "w.example.com",
            RoutingPolicy::Weighted,
            &[("east", "weight=1", "192.0.2.1"), ("west", "weight=3", "192.0.2.2")],
        ),
        routed(
            "f.example.com",
            RoutingPolicy::Failover,
            &[
                ("east", "failover=PRIMARY", "192.0.2.1"),
                ("west", "failover=SECONDARY", "192.0.2.2"),
            ],
        ),
        routed(
            "n.example.com",
            RoutingPolicy::Nearest,
            &[
                ("east", "region=us-east-1", "192.0.2.1"),
                ("eu", "region=eu-west-1", "192.0.2.3"),
            ],
        ),
        routed(
            "lab.example.com",
            RoutingPolicy::Nearest,
            &[
                ("east", "region=us-east-1", "192.0.2.1"),
                ("lab", "region=basement", "192.0.2.9"),
            ],
        ),
    ];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &apex_records());
    let rows = routed_rows(&plan);
    let row = |n: &str, s: &str, p: &str| (n.to_owned(), s.to_owned(), p.to_owned());
    for expected in [
        row("w.example.com.", "east", "weight=1"),
        row("a-w.example.com.", "east", "weight=1"),
        row("w.example.com.", "west", "weight=3"),
        row("a-w.example.com.", "west", "weight=3"),
        row("f.example.com.", "east", "failover=PRIMARY"),
        row("a-f.example.com.", "west", "failover=SECONDARY"),
        row("n.example.com.", "eu", "region=eu-west-1"),
        row("a-n.example.com.", "east", "region=us-east-1"),
        // Not expressible (basement is no AWS region): All, plain.
        row("lab.example.com.", "", ""),
    ] {
        assert!(rows.contains(&expected), "{expected:?} missing from {rows:#?}");
    }
    assert_eq!(plan.downgraded.len(), 1, "{:?}", plan.downgraded);
    assert!(plan.downgraded[0].2.contains("basement"), "{:?}", plan.downgraded);

    // Read back as written: nothing to change.
    let zone = applied(&plan);
    let again = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    assert!(again.units.is_empty(), "{:#?}", summary(&again));
    assert_eq!(again.owned, 7);

    // A weight change is an update of that record set only; a member gone
    // is deleted with its registry record.
    let changed = vec![routed(
        "w.example.com",
        RoutingPolicy::Weighted,
        &[("east", "weight=2", "192.0.2.1")],
    )];
    let plan = plan_zone("fedns", "example.com", "Z1", &changed, &zone);
    let rows = routed_rows(&plan);
    assert!(rows.contains(&row("w.example.com.", "east", "weight=2")), "{rows:#?}");
    assert!(rows.contains(&row("w.example.com.", "west", "weight=3")), "{rows:#?}");
    let deletes: Vec<_> = summary(&plan).into_iter().filter(|r| r.0 == "DELETE").collect();
    assert!(
        deletes.contains(&("DELETE".into(), "A".into(), "w.example.com.".into()))
            && deletes.contains(&("DELETE".into(), "TXT".into(), "a-w.example.com.".into())),
        "{deletes:#?}"
    );
}

#[test]
fn nearest_without_aws_regions_uses_the_domains_geo_table() {
    use fedns_api::RoutingPolicy;
    let mut rrset = routed(
        "g.example.com",
        RoutingPolicy::Nearest,
        &[
            ("a", "region=europe", "192.0.2.1"),
            ("b", "region=americas", "192.0.2.2"),
        ],
    );
    if let Some(routing) = rrset.routing.as_mut() {
        routing.fallback = vec!["americas".into()];
        routing.locations = vec![
            ("country:DE".into(), "europe".into()),
            ("continent:NA".into(), "americas".into()),
            ("continent:AS".into(), "asia".into()),
        ];
    }
    let plan = plan_zone("fedns", "example.com", "Z1", &[rrset.clone()], &apex_records());
    assert!(plan.downgraded.is_empty(), "{:?}", plan.downgraded);
    let rows = routed_rows(&plan);
    let row = |n: &str, s: &str, p: &str| (n.to_owned(), s.to_owned(), p.to_owned());
    for expected in [
        row("g.example.com.", "country-DE", "geo=country:DE"),
        row("g.example.com.", "continent-NA", "geo=continent:NA"),
        row("g.example.com.", "default", "geo=country:*"),
        row("a-g.example.com.", "default", "geo=country:*"),
    ] {
        assert!(rows.contains(&expected), "{expected:?} missing from {rows:#?}");
    }
    assert!(
        !rows.iter().any(|r| r.1 == "continent-AS"),
        "asia has no cluster: {rows:#?}"
    );
    // The default location answers the fallback region.
    let default = plan
        .units
        .iter()
        .flat_map(|u| u.changes.iter())
        .map(|c| c.resource_record_set().unwrap())
        .find(|r| r.set_identifier() == Some("default") && r.r#type().as_str() == "A")
        .unwrap();
    assert_eq!(default.resource_records()[0].value(), "192.0.2.2");
    // Read back: nothing to change.
    let zone = applied(&plan);
    let again = plan_zone("fedns", "example.com", "Z1", &[rrset], &zone);
    assert!(again.units.is_empty(), "{:#?}", summary(&again));
}

#[test]
fn sticky_weighted_is_published_weighted_and_reported_downgraded() {
    use fedns_api::RoutingPolicy;
    let mut sticky = routed(
        "s.example.com",
        RoutingPolicy::Weighted,
        &[("east", "weight=1", "192.0.2.1"), ("west", "weight=3", "192.0.2.2")],
    );
    sticky.routing.as_mut().unwrap().sticky = Some((24, 56));
    let plain = routed(
        "w.example.com",
        RoutingPolicy::Weighted,
        &[("east", "weight=1", "192.0.2.1")],
    );
    let plan = plan_zone("fedns", "example.com", "Z1", &[sticky, plain], &apex_records());
    let rows = routed_rows(&plan);
    let row = |n: &str, s: &str, p: &str| (n.to_owned(), s.to_owned(), p.to_owned());
    for expected in [
        row("s.example.com.", "east", "weight=1"),
        row("s.example.com.", "west", "weight=3"),
    ] {
        assert!(rows.contains(&expected), "{expected:?} missing from {rows:#?}");
    }
    assert_eq!(plan.downgraded.len(), 1, "{:?}", plan.downgraded);
    let (name, _, why) = &plan.downgraded[0];
    assert_eq!(name, "s.example.com");
    assert!(
        why.contains("Route53 has no client-subnet stickiness") && why.contains("/24"),
        "{why}"
    );
}

/// `maxAnswers` on a plain name: 8 or more → multivalue answer record
/// sets, one per address (read back: nothing to change); under 8 →
/// published plain and reported downgraded; on a Weighted name → still
/// weighted record sets, reported downgraded (they have no limit).
#[test]
fn max_answers_become_multivalue_record_sets_where_route53_can_keep_them() {
    use fedns_api::routing::FEDNS_MAX_ANSWERS;
    let targets: Vec<String> = (1..=10).map(|i| format!("192.0.2.{i}")).collect();
    let limited = |name: &str, n: &str| {
        let mut rrset = want(
            name,
            RecordType::A,
            &targets.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        rrset.provider_specific = vec![(FEDNS_MAX_ANSWERS.to_owned(), n.to_owned())];
        rrset
    };
    let desired = vec![limited("mv.example.com", "8"), limited("two.example.com", "2")];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &apex_records());
    let rows = routed_rows(&plan);
    let multivalue: Vec<_> = rows
        .iter()
        .filter(|r| r.0 == "mv.example.com." && r.2 == "multivalue=true")
        .collect();
    assert_eq!(multivalue.len(), 10, "{rows:#?}");
    assert!(
        rows.contains(&("two.example.com.".into(), String::new(), String::new())),
        "{rows:#?}"
    );
    assert_eq!(plan.downgraded.len(), 1, "{:?}", plan.downgraded);
    assert!(plan.downgraded[0].2.contains("up to 8"), "{:?}", plan.downgraded);
    let zone = applied(&plan);
    let again = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    assert!(again.units.is_empty(), "{:#?}", summary(&again));

    let mut weighted = routed(
        "w.example.com",
        fedns_api::RoutingPolicy::Weighted,
        &[("east", "weight=1", "192.0.2.1"), ("west", "weight=3", "192.0.2.2")],
    );
    weighted.provider_specific = vec![(FEDNS_MAX_ANSWERS.to_owned(), "1".to_owned())];
    let plan = plan_zone("fedns", "example.com", "Z1", &[weighted], &apex_records());
    assert_eq!(plan.downgraded.len(), 1, "{:?}", plan.downgraded);
    assert!(
        plan.downgraded[0].2.contains("no answer limit for Weighted"),
        "{:?}",
        plan.downgraded
    );
    let rows = routed_rows(&plan);
    assert!(
        rows.contains(&("w.example.com.".into(), "west".into(), "weight=3".into())),
        "still weighted: {rows:#?}"
    );
}

/// A TXT forging fedns's ownership (written as some DNSEndpoint's data,
/// before such TXT were refused) or a registry value naming fedns without
/// a DNSEndpoint resource makes fedns touch nothing it does not own.
#[test]
fn forged_registry_records_hand_nothing_to_fedns() {
    let forged = "\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/mallory/x\"";
    let mut zone = apex_records();
    // www made by hand; a tenant's forged TXT, with fedns's registry record
    // for that TXT beside it.
    zone.push(held("www.example.com.", "A", 60, &["192.0.2.1"]));
    zone.push(held("a-www.example.com.", "TXT", 60, &[forged]));
    zone.push(registry("txt-a-www.example.com.", "fedns"));
    // mail made by hand; a registry value naming fedns, not a DNSEndpoint.
    zone.push(held("mail.example.com.", "A", 60, &["192.0.2.2"]));
    zone.push(held(
        "a-mail.example.com.",
        "TXT",
        300,
        &["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=service/x/y\""],
    ));
    let desired = vec![want("mail.example.com", RecordType::A, &["192.0.2.66"])];
    let plan = plan_zone("fedns", "example.com", "Z1", &desired, &zone);
    let rows = summary(&plan);
    assert!(
        !rows
            .iter()
            .any(|(_, _, name)| name == "www.example.com." || name == "mail.example.com."),
        "{rows:?}"
    );
    // The forged TXT itself was fedns's data and is no longer desired.
    assert!(rows.contains(&row("DELETE", "TXT", "a-www.example.com.")), "{rows:?}");
    assert_eq!(plan.conflicts.len(), 1, "mail is held by another owner: {plan:?}");
}
