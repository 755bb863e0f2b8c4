//! DNSEndpoint specs a controller in this process has computed and is
//! writing: the publisher publishes them at once, before the API server
//! has stored them and its watch has brought them back.
//!
//! A change that reaches many records at once (a Gateway's new address
//! reaches every route attached to it) rewrites each record's
//! DNSEndpoint. Waiting for each write and its watch event made the last
//! of 2,000 routes answer the new address 23 s after the change (measured
//! with 50 members, `PARTS=routes bench/controller.sh`): the answers
//! followed the API writes, not the computation. With this overlay a
//! record's new endpoints are published as soon as they are computed;
//! the API writes follow, and when one lands the publisher sees the same
//! content again and recomputes nothing
//! ([`crate::plan::incremental`] compares content, not only generations).
//!
//! Only DNSEndpoints the cache already holds are overlaid, with their
//! stored metadata (namespace, owner, creation time): every rule that
//! decides who may publish a name reads the same object it would read
//! after the write. A new DNSEndpoint is published when the API server has
//! created it. Only the leader writes, so only the leader's publisher
//! overlays; followers serve what the API server stored.
//!
//! The same table tells a controller's watch which DNSEndpoint changes
//! are its own writes coming back ([`PendingEndpoints::is_echo`]), so that
//! they do not requeue the record that wrote them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use fedns_api::{DNSEndpoint, Endpoint};
use kube::ResourceExt;

/// `namespace/name` of a DNSEndpoint.
type Id = (String, String);

use crate::plan::incremental::content_hash as spec_hash;

#[derive(Debug, Default)]
struct Table {
    /// Computed, not yet stored: the endpoints to publish instead of the
    /// stored ones.
    proposed: HashMap<Id, Arc<Vec<Endpoint>>>,
    /// The content hash of the last spec this process wrote (or proposed)
    /// for each DNSEndpoint.
    written: HashMap<Id, u64>,
}

/// The table shared by a controller (which proposes and writes) and the
/// publisher of the same process (which overlays); see the module docs.
#[derive(Debug, Default)]
pub struct PendingEndpoints {
    table: Mutex<Table>,
    /// Woken on every proposal and withdrawal: the publisher's Notify.
    wake: Option<Arc<tokio::sync::Notify>>,
}

impl PendingEndpoints {
    /// An empty table whose proposals wake `publisher`.
    pub fn waking(publisher: Arc<tokio::sync::Notify>) -> Self {
        PendingEndpoints {
            table: Mutex::default(),
            wake: Some(publisher),
        }
    }

    fn wake(&self) {
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Endpoints computed for DNSEndpoint `namespace/name`, about to be
    /// written: published from now on in place of the stored ones.
    pub fn propose(&self, namespace: &str, name: &str, endpoints: &[Endpoint]) {
        let id = (namespace.to_owned(), name.to_owned());
        {
            let mut table = self.lock();
            table.written.insert(id.clone(), spec_hash(endpoints));
            table.proposed.insert(id, Arc::new(endpoints.to_vec()));
        }
        self.wake();
    }

    /// The endpoints of `namespace/name` were written (or were already
    /// stored as they are): remember their hash, so that the watch event
    /// of the write is known as an echo.
    pub fn written(&self, namespace: &str, name: &str, endpoints: &[Endpoint]) {
        let id = (namespace.to_owned(), name.to_owned());
        self.lock().written.insert(id, spec_hash(endpoints));
    }

    /// The proposed endpoints of `namespace/name` will not be written (too
    /// large for the API server, leadership lost, the record went): the
    /// stored ones are published again.
    pub fn withdraw(&self, namespace: &str, name: &str) {
        let id = (namespace.to_owned(), name.to_owned());
        let proposed = {
            let mut table = self.lock();
            table.written.remove(&id);
            table.proposed.remove(&id).is_some()
        };
        if proposed {
            self.wake();
        }
    }

    /// Whether `endpoint`'s spec is what this process last wrote for it:
    /// its own write coming back through the watch.
    pub fn is_echo(&self, endpoint: &DNSEndpoint) -> bool {
        let id = (endpoint.namespace().unwrap_or_default(), endpoint.name_any());
        self.lock()
            .written
            .get(&id)
            .is_some_and(|hash| *hash == spec_hash(&endpoint.spec.endpoints))
    }

    /// The DNSEndpoints to publish: `stored` with every proposal in place
    /// of its stored spec. A proposal the store now holds (its write
    /// landed) or whose DNSEndpoint is gone is dropped. Returns the
    /// `namespace/name` of those overlaid too.
    ///
    /// An overlaid copy carries no `metadata.generation` and a
    /// `resourceVersion` of its own (`proposed-` and its content hash), so
    /// that its version differs from the stored one's and from another
    /// proposal's; the incremental plan then compares content.
    pub fn overlay(&self, stored: Vec<Arc<DNSEndpoint>>) -> (Vec<Arc<DNSEndpoint>>, HashSet<String>) {
        let mut table = self.lock();
        let mut overlaid = HashSet::new();
        if table.proposed.is_empty() {
            return (stored, overlaid);
        }
        let mut left: HashMap<Id, Arc<Vec<Endpoint>>> = std::mem::take(&mut table.proposed);
        let out = stored
            .into_iter()
            .map(|endpoint| {
                let id = (endpoint.namespace().unwrap_or_default(), endpoint.name_any());
                let Some(proposed) = left.remove(&id) else {
                    return endpoint;
                };
                if *proposed == endpoint.spec.endpoints {
                    // Landed: the store holds it now.
                    return endpoint;
                }
                overlaid.insert(format!("{}/{}", id.0, id.1));
                let mut copy = (*endpoint).clone();
                copy.spec.endpoints = (*proposed).clone();
                copy.metadata.generation = None;
                copy.metadata.resource_version = Some(format!("proposed-{:x}", spec_hash(&proposed)));
                table.proposed.insert(id, proposed);
                Arc::new(copy)
            })
            .collect();
        // What is left names DNSEndpoints the store does not hold.
        (out, overlaid)
    }

    /// How many proposals wait for their writes.
    pub fn proposals(&self) -> usize {
        self.lock().proposed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedns_api::{DNSEndpointSpec, RecordType};

    fn endpoint(target: &str) -> Endpoint {
        Endpoint {
            dns_name: "a.example.com".into(),
            targets: vec![target.into()],
            record_type: RecordType::A,
            set_identifier: String::new(),
            record_ttl: None,
            labels: Default::default(),
            provider_specific: Vec::new(),
        }
    }

    fn stored(name: &str, target: &str, generation: i64) -> Arc<DNSEndpoint> {
        let mut object = DNSEndpoint::new(
            name,
            DNSEndpointSpec {
                endpoints: vec![endpoint(target)],
            },
        );
        object.metadata.namespace = Some("ns".into());
        object.metadata.generation = Some(generation);
        object.metadata.creation_timestamp = None;
        Arc::new(object)
    }

    #[test]
    fn a_proposal_is_published_until_its_write_lands() {
        let pending = PendingEndpoints::default();
        let before = vec![stored("e", "10.0.0.1", 1), stored("f", "10.0.0.9", 1)];
        pending.propose("ns", "e", &[endpoint("10.0.0.2")]);
        let (now, overlaid) = pending.overlay(before);
        assert_eq!(overlaid, HashSet::from(["ns/e".to_owned()]));
        assert_eq!(now[0].spec.endpoints[0].targets, ["10.0.0.2"]);
        assert_eq!(
            now[0].metadata.generation, None,
            "an overlaid copy has a version of its own"
        );
        // Who may publish a name is decided on the stored metadata: the
        // copy keeps its namespace, uid, owners and creation time.
        let mut owned = (*stored("e", "10.0.0.1", 1)).clone();
        owned.metadata.uid = Some("uid-e".into());
        owned.metadata.owner_references = Some(vec![Default::default()]);
        owned.metadata.creation_timestamp = Some(fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:00Z".parse().unwrap(),
        ));
        let (copy, _) = pending.overlay(vec![Arc::new(owned.clone())]);
        let (kept, stored_meta) = (&copy[0].metadata, &owned.metadata);
        assert_eq!(
            (
                &kept.namespace,
                &kept.uid,
                &kept.owner_references,
                &kept.creation_timestamp
            ),
            (
                &stored_meta.namespace,
                &stored_meta.uid,
                &stored_meta.owner_references,
                &stored_meta.creation_timestamp
            )
        );
        assert_eq!(now[1].spec.endpoints[0].targets, ["10.0.0.9"]);
        // Still pending: overlaid again.
        let (_, overlaid) = pending.overlay(vec![stored("e", "10.0.0.1", 1)]);
        assert_eq!(overlaid.len(), 1);
        // The write landed: the stored object is published, the proposal goes.
        let landed = stored("e", "10.0.0.2", 2);
        assert!(pending.is_echo(&landed), "its own write coming back");
        let (now, overlaid) = pending.overlay(vec![landed]);
        assert_eq!((overlaid.len(), pending.proposals()), (0, 0));
        assert_eq!(now[0].metadata.generation, Some(2));
    }

    #[test]
    fn a_withdrawn_or_gone_proposal_is_not_published() {
        let pending = PendingEndpoints::default();
        pending.propose("ns", "e", &[endpoint("10.0.0.2")]);
        pending.withdraw("ns", "e");
        let (now, overlaid) = pending.overlay(vec![stored("e", "10.0.0.1", 1)]);
        assert_eq!(
            (overlaid.len(), now[0].spec.endpoints[0].targets.clone()),
            (0, vec!["10.0.0.1".to_owned()])
        );
        // A proposal whose DNSEndpoint the store lacks (gone, or never
        // created) is dropped: a new DNSEndpoint is published once created.
        pending.propose("ns", "new", &[endpoint("10.0.0.3")]);
        let (now, overlaid) = pending.overlay(vec![stored("e", "10.0.0.1", 1)]);
        assert_eq!((overlaid.len(), now.len(), pending.proposals()), (0, 1, 0));
    }

    /// A proposal names its DNSEndpoint by namespace and name: one for a
    /// namespace the store holds no such object in never replaces another
    /// namespace's object of the same name.
    #[test]
    fn a_proposal_never_lands_on_another_namespaces_object() {
        let pending = PendingEndpoints::default();
        pending.propose("attacker", "e", &[endpoint("10.6.6.6")]);
        let (now, overlaid) = pending.overlay(vec![stored("e", "10.0.0.1", 1)]);
        assert!(overlaid.is_empty());
        assert_eq!(now[0].spec.endpoints[0].targets, ["10.0.0.1"]);
        assert_eq!(pending.proposals(), 0, "dropped: its DNSEndpoint is not stored");
    }

    #[test]
    fn an_edit_by_someone_else_is_no_echo() {
        let pending = PendingEndpoints::default();
        pending.written("ns", "e", &[endpoint("10.0.0.1")]);
        assert!(pending.is_echo(&stored("e", "10.0.0.1", 2)));
        assert!(
            !pending.is_echo(&stored("e", "10.6.6.6", 3)),
            "a hand edit requeues its record"
        );
        assert!(!pending.is_echo(&stored("other", "10.0.0.1", 1)), "never written here");
    }
}
