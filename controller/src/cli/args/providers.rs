//! Where `fedns controller` publishes: the providers and each one's flags
//! (Google Cloud DNS, Route53, CoreDNS's etcd, an external-dns webhook
//! provider).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

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
    /// Any external-dns webhook provider (Cloudflare, PowerDNS, NS1, ...),
    /// at `--webhook-url`.
    Webhook,
}

/// Settings of the webhook provider (external-dns's
/// `--webhook-provider-*` flags, same defaults).
#[derive(Debug, Clone, PartialEq, Args)]
pub struct WebhookArgs {
    /// A provider's URL (usually a sidecar on localhost); repeatable or
    /// comma-separated: each zone goes to the first provider whose
    /// negotiated domain filter takes it.
    #[arg(
        long = "webhook-url",
        value_name = "URL",
        value_delimiter = ',',
        default_value = "http://localhost:8888"
    )]
    pub urls: Vec<String>,
    /// Bound of one call to the provider, seconds (external-dns: read 5 s
    /// + write 10 s).
    #[arg(long = "webhook-timeout", value_name = "SECONDS", default_value_t = 15)]
    pub timeout: u64,
    /// Negotiation attempts at start (transport errors and 5xx retried
    /// with exponential backoff from 0.5 s), the first included.
    #[arg(long = "webhook-negotiate-attempts", value_name = "N", default_value_t = 5)]
    pub negotiate_attempts: u32,
    /// Largest response body, octets (external-dns's default 32 MiB).
    #[arg(long = "webhook-max-body-size", value_name = "OCTETS", default_value_t = 32 << 20)]
    pub max_body: usize,
    /// Endpoints per `POST /records` at most (a name's record and its
    /// ownership record always go together).
    #[arg(long = "webhook-max-endpoints-per-request", value_name = "N", default_value_t = 500)]
    pub max_endpoints_per_request: usize,
}

impl Default for WebhookArgs {
    /// The command line's defaults (checked by a test).
    fn default() -> Self {
        WebhookArgs {
            urls: vec!["http://localhost:8888".into()],
            timeout: 15,
            negotiate_attempts: 5,
            max_body: 32 << 20,
            max_endpoints_per_request: 500,
        }
    }
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
