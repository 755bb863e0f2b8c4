//! The ServiceDNSRecord reconciler: each healthy member's Service load
//! balancer (with ready endpoints) into `status.dns`, then the DNSEndpoint
//! `service-<name>` with the global, region and zone names built from it.

use std::collections::BTreeSet;
use std::time::Instant;

use fedns_api::conditions;
use fedns_api::names;
use fedns_api::{ClusterDNS, ServiceDNSRecord};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::builder::{self, ServiceNames};
use super::context::{has_lb_address, healthy_shards, owner_of, RecordContext};
use super::queue::RecordKey;
use super::status::{patch_status, set_record_conditions};

pub(super) async fn reconcile_service(
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
