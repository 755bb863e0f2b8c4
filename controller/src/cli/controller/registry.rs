//! The member registry and what it shares with the host caches and the
//! record reconcilers (the record work queue, the event recorder), then
//! its member sources and its run.

use std::sync::Arc;

use kube::runtime::events::Reporter;

use super::endpoints::Metrics;
use super::host_objects::HostObjects;
use super::leadership::Leadership;
use super::member_sources::member_sources;
use crate::cli::ControllerArgs;
use crate::events::Recorder;
use crate::members::Registry;
use crate::queue::Queue;

/// The record work queue, the event recorder and the member registry.
pub(super) struct Shared {
    pub(super) queue: Queue,
    pub(super) recorder: Recorder,
    pub(super) registry: Arc<Registry>,
}

/// The work queue, the recorder and the member registry (not running
/// yet: its sources read the host caches).
pub(super) fn member_registry(
    args: &ControllerArgs,
    host: &kube::Client,
    leadership: &Leadership,
    metrics: &Metrics,
) -> Shared {
    let queue = Queue::default();
    let recorder = Recorder::new(
        host.clone(),
        Reporter {
            controller: "fedns-controller".into(),
            instance: Some(leadership.identity.clone()),
        },
    );
    let registry = Registry::new(
        host.clone(),
        args.namespace.clone(),
        queue.clone(),
        leadership.leader.clone(),
        recorder.clone(),
        metrics.controller.clone(),
    );
    Shared {
        queue,
        recorder,
        registry,
    }
}

/// Watches the members' ServiceExports (with `--auto-records`), reads
/// the member sources and runs the registry over them.
///
/// # Errors
/// A member source cannot be set up.
pub(super) async fn start_members(
    args: &ControllerArgs,
    host: &kube::Client,
    leadership: &Leadership,
    shared: &Shared,
    caches: &HostObjects,
) -> anyhow::Result<()> {
    if args.sources.auto_records {
        shared.registry.watch_service_exports(caches.auto_changed.clone());
    }
    let sources = member_sources(
        args,
        host,
        &leadership.identity,
        &caches.clusters.store,
        &caches.secrets.store,
        &caches.members_changed,
    )
    .await?;
    tokio::spawn(shared.registry.clone().run(sources, caches.members_changed.clone()));
    Ok(())
}
