//! Response rate limiting over UDP, as Knot's `rrl` module and BIND's RRL
//! do: an authoritative server must not be an amplifier for spoofed
//! queries.
//!
//! Responses are counted per second in a fixed table, keyed by the client
//! prefix (IPv4 /24, IPv6 /56), the response class and a name: for
//! answers and referrals the query name; for negative answers (NXDOMAIN
//! and NODATA, signed or not) the zone, read from the SOA owner name of
//! the authority section, as Knot keys NXDOMAIN by zone and BIND counts a
//! zone's NXDOMAIN responses together. Compact denial (RFC 9824) answers
//! a name that does not exist with NOERROR and an NSEC, so a
//! random-subdomain flood looks like NODATA for ever new names: keyed by
//! zone it is one bucket. Errors count per prefix and class. Past `rate` responses in one
//! second, a response is dropped, except every `slip`-th, which goes out
//! truncated (TC, no records) so a real client behind the prefix retries
//! over TCP, which is never limited. Exempt networks are never limited.
//!
//! The table is a fixed array of atomics: no allocation and no lock per
//! query; distinct keys that hash to one slot share it (as Knot's table).
//! The hash is keyed with a random value per process, so a client cannot
//! pick names that land in another client's slot.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ipnet::IpNet;
use rustc_hash::FxHasher;
use std::hash::Hasher;

use crate::metrics::RrlCounters;

/// Rate limiting settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RrlConfig {
    /// Responses per second per client prefix and response class (and
    /// name, for answers and NODATA). 0: off.
    pub rate: u32,
    /// Every `slip`-th limited response is sent truncated instead of
    /// dropped (0: drop all; 1: truncate all). Knot's and BIND's default is 2.
    pub slip: u32,
    /// Networks never limited (monitoring, trusted resolvers).
    pub exempt: Vec<IpNet>,
    /// Slots in the table (rounded up to a power of two).
    pub table_size: usize,
}

impl Default for RrlConfig {
    fn default() -> Self {
        RrlConfig {
            rate: 0,
            slip: 2,
            exempt: Vec::new(),
            table_size: 1 << 16,
        }
    }
}

/// What to do with a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it.
    Send,
    /// Send it truncated (header and question only, TC set).
    Slip,
    /// Send nothing.
    Drop,
}

/// The response classes (Knot's, coarser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    /// An answer or a referral.
    Answer = 1,
    /// NOERROR without answer records.
    NoData = 2,
    NxDomain = 3,
    /// FORMERR, REFUSED, NOTIMP, ...
    Error = 4,
}

/// The limiter of one server (all its UDP workers).
#[derive(Debug)]
pub(crate) struct Rrl {
    rate: u64,
    slip: u64,
    exempt: Vec<IpNet>,
    /// Per slot: the second (since `epoch`) in the upper 32 bits, the
    /// responses counted in it in the lower 32.
    slots: Box<[AtomicU64]>,
    mask: usize,
    epoch: Instant,
    /// Random per process: the first input of every slot hash.
    hash_key: u64,
    pub counters: std::sync::Arc<RrlCounters>,
}

impl Rrl {
    /// A limiter, or None when `config.rate` is 0.
    pub(crate) fn new(config: &RrlConfig, counters: std::sync::Arc<RrlCounters>) -> Option<Rrl> {
        if config.rate == 0 {
            return None;
        }
        let size = config.table_size.clamp(1024, 1 << 24).next_power_of_two();
        Some(Rrl {
            rate: u64::from(config.rate),
            slip: u64::from(config.slip),
            exempt: config.exempt.iter().map(IpNet::trunc).collect(),
            slots: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size - 1,
            epoch: Instant::now(),
            hash_key: {
                use std::hash::BuildHasher as _;
                std::collections::hash_map::RandomState::new().hash_one(0x5252_4c00_u64)
            },
            counters,
        })
    }

    /// The current second of the limiter's clock: read once per batch of
    /// queries and passed to [`Rrl::check`].
    #[inline]
    pub(crate) fn second(&self) -> u64 {
        self.epoch.elapsed().as_secs() & 0xFFFF_FFFF
    }

    /// Counts `response` (a complete response to a UDP query from `client`)
    /// sent in second `now` (from [`Rrl::second`]) and says what to do with it.
    #[inline]
    pub(crate) fn check(&self, client: IpAddr, response: &[u8], now: u64) -> Verdict {
        if response.len() < 12 {
            return Verdict::Send;
        }
        let client = client.to_canonical();
        if !self.exempt.is_empty() && self.exempt.iter().any(|net| net.contains(&client)) {
            return Verdict::Send;
        }
        let rcode = response[3] & 0x0F;
        let ancount = u16::from_be_bytes([response[6], response[7]]);
        let nscount = u16::from_be_bytes([response[8], response[9]]);
        let soa = if ancount == 0 && nscount > 0 {
            soa_owner(response, nscount)
        } else {
            None
        };
        let class = match rcode {
            0 if ancount > 0 || (nscount > 0 && soa.is_none()) => Class::Answer,
            0 => Class::NoData,
            3 => Class::NxDomain,
            _ => Class::Error,
        };
        let mut hasher = FxHasher::default();
        hasher.write_u64(self.hash_key);
        match client {
            IpAddr::V4(v4) => hasher.write_u32(u32::from(v4) >> 8),
            // The upper 56 bits.
            IpAddr::V6(v6) => hasher.write_u64(((u128::from(v6) >> 72) as u64) | (1 << 63)),
        }
        hasher.write_u8(class as u8);
        match class {
            Class::Answer => {
                // The question name, case-folded (it starts right after the header).
                for &octet in response[12..].iter().take(255) {
                    hasher.write_u8(octet.to_ascii_lowercase());
                    if octet == 0 {
                        break;
                    }
                }
            }
            Class::NoData | Class::NxDomain => {
                // The zone: the owner of the authority section's SOA.
                if let Some(pos) = soa {
                    hash_name(response, pos, &mut hasher);
                }
            }
            Class::Error => {}
        }
        let slot = &self.slots[hasher.finish() as usize & self.mask];
        let mut current = slot.load(Ordering::Relaxed);
        let count = loop {
            let (second, count) = (current >> 32, current & 0xFFFF_FFFF);
            let count = if second == now {
                count.saturating_add(1).min(0xFFFF_FFFF)
            } else {
                1
            };
            match slot.compare_exchange_weak(current, now << 32 | count, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break count,
                Err(seen) => current = seen,
            }
        };
        if count <= self.rate {
            return Verdict::Send;
        }
        let over = count - self.rate;
        if self.slip > 0 && over.is_multiple_of(self.slip) {
            self.counters.slipped.fetch_add(1, Ordering::Relaxed);
            Verdict::Slip
        } else {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            Verdict::Drop
        }
    }
}

/// The offset of the owner name of the SOA record in the authority
/// section of a response without answer records (a negative answer,
/// whatever comes first: a signed compact-denial answer starts with its
/// NSEC), or None (a referral, or unreadable).
fn soa_owner(response: &[u8], nscount: u16) -> Option<usize> {
    let mut pos = 12;
    let qdcount = u16::from_be_bytes([response[4], response[5]]);
    for _ in 0..qdcount {
        pos = skip_name(response, pos)? + 4;
    }
    for _ in 0..nscount.min(16) {
        let owner = pos;
        let after = skip_name(response, pos)?;
        let header = response.get(after..after + 10)?;
        if header[0..2] == [0, 6] {
            return Some(owner);
        }
        let rdlength = usize::from(u16::from_be_bytes([header[8], header[9]]));
        pos = after + 10 + rdlength;
    }
    None
}

/// Feeds the name at `pos` (compression pointers followed, at most 128
/// labels: a pointer loop ends there) into `hasher`, case-folded.
fn hash_name(packet: &[u8], mut pos: usize, hasher: &mut FxHasher) {
    for _ in 0..128 {
        let Some(&len) = packet.get(pos) else { return };
        match len & 0xC0 {
            0x00 if len == 0 => {
                hasher.write_u8(0);
                return;
            }
            0x00 => {
                let Some(label) = packet.get(pos + 1..pos + 1 + len as usize) else {
                    return;
                };
                hasher.write_u8(len);
                for &octet in label {
                    hasher.write_u8(octet.to_ascii_lowercase());
                }
                pos += 1 + len as usize;
            }
            0xC0 => {
                let Some(&low) = packet.get(pos + 1) else { return };
                pos = (usize::from(len & 0x3F) << 8) | usize::from(low);
            }
            _ => return,
        }
    }
}

fn skip_name(packet: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let len = *packet.get(pos)? as usize;
        match len & 0xC0 {
            0x00 if len == 0 => return Some(pos + 1),
            0x00 => pos += 1 + len,
            0xC0 => return Some(pos + 2),
            _ => return None,
        }
    }
}

/// Rewrites `response` as its truncated form: header and question, TC
/// set, no records (the OPT RR dropped too: the client asks again over TCP).
pub(crate) fn truncate(response: &mut Vec<u8>) {
    let qdcount = u16::from_be_bytes([response[4], response[5]]);
    let mut pos = 12;
    for _ in 0..qdcount {
        match skip_name(response, pos) {
            Some(after) if after + 4 <= response.len() => pos = after + 4,
            _ => {
                pos = 12;
                response[4..6].fill(0);
                break;
            }
        }
    }
    response.truncate(pos);
    response[2] |= 0x02;
    response[6..12].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn response(name: &str, rcode: u8, ancount: u16) -> Vec<u8> {
        let mut r = vec![0x12, 0x34, 0x84, rcode, 0, 1, 0, ancount as u8, 0, 0, 0, 0];
        for label in name.split('.').filter(|l| !l.is_empty()) {
            r.push(label.len() as u8);
            r.extend_from_slice(label.as_bytes());
        }
        r.extend_from_slice(&[0, 0, 1, 0, 1]);
        r
    }

    fn rrl(rate: u32, slip: u32, exempt: &[&str]) -> Rrl {
        let config = RrlConfig {
            rate,
            slip,
            exempt: exempt.iter().map(|e| e.parse().unwrap()).collect(),
            ..RrlConfig::default()
        };
        Rrl::new(&config, Arc::default()).unwrap()
    }

    #[test]
    fn limits_per_prefix_class_and_name_with_slip() {
        let rrl = rrl(10, 2, &["192.0.2.128/25"]);
        let a: IpAddr = "203.0.113.5".parse().unwrap();
        let same_24: IpAddr = "203.0.113.200".parse().unwrap();
        let other: IpAddr = "198.51.100.1".parse().unwrap();
        let www = response("www.example.com", 0, 1);
        let verdicts: Vec<Verdict> = (0..20).map(|_| rrl.check(a, &www, 0)).collect();
        assert!(verdicts[..10].iter().all(|v| *v == Verdict::Send));
        assert_eq!(verdicts[10..].iter().filter(|v| **v == Verdict::Slip).count(), 5);
        assert_eq!(verdicts[10..].iter().filter(|v| **v == Verdict::Drop).count(), 5);
        // The /24 shares the bucket; another prefix or name does not.
        assert_ne!(rrl.check(same_24, &www, 0), Verdict::Send);
        assert_eq!(rrl.check(other, &www, 0), Verdict::Send);
        assert_eq!(rrl.check(a, &response("api.example.com", 0, 1), 0), Verdict::Send);
        // Case does not make a new name.
        assert_ne!(rrl.check(a, &response("WWW.example.com", 0, 1), 0), Verdict::Send);
        // NXDOMAIN counts per prefix, whatever the name.
        for i in 0..10 {
            assert_eq!(
                rrl.check(a, &response(&format!("r{i}.example.com"), 3, 0), 0),
                Verdict::Send
            );
        }
        assert_ne!(rrl.check(a, &response("r99.example.com", 3, 0), 0), Verdict::Send);
        // Exempt networks are never limited.
        let exempt: IpAddr = "192.0.2.200".parse().unwrap();
        assert!((0..100).all(|_| rrl.check(exempt, &www, 0) == Verdict::Send));
    }

    /// A negative response: the question, then in the authority section
    /// the zone's SOA (owner compressed to the question's `zone` suffix at
    /// `zone_offset`) — as the embedded server writes NXDOMAIN, NODATA and
    /// compact-denial (NOERROR + NSEC) answers.
    fn negative(name: &str, rcode: u8, zone_suffix_at: usize) -> Vec<u8> {
        let mut r = response(name, rcode, 0);
        r[9] = 1; // NSCOUNT
        r.extend_from_slice(&[0xC0, 12 + zone_suffix_at as u8, 0, 6, 0, 1, 0, 0, 0, 30, 0, 0]);
        r
    }

    /// A random-name flood answered with compact denial (NOERROR, no
    /// answer, SOA + NSEC in the authority section) used to get a bucket
    /// per name; now the zone is one bucket per prefix, signed or not.
    #[test]
    fn negative_answers_count_per_zone_whatever_the_name() {
        let rrl = rrl(10, 0, &[]);
        let a: IpAddr = "203.0.113.5".parse().unwrap();
        // "rNNNN." is 6 octets: example.com starts at offset 6 of the name.
        let sent = (0..1000)
            .filter(|i| rrl.check(a, &negative(&format!("r{i:04}.example.com"), 0, 6), 0) == Verdict::Send)
            .count();
        assert_eq!(sent, 10, "one bucket for the zone's NODATA/compact-denial answers");
        let sent = (0..1000)
            .filter(|i| rrl.check(a, &negative(&format!("r{i:04}.example.com"), 3, 6), 0) == Verdict::Send)
            .count();
        assert_eq!(sent, 10, "and one for its NXDOMAIN answers");
        // Another zone is another bucket.
        assert_eq!(rrl.check(a, &negative("r0001.example.org", 0, 6), 0), Verdict::Send);
        // Two limiters hash differently (a random key per limiter).
        let other = super::Rrl::new(
            &RrlConfig {
                rate: 1,
                ..RrlConfig::default()
            },
            Arc::default(),
        )
        .unwrap();
        assert_ne!(other.hash_key, rrl.hash_key);
    }

    #[test]
    fn ipv6_counts_per_56() {
        let rrl = rrl(1, 0, &[]);
        let www = response("www.example.com", 0, 1);
        assert_eq!(rrl.check("2001:db8:0:1::1".parse().unwrap(), &www, 0), Verdict::Send);
        assert_eq!(rrl.check("2001:db8:0:ff::2".parse().unwrap(), &www, 0), Verdict::Drop);
        assert_eq!(rrl.check("2001:db8:0:100::1".parse().unwrap(), &www, 0), Verdict::Send);
    }

    #[test]
    fn truncation_keeps_the_question() {
        let mut r = response("www.example.com", 0, 1);
        let question_end = r.len();
        r.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 192, 0, 2, 1]);
        truncate(&mut r);
        assert_eq!(r.len(), question_end);
        assert_eq!(r[2] & 0x02, 0x02);
        assert_eq!(&r[6..12], &[0; 6]);
    }
}
