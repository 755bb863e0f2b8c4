//! Denial of existence by an NSEC chain (RFC 4034 §4, RFC 4035 §3.1.3.2),
//! the zone's `denial: NSEC` alternative to compact denial (see
//! `dnssec.rs`).
//!
//! Every authoritative owner name (not an empty non-terminal, not glue
//! below a delegation) gets one NSEC whose next name is the following
//! owner in canonical order (RFC 4034 §6.1) and whose bitmap lists the
//! owner's types (every variant's, for a routed name) plus RRSIG and NSEC.
//! Every NSEC is signed when the snapshot is built, so a name that does
//! not exist is answered by copying out two pre-signed NSECs (the one
//! covering the name, the one covering the wildcard at its closest
//! encloser): no signature is made per query. The price is that the
//! zone's names can be listed by following the chain ("zone walking").
//!
//! Lookups go by [`canonical_key`]: a byte string whose plain byte order
//! is the canonical order of the names, so the query path finds the
//! covering NSEC by binary search over a sorted array, without allocating.

use std::sync::Arc;

use hickory_proto::dnssec::rdata::{DNSSECRData, NSEC};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder, NameEncoding};

use super::dnssec::{Denied, Signer, ZoneKeys};
use super::tree::{wire_key, Node, Tree};

/// Largest [`canonical_key`] of a name of at most 255 octets: two octets
/// per label octet and one per label.
pub(crate) const MAX_CANONICAL_KEY: usize = 2 * 255;

/// Writes the canonical-order key of the wire-format name `wire`
/// (lower-cased, length-prefixed labels ending in the root label) into
/// `out` and returns its length; `None` for a malformed name or one whose
/// key does not fit.
///
/// Labels are taken from the root outwards (RFC 4034 §6.1 compares the
/// most significant label first); each label octet `b` becomes `1, b` and
/// each label ends with `0`, so a label that is a prefix of another sorts
/// first ("absence of an octet sorts before a zero value octet") and the
/// byte order of two keys is the canonical order of their names.
pub(crate) fn canonical_key(wire: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut starts = [0u8; 128];
    let mut count = 0;
    let mut at = 0usize;
    loop {
        let len = *wire.get(at)? as usize;
        if len == 0 {
            break;
        }
        *starts.get_mut(count)? = u8::try_from(at).ok()?;
        count += 1;
        at += 1 + len;
    }
    let mut written = 0;
    for &start in starts[..count].iter().rev() {
        let start = start as usize;
        let len = wire[start] as usize;
        let label = wire.get(start + 1..start + 1 + len)?;
        let room = out.get_mut(written..written + 2 * len + 1)?;
        for (pair, &octet) in room.chunks_exact_mut(2).zip(label) {
            pair[0] = 1;
            pair[1] = octet;
        }
        room[2 * len] = 0;
        written += 2 * len + 1;
    }
    Some(written)
}

/// One link of the chain: the NSEC RR at an owner and its RRSIG RR, wire
/// format with uncompressed names, as the query path copies them out.
#[derive(Debug, Clone)]
struct Link {
    /// [`canonical_key`] of the owner.
    key: Box<[u8]>,
    /// NSEC RR then RRSIG RR.
    rendered: Arc<[u8]>,
    /// Octets of the NSEC RR at the start of `rendered`.
    nsec_len: usize,
    /// The RRSIG's expiration (seconds since the epoch).
    expiration: u32,
}

/// An owner name of the chain while it is built: its [`canonical_key`],
/// its node, its NSEC's types.
type ChainOwner<'a> = (Box<[u8]>, &'a Node, Vec<RecordType>);

/// A signed zone's NSEC chain, sorted by canonical order.
#[derive(Debug, Default)]
pub(crate) struct NsecChain {
    links: Vec<Link>,
    /// The earliest expiration of any link's signature (kept links carry
    /// older ones), found once at build: re-signing checks read it often.
    oldest: Option<u32>,
}

impl NsecChain {
    /// The chain of zone `zone` of `tree`, signed with `keys`. Links of
    /// `previous` whose NSEC is unchanged and whose signature is not due
    /// for refresh at `now` are kept as they are (so an incremental update
    /// signs only the links around changed names). `None` when hickory
    /// cannot encode or the key cannot sign.
    pub fn build(
        tree: &Tree,
        zone: usize,
        keys: &ZoneKeys,
        signer: &mut Signer,
        previous: Option<&NsecChain>,
        now: u32,
    ) -> Option<NsecChain> {
        let mut owners: Vec<ChainOwner<'_>> = Vec::new();
        let mut scratch = [0u8; MAX_CANONICAL_KEY];
        for (key, node) in &tree.nodes {
            if node.zone != zone {
                continue;
            }
            // Below a delegation: glue, not authoritative (RFC 4035 §2.3).
            if node.cut.as_ref().is_some_and(|cut| cut != key) {
                continue;
            }
            let mut types: Vec<RecordType> = node.rrsets.keys().copied().collect();
            if let Some(routed) = tree.routed_keys.get(key).and_then(|&i| tree.routed(i)) {
                types.extend(routed.sets.iter().flat_map(|sets| sets.keys().copied()));
            }
            // Empty non-terminals have no NSEC (RFC 4035 §2.3).
            if types.is_empty() {
                continue;
            }
            types.extend([RecordType::RRSIG, RecordType::NSEC]);
            types.sort();
            types.dedup();
            let len = canonical_key(key, &mut scratch)?;
            owners.push((scratch[..len].into(), node, types));
        }
        owners.sort_by(|a, b| a.0.cmp(&b.0));
        let count = owners.len();
        let mut links = Vec::with_capacity(count);
        let mut nsec_wire = Vec::with_capacity(128);
        for i in 0..count {
            let (key, node, types) = &owners[i];
            let next = &owners[(i + 1) % count].1.name;
            let nsec = Record::from_rdata(
                node.name.clone(),
                keys.nsec_ttl,
                RData::DNSSEC(DNSSECRData::NSEC(NSEC::new(next.clone(), types.iter().copied()))),
            );
            nsec_wire.clear();
            emit(&nsec, &mut nsec_wire)?;
            let kept = previous.and_then(|p| p.link(key)).filter(|old| {
                old.rendered.get(..old.nsec_len) == Some(&nsec_wire[..])
                    && old.expiration > now.saturating_add(keys.config.signature_refresh)
            });
            if let Some(old) = kept {
                links.push(old.clone());
                continue;
            }
            let rrsig = signer.rrsig(keys, std::slice::from_ref(&nsec))?;
            let expiration = match &rrsig.data {
                RData::DNSSEC(DNSSECRData::RRSIG(sig)) => sig.input().sig_expiration.get(),
                _ => keys.expiration,
            };
            let nsec_len = nsec_wire.len();
            let mut rrsig_wire = Vec::with_capacity(128);
            emit(&rrsig, &mut rrsig_wire)?;
            let mut rendered = Vec::with_capacity(nsec_len + rrsig_wire.len());
            rendered.extend_from_slice(&nsec_wire);
            rendered.extend_from_slice(&rrsig_wire);
            links.push(Link {
                key: key.clone(),
                rendered: rendered.into(),
                nsec_len,
                expiration,
            });
        }
        let oldest = links.iter().map(|l| l.expiration).min();
        Some(NsecChain { links, oldest })
    }

    fn link(&self, key: &[u8]) -> Option<&Link> {
        let i = self.links.binary_search_by(|l| l.key.as_ref().cmp(key)).ok()?;
        self.links.get(i)
    }

    /// The NSEC and RRSIG (wire format) of the link covering the name
    /// whose [`canonical_key`] is `key`: the last owner before it in
    /// canonical order (the last owner of the zone when none is: the chain
    /// wraps to the apex, RFC 4034 §4.1.1). `None` for an empty chain.
    #[inline]
    pub fn covering(&self, key: &[u8]) -> Option<&[u8]> {
        let after = self.links.partition_point(|l| l.key.as_ref() <= key);
        let index = after.checked_sub(1).unwrap_or(self.links.len().checked_sub(1)?);
        self.links.get(index).map(|l| l.rendered.as_ref())
    }

    /// The proof, from this chain of zone `zone` of `tree`, that the name
    /// `name` (lower case, fully qualified) has no RRset of the type a
    /// negative answer was asked for, or does not exist:
    ///
    /// * an owner name (or a delegation): its own link, whose bitmap
    ///   lacks the type (RFC 4035 §3.1.3.1); an empty non-terminal: the
    ///   link covering it, whose next name is below it;
    /// * a name a wildcard answers for (NODATA): the link covering the
    ///   name (no closer match) and the wildcard's own link (RFC 4035
    ///   §3.1.3.4);
    /// * a name that does not exist (NXDOMAIN): the link covering the name
    ///   and the one covering the wildcard at its closest encloser, once
    ///   when they are the same (RFC 4035 §3.1.3.2).
    ///
    /// Build-time only (it allocates); the query path's NXDOMAIN does the
    /// same from bytes. `None` when a link cannot be found or read.
    pub fn denial(&self, tree: &Tree, zone: usize, name: &Name) -> Option<Denied> {
        let key = wire_key(name);
        let mut scratch = [0u8; MAX_CANONICAL_KEY];
        let len = canonical_key(&key, &mut scratch)?;
        let covering = self.covering(&scratch[..len])?;
        let mut links = vec![covering];
        let mut missing = false;
        if !tree.nodes.contains_key(&key) {
            let encloser = tree.closest_encloser(name, zone);
            missing = !encloser.wildcard_child;
            // `*.<closest encloser>` past 255 octets cannot exist: no proof.
            if let Ok(wildcard) = Name::from_ascii("*").and_then(|w| w.append_name(&encloser.name)) {
                let len = canonical_key(&wire_key(&wildcard), &mut scratch)?;
                let link = self.covering(&scratch[..len])?;
                if !std::ptr::eq(link.as_ptr(), covering.as_ptr()) {
                    links.push(link);
                }
            }
        }
        let mut records = Vec::with_capacity(2 * links.len());
        for link in links {
            let mut decoder = BinDecoder::new(link);
            records.push(Record::read(&mut decoder).ok()?);
            records.push(Record::read(&mut decoder).ok()?);
        }
        Some(Denied::Chain {
            links: records,
            missing,
        })
    }

    /// Whether the link covering the name whose [`canonical_key`] is `key`
    /// is the same in `self` and `other` (same NSEC, same signature).
    pub fn same_cover(&self, other: &NsecChain, key: &[u8]) -> bool {
        self.covering(key) == other.covering(key)
    }

    /// The earliest expiration of any signature in the chain.
    pub fn oldest_expiration(&self) -> Option<u32> {
        self.oldest
    }
}

/// Writes `record` into the empty `out` in wire format, names
/// uncompressed (as the query path copies links into answers anywhere in
/// a message). hickory's encoder writes from offset 0 of `out`.
fn emit(record: &Record, out: &mut Vec<u8>) -> Option<()> {
    let mut encoder = BinEncoder::new(out);
    encoder.set_name_encoding(NameEncoding::Uncompressed);
    record.emit(&mut encoder).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::Name;

    fn key(labels: &[&[u8]]) -> Vec<u8> {
        let name = Name::from_labels(labels.iter().copied()).unwrap();
        let wire = super::super::tree::wire_key(&name);
        let mut out = [0u8; MAX_CANONICAL_KEY];
        let len = canonical_key(&wire, &mut out).unwrap();
        out[..len].to_vec()
    }

    #[test]
    fn keys_sort_in_canonical_order() {
        // RFC 4034 §6.1's example, in order (lower-cased as keys are).
        let names: [&[&[u8]]; 9] = [
            &[b"example"],
            &[b"a", b"example"],
            &[b"yljkjljk", b"a", b"example"],
            &[b"z", b"a", b"example"],
            &[b"zabc", b"a", b"example"],
            &[b"z", b"example"],
            &[&[1], b"z", b"example"],
            &[b"*", b"z", b"example"],
            &[&[200], b"z", b"example"],
        ];
        let keys: Vec<Vec<u8>> = names.iter().map(|n| key(n)).collect();
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1], "{pair:?}");
        }
        // hickory's Name order (which the transfer's NSEC chain uses) agrees.
        let mut by_hickory: Vec<(Name, Vec<u8>)> = names
            .iter()
            .map(|n| (Name::from_labels(n.iter().copied()).unwrap(), key(n)))
            .collect();
        by_hickory.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted: Vec<Vec<u8>> = by_hickory.into_iter().map(|(_, k)| k).collect();
        assert_eq!(sorted, keys);
    }

    #[test]
    fn malformed_names_have_no_key() {
        let mut out = [0u8; MAX_CANONICAL_KEY];
        assert_eq!(canonical_key(&[3, b'a', b'b'], &mut out), None);
        assert_eq!(canonical_key(&[], &mut out), None);
        assert_eq!(canonical_key(&[0], &mut out), Some(0));
    }
}
