//! CEL validation rules (`x-kubernetes-validations`) of a CRD schema.
//!
//! The Kubernetes API server evaluates every `x-kubernetes-validations`
//! rule of a custom resource's `openAPIV3Schema` on create and update;
//! [`CelRules`] does the same for the emulator, with the `cel` crate
//! (cel-rust) as the evaluator. Semantics follow Kubernetes v1.36.2, read
//! from the source vendored in openshift/microshift at commit
//! 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b
//! (`deps/github.com/openshift/kubernetes/staging/src/k8s.io/`):
//! * `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`:
//!   rules are evaluated at each schema node with `self` bound to the
//!   node's value (null values are skipped), per item of arrays and per
//!   value of maps; `oldSelf` is the correlated old value (same property or
//!   map key; for arrays only the item of an `x-kubernetes-list-type: map`
//!   list with the same keys, per `apiserver/pkg/cel/common/maplist.go`); a
//!   rule referencing `oldSelf` is skipped when there is no old value unless
//!   `optionalOldSelf` is true (then `oldSelf` is an optional); rules inside
//!   `allOf` are evaluated, those inside `anyOf`, `oneOf` and `not` are
//!   ignored; the message is `message`, else the result of
//!   `messageExpression` (trimmed; ignored if it fails, is empty or has a
//!   line break), else `failed rule: <rule>`; the field path is the node's
//!   plus the normalized `fieldPath` (`ValidFieldPath`); evaluation errors
//!   are reported as `<error> evaluating rule: <rule or message>`.
//! * `apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go`: a
//!   blank rule is skipped; `fieldPath` must name a field of the schema.
//! * `apiserver/pkg/cel/common/schemas.go` and `values*.go`: `integer` is
//!   int, `number` double, `x-kubernetes-int-or-string` dynamic (int or
//!   string, so `type(self) == string ? ... : ...` works), `format: byte`
//!   bytes; objects with `properties` expose only declared fields, under
//!   names escaped as in `apiserver/pkg/cel/escaping.go` (`__dash__`,
//!   `__dot__`, `__slash__`, `__underscores__`, `__namespace__`, ...);
//!   `additionalProperties` objects are maps (keys not escaped); the
//!   resource root and `x-kubernetes-embedded-resource` objects expose
//!   `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` only
//!   (`WithTypeAndObjectMeta`); schemas without a type, and arrays without
//!   items, are not visible to CEL.
//! * `apiserver/pkg/cel/environment/base.go` (which libraries rules may
//!   call) and `apiserver/pkg/cel/library/{lists,regex,urls,ip,cidr}.go`.
//!
//! ## Supported
//! The standard CEL operators, macros (`has`, `all`, `exists`,
//! `exists_one`, `map` with 2 or 3 arguments, `filter`) and functions
//! (`size`, `contains`, `startsWith`, `endsWith`, `matches`, `type`, `int`,
//! `uint`, `double`, `string`, `bool`, `bytes`, `dyn`), optionals
//! (`optional.of`/`none`/`ofNonZeroValue`, `hasValue`, `value`, `or`,
//! `orValue`, `.?field`, `[?key]`, `optMap`, `optFlatMap`), the strings
//! extension (`charAt`, `indexOf`, `lastIndexOf`, `join`, `lowerAscii`,
//! `upperAscii`, `replace`, `split`, `substring`, `trim`, `format`,
//! `strings.quote`), the lists extension (`slice`, `flatten`, `distinct`,
//! `reverse`, `sort`, `sortBy`, `lists.range`), the sets extension
//! (`sets.contains`, `sets.equivalent`, `sets.intersects`), and from
//! Kubernetes' library: `isSorted`, `sum`, `min`, `max`, `indexOf` and
//! `lastIndexOf` on lists, `find` and `findAll`, `isURL`, `isIP`, `isCIDR`;
//! `duration(string)` as nanoseconds, for comparisons only (no duration type).
//!
//! ## Not supported
//! [`CelRules::compile`] refuses, naming it, any rule that calls another
//! function (Kubernetes' `url()`, `quantity`/`isQuantity`, `ip()`/`cidr()`
//! values and their methods, `format.*`, `semver`, `authorizer`, two-variable
//! comprehensions, `transformList`/`transformMap`, `first`/`last`,
//! `timestamp` and the time accessors: the crate is built without `chrono`),
//! references an identifier other than `self`, `oldSelf`, a comprehension
//! variable or a type name, builds a message (struct) literal, sits on a
//! schema node without a type, or touches a `format: date`, `date-time`
//! or `duration` string (a timestamp/duration in CEL upstream; detected as
//! the rule being on such a node or selecting a field whose values are
//! such strings).
//! Also not reproduced: static type checking (a rule that upstream refuses
//! as ill-typed, e.g. not returning bool or selecting an undeclared field,
//! compiles here and fails or errs when evaluated), cost estimation and
//! runtime cost limits, validation ratcheting (errors are never downgraded
//! to warnings), `reason` (every failure is an (path, message) pair),
//! set/map list equality (`x-kubernetes-list-type: set|map` lists compare
//! in order) and the string `reverse()` of the strings extension v3 (which
//! upstream's v2 lacks) is accepted.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};

use base64::Engine as _;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map, OptionalValue};
use cel::{Context, Env, ExecutionError, Program, Value};
use serde_json::Value as Json;

/// The CEL rules (`x-kubernetes-validations`) of one CRD version's
/// openAPIV3Schema, compiled.
pub struct CelRules {
    root: Node,
    env: Arc<Env>,
}

impl std::fmt::Debug for CelRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRules").field("rules", &self.count()).finish()
    }
}

/// How a schema node's values are seen by CEL (`common.SchemaDeclType`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    IntOrString,
    Integer,
    Number,
    String,
    Bytes,
    /// `format: date`, `date-time` or `duration`: a timestamp or duration
    /// upstream, a plain string here (rules touching it are refused).
    Temporal(&'static str),
    Boolean,
    Object,
    Map,
    Array,
    /// No CEL type (no `type`, or an array without items).
    Untyped,
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    nullable: bool,
    properties: BTreeMap<String, Node>,
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    /// Root of a resource (the CR root, or `x-kubernetes-embedded-resource`).
    resource_root: bool,
    /// `x-kubernetes-list-map-keys` of an `x-kubernetes-list-type: map` list.
    list_map_keys: Option<Vec<String>>,
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    source: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    /// Normalized `fieldPath` (`validFieldPath.String()` upstream).
    field_path: Option<String>,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl CelRules {
    /// Compiles every rule found anywhere in the schema (properties, items,
    /// additionalProperties, and `allOf` entries; `anyOf`, `oneOf` and
    /// `not` are ignored, as upstream).
    ///
    /// # Errors
    /// (path of the rule in the schema, message) for each rule that does not
    /// compile or uses something this module cannot evaluate: the CRD is then
    /// to be refused. Paths are relative to the openAPIV3Schema, as in
    /// `properties[spec].x-kubernetes-validations[0].rule`.
    pub fn compile(schema: &Json) -> Result<CelRules, Vec<(String, String)>> {
        let env = Arc::clone(&ENV);
        let mut root = shape(schema, true);
        let mut errors = Vec::new();
        add_rules(&mut root, schema, "", &env, &mut errors);
        if errors.is_empty() {
            Ok(CelRules { root, env })
        } else {
            Err(errors)
        }
    }

    /// How many rules were compiled.
    pub fn count(&self) -> usize {
        fn count(node: &Node) -> usize {
            node.rules.len()
                + node.properties.values().map(count).sum::<usize>()
                + node.additional.as_deref().map_or(0, count)
                + node.items.as_deref().map_or(0, count)
        }
        count(&self.root)
    }

    /// Evaluates the rules against an object (after pruning/defaulting).
    /// `old` is the previous object on update: a rule that references
    /// `oldSelf` is only evaluated where the old value exists at that path,
    /// unless `optionalOldSelf` is true.
    ///
    /// Returns (field path, message) for each failed rule, the path being
    /// like `spec.items[0].name` (`<root>` for the object itself).
    pub fn validate(&self, object: &Json, old: Option<&Json>) -> Vec<(String, String)> {
        let mut errors = Vec::new();
        let context = Context::with_env(Arc::clone(&self.env));
        walk(&self.root, "", object, old, &context, &mut errors);
        errors
    }
}

// ---------------------------------------------------------------------------
// Schema shape

fn shape(schema: &Json, resource_root: bool) -> Node {
    let bool_ext = |name: &str| schema.get(name).and_then(Json::as_bool).unwrap_or(false);
    let ty = schema.get("type").and_then(Json::as_str).unwrap_or("");
    let format = schema.get("format").and_then(Json::as_str).unwrap_or("");
    let mut node = Node {
        kind: Kind::Untyped,
        nullable: bool_ext("nullable"),
        properties: BTreeMap::new(),
        additional: None,
        items: None,
        resource_root,
        list_map_keys: None,
        rules: Vec::new(),
    };
    node.kind = if bool_ext("x-kubernetes-int-or-string") {
        Kind::IntOrString
    } else {
        match ty {
            "integer" => Kind::Integer,
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "string" => match format {
                "byte" => Kind::Bytes,
                "date" => Kind::Temporal("date"),
                "date-time" => Kind::Temporal("date-time"),
                "duration" => Kind::Temporal("duration"),
                _ => Kind::String,
            },
            "array" => match schema.get("items") {
                Some(items) if items.is_object() => {
                    let embedded = items
                        .get("x-kubernetes-embedded-resource")
                        .and_then(Json::as_bool)
                        .unwrap_or(false);
                    node.items = Some(Box::new(shape(items, embedded)));
                    if schema.get("x-kubernetes-list-type").and_then(Json::as_str) == Some("map") {
                        node.list_map_keys = schema
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Json::as_array)
                            .map(|keys| keys.iter().filter_map(|k| k.as_str().map(String::from)).collect());
                    }
                    Kind::Array
                }
                _ => Kind::Untyped,
            },
            "object" => match schema.get("additionalProperties") {
                Some(additional) if additional.is_object() => {
                    let embedded = additional
                        .get("x-kubernetes-embedded-resource")
                        .and_then(Json::as_bool)
                        .unwrap_or(false);
                    node.additional = Some(Box::new(shape(additional, embedded)));
                    Kind::Map
                }
                _ => {
                    if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
                        for (name, property) in properties {
                            let embedded = property
                                .get("x-kubernetes-embedded-resource")
                                .and_then(Json::as_bool)
                                .unwrap_or(false);
                            node.properties.insert(name.clone(), shape(property, embedded));
                        }
                    }
                    Kind::Object
                }
            },
            _ => Kind::Untyped,
        }
    };
    node
}

/// Compiles the rules of `schema` (a node's own schema or an `allOf` entry
/// applying to it) into `node`, and recurses.
fn add_rules(node: &mut Node, schema: &Json, at: &str, env: &Env, errors: &mut Vec<(String, String)>) {
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

// ---------------------------------------------------------------------------
// What a rule may use

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

struct References {
    uses_old_self: bool,
}

/// Refuses a rule that uses something not evaluated here (one message per
/// problem); tells whether it references `oldSelf`.
fn check_supported(expr: &IdedExpr, node: &Node) -> Result<References, Vec<String>> {
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

/// `apiserver/pkg/cel/escaping.go`'s `Escape`: the name a property has in
/// CEL, or `None` if it cannot be accessed.
fn escape(ident: &str) -> Option<String> {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
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

// ---------------------------------------------------------------------------
// Evaluation

fn child_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

fn walk(
    node: &Node,
    path: &str,
    value: &Json,
    old: Option<&Json>,
    context: &Context,
    errors: &mut Vec<(String, String)>,
) {
    if value.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    evaluate_rules(node, path, value, old, context, errors);
    match value {
        Json::Object(fields) => {
            let old_fields = old.and_then(Json::as_object);
            if let Some(values) = node.additional.as_deref() {
                for (key, v) in fields {
                    let old_v = old_fields.and_then(|o| o.get(key));
                    walk(
                        values,
                        &format!("{}[{key}]", if path.is_empty() { "" } else { path }),
                        v,
                        old_v,
                        context,
                        errors,
                    );
                }
            }
            for (key, v) in fields {
                if let Some(child) = node.properties.get(key) {
                    let old_v = old_fields.and_then(|o| o.get(key));
                    walk(child, &child_path(path, key), v, old_v, context, errors);
                }
            }
        }
        Json::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                let old_items = old.and_then(Json::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&node.list_map_keys, old_items) {
                        (Some(keys), Some(old_items)) => correlate(keys, item, old_items),
                        _ => None,
                    };
                    walk(item_node, &format!("{path}[{i}]"), item, old_item, context, errors);
                }
            }
        }
        _ => {}
    }
}

/// The old item of a map list with the same keys (`maplist.go`).
fn correlate<'a>(keys: &[String], item: &Json, old_items: &'a [Json]) -> Option<&'a Json> {
    let key_of = |item: &Json| -> Option<Vec<Json>> {
        let fields = item.as_object()?;
        keys.iter()
            .map(|k| {
                fields
                    .get(k)
                    .filter(|v| !v.is_object() && !v.is_array() && !v.is_null())
                    .cloned()
            })
            .collect()
    };
    let key = key_of(item)?;
    old_items.iter().find(|old| key_of(old).as_ref() == Some(&key))
}

fn evaluate_rules(
    node: &Node,
    path: &str,
    value: &Json,
    old: Option<&Json>,
    context: &Context,
    errors: &mut Vec<(String, String)>,
) {
    if node.rules.is_empty() {
        return;
    }
    let self_value = to_cel(value, node, node.resource_root);
    let old_value = old.map(|o| to_cel(o, node, node.resource_root));
    let node_path = if path.is_empty() {
        "<root>".to_string()
    } else {
        path.to_string()
    };
    for rule in &node.rules {
        if rule.uses_old_self && old_value.is_none() && !rule.optional_old_self {
            continue;
        }
        let mut scope = context.new_inner_scope();
        scope.add_variable_from_value("self", self_value.clone());
        let old_binding = if rule.optional_old_self {
            Some(Value::Opaque(Arc::new(match &old_value {
                Some(v) => OptionalValue::of(v.clone()),
                None => OptionalValue::none(),
            })))
        } else {
            old_value.clone()
        };
        if let Some(old_binding) = old_binding {
            scope.add_variable_from_value("oldSelf", old_binding);
        }
        let error_string = rule.message.as_deref().map(str::trim).unwrap_or(rule.source.trim());
        match rule.program.execute(&scope) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => {
                let at = match &rule.field_path {
                    Some(fp) if path.is_empty() => fp.clone(),
                    Some(fp) => format!("{path}.{fp}"),
                    None => node_path.clone(),
                };
                let message = match &rule.message {
                    Some(message) => message.trim().to_string(),
                    None => {
                        // Upstream evaluates messageExpression with `oldSelf`
                        // as in the rule without optionalOldSelf.
                        let mut message_scope = context.new_inner_scope();
                        message_scope.add_variable_from_value("self", self_value.clone());
                        if let Some(old) = &old_value {
                            message_scope.add_variable_from_value("oldSelf", old.clone());
                        }
                        rule.message_expression
                            .as_ref()
                            .and_then(|m| match m.execute(&message_scope) {
                                Ok(Value::String(s)) => Some(s.trim().to_string()),
                                _ => None,
                            })
                            .filter(|m| !m.is_empty() && !m.contains('\n'))
                            .unwrap_or_else(|| format!("failed rule: {}", rule.source.trim()))
                    }
                };
                errors.push((at, message));
            }
            Err(ExecutionError::NoSuchOverload(e)) => errors.push((
                node_path.clone(),
                format!("'no such overload: {e}': call arguments did not match a supported operator, function or macro signature for rule: {error_string}"),
            )),
            Err(e) => errors.push((node_path.clone(), format!("{e} evaluating rule: {error_string}"))),
        }
    }
}

/// A JSON value as CEL sees it under `node` (`UnstructuredToVal`).
fn to_cel(value: &Json, node: &Node, resource_root: bool) -> Value {
    match (value, node.kind) {
        (Json::Null, _) => Value::Null,
        (Json::Bool(b), _) => Value::Bool(*b),
        (Json::Number(n), Kind::Number) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        (Json::Number(n), _) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::UInt(u),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Value::Int(f as i64),
            (_, _, f) => Value::Float(f.unwrap_or(f64::NAN)),
        },
        (Json::String(s), Kind::Bytes) => match base64::engine::general_purpose::STANDARD.decode(s) {
            Ok(bytes) => Value::Bytes(Arc::new(bytes)),
            Err(_) => Value::String(Arc::new(s.clone())),
        },
        (Json::String(s), _) => Value::String(Arc::new(s.clone())),
        (Json::Array(items), _) => Value::List(Arc::new(match node.items.as_deref() {
            Some(item_node) => items
                .iter()
                .map(|i| to_cel(i, item_node, item_node.resource_root))
                .collect(),
            None => Vec::new(),
        })),
        (Json::Object(fields), _) => {
            let mut map: HashMap<Key, Value> = HashMap::new();
            if let Some(values) = node.additional.as_deref() {
                for (k, v) in fields {
                    map.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(v, values, values.resource_root),
                    );
                }
            } else {
                for (k, v) in fields {
                    if resource_root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    let (Some(child), Some(name)) = (node.properties.get(k), escape(k)) else {
                        continue;
                    };
                    if child.kind == Kind::Untyped || (v.is_null() && !child.nullable) {
                        continue;
                    }
                    map.insert(Key::String(Arc::new(name)), to_cel(v, child, child.resource_root));
                }
                if resource_root {
                    for k in ["apiVersion", "kind"] {
                        if let Some(Json::String(s)) = fields.get(k) {
                            map.insert(Key::String(Arc::new(k.into())), Value::String(Arc::new(s.clone())));
                        }
                    }
                    if let Some(Json::Object(meta)) = fields.get("metadata") {
                        let mut m = HashMap::new();
                        for k in ["name", "generateName"] {
                            if let Some(Json::String(s)) = meta.get(k) {
                                m.insert(Key::String(Arc::new(k.into())), Value::String(Arc::new(s.clone())));
                            }
                        }
                        map.insert(
                            Key::String(Arc::new("metadata".into())),
                            Value::Map(Map { map: Arc::new(m) }),
                        );
                    }
                }
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

// ---------------------------------------------------------------------------
// The environment: the standard library, the strings and lists extensions,
// and Kubernetes' functions.

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(build_env()));

fn build_env() -> Env {
    let mut env = Env::stdlib();
    let declared = (|| -> Result<(), cel::DeclarationError> {
        cel::extensions::strings(&mut env)?;
        cel::extensions::lists(&mut env)?;
        env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], list_is_sorted)?;
        env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], list_sum)?;
        env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
        env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
        env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], list_index_of)?;
        env.add_member_overload(
            "lastIndexOf",
            "list_last_index_of",
            LIST_TYPE,
            vec![DYN_TYPE],
            list_last_index_of,
        )?;
        env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], string_find)?;
        env.add_member_overload(
            "findAll",
            "string_find_all",
            STRING_TYPE,
            vec![STRING_TYPE],
            string_find_all,
        )?;
        env.add_member_overload(
            "findAll",
            "string_find_all_n",
            STRING_TYPE,
            vec![STRING_TYPE, INT_TYPE],
            string_find_all,
        )?;
        env.add_overload("isURL", "is_url", vec![STRING_TYPE], is_url_fn)?;
        env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip_fn)?;
        env.add_overload("duration", "string_to_duration", vec![STRING_TYPE], duration_fn)?;
        env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr_fn)?;
        env.add_overload(
            "sets.contains",
            "sets_contains",
            vec![LIST_TYPE, LIST_TYPE],
            sets_contains,
        )?;
        env.add_overload(
            "sets.equivalent",
            "sets_equivalent",
            vec![LIST_TYPE, LIST_TYPE],
            sets_equivalent,
        )?;
        env.add_overload(
            "sets.intersects",
            "sets_intersects",
            vec![LIST_TYPE, LIST_TYPE],
            sets_intersects,
        )?;
        Ok(())
    })();
    // The declarations are fixed: a conflict is a bug caught by the tests.
    debug_assert!(declared.is_ok(), "{declared:?}");
    env
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Out<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn arg(args: &Args<'_, '_>, i: usize) -> Result<Value, ExecutionError> {
    let v = args
        .get(i)
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))?;
    Value::try_from(v.as_ref())
}

fn out<'b, 'v>(value: Value) -> Out<'b, 'v> {
    let boxed: Box<dyn cel::common::value::Val> = value.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn list_arg(args: &Args<'_, '_>, i: usize, function: &str) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match arg(args, i)? {
        Value::List(list) => Ok(list),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a list, got {}", other.type_of()),
        )),
    }
}

fn string_arg(args: &Args<'_, '_>, i: usize, function: &str) -> Result<Arc<String>, ExecutionError> {
    match arg(args, i)? {
        Value::String(s) => Ok(s),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a string, got {}", other.type_of()),
        )),
    }
}

/// Orders two comparable values (`lists.go` accepts comparable elements only).
fn compare(a: &Value, b: &Value, function: &str) -> Result<std::cmp::Ordering, ExecutionError> {
    use std::cmp::Ordering;
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Float(y)) => (*x as f64).partial_cmp(y),
        (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => None,
    };
    ordering.map_or_else(
        || match (a, b) {
            (Value::Float(_), _) | (_, Value::Float(_)) => Ok(Ordering::Equal), // NaN
            _ => Err(ExecutionError::no_such_member_overload(
                function,
                vec![format!("{:?}", a.type_of()), format!("{:?}", b.type_of())],
            )),
        },
        Ok,
    )
}

fn list_is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "isSorted")?;
    for pair in list.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == std::cmp::Ordering::Greater {
            return out(Value::Bool(false));
        }
    }
    out(Value::Bool(true))
}

fn list_sum<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "sum")?;
    let mut total = match list.first() {
        None | Some(Value::Int(_)) => Value::Int(0),
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(other) => {
            return Err(ExecutionError::no_such_member_overload(
                "sum",
                vec![format!("list({:?})", other.type_of())],
            ));
        }
    };
    for v in list.iter() {
        total = match (&total, v) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "unsigned integer overflow"))?,
            ),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => {
                return Err(ExecutionError::no_such_member_overload(
                    "sum",
                    vec![format!("{:?}", v.type_of())],
                ));
            }
        };
    }
    out(total)
}

fn extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, keep: std::cmp::Ordering) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, function)?;
    let mut best = list
        .first()
        .ok_or_else(|| ExecutionError::function_error(function, format!("{function} called on empty list")))?;
    for v in list.iter().skip(1) {
        if compare(v, best, function)? == keep {
            best = v;
        }
    }
    out(best.clone())
}

fn list_min<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    extreme(args, "min", std::cmp::Ordering::Less)
}

fn list_max<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    extreme(args, "max", std::cmp::Ordering::Greater)
}

fn cel_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => (*x as f64) == *y,
        (Value::Int(x), Value::UInt(y)) | (Value::UInt(y), Value::Int(x)) => u64::try_from(*x).is_ok_and(|x| x == *y),
        _ => a == b,
    }
}

fn list_index_of<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "indexOf")?;
    let needle = arg(&args, 1)?;
    let i = list.iter().position(|v| cel_equal(v, &needle));
    out(Value::Int(i.map_or(-1, |i| i as i64)))
}

fn list_last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let list = list_arg(&args, 0, "lastIndexOf")?;
    let needle = arg(&args, 1)?;
    let i = list.iter().rposition(|v| cel_equal(v, &needle));
    out(Value::Int(i.map_or(-1, |i| i as i64)))
}

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

fn string_find<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "find")?;
    let re = regex(&string_arg(&args, 1, "find")?, "find")?;
    out(Value::String(Arc::new(
        re.find(&s).map(|m| m.as_str().to_string()).unwrap_or_default(),
    )))
}

fn string_find_all<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "findAll")?;
    let re = regex(&string_arg(&args, 1, "findAll")?, "findAll")?;
    let limit = match args.len() {
        3 => match arg(&args, 2)? {
            Value::Int(n) => n,
            _ => -1,
        },
        _ => -1,
    };
    let matches: Vec<Value> = if limit == 0 {
        Vec::new()
    } else {
        let all = re
            .find_iter(&s)
            .map(|m| Value::String(Arc::new(m.as_str().to_string())));
        if limit < 0 {
            all.collect()
        } else {
            all.take(limit as usize).collect()
        }
    };
    out(Value::List(Arc::new(matches)))
}

fn is_url_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    out(Value::Bool(is_url(&string_arg(&args, 0, "isURL")?)))
}

/// Go's `url.ParseRequestURI` succeeding (`library/urls.go`'s `isURL`).
fn is_url(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // getScheme
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == '+' || c == '-' || c == '.' {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false; // missing protocol scheme
            }
            scheme = &s[..i];
            rest = &s[i + 1..];
        }
        break;
    }
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    if !rest.starts_with('/') {
        // opaque ("mailto:x") with a scheme; a relative path is refused
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let end = authority_and_path.find('/').unwrap_or(authority_and_path.len());
        let authority = &authority_and_path[..end];
        path = &authority_and_path[end..];
        let host = match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                let valid = userinfo
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
                if !valid || !valid_escapes(userinfo) {
                    return false;
                }
                &authority[at + 1..]
            }
            None => authority,
        };
        let port = if let Some(literal) = host.strip_prefix('[') {
            match literal.find(']') {
                Some(close) => &literal[close + 1..],
                None => return false,
            }
        } else {
            host.rfind(':').map_or("", |i| &host[i..])
        };
        let valid_port = port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
        if !valid_port {
            return false;
        }
        if !valid_escapes(host) {
            return false;
        }
    }
    valid_escapes(path)
}

/// Every `%` starts a two-hex-digit escape.
fn valid_escapes(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// `duration(string)`: Go's `time.ParseDuration` (what cel-go's
/// `duration` calls), as an int of nanoseconds. The crate is built
/// without `chrono`, so there is no duration type: comparing two
/// durations (`==`, `!=`, `<`, `>`, ...) behaves as on the API server,
/// which is all the CRDs fedns serves use (gateway-api's HTTPRoute
/// `timeouts` rule); arithmetic mixing durations with numbers is not
/// refused as the API server would.
fn duration_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let text = string_arg(&args, 0, "duration")?;
    match parse_go_duration(&text) {
        Some(nanos) => out(Value::Int(nanos)),
        None => Err(ExecutionError::function_error(
            "duration",
            format!("time: invalid duration {:?}", text.as_str()),
        )),
    }
}

/// Go's `time.ParseDuration`: an optional sign, then one or more decimal
/// numbers (with an optional fraction) each followed by a unit (`ns`,
/// `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`); `0` alone is zero. Nanoseconds,
/// `None` when malformed or out of range.
fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * scale;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    // Whole nanoseconds, as Go keeps them.
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

fn is_ip_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    out(Value::Bool(parse_ip(&string_arg(&args, 0, "isIP")?).is_some()))
}

/// `library/ip.go`: IPv4 or IPv6 without zone; IPv4-mapped IPv6 refused.
fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains('%') {
        return None;
    }
    let ip: std::net::IpAddr = s.parse().ok()?;
    if let std::net::IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return None;
        }
    }
    Some(ip)
}

fn is_cidr_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "isCIDR")?;
    let valid = match s.split_once('/') {
        Some((ip, _)) => parse_ip(ip).is_some() && s.parse::<ipnet::IpNet>().is_ok(),
        None => false,
    };
    out(Value::Bool(valid))
}

fn sets_contains<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.contains")?;
    let b = list_arg(&args, 1, "sets.contains")?;
    out(Value::Bool(b.iter().all(|x| a.iter().any(|y| cel_equal(x, y)))))
}

fn sets_equivalent<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.equivalent")?;
    let b = list_arg(&args, 1, "sets.equivalent")?;
    let within = |a: &[Value], b: &[Value]| a.iter().all(|x| b.iter().any(|y| cel_equal(x, y)));
    out(Value::Bool(within(&a, &b) && within(&b, &a)))
}

fn sets_intersects<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let a = list_arg(&args, 0, "sets.intersects")?;
    let b = list_arg(&args, 1, "sets.intersects")?;
    out(Value::Bool(a.iter().any(|x| b.iter().any(|y| cel_equal(x, y)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    type TestResult = Result<(), String>;

    fn compile(schema: Json) -> Result<CelRules, String> {
        CelRules::compile(&schema).map_err(|e| format!("{e:?}"))
    }

    /// A root object with one property `p` of schema `property`.
    fn with_property(property: Json) -> Json {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"p": property}}}})
    }

    fn spec(p: Json) -> Json {
        json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"p": p}})
    }

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

    /// validation_test.go "stdlib list functions", "stdlib regex functions",
    /// "URL parsing" (isURL) and "IP and CIDR" (isIP), for the types this
    /// module evaluates.
    #[test]
    fn upstream_library_cases() -> TestResult {
        let schema = json!({"type": "object", "properties": {
            "ints": {"type": "array", "items": {"type": "integer"}},
            "unsortedInts": {"type": "array", "items": {"type": "integer"}},
            "emptyInts": {"type": "array", "items": {"type": "integer"}},
            "doubles": {"type": "array", "items": {"type": "number"}},
            "strings": {"type": "array", "items": {"type": "string"}},
            "objs": {"type": "array", "items": {"type": "object", "properties": {"f1": {"type": "string"}, "f2": {"type": "string"}}}},
            "str": {"type": "string"},
        }});
        let object = json!({
            "ints": [1, 2, 2, 3], "unsortedInts": [2, 1], "emptyInts": [],
            "doubles": [1, 2, 2, 3], "strings": ["a", "b", "b", "c"],
            "objs": [{"f1": "a", "f2": "a"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "c"}],
            "str": "this is a 123 string 456",
        });
        let valid = [
            "self.ints.sum() == 8",
            "self.ints.min() == 1",
            "self.ints.max() == 3",
            "self.emptyInts.sum() == 0",
            "self.ints.isSorted()",
            "self.emptyInts.isSorted()",
            "self.unsortedInts.isSorted() == false",
            "self.ints.indexOf(2) == 1",
            "self.ints.lastIndexOf(2) == 2",
            "self.ints.indexOf(10) == -1",
            "self.doubles.sum() == 8.0",
            "self.doubles.min() == 1.0",
            "self.doubles.max() == 3.0",
            "self.doubles.indexOf(2.0) == 1",
            "self.strings.min() == 'a'",
            "self.strings.max() == 'c'",
            "self.strings.isSorted()",
            "self.strings.indexOf('b') == 1",
            "self.strings.lastIndexOf('b') == 2",
            "[[1], [2]].indexOf([1]) == 0",
            "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
            "self.objs.indexOf(self.objs[1]) == 1",
            "self.objs.lastIndexOf(self.objs[1]) == 2",
            "([0] + self.emptyInts).min() == 0",
            "[].sum() == 0",
            "self.str.find('[0-9]+') == '123'",
            "self.str.find('xyz') == ''",
            "self.str.findAll('[0-9]+') == ['123', '456']",
            "self.str.findAll('[0-9]+', 0) == []",
            "self.str.findAll('[0-9]+', 1) == ['123']",
            "self.str.findAll('[0-9]+', -1) == ['123', '456']",
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/path') == true",
            "isURL('https://a:b:c/') == false",
            "isURL('../relative-path') == false",
            "isIP('192.168.0.1')",
            "!isIP('192.168.0.1/24')",
            "isCIDR('192.168.0.0/24')",
            "!isCIDR('192.168.0.1')",
            "'TacoCat'.lowerAscii() == 'tacocat'",
            "'TacoCat'.upperAscii() == 'TACOCAT'",
            "'a,b'.split(',') == ['a', 'b']",
            "['a', 'b'].join('-') == 'a-b'",
            "'abc'.indexOf('c') == 2",
            "'abca'.lastIndexOf('a') == 3",
            "'aa'.replace('a', 'b') == 'bb'",
            "' x '.trim() == 'x'",
            "sets.contains([1, 2, 3], [2])",
            "sets.equivalent([1, 2], [2, 1, 1])",
            "!sets.intersects([1], [2])",
            "self.ints.exists_one(i, i == 3)",
            "self.ints.map(i, i * 2) == [2, 4, 4, 6]",
            "self.ints.filter(i, i > 1).size() == 3",
            "size(self.str) > 3",
            "self.str.contains('123')",
            "self.str.endsWith('456')",
            "string(1) == '1'",
            "int('2') == 2",
        ];
        for rule in valid {
            let mut schema = schema.clone();
            schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
            assert_eq!(compile(schema)?.validate(&object, None), vec![], "{rule}");
        }
        let mut schema = schema.clone();
        schema["x-kubernetes-validations"] = json!([{"rule": "self.emptyInts.min() == 1"}]);
        let errors = compile(schema)?.validate(&object, None);
        assert!(
            errors.len() == 1 && errors[0].1.contains("min called on empty list"),
            "{errors:?}"
        );
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
        let object = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n1"}, "spec": {"x-y": "a", "namespace": "b"}});
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
}

#[cfg(test)]
mod duration_tests {
    use super::parse_go_duration;

    /// Go's `time.ParseDuration` examples and the Gateway API's Duration
    /// shape (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`).
    #[test]
    fn go_durations_parse_as_go_parses_them() {
        for (text, nanos) in [
            ("0", Some(0)),
            ("0s", Some(0)),
            ("1h30m", Some(5_400_000_000_000)),
            ("10s", Some(10_000_000_000)),
            ("500ms", Some(500_000_000)),
            ("1.5h", Some(5_400_000_000_000)),
            ("-2m", Some(-120_000_000_000)),
            ("300us", Some(300_000)),
            ("1h2m3s4ms", Some(3_723_004_000_000)),
            ("", None),
            ("1", None),
            ("s", None),
            ("1d", None),
            ("1..5s", None),
        ] {
            assert_eq!(parse_go_duration(text), nanos, "{text:?}");
        }
    }
}
