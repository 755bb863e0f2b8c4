//! `ServiceDNSRecord` and `IngressDNSRecord` (`multiclusterdns.fedns.io/v1alpha1`):
//! "publish this Service / Ingress of every member cluster under one name".
//! Their name and namespace equal the Service's or Ingress's in the members
//! (kubefed's shape).

use k8s_openapi::api::core::v1::LoadBalancerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::health::{AddressHealth, DataPlaneCheck, FallbackTarget, MinHealthy, WhenAllUnhealthy};
use crate::names::{HOSTNAME_PATTERN, LABEL_PATTERN, MAX_LABEL_OCTETS, MAX_NAME_OCTETS};
use crate::routing::Routing;

/// Kubernetes object names (RFC 1123 subdomain), as `domainRef` names a Domain.
const OBJECT_NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

fn default_record_ttl() -> i64 {
    crate::DEFAULT_RECORD_TTL
}

/// Publish the Service of the same name and namespace from every member.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "multiclusterdns.fedns.io",
    version = "v1alpha1",
    kind = "ServiceDNSRecord",
    namespaced,
    status = "ServiceDNSRecordStatus",
    derive = "PartialEq",
    shortname = "sdr",
    category = "fedns",
    doc = "Publishes the LoadBalancer Service of the same name and namespace from every healthy member cluster.",
    printcolumn(name = "Domain", type_ = "string", json_path = ".spec.domainRef"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ServiceDNSRecordSpec {
    /// Name of the Domain (in the controller namespace) to publish under.
    #[schemars(length(min = 1, max = 253), pattern(OBJECT_NAME_PATTERN))]
    pub domain_ref: String,
    /// TTL of the published records, in seconds.
    #[serde(default = "default_record_ttl", rename = "recordTTL")]
    #[schemars(range(min = 1, max = 86400))]
    pub record_ttl: i64,
    /// Extra name `<dnsPrefix>.<zone>`, a CNAME to the global name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub dns_prefix: Option<String>,
    /// Replaces the Service name as the first label of every published name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_LABEL_OCTETS), pattern(LABEL_PATTERN))]
    pub external_name: Option<String>,
    /// Publish a cluster's addresses even when its EndpointSlices hold no
    /// ready endpoint.
    #[serde(default)]
    pub allow_service_without_endpoints: bool,
    /// Probe every published load balancer address (absent: health is the
    /// member's API server and the Service's ready endpoints only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<DataPlaneCheck>,
    /// How much of a cluster must be up for it to count at all
    /// (addresses passing probes, ready endpoints); absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_healthy: Option<MinHealthy>,
    /// What answers when no cluster counts healthy, before
    /// `whenAllUnhealthy` (a cluster list, or a CNAME out of the federation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_target: Option<FallbackTarget>,
    /// What to serve when health alone would remove every cluster.
    #[serde(default)]
    pub when_all_unhealthy: WhenAllUnhealthy,
    /// Traffic policy of the global name (absent: `All`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Routing>,
}

/// One healthy cluster's share of a Service record.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDNS {
    /// MemberCluster name.
    pub cluster: String,
    /// The cluster's effective region, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The cluster's effective zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// The Service's `status.loadBalancer` in that cluster.
    #[serde(default)]
    pub load_balancer: LoadBalancerStatus,
}

/// Observed state of a ServiceDNSRecord, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceDNSRecordStatus {
    /// The zone of the referenced Domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// One entry per healthy cluster that has load balancer addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<ClusterDNS>,
    /// `Ready`, with reasons such as `DomainNotFound` or `NoHealthyEndpoints`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Probe state of every published load balancer address (with
    /// `spec.healthCheck`), by cluster and address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<AddressHealth>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Publish the Ingress of the same name and namespace from every member.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "multiclusterdns.fedns.io",
    version = "v1alpha1",
    kind = "IngressDNSRecord",
    namespaced,
    status = "IngressDNSRecordStatus",
    derive = "PartialEq",
    shortname = "idr",
    category = "fedns",
    doc = "Publishes the hosts of the Ingress of the same name and namespace with the addresses of every healthy member cluster.",
    printcolumn(name = "Hosts", type_ = "string", json_path = ".spec.hosts"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct IngressDNSRecordSpec {
    /// Host names to publish, each inside a Domain's zone.
    #[schemars(length(min = 1), inner(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN)))]
    pub hosts: Vec<String>,
    /// TTL of the published records, in seconds.
    #[serde(default = "default_record_ttl", rename = "recordTTL")]
    #[schemars(range(min = 1, max = 86400))]
    pub record_ttl: i64,
    /// Probe every published load balancer address (absent: health is the
    /// member's API server only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<DataPlaneCheck>,
    /// Whether a cluster's Ingress counts only while what it routes to is
    /// ready: `All` (every backend Service has a ready endpoint) or `Any`
    /// (at least one has), and in both cases the ingress controller's own
    /// Service (the LoadBalancer Service in that cluster whose address
    /// the Ingress shows) has a ready endpoint. Absent: not checked (the
    /// load balancer's address and probes alone decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backends: Option<BackendHealth>,
    /// How much of a cluster must be up for it to count at all
    /// (addresses passing probes, ready endpoints); absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_healthy: Option<MinHealthy>,
    /// What answers when no cluster counts healthy, before
    /// `whenAllUnhealthy` (a cluster list, or a CNAME out of the federation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_target: Option<FallbackTarget>,
    /// What to serve when health alone would remove every cluster.
    #[serde(default)]
    pub when_all_unhealthy: WhenAllUnhealthy,
    /// Traffic policy of every host (absent: `All`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Routing>,
}

/// How many of an Ingress's backend Services must have a ready endpoint
/// (`spec.backends`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum BackendHealth {
    /// Every backend Service (k8gb issue 2326: one of several backends up
    /// is not enough for the name).
    All,
    /// At least one backend Service.
    Any,
}

/// One healthy cluster's share of an Ingress record.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressClusterDNS {
    /// MemberCluster name.
    pub cluster: String,
    /// The Ingress's `status.loadBalancer` in that cluster, in the shape of
    /// core/v1 LoadBalancerStatus.
    #[serde(default)]
    pub load_balancer: LoadBalancerStatus,
}

/// Observed state of an IngressDNSRecord, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressDNSRecordStatus {
    /// One entry per healthy cluster that has load balancer addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<IngressClusterDNS>,
    /// `Ready`, with reasons such as `NoHealthyEndpoints`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Probe state of every published load balancer address (with
    /// `spec.healthCheck`), by cluster and address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<AddressHealth>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The Gateway API route kinds a [`RouteDNSRecord`] follows
/// (`gateway.networking.k8s.io/v1`, standard channel since v1.6.0 for all
/// five).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub enum RouteKind {
    /// `HTTPRoute` (attaches to `HTTP` and `HTTPS` listeners).
    #[default]
    HTTPRoute,
    /// `GRPCRoute` (attaches to `HTTP` and `HTTPS` listeners).
    GRPCRoute,
    /// `TLSRoute` (attaches to `TLS` listeners).
    TLSRoute,
    /// `TCPRoute` (attaches to `TCP` listeners; no hostnames: `spec.hosts`
    /// names it).
    TCPRoute,
    /// `UDPRoute` (attaches to `UDP` listeners; no hostnames: `spec.hosts`
    /// names it).
    UDPRoute,
}

impl RouteKind {
    /// Every kind, in declaration order.
    pub const ALL: [RouteKind; 5] = [
        RouteKind::HTTPRoute,
        RouteKind::GRPCRoute,
        RouteKind::TLSRoute,
        RouteKind::TCPRoute,
        RouteKind::UDPRoute,
    ];

    /// The kind's name (`HTTPRoute`).
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::HTTPRoute => "HTTPRoute",
            RouteKind::GRPCRoute => "GRPCRoute",
            RouteKind::TLSRoute => "TLSRoute",
            RouteKind::TCPRoute => "TCPRoute",
            RouteKind::UDPRoute => "UDPRoute",
        }
    }

    /// The kind's resource (plural) name (`httproutes`).
    pub fn plural(self) -> &'static str {
        match self {
            RouteKind::HTTPRoute => "httproutes",
            RouteKind::GRPCRoute => "grpcroutes",
            RouteKind::TLSRoute => "tlsroutes",
            RouteKind::TCPRoute => "tcproutes",
            RouteKind::UDPRoute => "udproutes",
        }
    }

    /// Whether the kind carries `spec.hostnames` (TCPRoute and UDPRoute
    /// do not).
    pub fn has_hostnames(self) -> bool {
        !matches!(self, RouteKind::TCPRoute | RouteKind::UDPRoute)
    }
}

/// Publish the hostnames a Gateway API route of the same name and
/// namespace serves in every member cluster, with the addresses of the
/// Gateways that accepted it there.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "multiclusterdns.fedns.io",
    version = "v1alpha1",
    kind = "RouteDNSRecord",
    namespaced,
    status = "RouteDNSRecordStatus",
    derive = "PartialEq",
    shortname = "rdr",
    category = "fedns",
    doc = "Publishes the hostnames the Gateway API route of the same name and namespace serves, with the addresses of the Gateways that accepted it in every healthy member cluster.",
    printcolumn(name = "Route", type_ = "string", json_path = ".spec.routeKind"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct RouteDNSRecordSpec {
    /// The kind of route followed (absent: `HTTPRoute`).
    #[serde(default)]
    pub route_kind: RouteKind,
    /// Limits the published names to these (each inside a Domain's zone).
    /// Absent: every hostname the route serves. TCPRoute and UDPRoute
    /// carry no hostnames: for them these are the names, published with
    /// the addresses of every Gateway that accepted the route.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN)))]
    pub hosts: Vec<String>,
    /// In a member where the route serves nothing (no such route, not
    /// accepted, no Gateway address), the Ingress of the same name and
    /// namespace serves `spec.hosts` instead, with its load balancer
    /// addresses: one name fed by Gateways in some members and Ingresses
    /// in others, for moving from Ingress to Gateway API a member at a
    /// time. Needs `spec.hosts`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ingress_fallback: bool,
    /// TTL of the published records, in seconds.
    #[serde(default = "default_record_ttl", rename = "recordTTL")]
    #[schemars(range(min = 1, max = 86400))]
    pub record_ttl: i64,
    /// Probe every published Gateway address, with the route's hostname as
    /// Host header and (HTTPS) SNI (absent: health is the member's API
    /// server, the route's status and its backends only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<DataPlaneCheck>,
    /// Whether a cluster's route counts only while its backend Services
    /// (`rules[].backendRefs[]` of kind Service) have ready endpoints:
    /// `All` or `Any` (absent: `Any`, as a route with no ready backend
    /// serves nothing). A route whose parent reports `ResolvedRefs=False`
    /// never counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backends: Option<BackendHealth>,
    /// How much of a cluster must be up for it to count at all; absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_healthy: Option<MinHealthy>,
    /// What answers when no cluster counts healthy, before `whenAllUnhealthy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_target: Option<FallbackTarget>,
    /// What to serve when health alone would remove every cluster.
    #[serde(default)]
    pub when_all_unhealthy: WhenAllUnhealthy,
    /// Traffic policy of every name (absent: `All`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Routing>,
}

/// One hostname a route serves in one cluster, and the addresses it takes
/// there: those of the Gateways whose listeners yield it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteHostname {
    /// The intersected hostname (lower case).
    pub hostname: String,
    /// Its addresses: `ip` or `hostname` values of the shard's
    /// `loadBalancer` points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// The listeners yielding it, as `namespace/gateway/listener`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<String>,
}

/// One healthy cluster's share of a route record.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteClusterDNS {
    /// MemberCluster name.
    pub cluster: String,
    /// The `status.addresses` of every Gateway serving the route in that
    /// cluster, in the shape of core/v1 LoadBalancerStatus (`IPAddress` →
    /// `ip`, `Hostname` → `hostname`).
    #[serde(default)]
    pub load_balancer: LoadBalancerStatus,
    /// The hostnames served there, each with its Gateways' addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<RouteHostname>,
}

/// Observed state of a RouteDNSRecord, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteDNSRecordStatus {
    /// One entry per healthy cluster serving the route.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<RouteClusterDNS>,
    /// `Ready`, with reasons such as `NoHealthyEndpoints`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Probe state of every published Gateway address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<AddressHealth>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
