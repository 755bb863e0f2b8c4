//! Controller metrics (prometheus-client).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabel {
    cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemberLabel {
    cluster: String,
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabel {
    kind: &'static str,
    result: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
}

/// Every controller metric.
#[derive(Debug)]
pub struct ControllerMetrics {
    members: Family<StateLabel, Gauge>,
    member_ready: Family<MemberLabel, Gauge>,
    engine_ready: Family<MemberLabel, Gauge>,
    probe_seconds: Family<ClusterLabel, Histogram, fn() -> Histogram>,
    reconciles: Family<ReconcileLabel, Counter>,
    dnsendpoint_writes: Counter,
    dnsendpoint_previews: Counter,
    change_to_write: Histogram,
    failing_open: Gauge,
    fail_open_engaged: Counter,
    too_large: Gauge,
}

impl ControllerMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = ControllerMetrics {
            members: Family::default(),
            member_ready: Family::default(),
            engine_ready: Family::default(),
            probe_seconds: Family::new_with_constructor(latency_histogram),
            reconciles: Family::default(),
            dnsendpoint_writes: Counter::default(),
            dnsendpoint_previews: Counter::default(),
            change_to_write: latency_histogram(),
            failing_open: Gauge::default(),
            fail_open_engaged: Counter::default(),
            too_large: Gauge::default(),
        };
        registry.register(
            "fedns_dnsendpoints_too_large",
            "Records whose DNSEndpoint would exceed --max-object-bytes and is not written",
            metrics.too_large.clone(),
        );
        registry.register(
            "fedns_records_failing_open",
            "Records serving their last-known addresses because health would remove every cluster",
            metrics.failing_open.clone(),
        );
        registry.register(
            "fedns_fail_open_engaged",
            "Times a record started serving its last-known addresses (whenAllUnhealthy: ServeLastKnown)",
            metrics.fail_open_engaged.clone(),
        );
        registry.register(
            "fedns_member_clusters",
            "Member clusters by state (ready, not_ready)",
            metrics.members.clone(),
        );
        registry.register(
            "fedns_member_ready",
            "Per member and source (fedns, karmada, kubefed): 1 when fedns's probes find it Ready, else 0",
            metrics.member_ready.clone(),
        );
        registry.register(
            "fedns_member_engine_ready",
            "Per Karmada or kubefed member: the engine's own Ready condition (1 True, 0 False, -1 Unknown or absent); fedns's probes decide, this is reported only",
            metrics.engine_ready.clone(),
        );
        registry.register(
            "fedns_member_probe_duration_seconds",
            "Duration of member health probes, in seconds",
            metrics.probe_seconds.clone(),
        );
        registry.register(
            "fedns_reconciles",
            "Record reconciles by kind and result",
            metrics.reconciles.clone(),
        );
        registry.register(
            "fedns_dnsendpoint_writes",
            "DNSEndpoint objects written",
            metrics.dnsendpoint_writes.clone(),
        );
        registry.register(
            "fedns_dnsendpoint_previews",
            "DNSEndpoint specs published by this process ahead of their writes, previewed for a change \
             that reached many records at once (a Gateway's addresses and the routes attached to it)",
            metrics.dnsendpoint_previews.clone(),
        );
        registry.register(
            "fedns_change_to_dnsendpoint_write_seconds",
            "Time from a member change being seen to its DNSEndpoint being written, in seconds",
            metrics.change_to_write.clone(),
        );
        metrics
    }

    /// Sets the member gauges.
    pub fn set_members(&self, ready: usize, not_ready: usize) {
        self.members
            .get_or_create(&StateLabel { state: "ready" })
            .set(ready as i64);
        self.members
            .get_or_create(&StateLabel { state: "not_ready" })
            .set(not_ready as i64);
    }

    /// Sets the per-member gauges: (cluster, source, fedns Ready, engine
    /// Ready for engine members: `Some(None)` when the engine reports none).
    pub fn set_member_states(&self, states: &[(String, &'static str, bool, Option<Option<bool>>)]) {
        self.member_ready.clear();
        self.engine_ready.clear();
        for (cluster, source, ready, engine) in states {
            let label = MemberLabel {
                cluster: cluster.clone(),
                source,
            };
            self.member_ready.get_or_create(&label).set(i64::from(*ready));
            if let Some(engine) = engine {
                self.engine_ready
                    .get_or_create(&label)
                    .set(engine.map_or(-1, i64::from));
            }
        }
    }

    /// Records one probe.
    pub fn observe_probe(&self, cluster: &str, elapsed: Duration) {
        self.probe_seconds
            .get_or_create(&ClusterLabel {
                cluster: cluster.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts a DNSEndpoint spec previewed ahead of its write.
    pub fn dnsendpoint_previewed(&self) {
        self.dnsendpoint_previews.inc();
    }

    /// Counts one reconcile.
    pub fn reconciled(&self, kind: &'static str, ok: bool) {
        self.reconciles
            .get_or_create(&ReconcileLabel {
                kind,
                result: if ok { "success" } else { "error" },
            })
            .inc();
    }

    /// Sets how many records fail open now; counts a record starting to.
    pub fn failing_open(&self, now: usize, engaged: bool) {
        self.failing_open.set(i64::try_from(now).unwrap_or(i64::MAX));
        if engaged {
            self.fail_open_engaged.inc();
        }
    }

    /// Sets how many records' DNSEndpoints are over the size limit now.
    pub fn dnsendpoints_too_large(&self, now: usize) {
        self.too_large.set(i64::try_from(now).unwrap_or(i64::MAX));
    }

    /// Counts one DNSEndpoint write, `since` the change that caused it.
    pub fn dnsendpoint_written(&self, since: Duration) {
        self.dnsendpoint_writes.inc();
        self.change_to_write.observe(since.as_secs_f64());
    }
}
