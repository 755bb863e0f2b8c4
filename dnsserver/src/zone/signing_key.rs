//! A zone's DNSSEC signing key and settings (see `dnssec.rs` for what is
//! signed): [`DnssecKey`], a combined signing key (CSK: DNSKEY flags 257),
//! ECDSA P-256/SHA-256 (algorithm 13, RFC 6605) or Ed25519 (15, RFC 8080)
//! from PKCS#8 DER, signing with ring; its DNSKEY RDATA, key tag (RFC 4034
//! Appendix B) and DS (SHA-256, RFC 4509) from hickory-proto.

use std::fmt;
use std::sync::Arc;

use hickory_proto::dnssec::rdata::{DNSSECRData, DNSKEY, DS};
use hickory_proto::dnssec::{Algorithm, DigestType, PublicKeyBuf};
use hickory_proto::rr::{Name, RData, Record};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

/// Largest signature made (ECDSA P-256 r‖s and Ed25519 are both 64 octets).
pub(crate) const MAX_SIGNATURE: usize = 64;

/// DNSSEC signing algorithms offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DnssecAlgorithm {
    /// ECDSA P-256 with SHA-256, number 13 (RFC 6605).
    EcdsaP256Sha256,
    /// Ed25519, number 15 (RFC 8080).
    Ed25519,
}

impl DnssecAlgorithm {
    pub(crate) fn hickory(self) -> Algorithm {
        match self {
            DnssecAlgorithm::EcdsaP256Sha256 => Algorithm::ECDSAP256SHA256,
            DnssecAlgorithm::Ed25519 => Algorithm::ED25519,
        }
    }
}

enum KeyPairKind {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

struct KeyInner {
    algorithm: DnssecAlgorithm,
    pkcs8: Vec<u8>,
    pair: KeyPairKind,
    dnskey: DNSKEY,
    key_tag: u16,
}

/// A zone's combined signing key (CSK): a private key as PKCS#8 DER
/// parsed by ring, and its DNSKEY (flags 257: zone key, secure entry
/// point). Cheap to clone. `Debug` never shows the private key.
#[derive(Clone)]
pub struct DnssecKey(Arc<KeyInner>);

impl fmt::Debug for DnssecKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnssecKey")
            .field("algorithm", &self.0.algorithm)
            .field("key_tag", &self.0.key_tag)
            .finish_non_exhaustive()
    }
}

impl PartialEq for DnssecKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.algorithm == other.0.algorithm && self.0.pkcs8 == other.0.pkcs8
    }
}

impl Eq for DnssecKey {}

impl DnssecKey {
    /// Parses a private key of `algorithm` from PKCS#8 DER (as ring and
    /// `openssl genpkey` write it). Errors say what is wrong, never the key.
    pub fn from_pkcs8(algorithm: DnssecAlgorithm, pkcs8: &[u8]) -> Result<DnssecKey, String> {
        let (pair, public) = match algorithm {
            DnssecAlgorithm::EcdsaP256Sha256 => {
                let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &SystemRandom::new())
                    .map_err(|e| format!("not an ECDSA P-256 private key in PKCS#8 DER: {e}"))?;
                // Uncompressed point 0x04 ‖ X ‖ Y; DNSKEY holds X ‖ Y (RFC 6605 §4).
                let public = pair.public_key().as_ref().get(1..).unwrap_or_default().to_vec();
                (KeyPairKind::Ecdsa(pair), public)
            }
            DnssecAlgorithm::Ed25519 => {
                let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
                    .map_err(|e| format!("not an Ed25519 private key in PKCS#8 DER: {e}"))?;
                let public = pair.public_key().as_ref().to_vec();
                (KeyPairKind::Ed25519(pair), public)
            }
        };
        let dnskey = DNSKEY::with_flags(257, PublicKeyBuf::new(public, algorithm.hickory()));
        let key_tag = dnskey
            .calculate_key_tag()
            .map_err(|e| format!("cannot compute the key tag: {e}"))?;
        Ok(DnssecKey(Arc::new(KeyInner {
            algorithm,
            pkcs8: pkcs8.to_vec(),
            pair,
            dnskey,
            key_tag,
        })))
    }

    /// A new private key of `algorithm` as PKCS#8 DER, from the system's
    /// random source.
    pub fn generate_pkcs8(algorithm: DnssecAlgorithm) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        let doc = match algorithm {
            DnssecAlgorithm::EcdsaP256Sha256 => EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng),
            DnssecAlgorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&rng),
        }
        .map_err(|e| format!("key generation failed: {e}"))?;
        Ok(doc.as_ref().to_vec())
    }

    /// The algorithm.
    pub fn algorithm(&self) -> DnssecAlgorithm {
        self.0.algorithm
    }

    /// The key tag (RFC 4034 Appendix B).
    pub fn key_tag(&self) -> u16 {
        self.0.key_tag
    }

    /// The DNSKEY RDATA served at the apex.
    pub fn dnskey(&self) -> &DNSKEY {
        &self.0.dnskey
    }

    /// The DS RDATA for the parent zone of `apex`: SHA-256 digest (RFC 4509).
    pub fn ds(&self, apex: &Name) -> Result<DS, String> {
        let digest = self
            .0
            .dnskey
            .to_digest(apex, DigestType::SHA256)
            .map_err(|e| format!("cannot digest the DNSKEY: {e}"))?;
        Ok(DS::new(
            self.0.key_tag,
            self.0.algorithm.hickory(),
            DigestType::SHA256,
            digest.as_ref().to_vec(),
        ))
    }

    /// The DS record in presentation format (RFC 4034 §5.3), e.g.
    /// `example.com. 3600 IN DS 12345 13 2 3A1F…`.
    pub fn ds_record(&self, apex: &Name, ttl: u32) -> Result<String, String> {
        let ds = self.ds(apex)?;
        let mut apex = apex.clone();
        apex.set_fqdn(true);
        Ok(Record::from_rdata(apex, ttl, RData::DNSSEC(DNSSECRData::DS(ds))).to_string())
    }

    /// The DNSKEY record in presentation format, usable as a trust anchor
    /// (`delv -a`, Unbound `trust-anchor-file`).
    pub fn dnskey_record(&self, apex: &Name, ttl: u32) -> String {
        let mut apex = apex.clone();
        apex.set_fqdn(true);
        Record::from_rdata(apex, ttl, RData::DNSSEC(DNSSECRData::DNSKEY(self.0.dnskey.clone()))).to_string()
    }

    /// Signs `message` into `out`; returns the signature's length. No heap
    /// allocation (ring signs on the stack). `None` if ring fails, which
    /// needs a broken system random source.
    #[inline]
    pub(crate) fn sign(&self, message: &[u8], out: &mut [u8; MAX_SIGNATURE]) -> Option<usize> {
        let signature = match &self.0.pair {
            KeyPairKind::Ecdsa(pair) => pair.sign(&SystemRandom::new(), message).ok()?,
            KeyPairKind::Ed25519(pair) => pair.sign(message),
        };
        let bytes = signature.as_ref();
        out.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(bytes.len())
    }
}

/// How a zone is signed (see the crate's `spec.dnssec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnssecConfig {
    /// The combined signing key.
    pub key: DnssecKey,
    /// Seconds from signing to signature expiration (RRSIG expiration −
    /// now), e.g. 1,209,600 (14 days).
    pub signature_validity: u32,
    /// Signatures with fewer seconds than this left are made again at the
    /// next publish (e.g. 604,800: 7 days).
    pub signature_refresh: u32,
    /// How names and types that do not exist are denied.
    pub denial: DenialOfExistence,
}

/// How a signed zone proves that a name or a type does not exist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum DenialOfExistence {
    /// RFC 9824 compact denial: an NSEC at the query name itself; a name
    /// that does not exist is signed per query (see `zone::dnssec`). The
    /// zone cannot be walked.
    #[default]
    Compact,
    /// An NSEC chain over the zone's names in canonical order (RFC 4034
    /// §4, RFC 4035 §3.1.3.2), every link signed when the snapshot is
    /// built: no signature is made per query, and the names can be listed
    /// by walking the chain (see `zone::nsec_chain`).
    Nsec,
}
