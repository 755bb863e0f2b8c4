//! DNSSEC signing keys kept in Kubernetes Secrets: read for the embedded
//! DNS server, and created with a new key when absent.
//!
//! One Secret per signed Domain, in the Domain's namespace (named by
//! `spec.dnssec.keySecret`, default `<domain>-dnssec`), holding the
//! private key as PKCS#8 DER under [`DNSSEC_KEY_DATA`]. Key material is
//! never logged: only Secret names are.

use std::collections::BTreeMap;

use fedns_api::k8s_openapi::api::core::v1::Secret;
use fedns_api::k8s_openapi::ByteString;
use fedns_dnsserver::{DnssecAlgorithm, DnssecKey};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;

use crate::embedded::DNSSEC_KEY_DATA;

/// Label put on the Secrets made here.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "fedns");

/// The key data of the Secrets `wanted` names ((namespace, name, the
/// algorithm of a key made for it)): each Secret's [`DNSSEC_KEY_DATA`],
/// the Secret created with a new key when it does not exist. A Secret
/// that cannot be read or made, or lacks the data key, is left out (its
/// zone is served unsigned) and logged by name.
pub(crate) async fn read_or_create(
    client: &Client,
    wanted: &[(String, String, DnssecAlgorithm)],
) -> BTreeMap<(String, String), Vec<u8>> {
    let mut out = BTreeMap::new();
    for (namespace, name, algorithm) in wanted {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let secret = match api.get_opt(name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => match create(&api, namespace, name, *algorithm).await {
                Some(secret) => secret,
                None => continue,
            },
            Err(e) => {
                tracing::warn!(%namespace, secret = %name, error = %e, "DNSSEC key Secret cannot be read");
                continue;
            }
        };
        match key_data(&secret) {
            Some(data) => {
                out.insert((namespace.clone(), name.clone()), data);
            }
            None => tracing::warn!(
                %namespace, secret = %name,
                "DNSSEC key Secret has no {DNSSEC_KEY_DATA:?}; the zone is served unsigned"
            ),
        }
    }
    out
}

fn key_data(secret: &Secret) -> Option<Vec<u8>> {
    if let Some(data) = secret.data.as_ref().and_then(|d| d.get(DNSSEC_KEY_DATA)) {
        return Some(data.0.clone());
    }
    None
}

/// Creates the Secret `namespace/name` holding a new key of `algorithm`.
/// Another writer creating it first is fine: its Secret is read back.
async fn create(api: &Api<Secret>, namespace: &str, name: &str, algorithm: DnssecAlgorithm) -> Option<Secret> {
    let pkcs8 = match DnssecKey::generate_pkcs8(algorithm) {
        Ok(pkcs8) => pkcs8,
        Err(e) => {
            tracing::warn!(%namespace, secret = %name, "cannot make a DNSSEC key: {e}");
            return None;
        }
    };
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(DNSSEC_KEY_DATA.to_owned(), ByteString(pkcs8))])),
        ..Secret::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(created) => {
            tracing::info!(%namespace, secret = %name, ?algorithm, "created a DNSSEC key Secret with a new key");
            Some(created)
        }
        Err(kube::Error::Api(e)) if e.code == 409 => api.get_opt(name).await.ok().flatten(),
        Err(e) => {
            tracing::warn!(%namespace, secret = %name, error = %e, "cannot create the DNSSEC key Secret");
            None
        }
    }
}
