//! The member's own Services as the discovery answer reads them: each
//! Service's ClusterIPs (or, headless, its ready endpoint addresses) and
//! whether it has a ready endpoint, from Services and EndpointSlices
//! (`discovery.k8s.io/v1`, linked by the `kubernetes.io/service-name`
//! label), with the same readiness rule as fedns's health.

use std::collections::BTreeMap;
use std::net::IpAddr;

use fedns_api::k8s_openapi::api::core::v1::Service;
use fedns_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;

use super::answer::LocalService;

/// The member's Services and their readiness, by (namespace, name).
/// Addresses that do not parse are left out; an EndpointSlice of no
/// listed Service is ignored.
pub fn local_services<'a>(
    services: impl IntoIterator<Item = &'a Service>,
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) -> BTreeMap<(String, String), LocalService> {
    let mut out: BTreeMap<(String, String), LocalService> = BTreeMap::new();
    for service in services {
        let spec = service.spec.clone().unwrap_or_default();
        let mut ips: Vec<String> = spec.cluster_ips.unwrap_or_default();
        if ips.is_empty() {
            ips.extend(spec.cluster_ip);
        }
        let headless = ips.iter().any(|ip| ip == "None");
        out.insert(
            (service.namespace().unwrap_or_default(), service.name_any()),
            LocalService {
                cluster_ips: ips.iter().filter_map(|ip| ip.parse::<IpAddr>().ok()).collect(),
                headless,
                ..Default::default()
            },
        );
    }
    for slice in slices {
        let Some(service) = slice.labels().get("kubernetes.io/service-name") else {
            continue;
        };
        let Some(local) = out.get_mut(&(slice.namespace().unwrap_or_default(), service.clone())) else {
            continue;
        };
        for endpoint in slice.endpoints.iter().filter(|e| crate::members::endpoint_is_ready(e)) {
            local.ready = true;
            local.ready_endpoints += 1;
            if local.headless {
                local
                    .ready_addresses
                    .extend(endpoint.addresses.iter().filter_map(|a| a.parse::<IpAddr>().ok()));
            }
        }
    }
    out
}
