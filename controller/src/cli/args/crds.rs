//! Arguments of `fedns crds`.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns crds`.
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this folder (as kept in `deploy/crds/`)
    /// instead of printing the stream.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}
