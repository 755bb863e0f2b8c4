//! The route53 provider against moto's Route53 API (started on loopback by
//! each test), with a fault-injecting proxy in between: round trips beside
//! another owner's records, idle syncs that make no call, thousands of
//! changes in batches, a refused change isolated, throttling and server
//! errors retried without losing a change, and zone lookup errors.

use std::time::{Duration, Instant};

use aws_sdk_route53::types::{Change, ChangeAction, ChangeBatch, RrType};
use fedns_e2e::fault_proxy::{FaultProxy, Faults};
use fedns_e2e::moto::{self, Moto, ACCESS_KEY, SECRET_KEY};
use fedns_providers::plan::desired::DesiredZones;
use fedns_providers::provider::{ProviderMetrics, SyncMode};
use fedns_providers::route53::{Route53, Route53Config, NAME};
use serde_json::{json, Value};

fn provider(endpoint: &str, tweak: impl FnOnce(&mut Route53Config)) -> Route53 {
    let mut config = Route53Config {
        endpoint: Some(endpoint.into()),
        region: Some("us-east-1".into()),
        static_credentials: Some((ACCESS_KEY.into(), SECRET_KEY.into())),
        requests_per_second: 50.0,
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        ..Route53Config::default()
    };
    tweak(&mut config);
    Route53::new(config, ProviderMetrics::default())
}

fn desired(endpoints: Value) -> DesiredZones {
    fedns_e2e::desired("example.com", endpoints)
}

/// Values of one RRset in the zone (empty: absent).
async fn values(admin: &aws_sdk_route53::Client, zone: &str, name: &str, t: &str) -> Vec<String> {
    moto::records(admin, zone)
        .await
        .into_iter()
        .find(|(n, rt, _, _)| n == name && rt == t)
        .map(|(_, _, _, v)| v)
        .unwrap_or_default()
}

/// Every record set of hosted zone `zone` (one page: these tests' zones
/// are small).
async fn record_sets(admin: &aws_sdk_route53::Client, zone: &str) -> Vec<aws_sdk_route53::types::ResourceRecordSet> {
    admin
        .list_resource_record_sets()
        .hosted_zone_id(zone)
        .send()
        .await
        .unwrap()
        .resource_record_sets()
        .to_vec()
}

fn changes_seen(proxy: &FaultProxy, since: usize) -> usize {
    proxy.seen()[since..]
        .iter()
        .filter(|s| s.operation == "change_records")
        .count()
}

const EXTERNAL_DNS_OWNER: &str =
    "\"heritage=external-dns,external-dns/owner=cluster-b,external-dns/resource=service/default/app\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_beside_records_of_other_owners() {
    let moto = Moto::start();
    let proxy = FaultProxy::start(&moto.url()).await;
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    moto::create_records(
        &admin,
        &zone,
        &[
            ("app.example.com", "A", "198.51.100.1"),
            ("a-app.example.com", "TXT", EXTERNAL_DNS_OWNER),
            ("manual.example.com", "CNAME", "elsewhere.example.net."),
        ],
    )
    .await;
    let foreign = |records: Vec<(String, String, i64, Vec<String>)>| -> Vec<_> {
        records
            .into_iter()
            .filter(|(n, _, _, _)| n.contains("app.example.com") || n.contains("manual"))
            .collect()
    };
    let foreign_before = foreign(moto::records(&admin, &zone).await);
    assert_eq!(foreign_before.len(), 3);

    let route53 = provider(&proxy.url(), |_| {});
    let fixture = desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "recordTTL": 30, "targets": ["2001:db8::10"]},
        {"dnsName": "nginx.ns.myfed.svc.us-west-2.example.com", "recordType": "CNAME", "recordTTL": 30, "targets": ["nginx.ns.myfed.svc.example.com"]},
        {"dnsName": "info.example.com", "recordType": "TXT", "recordTTL": 60, "targets": ["hello \"world\""]},
        {"dnsName": "lb.example.com", "recordType": "CNAME", "targets": ["my-lb-1.us-east-1.elb.amazonaws.com"],
         "providerSpecific": [{"name": "alias", "value": "true"}, {"name": "aws/evaluate-target-health", "value": "true"}]},
        {"dnsName": "app.example.com", "recordType": "A", "targets": ["203.0.113.99"]},
        {"dnsName": "manual.example.com", "recordType": "A", "targets": ["203.0.113.98"]},
    ]));
    let started = Instant::now();
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    println!("first sync: {:?}, {report:?}", started.elapsed());
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(report.changes, 5);
    let mut conflicts: Vec<&str> = report.conflicts.iter().map(|(r, _)| r.name.as_str()).collect();
    conflicts.sort();
    assert_eq!(conflicts, ["app.example.com", "manual.example.com"]);

    let nginx = "nginx.ns.myfed.svc.example.com";
    assert_eq!(
        values(&admin, &zone, nginx, "A").await,
        ["198.51.100.20", "203.0.113.10"]
    );
    assert_eq!(values(&admin, &zone, nginx, "AAAA").await, ["2001:db8::10"]);
    assert_eq!(
        values(&admin, &zone, "a-nginx.ns.myfed.svc.example.com", "TXT").await,
        ["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/service-nginx\""]
    );
    assert_eq!(
        values(&admin, &zone, "nginx.ns.myfed.svc.us-west-2.example.com", "CNAME").await,
        ["nginx.ns.myfed.svc.example.com."]
    );
    assert_eq!(
        values(&admin, &zone, "info.example.com", "TXT").await,
        ["\"hello \\\"world\\\"\""]
    );
    assert_eq!(
        values(&admin, &zone, "lb.example.com", "A").await,
        ["ALIAS my-lb-1.us-east-1.elb.amazonaws.com. Z35SXDOTRQ7X7K"]
    );
    assert_eq!(foreign(moto::records(&admin, &zone).await), foreign_before);

    // Idle: no API call at all, and the findings are still reported.
    let (seen, calls) = (proxy.count(), route53.metrics().api_calls_total(NAME));
    let idle = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert_eq!(proxy.count(), seen, "an idle sync made API calls");
    assert_eq!(route53.metrics().api_calls_total(NAME), calls);
    assert_eq!((idle.writes, idle.conflicts.len()), (0, 2), "{idle:?}");

    // A full resync reads, finds nothing to change, writes nothing.
    let seen = proxy.count();
    let full = route53.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((full.writes, full.errors.len()), (0, 0), "{full:?}");
    assert!(proxy.count() > seen);
    assert_eq!(changes_seen(&proxy, seen), 0);

    // Update one RRset (UPSERT), delete another (with its registry record).
    let changed = desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.11"]},
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "recordTTL": 30, "targets": ["2001:db8::10"]},
        {"dnsName": "nginx.ns.myfed.svc.us-west-2.example.com", "recordType": "CNAME", "recordTTL": 30, "targets": ["nginx.ns.myfed.svc.example.com"]},
        {"dnsName": "lb.example.com", "recordType": "CNAME", "targets": ["my-lb-1.us-east-1.elb.amazonaws.com"],
         "providerSpecific": [{"name": "alias", "value": "true"}, {"name": "aws/evaluate-target-health", "value": "true"}]},
    ]));
    let seen = proxy.count();
    let report = route53.sync_all(&changed, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!((report.changes, report.writes), (2, 1), "{report:?}");
    // Planned against what the last sync left, not a new listing of the
    // zone (which costs a request per 300 record sets).
    let listings = proxy.seen()[seen..]
        .iter()
        .filter(|s| s.operation == "list_records")
        .count();
    assert_eq!(listings, 0, "a change-driven sync listed the zone again");
    assert_eq!(values(&admin, &zone, nginx, "A").await, ["203.0.113.11"]);
    assert!(values(&admin, &zone, "info.example.com", "TXT").await.is_empty());
    assert!(values(&admin, &zone, "txt-info.example.com", "TXT").await.is_empty());
    assert_eq!(foreign(moto::records(&admin, &zone).await), foreign_before);

    // Drift (our record deleted behind our back) is repaired by the full
    // resync, not by change-driven syncs.
    let held = admin
        .list_resource_record_sets()
        .hosted_zone_id(&zone)
        .start_record_name(format!("{nginx}."))
        .start_record_type(RrType::A)
        .max_items(1)
        .send()
        .await
        .unwrap()
        .resource_record_sets()[0]
        .clone();
    admin
        .change_resource_record_sets()
        .hosted_zone_id(&zone)
        .change_batch(
            ChangeBatch::builder()
                .changes(
                    Change::builder()
                        .action(ChangeAction::Delete)
                        .resource_record_set(held)
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(route53.sync_all(&changed, SyncMode::Changed).await.writes, 0);
    let repaired = route53.sync_all(&changed, SyncMode::Full).await;
    assert_eq!((repaired.writes, repaired.changes), (1, 1), "{repaired:?}");
    assert_eq!(values(&admin, &zone, nginx, "A").await, ["203.0.113.11"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_changes_go_in_batches_within_quotas() {
    let moto = Moto::start();
    let proxy = FaultProxy::start(&moto.url()).await;
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&proxy.url(), |_| {});

    let endpoints: Vec<Value> = (0..2500)
        .map(|i| json!({"dnsName": format!("h{i}.example.com"), "recordType": "A", "targets": [format!("10.0.{}.{}", i / 250, i % 250)]}))
        .collect();
    let many = desired(Value::Array(endpoints));
    let started = Instant::now();
    let report = route53.sync_all(&many, SyncMode::Changed).await;
    let batches = changes_seen(&proxy, 0);
    println!(
        "2,500 RRsets created in {:?}: {} requests ({batches} change batches)",
        started.elapsed(),
        proxy.count()
    );
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(report.changes, 2500);
    assert!(batches >= 3, "{batches} batches");
    assert_eq!(report.writes, batches);
    let records = moto::records(&admin, &zone).await;
    assert_eq!(records.iter().filter(|r| r.1 == "A").count(), 2500);
    assert_eq!(records.iter().filter(|r| r.1 == "TXT").count(), 2500);

    // And all of them go again, in batches.
    let seen = proxy.count();
    let started = Instant::now();
    let report = route53.sync_all(&desired(json!([])), SyncMode::Changed).await;
    println!(
        "2,500 RRsets deleted in {:?}: {} change batches",
        started.elapsed(),
        changes_seen(&proxy, seen)
    );
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.changes, 2500);
    assert!(changes_seen(&proxy, seen) >= 3);
    let left: Vec<String> = moto::records(&admin, &zone).await.into_iter().map(|r| r.1).collect();
    assert_eq!(left, ["NS", "SOA"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_change_is_isolated_and_the_rest_applied() {
    let moto = Moto::start();
    let proxy = FaultProxy::start(&moto.url()).await;
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&proxy.url(), |_| {});
    proxy.set_faults(Faults {
        poison: Some("poison.example.com".into()),
        ..Faults::default()
    });
    let mut endpoints: Vec<Value> = (0..39)
        .map(|i| json!({"dnsName": format!("ok{i}.example.com"), "recordType": "A", "targets": ["192.0.2.1"]}))
        .collect();
    endpoints.push(json!({"dnsName": "poison.example.com", "recordType": "A", "targets": ["192.0.2.2"]}));
    let fixture = desired(Value::Array(endpoints));
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    let requests = changes_seen(&proxy, 0);
    println!("one refused change among 40: {requests} change requests, {report:?}");
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.changes, 39);
    assert_eq!(report.rejected.len(), 1, "{report:?}");
    assert_eq!(report.rejected[0].0, "poison.example.com");
    assert!(report.rejected[0].2.contains("not permitted"), "{report:?}");
    // Halving: at most two requests per level, log2(40) < 6 levels.
    assert!(requests <= 13, "{requests} requests");
    let records = moto::records(&admin, &zone).await;
    assert_eq!(records.iter().filter(|r| r.1 == "A").count(), 39);
    assert!(values(&admin, &zone, "poison.example.com", "A").await.is_empty());

    // Not retried on every change-driven sync (it would fail again), but
    // still reported; the full resync retries it and, once Route53 takes
    // it, publishes it.
    let seen = proxy.count();
    let again = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert_eq!((proxy.count(), again.rejected.len()), (seen, 1));
    proxy.set_faults(Faults::default());
    let full = route53.sync_all(&fixture, SyncMode::Full).await;
    assert!(full.rejected.is_empty() && full.errors.is_empty(), "{full:?}");
    assert_eq!(values(&admin, &zone, "poison.example.com", "A").await, ["192.0.2.2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_and_server_errors_are_retried_with_bounds_and_nothing_is_lost() {
    let moto = Moto::start();
    let proxy = FaultProxy::start(&moto.url()).await;
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&proxy.url(), |c| c.max_attempts = 6);
    let fixture = |n: usize| {
        desired(Value::Array(
            (0..n)
                .map(|i| json!({"dnsName": format!("r{i}.example.com"), "recordType": "A", "targets": ["192.0.2.1"]}))
                .collect(),
        ))
    };

    // Five failures in a row (Throttling, PriorRequestNotComplete, 429,
    // 503, 500) are absorbed by the sixth attempt.
    proxy.set_faults(Faults {
        throttle_next: 1,
        prior_request_next: 1,
        fail_next: vec![429, 503, 500],
        ..Faults::default()
    });
    let started = Instant::now();
    let report = route53.sync_all(&fixture(10), SyncMode::Changed).await;
    let injected = proxy.seen().iter().filter(|s| s.injected.is_some()).count();
    println!("sync through {injected} injected failures took {:?}", started.elapsed());
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(injected, 5);
    assert_eq!(report.changes, 10);

    // Throttled for good: each request gives up after max_attempts, the
    // sync reports it, and nothing is half-done.
    proxy.set_faults(Faults {
        throttle_all: true,
        ..Faults::default()
    });
    let seen = proxy.count();
    let report = route53.sync_all(&fixture(20), SyncMode::Changed).await;
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].1.contains("Throttling"), "{report:?}");
    assert_eq!(proxy.count() - seen, 6, "attempts of the one request tried");

    // Once the throttling stops, the next sync applies every change.
    proxy.set_faults(Faults::default());
    let report = route53.sync_all(&fixture(20), SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.changes, 10);
    let records = moto::records(&admin, &zone).await;
    assert_eq!(records.iter().filter(|r| r.1 == "A").count(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosted_zones_are_found_by_name_or_given_by_id() {
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let fixture = desired(json!([{"dnsName": "www.example.com", "recordType": "A", "targets": ["192.0.2.1"]}]));

    let report = provider(&moto.url(), |_| {})
        .sync_all(&fixture, SyncMode::Changed)
        .await;
    assert!(
        report.errors[0]
            .1
            .contains("no Route53 hosted zone is named example.com"),
        "{report:?}"
    );
    // With nothing to publish there (a deleted Domain's zone), a missing
    // hosted zone holds nothing of ours: no error, so the Domain can go.
    let empty = desired(json!([]));
    let report = provider(&moto.url(), |_| {}).sync_all(&empty, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{report:?}");

    // Two zones of that name (say public and private): ambiguous by name.
    let first = moto::create_zone(&admin, "example.com").await;
    let _second = moto::create_zone(&admin, "example.com").await;
    let report = provider(&moto.url(), |_| {})
        .sync_all(&fixture, SyncMode::Changed)
        .await;
    assert!(report.errors[0].1.contains("--route53-zone-id"), "{report:?}");

    // Nothing listening: a clear error, no panic.
    let closed = format!("http://127.0.0.1:{}", fedns_e2e::free_port());
    let report = provider(&closed, |_| {}).sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors[0].1.contains("listing hosted zones"), "{report:?}");
    println!("unreachable endpoint: {}", report.errors[0].1);

    let report = provider(&moto.url(), |c| c.zone_ids = vec![first.clone()])
        .sync_all(&fixture, SyncMode::Changed)
        .await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(values(&admin, &first, "www.example.com", "A").await, ["192.0.2.1"]);
}

/// TXT targets: a quoted target is presentation form and goes to
/// Route53 exactly as external-dns writes it; an unquoted one is one string
/// (split at 255 octets); a second sync changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txt_values_are_written_as_external_dns_writes_them() {
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&moto.url(), |_| {});
    let dkim = fedns_e2e::dkim_target();
    let long_plain = "k".repeat(300);
    let fixture = desired(json!([
        {"dnsName": "example-spf.example.com", "recordType": "TXT", "targets": [fedns_e2e::SPF_TARGET]},
        {"dnsName": "sel._domainkey.example.com", "recordType": "TXT", "targets": [dkim]},
        {"dnsName": "plain.example.com", "recordType": "TXT", "targets": [long_plain]},
    ]));
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(
        values(&admin, &zone, "example-spf.example.com", "TXT").await,
        [fedns_e2e::SPF_TARGET],
        "the value external-dns writes for the same target"
    );
    assert_eq!(values(&admin, &zone, "sel._domainkey.example.com", "TXT").await, [dkim]);
    assert_eq!(
        values(&admin, &zone, "plain.example.com", "TXT").await,
        [format!("\"{}\" \"{}\"", "k".repeat(255), "k".repeat(45))]
    );
    let again = route53.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((again.changes, again.errors.len()), (0, 0), "{again:?}");
}

/// Weighted, failover and latency record sets against moto, read back:
/// SetIdentifier, Weight, Failover, Region, and registry records with the
/// same set identifier; a Nearest name without AWS regions is published as
/// All and reported as downgraded; a second sync writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_policies_become_routing_record_sets() {
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&moto.url(), |_| {});
    let ep = |name: &str, set: &str, target: &str, props: Value| {
        json!({"dnsName": name, "recordType": "A", "recordTTL": 30, "targets": [target],
               "setIdentifier": set, "providerSpecific": props})
    };
    let fixture = desired(json!([
        ep(
            "w.example.com",
            "east",
            "203.0.113.1",
            json!([{"name": "aws/weight", "value": "1"}])
        ),
        ep(
            "w.example.com",
            "west",
            "203.0.113.2",
            json!([{"name": "aws/weight", "value": "3"}])
        ),
        ep(
            "f.example.com",
            "east",
            "203.0.113.1",
            json!([{"name": "aws/failover", "value": "PRIMARY"}])
        ),
        ep(
            "f.example.com",
            "west",
            "203.0.113.2",
            json!([{"name": "aws/failover", "value": "SECONDARY"}])
        ),
        ep(
            "n.example.com",
            "east",
            "203.0.113.1",
            json!([{"name": "fedns/nearest-region", "value": "us-east-1"}, {"name": "aws/region", "value": "us-east-1"}])
        ),
        ep(
            "n.example.com",
            "eu",
            "203.0.113.3",
            json!([{"name": "fedns/nearest-region", "value": "eu-west-1"}, {"name": "aws/region", "value": "eu-west-1"}])
        ),
        ep(
            "lab.example.com",
            "east",
            "203.0.113.1",
            json!([{"name": "fedns/nearest-region", "value": "us-east-1"}, {"name": "aws/region", "value": "us-east-1"}])
        ),
        ep(
            "lab.example.com",
            "lab",
            "203.0.113.9",
            json!([{"name": "fedns/nearest-region", "value": "basement"}])
        ),
    ]));
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(report.downgraded.len(), 1, "{report:?}");
    assert_eq!(report.downgraded[0].0, "lab.example.com");

    let sets = record_sets(&admin, &zone).await;
    let mut rows: Vec<String> = sets
        .iter()
        .filter(|s| s.set_identifier().is_some())
        .map(|s| {
            format!(
                "{} {} {} weight={:?} failover={:?} region={:?} {:?}",
                s.name(),
                s.r#type().as_str(),
                s.set_identifier().unwrap_or_default(),
                s.weight(),
                s.failover().map(|f| f.as_str().to_owned()),
                s.region().map(|r| r.as_str().to_owned()),
                s.resource_records()
                    .iter()
                    .map(|r| r.value().to_owned())
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    rows.sort();
    println!("{rows:#?}");
    for expected in [
        "w.example.com. A east weight=Some(1) failover=None region=None [\"203.0.113.1\"]",
        "w.example.com. A west weight=Some(3) failover=None region=None [\"203.0.113.2\"]",
        "f.example.com. A east weight=None failover=Some(\"PRIMARY\") region=None [\"203.0.113.1\"]",
        "f.example.com. A west weight=None failover=Some(\"SECONDARY\") region=None [\"203.0.113.2\"]",
        "n.example.com. A east weight=None failover=None region=Some(\"us-east-1\") [\"203.0.113.1\"]",
        "n.example.com. A eu weight=None failover=None region=Some(\"eu-west-1\") [\"203.0.113.3\"]",
    ] {
        assert!(rows.iter().any(|r| r == expected), "{expected} not in {rows:#?}");
    }
    // Registry records carry the same set identifier and policy.
    assert!(
        rows.iter()
            .any(|r| r.starts_with("a-w.example.com. TXT west weight=Some(3)") && r.contains("owner=fedns")),
        "{rows:#?}"
    );
    // The downgraded name is one plain record set with every member.
    assert_eq!(
        values(&admin, &zone, "lab.example.com", "A").await,
        ["203.0.113.1", "203.0.113.9"]
    );
    // Read back, nothing to change.
    let again = route53.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((again.writes, again.changes), (0, 0), "{again:?}");
    assert_eq!(again.downgraded.len(), 1);
}

/// Nearest with regions that are not AWS regions and a Domain geo table:
/// geolocation record sets (country, continent, default `*`), read back
/// from moto; a second sync writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nearest_becomes_geolocation_record_sets_from_the_domains_geo_table() {
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&moto.url(), |_| {});
    let domain: fedns_api::Domain = serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed", "namespace": "fedns-system"},
        "spec": {"domain": "example.com", "geoRegions": [
            {"region": "europe", "countries": ["DE"]},
            {"region": "americas", "continents": ["NA"]}]},
    }))
    .unwrap();
    let endpoint: fedns_api::DNSEndpoint = serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": "service-g", "namespace": "ns"},
        "spec": {"endpoints": [
            {"dnsName": "g.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.1"], "setIdentifier": "a",
             "providerSpecific": [{"name": "fedns/nearest-region", "value": "europe"}]},
            {"dnsName": "g.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.2"], "setIdentifier": "b",
             "providerSpecific": [{"name": "fedns/nearest-region", "value": "americas"}]},
        ]},
    }))
    .unwrap();
    let fixture = fedns_providers::plan::desired::desired_zones(&[domain], &[endpoint]);
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert!(report.downgraded.is_empty(), "{report:?}");
    let sets = record_sets(&admin, &zone).await;
    let mut rows: Vec<String> = sets
        .iter()
        .filter(|s| s.name() == "g.example.com." && s.set_identifier().is_some())
        .map(|s| {
            let geo = s.geo_location().unwrap();
            format!(
                "{} country={:?} continent={:?} {:?}",
                s.set_identifier().unwrap_or_default(),
                geo.country_code(),
                geo.continent_code(),
                s.resource_records()
                    .iter()
                    .map(|r| r.value().to_owned())
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            "continent-NA country=None continent=Some(\"NA\") [\"203.0.113.2\"]",
            "country-DE country=Some(\"DE\") continent=None [\"203.0.113.1\"]",
            "default country=Some(\"*\") continent=None [\"203.0.113.1\", \"203.0.113.2\"]",
        ]
    );
    let again = route53.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((again.writes, again.changes), (0, 0), "{again:?}");
}

/// `maxAnswers: 8` on a name of 10 addresses: ten multivalue answer
/// record sets (one per address) in moto, with their registry records; a
/// second sync writes nothing; `maxAnswers: 2` is published plain and
/// reported downgraded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_answers_become_multivalue_answer_record_sets() {
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    let route53 = provider(&moto.url(), |_| {});
    let targets: Vec<String> = (1..=10).map(|i| format!("203.0.113.{i}")).collect();
    let ep = |name: &str, n: &str| {
        json!({"dnsName": name, "recordType": "A", "recordTTL": 30, "targets": targets,
               "providerSpecific": [{"name": "fedns/max-answers", "value": n}]})
    };
    let fixture = desired(json!([ep("mv.example.com", "8"), ep("two.example.com", "2")]));
    let report = route53.sync_all(&fixture, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.rejected.is_empty(), "{report:?}");
    assert_eq!(report.downgraded.len(), 1, "{report:?}");
    assert_eq!(report.downgraded[0].0, "two.example.com");
    let sets = record_sets(&admin, &zone).await;
    let multivalue: Vec<String> = sets
        .iter()
        .filter(|s| s.name() == "mv.example.com." && s.multi_value_answer() == Some(true))
        .map(|s| {
            format!(
                "{} {:?}",
                s.set_identifier().unwrap_or_default(),
                s.resource_records()[0].value()
            )
        })
        .collect();
    println!("{multivalue:#?}");
    assert_eq!(multivalue.len(), 10, "{sets:#?}");
    assert!(multivalue.contains(&"203.0.113.7 \"203.0.113.7\"".to_owned()));
    assert_eq!(values(&admin, &zone, "two.example.com", "A").await.len(), 10);
    let again = route53.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((again.writes, again.changes), (0, 0), "{again:?}");
}

/// A hostile tenant (`fedns_e2e::tenancy`): after publishing with the
/// attacker's DNSEndpoints, the hosted zone holds exactly what it held with
/// the victim alone, and every attempt is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenant_changes_nothing_in_route53() {
    use fedns_e2e::tenancy;
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, tenancy::APEX).await;
    let route53 = provider(&moto.url(), |_| {});
    let alone = tenancy::desired(false);
    let report = route53.sync_all(&alone, SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    let before = moto::records(&admin, &zone).await;
    let attacked = tenancy::desired(true);
    let refusals = tenancy::assert_every_attempt_refused(&attacked);
    let report = route53.sync_all(&attacked, SyncMode::Full).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    let after = moto::records(&admin, &zone).await;
    println!("refused:\n{}", refusals.join("\n"));
    assert_eq!(after, before, "the hosted zone is unchanged");
    assert!(after
        .iter()
        .any(|(n, t, _, _)| n == tenancy::VICTIM_SERVICE && t == "A"));
}
