//! The UDP worker loop: up to [`BATCH`] requests per `recvmmsg(2)` and
//! their responses in one `sendmmsg(2)`, so a busy worker pays two system
//! calls per batch instead of two per query. Buffers are allocated once
//! per worker.

use std::io::{IoSlice, IoSliceMut};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use arc_swap::Cache;
use nix::errno::Errno;
use nix::sys::socket::{recvmmsg, sendmmsg, MsgFlags, MultiHeaders, SockaddrStorage};

use crate::metrics::WorkerMetrics;
use crate::query::answer::{answer_or_defer, AnswerConfig, Answered, Deferred, Transport};
use crate::query::rrl::{Rrl, Verdict};
use crate::zone::store::ZoneStore;

/// Requests read per system call.
const BATCH: usize = 32;
/// Largest request accepted, in octets. Real queries are far smaller (a
/// question and an OPT RR); a larger datagram is dropped, as truncated.
const SLOT: usize = 4096;

/// Serves `socket` until `stop` is set. The socket must have a read
/// timeout so the loop can notice `stop`.
pub(crate) fn udp_loop(
    socket: UdpSocket,
    store: &ZoneStore,
    config: AnswerConfig,
    metrics: &WorkerMetrics,
    rrl: Option<&Rrl>,
    stop: &AtomicBool,
) {
    let fd = socket.as_raw_fd();
    let mut snapshots = Cache::new(store.handle());
    let mut requests = vec![0u8; BATCH * SLOT];
    let mut responses: Vec<Vec<u8>> = (0..BATCH).map(|_| Vec::with_capacity(SLOT)).collect();
    let mut received: [(usize, Option<SockaddrStorage>); BATCH] = [(0, None); BATCH];
    let mut recv_headers = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
    let mut send_headers = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
    let mut peers: [Option<SockaddrStorage>; BATCH] = [None; BATCH];

    while !stop.load(Ordering::Relaxed) {
        let count = {
            let mut chunks = requests.chunks_mut(SLOT);
            let mut iovs: [[IoSliceMut<'_>; 1]; BATCH] =
                std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or_default())]);
            // MSG_WAITFORONE: block for the first datagram, then take what is queued.
            match recvmmsg(fd, &mut recv_headers, iovs.iter_mut(), MsgFlags::MSG_WAITFORONE, None) {
                Ok(results) => {
                    let mut count = 0;
                    for message in results {
                        let truncated = message.flags.contains(MsgFlags::MSG_TRUNC);
                        received[count] = (if truncated { 0 } else { message.bytes }, message.address);
                        count += 1;
                    }
                    count
                }
                Err(Errno::EAGAIN | Errno::EINTR) => continue,
                Err(e) => {
                    // ICMP errors from earlier sends can surface here.
                    tracing::debug!(error = %e, "UDP receive error");
                    continue;
                }
            }
        };

        let snapshot = snapshots.load();
        let second = rrl.map_or(0, Rrl::second);
        let mut replies = 0;
        for (index, (len, peer)) in received.iter().take(count).enumerate() {
            let started = Instant::now();
            let request = &requests[index * SLOT..index * SLOT + len];
            // Responses are written in order into the first `replies` slots.
            let out = &mut responses[replies];
            let result = match answer_or_defer(
                snapshot,
                request,
                Transport::Udp,
                &config,
                peer.as_ref().and_then(peer_ip),
                out,
                true,
            ) {
                Ok(result) => result,
                // Signed with TSIG, or a transfer: the slow path.
                Err(Deferred) => {
                    let (mut messages, answered) = match peer.as_ref().and_then(peer_ip) {
                        Some(ip) => crate::xfr::transfer::handle(store, snapshot, request, ip, Transport::Udp, &config),
                        None => (
                            Vec::new(),
                            Answered {
                                qtype: 0,
                                rcode: 0,
                                truncated: false,
                            },
                        ),
                    };
                    out.clear();
                    if messages.is_empty() {
                        None
                    } else {
                        out.extend_from_slice(&messages.swap_remove(0));
                        Some(answered)
                    }
                }
            };
            match result {
                Some(answered) if peer.is_some() => {
                    metrics.record(&answered, started.elapsed());
                    metrics.record_kind(crate::query::answer::answer_kind(out));
                    if let Some(rrl) = rrl {
                        match peer.as_ref().and_then(peer_ip).map(|ip| rrl.check(ip, out, second)) {
                            Some(Verdict::Drop) => continue,
                            Some(Verdict::Slip) => crate::query::rrl::truncate(out),
                            _ => {}
                        }
                    }
                    peers[replies] = *peer;
                    replies += 1;
                }
                _ => metrics.record_dropped(),
            }
        }
        send_all(fd, &mut send_headers, &responses[..replies], &peers[..replies]);
    }
}

/// The address of a UDP peer.
fn peer_ip(peer: &SockaddrStorage) -> Option<std::net::IpAddr> {
    if let Some(v4) = peer.as_sockaddr_in() {
        return Some(std::net::IpAddr::V4(v4.ip()));
    }
    peer.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip()))
}

/// Sends every response, retrying the rest after a partial `sendmmsg`.
fn send_all(
    fd: i32,
    headers: &mut MultiHeaders<SockaddrStorage>,
    responses: &[Vec<u8>],
    peers: &[Option<SockaddrStorage>],
) {
    let mut sent = 0;
    while sent < responses.len() {
        let pending = &responses[sent..];
        let slices: [[IoSlice<'_>; 1]; BATCH] =
            std::array::from_fn(|i| [IoSlice::new(pending.get(i).map_or(&[][..], |r| r.as_slice()))]);
        match sendmmsg(
            fd,
            headers,
            slices.iter().take(pending.len()),
            &peers[sent..],
            [],
            MsgFlags::empty(),
        ) {
            Ok(results) => {
                let n = results.count();
                if n == 0 {
                    return;
                }
                sent += n;
            }
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Err(e) => {
                // One bad destination (e.g. EPERM from a firewall) must not
                // block the rest: skip it.
                tracing::debug!(error = %e, "UDP send error");
                sent += 1;
            }
        }
    }
}
