//! Cross-cluster service discovery from inside a member,
//! through real cluster DNS software started here on loopback: dnsmasq
//! as the member's cluster DNS with kube-dns's stub mechanism
//! (`--server=/myfed.svc.cluster.local/IP#PORT`), Unbound with a
//! `forward-zone`, each in front of the sandbox's member-side replica of
//! us-east-1; and, as root, one glibc lookup of the short name through a
//! `search` path, as a pod resolves it.
//!
//! Checked: the local answer (ClusterIP), the fallback chain zone →
//! region → global with the final addresses once the member's endpoints
//! are unready, and back; NXDOMAIN, NODATA, a case-mixed name, AAAA, a
//! record of another namespace; the asking cluster's region for
//! `Nearest`; and with the host cluster stopped, the replica keeps
//! answering and keeps following local readiness. Ownership: a record of
//! namespace `mallory` asking for `dnsPrefix: nginx.ns` (a name that sorts
//! before `ns/nginx`) changes nothing of `nginx.ns`'s discovery answer,
//! local or fallback, and its record says `InputValid=False NotAllowed`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::common::*;
use fedns_controller::cli::sandbox;
use fedns_controller::cli::SandboxArgs;

const SHORT: &str = "nginx.ns.myfed";
const NAME: &str = "nginx.ns.myfed.svc.cluster.local";
const EAST_CLUSTER_IP: &str = "10.96.10.1";
const ZONE_NAME: &str = "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com.";
const REGION_NAME: &str = "nginx.ns.myfed.svc.us-east-1.example.com.";

/// A resolver started here, killed on drop.
struct Resolver {
    name: &'static str,
    port: u16,
    _process: Process,
}

fn start_dnsmasq(dir: &Path, replica: SocketAddr, listen: &str, port: u16) -> Option<Process> {
    let child = Command::new("dnsmasq")
        .args([
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--cache-size=0",
            "--user=root",
            &format!("--listen-address={listen}"),
            &format!("--port={port}"),
            &format!("--pid-file={}", dir.join(format!("dnsmasq-{port}.pid")).display()),
            // kube-dns's stubDomains: this one domain goes to fedns.
            &format!("--server=/myfed.svc.cluster.local/{}#{}", replica.ip(), replica.port()),
            // The rest of cluster.local is the cluster's own (here: empty).
            "--local=/cluster.local/",
        ])
        .stdout(Stdio::null())
        .spawn();
    match child {
        Ok(child) => Some(Process::new(child)),
        Err(e) => panic!("dnsmasq must be installed (scripts/test.sh installs it): {e}"),
    }
}

fn start_unbound(dir: &Path, replica: SocketAddr, port: u16) -> Process {
    let config = dir.join("unbound.conf");
    let forward = format!("{}@{}", replica.ip(), replica.port());
    write(
        &config,
        &format!(
            "server:\n  interface: 127.0.0.1\n  port: {port}\n  do-not-query-localhost: no\n  use-syslog: no\n  \
             logfile: \"\"\n  chroot: \"\"\n  username: \"\"\n  directory: \"{dir}\"\n  pidfile: \"\"\n  \
             do-daemonize: no\n  access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n  \
             domain-insecure: \"cluster.local\"\n  domain-insecure: \"example.com\"\n  cache-max-ttl: 0\n  \
             cache-max-negative-ttl: 0\n\
             forward-zone:\n  name: \"myfed.svc.cluster.local\"\n  forward-addr: {forward}\n\
             # Unbound resolves CNAME targets itself: the public zone, which\n\
             # a member reaches through the Internet, is the replica here too.\n\
             forward-zone:\n  name: \"example.com\"\n  forward-addr: {forward}\n",
            dir = dir.display()
        ),
    );
    let child = Command::new("unbound")
        .args(["-d", "-c"])
        .arg(&config)
        .stdout(Stdio::null())
        .spawn()
        .expect("unbound must be installed (scripts/test.sh installs it)");
    Process::new(child)
}

/// `dig +short` through `port`, the lines in answer order (CNAME targets, then addresses).
fn chain(port: u16, name: &str, rtype: &str) -> Vec<String> {
    let out = Command::new("dig")
        .args([
            "+short",
            "+time=1",
            "+tries=1",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            rtype,
        ])
        .output()
        .expect("dig");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(";;"))
        .map(str::to_owned)
        .collect()
}

fn addresses(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = lines.iter().filter(|l| !l.ends_with('.')).cloned().collect();
    out.sort();
    out
}

fn is_fallback_chain(lines: &[String]) -> bool {
    lines.first().map(String::as_str) == Some(ZONE_NAME)
        && lines.get(1).map(String::as_str) == Some(REGION_NAME)
        && !addresses(lines).is_empty()
}

async fn control(state_dir: &Path, action: &str) {
    sandbox::control(state_dir, action, "us-east-1").await.unwrap();
}

/// glibc's resolver (getent) with a pod's resolv.conf, in a private mount
/// namespace; None (with the reason printed) where that cannot run.
fn glibc_lookup(dir: &Path, replica: SocketAddr) -> Option<(Vec<String>, Process)> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if uid.as_deref().ok() != Some("0") {
        println!("glibc lookup skipped: not root (a private mount namespace and port 53 need it)");
        return None;
    }
    // glibc asks port 53 only: a dnsmasq on a loopback address of its own.
    let listen = "127.0.26.53";
    let dnsmasq = start_dnsmasq(dir, replica, listen, 53)?;
    let resolv = dir.join("resolv.conf");
    write(
        &resolv,
        &format!(
            "nameserver {listen}\nsearch ns.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5 timeout:1 attempts:2\n"
        ),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!(
            "mount --bind {} /etc/resolv.conf && getent ahosts {SHORT}",
            resolv.display()
        ))
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let mut ips: Vec<String> = text
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
                .collect();
            ips.sort();
            ips.dedup();
            Some((ips, dnsmasq))
        }
        Ok(out) => {
            let reason = String::from_utf8_lossy(&out.stderr).to_string();
            if reason.contains("unshare") || reason.contains("mount") {
                println!("glibc lookup skipped: unshare/mount refused: {}", reason.trim());
                None
            } else {
                panic!("getent ahosts {SHORT} failed: {}", reason.trim())
            }
        }
        Err(e) => {
            println!("glibc lookup skipped: unshare cannot run: {e}");
            None
        }
    }
}

/// `fedns explain nginx.ns.myfed --from-cluster MEMBER -o json`, run as
/// an operator would (the binary, the host's kubeconfig; the member's
/// connection from its MemberCluster).
fn explain_from(state_dir: &Path, member: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(["explain", SHORT, "--from-cluster", member, "-o", "json", "--kubeconfig"])
        .arg(state_dir.join("host.kubeconfig"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sandbox_args() -> SandboxArgs {
    SandboxArgs {
        action: None,
        state_dir: temp_dir("discovery"),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        members_from: None,
        engine: None,
        verbose: false,
        provider: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_resolves_federated_services_local_first_through_dnsmasq_and_unbound() {
    let args = sandbox_args();
    let _ = fedns_controller::logging::init(
        fedns_controller::cli::LogFormat::Text,
        fedns_controller::logging::Output::File(args.state_dir.join("test.log")),
    );
    println!("logs: {}", args.state_dir.join("test.log").display());
    let running = sandbox::start(&args).await.unwrap();
    let state_dir: PathBuf = args.state_dir.clone();
    let written = std::fs::read_to_string(state_dir.join("us-east-1.dns")).unwrap();
    let replica: SocketAddr = written.trim().parse().unwrap();
    for member in ["us-west-2", "eu-west-1"] {
        assert!(state_dir.join(format!("{member}.dns")).exists());
    }
    let dir = temp_dir("discovery-resolvers");
    let (dnsmasq_port, unbound_port) = (free_port(), free_port());
    let resolvers = [
        Resolver {
            name: "dnsmasq",
            port: dnsmasq_port,
            _process: start_dnsmasq(&dir, replica, "127.0.0.1", dnsmasq_port).unwrap(),
        },
        Resolver {
            name: "unbound",
            port: unbound_port,
            _process: start_unbound(&dir, replica, unbound_port),
        },
    ];

    // Local first: the member's own ClusterIP, under the asked name.
    for r in &resolvers {
        eventually(&format!("{}: {NAME} is the local Service", r.name), || {
            chain(r.port, NAME, "A") == [EAST_CLUSTER_IP]
        })
        .await;
        assert_eq!(
            chain(r.port, "NGINX.Ns.MyFed.svc.Cluster.Local", "A"),
            [EAST_CLUSTER_IP],
            "{}",
            r.name
        );
        assert_eq!(dig_status(r.port, NAME, "AAAA"), "NOERROR", "{}: NODATA", r.name);
        assert!(chain(r.port, NAME, "AAAA").is_empty(), "{}", r.name);
        assert_eq!(
            dig_status(r.port, "nope.ns.myfed.svc.cluster.local", "A"),
            "NXDOMAIN",
            "{}",
            r.name
        );
        assert_eq!(
            dig_status(r.port, "nginx.other.myfed.svc.cluster.local", "A"),
            "NXDOMAIN",
            "{}: another namespace's name",
            r.name
        );
        // dnsPrefix: www.myfed.svc.cluster.local → the discovery name.
        assert_eq!(
            chain(r.port, "www.myfed.svc.cluster.local", "A"),
            [format!("{NAME}."), EAST_CLUSTER_IP.to_owned()],
            "{}",
            r.name
        );
    }
    // Nearest answers the asking cluster's region (us-east-1) to clients
    // the Domain's table does not place.
    eventually("Nearest: the asking cluster's region", || {
        let got = dig(replica.port(), "nginx.ns.myfed.svc.example.com", "A", false);
        got == ["127.0.10.1"]
    })
    .await;
    let explained = explain_from(&state_dir, "us-east-1");
    assert_eq!(explained["fromCluster"]["answer"]["kind"], "local", "{explained}");
    assert_eq!(explained["fromCluster"]["answer"]["addresses"][0], EAST_CLUSTER_IP);
    if let Some((ips, _dnsmasq)) = glibc_lookup(&dir, replica) {
        assert_eq!(ips, [EAST_CLUSTER_IP], "getent ahosts {SHORT}");
        println!("glibc: getent ahosts {SHORT} → {ips:?}");
    }

    // Unready endpoints: the CNAME chain to the nearest healthy cluster.
    let started = Instant::now();
    control(&state_dir, "drain-endpoints").await;
    for r in &resolvers {
        eventually(&format!("{}: the chain zone → region → global", r.name), || {
            let lines = chain(r.port, NAME, "A");
            is_fallback_chain(&lines) && addresses(&lines) == ["127.0.10.2", "127.0.10.3"]
        })
        .await;
        // The AAAA question follows the same chain to NODATA.
        assert_eq!(chain(r.port, NAME, "AAAA").first().map(String::as_str), Some(ZONE_NAME));
    }
    println!(
        "readiness → fallback answer through both resolvers: {:?}",
        started.elapsed()
    );
    let explained = explain_from(&state_dir, "us-east-1");
    assert_eq!(explained["fromCluster"]["answer"]["kind"], "fallback", "{explained}");
    assert_eq!(explained["fromCluster"]["answer"]["target"], ZONE_NAME);
    assert_eq!(
        explained["fromCluster"]["answer"]["reason"],
        "Service ns/nginx has no ready endpoint here"
    );
    assert_eq!(
        explained["target"]["name"],
        ZONE_NAME.trim_end_matches('.'),
        "the CNAME target explained too: {explained}"
    );
    control(&state_dir, "restore-endpoints").await;
    for r in &resolvers {
        eventually(&format!("{}: local again", r.name), || {
            chain(r.port, NAME, "A") == [EAST_CLUSTER_IP]
        })
        .await;
    }

    // A replica started while its member's API server is down has the
    // federation's view but none of the member's Services: it must answer
    // no discovery name (a CNAME fallback from that half-filled view would
    // send local clients away, or to a name not yet published) until its
    // member caches list; then the local answer, first time.
    sandbox::control(&state_dir, "fail", "us-east-1").await.unwrap();
    let late_port = free_port();
    let listen = format!("127.0.0.1:{late_port}");
    let host_kubeconfig = state_dir.join("host.kubeconfig");
    let member_kubeconfig = state_dir.join("us-east-1.kubeconfig");
    let late = spawn_fedns(&[
        "dns-server",
        "--member-cluster=us-east-1",
        "--read-only",
        "--kubeconfig",
        host_kubeconfig.to_str().unwrap(),
        "--member-kubeconfig",
        member_kubeconfig.to_str().unwrap(),
        "--listen",
        &listen,
        "--metrics-addr=127.0.0.1:0",
    ]);
    let mut seen = Vec::new();
    let sampling = Instant::now();
    while sampling.elapsed() < std::time::Duration::from_secs(4) {
        let status = dig_status(late_port, NAME, "A");
        if status == "NOERROR" {
            seen.push(chain(late_port, NAME, "A"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        seen.is_empty(),
        "a replica without its member's Services answered {NAME}: {seen:?}"
    );
    sandbox::control(&state_dir, "recover", "us-east-1").await.unwrap();
    let mut answers = Vec::new();
    eventually("a late replica: the local answer once its member lists", || {
        let got = chain(late_port, NAME, "A");
        let local = got == [EAST_CLUSTER_IP];
        if !got.is_empty() && !local {
            answers.push(got);
        }
        local
    })
    .await;
    assert!(answers.is_empty(), "answers before the local one: {answers:?}");
    drop(late);

    // The host cluster (and with it the controller's view) goes away: the
    // replica answers from its last state and follows local readiness.
    running.federation.host.stop();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    for r in &resolvers {
        assert_eq!(chain(r.port, NAME, "A"), [EAST_CLUSTER_IP], "{}: host down", r.name);
    }
    control(&state_dir, "drain-endpoints").await;
    for r in &resolvers {
        // The last state still has us-east-1 healthy behind its zone name.
        eventually(&format!("{}: host down, fallback from the last state", r.name), || {
            let lines = chain(r.port, NAME, "A");
            lines.first().map(String::as_str) == Some(ZONE_NAME) && addresses(&lines) == ["127.0.10.1"]
        })
        .await;
    }
    control(&state_dir, "restore-endpoints").await;
    for r in &resolvers {
        eventually(&format!("{}: host down, local again", r.name), || {
            chain(r.port, NAME, "A") == [EAST_CLUSTER_IP]
        })
        .await;
    }
    // The last host-side state is on disk for a restart.
    assert!(state_dir.join("us-east-1.discovery-state.json").exists());
    // fedns_discovery_answers_total{member="us-east-1"}: every kind given.
    let east = running.discovery.iter().find(|r| r.member == "us-east-1").unwrap();
    let answers = east.answers();
    println!("us-east-1 discovery answers: {answers:?}");
    for (kind, count) in answers {
        assert!(count > 0, "no {kind} answer counted: {answers:?}");
    }
    drop(resolvers);
    running.shutdown().await;
}

/// `mallory/a` with `dnsPrefix: nginx.ns` would be
/// `nginx.ns.myfed.svc.cluster.local` in every member: the name of
/// namespace `ns`'s Service. The victim's answer stays its own, local and
/// fallback, and the record is told why (`InputValid=False NotAllowed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_namespaces_dns_prefix_never_takes_a_discovery_name() {
    use fedns_api::ServiceDNSRecord;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};

    let args = sandbox_args();
    let _ = fedns_controller::logging::init(
        fedns_controller::cli::LogFormat::Text,
        fedns_controller::logging::Output::File(args.state_dir.join("test.log")),
    );
    println!("logs: {}", args.state_dir.join("test.log").display());
    let running = sandbox::start(&args).await.unwrap();
    let state_dir: PathBuf = args.state_dir.clone();
    let replica: SocketAddr = std::fs::read_to_string(state_dir.join("us-east-1.dns"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(replica.ip().is_loopback());
    let port = replica.port();
    eventually(&format!("{NAME} is the local Service"), || {
        chain(port, NAME, "A") == [EAST_CLUSTER_IP]
    })
    .await;

    let host = client_of(&running.federation.host).await;
    Api::<Namespace>::all(host.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "mallory"}})).unwrap(),
        )
        .await
        .unwrap();
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "mallory");
    let record = serde_json::from_value(serde_json::json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
        "metadata": {"name": "a", "namespace": "mallory"},
        "spec": {"domainRef": "myfed", "dnsPrefix": "nginx.ns"},
    }))
    .unwrap();
    records.create(&PostParams::default(), &record).await.unwrap();

    // The replica has mallory's record: its own discovery name answers,
    // with mallory's Service in us-east-1 (a record whose Service no
    // cluster has leads to no address anywhere, and the replica answers
    // no CNAME to that).
    let member = client_of(running.federation.member("us-east-1").unwrap()).await;
    Api::<Namespace>::all(member.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "mallory"}})).unwrap(),
        )
        .await
        .unwrap();
    let service = serde_json::json!({
        "metadata": {"name": "a", "namespace": "mallory"},
        "spec": {"clusterIP": "10.96.10.9", "clusterIPs": ["10.96.10.9"], "ports": [{"port": 80}]},
    });
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(member.clone(), "mallory")
        .create(&PostParams::default(), &serde_json::from_value(service).unwrap())
        .await
        .unwrap();
    let slice = serde_json::json!({
        "metadata": {"name": "a-abcde", "namespace": "mallory", "labels": {"kubernetes.io/service-name": "a"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.9.5"], "conditions": {"ready": true}}],
        "ports": [{"port": 80}],
    });
    Api::<k8s_openapi::api::discovery::v1::EndpointSlice>::namespaced(member, "mallory")
        .create(&PostParams::default(), &serde_json::from_value(slice).unwrap())
        .await
        .unwrap();
    let mallory = "a.mallory.myfed.svc.cluster.local";
    eventually("the replica answers mallory/a's own name", || {
        chain(port, mallory, "A") == ["10.96.10.9"]
    })
    .await;
    // ... and nginx.ns's name stays the local Service, asked again and again.
    for _ in 0..10 {
        assert_eq!(
            chain(port, NAME, "A"),
            [EAST_CLUSTER_IP],
            "local, with mallory's prefix"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Unready endpoints: the fallback chain of ns/nginx, never mallory's.
    control(&state_dir, "drain-endpoints").await;
    eventually("the victim's fallback chain zone → region → global", || {
        let lines = chain(port, NAME, "A");
        is_fallback_chain(&lines) && addresses(&lines) == ["127.0.10.2", "127.0.10.3"]
    })
    .await;
    for _ in 0..10 {
        let lines = chain(port, NAME, "A");
        assert!(is_fallback_chain(&lines), "fallback, with mallory's prefix: {lines:?}");
        assert!(!lines.iter().any(|l| l.contains("mallory")), "{lines:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // `fedns explain --from-cluster` names the rightful record.
    let explained = explain_from(&state_dir, "us-east-1");
    assert_eq!(explained["fromCluster"]["record"], "ns/nginx", "{explained}");
    control(&state_dir, "restore-endpoints").await;
    eventually("local again", || chain(port, NAME, "A") == [EAST_CLUSTER_IP]).await;

    // The host tells mallory why: InputValid=False, reason NotAllowed.
    let started = Instant::now();
    let condition = loop {
        let record = records.get("a").await.unwrap();
        let found = record
            .status
            .iter()
            .flat_map(|s| s.conditions.iter())
            .find(|c| c.type_ == "InputValid" && c.status == "False")
            .cloned();
        if let Some(condition) = found {
            break condition;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "mallory/a has no InputValid=False: {:?}",
            record.status
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(condition.reason, "NotAllowed", "{condition:?}");
    assert!(condition.message.contains("namespace ns"), "{}", condition.message);
    running.shutdown().await;
}

/// One answer of the replica for [`NAME`] A, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// No response (the replica not listening yet).
    Silent,
    Refused,
    ServFail,
    NxDomain,
    /// NOERROR with a CNAME and no address: a CNAME to a name not published.
    CnameWithoutAddress,
    /// NOERROR, no answer.
    NoData,
    /// The CNAME chain with the final addresses (the right answer here).
    Chain,
    /// Addresses without a CNAME (the local Service: wrong here).
    Local,
    Other,
}

/// Asks `name` `rtype` at 127.0.0.1:`port` over UDP (300 ms at most):
/// the kind of answer and its addresses.
async fn ask(port: u16, name: &str, rtype: fedns_dnsserver::hickory_proto::rr::RecordType) -> (Kind, Vec<String>) {
    use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
    use fedns_dnsserver::hickory_proto::rr::{Name, RData};
    static NEXT_ID: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(1);
    let id = NEXT_ID.fetch_add(7919, std::sync::atomic::Ordering::Relaxed);
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
    // Connected: a port nobody listens on answers at once (ICMP), so the
    // first moments of a start are sampled finely too.
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket.connect(("127.0.0.1", port)).await.unwrap();
    if socket.send(&message.to_vec().unwrap()).await.is_err() {
        return (Kind::Silent, Vec::new());
    }
    let mut buf = vec![0u8; 4096];
    let received = tokio::time::timeout(std::time::Duration::from_millis(300), socket.recv(&mut buf)).await;
    let Ok(Ok(len)) = received else {
        return (Kind::Silent, Vec::new());
    };
    let Ok(reply) = Message::from_vec(&buf[..len]) else {
        return (Kind::Other, Vec::new());
    };
    let addresses: Vec<String> = reply
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.to_string()),
            RData::AAAA(a) => Some(a.to_string()),
            _ => None,
        })
        .collect();
    let cname = reply.answers.iter().any(|r| matches!(r.data, RData::CNAME(_)));
    let kind = match reply.metadata.response_code {
        ResponseCode::Refused => Kind::Refused,
        ResponseCode::ServFail => Kind::ServFail,
        ResponseCode::NXDomain => Kind::NxDomain,
        ResponseCode::NoError if reply.answers.is_empty() => Kind::NoData,
        ResponseCode::NoError if addresses.is_empty() && cname => Kind::CnameWithoutAddress,
        ResponseCode::NoError if cname => Kind::Chain,
        ResponseCode::NoError => Kind::Local,
        _ => Kind::Other,
    };
    (kind, addresses)
}

/// The status of `GET /readyz` at 127.0.0.1:`port` (None: no answer).
async fn readyz(port: u16) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limit = std::time::Duration::from_millis(300);
    let mut stream = tokio::time::timeout(limit, tokio::net::TcpStream::connect(("127.0.0.1", port)))
        .await
        .ok()?
        .ok()?;
    stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut text = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut text))
        .await
        .ok()?
        .ok()?;
    String::from_utf8_lossy(&text).split_whitespace().nth(1)?.parse().ok()
}

/// A member emulator's objects: a Node in `zone` of `region`, Service
/// `ns/nginx` (ClusterIP `cluster_ip`, load balancer `lb`) and one
/// EndpointSlice whose endpoint is `ready` or not.
fn startup_member_yaml(region: &str, zone: &str, cluster_ip: &str, lb: &str, ready: bool) -> String {
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{zone}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {zone}}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: ns}}
spec: {{type: LoadBalancer, clusterIP: {cluster_ip}, clusterIPs: [{cluster_ip}], ports: [{{port: 80}}]}}
status: {{loadBalancer: {{ingress: [{{ip: "{lb}"}}]}}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: {ready}}}
ports: [{{port: 80}}]
"#
    )
}

/// What one start of a replica saw.
#[derive(Default)]
struct StartSeen {
    /// Answers for [`NAME`] by kind.
    kinds: std::collections::BTreeMap<Kind, usize>,
    /// REFUSED answers (discovery name or federation zone) after `/readyz`
    /// answered 200.
    refused_while_ready: usize,
    /// From the replica's first DNS response to its first 200 on `/readyz`
    /// and to its first right answer.
    ready_after: Option<std::time::Duration>,
    right_after: Option<std::time::Duration>,
}

/// Issue #58 item 5: a member-side replica started on a new federation
/// before the controller (the record's DNSEndpoint not written yet) must
/// not answer NXDOMAIN, nor a CNAME to a global name nobody publishes, nor
/// the wrong answer at all: nothing but "not yet" (REFUSED while no
/// discovery zone is handed over, the replica unready; then SERVFAIL for
/// the pending name, its zone served), then the CNAME chain to the
/// healthy cluster. And `/readyz` is never 200 while a query for a zone it
/// serves gets REFUSED.
///
/// us-east-1's Service has no ready endpoint, so its replica's right
/// answer is the chain to us-west-2's load balancer; ten starts, each on
/// a new federation, the replica alone for a second before the
/// controller starts. Before the fix: NXDOMAIN with a CNAME to the global
/// name in most starts, and `/readyz` 200 before the discovery zone was
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_started_before_the_controller_answers_nothing_wrong_on_a_new_federation() {
    use fedns_controller::federation::Federation;
    use fedns_dnsserver::hickory_proto::rr::RecordType;
    use std::time::Duration;

    const WEST_LB: &str = "198.51.100.10";
    const STARTS: usize = 10;
    let mut seen: Vec<StartSeen> = Vec::new();
    for start in 1..=STARTS {
        let dir = temp_dir("discovery-startup");
        let federation = Federation::start(&dir, "fedns-system", &["us-east-1", "us-west-2"])
            .await
            .unwrap();
        let seeds = [
            ("us-east-1", "us-east-1a", "10.96.10.1", "203.0.113.10", false),
            ("us-west-2", "us-west-2a", "10.96.20.1", WEST_LB, true),
        ];
        for (name, zone, cluster_ip, lb, ready) in seeds {
            federation
                .member(name)
                .unwrap()
                .seed_yaml(name, &startup_member_yaml(name, zone, cluster_ip, lb, ready))
                .unwrap();
            federation.register(name, serde_json::json!({})).unwrap();
        }
        federation
            .host
            .seed_yaml(
                "host",
                &format!(
                    "{MYFED_HOST_YAML}---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: ServiceDNSRecord\n\
                     metadata: {{name: nginx, namespace: ns}}\nspec: {{domainRef: myfed, recordTTL: 30, dnsPrefix: www}}\n"
                ),
            )
            .unwrap();
        let (port, metrics_port) = (free_port(), free_port());
        let host_kubeconfig = dir.join("host.kubeconfig");
        let member_kubeconfig = dir.join("us-east-1.kubeconfig");
        // Its log is kept: a start with a wrong answer prints what the
        // replica decided and when.
        let (log, out, err) = process_log("discovery-startup-replica");
        let child = Command::new(env!("CARGO_BIN_EXE_fedns"))
            .args([
                "dns-server",
                "--member-cluster=us-east-1",
                "--read-only",
                "--kubeconfig",
                host_kubeconfig.to_str().unwrap(),
                "--member-kubeconfig",
                member_kubeconfig.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--metrics-addr",
                &format!("127.0.0.1:{metrics_port}"),
            ])
            .env("RUST_LOG", "info,kube=warn")
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("start fedns dns-server");
        let replica = Process::logged(child, "fedns dns-server (member side)", log.clone());
        let mut this = StartSeen::default();
        let mut first_response: Option<std::time::Instant> = None;
        let mut ready_since: Option<std::time::Instant> = None;
        let mut controller = None;
        let begun = std::time::Instant::now();
        let mut right_since: Option<std::time::Instant> = None;
        loop {
            // /readyz first: an answer after a 200 is an answer of a ready
            // replica (readiness only turns off at shutdown).
            if ready_since.is_none() && readyz(metrics_port).await == Some(200) {
                ready_since = Some(std::time::Instant::now());
            }
            let (kind, addresses) = ask(port, NAME, RecordType::A).await;
            let (zone_kind, _) = ask(port, "example.com", RecordType::SOA).await;
            if kind != Kind::Silent {
                first_response.get_or_insert_with(std::time::Instant::now);
            }
            *this.kinds.entry(kind).or_default() += 1;
            if ready_since.is_some() {
                this.refused_while_ready +=
                    usize::from(kind == Kind::Refused) + usize::from(zone_kind == Kind::Refused);
            }
            let right = kind == Kind::Chain && addresses == [WEST_LB];
            if right {
                right_since.get_or_insert_with(std::time::Instant::now);
            }
            // The replica alone for a second once it answers (its view of
            // the host is whole well within that), then the controller.
            if controller.is_none() && first_response.is_some_and(|t| t.elapsed() >= Duration::from_secs(1)) {
                controller = Some(spawn_controller(
                    &dir,
                    free_port(),
                    free_port(),
                    &["--udp-workers", "1"],
                ));
            }
            // Done a second after the right answer (it must stay).
            if right_since.is_some_and(|t| t.elapsed() >= Duration::from_secs(1)) {
                break;
            }
            assert!(
                begun.elapsed() < EVENTUALLY + Duration::from_secs(5),
                "start {start}: no right answer within {EVENTUALLY:?}; seen {:?}",
                this.kinds
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let origin = first_response.unwrap_or(begun);
        this.ready_after = ready_since.map(|t| t.saturating_duration_since(origin));
        this.right_after = right_since.map(|t| t.saturating_duration_since(origin));
        println!(
            "start {start}: {:?}; ready after {:?}, right answer after {:?} (from the first response); \
             REFUSED while ready: {}",
            this.kinds, this.ready_after, this.right_after, this.refused_while_ready
        );
        drop(controller);
        drop(replica);
        federation.stop();
        let wrong = this
            .kinds
            .keys()
            .any(|k| !matches!(k, Kind::Silent | Kind::Refused | Kind::ServFail | Kind::Chain));
        if wrong || this.refused_while_ready > 0 {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            println!("start {start}: the replica's log ({}):", log.display());
            for line in text.lines().filter(|l| {
                ["discovery answer", "held back", "ready", "serving", "watch failed"]
                    .iter()
                    .any(|n| l.contains(n))
            }) {
                println!("  {}", line.chars().take(400).collect::<String>());
            }
        } else {
            let _ = std::fs::remove_file(&log);
        }
        seen.push(this);
    }
    let mut total: std::collections::BTreeMap<Kind, usize> = Default::default();
    for this in &seen {
        for (kind, count) in &this.kinds {
            *total.entry(*kind).or_default() += count;
        }
    }
    let starts_with = |bad: &[Kind]| {
        seen.iter()
            .filter(|s| bad.iter().any(|k| s.kinds.get(k).is_some_and(|n| *n > 0)))
            .count()
    };
    let wrong = [
        Kind::NxDomain,
        Kind::CnameWithoutAddress,
        Kind::NoData,
        Kind::Local,
        Kind::Other,
    ];
    let refused_while_ready: usize = seen.iter().map(|s| s.refused_while_ready).sum();
    println!("over {STARTS} starts, answers for {NAME} by kind: {total:?}");
    println!(
        "starts with a wrong answer: {}; REFUSED while /readyz was 200: {refused_while_ready} (in {} starts)",
        starts_with(&wrong),
        seen.iter().filter(|s| s.refused_while_ready > 0).count()
    );
    for kind in wrong {
        assert_eq!(
            total.get(&kind).copied().unwrap_or(0),
            0,
            "{kind:?} answers during startup: {total:?}"
        );
    }
    assert_eq!(refused_while_ready, 0, "REFUSED while ready: {total:?}");
    assert!(
        total.get(&Kind::ServFail).copied().unwrap_or(0) > 0,
        "the pending name was never answered SERVFAIL: {total:?}"
    );
    assert!(seen.iter().all(|s| s.ready_after.is_some() && s.right_after.is_some()));
}
