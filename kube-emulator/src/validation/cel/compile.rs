//! Compiling a schema's rules: a port of
//! `apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go`
//! (`Compile`: a blank rule is skipped; `rule` and `messageExpression` must
//! compile and use only what this module evaluates, [`super::supported`]) and
//! of `validation.go`'s `ValidFieldPath` (`fieldPath` must name a field of
//! the schema). Rules are collected from properties, items,
//! `additionalProperties` and `allOf` entries; `anyOf`, `oneOf` and `not`
//! are ignored, as upstream.

use cel::Env;
use serde_json::Value as Json;

use super::shape::{Kind, Node, Rule};
use super::supported::check_supported;

/// Compiles the rules of `schema` (a node's own schema or an `allOf` entry
/// applying to it) into `node`, and recurses.
pub(super) fn add_rules(node: &mut Node, schema: &Json, at: &str, env: &Env, errors: &mut Vec<(String, String)>) {
    if let Some(rules) = schema.get("x-kubernetes-validations").and_then(Json::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            let here = join_schema_path(at, &format!("x-kubernetes-validations[{i}]"));
            match compile_rule(node, rule, env) {
                Ok(Some(rule)) => node.rules.push(rule),
                Ok(None) => {}
                Err(problems) => errors.extend(
                    problems
                        .into_iter()
                        .map(|(field, message)| (format!("{here}.{field}"), message)),
                ),
            }
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
        for (name, property) in properties {
            // Rules are only evaluated on the structural spine (as upstream).
            if let Some(child) = node.properties.get_mut(name) {
                let path = join_schema_path(at, &format!("properties[{name}]"));
                add_rules(child, property, &path, env, errors);
            }
        }
    }
    if let (Some(items), Some(child)) = (schema.get("items"), node.items.as_deref_mut()) {
        add_rules(child, items, &join_schema_path(at, "items"), env, errors);
    }
    if let (Some(additional), Some(child)) = (schema.get("additionalProperties"), node.additional.as_deref_mut()) {
        add_rules(
            child,
            additional,
            &join_schema_path(at, "additionalProperties"),
            env,
            errors,
        );
    }
    if let Some(all_of) = schema.get("allOf").and_then(Json::as_array) {
        for (i, entry) in all_of.iter().enumerate() {
            add_rules(node, entry, &join_schema_path(at, &format!("allOf[{i}]")), env, errors);
        }
    }
}

fn join_schema_path(at: &str, segment: &str) -> String {
    if at.is_empty() {
        segment.to_string()
    } else {
        format!("{at}.{segment}")
    }
}

/// Compiles one rule; `Ok(None)` for a blank rule. Errors name the rule's
/// field (`rule`, `messageExpression`, `fieldPath`).
fn compile_rule(node: &Node, rule: &Json, env: &Env) -> Result<Option<Rule>, Vec<(String, String)>> {
    let text = |name: &str| rule.get(name).and_then(Json::as_str).map(str::to_string);
    let source = text("rule").unwrap_or_default();
    if source.trim().is_empty() {
        return Ok(None);
    }
    let err = |field: &str, message: String| vec![(field.to_string(), message)];
    let each = |field: &'static str| {
        move |messages: Vec<String>| messages.into_iter().map(|m| (field.to_string(), m)).collect::<Vec<_>>()
    };
    if node.kind == Kind::Untyped {
        return Err(err(
            "rule",
            "x-kubernetes-validations on a schema without a CEL type are not evaluated by the emulator".into(),
        ));
    }
    let program = env
        .compile(&source)
        .map_err(|e| err("rule", format!("compilation failed: {e}")))?;
    let refs = check_supported(program.expression(), node).map_err(each("rule"))?;
    let message_expression = match text("messageExpression").filter(|m| !m.trim().is_empty()) {
        None => None,
        Some(source) => {
            let program = env.compile(&source).map_err(|e| {
                err(
                    "messageExpression",
                    format!("messageExpression compilation failed: {e}"),
                )
            })?;
            check_supported(program.expression(), node).map_err(each("messageExpression"))?;
            Some(program)
        }
    };
    let field_path = match text("fieldPath").filter(|p| !p.is_empty()) {
        None => None,
        Some(path) => Some(
            valid_field_path(&path, node)
                .map_err(|m| err("fieldPath", format!("fieldPath must be a valid path: {m}")))?,
        ),
    };
    Ok(Some(Rule {
        source,
        program,
        message: text("message").filter(|m| !m.trim().is_empty()),
        message_expression,
        field_path,
        uses_old_self: refs.uses_old_self,
        optional_old_self: rule.get("optionalOldSelf").and_then(Json::as_bool).unwrap_or(false),
    }))
}

/// `ValidFieldPath` of validation.go: a path of `.name` and `['name']`
/// steps naming a field of `node`'s schema, normalized as a field.Path
/// (`a.b`, `a[key]` for map keys).
fn valid_field_path(path: &str, node: &Node) -> Result<String, String> {
    let mut out = String::new();
    let mut node = node;
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[', ']']).unwrap_or(r.len());
            name = r[..end].to_string();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let r = r
                .strip_prefix('\'')
                .ok_or_else(|| format!("expected single quoted string but got {r}"))?;
            let mut end = None;
            let bytes = r.as_bytes();
            for i in 0..bytes.len() {
                if bytes[i] == b'\'' && (i == 0 || bytes[i - 1] != b'\\') {
                    end = Some(i);
                    break;
                }
            }
            let end = end.ok_or("unexpected end of JSON path")?;
            name = unescape_single_quote(&r[..end])?;
            rest = r[end + 1..].strip_prefix(']').ok_or("expected ]")?;
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
        if node.kind == Kind::Object {
            node = node.properties.get(&name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if let (Kind::Map, Some(values)) = (node.kind, node.additional.as_deref()) {
            node = values;
            out.push_str(&format!("[{name}]"));
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(out)
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            other => {
                return Err(format!(
                    "invalid string literal: invalid escape char \\{}",
                    other.map(String::from).unwrap_or_default()
                ));
            }
        });
    }
    Ok(out)
}
