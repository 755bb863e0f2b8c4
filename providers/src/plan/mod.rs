//! What should be published, before any provider's format: the bottom
//! layer of the pipeline.
//!
//! * [`desired`]: Domains and DNSEndpoints turned into validated, merged
//!   RRsets per zone ([`desired::DesiredZones`]);
//! * [`incremental`]: the same, updated only for the names a change
//!   touches;
//! * [`ownership`]: who may publish a name (one name, one owner; a
//!   Domain's `allowedNamespaces`);
//! * [`txt`]: the TXT target format every sink compares and publishes;
//! * [`presentation`]: record values as DNS providers' APIs spell them
//!   (absolute names, quoted TXT) and back to fedns's canonical form;
//! * [`registry`]: ownership records in external-dns's TXT registry
//!   format, which the external providers write and read;
//! * [`planner`]: the provider-neutral plan (create, update, delete,
//!   conflict) of desired RRsets against what a provider holds.
//!
//! Layer: the bottom. It uses only `fedns-api` and `fedns-dnsserver`, never
//! `provider`, a provider folder (`embedded`, `route53`, `coredns_etcd`,
//! `google_clouddns`)
//! or `source`.

pub mod desired;
pub mod incremental;
pub mod ownership;
pub mod planner;
pub mod presentation;
pub mod registry;
pub mod txt;
