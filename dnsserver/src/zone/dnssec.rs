//! DNSSEC signing (RFC 4033-4035) at snapshot build time, and the few
//! signatures the query path must make itself.
//!
//! * [`DnssecKey`]: a zone's combined signing key (CSK: DNSKEY flags 257),
//!   ECDSA P-256/SHA-256 (algorithm 13, RFC 6605) or Ed25519 (15, RFC
//!   8080), from PKCS#8 DER; signatures by ring. Its DNSKEY RDATA, key tag
//!   (RFC 4034 Appendix B) and DS (SHA-256, RFC 4509) come from
//!   hickory-proto.
//! * [`ZoneKeys`]: one zone's signing state in a snapshot: key, signing
//!   window (inception, expiration), and the bytes the query path splices
//!   around a query name to answer a name that does not exist.
//! * [`Signer`]: adds RRSIGs, and compact-denial NSEC records (RFC 9824),
//!   to a [`Resolution`] before it is rendered; signatures are cached by
//!   their signed data, so an RRset appearing in many answers (the SOA,
//!   a CNAME target) is signed once per build.
//!
//! Denial of existence is RFC 9824 compact denial: NODATA carries an NSEC
//! at the name itself whose next name is its immediate successor
//! (`\000.<name>`) and whose bitmap lists the types present; a name that
//! does not exist gets NOERROR with such an NSEC listing only RRSIG, NSEC
//! and NXNAME. Every NSEC but the last kind is known when the snapshot is
//! built and signed then; the last depends on the query name and is
//! signed per query, on the stack (no heap allocation), as [`ZoneKeys::sign`]
//! does. No chain of names exists in answers, so the zone cannot be walked.

use std::fmt;
use std::sync::Arc;

use hickory_proto::dnssec::rdata::{DNSSECRData, SigInput, DNSKEY, DS, NSEC, RRSIG};
use hickory_proto::dnssec::{Algorithm, DigestType, PublicKeyBuf, TBS};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType, SerialNumber};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder, NameEncoding};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use rustc_hash::FxHashMap;

use super::resolve::Resolution;

/// The NXNAME meta-type of RFC 9824 §5: "this name does not exist".
pub(crate) const TYPE_NXNAME: RecordType = RecordType::Unknown(128);

/// Seconds a signature's inception lies before the time it is made, for
/// validators whose clocks run behind.
const INCEPTION_SKEW: u32 = 3600;

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
    fn hickory(self) -> Algorithm {
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
}

/// One signed zone's signing state in a snapshot.
#[derive(Debug)]
pub(crate) struct ZoneKeys {
    pub config: DnssecConfig,
    pub apex: Name,
    /// RRSIG inception and expiration of signatures made for this
    /// snapshot (seconds since the epoch, RFC 4034 §3.1.5).
    pub inception: u32,
    pub expiration: u32,
    /// The earliest expiration of any signature served (older chunks keep
    /// older signatures after incremental updates).
    pub oldest_expiration: u32,
    /// TTL of NSEC records: the negative TTL, min(SOA TTL, MINIMUM) (RFC 9077).
    pub nsec_ttl: u32,
    /// RRSIG RDATA of a query-time NSEC up to and including the signer's
    /// name, labels field 0 (the query path writes it): RFC 4034 §3.1.
    pub nsec_rrsig_prefix: Box<[u8]>,
    /// Offset of the labels field in `nsec_rrsig_prefix`.
    pub labels_at: usize,
    /// The NSEC type bitmap of a name that does not exist: RRSIG, NSEC,
    /// NXNAME (RFC 9824 §3.2).
    pub nxname_bitmap: Box<[u8]>,
    /// The zone's SOA RR and its RRSIG, names uncompressed, TTL the
    /// negative TTL, for the current serial: appended at query time to
    /// signed answers holding the SOA.
    pub soa_tail: Box<[u8]>,
}

impl ZoneKeys {
    /// The signing state of zone `apex` for signatures made `now`, with
    /// the serial's SOA record `soa` (its TTL the SOA RRset's own) and the
    /// negative TTL `nsec_ttl`. `None` only if hickory cannot encode the fixed parts.
    pub fn new(config: &DnssecConfig, apex: &Name, soa: &Record, nsec_ttl: u32, now: u32) -> Option<ZoneKeys> {
        let inception = now.saturating_sub(INCEPTION_SKEW);
        let expiration = now.saturating_add(config.signature_validity);
        let mut keys = ZoneKeys {
            config: config.clone(),
            apex: apex.clone(),
            inception,
            expiration,
            oldest_expiration: expiration,
            nsec_ttl,
            nsec_rrsig_prefix: Box::default(),
            labels_at: 3,
            nxname_bitmap: Box::default(),
            soa_tail: Box::default(),
        };
        let input = keys.input(RecordType::NSEC, 0, nsec_ttl);
        let mut prefix = Vec::with_capacity(64);
        {
            let mut encoder = BinEncoder::new(&mut prefix);
            encoder.set_canonical_form(true);
            encoder.set_name_encoding(NameEncoding::UncompressedLowercase);
            input.emit(&mut encoder).ok()?;
        }
        keys.nsec_rrsig_prefix = prefix.into_boxed_slice();
        let nsec = NSEC::new(Name::root(), [RecordType::RRSIG, RecordType::NSEC, TYPE_NXNAME]);
        let mut bitmap = Vec::with_capacity(24);
        {
            let mut encoder = BinEncoder::new(&mut bitmap);
            encoder.set_name_encoding(NameEncoding::Uncompressed);
            nsec.emit(&mut encoder).ok()?;
        }
        // The root next name is the single octet 0.
        keys.nxname_bitmap = bitmap.get(1..)?.into();
        // Signed with the RRset's own TTL as original TTL, sent with the
        // negative TTL (RFC 2308 §3; validators accept a lower TTL,
        // RFC 4035 §5.3.3).
        let mut signer = Signer::new();
        let mut rrsig = signer.rrsig(&keys, std::slice::from_ref(soa))?;
        rrsig.ttl = nsec_ttl;
        let mut shown = soa.clone();
        shown.ttl = nsec_ttl;
        let mut tail = Vec::with_capacity(256);
        {
            let mut encoder = BinEncoder::new(&mut tail);
            encoder.set_name_encoding(NameEncoding::Uncompressed);
            shown.emit(&mut encoder).ok()?;
            rrsig.emit(&mut encoder).ok()?;
        }
        keys.soa_tail = tail.into_boxed_slice();
        Some(keys)
    }

    /// Re-signing is due at `now`: some signature served has fewer than
    /// `signature_refresh` seconds left.
    pub fn resign_due(&self, now: u32) -> bool {
        now.saturating_add(self.config.signature_refresh) >= self.oldest_expiration
    }

    fn input(&self, type_covered: RecordType, labels: u8, ttl: u32) -> SigInput {
        SigInput {
            type_covered,
            algorithm: self.config.key.algorithm().hickory(),
            num_labels: labels,
            original_ttl: ttl,
            sig_expiration: SerialNumber::new(self.expiration),
            sig_inception: SerialNumber::new(self.inception),
            key_tag: self.config.key.key_tag(),
            signer_name: self.apex.clone(),
        }
    }

    /// Signs `message` (see [`DnssecKey::sign`]).
    #[inline]
    pub fn sign(&self, message: &[u8], out: &mut [u8; MAX_SIGNATURE]) -> Option<usize> {
        self.config.key.sign(message, out)
    }
}

/// What the tree knows of a name a negative answer is about.
pub(crate) enum Denied {
    /// The name exists with these types (none: an empty non-terminal).
    Exists(Vec<RecordType>),
    /// The name does not exist.
    Missing,
}

/// Adds signatures and denial records to resolutions; signatures are
/// cached by their signed data for the signer's lifetime (one build).
#[derive(Default)]
pub(crate) struct Signer {
    cache: FxHashMap<Box<[u8]>, Record>,
}

impl Signer {
    pub fn new() -> Self {
        Signer::default()
    }

    /// The RRSIG over `rrset` (records of one owner, type and TTL).
    pub fn rrsig(&mut self, keys: &ZoneKeys, rrset: &[Record]) -> Option<Record> {
        let first = rrset.first()?;
        let input = keys.input(first.record_type(), first.name.num_labels(), first.ttl);
        let tbs = TBS::from_input(&first.name, DNSClass::IN, &input, rrset.iter()).ok()?;
        if let Some(record) = self.cache.get(tbs.as_ref()) {
            return Some(record.clone());
        }
        let mut signature = [0u8; MAX_SIGNATURE];
        let len = keys.sign(tbs.as_ref(), &mut signature)?;
        let rrsig = RRSIG::from_sig(input, signature[..len].to_vec());
        let record = Record::from_rdata(first.name.clone(), first.ttl, RData::DNSSEC(DNSSECRData::RRSIG(rrsig)));
        self.cache.insert(tbs.as_ref().into(), record.clone());
        Some(record)
    }

    /// The compact-denial NSEC at `owner` (RFC 9824): next name
    /// `\000.<owner>`, bitmap `types` (or NXNAME for a missing name)
    /// plus RRSIG and NSEC.
    pub fn nsec(keys: &ZoneKeys, owner: &Name, denied: &Denied) -> Option<Record> {
        let next = Name::from_labels([&[0u8][..]]).ok()?.append_name(owner).ok()?;
        let types: Vec<RecordType> = match denied {
            Denied::Exists(types) => types
                .iter()
                .copied()
                .chain([RecordType::RRSIG, RecordType::NSEC])
                .collect(),
            Denied::Missing => vec![RecordType::RRSIG, RecordType::NSEC, TYPE_NXNAME],
        };
        Some(Record::from_rdata(
            owner.clone(),
            keys.nsec_ttl,
            RData::DNSSEC(DNSSECRData::NSEC(NSEC::new(next, types))),
        ))
    }

    /// `res` (the answer to `qname`) with an RRSIG after every RRset the
    /// zone is authoritative for (not a delegation's NS RRset, not glue),
    /// and for negative answers and referrals the compact-denial NSEC of
    /// the name denied (`denied` tells what the tree knows of a name).
    /// A name that does not exist answers NOERROR (RFC 9824 §3.2).
    ///
    /// With `soa_inline` false the zone's SOA RRset is left out and the
    /// second value says whether it was there: the query path appends
    /// [`ZoneKeys::soa_tail`] (signed for the current serial) instead.
    pub fn sign_resolution(
        &mut self,
        keys: &ZoneKeys,
        qname: &Name,
        res: &Resolution,
        denied: &dyn Fn(&Name) -> Denied,
        soa_inline: bool,
    ) -> Option<(Resolution, bool)> {
        let mut out = Resolution {
            rcode: res.rcode,
            authoritative: res.authoritative,
            answers: Vec::with_capacity(res.answers.len() * 2),
            authorities: Vec::with_capacity(res.authorities.len() * 2 + 2),
            additionals: Vec::with_capacity(res.additionals.len() * 2),
        };
        let mut soa = false;
        let referral = res.authorities.iter().any(|r| r.record_type() == RecordType::NS);
        let negative = res.authorities.iter().any(|r| r.record_type() == RecordType::SOA);
        for set in rrsets(&res.answers) {
            if set[0].record_type() == RecordType::SOA && !soa_inline {
                soa = true;
                continue;
            }
            out.answers.extend_from_slice(set);
            out.answers.push(self.rrsig(keys, set)?);
        }
        for set in rrsets(&res.authorities) {
            match set[0].record_type() {
                RecordType::SOA if !soa_inline => soa = true,
                // A delegation's NS RRset belongs to the child: unsigned.
                RecordType::NS => out.authorities.extend_from_slice(set),
                _ => {
                    out.authorities.extend_from_slice(set);
                    out.authorities.push(self.rrsig(keys, set)?);
                }
            }
        }
        let denial = if referral {
            // No DS at the cut (fedns serves none): NSEC at the cut.
            res.authorities
                .iter()
                .find(|r| r.record_type() == RecordType::NS)
                .map(|ns| ns.name.clone())
        } else if negative {
            Some(final_name(qname, &res.answers))
        } else {
            None
        };
        if let Some(name) = denial {
            let state = denied(&name);
            if matches!(state, Denied::Missing) {
                out.rcode = hickory_proto::op::ResponseCode::NoError;
            }
            let nsec = Signer::nsec(keys, &name, &state)?;
            let rrsig = self.rrsig(keys, std::slice::from_ref(&nsec))?;
            // Before the SOA the query path appends.
            out.authorities.push(nsec);
            out.authorities.push(rrsig);
        }
        for set in rrsets(&res.additionals) {
            out.additionals.extend_from_slice(set);
            if !referral {
                out.additionals.push(self.rrsig(keys, set)?);
            }
        }
        Some((out, soa))
    }
}

/// The name a CNAME chain starting at `qname` ends at in `answers`.
fn final_name(qname: &Name, answers: &[Record]) -> Name {
    let mut name = qname.clone();
    for _ in 0..=answers.len() {
        let next = answers.iter().find_map(|r| match &r.data {
            RData::CNAME(target) if r.name.eq_ignore_root_case(&name) => Some(target.0.clone()),
            _ => None,
        });
        match next {
            Some(target) => name = target,
            None => break,
        }
    }
    name
}

/// Consecutive records of one owner and type.
fn rrsets(records: &[Record]) -> impl Iterator<Item = &[Record]> {
    records.chunk_by(|a, b| a.record_type() == b.record_type() && a.name == b.name)
}
