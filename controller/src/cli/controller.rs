//! `fedns controller`: member registry and health, record reconcilers,
//! DNSEndpoint builder, leader election, and (by default) the embedded
//! DNS server, all in one process.
//!
//! [`run_until`] is the start-up in order, one step a file: the metrics
//! and HTTP endpoints (`endpoints.rs`), leader election
//! (`leadership.rs`), the member registry (`registry.rs`), the host
//! caches (`host_objects.rs`), the member sources, the record reconcilers
//! (`reconcilers.rs`, `explain.rs`), publishing and the DNS server
//! (`publishing.rs`); then, on shutdown, leadership stepped down and the
//! Lease released, the drain, the DNS server stopped.

use std::sync::Arc;
use std::time::Duration;

use fedns_dnsserver::DnsServer;

use crate::cli::{zone_snapshot, ControllerArgs};
use crate::http::{self, HttpState};

mod auto_records;
mod endpoints;
mod explain;
mod host_caches;
mod host_objects;
mod inventories;
mod leadership;
mod member_sources;
mod publishing;
mod reconcilers;
mod registry;

use endpoints::metrics_and_endpoints;
use explain::serve_explain;
use host_objects::host_caches;
use leadership::{leader_election, Leadership};
use publishing::{dns_server, publish, sinks};
use reconcilers::{record_context, run_reconcilers};
use registry::{member_registry, start_members};

/// Runs until SIGTERM/Ctrl-C, then releases the lease and stops.
///
/// # Errors
/// The host cluster cannot be reached at start, or an address cannot be bound.
pub async fn run(args: &ControllerArgs) -> anyhow::Result<()> {
    run_until(args, http::shutdown_signal()).await
}

/// Runs until `shutdown` resolves (used by `fedns sandbox`).
///
/// # Errors
/// As [`run`].
pub async fn run_until(args: &ControllerArgs, shutdown: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    let host = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let endpoints = metrics_and_endpoints(args).await?;
    // The zones served before a restart, answered from at once (and the
    // replica ready) while the objects are listed and published again.
    let embedded = args.provider.contains(&crate::cli::Provider::Embedded);
    let mut server = None;
    let restored = embedded && zone_snapshot::restore(&endpoints.zones, &args.snapshot);
    if restored {
        server = dns_server(args, true, endpoints.zones.clone(), endpoints.metrics.dns.clone()).await?;
        endpoints.state.set_ready(true);
    }
    let saver = embedded
        .then(|| zone_snapshot::Saver::spawn(endpoints.zones.clone(), &args.snapshot, restored))
        .flatten();
    let mut leadership = leader_election(args, &host).await?;
    let shared = member_registry(args, &host, &leadership, &endpoints.metrics);
    let caches = host_caches(&host, &args.namespace, &shared.queue).await;
    start_members(args, &host, &leadership, &shared, &caches).await?;
    let ctx = record_context(args, &host, &leadership, &shared, &endpoints.metrics, &caches).await?;
    serve_explain(&endpoints.state, &ctx);
    run_reconcilers(args, ctx, &shared.queue, &leadership);
    let sinks = sinks(args, &endpoints.zones, &endpoints.metrics.provider)?;
    let serve_dns = publish(args, &host, &leadership, &caches, sinks, &endpoints.state);
    if server.is_none() {
        server = dns_server(args, serve_dns, endpoints.zones, endpoints.metrics.dns).await?;
    }
    tracing::info!(namespace = %args.namespace, leader_elect = args.leader_elect, "controller running");

    shutdown.await;
    stop(args, &mut leadership, server, &endpoints.state).await;
    if let Some(saver) = saver {
        saver.finish().await;
    }
    Ok(())
}

/// Shuts down: leadership stepped down and the Lease released, then (when
/// serving DNS) the drain, then the DNS listeners stopped.
async fn stop(args: &ControllerArgs, leadership: &mut Leadership, server: Option<DnsServer>, state: &Arc<HttpState>) {
    tracing::info!("shutting down");
    leadership.step_down().await;
    if server.is_some() {
        http::drain(state, Duration::from_secs(args.shutdown_drain)).await;
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
}
