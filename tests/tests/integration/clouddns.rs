//! The google-clouddns provider against the Cloud DNS stand-in
//! (`fedns_standins::clouddns`, HTTP on 127.0.0.1, started by each test):
//! round trips of every record type fedns writes beside another owner's
//! records, idle syncs, a concurrent writer (412 → re-plan; 409 → held
//! back), throttling and 5xx retried, batches over 1,000, a zone quota, a
//! zone missing and wrong credentials. A contract test runs against the
//! real API only when `FEDNS_GCP_PROJECT`, `FEDNS_GCP_ZONE` and
//! credentials are set.

use std::time::Duration;

use fedns_providers::google_clouddns::{CloudDnsConfig, GoogleCloudDns, NAME};
use fedns_providers::plan::desired::DesiredZones;
use fedns_providers::provider::{ErrorScope, ProviderMetrics, SyncMode};
use fedns_standins::clouddns::{CloudDns, CloudDnsConfig as StandInConfig, Fault, Quota, RecordSet, Visibility};
use serde_json::{json, Value};

const PROJECT: &str = "fedns-test";
const ZONE: &str = "example";
const TOKEN: &str = "clouddns-test-token";

async fn stand_in() -> CloudDns {
    let dns = CloudDns::start(StandInConfig {
        projects: vec![PROJECT.into()],
        tokens: vec![TOKEN.into()],
        change_delay: Duration::from_millis(50),
        ..StandInConfig::default()
    })
    .await
    .expect("stand-in starts");
    dns.create_zone(PROJECT, ZONE, "example.com.", Visibility::Public)
        .expect("zone");
    dns
}

fn provider(dns: &CloudDns, tweak: impl FnOnce(&mut CloudDnsConfig)) -> GoogleCloudDns {
    let mut config = CloudDnsConfig {
        project: Some(PROJECT.into()),
        endpoint: Some(dns.url()),
        access_token: Some(TOKEN.into()),
        requests_per_second: 200.0,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        change_wait: Duration::from_secs(10),
        ..CloudDnsConfig::default()
    };
    tweak(&mut config);
    GoogleCloudDns::new(config, ProviderMetrics::default())
}

fn desired(endpoints: Value) -> DesiredZones {
    fedns_e2e::desired("example.com", endpoints)
}

/// The record set `name` (absolute) of type `t` in the zone.
fn get(dns: &CloudDns, name: &str, t: &str) -> Option<RecordSet> {
    dns.record_sets(PROJECT, ZONE)
        .expect("zone")
        .into_iter()
        .find(|s| s.name == name && s.rtype == t)
}

fn rrdatas(dns: &CloudDns, name: &str, t: &str) -> Vec<String> {
    let mut values = get(dns, name, t).map(|s| s.rrdatas).unwrap_or_default();
    values.sort();
    values
}

/// An external-dns registry value, as its TXT registry writes it.
fn external_dns_owner(owner: &str) -> String {
    format!("\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=service/default/app\"")
}

fn routed(name: &str, set: &str, target: &str, props: Value) -> Value {
    json!({"dnsName": name, "recordType": "A", "recordTTL": 30, "targets": [target],
           "setIdentifier": set, "providerSpecific": props})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_round_trips_every_record_type_beside_other_owners() {
    let dns = stand_in().await;
    // external-dns owns app's A record set; a CNAME was made by hand.
    for set in [
        RecordSet::new("app.example.com.", "A", 300, &["198.51.100.1"]),
        RecordSet::new("a-app.example.com.", "TXT", 300, &[&external_dns_owner("cluster-b")]),
        RecordSet::new("manual.example.com.", "CNAME", 300, &["elsewhere.example.net."]),
    ] {
        dns.write_record_set(PROJECT, ZONE, set).expect("other writer");
    }
    let foreign_before: Vec<RecordSet> = dns
        .record_sets(PROJECT, ZONE)
        .unwrap()
        .into_iter()
        .filter(|s| s.name.contains("app.") || s.name.contains("manual."))
        .collect();

    let clouddns = provider(&dns, |_| {});
    let fixture = desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "recordTTL": 30, "targets": ["2001:db8::10"]},
        {"dnsName": "nginx.ns.myfed.svc.europe-west1.example.com", "recordType": "CNAME", "recordTTL": 30, "targets": ["nginx.ns.myfed.svc.example.com"]},
        {"dnsName": "info.example.com", "recordType": "TXT", "recordTTL": 60, "targets": ["hello \"world\"", "\"v=spf1 -all\""]},
        {"dnsName": "app.example.com", "recordType": "A", "targets": ["203.0.113.99"]},
        {"dnsName": "manual.example.com", "recordType": "A", "targets": ["203.0.113.98"]},
        routed("w.example.com", "east", "203.0.113.1", json!([{"name": "aws/weight", "value": "1"}])),
        routed("w.example.com", "west", "203.0.113.2", json!([{"name": "aws/weight", "value": "3"}])),
        routed("n.example.com", "east", "203.0.113.1", json!([{"name": "fedns/nearest-region", "value": "us-east1"}])),
        routed("n.example.com", "eu", "203.0.113.3", json!([{"name": "fedns/nearest-region", "value": "europe-west1"}])),
        // A public zone's primaryBackup needs a health check (the short
        // form is expanded to its URL).
        routed("f.example.com", "east", "203.0.113.1", json!([{"name": "aws/failover", "value": "PRIMARY"}, {"name": "google/health-check", "value": "projects/fedns-test/global/healthChecks/hc"}])),
        routed("f.example.com", "west", "203.0.113.2", json!([{"name": "aws/failover", "value": "SECONDARY"}])),
        routed("lab.example.com", "east", "203.0.113.1", json!([{"name": "fedns/nearest-region", "value": "us-east1"}])),
        routed("lab.example.com", "lab", "203.0.113.9", json!([{"name": "fedns/nearest-region", "value": "basement"}])),
    ]));
    let report = clouddns.sync_all(&fixture, SyncMode::Changed).await;
    println!("first sync: {report:?}");
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    let mut conflicts: Vec<&str> = report.conflicts.iter().map(|(r, _)| r.name.as_str()).collect();
    conflicts.sort();
    assert_eq!(conflicts, ["app.example.com", "manual.example.com"]);
    assert_eq!(report.downgraded.len(), 1, "{report:?}");
    assert_eq!(report.downgraded[0].0, "lab.example.com");
    assert!(report.downgraded[0].2.contains("basement"), "{report:?}");

    let nginx = "nginx.ns.myfed.svc.example.com.";
    assert_eq!(rrdatas(&dns, nginx, "A"), ["198.51.100.20", "203.0.113.10"]);
    assert_eq!(get(&dns, nginx, "A").unwrap().ttl, 30);
    assert_eq!(rrdatas(&dns, nginx, "AAAA"), ["2001:db8::10"]);
    assert_eq!(
        rrdatas(&dns, "a-nginx.ns.myfed.svc.example.com.", "TXT"),
        ["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/service-nginx\""]
    );
    assert_eq!(
        rrdatas(&dns, "nginx.ns.myfed.svc.europe-west1.example.com.", "CNAME"),
        ["nginx.ns.myfed.svc.example.com."]
    );
    assert_eq!(
        rrdatas(&dns, "info.example.com.", "TXT"),
        ["\"hello \\\"world\\\"\"", "\"v=spf1 -all\""]
    );
    let policy = |name: &str| get(&dns, name, "A").and_then(|s| s.routing_policy).expect("routed");
    let wrr = policy("w.example.com.");
    assert_eq!(wrr["wrr"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(wrr["wrr"]["items"][1]["weight"], 3.0);
    let geo = policy("n.example.com.");
    assert_eq!(geo["geo"]["items"][0]["location"], "europe-west1");
    assert_eq!(geo["geo"]["items"][1]["rrdatas"], json!(["203.0.113.1"]));
    let pb = policy("f.example.com.");
    assert_eq!(
        pb["healthCheck"],
        "https://www.googleapis.com/compute/v1/projects/fedns-test/global/healthChecks/hc"
    );
    assert_eq!(
        pb["primaryBackup"]["primaryTargets"]["externalEndpoints"],
        json!(["203.0.113.1"])
    );
    assert_eq!(
        pb["primaryBackup"]["backupGeoTargets"]["items"][0]["rrdatas"],
        json!(["203.0.113.2"])
    );
    assert_eq!(rrdatas(&dns, "lab.example.com.", "A"), ["203.0.113.1", "203.0.113.9"]);
    // The other owners' records are as they were.
    let foreign_after: Vec<RecordSet> = dns
        .record_sets(PROJECT, ZONE)
        .unwrap()
        .into_iter()
        .filter(|s| s.name.contains("app.") || s.name.contains("manual."))
        .collect();
    assert_eq!(foreign_before, foreign_after);

    // Idle: no call at all; a full resync reads and writes nothing.
    let calls = clouddns.metrics().api_calls_total(NAME);
    let again = clouddns.sync_all(&fixture, SyncMode::Changed).await;
    assert_eq!(clouddns.metrics().api_calls_total(NAME), calls);
    assert_eq!(again.conflicts.len(), 2);
    let full = clouddns.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((full.writes, full.changes), (0, 0), "{full:?}");
    assert_eq!(full.downgraded.len(), 1);

    // A new weight: one change replaces the whole policy; removing names
    // deletes them and their registry records, nothing else.
    let fewer = desired(json!([
        routed(
            "w.example.com",
            "east",
            "203.0.113.1",
            json!([{"name": "aws/weight", "value": "2"}])
        ),
        routed(
            "w.example.com",
            "west",
            "203.0.113.2",
            json!([{"name": "aws/weight", "value": "3"}])
        ),
    ]));
    let report = clouddns.sync_all(&fewer, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(policy("w.example.com.")["wrr"]["items"][0]["weight"], 2.0);
    assert!(get(&dns, nginx, "A").is_none());
    assert!(get(&dns, "a-nginx.ns.myfed.svc.example.com.", "TXT").is_none());
    assert!(get(&dns, "info.example.com.", "TXT").is_none());
    assert_eq!(rrdatas(&dns, "app.example.com.", "A"), ["198.51.100.1"]);
    assert!(get(&dns, "manual.example.com.", "CNAME").is_some());
}

/// Another writer changes fedns's record set between fedns's read and its
/// change: the exact-match deletion fails (412), fedns reads the zone
/// again and plans again. Another writer creating a name fedns is about to
/// create (409) keeps it: fedns reports a conflict and never overwrites.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_concurrent_writer_gets_a_replan_never_an_overwrite() {
    let dns = stand_in().await;
    let clouddns = provider(&dns, |_| {});
    let first = desired(json!([
        {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.1"]},
    ]));
    let report = clouddns.sync_all(&first, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");

    // Every request now waits 400 ms before it is handled: once the
    // change has arrived (after the list), the other writer acts.
    let second = desired(json!([
        {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.2"]},
        {"dnsName": "new.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.3"]},
    ]));
    dns.set_latency(Duration::from_millis(400));
    let before = dns.requests();
    let sync = tokio::spawn({
        let second = second.clone();
        async move { clouddns.sync_all(&second, SyncMode::Changed).await }
    });
    // Requests: the record-set list, then the change.
    while dns.requests() < before + 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    dns.write_record_set(
        PROJECT,
        ZONE,
        RecordSet::new("www.example.com.", "A", 120, &["198.51.100.7"]),
    )
    .unwrap();
    dns.write_record_set(
        PROJECT,
        ZONE,
        RecordSet::new("new.example.com.", "A", 300, &["198.51.100.8"]),
    )
    .unwrap();
    dns.set_latency(Duration::ZERO);
    let report = sync.await.unwrap();
    println!("{report:?}");
    // The refused change, then a second list and change.
    assert!(dns.requests() >= before + 4, "{} requests", dns.requests() - before);
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    // www is still fedns's (its registry record says so): planned again
    // from what the other writer left, and replaced.
    assert_eq!(rrdatas(&dns, "www.example.com.", "A"), ["192.0.2.2"]);
    assert_eq!(get(&dns, "www.example.com.", "A").unwrap().ttl, 30);
    // new was taken meanwhile by a record with no owner: held back.
    assert_eq!(rrdatas(&dns, "new.example.com.", "A"), ["198.51.100.8"]);
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].0.name, "new.example.com");
    assert!(get(&dns, "a-new.example.com.", "TXT").is_none());

    // With no re-plan left, the refused change is reported on its name
    // with what happened, and the other writer's record set stays.
    let strict = provider(&dns, |c| c.max_replans = 0);
    let third = desired(json!([
        {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.4"]},
    ]));
    dns.set_latency(Duration::from_millis(400));
    let before = dns.requests();
    let sync = tokio::spawn(async move { strict.sync_all(&third, SyncMode::Changed).await });
    // Requests: the zone lookup, the record-set list, then the change.
    while dns.requests() < before + 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    dns.write_record_set(
        PROJECT,
        ZONE,
        RecordSet::new("www.example.com.", "A", 30, &["198.51.100.9"]),
    )
    .unwrap();
    dns.set_latency(Duration::ZERO);
    let report = sync.await.unwrap();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.rejected.len(), 1, "{report:?}");
    assert_eq!(report.rejected[0].0, "www.example.com");
    assert!(
        report.rejected[0].2.contains("another writer") && report.rejected[0].2.contains("412"),
        "{report:?}"
    );
    assert_eq!(rrdatas(&dns, "www.example.com.", "A"), ["198.51.100.9"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_throttling_and_server_errors_are_retried_then_reported() {
    let dns = stand_in().await;
    let clouddns = provider(&dns, |c| c.max_attempts = 6);
    let fixture = desired(json!([
        {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.1"]},
    ]));
    dns.fail_next(Fault::RateLimited, 2);
    dns.fail_next(Fault::Internal, 1);
    dns.fail_next(Fault::Unavailable, 1);
    let report = clouddns.sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(rrdatas(&dns, "www.example.com.", "A"), ["192.0.2.1"]);

    // Retries exhausted: the zone's error says what Cloud DNS answered,
    // and the next sync, once it recovers, applies the change.
    let changed = desired(json!([
        {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.2"]},
    ]));
    dns.set_fault_rate(Fault::Unavailable, 1.0);
    let report = clouddns.sync_all(&changed, SyncMode::Changed).await;
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert_eq!(report.errors[0].0, ErrorScope::Zone("example.com".into()));
    assert!(report.errors[0].1.contains("503"), "{report:?}");
    dns.clear_faults();
    let report = clouddns.sync_all(&changed, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(rrdatas(&dns, "www.example.com.", "A"), ["192.0.2.2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_batches_over_1000_and_a_zone_quota_reported_per_name() {
    let dns = stand_in().await;
    let clouddns = provider(&dns, |_| {});
    let endpoints: Vec<Value> = (0..1500)
        .map(|i| json!({"dnsName": format!("n{i:04}.example.com"), "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.1"]}))
        .collect();
    let report = clouddns
        .sync_all(&desired(Value::Array(endpoints)), SyncMode::Changed)
        .await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    // 3,000 additions (record sets and registry records): three changes.
    assert_eq!(report.writes, 3, "{report:?}");
    assert_eq!(report.changes, 1500);
    let sets = dns.record_sets(PROJECT, ZONE).unwrap();
    assert_eq!(sets.len(), 2 + 3000);
    let api_changes = dns
        .changes(PROJECT, ZONE)
        .unwrap()
        .into_iter()
        .filter(|c| c.from_api)
        .count();
    assert_eq!(api_changes, 3);

    // A zone that holds at most 3,010 record sets: the names that fit are
    // published, the others are reported one by one.
    dns.set_quota(Quota {
        rrsets_per_managed_zone: 3010,
        ..Quota::default()
    });
    // Ten more names: four fit (eight record sets), six do not.
    let more: Vec<Value> = (0..1500)
        .map(|i| format!("n{i:04}.example.com"))
        .chain((0..10).map(|i| format!("m{i}.example.com")))
        .map(|name| json!({"dnsName": name, "recordType": "A", "recordTTL": 30, "targets": ["192.0.2.1"]}))
        .collect();
    let report = clouddns.sync_all(&desired(Value::Array(more)), SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(dns.record_sets(PROJECT, ZONE).unwrap().len(), 3010);
    assert_eq!(report.rejected.len(), 6, "{:?}", report.rejected);
    assert!(report.rejected[0].2.contains("quota"), "{:?}", report.rejected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_a_missing_zone_and_wrong_credentials_are_clear_errors() {
    let dns = stand_in().await;
    let clouddns = provider(&dns, |_| {});
    let other = fedns_e2e::desired(
        "example.org",
        json!([{"dnsName": "www.example.org", "recordType": "A", "targets": ["192.0.2.1"]}]),
    );
    let report = clouddns.sync_all(&other, SyncMode::Changed).await;
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(
        report.errors[0]
            .1
            .contains("no Cloud DNS managed zone has dnsName example.org."),
        "{report:?}"
    );
    let named = provider(&dns, |c| c.zones = vec!["nope".into()]);
    let fixture = desired(json!([{"dnsName": "www.example.com", "recordType": "A", "targets": ["192.0.2.1"]}]));
    let report = named.sync_all(&fixture, SyncMode::Changed).await;
    assert!(
        report.errors[0].1.contains("--google-zone") && report.errors[0].1.contains("404"),
        "{report:?}"
    );

    // A token Cloud DNS does not accept: 401, naming the source.
    let wrong = provider(&dns, |c| c.access_token = Some("not-a-token".into()));
    let report = wrong.sync_all(&fixture, SyncMode::Changed).await;
    assert_eq!(report.errors.len(), 1, "{report:?}");
    let message = &report.errors[0].1;
    assert!(
        message.contains("401") && message.contains("GOOGLE_OAUTH_ACCESS_TOKEN"),
        "{message}"
    );

    // A service-account key file that is no key: the library refuses it,
    // and the error names the file.
    let dir = std::env::temp_dir().join(format!("fedns-clouddns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("key.json");
    std::fs::write(
        &key,
        json!({"type": "service_account", "client_email": "fedns@p.iam.gserviceaccount.com",
               "private_key": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
               "private_key_id": "1", "project_id": "p", "token_uri": "http://127.0.0.1:9/token"})
        .to_string(),
    )
    .unwrap();
    // The only test in this binary that reads Application Default
    // Credentials; every other one gives a token.
    std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &key);
    let adc = provider(&dns, |c| c.access_token = None);
    let report = adc.sync_all(&fixture, SyncMode::Changed).await;
    std::env::remove_var("GOOGLE_APPLICATION_CREDENTIALS");
    assert_eq!(report.errors.len(), 1, "{report:?}");
    let message = &report.errors[0].1;
    println!("{message}");
    assert!(
        message.contains("service-account key at") && message.contains("key.json"),
        "{message}"
    );
    assert!(get(&dns, "www.example.com.", "A").is_none());
}

/// Against the real Cloud DNS API, only when `FEDNS_GCP_PROJECT` (the
/// project), `FEDNS_GCP_ZONE` (the `dnsName` of a managed zone in it that
/// fedns may write a test name into, e.g. `example.com`) and credentials
/// (`GOOGLE_APPLICATION_CREDENTIALS`, `GOOGLE_OAUTH_ACCESS_TOKEN`, or
/// `FEDNS_GCP_METADATA=1` on GCP) are set: publishes a weighted name and a
/// TXT under a random label, syncs again (nothing to write: the real API
/// echoes what fedns wrote), removes them. Skipped otherwise, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_contract_against_the_real_api() {
    let (Ok(project), Ok(apex)) = (std::env::var("FEDNS_GCP_PROJECT"), std::env::var("FEDNS_GCP_ZONE")) else {
        println!("skipped: set FEDNS_GCP_PROJECT and FEDNS_GCP_ZONE (a managed zone's dnsName) and Google credentials to run it");
        return;
    };
    let credentials = [
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        "FEDNS_GCP_METADATA",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if !credentials {
        println!("skipped: no Google credentials (GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_OAUTH_ACCESS_TOKEN, or FEDNS_GCP_METADATA=1 on GCP)");
        return;
    }
    let clouddns = GoogleCloudDns::new(
        CloudDnsConfig {
            project: Some(project),
            access_token: std::env::var("GOOGLE_OAUTH_ACCESS_TOKEN").ok(),
            owner_id: "fedns-contract-test".into(),
            ..CloudDnsConfig::default()
        },
        ProviderMetrics::default(),
    );
    let apex = apex.trim_end_matches('.').to_owned();
    let label = format!("fedns-contract-{}", std::process::id());
    let fixture = fedns_e2e::desired(
        &apex,
        json!([
            routed(&format!("{label}.{apex}"), "a", "192.0.2.1", json!([{"name": "aws/weight", "value": "1"}])),
            routed(&format!("{label}.{apex}"), "b", "192.0.2.2", json!([{"name": "aws/weight", "value": "2"}])),
            {"dnsName": format!("t.{label}.{apex}"), "recordType": "TXT", "targets": ["\"contract\" \"test\""]},
        ]),
    );
    let report = clouddns.sync_all(&fixture, SyncMode::Full).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    let again = clouddns.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!(again.writes, 0, "the real API echoes what fedns wrote: {again:?}");
    let empty = fedns_e2e::desired(&apex, json!([]));
    let removed = clouddns.sync_all(&empty, SyncMode::Full).await;
    assert!(removed.errors.is_empty(), "{removed:?}");
}

/// A hostile tenant (`fedns_e2e::tenancy`): after publishing with the
/// attacker's DNSEndpoints, the managed zone holds exactly what it held
/// with the victim alone, and every attempt is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_a_hostile_tenant_changes_nothing() {
    use fedns_e2e::tenancy;
    let dns = stand_in().await;
    let clouddns = provider(&dns, |_| {});
    let report = clouddns.sync_all(&tenancy::desired(false), SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    let before = dns.record_sets(PROJECT, ZONE).expect("zone");
    let attacked = tenancy::desired(true);
    let refusals = tenancy::assert_every_attempt_refused(&attacked);
    let report = clouddns.sync_all(&attacked, SyncMode::Full).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    let after = dns.record_sets(PROJECT, ZONE).expect("zone");
    println!("refused:\n{}", refusals.join("\n"));
    assert_eq!(
        format!("{after:?}"),
        format!("{before:?}"),
        "the managed zone is unchanged"
    );
    assert!(after.iter().any(|s| s.name == format!("{}.", tenancy::VICTIM_SERVICE)));
}
