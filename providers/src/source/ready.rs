//! Waiting for a reflector [`Store`] to hold its first full list, safely
//! when several tasks wait on the same store.
//!
//! Why not [`Store::wait_until_ready`] alone: kube-runtime 5 keeps the
//! readiness in a `futures` oneshot channel, whose receiver remembers only
//! the waker of the task that polled it last. Two tasks waiting on one
//! store (a member-side replica's discovery task and its publishing source
//! share the DNSEndpoint cache) leave the first one asleep forever when the
//! list completes. Polling again now and then re-registers the waker; the
//! value, once received by any task, is kept, so every waiter sees it.

use std::time::Duration;

use kube::runtime::reflector::Store;
use kube::Resource;

/// How often a waiter polls the readiness again, in milliseconds.
const REPOLL: Duration = Duration::from_millis(200);

/// Waits until `store` holds its first full list. Returns `false` when the
/// store's writer was dropped before that (its watch ended), `true` once
/// ready. Any number of tasks may wait on the same store.
pub async fn store_ready<K>(store: &Store<K>) -> bool
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    loop {
        match tokio::time::timeout(REPOLL, store.wait_until_ready()).await {
            Ok(result) => return result.is_ok(),
            Err(_elapsed) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    /// Two tasks wait on one store: both see it ready (with
    /// `wait_until_ready` alone, one of them stays asleep).
    #[tokio::test]
    async fn every_waiter_sees_the_store_ready() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let first = tokio::spawn({
            let store = store.clone();
            async move { store_ready(&store).await }
        });
        let second = tokio::spawn({
            let store = store.clone();
            async move { store_ready(&store).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitDone);
        let both = tokio::time::timeout(Duration::from_secs(30), async { (first.await, second.await) }).await;
        assert!(matches!(both, Ok((Ok(true), Ok(true)))), "{both:?}");
    }
}
