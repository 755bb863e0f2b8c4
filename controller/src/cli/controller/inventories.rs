//! The caches of the inventory member sources (`--member-source
//! clusternet|capi|argocd|clusterprofile`): each watches its objects and
//! the Secrets holding their credentials in the cluster that holds the
//! inventory (its own `--*-kubeconfig`, else the host), every change
//! waking the member registry. Like the engines' caches, they are not
//! waited for: an inventory whose API is not installed is logged and
//! retried while the other sources work.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::events::Recorder;
use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::ResourceExt;

use super::host_caches::{keep_secret_keys, reflect_converted, reflect_selected, reporter};
use crate::cli::ControllerArgs;
use crate::members::sources::{argocd, capi, clusternet, clusterprofile, Sources};
use crate::members::MemberSource;

/// A client of the cluster holding an inventory: `path`, else the host's kubeconfig.
async fn inventory_client(
    path: Option<&Path>,
    host: Option<&Path>,
    what: &str,
) -> anyhow::Result<(kube::Config, kube::Client)> {
    let config = crate::kube_client::config(path.or(host))
        .await
        .with_context(|| format!("the cluster holding the {what} inventory"))?;
    let client = kube::Client::try_from(config.clone()).with_context(|| format!("a client of the {what} inventory"))?;
    Ok((config, client))
}

/// Which version of Cluster API's `Cluster` the management cluster
/// serves (its discovery of `cluster.x-k8s.io`): v1beta1 only where
/// v1beta1 is served and v1beta2 is not (Cluster API before v1.11);
/// otherwise v1beta2, also when discovery fails or Cluster API is not
/// installed yet (logged; the watch then retries as for any missing API).
async fn capi_served_version(client: &kube::Client) -> capi::ServedVersion {
    let served = |version: &'static str| {
        let client = client.clone();
        async move {
            client
                .list_api_group_resources(&format!("cluster.x-k8s.io/{version}"))
                .await
                .map(|list| list.resources.iter().any(|r| r.name == "clusters"))
        }
    };
    match served("v1beta2").await {
        Ok(true) => capi::ServedVersion::V1Beta2,
        v1beta2 => match served("v1beta1").await {
            Ok(true) => {
                tracing::info!("Cluster API serves cluster.x-k8s.io/v1beta1 and no v1beta2 (before v1.11): reading v1beta1 Clusters, readiness from their Ready condition");
                capi::ServedVersion::V1Beta1
            }
            _ => {
                if let Err(e) = v1beta2 {
                    tracing::warn!(error = %e, "Cluster API discovery failed; watching cluster.x-k8s.io/v1beta2 Clusters");
                }
                capi::ServedVersion::V1Beta2
            }
        },
    }
}

/// `Api::namespaced` in `namespace`, else `Api::all`.
fn api_in<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// A watch of the objects matching `selector` (empty: all).
fn selected(selector: &str) -> watcher::Config {
    let config = watcher::Config::default();
    if selector.trim().is_empty() {
        config
    } else {
        config.labels(selector)
    }
}

/// Of an inventory's Secret only `keys` are kept (labels too: Argo CD's
/// cluster labels give topology).
fn slim_secret(keys: &'static [&'static str]) -> impl FnMut(&mut Secret) + Send + 'static {
    move |secret: &mut Secret| keep_secret_keys(secret, keys)
}

/// Keeps one watch per Cluster API Cluster in `clusters` on its
/// kubeconfig Secret alone (see [`capi`] for why not by label), waking
/// `notify` on every change of one.
async fn keep_kubeconfig_watches(
    clusters: Store<capi::Cluster>,
    secrets: capi::KubeconfigSecrets,
    clusters_changed: Arc<tokio::sync::Notify>,
    client: kube::Client,
    notify: impl Fn() + Clone + Send + 'static,
) {
    loop {
        clusters_changed.notified().await;
        let wanted = clusters
            .state()
            .iter()
            .map(|c| (c.namespace().unwrap_or_default(), c.name_any()))
            .collect::<Vec<_>>();
        secrets.sync(wanted, |namespace, name| {
            watch_kubeconfig(Api::namespaced(client.clone(), namespace), name, notify.clone())
        });
    }
}

/// A watch of the Secret `name` alone (field selector on its name), only
/// key `value` kept.
fn watch_kubeconfig(api: Api<Secret>, name: &str, notify: impl Fn() + Send + 'static) -> capi::KubeconfigWatch {
    let (store, writer) = reflector::store();
    let listed = Arc::new(AtomicBool::new(false));
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let (name, done) = (name.to_owned(), listed.clone());
    let task = tokio::spawn(async move {
        let stream = reflector::reflector(
            writer,
            watcher::watcher(api, config).modify(slim_secret(&[capi::KUBECONFIG_KEY])),
        )
        .default_backoff();
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
                Ok(watcher::Event::InitDone) => {
                    done.store(true, Ordering::Relaxed);
                    notify();
                }
                Ok(_) => notify(),
                Err(e) => {
                    tracing::warn!(secret = %name, error = %e, "Cluster API kubeconfig Secret watch failed; retrying")
                }
            }
        }
    });
    capi::KubeconfigWatch {
        store,
        listed,
        task: Some(task.abort_handle()),
    }
}

/// Starts the caches of `source` (an inventory source) into `sources`.
/// `namespace` is the controller namespace; `notify` wakes the registry.
pub(super) async fn start(
    source: MemberSource,
    args: &ControllerArgs,
    identity: &str,
    sources: &mut Sources,
    notify: impl Fn() + Clone + Send + 'static,
) -> anyhow::Result<()> {
    let inv = &args.sources.inventories;
    let host = args.kubeconfig.as_deref();
    match source {
        MemberSource::Clusternet => {
            let (config, client) = inventory_client(inv.clusternet_kubeconfig.as_deref(), host, "Clusternet").await?;
            let (n1, n2) = (notify.clone(), notify);
            let clusters = reflect_selected(
                Api::<clusternet::ManagedCluster>::all(client.clone()),
                selected(&inv.clusternet_selector),
                |o: &mut clusternet::ManagedCluster| o.metadata.managed_fields = None,
                move |_| n1(),
            );
            let secrets = reflect_selected(
                Api::<Secret>::all(client.clone()),
                watcher::Config::default().fields(&format!("metadata.name={}", clusternet::CHILD_SECRET)),
                slim_secret(&["token", "ca.crt", clusternet::URL_KEY]),
                move |_| n2(),
            );
            sources.clusternet = Some(clusternet::ClusternetInputs {
                clusters: clusters.store,
                secrets: secrets.store,
                config,
                through_hub: inv.clusternet_through_hub,
                recorder: Recorder::new(client, reporter(identity)),
            });
        }
        MemberSource::Capi => {
            let (_, client) = inventory_client(inv.capi_kubeconfig.as_deref(), host, "Cluster API").await?;
            let namespace = inv.capi_namespace.as_deref();
            // Each change of the Clusters wakes the task keeping one
            // kubeconfig Secret watch per Cluster (a Notify keeps a wake-up
            // sent before the task waits).
            let clusters_changed = Arc::new(tokio::sync::Notify::new());
            let (n1, changed) = (notify.clone(), clusters_changed.clone());
            let on_change = move |_: &capi::Cluster| {
                changed.notify_one();
                n1();
            };
            let version = capi_served_version(&client).await;
            let clusters = match version {
                capi::ServedVersion::V1Beta2 => reflect_selected(
                    api_in::<capi::Cluster>(&client, namespace),
                    selected(&inv.capi_selector),
                    |o: &mut capi::Cluster| o.metadata.managed_fields = None,
                    on_change,
                ),
                capi::ServedVersion::V1Beta1 => reflect_converted(
                    api_in::<capi::ClusterV1Beta1>(&client, namespace),
                    selected(&inv.capi_selector),
                    |o: &mut capi::ClusterV1Beta1| o.metadata.managed_fields = None,
                    on_change,
                ),
            };
            let secrets = capi::KubeconfigSecrets::default();
            tokio::spawn(keep_kubeconfig_watches(
                clusters.store.clone(),
                secrets.clone(),
                clusters_changed,
                client.clone(),
                notify,
            ));
            sources.capi = Some(capi::CapiInputs {
                clusters: clusters.store,
                secrets,
                recorder: Recorder::new(client, reporter(identity)),
                version,
            });
        }
        MemberSource::Argocd => {
            let (config, client) = inventory_client(inv.argocd_kubeconfig.as_deref(), host, "Argo CD").await?;
            let mut selector = format!("{}={}", argocd::SECRET_TYPE_LABEL, argocd::SECRET_TYPE_CLUSTER);
            if !inv.argocd_selector.trim().is_empty() {
                selector = format!("{selector},{}", inv.argocd_selector.trim());
            }
            let secrets = reflect_selected(
                Api::<Secret>::namespaced(client.clone(), &inv.argocd_namespace),
                watcher::Config::default().labels(&selector),
                slim_secret(&["name", "server", "config"]),
                move |_| notify(),
            );
            sources.argocd = Some(argocd::ArgocdInputs {
                secrets: secrets.store,
                recorder: Recorder::new(client, reporter(identity)),
                // Argo CD's own cluster (its in-cluster entry) is the one holding its Secrets.
                in_cluster: Some(config),
            });
        }
        MemberSource::Clusterprofile => {
            let exec_providers = match &inv.clusterprofile_provider_file {
                Some(path) => clusterprofile::ProviderFile::read(path).map_err(|e| anyhow::anyhow!(e))?,
                None => clusterprofile::ProviderFile::default(),
            };
            let (_, client) =
                inventory_client(inv.clusterprofile_kubeconfig.as_deref(), host, "ClusterProfile").await?;
            let (n1, n2) = (notify.clone(), notify);
            let profiles = reflect_selected(
                api_in::<clusterprofile::ClusterProfile>(&client, inv.clusterprofile_namespace.as_deref()),
                selected(&inv.clusterprofile_selector),
                |o: &mut clusterprofile::ClusterProfile| o.metadata.managed_fields = None,
                move |_| n1(),
            );
            let secret_namespace = inv
                .clusterprofile_secret_namespace
                .clone()
                .unwrap_or_else(|| args.namespace.clone());
            // The secretreader plugin reads its Secrets in the consumer's
            // own cluster (in-cluster config or KUBECONFIG,
            // cluster-inventory-api plugins/secretreader), not the hub's.
            let (_, consumer) = inventory_client(None, host, "ClusterProfile consumer (secretreader)").await?;
            let secrets = reflect_selected(
                Api::<Secret>::namespaced(consumer, &secret_namespace),
                watcher::Config::default(),
                slim_secret(&["token"]),
                move |_| n2(),
            );
            sources.clusterprofile = Some(clusterprofile::ClusterProfileInputs {
                profiles: profiles.store,
                secrets: secrets.store,
                secret_namespace,
                exec_providers,
                recorder: Recorder::new(client, reporter(identity)),
            });
        }
        MemberSource::Fedns | MemberSource::Karmada | MemberSource::Kubefed => {}
    }
    Ok(())
}
