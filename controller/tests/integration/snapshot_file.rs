//! `--snapshot-file` across restarts: a killed controller and a killed
//! `dns-server` replica, restarted while the host API is unreachable,
//! answer at once from what they served (and report ready); a cluster
//! that lost its load balancer while the controller was down leaves the
//! answers once the restarted controller has listed the objects again,
//! and no answer on the way is empty or partial.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_controller::federation::Federation;
use serde_json::json;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, recordTTL: 30}
"#;

/// A copy of the federation's host kubeconfig whose server is a loopback
/// port nobody listens on: the host API unreachable.
fn unreachable_kubeconfig(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(dir.join("host.kubeconfig")).unwrap();
    let closed = free_port();
    let mut out = String::new();
    for line in text.lines() {
        match line.trim_start().strip_prefix("server:") {
            Some(_) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!("{indent}server: https://127.0.0.1:{closed}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    let path = dir.join("unreachable.kubeconfig");
    std::fs::write(&path, out).unwrap();
    path
}

/// `fedns controller` with `kubeconfig`, keeping its zones in `file`.
fn controller(kubeconfig: &Path, dns_port: u16, file: &Path) -> Process {
    spawn_fedns(&[
        "controller",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--udp-workers",
        "1",
        "--leader-elect=false",
        "--snapshot-file",
        file.to_str().unwrap(),
    ])
}

/// A read-only `fedns dns-server` with `kubeconfig`, keeping its zones in
/// `file`, its /readyz on `metrics_port`.
fn replica(kubeconfig: &Path, dns_port: u16, metrics_port: u16, file: &Path) -> Process {
    spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics_port}"),
        "--udp-workers",
        "1",
        "--read-only",
        "--snapshot-file",
        file.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_servers_answer_from_the_snapshot_file_and_catch_up() {
    let dir = temp_dir("snapshot-file");
    let names = ["east-a", "east-b", "west"];
    let mut federation = Federation::start(&dir, "fedns-system", &names).await.unwrap();
    let seeds = [
        ("east-a", "us-east-1", "us-east-1a", vec!["203.0.113.10"]),
        ("east-b", "us-east-1", "us-east-1b", vec!["203.0.113.20"]),
        ("west", "us-west-2", "us-west-2a", vec!["198.51.100.10"]),
    ];
    for (name, region, zone, ips) in &seeds {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &crate::controller_e2e::member_yaml(region, zone, ips))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let host_kubeconfig = dir.join("host.kubeconfig");
    let all = ["198.51.100.10", "203.0.113.10", "203.0.113.20"];
    let (controller_file, replica_file) = (dir.join("controller.snapshot"), dir.join("replica.snapshot"));
    let (dns, replica_dns, replica_metrics) = (free_port(), free_port(), free_port());

    // 1. Both serve every cluster and write their files.
    let first = controller(&host_kubeconfig, dns, &controller_file);
    let first_replica = replica(&host_kubeconfig, replica_dns, replica_metrics, &replica_file);
    eventually("the controller answers", || dig(dns, GLOBAL, "A", false) == all).await;
    eventually("the replica answers", || dig(replica_dns, GLOBAL, "A", false) == all).await;
    // Written after each change (here within a second of it): once the
    // files stop changing they hold what is served.
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    settled("the snapshot files' write times", Duration::from_millis(2500), || {
        let times = (modified(&controller_file), modified(&replica_file));
        async move { times }
    })
    .await;

    // 2. Killed (no last write), restarted with the host unreachable:
    // they answer from the files, and the replica reports ready.
    drop(first);
    drop(first_replica);
    let unreachable = unreachable_kubeconfig(&dir);
    let started = Instant::now();
    let blind = controller(&unreachable, dns, &controller_file);
    let blind_replica = replica(&unreachable, replica_dns, replica_metrics, &replica_file);
    let took = eventually("the restarted controller answers without its host", || {
        dig(dns, GLOBAL, "A", false) == all
    })
    .await;
    eventually("the restarted replica answers without its host", || {
        dig(replica_dns, GLOBAL, "A", false) == all
    })
    .await;
    println!(
        "answered from the snapshot file {:.2} s after the restart (host unreachable)",
        started.elapsed().min(took).as_secs_f64()
    );
    let (status, _) = http_get(&format!("http://127.0.0.1:{replica_metrics}/readyz")).await;
    assert_eq!(status, 200, "a replica serving its snapshot file is ready");
    assert!(
        blind.log_contains("serving the zones saved in the snapshot file"),
        "the controller said what it serves"
    );
    drop(blind);
    drop(blind_replica);

    // 3. While the controller is down, west loses its load balancer; the
    // restarted controller starts from the file (west still in it) and
    // drops west once it has listed the objects. No answer on the way is
    // empty or anything but the old or the new set.
    let west = federation.member("west").unwrap().clone();
    let services = west.store().resource("", "v1", "services").unwrap();
    west.store()
        .patch(
            &services,
            Some("ns"),
            "nginx",
            fedns_kube_emulator::PatchKind::Merge,
            json!({"status": {"loadBalancer": {"ingress": []}}}),
            None,
            fedns_kube_emulator::Target::Status,
        )
        .unwrap();
    let without_west = ["203.0.113.10", "203.0.113.20"];
    let restarted = Instant::now();
    let _controller = controller(&host_kubeconfig, dns, &controller_file);
    let mut seen_old = 0;
    let deadline = restarted + Duration::from_secs(30);
    let left = loop {
        let answer = dig(dns, GLOBAL, "A", false);
        if answer == without_west {
            break restarted.elapsed();
        }
        if !answer.is_empty() || restarted.elapsed() > Duration::from_secs(2) {
            assert_eq!(answer, all, "after the restart: neither the saved nor the new answer");
            seen_old += 1;
        }
        assert!(Instant::now() < deadline, "west still answered 30 s after the restart");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "west, down while the controller was, left the answers {:.2} s after the restart ({seen_old} answers from the file before)",
        left.as_secs_f64()
    );
    assert!(
        _controller.log_contains("serving the zones saved in the snapshot file"),
        "the restarted controller started from its file"
    );
    federation.stop();
    let _ = &mut federation;
}
