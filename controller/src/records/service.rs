//! The ServiceDNSRecord reconciler: each healthy member's Service load
//! balancer (with ready endpoints) into `status.dns`, then the DNSEndpoint
//! `service-<name>` with the global, region and zone names built from it.

use std::time::Instant;

use fedns_api::conditions;
use fedns_api::names;
use fedns_api::{ClusterDNS, ServiceDNSRecord};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::builder::{self, ServiceNames};
use super::context::{has_lb_address, owner_of, Pass, RecordContext};
use super::health;
use super::model::BuildProblem;
use super::status::{patch_status, set_health_conditions, set_record_conditions_refusing, set_too_large};
use crate::queue::RecordKey;
use crate::records::prefix::{prefix_refusal, PrefixRefusal};

/// The port a Service's health check probes by default: its first port,
/// as any member serving it declares (80 when none does).
fn service_port(ctx: &RecordContext, namespace: &str, name: &str) -> u16 {
    ctx.registry
        .members()
        .iter()
        .filter_map(|m| m.services.get(namespace, name))
        .find_map(|s| u16::try_from(s.first_port?).ok().filter(|p| *p > 0))
        .unwrap_or(80)
}

pub(super) async fn reconcile_service(
    ctx: &RecordContext,
    namespace: &str,
    name: &str,
    since: Instant,
    pass: Pass,
) -> Result<(), kube::Error> {
    let record_key = RecordKey::Service(namespace.into(), name.into());
    let key = record_key.id();
    let endpoint_name = format!("service-{name}");
    let Some(record) = ctx.services.get(&ObjectRef::new(name).within(namespace)) else {
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
    let Some(domain) = ctx
        .domains
        .get(&ObjectRef::new(&record.spec.domain_ref).within(&ctx.namespace))
    else {
        if pass == Pass::Preview {
            return Ok(());
        }
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
            patch_status::<ServiceDNSRecord>(
                &ctx.host,
                namespace,
                name,
                serde_json::to_value(&status).unwrap_or_default(),
            )
            .await?;
        }
        return Ok(());
    };
    let zone = names::normalize_hostname(&domain.spec.domain).unwrap_or_else(|_| domain.spec.domain.clone());

    let service_label = record.spec.external_name.clone().unwrap_or_else(|| name.to_owned());
    let global_name = format!("{service_label}.{namespace}.{}.svc.{zone}", domain.name_any());
    let mut problems = Vec::new();
    let check = match &record.spec.health_check {
        None => None,
        Some(spec) => health::ca_bundle(&ctx.host, namespace, spec)
            .await
            .and_then(|ca| health::check_of(spec, service_port(ctx, namespace, name), &global_name, ca))
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
            let service = member.services.get(namespace, name)?;
            let lb = service.load_balancer.to_status();
            if !has_lb_address(&lb) {
                return None;
            }
            if !record.spec.allow_service_without_endpoints && !member.has_ready_endpoints(namespace, name) {
                return None;
            }
            if let Some(minimum) = record.spec.min_healthy.and_then(|m| m.endpoints) {
                let (ready, all) = member.endpoint_counts(namespace, name);
                if !minimum.met(ready, all) {
                    return None;
                }
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
    let shards = selection.shards;
    let resolved = selection.resolved;
    let routing = record.spec.routing.as_ref().map(|routing| {
        super::routing::drained(routing, &selection.draining, &|cluster| {
            shards
                .iter()
                .find(|s| s.cluster == cluster)
                .and_then(|s| s.region.clone())
        })
    });
    if let (Some(after), Pass::Full) = (selection.requeue_after, pass) {
        ctx.requeue_after(RecordKey::Service(namespace.to_owned(), name.to_owned()), after);
    }
    // A dnsPrefix may not name another namespace's service name, in the
    // public zone (not written) or the members' discovery zones (the
    // replicas leave it out): reported as InputValid reason NotAllowed.
    let refusal = record
        .spec
        .dns_prefix
        .as_deref()
        .map(|p| prefix_refusal(p, namespace, &domain));
    let refused = refusal.as_ref().map(PrefixRefusal::messages).unwrap_or_default();
    problems.extend(refused.iter().map(|message| BuildProblem {
        cluster: None,
        message: message.clone(),
    }));
    let names_in = ServiceNames {
        service: &service_label,
        namespace,
        federation: &domain.name_any(),
        zone: &zone,
        dns_prefix: record
            .spec
            .dns_prefix
            .as_deref()
            .filter(|_| refusal.as_ref().is_none_or(|r| r.public.is_none())),
        ttl: record.spec.record_ttl,
        routing: routing.as_ref(),
        fallback_cname: selection.fallback_cname.as_deref(),
    };
    problems.extend(ctx.routing_problems(record.spec.routing.as_ref(), &[&domain]));
    let mut endpoints = builder::service_endpoints(&names_in, &shards, &ctx.topology(), &resolved, &mut problems);
    let geo_regions: Vec<&fedns_api::routing::GeoRegion> = domain.spec.geo_regions.iter().collect();
    super::routing::add_geolocation(&mut endpoints, &geo_regions);
    problems.sort();
    problems.dedup();

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
    let mut changed = set_record_conditions_refusing(
        &mut status.conditions,
        shards.len(),
        "no healthy member cluster has a load balancer address with ready endpoints",
        &problems,
        !refused.is_empty(),
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
    changed |= status.domain.as_deref() != Some(zone.as_str())
        || status.dns != shards
        || status.probes != selection.probes
        || status.observed_generation != generation;
    let served = shards.len();
    status.domain = Some(zone);
    status.dns = shards;
    status.probes = selection.probes;
    status.observed_generation = generation;

    let object = record.object_ref(&());
    ctx.fail_open(&key, &object, selection.all_unhealthy, served).await;
    ctx.report(&key, &object, &problems).await;
    ctx.note_size(&key, &object, &written).await;
    if changed && ctx.is_leader() {
        patch_status::<ServiceDNSRecord>(
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
