//! Publishing, in this process: the pipeline that turns DNSEndpoints into
//! records at the sinks (`--provider`), and the embedded DNS server that
//! answers from the embedded sink's zones.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use fedns_dnsserver::{AnswerConfig, DnsMetrics, DnsServer, ServerConfig, ZoneStore};
use fedns_providers::coredns_etcd::{CorednsEtcd, EtcdConfig, EtcdTls};
use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::google_clouddns::{CloudDnsConfig, GoogleCloudDns};
use fedns_providers::provider::ProviderMetrics;
use fedns_providers::route53::{Route53, Route53Config};
use fedns_providers::source::kube_source::{self, SharedEndpoints, Sinks, SourceConfig, SourceState};
use fedns_providers::webhook::{Webhook, WebhookConfig};
use tokio::sync::watch;

use super::host_objects::HostObjects;
use super::leadership::Leadership;
use crate::cli::{ControllerArgs, Provider};
use crate::http::HttpState;

/// The publishing pipeline's sinks: the embedded zones and the providers
/// of `--provider`.
///
/// # Errors
/// A provider's settings do not go together.
pub(super) fn sinks(
    args: &ControllerArgs,
    zones: &Arc<ZoneStore>,
    provider_metrics: &ProviderMetrics,
) -> anyhow::Result<Sinks> {
    let mut sinks = Sinks::default();
    if args.provider.contains(&Provider::Embedded) {
        sinks.embedded = Some(EmbeddedSink::new(zones.clone()));
    }
    if args.provider.contains(&Provider::CorednsEtcd) {
        let tls = if args.etcd.ca_file.is_some() || args.etcd.cert_file.is_some() {
            let identity = match (&args.etcd.cert_file, &args.etcd.key_file) {
                (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
                (None, None) => None,
                _ => anyhow::bail!("--etcd-cert-file and --etcd-key-file go together"),
            };
            Some(EtcdTls {
                ca_file: args.etcd.ca_file.clone(),
                identity,
            })
        } else {
            None
        };
        sinks.providers.push(Arc::new(CorednsEtcd::new(
            EtcdConfig {
                endpoints: args.etcd.endpoints.clone(),
                prefix: args.etcd.prefix.clone(),
                owner_id: args.owner_id.clone(),
                tls,
                credentials: args.etcd.username.clone().zip(args.etcd.password.clone()),
                ..EtcdConfig::default()
            },
            provider_metrics.clone(),
        )));
    }
    if args.provider.contains(&Provider::Route53) {
        let route53 = &args.route53;
        sinks.providers.push(Arc::new(Route53::new(
            Route53Config {
                owner_id: args.owner_id.clone(),
                txt_wildcard_replacement: args.txt_wildcard_replacement.clone().unwrap_or_default(),
                zone_ids: route53.zone_ids.clone(),
                endpoint: route53.endpoint.clone(),
                region: route53.region.clone(),
                requests_per_second: route53.requests_per_second,
                max_attempts: route53.max_attempts,
                ..Route53Config::default()
            },
            provider_metrics.clone(),
        )));
    }
    if args.provider.contains(&Provider::GoogleClouddns) {
        sinks.providers.push(Arc::new(GoogleCloudDns::new(
            clouddns_config(args),
            provider_metrics.clone(),
        )));
    }
    if args.provider.contains(&Provider::Webhook) {
        let webhook = &args.webhook;
        sinks.providers.push(Arc::new(Webhook::new(
            WebhookConfig {
                urls: webhook.urls.clone(),
                owner_id: args.owner_id.clone(),
                txt_wildcard_replacement: args.txt_wildcard_replacement.clone().unwrap_or_default(),
                timeout: Duration::from_secs(webhook.timeout.max(1)),
                negotiate: fedns_providers::webhook::api::Retry {
                    attempts: webhook.negotiate_attempts.max(1),
                    initial: Duration::from_millis(500),
                },
                max_body: webhook.max_body.max(1),
                max_endpoints_per_request: webhook.max_endpoints_per_request.max(1),
            },
            provider_metrics.clone(),
        )));
    }
    Ok(sinks)
}

/// Starts the publishing pipeline over the DNSEndpoints cache; the
/// endpoints report ready after its first publish. Returns whether the
/// embedded DNS server is to serve (an embedded sink is among `sinks`).
pub(super) fn publish(
    args: &ControllerArgs,
    host: &kube::Client,
    leadership: &Leadership,
    caches: &HostObjects,
    sinks: Sinks,
    state: &Arc<HttpState>,
) -> bool {
    let (tx, mut rx) = watch::channel(SourceState::default());
    let source_config = SourceConfig {
        domain_namespace: Some(args.namespace.clone()),
        resync_interval: Duration::from_secs(args.resync_interval.max(1)),
        serial_activation_delay: Duration::from_millis(args.serial_activation_delay),
        leader: Some(leadership.leader.clone()),
        domain_finalizer: true,
        endpoints: Some(SharedEndpoints {
            store: caches.endpoints.store.clone(),
            changed: caches.publisher_changed.clone(),
            pending: Some(caches.pending.clone()),
        }),
        ..SourceConfig::default()
    };
    let serve_dns = sinks.embedded.is_some();
    tokio::spawn(kube_source::run(host.clone(), source_config, sinks, tx));
    {
        let state = state.clone();
        tokio::spawn(async move {
            if rx.wait_for(|s| s.publishes > 0).await.is_ok() {
                state.set_ready(true);
            }
        });
    }
    serve_dns
}

/// The embedded DNS server's listeners, when it serves.
///
/// # Errors
/// A listener cannot be bound.
pub(super) async fn dns_server(
    args: &ControllerArgs,
    serve_dns: bool,
    zones: Arc<ZoneStore>,
    dns_metrics: Arc<DnsMetrics>,
) -> anyhow::Result<Option<DnsServer>> {
    let mut server = None;
    if serve_dns {
        let config = ServerConfig {
            listen: args.dns_listen.clone(),
            udp_workers: args.udp_workers.unwrap_or(ServerConfig::default().udp_workers),
            answer: AnswerConfig::default(),
            rrl: args.rrl.config(),
            ..ServerConfig::default()
        };
        server = Some(
            DnsServer::start(config, zones, dns_metrics)
                .await
                .context("starting the DNS listeners")?,
        );
    }
    Ok(server)
}

/// The google-clouddns provider's settings from the command line.
fn clouddns_config(args: &ControllerArgs) -> CloudDnsConfig {
    let google = &args.google;
    let defaults = CloudDnsConfig::default();
    let size = google.batch_change_size.max(1);
    CloudDnsConfig {
        owner_id: args.owner_id.clone(),
        txt_wildcard_replacement: args.txt_wildcard_replacement.clone().unwrap_or_default(),
        project: google.project.clone(),
        zones: google.zones.clone(),
        visibility: google.zone_visibility.map(|v| match v {
            crate::cli::ZoneVisibility::Public => "public".to_owned(),
            crate::cli::ZoneVisibility::Private => "private".to_owned(),
        }),
        endpoint: google.endpoint.clone(),
        access_token: google.access_token.clone(),
        requests_per_second: google.requests_per_second,
        max_attempts: google.max_attempts,
        limits: fedns_providers::google_clouddns::batch::ChangeLimits {
            max_additions: size.min(defaults.limits.max_additions),
            max_deletions: size.min(defaults.limits.max_deletions),
            ..defaults.limits
        },
        ..defaults
    }
}
