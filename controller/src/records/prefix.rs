//! Whether a ServiceDNSRecord's `dnsPrefix` names another namespace's
//! service name, in the public zone or in the members' discovery zones
//! (the rule of `fedns_providers::plan::ownership`: `S.N.F.svc…` belongs
//! to namespace `N`). Checked on the host for the record's `InputValid`
//! condition; the discovery zones apply the same rule
//! (`crate::discovery::ownership`).

use fedns_api::Domain;
use fedns_providers::plan::ownership::ZoneAdmission;
use kube::ResourceExt;

/// A stand-in apex for the member's cluster domain, where none is known
/// (the host side): which namespace a discovery name belongs to does not
/// depend on it.
const ANY_CLUSTER_DOMAIN: &str = "cluster.local";

/// Why a ServiceDNSRecord's `dnsPrefix` may not be published: in the
/// public zone (`<dnsPrefix>.<zone>`) and in the members' discovery zones
/// (`<dnsPrefix>.F.svc.<cluster-domain>`), each None when allowed there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixRefusal {
    /// The public alias names a service name of another namespace.
    pub public: Option<String>,
    /// The discovery alias names a service name of another namespace.
    pub discovery: Option<String>,
}

impl PrefixRefusal {
    /// Both messages, for a condition and an Event.
    pub fn messages(&self) -> Vec<String> {
        self.public.iter().chain(self.discovery.iter()).cloned().collect()
    }
}

/// Checks `prefix` (`spec.dnsPrefix` of a ServiceDNSRecord in `namespace`
/// under `domain`) against the service-name rule in both zones it names:
/// a name `S.N.F.svc…` belongs to namespace `N` alone. Host side: the
/// member's cluster domain is not known, and does not matter.
pub fn prefix_refusal(prefix: &str, namespace: &str, domain: &Domain) -> PrefixRefusal {
    let prefix = prefix.trim_end_matches('.').to_ascii_lowercase();
    let admission = ZoneAdmission::of(domain);
    let federation = domain.name_any().to_ascii_lowercase();
    let zone = domain.spec.domain.trim_end_matches('.').to_ascii_lowercase();
    let refused = |name: &str, apex: &str, shown: &str, where_: &str| {
        let owning = admission.service_namespace(name, apex)?;
        (owning != namespace).then(|| {
            format!(
                "dnsPrefix {prefix} names {shown}, a service name of namespace {owning}, which only namespace {owning} \
                 can publish; not published {where_}"
            )
        })
    };
    let public_name = format!("{prefix}.{zone}");
    let discovery_name = format!("{prefix}.{federation}.svc.{ANY_CLUSTER_DOMAIN}");
    PrefixRefusal {
        public: refused(&public_name, &zone, &public_name, "in the public zone"),
        discovery: refused(
            &discovery_name,
            ANY_CLUSTER_DOMAIN,
            &format!("{prefix}.{federation}.svc.<cluster-domain>"),
            "in the members' discovery zones",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(allowed: Option<fedns_api::AllowedNamespaces>) -> Domain {
        let mut domain: Domain = serde_json::from_value(serde_json::json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
            "metadata": {"name": "myfed", "namespace": "fedns-system"},
            "spec": {"domain": "example.com"},
        }))
        .unwrap();
        domain.spec.allowed_namespaces = allowed;
        domain
    }

    #[test]
    fn a_prefix_naming_another_namespaces_service_is_refused_in_the_zone_it_lands_in() {
        let d = domain(None);
        // The discovery form: nginx.ns.myfed.svc.<cluster-domain>.
        let got = prefix_refusal("nginx.ns", "tenant-a", &d);
        assert_eq!(got.public, None, "nginx.ns.example.com is no service name");
        let message = got.discovery.unwrap();
        assert!(message.contains("namespace ns"), "{message}");
        assert!(message.contains("nginx.ns.myfed.svc.<cluster-domain>"), "{message}");
        // The public forms: S.N.F.svc[.R[.Z]].<zone>.
        for prefix in ["nginx.ns.myfed.svc", "NGINX.ns.MyFed.svc.us-east-1"] {
            let got = prefix_refusal(prefix, "tenant-a", &d);
            assert!(got.public.unwrap().contains("namespace ns"), "{prefix}");
        }
        // The record's own namespace, or one label: fine in both zones.
        for (prefix, namespace) in [("nginx.ns", "ns"), ("www", "tenant-a")] {
            assert_eq!(
                prefix_refusal(prefix, namespace, &d),
                PrefixRefusal::default(),
                "{prefix}"
            );
        }
        // Another federation's service name is no name of this zone's.
        assert_eq!(prefix_refusal("nginx.ns.other.svc", "tenant-a", &d).public, None);
    }
}
