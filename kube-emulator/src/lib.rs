//! # fedns-kube-emulator: a Kubernetes API server emulator
//!
//! No kube-apiserver can run on the machines fedns is tested on, so member
//! and host clusters are emulated: [`Emulator::start`] serves one cluster
//! over HTTPS on `127.0.0.1:<free port>` (certificate from a CA it
//! generates), requires a bearer token, and writes a kubeconfig that
//! kube-rs and kubectl accept. Many instances run side by side in one
//! process. It knows nothing of fedns's own crates, nor of the other
//! systems the stand-ins of `fedns-standins` play; those plug in through
//! [`api::extensions`] (proxy subresources, token authenticators).
//!
//! ## How it is built
//! One request goes down the layers, each folder depending only on those
//! below it (checked by `tests/tests/layout.rs`):
//!
//! | layer | what |
//! |---|---|
//! | [`Emulator`] (`emulator.rs`), [`seed`](Emulator::seed_paths) | one cluster's listener, kubeconfig and fault switches; seeding from YAML |
//! | [`api`] | the request path: authentication, faults, routing to discovery, proxies or verbs; watch streams |
//! | [`store`] | the objects and every verb's semantics; the resources served; selectors |
//! | [`validation`] | CRDs and custom resources validated as kube-apiserver validates them, one file per upstream package |
//! | `status` | `Status` errors, shared by all |
//!
//! The loopback plumbing (TLS, ports, the accept loop) is `fedns-loopback`.
//!
//! ## What it does
//! * Discovery: `/version`, `/healthz`, `/readyz`, `/livez`, `/api`,
//!   `/api/v1`, `/apis`, `/apis/<group>[/<version>]` for core/v1
//!   (namespaces, services, endpoints, nodes, secrets, configmaps,
//!   events, serviceaccounts), discovery.k8s.io/v1 endpointslices,
//!   networking.k8s.io/v1 ingresses, coordination.k8s.io/v1 leases,
//!   events.k8s.io/v1 events, apiextensions.k8s.io/v1
//!   customresourcedefinitions, and, so that install manifests apply, apps/v1
//!   deployments and rbac.authorization.k8s.io/v1 roles, rolebindings,
//!   clusterroles and clusterrolebindings (stored only: nothing runs a
//!   Deployment's pods or enforces RBAC); creating a CRD serves its
//!   resources (with `/status` when declared), deleting it stops serving
//!   them and deletes their objects. `/openapi/v2` is a document without
//!   schemas (protobuf or JSON).
//! * Verbs: get, list, watch, create (`generateName` too), update (409 on a
//!   stale resourceVersion), patch (merge, JSON, strategic-as-merge, apply),
//!   delete (finalizers and `deletionTimestamp`), deletecollection.
//! * CRDs are checked as kube-apiserver checks them at create and update
//!   ([`validation::crd_validation`]: structural schemas and the rest of
//!   `validateCustomResourceDefinition`, ported from Kubernetes v1.36.2),
//!   so a CRD a real server refuses is refused here with the same field
//!   paths and messages.
//! * Custom resources are pruned, defaulted and validated against their
//!   CRD's `openAPIV3Schema` (422 Invalid with field paths), then against
//!   its CEL rules (`x-kubernetes-validations`, [`validation::cel`], `oldSelf` on
//!   updates); a CRD whose rules call what [`validation::cel`] cannot evaluate is
//!   refused, naming the rule, rather than served with rules skipped.
//! * `dryRun=All` on create, update, patch and delete: the request runs
//!   through the whole path on a scratch copy of the cluster and nothing
//!   is stored or sent to watchers.
//! * uid, creationTimestamp, one cluster-wide increasing resourceVersion,
//!   `metadata.generation` bumped on changes outside metadata (and status,
//!   where a status subresource exists), status written only through
//!   `/status` there; namespaced objects need an existing namespace; errors
//!   are `Status` objects (400, 401, 404, 405, 409, 410, 413, 415, 422, 503).
//! * list: label selectors (equality and set-based), field selectors
//!   (`metadata.name`, `metadata.namespace`), `limit`/`continue`.
//! * watch: `resourceVersion`, `allowWatchBookmarks`, `timeoutSeconds`,
//!   `sendInitialEvents` (ends the initial events with a bookmark annotated
//!   `k8s.io/initial-events-end`), history replay from a bounded event
//!   history, and an ERROR event with a 410 Expired `Status` for versions
//!   older than that history. Objects moving in or out of a label selector
//!   are sent as ADDED / DELETED.
//! * Faults per instance: [`Emulator::stop`] / [`Emulator::resume`] (same
//!   port and data), [`Emulator::set_hang`], [`Emulator::set_error_rate`]
//!   (503s), [`Emulator::set_latency`], [`Emulator::drop_watches`].
//! * An opt-in log of the requests received ([`Emulator::record_requests`],
//!   [`Emulator::requests`]: method, path, query), for tests asserting what
//!   a client asked for.
//! * What other systems add to a server, through [`api::extensions`]:
//!   proxy subresources ([`Emulator::serve_proxy`]; Karmada's cluster
//!   proxy and Clusternet's socket proxy in `fedns-standins`) and bearer
//!   token authenticators ([`Emulator::add_token_authenticator`]; EKS
//!   tokens there).
//! * Seeding from YAML ([`Emulator::seed_paths`]), as `kubectl apply -f`
//!   plus status (a CRD's status stays the server's own).
//!
//! ## What it does not do (compared with kube-apiserver)
//! * No admission (mutating or validating webhooks, built-in admission
//!   plugins), no RBAC or other authorization: the one token may do
//!   anything; no authentication other than that bearer token (and the
//!   authenticators added).
//! * CEL: no cost limits, no type checking at CRD creation, no
//!   `quantity`/`url`/`duration`/`timestamp` values ([`validation::cel`] lists them);
//!   string `format`s are checked as kube-apiserver checks them except
//!   the rare ones `formats` names; list-type `set`/`map` uniqueness is
//!   checked, but a `map` list is not merged by key on patches; a status
//!   update's format message names the path from the object's root
//!   (kube-apiserver: from `status`); no validation of built-in kinds (a
//!   Service with a bad port is stored as given).
//! * Defaulting only from CRD `default`s, plus a Service `clusterIP` and a
//!   Namespace `status.phase`; no other built-in defaulting.
//! * Strategic merge patch is a JSON merge patch (lists are replaced, not
//!   merged by key); server-side apply is create-or-merge: it records the
//!   field manager in `managedFields` but tracks no field ownership and
//!   reports no conflicts.
//! * No version conversion between CRD versions (objects are shared and
//!   relabelled); `resourceVersionMatch=Exact` and list at an old
//!   resourceVersion return the current state.
//! * POST ignores `status` where a status subresource exists (as the real
//!   server); [`Emulator::seed_paths`] writes it afterwards through `/status`.
//! * No aggregation layer (beyond the proxies added); no OpenAPI schemas (the v2 document is empty,
//!   there is no v3: kubectl's client-side validation finds no schema and
//!   checks nothing, `kubectl apply --server-side` works), no
//!   protobuf (so `kubectl create` of built-in kinds gets 415; kubectl get,
//!   patch, delete and server-side apply work), no Table output (kubectl
//!   prints NAME and AGE only), no namespace
//!   `Terminating` phase (deleting a namespace deletes its objects at once).

pub mod api;
mod emulator;
mod seed;
mod status;
pub mod store;
pub mod validation;

use std::path::PathBuf;

pub use api::extensions::{Proxy, ProxyPath, TokenAuthenticator};
pub use api::request_log::LoggedRequest;
pub use api::{Body, MAX_BODY};
pub use emulator::{Emulator, EmulatorConfig, EmulatorError};

/// Reads and parses every manifest under `paths` without applying any:
/// the check `fedns sandbox --members-from` runs before starting.
///
/// # Errors
/// The first unreadable file or malformed document, with file and line.
pub fn check_manifests(paths: &[PathBuf]) -> Result<usize, SeedError> {
    seed::parse_paths(paths)
}
pub use seed::{seed_text, SeedError, SeedReport};
pub use status::ApiError;
pub use store::resources::ResourceInfo;
pub use store::{Filter, PatchKind, Store, Target};
pub use validation::crd_validation;

impl Emulator {
    /// Seeds from YAML files or folders (multi-document files and `List`s
    /// understood; CRDs, then Namespaces, then the rest; missing namespaces
    /// are created). Kinds not served are skipped and listed.
    ///
    /// # Errors
    /// A malformed file (with file and line) stops the seed before any
    /// object is written; a rejected object stops it at that object.
    pub fn seed_paths(&self, paths: &[PathBuf]) -> Result<SeedReport, SeedError> {
        seed::seed_paths(self.store(), paths)
    }

    /// Seeds from YAML text (`origin` names it in errors).
    ///
    /// # Errors
    /// As [`Emulator::seed_paths`].
    pub fn seed_yaml(&self, origin: &str, text: &str) -> Result<SeedReport, SeedError> {
        seed::seed_text(self.store(), origin, text)
    }
}
