//! What compiling refuses ([`super::super::supported`]): functions not
//! evaluated here, undeclared identifiers, temporal strings.

use serde_json::json;

use super::{compile, with_property, CelRules, TestResult};

#[test]
fn unknown_function_refused_at_compile() -> TestResult {
    let errors = CelRules::compile(&with_property(json!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": "self.size() > 0"}, {"rule": "quantity(self).isGreaterThan(quantity('1'))"}]
    })))
    .err()
    .ok_or("quantity accepted")?;
    assert_eq!(
        errors,
        vec![
            (
                "properties[spec].properties[p].x-kubernetes-validations[1].rule".to_string(),
                "CEL function isGreaterThan is not evaluated by the emulator".to_string()
            ),
            (
                "properties[spec].properties[p].x-kubernetes-validations[1].rule".to_string(),
                "CEL function quantity is not evaluated by the emulator".to_string()
            ),
        ]
    );
    for (rule, function) in [
        ("self.all(k, v, v != '')", "all"),
        ("format.dns1123Label().validate(self).hasValue()", "format.dns1123Label"),
        ("url(self).getHost() == ''", "url"),
    ] {
        let errors = CelRules::compile(&with_property(
            json!({"type": "string", "x-kubernetes-validations": [{"rule": rule}]}),
        ))
        .err()
        .ok_or(format!("{rule} accepted"))?;
        let expected = format!("CEL function {function} is not evaluated by the emulator");
        assert!(errors.iter().any(|(_, m)| *m == expected), "{rule}: {errors:?}");
    }
    let errors = CelRules::compile(&with_property(
        json!({"type": "string", "x-kubernetes-validations": [{"rule": "self == other"}]}),
    ))
    .err()
    .ok_or("undeclared variable accepted")?;
    assert!(errors[0].1.contains("undeclared reference to 'other'"), "{errors:?}");
    let errors = CelRules::compile(&with_property(
        json!({"type": "string", "x-kubernetes-validations": [{"rule": "self =="}]}),
    ))
    .err()
    .ok_or("syntax error accepted")?;
    assert!(errors[0].1.starts_with("compilation failed"), "{errors:?}");
    Ok(())
}

#[test]
fn temporal_fields_refused() -> TestResult {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}, "name": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.at != ''"}]}}});
    let errors = CelRules::compile(&schema).err().ok_or("date-time accepted")?;
    assert!(errors[0].1.contains("format date-time"), "{errors:?}");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"at": {"type": "string", "format": "date-time"}, "name": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.name != ''"}]}}});
    compile(schema)?;
    Ok(())
}
