//! `spec.backends` of an IngressDNSRecord, end to end: two emulated
//! members, each with an Ingress routing to two Services and served by an
//! ingress controller's LoadBalancer Service (the address the Ingress
//! shows); their EndpointSlices are made unready and ready again, and the
//! answer (`dig`) and `fedns explain` follow. Addresses are TEST-NET ones:
//! nothing probes them here.

use crate::common::*;
use fedns_api::IngressDNSRecord;
use fedns_controller::federation::Federation;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const NAME: &str = "shop.example.com";

fn member_yaml(region: &str, ip: &str) -> String {
    let slice = |namespace: &str, service: &str| {
        format!(
            r#"
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {service}-abcde
  namespace: {namespace}
  labels: {{kubernetes.io/service-name: {service}}}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {{ready: true}}
"#
        )
    };
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: node-{region}
  labels: {{topology.kubernetes.io/region: {region}, topology.kubernetes.io/zone: {region}a}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: ingress-nginx}}
---
apiVersion: v1
kind: Service
metadata: {{name: controller, namespace: ingress-nginx}}
spec: {{type: LoadBalancer, ports: [{{port: 80}}]}}
status: {{loadBalancer: {{ingress: [{{ip: "{ip}"}}]}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: api, namespace: ns}}
spec: {{ports: [{{port: 8080}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: ns}}
spec: {{ports: [{{port: 8080}}]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: shop, namespace: ns}}
spec:
  rules:
    - host: {NAME}
      http:
        paths:
          - {{path: /api, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 8080}}}}}}}}
          - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 8080}}}}}}}}
status: {{loadBalancer: {{ingress: [{{ip: "{ip}"}}]}}}}
{}{}{}"#,
        slice("ingress-nginx", "controller"),
        slice("ns", "api"),
        slice("ns", "web"),
    )
}

async fn set_ready(member: &kube::Client, namespace: &str, service: &str, ready: bool) {
    let slices: Api<EndpointSlice> = Api::namespaced(member.clone(), namespace);
    slices
        .patch(
            &format!("{service}-abcde"),
            &PatchParams::default(),
            &Patch::Merge(json!({"endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": ready}}]})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_counts_only_while_its_backends_and_controller_are_ready() {
    let dir = temp_dir("ingress-backends");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, ip) in [("a", "203.0.113.61"), ("b", "203.0.113.62")] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(name, &member_yaml(&format!("region-{name}"), ip))
            .unwrap();
        federation.register(name, json!({})).unwrap();
    }
    federation
        .host
        .seed_yaml(
            "host",
            &format!(
                "{MYFED_HOST_YAML}---\n{}",
                "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: IngressDNSRecord\nmetadata: {name: shop, namespace: ns}\nspec: {hosts: [shop.example.com], recordTTL: 5, backends: All}\n"
            ),
        )
        .unwrap();
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(&dir, dns_port, metrics_port, &["--udp-workers", "1"]);
    let host = client_of(&federation.host).await;
    let (a, b) = (
        client_of(federation.member("a").unwrap()).await,
        client_of(federation.member("b").unwrap()).await,
    );
    let both = ["203.0.113.61", "203.0.113.62"];
    eventually("every backend ready", || dig(dns_port, NAME, "A", false) == both).await;

    // One of b's two backends loses its endpoints: out under All, in under Any.
    set_ready(&b, "ns", "api", false).await;
    eventually("b's api unready, backends: All", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.61"]
    })
    .await;
    let records: Api<IngressDNSRecord> = Api::namespaced(host.clone(), "ns");
    records
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"backends": "Any"}})),
        )
        .await
        .unwrap();
    eventually("backends: Any, b's web still ready", || {
        dig(dns_port, NAME, "A", false) == both
    })
    .await;

    // a's ingress controller scaled to zero: its address stays, a goes.
    set_ready(&a, "ingress-nginx", "controller", false).await;
    eventually("a's ingress controller unready", || {
        dig(dns_port, NAME, "A", false) == ["203.0.113.62"]
    })
    .await;
    // The controller's own explanation (it holds the members' caches).
    explained(
        metrics_port,
        NAME,
        "its ingress controller has no ready endpoint (Service ingress-nginx/controller",
    )
    .await;
    set_ready(&a, "ingress-nginx", "controller", true).await;
    set_ready(&b, "ns", "api", true).await;
    eventually("all ready again", || dig(dns_port, NAME, "A", false) == both).await;
    federation.stop();
}
