//! DNSSEC signing keys kept in Kubernetes Secrets: read for the embedded
//! DNS server, and created with a new key when absent.
//!
//! One Secret per signed Domain, in the Domain's namespace (named by
//! `spec.dnssec.keySecret`, default `<domain>-dnssec`), holding the
//! private keys as PKCS#8 DER: [`DNSSEC_KEY_DATA`] (CSK mode), or
//! [`DNSSEC_KSK_DATA`] and [`DNSSEC_ZSK_DATA`] (KSK+ZSK mode); any other
//! data key ending in `.pkcs8` is a standby key. Key material is never
//! logged: only Secret names and data keys are.

use std::collections::BTreeMap;

use fedns_api::k8s_openapi::api::core::v1::Secret;
use fedns_api::k8s_openapi::ByteString;
use fedns_api::DnssecKeyMode;
use fedns_dnsserver::{DnssecAlgorithm, DnssecKey};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;

use crate::embedded::dnssec_layout::{active_keys, PKCS8_SUFFIX};
use crate::embedded::WantedDnssecSecret;
#[cfg(doc)]
use crate::embedded::{DNSSEC_KEY_DATA, DNSSEC_KSK_DATA, DNSSEC_ZSK_DATA};

/// Label put on the Secrets made here.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "fedns");

/// The key data of the Secrets `wanted` names ((namespace, name, the
/// algorithm and key mode of keys made for it)): each Secret's data keys
/// ending in `.pkcs8` ([`key_data`]), the Secret created with the mode's
/// new keys when it does not exist. A Secret that cannot be read or made
/// is left out and logged by name; one lacking the mode's keys is
/// returned as it is (the sink serves its zone unsigned and says which
/// data keys are missing).
pub(crate) async fn read_or_create(
    client: &Client,
    wanted: &[WantedDnssecSecret],
) -> BTreeMap<(String, String), BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for (namespace, name, algorithm, mode) in wanted {
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let secret = match api.get_opt(name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => match create(&api, namespace, name, *algorithm, *mode).await {
                Some(secret) => secret,
                None => continue,
            },
            Err(e) => {
                tracing::warn!(%namespace, secret = %name, error = %e, "DNSSEC key Secret cannot be read");
                continue;
            }
        };
        out.insert((namespace.clone(), name.clone()), key_data(&secret));
    }
    out
}

/// The key data of a Secret: its data keys ending in `.pkcs8` and their
/// bytes (PKCS#8 DER); other data keys are left out.
fn key_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    secret
        .data
        .iter()
        .flatten()
        .filter(|(key, _)| key.ends_with(PKCS8_SUFFIX))
        .map(|(key, value)| (key.clone(), value.0.clone()))
        .collect()
}

/// New keys of `algorithm` for a Secret of key mode `mode`, by data key:
/// [`DNSSEC_KEY_DATA`] (CSK), or [`DNSSEC_KSK_DATA`] and
/// [`DNSSEC_ZSK_DATA`] (KSK+ZSK).
fn new_key_data(algorithm: DnssecAlgorithm, mode: DnssecKeyMode) -> Result<BTreeMap<String, ByteString>, String> {
    active_keys(mode)
        .iter()
        .map(|(name, _)| Ok(((*name).to_owned(), ByteString(DnssecKey::generate_pkcs8(algorithm)?))))
        .collect()
}

/// Creates the Secret `namespace/name` holding new keys of `algorithm`
/// for `mode`. Another writer creating it first is fine: its Secret is
/// read back.
async fn create(
    api: &Api<Secret>,
    namespace: &str,
    name: &str,
    algorithm: DnssecAlgorithm,
    mode: DnssecKeyMode,
) -> Option<Secret> {
    let data = match new_key_data(algorithm, mode) {
        Ok(data) => data,
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
        data: Some(data),
        ..Secret::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(created) => {
            tracing::info!(%namespace, secret = %name, ?algorithm, ?mode, "created a DNSSEC key Secret with new keys");
            Some(created)
        }
        Err(kube::Error::Api(e)) if e.code == 409 => api.get_opt(name).await.ok().flatten(),
        Err(e) => {
            tracing::warn!(%namespace, secret = %name, error = %e, "cannot create the DNSSEC key Secret");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only `.pkcs8` data keys are read; a Secret without data reads empty.
    #[test]
    fn key_data_takes_pkcs8_entries() {
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("ksk.pkcs8".to_owned(), ByteString(vec![1])),
                ("zsk.pkcs8".to_owned(), ByteString(vec![2])),
                ("zsk-next.pkcs8".to_owned(), ByteString(vec![3])),
                ("README".to_owned(), ByteString(vec![4])),
            ])),
            ..Secret::default()
        };
        let data = key_data(&secret);
        assert_eq!(
            data.keys().map(String::as_str).collect::<Vec<_>>(),
            ["ksk.pkcs8", "zsk-next.pkcs8", "zsk.pkcs8"]
        );
        assert!(key_data(&Secret::default()).is_empty());
    }

    /// A new Secret holds the mode's keys, each a distinct key of the
    /// algorithm that parses; the sink's layout then finds them all.
    #[test]
    fn new_secrets_hold_the_modes_keys() {
        for (mode, names) in [
            (DnssecKeyMode::Csk, &["key.pkcs8"][..]),
            (DnssecKeyMode::KskZsk, &["ksk.pkcs8", "zsk.pkcs8"][..]),
        ] {
            let algorithm = DnssecAlgorithm::Ed25519;
            let data = new_key_data(algorithm, mode).unwrap();
            assert_eq!(data.keys().map(String::as_str).collect::<Vec<_>>(), names);
            let secret = Secret {
                data: Some(data),
                ..Secret::default()
            };
            let read = key_data(&secret);
            let layout = crate::embedded::dnssec_layout::key_layout(mode, &read).unwrap();
            assert!(layout.standby.is_empty());
            for bytes in read.values() {
                DnssecKey::from_pkcs8(algorithm, bytes).unwrap();
            }
            let distinct: std::collections::BTreeSet<&Vec<u8>> = read.values().collect();
            assert_eq!(distinct.len(), names.len());
        }
    }
}
