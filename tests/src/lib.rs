//! # fedns-e2e
//!
//! End-to-end tests across crates (`tests/`), and helpers that start real
//! components on loopback for them: etcd ([`Etcd`]), moto's Route53 API
//! ([`moto`]) and a proxy that injects Route53's failures ([`fault_proxy`]).

pub mod fault_proxy;
pub mod moto;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The desired zones of one Domain for `apex` and one DNSEndpoint
/// (`ns/service-nginx`) with `endpoints` (external-dns's `spec.endpoints`).
pub fn desired(apex: &str, endpoints: serde_json::Value) -> fedns_providers::desired::DesiredZones {
    let domain: fedns_api::Domain = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed", "namespace": "fedns-system"},
        "spec": {"domain": apex},
    }))
    .expect("a valid Domain");
    let endpoint: fedns_api::DNSEndpoint = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": "service-nginx", "namespace": "ns"},
        "spec": {"endpoints": endpoints},
    }))
    .expect("a valid DNSEndpoint");
    fedns_providers::desired::desired_zones(&[domain], &[endpoint])
}

/// A free TCP port on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

fn etcd_binary() -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let path = Path::new(dir).join("etcd");
        if path.exists() {
            return path;
        }
    }
    panic!("etcd not found: install Debian package etcd-server (./scripts/test.sh does)");
}

/// An etcd member (Debian `etcd-server`) on loopback ports with a
/// temporary data dir; restartable on the same ports and data; killed
/// and removed on drop.
pub struct Etcd {
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

impl Etcd {
    /// Starts etcd and waits (30 s at most) until it accepts connections.
    pub fn start() -> Etcd {
        let dir = std::env::temp_dir().join(format!("fedns-etcd-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut etcd = Etcd {
            dir,
            client_port: free_port(),
            peer_port: free_port(),
            child: None,
        };
        etcd.resume();
        etcd
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Starts it again on the same ports and data.
    pub fn resume(&mut self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(etcd_binary())
            .args(["--name", "fedns-test", "--data-dir"])
            .arg(self.dir.join("data"))
            .args([
                "--listen-client-urls",
                &self.url(),
                "--advertise-client-urls",
                &self.url(),
            ])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args([
                "--initial-cluster",
                &format!("fedns-test={peer}"),
                "--log-level",
                "error",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            assert!(Instant::now() < deadline, "etcd did not start within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills it (data kept).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
