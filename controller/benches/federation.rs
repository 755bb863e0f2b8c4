//! Controller benchmark (not a test; prints figures):
//! 1. time from a load-balancer address change in a member to the changed
//!    answer from the embedded DNS server, p50/p99 over 100 changes
//!    (target p99 < 1 s);
//! 2. failover time after a member's API server stops, default health
//!    settings (target < 5 s);
//! 3. scale: MEMBERS members × SERVICES Services (default 20 × 2,000 =
//!    40,000 shards): seed time, time to converge from a cold start, the
//!    controller's peak RSS (targets < 30 s, < 512 MiB), the last snapshot
//!    update time, the whole zone's snapshot build time after a Domain
//!    edit, a controller restart (SIGTERM, as Kubernetes stops a
//!    container; with `--snapshot-file` unless SNAPSHOT=0 or the binary
//!    lacks it): its time to serve every name, to publish from the
//!    objects again, and its peak RSS, and LB change → answer p50/p99 over SCALE_CHANGES (20)
//!    changes at that scale; first the same for MEMBERS × 2,000/MEMBERS
//!    shards, and the ratio of the two p99s (target ≤ 2×);
//! 4. routes (only when PARTS names it): MEMBERS × ROUTES (default 50 ×
//!    2,000) HTTPRoutes behind one Gateway per member, each followed by a
//!    RouteDNSRecord, beside the same count of Services (the peer run):
//!    convergence, peak RSS and their ratios, and a Gateway address change
//!    → answer (see `federation/routes.rs`).
//!
//! Run: `cargo bench --workspace --bench federation`, or `bench/controller.sh`
//! (env: MEMBERS, SERVICES, CHANGES, SCALE_CHANGES; PARTS=latency,scale
//! picks the parts, PARTS=routes the route run (ROUTES, ROUTE_CHANGES); WRAP puts a profiler's command line before the
//! controller, e.g. `WRAP="heaptrack -o /tmp/fedns"`; FEDNS_LOG sets the
//! controller's RUST_LOG, default `error,kube_client=off`; FEDNS_ARGS adds
//! flags to the controller's command line (e.g. `--workers 32`); DOMAIN_EDIT=0
//! and RESTART=0 skip the Domain edit and the restart, so a heap profile's
//! memory held at the end is the steady state after the changes).

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "federation/routes.rs"]
mod routes;

/// This process runs the API servers of every cluster (the emulator):
/// with glibc's malloc their lists and watch events spent about a third
/// of their time in its free-list searches and consolidation, time the
/// controller's figures paid on a 2-core machine. jemalloc, as the
/// `fedns` binary allocates.
#[cfg(all(target_os = "linux", feature = "jemalloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use fedns_controller::federation::Federation;
use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use fedns_dnsserver::hickory_proto::rr::{Name, RecordType};
use serde_json::json;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A loopback port free for both UDP and TCP (the DNS server binds both),
/// below the ephemeral range: the controller binds its DNS listeners only after its
/// first publish (tens of seconds at 1,000,000 shards), and a port picked
/// by a port-0 bind was meanwhile handed to one of its own connections to
/// the emulated API servers ("127.0.0.1:… is held by another socket").
fn free_port() -> u16 {
    // A bench with no free port below the ephemeral range cannot start
    // its controllers at all: stopping with the reason is all it can do.
    fedns_loopback::ports::free_loopback_port().expect("a free loopback port for the controller")
}

/// An A query for `name` with message id `id`, as octets. EDNS with
/// 4,096 octets: 50 members' A records (800 octets) do not fit the 512
/// octets of a plain DNS message, whose answer is TC.
fn a_query(id: u16, name: &str) -> Vec<u8> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    // The names are the bench's own (`r<i>.example.com`, `svc-<i>...`):
    // always valid, and a valid query always encodes.
    message.add_query(Query::query(
        Name::from_ascii(format!("{name}.")).expect("a bench name is a valid DNS name"),
        RecordType::A,
    ));
    let mut edns = Edns::new();
    edns.set_max_payload(4096);
    message.set_edns(edns);
    message.to_vec().expect("a query for a valid name encodes")
}

/// The A records of `response`, sorted.
fn sorted_a(response: &Message) -> Vec<String> {
    let mut out: Vec<String> = response
        .answers
        .iter()
        .filter(|r| r.record_type() == RecordType::A)
        .map(|r| r.data.to_string())
        .collect();
    out.sort();
    out
}

/// A UDP socket on loopback that waits `timeout` for each answer; the
/// bench cannot measure anything without one, so it stops with the reason.
fn query_socket(timeout: Duration) -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a loopback UDP socket for the bench's queries");
    socket
        .set_read_timeout(Some(timeout))
        .expect("a non-zero read timeout is accepted");
    socket
}

/// The A records of `name`, sorted (empty on NXDOMAIN or timeout).
fn query_a(port: u16, name: &str) -> Vec<String> {
    let socket = query_socket(Duration::from_millis(500));
    if socket.send_to(&a_query(1, name), ("127.0.0.1", port)).is_err() {
        return Vec::new();
    }
    let mut buf = [0u8; 4096];
    let Ok((len, _)) = socket.recv_from(&mut buf) else {
        return Vec::new();
    };
    let Ok(response) = Message::from_vec(&buf[..len]) else {
        return Vec::new();
    };
    sorted_a(&response)
}

/// The A records of each of `names` (as [`query_a`]), asked 64 at a time
/// from one socket: each batch's queries sent, then its answers read
/// until each came or 500 ms passed (an unanswered name gets none). A sweep over 2,000
/// names takes milliseconds, not the 2,000 round trips one after another
/// that a busy machine stretches to seconds, so the time a change is seen
/// is the answers' and not the sweep's.
fn query_many(port: u16, names: &[&str]) -> Vec<Vec<String>> {
    let socket = query_socket(Duration::from_millis(50));
    let mut out: Vec<Option<Vec<String>>> = vec![None; names.len()];
    let mut buf = [0u8; 4096];
    // 64 queries in flight at most: their answers (about 900 octets each
    // for 50 members) fit the socket's default receive buffer (208 KiB),
    // where 256 overflowed it and every sweep waited for the lost ones.
    // Query ids are the names' positions (at most 65,536).
    const IN_FLIGHT: usize = 64;
    let names = &names[..names.len().min(usize::from(u16::MAX) + 1)];
    for (batch, chunk) in names.chunks(IN_FLIGHT).enumerate() {
        for (i, name) in chunk.iter().enumerate() {
            let query = a_query((batch * IN_FLIGHT + i) as u16, name);
            let _ = socket.send_to(&query, ("127.0.0.1", port));
        }
        let started = Instant::now();
        let mut left = chunk.len();
        while left > 0 && started.elapsed() < Duration::from_millis(500) {
            let Ok((len, _)) = socket.recv_from(&mut buf) else {
                continue;
            };
            let Ok(response) = Message::from_vec(&buf[..len]) else {
                continue;
            };
            let Some(slot) = out.get_mut(usize::from(response.metadata.id)) else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(sorted_a(&response));
                left -= 1;
            }
        }
    }
    out.into_iter().map(Option::unwrap_or_default).collect()
}

fn wait_for(deadline: Duration, check: impl FnMut() -> bool) -> Option<Duration> {
    wait_every(deadline, Duration::from_millis(2), check)
}

/// Polls `check` every `interval` until it holds (its time) or `deadline`.
fn wait_every(deadline: Duration, interval: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < deadline {
        if check() {
            return Some(started.elapsed());
        }
        std::thread::sleep(interval);
    }
    None
}

/// As [`wait_every`], but waiting at least four times the last check's
/// own time between checks.
fn wait_sparingly(deadline: Duration, interval: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < deadline {
        let checked = Instant::now();
        if check() {
            return Some(started.elapsed());
        }
        std::thread::sleep(interval.max(checked.elapsed() * 4));
    }
    None
}

/// The controller's peak resident set (`VmHWM`), in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmHWM:")
}

/// The controller's resident set now (`VmRSS`), in MiB.
fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// A `/proc/PID/status` field given in kB, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct Controller(Child);
impl Drop for Controller {
    fn drop(&mut self) {
        // Under WRAP the profiler writes its file only when it is asked
        // to stop (SIGINT), not when killed: ask, and give it 30 s.
        if std::env::var_os("WRAP").is_some_and(|w| !w.is_empty()) {
            signal_group(&self.0, nix::sys::signal::Signal::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // The whole process group: under WRAP the controller is a child
        // of the wrapper.
        signal_group(&self.0, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends `signal` to the process group `child` leads (the controller, or
/// a profiler and the controller under it). A group already gone is no
/// error: the controller may have exited on its own. Through the kill(2)
/// call, not a `kill` program a fresh machine may not have.
fn signal_group(child: &std::process::Child, signal: nix::sys::signal::Signal) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, signal);
}

impl Controller {
    /// Stops the controller as Kubernetes stops a container: SIGTERM,
    /// then SIGKILL after 30 s. Returns how long it took to exit.
    fn terminate(mut self) -> Duration {
        let asked = Instant::now();
        signal_group(&self.0, nix::sys::signal::Signal::SIGTERM);
        while asked.elapsed() < Duration::from_secs(30) && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        asked.elapsed()
    }

    /// The controller's own pid: under WRAP the descendant running the
    /// fedns binary, else the child itself.
    fn pid(&self) -> u32 {
        let mut queue = vec![self.0.id()];
        while let Some(pid) = queue.pop() {
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            if exe.file_name().is_some_and(|n| Some(n) == binary().file_name()) {
                return pid;
            }
            for task in std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                queue.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
            }
        }
        self.0.id()
    }
}

/// The fedns binary the runs start now: this build's, or `FEDNS_OLD`'s
/// during the old binary's runs (see [`main`]).
static BINARY: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

fn binary() -> std::path::PathBuf {
    BINARY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_fedns").into())
}

/// The controller under `WRAP` when set (a profiler's command line, e.g.
/// `heaptrack -o /tmp/fedns`), else as it is.
fn controller_command() -> Command {
    let wrap = std::env::var("WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(binary());
            command
        }
        None => Command::new(binary()),
    }
}

fn start_controller(federation: &Federation, dns_port: u16, metrics_port: u16) -> Controller {
    start_controller_with(federation, dns_port, metrics_port, &[])
}

/// Whether the binary the runs start now has `flag` (an older one, under
/// `FEDNS_OLD`, may not).
fn binary_has(flag: &str) -> bool {
    Command::new(binary())
        .args(["controller", "--help"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(flag))
}

/// [`start_controller`] with `extra` flags before `FEDNS_ARGS`'.
fn start_controller_with(federation: &Federation, dns_port: u16, metrics_port: u16, extra: &[String]) -> Controller {
    use std::os::unix::process::CommandExt;
    Controller(
        controller_command()
            .process_group(0)
            .args([
                "controller",
                "--leader-elect=false",
                "--udp-workers",
                "1",
                "--kubeconfig",
            ])
            .arg(federation.state_dir.join("host.kubeconfig"))
            .args([
                "--dns-listen",
                &format!("127.0.0.1:{dns_port}"),
                "--metrics-addr",
                &format!("127.0.0.1:{metrics_port}"),
            ])
            .args(extra)
            // FEDNS_ARGS: more flags, e.g. `--workers 32`.
            .args(std::env::var("FEDNS_ARGS").unwrap_or_default().split_whitespace())
            .env(
                "RUST_LOG",
                std::env::var("FEDNS_LOG").unwrap_or_else(|_| "error,kube_client=off".into()),
            )
            // As deploy/base runs it.
            .env("MALLOC_ARENA_MAX", "1")
            .env("MALLOC_MMAP_THRESHOLD_", "131072")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start fedns controller"),
    )
}

fn member_objects(region: &str, zone: &str, services: usize, ip_of: impl Fn(usize) -> String) -> String {
    let mut items = vec![json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("node-{zone}"), "labels": {"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone}},
    })];
    for i in 0..services {
        items.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc{i}"), "namespace": "ns"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": ip_of(i)}]}},
        }));
        items.push(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("svc{i}-abcde"), "namespace": "ns", "labels": {"kubernetes.io/service-name": format!("svc{i}")}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
        }));
    }
    serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()
}

fn host_objects(services: usize) -> String {
    let mut items = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
        json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
               "metadata": {"name": "myfed", "namespace": "fedns-system"}, "spec": {"domain": "example.com"}}),
    ];
    for i in 0..services {
        items.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                          "metadata": {"name": format!("svc{i}"), "namespace": "ns"}, "spec": {"domainRef": "myfed"}}),
        );
    }
    serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()
}

/// What parts 1 and 2 measured: change → answer p50/p99 (ms), failover
/// and recovery (s).
#[derive(Debug, Clone, Copy)]
struct Latency {
    p50: f64,
    p99: f64,
    failover: f64,
    recovery: f64,
}

/// Part 1 and 2.
fn latency_and_failover(runtime: &tokio::runtime::Runtime) -> Latency {
    let changes = env("CHANGES", 100);
    let dir = std::env::temp_dir().join(format!("fedns-bench-latency-{}", std::process::id()));
    let names = ["east", "west", "eu"];
    let federation = runtime
        .block_on(Federation::start(&dir, "fedns-system", &names))
        .unwrap();
    for (i, (name, region)) in names.iter().zip(["us-east-1", "us-west-2", "eu-west-1"]).enumerate() {
        let member = federation.member(name).unwrap();
        member
            .seed_yaml(
                name,
                &member_objects(region, &format!("{region}a"), 1, |_| format!("203.0.113.{}", 10 + i)),
            )
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation.host.seed_yaml("host", &host_objects(1)).unwrap();
    let port = free_port();
    let controller = start_controller(&federation, port, free_port());
    let global = "svc0.ns.myfed.svc.example.com";
    wait_for(Duration::from_secs(60), || query_a(port, global).len() == 3).expect("the federation did not converge");

    // 1. LB address change → answer.
    let east = federation.member("east").unwrap();
    let info = east.store().resource("", "v1", "services").unwrap();
    let mut samples = Vec::new();
    for n in 0..changes {
        let ip = format!("198.51.100.{}", 1 + n % 200);
        east.store()
            .patch(
                &info,
                Some("ns"),
                "svc0",
                fedns_kube_emulator::PatchKind::Merge,
                json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}),
                None,
                fedns_kube_emulator::Target::Status,
            )
            .unwrap();
        let took = wait_for(Duration::from_secs(30), || query_a(port, global).contains(&ip))
            .expect("change not served within 30 s");
        samples.push(took);
    }
    samples.sort();
    println!(
        "LB change → DNS answer over {changes} changes: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 1000 ms)",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3,
    );

    // 2. Failover: stop west's API server.
    let west = federation.member("west").unwrap();
    let before = query_a(port, global);
    west.stop();
    let failover = wait_for(Duration::from_secs(30), || {
        let now = query_a(port, global);
        now.len() == 2 && !now.contains(&"203.0.113.11".to_string())
    })
    .expect("no failover within 30 s");
    println!(
        "failover after a member API server stops (default health check): {:.2} s (target < 5 s); before {before:?}",
        failover.as_secs_f64()
    );
    runtime.block_on(west.resume()).unwrap();
    let recovery =
        wait_for(Duration::from_secs(30), || query_a(port, global).len() == 3).expect("no recovery within 30 s");
    println!("recovery after it restarts: {:.2} s", recovery.as_secs_f64());
    drop(controller);
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
    Latency {
        p50: percentile(&samples, 0.5).as_secs_f64() * 1e3,
        p99: percentile(&samples, 0.99).as_secs_f64() * 1e3,
        failover: failover.as_secs_f64(),
        recovery: recovery.as_secs_f64(),
    }
}

/// A metric's value from the controller's `/metrics`, its labelled
/// series summed: `None` when the scrape fails (within 5 s) or the metric
/// is absent.
///
/// Read with hyper's client on a runtime of its own (the callers are
/// plain threads polling), not curl: a fresh machine has no curl, and
/// `bench/controller.sh` does not install it.
fn metric(port: u16, name: &str) -> Option<f64> {
    use http_body_util::BodyExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let body = runtime.block_on(async {
        let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        let url = format!("http://127.0.0.1:{port}/metrics").parse().ok()?;
        let scrape = async {
            let response = client.get(url).await.ok()?;
            if !response.status().is_success() {
                return None;
            }
            response.into_body().collect().await.ok().map(|b| b.to_bytes())
        };
        tokio::time::timeout(Duration::from_secs(5), scrape).await.ok()?
    })?;
    // Every series of the name (labelled ones summed).
    let values: Vec<f64> = String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|series| series == name || series.strip_prefix(name).is_some_and(|l| l.starts_with('{')))
        })
        .filter_map(|l| l.split_whitespace().last()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// A region added to the Domain (`geoRegions`), timed until the zone is
/// republished (the publisher reads the regions for its own answers) and
/// the records the edit requeued are reconciled: the time of the last
/// reconcile before 2 s without one, or of the republish if later. None of
/// the bench's records routes by region, so none needs recomputing.
fn region_edit(
    store: &fedns_kube_emulator::Store,
    domains: &fedns_kube_emulator::ResourceInfo,
    metrics_port: u16,
    pid: u32,
) -> Option<f64> {
    let updates = metric(metrics_port, "fedns_dns_snapshot_updates_total");
    let reconciles_before = metric(metrics_port, "fedns_reconciles_total").unwrap_or(0.0);
    let edited = Instant::now();
    store
        .patch(
            domains,
            Some("fedns-system"),
            "myfed",
            fedns_kube_emulator::PatchKind::Merge,
            json!({"spec": {"geoRegions": [{"region": "bench-eu", "countries": ["DE"]}]}}),
            None,
            fedns_kube_emulator::Target::Main,
        )
        .expect("the emulator patches its own Domain");
    let Some(republished) = wait_every(Duration::from_secs(120), Duration::from_millis(20), || {
        metric(metrics_port, "fedns_dns_snapshot_updates_total") != updates
    }) else {
        println!("scale: Domain edit (a region) not republished within 120 s");
        return None;
    };
    let mut last = metric(metrics_port, "fedns_reconciles_total").unwrap_or(0.0);
    let mut settled = republished;
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(2) && edited.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(50));
        let now = metric(metrics_port, "fedns_reconciles_total").unwrap_or(last);
        if now != last {
            last = now;
            settled = settled.max(edited.elapsed());
            quiet = Instant::now();
        }
    }
    println!(
        "scale: Domain edit (a region added) → republished in {:.2} s, {:.0} records reconciled again, settled in {:.2} s; peak RSS now {:.0} MiB",
        republished.as_secs_f64(),
        last - reconciles_before,
        settled.as_secs_f64(),
        peak_rss_mib(pid)
    );
    Some(settled.as_secs_f64())
}

/// The controller's resync interval (its default; the bench does not set it).
const RESYNC_INTERVAL: Duration = Duration::from_secs(60);

/// `changes` load balancer changes of one Service in member `m0`, each
/// timed until the embedded server answers the new address: sorted.
/// The changes are spread over 1.2 resync intervals, so that some land
/// during a full pass of every record and during member health passes,
/// and each is split where the controller's metrics allow: member change →
/// DNSEndpoint written (member watch, record queue, reconcile, write) and
/// the rest (the publisher's watch, the plan, the zone update); the
/// slowest change is printed with that split.
fn changes_at_scale(
    federation: &Federation,
    port: u16,
    metrics_port: u16,
    service: &str,
    changes: usize,
) -> Vec<Duration> {
    let member = federation.member("m0").unwrap();
    let info = member.store().resource("", "v1", "services").unwrap();
    let global = format!("{service}.ns.myfed.svc.example.com");
    let spacing = RESYNC_INTERVAL.mul_f64(1.2) / changes.max(1) as u32;
    let written = || {
        Some((
            metric(metrics_port, "fedns_change_to_dnsendpoint_write_seconds_sum")?,
            metric(metrics_port, "fedns_change_to_dnsendpoint_write_seconds_count")?,
        ))
    };
    println!(
        "scale: {changes} changes, one every {:.1} s (over 1.2 resync intervals of {} s)",
        spacing.as_secs_f64(),
        RESYNC_INTERVAL.as_secs()
    );
    let mut samples = Vec::new();
    // (total, member change → DNSEndpoint written (the mean of the writes
    // counted meanwhile), how many were, when in the run)
    let mut split: Vec<(Duration, Option<Duration>, f64, Duration)> = Vec::new();
    let run = Instant::now();
    for n in 0..changes {
        let began = Instant::now();
        let at = run.elapsed();
        let before = written();
        let ip = format!("10.250.{}.{}", n / 250, n % 250 + 1);
        member
            .store()
            .patch(
                &info,
                Some("ns"),
                service,
                fedns_kube_emulator::PatchKind::Merge,
                json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}),
                None,
                fedns_kube_emulator::Target::Status,
            )
            .unwrap();
        match wait_for(Duration::from_secs(60), || query_a(port, &global).contains(&ip)) {
            Some(took) => {
                samples.push(took);
                // A record's DNSEndpoint is published as soon as it is
                // computed, before its write returns and is counted: wait
                // (up to 10 s) for the count so the split is known.
                let mut after = written();
                if let Some((_, c0)) = before {
                    wait_every(Duration::from_secs(10), Duration::from_millis(20), || {
                        after = written();
                        after.is_some_and(|(_, c1)| c1 > c0)
                    });
                }
                let (to_write, writes) = match (before, after) {
                    (Some((s0, c0)), Some((s1, c1))) if c1 > c0 => {
                        (Some(Duration::from_secs_f64(((s1 - s0) / (c1 - c0)).max(0.0))), c1 - c0)
                    }
                    _ => (None, 0.0),
                };
                split.push((took, to_write, writes, at));
            }
            None => {
                println!("scale: change {n} not served within 60 s; stopping the changes");
                break;
            }
        }
        if let Some(rest) = spacing.checked_sub(began.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    println!(
        "scale: change → answer per change, in order (ms): {:?}",
        samples.iter().map(|d| d.as_millis()).collect::<Vec<_>>()
    );
    println!(
        "scale: of which member change → DNSEndpoint written (ms; - unknown): {:?}",
        split
            .iter()
            .map(|(_, w, _, _)| w.map_or("-".to_owned(), |w| w.as_millis().to_string()))
            .collect::<Vec<_>>()
    );
    if let Some((took, to_write, writes, at)) = split.iter().max_by_key(|(took, _, _, _)| *took) {
        let waited = match to_write {
            Some(w) if *writes == 1.0 && w >= took => format!(
                "answered before its DNSEndpoint write returned ({:.0} ms after the member change): \
                 the time went before the write (member watch, record queue, reconcile) or in the publisher",
                w.as_secs_f64() * 1e3
            ),
            Some(w) if *writes == 1.0 => format!(
                "{:.0} ms until the DNSEndpoint was written (member watch, record queue, reconcile), \
                 {:.0} ms after it (publisher watch, plan, zone update)",
                w.as_secs_f64() * 1e3,
                took.saturating_sub(*w).as_secs_f64() * 1e3
            ),
            Some(w) => format!(
                "{writes} DNSEndpoint writes meanwhile, {:.0} ms after their member changes on average: \
                 the split of this change is unknown",
                w.as_secs_f64() * 1e3
            ),
            None => "the split is unknown (no DNSEndpoint write counted)".to_owned(),
        };
        println!(
            "scale: slowest change {:.0} ms, {:.1} s into the changes: {waited}",
            took.as_secs_f64() * 1e3,
            at.as_secs_f64()
        );
    }
    samples.sort();
    samples
}

/// Waits until the host holds `count` DNSEndpoints, each with an A
/// endpoint for its name (`name_of` the DNSEndpoint's name) listing
/// `members` targets; its time, or `None` after 300 s.
fn every_endpoint_converged(
    federation: &Federation,
    count: usize,
    members: usize,
    name_of: impl Fn(&str) -> String,
) -> Option<Duration> {
    let store = federation.host.store().clone();
    let info = store
        .resource("multiclusterdns.fedns.io", "v1alpha1", "dnsendpoints")
        .unwrap();
    // This process also serves the members' API servers: the check lists
    // in pages (the objects shared, not copied), so no API request of the
    // host waits for more than a page (a whole list held the lock for
    // seconds, and the handlers waiting for it held this process's async
    // workers, so every member's /readyz timed out at once and the
    // controller saw them all fail), and it waits four times its own time
    // between runs, so it takes at most a fifth of a core.
    wait_sparingly(Duration::from_secs(300), Duration::from_millis(250), || {
        let mut seen = 0;
        let mut token: Option<String> = None;
        loop {
            let Ok(page) = store.list_page(&info, &Default::default(), Some(CHECK_PAGE), token.as_deref()) else {
                return false;
            };
            let items = &page.items;
            seen += items.len();
            let complete = items.iter().all(|e| {
                let name = name_of(e["metadata"]["name"].as_str().unwrap_or_default());
                e["spec"]["endpoints"]
                    .as_array()
                    .and_then(|eps| {
                        eps.iter()
                            .find(|ep| ep["recordType"] == "A" && ep["dnsName"] == name.as_str())
                    })
                    .and_then(|ep| ep["targets"].as_array().map(|t| t.len()))
                    == Some(members)
            });
            if !complete {
                return false;
            }
            match page.metadata["continue"].as_str() {
                Some(next) => token = Some(next.to_owned()),
                None => return seen == count,
            }
        }
    })
}

/// DNSEndpoints per page of the convergence check's list.
const CHECK_PAGE: usize = 100;

/// Converged once the DNS server is done too: the time since `started` of
/// the last snapshot update before 2 s without one (the publisher may
/// still be finishing, e.g. a whole publish as the last CNAME fallbacks go).
fn dns_settled(metrics_port: u16, started: Instant) -> Duration {
    let mut last = metric(metrics_port, "fedns_dns_snapshot_updates_total");
    let mut settled_at = started.elapsed();
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(2) && started.elapsed() < Duration::from_secs(420) {
        std::thread::sleep(Duration::from_millis(50));
        let now = metric(metrics_port, "fedns_dns_snapshot_updates_total");
        if now != last {
            last = now;
            settled_at = started.elapsed();
            quiet = Instant::now();
        }
    }
    settled_at
}

/// What a scale run measured (None: not measured, or it did not happen
/// in time).
#[derive(Debug, Clone, Copy)]
struct ScaleRun {
    /// Change → answer p50 and p99.
    p50: Option<Duration>,
    p99: Option<Duration>,
    /// Cold start to settled DNS, seconds.
    converged: Option<f64>,
    /// The controller's peak RSS by then, MiB.
    peak_rss: f64,
    /// Domain edit (the negative TTL) → zone republished, seconds.
    domain_edit: Option<f64>,
    /// Domain edit (a region added) → republished and every record it
    /// requeued reconciled, seconds.
    region_edit: Option<f64>,
    /// Controller restart → every name served, seconds, and its peak RSS (MiB).
    restart: Option<f64>,
    restart_rss: f64,
    /// Controller restart → its zones published again from the objects
    /// (with `--snapshot-file`, the restored answers kept or replaced),
    /// seconds: from then on changes are applied.
    caught_up: Option<f64>,
}

impl ScaleRun {
    fn new() -> Self {
        ScaleRun {
            p50: None,
            p99: None,
            converged: None,
            peak_rss: f64::NAN,
            domain_edit: None,
            region_edit: None,
            restart: None,
            restart_rss: f64::NAN,
            caught_up: None,
        }
    }

    /// Prints each figure of `old` and `new` side by side with new/old.
    fn compare(label: &str, old: &ScaleRun, new: &ScaleRun) {
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        let rows: [(&str, Option<f64>, Option<f64>, &str); 10] = [
            ("cold start → converged", old.converged, new.converged, "s"),
            ("peak RSS", Some(old.peak_rss), Some(new.peak_rss), "MiB"),
            (
                "change → answer p50",
                secs(old.p50).map(|s| s * 1e3),
                secs(new.p50).map(|s| s * 1e3),
                "ms",
            ),
            (
                "change → answer p99",
                secs(old.p99).map(|s| s * 1e3),
                secs(new.p99).map(|s| s * 1e3),
                "ms",
            ),
            (
                "Domain edit (negative TTL) → republished",
                old.domain_edit,
                new.domain_edit,
                "s",
            ),
            (
                "Domain edit (a region) → republished, records settled",
                old.region_edit,
                new.region_edit,
                "s",
            ),
            ("restart → every name served", old.restart, new.restart, "s"),
            (
                "restart → published from the objects again",
                old.caught_up,
                new.caught_up,
                "s",
            ),
            ("restart peak RSS", Some(old.restart_rss), Some(new.restart_rss), "MiB"),
            ("", None, None, ""),
        ];
        for (what, o, n, unit) in rows.iter().filter(|r| !r.0.is_empty()) {
            print_ratio(label, what, *o, *n, unit);
        }
    }
}

/// One line `label: what: old X unit, new Y unit (new/old R×)`.
fn print_ratio(label: &str, what: &str, old: Option<f64>, new: Option<f64>, unit: &str) {
    let shown = |v: Option<f64>| match v {
        Some(v) if v.is_finite() => format!("{v:.1} {unit}"),
        _ => "-".to_owned(),
    };
    let ratio = match (old, new) {
        (Some(o), Some(n)) if o.is_finite() && n.is_finite() && o > 0.0 => format!(" (new/old {:.2}×)", n / o),
        _ => String::new(),
    };
    println!("{label}: {what}: old {}, new {}{ratio}", shown(old), shown(new));
}

/// One scale run of `members` × `services` shards: prints its figures
/// and returns them. `reference`: the p99 at 2,000 shards, for the ratio;
/// `full`: also the changes, the Domain edit and the restart (else only
/// the cold start, as the routes part's peer run).
fn scale(
    runtime: &tokio::runtime::Runtime,
    members: usize,
    services: usize,
    reference: Option<Duration>,
    full: bool,
) -> ScaleRun {
    let dir = std::env::temp_dir().join(format!(
        "fedns-bench-scale-{}-{}",
        std::process::id(),
        members * services
    ));
    let names: Vec<String> = (0..members).map(|m| format!("m{m}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let seeded = Instant::now();
    let federation = runtime
        .block_on(Federation::start(&dir, "fedns-system", &refs))
        .unwrap();
    for (m, name) in names.iter().enumerate() {
        let region = format!("region-{}", m % 4);
        let zone = format!("{region}{}", ["a", "b", "c"][m % 3]);
        federation
            .member(name)
            .unwrap()
            .seed_yaml(
                name,
                &member_objects(&region, &zone, services, |i| {
                    format!("10.{m}.{}.{}", i / 250, i % 250 + 1)
                }),
            )
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation.host.seed_yaml("host", &host_objects(services)).unwrap();
    println!(
        "scale: {members} members × {services} Services = {} shards, seeded in {:.1} s",
        members * services,
        seeded.elapsed().as_secs_f64()
    );
    let port = free_port();
    let metrics_port = free_port();
    // The served zones kept across the restart below (SNAPSHOT=0: not;
    // an older binary without the flag: not either).
    let keep: Vec<String> = if env("SNAPSHOT", 1) == 1 && binary_has("--snapshot-file") {
        vec![
            "--snapshot-file".to_owned(),
            dir.join("zones.snapshot").display().to_string(),
        ]
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let controller = start_controller_with(&federation, port, metrics_port, &keep);
    // Give a wrapper a moment to start the controller.
    std::thread::sleep(Duration::from_millis(300));
    let pid = controller.pid();
    let store = federation.host.store().clone();
    // Converged when every record's DNSEndpoint holds every member's address.
    let converged = every_endpoint_converged(&federation, services, members, |endpoint| {
        format!("{}.ns.myfed.svc.example.com", endpoint.trim_start_matches("service-"))
    });
    let served = wait_for(Duration::from_secs(120), || {
        query_a(port, &format!("svc{}.ns.myfed.svc.example.com", services - 1)).len() == members
    });
    let converged_ok = converged.is_some() && served.is_some();
    let mut run = ScaleRun::new();
    if converged_ok {
        let settled_at = dns_settled(metrics_port, started);
        run.converged = Some(settled_at.as_secs_f64());
        run.peak_rss = peak_rss_mib(pid);
        println!(
            "scale: converged from a cold start in {:.1} s, DNS settled (target < 30 s); controller peak RSS {:.0} MiB (target < 512 MiB)",
            settled_at.as_secs_f64(),
            run.peak_rss
        );
    } else {
        println!(
            "scale: NOT converged after {:.0} s; controller peak RSS {:.0} MiB",
            started.elapsed().as_secs_f64(),
            peak_rss_mib(pid)
        );
    }
    if let Some(build) = metric(metrics_port, "fedns_dns_snapshot_build_seconds") {
        println!(
            "scale: last snapshot update (incremental: the names changed last) {:.3} s",
            build
        );
    }
    let mut p99_out = None;
    if converged_ok && full {
        let changes = env("SCALE_CHANGES", 20);
        let samples = changes_at_scale(
            &federation,
            port,
            metrics_port,
            &format!("svc{}", services / 2),
            changes,
        );
        if !samples.is_empty() {
            let p99 = percentile(&samples, 0.99);
            p99_out = Some(p99);
            run.p50 = Some(percentile(&samples, 0.5));
            println!(
                "scale: LB change → DNS answer over {} changes at {} shards: p50 {:.1} ms, p99 {:.1} ms{}",
                samples.len(),
                members * services,
                percentile(&samples, 0.5).as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3,
                reference.map_or(String::new(), |small| format!(
                    "; {:.2}× the p99 at 2,000 shards (target ≤ 2×)",
                    p99.as_secs_f64() / small.as_secs_f64().max(1e-6)
                ))
            );
        }
        println!(
            "scale: controller peak RSS after the changes {:.0} MiB, RSS now {:.0} MiB",
            peak_rss_mib(pid),
            rss_mib(pid)
        );
        // DOMAIN_EDIT=0 (and RESTART=0): under a heap profiler, what is
        // held at the end is the steady state.
        if env("DOMAIN_EDIT", 1) == 1 {
            // A change to the Domain (its SOA's negative TTL) republishes the
            // whole zone: the largest zone's full snapshot build.
            let domains = store
                .resource("multiclusterdns.fedns.io", "v1alpha1", "domains")
                .unwrap();
            let updates = metric(metrics_port, "fedns_dns_snapshot_updates_total");
            let edited = Instant::now();
            store
                .patch(
                    &domains,
                    Some("fedns-system"),
                    "myfed",
                    fedns_kube_emulator::PatchKind::Merge,
                    json!({"spec": {"soa": {"minimum": 61}}}),
                    None,
                    fedns_kube_emulator::Target::Main,
                )
                .unwrap();
            let rebuilt = wait_every(Duration::from_secs(120), Duration::from_millis(20), || {
                metric(metrics_port, "fedns_dns_snapshot_updates_total") != updates
            });
            run.domain_edit = rebuilt.map(|_| edited.elapsed().as_secs_f64());
            match rebuilt {
                Some(_) => println!(
                    "scale: Domain edit → whole zone republished in {:.2} s; its snapshot build {:.3} s (every name); peak RSS now {:.0} MiB",
                    edited.elapsed().as_secs_f64(),
                    metric(metrics_port, "fedns_dns_snapshot_build_seconds").unwrap_or(f64::NAN),
                    peak_rss_mib(pid)
                ),
                None => println!("scale: Domain edit not republished within 120 s"),
            }
            run.region_edit = region_edit(&store, &domains, metrics_port, pid);
        }
    }
    let mut controller = controller;
    if converged_ok && full && env("RESTART", 1) == 1 {
        // A restart against a converged federation, stopped as Kubernetes
        // stops a container: every DNSEndpoint is already written, so the
        // first publish computes every zone whole; with --snapshot-file
        // the zones saved at the stop are served meanwhile.
        let stopped_in = controller.terminate();
        let port = free_port();
        let metrics_port = free_port();
        let restarted = Instant::now();
        controller = start_controller_with(&federation, port, metrics_port, &keep);
        std::thread::sleep(Duration::from_millis(300));
        let pid = controller.pid();
        let names = [
            "svc0.ns.myfed.svc.example.com".to_owned(),
            format!("svc{}.ns.myfed.svc.example.com", services - 1),
        ];
        let served = wait_every(Duration::from_secs(300), Duration::from_millis(50), || {
            names.iter().all(|n| query_a(port, n).len() == members)
        });
        run.restart = served.map(|_| restarted.elapsed().as_secs_f64());
        // Published from the objects again: the restored zones (if any)
        // kept or replaced by the first whole publish.
        let caught_up = served.and_then(|_| {
            wait_every(Duration::from_secs(300), Duration::from_millis(50), || {
                metric(metrics_port, "fedns_dns_snapshot_restored").unwrap_or(0.0) == 0.0
            })
        });
        run.caught_up = caught_up.map(|_| restarted.elapsed().as_secs_f64());
        run.restart_rss = peak_rss_mib(pid);
        match served {
            Some(_) => println!(
                "scale: controller restart (stopped in {:.1} s; every DNSEndpoint already written{}) → every name served in {:.1} s, published from the objects again in {}; peak RSS {:.0} MiB",
                stopped_in.as_secs_f64(),
                if keep.is_empty() { "" } else { "; --snapshot-file" },
                run.restart.unwrap_or(f64::NAN),
                run.caught_up.map_or("-".to_owned(), |s| format!("{s:.1} s")),
                peak_rss_mib(pid)
            ),
            None => println!(
                "scale: after a controller restart the names were not served within 300 s; peak RSS {:.0} MiB",
                peak_rss_mib(pid)
            ),
        }
    }
    drop(controller);
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
    run.p99 = p99_out;
    run
}

/// Runs `part` with the old binary (`FEDNS_OLD`, when set) and then this
/// build's, printing which runs; returns (old, new).
fn old_and_new<T>(part: &str, mut run: impl FnMut() -> T) -> (Option<T>, T) {
    let old = std::env::var_os("FEDNS_OLD").map(std::path::PathBuf::from);
    let old_run = old.map(|path| {
        println!("== {part}: the old binary, {}", path.display());
        *BINARY.lock().unwrap_or_else(|e| e.into_inner()) = Some(path);
        let figures = run();
        *BINARY.lock().unwrap_or_else(|e| e.into_inner()) = None;
        figures
    });
    if old_run.is_some() {
        println!("== {part}: this build's binary, {}", binary().display());
    }
    (old_run, run())
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing to run.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let parts = std::env::var("PARTS").unwrap_or_else(|_| "latency,scale".into());
    if parts.split(',').any(|p| p == "latency") {
        if let (Some(old), new) = old_and_new("latency", || latency_and_failover(&runtime)) {
            print_ratio("latency", "LB change → answer p50", Some(old.p50), Some(new.p50), "ms");
            print_ratio("latency", "LB change → answer p99", Some(old.p99), Some(new.p99), "ms");
            print_ratio("latency", "failover", Some(old.failover), Some(new.failover), "s");
            print_ratio("latency", "recovery", Some(old.recovery), Some(new.recovery), "s");
        }
    }
    if parts.split(',').any(|p| p == "scale") {
        let members = env("MEMBERS", 20);
        let services = env("SERVICES", 2000);
        let (old, new) = old_and_new("scale", || {
            // The reference: the same members with 2,000 shards in all, so
            // the ratio shows what the shard count alone costs a change.
            let reference = (members * services > 2000 && env("REFERENCE", 1) == 1)
                .then(|| scale(&runtime, members, (2000 / members).max(1), None, true).p99)
                .flatten();
            scale(&runtime, members, services, reference, true)
        });
        if let Some(old) = old {
            ScaleRun::compare(&format!("scale at {} shards", members * services), &old, &new);
        }
    }
    if parts.split(',').any(|p| p == "routes") {
        routes::run(&runtime);
    }
}
