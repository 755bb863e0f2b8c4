//! The first screen as a value ([`Screen`], its [`Line`]s and the commands
//! to [`Try`]) and as text.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The first screen, line by line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// In print order.
    pub lines: Vec<Line>,
}

/// One line of the first screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Printed as is.
    Text {
        /// The line.
        text: String,
        /// The files it names (they exist).
        files: Vec<PathBuf>,
    },
    /// A command to try, indented, with a note after it.
    Try {
        /// The command.
        command: Try,
        /// Printed in parentheses after the command.
        note: Option<String>,
    },
}

/// A command the first screen offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Try {
    /// `dig @IP -p PORT [+subnet=CIDR] NAME`.
    Dig {
        /// The sandbox's DNS address.
        server: SocketAddr,
        /// A name the sandbox publishes.
        name: String,
        /// An EDNS Client Subnet in a Domain's client table.
        subnet: Option<String>,
        /// With `subnet`: the region the table maps it to.
        region: Option<String>,
    },
    /// `fedns sandbox ACTION CLUSTER --state-dir DIR`.
    Sandbox {
        /// `fail`, `recover`, `cordon`, `break-lb`, `fix-lb`, ...
        action: String,
        /// A member.
        cluster: String,
        /// The running sandbox's state dir.
        state_dir: PathBuf,
    },
    /// `kubectl --kubeconfig PATH ARGS...`.
    Kubectl {
        /// A kubeconfig the sandbox wrote.
        kubeconfig: PathBuf,
        /// The rest of the command line (unquoted).
        args: Vec<String>,
        /// Continue the line (` \` and a newline) before this argument.
        wrap_before: Option<usize>,
    },
}

impl Try {
    /// The program and its arguments, as a shell passes them.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Try::Dig {
                server, name, subnet, ..
            } => {
                let mut argv = vec![
                    "dig".to_owned(),
                    format!("@{}", server.ip()),
                    "-p".to_owned(),
                    server.port().to_string(),
                ];
                argv.extend(subnet.iter().map(|s| format!("+subnet={s}")));
                argv.push(name.clone());
                argv
            }
            Try::Sandbox {
                action,
                cluster,
                state_dir,
            } => vec![
                "fedns".to_owned(),
                "sandbox".to_owned(),
                action.clone(),
                cluster.clone(),
                "--state-dir".to_owned(),
                state_dir.display().to_string(),
            ],
            Try::Kubectl { kubeconfig, args, .. } => {
                let mut argv = vec![
                    "kubectl".to_owned(),
                    "--kubeconfig".to_owned(),
                    kubeconfig.display().to_string(),
                ];
                argv.extend(args.iter().cloned());
                argv
            }
        }
    }

    /// The files the command names.
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Try::Kubectl { kubeconfig, .. } => vec![kubeconfig.clone()],
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for Try {
    /// The command line, quoted for a POSIX shell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let argv = self.argv();
        // Where the arguments after `kubectl --kubeconfig PATH` start.
        let wrap = match self {
            Try::Kubectl {
                wrap_before: Some(i), ..
            } => Some(i + 3),
            _ => None,
        };
        for (i, arg) in argv.iter().enumerate() {
            if i > 0 {
                f.write_str(if Some(i) == wrap { " \\\n      " } else { " " })?;
            }
            f.write_str(&quote(arg))?;
        }
        Ok(())
    }
}

/// `arg` as a POSIX shell reads it back: as is when plain, else in single quotes.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

impl Screen {
    /// Every command offered, in print order.
    pub fn tries(&self) -> impl Iterator<Item = &Try> {
        self.lines.iter().filter_map(|line| match line {
            Line::Try { command, .. } => Some(command),
            Line::Text { .. } => None,
        })
    }

    /// Every file named.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for line in &self.lines {
            let named = match line {
                Line::Text { files, .. } => files.clone(),
                Line::Try { command, .. } => command.files(),
            };
            for file in named {
                if !files.contains(&file) {
                    files.push(file);
                }
            }
        }
        files
    }

    pub(super) fn text(&mut self, text: impl Into<String>) {
        self.lines.push(Line::Text {
            text: text.into(),
            files: Vec::new(),
        });
    }

    pub(super) fn text_naming(&mut self, text: impl Into<String>, files: Vec<PathBuf>) {
        self.lines.push(Line::Text {
            text: text.into(),
            files,
        });
    }

    pub(super) fn try_(&mut self, command: Try, note: Option<String>) {
        self.lines.push(Line::Try { command, note });
    }
}

impl fmt::Display for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            match line {
                Line::Text { text, .. } => writeln!(f, "{text}")?,
                Line::Try { command, note: None } => writeln!(f, "  {command}")?,
                Line::Try {
                    command,
                    note: Some(note),
                } => writeln!(f, "  {command}   ({note})")?,
            }
        }
        Ok(())
    }
}
