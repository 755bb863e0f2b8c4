//! `fedns dns-server` against an emulated host cluster: it serves the
//! Domains and DNSEndpoints there, reports status, follows changes, and
//! keeps answering while the API server is down.

use std::time::Duration;

use crate::common::*;
use fedns_api::{DNSEndpoint, Domain};
use fedns_sandbox::Emulator;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_host_cluster_and_survives_its_outage() {
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system", "ns"]).await;
    let domains: Api<Domain> = Api::namespaced(client.clone(), "fedns-system");
    domains
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                "metadata": {"name": "myfed"},
                "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let endpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), "ns");
    endpoints
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
                "metadata": {"name": "service-nginx"},
                "spec": {"endpoints": [
                    {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
                    {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "targets": ["2001:db8::10"]},
                    {"dnsName": "elsewhere.example.org", "recordType": "A", "targets": ["203.0.113.99"]},
                    {"dnsName": "bad.example.com", "recordType": "A", "targets": ["not-an-ip"]},
                ]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    let dir = temp_dir("dns-server");
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let metrics_port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics_port}"),
        "--udp-workers",
        "1",
    ]);

    let name = "nginx.ns.myfed.svc.example.com";
    eventually("dns-server answers from the host cluster", || {
        dig(port, name, "A", false) == ["198.51.100.20", "203.0.113.10"]
    })
    .await;
    assert_eq!(dig(port, name, "AAAA", true), ["2001:db8::10"]);
    assert_eq!(dig_status(port, "bad.example.com", "A"), "NXDOMAIN");
    assert_eq!(dig_status(port, "elsewhere.example.org", "A"), "REFUSED");

    // Status and Events reported back.
    let endpoints_for_status = endpoints.clone();
    let mut status_ok = false;
    for _ in 0..300 {
        let current = endpoints_for_status.get("service-nginx").await.unwrap();
        if let Some(status) = current.status {
            if let Some(c) = fedns_api::conditions::get(&status.conditions, "embedded/Published") {
                assert_eq!(c.status, "False");
                assert!(
                    c.message.contains("outside every Domain") && c.message.contains("not-an-ip"),
                    "{}",
                    c.message
                );
                assert_eq!(status.observed_generation, current.metadata.generation);
                status_ok = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(status_ok, "DNSEndpoint status was not written");
    let domain = domains.get("myfed").await.unwrap();
    let domain_status = domain.status.unwrap();
    assert!(domain_status.serial.is_some_and(|s| s > 0));
    assert!(fedns_api::conditions::is_true(&domain_status.conditions, "Ready"));
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "ns");
    let listed = events.list(&Default::default()).await.unwrap();
    assert!(
        listed.items.iter().any(|e| e.reason.as_deref() == Some("InvalidInput")),
        "no Warning Event for the invalid endpoints"
    );

    // A change is followed.
    endpoints
        .patch(
            "service-nginx",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/spec/endpoints/0/targets", "value": ["203.0.113.11"]}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    eventually("dns-server follows a DNSEndpoint change", || {
        dig(port, name, "A", false) == ["203.0.113.11"]
    })
    .await;

    // The API server goes away: answers stay; when it returns, changes made
    // meanwhile are picked up.
    host.stop();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        dig(port, name, "A", false),
        ["203.0.113.11"],
        "last snapshot served while the host is down"
    );
    let info = host
        .store()
        .resource("multiclusterdns.fedns.io", "v1alpha1", "dnsendpoints")
        .unwrap();
    host.store()
        .patch(
            &info,
            Some("ns"),
            "service-nginx",
            fedns_sandbox::PatchKind::Json,
            json!([{"op": "replace", "path": "/spec/endpoints/0/targets", "value": ["203.0.113.12"]}]),
            None,
            fedns_sandbox::Target::Main,
        )
        .unwrap();
    host.resume().await.unwrap();
    eventually("dns-server resumes after the host cluster returns", || {
        dig(port, name, "A", false) == ["203.0.113.12"]
    })
    .await;

    // Health and metrics.
    assert_eq!(
        http_get(&format!("http://127.0.0.1:{metrics_port}/readyz")).await.0,
        200
    );
    let (code, body) = http_get(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert_eq!(code, 200);
    for metric in [
        "fedns_dns_queries_total{transport=\"udp\",qtype=\"A\",rcode=\"NOERROR\"}",
        "rcode=\"NXDOMAIN\"",
        "rcode=\"REFUSED\"",
        "fedns_dns_answer_duration_seconds_bucket",
        "fedns_dns_zone_serial{zone=\"example.com.\"}",
        "fedns_dns_zone_rrsets{zone=\"example.com.\"}",
        "fedns_dns_snapshot_updates_total",
    ] {
        assert!(body.contains(metric), "{metric} missing from /metrics:\n{body}");
    }
    host.stop();
}
