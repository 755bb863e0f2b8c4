//! A version's (or the top-level) `schema`: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`'s
//! `validateCustomResourceDefinitionValidation`: the fields allowed at the
//! root with the status subresource, `nullable` at the root, then the
//! structural schema ([`super::structural`]), its defaults
//! ([`super::defaulting`]) and the OpenAPI checks ([`super::openapi_schema`]).

use serde_json::Value;

use super::defaulting::validate_defaults;
use super::field::{forbidden, invalid, s, Errors, Path};
use super::json::{flag, present_in};
use super::openapi_schema::{openapi_schema, Ssv};
use super::schema_node::{set_fields, ty};
use super::structural::{new_structural_error, validate_structural};

const ALLOWED_AT_ROOT: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

pub(super) fn validate_validation(validation: Option<&Value>, status_enabled: bool, p: &Path, errs: &mut Errors) {
    let Some(schema_value) = validation.and_then(|v| present_in(v, "openAPIV3Schema")) else {
        return;
    };
    let Some(schema) = schema_value.as_object() else { return };
    let sp = p.child("openAPIV3Schema");
    let mut all = Errors::new();
    if status_enabled {
        for field in set_fields(schema, false) {
            if field == "Type" {
                if ty(schema) != "object" {
                    all.push(invalid(&p.child("openAPIV3Schema.type"), &s(ty(schema)), "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(&field) {
                all.push(invalid(
                    &sp,
                    schema_value,
                    &format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if flag(schema, "nullable") {
        all.push(forbidden(
            &p.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }

    // requireStructuralSchema holds for every v1 CRD (preserveUnknownFields is false or refused).
    let mut init_errs = Errors::new();
    match new_structural_error(schema) {
        Some(e) => init_errs.push(invalid(&sp, &s(""), &e)),
        None => {
            let structural = validate_structural(schema, &sp);
            if !structural.is_empty() {
                all.extend(structural);
            } else {
                all.extend(validate_defaults(schema, &sp));
            }
        }
    }
    let ssv = Ssv {
        allow_defaults: true,
        reason: String::new(),
        inside_meta: false,
    };
    openapi_schema(schema, &sp, &ssv, true, &mut all);
    if all.is_empty() {
        all.extend(init_errs);
    }
    errs.extend(all);
}
