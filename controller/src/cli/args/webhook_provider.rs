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
    /// The protocol's address. Default: localhost, for a sidecar of
    /// external-dns (external-dns's default --webhook-provider-url is
    /// http://localhost:8888). Any address outside 127.0.0.0/8 and ::1 is
    /// refused at start unless callers are authenticated: --token-file or
    /// --tls-client-ca-file.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8888")]
    pub listen: SocketAddr,
    /// `/healthz` and `/metrics` (external-dns's convention: port 8080).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8080")]
    pub health_listen: SocketAddr,
    /// A file holding a bearer token every protocol request must carry
    /// (`Authorization: Bearer ...`, else 401; compared in constant
    /// time). external-dns sends none: use it behind a proxy that adds it.
    /// Required to listen beyond loopback, unless --tls-client-ca-file is
    /// set.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Serve the protocol over TLS with this certificate chain (PEM, leaf
    /// first: `tls.crt` of a kubernetes.io/tls Secret). Read at start and
    /// again within a minute of a change (a renewed Secret).
    #[arg(long, value_name = "PATH", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The private key of --tls-cert-file (PEM: PKCS #8, PKCS #1 or SEC1;
    /// `tls.key` of a kubernetes.io/tls Secret).
    #[arg(long, value_name = "PATH", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Require a client certificate signed by one of these CAs (PEM) on
    /// every connection (mutual TLS); a client without one fails the
    /// handshake. Needs --tls-cert-file; authenticates callers beyond
    /// loopback without --token-file.
    #[arg(long, value_name = "PATH", requires = "tls_cert_file")]
    pub tls_client_ca_file: Option<PathBuf>,
}
