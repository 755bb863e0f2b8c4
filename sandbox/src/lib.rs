//! # fedns-sandbox: a Kubernetes API emulator
//!
//! No kube-apiserver can run on the machines fedns is tested on, so member
//! and host clusters are emulated: [`Emulator::start`] serves one cluster
//! over HTTPS on `127.0.0.1:<free port>` (certificate from a CA it
//! generates), requires a bearer token, and writes a kubeconfig that
//! kube-rs and kubectl accept. Many instances run side by side in one
//! process. It knows nothing of fedns's own crates. Beside it,
//! [`responder`] stands in for a load balancer (an HTTP(S) server on a
//! loopback address that can be stopped, hung or made to fail) so
//! data-plane health checks have something real to probe, and [`tls`] makes
//! the certificates both use. [`clouddns`] stands in for Google Cloud DNS's
//! v1 REST API (zones, record sets with routing policies, atomic changes,
//! Google's errors and quotas, injected faults; no DNS serving, DNSSEC or
//! IAM: see its own docs for what it leaves out).
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
//!   ([`crd_validation`]: structural schemas and the rest of
//!   `validateCustomResourceDefinition`, ported from Kubernetes v1.36.2),
//!   so a CRD a real server refuses is refused here with the same field
//!   paths and messages.
//! * Custom resources are pruned, defaulted and validated against their
//!   CRD's `openAPIV3Schema` (422 Invalid with field paths), then against
//!   its CEL rules (`x-kubernetes-validations`, [`cel`], `oldSelf` on
//!   updates); a CRD whose rules call what [`cel`] cannot evaluate is
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
//! * Karmada's cluster proxy (`/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy/...`)
//!   when a `clusters.cluster.karmada.io` CRD is registered: requests go to
//!   the member named by that Cluster object, with its Secret's token.
//! * Clusternet's socket proxy (`/apis/proxies.clusternet.io/v1alpha1/sockets/ID/proxy/direct/...`)
//!   when a `managedclusters.clusters.clusternet.io` CRD is registered:
//!   requests go to the child whose ManagedCluster has that cluster ID,
//!   with the token the caller passes in `Impersonate-Extra-Clusternet-Token`.
//! * EKS token authentication beside the bearer token, when asked
//!   ([`Emulator::accept_eks_tokens`], [`EksAuthenticator`]): tokens
//!   `k8s-aws-v1.…` checked as aws-iam-authenticator and STS check them.
//! * Seeding from YAML ([`Emulator::seed_paths`]), as `kubectl apply -f`
//!   plus status (a CRD's status stays the server's own).
//! * The upstream CRDs of kubefed, Clusternet, Cluster API and
//!   ClusterProfile ([`upstream_crds`], vendored unmodified), for standing
//!   in for those control planes.
//!
//! ## What it does not do (compared with kube-apiserver)
//! * No admission (mutating or validating webhooks, built-in admission
//!   plugins), no RBAC or other authorization: the one token may do
//!   anything; no authentication other than that bearer token (and EKS
//!   tokens where enabled).
//! * CEL: no cost limits, no type checking at CRD creation, no
//!   `quantity`/`url`/`duration`/`timestamp` values ([`cel`] lists them);
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
//! * No aggregation layer; no OpenAPI schemas (the v2 document is empty,
//!   there is no v3: kubectl's client-side validation finds no schema and
//!   checks nothing, `kubectl apply --server-side` works), no
//!   protobuf (so `kubectl create` of built-in kinds gets 415; kubectl get,
//!   patch, delete and server-side apply work), no Table output (kubectl
//!   prints NAME and AGE only), no namespace
//!   `Terminating` phase (deleting a namespace deletes its objects at once).

mod api;
pub mod cel;
pub mod clouddns;
mod cluster;
mod cluster_proxy;
pub mod crd_validation;
mod eks_auth;
mod emulator;
mod faults;
mod formats;
pub mod gateway_controller;
mod list_types;
pub mod ports;
pub mod request_log;
mod resources;
pub mod responder;
mod schema;
mod seed;
mod selectors;
mod serve;
mod socket_proxy;
mod status;
mod store;
pub mod tls;
pub mod upstream_crds;
pub mod webhook_provider;

use std::path::PathBuf;

pub use eks_auth::{AwsKey, EksAuthenticator};
pub use emulator::{Emulator, EmulatorConfig, EmulatorError};

/// Reads and parses every manifest under `paths` without applying any:
/// the check `fedns sandbox --members-from` runs before starting.
///
/// # Errors
/// The first unreadable file or malformed document, with file and line.
pub fn check_manifests(paths: &[PathBuf]) -> Result<usize, SeedError> {
    seed::parse_paths(paths)
}
pub use resources::ResourceInfo;
pub use seed::{SeedError, SeedReport};
pub use status::ApiError;
pub use store::{Filter, PatchKind, Store, Target};

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
