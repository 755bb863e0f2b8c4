//! CRD structural schemas, applied to custom resources the way the real
//! API server does: prune unknown fields, apply `default`s, then validate
//! (types, enums, patterns, bounds) with field paths in the errors.
//!
//! CEL rules (`x-kubernetes-validations`) are evaluated by [`crate::validation::cel`]
//! after the OpenAPI checks, with the old object on updates (transition
//! rules). String `format`s are checked by [`crate::validation::formats`] (those
//! kube-apiserver checks) and the uniqueness of `set` and `map` list
//! types by [`crate::validation::list_types`].

use serde_json::{Map, Value};

/// A compiled `openAPIV3Schema`.
pub struct CrdSchema {
    schema: Value,
    validator: jsonschema::Validator,
    rules: crate::validation::cel::CelRules,
}

impl std::fmt::Debug for CrdSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdSchema").finish_non_exhaustive()
    }
}

impl CrdSchema {
    /// Compiles a CRD version's `openAPIV3Schema`.
    ///
    /// # Errors
    /// The schema is not a valid JSON schema once OpenAPI's `nullable` and
    /// `x-kubernetes-int-or-string` are translated, or one of its CEL rules
    /// does not compile or calls what the emulator cannot evaluate (each
    /// such rule named, with its path under `openAPIV3Schema`).
    pub fn new(schema: Value) -> Result<Self, String> {
        let rules = crate::validation::cel::CelRules::compile(&schema).map_err(|errors| {
            errors
                .iter()
                .map(|(path, message)| format!("openAPIV3Schema.{path}: {message}"))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let mut json_schema = schema.clone();
        translate(&mut json_schema);
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .build(&json_schema)
            .map_err(|e| format!("openAPIV3Schema does not compile: {e}"))?;
        Ok(CrdSchema {
            schema,
            validator,
            rules,
        })
    }

    /// Prunes unknown fields and applies defaults, in place. `apiVersion`,
    /// `kind` and `metadata` at the top are never pruned.
    pub fn prune_and_default(&self, object: &mut Value) {
        prune(object, &self.schema, true);
        apply_defaults(object, &self.schema);
    }

    /// Validation failures as (field path, message), e.g.
    /// `("spec.recordTTL", "0 is less than the minimum of 1")`.
    pub fn validate(&self, object: &Value) -> Vec<(String, String)> {
        self.validate_update(object, None)
    }

    /// [`Self::validate`], then the CEL rules with `old` as `oldSelf` (the
    /// stored object on an update; `None` on a create). CEL rules run only
    /// when the OpenAPI checks pass, as the API server's validator does
    /// not reach them for a value of the wrong shape.
    pub fn validate_update(&self, object: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let mut errors: Vec<(String, String)> = self.validator.iter_errors(object).map(|e| cause(&e)).collect();
        // After the JSON Schema checks, which know neither OpenAPI's
        // formats nor Kubernetes' list types (upstream runs these beside
        // the OpenAPI validator, so both kinds are reported together).
        errors.extend(format_errors(object, &self.schema));
        errors.extend(crate::validation::list_types::duplicates(object, &self.schema));
        if !errors.is_empty() {
            return errors;
        }
        self.rules.validate(object, old)
    }
}

/// OpenAPI v3 → JSON Schema: `nullable: true` allows null;
/// `x-kubernetes-int-or-string` drops the type.
fn translate(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        map.remove("type");
        map.insert(
            "anyOf".into(),
            serde_json::json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(t)) = map.get("type").cloned() {
            map.insert("type".into(), serde_json::json!([t, "null"]));
        }
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
    }
    for (_, child) in map.iter_mut() {
        match child {
            Value::Object(_) => translate(child),
            Value::Array(items) => items.iter_mut().for_each(translate),
            _ => {}
        }
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(translate);
    }
}

fn preserves_unknown(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        || schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
}

fn prune(value: &mut Value, schema: &Value, root: bool) {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let keep_unknown = preserves_unknown(schema) || additional == Some(&Value::Bool(true));
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_schema = properties
                    .and_then(|p| p.get(&key))
                    .or_else(|| additional.filter(|a| a.is_object()));
                match child_schema {
                    Some(child_schema) => {
                        if let Some(child) = map.get_mut(&key) {
                            prune(child, child_schema, false);
                        }
                    }
                    None if keep_unknown => {}
                    None => {
                        map.remove(&key);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune(item, item_schema, false);
                }
            }
        }
        _ => {}
    }
}

fn apply_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, child_schema) in properties {
                    if !map.contains_key(key) {
                        if let Some(default) = child_schema.get("default") {
                            map.insert(key.clone(), default.clone());
                        }
                    }
                    if let Some(child) = map.get_mut(key) {
                        apply_defaults(child, child_schema);
                    }
                }
            }
            if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let known: Map<String, Value> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                for (key, child) in map.iter_mut() {
                    if !known.contains_key(key) {
                        apply_defaults(child, additional);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// String values whose schema's `format` they do not meet, as
/// kube-openapi reports them (`field.TypeInvalid`): `Invalid value:
/// "x": spec.caBundle in body must be of type byte: "x"`.
fn format_errors(object: &Value, schema: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, schema: &Value, path: &str, errors: &mut Vec<(String, String)>) {
        match value {
            Value::String(text) => {
                if let Some(format) = schema.get("format").and_then(Value::as_str) {
                    if !crate::validation::formats::is_valid(format, text) {
                        let path = if path.is_empty() { "<root>" } else { path };
                        errors.push((
                            path.to_owned(),
                            format!("Invalid value: {value}: {path} in body must be of type {format}: {value}"),
                        ));
                    }
                }
            }
            Value::Object(map) => {
                let properties = schema.get("properties").and_then(Value::as_object);
                let additional = schema.get("additionalProperties").filter(|a| a.is_object());
                for (key, item) in map {
                    match (properties.and_then(|p| p.get(key)), additional) {
                        (Some(sub), _) if path.is_empty() => walk(item, sub, key, errors),
                        (Some(sub), _) => walk(item, sub, &format!("{path}.{key}"), errors),
                        (None, Some(sub)) => walk(item, sub, &format!("{path}[{key}]"), errors),
                        (None, None) => {}
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        walk(item, item_schema, &format!("{path}[{i}]"), errors);
                    }
                }
            }
            _ => {}
        }
    }
    let mut errors = Vec::new();
    walk(object, schema, "", &mut errors);
    errors
}

/// One failure as (field path, message). A missing required property is
/// reported at the property itself, `Required value`, as kube-openapi's
/// validator does (`spec.apiEndpoint: Required value`), where JSON Schema
/// names the parent object.
fn cause(e: &jsonschema::ValidationError<'_>) -> (String, String) {
    let path = field_path(&e.instance_path().to_string());
    match e.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => {
            let property = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            let path = if path == "<root>" {
                property
            } else {
                format!("{path}.{property}")
            };
            (path, "Required value".to_owned())
        }
        _ => (path, e.to_string()),
    }
}

/// `/spec/endpoints/0/targets` → `spec.endpoints[0].targets`.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    if out.is_empty() {
        "<root>".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> CrdSchema {
        CrdSchema::new(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "ttl": {"type": "integer", "minimum": 1, "default": 30},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "nullable": true},
                        "mode": {"type": "string", "enum": ["A", "B"]},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "port": {"x-kubernetes-int-or-string": true},
                    },
                    "required": ["mode"],
                },
                "status": {"type": "object", "nullable": true, "properties": {"ok": {"type": "boolean"}}},
            },
        }))
        .unwrap()
    }

    #[test]
    fn prunes_unknown_fields_and_defaults() {
        let s = schema();
        let mut o = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "extra": 1},
            "spec": {"mode": "A", "bogus": 1, "items": [{"x": "1", "y": 2}], "free": {"any": {"thing": 1}},
                     "labels": {"a": "b"}, "port": "http", "name": null},
            "junk": true,
        });
        s.prune_and_default(&mut o);
        assert_eq!(o["metadata"]["extra"], 1, "metadata is not pruned");
        assert!(o.get("junk").is_none());
        assert!(o["spec"].get("bogus").is_none());
        assert_eq!(o["spec"]["items"][0], json!({"x": "1"}));
        assert_eq!(o["spec"]["free"]["any"]["thing"], 1);
        assert_eq!(o["spec"]["ttl"], 30);
        assert!(s.validate(&o).is_empty(), "{:?}", s.validate(&o));
    }

    #[test]
    fn reports_field_paths() {
        let s = schema();
        let o = json!({"spec": {"mode": "C", "ttl": 0, "name": "UP", "items": [{"x": 1}]}});
        let errors = s.validate(&o);
        let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
        for expected in ["spec.mode", "spec.ttl", "spec.name", "spec.items[0].x"] {
            assert!(fields.contains(&expected), "{expected} missing from {errors:?}");
        }
        let missing = s.validate(&json!({"spec": {}}));
        assert_eq!(missing, [("spec.mode".to_owned(), "Required value".to_owned())]);
    }

    #[test]
    fn formats_and_list_types_are_checked_with_the_rest() {
        let s = CrdSchema::new(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "ca": {"type": "string", "format": "byte"},
                "at": {"type": "string", "format": "date-time"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                               "items": {"type": "object", "properties": {"type": {"type": "string"}}}},
            }}}}),
        )
        .unwrap();
        let good =
            json!({"spec": {"ca": "YWJj", "at": "2026-01-01T00:00:00Z", "conditions": [{"type": "A"}, {"type": "B"}]}});
        assert!(s.validate(&good).is_empty(), "{:?}", s.validate(&good));
        let bad = json!({"spec": {"ca": "abc...", "at": "yesterday", "conditions": [{"type": "A"}, {"type": "A"}]}});
        let errors = s.validate(&bad);
        assert_eq!(
            errors,
            [
                (
                    "spec.at".to_owned(),
                    r#"Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday""#.to_owned()
                ),
                (
                    "spec.ca".to_owned(),
                    r#"Invalid value: "abc...": spec.ca in body must be of type byte: "abc...""#.to_owned()
                ),
                (
                    "spec.conditions[1]".to_owned(),
                    r#"Duplicate value: {"type":"A"}"#.to_owned()
                ),
            ]
        );
    }
}
