//! The IngressDNSRecord reconciler: each healthy member's Ingress load
//! balancer into `status.dns`, then the DNSEndpoint `ingress-<name>`
//! publishing every host of the record.

use std::time::Instant;

use fedns_api::{IngressClusterDNS, IngressDNSRecord};
use k8s_openapi::api::core::v1::LoadBalancerStatus;
use kube::runtime::reflector::ObjectRef;
use kube::Resource;

use super::builder;
use super::context::{has_lb_address, owner_of, Pass, RecordContext};
use super::health;
use super::model::BuildProblem;
use super::status::{patch_status, set_health_conditions, set_record_conditions, set_too_large};
use crate::queue::RecordKey;

pub(super) async fn reconcile_ingress(
    ctx: &RecordContext,
    namespace: &str,
    name: &str,
    since: Instant,
    pass: Pass,
) -> Result<(), kube::Error> {
    let record_key = RecordKey::Ingress(namespace.into(), name.into());
    let key = record_key.id();
    let endpoint_name = format!("ingress-{name}");
    let Some(record) = ctx.ingresses.get(&ObjectRef::new(name).within(namespace)) else {
        if pass == Pass::Preview {
            return Ok(());
        }
        return ctx.record_gone(&record_key, namespace, &endpoint_name).await;
    };
    if record.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    // Only a DNSEndpoint the record owns already is previewed.
    if pass == Pass::Preview && !ctx.owns_endpoint(namespace, &endpoint_name, record.metadata.uid.as_deref()) {
        return Ok(());
    }
    let generation = record.metadata.generation;
    let mut old_status = record.status.clone().unwrap_or_default();
    // The record cache keeps `status.dns` apart (see `PublishedShards`).
    old_status.dns = ctx.published.get(&key);
    let mut status = old_status.clone();
    let mut problems = Vec::new();
    // The Host header and SNI default to the record's first host.
    let first_host = record.spec.hosts.first().cloned().unwrap_or_default();
    let check = match &record.spec.health_check {
        None => None,
        Some(spec) => health::ca_bundle(&ctx.host, namespace, spec)
            .await
            .and_then(|ca| health::check_of(spec, health::ingress_default_port(spec), &first_host, ca))
            .map_err(|message| problems.push(BuildProblem { cluster: None, message }))
            .ok(),
    };
    let ttl = record.spec.record_ttl;
    let selection = health::select(
        ctx,
        &record_key,
        &health::HealthRules {
            check: check.as_ref(),
            min_addresses: record.spec.min_healthy.and_then(|m| m.addresses),
            fallback: record.spec.fallback_target.as_ref(),
            when_all_unhealthy: record.spec.when_all_unhealthy,
        },
        &old_status.dns,
        |shards| ctx.resolve_lb_hostnames(&key, shards.iter().map(|s| &s.load_balancer), ttl),
        |member| {
            let ingress = member.ingresses.get(namespace, name)?;
            if let Some(policy) = record.spec.backends {
                super::backends::BackendFacts::of(member, namespace, &ingress)
                    .verdict(policy, namespace)
                    .ok()?;
            }
            if let Some(minimum) = record.spec.min_healthy.and_then(|m| m.endpoints) {
                let (ready, all) = super::backends::controller_endpoints(member, &ingress);
                // No controller Service found: nothing to judge.
                if all > 0 && !minimum.met(ready, all) {
                    return None;
                }
            }
            // networking/v1 IngressLoadBalancerStatus, kept in core/v1's shape.
            let lb = ingress.load_balancer.to_status();
            has_lb_address(&lb).then(|| IngressClusterDNS {
                cluster: member.name.clone(),
                load_balancer: lb,
            })
        },
    );
    let shards = selection.shards;
    let resolved = selection.resolved;
    let regions = ctx.cluster_regions();
    let pairs: Vec<(String, Option<String>, LoadBalancerStatus)> = shards
        .iter()
        .map(|s| {
            let region = regions.get(&s.cluster).cloned().flatten();
            (s.cluster.clone(), region, s.load_balancer.clone())
        })
        .collect();
    let drained = record.spec.routing.as_ref().map(|routing| {
        super::routing::drained(routing, &selection.draining, &|cluster| {
            regions.get(cluster).cloned().flatten()
        })
    });
    if let (Some(after), Pass::Full) = (selection.requeue_after, pass) {
        ctx.requeue_after(RecordKey::Ingress(namespace.to_owned(), name.to_owned()), after);
    }
    let routing = drained.as_ref();
    let domains = ctx.domains_of(&record.spec.hosts);
    let domain_refs: Vec<&fedns_api::Domain> = domains.iter().map(|d| d.as_ref()).collect();
    problems.extend(ctx.routing_problems(routing, &domain_refs));
    let mut endpoints = builder::ingress_endpoints(
        &record.spec.hosts,
        &pairs,
        record.spec.record_ttl,
        routing,
        selection.fallback_cname.as_deref(),
        &resolved,
        &mut problems,
    );
    let geo_regions: Vec<&fedns_api::routing::GeoRegion> =
        domain_refs.iter().flat_map(|d| d.spec.geo_regions.iter()).collect();
    super::routing::add_geolocation(&mut endpoints, &geo_regions);
    // Written before the conditions are set: a DNSEndpoint over the size
    // limit is not sent, and `Ready` says so.
    if pass == Pass::Preview {
        ctx.preview_endpoint(namespace, &endpoint_name, &owner_of(record.as_ref()), &endpoints);
        return Ok(());
    }
    let written = ctx
        .write_endpoint(namespace, &endpoint_name, owner_of(record.as_ref()), endpoints, since)
        .await?;
    let too_large = written.too_large_message();
    let mut changed = set_record_conditions(
        &mut status.conditions,
        shards.len(),
        "no healthy member cluster has an Ingress load balancer address",
        &problems,
        too_large.as_deref(),
        generation,
    );
    changed |= set_health_conditions(
        &mut status.conditions,
        check.is_some(),
        selection.all_unhealthy,
        selection.fallback.as_deref(),
        shards.len(),
        &selection.last_known,
        generation,
    );
    if let Some(message) = &too_large {
        changed |= set_too_large(&mut status.conditions, message, generation);
    }
    changed |= status.dns != shards || status.probes != selection.probes || status.observed_generation != generation;
    let served = shards.len();
    status.dns = shards;
    status.probes = selection.probes;
    status.observed_generation = generation;
    let object = record.object_ref(&());
    ctx.fail_open(&key, &object, selection.all_unhealthy, served).await;
    ctx.report(&key, &object, &problems).await;
    ctx.note_size(&key, &object, &written).await;
    if changed && ctx.is_leader() {
        patch_status::<IngressDNSRecord>(
            &ctx.host,
            namespace,
            name,
            serde_json::to_value(&status).unwrap_or_default(),
        )
        .await?;
        super::health::shards_written(ctx, &key, &status.dns);
    }
    Ok(())
}
