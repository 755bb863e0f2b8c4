//! A zone's DNSSEC signing keys and settings (see `dnssec.rs` for what is
//! signed): [`DnssecKey`], one key (DNSKEY flags 257, a key-signing or
//! combined signing key, or 256, a zone-signing key; RFC 4034 §2.1.1),
//! ECDSA P-256/SHA-256 (algorithm 13, RFC 6605) or Ed25519 (15, RFC 8080)
//! from PKCS#8 DER, signing with ring; its DNSKEY RDATA, key tag (RFC 4034
//! Appendix B) and DS (SHA-256, RFC 4509) from hickory-proto.
//! [`DnssecConfig`]: the keys of one zone (CSK, or KSK and ZSK, and
//! pre-published standby keys, RFC 6781 §4.1.1) and its signing timings.

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
    flags: u16,
    pkcs8: Vec<u8>,
    pair: KeyPairKind,
    dnskey: DNSKEY,
    key_tag: u16,
}

/// One DNSSEC key of a zone: a private key as PKCS#8 DER parsed by ring,
/// and its DNSKEY, flags [`DnssecKey::SEP_FLAGS`] (257: zone key, secure
/// entry point: a combined or key-signing key) or
/// [`DnssecKey::ZONE_FLAGS`] (256: zone key: a zone-signing key). Cheap to
/// clone. `Debug` never shows the private key.
#[derive(Clone)]
pub struct DnssecKey(Arc<KeyInner>);

impl fmt::Debug for DnssecKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnssecKey")
            .field("algorithm", &self.0.algorithm)
            .field("flags", &self.0.flags)
            .field("key_tag", &self.0.key_tag)
            .finish_non_exhaustive()
    }
}

impl PartialEq for DnssecKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.algorithm == other.0.algorithm && self.0.flags == other.0.flags && self.0.pkcs8 == other.0.pkcs8
    }
}

impl Eq for DnssecKey {}

impl DnssecKey {
    /// DNSKEY flags of a key with the Secure Entry Point bit: zone key
    /// (bit 7) and SEP (bit 15), RFC 4034 §2.1.1: a combined signing key
    /// (CSK) or key-signing key (KSK), the one the parent's DS names.
    pub const SEP_FLAGS: u16 = 257;
    /// DNSKEY flags of a zone-signing key (ZSK): zone key bit only.
    pub const ZONE_FLAGS: u16 = 256;

    /// Parses a private key of `algorithm` from PKCS#8 DER (as ring and
    /// `openssl genpkey` write it), DNSKEY flags 257 (CSK or KSK). Errors
    /// say what is wrong, never the key.
    pub fn from_pkcs8(algorithm: DnssecAlgorithm, pkcs8: &[u8]) -> Result<DnssecKey, String> {
        DnssecKey::with_flags(algorithm, pkcs8, DnssecKey::SEP_FLAGS)
    }

    /// [`DnssecKey::from_pkcs8`] with DNSKEY flags `flags`:
    /// [`DnssecKey::SEP_FLAGS`] (257) or [`DnssecKey::ZONE_FLAGS`] (256);
    /// other flags are refused.
    pub fn with_flags(algorithm: DnssecAlgorithm, pkcs8: &[u8], flags: u16) -> Result<DnssecKey, String> {
        if flags != DnssecKey::SEP_FLAGS && flags != DnssecKey::ZONE_FLAGS {
            return Err(format!(
                "DNSKEY flags {flags}: only 257 (KSK, CSK) and 256 (ZSK) are made"
            ));
        }
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
        let dnskey = DNSKEY::with_flags(flags, PublicKeyBuf::new(public, algorithm.hickory()));
        let key_tag = dnskey
            .calculate_key_tag()
            .map_err(|e| format!("cannot compute the key tag: {e}"))?;
        Ok(DnssecKey(Arc::new(KeyInner {
            algorithm,
            flags,
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

    /// The DNSKEY flags: 257 (SEP: CSK or KSK) or 256 (ZSK).
    pub fn flags(&self) -> u16 {
        self.0.flags
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
///
/// * CSK mode (`zone_signing_key` `None`): `key` signs every RRset.
/// * KSK+ZSK mode (RFC 6781 §3.1): `key`, the key-signing key, signs the
///   apex DNSKEY RRset only; `zone_signing_key` every other RRset,
///   query-time NSEC records included.
///
/// Either way the DS for the parent is `key`'s, and the DNSKEY RRset holds
/// the active keys and the `standby` ones: published, signing nothing, so
/// resolvers have them cached when a rollover makes one active (key
/// pre-publication, RFC 6781 §4.1.1, RFC 7583 §3.2.1 and §3.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnssecConfig {
    /// The combined signing key (CSK mode) or the key-signing key (KSK+ZSK
    /// mode): DNSKEY flags 257 normally.
    pub key: DnssecKey,
    /// The zone-signing key (flags 256) in KSK+ZSK mode; `None`: CSK mode.
    pub zone_signing_key: Option<DnssecKey>,
    /// Keys published in the DNSKEY RRset that sign nothing (pre-published
    /// for a rollover, or kept after one until caches forgot them).
    pub standby: Vec<DnssecKey>,
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

impl DnssecConfig {
    /// CSK mode: `key` signs everything, no standby key.
    pub fn csk(key: DnssecKey, signature_validity: u32, signature_refresh: u32) -> DnssecConfig {
        DnssecConfig {
            key,
            zone_signing_key: None,
            standby: Vec::new(),
            signature_validity,
            signature_refresh,
            denial: Default::default(),
        }
    }

    /// The key whose signature covers RRsets of type `covered`: the KSK
    /// for DNSKEY in KSK+ZSK mode, else the ZSK (or the CSK).
    pub fn signing_key(&self, covered: hickory_proto::rr::RecordType) -> &DnssecKey {
        match &self.zone_signing_key {
            Some(zsk) if covered != hickory_proto::rr::RecordType::DNSKEY => zsk,
            _ => &self.key,
        }
    }

    /// Every key published in the DNSKEY RRset: the active ones, then the
    /// standby ones; a key given twice (same DNSKEY RDATA) once.
    pub fn published(&self) -> Vec<&DnssecKey> {
        let mut out: Vec<&DnssecKey> = Vec::with_capacity(2 + self.standby.len());
        for key in std::iter::once(&self.key)
            .chain(self.zone_signing_key.as_ref())
            .chain(&self.standby)
        {
            if !out.iter().any(|k| k.dnskey() == key.dnskey()) {
                out.push(key);
            }
        }
        out
    }

    /// Checks what signing needs: every key of the key's algorithm (a
    /// DNSKEY RRset must be signed with each algorithm it holds, RFC 4035
    /// §2.2), the KSK with flags 257 and the ZSK with 256, and no two
    /// different keys with one key tag (RFC 4034 Appendix B: a tag picks
    /// the key a validator tries; fedns also finds signatures to keep by
    /// their tag). Errors name keys by tag, never by key bytes.
    pub fn check(&self) -> Result<(), String> {
        let algorithm = self.key.algorithm();
        if self.key.flags() != DnssecKey::SEP_FLAGS {
            return Err(format!(
                "the {} key (tag {}) has DNSKEY flags {}, not 257",
                if self.zone_signing_key.is_some() {
                    "key-signing"
                } else {
                    "combined signing"
                },
                self.key.key_tag(),
                self.key.flags()
            ));
        }
        if let Some(zsk) = &self.zone_signing_key {
            if zsk.flags() != DnssecKey::ZONE_FLAGS {
                return Err(format!(
                    "the zone-signing key (tag {}) has DNSKEY flags {}, not 256",
                    zsk.key_tag(),
                    zsk.flags()
                ));
            }
        }
        let published = self.published();
        for (i, key) in published.iter().enumerate() {
            if key.algorithm() != algorithm {
                return Err(format!(
                    "key tag {} is {:?}, the zone is signed with {algorithm:?}",
                    key.key_tag(),
                    key.algorithm()
                ));
            }
            if published[..i].iter().any(|k| k.key_tag() == key.key_tag()) {
                return Err(format!(
                    "two keys share key tag {}: make another key for one of them",
                    key.key_tag()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::RecordType;

    fn key(flags: u16) -> DnssecKey {
        let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
        DnssecKey::with_flags(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap(), flags).unwrap()
    }

    /// Flags 257 and 256 make DNSKEYs with those flags (and different key
    /// tags for one private key); other flags are refused.
    #[test]
    fn keys_carry_their_flags() {
        let algorithm = DnssecAlgorithm::Ed25519;
        let pkcs8 = DnssecKey::generate_pkcs8(algorithm).unwrap();
        let sep = DnssecKey::from_pkcs8(algorithm, &pkcs8).unwrap();
        let zone = DnssecKey::with_flags(algorithm, &pkcs8, 256).unwrap();
        assert_eq!((sep.flags(), sep.dnskey().flags()), (257, 257));
        assert_eq!((zone.flags(), zone.dnskey().flags()), (256, 256));
        assert_ne!(sep, zone);
        assert_ne!(sep.key_tag(), zone.key_tag());
        let err = DnssecKey::with_flags(algorithm, &pkcs8, 385).unwrap_err();
        assert!(err.contains("385"), "{err}");
    }

    /// KSK+ZSK: the KSK signs DNSKEY only; the DNSKEY RRset holds the
    /// active and standby keys, once each; CSK: one key signs all.
    #[test]
    fn signing_key_by_type_and_published_keys() {
        let (ksk, zsk, next) = (key(257), key(256), key(256));
        let csk = DnssecConfig::csk(ksk.clone(), 1_209_600, 604_800);
        assert_eq!(csk.signing_key(RecordType::DNSKEY), &ksk);
        assert_eq!(csk.signing_key(RecordType::A), &ksk);
        assert_eq!(csk.published(), [&ksk]);
        let split = DnssecConfig {
            zone_signing_key: Some(zsk.clone()),
            standby: vec![next.clone(), zsk.clone()],
            ..csk
        };
        assert_eq!(split.signing_key(RecordType::DNSKEY), &ksk);
        for covered in [RecordType::A, RecordType::SOA, RecordType::NSEC, RecordType::NS] {
            assert_eq!(split.signing_key(covered), &zsk);
        }
        assert_eq!(split.published(), [&ksk, &zsk, &next]);
        assert_eq!(split.check(), Ok(()));
    }

    /// `check` refuses a ZSK without flags 256, a KSK without 257, keys of
    /// another algorithm, and two keys sharing a key tag.
    #[test]
    fn check_refuses_bad_key_sets() {
        let csk = DnssecConfig::csk(key(257), 1_209_600, 604_800);
        assert_eq!(csk.check(), Ok(()));
        let zsk_as_ksk = DnssecConfig::csk(key(256), 1_209_600, 604_800);
        assert!(zsk_as_ksk.check().unwrap_err().contains("not 257"));
        let ksk_as_zsk = DnssecConfig {
            zone_signing_key: Some(key(257)),
            ..csk.clone()
        };
        assert!(ksk_as_zsk.check().unwrap_err().contains("not 256"));
        let ed = DnssecAlgorithm::Ed25519;
        let other = DnssecConfig {
            standby: vec![DnssecKey::from_pkcs8(ed, &DnssecKey::generate_pkcs8(ed).unwrap()).unwrap()],
            ..csk.clone()
        };
        assert!(other.check().unwrap_err().contains("Ed25519"));
        // A tag collision: the same key pair as another key of flags 257.
        let twin = DnssecKey::with_flags(csk.key.algorithm(), &csk.key.0.pkcs8, 257).unwrap();
        assert_eq!(twin.key_tag(), csk.key.key_tag());
        let same = DnssecConfig {
            standby: vec![twin],
            ..csk.clone()
        };
        // The very same DNSKEY is published once: no collision.
        assert_eq!(same.published().len(), 1);
        assert_eq!(same.check(), Ok(()));
    }
}
