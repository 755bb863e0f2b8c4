//! "Why is my cluster (not) in DNS": every cluster behind a published name
//! with its control-plane state, cordon, endpoint readiness (when the
//! caller can see members), each load balancer address with its probe
//! state, and the reason it is or is not in the answer. Built from the
//! objects alone (`fedns explain`, read from the host cluster) or with the
//! controller's member caches (`/debug/explain` on the metrics port).

use crate::members::sources::{ENGINE_READY_ANNOTATION, SOURCE_ANNOTATION};
use fedns_api::{
    conditions, AddressHealth, ClusterDNS, DNSEndpoint, IngressDNSRecord, MemberCluster, ServiceDNSRecord,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use serde::Serialize;

/// What a member's own caches say of the record's Service or Ingress
/// (only the controller knows; None from the command line).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MemberFacts {
    /// The Service (or Ingress) exists in the member.
    pub exists: bool,
    /// It has a load balancer address.
    pub has_load_balancer: bool,
    /// Its EndpointSlices hold a ready endpoint (Services only).
    pub ready_endpoints: Option<bool>,
}

/// One cluster's part in the answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExplanation {
    /// MemberCluster name.
    pub cluster: String,
    /// `Ready`, or the Ready condition's reason (`ClusterNotReachable`, ...).
    pub control_plane: String,
    /// The Ready condition's message.
    pub control_plane_message: String,
    /// `spec.cordoned`.
    pub cordoned: bool,
    /// Endpoint readiness as the controller sees it (None: unknown here).
    pub ready_endpoints: Option<bool>,
    /// In the record's published set.
    pub in_answer: bool,
    /// Its load balancer addresses with their probe state.
    pub addresses: Vec<AddressHealth>,
    /// One line: why it is or is not in the answer.
    pub reason: String,
    /// Where the member comes from when not a MemberCluster: `karmada`, `kubefed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// That engine's own Ready condition (reported; fedns's probes decide).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_ready: Option<String>,
}

/// The explanation of one name.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The name asked about.
    pub name: String,
    /// DNSEndpoints (`namespace/name`) that publish it.
    pub dns_endpoints: Vec<String>,
    /// The record behind it (`Kind namespace/name`), if fedns made it.
    pub record: Option<String>,
    /// The record's conditions.
    pub conditions: Vec<Condition>,
    /// Every member cluster.
    pub clusters: Vec<ClusterExplanation>,
    /// The traffic policy of the name, when it has one (and, with a client
    /// subnet, what that client is answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<RoutingExplanation>,
    /// When the name's zone is signed by the embedded DNS server: the DS
    /// records to put at the parent (from the Domain's status).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ds_records: Vec<String>,
}

/// The DS records in the status of the Domain (of `domains`) whose zone
/// holds `name`, the deepest zone winning: what `fedns explain` prints for
/// a signed zone.
pub fn ds_records_for(name: &str, domains: &[fedns_api::Domain]) -> Vec<String> {
    let wanted = name.trim_end_matches('.').to_ascii_lowercase();
    domains
        .iter()
        .filter_map(|d| {
            let apex = d.spec.domain.trim_end_matches('.').to_ascii_lowercase();
            let inside = wanted == apex || wanted.ends_with(&format!(".{apex}"));
            inside.then(|| {
                (
                    apex.len(),
                    d.status.as_ref().map(|s| s.ds_records.clone()).unwrap_or_default(),
                )
            })
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, ds)| ds)
        .unwrap_or_default()
}

/// A name's traffic policy as the DNS server applies it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RoutingExplanation {
    /// `Weighted`, `Failover` or `Nearest`.
    pub policy: String,
    /// One line per cluster (set identifier): its addresses and its
    /// weight and share, failover role, or region.
    pub members: Vec<String>,
    /// `Nearest`: the region order after the client's own.
    pub fallback: Vec<String>,
    /// What the client asked about gets, if one was given.
    pub client: Option<ClientExplanation>,
}

/// Which variant one client gets, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClientExplanation {
    /// The client subnet asked about (as an ECS option would carry it).
    pub subnet: String,
    /// The region the client is placed in, if any.
    pub region: Option<String>,
    /// The SCOPE PREFIX-LENGTH the answer carries (RFC 7871).
    pub scope: u8,
    /// The clusters whose addresses the client is answered with
    /// (`Weighted`: one of them per answer).
    pub clusters: Vec<String>,
    /// One line: why.
    pub reason: String,
}

/// The traffic policy of `name` and, with `client`, which variant that
/// client gets: computed with the DNS server's own code (desired zones
/// from the Domains and DNSEndpoints, a snapshot, its client placement),
/// optionally with a GeoIP database. `None` when the name has no policy.
pub fn explain_routing(
    name: &str,
    domains: &[fedns_api::Domain],
    endpoints: &[DNSEndpoint],
    client: Option<ipnet::IpNet>,
    geo: Option<std::sync::Arc<fedns_dnsserver::GeoIpDb>>,
) -> Option<RoutingExplanation> {
    use fedns_api::RoutingPolicy;
    let wanted = name.trim_end_matches('.').to_ascii_lowercase();
    let desired = fedns_providers::plan::desired::desired_zones(domains, endpoints);
    let (zone, routing) = desired.zones.iter().find_map(|z| {
        z.rrsets
            .iter()
            .filter(|r| r.name == wanted)
            .find_map(|r| r.routing.as_ref())
            .map(|routing| (z, routing))
    })?;
    let members: std::collections::BTreeMap<&str, Vec<&fedns_providers::plan::desired::RoutedMember>> =
        z_members(zone, &wanted);
    let total: u32 = members.values().filter_map(|m| m[0].weight).sum();
    let lines = members
        .iter()
        .map(|(id, ms)| {
            let targets: Vec<&str> = ms.iter().flat_map(|m| m.targets.iter().map(String::as_str)).collect();
            let m = ms[0];
            let detail = match routing.policy {
                RoutingPolicy::Weighted => {
                    let w = m.weight.unwrap_or(0);
                    let share = if total > 0 {
                        format!("{:.1} % of answers", 100.0 * f64::from(w) / f64::from(total))
                    } else {
                        "all weights 0: equal shares".to_owned()
                    };
                    format!("weight {w} ({share})")
                }
                RoutingPolicy::Failover => format!("failover {}", m.failover.as_deref().unwrap_or("?")),
                _ => format!("region {}", m.region.as_deref().unwrap_or("(none)")),
            };
            format!("{id}: {} — {detail}", targets.join(" "))
        })
        .collect();
    let mut out = RoutingExplanation {
        policy: routing.policy.as_str().to_owned(),
        members: lines,
        fallback: routing.fallback.clone(),
        client: None,
    };
    let Some(subnet) = client else {
        return Some(out);
    };
    let address = (subnet.prefix_len() > 0).then(|| subnet.trunc().network());
    out.client = Some(match routing.policy {
        RoutingPolicy::Failover => {
            let active: Vec<String> = members
                .iter()
                .filter(|(_, ms)| ms[0].failover.as_deref() == Some("PRIMARY"))
                .map(|(id, _)| id.to_string())
                .collect();
            let (clusters, why) = if active.is_empty() {
                (
                    members.keys().map(|s| s.to_string()).collect(),
                    "no PRIMARY cluster is healthy: the SECONDARY group answers",
                )
            } else {
                (
                    active,
                    "the first priority group with a healthy cluster (PRIMARY) answers",
                )
            };
            ClientExplanation {
                subnet: subnet.to_string(),
                region: None,
                scope: 0,
                clusters,
                reason: format!("Failover does not depend on the client: {why}"),
            }
        }
        _ => {
            let snapshot = fedns_dnsserver::Snapshot::build_with_geoip(&[(zone.content.clone(), 1)], geo);
            let choice = snapshot.choice_for(&format!("{wanted}."), address)?;
            let reason = match (routing.policy, &choice.region, address) {
                (RoutingPolicy::Weighted, _, _) => {
                    "Weighted does not depend on the client: each answer holds one of these clusters, by weight".to_owned()
                }
                (_, _, None) => "SOURCE PREFIX-LENGTH 0: no client information; the answer for everybody (fallback order, else every cluster)".to_owned(),
                (_, Some(region), _) if members.values().any(|ms| ms[0].region.as_deref() == Some(region.as_str())) => {
                    format!("the client is in region {region}, which has healthy clusters")
                }
                (_, Some(region), _) => format!(
                    "the client is in region {region}, which has no healthy cluster: fallback {:?}, else every cluster",
                    routing.fallback
                ),
                (_, None, _) => format!(
                    "the client is in no known region (Domain clientRegions/geoRegions): fallback {:?}, else every cluster",
                    routing.fallback
                ),
            };
            let clusters = if routing.policy == RoutingPolicy::Weighted {
                // Route53's semantics: weight 0 is standby while any has weight.
                let weighted: Vec<String> = members
                    .iter()
                    .filter(|(_, ms)| ms[0].weight.unwrap_or(0) > 0)
                    .map(|(id, _)| id.to_string())
                    .collect();
                if weighted.is_empty() {
                    choice.variants
                } else {
                    weighted
                }
            } else {
                choice.variants
            };
            ClientExplanation {
                subnet: subnet.to_string(),
                region: choice.region,
                scope: choice.scope,
                clusters,
                reason,
            }
        }
    });
    Some(out)
}

/// The routed members of `name` in `zone`, by set identifier (A and AAAA).
fn z_members<'a>(
    zone: &'a fedns_providers::plan::desired::DesiredZone,
    name: &str,
) -> std::collections::BTreeMap<&'a str, Vec<&'a fedns_providers::plan::desired::RoutedMember>> {
    let mut out: std::collections::BTreeMap<&str, Vec<&fedns_providers::plan::desired::RoutedMember>> =
        Default::default();
    for rrset in zone.rrsets.iter().filter(|r| r.name == name) {
        for member in rrset.routing.iter().flat_map(|r| r.members.iter()) {
            out.entry(member.set_identifier.as_str()).or_default().push(member);
        }
    }
    out
}

/// What the explanation reads of a record, whichever kind.
struct RecordView {
    kind: &'static str,
    namespace: String,
    name: String,
    /// Clusters in `status.dns`.
    served: Vec<String>,
    probes: Vec<AddressHealth>,
    conditions: Vec<Condition>,
    has_check: bool,
}

/// The record kinds, seen the same way.
enum Record<'a> {
    Service(&'a ServiceDNSRecord),
    Ingress(&'a IngressDNSRecord),
}

/// Explains `name` from the host's objects; `facts` adds what the
/// controller's member caches know (cluster, record namespace and name).
pub fn explain(
    name: &str,
    endpoints: &[DNSEndpoint],
    services: &[ServiceDNSRecord],
    ingresses: &[IngressDNSRecord],
    members: &[MemberCluster],
    facts: &dyn Fn(&str, &str, &str, bool) -> Option<MemberFacts>,
) -> Explanation {
    let wanted = name.trim_end_matches('.').to_ascii_lowercase();
    let publishing: Vec<&DNSEndpoint> = endpoints
        .iter()
        .filter(|e| {
            e.spec
                .endpoints
                .iter()
                .any(|ep| ep.dns_name.trim_end_matches('.').eq_ignore_ascii_case(&wanted))
        })
        .collect();
    let mut explanation = Explanation {
        name: wanted.clone(),
        dns_endpoints: publishing
            .iter()
            .map(|e| format!("{}/{}", e.namespace().unwrap_or_default(), e.name_any()))
            .collect(),
        record: None,
        conditions: Vec::new(),
        clusters: Vec::new(),
        routing: None,
        ds_records: Vec::new(),
    };
    // The record that owns the (first) DNSEndpoint.
    let record = publishing.iter().find_map(|endpoint| {
        let namespace = endpoint.namespace().unwrap_or_default();
        endpoint
            .owner_references()
            .iter()
            .find_map(|owner| match owner.kind.as_str() {
                "ServiceDNSRecord" => services
                    .iter()
                    .find(|r| r.name_any() == owner.name && r.namespace().as_deref() == Some(namespace.as_str()))
                    .map(Record::Service),
                "IngressDNSRecord" => ingresses
                    .iter()
                    .find(|r| r.name_any() == owner.name && r.namespace().as_deref() == Some(namespace.as_str()))
                    .map(Record::Ingress),
                _ => None,
            })
    });
    let Some(record) = record else {
        return explanation;
    };
    let view = match record {
        Record::Service(r) => {
            let status = r.status.clone().unwrap_or_default();
            RecordView {
                kind: "ServiceDNSRecord",
                namespace: r.namespace().unwrap_or_default(),
                name: r.name_any(),
                served: status.dns.iter().map(|d: &ClusterDNS| d.cluster.clone()).collect(),
                probes: status.probes,
                conditions: status.conditions,
                has_check: r.spec.health_check.is_some(),
            }
        }
        Record::Ingress(r) => {
            let status = r.status.clone().unwrap_or_default();
            RecordView {
                kind: "IngressDNSRecord",
                namespace: r.namespace().unwrap_or_default(),
                name: r.name_any(),
                served: status.dns.iter().map(|d| d.cluster.clone()).collect(),
                probes: status.probes,
                conditions: status.conditions,
                has_check: r.spec.health_check.is_some(),
            }
        }
    };
    let RecordView {
        kind,
        namespace,
        name: record_name,
        served,
        probes,
        conditions: record_conditions,
        has_check,
    } = view;
    let is_service = kind == "ServiceDNSRecord";
    explanation.record = Some(format!("{kind} {namespace}/{record_name}"));
    let failing_open =
        conditions::get(&record_conditions, conditions::READY).is_some_and(|c| c.reason == conditions::ALL_UNHEALTHY);
    explanation.conditions = record_conditions;

    for member in members {
        let cluster = member.name_any();
        let ready = member
            .status
            .as_ref()
            .and_then(|s| conditions::get(&s.conditions, conditions::READY).cloned());
        let reachable = ready.as_ref().is_some_and(|c| c.status == "True");
        let control_plane = match &ready {
            Some(c) if c.status == "True" => "Ready".to_owned(),
            Some(c) => c.reason.clone(),
            None => "Unknown".to_owned(),
        };
        let addresses: Vec<AddressHealth> = probes.iter().filter(|p| p.cluster == cluster).cloned().collect();
        let in_answer = served.contains(&cluster);
        let member_facts = facts(&cluster, &namespace, &record_name, is_service);
        let down: Vec<&AddressHealth> = addresses.iter().filter(|a| a.state == "Down").collect();
        let drain = super::health::drain_share(Some(member), jiff::Timestamp::now());
        let reason = if let (true, Some((tenths, _))) = (member.spec.cordoned && in_answer, drain) {
            format!(
                "cordoned, draining over {} s (spec.drainSeconds): Weighted names give it {} % of its weight \
                 now; other policies keep it until the drain ends",
                member.spec.drain_seconds,
                tenths * 10
            )
        } else if member.spec.cordoned {
            "cordoned (spec.cordoned): drained on purpose".to_owned()
        } else if in_answer && failing_open {
            "served because health would remove every cluster (whenAllUnhealthy: ServeLastKnown)".to_owned()
        } else if in_answer && !reachable {
            "served from its last-known addresses: API server unreachable, load balancer passing its probes".to_owned()
        } else if in_answer {
            if addresses.is_empty() {
                "in the answer: API server ready".to_owned()
            } else {
                format!(
                    "in the answer: API server ready, {} of {} address(es) passing",
                    addresses.len() - down.len(),
                    addresses.len()
                )
            }
        } else if !reachable && !has_check {
            format!(
                "API server not ready ({control_plane}); without a healthCheck its last-known addresses are not kept"
            )
        } else if !down.is_empty() {
            let first = down[0];
            format!(
                "load balancer failing its probes: {} Down since {}: {}",
                first.address,
                first.since.as_deref().unwrap_or("?"),
                first.last_error.as_deref().unwrap_or("")
            )
        } else if !reachable {
            format!("API server not ready ({control_plane}) and no last-known addresses")
        } else {
            match &member_facts {
                Some(f) if !f.exists => format!(
                    "no {} {namespace}/{record_name} in this cluster",
                    if is_service { "Service" } else { "Ingress" }
                ),
                Some(f) if !f.has_load_balancer => "its load balancer has no address".to_owned(),
                Some(f) if f.ready_endpoints == Some(false) => "no ready endpoint in its EndpointSlices".to_owned(),
                _ => "not in the answer: no load balancer address with ready endpoints (see the member)".to_owned(),
            }
        };
        explanation.clusters.push(ClusterExplanation {
            cluster,
            control_plane,
            control_plane_message: ready.map(|c| c.message).unwrap_or_default(),
            cordoned: member.spec.cordoned,
            ready_endpoints: member_facts.and_then(|f| f.ready_endpoints),
            in_answer,
            addresses,
            reason,
            source: member.annotations().get(SOURCE_ANNOTATION).cloned(),
            engine_ready: member.annotations().get(ENGINE_READY_ANNOTATION).cloned(),
        });
    }
    explanation
}

fn render_routing(out: &mut String, routing: &RoutingExplanation) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "  routing {}", routing.policy);
    for member in &routing.members {
        let _ = writeln!(out, "    {member}");
    }
    if !routing.fallback.is_empty() {
        let _ = writeln!(out, "    fallback {}", routing.fallback.join(" → "));
    }
    if let Some(client) = &routing.client {
        let _ = writeln!(
            out,
            "  client {}: region {}, answered with {} (SCOPE PREFIX-LENGTH {})",
            client.subnet,
            client.region.as_deref().unwrap_or("(none)"),
            client.clusters.join(", "),
            client.scope
        );
        let _ = writeln!(out, "    {}", client.reason);
    }
}

/// The explanation as text for a terminal.
pub fn render(explanation: &Explanation) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "{}", explanation.name);
    for ds in &explanation.ds_records {
        let _ = writeln!(out, "  zone signed (DNSSEC); DS for the parent zone: {ds}");
    }
    if explanation.dns_endpoints.is_empty() {
        let _ = writeln!(out, "  no DNSEndpoint publishes this name");
        return out;
    }
    let _ = writeln!(
        out,
        "  published by DNSEndpoint {}",
        explanation.dns_endpoints.join(", ")
    );
    let Some(record) = &explanation.record else {
        let _ = writeln!(
            out,
            "  not made by fedns from a record (no ServiceDNSRecord or IngressDNSRecord owns it)"
        );
        return out;
    };
    let _ = writeln!(out, "  record {record}");
    if let Some(routing) = &explanation.routing {
        render_routing(&mut out, routing);
    }
    for condition in &explanation.conditions {
        let _ = writeln!(
            out,
            "  {}={} ({}): {}",
            condition.type_, condition.status, condition.reason, condition.message
        );
    }
    let _ = writeln!(out);
    for cluster in &explanation.clusters {
        let _ = writeln!(
            out,
            "  {:<20} {:<4} control plane {}{}{}",
            cluster.cluster,
            if cluster.in_answer { "IN" } else { "OUT" },
            cluster.control_plane,
            if cluster.cordoned { ", cordoned" } else { "" },
            match cluster.ready_endpoints {
                Some(true) => ", endpoints ready",
                Some(false) => ", no ready endpoint",
                None => "",
            }
        );
        let _ = writeln!(out, "  {:<20}      {}", "", cluster.reason);
        if let Some(source) = &cluster.source {
            let _ = writeln!(
                out,
                "  {:<20}      from {source}; {source} reports Ready={} (fedns's probes decide)",
                "",
                cluster.engine_ready.as_deref().unwrap_or("(none)")
            );
        }
        for address in &cluster.addresses {
            let _ = writeln!(
                out,
                "  {:<20}      {} {}{}{}",
                "",
                address.address,
                address.state,
                address
                    .since
                    .as_deref()
                    .map(|s| format!(" since {s}"))
                    .unwrap_or_default(),
                address
                    .last_error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            );
            if let Some(pending) = &address.pending_state {
                let _ = writeln!(
                    out,
                    "  {:<20}        pending {pending}: held since {}, takes effect at {} if it holds (failover/failback delay)",
                    "",
                    address.pending_since.as_deref().unwrap_or("?"),
                    address.pending_effective_at.as_deref().unwrap_or("?")
                );
            }
            if let Some(quorum) = &address.quorum {
                let _ = writeln!(out, "  {:<20}        quorum {quorum}", "");
            }
            for vantage in &address.vantage_points {
                let _ = writeln!(
                    out,
                    "  {:<20}        vantage point {:<12} {}{}{} ({})",
                    "",
                    vantage.name,
                    vantage.state,
                    vantage
                        .since
                        .as_deref()
                        .map(|s| format!(" since {s}"))
                        .unwrap_or_default(),
                    vantage
                        .last_error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default(),
                    vantage.standing
                );
            }
        }
    }
    out
}
