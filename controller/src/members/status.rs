//! What the registry writes back: each member's MemberCluster status (in
//! the host, or in memory for an engine's member) and the Events on the
//! member's object. Only the leader writes.

use crate::events::Recorder;
use fedns_api::conditions;
use fedns_api::{MemberCluster, MemberClusterStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::member::Health;
use super::registry::Registry;

/// Condition reporting a member without a region (it serves the global
/// name only).
pub const TOPOLOGY_CONDITION: &str = "TopologyKnown";

impl Registry {
    pub(super) async fn current_cluster(&self, name: &str) -> Option<MemberCluster> {
        if let Some(engine) = self.engine_clusters.read().unwrap_or_else(|e| e.into_inner()).get(name) {
            return Some(engine.cluster.clone());
        }
        Api::<MemberCluster>::namespaced(self.host.clone(), &self.namespace)
            .get(name)
            .await
            .ok()
    }

    pub(super) async fn write_status(
        &self,
        cluster: &MemberCluster,
        health: &Health,
        topology: Option<(Option<String>, Vec<String>)>,
        version: Option<String>,
        force: bool,
    ) {
        // An engine member's status is in memory: every replica keeps it
        // (for its /debug/explain); a MemberCluster's only the leader writes.
        let engine = self.is_engine_member(&cluster.name_any());
        if !engine && !self.is_leader() && !force {
            return;
        }
        if !engine && !self.is_leader() {
            return;
        }
        let mut status = cluster.status.clone().unwrap_or_default();
        let generation = cluster.metadata.generation;
        conditions::set(
            &mut status.conditions,
            conditions::READY,
            health.ready,
            &health.reason,
            &health.message,
            generation,
        );
        if let Some((region, zones)) = topology {
            match &region {
                Some(r) => conditions::set(&mut status.conditions, TOPOLOGY_CONDITION, true, "RegionKnown", &format!("region {r}"), generation),
                None => conditions::set(
                    &mut status.conditions,
                    TOPOLOGY_CONDITION,
                    false,
                    "NoRegion",
                    "no region: set spec.region or label the Nodes with topology.kubernetes.io/region; the cluster serves the global name only",
                    generation,
                ),
            };
            status.region = region;
            status.zones = zones;
        }
        if version.is_some() {
            status.kubernetes_version = version;
        }
        status.last_probe_time = Some(Time(jiff::Timestamp::now()));
        status.observed_generation = generation;
        let name = cluster.name_any();
        {
            // An engine member's status lives in memory: fedns never writes
            // into the engine's objects.
            let mut engine = self.engine_clusters.write().unwrap_or_else(|e| e.into_inner());
            if let Some(entry) = engine.get_mut(&name) {
                entry.cluster.status = Some(status);
                return;
            }
        }
        let patch = json!({"status": status_json(&status)});
        let api: Api<MemberCluster> = Api::namespaced(self.host.clone(), &self.namespace);
        if let Err(e) = api
            .patch_status(&cluster.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(member = %cluster.name_any(), error = %e, "cannot write MemberCluster status");
        }
    }

    /// An Event on member `name`'s object (its MemberCluster in the
    /// controller's namespace, or the engine's Cluster or KubeFedCluster),
    /// with `action`; only from the leader.
    pub async fn member_event(&self, name: &str, kind: EventType, reason: &str, action: &str, message: &str) {
        if !self.is_leader() {
            return;
        }
        let target = self
            .engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|e| e.event_target.clone());
        match target {
            Some(Some((recorder, object))) => self.publish(&recorder, &object, kind, reason, action, message).await,
            Some(None) => {}
            None => {
                let object = ObjectReference {
                    api_version: Some(MemberCluster::api_version(&()).into_owned()),
                    kind: Some(MemberCluster::kind(&()).into_owned()),
                    name: Some(name.to_owned()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectReference::default()
                };
                self.publish(&self.recorder, &object, kind, reason, action, message)
                    .await
            }
        }
    }

    pub(super) async fn event(&self, cluster: &MemberCluster, kind: EventType, reason: &str, message: &str) {
        self.event_for(cluster, kind, reason, "Probe", message).await;
    }

    /// An Event on a member's object (the MemberCluster, or the engine's
    /// Cluster or KubeFedCluster), with `action`.
    pub(super) async fn event_for(
        &self,
        cluster: &MemberCluster,
        kind: EventType,
        reason: &str,
        action: &str,
        message: &str,
    ) {
        if !self.is_leader() {
            return;
        }
        let target = self
            .engine_clusters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&cluster.name_any())
            .map(|e| e.event_target.clone());
        match target {
            // An engine member: the Event goes on the engine's object.
            Some(Some((recorder, object))) => self.publish(&recorder, &object, kind, reason, action, message).await,
            Some(None) => {}
            None => {
                self.publish(&self.recorder, &cluster.object_ref(&()), kind, reason, action, message)
                    .await
            }
        }
    }

    pub(super) async fn publish(
        &self,
        recorder: &Recorder,
        object: &ObjectReference,
        kind: EventType,
        reason: &str,
        action: &str,
        message: &str,
    ) {
        if !self.is_leader() {
            return;
        }
        let event = Event {
            type_: kind,
            reason: reason.to_owned(),
            note: Some(message.chars().take(1000).collect()),
            action: action.into(),
            secondary: None,
        };
        if let Err(e) = recorder.publish(&event, object).await {
            tracing::debug!(error = %e, "cannot record an Event");
        }
    }
}

impl Registry {
    /// The controller's namespace: where its MemberClusters are (and the
    /// `spec.autoRecords` allowances `--auto-records` reads).
    pub fn member_cluster_namespace(&self) -> &str {
        &self.namespace
    }

    /// Sets condition `AutoRecordsRefused` of member `name`: `True`
    /// (reason `NotAllowed`) with how many of its annotated objects
    /// `spec.autoRecords` refused (`refused`) and the first of them
    /// (`listed`); `False` (reason `NoneRefused`) once none is, where the
    /// condition is already set (a member never refused anything gets no
    /// write). It goes on `cached`, the MemberCluster of that name in the
    /// controller's namespace as last seen (a fedns member's own object,
    /// or the one holding an engine member's allowance), written only when
    /// it changes and only if that object was not changed since (its
    /// resourceVersion); and on an engine member's in-memory status. Only
    /// the leader writes; nothing is written into the member.
    ///
    /// `Ok(false)`: `cached` is older than the MemberCluster (409
    /// Conflict), nothing was written; call again with a newer copy.
    ///
    /// # Errors
    /// The status write failed otherwise.
    pub async fn set_auto_records_refused(
        &self,
        name: &str,
        cached: Option<&MemberCluster>,
        refused: usize,
        listed: &[String],
    ) -> Result<bool, String> {
        use self::{AUTO_RECORDS_NOT_ALLOWED as NOT_ALLOWED, AUTO_RECORDS_REFUSED as REFUSED_CONDITION};
        if !self.is_leader() {
            return Ok(true);
        }
        let (status, reason, message) = if refused == 0 {
            (
                false,
                "NoneRefused",
                "every annotated route and ServiceExport of this member asking for a record is allowed by spec.autoRecords"
                    .to_owned(),
            )
        } else {
            let more = refused.saturating_sub(listed.len());
            (
                true,
                NOT_ALLOWED,
                format!(
                    "{refused} annotated object(s) of this member make no record (--auto-records): spec.autoRecords does not allow them: {}{}",
                    listed.join("; "),
                    if more > 0 { format!("; and {more} more (the controller's log names each)") } else { String::new() }
                ),
            )
        };
        let update = |conditions: &mut Vec<fedns_api::Condition>, generation: Option<i64>| -> bool {
            if !status && conditions::get(conditions, REFUSED_CONDITION).is_none() {
                return false;
            }
            conditions::set(conditions, REFUSED_CONDITION, status, reason, &message, generation)
        };
        {
            let mut engine = self.engine_clusters.write().unwrap_or_else(|e| e.into_inner());
            if let Some(entry) = engine.get_mut(name) {
                let generation = entry.cluster.metadata.generation;
                let status = entry.cluster.status.get_or_insert_with(MemberClusterStatus::default);
                update(&mut status.conditions, generation);
            }
        }
        let Some(cluster) = cached else {
            return Ok(true);
        };
        let mut current = cluster.status.clone().unwrap_or_default();
        if !update(&mut current.conditions, cluster.metadata.generation) {
            return Ok(true);
        }
        let patch = json!({
            "metadata": {"resourceVersion": cluster.resource_version()},
            "status": {"conditions": current.conditions},
        });
        match Api::<MemberCluster>::namespaced(self.host.clone(), &self.namespace)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(format!("MemberCluster {name}: condition {REFUSED_CONDITION}: {e}")),
        }
    }
}

fn status_json(status: &MemberClusterStatus) -> serde_json::Value {
    serde_json::to_value(status).unwrap_or_else(|_| json!({}))
}

/// Condition on a MemberCluster naming the member's annotated objects
/// `spec.autoRecords` does not allow (`True`, reason
/// [`AUTO_RECORDS_NOT_ALLOWED`]); see `crate::records::auto`.
pub const AUTO_RECORDS_REFUSED: &str = "AutoRecordsRefused";

/// Reason of [`AUTO_RECORDS_REFUSED`] when something was refused.
pub const AUTO_RECORDS_NOT_ALLOWED: &str = "NotAllowed";
