//! `fedns controller` with its host cluster reached only through a
//! kubeconfig, as in production: the CRDs and RBAC applied from `deploy/`
//! with kubectl, the federation's objects applied server-side, members
//! registered with a Secret, and the controller running under the
//! ServiceAccount `deploy/base/rbac.yaml` grants (on an RBAC-enforcing
//! server, any call outside that role fails with 403 and the test with
//! it). Two members (emulators) publish; one fails and leaves the answer;
//! it recovers and returns; the record's status is written.
//!
//! The host is a fresh emulator, and also the real API server named by
//! `FEDNS_REAL_KUBECONFIG` when that is set (it must be a cluster you can
//! throw away: the test leaves fedns's CRDs, RBAC and namespaces there).
//! Member clusters stay emulators: the load balancer addresses are
//! TEST-NET ones and nothing probes them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use fedns_kube_emulator::Emulator;
use serde_json::{json, Value};

use crate::common::*;
use crate::controller_e2e::member_yaml;
use crate::crds::REAL_KUBECONFIG;

const GLOBAL: &str = "nginx.ns.realhost.svc.example.com";

/// kubectl with the cluster's kubeconfig ([`kubectl_at`]).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    kubectl_at(kubeconfig, args)
}

fn apply(kubeconfig: &Path, dir: &Path, name: &str, documents: &[Value]) {
    let path = dir.join(format!("{name}.json"));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": documents});
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

/// A kubeconfig for the ServiceAccount fedns-system/fedns, with a token the
/// server mints (`kubectl create token`), or the admin one where the server
/// has no ServiceAccount tokens to mint (the emulator, which enforces no
/// RBAC either).
fn controller_kubeconfig(admin: &Path, dir: &Path, real: bool) -> PathBuf {
    if !real {
        return admin.to_path_buf();
    }
    let token = kubectl(
        admin,
        &["create", "token", "fedns", "-n", "fedns-system", "--duration=1h"],
    );
    let mut config: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(admin).unwrap()).unwrap();
    for user in config["users"].as_array_mut().unwrap() {
        user["user"] = json!({"token": token.trim()});
    }
    let path = dir.join("fedns-sa.kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    // The identity the controller runs as really is the ServiceAccount.
    let me = kubectl(&path, &["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert_eq!(me, "system:serviceaccount:fedns-system:fedns");
    path
}

async fn run_against(server: &str, admin: &Path, real: bool) {
    let dir = temp_dir("real-host");
    let started = Instant::now();
    // What `docs/operations.md` installs first: the CRDs, then RBAC.
    kubectl(
        admin,
        &["apply", "--server-side", "--force-conflicts", "-k", "deploy/crds"],
    );
    kubectl(
        admin,
        &["wait", "--for=condition=Established", "--timeout=30s", "crd", "--all"],
    );
    apply(
        admin,
        &dir,
        "namespaces",
        &[
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fedns-system"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        ],
    );
    kubectl(
        admin,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "deploy/base/rbac.yaml",
        ],
    );
    let controller_config = controller_kubeconfig(admin, &dir, real);

    // Two members, each with its Service's load balancer address.
    let mut members = Vec::new();
    for (name, zone, ip) in [
        ("east", "us-east-1a", "203.0.113.70"),
        ("west", "us-west-2a", "198.51.100.70"),
    ] {
        let member = Emulator::start().await.unwrap();
        let region = &zone[..zone.len() - 1];
        member.seed_yaml(name, &member_yaml(region, zone, &[ip])).unwrap();
        apply(
            admin,
            &dir,
            &format!("member-{name}"),
            &[
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": format!("realhost-{name}-token"), "namespace": "fedns-system"},
                    "type": "Opaque", "stringData": {"token": member.token()},
                }),
                json!({
                    "apiVersion": "core.fedns.io/v1alpha1", "kind": "MemberCluster",
                    "metadata": {"name": format!("realhost-{name}"), "namespace": "fedns-system"},
                    "spec": {
                        "apiEndpoint": member.url(),
                        "caBundle": base64_of(member.ca_pem()),
                        "secretRef": {"name": format!("realhost-{name}-token")},
                        "healthCheck": {"periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 2, "successThreshold": 1},
                    },
                }),
            ],
        );
        members.push((name, ip, member));
    }
    apply(
        admin,
        &dir,
        "federation",
        &[
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                "metadata": {"name": "realhost", "namespace": "fedns-system"},
                "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"]},
            }),
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                "metadata": {"name": "nginx", "namespace": "ns"},
                "spec": {"domainRef": "realhost", "recordTTL": 30},
            }),
        ],
    );
    println!("{server}: installed in {:?}", started.elapsed());

    let dns_port = free_port();
    let metrics_port = free_port();
    // spawn_controller reads `host.kubeconfig` in the folder it is given.
    std::fs::copy(&controller_config, dir.join("host.kubeconfig")).unwrap();
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let both = ["198.51.100.70", "203.0.113.70"];
    eventually(&format!("{server}: {GLOBAL} answers both members"), || {
        dig(dns_port, GLOBAL, "A", false) == both
    })
    .await;
    // The record's status went through the status subresource.
    eventually(&format!("{server}: ServiceDNSRecord status written"), || {
        let record: Value = serde_json::from_str(&kubectl(
            admin,
            &["get", "servicednsrecord", "nginx", "-n", "ns", "-o", "json"],
        ))
        .unwrap();
        record["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
    })
    .await;

    // A member's API server fails: its address leaves the answer, then
    // comes back with it.
    let (_, east_ip, east) = &members[0];
    east.stop();
    eventually(&format!("{server}: a failed member leaves"), || {
        dig(dns_port, GLOBAL, "A", false) == ["198.51.100.70"]
    })
    .await;
    east.resume().await.unwrap();
    eventually(&format!("{server}: the member returns"), || {
        dig(dns_port, GLOBAL, "A", false).contains(&east_ip.to_string())
    })
    .await;

    // Leave the shared real server as it was found, but for the CRDs,
    // RBAC and namespaces (which a server without a controller-manager
    // cannot delete).
    kubectl(
        admin,
        &["delete", "servicednsrecord", "nginx", "-n", "ns", "--ignore-not-found"],
    );
    kubectl(
        admin,
        &[
            "delete",
            "domain",
            "realhost",
            "-n",
            "fedns-system",
            "--ignore-not-found",
        ],
    );
    for name in ["east", "west"] {
        kubectl(
            admin,
            &[
                "delete",
                "membercluster",
                &format!("realhost-{name}"),
                "-n",
                "fedns-system",
                "--ignore-not-found",
            ],
        );
        kubectl(
            admin,
            &[
                "delete",
                "secret",
                &format!("realhost-{name}-token"),
                "-n",
                "fedns-system",
                "--ignore-not-found",
            ],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{server}: done in {:?}", started.elapsed());
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_runs_under_its_deploy_rbac_on_a_host_given_by_kubeconfig() {
    let host = Emulator::start().await.unwrap();
    let dir = temp_dir("real-host-emulator");
    let admin = dir.join("host.kubeconfig");
    host.write_kubeconfig(&admin).unwrap();
    run_against("emulator", &admin, false).await;
    drop(host);
    match std::env::var(REAL_KUBECONFIG) {
        Ok(path) => run_against(&format!("real API server ({path})"), Path::new(&path), true).await,
        Err(_) => println!("{REAL_KUBECONFIG} not set: the emulator only"),
    }
}
