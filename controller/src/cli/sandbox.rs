//! `fedns sandbox`: a whole federation on this machine. A host cluster and
//! member clusters (Kubernetes API emulators on loopback), seeded from
//! `examples/sandbox/` (compiled in) or from a user's exported cluster
//! state (`--members-from`), the controller and the embedded DNS server in
//! this process, one printed line per published DNS change, and a local
//! control endpoint for `fedns sandbox fail|recover|cordon|uncordon` and
//! `break-lb|fix-lb`.
//!
//! The terminal is for people: the first screen ([`screen`]: what runs and
//! what to try, computed from the federation it runs), the change lines,
//! and errors that stop the sandbox (on standard error). Log lines go to
//! `<state-dir>/sandbox.log` (`--verbose`: standard error).
//!
//! With the built-in seed, each member's Service load balancer is an HTTP
//! responder on a loopback address of its own (127.0.10.1-3, one port), and
//! the seeded ServiceDNSRecord probes them (`spec.healthCheck`), so both
//! failure modes show: an API server down (`fail`) keeps the cluster in DNS
//! while its load balancer passes; a load balancer down (`break-lb`) takes it
//! out. Probes never leave 127.0.0.0/8: the seeded IngressDNSRecord (TEST-NET
//! addresses) has no health check, and neither has anything `--members-from`
//! generates.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use fedns_api::DNSEndpoint;
use fedns_sandbox::responder::Responder;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{watcher, WatchStreamExt};
use serde_json::json;
use tokio::sync::Notify;

use crate::cli::{ControllerArgs, Provider, SandboxAction, SandboxArgs};
use crate::federation::{Engine, Federation};

pub mod discovery;
pub mod screen;

/// The log file in the state dir (unless `--verbose`).
pub const LOG_FILE: &str = "sandbox.log";
/// The member that joins Karmada in pull mode with `--engine karmada`.
const KARMADA_PULL_MEMBER: &str = "eu-west-1";

/// Controller namespace in the sandbox host.
const NAMESPACE: &str = "fedns-system";
/// File in the state dir holding the control endpoint's address.
const CONTROL_FILE: &str = "control.addr";

/// The members' load balancers with the built-in seed: an HTTP responder
/// each, on these loopback addresses (the seeded Services' `status.loadBalancer`)
/// and one port shared by all (the seeded Services' port, `{{lb-port}}`).
const LOAD_BALANCERS: [(&str, [u8; 4]); 3] = [
    ("us-east-1", [127, 0, 10, 1]),
    ("us-west-2", [127, 0, 10, 2]),
    ("eu-west-1", [127, 0, 10, 3]),
];
/// Where each member's `fedns agent` keeps its ConfigMaps.
pub const AGENT_NAMESPACE: &str = "fedns-system";
/// The controller's probes come from this address (the kernel's choice for
/// a loopback destination); `isolate` refuses it.
const CONTROLLER_PROBE_SOURCE: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
/// Each member's agent probes from 127.0.20.N (N: the member's place in
/// the seed, from 1), an address of its own.
fn agent_source(index: usize) -> std::net::IpAddr {
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(
        127,
        0,
        20,
        u8::try_from(index + 1).unwrap_or(u8::MAX),
    ))
}

/// The seeded ServiceDNSRecord's `healthCheck.periodSeconds`.
const PROBE_PERIOD_SECONDS: u64 = 1;
/// The seeded ServiceDNSRecord's `healthCheck.failureThreshold`.
const PROBE_FAILURE_THRESHOLD: u64 = 2;
/// The seeded ServiceDNSRecord's `healthCheck.successThreshold`.
const PROBE_SUCCESS_THRESHOLD: u64 = 1;

/// The built-in seed, compiled in so the binary works from any folder.
const HOST_SEED: [(&str, &str); 2] = [
    (
        "examples/sandbox/host/10-federation.yaml",
        include_str!("../../../examples/sandbox/host/10-federation.yaml"),
    ),
    (
        "examples/sandbox/host/20-memberclusters.yaml",
        include_str!("../../../examples/sandbox/host/20-memberclusters.yaml"),
    ),
];
/// The host seed of `--engine`: the Domain and annotated templates.
const ENGINE_HOST_SEED: (&str, &str) = (
    "examples/sandbox/engine/10-templates.yaml",
    include_str!("../../../examples/sandbox/engine/10-templates.yaml"),
);
const MEMBER_SEED: [(&str, &str); 3] = [
    (
        "us-east-1",
        include_str!("../../../examples/sandbox/members/us-east-1/state.yaml"),
    ),
    (
        "us-west-2",
        include_str!("../../../examples/sandbox/members/us-west-2/state.yaml"),
    ),
    (
        "eu-west-1",
        include_str!("../../../examples/sandbox/members/eu-west-1/state.yaml"),
    ),
];

/// Dispatches `fedns sandbox [ACTION]`.
///
/// # Errors
/// Startup failures, or a control request the running sandbox refused.
pub async fn run(args: &SandboxArgs) -> anyhow::Result<()> {
    match &args.action {
        None => {
            let running = start(args).await?;
            running.print_intro();
            running.run_until_stopped().await
        }
        Some(SandboxAction::Fail { cluster, state_dir }) => control(state_dir, "fail", cluster).await,
        Some(SandboxAction::Recover { cluster, state_dir }) => control(state_dir, "recover", cluster).await,
        Some(SandboxAction::Cordon { cluster, state_dir }) => control(state_dir, "cordon", cluster).await,
        Some(SandboxAction::Uncordon { cluster, state_dir }) => control(state_dir, "uncordon", cluster).await,
        Some(SandboxAction::BreakLb { cluster, state_dir }) => control(state_dir, "break-lb", cluster).await,
        Some(SandboxAction::FixLb { cluster, state_dir }) => control(state_dir, "fix-lb", cluster).await,
        Some(SandboxAction::DrainEndpoints { cluster, state_dir }) => {
            control(state_dir, "drain-endpoints", cluster).await
        }
        Some(SandboxAction::RestoreEndpoints { cluster, state_dir }) => {
            control(state_dir, "restore-endpoints", cluster).await
        }
        Some(SandboxAction::Isolate { cluster, state_dir }) => control(state_dir, "isolate", cluster).await,
        Some(SandboxAction::Heal { cluster, state_dir }) => control(state_dir, "heal", cluster).await,
    }
}

/// A running sandbox.
pub struct Running {
    /// The clusters.
    pub federation: Federation,
    /// Where DNS answers.
    pub dns_addr: SocketAddr,
    /// The control endpoint.
    pub control_addr: SocketAddr,
    /// Each member's load balancer (its HTTP responder's address), with the
    /// built-in seed; empty with `--members-from`.
    pub load_balancers: BTreeMap<String, SocketAddr>,
    /// `--engine`.
    pub engine: Option<Engine>,
    /// The members in seed order (the first screen picks from it).
    order: Vec<String>,
    /// Seeded documents of kinds the emulators do not serve.
    skipped: Vec<String>,
    /// Where log lines go, unless `--verbose`.
    log_file: Option<PathBuf>,
    /// The load balancers are probed (the built-in seed's healthCheck).
    probed: bool,
    /// Lets the change lines start once the first screen is printed.
    intro_printed: Arc<Notify>,
    stop: Arc<Notify>,
    /// The controller's outcome, sent when it has stopped and its runtime
    /// (every task it spawned) is gone.
    controller: Option<tokio::sync::oneshot::Receiver<anyhow::Result<()>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The Cloud DNS stand-in (`--provider google-clouddns`).
    pub clouddns: Option<fedns_sandbox::clouddns::CloudDns>,
    /// Each member's discovery replica (`<state-dir>/<member>.dns`).
    pub discovery: Vec<discovery::MemberReplica>,
    /// Each member's `fedns agent` (a vantage point), with the built-in
    /// seed.
    pub agents: Vec<crate::cli::agent::Agent>,
}

/// Where to look at what the google-clouddns provider published.
pub fn clouddns_lines(dns: &fedns_sandbox::clouddns::CloudDns) -> String {
    let rrsets = format!("{}/managedZones/{CLOUDDNS_ZONE}/rrsets", dns.base_url(CLOUDDNS_PROJECT));
    format!(
        "\nCloud DNS stand-in (--provider google-clouddns): managed zone {CLOUDDNS_ZONE} (example.com.) in project {CLOUDDNS_PROJECT}\n  \
         curl -s -H 'Authorization: Bearer {}' {rrsets}\n\n",
        dns.token()
    )
}

struct Seed {
    members: Vec<(String, Vec<PathBuf>, Option<String>)>,
}

fn member_seed(args: &SandboxArgs) -> anyhow::Result<Seed> {
    let Some(dir) = &args.members_from else {
        return Ok(Seed {
            members: MEMBER_SEED
                .iter()
                .map(|(name, text)| (name.to_string(), Vec::new(), Some(text.to_string())))
                .collect(),
        });
    };
    let mut members = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        fedns_api::names::validate_label(&name)
            .with_context(|| format!("{}: a member folder name must be a DNS label", folder.display()))?;
        members.push((name, vec![folder], None));
    }
    anyhow::ensure!(!members.is_empty(), "{} has no member sub-folders", dir.display());
    // Read every file before starting anything: a malformed one stops here,
    // with file and line.
    for (_, paths, _) in &members {
        fedns_sandbox::check_manifests(paths)?;
    }
    Ok(Seed { members })
}

/// Starts the federation, the controller and the printers.
///
/// # Errors
/// A seed that does not parse (file:line), or a port that cannot be bound.
pub async fn start(args: &SandboxArgs) -> anyhow::Result<Running> {
    let seed = member_seed(args)?;
    check_providers(args)?;
    check_dns_listen(args.dns_listen)?;
    let log_file = args.log_file();
    if let Some(path) = &log_file {
        // Named on the first screen: it exists even when the caller sends
        // log lines elsewhere (tests).
        std::fs::create_dir_all(&args.state_dir).with_context(|| format!("creating {}", args.state_dir.display()))?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
    }
    tracing::info!(state_dir = %args.state_dir.display(), "fedns sandbox starting");
    // The load balancers first: their port goes into the seeded Services.
    let responders = if args.members_from.is_some() {
        BTreeMap::new()
    } else {
        start_load_balancers().await?
    };
    let lb_port = responders.values().next().map_or(0, |r| r.address().port());
    let names: Vec<&str> = seed.members.iter().map(|(n, _, _)| n.as_str()).collect();
    let federation = Federation::start(&args.state_dir, NAMESPACE, &names).await?;
    let mut skipped = Vec::new();
    for (name, paths, text) in &seed.members {
        let member = federation.member(name)?;
        let report = match text {
            Some(text) => member.seed_yaml(
                &format!("examples/sandbox/members/{name}/state.yaml"),
                &text.replace("{{lb-port}}", &lb_port.to_string()),
            )?,
            None => member.seed_paths(paths)?,
        };
        for item in &report.skipped {
            tracing::warn!(member = %name, "skipped (kind not emulated): {item}");
            skipped.push(item.clone());
        }
    }
    if args.members_from.is_some() {
        seed_host_for_exported_state(&federation)?;
    } else if let Some(engine) = args.engine {
        federation.install_engine(engine)?;
        for name in federation.members.keys() {
            // One Karmada member in pull mode: reached through the host's
            // cluster proxy, as karmada-aggregated-apiserver serves it; one
            // Clusternet child through the hub's socket proxy.
            let extra = match engine {
                Engine::Karmada if name == KARMADA_PULL_MEMBER => json!({"syncMode": "Pull"}),
                Engine::Clusternet if name == KARMADA_PULL_MEMBER => json!({"status": {"useSocket": true}}),
                _ => json!({}),
            };
            federation.register_engine(engine, name, extra)?;
        }
        let (origin, text) = ENGINE_HOST_SEED;
        federation.host.seed_yaml(origin, text)?;
    } else {
        for (origin, text) in HOST_SEED {
            federation.host.seed_yaml(origin, &federation.render(text))?;
        }
    }

    // Only the built-in seed's ServiceDNSRecord probes the load balancers;
    // the records --engine generates have no healthCheck.
    let probed = !responders.is_empty() && args.engine.is_none();
    let stop = Arc::new(Notify::new());
    let mut controller_args = ControllerArgs {
        kubeconfig: Some(args.state_dir.join("host.kubeconfig")),
        namespace: NAMESPACE.into(),
        provider: vec![Provider::Embedded],
        owner_id: "fedns".into(),
        txt_wildcard_replacement: None,
        etcd: crate::cli::EtcdArgs {
            endpoints: Vec::new(),
            prefix: "/skydns".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            username: None,
            password: None,
        },
        route53: Default::default(),
        google: Default::default(),
        dns_listen: vec![args.dns_listen],
        udp_workers: Some(1),
        // No response rate limiting in the sandbox.
        rrl: Default::default(),
        metrics_addr: args.metrics_addr,
        resolver: None,
        geoip_db: None,
        leader_elect: false,
        resync_interval: 60,
        serial_activation_delay: 1000,
        max_object_bytes: crate::records::object_size::DEFAULT_MAX_OBJECT_BYTES,
        workers: 8,
        probe_concurrency: 64,
        // Each member runs an agent: health from three vantage points.
        vantage_namespace: probed.then(|| AGENT_NAMESPACE.to_owned()),
        sources: crate::cli::SourceArgs {
            member_source: vec![args
                .engine
                .map_or(crate::members::MemberSource::Fedns, Engine::member_source)],
            auto_records: args.engine.is_some(),
            ..Default::default()
        },
    };
    let clouddns = start_clouddns(args, &mut controller_args).await?;
    if probed {
        // deploy/agent/ creates the agents' namespace in each member before
        // the controller writes probe targets there; so does the sandbox,
        // or the controller's first write to every member fails.
        for member in seed.members.iter().map(|(name, _, _)| name) {
            create_agent_namespace(&args.state_dir, member).await?;
        }
    }
    let controller = spawn_controller(controller_args, stop.clone())?;
    let intro_printed = Arc::new(Notify::new());
    let mut tasks = vec![tokio::spawn(print_changes(federation.clone(), intro_printed.clone()))];
    let load_balancers = responders.iter().map(|(name, r)| (name.clone(), r.address())).collect();
    let (control_addr, control_task) = serve_control(Control {
        federation: federation.clone(),
        responders,
        engine: args.engine,
        probed,
    })
    .await?;
    tasks.push(control_task);
    std::fs::write(args.state_dir.join(CONTROL_FILE), control_addr.to_string())
        .with_context(|| format!("writing {}", args.state_dir.join(CONTROL_FILE).display()))?;
    let member_names: Vec<String> = seed.members.iter().map(|(name, _, _)| name.clone()).collect();
    let discovery = discovery::start(&federation, NAMESPACE, &member_names).await?;
    let mut agents = Vec::new();
    if probed {
        for (index, member) in member_names.iter().enumerate() {
            let kubeconfig = args.state_dir.join(format!("{member}.kubeconfig"));
            let client = crate::kube_client::client(Some(&kubeconfig))
                .await
                .with_context(|| format!("a client for {member}'s agent"))?;
            let source = agent_source(index);
            agents.push(
                crate::cli::agent::Agent::start(
                    client,
                    AGENT_NAMESPACE.into(),
                    Some(source),
                    64,
                    crate::dataplane::ProbeMetrics::default(),
                )
                .with_context(|| format!("starting {member}'s agent"))?,
            );
            tracing::info!(member = %member, source = %source, "member's fedns agent probing");
        }
    }
    Ok(Running {
        federation,
        dns_addr: args.dns_listen,
        control_addr,
        load_balancers,
        engine: args.engine,
        order: seed.members.iter().map(|(name, _, _)| name.clone()).collect(),
        skipped,
        log_file,
        probed,
        intro_printed,
        stop,
        controller: Some(controller),
        tasks,
        clouddns,
        discovery,
        agents,
    })
}

/// Project and managed zone of the Cloud DNS stand-in (`--provider
/// google-clouddns`).
const CLOUDDNS_PROJECT: &str = "fedns-sandbox";
const CLOUDDNS_ZONE: &str = "example-com";

/// Fails early on a `--provider` the sandbox cannot emulate.
fn check_providers(args: &SandboxArgs) -> anyhow::Result<()> {
    match args
        .provider
        .iter()
        .find(|p| !matches!(p, Provider::Embedded | Provider::GoogleClouddns))
    {
        Some(other) => anyhow::bail!(
            "fedns sandbox emulates Cloud DNS only: --provider {other:?} is not available (embedded, google-clouddns)"
        ),
        None => Ok(()),
    }
}

/// `--provider google-clouddns`: starts a Cloud DNS API stand-in on
/// loopback with a managed zone for the sandbox's domain (example.com), and
/// points the controller's google-clouddns provider at it.
///
/// # Errors
/// The stand-in not starting.
async fn start_clouddns(
    args: &SandboxArgs,
    controller: &mut ControllerArgs,
) -> anyhow::Result<Option<fedns_sandbox::clouddns::CloudDns>> {
    use fedns_sandbox::clouddns::{CloudDns, CloudDnsConfig, Visibility};
    if !args.provider.contains(&Provider::GoogleClouddns) {
        return Ok(None);
    }
    let dns = CloudDns::start(CloudDnsConfig {
        projects: vec![CLOUDDNS_PROJECT.into()],
        change_delay: std::time::Duration::from_millis(200),
        ..CloudDnsConfig::default()
    })
    .await
    .context("starting the Cloud DNS stand-in")?;
    dns.create_zone(CLOUDDNS_PROJECT, CLOUDDNS_ZONE, "example.com.", Visibility::Public)
        .context("creating the stand-in's managed zone")?;
    controller.provider.push(Provider::GoogleClouddns);
    controller.google = crate::cli::GoogleArgs {
        project: Some(CLOUDDNS_PROJECT.into()),
        endpoint: Some(dns.url()),
        access_token: Some(dns.token().to_owned()),
        ..Default::default()
    };
    Ok(Some(dns))
}

/// Fails early, in clear words, when the DNS address cannot be bound (the
/// controller binds it only once its caches are synced).
fn check_dns_listen(address: SocketAddr) -> anyhow::Result<()> {
    let hint = "another sandbox running? pick another address with --dns-listen";
    std::net::UdpSocket::bind(address).with_context(|| format!("cannot answer DNS on {address} (UDP) ({hint})"))?;
    std::net::TcpListener::bind(address).with_context(|| format!("cannot answer DNS on {address} (TCP) ({hint})"))?;
    Ok(())
}

impl Running {
    /// Prints the first screen, then lets the change lines follow.
    pub fn print_intro(&self) {
        print!("{}", self.screen());
        if let Some(dns) = &self.clouddns {
            print!("{}", clouddns_lines(dns));
        }
        self.intro_printed.notify_one();
    }

    /// Runs until Ctrl-C (or SIGTERM), then stops everything. A controller
    /// that stops on its own stops the sandbox, with its error.
    ///
    /// # Errors
    /// The controller stopped (e.g. a port it needs is taken).
    pub async fn run_until_stopped(mut self) -> anyhow::Result<()> {
        let Some(mut controller) = self.controller.take() else {
            return Ok(());
        };
        let stopped = tokio::select! {
            () = crate::http::shutdown_signal() => None,
            result = &mut controller => Some(result),
        };
        let outcome = match stopped {
            None => {
                self.controller = Some(controller);
                Ok(())
            }
            Some(Ok(Ok(()))) => Err(anyhow::anyhow!("the controller stopped")),
            Some(Ok(Err(e))) => Err(e.context("the controller stopped")),
            Some(Err(e)) => Err(anyhow::anyhow!("the controller stopped: {e}")),
        };
        self.shutdown().await;
        outcome
    }

    /// Stops the controller, the emulators and the control endpoint.
    pub async fn shutdown(self) {
        self.stop.notify_one();
        if let Some(controller) = self.controller {
            match tokio::time::timeout(std::time::Duration::from_secs(10), controller).await {
                Ok(Ok(Err(e))) => eprintln!("fedns sandbox: the controller stopped with an error: {e:#}"),
                Err(_) => eprintln!("fedns sandbox: the controller did not stop within 10 s"),
                _ => {}
            }
        }
        for task in self.tasks {
            task.abort();
        }
        for replica in self.discovery {
            replica.shutdown().await;
        }
        self.federation.stop();
        let _ = std::fs::remove_file(self.federation.state_dir.join(CONTROL_FILE));
        println!("fedns sandbox stopped");
    }
}

/// Creates the agents' namespace in `member` (already there: fine).
async fn create_agent_namespace(state_dir: &Path, member: &str) -> anyhow::Result<()> {
    let client = crate::kube_client::client(Some(&state_dir.join(format!("{member}.kubeconfig"))))
        .await
        .with_context(|| format!("a client for {member}"))?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(AGENT_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&Default::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {AGENT_NAMESPACE} in {member}")),
    }
}

/// Runs the controller on a runtime of its own, on its own thread, until
/// `stop` is notified. The controller spawns watchers, workers and probes
/// that outlive `run_until`; dropping their runtime when it returns stops
/// every one of them, so none is left retrying against emulators the
/// sandbox stops next (a flood of connection errors in the log, and CPU
/// taken from whatever runs after it in the same process).
///
/// # Errors
/// The thread or the runtime cannot be created.
fn spawn_controller(
    args: ControllerArgs,
    stop: Arc<Notify>,
) -> anyhow::Result<tokio::sync::oneshot::Receiver<anyhow::Result<()>>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fedns-controller")
        .enable_all()
        .build()
        .context("creating the controller's runtime")?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("fedns-controller".into())
        .spawn(move || {
            let result = runtime.block_on(crate::cli::controller::run_until(&args, async move {
                stop.notified().await;
            }));
            // Blocking tasks (file reads, DNS lookups) get a moment; the
            // rest are cancelled here.
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            let _ = done_tx.send(result);
        })
        .context("starting the controller's thread")?;
    Ok(done_rx)
}

/// For `--members-from`: a Domain `myfed` for example.com with a
/// ServiceDNSRecord per LoadBalancer Service found, and a Domain plus an
/// IngressDNSRecord per Ingress host, so every name fedns would publish for
/// the exported clusters is published.
fn seed_host_for_exported_state(federation: &Federation) -> anyhow::Result<()> {
    let mut services: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ingresses: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for member in federation.members.values() {
        let store = member.store();
        if let Some(info) = store.resource("", "v1", "services") {
            let list = store.list(&info, &Default::default(), None, None)?;
            for svc in list["items"].as_array().into_iter().flatten() {
                if svc.pointer("/spec/type").and_then(|t| t.as_str()) == Some("LoadBalancer") {
                    let ns = svc
                        .pointer("/metadata/namespace")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default();
                    let name = svc
                        .pointer("/metadata/name")
                        .and_then(|v| v.as_str())
                        .unwrap_or_default();
                    services.insert((ns.into(), name.into()));
                }
            }
        }
        if let Some(info) = store.resource("networking.k8s.io", "v1", "ingresses") {
            let list = store.list(&info, &Default::default(), None, None)?;
            for ing in list["items"].as_array().into_iter().flatten() {
                let ns = ing
                    .pointer("/metadata/namespace")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                let name = ing
                    .pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                let hosts = ingresses.entry((ns.into(), name.into())).or_default();
                for rule in ing
                    .pointer("/spec/rules")
                    .and_then(|r| r.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(host) = rule.get("host").and_then(|h| h.as_str()) {
                        if let Ok(host) = fedns_api::names::normalize_hostname(host) {
                            hosts.insert(host);
                        }
                    }
                }
            }
        }
    }
    let mut docs = vec![
        json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
               "metadata": {"name": "myfed", "namespace": NAMESPACE},
               "spec": {"domain": "example.com", "nameServers": ["ns1.example.com"],
                        "nameServerAddresses": [{"name": "ns1.example.com", "addresses": ["127.0.0.1"]}],
                        "transfer": {"allow": ["127.0.0.0/8"]}}}),
    ];
    let mut zones: BTreeSet<String> = BTreeSet::new();
    for (ns, name) in &services {
        docs.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "ServiceDNSRecord",
                         "metadata": {"name": name, "namespace": ns}, "spec": {"domainRef": "myfed"}}),
        );
    }
    for ((ns, name), hosts) in &ingresses {
        if hosts.is_empty() {
            continue;
        }
        for host in hosts {
            if let Some((_, parent)) = host.split_once('.') {
                if parent.contains('.') && parent != "example.com" {
                    zones.insert(parent.to_owned());
                }
            }
        }
        docs.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "IngressDNSRecord",
                         "metadata": {"name": name, "namespace": ns}, "spec": {"hosts": hosts}}),
        );
    }
    for zone in zones {
        docs.push(
            json!({"apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "Domain",
                         "metadata": {"name": format!("zone-{}", zone.replace('.', "-")), "namespace": NAMESPACE},
                         "spec": {"domain": zone}}),
        );
    }
    for name in federation.members.keys() {
        federation.register(name, json!({}))?;
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": docs});
    federation
        .host
        .seed_yaml("generated from --members-from", &serde_json::to_string(&list)?)?;
    Ok(())
}

/// Which cluster each load balancer address belongs to, for the change lines.
fn address_owners(federation: &Federation) -> BTreeMap<String, String> {
    let mut owners = BTreeMap::new();
    for (name, member) in &federation.members {
        let store = member.store();
        for (group, plural) in [("", "services"), ("networking.k8s.io", "ingresses")] {
            let Some(info) = store.resource(group, "v1", plural) else {
                continue;
            };
            let Ok(list) = store.list(&info, &Default::default(), None, None) else {
                continue;
            };
            for item in list["items"].as_array().into_iter().flatten() {
                for ingress in item
                    .pointer("/status/loadBalancer/ingress")
                    .and_then(|i| i.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(ip) = ingress.get("ip").and_then(|i| i.as_str()) {
                        owners.insert(ip.to_owned(), name.clone());
                    }
                }
            }
        }
    }
    owners
}

/// Prints `+ name TYPE target (cluster)` / `- ...` for every change of the
/// published records (the DNSEndpoints), as they happen.
async fn print_changes(federation: Federation, intro_printed: Arc<Notify>) {
    // The first screen comes first.
    intro_printed.notified().await;
    let client = match crate::kube_client::client(Some(&federation.state_dir.join("host.kubeconfig"))).await {
        Ok(client) => client,
        Err(e) => {
            // Said where people look: without it the screen would promise
            // changes that never come.
            eprintln!("fedns sandbox: cannot follow the published records: {e:#}");
            return;
        }
    };
    let (reader, writer) = kube::runtime::reflector::store();
    let stream = kube::runtime::reflector(
        writer,
        watcher(Api::<DNSEndpoint>::all(client), watcher::Config::default()),
    )
    .default_backoff()
    .touched_objects();
    futures::pin_mut!(stream);
    let mut shown: BTreeSet<(String, String, String)> = BTreeSet::new();
    while stream.next().await.is_some() {
        // Let a burst of writes land before diffing.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now: BTreeSet<(String, String, String)> = reader
            .state()
            .iter()
            .flat_map(|e| e.spec.endpoints.clone())
            .flat_map(|e| {
                let t = e.record_type.to_string();
                e.targets
                    .into_iter()
                    .map(move |target| (e.dns_name.clone(), t.clone(), target))
            })
            .collect();
        let owners = address_owners(&federation);
        let label = |target: &str| owners.get(target).map(|c| format!(" ({c})")).unwrap_or_default();
        for (name, rtype, target) in shown.difference(&now) {
            println!("- {name} {rtype} {target}{}", label(target));
        }
        for (name, rtype, target) in now.difference(&shown) {
            println!("+ {name} {rtype} {target}{}", label(target));
        }
        shown = now;
    }
}

/// Starts one HTTP responder per member of the built-in seed, on its
/// loopback address, all on one free port (found by the first; tried again
/// on another if a later address has it taken).
async fn start_load_balancers() -> anyhow::Result<BTreeMap<String, Arc<Responder>>> {
    let mut last_error = None;
    for _ in 0..20 {
        let mut started = BTreeMap::new();
        let mut port = 0;
        let mut failed = None;
        for (name, ip) in LOAD_BALANCERS {
            let address = SocketAddr::from((ip, port));
            match Responder::start(address, None).await {
                Ok(responder) => {
                    port = responder.address().port();
                    started.insert(name.to_owned(), Arc::new(responder));
                }
                Err(e) => {
                    failed =
                        Some(anyhow::Error::new(e).context(format!("starting {name}'s load balancer on {address}")));
                    break;
                }
            }
        }
        match failed {
            None => return Ok(started),
            // Dropping the ones started stops them.
            Some(e) if port != 0 => last_error = Some(e),
            // The first address cannot be bound at all.
            Some(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| anyhow::anyhow!("no port free on every load balancer address")))
}

/// What the control endpoint acts on.
struct Control {
    federation: Federation,
    responders: BTreeMap<String, Arc<Responder>>,
    engine: Option<Engine>,
    /// A record probes the responders (not with --engine).
    probed: bool,
}

async fn serve_control(control: Control) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = Router::new()
        .route("/{action}/{cluster}", post(handle_control))
        .with_state(Arc::new(control));
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "sandbox control endpoint stopped");
        }
    });
    Ok((addr, task))
}

async fn handle_control(
    State(control): State<Arc<Control>>,
    UrlPath((action, cluster)): UrlPath<(String, String)>,
) -> (StatusCode, String) {
    let federation = &control.federation;
    let Ok(member) = federation.member(&cluster) else {
        let known: Vec<&String> = federation.members.keys().collect();
        return (
            StatusCode::NOT_FOUND,
            format!("no member cluster {cluster}; the sandbox has {known:?}\n"),
        );
    };
    let result = match action.as_str() {
        "fail" => {
            member.stop();
            Ok(if !control.probed {
                format!("{cluster}: API server stopped; it leaves DNS after the health check notices (about 3 s)\n")
            } else {
                format!(
                    "{cluster}: API server stopped; nginx keeps its addresses while its load balancer passes \
                     (static stability); shop.example.com (no healthCheck) drops them in about 3 s, \
                     unless no cluster would be left\n"
                )
            })
        }
        "break-lb" | "fix-lb" => match control.responders.get(&cluster) {
            None => Err(format!(
                "{cluster} has no sandbox load balancer (only the built-in seed has them)"
            )),
            Some(_) if !control.probed => Err(format!(
                "with --engine no record probes the load balancers (generated records have no healthCheck), \
                 so {action} would change nothing in DNS; use fail/recover"
            )),
            Some(responder) if action == "break-lb" => {
                responder.stop();
                Ok(format!(
                    "{cluster}: load balancer {} stopped (connections refused); it leaves nginx's names after \
                     {PROBE_FAILURE_THRESHOLD} failed probes {PROBE_PERIOD_SECONDS} s apart (within {} s)\n",
                    responder.address(),
                    PROBE_PERIOD_SECONDS * PROBE_FAILURE_THRESHOLD + 1
                ))
            }
            Some(responder) => responder
                .resume()
                .await
                .map(|()| {
                    format!(
                        "{cluster}: load balancer {} answering again; it returns after {PROBE_SUCCESS_THRESHOLD} passing probe\n",
                        responder.address()
                    )
                })
                .map_err(|e| format!("{cluster}: load balancer {}: {e}", responder.address())),
        },
        "isolate" | "heal" => match control.responders.get(&cluster) {
            None => Err(format!(
                "{cluster} has no sandbox load balancer (only the built-in seed has them)"
            )),
            Some(_) if !control.probed => Err(format!(
                "with --engine no record probes the load balancers, so {action} would change nothing in DNS"
            )),
            Some(responder) if action == "isolate" => {
                responder.refuse(CONTROLLER_PROBE_SOURCE);
                Ok(format!(
                    "{cluster}: load balancer {} refuses the controller's probes (from {CONTROLLER_PROBE_SOURCE}) and \
                     serves the agents; it stays in DNS (three of four vantage points, the members' agents, reach it): \
                     fedns explain nginx.ns.myfed.svc.example.com shows the disagreement\n",
                    responder.address()
                ))
            }
            Some(responder) => {
                responder.admit(CONTROLLER_PROBE_SOURCE);
                Ok(format!(
                    "{cluster}: load balancer {} serves the controller's probes again\n",
                    responder.address()
                ))
            }
        },
        "recover" => member
            .resume()
            .await
            .map(|_| format!("{cluster}: API server serving again; it returns after 2 successful probes\n"))
            .map_err(|e| e.to_string()),
        "drain-endpoints" | "restore-endpoints" => {
            discovery::set_nginx_ready(federation, &cluster, action == "restore-endpoints")
        }
        "cordon" | "uncordon" if control.engine.is_some() => Err(format!(
            "{action} sets a MemberCluster's spec.cordoned; with --engine the members are the engine's clusters, \
             which fedns never writes (use fail/recover)"
        )),
        "cordon" | "uncordon" => {
            let cordoned = action == "cordon";
            let store = federation.host.store();
            match store.resource("core.fedns.io", "v1alpha1", "memberclusters") {
                Some(info) => store
                    .patch(
                        &info,
                        Some(NAMESPACE),
                        &cluster,
                        fedns_sandbox::PatchKind::Merge,
                        json!({"spec": {"cordoned": cordoned}}),
                        None,
                        fedns_sandbox::Target::Main,
                    )
                    .map(|_| format!("{cluster}: spec.cordoned = {cordoned}\n"))
                    .map_err(|e| e.to_string()),
                None => Err("the MemberCluster CRD is not installed".into()),
            }
        }
        other => Err(format!(
            "unknown action {other}; use fail, recover, cordon, uncordon, break-lb, fix-lb, drain-endpoints or restore-endpoints"
        )),
    };
    match result {
        Ok(message) => {
            print!("{message}");
            (StatusCode::OK, message)
        }
        Err(message) => (StatusCode::BAD_REQUEST, format!("{message}\n")),
    }
}

/// Sends `action` for `cluster` to the sandbox running with `state_dir`.
///
/// # Errors
/// No sandbox runs there, or it refused the request.
pub async fn control(state_dir: &Path, action: &str, cluster: &str) -> anyhow::Result<()> {
    use http_body_util::BodyExt;
    let file = state_dir.join(CONTROL_FILE);
    let addr = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "no running sandbox found ({} is missing; start one with `fedns sandbox`)",
            file.display()
        )
    })?;
    let uri: http::Uri = format!("http://{}/{action}/{cluster}", addr.trim()).parse()?;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let request = http::Request::post(uri).body(http_body_util::Empty::new())?;
    let response = client
        .request(request)
        .await
        .with_context(|| format!("the sandbox at {} does not answer (is it still running?)", addr.trim()))?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&body);
    anyhow::ensure!(status.is_success(), "{}", text.trim());
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn documents(text: &str) -> Vec<serde_json::Value> {
        serde_yaml_ng::Deserializer::from_str(text)
            .map(|doc| serde_json::Value::deserialize(doc).expect("YAML"))
            .collect()
    }

    /// The printed timings come from constants; they must be the seed's.
    #[test]
    fn the_seed_matches_the_constants_and_probes_only_loopback() {
        let record = documents(HOST_SEED[0].1)
            .into_iter()
            .find(|d| d["kind"] == "ServiceDNSRecord")
            .expect("a ServiceDNSRecord");
        let check = &record["spec"]["healthCheck"];
        assert_eq!(check["periodSeconds"], PROBE_PERIOD_SECONDS);
        assert_eq!(check["failureThreshold"], PROBE_FAILURE_THRESHOLD);
        assert_eq!(check["successThreshold"], PROBE_SUCCESS_THRESHOLD);
        assert!(documents(HOST_SEED[0].1)
            .iter()
            .filter(|d| d["kind"] == "IngressDNSRecord")
            .all(|d| d["spec"].get("healthCheck").is_none()));
        for ((name, text), (lb_name, ip)) in MEMBER_SEED.iter().zip(LOAD_BALANCERS) {
            assert_eq!(*name, lb_name);
            let service = documents(&text.replace("{{lb-port}}", "8080"))
                .into_iter()
                .find(|d| d["kind"] == "Service")
                .expect("a Service");
            let want: Vec<serde_json::Value> = vec![json!({"ip": std::net::Ipv4Addr::from(ip).to_string()})];
            assert_eq!(service["status"]["loadBalancer"]["ingress"], json!(want), "{name}");
            assert_eq!(service["spec"]["ports"][0]["port"], 8080, "{name}");
        }
    }
}
