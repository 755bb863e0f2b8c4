//! Subresources ([`super::super::subresources`]) and conversion
//! ([`super::super::conversion`]).

use serde_json::json;

use super::{accepted, crd, expect, set, validate_crd, with_props, ROOT};

#[test]
fn subresources() {
    // "labelSelectorPath outside of .spec and .status", plus required scale paths
    let mut doc = with_props(json!({}));
    set(
        &mut doc,
        "/spec/versions/0/subresources",
        json!({"scale": {"specReplicasPath": ".spec.replicas",
        "statusReplicasPath": "status.replicas", "labelSelectorPath": ".labelSelector"}}),
    );
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.subresources.scale.labelSelectorPath",
        "Invalid value: \".labelSelector\": should be a json path under either .spec or .status",
    );
    expect(
        &errs,
        "spec.subresources.scale.statusReplicasPath",
        "Invalid value: \"status.replicas\": must be a simple json path starting with .",
    );
    // with status enabled only some keywords may be used at the root
    let mut doc =
        crd(json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"required": ["a"]}]}));
    set(&mut doc, "/spec/versions/0/subresources", json!({"status": {}}));
    let errs = validate_crd(&doc);
    assert!(
        errs.iter().any(|(p, m)| p == ROOT
            && m.ends_with("fields are allowed at the root of the schema if the status subresource is enabled")),
        "{errs:#?}"
    );
    let mut doc = with_props(json!({"status": {"type": "object"}}));
    set(
        &mut doc,
        "/spec/versions/0/subresources",
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r"}}),
    );
    accepted(&doc);
}

#[test]
fn conversion() {
    // "missing_webhookconfig", "invalid_conversion_strategy", "webhookconfig: blank URL", "ConversionReviewVersions_should_not_be_set"
    let mut doc = with_props(json!({}));
    doc["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.conversion.webhookClientConfig",
        "Required value: required when strategy is set to Webhook",
    );
    expect(&errs, "spec.conversion.conversionReviewVersions", "Required value");
    doc["spec"]["conversion"] = json!({"strategy": "non_existing_conversion"});
    expect(
        &validate_crd(&doc),
        "spec.conversion.strategy",
        "Unsupported value: \"non_existing_conversion\": supported values: \"None\", \"Webhook\"",
    );
    doc["spec"]["conversion"] =
        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": ""}, "conversionReviewVersions": ["v1"]}});
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.conversion.webhookClientConfig.url",
        "Invalid value: \"\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    );
    expect(
        &errs,
        "spec.conversion.webhookClientConfig.url",
        "Invalid value: \"\": host must be specified",
    );
    doc["spec"]["conversion"] = json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}});
    expect(
        &validate_crd(&doc),
        "spec.conversion.conversionReviewVersions",
        "Forbidden: should not be set when strategy is not set to Webhook",
    );
    // "webhookconfig: invalid port 0", "webhookconfig: invalid ConversionReviewVersion"
    doc["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "n", "namespace": "ns", "port": 0}}, "conversionReviewVersions": ["invalid-version"]}});
    let errs = validate_crd(&doc);
    expect(
        &errs,
        "spec.conversion.webhookClientConfig.service.port",
        "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
    );
    expect(
        &errs,
        "spec.conversion.conversionReviewVersions",
        "Invalid value: [\"invalid-version\"]: must include at least one of v1, v1beta1",
    );
    doc["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "https://example.com/convert"}, "conversionReviewVersions": ["v1", "v1beta1"]}});
    accepted(&doc);
}
