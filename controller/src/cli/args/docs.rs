//! Arguments of the hidden `fedns docs`.

use clap::{Args, ValueEnum};

/// Arguments of `fedns docs`.
#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The document to print.
    #[arg(value_enum)]
    pub document: Document,
}

/// Documents `fedns docs` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Document {
    /// `docs/cli.md`: every subcommand and flag.
    Cli,
}
