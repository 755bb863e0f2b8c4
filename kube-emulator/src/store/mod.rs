//! The objects of one emulated cluster and the semantics of every verb.
//!
//! One mutex guards all state; every write takes the next value of one
//! cluster-wide resourceVersion counter and appends an event to a bounded
//! history, which replays watches that start from an older version (and
//! answers 410 Gone once the version has been dropped from it).
//! Beside it: the resources a cluster serves and their discovery documents
//! ([`resources`], compiled CRD schemas among them) and the label and field
//! selectors of list and watch ([`selectors`]). Below it is the CRD
//! validation (`crate::validation`); above it, the request path
//! (`crate::api`).

mod delete;
mod meta;
mod read;
pub mod resources;
pub mod selectors;
mod stored;
mod write;

use meta::meta;
pub use meta::now_rfc3339;
pub use read::{filter_event, ListPage};
pub use stored::Stored;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::status::ApiError;
use crate::store::resources::{Registry, ResourceInfo};
use crate::store::selectors::{FieldSelector, LabelSelector};

/// ADDED, MODIFIED or DELETED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventKind {
    /// The watch event `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// One change, as kept in the history and sent to watchers.
#[derive(Debug)]
pub struct Event {
    /// resourceVersion of the change.
    pub rv: u64,
    /// (group, plural) of the object.
    pub collection: (String, String),
    /// What happened.
    pub kind: EventKind,
    /// The object after the change (before it, for DELETED, with the new rv).
    pub object: Arc<Stored>,
    /// The object before a MODIFIED change.
    pub old: Option<Arc<Stored>>,
}

/// How a PATCH body is interpreted (by its content type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`: treated as a merge patch.
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply as create-or-merge.
    Apply,
}

/// Whether a write targets the main resource or its `/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The object.
    Main,
    /// The status subresource.
    Status,
}

/// Filters of list, watch and deletecollection.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this namespace (None: all).
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Filter {
    fn matches(&self, object: &Value) -> bool {
        let namespace_ok = self
            .namespace
            .as_deref()
            .is_none_or(|ns| meta::meta_str(object, "namespace") == Some(ns));
        namespace_ok && self.labels.matches(object) && self.fields.matches(object)
    }
}

/// What a new watch starts with.
pub struct WatchStart {
    /// Events to send first (replayed history, or synthetic ADDED).
    pub initial: Vec<(EventKind, Arc<Stored>)>,
    /// Live events after those.
    pub live: broadcast::Receiver<Arc<Event>>,
    /// resourceVersion the live stream starts after.
    pub rv: u64,
}

type Key = (String, String);

#[derive(Clone)]
struct Inner {
    registry: Registry,
    rv: u64,
    collections: HashMap<(String, String), BTreeMap<Key, Arc<Stored>>>,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// Versions up to this one may be missing from the history.
    compacted_rv: u64,
    next_cluster_ip: u32,
}

/// All objects of one cluster.
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// An empty cluster with the namespaces `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease`, keeping `history_limit` events.
    pub fn new(history_limit: usize) -> Arc<Store> {
        let (events, _) = broadcast::channel(65_536);
        let store = Arc::new(Store {
            inner: Mutex::new(Inner {
                registry: Registry::default(),
                rv: 0,
                collections: HashMap::new(),
                history: VecDeque::new(),
                history_limit: history_limit.max(16),
                compacted_rv: 0,
                next_cluster_ip: 1,
            }),
            events,
        });
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            // Cannot fail: namespaces are in the built-in registry.
            let info = store.resource("", "v1", "namespaces").expect("namespaces are built in");
            let _ = store.create(&info, None, json!({"metadata": {"name": ns}}));
        }
        store
    }

    /// A copy of this cluster that nothing watches, for `dryRun=All`: a
    /// request runs against it through the same path as a real one
    /// (admission, validation, defaulting, CRD registration), and what it
    /// changes is dropped with the copy, as the real server's dry run
    /// stops before storage.
    pub fn scratch(&self) -> Arc<Store> {
        let inner = self.lock().clone();
        let (events, _) = broadcast::channel(16);
        Arc::new(Store {
            inner: Mutex::new(inner),
            events,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every
        // write is one insert), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The resource served at (group, version, plural).
    pub fn resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceInfo> {
        self.lock().registry.get(group, version, plural).cloned()
    }

    /// The resource for an object's apiVersion and kind (for seeding).
    pub fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<ResourceInfo> {
        self.lock().registry.by_kind(api_version, kind).cloned()
    }

    /// Runs `f` on the resource registry (discovery).
    pub fn with_registry<T>(&self, f: impl FnOnce(&Registry) -> T) -> T {
        f(&self.lock().registry)
    }

    /// The current resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    fn commit(
        &self,
        inner: &mut Inner,
        info: &ResourceInfo,
        kind: EventKind,
        object: Value,
        old: Option<Arc<Stored>>,
    ) -> Arc<Stored> {
        let object = Arc::new(Stored::new(object));
        let event = Arc::new(Event {
            rv: inner.rv,
            collection: info.collection(),
            kind,
            object: object.clone(),
            old,
        });
        inner.history.push_back(event.clone());
        while inner.history.len() > inner.history_limit {
            if let Some(dropped) = inner.history.pop_front() {
                inner.compacted_rv = dropped.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(event);
        object
    }

    fn with_version(info: &ResourceInfo, object: &Value) -> Value {
        let mut object = object.clone();
        object["apiVersion"] = json!(info.api_version());
        object["kind"] = json!(info.kind);
        object
    }

    /// The stored object at `namespace/name`, with its key, or 404.
    fn existing(
        inner: &Inner,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(Key, Arc<Stored>), ApiError> {
        let key = (namespace.unwrap_or_default().to_owned(), name.to_owned());
        let object = inner
            .collections
            .get(&info.collection())
            .and_then(|c| c.get(&key))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
        Ok((key, object))
    }

    fn check_namespace(inner: &Inner, info: &ResourceInfo, namespace: Option<&str>) -> Result<(), ApiError> {
        if !info.namespaced {
            return Ok(());
        }
        let ns = namespace.ok_or_else(|| {
            ApiError::bad_request(format!(
                "{} is namespaced; use /namespaces/<ns>/{}",
                info.plural, info.plural
            ))
        })?;
        let exists = inner
            .collections
            .get(&(String::new(), "namespaces".to_owned()))
            .is_some_and(|c| c.contains_key(&(String::new(), ns.to_owned())));
        if exists {
            Ok(())
        } else {
            Err(ApiError::not_found("", "namespaces", ns))
        }
    }

    fn validate_custom(info: &ResourceInfo, object: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let Some(schema) = &info.schema else { return Ok(()) };
        schema.prune_and_default(object);
        let errors = schema.validate_update(object, old);
        if errors.is_empty() {
            Ok(())
        } else {
            let name = meta(object, "name").unwrap_or_default();
            Err(ApiError::invalid(&info.kind, &name, errors))
        }
    }
}
