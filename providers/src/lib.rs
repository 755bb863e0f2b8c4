//! # fedns-providers
//!
//! The publishing pipeline (external-dns's shape), one folder per stage:
//!
//! * [`source`]: where objects come from. Domain and DNSEndpoint objects,
//!   read by the Kubernetes source ([`source::kube_source`], which writes
//!   status and Events back and keeps a deleted Domain until its records
//!   left the providers) or from files ([`source::manifests`]).
//! * [`plan`]: what should be published. The objects become
//!   [`plan::desired::DesiredZones`]: validated, merged RRsets per zone,
//!   with one owner per name ([`plan::ownership`]: the oldest claim,
//!   service names only from their namespace, a Domain's
//!   `allowedNamespaces`) and TXT targets read as external-dns writes them
//!   ([`plan::txt`]), updated name by name ([`plan::incremental`]); and the
//!   provider-neutral [`plan::planner`] (ownership, conflicts) the external
//!   providers share.
//! * [`provider`]: the [`provider::Provider`] trait every external
//!   provider implements, its sync report and metrics.
//! * The providers, one folder each: the [`embedded`] sink (the
//!   `fedns-dnsserver` store, with zone-transfer keys from Secrets),
//!   [`route53`], [`google_clouddns`] (Cloud DNS v1 REST),
//!   [`coredns_etcd`] (etcd over its v3 JSON gateway,
//!   [`coredns_etcd::etcd`]), and [`webhook`] (any external-dns webhook
//!   provider).
//!
//! Layers, each depending only on those below it: `plan` at the bottom;
//! `provider` (the contract, which names `plan`'s desired RRsets); the
//! providers (`embedded`, `route53`, `google_clouddns`, `coredns_etcd`,
//! `webhook`), which may use `plan`
//! and `provider` but never each other nor `source`; `source` at the top,
//! which drives them all. Depends on `fedns-api` and `fedns-dnsserver` only.

pub mod coredns_etcd;
pub mod embedded;
pub mod google_clouddns;
pub mod plan;
pub mod provider;
pub mod route53;
pub mod source;
pub mod webhook;
