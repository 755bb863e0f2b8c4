//! The record reconcilers: what they read besides the host caches (the
//! hostname resolver, the data-plane prober and the vantage points'
//! reports, the automatic records), the context they share, and their
//! workers with the periodic resync.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use fedns_api::MemberCluster;
use kube::runtime::reflector;

use super::auto_records::auto_records;
use super::endpoints::Metrics;
use super::host_objects::HostObjects;
use super::leadership::Leadership;
use super::registry::Shared;
use crate::cli::ControllerArgs;
use crate::members::MemberSource;
use crate::queue::{Queue, RecordKey};
use crate::records::resolver::HostnameResolver;
use crate::records::{self, RecordContext};

/// Starts what the reconcilers read (the resolver, the prober, the
/// vantage points' reports and, with `--auto-records`, the automatic
/// records) and gathers their context.
///
/// # Errors
/// The resolver, the prober or the automatic records cannot be set up.
pub(super) async fn record_context(
    args: &ControllerArgs,
    host: &kube::Client,
    leadership: &Leadership,
    shared: &Shared,
    metrics: &Metrics,
    caches: &HostObjects,
) -> anyhow::Result<Arc<RecordContext>> {
    let queue = &shared.queue;
    let registry = &shared.registry;
    let (resolver_tx, mut resolver_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let resolver = HostnameResolver::new(args.resolver, resolver_tx).context("setting up the hostname resolver")?;
    {
        let queue = queue.clone();
        tokio::spawn(async move {
            while let Some(id) = resolver_rx.recv().await {
                if let Some(key) = RecordKey::from_id(&id) {
                    queue.push(key);
                }
            }
        });
    }
    // Data-plane probes: an address changing state requeues its records.
    let dataplane = {
        let queue = queue.clone();
        let tls = crate::dataplane::ProbeTls::new(&[]).map_err(|e| anyhow::anyhow!("probe TLS: {e}"))?;
        crate::dataplane::DataPlane::start(
            tls,
            usize::from(args.probe_concurrency),
            metrics.probe.clone(),
            move |key| queue.push(key),
        )
        .map_err(|e| anyhow::anyhow!("starting the data-plane prober: {e}"))?
    };
    if let Some(vantage_namespace) = &args.vantage_namespace {
        tracing::info!(namespace = %vantage_namespace, "vantage points: agents in the members probe too");
        tokio::spawn(crate::dataplane::agent_reports::run(
            dataplane.clone(),
            registry.clone(),
            vantage_namespace.clone(),
            metrics.vantage.clone(),
        ));
    }
    if args.sources.auto_records {
        let auto = auto_records(
            args,
            host,
            registry,
            &leadership.identity,
            &caches.services.store,
            &caches.ingresses.store,
            &caches.routes.store,
            &caches.domains.store,
            &leadership.leader,
            &caches.auto_changed,
        )
        .await?;
        tokio::spawn(auto.run(
            caches.auto_changed.clone(),
            Duration::from_secs(args.resync_interval.max(1)),
        ));
    }
    Ok(Arc::new(RecordContext {
        host: host.clone(),
        namespace: args.namespace.clone(),
        registry: registry.clone(),
        services: caches.services.store.clone(),
        ingresses: caches.ingresses.store.clone(),
        routes: caches.routes.store.clone(),
        domains: caches.domains.store.clone(),
        endpoints: caches.endpoints.store.clone(),
        pending: caches.pending.clone(),
        // MemberClusters count only when they are a member source.
        clusters: if args.sources.member_source.contains(&MemberSource::Fedns) {
            caches.clusters.store.clone()
        } else {
            reflector::store::<MemberCluster>().0
        },
        resolver,
        leader: leadership.leader.clone(),
        metrics: metrics.controller.clone(),
        recorder: shared.recorder.clone(),
        dataplane: Some(dataplane),
        failing_open: Default::default(),
        last_shards: Default::default(),
        published: caches.published.clone(),
        reported: Default::default(),
        max_object_bytes: args.max_object_bytes,
        too_large: Default::default(),
    }))
}

/// Runs the record workers, and a full resync periodically and whenever
/// leadership is won.
pub(super) fn run_reconcilers(args: &ControllerArgs, ctx: Arc<RecordContext>, queue: &Queue, leadership: &Leadership) {
    tokio::spawn(records::run_workers(ctx, queue.clone(), args.workers));
    {
        // Periodic full resync, and a full pass whenever leadership is won.
        let queue = queue.clone();
        let mut leader = leadership.leader.clone();
        let interval = Duration::from_secs(args.resync_interval.max(1));
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            loop {
                tokio::select! {
                    _ = ticker.tick() => queue.push_resync(),
                    changed = leader.changed() => {
                        if changed.is_err() { return; }
                        if *leader.borrow() {
                            tracing::info!("became the leader");
                            queue.push_all();
                        } else {
                            tracing::warn!("lost leadership; not writing until it is won back");
                        }
                    }
                }
            }
        });
    }
}
