//! Invariants every response must satisfy, whatever the request. Used by
//! the fuzz target (`fuzz/`) and by the tests that feed random packets.

use hickory_proto::op::Message;

use super::answer::{answer, AnswerConfig, Transport};
use crate::zone::snapshot::Snapshot;

/// Answers `request` over both transports and checks the responses:
/// no response for packets shorter than a header or with QR set; otherwise
/// the ID is echoed, QR is set, RA is clear, the opcode is echoed, the
/// response decodes with hickory-proto, a UDP response fits the largest
/// payload we allow, and a question that is echoed is echoed byte for byte.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check_answer(snapshot: &Snapshot, request: &[u8]) -> Result<(), String> {
    check(snapshot, request, None)
}

/// [`check_answer`] for a request from `source`: the path of names under
/// a traffic policy that place the client by its address or EDNS Client
/// Subnet (RFC 7871), and of signed zones, which sign a policy's answer
/// when it is made.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check_answer_from(snapshot: &Snapshot, request: &[u8], source: std::net::IpAddr) -> Result<(), String> {
    check(snapshot, request, Some(source))
}

fn check(snapshot: &Snapshot, request: &[u8], source: Option<std::net::IpAddr>) -> Result<(), String> {
    let config = AnswerConfig::default();
    let mut out = Vec::new();
    for transport in [Transport::Udp, Transport::Tcp] {
        let answered = match source {
            Some(source) => super::answer::answer_from(snapshot, request, transport, &config, source, &mut out),
            None => answer(snapshot, request, transport, &config, &mut out),
        };
        let must_drop = request.len() < 12 || request[2] & 0x80 != 0;
        match (answered, must_drop) {
            (None, true) => continue,
            (None, false) => return Err("no response to a query".into()),
            (Some(_), true) => return Err("responded to a non-query".into()),
            (Some(_), false) => {}
        }
        if out.len() < 12 {
            return Err(format!("response of {} octets", out.len()));
        }
        if out[0..2] != request[0..2] {
            return Err("ID not echoed".into());
        }
        if out[2] & 0x80 == 0 || out[3] & 0x80 != 0 {
            return Err("QR clear or RA set".into());
        }
        if (out[2] >> 3) & 0x0F != (request[2] >> 3) & 0x0F {
            return Err("opcode not echoed".into());
        }
        if transport == Transport::Udp && out.len() > config.max_udp_payload as usize {
            return Err(format!("UDP response of {} octets", out.len()));
        }
        let message = Message::from_vec(&out).map_err(|e| format!("response does not decode: {e}"))?;
        if let Some(question) = message.queries.first() {
            let echoed = &out[12..12 + question.name.len() + 1];
            let len = echoed.len().min(request.len().saturating_sub(12));
            if echoed != &request[12..12 + len] {
                return Err("question not echoed as asked".into());
            }
        }
    }
    Ok(())
}
