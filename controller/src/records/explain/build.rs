//! The explanation of one published name: each cluster behind it and
//! why it is or is not in the answer ([`explain`]).

use crate::members::sources::{ENGINE_READY_ANNOTATION, SOURCE_ANNOTATION};
use fedns_api::{
    conditions, AddressHealth, ClusterDNS, DNSEndpoint, IngressDNSRecord, MemberCluster, RouteDNSRecord,
    ServiceDNSRecord,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use serde::Serialize;

use super::routing::RoutingExplanation;

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
    /// Why the Ingress's backends keep it out (`spec.backends`), if they do.
    pub backends_problem: Option<String>,
    /// Endpoints (ready, all) of the Service, or of the Ingress's
    /// controller Service, for `spec.minHealthy.endpoints`.
    pub endpoints: Option<(u32, u32)>,
    /// Why the route serves nothing in the member (RouteDNSRecords: not
    /// accepted, listener not programmed, no Gateway address, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_problem: Option<String>,
}

/// The kind of object a record follows in each member, for the member
/// facts of [`explain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// A Service (ServiceDNSRecord).
    Service,
    /// An Ingress (IngressDNSRecord).
    Ingress,
    /// A Gateway API route of this kind (RouteDNSRecord).
    Route(fedns_api::RouteKind),
}

impl Followed {
    /// The kind's name: `Service`, `Ingress`, `HTTPRoute`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Followed::Service => "Service",
            Followed::Ingress => "Ingress",
            Followed::Route(kind) => kind.as_str(),
        }
    }
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

/// What the explanation reads of a record, whichever kind.
struct RecordView {
    kind: &'static str,
    followed: Followed,
    namespace: String,
    name: String,
    /// Clusters in `status.dns`.
    served: Vec<String>,
    probes: Vec<AddressHealth>,
    conditions: Vec<Condition>,
    has_check: bool,
    min_healthy: Option<fedns_api::MinHealthy>,
}

/// Why a cluster is below the record's `spec.minHealthy`, if it is: its
/// probed addresses passing, or its ready endpoints.
fn below_minimum(
    min_healthy: Option<fedns_api::MinHealthy>,
    addresses: &[AddressHealth],
    facts: Option<&MemberFacts>,
) -> Option<String> {
    let min_healthy = min_healthy?;
    if let Some(minimum) = min_healthy.addresses.filter(|_| !addresses.is_empty()) {
        let all = u32::try_from(addresses.len()).unwrap_or(u32::MAX);
        let passing = u32::try_from(addresses.iter().filter(|a| a.state != "Down").count()).unwrap_or(u32::MAX);
        if !minimum.met(passing, all) {
            return Some(format!(
                "below minHealthy.addresses {minimum}: {passing} of {all} address(es) passing, {} needed",
                minimum.required(all)
            ));
        }
    }
    let (ready, all) = facts.and_then(|f| f.endpoints)?;
    let minimum = min_healthy.endpoints?;
    (all > 0 && !minimum.met(ready, all)).then(|| {
        format!(
            "below minHealthy.endpoints {minimum}: {ready} of {all} endpoint(s) ready, {} needed",
            minimum.required(all)
        )
    })
}

/// The record kinds, seen the same way.
enum Record<'a> {
    Service(&'a ServiceDNSRecord),
    Ingress(&'a IngressDNSRecord),
    Route(&'a RouteDNSRecord),
}

/// Explains `name` from the host's objects; `facts` adds what the
/// controller's member caches know (cluster, record namespace and name).
pub fn explain(
    name: &str,
    endpoints: &[DNSEndpoint],
    services: &[ServiceDNSRecord],
    ingresses: &[IngressDNSRecord],
    routes: &[RouteDNSRecord],
    members: &[MemberCluster],
    facts: &dyn Fn(&str, &str, &str, Followed) -> Option<MemberFacts>,
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
                "RouteDNSRecord" => routes
                    .iter()
                    .find(|r| r.name_any() == owner.name && r.namespace().as_deref() == Some(namespace.as_str()))
                    .map(Record::Route),
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
                followed: Followed::Service,
                namespace: r.namespace().unwrap_or_default(),
                name: r.name_any(),
                served: status.dns.iter().map(|d: &ClusterDNS| d.cluster.clone()).collect(),
                probes: status.probes,
                conditions: status.conditions,
                has_check: r.spec.health_check.is_some(),
                min_healthy: r.spec.min_healthy,
            }
        }
        Record::Ingress(r) => {
            let status = r.status.clone().unwrap_or_default();
            RecordView {
                kind: "IngressDNSRecord",
                followed: Followed::Ingress,
                namespace: r.namespace().unwrap_or_default(),
                name: r.name_any(),
                served: status.dns.iter().map(|d| d.cluster.clone()).collect(),
                probes: status.probes,
                conditions: status.conditions,
                has_check: r.spec.health_check.is_some(),
                min_healthy: r.spec.min_healthy,
            }
        }
        Record::Route(r) => {
            let status = r.status.clone().unwrap_or_default();
            RecordView {
                kind: "RouteDNSRecord",
                followed: Followed::Route(r.spec.route_kind),
                namespace: r.namespace().unwrap_or_default(),
                name: r.name_any(),
                served: status.dns.iter().map(|d| d.cluster.clone()).collect(),
                probes: status.probes,
                conditions: status.conditions,
                has_check: r.spec.health_check.is_some(),
                min_healthy: r.spec.min_healthy,
            }
        }
    };
    let RecordView {
        kind,
        followed,
        namespace,
        name: record_name,
        served,
        probes,
        conditions: record_conditions,
        has_check,
        min_healthy,
    } = view;
    explanation.record = Some(format!("{kind} {namespace}/{record_name}"));
    let failing_open =
        conditions::get(&record_conditions, conditions::READY).is_some_and(|c| c.reason == conditions::ALL_UNHEALTHY);
    let serving_fallback = conditions::get(&record_conditions, conditions::READY)
        .is_some_and(|c| c.reason == conditions::SERVING_FALLBACK);
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
        let member_facts = facts(&cluster, &namespace, &record_name, followed);
        let down: Vec<&AddressHealth> = addresses.iter().filter(|a| a.state == "Down").collect();
        let drain = crate::records::health::drain_share(Some(member), jiff::Timestamp::now());
        let reason = if let (true, Some((tenths, _))) = (member.spec.cordoned && in_answer, drain) {
            format!(
                "cordoned, draining over {} s (spec.drainSeconds): Weighted names give it {} % of its weight \
                 now; other policies keep it until the drain ends",
                member.spec.drain_seconds,
                tenths * 10
            )
        } else if member.spec.cordoned {
            "cordoned (spec.cordoned): drained on purpose".to_owned()
        } else if in_answer && serving_fallback {
            "served as spec.fallbackTarget: no cluster counts healthy".to_owned()
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
        } else if let Some(why) = below_minimum(min_healthy, &addresses, member_facts.as_ref()) {
            why
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
                Some(f) if !f.exists => format!("no {} {namespace}/{record_name} in this cluster", followed.as_str()),
                Some(MemberFacts {
                    route_problem: Some(problem),
                    ..
                }) => problem.clone(),
                Some(f) if !f.has_load_balancer => "its load balancer has no address".to_owned(),
                Some(f) if f.ready_endpoints == Some(false) => "no ready endpoint in its EndpointSlices".to_owned(),
                Some(MemberFacts {
                    backends_problem: Some(problem),
                    ..
                }) => problem.clone(),
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
