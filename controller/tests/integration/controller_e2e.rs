//! `fedns controller` against an emulated federation: three members in
//! two regions and three zones, plus a host cluster, through real
//! kubeconfigs; answers checked with `dig`. Failover waits with a 30 s
//! deadline and prints the time it took (the target, measured in bench/,
//! is under 5 s).

use std::time::Duration;

use crate::common::*;
use fedns_api::{DNSEndpoint, MemberCluster, ServiceDNSRecord};
use fedns_controller::federation::Federation;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

pub(crate) fn member_yaml(region: &str, zone: &str, ips: &[&str]) -> String {
    let ingress: Vec<String> = ips.iter().map(|ip| format!("{{ip: \"{ip}\"}}")).collect();
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{zone}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {zone}}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: ns}}
spec: {{type: LoadBalancer, ports: [{{port: 80}}]}}
status: {{loadBalancer: {{ingress: [{ingress}]}}}}
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
ports: [{{port: 80}}]
"#,
        ingress = ingress.join(", ")
    )
}

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, recordTTL: 30, dnsPrefix: www}
"#;

struct Setup {
    federation: Federation,
    dns_port: u16,
    metrics_port: u16,
    _controller: Process,
}

async fn setup(extra_members: &[(&str, &str, &str, &[&str])]) -> Setup {
    setup_with(extra_members, json!({})).await
}

/// As [`setup`], with `member_spec` merged into every MemberCluster's spec.
async fn setup_with(extra_members: &[(&str, &str, &str, &[&str])], member_spec: serde_json::Value) -> Setup {
    setup_with_args(extra_members, member_spec, &[]).await
}

/// As [`setup_with`], with `args` added to the controller's command line.
async fn setup_with_args(
    extra_members: &[(&str, &str, &str, &[&str])],
    member_spec: serde_json::Value,
    args: &[&str],
) -> Setup {
    let dir = temp_dir("controller");
    let mut names = vec!["east-a", "east-b", "west"];
    names.extend(extra_members.iter().map(|m| m.0));
    let federation = Federation::start(&dir, "fedns-system", &names).await.unwrap();
    let seeds: Vec<(&str, &str, &str, &[&str])> = vec![
        ("east-a", "us-east-1", "us-east-1a", &["203.0.113.10"]),
        ("east-b", "us-east-1", "us-east-1b", &["203.0.113.20"]),
        ("west", "us-west-2", "us-west-2a", &["198.51.100.10", "2001:db8::10"]),
    ];
    for (name, region, zone, ips) in seeds.iter().chain(extra_members.iter()) {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &member_yaml(region, zone, ips))
            .unwrap();
        federation.register(name, member_spec.clone()).unwrap();
    }
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let dns_port = free_port();
    let metrics_port = free_port();
    let kubeconfig = dir.join("host.kubeconfig");
    let dns = format!("127.0.0.1:{dns_port}");
    let metrics = format!("127.0.0.1:{metrics_port}");
    let mut command = vec![
        "controller",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--dns-listen",
        &dns,
        "--metrics-addr",
        &metrics,
        "--udp-workers",
        "1",
    ];
    command.extend_from_slice(args);
    let controller = spawn_fedns(&command);
    Setup {
        federation,
        dns_port,
        metrics_port,
        _controller: controller,
    }
}

/// Sets MemberCluster `name`'s `spec.cordoned`.
async fn set_cordoned(clusters: &Api<MemberCluster>, name: &str, value: bool) {
    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"cordoned": value}})),
        )
        .await
        .unwrap();
}

fn table(endpoint: &DNSEndpoint) -> Vec<String> {
    let mut rows: Vec<String> = endpoint
        .spec
        .endpoints
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    rows.sort();
    rows
}

/// A cordon takes a member out at once whatever its probe period, and an
/// uncordon right after brings it back at once: records are queued on the
/// spec change itself. (They were queued only when the prober next saw a
/// health change: an uncordon that came before the prober saw the cordon
/// changed no health, queued nothing, and left the member out until the
/// next resync; the sandbox e2e caught it under load.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_and_uncordon_apply_at_once_with_a_long_probe_period() {
    let s = setup_with(
        &[],
        json!({"healthCheck": {"periodSeconds": 60, "successThreshold": 1}}),
    )
    .await;
    let port = s.dns_port;
    eventually("every member answers", || dig(port, GLOBAL, "A", false).len() == 3).await;
    let host = client_of(&s.federation.host).await;
    let clusters: Api<MemberCluster> = Api::namespaced(host, "fedns-system");
    let cordon = |value: bool| set_cordoned(&clusters, "east-a", value);
    for round in 1..=3 {
        cordon(true).await;
        let took = eventually("a cordoned member leaves", || {
            dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.20"]
        })
        .await;
        assert!(
            took < Duration::from_secs(10),
            "round {round}: a period is 60 s; took {took:?}"
        );
        // At once, before the prober could have seen the cordon.
        cordon(false).await;
        let took = eventually("an uncordoned member returns", || {
            dig(port, GLOBAL, "A", false).len() == 3
        })
        .await;
        assert!(
            took < Duration::from_secs(10),
            "round {round}: a period is 60 s; took {took:?}"
        );
    }
    // The Ready condition follows the spec without waiting for a probe.
    cordon(true).await;
    let ready_reason = || async {
        let cluster = clusters.get("east-a").await.unwrap();
        let status = cluster.status.unwrap_or_default();
        fedns_api::conditions::get(&status.conditions, "Ready").map(|c| c.reason.clone())
    };
    let started = std::time::Instant::now();
    while ready_reason().await.as_deref() != Some("Cordoned") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "Ready is not Cordoned 10 s after the cordon (a period is 60 s)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("Ready=False Cordoned after {:?}", started.elapsed());
}

/// A member's region comes from its Nodes' labels, and follows them: a
/// Node relabelled into another region moves the member's answers to the
/// new region's names. (The effective topology is kept between reconciles
/// until a Node event or a spec override changes it; this is the case a
/// stale copy would miss.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_relabelled_moves_its_member_to_the_new_region() {
    let s = setup(&[]).await;
    let port = s.dns_port;
    let old_region = "nginx.ns.myfed.svc.us-west-2.example.com";
    let new_region = "nginx.ns.myfed.svc.eu-west-1.example.com";
    eventually("west answers under us-west-2", || {
        dig(port, old_region, "A", false) == ["198.51.100.10"]
    })
    .await;
    let west = client_of(s.federation.member("west").unwrap()).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(west);
    let labels = json!({"metadata": {"labels": {
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": "eu-west-1a",
    }}});
    nodes
        .patch("node-us-west-2a", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    eventually("west answers under eu-west-1, and no longer under us-west-2", || {
        dig(port, new_region, "A", false) == ["198.51.100.10"] && dig(port, old_region, "A", false).is_empty()
    })
    .await;
    // East is untouched.
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1.example.com", "A", false),
        ["203.0.113.10", "203.0.113.20"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_and_fails_over() {
    let s = setup(&[]).await;
    let host = client_of(&s.federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    let expected = vec![
        "nginx.ns.myfed.svc.example.com A 198.51.100.10,203.0.113.10,203.0.113.20",
        "nginx.ns.myfed.svc.example.com AAAA 2001:db8::10",
        "nginx.ns.myfed.svc.us-east-1.example.com A 203.0.113.10,203.0.113.20",
        "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com A 203.0.113.10",
        "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com A 203.0.113.20",
        "nginx.ns.myfed.svc.us-west-2.example.com A 198.51.100.10",
        "nginx.ns.myfed.svc.us-west-2.example.com AAAA 2001:db8::10",
        "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com A 198.51.100.10",
        "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com AAAA 2001:db8::10",
        "www.example.com CNAME nginx.ns.myfed.svc.example.com",
    ];
    let mut last = Vec::new();
    for _ in 0..600 {
        if let Ok(e) = endpoints.get("service-nginx").await {
            last = table(&e);
            if last == expected {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last, expected, "DNSEndpoint service-nginx");
    let dnsendpoint = endpoints.get("service-nginx").await.unwrap();
    let owner = &dnsendpoint.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ServiceDNSRecord", "nginx")
    );

    let port = s.dns_port;
    eventually("the embedded server answers the global name", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.10", "203.0.113.20"]
    })
    .await;
    assert_eq!(dig(port, GLOBAL, "AAAA", true), ["2001:db8::10"]);
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1.example.com", "A", false),
        ["203.0.113.10", "203.0.113.20"]
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com", "A", false),
        ["203.0.113.20"]
    );
    assert_eq!(
        dig(port, "www.example.com", "A", false).len(),
        4,
        "CNAME plus three addresses"
    );

    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let record = records.get("nginx").await.unwrap();
    let status = record.status.unwrap();
    assert_eq!(status.dns.len(), 3);
    assert_eq!(status.domain.as_deref(), Some("example.com"));
    assert!(fedns_api::conditions::is_true(&status.conditions, "Ready"));
    let clusters: Api<MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    let west_status = clusters.get("west").await.unwrap().status.unwrap();
    assert_eq!(west_status.region.as_deref(), Some("us-west-2"));
    assert_eq!(west_status.zones, ["us-west-2a"]);
    assert!(west_status.kubernetes_version.is_some());
    assert!(west_status.last_probe_time.is_some());

    // 1. A member's API server stops: it leaves every answer; its names fall back by CNAME.
    let west = s.federation.member("west").unwrap().clone();
    west.stop();
    let took = eventually("failover after the west API server stops", || {
        dig(port, GLOBAL, "A", false) == ["203.0.113.10", "203.0.113.20"]
    })
    .await;
    println!("failover time: {took:?}");
    assert!(dig(port, GLOBAL, "AAAA", false).is_empty());
    let region = dig(port, "nginx.ns.myfed.svc.us-west-2.example.com", "A", false);
    assert_eq!(
        region,
        ["203.0.113.10", "203.0.113.20", "nginx.ns.myfed.svc.example.com."]
    );
    let zone = dig(port, "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com", "A", false);
    assert!(
        zone.contains(&"nginx.ns.myfed.svc.us-west-2.example.com.".to_string()),
        "{zone:?}"
    );
    assert_eq!(
        dig(port, "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com", "A", false),
        ["203.0.113.10"]
    );
    let reason = clusters.get("west").await.unwrap().status.unwrap();
    let ready = fedns_api::conditions::get(&reason.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ClusterNotReachable")
    );
    west.resume().await.unwrap();
    eventually("west comes back after its API server returns", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 2. Endpoints become not ready in east-b.
    let east_b = s.federation.member("east-b").unwrap().clone();
    let slices_info = east_b
        .store()
        .resource("discovery.k8s.io", "v1", "endpointslices")
        .unwrap();
    let set_ready = |ready: bool| {
        east_b
            .store()
            .patch(
                &slices_info,
                Some("ns"),
                "nginx-abcde",
                fedns_kube_emulator::PatchKind::Json,
                json!([{"op": "replace", "path": "/endpoints/0/conditions/ready", "value": ready}]),
                None,
                fedns_kube_emulator::Target::Main,
            )
            .unwrap()
    };
    set_ready(false);
    eventually("east-b leaves when its endpoints are not ready", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.10"]
    })
    .await;
    set_ready(true);
    eventually("east-b returns with ready endpoints", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 3. The load balancer address disappears in east-a.
    let east_a = s.federation.member("east-a").unwrap().clone();
    let services_info = east_a.store().resource("", "v1", "services").unwrap();
    let set_lb = |ingress: serde_json::Value| {
        east_a
            .store()
            .patch(
                &services_info,
                Some("ns"),
                "nginx",
                fedns_kube_emulator::PatchKind::Merge,
                json!({"status": {"loadBalancer": {"ingress": ingress}}}),
                None,
                fedns_kube_emulator::Target::Status,
            )
            .unwrap()
    };
    set_lb(json!([]));
    eventually("east-a leaves without a load balancer address", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.20"]
    })
    .await;
    set_lb(json!([{"ip": "203.0.113.10"}]));
    eventually("east-a returns with its address", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 4. Cordon and uncordon.
    let cordon = |value: bool| set_cordoned(&clusters, "east-a", value);
    cordon(true).await;
    eventually("a cordoned cluster leaves", || {
        dig(port, GLOBAL, "A", false) == ["198.51.100.10", "203.0.113.20"]
    })
    .await;
    let cordoned = clusters.get("east-a").await.unwrap().status.unwrap();
    assert_eq!(
        fedns_api::conditions::get(&cordoned.conditions, "Ready")
            .unwrap()
            .reason,
        "Cordoned"
    );
    cordon(false).await;
    eventually("an uncordoned cluster returns", || {
        dig(port, GLOBAL, "A", false).len() == 3
    })
    .await;

    // 5. A member deleted.
    // (after it: 6. the record deleted takes its DNSEndpoint and names away)
    clusters.delete("west", &DeleteParams::default()).await.unwrap();
    eventually("a deleted member leaves", || {
        dig(port, GLOBAL, "A", false) == ["203.0.113.10", "203.0.113.20"]
    })
    .await;

    // 6. Deleting the record deletes its DNSEndpoint and its names.
    records.delete("nginx", &DeleteParams::default()).await.unwrap();
    eventually("a deleted record's names disappear", || {
        dig_status(port, GLOBAL, "A") == "NXDOMAIN"
    })
    .await;
    assert!(
        endpoints.get("service-nginx").await.is_err(),
        "DNSEndpoint service-nginx still exists"
    );

    // Metrics.
    let (code, body) = http_get(&format!("http://127.0.0.1:{}/metrics", s.metrics_port)).await;
    assert_eq!(code, 200);
    for metric in [
        "fedns_member_clusters{state=\"ready\"}",
        "fedns_member_probe_duration_seconds_bucket",
        "fedns_reconciles_total",
        "fedns_dnsendpoint_writes_total",
        "fedns_change_to_dnsendpoint_write_seconds_bucket",
        "fedns_dns_queries_total",
    ] {
        assert!(body.contains(metric), "{metric} missing from /metrics");
    }
    s.federation.stop();
}

/// Bad member configurations and bad load balancer values are reported
/// while every other record keeps being served; host names resolve through
/// `--resolver`; Ingress records, `externalName` and
/// `allowServiceWithoutEndpoints` work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_and_other_record_shapes() {
    use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record};
    use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneContent, ZoneStore};

    // A resolver on loopback that knows the ELB-style name.
    let zones = ZoneStore::new();
    let mut net = ZoneContent::new(Name::from_ascii("example.net.").unwrap());
    net.records.push(Record::from_rdata(
        Name::from_ascii("elb-1.example.net.").unwrap(),
        5,
        RData::A("192.0.2.7".parse::<std::net::Ipv4Addr>().unwrap().into()),
    ));
    zones.publish(vec![net]);
    let resolver = DnsServer::start(
        ServerConfig {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            udp_workers: 1,
            ..ServerConfig::default()
        },
        zones,
        DnsMetrics::new(),
    )
    .await
    .unwrap();

    let dir = temp_dir("bad-inputs");
    let mut federation = Federation::start(&dir, "fedns-system", &["good", "wrong-token"])
        .await
        .unwrap();
    federation
        .member("good")
        .unwrap()
        .seed_yaml(
            "good",
            r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}}
---
apiVersion: v1
kind: Service
metadata: {name: nginx, namespace: ns}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: not-an-ip}, {ip: 203.0.113.10}, {hostname: elb-1.example.net}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: nginx-1, namespace: ns, labels: {kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: v1
kind: Service
metadata: {name: noeps, namespace: ns}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: 203.0.113.30}]}}
---
apiVersion: v1
kind: Service
metadata: {name: noeps-strict, namespace: ns}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: 203.0.113.31}]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: ns}
spec: {rules: [{host: shop.example.com}]}
status: {loadBalancer: {ingress: [{ip: 203.0.113.50}, {ip: "2001:db8::50"}]}}
"#,
        )
        .unwrap();
    federation.register("good", json!({})).unwrap();
    // Bad members: a wrong token, an unreachable endpoint, a garbage CA, a missing Secret.
    federation.register("wrong-token", json!({})).unwrap();
    let host_ns = "fedns-system";
    federation
        .host
        .seed_yaml(
            "bad members",
            &format!(
                r#"
apiVersion: v1
kind: Secret
metadata: {{name: wrong-token-token, namespace: {host_ns}}}
stringData: {{token: not-the-token}}
---
apiVersion: core.fedns.io/v1alpha1
kind: MemberCluster
metadata: {{name: unreachable, namespace: {host_ns}}}
spec: {{apiEndpoint: "https://127.0.0.1:{port}", insecureSkipTLSVerify: true, healthCheck: {{failureThreshold: 1}}}}
---
apiVersion: core.fedns.io/v1alpha1
kind: MemberCluster
metadata: {{name: garbage-ca, namespace: {host_ns}}}
spec: {{apiEndpoint: "https://127.0.0.1:{port}", caBundle: "bm90IGEgY2VydGlmaWNhdGU=", secretRef: {{name: good-token}}}}
---
apiVersion: core.fedns.io/v1alpha1
kind: MemberCluster
metadata: {{name: no-secret, namespace: {host_ns}}}
spec: {{apiEndpoint: "https://127.0.0.1:{port}", secretRef: {{name: missing}}}}
"#,
                port = free_port()
            ),
        )
        .unwrap();
    federation
        .host
        .seed_yaml(
            "host",
            r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, externalName: web}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: noeps, namespace: ns}
spec: {domainRef: myfed, allowServiceWithoutEndpoints: true}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: noeps-strict, namespace: ns}
spec: {domainRef: myfed}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: orphan, namespace: ns}
spec: {domainRef: no-such-domain}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: IngressDNSRecord
metadata: {name: shop, namespace: ns}
spec: {hosts: [shop.example.com], recordTTL: 60}
"#,
        )
        .unwrap();
    let dns_port = free_port();
    let _controller = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        dir.join("host.kubeconfig").to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--resolver",
        &resolver.udp_addrs()[0].to_string(),
        "--leader-elect=false",
    ]);
    let port = dns_port;
    eventually("externalName and a resolved ELB host name", || {
        dig(port, "web.ns.myfed.svc.example.com", "A", false) == ["192.0.2.7", "203.0.113.10"]
    })
    .await;
    eventually("allowServiceWithoutEndpoints publishes", || {
        dig(port, "noeps.ns.myfed.svc.example.com", "A", false) == ["203.0.113.30"]
    })
    .await;
    eventually("the Ingress hosts", || {
        dig(port, "shop.example.com", "AAAA", false) == ["2001:db8::50"]
    })
    .await;
    assert_eq!(dig(port, "shop.example.com", "A", false), ["203.0.113.50"]);
    assert_eq!(
        dig_status(port, "noeps-strict.ns.myfed.svc.example.com", "A"),
        "NXDOMAIN"
    );
    assert_eq!(
        dig_status(port, "nginx.ns.myfed.svc.example.com", "A"),
        "NXDOMAIN",
        "externalName replaces the name"
    );

    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let condition = |record: &ServiceDNSRecord, t: &str| {
        record
            .status
            .as_ref()
            .and_then(|s| fedns_api::conditions::get(&s.conditions, t).cloned())
    };
    let mut checked = false;
    for _ in 0..300 {
        let nginx = records.get("nginx").await.unwrap();
        let strict = records.get("noeps-strict").await.unwrap();
        let orphan = records.get("orphan").await.unwrap();
        if let (Some(input), Some(strict_ready), Some(orphan_ready)) = (
            condition(&nginx, "InputValid"),
            condition(&strict, "Ready"),
            condition(&orphan, "Ready"),
        ) {
            assert_eq!(input.status, "False");
            assert!(input.message.contains("not-an-ip"), "{}", input.message);
            assert_eq!(strict_ready.reason, "NoHealthyEndpoints");
            assert_eq!(orphan_ready.reason, "DomainNotFound");
            checked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(checked, "record conditions not written");

    let clusters: Api<MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    let expect = [
        ("wrong-token", "AuthFailed", "401"),
        ("unreachable", "ClusterNotReachable", ""),
        ("garbage-ca", "AuthFailed", "caBundle"),
        ("no-secret", "AuthFailed", "not found"),
    ];
    for (name, reason, fragment) in expect {
        let mut seen = String::new();
        for _ in 0..300 {
            let cluster = clusters.get(name).await.unwrap();
            if let Some(ready) = cluster
                .status
                .as_ref()
                .and_then(|s| fedns_api::conditions::get(&s.conditions, "Ready").cloned())
            {
                seen = format!("{} {}: {}", ready.status, ready.reason, ready.message);
                if ready.status == "False" && ready.reason == reason && ready.message.contains(fragment) {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(seen.contains(reason) && seen.contains(fragment), "{name}: {seen}");
        println!("{name}: {seen}");
    }
    // Still serving after all of that.
    assert_eq!(
        dig(port, "web.ns.myfed.svc.example.com", "A", false),
        ["192.0.2.7", "203.0.113.10"]
    );
    let _ = &mut federation;
    federation.stop();
    resolver.shutdown().await;
}

/// Restarting the controller never empties the answers, and rewrites no
/// DNSEndpoint when nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_rewrites_nothing() {
    let mut s = setup(&[]).await;
    let port = s.dns_port;
    eventually("first answers", || dig(port, GLOBAL, "A", false).len() == 3).await;
    let host = client_of(&s.federation.host).await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    // Status writes follow the first answers: remember the version once
    // it has held for two seconds (a busy machine may take longer to get
    // there; a fixed sleep would guess).
    let before = settled(
        "DNSEndpoint service-nginx's resourceVersion",
        Duration::from_secs(2),
        || {
            let endpoints = endpoints.clone();
            async move { endpoints.get("service-nginx").await.unwrap().metadata.resource_version }
        },
    )
    .await;
    // A read-only DNS replica watching the same host.
    let replica_port = free_port();
    let _replica = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        s.federation.state_dir.join("host.kubeconfig").to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{replica_port}"),
        "--read-only",
    ]);
    eventually("the replica answers", || {
        dig(replica_port, GLOBAL, "A", false).len() == 3
    })
    .await;

    drop(std::mem::replace(&mut s._controller, spawn_fedns(&["--version"])));
    let controller = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        s.federation.state_dir.join("host.kubeconfig").to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--udp-workers",
        "1",
    ]);
    // For 6 s after the restart, no answer may be partial or empty.
    let started = std::time::Instant::now();
    let mut controller_answers = 0;
    while started.elapsed() < Duration::from_secs(6) {
        assert_eq!(
            dig(replica_port, GLOBAL, "A", false).len(),
            3,
            "the replica lost answers during the restart"
        );
        let answer = dig(port, GLOBAL, "A", false);
        if !answer.is_empty() {
            assert_eq!(
                answer.len(),
                3,
                "the restarted controller served a partial answer: {answer:?}"
            );
            controller_answers += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(controller_answers > 0, "the restarted controller never answered");
    let after = endpoints.get("service-nginx").await.unwrap().metadata.resource_version;
    assert_eq!(before, after, "the restart rewrote DNSEndpoint service-nginx");
    drop(controller);
    s.federation.stop();
}

/// A Domain edit of its SOA values and hostmaster reaches the served zone
/// over the records already served (no record is computed again): the
/// SOA shows the new values and TTL (and, a moment later, a new serial),
/// a missing name's negative answer carries the new negative TTL (RFC
/// 2308 §3), and every name still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_soa_edit_reaches_the_served_zone() {
    let s = setup(&[]).await;
    let port = s.dns_port;
    eventually("first answers", || dig(port, GLOBAL, "A", false).len() == 3).await;
    let soa = || dig_section(port, "example.com", "SOA", "answer");
    let serial_of = |line: &str| line.split(' ').nth(6).map(str::to_owned);
    let before = soa();
    assert_eq!(before.len(), 1, "{before:?}");
    let host = client_of(&s.federation.host).await;
    let domains: Api<fedns_api::Domain> = Api::namespaced(host, "fedns-system");
    domains
        .patch(
            "myfed",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"hostmaster": "dns.example.net", "soa": {"ttl": 120, "refresh": 1800, "minimum": 45}}}),
            ),
        )
        .await
        .unwrap();
    let took = eventually("the new SOA values are served", || {
        soa().first().is_some_and(|line| line.contains(" dns.example.net. "))
    })
    .await;
    println!("Domain edit → new SOA served in {took:?}");
    let after = soa();
    // example.com. 120 IN SOA ns1.example.com. dns.example.net. SERIAL 1800 RETRY EXPIRE 45
    let fields: Vec<&str> = after[0].split(' ').collect();
    assert_eq!((fields[1], fields[7], fields[10]), ("120", "1800", "45"), "{after:?}");
    // A new content's serial shows from a moment on, about a second
    // after the content itself (the serial recorded for every replica).
    eventually("a new SOA is a new serial", || {
        soa().first().and_then(|line| serial_of(line)) != serial_of(&before[0])
    })
    .await;
    let negative = dig_section(port, "missing.example.com", "A", "authority");
    assert!(
        negative.len() == 1 && negative[0].starts_with("example.com. 45 IN SOA "),
        "{negative:?}"
    );
    let ns = dig_section(port, "example.com", "NS", "answer");
    assert_eq!(ns, ["example.com. 120 IN NS ns1.example.com."]);
    // The records stand.
    assert_eq!(
        dig(port, GLOBAL, "A", false),
        ["198.51.100.10", "203.0.113.10", "203.0.113.20"]
    );
    assert_eq!(
        dig(port, "www.example.com", "A", false).len(),
        4,
        "CNAME plus three addresses"
    );
    assert!(
        !s._controller.log_contains("cannot take these zone settings"),
        "the settings were published whole"
    );
    s.federation.stop();
}

/// A Domain edit of its regions recomputes the records that route by
/// region and no other: with two records, `nginx` (no routing) and `api`
/// (`routing: Nearest`), adding `clientRegions` clears `api`'s
/// `InputValid` problem (a Nearest policy with nowhere to place clients)
/// through exactly one reconcile, `api`'s (it was every record's before,
/// 20,000 at 1,000,000 shards), and the answers stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_region_edit_recomputes_only_the_routed_records() {
    // No periodic pass during the test: only the edit requeues.
    let s = setup_with_args(&[], json!({}), &["--resync-interval", "600"]).await;
    let port = s.dns_port;
    for name in ["east-a", "east-b", "west"] {
        let api = member_yaml("unused", "unused", &["203.0.113.99"])
            .split("\n---\n")
            .skip(1)
            .map(|d| d.replace("nginx", "api"))
            .collect::<Vec<_>>()
            .join("\n---\n");
        s.federation.member(name).unwrap().seed_yaml("api", &api).unwrap();
    }
    let host = client_of(&s.federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    records
        .create(
            &Default::default(),
            &serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                "metadata": {"name": "api", "namespace": "ns"},
                "spec": {"domainRef": "myfed", "recordTTL": 30, "routing": {"policy": "Nearest", "fallback": ["us-east-1"]}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    eventually("both records answer", || {
        dig(port, GLOBAL, "A", false).len() == 3 && !dig(port, "api.ns.myfed.svc.example.com", "A", false).is_empty()
    })
    .await;
    let input_valid = |name: &'static str| {
        let records = records.clone();
        async move {
            let record = records.get(name).await.unwrap();
            let status = record.status.unwrap_or_default();
            fedns_api::conditions::get(&status.conditions, "InputValid")
                .map(|c| (c.status.clone(), c.message.clone()))
                .unwrap_or_default()
        }
    };
    let started = std::time::Instant::now();
    loop {
        let (status, message) = input_valid("api").await;
        if status == "False" && message.contains("no clientRegions or geoRegions") {
            break;
        }
        assert!(started.elapsed() < EVENTUALLY, "api: InputValid {status}: {message}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Settled: no reconcile for 2 s.
    let reconciles = || metric(s.metrics_port, "fedns_reconciles_total");
    let mut last = reconciles().await;
    let mut quiet = std::time::Instant::now();
    while quiet.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = reconciles().await;
        if now != last {
            (last, quiet) = (now, std::time::Instant::now());
        }
    }
    let answers = dig(port, GLOBAL, "A", false);

    let domains: Api<fedns_api::Domain> = Api::namespaced(host, "fedns-system");
    domains
        .patch(
            "myfed",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clientRegions": [{"cidr": "192.0.2.0/24", "region": "us-west-2"}]}})),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let (status, message) = input_valid("api").await;
        if status == "True" {
            break;
        }
        assert!(started.elapsed() < EVENTUALLY, "api: InputValid {status}: {message}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("region edit → api's problem cleared after {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reconciled = reconciles().await - last;
    println!("reconciles after the region edit: {reconciled}");
    assert_eq!(reconciled, 1.0, "only the routed record is reconciled again");
    assert_eq!(input_valid("nginx").await.0, "True");
    assert_eq!(dig(port, GLOBAL, "A", false), answers);
    s.federation.stop();
}

/// `fedns join` registers a member from its kubeconfig (token + CA).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_registers_a_member() {
    let dir = temp_dir("join");
    let federation = Federation::start(&dir, "fedns-system", &["joined"]).await.unwrap();
    let joined = federation.member("joined").unwrap().clone();
    let out = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
                .args(["join", "joined", "--region", "eu-north-1", "--member-kubeconfig"])
                .arg(dir.join("joined.kubeconfig"))
                .arg("--kubeconfig")
                .arg(dir.join("host.kubeconfig"))
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("answers: Kubernetes"), "{stdout}");
    let host = client_of(&federation.host).await;
    let clusters: Api<MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    let cluster = clusters.get("joined").await.unwrap();
    assert_eq!(cluster.spec.api_endpoint, joined.url());
    assert_eq!(cluster.spec.region.as_deref(), Some("eu-north-1"));
    assert!(cluster.spec.ca_bundle.is_some());
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(host, "fedns-system");
    let secret = secrets.get("joined-credentials").await.unwrap();
    assert_eq!(secret.data.unwrap()["token"].0, joined.token().as_bytes());
    federation.stop();
}

/// `fedns join --service-account`: deploy/member applied in the member
/// (kubectl, as documented), its token Secret filled in as the token
/// controller would, and the member registered with that token, not the
/// admin kubeconfig's; without deploy/member, join says to apply it and
/// registers nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_with_the_member_service_account() {
    use k8s_openapi::api::core::v1::Secret;
    let dir = temp_dir("join-sa");
    let federation = Federation::start(&dir, "fedns-system", &["joined"]).await.unwrap();
    let joined = federation.member("joined").unwrap().clone();
    let join = |dir: std::path::PathBuf| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
                .args([
                    "join",
                    "joined",
                    "--service-account",
                    "fedns-system/fedns-member",
                    "--member-kubeconfig",
                ])
                .arg(dir.join("joined.kubeconfig"))
                .arg("--kubeconfig")
                .arg(dir.join("host.kubeconfig"))
                .output()
                .unwrap()
        })
    };
    let out = join(dir.clone()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "joined without deploy/member");
    assert!(stderr.contains("apply deploy/member"), "{stderr}");
    let host = client_of(&federation.host).await;
    let clusters: Api<MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    assert!(
        clusters.get_opt("joined").await.unwrap().is_none(),
        "registered nothing"
    );

    let applied = std::process::Command::new("kubectl")
        .args(["apply", "--server-side", "-k", "deploy/member"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("KUBECONFIG", dir.join("joined.kubeconfig"))
        .output()
        .unwrap();
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    // The token controller's part: the Secret gets the account's token.
    let account_token = "fedns-member-token-for-the-test";
    joined.accept_token(account_token);
    let member_secrets: Api<Secret> = Api::namespaced(client_of(&joined).await, "fedns-system");
    member_secrets
        .patch(
            "fedns-member-token",
            &PatchParams::apply("token-controller"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "fedns-member-token", "namespace": "fedns-system"},
                "stringData": {"token": account_token},
            })),
        )
        .await
        .unwrap();
    let out = join(dir.clone()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("can read what fedns reads"), "{stdout}");
    let secrets: Api<Secret> = Api::namespaced(host, "fedns-system");
    let secret = secrets.get("joined-credentials").await.unwrap();
    assert_eq!(
        secret.data.unwrap()["token"].0,
        account_token.as_bytes(),
        "the account's token, not the admin's"
    );
    assert_eq!(clusters.get("joined").await.unwrap().spec.api_endpoint, joined.url());
    println!("{stdout}");
    federation.stop();
}

/// Two replicas: one holds the Lease; on SIGTERM it releases it (the
/// holder is cleared at once) and the other takes over. (The follower
/// notices when its cached lease would expire: kube-lease-manager's
/// behaviour.) The first runs with `--shutdown-drain 8` (deploy/ runs 10):
/// from the signal on, `/readyz` answers 503, DNS is still answered
/// through the drain, and the process exits after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_election_hands_over_on_sigterm() {
    use k8s_openapi::api::coordination::v1::Lease;
    // Shorter than deploy/'s 10 s (a slower test otherwise), long enough
    // that the checks below land inside it on a loaded two-core machine
    // (with 4 s, a check after the lease's release missed it under load).
    const DRAIN: Duration = Duration::from_secs(8);
    let mut s = setup_with_args(&[], json!({}), &["--shutdown-drain", "8"]).await;
    eventually("the first replica answers", || {
        !dig(s.dns_port, GLOBAL, "A", false).is_empty()
    })
    .await;
    assert_eq!(
        http_get(&format!("http://127.0.0.1:{}/readyz", s.metrics_port)).await.0,
        200
    );
    let host = client_of(&s.federation.host).await;
    let leases: Api<Lease> = Api::namespaced(host, "fedns-system");
    let holder = || {
        let leases = leases.clone();
        async move {
            leases
                .get("fedns-controller")
                .await
                .ok()
                .and_then(|l| l.spec.and_then(|s| s.holder_identity))
        }
    };
    // The controller from setup() runs without POD_NAME: identity fedns-<pid>.
    let first = s._controller.child.id();
    let first_identity = format!("fedns-{first}");
    let mut current = None;
    for _ in 0..300 {
        current = holder().await;
        if current.as_deref() == Some(first_identity.as_str()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(current.as_deref(), Some(first_identity.as_str()));

    let second = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        s.federation.state_dir.join("host.kubeconfig").to_str().unwrap(),
        "--dns-listen",
        &format!("127.0.0.1:{}", free_port()),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    let second_identity = format!("fedns-{}", second.child.id());
    // The second replica is running (its campaign started before it says
    // so), and holds off for 3 s more: it stands by rather than taking a
    // Lease renewed within its 15 s duration.
    eventually("the second replica runs", || second.log_contains("controller running")).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        holder().await.as_deref(),
        Some(first_identity.as_str()),
        "the second replica must not take the lease"
    );

    let status = std::process::Command::new("kill")
        .args(["-TERM", &first.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    // Draining first (it is bounded by the drain): not ready, still
    // answering, still running.
    let mut readyz = 0;
    while started.elapsed() < DRAIN {
        readyz = http_get(&format!("http://127.0.0.1:{}/readyz", s.metrics_port)).await.0;
        if readyz == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answered = dig(s.dns_port, GLOBAL, "A", false);
    let draining_at = started.elapsed();
    assert!(draining_at < DRAIN, "checked within the drain: {draining_at:?}");
    assert_eq!(readyz, 503, "/readyz while draining");
    assert!(!answered.is_empty(), "DNS answered while draining: {answered:?}");
    assert!(
        s._controller.child.try_wait().unwrap().is_none(),
        "exited before the drain ended"
    );
    let mut released = false;
    // Well before the 15 s lease would expire (tests run in parallel on two
    // cores; alone it takes tens of milliseconds).
    while started.elapsed() < Duration::from_secs(10) {
        if holder().await.as_deref() != Some(first_identity.as_str()) {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(released, "SIGTERM did not release the lease within 10 s");
    let released_after = started.elapsed();
    println!("lease released {released_after:?} after SIGTERM");
    let mut exited = None;
    while started.elapsed() < Duration::from_secs(30) {
        if s._controller.child.try_wait().unwrap().is_some() {
            exited = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let exited = exited.expect("the first replica exits after its drain");
    println!(
        "draining replica: 503 and answering at {draining_at:?}; exited {exited:?} after SIGTERM (drain {DRAIN:?})"
    );
    assert!(exited >= DRAIN, "exited before the drain: {exited:?}");
    let mut now = None;
    while started.elapsed() < Duration::from_secs(30) {
        now = holder().await;
        if now.as_deref() == Some(second_identity.as_str()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("lease handed over after {:?}", started.elapsed());
    assert_eq!(now.as_deref(), Some(second_identity.as_str()));
    assert!(started.elapsed() < Duration::from_secs(25));
    drop(second);
    s.federation.stop();
}
