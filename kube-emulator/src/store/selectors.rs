//! Label and field selectors (apimachinery `labels.Parse`, `fields.Parse`).

use serde_json::Value;

use crate::status::ApiError;
use crate::store::meta::{meta_str, meta_value};

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h notin (i),j,!k` (`==` as `=`).
    ///
    /// # Errors
    /// 400 BadRequest naming the bad term.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for term in split_top_level(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let bad = || ApiError::bad_request(format!("unable to parse requirement: {term:?}"));
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(valid_key(key.trim()).ok_or_else(bad)?)
            } else if let Some((key, values)) = split_set(term, " notin ") {
                Requirement::NotIn(valid_key(key).ok_or_else(bad)?, values.ok_or_else(bad)?)
            } else if let Some((key, values)) = split_set(term, " in ") {
                Requirement::In(valid_key(key).ok_or_else(bad)?, values.ok_or_else(bad)?)
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(valid_key(key.trim()).ok_or_else(bad)?, value.trim().to_owned())
            } else if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
                Requirement::Equals(valid_key(key.trim()).ok_or_else(bad)?, value.trim().to_owned())
            } else {
                Requirement::Exists(valid_key(term).ok_or_else(bad)?)
            };
            requirements.push(requirement);
        }
        Ok(LabelSelector(requirements))
    }

    /// Selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Does an object with these labels match?
    pub fn matches(&self, object: &Value) -> bool {
        let labels = meta_value(object, "labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

fn valid_key(key: &str) -> Option<String> {
    let ok =
        !key.is_empty() && key.len() <= 317 && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    ok.then(|| key.to_owned())
}

/// `key in (a, b)` → (key, [a, b]).
fn split_set<'a>(term: &'a str, op: &str) -> Option<(&'a str, Option<Vec<String>>)> {
    let (key, rest) = term.split_once(op)?;
    let rest = rest.trim();
    let values = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).map(|inner| {
        inner
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect()
    });
    Some((key.trim(), values))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A parsed field selector over `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    ///
    /// # Errors
    /// 400 BadRequest for other fields or bad syntax, as the real server
    /// does for fields it does not index.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: {term:?}")));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field} (the emulator supports metadata.name and metadata.namespace)"
                )));
            }
            terms.push((field.to_owned(), equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(terms))
    }

    /// Selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Does the object match?
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let key = if field == "metadata.name" { "name" } else { "namespace" };
            let actual = meta_str(object, key).unwrap_or("");
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_selectors() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        for (selector, expected) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier in (front)", true),
            ("app=web,tier=back", false),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(selector).unwrap().matches(&o),
                expected,
                "{selector}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a b=c").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&o));
        assert!(!FieldSelector::parse("metadata.namespace!=ns").unwrap().matches(&o));
        assert!(FieldSelector::parse("spec.x=1").is_err());
    }
}
