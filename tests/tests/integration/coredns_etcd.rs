//! The coredns-etcd provider against a real etcd (Debian `etcd-server`,
//! started here on loopback ports with a temporary data dir).

use std::collections::BTreeMap;
use std::time::Duration;

use etcd_client::{Client, GetOptions};
use fedns_e2e::Etcd;
use fedns_providers::coredns_etcd::{CorednsEtcd, EtcdConfig};
use fedns_providers::desired::DesiredZones;
use fedns_providers::provider::{ProviderMetrics, SyncMode};
use serde_json::{json, Value};

fn desired(endpoints: Value) -> DesiredZones {
    fedns_e2e::desired("example.com", endpoints)
}

fn fixture() -> DesiredZones {
    desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "recordTTL": 30, "targets": ["2001:db8::10"]},
        {"dnsName": "nginx.ns.myfed.svc.us-west-2.example.com", "recordType": "CNAME", "recordTTL": 30, "targets": ["nginx.ns.myfed.svc.example.com"]},
        {"dnsName": "info.example.com", "recordType": "TXT", "recordTTL": 60, "targets": ["hello"]},
        {"dnsName": "taken.example.com", "recordType": "A", "targets": ["203.0.113.99"]},
    ]))
}

async fn dump(client: &mut Client, prefix: &str) -> BTreeMap<String, Value> {
    let response = client.get(prefix, Some(GetOptions::new().with_prefix())).await.unwrap();
    response
        .kvs()
        .iter()
        .map(|kv| {
            (
                String::from_utf8_lossy(kv.key()).into_owned(),
                serde_json::from_slice(kv.value()).unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// What CoreDNS's etcd plugin answers for `name`: every value at or below
/// the name's path (https://coredns.io/plugins/etcd/), as "TYPE target".
async fn coredns_answers(client: &mut Client, name: &str) -> Vec<String> {
    let mut path = "/skydns".to_owned();
    for label in name.split('.').rev() {
        path.push('/');
        path.push_str(label);
    }
    let mut out = Vec::new();
    for (key, value) in dump(client, &path).await {
        if key != path && !key.starts_with(&format!("{path}/")) {
            continue; // a sibling sharing the prefix text, e.g. nginx2
        }
        let host = value["host"].as_str().unwrap_or_default();
        let record = if let Some(text) = value["text"].as_str() {
            format!("TXT {text}")
        } else if host.parse::<std::net::Ipv4Addr>().is_ok() {
            format!("A {host}")
        } else if host.parse::<std::net::Ipv6Addr>().is_ok() {
            format!("AAAA {host}")
        } else {
            format!("CNAME {host}")
        };
        out.push(record);
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_in_the_coredns_format_with_ownership() {
    let mut etcd = Etcd::start();
    let mut client = Client::connect([etcd.url()], None).await.unwrap();
    // Records someone else owns: one on a name we want, one elsewhere.
    client
        .put(
            "/skydns/com/example/taken/x1",
            json!({"host": "192.0.2.1", "ttl": 300, "owner": "external-dns"}).to_string(),
            None,
        )
        .await
        .unwrap();
    client
        .put(
            "/skydns/com/example/other/x1",
            json!({"host": "192.0.2.2", "ttl": 300}).to_string(),
            None,
        )
        .await
        .unwrap();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );

    let report = provider.sync_all(&fixture(), SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.conflicts.len(), 1);
    assert_eq!(report.conflicts[0].0.name, "taken.example.com");
    assert_eq!(report.conflicts[0].1, "external-dns");

    // Exact keys and values.
    let keys = dump(&mut client, "/skydns/").await;
    let a_key = provider.record_key(
        "nginx.ns.myfed.svc.example.com",
        fedns_api::RecordType::A,
        "203.0.113.10",
    );
    assert_eq!(
        keys[&a_key],
        json!({"host": "203.0.113.10", "ttl": 30, "owner": "fedns"})
    );
    let cname_key = provider.record_key(
        "nginx.ns.myfed.svc.us-west-2.example.com",
        fedns_api::RecordType::CNAME,
        "nginx.ns.myfed.svc.example.com",
    );
    assert!(cname_key.starts_with("/skydns/com/example/us-west-2/svc/myfed/ns/nginx/fedns-"));
    assert_eq!(
        keys[&cname_key],
        json!({"host": "nginx.ns.myfed.svc.example.com", "ttl": 30, "owner": "fedns"})
    );
    let ours: Vec<&String> = keys.keys().filter(|k| keys[*k]["owner"] == "fedns").collect();
    assert_eq!(ours.len(), 5, "{keys:#?}");
    assert_eq!(
        keys["/skydns/com/example/taken/x1"]["owner"], "external-dns",
        "foreign record untouched"
    );
    assert_eq!(keys["/skydns/com/example/other/x1"]["host"], "192.0.2.2");

    // What CoreDNS would answer.
    assert_eq!(
        coredns_answers(&mut client, "nginx.ns.myfed.svc.example.com").await,
        ["A 198.51.100.20", "A 203.0.113.10", "AAAA 2001:db8::10"]
    );
    assert_eq!(
        coredns_answers(&mut client, "nginx.ns.myfed.svc.us-west-2.example.com").await,
        ["CNAME nginx.ns.myfed.svc.example.com"]
    );
    assert_eq!(coredns_answers(&mut client, "info.example.com").await, ["TXT hello"]);

    // Idle: no write, the revision does not move.
    let revision = client.get("x", None).await.unwrap().header().unwrap().revision();
    let calls = provider.metrics().api_calls_total("coredns-etcd");
    let idle = provider.sync_all(&fixture(), SyncMode::Changed).await;
    assert_eq!(idle.writes, 0, "{idle:?}");
    assert_eq!(
        provider.metrics().api_calls_total("coredns-etcd"),
        calls,
        "an idle sync makes no etcd call at all"
    );
    // A full resync reads, finds nothing to change, and writes nothing.
    let full = provider.sync_all(&fixture(), SyncMode::Full).await;
    assert_eq!((full.writes, full.errors.len()), (0, 0), "{full:?}");
    assert!(provider.metrics().api_calls_total("coredns-etcd") > calls);
    assert_eq!(
        client.get("x", None).await.unwrap().header().unwrap().revision(),
        revision
    );

    // A change replaces the name's keys in one transaction; stale keys go.
    let changed = desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.11"]},
    ]));
    let report = provider.sync_all(&changed, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(
        coredns_answers(&mut client, "nginx.ns.myfed.svc.example.com").await,
        ["A 203.0.113.11"]
    );
    assert!(
        coredns_answers(&mut client, "info.example.com").await.is_empty(),
        "stale owned key removed"
    );
    assert_eq!(
        dump(&mut client, "/skydns/com/example/other").await.len(),
        1,
        "foreign record untouched"
    );

    // Drift (an owned key deleted behind fedns's back) is repaired by the
    // periodic full resync, not by change-driven syncs.
    client
        .delete(
            "/skydns/com/example/svc/myfed/ns/nginx/",
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await
        .unwrap();
    let report = provider.sync_all(&changed, SyncMode::Changed).await;
    assert_eq!(report.writes, 0, "{report:?}");
    let report = provider.sync_all(&changed, SyncMode::Full).await;
    assert_eq!((report.writes, report.errors.len()), (1, 0), "{report:?}");
    assert_eq!(
        coredns_answers(&mut client, "nginx.ns.myfed.svc.example.com").await,
        ["A 203.0.113.11"]
    );

    // etcd stops: the sync reports it and changes nothing; after the
    // restart the next sync repairs everything.
    etcd.stop();
    let down = provider.sync_all(&fixture(), SyncMode::Full).await;
    assert!(
        !down.errors.is_empty(),
        "a sync against a stopped etcd must report an error"
    );
    etcd.resume();
    let mut repaired = provider.sync_all(&fixture(), SyncMode::Changed).await;
    for _ in 0..50 {
        if repaired.errors.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        repaired = provider.sync_all(&fixture(), SyncMode::Changed).await;
    }
    assert!(repaired.errors.is_empty(), "{:?}", repaired.errors);
    let mut client = Client::connect([etcd.url()], None).await.unwrap();
    assert_eq!(
        coredns_answers(&mut client, "nginx.ns.myfed.svc.example.com").await,
        ["A 198.51.100.20", "A 203.0.113.10", "AAAA 2001:db8::10"]
    );
    assert_eq!(coredns_answers(&mut client, "info.example.com").await, ["TXT hello"]);
    let owned = dump(&mut client, "/skydns/")
        .await
        .values()
        .filter(|v| v["owner"] == "fedns")
        .count();
    assert_eq!(owned, 5, "no stale keys after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_names_are_reported() {
    let etcd = Etcd::start();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );
    let report = provider
        .sync_all(
            &desired(json!([
                {"dnsName": "app.example.com", "recordType": "A", "targets": ["203.0.113.1"]},
                {"dnsName": "api.app.example.com", "recordType": "A", "targets": ["203.0.113.2"]},
            ])),
            SyncMode::Changed,
        )
        .await;
    assert_eq!(
        report.nested,
        vec![("api.app.example.com".to_owned(), "app.example.com".to_owned())]
    );
}
