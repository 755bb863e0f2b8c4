//! Desired record sets: Domains and DNSEndpoints turned into zones.
//!
//! Rules:
//! * each Domain is one zone; a DNSEndpoint's `dnsName` goes to the Domain
//!   with the longest apex containing it; names outside every Domain are
//!   reported and skipped;
//! * targets are parsed per type (A: IPv4, AAAA: IPv6, CNAME/NS/PTR: host
//!   names, MX `pref host`, SRV `prio weight port host`, TXT as
//!   [`crate::plan::txt`] says (quoted: presentation form; else one string
//!   split at 255 octets), CAA in master-file form); an invalid target is
//!   reported and skipped, its valid siblings kept;
//! * endpoints with the same name and type merge: union of targets,
//!   deduplicated, sorted; the smallest TTL wins (RFC 2181 §5.2);
//! * A/AAAA beat CNAME at one name (RFC 1034 §3.6.2 forbids both): the
//!   CNAME is dropped and reported;
//! * one name, one owner ([`crate::plan::ownership`]): a name is published
//!   from the oldest DNSEndpoint that claims it, if its namespace may
//!   publish it; every other claim is reported (`Conflict` or `NotAllowed`)
//!   and skipped.
//!
//! The folder's files, by job: `model` (what the desired state is made
//! of), `targets` (one target parsed and printed), `zone` (a Domain's own
//! zone: SOA, name servers, transfers, client table), `routing` (traffic
//! policies), and `merge` (every object validated and merged into the
//! zones). What they make public is re-exported here.
//!
//! Layer: part of `plan`; it may use [`crate::plan::ownership`] and
//! [`crate::plan::txt`], nothing above `plan`.

mod merge;
mod model;
mod routing;
mod targets;
#[cfg(test)]
mod tests;
mod zone;

pub use self::merge::{desired_zones, desired_zones_with};
pub use self::model::{
    DesiredRRset, DesiredZone, DesiredZones, DomainProblem, EndpointProblem, ProblemKind, RoutedMember, RoutedSet,
    DEFAULT_TTL,
};
pub use self::targets::{canonical_target, parse_target};
pub use self::zone::{client_regions_of, name_server_addresses_check, name_server_addresses_of, zone_apex};
