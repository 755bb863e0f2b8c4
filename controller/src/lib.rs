//! # fedns-controller
//!
//! The `fedns` binary's library: command-line parsing, logging, and the
//! subcommands. The controller itself (member registry, health, record
//! controllers, DNSEndpoint builder) lands here as it is built.

pub mod cli;
pub mod crds_cmd;
pub mod dns_server_cmd;
pub mod http;
pub mod kube_client;
pub mod logging;
