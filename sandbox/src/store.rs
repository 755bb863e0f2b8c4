//! The objects of one emulated cluster and the semantics of every verb.
//!
//! One mutex guards all state; every write takes the next value of one
//! cluster-wide resourceVersion counter and appends an event to a bounded
//! history, which replays watches that start from an older version (and
//! answers 410 Gone once the version has been dropped from it).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::resources::{Registry, ResourceInfo};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;

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
    pub object: Arc<Value>,
    /// The object before a MODIFIED change.
    pub old: Option<Arc<Value>>,
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
            .is_none_or(|ns| object.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns));
        namespace_ok && self.labels.matches(object) && self.fields.matches(object)
    }
}

/// What a new watch starts with.
pub struct WatchStart {
    /// Events to send first (replayed history, or synthetic ADDED).
    pub initial: Vec<(EventKind, Arc<Value>)>,
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
    collections: HashMap<(String, String), BTreeMap<Key, Arc<Value>>>,
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

/// RFC 3339 UTC time with second precision, as Kubernetes writes it.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).map_or_else(|_| now.to_string(), |t| t.to_string())
}

fn meta(object: &Value, field: &str) -> Option<String> {
    object.get("metadata")?.get(field)?.as_str().map(str::to_owned)
}

fn set_meta(object: &mut Value, field: &str, value: Value) {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    object["metadata"][field] = value;
}

fn remove_meta(object: &mut Value, field: &str) {
    if let Some(Value::Object(m)) = object.get_mut("metadata") {
        m.remove(field);
    }
}

/// The object without metadata (and without status when `has_status`):
/// what `metadata.generation` tracks.
fn spec_part(object: &Value, has_status: bool) -> Value {
    let mut copy = object.clone();
    if let Value::Object(m) = &mut copy {
        m.remove("metadata");
        if has_status {
            m.remove("status");
        }
    }
    copy
}

fn random_suffix() -> String {
    uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(5)
        .collect()
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
        old: Option<Arc<Value>>,
    ) -> Arc<Value> {
        let object = Arc::new(object);
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
    ) -> Result<(Key, Arc<Value>), ApiError> {
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

    /// POST: creates an object.
    ///
    /// # Errors
    /// AlreadyExists, NotFound (namespace), BadRequest, Invalid.
    pub fn create(&self, info: &ResourceInfo, namespace: Option<&str>, mut object: Value) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        if let Some(kind) = object.get("kind").and_then(Value::as_str) {
            if kind != info.kind {
                return Err(ApiError::bad_request(format!(
                    "kind {kind} does not match the resource {} ({})",
                    info.plural, info.kind
                )));
            }
        }
        let mut inner = self.lock();
        let body_ns = meta(&object, "namespace");
        let namespace = if info.namespaced {
            namespace.map(str::to_owned).or(body_ns.clone())
        } else {
            None
        };
        if info.namespaced && body_ns.is_some() && body_ns != namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Self::check_namespace(&inner, info, namespace.as_deref())?;
        let name = match (meta(&object, "name"), meta(&object, "generateName")) {
            (Some(name), _) if !name.is_empty() => name,
            (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", random_suffix()),
            _ => {
                return Err(ApiError::invalid(
                    &info.kind,
                    "",
                    vec![("metadata.name".into(), "name or generateName is required".into())],
                ))
            }
        };
        let key = (namespace.clone().unwrap_or_default(), name.clone());
        if inner
            .collections
            .get(&info.collection())
            .is_some_and(|c| c.contains_key(&key))
        {
            return Err(ApiError::already_exists(&info.group, &info.plural, &name));
        }
        object["apiVersion"] = json!(info.api_version());
        object["kind"] = json!(info.kind);
        set_meta(&mut object, "name", json!(name));
        match &namespace {
            Some(ns) => set_meta(&mut object, "namespace", json!(ns)),
            None => remove_meta(&mut object, "namespace"),
        }
        for field in ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
            remove_meta(&mut object, field);
        }
        set_meta(&mut object, "uid", json!(uuid::Uuid::new_v4().to_string()));
        set_meta(&mut object, "creationTimestamp", json!(now_rfc3339()));
        set_meta(&mut object, "generation", json!(1));
        if info.has_status {
            // POST ignores status where a status subresource exists.
            if let Value::Object(m) = &mut object {
                m.remove("status");
            }
        }
        Self::validate_custom(info, &mut object, None)?;
        self.builtin_create_hooks(&mut inner, info, &mut object)?;
        inner.rv += 1;
        set_meta(&mut object, "resourceVersion", json!(inner.rv.to_string()));
        let stored = self.commit(&mut inner, info, EventKind::Added, object, None);
        inner
            .collections
            .entry(info.collection())
            .or_default()
            .insert(key, stored.clone());
        Ok(Self::with_version(info, &stored))
    }

    fn builtin_create_hooks(&self, inner: &mut Inner, info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
        match (info.group.as_str(), info.plural.as_str()) {
            ("", "secrets") => normalize_secret(object),
            ("", "namespaces") => object["status"] = json!({"phase": "Active"}),
            ("", "services") => {
                let kind = object
                    .pointer("/spec/type")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterIP");
                let has_ip = object.pointer("/spec/clusterIP").and_then(Value::as_str).is_some();
                if kind != "ExternalName" && !has_ip {
                    // Bookkeeping only: nothing ever connects to these.
                    let n = inner.next_cluster_ip;
                    inner.next_cluster_ip += 1;
                    let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
                    object["spec"]["clusterIP"] = json!(ip);
                    object["spec"]["clusterIPs"] = json!([ip]);
                }
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                Self::admit_crd(inner, object)?;
                let names = object.pointer("/spec/names").cloned().unwrap_or(json!({}));
                // As PrepareForCreate: the storage version only, not every
                // served one (a multi-version CRD such as Cluster API's
                // stores v1beta2 and serves v1beta1 too).
                let stored: Vec<Value> = object
                    .pointer("/spec/versions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                    .filter_map(|v| v.get("name").cloned())
                    .collect();
                let now = now_rfc3339();
                object["status"] = json!({
                    "acceptedNames": names,
                    "storedVersions": stored,
                    "conditions": [
                        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
                        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
                    ],
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Validates a CRD as the API server does (structural schema and the
    /// rest of `validateCustomResourceDefinition`, [`crate::crd_validation`];
    /// CEL rules compile, [`crate::cel`]) and serves its versions.
    ///
    /// # Errors
    /// Invalid (422) with every field path the API server would name.
    fn admit_crd(inner: &mut Inner, object: &Value) -> Result<Vec<ResourceInfo>, ApiError> {
        let name = meta(object, "name").unwrap_or_default();
        let errors = crate::crd_validation::validate_crd(object);
        if !errors.is_empty() {
            return Err(ApiError::invalid("CustomResourceDefinition", &name, errors));
        }
        inner
            .registry
            .register_crd(object)
            .map_err(|e| ApiError::invalid("CustomResourceDefinition", &name, vec![("spec".into(), e)]))
    }

    /// GET one object.
    ///
    /// # Errors
    /// NotFound.
    pub fn get(&self, info: &ResourceInfo, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let inner = self.lock();
        let key = (namespace.unwrap_or_default().to_owned(), name.to_owned());
        inner
            .collections
            .get(&info.collection())
            .and_then(|c| c.get(&key))
            .map(|o| Self::with_version(info, o))
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))
    }

    /// LIST with selectors and `limit`/`continue` paging.
    ///
    /// # Errors
    /// BadRequest for a malformed continue token.
    pub fn list(
        &self,
        info: &ResourceInfo,
        filter: &Filter,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<Value, ApiError> {
        use base64::Engine;
        let inner = self.lock();
        let after: Option<Key> = match continue_token.filter(|t| !t.is_empty()) {
            Some(token) => {
                let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(token)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
                let (ns, name) = decoded
                    .split_once('/')
                    .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
                Some((ns.to_owned(), name.to_owned()))
            }
            None => None,
        };
        let empty = BTreeMap::new();
        let collection = inner.collections.get(&info.collection()).unwrap_or(&empty);
        let mut items = Vec::new();
        let mut next = None;
        // A page starts after its continue token's key, and ends at `limit`
        // items: walking the whole collection per page made every page
        // cost it all (a member of 20,000 Services listed in pages of 100
        // cost 200 walks of 20,000 objects, and filter checks on each).
        let start = match &after {
            Some(key) => std::ops::Bound::Excluded(key),
            None => std::ops::Bound::Unbounded,
        };
        let mut rest = collection.range((start, std::ops::Bound::Unbounded));
        for (key, object) in rest.by_ref() {
            if !filter.matches(object) {
                continue;
            }
            items.push(Self::with_version(info, object));
            if limit.is_some_and(|l| l > 0 && items.len() == l) {
                next = Some(key.clone());
                break;
            }
        }
        // What follows a full page. As the API server, `remainingItemCount`
        // only for lists without selectors, counted by key alone; with
        // selectors only whether one more object matches.
        let by_key_only = filter.labels.is_empty() && filter.fields.is_empty();
        let (more, remaining) = match next {
            None => (false, None),
            Some(_) if by_key_only => {
                let namespace = filter.namespace.as_deref();
                let count = rest.filter(|(key, _)| namespace.is_none_or(|ns| key.0 == ns)).count();
                (count > 0, Some(count))
            }
            Some(_) => (rest.any(|(_, object)| filter.matches(object)), None),
        };
        let mut metadata = json!({"resourceVersion": inner.rv.to_string()});
        if more {
            if let Some((ns, name)) = next {
                metadata["continue"] =
                    json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ns}/{name}")));
                if let Some(remaining) = remaining {
                    metadata["remainingItemCount"] = json!(remaining);
                }
            }
        }
        Ok(json!({
            "apiVersion": info.api_version(),
            "kind": format!("{}List", info.kind),
            "metadata": metadata,
            "items": items,
        }))
    }

    /// PUT (update) of the object or its status.
    ///
    /// # Errors
    /// NotFound, Conflict (stale resourceVersion), BadRequest, Invalid.
    pub fn update(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        body: Value,
        target: Target,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        self.replace(&mut inner, info, namespace, name, body, target, None)
    }

    /// PATCH of the object or its status; apply patches create missing objects.
    ///
    /// # Errors
    /// NotFound, Conflict, BadRequest (malformed patch), Invalid.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        patch: Value,
        field_manager: Option<&str>,
        target: Target,
    ) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        let key = (namespace.unwrap_or_default().to_owned(), name.to_owned());
        let existing = inner
            .collections
            .get(&info.collection())
            .and_then(|c| c.get(&key))
            .cloned();
        let Some(old) = existing else {
            drop(inner);
            if kind == PatchKind::Apply && target == Target::Main {
                let mut object = patch;
                set_meta(&mut object, "name", json!(name));
                add_managed_fields(&mut object, field_manager, &info.api_version());
                return self.create(info, namespace, object);
            }
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        };
        let mut doc = (*old).clone();
        match kind {
            PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                }
                json_patch::merge(&mut doc, &patch);
            }
            PatchKind::Json => {
                let ops: json_patch::Patch = serde_json::from_value(patch)
                    .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut doc, &ops)
                    .map_err(|e| ApiError::invalid(&info.kind, name, vec![("<patch>".into(), e.to_string())]))?;
            }
        }
        if kind == PatchKind::Apply {
            add_managed_fields(&mut doc, field_manager, &info.api_version());
        }
        // Read and write under one lock: a patch without a resourceVersion
        // never conflicts (the real server retries internally).
        self.replace(&mut inner, info, namespace, name, doc, target, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn replace(
        &self,
        inner: &mut Inner,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        target: Target,
        expected_rv: Option<String>,
    ) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let (key, old) = Self::existing(inner, info, namespace, name)?;
        let wanted_rv = expected_rv
            .or_else(|| meta(&body, "resourceVersion"))
            .filter(|rv| !rv.is_empty());
        if wanted_rv.is_some_and(|rv| Some(rv) != meta(&old, "resourceVersion")) {
            return Err(ApiError::conflict(&info.group, &info.plural, name));
        }
        if let Some(body_name) = meta(&body, "name") {
            if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
        }
        let mut new = match target {
            Target::Main => {
                let mut new = body;
                if info.has_status {
                    match old.get("status") {
                        Some(status) => new["status"] = status.clone(),
                        None => {
                            if let Value::Object(m) = &mut new {
                                m.remove("status");
                            }
                        }
                    }
                }
                new
            }
            Target::Status => {
                let mut new = (*old).clone();
                match body.get_mut("status").map(Value::take) {
                    Some(status) => new["status"] = status,
                    None => {
                        if let Value::Object(m) = &mut new {
                            m.remove("status");
                        }
                    }
                }
                new
            }
        };
        // Server-owned metadata stays as it was.
        new["apiVersion"] = json!(info.api_version());
        new["kind"] = json!(info.kind);
        for field in [
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
        ] {
            match old.get("metadata").and_then(|m| m.get(field)) {
                Some(v) => set_meta(&mut new, field, v.clone()),
                None => remove_meta(&mut new, field),
            }
        }
        set_meta(&mut new, "name", json!(name));
        if info.group.is_empty() && info.plural == "secrets" {
            normalize_secret(&mut new);
        }
        Self::validate_custom(info, &mut new, Some(&old))?;
        if info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions" && target == Target::Main
        {
            // An updated CRD is checked like a new one, and its new schema
            // is what its resources are validated with from now on.
            Self::admit_crd(inner, &new)?;
        }
        set_meta(&mut new, "resourceVersion", old["metadata"]["resourceVersion"].clone());
        if new == *old {
            return Ok(Self::with_version(info, &old)); // no-op: no new version
        }
        if spec_part(&new, info.has_status) != spec_part(&old, info.has_status) {
            let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            set_meta(&mut new, "generation", json!(generation + 1));
        }
        inner.rv += 1;
        set_meta(&mut new, "resourceVersion", json!(inner.rv.to_string()));
        let finalizers_gone = new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
        if meta(&new, "deletionTimestamp").is_some() && finalizers_gone {
            let stored = self.commit(inner, info, EventKind::Deleted, new, None);
            if let Some(c) = inner.collections.get_mut(&info.collection()) {
                c.remove(&key);
            }
            return Ok(Self::with_version(info, &stored));
        }
        let stored = self.commit(inner, info, EventKind::Modified, new, Some(old));
        inner
            .collections
            .entry(info.collection())
            .or_default()
            .insert(key, stored.clone());
        Ok(Self::with_version(info, &stored))
    }

    /// DELETE: removes the object, or marks it (`deletionTimestamp`) while
    /// finalizers remain. Deleting a namespace deletes what is in it;
    /// deleting a CRD stops serving its resources and deletes their objects.
    ///
    /// # Errors
    /// NotFound.
    pub fn delete(&self, info: &ResourceInfo, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        self.delete_locked(&mut inner, info, namespace, name)
    }

    fn delete_locked(
        &self,
        inner: &mut Inner,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let (key, old) = Self::existing(inner, info, namespace, name)?;
        let has_finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if meta(&old, "deletionTimestamp").is_some() {
                return Ok(Self::with_version(info, &old));
            }
            let mut marked = (*old).clone();
            set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
            set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
            inner.rv += 1;
            set_meta(&mut marked, "resourceVersion", json!(inner.rv.to_string()));
            let stored = self.commit(inner, info, EventKind::Modified, marked, Some(old));
            inner
                .collections
                .entry(info.collection())
                .or_default()
                .insert(key, stored.clone());
            return Ok(Self::with_version(info, &stored));
        }
        if let Some(c) = inner.collections.get_mut(&info.collection()) {
            c.remove(&key);
        }
        inner.rv += 1;
        let mut gone = (*old).clone();
        set_meta(&mut gone, "resourceVersion", json!(inner.rv.to_string()));
        let stored = self.commit(inner, info, EventKind::Deleted, gone, None);
        match (info.group.as_str(), info.plural.as_str()) {
            ("", "namespaces") => self.purge(inner, |object| meta(object, "namespace").as_deref() == Some(name), None),
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                let removed = inner.registry.unregister_crd(name);
                if let Some(first) = removed.first() {
                    let collection = first.collection();
                    self.purge(inner, |_| true, Some(collection));
                }
            }
            _ => {}
        }
        Ok(Self::with_version(info, &stored))
    }

    /// Deletes every object matching `pred` (in one collection, or all
    /// namespaced ones), ignoring finalizers: the cascade of a namespace or
    /// CRD deletion.
    fn purge(&self, inner: &mut Inner, pred: impl Fn(&Value) -> bool, only: Option<(String, String)>) {
        let collections: Vec<(String, String)> = inner.collections.keys().cloned().collect();
        for collection in collections {
            if only.as_ref().is_some_and(|o| *o != collection) {
                continue;
            }
            let Some(info) = inner
                .registry
                .get(&collection.0, "v1", &collection.1)
                .cloned()
                .or_else(|| self.any_version(inner, &collection))
            else {
                continue;
            };
            if only.is_none() && !info.namespaced {
                continue;
            }
            let doomed: Vec<(Key, Arc<Value>)> = inner
                .collections
                .get(&collection)
                .map(|c| {
                    c.iter()
                        .filter(|(_, o)| pred(o))
                        .map(|(k, o)| (k.clone(), o.clone()))
                        .collect()
                })
                .unwrap_or_default();
            for (key, object) in doomed {
                if let Some(c) = inner.collections.get_mut(&collection) {
                    c.remove(&key);
                }
                inner.rv += 1;
                let mut gone = (*object).clone();
                set_meta(&mut gone, "resourceVersion", json!(inner.rv.to_string()));
                self.commit(inner, &info, EventKind::Deleted, gone, None);
            }
        }
    }

    fn any_version(&self, inner: &Inner, collection: &(String, String)) -> Option<ResourceInfo> {
        // CRD resources may be unregistered already; rebuild enough of an
        // info to emit DELETED events for their objects.
        let sample = inner.collections.get(collection)?.values().next()?;
        let api_version = sample.get("apiVersion")?.as_str()?;
        let (_, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Some(ResourceInfo {
            group: collection.0.clone(),
            version: version.to_owned(),
            plural: collection.1.clone(),
            singular: String::new(),
            kind: sample.get("kind")?.as_str()?.to_owned(),
            namespaced: true,
            has_status: false,
            short_names: Vec::new(),
            schema: None,
            crd: None,
        })
    }

    /// DELETE on a collection: deletes every matching object.
    ///
    /// # Errors
    /// Never today; kept fallible like the other verbs.
    pub fn delete_collection(&self, info: &ResourceInfo, filter: &Filter) -> Result<Value, ApiError> {
        let mut inner = self.lock();
        let keys: Vec<Key> = inner
            .collections
            .get(&info.collection())
            .map(|c| {
                c.iter()
                    .filter(|(_, o)| filter.matches(o))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut items = Vec::new();
        for (ns, name) in keys {
            let ns = (!ns.is_empty()).then_some(ns);
            if let Ok(deleted) = self.delete_locked(&mut inner, info, ns.as_deref(), &name) {
                items.push(deleted);
            }
        }
        Ok(json!({
            "apiVersion": info.api_version(),
            "kind": format!("{}List", info.kind),
            "metadata": {"resourceVersion": inner.rv.to_string()},
            "items": items,
        }))
    }

    /// Starts a watch: events after `since` (replayed from history), or the
    /// current objects as ADDED when `since` is None/0 or `initial` is set.
    ///
    /// # Errors
    /// Gone (410) when `since` is older than the history.
    pub fn watch(
        &self,
        info: &ResourceInfo,
        filter: &Filter,
        since: Option<u64>,
        initial: bool,
    ) -> Result<WatchStart, ApiError> {
        let inner = self.lock();
        // Subscribe under the lock: no write can fall between the replay
        // and the live stream.
        let live = self.events.subscribe();
        let collection = info.collection();
        let mut events = Vec::new();
        match since.filter(|rv| *rv != 0 && !initial) {
            None => {
                if let Some(c) = inner.collections.get(&collection) {
                    for object in c.values().filter(|o| filter.matches(o)) {
                        events.push((EventKind::Added, Arc::new(Self::with_version(info, object))));
                    }
                }
            }
            Some(rv) => {
                if rv < inner.compacted_rv {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        inner.compacted_rv + 1
                    )));
                }
                for event in inner.history.iter().filter(|e| e.rv > rv && e.collection == collection) {
                    if let Some((kind, object)) = filter_event(info, filter, event) {
                        events.push((kind, object));
                    }
                }
            }
        }
        Ok(WatchStart {
            initial: events,
            live,
            rv: inner.rv,
        })
    }
}

/// What a watcher with `filter` sees of `event`: objects moving into the
/// selection are ADDED, out of it DELETED (as the real watch cache does).
pub fn filter_event(info: &ResourceInfo, filter: &Filter, event: &Event) -> Option<(EventKind, Arc<Value>)> {
    if event.collection != info.collection() {
        return None;
    }
    let now = filter.matches(&event.object);
    let before = event.old.as_ref().is_some_and(|o| filter.matches(o));
    let kind = match (event.kind, before, now) {
        (EventKind::Added, _, true) => EventKind::Added,
        (EventKind::Deleted, _, true) => EventKind::Deleted,
        (EventKind::Modified, true, true) => EventKind::Modified,
        (EventKind::Modified, false, true) => EventKind::Added,
        (EventKind::Modified, true, false) => EventKind::Deleted,
        _ => return None,
    };
    Some((kind, Arc::new(Store::with_version(info, &event.object))))
}

/// As the real server: `stringData` is merged into `data` (base64) and
/// never stored.
fn normalize_secret(object: &mut Value) {
    use base64::Engine;
    let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    if !object.get("data").is_some_and(Value::is_object) {
        object["data"] = json!({});
    }
    for (key, value) in strings {
        let text = value.as_str().unwrap_or_default();
        object["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

fn add_managed_fields(object: &mut Value, manager: Option<&str>, api_version: &str) {
    let entry = json!({
        "manager": manager.unwrap_or("unknown"),
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    });
    let managed = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut managed: Vec<Value> = managed
        .into_iter()
        .filter(|m| m.get("manager").and_then(Value::as_str) != manager.or(Some("unknown")))
        .collect();
    managed.push(entry);
    set_meta(object, "managedFields", Value::Array(managed));
}
