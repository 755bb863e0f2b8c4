//! Command-line interface (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// fedns: global DNS and cross-cluster service discovery for Kubernetes federations.
#[derive(Debug, Parser)]
#[command(name = "fedns", version)]
pub struct Cli {
    /// Log line format on standard error. The level comes from `RUST_LOG`
    /// (default `info`), e.g. `RUST_LOG=fedns=debug,kube=warn`.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Log output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller (member health, records, DNSEndpoints, publishing).
    Controller,
    /// Run only the embedded authoritative DNS server.
    DnsServer,
    /// Print the CustomResourceDefinitions as multi-document YAML.
    Crds(CrdsArgs),
    /// Register a member cluster with the federation.
    Join,
    /// Run a whole federation on this machine (emulated clusters, controller, DNS).
    Sandbox,
}

impl Command {
    /// The subcommand as typed, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Controller => "controller",
            Command::DnsServer => "dns-server",
            Command::Crds(_) => "crds",
            Command::Join => "join",
            Command::Sandbox => "sandbox",
        }
    }
}

/// Arguments of `fedns crds`.
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this folder (as kept in `deploy/crds/`)
    /// instead of printing the stream.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}
