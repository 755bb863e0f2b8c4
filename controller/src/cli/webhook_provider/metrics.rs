//! `fedns webhook-provider`'s metrics, served on its health port
//! (`/metrics`, Prometheus text format), as external-dns's webhook
//! provider guide asks of providers (docs/tutorials/webhook-provider.md
//! at v0.22.0: `/healthz` required, `/metrics` optional).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// `/`, `/records`, `/adjustendpoints`.
    path: String,
    method: String,
    /// The HTTP status answered.
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    /// The rule that refused ([`super::admission::Refusal::rule`]).
    rule: String,
}

/// Request and record counts of one instance.
#[derive(Debug, Default, Clone)]
pub struct WebhookMetrics {
    requests: Family<RequestLabels, Counter>,
    refused: Family<RuleLabels, Counter>,
    records: Gauge,
}

impl WebhookMetrics {
    /// Registers every metric in `registry` (prefix `fedns_webhook_`).
    pub fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("fedns_webhook");
        sub.register(
            "requests",
            "Protocol requests answered, by path, method and status",
            self.requests.clone(),
        );
        sub.register(
            "refused_changes",
            "POST /records requests refused before anything was stored, by rule",
            self.refused.clone(),
        );
        sub.register(
            "records",
            "Endpoints this external-dns instance holds (its DNSEndpoint), registry records included",
            self.records.clone(),
        );
    }

    /// One request answered with `code`.
    pub fn request(&self, path: &str, method: &str, code: u16) {
        self.requests
            .get_or_create(&RequestLabels {
                path: path.to_owned(),
                method: method.to_owned(),
                code: code.to_string(),
            })
            .inc();
    }

    /// One change refused by `rule`.
    pub fn refused(&self, rule: &str) {
        self.refused.get_or_create(&RuleLabels { rule: rule.to_owned() }).inc();
    }

    /// The instance holds `count` endpoints.
    pub fn set_records(&self, count: usize) {
        self.records.set(i64::try_from(count).unwrap_or(i64::MAX));
    }
}
