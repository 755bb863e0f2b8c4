//! # fedns-e2e
//!
//! End-to-end tests across crates (`tests/`), and helpers that start real
//! components on loopback for them: etcd ([`Etcd`]), moto's Route53 API
//! ([`moto`]) and a proxy that injects Route53's failures ([`fault_proxy`]).

pub mod fault_proxy;
pub mod moto;
pub mod tenancy;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The desired zones of one Domain for `apex` and one DNSEndpoint
/// (`ns/service-nginx`) with `endpoints` (external-dns's `spec.endpoints`).
/// The Domain grants namespace `ns` the apex's records and every name
/// below it (delegations and wildcards included; service names of other
/// namespaces stay theirs), so sink tests can publish any record type.
pub fn desired(apex: &str, endpoints: serde_json::Value) -> fedns_providers::plan::desired::DesiredZones {
    let domain: fedns_api::Domain = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed", "namespace": "fedns-system"},
        "spec": {"domain": apex, "grants": [{"namespace": "ns", "hostnames": [apex, format!("*.{apex}")]}]},
    }))
    .expect("a valid Domain");
    let endpoint: fedns_api::DNSEndpoint = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": "service-nginx", "namespace": "ns"},
        "spec": {"endpoints": endpoints},
    }))
    .expect("a valid DNSEndpoint");
    fedns_providers::plan::desired::desired_zones(&[domain], &[endpoint])
}

/// A loopback port free for UDP and TCP, never handed to another test of
/// this process ([`fedns_loopback::ports::free_loopback_port`]).
pub fn free_port() -> u16 {
    fedns_loopback::ports::free_loopback_port().expect("a free loopback port")
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
    /// Serves clients over TLS and asks for a client certificate.
    tls: bool,
    child: Option<Child>,
}

/// `path` opened for appending (etcd's standard error), or nowhere.
fn log_file(path: &Path) -> Stdio {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

/// The last lines of a log, for a failure message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// PEM files of an [`Etcd::start_tls`] member: the CA clients trust and a
/// client identity it accepts.
#[derive(Debug, Clone)]
pub struct EtcdTlsFiles {
    /// CA certificate (signs the server's and the client's certificates).
    pub ca: PathBuf,
    /// Client certificate.
    pub client_cert: PathBuf,
    /// Client key (PKCS#8).
    pub client_key: PathBuf,
}

impl Etcd {
    /// Starts etcd and waits (30 s at most) until it accepts connections.
    pub fn start() -> Etcd {
        Etcd::launch(false)
    }

    /// Starts etcd serving clients over TLS with client-certificate auth
    /// (`--client-cert-auth`), with a CA and certificates made here (rcgen).
    pub fn start_tls() -> (Etcd, EtcdTlsFiles) {
        let etcd = Etcd::launch(true);
        let files = etcd.tls_files();
        (etcd, files)
    }

    fn launch(tls: bool) -> Etcd {
        let dir = std::env::temp_dir().join(format!("fedns-etcd-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut etcd = Etcd {
            dir,
            client_port: free_port(),
            peer_port: free_port(),
            tls,
            child: None,
        };
        if tls {
            write_certificates(&etcd.dir);
        }
        etcd.resume();
        etcd
    }

    fn tls_files(&self) -> EtcdTlsFiles {
        EtcdTlsFiles {
            ca: self.dir.join("ca.pem"),
            client_cert: self.dir.join("client.pem"),
            client_key: self.dir.join("client-key.pem"),
        }
    }

    /// The client URL.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// A client of fedns's own etcd module, for setting up and reading back
    /// (with the client certificate when the member serves TLS).
    pub fn client(&self) -> fedns_providers::coredns_etcd::etcd::EtcdClient {
        fedns_providers::coredns_etcd::etcd::EtcdClient::new(&fedns_providers::coredns_etcd::etcd::EtcdClientConfig {
            endpoints: vec![self.url()],
            tls: self.tls.then(|| {
                let files = self.tls_files();
                fedns_providers::coredns_etcd::etcd::EtcdTls {
                    ca_file: Some(files.ca),
                    identity: Some((files.client_cert, files.client_key)),
                }
            }),
            credentials: None,
            timeout: Duration::from_secs(5),
        })
        .expect("a plain-HTTP etcd client")
    }

    /// Starts it again on the same ports and data.
    pub fn resume(&mut self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut command = Command::new(etcd_binary());
        if self.tls {
            command
                .arg("--cert-file")
                .arg(self.dir.join("server.pem"))
                .arg("--key-file")
                .arg(self.dir.join("server-key.pem"))
                .arg("--trusted-ca-file")
                .arg(self.dir.join("ca.pem"))
                .arg("--client-cert-auth");
        }
        let child = command
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
            // Kept, so a start that fails says why.
            .stderr(log_file(&self.dir.join("etcd.log")))
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            let exited = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
                if log.contains("address already in use") && started.elapsed() < Duration::from_secs(30) {
                    // Another process took a port between the check and
                    // etcd's bind: new ports, once more.
                    self.client_port = free_port();
                    self.peer_port = free_port();
                    self.child = None;
                    return self.resume();
                }
                panic!("etcd exited ({status}) before accepting connections: {}", tail(&log));
            }
            if started.elapsed() > Duration::from_secs(30) {
                let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
                panic!("etcd did not accept connections within 30 s: {}", tail(&log));
            }
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

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as
/// PEM files in `dir` (`ca.pem`, `server.pem`, `server-key.pem`,
/// `client.pem`, `client-key.pem`).
fn write_certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fedns-test-etcd-ca");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let write = |name: &str, pem: String| std::fs::write(dir.join(name), pem).unwrap();
    write("ca.pem", ca.pem());
    for (name, sans) in [
        ("server", vec!["127.0.0.1".to_owned(), "localhost".to_owned()]),
        ("client", vec![]),
    ] {
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        // No CommonName on the client's: with auth on, etcd's JSON gateway
        // refuses client certificates that carry one.
        let dn_type = if name == "client" {
            DnType::OrganizationName
        } else {
            DnType::CommonName
        };
        params.distinguished_name.push(dn_type, format!("fedns-test-{name}"));
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        write(&format!("{name}.pem"), cert.pem());
        write(&format!("{name}-key.pem"), key.serialize_pem());
    }
}

/// An SPF value as external-dns's objects carry it: quoted.
pub const SPF_TARGET: &str = "\"v=spf1 include:_spf.example.net -all\"";

/// A DKIM value of a 2048-bit key (about 400 octets), as a zone file or
/// external-dns writes it: two quoted character-strings, the first 255
/// octets long.
pub fn dkim_target() -> String {
    let text = dkim_text();
    format!("\"{}\" \"{}\"", &text[..255], &text[255..])
}

/// The DKIM value's text (both strings joined).
pub fn dkim_text() -> String {
    let key: String = (0..392u32)
        .map(|i| char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 7 % 64) as usize]))
        .collect();
    format!("v=DKIM1; k=rsa; p={key}")
}
