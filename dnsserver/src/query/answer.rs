//! The query path: one request in, one response out, no allocation once
//! the output buffer has grown, no lock.
//!
//! This module reads only what it must from the request (RFC 1035 §4.1:
//! the header, the question, and the additional section's OPT RR of
//! RFC 6891 §6.1.2) and writes only the header, copied question and OPT
//! RR. Every resource record it sends was encoded by hickory-proto when the
//! snapshot was built. The hand-written scan exists because a full message
//! decode per query is what makes general-purpose servers several times
//! slower than Knot (`bench/dns-qps.sh` compares the two).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hickory_proto::op::Query;
use hickory_proto::rr::RecordType;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

use crate::metrics::AnswerKind;
pub use crate::metrics::{Answered, Transport};
use crate::zone::dnssec::{ZoneKeys, MAX_SIGNATURE};
use crate::zone::nsec_chain::{canonical_key, NsecChain, MAX_CANONICAL_KEY};
use crate::zone::snapshot::{Snapshot, Tail, SERIAL_FROM_END};

/// Size of the DNS header (RFC 1035 §4.1.1).
const HEADER_LEN: usize = 12;
/// Largest name in wire format (RFC 1035 §3.1).
const MAX_NAME_WIRE: usize = 255;
/// Smallest UDP payload every client accepts (RFC 1035 §4.2.1).
const MIN_UDP_PAYLOAD: u16 = 512;
/// OPT RR type (RFC 6891).
const TYPE_OPT: u16 = 41;
/// CNAME RR type (RFC 1035 §3.2.2).
const TYPE_CNAME: u16 = 5;
/// TSIG RR type (RFC 8945).
const TYPE_TSIG: u16 = 250;
/// NXNAME meta-type (RFC 9824 §5).
const TYPE_NXNAME: u16 = 128;
/// EDNS option code of Client Subnet (RFC 7871 §6).
const OPTION_ECS: u16 = 8;
/// ECS address families (IANA Address Family Numbers).
const FAMILY_IPV4: u16 = 1;
const FAMILY_IPV6: u16 = 2;
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
    /// Server failure (a signature could not be made).
    pub const SERVFAIL: u16 = 2;
    /// Name does not exist.
    pub const NXDOMAIN: u16 = 3;
    /// Opcode not implemented.
    pub const NOTIMP: u16 = 4;
    /// Refused (not authoritative for the name, or a zone transfer).
    pub const REFUSED: u16 = 5;
    /// Unsupported EDNS version (extended RCODE 16).
    pub const BADVERS: u16 = 16;
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

/// The EDNS facts of a request.
#[derive(Debug, Clone, Copy)]
struct Edns {
    payload: u16,
    dnssec_ok: bool,
    /// The CO bit (RFC 9824 §4): the client takes NXDOMAIN with a
    /// compact-denial NSEC.
    compact_ok: bool,
}

/// An EDNS Client Subnet option of a request (RFC 7871 §6), as given.
#[derive(Debug, Clone, Copy)]
struct ClientSubnet {
    family: u16,
    /// SOURCE PREFIX-LENGTH.
    source: u8,
    /// ADDRESS, zero-padded to 16 octets.
    address: [u8; 16],
    /// Octets of ADDRESS sent (ceil(source / 8)).
    address_len: u8,
}

impl ClientSubnet {
    /// The client address the option stands for; `None` for SOURCE
    /// PREFIX-LENGTH 0 (RFC 7871 §7.1.2: no client information; the
    /// answer is the one for everybody, with SCOPE 0).
    fn client(&self) -> Option<IpAddr> {
        if self.source == 0 {
            return None;
        }
        Some(match self.family {
            FAMILY_IPV4 => IpAddr::V4(Ipv4Addr::new(
                self.address[0],
                self.address[1],
                self.address[2],
                self.address[3],
            )),
            _ => IpAddr::V6(Ipv6Addr::from(self.address)),
        })
    }

    /// Length of the option in a response (code, length, data).
    fn wire_len(&self) -> usize {
        4 + 4 + self.address_len as usize
    }
}

/// Reads one ECS option's data; `None` when it is malformed (RFC 7871 §6:
/// unknown FAMILY, SOURCE PREFIX-LENGTH too long for the family, too few
/// or too many ADDRESS octets, or address bits set beyond the prefix).
fn parse_client_subnet(data: &[u8]) -> Option<ClientSubnet> {
    let family = u16::from_be_bytes([*data.first()?, *data.get(1)?]);
    let source = *data.get(2)?;
    let address = data.get(4..)?;
    let max = match family {
        FAMILY_IPV4 => 32,
        FAMILY_IPV6 => 128,
        _ => return None,
    };
    if source > max || address.len() != (source as usize).div_ceil(8) {
        return None;
    }
    if source % 8 != 0 {
        let last = address[address.len() - 1];
        if last & (0xFF >> (source % 8)) != 0 {
            return None;
        }
    }
    let mut subnet = ClientSubnet {
        family,
        source,
        address: [0; 16],
        address_len: address.len() as u8,
    };
    subnet.address[..address.len()].copy_from_slice(address);
    Some(subnet)
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
    /// The OPT RR's Client Subnet option, if any.
    ecs: Option<ClientSubnet>,
    /// An ECS option was malformed (FORMERR, RFC 7871 §7.1.2 / §6).
    bad_ecs: bool,
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
    answer_or_defer(snapshot, packet, transport, config, None, out, false).unwrap_or(None)
}

/// [`answer`] for a request that came from `source`: names under a
/// `Nearest` policy place the client by its EDNS Client Subnet option
/// (RFC 7871), else by `source`.
pub fn answer_from(
    snapshot: &Snapshot,
    packet: &[u8],
    transport: Transport,
    config: &AnswerConfig,
    source: IpAddr,
    out: &mut Vec<u8>,
) -> Option<Answered> {
    answer_or_defer(snapshot, packet, transport, config, Some(source), out, false).unwrap_or(None)
}

/// The request is for the transfer code (`crate::xfr::transfer::handle`): an
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
    source: Option<IpAddr>,
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
    if request.bad_ecs {
        return Ok(Some(error_response(packet, Some(&request), rcode::FORMERR, out)));
    }
    // OPT is no question; NXNAME is a meta-type that only NSEC type
    // bitmaps carry, and RFC 9824 §3.5 has servers answer an explicit
    // query for it with FORMERR (whatever the DO bit or denial mode).
    if request.qtype == TYPE_OPT || request.qtype == TYPE_NXNAME {
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
    if snapshot.is_pending(key) {
        // A name the server cannot answer yet (`ZoneContent::pending`).
        return Ok(Some(error_response(packet, Some(&request), rcode::SERVFAIL, out)));
    }
    if let Some(found) = snapshot.lookup(key) {
        let client = match &request.ecs {
            Some(ecs) => ecs.client(),
            None => source,
        };
        let (bytes, scope, tail) = snapshot.response(&found, request.qtype, client, request.dnssec_ok());
        return Ok(Some(finish_prerendered(&request, bytes, tail, limits, scope, out)));
    }
    // Not an owner name: find the closest existing ancestor.
    for label in 1..request.labels {
        let start = request.label_starts[label] as usize;
        let Some(found) = snapshot.lookup(&request.key[start..request.key_len]) else {
            continue;
        };
        let entry = found.entry;
        if entry.below_cut || entry.wildcard_child {
            return Ok(Some(slow_path(snapshot, &request, limits, out)));
        }
        let zone = &snapshot.zones[entry.zone as usize];
        if let (Some(keys), true) = (&zone.dnssec, request.dnssec_ok()) {
            if let Some(chain) = &zone.nsec_chain {
                return Ok(Some(chain_denial(
                    &request,
                    chain,
                    start,
                    zone.soa_tail_now(keys),
                    limits,
                    out,
                )));
            }
            return Ok(Some(compact_denial(
                &request,
                keys,
                zone.soa_tail_now(keys),
                limits,
                out,
            )));
        }
        let apex_label = request.labels - 1 - zone.apex_labels as usize;
        let apex_offset = HEADER_LEN + request.label_starts[apex_label] as usize;
        let serial = zone.pending.map(|_| zone.serial_now());
        return Ok(Some(nxdomain(
            &request,
            apex_offset,
            &zone.negative_soa_tail,
            serial,
            limits,
            out,
        )));
    }
    Ok(Some(error_response(packet, Some(&request), rcode::REFUSED, out)))
}

impl Request<'_> {
    /// The DO bit (RFC 3225): the client wants DNSSEC records.
    #[inline]
    fn dnssec_ok(&self) -> bool {
        self.edns.is_some_and(|e| e.dnssec_ok)
    }
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
        ecs: None,
        bad_ecs: false,
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
                compact_ok: fixed[6] & 0x40 != 0,
            });
            request.bad_version = version != 0;
            // Options (RFC 6891 §6.1.2): code, length, data.
            let mut options = &packet[after_name + 10..next];
            while options.len() >= 4 {
                let code = u16::from_be_bytes([options[0], options[1]]);
                let len = u16::from_be_bytes([options[2], options[3]]) as usize;
                let Some(data) = options.get(4..4 + len) else {
                    request.bad_ecs = code == OPTION_ECS;
                    break;
                };
                if code == OPTION_ECS && request.ecs.is_none() {
                    request.ecs = parse_client_subnet(data);
                    request.bad_ecs |= request.ecs.is_none();
                }
                options = &options[4 + len..];
            }
        }
        request.tsig = rtype == TYPE_TSIG;
        pos = next;
    }
    (request, Parsed::Ok)
}

/// The shape of `response` (a whole DNS message, RFC 1035 §4.1), for
/// metrics: read from the header, the question and the first answer RR's
/// TYPE, without allocating.
pub fn answer_kind(response: &[u8]) -> AnswerKind {
    if response.len() < HEADER_LEN || response[2] & FLAG_TC != 0 {
        return AnswerKind::Other;
    }
    let ancount = u16::from_be_bytes([response[6], response[7]]);
    let qdcount = u16::from_be_bytes([response[4], response[5]]);
    match response[3] & 0x0F {
        3 => return AnswerKind::NxDomain,
        0 if ancount == 0 => return AnswerKind::NoData,
        0 if qdcount == 1 => {}
        _ => return AnswerKind::Other,
    }
    let Some(question_end) = skip_name(response, HEADER_LEN).map(|end| end + 4) else {
        return AnswerKind::Other;
    };
    let (Some(qtype), Some(first)) = (
        response.get(question_end - 4..question_end - 2),
        skip_name(response, question_end).and_then(|end| response.get(end..end + 2)),
    ) else {
        return AnswerKind::Other;
    };
    let cname = TYPE_CNAME.to_be_bytes();
    if first == cname && qtype != cname {
        AnswerKind::Cname
    } else {
        AnswerKind::Records
    }
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

/// Appends the response OPT RR (RFC 6891 §6.1.2) and counts it; with
/// `ecs`, the request's Client Subnet option echoed with the SCOPE
/// PREFIX-LENGTH the answer holds for (RFC 7871 §7.2.1).
fn push_opt(out: &mut Vec<u8>, edns: Edns, rcode: u16, max_payload: u16, ecs: Option<(&ClientSubnet, u8)>) {
    let payload = max_payload.max(MIN_UDP_PAYLOAD).to_be_bytes();
    let ext_rcode = (rcode >> 4) as u8;
    // DO echoed (RFC 3225 §3), CO echoed (RFC 9824 §4).
    let do_bit = if edns.dnssec_ok { 0x80 } else { 0 } | if edns.compact_ok { 0x40 } else { 0 };
    let rdlen = ecs.map_or(0, |(e, _)| e.wire_len() as u16).to_be_bytes();
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
        rdlen[0],
        rdlen[1],
    ]);
    if let Some((subnet, scope)) = ecs {
        let len = (4 + subnet.address_len as u16).to_be_bytes();
        let family = subnet.family.to_be_bytes();
        out.extend_from_slice(&[
            0,
            OPTION_ECS as u8,
            len[0],
            len[1],
            family[0],
            family[1],
            subnet.source,
            scope,
        ]);
        out.extend_from_slice(&subnet.address[..subnet.address_len as usize]);
    }
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
fn finish(request: &Request<'_>, rcode: u16, limits: Limits, scope: u8, out: &mut Vec<u8>) -> Answered {
    let ecs_len = request.ecs.as_ref().map_or(0, ClientSubnet::wire_len);
    let opt_len = if request.edns.is_some() { 11 + ecs_len } else { 0 };
    let truncated = out.len() + opt_len > limits.size;
    if truncated {
        out.truncate(request.question_end);
        out[2] |= FLAG_TC;
        out[6..12].fill(0);
    }
    if let Some(edns) = request.edns {
        push_opt(
            out,
            edns,
            rcode,
            limits.advertise,
            request.ecs.as_ref().map(|e| (e, scope)),
        );
    }
    Answered {
        qtype: request.qtype,
        rcode,
        truncated,
    }
}

/// Copies a stored response and patches ID, flags, the question as asked
/// and, when `serial` is given, the SERIAL of the SOA RR that ends it.
fn finish_prerendered(
    request: &Request<'_>,
    stored: &[u8],
    tail: Tail<'_>,
    limits: Limits,
    scope: u8,
    out: &mut Vec<u8>,
) -> Answered {
    out.extend_from_slice(stored);
    match tail {
        Tail::None => {}
        Tail::Serial(serial) => {
            if let Some(at) = out.len().checked_sub(SERIAL_FROM_END) {
                out[at..at + 4].copy_from_slice(&serial.to_be_bytes());
            }
        }
        Tail::SignedSoa(soa) if out.len() >= HEADER_LEN => {
            // Two RRs (SOA, RRSIG) at the end: the authority section, or
            // the answer section of an SOA query (nothing follows either).
            out.extend_from_slice(soa);
            let section = if u16::from_be_bytes([out[8], out[9]]) > 0 { 8 } else { 6 };
            let count = u16::from_be_bytes([out[section], out[section + 1]]).saturating_add(2);
            out[section..section + 2].copy_from_slice(&count.to_be_bytes());
        }
        Tail::SignedSoa(_) => {}
    }
    let packet = request.packet;
    out[0..2].copy_from_slice(&packet[0..2]);
    out[2] = (out[2] & !(FLAG_RD | 0x78)) | (packet[2] & FLAG_RD);
    out[3] = (out[3] & 0x0F) | (packet[3] & FLAG_CD);
    // The stored question has the same length (same name, lower case) and
    // a placeholder type for "any other type": copy the asked one in.
    out[HEADER_LEN..request.question_end].copy_from_slice(&packet[HEADER_LEN..request.question_end]);
    let rcode = u16::from(out[3] & 0x0F);
    finish(request, rcode, limits, scope, out)
}

/// NXDOMAIN with the zone's SOA in the authority section (RFC 2308 §2.1),
/// its owner a compression pointer to the apex inside the question.
fn nxdomain(
    request: &Request<'_>,
    apex_offset: usize,
    soa_tail: &[u8],
    serial: Option<u32>,
    limits: Limits,
    out: &mut Vec<u8>,
) -> Answered {
    let packet = request.packet;
    write_header(out, packet, response_flags(packet, true, rcode::NXDOMAIN), [1, 0, 1, 0]);
    out.extend_from_slice(&packet[HEADER_LEN..request.question_end]);
    let pointer = 0xC000 | apex_offset as u16;
    out.extend_from_slice(&pointer.to_be_bytes());
    out.extend_from_slice(soa_tail);
    // The tail ends with the SOA's RDATA: SERIAL is 20 octets from its end.
    if let Some(serial) = serial {
        if let Some(at) = out.len().checked_sub(SERIAL_FROM_END) {
            out[at..at + 4].copy_from_slice(&serial.to_be_bytes());
        }
    }
    finish(request, rcode::NXDOMAIN, limits, 0, out)
}

/// RR TYPE numbers written by [`compact_denial`] (RFC 4034 §§3, 4).
const TYPE_RRSIG: u16 = 46;
const TYPE_NSEC: u16 = 47;
/// Room for the signed data of a query-time NSEC: RRSIG RDATA without
/// the signature (18 + signer ≤ 255), owner (≤ 255), type, class, TTL,
/// RDLENGTH (10), RDATA (next name ≤ 257, bitmap ≤ 34).
const NSEC_TBS_MAX: usize = 18 + 255 + 255 + 10 + 257 + 34;

/// A name of a signed zone that does not exist, asked with DO: RFC 9824
/// compact denial. NOERROR (NXDOMAIN when the request has the CO bit,
/// RFC 9824 §4), no answer; in the authority section an NSEC
/// at the query name (next name `\000.<qname>`, types RRSIG NSEC NXNAME)
/// signed now, then the zone's signed SOA. Owner names are compression
/// pointers to the question. The signed data is assembled on the stack
/// from bytes hickory-proto encoded at build time ([`ZoneKeys`]) and the
/// lower-cased query name; no heap allocation.
fn compact_denial(
    request: &Request<'_>,
    keys: &ZoneKeys,
    soa_tail: &[u8],
    limits: Limits,
    out: &mut Vec<u8>,
) -> Answered {
    let packet = request.packet;
    let qname = &request.key[..request.key_len];
    // RRSIG Labels (RFC 4034 §3.1.3): labels of the owner without the
    // root and a leading `*`.
    let wildcard = qname.starts_with(b"\x01*");
    let labels = request.labels.saturating_sub(1 + usize::from(wildcard)) as u8;
    let apex_len = keys.apex_wire_len;
    let mut next = [0u8; MAX_NAME_WIRE];
    let Some(next_len) = successor(qname, apex_len, &mut next) else {
        return error_response(packet, Some(request), rcode::SERVFAIL, out);
    };
    let next = &next[..next_len];
    let rdata_len = next_len + keys.nxname_bitmap.len();
    let mut tbs = [0u8; NSEC_TBS_MAX];
    let mut at = 0;
    let mut put = |tbs: &mut [u8; NSEC_TBS_MAX], bytes: &[u8]| {
        if let Some(dst) = tbs.get_mut(at..at + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        at += bytes.len();
    };
    put(&mut tbs, &keys.nsec_rrsig_prefix);
    if let Some(field) = tbs.get_mut(keys.labels_at) {
        *field = labels;
    }
    let ttl = keys.nsec_ttl.to_be_bytes();
    let rdlen = (rdata_len as u16).to_be_bytes();
    put(&mut tbs, qname);
    put(&mut tbs, &TYPE_NSEC.to_be_bytes());
    put(&mut tbs, &CLASS_IN.to_be_bytes());
    put(&mut tbs, &ttl);
    put(&mut tbs, &rdlen);
    put(&mut tbs, next);
    put(&mut tbs, &keys.nxname_bitmap);
    let mut signature = [0u8; MAX_SIGNATURE];
    let signed = tbs.get(..at).and_then(|data| keys.sign(data, &mut signature));
    let Some(sig_len) = signed else {
        return error_response(packet, Some(request), rcode::SERVFAIL, out);
    };
    let rcode = if request.edns.is_some_and(|e| e.compact_ok) {
        rcode::NXDOMAIN
    } else {
        rcode::NOERROR
    };
    write_header(out, packet, response_flags(packet, true, rcode), [1, 0, 4, 0]);
    out.extend_from_slice(&packet[HEADER_LEN..request.question_end]);
    let owner = (0xC000u16 | HEADER_LEN as u16).to_be_bytes();
    // NSEC RR.
    out.extend_from_slice(&owner);
    out.extend_from_slice(&TYPE_NSEC.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl);
    out.extend_from_slice(&rdlen);
    out.extend_from_slice(next);
    out.extend_from_slice(&keys.nxname_bitmap);
    // Its RRSIG.
    out.extend_from_slice(&owner);
    out.extend_from_slice(&TYPE_RRSIG.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl);
    let rrsig_len = (keys.nsec_rrsig_prefix.len() + sig_len) as u16;
    out.extend_from_slice(&rrsig_len.to_be_bytes());
    let prefix_at = out.len();
    out.extend_from_slice(&keys.nsec_rrsig_prefix);
    out[prefix_at + keys.labels_at] = labels;
    out.extend_from_slice(&signature[..sig_len]);
    out.extend_from_slice(soa_tail);
    finish(request, rcode, limits, 0, out)
}

/// Writes into `out` the immediate successor in canonical order (RFC 4034
/// §6.1) of the lower-cased wire-format name `name`, among names of at
/// most 255 octets, and returns its length: the next name of a
/// compact-denial NSEC (RFC 9824 §3.1, the successor of RFC 4470 §3.1.2),
/// derived as RFC 4471 §3.1.2 (absolute method) does:
///
/// 1. `\000.<name>` when it fits in 255 octets (every name but the
///    longest: 254 and 255 octets);
/// 2. else, with a first label shorter than 63 octets and a 254-octet
///    name, a zero octet appended to the first label (no name lies in
///    between: every name below `name` would pass 255 octets);
/// 3. else the first label's last octet incremented, trailing 0xff
///    octets dropped first, a label left empty removed and the next one
///    incremented instead; an increment landing on an upper-case letter
///    goes on past `Z` (canonical order compares letters in lower case).
///
/// `None` when the successor would leave the zone (the increments reach
/// the apex, `apex_len` octets at the end of `name`) or `name` is malformed.
fn successor(name: &[u8], apex_len: usize, out: &mut [u8; MAX_NAME_WIRE]) -> Option<usize> {
    if name.len() + 2 <= MAX_NAME_WIRE {
        out[0] = 1;
        out[1] = 0;
        out.get_mut(2..2 + name.len())?.copy_from_slice(name);
        return Some(2 + name.len());
    }
    let first = *name.first()? as usize;
    if first < 63 && name.len() < MAX_NAME_WIRE {
        out[0] = first as u8 + 1;
        out[1..=first].copy_from_slice(name.get(1..=first)?);
        out[first + 1] = 0;
        out.get_mut(first + 2..name.len() + 1)?
            .copy_from_slice(name.get(first + 1..)?);
        return Some(name.len() + 1);
    }
    // Increment: try the first label, then each next one above it.
    let mut start = 0;
    while name.len() - start > apex_len {
        let len = *name.get(start)? as usize;
        let label = name.get(start + 1..start + 1 + len)?;
        let rest = name.get(start + 1 + len..)?;
        let kept = label.iter().rposition(|&octet| octet != 0xff).map(|at| at + 1);
        if let Some(kept) = kept {
            out[0] = kept as u8;
            out[1..=kept].copy_from_slice(&label[..kept]);
            let last = &mut out[kept];
            *last += 1;
            if last.is_ascii_uppercase() {
                *last = b'Z' + 1;
            }
            out.get_mut(kept + 1..kept + 1 + rest.len())?.copy_from_slice(rest);
            return Some(kept + 1 + rest.len());
        }
        start += 1 + len;
    }
    None
}

/// A name of a signed zone denying by NSEC chain that does not exist,
/// asked with DO (RFC 4035 §3.1.3.2): NXDOMAIN with, in the authority
/// section, the zone's signed SOA, the NSEC covering the query name and
/// the NSEC covering the wildcard at its closest encloser (which begins at
/// octet `encloser` of the query name), once when both are the same link.
/// Every link was signed when the snapshot was built: this copies bytes
/// and allocates nothing beyond `out`.
fn chain_denial(
    request: &Request<'_>,
    chain: &NsecChain,
    encloser: usize,
    soa_tail: &[u8],
    limits: Limits,
    out: &mut Vec<u8>,
) -> Answered {
    let packet = request.packet;
    let qname = &request.key[..request.key_len];
    let mut key = [0u8; MAX_CANONICAL_KEY];
    let covering = canonical_key(qname, &mut key).and_then(|len| chain.covering(&key[..len]));
    let Some(covering) = covering else {
        return error_response(packet, Some(request), rcode::SERVFAIL, out);
    };
    // `*.<closest encloser>`; a name that would pass 255 octets cannot
    // exist, so it needs no proof.
    let encloser_wire = qname.get(encloser..).unwrap_or_default();
    let mut wildcard = [0u8; MAX_NAME_WIRE];
    let wildcard_link = wildcard
        .get_mut(..2 + encloser_wire.len())
        .and_then(|name| {
            name[0] = 1;
            name[1] = b'*';
            name[2..].copy_from_slice(encloser_wire);
            canonical_key(name, &mut key)
        })
        .and_then(|len| chain.covering(&key[..len]))
        .filter(|link| !std::ptr::eq(link.as_ptr(), covering.as_ptr()));
    let nscount = 4 + 2 * u16::from(wildcard_link.is_some());
    write_header(
        out,
        packet,
        response_flags(packet, true, rcode::NXDOMAIN),
        [1, 0, nscount, 0],
    );
    out.extend_from_slice(&packet[HEADER_LEN..request.question_end]);
    out.extend_from_slice(soa_tail);
    out.extend_from_slice(covering);
    if let Some(link) = wildcard_link {
        out.extend_from_slice(link);
    }
    finish(request, rcode::NXDOMAIN, limits, 0, out)
}

/// Rare answers rendered at query time: wildcard synthesis (RFC 4592) and
/// names below a zone cut (referrals).
fn slow_path(snapshot: &Snapshot, request: &Request<'_>, limits: Limits, out: &mut Vec<u8>) -> Answered {
    let packet = request.packet;
    let mut decoder = BinDecoder::new(&packet[HEADER_LEN..request.question_end]);
    let rendered = Query::read(&mut decoder)
        .ok()
        .and_then(|q| snapshot.render_now(&q.name, q.query_type, request.dnssec_ok()));
    match rendered {
        Some(bytes) => finish_prerendered(request, &bytes, Tail::None, limits, 0, out),
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
            push_opt(out, edns, rcode, AnswerConfig::default().max_udp_payload, None);
        }
    }
    answered
}
