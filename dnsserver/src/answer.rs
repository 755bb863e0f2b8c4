//! The query path: one request in, one response out, no allocation once
//! the output buffer has grown, no lock.
//!
//! This module reads only what it must from the request (RFC 1035 §4.1:
//! the header, the question, and the additional section's OPT RR of
//! RFC 6891 §6.1.2) and writes only the header, copied question and OPT
//! RR. Every resource record it sends was encoded by hickory-proto when the
//! snapshot was built. The hand-written scan exists because a full message
//! decode per query is what makes general-purpose servers several times
//! slower than Knot (DESIGN.md, "Embedded DNS server behaviour").

use hickory_proto::op::Query;
use hickory_proto::rr::RecordType;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::snapshot::Snapshot;

/// Size of the DNS header (RFC 1035 §4.1.1).
const HEADER_LEN: usize = 12;
/// Largest name in wire format (RFC 1035 §3.1).
const MAX_NAME_WIRE: usize = 255;
/// Smallest UDP payload every client accepts (RFC 1035 §4.2.1).
const MIN_UDP_PAYLOAD: u16 = 512;
/// OPT RR type (RFC 6891).
const TYPE_OPT: u16 = 41;
/// TSIG RR type (RFC 8945).
const TYPE_TSIG: u16 = 250;
const CLASS_IN: u16 = 1;
const CLASS_ANY: u16 = 255;

// Header flag bits (RFC 1035 §4.1.1, RFC 4035 §3.2 for CD).
const FLAG_QR: u8 = 0x80;
const FLAG_AA: u8 = 0x04;
const FLAG_TC: u8 = 0x02;
const FLAG_RD: u8 = 0x01;
const FLAG_CD: u8 = 0x10;

/// Response codes this path emits (RFC 1035 §4.1.1, RFC 6891 §9 for BADVERS).
pub mod rcode {
    /// No error.
    pub const NOERROR: u16 = 0;
    /// Format error.
    pub const FORMERR: u16 = 1;
    /// Name does not exist.
    pub const NXDOMAIN: u16 = 3;
    /// Opcode not implemented.
    pub const NOTIMP: u16 = 4;
    /// Refused (not authoritative for the name, or a zone transfer).
    pub const REFUSED: u16 = 5;
    /// Unsupported EDNS version (extended RCODE 16).
    pub const BADVERS: u16 = 16;
}

/// How the request arrived; decides the response size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: responses larger than the negotiated payload are truncated (TC).
    Udp,
    /// TCP (RFC 7766): up to 65535 octets.
    Tcp,
}

/// Server-side limits of the query path.
#[derive(Debug, Clone, Copy)]
pub struct AnswerConfig {
    /// Largest UDP response sent to EDNS clients, in octets (default 1232,
    /// the DNS Flag Day 2020 value). Non-EDNS clients get 512.
    pub max_udp_payload: u16,
}

impl Default for AnswerConfig {
    fn default() -> Self {
        AnswerConfig { max_udp_payload: 1232 }
    }
}

/// What happened to one request, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    /// QTYPE asked (0 when the question could not be read).
    pub qtype: u16,
    /// RCODE sent, extended RCODEs included (e.g. 16 for BADVERS).
    pub rcode: u16,
    /// TC was set.
    pub truncated: bool,
}

/// The EDNS facts of a request.
#[derive(Debug, Clone, Copy)]
struct Edns {
    payload: u16,
    dnssec_ok: bool,
}

/// The parsed request, all on the stack.
struct Request<'q> {
    packet: &'q [u8],
    /// Offset just after QCLASS.
    question_end: usize,
    /// Lower-cased QNAME in wire format.
    key: [u8; MAX_NAME_WIRE],
    key_len: usize,
    /// Offsets of each label's length octet inside `key`.
    label_starts: [u8; 128],
    labels: usize,
    qtype: u16,
    qclass: u16,
    edns: Option<Edns>,
    /// The OPT RR's version was not 0.
    bad_version: bool,
    /// The additional section ends with a TSIG RR (RFC 8945).
    tsig: bool,
}

/// Answers one request from `snapshot` into `out` (cleared first).
///
/// Returns `None` when the packet gets no response at all: shorter than a
/// header, or a response itself (QR set), which must never be answered
/// (that would let two servers loop).
///
/// Zone transfers get REFUSED and a TSIG RR is ignored here: the server's
/// listeners hand those requests to the transfer code instead.
pub fn answer(
    snapshot: &Snapshot,
    packet: &[u8],
    transport: Transport,
    config: &AnswerConfig,
    out: &mut Vec<u8>,
) -> Option<Answered> {
    answer_or_defer(snapshot, packet, transport, config, out, false).unwrap_or(None)
}

/// The request is for the transfer code (`crate::transfer::handle`): an
/// AXFR or IXFR, or a request signed with TSIG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deferred;

/// [`answer`], or `Err(Deferred)` when `defer` is set and the request is
/// for the transfer code.
#[inline]
pub(crate) fn answer_or_defer(
    snapshot: &Snapshot,
    packet: &[u8],
    transport: Transport,
    config: &AnswerConfig,
    out: &mut Vec<u8>,
    defer: bool,
) -> Result<Option<Answered>, Deferred> {
    out.clear();
    if packet.len() < HEADER_LEN || packet[2] & FLAG_QR != 0 {
        return Ok(None);
    }
    let opcode = (packet[2] >> 3) & 0x0F;
    let qdcount = u16::from_be_bytes([packet[4], packet[5]]);
    if opcode != 0 {
        // RFC 1035 §4.1.1: NOTIMP for opcodes we do not support; echo the
        // question when there is a readable one.
        let request = (qdcount == 1).then(|| parse(packet));
        let question = request
            .as_ref()
            .filter(|(_, status)| *status == Parsed::Ok)
            .map(|(r, _)| r);
        return Ok(Some(error_response(packet, question, rcode::NOTIMP, out)));
    }
    if qdcount != 1 {
        return Ok(Some(error_response(packet, None, rcode::FORMERR, out)));
    }
    let request = match parse(packet) {
        (request, Parsed::Ok) => request,
        (request, Parsed::QuestionOnly) => {
            return Ok(Some(error_response(packet, Some(&request), rcode::FORMERR, out)))
        }
        (_, Parsed::Unreadable) => return Ok(Some(error_response(packet, None, rcode::FORMERR, out))),
    };
    if defer && request.tsig {
        return Err(Deferred);
    }
    if request.bad_version {
        return Ok(Some(error_response(packet, Some(&request), rcode::BADVERS, out)));
    }
    if request.qtype == TYPE_OPT {
        return Ok(Some(error_response(packet, Some(&request), rcode::FORMERR, out)));
    }
    if request.qclass != CLASS_IN && request.qclass != CLASS_ANY {
        return Ok(Some(error_response(packet, Some(&request), rcode::REFUSED, out)));
    }
    if matches!(RecordType::from(request.qtype), RecordType::AXFR | RecordType::IXFR) {
        if defer {
            return Err(Deferred);
        }
        // Zone transfers are not offered here (RFC 5936 §2.2: a server may refuse).
        return Ok(Some(error_response(packet, Some(&request), rcode::REFUSED, out)));
    }
    let advertise = config.max_udp_payload.max(MIN_UDP_PAYLOAD);
    let size = match transport {
        Transport::Tcp => u16::MAX as usize,
        Transport::Udp => match request.edns {
            Some(edns) => edns.payload.clamp(MIN_UDP_PAYLOAD, advertise) as usize,
            None => MIN_UDP_PAYLOAD as usize,
        },
    };
    let limits = Limits { size, advertise };
    let key = &request.key[..request.key_len];
    if let Some(entry) = snapshot.lookup(key) {
        let bytes = snapshot.response(entry, request.qtype);
        return Ok(Some(finish_prerendered(&request, bytes, limits, out)));
    }
    // Not an owner name: find the closest existing ancestor.
    for label in 1..request.labels {
        let start = request.label_starts[label] as usize;
        let Some(entry) = snapshot.lookup(&request.key[start..request.key_len]) else {
            continue;
        };
        if entry.below_cut || entry.wildcard_child {
            return Ok(Some(slow_path(snapshot, &request, limits, out)));
        }
        let zone = &snapshot.zones[entry.zone as usize];
        let apex_label = request.labels - 1 - zone.apex_labels as usize;
        let apex_offset = HEADER_LEN + request.label_starts[apex_label] as usize;
        return Ok(Some(nxdomain(
            &request,
            apex_offset,
            &zone.negative_soa_tail,
            limits,
            out,
        )));
    }
    Ok(Some(error_response(packet, Some(&request), rcode::REFUSED, out)))
}

/// How far [`parse`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parsed {
    /// Header, question and additional section read.
    Ok,
    /// The question was read but the rest is malformed (FORMERR echoes it).
    QuestionOnly,
    /// Not even the question could be read.
    Unreadable,
}

/// Reads header, question and OPT.
fn parse(packet: &[u8]) -> (Request<'_>, Parsed) {
    let mut request = Request {
        packet,
        question_end: 0,
        key: [0; MAX_NAME_WIRE],
        key_len: 0,
        label_starts: [0; 128],
        labels: 0,
        qtype: 0,
        qclass: 0,
        edns: None,
        bad_version: false,
        tsig: false,
    };
    let mut pos = HEADER_LEN;
    loop {
        let Some(&len) = packet.get(pos) else {
            return (request, Parsed::Unreadable);
        };
        let len = len as usize;
        if len & 0xC0 != 0 {
            return (request, Parsed::Unreadable); // compression or extended labels in QNAME
        }
        if request.key_len + 1 + len > MAX_NAME_WIRE || request.labels >= request.label_starts.len() {
            return (request, Parsed::Unreadable);
        }
        let Some(label) = packet.get(pos + 1..pos + 1 + len) else {
            return (request, Parsed::Unreadable);
        };
        request.label_starts[request.labels] = request.key_len as u8;
        request.labels += 1;
        request.key[request.key_len] = len as u8;
        for (dst, src) in request.key[request.key_len + 1..request.key_len + 1 + len]
            .iter_mut()
            .zip(label)
        {
            *dst = src.to_ascii_lowercase();
        }
        request.key_len += 1 + len;
        pos += 1 + len;
        if len == 0 {
            break;
        }
    }
    let Some(fixed) = packet.get(pos..pos + 4) else {
        return (request, Parsed::Unreadable);
    };
    request.qtype = u16::from_be_bytes([fixed[0], fixed[1]]);
    request.qclass = u16::from_be_bytes([fixed[2], fixed[3]]);
    request.question_end = pos + 4;

    // Skip answer and authority RRs (a query should have none), then read
    // the additional section for OPT.
    let ancount = u16::from_be_bytes([packet[6], packet[7]]) as usize;
    let nscount = u16::from_be_bytes([packet[8], packet[9]]) as usize;
    let arcount = u16::from_be_bytes([packet[10], packet[11]]) as usize;
    let mut pos = request.question_end;
    for index in 0..ancount + nscount + arcount {
        let owner_root = packet.get(pos) == Some(&0);
        let Some(after_name) = skip_name(packet, pos) else {
            return (request, Parsed::QuestionOnly);
        };
        let Some(fixed) = packet.get(after_name..after_name + 10) else {
            return (request, Parsed::QuestionOnly);
        };
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let rdlen = u16::from_be_bytes([fixed[8], fixed[9]]) as usize;
        let next = after_name + 10 + rdlen;
        if next > packet.len() {
            return (request, Parsed::QuestionOnly);
        }
        if rtype == TYPE_OPT {
            // RFC 6891 §6.1.1: one OPT, in the additional section, owned by the root.
            if index < ancount + nscount || request.edns.is_some() || !owner_root {
                request.edns = None;
                return (request, Parsed::QuestionOnly);
            }
            let payload = u16::from_be_bytes([fixed[2], fixed[3]]);
            let version = fixed[5];
            request.edns = Some(Edns {
                payload,
                dnssec_ok: fixed[6] & 0x80 != 0,
            });
            request.bad_version = version != 0;
        }
        request.tsig = rtype == TYPE_TSIG;
        pos = next;
    }
    (request, Parsed::Ok)
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

/// Header bytes 2 and 3 for a response: QR, opcode and RD/CD copied.
fn response_flags(packet: &[u8], aa: bool, rcode: u16) -> [u8; 2] {
    let b2 = FLAG_QR | (packet[2] & (0x78 | FLAG_RD)) | if aa { FLAG_AA } else { 0 };
    let b3 = (packet[3] & FLAG_CD) | (rcode & 0x0F) as u8;
    [b2, b3]
}

fn write_header(out: &mut Vec<u8>, packet: &[u8], flags: [u8; 2], counts: [u16; 4]) {
    out.extend_from_slice(&packet[0..2]);
    out.extend_from_slice(&flags);
    for count in counts {
        out.extend_from_slice(&count.to_be_bytes());
    }
}

/// Appends the response OPT RR (RFC 6891 §6.1.2) and counts it.
fn push_opt(out: &mut Vec<u8>, edns: Edns, rcode: u16, max_payload: u16) {
    let payload = max_payload.max(MIN_UDP_PAYLOAD).to_be_bytes();
    let ext_rcode = (rcode >> 4) as u8;
    let do_bit = if edns.dnssec_ok { 0x80 } else { 0 };
    out.extend_from_slice(&[
        0,
        0,
        TYPE_OPT as u8,
        payload[0],
        payload[1],
        ext_rcode,
        0,
        do_bit,
        0,
        0,
        0,
    ]);
    let arcount = u16::from_be_bytes([out[10], out[11]]) + 1;
    out[10..12].copy_from_slice(&arcount.to_be_bytes());
}

/// Response size limit and the payload size we advertise in OPT.
#[derive(Clone, Copy)]
struct Limits {
    /// Largest response for this request, in octets.
    size: usize,
    /// The UDP payload size put in our OPT RR (RFC 6891 §6.2.5).
    advertise: u16,
}

/// Appends OPT when the request had one, and truncates a response that does
/// not fit to header + question (+ OPT) with TC set (RFC 1035 §4.2.1,
/// RFC 6891 §7): the client retries over TCP.
fn finish(request: &Request<'_>, rcode: u16, limits: Limits, out: &mut Vec<u8>) -> Answered {
    let opt_len = if request.edns.is_some() { 11 } else { 0 };
    let truncated = out.len() + opt_len > limits.size;
    if truncated {
        out.truncate(request.question_end);
        out[2] |= FLAG_TC;
        out[6..12].fill(0);
    }
    if let Some(edns) = request.edns {
        push_opt(out, edns, rcode, limits.advertise);
    }
    Answered {
        qtype: request.qtype,
        rcode,
        truncated,
    }
}

/// Copies a stored response and patches ID, flags and the question as asked.
fn finish_prerendered(request: &Request<'_>, stored: &[u8], limits: Limits, out: &mut Vec<u8>) -> Answered {
    out.extend_from_slice(stored);
    let packet = request.packet;
    out[0..2].copy_from_slice(&packet[0..2]);
    out[2] = (out[2] & !(FLAG_RD | 0x78)) | (packet[2] & FLAG_RD);
    out[3] = (out[3] & 0x0F) | (packet[3] & FLAG_CD);
    // The stored question has the same length (same name, lower case) and
    // a placeholder type for "any other type": copy the asked one in.
    out[HEADER_LEN..request.question_end].copy_from_slice(&packet[HEADER_LEN..request.question_end]);
    let rcode = u16::from(out[3] & 0x0F);
    finish(request, rcode, limits, out)
}

/// NXDOMAIN with the zone's SOA in the authority section (RFC 2308 §2.1),
/// its owner a compression pointer to the apex inside the question.
fn nxdomain(request: &Request<'_>, apex_offset: usize, soa_tail: &[u8], limits: Limits, out: &mut Vec<u8>) -> Answered {
    let packet = request.packet;
    write_header(out, packet, response_flags(packet, true, rcode::NXDOMAIN), [1, 0, 1, 0]);
    out.extend_from_slice(&packet[HEADER_LEN..request.question_end]);
    let pointer = 0xC000 | apex_offset as u16;
    out.extend_from_slice(&pointer.to_be_bytes());
    out.extend_from_slice(soa_tail);
    finish(request, rcode::NXDOMAIN, limits, out)
}

/// Rare answers rendered at query time: wildcard synthesis (RFC 4592) and
/// names below a zone cut (referrals).
fn slow_path(snapshot: &Snapshot, request: &Request<'_>, limits: Limits, out: &mut Vec<u8>) -> Answered {
    let packet = request.packet;
    let mut decoder = BinDecoder::new(&packet[HEADER_LEN..request.question_end]);
    let rendered = Query::read(&mut decoder)
        .ok()
        .and_then(|q| snapshot.render_now(&q.name, q.query_type));
    match rendered {
        Some(bytes) => finish_prerendered(request, &bytes, limits, out),
        None => error_response(packet, Some(request), rcode::REFUSED, out),
    }
}

/// A response with no records: header, the question when readable, and
/// OPT when the request had one.
fn error_response(packet: &[u8], request: Option<&Request<'_>>, rcode: u16, out: &mut Vec<u8>) -> Answered {
    // Error responses are tiny: no size limit applies.
    out.clear();
    let qdcount = u16::from(request.is_some());
    write_header(out, packet, response_flags(packet, false, rcode), [qdcount, 0, 0, 0]);
    let mut answered = Answered {
        qtype: 0,
        rcode,
        truncated: false,
    };
    if let Some(request) = request {
        out.extend_from_slice(&packet[HEADER_LEN..request.question_end]);
        answered.qtype = request.qtype;
        if let Some(edns) = request.edns {
            push_opt(out, edns, rcode, AnswerConfig::default().max_udp_payload);
        }
    }
    answered
}
