//! Who may call `fedns webhook-provider`: a bearer token compared in
//! constant time, and the rule that the protocol listens beyond loopback
//! only when callers are authenticated (a token or client certificates).

use std::net::{IpAddr, SocketAddr};

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The bearer token every protocol request must carry. Only its SHA-256
/// digest is kept, and a presented token is compared by digest in constant
/// time ([`subtle`]), so neither the time a comparison takes nor a
/// length check tells a caller how much of a guess was right.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// The token `token` (taken as given: the caller trims a file's
    /// trailing newline).
    pub fn new(token: &str) -> BearerToken {
        BearerToken {
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    /// Whether `given` is the token, in time independent of where (or
    /// whether) it differs.
    pub fn matches(&self, given: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        bool::from(digest[..].ct_eq(&self.digest[..]))
    }

    /// Whether `headers` carry the token: `Authorization: Bearer <token>`
    /// (the scheme's case does not matter, RFC 9110 §11.1).
    pub fn authorises(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Some((scheme, credentials)) = value.split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer") && self.matches(credentials.trim_matches(' '))
    }
}

impl From<&str> for BearerToken {
    fn from(token: &str) -> BearerToken {
        BearerToken::new(token)
    }
}

/// Whether `ip` is reachable only from this host's (this pod's) own network
/// namespace: 127.0.0.0/8, `::1`, or `::ffff:127.0.0.0/104`.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// Checks that the protocol may listen on `listen`: on loopback always
/// (external-dns as a sidecar in the same pod); elsewhere only when callers
/// are authenticated, by a bearer token (`token`) or a client certificate
/// (`client_certificates`), since anyone reaching the address could
/// otherwise write records into the federation.
///
/// # Errors
/// The address is not loopback and nothing authenticates callers: the
/// message names the flags to set.
pub fn check_exposure(listen: SocketAddr, token: bool, client_certificates: bool) -> Result<(), String> {
    if is_loopback(listen.ip()) || token || client_certificates {
        return Ok(());
    }
    Err(format!(
        "--listen {listen} is not a loopback address and nothing would authenticate callers (anyone reaching it \
         could write records into the federation): set --token-file (a bearer token every request must carry), \
         or --tls-client-ca-file with --tls-cert-file and --tls-key-file (client certificates), or listen on \
         127.0.0.1 with external-dns as a sidecar in the same pod"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, authorization.parse().unwrap());
        headers
    }

    #[test]
    fn only_the_token_itself_matches() {
        let token = BearerToken::new("s3cret-token");
        assert!(token.matches("s3cret-token"));
        for wrong in ["", "s3cret-tokeN", "s3cret-toke", "s3cret-token2", "S3CRET-TOKEN", "x"] {
            assert!(!token.matches(wrong), "{wrong:?}");
        }
        assert!(token.authorises(&headers("Bearer s3cret-token")));
        assert!(
            token.authorises(&headers("bearer s3cret-token")),
            "the scheme is case-insensitive"
        );
        for wrong in [
            "Bearer s3cret-tokem",
            "Bearer s3cret",
            "Basic s3cret-token",
            "Bearers3cret-token",
            "s3cret-token",
            "Bearer ",
        ] {
            assert!(!token.authorises(&headers(wrong)), "{wrong:?}");
        }
        assert!(!token.authorises(&HeaderMap::new()), "no header");
        assert!(!format!("{token:?}").contains("s3cret"), "not in logs");
    }

    #[test]
    fn beyond_loopback_callers_must_be_authenticated() {
        let at = |a: &str| a.parse::<SocketAddr>().unwrap();
        for loopback in [
            "127.0.0.1:8888",
            "127.1.2.3:8888",
            "[::1]:8888",
            "[::ffff:127.0.0.1]:8888",
        ] {
            assert_eq!(check_exposure(at(loopback), false, false), Ok(()), "{loopback}");
        }
        for exposed in ["0.0.0.0:8888", "[::]:8888", "10.0.0.7:8888", "[::ffff:10.0.0.7]:8888"] {
            let refused = check_exposure(at(exposed), false, false).unwrap_err();
            assert!(
                refused.contains("--token-file") && refused.contains("--tls-client-ca-file"),
                "{refused}"
            );
            assert_eq!(
                check_exposure(at(exposed), true, false),
                Ok(()),
                "{exposed} with a token"
            );
            assert_eq!(
                check_exposure(at(exposed), false, true),
                Ok(()),
                "{exposed} with client certificates"
            );
        }
    }
}
