//! Query metrics: per-worker atomic counters, summed at scrape time and
//! exposed through a prometheus-client [`Collector`]. The query path only
//! does relaxed increments on its own worker's cache lines. TCP connection
//! counts ([`TcpStats`]) are shared atomics, touched once per connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::zone::store::ZoneStore;

/// How the request arrived; decides the response size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: responses larger than the negotiated payload are truncated (TC).
    Udp,
    /// TCP (RFC 7766): up to 65535 octets.
    Tcp,
}

/// What happened to one request, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    /// QTYPE asked (0 when the question could not be read).
    pub qtype: u16,
    /// RCODE sent, extended RCODEs included (e.g. 16 for BADVERS).
    pub rcode: u16,
    /// TC was set.
    pub truncated: bool,
}

/// The shape of an answer, as its response reads (RFC 1035 §4.1.1,
/// RFC 2308 §2 for NXDOMAIN and NODATA): what a member-side discovery
/// replica reports as local (records), fallback (a CNAME chain),
/// NXDOMAIN and NODATA answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// NOERROR whose answer section starts with the type asked (or
    /// anything but a CNAME when the type asked was not CNAME).
    Records,
    /// NOERROR whose answer section starts with a CNAME for a question of
    /// another type: the rest of the chain follows.
    Cname,
    /// RCODE 3: the name does not exist.
    NxDomain,
    /// NOERROR with an empty answer section: the name exists, the type
    /// does not (a referral counts here too).
    NoData,
    /// Any other RCODE, a truncated response, or a response too short to
    /// read.
    Other,
}

impl AnswerKind {
    const ALL: [(AnswerKind, &'static str); 5] = [
        (AnswerKind::Records, "records"),
        (AnswerKind::Cname, "cname"),
        (AnswerKind::NxDomain, "nxdomain"),
        (AnswerKind::NoData, "nodata"),
        (AnswerKind::Other, "other"),
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// Answers counted by [`AnswerKind`], all workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerKinds {
    /// [`AnswerKind::Records`].
    pub records: u64,
    /// [`AnswerKind::Cname`].
    pub cname: u64,
    /// [`AnswerKind::NxDomain`].
    pub nxdomain: u64,
    /// [`AnswerKind::NoData`].
    pub nodata: u64,
    /// [`AnswerKind::Other`].
    pub other: u64,
}

/// Response rate limiting counters (`query/rrl.rs`), read by the metrics
/// collector.
#[derive(Debug, Default)]
pub(crate) struct RrlCounters {
    pub dropped: AtomicU64,
    pub slipped: AtomicU64,
}

/// QTYPE label values; anything else counts as `other`.
const QTYPES: [(u16, &str); 11] = [
    (1, "A"),
    (28, "AAAA"),
    (5, "CNAME"),
    (6, "SOA"),
    (2, "NS"),
    (16, "TXT"),
    (33, "SRV"),
    (15, "MX"),
    (12, "PTR"),
    (255, "ANY"),
    (0, "other"),
];
/// RCODE label values; anything else counts as `other`.
const RCODES: [(u16, &str); 7] = [
    (0, "NOERROR"),
    (1, "FORMERR"),
    (3, "NXDOMAIN"),
    (4, "NOTIMP"),
    (5, "REFUSED"),
    (16, "BADVERS"),
    (u16::MAX, "other"),
];
/// Upper bounds of the answer-latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 10] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.01, 0.1,
];

fn qtype_index(qtype: u16) -> usize {
    QTYPES.iter().position(|(t, _)| *t == qtype).unwrap_or(QTYPES.len() - 1)
}

fn rcode_index(rcode: u16) -> usize {
    RCODES.iter().position(|(r, _)| *r == rcode).unwrap_or(RCODES.len() - 1)
}

/// One worker's counters, padded so workers never share a cache line.
#[repr(align(128))]
#[derive(Debug)]
pub struct WorkerMetrics {
    transport: Transport,
    queries: [[AtomicU64; RCODES.len()]; QTYPES.len()],
    truncated: AtomicU64,
    dropped: AtomicU64,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_nanos: AtomicU64,
    kinds: [AtomicU64; AnswerKind::ALL.len()],
}

impl WorkerMetrics {
    fn new(transport: Transport) -> Self {
        WorkerMetrics {
            transport,
            queries: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            truncated: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            latency_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            latency_count: AtomicU64::new(0),
            latency_sum_nanos: AtomicU64::new(0),
            kinds: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one answer by its shape (see `query::answer::answer_kind`).
    #[inline]
    pub fn record_kind(&self, kind: AnswerKind) {
        self.kinds[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one answered query and how long it took to answer.
    #[inline]
    pub fn record(&self, answered: &Answered, elapsed: Duration) {
        self.queries[qtype_index(answered.qtype)][rcode_index(answered.rcode)].fetch_add(1, Ordering::Relaxed);
        if answered.truncated {
            self.truncated.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = elapsed.as_secs_f64();
        if let Some(bucket) = LATENCY_BUCKETS.iter().position(|b| seconds <= *b) {
            self.latency_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_nanos
            .fetch_add(elapsed.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// Counts one packet that got no response (too short, or a response).
    #[inline]
    pub fn record_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// TCP connection counters of all listeners, updated by the connection
/// registry (`tcp.rs`) once per connection event, never per query.
#[derive(Debug, Default)]
pub(crate) struct TcpCounters {
    pub(crate) open: AtomicU64,
    pub(crate) accepted: AtomicU64,
    pub(crate) closed_idle_timeout: AtomicU64,
    pub(crate) closed_load_timeout: AtomicU64,
    pub(crate) evicted: AtomicU64,
    pub(crate) evicted_per_client: AtomicU64,
    pub(crate) refused_per_client: AtomicU64,
    pub(crate) refused_cap: AtomicU64,
}

/// A reading of the TCP connection counters (all listeners of a server).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Connections open now (`fedns_dns_tcp_connections`).
    pub open: u64,
    /// Connections admitted since start (`fedns_dns_tcp_accepted_total`).
    pub accepted: u64,
    /// Closed after `tcp_idle_timeout` without a query
    /// (`fedns_dns_tcp_idle_closed_total{reason="timeout"}`).
    pub closed_idle_timeout: u64,
    /// Closed after the shorter idle timeout used above the high-water mark
    /// (`fedns_dns_tcp_idle_closed_total{reason="load_timeout"}`).
    pub closed_load_timeout: u64,
    /// Closed at the connection cap, longest idle first, to admit a new one
    /// (`fedns_dns_tcp_idle_closed_total{reason="evicted"}`).
    pub evicted: u64,
    /// Closed because its client, at `max_tcp_connections_per_client`,
    /// opened a new one: the client's longest-idle connection
    /// (`fedns_dns_tcp_idle_closed_total{reason="evicted_per_client"}`).
    pub evicted_per_client: u64,
    /// Closed at accept: the client already held its per-client limit
    /// (`fedns_dns_tcp_refused_total{reason="per_client"}`).
    pub refused_per_client: u64,
    /// Closed at accept: at the cap with no idle connection to close
    /// (`fedns_dns_tcp_refused_total{reason="cap"}`).
    pub refused_cap: u64,
}

impl TcpCounters {
    fn stats(&self) -> TcpStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TcpStats {
            open: get(&self.open),
            accepted: get(&self.accepted),
            closed_idle_timeout: get(&self.closed_idle_timeout),
            closed_load_timeout: get(&self.closed_load_timeout),
            evicted: get(&self.evicted),
            evicted_per_client: get(&self.evicted_per_client),
            refused_per_client: get(&self.refused_per_client),
            refused_cap: get(&self.refused_cap),
        }
    }
}

/// All workers' metrics plus the store's gauges.
#[derive(Debug, Default)]
pub struct DnsMetrics {
    workers: Mutex<Vec<Arc<WorkerMetrics>>>,
    store: Mutex<Option<Arc<ZoneStore>>>,
    tcp: Arc<TcpCounters>,
    rrl: Arc<RrlCounters>,
}

impl DnsMetrics {
    /// A new, empty set.
    pub fn new() -> Arc<DnsMetrics> {
        Arc::new(DnsMetrics::default())
    }

    /// Counters for one more worker.
    pub fn worker(&self, transport: Transport) -> Arc<WorkerMetrics> {
        let worker = Arc::new(WorkerMetrics::new(transport));
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(worker.clone());
        worker
    }

    /// Reports the serial, record count and update count of `store`.
    pub fn watch_store(&self, store: Arc<ZoneStore>) {
        *self.store.lock().unwrap_or_else(|e| e.into_inner()) = Some(store);
    }

    /// The response rate limiter's counters.
    pub(crate) fn rrl_counters(&self) -> Arc<RrlCounters> {
        self.rrl.clone()
    }

    /// UDP responses dropped and sent truncated (slipped) by response rate
    /// limiting so far.
    pub fn rrl_stats(&self) -> (u64, u64) {
        (
            self.rrl.dropped.load(Ordering::Relaxed),
            self.rrl.slipped.load(Ordering::Relaxed),
        )
    }

    /// The TCP connection counters, shared with the connection registry.
    pub(crate) fn tcp_counters(&self) -> Arc<TcpCounters> {
        self.tcp.clone()
    }

    /// TCP connections open, admitted, closed for idleness and refused so far.
    pub fn tcp_stats(&self) -> TcpStats {
        self.tcp.stats()
    }

    /// Answers so far by shape, all workers.
    pub fn answer_kinds(&self) -> AnswerKinds {
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        let sum = |kind: AnswerKind| -> u64 {
            workers
                .iter()
                .map(|w| w.kinds[kind.index()].load(Ordering::Relaxed))
                .sum()
        };
        AnswerKinds {
            records: sum(AnswerKind::Records),
            cname: sum(AnswerKind::Cname),
            nxdomain: sum(AnswerKind::NxDomain),
            nodata: sum(AnswerKind::NoData),
            other: sum(AnswerKind::Other),
        }
    }

    /// Total queries answered so far, all workers.
    pub fn answered_total(&self) -> u64 {
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|w| w.latency_count.load(Ordering::Relaxed))
            .sum()
    }
}

fn transport_label(t: Transport) -> &'static str {
    match t {
        Transport::Udp => "udp",
        Transport::Tcp => "tcp",
    }
}

impl Collector for DnsMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        {
            let mut family = encoder.encode_descriptor(
                "fedns_dns_queries",
                "DNS queries answered, by transport, QTYPE and RCODE",
                None,
                MetricType::Counter,
            )?;
            for transport in [Transport::Udp, Transport::Tcp] {
                for (qi, (_, qname)) in QTYPES.iter().enumerate() {
                    for (ri, (_, rname)) in RCODES.iter().enumerate() {
                        let total: u64 = workers
                            .iter()
                            .filter(|w| w.transport == transport)
                            .map(|w| w.queries[qi][ri].load(Ordering::Relaxed))
                            .sum();
                        if total == 0 {
                            continue;
                        }
                        let labels = [
                            ("transport", transport_label(transport)),
                            ("qtype", qname),
                            ("rcode", rname),
                        ];
                        ConstCounter::new(total).encode(family.encode_family(&labels)?)?;
                    }
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "fedns_dns_answers",
                "Answers by shape: records, cname (a CNAME chain), nxdomain, nodata, other",
                None,
                MetricType::Counter,
            )?;
            for (kind, label) in AnswerKind::ALL {
                let total: u64 = workers
                    .iter()
                    .map(|w| w.kinds[kind.index()].load(Ordering::Relaxed))
                    .sum();
                ConstCounter::new(total).encode(family.encode_family(&[("kind", label)])?)?;
            }
        }
        let sum =
            |f: fn(&WorkerMetrics) -> &AtomicU64| -> u64 { workers.iter().map(|w| f(w).load(Ordering::Relaxed)).sum() };
        ConstCounter::new(sum(|w| &w.truncated)).encode(encoder.encode_descriptor(
            "fedns_dns_truncated",
            "UDP responses sent with TC set",
            None,
            MetricType::Counter,
        )?)?;
        ConstCounter::new(sum(|w| &w.dropped)).encode(encoder.encode_descriptor(
            "fedns_dns_dropped",
            "Packets that got no response (shorter than a header, or not a query)",
            None,
            MetricType::Counter,
        )?)?;
        {
            let mut cumulative = 0;
            let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS
                .iter()
                .enumerate()
                .map(|(i, bound)| {
                    cumulative += workers
                        .iter()
                        .map(|w| w.latency_buckets[i].load(Ordering::Relaxed))
                        .sum::<u64>();
                    (*bound, cumulative)
                })
                .chain(std::iter::once((f64::INFINITY, sum(|w| &w.latency_count))))
                .collect();
            let count = sum(|w| &w.latency_count);
            let seconds = sum(|w| &w.latency_sum_nanos) as f64 / 1e9;
            let metric = encoder.encode_descriptor(
                "fedns_dns_answer_duration_seconds",
                "Time from reading a query to having its response ready, in seconds",
                None,
                MetricType::Histogram,
            )?;
            let mut metric = metric;
            metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(seconds, count, &buckets, None)?;
        }
        {
            let tcp = self.tcp.stats();
            ConstGauge::new(i64::try_from(tcp.open).unwrap_or(i64::MAX)).encode(encoder.encode_descriptor(
                "fedns_dns_tcp_connections",
                "TCP connections open now",
                None,
                MetricType::Gauge,
            )?)?;
            ConstCounter::new(tcp.accepted).encode(encoder.encode_descriptor(
                "fedns_dns_tcp_accepted",
                "TCP connections admitted",
                None,
                MetricType::Counter,
            )?)?;
            let mut family = encoder.encode_descriptor(
                "fedns_dns_tcp_idle_closed",
                "TCP connections closed for idleness: after the idle timeout (timeout), after the shorter \
                 timeout above the high-water mark (load_timeout), or at the connection cap to admit a new \
                 connection, longest idle first (evicted), or when a client at its per-client limit opened \
                 a new one: that client's longest-idle (evicted_per_client)",
                None,
                MetricType::Counter,
            )?;
            for (reason, value) in [
                ("timeout", tcp.closed_idle_timeout),
                ("load_timeout", tcp.closed_load_timeout),
                ("evicted", tcp.evicted),
                ("evicted_per_client", tcp.evicted_per_client),
            ] {
                ConstCounter::new(value).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        {
            let tcp = self.tcp.stats();
            let mut family = encoder.encode_descriptor(
                "fedns_dns_tcp_refused",
                "TCP connections closed at accept: the client address (IPv6: its /64) already held \
                 --max-tcp-connections-per-client (per_client), or the cap was reached with no idle \
                 connection to close (cap)",
                None,
                MetricType::Counter,
            )?;
            for (reason, value) in [("per_client", tcp.refused_per_client), ("cap", tcp.refused_cap)] {
                ConstCounter::new(value).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        if let Some(store) = self.store.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            let snapshot = store.load();
            {
                let mut family = encoder.encode_descriptor(
                    "fedns_dns_zone_serial",
                    "SOA serial served, per zone",
                    None,
                    MetricType::Gauge,
                )?;
                for zone in snapshot.zones() {
                    ConstGauge::new(i64::from(zone.serial))
                        .encode(family.encode_family(&[("zone", zone.apex.as_str())])?)?;
                }
            }
            {
                let mut family = encoder.encode_descriptor(
                    "fedns_dns_zone_rrsets",
                    "RRsets served, per zone (SOA and NS included)",
                    None,
                    MetricType::Gauge,
                )?;
                for zone in snapshot.zones() {
                    ConstGauge::new(zone.rrset_count as i64)
                        .encode(family.encode_family(&[("zone", zone.apex.as_str())])?)?;
                }
            }
            ConstGauge::new(store.last_build_seconds()).encode(encoder.encode_descriptor(
                "fedns_dns_snapshot_build_seconds",
                "How long building (full publish) or updating (incremental publish) the last published zone snapshot took, in seconds",
                None,
                MetricType::Gauge,
            )?)?;
            ConstCounter::new(store.updates()).encode(encoder.encode_descriptor(
                "fedns_dns_snapshot_updates",
                "Zone snapshots published since start",
                None,
                MetricType::Counter,
            )?)?;
            ConstGauge::new(i64::from(store.serves_restored())).encode(encoder.encode_descriptor(
                "fedns_dns_snapshot_restored",
                "1 while the zones served are those restored from the snapshot file at start \
                 (--snapshot-file), not yet published again from the objects; else 0",
                None,
                MetricType::Gauge,
            )?)?;
            ConstCounter::new(store.late_serial_records()).encode(encoder.encode_descriptor(
                "fedns_dns_serial_records_late",
                "Recorded zone serials (Domain status.serialRecord) that reached this replica only after \
                 the instant every replica switches to them: it showed the previous serial meanwhile",
                None,
                MetricType::Counter,
            )?)?;
            let t = store.transfer_counters();
            {
                let mut family = encoder.encode_descriptor(
                    "fedns_dns_transfers",
                    "Zone transfers sent (full: AXFR or IXFR answered with the zone; incremental), \
                 refused (address, key or zone), and signed requests whose TSIG did not verify",
                    None,
                    MetricType::Counter,
                )?;
                for (result, value) in [
                    ("full", t.axfr.get()),
                    ("incremental", t.ixfr.get()),
                    ("refused", t.refused.get()),
                    ("tsig_failed", t.tsig_failures.get()),
                ] {
                    ConstCounter::new(value).encode(family.encode_family(&[("result", result)])?)?;
                }
            }
            let mut family = encoder.encode_descriptor(
                "fedns_dns_notify",
                "NOTIFY messages sent (retries included), acknowledged, and given up",
                None,
                MetricType::Counter,
            )?;
            for (result, value) in [
                ("sent", t.notify_sent.get()),
                ("acked", t.notify_acked.get()),
                ("failed", t.notify_failed.get()),
            ] {
                ConstCounter::new(value).encode(family.encode_family(&[("result", result)])?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "fedns_dns_rrl_limited",
            "UDP responses held back by response rate limiting: dropped, or sent truncated (slipped) \
             so real clients retry over TCP",
            None,
            MetricType::Counter,
        )?;
        for (action, value) in [
            ("dropped", self.rrl.dropped.load(Ordering::Relaxed)),
            ("slipped", self.rrl.slipped.load(Ordering::Relaxed)),
        ] {
            ConstCounter::new(value).encode(family.encode_family(&[("action", action)])?)?;
        }
        Ok(())
    }
}
