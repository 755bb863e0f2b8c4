//! Arguments of `fedns controller`: the controller's own flags and where
//! its members come from (`--member-source` and the inventories).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::dns_server::{RrlArgs, SnapshotArgs};
use super::providers::{EtcdArgs, GoogleArgs, Provider, Route53Args, WebhookArgs};
use crate::members::{CredentialPolicy, MemberSource};

/// Arguments of `fedns controller`.
#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// Kubeconfig of the host cluster (default: in-cluster config, else
    /// $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller namespace: MemberClusters, their Secrets, Domains, the Lease.
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub namespace: String,
    /// Publishing sinks (repeatable).
    #[arg(long, value_enum, default_values_t = [Provider::Embedded])]
    pub provider: Vec<Provider>,
    /// Owner id recorded with every record fedns writes to an external
    /// provider; records of other owners are never changed.
    #[arg(long, value_name = "ID", default_value = "fedns")]
    pub owner_id: String,
    /// The label that stands for `*` in the ownership records of wildcard
    /// records in Route53 and Google Cloud DNS, as external-dns's flag of
    /// the same name (`wildcard`: `a-wildcard.apps.example.com` for
    /// `*.apps.example.com`); give both tools the same value so each reads
    /// the other's. Unset: the asterisk stays (`a-*.apps.example.com`),
    /// which Route53 takes and Cloud DNS refuses, so wildcard records are
    /// not published to Cloud DNS.
    #[arg(long, value_name = "LABEL", value_parser = wildcard_replacement)]
    pub txt_wildcard_replacement: Option<String>,
    /// coredns-etcd settings.
    #[command(flatten)]
    pub etcd: EtcdArgs,
    /// route53 settings.
    #[command(flatten)]
    pub route53: Route53Args,
    /// google-clouddns settings.
    #[command(flatten)]
    pub google: GoogleArgs,
    /// webhook settings.
    #[command(flatten)]
    pub webhook: WebhookArgs,
    /// DNS listen address of the embedded server (repeatable).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:53")]
    pub dns_listen: Vec<SocketAddr>,
    /// UDP worker threads per DNS address (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub udp_workers: Option<usize>,
    /// /metrics, /healthz and /readyz.
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// /debug/explain (every cluster's addresses and health behind a
    /// name). Unset: on the metrics address when that is loopback, else
    /// 127.0.0.1:8081 (reach it with kubectl port-forward). The metrics
    /// address itself serves it there.
    #[arg(long, value_name = "ADDR:PORT")]
    pub debug_addr: Option<SocketAddr>,
    /// After SIGTERM: hand the leader Lease back at once, answer 503 on
    /// /readyz, and keep answering DNS for this many seconds (so that the
    /// endpoint removal reaches kube-proxy on every node) before closing
    /// the listeners. Keep it below the pod's
    /// terminationGracePeriodSeconds; deploy/ sets 10.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub shutdown_drain: u64,
    /// DNS server resolving load balancer host names (default: the system's resolvers).
    #[arg(long, value_name = "ADDR:PORT")]
    pub resolver: Option<SocketAddr>,
    /// MaxMind DB file for the embedded server's `Nearest` records (see
    /// `fedns dns-server --geoip-db`).
    #[arg(long, value_name = "PATH")]
    pub geoip_db: Option<PathBuf>,
    /// Elect a leader through the Lease fedns-controller (only it writes).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub leader_elect: bool,
    /// Seconds between full resyncs of every record and of external providers.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub resync_interval: u64,
    /// Milliseconds from recording a zone's next SOA serial
    /// (`Domain.status.serialRecord`) to the instant every DNS server
    /// replica shows it; only the replica that writes status reads it. Keep
    /// it above the time a status write plus a watch event take to reach
    /// every replica (a replica that learns a record later logs a warning
    /// and counts it in fedns_dns_serial_records_late_total).
    #[arg(long, value_name = "MILLISECONDS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub serial_activation_delay: u64,
    /// Largest DNSEndpoint the controller writes, in bytes of JSON. A
    /// record whose DNSEndpoint would be larger is not written; the record
    /// gets Ready=False reason ObjectTooLarge and a Warning Event. Default:
    /// etcd's request limit (1.5 MiB), which bounds every object.
    #[arg(long, value_name = "BYTES", default_value_t = crate::records::object_size::DEFAULT_MAX_OBJECT_BYTES)]
    pub max_object_bytes: usize,
    /// Records reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub workers: usize,
    /// Data-plane probes (`spec.healthCheck`) running at once, at most.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..))]
    pub probe_concurrency: u16,
    /// Namespace in the member clusters where `fedns agent`s run: the
    /// controller writes what to probe there (ConfigMap
    /// `fedns-probe-targets`) and reads each agent's report (ConfigMap
    /// `fedns-probe-report`), so health is decided from several vantage
    /// points (`spec.healthCheck.quorum`). Its member credentials need
    /// get/list/watch on ConfigMaps and create/patch of
    /// `fedns-probe-targets` there (deploy/agent/). Unset: no agents, the
    /// controller's own probes alone decide.
    #[arg(long, value_name = "NAMESPACE")]
    pub vantage_namespace: Option<String>,
    /// Response rate limiting of the embedded DNS server.
    #[command(flatten)]
    pub rrl: RrlArgs,
    /// The embedded server's zones kept across restarts.
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    /// Member sources and automatic records.
    #[command(flatten)]
    pub sources: SourceArgs,
}

/// Where members and records come from: `--member-source`, the engines'
/// settings, `--auto-records`.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct SourceArgs {
    /// Where member clusters come from (repeatable): fedns's MemberClusters,
    /// Karmada's Clusters, kubefed's KubeFedClusters, Clusternet's
    /// ManagedClusters, Cluster API's Clusters, Argo CD's cluster Secrets,
    /// ClusterProfiles (docs/engines.md). A name taken by an earlier source
    /// is ignored in a later one.
    #[arg(long, value_enum, value_name = "SOURCE", default_values_t = [MemberSource::Fedns])]
    pub member_source: Vec<MemberSource>,
    /// Kubeconfig of the Karmada control plane (karmada-apiserver) for
    /// `--member-source karmada` (default: the host cluster's).
    #[arg(long, value_name = "PATH")]
    pub karmada_kubeconfig: Option<PathBuf>,
    /// The only namespace of the Karmada control plane whose Secrets fedns
    /// reads: where `karmadactl join` and Karmada's agent keep each
    /// Cluster's credentials (`spec.secretRef`). A Cluster whose secretRef
    /// names another namespace gets no connection.
    #[arg(long, value_name = "NAMESPACE", default_value = "karmada-cluster")]
    pub karmada_secret_namespace: String,
    /// Namespace of kubefed's KubeFedClusters and their Secrets.
    #[arg(long, value_name = "NAMESPACE", default_value = "kube-federation-system")]
    pub kubefed_namespace: String,
    /// Where the other inventories are (`--member-source clusternet|capi|argocd|clusterprofile`).
    #[command(flatten)]
    pub inventories: InventoryArgs,
    /// Make ServiceDNSRecords, IngressDNSRecords and RouteDNSRecords from
    /// Service, Ingress and Gateway API route templates (and kubefed
    /// FederatedServices and federated routes; annotated routes in the
    /// members too) annotated `multiclusterdns.fedns.io/domain: <Domain>`;
    /// delete them when their source goes. Records not labelled
    /// `app.kubernetes.io/managed-by: fedns` are never changed.
    #[arg(long)]
    pub auto_records: bool,
    /// Domain for `--auto-records` sources without the domain annotation
    /// (default: only annotated sources make records).
    #[arg(long, value_name = "DOMAIN", requires = "auto_records")]
    pub auto_records_domain: Option<String>,
    /// An exec credential plugin fedns may run when a member's
    /// credentials name it (repeatable): a MemberCluster's kubeconfig
    /// Secret, a Cluster API kubeconfig Secret, an Argo CD
    /// `execProviderConfig`. Matched exactly against the command written
    /// there: `argocd-k8s-auth` allows that name, looked up in fedns's
    /// PATH, not /tmp/argocd-k8s-auth. The Secret chooses the arguments and
    /// the environment (except PATH, LD_*, DYLD_*): allow only plugins
    /// that do nothing but make a token. Unset: no command named by a
    /// Secret or an inventory object runs; such a member is
    /// Ready=False, reason CredentialsRefused. Files named there
    /// (tokenFile, client-certificate, client-key, certificate-authority)
    /// and auth-provider are always refused.
    #[arg(long, value_name = "COMMAND", value_parser = plugin_command)]
    pub allow_exec_plugin: Vec<String>,
}

impl SourceArgs {
    /// What members' credentials may hold beyond inline data.
    pub fn credential_policy(&self) -> CredentialPolicy {
        CredentialPolicy {
            exec_plugins: self.allow_exec_plugin.iter().cloned().collect(),
            argocd_aws_auth: self.inventories.allow_argocd_aws_auth,
        }
    }
}

/// An `--allow-exec-plugin` value: a command as a kubeconfig writes it,
/// not empty, no surrounding white space.
pub(crate) fn plugin_command(value: &str) -> Result<String, String> {
    if value.is_empty() || value.trim() != value {
        return Err("a command name (as the kubeconfig's exec.command writes it), like argocd-k8s-auth".into());
    }
    Ok(value.to_owned())
}

impl Default for SourceArgs {
    /// The command line's defaults (checked by a test).
    fn default() -> Self {
        SourceArgs {
            member_source: vec![MemberSource::Fedns],
            karmada_kubeconfig: None,
            karmada_secret_namespace: "karmada-cluster".into(),
            kubefed_namespace: "kube-federation-system".into(),
            inventories: InventoryArgs::default(),
            auto_records: false,
            auto_records_domain: None,
            allow_exec_plugin: Vec::new(),
        }
    }
}

/// Where the Clusternet, Cluster API, Argo CD and ClusterProfile
/// inventories are, and which of their objects are members. Each
/// kubeconfig defaults to the host cluster's; each selector is a label
/// selector (`a=b,c in (d,e)`), empty for all.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct InventoryArgs {
    /// Kubeconfig of Clusternet's parent cluster (clusternet-hub).
    #[arg(long, value_name = "PATH")]
    pub clusternet_kubeconfig: Option<PathBuf>,
    /// Label selector of the ManagedClusters that are members.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub clusternet_selector: String,
    /// Reach Clusternet children only through the hub: those with
    /// `status.useSocket` through its socket proxy; a child without a
    /// tunnel is reported unreachable (the hub does not proxy it) instead
    /// of being dialled directly.
    #[arg(long)]
    pub clusternet_through_hub: bool,
    /// Kubeconfig of the Cluster API management cluster.
    #[arg(long, value_name = "PATH")]
    pub capi_kubeconfig: Option<PathBuf>,
    /// Namespace of the Cluster API Clusters (default: all namespaces).
    #[arg(long, value_name = "NAMESPACE")]
    pub capi_namespace: Option<String>,
    /// Label selector of the Cluster API Clusters that are members.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub capi_selector: String,
    /// Kubeconfig of the cluster Argo CD runs in.
    #[arg(long, value_name = "PATH")]
    pub argocd_kubeconfig: Option<PathBuf>,
    /// Argo CD's namespace (its cluster Secrets).
    #[arg(long, value_name = "NAMESPACE", default_value = "argocd")]
    pub argocd_namespace: String,
    /// Label selector of the cluster Secrets that are members (besides
    /// `argocd.argoproj.io/secret-type=cluster`).
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub argocd_selector: String,
    /// Honour Argo CD `awsAuthConfig`: sign EKS tokens with fedns's own
    /// AWS identity (IRSA, Pod Identity...) for the cluster a Secret
    /// names, as Argo CD's argocd-k8s-auth does. Only for EKS endpoints
    /// (https://<id>.<zone>.<region>.eks.amazonaws.com, port 443) whose
    /// certificate is verified. Whoever writes Argo CD's cluster Secrets
    /// then has fedns present that identity to EKS clusters of their
    /// choosing. Unset: such a member is Ready=False, reason
    /// CredentialsRefused.
    #[arg(long)]
    pub allow_argocd_aws_auth: bool,
    /// Kubeconfig of the cluster holding the ClusterProfiles (the hub).
    #[arg(long, value_name = "PATH")]
    pub clusterprofile_kubeconfig: Option<PathBuf>,
    /// Namespace of the ClusterProfiles (default: all namespaces).
    #[arg(long, value_name = "NAMESPACE")]
    pub clusterprofile_namespace: Option<String>,
    /// Label selector of the ClusterProfiles that are members.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub clusterprofile_selector: String,
    /// The consumer's access provider file (JSON, as the cluster inventory
    /// API's `pkg/access`: `{"providers": [{"name", "execConfig"}]}`):
    /// access providers of those names are reached with their exec
    /// credential plugin; `secretreader` is built in.
    #[arg(long, value_name = "PATH")]
    pub clusterprofile_provider_file: Option<PathBuf>,
    /// The consumer namespace where the `secretreader` provider's Secrets
    /// are (`<namespace>/<clusterName>`, key `token`; default: the
    /// controller namespace).
    #[arg(long, value_name = "NAMESPACE")]
    pub clusterprofile_secret_namespace: Option<String>,
}

impl Default for InventoryArgs {
    /// The command line's defaults.
    fn default() -> Self {
        InventoryArgs {
            clusternet_kubeconfig: None,
            clusternet_selector: String::new(),
            clusternet_through_hub: false,
            capi_kubeconfig: None,
            capi_namespace: None,
            capi_selector: String::new(),
            argocd_kubeconfig: None,
            argocd_namespace: "argocd".into(),
            argocd_selector: String::new(),
            allow_argocd_aws_auth: false,
            clusterprofile_kubeconfig: None,
            clusterprofile_namespace: None,
            clusterprofile_selector: String::new(),
            clusterprofile_provider_file: None,
            clusterprofile_secret_namespace: None,
        }
    }
}

/// A `--txt-wildcard-replacement`: one DNS label (letters, digits, `-`,
/// `_`), lower-cased as external-dns does.
fn wildcard_replacement(value: &str) -> Result<String, String> {
    let valid = (1..=50).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(value.to_ascii_lowercase())
    } else {
        Err("one DNS label of letters, digits, '-' or '_' (at most 50 characters), like wildcard".into())
    }
}
