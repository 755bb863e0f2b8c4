//! # fedns-providers
//!
//! The publishing pipeline (external-dns's shape): Domain and DNSEndpoint
//! objects, read by the Kubernetes source ([`kube_source`], which writes
//! status and Events back) or from files ([`manifests`]), become
//! [`desired::DesiredZones`]: validated, merged RRsets per zone, with one
//! owner per name ([`ownership`]: the oldest claim, service names only from
//! their namespace, a Domain's `allowedNamespaces`) and TXT targets read as
//! external-dns writes them ([`txt`]). The zones go to the sinks: the
//! `embedded` sink (the `fedns-dnsserver` store, with zone-transfer keys
//! from Secrets), and through the provider-neutral [`plan`]ner (ownership,
//! conflicts) and the [`provider::Provider`] trait to the external providers
//! [`route53`] and [`coredns_etcd`] (etcd over its v3 JSON gateway,
//! [`etcd`]). A deleted Domain's records leave the providers first
//! (`domain_finalizer`). Depends on `fedns-api` and `fedns-dnsserver` only.

pub mod coredns_etcd;
pub mod desired;
mod domain_finalizer;
pub mod embedded;
pub mod etcd;
pub mod incremental;
pub mod kube_source;
pub mod manifests;
pub mod ownership;
pub mod plan;
pub mod provider;
pub mod route53;
pub mod spec_changes;
pub mod txt;
