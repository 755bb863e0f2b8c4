//! The exchange with the agents, over ConfigMaps: the controller's side of
//! vantage points. Tells the `fedns agent` in each member what to probe and takes its reports, over the
//! member connection the controller already has. No new network path, and
//! no host credentials in the members: the agent reads and writes
//! ConfigMaps in its own namespace of its own cluster only.
//!
//! * Every second, the target list ([`vantage::TargetList`]) is written to
//!   ConfigMap [`vantage::TARGETS_CONFIGMAP`] of each member whose copy
//!   differs (server-side apply; an unreachable member is retried the next
//!   second), and to every member once a minute besides. Targets whose
//!   check carries request headers or a CA bundle are never in it
//!   ([`vantage::controller_only`]): a tenant's secrets stay in the host.
//! * Each member's copy of the list carries a random nonce of its own
//!   ([`vantage::Nonces`]), new whenever that member's list changes (the
//!   minute's rewrite of an unchanged list keeps it).
//! * Each member's report ConfigMap [`vantage::REPORT_CONFIGMAP`] is
//!   watched; a new report that echoes its member's nonce is handed to the
//!   prober at once ([`DataPlane::set_report`]), which decides the targets
//!   again. The nonce of the member's list before is still taken until the
//!   agent echoes the new one (a report in flight when the list changed).
//!   One with another nonce (copied from another member, an older list's,
//!   an earlier controller's, or none) is not taken: it is logged and
//!   counted in `fedns_vantage_point_reports_refused_total`, and the
//!   member's last report taken stays until it goes silent. When a
//!   member's watch starts, the nonce of the list it holds is read back,
//!   so a restarted controller takes the agents' last reports.
//! * Every second the prober decides again anyway, so a report that went
//!   silent stops counting without waiting for a probe; a vantage point
//!   turning silent or impaired (and back) is logged, gets an Event on its
//!   member, and shows in the `fedns_vantage_point_*` metrics.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::runtime::{watcher, WatchStreamExt};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;
use tokio::task::JoinHandle;

use super::vantage::{self, Nonces, Report, TargetList};
use super::{DataPlane, VantagePointSummary};
use crate::members::Registry;
use crate::queue::RecordKey;

/// How often targets are written and silence is checked.
const TICK: Duration = Duration::from_secs(1);
/// Every member's target list is written again this many ticks apart
/// even when unchanged (a minute).
const REWRITE_EVERY_TICKS: u64 = 60;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VantageLabel {
    vantage_point: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabel {
    vantage_point: String,
    /// [`vantage::NonceRefusal::reason`].
    reason: String,
}

/// `fedns_vantage_point_*` metrics, by vantage point.
#[derive(Debug, Clone, Default)]
pub struct VantageMetrics {
    age: Family<VantageLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    silent: Family<VantageLabel, Gauge>,
    impaired: Family<VantageLabel, Gauge>,
    down: Family<VantageLabel, Gauge>,
    probed: Family<VantageLabel, Gauge>,
    refused: Family<RefusedLabel, Counter>,
}

impl VantageMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut MetricsRegistry) -> VantageMetrics {
        let metrics = VantageMetrics::default();
        registry.register(
            "fedns_vantage_point_report_age_seconds",
            "Seconds since the vantage point's last report (0 for the controller)",
            metrics.age.clone(),
        );
        registry.register(
            "fedns_vantage_point_silent",
            "1 when the vantage point's report is older than 2 x periodSeconds: it is not counted",
            metrics.silent.clone(),
        );
        registry.register(
            "fedns_vantage_point_impaired",
            "1 when the vantage point sees every address down (its own network): it is not counted",
            metrics.impaired.clone(),
        );
        registry.register(
            "fedns_vantage_point_down_targets",
            "Load balancer addresses the vantage point sees down",
            metrics.down.clone(),
        );
        registry.register(
            "fedns_vantage_point_targets",
            "Load balancer addresses the vantage point reports on",
            metrics.probed.clone(),
        );
        registry.register(
            "fedns_vantage_point_reports_refused",
            "Agent reports not taken because they echo another nonce than their member's target list \
             (reason: missing, stale, other-member, unknown)",
            metrics.refused.clone(),
        );
        metrics
    }

    fn count_refused(&self, name: &str, reason: &str) {
        self.refused
            .get_or_create(&RefusedLabel {
                vantage_point: name.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    fn set(&self, summary: &VantagePointSummary) {
        let label = VantageLabel {
            vantage_point: summary.name.clone(),
        };
        self.age.get_or_create(&label).set(summary.age_seconds);
        self.silent.get_or_create(&label).set(i64::from(summary.silent));
        self.impaired.get_or_create(&label).set(i64::from(summary.impaired));
        self.down
            .get_or_create(&label)
            .set(i64::try_from(summary.down).unwrap_or(i64::MAX));
        self.probed
            .get_or_create(&label)
            .set(i64::try_from(summary.probed).unwrap_or(i64::MAX));
    }

    fn forget(&self, name: &str) {
        let label = VantageLabel {
            vantage_point: name.to_owned(),
        };
        self.age.remove(&label);
        self.silent.remove(&label);
        self.impaired.remove(&label);
        self.down.remove(&label);
        self.probed.remove(&label);
        for reason in ["missing", "stale", "other-member", "unknown"] {
            self.refused.remove(&RefusedLabel {
                vantage_point: name.to_owned(),
                reason: reason.to_owned(),
            });
        }
    }
}

/// One member's report watch.
struct Watch {
    /// The member object it watches through (a new one is a reconnect).
    client_of: std::sync::Weak<crate::members::Member>,
    task: JoinHandle<()>,
}

/// Runs until the process ends: writes targets to the members in
/// `namespace`, watches their reports into `plane`.
pub async fn run(plane: DataPlane<RecordKey>, registry: Arc<Registry>, namespace: String, metrics: VantageMetrics) {
    let mut watches: HashMap<String, Watch> = HashMap::new();
    // The target list each member has (its JSON without the nonce), as
    // last written.
    let mut written: HashMap<String, Arc<str>> = HashMap::new();
    // The list (JSON without the nonce) and nonce last issued to each
    // member: a rewrite of the same list keeps its nonce.
    let mut issued: HashMap<String, (Arc<str>, String)> = HashMap::new();
    let nonces = Arc::new(Nonces::default());
    // (silent, impaired) of each vantage point at the last tick.
    let mut standing: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    // Members whose last write failed, to log a failure once.
    let mut failing: HashMap<String, String> = HashMap::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u64 = 0;
    loop {
        tick.tick().await;
        ticks += 1;
        if ticks.is_multiple_of(REWRITE_EVERY_TICKS) {
            // A target list deleted or edited by hand comes back.
            written.clear();
        }
        let members = registry.members();
        // Watches: one per member, restarted when the member reconnected.
        watches.retain(|name, watch| {
            let current = members.iter().find(|m| &m.name == name);
            let same = current.is_some_and(|m| std::ptr::eq(Arc::as_ptr(m), watch.client_of.as_ptr()));
            if !same {
                watch.task.abort();
                if current.is_none() {
                    plane.set_report(name, None);
                    metrics.forget(name);
                    nonces.forget(name);
                    issued.remove(name);
                }
            }
            same
        });
        written.retain(|name, _| members.iter().any(|m| &m.name == name));
        for member in &members {
            if !watches.contains_key(&member.name) {
                let task = tokio::spawn(watch_reports(
                    plane.clone(),
                    member.name.clone(),
                    Api::namespaced(member.client.clone(), &namespace),
                    nonces.clone(),
                    metrics.clone(),
                ));
                watches.insert(
                    member.name.clone(),
                    Watch {
                        client_of: Arc::downgrade(member),
                        task,
                    },
                );
                written.remove(&member.name);
            }
        }
        // Targets: to every member whose copy differs, each with its nonce.
        let list = plane.target_list();
        let content: Arc<str> = match list.json_with_nonce("") {
            Ok(json) => json.into(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode the probe target list");
                continue;
            }
        };
        for member in &members {
            if written.get(&member.name).is_some_and(|w| *w == content) {
                continue;
            }
            let nonce = match issued.get(&member.name) {
                Some((same, nonce)) if *same == content => nonce.clone(),
                _ => match nonces.issue(&member.name) {
                    Ok(nonce) => {
                        issued.insert(member.name.clone(), (content.clone(), nonce.clone()));
                        nonce
                    }
                    Err(e) => {
                        tracing::warn!(member = %member.name, error = %e, "no nonce for the probe targets; retrying every second");
                        continue;
                    }
                },
            };
            let json = match list.json_with_nonce(&nonce) {
                Ok(json) => json,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot encode the probe target list");
                    continue;
                }
            };
            let api: Api<ConfigMap> = Api::namespaced(member.client.clone(), &namespace);
            match write_targets(&api, &json).await {
                Ok(()) => {
                    nonces.written(&member.name, &nonce);
                    if failing.remove(&member.name).is_some() {
                        tracing::info!(member = %member.name, "probe targets written to the member again");
                    }
                    tracing::debug!(member = %member.name, targets = list.targets.len(), "probe targets written");
                    written.insert(member.name.clone(), content.clone());
                }
                Err(e) => {
                    if failing.insert(member.name.clone(), e.clone()).as_ref() != Some(&e) {
                        tracing::warn!(
                            member = %member.name,
                            namespace = %namespace,
                            error = %e,
                            "cannot write the probe targets for the member's agent; retrying every second"
                        );
                    }
                }
            }
        }
        // Silence and impairment: decide again, report transitions.
        plane.decide_all();
        for summary in plane.vantage_points() {
            metrics.set(&summary);
            let now = (summary.silent, summary.impaired);
            let before = standing.insert(summary.name.clone(), now);
            if before.is_none_or(|b| b == now) || summary.name == vantage::CONTROLLER {
                continue;
            }
            let (kind, reason, message) = match now {
                (true, _) => (
                    EventType::Warning,
                    "VantagePointSilent",
                    format!(
                        "the fedns agent in {} has not reported for {:.0} s (more than 2 × periodSeconds): \
                         its view is not counted until it reports again",
                        summary.name, summary.age_seconds
                    ),
                ),
                (false, true) => (
                    EventType::Warning,
                    "VantagePointImpaired",
                    format!(
                        "the fedns agent in {} sees every one of {} load balancer addresses down: taken as its \
                         own network failing, not counted",
                        summary.name, summary.probed
                    ),
                ),
                (false, false) => (
                    EventType::Normal,
                    "VantagePointReporting",
                    format!("the fedns agent in {} reports and is counted again", summary.name),
                ),
            };
            tracing::warn!(vantage_point = %summary.name, reason, "{message}");
            registry
                .member_event(&summary.name, kind, reason, "VantagePoint", &message)
                .await;
        }
    }
}

/// Server-side applies the target list `json` (made by
/// [`vantage::TargetList::config_map_data`], which leaves out what carries
/// secrets) to ConfigMap [`vantage::TARGETS_CONFIGMAP`].
async fn write_targets(api: &Api<ConfigMap>, json: &str) -> Result<(), String> {
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(vantage::TARGETS_CONFIGMAP.into()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "fedns".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(vantage::TARGETS_KEY.to_owned(), json.to_owned())])),
        ..ConfigMap::default()
    };
    api.patch(
        vantage::TARGETS_CONFIGMAP,
        &PatchParams::apply("fedns-controller").force(),
        &Patch::Apply(&config_map),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Watches member `name`'s report ConfigMap and hands every version that
/// echoes the member's nonce ([`Nonces::check`]) to `plane`; a report that
/// cannot be read is logged and counts as none; one with another nonce is
/// logged, counted in `metrics`, and not taken (the last one taken stays,
/// and goes silent if no other comes).
async fn watch_reports(
    plane: DataPlane<RecordKey>,
    name: String,
    api: Api<ConfigMap>,
    nonces: Arc<Nonces>,
    metrics: VantageMetrics,
) {
    // The nonce of the list the member holds (a restarted controller's
    // first look): its agent's last report echoes it.
    match api.get_opt(vantage::TARGETS_CONFIGMAP).await {
        Ok(Some(config_map)) => {
            let held = config_map
                .data
                .as_ref()
                .and_then(|d| d.get(vantage::TARGETS_KEY))
                .and_then(|json| serde_json::from_str::<TargetList>(json).ok());
            if let Some(list) = held {
                nonces.found(&name, &list.nonce);
            }
        }
        Ok(None) => {}
        Err(e) => tracing::debug!(member = %name, error = %e, "cannot read back the member's probe targets"),
    }
    let mut last_error: Option<String> = None;
    follow_config_map(api, vantage::REPORT_CONFIGMAP, vantage::REPORT_KEY, &name, |json| {
        let Some(json) = json else {
            plane.set_report(&name, None);
            return;
        };
        match Report::parse_received(json, jiff::Timestamp::now()) {
            Ok(report) => match nonces.check(&name, &report.nonce) {
                Ok(()) => {
                    last_error = None;
                    plane.set_report(&name, Some(report));
                }
                Err(refusal) => {
                    metrics.count_refused(&name, refusal.reason());
                    let e = refusal.to_string();
                    if last_error.as_ref() != Some(&e) {
                        tracing::warn!(member = %name, "{e}; not taken (counted in fedns_vantage_point_reports_refused_total)");
                    }
                    last_error = Some(e);
                }
            },
            Err(e) => {
                if last_error.as_ref() != Some(&e) {
                    tracing::warn!(member = %name, error = %e, "the agent's report cannot be read; not counted");
                }
                last_error = Some(e);
                plane.set_report(&name, None);
            }
        }
    })
    .await;
}

/// Follows ConfigMap `name` in `api` until the process ends, calling
/// `on_change` with its data key `key` after every version (`""` when the
/// key is missing) and with `None` when the ConfigMap is deleted. Watch
/// errors are retried with kube-runtime's default backoff and logged once
/// per distinct error, with `context` (the member or namespace).
pub(crate) async fn follow_config_map(
    api: Api<ConfigMap>,
    name: &str,
    key: &str,
    context: &str,
    mut on_change: impl FnMut(Option<&str>),
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let mut last_error: Option<String> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(config_map) | watcher::Event::InitApply(config_map)) => {
                last_error = None;
                let value = config_map
                    .data
                    .as_ref()
                    .and_then(|d| d.get(key))
                    .map_or("", String::as_str);
                on_change(Some(value));
            }
            Ok(watcher::Event::Delete(_)) => on_change(None),
            Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
            Err(e) => {
                let e = e.to_string();
                if last_error.as_ref() != Some(&e) {
                    tracing::warn!(configmap = %name, at = %context, error = %e, "watching a ConfigMap; retrying");
                }
                last_error = Some(e);
            }
        }
    }
}
