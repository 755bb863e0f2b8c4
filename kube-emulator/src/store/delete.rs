//! Deletion: one object (finalizers and `deletionTimestamp`), the cascade
//! of a namespace or CRD, and deletecollection.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::status::ApiError;
use crate::store::resources::ResourceInfo;

use super::meta::*;
use super::*;

impl Store {
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

    pub(super) fn delete_locked(
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
    pub(super) fn purge(&self, inner: &mut Inner, pred: impl Fn(&Value) -> bool, only: Option<(String, String)>) {
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
            let doomed: Vec<(Key, Arc<Stored>)> = inner
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

    pub(super) fn any_version(&self, inner: &Inner, collection: &(String, String)) -> Option<ResourceInfo> {
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
}
