//! Data-plane probe benchmark (not a test; prints figures):
//! 1. failover: with the default check (HTTP, period 5 s, timeout 2 s,
//!    failureThreshold 3), 20 load balancers are stopped at once; the time
//!    until each address is Down, p50/p99 (target < period × threshold + 1 s
//!    = 16 s). The time from Down to the changed DNS answer (a reconcile and
//!    a publish) is printed by the controller's e2e tests (health_e2e).
//! 2. CPU: ADDRESSES (default 10,000) addresses probed every 5 s over HTTP
//!    for 30 s; the prober process's CPU time over wall time (target < 5 %
//!    of one core). The responders run in child processes so their CPU is
//!    not counted.
//!
//! 3. Vantage points: the failover of 1. with three agents
//!    (probers from 127.0.42.1-3, their reports handed to the controller's
//!    prober as JSON every 100 ms, as the member watch does) and the
//!    default quorum (Majority of four); the controller's CPU for taking
//!    three reports of every address every 5 s and deciding every address
//!    every second (the sync loop's pace); an agent's CPU for its 10,000
//!    addresses: the prober of 2. plus writing its report every 5 s.
//!
//! Run: `cargo bench -p fedns-controller --bench dataplane`
//! (env: ADDRESSES, CPU_SECONDS). Only loopback addresses are used
//! (127.0.0.0/8).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use fedns_api::ProbeProtocol;
use fedns_controller::dataplane::vantage::Report;
use fedns_controller::dataplane::{Check, DataPlane, ProbeMetrics, ProbeSpec, ProbeTls, State};
use fedns_standins::responder::Responder;

/// The i-th loopback address from 127.1.0.1 on.
mod common;
use common::{cpu_seconds, env, percentile};

fn loopback(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 1, 0, 1)) + i))
}

fn default_check(port: u16) -> Check {
    Check {
        spec: ProbeSpec {
            protocol: ProbeProtocol::Http,
            port,
            path: "/".into(),
            host: "bench.example.com".into(),
            server_name: "bench.example.com".into(),
            statuses: vec![(200, 399)],
            expected_body: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(2),
            insecure: false,
            ca_pem: None,
        },
        period: Duration::from_secs(5),
        failure_threshold: 3,
        success_threshold: 2,
        failover_delay: Duration::ZERO,
        failback_delay: Duration::ZERO,
        quorum: fedns_api::Quorum::Majority,
    }
}

/// Child mode: serve responders on addresses `first..first + count`, one
/// port, and wait for stdin to close.
async fn serve_responders(first: u32, count: u32, port: u16) {
    let mut responders = Vec::new();
    for i in first..first + count {
        match Responder::start(SocketAddr::new(loopback(i), port), None).await {
            Ok(r) => responders.push(r),
            Err(e) => panic!("responder {}: {e}", loopback(i)),
        }
    }
    println!("ready");
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await;
}

async fn failover() {
    failover_from(0).await;
}

/// The failover of [`failover`] decided by `agents` agents and the
/// controller (0: the controller alone).
async fn failover_from(agents: u8) {
    let first = Responder::start(SocketAddr::new(loopback(0), 0), None).await.unwrap();
    let port = first.address().port();
    let mut responders = vec![first];
    for i in 1..20 {
        responders.push(
            Responder::start(SocketAddr::new(loopback(i), port), None)
                .await
                .unwrap(),
        );
    }
    let check = default_check(port);
    let plane = DataPlane::start(ProbeTls::new(&[]).unwrap(), 64, ProbeMetrics::default(), |_: String| {}).unwrap();
    plane.want(
        &"bench".to_owned(),
        responders.iter().map(|r| (r.address().ip(), check.clone())),
    );
    let list = plane.target_list();
    let agent_planes: Vec<DataPlane<u8>> = (1..=agents)
        .map(|i| {
            let agent = DataPlane::start_from(
                Some(IpAddr::V4(Ipv4Addr::new(127, 0, 42, i))),
                ProbeTls::new(&[]).unwrap(),
                64,
                ProbeMetrics::default(),
                |_| {},
            )
            .unwrap();
            agent.want(&0, list.targets.iter().map(|t| (t.address, t.check())));
            agent
        })
        .collect();
    let pump = {
        let plane = plane.clone();
        let agent_planes = agent_planes.clone();
        tokio::spawn(async move {
            loop {
                for (i, agent) in agent_planes.iter().enumerate() {
                    let json = serde_json::to_string(&agent.own_report(None)).unwrap();
                    plane.set_report(&format!("agent-{i}"), Some(Report::parse(&json).unwrap()));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let started = Instant::now();
    while responders
        .iter()
        .any(|r| plane.state(r.address().ip(), &check).map(|s| s.state) != Some(State::Up))
    {
        assert!(started.elapsed() < Duration::from_secs(30), "not all Up within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let every address settle on its own slot in the period, then stop all.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for responder in &responders {
        responder.stop();
    }
    let stopped = Instant::now();
    let mut times: Vec<Option<Duration>> = vec![None; responders.len()];
    while times.iter().any(Option::is_none) {
        for (i, responder) in responders.iter().enumerate() {
            if times[i].is_none() && plane.state(responder.address().ip(), &check).map(|s| s.state) == Some(State::Down)
            {
                times[i] = Some(stopped.elapsed());
            }
        }
        assert!(stopped.elapsed() < Duration::from_secs(60), "not all Down within 60 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pump.abort();
    let mut times: Vec<Duration> = times.into_iter().flatten().collect();
    times.sort();
    let deciders = if agents == 0 {
        "the controller alone".to_owned()
    } else {
        format!("the controller and {agents} agents, quorum Majority")
    };
    println!(
        "failover (default check: period 5 s, failureThreshold 3, timeout 2 s; {deciders}), 20 load balancers \
         stopped: p50 {:.2} s, p99 {:.2} s, max {:.2} s (target < 16 s)",
        percentile(&times, 0.5).as_secs_f64(),
        percentile(&times, 0.99).as_secs_f64(),
        times[times.len() - 1].as_secs_f64()
    );
}

async fn cpu(addresses: u32, seconds: u64) {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    // A responder holds a listener and a kept connection: two descriptors
    // an address. Children of at most RESPONDERS_PER_CHILD each stay under
    // a common open-file limit (20,000 here), which one child with 10,000
    // would pass, leaving the last addresses unanswered.
    const RESPONDERS_PER_CHILD: u32 = 4_000;
    let mut children = Vec::new();
    for first in (0..addresses).step_by(RESPONDERS_PER_CHILD as usize) {
        let count = RESPONDERS_PER_CHILD.min(addresses - first);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .env("FEDNS_BENCH_RESPONDERS", format!("{first}:{count}:{port}"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::BufRead as _;
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "responders did not start");
        children.push(child);
    }
    let check = default_check(port);
    let plane = DataPlane::start(
        ProbeTls::new(&[]).unwrap(),
        256,
        ProbeMetrics::default(),
        |_: String| {},
    )
    .unwrap();
    plane.want(
        &"bench".to_owned(),
        (0..addresses).map(|i| (loopback(i), check.clone())),
    );
    // The first round probes everything at once; measure the steady state.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let up = (0..addresses)
        .filter(|i| plane.state(loopback(*i), &check).map(|s| s.state) == Some(State::Up))
        .count();
    for i in (0..addresses)
        .filter(|i| plane.state(loopback(*i), &check).map(|s| s.state) != Some(State::Up))
        .take(5)
    {
        println!("not Up: {} {:?}", loopback(i), plane.state(loopback(i), &check));
    }
    let cpu_before = cpu_seconds();
    let wall = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let cpu = cpu_seconds() - cpu_before;
    let wall = wall.elapsed().as_secs_f64();
    println!(
        "CPU: {addresses} addresses ({up} Up) probed over HTTP every 5 s: {:.2} % of one core \
         ({cpu:.2} s CPU over {wall:.1} s; {:.0} µs per probe; target < 5 %)",
        100.0 * cpu / wall,
        1e6 * cpu / (f64::from(addresses) * wall / 5.0)
    );
    let probing = cpu / wall;
    // Vantage points: three agents' reports of every address (as the
    // member watch hands them over: JSON parsed, then set_report) every
    // 5 s, and every address decided again every second. The calls are
    // synchronous CPU work on one thread: their time is their CPU.
    let report = {
        let mut doc = plane.own_report(None);
        for vote in doc.targets.values_mut() {
            vote.state = "Up".into();
        }
        serde_json::to_string(&doc).unwrap()
    };
    let mut busy = Duration::ZERO;
    let wall = Instant::now();
    let mut next_reports = Instant::now();
    while wall.elapsed() < Duration::from_secs(seconds) {
        let started = Instant::now();
        if started >= next_reports {
            for name in ["agent-1", "agent-2", "agent-3"] {
                plane.set_report(name, Some(Report::parse(&report).unwrap()));
            }
            next_reports += Duration::from_secs(5);
        }
        plane.decide_all();
        busy += started.elapsed();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let wall = wall.elapsed();
    println!(
        "vantage points: {addresses} addresses × 3 agents' reports every 5 s, every address decided every second: \
         {:.2} % of one core on the controller ({:.2} s over {:.1} s; target < 5 %); one report {} KiB of JSON",
        100.0 * busy.as_secs_f64() / wall.as_secs_f64(),
        busy.as_secs_f64(),
        wall.as_secs_f64(),
        report.len() / 1024
    );
    // An agent: the probing above, plus its report written every 5 s.
    let started = Instant::now();
    let rounds = 10;
    for _ in 0..rounds {
        let json = serde_json::to_string(&plane.own_report(None)).unwrap();
        std::hint::black_box(json);
    }
    let per_report = started.elapsed() / rounds;
    println!(
        "agent: {addresses} addresses probed every 5 s and its report ({:.1} ms to make) written every 5 s: \
         {:.2} % of one core (the probing as measured above)",
        per_report.as_secs_f64() * 1e3,
        100.0 * (probing + per_report.as_secs_f64() / 5.0)
    );
    for mut child in children {
        drop(child.stdin.take());
        let _ = child.wait();
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Ok(spec) = std::env::var("FEDNS_BENCH_RESPONDERS") {
        let numbers: Vec<u32> = spec.split(':').map(|n| n.parse().unwrap()).collect();
        runtime.block_on(serve_responders(
            numbers[0],
            numbers[1],
            u16::try_from(numbers[2]).unwrap(),
        ));
        return;
    }
    // `cargo bench` passes --bench; nothing else is expected.
    runtime.block_on(async {
        failover().await;
        failover_from(3).await;
        cpu(env("ADDRESSES", 10_000) as u32, env("CPU_SECONDS", 30)).await;
    });
}
