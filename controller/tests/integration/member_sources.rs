//! `fedns controller --member-source karmada|kubefed`: the host emulator
//! stands in for the engine's control plane (its cluster CRD, Cluster or
//! KubeFedCluster objects and their Secrets), members are emulators
//! reached through real kubeconfig-style credentials. Per source:
//! registration (region/zones from the engine, else Node labels),
//! credential rotation (Secret changed), removal, a pull-mode Karmada
//! cluster through the control plane's cluster proxy, `spec.proxyURL`
//! through a loopback CONNECT proxy (its tunnels reused), the engine's
//! own `Ready=False` against fedns's probes, an Argo CD cluster renamed
//! without a gap, and bad input.

use std::time::Duration;

use crate::common::*;
use crate::controller_e2e::member_yaml;
use fedns_api::{DNSEndpoint, IngressDNSRecord, ServiceDNSRecord};
use fedns_controller::federation::{Engine, Federation, KARMADA_SECRET_NAMESPACE, KUBEFED_NAMESPACE};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::ResourceExt;
use serde_json::json;

/// A Domain and the ServiceDNSRecord `ns/nginx` in the host.
pub(crate) const HOST_YAML: &str = r#"
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
spec: {domainRef: myfed, recordTTL: 30}
"#;

pub(crate) const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

/// The MCS ServiceExport CRD (KEP-1645), schema left open.
pub(crate) const MCS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: serviceexports.multicluster.x-k8s.io}
spec:
  group: multicluster.x-k8s.io
  scope: Namespaced
  names: {kind: ServiceExport, listKind: ServiceExportList, plural: serviceexports, singular: serviceexport}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

pub(crate) struct Setup {
    pub(crate) federation: Federation,
    pub(crate) dns_port: u16,
    pub(crate) metrics_port: u16,
    pub(crate) host: kube::Client,
    pub(crate) engine: Engine,
    pub(crate) _controller: Process,
}

/// Members `a` (203.0.113.1, Nodes in r1/r1a), `b` (203.0.113.2, r2/r2a),
/// `c` (203.0.113.3, r3/r3a); `register` registers them with the engine.
pub(crate) async fn setup(engine: Engine, extra_args: &[&str], register: impl Fn(&Federation)) -> Setup {
    setup_with_env(engine, extra_args, &[], register).await
}

/// [`setup`] with `env` added to the controller's environment.
pub(crate) async fn setup_with_env(
    engine: Engine,
    extra_args: &[&str],
    env: &[(&str, &str)],
    register: impl Fn(&Federation),
) -> Setup {
    let dir = temp_dir(&format!("sources-{}", engine.as_str()));
    let federation = Federation::start(&dir, "fedns-system", &["a", "b", "c"]).await.unwrap();
    for (name, n) in [("a", 1), ("b", 2), ("c", 3)] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(
                name,
                &member_yaml(&format!("r{n}"), &format!("r{n}a"), &[&format!("203.0.113.{n}")]),
            )
            .unwrap();
    }
    federation.install_engine(engine).unwrap();
    register(&federation);
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let dns_port = free_port();
    let metrics_port = free_port();
    let controller = spawn_fedns_with_env(
        &[
            "controller",
            "--kubeconfig",
            dir.join("host.kubeconfig").to_str().unwrap(),
            "--dns-listen",
            &format!("127.0.0.1:{dns_port}"),
            "--metrics-addr",
            &format!("127.0.0.1:{metrics_port}"),
            "--udp-workers",
            "1",
            "--member-source",
            engine.as_str(),
        ]
        .into_iter()
        .chain(extra_args.iter().copied())
        .collect::<Vec<_>>(),
        env,
    );
    let host = client_of(&federation.host).await;
    Setup {
        federation,
        dns_port,
        metrics_port,
        host,
        engine,
        _controller: controller,
    }
}

/// `name type targets` rows of the nginx DNSEndpoint.
pub(crate) async fn rows(host: &kube::Client) -> Vec<String> {
    let api: Api<DNSEndpoint> = Api::namespaced(host.clone(), "ns");
    let Ok(endpoint) = api.get("service-nginx").await else {
        return Vec::new();
    };
    let mut rows: Vec<String> = endpoint
        .spec
        .endpoints
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    rows.sort();
    rows
}

pub(crate) async fn global_targets(host: &kube::Client) -> String {
    rows(host)
        .await
        .into_iter()
        .find_map(|r| r.strip_prefix(&format!("{GLOBAL} A ")).map(str::to_owned))
        .unwrap_or_default()
}

/// Waits until the global name's A targets are `want`.
pub(crate) async fn wait_global(s: &Setup, what: &str, want: &str) {
    let host = s.host.clone();
    let started = std::time::Instant::now();
    loop {
        let got = global_targets(&host).await;
        if got == want {
            println!("{what}: after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: global targets {got:?}, wanted {want:?} within 30 s; rows {:?}",
            rows(&host).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the embedded server answers `name` A with `want` (the
/// DNSEndpoint is written before the zone snapshot is swapped).
pub(crate) async fn wait_dig(s: &Setup, name: &str, want: &[&str]) {
    let started = std::time::Instant::now();
    loop {
        let got = dig(s.dns_port, name, "A", false);
        if got == want {
            println!("{name} answered {want:?}: after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name}: {got:?}, wanted {want:?} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the nginx DNSEndpoint has `row`.
pub(crate) async fn wait_row(s: &Setup, row: &str) {
    let started = std::time::Instant::now();
    loop {
        let all = rows(&s.host).await;
        if all.iter().any(|r| r == row) {
            println!("{row}: after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no {row:?} within 30 s: {all:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for an Event on `name` (any kind) whose note contains `needle`.
pub(crate) async fn wait_event(host: &kube::Client, name: &str, needle: &str) {
    let api: Api<Event> = Api::all(host.clone());
    let started = std::time::Instant::now();
    loop {
        let events = api.list(&Default::default()).await.unwrap().items;
        let found = events.iter().find(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.note.as_deref().is_some_and(|n| n.contains(needle))
        });
        if let Some(event) = found {
            println!(
                "Event on {name} after {:?}: {} {}",
                started.elapsed(),
                event.reason.as_deref().unwrap_or_default(),
                event.note.as_deref().unwrap_or_default()
            );
            return;
        }
        let notes: Vec<String> = events.iter().filter_map(|e| e.note.clone()).collect();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no Event on {name} mentioning {needle:?} within 30 s; events: {notes:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn metrics(s: &Setup) -> String {
    http_get(&format!("http://127.0.0.1:{}/metrics", s.metrics_port))
        .await
        .1
}

fn karmada_clusters(host: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "cluster.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "cluster.karmada.io/v1alpha1".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    };
    Api::all_with(host.clone(), &resource)
}

fn kubefed_clusters(host: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "core.kubefed.io".into(),
        version: "v1beta1".into(),
        api_version: "core.kubefed.io/v1beta1".into(),
        kind: "KubeFedCluster".into(),
        plural: "kubefedclusters".into(),
    };
    Api::namespaced_with(host.clone(), KUBEFED_NAMESPACE, &resource)
}

fn federated_services() -> ApiResource {
    ApiResource {
        group: "types.kubefed.io".into(),
        version: "v1beta1".into(),
        api_version: "types.kubefed.io/v1beta1".into(),
        kind: "FederatedService".into(),
        plural: "federatedservices".into(),
    }
}

/// Waits until record `name` exists (`present`) or is gone; returns it.
pub(crate) async fn wait_record<K>(api: &Api<K>, name: &str, present: bool) -> Option<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let started = std::time::Instant::now();
    loop {
        let got = api.get_opt(name).await.unwrap();
        if got.is_some() == present {
            println!(
                "record {name} {}: after {:?}",
                if present { "made" } else { "gone" },
                started.elapsed()
            );
            return got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "record {name}: wanted present={present} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn set_token(api: &Api<Secret>, name: &str, token: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"stringData": {"token": token}})),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_clusters_are_members() {
    let proxy = connect_proxy().await;
    let proxy_url = proxy.url.clone();
    let s = setup(Engine::Karmada, &[], |f| {
        // a: region and zones from the Cluster; b: the older single `zone`
        // without a region (topology from b's Nodes); c: pull mode,
        // reached through the control plane's cluster proxy.
        f.register_engine(Engine::Karmada, "a", json!({"region": "eu", "zones": ["eu-1"]}))
            .unwrap();
        f.register_engine(Engine::Karmada, "b", json!({"proxyURL": proxy_url})).unwrap();
        f.register_engine(Engine::Karmada, "c", json!({"syncMode": "Pull"})).unwrap();
        // Bad input: a Push cluster without apiEndpoint.
        f.host
            .seed_yaml(
                "bad",
                "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: noendpoint}\nspec: {syncMode: Push, secretRef: {namespace: karmada-cluster, name: a}}\n",
            )
            .unwrap();
    })
    .await;
    let host = s.host.clone();
    let secrets: Api<Secret> = Api::namespaced(host.clone(), KARMADA_SECRET_NAMESPACE);
    let clusters = karmada_clusters(&host);

    // Registration: all three, with the Cluster's topology for a and the
    // Nodes' for b and c; c through the proxy path.
    wait_global(
        &s,
        "three Karmada clusters published",
        "203.0.113.1,203.0.113.2,203.0.113.3",
    )
    .await;
    for row in [
        "nginx.ns.myfed.svc.eu.example.com A 203.0.113.1",
        "nginx.ns.myfed.svc.eu-1.eu.example.com A 203.0.113.1",
        "nginx.ns.myfed.svc.r2.example.com A 203.0.113.2",
        "nginx.ns.myfed.svc.r3a.r3.example.com A 203.0.113.3",
    ] {
        wait_row(&s, row).await;
    }
    wait_dig(&s, GLOBAL, &["203.0.113.1", "203.0.113.2", "203.0.113.3"]).await;
    // b is reached through its spec.proxyURL.
    assert!(
        proxy.tunnels.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "no tunnel through b's proxyURL"
    );
    // fedns wrote nothing into the Cluster objects.
    let a = clusters.get("a").await.unwrap();
    assert!(
        a.data.get("status").is_none_or(|s| s.is_null()),
        "status written: {:?}",
        a.data
    );

    // Bad input is reported on the Cluster; the rest keeps working.
    wait_event(&host, "noendpoint", "spec.apiEndpoint is empty").await;
    let text = metrics(&s).await;
    assert!(
        text.contains(r#"fedns_member_ready{cluster="noendpoint",source="karmada"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fedns_member_ready{cluster="c",source="karmada"} 1"#),
        "{text}"
    );

    // The engine's Ready=False does not override fedns's probes.
    clusters
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                "message": "cluster is not reachable", "lastTransitionTime": "2026-01-01T00:00:00Z"
            }]}})),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let text = metrics(&s).await;
        if text.contains(r#"fedns_member_engine_ready{cluster="a",source="karmada"} 0"#) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "engine Ready not reported: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..10 {
        assert_eq!(global_targets(&host).await, "203.0.113.1,203.0.113.2,203.0.113.3");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let explain = http_get(&format!(
        "http://127.0.0.1:{}/debug/explain?name={GLOBAL}",
        s.metrics_port
    ))
    .await
    .1;
    println!("{explain}");
    assert!(explain.contains("karmada reports Ready=False"), "{explain}");
    // ...and the engine's Ready=True does not keep a failed member in.
    clusters
        .patch_status(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Ready", "status": "True", "reason": "ClusterReady",
                "message": "cluster is healthy and ready to accept workloads",
                "lastTransitionTime": "2026-01-01T00:00:00Z"
            }]}})),
        )
        .await
        .unwrap();
    s.federation.member("b").unwrap().stop();
    wait_global(
        &s,
        "stopped member b leaves although Karmada says Ready",
        "203.0.113.1,203.0.113.3",
    )
    .await;
    s.federation.member("b").unwrap().resume().await.unwrap();
    wait_global(&s, "b back", "203.0.113.1,203.0.113.2,203.0.113.3").await;

    // Credential rotation: a wrong token takes a out, the right one back.
    set_token(&secrets, "a", "not-the-token").await;
    wait_global(&s, "a out with a wrong token", "203.0.113.2,203.0.113.3").await;
    let token = s.federation.member("a").unwrap().token().to_owned();
    set_token(&secrets, "a", &token).await;
    wait_global(
        &s,
        "a back with the rotated token",
        "203.0.113.1,203.0.113.2,203.0.113.3",
    )
    .await;

    // A Secret without `token`: reported, the member leaves, others stay.
    secrets
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(json!([{"op": "remove", "path": "/data/token"}])).unwrap()),
        )
        .await
        .unwrap();
    wait_event(&host, "a", "has no key token").await;
    wait_global(&s, "a out without a token", "203.0.113.2,203.0.113.3").await;

    // Removal.
    clusters.delete("c", &DeleteParams::default()).await.unwrap();
    wait_global(&s, "c removed", "203.0.113.2").await;
    s.federation.stop();
}

/// A member that fails while the controller stands by (another replica
/// holds the Lease) is reported once the controller leads: its Event is
/// written then (the standby may only log it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_seen_while_standing_by_is_reported_on_leading() {
    let s = setup(Engine::Kubefed, &[], |f| {
        // Another replica's Lease, renewed just now for 4 s.
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        f.host
            .seed_yaml(
                "lease",
                &format!(
                    "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: fedns-controller, namespace: fedns-system}}\n\
                     spec: {{holderIdentity: another-replica, leaseDurationSeconds: 4, acquireTime: '{now}', renewTime: '{now}'}}\n"
                ),
            )
            .unwrap();
        f.host
            .seed_yaml(
                "bad",
                "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: noendpoint, namespace: kube-federation-system}\nspec: {apiEndpoint: '', secretRef: {name: a-token}}\n",
            )
            .unwrap();
    })
    .await;
    let started = std::time::Instant::now();
    eventually("the standby logs the failure", || {
        s._controller.log_contains("spec.apiEndpoint is empty")
    })
    .await;
    wait_event(&s.host, "noendpoint", "spec.apiEndpoint is empty").await;
    println!(
        "evented {:?} after start (the other replica's Lease ran 4 s)",
        started.elapsed()
    );
    assert!(s._controller.log_contains("became the leader"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubefed_clusters_are_members() {
    let s = setup(Engine::Kubefed, &["--auto-records"], |f| {
        f.register_engine(Engine::Kubefed, "a", json!({})).unwrap();
        f.register_engine(Engine::Kubefed, "b", json!({"disabledTLSValidations": ["*"], "caBundle": null}))
            .unwrap();
        f.host
            .seed_yaml(
                "bad",
                "apiVersion: core.kubefed.io/v1beta1\nkind: KubeFedCluster\nmetadata: {name: noendpoint, namespace: kube-federation-system}\nspec: {apiEndpoint: '', secretRef: {name: a-token}}\n",
            )
            .unwrap();
    })
    .await;
    let host = s.host.clone();
    let secrets: Api<Secret> = Api::namespaced(host.clone(), KUBEFED_NAMESPACE);
    let clusters = kubefed_clusters(&host);
    // Region and zones from the KubeFedCluster's status (kubefed up to
    // v0.6 writes them); none for b (its Nodes'). The conditions are what
    // kubefed writes for a cluster it cannot reach: only Offline=True
    // (kubefed clusterclient.go, GetClusterStatus).
    clusters
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"region": "eu", "zones": ["eu-1"], "conditions": [{
                "type": "Offline", "status": "True", "reason": "ClusterNotReachable",
                "message": "cluster is not reachable: dial tcp 10.0.0.1:6443: i/o timeout",
                "lastProbeTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"
            }]}})),
        )
        .await
        .unwrap();
    wait_global(&s, "two KubeFedClusters published", "203.0.113.1,203.0.113.2").await;
    wait_row(&s, "nginx.ns.myfed.svc.eu-1.eu.example.com A 203.0.113.1").await;
    wait_row(&s, "nginx.ns.myfed.svc.r2a.r2.example.com A 203.0.113.2").await;
    wait_dig(&s, GLOBAL, &["203.0.113.1", "203.0.113.2"]).await;
    // kubefed's verdict (not ready: Offline) is reported, not obeyed.
    let text = metrics(&s).await;
    assert!(
        text.contains(r#"fedns_member_engine_ready{cluster="a",source="kubefed"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fedns_member_ready{cluster="a",source="kubefed"} 1"#),
        "{text}"
    );
    wait_event(&host, "noendpoint", "spec.apiEndpoint is empty").await;

    // A third cluster registered while running.
    s.federation.register_engine(Engine::Kubefed, "c", json!({})).unwrap();
    wait_global(&s, "c registered", "203.0.113.1,203.0.113.2,203.0.113.3").await;

    // Rotation.
    set_token(&secrets, "b-token", "wrong").await;
    wait_global(&s, "b out with a wrong token", "203.0.113.1,203.0.113.3").await;
    let token = s.federation.member("b").unwrap().token().to_owned();
    set_token(&secrets, "b-token", &token).await;
    wait_global(&s, "b back", "203.0.113.1,203.0.113.2,203.0.113.3").await;

    // A Secret without `token`.
    secrets
        .patch(
            "c-token",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(json!([{"op": "remove", "path": "/data/token"}])).unwrap()),
        )
        .await
        .unwrap();
    wait_event(&host, "c", "has no key token").await;
    wait_global(&s, "c out", "203.0.113.1,203.0.113.2").await;

    // --auto-records: a FederatedService annotated on its template makes a
    // ServiceDNSRecord (owned by it); deleting it deletes the record.
    s.federation
        .host
        .seed_yaml(
            "federated",
            r#"
apiVersion: types.kubefed.io/v1beta1
kind: FederatedService
metadata: {name: web, namespace: ns}
spec:
  template:
    metadata:
      annotations: {multiclusterdns.fedns.io/domain: myfed}
    spec: {type: LoadBalancer, ports: [{port: 80}]}
  placement: {clusters: [{name: a}, {name: b}]}
"#,
        )
        .unwrap();
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let record = wait_record(&records, "web", true).await.unwrap();
    assert_eq!(record.spec.domain_ref, "myfed");
    assert_eq!(record.owner_references()[0].kind, "FederatedService");
    let federated = Api::<DynamicObject>::namespaced_with(host.clone(), "ns", &federated_services());
    federated.delete("web", &DeleteParams::default()).await.unwrap();
    wait_record(&records, "web", false).await;

    // A federated route (`kubefedctl enable httproutes.gateway.networking.k8s.io`
    // makes the type, kubefed's enable.go: kind Federated<Kind>, plural
    // federated<plural>; only the kind served here, an open schema) made
    // after the controller started: a RouteDNSRecord owned by it.
    s.federation
        .host
        .seed_yaml(
            "federated-routes",
            r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: federatedhttproutes.types.kubefed.io}
spec:
  group: types.kubefed.io
  scope: Namespaced
  names: {kind: FederatedHTTPRoute, listKind: FederatedHTTPRouteList, plural: federatedhttproutes, singular: federatedhttproute}
  versions:
    - name: v1beta1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedHTTPRoute
metadata: {name: shop, namespace: ns}
spec:
  template:
    metadata:
      annotations: {multiclusterdns.fedns.io/domain: myfed}
    spec:
      parentRefs: [{name: gw, namespace: infra}]
      hostnames: [shop.example.com]
  placement: {clusters: [{name: a}, {name: b}]}
"#,
        )
        .unwrap();
    let route_records: Api<fedns_api::RouteDNSRecord> = Api::namespaced(host.clone(), "ns");
    let started = std::time::Instant::now();
    let route_record = loop {
        if let Some(r) = route_records.get_opt("shop").await.unwrap() {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no RouteDNSRecord from the FederatedHTTPRoute"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("RouteDNSRecord from a FederatedHTTPRoute after {:?}", started.elapsed());
    assert_eq!(route_record.spec.route_kind, fedns_api::RouteKind::HTTPRoute);
    assert_eq!(route_record.owner_references()[0].kind, "FederatedHTTPRoute");

    // Removal.
    clusters.delete("a", &DeleteParams::default()).await.unwrap();
    wait_global(&s, "a removed", "203.0.113.2").await;
    s.federation.stop();
}

/// `--auto-records` with Karmada: Service and Ingress templates in the
/// control plane (the host here) make records; a hand-written record of
/// the same name is left alone; bad annotations are reported on the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_records_lifecycle() {
    let s = setup(Engine::Karmada, &["--auto-records"], |f| {
        for name in ["a", "b"] {
            // A second Service, `web`, in the members.
            f.member(name)
                .unwrap()
                .seed_yaml(
                    "web",
                    &member_yaml("r", "ra", &[if name == "a" { "198.51.100.1" } else { "198.51.100.2" }])
                        .replace("nginx", "web")
                        .replace("node-ra", &format!("node-web-{name}")),
                )
                .unwrap();
            f.register_engine(Engine::Karmada, name, json!({})).unwrap();
        }
    })
    .await;
    let host = s.host.clone();
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(host.clone(), "ns");
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    wait_global(&s, "hand-written nginx record published", "203.0.113.1,203.0.113.2").await;

    // Annotate → record → answer.
    s.federation
        .host
        .seed_yaml(
            "templates",
            r#"
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed, multiclusterdns.fedns.io/ttl: "60", multiclusterdns.fedns.io/dns-prefix: shop}
spec: {type: LoadBalancer, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata:
  name: nginx
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed, multiclusterdns.fedns.io/ttl: "120"}
spec: {type: LoadBalancer, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata:
  name: lost
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: nosuchdomain}
spec: {type: LoadBalancer, ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed}
spec:
  rules: [{host: store.example.com}]
"#,
        )
        .unwrap();
    let record = wait_record(&records, "web", true).await.unwrap();
    assert_eq!(
        record.labels().get("app.kubernetes.io/managed-by").map(String::as_str),
        Some("fedns")
    );
    assert_eq!(record.spec.record_ttl, 60);
    assert_eq!(record.spec.dns_prefix.as_deref(), Some("shop"));
    let web = services.get("web").await.unwrap();
    assert_eq!(record.owner_references()[0].uid, web.uid().unwrap());
    let ingress_records: Api<IngressDNSRecord> = Api::namespaced(host.clone(), "ns");
    let ingress = wait_record(&ingress_records, "shop", true).await.unwrap();
    assert_eq!(ingress.spec.hosts, vec!["store.example.com"]);
    wait_dig(&s, "web.ns.myfed.svc.example.com", &["198.51.100.1", "198.51.100.2"]).await;

    // The hand-written nginx record is untouched; its Service is told.
    wait_event(&host, "nginx", "was not made by fedns").await;
    let nginx = records.get("nginx").await.unwrap();
    assert_eq!(nginx.spec.record_ttl, 30);
    assert!(nginx.labels().get("app.kubernetes.io/managed-by").is_none());
    // A missing Domain is reported on the source; the record waits for it.
    wait_event(&host, "lost", "Domain nosuchdomain").await;

    // An annotation changed → the generated record follows.
    services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"multiclusterdns.fedns.io/ttl": "90"}}})),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    while records.get("web").await.unwrap().spec.record_ttl != 90 {
        assert!(started.elapsed() < Duration::from_secs(30), "recordTTL not updated");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("web recordTTL 60 -> 90: after {:?}", started.elapsed());

    // Annotation removed → record gone → name gone.
    services
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"multiclusterdns.fedns.io/domain": null}}})),
        )
        .await
        .unwrap();
    wait_record(&records, "web", false).await;
    let started = std::time::Instant::now();
    while dig_status(s.dns_port, "web.ns.myfed.svc.example.com", "A") != "NXDOMAIN" {
        assert!(started.elapsed() < Duration::from_secs(30), "web still answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The hand-written record is still there, unchanged.
    assert_eq!(records.get("nginx").await.unwrap().spec.record_ttl, 30);

    // An MCS ServiceExport in member a (b has no MCS API at all) of a
    // LoadBalancer Service makes a record; one of a ClusterIP Service does
    // not. Karmada's cluster a allows namespace ns by a MemberCluster of its
    // name (not a member: `fedns` is not a --member-source here).
    s.federation
        .register("a", json!({"autoRecords": {"namespaces": ["ns"]}}))
        .unwrap();
    let a = s.federation.member("a").unwrap();
    a.seed_yaml("mcs", MCS_CRD).unwrap();
    a.seed_yaml(
        "api",
        &member_yaml("r", "ra", &["198.51.100.9"])
            .replace("nginx", "api")
            .replace("node-ra", "node-api"),
    )
    .unwrap();
    a.seed_yaml(
        "exports",
        r#"
apiVersion: v1
kind: Service
metadata: {name: internal, namespace: ns}
spec: {type: ClusterIP, ports: [{port: 80}]}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: api
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed}
---
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  name: internal
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed}
"#,
    )
    .unwrap();
    let api = wait_record(&records, "api", true).await.unwrap();
    assert_eq!(
        api.annotations().get("fedns.io/generated-from").map(String::as_str),
        Some("ServiceExport/ns/api")
    );
    assert!(
        api.owner_references().is_empty(),
        "a member's object owns nothing in the host"
    );
    wait_dig(&s, "api.ns.myfed.svc.example.com", &["198.51.100.9"]).await;
    assert!(
        records.get_opt("internal").await.unwrap().is_none(),
        "no record for a ClusterIP Service"
    );
    let member_a = client_of(a).await;
    let resource = ApiResource {
        group: "multicluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "multicluster.x-k8s.io/v1alpha1".into(),
        kind: "ServiceExport".into(),
        plural: "serviceexports".into(),
    };
    Api::<DynamicObject>::namespaced_with(member_a, "ns", &resource)
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    wait_record(&records, "api", false).await;
    s.federation.stop();
}

/// Karmada as its own API server (`--karmada-kubeconfig`), apart from the
/// host: Clusters, Secrets and the Service template live there; a pull-mode
/// cluster goes through its cluster proxy; the record is made in the host
/// without an owner (its source is not there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_as_a_separate_control_plane() {
    let dir = temp_dir("sources-karmada-plane");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b"]).await.unwrap();
    for (name, n) in [("a", 1), ("b", 2)] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(
                name,
                &member_yaml(&format!("r{n}"), &format!("r{n}a"), &[&format!("203.0.113.{n}")]),
            )
            .unwrap();
    }
    let plane = fedns_kube_emulator::Emulator::start_with(fedns_kube_emulator::EmulatorConfig {
        name: "karmada".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    plane.write_kubeconfig(&dir.join("karmada.kubeconfig")).unwrap();
    federation.install_engine_in(&plane, Engine::Karmada).unwrap();
    federation
        .register_engine_in(&plane, Engine::Karmada, "a", json!({}))
        .unwrap();
    federation
        .register_engine_in(&plane, Engine::Karmada, "b", json!({"syncMode": "Pull"}))
        .unwrap();
    plane
        .seed_yaml(
            "template",
            r#"
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: v1
kind: Service
metadata:
  name: nginx
  namespace: ns
  annotations: {multiclusterdns.fedns.io/domain: myfed}
spec: {type: LoadBalancer, ports: [{port: 80}]}
"#,
        )
        .unwrap();
    // The host: the Domain and the namespace, no record.
    federation
        .host
        .seed_yaml(
            "host",
            "apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: Domain\nmetadata: {name: myfed, namespace: fedns-system}\nspec: {domain: example.com, nameServers: [ns1.example.com]}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n",
        )
        .unwrap();
    let dns_port = free_port();
    let _controller = spawn_fedns(&[
        "controller",
        "--kubeconfig",
        dir.join("host.kubeconfig").to_str().unwrap(),
        "--karmada-kubeconfig",
        dir.join("karmada.kubeconfig").to_str().unwrap(),
        "--member-source",
        "karmada",
        "--auto-records",
        "--dns-listen",
        &format!("127.0.0.1:{dns_port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--udp-workers",
        "1",
    ]);
    let host = client_of(&federation.host).await;
    let records: Api<ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    let record = wait_record(&records, "nginx", true).await.unwrap();
    assert!(
        record.owner_references().is_empty(),
        "its source is in the Karmada control plane"
    );
    let started = std::time::Instant::now();
    while dig(dns_port, GLOBAL, "A", false) != ["203.0.113.1", "203.0.113.2"] {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{GLOBAL} not answered by both"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("both Karmada members answered: after {:?}", started.elapsed());
    // The pull-mode member goes through the control plane: stopping the
    // plane's proxy (the plane itself) takes b out, a stays.
    plane.stop();
    let started = std::time::Instant::now();
    while dig(dns_port, GLOBAL, "A", false) != ["203.0.113.1"] {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "b still answered without its proxy"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "pull-mode b out with the control plane down: after {:?}",
        started.elapsed()
    );
    federation.stop();
}

/// A proxy's routes: listed address to real address, filled once members exist.
type Routes = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>;

/// What a [`recording_proxy`] was asked: each CONNECT's target and its
/// headers (lower-case name, value).
#[derive(Default)]
struct Forwarded {
    connects: Vec<(String, Vec<(String, String)>)>,
}

/// A loopback HTTP CONNECT proxy standing for a fleet's egress proxy: it
/// records every CONNECT, refuses (407) one without `required` (a header
/// name and value) when given, and forwards a tunnel for a target in
/// `routes` to its real address; other targets are dialled as they are.
/// A member listed under an address nobody listens on is reachable only
/// through it.
async fn recording_proxy(
    routes: Routes,
    required: Option<(&'static str, &'static str)>,
) -> (String, std::sync::Arc<std::sync::Mutex<Forwarded>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let forwarded = std::sync::Arc::new(std::sync::Mutex::new(Forwarded::default()));
    let record = forwarded.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let (record, routes) = (record.clone(), routes.clone());
            tokio::spawn(async move {
                // The request head, up to its blank line (nothing follows a CONNECT's head).
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read_exact(&mut byte).await.is_err() || head.len() > 16 * 1024 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let mut lines = head.split("\r\n");
                let request_line = lines.next().unwrap_or_default().to_owned();
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                    .collect();
                let mut parts = request_line.split_whitespace();
                let (method, target) = (
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default().to_owned(),
                );
                record.lock().unwrap().connects.push((target.clone(), headers.clone()));
                let allowed = required.is_none_or(|(name, value)| {
                    headers
                        .iter()
                        .any(|(n, v)| n == &name.to_ascii_lowercase() && v == value)
                });
                if method != "CONNECT" || !allowed {
                    let status = if allowed {
                        "405 Method Not Allowed"
                    } else {
                        "407 Proxy Authentication Required"
                    };
                    let _ = client
                        .write_all(format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").as_bytes())
                        .await;
                    return;
                }
                let address = routes.lock().unwrap().get(&target).cloned().unwrap_or(target);
                let Ok(mut server) = tokio::net::TcpStream::connect(&address).await else {
                    let _ = client
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (url, forwarded)
}

/// `127.0.0.1:PORT` where nothing listens, routed by the proxy to `member`.
fn proxied_only(member: &fedns_kube_emulator::Emulator) -> (String, String) {
    let listed = format!("127.0.0.1:{}", free_port());
    let real = member
        .url()
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    (listed, real)
}

/// kubefed's `spec.proxyURL` (kubernetes-sigs/kubefed
/// 16fb853905f930eff43ef16e24f479f60b6eaa9b,
/// `pkg/apis/core/v1beta1/kubefedcluster_types.go`; the member client
/// takes it as its transport's proxy in `pkg/controller/util/cluster_util.go`):
/// b is listed at an address only the proxy reaches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubefed_proxy_url_is_the_only_way_to_a_member() {
    // The proxy starts first (its URL goes into b); b's route is added once b exists.
    let routes = Routes::default();
    let (proxy_url, forwarded) = recording_proxy(routes.clone(), None).await;
    let (listed_tx, listed_rx) = std::sync::mpsc::channel();
    let s = setup(Engine::Kubefed, &[], |f| {
        let (listed, real) = proxied_only(f.member("b").unwrap());
        routes.lock().unwrap().insert(listed.clone(), real);
        listed_tx.send(listed.clone()).unwrap();
        f.register_engine(Engine::Kubefed, "a", json!({})).unwrap();
        f.register_engine(
            Engine::Kubefed,
            "b",
            json!({"apiEndpoint": format!("https://{listed}"), "proxyURL": proxy_url}),
        )
        .unwrap();
        f.register_engine(Engine::Kubefed, "c", json!({})).unwrap();
    })
    .await;
    let listed = listed_rx.recv().unwrap();
    wait_global(
        &s,
        "b published through its proxyURL",
        "203.0.113.1,203.0.113.2,203.0.113.3",
    )
    .await;
    let connects = forwarded.lock().unwrap().connects.clone();
    assert!(
        connects.iter().any(|(target, _)| target == &listed),
        "no CONNECT to b's listed address: {connects:?}"
    );
    assert!(
        connects.iter().all(|(target, _)| target == &listed),
        "only b goes through the proxy: {connects:?}"
    );
    s.federation.stop();
}

/// Karmada's `spec.proxyHeader` (karmada-io/karmada
/// f8fdd02df3760fd9521624f284877fa84e7be6ef, `pkg/apis/cluster/v1alpha1/types.go`):
/// sent on the CONNECT to `spec.proxyURL`, a value with commas as several
/// values (`pkg/util/round_trippers.go`, used by `pkg/util/membercluster_client.go`).
/// The proxy refuses a tunnel without its credentials header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_proxy_header_goes_to_the_proxy() {
    let routes = Routes::default();
    let (proxy_url, forwarded) =
        recording_proxy(routes.clone(), Some(("Proxy-Authorization", "Basic ZmVkbnM6czNjcmV0"))).await;
    let (listed_tx, listed_rx) = std::sync::mpsc::channel();
    let s = setup(Engine::Karmada, &[], |f| {
        let (listed, real) = proxied_only(f.member("b").unwrap());
        routes.lock().unwrap().insert(listed.clone(), real);
        listed_tx.send(listed.clone()).unwrap();
        f.register_engine(Engine::Karmada, "a", json!({})).unwrap();
        f.register_engine(
            Engine::Karmada,
            "b",
            json!({"apiEndpoint": format!("https://{listed}"), "proxyURL": proxy_url,
                "proxyHeader": {"Proxy-Authorization": "Basic ZmVkbnM6czNjcmV0", "X-Fleet-Tenant": "blue,green"}}),
        )
        .unwrap();
        f.register_engine(Engine::Karmada, "c", json!({})).unwrap();
    })
    .await;
    let listed = listed_rx.recv().unwrap();
    wait_global(
        &s,
        "b published through its proxy with the proxy's headers",
        "203.0.113.1,203.0.113.2,203.0.113.3",
    )
    .await;
    let connects = forwarded.lock().unwrap().connects.clone();
    let (_, headers) = connects
        .iter()
        .find(|(target, _)| target == &listed)
        .unwrap_or_else(|| panic!("no CONNECT to b's listed address: {connects:?}"));
    let values = |name: &str| -> Vec<&str> {
        headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(
        values("proxy-authorization"),
        vec!["Basic ZmVkbnM6czNjcmV0"],
        "{headers:?}"
    );
    assert_eq!(values("x-fleet-tenant"), vec!["blue", "green"], "{headers:?}");
    assert!(
        values("authorization").is_empty(),
        "the member's token stays inside the tunnel: {headers:?}"
    );
    s.federation.stop();
}

/// The `Ready` condition (reason, message) of MemberCluster `name`.
async fn member_ready(host: &kube::Client, name: &str) -> Option<(String, String)> {
    let api: Api<fedns_api::MemberCluster> = Api::namespaced(host.clone(), "fedns-system");
    let cluster = api.get(name).await.ok()?;
    let status = cluster.status?;
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some((ready.reason.clone(), ready.message.clone()))
}

/// Issue #57: a MemberCluster's kubeconfig Secret whose user has `exec`
/// ran that command as the controller (and in `fedns explain
/// --from-cluster` on the operator's machine). Member c's Secret names
/// `fedns-test-plugin`, a script on the controller's PATH that leaves a
/// marker file and prints c's token: without `--allow-exec-plugin` it
/// never runs (c is `Ready=False`, reason `CredentialsRefused`, naming the
/// field; explain refuses too), with `--allow-exec-plugin
/// fedns-test-plugin` it runs and c joins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_secret_exec_runs_only_when_the_controller_allows_its_command() {
    let dir = temp_dir("member-exec");
    let federation = Federation::start(&dir, "fedns-system", &["a", "b", "c"]).await.unwrap();
    for (name, n) in [("a", 1), ("b", 2), ("c", 3)] {
        federation
            .member(name)
            .unwrap()
            .seed_yaml(
                name,
                &member_yaml(&format!("r{n}"), &format!("r{n}a"), &[&format!("203.0.113.{n}")]),
            )
            .unwrap();
    }
    federation.register("a", json!({})).unwrap();
    federation.register("b", json!({})).unwrap();

    // The plugin: a marker, then c's token as an ExecCredential.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("plugin-ran");
    let c = federation.member("c").unwrap();
    let credential = json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
        "status": {"token": c.token()}});
    let plugin = bin.join("fedns-test-plugin");
    write(
        &plugin,
        &format!(
            "#!/bin/sh\ntouch '{}'\nprintf '%s\\n' '{credential}'\n",
            marker.display()
        ),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    use base64::Engine as _;
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": c.url(),
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(c.ca_pem())}}],
        "users": [{"name": "c", "user": {"exec": {"command": "fedns-test-plugin",
            "apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}],
        "current-context": "c",
    });
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c-kubeconfig", "namespace": "fedns-system"},
            "stringData": {"kubeconfig": serde_yaml_ng::to_string(&kubeconfig).unwrap()}},
        {"apiVersion": "core.fedns.io/v1alpha1", "kind": "MemberCluster",
            "metadata": {"name": "c", "namespace": "fedns-system"},
            "spec": {"apiEndpoint": c.url(), "secretRef": {"name": "c-kubeconfig"}}},
    ]});
    federation
        .host
        .seed_yaml("member c", &serde_json::to_string(&objects).unwrap())
        .unwrap();
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let host = client_of(&federation.host).await;
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let host_kubeconfig = dir.join("host.kubeconfig");
    let controller = |extra: &[&str]| {
        let mut args = vec![
            "controller".to_owned(),
            "--kubeconfig".to_owned(),
            host_kubeconfig.display().to_string(),
            "--dns-listen".to_owned(),
            format!("127.0.0.1:{}", free_port()),
            "--metrics-addr".to_owned(),
            format!("127.0.0.1:{}", free_port()),
            "--udp-workers".to_owned(),
            "1".to_owned(),
            // The second controller need not wait for the first one's Lease.
            "--leader-elect=false".to_owned(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_fedns_with_env(&args, &[("PATH", &path)])
    };
    let wait_targets = |want: &'static str, what: &'static str| {
        let host = host.clone();
        async move {
            let started = std::time::Instant::now();
            while global_targets(&host).await != want {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "{what}: global targets {:?}, wanted {want:?}",
                    global_targets(&host).await
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };

    // No flag: the plugin is refused, by name, and never runs.
    let refusing = controller(&[]);
    let started = std::time::Instant::now();
    let (reason, message) = loop {
        if let Some((reason, message)) = member_ready(&host, "c")
            .await
            .filter(|(r, _)| r == "CredentialsRefused")
        {
            break (reason, message);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "c not refused within 30 s: {:?}",
            member_ready(&host, "c").await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!("c: {reason}: {message}");
    assert!(
        message.starts_with("Secret c-kubeconfig key kubeconfig: user \"c\" exec runs command \"fedns-test-plugin\""),
        "{message}"
    );
    assert!(message.contains("--allow-exec-plugin=fedns-test-plugin"), "{message}");
    wait_targets("203.0.113.1,203.0.113.2", "a and b published, c refused").await;
    wait_event(&host, "c", "exec runs command \"fedns-test-plugin\"").await;
    assert!(!marker.exists(), "the controller ran the Secret's plugin");

    // fedns explain --from-cluster, on "the operator's machine" (the
    // same PATH): refused as well, unless the command is allowed there.
    let explain = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
            .args(["explain", "nginx.ns.myfed", "--from-cluster", "c", "--kubeconfig"])
            .arg(&host_kubeconfig)
            .args(extra)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let out = explain(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "explain connected: {stderr}");
    assert!(stderr.contains("CredentialsRefused"), "{stderr}");
    assert!(!marker.exists(), "explain ran the Secret's plugin");
    let out = explain(&["--allow-exec-plugin", "fedns-test-plugin"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("connecting to member"), "{stderr}");
    assert!(marker.exists(), "explain did not run the allowed plugin: {stderr}");
    std::fs::remove_file(&marker).unwrap();
    drop(refusing);

    // The command allowed by name: it runs, and c joins.
    let _allowing = controller(&["--allow-exec-plugin", "fedns-test-plugin"]);
    wait_targets(
        "203.0.113.1,203.0.113.2,203.0.113.3",
        "c joins through its allowed plugin",
    )
    .await;
    assert!(marker.exists(), "c joined without running its plugin");
    federation.stop();
}

/// Tunnels each proxy opened in `window`, sampled every second: (opened
/// in the window, the samples).
async fn tunnels_in(window: Duration, proxies: &[&ConnectProxy]) -> (Vec<usize>, Vec<Vec<usize>>) {
    use std::sync::atomic::Ordering;
    let count = || {
        proxies
            .iter()
            .map(|p| p.tunnels.load(Ordering::Relaxed))
            .collect::<Vec<_>>()
    };
    let before = count();
    let mut samples = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < window {
        tokio::time::sleep(Duration::from_secs(1)).await;
        samples.push(count());
    }
    let after = count();
    (after.iter().zip(&before).map(|(a, b)| a - b).collect(), samples)
}

/// Waits (30 s at most) until no proxy has opened a tunnel for 3 s.
async fn tunnels_quiet(proxies: &[&ConnectProxy]) {
    use std::sync::atomic::Ordering;
    let count = || {
        proxies
            .iter()
            .map(|p| p.tunnels.load(Ordering::Relaxed))
            .collect::<Vec<_>>()
    };
    let started = std::time::Instant::now();
    let (mut last, mut since) = (count(), std::time::Instant::now());
    while started.elapsed() < EVENTUALLY && since.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = count();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        }
    }
    println!(
        "tunnels so far {last:?}; {:?} without a new one after {:?}",
        since.elapsed(),
        started.elapsed()
    );
}

/// Issue #58 item 8: through a Karmada cluster's `spec.proxyURL` a
/// member's connections must be reused, so a steady member keeps the
/// tunnels of its long-lived connections (its watches; its probes and
/// lists share pooled ones). b goes through one proxy with kube's own
/// tunnel, c through another with `spec.proxyHeader` (fedns's own tunnel
/// stack). Over 10 s of steady state neither proxy may open more than 3
/// tunnels (measured 0, with this change and before it). While b is
/// down its watches retry within 2 s each: kube's watcher reset their
/// backoff before every list, so they retried 5 to 10 times a second,
/// each a new tunnel (measured 144 tunnels in 5 s before, 59 now).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_proxy_url_tunnels_are_reused() {
    let proxy_b = connect_proxy().await;
    let proxy_c = connect_proxy().await;
    let (url_b, url_c) = (proxy_b.url.clone(), proxy_c.url.clone());
    let s = setup(Engine::Karmada, &[], |f| {
        f.register_engine(Engine::Karmada, "a", json!({})).unwrap();
        f.register_engine(Engine::Karmada, "b", json!({"proxyURL": url_b}))
            .unwrap();
        f.register_engine(
            Engine::Karmada,
            "c",
            json!({"proxyURL": url_c, "proxyHeader": {"X-Fleet-Tenant": "blue"}}),
        )
        .unwrap();
    })
    .await;
    let all = "203.0.113.1,203.0.113.2,203.0.113.3";
    wait_global(&s, "a, b and c published, b and c through their proxies", all).await;
    wait_dig(&s, GLOBAL, &["203.0.113.1", "203.0.113.2", "203.0.113.3"]).await;
    let proxies = [&proxy_b, &proxy_c];
    // Steady state: the watches have listed and the probes run.
    tunnels_quiet(&proxies).await;
    let (opened, samples) = tunnels_in(Duration::from_secs(10), &proxies).await;
    println!("steady: tunnels opened in 10 s through b's and c's proxies {opened:?}; each second {samples:?}");
    assert!(
        opened.iter().all(|n| *n <= 3),
        "{opened:?} tunnels in 10 s of steady state: {samples:?}"
    );

    // b down: its probes and watches retry, each within 2 s.
    s.federation.member("b").unwrap().stop();
    wait_global(&s, "b out while down", "203.0.113.1,203.0.113.3").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (opened, samples) = tunnels_in(Duration::from_secs(5), &proxies).await;
    println!("b down: tunnels opened in 5 s {opened:?}; each second {samples:?}");
    assert!(
        opened[0] <= 100,
        "{} tunnels in 5 s to a member that is down (more than 20 a second): {samples:?}",
        opened[0]
    );
    s.federation.member("b").unwrap().resume().await.unwrap();
    wait_global(&s, "b back", all).await;
    tunnels_quiet(&proxies).await;
    let (opened, samples) = tunnels_in(Duration::from_secs(10), &proxies).await;
    println!("steady again: tunnels opened in 10 s {opened:?}; each second {samples:?}");
    assert!(
        opened.iter().all(|n| *n <= 3),
        "{opened:?} tunnels in 10 s of steady state: {samples:?}"
    );
    s.federation.stop();
}

/// `dig` of `name` A once: its RCODE (`NOERROR`, `NXDOMAIN`; "" on a
/// timeout) and its A answers, sorted.
fn dig_once(port: u16, name: &str) -> (String, Vec<String>) {
    let out = std::process::Command::new("dig")
        .args(["+time=1", "+tries=1", "-p", &port.to_string(), "@127.0.0.1", name, "A"])
        .output()
        .expect("dig");
    let text = String::from_utf8_lossy(&out.stdout);
    let status = text
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(',').next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let mut answers: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.len() >= 5 && fields[3] == "A").then(|| fields[4].to_owned())
        })
        .collect();
    answers.sort();
    (status, answers)
}

/// Issue #58 item 8: renaming an Argo CD cluster (key `name` of its
/// cluster Secret) withdrew its records and published them again once the
/// member under the new name had connected, listed and passed its probes.
/// Now the member under the old name keeps serving until the new one is
/// ready: the name is answered throughout. The only member is renamed, so
/// a gap is an empty answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argocd_cluster_renamed_keeps_its_records() {
    use fedns_controller::federation::ARGOCD_NAMESPACE;
    let s = setup(Engine::Argocd, &[], |f| {
        f.register_engine(Engine::Argocd, "a", json!({})).unwrap();
    })
    .await;
    wait_global(&s, "a published", "203.0.113.1").await;
    wait_dig(&s, GLOBAL, &["203.0.113.1"]).await;

    // Dig every 100 ms for 10 s; the Secret's name changes after 1 s.
    let port = s.dns_port;
    let digs = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut seen = Vec::new();
        while started.elapsed() < Duration::from_secs(10) {
            let (status, answers) = dig_once(port, GLOBAL);
            seen.push((started.elapsed(), status, answers));
            std::thread::sleep(Duration::from_millis(100));
        }
        seen
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let secrets: Api<Secret> = Api::namespaced(s.host.clone(), ARGOCD_NAMESPACE);
    secrets
        .patch(
            "cluster-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"name": "a-renamed"}})),
        )
        .await
        .unwrap();
    let renamed = std::time::Instant::now();
    // The member runs under its new name; the old one is gone.
    let started = std::time::Instant::now();
    loop {
        let text = metrics(&s).await;
        let new = text.contains(r#"fedns_member_ready{cluster="a-renamed",source="argocd"} 1"#);
        let old = text.contains(r#"fedns_member_ready{cluster="a","#);
        if new && !old {
            println!(
                "member a runs as a-renamed, a gone: {:?} after the rename",
                renamed.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "a-renamed ready and a gone not within {EVENTUALLY:?}: {}",
            text.lines()
                .filter(|l| l.starts_with("fedns_member_ready"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        s._controller
            .log_contains("renamed member cluster handed over: the new name is warm"),
        "the old name went before the new one was warm"
    );
    let seen = digs.await.unwrap();
    // What was answered, as runs of the same answer.
    let mut runs: Vec<(Duration, usize, String, Vec<String>)> = Vec::new();
    for (at, status, answers) in &seen {
        match runs.last_mut() {
            Some((_, n, s, a)) if s == status && a == answers => *n += 1,
            _ => runs.push((*at, 1, status.clone(), answers.clone())),
        }
    }
    println!("{} digs of {GLOBAL} through the rename (at 1 s):", seen.len());
    for (at, n, status, answers) in &runs {
        println!("  from {at:>8.1?}: {n:>3} × {status} {answers:?}");
    }
    let bad: Vec<_> = seen
        .iter()
        .filter(|(_, status, answers)| status != "NOERROR" || answers != &["203.0.113.1"])
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} answers were not a's address: {runs:?}",
        bad.len(),
        seen.len()
    );
    // And after: published under the new member name only.
    let api: Api<ServiceDNSRecord> = Api::namespaced(s.host.clone(), "ns");
    let started = std::time::Instant::now();
    loop {
        let record = api.get("nginx").await.unwrap();
        let clusters: Vec<String> = record
            .status
            .iter()
            .flat_map(|s| s.dns.iter().map(|d| d.cluster.clone()))
            .collect();
        if clusters == ["a-renamed"] {
            println!(
                "status.dns names a-renamed only (looked at once the digs ended, {:?} after the rename)",
                renamed.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "status.dns clusters {clusters:?}, wanted [a-renamed]"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.federation.stop();
}
