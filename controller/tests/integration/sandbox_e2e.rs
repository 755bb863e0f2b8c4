//! `fedns sandbox` run in-process on free ports: exact answers for the
//! global, region and zone names and the Ingress host over UDP and TCP
//! (dig and hickory-proto), both failure modes (`fail`/`recover`: API server
//! down, load balancer up; `break-lb`/`fix-lb`: the reverse), `cordon`, and
//! `--members-from` with real `kubectl get -o yaml` output, and the first
//! screen of each mode: every command it prints is run and works.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::MemberCluster;
use fedns_controller::cli::sandbox;
use fedns_controller::cli::SandboxArgs;
use fedns_controller::federation::Engine;
use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query};
use fedns_dnsserver::hickory_proto::rr::{Name, RecordType};
use kube::api::Api;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

fn args(members_from: Option<PathBuf>) -> (SandboxArgs, u16) {
    engine_args(members_from, None)
}

fn engine_args(members_from: Option<PathBuf>, engine: Option<Engine>) -> (SandboxArgs, u16) {
    let port = free_port();
    (
        SandboxArgs {
            action: None,
            state_dir: temp_dir("sandbox"),
            dns_listen: SocketAddr::from(([127, 0, 0, 1], port)),
            metrics_addr: "127.0.0.1:0".parse().unwrap(),
            members_from,
            engine,
            verbose: false,
            provider: Vec::new(),
        },
        port,
    )
}

/// The A/AAAA/CNAME answer set through hickory-proto over UDP.
fn hickory(port: u16, name: &str, rtype: RecordType) -> Vec<String> {
    let mut message = Message::new(7, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(format!("{name}.")).unwrap(), rtype));
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    socket.send_to(&message.to_vec().unwrap(), ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 1500];
    let Ok((len, _)) = socket.recv_from(&mut buf) else {
        return Vec::new();
    };
    let response = Message::from_vec(&buf[..len]).unwrap();
    let mut out: Vec<String> = response.answers.iter().map(|r| r.data.to_string()).collect();
    out.sort();
    out
}

const EAST: &str = "127.0.10.1";
const WEST: &str = "127.0.10.2";
const EU: &str = "127.0.10.3";
const ALL: [&str; 3] = [EAST, WEST, EU];
const SHOP_ALL: [&str; 3] = ["198.51.100.100", "198.51.100.200", "203.0.113.100"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_serves_and_fails_over() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    let state_dir = args.state_dir.clone();
    for cluster in ["host", "us-east-1", "us-west-2", "eu-west-1"] {
        assert!(state_dir.join(format!("{cluster}.kubeconfig")).exists());
    }
    // Every load balancer is a responder on loopback, on one port.
    let lbs: Vec<String> = running.load_balancers.values().map(|a| a.ip().to_string()).collect();
    assert_eq!(lbs, [EU, EAST, WEST]);
    let lb_port = running.load_balancers["us-east-1"].port();
    assert!(running.load_balancers.values().all(|a| a.port() == lb_port));

    eventually("the sandbox answers the global name", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    let expect = [
        ("nginx.ns.myfed.svc.us-east-1.example.com", "A", vec![EAST]),
        ("nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com", "A", vec![EAST]),
        ("nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com", "A", vec![EAST]),
        ("nginx.ns.myfed.svc.us-west-2.example.com", "A", vec![WEST]),
        ("nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com", "A", vec![WEST]),
        ("nginx.ns.myfed.svc.eu-west-1.example.com", "A", vec![EU]),
        ("nginx.ns.myfed.svc.eu-west-1a.eu-west-1.example.com", "A", vec![EU]),
        ("shop.example.com", "A", SHOP_ALL.to_vec()),
        ("shop.example.com", "AAAA", vec!["2001:db8::100"]),
    ];
    for (name, rtype, answer) in &expect {
        eventually(&format!("{name} {rtype}"), || dig(port, name, rtype, false) == *answer).await;
        assert_eq!(dig(port, name, rtype, true), *answer, "{name} over TCP");
        let wire = if *rtype == "A" { RecordType::A } else { RecordType::AAAA };
        assert_eq!(hickory(port, name, wire), *answer, "{name} through hickory-proto");
    }
    // nginx is Nearest: a client subnet in the Domain's table gets its region.
    let nearest = |subnet: &str| -> Vec<String> {
        let out = std::process::Command::new("dig")
            .args([
                "+short",
                "+time=1",
                "+tries=1",
                "-p",
                &port.to_string(),
                "@127.0.0.1",
                GLOBAL,
                "A",
            ])
            .arg(format!("+subnet={subnet}"))
            .output()
            .unwrap();
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(nearest("192.0.2.0/24"), [EU]);
    assert_eq!(nearest("198.51.100.0/24"), [WEST]);
    assert_eq!(nearest("2001:db8:e0::/56"), [EU]);
    // No IPv6 load balancer address: nothing outside 127.0.0.0/8 is probed.
    assert!(dig(port, GLOBAL, "AAAA", false).is_empty());
    assert_eq!(
        dig(port, "www.example.com", "A", false),
        [EAST, WEST, EU, "nginx.ns.myfed.svc.example.com."]
    );

    // fail us-west-2 (API server down, load balancer up): nginx, which
    // probes its load balancers, keeps it; shop (no healthCheck) drops it.
    sandbox::control(&state_dir, "fail", "us-west-2").await.unwrap();
    let took = eventually("shop.example.com drops us-west-2 after `fail`", || {
        dig(port, "shop.example.com", "A", false) == ["198.51.100.200", "203.0.113.100"]
    })
    .await;
    println!("shop.example.com without us-west-2 after `fedns sandbox fail us-west-2`: {took:?}");
    assert!(dig(port, "shop.example.com", "AAAA", false).is_empty());
    for _ in 0..20 {
        assert_eq!(dig(port, GLOBAL, "A", false), ALL, "nginx keeps us-west-2");
        assert_eq!(
            dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
            [WEST]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sandbox::control(&state_dir, "recover", "us-west-2").await.unwrap();
    eventually("us-west-2 returns to shop.example.com after `recover`", || {
        dig(port, "shop.example.com", "A", false) == SHOP_ALL
    })
    .await;

    // cordon drains a cluster on purpose, whatever its health; reversible.
    sandbox::control(&state_dir, "cordon", "us-east-1").await.unwrap();
    eventually("a cordoned us-east-1 leaves", || {
        dig(port, GLOBAL, "A", false) == [WEST, EU]
    })
    .await;
    sandbox::control(&state_dir, "uncordon", "us-east-1").await.unwrap();
    eventually("us-east-1 returns after uncordon", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;

    // A control request for an unknown cluster is refused with a clear error.
    let err = sandbox::control(&state_dir, "fail", "mars-1").await.unwrap_err();
    assert!(err.to_string().contains("no member cluster mars-1"), "{err}");
    let err = sandbox::control(&state_dir, "break-lb", "mars-1").await.unwrap_err();
    assert!(err.to_string().contains("no member cluster mars-1"), "{err}");
    running.shutdown().await;
    let gone = sandbox::control(&state_dir, "fail", "us-west-2").await.unwrap_err();
    assert!(gone.to_string().contains("no running sandbox"), "{gone}");
}

/// Both failure modes, as the README walks through them: `break-lb` (API up,
/// load balancer down) takes a cluster out within periodSeconds ×
/// failureThreshold + 1 s = 3 s of the seeded healthCheck; `fix-lb` brings
/// it back; `fail` (API down, load balancer up) keeps it; `fail` on every
/// member keeps the last answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_shows_both_failure_modes() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    let state_dir = args.state_dir.clone();
    eventually("the sandbox answers the global name", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    // web.example.com: Gateways in us-east-1 and us-west-2 (the stand-in
    // Gateway controller gives them the load balancer addresses), the
    // Ingress in eu-west-1.
    eventually("web.example.com from two Gateways and an Ingress", || {
        dig(port, "web.example.com", "A", false) == ALL
    })
    .await;
    let host = client_of(&running.federation.host).await;
    let routes: Api<fedns_api::RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let web = routes.get("web").await.unwrap();
    let attached = web
        .status
        .as_ref()
        .and_then(|s| fedns_api::conditions::get(&s.conditions, "Attached"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(attached.contains("eu-west-1 through its Ingress"), "{attached}");
    let listeners: Vec<String> = web
        .status
        .unwrap_or_default()
        .dns
        .iter()
        .flat_map(|d| d.hostnames.iter().flat_map(|h| h.listeners.clone()))
        .collect();
    assert_eq!(
        listeners,
        ["Ingress ns/web", "infra/gw/http", "infra/gw/http"],
        "{listeners:?}"
    );

    // The responders answer what the probes ask.
    let lb = running.load_balancers["us-west-2"];
    let (status, body) = http_get(&format!("http://{lb}/healthz")).await;
    assert_eq!((status, body.trim()), (200, "fedns sandbox load balancer"));

    // break-lb: out of the global name; its region and zone names fall back.
    // The target is periodSeconds 1 × failureThreshold 2 + 1 s; it is
    // printed, not asserted (a loaded CI machine may take longer; the
    // dataplane bench measures it), and the wait is the usual 30 s.
    let target = Duration::from_secs(3);
    sandbox::control(&state_dir, "break-lb", "us-west-2").await.unwrap();
    let took = eventually("us-west-2 leaves after `break-lb`", || {
        dig(port, GLOBAL, "A", false) == [EAST, EU]
    })
    .await;
    println!(
        "out after `fedns sandbox break-lb us-west-2`: {took:?} (target {target:?}: {})",
        if took <= target { "met" } else { "missed" }
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
        [EAST, EU, "nginx.ns.myfed.svc.example.com."]
    );
    let zone = dig(port, "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com", "A", false);
    assert!(
        zone.contains(&"nginx.ns.myfed.svc.us-west-2.example.com.".to_string()),
        "{zone:?}"
    );
    // Other names are unchanged: the Ingress is not probed.
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1.example.com", "A", false),
        [EAST]
    );
    assert_eq!(dig(port, "shop.example.com", "A", false), SHOP_ALL);
    // The Gateway at that address leaves web.example.com too.
    eventually("us-west-2's Gateway leaves web.example.com", || {
        dig(port, "web.example.com", "A", false) == [EAST, EU]
    })
    .await;

    // fix-lb: back after one passing probe.
    sandbox::control(&state_dir, "fix-lb", "us-west-2").await.unwrap();
    let took = eventually("us-west-2 returns after `fix-lb`", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    println!("back after `fedns sandbox fix-lb us-west-2`: {took:?}");
    eventually("us-west-2's Gateway back in web.example.com", || {
        dig(port, "web.example.com", "A", false) == ALL
    })
    .await;
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
        [WEST]
    );

    // fail on every member: the controller sees every API server down, and
    // every name keeps its last answers.
    let members: Api<MemberCluster> = Api::namespaced(host, "fedns-system");
    for cluster in ["us-east-1", "us-west-2", "eu-west-1"] {
        sandbox::control(&state_dir, "fail", cluster).await.unwrap();
    }
    let started = Instant::now();
    loop {
        let list = members.list(&Default::default()).await.unwrap();
        let down = list
            .items
            .iter()
            .filter(|m| {
                m.status.as_ref().is_some_and(|s| {
                    fedns_api::conditions::get(&s.conditions, "Ready").is_some_and(|c| c.status == "False")
                })
            })
            .count();
        if down == 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not every member NotReady in 30 s"
        );
        assert_eq!(dig(port, GLOBAL, "A", false), ALL, "never fewer answers");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("every member NotReady after {:?}", started.elapsed());
    for _ in 0..30 {
        assert_eq!(dig(port, GLOBAL, "A", false), ALL, "the last answers stay");
        assert_eq!(
            dig(port, "shop.example.com", "A", false),
            SHOP_ALL,
            "the last answers stay"
        );
        assert_eq!(dig(port, "nginx.ns.myfed.svc.eu-west-1.example.com", "A", false), [EU]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.shutdown().await;
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_from_exported_cluster_state() {
    let (args, port) = args(Some(fixtures().join("members-from")));
    let running = sandbox::start(&args).await.unwrap();
    let name = "web.prod.myfed.svc.example.com";
    eventually("the exported Service is published", || {
        dig(port, name, "A", false) == ["198.51.100.72", "203.0.113.71"]
    })
    .await;
    // Region and zone from the Nodes' labels.
    assert_eq!(
        dig(port, "web.prod.myfed.svc.eu-central-1.example.com", "A", false),
        ["203.0.113.71"]
    );
    assert_eq!(
        dig(
            port,
            "web.prod.myfed.svc.ap-south-1b.ap-south-1.example.com",
            "A",
            false
        ),
        ["198.51.100.72"]
    );
    // The Ingress host, under a Domain created for its zone.
    eventually("the exported Ingress host", || {
        dig(port, "app.example.org", "A", false) == ["198.51.100.82", "203.0.113.81"]
    })
    .await;
    // The ClusterIP Service gets no name.
    assert_eq!(
        dig_status(port, "kubernetes.default.myfed.svc.example.com", "A"),
        "NXDOMAIN"
    );
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_from_a_malformed_file_starts_nothing() {
    let (args, _) = args(Some(fixtures().join("malformed")));
    let err = match sandbox::start(&args).await {
        Ok(_) => panic!("a malformed fixture must not start"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("gamma/state.yaml:"), "{err}");
    let line: Option<usize> = err
        .split("state.yaml:")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.trim().parse().ok());
    assert!(line.is_some_and(|l| l >= 5), "no line number in: {err}");
    assert!(!args.state_dir.join("host.kubeconfig").exists(), "nothing may start");
}

/// Every `--engine`.
const ENGINES: [Engine; 6] = [
    Engine::Karmada,
    Engine::Kubefed,
    Engine::Clusternet,
    Engine::Capi,
    Engine::Argocd,
    Engine::Clusterprofile,
];

/// `--engine karmada|kubefed|clusternet|capi|argocd|clusterprofile`: the
/// host seeded as the engine's control plane or inventory (Karmada:
/// eu-west-1 in pull mode, through the cluster proxy; Clusternet:
/// eu-west-1 through the hub's socket proxy); the
/// same names answer, made from the annotated templates, and `fail` /
/// `recover` move a member out and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_runs_as_an_engine_control_plane() {
    for engine in ENGINES {
        let (args, port) = engine_args(None, Some(engine));
        let running = sandbox::start(&args).await.unwrap();
        let host = client_of(&running.federation.host).await;
        let clusters: Api<MemberCluster> = Api::namespaced(host, "fedns-system");
        assert!(
            clusters.list(&Default::default()).await.unwrap().items.is_empty(),
            "no MemberClusters"
        );
        eventually(&format!("{}: the global name", engine.as_str()), || {
            dig(port, GLOBAL, "A", false) == ALL
        })
        .await;
        eventually(&format!("{}: the region name", engine.as_str()), || {
            dig(port, "nginx.ns.myfed.svc.eu-west-1.example.com", "A", false) == [EU]
        })
        .await;
        eventually(&format!("{}: www and shop", engine.as_str()), || {
            dig(port, "www.example.com", "CNAME", false) == ["nginx.ns.myfed.svc.example.com."]
                && dig(port, "shop.example.com", "A", false) == SHOP_ALL
        })
        .await;
        sandbox::control(&args.state_dir, "fail", "eu-west-1").await.unwrap();
        eventually(&format!("{}: eu-west-1 out", engine.as_str()), || {
            dig(port, GLOBAL, "A", false) == [EAST, WEST]
        })
        .await;
        sandbox::control(&args.state_dir, "recover", "eu-west-1").await.unwrap();
        eventually(&format!("{}: eu-west-1 back", engine.as_str()), || {
            dig(port, GLOBAL, "A", false) == ALL
        })
        .await;
        assert!(sandbox::control(&args.state_dir, "cordon", "us-east-1").await.is_err());
        running.shutdown().await;
    }
}

/// The words a POSIX shell makes of `line` (the first screen's text).
fn shell_words(line: &str) -> Vec<String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {line}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "sh cannot read {line:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `dig`'s answer section (sorted RDATA) if it answered NOERROR with records.
fn dig_answers(argv: &[String]) -> Option<Vec<String>> {
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .args(["+time=1", "+tries=1"])
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("status: NOERROR") {
        let status = text
            .lines()
            .find_map(|l| l.split("status: ").nth(1))
            .unwrap_or("no response");
        saw(format!("{}: {status}", argv.join(" ")));
        return None;
    }
    let mut answers: Vec<String> = text
        .split(";; ANSWER SECTION:")
        .nth(1)?
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    answers.sort();
    saw(format!("{}: {answers:?}", argv.join(" ")));
    (!answers.is_empty()).then_some(answers)
}

/// The first screen's `dig` of an Ingress host (a name not under `.svc.`).
fn ingress_host_dig(screen: &sandbox::screen::Screen) -> Vec<String> {
    use sandbox::screen::Try;
    screen
        .tries()
        .filter_map(|t| match t {
            Try::Dig { name, subnet: None, .. } if !name.contains(".svc.") => Some(t.argv()),
            _ => None,
        })
        .next()
        .expect("an Ingress host to dig")
}

/// What the first screen's Ingress host answers now.
fn ingress_host_answer(screen: &sandbox::screen::Screen) -> Option<Vec<String>> {
    dig_answers(&ingress_host_dig(screen))
}

/// The IPv4 load-balancer addresses (sorted) of every member's Ingress
/// with a rule for `host`, read from the members' API servers: what the host
/// answers once every member has joined and is healthy.
fn ingress_host_addresses(running: &sandbox::Running, host: &str) -> Vec<String> {
    let host = host.trim_end_matches('.');
    let mut out = Vec::new();
    for member in running.federation.members.values() {
        let store = member.store();
        let info = store
            .resource("networking.k8s.io", "v1", "ingresses")
            .expect("the emulator serves Ingresses");
        let list = store.list(&info, &Default::default(), None, None).unwrap();
        for ingress in list["items"].as_array().into_iter().flatten() {
            let rules = ingress["spec"]["rules"].as_array().into_iter().flatten();
            if !rules.into_iter().any(|r| r["host"].as_str() == Some(host)) {
                continue;
            }
            for lb in ingress["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
            {
                // `dig NAME` asks for A records: IPv4 addresses only.
                if let Some(address) = lb["ip"].as_str().filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok()) {
                    out.push(address.to_owned());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Runs every command the first screen offers, in print order, as a user
/// would: the printed line read by a shell must be the command's words;
/// `dig` must get answers (every name printed resolves), `kubectl` must
/// succeed against the kubeconfig named, `fedns sandbox ACTION` must be
/// accepted (parsed as the CLI parses it and run by the same function).
/// Every file named exists. Returns the screen's text.
async fn run_the_first_screen(running: &sandbox::Running) -> String {
    use clap::Parser as _;
    use fedns_controller::cli::{Cli, Command as Subcommand};
    use sandbox::screen::Try;

    let screen = running.screen();
    let text = screen.to_string();
    println!("{text}");
    let files = screen.files();
    assert!(!files.is_empty());
    for file in &files {
        assert!(
            file.exists(),
            "the first screen names {}, which does not exist",
            file.display()
        );
    }
    // Every path in the text is one of them.
    for word in text.split_whitespace() {
        if word.ends_with(".kubeconfig") || word.ends_with(".log") {
            assert!(files.contains(&PathBuf::from(word)), "{word} not listed as named");
        }
    }
    let mut ingress_before_delete: Option<Vec<String>> = None;
    let mut cordoned = None;
    for command in screen.tries() {
        let line = command.to_string();
        assert!(text.contains(&line), "{line:?} is not on the screen");
        let argv = command.argv();
        assert_eq!(shell_words(&line.replace("\\\n", "")), argv, "{line}");
        match command {
            Try::Dig { name, .. } => {
                let took = eventually(&format!("`{line}` answers"), || dig_answers(&argv).is_some()).await;
                println!("{name}: answered after {took:?}: {:?}", dig_answers(&argv));
            }
            Try::Sandbox { action, cluster, .. } => {
                let parsed = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{line}: {e}"));
                let Subcommand::Sandbox(args) = &parsed.command else {
                    panic!("{line} is not `fedns sandbox`");
                };
                sandbox::run(args).await.unwrap_or_else(|e| panic!("{line}: {e:#}"));
                if action == "cordon" {
                    cordoned = Some(cluster.clone());
                }
            }
            Try::Kubectl { args, .. } => {
                if args.iter().any(|a| a == "delete") {
                    // `uncordon` (the note says it undoes the cordon) first:
                    // with two members, the cordoned one and the one whose
                    // Ingress goes would leave none, and fail-open would
                    // keep the answer as it was.
                    if let Some(cluster) = cordoned.take() {
                        uncordon(running, &cluster).await;
                        eventually("the Ingress host answers two addresses or more again", || {
                            ingress_host_answer(&screen).is_some_and(|a| a.len() >= 2)
                        })
                        .await;
                    }
                    // What the Ingress host answers before its member's
                    // Ingress goes: every member's addresses. The screen is
                    // printed before the members have all joined, and a
                    // member `recover`ed a moment ago returns after two
                    // probes; reading the answer any earlier would compare
                    // the delete against a federation still filling in.
                    let host = ingress_host_dig(&screen).last().cloned().expect("a name to dig");
                    let every = ingress_host_addresses(running, &host);
                    let took = eventually(&format!("{host} answers every member's addresses {every:?}"), || {
                        ingress_host_answer(&screen).as_ref() == Some(&every)
                    })
                    .await;
                    println!("{host} answered {every:?} after {took:?}");
                    ingress_before_delete = Some(every);
                }
                let out = std::process::Command::new(&argv[0])
                    .args(&argv[1..])
                    .output()
                    .expect("kubectl must be installed");
                assert!(
                    out.status.success(),
                    "{line}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    // The live change shows in the Ingress host's answer: the deleted
    // Ingress's load balancer leaves it.
    if let Some(before) = ingress_before_delete {
        let host = ingress_host_dig(&screen);
        eventually(&format!("the Ingress host's answer changes from {before:?}"), || {
            dig_answers(&host) != Some(before.clone())
        })
        .await;
        let after = dig_answers(&host).unwrap_or_default();
        assert!(
            after.iter().all(|a| before.contains(a)) && after.len() < before.len(),
            "{before:?} -> {after:?}"
        );
    }
    // The note says `uncordon` undoes it: it does.
    if let Some(cluster) = cordoned {
        uncordon(running, &cluster).await;
    }
    text
}

/// `fedns sandbox uncordon CLUSTER`, parsed as the CLI parses it.
async fn uncordon(running: &sandbox::Running, cluster: &str) {
    use clap::Parser as _;
    use fedns_controller::cli::{Cli, Command as Subcommand};
    let state_dir = running.federation.state_dir.display().to_string();
    let parsed = Cli::try_parse_from(["fedns", "sandbox", "uncordon", cluster, "--state-dir", &state_dir]).unwrap();
    let Subcommand::Sandbox(args) = &parsed.command else {
        unreachable!()
    };
    sandbox::run(args).await.unwrap();
}

/// The built-in example's first screen: exactly as before (plus where the
/// logs go), and every command on it works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_screen_of_the_built_in_example_works() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    let dir = args.state_dir.display();
    let url = |name: &str| running.federation.members[name].url();
    let lb = |name: &str| running.load_balancers[name].to_string();
    let discovery = |name: &str| running.discovery.iter().find(|r| r.member == name).unwrap().addr;
    let expected = format!(
        "\
fedns sandbox: a host and 3 member clusters on loopback
  eu-west-1  {eu}   kubeconfig {dir}/eu-west-1.kubeconfig
  us-east-1  {east}   kubeconfig {dir}/us-east-1.kubeconfig
  us-west-2  {west}   kubeconfig {dir}/us-west-2.kubeconfig
  host       {host}   kubeconfig {dir}/host.kubeconfig
Load balancers (HTTP responders): eu-west-1 {eu_lb}, us-east-1 {east_lb}, us-west-2 {west_lb}
  nginx probes them: HTTP GET /healthz every 1 s; 2 failures take an address out, 1 success brings it back
DNS on 127.0.0.1 port {port} (UDP and TCP). Try:
  dig @127.0.0.1 -p {port} nginx.ns.myfed.svc.example.com
  dig @127.0.0.1 -p {port} +subnet=192.0.2.0/24 nginx.ns.myfed.svc.example.com   (Nearest: eu-west-1)
  dig @127.0.0.1 -p {port} nginx.ns.myfed.svc.us-west-2.example.com
  dig @127.0.0.1 -p {port} nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com
  dig @127.0.0.1 -p {port} shop.example.com
  dig @127.0.0.1 -p {port} web.example.com   (RouteDNSRecord ns/web: the HTTPRoute ns/web behind each member's Gateway, its Ingress where a member has none)
Inside us-east-1: its cluster DNS would forward myfed.svc.cluster.local to {east_dns} (address in {dir}/us-east-1.dns):
  dig @127.0.0.1 -p {east_dns_port} nginx.ns.myfed.svc.cluster.local   (a pod's nginx.ns.myfed: the local Service)
Stop a member's API server (nginx stays while its load balancer passes), and bring it back:
  fedns sandbox fail us-west-2 --state-dir {dir}
  fedns sandbox recover us-west-2 --state-dir {dir}
Stop a member's load balancer (it leaves nginx's names), and start it again:
  fedns sandbox break-lb us-west-2 --state-dir {dir}
  fedns sandbox fix-lb us-west-2 --state-dir {dir}
  fedns sandbox cordon us-east-1 --state-dir {dir}   (uncordon to undo)
Change a member live:
  kubectl --kubeconfig {dir}/eu-west-1.kubeconfig -n ns delete ingress shop
  kubectl --kubeconfig {dir}/host.kubeconfig -n ns get dnsendpoints -o yaml
Log lines go to {dir}/sandbox.log (--verbose: to this terminal).
Published changes follow (+ added, - removed). Ctrl-C stops everything.
",
        eu = url("eu-west-1"),
        east = url("us-east-1"),
        west = url("us-west-2"),
        host = running.federation.host.url(),
        eu_lb = lb("eu-west-1"),
        east_lb = lb("us-east-1"),
        west_lb = lb("us-west-2"),
        east_dns = discovery("us-east-1"),
        east_dns_port = discovery("us-east-1").port(),
    );
    assert_eq!(running.screen().to_string(), expected);
    // The client subnet hint places the client in eu-west-1.
    eventually("the +subnet hint answers eu-west-1's address", || {
        dig_answers(&[
            "dig".into(),
            "@127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "+subnet=192.0.2.0/24".into(),
            GLOBAL.into(),
        ]) == Some(vec![EU.to_owned()])
    })
    .await;
    run_the_first_screen(&running).await;
    running.shutdown().await;
}

/// `--members-from` with members named unlike the built-in ones: every
/// hint is about the replayed federation, and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_screen_of_replayed_clusters_names_them() {
    let (args, _) = args(Some(fixtures().join("members-from-prod")));
    let running = sandbox::start(&args).await.unwrap();
    let text = run_the_first_screen(&running).await;
    for builtin in [
        "us-east-1",
        "us-west-2",
        "eu-west-1",
        "nginx",
        "shop",
        "+subnet",
        "Nearest",
        "break-lb",
        "fix-lb",
        "Load balancers",
    ] {
        assert!(!text.contains(builtin), "{builtin} on the screen of a replay:\n{text}");
    }
    for replayed in [
        "dig @127.0.0.1",
        "checkout.store.myfed.svc.example.com",
        "checkout.store.myfed.svc.sa-east-1.example.com",
        "checkout.store.myfed.svc.sa-east-1c.sa-east-1.example.com",
        "store.example.net",
        "fedns sandbox fail prod-b",
        "fedns sandbox recover prod-b",
        "fedns sandbox cordon prod-a",
        "prod-b.kubeconfig -n store delete ingress storefront",
        "Not replayed (kinds the emulators do not serve):",
        "prod-a/certificate.yaml: cert-manager.io/v1/Certificate storefront-tls",
    ] {
        assert!(text.contains(replayed), "{replayed} missing:\n{text}");
    }
    running.shutdown().await;
}

/// Every `--engine`: only hints that work there (no cordon: the
/// members are the engine's clusters; no break-lb: nothing is probed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_screen_under_an_engine_offers_what_works_there() {
    for engine in ENGINES {
        let (args, _) = engine_args(None, Some(engine));
        let running = sandbox::start(&args).await.unwrap();
        let text = run_the_first_screen(&running).await;
        for absent in [
            "cordon",
            "break-lb",
            "fix-lb",
            "+subnet",
            "Load balancers",
            "stays while",
        ] {
            assert!(
                !text.contains(absent),
                "{}: {absent} on the screen:\n{text}",
                engine.as_str()
            );
        }
        for present in [
            "nginx.ns.myfed.svc.example.com",
            "shop.example.com",
            "fedns sandbox fail",
            "--auto-records",
        ] {
            assert!(
                text.contains(present),
                "{}: {present} missing:\n{text}",
                engine.as_str()
            );
        }
        let err = sandbox::control(&args.state_dir, "break-lb", "us-west-2")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no record probes"), "{err}");
        running.shutdown().await;
    }
}

/// Reads `fedns sandbox`'s standard output until the first change line
/// (30 s at most), then stops it with SIGINT: (stdout, stderr, status).
fn run_the_binary(
    extra: &[&str],
    state_dir: &std::path::Path,
    port: u16,
) -> (String, String, std::process::ExitStatus) {
    use std::io::{BufRead as _, Read as _};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(["sandbox", "--dns-listen", &format!("127.0.0.1:{port}"), "--state-dir"])
        .arg(state_dir)
        .args(extra)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let mut out = String::new();
    while started.elapsed() < Duration::from_secs(30) {
        match lines_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let change = line.starts_with("+ ");
                out.push_str(&line);
                out.push('\n');
                if change {
                    println!("first change line after {:?}", started.elapsed());
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    out.extend(lines_rx.try_iter().map(|l| l + "\n"));
    (out, errors.join().unwrap(), status)
}

/// A log line as tracing-subscriber's text format starts it.
fn is_log_line(line: &str) -> bool {
    let timestamp = line.len() > 20 && line.as_bytes()[4] == b'-' && line.as_bytes()[10] == b'T';
    timestamp
        || [" INFO ", " WARN ", " ERROR ", " DEBUG "]
            .iter()
            .any(|l| line.contains(l))
}

/// The terminal shows the first screen and the change lines, no log lines;
/// they are in `<state-dir>/sandbox.log`, or on standard error with
/// `--verbose`. A DNS address taken stops the sandbox with a clear error.
#[test]
fn the_terminal_is_for_people_and_the_logs_go_to_a_file() {
    let state_dir = temp_dir("sandbox-terminal");
    let (out, err, status) = run_the_binary(&[], &state_dir, free_port());
    println!("{out}");
    assert!(
        out.starts_with("fedns sandbox: a host and 3 member clusters on loopback\n"),
        "{out}"
    );
    let log = state_dir.join("sandbox.log");
    assert!(
        out.contains(&format!(
            "Log lines go to {} (--verbose: to this terminal).",
            log.display()
        )),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("+ ")), "no change line:\n{out}");
    assert!(!out.lines().any(is_log_line), "log lines on standard output:\n{out}");
    assert!(!err.lines().any(is_log_line), "log lines on standard error:\n{err}");
    assert!(status.success(), "{status}: {err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.lines().filter(|l| is_log_line(l)).count() > 3, "{logged}");
    assert!(logged.contains("Kubernetes API emulator started"), "{logged}");
    assert!(!logged.contains('\u{1b}'), "no colours in the file");

    let verbose_dir = temp_dir("sandbox-verbose");
    let (out, err, _) = run_the_binary(&["--verbose"], &verbose_dir, free_port());
    assert!(!out.contains("Log lines go to"), "{out}");
    assert!(!out.lines().any(is_log_line), "log lines on standard output:\n{out}");
    assert!(err.contains("Kubernetes API emulator started"), "--verbose: {err}");
    assert!(!verbose_dir.join("sandbox.log").exists());

    // A DNS address in use: nothing starts, and standard error says why.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let busy_dir = temp_dir("sandbox-busy");
    let (out, err, status) = run_the_binary(&[], &busy_dir, port);
    assert!(!status.success());
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with(&format!("fedns sandbox: cannot answer DNS on 127.0.0.1:{port} (UDP)")),
        "{err}"
    );
    assert!(err.contains("--dns-listen"), "{err}");
    assert!(!busy_dir.join("host.kubeconfig").exists(), "nothing may start");
}

/// `dig axfr` of the sandbox's zone, written to a file for
/// `named-checkzone`.
fn axfr_to_file(port: u16, dir: &std::path::Path) -> PathBuf {
    let out = std::process::Command::new("dig")
        .args([
            "+time=2",
            "+tries=1",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            "example.com",
            "AXFR",
        ])
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("IN\tSOA"), "AXFR of example.com: {text}");
    let path = dir.join("example.com.axfr");
    std::fs::write(&path, text).unwrap();
    path
}

/// BIND's `named-checkzone -i full` (Debian bind9-utils) on a zone file:
/// (loaded, its output).
fn named_checkzone(path: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new("named-checkzone")
        .args(["-i", "full", "example.com", path.to_str().unwrap()])
        .output()
        .expect("named-checkzone (Debian bind9-utils) must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The sandbox's zone is one a secondary loads as it is: its in-zone name
/// server has its address in the zone (from the Domain's
/// `nameServerAddresses`), so BIND's `named-checkzone -i full` passes on
/// its AXFR and the Domain's `NameServerAddresses` condition is True.
/// Without the addresses the condition says so (`MissingAddresses`) and
/// BIND refuses the zone, as it did before Domains could carry them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_zone_loads_in_a_secondary() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    eventually("the sandbox answers the global name", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    assert_eq!(dig(port, "ns1.example.com", "A", false), ["127.0.0.1"]);
    // Transfers start once the zone's first serial is recorded.
    eventually("the zone transfers", || {
        dig(port, "example.com", "AXFR", true)
            .iter()
            .filter(|l| !l.starts_with(';'))
            .count()
            > 1
    })
    .await;
    let (loaded, text) = named_checkzone(&axfr_to_file(port, &args.state_dir));
    println!("named-checkzone -i full on the sandbox's AXFR:\n{text}");
    assert!(loaded, "{text}");

    let host = client_of(&running.federation.host).await;
    let domains: Api<fedns_api::Domain> = Api::namespaced(host, "fedns-system");
    let condition = |domain: &fedns_api::Domain| {
        domain
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "NameServerAddresses").cloned())
    };
    let mut domain = domains.get("myfed").await.unwrap();
    let started = Instant::now();
    while condition(&domain).is_none() && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        domain = domains.get("myfed").await.unwrap();
    }
    let c = condition(&domain).expect("the condition NameServerAddresses within 30 s");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Valid"), "{c:?}");

    // Without the addresses: the condition says what is missing, the name
    // server's address leaves the zone, and BIND refuses it.
    domains
        .patch(
            "myfed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"nameServerAddresses": null}})),
        )
        .await
        .unwrap();
    let took = eventually("the address leaves the zone", || {
        dig(port, "ns1.example.com", "A", false).is_empty()
    })
    .await;
    println!("addresses removed from the Domain: gone from answers after {took:?}");
    let started = Instant::now();
    let c = loop {
        let domain = domains.get("myfed").await.unwrap();
        match condition(&domain) {
            Some(c) if c.status == "False" => break c,
            _ if started.elapsed() > Duration::from_secs(30) => panic!("condition not False within 30 s: {domain:?}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    assert_eq!(c.reason, "MissingAddresses", "{c:?}");
    assert!(c.message.contains("ns1.example.com"), "{c:?}");
    // Transfers serve the change once its serial is recorded and due
    // (about a second after the answers: operations.md, DNS server
    // replicas).
    let mut checked = named_checkzone(&axfr_to_file(port, &args.state_dir));
    let started = Instant::now();
    while checked.0 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        checked = named_checkzone(&axfr_to_file(port, &args.state_dir));
    }
    println!("the change reached transfers after {:?}", started.elapsed());
    let (loaded, text) = checked;
    assert!(!loaded, "BIND refuses an in-zone NS without addresses: {text}");
    assert!(text.contains("has no address records"), "{text}");
    drop(running);
}

/// The status of the sandbox's ServiceDNSRecord `nginx`: its probes.
async fn nginx_probes(host: &kube::Client) -> Vec<fedns_api::AddressHealth> {
    let records: Api<fedns_api::ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    records
        .get("nginx")
        .await
        .ok()
        .and_then(|r| r.status)
        .map(|s| s.probes)
        .unwrap_or_default()
}

/// Health from several vantage points, as the README tours it:
/// each member runs an agent; `isolate us-west-2` cuts only the
/// controller's path to its load balancer, so it stays (three of four
/// vantage points reach it) and explain shows the disagreement;
/// `break-lb` still takes it out within periodSeconds × failureThreshold
/// + 1 s; an agent that stops reporting is not counted and gets an Event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn isolate_keeps_a_member_that_the_agents_reach() {
    let (args, port) = args(None);
    let mut running = sandbox::start(&args).await.unwrap();
    let state_dir = args.state_dir.clone();
    eventually("the sandbox answers the global name", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    let host = client_of(&running.federation.host).await;
    // Every agent reports on every load balancer: four vantage points.
    let started = Instant::now();
    loop {
        let probes = nginx_probes(&host).await;
        let counted = |p: &fedns_api::AddressHealth| {
            p.vantage_points.len() == 4 && p.vantage_points.iter().all(|v| v.standing == "counted")
        };
        if probes.len() == 3 && probes.iter().all(counted) {
            println!(
                "4 vantage points counted on every address after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "agents not counted: {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    sandbox::control(&state_dir, "isolate", "us-west-2").await.unwrap();
    let started = Instant::now();
    loop {
        assert_eq!(
            dig(port, GLOBAL, "A", false),
            ALL,
            "us-west-2 stays while the agents reach it"
        );
        let probes = nginx_probes(&host).await;
        let west = probes.iter().find(|p| p.address == WEST);
        let controller_down = west.is_some_and(|p| {
            p.vantage_points
                .iter()
                .any(|v| v.name == "controller" && v.state == "Down")
        });
        if controller_down && started.elapsed() > Duration::from_secs(4) {
            let west = west.unwrap();
            assert_eq!(west.state, "Up");
            assert!(
                west.quorum.as_deref().unwrap_or("").starts_with("Majority: 1 of 4"),
                "{west:?}"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the controller never saw it down: {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("isolated: the controller sees us-west-2 down, the agents up; it stays in DNS");
    let explain = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(["explain", GLOBAL, "--kubeconfig"])
        .arg(state_dir.join("host.kubeconfig"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(explain.status.success(), "{}", String::from_utf8_lossy(&explain.stderr));
    assert!(
        text.lines()
            .any(|l| l.contains("vantage point controller") && l.contains("Down")),
        "{text}"
    );
    assert!(
        text.contains("vantage point us-east-1") && text.contains("quorum Majority"),
        "{text}"
    );

    // break-lb: every vantage point sees it down: out.
    let target = Duration::from_secs(3);
    sandbox::control(&state_dir, "break-lb", "us-west-2").await.unwrap();
    let took = eventually("us-west-2 leaves after `break-lb`", || {
        dig(port, GLOBAL, "A", false) == [EAST, EU]
    })
    .await;
    println!(
        "out after `break-lb` with four vantage points: {took:?} (target {target:?}: {})",
        if took <= target { "met" } else { "missed" }
    );
    sandbox::control(&state_dir, "fix-lb", "us-west-2").await.unwrap();
    sandbox::control(&state_dir, "heal", "us-west-2").await.unwrap();
    eventually("us-west-2 returns", || dig(port, GLOBAL, "A", false) == ALL).await;

    // eu-west-1's agent stops: silent, not counted, a Warning Event.
    drop(running.agents.remove(2));
    let started = Instant::now();
    loop {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(host.clone(), "fedns-system");
        let list = events.list(&Default::default()).await.unwrap();
        let found = list.items.iter().any(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("eu-west-1")
                && e.reason.as_deref() == Some("VantagePointSilent")
                && e.type_.as_deref() == Some("Warning")
        });
        let probes = nginx_probes(&host).await;
        let silent = probes.iter().all(|p| {
            p.vantage_points
                .iter()
                .any(|v| v.name == "eu-west-1" && v.standing.starts_with("silent"))
        });
        if found && silent && probes.len() == 3 {
            println!("eu-west-1's agent silent and reported after {:?}", started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no VantagePointSilent: {probes:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(dig(port, GLOBAL, "A", false), ALL);
    running.shutdown().await;
}

/// The tour's sticky answers (docs/tour.md, "Sticky answers"): with
/// `stickiness: ClientSubnet`, a client subnet asks twice and gets the same
/// cluster; `break-lb` moves only the subnets of the broken cluster, and
/// `fix-lb` brings the same subnets back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tour_sticky_answers_move_only_the_broken_clusters_subnets() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    eventually("the sandbox answers", || dig(port, GLOBAL, "A", false) == ALL).await;
    let host = client_of(&running.federation.host).await;
    let records: Api<fedns_api::ServiceDNSRecord> = Api::namespaced(host, "ns");
    records
        .patch(
            "nginx",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"routing": {"policy": "Weighted",
                "weights": {"us-east-1": 1, "us-west-2": 1, "eu-west-1": 1}, "stickiness": "ClientSubnet"}}})),
        )
        .await
        .unwrap();
    let answer = |subnet: &str| -> String {
        let out = std::process::Command::new("dig")
            .args([
                "+short",
                "+time=1",
                "+tries=2",
                "-p",
                &port.to_string(),
                "@127.0.0.1",
                GLOBAL,
                "A",
            ])
            .arg(format!("+subnet={subnet}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let subnets: Vec<String> = (0..60).map(|i| format!("10.{}.{}.0/24", i / 256, i % 256)).collect();
    let round = || -> Vec<String> { subnets.iter().map(|s| answer(s)).collect() };
    eventually("answers are one cluster each", || {
        round().iter().all(|a| ALL.contains(&a.as_str()))
    })
    .await;
    let first = round();
    assert_eq!(round(), first, "each subnet keeps its cluster");
    let share = |answers: &[String], ip: &str| answers.iter().filter(|a| *a == ip).count();
    println!(
        "60 subnets: us-east-1 {}, us-west-2 {}, eu-west-1 {}",
        share(&first, EAST),
        share(&first, WEST),
        share(&first, EU)
    );
    assert!(share(&first, EU) > 0);

    sandbox::control(&args.state_dir, "break-lb", "eu-west-1")
        .await
        .unwrap();
    eventually("eu-west-1 leaves the answers", || !round().iter().any(|a| a == EU)).await;
    let broken = round();
    for ((subnet, before), after) in subnets.iter().zip(&first).zip(&broken) {
        if before != EU {
            assert_eq!(before, after, "{subnet} moved though its cluster did not fail");
        }
    }
    sandbox::control(&args.state_dir, "fix-lb", "eu-west-1").await.unwrap();
    eventually("eu-west-1's subnets return", || round() == first).await;
    drop(running);
}
