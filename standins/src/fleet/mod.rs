//! The fleet engines' control-plane paths an emulator serves when it
//! stands in for one ([`fedns_kube_emulator::Emulator::serve_proxy`]):
//! Karmada's cluster proxy, as karmada-aggregated-apiserver serves it
//! (its paths as karmada-io/karmada `pkg/registry/cluster/storage/proxy.go`
//! registers them), and
//! Clusternet's socket proxy, as clusternet-hub serves it
//! (clusternet/clusternet
//! `pkg/registry/proxies/socket/subresources/proxy.go`). Both forward to
//! a member's API server found from the engine's own objects in the
//! emulator ([`forward`]). Not done: Karmada's proxy through
//! `spec.proxyURL`, impersonation of the caller (the member's token is
//! used as it is), Clusternet's websocket tunnel (the child is reached
//! directly at its `status.apiserverURL`).

mod clusternet;
mod forward;
mod karmada;

pub use clusternet::ClusternetSocketProxy;
pub use karmada::KarmadaClusterProxy;
