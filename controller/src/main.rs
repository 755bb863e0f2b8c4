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
///
/// When `future` returns, the subcommand's own shutdown is done (Lease
/// released, DNS drained, the snapshot file written), and the runtime is
/// left without waiting for its blocking threads. Dropping it instead
/// waited for them, and one of them can be a publisher pass computing
/// zones in `block_in_place` (at 1,000,000 shards a whole publish takes
/// about 17 s): a SIGTERM then took that long to end the process, and
/// the pass, going on after it with the runtime's timers shut down,
/// panicked ("A Tokio 1.x context was found, but it is being shutdown").
fn run_async(future: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("fedns")
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    let result = runtime.block_on(future);
    runtime.shutdown_background();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task still computing in `block_in_place` when the subcommand's
    /// future returns does not hold the process: `run_async` returns while
    /// the computation is still blocked (on a channel nobody sends to).
    #[test]
    fn a_returned_subcommand_does_not_wait_for_a_blocked_computation() {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
            let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
            // Never sent nor dropped: the computation stays blocked for good.
            std::mem::forget(release_tx);
            let result = run_async(async move {
                tokio::spawn(async move {
                    tokio::task::block_in_place(|| {
                        let _ = entered_tx.send(());
                        let _ = release_rx.recv();
                    });
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                });
                // The computation has started before the subcommand ends.
                tokio::task::spawn_blocking(move || entered_rx.recv())
                    .await?
                    .map_err(|_| anyhow::anyhow!("the computation never started"))?;
                Ok(())
            });
            let _ = done_tx.send(result.is_ok());
        });
        // Generous: returning takes milliseconds; waiting for the blocked
        // computation would never return.
        let returned = done_rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(
            returned,
            Ok(true),
            "run_async did not return within 30 s of its future while a computation was blocked"
        );
    }
}
