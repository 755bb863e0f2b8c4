//! TLS for `fedns webhook-provider`'s protocol (rustls, ring): a server
//! certificate and key from PEM files as a kubernetes.io/tls Secret mounts
//! them (`tls.crt`, `tls.key`), read again when they change (a renewed
//! Secret reaches the pod's volume without a restart), and optionally a
//! CA bundle whose client certificates every connection must present
//! (mutual TLS).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

/// How often the certificate files are checked for a change.
pub const RELOAD_EVERY: Duration = Duration::from_secs(60);

/// The server's certificate chain and key, from their PEM files.
pub struct CertificateFiles {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Loaded>,
}

/// What the files held when last read, and the key made of it.
struct Loaded {
    pem: (Vec<u8>, Vec<u8>),
    key: Arc<CertifiedKey>,
}

impl std::fmt::Debug for CertificateFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateFiles")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading the {what} {}", path.display()))
}

/// The certificate chain (leaf first) and key in `cert_pem` and `key_pem`,
/// checked to belong together.
fn certified_key(
    cert: &Path,
    cert_pem: &[u8],
    key: &Path,
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> anyhow::Result<CertifiedKey> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("the certificate file {} is not PEM", cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "the certificate file {} holds no CERTIFICATE block",
        cert.display()
    );
    let private = PrivateKeyDer::from_pem_slice(key_pem).with_context(|| {
        format!(
            "the key file {} holds no private key in PEM (PKCS #8, PKCS #1 or SEC1)",
            key.display()
        )
    })?;
    CertifiedKey::from_der(chain, private, provider).with_context(|| {
        format!(
            "the key {} does not go with the certificate {} (or is of a kind rustls cannot sign with)",
            key.display(),
            cert.display()
        )
    })
}

impl CertificateFiles {
    /// Reads the certificate chain in `cert` (PEM, leaf first) and its
    /// private key in `key` (PEM).
    ///
    /// # Errors
    /// A file cannot be read, holds no PEM certificate or key, or the key
    /// is not the certificate's.
    pub fn load(cert: &Path, key: &Path) -> anyhow::Result<Arc<CertificateFiles>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pem = (read(cert, "certificate file")?, read(key, "key file")?);
        let certified = certified_key(cert, &pem.0, key, &pem.1, &provider)?;
        Ok(Arc::new(CertificateFiles {
            cert: cert.to_owned(),
            key: key.to_owned(),
            provider,
            current: RwLock::new(Loaded {
                pem,
                key: Arc::new(certified),
            }),
        }))
    }

    /// Reads the files again; a changed pair that goes together replaces
    /// the one served (to new connections). Ok(true) when it changed.
    ///
    /// # Errors
    /// A file cannot be read or the new pair is not usable (for instance
    /// read between the writes of the certificate and the key): the pair
    /// served stays.
    pub fn reload(&self) -> anyhow::Result<bool> {
        let pem = (read(&self.cert, "certificate file")?, read(&self.key, "key file")?);
        if self.current.read().is_ok_and(|current| current.pem == pem) {
            return Ok(false);
        }
        let certified = certified_key(&self.cert, &pem.0, &self.key, &pem.1, &self.provider)?;
        let mut current = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *current = Loaded {
            pem,
            key: Arc::new(certified),
        };
        Ok(true)
    }

    /// Reloads every `every` in the background, logging a change or a
    /// failure, until the task is aborted.
    pub fn watch(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let files = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                match files.reload() {
                    Ok(true) => tracing::info!(cert = %files.cert.display(), "webhook provider: certificate reloaded"),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(
                        error = format!("{e:#}"),
                        "webhook provider: certificate not reloaded; the previous one is still served"
                    ),
                }
            }
        })
    }

    /// The chain and key served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let current = self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(&current.key)
    }
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A server configuration presenting `certificate`; with `client_ca` (a
/// PEM bundle), every client must present a certificate signed by one of
/// its CAs, else the handshake fails. HTTP/1.1 (ALPN `http/1.1`), TLS 1.2
/// and 1.3.
///
/// # Errors
/// The CA file cannot be read, holds no usable CA certificate, or rustls
/// refuses the configuration.
pub fn server_config(
    certificate: Arc<CertificateFiles>,
    client_ca: Option<&Path>,
) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::clone(&certificate.provider);
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let pem = read(path, "client CA file")?;
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.with_context(|| format!("the client CA file {} is not PEM", path.display()))?;
                roots
                    .add(cert)
                    .with_context(|| format!("a certificate of the client CA file {}", path.display()))?;
            }
            anyhow::ensure!(
                !roots.is_empty(),
                "the client CA file {} holds no CERTIFICATE block",
                path.display()
            );
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("client certificates signed by {}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for 127.0.0.1 and its key, as PEM.
    fn pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fedns-webhook-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leaf(files: &CertificateFiles) -> Vec<u8> {
        files.current().cert[0].to_vec()
    }

    fn der(pem: &str) -> Vec<u8> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
    }

    #[test]
    fn a_renewed_pair_is_served_and_a_broken_one_is_not() {
        let dir = dir("reload");
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        let (first, first_key) = pair();
        std::fs::write(&cert, &first).unwrap();
        std::fs::write(&key, &first_key).unwrap();
        let files = CertificateFiles::load(&cert, &key).unwrap();
        assert_eq!(leaf(&files), der(&first));
        assert!(!files.reload().unwrap(), "unchanged files");

        let (second, second_key) = pair();
        std::fs::write(&cert, &second).unwrap();
        std::fs::write(&key, &second_key).unwrap();
        assert!(files.reload().unwrap());
        assert_eq!(leaf(&files), der(&second));

        // The certificate renewed, the key not yet written.
        let (third, _) = pair();
        std::fs::write(&cert, &third).unwrap();
        let refused = format!("{:#}", files.reload().unwrap_err());
        assert!(refused.contains("does not go with the certificate"), "{refused}");
        assert_eq!(leaf(&files), der(&second), "the previous pair is still served");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unusable_files_are_errors_naming_them() {
        let dir = dir("errors");
        let (cert, key, ca) = (dir.join("tls.crt"), dir.join("tls.key"), dir.join("ca.crt"));
        let (good, good_key) = pair();
        let cases = [
            ("", good_key.as_str(), "holds no CERTIFICATE block"),
            (good.as_str(), "", "holds no private key"),
            (good.as_str(), "not a key", "holds no private key"),
        ];
        for (cert_pem, key_pem, needle) in cases {
            std::fs::write(&cert, cert_pem).unwrap();
            std::fs::write(&key, key_pem).unwrap();
            let refused = format!("{:#}", CertificateFiles::load(&cert, &key).unwrap_err());
            assert!(refused.contains(needle), "{refused}");
        }
        let missing = format!("{:#}", CertificateFiles::load(&dir.join("nope"), &key).unwrap_err());
        assert!(missing.contains("reading the certificate file"), "{missing}");

        std::fs::write(&cert, &good).unwrap();
        std::fs::write(&key, &good_key).unwrap();
        let files = CertificateFiles::load(&cert, &key).unwrap();
        std::fs::write(&ca, "").unwrap();
        let refused = format!("{:#}", server_config(Arc::clone(&files), Some(&ca)).unwrap_err());
        assert!(
            refused.contains("client CA file") && refused.contains("no CERTIFICATE"),
            "{refused}"
        );
        std::fs::write(&ca, &good).unwrap();
        assert!(server_config(files, Some(&ca)).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
