//! The webhook provider against the external-dns webhook provider stand-in
//! (`fedns_standins::webhook_provider`, started on loopback by each test):
//! negotiation with and without a domain filter, every record type fedns
//! publishes round-tripped, a provider that adjusts TTLs (no rewrite over
//! ten resyncs), a provider down or failing (nothing lost, the next sync
//! repairs), changes larger than one request, a refused record isolated,
//! and another owner's records never touched.

use std::time::Duration;

use fedns_providers::plan::desired::DesiredZones;
use fedns_providers::provider::{ErrorScope, ProviderMetrics, SyncMode, SyncReport};
use fedns_providers::webhook::{api::Retry, Webhook, WebhookConfig};
use fedns_standins::webhook_provider::{WebhookProvider, WebhookProviderConfig};
use serde_json::{json, Value};

fn provider(url: &str, tweak: impl FnOnce(&mut WebhookConfig)) -> Webhook {
    let mut config = WebhookConfig {
        urls: vec![url.into()],
        timeout: Duration::from_secs(5),
        negotiate: Retry {
            attempts: 3,
            initial: Duration::from_millis(50),
        },
        ..WebhookConfig::default()
    };
    tweak(&mut config);
    Webhook::new(config, ProviderMetrics::default())
}

fn ep(name: &str, rtype: &str, targets: &[&str]) -> Value {
    json!({"dnsName": name, "recordType": rtype, "recordTTL": 30, "targets": targets})
}

fn desired(endpoints: Value) -> DesiredZones {
    fedns_e2e::desired("example.com", endpoints)
}

/// (name, type) → targets of every record the stand-in holds, registry
/// records left out.
fn held(stand_in: &WebhookProvider) -> Vec<(String, String, Vec<String>, i64)> {
    stand_in
        .records()
        .iter()
        .filter(|e| !e["dnsName"].as_str().unwrap_or_default().contains('-'))
        .map(|e| {
            let targets: Vec<String> = e["targets"]
                .as_array()
                .map(|t| t.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect())
                .unwrap_or_default();
            (
                e["dnsName"].as_str().unwrap_or_default().to_owned(),
                e["recordType"].as_str().unwrap_or_default().to_owned(),
                targets,
                e["recordTTL"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

fn assert_clean(report: &SyncReport) {
    assert!(
        report.errors.is_empty() && report.rejected.is_empty() && report.conflicts.is_empty(),
        "{report:#?}"
    );
}

/// Every type fedns publishes goes through and back; the registry
/// records are external-dns's; a second and a full sync write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_type_round_trips_with_external_dns_ownership() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    let fixture = desired(json!([
        ep("www.example.com", "A", &["192.0.2.1", "192.0.2.2"]),
        ep("www.example.com", "AAAA", &["2001:db8::1"]),
        ep("alias.example.com", "CNAME", &["www.example.com"]),
        ep("txt.example.com", "TXT", &["hello world"]),
        ep("mail.example.com", "MX", &["10 mx.example.com"]),
        ep("_sip._tcp.example.com", "SRV", &["0 5 5060 sip.example.com"]),
        ep("sub.example.com", "NS", &["ns1.example.net"]),
        ep("caa.example.com", "CAA", &["0 issue \"letsencrypt.org\""]),
    ]));
    let report = webhook.sync_all(&fixture, SyncMode::Changed).await;
    assert_clean(&report);
    assert_eq!(report.writes, 1, "one request for 8 records and their registry records");
    let mut rows = held(&stand_in);
    rows.sort();
    println!("{rows:#?}");
    assert_eq!(rows.len(), 8);
    assert!(rows.contains(&(
        "www.example.com".into(),
        "A".into(),
        vec!["192.0.2.1".into(), "192.0.2.2".into()],
        30
    )));
    assert!(rows.contains(&("txt.example.com".into(), "TXT".into(), vec!["hello world".into()], 30)));
    // SRV as external-dns writes it (and the stand-in, as external-dns's
    // CheckEndpoint, accepts only): the target host absolute.
    assert!(rows.contains(&(
        "_sip._tcp.example.com".into(),
        "SRV".into(),
        vec!["0 5 5060 sip.example.com.".into()],
        30
    )));
    let registry = stand_in
        .records()
        .into_iter()
        .find(|e| e["dnsName"] == "a-www.example.com")
        .expect("the registry record of www's A record");
    assert_eq!(
        registry["targets"],
        json!(["\"heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/service-nginx\""])
    );
    let before = stand_in.requests();
    let idle = webhook.sync_all(&fixture, SyncMode::Changed).await;
    assert_eq!(stand_in.requests(), before, "an unchanged zone costs no request");
    assert_clean(&idle);
    let full = webhook.sync_all(&fixture, SyncMode::Full).await;
    assert_clean(&full);
    assert_eq!(full.writes, 0, "read back, nothing to change: {full:#?}");
    // Removed from the desired state: deleted with its registry record.
    let fewer = desired(json!([ep("www.example.com", "A", &["192.0.2.1"])]));
    let report = webhook.sync_all(&fewer, SyncMode::Changed).await;
    assert_clean(&report);
    assert_eq!(stand_in.records().len(), 2, "{:#?}", stand_in.records());
}

/// The negotiated filter limits what is sent: a zone outside it is an
/// error naming the filter, a zone inside is synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_negotiated_domain_filter_limits_what_is_sent() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig {
        domain_filter: vec!["example.org".into()],
        ..WebhookProviderConfig::default()
    })
    .await
    .unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    let report = webhook
        .sync_all(
            &desired(json!([ep("www.example.com", "A", &["192.0.2.1"])])),
            SyncMode::Changed,
        )
        .await;
    assert_eq!(report.errors.len(), 1, "{report:#?}");
    assert!(
        matches!(&report.errors[0], (ErrorScope::Zone(z), why) if z == "example.com" && why.contains("no webhook provider takes the zone example.com") && why.contains("example.org")),
        "{report:#?}"
    );
    assert!(stand_in.records().is_empty());
    let inside = fedns_e2e::desired("example.org", json!([ep("www.example.org", "A", &["192.0.2.1"])]));
    assert_clean(&webhook.sync_all(&inside, SyncMode::Changed).await);
    assert_eq!(held(&stand_in).len(), 1);
}

/// Two providers, each taking its own zone: each zone goes to the
/// provider whose filter takes it; one provider down or slow stops only
/// its zone, the other's goes on, and nothing is lost when it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_go_to_the_provider_that_takes_them_and_one_failing_spares_the_other() {
    let com = WebhookProvider::start(WebhookProviderConfig {
        domain_filter: vec!["example.com".into()],
        ..WebhookProviderConfig::default()
    })
    .await
    .unwrap();
    let org = WebhookProvider::start(WebhookProviderConfig {
        domain_filter: vec!["example.org".into()],
        ..WebhookProviderConfig::default()
    })
    .await
    .unwrap();
    let webhook = Webhook::new(
        WebhookConfig {
            urls: vec![org.url(), com.url()],
            timeout: Duration::from_millis(500),
            negotiate: Retry {
                attempts: 2,
                initial: Duration::from_millis(20),
            },
            ..WebhookConfig::default()
        },
        ProviderMetrics::default(),
    );
    let both = |n: &str| {
        let mut zones = fedns_e2e::desired(
            "example.com",
            json!([ep(&format!("{n}.example.com"), "A", &["192.0.2.1"])]),
        );
        let org = fedns_e2e::desired(
            "example.org",
            json!([ep(&format!("{n}.example.org"), "A", &["192.0.2.2"])]),
        );
        zones.zones.extend(org.zones);
        zones
    };
    assert_clean(&webhook.sync_all(&both("a"), SyncMode::Changed).await);
    assert_eq!(held(&com).len(), 1);
    assert_eq!(held(&org).len(), 1);
    // example.org's provider slow past the timeout: only its zone fails.
    org.set_latency(Duration::from_secs(2));
    let slow = webhook.sync_all(&both("b"), SyncMode::Changed).await;
    println!("slow: {:?}", slow.errors);
    assert!(
        matches!(&slow.errors[..], [(ErrorScope::Zone(z), _)] if z == "example.org"),
        "{slow:#?}"
    );
    assert!(held(&com).iter().any(|r| r.0 == "b.example.com"), "{:#?}", held(&com));
    // Down: the same.
    org.set_latency(Duration::ZERO);
    org.stop();
    let down = webhook.sync_all(&both("c"), SyncMode::Changed).await;
    assert!(
        matches!(&down.errors[..], [(ErrorScope::Zone(z), _)] if z == "example.org"),
        "{down:#?}"
    );
    assert!(held(&com).iter().any(|r| r.0 == "c.example.com"));
    // Back: the next sync publishes what it missed.
    org.resume().await.unwrap();
    assert_clean(&webhook.sync_all(&both("c"), SyncMode::Changed).await);
    assert_eq!(
        held(&org).iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["c.example.org"]
    );
}

/// A provider whose adjustendpoints raises TTLs to 60: what it holds is
/// what fedns wants, so ten resyncs write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjusted_ttls_cause_no_rewrite_loop() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig {
        min_ttl: 60,
        ..WebhookProviderConfig::default()
    })
    .await
    .unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    let fixture = desired(json!([
        ep("www.example.com", "A", &["192.0.2.1"]),
        ep("WWW2.example.com", "A", &["192.0.2.2"]),
    ]));
    assert_clean(&webhook.sync_all(&fixture, SyncMode::Changed).await);
    assert!(
        held(&stand_in).iter().all(|(_, _, _, ttl)| *ttl == 60),
        "{:#?}",
        held(&stand_in)
    );
    for round in 0..10 {
        let report = webhook.sync_all(&fixture, SyncMode::Full).await;
        assert_clean(&report);
        assert_eq!(report.writes, 0, "round {round}: {report:#?}");
    }
}

/// The provider down (connections refused), then failing with 500: the
/// sync reports an error and writes nothing; once it is back, the next
/// sync publishes everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_down_or_failing_loses_nothing() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    let fixture = desired(json!([ep("www.example.com", "A", &["192.0.2.1"])]));
    assert_clean(&webhook.sync_all(&fixture, SyncMode::Changed).await);
    stand_in.stop();
    let more = desired(json!([
        ep("www.example.com", "A", &["192.0.2.1"]),
        ep("api.example.com", "A", &["192.0.2.9"]),
    ]));
    let down = webhook.sync_all(&more, SyncMode::Changed).await;
    assert!(!down.errors.is_empty(), "{down:#?}");
    println!("down: {:?}", down.errors);
    stand_in.resume().await.unwrap();
    // Every request fails for a while: the zone stops after a few.
    stand_in.fail_next(20, 500);
    let failing = webhook.sync_all(&more, SyncMode::Changed).await;
    assert!(!failing.errors.is_empty(), "{failing:#?}");
    println!("failing: {:?}", failing.errors);
    stand_in.fail_next(0, 500);
    let back = webhook.sync_all(&more, SyncMode::Changed).await;
    assert_clean(&back);
    assert_eq!(held(&stand_in).len(), 2, "{:#?}", held(&stand_in));
}

/// 300 names with at most 100 endpoints per request: several requests,
/// every name there; a record type the provider refuses is reported
/// alone and the rest applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_changes_go_in_requests_and_a_refused_record_is_isolated() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig {
        types: vec!["A".into(), "TXT".into()],
        ..WebhookProviderConfig::default()
    })
    .await
    .unwrap();
    let webhook = provider(&stand_in.url(), |c| c.max_endpoints_per_request = 100);
    let mut endpoints: Vec<Value> = (0..300)
        .map(|i| {
            ep(
                &format!("n{i}.example.com"),
                "A",
                &[&format!("192.0.2.{}", i % 250 + 1)],
            )
        })
        .collect();
    endpoints.push(ep("mail.example.com", "MX", &["10 mx.example.com"]));
    let report = webhook
        .sync_all(&desired(Value::Array(endpoints)), SyncMode::Changed)
        .await;
    println!(
        "writes {} changes {} rejected {:?}",
        report.writes, report.changes, report.rejected
    );
    assert!(report.errors.is_empty(), "{report:#?}");
    assert_eq!(report.rejected.len(), 1, "{report:#?}");
    assert_eq!(report.rejected[0].0, "mail.example.com");
    assert!(report.rejected[0].2.contains("refused"), "{report:#?}");
    assert_eq!(held(&stand_in).len(), 300);
    assert!(report.writes >= 6, "600 endpoints in requests of 100 at most");
}

/// Writes failing with 500 while reads work: a few split attempts, then
/// the zone's sync stops with an error (no endless halving); the next sync
/// writes everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_writes_stop_the_zone_after_a_few_and_lose_nothing() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    let webhook = provider(&stand_in.url(), |c| c.max_endpoints_per_request = 100);
    let endpoints: Vec<Value> = (0..200)
        .map(|i| ep(&format!("n{i}.example.com"), "A", &["192.0.2.1"]))
        .collect();
    let fixture = desired(Value::Array(endpoints));
    stand_in.fail_next_writes(1000, 500);
    let before = stand_in.requests();
    let failing = webhook.sync_all(&fixture, SyncMode::Changed).await;
    let requests = stand_in.requests() - before;
    println!("failing: {:?} after {requests} requests", failing.errors);
    assert!(
        matches!(&failing.errors[..], [(ErrorScope::Zone(_), why)] if why.contains("requests in a row failed")),
        "{failing:#?}"
    );
    assert!(failing.rejected.is_empty(), "nothing reported as refused: {failing:#?}");
    assert!(requests <= 10, "{requests} requests");
    stand_in.fail_next_writes(0, 500);
    assert_clean(&webhook.sync_all(&fixture, SyncMode::Changed).await);
    assert_eq!(held(&stand_in).len(), 200);
}

/// 429 and 503 ask the client to slow down and say nothing of the records
/// sent: the request is not split (no record is reported refused), and
/// nothing more is sent to the provider for its `Retry-After` (else 1 s,
/// doubling); then one request applies everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_backs_off_the_provider_without_splitting() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    // Negotiated and one name published before the first round.
    let mut names: Vec<Value> = vec![ep("seed.example.com", "A", &["192.0.2.99"])];
    assert_clean(
        &webhook
            .sync_all(&desired(Value::Array(names.clone())), SyncMode::Changed)
            .await,
    );
    for (status, retry_after, wait) in [
        (429, Some(2), Duration::from_secs(2)),
        (503, None, Duration::from_secs(1)),
    ] {
        // Four new names each round (and those of the rounds before).
        names.extend((1..=4).map(|i| ep(&format!("n{i}s{status}.example.com"), "A", &[&format!("192.0.2.{i}")])));
        let fixture = desired(Value::Array(names.clone()));
        stand_in.set_retry_after(retry_after);
        stand_in.fail_next_writes(1, status);
        let before = stand_in.requests();
        let throttled = webhook.sync_all(&fixture, SyncMode::Changed).await;
        let started = std::time::Instant::now();
        let requests = stand_in.requests() - before;
        println!("{status}: {requests} requests: {:?}", throttled.errors);
        // GET /records, POST /adjustendpoints, one POST /records: no halving.
        assert_eq!(requests, 3, "{status}: one write, not split");
        assert!(
            throttled.rejected.is_empty(),
            "{status}: nothing refused: {throttled:#?}"
        );
        assert!(
            matches!(&throttled.errors[..], [(ErrorScope::Zone(_), why)] if why.contains(&format!("status {status}")) && why.contains(&format!("{wait:?}"))),
            "{status}: {throttled:#?}"
        );
        // Within the wait: nothing is sent at all.
        let before = stand_in.requests();
        let waiting = webhook.sync_all(&fixture, SyncMode::Changed).await;
        assert_eq!(stand_in.requests(), before, "{status}: nothing sent while throttled");
        assert!(
            matches!(&waiting.errors[..], [(ErrorScope::Zone(_), why)] if why.contains("asked to slow down")),
            "{waiting:#?}"
        );
        tokio::time::sleep(wait.saturating_sub(started.elapsed()) + Duration::from_millis(200)).await;
        let back = webhook.sync_all(&fixture, SyncMode::Changed).await;
        assert_clean(&back);
        assert_eq!(back.writes, 1, "{status}: everything in one request after the wait");
        assert_eq!(held(&stand_in).len(), names.len());
    }
}

/// Records of another owner (external-dns in another cluster) and records
/// without an owner are conflicts, never changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_other_owners_are_never_touched() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    stand_in
        .put(json!({"dnsName": "app.example.com", "recordType": "A", "targets": ["198.51.100.1"], "recordTTL": 300}));
    stand_in.put(json!({"dnsName": "a-app.example.com", "recordType": "TXT",
        "targets": ["\"heritage=external-dns,external-dns/owner=cluster-b,external-dns/resource=ingress/ns/app\""]}));
    stand_in.put(json!({"dnsName": "manual.example.com", "recordType": "A", "targets": ["198.51.100.2"]}));
    let webhook = provider(&stand_in.url(), |_| {});
    let report = webhook
        .sync_all(
            &desired(json!([
                ep("app.example.com", "A", &["192.0.2.1"]),
                ep("manual.example.com", "A", &["192.0.2.2"]),
                ep("mine.example.com", "A", &["192.0.2.3"]),
            ])),
            SyncMode::Changed,
        )
        .await;
    let holders: Vec<(String, String)> = report
        .conflicts
        .iter()
        .map(|(d, h)| (d.name.clone(), h.clone()))
        .collect();
    assert!(
        holders.contains(&("app.example.com".into(), "owner \"cluster-b\"".into())),
        "{report:#?}"
    );
    assert!(
        holders.contains(&("manual.example.com".into(), "a record with no owner".into())),
        "{report:#?}"
    );
    let rows = held(&stand_in);
    assert!(rows.contains(&("app.example.com".into(), "A".into(), vec!["198.51.100.1".into()], 300)));
    assert!(rows.iter().any(|r| r.0 == "mine.example.com"));
}

/// Negotiation refuses a server that is not a webhook provider (another
/// Content-Type) without retrying, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_needs_the_media_type() {
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    stand_in.fail_next(1, 404);
    let webhook = provider(&stand_in.url(), |_| {});
    let report = webhook
        .sync_all(
            &desired(json!([ep("www.example.com", "A", &["192.0.2.1"])])),
            SyncMode::Changed,
        )
        .await;
    assert!(
        matches!(&report.errors[..], [(ErrorScope::Provider, why)] if why.contains("status 404")),
        "{report:#?}"
    );
    // Negotiated again at the next sync.
    assert_clean(
        &webhook
            .sync_all(
                &desired(json!([ep("www.example.com", "A", &["192.0.2.1"])])),
                SyncMode::Changed,
            )
            .await,
    );
}

/// A hostile tenant (`fedns_e2e::tenancy`): after publishing with the
/// attacker's DNSEndpoints, the provider behind the protocol holds exactly
/// what it held with the victim alone, and every attempt is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenant_changes_nothing_behind_the_webhook() {
    use fedns_e2e::tenancy;
    let stand_in = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();
    let webhook = provider(&stand_in.url(), |_| {});
    let report = webhook.sync_all(&tenancy::desired(false), SyncMode::Changed).await;
    assert_clean(&report);
    let before = stand_in.records();
    let attacked = tenancy::desired(true);
    let refusals = tenancy::assert_every_attempt_refused(&attacked);
    let report = webhook.sync_all(&attacked, SyncMode::Full).await;
    assert_clean(&report);
    let after = stand_in.records();
    println!("refused:\n{}", refusals.join("\n"));
    assert_eq!(after, before, "the provider's records are unchanged");
    assert!(after.iter().any(|e| e["dnsName"] == tenancy::VICTIM_SERVICE));
}
