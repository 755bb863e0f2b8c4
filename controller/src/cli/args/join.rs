//! Arguments of `fedns join`.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns join`.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// Name of the MemberCluster (a DNS label).
    pub name: String,
    /// Kubeconfig of the member cluster.
    #[arg(long, value_name = "PATH")]
    pub member_kubeconfig: PathBuf,
    /// Context of the member kubeconfig (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub member_context: Option<String>,
    /// Register the member with this ServiceAccount's token instead of the
    /// kubeconfig's own credentials: NAMESPACE/NAME of the account
    /// deploy/member creates (fedns-system/fedns-member), whose token
    /// Secret is read with the member kubeconfig (waiting up to 30 s for
    /// the token controller to fill it in) and checked before it is
    /// registered.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub service_account: Option<String>,
    /// Kubeconfig of the host cluster (default: in-cluster, else $KUBECONFIG).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller namespace in the host cluster.
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub namespace: String,
    /// Region override (default: the member's Node labels).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// Zone overrides (repeatable; default: the member's Node labels).
    #[arg(long, value_name = "ZONE")]
    pub zone: Vec<String>,
    /// Do not verify the member's certificate (tests only).
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Register even if the member does not answer now.
    #[arg(long)]
    pub skip_check: bool,
    /// The member-side discovery replica's address in the member (its
    /// Service's ClusterIP): print the cluster DNS forwarding for it
    /// (as `fedns discovery-config`).
    #[arg(long, value_name = "IP[:PORT]")]
    pub discovery_server: Option<String>,
    /// The member's cluster domain (with --discovery-server).
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,
}
