//! deploy/member's ClusterRole `fedns-member-reader` holds exactly what
//! the controller uses in a member, derived from what it does: a member
//! emulator records every request the controller (with every
//! member-reading feature on: `--auto-records`, `--vantage-namespace`,
//! Gateway API routes) and `fedns explain --from-cluster --node` send it
//! with the member credentials; each request is turned into the RBAC
//! attribute a real API server would check (verb, API group, resource,
//! namespace, name; or a non-resource URL), and
//!
//! - every cluster-wide one must be granted by `fedns-member-reader`,
//! - every one in `fedns-system` by the Role `fedns-controller-vantage`
//!   (deploy/agent, bound to deploy/member's ServiceAccount),
//! - every rule of `fedns-member-reader` must have been used, but for the
//!   listed exceptions (each with its reason).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fedns_controller::federation::Federation;
use fedns_kube_emulator::LoggedRequest;
use serde::Deserialize;
use serde_json::Value;

use crate::common::*;
use crate::controller_e2e::member_yaml;

/// What a real API server authorizes for one request
/// (k8s.io/apiserver/pkg/endpoints/request.RequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Attribute {
    Resource {
        verb: String,
        group: String,
        resource: String,
        namespace: Option<String>,
        name: Option<String>,
    },
    NonResource {
        path: String,
    },
}

/// The attribute of `request`, as RequestInfoFactory derives it: GET of a
/// collection is `list` (`watch` with `watch=true`), of a named object
/// `get`; a `metadata.name=` field selector names the object for list and
/// watch. Discovery (`/api`, `/apis/...` without a resource) is `None`:
/// every authenticated client may read it (system:discovery).
fn attribute(request: &LoggedRequest) -> Option<Attribute> {
    let parts: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        ["api" | "apis", ..] => return None,
        _ => {
            return Some(Attribute::NonResource {
                path: request.path.clone(),
            })
        }
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, mut name) = match rest {
        [] => return None,
        [resource] => (resource.to_string(), None),
        [resource, name, ..] => (resource.to_string(), Some(name.to_string())),
    };
    let verb = match (request.method.as_str(), &name) {
        ("GET", Some(_)) => "get",
        ("GET", None) if request.param("watch").as_deref() == Some("true") => "watch",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", Some(_)) => "delete",
        ("DELETE", None) => "deletecollection",
        (other, _) => panic!("unexpected method {other} in {request:?}"),
    };
    if name.is_none() {
        name = request
            .param("fieldSelector")
            .and_then(|s| s.strip_prefix("metadata.name=").map(str::to_owned));
    }
    Some(Attribute::Resource {
        verb: verb.to_owned(),
        group: group.to_owned(),
        resource,
        namespace,
        name,
    })
}

/// One RBAC PolicyRule.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    #[serde(default)]
    api_groups: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    verbs: Vec<String>,
}

impl Rule {
    /// Whether the rule allows `attribute` (rbac/v1 RuleAllows, without
    /// wildcards: fedns's rules use none, and a test below refuses them).
    fn allows(&self, attribute: &Attribute) -> bool {
        match attribute {
            Attribute::NonResource { path } => {
                self.verbs.iter().any(|v| v == "get") && self.non_resource_urls.iter().any(|u| u == path)
            }
            Attribute::Resource {
                verb,
                group,
                resource,
                name,
                ..
            } => {
                self.verbs.contains(verb)
                    && self.api_groups.contains(group)
                    && self.resources.contains(resource)
                    && (self.resource_names.is_empty()
                        || name.as_ref().is_some_and(|n| self.resource_names.contains(n)))
            }
        }
    }

    /// Every (verb, group, resource) or non-resource URL the rule grants.
    fn grants(&self) -> Vec<String> {
        let mut out = Vec::new();
        for verb in &self.verbs {
            for url in &self.non_resource_urls {
                out.push(format!("{verb} {url}"));
            }
            for group in &self.api_groups {
                for resource in &self.resources {
                    out.push(format!("{verb} {group}/{resource}"));
                }
            }
        }
        out
    }
}

fn key(attribute: &Attribute) -> String {
    match attribute {
        Attribute::NonResource { path } => format!("get {path}"),
        Attribute::Resource {
            verb, group, resource, ..
        } => format!("{verb} {group}/{resource}"),
    }
}

/// The rules of `kind` `name` in the rendered kustomization `dir`.
fn rules_of(dir: &str, kind: &str, name: &str) -> Vec<Rule> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(&root)
        .output()
        .expect("kubectl (./scripts/test.sh installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let object = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap())
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{dir}: no {kind} {name}"));
    let rules: Vec<Rule> = serde_json::from_value(object["rules"].clone()).unwrap();
    for rule in &rules {
        let all = rule
            .verbs
            .iter()
            .chain(&rule.resources)
            .chain(&rule.api_groups)
            .chain(&rule.non_resource_urls);
        assert!(
            !all.clone().any(|s| s.contains('*')),
            "{dir}: {kind} {name}: no wildcard: {rule:?}"
        );
    }
    rules
}

/// Granted by `fedns-member-reader` although no recorded request used it.
const UNUSED_BUT_KEPT: &[(&str, &str)] = &[(
    "get /healthz",
    "probe.rs asks /healthz only where /readyz answers 404 (servers before 1.16)",
)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_reader_role_is_what_the_controller_uses() {
    let dir = temp_dir("member-rbac");
    let federation = Federation::start(&dir, "fedns-system", &["m1"]).await.unwrap();
    let member = federation.member("m1").unwrap().clone();
    member
        .seed_yaml("m1", &member_yaml("us-east-1", "us-east-1a", &["203.0.113.10"]))
        .unwrap();
    // The kinds a member may serve: Gateway API and MCS ServiceExports.
    member
        .seed_yaml(
            "crds",
            &format!(
                "{}\n---\n{}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: fedns-system}}\n",
                fedns_standins::upstream_crds::gateway_api_yaml(),
                crate::member_sources::MCS_CRD
            ),
        )
        .unwrap();
    federation.register("m1", serde_json::json!({})).unwrap();
    federation
        .host
        .seed_yaml("host", crate::member_sources::HOST_YAML)
        .unwrap();
    member.record_requests(true);
    let (dns_port, metrics_port) = (free_port(), free_port());
    let _controller = spawn_controller(
        &dir,
        dns_port,
        metrics_port,
        &[
            "--udp-workers",
            "1",
            "--auto-records",
            "--vantage-namespace",
            "fedns-system",
        ],
    );
    let attributes = || -> BTreeSet<Attribute> { member.requests().iter().filter_map(attribute).collect() };
    let seen = |wanted: &[&str]| {
        let keys: BTreeSet<String> = attributes().iter().map(key).collect();
        wanted.iter().all(|w| keys.contains(*w))
    };
    // Everything the controller reads, once each kind has been listed and
    // watched, and the vantage targets written.
    eventually("the controller reads and writes in the member", || {
        seen(&[
            "watch /services",
            "watch discovery.k8s.io/endpointslices",
            "watch networking.k8s.io/ingresses",
            "watch /nodes",
            "watch gateway.networking.k8s.io/gatewayclasses",
            "watch gateway.networking.k8s.io/gateways",
            "watch gateway.networking.k8s.io/listenersets",
            "watch gateway.networking.k8s.io/httproutes",
            "watch gateway.networking.k8s.io/grpcroutes",
            "watch gateway.networking.k8s.io/tlsroutes",
            "watch gateway.networking.k8s.io/tcproutes",
            "watch gateway.networking.k8s.io/udproutes",
            "watch multicluster.x-k8s.io/serviceexports",
            "patch /configmaps",
            "watch /configmaps",
            "get /readyz",
        ])
    })
    .await;
    eventually("the answer is published", || {
        !dig(dns_port, "nginx.ns.myfed.svc.example.com", "A", false).is_empty()
    })
    .await;
    // `fedns explain --from-cluster --node`: the member credentials read a Node.
    let out = Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args([
            "explain",
            "nginx.ns.myfed",
            "--from-cluster",
            "m1",
            "--node",
            "node-us-east-1a",
        ])
        .arg("--kubeconfig")
        .arg(dir.join("host.kubeconfig"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A few more seconds: retries and re-lists add nothing new.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let used = attributes();
    member.record_requests(false);

    let reader = rules_of("deploy/member", "ClusterRole", "fedns-member-reader");
    let vantage = rules_of("deploy/agent", "Role", "fedns-controller-vantage");
    let mut refused = Vec::new();
    for attribute in &used {
        let allowed = match attribute {
            Attribute::Resource {
                namespace: Some(ns), ..
            } => ns == "fedns-system" && vantage.iter().any(|r| r.allows(attribute)),
            _ => reader.iter().any(|r| r.allows(attribute)),
        };
        if !allowed {
            refused.push(format!("{attribute:?}"));
        }
    }
    assert!(
        refused.is_empty(),
        "requests deploy/member (and deploy/agent's vantage Role) would refuse:\n{}",
        refused.join("\n")
    );
    let used_keys: BTreeSet<String> = used
        .iter()
        .filter(|a| !matches!(a, Attribute::Resource { namespace: Some(_), .. }))
        .map(key)
        .collect();
    let granted: BTreeSet<String> = reader.iter().flat_map(Rule::grants).collect();
    let unused: Vec<&String> = granted
        .iter()
        .filter(|g| !used_keys.contains(*g) && !UNUSED_BUT_KEPT.iter().any(|(k, _)| k == g))
        .collect();
    assert!(
        unused.is_empty(),
        "fedns-member-reader grants what no request used: {unused:?}\nused: {used_keys:#?}"
    );
    println!(
        "{} distinct requests to the member, all granted; fedns-member-reader: {} grants, each used (kept unused: {:?})",
        used.len(),
        granted.len(),
        UNUSED_BUT_KEPT
    );
    federation.stop();
}
