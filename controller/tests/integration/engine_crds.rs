//! The cluster CRDs `Engine::crd_yaml` installs are the upstream ones
//! (`fedns_standins::upstream_crds`, vendored under
//! `standins/crds/upstream/`), served by an emulator as kube-apiserver
//! serves them: per engine, (a) the example object shaped as the upstream
//! controllers write it is admitted whole (spec and status, nothing
//! pruned); (b) objects the real API server refuses (a wrong type, a
//! missing required field, a pattern or enum violation, a spec without
//! properties, an incomplete condition, a value not of its `format`, a
//! repeated key of a list-type map, a CEL transition rule) are refused, 422, with
//! the field path in the message; (c) an unknown field is pruned.
//! Karmada (no CRD upstream) and Argo CD (Secrets) are not here.

use crate::common::client_of;
use fedns_controller::federation::Engine;
use fedns_kube_emulator::{Emulator, EmulatorConfig};
use fedns_standins::upstream_crds::examples;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{json, Value};

struct Case {
    engine: Engine,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    /// Where the test's own objects go.
    namespace: &'static str,
    /// The example under `standins/crds/upstream/examples/`.
    example: &'static str,
    /// A spec the CRD admits.
    spec: Value,
    /// Specs refused on create, with the field path the refusal names.
    bad_specs: Vec<(Value, &'static str)>,
    /// Status merge patches on the example refused, with the field path.
    bad_statuses: Vec<(Value, &'static str)>,
    /// A spec merge patch on an admitted object refused by a CEL
    /// transition rule, with the field path and the rule's message.
    bad_update: Option<(Value, &'static str, &'static str)>,
}

fn cases() -> Vec<Case> {
    let uuid = "0f8ba5a3-2b4c-4a61-9d1e-7c3e2a9b6f10";
    vec![
        Case {
            engine: Engine::Kubefed,
            group: "core.kubefed.io",
            version: "v1beta1",
            kind: "KubeFedCluster",
            plural: "kubefedclusters",
            namespace: "kube-federation-system",
            example: examples::KUBEFED_CLUSTER,
            spec: json!({"apiEndpoint": "https://10.0.0.1:6443", "secretRef": {"name": "t"}}),
            bad_specs: vec![
                (json!({"secretRef": {"name": "t"}}), "spec.apiEndpoint"),
                (
                    json!({"apiEndpoint": "https://10.0.0.1:6443", "secretRef": {}}),
                    "spec.secretRef.name",
                ),
                (
                    json!({"apiEndpoint": "https://10.0.0.1:6443", "secretRef": {"name": "t"}, "disabledTLSValidations": "*"}),
                    "spec.disabledTLSValidations",
                ),
                // format: byte (a shortened CA as docs often print it).
                (
                    json!({"apiEndpoint": "https://10.0.0.1:6443", "secretRef": {"name": "t"}, "caBundle": "LS0tLS1CRUdJTi..."}),
                    "spec.caBundle",
                ),
            ],
            // kubefed's conditions need lastProbeTime.
            bad_statuses: vec![(
                json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                "status.conditions[0].lastProbeTime",
            )],
            bad_update: None,
        },
        Case {
            engine: Engine::Clusternet,
            group: "clusters.clusternet.io",
            version: "v1beta1",
            kind: "ManagedCluster",
            plural: "managedclusters",
            namespace: "clusternet-test",
            example: examples::CLUSTERNET_MANAGED_CLUSTER,
            spec: json!({"clusterId": uuid, "clusterType": "EdgeCluster", "syncMode": "Dual"}),
            bad_specs: vec![
                (json!({"clusterId": "1234", "syncMode": "Pull"}), "spec.clusterId"),
                (json!({"clusterId": 1234, "syncMode": "Pull"}), "spec.clusterId"),
                (json!({"clusterId": uuid, "syncMode": "Both"}), "spec.syncMode"),
                (json!({"clusterId": uuid}), "spec.syncMode"),
            ],
            // metav1.Condition: reason is required.
            bad_statuses: vec![(
                json!({"conditions": [{"type": "Ready", "status": "True", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                "status.conditions[0].reason",
            )],
            bad_update: None,
        },
        Case {
            engine: Engine::Capi,
            group: "cluster.x-k8s.io",
            version: "v1beta2",
            kind: "Cluster",
            plural: "clusters",
            namespace: "fleet",
            example: examples::CAPI_CLUSTER,
            spec: json!({"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}}),
            bad_specs: vec![
                (json!({}), "spec"),
                (
                    json!({"controlPlaneEndpoint": {"host": "10.0.0.1", "port": "6443"}}),
                    "spec.controlPlaneEndpoint.port",
                ),
            ],
            bad_statuses: vec![
                (json!({"phase": "Running"}), "status.phase"),
                (
                    json!({"conditions": [{"type": "Available", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
                    "status.conditions[0].message",
                ),
            ],
            bad_update: None,
        },
        Case {
            engine: Engine::Clusterprofile,
            group: "multicluster.x-k8s.io",
            version: "v1alpha1",
            kind: "ClusterProfile",
            plural: "clusterprofiles",
            namespace: "fleet",
            example: examples::CLUSTER_PROFILE,
            spec: json!({"displayName": "x", "clusterManager": {"name": "demo"}}),
            bad_specs: vec![
                (json!({"displayName": "x"}), "spec.clusterManager"),
                (json!({"clusterManager": {}}), "spec.clusterManager.name"),
                (json!({"clusterManager": {"name": 7}}), "spec.clusterManager.name"),
            ],
            // An access provider's cluster needs its server.
            bad_statuses: vec![
                (
                    json!({"accessProviders": [{"name": "secretreader", "cluster": {"certificate-authority-data": "eA=="}}]}),
                    "status.accessProviders[0].cluster.server",
                ),
                // format: byte, as kube-apiserver checks it.
                (
                    json!({"accessProviders": [{"name": "secretreader", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": "<base64 PEM>"}}]}),
                    "status.accessProviders[0].cluster.certificate-authority-data",
                ),
                // conditions are a list-type map keyed by type.
                (
                    json!({"conditions": [
                        {"type": "ControlPlaneHealthy", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                        {"type": "ControlPlaneHealthy", "status": "False", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    ]}),
                    "status.conditions[1]",
                ),
                // format: date-time.
                (
                    json!({"conditions": [
                        {"type": "ControlPlaneHealthy", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "yesterday"},
                    ]}),
                    "status.conditions[0].lastTransitionTime",
                ),
            ],
            bad_update: Some((
                json!({"clusterManager": {"name": "another"}}),
                "spec.clusterManager",
                "ClusterManager is immutable",
            )),
        },
    ]
}

/// Expects `result` to be a 422 naming `field`; returns its message.
fn refused(result: Result<DynamicObject, kube::Error>, field: &str, what: &str) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{what}: {status:?}");
            assert!(
                status.message.contains(&format!("{field}: ")),
                "{what}: {field} not named in {:?}",
                status.message
            );
            println!("{what}: {}", status.message);
            status.message
        }
        Ok(object) => panic!("{what}: admitted: {:?}", object.data),
        Err(other) => panic!("{what}: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_crds_admit_refuse_and_prune_as_upstream() {
    for case in cases() {
        let what = case.kind;
        let emulator = Emulator::start_with(EmulatorConfig {
            name: case.engine.as_str().into(),
            ..EmulatorConfig::default()
        })
        .await
        .unwrap();
        emulator
            .seed_yaml(case.engine.as_str(), &case.engine.crd_yaml())
            .unwrap();
        let client = client_of(&emulator).await;
        let resource = ApiResource {
            group: case.group.into(),
            version: case.version.into(),
            api_version: format!("{}/{}", case.group, case.version),
            kind: case.kind.into(),
            plural: case.plural.into(),
        };

        // (a) The example, spec and status, admitted and kept whole.
        let report = emulator.seed_yaml(&format!("{what} example"), case.example).unwrap();
        assert_eq!((report.applied, report.skipped.len()), (1, 0), "{what}: {report:?}");
        let example: Value = serde_yaml_ng::from_str(case.example).unwrap();
        let name = example["metadata"]["name"].as_str().unwrap();
        let namespace = example["metadata"]["namespace"].as_str().unwrap();
        let examples_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let stored = examples_api.get(name).await.unwrap();
        for part in ["spec", "status"] {
            assert_eq!(stored.data[part], example[part], "{what}: {part} changed on the way in");
        }

        // (b) Refused as the real API server refuses them.
        for (status, field) in &case.bad_statuses {
            refused(
                examples_api
                    .patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
                    .await,
                field,
                &format!("{what} status {status}"),
            );
        }
        emulator
            .seed_yaml(
                "namespace",
                &format!(
                    "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {}}}\n",
                    case.namespace
                ),
            )
            .unwrap();
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), case.namespace, &resource);
        let object = |name: &str, spec: &Value| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": resource.api_version, "kind": case.kind,
                "metadata": {"name": name, "namespace": case.namespace},
                "spec": spec,
            }))
            .unwrap()
        };
        for (i, (spec, field)) in case.bad_specs.iter().enumerate() {
            refused(
                api.create(&PostParams::default(), &object(&format!("bad-{i}"), spec))
                    .await,
                field,
                &format!("{what} spec {spec}"),
            );
        }

        // (c) Unknown fields pruned, at the top and in spec.
        let mut with_unknown = case.spec.clone();
        with_unknown["fednsUnknown"] = json!("x");
        let mut body = object("pruned", &with_unknown);
        body.data["fednsTopLevel"] = json!(1);
        let created = api.create(&PostParams::default(), &body).await.unwrap();
        assert_eq!(created.data["spec"], case.spec, "{what}: spec.fednsUnknown kept");
        assert!(
            created.data.get("fednsTopLevel").is_none(),
            "{what}: fednsTopLevel kept"
        );
        assert_eq!(api.get("pruned").await.unwrap().data["spec"], case.spec, "{what}");
        if let Some((patch, field, message)) = &case.bad_update {
            let refusal = refused(
                api.patch("pruned", &PatchParams::default(), &Patch::Merge(json!({"spec": patch})))
                    .await,
                field,
                &format!("{what} update {patch}"),
            );
            assert!(refusal.contains(message), "{what}: {refusal}");
        }
        println!("{what}: example admitted, refusals named, unknown fields pruned");
        emulator.stop();
    }
}

/// Cluster API serves v1beta1 (deprecated) beside v1beta2 with its own
/// schema: `spec: {}` is a valid v1beta1 Cluster, refused as v1beta2
/// (`minProperties: 1`); a v1beta1 status keeps the v1beta1 shape
/// (`status.phase` enum, conditions whose `reason` has minLength 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_serves_each_version_with_its_own_schema() {
    let emulator = Emulator::start().await.unwrap();
    emulator.seed_yaml("capi", &Engine::Capi.crd_yaml()).unwrap();
    let client = client_of(&emulator).await;
    let api = |version: &str| -> Api<DynamicObject> {
        let resource = ApiResource {
            group: "cluster.x-k8s.io".into(),
            version: version.into(),
            api_version: format!("cluster.x-k8s.io/{version}"),
            kind: "Cluster".into(),
            plural: "clusters".into(),
        };
        Api::namespaced_with(client.clone(), "fleet", &resource)
    };
    let cluster = |version: &str, name: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "Cluster",
            "metadata": {"name": name, "namespace": "fleet"}, "spec": {},
        }))
        .unwrap()
    };
    refused(
        api("v1beta2")
            .create(&PostParams::default(), &cluster("v1beta2", "empty"))
            .await,
        "spec",
        "v1beta2 spec {}",
    );
    api("v1beta1")
        .create(&PostParams::default(), &cluster("v1beta1", "old"))
        .await
        .unwrap();
    refused(
        api("v1beta1")
            .patch_status(
                "old",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "False",
                    "reason": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
            )
            .await,
        "status.conditions[0].reason",
        "v1beta1 condition with an empty reason",
    );
    emulator.stop();
}

/// Every YAML example in `docs/engines.md` applies as written: each
/// document is seeded into an emulator serving every engine's upstream
/// CRD (Karmada's open schema), so a wrong type, a missing required
/// field, a pattern (Clusternet's UUID `clusterId`) or an incomplete
/// `metav1.Condition` fails here; an object of an inventory kind is
/// read back with its spec and status whole (nothing pruned). Core
/// objects (Services, Secrets) are seeded too; their placeholder values
/// stand for a user's own (`docs_examples` checks that they are what a
/// real server and fedns accept: base64, a kubeconfig, Argo CD's JSON).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_page_examples_apply_as_written() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/engines.md")).unwrap();
    let blocks: Vec<&str> = page
        .split("```yaml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 6, "{} YAML examples in docs/engines.md", blocks.len());
    let emulator = Emulator::start().await.unwrap();
    for engine in [
        Engine::Karmada,
        Engine::Kubefed,
        Engine::Clusternet,
        Engine::Capi,
        Engine::Clusterprofile,
    ] {
        emulator.seed_yaml(engine.as_str(), &engine.crd_yaml()).unwrap();
    }
    let client = client_of(&emulator).await;
    let inventory_kinds = [
        ("cluster.karmada.io/v1alpha1", "Cluster", "clusters"),
        ("core.kubefed.io/v1beta1", "KubeFedCluster", "kubefedclusters"),
        ("clusters.clusternet.io/v1beta1", "ManagedCluster", "managedclusters"),
        ("cluster.x-k8s.io/v1beta2", "Cluster", "clusters"),
        ("multicluster.x-k8s.io/v1alpha1", "ClusterProfile", "clusterprofiles"),
    ];
    let mut checked = 0;
    for (i, block) in blocks.iter().enumerate() {
        let origin = format!("docs/engines.md example {}", i + 1);
        let report = emulator
            .seed_yaml(&origin, block)
            .unwrap_or_else(|e| panic!("{origin} refused: {e}\n{block}"));
        assert!(report.skipped.is_empty(), "{origin}: {report:?}");
        for document in serde_yaml_ng::Deserializer::from_str(block) {
            let object: Value = serde::Deserialize::deserialize(document).unwrap();
            let api_version = object["apiVersion"].as_str().unwrap();
            let kind = object["kind"].as_str().unwrap();
            let Some((_, _, plural)) = inventory_kinds.iter().find(|(v, k, _)| *v == api_version && *k == kind) else {
                continue;
            };
            let (group, version) = api_version.split_once('/').unwrap();
            let resource = ApiResource {
                group: group.into(),
                version: version.into(),
                api_version: api_version.into(),
                kind: kind.into(),
                plural: (*plural).into(),
            };
            let name = object["metadata"]["name"].as_str().unwrap();
            let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            let stored = api.get(name).await.unwrap();
            for part in ["spec", "status"] {
                assert_eq!(
                    stored.data[part], object[part],
                    "{origin}: {kind} {name}: {part} changed on the way in"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, inventory_kinds.len(), "inventory objects in the examples");
    println!("{} examples, {checked} inventory objects admitted whole", blocks.len());
    emulator.stop();
}
