//! Helpers for tests that run the `fedns` binary against emulated clusters.

#![allow(dead_code)] // each test module uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fedns_kube_emulator::Emulator;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

/// A loopback port free for UDP and TCP, never handed to another test of
/// this process ([`fedns_loopback::ports::free_loopback_port`]).
pub fn free_port() -> u16 {
    fedns_loopback::ports::free_loopback_port().expect("a free loopback port")
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fedns-{tag}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub async fn client_of(emulator: &Emulator) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&emulator.kubeconfig_yaml()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// Creates the Domain `fedns-system/myfed` with `spec` (its JSON, as
/// docs/crds.md gives it) and returns the Domain API of `fedns-system`.
pub async fn create_myfed_domain(client: &Client, spec: serde_json::Value) -> Api<fedns_api::Domain> {
    let domains: Api<fedns_api::Domain> = Api::namespaced(client.clone(), "fedns-system");
    let domain = serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
        "metadata": {"name": "myfed"},
        "spec": spec,
    }))
    .unwrap();
    domains.create(&PostParams::default(), &domain).await.unwrap();
    domains
}

/// Installs the fedns CRDs and the namespaces given.
pub async fn install_crds(client: &Client, namespaces: &[&str]) {
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for file in fedns_api::crd::all() {
        crds.create(&PostParams::default(), &file.crd).await.unwrap();
    }
    let api: Api<Namespace> = Api::all(client.clone());
    for ns in namespaces {
        let _ = api
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await;
    }
}

/// A child process killed on drop. Its output goes to a log file; when
/// the test fails (the process is dropped while the test panics), the
/// log's last lines are printed with the failure, so one CI excerpt shows
/// what the process said, and passing tests print nothing of it.
pub struct Process {
    pub child: Child,
    /// (what it is, its log file).
    log: Option<(String, PathBuf)>,
    /// The log is ours ([`spawn_fedns`]): removed when the test passes.
    remove_log: bool,
}

/// How many of a process's last log lines a failing test prints.
const LOG_TAIL_LINES: usize = 60;

impl Process {
    /// A process whose output the caller handles.
    pub fn new(child: Child) -> Process {
        Process {
            child,
            log: None,
            remove_log: false,
        }
    }

    /// A process whose log is `log` (the caller's file, kept), printed
    /// (its last lines) if the test fails.
    pub fn logged(child: Child, what: &str, log: PathBuf) -> Process {
        Process {
            child,
            log: Some((what.to_owned(), log)),
            remove_log: false,
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let Some((what, log)) = &self.log else {
            return;
        };
        if std::thread::panicking() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            println!(
                "---- the last {} of {} log lines of {what} (pid {}, {}):",
                tail.len(),
                lines.len(),
                self.child.id(),
                log.display()
            );
            for line in tail {
                let cut: String = line.chars().take(400).collect();
                println!("  {cut}");
            }
        } else if self.remove_log {
            let _ = std::fs::remove_file(log);
        }
    }
}

impl Process {
    /// Whether the process's log (if it has one) contains `needle`.
    pub fn log_contains(&self, needle: &str) -> bool {
        self.log
            .as_ref()
            .and_then(|(_, path)| std::fs::read_to_string(path).ok())
            .is_some_and(|text| text.contains(needle))
    }
}

/// Waits until `read` gives the same value for `quiet` in a row (polled
/// every 100 ms, [`EVENTUALLY`] at most) and returns it: "the writes have
/// settled" observed, not assumed after a fixed sleep.
pub async fn settled<T, F, Fut>(what: &str, quiet: Duration, mut read: F) -> T
where
    T: PartialEq + std::fmt::Debug,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let started = Instant::now();
    let mut last = read().await;
    let mut since = Instant::now();
    while started.elapsed() < EVENTUALLY {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = read().await;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            println!("{what}: settled after {:?} at {last:?}", started.elapsed());
            return last;
        }
    }
    panic!("{what}: still changing after {EVENTUALLY:?}; last seen: {last:?}");
}

/// A log file for a process a test starts (removed when the test passes).
pub fn process_log(tag: &str) -> (PathBuf, std::fs::File, std::fs::File) {
    let path = std::env::temp_dir().join(format!("fedns-{tag}-{}-{}.log", std::process::id(), free_port()));
    let file = std::fs::File::create(&path).expect("creating a process log");
    let again = file.try_clone().expect("a second handle of a process log");
    (path, file, again)
}

pub fn spawn_fedns(args: &[&str]) -> Process {
    spawn_fedns_with_env(args, &[])
}

/// [`spawn_fedns`] with `env` added to the test's environment.
pub fn spawn_fedns_with_env(args: &[&str], env: &[(&str, &str)]) -> Process {
    let (log, out, err) = process_log("fedns");
    let child = Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(args)
        .envs(env.iter().copied())
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .expect("start fedns");
    let mut process = Process::logged(
        child,
        &format!("fedns {}", args.first().copied().unwrap_or_default()),
        log,
    );
    process.remove_log = true;
    process
}

thread_local! {
    /// What the last observation helper ([`dig`], [`dig_status`], ...) of
    /// this thread saw, for [`eventually`]'s timeout message.
    static LAST_SEEN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Notes what a check saw (the last one is printed if a wait times out).
pub fn saw(what: impl Into<String>) {
    let what = what.into();
    LAST_SEEN.with(|last| *last.borrow_mut() = Some(what));
}

fn take_last_seen() -> Option<String> {
    LAST_SEEN.with(|last| last.borrow_mut().take())
}

/// `fedns controller` against the federation in `dir` (its
/// `host.kubeconfig`), DNS on 127.0.0.1:`dns_port`, metrics on
/// 127.0.0.1:`metrics_port`, then `extra` arguments.
pub fn spawn_controller(dir: &Path, dns_port: u16, metrics_port: u16, extra: &[&str]) -> Process {
    let kubeconfig = dir.join("host.kubeconfig");
    let dns = format!("127.0.0.1:{dns_port}");
    let metrics = format!("127.0.0.1:{metrics_port}");
    let mut args = vec![
        "controller",
        "--kubeconfig",
        kubeconfig.to_str().unwrap_or_default(),
        "--dns-listen",
        &dns,
        "--metrics-addr",
        &metrics,
    ];
    args.extend_from_slice(extra);
    spawn_fedns(&args)
}

/// `dig +short` answers (sorted), over UDP or TCP. A timeout reads as no
/// answer; [`dig_reply`] tells the two apart.
pub fn dig(port: u16, name: &str, rtype: &str, tcp: bool) -> Vec<String> {
    let mut command = Command::new("dig");
    command.args([
        "+short",
        "+time=1",
        "+tries=1",
        "-p",
        &port.to_string(),
        "@127.0.0.1",
        name,
        rtype,
    ]);
    if tcp {
        command.arg("+tcp");
    }
    let out = command.output().expect("dig (Debian bind9-dnsutils) must be installed");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty() && !l.starts_with(";;"))
        .collect();
    lines.sort();
    saw(format!(
        "dig -p {port} {name} {rtype}{}: {lines:?}",
        if tcp { " +tcp" } else { "" }
    ));
    lines
}

/// `dig +noall +<section>` lines (owner, TTL, class, type, data).
pub fn dig_section(port: u16, name: &str, rtype: &str, section: &str) -> Vec<String> {
    let out = Command::new("dig")
        .args([
            "+noall",
            &format!("+{section}"),
            "+time=1",
            "+tries=1",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            rtype,
        ])
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// One UDP query (1 s, one try): `Some((RCODE, sorted answer data))`, or
/// `None` when no reply came in time. For checks that must not read a
/// timeout under load as an empty answer.
pub fn dig_reply(port: u16, name: &str, rtype: &str) -> Option<(String, Vec<String>)> {
    let out = Command::new("dig")
        .args([
            "+noall",
            "+comments",
            "+answer",
            "+time=1",
            "+tries=1",
            "-p",
            &port.to_string(),
            "@127.0.0.1",
            name,
            rtype,
        ])
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    let status = text
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(',').next().unwrap_or_default().to_owned());
    let mut answers: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect();
    answers.sort();
    saw(format!("dig -p {port} {name} {rtype}: {status:?} {answers:?}"));
    status.map(|status| (status, answers))
}

/// The RCODE `dig` reports (`NOERROR`, `NXDOMAIN`, ...), or "" on timeout.
pub fn dig_status(port: u16, name: &str, rtype: &str) -> String {
    dig_reply(port, name, rtype)
        .map(|(status, _)| status)
        .unwrap_or_default()
}

/// How long [`eventually`] waits: a generous bound, far above any period
/// the tests configure, so only a broken behaviour reaches it.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

/// Polls `check` until it holds ([`EVENTUALLY`] at most), printing the time
/// taken. On timeout the panic names what it waited for and what the
/// check's observation helpers ([`dig`], [`saw`]) saw last.
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut check: F) -> Duration {
    let started = Instant::now();
    let mut last = None;
    while started.elapsed() < EVENTUALLY {
        take_last_seen();
        if check() {
            let took = started.elapsed();
            println!("{what}: after {took:?}");
            return took;
        }
        last = take_last_seen().or(last);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{what}: not within {EVENTUALLY:?}; last seen: {}",
        last.as_deref().unwrap_or("(the check notes nothing)")
    );
}

/// Waits ([`EVENTUALLY`] at most) until the controller's `/debug/explain`
/// of `name` (at its metrics port) contains `needle`; returns the text.
pub async fn explained(metrics_port: u16, name: &str, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let (_, text) = http_get(&format!("http://127.0.0.1:{metrics_port}/debug/explain?name={name}")).await;
        if text.contains(needle) {
            println!("explained after {:?}: {needle}", started.elapsed());
            return text;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "/debug/explain of {name} without {needle:?} after {EVENTUALLY:?}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The host objects most end-to-end tests start from: Domain `myfed`
/// (zone `example.com`) and Namespace `ns`; a record follows after `---`.
pub const MYFED_HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
"#;

pub fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

/// GET `url` (plain HTTP on loopback) and return (status, body).
pub async fn http_get(url: &str) -> (u16, String) {
    use http_body_util::BodyExt;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let response = client.get(url.parse().unwrap()).await.expect("HTTP GET");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A metric's value from a controller's `/metrics` on 127.0.0.1:`port`,
/// its labelled series summed (0 when absent). A failed scrape fails the
/// test: reading it as 0 would hide what was measured.
pub async fn metric(port: u16, name: &str) -> f64 {
    // Through the tests' own HTTP client: a fresh machine has no curl.
    let (code, body) = http_get(&format!("http://127.0.0.1:{port}/metrics")).await;
    assert_eq!(code, 200, "/metrics answered {code}: {body}");
    body.lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|series| series == name || series.strip_prefix(name).is_some_and(|l| l.starts_with('{')))
        })
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .sum()
}

/// An HTTP CONNECT proxy on loopback (as one in front of a member's API
/// server, Karmada's `spec.proxyURL`), built on hyper's upgrades. It only
/// tunnels to 127.0.0.1 and counts the tunnels it opened.
pub struct ConnectProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Tunnels opened so far.
    pub tunnels: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

pub async fn connect_proxy() -> ConnectProxy {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use http_body_util::Empty;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counter = tunnels.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let counter = counter.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let counter = counter.clone();
                    async move {
                        let target = request.uri().authority().map(|a| a.to_string()).unwrap_or_default();
                        let status = if request.method() != hyper::Method::CONNECT {
                            hyper::StatusCode::METHOD_NOT_ALLOWED
                        } else if !target.starts_with("127.0.0.1:") {
                            hyper::StatusCode::FORBIDDEN
                        } else {
                            counter.fetch_add(1, Ordering::Relaxed);
                            tokio::spawn(async move {
                                let Ok(upgraded) = hyper::upgrade::on(request).await else {
                                    return;
                                };
                                let Ok(mut server) = tokio::net::TcpStream::connect(&target).await else {
                                    return;
                                };
                                let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut server).await;
                            });
                            hyper::StatusCode::OK
                        };
                        let mut response = hyper::Response::new(Empty::<bytes::Bytes>::new());
                        *response.status_mut() = status;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    ConnectProxy { url, tunnels }
}

/// kubectl with `kubeconfig`, run from the repository root; panics with
/// its output when it fails, else returns its standard output.
pub fn kubectl_at(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("kubectl (./scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "kubectl {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
