//! The rules of the folder docs, through `desired_zones`.

use std::collections::BTreeMap;

use fedns_api::routing::{AWS_FAILOVER, AWS_WEIGHT, FEDNS_NEAREST_FALLBACK, FEDNS_NEAREST_REGION};
use fedns_api::{DNSEndpoint, Domain, RecordType, RoutingPolicy};
use fedns_dnsserver::hickory_proto::rr::RData;

use super::*;
use crate::plan::ownership::NamespaceLabels;
use fedns_api::{DNSEndpointSpec, DomainSpec, Endpoint};
use fedns_dnsserver::hickory_proto::rr::RecordType as WireType;

fn domain(name: &str, zone: &str) -> Domain {
    let mut d = Domain::new(
        name,
        DomainSpec {
            domain: zone.into(),
            name_servers: vec![format!("ns1.{zone}")],
            name_server_addresses: vec![],
            hostmaster: None,
            soa: Default::default(),
            allowed_namespaces: None,
            grants: vec![],
            probe_allowed_networks: vec![],
            transfer: None,
            client_regions: vec![],
            geo_regions: vec![],
            dnssec: None,
        },
    );
    d.metadata.namespace = Some("fedns-system".into());
    d
}

fn ep(dns_name: &str, rtype: RecordType, targets: &[&str], ttl: Option<i64>) -> Endpoint {
    Endpoint {
        dns_name: dns_name.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        record_type: rtype,
        set_identifier: String::new(),
        record_ttl: ttl,
        labels: Default::default(),
        provider_specific: vec![],
    }
}

fn endpoints(name: &str, eps: Vec<Endpoint>) -> DNSEndpoint {
    let mut d = DNSEndpoint::new(name, DNSEndpointSpec { endpoints: eps });
    d.metadata.namespace = Some("ns".into());
    d
}

fn rrset<'a>(desired: &'a DesiredZones, name: &str, rtype: RecordType) -> Option<&'a DesiredRRset> {
    desired
        .zones
        .iter()
        .flat_map(|z| &z.rrsets)
        .find(|r| r.name == name && r.record_type == rtype)
}

#[test]
fn merges_targets_by_name_and_type() {
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                ep(
                    "n.example.com",
                    RecordType::A,
                    &["203.0.113.2", "203.0.113.1"],
                    Some(60),
                ),
                ep(
                    "N.Example.COM.",
                    RecordType::A,
                    &["203.0.113.1", "198.51.100.1"],
                    Some(30),
                ),
            ],
        )],
    );
    assert!(desired.problems.is_empty(), "{:?}", desired.problems);
    let set = rrset(&desired, "n.example.com", RecordType::A).unwrap();
    assert_eq!(set.targets, ["198.51.100.1", "203.0.113.1", "203.0.113.2"]);
    assert_eq!(set.ttl, 30, "smallest TTL wins");
    assert_eq!(set.sources.len(), 1);
    let records = &desired.zones[0].content.records;
    assert_eq!(records.iter().filter(|r| r.record_type() == WireType::A).count(), 3);
}

/// A DNSEndpoint in `namespace`, created at `created` (RFC 3339; None:
/// no timestamp, as in manifests).
fn claim(namespace: &str, name: &str, created: Option<&str>, eps: Vec<Endpoint>) -> DNSEndpoint {
    let mut d = endpoints(name, eps);
    d.metadata.namespace = Some(namespace.into());
    d.metadata.creation_timestamp =
        created.map(|t| fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t.parse().expect("RFC 3339")));
    d
}

fn kinds(desired: &DesiredZones, namespace: &str, name: &str) -> Vec<(ProblemKind, String)> {
    desired
        .problems_of(namespace, name)
        .map(|p| (p.kind, p.message.clone()))
        .collect()
}

#[test]
fn one_name_one_owner_the_oldest_claim_holds() {
    let web = "web.shop.myfed.svc.example.com";
    let holder = claim(
        "shop",
        "service-web",
        Some("2026-01-01T00:00:00Z"),
        vec![ep(web, RecordType::A, &["203.0.113.10"], Some(30))],
    );
    // Another namespace names the same name, with a lower TTL: refused
    // twice over (a service name of `shop`; and the name is held).
    let hijack = claim(
        "evil",
        "grab",
        Some("2026-02-01T00:00:00Z"),
        vec![
            ep(web, RecordType::A, &["192.0.2.66"], Some(5)),
            ep("www.example.com", RecordType::A, &["192.0.2.67"], None),
        ],
    );
    // A newer object in `shop` itself: the name is held.
    let late = claim(
        "shop",
        "late",
        Some("2026-03-01T00:00:00Z"),
        vec![ep(web, RecordType::AAAA, &["2001:db8::66"], None)],
    );
    let zones = [domain("myfed", "example.com")];
    let desired = desired_zones(&zones, &[late.clone(), hijack.clone(), holder.clone()]);
    let set = rrset(&desired, web, RecordType::A).unwrap();
    assert_eq!(
        (set.targets.as_slice(), set.ttl),
        (&["203.0.113.10".to_owned()][..], 30)
    );
    assert!(
        rrset(&desired, web, RecordType::AAAA).is_none(),
        "the newer claim is not merged"
    );
    assert!(
        rrset(&desired, "www.example.com", RecordType::A).is_some(),
        "an unclaimed name is fine"
    );
    let evil = kinds(&desired, "evil", "grab");
    assert_eq!(evil.len(), 1, "{evil:?}");
    assert_eq!(evil[0].0, ProblemKind::NotAllowed);
    assert!(evil[0].1.contains("namespace shop"), "{evil:?}");
    let late_problems = kinds(&desired, "shop", "late");
    assert_eq!(late_problems[0].0, ProblemKind::Conflict);
    assert!(late_problems[0].1.contains("shop/service-web"), "{late_problems:?}");
    assert!(kinds(&desired, "shop", "service-web").is_empty());

    // The holder goes: the next oldest claim takes over.
    let desired = desired_zones(&zones, &[late, hijack]);
    assert_eq!(
        rrset(&desired, web, RecordType::AAAA).unwrap().targets,
        ["2001:db8::66"]
    );
    assert!(
        rrset(&desired, web, RecordType::A).is_none(),
        "evil still may not publish shop's name"
    );
}

#[test]
fn ties_and_manifests_go_by_namespace_and_name() {
    let same_time = Some("2026-01-01T00:00:00Z");
    let a = claim(
        "b-ns",
        "a",
        same_time,
        vec![ep("x.example.com", RecordType::A, &["203.0.113.1"], None)],
    );
    let b = claim(
        "a-ns",
        "z",
        same_time,
        vec![ep("x.example.com", RecordType::A, &["203.0.113.2"], None)],
    );
    let zones = [domain("myfed", "example.com")];
    let desired = desired_zones(&zones, &[a.clone(), b.clone()]);
    assert_eq!(
        rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
        ["203.0.113.2"]
    );
    assert_eq!(kinds(&desired, "b-ns", "a")[0].0, ProblemKind::Conflict);
    // No timestamps at all (manifests): namespace/name decides too.
    let untimed = |d: &DNSEndpoint| {
        let mut d = d.clone();
        d.metadata.creation_timestamp = None;
        d
    };
    let desired = desired_zones(&zones, &[untimed(&a), untimed(&b)]);
    assert_eq!(
        rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
        ["203.0.113.2"]
    );
    // An object with a timestamp is older than one without.
    let desired = desired_zones(&zones, &[a, untimed(&b)]);
    assert_eq!(
        rrset(&desired, "x.example.com", RecordType::A).unwrap().targets,
        ["203.0.113.1"]
    );
}

#[test]
fn allowed_namespaces_limit_who_publishes_into_a_zone() {
    use fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use fedns_api::{AllowedNamespaces, NamespacesFrom};
    let mut zone = domain("myfed", "example.com");
    zone.spec.allowed_namespaces = Some(AllowedNamespaces {
        from: NamespacesFrom::Selector,
        selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("fedns.io/publish".to_owned(), "true".to_owned())])),
            ..Default::default()
        }),
    });
    let team = |ns: &str| {
        claim(
            ns,
            "e",
            None,
            vec![ep(&format!("{ns}.example.com"), RecordType::A, &["203.0.113.1"], None)],
        )
    };
    let labels: NamespaceLabels = BTreeMap::from([(
        "team-a".to_owned(),
        BTreeMap::from([("fedns.io/publish".to_owned(), "true".to_owned())]),
    )]);
    let desired = desired_zones_with(&[zone.clone()], &[team("team-a"), team("team-b")], &labels);
    assert!(rrset(&desired, "team-a.example.com", RecordType::A).is_some());
    assert!(rrset(&desired, "team-b.example.com", RecordType::A).is_none());
    assert_eq!(kinds(&desired, "team-b", "e")[0].0, ProblemKind::NotAllowed);
    zone.spec.allowed_namespaces = Some(AllowedNamespaces {
        from: NamespacesFrom::Same,
        selector: None,
    });
    let desired = desired_zones(&[zone], &[team("team-a"), team("fedns-system")]);
    assert!(rrset(&desired, "team-a.example.com", RecordType::A).is_none());
    assert!(rrset(&desired, "fedns-system.example.com", RecordType::A).is_some());
}

#[test]
fn addresses_beat_cname() {
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                ep("n.example.com", RecordType::CNAME, &["other.example.com"], None),
                ep("n.example.com", RecordType::AAAA, &["2001:db8::1"], None),
            ],
        )],
    );
    assert!(rrset(&desired, "n.example.com", RecordType::CNAME).is_none());
    assert_eq!(
        rrset(&desired, "n.example.com", RecordType::AAAA).unwrap().targets,
        ["2001:db8::1"]
    );
    assert_eq!(desired.problems.len(), 1);
    assert!(
        desired.problems[0].message.contains("CNAME dropped"),
        "{:?}",
        desired.problems
    );
}

#[test]
fn invalid_targets_are_skipped_and_reported_siblings_kept() {
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                ep(
                    "n.example.com",
                    RecordType::A,
                    &["203.0.113.1", "not-an-ip", "2001:db8::1"],
                    None,
                ),
                ep("v6.example.com", RecordType::AAAA, &["203.0.113.1"], None),
                ep("c.example.com", RecordType::CNAME, &["bad_name.example.com"], None),
                ep("s.example.com", RecordType::SRV, &["0 5 80"], None),
            ],
        )],
    );
    assert_eq!(
        rrset(&desired, "n.example.com", RecordType::A).unwrap().targets,
        ["203.0.113.1"]
    );
    assert!(rrset(&desired, "v6.example.com", RecordType::AAAA).is_none());
    let messages: Vec<&str> = desired.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(messages.len(), 5, "{messages:#?}");
    assert!(messages
        .iter()
        .any(|m| m.contains("\"not-an-ip\"") && m.contains("IPv4")));
}

#[test]
fn names_outside_every_domain_are_reported() {
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![ep("n.example.org", RecordType::A, &["203.0.113.1"], None)],
        )],
    );
    assert_eq!(desired.zones[0].rrsets.len(), 0);
    assert_eq!(desired.problems[0].dns_name, "n.example.org");
    assert!(desired.problems[0].message.contains("outside every Domain"));
    assert_eq!(desired.problems_of("ns", "a").count(), 1);
}

#[test]
fn the_most_specific_domain_wins_and_duplicates_are_reported() {
    let desired = desired_zones(
        &[
            domain("a", "example.com"),
            domain("b", "sub.example.com"),
            domain("c", "example.com"),
        ],
        &[endpoints(
            "x",
            vec![ep("n.sub.example.com", RecordType::A, &["203.0.113.1"], None)],
        )],
    );
    assert_eq!(desired.zones.len(), 2);
    let sub = desired.zones.iter().find(|z| z.domain == "fedns-system/b").unwrap();
    assert_eq!(sub.rrsets.len(), 1);
    assert_eq!(desired.domain_problems.len(), 1);
    assert!(desired.domain_problems[0].message.contains("already served"));
}

#[test]
fn parses_every_supported_type() {
    for (rtype, target) in [
        (RecordType::A, "192.0.2.1"),
        (RecordType::AAAA, "2001:db8::1"),
        (RecordType::CNAME, "www.example.com"),
        (RecordType::NS, "ns.example.com."),
        (RecordType::PTR, "host.example.com"),
        (RecordType::TXT, "heritage=external-dns,external-dns/owner=fedns"),
        (RecordType::MX, "10 mail.example.com"),
        (RecordType::SRV, "0 50 443 web.example.com"),
        (RecordType::CAA, "0 issue \"letsencrypt.org\""),
    ] {
        parse_target(rtype, target).unwrap_or_else(|e| panic!("{rtype} {target}: {e}"));
    }
    let long = "x".repeat(600);
    match parse_target(RecordType::TXT, &long).unwrap() {
        RData::TXT(txt) => assert_eq!(txt.txt_data.len(), 3),
        other => panic!("{other:?}"),
    }
}

fn routed(dns_name: &str, rtype: RecordType, set: &str, targets: &[&str], props: &[(&str, &str)]) -> Endpoint {
    let mut e = ep(dns_name, rtype, targets, Some(30));
    e.set_identifier = set.into();
    e.provider_specific = props
        .iter()
        .map(|(n, v)| fedns_api::ProviderSpecificProperty {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect();
    e
}

#[test]
fn sticky_weighted_endpoints_become_a_sticky_routed_name() {
    use fedns_api::routing::FEDNS_STICKY_CLIENT_SUBNET;
    let n = "s.example.com";
    let sticky = |set: &str, ip: &str, prefixes: &str| {
        routed(
            n,
            RecordType::A,
            set,
            &[ip],
            &[(AWS_WEIGHT, "1"), (FEDNS_STICKY_CLIENT_SUBNET, prefixes)],
        )
    };
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                sticky("east", "203.0.113.1", "24,56"),
                sticky("west", "203.0.113.2", "24,56"),
            ],
        )],
    );
    assert!(desired.problems.is_empty(), "{:?}", desired.problems);
    assert_eq!(
        desired.zones[0].content.routed[0].policy,
        fedns_dnsserver::RoutingPolicy::StickyWeighted {
            v4_prefix: 24,
            v6_prefix: 56
        }
    );
    // Out of range or one prefix only: a problem, answered as All.
    for (props, why) in [
        (
            vec![(AWS_WEIGHT, "1"), (FEDNS_STICKY_CLIENT_SUBNET, "33,56")],
            "not IPV4,IPV6 prefix lengths",
        ),
        (
            vec![(AWS_FAILOVER, "PRIMARY"), (FEDNS_STICKY_CLIENT_SUBNET, "24")],
            "not IPV4,IPV6 prefix lengths",
        ),
    ] {
        let desired = desired_zones(
            &[domain("myfed", "example.com")],
            &[endpoints(
                "a",
                vec![routed(n, RecordType::A, "east", &["203.0.113.1"], &props)],
            )],
        );
        assert!(
            format!("{:?}", desired.problems).contains(why),
            "{why}: {:?}",
            desired.problems
        );
    }
}

/// `fedns/max-answers` on a plain name makes it an `Every` routed name of
/// every address; on a sticky Failover name, `Every` over the active
/// role's clusters only; a bad value is a problem and no limit.
#[test]
fn max_answers_and_sticky_failover_become_every_routed_names() {
    use fedns_api::routing::{FEDNS_MAX_ANSWERS, FEDNS_STICKY_CLIENT_SUBNET};
    use fedns_dnsserver::RoutingPolicy as Served;
    let mut plain = ep(
        "all.example.com",
        RecordType::A,
        &["203.0.113.1", "203.0.113.2", "203.0.113.3"],
        Some(30),
    );
    plain.provider_specific = vec![fedns_api::ProviderSpecificProperty {
        name: FEDNS_MAX_ANSWERS.into(),
        value: "2".into(),
    }];
    let f = "f.example.com";
    let failover = |set: &str, ip: &str, role: &str| {
        routed(
            f,
            RecordType::A,
            set,
            &[ip],
            &[(AWS_FAILOVER, role), (FEDNS_STICKY_CLIENT_SUBNET, "24,56")],
        )
    };
    let mut bad = ep("bad.example.com", RecordType::A, &["203.0.113.9"], Some(30));
    bad.provider_specific = vec![fedns_api::ProviderSpecificProperty {
        name: FEDNS_MAX_ANSWERS.into(),
        value: "65".into(),
    }];
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                plain,
                failover("east", "203.0.113.4", "PRIMARY"),
                failover("west", "203.0.113.5", "PRIMARY"),
                failover("eu", "203.0.113.6", "SECONDARY"),
                bad,
            ],
        )],
    );
    assert!(
        desired.problems.iter().any(|p| p
            .message
            .starts_with("fedns/max-answers \"65\" is not a whole number 1..64")),
        "{:?}",
        desired.problems
    );
    let routed = &desired.zones[0].content.routed;
    assert_eq!(routed.len(), 2, "{routed:?}");
    let all = routed.iter().find(|r| r.name.to_ascii() == "all.example.com.").unwrap();
    assert_eq!((all.policy.clone(), all.max_answers), (Served::Every, Some(2)));
    assert_eq!(all.variants.len(), 1);
    assert_eq!(all.variants[0].records.len(), 3);
    let f = routed.iter().find(|r| r.name.to_ascii() == "f.example.com.").unwrap();
    assert_eq!((f.policy.clone(), f.sticky_within), (Served::Every, Some((24, 56))));
    let ids: Vec<&str> = f.variants.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids, ["east", "west"], "the active role only");
}

#[test]
fn weighted_endpoints_become_a_routed_name_and_a_union() {
    let n = "w.example.com";
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_WEIGHT, "1")]),
                routed(n, RecordType::AAAA, "east", &["2001:db8::1"], &[(AWS_WEIGHT, "1")]),
                routed(n, RecordType::A, "west", &["203.0.113.2"], &[(AWS_WEIGHT, "3")]),
            ],
        )],
    );
    assert!(desired.problems.is_empty(), "{:?}", desired.problems);
    let a = rrset(&desired, n, RecordType::A).unwrap();
    assert_eq!(a.targets, ["203.0.113.1", "203.0.113.2"], "the All answer is the union");
    let routing = a.routing.as_ref().unwrap();
    assert_eq!(routing.policy, RoutingPolicy::Weighted);
    assert_eq!(routing.members.len(), 2);
    assert_eq!(routing.members[1].weight, Some(3));
    let zone = &desired.zones[0].content;
    assert_eq!(zone.routed.len(), 1);
    let variants = &zone.routed[0].variants;
    assert_eq!(variants.len(), 2);
    assert_eq!(variants[0].id, "east");
    assert_eq!(variants[0].records.len(), 2, "A and AAAA of east");
}

#[test]
fn failover_publishes_the_active_role() {
    let n = "f.example.com";
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_FAILOVER, "PRIMARY")]),
                routed(
                    n,
                    RecordType::A,
                    "west",
                    &["203.0.113.2"],
                    &[(AWS_FAILOVER, "SECONDARY")],
                ),
            ],
        )],
    );
    assert!(desired.problems.is_empty(), "{:?}", desired.problems);
    let a = rrset(&desired, n, RecordType::A).unwrap();
    assert_eq!(a.targets, ["203.0.113.1"]);
    assert!(desired.zones[0].content.routed.is_empty());
    // Only the secondary left (the primary is unhealthy): it answers.
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![routed(
                n,
                RecordType::A,
                "west",
                &["203.0.113.2"],
                &[(AWS_FAILOVER, "SECONDARY")],
            )],
        )],
    );
    assert_eq!(rrset(&desired, n, RecordType::A).unwrap().targets, ["203.0.113.2"]);
}

#[test]
fn nearest_reads_region_and_fallback() {
    let n = "n.example.com";
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                routed(
                    n,
                    RecordType::A,
                    "east",
                    &["203.0.113.1"],
                    &[
                        (FEDNS_NEAREST_REGION, "us-east-1"),
                        (FEDNS_NEAREST_FALLBACK, "us-east-1, eu"),
                    ],
                ),
                routed(n, RecordType::A, "lab", &["203.0.113.9"], &[(FEDNS_NEAREST_REGION, "")]),
            ],
        )],
    );
    assert!(desired.problems.is_empty(), "{:?}", desired.problems);
    let routed = &desired.zones[0].content.routed[0];
    assert_eq!(
        routed.policy,
        fedns_dnsserver::RoutingPolicy::Nearest {
            fallback: vec!["us-east-1".into(), "eu".into()]
        }
    );
    assert_eq!(routed.variants[0].region.as_deref(), Some("us-east-1"));
    assert_eq!(routed.variants[1].region, None);
}

#[test]
fn bad_or_mixed_routing_is_reported_and_answered_as_all() {
    let n = "m.example.com";
    let desired = desired_zones(
        &[domain("myfed", "example.com")],
        &[endpoints(
            "a",
            vec![
                routed(n, RecordType::A, "east", &["203.0.113.1"], &[(AWS_WEIGHT, "-1")]),
                routed(n, RecordType::A, "west", &["203.0.113.2"], &[(AWS_WEIGHT, "2")]),
                routed(
                    "x.example.com",
                    RecordType::A,
                    "a",
                    &["203.0.113.3"],
                    &[(AWS_WEIGHT, "1")],
                ),
                routed(
                    "x.example.com",
                    RecordType::A,
                    "b",
                    &["203.0.113.4"],
                    &[(AWS_FAILOVER, "PRIMARY")],
                ),
                routed(
                    "y.example.com",
                    RecordType::A,
                    "a",
                    &["203.0.113.5"],
                    &[(AWS_FAILOVER, "MAYBE")],
                ),
            ],
        )],
    );
    let messages: Vec<&str> = desired.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains("\"-1\" is not a whole number")),
        "{messages:#?}"
    );
    assert!(messages.iter().any(|m| m.contains("mix policies")), "{messages:#?}");
    assert!(
        messages.iter().any(|m| m.contains("PRIMARY or SECONDARY")),
        "{messages:#?}"
    );
    // Nothing is lost: every address is served to everyone.
    assert_eq!(
        rrset(&desired, n, RecordType::A).unwrap().targets,
        ["203.0.113.1", "203.0.113.2"]
    );
    assert!(rrset(&desired, n, RecordType::A).unwrap().routing.is_none());
    assert_eq!(
        rrset(&desired, "x.example.com", RecordType::A).unwrap().targets.len(),
        2
    );
    assert!(desired.zones[0].content.routed.is_empty());
}

#[test]
fn client_table_problems_are_reported_and_the_rest_kept() {
    let mut d = domain("myfed", "example.com");
    d.spec.client_regions = vec![
        fedns_api::ClientRegion {
            cidr: "10.0.0.0/8".into(),
            region: "eu".into(),
        },
        fedns_api::ClientRegion {
            cidr: "10.0.0.0/8".into(),
            region: "us".into(),
        },
        fedns_api::ClientRegion {
            cidr: "300.0.0.0/8".into(),
            region: "us".into(),
        },
        fedns_api::ClientRegion {
            cidr: "192.0.2.0/24".into(),
            region: "us".into(),
        },
    ];
    let desired = desired_zones(&[d], &[]);
    assert_eq!(desired.zones.len(), 1, "the zone is still served");
    assert_eq!(desired.client_region_problems.len(), 1);
    let message = &desired.client_region_problems[0].message;
    assert!(
        message.contains("10.0.0.0/8 is given for regions eu and us"),
        "{message}"
    );
    assert!(message.contains("\"300.0.0.0/8\" is not a network"), "{message}");
    assert_eq!(desired.zones[0].content.client_regions.networks.len(), 2);
}

#[test]
fn in_zone_name_servers_get_their_addresses_and_their_names_are_not_endpoints() {
    let mut d = domain("myfed", "example.com");
    d.spec.name_servers = vec!["ns1.example.com".into(), "ns.other.net".into()];
    d.spec.name_server_addresses = vec![
        fedns_api::NameServerAddresses {
            name: "NS1.example.com.".into(),
            addresses: vec!["192.0.2.53".into(), "2001:db8::53".into(), "not-an-address".into()],
        },
        fedns_api::NameServerAddresses {
            name: "ns.other.net".into(),
            addresses: vec!["198.51.100.53".into()],
        },
        fedns_api::NameServerAddresses {
            name: "ns9.example.com".into(),
            addresses: vec!["198.51.100.9".into()],
        },
    ];
    let desired = desired_zones(
        std::slice::from_ref(&d),
        &[endpoints(
            "glue",
            vec![
                ep("ns1.example.com", RecordType::A, &["203.0.113.1"], None),
                ep("www.example.com", RecordType::A, &["203.0.113.2"], None),
            ],
        )],
    );
    let content = &desired.zones[0].content;
    let served: Vec<String> = content
        .name_server_addresses
        .iter()
        .map(|(n, ip)| format!("{n} {ip}"))
        .collect();
    assert_eq!(served, ["ns1.example.com. 192.0.2.53", "ns1.example.com. 2001:db8::53"]);
    // The name server's name is the Domain's: an endpoint there is refused.
    assert!(rrset(&desired, "ns1.example.com", RecordType::A).is_none());
    assert!(rrset(&desired, "www.example.com", RecordType::A).is_some());
    let refused: Vec<&str> = desired.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("name server of Domain fedns-system/myfed"),
        "{refused:?}"
    );
    // Each entry left out is said, with why.
    let (_, problems) = name_server_addresses_of(&d);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("\"not-an-address\" of ns1.example.com"));
    assert!(problems[1].contains("ns.other.net is outside zone example.com"));
    assert!(problems[2].contains("ns9.example.com is not one of the name servers"));
    let (missing, message) = name_server_addresses_check(&d).unwrap_err();
    assert!(!missing, "ns1 has addresses: {message}");
}

#[test]
fn an_in_zone_name_server_without_addresses_is_reported() {
    let mut d = domain("myfed", "example.com");
    let (missing, message) = name_server_addresses_check(&d).unwrap_err();
    assert!(missing);
    assert!(message.starts_with("name server(s) ns1.example.com inside zone example.com have no addresses"));
    // Empty nameServers: the default ns1.<domain> is inside the zone too.
    d.spec.name_servers.clear();
    assert!(name_server_addresses_check(&d).unwrap_err().0);
    d.spec.name_server_addresses = vec![fedns_api::NameServerAddresses {
        name: "ns1.example.com".into(),
        addresses: vec!["192.0.2.53".into()],
    }];
    assert_eq!(
        name_server_addresses_check(&d).unwrap(),
        "1 in-zone name server(s) with 1 address(es)"
    );
    d.spec.name_servers = vec!["ns.other.net".into()];
    d.spec.name_server_addresses.clear();
    assert_eq!(
        name_server_addresses_check(&d).unwrap(),
        "no name server is inside the zone"
    );
}

/// The attacks of a namespace with rights in its own namespace only: above,
/// below and beside another namespace's names, and through a forged
/// registry value. The victim's records stay as they were and each
/// refusal names the rule.
#[test]
fn a_tenant_takes_no_name_above_below_or_beside_another_namespaces() {
    let web = "web.shop.myfed.svc.example.com";
    let victim = claim(
        "shop",
        "service-web",
        Some("2026-01-01T00:00:00Z"),
        vec![
            ep(web, RecordType::A, &["203.0.113.10"], Some(30)),
            ep("www.example.com", RecordType::A, &["203.0.113.11"], None),
        ],
    );
    let attacks = vec![
        ep(
            "shop.myfed.svc.example.com",
            RecordType::NS,
            &["ns.attacker.test"],
            None,
        ),
        ep("myfed.svc.example.com", RecordType::NS, &["ns.attacker.test"], None),
        ep("svc.example.com", RecordType::NS, &["ns.attacker.test"], None),
        ep(&format!("_acme-challenge.{web}"), RecordType::TXT, &["token"], None),
        ep(
            &format!("_sip._tcp.{web}"),
            RecordType::SRV,
            &["0 0 5060 sip.attacker.test"],
            None,
        ),
        ep(&format!("evil.{web}"), RecordType::A, &["203.0.113.66"], None),
        ep("_acme-challenge.example.com", RecordType::TXT, &["token"], None),
        ep("example.com", RecordType::TXT, &["v=spf1 +all"], None),
        ep("example.com", RecordType::CAA, &["0 issue \"attacker.test\""], None),
        ep("ns1.example.com", RecordType::A, &["203.0.113.66"], None),
        ep("*.example.com", RecordType::A, &["203.0.113.66"], None),
        ep("sub.example.com", RecordType::NS, &["ns.attacker.test"], None),
        ep("_acme-challenge.www.example.com", RecordType::TXT, &["token"], None),
        ep("a.www.example.com", RecordType::A, &["203.0.113.66"], None),
        ep(
            "a-www.example.com",
            RecordType::TXT,
            &["heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/shop/x"],
            None,
        ),
    ];
    let attacked: std::collections::BTreeSet<String> = attacks.iter().map(|e| e.dns_name.clone()).collect();
    let mallory = claim("mallory", "evil", Some("2026-06-01T00:00:00Z"), attacks);
    let before = desired_zones(&[domain("myfed", "example.com")], std::slice::from_ref(&victim));
    let after = desired_zones(&[domain("myfed", "example.com")], &[victim, mallory]);
    assert_eq!(before.zones[0].rrsets, after.zones[0].rrsets, "the zone is unchanged");
    assert_eq!(
        before.zones[0].content.records, after.zones[0].content.records,
        "byte for byte"
    );
    let refused = kinds(&after, "mallory", "evil");
    let named: std::collections::BTreeSet<String> = after
        .problems_of("mallory", "evil")
        .map(|p| p.dns_name.clone())
        .collect();
    assert_eq!(named, attacked, "every attack is reported: {refused:#?}");
    for (kind, message) in &refused {
        assert!(
            matches!(kind, ProblemKind::NotAllowed | ProblemKind::Conflict),
            "{message}"
        );
        assert!(
            message.contains("not published") || message.contains("never published"),
            "{message}"
        );
    }
    assert!(kinds(&after, "shop", "service-web").is_empty());
}

#[test]
fn outside_service_names_the_first_namespace_holds_the_names_above_and_below() {
    let zones = [domain("myfed", "example.com")];
    let first = claim(
        "team-a",
        "a",
        Some("2026-01-01T00:00:00Z"),
        vec![ep("api.example.com", RecordType::A, &["203.0.113.1"], None)],
    );
    let below = claim(
        "team-b",
        "b",
        Some("2026-02-01T00:00:00Z"),
        vec![ep("v1.api.example.com", RecordType::A, &["203.0.113.2"], None)],
    );
    let same_namespace = claim(
        "team-a",
        "c",
        Some("2026-03-01T00:00:00Z"),
        vec![ep("_acme-challenge.api.example.com", RecordType::TXT, &["ok"], None)],
    );
    let desired = desired_zones(&zones, &[first.clone(), below.clone(), same_namespace]);
    assert!(rrset(&desired, "v1.api.example.com", RecordType::A).is_none());
    let (kind, message) = &kinds(&desired, "team-b", "b")[0];
    assert_eq!(*kind, ProblemKind::Conflict);
    assert!(
        message.contains("api.example.com, above it, is held by DNSEndpoint team-a/a"),
        "{message}"
    );
    assert!(rrset(&desired, "_acme-challenge.api.example.com", RecordType::TXT).is_some());
    // The other way round: the older name below keeps the newer one above off.
    let mut above = first;
    above.metadata.creation_timestamp = below.metadata.creation_timestamp.clone();
    above.metadata.name = Some("z".into());
    let older_below = claim(
        "team-b",
        "b",
        Some("2025-02-01T00:00:00Z"),
        vec![ep("v1.api.example.com", RecordType::A, &["203.0.113.2"], None)],
    );
    let desired = desired_zones(&zones, &[above, older_below]);
    assert!(rrset(&desired, "api.example.com", RecordType::A).is_none());
    assert!(kinds(&desired, "team-a", "z")[0].1.contains("below it"));
}

#[test]
fn grants_give_reserved_names_to_one_namespace() {
    let mut zone = domain("myfed", "example.com");
    zone.spec.grants = vec![fedns_api::NameGrant {
        namespace: "team-a".into(),
        hostnames: vec!["team.example.com".into(), "*.apps.example.com".into()],
    }];
    let team = claim(
        "team-a",
        "a",
        Some("2026-02-01T00:00:00Z"),
        vec![
            ep("team.example.com", RecordType::NS, &["ns.team.test"], None),
            ep("*.apps.example.com", RecordType::A, &["203.0.113.1"], None),
        ],
    );
    let mallory = claim(
        "mallory",
        "m",
        Some("2025-01-01T00:00:00Z"),
        vec![
            ep("x.team.example.com", RecordType::A, &["203.0.113.66"], None),
            ep("x.apps.example.com", RecordType::A, &["203.0.113.66"], None),
        ],
    );
    let desired = desired_zones(&[zone], &[team, mallory]);
    assert!(rrset(&desired, "team.example.com", RecordType::NS).is_some());
    assert!(rrset(&desired, "*.apps.example.com", RecordType::A).is_some());
    assert!(rrset(&desired, "x.team.example.com", RecordType::A).is_none());
    assert!(rrset(&desired, "x.apps.example.com", RecordType::A).is_none());
    for (kind, message) in kinds(&desired, "mallory", "m") {
        assert_eq!(kind, ProblemKind::NotAllowed);
        assert!(message.contains("to namespace team-a (spec.grants)"), "{message}");
    }
}
