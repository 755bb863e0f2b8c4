//! Which records the workers reconcile next: rounds of bounded size, so a
//! change is never queued behind bulk work (issue 32).
//!
//! Three kinds of work wait here:
//! * **fresh changes**: keys queued one by one since the last round (a
//!   load balancer that moved, a Service that lost its endpoints);
//! * **the backlog**: changes that arrived in bulk (a cold start queues
//!   every record at once, a member that comes back queues all of its
//!   Services), more than one round takes;
//! * **a full pass** over every record (periodic resync, member health or
//!   topology).
//!
//! Each round holds the fresh changes first (oldest first, up to
//! [`FRESH_ROUND`]; the rest join the backlog), then up to [`BULK_CHUNK`]
//! records of the backlog and [`BULK_CHUNK`] of the full pass. At 20,000
//! records a bulk round of the whole backlog took 40 s and a change that
//! came during it waited for all of it; now it waits for at most the round
//! in flight, whose size is bounded whatever is queued.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use super::queue::RecordKey;

/// Fresh changes taken into one round at most.
pub(crate) const FRESH_ROUND: usize = 64;
/// Records of the backlog, and of a full pass, taken into one round.
pub(crate) const BULK_CHUNK: usize = 32;

/// One record of a round: its key, when its change was seen, and whether
/// it is a fresh change (rather than backlog or full-pass work).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    pub key: RecordKey,
    pub since: Instant,
    pub fresh: bool,
}

/// The records waiting for the workers (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    /// Backlog keys in arrival order; a key already reconciled as a fresh
    /// change is skipped (it is no longer in `waiting`).
    backlog: VecDeque<RecordKey>,
    /// Keys of the backlog not yet reconciled, with their change time.
    waiting: HashMap<RecordKey, Instant>,
    /// What is left of the current full pass.
    pass: VecDeque<(RecordKey, Instant)>,
}

impl Rounds {
    /// Adds the changes queued since the last round and returns the next
    /// round: fresh changes (oldest first, at most [`FRESH_ROUND`]), then
    /// up to [`BULK_CHUNK`] backlog records and [`BULK_CHUNK`] full-pass
    /// records, each record once.
    pub fn next_round(&mut self, mut changes: Vec<(RecordKey, Instant)>) -> Vec<Planned> {
        changes.sort_by_key(|(_, since)| *since);
        let mut round: Vec<Planned> = Vec::new();
        let mut taken: HashSet<RecordKey> = HashSet::new();
        for (key, since) in changes {
            if taken.contains(&key) {
                continue;
            }
            if round.len() < FRESH_ROUND {
                // Its backlog entry, if any, is done by this.
                let since = self.waiting.remove(&key).map_or(since, |old| old.min(since));
                taken.insert(key.clone());
                round.push(Planned {
                    key,
                    since,
                    fresh: true,
                });
            } else {
                match self.waiting.get_mut(&key) {
                    Some(old) => *old = (*old).min(since),
                    None => {
                        self.waiting.insert(key.clone(), since);
                        self.backlog.push_back(key);
                    }
                }
            }
        }
        let mut bulk = 0;
        while bulk < BULK_CHUNK {
            let Some(key) = self.backlog.pop_front() else { break };
            // Not waiting: reconciled as a fresh change meanwhile.
            let Some(since) = self.waiting.remove(&key) else {
                continue;
            };
            if taken.insert(key.clone()) {
                round.push(Planned {
                    key,
                    since,
                    fresh: false,
                });
                bulk += 1;
            }
        }
        let mut pass = 0;
        while pass < BULK_CHUNK {
            let Some((key, since)) = self.pass.pop_front() else {
                break;
            };
            if taken.insert(key.clone()) {
                round.push(Planned {
                    key,
                    since,
                    fresh: false,
                });
                pass += 1;
            }
        }
        round
    }

    /// Starts a full pass over `keys` (every record), replacing what is
    /// left of the last one.
    pub fn start_pass(&mut self, keys: impl IntoIterator<Item = RecordKey>, since: Instant) {
        self.pass = keys.into_iter().map(|key| (key, since)).collect();
    }

    /// Whether backlog or full-pass work is left (the workers then look
    /// at the queue without waiting).
    pub fn has_bulk(&self) -> bool {
        !self.waiting.is_empty() || !self.pass.is_empty()
    }

    /// Backlog records not yet reconciled, and full-pass records left.
    pub fn left(&self) -> (usize, usize) {
        (self.waiting.len(), self.pass.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> RecordKey {
        RecordKey::Service("ns".into(), format!("svc{i}"))
    }

    /// Rounds until everything is done; returns them.
    fn drain(rounds: &mut Rounds) -> Vec<Vec<Planned>> {
        let mut out = Vec::new();
        while rounds.has_bulk() {
            out.push(rounds.next_round(Vec::new()));
        }
        out
    }

    #[test]
    fn a_change_after_a_burst_goes_in_the_next_round() {
        let mut rounds = Rounds::default();
        let start = Instant::now();
        // A cold start: 20,000 records queued at once.
        let burst: Vec<_> = (0..20_000).map(|i| (key(i), start)).collect();
        let first = rounds.next_round(burst);
        assert_eq!(first.len(), FRESH_ROUND + BULK_CHUNK);
        assert!(first[..FRESH_ROUND].iter().all(|p| p.fresh));
        // A load balancer moves while the burst is worked off.
        let change = (key(1_000_000), Instant::now());
        let second = rounds.next_round(vec![change.clone()]);
        assert_eq!(second[0].key, change.0, "the change comes first");
        assert!(second[0].fresh);
        assert!(second.len() <= FRESH_ROUND + 2 * BULK_CHUNK, "a bounded round");
        // Every record of the burst is still reconciled, once.
        let rest = drain(&mut rounds);
        let mut seen: HashSet<RecordKey> = first.iter().chain(&second).map(|p| p.key.clone()).collect();
        let mut count = first.len() + second.len();
        for round in &rest {
            for planned in round {
                assert!(seen.insert(planned.key.clone()), "{:?} twice", planned.key);
                count += 1;
            }
        }
        assert_eq!(count, 20_001);
    }

    #[test]
    fn a_change_during_a_full_pass_goes_in_the_next_round() {
        let mut rounds = Rounds::default();
        let start = Instant::now();
        rounds.start_pass((0..20_000).map(key), start);
        let first = rounds.next_round(Vec::new());
        assert_eq!(first.len(), BULK_CHUNK);
        let second = rounds.next_round(vec![(key(7), Instant::now())]);
        assert!(second[0].fresh && second[0].key == key(7));
        assert!(second.len() <= 1 + BULK_CHUNK);
        // A new pass replaces the rest of the old one.
        rounds.start_pass((0..10).map(key), start);
        assert_eq!(rounds.left(), (0, 10));
    }

    #[test]
    fn a_backlog_record_changed_again_is_reconciled_once_and_keeps_its_first_time() {
        let mut rounds = Rounds::default();
        let early = Instant::now();
        let burst: Vec<_> = (0..200).map(|i| (key(i), early)).collect();
        rounds.next_round(burst);
        // key(150) is in the backlog; it changes again, fresh.
        let later = early + std::time::Duration::from_millis(5);
        let round = rounds.next_round(vec![(key(150), later)]);
        let planned = round.iter().find(|p| p.key == key(150)).expect("in this round");
        assert!(planned.fresh);
        assert_eq!(planned.since, early, "latency counts from the first change");
        let rest = drain(&mut rounds);
        assert!(rest.iter().flatten().all(|p| p.key != key(150)), "not a second time");
    }
}
