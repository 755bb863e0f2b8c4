//! Validation of `apiextensions.k8s.io/v1` CustomResourceDefinitions as
//! kube-apiserver does it when one is created: a port of upstream Kubernetes
//! v1.36.2, as vendored in openshift/microshift commit
//! 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b under
//! `deps/github.com/openshift/kubernetes/staging/src/k8s.io/`:
//!
//! * `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//!   (`ValidateCustomResourceDefinition`, `validateCustomResourceDefinitionSpec`,
//!   `validateCustomResourceDefinitionVersion`,
//!   `validateCustomResourceDefinitionValidation`,
//!   `ValidateCustomResourceDefinitionOpenAPISchema`, `specStandardValidatorV3`,
//!   `validateMapListKeysMapSet`, names, subresources, printer columns,
//!   conversion, stored versions, API approval, `preserveUnknownFields`);
//! * `apiextensions-apiserver/pkg/apiserver/schema/validation.go` and
//!   `complete.go` (`ValidateStructural`: structural invariants, value
//!   validations under `anyOf`/`allOf`/`oneOf`/`not`, int-or-string patterns,
//!   metadata restrictions, completeness), `convert.go` (`NewStructural`: what
//!   is structural, what is value validation, unsupported keywords);
//! * `apiextensions-apiserver/pkg/apiserver/schema/defaulting/validation.go`
//!   (`ValidateDefaults`) and `pruning/algorithm.go` (defaults must be pruned);
//! * `apiextensions-apiserver/pkg/apis/apiextensions/v1/conversion.go` and
//!   `defaults.go` (v1 → internal: per-version schemas, subresources and
//!   columns that are identical in every version move to the top level, so a
//!   single-version CRD reports `spec.validation.openAPIV3Schema…`, exactly
//!   as a real server does; differing ones keep
//!   `spec.versions[i].schema.openAPIV3Schema…`), and
//!   `pkg/registry/customresourcedefinition/strategy.go` (`PrepareForCreate`:
//!   the status is reset, `storedVersions` is the storage version);
//! * `apimachinery/pkg/util/validation` (DNS-1123 subdomain, DNS-1035 label,
//!   port) and `apimachinery/pkg/util/validation/field` (message format),
//!   `apiserver/pkg/util/webhook/validation.go` (webhook URL and service).
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

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

type Errors = Vec<(String, String)>;
type Obj = Map<String, Value>;

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

// ---------------------------------------------------------------------------
// field.Path and field.Error

#[derive(Clone, Debug)]
struct Path(String);

impl Path {
    fn new(root: &str) -> Path {
        Path(root.to_owned())
    }
    fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_owned())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }
    fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }
    fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
}

fn with_detail(kind: &str, detail: &str) -> String {
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {detail}")
    }
}

fn required(p: &Path, detail: &str) -> (String, String) {
    (p.0.clone(), with_detail("Required value", detail))
}

fn forbidden(p: &Path, detail: &str) -> (String, String) {
    (p.0.clone(), with_detail("Forbidden", detail))
}

/// Go's `%v`/`%q`/`json.Marshal` rendering of a bad value.
fn render(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    }
}

fn go_quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn invalid(p: &Path, value: &Value, detail: &str) -> (String, String) {
    (
        p.0.clone(),
        with_detail(&format!("Invalid value: {}", render(value)), detail),
    )
}

fn not_supported(p: &Path, value: &str, valid: &[&str]) -> (String, String) {
    let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
    let detail = format!("supported values: {}", quoted.join(", "));
    (p.0.clone(), format!("Unsupported value: {}: {detail}", go_quote(value)))
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

// ---------------------------------------------------------------------------
// apimachinery/pkg/util/validation

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1123_label_shape(v: &str) -> bool {
    let b = v.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => ok(f) && ok(l) && b.iter().all(|c| ok(c) || *c == b'-'),
        _ => false,
    }
}

fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if !v.split('.').all(is_dns1123_label_shape) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_owned());
    }
    errs
}

fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !(is_dns1123_label_shape(v) && v.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(DNS1035_LABEL_MSG.to_owned());
    }
    errs
}

// ---------------------------------------------------------------------------
// The internal CustomResourceDefinitionSpec, converted from v1

struct Version<'a> {
    name: String,
    storage: bool,
    deprecated: bool,
    deprecation_warning: Option<String>,
    schema: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: Option<&'a Vec<Value>>,
    selectable_fields: Option<&'a Vec<Value>>,
    raw: &'a Value,
}

struct Spec<'a> {
    group: String,
    scope: String,
    plural: String,
    singular: String,
    kind: String,
    list_kind: String,
    short_names: Vec<String>,
    categories: Vec<String>,
    versions: Vec<Version<'a>>,
    raw_versions: Vec<&'a Value>,
    version: String,
    validation: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: Option<&'a Vec<Value>>,
    selectable_fields: Option<&'a Vec<Value>>,
    preserve_unknown_fields: bool,
    conversion: Option<&'a Value>,
}

fn empty_obj() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

fn text(o: &Obj, k: &str) -> String {
    o.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn flag(o: &Obj, k: &str) -> bool {
    o.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn strings(o: &Obj, k: &str) -> Vec<String> {
    o.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn present<'a>(o: &'a Obj, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

impl<'a> Spec<'a> {
    /// `SetDefaults_CustomResourceDefinitionSpec` plus
    /// `Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec`.
    fn from_v1(spec: &'a Obj) -> Spec<'a> {
        let empty = empty_obj();
        let names = spec.get("names").and_then(Value::as_object).unwrap_or(empty);
        let kind = text(names, "kind");
        let mut singular = text(names, "singular");
        if singular.is_empty() {
            singular = kind.to_lowercase();
        }
        let mut list_kind = text(names, "listKind");
        if list_kind.is_empty() && !kind.is_empty() {
            list_kind = format!("{kind}List");
        }
        let raw_versions: Vec<&Value> = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let mut versions: Vec<Version> = raw_versions
            .iter()
            .map(|raw| {
                let v = raw.as_object().unwrap_or(empty);
                Version {
                    name: text(v, "name"),
                    storage: flag(v, "storage"),
                    deprecated: flag(v, "deprecated"),
                    deprecation_warning: v.get("deprecationWarning").and_then(Value::as_str).map(str::to_owned),
                    schema: present(v, "schema"),
                    subresources: present(v, "subresources"),
                    columns: v.get("additionalPrinterColumns").and_then(Value::as_array),
                    selectable_fields: v.get("selectableFields").and_then(Value::as_array),
                    raw,
                }
            })
            .collect();
        let mut out = Spec {
            group: text(spec, "group"),
            scope: text(spec, "scope"),
            plural: text(names, "plural"),
            singular,
            kind,
            list_kind,
            short_names: strings(names, "shortNames"),
            categories: strings(names, "categories"),
            version: versions.first().map(|v| v.name.clone()).unwrap_or_default(),
            validation: None,
            subresources: None,
            columns: None,
            selectable_fields: None,
            preserve_unknown_fields: flag(spec, "preserveUnknownFields"),
            conversion: present(spec, "conversion"),
            raw_versions,
            versions: Vec::new(),
        };
        if let Some(first) = versions.first() {
            let (schema, sub, cols, sel) = (first.schema, first.subresources, first.columns, first.selectable_fields);
            let same_schema = versions.iter().all(|v| v.schema == schema);
            let same_sub = versions.iter().all(|v| v.subresources == sub);
            let same_cols = versions.iter().all(|v| v.columns == cols);
            let same_sel = versions.iter().all(|v| v.selectable_fields == sel);
            if same_schema {
                out.validation = schema;
            }
            if same_sub {
                out.subresources = sub;
            }
            if same_cols {
                out.columns = cols;
            }
            if same_sel {
                out.selectable_fields = sel;
            }
            for v in &mut versions {
                if same_schema {
                    v.schema = None;
                }
                if same_sub {
                    v.subresources = None;
                }
                if same_cols {
                    v.columns = None;
                }
                if same_sel {
                    v.selectable_fields = None;
                }
            }
        }
        out.versions = versions;
        out
    }

    fn versions_value(&self) -> Value {
        Value::Array(self.versions.iter().map(|v| v.raw.clone()).collect())
    }

    fn schemas(&self) -> Vec<&'a Value> {
        let mut out: Vec<&Value> = Vec::new();
        if let Some(s) = self.validation.and_then(|v| v.get("openAPIV3Schema")) {
            out.push(s);
        }
        for v in &self.versions {
            if let Some(s) = v.schema.and_then(|v| v.get("openAPIV3Schema")) {
                out.push(s);
            }
        }
        out
    }
}

fn has_status(sub: Option<&Value>) -> bool {
    sub.and_then(|s| s.get("status")).is_some_and(|s| !s.is_null())
}

// ---------------------------------------------------------------------------
// ValidateCustomResourceDefinition

fn validate_object_meta(meta: &Obj, spec: &Spec, errs: &mut Errors) {
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

fn validate_stored_versions(stored: &[String], versions: &[Version], p: &Path, errs: &mut Errors) {
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

fn validate_api_approval(meta: &Obj, spec: &Spec, errs: &mut Errors) {
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

#[derive(Default)]
struct Url {
    scheme: String,
    user: Option<String>,
    host: String,
    query: String,
    fragment: String,
}

/// The parts of Go's `url.Parse` the webhook checks look at.
fn parse_url(raw: &str) -> Url {
    let mut u = Url::default();
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    u.fragment = fragment.to_owned();
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    u.query = query.to_owned();
    let mut rest = rest;
    if let Some((scheme, after)) = rest.split_once(':') {
        if !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            u.scheme = scheme.to_ascii_lowercase();
            rest = after;
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        let authority = after.split('/').next().unwrap_or_default();
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                u.user = Some(user.to_owned());
                u.host = host.to_owned();
            }
            None => u.host = authority.to_owned(),
        }
    }
    u
}

fn validate_spec(spec: &Spec, p: &Path, errs: &mut Errors) {
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

fn present_in<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|v| !v.is_null())
}

fn validate_enum_strings(p: &Path, value: &str, accepted: &[&str], errs: &mut Errors) {
    if value.is_empty() {
        errs.push(required(p, ""));
    } else if !accepted.contains(&value) {
        errs.push(not_supported(p, value, accepted));
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

fn validate_simple_json_path(v: &str, p: &Path, errs: &mut Errors) -> bool {
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

fn validate_subresources(sub: Option<&Value>, p: &Path, errs: &mut Errors) {
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

fn validate_conversion(c: &Obj, strategy: &str, p: &Path, errs: &mut Errors) {
    validate_enum_strings(&p.child("strategy"), strategy, &["None", "Webhook"], errs);
    let webhook = c.get("webhook").and_then(Value::as_object);
    let client_config = webhook.and_then(|w| w.get("clientConfig")).and_then(Value::as_object);
    let review_versions = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array);
    if strategy == "Webhook" {
        let wp = p.child("webhookClientConfig");
        match client_config {
            None => errs.push(required(&wp, "required when strategy is set to Webhook")),
            Some(cc) => {
                let url = cc.get("url").and_then(Value::as_str);
                let service = cc.get("service").and_then(Value::as_object);
                match (url, service) {
                    (Some(u), None) => validate_webhook_url(&wp.child("url"), u, errs),
                    (None, Some(svc)) => validate_webhook_service(&wp.child("service"), svc, errs),
                    _ => errs.push(required(&wp, "exactly one of url or service is required")),
                }
            }
        }
        let rp = p.child("conversionReviewVersions");
        let versions: Vec<String> = review_versions
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if versions.is_empty() {
            errs.push(required(&rp, ""));
        } else {
            let mut seen = BTreeSet::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if !seen.insert(v.as_str()) {
                    errs.push(invalid(&rp.index(i), &s(v), "duplicate version"));
                    continue;
                }
                for e in is_dns1035_label(v) {
                    errs.push(invalid(&rp.index(i), &s(v), &e));
                }
                if v == "v1" || v == "v1beta1" {
                    accepted = true;
                }
            }
            if !accepted {
                let value = Value::Array(versions.iter().map(|v| s(v)).collect());
                errs.push(invalid(&rp, &value, "must include at least one of v1, v1beta1"));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(forbidden(
                &p.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review_versions.is_some_and(|v| !v.is_empty()) {
            errs.push(forbidden(
                &p.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

fn validate_webhook_url(p: &Path, raw: &str, errs: &mut Errors) {
    const FORM: &str = "; desired format: https://host[/path]";
    let u = parse_url(raw);
    if u.scheme != "https" {
        errs.push(invalid(
            p,
            &s(&u.scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(invalid(p, &s(&u.host), &format!("host must be specified{FORM}")));
    }
    if let Some(user) = &u.user {
        errs.push(invalid(p, &s(user), "user information is not permitted in the URL"));
    }
    if !u.fragment.is_empty() {
        errs.push(invalid(p, &s(&u.fragment), "fragments are not permitted in the URL"));
    }
    if !u.query.is_empty() {
        errs.push(invalid(
            p,
            &s(&u.query),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_webhook_service(p: &Path, svc: &Obj, errs: &mut Errors) {
    if text(svc, "name").is_empty() {
        errs.push(required(&p.child("name"), ""));
    }
    if text(svc, "namespace").is_empty() {
        errs.push(required(&p.child("namespace"), ""));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443); // SetDefaults_ServiceReference
    if !(1..=65535).contains(&port) {
        errs.push(invalid(
            &p.child("port"),
            &Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    if path == "/" || path.is_empty() {
        return;
    }
    let pp = p.child("path");
    if path == "//" {
        errs.push(invalid(&pp, &s(path), "segment[0] may not be empty"));
        return;
    }
    if !path.starts_with('/') {
        errs.push(invalid(&pp, &s(path), "must start with a '/'"));
    }
    let mut check = path.get(1..).unwrap_or_default();
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(invalid(&pp, &s(path), &format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(invalid(&pp, &s(path), &format!("segment[{i}]: {failure}")));
        }
    }
}

// ---------------------------------------------------------------------------
// Schema helpers (a schema node is the raw v1 JSON object)

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// The internal `JSONSchemaProps` fields in declaration order, with their v1 JSON names.
const FIELDS: &[(&str, &str)] = &[
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", "Nullable"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", "Enum"),
    ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", "AllOf"),
    ("oneOf", "OneOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    ("x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields"),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"),
    ("x-kubernetes-validations", "XValidations"),
];

/// Which of [`FIELDS`] a node sets (non-zero after decoding). In
/// `structural` mode empty `enum`/`allOf`/`anyOf`/`oneOf`/`properties` count
/// as unset, as `NewStructural` drops them.
fn set_fields(n: &Obj, structural: bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    for &(key, go) in FIELDS {
        let Some(v) = n.get(key) else { continue };
        let zero = match v {
            Value::Null => true,
            Value::Bool(false) => key != "x-kubernetes-preserve-unknown-fields",
            Value::String(x) if x.is_empty() => key != "$ref",
            Value::Array(a) if a.is_empty() => structural && matches!(key, "enum" | "allOf" | "anyOf" | "oneOf"),
            Value::Object(o) if o.is_empty() => structural && key == "properties",
            _ => false,
        };
        if !zero {
            out.push(go);
        }
    }
    out
}

fn ty(n: &Obj) -> &str {
    n.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn obj<'a>(n: &'a Obj, k: &str) -> Option<&'a Obj> {
    n.get(k).and_then(Value::as_object)
}

fn list<'a>(n: &'a Obj, k: &str) -> &'a [Value] {
    n.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn schemas<'a>(n: &'a Obj, k: &str) -> impl Iterator<Item = (usize, &'a Obj)> {
    list(n, k)
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|o| (i, o)))
}

fn props(n: &Obj) -> Option<&Obj> {
    obj(n, "properties")
}

fn prop_iter<'a>(n: &'a Obj, k: &str) -> impl Iterator<Item = (&'a String, &'a Obj)> {
    obj(n, k)
        .into_iter()
        .flat_map(|m| m.iter().filter_map(|(k, v)| v.as_object().map(|o| (k, o))))
}

fn opt_str<'a>(n: &'a Obj, k: &str) -> Option<&'a str> {
    n.get(k).and_then(Value::as_str)
}

/// `items`: a schema, or an array of schemas (forbidden).
enum Items<'a> {
    Schema(&'a Obj),
    Array(&'a [Value]),
}

fn items(n: &Obj) -> Option<Items<'_>> {
    match n.get("items") {
        Some(Value::Object(o)) => Some(Items::Schema(o)),
        Some(Value::Array(a)) => Some(Items::Array(a)),
        _ => None,
    }
}

fn item_schema(n: &Obj) -> Option<&Obj> {
    match items(n) {
        Some(Items::Schema(o)) => Some(o),
        _ => None,
    }
}

/// `additionalProperties` (and `additionalItems`): (allows, schema).
fn or_bool<'a>(n: &'a Obj, k: &str) -> Option<(bool, Option<&'a Obj>)> {
    match n.get(k) {
        Some(Value::Bool(b)) => Some((*b, None)),
        Some(Value::Object(o)) => Some((true, Some(o))),
        _ => None,
    }
}

fn has_default(n: &Obj) -> bool {
    present(n, "default").is_some()
}

fn preserve(n: &Obj) -> bool {
    n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// `SchemaHas`: the predicate holds for the node or any schema below it.
fn schema_has(v: &Value, pred: &dyn Fn(&Obj) -> bool) -> bool {
    let Some(n) = v.as_object() else { return false };
    if pred(n) {
        return true;
    }
    let children = [
        "items",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "additionalProperties",
        "additionalItems",
    ]
    .iter()
    .filter_map(|k| n.get(*k))
    .flat_map(|c| match c {
        Value::Array(a) => a.iter().collect::<Vec<_>>(),
        other => vec![other],
    });
    let maps = ["properties", "patternProperties", "definitions", "dependencies"]
        .iter()
        .filter_map(|k| obj(n, k))
        .flat_map(|m| m.values());
    children.chain(maps).any(|c| schema_has(c, pred))
}

/// What `json.Unmarshal` into `JSONSchemaProps` would refuse.
fn check_decode(v: &Value, p: &Path, errs: &mut Errors) {
    let Some(n) = v.as_object() else {
        if !v.is_null() {
            errs.push(invalid(p, v, "cannot be decoded: expected a JSON object (kube-apiserver rejects the request body with 400 BadRequest)"));
        }
        return;
    };
    let mut bad = |k: &str, expected: &str| {
        if let Some(x) = n.get(k) {
            errs.push(invalid(&p.child(k), x, &format!("cannot be decoded: expected {expected} (kube-apiserver rejects the request body with 400 BadRequest)")));
        }
    };
    let is = |k: &str, f: &dyn Fn(&Value) -> bool| n.get(k).is_none_or(|x| x.is_null() || f(x));
    let string_array = |x: &Value| x.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    for k in [
        "id",
        "$schema",
        "$ref",
        "description",
        "type",
        "format",
        "title",
        "pattern",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ] {
        if !is(k, &Value::is_string) {
            bad(k, "a string");
        }
    }
    for k in ["maximum", "minimum", "multipleOf"] {
        if !is(k, &Value::is_number) {
            bad(k, "a number");
        }
    }
    for k in [
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "maxProperties",
        "minProperties",
    ] {
        if !is(k, &|x: &Value| x.is_i64()) {
            bad(k, "an integer");
        }
    }
    for k in [
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if !is(k, &Value::is_boolean) {
            bad(k, "a boolean");
        }
    }
    for k in ["required", "x-kubernetes-list-map-keys"] {
        if !is(k, &string_array) {
            bad(k, "an array of strings");
        }
    }
    for k in ["enum", "allOf", "oneOf", "anyOf", "x-kubernetes-validations"] {
        if !is(k, &Value::is_array) {
            bad(k, "an array");
        }
    }
    for k in [
        "not",
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
        "externalDocs",
    ] {
        if !is(k, &Value::is_object) {
            bad(k, "an object");
        }
    }
    for k in ["additionalProperties", "additionalItems"] {
        if !is(k, &|x: &Value| x.is_object() || x.is_boolean()) {
            bad(k, "a schema or a boolean");
        }
    }
    if !is("items", &|x: &Value| x.is_object() || x.is_array()) {
        bad("items", "a schema or an array of schemas");
    }
    for (i, r) in list(n, "x-kubernetes-validations").iter().enumerate() {
        let rp = p.child("x-kubernetes-validations").index(i);
        match r.as_object() {
            None => errs.push(invalid(
                &rp,
                r,
                "cannot be decoded: expected an object (kube-apiserver rejects the request body with 400 BadRequest)",
            )),
            Some(r) => {
                for k in ["rule", "message", "messageExpression", "reason", "fieldPath"] {
                    if r.get(k).is_some_and(|x| !x.is_null() && !x.is_string()) {
                        errs.push(invalid(&rp.child(k), &r[k], "cannot be decoded: expected a string (kube-apiserver rejects the request body with 400 BadRequest)"));
                    }
                }
            }
        }
    }
    for k in ["not", "additionalProperties", "additionalItems"] {
        if let Some(c) = n.get(k).filter(|c| c.is_object()) {
            check_decode(c, &p.child(k), errs);
        }
    }
    match n.get("items") {
        Some(c @ Value::Object(_)) => check_decode(c, &p.child("items"), errs),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| check_decode(c, &p.child("items").index(i), errs)),
        _ => {}
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, c) in list(n, k).iter().enumerate() {
            check_decode(c, &p.child(k).index(i), errs);
        }
    }
    for k in ["properties", "patternProperties", "definitions"] {
        for (name, c) in obj(n, k).into_iter().flatten() {
            check_decode(c, &p.child(k).key(name), errs);
        }
    }
    for (name, c) in obj(n, "dependencies").into_iter().flatten() {
        if !c.is_object() && !string_array(c) && !c.is_null() {
            errs.push(invalid(&p.child("dependencies").key(name), c, "cannot be decoded: expected a schema or an array of strings (kube-apiserver rejects the request body with 400 BadRequest)"));
        } else if c.is_object() {
            check_decode(c, &p.child("dependencies").key(name), errs);
        }
    }
}

// ---------------------------------------------------------------------------
// validateCustomResourceDefinitionValidation

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

fn validate_validation(validation: Option<&Value>, status_enabled: bool, p: &Path, errs: &mut Errors) {
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

/// `NewStructural`'s refusals (`validateUnsupportedFields`, items arrays,
/// `x-kubernetes-preserve-unknown-fields: false`), first one found.
fn new_structural_error(n: &Obj) -> Option<String> {
    let nonempty_str = |k: &str| opt_str(n, k).is_some_and(|x| !x.is_empty());
    let nonempty_map = |k: &str| obj(n, k).is_some_and(|m| !m.is_empty());
    if nonempty_str("id") {
        return Some("OpenAPIV3Schema 'id' is not supported".into());
    }
    if nonempty_str("$schema") {
        return Some("OpenAPIV3Schema 'schema' is not supported".into());
    }
    if nonempty_str("$ref") {
        return Some("OpenAPIV3Schema '$ref' is not supported".into());
    }
    if nonempty_map("patternProperties") {
        return Some("OpenAPIV3Schema 'patternProperties' is not supported".into());
    }
    if nonempty_map("dependencies") {
        return Some("OpenAPIV3Schema 'dependencies' is not supported".into());
    }
    if present(n, "additionalItems").is_some() {
        return Some("OpenAPIV3Schema 'additionalItems' is not supported".into());
    }
    if nonempty_map("definitions") {
        return Some("OpenAPIV3Schema 'definitions' is not supported".into());
    }
    if n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".into());
    }
    match items(n) {
        Some(Items::Array(a)) if !a.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into())
        }
        Some(Items::Schema(o)) => {
            if let Some(e) = new_structural_error(o) {
                return Some(e);
            }
        }
        _ => {}
    }
    let mut children: Vec<&Obj> = Vec::new();
    children.extend(prop_iter(n, "properties").map(|(_, o)| o));
    children.extend(obj(n, "additionalProperties"));
    children.extend(obj(n, "not"));
    for k in ["allOf", "anyOf", "oneOf"] {
        children.extend(schemas(n, k).map(|(_, o)| o));
    }
    children.into_iter().find_map(new_structural_error)
}

// ---------------------------------------------------------------------------
// schema.ValidateStructural

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn validate_structural(n: &Obj, p: &Path) -> Errors {
    let mut errs = Errors::new();
    structural_invariants(n, Level::Root, p, &mut errs);
    structural_completeness(n, p, &mut errs);
    errs.sort_by_cached_key(|(path, msg)| format!("{path}: {msg}"));
    errs
}

fn structural_invariants(n: &Obj, lvl: Level, p: &Path, errs: &mut Errors) {
    let t = ty(n);
    let item = item_schema(n);
    if t == "array" && item.is_none() {
        errs.push(required(&p.child("items"), "must be specified"));
    }
    if let Some(i) = item {
        structural_invariants(i, Level::Item, &p.child("items"), errs);
    }
    for (k, v) in prop_iter(n, "properties") {
        structural_invariants(v, Level::Field, &p.child("properties").key(k), errs);
    }
    let addl = or_bool(n, "additionalProperties");
    if let Some((_, schema)) = addl {
        if lvl == Level::Root {
            errs.push(forbidden(
                &p.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(a) = schema {
            structural_invariants(a, Level::Field, &p.child("additionalProperties"), errs);
        }
    }
    let ios = flag(n, "x-kubernetes-int-or-string");
    let embedded = flag(n, "x-kubernetes-embedded-resource");
    let keep = preserve(n);
    if ios && keep {
        errs.push(invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if ios && embedded {
        errs.push(invalid(
            &p.child("x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(list(n, "anyOf"));
    let skip_first_all_of_any_of = list(n, "allOf")
        .first()
        .and_then(Value::as_object)
        .is_some_and(|a| is_int_or_string_any_of(list(a, "anyOf")));
    value_validation(n, skip_any_of, skip_first_all_of_any_of, lvl, p, errs);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && t != "object" {
        if t.is_empty() {
            errs.push(required(
                &p.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(invalid(
                &p.child("type"),
                &s(t),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if t.is_empty() && !ios && !keep {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(&p.child("type"), detail));
    }
    if embedded && addl.is_some() {
        errs.push(forbidden(
            &p.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(invalid(&p.child("type"), &s(t), "must be object at the root"));
    }
    let properties = props(n);
    for meta_field in ["kind", "apiVersion"] {
        if let Some(f) = properties.and_then(|m| m.get(meta_field)).and_then(Value::as_object) {
            if check_metadata && ty(f) != "string" {
                errs.push(invalid(
                    &p.child("properties").key(meta_field).child("type"),
                    &s(ty(f)),
                    "must be string",
                ));
            }
        }
    }
    if let Some(m) = properties.and_then(|m| m.get("metadata")).and_then(Value::as_object) {
        metadata_invariants(m, check_metadata, lvl, &p.child("properties").key("metadata"), errs);
    }
    if embedded && !keep && properties.is_none_or(Map::is_empty) {
        errs.push(required(
            &p.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(m: &Obj, check_metadata: bool, lvl: Level, p: &Path, errs: &mut Errors) {
    if check_metadata && ty(m) != "object" {
        errs.push(invalid(&p.child("type"), &s(ty(m)), "must be object"));
    }
    if lvl == Level::Root {
        let keys: Vec<&str> = props(m)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let name = keys.contains(&"name");
        let generate_name = keys.contains(&"generateName");
        let cleared = (name && generate_name && keys.len() == 2) || ((name || generate_name) && keys.len() == 1);
        let rest: Vec<&str> = set_fields(m, true)
            .into_iter()
            .filter(|f| !(matches!(*f, "Type" | "Default") || (cleared && *f == "Properties")))
            .collect();
        if !rest.is_empty() {
            errs.push(forbidden(
                p,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

/// `anyOf: [{type: integer}, {type: string}]` and nothing else in either.
fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    let bare = |v: &Value, t: &str| {
        v.as_object()
            .is_some_and(|o| ty(o) == t && set_fields(o, true) == ["Type"])
    };
    any_of.len() == 2 && bare(&any_of[0], "integer") && bare(&any_of[1], "string")
}

fn value_validation(
    n: &Obj,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &Path,
    errs: &mut Errors,
) {
    if !skip_any_of {
        for (i, v) in schemas(n, "anyOf") {
            nested_value_validation(v, false, lvl, &p.child("anyOf").index(i), errs);
        }
    }
    for (i, v) in schemas(n, "allOf") {
        nested_value_validation(
            v,
            skip_first_all_of_any_of && i == 0,
            lvl,
            &p.child("allOf").index(i),
            errs,
        );
    }
    for (i, v) in schemas(n, "oneOf") {
        nested_value_validation(v, false, lvl, &p.child("oneOf").index(i), errs);
    }
    if let Some(v) = obj(n, "not") {
        nested_value_validation(v, false, lvl, &p.child("not"), errs);
    }
    if let Some(pattern) = opt_str(n, "pattern").filter(|x| !x.is_empty()) {
        if let Err(e) =
            crate::validation::schema::CrdSchema::new(serde_json::json!({"type": "string", "pattern": pattern}))
        {
            errs.push(invalid(
                &p.child("pattern"),
                &s(pattern),
                &format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

fn nested_value_validation(v: &Obj, skip_any_of: bool, lvl: Level, p: &Path, errs: &mut Errors) {
    value_validation(v, skip_any_of, false, lvl, p, errs);
    if let Some(i) = item_schema(v) {
        nested_value_validation(i, false, lvl, &p.child("items"), errs);
    }
    for (k, f) in prop_iter(v, "properties") {
        nested_value_validation(f, false, Level::Field, &p.child("properties").key(k), errs);
    }
    if !ty(v).is_empty() {
        errs.push(forbidden(&p.child("type"), "must be empty to be structural"));
    }
    // additionalProperties: false is dropped by newNestedValueValidation.
    if matches!(or_bool(v, "additionalProperties"), Some((true, _))) {
        errs.push(forbidden(
            &p.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if has_default(v) {
        errs.push(forbidden(&p.child("default"), "must be undefined to be structural"));
    }
    for k in ["title", "description"] {
        if opt_str(v, k).is_some_and(|x| !x.is_empty()) {
            errs.push(forbidden(&p.child(k), "must be empty to be structural"));
        }
    }
    if flag(v, "nullable") {
        errs.push(forbidden(&p.child("nullable"), "must be false to be structural"));
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, k) {
            errs.push(forbidden(&p.child(k), "must be false to be structural"));
        }
    }
    if !list(v, "x-kubernetes-list-map-keys").is_empty() {
        errs.push(forbidden(
            &p.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if opt_str(v, k).is_some() {
            errs.push(forbidden(&p.child(k), "must be undefined to be structural"));
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        errs.push(forbidden(
            &p.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if props(v).is_some_and(|m| m.contains_key("metadata")) {
        errs.push(forbidden(
            &p.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: only the root's value validations, as upstream.
fn structural_completeness(n: &Obj, p: &Path, errs: &mut Errors) {
    value_completeness(n, n, p, p, errs);
}

fn value_completeness(v: &Obj, s: &Obj, sp: &Path, vp: &Path, errs: &mut Errors) {
    if let Some(x) = obj(v, "not") {
        nested_completeness(x, Some(s), sp, &vp.child("not"), errs);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, x) in schemas(v, k) {
            nested_completeness(x, Some(s), sp, &vp.child(k).index(i), errs);
        }
    }
}

fn nested_completeness(v: &Obj, s: Option<&Obj>, sp: &Path, vp: &Path, errs: &mut Errors) {
    let Some(s) = s else {
        errs.push(required(sp, &format!("because it is defined in {}", vp.0)));
        return;
    };
    value_completeness(v, s, sp, vp, errs);
    if let Some(i) = item_schema(v) {
        nested_completeness(i, item_schema(s), &sp.child("items"), &vp.child("items"), errs);
    }
    for (k, f) in prop_iter(v, "properties") {
        match props(s).and_then(|m| m.get(k)).and_then(Value::as_object) {
            Some(sf) => nested_completeness(
                f,
                Some(sf),
                &sp.child("properties").key(k),
                &vp.child("properties").key(k),
                errs,
            ),
            None => errs.push(required(
                &sp.child("properties").key(k),
                &format!("because it is defined in {}", vp.child("properties").key(k).0),
            )),
        }
    }
}

// ---------------------------------------------------------------------------
// defaulting.ValidateDefaults

fn validate_defaults(root: &Obj, p: &Path) -> Errors {
    let mut errs = Errors::new();
    // The resource root is validated as if x-kubernetes-embedded-resource were set.
    defaults_rec(root, p, false, true, &mut errs);
    errs
}

fn defaults_rec(n: &Obj, p: &Path, inside_meta: bool, is_root: bool, errs: &mut Errors) {
    let embedded = is_root || flag(n, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !embedded;
    if let Some(default) = present(n, "default") {
        let dp = p.child("default");
        if !inside_meta {
            let mut pruned = default.clone();
            prune(&mut pruned, Some(n), embedded);
            if &pruned != default {
                errs.push(invalid(&dp, default, "must not have unknown fields"));
            }
        }
        if let Ok(schema) = crate::validation::schema::CrdSchema::new(Value::Object(n.clone())) {
            for (path, msg) in schema.validate(default) {
                let (ep, value) = if path == "<root>" {
                    (dp.clone(), Some(default))
                } else {
                    (Path(format!("{}.{path}", dp.0)), lookup(default, &path))
                };
                let body = match value {
                    Some(v) => format!("Invalid value: {}: {msg}", render(v)),
                    None => format!("Invalid value: {msg}"),
                };
                errs.push((ep.0, body));
            }
        }
    }
    if let Some(i) = item_schema(n) {
        defaults_rec(i, &p.child("items"), inside_meta, false, errs);
    }
    for (k, f) in prop_iter(n, "properties") {
        let sub_meta = inside_meta || (embedded && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        defaults_rec(f, &p.child("properties").key(k), sub_meta, false, errs);
    }
}

/// Resolves `a.b[0].c` (as [`crate::validation::schema::CrdSchema::validate`] reports it) in `v`.
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.') {
        let (name, rest) = part.split_once('[').map_or((part, ""), |(a, b)| (a, b));
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        for idx in rest.split('[').filter(|x| !x.is_empty()) {
            cur = cur.get(idx.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(cur)
}

/// `pruning.Prune`.
fn prune(x: &mut Value, s: Option<&Obj>, is_resource_root: bool) {
    prune_rec(x, s, is_resource_root);
}

fn prune_rec(x: &mut Value, s: Option<&Obj>, embedded_here: bool) {
    let is_meta = |k: &str| matches!(k, "apiVersion" | "kind" | "metadata");
    if let Some(sn) = s {
        if preserve(sn) {
            skip_prune(x, sn, embedded_here);
            return;
        }
    }
    match x {
        Value::Object(map) => {
            let Some(sn) = s else {
                map.clear();
                return;
            };
            let embedded = embedded_here || flag(sn, "x-kubernetes-embedded-resource");
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if embedded && is_meta(&k) {
                    continue;
                }
                if let Some(ps) = props(sn).and_then(|m| m.get(&k)).and_then(Value::as_object) {
                    if let Some(v) = map.get_mut(&k) {
                        prune_rec(v, Some(ps), false);
                    }
                } else if let Some((_, addl)) = or_bool(sn, "additionalProperties") {
                    if let Some(v) = map.get_mut(&k) {
                        prune_rec(v, addl, false);
                    }
                } else {
                    map.remove(&k);
                }
            }
        }
        Value::Array(a) => {
            let item = s.and_then(item_schema);
            for v in a {
                prune_rec(v, item, false);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Obj, embedded_here: bool) {
    let embedded = embedded_here || flag(s, "x-kubernetes-embedded-resource");
    match x {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(ps) = props(s).and_then(|m| m.get(k)).and_then(Value::as_object) {
                    prune_rec(v, Some(ps), false);
                } else if let Some((_, addl)) = or_bool(s, "additionalProperties") {
                    prune_rec(v, addl, false);
                }
            }
        }
        Value::Array(a) => {
            if let Some(item) = item_schema(s) {
                for v in a {
                    skip_prune(v, item, false);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// ValidateCustomResourceDefinitionOpenAPISchema and specStandardValidatorV3

#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    reason: String,
    inside_meta: bool,
}

impl Ssv {
    fn with_forbidden_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            reason: reason.to_owned(),
            ..self.clone()
        }
    }
    fn with_inside_meta(&self) -> Ssv {
        Ssv {
            inside_meta: true,
            ..self.clone()
        }
    }

    fn validate(&self, n: &Obj, p: &Path, errs: &mut Errors) {
        let t = ty(n);
        if !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t) {
            errs.push(not_supported(&p.child("type"), t, &OPENAPI_V3_TYPES));
        }
        if has_default(n) && !self.allow_defaults {
            let mut detail = "must not be set".to_owned();
            if !self.reason.is_empty() {
                detail = format!("{detail} {}", self.reason);
            }
            errs.push(forbidden(&p.child("default"), &detail));
        }
        if opt_str(n, "id").is_some_and(|x| !x.is_empty()) {
            errs.push(forbidden(&p.child("id"), "id is not supported"));
        }
        if present(n, "additionalItems").is_some() {
            errs.push(forbidden(
                &p.child("additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if obj(n, "patternProperties").is_some_and(|m| !m.is_empty()) {
            errs.push(forbidden(
                &p.child("patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if obj(n, "definitions").is_some_and(|m| !m.is_empty()) {
            errs.push(forbidden(&p.child("definitions"), "definitions is not supported"));
        }
        if present(n, "dependencies").is_some() {
            errs.push(forbidden(&p.child("dependencies"), "dependencies is not supported"));
        }
        if present(n, "$ref").is_some() {
            errs.push(forbidden(&p.child("$ref"), "$ref is not supported"));
        }
        if t == "null" {
            errs.push(forbidden(
                &p.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(items(n), Some(Items::Array(a)) if !a.is_empty()) {
            errs.push(forbidden(
                &p.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_meta && flag(n, "x-kubernetes-embedded-resource") {
            errs.push(forbidden(
                &p.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

fn openapi_schema(n: &Obj, p: &Path, ssv: &Ssv, is_root: bool, errs: &mut Errors) {
    ssv.validate(n, p, errs);
    if flag(n, "uniqueItems") {
        errs.push(forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = props(n).filter(|m| !m.is_empty());
    if let Some((allows, schema)) = or_bool(n, "additionalProperties") {
        if properties.is_some() && (!allows || schema.is_some()) {
            errs.push(forbidden(
                &p.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let Some(a) = schema {
            openapi_schema(a, &p.child("additionalProperties"), &sub, false, errs);
        }
    }
    let embedded = flag(n, "x-kubernetes-embedded-resource");
    for (k, f) in prop_iter(n, "properties") {
        let mut sub = ssv.clone();
        if (is_root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub = sub.with_inside_meta();
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {k}"));
            }
        }
        openapi_schema(f, &p.child("properties").key(k), &sub, false, errs);
    }
    if let Some(x) = obj(n, "not") {
        openapi_schema(x, &p.child("not"), ssv, false, errs);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, x) in schemas(n, k) {
            openapi_schema(x, &p.child(k).index(i), ssv, false, errs);
        }
    }
    for (k, x) in prop_iter(n, "definitions") {
        openapi_schema(x, &p.child("definitions").key(k), ssv, false, errs);
    }
    match items(n) {
        Some(Items::Schema(x)) => openapi_schema(x, &p.child("items"), ssv, false, errs),
        Some(Items::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                if let Some(x) = x.as_object() {
                    openapi_schema(x, &p.child("items").index(i), ssv, false, errs);
                }
            }
        }
        None => {}
    }
    for (k, x) in prop_iter(n, "dependencies") {
        openapi_schema(x, &p.child("dependencies").key(k), ssv, false, errs);
    }
    if n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_types(n, p, errs);
    validate_map_list_keys_map_set(n, p, errs);
    validation_rules(n, p, errs);
}

fn list_and_map_types(n: &Obj, p: &Path, errs: &mut Errors) {
    let t = ty(n);
    let map_type = opt_str(n, "x-kubernetes-map-type");
    let list_type = opt_str(n, "x-kubernetes-list-type");
    if let Some(mt) = map_type {
        if t != "object" {
            if t.is_empty() {
                errs.push(required(
                    &p.child("type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errs.push(invalid(
                    &p.child("type"),
                    &s(t),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(not_supported(
                &p.child("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    if list_type.is_some() && t != "array" {
        if t.is_empty() {
            errs.push(required(
                &p.child("type"),
                "must be array if x-kubernetes-list-type is specified",
            ));
        } else {
            errs.push(invalid(
                &p.child("type"),
                &s(t),
                "must be array if x-kubernetes-list-type is specified",
            ));
        }
    } else if let (Some("set"), Some(is)) = (list_type, item_schema(n)) {
        let items_list_type = opt_str(is, "x-kubernetes-list-type");
        let bad_value = items_list_type.map(s).unwrap_or(Value::Null);
        match ty(is) {
            "array" if items_list_type.is_some_and(|x| x != "atomic") => {
                errs.push(invalid(
                    &p.child("items").child("x-kubernetes-list-type"),
                    &bad_value,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            "object" if opt_str(is, "x-kubernetes-map-type") != Some("atomic") => {
                errs.push(invalid(
                    &p.child("items").child("x-kubernetes-map-type"),
                    &bad_value,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|x| !matches!(*x, "atomic" | "set" | "map")) {
        errs.push(not_supported(
            &p.child("x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys: Vec<String> = strings(n, "x-kubernetes-list-map-keys");
    let keys_value = || Value::Array(keys.iter().map(|k| s(k)).collect());
    if !keys.is_empty() {
        match list_type {
            None => errs.push(required(
                &p.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(invalid(
                &p.child("x-kubernetes-list-type"),
                &s(lt),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(required(
                &p.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items(n) {
            None => errs.push(required(
                &p.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Array(a)) => errs.push(invalid(
                &p.child("items"),
                &Value::Array(a.to_vec()),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(Items::Schema(is)) if ty(is) != "object" => {
                errs.push(invalid(
                    &p.child("items").child("type"),
                    &s(ty(is)),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(Items::Schema(is)) => {
                let mut seen = BTreeSet::new();
                for k in &keys {
                    match props(is).and_then(|m| m.get(k)).and_then(Value::as_object) {
                        Some(ks) => {
                            if matches!(ty(ks), "array" | "object") {
                                errs.push(invalid(
                                    &p.child("items").child("properties").key(k).child("type"),
                                    &s(ty(is)),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(invalid(
                            &p.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k.as_str()) {
                        errs.push(invalid(
                            &p.child("x-kubernetes-list-map-keys"),
                            &keys_value(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
}

fn validate_map_list_keys_map_set(n: &Obj, p: &Path, errs: &mut Errors) {
    let Some(is) = item_schema(n) else { return };
    let Some(lt) = opt_str(n, "x-kubernetes-list-type").filter(|x| matches!(*x, "set" | "map")) else {
        return;
    };
    if flag(is, "nullable") {
        errs.push(forbidden(
            &p.child("items").child("nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required_props = strings(is, "required");
        for k in strings(n, "x-kubernetes-list-map-keys") {
            let Some(ks) = props(is).and_then(|m| m.get(&k)).and_then(Value::as_object) else {
                continue;
            };
            let kp = p.child("items").child("properties").key(&k);
            if !required_props.contains(&k) && ks.get("default").is_none_or(Value::is_null) {
                errs.push(required(&kp.child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
            }
            if flag(ks, "nullable") {
                errs.push(forbidden(
                    &kp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
}

/// The plain-text checks on `x-kubernetes-validations` (CEL itself is not compiled here).
fn validation_rules(n: &Obj, p: &Path, errs: &mut Errors) {
    const REASONS: [&str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];
    let newlines = |x: &str| x.contains(['\n', '\r']);
    for (i, r) in schemas(n, "x-kubernetes-validations") {
        let rp = p.child("x-kubernetes-validations").index(i);
        let rule = text(r, "rule");
        let message = text(r, "message");
        let message_expression = text(r, "messageExpression");
        let field_path = text(r, "fieldPath");
        let (trimmed_rule, trimmed_msg) = (rule.trim(), message.trim());
        if trimmed_rule.is_empty() {
            errs.push(required(&rp.child("rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(invalid(
                &rp.child("message"),
                &s(&message),
                "must be non-empty if specified",
            ));
        } else if newlines(trimmed_msg) {
            errs.push(invalid(
                &rp.child("message"),
                &s(&message),
                "must not contain line breaks",
            ));
        } else if newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = opt_str(r, "reason") {
            if !REASONS.contains(&reason) {
                errs.push(not_supported(&rp.child("reason"), reason, &REASONS));
            }
        }
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(invalid(
                &rp.child("fieldPath"),
                &s(&field_path),
                "must be non-empty if specified",
            ));
        }
        if newlines(&field_path) {
            errs.push(invalid(
                &rp.child("fieldPath"),
                &s(&field_path),
                "must not contain line breaks",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    //! Cases ported from upstream's tables: `TestValidateCustomResourceDefinition`
    //! and `TestValidateCustomResourceDefinitionValidation`
    //! (pkg/apis/apiextensions/validation/validation_test.go) and
    //! `TestValidateStructuralCompleteness`, `TestValidateStructuralMetadataInvariants`,
    //! `TestValidateNestedValueValidationComplete` (pkg/apiserver/schema/validation_test.go),
    //! rewritten as v1 JSON (a single version: its schema is reported under
    //! `spec.validation`, as upstream's internal-version tables write it).
    use super::*;
    use serde_json::json;

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
        expect(&errs, &format!("{ROOT}.properties[metadata]"), "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified");
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
    fn defaults_must_validate_and_be_pruned() {
        // "invalid defaults with enabled feature gate, structural schema"
        let errs = validate_crd(&with_props(json!({
            "a": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}},
            "b": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc"}},
            "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
            "d": {"type": "object", "properties": {"good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"}},
                  "default": {"good": "a", "bad": "a"}},
            "i": {"type": "integer", "minimum": 1, "default": 0},
        })));
        expect(
            &errs,
            &format!("{ROOT}.properties[a].default"),
            "Invalid value: {\"bar\":42,\"foo\":\"abc\"}: must not have unknown fields",
        );
        expect(
            &errs,
            &format!("{ROOT}.properties[c].default.foo"),
            "Invalid value: 42: ",
        );
        expect(
            &errs,
            &format!("{ROOT}.properties[d].default.bad"),
            "Invalid value: \"a\": ",
        );
        expect(&errs, &format!("{ROOT}.properties[i].default"), "Invalid value: 0: ");
        assert!(!errs.iter().any(|(p, _)| p.contains("properties[b]")), "{errs:#?}");
        // "defaults with enabled feature gate, unstructural schema": defaults are only checked once the schema is structural
        let errs = validate_crd(&with_props(json!({"a": {"default": "x"}})));
        assert_eq!(errs.len(), 1, "{errs:#?}");
        expect(&errs, &format!("{ROOT}.properties[a].type"), "Required value");
    }

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
        doc["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": ""}, "conversionReviewVersions": ["v1"]}});
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

    #[test]
    fn invalid_pattern() {
        let errs = validate_crd(&with_props(json!({"a": {"type": "string", "pattern": "([a-z"}})));
        expect(
            &errs,
            &format!("{ROOT}.properties[a].pattern"),
            "Invalid value: \"([a-z\": must be a valid regular expression, but isn't: ",
        );
    }
}
