//! The workers: take record keys from the queue, run the reconciler of
//! each key's kind, count the result, and retry a failed one after a
//! second (the error policy).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::ResourceExt;

use super::context::RecordContext;
use super::queue::{Queue, RecordKey, Work};
use super::rounds::{Planned, Rounds};
use super::{ingress, service};

/// A fresh change whose record was written this long after the change
/// was seen is logged (info) with where the time went: waiting for the
/// round before it, or its own reconcile (issue 32).
const SLOW_CHANGE: Duration = Duration::from_millis(1000);
/// Slow changes are logged at most this often (the count of those in
/// between is in the next line).
const SLOW_LOG_EVERY: Duration = Duration::from_secs(10);

/// Fresh changes of one round written more than [`SLOW_CHANGE`] after
/// they were seen: how many, and the slowest (record id, milliseconds
/// queued, milliseconds of its reconcile).
type SlowChanges = (usize, Option<(String, u64, u64)>);

/// Takes work from `queue` and reconciles with up to `workers` at once,
/// until the process ends. Failed reconciles are retried after a second.
///
/// Work goes in rounds of bounded size ([`Rounds`]): the changes queued
/// since the last round first, then a slice of the bulk work (changes that
/// came in bulk, a full pass over every record), so a change waits for at
/// most the round in flight, never for a whole burst or pass (at 1,000,000
/// shards a cold start's 20,000 records took 40 s in one round).
pub async fn run_workers(ctx: Arc<RecordContext>, queue: Queue, workers: usize) {
    let mut rounds = Rounds::default();
    // How long the last round took.
    let mut previous: Option<Duration> = None;
    // Slow changes are logged at most every SLOW_LOG_EVERY (a cold start
    // makes many); those in between are counted in the next line.
    let mut last_logged: Option<Instant> = None;
    let mut unlogged = 0usize;
    loop {
        let work = if rounds.has_bulk() {
            queue.take_now()
        } else {
            queue.take().await
        };
        let mut changes: Vec<(RecordKey, Instant)> = Vec::new();
        for work in work {
            match work {
                Work::Record(key, since) => changes.push((key, since)),
                Work::All(since) => {
                    // A new pass covers what is left of the last one.
                    let services = ctx
                        .services
                        .state()
                        .into_iter()
                        .map(|r| RecordKey::Service(r.namespace().unwrap_or_default(), r.name_any()));
                    let ingresses = ctx
                        .ingresses
                        .state()
                        .into_iter()
                        .map(|r| RecordKey::Ingress(r.namespace().unwrap_or_default(), r.name_any()));
                    rounds.start_pass(services.chain(ingresses), since);
                }
            }
        }
        let round = rounds.next_round(changes);
        let started = Instant::now();
        let size = round.len();
        let slow: Arc<std::sync::Mutex<SlowChanges>> = Arc::default();
        futures::stream::iter(round)
            .for_each_concurrent(workers.max(1), |Planned { key, since, fresh }| {
                let ctx = ctx.clone();
                let queue = queue.clone();
                let slow = slow.clone();
                async move {
                    let reconcile_started = Instant::now();
                    let result = match &key {
                        RecordKey::Service(ns, name) => service::reconcile_service(&ctx, ns, name, since).await,
                        RecordKey::Ingress(ns, name) => ingress::reconcile_ingress(&ctx, ns, name, since).await,
                    };
                    let kind = match key {
                        RecordKey::Service(..) => "ServiceDNSRecord",
                        RecordKey::Ingress(..) => "IngressDNSRecord",
                    };
                    ctx.metrics.reconciled(kind, result.is_ok());
                    let waited = reconcile_started.saturating_duration_since(since);
                    let reconcile_ms = reconcile_started.elapsed().as_millis() as u64;
                    if fresh && waited + reconcile_started.elapsed() >= SLOW_CHANGE {
                        let mut slow = slow.lock().unwrap_or_else(|e| e.into_inner());
                        slow.0 += 1;
                        let queued_ms = waited.as_millis() as u64;
                        if slow.1.as_ref().is_none_or(|(_, q, r)| q + r < queued_ms + reconcile_ms) {
                            slow.1 = Some((key.id(), queued_ms, reconcile_ms));
                        }
                    }
                    if let Err(e) = result {
                        tracing::warn!(record = %key.id(), error = %e, "reconcile failed; retrying in 1 s");
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            queue.push(key);
                        });
                    }
                }
            })
            .await;
        let (count, slowest) = std::mem::take(&mut *slow.lock().unwrap_or_else(|e| e.into_inner()));
        unlogged += count;
        let due = last_logged.is_none_or(|at| at.elapsed() >= SLOW_LOG_EVERY);
        if let (Some((record, queued_ms, reconcile_ms)), true) = (slowest, due) {
            last_logged = Some(Instant::now());
            let (backlog_left, pass_left) = rounds.left();
            tracing::info!(
                changes = std::mem::take(&mut unlogged),
                record = %record,
                queued_ms,
                reconcile_ms,
                round_records = size,
                round_ms = started.elapsed().as_millis() as u64,
                previous_round_ms = previous.map(|took| took.as_millis() as u64),
                backlog_left,
                pass_left,
                "slow changes: written more than 1 s after they were seen (the slowest here)"
            );
        }
        previous = Some(started.elapsed());
    }
}
