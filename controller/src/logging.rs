//! tracing setup: text or JSON lines on standard error (or appended to a
//! file: `fedns sandbox` keeps its terminal for people), level from
//! `RUST_LOG` (default `info,kube_client=off`). Text lines carry ANSI
//! colours only when standard error is a terminal and `NO_COLOR` is unset
//! or empty (<https://no-color.org>), so logs sent to a file or a pipe stay
//! plain.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Context as _;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Log output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where log lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Standard error.
    Stderr,
    /// Appended to this file (created, with its folder, if missing), never
    /// coloured.
    File(PathBuf),
}

/// Installs the global subscriber. `RUST_LOG` picks the level (default `info`).
///
/// # Errors
/// When `RUST_LOG` does not parse, the log file cannot be opened, or a
/// subscriber is already installed.
pub fn init(format: LogFormat, output: Output) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(&spec).map_err(|e| anyhow::anyhow!("RUST_LOG={spec:?} does not parse: {e}"))?
        }
        // kube-client logs every failed connection at ERROR; fedns reports
        // those failures itself, once, with the cluster they concern.
        _ => EnvFilter::new("info,kube_client=off"),
    };
    match output {
        Output::Stderr => {
            let colour = use_colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR"));
            install(format, filter, colour, std::io::stderr)
        }
        Output::File(path) => {
            if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("opening the log file {}", path.display()))?;
            install(format, filter, false, Mutex::new(file))
        }
    }
}

fn install<W>(format: LogFormat, filter: EnvFilter, colour: bool, writer: W) -> anyhow::Result<()>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(writer);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("{e}"))
}

/// Whether log lines get ANSI colours: only on a terminal, and not when
/// `NO_COLOR` is set to a non-empty value (no-color.org's rule).
pub fn use_colour(stderr_is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::use_colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some("".into())), "an empty NO_COLOR does not count");
        assert!(!use_colour(true, Some("1".into())));
        assert!(!use_colour(false, None), "a file or a pipe gets no colour");
    }
}
