//! A CA generated per emulator and a server certificate for loopback
//! (`127.0.0.1`, `::1`, `localhost`) signed by it (rcgen).

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// The CA certificate (PEM) clients trust, and the server's TLS config.
pub struct Tls {
    /// PEM of the CA certificate.
    pub ca_pem: String,
    /// rustls server configuration presenting the signed certificate.
    pub server_config: Arc<rustls::ServerConfig>,
}

/// Generates a fresh CA and server certificate.
///
/// # Errors
/// Key generation or signing fails (should not happen).
pub fn generate(cluster_name: &str) -> Result<Tls, String> {
    let err = |e: rcgen::Error| e.to_string();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("fedns-emulator-ca-{cluster_name}"));
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().map_err(err)?).map_err(err)?;

    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "::1".to_owned(), "localhost".to_owned()]).map_err(err)?;
    params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.signed_by(&key, &ca).map_err(err)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| e.to_string())?;
    let mut server_config = server_config;
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca.pem(),
        server_config: Arc::new(server_config),
    })
}
