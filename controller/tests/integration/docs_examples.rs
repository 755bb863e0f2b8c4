//! Every Kubernetes object the docs show is a valid object, and the
//! Secrets among them hold what fedns's member sources read.
//!
//! Which examples: every fenced code block tagged `yaml` (or `yml`) in
//! `docs/*.md`, an indented one (in a list item) included; each YAML
//! document in it with a string `apiVersion` and `kind` is an object.
//! Skipped, and counted: blocks of any other language (`sh`, `text`,
//! `mermaid`: commands and output), documents without `apiVersion` and
//! `kind` (fragments, such as a `spec:` or `containers:` excerpt), and
//! Kustomization files (`kustomize.config.k8s.io`: read by kustomize,
//! never served). A `yaml` block that does not parse fails the test.
//!
//! Checked, per Secret, before anything is applied (an emulated API
//! server stores what a real one refuses to decode):
//! - every `data` value is base64 as the API server decodes a `[]byte`
//!   (Go's padded standard alphabet, line breaks ignored); a CA
//!   (`ca.crt`, `caBundle`) decodes to PEM text;
//! - a kubeconfig (key `value` of Cluster API's `<cluster>-kubeconfig`
//!   Secret, labelled `cluster.x-k8s.io/cluster-name`; any key
//!   `kubeconfig`) parses with `Kubeconfig::from_yaml` and passes what
//!   fedns checks (`current-context` naming a context, its cluster with an
//!   `https` server, a user with inline credentials, nothing naming a file
//!   or a command), its `*-data` fields base64; Cluster API's Secret has
//!   the type fedns requires (`cluster.x-k8s.io/secret`);
//! - an Argo CD cluster Secret (label `argocd.argoproj.io/secret-type:
//!   cluster`) has a `server`, and its `config` (in `stringData` or `data`)
//!   parses as fedns's `ClusterConfig`, `tlsClientConfig.caData`,
//!   `certData`, `keyData` base64 of PEM;
//! - Clusternet's `child-cluster-deployer` carries the label
//!   `clusters.clusternet.io/cluster-id` (the `spec.clusterId` of the
//!   ManagedCluster of its namespace when the block shows it) and the keys
//!   fedns reads: `token`, `ca.crt`, `apiserver-advertise-url` (a URL).
//!
//! Checked, per object: `kubectl apply --server-side`, block by block, to
//! one fresh emulator serving the fedns CRDs (`deploy/crds`), every
//! engine's CRD as `Engine::crd_yaml` installs it (the upstream CRDs
//! vendored under `standins/crds/upstream/`; Karmada's open schema) and
//! Gateway API's, after the namespaces the objects name are created;
//! every object is admitted (one `serverside-applied` line each). A
//! `status` the doc gives is then written through the status subresource,
//! as the engine's controller writes it. Every object reads back
//! (`kubectl get -f`) with every field the doc gives, unchanged (nothing
//! pruned; a Secret's `stringData` as base64 in `data`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use fedns_controller::federation::Engine;
use fedns_controller::members::sources::{argocd, capi, clusternet};
use fedns_kube_emulator::Emulator;
use kube::config::Kubeconfig;
use serde::Deserialize;
use serde_json::{json, Value};

/// Secret keys holding a CA, PEM once decoded (Clusternet's `ca.crt`,
/// Karmada's `caBundle`).
const CA_KEYS: [&str; 2] = ["ca.crt", "caBundle"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fenced `yaml` code block of a doc.
struct Block {
    /// `docs/NAME.md:LINE` (the line of its opening fence).
    origin: String,
    /// Its text, the fence's indentation removed.
    text: String,
    /// Its objects, in order.
    objects: Vec<Value>,
    /// Its documents that are not objects (fragments, Kustomizations).
    skipped: usize,
}

/// The fenced code blocks of `markdown`: (line of the opening fence,
/// language, text without the fence's indentation).
fn fenced_blocks(markdown: &str) -> Vec<(usize, String, String)> {
    let lines: Vec<&str> = markdown.lines().collect();
    let indent_of = |line: &str| line.len() - line.trim_start_matches(' ').len();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let indent = indent_of(lines[i]);
        if let Some(language) = lines[i][indent..].strip_prefix("```") {
            let opening = i + 1;
            let mut text = String::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                let line = lines[i];
                text.push_str(&line[indent_of(line).min(indent)..]);
                text.push('\n');
                i += 1;
            }
            blocks.push((opening, language.trim().to_owned(), text));
        }
        i += 1;
    }
    blocks
}

/// The objects of a `yaml` block and how many of its documents are not
/// objects (no `apiVersion` and `kind`, or a Kustomization).
fn objects_of(origin: &str, text: &str) -> (Vec<Value>, usize) {
    let mut objects = Vec::new();
    let mut skipped = 0;
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document)
            .unwrap_or_else(|e| panic!("{origin}: the yaml block does not parse: {e}\n{text}"));
        if value.is_null() {
            continue;
        }
        let api_version = value["apiVersion"].as_str();
        let is_object = api_version.is_some() && value["kind"].is_string();
        if !is_object || api_version.is_some_and(|v| v.starts_with("kustomize.config.k8s.io/")) {
            skipped += 1;
            continue;
        }
        objects.push(value);
    }
    (objects, skipped)
}

/// `kind namespace/name` of an object, for messages.
fn describe(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or("<no name>");
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{} {namespace}/{name}", object["kind"].as_str().unwrap_or_default()),
        None => format!("{} {name}", object["kind"].as_str().unwrap_or_default()),
    }
}

/// (API group, kind, namespace, name): an object's identity across versions.
fn key(object: &Value) -> (String, String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let api_version = text(&object["apiVersion"]);
    let group = api_version
        .rsplit_once('/')
        .map(|(g, _)| g.to_owned())
        .unwrap_or_default();
    (
        group,
        text(&object["kind"]),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

/// `text` decoded as the API server decodes a `[]byte` in JSON: Go's
/// `base64.StdEncoding` (padded), which skips line breaks.
fn base64_bytes(text: &str) -> Result<Vec<u8>, String> {
    let text: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())
}

/// `bytes` are PEM text (a CA, a certificate, a key: shortened in the
/// docs, so only the armour's first line is required).
fn assert_pem(bytes: &[u8], what: &str) {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|_| panic!("{what}: decodes to bytes that are not UTF-8 PEM"));
    assert!(
        text.trim_start().starts_with("-----BEGIN "),
        "{what}: decodes to {text:?}, not PEM"
    );
}

/// A Secret's value of `key` as the API server stores it: `stringData`
/// (which wins), else `data` decoded; it must be UTF-8.
fn secret_text(secret: &Value, key: &str, what: &str) -> Option<String> {
    if let Some(text) = secret["stringData"][key].as_str() {
        return Some(text.to_owned());
    }
    let data = secret["data"][key].as_str()?;
    let bytes = base64_bytes(data).unwrap_or_else(|e| panic!("{what}: data.{key} is not base64: {e}"));
    Some(String::from_utf8(bytes).unwrap_or_else(|_| panic!("{what}: data.{key} is not UTF-8")))
}

/// What the Secret checks covered.
#[derive(Default)]
struct SecretsChecked {
    secrets: usize,
    data_values: usize,
    kubeconfigs: usize,
    argocd: usize,
    clusternet: usize,
}

/// A kubeconfig in a Secret: as fedns reads it
/// (`members/sources/translate.rs`, `kubeconfig_connection`).
fn check_kubeconfig(text: &str, what: &str) {
    let kubeconfig =
        Kubeconfig::from_yaml(text).unwrap_or_else(|e| panic!("{what}: does not parse as a kubeconfig: {e}\n{text}"));
    let current = kubeconfig
        .current_context
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: the kubeconfig has no current-context"));
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == current)
        .and_then(|c| c.context.as_ref())
        .unwrap_or_else(|| panic!("{what}: the kubeconfig has no context {current:?}"));
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .unwrap_or_else(|| panic!("{what}: the kubeconfig has no cluster {:?}", context.cluster));
    let server = cluster
        .server
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: the kubeconfig's cluster {:?} has no server", context.cluster));
    assert!(
        server.starts_with("https://"),
        "{what}: server {server:?} is not an https URL"
    );
    assert!(
        cluster.certificate_authority.is_none(),
        "{what}: certificate-authority names a file, which fedns refuses from a Secret"
    );
    let user = context
        .user
        .as_ref()
        .and_then(|name| kubeconfig.auth_infos.iter().find(|u| &u.name == name))
        .and_then(|u| u.auth_info.as_ref())
        .unwrap_or_else(|| panic!("{what}: the kubeconfig's context {current:?} names no user it has"));
    for (field, set) in [
        ("tokenFile", user.token_file.is_some()),
        ("client-certificate", user.client_certificate.is_some()),
        ("client-key", user.client_key.is_some()),
        ("exec", user.exec.is_some()),
        ("auth-provider", user.auth_provider.is_some()),
    ] {
        assert!(
            !set,
            "{what}: the kubeconfig uses {field}, which fedns refuses from a Secret"
        );
    }
    assert!(
        user.token.is_some()
            || (user.client_certificate_data.is_some() && user.client_key_data.is_some())
            || (user.username.is_some() && user.password.is_some()),
        "{what}: the kubeconfig's user has no inline credentials (token, client-certificate-data and client-key-data, username and password)"
    );
    let raw: Value = serde_yaml_ng::from_str(text).unwrap();
    for (list, entry, fields) in [
        ("clusters", "cluster", &["certificate-authority-data"][..]),
        ("users", "user", &["client-certificate-data", "client-key-data"][..]),
    ] {
        for item in raw[list].as_array().into_iter().flatten() {
            for field in fields {
                if let Some(data) = item[entry][*field].as_str() {
                    let bytes = base64_bytes(data)
                        .unwrap_or_else(|e| panic!("{what}: {list} {} {field} is not base64: {e}", item["name"]));
                    assert_pem(&bytes, &format!("{what}: {list} {} {field}", item["name"]));
                }
            }
        }
    }
}

/// An Argo CD cluster Secret, as `members/sources/argocd.rs` reads it.
fn check_argocd(secret: &Value, what: &str) {
    let server = secret_text(secret, "server", what)
        .unwrap_or_else(|| panic!("{what}: an Argo CD cluster Secret without key server"));
    assert!(!server.trim().is_empty(), "{what}: key server is empty");
    let Some(config) = secret_text(secret, "config", what) else {
        return;
    };
    let config: argocd::ClusterConfig = serde_json::from_str(&config)
        .unwrap_or_else(|e| panic!("{what}: key config is not Argo CD's ClusterConfig JSON: {e}\n{config}"));
    let tls = &config.tls_client_config;
    assert_eq!(
        tls.cert_data.is_empty(),
        tls.key_data.is_empty(),
        "{what}: config.tlsClientConfig needs both certData and keyData, or neither"
    );
    for (field, data) in [
        ("caData", &tls.ca_data),
        ("certData", &tls.cert_data),
        ("keyData", &tls.key_data),
    ] {
        if data.is_empty() {
            continue;
        }
        let field = format!("{what}: config.tlsClientConfig.{field}");
        let bytes = base64_bytes(data.trim()).unwrap_or_else(|e| panic!("{field} {data:?} is not base64: {e}"));
        assert_pem(&bytes, &field);
    }
}

/// Clusternet's `child-cluster-deployer`, as clusternet-agent writes it and
/// `members/sources/clusternet.rs` reads it.
fn check_clusternet(secret: &Value, block: &[Value], what: &str) {
    let id = secret["metadata"]["labels"][clusternet::CLUSTER_ID_LABEL]
        .as_str()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{what}: without the label {} clusternet-agent puts on it",
                clusternet::CLUSTER_ID_LABEL
            )
        });
    let namespace = &secret["metadata"]["namespace"];
    for cluster in block.iter().filter(|o| {
        o["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("clusters.clusternet.io/"))
            && o["kind"] == "ManagedCluster"
            && &o["metadata"]["namespace"] == namespace
    }) {
        assert_eq!(
            Some(id),
            cluster["spec"]["clusterId"].as_str(),
            "{what}: label {} is not the clusterId of {}",
            clusternet::CLUSTER_ID_LABEL,
            describe(cluster)
        );
    }
    let token = secret_text(secret, "token", what).unwrap_or_else(|| panic!("{what}: no key token"));
    assert!(!token.trim().is_empty(), "{what}: key token is empty");
    assert!(secret_text(secret, "ca.crt", what).is_some(), "{what}: no key ca.crt");
    let url = secret_text(secret, clusternet::URL_KEY, what)
        .unwrap_or_else(|| panic!("{what}: no key {}", clusternet::URL_KEY));
    assert!(
        url.trim().starts_with("https://"),
        "{what}: key {} is {url:?}, not an https URL",
        clusternet::URL_KEY
    );
}

/// Every check on a Secret of `block` (see the module's doc).
fn check_secret(secret: &Value, block: &[Value], what: &str, checked: &mut SecretsChecked) {
    checked.secrets += 1;
    for field in ["data", "stringData"] {
        let Some(values) = secret.get(field) else {
            continue;
        };
        let values = values
            .as_object()
            .unwrap_or_else(|| panic!("{what}: {field} is not a map"));
        for (key, value) in values {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{what}: {field}.{key} is not a string"));
            let bytes = if field == "data" {
                checked.data_values += 1;
                base64_bytes(text).unwrap_or_else(|e| {
                    panic!("{what}: data.{key} {text:?} is not base64 (the API server refuses the Secret): {e}")
                })
            } else {
                text.as_bytes().to_vec()
            };
            if CA_KEYS.contains(&key.as_str()) {
                assert_pem(&bytes, &format!("{what}: {field}.{key}"));
            }
        }
    }
    let name = secret["metadata"]["name"].as_str().unwrap_or_default();
    let labels = &secret["metadata"]["labels"];
    let mut kubeconfig_keys: BTreeSet<String> = ["data", "stringData"]
        .iter()
        .filter_map(|field| secret[*field].as_object())
        .flat_map(|values| values.keys())
        .filter(|key| *key == "kubeconfig" || key.ends_with(".kubeconfig"))
        .cloned()
        .collect();
    // Cluster API's: `<cluster>-kubeconfig`, labelled with the cluster's name.
    if name.ends_with(capi::KUBECONFIG_SUFFIX) && labels[capi::CLUSTER_NAME_LABEL].is_string() {
        assert_eq!(
            secret["type"].as_str(),
            Some(capi::SECRET_TYPE),
            "{what}: a Cluster API kubeconfig Secret of another type is not used"
        );
        kubeconfig_keys.insert(capi::KUBECONFIG_KEY.to_owned());
    }
    for key in kubeconfig_keys {
        let text = secret_text(secret, &key, what).unwrap_or_else(|| panic!("{what}: no key {key}"));
        check_kubeconfig(&text, &format!("{what} key {key}"));
        checked.kubeconfigs += 1;
    }
    if labels[argocd::SECRET_TYPE_LABEL].as_str() == Some(argocd::SECRET_TYPE_CLUSTER) {
        check_argocd(secret, what);
        checked.argocd += 1;
    }
    if name == clusternet::CHILD_SECRET {
        check_clusternet(secret, block, what);
        checked.clusternet += 1;
    }
}

/// Every field of `wanted` is in `stored` with the same value (lists
/// element by element); what the server adds is ignored.
fn differences(path: &str, stored: &Value, wanted: &Value, out: &mut Vec<String>) {
    match (stored, wanted) {
        (Value::Object(stored), Value::Object(wanted)) => {
            for (key, w) in wanted {
                match stored.get(key) {
                    Some(s) => differences(&format!("{path}.{key}"), s, w, out),
                    None => out.push(format!("{path}.{key}: missing")),
                }
            }
        }
        (Value::Array(s), Value::Array(w)) if s.len() == w.len() => {
            for (i, (s, w)) in s.iter().zip(w).enumerate() {
                differences(&format!("{path}[{i}]"), s, w, out);
            }
        }
        _ if stored == wanted => {}
        _ => out.push(format!("{path}: stored {stored}, the doc {wanted}")),
    }
}

/// `object` as the API server stores it: a Secret's `stringData` moved,
/// base64, into `data`.
fn as_stored(object: &Value) -> Value {
    let mut object = object.clone();
    if object["apiVersion"] == "v1" && object["kind"] == "Secret" {
        if let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) {
            if !object["data"].is_object() {
                object["data"] = json!({});
            }
            for (key, value) in strings {
                let text = value.as_str().unwrap_or_default();
                object["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
    }
    object
}

/// `kubectl args` in the repository root with only the emulator's
/// kubeconfig (and a private HOME, so kubectl's discovery cache stays there).
fn kubectl(home: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .current_dir(repo_root())
        .env("KUBECONFIG", home.join("kubeconfig"))
        .env("HOME", home)
        .output()
        .unwrap_or_else(|e| {
            panic!("kubectl: {e} (kubectl must be installed; ./scripts/test.sh makes sure of 1.27 or later)")
        })
}

/// `out`'s stdout; panics with `what` and kubectl's output when it failed.
fn succeeded(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Per doc: blocks read, objects, documents skipped, other blocks skipped.
#[derive(Default)]
struct DocCount {
    yaml_blocks: usize,
    objects: usize,
    skipped_documents: usize,
    other_blocks: usize,
}

#[test]
fn every_docs_example_is_a_valid_object_fedns_reads() {
    let root = repo_root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    let mut counts: BTreeMap<String, DocCount> = BTreeMap::new();
    let mut blocks: Vec<Block> = Vec::new();
    for path in &docs {
        let doc = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
        let count = counts.entry(doc.clone()).or_default();
        let markdown = std::fs::read_to_string(path).unwrap();
        for (line, language, text) in fenced_blocks(&markdown) {
            if language != "yaml" && language != "yml" {
                count.other_blocks += 1;
                continue;
            }
            let origin = format!("{doc}:{line}");
            let (objects, skipped) = objects_of(&origin, &text);
            count.yaml_blocks += 1;
            count.objects += objects.len();
            count.skipped_documents += skipped;
            blocks.push(Block {
                origin,
                text,
                objects,
                skipped,
            });
        }
    }
    let engines = counts
        .get("docs/engines.md")
        .unwrap_or_else(|| panic!("no docs/engines.md"));
    assert!(
        engines.yaml_blocks >= 6,
        "{} yaml blocks in docs/engines.md",
        engines.yaml_blocks
    );

    // The Secrets, before anything is applied.
    let mut checked = SecretsChecked::default();
    for block in &blocks {
        for object in block
            .objects
            .iter()
            .filter(|o| o["apiVersion"] == "v1" && o["kind"] == "Secret")
        {
            let what = format!("{}: {}", block.origin, describe(object));
            check_secret(object, &block.objects, &what, &mut checked);
        }
    }
    assert!(
        checked.kubeconfigs >= 1 && checked.argocd >= 1 && checked.clusternet >= 1,
        "the docs' Secrets: {} kubeconfigs, {} Argo CD, {} Clusternet (the engines page shows each)",
        checked.kubeconfigs,
        checked.argocd,
        checked.clusternet
    );
    println!(
        "{} Secrets checked: {} data values base64, {} kubeconfigs, {} Argo CD cluster Secrets, {} Clusternet child-cluster-deployer",
        checked.secrets, checked.data_values, checked.kubeconfigs, checked.argocd, checked.clusternet
    );

    // Every engine's inventory kind is among the examples.
    let shown: BTreeSet<(String, String)> = blocks
        .iter()
        .filter(|b| b.origin.starts_with("docs/engines.md:"))
        .flat_map(|b| &b.objects)
        .map(|o| {
            let (group, kind, _, _) = key(o);
            (group, kind)
        })
        .collect();
    for (group, kind) in [
        ("cluster.karmada.io", "Cluster"),
        ("core.kubefed.io", "KubeFedCluster"),
        ("clusters.clusternet.io", "ManagedCluster"),
        ("cluster.x-k8s.io", "Cluster"),
        ("multicluster.x-k8s.io", "ClusterProfile"),
    ] {
        assert!(
            shown.contains(&(group.to_owned(), kind.to_owned())),
            "docs/engines.md shows no {kind} of {group}"
        );
    }

    // One emulator serving every CRD the examples use.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let emulator = runtime.block_on(Emulator::start()).unwrap();
    let home = crate::common::temp_dir("docs-examples");
    emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap();
    for engine in [
        Engine::Karmada,
        Engine::Kubefed,
        Engine::Clusternet,
        Engine::Capi,
        Engine::Argocd,
        Engine::Clusterprofile,
    ] {
        emulator
            .seed_yaml(engine.as_str(), &engine.crd_yaml())
            .unwrap_or_else(|e| panic!("{} CRDs: {e}", engine.as_str()));
    }
    emulator
        .seed_yaml("gateway-api", &fedns_standins::upstream_crds::gateway_api_yaml())
        .unwrap();
    succeeded(
        &kubectl(&home, &["apply", "--server-side", "-k", "deploy/crds"]),
        "kubectl apply --server-side -k deploy/crds",
    );
    let namespaces: BTreeSet<&str> = blocks
        .iter()
        .flat_map(|b| &b.objects)
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .collect();
    let namespaces_file = home.join("namespaces.yaml");
    std::fs::write(
        &namespaces_file,
        namespaces
            .iter()
            .map(|ns| format!("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"))
            .collect::<String>(),
    )
    .unwrap();
    succeeded(
        &kubectl(
            &home,
            &["apply", "--server-side", "-f", namespaces_file.to_str().unwrap()],
        ),
        &format!("creating the namespaces {namespaces:?}"),
    );

    let mut applied: BTreeMap<String, usize> = BTreeMap::new();
    for (n, block) in blocks.iter().enumerate() {
        if block.objects.is_empty() {
            continue;
        }
        let origin = &block.origin;
        // The block as written when every document is an object; else its objects alone.
        let text = if block.skipped == 0 {
            block.text.clone()
        } else {
            block.objects.iter().map(|o| format!("---\n{o}\n")).collect::<String>()
        };
        let file = home.join(format!("block-{n}.yaml"));
        std::fs::write(&file, &text).unwrap();
        let file = file.to_str().unwrap();
        let out = kubectl(
            &home,
            &["apply", "--server-side", "--field-manager=fedns-docs", "-f", file],
        );
        let stdout = succeeded(&out, &format!("{origin}: not admitted\n{text}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.trim().is_empty() {
            println!("{origin}: kubectl said: {}", stderr.trim());
        }
        assert_eq!(
            stdout.lines().filter(|l| l.contains("serverside-applied")).count(),
            block.objects.len(),
            "{origin}: one `serverside-applied` line per object:\n{stdout}"
        );
        for (i, object) in block.objects.iter().enumerate() {
            let Some(status) = object.get("status") else {
                continue;
            };
            let one = home.join(format!("block-{n}-{i}.json"));
            std::fs::write(&one, object.to_string()).unwrap();
            let patch = json!({"status": status}).to_string();
            succeeded(
                &kubectl(
                    &home,
                    &[
                        "patch",
                        "-f",
                        one.to_str().unwrap(),
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        patch.as_str(),
                    ],
                ),
                &format!("{origin}: {}: status refused", describe(object)),
            );
        }
        let got = succeeded(
            &kubectl(&home, &["get", "-f", file, "-o", "json"]),
            &format!("{origin}: objects not read back"),
        );
        let got: Value = serde_json::from_str(&got).unwrap();
        let stored: Vec<Value> = match got["items"].as_array() {
            Some(items) => items.clone(),
            None => vec![got],
        };
        for object in &block.objects {
            let found = stored
                .iter()
                .find(|s| key(s) == key(object))
                .unwrap_or_else(|| panic!("{origin}: {} not read back", describe(object)));
            let mut diffs = Vec::new();
            differences("", found, &as_stored(object), &mut diffs);
            assert!(
                diffs.is_empty(),
                "{origin}: {} is not stored as the doc gives it (pruned or changed):\n{}",
                describe(object),
                diffs.join("\n")
            );
        }
        let doc = origin.rsplit_once(':').unwrap().0.to_owned();
        *applied.entry(doc).or_default() += block.objects.len();
    }

    for (doc, count) in &counts {
        if count.yaml_blocks == 0 && count.other_blocks == 0 {
            continue;
        }
        let admitted = applied.get(doc).copied().unwrap_or_default();
        assert_eq!(admitted, count.objects, "{doc}: objects applied and read back");
        println!(
            "{doc}: {admitted} objects ({} yaml blocks) admitted server-side, read back whole; skipped {} fragments or Kustomizations, {} non-yaml blocks",
            count.yaml_blocks, count.skipped_documents, count.other_blocks
        );
    }
    emulator.stop();
    let _ = std::fs::remove_dir_all(&home);
}
