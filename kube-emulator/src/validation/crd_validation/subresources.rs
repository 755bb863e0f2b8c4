//! Subresources and simple JSON paths: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (`ValidateCustomResourceDefinitionSubresources`: the scale subresource's
//! replica and label selector paths; `validateSimpleJSONPath`, also used by
//! printer columns).

use serde_json::Value;

use super::field::{invalid, required, s, Errors, Path};
use super::json::{present_in, text};

pub(super) fn validate_simple_json_path(v: &str, p: &Path, errs: &mut Errors) -> bool {
    if v.is_empty() {
        errs.push(invalid(p, &s(v), "must not be empty"));
        false
    } else if !v.starts_with('.') {
        errs.push(invalid(p, &s(v), "must be a simple json path starting with ."));
        false
    } else {
        true
    }
}

pub(super) fn validate_subresources(sub: Option<&Value>, p: &Path, errs: &mut Errors) {
    let Some(scale) = sub.and_then(|s| present_in(s, "scale")).and_then(Value::as_object) else {
        return;
    };
    let spec_path = text(scale, "specReplicasPath");
    let pp = p.child("scale.specReplicasPath");
    if spec_path.is_empty() {
        errs.push(required(&pp, ""));
    } else if validate_simple_json_path(&spec_path, &pp, errs) && !spec_path.starts_with(".spec.") {
        errs.push(invalid(&pp, &s(&spec_path), "should be a json path under .spec"));
    }
    let status_path = text(scale, "statusReplicasPath");
    let pp = p.child("scale.statusReplicasPath");
    if status_path.is_empty() {
        errs.push(required(&pp, ""));
    } else if validate_simple_json_path(&status_path, &pp, errs) && !status_path.starts_with(".status.") {
        errs.push(invalid(&pp, &s(&status_path), "should be a json path under .status"));
    }
    let selector = text(scale, "labelSelectorPath");
    let pp = p.child("scale.labelSelectorPath");
    if !selector.is_empty()
        && validate_simple_json_path(&selector, &pp, errs)
        && !selector.starts_with(".spec.")
        && !selector.starts_with(".status.")
    {
        errs.push(invalid(
            &pp,
            &s(&selector),
            "should be a json path under either .spec or .status",
        ));
    }
}
