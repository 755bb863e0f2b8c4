//! The reconcile queue: record keys, deduplicated, each remembering when
//! the earliest change that queued it was seen (for the change-to-write
//! latency metric).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

/// Which record to reconcile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKey {
    /// ServiceDNSRecord `namespace/name`.
    Service(String, String),
    /// IngressDNSRecord `namespace/name`.
    Ingress(String, String),
    /// RouteDNSRecord `namespace/name`.
    Route(String, String),
}

impl RecordKey {
    /// `service:ns/name`, `ingress:ns/name` or `route:ns/name`.
    pub fn id(&self) -> String {
        match self {
            RecordKey::Service(ns, n) => format!("service:{ns}/{n}"),
            RecordKey::Ingress(ns, n) => format!("ingress:{ns}/{n}"),
            RecordKey::Route(ns, n) => format!("route:{ns}/{n}"),
        }
    }

    /// Parses [`RecordKey::id`].
    pub fn from_id(id: &str) -> Option<RecordKey> {
        let (kind, rest) = id.split_once(':')?;
        let (ns, name) = rest.split_once('/')?;
        match kind {
            "service" => Some(RecordKey::Service(ns.into(), name.into())),
            "ingress" => Some(RecordKey::Ingress(ns.into(), name.into())),
            "route" => Some(RecordKey::Route(ns.into(), name.into())),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Pending {
    keys: BTreeMap<RecordKey, Instant>,
    all: Option<Instant>,
    all_routes: Option<Instant>,
    resync: Option<Instant>,
}

/// A deduplicating work queue; cheap to clone.
#[derive(Clone, Default)]
pub struct Queue {
    pending: Arc<Mutex<Pending>>,
    notify: Arc<Notify>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

/// What a worker takes from the queue.
#[derive(Debug)]
pub enum Work {
    /// One record.
    Record(RecordKey, Instant),
    /// Every record (member health or topology changed).
    All(Instant),
    /// Every RouteDNSRecord (a member's Gateway API kinds turned served or
    /// not served, which no other record reads).
    AllRoutes(Instant),
    /// Every record, as the periodic resync: nothing changed that is
    /// known, so it comes after every other kind of work (see
    /// `records::schedule`).
    Resync(Instant),
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one record.
    pub fn push(&self, key: RecordKey) {
        let now = Instant::now();
        self.lock().keys.entry(key).or_insert(now);
        self.notify.notify_one();
    }

    /// Queues `keys` at once: a worker taking work finds all of them
    /// together (a change that reaches many records, see
    /// `records::worker`), not some now and the rest later.
    pub fn push_many(&self, keys: impl IntoIterator<Item = RecordKey>) {
        let now = Instant::now();
        {
            let mut pending = self.lock();
            for key in keys {
                pending.keys.entry(key).or_insert(now);
            }
        }
        self.notify.notify_one();
    }

    /// Queues every record.
    pub fn push_all(&self) {
        let now = Instant::now();
        self.lock().all.get_or_insert(now);
        self.notify.notify_one();
    }

    /// Queues the periodic resync of every record.
    pub fn push_resync(&self) {
        let now = Instant::now();
        self.lock().resync.get_or_insert(now);
        self.notify.notify_one();
    }

    /// Queues every RouteDNSRecord.
    pub fn push_all_routes(&self) {
        let now = Instant::now();
        self.lock().all_routes.get_or_insert(now);
        self.notify.notify_one();
    }

    /// Takes everything queued, waiting while empty.
    pub async fn take(&self) -> Vec<Work> {
        loop {
            let work = self.take_now();
            if !work.is_empty() {
                return work;
            }
            self.notify.notified().await;
        }
    }

    /// Takes everything queued; empty when nothing is.
    pub fn take_now(&self) -> Vec<Work> {
        let mut pending = self.lock();
        let mut work: Vec<Work> = pending.all.take().map(Work::All).into_iter().collect();
        work.extend(pending.all_routes.take().map(Work::AllRoutes));
        work.extend(pending.resync.take().map(Work::Resync));
        work.extend(
            std::mem::take(&mut pending.keys)
                .into_iter()
                .map(|(k, t)| Work::Record(k, t)),
        );
        work
    }
}
