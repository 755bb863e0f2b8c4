//! TSIG (RFC 8945): verifying signed requests, signing responses (every
//! message of a multi-message transfer, chained by the prior MAC as
//! §5.3.1 asks) and signing our NOTIFY requests.
//!
//! Record encoding and decoding is hickory-proto's
//! ([`TSIG`], [`TSIG::emit_tsig_for_mac`]); the MAC is RustCrypto's
//! `hmac` with `sha2`. Only hmac-sha256 and hmac-sha512 are offered.

use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::rr::rdata::tsig::{TsigError, TSIG};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder, NameEncoding};

use crate::zone::tsig_key::{Algorithm, TsigKey};

/// Seconds of clock difference accepted (RFC 8945 §10 recommends 300).
pub const FUDGE: u16 = 300;

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A TSIG RR found as the last record of a message.
#[derive(Debug, Clone)]
pub(crate) struct FoundTsig {
    /// Offset of the TSIG RR: the message without it is `packet[..start]`.
    pub start: usize,
    pub key_name: Name,
    pub rdata: TSIG,
}

/// The offset after the (possibly compressed) name at `pos`.
fn skip_name(packet: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let len = *packet.get(pos)? as usize;
        match len & 0xC0 {
            0x00 if len == 0 => return Some(pos + 1),
            0x00 => pos += 1 + len,
            0xC0 => {
                packet.get(pos + 1)?;
                return Some(pos + 2);
            }
            _ => return None,
        }
    }
}

/// Finds the TSIG RR that ends `packet`, if the last additional record
/// is one. `Err(())`: the message is malformed, or holds a TSIG RR that
/// is not its last record (RFC 8945 §5.1: FORMERR).
#[allow(clippy::result_unit_err)]
pub(crate) fn find(packet: &[u8]) -> Result<Option<FoundTsig>, ()> {
    if packet.len() < 12 {
        return Err(());
    }
    let count = |i: usize| u16::from_be_bytes([packet[i], packet[i + 1]]) as usize;
    let (qd, an, ns, ar) = (count(4), count(6), count(8), count(10));
    if ar == 0 {
        return Ok(None);
    }
    let mut pos = 12;
    for _ in 0..qd {
        pos = skip_name(packet, pos).ok_or(())? + 4;
    }
    let mut last = pos;
    for i in 0..an + ns + ar {
        last = pos;
        let after = skip_name(packet, pos).ok_or(())?;
        let fixed = packet.get(after..after + 10).ok_or(())?;
        // A TSIG RR anywhere but last: FORMERR (RFC 8945 §5.1), not a
        // message read as unsigned.
        if i + 1 < an + ns + ar && RecordType::from(u16::from_be_bytes([fixed[0], fixed[1]])) == RecordType::TSIG {
            return Err(());
        }
        let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
        pos = after + 10 + rdlen;
        if pos > packet.len() {
            return Err(());
        }
    }
    let after = skip_name(packet, last).ok_or(())?;
    let rtype = u16::from_be_bytes([packet[after], packet[after + 1]]);
    if RecordType::from(rtype) != RecordType::TSIG {
        return Ok(None);
    }
    let mut decoder = BinDecoder::new(packet);
    decoder.read_slice(last).map_err(|_| ())?;
    let record = Record::read(&mut decoder).map_err(|_| ())?;
    let RData::TSIG(rdata) = record.data else {
        return Err(());
    };
    Ok(Some(FoundTsig {
        start: last,
        key_name: record.name.to_lowercase(),
        rdata,
    }))
}

/// Why a signed request was not accepted (RFC 8945 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // named as the RFC names the errors
pub(crate) enum Rejected {
    /// Unknown key name or algorithm: BADKEY.
    BadKey,
    /// Wrong MAC (or truncated): BADSIG.
    BadSig,
    /// Time signed outside the fudge: BADTIME.
    BadTime,
    /// A request whose MAC was accepted before, within its time window:
    /// answered BADTIME, as a request whose time no longer holds.
    Replayed,
}

impl Rejected {
    pub(crate) fn error(self) -> TsigError {
        match self {
            Rejected::BadKey => TsigError::BadKey,
            Rejected::BadSig => TsigError::BadSig,
            Rejected::BadTime | Rejected::Replayed => TsigError::BadTime,
        }
    }
}

/// The request bytes the MAC covers: the message without its TSIG RR,
/// ARCOUNT one lower and the original ID (RFC 8945 §4.3.1).
fn unsigned_part(packet: &[u8], found: &FoundTsig) -> Vec<u8> {
    let mut message = packet[..found.start].to_vec();
    message[0..2].copy_from_slice(&found.rdata.oid.to_be_bytes());
    let arcount = u16::from_be_bytes([message[10], message[11]]).saturating_sub(1);
    message[10..12].copy_from_slice(&arcount.to_be_bytes());
    message
}

fn variables(rdata: &TSIG, key_name: &Name) -> Vec<u8> {
    let mut buf = Vec::with_capacity(64);
    let mut encoder = BinEncoder::new(&mut buf);
    // Only fails for over-long fields, which a decoded record cannot have.
    let _ = rdata.emit_tsig_for_mac(&mut encoder, key_name);
    buf
}

/// Checks a signed request against `keys`: the key it names, its MAC and
/// its time (RFC 8945 §5.2). On success, the key and the request MAC
/// (which the response's MAC covers).
pub(crate) fn verify_request<'k>(
    packet: &[u8],
    found: &FoundTsig,
    keys: &'k [TsigKey],
    now: u64,
) -> Result<(&'k TsigKey, Vec<u8>), Rejected> {
    let algorithm = Algorithm::of(&found.rdata.algorithm).ok_or(Rejected::BadKey)?;
    let key = keys
        .iter()
        .find(|k| k.name == found.key_name && k.algorithm == algorithm)
        .ok_or(Rejected::BadKey)?;
    let mut hasher = key.hasher();
    hasher.update(&unsigned_part(packet, found));
    hasher.update(&variables(&found.rdata, &found.key_name));
    if !hasher.verify(&found.rdata.mac) {
        return Err(Rejected::BadSig);
    }
    // The client names its fudge; more than ours is not honoured (BIND
    // caps it the same), or a signed request would stay good for hours.
    let fudge = u64::from(found.rdata.fudge.min(FUDGE));
    if now.abs_diff(found.rdata.time) > fudge {
        return Err(Rejected::BadTime);
    }
    Ok((key, found.rdata.mac.clone()))
}

/// Appends `rr` to `message` and counts it in ARCOUNT.
fn append_rr(message: &mut Vec<u8>, key_name: &Name, rdata: &TSIG) {
    let mut rr = Vec::with_capacity(128);
    {
        let mut encoder = BinEncoder::new(&mut rr);
        encoder.set_name_encoding(NameEncoding::Uncompressed);
        let _ = key_name.emit(&mut encoder);
        let _ = RecordType::TSIG.emit(&mut encoder);
        let _ = DNSClass::ANY.emit(&mut encoder);
        let _ = encoder.emit_u32(0);
        let place = encoder.place::<u16>();
        let start = encoder.len();
        let _ = rdata.emit(&mut encoder);
        let len = (encoder.len() - start) as u16;
        if let Ok(place) = place {
            let _ = place.replace(&mut encoder, len);
        }
    }
    message.extend_from_slice(&rr);
    let arcount = u16::from_be_bytes([message[10], message[11]]).wrapping_add(1);
    message[10..12].copy_from_slice(&arcount.to_be_bytes());
}

fn stub(key: &TsigKey, time: u64, oid: u16, error: Option<TsigError>) -> TSIG {
    TSIG::new(key.algorithm.hickory(), time, FUDGE, Vec::new(), oid, error, Vec::new())
}

/// Signs the messages of one response, in order: the first covers the
/// request MAC and the full TSIG variables, each later one the prior MAC
/// and the timers only (RFC 8945 §5.3.1).
pub(crate) struct ResponseSigner<'k> {
    key: &'k TsigKey,
    prior_mac: Vec<u8>,
    first: bool,
}

impl<'k> ResponseSigner<'k> {
    pub(crate) fn new(key: &'k TsigKey, request_mac: Vec<u8>) -> Self {
        ResponseSigner {
            key,
            prior_mac: request_mac,
            first: true,
        }
    }

    /// Appends a signed TSIG RR to `message` (a complete response).
    pub(crate) fn sign(&mut self, message: &mut Vec<u8>, error: Option<TsigError>) {
        let oid = u16::from_be_bytes([message[0], message[1]]);
        let mut rdata = stub(self.key, now(), oid, error);
        let mut hasher = self.key.hasher();
        hasher.update(&(self.prior_mac.len() as u16).to_be_bytes());
        hasher.update(&self.prior_mac);
        hasher.update(message);
        if self.first {
            hasher.update(&variables(&rdata, &self.key.name));
        } else {
            hasher.update(&((rdata.time >> 32) as u16).to_be_bytes());
            hasher.update(&(rdata.time as u32).to_be_bytes());
            hasher.update(&rdata.fudge.to_be_bytes());
        }
        let mac = hasher.finalize();
        rdata = rdata.set_mac(mac.clone());
        append_rr(message, &self.key.name, &rdata);
        self.prior_mac = mac;
        self.first = false;
    }
}

/// Appends an unsigned TSIG RR carrying `error` (BADKEY, BADSIG: RFC 8945
/// §5.2.1 and §5.2.2 say the error response is not signed).
pub(crate) fn append_unsigned_error(message: &mut Vec<u8>, found: &FoundTsig, error: TsigError) {
    let rdata = TSIG::new(
        found.rdata.algorithm.clone(),
        now(),
        FUDGE,
        Vec::new(),
        found.rdata.oid,
        Some(error),
        Vec::new(),
    );
    append_rr(message, &found.key_name, &rdata);
}

/// Signs a request we send (NOTIFY): returns its MAC.
pub(crate) fn sign_request(message: &mut Vec<u8>, key: &TsigKey) -> Vec<u8> {
    let oid = u16::from_be_bytes([message[0], message[1]]);
    let rdata = stub(key, now(), oid, None);
    let mut hasher = key.hasher();
    hasher.update(message);
    hasher.update(&variables(&rdata, &key.name));
    let mac = hasher.finalize();
    append_rr(message, &key.name, &rdata.set_mac(mac.clone()));
    mac
}

/// Verifies a signed response to a request of ours whose MAC was
/// `request_mac` (single-message responses only, as NOTIFY's).
pub(crate) fn verify_response(packet: &[u8], key: &TsigKey, request_mac: &[u8]) -> bool {
    let Ok(Some(found)) = find(packet) else {
        return false;
    };
    if found.key_name != key.name || Algorithm::of(&found.rdata.algorithm) != Some(key.algorithm) {
        return false;
    }
    let mut hasher = key.hasher();
    hasher.update(&(request_mac.len() as u16).to_be_bytes());
    hasher.update(request_mac);
    hasher.update(&unsigned_part(packet, &found));
    hasher.update(&variables(&found.rdata, &found.key_name));
    hasher.verify(&found.rdata.mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TsigKey {
        TsigKey::parse("hmac-sha256:xfr.example.:c2VjcmV0LXNlY3JldC1zZWNyZXQ=").unwrap()
    }

    fn query() -> Vec<u8> {
        use hickory_proto::op::{Message, MessageType, OpCode, Query};
        let mut m = Message::new(0x4242, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("example.com.").unwrap(),
            RecordType::AXFR,
        ));
        m.to_vec().unwrap()
    }

    #[test]
    fn parse_keys() {
        assert_eq!(key().name().to_ascii(), "xfr.example.");
        assert_eq!(key().algorithm(), Algorithm::HmacSha256);
        assert!(TsigKey::parse("hmac-md5:k:c2VjcmV0").is_err());
        assert!(TsigKey::parse("hmac-sha512:k:not base64!").is_err());
        assert_eq!(
            TsigKey::parse("k.:c2VjcmV0").unwrap().algorithm(),
            Algorithm::HmacSha256
        );
        assert!(!format!("{:?}", key()).contains("c2Vj"));
    }

    #[test]
    fn signed_request_verifies_and_tampering_does_not() {
        let key = key();
        let mut packet = query();
        let mac = sign_request(&mut packet, &key);
        let found = find(&packet).unwrap().unwrap();
        let (used, request_mac) = verify_request(&packet, &found, std::slice::from_ref(&key), now()).unwrap();
        assert_eq!(used, &key);
        assert_eq!(request_mac, mac);
        // Wrong time.
        assert_eq!(
            verify_request(&packet, &found, std::slice::from_ref(&key), now() + 1000).unwrap_err(),
            Rejected::BadTime
        );
        // Another secret under the same name.
        let other = TsigKey::new("xfr.example.", Algorithm::HmacSha256, b"other".to_vec()).unwrap();
        assert_eq!(
            verify_request(&packet, &found, &[other], now()).unwrap_err(),
            Rejected::BadSig
        );
        // Unknown name.
        let unknown = TsigKey::new("nope.", Algorithm::HmacSha256, b"x".to_vec()).unwrap();
        assert_eq!(
            verify_request(&packet, &found, &[unknown], now()).unwrap_err(),
            Rejected::BadKey
        );
        // A flipped bit in the question.
        packet[14] ^= 1;
        let found = find(&packet).unwrap().unwrap();
        assert_eq!(
            verify_request(&packet, &found, &[key], now()).unwrap_err(),
            Rejected::BadSig
        );
    }

    /// A client-chosen fudge above ours is cut to ours (300 s, as BIND):
    /// a request signed 1,000 s ago with fudge 65,535 is BADTIME.
    #[test]
    fn a_clients_fudge_is_capped_at_ours() {
        let key = key();
        let mut packet = query();
        let oid = u16::from_be_bytes([packet[0], packet[1]]);
        let rdata = TSIG::new(
            key.algorithm.hickory(),
            now() - 1000,
            u16::MAX,
            Vec::new(),
            oid,
            None,
            Vec::new(),
        );
        let mut hasher = key.hasher();
        hasher.update(&packet);
        hasher.update(&variables(&rdata, &key.name));
        let mac = hasher.finalize();
        append_rr(&mut packet, &key.name, &rdata.set_mac(mac));
        let found = find(&packet).unwrap().unwrap();
        assert_eq!(found.rdata.fudge, u16::MAX);
        assert_eq!(
            verify_request(&packet, &found, std::slice::from_ref(&key), now()).unwrap_err(),
            Rejected::BadTime
        );
        // Within our fudge it verifies.
        assert!(verify_request(&packet, &found, std::slice::from_ref(&key), now() - 900).is_ok());
    }

    /// A TSIG RR followed by another additional record: malformed
    /// (FORMERR, RFC 8945 §5.1), never read as an unsigned request.
    #[test]
    fn a_tsig_rr_that_is_not_last_is_malformed() {
        let key = key();
        let mut packet = query();
        sign_request(&mut packet, &key);
        // An A record for the root after it: name, type, class, TTL, RDLENGTH, RDATA.
        packet.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 192, 0, 2, 1]);
        let arcount = u16::from_be_bytes([packet[10], packet[11]]) + 1;
        packet[10..12].copy_from_slice(&arcount.to_be_bytes());
        assert!(find(&packet).is_err());
    }

    #[test]
    fn response_signature_verifies_as_a_client_would() {
        let key = key();
        let mut request = query();
        let request_mac = sign_request(&mut request, &key);
        let mut response = query();
        response[2] |= 0x80;
        let mut signer = ResponseSigner::new(&key, request_mac.clone());
        signer.sign(&mut response, None);
        assert!(verify_response(&response, &key, &request_mac));
        assert!(!verify_response(&response, &key, b"another mac"));
    }
}
