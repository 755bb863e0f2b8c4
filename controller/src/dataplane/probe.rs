//! One data-plane probe of one load balancer address: a TCP connect (a new
//! connection each time: the connect is the check), or an HTTP(S) GET to
//! exactly that address with the record's name as `Host` and TLS SNI.
//! Everything (connect, TLS, answer) within the timeout.
//!
//! HTTP(S) checks keep their connection to the address between probes, as
//! Envoy's health checker does by default (`reuse_connection`): a probe is
//! then one request and one answer instead of a TCP (and TLS) handshake,
//! which is most of the CPU at thousands of probes a second. A kept
//! connection that was closed (the load balancer's idle timeout, a restart)
//! is replaced by a new one within the same probe; one that hangs or errs is
//! dropped, so a dead or hung load balancer fails exactly as before.
//!
//! hyper's connection-level client is used rather than a pooled client: a
//! health check must reach one given address under another name, which a
//! pooled client with its own resolver cannot promise.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use fedns_api::ProbeProtocol;
use http_body_util::Empty;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

/// What to probe at one address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProbeSpec {
    /// TCP, HTTP or HTTPS.
    pub protocol: ProbeProtocol,
    /// Port.
    pub port: u16,
    /// HTTP path.
    pub path: String,
    /// Host header.
    pub host: String,
    /// TLS server name (SNI, and the name the certificate must carry).
    pub server_name: String,
    /// Accepted statuses, inclusive ranges.
    pub statuses: Vec<(u16, u16)>,
    /// A string the first [`BODY_SEARCH_OCTETS`] of the body must contain.
    pub expected_body: Option<String>,
    /// Extra request headers (name, value).
    pub headers: Vec<(String, String)>,
    /// Per-probe timeout.
    pub timeout: Duration,
    /// Accept any certificate.
    pub insecure: bool,
    /// Trust only these CA certificates (PEM) instead of the system's
    /// roots (`caCertificateRef`).
    pub ca_pem: Option<String>,
}

/// How much of a body `expected_body` is looked for in (Route53's 5,120 bytes).
pub const BODY_SEARCH_OCTETS: usize = 5120;

/// What a probe whose answer lacks `expected_body` says, after its status:
/// all it says of the body.
pub const EXPECTED_BODY_NOT_FOUND: &str = "expected body not found";

/// TLS settings for HTTPS probes: the system's roots, and a config that
/// accepts any certificate for `insecureSkipTLSVerify`.
#[derive(Clone)]
pub struct ProbeTls {
    verified: Arc<rustls::ClientConfig>,
    insecure: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for ProbeTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeTls").finish_non_exhaustive()
    }
}

impl ProbeTls {
    /// TLS configs trusting the system's roots plus `extra_roots` (DER).
    ///
    /// # Errors
    /// rustls refuses the protocol versions (should not happen).
    pub fn new(extra_roots: &[rustls::pki_types::CertificateDer<'static>]) -> Result<ProbeTls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        for cert in extra_roots {
            roots.add(cert.clone()).map_err(|e| e.to_string())?;
        }
        let verified = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let insecure = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth();
        Ok(ProbeTls {
            verified: Arc::new(verified),
            insecure: Arc::new(insecure),
        })
    }
}

/// A TLS client configuration trusting only the CA certificates in `pem`.
fn private_ca_config(pem: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
        let cert = cert.map_err(|e| format!("caCertificateRef: not a PEM certificate bundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("caCertificateRef: a certificate rustls refuses: {e}"))?;
    }
    if roots.is_empty() {
        return Err("caCertificateRef: the bundle holds no PEM certificate".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The parts of a target's HTTP request that stay the same from probe to
/// probe (request target and headers), checked and built once per target
/// rather than on every probe.
#[derive(Debug, Clone)]
pub struct Prepared(Result<(http::Uri, http::HeaderMap, Option<Arc<rustls::ClientConfig>>), String>);

impl Prepared {
    /// Checks and builds the request parts of `spec`; an invalid path,
    /// host or header is kept as the error every probe of the target then
    /// reports.
    pub fn new(spec: &ProbeSpec) -> Prepared {
        Prepared(Self::parts(spec))
    }

    #[allow(clippy::type_complexity)]
    fn parts(spec: &ProbeSpec) -> Result<(http::Uri, http::HeaderMap, Option<Arc<rustls::ClientConfig>>), String> {
        let uri = http::Uri::try_from(spec.path.as_str()).map_err(|e| format!("HTTP path {:?}: {e}", spec.path))?;
        let mut headers = http::HeaderMap::with_capacity(spec.headers.len() + 2);
        for (name, value) in &spec.headers {
            let header = http::HeaderName::try_from(name.as_str())
                .map_err(|e| format!("healthCheck.headers: name {name:?}: {e}"))?;
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|e| format!("healthCheck.headers: {name} value: {e}"))?;
            headers.append(header, value);
        }
        let host =
            http::HeaderValue::try_from(spec.host.as_str()).map_err(|e| format!("HTTP host {:?}: {e}", spec.host))?;
        headers.insert(http::header::HOST, host);
        headers.insert(
            http::header::USER_AGENT,
            http::HeaderValue::from_static("fedns-health-check"),
        );
        let tls = spec.ca_pem.as_deref().map(private_ca_config).transpose()?;
        Ok((uri, headers, tls))
    }
}

/// An HTTP/1.1 connection kept to one address between probes.
pub struct KeptConnection {
    sender: hyper::client::conn::http1::SendRequest<Empty<bytes::Bytes>>,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for KeptConnection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl std::fmt::Debug for KeptConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptConnection").finish_non_exhaustive()
    }
}

/// Probes `address` once from `source` (None: the kernel's choice of
/// source address), reusing (and updating) `kept` for HTTP(S);
/// `prepared` is `Prepared::new(spec)`.
/// Ok: it passed; Err: one line saying why not.
pub async fn probe(
    address: SocketAddr,
    source: Option<IpAddr>,
    spec: &ProbeSpec,
    prepared: &Prepared,
    tls: &ProbeTls,
    kept: &mut Option<KeptConnection>,
) -> Result<(), String> {
    match tokio::time::timeout(spec.timeout, probe_inner(address, source, spec, prepared, tls, kept)).await {
        Ok(result) => result,
        Err(_) => {
            *kept = None; // a hung connection is not kept
            Err(format!("no answer within {} s", spec.timeout.as_secs_f64()))
        }
    }
}

async fn probe_inner(
    address: SocketAddr,
    source: Option<IpAddr>,
    spec: &ProbeSpec,
    prepared: &Prepared,
    tls: &ProbeTls,
    kept: &mut Option<KeptConnection>,
) -> Result<(), String> {
    if spec.protocol != ProbeProtocol::Tcp {
        prepared.0.as_ref().map_err(Clone::clone)?;
        if let Some(connection) = kept.as_mut().filter(|c| !c.sender.is_closed()) {
            if let Ok(response) = request(&mut connection.sender, prepared).await {
                let (verdict, reusable) = judge(response, spec).await;
                if !reusable {
                    *kept = None;
                }
                return verdict;
            }
        }
        // Closed since the last probe (or never opened): a new connection.
        *kept = None;
    }
    // Boxed: the connect, TLS and handshake states are most of this
    // future's size, and a probe on a kept connection (nearly all of them)
    // should not copy them into every spawned probe.
    Box::pin(connect_and_probe(address, source, spec, prepared, tls, kept)).await
}

/// A new connection to `address`, then (HTTP, HTTPS) one request on it.
async fn connect_and_probe(
    address: SocketAddr,
    source: Option<IpAddr>,
    spec: &ProbeSpec,
    prepared: &Prepared,
    tls: &ProbeTls,
    kept: &mut Option<KeptConnection>,
) -> Result<(), String> {
    let stream = match source {
        None => TcpStream::connect(address).await,
        Some(source) => {
            // A vantage point probes from its own address (bound with
            // port 0: the kernel picks the port).
            let socket = if address.is_ipv4() {
                tokio::net::TcpSocket::new_v4()
            } else {
                tokio::net::TcpSocket::new_v6()
            };
            match socket.and_then(|socket| socket.bind(SocketAddr::new(source, 0)).map(|()| socket)) {
                Ok(socket) => socket.connect(address).await,
                Err(e) => return Err(format!("bind the probe source {source}: {e}")),
            }
        }
    }
    .map_err(|e| format!("connect {address}: {e}"))?;
    match spec.protocol {
        ProbeProtocol::Tcp => Ok(()),
        ProbeProtocol::Http => http_get(hyper_util::rt::TokioIo::new(stream), spec, prepared, kept).await,
        ProbeProtocol::Https => {
            let private = prepared.0.as_ref().ok().and_then(|(_, _, private)| private.as_ref());
            let config = match private {
                Some(config) => config,
                None if spec.insecure => &tls.insecure,
                None => &tls.verified,
            };
            let name = ServerName::try_from(spec.server_name.clone())
                .map_err(|e| format!("TLS server name {:?}: {e}", spec.server_name))?;
            let stream = tokio_rustls::TlsConnector::from(config.clone())
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS with {address} as {}: {e}", spec.server_name))?;
            http_get(hyper_util::rt::TokioIo::new(stream), spec, prepared, kept).await
        }
    }
}

async fn http_get<S>(
    io: S,
    spec: &ProbeSpec,
    prepared: &Prepared,
    kept: &mut Option<KeptConnection>,
) -> Result<(), String>
where
    S: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake::<_, Empty<bytes::Bytes>>(io)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = request(&mut sender, prepared).await;
    let connection = KeptConnection { sender, driver };
    let (verdict, reusable) = judge(response?, spec).await;
    if reusable {
        *kept = Some(connection);
    }
    verdict
}

/// One GET on `sender`; the answer, its body not read yet.
async fn request(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<bytes::Bytes>>,
    prepared: &Prepared,
) -> Result<http::Response<hyper::body::Incoming>, String> {
    let (uri, headers, _) = prepared.0.as_ref().map_err(Clone::clone)?;
    sender.ready().await.map_err(|e| format!("HTTP: {e}"))?;
    let mut request = http::Request::new(Empty::new());
    *request.uri_mut() = uri.clone();
    *request.headers_mut() = headers.clone();
    sender.send_request(request).await.map_err(|e| format!("HTTP: {e}"))
}

/// Whether `response` passes (its status, and `expected_body` in the
/// first [`BODY_SEARCH_OCTETS`] of its body), and whether its connection
/// can serve the next probe (not when a body was left part-read).
async fn judge(response: http::Response<hyper::body::Incoming>, spec: &ProbeSpec) -> (Result<(), String>, bool) {
    let status = response.status().as_u16();
    if !spec.statuses.iter().any(|(low, high)| (*low..=*high).contains(&status)) {
        return (Err(format!("HTTP status {status}")), true);
    }
    let Some(expected) = &spec.expected_body else {
        return (Ok(()), true);
    };
    let (head, complete) = body_head(response.into_body()).await;
    let found = expected.is_empty() || head.windows(expected.len()).any(|window| window == expected.as_bytes());
    // Nothing of the answer goes into the error (status, explain, logs,
    // the agents' reports): neither the body nor how much of it came. The
    // record's author chooses `expectedBody`, and an error that quoted the
    // answer would let them read it.
    let verdict = if found {
        Ok(())
    } else {
        Err(format!("HTTP status {status}: {EXPECTED_BODY_NOT_FOUND}"))
    };
    (verdict, complete)
}

/// The first [`BODY_SEARCH_OCTETS`] of `body` (fewer if it ends or fails
/// first), and whether it was read to its end.
async fn body_head(mut body: hyper::body::Incoming) -> (Vec<u8>, bool) {
    use http_body_util::BodyExt;
    let mut head = Vec::new();
    while head.len() < BODY_SEARCH_OCTETS {
        match body.frame().await {
            None => return (head, true),
            Some(Err(_)) => return (head, false),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let room = BODY_SEARCH_OCTETS - head.len();
                    head.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
        }
    }
    let ended = hyper::body::Body::is_end_stream(&body);
    (head, ended)
}

/// `insecureSkipTLSVerify`: any certificate is accepted, signatures are
/// still checked so the handshake itself is sound.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
