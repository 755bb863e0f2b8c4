//! # fedns-controller
//!
//! The `fedns` binary's library: command-line parsing, logging, and the
//! subcommands. The controller itself (member registry, health, record
//! controllers, DNSEndpoint builder) lands here as it is built.

pub mod builder;
pub mod cli;
pub mod controller_cmd;
pub mod crds_cmd;
pub mod dns_server_cmd;
pub mod federation;
pub mod http;
pub mod join_cmd;
pub mod kube_client;
pub mod logging;
pub mod members;
pub mod metrics;
pub mod queue;
pub mod records;
pub mod resolver;
pub mod sandbox_cmd;
