//! The examples parse into the Rust types and pass the generated OpenAPI
//! schemas; invalid objects are rejected by those same schemas (validated
//! with the `jsonschema` crate, so no check is written twice).

use std::path::{Path, PathBuf};

use fedns_api::names::{self, HOSTNAME_PATTERN, LABEL_PATTERN, OWNER_NAME_PATTERN};
use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, ServiceDNSRecord};
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;
use serde_json::{json, Value};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The CRD's `openAPIV3Schema` for `kind`, as a JSON-schema validator.
fn validator(kind: &str) -> jsonschema::Validator {
    let crd = fedns_api::crd::all()
        .into_iter()
        .map(|f| f.crd)
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for kind {kind}"));
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    let schema = serde_json::to_value(schema).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        .build(&schema)
        .expect("CRD schema compiles as JSON schema")
}

/// Schema errors of `doc` as "path: message" lines; empty when valid.
fn schema_errors(doc: &Value) -> Vec<String> {
    let kind = doc["kind"].as_str().expect("kind");
    let v = validator(kind);
    v.iter_errors(doc)
        .map(|e| format!("{}: {}", e.instance_path(), e))
        .collect()
}

fn load_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
fn every_example_parses_into_its_type_and_passes_the_schema() {
    let mut kinds = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        for doc in load_documents(&path) {
            let kind = doc["kind"].as_str().unwrap().to_owned();
            let parsed = match kind.as_str() {
                "MemberCluster" => serde_json::from_value::<MemberCluster>(doc.clone()).map(|_| ()),
                "Domain" => serde_json::from_value::<Domain>(doc.clone()).map(|_| ()),
                "ServiceDNSRecord" => serde_json::from_value::<ServiceDNSRecord>(doc.clone()).map(|_| ()),
                "IngressDNSRecord" => serde_json::from_value::<IngressDNSRecord>(doc.clone()).map(|_| ()),
                "DNSEndpoint" => serde_json::from_value::<DNSEndpoint>(doc.clone()).map(|_| ()),
                "Secret" => serde_json::from_value::<Secret>(doc.clone()).map(|_| ()),
                other => panic!("{}: unexpected kind {other}", path.display()),
            };
            parsed.unwrap_or_else(|e| panic!("{}: {kind}: {e}", path.display()));
            if kind != "Secret" {
                let errors = schema_errors(&doc);
                assert!(errors.is_empty(), "{}: {kind}: {errors:?}", path.display());
            }
            kinds.push(kind);
        }
    }
    for kind in [
        "MemberCluster",
        "Domain",
        "ServiceDNSRecord",
        "IngressDNSRecord",
        "DNSEndpoint",
        "Secret",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no example of {kind}");
    }
}

#[test]
fn examples_carry_the_expected_values() {
    let docs = load_documents(&examples_dir().join("servicednsrecord.yaml"));
    let record: ServiceDNSRecord = serde_json::from_value(docs[0].clone()).unwrap();
    assert_eq!(record.spec.domain_ref, "myfed");
    assert_eq!(record.spec.record_ttl, 30);
    assert_eq!(record.metadata.namespace.as_deref(), Some("ns"));
    let docs = load_documents(&examples_dir().join("domain.yaml"));
    let domain: Domain = serde_json::from_value(docs[0].clone()).unwrap();
    assert_eq!(domain.spec.domain, "example.com");
}

fn service_record(spec: Value) -> Value {
    json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
        "kind": "ServiceDNSRecord",
        "metadata": {"name": "nginx", "namespace": "ns"},
        "spec": spec,
    })
}

fn assert_rejected(doc: &Value, path_fragment: &str) {
    let errors = schema_errors(doc);
    assert!(
        errors.iter().any(|e| e.contains(path_fragment)),
        "expected an error at {path_fragment}, got {errors:?}"
    );
}

#[test]
fn schema_rejects_a_64_octet_label_in_dns_prefix() {
    let ok = service_record(json!({"domainRef": "myfed", "dnsPrefix": "a".repeat(63)}));
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));
    let bad = service_record(json!({"domainRef": "myfed", "dnsPrefix": "a".repeat(64)}));
    assert_rejected(&bad, "/spec/dnsPrefix");
}

#[test]
fn schema_rejects_ttl_out_of_range() {
    for ttl in [0, -1, 86_401] {
        let bad = service_record(json!({"domainRef": "myfed", "recordTTL": ttl}));
        assert_rejected(&bad, "/spec/recordTTL");
    }
    for ttl in [1, 86_400] {
        let ok = service_record(json!({"domainRef": "myfed", "recordTTL": ttl}));
        assert!(schema_errors(&ok).is_empty());
    }
}

#[test]
fn schema_rejects_an_empty_or_missing_domain_ref() {
    assert_rejected(&service_record(json!({"domainRef": ""})), "/spec/domainRef");
    let missing = schema_errors(&service_record(json!({})));
    assert!(missing.iter().any(|e| e.contains("domainRef")), "{missing:?}");
}

#[test]
fn schema_rejects_bad_dns_endpoints() {
    let endpoint = |ep: Value| {
        json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "DNSEndpoint",
            "metadata": {"name": "service-nginx", "namespace": "ns"},
            "spec": {"endpoints": [ep]},
        })
    };
    assert_rejected(
        &endpoint(json!({"dnsName": "a.example.com", "recordType": "A", "targets": []})),
        "/spec/endpoints/0/targets",
    );
    assert_rejected(
        &endpoint(json!({"dnsName": "a.example.com", "recordType": "BOGUS", "targets": ["1.2.3.4"]})),
        "/spec/endpoints/0/recordType",
    );
    assert_rejected(
        &endpoint(json!({"dnsName": "a..example.com", "recordType": "A", "targets": ["1.2.3.4"]})),
        "/spec/endpoints/0/dnsName",
    );
    assert_rejected(
        &endpoint(json!({"dnsName": "a.example.com", "recordType": "A", "targets": ["1.2.3.4"], "recordTTL": 0})),
        "/spec/endpoints/0/recordTTL",
    );
}

#[test]
fn schema_rejects_a_bad_member_cluster() {
    let member = |spec: Value| {
        json!({
            "apiVersion": "core.fedns.io/v1alpha1",
            "kind": "MemberCluster",
            "metadata": {"name": "m", "namespace": "fedns-system"},
            "spec": spec,
        })
    };
    assert_rejected(&member(json!({"apiEndpoint": "not a url"})), "/spec/apiEndpoint");
    assert_rejected(
        &member(json!({"apiEndpoint": "https://127.0.0.1:6443", "region": "us_east"})),
        "/spec/region",
    );
    assert_rejected(
        &member(json!({"apiEndpoint": "https://127.0.0.1:6443", "healthCheck": {"periodSeconds": 0}})),
        "/spec/healthCheck/periodSeconds",
    );
}

/// The schema patterns and the Rust validators of `names` agree on every
/// edge case (one rule, two encodings).
#[test]
fn name_patterns_agree_with_the_rust_validators() {
    let compile = |pattern: &str| {
        jsonschema::validator_for(&json!({"type": "string", "pattern": pattern, "maxLength": 253})).unwrap()
    };
    let hostname = compile(HOSTNAME_PATTERN);
    let owner = compile(OWNER_NAME_PATTERN);
    let label = compile(LABEL_PATTERN);
    let long_label = "a".repeat(63);
    let cases = [
        "example.com".to_owned(),
        "example.com.".to_owned(),
        "Example.COM".to_owned(),
        "a-b.c".to_owned(),
        "-a.c".to_owned(),
        "a-.c".to_owned(),
        "a..c".to_owned(),
        ".a".to_owned(),
        "_http._tcp.example.com".to_owned(),
        "_.example.com".to_owned(),
        "a_b.example.com".to_owned(),
        "*.example.com".to_owned(),
        "a.*.example.com".to_owned(),
        "bücher.example".to_owned(),
        "xn--bcher-kva.example".to_owned(),
        format!("{long_label}.com"),
        format!("{long_label}a.com"),
        format!("_{}.com", "a".repeat(62)),
        format!("_{long_label}.com"),
        "us-east-1a".to_owned(),
        "a".to_owned(),
    ];
    for case in &cases {
        let v = json!(case);
        assert_eq!(
            hostname.is_valid(&v),
            names::validate_hostname(case).is_ok(),
            "hostname {case:?}"
        );
        assert_eq!(
            owner.is_valid(&v),
            names::validate_owner_name(case).is_ok(),
            "owner name {case:?}"
        );
        assert_eq!(
            label.is_valid(&v),
            names::validate_label(case).is_ok(),
            "label {case:?}"
        );
    }
}

#[test]
fn schema_rejects_a_bad_health_check() {
    let check = |extra: Value| {
        let mut hc = json!({"protocol": "HTTP"});
        hc.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        service_record(json!({"domainRef": "myfed", "healthCheck": hc}))
    };
    let ok = check(json!({"port": 8080, "periodSeconds": 1, "expectedStatuses": ["200", "300-399"]}));
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));
    assert_rejected(&check(json!({"port": 0})), "/spec/healthCheck/port");
    assert_rejected(&check(json!({"periodSeconds": 0})), "/spec/healthCheck/periodSeconds");
    assert_rejected(
        &check(json!({"expectedStatuses": ["600"]})),
        "/spec/healthCheck/expectedStatuses/0",
    );
    assert_rejected(&check(json!({"protocol": "UDP"})), "/spec/healthCheck/protocol");
    assert_rejected(
        &service_record(json!({"domainRef": "myfed", "whenAllUnhealthy": "Sometimes"})),
        "/spec/whenAllUnhealthy",
    );
}

#[test]
fn schema_rejects_bad_routing_and_client_tables() {
    let ok = service_record(
        json!({"domainRef": "myfed", "routing": {"policy": "Weighted", "weights": {"east": 0, "us-west-2": 255}}}),
    );
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));
    for weight in [-1, 256] {
        let bad = service_record(
            json!({"domainRef": "myfed", "routing": {"policy": "Weighted", "weights": {"east": weight}}}),
        );
        assert_rejected(&bad, "/spec/routing/weights/east");
    }
    let bad = service_record(json!({"domainRef": "myfed", "routing": {"policy": "Random"}}));
    assert_rejected(&bad, "/spec/routing/policy");
    let bad = service_record(json!({"domainRef": "myfed", "routing": {"policy": "Failover", "priorities": [[]]}}));
    assert_rejected(&bad, "/spec/routing/priorities/0");
    let ok = service_record(json!({"domainRef": "myfed", "routing": {"policy": "Nearest", "fallback": ["us-east-1"]}}));
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));

    let domain = |spec: Value| {
        json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
               "metadata": {"name": "myfed", "namespace": "fedns-system"}, "spec": spec})
    };
    let ok = domain(json!({"domain": "example.com",
        "clientRegions": [{"cidr": "192.0.2.0/24", "region": "eu"}, {"cidr": "2001:db8::/32", "region": "us"}],
        "geoRegions": [{"region": "eu", "countries": ["DE"], "continents": ["EU"]}]}));
    assert!(schema_errors(&ok).is_empty(), "{:?}", schema_errors(&ok));
    let bad = domain(json!({"domain": "example.com", "clientRegions": [{"cidr": "eu", "region": "eu"}]}));
    assert_rejected(&bad, "/spec/clientRegions/0/cidr");
    let bad = domain(json!({"domain": "example.com", "geoRegions": [{"region": "eu", "countries": ["de"]}]}));
    assert_rejected(&bad, "/spec/geoRegions/0/countries/0");
    let bad = domain(json!({"domain": "example.com", "geoRegions": [{"region": "eu", "continents": ["XX"]}]}));
    assert_rejected(&bad, "/spec/geoRegions/0/continents/0");
}
