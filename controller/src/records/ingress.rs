//! The IngressDNSRecord reconciler: each healthy member's Ingress load
//! balancer into `status.dns`, then the DNSEndpoint `ingress-<name>`
//! publishing every host of the record.

use std::collections::BTreeSet;
use std::time::Instant;

use fedns_api::{IngressClusterDNS, IngressDNSRecord};
use k8s_openapi::api::core::v1::LoadBalancerStatus;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;

use super::builder;
use super::context::{has_lb_address, healthy_shards, owner_of, RecordContext};
use super::queue::RecordKey;
use super::status::{patch_status, set_record_conditions};

pub(super) async fn reconcile_ingress(
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
