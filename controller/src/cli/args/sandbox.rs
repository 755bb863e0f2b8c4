//! Arguments of `fedns sandbox` and its actions.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::providers::Provider;

/// Arguments of `fedns sandbox`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SandboxArgs {
    /// What to do with a running sandbox (none: start one).
    #[command(subcommand)]
    pub action: Option<SandboxAction>,
    /// Where kubeconfigs (one per cluster) and the control address are written.
    #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
    pub state_dir: PathBuf,
    /// DNS listen address of the embedded server.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:5353")]
    pub dns_listen: SocketAddr,
    /// /metrics, /healthz and /readyz of the controller.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    pub metrics_addr: SocketAddr,
    /// Instead of the built-in seed: one member per sub-folder, each from
    /// manifests exported from a real cluster
    /// (`kubectl get nodes,svc,endpointslices,ingress -A -o yaml > DIR/<name>/state.yaml`).
    #[arg(long, value_name = "DIR")]
    pub members_from: Option<PathBuf>,
    /// Seed the host as this propagation engine's control plane or fleet
    /// inventory: its cluster CRD, a Cluster (Karmada; eu-west-1 in pull
    /// mode, through the cluster proxy), KubeFedCluster (kubefed),
    /// ManagedCluster (Clusternet; eu-west-1 through the hub's socket
    /// proxy), Cluster (Cluster API), cluster Secret (Argo CD) or
    /// ClusterProfile per member with its credentials, and annotated
    /// Service/Ingress templates instead of MemberClusters and hand-written
    /// records; the controller runs with `--member-source ENGINE --auto-records`.
    #[arg(long, value_enum, value_name = "ENGINE", conflicts_with = "members_from")]
    pub engine: Option<crate::federation::Engine>,
    /// Log lines (the controller's, the emulators', the DNS server's) on
    /// standard error, interleaved with the change lines, instead of in
    /// `<state-dir>/sandbox.log`.
    #[arg(long)]
    pub verbose: bool,
    /// Also publish to this provider (repeatable): `google-clouddns`
    /// publishes to a Cloud DNS API stand-in on loopback, `webhook` to an
    /// external-dns webhook provider stand-in; the first screen prints
    /// where to look. The embedded server always answers.
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: Vec<Provider>,
}

impl SandboxArgs {
    /// Where a starting sandbox writes its log lines: `<state-dir>/sandbox.log`,
    /// unless `--verbose` (standard error) or an action on a running sandbox.
    pub fn log_file(&self) -> Option<PathBuf> {
        (self.action.is_none() && !self.verbose).then(|| self.state_dir.join(crate::cli::sandbox::LOG_FILE))
    }
}

/// Actions on a running sandbox, found through its state dir.
#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// Stop a member's API server (it leaves the names of records without a
    /// `healthCheck`; records with one keep it while its load balancer passes).
    Fail {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Restart a member's API server (it comes back).
    Recover {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Set `cordoned: true` on a member (drained from DNS on purpose).
    Cordon {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Set `cordoned: false` again.
    Uncordon {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Stop a member's load balancer, its HTTP responder (it fails its
    /// probes and leaves the names of records with a `healthCheck`).
    BreakLb {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Start a member's load balancer again (it comes back).
    FixLb {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Make a member's nginx endpoints unready: its pods' discovery answer
    /// for nginx.ns.myfed turns into the CNAME chain to the nearest healthy
    /// cluster.
    DrainEndpoints {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Make a member's nginx endpoints ready again (local answer again).
    RestoreEndpoints {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Cut the controller's path to a member's load balancer only: its
    /// responder refuses the controller's probes (from 127.0.0.1) and
    /// still serves the members' agents. It stays in DNS: two of three
    /// vantage points reach it.
    Isolate {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
    /// Undo `isolate`.
    Heal {
        /// Member cluster name.
        cluster: String,
        /// The running sandbox's state dir.
        #[arg(long, value_name = "DIR", default_value = ".fedns-sandbox")]
        state_dir: PathBuf,
    },
}
