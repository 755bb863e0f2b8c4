//! Invariants of the transfer path, whatever the request: zone transfers
//! (AXFR, IXFR) and TSIG-signed requests, which the listeners hand to
//! [`super::transfer::handle`]. Used by the fuzz target `transfer`
//! (`fuzz/`).

use std::net::IpAddr;

use hickory_proto::op::Message;

use crate::query::answer::{AnswerConfig, Transport};
use crate::zone::store::ZoneStore;

/// Hands `request` (from `peer`) to the transfer code over both transports
/// and checks what comes back: nothing for a packet shorter than a header
/// or with QR set; otherwise every message carries the request's ID, has
/// QR set, decodes with hickory-proto, and over UDP is a single message
/// within the largest payload allowed.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check_transfer(store: &ZoneStore, request: &[u8], peer: IpAddr) -> Result<(), String> {
    let config = AnswerConfig::default();
    let snapshot = store.load();
    for transport in [Transport::Udp, Transport::Tcp] {
        let (messages, _) = super::transfer::handle(store, &snapshot, request, peer, transport, &config);
        let must_drop = request.len() < 12 || request[2] & 0x80 != 0;
        if must_drop && !messages.is_empty() {
            return Err("responded to a non-query".into());
        }
        if transport == Transport::Udp && messages.len() > 1 {
            return Err(format!("{} messages over UDP", messages.len()));
        }
        for out in &messages {
            if out.len() < 12 {
                return Err(format!("response of {} octets", out.len()));
            }
            if out[0..2] != request[0..2] {
                return Err("ID not echoed".into());
            }
            if out[2] & 0x80 == 0 {
                return Err("QR clear".into());
            }
            if transport == Transport::Udp && out.len() > usize::from(config.max_udp_payload) {
                return Err(format!("UDP response of {} octets", out.len()));
            }
            Message::from_vec(out).map_err(|e| format!("response does not decode: {e}"))?;
        }
    }
    Ok(())
}
