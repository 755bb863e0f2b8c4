//! The `fedns` binary: CRD drift against `deploy/crds/`, `docs/cli.md`
//! against the command line, help, logging and argument errors.

use std::path::Path;
use std::process::Command;

fn fedns() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fedns"))
}

/// `fedns crds` must equal `cat deploy/crds/0*.yaml` (the CRD files in
/// name order; `kustomization.yaml` beside them is not a CRD).
/// On failure, regenerate with `cargo run -q -- crds --out-dir deploy/crds`.
#[test]
fn crds_output_matches_deploy_crds() {
    let out = fedns().arg("crds").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('0')))
        .collect();
    files.sort();
    assert_eq!(files.len(), 6, "one file per CRD in {}", dir.display());
    let on_disk: Vec<u8> = files.iter().flat_map(|f| std::fs::read(f).unwrap()).collect();
    assert!(
        on_disk == out.stdout,
        "deploy/crds/ differs from `fedns crds`; regenerate with `cargo run -q -- crds --out-dir deploy/crds`"
    );
}

/// `--out-dir` writes the CRD files and the kustomization listing them,
/// removes stale files, and `deploy/crds/` is exactly that output (the
/// kustomization is checked current as the CRDs are).
#[test]
fn crds_out_dir_writes_the_same_files() {
    let dir = std::env::temp_dir().join(format!("fedns-crds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("99-stale.yaml"), "stale").unwrap();
    let out = fedns().args(["crds", "--out-dir"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "01-memberclusters.core.fedns.io.yaml",
            "02-domains.multiclusterdns.fedns.io.yaml",
            "03-servicednsrecords.multiclusterdns.fedns.io.yaml",
            "04-ingressdnsrecords.multiclusterdns.fedns.io.yaml",
            "05-dnsendpoints.multiclusterdns.fedns.io.yaml",
            "06-routednsrecords.multiclusterdns.fedns.io.yaml",
            "kustomization.yaml",
        ]
    );
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut in_deploy: Vec<_> = std::fs::read_dir(&deploy)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    in_deploy.sort();
    assert_eq!(
        in_deploy, names,
        "deploy/crds/ holds exactly what `fedns crds --out-dir` writes"
    );
    for name in &names {
        assert!(
            std::fs::read(dir.join(name)).unwrap() == std::fs::read(deploy.join(name)).unwrap(),
            "deploy/crds/{name} differs from `fedns crds --out-dir`; regenerate with `cargo run -q -- crds --out-dir deploy/crds`"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `docs/cli.md` is what `fedns docs cli` prints: every subcommand and
/// flag, generated from the clap definitions, so the reference cannot
/// drift from the binary. On failure, regenerate with
/// `cargo run -q -- docs cli > docs/cli.md`.
#[test]
fn docs_cli_md_matches_the_binary() {
    let out = fedns().args(["docs", "cli"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let generated = String::from_utf8(out.stdout).unwrap();
    // The generator leaves nothing out: every visible subcommand and every
    // flag (hidden ones too) of the command line is in the document.
    fn walk(command: &clap::Command, path: &str, generated: &str) -> usize {
        let mut flags = 0;
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long().filter(|l| *l != "help" && *l != "version") {
                let row = match arg.get_short() {
                    Some(short) => format!("`-{short}, --{long}"),
                    None => format!("`--{long}"),
                };
                assert!(generated.contains(&row), "{path}: --{long} missing");
                flags += 1;
            }
        }
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let path = format!("{path} {}", sub.get_name());
            assert!(generated.contains(&format!("`{path}`\n")), "{path} missing");
            flags += walk(sub, &path, generated);
        }
        flags
    }
    let flags = walk(
        &<fedns_controller::cli::Cli as clap::CommandFactory>::command(),
        "fedns",
        &generated,
    );
    assert!(flags > 40, "only {flags} flags documented");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/cli.md differs from `fedns docs cli`; regenerate with `cargo run -q -- docs cli > docs/cli.md`"
    );
}

#[test]
fn help_lists_every_subcommand() {
    let out = fedns().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for sub in ["controller", "dns-server", "crds", "join", "sandbox"] {
        assert!(help.contains(sub), "--help lacks {sub}:\n{help}");
    }
}

#[test]
fn bad_rust_log_is_a_clear_error_not_a_panic() {
    let out = fedns().arg("crds").env("RUST_LOG", "fedns=notalevel").output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("RUST_LOG"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn json_log_format_is_accepted() {
    let out = fedns().args(["--log-format", "json", "crds"]).output().unwrap();
    assert!(out.status.success());
}

/// Bad arguments get a clear one-line error and a non-zero exit, no panic.
#[test]
fn bad_arguments_are_clear_errors() {
    let out = fedns()
        .args(["join", "Not_A_Label", "--member-kubeconfig", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("fedns join: cluster name"), "{stderr}");
    assert!(!stderr.contains("panicked"));
    let out = fedns()
        .args([
            "dns-server",
            "--manifests",
            "/nonexistent/x.yaml",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/x.yaml"), "{stderr}");
    // An empty token file would refuse every request: an error at start.
    let empty = std::env::temp_dir().join(format!("fedns-empty-token-{}", std::process::id()));
    std::fs::write(&empty, "\n").unwrap();
    let out = fedns()
        .args([
            "webhook-provider",
            "--namespace",
            "team-a",
            "--owner",
            "a",
            "--token-file",
        ])
        .arg(&empty)
        .args(["--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&empty);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("is empty"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

/// deploy/: every manifest parses and every kustomization entry exists
/// (no image is built or deployed here: these machines run no Docker engine
/// or cluster). Kustomizations use only fields today's kustomize does not
/// deprecate: `resources` (folders and files) and `patches` (by `path`).
#[test]
fn deploy_manifests_parse_and_kustomizations_resolve() {
    use serde::Deserialize;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut stack = vec![root.clone()];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for doc in serde_yaml_ng::Deserializer::from_str(&text) {
                let value = serde_json::Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
                    // Today's kustomize (v5, kubectl 1.27 and later): the
                    // fields it deprecated (`bases`, `patchesStrategicMerge`)
                    // print warnings on every build, so none is used.
                    const KUSTOMIZE_FIELDS: [&str; 5] = ["apiVersion", "kind", "namespace", "resources", "patches"];
                    for field in value.as_object().unwrap().keys() {
                        assert!(
                            KUSTOMIZE_FIELDS.contains(&field.as_str()),
                            "{}: `{field}` (deprecated, or not used here before: check `kubectl kustomize` prints no warning)",
                            path.display()
                        );
                    }
                    let entries = value["resources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|e| e.as_str().unwrap());
                    let patches = value["patches"].as_array().into_iter().flatten().map(|p| {
                        p["path"]
                            .as_str()
                            .unwrap_or_else(|| panic!("{}: a patch without `path`: {p}", path.display()))
                    });
                    for entry in entries.chain(patches) {
                        let target = dir.join(entry);
                        assert!(
                            target.exists(),
                            "{}: {} does not exist",
                            path.display(),
                            target.display()
                        );
                    }
                } else if !value.is_null() {
                    assert!(value["kind"].is_string(), "{}: a document without kind", path.display());
                    // Every fedns command line in a Deployment parses.
                    for container in value["spec"]["template"]["spec"]["containers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let Some(args) = container["args"].as_array() else {
                            continue;
                        };
                        let args = args.iter().map(|a| a.as_str().unwrap_or_default());
                        let parsed = <fedns_controller::cli::Cli as clap::Parser>::try_parse_from(
                            std::iter::once("fedns").chain(args),
                        );
                        assert!(parsed.is_ok(), "{}: {}", path.display(), parsed.unwrap_err());
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} documents under deploy/");
}

/// Runs `fedns dns-server` on the example Domain until it logs that it
/// listens (30 s at most) and returns everything it wrote to standard
/// error. `through_terminal`: under `script`, so standard error is a pty.
fn dns_server_log(through_terminal: bool, no_color: Option<&str>) -> Vec<u8> {
    use std::io::Read as _;
    let manifests = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/domain.yaml");
    let fedns_command = format!(
        "{} dns-server --manifests {manifests} --listen 127.0.0.1:0",
        env!("CARGO_BIN_EXE_fedns")
    );
    let mut command = if through_terminal {
        let mut script = Command::new("script");
        script.args(["-qfec", &format!("{fedns_command} 2>&1"), "/dev/null"]);
        script
    } else {
        let mut sh = Command::new("sh");
        sh.args(["-c", &format!("exec {fedns_command} 2>&1")]);
        sh
    };
    command.env_remove("NO_COLOR").env("RUST_LOG", "info");
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start fedns (and util-linux `script` for the terminal case)");
    let mut stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 || sender.send(chunk[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut log = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !String::from_utf8_lossy(&log).contains("listening") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match receiver.recv_timeout(left) {
            Ok(chunk) => log.extend(chunk),
            Err(_) => break,
        }
    }
    // Under `script`, fedns runs below script (through a shell) in a
    // session of its own: killing script alone would leave it running.
    // Every descendant goes, found through /proc.
    let mut descendants = Vec::new();
    let mut parents = vec![child.id().to_string()];
    while let Some(pid) = parents.pop() {
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for pid in children.split_whitespace() {
            descendants.push(pid.to_owned());
            parents.push(pid.to_owned());
        }
    }
    if !descendants.is_empty() {
        // The shell's builtin: no procps needed.
        let _ = Command::new("sh")
            .args(["-c", &format!("kill -KILL {}", descendants.join(" "))])
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        String::from_utf8_lossy(&log).contains("listening"),
        "fedns dns-server did not log that it listens within 30 s:\n{}",
        String::from_utf8_lossy(&log)
    );
    log
}

/// Logs written to a file or a pipe carry no ANSI escape sequences; a
/// terminal gets colours unless NO_COLOR is set.
#[test]
fn log_colours_only_on_a_terminal() {
    const ESC: u8 = 0x1b;
    assert!(!dns_server_log(false, None).contains(&ESC), "ANSI codes in a piped log");
    assert!(
        dns_server_log(true, None).contains(&ESC),
        "a terminal should get colours"
    );
    assert!(
        !dns_server_log(true, Some("1")).contains(&ESC),
        "NO_COLOR=1 must turn colours off on a terminal"
    );
}
