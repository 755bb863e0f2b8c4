//! Which watch events may change an object's spec.
//!
//! Status writes change an object's resourceVersion but none of what the
//! publisher and the reconcilers read: they need waking only when an
//! object appears, goes, or changes its uid, `metadata.generation` (the
//! resourceVersion where the API server keeps none), deletion state,
//! finalizers, labels or annotations (an annotation is how operators
//! and tools ask for a reconcile now, and some are read). The publisher writes each Domain's status (its serial) and
//! each DNSEndpoint's conditions after every publish; waking for those
//! writes cost every change a second pass (measured at 100,000 shards:
//! seconds of requeued records; later, a change waiting behind that pass).

use std::collections::{HashMap, HashSet};

use kube::runtime::watcher;
use kube::Resource;

/// What identifies an object's spec (see the module docs).
type Version = (Option<String>, Option<i64>, Option<String>, bool, Vec<String>, u64);

/// What one watch event changed, as [`SpecChanges::observe`] tells.
#[derive(Debug)]
pub enum SpecChange<'a, K> {
    /// Nothing that matters (a status write, a bookmark, a relist's start).
    None,
    /// This object is new, went, or may have a new spec.
    Object(&'a K),
    /// Objects went while the watch was down (found by a relist).
    Gone,
}

/// Remembers each object's spec version across a watch's events.
#[derive(Debug, Default)]
pub struct SpecChanges {
    seen: HashMap<String, Version>,
    /// Objects listed by the relist under way: those missing at its end
    /// went while the watch was down.
    listed: Option<HashSet<String>>,
}

fn version_of<K: Resource>(object: &K) -> (String, Version) {
    let meta = object.meta();
    (
        format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        ),
        (
            meta.uid.clone(),
            meta.generation,
            meta.resource_version.clone().filter(|_| meta.generation.is_none()),
            meta.deletion_timestamp.is_some(),
            meta.finalizers.clone().unwrap_or_default(),
            {
                // A hash: `kubectl apply`'s last-applied annotation alone
                // holds the whole object.
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                meta.labels.hash(&mut hasher);
                meta.annotations.hash(&mut hasher);
                hasher.finish()
            },
        ),
    )
}

impl SpecChanges {
    /// Feeds one watcher event (before or after a reflector stores it);
    /// returns what it changed.
    pub fn observe<'a, K: Resource>(&mut self, event: &'a watcher::Event<K>) -> SpecChange<'a, K> {
        match event {
            watcher::Event::Init => {
                self.listed = Some(HashSet::new());
                SpecChange::None
            }
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                let (key, version) = version_of(object);
                if let Some(listed) = self.listed.as_mut() {
                    listed.insert(key.clone());
                }
                if self.seen.get(&key) == Some(&version) {
                    return SpecChange::None;
                }
                self.seen.insert(key, version);
                SpecChange::Object(object)
            }
            watcher::Event::Delete(object) => {
                self.seen.remove(&version_of(object).0);
                SpecChange::Object(object)
            }
            watcher::Event::InitDone => {
                let Some(listed) = self.listed.take() else {
                    return SpecChange::None;
                };
                let before = self.seen.len();
                self.seen.retain(|key, _| listed.contains(key));
                if self.seen.len() == before {
                    SpecChange::None
                } else {
                    SpecChange::Gone
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::Domain;

    fn domain(name: &str, generation: i64, resource_version: &str) -> Domain {
        let mut domain: Domain =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "fedns-system"}, "spec": {"domain": "example.com"}}))
                .unwrap();
        domain.metadata.uid = Some(format!("uid-{name}"));
        domain.metadata.generation = Some(generation);
        domain.metadata.resource_version = Some(resource_version.into());
        domain
    }

    fn changed(tracker: &mut SpecChanges, event: watcher::Event<Domain>) -> &'static str {
        match tracker.observe(&event) {
            SpecChange::None => "none",
            SpecChange::Object(_) => "object",
            SpecChange::Gone => "gone",
        }
    }

    #[test]
    fn status_writes_change_nothing_spec_and_metadata_changes_do() {
        let mut tracker = SpecChanges::default();
        assert_eq!(changed(&mut tracker, watcher::Event::Init), "none");
        assert_eq!(
            changed(&mut tracker, watcher::Event::InitApply(domain("a", 1, "10"))),
            "object"
        );
        assert_eq!(
            changed(&mut tracker, watcher::Event::InitApply(domain("b", 1, "11"))),
            "object"
        );
        assert_eq!(changed(&mut tracker, watcher::Event::InitDone), "none");
        // A status write: new resourceVersion, same generation.
        assert_eq!(
            changed(&mut tracker, watcher::Event::Apply(domain("a", 1, "12"))),
            "none"
        );
        // A spec edit.
        assert_eq!(
            changed(&mut tracker, watcher::Event::Apply(domain("a", 2, "13"))),
            "object"
        );
        // A finalizer added, and deletion begun.
        let mut finalized = domain("a", 2, "14");
        finalized.metadata.finalizers = Some(vec!["fedns.io/records".into()]);
        assert_eq!(
            changed(&mut tracker, watcher::Event::Apply(finalized.clone())),
            "object"
        );
        finalized.metadata.deletion_timestamp =
            Some(serde_json::from_value(serde_json::json!("2026-01-01T00:00:00Z")).unwrap());
        assert_eq!(changed(&mut tracker, watcher::Event::Apply(finalized)), "object");
        assert_eq!(
            changed(&mut tracker, watcher::Event::Delete(domain("a", 2, "15"))),
            "object"
        );
        // A label or an annotation (e.g. one set to ask for a reconcile).
        let mut touched = domain("a", 2, "16");
        touched.metadata.annotations = Some([("test/touch".to_owned(), "1".to_owned())].into());
        assert_eq!(changed(&mut tracker, watcher::Event::Apply(touched.clone())), "object");
        touched.metadata.resource_version = Some("17".into());
        assert_eq!(changed(&mut tracker, watcher::Event::Apply(touched.clone())), "none");
        touched.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        assert_eq!(changed(&mut tracker, watcher::Event::Apply(touched)), "object");
        // A relist that misses b: it went while the watch was down.
        assert_eq!(changed(&mut tracker, watcher::Event::Init), "none");
        assert_eq!(changed(&mut tracker, watcher::Event::InitDone), "gone");
    }
}
