//! The OpenAPI `format`s kube-apiserver checks on string values of custom
//! resources, ported from Kubernetes v1.36.2 as vendored in
//! openshift/microshift commit 8e16b12fda5b1dccc41a6de48b3e356cc7d5048b:
//! the supported set is `apiextensions-apiserver/pkg/apiserver/validation/formats.go`
//! (`supportedVersionedFormats`; names are compared with `-` removed, so
//! `date-time` is `datetime`; an unsupported format is stripped, i.e. not
//! checked), the checks are kube-openapi's `pkg/validation/strfmt`
//! (`default.go`, `date.go`, `time.go`) and its vendored govalidator
//! (`IsBase64`, `IsIPv6`, `IsRequestURI`).
//!
//! Checked: `byte`, `datetime`, `date`, `uuid`, `uuid3`, `uuid4`, `uuid5`,
//! `ipv4`, `ipv6`, `cidr`, `hostname`, `uri`, `password`. Not checked
//! (accepted as any string): `bsonobjectid`, `email`, `mac`, `isbn*`,
//! `creditcard`, `ssn`, `hexcolor`, `rgbcolor`, `duration`,
//! `k8s-short-name`, `k8s-long-name`; none of the vendored upstream CRDs
//! or fedns's own use them. `uri` follows Go's `url.ParseRequestURI`
//! loosely: an absolute path, or a scheme and no white space.

use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

static BASE64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$").ok()
});
static TIME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").ok());
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$").ok()
});
static URI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$").ok());
static UUIDS: LazyLock<[Option<Regex>; 4]> = LazyLock::new(|| {
    [
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    ]
    .map(|p| Regex::new(p).ok())
});

/// Whether `regex` (one of the constant patterns above; each compiles,
/// as the tests show) matches `value`.
fn matches(regex: &Option<Regex>, value: &str) -> bool {
    regex.as_ref().is_some_and(|r| r.is_match(value))
}

/// Whether `value` is valid for `format` as kube-apiserver checks it
/// (`true` for a format it does not check). `format` is the schema's
/// keyword as written (`date-time` and `datetime` are the same).
pub(crate) fn is_valid(format: &str, value: &str) -> bool {
    match format.replace('-', "").as_str() {
        "byte" => matches(&BASE64, value),
        "datetime" => is_date_time(value),
        "date" => is_date(value),
        "uuid" => matches(&UUIDS[0], value),
        "uuid3" => matches(&UUIDS[1], value),
        "uuid4" => matches(&UUIDS[2], value),
        "uuid5" => matches(&UUIDS[3], value),
        "ipv4" => value.contains('.') && parse_ip_sloppy(value).is_some(),
        "ipv6" => value.contains(':') && value.parse::<IpAddr>().is_ok(),
        "cidr" => is_cidr(value),
        "hostname" => matches(&HOSTNAME, value) && value.len() <= 255 && value.split('.').all(|p| p.len() <= 63),
        "uri" => value.starts_with('/') || matches(&URI, value),
        _ => true,
    }
}

/// strfmt `IsDate`: Go's `time.Parse("2006-01-02", s)` (month 1..12, the
/// day within that month).
fn is_date(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 || !value.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return false;
    }
    let (Ok(year), Ok(month), Ok(day)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt `IsDateTime`: lower-cased and split at `t`, a date, then
/// `hh:mm:ss[.frac](z|±hh:mm)` with hh ≤ 23, mm ≤ 59, ss ≤ 59.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = TIME.as_ref().and_then(|t| t.captures(parts[1])) else {
        return false;
    };
    &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59"
}

/// `netutils.ParseIPSloppy`: an IP address, IPv4 octets with leading
/// zeros allowed (read as decimal).
fn parse_ip_sloppy(value: &str) -> Option<IpAddr> {
    if let Ok(ip) = value.parse::<IpAddr>() {
        return Some(ip);
    }
    let octets: Vec<&str> = value.split('.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut bytes = [0u8; 4];
    for (byte, octet) in bytes.iter_mut().zip(&octets) {
        if octet.is_empty() || octet.len() > 3 || !octet.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *byte = octet.parse().ok()?;
    }
    Some(IpAddr::from(bytes))
}

/// `netutils.ParseCIDRSloppy`: an address and a prefix length within its
/// family.
fn is_cidr(value: &str) -> bool {
    let Some((address, length)) = value.split_once('/') else {
        return false;
    };
    let Some(ip) = parse_ip_sloppy(address) else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !length.is_empty()
        && length.len() <= 3
        && length.bytes().all(|b| b.is_ascii_digit())
        && length.parse::<u32>().is_ok_and(|l| l <= max)
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn formats_as_kube_openapi_checks_them() {
        for (format, good, bad) in [
            ("byte", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==", "LS0tLS1CRUdJTi..."),
            ("byte", "YWJj", ""),
            ("date-time", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00Z"),
            ("date-time", "2026-02-28t23:59:59.5+01:00", "2026-02-30T00:00:00Z"),
            ("date-time", "2024-02-29T00:00:00Z", "2026-01-01T24:00:00Z"),
            ("date", "2024-02-29", "2023-02-29"),
            ("uuid", "0F8BA5A3-2B4C-4A61-9D1E-7C3E2A9B6F10", "5f1d..."),
            (
                "uuid4",
                "0f8ba5a3-2b4c-4a61-9d1e-7c3e2a9b6f10",
                "0f8ba5a3-2b4c-3a61-9d1e-7c3e2a9b6f10",
            ),
            ("ipv4", "010.0.0.1", "::1"),
            ("ipv6", "fd00::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("hostname", "api.example.com", "-bad.example.com"),
            ("uri", "https://example.com/x", "example.com"),
        ] {
            assert!(is_valid(format, good), "{format}: {good:?} refused");
            assert!(!is_valid(format, bad), "{format}: {bad:?} accepted");
        }
        assert!(is_valid("email", "not checked"));
        assert!(is_valid("int32", "any"));
    }
}
