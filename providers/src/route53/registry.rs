//! Ownership records in external-dns's TXT registry format, so fedns and
//! external-dns can share a hosted zone (external-dns `docs/registry/txt.md`).
//!
//! * The registry record of an RRset `<first>.<rest>` of type T is a TXT
//!   RRset at `<t>-<first>.<rest>` (T in lower case: `a-nginx.example.com`
//!   for the A RRset of `nginx.example.com`), the "new format" that
//!   external-dns writes with `--txt-new-format-only` and that never collides
//!   with a CNAME;
//! * its value is one character-string:
//!   `heritage=external-dns,external-dns/owner=<owner id>,external-dns/resource=<kind>/<namespace>/<name>`;
//! * external-dns's legacy format (the TXT at the record's own name, for
//!   every type) is read, never written: a legacy record of another owner
//!   still keeps fedns off that name.

use fedns_api::RecordType;

/// The `heritage` label every registry value starts with.
const HERITAGE: &str = "heritage=external-dns";
/// Label holding the owner id.
const OWNER_LABEL: &str = "external-dns/owner";
/// Label holding the source object.
const RESOURCE_LABEL: &str = "external-dns/resource";

/// Owner name of the registry TXT RRset for the `record_type` RRset at
/// `name` (normalised: lower case, no trailing dot).
pub fn txt_name(name: &str, record_type: RecordType) -> String {
    format!("{}-{name}", record_type.to_string().to_ascii_lowercase())
}

/// The registry value for an RRset owned by `owner` and made from
/// `resource` (`crd/<namespace>/<name>`), as the TXT's single
/// character-string (unquoted).
pub fn txt_value(owner: &str, resource: Option<&str>) -> String {
    match resource {
        Some(resource) => format!("{HERITAGE},{OWNER_LABEL}={owner},{RESOURCE_LABEL}={resource}"),
        None => format!("{HERITAGE},{OWNER_LABEL}={owner}"),
    }
}

/// The labels of a registry value, if `text` (one unquoted TXT string) is
/// one: the owner id (empty when absent), and the resource.
pub fn parse_value(text: &str) -> Option<(String, Option<String>)> {
    let mut parts = text.split(',');
    if parts.next()?.trim() != HERITAGE {
        return None;
    }
    let mut owner = String::new();
    let mut resource = None;
    for part in parts {
        match part.split_once('=') {
            Some((OWNER_LABEL, value)) => owner = value.to_owned(),
            Some((RESOURCE_LABEL, value)) => resource = Some(value.to_owned()),
            _ => {}
        }
    }
    Some((owner, resource))
}

/// What a registry record at `txt_name` may stand for: the new-format
/// (name, type) it names, if its first label has a type prefix, and always
/// the legacy reading (the name itself, any type).
pub fn covered(txt_name: &str) -> (Option<(String, RecordType)>, String) {
    let typed = RecordType::ALL.iter().find_map(|t| {
        let prefix = format!("{}-", t.to_string().to_ascii_lowercase());
        txt_name
            .strip_prefix(&prefix)
            .filter(|rest| !rest.is_empty() && !rest.starts_with('.'))
            .map(|rest| (rest.to_owned(), *t))
    });
    (typed, txt_name.to_owned())
}

/// The resource label for a DNSEndpoint `namespace/name`, as external-dns's
/// CRD source writes it.
pub fn resource_of(source: &str) -> String {
    format!("crd/{source}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_in_external_dns_format() {
        assert_eq!(txt_name("nginx.example.com", RecordType::A), "a-nginx.example.com");
        assert_eq!(
            txt_name("*.apps.example.com", RecordType::AAAA),
            "aaaa-*.apps.example.com"
        );
        assert_eq!(
            txt_value("fedns", Some("crd/ns/nginx")),
            "heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/ns/nginx"
        );
        assert_eq!(
            parse_value("heritage=external-dns,external-dns/owner=team-a,external-dns/resource=service/default/web"),
            Some(("team-a".into(), Some("service/default/web".into())))
        );
        assert_eq!(parse_value("v=spf1 -all"), None);
        assert_eq!(parse_value(""), None);
        assert_eq!(
            covered("cname-www.example.com"),
            (
                Some(("www.example.com".into(), RecordType::CNAME)),
                "cname-www.example.com".into()
            )
        );
        assert_eq!(covered("www.example.com"), (None, "www.example.com".into()));
        assert_eq!(covered("a-.example.com").0, None);
    }
}
