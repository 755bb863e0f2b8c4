//! One target's value: parsed per record type into RDATA, and the
//! canonical presentation form providers publish.

use std::net::{Ipv4Addr, Ipv6Addr};

use fedns_api::{names, RecordType};
use fedns_dnsserver::hickory_proto::rr::rdata::{self, MX, SRV, TXT};
use fedns_dnsserver::hickory_proto::rr::{Name, RData};

pub(super) fn to_name(normalised: &str) -> Option<Name> {
    Name::from_ascii(format!("{normalised}.")).ok()
}

/// Parses one target of `rtype` into RDATA.
///
/// # Errors
/// A one-line reason naming the target.
pub fn parse_target(rtype: RecordType, target: &str) -> Result<RData, String> {
    let host = |s: &str| -> Result<Name, String> {
        let n = names::normalize_hostname(s).map_err(|e| e.to_string())?;
        to_name(&n).ok_or_else(|| format!("{s:?} is not a DNS name"))
    };
    let number = |s: Option<&str>, what: &str| -> Result<u16, String> {
        s.ok_or_else(|| format!("missing {what}"))?
            .parse::<u16>()
            .map_err(|_| format!("{what} must be 0..65535"))
    };
    // Only MX and SRV targets have fields: an address (nearly every
    // target) is parsed without collecting any.
    let fields = || target.split_whitespace().collect::<Vec<&str>>();
    let result = match rtype {
        RecordType::A => target
            .parse::<Ipv4Addr>()
            .map(|ip| RData::A(ip.into()))
            .map_err(|_| "not an IPv4 address".to_owned()),
        RecordType::AAAA => target
            .parse::<Ipv6Addr>()
            .map(|ip| RData::AAAA(ip.into()))
            .map_err(|_| "not an IPv6 address".to_owned()),
        RecordType::CNAME => host(target).map(|n| RData::CNAME(rdata::CNAME(n))),
        RecordType::NS => host(target).map(|n| RData::NS(rdata::NS(n))),
        RecordType::PTR => host(target).map(|n| RData::PTR(rdata::PTR(n))),
        RecordType::TXT => crate::plan::txt::strings_of_target(target)
            .map(|strings| RData::TXT(TXT::from_bytes(strings.iter().map(Vec::as_slice).collect()))),
        RecordType::MX => match fields().as_slice() {
            [pref, exchange] => Ok(RData::MX(MX::new(number(Some(pref), "preference")?, host(exchange)?))),
            _ => Err("MX target must be \"<preference> <host>\"".to_owned()),
        },
        RecordType::SRV => match fields().as_slice() {
            [prio, weight, port, host_name] => Ok(RData::SRV(SRV::new(
                number(Some(prio), "priority")?,
                number(Some(weight), "weight")?,
                number(Some(port), "port")?,
                host(host_name)?,
            ))),
            _ => Err("SRV target must be \"<priority> <weight> <port> <host>\"".to_owned()),
        },
        RecordType::CAA => RData::try_from_str(fedns_dnsserver::hickory_proto::rr::RecordType::CAA, target)
            .map_err(|e| format!("not a CAA value: {e}")),
    };
    result.map_err(|e| format!("{} target {target:?}: {e}", rtype))
}

/// The presentation form providers publish: addresses as Rust prints
/// them (IPv6 compressed, RFC 5952), names without the trailing dot, TXT
/// as quoted character-strings ([`crate::plan::txt::presentation`]).
pub fn canonical_target(rdata: &RData) -> String {
    let trim = |n: &Name| n.to_ascii().trim_end_matches('.').to_owned();
    match rdata {
        RData::A(a) => ipv4_text(a.0),
        RData::AAAA(a) => a.0.to_string(),
        RData::CNAME(n) => trim(&n.0),
        RData::NS(n) => trim(&n.0),
        RData::PTR(n) => trim(&n.0),
        RData::MX(mx) => format!("{} {}", mx.preference, trim(&mx.exchange)),
        RData::SRV(srv) => format!("{} {} {} {}", srv.priority, srv.weight, srv.port, trim(&srv.target)),
        RData::TXT(txt) => crate::plan::txt::presentation(&txt.txt_data),
        other => other.to_string(),
    }
}

/// `ip` in dotted decimal, as `Ipv4Addr`'s `Display` writes it, without
/// the formatting machinery: a whole computation at 1,000,000 shards
/// writes about a million of them.
fn ipv4_text(ip: Ipv4Addr) -> String {
    let mut text = String::with_capacity(15);
    for (at, octet) in ip.octets().into_iter().enumerate() {
        if at > 0 {
            text.push('.');
        }
        if octet >= 100 {
            text.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            text.push(char::from(b'0' + octet / 10 % 10));
        }
        text.push(char::from(b'0' + octet % 10));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_read_as_display_writes_them() {
        for octet in 0..=255u8 {
            for ip in [
                Ipv4Addr::new(octet, 0, 255, octet),
                Ipv4Addr::new(10, octet, octet / 3, 1),
            ] {
                assert_eq!(ipv4_text(ip), ip.to_string());
            }
        }
    }
}
