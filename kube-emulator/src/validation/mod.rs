//! Validation as kube-apiserver's apiextensions-apiserver does it, below
//! the store and knowing nothing of it: each file follows the upstream
//! package it ports (Kubernetes v1.36.2, as vendored in openshift/microshift
//! commit 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b under
//! `deps/github.com/openshift/kubernetes/staging/src/k8s.io/`):
//!
//! | file | what | upstream |
//! |---|---|---|
//! | [`crd_validation`] | a CustomResourceDefinition at create: names, versions, subresources, columns, conversion, structural schemas, defaults | `apiextensions-apiserver/pkg/apis/apiextensions/validation`, `pkg/apiserver/schema` (`validation.go`, `complete.go`, `convert.go`, `defaulting`, `pruning`) |
//! | [`schema`] | a custom resource against its version's `openAPIV3Schema`: pruning, defaulting, OpenAPI value validation | `pkg/apiserver/schema/pruning`, `pkg/apiserver/schema/defaulting`, `pkg/apiserver/validation` (kube-openapi's validator) |
//! | [`formats`] | the string `format`s checked | `pkg/apiserver/validation/formats.go` |
//! | [`list_types`] | `x-kubernetes-list-type: set` and `map` uniqueness | `pkg/apiserver/schema/listtype` |
//! | [`cel`] | `x-kubernetes-validations` rules, `oldSelf` on updates | `pkg/apiserver/schema/cel`, `apiserver/pkg/cel/library` |

pub mod cel;
pub mod crd_validation;
pub mod formats;
pub mod list_types;
pub mod schema;
