//! Health that watches the traffic path, end to end: `fedns controller`
//! against three emulated members whose Service load balancers are real
//! HTTP responders on loopback (127.0.2.1-3), answers read with `dig`.
//! Each step waits with a 30 s deadline and prints the time it took.
//!
//! LB broken → out; back → in; API down + LB up → stays (ServingLastKnown);
//! API down + LB down → out; every LB down → fail-open (all served, Ready
//! False AllUnhealthy, never NXDOMAIN); every API down too → still served.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use fedns_api::ServiceDNSRecord;
use fedns_controller::federation::Federation;
use fedns_standins::responder::Responder;
use kube::api::Api;
use serde_json::json;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

pub(crate) fn member_yaml(region: &str, ip: &str, port: u16) -> String {
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {region}a}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: {port}}}]}}
status: {{loadBalancer: {{ingress: [{{ip: "{ip}"}}]}}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-abcde
  namespace: ns
  labels: {{kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: true}}
"#
    )
}

/// Members `members` (name, region), each seeded with `objects(region,
/// ip, port)` (e.g. [`member_yaml`]: Service `ns/nginx` behind a load
/// balancer at `ip`) where `ip` = 127.0.`subnet`.(i+1) is answered by a
/// real HTTP responder (one port for all), registered with 1 s probes
/// (failureThreshold 2); `host_yaml` seeded into the host.
pub(crate) struct ProbedFederation {
    pub responders: Vec<Responder>,
    pub federation: Federation,
    pub dir: std::path::PathBuf,
}

pub(crate) async fn probed_federation(
    tag: &str,
    subnet: u8,
    members: &[(&str, &str)],
    objects: fn(&str, &str, u16) -> String,
    host_yaml: &str,
) -> ProbedFederation {
    let first = Responder::start(format!("127.0.{subnet}.1:0").parse().unwrap(), None)
        .await
        .unwrap();
    let port = first.address().port();
    let mut responders = vec![first];
    for i in 2..=members.len() {
        let ip = format!("127.0.{subnet}.{i}");
        responders.push(
            Responder::start(SocketAddr::new(ip.parse().unwrap(), port), None)
                .await
                .unwrap(),
        );
    }
    let dir = temp_dir(tag);
    let names: Vec<&str> = members.iter().map(|m| m.0).collect();
    let federation = Federation::start(&dir, "fedns-system", &names).await.unwrap();
    for (i, (name, region)) in members.iter().enumerate() {
        let ip = format!("127.0.{subnet}.{}", i + 1);
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &objects(region, &ip, port))
            .unwrap();
        federation
            .register(
                name,
                json!({"healthCheck": {"periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 2, "successThreshold": 1}}),
            )
            .unwrap();
    }
    federation.host.seed_yaml("host", host_yaml).unwrap();
    ProbedFederation {
        responders,
        federation,
        dir,
    }
}

/// [`MYFED_HOST_YAML`] with the Domain's allowance for probes of loopback
/// load balancers (`spec.probeAllowedNetworks`): the tests' responders
/// are on loopback, which is refused otherwise.
pub(crate) const PROBED_HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, probeAllowedNetworks: [127.0.0.0/8]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
"#;

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, probeAllowedNetworks: [127.0.0.0/8]}
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
"#;

async fn answers_become(port: u16, want: &[&str], what: &str) -> Duration {
    let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    let started = Instant::now();
    loop {
        let got = dig(port, GLOBAL, "A", false);
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

async fn condition(api: &Api<ServiceDNSRecord>, type_: &str) -> Option<(String, String)> {
    let record = api.get("nginx").await.ok()?;
    let status = record.status?;
    fedns_api::conditions::get(&status.conditions, type_).map(|c| (c.status.clone(), c.reason.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_follows_the_traffic_path_and_fails_open() {
    let ProbedFederation {
        responders,
        federation,
        dir,
    } = probed_federation(
        "health",
        2,
        &[("a", "region-a"), ("b", "region-b"), ("c", "region-c")],
        member_yaml,
        HOST_YAML,
    )
    .await;
    let dns_port = free_port();
    let metrics_port = free_port();
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host, "ns");
    let all = ["127.0.2.1", "127.0.2.2", "127.0.2.3"];
    answers_become(dns_port, &all, "published").await;

    // A dead load balancer leaves; back, it returns.
    responders[0].stop();
    answers_become(dns_port, &["127.0.2.2", "127.0.2.3"], "LB a stopped").await;
    // `fedns explain` says why, from the host cluster (status written
    // shortly after the answer changed: wait for it).
    let kubeconfig = dir.join("host.kubeconfig");
    let started = Instant::now();
    let explained = loop {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
            .args(["explain", GLOBAL, "--kubeconfig", kubeconfig.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("load balancer failing its probes: 127.0.2.1") {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "fedns explain after 30 s:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("fedns explain:\n{explained}");
    assert!(explained.contains("record ServiceDNSRecord ns/nginx"), "{explained}");
    let (code, body) = http_get(&format!("http://127.0.0.1:{metrics_port}/debug/explain?name={GLOBAL}")).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("127.0.2.1 Down"), "{body}");
    assert!(
        body.contains("endpoints ready"),
        "the controller adds its member caches: {body}"
    );
    responders[0].resume().await.unwrap();
    answers_become(dns_port, &all, "LB a back").await;

    // API server down, load balancer passing: stays (static stability).
    let b = federation.member("b").unwrap();
    b.stop();
    let started = Instant::now();
    while condition(&records, "ServingLastKnown").await != Some(("True".into(), "APIServerUnreachable".into())) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no ServingLastKnown=True within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("API b down noticed after {:?}", started.elapsed());
    assert_eq!(dig(dns_port, GLOBAL, "A", false), all, "b stays while its LB passes");
    // API down and load balancer down: out.
    responders[1].stop();
    answers_become(dns_port, &["127.0.2.1", "127.0.2.3"], "API b down, LB b stopped").await;
    responders[1].resume().await.unwrap();
    answers_become(dns_port, &all, "LB b back (API still down)").await;

    // Every load balancer down: health would empty the name; every cluster
    // is served as if healthy, never NXDOMAIN.
    for responder in &responders {
        responder.stop();
    }
    let started = Instant::now();
    while condition(&records, "Ready").await != Some(("False".into(), "AllUnhealthy".into())) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no Ready=False AllUnhealthy within 30 s"
        );
        assert_ne!(dig_status(dns_port, GLOBAL, "A"), "NXDOMAIN");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("fail-open engaged after {:?}", started.elapsed());
    // The condition is written with the DNSEndpoint; the answer follows
    // once the publisher has published it (after its debounce), and until
    // then is the last one health left, never NXDOMAIN.
    let engaged = Instant::now();
    while dig(dns_port, GLOBAL, "A", false) != all {
        assert_ne!(dig_status(dns_port, GLOBAL, "A"), "NXDOMAIN");
        assert!(
            engaged.elapsed() < Duration::from_secs(30),
            "fail-open serves every cluster: still {:?} after 30 s",
            dig(dns_port, GLOBAL, "A", false)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "fail-open answered every cluster {:?} after the condition",
        engaged.elapsed()
    );
    // Every API server down as well: still the last-known set.
    federation.member("a").unwrap().stop();
    federation.member("c").unwrap().stop();
    for _ in 0..50 {
        assert_eq!(
            dig(dns_port, GLOBAL, "A", false),
            all,
            "the last-known set, never NXDOMAIN"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    federation.stop();
}

/// HTTPS checks trust exactly the CA bundle the record names
/// (`healthCheck.caCertificateRef`, a ConfigMap in its namespace): a
/// load balancer whose certificate another CA signed is out until the
/// bundle holds that CA too; a bundle that cannot be read turns the check
/// off and says why (`InputValid=False`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_checks_trust_the_ca_bundle_the_record_names() {
    let (ca_a, ca_b) = (
        fedns_loopback::tls::generate("lb-a").unwrap(),
        fedns_loopback::tls::generate("lb-b").unwrap(),
    );
    let first = Responder::start("127.0.41.1:0".parse().unwrap(), Some(ca_a.server_config.clone()))
        .await
        .unwrap();
    let port = first.address().port();
    let _second = Responder::start(
        SocketAddr::new("127.0.41.2".parse().unwrap(), port),
        Some(ca_b.server_config.clone()),
    )
    .await
    .unwrap();
    let dir = temp_dir("health-ca");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, ip) in [("a", "127.0.41.1"), ("b", "127.0.41.2")] {
        let member = federation.member(name).unwrap();
        member
            .seed_yaml(name, &member_yaml(&format!("region-{name}"), ip, port))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    let bundle = |pems: &[&str]| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lb-ca", "namespace": "ns"},
            "data": {"ca.crt": pems.concat()}})
    };
    let host_yaml = format!(
        "{PROBED_HOST_YAML}---\n{}\n---\n{}\n",
        r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec:
  domainRef: myfed
  recordTTL: 5
  healthCheck: {protocol: HTTPS, host: localhost, caCertificateRef: {name: lb-ca}, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 2, successThreshold: 1}
"#,
        serde_yaml_ng::to_string(&bundle(&[&ca_a.ca_pem])).unwrap()
    );
    federation.host.seed_yaml("host", &host_yaml).unwrap();
    let dns_port = free_port();
    let _controller = spawn_controller(&dir, dns_port, free_port(), &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    answers_become(dns_port, &["127.0.41.1"], "only a's certificate is trusted").await;

    // The bundle gains b's CA; the record is touched so it is read now
    // rather than at the next resync.
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(host.clone(), "ns");
    let patch = kube::api::PatchParams::default();
    maps.patch(
        "lb-ca",
        &patch,
        &kube::api::Patch::Merge(bundle(&[&ca_a.ca_pem, &ca_b.ca_pem])),
    )
    .await
    .unwrap();
    let touch = |n: u32| json!({"metadata": {"annotations": {"test/touch": n.to_string()}}});
    records
        .patch("nginx", &patch, &kube::api::Patch::Merge(touch(1)))
        .await
        .unwrap();
    answers_become(dns_port, &["127.0.41.1", "127.0.41.2"], "both CAs trusted").await;
    // A changed check is a new target, counted as passing until its first
    // probes: b must still be there after three periods.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        dig(dns_port, GLOBAL, "A", false),
        ["127.0.41.1", "127.0.41.2"],
        "b passes its probes with its CA trusted"
    );

    // A bundle that is not there: the check is off, and the record says why.
    records
        .patch(
            "nginx",
            &patch,
            &kube::api::Patch::Merge(json!({"spec": {"healthCheck": {"caCertificateRef": {"name": "missing"}}}})),
        )
        .await
        .unwrap();
    let started = Instant::now();
    loop {
        let record = records.get("nginx").await.unwrap();
        let invalid = record.status.as_ref().and_then(|s| {
            fedns_api::conditions::get(&s.conditions, "InputValid")
                .filter(|c| c.status == "False")
                .map(|c| c.message.clone())
        });
        if let Some(message) = invalid {
            println!("InputValid=False after {:?}: {message}", started.elapsed());
            assert!(message.contains("ConfigMap ns/missing not found"), "{message}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no InputValid=False within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    federation.stop();
}

/// Issue #57 item 4: load balancers on loopback (as the tests' responders
/// are) are not probed unless the record's Domain allows it
/// (`spec.probeAllowedNetworks`). Refused, each is Down with the reason in
/// `status.probes[]` and explain, and no probe reaches it (both refused:
/// fail-open serves both, as for any failing address). Allowed for one
/// address, that one alone is probed and answered; allowed for the whole
/// of loopback, both are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_load_balancers_are_probed_only_where_the_domain_allows() {
    const HOST: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
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
"#;
    let ProbedFederation {
        responders,
        federation,
        dir,
    } = probed_federation(
        "health-refused",
        44,
        &[("a", "region-a"), ("b", "region-b")],
        member_yaml,
        HOST,
    )
    .await;
    let dns_port = free_port();
    let metrics_port = free_port();
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let domains: Api<fedns_api::Domain> = Api::namespaced(host, "fedns-system");
    let refusal =
        |ip: &str| format!("probe target {ip} is loopback; not probed (Domain spec.probeAllowedNetworks can allow it)");
    let probes = || async {
        records
            .get("nginx")
            .await
            .ok()
            .and_then(|r| r.status)
            .map(|s| s.probes)
            .unwrap_or_default()
    };

    // No allowance: both refused, Down, saying why; nothing probed.
    let started = Instant::now();
    loop {
        let probes = probes().await;
        let said = |ip: &str| {
            probes
                .iter()
                .any(|p| p.address == ip && p.state == "Down" && p.last_error.as_deref() == Some(refusal(ip).as_str()))
        };
        if said("127.0.44.1") && said("127.0.44.2") {
            println!("both refused after {:?}", started.elapsed());
            break;
        }
        assert!(started.elapsed() < EVENTUALLY, "not refused: {probes:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    explained(metrics_port, GLOBAL, &refusal("127.0.44.2")).await;
    // Both failing: fail-open serves both, never NXDOMAIN.
    answers_become(dns_port, &["127.0.44.1", "127.0.44.2"], "fail-open over two refused").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        (responders[0].requests(), responders[1].requests()),
        (0, 0),
        "a refused load balancer was probed"
    );

    // Allowed for 127.0.44.1 alone: it is probed and answered alone.
    let allow = |networks: &[&str]| kube::api::Patch::Merge(json!({"spec": {"probeAllowedNetworks": networks}}));
    domains
        .patch("myfed", &kube::api::PatchParams::default(), &allow(&["127.0.44.1/32"]))
        .await
        .unwrap();
    answers_become(dns_port, &["127.0.44.1"], "127.0.44.1 allowed").await;
    eventually("the allowed load balancer is probed", || responders[0].requests() > 0).await;
    assert_eq!(responders[1].requests(), 0, "the other is still refused");

    // Allowed for the whole of loopback: both.
    domains
        .patch("myfed", &kube::api::PatchParams::default(), &allow(&["127.0.0.0/8"]))
        .await
        .unwrap();
    answers_become(dns_port, &["127.0.44.1", "127.0.44.2"], "loopback allowed").await;
    let started = Instant::now();
    loop {
        let probes = probes().await;
        let up = probes.len() == 2 && probes.iter().all(|p| p.state == "Up" && p.last_error.is_none());
        if up && responders[1].requests() > 0 {
            break;
        }
        assert!(started.elapsed() < EVENTUALLY, "not both probed and Up: {probes:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    federation.stop();
}
