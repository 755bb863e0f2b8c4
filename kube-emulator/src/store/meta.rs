//! Metadata helpers every verb shares: reading and writing `metadata`
//! fields, the part `metadata.generation` tracks, generated name suffixes,
//! a Secret's `stringData`, and server-side apply's `managedFields`.

use serde_json::{json, Value};

/// RFC 3339 UTC time with second precision, as Kubernetes writes it.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).map_or_else(|_| now.to_string(), |t| t.to_string())
}

pub(super) fn meta(object: &Value, field: &str) -> Option<String> {
    object.get("metadata")?.get(field)?.as_str().map(str::to_owned)
}

pub(super) fn set_meta(object: &mut Value, field: &str, value: Value) {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    object["metadata"][field] = value;
}

pub(super) fn remove_meta(object: &mut Value, field: &str) {
    if let Some(Value::Object(m)) = object.get_mut("metadata") {
        m.remove(field);
    }
}

/// The object without metadata (and without status when `has_status`):
/// what `metadata.generation` tracks.
pub(super) fn spec_part(object: &Value, has_status: bool) -> Value {
    let mut copy = object.clone();
    if let Value::Object(m) = &mut copy {
        m.remove("metadata");
        if has_status {
            m.remove("status");
        }
    }
    copy
}

pub(super) fn random_suffix() -> String {
    uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(5)
        .collect()
}

/// As the real server: `stringData` is merged into `data` (base64) and
/// never stored.
pub(super) fn normalize_secret(object: &mut Value) {
    use base64::Engine;
    let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    if !object.get("data").is_some_and(Value::is_object) {
        object["data"] = json!({});
    }
    for (key, value) in strings {
        let text = value.as_str().unwrap_or_default();
        object["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

pub(super) fn add_managed_fields(object: &mut Value, manager: Option<&str>, api_version: &str) {
    let entry = json!({
        "manager": manager.unwrap_or("unknown"),
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    });
    let managed = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut managed: Vec<Value> = managed
        .into_iter()
        .filter(|m| m.get("manager").and_then(Value::as_str) != manager.or(Some("unknown")))
        .collect();
    managed.push(entry);
    set_meta(object, "managedFields", Value::Array(managed));
}
