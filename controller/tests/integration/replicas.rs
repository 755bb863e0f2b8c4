//! Every `fedns dns-server` replica of a Domain serves the same
//! SOA serial for the same content and answers an IXFR from any serial
//! another replica served.
//!
//! Three replicas behind one address that round-robins every UDP query
//! and every TCP connection ([`RoundRobin`]), a Knot secondary
//! transferring through it across 50 changes (one replica starting late,
//! one restarting, the status writer restarting), and a resolver-like
//! poller asking the SOA through it all along: the serial never goes
//! backwards (RFC 1982), and Knot ends with the replicas' zone. With
//! `--manifests`, replicas reading the same files serve the same serial,
//! across restarts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::{DNSEndpoint, Domain};
use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, RecordType};
use fedns_dnsserver::serial_gt;
use fedns_kube_emulator::{Emulator, EmulatorConfig, PatchKind, Target};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A loopback address that hands each UDP query and each TCP connection
/// to the next of `backends` in turn (as a Service's load balancing may).
/// A backend that does not answer leaves that query unanswered.
struct RoundRobin {
    addr: SocketAddr,
    /// UDP queries and TCP connections handed on.
    handed: Arc<AtomicUsize>,
    /// The backend (index) each UDP query went to, by DNS message ID (the
    /// last query with that ID).
    routes: Arc<Mutex<std::collections::HashMap<u16, usize>>>,
}

impl RoundRobin {
    async fn start(backends: Vec<SocketAddr>) -> RoundRobin {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let udp = Arc::new(tokio::net::UdpSocket::bind(addr).await.unwrap());
        let tcp = tokio::net::TcpListener::bind(addr).await.unwrap();
        let next = Arc::new(AtomicUsize::new(0));
        let handed = Arc::new(AtomicUsize::new(0));
        let routes: Arc<Mutex<std::collections::HashMap<u16, usize>>> = Arc::default();
        let backends = Arc::new(backends);
        {
            let (next, backends, handed, routes) = (next.clone(), backends.clone(), handed.clone(), routes.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65_535];
                loop {
                    let Ok((len, client)) = udp.recv_from(&mut buf).await else {
                        return;
                    };
                    let query = buf[..len].to_vec();
                    let index = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                    let backend = backends[index];
                    if len >= 2 {
                        routes
                            .lock()
                            .unwrap()
                            .insert(u16::from_be_bytes([query[0], query[1]]), index);
                    }
                    handed.fetch_add(1, Ordering::Relaxed);
                    let front = udp.clone();
                    tokio::spawn(async move {
                        let Ok(upstream) = tokio::net::UdpSocket::bind("127.0.0.1:0").await else {
                            return;
                        };
                        if upstream.send_to(&query, backend).await.is_err() {
                            return;
                        }
                        let mut reply = vec![0u8; 65_535];
                        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), upstream.recv(&mut reply)).await
                        {
                            let _ = front.send_to(&reply[..n], client).await;
                        }
                    });
                }
            });
        }
        {
            let handed = handed.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((mut client, _)) = tcp.accept().await else {
                        return;
                    };
                    let backend = backends[next.fetch_add(1, Ordering::Relaxed) % backends.len()];
                    handed.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(async move {
                        if let Ok(mut server) = tokio::net::TcpStream::connect(backend).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                }
            });
        }
        RoundRobin { addr, handed, routes }
    }
}

/// The SOA serial `addr` answers for `zone` over UDP (None: no answer, or
/// not an authoritative one).
fn soa_serial(addr: SocketAddr, zone: &str) -> Option<u32> {
    soa_serial_and_id(addr, zone).map(|(serial, _)| serial)
}

/// [`soa_serial`], with the query's message ID.
fn soa_serial_and_id(addr: SocketAddr, zone: &str) -> Option<(u32, u16)> {
    let mut message = Message::new(rand_id(), MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(zone).ok()?, RecordType::SOA));
    let packet = message.to_vec().ok()?;
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
    socket.set_read_timeout(Some(Duration::from_millis(700))).ok()?;
    socket.send_to(&packet, addr).ok()?;
    let mut buf = vec![0u8; 4096];
    let (len, _) = socket.recv_from(&mut buf).ok()?;
    let reply = Message::from_vec(&buf[..len]).ok()?;
    if !reply.metadata.authoritative || reply.metadata.id != message.metadata.id {
        return None;
    }
    reply.answers.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some((soa.serial, reply.metadata.id)),
        _ => None,
    })
}

fn rand_id() -> u16 {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    (NEXT.fetch_add(7919, Ordering::Relaxed) & 0xffff) as u16
}

/// Asks the SOA of `zone` at `addr` every 10 ms until stopped, as a
/// resolver re-asking would; keeps every serial answered, in order.
struct Poller {
    stop: Arc<AtomicBool>,
    /// (serial, message ID, Unix ms when answered), in order.
    seen: Arc<Mutex<Vec<(u32, u16, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Poller {
    fn start(addr: SocketAddr, zone: &'static str) -> Poller {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, seen) = (stop.clone(), seen.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some((serial, id)) = soa_serial_and_id(addr, zone) {
                        seen.lock().unwrap().push((serial, id, unix_ms()));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        Poller {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// Stops; every answer: (serial, message ID, Unix ms).
    fn finish(mut self) -> Vec<(u32, u16, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.seen.lock().unwrap().clone()
    }
}

/// Every step back (RFC 1982) in `serials`: (index, before, after).
fn steps_back(serials: &[u32]) -> Vec<(usize, u32, u32)> {
    serials
        .windows(2)
        .enumerate()
        .filter(|(_, w)| serial_gt(w[0], w[1]))
        .map(|(i, w)| (i + 1, w[0], w[1]))
        .collect()
}

/// Knot DNS (Debian package `knot`) as a secondary of `primary` for
/// example.com, taking NOTIFY and allowing AXFR from loopback; killed
/// on drop.
struct Knot {
    addr: SocketAddr,
    child: Child,
    dir: PathBuf,
    log: PathBuf,
}

impl Knot {
    fn start(port: u16, primary: SocketAddr) -> Knot {
        let dir = temp_dir("knot-secondary");
        let d = dir.display().to_string();
        let log = dir.join("knot.log");
        let p = primary.port();
        let conf = format!(
            "server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\n  udp-workers: 1\n  tcp-workers: 1\n  background-workers: 1\n\
             control:\n  listen: {d}/knot.sock\n\
             database:\n  storage: {d}\n\
             log:\n  - target: stderr\n    any: info\n\
             remote:\n  - id: primary\n    address: 127.0.0.1@{p}\n\
             acl:\n  - id: notify\n    address: 127.0.0.1\n    action: notify\n  - id: transfer\n    address: 127.0.0.1\n    action: transfer\n\
             template:\n  - id: default\n    storage: {d}\n    semantic-checks: off\n    zonefile-sync: -1\n    zonefile-load: none\n    journal-content: changes\n\
             zone:\n  - domain: example.com.\n    master: primary\n    acl: [notify, transfer]\n    refresh-min-interval: 2\n    refresh-max-interval: 2\n    retry-min-interval: 1\n    retry-max-interval: 2\n"
        );
        std::fs::write(dir.join("knot.conf"), conf).unwrap();
        let knotd = ["/usr/sbin/knotd", "/usr/bin/knotd", "/usr/local/sbin/knotd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("knotd not found: install Debian package 'knot' (./scripts/test.sh does)");
        let child = Command::new(knotd)
            .arg("-c")
            .arg(dir.join("knot.conf"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start knotd");
        Knot {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            child,
            dir,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The zone as `dig AXFR` gets it from `addr`: its records, one line each,
/// sorted (the SOA's twice: first and last).
fn axfr(addr: SocketAddr, zone: &str) -> Vec<String> {
    let out = Command::new("dig")
        .args([
            "+nocmd",
            "+nostats",
            "+nocomments",
            "+time=3",
            "+tries=1",
            "-p",
            &addr.port().to_string(),
            "@127.0.0.1",
            zone,
            "AXFR",
        ])
        .output()
        .expect("dig");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase())
        .collect();
    lines.sort();
    lines
}

/// An IXFR answer (`dig IXFR=N`): the whole zone as [`axfr`] gives it, or
/// a difference (its lines, sorted).
enum Ixfr {
    Full(Vec<String>),
    Incremental(Vec<String>),
}

fn ixfr(addr: SocketAddr, zone: &str, from: u32) -> Ixfr {
    let out = Command::new("dig")
        .args([
            "+nocmd",
            "+nostats",
            "+nocomments",
            "+time=3",
            "+tries=1",
            "-p",
            &addr.port().to_string(),
            "@127.0.0.1",
            zone,
            &format!("IXFR={from}"),
        ])
        .output()
        .expect("dig");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase())
        .collect();
    // RFC 1995 §4: an incremental answer's second record is the SOA of
    // the client's serial.
    let soa_serial = |line: &String| {
        let fields: Vec<&str> = line.split(' ').collect();
        (fields.get(3) == Some(&"soa"))
            .then(|| fields.get(6).and_then(|s| s.parse::<u32>().ok()))
            .flatten()
    };
    let incremental = lines.get(1).and_then(soa_serial) == Some(from);
    let mut sorted = lines;
    sorted.sort();
    if incremental {
        Ixfr::Incremental(sorted)
    } else {
        Ixfr::Full(sorted)
    }
}

/// `fedns dns-server` replica `index` of the test, on its own port.
struct Replica {
    addr: SocketAddr,
    metrics: u16,
    args: Vec<String>,
    process: Option<Process>,
}

impl Replica {
    fn new(base: &[&str], read_only: bool) -> Replica {
        let port = free_port();
        let metrics = free_port();
        let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--metrics-addr".into(),
            format!("127.0.0.1:{metrics}"),
            "--udp-workers".into(),
            "1".into(),
        ]);
        if read_only {
            args.push("--read-only".into());
        }
        Replica {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            metrics,
            args,
            process: None,
        }
    }

    fn start(&mut self) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.process = Some(spawn_fedns(&args));
    }

    fn stop(&mut self) {
        self.process = None;
    }

    fn serial(&self, zone: &str) -> Option<u32> {
        soa_serial(self.addr, zone)
    }

    /// `fedns_dns_transfers_total{result}` since it started.
    async fn transfers(&self, result: &str) -> u64 {
        self.counter(&format!("fedns_dns_transfers_total{{result=\"{result}\"}}"))
            .await
    }

    /// `fedns_dns_serial_records_late_total` since it started: records
    /// it learned only after their instant.
    async fn late_records(&self) -> u64 {
        self.counter("fedns_dns_serial_records_late_total").await
    }

    async fn counter(&self, series: &str) -> u64 {
        let (_, body) = http_get(&format!("http://127.0.0.1:{}/metrics", self.metrics)).await;
        let wanted = format!("{series} ");
        body.lines()
            .find_map(|l| l.strip_prefix(&wanted)?.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The serial the replicas all serve, once they agree (None: they do not).
fn agreed(replicas: &[Replica], zone: &str) -> Option<u32> {
    let serials: Vec<Option<u32>> = replicas.iter().map(|r| r.serial(zone)).collect();
    let first = serials[0]?;
    serials.iter().all(|s| *s == Some(first)).then_some(first)
}

async fn record_serial(domains: &Api<Domain>) -> Option<u32> {
    let domain = domains.get("myfed").await.ok()?;
    let record = domain.status?.serial_record?;
    u32::try_from(record.serial).ok()
}

/// A host cluster (emulator) with the Domain `myfed` for example.com
/// (`spec.transfer` when given) and the DNSEndpoint `ns/app` for
/// app.example.com, and its kubeconfig in `dir`.
struct Host {
    host: Emulator,
    kubeconfig: PathBuf,
    domains: Api<Domain>,
    endpoints: Api<DNSEndpoint>,
}

impl Host {
    async fn start(dir: &Path, transfer: Option<serde_json::Value>) -> Host {
        Host::start_with(dir, transfer, EmulatorConfig::default()).await
    }

    async fn start_with(dir: &Path, transfer: Option<serde_json::Value>, config: EmulatorConfig) -> Host {
        let host = Emulator::start_with(config).await.unwrap();
        let client = client_of(&host).await;
        install_crds(&client, &["fedns-system", "ns"]).await;
        let mut spec = json!({"domain": "example.com", "nameServers": ["ns1.example.net"]});
        if let Some(transfer) = transfer {
            spec["transfer"] = transfer;
        }
        let domains = create_myfed_domain(&client, spec).await;
        let endpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), "ns");
        endpoints
            .create(&PostParams::default(), &endpoint("app", "app.example.com", "10.0.0.0"))
            .await
            .unwrap();
        let kubeconfig = dir.join("host.yaml");
        host.write_kubeconfig(&kubeconfig).unwrap();
        Host {
            host,
            kubeconfig,
            domains,
            endpoints,
        }
    }
}

/// The first serial recorded for example.com, once `replicas` all serve
/// it (30 s at most).
async fn first_serial_served(domains: &Api<Domain>, replicas: &[Replica]) -> u32 {
    let waiting = Instant::now();
    loop {
        if let Some(recorded) = record_serial(domains).await {
            if agreed(replicas, "example.com.") == Some(recorded) {
                return recorded;
            }
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(30),
            "no recorded serial served within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn endpoint(name: &str, dns_name: &str, target: &str) -> DNSEndpoint {
    serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": name},
        "spec": {"endpoints": [{"dnsName": dns_name, "recordType": "A", "recordTTL": 30, "targets": [target]}]},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_serve_one_serial_and_one_history_through_a_round_robin() {
    const ZONE: &str = "example.com.";
    let knot_port = free_port();
    let transfer = json!({"allow": ["127.0.0.0/8"], "notify": [format!("127.0.0.1:{knot_port}")]});
    let dir = temp_dir("replicas");
    let Host {
        host,
        kubeconfig,
        domains,
        endpoints,
    } = Host::start(&dir, Some(transfer)).await;
    // Two seconds from a record to its instant (the default is one): the
    // margin for a status write and a watch event on a loaded CI machine;
    // `a_slow_publisher_pass_does_not_delay_the_serial_switch` tests that
    // margin itself, and late records are counted and printed below.
    let base = [
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--serial-activation-delay",
        "2000",
    ];
    // Replica 0 writes status (and so records serials); 1 and 2 only read.
    let mut replicas = vec![
        Replica::new(&base, false),
        Replica::new(&base, true),
        Replica::new(&base, true),
    ];
    replicas[0].start();
    replicas[1].start();
    let proxy = RoundRobin::start(replicas.iter().map(|r| r.addr).collect()).await;
    // From the zone's first answer on (serial 0 until its first record).
    let poller = Poller::start(proxy.addr, ZONE);
    let waiting = Instant::now();
    let first = first_serial_served(&domains, &replicas[..2]).await;
    println!(
        "replicas 0 and 1 serve the recorded serial {first} after {:?}",
        waiting.elapsed()
    );

    let knot = Knot::start(knot_port, proxy.addr);
    eventually("Knot transfers the zone through the round-robin", || {
        soa_serial(knot.addr, ZONE).is_some_and(|s| !serial_gt(first, s))
    })
    .await;

    // 50 changes: a changed address, a new name, a name gone.
    let mut extras: Vec<String> = Vec::new();
    let mut events: Vec<(&str, u64)> = Vec::new();
    let started = Instant::now();
    for change in 1..=50u32 {
        if change % 5 == 0 {
            let name = format!("extra-{change}");
            endpoints
                .create(
                    &PostParams::default(),
                    &endpoint(&name, &format!("{name}.example.com"), &format!("192.0.2.{change}")),
                )
                .await
                .unwrap();
            extras.push(name);
        } else if change % 7 == 0 && !extras.is_empty() {
            let gone = extras.remove(0);
            endpoints.delete(&gone, &DeleteParams::default()).await.unwrap();
        } else {
            endpoints
                .patch(
                    "app",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"endpoints": [
                        {"dnsName": "app.example.com", "recordType": "A", "recordTTL": 30, "targets": [format!("10.0.0.{change}")]},
                    ]}})),
                )
                .await
                .unwrap();
        }
        match change {
            // Replica 2 starts late.
            10 => {
                replicas[2].start();
                events.push(("replica 2 starts", unix_ms()));
            }
            // Replica 1 restarts.
            25 => {
                replicas[1].stop();
                tokio::time::sleep(Duration::from_millis(300)).await;
                replicas[1].start();
                events.push(("replica 1 restarts", unix_ms()));
            }
            // The status writer restarts.
            40 => {
                replicas[0].stop();
                tokio::time::sleep(Duration::from_millis(300)).await;
                replicas[0].start();
                events.push(("replica 0 restarts", unix_ms()));
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("50 changes written in {:?}", started.elapsed());

    // Every replica ends on the serial recorded for the last content.
    let settled = Instant::now();
    let mut last = None;
    while settled.elapsed() < Duration::from_secs(30) {
        if let (Some(serial), Some(recorded)) = (agreed(&replicas, ZONE), record_serial(&domains).await) {
            // The last change (extra-50) is in the version transfers
            // serve: its serial is recorded and due.
            if serial == recorded
                && axfr(replicas[0].addr, ZONE)
                    .iter()
                    .any(|l| l.starts_with("extra-50.example.com."))
            {
                last = Some(serial);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let last = last.expect("the replicas did not agree on the last serial within 30 s");
    println!("replicas agree on serial {last} after {:?}", settled.elapsed());
    let took = eventually("Knot serves the last serial", || {
        soa_serial(knot.addr, ZONE) == Some(last)
    })
    .await;
    println!("Knot caught up {took:?} after the replicas");
    let answers = poller.finish();
    let seen: Vec<u32> = answers.iter().map(|a| a.0).collect();

    // Knot's zone is the replicas' zone.
    let ours = axfr(replicas[1].addr, ZONE);
    let theirs = axfr(knot.addr, ZONE);
    assert!(ours.len() > 3, "AXFR from a replica: {ours:?}");
    assert_eq!(ours, theirs, "Knot's zone differs from the replicas'");
    for replica in &replicas {
        assert_eq!(axfr(replica.addr, ZONE), ours, "the replicas' zones differ");
    }

    // The resolver-like poller never saw the serial go backwards.
    let mut distinct = seen.clone();
    distinct.dedup();
    println!(
        "poller: {} SOA answers through the round-robin, {} serial changes; {} queries and connections handed on",
        seen.len(),
        distinct.len().saturating_sub(1),
        proxy.handed.load(Ordering::Relaxed)
    );
    let back = steps_back(&seen);
    let mut late = Vec::new();
    for replica in &replicas {
        late.push(replica.late_records().await);
    }
    println!("records learned after their instant, per replica (since its last start): {late:?}");
    if !back.is_empty() {
        // Straight to standard error (not captured by the test harness),
        // so it lands beside the replicas' logs and the FAILED line.
        use std::io::Write as _;
        // Each step: the two answers' replica (index), serial and time
        // (ms from the first answer), beside the restarts' times.
        let start = answers.first().map_or(0, |a| a.2);
        let routes = proxy.routes.lock().unwrap().clone();
        let described: Vec<String> = back
            .iter()
            .map(|(i, _, _)| {
                let one = |a: &(u32, u16, u64)| format!("replica {:?} {} at {} ms", routes.get(&a.1), a.0, a.2 - start);
                format!("[{} -> {}]", one(&answers[i - 1]), one(&answers[*i]))
            })
            .collect();
        let events: Vec<(&str, u64)> = events
            .iter()
            .map(|(what, at)| (*what, at.saturating_sub(start)))
            .collect();
        let _ = writeln!(
            std::io::stderr(),
            "replicas test FAILED: the serial went backwards: {described:?}; restarts (ms) {events:?}; \
             serials seen {distinct:?}; late records per replica since its last start {late:?}"
        );
    }
    assert!(back.is_empty(), "the serial went backwards: {back:?} (in {distinct:?})");
    assert!(distinct.len() >= 5, "too few serials to mean anything: {distinct:?}");

    // An IXFR from any serial served, asked of every replica: the same
    // difference from each that has the history (RFC 1995 condensed), the
    // whole zone from the others (§4), never another difference.
    let mut answered = (0, 0);
    for from in distinct.iter().rev().skip(1) {
        let mut differences: Vec<(usize, Vec<String>)> = Vec::new();
        for (index, replica) in replicas.iter().enumerate() {
            match ixfr(replica.addr, ZONE, *from) {
                Ixfr::Incremental(lines) => differences.push((index, lines)),
                Ixfr::Full(lines) => {
                    assert_eq!(
                        lines, ours,
                        "replica {index}: IXFR from {from} answered with another zone"
                    );
                    answered.1 += 1;
                }
            }
        }
        for pair in differences.windows(2) {
            assert_eq!(
                pair[0].1, pair[1].1,
                "replicas {} and {}: IXFR from {from} differs",
                pair[0].0, pair[1].0
            );
        }
        answered.0 += differences.len();
    }
    println!(
        "IXFR from each serial the poller saw, of each replica: {} incremental (all alike), {} whole zone",
        answered.0, answered.1
    );
    assert!(
        answered.0 >= distinct.len(),
        "too few incremental answers: {answered:?}"
    );

    // Knot transferred incrementally, never applying a wrong difference.
    let log = knot.log();
    let incoming_ixfr = log
        .lines()
        .filter(|l| l.contains("IXFR, incoming") && l.contains("finished"))
        .count();
    let mut incremental = 0;
    let mut full = 0;
    for replica in &replicas {
        incremental += replica.transfers("incremental").await;
        full += replica.transfers("full").await;
    }
    println!("Knot: {incoming_ixfr} IXFRs finished; replicas sent {incremental} incremental and {full} full transfers since their last start");
    assert!(incoming_ixfr >= 3, "Knot logged too few IXFRs:\n{log}");
    assert!(incremental >= 1, "no replica sent an incremental transfer");
    for bad in ["no such record", "malformed", "semantic check", "already exists"] {
        assert!(!log.contains(bad), "Knot: {bad}:\n{log}");
    }
    for replica in &mut replicas {
        replica.stop();
    }
    host.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// A record reaches a replica's DNS server as soon as its Domain watch
/// delivers it, not after the publisher's pass in progress: with every
/// API request slowed to 1.5 s, the status writer's pass that records a
/// serial (1.5 s) goes on writing statuses (1.5 s more) past the record's
/// instant (2.5 s); the writer must still switch at that instant, with
/// the read-only replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_publisher_pass_does_not_delay_the_serial_switch() {
    const ZONE: &str = "example.com.";
    const DELAY_MS: u64 = 2_500;
    let dir = temp_dir("replicas-slow-pass");
    let Host {
        host,
        kubeconfig,
        domains,
        endpoints,
    } = Host::start(&dir, None).await;
    let delay = DELAY_MS.to_string();
    let base = [
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--serial-activation-delay",
        &delay,
    ];
    let mut replicas = vec![Replica::new(&base, false), Replica::new(&base, true)];
    for replica in &mut replicas {
        replica.start();
    }
    let first = first_serial_served(&domains, &replicas).await;

    // Every API request from here on takes 1.5 s: the writer's pass
    // records the serial (1.5 s), then writes statuses (1.5 s) while the
    // record's instant passes.
    host.set_latency(Duration::from_millis(1_500));
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (samples, stop) = (samples.clone(), stop.clone());
        let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let at = unix_ms();
                let (writer, reader) = (soa_serial(addrs[0], ZONE), soa_serial(addrs[1], ZONE));
                samples.lock().unwrap().push((at, writer, reader));
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    endpoints
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"endpoints": [
                {"dnsName": "app.example.com", "recordType": "A", "recordTTL": 30, "targets": ["10.0.0.2"]},
            ]}})),
        )
        .await
        .unwrap();
    let changed = Instant::now();
    let record = loop {
        let domain = domains.get("myfed").await.unwrap();
        if let Some(record) = domain.status.and_then(|s| s.serial_record) {
            if u32::try_from(record.serial).ok() != Some(first) {
                break record;
            }
        }
        assert!(
            changed.elapsed() < Duration::from_secs(30),
            "no new serial recorded within 30 s"
        );
    };
    let serial = u32::try_from(record.serial).unwrap();
    let instant = u64::try_from(record.active_from_unix_ms).unwrap();
    // Sample until 4 s past the instant (a pass ends ~0.5 s after it).
    while unix_ms() < instant + 4_000 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    host.set_latency(Duration::ZERO);
    let samples = samples.lock().unwrap().clone();
    // 150 ms of grace: a sample started just before the instant.
    let after: Vec<_> = samples.iter().filter(|(at, _, _)| *at >= instant + 150).collect();
    let stale: Vec<_> = after
        .iter()
        .filter(|(_, writer, reader)| *writer != Some(serial) || *reader != Some(serial))
        .collect();
    let switched = |pick: fn(&Sample) -> Option<u32>| {
        samples
            .iter()
            .find(|s| pick(s) == Some(serial))
            .map(|s| s.0 as i64 - instant as i64)
    };
    println!(
        "serial {first} -> {serial} due {DELAY_MS} ms after it was recorded; writer switched at {:?} ms, \
         read-only replica at {:?} ms from the instant; {} samples after it, {} stale",
        switched(|s| s.1),
        switched(|s| s.2),
        after.len(),
        stale.len()
    );
    assert!(after.len() >= 20, "too few samples after the instant: {}", after.len());
    assert!(
        stale.is_empty(),
        "after the instant a replica still showed another serial than {serial}: {:?}",
        &stale[..stale.len().min(10)]
    );
    for replica in &replicas {
        assert_eq!(replica.late_records().await, 0, "a replica counted a late record");
    }
    for replica in &mut replicas {
        replica.stop();
    }
    host.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// A record written while a replica's watch was down, and found by the
/// relist that follows (the emulator kept too little history to resume
/// the watch: 410 Gone), reaches its DNS server without waiting for
/// another change: a relist's objects reach the watch cache only at its
/// end, and that end wakes the serial follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_record_found_by_a_relist_is_served() {
    const ZONE: &str = "example.com.";
    let dir = temp_dir("replicas-relist");
    let config = EmulatorConfig {
        history_limit: 16,
        ..EmulatorConfig::default()
    };
    let Host {
        host,
        kubeconfig,
        domains,
        ..
    } = Host::start_with(&dir, None, config).await;
    let base = ["dns-server", "--kubeconfig", kubeconfig.to_str().unwrap()];
    // Read-only: the test writes the records, as a writer elsewhere would.
    let mut replica = Replica::new(&base, true);
    replica.start();
    let record = |serial: u32| {
        json!({"status": {"serialRecord": {
            "serial": serial, "content": "0000000000000001", "activeFromUnixMs": 0, "previous": 0,
        }}})
    };
    domains
        .patch_status("myfed", &PatchParams::default(), &Patch::Merge(record(100)))
        .await
        .unwrap();
    eventually("the replica serves the recorded serial 100", || {
        replica.serial(ZONE) == Some(100)
    })
    .await;

    // While the API server is away: a new record, then more writes than
    // its history keeps.
    host.stop();
    let store = host.store();
    let domain_info = store
        .resource("multiclusterdns.fedns.io", "v1alpha1", "domains")
        .unwrap();
    store
        .patch(
            &domain_info,
            Some("fedns-system"),
            "myfed",
            PatchKind::Merge,
            record(200),
            None,
            Target::Status,
        )
        .unwrap();
    let configmaps = store.resource("", "v1", "configmaps").unwrap();
    for i in 0..40 {
        store
            .create(
                &configmaps,
                Some("ns"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("filler-{i}")}}),
            )
            .unwrap();
    }
    host.resume().await.unwrap();
    let took = eventually("the replica serves serial 200 after the relist", || {
        replica.serial(ZONE) == Some(200)
    })
    .await;
    println!("the record written while the watch was down was served {took:?} after the API server came back");
    replica.stop();
    host.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// (Unix time in milliseconds, the writer's SOA serial, the read-only
/// replica's).
type Sample = (u64, Option<u32>, Option<u32>);

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_replicas_agree_on_the_serial_of_the_files() {
    const ZONE: &str = "example.com.";
    let dir = temp_dir("replicas-manifests");
    let file = dir.join("zone.yaml");
    let text = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  nameServers: [ns1.example.net]
  transfer: {allow: [127.0.0.0/8]}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: www, namespace: fedns-system}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.1]}]}
"#;
    write(&file, text);
    let modified = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let base = ["dns-server", "--manifests", file.to_str().unwrap()];
    let mut replicas = vec![
        Replica::new(&base, false),
        Replica::new(&base, false),
        Replica::new(&base, false),
    ];
    // Started a second and more apart: the serial is the files', not the
    // start time.
    for replica in &mut replicas {
        replica.start();
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    eventually("the replicas serve the files' serial", || {
        agreed(&replicas, ZONE) == Some(1_700_000_000)
    })
    .await;
    let proxy = RoundRobin::start(replicas.iter().map(|r| r.addr).collect()).await;
    // One zone: an AXFR through the round-robin is every replica's.
    let zone = axfr(proxy.addr, ZONE);
    assert!(zone.iter().any(|l| l.contains("203.0.113.1")), "{zone:?}");
    for replica in &replicas {
        assert_eq!(axfr(replica.addr, ZONE), zone);
    }
    // A restart serves the same serial.
    replicas[1].stop();
    replicas[1].start();
    eventually("a restarted replica serves the same serial", || {
        replicas[1].serial(ZONE) == Some(1_700_000_000)
    })
    .await;
    // New files (a later modification time): replicas restarted on them
    // serve a greater serial, the same on each.
    write(&file, &text.replace("203.0.113.1", "203.0.113.2"));
    let later = modified + Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    for replica in &mut replicas {
        replica.stop();
        replica.start();
    }
    eventually("the replicas serve the new files' serial", || {
        agreed(&replicas, ZONE) == Some(1_700_000_600)
    })
    .await;
    assert_eq!(
        dig(replicas[2].addr.port(), "www.example.com", "A", false),
        ["203.0.113.2"]
    );
    for replica in &mut replicas {
        replica.stop();
    }
    let _ = std::fs::remove_dir_all(dir);
}
