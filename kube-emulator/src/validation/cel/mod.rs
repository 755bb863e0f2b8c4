//! CEL validation rules (`x-kubernetes-validations`) of a CRD schema.
//!
//! The Kubernetes API server evaluates every `x-kubernetes-validations`
//! rule of a custom resource's `openAPIV3Schema` on create and update;
//! [`CelRules`] does the same for the emulator, with the `cel` crate
//! (cel-rust) as the evaluator. Semantics follow Kubernetes v1.36.2, read
//! from the source vendored in openshift/microshift at commit
//! 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b
//! (`deps/github.com/openshift/kubernetes/staging/src/k8s.io/`). Each file
//! follows the upstream piece it ports, lowest first:
//!
//! | file | ports |
//! |---|---|
//! | `shape.rs` | `apiserver/pkg/cel/common/schemas.go` (`SchemaDeclType`: how CEL sees a schema node) |
//! | `escaping.rs` | `apiserver/pkg/cel/escaping.go` (property names in CEL) |
//! | `supported.rs` | what a rule may call: `apiserver/pkg/cel/environment/base.go`'s libraries as implemented here; the rest is refused |
//! | `compile.rs` | `apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go`, `validation.go`'s `ValidFieldPath` |
//! | `evaluate.rs` | `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go` (`oldSelf`, messages, field paths), `apiserver/pkg/cel/common/values.go`, `maplist.go` |
//! | `library.rs` | `apiserver/pkg/cel/library/lists.go`, `regex.go`; cel-go's `ext/sets.go` |
//! | `net.rs` | `apiserver/pkg/cel/library/urls.go` (`isURL`), `ip.go` (`isIP`), `cidr.go` (`isCIDR`) |
//! | `duration.rs` | cel-go's `duration(string)` on Go's `time.ParseDuration` |
//! | `env.rs` | `apiserver/pkg/cel/environment/base.go` (the environment rules compile in) |
//! | `mod.rs` (this file) | [`CelRules`]: compile a version's schema, validate an object |
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

mod compile;
mod duration;
mod env;
mod escaping;
mod evaluate;
mod library;
mod net;
mod shape;
mod supported;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use cel::{Context, Env};
use serde_json::Value as Json;

use compile::add_rules;
use env::ENV;
use evaluate::walk;
use shape::{shape, Node};

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
