//! The `fedns` command line: the clap types ([`Cli`] and one `*Args` per
//! subcommand, in `args`) and one module per subcommand with its `run`.
//! Subcommands may call everything in the crate; nothing calls them but `main.rs`.

mod args;
pub mod controller;
pub mod crds;
pub mod dns_server;
pub mod join;
pub mod sandbox;

pub use args::*;
