//! Which clusters of a record are served: control-plane health, data-plane
//! probes, static stability and fail-open, in that order, so that health
//! follows the traffic path. Shared by both reconcilers.
//!
//! * A cordoned member is not served (with `spec.drainSeconds`, once its
//!   drain is over: `drain_share`).
//! * A member whose API server answers gives its fresh shard (or, while its
//!   caches are still listing, its previous one).
//! * A member whose API server is unreachable keeps its last-known shard
//!   when the record has a `healthCheck` (its load balancer addresses are
//!   still probed: static stability); without one it leaves, as before.
//! * With a `healthCheck`, every address of every candidate shard is
//!   probed; an address that is Down leaves, a shard with no address left
//!   leaves.
//! * If health alone removed every cluster, `whenAllUnhealthy:
//!   ServeLastKnown` (the default) serves every cluster as if all were
//!   healthy (Route53's rule): the reachable members' current shards and the
//!   unreachable ones' last-known shards, unfiltered.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use fedns_api::{AddressHealth, ClusterDNS, DataPlaneCheck, IngressClusterDNS, ProbeProtocol, WhenAllUnhealthy};
use k8s_openapi::api::core::v1::LoadBalancerStatus;

use super::context::RecordContext;
use super::model::{self, DRAIN_STEPS};
use super::resolver::Resolved;
use crate::dataplane::{Check, ProbeSpec, State};
use crate::members::Member;
use crate::queue::RecordKey;

/// A cluster's share of a record, whichever kind.
pub(super) trait Shard:
    Clone + PartialEq + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static
{
    fn cluster(&self) -> &str;
    fn load_balancer(&self) -> &LoadBalancerStatus;
    fn load_balancer_mut(&mut self) -> &mut LoadBalancerStatus;
}

impl Shard for ClusterDNS {
    fn cluster(&self) -> &str {
        &self.cluster
    }
    fn load_balancer(&self) -> &LoadBalancerStatus {
        &self.load_balancer
    }
    fn load_balancer_mut(&mut self) -> &mut LoadBalancerStatus {
        &mut self.load_balancer
    }
}

impl Shard for IngressClusterDNS {
    fn cluster(&self) -> &str {
        &self.cluster
    }
    fn load_balancer(&self) -> &LoadBalancerStatus {
        &self.load_balancer
    }
    fn load_balancer_mut(&mut self) -> &mut LoadBalancerStatus {
        &mut self.load_balancer
    }
}

impl Shard for fedns_api::RouteClusterDNS {
    fn cluster(&self) -> &str {
        &self.cluster
    }
    fn load_balancer(&self) -> &LoadBalancerStatus {
        &self.load_balancer
    }
    fn load_balancer_mut(&mut self) -> &mut LoadBalancerStatus {
        &mut self.load_balancer
    }
}

/// What health decided for one record.
#[derive(Debug)]
pub(super) struct Selection<T> {
    /// The shards to publish, sorted by cluster.
    pub shards: Vec<T>,
    /// Clusters served from their last-known shard (API server down,
    /// load balancer passing).
    pub last_known: Vec<String>,
    /// Health would have removed every cluster; the previous set is served.
    pub all_unhealthy: bool,
    /// Probe state of every address, for `status.probes`.
    pub probes: Vec<AddressHealth>,
    /// Load balancer host names resolved for the candidate shards.
    pub resolved: Resolved,
    /// Cordoned clusters still served while they drain
    /// (`spec.drainSeconds`): (cluster, tenths of its weight it keeps).
    pub draining: Vec<(String, u32)>,
    /// When the next drain step is due: reconcile again then.
    pub requeue_after: Option<Duration>,
    /// `spec.fallbackTarget` answers: what it is, for the `Ready`
    /// condition ("clusters standby" or "CNAME to x").
    pub fallback: Option<String>,
    /// The name the record's names point to, when the fallback is a CNAME.
    pub fallback_cname: Option<String>,
}

/// What a record asks of its clusters' health.
pub(super) struct HealthRules<'a> {
    /// Data-plane probes (`spec.healthCheck`).
    pub check: Option<&'a Check>,
    /// `spec.minHealthy.addresses`: fewer passing addresses take the
    /// whole cluster out.
    pub min_addresses: Option<fedns_api::Threshold>,
    /// `spec.fallbackTarget`.
    pub fallback: Option<&'a fedns_api::FallbackTarget>,
    /// `spec.whenAllUnhealthy`.
    pub when_all_unhealthy: WhenAllUnhealthy,
}

/// Where a cordoned member with `spec.drainSeconds` is in its drain at
/// `now`: the tenths of its weight it keeps (9 … 0) and the time to the
/// next step; `None` when it has no drain or its drain is over. The drain
/// counts from the `Ready=False` `Cordoned` condition's transition time
/// (from `now` until the controller has written it).
pub(super) fn drain_share(cluster: Option<&fedns_api::MemberCluster>, now: jiff::Timestamp) -> Option<(u32, Duration)> {
    let cluster = cluster?;
    let drain = u64::try_from(cluster.spec.drain_seconds).ok().filter(|d| *d > 0)?;
    if !cluster.spec.cordoned {
        return None;
    }
    let started = cluster
        .status
        .as_ref()
        .and_then(|s| fedns_api::conditions::get(&s.conditions, fedns_api::conditions::READY))
        .filter(|c| c.status == "False" && c.reason == fedns_api::conditions::CORDONED)
        .map_or(now, |c| c.last_transition_time.0);
    let elapsed_ms = u64::try_from(now.duration_since(started).as_millis().max(0)).unwrap_or(0);
    let drain_ms = drain * 1000;
    if elapsed_ms >= drain_ms {
        return None;
    }
    let step = u32::try_from(elapsed_ms * u64::from(DRAIN_STEPS) / drain_ms).unwrap_or(DRAIN_STEPS - 1);
    let next_ms = (u64::from(step) + 1) * drain_ms / u64::from(DRAIN_STEPS);
    Some((
        DRAIN_STEPS - 1 - step,
        Duration::from_millis(next_ms.saturating_sub(elapsed_ms).max(1)),
    ))
}

/// The check a record asks for, with its defaults filled in: `port`
/// (None: the record kind's default), the record's global name as Host,
/// and `ca_pem`, the bundle [`ca_bundle`] read (None: the system roots).
///
/// # Errors
/// A value the schema cannot check (e.g. a reversed status range).
pub(super) fn check_of(
    spec: &DataPlaneCheck,
    default_port: u16,
    global_name: &str,
    ca_pem: Option<String>,
) -> Result<Check, String> {
    let secs = |s: i32| Duration::from_secs(u64::try_from(s.max(1)).unwrap_or(1));
    // A negative delay (the schema refuses one) is no delay.
    let delay = |s: i32| Duration::from_secs(u64::try_from(s).unwrap_or(0));
    let port = match spec.port {
        Some(port) => u16::try_from(port)
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("healthCheck.port {port} is not 1..65535"))?,
        None => default_port,
    };
    let host = spec.host.clone().unwrap_or_else(|| global_name.to_owned());
    Ok(Check {
        spec: ProbeSpec {
            protocol: spec.protocol,
            port,
            path: spec.path.clone(),
            host: host.clone(),
            server_name: spec.server_name.clone().unwrap_or(host),
            statuses: spec.status_ranges()?,
            expected_body: spec.expected_body.clone(),
            headers: spec.headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
            timeout: secs(spec.timeout_seconds),
            insecure: spec.insecure_skip_tls_verify,
            ca_pem,
        },
        period: secs(spec.period_seconds),
        failure_threshold: u32::try_from(spec.failure_threshold.max(1)).unwrap_or(1),
        success_threshold: u32::try_from(spec.success_threshold.max(1)).unwrap_or(1),
        failover_delay: delay(spec.failover_delay_seconds),
        failback_delay: delay(spec.failback_delay_seconds),
        quorum: spec.quorum.unwrap_or_default(),
    })
}

/// The PEM bundle `spec.caCertificateRef` names in `namespace`, None when
/// it names none. Errors (one line, for `InputValid=False`): the object
/// or key is missing, fedns may not read it, or it is not UTF-8 PEM text.
pub(super) async fn ca_bundle(
    host: &kube::Client,
    namespace: &str,
    spec: &DataPlaneCheck,
) -> Result<Option<String>, String> {
    use fedns_api::CaCertificateKind;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    let Some(reference) = &spec.ca_certificate_ref else {
        return Ok(None);
    };
    let what = |kind: &str| format!("healthCheck.caCertificateRef: {kind} {namespace}/{}", reference.name);
    let failed = |kind: &str, e: kube::Error| match e {
        kube::Error::Api(status) if status.code == 404 => format!("{} not found", what(kind)),
        kube::Error::Api(status) if status.code == 403 => format!(
            "{}: fedns may not read it (grant its service account get on {kind}s in {namespace})",
            what(kind)
        ),
        other => format!("{}: {other}", what(kind)),
    };
    let (kind, value) = match reference.kind {
        CaCertificateKind::ConfigMap => {
            let api: kube::Api<ConfigMap> = kube::Api::namespaced(host.clone(), namespace);
            let map = api.get(&reference.name).await.map_err(|e| failed("ConfigMap", e))?;
            let value = map.data.and_then(|d| d.get(&reference.key).cloned()).or_else(|| {
                map.binary_data
                    .and_then(|d| d.get(&reference.key).and_then(|b| String::from_utf8(b.0.clone()).ok()))
            });
            ("ConfigMap", value)
        }
        CaCertificateKind::Secret => {
            let api: kube::Api<Secret> = kube::Api::namespaced(host.clone(), namespace);
            let secret = api.get(&reference.name).await.map_err(|e| failed("Secret", e))?;
            let value = crate::members::client::secret_value(&secret, &reference.key)
                .map(|bytes| {
                    String::from_utf8(bytes)
                        .map_err(|_| format!("{} key {} is not UTF-8", what("Secret"), reference.key))
                })
                .transpose()?;
            ("Secret", value)
        }
    };
    let pem = value.ok_or_else(|| format!("{} has no key {}", what(kind), reference.key))?;
    if !pem.contains("-----BEGIN CERTIFICATE-----") {
        return Err(format!("{} key {} holds no PEM certificate", what(kind), reference.key));
    }
    Ok(Some(pem))
}

/// The default probe port of an Ingress: 443 for HTTPS, else 80.
pub(super) fn ingress_default_port(spec: &DataPlaneCheck) -> u16 {
    if spec.protocol == ProbeProtocol::Https {
        443
    } else {
        80
    }
}

/// Decides the shards of record `key` under `rules`. `fresh` gives a
/// reachable member's current shard; `previous` is what the record
/// published last. When no cluster is left, the fallback target answers
/// if there is one, else fail-open (`whenAllUnhealthy`) if health emptied
/// the name.
pub(super) fn select<T: Shard>(
    ctx: &RecordContext,
    key: &RecordKey,
    rules: &HealthRules<'_>,
    previous: &[T],
    resolved: impl Fn(&[T]) -> Resolved,
    fresh: impl Fn(&Member) -> Option<T>,
) -> Selection<T> {
    let mut selection = Selection {
        shards: Vec::new(),
        last_known: Vec::new(),
        all_unhealthy: false,
        probes: Vec::new(),
        resolved: Resolved::default(),
        draining: Vec::new(),
        requeue_after: None,
        fallback: None,
        fallback_cname: None,
    };
    let (check, min_addresses) = (rules.check, rules.min_addresses);
    let mut removed_by_health = false;
    // Every cluster health may remove, unfiltered: what fail-open serves.
    let mut unfiltered: Vec<T> = Vec::new();
    let id = key.id();
    let mut cache = ctx
        .last_shards
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id)
        .unwrap_or_default();
    let previous_of = |name: &str, cache: &super::context::LastShards| {
        previous.iter().find(|p| p.cluster() == name).cloned().or_else(|| {
            cache
                .get(name)
                .and_then(|bytes| serde_json::from_slice::<T>(bytes).ok())
        })
    };
    // The cache keeps only shards `status.dns` (`previous`) does not hold
    // as they are: a published shard is read from there, and a restart
    // reads it from there too (about 170 octets a shard). A
    // member that may leave `status.dns` (cordoned, unreachable) has its
    // published shard copied in first, so it can come back on it.
    let keep_published = |name: &str, cache: &mut super::context::LastShards| {
        if cache.get(name).is_none() {
            if let Some(bytes) = previous
                .iter()
                .find(|p| p.cluster() == name)
                .and_then(|p| serde_json::to_vec(p).ok())
            {
                cache.insert(name, bytes.into_boxed_slice());
            }
        }
    };
    let now = jiff::Timestamp::now();
    for member in ctx.registry.members() {
        let mut draining = false;
        if member.is_cordoned() {
            let object = ctx
                .clusters
                .get(&kube::runtime::reflector::ObjectRef::new(&member.name).within(&ctx.namespace));
            match drain_share(object.as_deref(), now) {
                Some((tenths, next)) => {
                    // Cordoned with drainSeconds: served at a falling share.
                    selection.draining.push((member.name.clone(), tenths));
                    selection.requeue_after = Some(selection.requeue_after.map_or(next, |r| r.min(next)));
                    draining = true;
                }
                None => {
                    keep_published(&member.name, &mut cache);
                    continue; // drained on purpose: never served, never failed open
                }
            }
        }
        if member.is_healthy() || draining {
            if member.is_synced() {
                match fresh(&member) {
                    Some(shard) if previous.contains(&shard) => {
                        cache.remove(&member.name);
                        selection.shards.push(shard);
                    }
                    Some(shard) => {
                        // Serializing a shard cannot fail (strings, numbers
                        // and lists); were it to, the old entry would go
                        // rather than stay stale.
                        match serde_json::to_vec(&shard) {
                            Ok(bytes) => {
                                if cache.get(&member.name).is_none_or(|last| *last != *bytes) {
                                    cache.insert(&member.name, bytes.into_boxed_slice());
                                }
                            }
                            Err(_) => {
                                cache.remove(&member.name);
                            }
                        }
                        selection.shards.push(shard);
                    }
                    None => {
                        cache.remove(&member.name);
                    }
                }
            } else if let Some(prev) = previous_of(&member.name, &cache) {
                selection.shards.push(prev);
            }
            continue;
        }
        // The API server is unreachable: keep what its load balancers last
        // served while their probes pass (static stability).
        keep_published(&member.name, &mut cache);
        if let Some(prev) = previous_of(&member.name, &cache) {
            if check.is_some() {
                selection.shards.push(prev.clone());
                selection.last_known.push(member.name.clone());
            } else {
                removed_by_health = true;
                unfiltered.push(prev.clone());
            }
        }
    }
    {
        let mut last_shards = ctx.last_shards.lock().unwrap_or_else(|e| e.into_inner());
        if cache.is_empty() {
            last_shards.remove(&id);
        } else {
            last_shards.insert(id, cache);
        }
    }
    selection.shards.sort_by(|a, b| a.cluster().cmp(b.cluster()));
    unfiltered.extend(selection.shards.iter().cloned());
    unfiltered.sort_by(|a, b| a.cluster().cmp(b.cluster()));
    selection.resolved = resolved(&selection.shards);
    let resolved = selection.resolved.clone();

    match (check, ctx.dataplane.as_ref()) {
        (Some(check), Some(dataplane)) => {
            let mut wanted = Vec::new();
            for shard in &selection.shards {
                for address in addresses(shard.load_balancer(), &resolved) {
                    wanted.push((address, check.clone()));
                }
            }
            dataplane.want_allowing(key, wanted, &probe_allowance(ctx, key));
            let state_of = |ip: IpAddr| dataplane.state(ip, check);
            let mut kept = Vec::new();
            for mut shard in std::mem::take(&mut selection.shards) {
                let cluster = shard.cluster().to_owned();
                for address in addresses(shard.load_balancer(), &resolved) {
                    let state = state_of(address);
                    selection.probes.push(AddressHealth {
                        cluster: cluster.clone(),
                        address: address.to_string(),
                        state: state.as_ref().map_or(State::Unknown, |s| s.state).as_str().to_owned(),
                        since: state.as_ref().map(|s| s.since.clone()),
                        pending_state: state
                            .as_ref()
                            .and_then(|s| s.pending.as_ref())
                            .map(|(p, _, _)| p.as_str().to_owned()),
                        pending_since: state
                            .as_ref()
                            .and_then(|s| s.pending.as_ref())
                            .map(|(_, since, _)| since.clone()),
                        pending_effective_at: state
                            .as_ref()
                            .and_then(|s| s.pending.as_ref())
                            .map(|(_, _, at)| at.clone()),
                        vantage_points: state
                            .as_ref()
                            .filter(|s| s.vantage_points.len() > 1)
                            .map(|s| {
                                s.vantage_points
                                    .iter()
                                    .map(|b| fedns_api::VantagePointHealth {
                                        name: b.vantage_point.clone(),
                                        state: b.vote.state.as_str().to_owned(),
                                        since: Some(b.vote.since.clone()).filter(|s| !s.is_empty()),
                                        last_error: b.vote.last_error.clone(),
                                        standing: b.standing.as_str().to_owned(),
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        quorum: state.as_ref().filter(|s| s.vantage_points.len() > 1).map(|s| {
                            format!(
                                "{}: {} of {} vantage points counted say Down",
                                s.quorum, s.decision.down, s.decision.counted
                            )
                        }),
                        last_error: state.and_then(|s| s.last_error),
                    });
                }
                let down = |ip: IpAddr| state_of(ip).is_some_and(|s| s.state == State::Down);
                if let Some(minimum) = min_addresses {
                    let all = addresses(shard.load_balancer(), &resolved);
                    let passing = all.iter().filter(|ip| !down(**ip)).count();
                    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                    if !minimum.met(count(passing), count(all.len())) {
                        removed_by_health = true;
                        continue;
                    }
                }
                let lb = shard.load_balancer_mut();
                if let Some(ingress) = lb.ingress.as_mut() {
                    ingress.retain(|entry| match (entry.ip.as_deref(), entry.hostname.as_deref()) {
                        (Some(ip), _) if !ip.is_empty() => !ip.parse::<IpAddr>().is_ok_and(down),
                        (_, Some(host)) if !host.is_empty() => {
                            // A host name stays while one of its addresses passes.
                            let ips = names_addresses(host, &resolved);
                            ips.is_empty() || ips.into_iter().any(|ip| !down(ip))
                        }
                        _ => false,
                    });
                }
                if super::context::has_lb_address(shard.load_balancer()) {
                    kept.push(shard);
                } else {
                    removed_by_health = true;
                }
            }
            selection.shards = kept;
            selection
                .probes
                .sort_by(|a, b| (&a.cluster, &a.address).cmp(&(&b.cluster, &b.address)));
            selection.probes.dedup();
        }
        _ => {
            if let Some(dataplane) = ctx.dataplane.as_ref() {
                dataplane.forget(key);
            }
        }
    }
    selection
        .last_known
        .retain(|name| selection.shards.iter().any(|s| s.cluster() == name));

    if selection.shards.is_empty() {
        if let Some(target) = rules.fallback {
            if let Some(cname) = &target.cname {
                selection.fallback = Some(format!("CNAME to {cname}"));
                selection.fallback_cname = Some(cname.clone());
                return selection;
            }
            // Its clusters as they are, whatever their probes say.
            let standby: Vec<T> = unfiltered
                .iter()
                .filter(|s| target.clusters.iter().any(|c| c == s.cluster()))
                .cloned()
                .collect();
            if !standby.is_empty() {
                let names: Vec<&str> = standby.iter().map(|s| s.cluster()).collect();
                selection.fallback = Some(format!("cluster(s) {}", names.join(", ")));
                selection.shards = standby;
                return selection;
            }
        }
    }
    if selection.shards.is_empty()
        && removed_by_health
        && !unfiltered.is_empty()
        && rules.when_all_unhealthy == WhenAllUnhealthy::ServeLastKnown
    {
        selection.shards = unfiltered;
        selection.all_unhealthy = true;
    }
    selection
}

/// The networks the probes of record `key` may reach although
/// `dataplane::policy` refuses them (loopback, link-local, …): the
/// `spec.probeAllowedNetworks` of the Domains it publishes in (a
/// ServiceDNSRecord's `domainRef`; the Domains of an Ingress or Route
/// record's `spec.hosts` and of the names it published).
fn probe_allowance(ctx: &RecordContext, key: &RecordKey) -> Vec<ipnet::IpNet> {
    use kube::runtime::reflector::ObjectRef;
    let domains: Vec<std::sync::Arc<fedns_api::Domain>> = match key {
        RecordKey::Service(ns, name) => ctx
            .services
            .get(&ObjectRef::new(name).within(ns))
            .and_then(|r| {
                ctx.domains
                    .get(&ObjectRef::new(&r.spec.domain_ref).within(&ctx.namespace))
            })
            .into_iter()
            .collect(),
        RecordKey::Ingress(ns, name) => ctx
            .ingresses
            .get(&ObjectRef::new(name).within(ns))
            .map(|r| ctx.domains_of(&r.spec.hosts))
            .unwrap_or_default(),
        RecordKey::Route(ns, name) => ctx
            .routes
            .get(&ObjectRef::new(name).within(ns))
            .map(|r| {
                let mut hosts = r.spec.hosts.clone();
                hosts.extend(
                    ctx.published
                        .get::<fedns_api::RouteClusterDNS>(&key.id())
                        .into_iter()
                        .flat_map(|s| s.hostnames.into_iter().map(|h| h.hostname)),
                );
                ctx.domains_of(&hosts)
            })
            .unwrap_or_default(),
    };
    crate::dataplane::policy::parse_networks(
        domains
            .iter()
            .flat_map(|d| d.spec.probe_allowed_networks.iter().map(String::as_str)),
    )
}

/// Every address a load balancer status stands for: its IPs and the
/// resolved addresses of its host names.
fn addresses(lb: &LoadBalancerStatus, resolved: &Resolved) -> BTreeSet<IpAddr> {
    let mut out = BTreeSet::new();
    for entry in lb.ingress.iter().flatten() {
        if let Some(ip) = entry.ip.as_deref().and_then(|ip| ip.parse::<IpAddr>().ok()) {
            out.insert(ip);
        }
    }
    for host in model::lb_hostnames(lb) {
        out.extend(names_addresses(&host, resolved));
    }
    out
}

fn names_addresses(host: &str, resolved: &Resolved) -> Vec<IpAddr> {
    use model::HostnameAddresses as _;
    fedns_api::names::normalize_hostname(host)
        .ok()
        .and_then(|h| resolved.addresses(&h))
        .unwrap_or_default()
}

/// Record `id`'s status holding `dns` was written. The table of published
/// shards takes it at once, and the last-known shards [`select`] kept only
/// because `status.dns` did not hold them yet go: it holds them now.
/// Before, they stayed for every record whose last reconcile changed its
/// shards, as nothing reconciles a record again for its own status write:
/// after a cold start nearly every shard of the federation, about 200
/// octets each (a heap profile at 1,000,000 shards held about 100 MiB of
/// them before converging).
pub(super) fn shards_written<T: Shard>(ctx: &RecordContext, id: &str, dns: &[T]) {
    ctx.published.set(id, dns);
    let mut last_shards = ctx.last_shards.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cache) = last_shards.get_mut(id) {
        forget_written(cache, dns);
        if cache.is_empty() {
            last_shards.remove(id);
        }
    }
}

/// Forgets each shard of `written` that `cache` holds as it is (its JSON
/// the same); a cached shard that differs stays.
fn forget_written<T: Shard>(cache: &mut super::context::LastShards, written: &[T]) {
    for shard in written {
        let same = cache
            .get(shard.cluster())
            .is_some_and(|held| serde_json::to_vec(shard).is_ok_and(|bytes| *bytes == *held));
        if same {
            cache.remove(shard.cluster());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::published::tests::shard;
    use super::*;

    #[test]
    fn checks_get_their_defaults_and_bad_values_are_reported() {
        let spec: DataPlaneCheck = serde_json::from_value(serde_json::json!({"protocol": "HTTPS"})).unwrap();
        let check = check_of(&spec, ingress_default_port(&spec), "web.example.com", None).unwrap();
        assert_eq!((check.spec.port, check.spec.host.as_str()), (443, "web.example.com"));
        assert_eq!(check.period, Duration::from_secs(5));
        assert_eq!(
            (check.failover_delay, check.failback_delay),
            (Duration::ZERO, Duration::ZERO)
        );
        let damped: DataPlaneCheck = serde_json::from_value(
            serde_json::json!({"protocol": "TCP", "failoverDelaySeconds": 3, "failbackDelaySeconds": 10}),
        )
        .unwrap();
        let check = check_of(&damped, 80, "x.example.com", None).unwrap();
        assert_eq!(
            (check.failover_delay, check.failback_delay),
            (Duration::from_secs(3), Duration::from_secs(10))
        );
        let reversed: DataPlaneCheck =
            serde_json::from_value(serde_json::json!({"protocol": "HTTP", "expectedStatuses": ["399-200"]})).unwrap();
        assert!(check_of(&reversed, 80, "x.example.com", None)
            .unwrap_err()
            .contains("ends before it starts"));
        // The server name follows the Host unless set; body and headers go through.
        let path: DataPlaneCheck = serde_json::from_value(serde_json::json!({"protocol": "HTTPS",
            "host": "www.example.com", "expectedBody": "OK",
            "headers": [{"name": "X-Tenant", "value": "a"}]}))
        .unwrap();
        let check = check_of(&path, 443, "x.example.com", None).unwrap();
        assert_eq!(check.spec.server_name, "www.example.com");
        assert_eq!(check.spec.expected_body.as_deref(), Some("OK"));
        assert_eq!(check.spec.headers, [("X-Tenant".to_owned(), "a".to_owned())]);
        let sni: DataPlaneCheck =
            serde_json::from_value(serde_json::json!({"protocol": "HTTPS", "serverName": "origin.example.com"}))
                .unwrap();
        let check = check_of(&sni, 443, "x.example.com", None).unwrap();
        assert_eq!(
            (check.spec.host.as_str(), check.spec.server_name.as_str()),
            ("x.example.com", "origin.example.com")
        );
    }

    fn held(shard: &ClusterDNS) -> Result<Box<[u8]>, serde_json::Error> {
        Ok(serde_json::to_vec(shard)?.into_boxed_slice())
    }

    #[test]
    fn a_written_status_takes_the_place_of_the_shards_kept_for_it() -> Result<(), serde_json::Error> {
        let mut cache = super::super::context::LastShards::default();
        cache.insert("east", held(&shard("east", "192.0.2.1"))?);
        cache.insert("west", held(&shard("west", "192.0.2.2"))?);
        cache.insert("south", held(&shard("south", "192.0.2.3"))?);
        // east written as kept; west written with another address (the
        // kept one is newer than what was written); south not written.
        forget_written(&mut cache, &[shard("east", "192.0.2.1"), shard("west", "192.0.2.9")]);
        assert_eq!(cache.get("east"), None, "status.dns holds it now");
        assert_eq!(cache.get("west"), Some(&*held(&shard("west", "192.0.2.2"))?));
        assert_eq!(cache.get("south"), Some(&*held(&shard("south", "192.0.2.3"))?));
        forget_written(&mut cache, &[shard("west", "192.0.2.2"), shard("south", "192.0.2.3")]);
        assert!(cache.is_empty());
        Ok(())
    }
}

#[cfg(test)]
mod drain_tests {
    use super::*;

    type TestResult<T> = Result<T, Box<dyn std::error::Error>>;

    fn cordoned(drain_seconds: i32, since: Option<&str>) -> TestResult<fedns_api::MemberCluster> {
        let mut cluster: fedns_api::MemberCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.fedns.io/v1alpha1",
            "kind": "MemberCluster",
            "metadata": {"name": "east", "namespace": "fedns-system"},
            "spec": {"apiEndpoint": "https://127.0.0.1:6443", "cordoned": true, "drainSeconds": drain_seconds},
        }))?;
        if let Some(since) = since {
            cluster.status = serde_json::from_value(serde_json::json!({"conditions": [{
                "type": "Ready", "status": "False", "reason": "Cordoned", "message": "",
                "lastTransitionTime": since,
            }]}))?;
        }
        Ok(cluster)
    }

    #[test]
    fn a_drain_lowers_the_share_in_ten_steps_then_ends() -> TestResult<()> {
        let start: jiff::Timestamp = "2026-11-25T20:00:00Z".parse()?;
        let cluster = cordoned(100, Some("2026-11-25T20:00:00Z"))?;
        let at = |s: i64| drain_share(Some(&cluster), start + jiff::SignedDuration::from_secs(s));
        assert_eq!(at(0), Some((9, Duration::from_secs(10))));
        assert_eq!(at(5), Some((9, Duration::from_secs(5))));
        assert_eq!(at(10), Some((8, Duration::from_secs(10))));
        assert_eq!(at(95).map(|s| s.0), Some(0));
        assert_eq!(at(100), None, "drained");
        // Not cordoned, or no drain: nothing to drain.
        let mut uncordoned = cluster.clone();
        uncordoned.spec.cordoned = false;
        assert_eq!(drain_share(Some(&uncordoned), start), None);
        assert_eq!(drain_share(Some(&cordoned(0, None)?), start), None);
        // The cordon not yet in status: the drain starts now.
        assert_eq!(
            drain_share(Some(&cordoned(20, None)?), start),
            Some((9, Duration::from_secs(2)))
        );
        Ok(())
    }

    #[test]
    fn weighted_routing_scales_while_a_cluster_drains() -> TestResult<()> {
        let routing: fedns_api::routing::Routing = serde_json::from_value(serde_json::json!({
            "policy": "Weighted", "weights": {"east": 1, "us-west-2": 3}
        }))?;
        let drained = super::super::routing::drained(&routing, &[("east".into(), 4)], &|_| None);
        assert_eq!(drained.weights["east"], 4);
        assert_eq!(drained.weights["us-west-2"], 30);
        // A cluster weighted by its region drains by its own entry.
        let by_region =
            super::super::routing::drained(&routing, &[("west-a".into(), 5)], &|_| Some("us-west-2".into()));
        assert_eq!((by_region.weights["west-a"], by_region.weights["us-west-2"]), (15, 30));
        // Weights over 25: only the draining one changes (Route53's 255).
        let heavy: fedns_api::routing::Routing = serde_json::from_value(serde_json::json!({
            "policy": "Weighted", "weights": {"east": 100, "west": 200}
        }))?;
        let drained = super::super::routing::drained(&heavy, &[("east".into(), 4)], &|_| None);
        assert_eq!((drained.weights["east"], drained.weights["west"]), (40, 200));
        // Other policies are left alone.
        let nearest: fedns_api::routing::Routing = serde_json::from_value(serde_json::json!({"policy": "Nearest"}))?;
        assert_eq!(
            super::super::routing::drained(&nearest, &[("east".into(), 4)], &|_| None),
            nearest
        );
        Ok(())
    }
}
