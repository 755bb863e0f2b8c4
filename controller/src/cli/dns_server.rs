//! `fedns dns-server`: the embedded DNS server alone, fed by the publishing
//! pipeline's source (docs/providers.md, "The embedded DNS server").

use anyhow::Context;
use std::collections::BTreeMap;

use fedns_dnsserver::{
    AnswerConfig, DnsMetrics, DnsServer, RecordedSerial, SerialMode, ServerConfig, TsigKey, ZoneStore,
};
use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::plan::desired::{desired_zones_with, zone_apex};
use fedns_providers::source::kube_source::{self, Sinks, SourceConfig, SourceState};
use prometheus_client::registry::Registry;

use crate::cli::{zone_snapshot, DnsServerArgs};
use crate::http::{self, HttpState};

fn load_manifests(path: &std::path::Path, sink: &EmbeddedSink) -> anyhow::Result<()> {
    let manifests = fedns_providers::source::manifests::load(path)?;
    for skipped in &manifests.skipped {
        tracing::warn!(document = %skipped, "skipping a document that is not a Domain, DNSEndpoint or Namespace");
    }
    let desired = desired_zones_with(&manifests.domains, &manifests.endpoints, &manifests.namespaces);
    for problem in &desired.domain_problems {
        tracing::warn!(domain = %format!("{}/{}", problem.namespace, problem.name), "{}", problem.message);
    }
    for problem in &desired.problems {
        tracing::warn!(
            dnsendpoint = %format!("{}/{}", problem.namespace, problem.name),
            dns_name = %problem.dns_name,
            reason = problem.kind.reason(),
            "{}", problem.message
        );
    }
    // Serials from the files, not from the start time, so replicas reading
    // the same files serve the same serial: a Domain's `status.serial`
    // when the file gives one, else the newest modification time of the
    // files (Unix seconds, RFC 1982 wraps it).
    let store = sink.store();
    let followed = desired
        .zones
        .iter()
        .map(|z| {
            let apex = z.content.apex.to_ascii().to_ascii_lowercase();
            let apex = if apex.ends_with('.') { apex } else { format!("{apex}.") };
            (apex, None)
        })
        .collect();
    let _ = store.set_serial_mode(SerialMode::Follow(followed));
    sink.apply(&desired);
    let file_serial = manifests
        .newest_modified
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(1, |d| (d.as_secs() & u64::from(u32::MAX)) as u32);
    let mut recorded = BTreeMap::new();
    for zone in store.serial_states() {
        let given = manifests
            .domains
            .iter()
            .filter(|d| zone_apex(d).is_some_and(|apex| apex.eq_ignore_ascii_case(&zone.apex)))
            .find_map(|d| d.status.as_ref().and_then(|s| s.serial))
            .and_then(|s| u32::try_from(s).ok());
        let record = RecordedSerial {
            serial: given.unwrap_or(file_serial),
            content: zone.content,
            active_from_ms: 0,
            previous: None,
        };
        recorded.insert(zone.apex, Some(record));
    }
    if store.set_serial_mode(SerialMode::Follow(recorded)).is_err() {
        sink.apply(&desired);
    }
    for zone in store.serial_states() {
        tracing::info!(zone = %zone.apex, serial = zone.serial, "serving the files' serial");
    }
    let outcome = sink.apply(&desired);
    tracing::info!(
        zones = outcome.zones.len(),
        rrsets = sink.store().load().rrset_count(),
        "loaded manifests from {}",
        path.display()
    );
    Ok(())
}

/// Reads `--tsig-key-file`: `algorithm:name:base64-secret` per line.
fn read_tsig_key_file(path: &std::path::Path) -> anyhow::Result<Vec<TsigKey>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut keys = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let key = TsigKey::parse(line).map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), number + 1))?;
        keys.push(key);
    }
    tracing::info!(keys = keys.len(), "read TSIG keys from {}", path.display());
    Ok(keys)
}

/// Member mode (`--member-cluster`): the federation zones from the host
/// and the member's discovery zones; returns their readiness (true once
/// the discovery zones are served).
async fn start_member_side(
    args: &DnsServerArgs,
    member: &str,
    sink: &EmbeddedSink,
    registry: &mut Registry,
    dns: &std::sync::Arc<DnsMetrics>,
) -> anyhow::Result<tokio::sync::watch::Receiver<bool>> {
    let host = crate::kube_client::client(args.kubeconfig.as_deref())
        .await
        .context("the host cluster's client")?;
    let member_client = crate::kube_client::client(args.member.member_kubeconfig.as_deref())
        .await
        .context("the member cluster's client")?;
    let metrics = crate::discovery::metrics::DiscoveryMetrics::default();
    metrics.register(registry);
    crate::discovery::metrics::DiscoveryMetrics::register_answers(registry, member, dns.clone());
    let config = crate::discovery::replica::ReplicaConfig {
        member: member.to_owned(),
        namespace: args.namespace.clone(),
        cluster_domain: args.member.cluster_domain.clone(),
        node_name: args.member.node_name.clone(),
        state_file: args.member.state_file.clone(),
    };
    tracing::info!(member, cluster_domain = %config.cluster_domain, "member-side replica: answering the discovery zones");
    Ok(crate::discovery::member_side::start(host, member_client, config, sink.clone(), metrics).served)
}

/// Runs until SIGTERM/Ctrl-C.
///
/// # Errors
/// Bad manifests, or an address that cannot be bound.
pub async fn run(args: &DnsServerArgs) -> anyhow::Result<()> {
    let store = ZoneStore::new();
    if let Some(path) = &args.geoip_db {
        match store.load_geoip(path) {
            Ok(()) => tracing::info!(path = %path.display(), "GeoIP database loaded"),
            Err(e) => tracing::error!("{e}; Nearest records place clients by spec.clientRegions only"),
        }
    }
    let kept = args.snapshot.snapshot_file.is_some();
    if kept && (args.manifests.is_some() || args.member.member_cluster.is_some()) {
        anyhow::bail!("--snapshot-file keeps the zones of a watched host; not with --manifests or --member-cluster");
    }
    let restored = zone_snapshot::restore(&store, &args.snapshot);
    let saver = zone_snapshot::Saver::spawn(store.clone(), &args.snapshot, restored);
    let sink = EmbeddedSink::new(store.clone());
    let metrics = DnsMetrics::new();
    metrics.watch_store(store.clone());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(metrics.clone()));

    let mut source_state = None;
    let mut discovery_served = None;
    let mut ready_now = false;
    if let Some(path) = &args.tsig_key_file {
        sink.set_named_tsig_keys(read_tsig_key_file(path)?);
    }
    if let Some(dir) = &args.dnssec_key_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        sink.set_dnssec_key_dir(dir.clone());
    }
    if let Some(path) = &args.manifests {
        load_manifests(path, &sink)?;
        ready_now = true;
        // Signatures are made again before they expire: look hourly.
        let (path, sink) = (path.clone(), sink.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                if sink.resign_due() {
                    if let Err(e) = load_manifests(&path, &sink) {
                        tracing::error!("re-signing: {e:#}");
                    }
                }
            }
        });
    } else if let Some(member) = &args.member.member_cluster {
        discovery_served = Some(start_member_side(args, member, &sink, &mut registry, &metrics).await?);
    } else {
        let client = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
        let (tx, rx) = tokio::sync::watch::channel(SourceState::default());
        let config = SourceConfig {
            domain_namespace: Some(args.namespace.clone()),
            write_status: !args.read_only,
            serial_activation_delay: std::time::Duration::from_millis(args.serial_activation_delay),
            ..SourceConfig::default()
        };
        let sinks = Sinks {
            embedded: Some(sink.clone()),
            providers: Vec::new(),
        };
        tokio::spawn(kube_source::run(client, config, sinks, tx));
        source_state = Some(rx);
    }

    let state = HttpState::new(registry);
    state.set_ready(ready_now || restored);
    let config = ServerConfig {
        listen: args.listen.clone(),
        udp_workers: args.udp_workers.unwrap_or(ServerConfig::default().udp_workers),
        tcp_idle_timeout: std::time::Duration::from_secs(args.tcp_idle_timeout),
        max_tcp_connections: args.max_tcp_connections,
        max_tcp_connections_per_client: args.max_tcp_connections_per_client,
        answer: AnswerConfig {
            max_udp_payload: args.max_udp_payload,
        },
        rrl: args.rrl.config(),
    };
    let server = DnsServer::start(config, store, metrics)
        .await
        .context("starting the DNS listeners")?;
    if let Some(addr) = args.metrics_addr {
        http::serve(addr, state.clone())
            .await
            .with_context(|| format!("binding the HTTP endpoint {addr}"))?;
    }
    if let Some(mut rx) = source_state {
        // Ready once the first complete state is published.
        let state = state.clone();
        tokio::spawn(async move {
            if rx.wait_for(|s| s.publishes > 0).await.is_ok() {
                state.set_ready(true);
            }
        });
    }
    if let Some(mut served) = discovery_served {
        // A member-side replica: ready once its discovery zones are in the
        // store the listeners answer from (the federation zones are
        // published before them), never while a query for them would get
        // REFUSED.
        let state = state.clone();
        tokio::spawn(async move {
            if served.wait_for(|served| *served).await.is_ok() {
                state.set_ready(true);
            }
        });
    }
    http::shutdown_signal().await;
    tracing::info!("shutting down");
    http::drain(&state, std::time::Duration::from_secs(args.shutdown_drain)).await;
    server.shutdown().await;
    if let Some(saver) = saver {
        saver.finish().await;
    }
    Ok(())
}
