//! The generated CustomResourceDefinitions and their YAML form.
//!
//! `fedns crds` prints [`crds_yaml`]; `deploy/crds/` holds the same
//! documents, one file each, named by [`CrdFile::file_name`] so that
//! `cat deploy/crds/*.yaml` (files in name order) is byte-identical to it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, ServiceDNSRecord};

/// One generated CRD and the file it is kept in under `deploy/crds/`.
#[derive(Debug, Clone)]
pub struct CrdFile {
    /// Position in the documented order, 1-based.
    pub index: usize,
    /// The definition.
    pub crd: CustomResourceDefinition,
}

impl CrdFile {
    /// `NN-<plural>.<group>.yaml`, e.g. `01-memberclusters.core.fedns.io.yaml`.
    pub fn file_name(&self) -> String {
        format!(
            "{:02}-{}.yaml",
            self.index,
            self.crd.metadata.name.as_deref().unwrap_or("unnamed")
        )
    }

    /// The document as written to its file: `---\n` then the YAML.
    ///
    /// # Errors
    /// Only if YAML serialisation fails, which would be a bug.
    pub fn to_yaml(&self) -> Result<String, serde_yaml_ng::Error> {
        Ok(format!("---\n{}", serde_yaml_ng::to_string(&self.crd)?))
    }
}

/// Every fedns CRD in the documented order: MemberCluster, Domain,
/// ServiceDNSRecord, IngressDNSRecord, DNSEndpoint, RouteDNSRecord (last:
/// added after the others' file names were in use).
pub fn all() -> Vec<CrdFile> {
    [
        MemberCluster::crd(),
        Domain::crd(),
        ServiceDNSRecord::crd(),
        IngressDNSRecord::crd(),
        DNSEndpoint::crd(),
        RouteDNSRecord::crd(),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, crd)| CrdFile { index: i + 1, crd })
    .collect()
}

/// All CRDs as one multi-document YAML stream, each document starting
/// with `---`.
///
/// # Errors
/// Only if YAML serialisation fails, which would be a bug.
pub fn crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    all().iter().map(CrdFile::to_yaml).collect()
}
