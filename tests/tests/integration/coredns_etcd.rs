//! The coredns-etcd provider against a real etcd (Debian `etcd-server`,
//! started here on loopback ports with a temporary data dir).

use std::collections::BTreeMap;
use std::time::Duration;

use fedns_e2e::Etcd;
use fedns_providers::coredns_etcd::etcd::{EtcdClient, EtcdTls};
use fedns_providers::coredns_etcd::{CorednsEtcd, EtcdConfig};
use fedns_providers::plan::desired::DesiredZones;
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

async fn dump(client: &EtcdClient, prefix: &str) -> BTreeMap<String, Value> {
    let response = client.range_prefix(prefix).await.unwrap();
    response
        .into_iter()
        .map(|kv| (kv.key, serde_json::from_slice(&kv.value).unwrap_or(Value::Null)))
        .collect()
}

/// The keys CoreDNS's etcd plugin reads for a question about `name`, as
/// its lookup does (plugin/etcd, `Records` and `get`): for a CNAME
/// question (`exact`) only the name's own key; otherwise every key below
/// the name (prefix `<path>/`), falling back to the name's own key when
/// there is none.
async fn coredns_keys(client: &EtcdClient, name: &str, exact: bool) -> BTreeMap<String, Value> {
    let mut path = "/skydns".to_owned();
    for label in name.split('.').rev() {
        path.push('/');
        path.push_str(label);
    }
    let own = || async {
        dump(client, &path)
            .await
            .into_iter()
            .filter(|(key, _)| *key == path)
            .collect::<BTreeMap<_, _>>()
    };
    if exact {
        return own().await;
    }
    let below = dump(client, &format!("{path}/")).await;
    if below.is_empty() {
        own().await
    } else {
        below
    }
}

/// What CoreDNS's etcd plugin answers for `name` to an address (or TXT)
/// question, as "TYPE target".
async fn coredns_answers(client: &EtcdClient, name: &str) -> Vec<String> {
    let mut out: Vec<String> = coredns_keys(client, name, false).await.values().map(describe).collect();
    out.sort();
    out
}

/// What it answers to a CNAME question.
async fn coredns_cname(client: &EtcdClient, name: &str) -> Vec<String> {
    coredns_keys(client, name, true).await.values().map(describe).collect()
}

fn describe(value: &Value) -> String {
    let host = value["host"].as_str().unwrap_or_default();
    if let Some(text) = value["text"].as_str() {
        format!("TXT {text}")
    } else if host.parse::<std::net::Ipv4Addr>().is_ok() {
        format!("A {host}")
    } else if host.parse::<std::net::Ipv6Addr>().is_ok() {
        format!("AAAA {host}")
    } else {
        format!("CNAME {host}")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_in_the_coredns_format_with_ownership() {
    let mut etcd = Etcd::start();
    let client = etcd.client();
    // Records someone else owns: one on a name we want, one elsewhere.
    client
        .put(
            "/skydns/com/example/taken/x1",
            &json!({"host": "192.0.2.1", "ttl": 300, "owner": "external-dns"}).to_string(),
        )
        .await
        .unwrap();
    client
        .put(
            "/skydns/com/example/other/x1",
            &json!({"host": "192.0.2.2", "ttl": 300}).to_string(),
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
    let keys = dump(&client, "/skydns/").await;
    let a_key = provider.record_key(
        "nginx.ns.myfed.svc.example.com",
        fedns_api::RecordType::A,
        "203.0.113.10",
    );
    assert_eq!(
        keys[&a_key],
        json!({"host": "203.0.113.10", "ttl": 30, "owner": "fedns"})
    );
    // A name whose only record is a CNAME lives at the name's own key.
    let cname_key = provider.name_path("nginx.ns.myfed.svc.us-west-2.example.com");
    assert_eq!(cname_key, "/skydns/com/example/us-west-2/svc/myfed/ns/nginx");
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
        coredns_answers(&client, "nginx.ns.myfed.svc.example.com").await,
        ["A 198.51.100.20", "A 203.0.113.10", "AAAA 2001:db8::10"]
    );
    assert_eq!(
        coredns_answers(&client, "nginx.ns.myfed.svc.us-west-2.example.com").await,
        ["CNAME nginx.ns.myfed.svc.example.com"],
        "an A question finds the CNAME"
    );
    assert_eq!(
        coredns_cname(&client, "nginx.ns.myfed.svc.us-west-2.example.com").await,
        ["CNAME nginx.ns.myfed.svc.example.com"],
        "a CNAME question finds it too"
    );
    assert_eq!(coredns_answers(&client, "info.example.com").await, ["TXT hello"]);

    // Idle: no write, the revision does not move.
    let revision = client.revision().await.unwrap();
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
    assert_eq!(client.revision().await.unwrap(), revision);

    // A change replaces the name's keys in one transaction; stale keys go.
    let changed = desired(json!([
        {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.11"]},
    ]));
    let report = provider.sync_all(&changed, SyncMode::Changed).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(
        coredns_answers(&client, "nginx.ns.myfed.svc.example.com").await,
        ["A 203.0.113.11"]
    );
    assert!(
        coredns_answers(&client, "info.example.com").await.is_empty(),
        "stale owned key removed"
    );
    assert_eq!(
        dump(&client, "/skydns/com/example/other").await.len(),
        1,
        "foreign record untouched"
    );

    // Drift (an owned key deleted behind fedns's back) is repaired by the
    // periodic full resync, not by change-driven syncs.
    client
        .delete_prefix("/skydns/com/example/svc/myfed/ns/nginx/")
        .await
        .unwrap();
    let report = provider.sync_all(&changed, SyncMode::Changed).await;
    assert_eq!(report.writes, 0, "{report:?}");
    let report = provider.sync_all(&changed, SyncMode::Full).await;
    assert_eq!((report.writes, report.errors.len()), (1, 0), "{report:?}");
    assert_eq!(
        coredns_answers(&client, "nginx.ns.myfed.svc.example.com").await,
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
    let client = etcd.client();
    assert_eq!(
        coredns_answers(&client, "nginx.ns.myfed.svc.example.com").await,
        ["A 198.51.100.20", "A 203.0.113.10", "AAAA 2001:db8::10"]
    );
    assert_eq!(coredns_answers(&client, "info.example.com").await, ["TXT hello"]);
    let owned = dump(&client, "/skydns/")
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

/// TLS with a client certificate (etcd `--client-cert-auth`), then etcd's
/// own auth (user and password, `/v3/auth/authenticate`): each refusal is
/// an error that says what was refused, and the right settings publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_client_certificates_and_auth() {
    let (etcd, files) = Etcd::start_tls();
    let sync = |tls: Option<EtcdTls>, credentials: Option<(&str, &str)>| {
        let provider = CorednsEtcd::new(
            EtcdConfig {
                endpoints: vec![etcd.url()],
                tls,
                credentials: credentials.map(|(u, p)| (u.to_owned(), p.to_owned())),
                ..EtcdConfig::default()
            },
            ProviderMetrics::default(),
        );
        async move { provider.sync_all(&fixture(), SyncMode::Full).await }
    };
    let full = EtcdTls {
        ca_file: Some(files.ca.clone()),
        identity: Some((files.client_cert.clone(), files.client_key.clone())),
    };

    // No client certificate: the handshake is refused.
    let without_identity = sync(
        Some(EtcdTls {
            ca_file: Some(files.ca.clone()),
            identity: None,
        }),
        None,
    )
    .await;
    assert!(!without_identity.errors.is_empty());
    println!("without a client certificate: {:?}", without_identity.errors[0].1);
    // Not trusting etcd's CA: refused on our side.
    let untrusted = sync(None, None).await;
    assert!(!untrusted.errors.is_empty());
    println!("without etcd's CA: {:?}", untrusted.errors[0].1);
    // A CA file that does not exist is named in the error.
    let missing = sync(
        Some(EtcdTls {
            ca_file: Some("/nonexistent/etcd-ca.pem".into()),
            identity: None,
        }),
        None,
    )
    .await;
    assert!(
        missing.errors[0].1.contains("/nonexistent/etcd-ca.pem"),
        "{:?}",
        missing.errors
    );

    let published = sync(Some(full.clone()), None).await;
    assert!(published.errors.is_empty(), "{:?}", published.errors);
    let client = etcd.client();
    assert_eq!(
        coredns_answers(&client, "nginx.ns.myfed.svc.example.com").await,
        ["A 198.51.100.20", "A 203.0.113.10", "AAAA 2001:db8::10"]
    );

    // Turn etcd's auth on (root user with the root role), over the gateway.
    for (path, body) in [
        ("auth/user/add", json!({"name": "root", "password": "s3cret"})),
        ("auth/user/grant", json!({"user": "root", "role": "root"})),
        ("auth/enable", json!({})),
    ] {
        if let Err(e) = client.call(path, &body).await {
            panic!("{path}: {e}");
        }
    }
    let anonymous = sync(Some(full.clone()), None).await;
    assert!(!anonymous.errors.is_empty(), "auth is on: an anonymous sync must fail");
    println!("without credentials: {:?}", anonymous.errors[0].1);
    let wrong = sync(Some(full.clone()), Some(("root", "wrong"))).await;
    assert!(!wrong.errors.is_empty());
    println!("with a wrong password: {:?}", wrong.errors[0].1);
    let authenticated = sync(Some(full), Some(("root", "s3cret"))).await;
    assert!(authenticated.errors.is_empty(), "{:?}", authenticated.errors);
}

/// The guards each name's transaction carries: a key changed since it was
/// read, or a key that appeared, makes the whole transaction apply nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_apply_nothing_after_a_concurrent_change() {
    use fedns_providers::coredns_etcd::etcd::{TxnGuard, TxnOp};
    let etcd = Etcd::start();
    let client = etcd.client();
    client.put("/skydns/com/example/a/k1", "one").await.unwrap();
    let read = client.range_prefix("/skydns/com/example/a/").await.unwrap();
    let guard = TxnGuard::Unchanged {
        key: read[0].key.clone(),
        mod_revision: read[0].mod_revision,
    };
    let put = |value: &str| TxnOp::Put {
        key: "/skydns/com/example/a/k2".into(),
        value: value.into(),
    };
    // Someone else rewrites k1 after we read it.
    client.put("/skydns/com/example/a/k1", "other").await.unwrap();
    assert!(!client.txn(std::slice::from_ref(&guard), &[put("x")]).await.unwrap());
    assert_eq!(client.range_prefix("/skydns/com/example/a/k2").await.unwrap(), []);
    // Read again: the guard holds and the put lands.
    let read = client.range_prefix("/skydns/com/example/a/k1").await.unwrap();
    let fresh = TxnGuard::Unchanged {
        key: read[0].key.clone(),
        mod_revision: read[0].mod_revision,
    };
    let absent = TxnGuard::Absent {
        key: "/skydns/com/example/a/k2".into(),
    };
    assert!(client.txn(&[fresh, absent.clone()], &[put("y")]).await.unwrap());
    // k2 exists now: a guard that expects it absent fails.
    assert!(!client.txn(&[absent], &[put("z")]).await.unwrap());
    let k2 = client.range_prefix("/skydns/com/example/a/k2").await.unwrap();
    assert_eq!(k2[0].value, b"y");
}

/// TXT: the plugin keeps one text per key, so fedns writes the
/// strings joined, without quotes; CNAME-only names written by an older
/// release under a sub-key move to the name's own key; a second sync
/// writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txt_text_and_cname_layout() {
    let etcd = Etcd::start();
    let client = etcd.client();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );
    // The layout of an older release: the CNAME below the name.
    let old_key = provider.record_key("www.example.com", fedns_api::RecordType::CNAME, "web.example.com");
    client
        .put(
            &old_key,
            &json!({"host": "web.example.com", "ttl": 30, "owner": "fedns"}).to_string(),
        )
        .await
        .unwrap();
    let fixture = desired(json!([
        {"dnsName": "example.com", "recordType": "TXT", "targets": [fedns_e2e::SPF_TARGET]},
        {"dnsName": "sel._domainkey.example.com", "recordType": "TXT", "targets": [fedns_e2e::dkim_target()]},
        {"dnsName": "www.example.com", "recordType": "CNAME", "recordTTL": 30, "targets": ["web.example.com"]},
    ]));
    let report = provider.sync_all(&fixture, SyncMode::Full).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(
        coredns_answers(&client, "sel._domainkey.example.com").await,
        [format!("TXT {}", fedns_e2e::dkim_text())]
    );
    let spf = coredns_keys(&client, "example.com", false).await;
    assert!(
        spf.values()
            .any(|v| v["text"] == "v=spf1 include:_spf.example.net -all"),
        "{spf:?}"
    );
    assert_eq!(
        coredns_cname(&client, "www.example.com").await,
        ["CNAME web.example.com"]
    );
    assert!(
        client.range_prefix(&old_key).await.unwrap().is_empty(),
        "the old sub-key is gone"
    );
    let revision = client.revision().await.unwrap();
    let again = provider.sync_all(&fixture, SyncMode::Full).await;
    assert_eq!((again.writes, again.errors.len()), (0, 0), "{again:?}");
    assert_eq!(client.revision().await.unwrap(), revision);
}

/// The etcd plugin has no traffic policies: a Weighted name is published
/// with every member and the sync says so; a Failover name carries the
/// active role only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_are_published_as_all_and_reported() {
    let etcd = Etcd::start();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );
    let ep = |name: &str, set: &str, target: &str, key: &str, value: &str| {
        json!({"dnsName": name, "recordType": "A", "recordTTL": 30, "targets": [target],
               "setIdentifier": set, "providerSpecific": [{"name": key, "value": value}]})
    };
    let report = provider
        .sync_all(
            &desired(json!([
                ep("w.example.com", "east", "203.0.113.1", "aws/weight", "1"),
                ep("w.example.com", "west", "203.0.113.2", "aws/weight", "3"),
                ep("f.example.com", "east", "203.0.113.1", "aws/failover", "PRIMARY"),
                ep("f.example.com", "west", "203.0.113.2", "aws/failover", "SECONDARY"),
            ])),
            SyncMode::Changed,
        )
        .await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.downgraded.len(), 1, "{report:?}");
    assert_eq!(report.downgraded[0].0, "w.example.com");
    assert!(
        report.downgraded[0].2.contains("Weighted published as All"),
        "{report:?}"
    );
    let client = etcd.client();
    let hosts = |keys: BTreeMap<String, Value>| -> Vec<String> {
        let mut h: Vec<String> = keys
            .values()
            .map(|v| v["host"].as_str().unwrap_or_default().to_owned())
            .collect();
        h.sort();
        h
    };
    assert_eq!(
        hosts(coredns_keys(&client, "w.example.com", false).await),
        ["203.0.113.1", "203.0.113.2"]
    );
    assert_eq!(
        hosts(coredns_keys(&client, "f.example.com", false).await),
        ["203.0.113.1"]
    );
}

/// A hostile tenant (`fedns_e2e::tenancy`): after publishing with the
/// attacker's DNSEndpoints, etcd holds exactly the keys it held with the
/// victim alone (so CoreDNS merges nothing of the attacker's under the
/// victim's names), and every attempt is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenant_changes_no_key_coredns_reads() {
    use fedns_e2e::tenancy;
    let etcd = Etcd::start();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );
    let client = etcd.client();
    let report = provider.sync_all(&tenancy::desired(false), SyncMode::Changed).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    let before = dump(&client, "/skydns/").await;
    let answers_before = coredns_answers(&client, tenancy::VICTIM_SERVICE).await;
    let attacked = tenancy::desired(true);
    let refusals = tenancy::assert_every_attempt_refused(&attacked);
    let report = provider.sync_all(&attacked, SyncMode::Full).await;
    assert!(report.errors.is_empty() && report.conflicts.is_empty(), "{report:?}");
    println!("refused:\n{}", refusals.join("\n"));
    assert_eq!(dump(&client, "/skydns/").await, before, "etcd is unchanged");
    assert_eq!(coredns_answers(&client, tenancy::VICTIM_SERVICE).await, answers_before);
}

/// A name with another namespace's names below it is not written to etcd
/// (CoreDNS would answer it with their records too); names below it of
/// its own namespace are only reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_above_another_namespaces_names_is_a_conflict() {
    let etcd = Etcd::start();
    let provider = CorednsEtcd::new(
        EtcdConfig {
            endpoints: vec![etcd.url()],
            ..EtcdConfig::default()
        },
        ProviderMetrics::default(),
    );
    let client = etcd.client();
    let mut desired = desired(json!([
        {"dnsName": "web.ns.myfed.svc.example.com", "recordType": "A", "targets": ["203.0.113.1"]},
    ]));
    // The Domain's namespace publishes a name above it (as the planning
    // rules allow it to).
    let mut above = desired.zones[0].rrsets[0].clone();
    above.name = "myfed.svc.example.com".into();
    above.record_type = fedns_api::RecordType::TXT;
    above.targets = vec!["\"operator note\"".into()];
    above.sources = ["fedns-system/notes".to_owned()].into();
    desired.zones[0].rrsets.push(above);
    let report = provider.sync_all(&desired, SyncMode::Changed).await;
    assert!(report.nested.is_empty(), "{report:?}");
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert_eq!(report.conflicts[0].0.name, "myfed.svc.example.com");
    assert!(
        report.conflicts[0].1.contains("namespace ns"),
        "{}",
        report.conflicts[0].1
    );
    assert_eq!(
        coredns_answers(&client, "myfed.svc.example.com").await,
        coredns_answers(&client, "web.ns.myfed.svc.example.com").await,
        "only the service's own records are there"
    );
}
