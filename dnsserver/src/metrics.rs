//! Query metrics: per-worker atomic counters, summed at scrape time and
//! exposed through a prometheus-client [`Collector`]. The query path only
//! does relaxed increments on its own worker's cache lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::answer::{Answered, Transport};
use crate::store::ZoneStore;

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
        }
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

/// All workers' metrics plus the store's gauges.
#[derive(Debug, Default)]
pub struct DnsMetrics {
    workers: Mutex<Vec<Arc<WorkerMetrics>>>,
    store: Mutex<Option<Arc<ZoneStore>>>,
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
            ConstCounter::new(store.updates()).encode(encoder.encode_descriptor(
                "fedns_dns_snapshot_updates",
                "Zone snapshots published since start",
                None,
                MetricType::Counter,
            )?)?;
        }
        Ok(())
    }
}
