//! `/debug/explain`: why each cluster is or is not behind a name, from
//! the record reconcilers' context (the command's view plus the member
//! caches).

use std::sync::Arc;

use fedns_api::DNSEndpoint;
use kube::runtime::reflector;
use kube::ResourceExt;

use crate::http::HttpState;
use crate::records::{self, RecordContext};

/// Answers `/debug/explain` from `ctx`.
pub(super) fn serve_explain(state: &HttpState, ctx: &Arc<RecordContext>) {
    // /debug/explain: the command's view plus the member caches.
    let ctx = ctx.clone();
    let _ = state.explain.set(Arc::new(move |name: &str, json: bool| {
        fn owned<T: Clone>(items: Vec<Arc<T>>) -> Vec<T> {
            items.into_iter().map(|i| (*i).clone()).collect()
        }
        // Only the DNSEndpoints naming `name` and the records owning
        // them (a copy of every object was hundreds of MiB at
        // 1,000,000 shards), with their `status.dns` put back.
        let wanted = name.trim_end_matches('.');
        let endpoints: Vec<DNSEndpoint> = ctx
            .endpoints
            .state()
            .into_iter()
            .filter(|e| {
                e.spec
                    .endpoints
                    .iter()
                    .any(|ep| ep.dns_name.trim_end_matches('.').eq_ignore_ascii_case(wanted))
            })
            .map(|e| (*e).clone())
            .collect();
        let mut services = Vec::new();
        let mut ingresses = Vec::new();
        let mut routes = Vec::new();
        for endpoint in &endpoints {
            let namespace = endpoint.namespace().unwrap_or_default();
            for owner in endpoint.owner_references() {
                match owner.kind.as_str() {
                    "ServiceDNSRecord" => services.extend(
                        ctx.services
                            .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                            .map(|r| {
                                let mut r = (*r).clone();
                                ctx.published.restore(&mut r);
                                r
                            }),
                    ),
                    "IngressDNSRecord" => ingresses.extend(
                        ctx.ingresses
                            .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                            .map(|r| {
                                let mut r = (*r).clone();
                                ctx.published.restore(&mut r);
                                r
                            }),
                    ),
                    "RouteDNSRecord" => routes.extend(
                        ctx.routes
                            .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                            .map(|r| {
                                let mut r = (*r).clone();
                                ctx.published.restore(&mut r);
                                r
                            }),
                    ),
                    _ => {}
                }
            }
        }
        let mut members = owned(ctx.clusters.state());
        members.extend(ctx.registry.engine_members());
        let registry = ctx.registry.clone();
        let policies: Vec<_> = ingresses
            .iter()
            .map(|r| (r.namespace().unwrap_or_default(), r.name_any(), r.spec.backends))
            .collect();
        let backends_of = move |namespace: &str, name: &str| {
            policies
                .iter()
                .find(|(ns, n, _)| ns == namespace && n == name)
                .and_then(|(_, _, policy)| *policy)
        };
        let route_specs: Vec<_> = routes
            .iter()
            .map(|r| (r.namespace().unwrap_or_default(), r.name_any(), r.spec.clone()))
            .collect();
        let facts = move |cluster: &str, namespace: &str, name: &str, followed: records::explain::Followed| {
            let member = registry.members().into_iter().find(|m| m.name == cluster)?;
            if let records::explain::Followed::Route(kind) = followed {
                let spec = route_specs
                    .iter()
                    .find(|(ns, n, _)| ns == namespace && n == name)
                    .map(|(_, _, spec)| spec)?;
                let exists = member.gateway_api.routes(kind).get(namespace, name).is_some();
                return Some(records::explain::MemberFacts {
                    exists,
                    has_load_balancer: true,
                    ready_endpoints: None,
                    backends_problem: None,
                    endpoints: None,
                    route_problem: records::route_problem(&member, spec, namespace, name),
                });
            }
            Some(if followed == records::explain::Followed::Service {
                let found = member.services.get(namespace, name);
                records::explain::MemberFacts {
                    exists: found.is_some(),
                    has_load_balancer: found.is_some_and(|s| s.load_balancer.has_ingress()),
                    ready_endpoints: Some(member.has_ready_endpoints(namespace, name)),
                    backends_problem: None,
                    endpoints: Some(member.endpoint_counts(namespace, name)),
                    route_problem: None,
                }
            } else {
                let found = member.ingresses.get(namespace, name);
                let policy = backends_of(namespace, name);
                records::explain::MemberFacts {
                    exists: found.is_some(),
                    has_load_balancer: found.as_ref().is_some_and(|i| i.load_balancer.has_ingress()),
                    ready_endpoints: None,
                    backends_problem: found.as_ref().zip(policy).and_then(|(ingress, policy)| {
                        records::backends::BackendFacts::of(&member, namespace, ingress)
                            .verdict(policy, namespace)
                            .err()
                    }),
                    endpoints: found
                        .as_ref()
                        .map(|ingress| records::backends::controller_endpoints(&member, ingress)),
                    route_problem: None,
                }
            })
        };
        let explanation = records::explain::explain(name, &endpoints, &services, &ingresses, &routes, &members, &facts);
        if json {
            serde_json::to_string_pretty(&explanation).unwrap_or_default()
        } else {
            records::explain::render(&explanation)
        }
    }));
}
