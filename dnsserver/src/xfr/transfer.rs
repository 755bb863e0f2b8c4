//! Zone transfers (AXFR, RFC 5936; IXFR, RFC 1995), TSIG-signed queries
//! (RFC 8945) and the journal IXFR answers from.
//!
//! None of this is on the query path: the UDP and TCP loops hand a
//! request here only when it asks for AXFR/IXFR or carries a TSIG RR
//! (see [`crate::query::answer`]), and this module may allocate freely.
//!
//! * A zone is transferable only when its
//!   [`TransferPolicy`](crate::TransferPolicy) allows the client's address
//!   (`allow`) and, when keys are set, the request is signed with one of
//!   them. Everything else is REFUSED (NOTAUTH with a TSIG error when the
//!   signature itself is wrong), and logged.
//! * Every message of a transfer is signed when the request was
//!   (RFC 8945 §5.3.1).
//! * [`ZoneVersion`]: the records of a zone at one serial, kept for
//!   transfer-enabled zones; [`Delta`]: what changed between two serials
//!   (both kept by the store, in `zone/version.rs`). The last
//!   [`JOURNAL_VERSIONS`](crate::JOURNAL_VERSIONS) deltas are kept; an IXFR
//!   from a serial they cover gets one condensed difference, from an older
//!   (or unknown) serial the whole zone (RFC 1995 §4), from the current or
//!   a newer serial only the SOA.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{RData, Record, RecordType};
use hickory_proto::serialize::binary::BinEncodable;

use super::tsig::{self, ResponseSigner};
use crate::query::answer::{answer, AnswerConfig, Answered, Transport};
use crate::zone::snapshot::Snapshot;
use crate::zone::store::{serial_gt, ZoneStore};
use crate::zone::version::{Delta, TransferZone, ZoneVersion};

/// A transfer message is closed once its records pass this many octets
/// (far below 65535, leaving room for the TSIG RR).
const MESSAGE_OCTETS: usize = 16 * 1024;
const RCODE_NOTAUTH: u8 = 9;

/// What a transfer request gets: the condensed journal from the client's
/// serial, the whole zone, or just the current SOA.
enum Reply {
    Soa,
    Full,
    Incremental(Vec<Arc<Delta>>),
}

fn plan_ixfr(zone: &TransferZone, version: &ZoneVersion, client_serial: u32) -> Reply {
    if client_serial == version.serial || serial_gt(client_serial, version.serial) {
        return Reply::Soa;
    }
    match zone.journal.iter().position(|d| d.from == client_serial) {
        Some(index) => Reply::Incremental(zone.journal.iter().skip(index).cloned().collect()),
        None => Reply::Full,
    }
}

/// Condenses a chain of deltas into one deletion and one addition list
/// (RFC 1995 §5: a server may condense).
fn condense(chain: &[Arc<Delta>]) -> (Vec<Record>, Vec<Record>) {
    let mut deleted: BTreeMap<&[u8], &Record> = BTreeMap::new();
    let mut added: BTreeMap<&[u8], &Record> = BTreeMap::new();
    for delta in chain {
        for (key, record) in &delta.deleted {
            if added.remove(&key[..]).is_none() {
                deleted.insert(key, record);
            }
        }
        for (key, record) in &delta.added {
            if deleted.remove(&key[..]).is_none() {
                added.insert(key, record);
            }
        }
    }
    (
        deleted.into_values().cloned().collect(),
        added.into_values().cloned().collect(),
    )
}

/// Splits `records` into response messages of about [`MESSAGE_OCTETS`].
fn messages(id: u16, query: &Query, records: &[&Record]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chunk: Vec<Record> = Vec::new();
    let mut octets = 0;
    let flush = |chunk: &mut Vec<Record>, out: &mut Vec<Vec<u8>>| {
        let mut message = Message::new(id, MessageType::Response, OpCode::Query);
        message.metadata.authoritative = true;
        if out.is_empty() {
            message.add_query(query.clone());
        }
        message.add_answers(chunk.drain(..));
        if let Ok(bytes) = message.to_vec() {
            out.push(bytes);
        }
    };
    for record in records {
        // The uncompressed size bounds the compressed one.
        octets += record.to_bytes().map_or(512, |b| b.len());
        chunk.push((*record).clone());
        if octets >= MESSAGE_OCTETS {
            flush(&mut chunk, &mut out);
            octets = 0;
        }
    }
    if !chunk.is_empty() || out.is_empty() {
        flush(&mut chunk, &mut out);
    }
    out
}

/// A header-and-question response with `rcode`.
fn error_message(request: &Message, rcode: ResponseCode) -> Vec<u8> {
    let mut message = Message::new(request.metadata.id, MessageType::Response, request.metadata.op_code);
    message.metadata.response_code = rcode;
    message.metadata.recursion_desired = request.metadata.recursion_desired;
    for query in &request.queries {
        message.add_query(query.clone());
    }
    message.to_vec().unwrap_or_else(|_| {
        let mut bytes = vec![0; 12];
        bytes[0..2].copy_from_slice(&request.metadata.id.to_be_bytes());
        bytes[2] = 0x80;
        bytes[3] = u16::from(rcode) as u8 & 0x0F;
        bytes
    })
}

/// A FORMERR with nothing but the header, for messages hickory cannot read.
fn formerr(packet: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0; 12];
    bytes[0..2].copy_from_slice(&packet[0..2]);
    bytes[2] = 0x80 | (packet[2] & 0x78);
    bytes[3] = 1;
    bytes
}

/// What the caller counts in its metrics.
fn answered(qtype: RecordType, rcode: u16) -> Answered {
    Answered {
        qtype: u16::from(qtype),
        rcode,
        truncated: false,
    }
}

/// Answers a request the query path deferred: AXFR, IXFR, or anything
/// signed with TSIG. Returns the response messages in order (none: send
/// nothing) and what to count.
pub(crate) fn handle(
    store: &ZoneStore,
    snapshot: &Snapshot,
    packet: &[u8],
    peer: IpAddr,
    transport: Transport,
    config: &AnswerConfig,
) -> (Vec<Vec<u8>>, Answered) {
    if packet.len() < 12 || packet[2] & 0x80 != 0 {
        return (Vec::new(), answered(RecordType::Unknown(0), 1));
    }
    let found = match tsig::find(packet) {
        Ok(found) => found,
        Err(()) => return (vec![formerr(packet)], answered(RecordType::Unknown(0), 1)),
    };
    // The request as hickory reads it, without its TSIG RR.
    let unsigned: Vec<u8> = match &found {
        Some(found) => {
            let mut bytes = packet[..found.start].to_vec();
            let arcount = u16::from_be_bytes([bytes[10], bytes[11]]).saturating_sub(1);
            bytes[10..12].copy_from_slice(&arcount.to_be_bytes());
            bytes
        }
        None => packet.to_vec(),
    };
    let Ok(request) = Message::from_vec(&unsigned) else {
        return (vec![formerr(packet)], answered(RecordType::Unknown(0), 1));
    };
    let Some(query) = request.queries.first().cloned() else {
        return (
            vec![error_message(&request, ResponseCode::FormErr)],
            answered(RecordType::Unknown(0), 1),
        );
    };
    let qtype = query.query_type();
    let qname = query.name().to_lowercase();
    let zone = store.transfer_zone_of(&qname);
    let policy = zone.as_ref().map(|(policy, _, _)| policy.clone()).unwrap_or_default();

    // TSIG first (RFC 8945 §5.2): a bad signature is answered NOTAUTH
    // with an unsigned TSIG error, whatever was asked.
    let mut signer: Option<ResponseSigner<'_>> = None;
    if let Some(found) = &found {
        let now = tsig::now();
        let verified = tsig::verify_request(packet, found, &policy.keys, now).and_then(|(key, mac)| {
            // The same signed request again within its time window: a
            // replay (refused as its time check would be: BADTIME).
            if store
                .recent_macs()
                .seen_before(&mac, found.rdata.time, now, u64::from(tsig::FUDGE))
            {
                return Err(tsig::Rejected::Replayed);
            }
            Ok((key, mac))
        });
        match verified {
            Ok((key, request_mac)) => signer = Some(ResponseSigner::new(key, request_mac)),
            Err(rejected) => {
                if let Some(suppressed) = super::log_limit::TSIG_FAILED.allow() {
                    tracing::warn!(
                        %peer,
                        key = %found.key_name,
                        zone = %qname,
                        qtype = %qtype,
                        error = ?rejected,
                        suppressed,
                        "TSIG verification failed; request refused"
                    );
                }
                store.transfer_counters().tsig_failures.inc();
                let mut message = error_message(&request, ResponseCode::NoError);
                message[3] = (message[3] & 0xF0) | RCODE_NOTAUTH;
                tsig::append_unsigned_error(&mut message, found, rejected.error());
                return (vec![message], answered(qtype, u16::from(RCODE_NOTAUTH)));
            }
        }
    }

    if !matches!(qtype, RecordType::AXFR | RecordType::IXFR) {
        // A signed ordinary query (a secondary's SOA check): the usual
        // answer, signed.
        let mut out = Vec::new();
        let Some(result) = answer(snapshot, &unsigned, transport, config, &mut out) else {
            return (Vec::new(), answered(qtype, 0));
        };
        if let Some(signer) = &mut signer {
            signer.sign(&mut out, None);
        }
        return (vec![out], result);
    }

    let refuse = |reason: &str, signer: &mut Option<ResponseSigner<'_>>| {
        if let Some(suppressed) = super::log_limit::TRANSFER_REFUSED.allow() {
            tracing::info!(%peer, zone = %qname, qtype = %qtype, reason, suppressed, "zone transfer refused");
        }
        store.transfer_counters().refused.inc();
        let mut message = error_message(&request, ResponseCode::Refused);
        if let Some(signer) = signer {
            signer.sign(&mut message, None);
        }
        (vec![message], answered(qtype, 5))
    };
    let Some((policy, zone_name, state)) = zone.filter(|(_, apex, _)| *apex == qname) else {
        return refuse("not a zone offered for transfer", &mut signer);
    };
    if !policy.allows(peer) {
        return refuse("address not in spec.transfer.allow", &mut signer);
    }
    if !policy.keys.is_empty() && signer.is_none() {
        return refuse(
            "transfer not signed with a TSIG key of spec.transfer.tsigKeys",
            &mut signer,
        );
    }
    let (version, reply) = {
        let state = state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(version) = state.version.clone() else {
            drop(state);
            return refuse("zone not loaded yet", &mut signer);
        };
        let reply = match qtype {
            RecordType::AXFR => Reply::Full,
            _ => {
                let client_serial = request.authorities.iter().find_map(|r| match &r.data {
                    RData::SOA(soa) => Some(soa.serial),
                    _ => None,
                });
                match client_serial {
                    Some(serial) => plan_ixfr(&state, &version, serial),
                    // RFC 1995 §3: the authority section carries the
                    // client's SOA; without it, FORMERR.
                    None => {
                        drop(state);
                        return (vec![error_message(&request, ResponseCode::FormErr)], answered(qtype, 1));
                    }
                }
            }
        };
        (version, reply)
    };
    if transport == Transport::Udp && !matches!(reply, Reply::Soa) {
        // RFC 1995 §2: over UDP, only the SOA (the client retries over
        // TCP); AXFR is TCP only (RFC 5936 §4.2).
        if qtype == RecordType::AXFR {
            return refuse("AXFR over UDP", &mut signer);
        }
    }
    let id = request.metadata.id;
    let mut out = match reply {
        Reply::Full if transport == Transport::Tcp => {
            let mut records: Vec<&Record> = Vec::with_capacity(version.records.len() + 2);
            records.push(&version.soa);
            records.extend(version.records.iter().map(|(_, r)| r));
            records.push(&version.soa);
            store.transfer_counters().axfr.inc();
            tracing::info!(%peer, zone = %zone_name, serial = version.serial, records = version.records.len(), qtype = %qtype, "zone transfer (full)");
            messages(id, &query, &records)
        }
        Reply::Incremental(chain) if transport == Transport::Tcp => {
            let (deleted, added) = condense(&chain);
            let mut records: Vec<&Record> = Vec::with_capacity(deleted.len() + added.len() + 4);
            records.push(&version.soa);
            records.push(&chain[0].from_soa);
            records.extend(deleted.iter());
            records.push(&version.soa);
            records.extend(added.iter());
            records.push(&version.soa);
            store.transfer_counters().ixfr.inc();
            tracing::info!(
                %peer, zone = %zone_name, from = chain[0].from, to = version.serial,
                deleted = deleted.len(), added = added.len(), "zone transfer (incremental)"
            );
            messages(id, &query, &records)
        }
        _ => messages(id, &query, &[&version.soa]),
    };
    if let Some(signer) = &mut signer {
        for message in &mut out {
            signer.sign(message, None);
        }
    }
    (out, answered(qtype, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zone::content::ZoneContent;
    use crate::zone::tsig_key::{Algorithm, TsigKey};
    use crate::zone::version::TransferPolicy;
    use hickory_proto::rr::Name;

    /// A signed AXFR request sent again as it was, within its time window,
    /// is a replay: the first is answered, the copy gets NOTAUTH (BADTIME).
    #[test]
    fn a_replayed_signed_request_is_refused() {
        let key = TsigKey::new("xfr.example.", Algorithm::HmacSha256, b"secret".to_vec()).unwrap();
        let store = ZoneStore::new();
        let mut zone = ZoneContent::new(Name::from_ascii("example.com.").unwrap());
        zone.transfer = TransferPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            keys: vec![key.clone()],
            notify: Vec::new(),
        };
        store.publish(vec![zone]);
        let mut message = Message::new(0x1234, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(
            Name::from_ascii("example.com.").unwrap(),
            RecordType::AXFR,
        ));
        let mut packet = message.to_vec().unwrap();
        tsig::sign_request(&mut packet, &key);
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let config = AnswerConfig::default();
        let rcode = |replies: &[Vec<u8>]| replies.first().map(|r| r[3] & 0x0F);
        let (first, _) = handle(&store, &store.load(), &packet, peer, Transport::Tcp, &config);
        assert_eq!(rcode(&first), Some(0), "the first request is answered");
        let (again, _) = handle(&store, &store.load(), &packet, peer, Transport::Tcp, &config);
        assert_eq!(rcode(&again), Some(RCODE_NOTAUTH), "the copy is refused");
        // A new request, signed afresh, is answered.
        let mut fresh = message.to_vec().unwrap();
        fresh[0] = 0x43;
        tsig::sign_request(&mut fresh, &key);
        let (third, _) = handle(&store, &store.load(), &fresh, peer, Transport::Tcp, &config);
        assert_eq!(rcode(&third), Some(0));
    }
}
