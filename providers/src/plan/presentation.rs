//! Record values as DNS providers' APIs spell them, and back.
//!
//! Route53 (`ResourceRecord.Value`) and Google Cloud DNS
//! (`ResourceRecordSet.rrdatas`) both take zone-file presentation form
//! (RFC 1035 §5.1) with absolute names (a trailing dot) and quoted TXT
//! character-strings. fedns compares values in its canonical form (lower
//! case names without the trailing dot, IPv6 compressed, TXT as
//! [`crate::plan::txt::canonical`]), so a value a provider spells
//! differently (`WWW.Example.com.`, `"a"   "b"`) is not a change.

use fedns_api::RecordType;

use crate::plan::desired::{canonical_target, parse_target};

/// A provider's value (one `Value` or `rrdata`) in fedns's canonical form;
/// a value that does not parse is trimmed and lower-cased.
pub fn canonical_value(record_type: RecordType, value: &str) -> String {
    if record_type == RecordType::TXT {
        return crate::plan::txt::canonical(value).unwrap_or_else(|_| value.to_owned());
    }
    match parse_target(record_type, value.trim()) {
        Ok(rdata) => canonical_target(&rdata),
        Err(_) => value.trim().to_ascii_lowercase(),
    }
}

/// A canonical target in a provider's presentation form: host names of
/// CNAME, NS, PTR, MX and SRV absolute (trailing dot), TXT quoted
/// ([`crate::plan::txt::canonical`]), anything else as it is.
pub fn absolute_value(record_type: RecordType, target: &str) -> String {
    let fqdn = |host: &str| format!("{}.", host.trim_end_matches('.'));
    let fields: Vec<&str> = target.split_whitespace().collect();
    match (record_type, fields.as_slice()) {
        (RecordType::CNAME | RecordType::NS | RecordType::PTR, _) => fqdn(target),
        (RecordType::MX, [preference, host]) => format!("{preference} {}", fqdn(host)),
        (RecordType::SRV, [priority, weight, port, host]) => format!("{priority} {weight} {port} {}", fqdn(host)),
        (RecordType::TXT, _) => crate::plan::txt::canonical(target).unwrap_or_else(|_| target.to_owned()),
        _ => target.to_owned(),
    }
}
