//! Loopback ports for servers started on a port they are told (Knot,
//! Unbound, `fedns` processes, emulators), picked so that nothing else
//! is handed the same port between the pick and its bind.

use std::collections::BTreeSet;
use std::hash::BuildHasher as _;
use std::net::{TcpListener, UdpSocket};
use std::sync::Mutex;

/// Ports handed out by this process: never handed out twice (tests run in
/// parallel threads and may pick a port before another binds it).
static HANDED: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A port on 127.0.0.1 free for both UDP and TCP right now, below the
/// kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`;
/// 32768 when unreadable), so no port-0 bind in this process or another
/// (DNS servers, clients) can be given it before its user binds it, and
/// never one this process handed out before.
///
/// # Errors
/// No such port in 500 random tries over the 12,000 ports below the
/// ephemeral range (`AddrInUse`).
pub fn free_loopback_port() -> std::io::Result<u16> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let low = ephemeral_low.saturating_sub(12_000).max(10_000);
    let span = u64::from(ephemeral_low.saturating_sub(low).max(1));
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    let seed = std::collections::hash_map::RandomState::new();
    for attempt in 0..500u64 {
        let port = low + u16::try_from(seed.hash_one((std::process::id(), attempt)) % span).unwrap_or(0);
        if handed.contains(&port) {
            continue;
        }
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed.insert(port);
            return Ok(port);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("no free loopback port in {low}..{ephemeral_low} after 500 tries"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_below_the_ephemeral_range_and_never_handed_twice() -> std::io::Result<()> {
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            let port = free_loopback_port()?;
            assert!(port >= 10_000);
            assert!(seen.insert(port), "{port} handed out twice");
        }
        Ok(())
    }
}
