//! A Domain's own zone, before any record: apex, SOA, name servers,
//! transfer settings and the client table.

use std::collections::BTreeMap;

use fedns_api::{names, Domain};
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
