//! The `fedns` command line: the clap types ([`Cli`] and one `*Args` per
//! subcommand) and one module per subcommand with its `run`, which wires
//! the rest of the crate together. Nothing calls into it but `main.rs`.

pub mod agent;
mod args;
pub mod controller;
pub mod crds;
pub mod discovery_config;
pub mod dns_server;
pub mod docs;
pub mod explain;
pub mod join;
pub mod sandbox;
pub mod webhook_provider;
pub mod zone_snapshot;

pub use args::*;
