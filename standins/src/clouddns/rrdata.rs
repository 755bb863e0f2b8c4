//! One record set's rrdatas in each type's presentation format, as Cloud
//! DNS checks them on a change (`entity.change.additions[i].rrdata`):
//! addresses, names, numbers and hex fields per type, TXT/SPF quoting and
//! 255-octet strings; one CNAME or SOA rrdata at most, no duplicates.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::error::GoogleError;
use super::names::valid_name;

pub(super) fn check_rrdatas(rtype: &str, rrdatas: &[String], field: &str) -> Result<(), GoogleError> {
    if rtype == "CNAME" && rrdatas.len() > 1 {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': a CNAME record set may have only one rrdata."
        )));
    }
    if rtype == "SOA" && rrdatas.len() > 1 {
        return Err(GoogleError::invalid(format!(
            "Invalid value for '{field}': an SOA record set may have only one rrdata."
        )));
    }
    for (i, rrdata) in rrdatas.iter().enumerate() {
        if !valid_rrdata(rtype, rrdata) {
            return Err(GoogleError::invalid_value(&format!("{field}[{i}]"), rrdata));
        }
        if rrdatas[..i].contains(rrdata) {
            return Err(GoogleError::invalid(format!(
                "Invalid value for '{field}[{i}]': '{rrdata}' is duplicated."
            )));
        }
    }
    Ok(())
}

fn number<T: std::str::FromStr>(field: Option<&str>) -> bool {
    field.is_some_and(|f| f.parse::<T>().is_ok())
}

fn hex(field: Option<&str>) -> bool {
    field.is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn host(field: Option<&str>) -> bool {
    field.is_some_and(|f| valid_name(&f.to_ascii_lowercase(), false))
}

/// Presentation-format check of one rrdata for `rtype`.
pub fn valid_rrdata(rtype: &str, rrdata: &str) -> bool {
    let mut f = rrdata.split_ascii_whitespace();
    let count = rrdata.split_ascii_whitespace().count();
    match rtype {
        "A" => rrdata.parse::<Ipv4Addr>().is_ok(),
        "AAAA" => rrdata.parse::<Ipv6Addr>().is_ok(),
        "CNAME" | "NS" | "PTR" => count == 1 && host(f.next()),
        "MX" => count == 2 && number::<u16>(f.next()) && f.next().is_some_and(|h| h == "." || host(Some(h))),
        "SRV" => {
            count == 4
                && number::<u16>(f.next())
                && number::<u16>(f.next())
                && number::<u16>(f.next())
                && f.next().is_some_and(|h| h == "." || host(Some(h)))
        }
        "SOA" => count == 7 && host(f.next()) && host(f.next()) && (0..5).all(|_| number::<u32>(f.next())),
        "TXT" | "SPF" => valid_txt(rrdata),
        "CAA" => {
            count >= 3
                && number::<u8>(f.next())
                && f.next()
                    .is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric()))
        }
        "DS" => {
            count >= 4
                && number::<u16>(f.next())
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && f.all(|x| hex(Some(x)))
        }
        "TLSA" => {
            count >= 4
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && number::<u8>(f.next())
                && f.all(|x| hex(Some(x)))
        }
        "SSHFP" => count == 3 && number::<u8>(f.next()) && number::<u8>(f.next()) && hex(f.next()),
        "DNSKEY" => count >= 4 && number::<u16>(f.next()) && number::<u8>(f.next()) && number::<u8>(f.next()),
        "HTTPS" | "SVCB" => {
            count >= 2 && number::<u16>(f.next()) && f.next().is_some_and(|h| h == "." || host(Some(h)))
        }
        // NAPTR, IPSECKEY: only checked to be non-empty.
        _ => count > 0,
    }
}

/// TXT data: one or more character-strings, quoted (with `\` escapes) or
/// bare words, each at most 255 octets.
pub fn valid_txt(rrdata: &str) -> bool {
    let bytes = rrdata.as_bytes();
    let mut i = 0;
    let mut strings = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut length = 0usize;
        if bytes[i] == b'"' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return false,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                            i += 4;
                        } else {
                            i += 2;
                        }
                        if i > bytes.len() {
                            return false;
                        }
                    }
                    Some(_) => i += 1,
                }
                length += 1;
            }
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'"' {
                    return false;
                }
                i += 1;
                length += 1;
            }
        }
        if length > 255 {
            return false;
        }
        strings += 1;
    }
    strings > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouddns_txt_quoting() {
        assert!(valid_txt("\"heritage=external-dns,external-dns/owner=x\""));
        assert!(valid_txt("\"a\" \"b\""));
        assert!(valid_txt("bare"));
        assert!(valid_txt("\"with \\\" quote\""));
        assert!(!valid_txt("\"unterminated"));
        assert!(!valid_txt(""));
        assert!(!valid_txt(&format!("\"{}\"", "x".repeat(256))));
        assert!(valid_txt(&format!("\"{}\" \"{}\"", "x".repeat(255), "y".repeat(255))));
    }

    #[test]
    fn clouddns_rrdata_per_type() {
        assert!(valid_rrdata("A", "192.0.2.1"));
        assert!(!valid_rrdata("A", "192.0.2"));
        assert!(!valid_rrdata("A", "2001:db8::1"));
        assert!(valid_rrdata("AAAA", "2001:db8::1"));
        assert!(valid_rrdata("CNAME", "lb.example.net."));
        assert!(!valid_rrdata("CNAME", "lb example."));
        assert!(valid_rrdata("MX", "10 mail.example.com."));
        assert!(valid_rrdata("SRV", "0 5 443 svc.example.com."));
        assert!(valid_rrdata(
            "SOA",
            "ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"
        ));
        assert!(valid_rrdata("CAA", "0 issue \"letsencrypt.org\""));
    }
}
