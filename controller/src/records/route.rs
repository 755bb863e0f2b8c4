//! The RouteDNSRecord reconciler: in each healthy member, the hostnames
//! the Gateway API route of the record's name serves ([`super::gateway`])
//! with its Gateways' addresses into `status.dns`, then the DNSEndpoint
//! `route-<name>` publishing each hostname with the addresses of every
//! cluster serving it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use fedns_api::gateway::is_wildcard;
use fedns_api::{conditions, BackendHealth, RouteClusterDNS, RouteDNSRecord, RouteKind};
use k8s_openapi::api::core::v1::LoadBalancerStatus;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;

use super::builder;
use super::context::{owner_of, Pass, RecordContext};
use super::gateway::attach;
use super::health;
use super::model::BuildProblem;
use super::status::{patch_status, set_health_conditions, set_record_conditions, set_too_large};
use crate::members::gateway::Served;
use crate::members::Member;
use crate::queue::RecordKey;

/// Condition of a RouteDNSRecord: whether some member serves the route
/// (`True`), with, for every member that does not, why (the route is not
/// accepted, its listener is not programmed, the member has no Gateway
/// API kinds, ...).
pub const ATTACHED: &str = "Attached";

/// The label put before a wildcard's suffix to make the probe's Host
/// header and SNI when a route serves only wildcard names
/// (`*.example.com` → `fedns-probe.example.com`, a name it serves).
pub const PROBE_LABEL: &str = "fedns-probe";

/// The route's state in one member, for the `Attached` condition.
fn member_reason(member: &Member, kind: RouteKind, namespace: &str, name: &str) -> Option<String> {
    let api = &member.gateway_api;
    match (api.routes_served(kind), api.gateways_served()) {
        (Served::No, _) => Some(format!(
            "the member serves no {} (no gateway.networking.k8s.io CRD for it)",
            kind.as_str()
        )),
        (_, Served::No) => Some("the member serves no Gateway (no gateway.networking.k8s.io CRD for it)".into()),
        (Served::Forbidden, _) => Some(format!(
            "fedns may not list {}s there (403: the member's RBAC lacks gateway.networking.k8s.io)",
            kind.as_str()
        )),
        (_, Served::Forbidden) => {
            Some("fedns may not list Gateways there (403: the member's RBAC lacks gateway.networking.k8s.io)".into())
        }
        (Served::Unknown, _) | (_, Served::Unknown) => Some("Gateway API objects not listed yet".into()),
        (Served::Yes, Served::Yes) => api
            .routes(kind)
            .get(namespace, name)
            .is_none()
            .then(|| format!("no {} {namespace}/{name}", kind.as_str())),
    }
}

/// Whether `route`'s backend Services have ready endpoints in `member`
/// under `policy` (a route with no Service backend counts).
fn backends_ready(member: &Member, route: &crate::members::gateway::RouteFacts, policy: BackendHealth) -> bool {
    if route.backends.is_empty() {
        return true;
    }
    let mut ready = route
        .backends
        .iter()
        .map(|(ns, svc)| member.has_ready_endpoints(ns, svc));
    match policy {
        BackendHealth::All => ready.all(|r| r),
        BackendHealth::Any => ready.any(|r| r),
    }
}

/// Marks a hostname served through an Ingress (`spec.ingressFallback`)
/// in `status.dns[].hostnames[].listeners`.
const INGRESS_LISTENER: &str = "Ingress";

/// A member's shard from its Ingress `namespace/name`: every host of
/// `hosts` with every address of the Ingress's load balancer.
fn ingress_shard(member: &Member, namespace: &str, name: &str, hosts: &[String]) -> Option<RouteClusterDNS> {
    let lb = member.ingresses.get(namespace, name)?.load_balancer.to_status();
    if !super::context::has_lb_address(&lb) {
        return None;
    }
    let addresses: Vec<String> = lb
        .ingress
        .iter()
        .flatten()
        .filter_map(|p| p.ip.clone().or_else(|| p.hostname.clone()))
        .collect();
    let mut hostnames: Vec<fedns_api::RouteHostname> = hosts
        .iter()
        .map(|h| fedns_api::RouteHostname {
            hostname: h.trim_end_matches('.').to_ascii_lowercase(),
            addresses: addresses.clone(),
            listeners: vec![format!("{INGRESS_LISTENER} {namespace}/{name}")],
        })
        .collect();
    hostnames.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    hostnames.dedup_by(|a, b| a.hostname == b.hostname);
    Some(RouteClusterDNS {
        cluster: member.name.clone(),
        load_balancer: lb,
        hostnames,
    })
}

/// Why the route of record `namespace/name` (`spec`) serves nothing in
/// `member`, or `None` when it serves (what `fedns explain` says of the
/// member; the Ingress fallback is not considered).
pub fn route_problem(
    member: &Member,
    spec: &fedns_api::RouteDNSRecordSpec,
    namespace: &str,
    name: &str,
) -> Option<String> {
    let kind = spec.route_kind;
    if let Some(why) = member_reason(member, kind, namespace, name) {
        return Some(why);
    }
    let route = member.gateway_api.routes(kind).get(namespace, name)?;
    if let Err(why) = attach::served(kind, namespace, &route, &spec.hosts, |kind, ns, name| {
        member.gateway_api.parent(kind, ns, name)
    }) {
        return Some(why);
    }
    let policy = spec.backends.unwrap_or(BackendHealth::Any);
    (!backends_ready(member, &route, policy))
        .then(|| format!("its backend Services have no ready endpoints (spec.backends: {policy:?})"))
}

pub(super) async fn reconcile_route(
    ctx: &RecordContext,
    namespace: &str,
    name: &str,
    since: Instant,
    pass: Pass,
) -> Result<(), kube::Error> {
    let record_key = RecordKey::Route(namespace.into(), name.into());
    let key = record_key.id();
    let endpoint_name = format!("route-{name}");
    let Some(record) = ctx.routes.get(&ObjectRef::new(name).within(namespace)) else {
        if pass == Pass::Preview {
            return Ok(());
        }
        return ctx.record_gone(&record_key, namespace, &endpoint_name).await;
    };
    if record.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    // Only a DNSEndpoint the record owns already is previewed.
    if pass == Pass::Preview && !ctx.owns_endpoint(namespace, &endpoint_name, record.metadata.uid.as_deref()) {
        return Ok(());
    }
    let kind = record.spec.route_kind;
    let generation = record.metadata.generation;
    let mut old_status = record.status.clone().unwrap_or_default();
    old_status.dns = ctx.published.get(&key);
    let mut status = old_status.clone();
    let mut problems = Vec::new();
    // Probes carry a hostname of the route as Host header and SNI: the
    // record's first host, else the first precise one it published, else
    // the first precise hostname the route names in any member, else a
    // name under its first wildcard.
    let members = ctx.registry.members();
    let route_names = || {
        members
            .iter()
            .filter_map(|m| m.gateway_api.routes(kind).get(namespace, name))
            .flat_map(|r| r.hostnames.to_vec())
            .map(|h| h.to_string())
            .collect::<Vec<String>>()
    };
    let published: Vec<String> = old_status
        .dns
        .iter()
        .flat_map(|s| s.hostnames.iter())
        .map(|h| h.hostname.clone())
        .collect();
    let first_host = record
        .spec
        .hosts
        .first()
        .cloned()
        .or_else(|| published.iter().find(|h| !is_wildcard(h)).cloned())
        .or_else(|| route_names().into_iter().find(|h| !is_wildcard(h)))
        .or_else(|| published.first().cloned())
        .or_else(|| route_names().into_iter().next())
        .map(|h| match h.strip_prefix("*.") {
            Some(suffix) => format!("{PROBE_LABEL}.{suffix}"),
            None => h,
        })
        .unwrap_or_default();
    let first_path = members
        .iter()
        .find_map(|m| m.gateway_api.routes(kind).get(namespace, name)?.first_path)
        .map(|p| p.to_string());
    // The probe port defaults to the port of a listener serving the route.
    let listener_port = members.iter().find_map(|m| {
        let route = m.gateway_api.routes(kind).get(namespace, name)?;
        attach::served(kind, namespace, &route, &record.spec.hosts, |kind, ns, name| {
            m.gateway_api.parent(kind, ns, name)
        })
        .ok()?
        .first_port
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
    });
    let check = match &record.spec.health_check {
        None => None,
        Some(spec) => health::ca_bundle(&ctx.host, namespace, spec)
            .await
            .and_then(|ca| {
                let port = listener_port.unwrap_or_else(|| health::ingress_default_port(spec));
                health::check_of(spec, port, &first_host, ca)
            })
            .map(|mut check| {
                // `path` defaults to "/": the route's own first path then.
                if spec.path == "/" {
                    if let Some(path) = &first_path {
                        check.spec.path = path.clone();
                    }
                }
                check
            })
            .map_err(|message| problems.push(BuildProblem { cluster: None, message }))
            .ok(),
    };
    let ttl = record.spec.record_ttl;
    let policy = record.spec.backends.unwrap_or(BackendHealth::Any);
    // Why each member serves nothing, for the `Attached` condition.
    let unserved: RefCell<BTreeMap<String, String>> = RefCell::default();
    let notes: RefCell<BTreeSet<String>> = RefCell::default();
    // Members served through their Ingress (`spec.ingressFallback`), and why.
    let via_ingress: RefCell<BTreeMap<String, String>> = RefCell::default();
    let selection = health::select(
        ctx,
        &record_key,
        &health::HealthRules {
            check: check.as_ref(),
            min_addresses: record.spec.min_healthy.and_then(|m| m.addresses),
            fallback: record.spec.fallback_target.as_ref(),
            when_all_unhealthy: record.spec.when_all_unhealthy,
        },
        &old_status.dns,
        |shards| ctx.resolve_lb_hostnames(&key, shards.iter().map(|s| &s.load_balancer), ttl),
        |member| {
            let not_served = |why: String| {
                unserved.borrow_mut().insert(member.name.clone(), why);
                None
            };
            // The Ingress of the same name, where the route serves nothing
            // and `spec.ingressFallback` asks for it.
            let ingress = |why: String| {
                if !record.spec.ingress_fallback || record.spec.hosts.is_empty() {
                    return not_served(why);
                }
                match ingress_shard(member, namespace, name, &record.spec.hosts) {
                    Some(shard) => {
                        via_ingress.borrow_mut().insert(member.name.clone(), why);
                        Some(shard)
                    }
                    None => not_served(format!("{why}; no Ingress {namespace}/{name} with an address either")),
                }
            };
            if let Some(why) = member_reason(member, kind, namespace, name) {
                return ingress(why);
            }
            let Some(route) = member.gateway_api.routes(kind).get(namespace, name) else {
                return ingress(format!("no {} {namespace}/{name}", kind.as_str()));
            };
            let served = match attach::served(kind, namespace, &route, &record.spec.hosts, |kind, ns, name| {
                member.gateway_api.parent(kind, ns, name)
            }) {
                Ok(served) => served,
                Err(why) => return ingress(why),
            };
            notes
                .borrow_mut()
                .extend(served.notes.iter().map(|n| format!("{}: {n}", member.name)));
            if !backends_ready(member, &route, policy) {
                return not_served(format!(
                    "its backend Services have no ready endpoints (spec.backends: {policy:?})"
                ));
            }
            Some(RouteClusterDNS {
                cluster: member.name.clone(),
                load_balancer: served.load_balancer,
                hostnames: served.hostnames,
            })
        },
    );
    let unserved = unserved.into_inner();
    let via_ingress = via_ingress.into_inner();
    if record.spec.ingress_fallback && record.spec.hosts.is_empty() {
        problems.push(BuildProblem {
            cluster: None,
            message: "spec.ingressFallback needs spec.hosts (the names an Ingress serves); ignored".into(),
        });
    }
    problems.extend(
        notes
            .into_inner()
            .into_iter()
            .map(|message| BuildProblem { cluster: None, message }),
    );
    let shards = selection.shards;
    let resolved = selection.resolved;
    let regions = ctx.cluster_regions();
    if let (Some(after), Pass::Full) = (selection.requeue_after, pass) {
        ctx.requeue_after(record_key.clone(), after);
    }
    let drained = record.spec.routing.as_ref().map(|routing| {
        super::routing::drained(routing, &selection.draining, &|cluster| {
            regions.get(cluster).cloned().flatten()
        })
    });
    let routing = drained.as_ref();
    // A policy other than All picks answers per name asked.
    let routed = routing.is_some_and(|r| r.policy != fedns_api::routing::RoutingPolicy::All);
    // hostname → (cluster, region, that cluster's addresses for it).
    let mut by_hostname: BTreeMap<String, Vec<(String, Option<String>, LoadBalancerStatus)>> = BTreeMap::new();
    for shard in &shards {
        let region = regions.get(&shard.cluster).cloned().flatten();
        for hostname in &shard.hostnames {
            if routed && is_wildcard(&hostname.hostname) {
                // A policy picks answers per name asked; a wildcard's are
                // synthesized for names that do not exist (RFC 4592), which
                // the policies do not reach in every sink.
                let message = format!(
                    "{} is a wildcard: not published with spec.routing.policy {}; name the hosts under it in spec.hosts",
                    hostname.hostname,
                    routing.map_or("", |r| r.policy.as_str())
                );
                if !problems.iter().any(|p| p.message == message) {
                    problems.push(BuildProblem { cluster: None, message });
                }
                continue;
            }
            // Health may have dropped addresses from the shard's load
            // balancer: keep those of this hostname's Gateways still there.
            let points = shard
                .load_balancer
                .ingress
                .iter()
                .flatten()
                .filter(|p| {
                    let value = p.ip.as_deref().or(p.hostname.as_deref()).unwrap_or_default();
                    hostname.addresses.iter().any(|a| a == value)
                })
                .cloned()
                .collect::<Vec<_>>();
            if points.is_empty() {
                continue;
            }
            by_hostname.entry(hostname.hostname.clone()).or_default().push((
                shard.cluster.clone(),
                region.clone(),
                LoadBalancerStatus { ingress: Some(points) },
            ));
        }
    }
    // Names known but served by no cluster now: the fallback answers them.
    let mut known: BTreeSet<String> = record.spec.hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
    known.extend(
        old_status
            .dns
            .iter()
            .flat_map(|s| s.hostnames.iter().map(|h| h.hostname.clone())),
    );
    known.extend(by_hostname.keys().cloned());
    if routed {
        known.retain(|h| !is_wildcard(h));
    }
    let hostnames: Vec<String> = known.iter().cloned().collect();
    let domains = ctx.domains_of(&hostnames);
    let domain_refs: Vec<&fedns_api::Domain> = domains.iter().map(|d| d.as_ref()).collect();
    problems.extend(ctx.routing_problems(routing, &domain_refs));
    let mut endpoints = Vec::new();
    for hostname in &known {
        let pairs = by_hostname.get(hostname).map(Vec::as_slice).unwrap_or_default();
        if pairs.is_empty() && selection.fallback_cname.is_none() {
            continue;
        }
        endpoints.extend(builder::ingress_endpoints(
            std::slice::from_ref(hostname),
            pairs,
            ttl,
            routing,
            selection.fallback_cname.as_deref(),
            &resolved,
            &mut problems,
        ));
    }
    let geo_regions: Vec<&fedns_api::routing::GeoRegion> =
        domain_refs.iter().flat_map(|d| d.spec.geo_regions.iter()).collect();
    super::routing::add_geolocation(&mut endpoints, &geo_regions);
    if pass == Pass::Preview {
        ctx.preview_endpoint(namespace, &endpoint_name, &owner_of(record.as_ref()), &endpoints);
        return Ok(());
    }
    let written = ctx
        .write_endpoint(namespace, &endpoint_name, owner_of(record.as_ref()), endpoints, since)
        .await?;
    let too_large = written.too_large_message();
    let mut changed = set_record_conditions(
        &mut status.conditions,
        shards.len(),
        "no healthy member cluster serves the route through a Gateway with an address",
        &problems,
        too_large.as_deref(),
        generation,
    );
    changed |= set_health_conditions(
        &mut status.conditions,
        check.is_some(),
        selection.all_unhealthy,
        selection.fallback.as_deref(),
        shards.len(),
        &selection.last_known,
        generation,
    );
    let why: Vec<String> = unserved.iter().map(|(m, why)| format!("{m}: {why}")).collect();
    let ingress_served: Vec<String> = via_ingress
        .iter()
        .filter(|(m, _)| shards.iter().any(|s| &s.cluster == *m))
        .map(|(m, why)| format!("{m} through its Ingress ({why})"))
        .collect();
    let mut attached_message = if shards.is_empty() && why.is_empty() {
        "no member cluster serves the route".to_owned()
    } else if why.is_empty() {
        format!("served in {} member cluster(s)", shards.len())
    } else {
        format!(
            "served in {} member cluster(s); not in {}",
            shards.len(),
            why.join("; ")
        )
    };
    if !ingress_served.is_empty() {
        attached_message.push_str(&format!("; {}", ingress_served.join("; ")));
    }
    changed |= conditions::set(
        &mut status.conditions,
        ATTACHED,
        !shards.is_empty(),
        if shards.is_empty() { "NotServed" } else { "Served" },
        &attached_message.chars().take(2000).collect::<String>(),
        generation,
    );
    if let Some(message) = &too_large {
        changed |= set_too_large(&mut status.conditions, message, generation);
    }
    changed |= status.dns != shards || status.probes != selection.probes || status.observed_generation != generation;
    let served = shards.len();
    status.dns = shards;
    status.probes = selection.probes;
    status.observed_generation = generation;
    let object = record.object_ref(&());
    ctx.fail_open(&key, &object, selection.all_unhealthy, served).await;
    ctx.report(&key, &object, &problems).await;
    ctx.note_size(&key, &object, &written).await;
    if changed && ctx.is_leader() {
        patch_status::<RouteDNSRecord>(
            &ctx.host,
            namespace,
            name,
            serde_json::to_value(&status).unwrap_or_default(),
        )
        .await?;
        super::health::shards_written(ctx, &key, &status.dns);
    }
    Ok(())
}
