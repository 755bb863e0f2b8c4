//! # fedns-standins: the systems fedns talks to, on loopback
//!
//! What cannot run on the machines fedns is tested on is played here, each
//! stand-in written from the upstream's own definitions (named below and
//! in each module's docs, with repository and commit), each saying what it
//! does not do. They stand on the Kubernetes API emulator
//! (`fedns-kube-emulator`) where they play part of a cluster, and on
//! `fedns-loopback` for serving; nothing here knows fedns's own crates.
//!
//! | stand-in | plays | written from |
//! |---|---|---|
//! | [`responder`] | a load balancer: an HTTP(S) responder on a loopback address that can be stopped, hung, made to fail or to refuse some clients | no upstream: what a probe sees of a backend (TCP, HTTP status, TLS, silence) |
//! | [`clouddns`] | Google Cloud DNS's v1 REST API: zones, record sets with routing policies, atomic changes, Google's errors and quotas | Google's Cloud DNS v1 REST reference (`cloud.google.com/dns/docs/reference/rest/v1`: resources, methods, quotas) and Google's API error model (`cloud.google.com/apis/design/errors`); not vendored |
//! | [`webhook_provider`] | an external-dns webhook provider in front of an in-memory zone | kubernetes-sigs/external-dns `provider/webhook/api/httpapi.go`, `endpoint/endpoint.go`, `plan/plan.go` |
//! | [`gateway_controller`] | a Gateway API controller writing Gateway and route status | kubernetes-sigs/gateway-api v1.6.1 `apis/v1/gateway_types.go`, `shared_types.go` |
//! | [`fleet`] | Karmada's cluster proxy and Clusternet's socket proxy on an emulated control plane | karmada-io/karmada, clusternet/clusternet (paths in the module) |
//! | [`eks_auth`] | an EKS API server's token authentication (aws-iam-authenticator and STS) | kubernetes-sigs/aws-iam-authenticator `pkg/token/token.go` |
//! | [`upstream_crds`] | the CRDs of kubefed, Clusternet, Cluster API, ClusterProfile and the Gateway API, vendored unmodified under `standins/crds/upstream/` | each file's provenance line and that folder's README |
//!
//! Which upstream each was written from, in detail, and what each leaves
//! out: the module docs, and `docs/architecture.md` ("The test world").

pub mod clouddns;
pub mod eks_auth;
pub mod fleet;
pub mod gateway_controller;
pub mod responder;
pub mod upstream_crds;
pub mod webhook_provider;

pub use eks_auth::{AwsKey, EksAuthenticator};
