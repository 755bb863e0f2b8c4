//! The caches of every `--member-source` for `fedns controller`: the
//! MemberCluster and Secret stores, the engines' (Karmada, kubefed) Clusters
//! and Secrets, and the other inventories ([`super::inventories`]).

use std::sync::Arc;

use crate::events::Recorder;
use anyhow::Context;
use fedns_api::MemberCluster;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::reflector::Store;
use tokio::sync::Notify;

use super::host_caches::{keep_secret_keys, reflect, reflect_slim, reporter};
use crate::cli::ControllerArgs;
use crate::members::sources::{karmada, kubefed, KarmadaInputs, KubefedInputs};
use crate::members::{MemberSource, Sources};

/// The caches of every `--member-source`. Engine caches are not waited
/// for: an engine that is not installed (its API answers 404) is logged
/// and retried while the other sources work.
pub(super) async fn member_sources(
    args: &ControllerArgs,
    host: &kube::Client,
    identity: &str,
    clusters: &Store<MemberCluster>,
    secrets: &Store<Secret>,
    changed: &Arc<Notify>,
) -> anyhow::Result<Sources> {
    let mut sources = Sources {
        order: Vec::new(),
        credentials: args.sources.credential_policy(),
        ..Sources::default()
    };
    for source in &args.sources.member_source {
        if sources.order.contains(source) {
            continue;
        }
        sources.order.push(*source);
        let notify = {
            let changed = changed.clone();
            move || changed.notify_one()
        };
        match source {
            MemberSource::Fedns => sources.fedns = Some((clusters.clone(), secrets.clone())),
            MemberSource::Karmada => {
                let path = args
                    .sources
                    .karmada_kubeconfig
                    .as_deref()
                    .or(args.kubeconfig.as_deref());
                let config = crate::kube_client::config(path)
                    .await
                    .context("the Karmada control plane (--karmada-kubeconfig)")?;
                let client = kube::Client::try_from(config.clone()).context("a client of the Karmada control plane")?;
                let notify2 = notify.clone();
                let karmada_clusters = reflect(Api::<karmada::Cluster>::all(client.clone()), move |_| notify());
                // Only the credentials namespace: a watch of every Secret
                // of the control plane read far beyond what fedns uses.
                let karmada_secrets = reflect_slim(
                    Api::<Secret>::namespaced(client.clone(), &args.sources.karmada_secret_namespace),
                    slim_engine_secret,
                    move |_| notify2(),
                );
                sources.karmada = Some(KarmadaInputs {
                    clusters: karmada_clusters.store,
                    secrets: karmada_secrets.store,
                    config,
                    recorder: Recorder::new(client, reporter(identity)),
                });
            }
            MemberSource::Kubefed => {
                let notify2 = notify.clone();
                let namespace = &args.sources.kubefed_namespace;
                let kubefed_clusters = reflect(
                    Api::<kubefed::KubeFedCluster>::namespaced(host.clone(), namespace),
                    move |_| notify(),
                );
                let kubefed_secrets = reflect_slim(
                    Api::<Secret>::namespaced(host.clone(), namespace),
                    slim_engine_secret,
                    move |_| notify2(),
                );
                sources.kubefed = Some(KubefedInputs {
                    clusters: kubefed_clusters.store,
                    secrets: kubefed_secrets.store,
                    recorder: Recorder::new(host.clone(), reporter(identity)),
                });
            }
            MemberSource::Clusternet | MemberSource::Capi | MemberSource::Argocd | MemberSource::Clusterprofile => {
                super::inventories::start(*source, args, identity, &mut sources, notify).await?;
            }
        }
    }
    Ok(sources)
}

/// Of an engine's Secrets only the credentials fedns reads are kept (the
/// namespace may hold many other Secrets).
fn slim_engine_secret(secret: &mut Secret) {
    secret.metadata.labels = None;
    keep_secret_keys(secret, &["token", "caBundle"]);
}
