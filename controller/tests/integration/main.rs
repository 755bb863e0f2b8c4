//! The controller crate's integration tests, linked into one test binary:
//! each file was its own binary of ~100 MB, and linking them all cost CI
//! disk and minutes. Filter by module, e.g. `cargo test --test integration sandbox_e2e::`.

mod common;

mod cli;
mod clouddns_sandbox;
mod controller_e2e;
mod crds;
mod dataplane;
mod deploy;
mod discovery;
mod dns_load;
mod dns_server;
mod dnssec_e2e;
mod docs_examples;
mod engine_crds;
mod events;
mod gateway_fan_out;
mod health_e2e;
mod hysteresis_e2e;
mod ingress_backends_e2e;
mod large_objects;
mod member_rbac;
mod member_sources;
mod member_sources_eks;
mod member_sources_fleet;
mod min_healthy_e2e;
mod overlay_rbac;
mod real_host;
mod real_node;
mod replicas;
mod routes_e2e;
mod routing_e2e;
mod sandbox_e2e;
mod snapshot_file;
mod tenancy_e2e;
mod vantage;
mod webhook_serve;
