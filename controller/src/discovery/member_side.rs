//! Starts the member side of discovery in a DNS server process: the
//! publishing source for the federation zones (read-only, sharing the
//! DNSEndpoint cache), the discovery task, and the saved host-side state
//! when there is one.

use std::sync::Arc;

use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::plan::desired::desired_zones_with;
use fedns_providers::plan::ownership::NamespaceLabels;
use fedns_providers::source::kube_source::{self, SharedEndpoints, Sinks, SourceConfig, SourceState};
use kube::Client;
use tokio::sync::{watch, Notify};
use tracing::Instrument as _;

use super::metrics::DiscoveryMetrics;
use super::replica::{self, ReplicaConfig};
use super::state_file;

/// What a started member side reports.
#[derive(Debug, Clone)]
pub struct MemberSide {
    /// The publishing source's publish counter (the federation zones).
    pub source: watch::Receiver<SourceState>,
    /// True once the discovery zones are served (every one handed over is
    /// in the store the listeners answer from, none held back while names
    /// are pending): the replica's readiness.
    pub served: watch::Receiver<bool>,
}

/// Starts everything the member side needs into `sink`: returns the
/// source's publish counter and the discovery zones' readiness
/// ([`MemberSide`]).
///
/// A state file that cannot be read is logged and ignored (the replica
/// waits for the host then).
pub fn start(
    host: Client,
    member: Client,
    config: ReplicaConfig,
    sink: EmbeddedSink,
    metrics: DiscoveryMetrics,
) -> MemberSide {
    let saved = match config.state_file.as_deref().map(state_file::load) {
        Some(Ok(saved)) => saved,
        Some(Err(e)) => {
            tracing::warn!("{e}; starting without it");
            None
        }
        None => None,
    };
    let (tx, rx) = watch::channel(SourceState::default());
    if let Some(saved) = &saved {
        let desired = desired_zones_with(&saved.domains, &saved.endpoints, &NamespaceLabels::new());
        if let Some(region) = saved.member.as_ref().and_then(|m| m.region.clone()) {
            sink.set_default_client_region(Some(region));
        }
        let outcome = sink.apply(&desired);
        tracing::info!(
            zones = outcome.zones.len(),
            "serving the saved host-side state until the host answers"
        );
        tx.send_modify(|s| s.publishes += 1);
    }
    let span = tracing::info_span!("discovery", member = %config.member);
    let _entered = span.enter();
    let changed = Arc::new(Notify::new());
    let caches = replica::watch_host(&host, &config, changed.clone());
    let source_config = SourceConfig {
        domain_namespace: Some(config.namespace.clone()),
        write_status: false,
        endpoints: Some(SharedEndpoints {
            store: caches.endpoints.clone(),
            changed: caches.endpoints_changed.clone(),
            pending: None,
        }),
        ..SourceConfig::default()
    };
    let sinks = Sinks {
        embedded: Some(sink.clone()),
        providers: Vec::new(),
    };
    tokio::spawn(kube_source::run(host, source_config, sinks, tx).instrument(span.clone()));
    let (served_tx, served) = watch::channel(false);
    tokio::spawn(
        replica::run(
            caches,
            member,
            config,
            sink,
            changed,
            saved,
            metrics,
            rx.clone(),
            served_tx,
        )
        .instrument(span.clone()),
    );
    MemberSide { source: rx, served }
}
