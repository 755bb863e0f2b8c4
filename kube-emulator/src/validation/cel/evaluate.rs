//! Evaluating the rules on an object: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`
//! (`Validate`): rules are evaluated at each schema node with `self` bound
//! to the node's value (null values are skipped), per item of arrays and per
//! value of maps; `oldSelf` is the correlated old value (same property or
//! map key; for arrays only the item of an `x-kubernetes-list-type: map`
//! list with the same keys, per `apiserver/pkg/cel/common/maplist.go`); a
//! rule referencing `oldSelf` is skipped when there is no old value unless
//! `optionalOldSelf` is true (then `oldSelf` is an optional); the message is
//! `message`, else the result of `messageExpression` (trimmed; ignored if it
//! fails, is empty or has a line break), else `failed rule: <rule>`; the
//! field path is the node's plus the normalized `fieldPath`; evaluation
//! errors are reported as `<error> evaluating rule: <rule or message>`.
//! Values are converted as `apiserver/pkg/cel/common/values.go`
//! (`UnstructuredToVal`) does: declared properties under their escaped names
//! ([`super::escaping`]), map keys not escaped, and only `apiVersion`,
//! `kind`, `metadata.name` and `metadata.generateName` of a resource root.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use cel::objects::{Key, Map, OptionalValue};
use cel::{Context, ExecutionError, Value};
use serde_json::Value as Json;

use super::escaping::escape;
use super::shape::{Kind, Node};

fn child_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

pub(super) fn walk(
    node: &Node,
    path: &str,
    value: &Json,
    old: Option<&Json>,
    context: &Context,
    errors: &mut Vec<(String, String)>,
) {
    if value.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    evaluate_rules(node, path, value, old, context, errors);
    match value {
        Json::Object(fields) => {
            let old_fields = old.and_then(Json::as_object);
            if let Some(values) = node.additional.as_deref() {
                for (key, v) in fields {
                    let old_v = old_fields.and_then(|o| o.get(key));
                    walk(
                        values,
                        &format!("{}[{key}]", if path.is_empty() { "" } else { path }),
                        v,
                        old_v,
                        context,
                        errors,
                    );
                }
            }
            for (key, v) in fields {
                if let Some(child) = node.properties.get(key) {
                    let old_v = old_fields.and_then(|o| o.get(key));
                    walk(child, &child_path(path, key), v, old_v, context, errors);
                }
            }
        }
        Json::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                let old_items = old.and_then(Json::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&node.list_map_keys, old_items) {
                        (Some(keys), Some(old_items)) => correlate(keys, item, old_items),
                        _ => None,
                    };
                    walk(item_node, &format!("{path}[{i}]"), item, old_item, context, errors);
                }
            }
        }
        _ => {}
    }
}

/// The old item of a map list with the same keys (`maplist.go`).
fn correlate<'a>(keys: &[String], item: &Json, old_items: &'a [Json]) -> Option<&'a Json> {
    let key_of = |item: &Json| -> Option<Vec<Json>> {
        let fields = item.as_object()?;
        keys.iter()
            .map(|k| {
                fields
                    .get(k)
                    .filter(|v| !v.is_object() && !v.is_array() && !v.is_null())
                    .cloned()
            })
            .collect()
    };
    let key = key_of(item)?;
    old_items.iter().find(|old| key_of(old).as_ref() == Some(&key))
}

fn evaluate_rules(
    node: &Node,
    path: &str,
    value: &Json,
    old: Option<&Json>,
    context: &Context,
    errors: &mut Vec<(String, String)>,
) {
    if node.rules.is_empty() {
        return;
    }
    let self_value = to_cel(value, node, node.resource_root);
    let old_value = old.map(|o| to_cel(o, node, node.resource_root));
    let node_path = if path.is_empty() {
        "<root>".to_string()
    } else {
        path.to_string()
    };
    for rule in &node.rules {
        if rule.uses_old_self && old_value.is_none() && !rule.optional_old_self {
            continue;
        }
        let mut scope = context.new_inner_scope();
        scope.add_variable_from_value("self", self_value.clone());
        let old_binding = if rule.optional_old_self {
            Some(Value::Opaque(Arc::new(match &old_value {
                Some(v) => OptionalValue::of(v.clone()),
                None => OptionalValue::none(),
            })))
        } else {
            old_value.clone()
        };
        if let Some(old_binding) = old_binding {
            scope.add_variable_from_value("oldSelf", old_binding);
        }
        let error_string = rule.message.as_deref().map(str::trim).unwrap_or(rule.source.trim());
        match rule.program.execute(&scope) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => {
                let at = match &rule.field_path {
                    Some(fp) if path.is_empty() => fp.clone(),
                    Some(fp) => format!("{path}.{fp}"),
                    None => node_path.clone(),
                };
                let message = match &rule.message {
                    Some(message) => message.trim().to_string(),
                    None => {
                        // Upstream evaluates messageExpression with `oldSelf`
                        // as in the rule without optionalOldSelf.
                        let mut message_scope = context.new_inner_scope();
                        message_scope.add_variable_from_value("self", self_value.clone());
                        if let Some(old) = &old_value {
                            message_scope.add_variable_from_value("oldSelf", old.clone());
                        }
                        rule.message_expression
                            .as_ref()
                            .and_then(|m| match m.execute(&message_scope) {
                                Ok(Value::String(s)) => Some(s.trim().to_string()),
                                _ => None,
                            })
                            .filter(|m| !m.is_empty() && !m.contains('\n'))
                            .unwrap_or_else(|| format!("failed rule: {}", rule.source.trim()))
                    }
                };
                errors.push((at, message));
            }
            Err(ExecutionError::NoSuchOverload(e)) => errors.push((
                node_path.clone(),
                format!("'no such overload: {e}': call arguments did not match a supported operator, function or macro signature for rule: {error_string}"),
            )),
            Err(e) => errors.push((node_path.clone(), format!("{e} evaluating rule: {error_string}"))),
        }
    }
}

/// A JSON value as CEL sees it under `node` (`UnstructuredToVal`).
fn to_cel(value: &Json, node: &Node, resource_root: bool) -> Value {
    match (value, node.kind) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), _) => Value::Bool(*b),
        (Json::Number(n), Kind::Number) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        (Json::Number(n), _) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::UInt(u),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Value::Int(f as i64),
            (_, _, f) => Value::Float(f.unwrap_or(f64::NAN)),
        },
        (Json::String(s), Kind::Bytes) => match base64::engine::general_purpose::STANDARD.decode(s) {
            Ok(bytes) => Value::Bytes(Arc::new(bytes)),
            Err(_) => Value::String(Arc::new(s.clone())),
        },
        (Json::String(s), _) => Value::String(Arc::new(s.clone())),
        (Json::Array(items), _) => Value::List(Arc::new(match node.items.as_deref() {
            Some(item_node) => items
                .iter()
                .map(|i| to_cel(i, item_node, item_node.resource_root))
                .collect(),
            None => Vec::new(),
        })),
        (Json::Object(fields), _) => {
            let mut map: HashMap<Key, Value> = HashMap::new();
            if let Some(values) = node.additional.as_deref() {
                for (k, v) in fields {
                    map.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(v, values, values.resource_root),
                    );
                }
            } else {
                for (k, v) in fields {
                    if resource_root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    let (Some(child), Some(name)) = (node.properties.get(k), escape(k)) else {
                        continue;
                    };
                    if child.kind == Kind::Untyped || (v.is_null() && !child.nullable) {
                        continue;
                    }
                    map.insert(Key::String(Arc::new(name)), to_cel(v, child, child.resource_root));
                }
                if resource_root {
                    for k in ["apiVersion", "kind"] {
                        if let Some(Json::String(s)) = fields.get(k) {
                            map.insert(Key::String(Arc::new(k.into())), Value::String(Arc::new(s.clone())));
                        }
                    }
                    if let Some(Json::Object(meta)) = fields.get("metadata") {
                        let mut m = HashMap::new();
                        for k in ["name", "generateName"] {
                            if let Some(Json::String(s)) = meta.get(k) {
                                m.insert(Key::String(Arc::new(k.into())), Value::String(Arc::new(s.clone())));
                            }
                        }
                        map.insert(
                            Key::String(Arc::new("metadata".into())),
                            Value::Map(Map { map: Arc::new(m) }),
                        );
                    }
                }
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}
