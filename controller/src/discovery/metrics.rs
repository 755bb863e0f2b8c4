//! Metrics of member-side discovery, per member: the answers given
//! (local, fallback, NXDOMAIN, NODATA), how many discovery owners answer
//! the local Service and how many the CNAME to the federated name, and how
//! often the answers changed.

use std::sync::Arc;

use fedns_dnsserver::DnsMetrics;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
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

    /// Registers `fedns_discovery_answers_total{member,answer}`: the
    /// answers of `member`'s replica server, read from its `dns` counters
    /// at scrape time (see [`DiscoveryAnswers`]).
    pub fn register_answers(registry: &mut Registry, member: &str, dns: Arc<DnsMetrics>) {
        registry.register_collector(Box::new(DiscoveryAnswers::new(member, dns)));
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

/// `fedns_discovery_answers_total{member,answer}`: the answers of a
/// member-side replica by kind, from its DNS server's answer shapes
/// ([`fedns_dnsserver::AnswerKind`]): `local` (records: the member's own
/// Service), `fallback` (a CNAME chain to the federated name), `nxdomain`,
/// `nodata`. The member's cluster DNS forwards only the discovery domain to
/// the replica, so its answers are discovery answers; a client asking the
/// replica for a federation name directly counts too.
#[derive(Debug)]
pub struct DiscoveryAnswers {
    member: String,
    dns: Arc<DnsMetrics>,
}

impl DiscoveryAnswers {
    /// The answers of `member`'s replica, read from its server's `dns`
    /// counters.
    pub fn new(member: &str, dns: Arc<DnsMetrics>) -> DiscoveryAnswers {
        DiscoveryAnswers {
            member: member.to_owned(),
            dns,
        }
    }

    /// The counts as `(answer label, count)`.
    pub fn counts(&self) -> [(&'static str, u64); 4] {
        let kinds = self.dns.answer_kinds();
        [
            ("local", kinds.records),
            ("fallback", kinds.cname),
            ("nxdomain", kinds.nxdomain),
            ("nodata", kinds.nodata),
        ]
    }
}

impl Collector for DiscoveryAnswers {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "fedns_discovery_answers",
            "Answers of a member-side discovery replica: local (the member's own Service), fallback (CNAME chain to the federated name), nxdomain, nodata",
            None,
            MetricType::Counter,
        )?;
        for (answer, count) in self.counts() {
            let labels = [("member", self.member.as_str()), ("answer", answer)];
            ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}
