//! Helpers on a schema node, the raw v1 JSON object of a `JSONSchemaProps`
//! (`apiextensions-apiserver/pkg/apis/apiextensions/types_jsonschema.go`):
//! its fields in declaration order (what Go's `%+v` and the "only … fields
//! are allowed" checks name), typed accessors, `items` as a schema or an
//! array (`JSONSchemaPropsOrArray`), `additionalProperties` as a boolean or
//! a schema (`JSONSchemaPropsOrBool`), and `SchemaHas` of `validation.go`.

use serde_json::Value;

use super::json::{present, Obj};

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
pub(super) fn set_fields(n: &Obj, structural: bool) -> Vec<&'static str> {
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

pub(super) fn ty(n: &Obj) -> &str {
    n.get("type").and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn obj<'a>(n: &'a Obj, k: &str) -> Option<&'a Obj> {
    n.get(k).and_then(Value::as_object)
}

pub(super) fn list<'a>(n: &'a Obj, k: &str) -> &'a [Value] {
    n.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

pub(super) fn schemas<'a>(n: &'a Obj, k: &str) -> impl Iterator<Item = (usize, &'a Obj)> {
    list(n, k)
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|o| (i, o)))
}

pub(super) fn props(n: &Obj) -> Option<&Obj> {
    obj(n, "properties")
}

pub(super) fn prop_iter<'a>(n: &'a Obj, k: &str) -> impl Iterator<Item = (&'a String, &'a Obj)> {
    obj(n, k)
        .into_iter()
        .flat_map(|m| m.iter().filter_map(|(k, v)| v.as_object().map(|o| (k, o))))
}

pub(super) fn opt_str<'a>(n: &'a Obj, k: &str) -> Option<&'a str> {
    n.get(k).and_then(Value::as_str)
}

/// `items`: a schema, or an array of schemas (forbidden).
pub(super) enum Items<'a> {
    Schema(&'a Obj),
    Array(&'a [Value]),
}

pub(super) fn items(n: &Obj) -> Option<Items<'_>> {
    match n.get("items") {
        Some(Value::Object(o)) => Some(Items::Schema(o)),
        Some(Value::Array(a)) => Some(Items::Array(a)),
        _ => None,
    }
}

pub(super) fn item_schema(n: &Obj) -> Option<&Obj> {
    match items(n) {
        Some(Items::Schema(o)) => Some(o),
        _ => None,
    }
}

/// `additionalProperties` (and `additionalItems`): (allows, schema).
pub(super) fn or_bool<'a>(n: &'a Obj, k: &str) -> Option<(bool, Option<&'a Obj>)> {
    match n.get(k) {
        Some(Value::Bool(b)) => Some((*b, None)),
        Some(Value::Object(o)) => Some((true, Some(o))),
        _ => None,
    }
}

pub(super) fn has_default(n: &Obj) -> bool {
    present(n, "default").is_some()
}

pub(super) fn preserve(n: &Obj) -> bool {
    n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// `SchemaHas`: the predicate holds for the node or any schema below it.
pub(super) fn schema_has(v: &Value, pred: &dyn Fn(&Obj) -> bool) -> bool {
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
