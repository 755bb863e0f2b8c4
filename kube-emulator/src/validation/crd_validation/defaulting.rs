//! Defaults in a CRD's schema: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/defaulting/validation.go`
//! (`ValidateDefaults`: each default validates against its schema and is
//! left unchanged by pruning). Defaults are checked with this crate's
//! [`crate::validation::schema::CrdSchema`] (JSON Schema semantics, so the
//! detail text differs from kube-openapi's).

use serde_json::Value;

use super::field::{invalid, render, Errors, Path};
use super::json::{flag, present, Obj};
use super::pruning::prune;
use super::schema_node::{item_schema, prop_iter};

pub(super) fn validate_defaults(root: &Obj, p: &Path) -> Errors {
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
