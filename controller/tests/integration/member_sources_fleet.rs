//! `fedns controller --member-source clusternet|capi|argocd|clusterprofile`:
//! the host emulator holds the inventory (ManagedClusters and their
//! `child-cluster-deployer` Secrets, Cluster API Clusters and their
//! kubeconfig Secrets, Argo CD cluster Secrets, ClusterProfiles and the
//! secretreader's token Secrets), as each inventory's own controllers
//! write it; members are emulators. Per source: registration (topology
//! from the inventory, else the Nodes), the inventory's readiness reported
//! but not obeyed, credential rotation, an unreachable member, a malformed
//! object or Secret (an Event and a metric on that member, the others
//! unaffected), removal; then two sources at once with a name both claim.

use std::time::Duration;

use crate::common::temp_dir;
use crate::member_sources::{
    metrics, set_token, setup, setup_with_env, wait_dig, wait_event, wait_global, wait_row, Setup, GLOBAL,
};
use fedns_controller::federation::{
    clusternet_id, inventory_objects, Engine, ARGOCD_NAMESPACE, CAPI_NAMESPACE, CLUSTERPROFILE_NAMESPACE,
    CLUSTERPROFILE_SECRET_NAMESPACE,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::json;

const ALL: &str = "203.0.113.1,203.0.113.2,203.0.113.3";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn managed_clusters(host: &kube::Client, name: &str) -> Api<DynamicObject> {
    let r = resource("clusters.clusternet.io", "v1beta1", "ManagedCluster", "managedclusters");
    Api::namespaced_with(host.clone(), &format!("clusternet-{name}"), &r)
}

fn capi_clusters(host: &kube::Client) -> Api<DynamicObject> {
    let r = resource("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters");
    Api::namespaced_with(host.clone(), CAPI_NAMESPACE, &r)
}

fn cluster_profiles(host: &kube::Client) -> Api<DynamicObject> {
    let r = resource("multicluster.x-k8s.io", "v1alpha1", "ClusterProfile", "clusterprofiles");
    Api::namespaced_with(host.clone(), CLUSTERPROFILE_NAMESPACE, &r)
}

/// Waits until /metrics has `needle`.
async fn wait_metric(s: &Setup, needle: &str) {
    let started = std::time::Instant::now();
    loop {
        let text = metrics(s).await;
        if text.contains(needle) {
            println!("{needle}: after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no {needle:?} within 30 s: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn merge_status(api: &Api<DynamicObject>, name: &str, status: serde_json::Value) {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
        .await
        .unwrap();
}

/// Registers `a` (with `a_extra`: its topology), `b` (with `b_extra`) and
/// `c` (with `c_extra`) with `engine`, and seeds `bad` (a malformed object)
/// in the host.
fn register_three(
    f: &fedns_controller::federation::Federation,
    engine: Engine,
    [a_extra, b_extra, c_extra]: [serde_json::Value; 3],
    bad: &str,
) {
    f.register_engine(engine, "a", a_extra).unwrap();
    f.register_engine(engine, "b", b_extra).unwrap();
    f.register_engine(engine, "c", c_extra).unwrap();
    f.host.seed_yaml("bad", bad).unwrap();
}

/// `a_row` (a's topology from the inventory) and the other rows are
/// published, and the malformed object `object` (member `member`) is
/// reported: an Event mentioning `note`, `fedns_member_ready` 0.
async fn published_and_malformed_reported(s: &Setup, a_row: &str, object: &str, member: &str, note: &str) {
    wait_global(s, "three members published", ALL).await;
    wait_row(s, a_row).await;
    wait_row(s, "nginx.ns.myfed.svc.r3a.r3.example.com A 203.0.113.3").await;
    wait_event(&s.host, object, note).await;
    let source = s.engine.as_str();
    wait_metric(
        s,
        &format!(r#"fedns_member_ready{{cluster="{member}",source="{source}"}} 0"#),
    )
    .await;
}

/// The inventory's own readiness of `name` set to not ready (`status`
/// merged into the object's status) is reported (`fedns_member_engine_ready`
/// `gauge`: 0 False, -1 Unknown), not obeyed.
async fn not_ready_is_reported_not_obeyed(
    s: &Setup,
    api: &Api<DynamicObject>,
    name: &str,
    status: serde_json::Value,
    gauge: i64,
) {
    merge_status(api, name, status).await;
    let source = s.engine.as_str();
    wait_metric(
        s,
        &format!(r#"fedns_member_engine_ready{{cluster="{name}",source="{source}"}} {gauge}"#),
    )
    .await;
    let text = metrics(s).await;
    assert!(
        text.contains(&format!(
            r#"fedns_member_ready{{cluster="{name}",source="{source}"}} 1"#
        )),
        "{text}"
    );
}

/// Key `token` of Secret `secret` set wrong takes member `member` out
/// (global targets `without`), its own token brings it back.
async fn token_rotation(s: &Setup, secrets: &Api<Secret>, secret: &str, member: &str, without: &str) {
    set_token(secrets, secret, "wrong").await;
    wait_global(s, &format!("{member} out with a wrong token"), without).await;
    let token = s.federation.member(member).unwrap().token().to_owned();
    set_token(secrets, secret, &token).await;
    wait_global(s, &format!("{member} back with the rotated token"), ALL).await;
}

/// Removal: inventory object `name` deleted, the global targets become `want`.
async fn removed(s: &Setup, api: Api<DynamicObject>, name: &str, want: &str) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_global(s, &format!("{name} removed"), want).await;
}

/// Stops member `name`: the global targets become `without`; resumed,
/// they are `with` again.
async fn unreachable_member_leaves_and_returns(s: &Setup, name: &str, without: &str, with: &str) {
    s.federation.member(name).unwrap().stop();
    wait_global(s, &format!("unreachable {name} leaves"), without).await;
    s.federation.member(name).unwrap().resume().await.unwrap();
    wait_global(s, &format!("{name} back"), with).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusternet_managed_clusters_are_members() {
    let s = setup(Engine::Clusternet, &[], |f| {
        // a: topology from its labels; b: a socket child, through the
        // hub's proxy path; c: direct with stored credentials. Malformed:
        // a ManagedCluster whose agent stored no credentials, as the hub's
        // approver creates it (clusternet/clusternet
        // 19245baa35587e3f5d8a02511915c85744b3d606,
        // pkg/controllermanager/approver/approver.go: the cluster-id and
        // cluster-name labels; `clusterId` a UUID string, as the CRD's
        // pattern requires).
        let id = clusternet_id("nocreds");
        register_three(
            f,
            Engine::Clusternet,
            [
                json!({"metadata": {"labels": {"topology.kubernetes.io/region": "eu", "topology.kubernetes.io/zone": "eu-1"}}}),
                json!({"status": {"useSocket": true}}),
                json!({}),
            ],
            &format!(
                "apiVersion: v1\nkind: Namespace\nmetadata: {{name: clusternet-nocreds}}\n---\napiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\nmetadata: {{name: nocreds, namespace: clusternet-nocreds, labels: {{clusternet.io/created-by: clusternet-agent, clusters.clusternet.io/cluster-id: {id}, clusters.clusternet.io/cluster-name: nocreds}}}}\nspec: {{clusterId: {id}, clusterType: EdgeCluster, syncMode: Pull}}\n"
            ),
        );
    })
    .await;
    published_and_malformed_reported(
        &s,
        "nginx.ns.myfed.svc.eu-1.eu.example.com A 203.0.113.1",
        "nocreds",
        "nocreds",
        "child-cluster-deployer (the child's credentials, written by clusternet-agent) not found",
    )
    .await;
    wait_dig(&s, GLOBAL, &["203.0.113.1", "203.0.113.2", "203.0.113.3"]).await;
    // The hub's socket proxy path, as the emulator serves it: b's API
    // with b's token passed as Clusternet's clients pass it; none, a clear error.
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&s.federation.host.kubeconfig_yaml()).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let proxy = fedns_controller::members::sources::clusternet::proxy_path(&clusternet_id("b"));
    config.cluster_url = format!("{}{proxy}", s.federation.host.url()).parse().unwrap();
    config.default_retry = false;
    let started = std::time::Instant::now();
    let nodes = |config: kube::Config| async move {
        Api::<k8s_openapi::api::core::v1::Node>::all(kube::Client::try_from(config).unwrap())
            .list(&Default::default())
            .await
    };
    let err = nodes(config.clone()).await.unwrap_err();
    assert!(err.to_string().contains("no child token"), "{err}");
    config.auth_info.impersonate = Some("clusternet".into());
    config.auth_info.impersonate_user_extra = Some(
        [(
            "clusternet-token".to_owned(),
            vec![s.federation.member("b").unwrap().token().to_owned()],
        )]
        .into(),
    );
    let listed = nodes(config).await.unwrap();
    assert!(!listed.items.is_empty(), "b's Nodes through the socket proxy");
    println!("socket proxy path checked in {:?}", started.elapsed());
    // The hub's view of a silent agent (clusternet/clusternet
    // 19245baa35587e3f5d8a02511915c85744b3d606,
    // pkg/controllers/clusters/clusterlifecycle/clusterlifecycle_controller.go:
    // Ready=Unknown, the probes reset).
    not_ready_is_reported_not_obeyed(
        &s,
        &managed_clusters(&s.host, "a"),
        "a",
        json!({"readyz": false, "livez": false, "healthz": false, "conditions": [{"type": "Ready",
            "status": "Unknown", "reason": "ClusterStatusUnknown",
            "message": "Clusternet agent stopped posting cluster status.",
            "lastTransitionTime": "2026-01-01T00:10:00Z"}]}),
        -1,
    )
    .await;
    // Rotation of the socket child's token (carried through the hub).
    let secrets: Api<Secret> = Api::namespaced(s.host.clone(), "clusternet-b");
    token_rotation(&s, &secrets, "child-cluster-deployer", "b", "203.0.113.1,203.0.113.3").await;
    unreachable_member_leaves_and_returns(&s, "c", "203.0.113.1,203.0.113.2", ALL).await;
    removed(&s, managed_clusters(&s.host, "a"), "a", "203.0.113.2,203.0.113.3").await;
    s.federation.stop();
}

/// `--clusternet-through-hub`: the hub proxies only children whose agent
/// keeps a tunnel (`status.useSocket`); a child without one is reported
/// unreachable by design, the others are reached through the hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusternet_through_the_hub_only_children_with_a_tunnel() {
    let s = setup(Engine::Clusternet, &["--clusternet-through-hub"], |f| {
        let socket = json!({"status": {"useSocket": true}});
        f.register_engine(Engine::Clusternet, "a", json!({})).unwrap();
        f.register_engine(Engine::Clusternet, "b", socket.clone()).unwrap();
        f.register_engine(Engine::Clusternet, "c", socket).unwrap();
    })
    .await;
    wait_global(&s, "b and c through the hub", "203.0.113.2,203.0.113.3").await;
    wait_event(&s.host, "a", "unreachable by design: status.useSocket is false").await;
    wait_metric(&s, r#"fedns_member_ready{cluster="a",source="clusternet"} 0"#).await;
    s.federation.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_clusters_are_members() {
    let s = setup(Engine::Capi, &["--capi-namespace", CAPI_NAMESPACE], |f| {
        f.host.record_requests(true);
        seed_capi_key_secrets(f, &["a", "b", "c", "broken"]);
        // Malformed: a kubeconfig Secret that is not a kubeconfig. The
        // Cluster has a spec as every real one does (v1beta2 requires
        // `spec`, with at least one property).
        register_three(
            f,
            Engine::Capi,
            [
                json!({"metadata": {"labels": {"topology.kubernetes.io/region": "us", "topology.kubernetes.io/zone": "us-1"}}}),
                json!({}),
                json!({}),
            ],
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: broken, namespace: fleet}\nspec: {controlPlaneEndpoint: {host: 127.0.0.1, port: 6443}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: broken-kubeconfig, namespace: fleet, labels: {cluster.x-k8s.io/cluster-name: broken}}\ntype: cluster.x-k8s.io/secret\nstringData: {value: 'clusters: [oops'}\n",
        );
    })
    .await;
    let host = s.host.clone();
    published_and_malformed_reported(
        &s,
        "nginx.ns.myfed.svc.us-1.us.example.com A 203.0.113.1",
        "broken",
        "broken",
        "does not parse as a kubeconfig",
    )
    .await;
    wait_metric(&s, r#"fedns_member_engine_ready{cluster="a",source="capi"} 1"#).await;
    not_ready_is_reported_not_obeyed(
        &s,
        &capi_clusters(&host),
        "b",
        json!({"conditions": [{"type": "Available", "status": "False", "reason": "NotAvailable",
            "message": "* RemoteConnectionProbe: Remote connection probe failed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        0,
    )
    .await;

    // Rotation: the kubeconfig Secret rewritten with a wrong token, then the right one.
    let secrets: Api<Secret> = Api::namespaced(host.clone(), CAPI_NAMESPACE);
    let member = s.federation.member("b").unwrap();
    let good = member.kubeconfig_yaml();
    let wrong = good.replace(member.token(), "not-the-token");
    assert_ne!(good, wrong);
    for (what, value, want) in [
        ("b out with a rotated-away token", &wrong, "203.0.113.1,203.0.113.3"),
        ("b back with the new kubeconfig", &good, ALL),
    ] {
        secrets
            .patch(
                "b-kubeconfig",
                &PatchParams::default(),
                &Patch::Merge(json!({"stringData": {"value": value}})),
            )
            .await
            .unwrap();
        wait_global(&s, what, want).await;
    }

    unreachable_member_leaves_and_returns(&s, "a", "203.0.113.2,203.0.113.3", ALL).await;

    // The kubeconfig Secret deleted: reported, the member leaves.
    secrets.delete("c-kubeconfig", &DeleteParams::default()).await.unwrap();
    wait_event(
        &host,
        "c",
        "Secret fleet/c-kubeconfig (Cluster API's kubeconfig Secret) not found",
    )
    .await;
    wait_global(&s, "c out without its kubeconfig", "203.0.113.1,203.0.113.2").await;
    removed(&s, capi_clusters(&host), "a", "203.0.113.2").await;
    only_kubeconfig_secrets_requested(&s.federation.host);
    s.federation.stop();
}

/// Cluster API before v1.11 serves `Cluster` in v1beta1 only: fedns
/// finds that in discovery and reads those Clusters (the same kubeconfig
/// Secrets), their readiness from the v1beta1 `Ready` condition
/// (kubernetes-sigs/cluster-api v1.10.0 `api/v1beta1/condition_consts.go`;
/// a True condition carries only type, status and time, a False one a
/// severity and reason, `util/conditions/setter.go`). The management
/// cluster is an emulator serving the vendored CRD with v1beta2 removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_clusters_of_a_v1beta1_only_server_are_members() {
    let plane = fedns_kube_emulator::Emulator::start_with(fedns_kube_emulator::EmulatorConfig {
        name: "capi-v1beta1".into(),
        ..fedns_kube_emulator::EmulatorConfig::default()
    })
    .await
    .unwrap();
    let crd_yaml = Engine::Capi.crd_yaml();
    let mut crd = serde_yaml_ng::Deserializer::from_str(&crd_yaml)
        .map(|d| <serde_json::Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .unwrap();
    let versions = crd["spec"]["versions"].as_array_mut().unwrap();
    versions.retain(|v| v["name"] == "v1beta1");
    versions[0]["storage"] = json!(true);
    versions[0]["served"] = json!(true);
    plane
        .seed_yaml("capi CRD, v1beta1 only", &serde_json::to_string(&crd).unwrap())
        .unwrap();
    let kubeconfig = temp_dir("capi-v1beta1").join("capi.kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let s = setup(
        Engine::Capi,
        &[
            "--capi-kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--capi-namespace",
            CAPI_NAMESPACE,
        ],
        |f| {
            for name in ["a", "b", "c"] {
                let member = f.member(name).unwrap();
                let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
                    {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                     "metadata": {"name": name, "namespace": CAPI_NAMESPACE},
                     "spec": {},
                     "status": {"phase": "Provisioned", "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
                    {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
                     "metadata": {"name": format!("{name}-kubeconfig"), "namespace": CAPI_NAMESPACE,
                                  "labels": {"cluster.x-k8s.io/cluster-name": name}},
                     "stringData": {"value": member.kubeconfig_yaml()}},
                ]});
                plane.seed_yaml(name, &objects.to_string()).unwrap();
            }
        },
    )
    .await;
    wait_global(&s, "three v1beta1 Clusters published", ALL).await;
    wait_metric(&s, r#"fedns_member_engine_ready{cluster="a",source="capi"} 1"#).await;
    let plane_client = crate::common::client_of(&plane).await;
    let clusters = Api::namespaced_with(
        plane_client,
        CAPI_NAMESPACE,
        &resource("cluster.x-k8s.io", "v1beta1", "Cluster", "clusters"),
    );
    not_ready_is_reported_not_obeyed(
        &s,
        &clusters,
        "b",
        json!({"conditions": [{"type": "Ready", "status": "False", "severity": "Error",
            "reason": "ControlPlaneNotReady", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        0,
    )
    .await;
    s.federation.stop();
    plane.stop();
}

/// Seeds beside each of `clusters` the other Secrets Cluster API writes
/// for it, with the kubeconfig's label and type (kubernetes-sigs/cluster-api
/// ae7ff047db499ac3858ade268ba38db8c9f128bb, `util/secret/certificates.go`
/// `AsSecret`; purposes in `util/secret/consts.go`): private keys fedns
/// must never read.
fn seed_capi_key_secrets(f: &fedns_controller::federation::Federation, clusters: &[&str]) {
    for cluster in clusters {
        for purpose in ["ca", "etcd", "sa", "proxy"] {
            let yaml = format!(
                "apiVersion: v1\nkind: Secret\ntype: cluster.x-k8s.io/secret\nmetadata: {{name: {cluster}-{purpose}, namespace: {CAPI_NAMESPACE}, labels: {{cluster.x-k8s.io/cluster-name: {cluster}}}}}\nstringData: {{tls.crt: not-a-cert, tls.key: not-a-key}}\n"
            );
            f.host.seed_yaml(&format!("{cluster}-{purpose}"), &yaml).unwrap();
        }
    }
}

/// Every request the host received for Secrets of the Clusters' namespace
/// (or of all namespaces) named one kubeconfig Secret (in its path or by a
/// `metadata.name=<cluster>-kubeconfig` field selector); there were some.
/// (fedns's own namespace holds other Secrets it reads.)
fn only_kubeconfig_secrets_requested(host: &fedns_kube_emulator::Emulator) {
    let requests = host.requests();
    let in_fleet = format!("/api/v1/namespaces/{CAPI_NAMESPACE}/secrets");
    let secrets: Vec<_> = requests
        .iter()
        .filter(|r| r.path.starts_with("/api/v1/secrets") || r.path.starts_with(&in_fleet))
        .collect();
    let watched = secrets
        .iter()
        .filter(|r| r.param("watch").as_deref() == Some("true"))
        .count();
    assert!(watched > 0, "no Secret watch at all in {requests:?}");
    for r in secrets {
        let (_, name) = r.path.rsplit_once('/').unwrap();
        let by_name = name.ends_with("-kubeconfig");
        let selected = r
            .param("fieldSelector")
            .and_then(|f| f.strip_prefix("metadata.name=").map(str::to_owned))
            .is_some_and(|n| n.ends_with("-kubeconfig") && !n.contains(','));
        assert!(
            by_name || selected,
            "{} {}?{} requests Secrets other than a kubeconfig",
            r.method,
            r.path,
            r.query
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_cluster_secrets_are_members() {
    // c with EKS's awsAuthConfig, refused (no --allow-argocd-aws-auth;
    // nor AWS credentials anywhere, nor is member c an EKS cluster:
    // member_sources_eks has those); a repository Secret beside the
    // clusters (not a member).
    let exec = json!({"stringData": {"config": {"awsAuthConfig": {"clusterName": "c", "roleARN": "arn:aws:iam::123456789012:role/fedns"}}}});
    // Nowhere to find AWS credentials, and nothing off loopback to ask.
    let no_aws = [
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_CONFIG_FILE", "/nonexistent/fedns-test"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/fedns-test"),
        ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9"),
    ];
    let s = setup_with_env(Engine::Argocd, &["--auto-records"], &no_aws, |f| {
        let labels = json!({"metadata": {"labels": {"topology.kubernetes.io/region": "ap", "topology.kubernetes.io/zone": "ap-1"}}});
        f.register_engine(Engine::Argocd, "a", labels).unwrap();
        f.register_engine(Engine::Argocd, "b", json!({})).unwrap();
        f.register_engine(Engine::Argocd, "c", exec.clone()).unwrap();
        f.host
            .seed_yaml(
                "repo",
                "apiVersion: v1\nkind: Secret\nmetadata: {name: repo-x, namespace: argocd, labels: {argocd.argoproj.io/secret-type: repository}}\nstringData: {name: x, url: https://git.example}\n",
            )
            .unwrap();
    })
    .await;
    let host = s.host.clone();
    wait_global(&s, "a and b published", "203.0.113.1,203.0.113.2").await;
    wait_row(&s, "nginx.ns.myfed.svc.ap-1.ap.example.com A 203.0.113.1").await;
    wait_metric(&s, r#"fedns_member_ready{cluster="c",source="argocd"} 0"#).await;
    wait_event(&host, "cluster-c", "only when started with --allow-argocd-aws-auth").await;
    assert!(
        !metrics(&s).await.contains(r#"cluster="x""#),
        "a repository Secret is no member"
    );

    // c's config replaced by a bearer token: it joins; then rotation.
    let secrets: Api<Secret> = Api::namespaced(host.clone(), ARGOCD_NAMESPACE);
    let member = s.federation.member("c").unwrap();
    let config_of = |member: &fedns_kube_emulator::Emulator, token: &str| {
        let objects = inventory_objects(Engine::Argocd, "c", member, &json!({}));
        let config = objects[0]["stringData"]["config"].as_str().unwrap().to_owned();
        config.replace(member.token(), token)
    };
    for (what, token, want) in [
        ("c joins with a bearer token", member.token(), ALL),
        ("c out with a wrong token", "wrong", "203.0.113.1,203.0.113.2"),
        ("c back", member.token(), ALL),
    ] {
        secrets
            .patch(
                "cluster-c",
                &PatchParams::default(),
                &Patch::Merge(json!({"stringData": {"config": config_of(member, token)}})),
            )
            .await
            .unwrap();
        wait_global(&s, what, want).await;
    }
    // Malformed config JSON: reported, the others stay.
    secrets
        .patch(
            "cluster-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"config": "{not json"}})),
        )
        .await
        .unwrap();
    wait_event(&host, "cluster-b", "key config is not Argo CD's ClusterConfig JSON").await;
    wait_global(&s, "b out with a malformed config", "203.0.113.1,203.0.113.3").await;

    unreachable_member_leaves_and_returns(&s, "a", "203.0.113.3", "203.0.113.1,203.0.113.3").await;

    // --auto-records takes annotated Service templates from the host.
    s.federation
        .host
        .seed_yaml(
            "template",
            "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns, annotations: {multiclusterdns.fedns.io/domain: myfed}}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n",
        )
        .unwrap();
    let records: Api<fedns_api::ServiceDNSRecord> = Api::namespaced(host.clone(), "ns");
    crate::member_sources::wait_record(&records, "web", true).await;

    // Removal: the Secret deleted.
    secrets.delete("cluster-a", &DeleteParams::default()).await.unwrap();
    wait_global(&s, "a removed", "203.0.113.3").await;
    s.federation.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_profiles_are_members() {
    // c is reached through an exec provider of the provider file: a script
    // that checks the cluster info it is given and prints c's token.
    let plugins = temp_dir("clusterprofile-plugins");
    let script = plugins.join("token-plugin.sh");
    let providers = plugins.join("providers.json");
    std::fs::write(
        &providers,
        json!({"providers": [{"name": "script", "execConfig": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": script, "provideClusterInfo": true}}]})
        .to_string(),
    )
    .unwrap();
    let args = ["--clusterprofile-provider-file", providers.to_str().unwrap()];
    let s = setup(Engine::Clusterprofile, &args, |f| {
        let c = f.member("c").unwrap();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncase \"$KUBERNETES_EXEC_INFO\" in *'\"clusterName\":\"c\"'*) ;; *) echo \"no cluster info: $KUBERNETES_EXEC_INFO\" >&2; exit 1;; esac\nprintf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{}\"}}}}'\n",
                c.token()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let objects = inventory_objects(Engine::Clusterprofile, "c", c, &json!({}));
        let mut provider = objects[1]["status"]["accessProviders"][0].clone();
        provider["name"] = json!("script");
        // c's profile offers secretreader first, with no Secret for it:
        // the consumer's order (the file's "script") decides, as in the
        // access library (cluster-inventory-api pkg/access/config.go).
        let mut unusable = objects[1]["status"]["accessProviders"][0].clone();
        unusable["cluster"]["extensions"][0]["extension"]["clusterName"] = json!("no-such-secret");
        // Malformed: a profile whose only access provider fedns does not know.
        register_three(
            f,
            Engine::Clusterprofile,
            [
                json!({"status": {"properties": [
                    {"name": "topology.kubernetes.io/region", "value": "sa"},
                    {"name": "topology.kubernetes.io/zone", "value": "sa-1"}]}}),
                json!({}),
                json!({"status": {"accessProviders": [unusable, provider]}}),
            ],
            "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ClusterProfile\nmetadata: {name: kubelogin-only, namespace: fleet}\nspec: {clusterManager: {name: x}}\nstatus: {accessProviders: [{name: kubelogin, cluster: {server: 'https://127.0.0.1:1'}}]}\n",
        );
    })
    .await;
    let host = s.host.clone();
    published_and_malformed_reported(
        &s,
        "nginx.ns.myfed.svc.sa-1.sa.example.com A 203.0.113.1",
        "kubelogin-only",
        "kubelogin-only",
        "has no provider fedns knows (it has: kubelogin; fedns knows: script, secretreader)",
    )
    .await;
    not_ready_is_reported_not_obeyed(
        &s,
        &cluster_profiles(&host),
        "c",
        json!({"conditions": [{"type": "ControlPlaneHealthy", "status": "False", "reason": "Unhealthy",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        0,
    )
    .await;
    // Rotation of the secretreader's token.
    let secrets: Api<Secret> = Api::namespaced(host.clone(), CLUSTERPROFILE_SECRET_NAMESPACE);
    token_rotation(&s, &secrets, "b", "b", "203.0.113.1,203.0.113.3").await;
    unreachable_member_leaves_and_returns(&s, "b", "203.0.113.1,203.0.113.3", ALL).await;

    // Issue #57: b's clusterName naming a's Secret (a's token, sent to b's
    // server): refused, reported on b; b again once it names its own.
    let b_access = |cluster_name: &str| {
        let member = s.federation.member("b").unwrap();
        let mut access =
            inventory_objects(Engine::Clusterprofile, "b", member, &json!({}))[1]["status"]["accessProviders"].clone();
        access[0]["cluster"]["extensions"][0]["extension"]["clusterName"] = json!(cluster_name);
        json!({"accessProviders": access})
    };
    merge_status(&cluster_profiles(&host), "b", b_access("a")).await;
    wait_event(&host, "b", "clusterName \"a\" is not the ClusterProfile's name").await;
    wait_global(&s, "b out: its clusterName names a's Secret", "203.0.113.1,203.0.113.3").await;
    merge_status(&cluster_profiles(&host), "b", b_access("b")).await;
    wait_global(&s, "b back with its own Secret", ALL).await;

    // The access provider's server changed to nowhere: c leaves.
    merge_status(
        &cluster_profiles(&host),
        "c",
        json!({"accessProviders": [{"name": "script", "cluster": {"server": "https://127.0.0.1:1",
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "c"}}]}}]}),
    )
    .await;
    wait_global(&s, "c out with an unreachable server", "203.0.113.1,203.0.113.2").await;
    removed(&s, cluster_profiles(&host), "a", "203.0.113.2").await;
    s.federation.stop();
}

/// Two inventories at once (Cluster API first, then Argo CD): each adds its
/// clusters; `b`, in both, stays the Cluster API's (the earlier source), the
/// Argo CD Secret gets a NameConflict Event; removing it from Cluster API
/// hands it to Argo CD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_inventories_at_once_and_a_name_both_claim() {
    let s = setup(Engine::Capi, &["--member-source", "argocd"], |f| {
        f.install_engine(Engine::Argocd).unwrap();
        f.register_engine(Engine::Capi, "a", json!({})).unwrap();
        f.register_engine(Engine::Capi, "b", json!({})).unwrap();
        // Argo CD's b points at c's API server: had it won, b's address would be c's.
        let wrong_b = inventory_objects(Engine::Argocd, "c", f.member("c").unwrap(), &json!({}));
        let mut wrong_b = wrong_b[0].clone();
        wrong_b["metadata"]["name"] = json!("cluster-b");
        wrong_b["stringData"]["name"] = json!("b");
        f.host.seed_yaml("argocd b", &wrong_b.to_string()).unwrap();
        f.register_engine(Engine::Argocd, "c", json!({})).unwrap();
    })
    .await;
    let host = s.host.clone();
    wait_global(&s, "a, b (capi) and c (argocd) published", ALL).await;
    wait_event(&host, "cluster-b", "a capi cluster named b is already a member").await;
    let text = metrics(&s).await;
    assert!(
        text.contains(r#"fedns_member_ready{cluster="b",source="capi"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"fedns_member_ready{cluster="c",source="argocd"} 1"#),
        "{text}"
    );

    // b removed from Cluster API: Argo CD's b (c's server) takes the name.
    capi_clusters(&host)
        .delete("b", &DeleteParams::default())
        .await
        .unwrap();
    wait_global(&s, "b handed to Argo CD (c's address)", "203.0.113.1,203.0.113.3").await;
    wait_metric(&s, r#"fedns_member_ready{cluster="b",source="argocd"} 1"#).await;
    s.federation.stop();
}

/// Argo CD's cluster Secrets as upstream writes and reads them
/// (argoproj/argo-cd 37ee0097cf851bc2dd7665fc081bbce61a7e836e:
/// `util/db/cluster.go` `SecretToCluster`, `Cluster.RawRestConfig` in
/// `pkg/apis/application/v1alpha1/types.go`): b and c reached only with a
/// credential plugin (`execProviderConfig`, v1beta1 for b, v1 with
/// `provideClusterInfo` for c), a script logging its calls; and the
/// in-cluster entry, a Secret with only `server`, reached with fedns's
/// own kubeconfig (the host).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_exec_plugins_and_the_in_cluster_entry() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("argocd-exec");
    let plugin = dir.join("plugin.sh");
    // The first token expires 65 s after the plugin's first run: kube-rs
    // renews 60 s early, so it is stale after 5 s; later ones last an hour.
    std::fs::write(
        &plugin,
        format!(
            r#"#!/bin/sh
dir={dir}
now=$(date +%s)
echo "$now $KUBERNETES_EXEC_INFO" >> "$dir/calls-$1.log"
[ -f "$dir/first-$1" ] || echo "$now" > "$dir/first-$1"
first=$(cat "$dir/first-$1")
if [ "$now" -lt $((first + 5)) ]; then exp=$((first + 65)); else exp=$((now + 3600)); fi
version=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"apiVersion":"\([^"]*\)".*/\1/p')
printf '{{"apiVersion":"%s","kind":"ExecCredential","status":{{"token":"%s","expirationTimestamp":"%s"}}}}' "$version" "$MEMBER_TOKEN" "$(date -u -d "@$exp" +%Y-%m-%dT%H:%M:%SZ)"
"#,
            dir = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plugin_path = plugin.to_str().unwrap().to_owned();
    // The plugin allowed by its exact command (issue #57): here its path.
    let s = setup(Engine::Argocd, &["--allow-exec-plugin", &plugin_path], |f| {
        f.register_engine(Engine::Argocd, "a", json!({})).unwrap();
        for (name, version, cluster_info) in [
            ("b", "client.authentication.k8s.io/v1beta1", false),
            ("c", "client.authentication.k8s.io/v1", true),
        ] {
            let token = f.member(name).unwrap().token().to_owned();
            let exec = json!({"command": plugin_path, "args": [name], "env": {"MEMBER_TOKEN": token},
                "apiVersion": version, "provideClusterInfo": cluster_info, "config": {"clusterName": name}});
            f.register_engine(
                Engine::Argocd,
                name,
                json!({"stringData": {"config": {"bearerToken": "", "execProviderConfig": exec}}}),
            )
            .unwrap();
        }
        f.host
            .seed_yaml(
                "in-cluster",
                "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-in-cluster, namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster}}\nstringData: {server: 'https://kubernetes.default.svc'}\n",
            )
            .unwrap();
    })
    .await;
    let started = std::time::Instant::now();
    wait_global(&s, "b and c through their plugin's token", ALL).await;
    wait_metric(
        &s,
        r#"fedns_member_ready{cluster="argocd-in-cluster",source="argocd"} 1"#,
    )
    .await;
    let calls = |name: &str| std::fs::read_to_string(dir.join(format!("calls-{name}.log"))).unwrap_or_default();
    let (b, c) = (calls("b"), calls("c"));
    assert!(
        b.contains(r#""apiVersion":"client.authentication.k8s.io/v1beta1""#),
        "{b}"
    );
    assert!(
        b.contains(r#""kind":"ExecCredential""#) && !b.contains(r#""cluster""#),
        "{b}"
    );
    let c_url = s.federation.member("c").unwrap().url();
    for needle in [
        r#""apiVersion":"client.authentication.k8s.io/v1""#.to_owned(),
        format!(r#""server":"{}""#, c_url.trim_end_matches('/')),
        r#""config":{"clusterName":"c"}"#.to_owned(),
        r#""interactive":false"#.to_owned(),
    ] {
        assert!(c.contains(&needle), "no {needle} in c's KUBERNETES_EXEC_INFO: {c}");
    }
    // Re-run once the first token is stale (its expirationTimestamp), then
    // cached: no more runs while it is valid, b and c staying published.
    let first: u64 = std::fs::read_to_string(dir.join("first-c"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    loop {
        let renewed = calls("c")
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .any(|t| t >= first + 5);
        if renewed {
            println!(
                "c's plugin run again after its token expired: after {:?}",
                started.elapsed()
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no run after expiry: {}",
            calls("c")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs = calls("c").lines().count();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        calls("c").lines().count(),
        runs,
        "the token was not cached: {}",
        calls("c")
    );
    wait_global(&s, "b and c still published", ALL).await;
    s.federation.stop();
}
