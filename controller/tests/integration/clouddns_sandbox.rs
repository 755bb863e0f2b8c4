//! `fedns sandbox --provider google-clouddns` and `--provider webhook`:
//! the sandbox starts a Cloud DNS API stand-in (or an external-dns webhook
//! provider stand-in) on loopback, the controller publishes the
//! federation's names to it (with external-dns registry records), and the
//! first screen says where to look.

use std::net::SocketAddr;

use crate::common::*;
use fedns_controller::cli::{sandbox, Provider, SandboxArgs};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clouddns_sandbox_publishes_to_the_stand_in_and_says_where() {
    let port = free_port();
    let args = SandboxArgs {
        action: None,
        state_dir: temp_dir("clouddns-sandbox"),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], port)),
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        members_from: None,
        engine: None,
        verbose: false,
        provider: vec![Provider::GoogleClouddns],
    };
    let running = sandbox::start(&args).await.unwrap();
    let dns = running.clouddns.clone().expect("the stand-in runs");
    let lines = sandbox::clouddns_lines(&dns);
    assert!(lines.contains("curl -s -H 'Authorization: Bearer "), "{lines}");
    assert!(
        lines.contains("/dns/v1/projects/fedns-sandbox/managedZones/example-com/rrsets"),
        "{lines}"
    );
    let published = |name: &str, t: &str| {
        dns.record_sets("fedns-sandbox", "example-com")
            .unwrap_or_default()
            .into_iter()
            .any(|s| s.name == name && s.rtype == t)
    };
    eventually("the global name in Cloud DNS", || {
        published("nginx.ns.myfed.svc.example.com.", "A") && published("a-nginx.ns.myfed.svc.example.com.", "TXT")
    })
    .await;
    eventually("shop's AAAA in Cloud DNS", || published("shop.example.com.", "AAAA")).await;
    running.shutdown().await;

    let wrong = SandboxArgs {
        provider: vec![Provider::Route53],
        state_dir: temp_dir("clouddns-sandbox-route53"),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        ..args
    };
    let error = match sandbox::start(&wrong).await {
        Ok(_) => panic!("route53 is not emulated"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("emulates Cloud DNS and an external-dns webhook provider only"),
        "{error}"
    );
}

/// `fedns sandbox --provider webhook`: the sandbox starts an external-dns
/// webhook provider stand-in, the controller publishes the federation's
/// names to it through the protocol (with external-dns registry records,
/// TTLs as the provider's adjustendpoints raised them); a stand-in
/// external-dns pushes `legacy.example.com` into `fedns webhook-provider`,
/// which the DNS server then answers; the first screen says where to look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_sandbox_publishes_to_the_stand_in_and_says_where() {
    let args = SandboxArgs {
        action: None,
        state_dir: temp_dir("webhook-sandbox"),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        members_from: None,
        engine: None,
        verbose: false,
        provider: vec![Provider::Webhook],
    };
    let running = sandbox::start(&args).await.unwrap();
    let provider = running.webhook.clone().expect("the stand-in runs");
    let lines = sandbox::webhook_lines(&provider, running.webhook_provider.as_deref(), running.dns_addr);
    assert!(
        lines.contains("curl -s -H 'Accept: application/external.dns.webhook+json;version=1' http://127.0.0.1:"),
        "{lines}"
    );
    assert!(lines.contains("+short legacy.example.com A"), "{lines}");
    let published = |name: &str, t: &str| {
        provider
            .records()
            .into_iter()
            .find(|e| e["dnsName"] == name && e["recordType"] == t)
    };
    let took = eventually("the global name at the webhook provider", || {
        published("nginx.ns.myfed.svc.example.com", "A").is_some()
            && published("a-nginx.ns.myfed.svc.example.com", "TXT").is_some()
    })
    .await;
    println!("published through the webhook protocol after {took:?}");
    let global = published("nginx.ns.myfed.svc.example.com", "A").unwrap_or_default();
    assert_eq!(global["recordTTL"], 60, "the provider's TTL floor: {global}");
    // The other way: what the stand-in external-dns pushed into fedns
    // webhook-provider is answered by the sandbox's DNS server, and also
    // published on to the webhook provider like any name.
    let dns = running.dns_addr.port();
    eventually("legacy.example.com answered", || {
        dig(dns, "legacy.example.com", "A", false) == ["192.0.2.80"]
    })
    .await;
    eventually("legacy.example.com published on", || {
        published("legacy.example.com", "A").is_some()
    })
    .await;
    running.shutdown().await;
}
