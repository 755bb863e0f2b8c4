//! The member-side replica's last host-side state on disk (`--state-file`,
//! an emptyDir in deploy): the discovery inputs from the host and the
//! Domains and DNSEndpoints the federation zones are built from. Read at
//! start, so a container restart while the host is unreachable still
//! answers. Written atomically (a temporary file renamed over it).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use fedns_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use fedns_api::{DNSEndpoint, Domain};
use fedns_providers::plan::ownership::NamespaceLabels;

use super::answer::{FederationView, MemberView, RecordProgress, RecordView};

/// The host side of a member-side replica. JSON on disk.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct HostState {
    /// Every Domain, as the discovery zones need it.
    pub federations: Vec<FederationView>,
    /// Every ServiceDNSRecord, as the discovery zones need it.
    pub records: Vec<RecordView>,
    /// This member's MemberCluster.
    pub member: Option<MemberView>,
    /// The Domains (federation zones' settings).
    pub domains: Vec<Domain>,
    /// The DNSEndpoints (federation zones' records).
    pub endpoints: Vec<DNSEndpoint>,
    /// Namespace labels, for Domains that admit namespaces by selector
    /// (empty when none does). Absent in states saved before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub namespace_labels: NamespaceLabels,
    /// Each ServiceDNSRecord's `creationTimestamp` by `namespace/name`
    /// (the oldest claim to a discovery name holds it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub record_created: BTreeMap<String, Time>,
    /// What each ServiceDNSRecord's status says of its DNSEndpoint, by
    /// `namespace/name` (absent: [`RecordProgress::NotObserved`]; states
    /// saved before it was kept have none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub record_progress: BTreeMap<String, RecordProgress>,
}

/// A hash of the state's JSON: saves are skipped while it is unchanged.
pub fn content_hash(state: &HostState) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(state).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

/// Writes `state` to `path` (temporary file, then rename).
///
/// # Errors
/// The folder cannot be written.
pub fn save(path: &Path, state: &HostState) -> Result<(), String> {
    let text = serde_json::to_vec(state).map_err(|e| format!("encoding the host-side state: {e}"))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), path.display()))
}

/// Reads the state `save` wrote. `Ok(None)`: no file yet.
///
/// # Errors
/// The file exists but cannot be read or is not a saved state.
pub fn load(path: &Path) -> Result<Option<HostState>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{} is not a saved host-side state: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_state_reads_back_and_garbage_is_an_error() {
        let dir = std::env::temp_dir().join(format!("fedns-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("host-state.json");
        assert!(load(&path).unwrap().is_none());
        let state = HostState {
            federations: vec![FederationView {
                name: "myfed".into(),
                domain: "example.com".into(),
            }],
            member: Some(MemberView {
                region: Some("us-east-1".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        save(&path, &state).unwrap();
        let back = load(&path).unwrap().unwrap();
        assert_eq!(back.federations, state.federations);
        assert_eq!(back.member, state.member);
        // The ownership inputs read back too.
        let created = Time("2024-05-01T10:00:00Z".parse().unwrap());
        let state = HostState {
            record_progress: BTreeMap::from([("ns/nginx".to_owned(), RecordProgress::Observed)]),
            namespace_labels: BTreeMap::from([(
                "team-a".to_owned(),
                BTreeMap::from([("dns".to_owned(), "yes".to_owned())]),
            )]),
            record_created: BTreeMap::from([("ns/nginx".to_owned(), created)]),
            ..state
        };
        save(&path, &state).unwrap();
        let back = load(&path).unwrap().unwrap();
        assert_eq!(back.namespace_labels, state.namespace_labels);
        assert_eq!(back.record_created, state.record_created);
        assert_eq!(back.record_progress, state.record_progress);
        // A state saved before they were kept still loads.
        std::fs::write(
            &path,
            r#"{"federations":[],"records":[],"member":null,"domains":[],"endpoints":[]}"#,
        )
        .unwrap();
        let old = load(&path).unwrap().unwrap();
        assert!(old.record_created.is_empty() && old.record_progress.is_empty());
        std::fs::write(&path, "not json").unwrap();
        assert!(load(&path).unwrap_err().contains("not a saved host-side state"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
