//! # fedns-providers
//!
//! The publishing pipeline (external-dns's shape): Domain and DNSEndpoint
//! objects → [`desired::DesiredZones`] (validated, merged RRsets per zone)
//! → sinks. This crate holds the pure pipeline and the `embedded` sink,
//! which feeds the `fedns-dnsserver` store, the provider-neutral
//! [`plan`]ner (ownership, conflicts), the [`provider::Provider`] trait,
//! and the external providers: [`route53`] and [`coredns_etcd`].

pub mod coredns_etcd;
pub mod desired;
mod domain_finalizer;
pub mod embedded;
pub mod etcd;
pub mod kube_source;
pub mod manifests;
pub mod ownership;
pub mod plan;
pub mod provider;
pub mod route53;
pub mod txt;
