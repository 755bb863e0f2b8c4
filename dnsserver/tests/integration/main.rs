//! The DNS server's integration tests, linked into one test binary (one
//! binary per file cost CI disk and link time). Filter by module, e.g.
//! `cargo test -p fedns-dnsserver --test integration knot_differential::`.

mod common;

mod answer_limits;
mod answer_path;
mod dnssec;
mod knot_differential;
mod listeners;
mod robustness;
mod routing;
mod rrl;
mod serials;
mod tcp_pressure;
mod transfer;
