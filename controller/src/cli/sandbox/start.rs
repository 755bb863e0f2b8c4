//! `fedns sandbox` started: the emulated federation, the load balancers,
//! the controller on a runtime of its own, the agents, the discovery
//! replicas and the control endpoint, and the dispatch of
//! `fedns sandbox ACTION` to a running sandbox.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use fedns_standins::responder::Responder;
use kube::api::Api;
use serde_json::json;
use tokio::sync::Notify;

use super::changes::print_changes;
use super::control::{control, serve_control, Control, CONTROL_FILE};
use super::discovery;
use super::running::{Running, CLOUDDNS_PROJECT, CLOUDDNS_ZONE, EXTERNAL_DNS_ADDRESS, EXTERNAL_DNS_NAME};
use super::seed::{
    agent_source, member_seed, seed_host_for_exported_state, AGENT_NAMESPACE, ENGINE_HOST_SEED, HOST_SEED,
    KARMADA_PULL_MEMBER, LOAD_BALANCERS, NAMESPACE,
};
use crate::cli::{ControllerArgs, Provider, SandboxAction, SandboxArgs};
use crate::federation::{Engine, Federation};

/// The log file in the state dir (unless `--verbose`).
pub const LOG_FILE: &str = "sandbox.log";

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
            Some(text) => {
                // Members with Gateways get the Gateway API CRDs first.
                if text.contains("kind: Gateway\n") {
                    member.seed_yaml(
                        "gateway-api v1.6.1 CRDs",
                        &fedns_standins::upstream_crds::gateway_api_yaml(),
                    )?;
                }
                member.seed_yaml(
                    &format!("examples/sandbox/members/{name}/state.yaml"),
                    &text.replace("{{lb-port}}", &lb_port.to_string()),
                )?
            }
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
        webhook: Default::default(),
        dns_listen: vec![args.dns_listen],
        udp_workers: Some(1),
        // No response rate limiting in the sandbox.
        rrl: Default::default(),
        // A sandbox starts from its seed every time.
        snapshot: Default::default(),
        metrics_addr: args.metrics_addr,
        // On the metrics address (the sandbox's is loopback).
        debug_addr: None,
        shutdown_drain: 0,
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
    let webhook = start_webhook(args, &mut controller_args).await?;
    let webhook_provider = push_as_external_dns(args).await?;
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
    // A stand-in Gateway controller per member with Gateways: their
    // address is the member's load balancer (`break-lb` breaks it too).
    for (name, responder) in &responders {
        if let Ok(member) = federation.member(name) {
            let address = vec![("IPAddress".to_owned(), responder.address().ip().to_string())];
            tasks.push(tokio::spawn(fedns_standins::gateway_controller::run(
                member.store().clone(),
                address,
                std::time::Duration::from_millis(300),
            )));
        }
    }
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
        webhook,
        webhook_provider,
        discovery,
        agents,
    })
}

/// Fails early on a `--provider` the sandbox cannot emulate.
pub(super) fn check_providers(args: &SandboxArgs) -> anyhow::Result<()> {
    match args
        .provider
        .iter()
        .find(|p| !matches!(p, Provider::Embedded | Provider::GoogleClouddns | Provider::Webhook))
    {
        Some(other) => anyhow::bail!(
            "fedns sandbox emulates Cloud DNS and an external-dns webhook provider only: --provider {other:?} is not available (embedded, google-clouddns, webhook)"
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
pub(super) async fn start_clouddns(
    args: &SandboxArgs,
    controller: &mut ControllerArgs,
) -> anyhow::Result<Option<fedns_standins::clouddns::CloudDns>> {
    use fedns_standins::clouddns::{CloudDns, CloudDnsConfig, Visibility};
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

/// `--provider webhook`: starts an external-dns webhook provider stand-in
/// on loopback (an in-memory zone taking example.com, with a TTL floor of
/// 60 s in its adjustendpoints, as many real providers have) and points the
/// controller's webhook provider at it.
///
/// # Errors
/// The stand-in not starting.
pub(super) async fn start_webhook(
    args: &SandboxArgs,
    controller: &mut ControllerArgs,
) -> anyhow::Result<Option<Arc<fedns_standins::webhook_provider::WebhookProvider>>> {
    use fedns_standins::webhook_provider::{WebhookProvider, WebhookProviderConfig};
    if !args.provider.contains(&Provider::Webhook) {
        return Ok(None);
    }
    let provider = WebhookProvider::start(WebhookProviderConfig {
        domain_filter: vec!["example.com".into()],
        min_ttl: 60,
        ..WebhookProviderConfig::default()
    })
    .await
    .context("starting the webhook provider stand-in")?;
    controller.provider.push(Provider::Webhook);
    controller.webhook = crate::cli::WebhookArgs {
        urls: vec![provider.url()],
        ..Default::default()
    };
    Ok(Some(Arc::new(provider)))
}

/// `--provider webhook`, the other way round: starts `fedns
/// webhook-provider` in process (DNSEndpoint `ns/external-dns-sandbox`)
/// and pushes one record into it as an external-dns would (negotiation,
/// adjustendpoints, the record and its TXT registry record); the
/// controller then answers it. Returns the webhook provider's URL.
///
/// # Errors
/// The server not starting, or the push refused.
pub(super) async fn push_as_external_dns(args: &SandboxArgs) -> anyhow::Result<Option<String>> {
    use fedns_providers::webhook::api::{Changes, Client, Retry, WireEndpoint};
    if !args.provider.contains(&Provider::Webhook) {
        return Ok(None);
    }
    let host = crate::kube_client::client(Some(&args.state_dir.join("host.kubeconfig")))
        .await
        .context("a client of the host")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the webhook provider")?;
    let url = format!("http://{}", listener.local_addr()?);
    crate::cli::webhook_provider::serve(
        listener,
        crate::cli::webhook_provider::WebhookServer {
            client: host,
            namespace: "ns".into(),
            owner: "sandbox".into(),
            domain_namespace: NAMESPACE.into(),
            token: None,
            metrics: Default::default(),
        },
    );
    let external_dns = Client::new(&url, std::time::Duration::from_secs(15), 32 << 20).map_err(anyhow::Error::msg)?;
    let filter = external_dns
        .negotiate(Retry {
            attempts: 3,
            initial: std::time::Duration::from_millis(200),
        })
        .await
        .map_err(|e| anyhow::anyhow!("negotiating with fedns webhook-provider: {e}"))?;
    anyhow::ensure!(
        filter.matches(EXTERNAL_DNS_NAME),
        "fedns webhook-provider does not offer {EXTERNAL_DNS_NAME} ({})",
        filter.describe()
    );
    let record = WireEndpoint {
        dns_name: EXTERNAL_DNS_NAME.into(),
        targets: vec![EXTERNAL_DNS_ADDRESS.into()],
        record_type: "A".into(),
        record_ttl: 30,
        ..WireEndpoint::default()
    };
    let mut create = external_dns
        .adjust(&[record])
        .await
        .map_err(|e| anyhow::anyhow!("adjustendpoints: {e}"))?;
    let mut registry = WireEndpoint {
        dns_name: format!("a-{EXTERNAL_DNS_NAME}"),
        targets: vec![
            "\"heritage=external-dns,external-dns/owner=sandbox,external-dns/resource=service/ns/legacy\"".into(),
        ],
        record_type: "TXT".into(),
        ..WireEndpoint::default()
    };
    registry.labels.insert("ownedRecord".into(), EXTERNAL_DNS_NAME.into());
    create.push(registry);
    external_dns
        .apply(&Changes {
            create,
            ..Changes::default()
        })
        .await
        .map_err(|e| anyhow::anyhow!("pushing {EXTERNAL_DNS_NAME}: {e}"))?;
    Ok(Some(url))
}

/// Fails early, in clear words, when the DNS address cannot be bound (the
/// controller binds it only once its caches are synced).
pub(super) fn check_dns_listen(address: SocketAddr) -> anyhow::Result<()> {
    let hint = "another sandbox running? pick another address with --dns-listen";
    std::net::UdpSocket::bind(address).with_context(|| format!("cannot answer DNS on {address} (UDP) ({hint})"))?;
    std::net::TcpListener::bind(address).with_context(|| format!("cannot answer DNS on {address} (TCP) ({hint})"))?;
    Ok(())
}

/// Creates the agents' namespace in `member` (already there: fine).
pub(super) async fn create_agent_namespace(state_dir: &Path, member: &str) -> anyhow::Result<()> {
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
pub(super) fn spawn_controller(
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

/// Starts one HTTP responder per member of the built-in seed, on its
/// loopback address, all on one free port (found by the first; tried again
/// on another if a later address has it taken).
pub(super) async fn start_load_balancers() -> anyhow::Result<BTreeMap<String, Arc<Responder>>> {
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
