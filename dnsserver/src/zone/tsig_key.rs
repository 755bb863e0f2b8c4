//! TSIG keys (RFC 8945): the shared secrets a zone's transfer policy
//! names, and the HMAC each one computes. Signing and verifying messages
//! is `xfr/tsig.rs`.

use std::fmt;

use base64::Engine;
use hickory_proto::rr::rdata::tsig::TsigAlgorithm;
use hickory_proto::rr::Name;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Sha256, Sha512};

/// A shared secret: key name, algorithm and secret octets. `Debug` does
/// not show the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct TsigKey {
    pub(crate) name: Name,
    pub(crate) algorithm: Algorithm,
    secret: Vec<u8>,
}

/// The MAC algorithms offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// hmac-sha256 (RFC 8945 §6, mandatory to implement).
    HmacSha256,
    /// hmac-sha512.
    HmacSha512,
}

impl Algorithm {
    /// Parses `hmac-sha256` or `hmac-sha512` (case-insensitive, a trailing dot allowed).
    pub fn parse(s: &str) -> Option<Algorithm> {
        match s.trim_end_matches('.').to_ascii_lowercase().as_str() {
            "hmac-sha256" => Some(Algorithm::HmacSha256),
            "hmac-sha512" => Some(Algorithm::HmacSha512),
            _ => None,
        }
    }

    pub(crate) fn hickory(self) -> TsigAlgorithm {
        match self {
            Algorithm::HmacSha256 => TsigAlgorithm::HmacSha256,
            Algorithm::HmacSha512 => TsigAlgorithm::HmacSha512,
        }
    }

    pub(crate) fn of(algorithm: &TsigAlgorithm) -> Option<Algorithm> {
        match algorithm {
            TsigAlgorithm::HmacSha256 => Some(Algorithm::HmacSha256),
            TsigAlgorithm::HmacSha512 => Some(Algorithm::HmacSha512),
            _ => None,
        }
    }

    /// The name as written in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::HmacSha512 => "hmac-sha512",
        }
    }
}

impl fmt::Debug for TsigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TsigKey")
            .field("name", &self.name.to_ascii())
            .field("algorithm", &self.algorithm)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The MAC computation over several pieces.
pub(crate) enum Hasher {
    Sha256(Hmac<Sha256>),
    Sha512(Hmac<Sha512>),
}

impl Hasher {
    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha256(m) => m.update(data),
            Hasher::Sha512(m) => m.update(data),
        }
    }

    pub(crate) fn finalize(self) -> Vec<u8> {
        match self {
            Hasher::Sha256(m) => m.finalize().into_bytes().to_vec(),
            Hasher::Sha512(m) => m.finalize().into_bytes().to_vec(),
        }
    }

    /// Constant-time comparison.
    pub(crate) fn verify(self, tag: &[u8]) -> bool {
        match self {
            Hasher::Sha256(m) => m.verify_slice(tag).is_ok(),
            Hasher::Sha512(m) => m.verify_slice(tag).is_ok(),
        }
    }
}

impl TsigKey {
    /// A key named `name` (a domain name) with `secret` octets.
    ///
    /// # Errors
    /// The name is not a domain name, or the secret is empty.
    pub fn new(name: &str, algorithm: Algorithm, secret: Vec<u8>) -> Result<TsigKey, String> {
        let mut name = Name::from_ascii(name).map_err(|e| format!("TSIG key name {name:?}: {e}"))?;
        name.set_fqdn(true);
        if secret.is_empty() {
            return Err(format!("TSIG key {name}: empty secret"));
        }
        Ok(TsigKey {
            name: name.to_lowercase(),
            algorithm,
            secret,
        })
    }

    /// Parses `algorithm:name:base64-secret` (kdig's `-y` form; the
    /// algorithm may be left out for hmac-sha256).
    ///
    /// # Errors
    /// Unknown algorithm, bad name or bad base64.
    pub fn parse(spec: &str) -> Result<TsigKey, String> {
        let parts: Vec<&str> = spec.trim().split(':').collect();
        let (algorithm, name, secret) = match parts.as_slice() {
            [name, secret] => (Algorithm::HmacSha256, *name, *secret),
            [algorithm, name, secret] => (
                Algorithm::parse(algorithm).ok_or_else(|| {
                    format!("TSIG algorithm {algorithm:?} is not supported (hmac-sha256, hmac-sha512)")
                })?,
                *name,
                *secret,
            ),
            _ => return Err("a TSIG key is written algorithm:name:base64-secret".into()),
        };
        let secret = base64::engine::general_purpose::STANDARD
            .decode(secret.trim())
            .map_err(|e| format!("TSIG key {name}: secret is not base64: {e}"))?;
        TsigKey::new(name, algorithm, secret)
    }

    /// The key name, lower case, fully qualified.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    pub(crate) fn hasher(&self) -> Hasher {
        // HMAC takes keys of any length; `new_from_slice` cannot fail.
        match self.algorithm {
            Algorithm::HmacSha256 => {
                Hasher::Sha256(<Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret).expect("HMAC key"))
            }
            Algorithm::HmacSha512 => {
                Hasher::Sha512(<Hmac<Sha512> as KeyInit>::new_from_slice(&self.secret).expect("HMAC key"))
            }
        }
    }
}

/// The MACs of signed requests accepted lately, so that the same signed
/// request sent again while its time is still within the fudge is
/// refused as a replay (RFC 8945 §5.2.3 bounds a request's life by its
/// time; within that window only the MAC tells a copy). Entries older
/// than twice `window` seconds are dropped; at most [`RecentMacs::CAPACITY`]
/// are kept (only requests that verified are recorded, so only holders of
/// a key can fill it).
#[derive(Debug, Default)]
pub struct RecentMacs {
    seen: std::sync::Mutex<std::collections::HashMap<Vec<u8>, u64>>,
}

impl RecentMacs {
    /// Most MACs remembered; past that the oldest half is forgotten.
    pub const CAPACITY: usize = 100_000;

    /// Records `mac` of a request signed at `time` (seconds since the
    /// epoch), at `now`; true if it was seen before within the window.
    pub fn seen_before(&self, mac: &[u8], time: u64, now: u64, window: u64) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let oldest = now.saturating_sub(2 * window);
        if seen.len() >= Self::CAPACITY {
            seen.retain(|_, t| *t >= oldest);
        }
        if seen.len() >= Self::CAPACITY {
            let mut times: Vec<u64> = seen.values().copied().collect();
            times.sort_unstable();
            let median = times[times.len() / 2];
            seen.retain(|_, t| *t > median);
        }
        match seen.get(mac) {
            Some(t) if *t >= oldest => true,
            _ => {
                seen.insert(mac.to_vec(), time);
                false
            }
        }
    }
}
