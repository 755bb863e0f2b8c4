//! Arguments of `fedns discovery-config`.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns discovery-config`.
#[derive(Debug, Args)]
pub struct DiscoveryConfigArgs {
    /// The member cluster (MemberCluster name), for the header only.
    pub cluster: String,
    /// Address of the member-side replica as the member's cluster DNS
    /// reaches it (its Service's ClusterIP, `IP` or `IP:PORT`).
    #[arg(long, value_name = "IP[:PORT]")]
    pub server: String,
    /// The member's cluster domain.
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,
    /// Federations (Domain names) to forward; default: every Domain of
    /// the host.
    #[arg(long, value_name = "NAME")]
    pub federation: Vec<String>,
    /// Kubeconfig of the host cluster (for the Domains).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller namespace (Domains).
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub namespace: String,
}
