//! `fedns sandbox` run in-process on free ports: exact answers for the
//! global, region and zone names and the Ingress host over UDP and TCP
//! (dig and hickory-proto), both failure modes (`fail`/`recover`: API server
//! down, load balancer up; `break-lb`/`fix-lb`: the reverse), `cordon`, and
//! `--members-from` with real `kubectl get -o yaml` output.

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

    // fix-lb: back after one passing probe.
    sandbox::control(&state_dir, "fix-lb", "us-west-2").await.unwrap();
    let took = eventually("us-west-2 returns after `fix-lb`", || {
        dig(port, GLOBAL, "A", false) == ALL
    })
    .await;
    println!("back after `fedns sandbox fix-lb us-west-2`: {took:?}");
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
        [WEST]
    );

    // fail on every member: the controller sees every API server down, and
    // every name keeps its last answers.
    let host = client_of(&running.federation.host).await;
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

/// `--engine karmada|kubefed`: the host seeded as the engine's control
/// plane (Karmada: eu-west-1 in pull mode, through the cluster proxy); the
/// same names answer, made from the annotated templates, and `fail` /
/// `recover` move a member out and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_runs_as_an_engine_control_plane() {
    for engine in [Engine::Karmada, Engine::Kubefed] {
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
