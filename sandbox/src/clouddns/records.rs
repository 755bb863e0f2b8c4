//! Resource record sets: the JSON shape, parsing a request's record set
//! with the real API's field paths in errors, and per-type validation of
//! names, TTLs, rrdatas and routing policies.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::{json, Map, Value};

use super::error::GoogleError;

/// Types Cloud DNS accepts in a record set.
pub const TYPES: &[&str] = &[
    "A", "AAAA", "CAA", "CNAME", "DNSKEY", "DS", "HTTPS", "IPSECKEY", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF", "SRV",
    "SSHFP", "SVCB", "TLSA", "TXT",
];

/// Types a routing policy may be attached to.
const ROUTED_TYPES: &[&str] = &[
    "A", "AAAA", "CNAME", "TXT", "MX", "SRV", "PTR", "CAA", "SPF", "HTTPS", "SVCB",
];

/// Largest TTL accepted (a signed 32-bit number of seconds).
pub const MAX_TTL: i64 = i32::MAX as i64;

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

/// A routing policy as Cloud DNS stores and returns it: fields at their
/// default value left out (proto3 JSON: `weight: 0`, `trickleTraffic: 0`,
/// `enableFencing: false`, empty lists, nulls), so what a client sent with
/// them and what it reads back without them are the same policy.
pub fn without_defaults(value: &Value) -> Option<Value> {
    match value {
        Value::Null | Value::Bool(false) => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|v| without_defaults(v).unwrap_or_else(|| json!({})))
                .collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter_map(|(k, v)| without_defaults(v).map(|v| (k.clone(), v)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// One resource record set, as stored and as sent on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSet {
    /// Absolute name with the trailing dot, lower case.
    pub name: String,
    /// Record type (`A`, `TXT`, …).
    pub rtype: String,
    /// Seconds.
    pub ttl: u32,
    /// Record data in presentation format (empty when `routing_policy` is set).
    pub rrdatas: Vec<String>,
    /// The `routingPolicy` object as given (`wrr`, `geo` or
    /// `primaryBackup`) less fields at their default value
    /// ([`without_defaults`]), when the record set is policy-routed.
    pub routing_policy: Option<Value>,
}

impl RecordSet {
    /// A plain record set.
    pub fn new(name: &str, rtype: &str, ttl: u32, rrdatas: &[&str]) -> RecordSet {
        RecordSet {
            name: name.to_ascii_lowercase(),
            rtype: rtype.to_owned(),
            ttl,
            rrdatas: rrdatas.iter().map(|s| (*s).to_owned()).collect(),
            routing_policy: None,
        }
    }

    /// The `dns#resourceRecordSet` JSON.
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "kind": "dns#resourceRecordSet",
            "name": self.name,
            "type": self.rtype,
            "ttl": self.ttl,
        });
        if let Some(policy) = &self.routing_policy {
            value["routingPolicy"] = policy.clone();
        } else {
            value["rrdatas"] = json!(self.rrdatas);
        }
        value
    }

    /// `name (TYPE)`, as the real API names a record set in messages.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.rtype)
    }

    /// Octets of record data (routing policy items included), for the
    /// per-change size quota.
    pub fn rrdata_octets(&self) -> usize {
        let mut total: usize = self.rrdatas.iter().map(String::len).sum();
        if let Some(policy) = &self.routing_policy {
            total += policy_rrdatas(policy).iter().map(|s| s.len()).sum::<usize>();
        }
        total
    }

    /// Number of rrdatas (largest item of a routing policy).
    pub fn record_count(&self) -> usize {
        match &self.routing_policy {
            None => self.rrdatas.len(),
            Some(policy) => policy_items(policy)
                .iter()
                .map(|item| item.get("rrdatas").and_then(Value::as_array).map_or(0, Vec::len))
                .max()
                .unwrap_or(0),
        }
    }

    /// Whether `other` is the same record set for a deletion's
    /// precondition: name, type, TTL, the same rrdatas in any order, and an
    /// equal routing policy (`kind` fields ignored; both have their default
    /// values left out when parsed).
    pub fn matches_exactly(&self, other: &RecordSet) -> bool {
        let mut mine = self.rrdatas.clone();
        let mut theirs = other.rrdatas.clone();
        mine.sort();
        theirs.sort();
        self.name == other.name
            && self.rtype == other.rtype
            && self.ttl == other.ttl
            && mine == theirs
            && self.routing_policy.as_ref().map(without_kind) == other.routing_policy.as_ref().map(without_kind)
    }
}

fn without_kind(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| (k.clone(), without_kind(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_kind).collect()),
        other => other.clone(),
    }
}

/// Every item of a routing policy (wrr, geo, primaryBackup's backup geo).
fn policy_items(policy: &Value) -> Vec<&Value> {
    let mut items = Vec::new();
    for path in [
        &["wrr", "items"][..],
        &["geo", "items"],
        &["primaryBackup", "backupGeoTargets", "items"],
    ] {
        let mut node = Some(policy);
        for key in path {
            node = node.and_then(|n| n.get(*key));
        }
        if let Some(list) = node.and_then(Value::as_array) {
            items.extend(list.iter());
        }
    }
    items
}

fn policy_rrdatas(policy: &Value) -> Vec<&str> {
    policy_items(policy)
        .iter()
        .filter_map(|item| item.get("rrdatas").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Parses and validates one record set of a change; `field` is its path
/// (`entity.change.additions[3]`). `zone_dns_name` bounds the name.
///
/// # Errors
/// 400 `required` or `invalid` naming the field, as the real API does.
pub fn parse(value: &Value, field: &str, zone_dns_name: &str) -> Result<RecordSet, GoogleError> {
    let Some(object) = value.as_object() else {
        return Err(GoogleError::invalid_value(field, &value.to_string()));
    };
    let name = match object.get("name") {
        None | Some(Value::Null) => return Err(GoogleError::required(&format!("{field}.name"))),
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        Some(other) => return Err(GoogleError::invalid_value(&format!("{field}.name"), &other.to_string())),
    };
    if name.is_empty() {
        return Err(GoogleError::required(&format!("{field}.name")));
    }
    if !valid_name(&name, true) {
        return Err(GoogleError::invalid_value(&format!("{field}.name"), &name));
    }
    if !within(&name, zone_dns_name) {
        return Err(GoogleError::invalid(format!(
            "The resource record set '{field}' is invalid because the DNS name '{name}' is not within the managed zone '{zone_dns_name}'."
        )));
    }
    let rtype = match object.get("type") {
        None | Some(Value::Null) => return Err(GoogleError::required(&format!("{field}.type"))),
        Some(Value::String(s)) if s.is_empty() => return Err(GoogleError::required(&format!("{field}.type"))),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(GoogleError::invalid_value(&format!("{field}.type"), &other.to_string())),
    };
    if !TYPES.contains(&rtype.as_str()) {
        return Err(GoogleError::invalid_value(&format!("{field}.type"), &rtype));
    }
    let ttl = match object.get("ttl") {
        None | Some(Value::Null) => return Err(GoogleError::required(&format!("{field}.ttl"))),
        Some(Value::Number(n)) => n.as_i64(),
        // Google's JSON mapping accepts 32-bit integers as strings too.
        Some(Value::String(s)) => s.parse::<i64>().ok(),
        Some(_) => None,
    };
    let ttl_text = object.get("ttl").map(|v| v.to_string()).unwrap_or_default();
    let ttl = match ttl {
        Some(t) if (0..=MAX_TTL).contains(&t) => u32::try_from(t).unwrap_or(0),
        _ => {
            return Err(GoogleError::invalid_value(
                &format!("{field}.ttl"),
                ttl_text.trim_matches('"'),
            ))
        }
    };
    let rrdatas = match object.get("rrdatas") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) => out.push(s.to_owned()),
                    None => {
                        return Err(GoogleError::invalid_value(
                            &format!("{field}.rrdata[{i}]"),
                            &item.to_string(),
                        ))
                    }
                }
            }
            out
        }
        Some(other) => {
            return Err(GoogleError::invalid_value(
                &format!("{field}.rrdata"),
                &other.to_string(),
            ))
        }
    };
    let given_policy = match object.get("routingPolicy") {
        None | Some(Value::Null) => None,
        Some(policy) => Some(policy.clone()),
    };
    if let Some(policy) = &given_policy {
        check_policy(&rtype, policy, &format!("{field}.routingPolicy"))?;
    }
    let routing_policy = given_policy
        .as_ref()
        .map(|p| without_defaults(p).unwrap_or_else(|| json!({})));
    if routing_policy.is_some() && !rrdatas.is_empty() {
        return Err(GoogleError::invalid(format!(
            "The resource record set '{field}' is invalid because it specifies both rrdatas and a routing policy."
        )));
    }
    let set = RecordSet {
        name,
        rtype,
        ttl,
        rrdatas,
        routing_policy,
    };
    if set.routing_policy.is_none() {
        if set.rrdatas.is_empty() {
            return Err(GoogleError::required(&format!("{field}.rrdata")));
        }
        check_rrdatas(&set.rtype, &set.rrdatas, &format!("{field}.rrdata"))?;
    }
    Ok(set)
}

/// Whether `name` is equal to or below `apex` (both absolute, lower case).
pub fn within(name: &str, apex: &str) -> bool {
    if apex == "." {
        return true;
    }
    name == apex || name.strip_suffix(apex).is_some_and(|head| head.ends_with('.'))
}

/// An absolute DNS name: trailing dot, labels of 1 to 63 letters, digits,
/// `-` or `_`, at most 253 characters before the final dot; `*` is allowed
/// as a whole first label when `wildcard`.
pub fn valid_name(name: &str, wildcard: bool) -> bool {
    if name == "." {
        return true;
    }
    let Some(body) = name.strip_suffix('.') else {
        return false;
    };
    if body.is_empty() || body.len() > 253 {
        return false;
    }
    body.split('.').enumerate().all(|(i, label)| {
        (wildcard && i == 0 && label == "*")
            || (!label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    })
}

fn check_rrdatas(rtype: &str, rrdatas: &[String], field: &str) -> Result<(), GoogleError> {
    if rtype == "CNAME" && rrdatas.len() > 1 {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': a CNAME record set may have only one rrdata."
        )));
    }
    if rtype == "SOA" && rrdatas.len() > 1 {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': an SOA record set may have only one rrdata."
        )));
    }
    for (i, rrdata) in rrdatas.iter().enumerate() {
        if !valid_rrdata(rtype, rrdata) {
            return Err(GoogleError::invalid_value(&format!("{field}[{i}]"), rrdata));
        }
        if rrdatas[..i].contains(rrdata) {
            return Err(GoogleError::invalid(format!(
                "Invalid value for '{field}[{i}]': '{rrdata}' is duplicated."
            )));
        }
    }
    Ok(())
}

fn number<T: std::str::FromStr>(field: Option<&str>) -> bool {
    field.is_some_and(|f| f.parse::<T>().is_ok())
}

fn hex(field: Option<&str>) -> bool {
    field.is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn host(field: Option<&str>) -> bool {
    field.is_some_and(|f| valid_name(&f.to_ascii_lowercase(), false))
}

/// Presentation-format check of one rrdata for `rtype`.
pub fn valid_rrdata(rtype: &str, rrdata: &str) -> bool {
    let mut f = rrdata.split_ascii_whitespace();
    let count = rrdata.split_ascii_whitespace().count();
    match rtype {
        "A" => rrdata.parse::<Ipv4Addr>().is_ok(),
        "AAAA" => rrdata.parse::<Ipv6Addr>().is_ok(),
        "CNAME" | "NS" | "PTR" => count == 1 && host(f.next()),
        "MX" => count == 2 && number::<u16>(f.next()) && f.next().is_some_and(|h| h == "." || host(Some(h))),
        "SRV" => {
            count == 4
                && number::<u16>(f.next())
                && number::<u16>(f.next())
                && number::<u16>(f.next())
                && f.next().is_some_and(|h| h == "." || host(Some(h)))
        }
        "SOA" => count == 7 && host(f.next()) && host(f.next()) && (0..5).all(|_| number::<u32>(f.next())),
        "TXT" | "SPF" => valid_txt(rrdata),
        "CAA" => {
            count >= 3
                && number::<u8>(f.next())
                && f.next()
                    .is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric()))
        }
        "DS" => {
            count >= 4
                && number::<u16>(f.next())
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && f.all(|x| hex(Some(x)))
        }
        "TLSA" => {
            count >= 4
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && f.all(|x| hex(Some(x)))
        }
        "SSHFP" => count == 3 && number::<u8>(f.next()) && number::<u8>(f.next()) && hex(f.next()),
        "DNSKEY" => count >= 4 && number::<u16>(f.next()) && number::<u8>(f.next()) && number::<u8>(f.next()),
        "HTTPS" | "SVCB" => {
            count >= 2 && number::<u16>(f.next()) && f.next().is_some_and(|h| h == "." || host(Some(h)))
        }
        // NAPTR, IPSECKEY: only checked to be non-empty.
        _ => count > 0,
    }
}

/// TXT data: one or more character-strings, quoted (with `\` escapes) or
/// bare words, each at most 255 octets.
pub fn valid_txt(rrdata: &str) -> bool {
    let bytes = rrdata.as_bytes();
    let mut i = 0;
    let mut strings = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut length = 0usize;
        if bytes[i] == b'"' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return false,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                            i += 4;
                        } else {
                            i += 2;
                        }
                        if i > bytes.len() {
                            return false;
                        }
                    }
                    Some(_) => i += 1,
                }
                length += 1;
            }
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'"' {
                    return false;
                }
                i += 1;
                length += 1;
            }
        }
        if length > 255 {
            return false;
        }
        strings += 1;
    }
    strings > 0
}

fn check_policy(rtype: &str, policy: &Value, field: &str) -> Result<(), GoogleError> {
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

/// In a public zone Cloud DNS health-checks external endpoints only
/// through a health check: a `primaryBackup` policy with
/// `primaryTargets.externalEndpoints` and no `healthCheck` is refused.
///
/// # Errors
/// 400 `invalid` naming `{field}.routingPolicy.healthCheck`.
pub fn check_public_policy(set: &RecordSet, field: &str) -> Result<(), GoogleError> {
    let Some(policy) = &set.routing_policy else {
        return Ok(());
    };
    let external = policy
        .pointer("/primaryBackup/primaryTargets/externalEndpoints")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if external && policy.get("healthCheck").is_none_or(Value::is_null) {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}.routingPolicy.healthCheck': a routing policy with external endpoints in a public zone needs a health check."
        )));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouddns_txt_quoting() {
        assert!(valid_txt("\"heritage=external-dns,external-dns/owner=x\""));
        assert!(valid_txt("\"a\" \"b\""));
        assert!(valid_txt("bare"));
        assert!(valid_txt("\"with \\\" quote\""));
        assert!(!valid_txt("\"unterminated"));
        assert!(!valid_txt(""));
        assert!(!valid_txt(&format!("\"{}\"", "x".repeat(256))));
        assert!(valid_txt(&format!("\"{}\" \"{}\"", "x".repeat(255), "y".repeat(255))));
    }

    #[test]
    fn clouddns_names() {
        assert!(within("a.example.com.", "example.com."));
        assert!(within("example.com.", "example.com."));
        assert!(!within("badexample.com.", "example.com."));
        assert!(valid_name("*.example.com.", true));
        assert!(!valid_name("a.*.example.com.", true));
        assert!(!valid_name("example.com", true));
        assert!(!valid_name("a..com.", true));
    }

    #[test]
    fn clouddns_rrdata_per_type() {
        assert!(valid_rrdata("A", "192.0.2.1"));
        assert!(!valid_rrdata("A", "192.0.2"));
        assert!(!valid_rrdata("A", "2001:db8::1"));
        assert!(valid_rrdata("AAAA", "2001:db8::1"));
        assert!(valid_rrdata("CNAME", "lb.example.net."));
        assert!(!valid_rrdata("CNAME", "lb example."));
        assert!(valid_rrdata("MX", "10 mail.example.com."));
        assert!(valid_rrdata("SRV", "0 5 443 svc.example.com."));
        assert!(valid_rrdata(
            "SOA",
            "ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"
        ));
        assert!(valid_rrdata("CAA", "0 issue \"letsencrypt.org\""));
    }
}
