//! # fedns-dnsserver
//!
//! fedns's authoritative DNS server. No Kubernetes code: it serves
//! whatever [`ZoneContent`] the publishing pipeline hands to a
//! [`ZoneStore`].
//!
//! * [`ZoneStore::publish`] builds an immutable [`Snapshot`] (every answer
//!   pre-rendered to wire format by hickory-proto, keyed by the lower-cased
//!   wire-format owner name) and swaps it in atomically; SOA serials rise
//!   on every change (RFC 1982).
//! * [`ZoneStore::publish_changes`] applies [`ZoneChanges`] (owners whose
//!   records were replaced) on top of the last publish at a cost that
//!   follows the change, not the zone: the snapshot's names live in
//!   chunks by hash, shared between snapshots, and only the chunks of the
//!   changed names (and of the names whose answers go through them) are
//!   copied and re-rendered. The serial is written into stored answers at
//!   query time, so a new serial re-renders nothing.
//! * [`answer()`] answers one request from a snapshot: RFC 1034 §4.3.2
//!   (exact match, CNAME chains across the served zones, wildcards,
//!   referrals), NXDOMAIN/NODATA with the SOA (RFC 2308), REFUSED outside
//!   every zone, minimal ANY (RFC 8482), EDNS0 (RFC 6891) with a 1232-octet
//!   default UDP payload and TC when the answer does not fit, BADVERS,
//!   NOTIMP for opcodes other than QUERY, FORMERR for malformed requests.
//! * [`DnsServer`] runs UDP and TCP (RFC 7766) listeners; at the TCP
//!   connection cap the longest-idle connection is closed for a new one,
//!   with a per-client limit and a shorter idle timeout under load
//!   (RFC 7766 §6.2.3).
//! * Zone transfers (AXFR, RFC 5936; IXFR from a journal of the last
//!   [`JOURNAL_VERSIONS`] changes, RFC 1995) over TCP to the networks and
//!   TSIG keys (RFC 8945) of a zone's [`TransferPolicy`], every message
//!   signed; NOTIFY (RFC 1996) to its secondaries on every serial change,
//!   retried with backoff until acknowledged. Requests that are neither
//!   transfers nor TSIG-signed never leave the fast path.
//! * Response rate limiting over UDP ([`RrlConfig`], as Knot's `rrl`):
//!   responses per second per client prefix (/24, /56) and response
//!   class, every `slip`-th limited response truncated, exempt networks.
//! * DNSSEC ([`DnssecConfig`]): a signed zone's answers to queries with
//!   the DO bit carry RRSIGs made when the snapshot is built (every
//!   RRset, every policy variant), the DNSKEY RRset is served at the
//!   apex, and denial of existence is RFC 9824 compact denial (a minimal
//!   NSEC at the query name; only a missing name's NSEC is signed per
//!   query, on the stack).
//! * [`DnsMetrics`] exposes query counts, latency and TCP connection
//!   counts ([`TcpStats`]) to Prometheus.
//!
//! The source is grouped by job, each folder depending only on those below
//! it: `zone/` (the zone model: content, tree, snapshots, the store, zone
//! versions and serials) ← `query/` (parsing and answering one request,
//! RRL, answer checks) ← `xfr/` (AXFR/IXFR, NOTIFY, TSIG) ← `net/` (UDP,
//! TCP, the server). `metrics.rs` sits above `zone/` and below the other
//! three. The query path never calls `xfr/`.

mod metrics;
mod net;
mod query;
mod xfr;
mod zone;

pub use hickory_proto;
pub use metrics::{AnswerKind, AnswerKinds, DnsMetrics, TcpStats, WorkerMetrics};
pub use net::server::{DnsServer, ServerConfig, DEFAULT_MAX_TCP_CONNECTIONS_PER_CLIENT};
pub use query::answer::{self, answer, answer_from, answer_kind, AnswerConfig, Answered, Transport};
pub use query::check::{check_answer, check_answer_from};
pub use query::rrl::RrlConfig;
pub use xfr::check::check_transfer;
pub use zone::content::{SoaFields, ZoneContent};
pub use zone::routing::{ClientRegions, GeoIpDb, GeoLocation, RoutedName, RoutedVariant, RoutingPolicy};
pub use zone::serials::{RecordedSerial, SerialMode};
pub use zone::signing_key::{DenialOfExistence, DnssecAlgorithm, DnssecConfig, DnssecKey};
pub use zone::snapshot::{ClientChoice, RouteReport, Snapshot, ZoneSummary};
pub use zone::store::{
    next_serial, serial_gt, Counter, NeedsWholePublish, PublishOutcome, SavedSnapshot, SnapshotFileError,
    TransferCounters, ZoneChanges, ZoneSerialState, ZoneStore,
};
pub use zone::tree::SkippedRecord;
pub use zone::tsig_key::{Algorithm as TsigAlgorithm, TsigKey};
pub use zone::version::{TransferPolicy, JOURNAL_VERSIONS};
