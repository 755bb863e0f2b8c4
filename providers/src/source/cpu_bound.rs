//! Long computations run from async code without stalling the runtime.
//!
//! A publisher pass computes zones and builds DNS server snapshots for up
//! to seconds at 1,000,000 shards. Run on an async worker as it is, it
//! holds that worker for the whole time, and on two cores the other tasks
//! (member health probes with a 1 s timeout, watch streams) wait behind
//! it. `tokio::task::block_in_place` hands the worker's other tasks to a
//! new worker thread first, so they go on while the computation runs here.
//! (The members that all flapped to not Ready during the scale bench's
//! cold starts were the bench's doing: its check held the emulated API
//! servers' lock. This keeps the controller's own passes from doing the
//! same to its probes.)

/// Runs `work` (CPU-bound, synchronous) where it blocks no other task: in
/// place after handing this worker's tasks on, on a multi-threaded tokio
/// runtime; as it is elsewhere (a current-thread runtime, as in unit
/// tests, has no other worker to hand them to).
pub(crate) fn cpu_bound<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Runs `consume` here with a source of the items `produce` makes on
/// another thread, one item ahead: a whole publish in parts computes the
/// next part's records (`produce`) while the DNS server applies this one
/// (`consume`), on two cores at once rather than one after the other.
/// With one core, or when no thread can be started, `produce` runs in
/// line. When `consume` returns before the items end, `produce` stops
/// after the item it is making (that item is dropped, not lost to the
/// producer's own state: call `produce`'s source again for the rest). A
/// panic while producing is a panic of the consumer at that item, as it
/// would be in line: the source never ends early in its place.
pub(crate) fn pipelined<T: Send, R>(
    mut produce: impl FnMut() -> Option<T> + Send,
    consume: impl FnOnce(&mut dyn FnMut() -> Option<T>) -> R,
) -> R {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return consume(&mut produce);
    }
    enum Ran<R, C> {
        Done(R),
        NotStarted(C),
    }
    let producer = &mut produce;
    let ran = std::thread::scope(|scope| {
        // `None` says the items ended. One item waits while the next is
        // made: at most three in memory.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Option<T>>(1);
        let spawned = std::thread::Builder::new()
            .name("publish-parts".into())
            .spawn_scoped(scope, move || loop {
                let item = producer();
                let last = item.is_none();
                if sender.send(item).is_err() || last {
                    break;
                }
            });
        match spawned {
            Ok(_) => {
                let mut ended = false;
                let result = consume(&mut || {
                    if ended {
                        return None;
                    }
                    match receiver.recv() {
                        Ok(Some(item)) => Some(item),
                        Ok(None) => {
                            ended = true;
                            None
                        }
                        // The sender goes without the end marker only
                        // when `produce` unwound: that panic is raised
                        // here, at its part, so the consumer never takes
                        // the source as ended and publishes a short zone.
                        Err(_) => panic!("the thread computing publish parts panicked before their end"),
                    }
                });
                // Dropped before the scope joins: a producer blocked on a
                // full channel sees the consumer gone and stops.
                drop(receiver);
                Ran::Done(result)
            }
            Err(error) => {
                tracing::warn!("cannot start a thread computing publish parts ({error}); computing them in line");
                Ran::NotStarted(consume)
            }
        }
    });
    match ran {
        Ran::Done(result) => result,
        Ran::NotStarted(consume) => consume(&mut produce),
    }
}

#[cfg(test)]
mod tests {
    use super::{cpu_bound, pipelined};

    #[test]
    fn every_item_arrives_in_order() {
        let mut next = 0..1000u32;
        let got: Vec<u32> = pipelined(|| next.next(), |source| std::iter::from_fn(source).collect());
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_consumer_stopping_early_stops_the_producer() {
        let mut made = 0u32;
        let first: Vec<u32> = pipelined(
            || {
                made += 1;
                Some(made)
            },
            |source| std::iter::from_fn(source).take(5).collect(),
        );
        assert_eq!(first, vec![1, 2, 3, 4, 5]);
        // At most the one in the channel and the one being sent beyond.
        assert!(made <= 8, "{made} made");
    }

    #[test]
    fn runs_outside_a_runtime() {
        assert_eq!(cpu_bound(|| 2 + 2), 4);
    }

    #[tokio::test]
    async fn runs_on_a_current_thread_runtime() {
        assert_eq!(cpu_bound(|| 2 + 2), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn another_task_runs_meanwhile_on_a_multi_threaded_runtime() {
        // With one worker, the spawned task can only run while the
        // computation blocks if the worker was handed on.
        let (tx, rx) = std::sync::mpsc::channel();
        let task = tokio::spawn(async move { tx.send(()).ok() });
        let ran = cpu_bound(|| rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok());
        assert!(ran, "the other task did not run during the computation");
        task.await.ok();
    }
}
