//! Structural schemas ([`super::super::structural`]): types required, value
//! validations under `anyOf`/`allOf`/`oneOf`/`not`, int-or-string, metadata,
//! completeness, `pattern`.

use serde_json::json;

use super::{accepted, crd, expect, validate_crd, with_props, ROOT};

#[test]
fn plain_crd_is_accepted() {
    accepted(&with_props(json!({
        "spec": {"type": "object", "required": ["zone"], "properties": {
            "zone": {"type": "string", "pattern": "^[a-z.]+$", "maxLength": 253},
            "ttl": {"type": "integer", "minimum": 1, "default": 30},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "targets": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "rules": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''", "message": "empty"}]},
        }},
        "status": {"type": "object", "nullable": true, "properties": {"ok": {"type": "boolean"}}},
    })));
}

#[test]
fn quorum_any_of_with_type_is_not_structural() {
    let doc = with_props(
        json!({"spec": {"type": "object", "properties": {"healthCheck": {"type": "object", "properties": {
            "quorum": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^[0-9]+%$"}]},
        }}}}}),
    );
    let errs = validate_crd(&doc);
    let q = format!("{ROOT}.properties[spec].properties[healthCheck].properties[quorum]");
    expect(
        &errs,
        &format!("{q}.anyOf[1].type"),
        "Forbidden: must be empty to be structural",
    );
    expect(
        &errs,
        &format!("{q}.anyOf[0].type"),
        "Forbidden: must be empty to be structural",
    );
    expect(
        &errs,
        &format!("{q}.type"),
        "Required value: must not be empty for specified object fields",
    );
}

#[test]
fn int_or_string_forms_are_accepted() {
    accepted(&with_props(json!({
        "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "b": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"maxLength": 3}]},
        "c": {"x-kubernetes-int-or-string": true},
    })));
    // Anything more than a bare type in the pattern breaks it.
    let errs = validate_crd(&with_props(json!({
        "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]},
    })));
    expect(
        &errs,
        &format!("{ROOT}.properties[a].anyOf[0].type"),
        "Forbidden: must be empty to be structural",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[a].anyOf[1].type"),
        "Forbidden: must be empty to be structural",
    );
}

#[test]
fn typeless_nodes_are_refused() {
    let errs = validate_crd(&with_props(json!({"foo": {}, "list": {"type": "array", "items": {}}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[foo].type"),
        "Required value: must not be empty for specified object fields",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[list].items.type"),
        "Required value: must not be empty for specified array items",
    );
    let errs = validate_crd(&crd(json!({"properties": {"a": {"type": "string"}}})));
    expect(
        &errs,
        &format!("{ROOT}.type"),
        "Required value: must not be empty at the root",
    );
    let errs = validate_crd(&with_props(json!({"arr": {"type": "array"}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[arr].items"),
        "Required value: must be specified",
    );
    // x-kubernetes-preserve-unknown-fields allows an empty type
    accepted(&with_props(
        json!({"free": {"x-kubernetes-preserve-unknown-fields": true}}),
    ));
}

#[test]
fn metadata_only_name_and_generate_name() {
    // TestValidateStructuralMetadataInvariants
    accepted(&with_props(json!({"metadata": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 63}, "generateName": {"type": "string"}}}})));
    let errs = validate_crd(&with_props(json!({"metadata": {"type": "object", "properties": {
        "name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[metadata]"),
        "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
    );
    let errs = validate_crd(&with_props(json!({"metadata": {"type": "string"}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[metadata].type"),
        "Invalid value: \"string\": must be object",
    );
    let errs = validate_crd(&with_props(json!({"metadata": {"type": "object", "description": "x"}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[metadata]"),
        "Forbidden: must not specify anything other",
    );
    // "top-level metadata default"
    let errs = validate_crd(&with_props(
        json!({"metadata": {"type": "object", "default": {"name": "foo"}}}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.properties[metadata].default"),
        "Forbidden: must not be set in top-level metadata",
    );
    let errs = validate_crd(&with_props(json!({"kind": {"type": "integer"}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[kind].type"),
        "Invalid value: \"integer\": must be string",
    );
}

#[test]
fn nested_value_validations() {
    // TestValidateNestedValueValidationComplete: generics and extensions are forbidden under junctors.
    let errs = validate_crd(&with_props(
        json!({"a": {"type": "object", "properties": {"b": {"type": "string"}}, "allOf": [{
            "description": "d", "title": "t", "default": "x", "nullable": true,
            "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true,
            "x-kubernetes-list-type": "atomic", "x-kubernetes-map-type": "atomic", "x-kubernetes-list-map-keys": ["k"],
            "x-kubernetes-validations": [{"rule": "true"}], "additionalProperties": true,
            "properties": {"metadata": {}},
        }]}}),
    ));
    let a = format!("{ROOT}.properties[a].allOf[0]");
    for (field, msg) in [
        ("description", "Forbidden: must be empty to be structural"),
        ("title", "Forbidden: must be empty to be structural"),
        ("default", "Forbidden: must be undefined to be structural"),
        ("nullable", "Forbidden: must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "Forbidden: must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "Forbidden: must be false to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "Forbidden: must be undefined to be structural",
        ),
        ("x-kubernetes-map-type", "Forbidden: must be undefined to be structural"),
        (
            "x-kubernetes-list-map-keys",
            "Forbidden: must be empty to be structural",
        ),
        ("x-kubernetes-validations", "Forbidden: must be empty to be structural"),
        ("additionalProperties", "Forbidden: must be undefined to be structural"),
        (
            "properties[metadata]",
            "Forbidden: must not be specified in a nested context",
        ),
    ] {
        expect(&errs, &format!("{a}.{field}"), msg);
    }
    // value validations alone are fine
    accepted(&with_props(
        json!({"a": {"type": "string", "anyOf": [{"maxLength": 3}, {"pattern": "^x"}], "not": {"enum": ["y"]}}}),
    ));
}

#[test]
fn structural_completeness() {
    // TestValidateStructuralCompleteness (the checks apply to the root's value validations)
    let doc = crd(json!({"type": "object", "properties": {"foo": {"type": "string"}},
        "allOf": [{"properties": {"notfoo": {"minLength": 2}}}]}));
    let errs = validate_crd(&doc);
    expect(
        &errs,
        &format!("{ROOT}.properties[notfoo]"),
        &format!("Required value: because it is defined in {ROOT}.allOf[0].properties[notfoo]"),
    );
    let errs = validate_crd(&crd(
        json!({"type": "object", "properties": {"foo": {"type": "string"}}, "allOf": [{"items": {"minLength": 2}}]}),
    ));
    expect(
        &errs,
        &format!("{ROOT}.items"),
        &format!("Required value: because it is defined in {ROOT}.allOf[0].items"),
    );
    accepted(&crd(
        json!({"type": "object", "properties": {"foo": {"type": "string"}}, "allOf": [{"properties": {"foo": {"minLength": 2}}}]}),
    ));
}

#[test]
fn invalid_pattern() {
    let errs = validate_crd(&with_props(json!({"a": {"type": "string", "pattern": "([a-z"}})));
    expect(
        &errs,
        &format!("{ROOT}.properties[a].pattern"),
        "Invalid value: \"([a-z\": must be a valid regular expression, but isn't: ",
    );
}
