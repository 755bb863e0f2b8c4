//! The webhook provider's wire format, domain filter and planning, against
//! external-dns's own examples and test tables (vendored in `testdata/`
//! with their source).

use std::collections::BTreeSet;

use fedns_api::RecordType;
use serde_json::{json, Value};

use super::api::{Changes, DomainFilter, WireEndpoint};
use super::*;

fn want(name: &str, record_type: RecordType, ttl: u32, targets: &[&str]) -> DesiredRRset {
    DesiredRRset {
        name: name.into(),
        record_type,
        ttl,
        targets: targets.iter().map(|t| t.to_string()).collect(),
        provider_specific: Vec::new(),
        sources: BTreeSet::from(["ns/web".to_owned()]),
        routing: None,
        set_identifier: String::new(),
    }
}

fn held(name: &str, record_type: &str, ttl: i64, targets: &[&str]) -> WireEndpoint {
    WireEndpoint {
        dns_name: name.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        record_type: record_type.into(),
        record_ttl: ttl,
        ..WireEndpoint::default()
    }
}

fn registry_of(name: &str, owner: &str) -> WireEndpoint {
    held(
        name,
        "TXT",
        0,
        &[&format!(
            "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=crd/ns/web\""
        )],
    )
}

/// Every row of external-dns's own `Match` tables gives the same answer.
#[test]
fn domain_filters_match_as_external_dns_does() {
    let cases: Value =
        serde_json::from_str(include_str!("testdata/domain_filter_cases.json")).expect("vendored cases parse");
    let mut checked = 0;
    for row in cases["lists"]
        .as_array()
        .unwrap()
        .iter()
        .chain(cases["regexes"].as_array().unwrap())
    {
        let body = if row.get("regexInclude").is_some() {
            json!({"regexInclude": row["regexInclude"], "regexExclude": row["regexExclude"]})
        } else {
            json!({"include": row["include"], "exclude": row["exclude"]})
        };
        let filter = DomainFilter::parse(body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{row}: {e}"));
        for domain in row["domains"].as_array().unwrap() {
            let domain = domain.as_str().unwrap();
            assert_eq!(
                filter.matches(domain),
                row["expected"].as_bool().unwrap(),
                "{domain} against {row}"
            );
            checked += 1;
        }
    }
    println!("{checked} domain/filter pairs from external-dns's tables");
    assert!(checked >= 80, "{checked}");
}

#[test]
fn negotiation_bodies_parse_as_external_dns_reads_them() {
    // A nil filter is `{}`; unknown keys (the OpenAPI's `filters`) are ignored.
    assert!(DomainFilter::parse(b"{}").unwrap().matches("anything.example"));
    assert!(DomainFilter::parse(br#"{"filters":[".example.org"]}"#)
        .unwrap()
        .matches("x.example.com"));
    let both = DomainFilter::parse(br#"{"include":["a.com"],"regexInclude":"b"}"#).unwrap_err();
    assert!(both.contains("both domain lists and regular expressions"), "{both}");
    let bad = DomainFilter::parse(br#"{"regexInclude":"("}"#).unwrap_err();
    assert!(bad.contains("does not compile"), "{bad}");
    assert!(DomainFilter::parse(b"[]").is_err());
}

/// The endpoint and changes examples of external-dns's OpenAPI document
/// (`api/webhook.yaml`) decode, and fedns encodes the same JSON back:
/// every empty field and a zero TTL left out, camelCase names.
#[test]
fn wire_format_follows_external_dns_examples() {
    let examples: Value = serde_json::from_str(include_str!("testdata/webhook_examples.json")).unwrap();
    for key in ["adjustRequest", "adjustResponse", "records"] {
        let endpoints: Vec<WireEndpoint> = serde_json::from_value(examples[key].clone()).unwrap();
        let back = serde_json::to_value(&endpoints).unwrap();
        let mut expected = examples[key].clone();
        // Go leaves a zero TTL out (omitempty).
        for e in expected.as_array_mut().unwrap() {
            if e["recordTTL"] == json!(0) {
                e.as_object_mut().unwrap().remove("recordTTL");
            }
        }
        assert_eq!(back, expected, "{key}");
    }
    let changes: Changes = serde_json::from_value(examples["changes"].clone()).unwrap();
    assert_eq!(changes.create.len(), 1);
    assert_eq!(changes.delete[0].record_type, "CNAME");
    assert_eq!(serde_json::to_value(&changes).unwrap(), examples["changes"]);
    // Go's decoder takes keys in any case: so does fedns's server.
    let mixed: Changes = serde_json::from_str(examples["mixedCaseChanges"].as_str().unwrap()).unwrap();
    assert_eq!(
        (
            mixed.create[0].dns_name.as_str(),
            mixed.update_old[0].dns_name.as_str(),
            mixed.delete[0].dns_name.as_str()
        ),
        ("foo", "bar", "qux")
    );
    // Go encodes nil slices as null: read as empty.
    let nulls: Changes =
        serde_json::from_str(r#"{"create":null,"updateOld":null,"delete":[{"dnsName":"a","targets":null}]}"#).unwrap();
    assert!(nulls.create.is_empty() && nulls.delete[0].targets.is_empty());
}

#[test]
fn a_new_record_is_created_with_its_registry_record() {
    let plan = plan_zone(
        "fedns",
        "",
        "example.com",
        &[want("www.example.com", RecordType::A, 30, &["192.0.2.1"])],
        &[],
    );
    assert_eq!(plan.units.len(), 1);
    let changes = serde_json::to_value(&plan.units[0].changes).unwrap();
    assert_eq!(
        changes,
        json!({"create": [
            {"dnsName": "www.example.com", "targets": ["192.0.2.1"], "recordType": "A", "recordTTL": 30},
            {"dnsName": "a-www.example.com",
             "targets": ["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/web\""],
             "recordType": "TXT", "labels": {"ownedRecord": "www.example.com"}}
        ]})
    );
}

#[test]
fn owned_records_are_updated_and_deleted_others_never_touched() {
    let current = [
        held("www.example.com", "A", 30, &["192.0.2.1"]),
        registry_of("a-www.example.com", "fedns"),
        held("old.example.com", "TXT", 60, &["gone"]),
        registry_of("txt-old.example.com", "fedns"),
        held("app.example.com", "A", 300, &["198.51.100.1"]),
        registry_of("a-app.example.com", "cluster-b"),
        held("manual.example.com", "CNAME", 300, &["elsewhere.example.net"]),
    ];
    let desired = [
        want("www.example.com", RecordType::A, 30, &["192.0.2.2"]),
        want("app.example.com", RecordType::A, 30, &["192.0.2.3"]),
        want("manual.example.com", RecordType::CNAME, 30, &["www.example.com"]),
    ];
    let plan = plan_zone("fedns", "", "example.com", &desired, &current);
    let rows: Vec<(String, Value)> = plan
        .units
        .iter()
        .map(|u| (u.name.clone(), serde_json::to_value(&u.changes).unwrap()))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[0].0, "old.example.com");
    assert_eq!(rows[0].1["delete"].as_array().unwrap().len(), 2, "{rows:#?}");
    assert_eq!(rows[1].0, "www.example.com");
    assert_eq!(rows[1].1["updateOld"][0]["targets"], json!(["192.0.2.1"]));
    assert_eq!(rows[1].1["updateNew"][0]["targets"], json!(["192.0.2.2"]));
    assert!(
        rows[1].1.get("create").is_none(),
        "the registry record is kept: {rows:#?}"
    );
    let holders: Vec<(String, String)> = plan
        .conflicts
        .iter()
        .map(|(d, h)| (d.name.clone(), h.clone()))
        .collect();
    assert!(
        holders.contains(&("app.example.com".into(), "owner \"cluster-b\"".into())),
        "{holders:?}"
    );
    assert!(
        holders.contains(&("manual.example.com".into(), "a record with no owner".into())),
        "{holders:?}"
    );
    assert_eq!(plan.owned, 2);
}

/// What the provider's adjustendpoints made of the desired RRsets is
/// what it holds after: no change on the next round (targets compared in
/// canonical form, TXT as text).
#[test]
fn held_as_adjusted_is_no_change() {
    let desired = [
        want("www.example.com", RecordType::A, 60, &["192.0.2.1"]),
        want("txt.example.com", RecordType::TXT, 60, &["\"hello world\""]),
        want("alias.example.com", RecordType::CNAME, 60, &["www.example.com"]),
    ];
    let current = [
        held("www.example.com", "A", 60, &["192.0.2.1"]),
        registry_of("a-www.example.com", "fedns"),
        held("txt.example.com", "TXT", 60, &["hello world"]),
        registry_of("txt-txt.example.com", "fedns"),
        held("ALIAS.example.com.", "CNAME", 60, &["WWW.example.com."]),
        registry_of("cname-alias.example.com", "fedns"),
    ];
    let plan = plan_zone("fedns", "", "example.com", &desired, &current);
    assert!(plan.units.is_empty(), "{:#?}", plan.units);
    assert_eq!(plan.owned, 3);
}

#[test]
fn requests_hold_at_most_the_limit_and_a_name_stays_whole() {
    let desired: Vec<DesiredRRset> = (0..10)
        .map(|i| want(&format!("n{i}.example.com"), RecordType::A, 30, &["192.0.2.1"]))
        .collect();
    let plan = plan_zone("fedns", "", "example.com", &desired, &[]);
    let batches = pack(plan.units, 5);
    // Each unit is 2 endpoints (record and registry record): 2 per request.
    assert_eq!(batches.len(), 5);
    assert!(batches
        .iter()
        .all(|b| b.iter().map(|u| u.changes.len()).sum::<usize>() <= 5));
}

/// Host names in rdata as external-dns itself sends them (v0.22.0,
/// `endpoint/endpoint.go`): SRV's target absolute (`NewSRVRecord` refuses
/// it otherwise), CNAME, NS, MX and PTR without the trailing dot
/// (`NewEndpointWithTTL` strips it).
#[test]
fn host_names_in_rdata_are_written_as_external_dns_writes_them() {
    let cases = [
        (
            RecordType::SRV,
            "10 5 5060 sip.example.com",
            "10 5 5060 sip.example.com.",
        ),
        (RecordType::MX, "10 mx.example.com", "10 mx.example.com"),
        (RecordType::CNAME, "www.example.com", "www.example.com"),
        (RecordType::NS, "ns1.example.net", "ns1.example.net"),
    ];
    for (record_type, target, wire) in cases {
        let endpoint = endpoint_of(&want("x.example.com", record_type, 30, &[target]), None);
        assert_eq!(endpoint.targets, [wire], "{record_type}");
        // Read back from the provider: fedns's canonical form, no change.
        assert_eq!(targets_of(record_type, &endpoint.targets), [target], "{record_type}");
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date taken
/// as the time left until it; anything else is no value.
#[test]
fn retry_after_is_read_as_seconds_or_a_date() {
    use std::time::{Duration, SystemTime};
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    assert_eq!(api::parse_retry_after("120", now), Some(Duration::from_secs(120)));
    assert_eq!(
        api::parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        api::parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(api::parse_retry_after("soon", now), None);
}
