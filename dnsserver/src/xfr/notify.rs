//! NOTIFY (RFC 1996): on every serial change of a transfer-enabled zone,
//! each address of its `notify` list is told, over UDP, retried with
//! exponential backoff until it answers (RFC 1996 §3.6); a newer serial
//! replaces a NOTIFY still being retried. Signed with the zone's first
//! TSIG key when it has keys.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use tokio::net::UdpSocket;
use tokio::task::AbortHandle;

use super::tsig;
use crate::zone::store::ZoneStore;
use crate::zone::tsig_key::TsigKey;

/// First wait for an answer; doubles per attempt up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(500);
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Attempts before giving up (about 15 minutes with the waits above).
const ATTEMPTS: u32 = 20;

/// A message ID no one off the path can guess (RFC 5452 §9.2 asks it of
/// resolvers; an unsigned NOTIFY's answer is accepted on its ID and source
/// address), from the operating system's random source (`ring`).
fn next_id() -> u16 {
    use ring::rand::SecureRandom as _;
    let mut id = [0u8; 2];
    if ring::rand::SystemRandom::new().fill(&mut id).is_err() {
        // No random source: still vary, by the clock.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        return nanos as u16;
    }
    u16::from_be_bytes(id)
}

/// Runs until the store is dropped: sends NOTIFYs as serials change.
pub(crate) async fn notify_loop(store: Arc<ZoneStore>) {
    let mut changes = store.transfer_changes();
    let mut pending: HashMap<(Name, SocketAddr), (u32, AbortHandle)> = HashMap::new();
    loop {
        let mut wanted = Vec::new();
        for (apex, policy, serial) in store.transfer_zones() {
            let Some((serial, soa)) = serial else {
                continue;
            };
            for target in &policy.notify {
                let key = (apex.clone(), *target);
                wanted.push(key.clone());
                if pending.get(&key).map(|(s, _)| *s) == Some(serial) {
                    continue;
                }
                if let Some((_, old)) = pending.remove(&key) {
                    old.abort();
                }
                let task = tokio::spawn(notify_one(
                    store.clone(),
                    apex.clone(),
                    soa.clone(),
                    *target,
                    policy.keys.first().cloned(),
                ));
                pending.insert(key, (serial, task.abort_handle()));
            }
        }
        pending.retain(|key, (_, task)| {
            let keep = wanted.contains(key);
            if !keep {
                task.abort();
            }
            keep
        });
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The NOTIFY request for `apex` (RFC 1996 §3.7: QTYPE SOA, AA set; the
/// new SOA in the answer section, §3.7's hint that BIND acts on).
fn request(apex: &Name, soa: &Record, id: u16) -> Vec<u8> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Notify);
    message.metadata.authoritative = true;
    let mut query = Query::query(apex.clone(), RecordType::SOA);
    query.query_class = DNSClass::IN;
    message.add_query(query);
    message.add_answer(soa.clone());
    message.to_vec().unwrap_or_default()
}

/// How one attempt ended.
enum Attempt {
    Acked,
    /// Answered with an error: retrying would not help.
    Rejected(u8),
    NoAnswer,
}

async fn attempt(
    socket: &UdpSocket,
    target: SocketAddr,
    packet: &[u8],
    id: u16,
    key: Option<(&TsigKey, &[u8])>,
    wait: Duration,
) -> Attempt {
    if let Err(e) = socket.send_to(packet, target).await {
        tracing::debug!(%target, error = %e, "NOTIFY send failed");
        tokio::time::sleep(wait).await;
        return Attempt::NoAnswer;
    }
    let deadline = tokio::time::Instant::now() + wait;
    let mut buf = vec![0u8; 4096];
    loop {
        let received = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await;
        let Ok(Ok((len, from))) = received else {
            return Attempt::NoAnswer;
        };
        let response = &buf[..len];
        // Our ID, QR set, opcode NOTIFY, from the address we asked.
        if from != target
            || len < 12
            || response[0..2] != id.to_be_bytes()
            || response[2] & 0x80 == 0
            || (response[2] >> 3) & 0x0F != 4
        {
            continue;
        }
        let rcode = response[3] & 0x0F;
        if rcode != 0 {
            return Attempt::Rejected(rcode);
        }
        if let Some((key, mac)) = key {
            if !tsig::verify_response(response, key, mac) {
                tracing::warn!(%target, key = %key.name(), "NOTIFY answer not signed with the zone's key; ignored");
                continue;
            }
        }
        return Attempt::Acked;
    }
}

async fn notify_one(store: Arc<ZoneStore>, apex: Name, soa: Record, target: SocketAddr, key: Option<TsigKey>) {
    let serial = match &soa.data {
        RData::SOA(soa) => soa.serial,
        _ => 0,
    };
    let bind: SocketAddr = if target.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let socket = match UdpSocket::bind(bind).await {
        Ok(socket) => socket,
        Err(e) => {
            tracing::warn!(zone = %apex, %target, error = %e, "NOTIFY: no UDP socket");
            return;
        }
    };
    let started = Instant::now();
    let counters = store.transfer_counters();
    let mut wait = FIRST_WAIT;
    for number in 1..=ATTEMPTS {
        let id = next_id();
        let mut packet = request(&apex, &soa, id);
        let mac = key.as_ref().map(|key| tsig::sign_request(&mut packet, key));
        counters.notify_sent.inc();
        let signed = key.as_ref().zip(mac.as_deref());
        match attempt(&socket, target, &packet, id, signed, wait).await {
            Attempt::Acked => {
                counters.notify_acked.inc();
                tracing::info!(zone = %apex, serial, %target, attempts = number, elapsed_ms = started.elapsed().as_millis() as u64, "NOTIFY acknowledged");
                return;
            }
            Attempt::Rejected(rcode) => {
                counters.notify_failed.inc();
                tracing::warn!(zone = %apex, serial, %target, rcode, "NOTIFY answered with an error; not retried");
                return;
            }
            Attempt::NoAnswer => {
                tracing::debug!(zone = %apex, serial, %target, attempt = number, "NOTIFY not answered; retrying");
                wait = (wait * 2).min(MAX_WAIT);
            }
        }
    }
    counters.notify_failed.inc();
    tracing::warn!(zone = %apex, serial, %target, attempts = ATTEMPTS, "NOTIFY never acknowledged; giving up");
}

#[cfg(test)]
mod tests {
    /// IDs come from a random source: consecutive ones are not a sequence
    /// (they were a counter XOR the clock's nanoseconds).
    #[test]
    fn ids_are_not_a_sequence() {
        let ids: Vec<u16> = (0..64).map(|_| super::next_id()).collect();
        let steps = ids.windows(2).filter(|w| w[1].wrapping_sub(w[0]) <= 4).count();
        assert!(steps < 8, "{ids:?}");
        let distinct: std::collections::BTreeSet<u16> = ids.iter().copied().collect();
        assert!(distinct.len() > 56, "{ids:?}");
    }
}
