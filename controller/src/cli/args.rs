//! Command-line interface (clap derive).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

// Defined beside the logging it configures (which sits below the command
// line); named here with the other argument types.
pub use crate::logging::LogFormat;
use crate::members::MemberSource;

/// fedns: global DNS and cross-cluster service discovery for Kubernetes federations.
#[derive(Debug, Parser)]
#[command(name = "fedns", version)]
pub struct Cli {
    /// Log line format on standard error. The level comes from `RUST_LOG`
    /// (default `info,kube_client=off`), e.g. `RUST_LOG=fedns=debug,kube=warn`.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller (member health, records, DNSEndpoints, publishing).
    Controller(Box<ControllerArgs>),
    /// Run only the embedded authoritative DNS server.
    DnsServer(DnsServerArgs),
    /// Print the CustomResourceDefinitions as multi-document YAML.
    Crds(CrdsArgs),
    /// Register a member cluster with the federation.
    Join(JoinArgs),
    /// Run a whole federation on this machine (emulated clusters, controller, DNS).
    Sandbox(SandboxArgs),
    /// Explain why each cluster is or is not behind a published name.
    Explain(ExplainArgs),
    /// Print the cluster DNS forwarding (CoreDNS, kube-dns, dnsmasq) a
    /// member needs for discovery of `nginx.ns.myfed` from its pods.
    DiscoveryConfig(DiscoveryConfigArgs),
    /// Probe the federation's load balancers from inside a member cluster
    /// (a vantage point) and report what it sees to the controller.
    Agent(AgentArgs),
    /// Print a reference document generated from this binary (hidden: it
    /// keeps `docs/` current).
    #[command(hide = true)]
    Docs(DocsArgs),
}

impl Command {
    /// The subcommand as typed, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Controller(_) => "controller",
            Command::DnsServer(_) => "dns-server",
            Command::Crds(_) => "crds",
            Command::Join(_) => "join",
            Command::Sandbox(_) => "sandbox",
            Command::Explain(_) => "explain",
            Command::DiscoveryConfig(_) => "discovery-config",
            Command::Agent(_) => "agent",
            Command::Docs(_) => "docs",
        }
    }
}

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

/// Arguments of `fedns crds`.
#[derive(Debug, Args)]
pub struct CrdsArgs {
    /// Write one file per CRD into this folder (as kept in `deploy/crds/`)
    /// instead of printing the stream.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Arguments of `fedns docs`.
#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The document to print.
    #[arg(value_enum)]
    pub document: Document,
}

/// Documents `fedns docs` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Document {
    /// `docs/cli.md`: every subcommand and flag.
    Cli,
}

/// Arguments of `fedns dns-server`.
#[derive(Debug, Args)]
pub struct DnsServerArgs {
    /// Address to answer on, UDP and TCP (repeatable; IPv4 or [IPv6]:port).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:53")]
    pub listen: Vec<SocketAddr>,
    /// Serve the Domain and DNSEndpoint objects in these YAML files (a file
    /// or a folder) instead of watching a cluster.
    #[arg(long, value_name = "PATH", conflicts_with = "kubeconfig")]
    pub manifests: Option<PathBuf>,
    /// With --manifests: TSIG keys for the Domains' `spec.transfer.tsigKeys`,
    /// one `algorithm:name:base64-secret` per line (kdig's -y form; `#`
    /// starts a comment). A Domain's key is found by its name.
    #[arg(long, value_name = "PATH", requires = "manifests")]
    pub tsig_key_file: Option<PathBuf>,
    /// With --manifests: the folder holding the DNSSEC signing keys of
    /// Domains with `spec.dnssec.enabled`, PKCS#8 DER files:
    /// `<zone>.<algorithm number>.pkcs8` (e.g. `example.com.13.pkcs8`) for
    /// `keyMode: CSK`, `<zone>.<algorithm number>.ksk.pkcs8` and
    /// `….zsk.pkcs8` for `KSK+ZSK`, made (mode 0600) when absent; standby
    /// keys `<zone>.<algorithm number>.standby-<name>.pkcs8` are published
    /// only (flags 256 when `<name>` starts with `zsk`, else 257). The DS
    /// record for the parent zone is logged when the zone is published.
    #[arg(long, value_name = "DIR", requires = "manifests")]
    pub dnssec_key_dir: Option<PathBuf>,
    /// Kubeconfig of the host cluster to watch (default: in-cluster config,
    /// else $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the Domain objects (the controller namespace).
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub namespace: String,
    /// Do not write DNSEndpoint/Domain status or Events (extra replicas).
    #[arg(long)]
    pub read_only: bool,
    /// Milliseconds from recording a zone's next SOA serial
    /// (`Domain.status.serialRecord`) to the instant every DNS server
    /// replica shows it; only the replica that writes status reads it. Keep
    /// it above the time a status write plus a watch event take to reach
    /// every replica (a replica that learns a record later logs a warning
    /// and counts it in fedns_dns_serial_records_late_total).
    #[arg(long, value_name = "MILLISECONDS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub serial_activation_delay: u64,
    /// UDP worker threads per address (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub udp_workers: Option<usize>,
    /// Largest UDP response to EDNS clients, in octets (RFC 6891; 1232 is
    /// the DNS Flag Day 2020 value).
    #[arg(long, value_name = "OCTETS", default_value_t = 1232, value_parser = clap::value_parser!(u16).range(512..))]
    pub max_udp_payload: u16,
    /// Close TCP connections idle this many seconds (above 3/4 of
    /// --max-tcp-connections: a quarter of it, at least 1 s).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub tcp_idle_timeout: u64,
    /// Most TCP connections open at once; at the cap the longest-idle one is
    /// closed for a new one (RFC 7766 §6.2.3).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_tcp_connections: usize,
    /// Most TCP connections open at once from one client: an IPv4 address,
    /// an IPv6 /64; a new one past this closes that client's longest-idle
    /// connection (closed at accept only when all of its connections are
    /// mid-message; 0: no limit). Behind a
    /// Service with externalTrafficPolicy: Cluster clients arrive from node
    /// addresses: use Local, or raise this.
    #[arg(long, value_name = "N", default_value_t = fedns_dnsserver::DEFAULT_MAX_TCP_CONNECTIONS_PER_CLIENT)]
    pub max_tcp_connections_per_client: usize,
    /// Serve /metrics, /healthz and /readyz here (omit to disable).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_addr: Option<SocketAddr>,
    /// MaxMind DB file (GeoIP2/GeoLite2 Country or City) placing clients
    /// of `Nearest` records by country or continent (Domain
    /// `spec.geoRegions`). Unreadable: served without, and said so on the
    /// Domains.
    #[arg(long, value_name = "PATH")]
    pub geoip_db: Option<PathBuf>,
    /// Response rate limiting.
    #[command(flatten)]
    pub rrl: RrlArgs,
    /// Member-side discovery (`nginx.ns.myfed` from inside members).
    #[command(flatten)]
    pub member: MemberSideArgs,
}

/// `fedns dns-server` as a member-side replica: it also answers the
/// discovery zones `F.svc.<cluster-domain>` of one member cluster (its
/// cluster DNS forwards them here; see `fedns discovery-config`).
#[derive(Debug, Clone, Default, Args)]
pub struct MemberSideArgs {
    /// Run as the replica of this member (its MemberCluster name): the
    /// host is read with --kubeconfig (read-only), the member with
    /// --member-kubeconfig.
    #[arg(long, value_name = "NAME", conflicts_with = "manifests")]
    pub member_cluster: Option<String>,
    /// Kubeconfig of the member this replica runs in (default: in-cluster
    /// config). Read access to Services, EndpointSlices and its Node.
    #[arg(long, value_name = "PATH", requires = "member_cluster")]
    pub member_kubeconfig: Option<PathBuf>,
    /// The member's cluster domain.
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local")]
    pub cluster_domain: String,
    /// The Node this replica runs on (the downward API's spec.nodeName):
    /// its `topology.kubernetes.io/zone` picks the zone fallbacks go to.
    #[arg(long, value_name = "NAME", env = "NODE_NAME", requires = "member_cluster")]
    pub node_name: Option<String>,
    /// Keep the last host-side state here and serve it at start while the
    /// host is unreachable (an emptyDir survives container restarts).
    #[arg(long, value_name = "PATH", requires = "member_cluster")]
    pub state_file: Option<PathBuf>,
}

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

/// Response rate limiting of the embedded DNS server, over UDP (Knot's
/// `rrl` module, BIND's RRL); TCP is never limited.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct RrlArgs {
    /// UDP responses per second per client prefix (IPv4 /24, IPv6 /56) and
    /// response class (answers and NODATA also per name; NXDOMAIN and
    /// errors per prefix). 0: off.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rrl_rate: u32,
    /// Every Nth rate-limited response goes out truncated (TC) so a real
    /// client retries over TCP; the others are dropped. 0: drop all.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub rrl_slip: u32,
    /// A network never rate-limited, in CIDR notation (repeatable).
    #[arg(long, value_name = "CIDR")]
    pub rrl_exempt: Vec<ipnet::IpNet>,
}

impl Default for RrlArgs {
    /// Off.
    fn default() -> Self {
        RrlArgs {
            rrl_rate: 0,
            rrl_slip: 2,
            rrl_exempt: Vec::new(),
        }
    }
}

impl RrlArgs {
    /// The DNS server's settings.
    pub fn config(&self) -> fedns_dnsserver::RrlConfig {
        fedns_dnsserver::RrlConfig {
            rate: self.rrl_rate,
            slip: self.rrl_slip,
            exempt: self.rrl_exempt.clone(),
            ..fedns_dnsserver::RrlConfig::default()
        }
    }
}

/// Where desired records are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    /// fedns's own authoritative DNS server, in the controller process.
    Embedded,
    /// CoreDNS through its etcd plugin (etcd v3).
    CorednsEtcd,
    /// AWS Route53 hosted zones.
    Route53,
    /// Google Cloud DNS managed zones (also accepted as `google`).
    #[value(alias = "google")]
    GoogleClouddns,
}

/// Visibility of Cloud DNS managed zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ZoneVisibility {
    /// Zones served on the internet.
    Public,
    /// Zones served to VPC networks.
    Private,
}

/// Settings of the google-clouddns provider. Credentials come from
/// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS: a
/// service-account key or a workload identity federation file; else GKE
/// Workload Identity through the metadata server).
#[derive(Debug, Clone, PartialEq, Args)]
pub struct GoogleArgs {
    /// Project of the managed zones (default: the metadata server's).
    #[arg(id = "google_project", long = "google-project", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Managed zones to publish in, by name (repeatable or
    /// comma-separated); default: the zone whose dnsName is each Domain's.
    #[arg(id = "google_zone", long = "google-zone", value_name = "ZONE", value_delimiter = ',')]
    pub zones: Vec<String>,
    /// Only managed zones of this visibility (default: either).
    #[arg(
        id = "google_zone_visibility",
        long = "google-zone-visibility",
        value_enum,
        value_name = "VISIBILITY"
    )]
    pub zone_visibility: Option<ZoneVisibility>,
    /// Cloud DNS API root URL (a proxy, or a stand-in); default
    /// https://dns.googleapis.com.
    #[arg(id = "google_endpoint", long = "google-endpoint", value_name = "URL")]
    pub endpoint: Option<String>,
    /// Record-set additions (and deletions) per Cloud DNS change at most.
    #[arg(
        id = "google_batch_change_size",
        long = "google-batch-change-size",
        value_name = "N",
        default_value_t = 1000
    )]
    pub batch_change_size: usize,
    /// Cloud DNS requests per second at most.
    #[arg(id = "google_rps", long = "google-rps", value_name = "N", default_value_t = 10.0)]
    pub requests_per_second: f64,
    /// Attempts per request on 429 and 5xx, the first included.
    #[arg(
        id = "google_max_attempts",
        long = "google-max-attempts",
        value_name = "N",
        default_value_t = 5
    )]
    pub max_attempts: u32,
    /// An OAuth access token to use as is instead of Application Default
    /// Credentials (tests, stand-ins; it is not refreshed).
    #[arg(
        id = "google_access_token",
        long = "google-access-token",
        value_name = "TOKEN",
        env = "GOOGLE_OAUTH_ACCESS_TOKEN",
        hide_env_values = true
    )]
    pub access_token: Option<String>,
}

impl Default for GoogleArgs {
    /// The command line's defaults (checked by a test).
    fn default() -> Self {
        GoogleArgs {
            project: None,
            zones: Vec::new(),
            zone_visibility: None,
            endpoint: None,
            batch_change_size: 1000,
            requests_per_second: 10.0,
            max_attempts: 5,
            access_token: None,
        }
    }
}

/// Settings of the route53 provider. Credentials and region come from the
/// standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE,
/// web identity, container or instance metadata).
#[derive(Debug, Clone, PartialEq, Args)]
pub struct Route53Args {
    /// Hosted zones to publish in, by id (repeatable or comma-separated);
    /// default: the hosted zone named like each Domain.
    #[arg(long = "route53-zone-id", value_name = "ID", value_delimiter = ',')]
    pub zone_ids: Vec<String>,
    /// Route53 API endpoint URL (a proxy, or an emulator such as moto).
    #[arg(long = "route53-endpoint", value_name = "URL")]
    pub endpoint: Option<String>,
    /// Signing region (default: from the AWS chain, else us-east-1).
    #[arg(long = "route53-region", value_name = "REGION")]
    pub region: Option<String>,
    /// Route53 requests per second at most (AWS allows 5 per account).
    #[arg(long = "route53-rps", value_name = "N", default_value_t = 4.0)]
    pub requests_per_second: f64,
    /// Attempts per request on throttling and 5xx, the first included.
    #[arg(long = "route53-max-attempts", value_name = "N", default_value_t = 5)]
    pub max_attempts: u32,
}

impl Default for Route53Args {
    /// The command line's defaults (checked by a test).
    fn default() -> Self {
        Route53Args {
            zone_ids: Vec::new(),
            endpoint: None,
            region: None,
            requests_per_second: 4.0,
            max_attempts: 5,
        }
    }
}

/// Settings of the coredns-etcd provider.
#[derive(Debug, Clone, Args)]
pub struct EtcdArgs {
    /// etcd client URLs (repeatable or comma-separated).
    #[arg(
        long = "etcd-endpoints",
        value_name = "URL",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:2379"
    )]
    pub endpoints: Vec<String>,
    /// Key prefix CoreDNS reads (`path` of its etcd plugin).
    #[arg(long = "etcd-prefix", value_name = "PREFIX", default_value = "/skydns")]
    pub prefix: String,
    /// CA certificate (PEM) for etcd's TLS.
    #[arg(long = "etcd-ca-file", value_name = "PATH")]
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for etcd's TLS.
    #[arg(long = "etcd-cert-file", value_name = "PATH")]
    pub cert_file: Option<PathBuf>,
    /// Client key (PEM) for etcd's TLS.
    #[arg(long = "etcd-key-file", value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// User name for etcd's auth (needs the password too); unset when
    /// etcd runs without auth.
    #[arg(long = "etcd-username", value_name = "NAME", requires = "password")]
    pub username: Option<String>,
    /// Password for `--etcd-username`. A hidden flag: give it in the
    /// environment (e.g. from a Secret) so it stays out of process listings.
    #[arg(
        long = "etcd-password",
        env = "FEDNS_ETCD_PASSWORD",
        hide_env_values = true,
        hide = true,
        requires = "username"
    )]
    pub password: Option<String>,
}

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
    /// DNS listen address of the embedded server (repeatable).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:53")]
    pub dns_listen: Vec<SocketAddr>,
    /// UDP worker threads per DNS address (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub udp_workers: Option<usize>,
    /// /metrics, /healthz and /readyz.
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
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
    /// Namespace of kubefed's KubeFedClusters and their Secrets.
    #[arg(long, value_name = "NAMESPACE", default_value = "kube-federation-system")]
    pub kubefed_namespace: String,
    /// Where the other inventories are (`--member-source clusternet|capi|argocd|clusterprofile`).
    #[command(flatten)]
    pub inventories: InventoryArgs,
    /// Make ServiceDNSRecords and IngressDNSRecords from Service and Ingress
    /// templates (and kubefed FederatedServices) annotated
    /// `multiclusterdns.fedns.io/domain: <Domain>`; delete them when their
    /// source goes. Records not labelled `app.kubernetes.io/managed-by: fedns`
    /// are never changed.
    #[arg(long)]
    pub auto_records: bool,
    /// Domain for `--auto-records` sources without the domain annotation
    /// (default: only annotated sources make records).
    #[arg(long, value_name = "DOMAIN", requires = "auto_records")]
    pub auto_records_domain: Option<String>,
}

impl Default for SourceArgs {
    /// The command line's defaults (checked by a test).
    fn default() -> Self {
        SourceArgs {
            member_source: vec![MemberSource::Fedns],
            karmada_kubeconfig: None,
            kubefed_namespace: "kube-federation-system".into(),
            inventories: InventoryArgs::default(),
            auto_records: false,
            auto_records_domain: None,
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
            clusterprofile_kubeconfig: None,
            clusterprofile_namespace: None,
            clusterprofile_selector: String::new(),
            clusterprofile_provider_file: None,
            clusterprofile_secret_namespace: None,
        }
    }
}

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
    /// publishes to a Cloud DNS API stand-in on loopback, whose address the
    /// first screen prints. The embedded server always answers.
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn route53_defaults_match_the_command_line() {
        let cli = Cli::try_parse_from(["fedns", "controller"]).expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.route53, Route53Args::default());
        assert_eq!(args.sources, SourceArgs::default());
        let cli = Cli::try_parse_from([
            "fedns",
            "controller",
            "--provider",
            "route53",
            "--provider",
            "embedded",
            "--route53-zone-id",
            "Z1,Z2",
            "--route53-rps",
            "2.5",
        ])
        .expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.provider, vec![Provider::Route53, Provider::Embedded]);
        assert_eq!(args.route53.zone_ids, vec!["Z1", "Z2"]);
        assert_eq!(args.route53.requests_per_second, 2.5);
    }

    #[test]
    fn clouddns_flags_and_defaults_match_the_command_line() {
        let cli = Cli::try_parse_from(["fedns", "controller"]).expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.google, GoogleArgs::default());
        let cli = Cli::try_parse_from([
            "fedns",
            "controller",
            "--provider",
            "google",
            "--google-zone",
            "zone-a,zone-b",
            "--google-zone",
            "zone-c",
            "--google-project",
            "p",
            "--google-zone-visibility",
            "private",
            "--google-batch-change-size",
            "200",
        ])
        .expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.provider, vec![Provider::GoogleClouddns]);
        assert_eq!(args.google.zones, vec!["zone-a", "zone-b", "zone-c"]);
        assert_eq!(args.google.project.as_deref(), Some("p"));
        assert_eq!(args.google.zone_visibility, Some(ZoneVisibility::Private));
        assert_eq!(args.google.batch_change_size, 200);
        assert!(Cli::try_parse_from(["fedns", "controller", "--provider", "google-clouddns"]).is_ok());
    }
}
