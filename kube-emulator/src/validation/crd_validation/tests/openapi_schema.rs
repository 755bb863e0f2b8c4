//! The OpenAPI checks ([`super::super::openapi_schema`]): forbidden keywords,
//! types, `additionalProperties`, embedded resources, extensions, list and
//! map types, the plain-text checks on `x-kubernetes-validations`.

use serde_json::json;

use super::{accepted, crd, expect, validate_crd, with_props, ROOT};

#[test]
fn forbidden_keywords() {
    let errs = validate_crd(&with_props(json!({
        "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "b": {"type": "string", "$ref": "#/definitions/x"},
        "c": {"type": "array", "items": [{"type": "string"}]},
        "d": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        "e": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
        "f": {"type": "object", "dependencies": {"x": ["y"]}},
        "g": {"type": "object", "definitions": {"x": {"type": "string"}}},
        "h": {"type": "string", "id": "x"},
        "i": {"type": "null"},
    })));
    for (field, msg) in [
        (
            "a].uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ),
        ("b].$ref", "Forbidden: $ref is not supported"),
        ("c].items", "Forbidden: items must be a schema object and not an array"),
        ("d].patternProperties", "Forbidden: patternProperties is not supported"),
        ("e].additionalItems", "Forbidden: additionalItems is not supported"),
        ("f].dependencies", "Forbidden: dependencies is not supported"),
        ("g].definitions", "Forbidden: definitions is not supported"),
        ("h].id", "Forbidden: id is not supported"),
        (
            "i].type",
            "Forbidden: type cannot be set to null, use nullable as an alternative",
        ),
    ] {
        expect(&errs, &format!("{ROOT}.properties[{field}"), msg);
    }
}

#[test]
fn invalid_types_disallowed() {
    // "invalid types disallowed"
    let errs = validate_crd(&with_props(json!({"foo": {"type": "bogus"}})));
    expect(&errs, &format!("{ROOT}.properties[foo].type"), "Unsupported value: \"bogus\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"");
}

#[test]
fn additional_properties_rules() {
    // "additionalProperties and properties forbidden"
    let errs = validate_crd(&with_props(json!({"foo": {"type": "object",
        "properties": {"bar": {"type": "string"}}, "additionalProperties": {"type": "string"}}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[foo].additionalProperties"),
        "Forbidden: additionalProperties and properties are mutual exclusive",
    );
    // "additionalProperties without properties allowed (map[string]string)"
    accepted(&with_props(
        json!({"foo": {"type": "object", "additionalProperties": {"type": "string"}}}),
    ));
    // additionalProperties at the root
    let errs = validate_crd(&crd(
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.additionalProperties"),
        "Forbidden: must not be used at the root",
    );
}

#[test]
fn embedded_resources() {
    // "x-kubernetes-embedded-resource with pruning and empty properties"
    let errs = validate_crd(&with_props(json!({
        "nil": {"type": "object", "x-kubernetes-embedded-resource": true},
        "empty": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {}},
        "ok": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    })));
    let want = "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
    expect(&errs, &format!("{ROOT}.properties[nil].properties"), want);
    expect(&errs, &format!("{ROOT}.properties[empty].properties"), want);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    // "additionalProperties at resource root"
    let errs = validate_crd(&with_props(json!({
        "embedded1": {"type": "object", "x-kubernetes-embedded-resource": true, "additionalProperties": {"type": "string"}},
        "embedded2": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                      "additionalProperties": {"type": "string"}},
    })));
    expect(
        &errs,
        &format!("{ROOT}.properties[embedded1].additionalProperties"),
        "Forbidden: must not be used if x-kubernetes-embedded-resource is set",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[embedded1].properties"),
        "Required value",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[embedded2].additionalProperties"),
        "Forbidden",
    );
    // "x-kubernetes-embedded-resource inside resource meta"
    let errs = validate_crd(&with_props(
        json!({"embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "metadata": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.properties[embedded].properties[metadata].x-kubernetes-embedded-resource"),
        "Forbidden: must not be used inside of resource meta",
    );
    let errs = validate_crd(&with_props(
        json!({"e": {"type": "string", "x-kubernetes-embedded-resource": true}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.properties[e].type"),
        "Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
    );
}

#[test]
fn extensions() {
    // "x-kubernetes-preserve-unknown-field: false"
    let errs = validate_crd(&crd(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.x-kubernetes-preserve-unknown-fields"),
        "Invalid value: false: must be true or undefined",
    );
    let errs = validate_crd(&with_props(
        json!({"a": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.properties[a].x-kubernetes-preserve-unknown-fields"),
        "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
    );
    let errs = validate_crd(&with_props(
        json!({"m": {"type": "string", "x-kubernetes-map-type": "weird"}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.properties[m].type"),
        "Invalid value: \"string\": must be object if x-kubernetes-map-type is specified",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[m].x-kubernetes-map-type"),
        "Unsupported value: \"weird\": supported values: \"atomic\", \"granular\"",
    );
}

#[test]
fn list_types() {
    let errs = validate_crd(&with_props(json!({
        "a": {"type": "string", "x-kubernetes-list-type": "set"},
        "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
        "c": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["k"]},
        "d": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "required": ["k"], "properties": {
            "k": {"type": "string"}, "o": {"type": "object"}, "n": {"type": "string", "nullable": true}}},
            "x-kubernetes-list-map-keys": ["k", "o", "n", "missing"]},
        "e": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["k"]},
        "f": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
    })));
    let r = |s: &str| format!("{ROOT}.properties[{s}");
    expect(
        &errs,
        &r("a].type"),
        "Invalid value: \"string\": must be array if x-kubernetes-list-type is specified",
    );
    expect(
        &errs,
        &r("b].x-kubernetes-list-type"),
        "Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"",
    );
    expect(
        &errs,
        &r("c].x-kubernetes-list-type"),
        "Required value: must be map if x-kubernetes-list-map-keys is non-empty",
    );
    expect(
        &errs,
        &r("d].items.properties[o].type"),
        "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map",
    );
    expect(
        &errs,
        &r("d].x-kubernetes-list-map-keys"),
        "Invalid value: [\"k\",\"o\",\"n\",\"missing\"]: entries must all be names of item properties",
    );
    expect(&errs, &r("d].items.properties[o].default"), "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property");
    expect(
        &errs,
        &r("d].items.properties[n].nullable"),
        "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
    );
    expect(
        &errs,
        &r("e].items.type"),
        "Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map",
    );
    expect(
        &errs,
        &r("f].items.x-kubernetes-map-type"),
        "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
    );
    assert!(
        !errs.iter().any(|(p, _)| p == &r("d].items.properties[k].default")),
        "{errs:#?}"
    );
    accepted(&with_props(
        json!({"d": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string", "default": "x"}}}}}),
    ));
}

#[test]
fn validation_rules_plain_checks() {
    let errs = validate_crd(&with_props(
        json!({"a": {"type": "string", "x-kubernetes-validations": [
        {"rule": " "}, {"rule": "self.size() > 0\n&& true"}, {"rule": "true", "reason": "Nope"}]}}),
    ));
    let v = format!("{ROOT}.properties[a].x-kubernetes-validations");
    expect(&errs, &format!("{v}[0].rule"), "Required value: rule is not specified");
    expect(
        &errs,
        &format!("{v}[1].message"),
        "Required value: message must be specified if rule contains line breaks",
    );
    expect(&errs, &format!("{v}[2].reason"), "Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"");
}
