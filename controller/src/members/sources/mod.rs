//! Where members come from: fedns's own `MemberCluster` objects, or the
//! cluster registry of the propagation engine or fleet tool the user
//! already runs (Karmada `Cluster`, kubefed `KubeFedCluster`, Clusternet
//! `ManagedCluster`, Cluster API `Cluster`, Argo CD cluster Secrets,
//! SIG Multicluster `ClusterProfile`), read as they are.
//!
//! An engine's cluster is run exactly as a MemberCluster would be: each
//! becomes an in-memory MemberCluster (never stored: fedns writes nothing
//! into an engine's objects, nor copies them) whose status the prober keeps
//! and `/debug/explain` shows; Events go to the engine's object.
//!
//! Health: fedns's own probes decide. The engine's `Ready` condition seeds
//! a member's state when fedns starts (so a restart does not drop healthy
//! clusters while probes warm up), and is reported beside fedns's view,
//! but never overrides it: the engine probes every 10 s or more from its
//! control plane, so its `Ready=False` often means the control plane lost
//! the member rather than the member's Services failing, and fedns's
//! probes (every `periodSeconds`, with thresholds) see that themselves.

pub mod argocd;
pub mod capi;
pub mod clusternet;
pub mod clusterprofile;
mod desired;
pub mod karmada;
pub mod kubefed;
mod translate;

pub(crate) use desired::Desired;
pub use desired::{KarmadaInputs, KubefedInputs, Sources};
#[cfg(test)]
pub(crate) use translate::test_support;
pub(crate) use translate::{
    base64_field, each_translated, engine_member, kubeconfig_connection, lenient, ready_from_conditions,
    topology_from_labels, Inventory, Translated,
};
pub use translate::{
    EngineReady, InventoryCondition, MemberSource, ENGINE_READY_ANNOTATION, REGION_LABEL, SOURCE_ANNOTATION, ZONE_LABEL,
};
