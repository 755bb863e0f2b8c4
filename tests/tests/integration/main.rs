//! End-to-end tests across crates, linked into one test binary (one binary
//! per file cost CI disk and link time). Filter by module, e.g.
//! `cargo test -p fedns-e2e --test integration route53::`.
//!
//! `controller_providers.rs` stays its own binary: it sets the AWS
//! credential variables in the process environment, which must not race
//! other tests reading it.

mod clouddns;
mod coredns_etcd;
mod large_zone;
mod monitoring;
mod pipeline_leadership;
mod route53;
mod webhook;
