//! `fedns sandbox` run in-process on free ports: exact answers for the
//! global, region and zone names and the Ingress host over UDP and TCP
//! (dig and hickory-proto), failover through `fail`/`recover`, `cordon`,
//! and `--members-from` with real `kubectl get -o yaml` output.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use fedns_controller::cli::sandbox;
use fedns_controller::cli::SandboxArgs;
use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query};
use fedns_dnsserver::hickory_proto::rr::{Name, RecordType};

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

fn args(members_from: Option<PathBuf>) -> (SandboxArgs, u16) {
    let port = free_port();
    (
        SandboxArgs {
            action: None,
            state_dir: temp_dir("sandbox"),
            dns_listen: SocketAddr::from(([127, 0, 0, 1], port)),
            metrics_addr: "127.0.0.1:0".parse().unwrap(),
            members_from,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_serves_and_fails_over() {
    let (args, port) = args(None);
    let running = sandbox::start(&args).await.unwrap();
    let state_dir = args.state_dir.clone();
    for cluster in ["host", "us-east-1", "us-west-2", "eu-west-1"] {
        assert!(state_dir.join(format!("{cluster}.kubeconfig")).exists());
    }

    let all = ["198.51.100.10", "198.51.100.20", "203.0.113.10"];
    eventually("the sandbox answers the global name", || {
        dig(port, GLOBAL, "A", false) == all
    })
    .await;
    let expect = [
        (GLOBAL, "AAAA", vec!["2001:db8::10"]),
        ("nginx.ns.myfed.svc.us-east-1.example.com", "A", vec!["203.0.113.10"]),
        (
            "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com",
            "A",
            vec!["203.0.113.10"],
        ),
        (
            "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com",
            "A",
            vec!["203.0.113.10"],
        ),
        ("nginx.ns.myfed.svc.us-west-2.example.com", "A", vec!["198.51.100.10"]),
        (
            "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com",
            "AAAA",
            vec!["2001:db8::10"],
        ),
        ("nginx.ns.myfed.svc.eu-west-1.example.com", "A", vec!["198.51.100.20"]),
        (
            "nginx.ns.myfed.svc.eu-west-1a.eu-west-1.example.com",
            "A",
            vec!["198.51.100.20"],
        ),
        (
            "shop.example.com",
            "A",
            vec!["198.51.100.100", "198.51.100.200", "203.0.113.100"],
        ),
    ];
    for (name, rtype, answer) in &expect {
        eventually(&format!("{name} {rtype}"), || dig(port, name, rtype, false) == *answer).await;
        assert_eq!(dig(port, name, rtype, true), *answer, "{name} over TCP");
        let wire = if *rtype == "A" { RecordType::A } else { RecordType::AAAA };
        assert_eq!(hickory(port, name, wire), *answer, "{name} through hickory-proto");
    }
    assert_eq!(
        dig(port, "www.example.com", "A", false),
        [
            "198.51.100.10",
            "198.51.100.20",
            "203.0.113.10",
            "nginx.ns.myfed.svc.example.com."
        ]
    );

    // fail us-west-2: its addresses leave every answer; its names fall back.
    sandbox::control(&state_dir, "fail", "us-west-2").await.unwrap();
    let took = eventually("us-west-2 leaves after `fail`", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.20", "203.0.113.10"]
    })
    .await;
    println!("failover after `fedns sandbox fail us-west-2`: {took:?}");
    assert!(dig(port, GLOBAL, "AAAA", false).is_empty());
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
        ["198.51.100.20", "203.0.113.10", "nginx.ns.myfed.svc.example.com."]
    );
    let zone = dig(port, "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com", "A", false);
    assert!(
        zone.contains(&"nginx.ns.myfed.svc.us-west-2.example.com.".to_string()),
        "{zone:?}"
    );
    eventually("the Ingress host drops us-west-2", || {
        dig(port, "shop.example.com", "A", false) == ["198.51.100.200", "203.0.113.100"]
    })
    .await;
    // Other clusters' answers are unchanged.
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1.example.com", "A", false),
        ["203.0.113.10"]
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.eu-west-1a.eu-west-1.example.com", "A", false),
        ["198.51.100.20"]
    );

    sandbox::control(&state_dir, "recover", "us-west-2").await.unwrap();
    eventually("us-west-2 returns after `recover`", || {
        dig(port, GLOBAL, "A", false) == all
    })
    .await;
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false),
        ["198.51.100.10"]
    );

    // cordon has the same effect and is reversible.
    sandbox::control(&state_dir, "cordon", "us-east-1").await.unwrap();
    eventually("a cordoned us-east-1 leaves", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "198.51.100.20"]
    })
    .await;
    sandbox::control(&state_dir, "uncordon", "us-east-1").await.unwrap();
    eventually("us-east-1 returns after uncordon", || {
        dig(port, GLOBAL, "A", false) == all
    })
    .await;

    // A control request for an unknown cluster is refused with a clear error.
    let err = sandbox::control(&state_dir, "fail", "mars-1").await.unwrap_err();
    assert!(err.to_string().contains("no member cluster mars-1"), "{err}");
    running.shutdown().await;
    let gone = sandbox::control(&state_dir, "fail", "us-west-2").await.unwrap_err();
    assert!(gone.to_string().contains("no running sandbox"), "{gone}");
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
