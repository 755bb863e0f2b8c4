//! `fedns controller --provider embedded --provider coredns-etcd`, run
//! in-process against an emulated federation and a real etcd: the names
//! land in etcd in CoreDNS's format, each provider reports its own
//! `<provider>/Published` condition, and a name another owner holds in
//! etcd is a Conflict there while the embedded server still serves it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use fedns_api::DNSEndpoint;
use fedns_controller::cli::{ControllerArgs, EtcdArgs, Provider};
use fedns_controller::federation::Federation;
use fedns_e2e::{free_port, Etcd};
use kube::api::Api;
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

async fn etcd_hosts(client: &mut Client, path: &str) -> Vec<String> {
    let response = client
        .get(format!("{path}/"), Some(GetOptions::new().with_prefix()))
        .await
        .unwrap();
    let mut hosts: Vec<String> = response
        .kvs()
        .iter()
        .filter_map(|kv| serde_json::from_slice::<Value>(kv.value()).ok())
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
async fn publishes_to_coredns_etcd_beside_the_embedded_server() {
    let etcd = Etcd::start();
    let mut client = Client::connect([etcd.url()], None).await.unwrap();
    // Someone else already publishes www.example.com through this etcd.
    client
        .put(
            "/skydns/com/example/www/x1",
            json!({"host": "192.0.2.99", "owner": "external-dns"}).to_string(),
            None,
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
        provider: vec![Provider::Embedded, Provider::CorednsEtcd],
        owner_id: "fedns".into(),
        etcd: EtcdArgs {
            endpoints: vec![etcd.url()],
            prefix: "/skydns".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
        },
        route53: Default::default(),
        dns_listen: vec![format!("127.0.0.1:{}", free_port()).parse().unwrap()],
        udp_workers: Some(1),
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        resolver: None,
        leader_elect: false,
        resync_interval: 60,
        workers: 4,
    };
    let stop = Arc::new(Notify::new());
    let controller = {
        let stop = stop.clone();
        tokio::spawn(async move {
            fedns_controller::controller_cmd::run_until(&args, async move { stop.notified().await }).await
        })
    };

    let started = Instant::now();
    loop {
        let hosts = etcd_hosts(&mut client, "/skydns/com/example/svc/myfed/ns/nginx").await;
        if hosts == ["203.0.113.10"] {
            println!("published to etcd after {:?}", started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not in etcd within 30 s: {hosts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        etcd_hosts(&mut client, "/skydns/com/example/us-east-1/svc/myfed/ns/nginx").await,
        ["203.0.113.10"]
    );

    let host = {
        let kubeconfig = kube::config::Kubeconfig::read_from(dir.join("host.kubeconfig")).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    };
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "ns");
    let started = Instant::now();
    let (embedded, etcd_condition) = loop {
        let endpoint = endpoints.get("service-nginx").await.unwrap();
        if let (Some(e), Some(c)) = (
            condition(&endpoint, "embedded/Published"),
            condition(&endpoint, "coredns-etcd/Published"),
        ) {
            if c.0 == "False" {
                break (e, c);
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
    // The foreign record is untouched.
    let foreign = client.get("/skydns/com/example/www/x1", None).await.unwrap();
    let value: Value = serde_json::from_slice(foreign.kvs()[0].value()).unwrap();
    assert_eq!(value["host"], "192.0.2.99");

    stop.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(10), controller).await;
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
}
