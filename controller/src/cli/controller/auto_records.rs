//! The `--auto-records` inputs of `fedns controller`: caches of the
//! templates (Services, Ingresses, Gateway API routes, kubefed's
//! FederatedServices and federated routes) in the host and in the engines'
//! control planes, slimmed to what the templates say.

use std::sync::Arc;

use crate::events::Recorder;
use anyhow::Context;
use fedns_api::{Domain, IngressDNSRecord, RouteDNSRecord, ServiceDNSRecord};
use kube::api::Api;
use kube::runtime::reflector::Store;
use kube::Resource;
use tokio::sync::{watch, Notify};

use super::host_caches::{reflect_dynamic, reflect_slim, reporter};
use crate::cli::ControllerArgs;
use crate::members::gateway::{spawn_route_templates, GatewayApi};
use crate::members::{MemberSource, Registry};
use crate::records::auto::{AutoRecords, TemplateSource};

/// The `--auto-records` loop: templates in the host (Services, Ingresses,
/// and FederatedServices when kubefed is a member source) and in the
/// Karmada control plane when it is another API server.
#[allow(clippy::too_many_arguments)]
pub(super) async fn auto_records(
    args: &ControllerArgs,
    host: &kube::Client,
    registry: &Arc<Registry>,
    identity: &str,
    services: &Store<ServiceDNSRecord>,
    ingresses: &Store<IngressDNSRecord>,
    routes: &Store<RouteDNSRecord>,
    domains: &Store<Domain>,
    leader: &watch::Receiver<bool>,
    changed: &Arc<Notify>,
) -> anyhow::Result<AutoRecords> {
    let source = |client: &kube::Client, label: &str, in_host: bool, federated: bool| {
        let wake = |changed: &Arc<Notify>| {
            let changed = changed.clone();
            move || changed.notify_one()
        };
        let (w1, w2, w3) = (wake(changed), wake(changed), wake(changed));
        let federated_services = federated.then(|| {
            let resource = kube::discovery::ApiResource {
                group: "types.kubefed.io".into(),
                version: "v1beta1".into(),
                api_version: "types.kubefed.io/v1beta1".into(),
                kind: "FederatedService".into(),
                plural: "federatedservices".into(),
            };
            reflect_dynamic(client, &resource, w3)
        });
        // Route templates: a cluster without the Gateway API CRDs (or
        // kubefed's federated route types) has none, and says so once.
        let route_caches = |kubefed: bool| {
            let caches: Arc<GatewayApi> = Arc::default();
            let changed = changed.clone();
            spawn_route_templates(label, client, &caches, kubefed, move || changed.notify_one());
            caches
        };
        TemplateSource {
            routes: route_caches(false),
            federated_routes: federated.then(|| route_caches(true)),
            services: reflect_slim(
                Api::<k8s_openapi::api::core::v1::Service>::all(client.clone()),
                slim_template,
                move |_| w1(),
            )
            .store,
            ingresses: reflect_slim(
                Api::<k8s_openapi::api::networking::v1::Ingress>::all(client.clone()),
                slim_template,
                move |_| w2(),
            )
            .store,
            federated_services,
            in_host,
            recorder: Recorder::new(client.clone(), reporter(identity)),
        }
    };
    let mut sources = vec![source(
        host,
        "host",
        true,
        args.sources.member_source.contains(&MemberSource::Kubefed),
    )];
    if args.sources.member_source.contains(&MemberSource::Karmada) {
        if let Some(path) = &args.sources.karmada_kubeconfig {
            let karmada = crate::kube_client::client(Some(path))
                .await
                .context("the Karmada control plane (--karmada-kubeconfig)")?;
            sources.push(source(&karmada, "karmada", false, false));
        }
    }
    // Clusternet's templates (the Services its Subscriptions feed) are in the parent.
    if args.sources.member_source.contains(&MemberSource::Clusternet) {
        if let Some(path) = &args.sources.inventories.clusternet_kubeconfig {
            let parent = crate::kube_client::client(Some(path))
                .await
                .context("Clusternet's parent cluster (--clusternet-kubeconfig)")?;
            sources.push(source(&parent, "clusternet-parent", false, false));
        }
    }
    Ok(AutoRecords {
        host: host.clone(),
        registry: Some(registry.clone()),
        sources,
        services: services.clone(),
        ingresses: ingresses.clone(),
        routes: routes.clone(),
        domains: domains.clone(),
        default_domain: args.sources.auto_records_domain.clone(),
        leader: leader.clone(),
    })
}

/// Of a template only its identity, its fedns annotations and (for an
/// Ingress) its rules are kept.
fn slim_template<K: Resource + HasRules>(object: &mut K) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    meta.labels = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.retain(|k, _| k.starts_with("multiclusterdns.fedns.io/"));
    }
    object.slim_rest();
}

/// What of a template's body is kept.
trait HasRules {
    fn slim_rest(&mut self);
}

impl HasRules for k8s_openapi::api::core::v1::Service {
    fn slim_rest(&mut self) {
        self.spec = None;
        self.status = None;
    }
}

impl HasRules for k8s_openapi::api::networking::v1::Ingress {
    fn slim_rest(&mut self) {
        self.status = None;
        if let Some(spec) = self.spec.as_mut() {
            spec.default_backend = None;
            spec.tls = None;
            for rule in spec.rules.iter_mut().flatten() {
                rule.http = None;
            }
        }
    }
}
