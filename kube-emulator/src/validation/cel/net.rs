//! Kubernetes' CEL library functions on URLs and addresses: a port of
//! `apiserver/pkg/cel/library/urls.go` (`isURL`: Go's `url.ParseRequestURI`
//! succeeding), `ip.go` (`isIP`) and `cidr.go` (`isCIDR`). The `url()`,
//! `ip()` and `cidr()` values and their methods are not implemented
//! ([`super::supported`] refuses them).

use cel::Value;

use super::library::{out, string_arg, Args, Out};

pub(super) fn is_url_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    out(Value::Bool(is_url(&string_arg(&args, 0, "isURL")?)))
}

/// Go's `url.ParseRequestURI` succeeding (`library/urls.go`'s `isURL`).
fn is_url(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // getScheme
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == '+' || c == '-' || c == '.' {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false; // missing protocol scheme
            }
            scheme = &s[..i];
            rest = &s[i + 1..];
        }
        break;
    }
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    if !rest.starts_with('/') {
        // opaque ("mailto:x") with a scheme; a relative path is refused
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let end = authority_and_path.find('/').unwrap_or(authority_and_path.len());
        let authority = &authority_and_path[..end];
        path = &authority_and_path[end..];
        let host = match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                let valid = userinfo
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
                if !valid || !valid_escapes(userinfo) {
                    return false;
                }
                &authority[at + 1..]
            }
            None => authority,
        };
        let port = if let Some(literal) = host.strip_prefix('[') {
            match literal.find(']') {
                Some(close) => &literal[close + 1..],
                None => return false,
            }
        } else {
            host.rfind(':').map_or("", |i| &host[i..])
        };
        let valid_port = port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
        if !valid_port {
            return false;
        }
        if !valid_escapes(host) {
            return false;
        }
    }
    valid_escapes(path)
}

/// Every `%` starts a two-hex-digit escape.
fn valid_escapes(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

pub(super) fn is_ip_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    out(Value::Bool(parse_ip(&string_arg(&args, 0, "isIP")?).is_some()))
}

/// `library/ip.go`: IPv4 or IPv6 without zone; IPv4-mapped IPv6 refused.
fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains('%') {
        return None;
    }
    let ip: std::net::IpAddr = s.parse().ok()?;
    if let std::net::IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return None;
        }
    }
    Some(ip)
}

pub(super) fn is_cidr_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let s = string_arg(&args, 0, "isCIDR")?;
    let valid = match s.split_once('/') {
        Some((ip, _)) => parse_ip(ip).is_some() && s.parse::<ipnet::IpNet>().is_ok(),
        None => false,
    };
    out(Value::Bool(valid))
}
