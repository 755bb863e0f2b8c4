//! The verbs that read: get, list (selectors, `limit`/`continue`) and
//! watch (history replay, initial events), and what a watcher with a
//! filter sees of one change.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::status::ApiError;
use crate::store::resources::ResourceInfo;

use super::*;

impl Store {
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

    /// LIST with selectors and `limit`/`continue` paging, as a JSON
    /// value (a copy of every object on the page; [`Store::list_page`]
    /// shares them instead).
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
        let page = self.list_page(info, filter, limit, continue_token)?;
        serde_json::to_value(&page).map_err(|e| ApiError::internal(e.to_string()))
    }

    /// LIST with selectors and `limit`/`continue` paging: the page's
    /// objects shared with the store, not copied, so the lock is held only
    /// to pick them; the copy is made by serializing the page, without the
    /// lock. The API server's watch cache does alike (it keeps each
    /// object's encoding); a list that copied every object under the lock
    /// took 13 s of one core for the host's 40,000 records and
    /// DNSEndpoints at 1,000,000 shards, while every other request of that
    /// cluster waited.
    ///
    /// # Errors
    /// BadRequest for a malformed continue token.
    pub fn list_page(
        &self,
        info: &ResourceInfo,
        filter: &Filter,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ListPage, ApiError> {
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
            items.push(object.clone());
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
        Ok(ListPage {
            api_version: info.api_version(),
            kind: info.kind.clone(),
            metadata,
            items,
        })
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
                        events.push((EventKind::Added, object.clone()));
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
/// The object is the one stored, shared: it was deep-copied per event
/// and watcher only to be serialized.
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
    Some((kind, event.object.clone()))
}

/// One page of a LIST (`{"apiVersion","kind":"<Kind>List","metadata","items"}`),
/// its items shared with the store (which keeps each object with its
/// `apiVersion` and `kind`: every write sets them).
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The resource's apiVersion (`group/version`, or `v1` for the core group).
    pub api_version: String,
    /// The resource's kind (the list's kind is `<kind>List`).
    pub kind: String,
    /// `resourceVersion`, and `continue`/`remainingItemCount` after a full page.
    pub metadata: Value,
    /// The objects as stored.
    pub items: Vec<Arc<Value>>,
}

impl serde::Serialize for ListPage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let items: Vec<&Value> = self.items.iter().map(|object| &**object).collect();
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("apiVersion", &self.api_version)?;
        map.serialize_entry("kind", &format!("{}List", self.kind))?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.serialize_entry("items", &items)?;
        map.end()
    }
}
