//! The change printer: one line per published DNS change, naming the
//! member that owns each address.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fedns_api::DNSEndpoint;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{watcher, WatchStreamExt};
use tokio::sync::Notify;

use crate::federation::Federation;

/// Which cluster each load balancer address belongs to, for the change lines.
pub(super) fn address_owners(federation: &Federation) -> BTreeMap<String, String> {
    let mut owners = BTreeMap::new();
    for (name, member) in &federation.members {
        let store = member.store();
        for (group, plural) in [("", "services"), ("networking.k8s.io", "ingresses")] {
            let Some(info) = store.resource(group, "v1", plural) else {
                continue;
            };
            let Ok(list) = store.list(&info, &Default::default(), None, None) else {
                continue;
            };
            for item in list["items"].as_array().into_iter().flatten() {
                for ingress in item
                    .pointer("/status/loadBalancer/ingress")
                    .and_then(|i| i.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(ip) = ingress.get("ip").and_then(|i| i.as_str()) {
                        owners.insert(ip.to_owned(), name.clone());
                    }
                }
            }
        }
    }
    owners
}

/// Prints `+ name TYPE target (cluster)` / `- ...` for every change of the
/// published records (the DNSEndpoints), as they happen.
pub(super) async fn print_changes(federation: Federation, intro_printed: Arc<Notify>) {
    // The first screen comes first.
    intro_printed.notified().await;
    let client = match crate::kube_client::client(Some(&federation.state_dir.join("host.kubeconfig"))).await {
        Ok(client) => client,
        Err(e) => {
            // Said where people look: without it the screen would promise
            // changes that never come.
            eprintln!("fedns sandbox: cannot follow the published records: {e:#}");
            return;
        }
    };
    let (reader, writer) = kube::runtime::reflector::store();
    let stream = kube::runtime::reflector(
        writer,
        watcher(Api::<DNSEndpoint>::all(client), watcher::Config::default()),
    )
    .default_backoff()
    .touched_objects();
    futures::pin_mut!(stream);
    let mut shown: BTreeSet<(String, String, String)> = BTreeSet::new();
    while stream.next().await.is_some() {
        // Let a burst of writes land before diffing.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now: BTreeSet<(String, String, String)> = reader
            .state()
            .iter()
            .flat_map(|e| e.spec.endpoints.clone())
            .flat_map(|e| {
                let t = e.record_type.to_string();
                e.targets
                    .into_iter()
                    .map(move |target| (e.dns_name.clone(), t.clone(), target))
            })
            .collect();
        let owners = address_owners(&federation);
        let label = |target: &str| owners.get(target).map(|c| format!(" ({c})")).unwrap_or_default();
        for (name, rtype, target) in shown.difference(&now) {
            println!("- {name} {rtype} {target}{}", label(target));
        }
        for (name, rtype, target) in now.difference(&shown) {
            println!("+ {name} {rtype} {target}{}", label(target));
        }
        shown = now;
    }
}
