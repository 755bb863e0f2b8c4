//! `fedns explain NAME --from-cluster C`: what a pod in member `C` gets
//! for a discovery name (`nginx.ns.myfed`, as its search path completes it
//! to `nginx.ns.myfed.svc.<cluster-domain>`), and why, computed by the same
//! rules the member-side replica answers with ([`super::answer`]).

use serde::Serialize;

use super::answer::{self, chosen_zone, Decision, Inputs};
use super::ownership::Ownership;

/// What a pod in one member gets for one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FromCluster {
    /// The name asked, fully qualified and lower case
    /// (`S.N.F.svc.<cluster-domain>.`).
    pub name: String,
    /// The member the pod runs in.
    pub member: String,
    /// ServiceDNSRecord `namespace/name` behind the name, if any.
    pub record: Option<String>,
    /// The answer.
    pub answer: FromClusterAnswer,
}

/// The answer a pod gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum FromClusterAnswer {
    /// The member's own Service.
    Local {
        /// A/AAAA data: the ClusterIPs (headless: ready endpoint addresses).
        addresses: Vec<String>,
        /// Ready endpoints of the Service in the member.
        ready_endpoints: usize,
    },
    /// A CNAME to a federated name, whose answer follows in the same
    /// response.
    Fallback {
        /// The CNAME target, fully qualified.
        target: String,
        /// Why not the local Service.
        reason: String,
        /// How the target's zone or region was chosen.
        target_choice: String,
    },
    /// Not answered yet: the fallback's target is not known to be
    /// published (docs/discovery.md, "Starting up").
    Pending {
        /// The federated name the fallback would point at.
        target: String,
        /// What is awaited.
        reason: String,
    },
    /// NXDOMAIN.
    NxDomain {
        /// Why no record exists.
        reason: String,
    },
}

/// The discovery owner a name asks for: `S.N.F[.svc[.<cluster-domain>]]`
/// or a `dnsPrefix` alias `P.F[.svc[.<cluster-domain>]]`, as the fully
/// qualified name in the discovery zone; `Err` with why it is none.
pub fn qualified_name(name: &str, cluster_domain: &str) -> Result<String, String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let domain = cluster_domain.trim_end_matches('.').to_ascii_lowercase();
    let short = name
        .strip_suffix(&format!(".svc.{domain}"))
        .or_else(|| name.strip_suffix(".svc"))
        .unwrap_or(&name);
    match short.split('.').count() {
        2 | 3 => Ok(format!("{short}.svc.{domain}.")),
        _ => Err(format!(
            "{name} is not a discovery name: want SERVICE.NAMESPACE.FEDERATION (a pod's short name), \
             SERVICE.NAMESPACE.FEDERATION.svc.{domain}, or a dnsPrefix PREFIX.FEDERATION"
        )),
    }
}

/// What a pod in `member` gets for `name`, from `inputs` (the host's and
/// the member's view, as the replica's), with no Domain's admission rule
/// or record age known ([`explain_from_cluster_owned`] with
/// [`Ownership::default`]). `Err`: `name` is no discovery name at all.
pub fn explain_from_cluster(name: &str, member: &str, inputs: &Inputs) -> Result<FromCluster, String> {
    explain_from_cluster_owned(name, member, inputs, &Ownership::default())
}

/// What a pod in `member` gets for `name`, from `inputs` under the
/// ownership rules `ownership`, as the replica answers. `Err`: `name` is
/// no discovery name at all.
pub fn explain_from_cluster_owned(
    name: &str,
    member: &str,
    inputs: &Inputs,
    ownership: &Ownership,
) -> Result<FromCluster, String> {
    let qualified = qualified_name(name, &inputs.cluster_domain)?;
    let computed = answer::compute_owned(inputs, ownership);
    let labels: Vec<&str> = qualified.split('.').collect();
    let federation = if labels.len() >= 5 && labels[3] == "svc" {
        labels[2]
    } else {
        labels[1]
    };
    // A dnsPrefix alias (`P.<apex>`) answered names its record's owner.
    let owner = computed
        .aliases
        .get(&qualified)
        .cloned()
        .unwrap_or_else(|| qualified.clone());
    let found = computed.decisions.iter().find(|d| d.owner == owner);
    let Some(decision) = found else {
        let reason = if !inputs.federations.iter().any(|f| f.name == federation) {
            format!("no Domain (federation) {federation}")
        } else if let Some(why) = computed.refused.get(&qualified) {
            why.clone()
        } else {
            format!("no ServiceDNSRecord with domainRef {federation} publishes {qualified}")
        };
        return Ok(FromCluster {
            name: qualified,
            member: member.to_owned(),
            record: None,
            answer: FromClusterAnswer::NxDomain { reason },
        });
    };
    let record_key = decision
        .record
        .split_once('/')
        .map(|(n, s)| (n.to_owned(), s.to_owned()));
    let answer = match &decision.decision {
        Decision::Local(addresses) => FromClusterAnswer::Local {
            addresses: addresses.iter().map(ToString::to_string).collect(),
            ready_endpoints: record_key
                .and_then(|key| inputs.services.get(&key))
                .map_or(0, |s| s.ready_endpoints),
        },
        Decision::Fallback { target, reason } => FromClusterAnswer::Fallback {
            target: target.clone(),
            reason: reason.clone(),
            target_choice: target_choice(member, inputs),
        },
        Decision::Pending { target, reason } => FromClusterAnswer::Pending {
            target: target.clone(),
            reason: reason.clone(),
        },
    };
    Ok(FromCluster {
        name: qualified,
        member: member.to_owned(),
        record: Some(decision.record.clone()),
        answer,
    })
}

/// Why the fallback goes to this zone, region or the global name.
fn target_choice(member: &str, inputs: &Inputs) -> String {
    let Some(view) = &inputs.member else {
        return format!("the global name: no MemberCluster {member} gives a region");
    };
    let Some(region) = &view.region else {
        return format!("the global name: {member} has no region");
    };
    match chosen_zone(view, inputs.node_zone.as_deref()) {
        Some(zone) if inputs.node_zone.as_deref() == Some(zone) => {
            format!("zone {zone} of region {region}: the zone of the node the replica runs on")
        }
        Some(zone) if view.zones.len() > 1 => format!(
            "zone {zone} of region {region}: {member}'s first zone of {:?} (the zone of the replica's node picks among them when known: --node)",
            view.zones
        ),
        Some(zone) => format!("zone {zone} of region {region}: {member}'s zone"),
        None => format!("region {region}: {member} has no zone"),
    }
}

/// Lines for a terminal.
pub fn render(explanation: &FromCluster) -> String {
    let mut out = format!("{} from a pod in {}", explanation.name, explanation.member);
    if let Some(record) = &explanation.record {
        out.push_str(&format!(" (ServiceDNSRecord {record})"));
    }
    out.push('\n');
    match &explanation.answer {
        FromClusterAnswer::Local {
            addresses,
            ready_endpoints,
        } => out.push_str(&format!(
            "  answer: the local Service, {} ({ready_endpoints} ready endpoint{} in {}): traffic stays in the cluster\n",
            addresses.join(", "),
            if *ready_endpoints == 1 { "" } else { "s" },
            explanation.member
        )),
        FromClusterAnswer::Fallback {
            target,
            reason,
            target_choice,
        } => {
            out.push_str(&format!("  answer: CNAME {target} ({reason})\n"));
            out.push_str(&format!("  target: {target_choice}\n"));
            out.push_str("  the chain and its final addresses follow in the same answer, as for any client:\n");
        }
        FromClusterAnswer::Pending { target, reason } => out.push_str(&format!(
            "  answer: pending, no answer from this view yet ({reason}); then a CNAME to {target}\n"
        )),
        FromClusterAnswer::NxDomain { reason } => out.push_str(&format!("  answer: NXDOMAIN ({reason})\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer tests' inputs, the local Service ready (two endpoints)
    /// or not.
    fn inputs(ready: bool) -> Inputs {
        let mut inputs = crate::discovery::answer::tests::inputs();
        for service in inputs.services.values_mut() {
            service.ready = ready;
            service.ready_endpoints = usize::from(ready) * 2;
        }
        inputs
    }

    #[test]
    fn a_ready_local_service_is_the_answer() {
        let got = explain_from_cluster("nginx.ns.myfed", "us-east-1", &inputs(true)).unwrap();
        assert_eq!(got.name, "nginx.ns.myfed.svc.cluster.local.");
        assert_eq!(got.record.as_deref(), Some("ns/nginx"));
        assert_eq!(
            got.answer,
            FromClusterAnswer::Local {
                addresses: vec!["10.96.0.10".into(), "fd00::10".into()],
                ready_endpoints: 2
            }
        );
        assert!(render(&got).contains("the local Service, 10.96.0.10, fd00::10 (2 ready endpoints in us-east-1)"));
    }

    #[test]
    fn unready_endpoints_fall_back_to_the_node_zone_name() {
        for name in ["nginx.ns.myfed.svc.cluster.local.", "NGINX.ns.myfed.svc", "www.myfed"] {
            let got = explain_from_cluster(name, "us-east-1", &inputs(false)).unwrap();
            let FromClusterAnswer::Fallback {
                target, target_choice, ..
            } = &got.answer
            else {
                panic!("{name}: {got:?}");
            };
            assert_eq!(target, "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com.", "{name}");
            assert!(target_choice.contains("node"), "{target_choice}");
        }
    }

    #[test]
    fn another_namespaces_prefix_explains_as_refused_and_never_as_the_answer() {
        let mut i = inputs(false);
        i.records.insert(
            0,
            crate::discovery::answer::RecordView {
                namespace: "mallory".into(),
                service: "a".into(),
                domain_ref: "myfed".into(),
                external_name: None,
                dns_prefix: Some("nginx.ns".into()),
            },
        );
        let got = explain_from_cluster("nginx.ns.myfed", "us-east-1", &i).unwrap();
        assert_eq!(got.record.as_deref(), Some("ns/nginx"));
        assert!(matches!(got.answer, FromClusterAnswer::Fallback { .. }), "{got:?}");
        // The alias of ns/nginx still names it.
        let got = explain_from_cluster("www.myfed", "us-east-1", &i).unwrap();
        assert_eq!(got.record.as_deref(), Some("ns/nginx"));
        // Without ns/nginx: NXDOMAIN, saying why mallory's prefix is not it.
        i.records.retain(|r| r.namespace == "mallory");
        let got = explain_from_cluster("nginx.ns.myfed", "us-east-1", &i).unwrap();
        assert!(render(&got).contains("NotAllowed"), "{}", render(&got));
    }

    #[test]
    fn unknown_names_are_nxdomain_and_others_an_error() {
        let got = explain_from_cluster("nope.ns.myfed", "us-east-1", &inputs(true)).unwrap();
        assert!(matches!(got.answer, FromClusterAnswer::NxDomain { .. }), "{got:?}");
        let got = explain_from_cluster("nginx.ns.other", "us-east-1", &inputs(true)).unwrap();
        assert!(
            render(&got).contains("no Domain (federation) other"),
            "{}",
            render(&got)
        );
        assert!(explain_from_cluster("a.b.c.d.e.f", "us-east-1", &inputs(true)).is_err());
    }
}
