//! Failover and failback delays end to end (`failbackDelaySeconds`): a
//! load balancer that is up 1 s and down 1 s leaves the answers once and
//! stays out (no flap), shows its pending state in `status.probes[]`, and
//! returns once it has passed for the delay. Three emulated members whose
//! Service load balancers are HTTP responders on 127.0.4.1-3, answers read
//! with `dig`; every wait has a 30 s deadline and prints what it measured.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::health_e2e::{member_yaml, probed_federation, ProbedFederation};
use fedns_api::ServiceDNSRecord;
use kube::api::Api;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";
const FLAPPING: &str = "127.0.4.1";

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
# The load balancers are responders on loopback: probes need the allowance.
spec: {domain: example.com, probeAllowedNetworks: [127.0.0.0/8]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec:
  domainRef: myfed
  recordTTL: 5
  healthCheck:
    protocol: HTTP
    path: /healthz
    periodSeconds: 1
    timeoutSeconds: 1
    failureThreshold: 1
    successThreshold: 1
    failbackDelaySeconds: 10
"#;

fn serves_flapping(dns_port: u16) -> bool {
    dig(dns_port, GLOBAL, "A", false).iter().any(|a| a == FLAPPING)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_load_balancer_does_not_flap_the_answers() {
    let ProbedFederation {
        responders,
        federation,
        dir,
    } = probed_federation(
        "hysteresis",
        4,
        &[("a", "region-a"), ("b", "region-b"), ("c", "region-c")],
        member_yaml,
        HOST_YAML,
    )
    .await;
    let dns_port = free_port();
    let _controller = spawn_controller(&dir, dns_port, free_port(), &["--udp-workers", "1"]);
    let started = Instant::now();
    while dig(dns_port, GLOBAL, "A", false).len() != 3 {
        assert!(started.elapsed() < Duration::from_secs(30), "not published within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("published after {:?}", started.elapsed());

    // Up 1 s, down 1 s, for 14 s, sampling the answer every 100 ms.
    let mut served = serves_flapping(dns_port);
    let mut changes = Vec::new();
    let flapping = Instant::now();
    // Timed from the last resume, not from the loop's end: under load a
    // phase's sampling runs past its second, and the pending Up begins at
    // the resume.
    let mut last_resume = Instant::now();
    for cycle in 0..7 {
        for up in [false, true] {
            if up {
                responders[0].resume().await.unwrap();
                last_resume = Instant::now();
            } else {
                responders[0].stop();
            }
            let phase = Instant::now();
            while phase.elapsed() < Duration::from_secs(1) {
                let now = serves_flapping(dns_port);
                if now != served {
                    changes.push((cycle, flapping.elapsed(), now));
                    served = now;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    println!("answer changes while flapping (cycle, time, served): {changes:?}");
    assert!(
        changes.len() <= 1,
        "the answers flapped with the load balancer: {changes:?}"
    );
    assert_eq!(changes.first().map(|c| c.2), Some(false), "it left once: {changes:?}");

    // Up for good: pending Up in status, back after failbackDelaySeconds.
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let up = Instant::now();
    let mut saw_pending = false;
    let mut explained = None;
    let kubeconfig = dir.join("host.kubeconfig");
    while !serves_flapping(dns_port) {
        if let Ok(record) = records.get("nginx").await {
            let probes = record.status.map(|s| s.probes).unwrap_or_default();
            saw_pending |= probes.iter().any(|p| {
                p.address == FLAPPING
                    && p.state == "Down"
                    && p.pending_state.as_deref() == Some("Up")
                    && p.pending_since.is_some()
                    && p.pending_effective_at.is_some()
            });
        }
        if saw_pending && explained.is_none() {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
                .args(["explain", GLOBAL, "--kubeconfig", kubeconfig.to_str().unwrap()])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if text.contains("pending Up: held since") && text.contains("takes effect at") {
                explained = Some(text);
            }
        }
        assert!(
            up.elapsed() < Duration::from_secs(30),
            "not back 30 s after it stopped flapping"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = last_resume.elapsed();
    println!(
        "back {took:?} after its last resume, {:?} after the flapping loop ended (failbackDelaySeconds 10)",
        up.elapsed()
    );
    assert!(saw_pending, "status.probes showed pendingState Up while it waited");
    let explained = explained.expect("`fedns explain` showed the pending Up (held since, takes effect at)");
    println!("{explained}");
    assert!(
        took >= Duration::from_secs(8),
        "returned before the failback delay: {took:?}"
    );
    federation.stop();
}
