//! What a rule may use: the functions of the environment
//! (`apiserver/pkg/cel/environment/base.go`'s libraries, as far as
//! [`super::env`] implements them), `self`, `oldSelf`, comprehension
//! variables and type names. Anything else (another function, an undeclared
//! identifier, a message literal, a `format: date`, `date-time` or
//! `duration` string) is refused at compile time, naming it, instead of
//! being evaluated differently from upstream.

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::escaping::escape;
use super::shape::{Kind, Node};

/// Functions (and operators) the environment evaluates as Kubernetes does.
const SUPPORTED_FUNCTIONS: &[&str] = &[
    // operators, and those the standard macros expand to
    "_?_:_",
    "_&&_",
    "_||_",
    "!_",
    "-_",
    "_-_",
    "_+_",
    "_*_",
    "_/_",
    "_%_",
    "_==_",
    "_!=_",
    "_>=_",
    "_<=_",
    "_>_",
    "_<_",
    "_[_]",
    "_[?_]",
    "_?._",
    "@in",
    "@not_strictly_false",
    // standard library
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "type",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "dyn",
    // optionals
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // strings extension
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "format",
    "strings.quote",
    // lists extension (without version 3's first/last)
    "slice",
    "flatten",
    "distinct",
    "reverse",
    "sort",
    "lists.range",
    // sets extension
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Kubernetes' library
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    "isURL",
    "isIP",
    "duration",
    "isCIDR",
];

/// Identifiers naming types, usable in `type(x) == int`.
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

pub(super) struct References {
    pub(super) uses_old_self: bool,
}

/// Refuses a rule that uses something not evaluated here (one message per
/// problem); tells whether it references `oldSelf`.
pub(super) fn check_supported(expr: &IdedExpr, node: &Node) -> Result<References, Vec<String>> {
    let mut walker = Walker {
        scopes: Vec::new(),
        functions: BTreeSet::new(),
        identifiers: BTreeSet::new(),
        fields: BTreeSet::new(),
        structs: false,
    };
    walker.walk(expr);
    let mut problems = Vec::new();
    if walker.structs {
        problems.push("message literals (structs) are not evaluated by the emulator".to_string());
    }
    for function in &walker.functions {
        if !SUPPORTED_FUNCTIONS.contains(&function.as_str()) {
            problems.push(format!("CEL function {function} is not evaluated by the emulator"));
        }
    }
    for identifier in &walker.identifiers {
        if !matches!(identifier.as_str(), "self" | "oldSelf") && !TYPE_NAMES.contains(&identifier.as_str()) {
            problems.push(format!("compilation failed: undeclared reference to '{identifier}'"));
        }
    }
    if let Kind::Temporal(format) = node.kind {
        problems.push(format!(
            "a rule on a string of format {format} (a CEL timestamp or duration) is not evaluated by the emulator"
        ));
    }
    let mut temporal = BTreeMap::new();
    temporal_fields(node, &mut temporal);
    for field in &walker.fields {
        if let Some(format) = temporal.get(field.as_str()) {
            problems.push(format!(
                "field {field} holds strings of format {format} (CEL timestamps or durations), which the emulator does not evaluate"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(References {
        uses_old_self: walker.identifiers.contains("oldSelf"),
    })
}

/// The (escaped) names of the properties below `node` whose values are, or
/// are lists or maps of, `date`, `date-time` or `duration` strings.
fn temporal_fields(node: &Node, out: &mut BTreeMap<String, &'static str>) {
    fn temporal(node: &Node) -> Option<&'static str> {
        match node.kind {
            Kind::Temporal(format) => Some(format),
            Kind::Array => node.items.as_deref().and_then(temporal),
            Kind::Map => node.additional.as_deref().and_then(temporal),
            _ => None,
        }
    }
    for (name, child) in &node.properties {
        if let (Some(format), Some(name)) = (temporal(child), escape(name)) {
            out.insert(name, format);
        }
        temporal_fields(child, out);
    }
    for child in node.items.iter().chain(node.additional.iter()) {
        temporal_fields(child, out);
    }
}

struct Walker {
    /// Comprehension variables in scope.
    scopes: Vec<String>,
    functions: BTreeSet<String>,
    /// Free identifiers.
    identifiers: BTreeSet<String>,
    /// Field names selected (`a.b`, `has(a.b)`, `a.?b`).
    fields: BTreeSet<String>,
    structs: bool,
}

impl Walker {
    fn walk(&mut self, expr: &IdedExpr) {
        match &expr.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => {
                if !name.starts_with('@') && !self.scopes.iter().any(|s| s == name) {
                    self.identifiers.insert(name.clone());
                }
            }
            Expr::Select(select) => {
                // `optional.none` and the like are functions, not fields.
                self.fields.insert(select.field.clone());
                self.walk(&select.operand);
            }
            Expr::Call(call) => {
                let mut name = call.func_name.clone();
                let mut walk_target = true;
                if let Some(target) = &call.target {
                    if let Some(qualified) = self.free_qualified_name(target) {
                        // `ns.f(x)`: a namespaced function, unless rooted at a variable.
                        if !matches!(qualified.split('.').next(), Some("self" | "oldSelf")) {
                            name = format!("{qualified}.{name}");
                            walk_target = false;
                        }
                    }
                }
                if call.func_name == "_?._" {
                    if let Some(IdedExpr {
                        expr: Expr::Literal(cel::common::ast::LiteralValue::String(field)),
                        ..
                    }) = call.args.get(1)
                    {
                        self.fields.insert(field.inner().to_string());
                    }
                }
                self.functions.insert(name);
                if walk_target {
                    if let Some(target) = &call.target {
                        self.walk(target);
                    }
                }
                for arg in &call.args {
                    self.walk(arg);
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range);
                self.walk(&c.accu_init);
                let pushed = 2 + usize::from(c.iter_var2.is_some());
                self.scopes.push(c.iter_var.clone());
                self.scopes.push(c.accu_var.clone());
                if let Some(var) = &c.iter_var2 {
                    self.scopes.push(var.clone());
                }
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.walk(&c.result);
                self.scopes.truncate(self.scopes.len() - pushed);
            }
            Expr::List(list) => list.elements.iter().for_each(|e| self.walk(e)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(e) => {
                            self.walk(&e.key);
                            self.walk(&e.value);
                        }
                        EntryExpr::StructField(f) => self.walk(&f.value),
                    }
                }
            }
            Expr::Struct(_) => self.structs = true,
        }
    }

    /// `a.b.c` when `a` is not a comprehension variable.
    fn free_qualified_name(&self, expr: &IdedExpr) -> Option<String> {
        match &expr.expr {
            Expr::Ident(name) if !self.scopes.iter().any(|s| s == name) => Some(name.clone()),
            Expr::Select(select) if !select.test => self
                .free_qualified_name(&select.operand)
                .map(|q| format!("{q}.{}", select.field)),
            _ => None,
        }
    }
}
