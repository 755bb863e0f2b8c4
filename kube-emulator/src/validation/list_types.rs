//! The uniqueness rules of `x-kubernetes-list-type: set` and `map` lists,
//! checked as kube-apiserver checks custom resources: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`
//! (`ValidateListSetsAndMaps`) of Kubernetes v1.36.2 (openshift/microshift
//! commit 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b). A set refuses the
//! second and later copies of an item; a map refuses the second and later
//! items with the same values of its `x-kubernetes-list-map-keys` (a
//! missing key counts as a value of its own); an item of a map list that
//! is not an object is refused. Errors are `Duplicate value: …` at the
//! item's index, as `field.Duplicate` renders them.

use serde_json::{Map, Value};

/// (field path, message) per duplicate in `value` under `schema` (an
/// `openAPIV3Schema`), paths from the object's root (`spec.items[2]`).
pub(crate) fn duplicates(value: &Value, schema: &Value) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    walk(value, schema, "", &mut errors);
    errors
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn walk(value: &Value, schema: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, item) in map {
                match (properties.and_then(|p| p.get(key)), additional) {
                    (Some(sub), _) => walk(item, sub, &child(path, key), errors),
                    (None, Some(sub)) => walk(item, sub, &format!("{path}[{key}]"), errors),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => {
                    for i in repeated(items.iter().map(canonical)) {
                        errors.push((format!("{path}[{i}]"), format!("Duplicate value: {}", items[i])));
                    }
                }
                Some("map") => map_duplicates(items, schema, path, errors),
                _ => {}
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn map_duplicates(items: &[Value], schema: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    if let Some((i, item)) = items.iter().enumerate().find(|(_, x)| !x.is_object() && !x.is_null()) {
        errors.push((
            format!("{path}[{i}]"),
            format!("Invalid value: {item}: must be an object for an array of list-type map"),
        ));
        return;
    }
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The key values of each item; a missing key is left out, so
    // `{}` stands for "unspecified", as upstream's map of present keys.
    let key_of = |item: &Value| -> Map<String, Value> {
        keys.iter()
            .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
            .collect()
    };
    let key_values: Vec<Map<String, Value>> = items.iter().map(key_of).collect();
    for i in repeated(key_values.iter().map(|k| canonical(&Value::Object(k.clone())))) {
        errors.push((
            format!("{path}[{i}]"),
            format!("Duplicate value: {}", Value::Object(key_values[i].clone())),
        ));
    }
}

/// serde_json keeps object keys sorted (no `preserve_order`), so equal
/// values print equal.
fn canonical(value: &Value) -> String {
    value.to_string()
}

/// Indices of the second appearance of each repeated value (upstream
/// reports each repeated value once, at its second index).
fn repeated(values: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, v) in values.enumerate() {
        let times = seen.entry(v).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::duplicates;
    use serde_json::json;

    #[test]
    fn sets_and_maps_refuse_repeats_at_their_second_index() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["port", "protocol"],
                      "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}},
            "free": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
        }}}});
        let object = json!({"spec": {
            "tags": ["a", "b", "a", "a"],
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}, {"protocol": "TCP", "port": 80}],
            "free": ["x", "x"],
        }});
        assert_eq!(
            duplicates(&object, &schema),
            [
                (
                    "spec.ports[2]".to_owned(),
                    r#"Duplicate value: {"port":80,"protocol":"TCP"}"#.to_owned()
                ),
                ("spec.tags[2]".to_owned(), r#"Duplicate value: "a""#.to_owned()),
            ]
        );
        let not_objects = json!({"spec": {"ports": [1]}});
        assert_eq!(duplicates(&not_objects, &schema)[0].0, "spec.ports[0]");
    }
}
