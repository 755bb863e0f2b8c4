//! Structural schemas: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/convert.go` (`NewStructural`:
//! what is structural, what is value validation, unsupported keywords),
//! `validation.go` (`ValidateStructural`: structural invariants, value
//! validations under `anyOf`/`allOf`/`oneOf`/`not`, int-or-string patterns,
//! metadata restrictions) and `complete.go` (`validateStructuralCompleteness`).
//! Go's RE2 is not available: a `pattern` must compile as a
//! [`crate::validation::schema::CrdSchema`] pattern instead.

use serde_json::{Map, Value};

use super::field::{forbidden, invalid, required, s, Errors, Path};
use super::json::{flag, present, Obj};
use super::schema_node::{
    has_default, item_schema, items, list, obj, opt_str, or_bool, preserve, prop_iter, props, schemas, set_fields, ty,
    Items,
};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

pub(super) fn validate_structural(n: &Obj, p: &Path) -> Errors {
    let mut errs = Errors::new();
    structural_invariants(n, Level::Root, p, &mut errs);
    structural_completeness(n, p, &mut errs);
    errs.sort_by_cached_key(|(path, msg)| format!("{path}: {msg}"));
    errs
}

fn structural_invariants(n: &Obj, lvl: Level, p: &Path, errs: &mut Errors) {
    let t = ty(n);
    let item = item_schema(n);
    if t == "array" && item.is_none() {
        errs.push(required(&p.child("items"), "must be specified"));
    }
    if let Some(i) = item {
        structural_invariants(i, Level::Item, &p.child("items"), errs);
    }
    for (k, v) in prop_iter(n, "properties") {
        structural_invariants(v, Level::Field, &p.child("properties").key(k), errs);
    }
    let addl = or_bool(n, "additionalProperties");
    if let Some((_, schema)) = addl {
        if lvl == Level::Root {
            errs.push(forbidden(
                &p.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(a) = schema {
            structural_invariants(a, Level::Field, &p.child("additionalProperties"), errs);
        }
    }
    let ios = flag(n, "x-kubernetes-int-or-string");
    let embedded = flag(n, "x-kubernetes-embedded-resource");
    let keep = preserve(n);
    if ios && keep {
        errs.push(invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if ios && embedded {
        errs.push(invalid(
            &p.child("x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(list(n, "anyOf"));
    let skip_first_all_of_any_of = list(n, "allOf")
        .first()
        .and_then(Value::as_object)
        .is_some_and(|a| is_int_or_string_any_of(list(a, "anyOf")));
    value_validation(n, skip_any_of, skip_first_all_of_any_of, lvl, p, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && t != "object" {
        if t.is_empty() {
            errs.push(required(
                &p.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(invalid(
                &p.child("type"),
                &s(t),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if t.is_empty() && !ios && !keep {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(&p.child("type"), detail));
    }
    if embedded && addl.is_some() {
        errs.push(forbidden(
            &p.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(invalid(&p.child("type"), &s(t), "must be object at the root"));
    }
    let properties = props(n);
    for meta_field in ["kind", "apiVersion"] {
        if let Some(f) = properties.and_then(|m| m.get(meta_field)).and_then(Value::as_object) {
            if check_metadata && ty(f) != "string" {
                errs.push(invalid(
                    &p.child("properties").key(meta_field).child("type"),
                    &s(ty(f)),
                    "must be string",
                ));
            }
        }
    }
    if let Some(m) = properties.and_then(|m| m.get("metadata")).and_then(Value::as_object) {
        metadata_invariants(m, check_metadata, lvl, &p.child("properties").key("metadata"), errs);
    }
    if embedded && !keep && properties.is_none_or(Map::is_empty) {
        errs.push(required(
            &p.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(m: &Obj, check_metadata: bool, lvl: Level, p: &Path, errs: &mut Errors) {
    if check_metadata && ty(m) != "object" {
        errs.push(invalid(&p.child("type"), &s(ty(m)), "must be object"));
    }
    if lvl == Level::Root {
        let keys: Vec<&str> = props(m)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let name = keys.contains(&"name");
        let generate_name = keys.contains(&"generateName");
        let cleared = (name && generate_name && keys.len() == 2) || ((name || generate_name) && keys.len() == 1);
        let rest: Vec<&str> = set_fields(m, true)
            .into_iter()
            .filter(|f| !(matches!(*f, "Type" | "Default") || (cleared && *f == "Properties")))
            .collect();
        if !rest.is_empty() {
            errs.push(forbidden(
                p,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

/// `anyOf: [{type: integer}, {type: string}]` and nothing else in either.
fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    let bare = |v: &Value, t: &str| {
        v.as_object()
            .is_some_and(|o| ty(o) == t && set_fields(o, true) == ["Type"])
    };
    any_of.len() == 2 && bare(&any_of[0], "integer") && bare(&any_of[1], "string")
}

fn value_validation(
    n: &Obj,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &Path,
    errs: &mut Errors,
) {
    if !skip_any_of {
        for (i, v) in schemas(n, "anyOf") {
            nested_value_validation(v, false, lvl, &p.child("anyOf").index(i), errs);
        }
    }
    for (i, v) in schemas(n, "allOf") {
        nested_value_validation(
            v,
            skip_first_all_of_any_of && i == 0,
            lvl,
            &p.child("allOf").index(i),
            errs,
        );
    }
    for (i, v) in schemas(n, "oneOf") {
        nested_value_validation(v, false, lvl, &p.child("oneOf").index(i), errs);
    }
    if let Some(v) = obj(n, "not") {
        nested_value_validation(v, false, lvl, &p.child("not"), errs);
    }
    if let Some(pattern) = opt_str(n, "pattern").filter(|x| !x.is_empty()) {
        if let Err(e) =
            crate::validation::schema::CrdSchema::new(serde_json::json!({"type": "string", "pattern": pattern}))
        {
            errs.push(invalid(
                &p.child("pattern"),
                &s(pattern),
                &format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

fn nested_value_validation(v: &Obj, skip_any_of: bool, lvl: Level, p: &Path, errs: &mut Errors) {
    value_validation(v, skip_any_of, false, lvl, p, errs);
    if let Some(i) = item_schema(v) {
        nested_value_validation(i, false, lvl, &p.child("items"), errs);
    }
    for (k, f) in prop_iter(v, "properties") {
        nested_value_validation(f, false, Level::Field, &p.child("properties").key(k), errs);
    }
    if !ty(v).is_empty() {
        errs.push(forbidden(&p.child("type"), "must be empty to be structural"));
    }
    // additionalProperties: false is dropped by newNestedValueValidation.
    if matches!(or_bool(v, "additionalProperties"), Some((true, _))) {
        errs.push(forbidden(
            &p.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if has_default(v) {
        errs.push(forbidden(&p.child("default"), "must be undefined to be structural"));
    }
    for k in ["title", "description"] {
        if opt_str(v, k).is_some_and(|x| !x.is_empty()) {
            errs.push(forbidden(&p.child(k), "must be empty to be structural"));
        }
    }
    if flag(v, "nullable") {
        errs.push(forbidden(&p.child("nullable"), "must be false to be structural"));
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, k) {
            errs.push(forbidden(&p.child(k), "must be false to be structural"));
        }
    }
    if !list(v, "x-kubernetes-list-map-keys").is_empty() {
        errs.push(forbidden(
            &p.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if opt_str(v, k).is_some() {
            errs.push(forbidden(&p.child(k), "must be undefined to be structural"));
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        errs.push(forbidden(
            &p.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if props(v).is_some_and(|m| m.contains_key("metadata")) {
        errs.push(forbidden(
            &p.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: only the root's value validations, as upstream.
fn structural_completeness(n: &Obj, p: &Path, errs: &mut Errors) {
    value_completeness(n, n, p, p, errs);
}

fn value_completeness(v: &Obj, s: &Obj, sp: &Path, vp: &Path, errs: &mut Errors) {
    if let Some(x) = obj(v, "not") {
        nested_completeness(x, Some(s), sp, &vp.child("not"), errs);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, x) in schemas(v, k) {
            nested_completeness(x, Some(s), sp, &vp.child(k).index(i), errs);
        }
    }
}

fn nested_completeness(v: &Obj, s: Option<&Obj>, sp: &Path, vp: &Path, errs: &mut Errors) {
    let Some(s) = s else {
        errs.push(required(sp, &format!("because it is defined in {}", vp.0)));
        return;
    };
    value_completeness(v, s, sp, vp, errs);
    if let Some(i) = item_schema(v) {
        nested_completeness(i, item_schema(s), &sp.child("items"), &vp.child("items"), errs);
    }
    for (k, f) in prop_iter(v, "properties") {
        match props(s).and_then(|m| m.get(k)).and_then(Value::as_object) {
            Some(sf) => nested_completeness(
                f,
                Some(sf),
                &sp.child("properties").key(k),
                &vp.child("properties").key(k),
                errs,
            ),
            None => errs.push(required(
                &sp.child("properties").key(k),
                &format!("because it is defined in {}", vp.child("properties").key(k).0),
            )),
        }
    }
}

/// `NewStructural`'s refusals (`validateUnsupportedFields`, items arrays,
/// `x-kubernetes-preserve-unknown-fields: false`), first one found.
pub(super) fn new_structural_error(n: &Obj) -> Option<String> {
    let nonempty_str = |k: &str| opt_str(n, k).is_some_and(|x| !x.is_empty());
    let nonempty_map = |k: &str| obj(n, k).is_some_and(|m| !m.is_empty());
    if nonempty_str("id") {
        return Some("OpenAPIV3Schema 'id' is not supported".into());
    }
    if nonempty_str("$schema") {
        return Some("OpenAPIV3Schema 'schema' is not supported".into());
    }
    if nonempty_str("$ref") {
        return Some("OpenAPIV3Schema '$ref' is not supported".into());
    }
    if nonempty_map("patternProperties") {
        return Some("OpenAPIV3Schema 'patternProperties' is not supported".into());
    }
    if nonempty_map("dependencies") {
        return Some("OpenAPIV3Schema 'dependencies' is not supported".into());
    }
    if present(n, "additionalItems").is_some() {
        return Some("OpenAPIV3Schema 'additionalItems' is not supported".into());
    }
    if nonempty_map("definitions") {
        return Some("OpenAPIV3Schema 'definitions' is not supported".into());
    }
    if n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".into());
    }
    match items(n) {
        Some(Items::Array(a)) if !a.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into())
        }
        Some(Items::Schema(o)) => {
            if let Some(e) = new_structural_error(o) {
                return Some(e);
            }
        }
        _ => {}
    }
    let mut children: Vec<&Obj> = Vec::new();
    children.extend(prop_iter(n, "properties").map(|(_, o)| o));
    children.extend(obj(n, "additionalProperties"));
    children.extend(obj(n, "not"));
    for k in ["allOf", "anyOf", "oneOf"] {
        children.extend(schemas(n, k).map(|(_, o)| o));
    }
    children.into_iter().find_map(new_structural_error)
}
