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

#[cfg(test)]
mod tests {
    use super::cpu_bound;

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
