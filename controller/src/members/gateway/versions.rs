//! Which gateway-api versions and kinds a member serves: the versions
//! fedns asks for, most preferred first ([`versions`]), the APIs to list
//! them at, and each kind's [`Served`] state; a kind not served is asked
//! for again every [`NOT_SERVED_RETRY`].

use std::time::Duration;

use fedns_api::RouteKind;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;

use super::facts::GATEWAY_GROUP;

/// How often a kind the member does not serve (404) is listed again.
pub const NOT_SERVED_RETRY: Duration = Duration::from_secs(10);

/// Whether a member serves a Gateway API kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Not listed yet.
    Unknown,
    /// Listed: the caches hold the member's objects.
    Yes,
    /// The member answered 404: no such kind (no CRD installed).
    No,
    /// The member answered 403: fedns's identity may not list the kind
    /// (its RBAC lacks `gateway.networking.k8s.io`). Counts as listed, so
    /// nothing waits for it.
    Forbidden,
}

impl Served {
    pub(super) fn from_u8(v: u8) -> Self {
        match v {
            1 => Served::Yes,
            2 => Served::No,
            3 => Served::Forbidden,
            _ => Served::Unknown,
        }
    }
}

pub(super) fn kind_index(kind: RouteKind) -> usize {
    RouteKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

/// The versions of a kind fedns reads, most preferred first: `v1`, then
/// what earlier gateway-api releases served (checked against the CRDs of
/// v1.0.0 to v1.6.1): Gateway and HTTPRoute `v1beta1` (before v1.0),
/// GRPCRoute `v1alpha2` (v1.0 experimental), TLSRoute `v1alpha3` (v1.3–v1.4
/// experimental) and `v1alpha2`, TCPRoute and UDPRoute `v1alpha2`
/// (experimental until v1.6). Every field fedns reads has the same name
/// and meaning in each.
pub(super) fn versions(kind: &str) -> &'static [&'static str] {
    match kind {
        "Gateway" | "HTTPRoute" => &["v1", "v1beta1"],
        // Before v1.6 only the experimental XListenerSet
        // (gateway.networking.x-k8s.io), not read.
        "ListenerSet" => &["v1"],
        "GatewayClass" => &["v1", "v1beta1"],
        "GRPCRoute" | "TCPRoute" | "UDPRoute" => &["v1", "v1alpha2"],
        "TLSRoute" => &["v1", "v1alpha3", "v1alpha2"],
        _ => &["v1"],
    }
}

pub(super) fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// `kind`'s API in each version of [`versions`].
pub(super) fn apis_of(client: &kube::Client, kind: &str, plural: &str) -> Vec<Api<DynamicObject>> {
    versions(kind)
        .iter()
        .map(|v| Api::all_with(client.clone(), &resource(GATEWAY_GROUP, v, kind, plural)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::gateway::facts::LISTENER_SET;

    #[test]
    fn older_gateway_api_versions_are_asked_for_after_v1() {
        assert_eq!(versions("TCPRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("UDPRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("TLSRoute"), ["v1", "v1alpha3", "v1alpha2"]);
        assert_eq!(versions("GRPCRoute"), ["v1", "v1alpha2"]);
        assert_eq!(versions("HTTPRoute"), ["v1", "v1beta1"]);
        assert_eq!(versions(LISTENER_SET), ["v1"]);
    }
}
