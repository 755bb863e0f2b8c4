//! Deleting a Domain removes its records from the external providers.
//!
//! While external providers are configured, the controller puts
//! [`PROVIDER_RECORDS_FINALIZER`] on every Domain. Once a Domain is being
//! deleted (`deletionTimestamp` set), its zone is handed to the providers
//! with no RRsets, so each removes the records fedns owns there (never
//! another owner's); when every provider synced that zone without an error,
//! the finalizer is removed and the API server deletes the Domain. A
//! provider that fails keeps the finalizer, so nothing is left behind
//! unnoticed: a Warning Event on the Domain says why, and the next sync
//! (within 5 s after an error) tries again.
//!
//! Without the finalizer, records would stay in Route53 or etcd for good:
//! once the Domain is gone, fedns no longer knows the zone is its concern.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use fedns_api::{Domain, PROVIDER_RECORDS_FINALIZER};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::plan::desired::{zone_apex, DesiredZones};
use crate::provider::ErrorScope;

/// Whether `domain` is being deleted.
fn deleting(domain: &Domain) -> bool {
    domain.metadata.deletion_timestamp.is_some()
}

/// Whether `domain` carries the finalizer.
fn guarded(domain: &Domain) -> bool {
    domain.finalizers().iter().any(|f| f == PROVIDER_RECORDS_FINALIZER)
}

/// `desired` as the external providers must see it: the zones of Domains
/// being deleted hold no RRsets, so providers delete what fedns owns there,
/// unless another Domain, not being deleted, names the same zone.
/// Borrowed unchanged when no zone is emptied.
pub(crate) fn for_providers<'a>(desired: &'a DesiredZones, domains: &[Arc<Domain>]) -> Cow<'a, DesiredZones> {
    let live: Vec<String> = domains
        .iter()
        .filter(|d| !deleting(d))
        .filter_map(|d| zone_apex(d))
        .collect();
    let deleted: Vec<String> = domains
        .iter()
        .filter(|d| deleting(d))
        .filter_map(|d| zone_apex(d))
        .filter(|apex| !live.contains(apex))
        .collect();
    if !desired
        .zones
        .iter()
        .any(|z| deleted.contains(&z.content.apex.to_ascii()) && !z.rrsets.is_empty())
    {
        return Cow::Borrowed(desired);
    }
    let mut out = desired.clone();
    for zone in &mut out.zones {
        if deleted.contains(&zone.content.apex.to_ascii()) {
            zone.rrsets.clear();
        }
    }
    Cow::Owned(out)
}

/// Adds the finalizer to every Domain that is not being deleted and lacks
/// it. A failed patch is logged and tried again on the next sync.
pub(crate) async fn guard(client: &Client, domains: &[Arc<Domain>]) {
    for domain in domains.iter().filter(|d| !deleting(d) && !guarded(d)) {
        let mut finalizers = domain.finalizers().to_vec();
        finalizers.push(PROVIDER_RECORDS_FINALIZER.to_owned());
        patch_finalizers(client, domain, finalizers, "adding").await;
    }
}

/// Provider errors of one sync, as `(provider, errors)`.
pub(crate) type SyncErrors<'a> = [(&'static str, Vec<(ErrorScope, String)>)];

/// For each Domain being deleted that carries the finalizer: removes the
/// finalizer when no provider reported an error for its zone; otherwise
/// records a Warning Event (reason `ProviderError`) naming the errors, once
/// per change of them. `reported` remembers what was last reported, by
/// `namespace/name`.
pub(crate) async fn release(
    client: &Client,
    recorder: &Recorder,
    domains: &[Arc<Domain>],
    errors: &SyncErrors<'_>,
    reported: &mut BTreeMap<String, String>,
) {
    for domain in domains.iter().filter(|d| deleting(d) && guarded(d)) {
        let key = format!("{}/{}", domain.namespace().unwrap_or_default(), domain.name_any());
        // A Domain serving no zone (invalid spec.domain) has nothing to remove.
        let apex = zone_apex(domain).unwrap_or_default();
        let apex = apex.trim_end_matches('.');
        let failures: Vec<String> = errors
            .iter()
            .flat_map(|(provider, errors)| {
                errors
                    .iter()
                    .filter(|(scope, _)| match scope {
                        ErrorScope::Provider => true,
                        ErrorScope::Zone(zone) => zone == apex,
                    })
                    .map(move |(_, error)| format!("{provider}: {error}"))
            })
            .collect();
        if failures.is_empty() {
            let finalizers = domain
                .finalizers()
                .iter()
                .filter(|f| *f != PROVIDER_RECORDS_FINALIZER)
                .cloned()
                .collect();
            if patch_finalizers(client, domain, finalizers, "removing").await {
                tracing::info!(domain = %key, zone = apex, "records removed from every provider; Domain released");
                reported.remove(&key);
            }
            continue;
        }
        let message = format!(
            "records of zone {apex} not yet removed from every provider (retrying): {}",
            failures.join("; ")
        );
        if reported.get(&key) != Some(&message) {
            tracing::warn!(domain = %key, "{message}");
            let event = Event {
                type_: EventType::Warning,
                reason: "ProviderError".into(),
                note: Some(message.chars().take(1000).collect()),
                action: "Delete".into(),
                secondary: None,
            };
            if let Err(e) = recorder.publish(&event, &domain.object_ref(&())).await {
                tracing::debug!(error = %e, domain = %key, "could not record an Event");
            }
            reported.insert(key, message);
        }
    }
    reported.retain(|key, _| {
        domains
            .iter()
            .any(|d| format!("{}/{}", d.namespace().unwrap_or_default(), d.name_any()) == *key)
    });
}

/// Sets `domain`'s finalizers to `finalizers`, on the condition that the
/// object is still at the resourceVersion it was read at (a merge patch
/// carrying `metadata.resourceVersion` fails with 409 Conflict otherwise, so
/// another writer's finalizer is never dropped). Whether it succeeded.
async fn patch_finalizers(client: &Client, domain: &Domain, finalizers: Vec<String>, doing: &str) -> bool {
    let namespace = domain.namespace().unwrap_or_default();
    let name = domain.name_any();
    let api: Api<Domain> = Api::namespaced(client.clone(), &namespace);
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": domain.resource_version(),
    }});
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(domain = %format!("{namespace}/{name}"), error = %e, "{doing} finalizer {PROVIDER_RECORDS_FINALIZER} failed (retried on the next sync)");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::desired::desired_zones;
    use fedns_api::DNSEndpoint;

    fn domain(name: &str, apex: &str, deleting: bool) -> Arc<Domain> {
        let mut metadata = json!({"name": name, "namespace": "fedns-system"});
        if deleting {
            metadata["deletionTimestamp"] = json!("2026-11-21T00:00:00Z");
            metadata["finalizers"] = json!([PROVIDER_RECORDS_FINALIZER]);
        }
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
                "kind": "Domain",
                "metadata": metadata,
                "spec": {"domain": apex}
            }))
            .unwrap(),
        )
    }

    fn endpoint(dns_name: &str) -> DNSEndpoint {
        serde_json::from_value(json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "DNSEndpoint",
            "metadata": {"name": "e", "namespace": "ns"},
            "spec": {"endpoints": [{"dnsName": dns_name, "recordType": "A", "targets": ["192.0.2.1"]}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_deleted_domains_zone_reaches_providers_empty() {
        let domains = vec![domain("a", "a.example", false), domain("b", "B.example.", true)];
        let plain: Vec<Domain> = domains.iter().map(|d| (**d).clone()).collect();
        let desired = desired_zones(&plain, &[endpoint("www.a.example"), endpoint("www.b.example")]);
        assert!(desired.zones.iter().all(|z| z.rrsets.len() == 1));
        let seen = for_providers(&desired, &domains);
        assert!(matches!(seen, Cow::Owned(_)));
        let counts: Vec<(String, usize)> = seen
            .zones
            .iter()
            .map(|z| (z.content.apex.to_ascii(), z.rrsets.len()))
            .collect();
        assert_eq!(counts, [("a.example.".to_owned(), 1), ("b.example.".to_owned(), 0)]);
        // Nothing deleted: the same value, not a copy.
        let live = vec![domain("a", "a.example", false)];
        assert!(matches!(for_providers(&desired, &live), Cow::Borrowed(_)));
        // A duplicate Domain of a served zone goes; the zone's records stay.
        let duplicate = vec![domain("a", "a.example", false), domain("a2", "a.example", true)];
        assert!(matches!(for_providers(&desired, &duplicate), Cow::Borrowed(_)));
    }
}
