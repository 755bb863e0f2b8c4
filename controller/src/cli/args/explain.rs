//! Arguments of `fedns explain`.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The published name, e.g. `nginx.ns.myfed.svc.example.com`.
    pub name: String,
    /// Kubeconfig of the host cluster (default: in-cluster config, else
    /// $KUBECONFIG or ~/.kube/config); the sandbox writes `.fedns-sandbox/host.kubeconfig`.
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller namespace (MemberClusters).
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub namespace: String,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = ExplainOutput::Text)]
    pub output: ExplainOutput,
    /// Show which answer of a traffic policy a client in this subnet gets
    /// (as an EDNS Client Subnet option would carry it, e.g. `192.0.2.0/24`;
    /// `0.0.0.0/0`: no client information).
    #[arg(long, value_name = "CIDR")]
    pub client_subnet: Option<ipnet::IpNet>,
    /// MaxMind DB file placing the client by country or continent, as the
    /// DNS server's --geoip-db.
    #[arg(long, value_name = "PATH")]
    pub geoip_db: Option<PathBuf>,
    /// Explain what a pod in this member cluster gets for NAME, a
    /// discovery name (`nginx.ns.myfed`, or with `.svc.CLUSTER-DOMAIN`):
    /// the local Service or the CNAME chain, and why. Reads the host and
    /// the member (its Services and EndpointSlices).
    #[arg(long, value_name = "MEMBER")]
    pub from_cluster: Option<String>,
    /// Kubeconfig of the member (with --from-cluster). Default: the
    /// MemberCluster's own connection (spec and Secret) from the host.
    #[arg(long, value_name = "PATH", requires = "from_cluster")]
    pub member_kubeconfig: Option<PathBuf>,
    /// An exec credential plugin the member's kubeconfig Secret may run
    /// (with --from-cluster, without --member-kubeconfig; repeatable),
    /// matched exactly against its command, as `fedns controller
    /// --allow-exec-plugin`. Unset: a Secret naming a command, a file or
    /// an auth-provider is refused, nothing of it run or read.
    #[arg(long, value_name = "COMMAND", requires = "from_cluster", value_parser = super::controller::plugin_command)]
    pub allow_exec_plugin: Vec<String>,
    /// The member's cluster domain (with --from-cluster).
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,
    /// The Node the member's discovery replica runs on (with
    /// --from-cluster): its zone label picks the fallback's zone name.
    #[arg(long, value_name = "NODE", requires = "from_cluster")]
    pub node: Option<String>,
}

/// Output of `fedns explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainOutput {
    /// Lines for a terminal.
    Text,
    /// JSON.
    Json,
}
