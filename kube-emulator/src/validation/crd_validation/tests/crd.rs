//! The object and its spec ([`super::super::crd`], [`super::super::internal`],
//! [`super::super::decode`]): storage versions, names and group, schemas
//! required, per-version paths, API approval, decoding.

use serde_json::{json, Value};

use super::{accepted, expect, set, validate_crd, with_props};

#[test]
fn no_storage_version_and_multiple() {
    // "no_storage_version"
    let mut doc = with_props(json!({}));
    set(&mut doc, "/spec/versions/0/storage", json!(false));
    let errs = validate_crd(&doc);
    expect(&errs, "spec.versions", "Invalid value: [");
    expect(&errs, "spec.versions", "Invalid value: [{\"name\":\"version\"");
    assert!(
        errs.iter()
            .any(|(_, m)| m.ends_with(": must have exactly one version marked as storage version")),
        "{errs:#?}"
    );
    expect(
        &errs,
        "status.storedVersions",
        "Invalid value: null: must have at least one stored version",
    );
    // "multiple_storage_version"
    let mut doc = with_props(json!({}));
    let v = doc["spec"]["versions"][0].clone();
    let mut v2 = v.clone();
    v2["name"] = json!("version2");
    set(&mut doc, "/spec/versions", json!([v, v2]));
    let errs = validate_crd(&doc);
    expect(&errs, "spec.versions", "Invalid value: ");
    expect(
        &errs,
        "status.storedVersions",
        "Invalid value: [\"version\"]: must have the storage version version2",
    );
    // duplicate names
    let mut doc = with_props(json!({}));
    let mut v2 = doc["spec"]["versions"][0].clone();
    v2["storage"] = json!(false);
    if let Some(a) = doc["spec"]["versions"].as_array_mut() {
        a.push(v2);
    }
    let errs = validate_crd(&doc);
    assert!(
        errs.iter()
            .any(|(p, m)| p == "spec.versions" && m.ends_with("must contain unique version names")),
        "{errs:#?}"
    );
}

#[test]
fn names_and_group() {
    // "mismatched name"
    let mut doc = with_props(json!({}));
    set(&mut doc, "/metadata/name", json!("plural.not.group.com"));
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "metadata.name",
        "Invalid value: \"plural.not.group.com\": must be spec.names.plural+\".\"+spec.group",
    );
    // "missing values"
    let errs = validate_crd(&json!({"metadata": {"name": "plural.group.com"}, "spec": {}}));
    for path in [
        "spec.group",
        "spec.scope",
        "spec.names.plural",
        "spec.names.singular",
        "spec.names.kind",
        "spec.names.listKind",
    ] {
        expect(&errs, path, "Required value");
    }
    expect(&errs, "metadata.name", "Invalid value");
    expect(
        &errs,
        "spec.versions",
        "Invalid value: []: must have exactly one version marked as storage version",
    );
    expect(&errs, "status.storedVersions", "Invalid value: null");
    // "bad names 01"
    let mut doc = with_props(json!({}));
    set(&mut doc, "/metadata/name", json!("plural.group"));
    set(&mut doc, "/spec/group", json!("group"));
    set(&mut doc, "/spec/scope", json!("foo"));
    set(
        &mut doc,
        "/spec/names",
        json!({"plural": "pl()*ural", "singular": "value()*a", "kind": "value()*a", "listKind": "value()*a"}),
    );
    set(&mut doc, "/spec/versions/0/name", json!("ve()*rsion"));
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.group",
        "Invalid value: \"group\": should be a domain with at least one dot",
    );
    expect(
        &errs,
        "spec.scope",
        "Unsupported value: \"foo\": supported values: \"Cluster\", \"Namespaced\"",
    );
    expect(&errs, "spec.names.plural", "Invalid value: \"pl()*ural\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
    expect(&errs, "spec.names.singular", "Invalid value");
    expect(
        &errs,
        "spec.names.kind",
        "Invalid value: \"value()*a\": may have mixed case, but should otherwise match: a DNS-1035 label",
    );
    expect(
        &errs,
        "spec.names.listKind",
        "Invalid value: \"value()*a\": kind and listKind may not be the same",
    );
    expect(&errs, "spec.versions[0].name", "Invalid value: \"ve()*rsion\"");
    expect(&errs, "spec.version", "Invalid value: \"ve()*rsion\"");
    // "bad names 02"
    let mut doc = with_props(json!({}));
    set(&mut doc, "/spec/group", json!("group.c(*&om"));
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.group",
        "Invalid value: \"group.c(*&om\": a lowercase RFC 1123 subdomain",
    );
    // defaults: singular and listKind come from kind
    let mut doc = with_props(json!({}));
    set(&mut doc, "/spec/names", json!({"plural": "plural", "kind": "Plural"}));
    accepted(&doc);
    let mut doc = with_props(json!({}));
    set(&mut doc, "/metadata/namespace", json!("default"));
    expect(
        &validate_crd(&doc),
        "metadata.namespace",
        "Forbidden: not allowed on this type",
    );
}

#[test]
fn schema_required_and_preserve_unknown_fields() {
    // "schema is required"
    let mut doc = with_props(json!({}));
    set(&mut doc, "/spec/versions/0/schema", Value::Null);
    expect(
        &validate_crd(&doc),
        "spec.versions[0].schema.openAPIV3Schema",
        "Required value",
    );
    // "preserveUnknownFields: true"
    let mut doc = with_props(json!({"a": {"type": "string", "default": "x"}}));
    doc["spec"]["preserveUnknownFields"] = json!(true);
    let errs = validate_crd(&doc);
    expect(&errs, "spec.preserveUnknownFields", "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead");
    expect(
        &errs,
        "spec.preserveUnknownFields",
        "Invalid value: true: must be false in order to use defaults in the schema",
    );
}

#[test]
fn per_version_schemas_keep_version_paths() {
    let mut doc = with_props(json!({"a": {"type": "string"}}));
    let mut v2 = doc["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["a"] = json!({"anyOf": [{"type": "string"}]});
    if let Some(a) = doc["spec"]["versions"].as_array_mut() {
        a.push(v2);
    }
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.versions[1].schema.openAPIV3Schema.properties[a].anyOf[0].type",
        "Forbidden: must be empty to be structural",
    );
    expect(
        &errs,
        "spec.versions[1].schema.openAPIV3Schema.properties[a].type",
        "Required value",
    );
    assert_eq!(errs.len(), 2, "{errs:#?}");
}

#[test]
fn api_approval_and_decode() {
    let mut doc = with_props(json!({}));
    set(&mut doc, "/metadata/name", json!("plural.x.k8s.io"));
    set(&mut doc, "/spec/group", json!("x.k8s.io"));
    expect(
        &validate_crd(&doc),
        "metadata.annotations[api-approved.kubernetes.io]",
        "Required value: protected groups must have approval annotation",
    );
    doc["metadata"]["annotations"] =
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/78458"});
    accepted(&doc);
    doc["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, experimental"});
    accepted(&doc);
    let errs = validate_crd(&with_props(json!({"a": {"type": 5}})));
    expect(
        &errs,
        "spec.versions[0].schema.openAPIV3Schema.properties[a].type",
        "Invalid value: 5: cannot be decoded",
    );
}
