//! The v1 JSON read the way Go's `encoding/json` fills apiextensions' typed
//! structs (`apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go`):
//! a missing, null or wrongly typed spec-level field reads as its zero
//! value.

use serde_json::{Map, Value};

pub(super) type Obj = Map<String, Value>;

pub(super) fn empty_obj() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

pub(super) fn text(o: &Obj, k: &str) -> String {
    o.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
}

pub(super) fn flag(o: &Obj, k: &str) -> bool {
    o.get(k).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn strings(o: &Obj, k: &str) -> Vec<String> {
    o.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

pub(super) fn present<'a>(o: &'a Obj, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

pub(super) fn present_in<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|v| !v.is_null())
}
