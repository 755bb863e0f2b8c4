//! Kubernetes Events whose note is the latest one.
//!
//! kube's [`kube::runtime::events::Recorder`] folds an Event into an
//! earlier one with the same type, reason, action and object (for as long
//! as its cache keeps it, 6 minutes) and keeps the *earlier* note: the
//! series count goes up, the message does not change. A second, different
//! message about the same object and reason ("Secret … not read yet",
//! then "… does not parse as a kubeconfig") would never be seen; an
//! operator reading `kubectl describe` would act on the stale one. This
//! [`Recorder`] keeps kube's aggregation for repeats of one note and starts
//! a new Event when the note changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Reporter};
use kube::Client;

/// How long an unused series is remembered: longer than kube's own cache
/// (6 minutes), after which kube starts a new Event anyway.
const FORGET_AFTER: Duration = Duration::from_secs(10 * 60);

/// (object: apiVersion/kind/namespace/name/uid, type, reason, action).
type SeriesKey = (String, String, String, String);

struct Series {
    note: Option<String>,
    recorder: kube::runtime::events::Recorder,
    used: Instant,
}

/// Publishes Events (`events.k8s.io/v1`) as `reporter`; a drop-in for
/// kube's `Recorder` (same `new` and `publish`). Cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    series: Arc<Mutex<HashMap<SeriesKey, Series>>>,
}

impl Recorder {
    /// A recorder that writes with `client` as `reporter`.
    pub fn new(client: Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            series: Arc::default(),
        }
    }

    /// Publishes `event` about `reference`: a repeat of the last note for
    /// the same (object, type, reason, action) raises that Event's series
    /// count; a different note is a new Event.
    ///
    /// # Errors
    /// The API server refused the Event (create or patch).
    pub async fn publish(&self, event: &Event, reference: &ObjectReference) -> Result<(), kube::Error> {
        let key = (
            format!(
                "{}/{}/{}/{}/{}",
                reference.api_version.as_deref().unwrap_or_default(),
                reference.kind.as_deref().unwrap_or_default(),
                reference.namespace.as_deref().unwrap_or_default(),
                reference.name.as_deref().unwrap_or_default(),
                reference.uid.as_deref().unwrap_or_default()
            ),
            format!("{:?}", event.type_),
            event.reason.clone(),
            event.action.clone(),
        );
        let recorder = {
            let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
            series.retain(|_, s| s.used.elapsed() < FORGET_AFTER);
            match series.get_mut(&key) {
                Some(s) if s.note == event.note => {
                    s.used = Instant::now();
                    s.recorder.clone()
                }
                _ => {
                    let recorder = kube::runtime::events::Recorder::new(self.client.clone(), self.reporter.clone());
                    series.insert(
                        key,
                        Series {
                            note: event.note.clone(),
                            recorder: recorder.clone(),
                            used: Instant::now(),
                        },
                    );
                    recorder
                }
            }
        };
        recorder.publish(event, reference).await
    }
}
