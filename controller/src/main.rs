//! `fedns`: the fedns command-line binary.

use std::process::ExitCode;

use clap::Parser;

use fedns_controller::cli::{self, Cli, Command};
use fedns_controller::logging;

/// jemalloc (its settings: `.cargo/config.toml`, and `_RJEM_MALLOC_CONF`
/// at run time): glibc's malloc with one arena spent most of a whole-zone
/// publish at 1,000,000 shards searching its bins, and with more arenas
/// held far more memory (docs/operations.md, "Memory sizing"). The
/// `jemalloc` feature (on by default) selects it.
#[cfg(all(target_os = "linux", feature = "jemalloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let parsed = Cli::parse();
    // A starting sandbox keeps the terminal for its first screen and its
    // change lines; its log lines go to a file unless --verbose.
    let output = match &parsed.command {
        Command::Sandbox(args) => args.log_file().map_or(logging::Output::Stderr, logging::Output::File),
        _ => logging::Output::Stderr,
    };
    if let Err(err) = logging::init(parsed.log_format, output) {
        eprintln!("fedns: cannot set up logging: {err:#}");
        return ExitCode::FAILURE;
    }
    let result = match &parsed.command {
        Command::Crds(args) => cli::crds::run(args),
        Command::Docs(args) => cli::docs::run(args),
        Command::DnsServer(args) => run_async(cli::dns_server::run(args)),
        Command::Controller(args) => run_async(cli::controller::run(args)),
        Command::Sandbox(args) => run_async(cli::sandbox::run(args)),
        Command::Join(args) => run_async(cli::join::run(args)),
        Command::Explain(args) => run_async(cli::explain::run(args)),
        Command::DiscoveryConfig(args) => run_async(cli::discovery_config::run(args)),
        Command::Agent(args) => run_async(cli::agent::run(args)),
        Command::WebhookProvider(args) => run_async(cli::webhook_provider::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` prints the whole context chain on one line.
            eprintln!("fedns {}: {err:#}", parsed.command.name());
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
