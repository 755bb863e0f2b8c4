//! A hostile tenant through the records the controller builds: namespace
//! `mallory` (rights in its own namespace only) makes an IngressDNSRecord
//! whose hosts are at, above, below and beside namespace `shop`'s names,
//! and its Ingress in a member shows its own load balancer. The controller
//! builds mallory's DNSEndpoint as for anyone; the publishing rules refuse
//! every such name, the DNSEndpoint says why, and dig's answers for
//! shop's names do not change. (DNSEndpoints written directly, the
//! webhook provider and dnsPrefix are in `dns_server`, `webhook_serve`
//! and `discovery`; members' annotated routes in `routes_e2e`.)

use std::time::Duration;

use crate::common::*;
use fedns_api::{DNSEndpoint, IngressDNSRecord};
use fedns_controller::federation::Federation;
use kube::api::{Api, PostParams};
use serde_json::json;

const WEB: &str = "web.shop.myfed.svc.example.com";

fn ingress(namespace: &str, name: &str, hosts: &[&str], ip: &str) -> String {
    let rules: Vec<String> = hosts
        .iter()
        .map(|h| format!("    - host: \"{h}\"\n      http: {{paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}]}}"))
        .collect();
    format!(
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  rules:\n{}\nstatus: {{loadBalancer: {{ingress: [{{ip: \"{ip}\"}}]}}}}\n",
        rules.join("\n")
    )
}

fn member_yaml() -> String {
    let mut yaml = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: mallory}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: "203.0.113.10"}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {ready: true}
ports: [{port: 80}]
"#
    .to_owned();
    yaml.push_str(&ingress("shop", "www", &["www.example.com"], "203.0.113.11"));
    yaml.push_str(&ingress(
        "mallory",
        "grab",
        &[
            "evil.web.shop.myfed.svc.example.com",
            "shop.myfed.svc.example.com",
            "www.example.com",
            "evil.www.example.com",
            "example.com",
            "ns1.example.com",
        ],
        "192.0.2.66",
    ));
    yaml.push_str(&ingress("mallory", "own", &["promo.example.com"], "192.0.2.67"));
    yaml
}

const HOST_YAML: &str = r#"
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenants_ingress_record_changes_no_answer() {
    let dir = temp_dir("tenancy");
    let federation = Federation::start(&dir, "fedns-system", &["a"]).await.unwrap();
    federation.member("a").unwrap().seed_yaml("a", &member_yaml()).unwrap();
    federation.register("a", json!({})).unwrap();
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    eventually("shop's names are served", || {
        dig(dns_port, WEB, "A", false) == ["203.0.113.10"]
            && dig(dns_port, "www.example.com", "A", false) == ["203.0.113.11"]
    })
    .await;
    let queries = [
        (WEB, "A"),
        ("evil.web.shop.myfed.svc.example.com", "A"),
        ("shop.myfed.svc.example.com", "A"),
        ("www.example.com", "A"),
        ("evil.www.example.com", "A"),
        ("example.com", "A"),
        ("ns1.example.com", "A"),
    ];
    let snapshot = || -> Vec<String> {
        queries
            .iter()
            .map(|(name, t)| {
                format!(
                    "{name} {t}: {} {:?}",
                    dig_status(dns_port, name, t),
                    dig(dns_port, name, t, false)
                )
            })
            .collect()
    };
    let before = snapshot();

    // creationTimestamp has whole seconds: mallory's records come later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let host = client_of(&federation.host).await;
    let records: Api<IngressDNSRecord> = Api::namespaced(host.clone(), "mallory");
    for (name, hosts) in [
        (
            "grab",
            json!([
                "evil.web.shop.myfed.svc.example.com",
                "shop.myfed.svc.example.com",
                "www.example.com",
                "evil.www.example.com",
                "example.com",
                "ns1.example.com"
            ]),
        ),
        ("own", json!(["promo.example.com"])),
    ] {
        records
            .create(
                &PostParams::default(),
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
    eventually("mallory's own name is served", || {
        dig(dns_port, "promo.example.com", "A", false) == ["192.0.2.67"]
    })
    .await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(host, "mallory");
    let mut message = String::new();
    eventually("mallory's DNSEndpoint says why it is not published", || {
        let got = futures::executor::block_on(endpoints.list(&Default::default()))
            .map(|list| {
                list.items
                    .iter()
                    .filter_map(|e| e.status.as_ref())
                    .flat_map(|s| s.conditions.iter())
                    .filter(|c| c.type_ == "embedded/Published" && c.status == "False")
                    .map(|c| format!("{}: {}", c.reason, c.message))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        saw(got.clone());
        message = got;
        !message.is_empty()
    })
    .await;
    println!("refused: {message}");
    for needle in [
        "service name of namespace shop",
        "above its service names",
        "held by DNSEndpoint shop/",
        "the zone apex",
        "a name server of the zone",
    ] {
        assert!(message.contains(needle), "the condition names {needle:?}: {message}");
    }
    let after = snapshot();
    for (b, a) in before.iter().zip(&after) {
        println!("{a}");
        assert_eq!(a, b, "an answer changed");
    }
    let _ = std::fs::remove_dir_all(dir);
}
