//! The controller's caches of host objects: reflectors that keep only what
//! fedns reads of each object (no managed fields, only the Secret keys it
//! needs, records' published shards outside the cache) and call back on
//! changes. Shared by the controller's start-up, its member sources and
//! the other inventories.

use std::sync::Arc;

use fedns_providers::source::spec_changes::{SpecChange, SpecChanges};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;

use crate::records;

/// A reflector of dynamic objects (a kind fedns has no type for).
pub(super) fn reflect_dynamic(
    client: &kube::Client,
    resource: &kube::discovery::ApiResource,
    on_change: impl Fn() + Send + 'static,
) -> Store<kube::api::DynamicObject> {
    let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), resource);
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    tokio::spawn(async move {
        let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
            .default_backoff()
            .touched_objects();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(_) => on_change(),
                Err(e) => tracing::warn!(kind = "FederatedService", error = %e, "watch failed; retrying"),
            }
        }
    });
    store
}

pub(super) fn reporter(identity: &str) -> Reporter {
    Reporter {
        controller: "fedns-controller".into(),
        instance: Some(identity.to_owned()),
    }
}

/// Of a Secret only `keys` of its data are kept (no managed fields, no
/// annotations): what fedns caches of credentials Secrets.
pub(super) fn keep_secret_keys(secret: &mut Secret, keys: &[&str]) {
    secret.metadata.managed_fields = None;
    secret.metadata.annotations = None;
    if let Some(data) = secret.data.as_mut() {
        data.retain(|k, _| keys.contains(&k.as_str()));
    }
    if let Some(data) = secret.string_data.as_mut() {
        data.retain(|k, _| keys.contains(&k.as_str()));
    }
}

/// A reflector's store and a future that resolves once it has listed.
pub(super) struct Reflected<K: Resource<DynamicType = ()> + Clone + 'static> {
    pub(super) store: Store<K>,
}

impl<K> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    pub(super) async fn wait(&self) {
        fedns_providers::source::ready::store_ready(&self.store).await;
    }
}

pub(super) fn reflect<K>(api: Api<K>, on_change: impl Fn(&K) + Send + 'static) -> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    // Nothing reads managedFields; a real API server's can outweigh the
    // object (a field set per record and per DNSEndpoint).
    reflect_slim(api, |o: &mut K| o.meta_mut().managed_fields = None, on_change)
}

/// As [`reflect_spec_changes`] for the records: each one's `status.dns`
/// goes into `published` instead of the cache (one typed entry per shard
/// was the cache's largest cost). Status writes call nothing back: the
/// controller writes every record's status after reconciling it, and
/// requeueing the record for its own write doubled every fan-out's work
/// (a Gateway change reaching 2,000 routes reconciled each twice).
pub(super) fn reflect_records<K>(
    api: Api<K>,
    published: Arc<records::PublishedShards>,
    on_change: impl Fn(Changed<'_, K>) + Send + 'static,
) -> Reflected<K>
where
    K: Resource<DynamicType = ()>
        + records::published::WithPublishedShards
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    reflect_spec_changes_slim(
        api,
        move |o: &mut K| {
            o.meta_mut().managed_fields = None;
            published.take(o);
        },
        on_change,
    )
}

/// What a watch event may have changed, as [`reflect_spec_changes`]
/// calls back with.
pub(super) enum Changed<'a, K> {
    /// The object is new or may have a new spec.
    Spec(&'a K),
    /// The object was deleted (its last state).
    Deleted(&'a K),
    /// Objects went while the watch was down (found by a relist).
    Gone,
}

/// As [`reflect`], calling `on_change` only when an object may have a new
/// spec ([`SpecChanges`]): it appeared, went, or its uid,
/// `metadata.generation` (the resourceVersion where it has none),
/// deletion state or finalizers changed, or it was deleted ([`Changed`]
/// tells which, and [`Changed::Gone`] objects that went while the watch
/// was down, found by a relist). Status writes change none of
/// these. Found at 100,000 shards: the publisher writes each Domain's
/// status after every publish, and requeueing every record for each of
/// those writes cost seconds per change.
pub(super) fn reflect_spec_changes<K>(api: Api<K>, on_change: impl Fn(Changed<'_, K>) + Send + 'static) -> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    // Never read, and on a real API server often larger than the object.
    reflect_spec_changes_slim(api, |o: &mut K| o.meta_mut().managed_fields = None, on_change)
}

/// As [`reflect_spec_changes`], keeping only what `slim` leaves of each
/// object.
fn reflect_spec_changes_slim<K>(
    api: Api<K>,
    slim: impl FnMut(&mut K) + Send + 'static,
    on_change: impl Fn(Changed<'_, K>) + Send + 'static,
) -> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let kind = K::kind(&()).into_owned();
    tokio::spawn(async move {
        let stream =
            reflector::reflector(writer, watcher(api, watcher::Config::default()).modify(slim)).default_backoff();
        futures::pin_mut!(stream);
        let mut specs = SpecChanges::default();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    let deleted = matches!(event, watcher::Event::Delete(_));
                    match specs.observe(&event) {
                        SpecChange::None => {}
                        SpecChange::Object(object) if deleted => on_change(Changed::Deleted(object)),
                        SpecChange::Object(object) => on_change(Changed::Spec(object)),
                        SpecChange::Gone => on_change(Changed::Gone),
                    }
                }
                Err(e) => tracing::warn!(kind = %kind, error = %e, "host watch failed; retrying"),
            }
        }
    });
    Reflected { store }
}

/// A reflector of `api` calling `on_change` with every object touched,
/// keeping only what `slim` leaves of each object.
pub(super) fn reflect_slim<K>(
    api: Api<K>,
    slim: impl FnMut(&mut K) + Send + 'static,
    on_change: impl Fn(&K) + Send + 'static,
) -> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    reflect_selected(api, watcher::Config::default(), slim, on_change)
}

/// As [`reflect_slim`], watching only what `config` selects (labels, fields).
pub(super) fn reflect_selected<K>(
    api: Api<K>,
    config: watcher::Config,
    slim: impl FnMut(&mut K) + Send + 'static,
    on_change: impl Fn(&K) + Send + 'static,
) -> Reflected<K>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let kind = K::kind(&()).into_owned();
    reflect_events(watcher(api, config).modify(slim), kind, on_change)
}

/// Caches `events` in a new store, calling `on_change` with each object
/// they touch; a watch error is logged with `kind` and retried with
/// backoff. The one loop behind [`reflect_selected`] and
/// [`reflect_converted`].
fn reflect_events<T>(
    events: impl futures::Stream<Item = Result<watcher::Event<T>, watcher::Error>> + Send + 'static,
    kind: String,
    on_change: impl Fn(&T) + Send + 'static,
) -> Reflected<T>
where
    T: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    tokio::spawn(async move {
        let stream = reflector::reflector(writer, events).default_backoff().touched_objects();
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(object) => on_change(&object),
                Err(e) => tracing::warn!(kind = %kind, error = %e, "watch failed; retrying"),
            }
        }
    });
    Reflected { store }
}

/// As [`reflect_selected`], for objects served in an older version `K`
/// and cached as the version fedns reads, `T` (each converted with
/// `T::from`): one reader for both versions of an inventory.
pub(super) fn reflect_converted<K, T>(
    api: Api<K>,
    config: watcher::Config,
    slim: impl FnMut(&mut K) + Send + 'static,
    on_change: impl Fn(&T) + Send + 'static,
) -> Reflected<T>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    T: Resource<DynamicType = ()> + From<K> + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let kind = format!("{} {}", K::kind(&()), K::version(&()));
    let converted = watcher(api, config).modify(slim).map(|event| {
        event.map(|event| match event {
            watcher::Event::Apply(o) => watcher::Event::Apply(T::from(o)),
            watcher::Event::Delete(o) => watcher::Event::Delete(T::from(o)),
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitApply(o) => watcher::Event::InitApply(T::from(o)),
            watcher::Event::InitDone => watcher::Event::InitDone,
        })
    });
    reflect_events(converted, kind, on_change)
}
