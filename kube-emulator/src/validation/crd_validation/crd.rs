//! `ValidateCustomResourceDefinition`'s checks on the object and its spec
//! other than schemas, subresources and conversion: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (`ValidateCustomResourceDefinition`'s `ValidateObjectMeta` name check,
//! `validateCustomResourceDefinitionSpec`, `ValidateCustomResourceDefinitionNames`,
//! `validateCustomResourceDefinitionVersion`, `validateDeprecationWarning`,
//! `validateSelectableFields`, `ValidateCustomResourceColumnDefinition`,
//! `ValidateCustomResourceDefinitionStoredVersions`, `validateAPIApproval`),
//! with the status `pkg/registry/customresourcedefinition/strategy.go`'s
//! `PrepareForCreate` leaves (`storedVersions` is the storage version).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::conversion::{parse_url, validate_conversion};
use super::field::{forbidden, go_quote, invalid, required, s, validate_enum_strings, Errors, Path};
use super::internal::{has_status, Spec, Version};
use super::json::{present, present_in, text, Obj};
use super::names::{is_dns1035_label, is_dns1123_subdomain};
use super::schema_node::schema_has;
use super::subresources::{validate_simple_json_path, validate_subresources};
use super::validation_spec::validate_validation;

pub(super) fn validate_object_meta(meta: &Obj, spec: &Spec, errs: &mut Errors) {
    let p = Path::new("metadata");
    let required_name = format!("{}.{}", spec.plural, spec.group);
    let name_fn = |name: &str, prefix: bool| {
        let mut masked = name.to_owned();
        if prefix && name.len() > 1 && name.ends_with('-') {
            masked = format!("{}a", &name[..name.len() - 2]);
        }
        let mut ret = is_dns1123_subdomain(&masked);
        if name != required_name {
            ret.push("must be spec.names.plural+\".\"+spec.group".to_owned());
        }
        ret
    };
    let generate_name = text(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in name_fn(&generate_name, true) {
            errs.push(invalid(&p.child("generateName"), &s(&generate_name), &msg));
        }
    }
    let name = text(meta, "name");
    if name.is_empty() {
        errs.push(required(&p.child("name"), "name or generateName is required"));
    } else {
        for msg in name_fn(&name, false) {
            errs.push(invalid(&p.child("name"), &s(&name), &msg));
        }
    }
    if !text(meta, "namespace").is_empty() {
        errs.push(forbidden(&p.child("namespace"), "not allowed on this type"));
    }
}

pub(super) fn validate_stored_versions(stored: &[String], versions: &[Version], p: &Path, errs: &mut Errors) {
    let stored_value = || Value::Array(stored.iter().map(|v| s(v)).collect());
    if stored.is_empty() {
        errs.push(invalid(p, &Value::Null, "must have at least one stored version"));
        return;
    }
    let mut remaining: BTreeMap<&str, usize> = stored.iter().enumerate().map(|(i, v)| (v.as_str(), i)).collect();
    for v in versions {
        let found = remaining.contains_key(v.name.as_str());
        if v.storage && !found {
            errs.push(invalid(
                p,
                &stored_value(),
                &format!("must have the storage version {}", v.name),
            ));
        }
        remaining.remove(v.name.as_str());
    }
    for (v, i) in remaining {
        errs.push(invalid(&p.index(i), &s(v), &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions")));
    }
}

pub(super) fn validate_api_approval(meta: &Obj, spec: &Spec, errs: &mut Errors) {
    const KEY: &str = "api-approved.kubernetes.io";
    let g = spec.group.as_str();
    let protected = g == "k8s.io" || g.ends_with(".k8s.io") || g == "kubernetes.io" || g.ends_with(".kubernetes.io");
    if !protected {
        return;
    }
    let annotation = meta
        .get("annotations")
        .and_then(|a| a.get(KEY))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let p = Path::new("metadata").child("annotations").key(KEY);
    let parsed = parse_url(annotation);
    if annotation.is_empty() {
        errs.push(required(&p, &format!("protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111", go_quote(KEY))));
    } else if annotation.starts_with("unapproved")
        || (annotation.starts_with(|c: char| c.is_ascii_alphabetic())
            && !parsed.scheme.is_empty()
            && !parsed.host.is_empty())
    {
        // approved or bypassed
    } else {
        errs.push(invalid(&p, &s(annotation), &format!("protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", go_quote(KEY))));
    }
}

pub(super) fn validate_spec(spec: &Spec, p: &Path, errs: &mut Errors) {
    if spec.group.is_empty() {
        errs.push(required(&p.child("group"), ""));
    } else {
        let e = is_dns1123_subdomain(&spec.group);
        if !e.is_empty() {
            errs.push(invalid(&p.child("group"), &s(&spec.group), &e.join(",")));
        } else if spec.group.split('.').count() < 2 {
            errs.push(invalid(
                &p.child("group"),
                &s(&spec.group),
                "should be a domain with at least one dot",
            ));
        }
    }
    validate_enum_strings(&p.child("scope"), &spec.scope, &["Cluster", "Namespaced"], errs);

    // requireOpenAPISchema is true on create.
    if spec.validation.and_then(|v| present_in(v, "openAPIV3Schema")).is_none() {
        for (i, v) in spec.versions.iter().enumerate() {
            if v.schema.and_then(|s| present_in(s, "openAPIV3Schema")).is_none() {
                errs.push(required(
                    &p.child("versions").index(i).child("schema").child("openAPIV3Schema"),
                    "",
                ));
            }
        }
    }
    let has_defaults = spec
        .schemas()
        .iter()
        .any(|s| schema_has(s, &|n| present(n, "default").is_some()));
    if has_defaults && spec.preserve_unknown_fields {
        errs.push(invalid(
            &p.child("preserveUnknownFields"),
            &Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut seen = BTreeSet::new();
    let mut unique = true;
    let per_version_sub = spec.versions.iter().any(|v| v.subresources.is_some());
    for (i, v) in spec.versions.iter().enumerate() {
        if v.storage {
            storage += 1;
        }
        if !seen.insert(v.name.as_str()) {
            unique = false;
        }
        let e = is_dns1035_label(&v.name);
        if !e.is_empty() {
            errs.push(invalid(
                &p.child("versions").index(i).child("name"),
                &s(&v.name),
                &e.join(","),
            ));
        }
        let sub = if per_version_sub {
            v.subresources
        } else {
            spec.subresources
        };
        validate_version(v, &p.child("versions").index(i), has_status(sub), errs);
    }

    if spec.validation.is_some() && spec.versions.iter().any(|v| v.schema.is_some()) {
        errs.push(forbidden(
            &p.child("validation"),
            "top-level and per-version schemas are mutually exclusive",
        ));
    }
    if spec.subresources.is_some() && per_version_sub {
        errs.push(forbidden(
            &p.child("subresources"),
            "top-level and per-version subresources are mutually exclusive",
        ));
    }
    if spec.columns.is_some_and(|c| !c.is_empty())
        && spec.versions.iter().any(|v| v.columns.is_some_and(|c| !c.is_empty()))
    {
        errs.push(forbidden(
            &p.child("additionalPrinterColumns"),
            "top-level and per-version additionalPrinterColumns are mutually exclusive",
        ));
    }
    // hasIdenticalPerVersion{Schema,Subresources,Columns} cannot hold after the v1 conversion moved identical values up.
    if !unique {
        errs.push(invalid(
            &p.child("versions"),
            &spec.versions_value(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(invalid(
            &p.child("versions"),
            &spec.versions_value(),
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.version.is_empty() {
        let e = is_dns1035_label(&spec.version);
        if !e.is_empty() {
            errs.push(invalid(&p.child("version"), &s(&spec.version), &e.join(",")));
        }
    }

    let names = p.child("names");
    for (field, value) in [
        ("plural", &spec.plural),
        ("singular", &spec.singular),
        ("kind", &spec.kind),
        ("listKind", &spec.list_kind),
    ] {
        if value.is_empty() {
            errs.push(required(&names.child(field), ""));
        }
    }
    validate_names(spec, &names, errs);

    let any_status = has_status(spec.subresources) || spec.versions.iter().any(|v| has_status(v.subresources));
    validate_validation(spec.validation, any_status, &p.child("validation"), errs);
    validate_subresources(spec.subresources, &p.child("subresources"), errs);
    if let Some(cols) = spec.columns {
        for (i, c) in cols.iter().enumerate() {
            validate_column(c, &p.child("additionalPrinterColumns").index(i), errs);
        }
    }
    if let Some(sel) = spec.selectable_fields.filter(|s| !s.is_empty()) {
        if spec.validation.is_none() {
            errs.push(invalid(
                &p.child("selectableFields"),
                &s(""),
                "may only be set when validations.schema is included",
            ));
        } else {
            validate_selectable_fields(sel, &p.child("selectableFields"), errs);
        }
    }

    let conversion = spec.conversion.and_then(Value::as_object);
    let strategy = conversion
        .map(|c| text(c, "strategy"))
        .unwrap_or_else(|| "None".to_owned());
    if strategy != "None" && spec.preserve_unknown_fields {
        errs.push(invalid(
            &p.child("conversion").child("strategy"),
            &s(&strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(c) = conversion {
        validate_conversion(c, &strategy, &p.child("conversion"), errs);
    }
}

fn validate_names(spec: &Spec, p: &Path, errs: &mut Errors) {
    for (field, value) in [("plural", &spec.plural), ("singular", &spec.singular)] {
        let e = is_dns1035_label(value);
        if !value.is_empty() && !e.is_empty() {
            errs.push(invalid(&p.child(field), &s(value), &e.join(",")));
        }
    }
    for (field, value) in [("kind", &spec.kind), ("listKind", &spec.list_kind)] {
        let e = is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !e.is_empty() {
            errs.push(invalid(
                &p.child(field),
                &s(value),
                &format!("may have mixed case, but should otherwise match: {}", e.join(",")),
            ));
        }
    }
    for (i, short) in spec.short_names.iter().enumerate() {
        let e = is_dns1035_label(short);
        if !e.is_empty() {
            errs.push(invalid(&p.child("shortNames").index(i), &s(short), &e.join(",")));
        }
    }
    if !spec.kind.is_empty() && spec.kind == spec.list_kind {
        errs.push(invalid(
            &p.child("listKind"),
            &s(&spec.list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in spec.categories.iter().enumerate() {
        let e = is_dns1035_label(category);
        if !e.is_empty() {
            errs.push(invalid(&p.child("categories").index(i), &s(category), &e.join(",")));
        }
    }
}

fn validate_version(v: &Version, p: &Path, status_enabled: bool, errs: &mut Errors) {
    for msg in deprecation_warning_errors(v.deprecated, v.deprecation_warning.as_deref()) {
        let value = v.deprecation_warning.as_deref().map(s).unwrap_or(Value::Null);
        errs.push(invalid(&p.child("deprecationWarning"), &value, &msg));
    }
    validate_validation(v.schema, status_enabled, &p.child("schema"), errs);
    validate_subresources(v.subresources, &p.child("subresources"), errs);
    if let Some(cols) = v.columns {
        for (i, c) in cols.iter().enumerate() {
            validate_column(c, &p.child("additionalPrinterColumns").index(i), errs);
        }
    }
    if let Some(sel) = v.selectable_fields.filter(|s| !s.is_empty()) {
        if v.schema.and_then(|s| present_in(s, "openAPIV3Schema")).is_none() {
            errs.push(invalid(
                &p.child("selectableFields"),
                &s(""),
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            ));
        } else {
            validate_selectable_fields(sel, &p.child("selectableFields"), errs);
        }
    }
}

fn deprecation_warning_errors(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    let Some(w) = warning else { return Vec::new() };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_owned()];
    }
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".to_owned());
    }
    if w.is_empty() {
        out.push("must not be an empty string".to_owned());
    }
    for (i, c) in w.char_indices() {
        if c.is_control() {
            out.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    out
}

fn validate_selectable_fields(fields: &[Value], p: &Path, errs: &mut Errors) {
    let mut unique = BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let path = f.get("jsonPath").and_then(Value::as_str).unwrap_or_default();
        if path.is_empty() {
            errs.push(required(&p.index(i).child("jsonPath"), ""));
            continue;
        }
        if !unique.insert(path) {
            errs.push((
                p.index(i).child("jsonPath").0,
                format!("Duplicate value: {}", go_quote(path)),
            ));
        }
    }
    if unique.len() > 8 {
        errs.push((
            p.0.clone(),
            format!("Too many: {}: must have at most 8 items", unique.len()),
        ));
    }
}

fn validate_column(c: &Value, p: &Path, errs: &mut Errors) {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let empty = Obj::new();
    let c = c.as_object().unwrap_or(&empty);
    if text(c, "name").is_empty() {
        errs.push(required(&p.child("name"), ""));
    }
    let t = text(c, "type");
    if t.is_empty() {
        errs.push(required(&p.child("type"), &format!("must be one of {TYPES}")));
    } else if !TYPES.split(',').any(|x| x == t) {
        errs.push(invalid(&p.child("type"), &s(&t), &format!("must be one of {TYPES}")));
    }
    let f = text(c, "format");
    if !f.is_empty() && !FORMATS.split(',').any(|x| x == f) {
        errs.push(invalid(
            &p.child("format"),
            &s(&f),
            &format!("must be one of {FORMATS}"),
        ));
    }
    let jp = text(c, "jsonPath");
    if jp.is_empty() {
        errs.push(required(&p.child("JSONPath"), ""));
    } else {
        validate_simple_json_path(&jp, &p.child("JSONPath"), errs);
    }
}
