//! Whether a cluster's Ingress counts for its record by what it routes to
//! (`spec.backends` of an IngressDNSRecord): its backend Services' ready
//! endpoints and its ingress controller's. An ingress controller scaled to
//! zero keeps its load balancer address (k8gb issue 1754), and an Ingress
//! with one of several backends up answers only part of its paths (k8gb
//! issue 2326); neither shows in the address or a probe of `/`.

use fedns_api::BackendHealth;

use crate::members::cache::IngressFacts;
use crate::members::Member;

/// What a member says of one Ingress's backends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendFacts {
    /// Each backend Service (in the Ingress's namespace) and whether its
    /// EndpointSlices hold a ready endpoint.
    pub services: Vec<(String, bool)>,
    /// The LoadBalancer Services showing the Ingress's address
    /// (`namespace/name`), each with its readiness: its controller's.
    pub controllers: Vec<(String, bool)>,
}

impl BackendFacts {
    /// The facts of Ingress `ingress` in `namespace` as `member` caches them.
    pub fn of(member: &Member, namespace: &str, ingress: &IngressFacts) -> BackendFacts {
        BackendFacts {
            services: ingress
                .backends
                .iter()
                .map(|name| (name.to_string(), member.has_ready_endpoints(namespace, name)))
                .collect(),
            controllers: member
                .services
                .controllers_of(&ingress.load_balancer)
                .into_iter()
                .map(|(ns, name)| {
                    let ready = member.has_ready_endpoints(&ns, &name);
                    (format!("{ns}/{name}"), ready)
                })
                .collect(),
        }
    }

    /// Ok when the Ingress counts under `policy`; else one line saying
    /// why not. No backend Service (resource backends only) and no
    /// controller Service found (its Service is elsewhere, or the address
    /// comes from outside the cluster) are not held against it.
    pub fn verdict(&self, policy: BackendHealth, namespace: &str) -> Result<(), String> {
        if !self.controllers.is_empty() && !self.controllers.iter().any(|(_, ready)| *ready) {
            let names: Vec<&str> = self.controllers.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "its ingress controller has no ready endpoint (Service {} shows the Ingress's address)",
                names.join(", ")
            ));
        }
        let unready: Vec<String> = self
            .services
            .iter()
            .filter(|(_, ready)| !ready)
            .map(|(name, _)| format!("{namespace}/{name}"))
            .collect();
        match policy {
            BackendHealth::All if !unready.is_empty() => Err(format!(
                "backends: All, and backend Service {} has no ready endpoint",
                unready.join(", ")
            )),
            BackendHealth::Any if !self.services.is_empty() && unready.len() == self.services.len() => Err(format!(
                "backends: Any, and no backend Service has a ready endpoint ({})",
                unready.join(", ")
            )),
            _ => Ok(()),
        }
    }
}

/// The endpoints (ready, all) of the ingress controller of `ingress`
/// (every LoadBalancer Service showing its address, summed); (0, 0) when
/// none is found.
pub fn controller_endpoints(member: &Member, ingress: &IngressFacts) -> (u32, u32) {
    member
        .services
        .controllers_of(&ingress.load_balancer)
        .iter()
        .map(|(ns, name)| member.endpoint_counts(ns, name))
        .fold((0, 0), |(r, a), (ready, all)| (r + ready, a + all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(services: &[(&str, bool)], controllers: &[(&str, bool)]) -> BackendFacts {
        let own = |list: &[(&str, bool)]| list.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect();
        BackendFacts {
            services: own(services),
            controllers: own(controllers),
        }
    }

    #[test]
    fn all_needs_every_backend_and_any_one_and_both_the_controller() {
        let two_up = facts(&[("api", true), ("web", true)], &[("ingress-nginx/controller", true)]);
        let one_up = facts(&[("api", false), ("web", true)], &[("ingress-nginx/controller", true)]);
        let none_up = facts(&[("api", false), ("web", false)], &[]);
        let controller_down = facts(&[("api", true)], &[("ingress-nginx/controller", false)]);
        assert_eq!(two_up.verdict(BackendHealth::All, "ns"), Ok(()));
        let all = one_up.verdict(BackendHealth::All, "ns").unwrap_err();
        assert!(all.contains("backend Service ns/api has no ready endpoint"), "{all}");
        assert_eq!(one_up.verdict(BackendHealth::Any, "ns"), Ok(()));
        let any = none_up.verdict(BackendHealth::Any, "ns").unwrap_err();
        assert!(
            any.contains("no backend Service has a ready endpoint (ns/api, ns/web)"),
            "{any}"
        );
        for policy in [BackendHealth::All, BackendHealth::Any] {
            let err = controller_down.verdict(policy, "ns").unwrap_err();
            assert!(err.contains("ingress controller has no ready endpoint"), "{err}");
            // Nothing to judge: not held against it.
            assert_eq!(facts(&[], &[]).verdict(policy, "ns"), Ok(()));
        }
        // Two Services show the address: one ready is enough.
        let two_controllers = facts(&[], &[("a/lb", false), ("b/lb", true)]);
        assert_eq!(two_controllers.verdict(BackendHealth::All, "ns"), Ok(()));
    }
}
