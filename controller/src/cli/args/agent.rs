//! Arguments of `fedns agent`.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns agent`: a vantage point in a member cluster. It
/// reads what to probe from ConfigMap `fedns-probe-targets` and writes
/// what it sees to ConfigMap `fedns-probe-report`, both in `--namespace`
/// of its own cluster (deploy/agent/); it needs no host credentials and
/// opens no port but the optional metrics one.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Kubeconfig of the member cluster the agent runs in. Default: the
    /// in-cluster service account (or $KUBECONFIG).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the two ConfigMaps. Default: $POD_NAMESPACE, else
    /// `fedns-system`.
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Source address of the probes (an address of this host). Default:
    /// the kernel's choice.
    #[arg(long, value_name = "IP")]
    pub source_address: Option<std::net::IpAddr>,
    /// Probes running at once, at most.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..))]
    pub probe_concurrency: u16,
    /// Serve /metrics, /healthz and /readyz on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}
