//! Data-plane probe metrics (`fedns_probe_*`).

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::check::State;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProbeLabel {
    protocol: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabel {
    to: &'static str,
}

/// Data-plane probe metrics (`fedns_probe_*`).
#[derive(Debug, Clone)]
pub struct ProbeMetrics {
    probes: Family<ProbeLabel, Counter>,
    duration: Family<ProbeLabel, Histogram, fn() -> Histogram>,
    transitions: Family<TransitionLabel, Counter>,
    pub(super) targets: Gauge,
    /// The series of `probes` and `duration`, by [protocol][passed], taken
    /// from the families once so a probe neither hashes labels nor locks.
    series: Arc<[[(Counter, Histogram); 2]; 3]>,
}

fn probe_histogram() -> Histogram {
    Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
}

impl Default for ProbeMetrics {
    /// Metrics registered nowhere (tests).
    fn default() -> Self {
        let probes = Family::<ProbeLabel, Counter>::default();
        let duration = Family::<ProbeLabel, Histogram, fn() -> Histogram>::new_with_constructor(probe_histogram);
        let series = ["TCP", "HTTP", "HTTPS"].map(|protocol| {
            ["fail", "pass"].map(|result| {
                let label = ProbeLabel { protocol, result };
                (
                    probes.get_or_create(&label).clone(),
                    duration.get_or_create(&label).clone(),
                )
            })
        });
        ProbeMetrics {
            probes,
            duration,
            transitions: Family::default(),
            targets: Gauge::default(),
            series: Arc::new(series),
        }
    }
}

impl ProbeMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> ProbeMetrics {
        let metrics = ProbeMetrics::default();
        registry.register(
            "fedns_probe",
            "Data-plane probes by protocol and result (pass, fail)",
            metrics.probes.clone(),
        );
        registry.register(
            "fedns_probe_duration_seconds",
            "Duration of data-plane probes, in seconds",
            metrics.duration.clone(),
        );
        registry.register(
            "fedns_probe_transitions",
            "Load balancer addresses changing state (to Up or Down)",
            metrics.transitions.clone(),
        );
        registry.register(
            "fedns_probe_targets",
            "Load balancer addresses probed (address and check pairs)",
            metrics.targets.clone(),
        );
        metrics
    }

    pub(super) fn observe(&self, protocol: fedns_api::ProbeProtocol, passed: bool, took: Duration) {
        let protocol = match protocol {
            fedns_api::ProbeProtocol::Tcp => 0,
            fedns_api::ProbeProtocol::Http => 1,
            fedns_api::ProbeProtocol::Https => 2,
        };
        let (count, duration) = &self.series[protocol][usize::from(passed)];
        count.inc();
        duration.observe(took.as_secs_f64());
    }

    pub(super) fn transition(&self, to: State) {
        self.transitions
            .get_or_create(&TransitionLabel { to: to.as_str() })
            .inc();
    }
}
