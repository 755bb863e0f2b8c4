//! # fedns-api
//!
//! The fedns custom resources (v1alpha1) as Rust types, their defaults, the
//! generated CustomResourceDefinitions, and [`names`], the one module every
//! fedns crate uses to validate DNS names.
//!
//! | kind | group | module |
//! |---|---|---|
//! | `MemberCluster` | `core.fedns.io` | [`member_cluster`] |
//! | `Domain` | `multiclusterdns.fedns.io` | [`domain`] |
//! | `ServiceDNSRecord` | `multiclusterdns.fedns.io` | [`records`] |
//! | `IngressDNSRecord` | `multiclusterdns.fedns.io` | [`records`] |
//! | `RouteDNSRecord` | `multiclusterdns.fedns.io` | [`records`] |
//! | `DNSEndpoint` | `multiclusterdns.fedns.io` | [`dns_endpoint`] |
//!
//! All kinds are namespaced, have a status subresource, and carry
//! `status.conditions[]` (Kubernetes `metav1.Condition`) and
//! `status.observedGeneration`.
//!
//! Shared parts: [`health`] (a record's data-plane `healthCheck`,
//! `whenAllUnhealthy` and per-address probe status), [`conditions`] (the
//! condition types and reasons every controller part writes).

pub mod crd;
pub mod dns_endpoint;
pub mod domain;
pub mod gateway;
pub mod health;
pub mod member_cluster;
pub mod names;
pub mod records;
pub mod routing;
mod schema;

pub use dns_endpoint::{
    DNSEndpoint, DNSEndpointSpec, DNSEndpointStatus, Endpoint, ProviderSpecificProperty, RecordType,
};
pub use domain::{
    AllowedNamespaces, DnssecAlgorithm, DnssecDenial, DnssecKeyMode, DnssecSpec, Domain, DomainSpec, DomainStatus,
    NameGrant, NameServerAddresses, NamespacesFrom, SerialRecord, SoaTimers, TsigAlgorithm, TsigKeyReference,
    TsigSecretReference, ZoneTransfer,
};
pub use health::{
    AddressHealth, CaCertificateKind, CaCertificateRef, DataPlaneCheck, FallbackTarget, MinHealthy, ProbeHeader,
    ProbeProtocol, Quorum, Threshold, VantagePointHealth, WhenAllUnhealthy,
};
pub use member_cluster::{HealthCheck, MemberCluster, MemberClusterSpec, MemberClusterStatus, SecretReference};
pub use records::{
    BackendHealth, ClusterDNS, IngressClusterDNS, IngressDNSRecord, IngressDNSRecordSpec, IngressDNSRecordStatus,
    RouteClusterDNS, RouteDNSRecord, RouteDNSRecordSpec, RouteDNSRecordStatus, RouteHostname, RouteKind,
    ServiceDNSRecord, ServiceDNSRecordSpec, ServiceDNSRecordStatus,
};
pub use routing::{ClientRegion, GeoRegion, Routing, RoutingPolicy};

/// Re-exported so dependants use the same k8s-openapi version.
pub use k8s_openapi;

/// Re-exported so dependants name the same `Condition` type.
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// API group of [`MemberCluster`].
pub const CORE_GROUP: &str = "core.fedns.io";
/// API group of every DNS kind.
pub const DNS_GROUP: &str = "multiclusterdns.fedns.io";
/// The one served and stored version.
pub const VERSION: &str = "v1alpha1";

/// Finalizer the controller puts on a [`Domain`] while external providers
/// (Route53, CoreDNS through etcd) may hold its records: when the Domain is
/// deleted, the records fedns owns there are removed first, then this
/// finalizer, so a deleted Domain leaves nothing behind.
pub const PROVIDER_RECORDS_FINALIZER: &str = "multiclusterdns.fedns.io/provider-records";

/// Default `recordTTL` of ServiceDNSRecord and IngressDNSRecord, in seconds.
pub const DEFAULT_RECORD_TTL: i64 = 30;
/// Smallest TTL any fedns object accepts, in seconds.
pub const MIN_TTL: i64 = 1;
/// Largest TTL any fedns object accepts, in seconds (one day).
pub const MAX_TTL: i64 = 86_400;

pub mod conditions;
