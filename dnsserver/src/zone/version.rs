//! The versions of a zone the store keeps for transfers: who may
//! transfer it ([`TransferPolicy`]), its records at one serial
//! ([`ZoneVersion`]) and the journal of [`Delta`]s between serials
//! ([`TransferZone`]). The store writes them at every publish; the
//! transfer code (`xfr/`) reads them to answer AXFR and IXFR.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_proto::rr::{Name, RData, Record};
use hickory_proto::serialize::binary::BinEncodable;
use ipnet::IpNet;

use super::tsig_key::TsigKey;

/// Deltas kept per zone for IXFR.
pub const JOURNAL_VERSIONS: usize = 16;
/// Records kept in one zone's journal, all deltas together; older deltas
/// go first beyond it.
const JOURNAL_RECORDS: usize = 200_000;

/// Who may transfer a zone and whom to NOTIFY of changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferPolicy {
    /// Client networks allowed to transfer (AXFR/IXFR). Empty: nobody.
    pub allow: Vec<IpNet>,
    /// TSIG keys: when not empty, a transfer must be signed with one of
    /// them; signed SOA queries and NOTIFY use them too (NOTIFY the first).
    pub keys: Vec<TsigKey>,
    /// Secondaries sent a NOTIFY (RFC 1996) on every serial change.
    pub notify: Vec<SocketAddr>,
}

impl TransferPolicy {
    /// True when the zone takes part in transfers at all (the server then
    /// keeps its records and journal).
    pub fn enabled(&self) -> bool {
        !self.allow.is_empty() || !self.keys.is_empty() || !self.notify.is_empty()
    }

    pub(crate) fn allows(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.allow.iter().any(|net| net.contains(&ip))
    }
}

/// One record and its wire form (the comparison key of diffs).
pub(crate) type Keyed = (Box<[u8]>, Record);

fn keyed(record: Record) -> Keyed {
    let bytes = record.to_bytes().unwrap_or_default().into_boxed_slice();
    (bytes, record)
}

/// A zone's records at one serial (SOA apart).
#[derive(Debug)]
pub(crate) struct ZoneVersion {
    pub apex: Name,
    pub serial: u32,
    pub soa: Record,
    /// Sorted by wire form, no SOA.
    pub records: Vec<Keyed>,
}

impl ZoneVersion {
    pub(crate) fn new(apex: Name, soa: Record, records: Vec<Record>) -> ZoneVersion {
        let serial = match &soa.data {
            RData::SOA(soa) => soa.serial,
            _ => 0,
        };
        let mut records: Vec<Keyed> = records.into_iter().map(keyed).collect();
        records.sort_by(|a, b| a.0.cmp(&b.0));
        records.dedup_by(|a, b| a.0 == b.0);
        ZoneVersion {
            apex,
            serial,
            soa,
            records,
        }
    }
}

impl ZoneVersion {
    /// The same records under `serial` (its SOA's SERIAL too).
    pub(crate) fn with_serial(mut self, serial: u32) -> ZoneVersion {
        self.serial = serial;
        if let RData::SOA(soa) = &mut self.soa.data {
            soa.serial = serial;
        }
        self
    }
}

/// The change from one version to the next.
#[derive(Debug)]
pub(crate) struct Delta {
    pub from_soa: Record,
    pub from: u32,
    pub deleted: Vec<Keyed>,
    pub added: Vec<Keyed>,
}

impl Delta {
    pub(crate) fn between(old: &ZoneVersion, new: &ZoneVersion) -> Delta {
        let (mut deleted, mut added) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        let (a, b) = (&old.records, &new.records);
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    deleted.push(x.clone());
                    i += 1;
                }
                (Some(x), None) => {
                    deleted.push(x.clone());
                    i += 1;
                }
                (_, Some(y)) => {
                    added.push(y.clone());
                    j += 1;
                }
                (None, None) => break,
            }
        }
        Delta {
            from_soa: old.soa.clone(),
            from: old.serial,
            deleted,
            added,
        }
    }

    fn size(&self) -> usize {
        self.deleted.len() + self.added.len()
    }
}

/// Transfer state of one zone.
#[derive(Debug)]
pub(crate) struct TransferZone {
    pub policy: Arc<TransferPolicy>,
    pub version: Option<Arc<ZoneVersion>>,
    pub journal: VecDeque<Arc<Delta>>,
}

impl TransferZone {
    pub(crate) fn new(policy: Arc<TransferPolicy>) -> Self {
        TransferZone {
            policy,
            version: None,
            journal: VecDeque::new(),
        }
    }

    /// Moves to `version`, journaling the difference from the last one.
    pub(crate) fn advance(&mut self, version: ZoneVersion) {
        if let Some(old) = &self.version {
            if old.serial == version.serial {
                return;
            }
            let delta = Delta::between(old, &version);
            self.journal.push_back(Arc::new(delta));
            let mut total: usize = self.journal.iter().map(|d| d.size()).sum();
            while self.journal.len() > JOURNAL_VERSIONS || (total > JOURNAL_RECORDS && self.journal.len() > 1) {
                if let Some(gone) = self.journal.pop_front() {
                    total -= gone.size();
                }
            }
        }
        self.version = Some(Arc::new(version));
    }
}

/// Sent by [`crate::ZoneStore`] users to find keys for a name: the zone
/// apex and its lock.
pub(crate) type ZoneRef = (Arc<TransferPolicy>, Name, Arc<std::sync::Mutex<TransferZone>>);
