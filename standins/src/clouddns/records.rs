//! Resource record sets: the JSON shape, parsing a request's record set
//! with the real API's field paths in errors, and per-type validation of
//! names and TTLs; rrdatas are checked by `rrdata.rs`, routing policies
//! by `policy.rs`.

use serde_json::{json, Map, Value};

use super::error::GoogleError;
use super::names::{valid_name, within};
use super::policy::check_policy;
use super::rrdata::check_rrdatas;

/// Types Cloud DNS accepts in a record set.
pub const TYPES: &[&str] = &[
    "A", "AAAA", "CAA", "CNAME", "DNSKEY", "DS", "HTTPS", "IPSECKEY", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF", "SRV",
    "SSHFP", "SVCB", "TLSA", "TXT",
];

/// Largest TTL accepted (a signed 32-bit number of seconds).
pub const MAX_TTL: i64 = i32::MAX as i64;

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
