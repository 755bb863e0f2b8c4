//! Vantage points at the prober: a controller prober and agent
//! probers, each probing from its own loopback source address, against
//! real responders that refuse some of them; the agents' reports are handed
//! to the controller's prober as the controller's member watch does.
//! (The ConfigMap path through member clusters is in `sandbox_e2e.rs`, and
//! here for reports rewritten in a member: issue #57 item 3.)

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::{ProbeProtocol, Quorum};
use fedns_controller::dataplane::vantage::{Report, Standing};
use fedns_controller::dataplane::{Check, DataPlane, ProbeMetrics, ProbeSpec, ProbeTls, State};
use fedns_standins::responder::Responder;

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
    /// Agents whose reports are rewritten on the way (in their member) to
    /// say this address is Down.
    forged: Arc<Mutex<Vec<(String, IpAddr)>>>,
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
        let forged: Arc<Mutex<Vec<(String, IpAddr)>>> = Arc::default();
        let pump = {
            let controller = controller.clone();
            let agents = agents.clone();
            let muted = muted.clone();
            let forged = forged.clone();
            tokio::spawn(async move {
                loop {
                    for (name, agent) in &agents {
                        if muted.lock().unwrap().contains(name) {
                            continue;
                        }
                        let mut source = agent.own_report(None);
                        for (forger, address) in forged.lock().unwrap().iter() {
                            if forger == name {
                                for vote in source.targets.values_mut().filter(|v| v.address == *address) {
                                    vote.state = "Down".into();
                                    vote.last_error = Some("rewritten in the member".into());
                                }
                            }
                        }
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
            forged,
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
/// second one it is a vote (of one agent alone, which takes nothing out);
/// under `AnyOne` a `failoverDelaySeconds` longer than the period rode
/// that out before one agent's vote needed a second source.
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
        ..check(lb.address().port(), Quorum::AnyOne)
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
            "an impaired vantage point takes nothing out, even under AnyOne"
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

/// Issue #57 item 3: one member's report, rewritten there to say another
/// member's healthy load balancer is Down, does not take it out, even
/// under `quorum: AnyOne` (formerly `All`, where one vote was enough):
/// the controller and the other agents reach it. A second member saying
/// so too is a corroborated Down, and `AnyOne` takes it out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_members_rewritten_report_takes_no_healthy_load_balancer_out() {
    let lb = Responder::start("127.0.34.1:0".parse().unwrap(), None).await.unwrap();
    let other = Responder::start(
        SocketAddr::new("127.0.34.2".parse().unwrap(), lb.address().port()),
        None,
    )
    .await
    .unwrap();
    let any_one = check(lb.address().port(), Quorum::AnyOne);
    let fleet = Fleet::start(&[
        (lb.address().ip(), any_one.clone()),
        (other.address().ip(), any_one.clone()),
    ]);
    let ip = lb.address().ip();
    fleet.wait(ip, &any_one, State::Up, 0, "all reach it").await;

    fleet.forged.lock().unwrap().push(("member-1".into(), ip));
    let started = Instant::now();
    let mut seen_since: Option<Instant> = None;
    loop {
        let state = fleet.controller.state(ip, &any_one).unwrap();
        assert_eq!(
            state.state,
            State::Up,
            "one member's rewritten report took a load balancer out that the others reach: {state:?}"
        );
        if state.decision.down == 1 && state.decision.counted == 4 {
            let forged = state
                .vantage_points
                .iter()
                .find(|b| b.vantage_point == "member-1")
                .unwrap();
            assert_eq!((forged.vote.state, forged.standing), (State::Down, Standing::Counted));
            let seen = *seen_since.get_or_insert_with(|| {
                println!("member-1's rewritten report counted after {:?}", started.elapsed());
                Instant::now()
            });
            // Held for ten periods: no flap.
            if seen.elapsed() > Duration::from_secs(3) {
                break;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never counted: {state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second member says so too: two sources, out under AnyOne.
    fleet.forged.lock().unwrap().push(("member-2".into(), ip));
    fleet.wait(ip, &any_one, State::Down, 2, "two members say Down").await;
    fleet.forged.lock().unwrap().clear();
    fleet
        .wait(ip, &any_one, State::Up, 0, "the reports are honest again")
        .await;
}

/// The sandbox's ServiceDNSRecord `nginx`: its probes.
async fn nginx_probes(host: &kube::Client) -> Vec<fedns_api::AddressHealth> {
    let records: kube::Api<fedns_api::ServiceDNSRecord> = kube::Api::namespaced(host.clone(), "ns");
    records
        .get("nginx")
        .await
        .ok()
        .and_then(|r| r.status)
        .map(|s| s.probes)
        .unwrap_or_default()
}

/// Keeps rewriting `member`'s report ConfigMap (its agent stopped), every
/// 300 ms: every target of the list `member` holds Up but those at `down`,
/// echoing the nonce of the list `nonce_of` names (`None`: no nonce).
fn forge_reports(
    member: kube::Client,
    down: IpAddr,
    nonce_of: Arc<Mutex<Option<kube::Client>>>,
) -> tokio::task::JoinHandle<()> {
    use fedns_controller::dataplane::vantage::{
        report_key, ReportDoc, TargetList, VoteDoc, REPORT_CONFIGMAP, REPORT_KEY, TARGETS_CONFIGMAP, TARGETS_KEY,
    };
    use k8s_openapi::api::core::v1::ConfigMap;
    async fn list(client: &kube::Client) -> Option<TargetList> {
        let maps: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), "fedns-system");
        let map = maps.get_opt(TARGETS_CONFIGMAP).await.ok()??;
        serde_json::from_str(map.data?.get(TARGETS_KEY)?).ok()
    }
    tokio::spawn(async move {
        let maps: kube::Api<ConfigMap> = kube::Api::namespaced(member.clone(), "fedns-system");
        loop {
            let source = nonce_of.lock().unwrap().clone();
            let nonce = match &source {
                Some(client) => list(client).await.map(|l| l.nonce).unwrap_or_default(),
                None => String::new(),
            };
            if let Some(targets) = list(&member).await {
                let now = jiff::Timestamp::now().to_string();
                let report = ReportDoc {
                    reported_at: now.clone(),
                    nonce,
                    source: None,
                    targets: targets
                        .targets
                        .iter()
                        .map(|t| {
                            let state = if t.address == down { "Down" } else { "Up" };
                            (
                                report_key(&t.id),
                                VoteDoc {
                                    address: t.address,
                                    state: state.into(),
                                    since: now.clone(),
                                    last_error: (t.address == down).then(|| "rewritten in the member".into()),
                                },
                            )
                        })
                        .collect(),
                };
                let map = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": REPORT_CONFIGMAP},
                    "data": {REPORT_KEY: serde_json::to_string(&report).unwrap()},
                });
                let _ = maps
                    .patch(
                        REPORT_CONFIGMAP,
                        &kube::api::PatchParams::apply("fedns-agent").force(),
                        &kube::api::Patch::Apply(&map),
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
}

/// The `fedns_vantage_point_reports_refused_total` of `member` for
/// `reason` on the controller's metrics endpoint (0: none yet).
async fn refused(metrics_port: u16, member: &str, reason: &str) -> u64 {
    let (_, text) = crate::common::http_get(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    text.lines()
        .filter(|l| l.starts_with("fedns_vantage_point_reports_refused_total{"))
        .filter(|l| l.contains(&format!("vantage_point=\"{member}\"")) && l.contains(&format!("reason=\"{reason}\"")))
        .filter_map(|l| l.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()))
        .map(|n| n as u64)
        .sum()
}

/// Issue #57 item 3, through the members' ConfigMaps (`fedns sandbox`):
/// with `quorum: All` (the old spelling of `AnyOne`), us-east-1's agent
/// stopped and its report rewritten there to say us-west-2's load
/// balancer is Down (echoing us-east-1's own nonce, which anyone who can
/// write there can read), us-west-2 stays in the answers. A report that
/// echoes us-west-2's nonce (copied from there) or none is not taken and
/// is counted: us-east-1's last report taken goes silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_rewritten_report_takes_nothing_out_and_another_nonce_is_refused() {
    use crate::common::*;
    use fedns_controller::cli::{sandbox, SandboxArgs};
    const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";
    const WEST: &str = "127.0.10.2";
    const ALL: [&str; 3] = ["127.0.10.1", WEST, "127.0.10.3"];
    let (port, metrics_port) = (free_port(), free_port());
    let args = SandboxArgs {
        action: None,
        state_dir: temp_dir("vantage-forged"),
        dns_listen: SocketAddr::from(([127, 0, 0, 1], port)),
        metrics_addr: SocketAddr::from(([127, 0, 0, 1], metrics_port)),
        members_from: None,
        engine: None,
        verbose: false,
        provider: Vec::new(),
    };
    let mut running = sandbox::start(&args).await.unwrap();
    eventually("the sandbox answers", || dig(port, GLOBAL, "A", false) == ALL).await;
    let host = client_of(&running.federation.host).await;
    let records: kube::Api<fedns_api::ServiceDNSRecord> = kube::Api::namespaced(host.clone(), "ns");
    records
        .patch(
            "nginx",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"healthCheck": {"quorum": "All"}}})),
        )
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let probes = nginx_probes(&host).await;
        let ready = |p: &fedns_api::AddressHealth| {
            p.quorum.as_deref().unwrap_or("").starts_with("AnyOne: 0 of 4")
                && p.vantage_points.iter().all(|v| v.standing == "counted")
        };
        if probes.len() == 3 && probes.iter().all(ready) {
            println!(
                "quorum All read as AnyOne, 4 vantage points counted after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "not 4 counted under AnyOne: {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // us-east-1's agent stops; its report is rewritten in the member.
    drop(running.agents.remove(0));
    let east = client_of(running.federation.member("us-east-1").unwrap()).await;
    let west = client_of(running.federation.member("us-west-2").unwrap()).await;
    let nonce_of = Arc::new(Mutex::new(Some(east.clone())));
    let forger = forge_reports(east.clone(), WEST.parse().unwrap(), nonce_of.clone());
    let started = Instant::now();
    let mut counted_since: Option<Instant> = None;
    loop {
        assert_eq!(
            dig(port, GLOBAL, "A", false),
            ALL,
            "us-east-1's rewritten report took us-west-2 out under quorum All"
        );
        let probes = nginx_probes(&host).await;
        let forged_counted = probes.iter().find(|p| p.address == WEST).is_some_and(|p| {
            p.state == "Up"
                && p.vantage_points
                    .iter()
                    .any(|v| v.name == "us-east-1" && v.state == "Down" && v.standing == "counted")
        });
        if forged_counted {
            let since = *counted_since.get_or_insert_with(|| {
                println!(
                    "the rewritten report counted after {:?}; us-west-2 stays",
                    started.elapsed()
                );
                Instant::now()
            });
            if since.elapsed() > Duration::from_secs(4) {
                break;
            }
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "the rewritten report never counted: {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The report now echoes us-west-2's nonce (copied from there): not
    // taken, counted; us-east-1's last report taken goes silent.
    *nonce_of.lock().unwrap() = Some(west);
    let started = Instant::now();
    loop {
        let copied = refused(metrics_port, "us-east-1", "other-member").await;
        let probes = nginx_probes(&host).await;
        let silent = probes.len() == 3
            && probes.iter().all(|p| {
                p.vantage_points
                    .iter()
                    .any(|v| v.name == "us-east-1" && v.standing.starts_with("silent"))
            });
        if copied > 0 && silent {
            println!(
                "reports with us-west-2's nonce refused ({copied} counted); us-east-1 silent after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "a copied report was taken (refused {copied}): {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(dig(port, GLOBAL, "A", false), ALL);
    // No nonce at all (an agent older than the controller): refused too.
    *nonce_of.lock().unwrap() = None;
    let started = Instant::now();
    while refused(metrics_port, "us-east-1", "missing").await == 0 {
        assert!(
            started.elapsed() < EVENTUALLY,
            "a report without a nonce was not refused"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("a report without a nonce refused after {:?}", started.elapsed());
    forger.abort();
    running.shutdown().await;
}
