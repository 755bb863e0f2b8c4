//! tracing setup: text or JSON lines on standard error, level from `RUST_LOG`
//! (default `info,kube_client=off`).

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Installs the global subscriber. `RUST_LOG` picks the level (default `info`).
///
/// # Errors
/// When `RUST_LOG` does not parse, or a subscriber is already installed.
pub fn init(format: LogFormat) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(&spec).map_err(|e| anyhow::anyhow!("RUST_LOG={spec:?} does not parse: {e}"))?
        }
        // kube-client logs every failed connection at ERROR; fedns reports
        // those failures itself, once, with the cluster they concern.
        _ => EnvFilter::new("info,kube_client=off"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("{e}"))
}
