//! `fedns crds`: print the CRDs, or write them one file each.

use std::io::Write;

use anyhow::Context;

use crate::cli::CrdsArgs;

/// Prints every CRD as one YAML stream on standard output, or with
/// `--out-dir` writes `deploy/crds/`-style files (and removes stale
/// `NN-*.yaml` files there, so a renamed CRD leaves nothing behind).
///
/// # Errors
/// I/O errors writing the output, with the path.
pub fn run(args: &CrdsArgs) -> anyhow::Result<()> {
    let Some(dir) = &args.out_dir else {
        let yaml = fedns_api::crd::crds_yaml().context("serialising CRDs")?;
        std::io::stdout()
            .write_all(yaml.as_bytes())
            .context("writing to standard output")?;
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = fedns_api::crd::all();
    let wanted: Vec<String> = files.iter().map(|f| f.file_name()).collect();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.ends_with(".yaml") && !wanted.contains(&name) {
            std::fs::remove_file(&path).with_context(|| format!("removing stale {}", path.display()))?;
        }
    }
    for file in &files {
        let path = dir.join(file.file_name());
        let yaml = file.to_yaml().context("serialising CRD")?;
        std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?;
        tracing::info!(path = %path.display(), "wrote CRD");
    }
    Ok(())
}
