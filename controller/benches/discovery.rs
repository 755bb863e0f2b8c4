//! Member-side discovery benchmark (not a test; prints figures):
//!
//! 1. Answers per core: one DNS server (one UDP worker) holds a discovery
//!    zone `myfed.svc.cluster.local` computed by the replica's own rules
//!    (SERVICES records, half with a ready local Service, half falling
//!    back) and the federation zone `example.com` they point into (global
//!    and region names with addresses, zone names a CNAME to the region
//!    name). dnsperf (pinned to the last CPU when there are two or more)
//!    sends each mix for DURATION s: public names (the global name, A),
//!    discovery names answered locally (A), and discovery names answered
//!    with the CNAME chain (discovery → zone → region → addresses). Printed:
//!    answers/s, this process's CPU per answer (the server's threads; kernel
//!    time included), answers per core, and the ratio against the public
//!    path. Also the in-process cost of the answer path alone (one thread,
//!    no sockets), ns per answer.
//! 2. Readiness change → changed answer: the sandbox runs (host, three
//!    members, their member-side replicas); CHANGES times, us-east-1's nginx
//!    endpoints turn unready (`drain-endpoints`) and ready again; the time
//!    from the change in the member's API to the replica answering the new
//!    way (polled over UDP every millisecond), p50/p99 per direction.
//!
//! Run: `cargo bench -p fedns-controller --bench discovery` (env: SERVICES
//! (1000), DURATION (10), CHANGES (20), PARTS (qps,readiness)). Only
//! loopback addresses are used.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fedns_controller::discovery::answer::{self, FederationView, Inputs, LocalService, MemberView, RecordView};
use fedns_dnsserver::hickory_proto::op::{Message, Query};
use fedns_dnsserver::hickory_proto::rr::rdata::{A, CNAME};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{
    answer as answer_query, AnswerConfig, DnsMetrics, DnsServer, ServerConfig, Transport, ZoneContent, ZoneStore,
};

/// `text` as a name; the bench builds only valid ones (from fixed
/// patterns), so the root stands in for one that would not parse.
mod common;
use common::{cpu_seconds, env, percentile};

fn name(text: &str) -> Name {
    Name::from_ascii(text).unwrap_or_else(|_| Name::root())
}

/// The service of index `i`: (namespace, service).
fn service(i: u64) -> (String, String) {
    (format!("ns-{}", i % 10), format!("svc-{i}"))
}

/// The discovery zone (by the replica's rules) and the federation zone.
fn zones(services: u64) -> Vec<ZoneContent> {
    let mut local = BTreeMap::new();
    let mut records = Vec::new();
    for i in 0..services {
        let (namespace, service_name) = service(i);
        records.push(RecordView {
            namespace: namespace.clone(),
            service: service_name.clone(),
            domain_ref: "myfed".into(),
            external_name: None,
            dns_prefix: None,
        });
        local.insert(
            (namespace, service_name),
            LocalService {
                cluster_ips: vec![IpAddr::V4(Ipv4Addr::new(10, 96, (i / 250) as u8, (i % 250) as u8 + 1))],
                ready: i % 2 == 0,
                ready_endpoints: usize::from(i % 2 == 0),
                ..Default::default()
            },
        );
    }
    let inputs = Inputs {
        cluster_domain: "cluster.local".into(),
        federations: vec![FederationView {
            name: "myfed".into(),
            domain: "example.com".into(),
        }],
        records,
        member: Some(MemberView {
            region: Some("us-east-1".into()),
            zones: vec!["us-east-1a".into()],
            cordoned: false,
        }),
        node_zone: None,
        services: local,
    };
    let mut out = answer::compute(&inputs).zones;
    let mut public = ZoneContent::new(name("example.com."));
    for i in 0..services {
        let (namespace, service_name) = service(i);
        let prefix = format!("{service_name}.{namespace}.myfed.svc");
        let global = name(&format!("{prefix}.example.com."));
        let region = name(&format!("{prefix}.us-east-1.example.com."));
        for last in 1..=3u8 {
            let a = RData::A(A(Ipv4Addr::new(127, 0, 10, last)));
            public.records.push(Record::from_rdata(global.clone(), 30, a));
        }
        let a = RData::A(A(Ipv4Addr::new(127, 0, 10, 1)));
        public.records.push(Record::from_rdata(region.clone(), 30, a));
        public.records.push(Record::from_rdata(
            name(&format!("{prefix}.us-east-1a.us-east-1.example.com.")),
            30,
            RData::CNAME(CNAME(region)),
        ));
    }
    out.push(public);
    out
}

/// The three query mixes: (label, dnsperf lines).
fn mixes(services: u64) -> Vec<(&'static str, Vec<String>)> {
    let public = (0..services)
        .map(|i| {
            let (n, s) = service(i);
            format!("{s}.{n}.myfed.svc.example.com A")
        })
        .collect();
    let discovery = |ready: u64| -> Vec<String> {
        (0..services)
            .filter(|i| i % 2 == ready)
            .map(|i| {
                let (n, s) = service(i);
                format!("{s}.{n}.myfed.svc.cluster.local A")
            })
            .collect()
    };
    vec![
        ("public name (global, A)", public),
        ("discovery, local answer", discovery(0)),
        ("discovery, CNAME chain", discovery(1)),
    ]
}

fn wire_query(line: &str) -> Vec<u8> {
    let (qname, _) = line.split_once(' ').unwrap_or((line, "A"));
    let mut message = Message::query();
    message.add_query(Query::query(name(qname), RecordType::A));
    // An empty packet (were encoding to fail) gets no answer: no figure.
    message.to_vec().unwrap_or_default()
}

/// dnsperf against `addr` with `lines` for `seconds`: queries/s.
fn dnsperf(addr: SocketAddr, lines: &[String], seconds: u64) -> Option<f64> {
    let file = std::env::temp_dir().join(format!("fedns-discovery-bench-{}.txt", std::process::id()));
    std::fs::write(&file, lines.join("\n") + "\n").ok()?;
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let mut command = if cpus >= 2 {
        let mut c = std::process::Command::new("taskset");
        c.args(["-c", &(cpus - 1).to_string(), "dnsperf"]);
        c
    } else {
        std::process::Command::new("dnsperf")
    };
    let out = command
        .args(["-s", &addr.ip().to_string(), "-p", &addr.port().to_string(), "-d"])
        .arg(&file)
        .args(["-l", &seconds.to_string(), "-c", "4", "-q", "500"])
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Queries per second:"))
        .and_then(|v| v.trim().parse().ok())
}

async fn answers_per_core(services: u64, seconds: u64) {
    let store = ZoneStore::new();
    let started = Instant::now();
    let outcome = store.publish(zones(services));
    println!(
        "zones: {} discovery records + the federation zone built in {:?} ({} zones)",
        services,
        started.elapsed(),
        outcome.zones.len()
    );
    // The answer path alone, one thread.
    let snapshot = store.load();
    let config = AnswerConfig::default();
    let mut in_process = Vec::new();
    for (label, lines) in mixes(services) {
        let packets: Vec<Vec<u8>> = lines.iter().map(|l| wire_query(l)).collect();
        let mut out = Vec::with_capacity(1232);
        let rounds = 200_000 / packets.len().max(1) + 1;
        let started = Instant::now();
        let mut answered = 0u64;
        for _ in 0..rounds {
            for packet in &packets {
                out.clear();
                if answer_query(&snapshot, packet, Transport::Udp, &config, &mut out).is_some() {
                    answered += 1;
                }
            }
        }
        let ns = started.elapsed().as_nanos() as f64 / answered.max(1) as f64;
        in_process.push((label, ns));
    }
    println!("\nthe answer path alone (one thread, no sockets):");
    let public_ns = in_process[0].1;
    for (label, ns) in &in_process {
        println!(
            "  {label:<26} {ns:>7.0} ns/answer  {:>10.0} answers/s per core  ×{:.2} the public path",
            1e9 / ns,
            public_ns / ns
        );
    }
    let started = DnsServer::start(
        ServerConfig {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
            udp_workers: 1,
            ..ServerConfig::default()
        },
        store.clone(),
        DnsMetrics::new(),
    )
    .await;
    let server = match started {
        Ok(server) => server,
        Err(e) => {
            println!("the DNS server did not start on loopback: {e}");
            return;
        }
    };
    let addr = server.udp_addrs()[0];
    println!(
        "\nthrough UDP (one worker; dnsperf -c 4 -q 500, {seconds} s per mix; CPU = this process, kernel included):"
    );
    let mut rows = Vec::new();
    for (label, lines) in mixes(services) {
        let cpu_before = cpu_seconds();
        let qps = tokio::task::spawn_blocking(move || dnsperf(addr, &lines, seconds))
            .await
            .ok()
            .flatten();
        let cpu = cpu_seconds() - cpu_before;
        match qps {
            Some(qps) => {
                let answers = qps * seconds as f64;
                let us_per_answer = cpu * 1e6 / answers.max(1.0);
                rows.push((label, qps, us_per_answer));
            }
            None => println!("  {label}: dnsperf gave no figure (is dnsperf installed?)"),
        }
    }
    if let Some((_, public_qps, public_us)) = rows.first().copied() {
        for (label, qps, us) in &rows {
            println!(
                "  {label:<26} {qps:>9.0} answers/s  {us:>5.2} µs CPU/answer  {:>9.0} answers per core  q/s ×{:.2}, per core ×{:.2} the public path",
                1e6 / us,
                qps / public_qps,
                public_us / us
            );
        }
    }
    server.shutdown().await;
}

/// The replica's answer for `qname` A: true when it is a CNAME chain.
fn answers_cname(socket: &UdpSocket, replica: SocketAddr, packet: &[u8]) -> Option<bool> {
    socket.send_to(packet, replica).ok()?;
    let mut buf = [0u8; 1500];
    let (len, _) = socket.recv_from(&mut buf).ok()?;
    let response = Message::from_vec(&buf[..len]).ok()?;
    let first = response.answers.first()?;
    Some(first.record_type() == RecordType::CNAME)
}

async fn readiness_to_answer(changes: u64) {
    use fedns_controller::cli::sandbox;
    let state_dir: PathBuf = std::env::temp_dir().join(format!("fedns-discovery-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&state_dir);
    let dns_port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_or(0, |a| a.port());
    let args = fedns_controller::cli::SandboxArgs {
        action: None,
        state_dir: state_dir.clone(),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], dns_port)),
        metrics_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        members_from: None,
        engine: None,
        verbose: false,
        provider: Vec::new(),
    };
    let running = match sandbox::start(&args).await {
        Ok(running) => running,
        Err(e) => {
            println!("the sandbox did not start: {e:#}");
            return;
        }
    };
    let Some(replica) = running
        .discovery
        .iter()
        .find(|r| r.member == "us-east-1")
        .map(|r| r.addr)
    else {
        println!("no us-east-1 replica");
        running.shutdown().await;
        return;
    };
    let socket = match UdpSocket::bind("127.0.0.1:0") {
        Ok(socket) => socket,
        Err(e) => {
            println!("no loopback socket: {e}");
            running.shutdown().await;
            return;
        }
    };
    let _ = socket.set_read_timeout(Some(Duration::from_millis(200)));
    let packet = wire_query("nginx.ns.myfed.svc.cluster.local A");
    // Wait for the first local answer (30 s at most).
    let deadline = Instant::now() + Duration::from_secs(30);
    while answers_cname(&socket, replica, &packet) != Some(false) {
        if Instant::now() > deadline {
            println!("the replica gave no local answer within 30 s");
            running.shutdown().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut to_fallback = Vec::new();
    let mut to_local = Vec::new();
    for _ in 0..changes {
        for (action, want_cname, samples) in [
            ("drain-endpoints", true, &mut to_fallback),
            ("restore-endpoints", false, &mut to_local),
        ] {
            let started = Instant::now();
            if let Err(e) = sandbox::control(&state_dir, action, "us-east-1").await {
                println!("{action}: {e:#}");
                running.shutdown().await;
                return;
            }
            let deadline = started + Duration::from_secs(30);
            loop {
                if answers_cname(&socket, replica, &packet) == Some(want_cname) {
                    samples.push(started.elapsed());
                    break;
                }
                if Instant::now() > deadline {
                    println!("{action}: the answer did not change within 30 s");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    println!("\nreadiness change in the member's API → the replica's changed answer ({changes} changes each way):");
    for (label, samples) in [
        ("ready → unready (CNAME chain)", &mut to_fallback),
        ("unready → ready (local)", &mut to_local),
    ] {
        if samples.is_empty() {
            continue;
        }
        samples.sort();
        println!(
            "  {label:<32} p50 {:>8.1?}  p99 {:>8.1?}  max {:>8.1?}",
            percentile(samples, 0.5),
            percentile(samples, 0.99),
            samples[samples.len() - 1]
        );
    }
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(&state_dir);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes --bench; nothing else is read from argv.
    let services = env("SERVICES", 1000).max(2);
    let seconds = env("DURATION", 10).max(1);
    let changes = env("CHANGES", 20).max(1);
    let parts = std::env::var("PARTS").unwrap_or_else(|_| "qps,readiness".into());
    println!("fedns discovery benchmark: SERVICES={services} DURATION={seconds} CHANGES={changes} PARTS={parts}");
    if parts.contains("qps") {
        answers_per_core(services, seconds).await;
    }
    if parts.contains("readiness") {
        readiness_to_answer(changes).await;
    }
}
