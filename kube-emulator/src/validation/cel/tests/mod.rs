//! Cases after upstream's `TestValidationExpressions` and friends
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go`),
//! split by the file whose behaviour they exercise.

mod evaluate;
mod library;
mod supported;

use serde_json::{json, Value as Json};

use super::CelRules;

type TestResult = Result<(), String>;

fn compile(schema: Json) -> Result<CelRules, String> {
    CelRules::compile(&schema).map_err(|e| format!("{e:?}"))
}

/// A root object with one property `p` of schema `property`.
fn with_property(property: Json) -> Json {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"p": property}}}})
}

fn spec(p: Json) -> Json {
    json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"p": p}})
}
