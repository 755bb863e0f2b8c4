//! `fedns`: the fedns command-line binary.

use std::process::ExitCode;

use clap::Parser;

use fedns_controller::cli::{Cli, Command};
use fedns_controller::{controller_cmd, crds_cmd, dns_server_cmd, join_cmd, logging, sandbox_cmd};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(err) = logging::init(cli.log_format) {
        eprintln!("fedns: cannot set up logging: {err}");
        return ExitCode::FAILURE;
    }
    let result = match &cli.command {
        Command::Crds(args) => crds_cmd::run(args),
        Command::DnsServer(args) => run_async(dns_server_cmd::run(args)),
        Command::Controller(args) => run_async(controller_cmd::run(args)),
        Command::Sandbox(args) => run_async(sandbox_cmd::run(args)),
        Command::Join(args) => run_async(join_cmd::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` prints the whole context chain on one line.
            eprintln!("fedns {}: {err:#}", cli.command.name());
            ExitCode::FAILURE
        }
    }
}

/// Runs a long-running subcommand on a multi-threaded tokio runtime.
fn run_async(future: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("fedns")
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    runtime.block_on(future)
}
