//! DNSSEC signing (RFC 4033-4035) at snapshot build time, and the few
//! signatures the query path must make itself.
//!
//! * The key and settings ([`DnssecConfig`]) are in `signing_key.rs`.
//! * [`ZoneKeys`]: one zone's signing state in a snapshot: keys, signing
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
//!
//! A zone denying by NSEC chain (`nsec_chain.rs`) has none of these NSECs:
//! every denial, the one at the end of a CNAME chain and the NODATA of an
//! owner name included, is made of the chain's links ([`Denied::Chain`]),
//! so a validator never sees two NSEC RRsets at one owner.

use hickory_proto::dnssec::rdata::{DNSSECRData, SigInput, NSEC, RRSIG};
use hickory_proto::dnssec::TBS;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType, SerialNumber};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder, NameEncoding};
use rustc_hash::FxHashMap;

use super::resolve::Resolution;
pub(crate) use super::signing_key::{DnssecConfig, MAX_SIGNATURE};

/// The NXNAME meta-type of RFC 9824 §5: "this name does not exist".
pub(crate) const TYPE_NXNAME: RecordType = RecordType::Unknown(128);

/// Seconds a signature's inception lies before the time it is made, for
/// validators whose clocks run behind.
const INCEPTION_SKEW: u32 = 3600;

/// One signed zone's signing state in a snapshot.
#[derive(Debug)]
pub(crate) struct ZoneKeys {
    pub config: DnssecConfig,
    pub apex: Name,
    /// Octets of the apex in wire format (the query path's successor of a
    /// long name stays inside the zone).
    pub apex_wire_len: usize,
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
    /// The zone's SOA record (its TTL the SOA RRset's own) that
    /// `soa_tail` holds.
    pub soa: Record,
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
            apex_wire_len: super::tree::wire_key(apex).len(),
            inception,
            expiration,
            oldest_expiration: expiration,
            nsec_ttl,
            nsec_rrsig_prefix: Box::default(),
            labels_at: 3,
            nxname_bitmap: Box::default(),
            soa_tail: Box::default(),
            soa: soa.clone(),
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
        keys.soa_tail = keys.signed_soa_tail(soa)?;
        Some(keys)
    }

    /// [`ZoneKeys::soa_tail`] for SERIAL `serial` instead of the
    /// current one (a serial the zone shows from a moment on), signed now
    /// in this snapshot's signing window. `None` if it cannot be signed.
    pub fn soa_tail_for(&self, serial: u32) -> Option<Box<[u8]>> {
        let mut soa = self.soa.clone();
        match &mut soa.data {
            RData::SOA(fields) => fields.serial = serial,
            _ => return None,
        }
        self.signed_soa_tail(&soa)
    }

    /// The SOA RR `soa` and its RRSIG as the query path appends them.
    /// Signed with the RRset's own TTL as original TTL, sent with the
    /// negative TTL (RFC 2308 §3; validators accept a lower TTL,
    /// RFC 4035 §5.3.3).
    fn signed_soa_tail(&self, soa: &Record) -> Option<Box<[u8]>> {
        let mut signer = Signer::new();
        let mut rrsig = signer.rrsig(self, std::slice::from_ref(soa))?;
        rrsig.ttl = self.nsec_ttl;
        let mut shown = soa.clone();
        shown.ttl = self.nsec_ttl;
        let mut tail = Vec::with_capacity(256);
        {
            let mut encoder = BinEncoder::new(&mut tail);
            encoder.set_name_encoding(NameEncoding::Uncompressed);
            shown.emit(&mut encoder).ok()?;
            rrsig.emit(&mut encoder).ok()?;
        }
        Some(tail.into_boxed_slice())
    }

    /// Re-signing is due at `now`: some signature served has fewer than
    /// `signature_refresh` seconds left.
    pub fn resign_due(&self, now: u32) -> bool {
        now.saturating_add(self.config.signature_refresh) >= self.oldest_expiration
    }

    /// The RRSIG fields but the signature for an RRset of `type_covered`:
    /// algorithm and key tag of the key that signs that type
    /// ([`DnssecConfig::signing_key`]: the KSK for DNSKEY in KSK+ZSK mode,
    /// else the ZSK or CSK).
    fn input(&self, type_covered: RecordType, labels: u8, ttl: u32) -> SigInput {
        let key = self.config.signing_key(type_covered);
        SigInput {
            type_covered,
            algorithm: key.algorithm().hickory(),
            num_labels: labels,
            original_ttl: ttl,
            sig_expiration: SerialNumber::new(self.expiration),
            sig_inception: SerialNumber::new(self.inception),
            key_tag: key.key_tag(),
            signer_name: self.apex.clone(),
        }
    }

    /// Signs `message`, the signed data of an RRset other than the DNSKEY
    /// RRset (a query-time NSEC), with the zone-signing key (the CSK in
    /// CSK mode): the key [`ZoneKeys::nsec_rrsig_prefix`] names. See
    /// [`DnssecKey::sign`].
    #[inline]
    pub fn sign(&self, message: &[u8], out: &mut [u8; MAX_SIGNATURE]) -> Option<usize> {
        self.config.signing_key(RecordType::NSEC).sign(message, out)
    }
}

/// What the tree knows of a name a negative answer is about, or, in a
/// zone denying by NSEC chain, the proof itself.
pub(crate) enum Denied {
    /// The name exists with these types (none: an empty non-terminal).
    Exists(Vec<RecordType>),
    /// The name does not exist.
    Missing,
    /// Links of the zone's NSEC chain (NSEC RRs, each followed by its
    /// RRSIG RR) that prove the denial (RFC 4035 §3.1.3); `missing`: they
    /// prove the name does not exist (NXDOMAIN, RFC 6604 §2 for the end of
    /// a CNAME chain), else that it has no RRset of the type asked (NODATA).
    Chain { links: Vec<Record>, missing: bool },
}

/// Adds signatures and denial records to resolutions; signatures are
/// cached by their signed data (signing window aside, see [`cache_key`])
/// for the signer's lifetime (one build).
#[derive(Default)]
pub(crate) struct Signer {
    cache: FxHashMap<Box<[u8]>, Record>,
}

impl Signer {
    pub fn new() -> Self {
        Signer::default()
    }

    /// Takes the RRSIGs of `records` (a signed zone's records, as a
    /// transfer version holds them) into the cache, keyed by the signed
    /// data of the RRsets they cover: [`Signer::rrsig`] then returns them
    /// for RRsets that did not change instead of signing again.
    pub fn remember<'a>(&mut self, records: impl Iterator<Item = &'a Record>) {
        let mut sets: FxHashMap<(Name, RecordType), Vec<Record>> = FxHashMap::default();
        let mut sigs: Vec<(&SigInput, &Record)> = Vec::new();
        for record in records {
            match &record.data {
                RData::DNSSEC(DNSSECRData::RRSIG(rrsig)) => sigs.push((rrsig.input(), record)),
                _ => sets
                    .entry((record.name.to_lowercase(), record.record_type()))
                    .or_default()
                    .push(record.clone()),
            }
        }
        for (input, record) in sigs {
            let Some(set) = sets.get(&(record.name.to_lowercase(), input.type_covered)) else {
                continue;
            };
            if let Ok(tbs) = TBS::from_input(&record.name, DNSClass::IN, input, set.iter()) {
                self.cache.insert(cache_key(tbs.as_ref()), record.clone());
            }
        }
    }

    /// The RRSIG over `rrset` (records of one owner, type and TTL).
    pub fn rrsig(&mut self, keys: &ZoneKeys, rrset: &[Record]) -> Option<Record> {
        let first = rrset.first()?;
        let input = keys.input(first.record_type(), first.name.num_labels(), first.ttl);
        let tbs = TBS::from_input(&first.name, DNSClass::IN, &input, rrset.iter()).ok()?;
        let key = cache_key(tbs.as_ref());
        if let Some(record) = self.cache.get(&key) {
            return Some(record.clone());
        }
        let mut signature = [0u8; MAX_SIGNATURE];
        let len = keys
            .config
            .signing_key(first.record_type())
            .sign(tbs.as_ref(), &mut signature)?;
        let rrsig = RRSIG::from_sig(input, signature[..len].to_vec());
        let record = Record::from_rdata(first.name.clone(), first.ttl, RData::DNSSEC(DNSSECRData::RRSIG(rrsig)));
        self.cache.insert(key, record.clone());
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
            // A chain-signed zone has no compact-denial NSEC.
            Denied::Chain { .. } => return None,
        };
        Some(Record::from_rdata(
            owner.clone(),
            keys.nsec_ttl,
            RData::DNSSEC(DNSSECRData::NSEC(NSEC::new(next, types))),
        ))
    }

    /// `res` (the answer to `qname`) with an RRSIG after every RRset the
    /// zone is authoritative for (not a delegation's NS RRset, not glue),
    /// and for negative answers and referrals the denial of the name
    /// denied (`denied` tells what the tree knows of a name): the
    /// compact-denial NSEC, where a name that does not exist answers
    /// NOERROR (RFC 9824 §3.2); or the chain links `denied` gives, the
    /// RCODE staying the resolution's (NXDOMAIN when the name does not
    /// exist).
    ///
    /// With `soa_inline` false the zone's SOA RRset is left out and the
    /// second value says whether it was there: the query path appends
    /// [`ZoneKeys::soa_tail`] (signed for the current serial) instead.
    pub fn sign_resolution(
        &mut self,
        keys: &ZoneKeys,
        qname: &Name,
        res: &Resolution,
        denied: &dyn Fn(&Name) -> Option<Denied>,
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
            let state = denied(&name)?;
            if let Denied::Chain { links, missing } = state {
                if missing {
                    out.rcode = hickory_proto::op::ResponseCode::NXDomain;
                }
                // Before the SOA the query path appends.
                out.authorities.extend(links);
                return self.sign_additionals(keys, res, referral, out).map(|out| (out, soa));
            }
            if matches!(state, Denied::Missing) {
                out.rcode = hickory_proto::op::ResponseCode::NoError;
            }
            let nsec = Signer::nsec(keys, &name, &state)?;
            let rrsig = self.rrsig(keys, std::slice::from_ref(&nsec))?;
            // Before the SOA the query path appends.
            out.authorities.push(nsec);
            out.authorities.push(rrsig);
        }
        self.sign_additionals(keys, res, referral, out).map(|out| (out, soa))
    }

    /// `out` with the additional section of `res`, signed unless it is a
    /// referral's glue.
    fn sign_additionals(
        &mut self,
        keys: &ZoneKeys,
        res: &Resolution,
        referral: bool,
        mut out: Resolution,
    ) -> Option<Resolution> {
        for set in rrsets(&res.additionals) {
            out.additionals.extend_from_slice(set);
            if !referral {
                out.additionals.push(self.rrsig(keys, set)?);
            }
        }
        Some(out)
    }
}

/// Octets of the signature expiration and inception fields in the signed
/// data (RFC 4034 §3.1: after type covered, algorithm, labels and
/// original TTL).
const WINDOW: std::ops::Range<usize> = 8..16;

/// The cache key of signed data `tbs`: the data with the signing window
/// zeroed, so a signature made in an earlier window (still valid; the
/// zone's oldest expiration is tracked) is found for an unchanged RRset.
fn cache_key(tbs: &[u8]) -> Box<[u8]> {
    let mut key: Box<[u8]> = tbs.into();
    if let Some(window) = key.get_mut(WINDOW) {
        window.fill(0);
    }
    key
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
