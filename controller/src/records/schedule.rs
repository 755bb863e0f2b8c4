//! Which record a free worker reconciles next, so a change is never
//! queued behind bulk work.
//!
//! Four kinds of work wait here:
//! * **fresh changes**: keys queued one by one (a load balancer that
//!   moved, a Service that lost its endpoints);
//! * **the backlog**: changes that arrived in bulk (a cold start queues
//!   every record at once, a member that comes back queues all of its
//!   Services): what does not fit in [`FRESH_MAX`];
//! * **a full pass** over every record for a change that reaches them all
//!   (member health or topology, leadership won);
//! * **the periodic resync**, a pass over every record for no known
//!   change (`--resync-interval`).
//!
//! Each time a worker is free it takes the oldest fresh change; only when
//! there is none, the next record of the backlog or of the full pass (in
//! turn); only when there is none of those either, the resync's next. A
//! change therefore waits for at most the reconciles in flight and the
//! fresh changes before it, never for a burst or a pass, and no worker
//! waits for another: an earlier design went in rounds, and every round
//! waited for its slowest reconcile (cold start at 1,000,000 shards took
//! 166 s instead of 110 s).
//!
//! The resync goes last because it repairs what no event said (a missed
//! watch event, time passing), and every record the other kinds of work
//! reconcile is repaired all the same. When it took turns with the
//! backlog, a cold start at 1,000,000 shards that outlasted the first
//! 60 s tick reconciled every record already done a second time beside
//! the records still waiting, and those came last. Under bulk work that
//! never ends the resync waits for it: the workers are then busy with
//! real changes anyway.
//!
//! A record is never reconciled twice at once: a change to a record in
//! flight waits until that reconcile ends, then goes first; a full pass
//! that reaches a record in flight reconciles it again after it ends
//! (the reconcile in flight may have read the state before the pass's).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use crate::queue::RecordKey;

/// Fresh changes held at most; more go to the backlog (a burst of
/// thousands is bulk work, not a change to hurry).
pub(crate) const FRESH_MAX: usize = 64;

/// One record to reconcile: its key, when its change was seen, and
/// whether it is a fresh change (rather than backlog or full-pass work).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    pub key: RecordKey,
    pub since: Instant,
    pub fresh: bool,
}

/// The records waiting for the workers (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    /// Fresh changes, oldest first.
    fresh: VecDeque<RecordKey>,
    /// Backlog keys in arrival order.
    backlog: VecDeque<RecordKey>,
    /// Every key waiting as a fresh change or in the backlog, with the
    /// time of its earliest change and whether it is fresh. A key leaves
    /// it when taken; stale entries of `fresh`/`backlog` are skipped.
    waiting: HashMap<RecordKey, (Instant, bool)>,
    /// What is left of the current full pass.
    pass: VecDeque<(RecordKey, Instant)>,
    /// What is left of the current periodic resync.
    resync: VecDeque<(RecordKey, Instant)>,
    /// The records of `resync` not started since it began, whatever for:
    /// one reconciled meanwhile has read the state the resync is for.
    resync_due: HashSet<RecordKey>,
    /// Records being reconciled now.
    running: HashSet<RecordKey>,
    /// Changes to records in flight, held until their reconcile ends.
    held: HashMap<RecordKey, (Instant, bool)>,
    /// The bulk source taken from last (backlog or pass take turns).
    pass_last: bool,
}

impl Schedule {
    /// Adds changes (record, when its change was seen), oldest first: fresh
    /// while fewer than [`FRESH_MAX`] are waiting, else to the backlog. A
    /// record already waiting keeps its place and its earliest time.
    pub fn add_changes(&mut self, mut changes: Vec<(RecordKey, Instant)>) {
        changes.sort_by_key(|(_, since)| *since);
        for (key, since) in changes {
            let fresh_count = self.fresh_count();
            if let Some((first, fresh)) = self.held.get_mut(&key) {
                *first = (*first).min(since);
                // Held for a pass, now changed itself: a change.
                *fresh |= fresh_count < FRESH_MAX;
                continue;
            }
            if self.running.contains(&key) {
                self.held.insert(key, (since, fresh_count < FRESH_MAX));
                continue;
            }
            match self.waiting.get_mut(&key) {
                Some((first, fresh)) => {
                    *first = (*first).min(since);
                    if !*fresh && self.fresh.len() < FRESH_MAX {
                        // Changed again while in the backlog: now a change.
                        *fresh = true;
                        self.fresh.push_back(key);
                    }
                }
                None => {
                    let fresh = self.fresh.len() < FRESH_MAX;
                    self.waiting.insert(key.clone(), (since, fresh));
                    if fresh {
                        self.fresh.push_back(key);
                    } else {
                        self.backlog.push_back(key);
                    }
                }
            }
        }
    }

    /// A change to `key`, which is being reconciled now, that must not
    /// wait for bulk work: it runs again first in line when its reconcile
    /// ends, fresh whatever the count of fresh changes. For a record whose
    /// preview was skipped (the reconcile in flight read the state before
    /// the change), so that it does not answer last, after every other
    /// record of a fan-out. A key not in flight is added as a change.
    pub fn rerun_first(&mut self, key: RecordKey, since: Instant) {
        if !self.running.contains(&key) {
            self.add_changes(vec![(key, since)]);
            return;
        }
        let (first, fresh) = self.held.entry(key).or_insert((since, true));
        *first = (*first).min(since);
        *fresh = true;
    }

    /// Whether `key` is being reconciled now.
    pub fn is_running(&self, key: &RecordKey) -> bool {
        self.running.contains(key)
    }

    /// Fresh changes waiting (stale queue entries aside) and held.
    fn fresh_count(&self) -> usize {
        self.fresh.len() + self.held.values().filter(|(_, fresh)| *fresh).count()
    }

    /// Starts a full pass over `keys` (every record), replacing what is
    /// left of the last one, and of the resync (the pass covers it).
    pub fn start_pass(&mut self, keys: impl IntoIterator<Item = RecordKey>, since: Instant) {
        self.pass = keys.into_iter().map(|key| (key, since)).collect();
        self.resync.clear();
        self.resync_due.clear();
    }

    /// Starts the periodic resync over `keys` (every record), replacing
    /// what is left of the last one; it is taken only when nothing else
    /// waits (see the module docs).
    pub fn start_resync(&mut self, keys: impl IntoIterator<Item = RecordKey>, since: Instant) {
        self.resync = keys.into_iter().map(|key| (key, since)).collect();
        self.resync_due = self.resync.iter().map(|(key, _)| key.clone()).collect();
    }

    /// Adds `keys` to the pass under way (or starts one), each once: a
    /// pass over some records (every RouteDNSRecord) that must not cut
    /// short a pass over every record.
    pub fn extend_pass(&mut self, keys: impl IntoIterator<Item = RecordKey>, since: Instant) {
        let queued: std::collections::HashSet<RecordKey> = self.pass.iter().map(|(k, _)| k.clone()).collect();
        for key in keys {
            if !queued.contains(&key) {
                self.pass.push_back((key, since));
            }
        }
    }

    /// The next record for a free worker, marked running: the oldest fresh
    /// change, else the backlog's and the pass's next in turn, else the
    /// resync's next; `None` when nothing can start (all waiting records
    /// are in flight).
    pub fn next(&mut self) -> Option<Planned> {
        while let Some(key) = self.fresh.pop_front() {
            if let Some(planned) = self.take_waiting(key, true) {
                return Some(planned);
            }
        }
        for _ in 0..2 {
            self.pass_last = !self.pass_last;
            let planned = if self.pass_last {
                self.next_of_pass()
            } else {
                self.next_of_backlog()
            };
            if planned.is_some() {
                return planned;
            }
        }
        let mut resync = std::mem::take(&mut self.resync);
        let planned = self.next_of(&mut resync, true);
        self.resync = resync;
        planned
    }

    fn next_of_backlog(&mut self) -> Option<Planned> {
        while let Some(key) = self.backlog.pop_front() {
            if let Some(planned) = self.take_waiting(key, false) {
                return Some(planned);
            }
        }
        None
    }

    fn next_of_pass(&mut self) -> Option<Planned> {
        let mut pass = std::mem::take(&mut self.pass);
        let planned = self.next_of(&mut pass, false);
        self.pass = pass;
        planned
    }

    /// The next record of `pass` (the full pass, or the resync when
    /// `resync`) to start.
    fn next_of(&mut self, pass: &mut VecDeque<(RecordKey, Instant)>, resync: bool) -> Option<Planned> {
        while let Some((key, since)) = pass.pop_front() {
            if resync && !self.resync_due.remove(&key) {
                // Started since the resync began.
                continue;
            }
            if self.waiting.contains_key(&key) || self.held.contains_key(&key) {
                // About to be reconciled for a change: that reads the
                // state this pass is for, so it covers it.
                continue;
            }
            if self.running.contains(&key) {
                // A reconcile in flight may have read the state before the
                // one this pass is for (a member uncordoned while its
                // record was being written cordoned): the record goes
                // again when it ends, as bulk work.
                self.held.insert(key, (since, false));
                continue;
            }
            self.start(&key);
            return Some(Planned {
                key,
                since,
                fresh: false,
            });
        }
        None
    }

    /// Marks `key` running; the resync need not run it again.
    fn start(&mut self, key: &RecordKey) {
        self.running.insert(key.clone());
        self.resync_due.remove(key);
    }

    /// `key` from the `fresh` (or backlog) queue if it still waits there.
    fn take_waiting(&mut self, key: RecordKey, from_fresh: bool) -> Option<Planned> {
        match self.waiting.get(&key) {
            Some((_, fresh)) if *fresh == from_fresh => {}
            // Taken already, or moved to the other queue.
            _ => return None,
        }
        let (since, fresh) = self.waiting.remove(&key)?;
        self.start(&key);
        Some(Planned { key, since, fresh })
    }

    /// The reconcile of `key` ended: a change held for it waits again,
    /// first in line if it was fresh.
    pub fn finished(&mut self, key: &RecordKey) {
        self.running.remove(key);
        if let Some((since, fresh)) = self.held.remove(key) {
            self.waiting.insert(key.clone(), (since, fresh));
            if fresh {
                self.fresh.push_front(key.clone());
            } else {
                self.backlog.push_back(key.clone());
            }
        }
    }

    /// Backlog records not yet reconciled (fresh ones included), and
    /// full-pass and resync records left.
    pub fn left(&self) -> (usize, usize) {
        (
            self.waiting.len() + self.held.len(),
            self.pass.len() + self.resync_due.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> RecordKey {
        RecordKey::Service("ns".into(), format!("svc{i}"))
    }

    /// The next record, where the test expects one.
    fn take(schedule: &mut Schedule) -> Planned {
        match schedule.next() {
            Some(planned) => planned,
            None => panic!("the schedule gave no record where one was due"),
        }
    }

    /// Takes and finishes records until nothing is left; returns them.
    fn drain(schedule: &mut Schedule) -> Vec<Planned> {
        let mut out = Vec::new();
        while let Some(planned) = schedule.next() {
            schedule.finished(&planned.key);
            out.push(planned);
        }
        out
    }

    #[test]
    fn a_change_after_a_burst_is_taken_next() {
        let mut schedule = Schedule::default();
        let start = Instant::now();
        // A cold start: 20,000 records queued at once.
        schedule.add_changes((0..20_000).map(|i| (key(i), start)).collect());
        let mut first = Vec::new();
        for _ in 0..FRESH_MAX + 10 {
            first.push(take(&mut schedule));
        }
        assert!(first[..FRESH_MAX].iter().all(|p| p.fresh));
        assert!(
            first[FRESH_MAX..].iter().all(|p| !p.fresh),
            "the rest of the burst is backlog"
        );
        // A load balancer moves while the burst is worked off.
        let change = (key(1_000_000), Instant::now());
        schedule.add_changes(vec![change.clone()]);
        let next = take(&mut schedule);
        assert_eq!(next.key, change.0, "the change comes next");
        assert!(next.fresh);
        // Every record of the burst is still reconciled, once.
        for planned in first.iter().chain([&next]) {
            schedule.finished(&planned.key);
        }
        let rest = drain(&mut schedule);
        let mut seen: HashSet<RecordKey> = first.iter().chain([&next]).map(|p| p.key.clone()).collect();
        for planned in &rest {
            assert!(seen.insert(planned.key.clone()), "{:?} twice", planned.key);
        }
        assert_eq!(seen.len(), 20_001);
    }

    #[test]
    fn a_change_during_a_full_pass_is_taken_next_and_bulk_sources_take_turns() {
        let mut schedule = Schedule::default();
        let start = Instant::now();
        schedule.start_pass((0..20_000).map(key), start);
        let first = take(&mut schedule);
        assert!(!first.fresh);
        schedule.add_changes(vec![(key(7), Instant::now())]);
        let next = take(&mut schedule);
        assert!(next.fresh && next.key == key(7));
        // A backlog beside the pass: they alternate.
        schedule.add_changes((100_000..100_000 + FRESH_MAX + 4).map(|i| (key(i), start)).collect());
        for _ in 0..FRESH_MAX {
            assert!(take(&mut schedule).fresh);
        }
        let bulk: Vec<bool> = (0..4)
            .map(|_| matches!(take(&mut schedule).key, RecordKey::Service(_, ref n) if n.starts_with("svc1000")))
            .collect();
        assert_eq!(
            bulk.iter().filter(|b| **b).count(),
            2,
            "backlog and pass in turn: {bulk:?}"
        );
        // A new pass replaces the rest of the old one.
        schedule.start_pass((0..10).map(key), start);
        assert_eq!(schedule.left().1, 10);
    }

    #[test]
    fn a_pass_over_some_records_extends_the_pass_under_way() {
        let mut schedule = Schedule::default();
        let start = Instant::now();
        schedule.start_pass((0..10).map(key), start);
        let route = |i: usize| RecordKey::Route("ns".into(), format!("r{i}"));
        // Route records only: added after what is left, each once; the
        // pass over every record is not cut short.
        schedule.extend_pass((0..3).map(route), start);
        schedule.extend_pass((0..3).map(route), start);
        assert_eq!(schedule.left().1, 13);
        let keys: Vec<RecordKey> = drain(&mut schedule).into_iter().map(|p| p.key).collect();
        assert_eq!(keys.len(), 13);
        assert_eq!(keys[10..], [route(0), route(1), route(2)]);
    }

    #[test]
    fn a_record_in_flight_is_not_taken_again_until_it_ends() {
        let mut schedule = Schedule::default();
        let early = Instant::now();
        schedule.add_changes(vec![(key(1), early)]);
        let running = take(&mut schedule);
        // It changes again while its reconcile runs; a pass covers it too.
        let later = early + std::time::Duration::from_millis(5);
        schedule.add_changes(vec![(key(1), later)]);
        schedule.start_pass([key(1), key(2)], later);
        let other = take(&mut schedule);
        assert_eq!(other.key, key(2), "not key 1 while it runs");
        assert!(schedule.next().is_none());
        // It ends: the held change goes next, fresh, timed from its change.
        schedule.finished(&running.key);
        let again = take(&mut schedule);
        assert_eq!((again.key.clone(), again.fresh, again.since), (key(1), true, later));
        schedule.finished(&again.key);
        schedule.finished(&other.key);
        assert!(drain(&mut schedule).is_empty());
    }

    /// The routes bench caught this: a Gateway change made while the last
    /// one's reconciles ran reached a record in flight, which, held as
    /// backlog behind 2,000 others, answered the new address 7 s after
    /// the rest.
    #[test]
    fn a_record_in_flight_rerun_first_goes_ahead_of_a_burst() {
        let mut schedule = Schedule::default();
        let early = Instant::now();
        schedule.add_changes(vec![(key(0), early)]);
        let running = take(&mut schedule);
        schedule.add_changes((1..200).map(|i| (key(i), early)).collect());
        schedule.rerun_first(key(0), early);
        schedule.rerun_first(key(500), early);
        schedule.finished(&running.key);
        let again = take(&mut schedule);
        assert_eq!(
            (again.key.clone(), again.fresh),
            (key(0), true),
            "first in line when it ends"
        );
        schedule.finished(&again.key);
        let keys: Vec<RecordKey> = drain(&mut schedule).into_iter().map(|p| p.key).collect();
        assert_eq!(keys.len(), 200, "every other record once, key 500 added as a change");
        assert!(keys.contains(&key(500)));
    }

    /// The sandbox e2e caught this: a member uncordoned while its record
    /// was being written cordoned stayed out until the next resync, since
    /// the pass for the uncordon skipped the record in flight.
    #[test]
    fn a_pass_that_reaches_a_record_in_flight_reconciles_it_again_after_it_ends() {
        let mut schedule = Schedule::default();
        let early = Instant::now();
        schedule.start_pass([key(1), key(2)], early);
        let running = take(&mut schedule);
        assert_eq!(running.key, key(1));
        // The state changes (uncordon): a new pass while key 1 runs.
        let later = early + std::time::Duration::from_millis(5);
        schedule.start_pass([key(1), key(2)], later);
        let other = take(&mut schedule);
        assert_eq!(other.key, key(2), "not key 1 while it runs");
        assert!(schedule.next().is_none());
        schedule.finished(&other.key);
        schedule.finished(&running.key);
        let again = take(&mut schedule);
        assert_eq!(
            (again.key.clone(), again.fresh, again.since),
            (key(1), false, later),
            "key 1 again, for the new pass"
        );
        schedule.finished(&again.key);
        assert!(drain(&mut schedule).is_empty());
    }

    #[test]
    fn a_backlog_record_changed_again_becomes_fresh_and_keeps_its_first_time() {
        let mut schedule = Schedule::default();
        let early = Instant::now();
        schedule.add_changes((0..200).map(|i| (key(i), early)).collect());
        for _ in 0..FRESH_MAX {
            let planned = take(&mut schedule);
            schedule.finished(&planned.key);
        }
        // key(150) is in the backlog; it changes again.
        let later = early + std::time::Duration::from_millis(5);
        schedule.add_changes(vec![(key(150), later)]);
        let planned = take(&mut schedule);
        assert_eq!(planned.key, key(150));
        assert!(planned.fresh);
        assert_eq!(planned.since, early, "latency counts from the first change");
        schedule.finished(&planned.key);
        assert!(
            drain(&mut schedule).iter().all(|p| p.key != key(150)),
            "not a second time"
        );
    }

    #[test]
    fn the_resync_waits_for_every_other_kind_of_work_and_skips_what_ran_since() {
        let mut schedule = Schedule::default();
        let start = Instant::now();
        // A record reconciled before the resync's tick, and still in flight.
        schedule.add_changes(vec![(key(5), start)]);
        let early = take(&mut schedule);
        // A cold start that outlasts the tick: 20,000 records queued, the
        // resync over them and one record no change queued.
        schedule.add_changes((0..20_000).filter(|i| *i != 5).map(|i| (key(i), start)).collect());
        let tick = Instant::now();
        schedule.start_resync((0..20_001).map(key), tick);
        assert_eq!(schedule.left().1, 20_001);
        schedule.finished(&early.key);
        let mut order = drain(&mut schedule);
        // A change after the burst still goes before the resync.
        schedule.start_resync((0..20_001).map(key), tick);
        schedule.add_changes(vec![(key(9), Instant::now())]);
        let change = take(&mut schedule);
        assert!(change.fresh && change.key == key(9));
        schedule.finished(&change.key);
        let resync_only: Vec<RecordKey> = drain(&mut schedule).into_iter().map(|p| p.key).collect();
        assert_eq!(resync_only.len(), 20_000, "every record but the changed one");
        // Back to the first round: the burst, then the resync's records
        // that no reconcile started since its tick (the one in flight
        // then read the state before it).
        let resynced: Vec<RecordKey> = order.split_off(19_999).into_iter().map(|p| p.key).collect();
        assert!(order.iter().all(|p| p.key != key(20_000)), "the burst first");
        assert_eq!(resynced, vec![key(5), key(20_000)]);
    }

    #[test]
    fn a_full_pass_goes_before_the_resync_and_covers_it() {
        let mut schedule = Schedule::default();
        let start = Instant::now();
        schedule.start_resync((0..100).map(key), start);
        schedule.start_pass((0..50).map(key), start);
        // The pass's records only: it replaced the resync.
        let done: Vec<RecordKey> = drain(&mut schedule).into_iter().map(|p| p.key).collect();
        assert_eq!(done, (0..50).map(key).collect::<Vec<_>>());
        assert_eq!(schedule.left(), (0, 0));
        // A pass of some records (every route) beside the resync: the pass
        // first, and the resync then skips what the pass ran.
        schedule.start_resync((0..100).map(key), start);
        schedule.extend_pass((90..110).map(key), start);
        let done: Vec<RecordKey> = drain(&mut schedule).into_iter().map(|p| p.key).collect();
        let expected: Vec<RecordKey> = (90..110).chain(0..90).map(key).collect();
        assert_eq!(done, expected);
    }
}
