//! The upstream CustomResourceDefinitions of the cluster inventories fedns
//! reads, vendored under `standins/crds/upstream/` (provenance in its
//! `README.md`), so that an emulator standing in for such a control plane
//! refuses what the real API server refuses. Each text starts with the
//! one-line provenance comment, then the upstream file unmodified.
//!
//! Not here: Karmada serves `clusters.cluster.karmada.io` from its
//! aggregated API server and has shipped no CRD since v1.0.0 (the last one,
//! v0.10.1, is kept under `karmada/historical/` for reference only); Argo CD
//! keeps clusters in Secrets.

/// `kubefedclusters.core.kubefed.io` (`v1beta1`, namespaced), from
/// <https://github.com/kubernetes-retired/kubefed> at
/// `d6f10d29c3785dc55abc954dec0afeddce4893ef` (file identical at `v0.10.0`),
/// path `charts/kubefed/charts/controllermanager/crds/crds.yaml`, lines
/// 449-596 (that document only).
pub const KUBEFED_CLUSTERS: &str = include_str!("../crds/upstream/kubefed/core.kubefed.io_kubefedclusters.yaml");

/// `managedclusters.clusters.clusternet.io` (`v1beta1`, namespaced), from
/// <https://github.com/clusternet/clusternet> at
/// `19245baa35587e3f5d8a02511915c85744b3d606` (`v0.18.0-85-g19245ba`), path
/// `manifests/crds/clusters.clusternet.io_managedclusters.yaml`.
pub const CLUSTERNET_MANAGED_CLUSTERS: &str =
    include_str!("../crds/upstream/clusternet/clusters.clusternet.io_managedclusters.yaml");

/// `clusters.cluster.x-k8s.io` (`v1beta1` served and deprecated, `v1beta2`
/// storage; namespaced), from <https://github.com/kubernetes-sigs/cluster-api>
/// at `ae7ff047db499ac3858ade268ba38db8c9f128bb` (file identical at
/// `v1.14.0`), path `core/config/crd/bases/cluster.x-k8s.io_clusters.yaml`.
/// The base file: upstream installs add a conversion webhook with kustomize,
/// which the emulator does not run.
pub const CAPI_CLUSTERS: &str = include_str!("../crds/upstream/cluster-api/cluster.x-k8s.io_clusters.yaml");

/// `clusterprofiles.multicluster.x-k8s.io` (`v1alpha1`, namespaced), from
/// <https://github.com/kubernetes-sigs/cluster-inventory-api> at
/// `8375ac21498c5d46948b9e0bd19d4bbb8cc2b219` (file identical at `v0.1.2`),
/// path `config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml`.
pub const CLUSTER_PROFILES: &str =
    include_str!("../crds/upstream/cluster-inventory-api/multicluster.x-k8s.io_clusterprofiles.yaml");

/// The Gateway API CRDs (`gateway.networking.k8s.io`) of the standard
/// channel, from <https://github.com/kubernetes-sigs/gateway-api> at
/// `8bb74df00e56ec8f944d48c25e6c1c9c2f6848e3` (`v1.6.1`), paths
/// `config/crd/standard/gateway.networking.k8s.io_<plural>.yaml`: the kinds
/// fedns reads (GatewayClass, Gateway, ListenerSet and the five route
/// kinds; TLSRoute, TCPRoute, UDPRoute and ListenerSet are `v1` in the
/// standard channel since v1.6.0), as (plural, text).
pub const GATEWAY_API: [(&str, &str); 8] = [
    (
        "gatewayclasses",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_gatewayclasses.yaml"),
    ),
    (
        "gateways",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_gateways.yaml"),
    ),
    (
        "httproutes",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_httproutes.yaml"),
    ),
    (
        "grpcroutes",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_grpcroutes.yaml"),
    ),
    (
        "tlsroutes",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_tlsroutes.yaml"),
    ),
    (
        "tcproutes",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_tcproutes.yaml"),
    ),
    (
        "udproutes",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_udproutes.yaml"),
    ),
    (
        "listenersets",
        include_str!("../crds/upstream/gateway-api/gateway.networking.k8s.io_listenersets.yaml"),
    ),
];

/// `tcproutes.gateway.networking.k8s.io` of the *experimental* channel of
/// gateway-api `v1.4.1` (<https://github.com/kubernetes-sigs/gateway-api> at
/// `477d172e6ac5eccb82b65781ddb8f924afec4170`, path
/// `config/crd/experimental/gateway.networking.k8s.io_tcproutes.yaml`):
/// TCPRoute served as `v1alpha2` only, as on a member that installed
/// gateway-api before v1.6. Stands in for a member a release behind.
pub const GATEWAY_API_V1_4_TCPROUTES: &str =
    include_str!("../crds/upstream/gateway-api/v1.4.1-experimental/gateway.networking.k8s.io_tcproutes.yaml");

/// [`gateway_api_yaml`] with TCPRoute as gateway-api v1.4.1's experimental
/// channel serves it ([`GATEWAY_API_V1_4_TCPROUTES`], `v1alpha2`).
pub fn gateway_api_yaml_with_v1alpha2_tcproutes() -> String {
    GATEWAY_API
        .iter()
        .map(|(plural, text)| {
            let text = if *plural == "tcproutes" {
                GATEWAY_API_V1_4_TCPROUTES
            } else {
                text
            };
            format!("---\n{text}\n")
        })
        .collect()
}

/// Every [`GATEWAY_API`] CRD as one multi-document YAML text, for a
/// member emulator's `seed_yaml`.
pub fn gateway_api_yaml() -> String {
    GATEWAY_API.iter().map(|(_, text)| format!("---\n{text}\n")).collect()
}

/// Example objects shaped as the upstream controllers write them
/// (`standins/crds/upstream/examples/`), each field citing its upstream
/// source; one per served CRD above.
pub mod examples {
    /// A `KubeFedCluster` as `kubefedctl join` and kubefed's cluster
    /// controller write it.
    pub const KUBEFED_CLUSTER: &str = include_str!("../crds/upstream/examples/kubefedcluster.yaml");
    /// A `ManagedCluster` as clusternet-hub's approver and clusternet-agent
    /// write it.
    pub const CLUSTERNET_MANAGED_CLUSTER: &str = include_str!("../crds/upstream/examples/managedcluster.yaml");
    /// A Cluster API `Cluster` (`v1beta2`) as the cluster controller writes it.
    pub const CAPI_CLUSTER: &str = include_str!("../crds/upstream/examples/cluster.cluster.x-k8s.io.yaml");
    /// A `ClusterProfile` as the cluster-inventory-api tests and demo write it.
    pub const CLUSTER_PROFILE: &str = include_str!("../crds/upstream/examples/clusterprofile.yaml");
    /// A GatewayClass, Gateway and HTTPRoute as a Gateway controller
    /// leaves them (gateway-api's `examples/standard/basic-http.yaml` with
    /// the status its types define).
    pub const GATEWAY_API: &str = include_str!("../crds/upstream/examples/gateway-api.yaml");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(store: &fedns_kube_emulator::Store, origin: &str, text: &str) -> fedns_kube_emulator::SeedReport {
        match fedns_kube_emulator::seed_text(store, origin, text) {
            Ok(report) => report,
            Err(e) => panic!("{origin}: {e}"),
        }
    }

    #[test]
    fn the_upstream_crds_are_served_and_admit_their_examples() {
        for (crd, example) in [
            (KUBEFED_CLUSTERS, examples::KUBEFED_CLUSTER),
            (CLUSTERNET_MANAGED_CLUSTERS, examples::CLUSTERNET_MANAGED_CLUSTER),
            (CAPI_CLUSTERS, examples::CAPI_CLUSTER),
            (CLUSTER_PROFILES, examples::CLUSTER_PROFILE),
        ] {
            let store = fedns_kube_emulator::Store::new(100);
            let origin = crd.lines().next().unwrap_or_default();
            let report = seed(&store, origin, crd);
            assert!(report.skipped.is_empty(), "{report:?}");
            let report = seed(&store, origin, example);
            assert_eq!((report.applied, report.skipped.len()), (1, 0), "{origin}: {report:?}");
        }
    }

    /// The Gateway API CRDs are served with their schemas and CEL rules:
    /// the example objects are admitted, status included, and what the
    /// upstream schema refuses is refused.
    #[test]
    fn the_gateway_api_crds_admit_their_example_and_refuse_what_upstream_refuses() {
        let store = fedns_kube_emulator::Store::new(100);
        let report = seed(&store, "gateway-api", &gateway_api_yaml());
        assert_eq!(
            (report.applied, report.skipped.len()),
            (GATEWAY_API.len(), 0),
            "{report:?}"
        );
        let report = seed(&store, "gateway-api example", examples::GATEWAY_API);
        assert_eq!((report.applied, report.skipped.len()), (4, 0), "{report:?}");
        let routes = store.resource("gateway.networking.k8s.io", "v1", "httproutes").unwrap();
        let route = store.get(&routes, Some("default"), "example-route").unwrap();
        assert_eq!(route["status"]["parents"][0]["conditions"][0]["type"], "Accepted");
        // A listener hostname on a TCP listener: the Gateway's CEL rule
        // ("hostname must not be specified for protocols ['TCP', 'UDP']").
        let bad = examples::GATEWAY_API.replace(
            "    protocol: HTTP\n    port: 80",
            "    protocol: TCP\n    port: 80\n    hostname: db.example.com",
        );
        let refused = |origin: &str, text: &str| match fedns_kube_emulator::seed_text(&store, origin, text) {
            Err(fedns_kube_emulator::SeedError::Rejected { error, .. }) => error.to_string(),
            other => panic!("{origin}: admitted: {other:?}"),
        };
        let why = refused("bad gateway", &bad);
        assert!(why.contains("hostname must not be specified"), "{why}");
        // More than 16 hostnames on an HTTPRoute (maxItems 16).
        let many: String = (0..17).map(|i| format!("  - \"h{i}.example.com\"\n")).collect();
        let bad = examples::GATEWAY_API.replace("  - \"example.com\"\n", &many);
        let why = refused("bad route", &bad);
        assert!(why.contains("hostnames"), "{why}");
        // The timeouts rule (a CEL `duration` comparison): a backend
        // request timeout longer than the request's is refused, a shorter
        // one admitted.
        let timeouts = |request: &str, backend: &str| {
            examples::GATEWAY_API.replace(
                "  - backendRefs:\n",
                &format!("  - timeouts: {{request: {request}, backendRequest: {backend}}}\n    backendRefs:\n"),
            )
        };
        let why = refused("long backend timeout", &timeouts("10s", "1m"));
        assert!(
            why.contains("backendRequest timeout cannot be longer than request timeout"),
            "{why}"
        );
        seed(&store, "short backend timeout", &timeouts("1m", "10s"));
    }

    /// kubefed's CRD document carries the empty status it was generated
    /// with; the served CRD keeps the server's own.
    #[test]
    fn a_generated_crd_status_is_not_written() {
        let store = fedns_kube_emulator::Store::new(100);
        seed(&store, "kubefed", KUBEFED_CLUSTERS);
        let crds = store
            .resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let crd = store.get(&crds, None, "kubefedclusters.core.kubefed.io").unwrap();
        assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1beta1"]));
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "KubeFedCluster");
    }

    /// Cluster API's CRD serves v1beta1 (deprecated) and v1beta2 (stored):
    /// discovery prefers v1beta2 and the CRD records v1beta2 as stored, as
    /// kube-apiserver does.
    #[test]
    fn cluster_api_prefers_and_stores_v1beta2() {
        let store = fedns_kube_emulator::Store::new(100);
        seed(&store, "capi", CAPI_CLUSTERS);
        let groups = store.with_registry(|r| r.api_groups());
        let capi = groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["name"] == "cluster.x-k8s.io")
            .cloned()
            .unwrap_or_default();
        assert_eq!(capi["preferredVersion"]["version"], "v1beta2", "{capi}");
        assert_eq!(capi["versions"][1]["version"], "v1beta1", "{capi}");
        let crds = store
            .resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let crd = store.get(&crds, None, "clusters.cluster.x-k8s.io").unwrap();
        assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1beta2"]));
    }
}
