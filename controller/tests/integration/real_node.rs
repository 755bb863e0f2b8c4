//! fedns as pods on a real node, installed the way its users install it,
//! and what a DNS client sees while those pods restart. Opt-in:
//! `FEDNS_REAL_NODE_KUBECONFIG` names the admin kubeconfig of a node
//! (kubelet, container runtime, kube-proxy, Pod Security admission) that
//! already holds the fedns image under the reference `deploy/` names, and
//! `FEDNS_REAL_NODE_LB` the address the machine running the test routes to
//! that node's load balancer rules (the test writes it as the
//! `status.loadBalancer` of the Services it queries: no cloud assigns
//! one). Without them the test says why and passes, as the real-API-server
//! tests do. docs/testing.md says how to start such a node here.
//!
//! The node's cluster is both the host and its own member, all in
//! `fedns-system` (which enforces Pod Security `restricted`):
//! `fedns crds`, `deploy/overlays/dns-replicas` (the base plus three
//! `dns-server` replicas), `deploy/member` (joined with `fedns join
//! --service-account`), `deploy/agent`, `deploy/member-discovery` and its
//! host part. A Service behind a hand-set load balancer address (TEST-NET,
//! never probed: the record has no health check) is published and asked
//! through the `fedns-dns` Service's load balancer address; then a client
//! sends 200 queries/s over UDP and 20/s over TCP through each of four
//! disruptions, and every query must get the right answer.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fedns_dnsserver::hickory_proto::op::ResponseCode;
use serde_json::{json, Value};

use crate::common::{kubectl_at, temp_dir};
use crate::dns_load::{self, Load};

/// The node's admin kubeconfig.
const NODE_KUBECONFIG: &str = "FEDNS_REAL_NODE_KUBECONFIG";
/// The address routed to the node's load balancer rules.
const NODE_LB: &str = "FEDNS_REAL_NODE_LB";
/// The backend image behind the published Service (an HTTP server; the
/// real-node scripts build busybox httpd under this name).
const BACKEND_IMAGE: &str = "FEDNS_REAL_NODE_BACKEND_IMAGE";
const NS: &str = "fedns-system";
const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";
const DISCOVERY: &str = "nginx.ns.myfed.svc.cluster.local";
/// The published Service's load balancer address (TEST-NET-3: answered,
/// never probed, never reached).
const SERVICE_LB: &str = "203.0.113.80";
/// How long an install or a rollout may take on a busy two-core node.
const SLOW: Duration = Duration::from_secs(300);

/// kubectl with the cluster's kubeconfig ([`kubectl_at`]).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    kubectl_at(kubeconfig, args)
}

fn kubectl_json(kubeconfig: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    serde_json::from_str(&kubectl(kubeconfig, &args)).unwrap()
}

fn apply_json(kubeconfig: &Path, dir: &Path, name: &str, items: &[Value]) {
    let path = dir.join(format!("{name}.json"));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&path, serde_json::to_vec(&list).unwrap()).unwrap();
    kubectl(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            path.to_str().unwrap(),
        ],
    );
}

/// Writes `status.loadBalancer` of Service `namespace/name` to `ip`, as a
/// cloud's controller would.
fn set_load_balancer(kubeconfig: &Path, namespace: &str, name: &str, ip: &str) {
    let patch = json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}).to_string();
    kubectl(
        kubeconfig,
        &[
            "-n",
            namespace,
            "patch",
            "service",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ],
    );
}

/// The pods of `component` in fedns-system: (name, ready, terminating).
fn pods(kubeconfig: &Path, component: &str) -> Vec<(String, bool, bool)> {
    let list = kubectl_json(
        kubeconfig,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/component={component}"),
        ],
    );
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pod| {
            let ready = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (
                pod["metadata"]["name"].as_str().unwrap().to_owned(),
                ready,
                !pod["metadata"]["deletionTimestamp"].is_null(),
            )
        })
        .collect()
}

fn lease_holder(kubeconfig: &Path) -> String {
    kubectl(
        kubeconfig,
        &[
            "-n",
            NS,
            "get",
            "lease",
            "fedns-controller",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
    )
}

/// Waits (up to [`SLOW`]) until `component` has `replicas` pods, all
/// Ready and none terminating; returns how long it took.
async fn settled_pods(kubeconfig: &Path, component: &str, replicas: usize) -> Duration {
    let started = Instant::now();
    loop {
        let now = pods(kubeconfig, component);
        if now.len() == replicas && now.iter().all(|(_, ready, terminating)| *ready && !terminating) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < SLOW,
            "{component}: pods not settled after {SLOW:?}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The working set of every fedns pod (MiB), from the kubelet's summary
/// API (`/stats/summary` through the API server's node proxy), one line.
fn pod_memory(kubeconfig: &Path) -> String {
    let nodes = kubectl_json(kubeconfig, &["get", "nodes"]);
    let mut out = Vec::new();
    for node in nodes["items"].as_array().unwrap() {
        let name = node["metadata"]["name"].as_str().unwrap();
        let summary: Value = serde_json::from_str(&kubectl(
            kubeconfig,
            &["get", "--raw", &format!("/api/v1/nodes/{name}/proxy/stats/summary")],
        ))
        .unwrap();
        for pod in summary["pods"].as_array().into_iter().flatten() {
            if pod["podRef"]["namespace"] != NS {
                continue;
            }
            let bytes = pod["memory"]["workingSetBytes"].as_f64().unwrap_or_default();
            out.push(format!(
                "{} {:.1} MiB",
                pod["podRef"]["name"].as_str().unwrap_or_default(),
                bytes / (1024.0 * 1024.0)
            ));
        }
    }
    out.sort();
    out.join(", ")
}

/// Asks `name` at `server` until the answer is exactly `expected`.
async fn answers(server: SocketAddr, name: &str, expected: &str) -> Duration {
    let started = Instant::now();
    let want: std::collections::BTreeSet<std::net::Ipv4Addr> = [expected.parse().unwrap()].into();
    loop {
        let seen = dns_load::ask(server, name).await;
        if seen
            .as_ref()
            .is_ok_and(|(code, got)| *code == ResponseCode::NoError && *got == want)
        {
            println!("{name} at {server}: {expected} after {:?}", started.elapsed());
            return started.elapsed();
        }
        assert!(
            started.elapsed() < SLOW,
            "{name} at {server}: not {expected} after {SLOW:?}; last: {seen:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One disruption under load: what a client saw.
async fn under_load(
    kubeconfig: &Path,
    what: &str,
    load: Load,
    component: &str,
    replicas: usize,
    disrupt: impl FnOnce(),
) -> String {
    let running = dns_load::start(load);
    tokio::time::sleep(Duration::from_secs(3)).await;
    disrupt();
    // Let the rollout begin before waiting for it to settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let settled = settled_pods(kubeconfig, component, replicas).await + Duration::from_secs(2);
    // The last old pod has exited; keep asking a little longer.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (report, ran) = running.stop().await;
    let line = format!(
        "{what}: settled in {settled:?}; {ran:?} of load: UDP {}; TCP {}",
        report.udp.line(),
        report.tcp.line()
    );
    println!("{line}");
    let failures = report.first_failures.lock().unwrap().clone();
    assert_eq!(
        report.udp.failed() + report.tcp.failed(),
        0,
        "{what}: failed queries (first: {failures:?})"
    );
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedns_runs_as_pods_and_answers_through_restarts() {
    let Some(kubeconfig) = std::env::var_os(NODE_KUBECONFIG).map(PathBuf::from) else {
        println!("{NODE_KUBECONFIG} not set: no real node to run on (docs/testing.md, \"A real node\"); skipped");
        return;
    };
    let lb: IpAddr = std::env::var(NODE_LB)
        .unwrap_or_else(|_| {
            panic!("{NODE_KUBECONFIG} is set, {NODE_LB} is not: the address routed to the node's load balancers")
        })
        .parse()
        .unwrap_or_else(|e| panic!("{NODE_LB}: {e}"));
    let backend_image = std::env::var(BACKEND_IMAGE).unwrap_or_else(|_| "registry.k8s.io/rn-busybox:1.35".into());
    let k = kubeconfig.as_path();
    let dir = temp_dir("real-node");
    let total = Instant::now();

    // A clean slate: what an earlier run left in the namespaces goes.
    kubectl(
        k,
        &["delete", "namespace", NS, "ns", "--ignore-not-found", "--timeout=180s"],
    );

    // The install, in the documented order: CRDs, then workloads.
    let crds = Command::new(env!("CARGO_BIN_EXE_fedns")).arg("crds").output().unwrap();
    assert!(crds.status.success());
    let crds_path = dir.join("crds.yaml");
    std::fs::write(&crds_path, &crds.stdout).unwrap();
    kubectl(k, &["apply", "--server-side", "-f", crds_path.to_str().unwrap()]);
    kubectl(
        k,
        &["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"],
    );
    for kustomization in [
        "deploy/overlays/dns-replicas",
        "deploy/member",
        "deploy/agent",
        "deploy/member-discovery/host",
    ] {
        kubectl(k, &["apply", "--server-side", "-k", kustomization]);
    }
    let namespace = kubectl_json(k, &["get", "namespace", NS]);
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted",
        "{NS} enforces Pod Security restricted"
    );

    // Member-side replicas: their host credentials (the read-only account
    // of deploy/member-discovery/host), their member name.
    let admin = kube::config::Kubeconfig::read_from(k).unwrap();
    let cluster = admin.clusters[0].cluster.clone().unwrap();
    let server = cluster.server.clone().unwrap();
    let ca = cluster.certificate_authority_data.clone().unwrap();
    let token = kubectl(
        k,
        &["-n", NS, "create", "token", "fedns-member-discovery", "--duration=24h"],
    );
    let host_kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: host, cluster: {{server: \"{server}\", certificate-authority-data: {ca}}}}}]\nusers: [{{name: discovery, user: {{token: {}}}}}]\ncontexts: [{{name: host, context: {{cluster: host, user: discovery}}}}]\ncurrent-context: host\n",
        token.trim()
    );
    apply_json(
        k,
        &dir,
        "host-kubeconfig",
        &[json!({"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "fedns-host-kubeconfig", "namespace": NS},
                 "stringData": {"kubeconfig": host_kubeconfig}})],
    );
    let rendered = kubectl(k, &["kustomize", "deploy/member-discovery"]).replace("MEMBER-NAME", "rnode");
    let rendered_path = dir.join("member-discovery.yaml");
    std::fs::write(&rendered_path, rendered).unwrap();
    kubectl(k, &["apply", "--server-side", "-f", rendered_path.to_str().unwrap()]);

    // Every pod Ready, under restricted.
    for (component, replicas) in [
        ("controller", 2),
        ("dns-server", 3),
        ("agent", 1),
        ("member-discovery", 2),
    ] {
        let took = settled_pods(k, component, replicas).await;
        println!(
            "{component}: {replicas} pod(s) Ready {took:?} later ({:?} since the install began)",
            total.elapsed()
        );
    }
    let holder = lease_holder(k);
    let controllers: Vec<String> = pods(k, "controller").into_iter().map(|p| p.0).collect();
    assert!(
        controllers.contains(&holder),
        "Lease holder {holder:?} is a controller pod: {controllers:?}"
    );
    println!("Lease fedns-controller held by {holder}");
    set_load_balancer(k, NS, "fedns-dns", &lb.to_string());

    // The node's own cluster as a member, through deploy/member's account.
    let out = Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(["join", "rnode", "--region", "real-node", "--zone", "real-node-a"])
        .args(["--service-account", "fedns-system/fedns-member"])
        .arg("--member-kubeconfig")
        .arg(k)
        .arg("--kubeconfig")
        .arg(k)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fedns join: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));

    // A workload behind a hand-set load balancer address, and its record.
    let labels = json!({"app": "nginx"});
    apply_json(
        k,
        &dir,
        "workload",
        &[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "nginx", "namespace": "ns"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels},
                                         "spec": {"containers": [{"name": "web", "image": backend_image,
                                                                  "imagePullPolicy": "IfNotPresent",
                                                                  "ports": [{"containerPort": 8080}]}]}}}}),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "nginx", "namespace": "ns"},
                   "spec": {"type": "LoadBalancer", "selector": labels,
                            "ports": [{"port": 80, "targetPort": 8080}]}}),
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                   "metadata": {"name": "myfed", "namespace": NS},
                   "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"]}}),
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                   "metadata": {"name": "nginx", "namespace": "ns"},
                   "spec": {"domainRef": "myfed", "recordTTL": 30}}),
            // The member-side replicas' address, for this test's client:
            // the same load balancer address on another port.
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "fedns-discovery-lb", "namespace": NS},
                   "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                            "selector": {"app.kubernetes.io/name": "fedns", "app.kubernetes.io/component": "member-discovery"},
                            "ports": [{"name": "dns-udp", "port": 5354, "targetPort": 5353, "protocol": "UDP"},
                                      {"name": "dns-tcp", "port": 5354, "targetPort": 5353, "protocol": "TCP"}]}}),
        ],
    );
    set_load_balancer(k, "ns", "nginx", SERVICE_LB);
    set_load_balancer(k, NS, "fedns-discovery-lb", &lb.to_string());
    let dns = SocketAddr::new(lb, 53);
    let discovery = SocketAddr::new(lb, 5354);
    answers(dns, GLOBAL, SERVICE_LB).await;
    let cluster_ip = kubectl(
        k,
        &[
            "-n",
            "ns",
            "get",
            "service",
            "nginx",
            "-o",
            "jsonpath={.spec.clusterIP}",
        ],
    );
    answers(discovery, DISCOVERY, &cluster_ip).await;
    println!("installed and answering {:?} after the install began", total.elapsed());
    // The kubelet samples containers every few seconds: wait for a sample
    // of every pod.
    let sampled = Instant::now();
    let mut memory = pod_memory(k);
    while memory.contains(" 0.0 MiB") && sampled.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        memory = pod_memory(k);
    }
    println!("working sets after install: {memory}");

    // Through each disruption: 200 UDP + 20 TCP queries a second.
    let global = Load {
        server: dns,
        name: GLOBAL.to_owned(),
        expected: [SERVICE_LB.parse().unwrap()].into(),
        udp_per_second: 200,
        tcp_per_second: 20,
        timeout: Duration::from_secs(2),
    };
    let local = Load {
        server: discovery,
        name: DISCOVERY.to_owned(),
        expected: [cluster_ip.parse().unwrap()].into(),
        ..global.clone()
    };
    let mut lines = Vec::new();
    lines.push(
        under_load(
            k,
            "(a) rollout restart of the controller",
            global.clone(),
            "controller",
            2,
            || {
                kubectl(k, &["-n", NS, "rollout", "restart", "deployment/fedns-controller"]);
            },
        )
        .await,
    );
    lines.push(
        under_load(
            k,
            "(b) rollout restart of the dns-server replicas",
            global.clone(),
            "dns-server",
            3,
            || {
                kubectl(k, &["-n", NS, "rollout", "restart", "deployment/fedns-dns-server"]);
            },
        )
        .await,
    );
    let leader = lease_holder(k);
    let (deleted_tx, deleted_rx) = std::sync::mpsc::channel::<Instant>();
    // Watches the Lease from the delete on: when another replica holds it.
    let handed_over = {
        let (k, leader) = (kubeconfig.clone(), leader.clone());
        tokio::task::spawn_blocking(move || {
            let deleted = deleted_rx.recv().unwrap();
            loop {
                let holder = lease_holder(&k);
                if !holder.is_empty() && holder != leader {
                    return (holder, deleted.elapsed());
                }
                assert!(deleted.elapsed() < SLOW, "the Lease stayed with {leader}");
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    lines.push(
        under_load(k, "(c) the leader pod deleted", global.clone(), "controller", 2, || {
            kubectl(k, &["-n", NS, "delete", "pod", &leader, "--wait=false"]);
            deleted_tx.send(Instant::now()).unwrap();
        })
        .await,
    );
    let (new_leader, after) = handed_over.await.unwrap();
    let line = format!("(c) Lease: {leader} → {new_leader}, {after:?} after the delete");
    println!("{line}");
    lines.push(line);
    lines.push(
        under_load(
            k,
            "(d) rollout restart of the member-side replicas",
            local,
            "member-discovery",
            2,
            || {
                kubectl(k, &["-n", NS, "rollout", "restart", "deployment/fedns-discovery"]);
            },
        )
        .await,
    );
    println!("working sets after the restarts: {}", pod_memory(k));
    println!("---- through restarts ({:?} in all):", total.elapsed());
    for line in lines {
        println!("{line}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
