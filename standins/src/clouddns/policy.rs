//! Routing policies (`wrr`, `geo` with `enableFencing`, `primaryBackup`)
//! checked for shape as Cloud DNS checks them
//! (<https://cloud.google.com/dns/docs/reference/rest/v1/resourceRecordSets>):
//! items and their keys, locations that are Google Cloud regions, health
//! check URLs, the rrdatas of each item; and the rules for public zones.

use serde_json::{json, Value};

use super::error::GoogleError;
use super::rrdata::check_rrdatas;

/// Types a routing policy may be attached to.
const ROUTED_TYPES: &[&str] = &[
    "A", "AAAA", "CNAME", "TXT", "MX", "SRV", "PTR", "CAA", "SPF", "HTTPS", "SVCB",
];

/// The Google Cloud regions, the only locations Cloud DNS takes in a
/// routing policy ("The geo-location granularity is a GCP region"): the
/// list fedns's provider vendors, with its source and date in its header.
const REGIONS_FILE: &str = include_str!("../../../providers/src/google_clouddns/regions.txt");

/// Is `location` a Google Cloud region?
pub fn is_region(location: &str) -> bool {
    REGIONS_FILE
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .any(|region| !region.is_empty() && region == location)
}

/// Root of the health check URLs `healthCheck` takes: "the fully qualified
/// URL of the HealthCheck"
/// (<https://cloud.google.com/dns/docs/reference/rest/v1/resourceRecordSets>).
pub const HEALTH_CHECK_ROOT: &str = "https://www.googleapis.com/compute/v1/projects/";

/// Is `url` a health check URL, global
/// (`…/projects/P/global/healthChecks/N`) or regional
/// (`…/projects/P/regions/R/healthChecks/N`)? A short `projects/…` path is
/// not.
pub fn valid_health_check(url: &str) -> bool {
    let Some(path) = url.strip_prefix(HEALTH_CHECK_ROOT) else {
        return false;
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.' || b == b':')
    };
    match path.split('/').collect::<Vec<_>>().as_slice() {
        [project, "global", "healthChecks", name] => word(project) && word(name),
        [project, "regions", region, "healthChecks", name] => word(project) && is_region(region) && word(name),
        _ => false,
    }
}

pub(super) fn check_policy(rtype: &str, policy: &Value, field: &str) -> Result<(), GoogleError> {
    let Some(object) = policy.as_object() else {
        return Err(GoogleError::invalid_value(field, &policy.to_string()));
    };
    if !ROUTED_TYPES.contains(&rtype) {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': record sets of type {rtype} cannot have a routing policy."
        )));
    }
    let kinds: Vec<&str> = ["wrr", "geo", "primaryBackup"]
        .into_iter()
        .filter(|k| object.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    if kinds.len() != 1 {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': exactly one of wrr, geo or primaryBackup must be set."
        )));
    }
    for key in object.keys() {
        if !["wrr", "geo", "primaryBackup", "healthCheck", "kind"].contains(&key.as_str()) {
            return Err(GoogleError::invalid(format!(
                "Invalid value for '{field}': unknown field '{key}'."
            )));
        }
    }
    if let Some(check) = object.get("healthCheck").filter(|v| !v.is_null()) {
        if !check.as_str().is_some_and(valid_health_check) {
            return Err(GoogleError::invalid_value(
                &format!("{field}.healthCheck"),
                check.as_str().map_or(check.to_string(), str::to_owned).as_str(),
            ));
        }
    }
    match kinds[0] {
        "wrr" => check_items(rtype, &object["wrr"], &format!("{field}.wrr"), "weight"),
        "geo" => check_items(rtype, &object["geo"], &format!("{field}.geo"), "location"),
        _ => {
            let field = format!("{field}.primaryBackup");
            let pb = &object["primaryBackup"];
            let Some(pb_object) = pb.as_object() else {
                return Err(GoogleError::invalid_value(&field, &pb.to_string()));
            };
            let targets = pb_object
                .get("primaryTargets")
                .ok_or_else(|| GoogleError::required(&format!("{field}.primaryTargets")))?;
            let has_targets = ["internalLoadBalancers", "externalEndpoints"]
                .iter()
                .any(|k| targets.get(*k).and_then(Value::as_array).is_some_and(|a| !a.is_empty()));
            if !has_targets {
                return Err(GoogleError::required(&format!("{field}.primaryTargets")));
            }
            if let Some(endpoints) = targets.get("externalEndpoints").and_then(Value::as_array) {
                for (i, e) in endpoints.iter().enumerate() {
                    if e.as_str().is_none_or(|s| s.parse::<std::net::IpAddr>().is_err()) {
                        return Err(GoogleError::invalid_value(
                            &format!("{field}.primaryTargets.externalEndpoints[{i}]"),
                            &e.to_string(),
                        ));
                    }
                }
            }
            let backup = pb_object
                .get("backupGeoTargets")
                .ok_or_else(|| GoogleError::required(&format!("{field}.backupGeoTargets")))?;
            check_items(rtype, backup, &format!("{field}.backupGeoTargets"), "location")?;
            if let Some(trickle) = pb_object.get("trickleTraffic") {
                if !trickle.as_f64().is_some_and(|t| (0.0..=1.0).contains(&t)) {
                    return Err(GoogleError::invalid_value(
                        &format!("{field}.trickleTraffic"),
                        &trickle.to_string(),
                    ));
                }
            }
            Ok(())
        }
    }
}

/// A wrr or geo policy: non-empty `items`, each with its key (`weight` ≥ 0
/// or a distinct non-empty `location`) and valid rrdatas (or health-checked
/// targets).
fn check_items(rtype: &str, policy: &Value, field: &str, key: &str) -> Result<(), GoogleError> {
    let items = policy
        .get("items")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| GoogleError::required(&format!("{field}.items")))?;
    if let Some(fencing) = policy.get("enableFencing") {
        if !fencing.is_boolean() {
            return Err(GoogleError::invalid_value(
                &format!("{field}.enableFencing"),
                &fencing.to_string(),
            ));
        }
    }
    let mut locations = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let item_field = format!("{field}.items[{i}]");
        if key == "weight" {
            // A weight left out is 0, as Cloud DNS itself returns it.
            let value = item.get(key).cloned().unwrap_or(json!(0));
            if !value.as_f64().is_some_and(|w| w >= 0.0 && w.is_finite()) {
                return Err(GoogleError::invalid_value(
                    &format!("{item_field}.weight"),
                    &value.to_string(),
                ));
            }
        } else {
            let value = item
                .get(key)
                .ok_or_else(|| GoogleError::required(&format!("{item_field}.{key}")))?;
            // Only Google Cloud regions are locations: `europe-west5`,
            // shaped like one, is refused.
            let Some(location) = value.as_str().filter(|l| is_region(l)) else {
                return Err(GoogleError::invalid_value(
                    &format!("{item_field}.location"),
                    value.as_str().map_or(value.to_string(), str::to_owned).as_str(),
                ));
            };
            if locations.contains(&location) {
                return Err(GoogleError::invalid(format!(
                    "Invalid value for '{item_field}.location': '{location}' is duplicated."
                )));
            }
            locations.push(location);
        }
        let rrdatas: Vec<String> = match item.get("rrdatas") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| GoogleError::invalid_value(&format!("{item_field}.rrdatas"), &v.to_string()))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(GoogleError::invalid_value(
                    &format!("{item_field}.rrdatas"),
                    &other.to_string(),
                ))
            }
        };
        let health_checked = item.get("healthCheckedTargets").is_some_and(|v| !v.is_null());
        if rrdatas.is_empty() && !health_checked {
            return Err(GoogleError::required(&format!("{item_field}.rrdatas")));
        }
        check_rrdatas(rtype, &rrdatas, &format!("{item_field}.rrdatas"))?;
    }
    Ok(())
}
