//! A hostile tenant's attempts on another namespace's names, shared by
//! every sink's test (embedded, Route53, Cloud DNS, CoreDNS-etcd,
//! webhook): namespace `mallory`, with rights in its own namespace only,
//! publishes DNSEndpoints at, above, below and beside namespace `shop`'s
//! names, and a TXT forging an ownership registry value. Each sink's test
//! publishes the victim alone, then with the attacker, and asserts the
//! sink holds exactly the same records and that every attempt is
//! reported.

use fedns_api::{DNSEndpoint, Domain};
use fedns_providers::plan::desired::{desired_zones, DesiredZones, ProblemKind};
use serde_json::json;

/// The zone apex the fixture uses.
pub const APEX: &str = "example.com";

/// The victim's service name.
pub const VICTIM_SERVICE: &str = "web.shop.myfed.svc.example.com";

/// The victim's open name (outside service names), held first.
pub const VICTIM_OPEN: &str = "www.example.com";

fn domain() -> Domain {
    serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed", "namespace": "fedns-system"},
        "spec": {"domain": APEX, "nameServers": ["ns1.example.com"]},
    }))
    .expect("a valid Domain")
}

fn object(namespace: &str, name: &str, created: &str, endpoints: serde_json::Value) -> DNSEndpoint {
    serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": {"endpoints": endpoints},
    }))
    .expect("a valid DNSEndpoint")
}

/// Namespace `shop`'s DNSEndpoint: its service name (A, AAAA) and an
/// open name it claimed first.
pub fn victim() -> DNSEndpoint {
    object(
        "shop",
        "service-web",
        "2026-01-01T00:00:00Z",
        json!([
            {"dnsName": VICTIM_SERVICE, "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10"]},
            {"dnsName": VICTIM_SERVICE, "recordType": "AAAA", "recordTTL": 30, "targets": ["2001:db8::10"]},
            {"dnsName": VICTIM_OPEN, "recordType": "A", "recordTTL": 60, "targets": ["203.0.113.11"]},
        ]),
    )
}

/// Namespace `mallory`'s DNSEndpoints: one older than the victim's
/// (service names and reserved names are never first-come), one newer
/// (names above and below the victim's open name).
pub fn attacker() -> Vec<DNSEndpoint> {
    vec![
        object(
            "mallory",
            "older",
            "2025-01-01T00:00:00Z",
            json!([
                {"dnsName": VICTIM_SERVICE, "recordType": "A", "targets": ["203.0.113.66"]},
                {"dnsName": format!("evil.{VICTIM_SERVICE}"), "recordType": "A", "targets": ["203.0.113.66"]},
                {"dnsName": format!("_acme-challenge.{VICTIM_SERVICE}"), "recordType": "TXT", "targets": ["forged-token"]},
                {"dnsName": format!("_sip._tcp.{VICTIM_SERVICE}"), "recordType": "SRV", "targets": ["0 0 5060 sip.attacker.test"]},
                {"dnsName": "shop.myfed.svc.example.com", "recordType": "NS", "targets": ["ns.attacker.test"]},
                {"dnsName": "myfed.svc.example.com", "recordType": "TXT", "targets": ["mine"]},
                {"dnsName": "_acme-challenge.example.com", "recordType": "TXT", "targets": ["forged-token"]},
                {"dnsName": "example.com", "recordType": "TXT", "targets": ["v=spf1 +all"]},
                {"dnsName": "example.com", "recordType": "MX", "targets": ["10 mail.attacker.test"]},
                {"dnsName": "ns1.example.com", "recordType": "A", "targets": ["203.0.113.66"]},
                {"dnsName": "*.example.com", "recordType": "A", "targets": ["203.0.113.66"]},
                {"dnsName": "sub.example.com", "recordType": "NS", "targets": ["ns.attacker.test"]},
                {"dnsName": "a-www.example.com", "recordType": "TXT",
                 "targets": ["heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/shop/service-web"]},
            ]),
        ),
        object(
            "mallory",
            "newer",
            "2026-06-01T00:00:00Z",
            json!([
                {"dnsName": VICTIM_OPEN, "recordType": "A", "targets": ["203.0.113.66"]},
                {"dnsName": format!("_acme-challenge.{VICTIM_OPEN}"), "recordType": "TXT", "targets": ["forged-token"]},
                {"dnsName": format!("evil.{VICTIM_OPEN}"), "recordType": "A", "targets": ["203.0.113.66"]},
            ]),
        ),
    ]
}

/// The desired zones with the victim alone, or with the attacker too.
pub fn desired(with_attacker: bool) -> DesiredZones {
    let mut objects = vec![victim()];
    if with_attacker {
        objects.extend(attacker());
    }
    desired_zones(&[domain()], &objects)
}

/// Asserts that every one of the attacker's names is reported on its
/// DNSEndpoint as `NotAllowed` or `Conflict`, and nothing of the
/// victim's; returns the refusals as `name: message` lines (for the log).
pub fn assert_every_attempt_refused(desired: &DesiredZones) -> Vec<String> {
    let mut wanted = std::collections::BTreeSet::new();
    for object in attacker() {
        for endpoint in &object.spec.endpoints {
            wanted.insert(endpoint.dns_name.trim_end_matches('.').to_owned());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for problem in &desired.problems {
        assert_ne!(problem.namespace, "shop", "the victim is reported: {problem:?}");
        assert!(
            matches!(problem.kind, ProblemKind::NotAllowed | ProblemKind::Conflict),
            "{problem:?}"
        );
        seen.insert(problem.dns_name.clone());
        lines.push(format!("{}: {}", problem.dns_name, problem.message));
    }
    assert_eq!(seen, wanted, "every attempt is reported:\n{}", lines.join("\n"));
    for zone in &desired.zones {
        for rrset in &zone.rrsets {
            assert!(
                rrset.sources.iter().all(|s| s.starts_with("shop/")),
                "only the victim publishes: {rrset:?}"
            );
        }
    }
    lines
}
