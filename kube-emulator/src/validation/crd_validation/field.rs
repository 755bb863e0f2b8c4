//! Field paths and errors as apimachinery prints them: a port of
//! `apimachinery/pkg/util/validation/field` (`path.go`: `field.Path`,
//! `Child`, `Key`, `Index`; `errors.go`: `Required`, `Forbidden`, `Invalid`,
//! `NotSupported` and `Error.Error()`'s message format, with Go's `%v`/`%q`
//! rendering of the bad value), plus `validateEnumStrings` of
//! `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`,
//! which is made of them only.

use serde_json::Value;

pub(super) type Errors = Vec<(String, String)>;

#[derive(Clone, Debug)]
pub(super) struct Path(pub(super) String);

impl Path {
    pub(super) fn new(root: &str) -> Path {
        Path(root.to_owned())
    }
    pub(super) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_owned())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }
    pub(super) fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }
    pub(super) fn index(&self, i: usize) -> Path {
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

pub(super) fn required(p: &Path, detail: &str) -> (String, String) {
    (p.0.clone(), with_detail("Required value", detail))
}

pub(super) fn forbidden(p: &Path, detail: &str) -> (String, String) {
    (p.0.clone(), with_detail("Forbidden", detail))
}

/// Go's `%v`/`%q`/`json.Marshal` rendering of a bad value.
pub(super) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    }
}

pub(super) fn go_quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

pub(super) fn invalid(p: &Path, value: &Value, detail: &str) -> (String, String) {
    (
        p.0.clone(),
        with_detail(&format!("Invalid value: {}", render(value)), detail),
    )
}

pub(super) fn not_supported(p: &Path, value: &str, valid: &[&str]) -> (String, String) {
    let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
    let detail = format!("supported values: {}", quoted.join(", "));
    (p.0.clone(), format!("Unsupported value: {}: {detail}", go_quote(value)))
}

pub(super) fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

pub(super) fn validate_enum_strings(p: &Path, value: &str, accepted: &[&str], errs: &mut Errors) {
    if value.is_empty() {
        errs.push(required(p, ""));
    } else if !accepted.contains(&value) {
        errs.push(not_supported(p, value, accepted));
    }
}
