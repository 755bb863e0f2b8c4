//! Conversions between fedns's RRsets and Cloud DNS record sets
//! (`dns#resourceRecordSet`,
//! <https://cloud.google.com/dns/docs/reference/rest/v1/resourceRecordSets>),
//! routing policies included
//! (<https://cloud.google.com/dns/docs/routing-policies-overview>).
//!
//! Cloud DNS holds one record set per name and type, and a routed one
//! holds the whole policy in `routingPolicy`:
//! * `Weighted` → `wrr`: one item per cluster, `weight` (`aws/weight`) and
//!   the cluster's addresses as `rrdatas`;
//! * `Nearest` → `geo`: one item per Google Cloud region (`location`, e.g.
//!   `europe-west1`) with its clusters' addresses, when every cluster's
//!   region is one ([`is_gcp_region`]: in the vendored list `regions.txt`;
//!   Cloud DNS refuses any other location); Cloud DNS answers from the item
//!   nearest the client;
//! * `Failover` → `primaryBackup`: the `PRIMARY` clusters' addresses as
//!   `primaryTargets.externalEndpoints`, the `SECONDARY` ones as
//!   `backupGeoTargets` items by Google Cloud region (when a backup
//!   cluster has none, as fedns's failover endpoints carry only
//!   `aws/failover`: one item holding every backup address, which Cloud
//!   DNS answers to every client, located in the first Google Cloud
//!   region among the clusters, else [`DEFAULT_BACKUP_LOCATION`]),
//!   `trickleTraffic` 0,
//!   and `healthCheck` from providerSpecific `google/health-check`
//!   ([`health_check_url`]); only for A/AAAA with both tiers, and in a
//!   public zone only with a health check (Cloud DNS health-checks external
//!   endpoints there only through one).
//!
//! Anything else is published as `All` (every cluster's addresses as
//! `rrdatas`) and reported `PolicyDowngraded`.
//!
//! The planner compares a routed record set by one pseudo-target,
//! `routingPolicy=<canonical JSON>` ([`policy_target`]): `kind` fields
//! dropped, fields at their default value dropped (Cloud DNS's JSON omits
//! `weight: 0`, `trickleTraffic: 0`, `enableFencing: false`, empty lists),
//! numbers and rrdatas canonical, items sorted; so a policy Cloud DNS
//! echoes with other spelling or order is not a change.

use fedns_api::{RecordType, RoutingPolicy};
use serde_json::{json, Value};

use crate::plan::desired::{DesiredRRset, RoutedMember};
use crate::plan::presentation::{absolute_value, canonical_value};

use super::api::RecordSet;

/// Prefix of the pseudo-target standing for a routing policy.
pub const POLICY_PREFIX: &str = "routingPolicy=";

/// providerSpecific property naming the Cloud DNS health check of a
/// `primaryBackup` policy: the full URL Cloud DNS takes,
/// `https://www.googleapis.com/compute/v1/projects/<project>/global/healthChecks/<name>`
/// (or `…/regions/<region>/healthChecks/<name>`), or the same without the
/// `https://www.googleapis.com/compute/v1/` root, which fedns expands
/// ([`health_check_url`]).
pub const HEALTH_CHECK: &str = "google/health-check";

/// Root of the health check URLs Cloud DNS takes in `healthCheck`
/// (<https://cloud.google.com/dns/docs/reference/rest/v1/resourceRecordSets>:
/// "the fully qualified URL of the HealthCheck").
pub const COMPUTE_ROOT: &str = "https://www.googleapis.com/compute/v1/";

/// The full health check URL for a `google/health-check` value: the full
/// form as is, the short `projects/…` form expanded.
///
/// # Errors
/// Anything else, in one line saying which forms are accepted.
pub fn health_check_url(value: &str) -> Result<String, String> {
    let value = value.trim();
    let path = value.strip_prefix(COMPUTE_ROOT).unwrap_or(value);
    let parts: Vec<&str> = path.split('/').collect();
    let valid = match parts.as_slice() {
        ["projects", project, "global", "healthChecks", name] => valid_project(project) && valid_resource_name(name),
        ["projects", project, "regions", region, "healthChecks", name] => {
            valid_project(project) && is_gcp_region(region) && valid_resource_name(name)
        }
        _ => false,
    };
    if valid {
        Ok(format!("{COMPUTE_ROOT}{path}"))
    } else {
        Err(format!(
            "providerSpecific {HEALTH_CHECK} {value:?} is not a Compute Engine health check: Cloud DNS takes {COMPUTE_ROOT}projects/PROJECT/global/healthChecks/NAME or {COMPUTE_ROOT}projects/PROJECT/regions/REGION/healthChecks/NAME (or either without {COMPUTE_ROOT})"
        ))
    }
}

/// A project id (6 to 30 of lower-case letters, digits and `-`, starting
/// with a letter), optionally domain-scoped (`example.com:my-project`).
fn valid_project(project: &str) -> bool {
    let id = project.rsplit_once(':').map_or(project, |(_, id)| id);
    (6..=30).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && !id.ends_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A Compute Engine resource name (RFC 1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`).
fn valid_resource_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Location of the single backup item of a `primaryBackup` policy whose
/// clusters have no Google Cloud region (a geo policy with one item
/// answers every client from it, wherever the client is).
pub const DEFAULT_BACKUP_LOCATION: &str = "us-central1";

/// The `backupGeoTargets` items: one per Google Cloud region of the backup
/// clusters, or one for all (see the module documentation).
fn backup_items(
    backup: &[&RoutedMember],
    all: &[&RoutedMember],
    rrdatas: &dyn Fn(&[String]) -> Vec<String>,
) -> Vec<Value> {
    let regional = backup.iter().all(|m| m.region.as_deref().is_some_and(is_gcp_region));
    let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let fallback = all
        .iter()
        .filter_map(|m| m.region.as_deref().filter(|r| is_gcp_region(r)))
        .next()
        .unwrap_or(DEFAULT_BACKUP_LOCATION);
    for m in backup {
        let location = match m.region.as_deref() {
            Some(r) if regional => r,
            _ => fallback,
        };
        groups.entry(location.to_owned()).or_default().extend(m.targets.clone());
    }
    groups
        .into_iter()
        .map(|(location, mut targets)| {
            targets.sort();
            targets.dedup();
            json!({"location": location, "rrdatas": rrdatas(&targets)})
        })
        .collect()
}

/// The Google Cloud regions, vendored with their source and date in the
/// file's header: Cloud DNS takes only these as routing policy locations,
/// and a name merely shaped like one (`europe-west5`) is refused.
pub const REGIONS_FILE: &str = include_str!("regions.txt");

/// The regions of [`REGIONS_FILE`].
pub fn gcp_regions() -> impl Iterator<Item = &'static str> {
    REGIONS_FILE
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
}

/// Is `region` a Google Cloud region ([`REGIONS_FILE`]), so a location
/// Cloud DNS routing policies take? AWS regions (`us-east-1`), free-form
/// names and names shaped like a region that is none (`europe-west5`) are
/// not.
pub fn is_gcp_region(region: &str) -> bool {
    gcp_regions().any(|r| r == region)
}

/// A Cloud DNS name in fedns's form: lower case, no trailing dot.
pub fn decode_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// An absolute name for Cloud DNS.
pub fn encode_name(name: &str) -> String {
    format!("{}.", name.trim_end_matches('.'))
}

/// The pseudo-target the planner compares for a routing policy.
pub fn policy_target(record_type: RecordType, policy: &Value) -> String {
    let mut out = String::from(POLICY_PREFIX);
    canonical_json(record_type, policy, "", &mut out);
    out
}

/// Is `value` what Cloud DNS's JSON leaves out (a proto3 field at its
/// default: 0, false, "", an empty list, null)?
fn is_default(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(_) => false,
    }
}

/// Writes `value` canonically: objects with sorted keys, without `kind`
/// and without fields at their default value ([`is_default`]), numbers as
/// f64 (`1` and `1.0` alike), `rrdatas` and `externalEndpoints` canonical
/// and sorted, `items` sorted (Cloud DNS answers by location or weight,
/// never by an item's position).
fn canonical_json(record_type: RecordType, value: &Value, key: &str, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map
                .iter()
                .filter(|(k, v)| k.as_str() != "kind" && !is_default(v))
                .map(|(k, _)| k)
                .collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                canonical_json(record_type, &map[k.as_str()], k, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            let mut parts: Vec<String> = items
                .iter()
                .map(|item| match (key, item) {
                    ("rrdatas" | "externalEndpoints", Value::String(s)) => {
                        Value::String(canonical_value(record_type, s)).to_string()
                    }
                    _ => {
                        let mut s = String::new();
                        canonical_json(record_type, item, "", &mut s);
                        s
                    }
                })
                .collect();
            if matches!(key, "rrdatas" | "externalEndpoints" | "items") {
                parts.sort();
            }
            out.push('[');
            out.push_str(&parts.join(","));
            out.push(']');
        }
        Value::Number(n) => out.push_str(&n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f}"))),
        other => out.push_str(&other.to_string()),
    }
}

/// The record set as the planner sees it: (type, TTL, targets); None for
/// a type fedns does not publish.
pub fn current_of(held: &RecordSet) -> Option<(RecordType, Vec<String>)> {
    let record_type = RecordType::from_mnemonic(&held.rtype)?;
    let mut targets: Vec<String> = match &held.routing_policy {
        Some(policy) => vec![policy_target(record_type, policy)],
        None => held.rrdatas.iter().map(|v| canonical_value(record_type, v)).collect(),
    };
    targets.sort();
    targets.dedup();
    Some((record_type, targets))
}

/// The routing policy for a desired RRset in a public (`public`) or
/// private managed zone: None when it has none (or `All`); Err(why) when
/// Cloud DNS cannot express it (published as `All`, reported
/// `PolicyDowngraded`).
///
/// # Errors
/// See the module documentation for what each policy needs.
pub fn routing_policy(rrset: &DesiredRRset, public: bool) -> Result<Option<Value>, String> {
    let Some(routing) = rrset.routing.as_ref().filter(|r| r.policy != RoutingPolicy::All) else {
        return Ok(None);
    };
    let t = rrset.record_type;
    let rrdatas = |targets: &[String]| -> Vec<String> { targets.iter().map(|v| absolute_value(t, v)).collect() };
    let by_region = |members: &[&RoutedMember], what: &str| -> Result<Vec<Value>, String> {
        let mut regions: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for m in members {
            match m.region.as_deref() {
                Some(r) if is_gcp_region(r) => regions.entry(r.to_owned()).or_default().extend(m.targets.clone()),
                other => {
                    return Err(format!(
                        "Cloud DNS {what} needs a Google Cloud region (like europe-west1) for every cluster; {} has {}",
                        m.set_identifier,
                        other.map_or("none".to_owned(), |r| format!(
                            "region {r}, which is not a Google Cloud region"
                        ))
                    ))
                }
            }
        }
        Ok(regions
            .into_iter()
            .map(|(location, mut targets)| {
                targets.sort();
                targets.dedup();
                json!({"location": location, "rrdatas": rrdatas(&targets)})
            })
            .collect())
    };
    let all: Vec<&RoutedMember> = routing.members.iter().collect();
    match routing.policy {
        RoutingPolicy::Weighted => Ok(Some(json!({"wrr": {"items": routing
            .members
            .iter()
            .map(|m| json!({"weight": f64::from(m.weight.unwrap_or(0)), "rrdatas": rrdatas(&m.targets)}))
            .collect::<Vec<_>>()}}))),
        RoutingPolicy::Nearest => Ok(Some(
            json!({"geo": {"items": by_region(&all, "geo routing")?, "enableFencing": false}}),
        )),
        RoutingPolicy::Failover => {
            if !matches!(t, RecordType::A | RecordType::AAAA) {
                return Err(format!(
                    "Cloud DNS primaryBackup routes addresses only (A/AAAA), not {t}"
                ));
            }
            let tier = |role: &str| -> Vec<&RoutedMember> {
                all.iter()
                    .copied()
                    .filter(|m| m.failover.as_deref() == Some(role))
                    .collect()
            };
            let (primary, backup) = (tier("PRIMARY"), tier("SECONDARY"));
            if primary.is_empty() || backup.is_empty() || primary.len() + backup.len() != all.len() {
                return Err(
                    "Cloud DNS primaryBackup needs two tiers (PRIMARY and SECONDARY clusters) and no others".into(),
                );
            }
            let mut endpoints: Vec<String> = primary.iter().flat_map(|m| m.targets.clone()).collect();
            endpoints.sort();
            endpoints.dedup();
            let mut policy = json!({"primaryBackup": {
                "primaryTargets": {"externalEndpoints": rrdatas(&endpoints)},
                "backupGeoTargets": {"items": backup_items(&backup, &all, &rrdatas)},
                "trickleTraffic": 0.0,
            }});
            let health_check = rrset
                .provider_specific
                .iter()
                .chain(all.iter().flat_map(|m| m.provider_specific.iter()))
                .find(|(k, _)| k == HEALTH_CHECK)
                .map(|(_, v)| v.clone());
            match health_check {
                Some(check) => policy["healthCheck"] = Value::String(health_check_url(&check)?),
                None if public => {
                    return Err(format!(
                        "Cloud DNS primaryBackup in a public zone needs a health check for its external endpoints; set providerSpecific {HEALTH_CHECK} on the DNSEndpoint ({COMPUTE_ROOT}projects/PROJECT/global/healthChecks/NAME)"
                    ))
                }
                None => {}
            }
            Ok(Some(policy))
        }
        RoutingPolicy::All => Ok(None),
    }
}

/// The record set to add for a desired RRset: `rrdatas` in presentation
/// form, or the routing policy given.
pub fn record_set(rrset: &DesiredRRset, policy: Option<&Value>) -> RecordSet {
    RecordSet {
        name: encode_name(&rrset.name),
        rtype: rrset.record_type.to_string(),
        ttl: rrset.ttl,
        rrdatas: match policy {
            Some(_) => Vec::new(),
            None => rrset
                .targets
                .iter()
                .map(|v| absolute_value(rrset.record_type, v))
                .collect(),
        },
        routing_policy: policy.cloned(),
    }
}
