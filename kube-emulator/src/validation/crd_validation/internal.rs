//! The internal `CustomResourceDefinitionSpec`, converted from v1: a port of
//! `apiextensions-apiserver/pkg/apis/apiextensions/v1/conversion.go`
//! (`Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec`)
//! and `defaults.go` (`SetDefaults_CustomResourceDefinitionSpec`). Per-version
//! schemas, subresources and columns that are identical in every version move
//! to the top level, so a single-version CRD reports
//! `spec.validation.openAPIV3Schema…`, exactly as a real server does;
//! differing ones keep `spec.versions[i].schema.openAPIV3Schema…`.

use serde_json::Value;

use super::json::{empty_obj, flag, present, strings, text, Obj};

pub(super) struct Version<'a> {
    pub(super) name: String,
    pub(super) storage: bool,
    pub(super) deprecated: bool,
    pub(super) deprecation_warning: Option<String>,
    pub(super) schema: Option<&'a Value>,
    pub(super) subresources: Option<&'a Value>,
    pub(super) columns: Option<&'a Vec<Value>>,
    pub(super) selectable_fields: Option<&'a Vec<Value>>,
    raw: &'a Value,
}

pub(super) struct Spec<'a> {
    pub(super) group: String,
    pub(super) scope: String,
    pub(super) plural: String,
    pub(super) singular: String,
    pub(super) kind: String,
    pub(super) list_kind: String,
    pub(super) short_names: Vec<String>,
    pub(super) categories: Vec<String>,
    pub(super) versions: Vec<Version<'a>>,
    pub(super) raw_versions: Vec<&'a Value>,
    pub(super) version: String,
    pub(super) validation: Option<&'a Value>,
    pub(super) subresources: Option<&'a Value>,
    pub(super) columns: Option<&'a Vec<Value>>,
    pub(super) selectable_fields: Option<&'a Vec<Value>>,
    pub(super) preserve_unknown_fields: bool,
    pub(super) conversion: Option<&'a Value>,
}

impl<'a> Spec<'a> {
    /// `SetDefaults_CustomResourceDefinitionSpec` plus
    /// `Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec`.
    pub(super) fn from_v1(spec: &'a Obj) -> Spec<'a> {
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

    pub(super) fn versions_value(&self) -> Value {
        Value::Array(self.versions.iter().map(|v| v.raw.clone()).collect())
    }

    pub(super) fn schemas(&self) -> Vec<&'a Value> {
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

pub(super) fn has_status(sub: Option<&Value>) -> bool {
    sub.and_then(|s| s.get("status")).is_some_and(|s| !s.is_null())
}
