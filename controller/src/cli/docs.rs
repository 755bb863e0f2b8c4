//! `fedns docs cli` (hidden): `docs/cli.md`, every subcommand and flag,
//! generated from the clap definitions in `args/`, so the reference
//! cannot drift from the binary (a test compares the two).

use std::fmt::Write as _;

use clap::{Arg, ArgAction, CommandFactory};

use crate::cli::{Cli, DocsArgs, Document};

/// Prints the document asked for on standard output.
///
/// # Errors
/// Standard output cannot be written.
pub fn run(args: &DocsArgs) -> anyhow::Result<()> {
    use std::io::Write as _;
    let text = match args.document {
        Document::Cli => cli_markdown(),
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// `docs/cli.md`: the usage, every visible subcommand and every flag
/// (hidden flags too: they are marked), with value name, default,
/// environment variable and help text.
pub fn cli_markdown() -> String {
    let mut command = Cli::command();
    command.build();
    let mut out = String::new();
    out.push_str("# `fedns` command line\n\n");
    out.push_str(
        "<!-- Generated from the clap definitions (controller/src/cli/args/) by\n     \
         `cargo run -q -- docs cli > docs/cli.md`; do not edit by hand: a test fails\n     \
         when this file differs from what the binary prints. -->\n\n",
    );
    paragraph(&mut out, about(&command));
    usage(&mut out, &mut command);
    out.push_str("| subcommand | what it does |\n|---|---|\n");
    for sub in visible_subcommands(&command) {
        let path = format!("fedns {}", sub.get_name());
        let _ = writeln!(out, "| [`{path}`](#{}) | {} |", anchor(&path), cell(&about(sub)));
    }
    out.push('\n');
    out.push_str("Options of every subcommand (give them before or after it):\n\n");
    flag_table(&mut out, &command, false);
    let subcommands: Vec<clap::Command> = visible_subcommands(&command).cloned().collect();
    for sub in subcommands {
        section(&mut out, sub, "fedns", 2);
    }
    format!("{}\n", out.trim_end())
}

fn visible_subcommands(command: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    command
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

fn section(out: &mut String, mut command: clap::Command, parent: &str, depth: usize) {
    let path = format!("{parent} {}", command.get_name());
    let _ = writeln!(out, "{} `{path}`\n", "#".repeat(depth));
    paragraph(out, long_about(&command));
    usage(out, &mut command);
    let positionals: Vec<&Arg> = documented(&command, true).filter(|a| a.is_positional()).collect();
    if !positionals.is_empty() {
        out.push_str("| argument | meaning |\n|---|---|\n");
        for arg in positionals {
            let _ = writeln!(out, "| `{}` | {} |", value_name(arg), cell(&meaning(arg)));
        }
        out.push('\n');
    }
    flag_table(out, &command, true);
    let subcommands: Vec<clap::Command> = visible_subcommands(&command).cloned().collect();
    for sub in subcommands {
        section(out, sub, &path, depth + 1);
    }
}

/// The flags of `command`; `skip_global`: leave out the global ones (they
/// are listed once, at the top).
fn flag_table(out: &mut String, command: &clap::Command, skip_global: bool) {
    let flags: Vec<&Arg> = documented(command, skip_global)
        .filter(|a| !a.is_positional())
        .collect();
    if flags.is_empty() {
        return;
    }
    out.push_str("| flag | default | meaning |\n|---|---|---|\n");
    for arg in flags {
        let mut flag = match (arg.get_long(), arg.get_short()) {
            (Some(long), Some(short)) => format!("-{short}, --{long}"),
            (Some(long), None) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => arg.get_id().to_string(),
        };
        if takes_value(arg) {
            let _ = write!(flag, " {}", value_name(arg));
            if matches!(arg.get_action(), ArgAction::Append) {
                flag.push_str("...");
            }
        }
        let default = if takes_value(arg) {
            arg.get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            cell(&flag),
            cell(&default),
            cell(&meaning(arg))
        );
    }
    out.push('\n');
}

/// The arguments worth documenting: not clap's own `--help`/`--version`.
fn documented(command: &clap::Command, skip_global: bool) -> impl Iterator<Item = &Arg> {
    command.get_arguments().filter(move |a| {
        let id = a.get_id().as_str();
        id != "help" && id != "version" && !(skip_global && a.is_global_set())
    })
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

fn value_name(arg: &Arg) -> String {
    let names: Vec<String> = match arg.get_value_names() {
        Some(names) => names.iter().map(ToString::to_string).collect(),
        None => vec![arg.get_id().as_str().to_uppercase().replace('-', "_")],
    };
    names.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>().join(" ")
}

/// The help text, then the possible values, the environment variable and
/// whether `--help` shows it.
fn meaning(arg: &Arg) -> String {
    let mut text = sentence(
        &arg.get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default(),
    );
    let values: Vec<String> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(help) => format!("`{}` ({})", v.get_name(), trim_period(&help.to_string())),
            None => format!("`{}`", v.get_name()),
        })
        .collect();
    // A bool flag's values (true, false) say nothing the default does not.
    if !values.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        let _ = write!(text, " Values: {}.", values.join(", "));
    }
    if let Some(env) = arg.get_env() {
        let _ = write!(text, " Environment: `{}`.", env.to_string_lossy());
    }
    if arg.is_hide_set() {
        text.push_str(" Not shown by `--help`.");
    }
    text.trim().to_owned()
}

/// `text` ending with a full stop (clap drops the one of a one-line help).
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() || text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

fn trim_period(text: &str) -> &str {
    text.trim().trim_end_matches('.')
}

fn about(command: &clap::Command) -> String {
    command.get_about().map(|a| a.to_string()).unwrap_or_default()
}

fn long_about(command: &clap::Command) -> String {
    command
        .get_long_about()
        .or(command.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default()
}

fn usage(out: &mut String, command: &mut clap::Command) {
    let usage = command.render_usage().to_string();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.trim());
}

fn paragraph(out: &mut String, text: String) {
    if !text.is_empty() {
        let _ = writeln!(out, "{}\n", sentence(&text));
    }
}

/// Markdown table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// GitHub's heading anchor for `` `text` ``.
fn anchor(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}
