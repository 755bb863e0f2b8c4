//! The workers: take record keys from the queue, run the reconciler of
//! each key's kind, count the result, and retry a failed one after a
//! second (the error policy).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::ResourceExt;

use super::context::RecordContext;
use super::queue::{Queue, RecordKey, Work};
use super::{ingress, service};

/// Records of a full pass reconciled between two looks at the queue.
const PASS_CHUNK: usize = 64;

/// Takes work from `queue` and reconciles with up to `workers` at once,
/// until the process ends. Failed reconciles are retried after a second.
///
/// A full pass over every record (periodic resync, member health or
/// topology) is worked off [`PASS_CHUNK`] records at a time, each time
/// with whatever was queued one by one (a change) since: at 100,000 shards
/// a full pass takes seconds, and a change queued behind all of it waited
/// that long.
pub async fn run_workers(ctx: Arc<RecordContext>, queue: Queue, workers: usize) {
    let mut pass: VecDeque<(RecordKey, Instant)> = VecDeque::new();
    loop {
        let work = if pass.is_empty() {
            queue.take().await
        } else {
            queue.take_now()
        };
        let mut keys: BTreeMap<RecordKey, Instant> = BTreeMap::new();
        for work in work {
            match work {
                Work::Record(key, since) => {
                    let entry = keys.entry(key).or_insert(since);
                    *entry = (*entry).min(since);
                }
                Work::All(since) => {
                    // A new pass covers what is left of the last one.
                    pass.clear();
                    for record in ctx.services.state() {
                        let key = RecordKey::Service(record.namespace().unwrap_or_default(), record.name_any());
                        pass.push_back((key, since));
                    }
                    for record in ctx.ingresses.state() {
                        let key = RecordKey::Ingress(record.namespace().unwrap_or_default(), record.name_any());
                        pass.push_back((key, since));
                    }
                }
            }
        }
        // Some of the pass every time, so a stream of changes cannot hold
        // it up (a member that failed must leave every record).
        for (key, since) in pass.drain(..PASS_CHUNK.min(pass.len())) {
            keys.entry(key).or_insert(since);
        }
        futures::stream::iter(keys)
            .for_each_concurrent(workers.max(1), |(key, since)| {
                let ctx = ctx.clone();
                let queue = queue.clone();
                async move {
                    let result = match &key {
                        RecordKey::Service(ns, name) => service::reconcile_service(&ctx, ns, name, since).await,
                        RecordKey::Ingress(ns, name) => ingress::reconcile_ingress(&ctx, ns, name, since).await,
                    };
                    let kind = match key {
                        RecordKey::Service(..) => "ServiceDNSRecord",
                        RecordKey::Ingress(..) => "IngressDNSRecord",
                    };
                    ctx.metrics.reconciled(kind, result.is_ok());
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
    }
}
