//! A member's Gateway API objects (`gateway.networking.k8s.io`, `v1`, or
//! the version an older gateway-api release serves): this folder owns
//! what fedns reads of them and how it keeps it, as `RouteDNSRecord`s
//! read them. By job:
//!
//! - `facts.rs`: the compact facts of Gateways (and ListenerSets) with
//!   their listeners, GatewayClasses, routes with their parent refs and
//!   status entries, their conditions and the fedns annotations; field
//!   names and defaults follow kubernetes-sigs/gateway-api v1.6.1
//!   (`apis/v1/gateway_types.go`, `apis/v1/shared_types.go`,
//!   `apis/v1/httproute_types.go`);
//! - `versions.rs`: which versions of each kind fedns asks for, and
//!   whether the member serves a kind ([`Served`]);
//! - `watches.rs`: the caches of one member ([`GatewayApi`]) and the
//!   watches that keep them, of a member's objects or of the route
//!   templates in a cluster that holds them ([`spawn_route_templates`]).
//!
//! Optional kinds: a member without the Gateway API CRDs (or without one
//! route kind) answers 404; the kind is then marked not served, logged
//! once, and listed again every [`NOT_SERVED_RETRY`] (no error storm).

mod facts;
mod versions;
mod watches;

#[cfg(test)]
mod tests;

pub use facts::{
    ClassController, ClassFacts, GatewayFacts, ListenerFacts, ParentRef, ParentStatus, RouteFacts, GATEWAY_GROUP,
    LISTENER_SET,
};
pub use versions::{Served, NOT_SERVED_RETRY};
pub(super) use watches::spawn_watches;
pub use watches::{spawn_route_templates, GatewayApi};
