//! What the engine overlays let fedns read, checked two ways:
//!
//! - rendered (always): Secrets are granted cluster-wide only where the
//!   engine's layout forces it, and that overlay says so in its comment;
//!   elsewhere by name (`resourceNames`) or in the one namespace the engine
//!   keeps credentials in; the Karmada control plane's rules
//!   (`karmada-rbac.yaml`, applied there by hand) read Secrets of
//!   `karmada-cluster` only; no rule of any overlay writes Secrets or
//!   grants `*`;
//! - on a real API server with RBAC (`FEDNS_REAL_KUBECONFIG`), as fedns's
//!   ServiceAccount: `kubectl auth can-i` for what each overlay must allow
//!   (positive) and what it must not (negative).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::deploy::{render, repo_root};

/// Overlays whose engine forces Secrets to be readable cluster-wide, and
/// the words their rbac.yaml comment uses to say why.
const FORCED_CLUSTER_WIDE: &[(&str, &str)] = &[("capi", "RBAC cannot grant list/watch by a name known only at run")];

fn rules_of(object: &Value) -> Vec<&Value> {
    object["rules"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn overlays_grant_secrets_only_by_name_or_in_the_engines_namespace() {
    let root = repo_root();
    let home = std::env::temp_dir().join(format!("fedns-overlay-rbac-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut overlays: Vec<String> = std::fs::read_dir(root.join("deploy/overlays"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    overlays.sort();
    for overlay in &overlays {
        let (_, objects) = render(&home, &format!("deploy/overlays/{overlay}"));
        for object in objects
            .iter()
            .filter(|o| matches!(o["kind"].as_str(), Some("ClusterRole" | "Role")))
        {
            let what = format!("{overlay}: {} {}", object["kind"], object["metadata"]["name"]);
            for rule in rules_of(object) {
                let resources = strings(&rule["resources"]);
                let verbs = strings(&rule["verbs"]);
                assert!(
                    !resources.contains(&"*") && !verbs.contains(&"*"),
                    "{what}: a wildcard rule {rule}"
                );
                if !resources.contains(&"secrets") {
                    continue;
                }
                let writes: Vec<&&str> = verbs
                    .iter()
                    .filter(|v| !matches!(**v, "get" | "list" | "watch"))
                    .collect();
                // The base Role creates a signed Domain's key Secret in fedns-system.
                let base_role = object["kind"] == "Role" && object["metadata"]["name"] == "fedns";
                assert!(writes.is_empty() || base_role, "{what}: writes Secrets: {rule}");
                let by_name = !rule["resourceNames"].is_null();
                if object["kind"] == "ClusterRole" && !by_name {
                    let forced = FORCED_CLUSTER_WIDE.iter().find(|(o, _)| o == overlay);
                    let (_, why) = forced.unwrap_or_else(|| panic!("{what}: every Secret of the cluster: {rule}"));
                    let comment =
                        std::fs::read_to_string(root.join(format!("deploy/overlays/{overlay}/rbac.yaml"))).unwrap();
                    assert!(
                        comment.contains(why),
                        "{what}: the overlay does not say why it reads every Secret"
                    );
                }
            }
        }
    }
    // The Karmada control plane's rules: Secrets in karmada-cluster only.
    let text = std::fs::read_to_string(root.join("deploy/overlays/karmada/karmada-rbac.yaml")).unwrap();
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let mut karmada_secret_roles = 0;
    for object in &docs {
        for rule in rules_of(object) {
            if strings(&rule["resources"]).contains(&"secrets") {
                assert_eq!(
                    object["kind"], "Role",
                    "karmada-rbac.yaml: Secrets cluster-wide: {rule}"
                );
                assert_eq!(object["metadata"]["namespace"], "karmada-cluster");
                karmada_secret_roles += 1;
            }
        }
    }
    assert_eq!(karmada_secret_roles, 1);
    let _ = std::fs::remove_dir_all(home);
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("kubectl (./scripts/test.sh installs Debian's kubernetes-client)");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `kubectl auth can-i` as `user` (a ServiceAccount): `yes` or not.
fn can(kubeconfig: &Path, user: &str, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--as", user]);
    let (_, out) = kubectl(kubeconfig, &all);
    out.lines().any(|l| l.trim() == "yes")
}

/// On a real API server with RBAC: each overlay's rules applied, then
/// fedns's ServiceAccount may do what the overlay's engine needs and no
/// more (`kubectl auth can-i`, positive and negative).
#[test]
fn overlays_on_a_real_api_server_allow_what_fedns_reads_and_nothing_beside() {
    let Ok(kubeconfig) = std::env::var(crate::crds::REAL_KUBECONFIG) else {
        println!(
            "{} not set: checked rendered only (overlays_grant_secrets_only_by_name_or_in_the_engines_namespace)",
            crate::crds::REAL_KUBECONFIG
        );
        return;
    };
    let kubeconfig = Path::new(&kubeconfig);
    let root = repo_root();
    for namespace in [
        "fedns-system",
        "argocd",
        "kube-federation-system",
        "karmada-cluster",
        "karmada-system",
        "team-a",
    ] {
        let _ = kubectl(kubeconfig, &["create", "namespace", namespace]);
    }
    let fedns = "system:serviceaccount:fedns-system:fedns";
    let apply = |file: &str| {
        let (ok, out) = kubectl(kubeconfig, &["apply", "-f", root.join(file).to_str().unwrap()]);
        assert!(ok, "{file}: {out}");
    };
    apply("deploy/base/rbac.yaml");
    // (overlay file, may, may not)
    type Case = (
        &'static str,
        &'static [&'static [&'static str]],
        &'static [&'static [&'static str]],
    );
    let cases: &[Case] = &[
        (
            "deploy/overlays/argocd/rbac.yaml",
            &[
                &["list", "secrets", "-n", "argocd"],
                &["watch", "secrets", "-n", "argocd"],
            ],
            &[
                &["list", "secrets", "-n", "team-a"],
                &["get", "secrets", "-n", "kube-system"],
                &["create", "secrets", "-n", "argocd"],
            ],
        ),
        (
            "deploy/overlays/kubefed/rbac.yaml",
            &[
                &["list", "secrets", "-n", "kube-federation-system"],
                &["list", "services", "-A"],
            ],
            &[&["list", "secrets", "-n", "team-a"], &["list", "secrets", "-A"]],
        ),
        (
            "deploy/overlays/clusternet/rbac.yaml",
            &[&["get", "secrets/child-cluster-deployer", "-n", "team-a"]],
            &[
                &["get", "secrets/other", "-n", "team-a"],
                &["list", "secrets", "-n", "team-a"],
            ],
        ),
        (
            "deploy/overlays/clusterprofile/rbac.yaml",
            &[&["list", "services", "-A"]],
            &[&["list", "secrets", "-n", "team-a"]],
        ),
        (
            "deploy/overlays/capi/rbac.yaml",
            &[&["list", "services", "-A"], &["watch", "secrets", "-n", "team-a"]],
            &[
                &["create", "secrets", "-n", "team-a"],
                &["delete", "services", "-n", "team-a"],
            ],
        ),
    ];
    // Base alone: Secrets only in fedns-system.
    assert!(can(kubeconfig, fedns, &["list", "secrets", "-n", "fedns-system"]));
    assert!(!can(kubeconfig, fedns, &["list", "secrets", "-n", "team-a"]));
    for (file, may, may_not) in cases {
        apply(file);
        for args in may.iter() {
            assert!(can(kubeconfig, fedns, args), "{file}: fedns may not {args:?}");
        }
        for args in may_not.iter() {
            if *file != "deploy/overlays/capi/rbac.yaml" || !args.contains(&"secrets") || args[0] != "list" {
                assert!(!can(kubeconfig, fedns, args), "{file}: fedns may {args:?}");
            }
        }
        println!("{file}: {} allowed, {} refused as expected", may.len(), may_not.len());
        // Each overlay alone: remove its rules before the next.
        let _ = kubectl(kubeconfig, &["delete", "-f", root.join(file).to_str().unwrap()]);
    }
    // The Karmada control plane's rules, bound to a reader account.
    apply("deploy/overlays/karmada/karmada-rbac.yaml");
    let reader = "system:serviceaccount:karmada-system:fedns-reader";
    let _ = kubectl(
        kubeconfig,
        &[
            "create",
            "clusterrolebinding",
            "fedns-reader-test",
            "--clusterrole=fedns-reader",
            "--serviceaccount=karmada-system:fedns-reader",
        ],
    );
    let _ = kubectl(
        kubeconfig,
        &[
            "create",
            "rolebinding",
            "fedns-reader-test",
            "-n",
            "karmada-cluster",
            "--role=fedns-reader",
            "--serviceaccount=karmada-system:fedns-reader",
        ],
    );
    assert!(can(kubeconfig, reader, &["watch", "secrets", "-n", "karmada-cluster"]));
    assert!(!can(kubeconfig, reader, &["list", "secrets", "-n", "karmada-system"]));
    assert!(!can(kubeconfig, reader, &["list", "secrets", "-A"]));
    assert!(can(kubeconfig, reader, &["list", "services", "-A"]));
    println!("karmada-rbac.yaml: Secrets of karmada-cluster only");
}
