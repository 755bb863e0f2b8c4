//! `fedns agent`: a vantage point inside a member cluster.
//!
//! It learns what to probe from ConfigMap `fedns-probe-targets` in its
//! namespace (the controller writes it over its member connection), probes
//! every target with the controller's own prober (same thresholds; no
//! failover/failback delays, which apply once, to the quorum's decision),
//! and writes what it sees to ConfigMap `fedns-probe-report` there: at
//! once when a target changes state, else every `periodSeconds` (the
//! smallest of its targets') as a heartbeat. The controller reads the
//! report through the same member connection. The agent needs the member's
//! API server only, with a Role on two ConfigMaps (deploy/agent/).
//!
//! Every report echoes the nonce of the target list it answers
//! (`TargetList::nonce`): the controller takes a member's report only with
//! that member's nonce of its current list.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::Client;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::AgentArgs;
use crate::dataplane::vantage::{self, TargetList};
use crate::dataplane::{DataPlane, ProbeMetrics, ProbeTls};

/// The heartbeat when there is no target yet.
const IDLE_HEARTBEAT: Duration = Duration::from_secs(5);
/// State changes that come together are written together: one write at
/// most this often.
const COALESCE: Duration = Duration::from_millis(100);

/// Runs `fedns agent` until SIGTERM or Ctrl-C.
///
/// # Errors
/// No client for the member, the prober cannot start, or the metrics
/// address cannot be bound.
pub async fn run(args: &AgentArgs) -> anyhow::Result<()> {
    let client = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let namespace = args
        .namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "fedns-system".to_owned());
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ProbeMetrics::new(&mut registry);
    let state = crate::http::HttpState::new(registry);
    let agent = Agent::start(
        client,
        namespace.clone(),
        args.source_address,
        usize::from(args.probe_concurrency),
        metrics,
    )
    .context("starting the prober")?;
    if let Some(addr) = args.metrics_addr {
        crate::http::serve(addr, state.clone())
            .await
            .with_context(|| format!("binding the HTTP endpoint {addr}"))?;
    }
    state.set_ready(true);
    tracing::info!(namespace = %namespace, source = ?args.source_address, "fedns agent running");
    crate::http::shutdown_signal().await;
    tracing::info!("shutting down");
    drop(agent);
    Ok(())
}

/// A running agent; dropping it stops it.
pub struct Agent {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Agent {
    /// Starts an agent against the member `client`, with its ConfigMaps in
    /// `namespace` and probes from `source`; at most `concurrency` probes
    /// at once. Runs on the current tokio runtime (the probes on a thread
    /// of their own, as the controller's).
    ///
    /// # Errors
    /// The prober's thread or runtime cannot start.
    pub fn start(
        client: Client,
        namespace: String,
        source: Option<IpAddr>,
        concurrency: usize,
        metrics: ProbeMetrics,
    ) -> anyhow::Result<Agent> {
        let changed = Arc::new(Notify::new());
        let tls = ProbeTls::new(&[]).map_err(|e| anyhow::anyhow!("probe TLS: {e}"))?;
        let plane: DataPlane<u8> = {
            let changed = changed.clone();
            DataPlane::start_from(source, tls, concurrency, metrics, move |_| changed.notify_one())
                .context("starting the prober")?
        };
        let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
        let nonce: Arc<Mutex<String>> = Arc::default();
        let targets = tokio::spawn(watch_targets(
            plane.clone(),
            api.clone(),
            nonce.clone(),
            changed.clone(),
        ));
        let reports = tokio::spawn(write_reports(plane, api, source, nonce, changed));
        Ok(Agent {
            tasks: vec![targets, reports],
        })
    }
}

/// Follows ConfigMap `fedns-probe-targets`: every version replaces what is
/// probed, and its nonce the one reports echo (set after the targets, so
/// a report with the new nonce never carries the old targets); deleted,
/// nothing is.
async fn watch_targets(plane: DataPlane<u8>, api: Api<ConfigMap>, nonce: Arc<Mutex<String>>, changed: Arc<Notify>) {
    let mut last_error: Option<String> = None;
    let context = api.resource_url().to_owned();
    crate::dataplane::agent_reports::follow_config_map(
        api,
        vantage::TARGETS_CONFIGMAP,
        vantage::TARGETS_KEY,
        &context,
        |json| {
            match json.map(serde_json::from_str::<TargetList>) {
                Some(Ok(list)) => {
                    // The controller alone probes what carries a tenant's
                    // headers or CA bundle; a controller that wrote them
                    // anyway (an older one) would not count this vote.
                    let kept = list.targets.iter().filter(|t| !t.carries_secrets());
                    let skipped = list.targets.iter().filter(|t| t.carries_secrets()).count();
                    if skipped > 0 {
                        tracing::warn!(skipped, "probe targets with request headers or a CA bundle are the controller's alone; not probed here");
                    }
                    tracing::info!(targets = list.targets.len() - skipped, "probe targets from the controller");
                    plane.want(&0, kept.map(|t| (t.address, t.check())));
                    *nonce.lock().unwrap_or_else(|e| e.into_inner()) = list.nonce;
                    last_error = None;
                }
                Some(Err(e)) => {
                    let e = format!("{}/{}: {e}", vantage::TARGETS_CONFIGMAP, vantage::TARGETS_KEY);
                    if last_error.as_ref() != Some(&e) {
                        tracing::warn!(error = %e, "cannot read the probe targets; keeping the last ones");
                    }
                    last_error = Some(e);
                }
                None => {
                    tracing::info!("the probe targets were deleted; probing nothing");
                    plane.forget(&0);
                }
            }
            changed.notify_one();
        },
    )
    .await;
}

/// Writes the report at once after a change (at most every [`COALESCE`]),
/// else every smallest `periodSeconds` of the targets, echoing the nonce
/// of the target list.
async fn write_reports(
    plane: DataPlane<u8>,
    api: Api<ConfigMap>,
    source: Option<IpAddr>,
    nonce: Arc<Mutex<String>>,
    changed: Arc<Notify>,
) {
    let mut last_error: Option<String> = None;
    let mut last_write = Instant::now().checked_sub(IDLE_HEARTBEAT).unwrap_or_else(Instant::now);
    loop {
        let heartbeat = plane.smallest_period().unwrap_or(IDLE_HEARTBEAT);
        let due = last_write + heartbeat;
        tokio::select! {
            () = changed.notified() => {
                tokio::time::sleep(COALESCE.saturating_sub(last_write.elapsed())).await;
            }
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(due)) => {}
        }
        // The nonce first, then the states: the targets were replaced
        // before their nonce was set, so this report is of that list (or
        // a newer one).
        let nonce = nonce.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut report = plane.own_report(source);
        report.nonce = nonce;
        let json = match serde_json::to_string(&report) {
            Ok(json) => json,
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode the report");
                continue;
            }
        };
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(vantage::REPORT_CONFIGMAP.into()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".to_owned(),
                    "fedns-agent".to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(vantage::REPORT_KEY.to_owned(), json)])),
            ..ConfigMap::default()
        };
        last_write = Instant::now();
        match api
            .patch(
                vantage::REPORT_CONFIGMAP,
                &PatchParams::apply("fedns-agent").force(),
                &Patch::Apply(&config_map),
            )
            .await
        {
            Ok(_) => {
                if last_error.take().is_some() {
                    tracing::info!("report written again");
                }
            }
            Err(e) => {
                let e = e.to_string();
                if last_error.as_ref() != Some(&e) {
                    tracing::warn!(error = %e, "cannot write the report; retrying at the next heartbeat");
                }
                last_error = Some(e);
            }
        }
    }
}
