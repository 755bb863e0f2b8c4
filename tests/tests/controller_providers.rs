//! `fedns controller --provider embedded --provider coredns-etcd
//! --provider route53`, run in-process against an emulated federation, a
//! real etcd and moto's Route53: the names land in etcd in CoreDNS's format
//! and in the Route53 hosted zone with external-dns ownership records, each
//! provider reports its own `<provider>/Published` condition, and a name
//! another owner holds in etcd or Route53 is a Conflict there while the
//! embedded server still serves it. Deleting the Domain then removes
//! fedns's records from etcd and Route53, and only then the Domain.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::{DNSEndpoint, Domain, PROVIDER_RECORDS_FINALIZER};
use fedns_controller::cli::{ControllerArgs, EtcdArgs, Provider, Route53Args};
use fedns_controller::federation::Federation;
use fedns_e2e::moto::{self, Moto};
use fedns_e2e::{free_port, Etcd};
use fedns_providers::coredns_etcd::etcd::EtcdClient;
use kube::api::{Api, DeleteParams};
use kube::ResourceExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

const MEMBER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}}
---
apiVersion: v1
kind: Service
metadata: {name: nginx, namespace: ns}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: nginx-1, namespace: ns, labels: {kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
"#;

const HOST: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, dnsPrefix: www}
"#;

async fn etcd_hosts(client: &EtcdClient, path: &str) -> Vec<String> {
    let response = client.range_prefix(&format!("{path}/")).await.unwrap();
    let mut hosts: Vec<String> = response
        .iter()
        .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .filter(|v| v["owner"] == "fedns")
        .filter_map(|v| v["host"].as_str().map(str::to_owned))
        .collect();
    hosts.sort();
    hosts
}

fn condition(endpoint: &DNSEndpoint, t: &str) -> Option<(String, String, String)> {
    let status = endpoint.status.as_ref()?;
    let c = fedns_api::conditions::get(&status.conditions, t)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_to_every_provider_at_once() {
    // The standard AWS chain reads these (set before anything runs).
    std::env::set_var("AWS_ACCESS_KEY_ID", moto::ACCESS_KEY);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", moto::SECRET_KEY);
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    // external-dns of another cluster already publishes www.example.com.
    moto::create_records(
        &admin,
        &zone,
        &[
            ("www.example.com", "A", "192.0.2.99"),
            (
                "a-www.example.com",
                "TXT",
                "\"heritage=external-dns,external-dns/owner=cluster-b,external-dns/resource=service/default/www\"",
            ),
        ],
    )
    .await;

    let etcd = Etcd::start();
    let client = etcd.client();
    // Someone else already publishes www.example.com through this etcd.
    client
        .put(
            "/skydns/com/example/www/x1",
            &json!({"host": "192.0.2.99", "owner": "external-dns"}).to_string(),
        )
        .await
        .unwrap();

    let dir = std::env::temp_dir().join(format!("fedns-e2e-etcd-{}-{}", std::process::id(), free_port()));
    let federation = Federation::start(&dir, "fedns-system", &["m1"]).await.unwrap();
    federation.member("m1").unwrap().seed_yaml("m1", MEMBER).unwrap();
    federation.register("m1", json!({})).unwrap();
    federation.host.seed_yaml("host", HOST).unwrap();

    let args = ControllerArgs {
        kubeconfig: Some(dir.join("host.kubeconfig")),
        namespace: "fedns-system".into(),
        provider: vec![Provider::Embedded, Provider::CorednsEtcd, Provider::Route53],
        owner_id: "fedns".into(),
        txt_wildcard_replacement: None,
        etcd: EtcdArgs {
            endpoints: vec![etcd.url()],
            prefix: "/skydns".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            username: None,
            password: None,
        },
        route53: Route53Args {
            endpoint: Some(moto.url()),
            region: Some("us-east-1".into()),
            requests_per_second: 50.0,
            ..Route53Args::default()
        },
        google: Default::default(),
        webhook: Default::default(),
        dns_listen: vec![format!("127.0.0.1:{}", free_port()).parse().unwrap()],
        udp_workers: Some(1),
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        debug_addr: None,
        shutdown_drain: 0,
        resolver: None,
        geoip_db: None,
        leader_elect: false,
        resync_interval: 60,
        serial_activation_delay: 1000,
        max_object_bytes: fedns_controller::records::object_size::DEFAULT_MAX_OBJECT_BYTES,
        workers: 4,
        rrl: Default::default(),
        probe_concurrency: 16,
        vantage_namespace: None,
        sources: Default::default(),
    };
    let stop = Arc::new(Notify::new());
    let controller = {
        let stop = stop.clone();
        tokio::spawn(async move {
            fedns_controller::cli::controller::run_until(&args, async move { stop.notified().await }).await
        })
    };

    let started = Instant::now();
    loop {
        let hosts = etcd_hosts(&client, "/skydns/com/example/svc/myfed/ns/nginx").await;
        // The region name follows once the member's topology is known (a
        // first publish may carry it as a CNAME to the global name).
        let region = etcd_hosts(&client, "/skydns/com/example/us-east-1/svc/myfed/ns/nginx").await;
        if hosts == ["203.0.113.10"] && region == ["203.0.113.10"] {
            println!("published to etcd after {:?}", started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not in etcd within 30 s: global {hosts:?}, region {region:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let started = Instant::now();
    loop {
        let records = moto::records(&admin, &zone).await;
        let nginx: Vec<_> = records
            .iter()
            .filter(|r| r.0 == "nginx.ns.myfed.svc.example.com" || r.0 == "a-nginx.ns.myfed.svc.example.com")
            .map(|r| (r.1.clone(), r.3.clone()))
            .collect();
        if nginx.len() == 2 {
            println!("published to Route53 after {:?}", started.elapsed());
            // Sorted by name: the registry record a-nginx… first.
            assert!(nginx[0].1[0].contains("external-dns/owner=fedns"), "{nginx:?}");
            assert_eq!(nginx[1], ("A".to_owned(), vec!["203.0.113.10".to_owned()]));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not in Route53 within 30 s: {records:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let host = fedns_controller::kube_client::client(Some(&dir.join("host.kubeconfig")))
        .await
        .unwrap();
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "ns");
    let started = Instant::now();
    let (embedded, etcd_condition, route53_condition) = loop {
        let endpoint = endpoints.get("service-nginx").await.unwrap();
        if let (Some(e), Some(c), Some(r)) = (
            condition(&endpoint, "embedded/Published"),
            condition(&endpoint, "coredns-etcd/Published"),
            condition(&endpoint, "route53/Published"),
        ) {
            if c.0 == "False" && r.0 == "False" {
                break (e, c, r);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "conditions not written within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(embedded.0, "True", "{embedded:?}");
    assert_eq!(etcd_condition.1, "Conflict", "{etcd_condition:?}");
    assert!(
        etcd_condition.2.contains("www.example.com") && etcd_condition.2.contains("external-dns"),
        "{etcd_condition:?}"
    );
    assert_eq!(route53_condition.1, "Conflict", "{route53_condition:?}");
    assert!(
        route53_condition.2.contains("www.example.com") && route53_condition.2.contains("cluster-b"),
        "{route53_condition:?}"
    );
    let www: Vec<_> = moto::records(&admin, &zone)
        .await
        .into_iter()
        .filter(|r| r.0 == "www.example.com")
        .collect();
    assert_eq!(www.len(), 1);
    assert_eq!(www[0].3, ["192.0.2.99"], "another owner's record is untouched");
    // The foreign record is untouched.
    let foreign = client.range_prefix("/skydns/com/example/www/x1").await.unwrap();
    let value: Value = serde_json::from_slice(&foreign[0].value).unwrap();
    assert_eq!(value["host"], "192.0.2.99");

    // Deleting the Domain removes fedns's records from both providers
    // (another owner's stay) before the Domain itself goes.
    let host_client = fedns_controller::kube_client::client(Some(&dir.join("host.kubeconfig")))
        .await
        .unwrap();
    let domains: Api<Domain> = Api::namespaced(host_client, "fedns-system");
    let domain = domains.get("myfed").await.unwrap();
    assert!(
        domain.finalizers().iter().any(|f| f == PROVIDER_RECORDS_FINALIZER),
        "{:?}",
        domain.metadata.finalizers
    );
    domains.delete("myfed", &DeleteParams::default()).await.unwrap();
    let started = Instant::now();
    loop {
        let gone = domains.get_opt("myfed").await.unwrap().is_none();
        let ours = etcd_hosts(&client, "/skydns/com/example").await;
        let mut names: Vec<String> = moto::records(&admin, &zone)
            .await
            .into_iter()
            .filter(|r| r.1 != "SOA" && r.1 != "NS")
            .map(|r| r.0)
            .collect();
        names.sort();
        if gone && ours.is_empty() && names == ["a-www.example.com", "www.example.com"] {
            println!("Domain deleted and its records removed after {:?}", started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "after 30 s: Domain gone {gone}, fedns keys in etcd {ours:?}, Route53 names {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let foreign = client.range_prefix("/skydns/com/example/www/x1").await.unwrap();
    assert_eq!(foreign.len(), 1, "another owner's key stays");

    stop.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(10), controller).await;
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
}
