//! Validation as kube-apiserver's apiextensions-apiserver does it, below
//! the store and knowing nothing of it: each file (and each file of the
//! two folders) follows the upstream package it ports (Kubernetes v1.36.2,
//! as vendored in openshift/microshift commit
//! 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b under
//! `deps/github.com/openshift/kubernetes/staging/src/k8s.io/`):
//!
//! | file | what | upstream |
//! |---|---|---|
//! | [`crd_validation`] | a CustomResourceDefinition at create: names, versions, subresources, columns, conversion, structural schemas, defaults; a folder, one file per upstream piece: | `apiextensions-apiserver/pkg/apis/apiextensions/validation` (`validation.go`), `pkg/apiserver/schema` (`validation.go`, `complete.go`, `convert.go`, `defaulting`, `pruning`) |
//! | · `field.rs`, `names.rs` | field paths and errors, DNS names | `apimachinery/pkg/util/validation/field`, `apimachinery/pkg/util/validation` |
//! | · `json.rs`, `internal.rs` | the v1 object read as Go decodes it, converted to the internal spec | `pkg/apis/apiextensions/v1` (`types.go`, `conversion.go`, `defaults.go`) |
//! | · `schema_node.rs`, `decode.rs` | a `JSONSchemaProps` node's fields; what decoding refuses | `pkg/apis/apiextensions/types_jsonschema.go`, `v1/marshal.go` |
//! | · `crd.rs`, `subresources.rs`, `conversion.rs` | meta, spec, names, versions, columns, selectable fields, stored versions, API approval; subresources; conversion and its webhook | `pkg/apis/apiextensions/validation/validation.go`, `apiserver/pkg/util/webhook/validation.go` |
//! | · `validation_spec.rs`, `openapi_schema.rs` | a version's schema; the OpenAPI checks on each node | `validation.go`: `validateCustomResourceDefinitionValidation`, `ValidateCustomResourceDefinitionOpenAPISchema` |
//! | · `structural.rs`, `defaulting.rs`, `pruning.rs` | structural schemas, defaults, pruning | `pkg/apiserver/schema` (`convert.go`, `validation.go`, `complete.go`), `schema/defaulting`, `schema/pruning` |
//! | [`schema`] | a custom resource against its version's `openAPIV3Schema`: pruning, defaulting, OpenAPI value validation | `pkg/apiserver/schema/pruning`, `pkg/apiserver/schema/defaulting`, `pkg/apiserver/validation` (kube-openapi's validator) |
//! | [`formats`] | the string `format`s checked | `pkg/apiserver/validation/formats.go` |
//! | [`list_types`] | `x-kubernetes-list-type: set` and `map` uniqueness | `pkg/apiserver/schema/listtype` |
//! | [`cel`] | `x-kubernetes-validations` rules, `oldSelf` on updates; a folder, one file per upstream piece: | `pkg/apiserver/schema/cel`, `apiserver/pkg/cel` |
//! | · `shape.rs`, `escaping.rs` | how CEL sees a schema node, property names | `apiserver/pkg/cel/common/schemas.go`, `apiserver/pkg/cel/escaping.go` |
//! | · `compile.rs`, `supported.rs` | compiling rules; refusing what is not evaluated here | `pkg/apiserver/schema/cel/compilation.go`, `apiserver/pkg/cel/environment/base.go` |
//! | · `evaluate.rs` | evaluation with `oldSelf`, messages, field paths | `pkg/apiserver/schema/cel/validation.go`, `apiserver/pkg/cel/common/values.go`, `maplist.go` |
//! | · `env.rs`, `library.rs`, `net.rs`, `duration.rs` | the environment and Kubernetes' functions | `apiserver/pkg/cel/library` (`lists.go`, `regex.go`, `urls.go`, `ip.go`, `cidr.go`), cel-go's `ext/sets.go`, Go's `time.ParseDuration` |

pub mod cel;
pub mod crd_validation;
pub mod formats;
pub mod list_types;
pub mod schema;
