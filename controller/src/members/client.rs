//! A member's kube client, built from its MemberCluster spec (endpoint,
//! CA bundle) and Secret (token or kubeconfig), and the fingerprint of
//! those inputs that says when to build a new one.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use base64::Engine;
use fedns_api::MemberClusterSpec;
use k8s_openapi::api::core::v1::Secret;
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// A hash of everything that needs a new client when it changes.
pub(super) fn connection_fingerprint(spec: &MemberClusterSpec, secret: Option<&Secret>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    spec.api_endpoint.hash(&mut hasher);
    spec.ca_bundle.hash(&mut hasher);
    spec.insecure_skip_tls_verify.hash(&mut hasher);
    spec.secret_ref.as_ref().map(|r| &r.name).hash(&mut hasher);
    if let Some(secret) = secret {
        for (k, v) in secret.data.iter().flatten() {
            k.hash(&mut hasher);
            v.0.hash(&mut hasher);
        }
        for (k, v) in secret.string_data.iter().flatten() {
            k.hash(&mut hasher);
            v.hash(&mut hasher);
        }
    }
    hasher.finish()
}

fn secret_value(secret: &Secret, key: &str) -> Option<Vec<u8>> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|v| v.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|v| v.as_bytes().to_vec())
        })
}

/// Builds a client for a member. Errors are one-line messages for the
/// `AuthFailed` condition.
pub(super) async fn build_client(spec: &MemberClusterSpec, secret: Option<&Secret>) -> Result<Client, String> {
    let secret_name = spec.secret_ref.as_ref().map(|r| r.name.as_str());
    let secret = match (secret_name, secret) {
        (Some(name), None) => return Err(format!("Secret {name} (spec.secretRef) not found")),
        (_, secret) => secret,
    };
    let mut config = match secret.and_then(|s| secret_value(s, "kubeconfig")) {
        Some(kubeconfig) => {
            let text = String::from_utf8(kubeconfig).map_err(|_| "Secret key kubeconfig is not UTF-8".to_owned())?;
            let kubeconfig =
                Kubeconfig::from_yaml(&text).map_err(|e| format!("Secret key kubeconfig does not parse: {e}"))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("Secret key kubeconfig is not usable: {e}"))?
        }
        None => {
            let url: http::Uri = spec
                .api_endpoint
                .parse()
                .map_err(|e| format!("spec.apiEndpoint {:?} is not a URL: {e}", spec.api_endpoint))?;
            let mut config = Config::new(url);
            config.accept_invalid_certs = spec.insecure_skip_tls_verify;
            if let Some(bundle) = &spec.ca_bundle {
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(bundle.trim())
                    .map_err(|e| format!("spec.caBundle is not base64: {e}"))?;
                let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&pem)
                    .map(|c| c.map(|c| c.to_vec()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("spec.caBundle is not a PEM certificate bundle: {e}"))?;
                if certs.is_empty() {
                    return Err("spec.caBundle holds no PEM certificate".into());
                }
                config.root_cert = Some(certs);
            }
            if let Some(secret) = secret {
                let token = secret_value(secret, "token")
                    .ok_or_else(|| format!("Secret {} has neither key token nor key kubeconfig", secret.name_any()))?;
                let token = String::from_utf8(token).map_err(|_| "Secret key token is not UTF-8".to_owned())?;
                config.auth_info = AuthInfo {
                    token: Some(secrecy::SecretString::from(token.trim().to_owned())),
                    ..AuthInfo::default()
                };
            }
            config
        }
    };
    // Probes need each failure as it happens; watches have their own backoff.
    config.default_retry = false;
    config.connect_timeout = Some(Duration::from_secs(5));
    Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}
