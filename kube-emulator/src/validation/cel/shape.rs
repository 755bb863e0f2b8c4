//! How CEL sees a schema node: a port of the type side of
//! `apiserver/pkg/cel/common/schemas.go` (`SchemaDeclType`): `integer` is
//! int, `number` double, `x-kubernetes-int-or-string` dynamic (int or
//! string, so `type(self) == string ? ... : ...` works), `format: byte`
//! bytes; objects with `properties` expose only declared fields;
//! `additionalProperties` objects are maps; the resource root and
//! `x-kubernetes-embedded-resource` objects are resource roots
//! (`WithTypeAndObjectMeta`); schemas without a type, and arrays without
//! items, are not visible to CEL. A node also holds its compiled rules.

use std::collections::BTreeMap;

use cel::Program;
use serde_json::Value as Json;

/// How a schema node's values are seen by CEL (`common.SchemaDeclType`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    IntOrString,
    Integer,
    Number,
    String,
    Bytes,
    /// `format: date`, `date-time` or `duration`: a timestamp or duration
    /// upstream, a plain string here (rules touching it are refused).
    Temporal(&'static str),
    Boolean,
    Object,
    Map,
    Array,
    /// No CEL type (no `type`, or an array without items).
    Untyped,
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) nullable: bool,
    pub(super) properties: BTreeMap<String, Node>,
    pub(super) additional: Option<Box<Node>>,
    pub(super) items: Option<Box<Node>>,
    /// Root of a resource (the CR root, or `x-kubernetes-embedded-resource`).
    pub(super) resource_root: bool,
    /// `x-kubernetes-list-map-keys` of an `x-kubernetes-list-type: map` list.
    pub(super) list_map_keys: Option<Vec<String>>,
    pub(super) rules: Vec<Rule>,
}

#[derive(Debug)]
pub(super) struct Rule {
    pub(super) source: String,
    pub(super) program: Program,
    pub(super) message: Option<String>,
    pub(super) message_expression: Option<Program>,
    /// Normalized `fieldPath` (`validFieldPath.String()` upstream).
    pub(super) field_path: Option<String>,
    pub(super) uses_old_self: bool,
    pub(super) optional_old_self: bool,
}

pub(super) fn shape(schema: &Json, resource_root: bool) -> Node {
    let bool_ext = |name: &str| schema.get(name).and_then(Json::as_bool).unwrap_or(false);
    let ty = schema.get("type").and_then(Json::as_str).unwrap_or("");
    let format = schema.get("format").and_then(Json::as_str).unwrap_or("");
    let mut node = Node {
        kind: Kind::Untyped,
        nullable: bool_ext("nullable"),
        properties: BTreeMap::new(),
        additional: None,
        items: None,
        resource_root,
        list_map_keys: None,
        rules: Vec::new(),
    };
    node.kind = if bool_ext("x-kubernetes-int-or-string") {
        Kind::IntOrString
    } else {
        match ty {
            "integer" => Kind::Integer,
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "string" => match format {
                "byte" => Kind::Bytes,
                "date" => Kind::Temporal("date"),
                "date-time" => Kind::Temporal("date-time"),
                "duration" => Kind::Temporal("duration"),
                _ => Kind::String,
            },
            "array" => match schema.get("items") {
                Some(items) if items.is_object() => {
                    let embedded = items
                        .get("x-kubernetes-embedded-resource")
                        .and_then(Json::as_bool)
                        .unwrap_or(false);
                    node.items = Some(Box::new(shape(items, embedded)));
                    if schema.get("x-kubernetes-list-type").and_then(Json::as_str) == Some("map") {
                        node.list_map_keys = schema
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Json::as_array)
                            .map(|keys| keys.iter().filter_map(|k| k.as_str().map(String::from)).collect());
                    }
                    Kind::Array
                }
                _ => Kind::Untyped,
            },
            "object" => match schema.get("additionalProperties") {
                Some(additional) if additional.is_object() => {
                    let embedded = additional
                        .get("x-kubernetes-embedded-resource")
                        .and_then(Json::as_bool)
                        .unwrap_or(false);
                    node.additional = Some(Box::new(shape(additional, embedded)));
                    Kind::Map
                }
                _ => {
                    if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
                        for (name, property) in properties {
                            let embedded = property
                                .get("x-kubernetes-embedded-resource")
                                .and_then(Json::as_bool)
                                .unwrap_or(false);
                            node.properties.insert(name.clone(), shape(property, embedded));
                        }
                    }
                    Kind::Object
                }
            },
            _ => Kind::Untyped,
        }
    };
    node
}
