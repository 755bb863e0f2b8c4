//! Validation of `apiextensions.k8s.io/v1` CustomResourceDefinitions as
//! kube-apiserver does it when one is created: a port of upstream Kubernetes
//! v1.36.2, as vendored in openshift/microshift commit
//! 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b under
//! `deps/github.com/openshift/kubernetes/staging/src/k8s.io/`. Each file
//! follows the upstream piece it ports (paths below `apiextensions-apiserver/`
//! unless named otherwise; `validation.go` alone is
//! `pkg/apis/apiextensions/validation/validation.go`), lowest first:
//!
//! | file | ports |
//! |---|---|
//! | `field.rs` | `apimachinery/pkg/util/validation/field` (paths, error messages) |
//! | `names.rs` | `apimachinery/pkg/util/validation` (DNS-1123 subdomain, DNS-1035 label) |
//! | `json.rs` | the v1 JSON read as Go's `encoding/json` fills `pkg/apis/apiextensions/v1/types.go` |
//! | `internal.rs` | `pkg/apis/apiextensions/v1/conversion.go`, `defaults.go` (v1 → internal spec) |
//! | `schema_node.rs` | helpers on a `JSONSchemaProps` node (`types_jsonschema.go`, `SchemaHas`) |
//! | `decode.rs` | what decoding a schema refuses (400 BadRequest upstream) |
//! | `subresources.rs` | `validation.go`: `ValidateCustomResourceDefinitionSubresources`, `validateSimpleJSONPath` |
//! | `conversion.rs` | `validation.go`: `validateCustomResourceConversion`; `apiserver/pkg/util/webhook/validation.go` |
//! | `structural.rs` | `pkg/apiserver/schema`: `convert.go` (`NewStructural`), `validation.go` (`ValidateStructural`), `complete.go` |
//! | `pruning.rs` | `pkg/apiserver/schema/pruning/algorithm.go` (`Prune`) |
//! | `defaulting.rs` | `pkg/apiserver/schema/defaulting/validation.go` (`ValidateDefaults`) |
//! | `openapi_schema.rs` | `validation.go`: `ValidateCustomResourceDefinitionOpenAPISchema`, `specStandardValidatorV3`, `validateMapListKeysMapSet` |
//! | `validation_spec.rs` | `validation.go`: `validateCustomResourceDefinitionValidation` |
//! | `crd.rs` | `validation.go`: `validateCustomResourceDefinitionSpec`, names, versions, columns, selectable fields, stored versions, API approval |
//! | `mod.rs` (this file) | `validation.go`: `ValidateCustomResourceDefinition`; `pkg/registry/customresourcedefinition/strategy.go` (`PrepareForCreate`) |
//!
//! Upstream rules NOT ported:
//! * CEL: compiling `x-kubernetes-validations` rules and message
//!   expressions, their cost estimates, `oldSelf` correlation, `fieldPath`
//!   validity (`pathValid`), and CEL rules run on defaults (the keyword itself
//!   is accepted; its plain-text checks on `rule`, `message`,
//!   `messageExpression`, `reason` and `fieldPath` are ported).
//! * Update semantics (`ValidateCustomResourceDefinitionUpdate`: immutable
//!   group/plural/scope/kind, ratcheting of rules old objects already broke,
//!   stored versions kept from the old object); this validates a create.
//! * `ValidateObjectMeta` beyond name, generateName and namespace (labels,
//!   annotations, owner references, finalizers, managed fields).
//! * `selectableFields` beyond "jsonPath is required" and the count limit
//!   (resolving the path through the schema and its type checks need
//!   `cel.ValidFieldPath`).
//! * Defaults inside `metadata` of embedded resources are not coerced and
//!   validated as ObjectMeta (`schemaobjectmeta.Coerce/Validate`); defaults are
//!   checked against their schema with this crate's [`crate::validation::schema::CrdSchema`]
//!   (JSON Schema semantics, so the detail text differs from kube-openapi's),
//!   and for pruning with a port of `pruning.Prune`.
//! * Go's RE2 is not available: a `pattern` must compile as a
//!   [`crate::validation::schema::CrdSchema`] pattern instead.
//! * The webhook `caBundle` PEM check (upstream skips it on create too) and
//!   `NewSchemaValidator` construction errors.
//! * Rendering of Go values: where upstream prints an internal Go struct
//!   (the versions list, the root schema) the v1 JSON is printed instead.
//! * Decoding: kube-apiserver answers 400 BadRequest when a schema keyword has
//!   the wrong JSON type; here that is reported as an error at the keyword's
//!   path (`Invalid value: …: cannot be decoded …`). Wrongly typed spec-level
//!   fields are treated as absent.

mod conversion;
mod crd;
mod decode;
mod defaulting;
mod field;
mod internal;
mod json;
mod names;
mod openapi_schema;
mod pruning;
mod schema_node;
mod structural;
mod subresources;
#[cfg(test)]
mod tests;
mod validation_spec;

use serde_json::Value;

use crd::{validate_api_approval, validate_object_meta, validate_spec, validate_stored_versions};
use decode::check_decode;
use field::{invalid, Errors, Path};
use internal::Spec;
use json::Obj;

/// Validates a CustomResourceDefinition (apiextensions.k8s.io/v1, as JSON) the way kube-apiserver does at create.
///
/// Returns (field path, message) pairs in upstream's `field.ErrorList` form,
/// e.g. `("spec.validation.openAPIV3Schema.properties[spec].properties[q].anyOf[1].type",
/// "Forbidden: must be empty to be structural")`. Empty = accepted.
///
/// Paths are those upstream reports after converting the v1 object to the
/// internal version: when every version has the same schema (always so for a
/// single version) it is reported under `spec.validation.openAPIV3Schema`,
/// otherwise under `spec.versions[i].schema.openAPIV3Schema`; webhook
/// conversion settings are reported under `spec.conversion.webhookClientConfig`
/// and `spec.conversion.conversionReviewVersions`. See the module docs for
/// what is not ported.
pub fn validate_crd(crd: &Value) -> Vec<(String, String)> {
    let empty = Obj::new();
    let root = crd.as_object().unwrap_or(&empty);
    let spec = Spec::from_v1(root.get("spec").and_then(Value::as_object).unwrap_or(&empty));
    let meta = root.get("metadata").and_then(Value::as_object).unwrap_or(&empty);

    // A schema keyword of the wrong JSON type fails decoding (400) before any validation.
    let mut decode = Errors::new();
    for (i, v) in spec.raw_versions.iter().enumerate() {
        if let Some(s) = v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            let p = Path::new("spec")
                .child("versions")
                .index(i)
                .child("schema")
                .child("openAPIV3Schema");
            check_decode(s, &p, &mut decode);
        }
    }
    if !decode.is_empty() {
        return decode;
    }

    let mut errs = Errors::new();
    validate_object_meta(meta, &spec, &mut errs);
    validate_spec(&spec, &Path::new("spec"), &mut errs);
    // Status: PrepareForCreate resets it, acceptedNames are empty; storedVersions is the storage version.
    let stored: Vec<String> = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| vec![v.name.clone()])
        .unwrap_or_default();
    validate_stored_versions(
        &stored,
        &spec.versions,
        &Path::new("status").child("storedVersions"),
        &mut errs,
    );
    validate_api_approval(meta, &spec, &mut errs);
    if spec.preserve_unknown_fields {
        errs.push(invalid(
            &Path::new("spec").child("preserveUnknownFields"),
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}
