//! `fedns`: the fedns command-line binary.

use std::process::ExitCode;

use clap::Parser;

use fedns_controller::cli::{Cli, Command};
use fedns_controller::{crds_cmd, logging};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(err) = logging::init(cli.log_format) {
        eprintln!("fedns: cannot set up logging: {err}");
        return ExitCode::FAILURE;
    }
    let result = match &cli.command {
        Command::Crds(args) => crds_cmd::run(args),
        Command::Controller | Command::DnsServer | Command::Join | Command::Sandbox => {
            eprintln!("fedns {}: not implemented yet", cli.command.name());
            return ExitCode::from(2);
        }
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
