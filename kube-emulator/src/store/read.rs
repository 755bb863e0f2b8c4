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
        let inner = self.lock();
        let (after, listed_before, counted) = match continue_token.filter(|t| !t.is_empty()) {
            Some(token) => {
                let token =
                    ContinueToken::parse(token).ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
                (Some(token.after), token.listed, Some(token.in_scope))
            }
            None => (None, 0, None),
        };
        let empty = BTreeMap::new();
        let collection = inner.collections.get(&info.collection()).unwrap_or(&empty);
        let mut items = Vec::new();
        let mut next = None;
        // A page starts after its continue token's key (a namespace's
        // list at its first key), and ends at `limit` items: walking the
        // whole collection per page made every page cost it all (a member
        // of 20,000 Services listed in pages of 100 cost 200 walks of
        // 20,000 objects, and filter checks on each).
        let namespace_start = filter.namespace.as_ref().map(|ns| (ns.clone(), String::new()));
        let start = match (&after, &namespace_start) {
            (Some(key), Some(first)) if key < first => std::ops::Bound::Included(first),
            (Some(key), _) => std::ops::Bound::Excluded(key),
            (None, Some(first)) => std::ops::Bound::Included(first),
            (None, None) => std::ops::Bound::Unbounded,
        };
        let in_namespace = |key: &Key| filter.namespace.as_deref().is_none_or(|ns| key.0 == ns);
        let mut rest = collection.range((start, std::ops::Bound::Unbounded));
        for (key, object) in rest.by_ref() {
            if !in_namespace(key) {
                // Keys sort by namespace first: nothing of it follows.
                break;
            }
            if !filter.matches(object) {
                continue;
            }
            items.push(object.clone());
            if limit.is_some_and(|l| l > 0 && items.len() == l) {
                next = Some(key.clone());
                break;
            }
        }
        // What follows a full page: whether one more object matches (a
        // continue token always leads to objects), and for lists without
        // selectors, as the API server, `remainingItemCount`. That count
        // is the objects in scope less those listed so far (carried in the
        // token): counting what follows each page walked the rest of the
        // collection per page, which for 50 members of 20,000 Services in
        // pages of 100 was about 5 s of a core at every start of the
        // controller. Objects written between pages make it an estimate,
        // which is all ListMeta promises ("the intended use of the
        // remainingItemCount is *estimating* the size of a collection";
        // kube-openapi's ListMeta, k8s-openapi 0.29 `list_meta.rs`).
        let by_key_only = filter.labels.is_empty() && filter.fields.is_empty();
        let listed = listed_before + items.len();
        let (more, remaining) = match next {
            None => (false, None),
            Some(_) if by_key_only => {
                let more = rest.next().is_some_and(|(key, _)| in_namespace(key));
                // A namespace's objects are counted at its first page only.
                let in_scope = match (&namespace_start, counted) {
                    (None, _) => collection.len(),
                    (Some(_), Some(counted)) => counted,
                    (Some(first), None) => collection
                        .range(first.clone()..)
                        .take_while(|(key, _)| in_namespace(key))
                        .count(),
                };
                (more, Some((in_scope, in_scope.saturating_sub(listed).max(1))))
            }
            Some(_) => (
                rest.take_while(|(key, _)| in_namespace(key))
                    .any(|(_, object)| filter.matches(object)),
                None,
            ),
        };
        let mut metadata = json!({"resourceVersion": inner.rv.to_string()});
        if more {
            if let Some(after) = next {
                let token = ContinueToken {
                    after,
                    listed,
                    in_scope: remaining.map_or(0, |(in_scope, _)| in_scope),
                };
                metadata["continue"] = json!(token.encode());
                if let Some((_, remaining)) = remaining {
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
pub fn filter_event(info: &ResourceInfo, filter: &Filter, event: &Event) -> Option<(EventKind, Arc<Stored>)> {
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
    pub items: Vec<Arc<Stored>>,
}

/// What a `continue` token carries (opaque to clients, as the API
/// server's): the key the next page starts after, how many objects the
/// pages before listed, and how many objects the list's scope held at its
/// first page (for `remainingItemCount`). Encoded as URL-safe base64 of
/// `listed/in_scope/namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ContinueToken {
    after: Key,
    listed: usize,
    in_scope: usize,
}

impl ContinueToken {
    fn encode(&self) -> String {
        use base64::Engine;
        let (ns, name) = &self.after;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("{}/{}/{ns}/{name}", self.listed, self.in_scope))
    }

    /// None for a token this store did not make.
    fn parse(token: &str) -> Option<ContinueToken> {
        use base64::Engine;
        let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let mut parts = text.splitn(4, '/');
        let listed = parts.next()?.parse().ok()?;
        let in_scope = parts.next()?.parse().ok()?;
        let ns = parts.next()?;
        let name = parts.next()?;
        Some(ContinueToken {
            after: (ns.to_owned(), name.to_owned()),
            listed,
            in_scope,
        })
    }
}

impl serde::Serialize for ListPage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let items: Vec<&Stored> = self.items.iter().map(|object| &**object).collect();
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("apiVersion", &self.api_version)?;
        map.serialize_entry("kind", &format!("{}List", self.kind))?;
        map.serialize_entry("metadata", &self.metadata)?;
        map.serialize_entry("items", &items)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` ConfigMaps in each of `namespaces`.
    fn store_of(namespaces: &[&str], count: usize) -> (Arc<Store>, ResourceInfo) {
        let store = Store::new(100);
        let info = store.resource("", "v1", "configmaps").expect("configmaps are built in");
        let namespace_info = store.resource("", "v1", "namespaces").expect("namespaces are built in");
        for ns in namespaces {
            let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            store.create(&namespace_info, None, object).expect("namespace created");
            for i in 0..count {
                let object =
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i:03}")}});
                store.create(&info, Some(ns), object).expect("created");
            }
        }
        (store, info)
    }

    /// Every page of a list: its names and `remainingItemCount`.
    fn pages(store: &Store, info: &ResourceInfo, filter: &Filter, limit: usize) -> Vec<(usize, Option<u64>)> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = store
                .list_page(info, filter, Some(limit), token.as_deref())
                .expect("a page");
            out.push((page.items.len(), page.metadata["remainingItemCount"].as_u64()));
            match page.metadata["continue"].as_str() {
                Some(next) => token = Some(next.to_owned()),
                None => return out,
            }
        }
    }

    /// Pages of one namespace and of all: each full page counts exactly
    /// what follows it (with no write between pages), no token leads to
    /// an empty page, and another namespace's objects are never listed.
    #[test]
    fn pages_count_what_follows_in_their_scope() {
        let (store, info) = store_of(&["a", "b", "c"], 25);
        let namespace = Filter {
            namespace: Some("b".into()),
            ..Default::default()
        };
        assert_eq!(
            pages(&store, &info, &namespace, 10),
            [(10, Some(15)), (10, Some(5)), (5, None)]
        );
        assert_eq!(pages(&store, &info, &namespace, 25), [(25, None)]);
        let all = pages(&store, &info, &Filter::default(), 30);
        assert_eq!(all, [(30, Some(45)), (30, Some(15)), (15, None)]);
        let empty = Filter {
            namespace: Some("none".into()),
            ..Default::default()
        };
        assert_eq!(pages(&store, &info, &empty, 10), [(0, None)]);
    }

    /// Objects deleted between pages: the count is an estimate, never
    /// below one while a token is given, and the token still leads to
    /// the objects that are left.
    #[test]
    fn a_write_between_pages_leaves_the_count_an_estimate_and_the_pages_whole() {
        let (store, info) = store_of(&["a"], 30);
        let filter = Filter {
            namespace: Some("a".into()),
            ..Default::default()
        };
        let first = store.list_page(&info, &filter, Some(10), None).expect("a page");
        assert_eq!(first.metadata["remainingItemCount"], json!(20));
        for i in 10..29 {
            store.delete(&info, Some("a"), &format!("cm-{i:03}")).expect("deleted");
        }
        let token = first.metadata["continue"].as_str().expect("a token");
        let second = store.list_page(&info, &filter, Some(10), Some(token)).expect("a page");
        assert_eq!(second.items.len(), 1, "the one object left after the first page");
        assert!(second.metadata.get("continue").is_none());
    }

    #[test]
    fn a_token_this_store_did_not_make_is_a_bad_request() {
        let (store, info) = store_of(&["a"], 3);
        for token in ["not base64!", "YS9i", "eC95L2EvYg"] {
            assert!(
                store
                    .list_page(&info, &Filter::default(), Some(1), Some(token))
                    .is_err(),
                "{token}"
            );
        }
        let made = ContinueToken {
            after: ("a".into(), "cm-000".into()),
            listed: 1,
            in_scope: 3,
        };
        assert_eq!(ContinueToken::parse(&made.encode()), Some(made));
    }
}
