//! Arguments of `fedns webhook-provider`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

/// Arguments of `fedns webhook-provider`: fedns's zones as an
/// external-dns webhook provider for one external-dns instance.
#[derive(Debug, Args)]
pub struct WebhookProviderArgs {
    /// Kubeconfig of the host cluster, where the records become
    /// DNSEndpoints (default: in-cluster config, else $KUBECONFIG or
    /// ~/.kube/config).
    #[arg(long, value_name = "PATH", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the host cluster this external-dns instance publishes
    /// into (its DNSEndpoint lives there; the Domain's allowedNamespaces
    /// applies).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: String,
    /// This external-dns instance's name (e.g. its cluster): the
    /// DNSEndpoint is `external-dns-<owner>`; instances must differ.
    #[arg(long, value_name = "NAME")]
    pub owner: String,
    /// Namespace of the Domains (the zones offered at negotiation).
    #[arg(long, value_name = "NAMESPACE", default_value = "fedns-system")]
    pub domain_namespace: String,
    /// The protocol's address: localhost, for a sidecar of external-dns
    /// (external-dns's default --webhook-provider-url is
    /// http://localhost:8888).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8888")]
    pub listen: SocketAddr,
    /// `/healthz` and `/metrics` (external-dns's convention: port 8080).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8080")]
    pub health_listen: SocketAddr,
    /// A file holding a bearer token every protocol request must carry
    /// (`Authorization: Bearer ...`). external-dns sends none: use it only
    /// behind a proxy that adds it; a sidecar on localhost needs none.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}
