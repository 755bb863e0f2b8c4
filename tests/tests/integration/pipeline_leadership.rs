//! The publishing pipeline drives any `Provider`, and only while it leads:
//! a replica that is not the leader never syncs external providers (two
//! replicas would race each other's writes), and winning leadership starts
//! a full sync at once. A deleted Domain stays until every provider has
//! synced its zone empty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::{Domain, PROVIDER_RECORDS_FINALIZER};
use fedns_controller::federation::Federation;
use fedns_e2e::free_port;
use fedns_providers::plan::desired::DesiredZones;
use fedns_providers::provider::{ErrorScope, Provider, SyncMode, SyncReport};
use fedns_providers::source::kube_source::{self, Sinks, SourceConfig};
use futures::future::BoxFuture;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams};
use kube::ResourceExt;
use tokio::sync::watch;

/// Records each sync's mode and the names it was asked to publish; while
/// `down`, every sync fails as an unreachable provider's would.
#[derive(Debug, Default)]
struct Recording {
    syncs: Mutex<Vec<(SyncMode, Vec<String>)>>,
    down: AtomicBool,
}

impl Provider for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }

    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport> {
        let names = desired
            .zones
            .iter()
            .flat_map(|z| z.rrsets.iter().map(|r| r.name.clone()))
            .collect();
        self.syncs.lock().unwrap().push((mode, names));
        let mut report = SyncReport::default();
        if self.down.load(Ordering::SeqCst) {
            report.errors.push((ErrorScope::Provider, "connection refused".into()));
        }
        Box::pin(async { report })
    }
}

const HOST: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: www, namespace: ns}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: A, targets: [192.0.2.1]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_sync_only_while_leading() {
    let dir = std::env::temp_dir().join(format!("fedns-e2e-leader-{}-{}", std::process::id(), free_port()));
    let federation = Federation::start(&dir, "fedns-system", &[]).await.unwrap();
    federation.host.seed_yaml("host", HOST).unwrap();
    let client = fedns_controller::kube_client::client(Some(&dir.join("host.kubeconfig")))
        .await
        .unwrap();

    let recording = Arc::new(Recording::default());
    let (leader_tx, leader) = watch::channel(false);
    let (state_tx, mut state) = watch::channel(Default::default());
    let config = SourceConfig {
        leader: Some(leader),
        ..SourceConfig::default()
    };
    let sinks = Sinks {
        embedded: None,
        providers: vec![recording.clone()],
    };
    let pipeline = tokio::spawn(kube_source::run(client, config, sinks, state_tx));

    // Published (desired computed) without leading: no provider sync.
    tokio::time::timeout(Duration::from_secs(30), state.wait_for(|s| s.publishes > 0))
        .await
        .expect("the pipeline runs within 30 s")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(recording.syncs.lock().unwrap().is_empty(), "synced while not leading");

    // Winning leadership: a full sync at once, with the desired names.
    let won = Instant::now();
    leader_tx.send_replace(true);
    loop {
        if let Some((mode, names)) = recording.syncs.lock().unwrap().first().cloned() {
            println!("full sync {:?} after winning leadership", won.elapsed());
            assert_eq!(mode, SyncMode::Full);
            assert_eq!(names, ["www.example.com"]);
            break;
        }
        assert!(
            won.elapsed() < Duration::from_secs(30),
            "no sync within 30 s of leading"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Losing it: no more syncs, even when the desired state changes.
    leader_tx.send_replace(false);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = recording.syncs.lock().unwrap().len();
    federation
        .host
        .seed_yaml(
            "more",
            "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: api, namespace: ns}\nspec:\n  endpoints:\n  - {dnsName: api.example.com, recordType: A, targets: [192.0.2.2]}\n",
        )
        .unwrap();
    let publishes = state.borrow().publishes;
    tokio::time::timeout(Duration::from_secs(30), state.wait_for(|s| s.publishes > publishes))
        .await
        .expect("the change is seen within 30 s")
        .unwrap();
    assert_eq!(
        recording.syncs.lock().unwrap().len(),
        before,
        "synced after losing leadership"
    );

    pipeline.abort();
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// Waits up to 30 s for `check`, polling every 50 ms; the time it took.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_domain_waits_until_its_records_are_gone() {
    let dir = std::env::temp_dir().join(format!("fedns-e2e-finalizer-{}-{}", std::process::id(), free_port()));
    let federation = Federation::start(&dir, "fedns-system", &[]).await.unwrap();
    federation.host.seed_yaml("host", HOST).unwrap();
    let client = fedns_controller::kube_client::client(Some(&dir.join("host.kubeconfig")))
        .await
        .unwrap();
    let domains: Api<Domain> = Api::namespaced(client.clone(), "fedns-system");
    let events: Api<Event> = Api::namespaced(client.clone(), "fedns-system");

    let provider = Arc::new(Recording::default());
    let (state_tx, _state) = watch::channel(Default::default());
    let config = SourceConfig {
        domain_finalizer: true,
        ..SourceConfig::default()
    };
    let sinks = Sinks {
        embedded: None,
        providers: vec![provider.clone()],
    };
    let pipeline = tokio::spawn(kube_source::run(client, config, sinks, state_tx));

    let took = eventually("the finalizer is added", async || {
        let domain = domains.get("myfed").await.unwrap();
        domain.finalizers().iter().any(|f| f == PROVIDER_RECORDS_FINALIZER)
    })
    .await;
    println!("finalizer added after {took:?}");

    // The provider is down when the Domain is deleted: the zone is asked
    // for empty, fails, and the Domain stays with a Warning Event.
    provider.down.store(true, Ordering::SeqCst);
    let asked = provider.syncs.lock().unwrap().len();
    domains.delete("myfed", &DeleteParams::default()).await.unwrap();
    let took = eventually("a Warning Event says why the Domain stays", async || {
        events.list(&Default::default()).await.unwrap().items.iter().any(|e| {
            e.reason.as_deref() == Some("ProviderError")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("myfed")
                && e.note.as_deref().is_some_and(|n| n.contains("connection refused"))
        })
    })
    .await;
    println!("Warning Event after {took:?}");
    {
        let syncs = provider.syncs.lock().unwrap();
        assert!(
            syncs[asked..].iter().any(|(_, names)| names.is_empty()),
            "the deleted Domain's zone was not synced empty: {:?}",
            &syncs[asked..]
        );
    }
    let domain = domains.get("myfed").await.unwrap();
    assert!(domain.metadata.deletion_timestamp.is_some());

    // The provider recovers: the next retry (within 5 s) releases it.
    let recovered = Instant::now();
    provider.down.store(false, Ordering::SeqCst);
    eventually("the Domain is released", async || {
        domains.get_opt("myfed").await.unwrap().is_none()
    })
    .await;
    println!("Domain released {:?} after the provider recovered", recovered.elapsed());

    pipeline.abort();
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
}
