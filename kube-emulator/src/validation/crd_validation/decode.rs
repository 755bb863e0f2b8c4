//! What decoding refuses before any validation: kube-apiserver answers
//! 400 BadRequest when a schema keyword has the wrong JSON type
//! (`json.Unmarshal` into `JSONSchemaProps` and its `UnmarshalJSON`s in
//! `apiextensions-apiserver/pkg/apis/apiextensions/v1/marshal.go`); here that
//! is reported as an error at the keyword's path (`Invalid value: …: cannot
//! be decoded …`).

use serde_json::Value;

use super::field::{invalid, Errors, Path};
use super::schema_node::{list, obj};

/// What `json.Unmarshal` into `JSONSchemaProps` would refuse.
pub(super) fn check_decode(v: &Value, p: &Path, errs: &mut Errors) {
    let Some(n) = v.as_object() else {
        if !v.is_null() {
            errs.push(invalid(p, v, "cannot be decoded: expected a JSON object (kube-apiserver rejects the request body with 400 BadRequest)"));
        }
        return;
    };
    let mut bad = |k: &str, expected: &str| {
        if let Some(x) = n.get(k) {
            errs.push(invalid(&p.child(k), x, &format!("cannot be decoded: expected {expected} (kube-apiserver rejects the request body with 400 BadRequest)")));
        }
    };
    let is = |k: &str, f: &dyn Fn(&Value) -> bool| n.get(k).is_none_or(|x| x.is_null() || f(x));
    let string_array = |x: &Value| x.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    for k in [
        "id",
        "$schema",
        "$ref",
        "description",
        "type",
        "format",
        "title",
        "pattern",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ] {
        if !is(k, &Value::is_string) {
            bad(k, "a string");
        }
    }
    for k in ["maximum", "minimum", "multipleOf"] {
        if !is(k, &Value::is_number) {
            bad(k, "a number");
        }
    }
    for k in [
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "maxProperties",
        "minProperties",
    ] {
        if !is(k, &|x: &Value| x.is_i64()) {
            bad(k, "an integer");
        }
    }
    for k in [
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if !is(k, &Value::is_boolean) {
            bad(k, "a boolean");
        }
    }
    for k in ["required", "x-kubernetes-list-map-keys"] {
        if !is(k, &string_array) {
            bad(k, "an array of strings");
        }
    }
    for k in ["enum", "allOf", "oneOf", "anyOf", "x-kubernetes-validations"] {
        if !is(k, &Value::is_array) {
            bad(k, "an array");
        }
    }
    for k in [
        "not",
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
        "externalDocs",
    ] {
        if !is(k, &Value::is_object) {
            bad(k, "an object");
        }
    }
    for k in ["additionalProperties", "additionalItems"] {
        if !is(k, &|x: &Value| x.is_object() || x.is_boolean()) {
            bad(k, "a schema or a boolean");
        }
    }
    if !is("items", &|x: &Value| x.is_object() || x.is_array()) {
        bad("items", "a schema or an array of schemas");
    }
    for (i, r) in list(n, "x-kubernetes-validations").iter().enumerate() {
        let rp = p.child("x-kubernetes-validations").index(i);
        match r.as_object() {
            None => errs.push(invalid(
                &rp,
                r,
                "cannot be decoded: expected an object (kube-apiserver rejects the request body with 400 BadRequest)",
            )),
            Some(r) => {
                for k in ["rule", "message", "messageExpression", "reason", "fieldPath"] {
                    if r.get(k).is_some_and(|x| !x.is_null() && !x.is_string()) {
                        errs.push(invalid(&rp.child(k), &r[k], "cannot be decoded: expected a string (kube-apiserver rejects the request body with 400 BadRequest)"));
                    }
                }
            }
        }
    }
    for k in ["not", "additionalProperties", "additionalItems"] {
        if let Some(c) = n.get(k).filter(|c| c.is_object()) {
            check_decode(c, &p.child(k), errs);
        }
    }
    match n.get("items") {
        Some(c @ Value::Object(_)) => check_decode(c, &p.child("items"), errs),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| check_decode(c, &p.child("items").index(i), errs)),
        _ => {}
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, c) in list(n, k).iter().enumerate() {
            check_decode(c, &p.child(k).index(i), errs);
        }
    }
    for k in ["properties", "patternProperties", "definitions"] {
        for (name, c) in obj(n, k).into_iter().flatten() {
            check_decode(c, &p.child(k).key(name), errs);
        }
    }
    for (name, c) in obj(n, "dependencies").into_iter().flatten() {
        if !c.is_object() && !string_array(c) && !c.is_null() {
            errs.push(invalid(&p.child("dependencies").key(name), c, "cannot be decoded: expected a schema or an array of strings (kube-apiserver rejects the request body with 400 BadRequest)"));
        } else if c.is_object() {
            check_decode(c, &p.child("dependencies").key(name), errs);
        }
    }
}
