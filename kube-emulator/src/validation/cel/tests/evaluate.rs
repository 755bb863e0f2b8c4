//! Evaluation ([`super::super::evaluate`]): `self` and `oldSelf` per node,
//! int-or-string, messages and field paths, resource roots and escaping,
//! `allOf` and `anyOf`.

use serde_json::json;

use super::{compile, spec, with_property, CelRules, TestResult};

/// The int-or-string quorum of a health check: an int from 1 to 100, or
/// a named policy (cf. validation_test.go "string in intOrString" /
/// "int in intOrString").
#[test]
fn int_or_string_rule() -> TestResult {
    let rules = compile(with_property(json!({
        "x-kubernetes-int-or-string": true,
        "x-kubernetes-validations": [{
            "rule": "type(self) == int ? (self >= 1 && self <= 100) : self in ['Majority', 'Any', 'All']",
            "message": "quorum must be 1..100 or Majority, Any, All"
        }]
    })))?;
    for ok in [json!(3), json!("Any")] {
        assert_eq!(rules.validate(&spec(ok.clone()), None), vec![], "{ok}");
    }
    for bad in [json!(0), json!("50%"), json!("lots")] {
        assert_eq!(
            rules.validate(&spec(bad.clone()), None),
            vec![(
                "spec.p".to_string(),
                "quorum must be 1..100 or Majority, Any, All".to_string()
            )],
            "{bad}"
        );
    }
    Ok(())
}

/// validation_test.go "string in intOrString", "int in intOrString" and
/// "percent comparison using intOrString".
#[test]
fn upstream_int_or_string_cases() -> TestResult {
    let schema = json!({"type": "object", "properties": {
        "something": {"x-kubernetes-int-or-string": true},
        "min": {"x-kubernetes-int-or-string": true},
        "current": {"type": "integer"},
        "available": {"type": "integer"},
    }});
    let valid_for_string = [
        "self.something == '25%'",
        "self.something != 1",
        "self.something == 1 || self.something == '25%'",
        "type(self.something) == string && self.something == '25%'",
        "type(self.something) == int ? self.something == 1 : self.something == '25%'",
        "self.something != ['anything']",
        r"type(self.min) == string && self.min.matches(r'(\d+(\.\d+)?%)')",
        "type(self.min) == int ? self.current <= self.min : double(self.current) / double(self.available) >= double(self.min.replace('%', '')) / 100.0",
    ];
    let object = json!({"something": "25%", "min": "50%", "current": 5, "available": 10});
    for rule in valid_for_string {
        let mut schema = schema.clone();
        schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
        assert_eq!(compile(schema)?.validate(&object, None), vec![], "{rule}");
    }
    let object = json!({"something": 1});
    for rule in [
        "self.something == 1",
        "self.something != 'some string'",
        "type(self.something) == int && self.something == 1",
    ] {
        let mut schema = schema.clone();
        schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
        assert_eq!(compile(schema)?.validate(&object, None), vec![], "{rule}");
    }
    Ok(())
}

#[test]
fn object_rule_with_has() -> TestResult {
    let rules = compile(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"tls": {"type": "boolean"}, "secretName": {"type": "string"}},
        "x-kubernetes-validations": [{
            "rule": "!has(self.tls) || !self.tls || has(self.secretName)",
            "message": "secretName is required when tls is true"
        }]
    }}}))?;
    assert_eq!(rules.validate(&json!({"spec": {}}), None), vec![]);
    assert_eq!(
        rules.validate(&json!({"spec": {"tls": true, "secretName": "s"}}), None),
        vec![]
    );
    assert_eq!(
        rules.validate(&json!({"spec": {"tls": true}}), None),
        vec![(
            "spec".to_string(),
            "secretName is required when tls is true".to_string()
        )]
    );
    Ok(())
}

#[test]
fn list_rule_with_all_and_item_rules() -> TestResult {
    let rules = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {
                "type": "array",
                "x-kubernetes-validations": [{"rule": "self.all(i, i.weight >= 0)"}],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.name.startsWith('ep-')", "fieldPath": ".name", "message": "name must start with ep-"}]
                }
            }
        }}}}),
    )?;
    let ok = json!({"spec": {"items": [{"name": "ep-a", "weight": 1}, {"name": "ep-b", "weight": 0}]}});
    assert_eq!(rules.validate(&ok, None), vec![]);
    let bad = json!({"spec": {"items": [{"name": "ep-a", "weight": -1}, {"name": "b", "weight": 0}]}});
    assert_eq!(
        rules.validate(&bad, None),
        vec![
            (
                "spec.items".to_string(),
                "failed rule: self.all(i, i.weight >= 0)".to_string()
            ),
            ("spec.items[1].name".to_string(), "name must start with ep-".to_string()),
        ]
    );
    Ok(())
}

/// validation_test.go "transition rules" and "skipped transition rule
/// for nil old ..." cases: `oldSelf` rules run only on update.
#[test]
fn transition_rule_only_on_update() -> TestResult {
    let rules = compile(with_property(json!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "p is immutable"}]
    })))?;
    assert_eq!(rules.validate(&spec(json!("a")), None), vec![]);
    assert_eq!(rules.validate(&spec(json!("a")), Some(&spec(json!("a")))), vec![]);
    assert_eq!(
        rules.validate(&spec(json!("b")), Some(&spec(json!("a")))),
        vec![("spec.p".to_string(), "p is immutable".to_string())]
    );
    // no old value at that path: skipped
    let old = json!({"spec": {}});
    assert_eq!(rules.validate(&spec(json!("b")), Some(&old)), vec![]);
    Ok(())
}

#[test]
fn optional_old_self() -> TestResult {
    let rules = compile(with_property(json!({
        "type": "string",
        "x-kubernetes-validations": [{
            "rule": "!oldSelf.hasValue() || self == oldSelf.value()",
            "optionalOldSelf": true,
            "messageExpression": "'p was ' + self"
        }]
    })))?;
    assert_eq!(rules.validate(&spec(json!("a")), None), vec![]);
    assert_eq!(
        rules.validate(&spec(json!("b")), Some(&spec(json!("a")))),
        vec![("spec.p".to_string(), "p was b".to_string())]
    );
    Ok(())
}

/// validation_test.go "Return error based on input fieldPath" (reason is
/// ignored here).
#[test]
fn field_path_and_message() -> TestResult {
    let rules = compile(json!({"type": "object", "properties": {"f": {
        "type": "object",
        "properties": {"m": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.m == 2", "fieldPath": ".m", "reason": "FieldValueForbidden", "message": "m must be 2"}]
    }}, "x-kubernetes-validations": [{"rule": "1 == 1"}]}))?;
    assert_eq!(
        rules.validate(&json!({"f": {"m": 1}}), None),
        vec![("f.m".to_string(), "m must be 2".to_string())]
    );
    let invalid = CelRules::compile(&json!({"type": "object", "properties": {"m": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".n"}]}));
    let errors = invalid.err().ok_or("fieldPath .n accepted")?;
    assert_eq!(errors[0].0, "x-kubernetes-validations[0].fieldPath");
    Ok(())
}

/// Resource root: `apiVersion`, `kind`, `metadata.name` are visible;
/// absent fields are "no such key" errors, as upstream ("null in
/// intOrString"); escaped property names (validation_test.go "escaping").
#[test]
fn root_escaping_and_errors() -> TestResult {
    let rules = compile(json!({"type": "object",
    "properties": {"spec": {"type": "object", "properties": {"x-y": {"type": "string"}, "namespace": {"type": "string"}, "n": {"type": "integer"}}}},
    "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('n') && self.kind == 'X'"},
        {"rule": "self.spec.x__dash__y == 'a' && self.spec.__namespace__ == 'b'"},
        {"rule": "self.spec.n > 0"},
    ]}))?;
    let object =
        json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n1"}, "spec": {"x-y": "a", "namespace": "b"}});
    let errors = rules.validate(&object, None);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "<root>");
    assert!(
        errors[0].1.contains("No such key: n") && errors[0].1.ends_with("evaluating rule: self.spec.n > 0"),
        "{errors:?}"
    );
    Ok(())
}

/// Maps (additionalProperties) and map lists correlate old values.
#[test]
fn correlated_old_values() -> TestResult {
    let rules = compile(json!({"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}},
    }}))?;
    let old = json!({"labels": {"a": "1"}, "ports": [{"name": "http", "port": 80}]});
    let new = json!({"labels": {"a": "2", "b": "1"}, "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 81}]});
    assert_eq!(
        rules.validate(&new, Some(&old)),
        vec![
            ("labels[a]".to_string(), "immutable".to_string()),
            ("ports[1]".to_string(), "port is immutable".to_string()),
        ]
    );
    Ok(())
}

/// validation_test.go "allOf rule" and "anyOf rule ignored".
#[test]
fn all_of_evaluated_any_of_ignored() -> TestResult {
    let rules = compile(json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "allOf": [{"x-kubernetes-validations": [{"rule": "self.n > 1", "message": "allOf"}]}],
        "anyOf": [{"x-kubernetes-validations": [{"rule": "self.n > 100", "message": "anyOf"}]}]}))?;
    assert_eq!(
        rules.validate(&json!({"n": 0}), None),
        vec![("<root>".to_string(), "allOf".to_string())]
    );
    assert_eq!(rules.validate(&json!({"n": 5}), None), vec![]);
    Ok(())
}
