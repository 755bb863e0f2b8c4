//! Vantage points at the prober: a controller prober and agent
//! probers, each probing from its own loopback source address, against
//! real responders that refuse some of them; the agents' reports are handed
//! to the controller's prober as the controller's member watch does.
//! (The ConfigMap path through member clusters is in `sandbox_e2e.rs`.)

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::{ProbeProtocol, Quorum};
use fedns_controller::dataplane::vantage::{Report, Standing};
use fedns_controller::dataplane::{Check, DataPlane, ProbeMetrics, ProbeSpec, ProbeTls, State};
use fedns_sandbox::responder::Responder;

const CONTROLLER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));

fn check(port: u16, quorum: Quorum) -> Check {
    Check {
        spec: ProbeSpec {
            protocol: ProbeProtocol::Http,
            port,
            path: "/healthz".into(),
            host: "nginx.ns.myfed.svc.example.com".into(),
            server_name: "nginx.ns.myfed.svc.example.com".into(),
            statuses: vec![(200, 399)],
            expected_body: None,
            headers: Vec::new(),
            timeout: Duration::from_millis(500),
            insecure: false,
            ca_pem: None,
        },
        period: Duration::from_millis(300),
        failure_threshold: 2,
        success_threshold: 1,
        failover_delay: Duration::ZERO,
        failback_delay: Duration::ZERO,
        quorum,
    }
}

fn prober(source: Option<IpAddr>) -> (DataPlane<u8>, Arc<Mutex<usize>>) {
    let notified = Arc::new(Mutex::new(0));
    let count = notified.clone();
    let plane = DataPlane::start_from(
        source,
        ProbeTls::new(&[]).unwrap(),
        16,
        ProbeMetrics::default(),
        move |_| *count.lock().unwrap() += 1,
    )
    .unwrap();
    (plane, notified)
}

/// Three agents (127.0.40.1-3) and the controller (127.0.0.1) probing two
/// load balancers; every 100 ms each agent's report goes to the controller.
struct Fleet {
    controller: DataPlane<u8>,
    agents: Vec<(String, DataPlane<u8>)>,
    pump: tokio::task::JoinHandle<()>,
    /// Agents whose reports are no longer handed over (silent).
    muted: Arc<Mutex<Vec<String>>>,
}

impl Fleet {
    fn start(targets: &[(IpAddr, Check)]) -> Fleet {
        let (controller, _) = prober(None);
        controller.want(&0, targets.iter().cloned());
        let agents: Vec<(String, DataPlane<u8>)> = (1..=3)
            .map(|i| {
                let (agent, _) = prober(Some(IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 40, i))));
                // Agents probe what the controller's target list says.
                let list = controller.target_list();
                agent.want(&0, list.targets.iter().map(|t| (t.address, t.check())));
                (format!("member-{i}"), agent)
            })
            .collect();
        let muted: Arc<Mutex<Vec<String>>> = Arc::default();
        let pump = {
            let controller = controller.clone();
            let agents = agents.clone();
            let muted = muted.clone();
            tokio::spawn(async move {
                loop {
                    for (name, agent) in &agents {
                        if muted.lock().unwrap().contains(name) {
                            continue;
                        }
                        let source = agent.own_report(None);
                        let json = serde_json::to_string(&source).unwrap();
                        controller.set_report(name, Some(Report::parse(&json).unwrap()));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        Fleet {
            controller,
            agents,
            pump,
            muted,
        }
    }

    /// Waits (30 s at most) until `address` is `want` with `counted`
    /// vantage points counted; prints the time.
    async fn wait(&self, address: IpAddr, check: &Check, want: State, down: usize, what: &str) -> Duration {
        let started = Instant::now();
        loop {
            let state = self.controller.state(address, check).unwrap();
            if state.state == want
                && state.decision.down == down
                && state.decision.counted == 4 - self.muted.lock().unwrap().len()
            {
                let took = started.elapsed();
                println!(
                    "{what}: {want:?}, {} of {} say Down, after {took:?}",
                    state.decision.down, state.decision.counted
                );
                return took;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{what}: not {want:?} with {down} down within 30 s: {state:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.pump.abort();
        let _ = &self.agents;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_vantage_point_cut_off_stays_and_a_majority_cut_off_leaves() {
    let lb = Responder::start("127.0.30.1:0".parse().unwrap(), None).await.unwrap();
    let other = Responder::start(
        SocketAddr::new("127.0.30.2".parse().unwrap(), lb.address().port()),
        None,
    )
    .await
    .unwrap();
    let majority = check(lb.address().port(), Quorum::Majority);
    let fleet = Fleet::start(&[
        (lb.address().ip(), majority.clone()),
        (other.address().ip(), majority.clone()),
    ]);
    let ip = lb.address().ip();
    fleet.wait(ip, &majority, State::Up, 0, "all reach it").await;

    // The controller's path is cut: it stays (1 of 4 say Down).
    lb.refuse(CONTROLLER);
    let started = Instant::now();
    loop {
        let state = fleet.controller.state(ip, &majority).unwrap();
        let controller_view = &state.vantage_points[0];
        assert_eq!(
            state.state,
            State::Up,
            "never out with one vantage point cut off: {state:?}"
        );
        if controller_view.vote.state == State::Down {
            assert_eq!(controller_view.standing, Standing::Counted);
            assert_eq!((state.decision.down, state.decision.counted), (1, 4));
            assert!(controller_view.vote.last_error.is_some(), "{controller_view:?}");
            println!(
                "controller cut off: still Up, 1 of 4 say Down, after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the controller never saw it down"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held for a while: no flap.
    for _ in 0..20 {
        assert_eq!(fleet.controller.state(ip, &majority).unwrap().state, State::Up);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Two agents cut off too: 3 of 4, a majority: out.
    lb.refuse("127.0.40.1".parse().unwrap());
    lb.refuse("127.0.40.2".parse().unwrap());
    let took = fleet.wait(ip, &majority, State::Down, 3, "a majority cut off").await;
    assert!(took < Duration::from_secs(30));
    // The other load balancer is seen by everyone: not impaired, Up.
    assert_eq!(
        fleet.controller.state(other.address().ip(), &majority).unwrap().state,
        State::Up
    );
    // Healed: back.
    for source in [CONTROLLER, "127.0.40.1".parse().unwrap(), "127.0.40.2".parse().unwrap()] {
        lb.admit(source);
    }
    fleet.wait(ip, &majority, State::Up, 0, "healed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_vantage_point_is_not_counted_and_is_reported() {
    let lb = Responder::start("127.0.31.1:0".parse().unwrap(), None).await.unwrap();
    let other = Responder::start(
        SocketAddr::new("127.0.31.2".parse().unwrap(), lb.address().port()),
        None,
    )
    .await
    .unwrap();
    let majority = check(lb.address().port(), Quorum::Majority);
    let fleet = Fleet::start(&[
        (lb.address().ip(), majority.clone()),
        (other.address().ip(), majority.clone()),
    ]);
    let ip = lb.address().ip();
    fleet.wait(ip, &majority, State::Up, 0, "all reach it").await;
    // member-3 stops reporting: after 2 × periodSeconds it is silent.
    fleet.muted.lock().unwrap().push("member-3".into());
    let started = Instant::now();
    loop {
        fleet.controller.decide_all();
        let summary = fleet.controller.vantage_points();
        let member = summary.iter().find(|v| v.name == "member-3").unwrap();
        if member.silent {
            let state = fleet.controller.state(ip, &majority).unwrap();
            let ballot = state
                .vantage_points
                .iter()
                .find(|b| b.vantage_point == "member-3")
                .unwrap();
            assert_eq!(ballot.standing, Standing::Silent);
            assert_eq!(state.decision.counted, 3, "not counted: {state:?}");
            println!(
                "member-3 silent after {:?} (report {:.1} s old)",
                started.elapsed(),
                member.age_seconds
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never silent: {summary:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // With member-3 silent, two cut off of the three counted is a
    // majority: out.
    lb.refuse(CONTROLLER);
    lb.refuse("127.0.40.1".parse().unwrap());
    fleet
        .wait(ip, &majority, State::Down, 2, "2 of 3 counted cut off")
        .await;
}

/// A vantage point that sees every address down at once lost its own
/// network: it is not counted, and the others keep the addresses in. Its
/// probes of the two addresses fail up to one period apart, and until the
/// second one it is a vote; under `All` a `failoverDelaySeconds` longer
/// than the period rides that out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_reaches_nothing_is_impaired_not_a_vote() {
    let lb = Responder::start("127.0.32.1:0".parse().unwrap(), None).await.unwrap();
    let other = Responder::start(
        SocketAddr::new("127.0.32.2".parse().unwrap(), lb.address().port()),
        None,
    )
    .await
    .unwrap();
    let all = Check {
        failover_delay: Duration::from_millis(1500),
        ..check(lb.address().port(), Quorum::All)
    };
    let fleet = Fleet::start(&[(lb.address().ip(), all.clone()), (other.address().ip(), all.clone())]);
    fleet.wait(lb.address().ip(), &all, State::Up, 0, "all reach it").await;
    // member-1 (127.0.40.1) reaches neither load balancer.
    for responder in [&lb, &other] {
        responder.refuse("127.0.40.1".parse().unwrap());
    }
    let started = Instant::now();
    loop {
        let state = fleet.controller.state(lb.address().ip(), &all).unwrap();
        let ballot = state
            .vantage_points
            .iter()
            .find(|b| b.vantage_point == "member-1")
            .unwrap();
        assert_eq!(
            state.state,
            State::Up,
            "an impaired vantage point takes nothing out, even under All"
        );
        if ballot.standing == Standing::Impaired {
            println!("member-1 impaired after {:?}: {:?}", started.elapsed(), ballot.vote);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never impaired: {state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The controller's reports survive its restart: they are the agents'
/// (in the members), so a new controller prober that takes them decides
/// with them before its own first probe result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_controller_decides_with_the_agents_last_reports() {
    let lb = Responder::start("127.0.33.1:0".parse().unwrap(), None).await.unwrap();
    let other = Responder::start(
        SocketAddr::new("127.0.33.2".parse().unwrap(), lb.address().port()),
        None,
    )
    .await
    .unwrap();
    let majority = check(lb.address().port(), Quorum::Majority);
    let targets = [
        (lb.address().ip(), majority.clone()),
        (other.address().ip(), majority.clone()),
    ];
    let fleet = Fleet::start(&targets);
    lb.refuse("127.0.40.1".parse().unwrap());
    lb.refuse("127.0.40.2".parse().unwrap());
    lb.refuse("127.0.40.3".parse().unwrap());
    lb.refuse(CONTROLLER);
    fleet
        .wait(
            lb.address().ip(),
            &majority,
            State::Down,
            4,
            "every vantage point cut off",
        )
        .await;
    // What the members hold: each agent's last report.
    let reports: Vec<(String, String)> = fleet
        .agents
        .iter()
        .map(|(name, agent)| (name.clone(), serde_json::to_string(&agent.own_report(None)).unwrap()))
        .collect();
    // A new controller (its own probes not run yet) takes them and is Down
    // at once: 3 of 3 counted.
    let (restarted, _) = prober(None);
    restarted.want(&0, targets.iter().cloned());
    for (name, json) in &reports {
        restarted.set_report(name, Some(Report::parse(json).unwrap()));
    }
    let state = restarted.state(lb.address().ip(), &majority).unwrap();
    println!(
        "restarted: {:?}, {} of {} say Down",
        state.state, state.decision.down, state.decision.counted
    );
    assert_eq!(state.state, State::Down);
    assert!(state.decision.counted >= 3);
}
