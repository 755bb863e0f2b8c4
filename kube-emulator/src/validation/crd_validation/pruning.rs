//! Pruning a default: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go`
//! (`Prune`: unknown fields go, `x-kubernetes-preserve-unknown-fields` keeps
//! them, `apiVersion`, `kind` and `metadata` of an embedded resource stay).

use serde_json::Value;

use super::json::{flag, Obj};
use super::schema_node::{item_schema, or_bool, preserve, props};

/// `pruning.Prune`.
pub(super) fn prune(x: &mut Value, s: Option<&Obj>, is_resource_root: bool) {
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
