//! Arguments of `fedns dns-server`, its member-side mode, and response
//! rate limiting (which `fedns controller` shares).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

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
    /// After SIGTERM: answer 503 on /readyz and keep answering DNS for
    /// this many seconds (so that the endpoint removal reaches kube-proxy
    /// on every node) before closing the listeners. Keep it below the
    /// pod's terminationGracePeriodSeconds; deploy/ sets 10.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub shutdown_drain: u64,
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
    /// The served zones kept across restarts (not with --manifests or
    /// --member-cluster).
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
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

/// The served zones kept in a file across restarts (`fedns controller`
/// and `fedns dns-server` watching a host).
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct SnapshotArgs {
    /// Keep the served zones (their stored answers and serials) in this
    /// file, written again after changes (at most once a second, and
    /// every ten times as long as the last write took); at start, answer from it
    /// at once while the objects are listed and published again, which
    /// then keeps what is the same (no new serial) and replaces the rest.
    /// Only a file of this same binary is read. Zones that are signed or
    /// hold wildcards or delegations are not kept. An emptyDir volume
    /// survives container restarts.
    #[arg(long, value_name = "PATH")]
    pub snapshot_file: Option<PathBuf>,
    /// At start, serve the --snapshot-file only if it was written at most
    /// this many seconds ago (RFC 8767 suggests serving stale answers for
    /// one to three days).
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400, requires = "snapshot_file")]
    pub snapshot_max_age: u64,
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
