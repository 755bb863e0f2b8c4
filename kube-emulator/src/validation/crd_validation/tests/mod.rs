//! Cases ported from upstream's tables: `TestValidateCustomResourceDefinition`
//! and `TestValidateCustomResourceDefinitionValidation`
//! (pkg/apis/apiextensions/validation/validation_test.go) and
//! `TestValidateStructuralCompleteness`, `TestValidateStructuralMetadataInvariants`,
//! `TestValidateNestedValueValidationComplete` (pkg/apiserver/schema/validation_test.go),
//! rewritten as v1 JSON (a single version: its schema is reported under
//! `spec.validation`, as upstream's internal-version tables write it).
//! Split by the file whose rules they exercise.

mod conversion;
mod crd;
mod defaulting;
mod openapi_schema;
mod structural;

use serde_json::{json, Value};

use super::field::Errors;
use super::validate_crd;

const ROOT: &str = "spec.validation.openAPIV3Schema";

/// A valid v1 CRD (names as upstream's tables: plural.group.com) with `schema` as its only version's schema.
fn crd(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "plural.group.com"},
        "spec": {
            "group": "group.com",
            "scope": "Namespaced",
            "names": {"plural": "plural", "singular": "singular", "kind": "Plural", "listKind": "PluralList"},
            "versions": [{"name": "version", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
        },
    })
}

/// `crd` with a root object schema holding `properties`.
fn with_props(properties: Value) -> Value {
    crd(json!({"type": "object", "properties": properties}))
}

/// Sets (or adds) the member at a JSON pointer whose parent exists.
fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_owned(), value);
        }
        Some(Value::Array(items)) => match key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
            Some(slot) => *slot = value,
            None => panic!("no {pointer} in test document"),
        },
        _ => panic!("no parent for {pointer} in test document"),
    }
}

/// Asserts an error at `path` whose message starts with `prefix`.
fn expect(errs: &Errors, path: &str, prefix: &str) {
    assert!(
        errs.iter().any(|(p, m)| p == path && m.starts_with(prefix)),
        "expected {path}: {prefix}… in {errs:#?}"
    );
}

fn accepted(doc: &Value) {
    let errs = validate_crd(doc);
    assert!(errs.is_empty(), "expected no errors, got {errs:#?}");
}
