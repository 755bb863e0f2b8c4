//! The controller's metrics and its HTTP endpoints, set up first: every
//! metric registers in one registry, which the HTTP endpoint (and the
//! debug endpoint, when separate) serves once bound. The zone store the
//! embedded DNS server answers from is made here too: the DNS metrics
//! watch it, and the GeoIP database loads into it.

use std::sync::Arc;

use anyhow::Context;
use fedns_dnsserver::{DnsMetrics, ZoneStore};
use fedns_providers::provider::ProviderMetrics;
use prometheus_client::registry::Registry as MetricsRegistry;

use crate::cli::ControllerArgs;
use crate::dataplane::agent_reports::VantageMetrics;
use crate::dataplane::ProbeMetrics;
use crate::http::{self, HttpState};
use crate::metrics::ControllerMetrics;

/// The metric families, each registered in the endpoints' registry.
pub(super) struct Metrics {
    pub(super) controller: Arc<ControllerMetrics>,
    pub(super) provider: ProviderMetrics,
    pub(super) probe: ProbeMetrics,
    pub(super) vantage: VantageMetrics,
    pub(super) dns: Arc<DnsMetrics>,
}

/// What [`metrics_and_endpoints`] set up.
pub(super) struct Endpoints {
    pub(super) metrics: Metrics,
    /// The zones the embedded DNS server answers from.
    pub(super) zones: Arc<ZoneStore>,
    /// The HTTP endpoints' state (readiness, `/debug/explain`).
    pub(super) state: Arc<HttpState>,
}

/// Registers the metrics, loads the GeoIP database (if given) and binds
/// the HTTP endpoint, then the debug endpoint (`--debug-addr`).
///
/// # Errors
/// An endpoint's address cannot be bound.
pub(super) async fn metrics_and_endpoints(args: &ControllerArgs) -> anyhow::Result<Endpoints> {
    let mut metrics_registry = MetricsRegistry::default();
    let metrics = Arc::new(ControllerMetrics::new(&mut metrics_registry));
    let provider_metrics = ProviderMetrics::new(&mut metrics_registry);
    let probe_metrics = ProbeMetrics::new(&mut metrics_registry);
    let vantage_metrics = VantageMetrics::new(&mut metrics_registry);
    let dns_metrics = DnsMetrics::new();
    let zones = ZoneStore::new();
    if let Some(path) = &args.geoip_db {
        match zones.load_geoip(path) {
            Ok(()) => tracing::info!(path = %path.display(), "GeoIP database loaded"),
            Err(e) => tracing::error!("{e}; Nearest records place clients by spec.clientRegions only"),
        }
    }
    dns_metrics.watch_store(zones.clone());
    metrics_registry.register_collector(Box::new(dns_metrics.clone()));
    let state = HttpState::new(metrics_registry);
    let debug = http::debug_listener(args.debug_addr, args.metrics_addr);
    http::serve_with(args.metrics_addr, state.clone(), debug.is_none())
        .await
        .with_context(|| format!("binding the HTTP endpoint {}", args.metrics_addr))?;
    if let Some(addr) = debug {
        http::serve_debug(addr, state.clone())
            .await
            .with_context(|| format!("binding the debug endpoint {addr} (--debug-addr)"))?;
    }
    Ok(Endpoints {
        metrics: Metrics {
            controller: metrics,
            provider: provider_metrics,
            probe: probe_metrics,
            vantage: vantage_metrics,
            dns: dns_metrics,
        },
        zones,
        state,
    })
}
