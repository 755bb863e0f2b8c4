//! Every CRD fedns ships, as an API server takes it: the generated CRDs
//! (`fedns crds`, the same bytes as `deploy/crds/`, checked in `cli`) are
//! accepted and Established, a schema a real server refuses is refused,
//! every example and docs snippet of a fedns kind is admitted, and
//! `spec.healthCheck.quorum` is checked at admission.
//!
//! Each test runs against a fresh emulator (which applies the API server's
//! CRD rules, `fedns_kube_emulator::crd_validation`) and, when
//! `FEDNS_REAL_KUBECONFIG` names a kubeconfig, against that real API
//! server too (built by the repository's maintainers with a real
//! kube-apiserver on loopback; never in CI). On a real server the tests
//! leave the CRDs and a test namespace behind; custom objects are only
//! ever created with `dryRun=All`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fedns_kube_emulator::Emulator;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::Client;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::common::client_of;

/// Where a real API server's kubeconfig is named.
pub const REAL_KUBECONFIG: &str = "FEDNS_REAL_KUBECONFIG";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The API servers a test runs against: a fresh emulator always, and the
/// real one when [`REAL_KUBECONFIG`] is set (its name printed either way).
pub async fn api_servers() -> Vec<(String, Client, Option<Emulator>)> {
    let emulator = Emulator::start().await.expect("emulator");
    let mut servers = vec![("emulator".to_owned(), client_of(&emulator).await, Some(emulator))];
    match std::env::var(REAL_KUBECONFIG) {
        Ok(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("the real kubeconfig reads");
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .expect("the real kubeconfig is usable");
            servers.push((
                format!("real API server ({path})"),
                Client::try_from(config).expect("client"),
                None,
            ));
        }
        Err(_) => println!("{REAL_KUBECONFIG} not set: the emulator only"),
    }
    servers
}

/// Applies (server-side) every generated CRD and waits until each is
/// Established (30 s), printing how long that took.
pub async fn install_generated_crds(server: &str, client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("fedns-tests").force();
    for file in fedns_api::crd::all() {
        let name = file.crd.metadata.name.clone().unwrap_or_default();
        if let Err(e) = crds.patch(&name, &params, &Patch::Apply(&file.crd)).await {
            panic!("{server}: CRD {name} refused: {e}");
        }
    }
    let started = Instant::now();
    for file in fedns_api::crd::all() {
        let name = file.crd.metadata.name.clone().unwrap_or_default();
        loop {
            let crd = crds.get(&name).await.expect("the CRD reads back");
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{server}: CRD {name} not Established within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    println!("{server}: every fedns CRD Established after {:?}", started.elapsed());
}

async fn ensure_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("a Namespace");
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("namespace {name}: {e}"),
    }
}

/// The API of a fedns kind, from its generated CRD.
fn fedns_api(client: &Client, kind: &str, namespace: Option<&str>) -> Option<Api<DynamicObject>> {
    let crd = fedns_api::crd::all()
        .into_iter()
        .map(|f| f.crd)
        .find(|c| c.spec.names.kind == kind)?;
    let version = &crd.spec.versions[0].name;
    let gvk = GroupVersionKind::gvk(&crd.spec.group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    Some(match (crd.spec.scope.as_str(), namespace) {
        ("Namespaced", Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        ("Namespaced", None) => Api::namespaced_with(client.clone(), "default", &resource),
        _ => Api::all_with(client.clone(), &resource),
    })
}

/// Creates `object` with `dryRun=All`: the server admits it (validation,
/// defaulting, pruning) and stores nothing.
async fn dry_run_create(client: &Client, object: &Value) -> Result<(), String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str();
    let api = fedns_api(client, kind, namespace).ok_or_else(|| format!("{kind} is not a fedns kind"))?;
    let object: DynamicObject = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&params, &object)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The documents of a multi-document YAML text.
fn documents(text: &str, source: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{source}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// The sandbox's files are templates that `fedns sandbox` fills in
/// (`{{url:NAME}}`, `{{ca:NAME}}`, `{{token:NAME}}`, `{{lb-port}}`): each
/// placeholder becomes a value of the shape the sandbox puts there.
fn fill_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, after)) = rest.split_once("{{") {
        out.push_str(before);
        match after.split_once("}}") {
            Some((name, after)) => {
                out.push_str(match name.split(':').next().unwrap_or_default() {
                    "url" => "https://127.0.0.1:6443",
                    // base64 of a PEM's first line: the shape, not a CA.
                    "ca" => "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
                    "token" => "a-token",
                    _ => "8080",
                });
                rest = after;
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every object of a fedns kind in `examples/` (the sandbox's files
/// included) and in the ```yaml blocks of `docs/`, with where it came from.
fn fedns_objects_in_examples_and_docs() -> Vec<(String, Value)> {
    let ours = |v: &Value| {
        v["apiVersion"]
            .as_str()
            .is_some_and(|a| a.starts_with("multiclusterdns.fedns.io/") || a.starts_with("core.fedns.io/"))
    };
    let mut found = Vec::new();
    let mut folders = vec![repo_root().join("examples")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("examples/ reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = fill_placeholders(&std::fs::read_to_string(&path).expect("an example reads"));
                let source = path.strip_prefix(repo_root()).unwrap_or(&path).display().to_string();
                for doc in documents(&text, &source).into_iter().filter(ours) {
                    found.push((source.clone(), doc));
                }
            }
        }
    }
    for entry in std::fs::read_dir(repo_root().join("docs")).expect("docs/ reads") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a doc reads");
        let source = path.strip_prefix(repo_root()).unwrap_or(&path).display().to_string();
        let mut rest = text.as_str();
        while let Some((_, after)) = rest.split_once("```yaml\n") {
            let Some((block, after)) = after.split_once("```") else {
                break;
            };
            for doc in documents(block, &source).into_iter().filter(ours) {
                found.push((source.clone(), doc));
            }
            rest = after;
        }
    }
    found
}

#[tokio::test]
async fn every_generated_crd_is_accepted_and_established() {
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        // Applying them again changes nothing and is accepted (an upgrade
        // path: the same schemas run through the update rules).
        install_generated_crds(&server, &client).await;
    }
}

/// The schema fedns shipped before: `type` and `minimum` inside the
/// `anyOf` of an int-or-string node. A real API server refuses it; so
/// must every test cluster.
#[tokio::test]
async fn a_crd_that_is_not_structural_is_refused() {
    for (server, client, _emulator) in api_servers().await {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "quorums.tests.fedns.io"},
            "spec": {
                "group": "tests.fedns.io", "scope": "Namespaced",
                "names": {"plural": "quorums", "singular": "quorum", "kind": "Quorum", "listKind": "QuorumList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"quorum": {
                        "x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer", "minimum": 1, "maximum": 100},
                                  {"type": "string", "enum": ["Majority", "Any", "All"]}],
                    }}}},
                }}}],
            },
        }))
        .expect("a CRD");
        let params = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let error = crds
            .create(&params, &crd)
            .await
            .expect_err(&format!("{server}: a non-structural CRD was accepted"));
        let text = error.to_string();
        println!("{server}: {text}");
        assert!(
            text.contains("properties[quorum].anyOf[") && text.contains("must be empty to be structural"),
            "{server}: not refused for its structure: {text}"
        );
    }
}

#[tokio::test]
async fn every_example_and_docs_snippet_is_admitted() {
    let objects = fedns_objects_in_examples_and_docs();
    assert!(objects.len() >= 5, "examples found: {}", objects.len());
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        let mut refused = Vec::new();
        for (source, object) in &objects {
            if let Some(ns) = object["metadata"]["namespace"].as_str() {
                ensure_namespace(&client, ns).await;
            }
            if let Err(e) = dry_run_create(&client, object).await {
                refused.push(format!(
                    "{source}: {} {}: {e}",
                    object["kind"], object["metadata"]["name"]
                ));
            }
        }
        assert!(refused.is_empty(), "{server} refused:\n{}", refused.join("\n"));
        println!("{server}: admitted {} objects from examples/ and docs/", objects.len());
    }
}

/// `spec.healthCheck.quorum` is an int-or-string: `Majority`,
/// `Unanimous`, `AnyOne` (or the older `Any`, `All`) or 1..=100.
/// Anything else is refused at admission, naming the field, on the
/// emulator and on a real API server alike.
#[tokio::test]
async fn the_quorum_is_checked_at_admission() {
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        ensure_namespace(&client, "ns").await;
        let record = |quorum: Value| {
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                "metadata": {"name": "nginx", "namespace": "ns"},
                "spec": {"domainRef": "myfed", "healthCheck": {"protocol": "HTTP", "quorum": quorum}},
            })
        };
        for good in [
            json!(1),
            json!(3),
            json!(100),
            json!("Majority"),
            json!("Unanimous"),
            json!("AnyOne"),
            // The spellings before the rename, still admitted.
            json!("Any"),
            json!("All"),
        ] {
            if let Err(e) = dry_run_create(&client, &record(good.clone())).await {
                panic!("{server}: quorum {good} refused: {e}");
            }
        }
        for bad in [
            json!(0),
            json!(101),
            json!(-2),
            json!("50%"),
            json!("lots"),
            json!("majority"),
            json!("3"),
        ] {
            match dry_run_create(&client, &record(bad.clone())).await {
                Ok(()) => panic!("{server}: quorum {bad} was admitted"),
                Err(e) => {
                    println!("{server}: quorum {bad}: {e}");
                    assert!(
                        e.contains("spec.healthCheck.quorum"),
                        "{server}: the message names no field: {e}"
                    );
                }
            }
        }
        // What the controller reads agrees with what admission allows.
        for (value, admitted) in [
            (json!(3), true),
            (json!("Any"), true),
            (json!("AnyOne"), true),
            (json!("anyone"), false),
            (json!("50%"), false),
            (json!(0), false),
        ] {
            let read = serde_json::from_value::<fedns_api::Quorum>(value.clone());
            assert_eq!(read.is_ok(), admitted, "the controller reads quorum {value}: {read:?}");
        }
    }
}

/// The path settings of `spec.healthCheck`: headers that are tokens and
/// not the prober's own, a bounded body string, a server name that is a
/// host name.
#[tokio::test]
async fn path_health_settings_are_checked_at_admission() {
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        ensure_namespace(&client, "ns").await;
        let record = |check: Value| {
            let mut health = json!({"protocol": "HTTPS"});
            json_merge(&mut health, &check);
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "IngressDNSRecord",
                "metadata": {"name": "web", "namespace": "ns"},
                "spec": {"domainRef": "myfed", "hosts": ["web.example.com"], "healthCheck": health},
            })
        };
        for good in [
            json!({"expectedBody": "READY", "serverName": "origin.example.com",
                "headers": [{"name": "X-Health-Token", "value": "s3cret value"}, {"name": "Accept", "value": ""}]}),
            json!({"caCertificateRef": {"name": "lb-ca"}}),
            json!({"caCertificateRef": {"kind": "Secret", "name": "lb-tls", "key": "tls.crt"}, "insecureSkipTlsVerify": false}),
        ] {
            if let Err(e) = dry_run_create(&client, &record(good.clone())).await {
                panic!("{server}: {good} refused: {e}");
            }
        }
        for (bad, field) in [
            (
                json!({"headers": [{"name": "Host", "value": "x"}]}),
                "Host comes from healthCheck.host",
            ),
            (
                json!({"headers": [{"name": "user-agent", "value": "x"}]}),
                "Host comes from healthCheck.host",
            ),
            (
                json!({"headers": [{"name": "X Bad", "value": "x"}]}),
                "spec.healthCheck.headers[0].name",
            ),
            (
                json!({"headers": [{"name": "X-A", "value": "a
b"}]}),
                "spec.healthCheck.headers[0].value",
            ),
            (
                json!({"expectedBody": "x".repeat(256)}),
                "spec.healthCheck.expectedBody",
            ),
            (json!({"serverName": "not a name"}), "spec.healthCheck.serverName"),
            (
                json!({"protocol": "HTTP", "caCertificateRef": {"name": "lb-ca"}}),
                "caCertificateRef applies to protocol HTTPS only",
            ),
            (
                json!({"caCertificateRef": {"name": "lb-ca"}, "insecureSkipTlsVerify": true}),
                "caCertificateRef and insecureSkipTlsVerify exclude each other",
            ),
            (
                json!({"caCertificateRef": {"kind": "Vault", "name": "x"}}),
                "spec.healthCheck.caCertificateRef.kind",
            ),
        ] {
            match dry_run_create(&client, &record(bad.clone())).await {
                Ok(()) => panic!("{server}: {bad} was admitted"),
                Err(e) => {
                    println!("{server}: {bad}: {e}");
                    assert!(e.contains(field), "{server}: {field:?} not in: {e}");
                }
            }
        }
    }
}

/// `spec.minHealthy`: counts 1..10000 or percentages 1%..100%, checked at
/// admission (int-or-string, as `quorum`).
#[tokio::test]
async fn min_healthy_is_checked_at_admission() {
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        ensure_namespace(&client, "ns").await;
        let record = |min: Value| {
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                "metadata": {"name": "web", "namespace": "ns"},
                "spec": {"domainRef": "myfed", "minHealthy": min},
            })
        };
        for good in [
            json!({"addresses": 2}),
            json!({"endpoints": "30%"}),
            json!({"addresses": "100%", "endpoints": 10000}),
        ] {
            if let Err(e) = dry_run_create(&client, &record(good.clone())).await {
                panic!("{server}: {good} refused: {e}");
            }
        }
        // spec.fallbackTarget: clusters or a CNAME target, exactly one.
        let with_fallback = |target: Value| {
            let mut r = record(json!({"addresses": 1}));
            r["spec"]["fallbackTarget"] = target;
            r
        };
        for good in [
            json!({"clusters": ["standby"]}),
            json!({"cname": "maintenance.example.net"}),
        ] {
            if let Err(e) = dry_run_create(&client, &with_fallback(good.clone())).await {
                panic!("{server}: fallbackTarget {good} refused: {e}");
            }
        }
        for bad in [
            json!({}),
            json!({"clusters": []}),
            json!({"clusters": ["a"], "cname": "x.example.net"}),
            json!({"cname": "not a name"}),
        ] {
            match dry_run_create(&client, &with_fallback(bad.clone())).await {
                Ok(()) => panic!("{server}: fallbackTarget {bad} was admitted"),
                Err(e) => {
                    println!("{server}: fallbackTarget {bad}: {e}");
                    assert!(e.contains("spec.fallbackTarget"), "{server}: {e}");
                }
            }
        }
        for (bad, field) in [
            (json!({"addresses": 0}), "spec.minHealthy.addresses"),
            (json!({"endpoints": "0%"}), "spec.minHealthy.endpoints"),
            (json!({"endpoints": "101%"}), "spec.minHealthy.endpoints"),
            (json!({"addresses": "half"}), "spec.minHealthy.addresses"),
            (json!({"addresses": 10001}), "spec.minHealthy.addresses"),
        ] {
            match dry_run_create(&client, &record(bad.clone())).await {
                Ok(()) => panic!("{server}: {bad} was admitted"),
                Err(e) => {
                    println!("{server}: {bad}: {e}");
                    assert!(e.contains(field), "{server}: {field:?} not in: {e}");
                }
            }
            // What admission refuses the controller refuses to read too.
            let value = bad
                .as_object()
                .and_then(|o| o.values().next())
                .cloned()
                .unwrap_or_default();
            assert!(serde_json::from_value::<fedns_api::Threshold>(value).is_err(), "{bad}");
        }
    }
}

fn json_merge(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (key, value) in from {
            into.insert(key.clone(), value.clone());
        }
    }
}

/// `spec.routing.stickiness`, `clientSubnetPrefix` and `maxAnswers`:
/// sticky answers are for every policy but `All`, the prefixes in range,
/// the prefix only with stickiness, the answer limit 1..64; on the
/// emulator and on a real API server alike, naming the field.
#[tokio::test]
async fn stickiness_is_checked_at_admission() {
    for (server, client, _emulator) in api_servers().await {
        install_generated_crds(&server, &client).await;
        ensure_namespace(&client, "ns").await;
        let record = |routing: Value| {
            json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                "metadata": {"name": "web", "namespace": "ns"},
                "spec": {"domainRef": "myfed", "routing": routing},
            })
        };
        for good in [
            json!({"policy": "Weighted", "stickiness": "ClientSubnet"}),
            json!({"policy": "Weighted", "stickiness": "ClientSubnet", "clientSubnetPrefix": {"ipv4": 20}}),
            json!({"policy": "Weighted", "stickiness": "None"}),
            json!({"policy": "Nearest", "stickiness": "None"}),
            json!({"policy": "Nearest", "stickiness": "ClientSubnet"}),
            json!({"policy": "Failover", "priorities": [["eu"]], "stickiness": "ClientSubnet", "maxAnswers": 2}),
            json!({"policy": "All", "maxAnswers": 1}),
            json!({"maxAnswers": 64}),
        ] {
            if let Err(e) = dry_run_create(&client, &record(good.clone())).await {
                panic!("{server}: {good} refused: {e}");
            }
        }
        for (bad, field, why) in [
            (
                json!({"policy": "All", "stickiness": "ClientSubnet"}),
                "spec.routing",
                "stickiness applies to policies Weighted, Failover and Nearest",
            ),
            (json!({"policy": "All", "maxAnswers": 0}), "spec.routing.maxAnswers", ""),
            (
                json!({"policy": "Weighted", "maxAnswers": 65}),
                "spec.routing.maxAnswers",
                "",
            ),
            (
                json!({"policy": "Weighted", "clientSubnetPrefix": {"ipv4": 20}}),
                "spec.routing",
                "clientSubnetPrefix applies to stickiness ClientSubnet only",
            ),
            (
                json!({"policy": "Weighted", "stickiness": "ClientSubnet", "clientSubnetPrefix": {"ipv4": 40}}),
                "spec.routing.clientSubnetPrefix.ipv4",
                "",
            ),
            (
                json!({"policy": "Weighted", "stickiness": "ClientSubnet", "clientSubnetPrefix": {"ipv6": 8}}),
                "spec.routing.clientSubnetPrefix.ipv6",
                "",
            ),
            (
                json!({"policy": "Weighted", "stickiness": "Cookie"}),
                "spec.routing.stickiness",
                "",
            ),
        ] {
            match dry_run_create(&client, &record(bad.clone())).await {
                Ok(()) => panic!("{server}: {bad} was admitted"),
                Err(e) => {
                    println!("{server}: {bad}: {e}");
                    assert!(
                        e.contains(field) && e.contains(why),
                        "{server}: {field} {why:?} not in: {e}"
                    );
                }
            }
        }
    }
}

/// The CRDs the emulator serves for the propagation engines' inventories
/// (`fedns sandbox --engine`, the member-source tests) are CRDs a real API
/// server accepts too: a server-side dry run of each engine's documents
/// against the emulator (which applies kube-apiserver's CRD rules) and,
/// when given, the real server.
// Multi-threaded: kubectl runs synchronously here while the emulator
// serves it from the same runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_engine_crd_the_emulator_serves_is_accepted() {
    use fedns_controller::federation::Engine;
    let dir = crate::common::temp_dir("engine-crds");
    let emulator = Emulator::start().await.expect("emulator");
    let mut kubeconfigs = vec![("emulator".to_owned(), dir.join("emulator.kubeconfig"))];
    emulator.write_kubeconfig(&kubeconfigs[0].1).expect("a kubeconfig");
    if let Ok(path) = std::env::var(REAL_KUBECONFIG) {
        kubeconfigs.push((format!("real API server ({path})"), PathBuf::from(path)));
    }
    let engines = [
        Engine::Karmada,
        Engine::Kubefed,
        Engine::Clusternet,
        Engine::Capi,
        Engine::Argocd,
        Engine::Clusterprofile,
    ];
    for engine in engines {
        let file = dir.join(format!("{}.yaml", engine.as_str()));
        std::fs::write(&file, engine.crd_yaml()).expect("the engine's YAML is written");
        for (server, kubeconfig) in &kubeconfigs {
            let out = std::process::Command::new("kubectl")
                .args(["apply", "--server-side", "--dry-run=server", "-f"])
                .arg(&file)
                .env("KUBECONFIG", kubeconfig)
                .env("HOME", &dir)
                .output()
                .expect("kubectl (./scripts/test.sh installs it)");
            assert!(
                out.status.success(),
                "{server}: {}'s CRDs refused:\n{}{}",
                engine.as_str(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    println!(
        "{} engines' CRDs admitted by {} server(s)",
        engines.len(),
        kubeconfigs.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The vendored Gateway API CRDs (gateway-api v1.6.1) on the emulator and,
/// with `FEDNS_REAL_KUBECONFIG`, on a real API server: both install them,
/// admit the example objects, and refuse the same bad ones with the same
/// CEL messages (a hostname on a TCP listener; a backend request timeout
/// longer than the request's, a `duration` comparison).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_api_crds_behave_as_on_a_real_api_server() {
    use fedns_standins::upstream_crds::{examples, gateway_api_yaml};
    let dir = crate::common::temp_dir("gateway-api-crds");
    let emulator = Emulator::start().await.expect("emulator");
    let mut kubeconfigs = vec![("emulator".to_owned(), dir.join("emulator.kubeconfig"))];
    emulator.write_kubeconfig(&kubeconfigs[0].1).expect("a kubeconfig");
    if let Ok(path) = std::env::var(REAL_KUBECONFIG) {
        kubeconfigs.push((format!("real API server ({path})"), PathBuf::from(path)));
    }
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("written");
        path
    };
    let crds = file("crds.yaml", &gateway_api_yaml());
    let example = file("example.yaml", examples::GATEWAY_API);
    let tcp_hostname = file(
        "tcp-hostname.yaml",
        &examples::GATEWAY_API.replace(
            "    protocol: HTTP\n    port: 80",
            "    protocol: TCP\n    port: 80\n    hostname: db.example.com",
        ),
    );
    let long_backend = file(
        "long-backend.yaml",
        &examples::GATEWAY_API.replace(
            "  - backendRefs:\n",
            "  - timeouts: {request: 10s, backendRequest: 1m}\n    backendRefs:\n",
        ),
    );
    let kubectl = |kubeconfig: &PathBuf, args: &[&str], path: &PathBuf| {
        std::process::Command::new("kubectl")
            .args(args)
            .arg(path)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", &dir)
            .output()
            .expect("kubectl (./scripts/test.sh installs it)")
    };
    for (server, kubeconfig) in &kubeconfigs {
        let out = kubectl(kubeconfig, &["apply", "--server-side", "-f"], &crds);
        assert!(
            out.status.success(),
            "{server}: CRDs refused: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = kubectl(
            kubeconfig,
            &["wait", "--for", "condition=established", "--timeout=30s", "-f"],
            &crds,
        );
        assert!(
            out.status.success(),
            "{server}: not established: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = kubectl(
            kubeconfig,
            &["apply", "--server-side", "--dry-run=server", "-f"],
            &example,
        );
        assert!(
            out.status.success(),
            "{server}: example refused: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (bad, message) in [
            (
                &tcp_hostname,
                "hostname must not be specified for protocols ['TCP', 'UDP']",
            ),
            (
                &long_backend,
                "backendRequest timeout cannot be longer than request timeout",
            ),
        ] {
            let out = kubectl(kubeconfig, &["apply", "--server-side", "--dry-run=server", "-f"], bad);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success() && stderr.contains(message),
                "{server}: {}: {stderr}",
                bad.display()
            );
        }
    }
    println!("Gateway API CRDs checked on {} server(s)", kubeconfigs.len());
    let _ = std::fs::remove_dir_all(&dir);
}
