//! The workers: take record keys from the queue, run the reconciler of
//! each key's kind, count the result, and retry a failed one after a
//! second (the error policy).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::ResourceExt;

use super::context::RecordContext;
use super::queue::{Queue, RecordKey, Work};
use super::{ingress, service};

/// Takes work from `queue` and reconciles with up to `workers` at once,
/// until the process ends. Failed reconciles are retried after a second.
pub async fn run_workers(ctx: Arc<RecordContext>, queue: Queue, workers: usize) {
    loop {
        let mut keys: BTreeMap<RecordKey, Instant> = BTreeMap::new();
        for work in queue.take().await {
            match work {
                Work::Record(key, since) => {
                    let entry = keys.entry(key).or_insert(since);
                    *entry = (*entry).min(since);
                }
                Work::All(since) => {
                    for record in ctx.services.state() {
                        let key = RecordKey::Service(record.namespace().unwrap_or_default(), record.name_any());
                        keys.entry(key).or_insert(since);
                    }
                    for record in ctx.ingresses.state() {
                        let key = RecordKey::Ingress(record.namespace().unwrap_or_default(), record.name_any());
                        keys.entry(key).or_insert(since);
                    }
                }
            }
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
