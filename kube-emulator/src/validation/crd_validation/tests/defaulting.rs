//! Defaults ([`super::super::defaulting`], [`super::super::pruning`]): they
//! validate against their schema and are left unchanged by pruning.

use serde_json::json;

use super::{expect, validate_crd, with_props, ROOT};

#[test]
fn defaults_must_validate_and_be_pruned() {
    // "invalid defaults with enabled feature gate, structural schema"
    let errs = validate_crd(&with_props(json!({
        "a": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}},
        "b": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc"}},
        "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
        "d": {"type": "object", "properties": {"good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"}},
              "default": {"good": "a", "bad": "a"}},
        "i": {"type": "integer", "minimum": 1, "default": 0},
    })));
    expect(
        &errs,
        &format!("{ROOT}.properties[a].default"),
        "Invalid value: {\"bar\":42,\"foo\":\"abc\"}: must not have unknown fields",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[c].default.foo"),
        "Invalid value: 42: ",
    );
    expect(
        &errs,
        &format!("{ROOT}.properties[d].default.bad"),
        "Invalid value: \"a\": ",
    );
    expect(&errs, &format!("{ROOT}.properties[i].default"), "Invalid value: 0: ");
    assert!(!errs.iter().any(|(p, _)| p.contains("properties[b]")), "{errs:#?}");
    // "defaults with enabled feature gate, unstructural schema": defaults are only checked once the schema is structural
    let errs = validate_crd(&with_props(json!({"a": {"default": "x"}})));
    assert_eq!(errs.len(), 1, "{errs:#?}");
    expect(&errs, &format!("{ROOT}.properties[a].type"), "Required value");
}
