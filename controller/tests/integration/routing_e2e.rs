//! Traffic policies end to end: `fedns controller` against three emulated
//! members (regions us-east-1, us-west-2, eu-west-1) whose Service load
//! balancers are HTTP responders on 127.0.2.1-3, answers read with `dig`
//! (`+subnet` for EDNS Client Subnet, `-b` for the source address).
//!
//! Nearest by ECS and by source; Weighted keeps its standby out until the
//! weighted clusters fail; Failover switches group on health change and
//! back; with every load balancer down, each policy keeps answering from
//! the last-known set (fail-open); the DNSEndpoint is in external-dns's
//! vocabulary; an unknown cluster in the policy is a condition, not an outage.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::health_e2e::{probed_federation, ProbedFederation};
use fedns_api::{DNSEndpoint, ServiceDNSRecord};
use kube::api::Api;

const ZONE: &str = "ns.myfed.svc.example.com";

fn member_yaml(region: &str, ip: &str, port: u16) -> String {
    let mut yaml = format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {region}a}}
"#
    );
    for service in ["nginx", "web", "api"] {
        yaml.push_str(&format!(
            r#"---
apiVersion: v1
kind: Service
metadata: {{name: {service}, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: {port}}}]}}
status: {{loadBalancer: {{ingress: [{{ip: "{ip}"}}]}}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {service}-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: {service}}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: true}}
"#
        ));
    }
    yaml
}

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  # The load balancers are responders on loopback: probes need the allowance.
  probeAllowedNetworks: [127.0.0.0/8]
  clientRegions:
    - {cidr: 192.0.2.0/24, region: eu-west-1}
    - {cidr: 198.51.100.0/24, region: us-west-2}
    - {cidr: 127.0.0.2/32, region: eu-west-1}
    - {cidr: 127.0.0.3/32, region: us-west-2}
  geoRegions:
    - {region: eu-west-1, continents: [EU]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec:
  domainRef: myfed
  recordTTL: 5
  healthCheck: {protocol: HTTP, path: /healthz, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1}
  routing: {policy: Nearest, fallback: [us-east-1]}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: web, namespace: ns}
spec:
  domainRef: myfed
  recordTTL: 5
  healthCheck: {protocol: HTTP, path: /healthz, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1}
  routing: {policy: Weighted, weights: {a: 1, us-west-2: 3, nowhere: 5}}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: api, namespace: ns}
spec:
  domainRef: myfed
  recordTTL: 5
  healthCheck: {protocol: HTTP, path: /healthz, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1}
  routing: {policy: Failover, priorities: [[us-east-1], [b]]}
"#;

/// `dig +short` with extra options (`+subnet=...`, `-b ADDR`), sorted.
fn dig_with(port: u16, name: &str, extra: &[&str]) -> Vec<String> {
    let out = Command::new("dig")
        .args([
            "+short",
            "+time=1",
            "+tries=1",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            "A",
        ])
        .args(extra)
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty() && !l.starts_with(";;"))
        .collect();
    lines.sort();
    lines
}

async fn becomes(port: u16, name: &str, extra: &[&str], want: &[&str], what: &str) -> Duration {
    let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    let started = Instant::now();
    loop {
        let got = dig_with(port, name, extra);
        if got == want {
            let took = started.elapsed();
            println!("{what}: {want:?} after {took:?}");
            return took;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: still {got:?} after 30 s, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The distinct single-address answers of `n` queries.
fn spread(port: u16, name: &str, n: usize) -> std::collections::BTreeMap<String, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..n {
        let got = dig_with(port, name, &[]);
        assert_eq!(got.len(), 1, "one cluster per Weighted answer: {got:?}");
        *seen.entry(got[0].clone()).or_default() += 1;
    }
    seen
}

/// `fedns explain NAME [--client-subnet SUBNET]` against the host
/// cluster, its output (it must succeed).
fn explain_cli(kubeconfig: &std::path::Path, name: &str, subnet: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fedns"));
    command.args(["explain", name, "--kubeconfig", kubeconfig.to_str().unwrap()]);
    if let Some(subnet) = subnet {
        command.args(["--client-subnet", subnet]);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The answer of `name` for each of the 40 client subnets
/// `<prefix>.0.0/24`..`<prefix>.39.0/24` (ECS): one cluster's address, or
/// "" for no or several addresses.
fn one_per_subnet(dns: u16, name: &str, prefix: &str) -> Vec<String> {
    (0..40)
        .map(
            |i| match dig_with(dns, name, &[&format!("+subnet={prefix}.{i}.0/24")]).as_slice() {
                [one] => one.clone(),
                _ => String::new(),
            },
        )
        .collect()
}

/// Members a (us-east-1), b (us-west-2) and c (eu-west-1) with probed
/// load balancers, and a controller serving them (`tag` names the state
/// dir); the controller's DNS port.
async fn routed(tag: &str) -> (ProbedFederation, u16, Process) {
    let probed = probed_federation(
        tag,
        2,
        &[("a", "us-east-1"), ("b", "us-west-2"), ("c", "eu-west-1")],
        member_yaml,
        HOST_YAML,
    )
    .await;
    let dns = free_port();
    let controller = spawn_controller(&probed.dir, dns, free_port(), &["--udp-workers", "1"]);
    (probed, dns, controller)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_follow_clients_weights_and_health() {
    let (
        ProbedFederation {
            responders,
            federation,
            dir,
        },
        dns,
        _controller,
    ) = routed("routing").await;
    let nginx = format!("nginx.{ZONE}");
    let web = format!("web.{ZONE}");
    let api = format!("api.{ZONE}");

    // Nearest: by ECS, by source address, unknown → fallback us-east-1.
    becomes(
        dns,
        &nginx,
        &["+subnet=192.0.2.0/24"],
        &["127.0.2.3"],
        "Nearest, ECS in eu-west-1",
    )
    .await;
    // Each cluster joins the answers when its own probes have passed: b
    // may come a moment after c, so each region is waited for.
    becomes(
        dns,
        &nginx,
        &["+subnet=198.51.100.7/32"],
        &["127.0.2.2"],
        "Nearest, ECS in us-west-2",
    )
    .await;
    assert_eq!(dig_with(dns, &nginx, &["-b", "127.0.0.2"]), ["127.0.2.3"]);
    assert_eq!(dig_with(dns, &nginx, &["-b", "127.0.0.3"]), ["127.0.2.2"]);
    assert_eq!(
        dig_with(dns, &nginx, &["-b", "127.0.0.1"]),
        ["127.0.2.1"],
        "unknown → fallback"
    );
    let full = Command::new("dig")
        .args([
            "-p",
            &dns.to_string(),
            "@127.0.0.1",
            &nginx,
            "A",
            "+subnet=192.0.2.0/24",
        ])
        .output()
        .unwrap();
    let full = String::from_utf8_lossy(&full.stdout);
    assert!(
        full.contains("CLIENT-SUBNET: 192.0.2.0/24/24"),
        "ECS echoed with SCOPE 24:\n{full}"
    );

    // Failover: the first group answers.
    becomes(dns, &api, &[], &["127.0.2.1"], "Failover, primary a").await;

    // Weighted: a 1, b 3 (its region's weight), c standby (0).
    becomes(dns, &web, &[], &["127.0.2.2"], "Weighted published").await;
    let seen = spread(dns, &web, 120);
    println!("Weighted 1:3 over 120 answers: {seen:?}");
    assert!(!seen.contains_key("127.0.2.3"), "standby c is not answered: {seen:?}");
    assert!(
        seen.contains_key("127.0.2.1") && seen.contains_key("127.0.2.2"),
        "{seen:?}"
    );

    // The DNSEndpoint speaks external-dns.
    let host = client_of(&federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    let web_endpoint = endpoints.get("service-web").await.unwrap();
    let global: Vec<String> = web_endpoint
        .spec
        .endpoints
        .iter()
        .filter(|e| e.dns_name == web)
        .map(|e| {
            let props: Vec<String> = e
                .provider_specific
                .iter()
                .map(|p| format!("{}={}", p.name, p.value))
                .collect();
            format!("{} {}", e.set_identifier, props.join(","))
        })
        .collect();
    assert_eq!(global, ["a aws/weight=1", "b aws/weight=3", "c aws/weight=0"]);
    // The unknown weight key is a condition, the rest serves.
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let started = Instant::now();
    loop {
        let record = records.get("web").await.unwrap();
        let conditions = record.status.map(|s| s.conditions).unwrap_or_default();
        if let Some(c) = conditions
            .iter()
            .find(|c| c.type_ == "InputValid" && c.status == "False")
        {
            assert!(c.message.contains("\"nowhere\""), "{}", c.message);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no InputValid=False: {conditions:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // `fedns explain --client-subnet` says which answer a client gets, and why.
    let kubeconfig = dir.join("host.kubeconfig");
    let explain = |name: &str, subnet: &str| -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_fedns"))
            .args([
                "explain",
                name,
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--client-subnet",
                subnet,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = explain(&nginx, "192.0.2.0/24");
    println!("{text}");
    assert!(text.contains("routing Nearest"), "{text}");
    assert!(
        text.contains("client 192.0.2.0/24: region eu-west-1, answered with c (SCOPE PREFIX-LENGTH 24)"),
        "{text}"
    );
    let text = explain(&nginx, "203.0.113.0/24");
    assert!(text.contains("region (none), answered with a"), "{text}");
    assert!(text.contains("no known region"), "{text}");
    let text = explain(&web, "192.0.2.0/24");
    assert!(text.contains("b: 127.0.2.2 — weight 3 (75.0 % of answers)"), "{text}");
    // geoRegions without --geoip-db: the Domain says so, the table still places clients.
    let domains: Api<fedns_api::Domain> = Api::namespaced(client_of(&federation.host).await, "fedns-system");
    let started = Instant::now();
    loop {
        let domain = domains.get("myfed").await.unwrap();
        let condition = domain
            .status
            .and_then(|s| fedns_api::conditions::get(&s.conditions, "ClientRegionsValid").cloned());
        if let Some(c) = condition.filter(|c| c.reason == "GeoIPUnavailable") {
            assert_eq!(c.status, "False");
            assert!(c.message.contains("--geoip-db"), "{}", c.message);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no ClientRegionsValid=False GeoIPUnavailable"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Health changes: a's load balancer fails.
    responders[0].stop();
    becomes(dns, &api, &[], &["127.0.2.2"], "Failover to group 2 (b)").await;
    becomes(
        dns,
        &nginx,
        &["-b", "127.0.0.1"],
        &["127.0.2.2", "127.0.2.3"],
        "Nearest fallback gone: every healthy cluster",
    )
    .await;
    // b fails too: Weighted has only its standby left.
    responders[1].stop();
    becomes(dns, &web, &[], &["127.0.2.3"], "Weighted standby c").await;
    becomes(
        dns,
        &api,
        &[],
        &["127.0.2.3"],
        "Failover to the implicit last group (c)",
    )
    .await;
    // a comes back: primary again.
    responders[0].resume().await.unwrap();
    becomes(dns, &api, &[], &["127.0.2.1"], "Failover back to a").await;

    // Every load balancer down: fail-open, each policy over the last-known set.
    responders[0].stop();
    responders[2].stop();
    let started = Instant::now();
    while records
        .get("api")
        .await
        .ok()
        .and_then(|r| r.status)
        .and_then(|s| fedns_api::conditions::get(&s.conditions, "Ready").map(|c| c.reason.clone()))
        .as_deref()
        != Some("AllUnhealthy")
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no AllUnhealthy within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("fail-open after {:?}", started.elapsed());
    becomes(dns, &api, &[], &["127.0.2.1"], "fail-open Failover: the primary group").await;
    becomes(
        dns,
        &nginx,
        &["+subnet=192.0.2.0/24"],
        &["127.0.2.3"],
        "fail-open Nearest: still by region",
    )
    .await;
    // `web` is its own record: it may still answer from the moment a was
    // seen down and c not yet (c, its standby, alone), until its own
    // fail-open is published.
    let mut without_c = 0;
    eventually("fail-open Weighted: 10 answers in a row without the standby c", || {
        let got = dig_with(dns, &web, &[]);
        without_c = if got.iter().any(|a| a == "127.0.2.3") {
            0
        } else {
            without_c + 1
        };
        without_c >= 10
    })
    .await;
    let seen = spread(dns, &web, 40);
    assert!(
        !seen.contains_key("127.0.2.3"),
        "fail-open Weighted: weights again: {seen:?}"
    );
    federation.stop();
}

/// `stickiness: ClientSubnet` end to end: the record's DNSEndpoint
/// carries the subnet prefixes, every subnet keeps its cluster from query
/// to query (`dig +subnet=` twice), a failed cluster's subnets move (only
/// they) and come back with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_weighted_keeps_each_subnet_and_moves_only_a_failed_clusters() {
    use kube::api::{Patch, PatchParams};
    let (
        ProbedFederation {
            responders,
            federation,
            dir,
        },
        dns,
        _controller,
    ) = routed("sticky").await;
    let web = format!("web.{ZONE}");
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    records
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"routing": {"stickiness": "ClientSubnet"}}})),
        )
        .await
        .unwrap();
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "ns");
    let started = Instant::now();
    let sticky_props: Vec<String> = loop {
        let props: Vec<String> = endpoints
            .get("service-web")
            .await
            .map(|e| {
                e.spec
                    .endpoints
                    .iter()
                    .flat_map(|e| e.provider_specific.iter())
                    .filter(|p| p.name == "fedns/sticky-client-subnet")
                    .map(|p| p.value.clone())
                    .collect()
            })
            .unwrap_or_default();
        if !props.is_empty() {
            break props;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "no fedns/sticky-client-subnet on DNSEndpoint service-web within {EVENTUALLY:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let took = started.elapsed();
    println!("sticky after {took:?}: {sticky_props:?}");
    assert!(sticky_props.iter().all(|v| v == "24,56"), "{sticky_props:?}");
    let answers = || one_per_subnet(dns, &web, "10.9");
    // The published answer is sticky once every subnet answers one
    // cluster, the same twice in a row (the first publish may still be
    // plain Weighted).
    let mut before = Vec::new();
    eventually("every subnet answers the same cluster twice in a row", || {
        before = answers();
        saw(format!("{before:?}"));
        before.iter().all(|a| !a.is_empty()) && answers() == before
    })
    .await;
    let on = |answers: &[String], ip: &str| answers.iter().filter(|a| *a == ip).count();
    println!(
        "40 subnets: a {} b {} c {}",
        on(&before, "127.0.2.1"),
        on(&before, "127.0.2.2"),
        on(&before, "127.0.2.3")
    );
    assert_eq!(on(&before, "127.0.2.3"), 0, "c has weight 0");
    assert!(
        on(&before, "127.0.2.1") > 0 && on(&before, "127.0.2.2") > 0,
        "{before:?}"
    );
    // `fedns explain --client-subnet` names the cluster each subnet hashes to.
    let kubeconfig = dir.join("host.kubeconfig");
    for i in [0usize, 1, 2, 3] {
        let text = explain_cli(&kubeconfig, &web, Some(&format!("10.9.{i}.0/24")));
        let cluster = if before[i] == "127.0.2.1" { "a" } else { "b" };
        assert!(
            text.contains(&format!("answered with {cluster} (SCOPE PREFIX-LENGTH 24)"))
                && text.contains(&format!("subnet 10.9.{i}.0/24 hashes (weighted rendezvous)")),
            "subnet 10.9.{i}.0/24 is answered {}: {text}",
            before[i]
        );
    }
    // b fails: its subnets move to a; a's stay where they are.
    responders[1].stop();
    let mut during = Vec::new();
    eventually("b's subnets leave b", || {
        during = answers();
        saw(format!("{during:?}"));
        on(&during, "127.0.2.2") == 0
    })
    .await;
    for (b, d) in before.iter().zip(&during) {
        if b == "127.0.2.1" {
            assert_eq!(d, "127.0.2.1", "a subnet of a moved while b failed");
        }
    }
    // b returns: the same subnets come back to it.
    responders[1].resume().await.unwrap();
    let mut after = Vec::new();
    eventually("b's subnets return to b", || {
        after = answers();
        saw(format!("{after:?}"));
        after == before
    })
    .await;
    federation.stop();
}

/// `maxAnswers` and stickiness inside a Failover group, end to end:
/// `nginx` as `All` with `maxAnswers: 2` answers 2 of its 3 clusters each
/// time (all 3 over many answers) and `fedns explain` says so; `api` as
/// Failover over the group {a, b} with `stickiness: ClientSubnet` answers
/// one of a and b per subnet (never c, in the last group), b's subnets
/// move to a when b fails, a's stay, and b's come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_answers_and_a_sticky_failover_group() {
    use kube::api::{Patch, PatchParams};
    let (
        ProbedFederation {
            responders,
            federation,
            dir,
        },
        dns,
        _controller,
    ) = routed("limits").await;
    let (nginx, api) = (format!("nginx.{ZONE}"), format!("api.{ZONE}"));
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let patch = |routing: serde_json::Value| Patch::Merge(serde_json::json!({"spec": {"routing": routing}}));
    records
        .patch(
            "nginx",
            &PatchParams::default(),
            &patch(serde_json::json!({"policy": "All", "fallback": null, "maxAnswers": 2})),
        )
        .await
        .unwrap();
    records
        .patch(
            "api",
            &PatchParams::default(),
            &patch(serde_json::json!({"priorities": [["us-east-1", "us-west-2"]], "stickiness": "ClientSubnet"})),
        )
        .await
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let took = eventually("nginx answers 2 addresses at a time, all 3 over many answers", || {
        seen.clear();
        for _ in 0..30 {
            let got = dig_with(dns, &nginx, &[]);
            if got.len() != 2 {
                saw(format!("{got:?}"));
                return false;
            }
            seen.extend(got);
        }
        saw(format!("{seen:?}"));
        seen.len() == 3
    })
    .await;
    println!("maxAnswers 2 answered after {took:?}: {seen:?}");
    let kubeconfig = dir.join("host.kubeconfig");
    let text = explain_cli(&kubeconfig, &nginx, None);
    assert!(
        text.contains("maxAnswers 2: each answer holds at most 2 A address(es) of the chosen set (this name has 3)"),
        "{text}"
    );

    let answers = || one_per_subnet(dns, &api, "10.8");
    let mut before = Vec::new();
    eventually("every subnet answers one cluster of {a, b}, the same twice", || {
        before = answers();
        saw(format!("{before:?}"));
        before.iter().all(|a| a == "127.0.2.1" || a == "127.0.2.2") && answers() == before
    })
    .await;
    let on = |answers: &[String], ip: &str| answers.iter().filter(|a| *a == ip).count();
    println!(
        "40 subnets: a {} b {}",
        on(&before, "127.0.2.1"),
        on(&before, "127.0.2.2")
    );
    assert!(
        on(&before, "127.0.2.1") > 0 && on(&before, "127.0.2.2") > 0,
        "{before:?}"
    );
    let text = explain_cli(&kubeconfig, &api, Some("10.8.0.0/24"));
    let cluster = if before[0] == "127.0.2.1" { "a" } else { "b" };
    assert!(
        text.contains(&format!("answered with {cluster} (SCOPE PREFIX-LENGTH 24)"))
            && text.contains("Failover with ClientSubnet stickiness"),
        "{text}"
    );
    responders[1].stop();
    let mut during = Vec::new();
    eventually("b's subnets move to a", || {
        during = answers();
        saw(format!("{during:?}"));
        during.iter().all(|a| a == "127.0.2.1")
    })
    .await;
    responders[1].resume().await.unwrap();
    let mut after = Vec::new();
    eventually("b's subnets return to b", || {
        after = answers();
        saw(format!("{after:?}"));
        after == before
    })
    .await;
    federation.stop();
}

/// The Weighted answer of one query over UDP (hickory-proto), in-process
/// so hundreds fit in a drain step.
fn weighted_answer(port: u16, name: &str) -> Option<String> {
    use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query};
    use fedns_dnsserver::hickory_proto::rr::{Name, RecordType};
    let mut message = Message::new(11, MessageType::Query, OpCode::Query);
    message.add_query(Query::query(Name::from_ascii(format!("{name}.")).ok()?, RecordType::A));
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    socket.send_to(&message.to_vec().ok()?, ("127.0.0.1", port)).ok()?;
    let mut buf = [0u8; 1500];
    let (len, _) = socket.recv_from(&mut buf).ok()?;
    let response = Message::from_vec(&buf[..len]).ok()?;
    response.answers.first().map(|r| r.data.to_string())
}

/// The `aws/weight` of each cluster of `name` in DNSEndpoint `service-web`.
async fn published_weights(endpoints: &Api<DNSEndpoint>, name: &str) -> std::collections::BTreeMap<String, i64> {
    let Ok(endpoint) = endpoints.get("service-web").await else {
        return Default::default();
    };
    endpoint
        .spec
        .endpoints
        .iter()
        .filter(|e| e.dns_name == name && e.record_type == fedns_api::RecordType::A)
        .filter_map(|e| {
            let weight = e.provider_specific.iter().find(|p| p.name == "aws/weight")?;
            Some((e.set_identifier.clone(), weight.value.parse().ok()?))
        })
        .collect()
}

/// `cordon` with `drainSeconds` lowers a Weighted cluster's share in steps:
/// a (weight 1) and b (weight 3) share `web`; a is cordoned
/// with drainSeconds 20. At each step seen, 300 answers follow the
/// published weights (χ², 1 degree of freedom, p = 0.001: < 10.83), a's
/// share falls step by step, and a is gone after the drain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cordon_with_drain_seconds_lowers_a_weighted_share_in_steps() {
    let (
        ProbedFederation {
            responders: _responders,
            federation,
            ..
        },
        dns,
        _controller,
    ) = routed("drain").await;
    let web = format!("web.{ZONE}");
    becomes(dns, &web, &[], &["127.0.2.2"], "Weighted published").await;
    let host = client_of(&federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    let members: Api<fedns_api::MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    members
        .patch(
            "a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"cordoned": true, "drainSeconds": 20}})),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let mut steps: Vec<(i64, i64, usize, f64)> = Vec::new();
    loop {
        let before = published_weights(&endpoints, &web).await;
        let (Some(&a), Some(&b)) = (before.get("a"), before.get("b")) else {
            // a left: the drain is over.
            if !steps.is_empty() && !before.contains_key("a") && started.elapsed() > Duration::from_secs(18) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "a never drained: {before:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if a * 10 >= b * 10 / 3 || steps.iter().any(|s| s.0 == a) || a + b == 0 {
            // Not draining yet (weights 1:3 unscaled), or this step is done.
            assert!(started.elapsed() < Duration::from_secs(60), "no drain step: {before:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        // The DNSEndpoint is written before the server publishes it: give
        // the publish time to land, so the sample is of this step only.
        tokio::time::sleep(Duration::from_millis(500)).await;
        if published_weights(&endpoints, &web).await != before {
            continue;
        }
        let dns_port = dns;
        let name = web.clone();
        let answers: Vec<Option<String>> =
            tokio::task::spawn_blocking(move || (0..300).map(|_| weighted_answer(dns_port, &name)).collect())
                .await
                .unwrap();
        let after = published_weights(&endpoints, &web).await;
        if after != before {
            continue; // the step changed while sampling
        }
        let from_a = answers.iter().filter(|a| a.as_deref() == Some("127.0.2.1")).count();
        let from_b = answers.iter().filter(|a| a.as_deref() == Some("127.0.2.2")).count();
        let n = (from_a + from_b) as f64;
        let expected_a = n * a as f64 / (a + b) as f64;
        let expected_b = n - expected_a;
        let chi2 = if a == 0 {
            assert_eq!(from_a, 0, "weight 0: no answer from a");
            0.0
        } else {
            (from_a as f64 - expected_a).powi(2) / expected_a + (from_b as f64 - expected_b).powi(2) / expected_b
        };
        println!(
            "{:>5.1} s: weights a {a} b {b}: a answered {from_a} of {n} (expected {expected_a:.0}), χ² {chi2:.2}",
            started.elapsed().as_secs_f64()
        );
        assert!(chi2 < 10.83, "answers do not follow weights {a}:{b}: χ² {chi2:.2}");
        steps.push((a, b, from_a, chi2));
    }
    println!("{} drain steps observed in {:?}", steps.len(), started.elapsed());
    assert!(steps.len() >= 5, "at least half of the ten steps seen: {steps:?}");
    assert!(
        steps.windows(2).all(|w| w[1].0 < w[0].0),
        "a's weight only falls: {steps:?}"
    );
    // After the drain: b alone.
    becomes(dns, &web, &[], &["127.0.2.2"], "after the drain").await;
    for _ in 0..50 {
        assert_eq!(weighted_answer(dns, &web).as_deref(), Some("127.0.2.2"));
    }
}
