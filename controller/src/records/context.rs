//! The ServiceDNSRecord and IngressDNSRecord reconcilers: healthy shards
//! into `status.dns`, then the DNSEndpoint built from them. Only what
//! changed is written (compare before patch).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fedns_api::conditions;
use fedns_api::names;
use fedns_api::{
    ClusterDNS, DNSEndpoint, DNSEndpointSpec, Domain, IngressClusterDNS, IngressDNSRecord, MemberCluster,
    ServiceDNSRecord,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::LoadBalancerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use super::builder::{self, BuildProblem, ServiceNames, Topology};
use super::queue::{Queue, RecordKey, Work};
use super::resolver::HostnameResolver;
use crate::members::{Member, Registry};
use crate::metrics::ControllerMetrics;

/// Field manager of the controller's server-side applies.
pub const FIELD_MANAGER: &str = "fedns-controller";
/// Condition saying whether every input value was usable.
pub const INPUT_VALID: &str = "InputValid";

/// Everything the reconcilers read and write.
pub struct RecordContext {
    /// Host cluster client.
    pub host: Client,
    /// Controller namespace (Domains, MemberClusters).
    pub namespace: String,
    /// Member clusters.
    pub registry: Arc<Registry>,
    /// ServiceDNSRecords.
    pub services: Store<ServiceDNSRecord>,
    /// IngressDNSRecords.
    pub ingresses: Store<IngressDNSRecord>,
    /// Domains.
    pub domains: Store<Domain>,
    /// DNSEndpoints (to compare before writing).
    pub endpoints: Store<DNSEndpoint>,
    /// MemberClusters (for the federation's topology).
    pub clusters: Store<MemberCluster>,
    /// Load balancer host names.
    pub resolver: HostnameResolver,
    /// Whether this replica leads (only the leader writes).
    pub leader: watch::Receiver<bool>,
    /// Metrics.
    pub metrics: Arc<ControllerMetrics>,
    /// Events.
    pub recorder: Recorder,
    /// Problems last reported per record, so Events are sent on change.
    pub reported: Mutex<BTreeMap<String, Vec<String>>>,
}

impl std::fmt::Debug for RecordContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordContext").finish_non_exhaustive()
    }
}

/// Takes work from `queue` and reconciles with up to `workers` at once,
/// until the process ends. Failed reconciles are retried after a second.
pub async fn run_workers(ctx: Arc<RecordContext>, queue: Queue, workers: usize) {
    loop {
        let mut keys: BTreeMap<RecordKey, Instant> = BTreeMap::new();
        for work in queue.take().await {
            match work {
                Work::Record(key, since) => {
                    let entry = keys.entry(key).or_insert(since);
                    *entry = (*entry).min(since);
                }
                Work::All(since) => {
                    for record in ctx.services.state() {
                        let key = RecordKey::Service(record.namespace().unwrap_or_default(), record.name_any());
                        keys.entry(key).or_insert(since);
                    }
                    for record in ctx.ingresses.state() {
                        let key = RecordKey::Ingress(record.namespace().unwrap_or_default(), record.name_any());
                        keys.entry(key).or_insert(since);
                    }
                }
            }
        }
        futures::stream::iter(keys)
            .for_each_concurrent(workers.max(1), |(key, since)| {
                let ctx = ctx.clone();
                let queue = queue.clone();
                async move {
                    let result = match &key {
                        RecordKey::Service(ns, name) => reconcile_service(&ctx, ns, name, since).await,
                        RecordKey::Ingress(ns, name) => reconcile_ingress(&ctx, ns, name, since).await,
                    };
                    let kind = match key {
                        RecordKey::Service(..) => "ServiceDNSRecord",
                        RecordKey::Ingress(..) => "IngressDNSRecord",
                    };
                    ctx.metrics.reconciled(kind, result.is_ok());
                    if let Err(e) = result {
                        tracing::warn!(record = %key.id(), error = %e, "reconcile failed; retrying in 1 s");
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            queue.push(key);
                        });
                    }
                }
            })
            .await;
    }
}

impl RecordContext {
    fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// region → zones of every member, healthy or not.
    fn topology(&self) -> Topology {
        let running: BTreeMap<String, Arc<Member>> = self
            .registry
            .members()
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        let mut topology = Topology::new();
        for cluster in self.clusters.state() {
            let (region, zones) = match running.get(&cluster.name_any()) {
                Some(member) => member.topology(),
                None => {
                    let status = cluster.status.clone().unwrap_or_default();
                    let region = cluster.spec.region.clone().or(status.region);
                    let zones = if cluster.spec.zones.is_empty() {
                        status.zones
                    } else {
                        cluster.spec.zones.clone()
                    };
                    (region, zones)
                }
            };
            let Some(region) = region.filter(|r| names::validate_label(r).is_ok()) else {
                continue;
            };
            let entry = topology.entry(region).or_default();
            entry.extend(zones.into_iter().filter(|z| names::validate_label(z).is_ok()));
        }
        topology
    }

    async fn report(&self, key: &str, object: &k8s_openapi::api::core::v1::ObjectReference, problems: &[BuildProblem]) {
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        let changed = {
            let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
            let changed = reported.get(key) != Some(&messages);
            reported.insert(key.to_owned(), messages.clone());
            changed
        };
        if !changed || messages.is_empty() || !self.is_leader() {
            return;
        }
        for message in &messages {
            tracing::warn!(record = %key, "{message}");
        }
        let event = Event {
            type_: EventType::Warning,
            reason: conditions::INVALID_INPUT.into(),
            note: Some(messages.join("; ").chars().take(1000).collect()),
            action: "BuildEndpoints".into(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }

    async fn write_endpoint(
        &self,
        namespace: &str,
        name: &str,
        owner: OwnerReference,
        endpoints: Vec<fedns_api::Endpoint>,
        since: Instant,
    ) -> Result<(), kube::Error> {
        let spec = DNSEndpointSpec { endpoints };
        let current = self.endpoints.get(&ObjectRef::new(name).within(namespace));
        let owned = current
            .as_ref()
            .is_some_and(|c| c.owner_references().iter().any(|o| o.uid == owner.uid));
        if current.as_ref().is_some_and(|c| c.spec == spec) && owned {
            return Ok(());
        }
        if !self.is_leader() {
            return Ok(());
        }
        let object = json!({
            "apiVersion": "multiclusterdns.fedns.io/v1alpha1",
            "kind": "DNSEndpoint",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "fedns"},
                "ownerReferences": [owner],
            },
            "spec": spec,
        });
        let api: Api<DNSEndpoint> = Api::namespaced(self.host.clone(), namespace);
        api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object))
            .await?;
        self.metrics.dnsendpoint_written(since.elapsed());
        tracing::debug!(dnsendpoint = %format!("{namespace}/{name}"), endpoints = spec.endpoints.len(), "DNSEndpoint written");
        Ok(())
    }

    async fn delete_endpoint_if_orphaned(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        let Some(current) = self.endpoints.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        let ours = current.labels().get("app.kubernetes.io/managed-by").map(String::as_str) == Some("fedns");
        if !ours || !self.is_leader() {
            return Ok(());
        }
        let api: Api<DNSEndpoint> = Api::namespaced(self.host.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The shards of healthy members: `fresh` for members whose caches are
/// synced, the previous shard for those still listing (so a restart or a
/// relist never drops a cluster from DNS).
fn healthy_shards<T: Clone>(
    registry: &Registry,
    previous: &[T],
    cluster_of: impl Fn(&T) -> &String,
    fresh: impl Fn(&Member) -> Option<T>,
) -> Vec<T> {
    let mut shards = Vec::new();
    for member in registry.members() {
        if !member.is_healthy() {
            continue;
        }
        if member.is_synced() {
            shards.extend(fresh(&member));
        } else if let Some(prev) = previous.iter().find(|p| *cluster_of(p) == member.name) {
            shards.push(prev.clone());
        }
    }
    shards
}

impl RecordContext {
    /// Registers the host names in `lbs` for record `key` (re-resolved
    /// every `ttl` seconds), drops those it no longer uses, and returns
    /// what is resolved now.
    fn resolve_lb_hostnames<'a>(
        &self,
        key: &str,
        lbs: impl Iterator<Item = &'a LoadBalancerStatus>,
        ttl: i64,
    ) -> super::resolver::Resolved {
        let ttl = Duration::from_secs(u64::try_from(ttl.max(1)).unwrap_or(30));
        let hostnames: BTreeSet<String> = lbs.flat_map(builder::lb_hostnames).collect();
        for host in &hostnames {
            self.resolver.want(host, ttl, key);
        }
        self.resolver.forget(key, &hostnames);
        self.resolver.snapshot()
    }
}

fn owner_of<K: Resource<DynamicType = ()>>(object: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: object.meta().name.clone().unwrap_or_default(),
        uid: object.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn has_lb_address(lb: &LoadBalancerStatus) -> bool {
    lb.ingress.as_ref().is_some_and(|i| {
        i.iter().any(|i| {
            i.ip.as_deref().is_some_and(|v| !v.is_empty()) || i.hostname.as_deref().is_some_and(|v| !v.is_empty())
        })
    })
}

/// A record's `Ready` (from how many healthy shards it has) and
/// `InputValid` (from the problems building its endpoints); returns
/// whether either changed.
fn set_record_conditions(
    conditions_list: &mut Vec<Condition>,
    healthy: usize,
    none_message: &str,
    problems: &[BuildProblem],
    generation: Option<i64>,
) -> bool {
    let changed = if healthy == 0 {
        conditions::set(
            conditions_list,
            conditions::READY,
            false,
            conditions::NO_HEALTHY_ENDPOINTS,
            none_message,
            generation,
        )
    } else {
        conditions::set(
            conditions_list,
            conditions::READY,
            true,
            "Published",
            &format!("{healthy} healthy cluster(s)"),
            generation,
        )
    };
    changed | set_input_condition(conditions_list, problems, generation)
}

fn set_input_condition(
    conditions_list: &mut Vec<Condition>,
    problems: &[BuildProblem],
    generation: Option<i64>,
) -> bool {
    if problems.is_empty() {
        conditions::set(
            conditions_list,
            INPUT_VALID,
            true,
            "AllInputsValid",
            "every load balancer value is usable",
            generation,
        )
    } else {
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        conditions::set(
            conditions_list,
            INPUT_VALID,
            false,
            conditions::INVALID_INPUT,
            &messages.join("; "),
            generation,
        )
    }
}

async fn patch_status<K>(api: Api<K>, name: &str, status: serde_json::Value) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
        .await
        .map(|_| ())
}

async fn reconcile_service(
    ctx: &RecordContext,
    namespace: &str,
    name: &str,
    since: Instant,
) -> Result<(), kube::Error> {
    let key = RecordKey::Service(namespace.into(), name.into()).id();
    let endpoint_name = format!("service-{name}");
    let Some(record) = ctx.services.get(&ObjectRef::new(name).within(namespace)) else {
        ctx.resolver.forget(&key, &BTreeSet::new());
        return ctx.delete_endpoint_if_orphaned(namespace, &endpoint_name).await;
    };
    if record.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let generation = record.metadata.generation;
    let old_status = record.status.clone().unwrap_or_default();
    let mut status = old_status.clone();
    let Some(domain) = ctx
        .domains
        .get(&ObjectRef::new(&record.spec.domain_ref).within(&ctx.namespace))
    else {
        let message = format!("Domain {}/{} not found", ctx.namespace, record.spec.domain_ref);
        let mut changed = conditions::set(
            &mut status.conditions,
            conditions::READY,
            false,
            conditions::DOMAIN_NOT_FOUND,
            &message,
            generation,
        );
        changed |= status.observed_generation != generation;
        status.observed_generation = generation;
        if changed && ctx.is_leader() {
            patch_status(
                Api::<ServiceDNSRecord>::namespaced(ctx.host.clone(), namespace),
                name,
                serde_json::to_value(&status).unwrap_or_default(),
            )
            .await?;
        }
        return Ok(());
    };
    let zone = names::normalize_hostname(&domain.spec.domain).unwrap_or_else(|_| domain.spec.domain.clone());

    let mut shards = healthy_shards(
        &ctx.registry,
        &old_status.dns,
        |d| &d.cluster,
        |member| {
            let service = member.services.get(&ObjectRef::new(name).within(namespace))?;
            let lb = service
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.clone())
                .unwrap_or_default();
            if !has_lb_address(&lb) {
                return None;
            }
            if !record.spec.allow_service_without_endpoints && !member.has_ready_endpoints(namespace, name) {
                return None;
            }
            let (region, zones) = member.topology();
            Some(ClusterDNS {
                cluster: member.name.clone(),
                region,
                zones,
                load_balancer: lb,
            })
        },
    );
    shards.sort_by(|a, b| a.cluster.cmp(&b.cluster));

    let resolved = ctx.resolve_lb_hostnames(&key, shards.iter().map(|s| &s.load_balancer), record.spec.record_ttl);
    let service_label = record.spec.external_name.clone().unwrap_or_else(|| name.to_owned());
    let names_in = ServiceNames {
        service: &service_label,
        namespace,
        federation: &domain.name_any(),
        zone: &zone,
        dns_prefix: record.spec.dns_prefix.as_deref(),
        ttl: record.spec.record_ttl,
    };
    let mut problems = Vec::new();
    let endpoints = builder::service_endpoints(&names_in, &shards, &ctx.topology(), &resolved, &mut problems);
    problems.sort();
    problems.dedup();

    let mut changed = set_record_conditions(
        &mut status.conditions,
        shards.len(),
        "no healthy member cluster has a load balancer address with ready endpoints",
        &problems,
        generation,
    );
    changed |= status.domain.as_deref() != Some(zone.as_str())
        || status.dns != shards
        || status.observed_generation != generation;
    status.domain = Some(zone);
    status.dns = shards;
    status.observed_generation = generation;

    ctx.report(&key, &record.object_ref(&()), &problems).await;
    ctx.write_endpoint(namespace, &endpoint_name, owner_of(record.as_ref()), endpoints, since)
        .await?;
    if changed && ctx.is_leader() {
        patch_status(
            Api::<ServiceDNSRecord>::namespaced(ctx.host.clone(), namespace),
            name,
            serde_json::to_value(&status).unwrap_or_default(),
        )
        .await?;
    }
    Ok(())
}

async fn reconcile_ingress(
    ctx: &RecordContext,
    namespace: &str,
    name: &str,
    since: Instant,
) -> Result<(), kube::Error> {
    let key = RecordKey::Ingress(namespace.into(), name.into()).id();
    let endpoint_name = format!("ingress-{name}");
    let Some(record) = ctx.ingresses.get(&ObjectRef::new(name).within(namespace)) else {
        ctx.resolver.forget(&key, &BTreeSet::new());
        return ctx.delete_endpoint_if_orphaned(namespace, &endpoint_name).await;
    };
    if record.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let generation = record.metadata.generation;
    let old_status = record.status.clone().unwrap_or_default();
    let mut status = old_status.clone();
    let mut shards = healthy_shards(
        &ctx.registry,
        &old_status.dns,
        |d| &d.cluster,
        |member| {
            let ingress = member.ingresses.get(&ObjectRef::new(name).within(namespace))?;
            // networking/v1 IngressLoadBalancerStatus, kept in core/v1's shape.
            let lb = ingress
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .map(|lb| LoadBalancerStatus {
                    ingress: lb.ingress.as_ref().map(|items| {
                        items
                            .iter()
                            .map(|i| k8s_openapi::api::core::v1::LoadBalancerIngress {
                                ip: i.ip.clone(),
                                hostname: i.hostname.clone(),
                                ..Default::default()
                            })
                            .collect()
                    }),
                })
                .unwrap_or_default();
            has_lb_address(&lb).then(|| IngressClusterDNS {
                cluster: member.name.clone(),
                load_balancer: lb,
            })
        },
    );
    shards.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    let resolved = ctx.resolve_lb_hostnames(&key, shards.iter().map(|s| &s.load_balancer), record.spec.record_ttl);
    let pairs: Vec<(String, LoadBalancerStatus)> = shards
        .iter()
        .map(|s| (s.cluster.clone(), s.load_balancer.clone()))
        .collect();
    let mut problems = Vec::new();
    let endpoints = builder::ingress_endpoints(
        &record.spec.hosts,
        &pairs,
        record.spec.record_ttl,
        &resolved,
        &mut problems,
    );
    let mut changed = set_record_conditions(
        &mut status.conditions,
        shards.len(),
        "no healthy member cluster has an Ingress load balancer address",
        &problems,
        generation,
    );
    changed |= status.dns != shards || status.observed_generation != generation;
    status.dns = shards;
    status.observed_generation = generation;
    ctx.report(&key, &record.object_ref(&()), &problems).await;
    ctx.write_endpoint(namespace, &endpoint_name, owner_of(record.as_ref()), endpoints, since)
        .await?;
    if changed && ctx.is_leader() {
        patch_status(
            Api::<IngressDNSRecord>::namespaced(ctx.host.clone(), namespace),
            name,
            serde_json::to_value(&status).unwrap_or_default(),
        )
        .await?;
    }
    Ok(())
}
