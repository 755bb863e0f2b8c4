//! `fedns controller --provider embedded --provider coredns-etcd
//! --provider route53`, run in-process against an emulated federation, a
//! real etcd and moto's Route53: the names land in etcd in CoreDNS's format
//! and in the Route53 hosted zone with external-dns ownership records, each
//! provider reports its own `<provider>/Published` condition, and a name
//! another owner holds in etcd or Route53 is a Conflict there while the
//! embedded server still serves it. Deleting the Domain then removes
//! fedns's records from etcd and Route53, and only then the Domain.
//!
//! A second run adds the Cloud DNS and webhook stand-ins
//! (`fedns_standins`) and a hostile tenant: another namespace's record,
//! built and proposed by the controller like any other, asks for names
//! at, above, below and beside a victim's, and takes none in any sink.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, PROVIDER_RECORDS_FINALIZER};
use fedns_controller::cli::{ControllerArgs, EtcdArgs, GoogleArgs, Provider, Route53Args};
use fedns_controller::federation::Federation;
use fedns_e2e::moto::{self, Moto};
use fedns_e2e::{free_port, Etcd};
use fedns_providers::coredns_etcd::etcd::EtcdClient;
use fedns_standins::clouddns::{CloudDns, CloudDnsConfig, Visibility};
use fedns_standins::webhook_provider::{WebhookProvider, WebhookProviderConfig};
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

/// The controller's flags for the emulated federation in `dir`, with
/// `provider`s, etcd at `etcd_url` and moto at `moto_url` (the other
/// providers' settings at their defaults, for the caller to fill in).
fn controller_args(dir: &std::path::Path, provider: Vec<Provider>, etcd_url: &str, moto_url: &str) -> ControllerArgs {
    ControllerArgs {
        kubeconfig: Some(dir.join("host.kubeconfig")),
        namespace: "fedns-system".into(),
        provider,
        owner_id: "fedns".into(),
        txt_wildcard_replacement: None,
        etcd: EtcdArgs {
            endpoints: vec![etcd_url.to_owned()],
            prefix: "/skydns".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            username: None,
            password: None,
        },
        route53: Route53Args {
            endpoint: Some(moto_url.to_owned()),
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
        snapshot: Default::default(),
        probe_concurrency: 16,
        vantage_namespace: None,
        sources: Default::default(),
    }
}

/// moto's Route53 with the hosted zone `example.com`, an admin client and
/// the zone's id; the standard AWS chain's variables set for the
/// controller's client (before anything reads them).
async fn moto_with_zone() -> (Moto, aws_sdk_route53::Client, String) {
    std::env::set_var("AWS_ACCESS_KEY_ID", moto::ACCESS_KEY);
    std::env::set_var("AWS_SECRET_ACCESS_KEY", moto::SECRET_KEY);
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    let moto = Moto::start();
    let admin = moto::client(&moto.url());
    let zone = moto::create_zone(&admin, "example.com").await;
    (moto, admin, zone)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_to_every_provider_at_once() {
    let (moto, admin, zone) = moto_with_zone().await;
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

    let args = controller_args(
        &dir,
        vec![Provider::Embedded, Provider::CorednsEtcd, Provider::Route53],
        &etcd.url(),
        &moto.url(),
    );
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

/// Namespace `shop`'s and namespace `mallory`'s objects in the member: a
/// Service `shop/web` and an Ingress `shop/www` for shop; for mallory an
/// Ingress whose hosts are at, above, below and beside shop's names, and
/// one of its own.
fn tenancy_member() -> String {
    let ingress = |namespace: &str, name: &str, hosts: &[&str], ip: &str| {
        let rules: Vec<String> = hosts
            .iter()
            .map(|h| format!("    - host: \"{h}\"\n      http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}]}}"))
            .collect();
        format!(
            "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  rules:\n{}\nstatus: {{loadBalancer: {{ingress: [{{ip: \"{ip}\"}}]}}}}\n",
            rules.join("\n")
        )
    };
    let mut yaml = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: "203.0.113.10"}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abcde, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: ["10.1.0.5"], conditions: {ready: true}}]
ports: [{port: 80}]
"#
    .to_owned();
    yaml.push_str(&ingress("shop", "www", &["www.example.com"], "203.0.113.11"));
    yaml.push_str(&ingress("mallory", "grab", &TENANCY_GRAB, "192.0.2.66"));
    yaml.push_str(&ingress("mallory", "own", &["promo.example.com"], "192.0.2.67"));
    yaml
}

/// The hosts mallory's `grab` IngressDNSRecord asks for: below shop's
/// service name, shop's namespace name above it, shop's open name and a
/// name below it, the zone apex and its name server.
const TENANCY_GRAB: [&str; 6] = [
    "evil.web.shop.myfed.svc.example.com",
    "shop.myfed.svc.example.com",
    "www.example.com",
    "evil.www.example.com",
    "example.com",
    "ns1.example.com",
];

const TENANCY_HOST: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: mallory}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: web, namespace: shop}
spec: {domainRef: myfed, recordTTL: 30}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: IngressDNSRecord
metadata: {name: www, namespace: shop}
spec: {hosts: [www.example.com], recordTTL: 30}
"#;

/// What each external sink holds, one sorted line per record set
/// (`name type values`; etcd: `key host`), the zone's own SOA and NS
/// aside.
struct SinkViews<'a> {
    etcd: &'a EtcdClient,
    route53: (&'a aws_sdk_route53::Client, &'a str),
    clouddns: &'a CloudDns,
    webhook: &'a WebhookProvider,
}

impl SinkViews<'_> {
    async fn read(&self) -> Vec<(&'static str, Vec<String>)> {
        let mut etcd: Vec<String> = self
            .etcd
            .range_prefix("/skydns/")
            .await
            .unwrap()
            .iter()
            .map(|kv| {
                let value: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
                format!("{} {}", kv.key, value["host"])
            })
            .collect();
        let mut route53: Vec<String> = moto::records(self.route53.0, self.route53.1)
            .await
            .into_iter()
            .filter(|r| !(r.0 == "example.com" && (r.1 == "SOA" || r.1 == "NS")))
            .map(|r| format!("{} {} {:?}", r.0, r.1, r.3))
            .collect();
        let mut clouddns: Vec<String> = self
            .clouddns
            .record_sets(CLOUDDNS_PROJECT, CLOUDDNS_ZONE)
            .unwrap()
            .into_iter()
            .filter(|s| !(s.name == "example.com." && (s.rtype == "SOA" || s.rtype == "NS")))
            .map(|s| format!("{} {} {:?}", s.name, s.rtype, s.rrdatas))
            .collect();
        let mut webhook: Vec<String> = self
            .webhook
            .records()
            .iter()
            .map(|e| format!("{} {} {}", e["dnsName"], e["recordType"], e["targets"]))
            .collect();
        for view in [&mut etcd, &mut route53, &mut clouddns, &mut webhook] {
            view.sort();
        }
        vec![
            ("coredns-etcd", etcd),
            ("route53", route53),
            ("google-clouddns", clouddns),
            ("webhook", webhook),
        ]
    }
}

const CLOUDDNS_PROJECT: &str = "fedns-test";
const CLOUDDNS_ZONE: &str = "example";

/// A hostile tenant through the controller's own records and proposals,
/// in every external sink at once: namespace `mallory`'s IngressDNSRecord
/// asks for names at, above, below and beside namespace `shop`'s. Its own
/// name reaches every sink (so its proposals were published), none of the
/// others does, each sink holds exactly what it held before, and the
/// DNSEndpoint reports the refusal for every provider. (The embedded
/// server's answers: `tenancy_e2e` in the controller's tests.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenants_record_takes_no_name_in_any_provider() {
    let (moto, admin, zone) = moto_with_zone().await;
    let etcd = Etcd::start();
    let etcd_client = etcd.client();
    let token = "clouddns-tenancy-token";
    let clouddns = CloudDns::start(CloudDnsConfig {
        projects: vec![CLOUDDNS_PROJECT.into()],
        tokens: vec![token.into()],
        change_delay: Duration::from_millis(20),
        ..CloudDnsConfig::default()
    })
    .await
    .unwrap();
    clouddns
        .create_zone(CLOUDDNS_PROJECT, CLOUDDNS_ZONE, "example.com.", Visibility::Public)
        .unwrap();
    let webhook = WebhookProvider::start(WebhookProviderConfig::default()).await.unwrap();

    let dir = std::env::temp_dir().join(format!("fedns-e2e-tenancy-{}-{}", std::process::id(), free_port()));
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    federation
        .member("a")
        .unwrap()
        .seed_yaml("a", &tenancy_member())
        .unwrap();
    federation.register("a", json!({})).unwrap();
    federation.host.seed_yaml("host", TENANCY_HOST).unwrap();
    let mut args = controller_args(
        &dir,
        vec![
            Provider::Embedded,
            Provider::CorednsEtcd,
            Provider::Route53,
            Provider::GoogleClouddns,
            Provider::Webhook,
        ],
        &etcd.url(),
        &moto.url(),
    );
    args.google = GoogleArgs {
        project: Some(CLOUDDNS_PROJECT.into()),
        endpoint: Some(clouddns.url()),
        access_token: Some(token.into()),
        requests_per_second: 200.0,
        ..GoogleArgs::default()
    };
    args.webhook.urls = vec![webhook.url()];
    let stop = Arc::new(Notify::new());
    let controller = {
        let stop = stop.clone();
        tokio::spawn(async move {
            fedns_controller::cli::controller::run_until(&args, async move { stop.notified().await }).await
        })
    };
    let views = SinkViews {
        etcd: &etcd_client,
        route53: (&admin, &zone),
        clouddns: &clouddns,
        webhook: &webhook,
    };
    // Every sink holds `name`'s A record with `ip`.
    let holds = |views: &[(&'static str, Vec<String>)], name: &str, ip: &str| -> Vec<&'static str> {
        let etcd_path = format!("/skydns/{}/", name.split('.').rev().collect::<Vec<_>>().join("/"));
        views
            .iter()
            .filter(|(sink, lines)| {
                !lines.iter().any(|l| match *sink {
                    "coredns-etcd" => l.starts_with(&etcd_path) && l.ends_with(&format!("\"{ip}\"")),
                    _ => {
                        (l.starts_with(&format!("{name} A "))
                            || l.starts_with(&format!("{name}. A "))
                            || l.starts_with(&format!("\"{name}\" \"A\" ")))
                            && l.contains(ip)
                    }
                })
            })
            .map(|(sink, _)| *sink)
            .collect()
    };

    // Shop's names in every sink, and no sink changing for a second (the
    // region and zone names follow the member's topology).
    let started = Instant::now();
    let mut last = None;
    let before = loop {
        let now = views.read().await;
        let missing: Vec<_> = [
            holds(&now, "web.shop.myfed.svc.example.com", "203.0.113.10"),
            holds(&now, "www.example.com", "203.0.113.11"),
        ]
        .concat();
        if missing.is_empty() {
            if last.as_ref() == Some(&now) {
                println!("shop's names in every sink, settled, after {:?}", started.elapsed());
                break now;
            }
            last = Some(now);
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "shop's names not in {missing:?} within 30 s: {now:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // creationTimestamp has whole seconds: mallory's records come later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let host = fedns_controller::kube_client::client(Some(&dir.join("host.kubeconfig")))
        .await
        .unwrap();
    let records: Api<IngressDNSRecord> = Api::namespaced(host.clone(), "mallory");
    for (name, hosts) in [("grab", json!(TENANCY_GRAB)), ("own", json!(["promo.example.com"]))] {
        records
            .create(
                &Default::default(),
                &serde_json::from_value(json!({
                    "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "IngressDNSRecord",
                    "metadata": {"name": name, "namespace": "mallory"},
                    "spec": {"hosts": hosts, "recordTTL": 30},
                }))
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let started = Instant::now();
    loop {
        let now = views.read().await;
        let missing = holds(&now, "promo.example.com", "192.0.2.67");
        if missing.is_empty() {
            println!("mallory's own name in every sink after {:?}", started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "mallory's own name not in {missing:?} within 30 s: {now:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Every provider has reported on mallory's other names, so every pass
    // that could have published them is done.
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "mallory");
    let providers = ["embedded", "coredns-etcd", "route53", "google-clouddns", "webhook"];
    let started = Instant::now();
    let refusals = loop {
        let list = endpoints.list(&Default::default()).await.unwrap();
        let refusals: Vec<(String, String)> = list
            .items
            .iter()
            .filter(|e| e.name_any() != "ingress-own")
            .flat_map(|e| {
                providers
                    .iter()
                    .filter_map(|p| condition(e, &format!("{p}/Published")).map(|c| (p, c)))
            })
            .filter(|(_, c)| c.0 == "False")
            .map(|(p, c)| (p.to_string(), c.2))
            .collect();
        let reported: std::collections::BTreeSet<&str> = refusals.iter().map(|(p, _)| p.as_str()).collect();
        if reported.len() == providers.len() {
            break refusals;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not every provider reported mallory's refused names within 30 s: {refusals:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for (provider, message) in &refusals {
        println!("{provider}: {message}");
        for needle in [
            "service name of namespace shop",
            "held by DNSEndpoint shop/",
            "the zone apex",
        ] {
            assert!(
                message.contains(needle),
                "{provider}'s condition names {needle:?}: {message}"
            );
        }
    }
    let after = views.read().await;
    for ((sink, before), (_, after)) in before.iter().zip(&after) {
        let after: Vec<&String> = after.iter().filter(|l| !l.contains("promo")).collect();
        let before: Vec<&String> = before.iter().collect();
        assert_eq!(after, before, "{sink} holds other records than before mallory's");
        println!("{sink}: {} record sets, unchanged", before.len());
    }

    stop.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(10), controller).await;
    federation.stop();
    let _ = std::fs::remove_dir_all(dir);
}
