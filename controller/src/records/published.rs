//! Each record's `status.dns` (the shards it published last), kept beside
//! the record cache instead of in it.
//!
//! A record's `status.dns` has one entry per member cluster serving it, so
//! the host's record cache holds one typed `ClusterDNS` per shard of the
//! federation: about 380 octets each (every string and vector a separate
//! allocation), the largest per-shard cost of the controller at 100,000
//! shards. The reflectors move it out of each object as it
//! arrives (see [`PublishedShards::take`]) and keep it here as compact JSON
//! compressed with LZ4 (block format, `lz4_flex`): about 25 octets a shard
//! instead of about 100. The shards of one record repeat the same keys,
//! regions and zones, so the compression is about 4:1; at 1,000,000 shards
//! the JSON alone was about 68 MiB. The reconcilers read it back to
//! compare before writing and as the last-known set after a restart.

use std::collections::HashMap;
use std::sync::Mutex;

use fedns_api::{IngressDNSRecord, RouteDNSRecord, ServiceDNSRecord};
use kube::ResourceExt;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::queue::RecordKey;

/// Record id ([`RecordKey::id`]) → its `status.dns` as compact JSON,
/// LZ4-compressed with its length first ([`encode`]).
#[derive(Debug, Default)]
pub struct PublishedShards {
    by_record: Mutex<HashMap<String, Box<[u8]>>>,
}

/// A record kind whose `status.dns` is kept in [`PublishedShards`].
pub trait WithPublishedShards {
    /// The shard type of `status.dns`.
    type Shard: Serialize + DeserializeOwned;
    /// The record's key.
    fn record_key(&self) -> RecordKey;
    /// `status.dns`, taken out of the object (empty when it has none).
    fn take_dns(&mut self) -> Vec<Self::Shard>;
    /// Sets `status.dns` (creating the status if needed).
    fn set_dns(&mut self, dns: Vec<Self::Shard>);
}

impl WithPublishedShards for ServiceDNSRecord {
    type Shard = fedns_api::ClusterDNS;
    fn record_key(&self) -> RecordKey {
        RecordKey::Service(self.namespace().unwrap_or_default(), self.name_any())
    }
    fn take_dns(&mut self) -> Vec<Self::Shard> {
        self.status
            .as_mut()
            .map(|s| std::mem::take(&mut s.dns))
            .unwrap_or_default()
    }
    fn set_dns(&mut self, dns: Vec<Self::Shard>) {
        self.status.get_or_insert_with(Default::default).dns = dns;
    }
}

impl WithPublishedShards for IngressDNSRecord {
    type Shard = fedns_api::IngressClusterDNS;
    fn record_key(&self) -> RecordKey {
        RecordKey::Ingress(self.namespace().unwrap_or_default(), self.name_any())
    }
    fn take_dns(&mut self) -> Vec<Self::Shard> {
        self.status
            .as_mut()
            .map(|s| std::mem::take(&mut s.dns))
            .unwrap_or_default()
    }
    fn set_dns(&mut self, dns: Vec<Self::Shard>) {
        self.status.get_or_insert_with(Default::default).dns = dns;
    }
}

impl WithPublishedShards for RouteDNSRecord {
    type Shard = fedns_api::RouteClusterDNS;
    fn record_key(&self) -> RecordKey {
        RecordKey::Route(self.namespace().unwrap_or_default(), self.name_any())
    }
    fn take_dns(&mut self) -> Vec<Self::Shard> {
        self.status
            .as_mut()
            .map(|s| std::mem::take(&mut s.dns))
            .unwrap_or_default()
    }
    fn set_dns(&mut self, dns: Vec<Self::Shard>) {
        self.status.get_or_insert_with(Default::default).dns = dns;
    }
}

/// The compact JSON of `shards`, LZ4-compressed (block format) after its
/// length as 4 octets, little-endian (`lz4_flex`'s
/// `compress_prepend_size`). Serializing strings, numbers and lists
/// cannot fail; were it to, the empty list is kept, and the next write
/// compares unequal and puts the status right. The same shards always
/// give the same octets, so [`PublishedShards::is`] compares them as
/// they are.
fn encode<T: Serialize>(shards: &[T]) -> Box<[u8]> {
    let json = serde_json::to_vec(shards).unwrap_or_default();
    lz4_flex::block::compress_prepend_size(&json).into_boxed_slice()
}

/// The shards [`encode`] made `bytes` of; empty when they do not decode
/// (cannot happen: only this module writes them).
fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Vec<T> {
    lz4_flex::block::decompress_size_prepended(bytes)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .unwrap_or_default()
}

impl PublishedShards {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Box<[u8]>>> {
        self.by_record.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves `status.dns` out of `record` (as it arrives from a watch,
    /// before the record cache stores it) into the table.
    pub fn take<R: WithPublishedShards>(&self, record: &mut R) {
        let dns = record.take_dns();
        self.set(&record.record_key().id(), &dns);
    }

    /// Sets record `id`'s `status.dns` to `shards`, as written by this
    /// process: the watch event that brings the same status later
    /// changes nothing.
    pub fn set<T: Serialize>(&self, id: &str, shards: &[T]) {
        if shards.is_empty() {
            self.lock().remove(id);
        } else {
            let encoded = encode(shards);
            self.lock().insert(id.to_owned(), encoded);
        }
    }

    /// The `status.dns` last seen of record `id` (empty when none).
    pub fn get<T: DeserializeOwned>(&self, id: &str) -> Vec<T> {
        let bytes = self.lock().get(id).cloned();
        bytes.map(|bytes| decode(&bytes)).unwrap_or_default()
    }

    /// Whether record `id`'s `status.dns` is `shards`.
    pub fn is<T: Serialize>(&self, id: &str, shards: &[T]) -> bool {
        let wanted = encode(shards);
        match self.lock().get(id) {
            Some(bytes) => *bytes == wanted,
            None => shards.is_empty(),
        }
    }

    /// `record` with its `status.dns` put back (for `/debug/explain`).
    pub fn restore<R: WithPublishedShards>(&self, record: &mut R) {
        let dns = self.get(&record.record_key().id());
        record.set_dns(dns);
    }

    /// Forgets record `id` (it is gone).
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use fedns_api::{ClusterDNS, ServiceDNSRecordSpec, ServiceDNSRecordStatus};
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus};

    /// A shard of `cluster` whose load balancer has address `ip`.
    pub(in crate::records) fn shard(cluster: &str, ip: &str) -> ClusterDNS {
        ClusterDNS {
            cluster: cluster.into(),
            region: Some("us-east-1".into()),
            zones: vec!["us-east-1a".into()],
            load_balancer: LoadBalancerStatus {
                ingress: Some(vec![LoadBalancerIngress {
                    ip: Some(ip.into()),
                    ..Default::default()
                }]),
            },
        }
    }

    fn record(dns: Vec<ClusterDNS>) -> ServiceDNSRecord {
        let spec: ServiceDNSRecordSpec = serde_json::from_value(serde_json::json!({"domainRef": "myfed"})).unwrap();
        let mut record = ServiceDNSRecord::new("web", spec);
        record.metadata.namespace = Some("ns".into());
        record.status = Some(ServiceDNSRecordStatus {
            dns,
            domain: Some("example.com".into()),
            ..Default::default()
        });
        record
    }

    #[test]
    fn status_dns_moves_out_of_the_object_and_back() {
        let table = PublishedShards::default();
        let shards = vec![shard("east", "192.0.2.1"), shard("west", "192.0.2.2")];
        let mut cached = record(shards.clone());
        table.take(&mut cached);
        // The cached object keeps the rest of its status, not the shards.
        let status = cached.status.as_ref().unwrap();
        assert!(status.dns.is_empty());
        assert_eq!(status.domain.as_deref(), Some("example.com"));

        let id = "service:ns/web";
        assert_eq!(table.get::<ClusterDNS>(id), shards);
        assert!(table.is(id, &shards));
        assert!(!table.is(id, &shards[..1]));
        let mut shown = cached.clone();
        table.restore(&mut shown);
        assert_eq!(shown.status.unwrap().dns, shards);

        // A status without shards, and a record gone.
        let mut emptied = record(Vec::new());
        table.take(&mut emptied);
        assert!(table.get::<ClusterDNS>(id).is_empty());
        assert!(table.is::<ClusterDNS>(id, &[]));
        table.take(&mut record(shards.clone()));
        table.forget(id);
        assert!(table.get::<ClusterDNS>(id).is_empty());
    }

    #[test]
    fn fifty_members_shards_are_kept_in_under_a_third_of_their_json() {
        let table = PublishedShards::default();
        let shards: Vec<ClusterDNS> = (0..50)
            .map(|i| {
                shard(
                    &format!("member-{i}"),
                    &format!("10.{i}.{}.{}", i * 7 % 256, i * 13 % 256),
                )
            })
            .collect();
        let id = "service:ns/web";
        table.set(id, &shards);
        let kept = table.lock().get(id).map_or(0, |bytes| bytes.len());
        let json = serde_json::to_vec(&shards).unwrap().len();
        println!("50 shards: {json} octets of JSON kept in {kept}");
        assert!(kept * 3 < json, "{kept} octets kept for {json} of JSON");
        assert_eq!(table.get::<ClusterDNS>(id), shards);
        assert!(table.is(id, &shards));
    }
}
