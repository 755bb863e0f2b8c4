//! A Domain's own zone, before any record: apex, SOA, name servers,
//! transfer settings and the client table.

use std::collections::BTreeMap;
use std::net::IpAddr;

use fedns_api::{names, Domain};
use fedns_dnsserver::hickory_proto::rr::Name;
use fedns_dnsserver::{SoaFields, ZoneContent};

use super::targets::to_name;

pub(super) fn clamp_u32(v: i64, min: u32) -> u32 {
    u32::try_from(v).unwrap_or(if v < 0 { min } else { u32::MAX }).max(min)
}

/// Builds the zone of one Domain (no records yet).
/// The apex of the zone `domain` serves, as [`DesiredZone`](super::DesiredZone) contents render
/// it (`example.com.`: lower case, trailing dot); None when `spec.domain`
/// is not a valid host name (such a Domain serves no zone).
pub fn zone_apex(domain: &Domain) -> Option<String> {
    names::normalize_hostname(&domain.spec.domain)
        .ok()
        .map(|apex| format!("{apex}."))
}

pub(super) fn zone_of(domain: &Domain) -> Result<(String, ZoneContent), String> {
    let apex = names::normalize_hostname(&domain.spec.domain).map_err(|e| format!("spec.domain: {e}"))?;
    let apex_name = to_name(&apex).ok_or_else(|| format!("spec.domain {apex:?} is not a DNS name"))?;
    let mut zone = ZoneContent::new(apex_name);
    let mut servers = Vec::new();
    for ns in &domain.spec.name_servers {
        let ns = names::normalize_hostname(ns).map_err(|e| format!("spec.nameServers: {e}"))?;
        servers.push(to_name(&ns).ok_or_else(|| format!("spec.nameServers: {ns:?} is not a DNS name"))?);
    }
    if !servers.is_empty() {
        zone.soa.mname = servers[0].clone();
        zone.name_servers = servers;
    }
    zone.name_server_addresses = name_server_addresses_of(domain).0;
    if let Some(hostmaster) = &domain.spec.hostmaster {
        let rname = names::normalize_hostname(hostmaster).map_err(|e| format!("spec.hostmaster: {e}"))?;
        zone.soa.rname = to_name(&rname).ok_or_else(|| format!("spec.hostmaster {rname:?} is not a DNS name"))?;
    }
    let soa = &domain.spec.soa;
    zone.soa = SoaFields {
        ttl: clamp_u32(soa.ttl, 1),
        refresh: clamp_u32(soa.refresh, 1),
        retry: clamp_u32(soa.retry, 1),
        expire: clamp_u32(soa.expire, 1),
        minimum: clamp_u32(soa.minimum, 1),
        ..zone.soa
    };
    if let Some(transfer) = &domain.spec.transfer {
        for cidr in &transfer.allow {
            let net = cidr
                .parse::<ipnet::IpNet>()
                .or_else(|_| cidr.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("spec.transfer.allow: {cidr:?} is not a network in CIDR notation"))?;
            zone.transfer.allow.push(net.trunc());
        }
        for target in &transfer.notify {
            let addr = target
                .parse::<std::net::SocketAddr>()
                .map_err(|_| format!("spec.transfer.notify: {target:?} is not address:port"))?;
            zone.transfer.notify.push(addr);
        }
    }
    Ok((apex, zone))
}

/// The Domain's name servers as served: `spec.nameServers` normalised
/// (lower case, no trailing dot), or `ns1.<domain>` when empty; with the
/// apex. None when `spec.domain` is not a valid host name.
fn effective_name_servers(domain: &Domain) -> Option<(String, Vec<String>)> {
    let apex = names::normalize_hostname(&domain.spec.domain).ok()?;
    let mut servers: Vec<String> = domain
        .spec
        .name_servers
        .iter()
        .filter_map(|ns| names::normalize_hostname(ns).ok())
        .collect();
    if domain.spec.name_servers.is_empty() {
        servers.push(format!("ns1.{apex}"));
    }
    Some((apex, servers))
}

fn is_inside(name: &str, apex: &str) -> bool {
    name == apex || name.strip_suffix(apex).is_some_and(|head| head.ends_with('.'))
}

/// The in-zone name server addresses of `spec.nameServerAddresses` the
/// zone serves, and a line per entry left out (a name that is not one of
/// the name servers or not inside the zone, an address that is not an
/// IPv4 or IPv6 address).
pub fn name_server_addresses_of(domain: &Domain) -> (Vec<(Name, IpAddr)>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let Some((apex, servers)) = effective_name_servers(domain) else {
        return (out, problems);
    };
    for entry in &domain.spec.name_server_addresses {
        let Ok(host) = names::normalize_hostname(&entry.name) else {
            problems.push(format!(
                "spec.nameServerAddresses: {:?} is not a host name; left out",
                entry.name
            ));
            continue;
        };
        if !servers.contains(&host) {
            problems.push(format!(
                "spec.nameServerAddresses: {host} is not one of the name servers ({}); left out",
                servers.join(", ")
            ));
            continue;
        }
        if !is_inside(&host, &apex) {
            problems.push(format!(
                "spec.nameServerAddresses: {host} is outside zone {apex} (its addresses belong to its own zone); left out"
            ));
            continue;
        }
        let Some(name) = to_name(&host) else {
            problems.push(format!(
                "spec.nameServerAddresses: {host:?} is not a DNS name; left out"
            ));
            continue;
        };
        for address in &entry.addresses {
            match address.parse::<IpAddr>() {
                Ok(ip) => out.push((name.clone(), ip)),
                Err(_) => problems.push(format!(
                    "spec.nameServerAddresses: {address:?} of {host} is not an IPv4 or IPv6 address; left out"
                )),
            }
        }
    }
    (out, problems)
}

/// The Domain condition `NameServerAddresses`: Ok with a summary when
/// every name server inside the zone has addresses and every entry of
/// `spec.nameServerAddresses` is used; Err with whether an in-zone name
/// server has no addresses at all (true: secondaries such as BIND refuse
/// the zone, RFC 1034 §4.2.1) and what is missing or left out.
pub fn name_server_addresses_check(domain: &Domain) -> Result<String, (bool, String)> {
    let Some((apex, servers)) = effective_name_servers(domain) else {
        return Err((false, "spec.domain is not a valid host name".into()));
    };
    let (served, mut problems) = name_server_addresses_of(domain);
    let inside: Vec<&String> = servers.iter().filter(|s| is_inside(s, &apex)).collect();
    let missing: Vec<&str> = inside
        .iter()
        .filter(|s| {
            !served
                .iter()
                .any(|(name, _)| name.to_ascii().trim_end_matches('.').eq_ignore_ascii_case(s))
        })
        .map(|s| s.as_str())
        .collect();
    if !missing.is_empty() {
        problems.insert(
            0,
            format!(
                "name server(s) {} inside zone {apex} have no addresses: secondaries cannot load the zone; \
                 give them in spec.nameServerAddresses",
                missing.join(", ")
            ),
        );
    }
    if !problems.is_empty() {
        return Err((!missing.is_empty(), problems.join("; ")));
    }
    Ok(if inside.is_empty() {
        "no name server is inside the zone".into()
    } else {
        format!(
            "{} in-zone name server(s) with {} address(es)",
            inside.len(),
            served.len()
        )
    })
}

/// The Domain's client table for `Nearest` names; problems (invalid
/// networks, one network given for two regions) are returned as lines and
/// the offending entry is left out, the rest kept.
pub fn client_regions_of(domain: &Domain) -> (fedns_dnsserver::ClientRegions, Vec<String>) {
    let mut out = fedns_dnsserver::ClientRegions::default();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<ipnet::IpNet, String> = BTreeMap::new();
    for entry in &domain.spec.client_regions {
        let Ok(net) = entry.cidr.parse::<ipnet::IpNet>() else {
            problems.push(format!(
                "spec.clientRegions: {:?} is not a network in CIDR notation; left out",
                entry.cidr
            ));
            continue;
        };
        let net = net.trunc();
        match seen.get(&net) {
            Some(region) if *region != entry.region => {
                problems.push(format!(
                    "spec.clientRegions: {net} is given for regions {region} and {}; {region} (the first) is used",
                    entry.region
                ));
                continue;
            }
            Some(_) => continue,
            None => {
                seen.insert(net, entry.region.clone());
            }
        }
        out.networks.push((net, entry.region.clone()));
    }
    let mut countries: BTreeMap<String, String> = BTreeMap::new();
    let mut continents: BTreeMap<String, String> = BTreeMap::new();
    for geo in &domain.spec.geo_regions {
        for (codes, map, what, list) in [
            (&geo.countries, &mut countries, "country", &mut out.countries),
            (&geo.continents, &mut continents, "continent", &mut out.continents),
        ] {
            for code in codes {
                let code = code.trim().to_ascii_uppercase();
                if code.len() != 2 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
                    problems.push(format!(
                        "spec.geoRegions: {what} code {code:?} is not two letters; left out"
                    ));
                    continue;
                }
                match map.get(&code) {
                    Some(region) if *region != geo.region => problems.push(format!(
                        "spec.geoRegions: {what} {code} is given for regions {region} and {}; {region} (the first) is used",
                        geo.region
                    )),
                    Some(_) => {}
                    None => {
                        map.insert(code.clone(), geo.region.clone());
                        list.push((code, geo.region.clone()));
                    }
                }
            }
        }
    }
    (out, problems)
}
