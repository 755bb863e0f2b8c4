//! The DNSEndpoint builder: from a record's healthy shards to the
//! global, region and zone names (docs/crds.md lists them).
//!
//! For Service `S` in namespace `N`, Domain `F` with zone `D`, prefix
//! `P = S.N.F.svc` (`externalName` replaces `S`):
//! * global `P.D`: A/AAAA of every healthy shard (absent when none: NXDOMAIN);
//! * region `P.<region>.D`: addresses of healthy shards in that region,
//!   else a CNAME to the global name;
//! * zone `P.<zone>.<region>.D`: addresses of healthy shards in that zone,
//!   else a CNAME to the region name;
//! * `<dnsPrefix>.D`: a CNAME to the global name.
//!
//! Regions and zones come from every member's topology (healthy or not),
//! so a failed cluster's names fall back by CNAME instead of vanishing.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use fedns_api::names::{self, NameKind};
use fedns_api::{ClusterDNS, Endpoint, RecordType, Routing, RoutingPolicy};

pub use super::model::{lb_hostnames, BuildProblem, HostnameAddresses, Topology};
use super::routing::{policy_endpoints, PolicyShard};
use k8s_openapi::api::core::v1::LoadBalancerStatus;

/// The addresses one load balancer status offers: IPs as given, host
/// names through `resolved`. Invalid values become problems.
pub fn lb_addresses(
    cluster: &str,
    lb: &LoadBalancerStatus,
    resolved: &dyn HostnameAddresses,
    problems: &mut Vec<BuildProblem>,
) -> BTreeSet<IpAddr> {
    let mut out = BTreeSet::new();
    for ingress in lb.ingress.iter().flatten() {
        if let Some(ip) = ingress.ip.as_deref().filter(|s| !s.is_empty()) {
            match ip.parse::<IpAddr>() {
                Ok(addr) => {
                    out.insert(addr);
                }
                Err(_) => problems.push(BuildProblem {
                    cluster: Some(cluster.to_owned()),
                    message: format!("load balancer ip {ip:?} in cluster {cluster} is not an IP address; skipped"),
                }),
            }
        } else if let Some(host) = ingress.hostname.as_deref().filter(|s| !s.is_empty()) {
            match names::normalize_hostname(host) {
                Ok(host) => match resolved.addresses(&host) {
                    Some(addrs) => out.extend(addrs),
                    None => problems.push(BuildProblem {
                        cluster: Some(cluster.to_owned()),
                        message: format!("load balancer hostname {host} in cluster {cluster} does not resolve (yet)"),
                    }),
                },
                Err(e) => problems.push(BuildProblem {
                    cluster: Some(cluster.to_owned()),
                    message: format!("load balancer hostname {host:?} in cluster {cluster} is invalid: {e}; skipped"),
                }),
            }
        }
    }
    out
}

/// Inputs for one ServiceDNSRecord.
#[derive(Debug, Clone)]
pub struct ServiceNames<'a> {
    /// Service name (or `externalName`).
    pub service: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// Federation name (the Domain's metadata.name).
    pub federation: &'a str,
    /// The zone (Domain spec.domain).
    pub zone: &'a str,
    /// `dnsPrefix`, if any.
    pub dns_prefix: Option<&'a str>,
    /// TTL in seconds.
    pub ttl: i64,
    /// `spec.routing` (None or `All`: every healthy cluster in every answer).
    pub routing: Option<&'a Routing>,
    /// `spec.fallbackTarget.cname`, written when no cluster is served.
    pub fallback_cname: Option<&'a str>,
}

/// The endpoints of the global name: every address in one RRset per
/// family, or, under a traffic policy, one endpoint per cluster
/// ([`policy_endpoints`]).
fn global_endpoints(
    name: &str,
    all: &BTreeSet<IpAddr>,
    routing: Option<&Routing>,
    shards: &[PolicyShard],
    ttl: i64,
) -> Vec<Endpoint> {
    let mut endpoints = match routing.filter(|r| r.policy != RoutingPolicy::All) {
        Some(routing) => policy_endpoints(name, routing, shards, ttl),
        None => address_endpoints(name, all, ttl),
    };
    super::routing::add_max_answers(&mut endpoints, routing);
    endpoints
}

fn address_endpoints(name: &str, addrs: &BTreeSet<IpAddr>, ttl: i64) -> Vec<Endpoint> {
    let v4: Vec<String> = addrs.iter().filter(|a| a.is_ipv4()).map(ToString::to_string).collect();
    let v6: Vec<String> = addrs.iter().filter(|a| a.is_ipv6()).map(ToString::to_string).collect();
    let mut out = Vec::new();
    for (rtype, targets) in [(RecordType::A, v4), (RecordType::AAAA, v6)] {
        if !targets.is_empty() {
            out.push(endpoint(name, rtype, targets, ttl));
        }
    }
    out
}

fn endpoint(name: &str, rtype: RecordType, targets: Vec<String>, ttl: i64) -> Endpoint {
    Endpoint {
        dns_name: name.to_owned(),
        targets,
        record_type: rtype,
        set_identifier: String::new(),
        record_ttl: Some(ttl),
        labels: Default::default(),
        provider_specific: Vec::new(),
    }
}

/// Builds the endpoints of one ServiceDNSRecord from its healthy shards
/// (`status.dns`), sorted by (name, type). Names that would be invalid
/// (over 253 octets, a region that is not a label) are skipped with a
/// problem.
pub fn service_endpoints(
    names_in: &ServiceNames<'_>,
    shards: &[ClusterDNS],
    topology: &Topology,
    resolved: &dyn HostnameAddresses,
    problems: &mut Vec<BuildProblem>,
) -> Vec<Endpoint> {
    let prefix = format!(
        "{}.{}.{}.svc",
        names_in.service, names_in.namespace, names_in.federation
    );
    let mut name_problems: Vec<BuildProblem> = Vec::new();
    let mut join = |labels: &str| -> Option<String> {
        match names::join(labels, names_in.zone, NameKind::Hostname) {
            Ok(name) => Some(name),
            Err(e) => {
                name_problems.push(BuildProblem {
                    cluster: None,
                    message: format!("name {labels}.{} cannot be published: {e}", names_in.zone),
                });
                None
            }
        }
    };
    let Some(global) = join(&prefix) else {
        problems.extend(name_problems);
        return Vec::new();
    };

    // Addresses per shard, and per region and zone.
    let mut all = BTreeSet::new();
    let mut by_region: BTreeMap<&str, BTreeSet<IpAddr>> = BTreeMap::new();
    let mut by_zone: BTreeMap<(&str, &str), BTreeSet<IpAddr>> = BTreeMap::new();
    let mut shard_problems = Vec::new();
    let mut policy_shards = Vec::with_capacity(shards.len());
    for shard in shards {
        let addrs = lb_addresses(&shard.cluster, &shard.load_balancer, resolved, &mut shard_problems);
        all.extend(addrs.iter().copied());
        policy_shards.push(PolicyShard {
            cluster: shard.cluster.clone(),
            region: shard.region.clone(),
            addresses: addrs.clone(),
        });
        if let Some(region) = shard.region.as_deref() {
            by_region.entry(region).or_default().extend(addrs.iter().copied());
            for zone in &shard.zones {
                by_zone
                    .entry((region, zone.as_str()))
                    .or_default()
                    .extend(addrs.iter().copied());
            }
        }
    }
    problems.extend(shard_problems);

    let mut out = match names_in.fallback_cname.filter(|_| shards.is_empty()) {
        // No cluster answers: the name points out of the federation; the
        // region and zone names follow it (their CNAMEs to it, below).
        Some(target) => vec![endpoint(
            &global,
            RecordType::CNAME,
            vec![target.to_owned()],
            names_in.ttl,
        )],
        None => global_endpoints(&global, &all, names_in.routing, &policy_shards, names_in.ttl),
    };
    for (region, zones) in topology {
        let Some(region_name) = join(&format!("{prefix}.{region}")) else {
            continue;
        };
        match by_region.get(region.as_str()).filter(|a| !a.is_empty()) {
            Some(addrs) => out.extend(address_endpoints(&region_name, addrs, names_in.ttl)),
            None => out.push(endpoint(
                &region_name,
                RecordType::CNAME,
                vec![global.clone()],
                names_in.ttl,
            )),
        }
        for zone in zones {
            let Some(zone_name) = join(&format!("{prefix}.{zone}.{region}")) else {
                continue;
            };
            match by_zone.get(&(region.as_str(), zone.as_str())).filter(|a| !a.is_empty()) {
                Some(addrs) => out.extend(address_endpoints(&zone_name, addrs, names_in.ttl)),
                None => out.push(endpoint(
                    &zone_name,
                    RecordType::CNAME,
                    vec![region_name.clone()],
                    names_in.ttl,
                )),
            }
        }
    }
    if let Some(prefix_label) = names_in.dns_prefix {
        if let Some(name) = join(prefix_label) {
            out.push(endpoint(&name, RecordType::CNAME, vec![global.clone()], names_in.ttl));
        }
    }
    problems.extend(name_problems);
    out.sort_by(|a, b| (&a.dns_name, a.record_type).cmp(&(&b.dns_name, b.record_type)));
    out
}

/// Builds the endpoints of one IngressDNSRecord: each host gets the union
/// of every healthy cluster's Ingress load balancer addresses, or, under
/// a traffic policy, one endpoint per cluster. `shards` are (cluster,
/// its region, its Ingress load balancer).
#[allow(clippy::too_many_arguments)]
pub fn ingress_endpoints(
    hosts: &[String],
    shards: &[(String, Option<String>, LoadBalancerStatus)],
    ttl: i64,
    routing: Option<&Routing>,
    fallback_cname: Option<&str>,
    resolved: &dyn HostnameAddresses,
    problems: &mut Vec<BuildProblem>,
) -> Vec<Endpoint> {
    let mut all = BTreeSet::new();
    let mut policy_shards = Vec::with_capacity(shards.len());
    for (cluster, region, lb) in shards {
        let addrs = lb_addresses(cluster, lb, resolved, problems);
        all.extend(addrs.iter().copied());
        policy_shards.push(PolicyShard {
            cluster: cluster.clone(),
            region: region.clone(),
            addresses: addrs,
        });
    }
    let mut out = Vec::new();
    // A route's wildcard hostname (`*.example.com`) is published as the
    // RFC 4592 wildcard owner name it is; every other host is a host name.
    let normalize = |h: &str| match h.starts_with("*.") {
        true => names::normalize_owner_name(h),
        false => names::normalize_hostname(h),
    };
    let unique: BTreeSet<String> = hosts
        .iter()
        .filter_map(|h| match normalize(h) {
            Ok(h) => Some(h),
            Err(e) => {
                problems.push(BuildProblem {
                    cluster: None,
                    message: format!("host {h:?} is invalid: {e}; skipped"),
                });
                None
            }
        })
        .collect();
    for host in unique {
        match fallback_cname.filter(|_| shards.is_empty()) {
            Some(target) => out.push(endpoint(&host, RecordType::CNAME, vec![target.to_owned()], ttl)),
            None => out.extend(global_endpoints(&host, &all, routing, &policy_shards, ttl)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::LoadBalancerIngress;

    fn lb(values: &[&str]) -> LoadBalancerStatus {
        LoadBalancerStatus {
            ingress: Some(
                values
                    .iter()
                    .map(|v| {
                        if v.parse::<IpAddr>().is_ok() || v.starts_with("bad:") {
                            LoadBalancerIngress {
                                ip: Some(v.trim_start_matches("bad:").to_string()),
                                ..Default::default()
                            }
                        } else {
                            LoadBalancerIngress {
                                hostname: Some(v.to_string()),
                                ..Default::default()
                            }
                        }
                    })
                    .collect(),
            ),
        }
    }

    fn shard(cluster: &str, region: &str, zones: &[&str], ips: &[&str]) -> ClusterDNS {
        ClusterDNS {
            cluster: cluster.into(),
            region: Some(region.into()),
            zones: zones.iter().map(|z| z.to_string()).collect(),
            load_balancer: lb(ips),
        }
    }

    fn topology() -> Topology {
        let mut t = Topology::new();
        t.insert(
            "us-east-1".into(),
            ["us-east-1a".to_string(), "us-east-1b".to_string()].into(),
        );
        t.insert("us-west-2".into(), ["us-west-2a".to_string()].into());
        t.insert("eu-west-1".into(), ["eu-west-1a".to_string()].into());
        t
    }

    fn names() -> ServiceNames<'static> {
        ServiceNames {
            service: "nginx",
            namespace: "ns",
            federation: "myfed",
            zone: "example.com",
            dns_prefix: Some("www"),
            ttl: 30,
            routing: None,
            fallback_cname: None,
        }
    }

    fn table(endpoints: &[Endpoint]) -> Vec<String> {
        endpoints
            .iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
            .collect()
    }

    #[test]
    fn all_healthy() {
        let shards = [
            shard("east-a", "us-east-1", &["us-east-1a"], &["203.0.113.10"]),
            shard("east-b", "us-east-1", &["us-east-1b"], &["203.0.113.20"]),
            shard("west", "us-west-2", &["us-west-2a"], &["198.51.100.10", "2001:db8::10"]),
            shard("eu", "eu-west-1", &["eu-west-1a"], &["198.51.100.20"]),
        ];
        let mut problems = Vec::new();
        let e = service_endpoints(&names(), &shards, &topology(), &BTreeMap::new(), &mut problems);
        assert!(problems.is_empty());
        assert_eq!(
            table(&e),
            [
                "nginx.ns.myfed.svc.eu-west-1.example.com A 198.51.100.20",
                "nginx.ns.myfed.svc.eu-west-1a.eu-west-1.example.com A 198.51.100.20",
                "nginx.ns.myfed.svc.example.com A 198.51.100.10,198.51.100.20,203.0.113.10,203.0.113.20",
                "nginx.ns.myfed.svc.example.com AAAA 2001:db8::10",
                "nginx.ns.myfed.svc.us-east-1.example.com A 203.0.113.10,203.0.113.20",
                "nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com A 203.0.113.10",
                "nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com A 203.0.113.20",
                "nginx.ns.myfed.svc.us-west-2.example.com A 198.51.100.10",
                "nginx.ns.myfed.svc.us-west-2.example.com AAAA 2001:db8::10",
                "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com A 198.51.100.10",
                "nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com AAAA 2001:db8::10",
                "www.example.com CNAME nginx.ns.myfed.svc.example.com",
            ]
        );
    }

    #[test]
    fn failed_clusters_fall_back_by_cname() {
        let shards = [shard("east-a", "us-east-1", &["us-east-1a"], &["203.0.113.10"])];
        let mut problems = Vec::new();
        let e = service_endpoints(&names(), &shards, &topology(), &BTreeMap::new(), &mut problems);
        let t = table(&e);
        assert!(t.contains(
            &"nginx.ns.myfed.svc.us-east-1b.us-east-1.example.com CNAME nginx.ns.myfed.svc.us-east-1.example.com"
                .to_string()
        ));
        assert!(
            t.contains(&"nginx.ns.myfed.svc.us-west-2.example.com CNAME nginx.ns.myfed.svc.example.com".to_string())
        );
        assert!(t.contains(
            &"nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com CNAME nginx.ns.myfed.svc.us-west-2.example.com"
                .to_string()
        ));
        assert!(t.contains(&"nginx.ns.myfed.svc.example.com A 203.0.113.10".to_string()));
    }

    #[test]
    fn no_healthy_cluster_means_no_global_name() {
        let mut problems = Vec::new();
        let e = service_endpoints(&names(), &[], &topology(), &BTreeMap::new(), &mut problems);
        assert!(e.iter().all(|e| e.record_type == RecordType::CNAME));
        assert!(!e.iter().any(|e| e.dns_name == "nginx.ns.myfed.svc.example.com"));
    }

    #[test]
    fn invalid_lb_values_and_hostnames() {
        let mut resolved = BTreeMap::new();
        resolved.insert("elb.example.net".to_string(), vec!["192.0.2.7".parse().unwrap()]);
        let shards = [
            shard(
                "a",
                "us-east-1",
                &["us-east-1a"],
                &["bad:not-an-ip", "elb.example.net", "unresolved.example.net"],
            ),
            shard(
                "b",
                "us-east-1",
                &["us-east-1a"],
                &["bad:", &format!("{}.example.net", "x".repeat(64))],
            ),
        ];
        let mut problems = Vec::new();
        let e = service_endpoints(&names(), &shards, &topology(), &resolved, &mut problems);
        assert!(table(&e).contains(&"nginx.ns.myfed.svc.example.com A 192.0.2.7".to_string()));
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(problems.len(), 3, "{messages:#?}");
        assert!(messages.iter().any(|m| m.contains("not-an-ip")));
        assert!(messages.iter().any(|m| m.contains("does not resolve")));
        assert!(messages.iter().any(|m| m.contains("is invalid")));
    }

    #[test]
    fn over_long_names_are_skipped_not_written() {
        // Global name 233 octets, region names 243, zone names 254: only
        // the zone names are too long.
        let long_ns = "n".repeat(63);
        let long_svc = "s".repeat(63);
        let long_fed = "f".repeat(40);
        let long_zone = format!("{}.example.com", "d".repeat(48));
        let n = ServiceNames {
            service: &long_svc,
            namespace: &long_ns,
            federation: &long_fed,
            zone: &long_zone,
            dns_prefix: None,
            ttl: 30,
            routing: None,
            fallback_cname: None,
        };
        let mut problems = Vec::new();
        let e = service_endpoints(
            &n,
            &[shard("a", "us-east-1", &["us-east-1a"], &["203.0.113.1"])],
            &topology(),
            &BTreeMap::new(),
            &mut problems,
        );
        assert!(e.iter().all(|e| e.dns_name.len() <= 253));
        assert!(
            e.iter().any(|e| e.record_type == RecordType::A),
            "the global and region names stay"
        );
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems.iter().all(|p| p.message.contains("cannot be published")));
    }

    #[test]
    fn ingress_hosts_get_the_union() {
        let mut problems = Vec::new();
        let e = ingress_endpoints(
            &["shop.example.com".into(), "Shop.Example.com.".into(), "bad_host".into()],
            &[
                ("a".into(), None, lb(&["203.0.113.1"])),
                ("b".into(), None, lb(&["203.0.113.2", "2001:db8::1"])),
            ],
            60,
            None,
            None,
            &BTreeMap::new(),
            &mut problems,
        );
        assert_eq!(
            table(&e),
            [
                "shop.example.com A 203.0.113.1,203.0.113.2",
                "shop.example.com AAAA 2001:db8::1"
            ]
        );
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn a_policy_changes_the_global_name_only() {
        let shards = [
            shard("east-a", "us-east-1", &["us-east-1a"], &["203.0.113.10"]),
            shard("west", "us-west-2", &["us-west-2a"], &["198.51.100.10"]),
        ];
        let routing = Routing {
            policy: RoutingPolicy::Weighted,
            weights: [("east-a".to_string(), 2), ("us-west-2".to_string(), 1)].into(),
            ..Default::default()
        };
        let n = ServiceNames {
            routing: Some(&routing),
            ..names()
        };
        let mut problems = Vec::new();
        let e = service_endpoints(&n, &shards, &topology(), &BTreeMap::new(), &mut problems);
        let global: Vec<&Endpoint> = e
            .iter()
            .filter(|e| e.dns_name == "nginx.ns.myfed.svc.example.com")
            .collect();
        assert_eq!(global.len(), 2);
        assert_eq!(global[0].set_identifier, "east-a");
        assert_eq!(global[0].provider_specific[0].value, "2");
        assert_eq!(global[1].set_identifier, "west");
        assert!(e
            .iter()
            .filter(|e| e.dns_name != "nginx.ns.myfed.svc.example.com")
            .all(|e| e.set_identifier.is_empty() && e.provider_specific.is_empty()));
    }

    #[test]
    fn ingress_hosts_follow_the_policy() {
        let routing = Routing {
            policy: RoutingPolicy::Failover,
            priorities: vec![vec!["eu-west-1".into()]],
            ..Default::default()
        };
        let mut problems = Vec::new();
        let e = ingress_endpoints(
            &["shop.example.com".into()],
            &[
                ("a".into(), Some("us-east-1".into()), lb(&["203.0.113.1"])),
                ("b".into(), Some("eu-west-1".into()), lb(&["203.0.113.2"])),
            ],
            60,
            Some(&routing),
            None,
            &BTreeMap::new(),
            &mut problems,
        );
        let rows: Vec<String> = e
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}={}",
                    e.dns_name, e.set_identifier, e.provider_specific[0].name, e.provider_specific[0].value
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                "shop.example.com a aws/failover=SECONDARY",
                "shop.example.com b aws/failover=PRIMARY"
            ]
        );
    }
}
