//! What the sandbox starts from: the built-in seed (`examples/sandbox/`,
//! compiled in) and the constants the first screen prints from it, or a
//! user's exported cluster state (`--members-from`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::cli::SandboxArgs;
use crate::federation::Federation;

/// The member that joins Karmada in pull mode with `--engine karmada`.
pub(super) const KARMADA_PULL_MEMBER: &str = "eu-west-1";

/// Controller namespace in the sandbox host.
pub(super) const NAMESPACE: &str = "fedns-system";

/// The members' load balancers with the built-in seed: an HTTP responder
/// each, on these loopback addresses (the seeded Services' `status.loadBalancer`)
/// and one port shared by all (the seeded Services' port, `{{lb-port}}`).
pub(super) const LOAD_BALANCERS: [(&str, [u8; 4]); 3] = [
    ("us-east-1", [127, 0, 10, 1]),
    ("us-west-2", [127, 0, 10, 2]),
    ("eu-west-1", [127, 0, 10, 3]),
];

/// Where each member's `fedns agent` keeps its ConfigMaps.
pub const AGENT_NAMESPACE: &str = "fedns-system";

/// The controller's probes come from this address (the kernel's choice for
/// a loopback destination); `isolate` refuses it.
pub(super) const CONTROLLER_PROBE_SOURCE: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// Each member's agent probes from 127.0.20.N (N: the member's place in
/// the seed, from 1), an address of its own.
pub(super) fn agent_source(index: usize) -> std::net::IpAddr {
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(
        127,
        0,
        20,
        u8::try_from(index + 1).unwrap_or(u8::MAX),
    ))
}

/// The seeded ServiceDNSRecord's `healthCheck.periodSeconds`.
pub(super) const PROBE_PERIOD_SECONDS: u64 = 1;

/// The seeded ServiceDNSRecord's `healthCheck.failureThreshold`.
pub(super) const PROBE_FAILURE_THRESHOLD: u64 = 2;

/// The seeded ServiceDNSRecord's `healthCheck.successThreshold`.
pub(super) const PROBE_SUCCESS_THRESHOLD: u64 = 1;

/// The built-in seed, compiled in so the binary works from any folder.
pub(super) const HOST_SEED: [(&str, &str); 2] = [
    (
        "examples/sandbox/host/10-federation.yaml",
        include_str!("../../../../examples/sandbox/host/10-federation.yaml"),
    ),
    (
        "examples/sandbox/host/20-memberclusters.yaml",
        include_str!("../../../../examples/sandbox/host/20-memberclusters.yaml"),
    ),
];

/// The host seed of `--engine`: the Domain and annotated templates.
pub(super) const ENGINE_HOST_SEED: (&str, &str) = (
    "examples/sandbox/engine/10-templates.yaml",
    include_str!("../../../../examples/sandbox/engine/10-templates.yaml"),
);

pub(super) const MEMBER_SEED: [(&str, &str); 3] = [
    (
        "us-east-1",
        include_str!("../../../../examples/sandbox/members/us-east-1/state.yaml"),
    ),
    (
        "us-west-2",
        include_str!("../../../../examples/sandbox/members/us-west-2/state.yaml"),
    ),
    (
        "eu-west-1",
        include_str!("../../../../examples/sandbox/members/eu-west-1/state.yaml"),
    ),
];

pub(super) struct Seed {
    pub(super) members: Vec<(String, Vec<PathBuf>, Option<String>)>,
}

pub(super) fn member_seed(args: &SandboxArgs) -> anyhow::Result<Seed> {
    let Some(dir) = &args.members_from else {
        return Ok(Seed {
            members: MEMBER_SEED
                .iter()
                .map(|(name, text)| (name.to_string(), Vec::new(), Some(text.to_string())))
                .collect(),
        });
    };
    let mut members = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        fedns_api::names::validate_label(&name)
            .with_context(|| format!("{}: a member folder name must be a DNS label", folder.display()))?;
        members.push((name, vec![folder], None));
    }
    anyhow::ensure!(!members.is_empty(), "{} has no member sub-folders", dir.display());
    // Read every file before starting anything: a malformed one stops here,
    // with file and line.
    for (_, paths, _) in &members {
        fedns_kube_emulator::check_manifests(paths)?;
    }
    Ok(Seed { members })
}

/// For `--members-from`: a Domain `myfed` for example.com with a
/// ServiceDNSRecord per LoadBalancer Service found, and a Domain plus an
/// IngressDNSRecord per Ingress host, so every name fedns would publish for
/// the exported clusters is published.
pub(super) fn seed_host_for_exported_state(federation: &Federation) -> anyhow::Result<()> {
    let mut services: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ingresses: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for member in federation.members.values() {
        let store = member.store();
        if let Some(info) = store.resource("", "v1", "services") {
            let list = store.list(&info, &Default::default(), None, None)?;
            for svc in list["items"].as_array().into_iter().flatten() {
                if svc.pointer("/spec/type").and_then(|t| t.as_str()) == Some("LoadBalancer") {
                    let ns = svc
                        .pointer("/metadata/namespace")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default();
                    let name = svc
                        .pointer("/metadata/name")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default();
                    services.insert((ns.into(), name.into()));
                }
            }
        }
        if let Some(info) = store.resource("networking.k8s.io", "v1", "ingresses") {
            let list = store.list(&info, &Default::default(), None, None)?;
            for ing in list["items"].as_array().into_iter().flatten() {
                let ns = ing
                    .pointer("/metadata/namespace")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                let name = ing
                    .pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                let hosts = ingresses.entry((ns.into(), name.into())).or_default();
                for rule in ing
                    .pointer("/spec/rules")
                    .and_then(|r| r.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(host) = rule.get("host").and_then(|h| h.as_str()) {
                        if let Ok(host) = fedns_api::names::normalize_hostname(host) {
                            hosts.insert(host);
                        }
                    }
                }
            }
        }
    }
    let mut docs = vec![
        json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
               "metadata": {"name": "myfed", "namespace": NAMESPACE},
               "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"],
                        "nameServerAddresses": [{"name": "ns1.example.com", "addresses": ["127.0.0.1"]}],
                        "transfer": {"allow": ["127.0.0.0/8"]}}}),
    ];
    let mut zones: BTreeSet<String> = BTreeSet::new();
    for (ns, name) in &services {
        docs.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                         "metadata": {"name": name, "namespace": ns}, "spec": {"domainRef": "myfed"}}),
        );
    }
    for ((ns, name), hosts) in &ingresses {
        if hosts.is_empty() {
            continue;
        }
        for host in hosts {
            if let Some((_, parent)) = host.split_once('.') {
                if parent.contains('.') && parent != "example.com" {
                    zones.insert(parent.to_owned());
                }
            }
        }
        docs.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "IngressDNSRecord",
                         "metadata": {"name": name, "namespace": ns}, "spec": {"hosts": hosts}}),
        );
    }
    for zone in zones {
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                         "metadata": {"name": format!("zone-{}", zone.replace('.', "-")), "namespace": NAMESPACE},
                         "spec": {"domain": zone}}),
        );
    }
    for name in federation.members.keys() {
        federation.register(name, json!({}))?;
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": docs});
    federation
        .host
        .seed_yaml("generated from --members-from", &serde_json::to_string(&list)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn documents(text: &str) -> Vec<serde_json::Value> {
        serde_yaml_ng::Deserializer::from_str(text)
            .map(|doc| serde_json::Value::deserialize(doc).expect("YAML"))
            .collect()
    }

    /// The printed timings come from constants; they must be the seed's.
    #[test]
    fn the_seed_matches_the_constants_and_probes_only_loopback() {
        let record = documents(HOST_SEED[0].1)
            .into_iter()
            .find(|d| d["kind"] == "ServiceDNSRecord")
            .expect("a ServiceDNSRecord");
        let check = &record["spec"]["healthCheck"];
        assert_eq!(check["periodSeconds"], PROBE_PERIOD_SECONDS);
        assert_eq!(check["failureThreshold"], PROBE_FAILURE_THRESHOLD);
        assert_eq!(check["successThreshold"], PROBE_SUCCESS_THRESHOLD);
        assert!(documents(HOST_SEED[0].1)
            .iter()
            .filter(|d| d["kind"] == "IngressDNSRecord")
            .all(|d| d["spec"].get("healthCheck").is_none()));
        for ((name, text), (lb_name, ip)) in MEMBER_SEED.iter().zip(LOAD_BALANCERS) {
            assert_eq!(*name, lb_name);
            let service = documents(&text.replace("{{lb-port}}", "8080"))
                .into_iter()
                .find(|d| d["kind"] == "Service")
                .expect("a Service");
            let want: Vec<serde_json::Value> = vec![json!({"ip": std::net::Ipv4Addr::from(ip).to_string()})];
            assert_eq!(service["status"]["loadBalancer"]["ingress"], json!(want), "{name}");
            assert_eq!(service["spec"]["ports"][0]["port"], 8080, "{name}");
        }
    }
}
