//! `fedns controller`: member registry and health, record reconcilers,
//! DNSEndpoint builder, leader election, and (by default) the embedded
//! DNS server, all in one process.

use std::sync::Arc;
use std::time::Duration;

use crate::events::Recorder;
use anyhow::Context;
use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, ServiceDNSRecord};
use fedns_dnsserver::{AnswerConfig, DnsMetrics, DnsServer, ServerConfig, ZoneStore};
use fedns_providers::coredns_etcd::{CorednsEtcd, EtcdConfig, EtcdTls};
use fedns_providers::embedded::EmbeddedSink;
use fedns_providers::google_clouddns::{CloudDnsConfig, GoogleCloudDns};
use fedns_providers::provider::ProviderMetrics;
use fedns_providers::route53::{Route53, Route53Config};
use fedns_providers::source::kube_source::{self, SharedEndpoints, Sinks, SourceConfig, SourceState};
use fedns_providers::webhook::{Webhook, WebhookConfig};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::events::Reporter;
use kube::runtime::reflector;
use kube::ResourceExt;
use prometheus_client::registry::Registry as MetricsRegistry;
use tokio::sync::{watch, Notify};

use crate::cli::{ControllerArgs, Provider};
use crate::http::{self, HttpState};
use crate::members::{MemberSource, Registry};
use crate::metrics::ControllerMetrics;
use crate::queue::{Queue, RecordKey};
use crate::records::resolver::HostnameResolver;
use crate::records::{self, RecordContext};

mod auto_records;
mod host_caches;
mod inventories;
mod member_sources;

use auto_records::auto_records;
use host_caches::{reflect, reflect_records, reflect_spec_changes};
use member_sources::member_sources;

/// Runs until SIGTERM/Ctrl-C, then releases the lease and stops.
///
/// # Errors
/// The host cluster cannot be reached at start, or an address cannot be bound.
pub async fn run(args: &ControllerArgs) -> anyhow::Result<()> {
    run_until(args, http::shutdown_signal()).await
}

/// Runs until `shutdown` resolves (used by `fedns sandbox`).
///
/// # Errors
/// As [`run`].
pub async fn run_until(args: &ControllerArgs, shutdown: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    let host = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let namespace = args.namespace.clone();
    let mut metrics_registry = MetricsRegistry::default();
    let metrics = Arc::new(ControllerMetrics::new(&mut metrics_registry));
    let provider_metrics = ProviderMetrics::new(&mut metrics_registry);
    let probe_metrics = crate::dataplane::ProbeMetrics::new(&mut metrics_registry);
    let vantage_metrics = crate::dataplane::agent_reports::VantageMetrics::new(&mut metrics_registry);
    let dns_metrics = DnsMetrics::new();
    let zones = ZoneStore::new();
    if let Some(path) = &args.geoip_db {
        match zones.load_geoip(path) {
            Ok(()) => tracing::info!(path = %path.display(), "GeoIP database loaded"),
            Err(e) => tracing::error!("{e}; Nearest records place clients by spec.clientRegions only"),
        }
    }
    dns_metrics.watch_store(zones.clone());
    metrics_registry.register_collector(Box::new(dns_metrics.clone()));
    let state = HttpState::new(metrics_registry);
    let debug = http::debug_listener(args.debug_addr, args.metrics_addr);
    http::serve_with(args.metrics_addr, state.clone(), debug.is_none())
        .await
        .with_context(|| format!("binding the HTTP endpoint {}", args.metrics_addr))?;
    if let Some(addr) = debug {
        http::serve_debug(addr, state.clone())
            .await
            .with_context(|| format!("binding the debug endpoint {addr} (--debug-addr)"))?;
    }

    // Leader election: only the leader writes; every replica serves DNS.
    let identity = std::env::var("POD_NAME").unwrap_or_else(|_| format!("fedns-{}", std::process::id()));
    let (leader_tx, leader) = watch::channel(!args.leader_elect);
    // Kept to the end: the shutdown steps leadership down before handing
    // the Lease back, and a dropped sender would end every `changed()`
    // loop (the periodic resync's among them).
    let leader_tx = Arc::new(leader_tx);
    let lease = if args.leader_elect {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(host.clone(), "fedns-controller")
            .with_namespace(&namespace)
            .with_identity(&identity)
            .with_duration(15)
            .with_grace(5)
            .build()
            .await
            .context("setting up leader election (Lease fedns-controller)")?;
        let manager = Arc::new(manager);
        let campaign = {
            let manager = manager.clone();
            let leader_tx = leader_tx.clone();
            tokio::spawn(async move {
                loop {
                    match manager.changed().await {
                        Ok(is_leader) => {
                            set_leader(&leader_tx, is_leader);
                        }
                        Err(e) => {
                            // Lost contact: stop writing until the lease is confirmed again.
                            set_leader(&leader_tx, false);
                            tracing::warn!(error = %e, "leader election: cannot reach the Lease; retrying");
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            })
        };
        Some((manager, campaign))
    } else {
        None // always leader
    };

    let queue = Queue::default();
    let recorder = Recorder::new(
        host.clone(),
        Reporter {
            controller: "fedns-controller".into(),
            instance: Some(identity.clone()),
        },
    );
    let registry = Registry::new(
        host.clone(),
        namespace.clone(),
        queue.clone(),
        leader.clone(),
        recorder.clone(),
        metrics.clone(),
    );

    // Host caches.
    let members_changed = Arc::new(Notify::new());
    let clusters = reflect(Api::<MemberCluster>::namespaced(host.clone(), &namespace), {
        let changed = members_changed.clone();
        move |_: &MemberCluster| changed.notify_one()
    });
    let secrets = reflect(Api::<Secret>::namespaced(host.clone(), &namespace), {
        let changed = members_changed.clone();
        move |_: &Secret| changed.notify_one()
    });
    // Wakes the auto-records loop (when on) on record and Domain changes.
    let auto_changed = Arc::new(Notify::new());
    let published = Arc::new(records::PublishedShards::default());
    let services = reflect_records(Api::<ServiceDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |r: &ServiceDNSRecord| {
            queue.push(RecordKey::Service(r.namespace().unwrap_or_default(), r.name_any()));
            auto.notify_one();
        }
    });
    let ingresses = reflect_records(Api::<IngressDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |r: &IngressDNSRecord| {
            queue.push(RecordKey::Ingress(r.namespace().unwrap_or_default(), r.name_any()));
            auto.notify_one();
        }
    });
    let routes = reflect_records(Api::<RouteDNSRecord>::all(host.clone()), published.clone(), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |r: &RouteDNSRecord| {
            queue.push(RecordKey::Route(r.namespace().unwrap_or_default(), r.name_any()));
            auto.notify_one();
        }
    });
    // Every record reads its Domain's spec, none its status, which the
    // publisher rewrites after every publish (the serial): only spec
    // changes requeue every record.
    let domains = reflect_spec_changes(Api::<Domain>::namespaced(host.clone(), &namespace), {
        let queue = queue.clone();
        let auto = auto_changed.clone();
        move |_: Option<&Domain>| {
            queue.push_all();
            auto.notify_one();
        }
    });
    // Shared with the publisher (one cache of every DNSEndpoint, not two).
    let publisher_changed = Arc::new(Notify::new());
    let endpoints = reflect_spec_changes(Api::<DNSEndpoint>::all(host.clone()), {
        // A DNSEndpoint edited or deleted by hand is put back by its record
        // (the publisher's status writes are no edit). One gone while the
        // watch was down is put back by the periodic pass.
        let queue = queue.clone();
        let publisher_changed = publisher_changed.clone();
        move |e: Option<&DNSEndpoint>| {
            publisher_changed.notify_one();
            let Some(e) = e else { return };
            let ns = e.namespace().unwrap_or_default();
            for owner in e.owner_references() {
                match owner.kind.as_str() {
                    "ServiceDNSRecord" => queue.push(RecordKey::Service(ns.clone(), owner.name.clone())),
                    "IngressDNSRecord" => queue.push(RecordKey::Ingress(ns.clone(), owner.name.clone())),
                    "RouteDNSRecord" => queue.push(RecordKey::Route(ns.clone(), owner.name.clone())),
                    _ => {}
                }
            }
        }
    });
    clusters.wait().await;
    secrets.wait().await;
    services.wait().await;
    ingresses.wait().await;
    routes.wait().await;
    domains.wait().await;
    endpoints.wait().await;
    tracing::info!("host cluster caches ready");
    if args.sources.auto_records {
        registry.watch_service_exports(auto_changed.clone());
    }
    let sources = member_sources(
        args,
        &host,
        &identity,
        &clusters.store,
        &secrets.store,
        &members_changed,
    )
    .await?;
    tokio::spawn(registry.clone().run(sources, members_changed));

    let (resolver_tx, mut resolver_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let resolver = HostnameResolver::new(args.resolver, resolver_tx).context("setting up the hostname resolver")?;
    {
        let queue = queue.clone();
        tokio::spawn(async move {
            while let Some(id) = resolver_rx.recv().await {
                if let Some(key) = RecordKey::from_id(&id) {
                    queue.push(key);
                }
            }
        });
    }
    // Data-plane probes: an address changing state requeues its records.
    let dataplane = {
        let queue = queue.clone();
        let tls = crate::dataplane::ProbeTls::new(&[]).map_err(|e| anyhow::anyhow!("probe TLS: {e}"))?;
        crate::dataplane::DataPlane::start(tls, usize::from(args.probe_concurrency), probe_metrics, move |key| {
            queue.push(key)
        })
        .map_err(|e| anyhow::anyhow!("starting the data-plane prober: {e}"))?
    };
    if let Some(vantage_namespace) = &args.vantage_namespace {
        tracing::info!(namespace = %vantage_namespace, "vantage points: agents in the members probe too");
        tokio::spawn(crate::dataplane::agent_reports::run(
            dataplane.clone(),
            registry.clone(),
            vantage_namespace.clone(),
            vantage_metrics,
        ));
    }
    if args.sources.auto_records {
        let auto = auto_records(
            args,
            &host,
            &registry,
            &identity,
            &services.store,
            &ingresses.store,
            &routes.store,
            &domains.store,
            &leader,
            &auto_changed,
        )
        .await?;
        tokio::spawn(auto.run(auto_changed.clone(), Duration::from_secs(args.resync_interval.max(1))));
    }
    let ctx = Arc::new(RecordContext {
        host: host.clone(),
        namespace: namespace.clone(),
        registry,
        services: services.store,
        ingresses: ingresses.store,
        routes: routes.store,
        domains: domains.store,
        endpoints: endpoints.store.clone(),
        // MemberClusters count only when they are a member source.
        clusters: if args.sources.member_source.contains(&MemberSource::Fedns) {
            clusters.store
        } else {
            reflector::store::<MemberCluster>().0
        },
        resolver,
        leader: leader.clone(),
        metrics,
        recorder,
        dataplane: Some(dataplane),
        failing_open: Default::default(),
        last_shards: Default::default(),
        published,
        reported: Default::default(),
        max_object_bytes: args.max_object_bytes,
        too_large: Default::default(),
    });
    {
        // /debug/explain: the command's view plus the member caches.
        let ctx = ctx.clone();
        let _ = state.explain.set(Arc::new(move |name: &str, json: bool| {
            fn owned<T: Clone>(items: Vec<Arc<T>>) -> Vec<T> {
                items.into_iter().map(|i| (*i).clone()).collect()
            }
            // Only the DNSEndpoints naming `name` and the records owning
            // them (a copy of every object was hundreds of MiB at
            // 1,000,000 shards), with their `status.dns` put back.
            let wanted = name.trim_end_matches('.');
            let endpoints: Vec<DNSEndpoint> = ctx
                .endpoints
                .state()
                .into_iter()
                .filter(|e| {
                    e.spec
                        .endpoints
                        .iter()
                        .any(|ep| ep.dns_name.trim_end_matches('.').eq_ignore_ascii_case(wanted))
                })
                .map(|e| (*e).clone())
                .collect();
            let mut services = Vec::new();
            let mut ingresses = Vec::new();
            let mut routes = Vec::new();
            for endpoint in &endpoints {
                let namespace = endpoint.namespace().unwrap_or_default();
                for owner in endpoint.owner_references() {
                    match owner.kind.as_str() {
                        "ServiceDNSRecord" => services.extend(
                            ctx.services
                                .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                                .map(|r| {
                                    let mut r = (*r).clone();
                                    ctx.published.restore(&mut r);
                                    r
                                }),
                        ),
                        "IngressDNSRecord" => ingresses.extend(
                            ctx.ingresses
                                .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                                .map(|r| {
                                    let mut r = (*r).clone();
                                    ctx.published.restore(&mut r);
                                    r
                                }),
                        ),
                        "RouteDNSRecord" => routes.extend(
                            ctx.routes
                                .get(&reflector::ObjectRef::new(&owner.name).within(&namespace))
                                .map(|r| {
                                    let mut r = (*r).clone();
                                    ctx.published.restore(&mut r);
                                    r
                                }),
                        ),
                        _ => {}
                    }
                }
            }
            let mut members = owned(ctx.clusters.state());
            members.extend(ctx.registry.engine_members());
            let registry = ctx.registry.clone();
            let policies: Vec<_> = ingresses
                .iter()
                .map(|r| (r.namespace().unwrap_or_default(), r.name_any(), r.spec.backends))
                .collect();
            let backends_of = move |namespace: &str, name: &str| {
                policies
                    .iter()
                    .find(|(ns, n, _)| ns == namespace && n == name)
                    .and_then(|(_, _, policy)| *policy)
            };
            let route_specs: Vec<_> = routes
                .iter()
                .map(|r| (r.namespace().unwrap_or_default(), r.name_any(), r.spec.clone()))
                .collect();
            let facts = move |cluster: &str, namespace: &str, name: &str, followed: records::explain::Followed| {
                let member = registry.members().into_iter().find(|m| m.name == cluster)?;
                if let records::explain::Followed::Route(kind) = followed {
                    let spec = route_specs
                        .iter()
                        .find(|(ns, n, _)| ns == namespace && n == name)
                        .map(|(_, _, spec)| spec)?;
                    let exists = member.gateway_api.routes(kind).get(namespace, name).is_some();
                    return Some(records::explain::MemberFacts {
                        exists,
                        has_load_balancer: true,
                        ready_endpoints: None,
                        backends_problem: None,
                        endpoints: None,
                        route_problem: records::route_problem(&member, spec, namespace, name),
                    });
                }
                Some(if followed == records::explain::Followed::Service {
                    let found = member.services.get(namespace, name);
                    records::explain::MemberFacts {
                        exists: found.is_some(),
                        has_load_balancer: found.is_some_and(|s| s.load_balancer.has_ingress()),
                        ready_endpoints: Some(member.has_ready_endpoints(namespace, name)),
                        backends_problem: None,
                        endpoints: Some(member.endpoint_counts(namespace, name)),
                        route_problem: None,
                    }
                } else {
                    let found = member.ingresses.get(namespace, name);
                    let policy = backends_of(namespace, name);
                    records::explain::MemberFacts {
                        exists: found.is_some(),
                        has_load_balancer: found.as_ref().is_some_and(|i| i.load_balancer.has_ingress()),
                        ready_endpoints: None,
                        backends_problem: found.as_ref().zip(policy).and_then(|(ingress, policy)| {
                            records::backends::BackendFacts::of(&member, namespace, ingress)
                                .verdict(policy, namespace)
                                .err()
                        }),
                        endpoints: found
                            .as_ref()
                            .map(|ingress| records::backends::controller_endpoints(&member, ingress)),
                        route_problem: None,
                    }
                })
            };
            let explanation =
                records::explain::explain(name, &endpoints, &services, &ingresses, &routes, &members, &facts);
            if json {
                serde_json::to_string_pretty(&explanation).unwrap_or_default()
            } else {
                records::explain::render(&explanation)
            }
        }));
    }
    tokio::spawn(records::run_workers(ctx, queue.clone(), args.workers));
    {
        // Periodic full resync, and a full pass whenever leadership is won.
        let queue = queue.clone();
        let mut leader = leader.clone();
        let interval = Duration::from_secs(args.resync_interval.max(1));
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            loop {
                tokio::select! {
                    _ = ticker.tick() => queue.push_all(),
                    changed = leader.changed() => {
                        if changed.is_err() { return; }
                        if *leader.borrow() {
                            tracing::info!("became the leader");
                            queue.push_all();
                        } else {
                            tracing::warn!("lost leadership; not writing until it is won back");
                        }
                    }
                }
            }
        });
    }

    // The publishing pipeline and its sinks, in this process.
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
    let (tx, mut rx) = watch::channel(SourceState::default());
    let source_config = SourceConfig {
        domain_namespace: Some(namespace.clone()),
        resync_interval: Duration::from_secs(args.resync_interval.max(1)),
        serial_activation_delay: Duration::from_millis(args.serial_activation_delay),
        leader: Some(leader.clone()),
        domain_finalizer: true,
        endpoints: Some(SharedEndpoints {
            store: endpoints.store.clone(),
            changed: publisher_changed,
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
    tracing::info!(namespace = %namespace, leader_elect = args.leader_elect, "controller running");

    shutdown.await;
    tracing::info!("shutting down");
    if let Some((manager, campaign)) = lease {
        // Stop renewing and stop writing, then hand the lease back so
        // another replica takes over at once instead of after the lease
        // duration, while this one still answers DNS through the drain.
        campaign.abort();
        set_leader(&leader_tx, false);
        match tokio::time::timeout(Duration::from_secs(5), manager.release()).await {
            Ok(Ok(())) => tracing::info!("lease released"),
            Ok(Err(e)) => tracing::warn!(error = %e, "lease not released"),
            Err(_) => tracing::warn!("lease not released within 5 s"),
        }
    }
    if server.is_some() {
        http::drain(&state, Duration::from_secs(args.shutdown_drain)).await;
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}

/// Publishes leadership, waking watchers only when it actually changes.
fn set_leader(leader: &watch::Sender<bool>, is_leader: bool) {
    leader.send_if_modified(|current| std::mem::replace(current, is_leader) != is_leader);
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
