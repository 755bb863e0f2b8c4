//! The workers: take record keys from the queue, run the reconciler of
//! each key's kind, count the result, and retry a failed one after a
//! second (the error policy).
//!
//! A change that reaches many records at once (a Gateway's addresses
//! reach every route attached to it; 2,000 routes in the bench) is
//! previewed first ([`Pass::Preview`]): each record's DNSEndpoint is
//! computed and proposed to the publisher, nothing written, so every
//! answer changes at the speed of the computation instead of the API
//! writes (two per record). The full reconciles follow as bulk work and
//! write what was previewed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use kube::ResourceExt;

use super::context::{Pass, RecordContext};
use super::schedule::{Planned, Schedule};
use super::{ingress, route, service};
use crate::queue::{Queue, RecordKey, Work};

/// A fresh change whose record was written this long after the change
/// was seen is logged (info) with where the time went: waiting for a
/// worker, or its own reconcile.
const SLOW_CHANGE: Duration = Duration::from_millis(1000);
/// Slow changes are logged at most this often (the count of those in
/// between is in the next line).
const SLOW_LOG_EVERY: Duration = Duration::from_secs(10);

/// Records queued at once from which on a batch is previewed first (see
/// the module docs); fewer are changes the workers take at once anyway.
const PREVIEW_BATCH: usize = 32;

/// Records previewed between two looks at the queue and the reconciles in
/// flight (about 30 ms of computation for routes of 50 members).
const PREVIEW_CHUNK: usize = 32;

/// One reconcile that ended: what it was, when it started, and its result.
struct Done {
    planned: Planned,
    started: Instant,
    ok: bool,
}

/// Takes work from `queue` and reconciles with up to `workers` at once,
/// until the process ends. Failed reconciles are retried after a second.
///
/// Each free worker takes the next record from the [`Schedule`]: a change
/// queued one by one before any bulk work (changes that came in bulk, a
/// full pass over every record), so a change waits for at most the
/// reconciles in flight, never for a whole burst or pass, and no worker
/// waits for another.
pub async fn run_workers(ctx: Arc<RecordContext>, queue: Queue, workers: usize) {
    let workers = workers.max(1);
    let mut schedule = Schedule::default();
    let mut in_flight = FuturesUnordered::new();
    // Slow changes are logged at most every SLOW_LOG_EVERY (a cold start
    // makes many); those in between are counted in the next line.
    let mut last_logged: Option<Instant> = None;
    let mut unlogged = 0usize;
    // Records of a large batch, previewed before they are scheduled.
    let mut previews = Previews::default();
    loop {
        add_work(&ctx, &mut schedule, &mut previews, queue.take_now());
        while in_flight.len() < workers {
            let Some(planned) = schedule.next() else { break };
            in_flight.push(reconcile(ctx.clone(), planned));
        }
        if in_flight.is_empty() && previews.waiting.is_empty() {
            let work = queue.take().await;
            add_work(&ctx, &mut schedule, &mut previews, work);
            continue;
        }
        let done = tokio::select! {
            biased;
            // `take` loses nothing when dropped: it only ever waits while
            // the queue is empty.
            work = queue.take() => {
                add_work(&ctx, &mut schedule, &mut previews, work);
                continue;
            }
            // Previews before the reconciles in flight: they are what
            // changes the answers (the reconciles in flight wait for the
            // API server meanwhile, a chunk at a time).
            () = std::future::ready(()), if !previews.waiting.is_empty() => {
                preview_some(&ctx, &mut schedule, &mut previews).await;
                continue;
            }
            Some(done) = in_flight.next(), if !in_flight.is_empty() => done,
        };
        // Every reconcile runs inside this one task, and one that writes
        // nothing (most of a full pass) completes without ever waiting, so
        // without this the task would hold its runtime thread for a whole
        // pass. A task this one wakes (the publisher, given a proposal; the
        // API client's connection, given a write) is put in that thread's
        // LIFO slot, which no other thread may take: at 1,000,000 shards a
        // change made during a pass waited 1.4–4.5 s there.
        tokio::task::yield_now().await;
        schedule.finished(&done.planned.key);
        let Planned { key, since, fresh } = done.planned;
        if !done.ok {
            let queue = queue.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                queue.push(key);
            });
            continue;
        }
        let waited = done.started.saturating_duration_since(since);
        let took = done.started.elapsed();
        if !fresh || waited + took < SLOW_CHANGE {
            continue;
        }
        unlogged += 1;
        if last_logged.is_some_and(|at| at.elapsed() < SLOW_LOG_EVERY) {
            continue;
        }
        last_logged = Some(Instant::now());
        let (waiting, pass_left) = schedule.left();
        tracing::info!(
            changes = std::mem::take(&mut unlogged),
            record = %key.id(),
            queued_ms = waited.as_millis() as u64,
            reconcile_ms = took.as_millis() as u64,
            in_flight = in_flight.len(),
            waiting,
            pass_left,
            "slow changes: written more than 1 s after they were seen (this one, and the count since the last line)"
        );
    }
}

/// A record and when its change was seen.
type Change = (RecordKey, Instant);

/// Records waiting for their preview, and how the previews since the
/// queue was last empty went (for the log).
#[derive(Default)]
struct Previews {
    waiting: VecDeque<(RecordKey, Instant)>,
    /// When the first of them was taken, and how many were previewed.
    since: Option<(Instant, usize)>,
}

/// Previews the next [`PREVIEW_CHUNK`] records waiting, then schedules
/// their full reconciles. One being reconciled now is not previewed (its
/// reconcile in flight would publish what it read before the change
/// after the preview): it runs again first in line when that ends.
async fn preview_some(ctx: &Arc<RecordContext>, schedule: &mut Schedule, previews: &mut Previews) {
    let count = previews.waiting.len().min(PREVIEW_CHUNK);
    let (running, chunk): (Vec<Change>, Vec<Change>) = previews
        .waiting
        .drain(..count)
        .partition(|(key, _)| schedule.is_running(key));
    let (started, done) = previews.since.get_or_insert_with(|| (Instant::now(), 0));
    for (key, since) in running {
        schedule.rerun_first(key, since);
    }
    *done += chunk.len();
    // Two halves on two tasks, so a second runtime thread that is free
    // computes one (previews are independent and mostly computation: the
    // last of 2,000 routes behind a Gateway answered after 1.2-1.5 s of
    // them on one thread). Both are spawned: the task spawned last waits
    // in this thread's LIFO slot, which no other thread takes, and the
    // first is pushed out of it to where a free thread steals it.
    let (first, second) = chunk.split_at(chunk.len() / 2);
    let halves = [first.to_vec(), second.to_vec()].map(|half| {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            for (key, since) in &half {
                if let Err(e) = reconcile_key(&ctx, key, *since, Pass::Preview).await {
                    tracing::debug!(record = %key.id(), error = %e, "preview failed; the full reconcile follows");
                }
            }
        })
    });
    for half in halves {
        // A panic in a preview is the full reconcile's to meet again.
        if let Err(e) = half.await {
            tracing::warn!(error = %e, "a preview task failed; the full reconciles follow");
        }
    }
    if previews.waiting.is_empty() {
        tracing::debug!(
            records = *done,
            took_ms = started.elapsed().as_millis() as u64,
            "previewed a change that reached many records; their full reconciles follow"
        );
        previews.since = None;
    }
    schedule.add_changes(chunk);
    // The publisher and the watches share this runtime's threads.
    tokio::task::yield_now().await;
}

/// Puts what was taken from the queue into the schedule; a full pass
/// covers every record the caches hold now. A batch of at least
/// [`PREVIEW_BATCH`] records goes to `previews` first, on the leader
/// (only its proposals are published) once every member is listed: the
/// batches of a start or of a member listed again (every object new to
/// the caches) would be computed twice for nothing, their DNSEndpoints
/// missing or unchanged.
fn add_work(ctx: &RecordContext, schedule: &mut Schedule, previews: &mut Previews, work: Vec<Work>) {
    let mut changes: Vec<(RecordKey, Instant)> = Vec::new();
    for work in work {
        match work {
            Work::Record(key, since) => changes.push((key, since)),
            // A new pass covers what is left of the last one.
            Work::All(since) => schedule.start_pass(every_record(ctx), since),
            Work::Resync(since) => schedule.start_resync(every_record(ctx), since),
            Work::AllRoutes(since) => {
                let routes = ctx
                    .routes
                    .state()
                    .into_iter()
                    .map(|r| RecordKey::Route(r.namespace().unwrap_or_default(), r.name_any()));
                schedule.extend_pass(routes, since);
            }
        }
    }
    let previewed = changes.len() >= PREVIEW_BATCH
        && ctx.is_leader()
        && ctx
            .registry
            .members()
            .iter()
            .all(|member| member.is_synced() && member.gateway_api.listed());
    if previewed {
        previews.waiting.extend(changes);
    } else if !changes.is_empty() {
        schedule.add_changes(changes);
    }
}

/// The key of every record the host caches hold now.
fn every_record(ctx: &RecordContext) -> impl Iterator<Item = RecordKey> {
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
    let routes = ctx
        .routes
        .state()
        .into_iter()
        .map(|r| RecordKey::Route(r.namespace().unwrap_or_default(), r.name_any()));
    services.chain(ingresses).chain(routes)
}

/// Runs the reconciler of `key`'s kind, as far as `pass` says.
async fn reconcile_key(ctx: &RecordContext, key: &RecordKey, since: Instant, pass: Pass) -> Result<(), kube::Error> {
    match key {
        RecordKey::Service(ns, name) => service::reconcile_service(ctx, ns, name, since, pass).await,
        RecordKey::Ingress(ns, name) => ingress::reconcile_ingress(ctx, ns, name, since, pass).await,
        RecordKey::Route(ns, name) => route::reconcile_route(ctx, ns, name, since, pass).await,
    }
}

/// Runs the reconciler of `planned`'s kind and counts the result; a
/// failure is logged (the caller queues the retry).
async fn reconcile(ctx: Arc<RecordContext>, planned: Planned) -> Done {
    let started = Instant::now();
    let result = reconcile_key(&ctx, &planned.key, planned.since, Pass::Full).await;
    let kind = match planned.key {
        RecordKey::Service(..) => "ServiceDNSRecord",
        RecordKey::Ingress(..) => "IngressDNSRecord",
        RecordKey::Route(..) => "RouteDNSRecord",
    };
    ctx.metrics.reconciled(kind, result.is_ok());
    if let Err(e) = &result {
        tracing::warn!(record = %planned.key.id(), error = %e, "reconcile failed; retrying in 1 s");
    }
    Done {
        planned,
        started,
        ok: result.is_ok(),
    }
}
