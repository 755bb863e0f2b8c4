//! The OpenAPI checks on every node of a schema: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (`ValidateCustomResourceDefinitionOpenAPISchema`, `specStandardValidatorV3`,
//! the list and map type checks, `validateMapListKeysMapSet`, and the
//! plain-text checks on `x-kubernetes-validations`: `rule`, `message`,
//! `messageExpression`, `reason`, `fieldPath`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{forbidden, invalid, not_supported, required, s, Errors, Path};
use super::json::{flag, present, strings, text, Obj};
use super::schema_node::{
    has_default, item_schema, items, obj, opt_str, or_bool, prop_iter, props, schemas, ty, Items,
};

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

#[derive(Clone)]
pub(super) struct Ssv {
    pub(super) allow_defaults: bool,
    pub(super) reason: String,
    pub(super) inside_meta: bool,
}

impl Ssv {
    fn with_forbidden_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            reason: reason.to_owned(),
            ..self.clone()
        }
    }
    fn with_inside_meta(&self) -> Ssv {
        Ssv {
            inside_meta: true,
            ..self.clone()
        }
    }

    fn validate(&self, n: &Obj, p: &Path, errs: &mut Errors) {
        let t = ty(n);
        if !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t) {
            errs.push(not_supported(&p.child("type"), t, &OPENAPI_V3_TYPES));
        }
        if has_default(n) && !self.allow_defaults {
            let mut detail = "must not be set".to_owned();
            if !self.reason.is_empty() {
                detail = format!("{detail} {}", self.reason);
            }
            errs.push(forbidden(&p.child("default"), &detail));
        }
        if opt_str(n, "id").is_some_and(|x| !x.is_empty()) {
            errs.push(forbidden(&p.child("id"), "id is not supported"));
        }
        if present(n, "additionalItems").is_some() {
            errs.push(forbidden(
                &p.child("additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if obj(n, "patternProperties").is_some_and(|m| !m.is_empty()) {
            errs.push(forbidden(
                &p.child("patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if obj(n, "definitions").is_some_and(|m| !m.is_empty()) {
            errs.push(forbidden(&p.child("definitions"), "definitions is not supported"));
        }
        if present(n, "dependencies").is_some() {
            errs.push(forbidden(&p.child("dependencies"), "dependencies is not supported"));
        }
        if present(n, "$ref").is_some() {
            errs.push(forbidden(&p.child("$ref"), "$ref is not supported"));
        }
        if t == "null" {
            errs.push(forbidden(
                &p.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(items(n), Some(Items::Array(a)) if !a.is_empty()) {
            errs.push(forbidden(
                &p.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_meta && flag(n, "x-kubernetes-embedded-resource") {
            errs.push(forbidden(
                &p.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

pub(super) fn openapi_schema(n: &Obj, p: &Path, ssv: &Ssv, is_root: bool, errs: &mut Errors) {
    ssv.validate(n, p, errs);
    if flag(n, "uniqueItems") {
        errs.push(forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = props(n).filter(|m| !m.is_empty());
    if let Some((allows, schema)) = or_bool(n, "additionalProperties") {
        if properties.is_some() && (!allows || schema.is_some()) {
            errs.push(forbidden(
                &p.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let Some(a) = schema {
            openapi_schema(a, &p.child("additionalProperties"), &sub, false, errs);
        }
    }
    let embedded = flag(n, "x-kubernetes-embedded-resource");
    for (k, f) in prop_iter(n, "properties") {
        let mut sub = ssv.clone();
        if (is_root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub = sub.with_inside_meta();
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {k}"));
            }
        }
        openapi_schema(f, &p.child("properties").key(k), &sub, false, errs);
    }
    if let Some(x) = obj(n, "not") {
        openapi_schema(x, &p.child("not"), ssv, false, errs);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, x) in schemas(n, k) {
            openapi_schema(x, &p.child(k).index(i), ssv, false, errs);
        }
    }
    for (k, x) in prop_iter(n, "definitions") {
        openapi_schema(x, &p.child("definitions").key(k), ssv, false, errs);
    }
    match items(n) {
        Some(Items::Schema(x)) => openapi_schema(x, &p.child("items"), ssv, false, errs),
        Some(Items::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                if let Some(x) = x.as_object() {
                    openapi_schema(x, &p.child("items").index(i), ssv, false, errs);
                }
            }
        }
        None => {}
    }
    for (k, x) in prop_iter(n, "dependencies") {
        openapi_schema(x, &p.child("dependencies").key(k), ssv, false, errs);
    }
    if n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_types(n, p, errs);
    validate_map_list_keys_map_set(n, p, errs);
    validation_rules(n, p, errs);
}

fn list_and_map_types(n: &Obj, p: &Path, errs: &mut Errors) {
    let t = ty(n);
    let map_type = opt_str(n, "x-kubernetes-map-type");
    let list_type = opt_str(n, "x-kubernetes-list-type");
    if let Some(mt) = map_type {
        if t != "object" {
            if t.is_empty() {
                errs.push(required(
                    &p.child("type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errs.push(invalid(
                    &p.child("type"),
                    &s(t),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(not_supported(
                &p.child("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    if list_type.is_some() && t != "array" {
        if t.is_empty() {
            errs.push(required(
                &p.child("type"),
                "must be array if x-kubernetes-list-type is specified",
            ));
        } else {
            errs.push(invalid(
                &p.child("type"),
                &s(t),
                "must be array if x-kubernetes-list-type is specified",
            ));
        }
    } else if let (Some("set"), Some(is)) = (list_type, item_schema(n)) {
        let items_list_type = opt_str(is, "x-kubernetes-list-type");
        let bad_value = items_list_type.map(s).unwrap_or(Value::Null);
        match ty(is) {
            "array" if items_list_type.is_some_and(|x| x != "atomic") => {
                errs.push(invalid(
                    &p.child("items").child("x-kubernetes-list-type"),
                    &bad_value,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            "object" if opt_str(is, "x-kubernetes-map-type") != Some("atomic") => {
                errs.push(invalid(
                    &p.child("items").child("x-kubernetes-map-type"),
                    &bad_value,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|x| !matches!(*x, "atomic" | "set" | "map")) {
        errs.push(not_supported(
            &p.child("x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys: Vec<String> = strings(n, "x-kubernetes-list-map-keys");
    let keys_value = || Value::Array(keys.iter().map(|k| s(k)).collect());
    if !keys.is_empty() {
        match list_type {
            None => errs.push(required(
                &p.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(invalid(
                &p.child("x-kubernetes-list-type"),
                &s(lt),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(required(
                &p.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items(n) {
            None => errs.push(required(
                &p.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Array(a)) => errs.push(invalid(
                &p.child("items"),
                &Value::Array(a.to_vec()),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Schema(is)) if ty(is) != "object" => {
                errs.push(invalid(
                    &p.child("items").child("type"),
                    &s(ty(is)),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(Items::Schema(is)) => {
                let mut seen = BTreeSet::new();
                for k in &keys {
                    match props(is).and_then(|m| m.get(k)).and_then(Value::as_object) {
                        Some(ks) => {
                            if matches!(ty(ks), "array" | "object") {
                                errs.push(invalid(
                                    &p.child("items").child("properties").key(k).child("type"),
                                    &s(ty(is)),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(invalid(
                            &p.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k.as_str()) {
                        errs.push(invalid(
                            &p.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
}

fn validate_map_list_keys_map_set(n: &Obj, p: &Path, errs: &mut Errors) {
    let Some(is) = item_schema(n) else { return };
    let Some(lt) = opt_str(n, "x-kubernetes-list-type").filter(|x| matches!(*x, "set" | "map")) else {
        return;
    };
    if flag(is, "nullable") {
        errs.push(forbidden(
            &p.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required_props = strings(is, "required");
        for k in strings(n, "x-kubernetes-list-map-keys") {
            let Some(ks) = props(is).and_then(|m| m.get(&k)).and_then(Value::as_object) else {
                continue;
            };
            let kp = p.child("items").child("properties").key(&k);
            if !required_props.contains(&k) && ks.get("default").is_none_or(Value::is_null) {
                errs.push(required(&kp.child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
            }
            if flag(ks, "nullable") {
                errs.push(forbidden(
                    &kp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
}

/// The plain-text checks on `x-kubernetes-validations` (CEL itself is not compiled here).
fn validation_rules(n: &Obj, p: &Path, errs: &mut Errors) {
    const REASONS: [&str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];
    let newlines = |x: &str| x.contains(['\n', '\r']);
    for (i, r) in schemas(n, "x-kubernetes-validations") {
        let rp = p.child("x-kubernetes-validations").index(i);
        let rule = text(r, "rule");
        let message = text(r, "message");
        let message_expression = text(r, "messageExpression");
        let field_path = text(r, "fieldPath");
        let (trimmed_rule, trimmed_msg) = (rule.trim(), message.trim());
        if trimmed_rule.is_empty() {
            errs.push(required(&rp.child("rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(invalid(
                &rp.child("message"),
                &s(&message),
                "must be non-empty if specified",
            ));
        } else if newlines(trimmed_msg) {
            errs.push(invalid(
                &rp.child("message"),
                &s(&message),
                "must not contain line breaks",
            ));
        } else if newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = opt_str(r, "reason") {
            if !REASONS.contains(&reason) {
                errs.push(not_supported(&rp.child("reason"), reason, &REASONS));
            }
        }
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(invalid(
                &rp.child("fieldPath"),
                &s(&field_path),
                "must be non-empty if specified",
            ));
        }
        if newlines(&field_path) {
            errs.push(invalid(
                &rp.child("fieldPath"),
                &s(&field_path),
                "must not contain line breaks",
            ));
        }
    }
}
