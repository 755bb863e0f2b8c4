//! Where objects come from: the top layer of the pipeline.
//!
//! * [`kube_source`]: the Kubernetes watches of Domains and DNSEndpoints
//!   (and Namespace labels when a Domain selects by them); it computes the
//!   desired zones, drives every sink, and writes status and Events back;
//! * [`manifests`]: the same objects read from YAML files;
//! * [`spec_changes`]: which watch events may change an object's spec;
//! * [`serial_records`]: the SOA serial every DNS server replica serves
//!   for a zone's content, recorded in its Domain's status;
//! * [`pending`]: DNSEndpoint specs this process's controller computed and
//!   is writing, published before the write lands;
//! * [`ready`]: waiting for a watch cache's first list, with several waiters;
//! * `cpu_bound`: a pass's long computations, off the async workers, and
//!   a whole publish's parts computed on a second thread while the DNS
//!   server applies the part before;
//! * `domain_finalizer`: the finalizer that keeps a deleted Domain until
//!   its records left the external providers. It belongs here because it
//!   talks to the Kubernetes API (patches the Domain's finalizers, records
//!   Events) and is called only by the Kubernetes source; it needs from
//!   below only the desired zones and the providers' error scopes.
//!
//! Layer: the top. It may use every other folder: `plan`, `provider`, and
//! the providers (`embedded`, `route53`, `coredns_etcd`); nothing below
//! uses it.

mod cpu_bound;
mod dnssec_keys;
mod domain_finalizer;
pub mod kube_source;
pub mod manifests;
pub mod pending;
pub mod ready;
pub mod serial_records;
pub mod spec_changes;
