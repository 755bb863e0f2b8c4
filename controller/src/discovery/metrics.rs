//! Metrics of member-side discovery, per member: how many discovery
//! owners answer the local Service and how many the CNAME to the
//! federated name, and how often the answers changed. NXDOMAIN answers
//! are counted by the DNS server's own `rcode` metrics.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    member: String,
    /// `local` or `fallback`.
    answer: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemberLabels {
    member: String,
}

/// `fedns_discovery_names{member,answer}` (gauge) and
/// `fedns_discovery_answer_changes_total{member}` (counter).
#[derive(Clone, Debug, Default)]
pub struct DiscoveryMetrics {
    names: Family<AnswerLabels, Gauge>,
    changes: Family<MemberLabels, Counter>,
}

impl DiscoveryMetrics {
    /// Registers the metrics in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "fedns_discovery_names",
            "Discovery owner names of a member by answer: local (the member's own Service) or fallback (CNAME to the federated name)",
            self.names.clone(),
        );
        registry.register(
            "fedns_discovery_answer_changes",
            "Updates of a member's discovery zones that changed an answer",
            self.changes.clone(),
        );
    }

    /// Sets the owner counts of `member`.
    pub fn set_names(&self, member: &str, local: usize, fallback: usize) {
        for (answer, count) in [("local", local), ("fallback", fallback)] {
            self.names
                .get_or_create(&AnswerLabels {
                    member: member.to_owned(),
                    answer,
                })
                .set(count as i64);
        }
    }

    /// Counts one update of `member`'s answers.
    pub fn updated(&self, member: &str) {
        self.changes
            .get_or_create(&MemberLabels {
                member: member.to_owned(),
            })
            .inc();
    }
}
