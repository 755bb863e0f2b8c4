//! The resources an emulated cluster serves: the built-in kinds fedns
//! uses, plus those of CustomResourceDefinitions registered at run time;
//! and the discovery documents describing them.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::validation::schema::CrdSchema;

/// One served resource (a group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group; empty for core.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural, e.g. `services`.
    pub plural: String,
    /// Singular, e.g. `service`.
    pub singular: String,
    /// Kind, e.g. `Service`.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `/status` subresource (status written only there).
    pub has_status: bool,
    /// Short names for discovery.
    pub short_names: Vec<String>,
    /// The CRD's validation schema for custom resources.
    pub schema: Option<Arc<CrdSchema>>,
    /// Name of the CRD that registered it.
    pub crd: Option<String>,
}

impl ResourceInfo {
    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Where objects are stored: one collection per group and plural,
    /// shared by all versions (the emulator does no version conversion).
    pub fn collection(&self) -> (String, String) {
        (self.group.clone(), self.plural.clone())
    }

    fn builtin(
        group: &str,
        version: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        has_status: bool,
        short: &[&str],
    ) -> Self {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.into(),
            namespaced,
            has_status,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            schema: None,
            crd: None,
        }
    }
}

/// Every resource served, keyed by (group, version, plural).
#[derive(Debug, Clone)]
pub struct Registry {
    resources: BTreeMap<(String, String, String), ResourceInfo>,
}

impl Default for Registry {
    fn default() -> Self {
        let builtins = [
            ResourceInfo::builtin("", "v1", "namespaces", "Namespace", false, true, &["ns"]),
            ResourceInfo::builtin("", "v1", "services", "Service", true, true, &["svc"]),
            ResourceInfo::builtin("", "v1", "endpoints", "Endpoints", true, false, &["ep"]),
            ResourceInfo::builtin("", "v1", "nodes", "Node", false, true, &["no"]),
            ResourceInfo::builtin("", "v1", "secrets", "Secret", true, false, &[]),
            ResourceInfo::builtin("", "v1", "serviceaccounts", "ServiceAccount", true, false, &["sa"]),
            ResourceInfo::builtin("", "v1", "configmaps", "ConfigMap", true, false, &["cm"]),
            ResourceInfo::builtin("", "v1", "events", "Event", true, false, &["ev"]),
            ResourceInfo::builtin(
                "discovery.k8s.io",
                "v1",
                "endpointslices",
                "EndpointSlice",
                true,
                false,
                &[],
            ),
            ResourceInfo::builtin("networking.k8s.io", "v1", "ingresses", "Ingress", true, true, &["ing"]),
            ResourceInfo::builtin("coordination.k8s.io", "v1", "leases", "Lease", true, false, &[]),
            // Stored only, for installing manifests (`kubectl apply`): no
            // controller runs Deployments or enforces RBAC.
            ResourceInfo::builtin("apps", "v1", "deployments", "Deployment", true, true, &["deploy"]),
            ResourceInfo::builtin(
                "policy",
                "v1",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                true,
                true,
                &["pdb"],
            ),
            ResourceInfo::builtin(
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "NetworkPolicy",
                true,
                false,
                &["netpol"],
            ),
            ResourceInfo::builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", true, false, &[]),
            ResourceInfo::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                "RoleBinding",
                true,
                false,
                &[],
            ),
            ResourceInfo::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                "ClusterRole",
                false,
                false,
                &[],
            ),
            ResourceInfo::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                false,
                false,
                &[],
            ),
            ResourceInfo::builtin("events.k8s.io", "v1", "events", "Event", true, false, &["ev"]),
            ResourceInfo::builtin(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                false,
                true,
                &["crd", "crds"],
            ),
        ];
        Registry {
            resources: builtins
                .into_iter()
                .map(|r| ((r.group.clone(), r.version.clone(), r.plural.clone()), r))
                .collect(),
        }
    }
}

impl Registry {
    /// The resource at (group, version, plural).
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceInfo> {
        self.resources
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
    }

    /// Some resource of `group` with `kind` (any version), for seeding.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.resources
            .values()
            .find(|r| r.api_version() == api_version && r.kind == kind)
    }

    /// Registers the served versions of a CRD object; returns the
    /// resources added.
    ///
    /// # Errors
    /// A message when the CRD lacks group, names or versions.
    pub fn register_crd(&mut self, crd: &Value) -> Result<Vec<ResourceInfo>, String> {
        let infos = crd_resources(crd)?;
        for info in &infos {
            self.resources.insert(
                (info.group.clone(), info.version.clone(), info.plural.clone()),
                info.clone(),
            );
        }
        Ok(infos)
    }

    /// Removes every resource registered by the CRD `name`.
    pub fn unregister_crd(&mut self, name: &str) -> Vec<ResourceInfo> {
        let removed: Vec<ResourceInfo> = self
            .resources
            .values()
            .filter(|r| r.crd.as_deref() == Some(name))
            .cloned()
            .collect();
        self.resources.retain(|_, r| r.crd.as_deref() != Some(name));
        removed
    }

    /// `/api` (APIVersions).
    pub fn api_versions(&self, server: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
        })
    }

    /// `/apis` (APIGroupList).
    pub fn api_groups(&self) -> Value {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (group, version, _) in self.resources.keys() {
            if !group.is_empty() {
                let versions = groups.entry(group).or_default();
                if !versions.contains(&version.as_str()) {
                    versions.push(version);
                }
            }
        }
        let groups: Vec<Value> = groups
            .into_iter()
            .map(|(group, mut versions)| {
                // Highest priority first, the first preferred, as the API
                // server orders a CRD's versions (Cluster API: v1beta2
                // before v1beta1).
                versions.sort_by(|a, b| kube_version_priority(b).cmp(&kube_version_priority(a)).then(a.cmp(b)));
                let entries: Vec<Value> = versions
                    .iter()
                    .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                    .collect();
                json!({"name": group, "versions": entries, "preferredVersion": entries[0]})
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `/apis/<group>/<version>` or `/api/v1` (APIResourceList); `None`
    /// when nothing is served there.
    pub fn api_resources(&self, group: &str, version: &str) -> Option<Value> {
        let mut resources = Vec::new();
        for r in self
            .resources
            .values()
            .filter(|r| r.group == group && r.version == version)
        {
            resources.push(json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": r.short_names,
            }));
            if r.has_status {
                resources.push(json!({
                    "name": format!("{}/status", r.plural),
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }));
            }
        }
        if resources.is_empty() {
            return None;
        }
        let group_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
        )
    }
}

/// The resources a CRD object declares (one per served version).
fn crd_resources(crd: &Value) -> Result<Vec<ResourceInfo>, String> {
    let spec = crd.get("spec").ok_or("spec is required")?;
    let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
    let group = text("/group").ok_or("spec.group is required")?;
    let plural = text("/names/plural").ok_or("spec.names.plural is required")?;
    let kind = text("/names/kind").ok_or("spec.names.kind is required")?;
    let singular = text("/names/singular").unwrap_or_else(|| kind.to_ascii_lowercase());
    let namespaced = match text("/scope").as_deref() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => return Err(format!("spec.scope must be Namespaced or Cluster, got {other:?}")),
    };
    let short_names: Vec<String> = spec
        .pointer("/names/shortNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != format!("{plural}.{group}") {
        return Err(format!(
            "metadata.name must be spec.names.plural+\".\"+spec.group ({plural}.{group})"
        ));
    }
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or("spec.versions must list at least one version")?;
    let mut infos = Vec::new();
    for version in versions {
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let version_name = version
            .get("name")
            .and_then(Value::as_str)
            .ok_or("spec.versions[].name is required")?;
        let schema = version
            .pointer("/schema/openAPIV3Schema")
            .map(|s| CrdSchema::new(s.clone()))
            .transpose()?
            .map(Arc::new);
        infos.push(ResourceInfo {
            group: group.clone(),
            version: version_name.to_owned(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced,
            has_status: version.pointer("/subresources/status").is_some(),
            short_names: short_names.clone(),
            schema,
            crd: Some(name.to_owned()),
        });
    }
    Ok(infos)
}

/// The order of `version.CompareKubeAwareVersionStrings`
/// (apimachinery): GA above beta above alpha, then the higher major, then
/// the higher minor; names not of the form `v<N>[(alpha|beta)<M>]` below
/// all others (ties among them broken by name, reversed, by the caller).
fn kube_version_priority(version: &str) -> (u8, u64, u64) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let (level, minor) = match &rest[digits..] {
            "" => (3, 0),
            tail => {
                let (level, minor) = if let Some(m) = tail.strip_prefix("beta") {
                    (2, m)
                } else {
                    (1, tail.strip_prefix("alpha")?)
                };
                (level, minor.parse().ok()?)
            }
        };
        Some((level, major, minor))
    });
    parsed.unwrap_or((0, 0, 0))
}

#[cfg(test)]
mod tests {
    use super::kube_version_priority as p;

    #[test]
    fn versions_order_as_kube_aware_strings() {
        let mut versions = ["foo1", "v1alpha1", "v1beta1", "v1", "v2beta2", "v1beta2", "v10", "v2"];
        versions.sort_by(|a, b| p(b).cmp(&p(a)).then(a.cmp(b)));
        assert_eq!(
            versions,
            ["v10", "v2", "v1", "v2beta2", "v1beta2", "v1beta1", "v1alpha1", "foo1"]
        );
    }
}
