//! DNS name validation: the one place every fedns crate checks names.
//!
//! Two grammars are used:
//!
//! * **host names** ([`validate_hostname`]): the "preferred name syntax" of
//!   RFC 1035 §2.3.1 as relaxed by RFC 1123 §2.1 (a label may start with a
//!   digit): letters, digits and hyphens (LDH), no hyphen at either end of a
//!   label. Used for zones, name servers, prefixes, Ingress hosts.
//! * **owner names** ([`validate_owner_name`]): host names, plus labels that
//!   start with an underscore (RFC 8552 "attrleaf" labels such as
//!   `_http._tcp` or `_dmarc`) and a leading wildcard label `*`
//!   (RFC 4592). Used for `DNSEndpoint.spec.endpoints[].dnsName`, because
//!   SRV and TXT owners need them.
//!
//! Both grammars share these rules:
//!
//! * a label holds 1 to 63 octets (RFC 1035 §2.3.4); empty labels (`a..b`,
//!   a leading dot) are rejected;
//! * a name holds at most 253 octets in presentation form without the
//!   trailing dot (255 octets on the wire, RFC 1035 §3.1);
//! * one trailing dot is accepted (an absolute name) and removed by
//!   [`normalize_hostname`] / [`normalize_owner_name`];
//! * upper case is accepted and folded to lower case when normalising
//!   (names compare case-insensitively, RFC 4343);
//! * non-ASCII input (an IDN U-label such as `bücher.example`) is
//!   **rejected**, not converted: write the A-label (`xn--bcher-kva.example`)
//!   instead. fedns never guesses an IDNA mapping on the operator's behalf.
//!
//! The same rules are exported as regular expressions ([`HOSTNAME_PATTERN`],
//! [`OWNER_NAME_PATTERN`], [`LABEL_PATTERN`]) for the CRDs' OpenAPI schemas,
//! so the API server and the Rust code accept the same strings. A pattern
//! cannot count octets across labels, so the schemas pair it with
//! `maxLength: 253` ([`MAX_NAME_OCTETS`]); a 253-octet name written with its
//! trailing dot therefore passes this module but not the schema; write names
//! in objects without the trailing dot.

use std::fmt;

/// Longest label, in octets (RFC 1035 §2.3.4).
pub const MAX_LABEL_OCTETS: usize = 63;

/// Longest name, in octets of presentation form without the trailing dot
/// (255 octets on the wire, RFC 1035 §3.1, minus length octets and root).
pub const MAX_NAME_OCTETS: usize = 253;

/// One LDH label (RFC 1123 §2.1), anchored: `^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$`.
pub const LABEL_PATTERN: &str = r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$";

/// A host name: LDH labels separated by dots, optional trailing dot.
/// Pair with `maxLength: 253`.
pub const HOSTNAME_PATTERN: &str =
    r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?$";

/// An owner name: an optional leading `*.` then labels that are LDH or
/// `_` followed by LDH (at most 63 octets in all). Pair with `maxLength: 253`.
pub const OWNER_NAME_PATTERN: &str = r"^(\*\.)?(_?[A-Za-z0-9]([-A-Za-z0-9]{0,60}[A-Za-z0-9])?|[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)(\.(_?[A-Za-z0-9]([-A-Za-z0-9]{0,60}[A-Za-z0-9])?|[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?))*\.?$";

/// Why a name was rejected. `Display` gives a one-line message that names
/// the offending label, fit for a condition message or a CLI error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The input was empty (or only a dot: the root is never a valid name here).
    #[error("name is empty")]
    Empty,
    /// The name is longer than [`MAX_NAME_OCTETS`].
    #[error("name is {octets} octets long; the limit is {MAX_NAME_OCTETS} (RFC 1035 §3.1)")]
    NameTooLong {
        /// Length in octets, without the trailing dot.
        octets: usize,
    },
    /// Two dots in a row or a leading dot.
    #[error("name {name:?} has an empty label")]
    EmptyLabel {
        /// The whole input.
        name: String,
    },
    /// A label is longer than [`MAX_LABEL_OCTETS`].
    #[error("label {label:?} is {octets} octets long; the limit is {MAX_LABEL_OCTETS} (RFC 1035 §2.3.4)")]
    LabelTooLong {
        /// The offending label.
        label: String,
        /// Its length in octets.
        octets: usize,
    },
    /// A label starts or ends with a hyphen.
    #[error("label {label:?} starts or ends with a hyphen (RFC 1123 §2.1)")]
    HyphenAtEdge {
        /// The offending label.
        label: String,
    },
    /// A character outside letters, digits and hyphen.
    #[error("label {label:?} contains {character:?}; only letters, digits and hyphens are allowed{hint}")]
    InvalidCharacter {
        /// The offending label.
        label: String,
        /// The first character that is not allowed.
        character: char,
        /// Extra advice for a common mistake (may be empty).
        hint: &'static str,
    },
    /// Non-ASCII input: an IDN U-label. fedns rejects it rather than convert.
    #[error("name {name:?} is not ASCII; write internationalised names as A-labels (punycode, `xn--...`)")]
    NotAscii {
        /// The whole input.
        name: String,
    },
    /// `*` somewhere other than the whole first label.
    #[error("a wildcard must be the whole first label (RFC 4592), found in {label:?}")]
    MisplacedWildcard {
        /// The offending label.
        label: String,
    },
}

/// Which grammar a name is checked against; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// LDH labels only.
    Hostname,
    /// LDH labels, `_`-prefixed labels and a leading `*` label.
    OwnerName,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Hostname => "host name",
            NameKind::OwnerName => "owner name",
        })
    }
}

/// Checks one LDH label (no dots), e.g. a Service name used as the first
/// label of a federation name.
///
/// # Errors
/// [`NameError`] saying which rule the label breaks.
pub fn validate_label(label: &str) -> Result<(), NameError> {
    if !label.is_ascii() {
        return Err(NameError::NotAscii { name: label.to_owned() });
    }
    if label.is_empty() {
        return Err(NameError::Empty);
    }
    check_label(label, NameKind::Hostname, false)
}

/// Checks a host name (LDH labels; trailing dot allowed).
///
/// # Errors
/// [`NameError`] saying which rule the name breaks.
pub fn validate_hostname(name: &str) -> Result<(), NameError> {
    validate(name, NameKind::Hostname)
}

/// Checks an owner name (host name plus `_label`s and a leading `*`).
///
/// # Errors
/// [`NameError`] saying which rule the name breaks.
pub fn validate_owner_name(name: &str) -> Result<(), NameError> {
    validate(name, NameKind::OwnerName)
}

/// Checks `name` against the grammar `kind`.
///
/// # Errors
/// [`NameError`] saying which rule the name breaks.
pub fn validate(name: &str, kind: NameKind) -> Result<(), NameError> {
    if !name.is_ascii() {
        return Err(NameError::NotAscii { name: name.to_owned() });
    }
    let relative = name.strip_suffix('.').unwrap_or(name);
    if relative.is_empty() {
        return Err(NameError::Empty);
    }
    if relative.len() > MAX_NAME_OCTETS {
        return Err(NameError::NameTooLong { octets: relative.len() });
    }
    for (index, label) in relative.split('.').enumerate() {
        if label.is_empty() {
            return Err(NameError::EmptyLabel { name: name.to_owned() });
        }
        check_label(label, kind, index == 0)?;
    }
    Ok(())
}

/// Validates a host name and returns it lower-cased without the trailing dot,
/// the form fedns stores and compares.
///
/// # Errors
/// As [`validate_hostname`].
pub fn normalize_hostname(name: &str) -> Result<String, NameError> {
    normalize(name, NameKind::Hostname)
}

/// Validates an owner name and returns it lower-cased without the trailing dot.
///
/// # Errors
/// As [`validate_owner_name`].
pub fn normalize_owner_name(name: &str) -> Result<String, NameError> {
    normalize(name, NameKind::OwnerName)
}

/// Validates `name` as `kind` and returns its normal form (lower case, no trailing dot).
///
/// # Errors
/// As [`validate`].
pub fn normalize(name: &str, kind: NameKind) -> Result<String, NameError> {
    validate(name, kind)?;
    Ok(name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase())
}

/// Joins a relative prefix and a zone into one normalised name,
/// checking the result (e.g. that it stays within 253 octets).
///
/// # Errors
/// [`NameError`] for an invalid prefix, zone or combined name.
pub fn join(prefix: &str, zone: &str, kind: NameKind) -> Result<String, NameError> {
    let prefix = prefix.strip_suffix('.').unwrap_or(prefix);
    normalize(&format!("{prefix}.{zone}"), kind)
}

/// Is `name` equal to `zone` or below it? Both must be normalised.
pub fn is_subdomain(name: &str, zone: &str) -> bool {
    name == zone
        || (name.len() > zone.len() && name.ends_with(zone) && name.as_bytes()[name.len() - zone.len() - 1] == b'.')
}

fn check_label(label: &str, kind: NameKind, first: bool) -> Result<(), NameError> {
    if label.len() > MAX_LABEL_OCTETS {
        return Err(NameError::LabelTooLong {
            label: label.to_owned(),
            octets: label.len(),
        });
    }
    if kind == NameKind::OwnerName {
        if label == "*" {
            return if first {
                Ok(())
            } else {
                Err(NameError::MisplacedWildcard {
                    label: label.to_owned(),
                })
            };
        }
        if let Some(rest) = label.strip_prefix('_') {
            if rest.is_empty() {
                return Err(NameError::InvalidCharacter {
                    label: label.to_owned(),
                    character: '_',
                    hint: "; an underscore label needs a name after it",
                });
            }
            return check_ldh(rest, label, kind);
        }
    }
    check_ldh(label, label, kind)
}

fn check_ldh(body: &str, label: &str, kind: NameKind) -> Result<(), NameError> {
    if let Some(character) = body.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-')) {
        let hint = match (character, kind) {
            ('_', NameKind::Hostname) => {
                "; underscores are only allowed as the first character of owner-name labels such as _http._tcp"
            }
            ('_', NameKind::OwnerName) => "; an underscore may only start a label",
            ('*', NameKind::Hostname) => "; wildcards are not allowed here",
            ('*', NameKind::OwnerName) => "; a wildcard must be the whole first label",
            _ => "",
        };
        return Err(NameError::InvalidCharacter {
            label: label.to_owned(),
            character,
            hint,
        });
    }
    if body.starts_with('-') || body.ends_with('-') {
        return Err(NameError::HyphenAtEdge {
            label: label.to_owned(),
        });
    }
    Ok(())
}

/// An IPv4 or IPv6 address (no prefix length, no port).
pub const IP_ADDRESS_PATTERN: &str = r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$";
/// An IPv4 or IPv6 network in CIDR notation (`192.0.2.0/24`, `2001:db8::/48`).
pub const CIDR_PATTERN: &str = r"^([0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/[0-9]{1,3})$";
/// `address:port`, IPv6 in brackets (`192.0.2.1:53`, `[2001:db8::1]:53`).
pub const ADDRESS_PORT_PATTERN: &str = r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$";

#[cfg(test)]
mod tests {
    use super::*;

    fn label(n: usize) -> String {
        "a".repeat(n)
    }

    /// A name of exactly `octets` octets made of 63-octet labels.
    fn name_of(octets: usize) -> String {
        let mut parts = Vec::new();
        let mut left = octets;
        while left > 0 {
            let take = left.min(63);
            parts.push(label(take));
            left -= take;
            left = left.saturating_sub(1); // the dot before the next label
        }
        let name = parts.join(".");
        assert_eq!(name.len(), octets);
        name
    }

    #[test]
    fn label_length_limits() {
        assert!(validate_hostname(&format!("{}.example.com", label(63))).is_ok());
        assert_eq!(
            validate_hostname(&format!("{}.example.com", label(64))),
            Err(NameError::LabelTooLong {
                label: label(64),
                octets: 64
            })
        );
        assert!(validate_label(&label(63)).is_ok());
        assert!(validate_label(&label(64)).is_err());
        // An underscore label counts the underscore.
        assert!(validate_owner_name(&format!("_{}.example.com", label(62))).is_ok());
        assert!(validate_owner_name(&format!("_{}.example.com", label(63))).is_err());
    }

    #[test]
    fn name_length_limits() {
        assert!(validate_hostname(&name_of(253)).is_ok());
        assert_eq!(
            validate_hostname(&name_of(254)),
            Err(NameError::NameTooLong { octets: 254 })
        );
        // The trailing dot does not count.
        assert!(validate_hostname(&format!("{}.", name_of(253))).is_ok());
        assert!(validate_hostname(&format!("{}.", name_of(254))).is_err());
    }

    #[test]
    fn trailing_dot_and_case_are_normalised() {
        assert_eq!(normalize_hostname("Example.COM.").unwrap(), "example.com");
        assert_eq!(normalize_hostname("example.com").unwrap(), "example.com");
        assert_eq!(validate_hostname("."), Err(NameError::Empty));
        assert_eq!(validate_hostname(""), Err(NameError::Empty));
        assert!(validate_hostname("example.com..").is_err());
    }

    #[test]
    fn empty_labels_are_rejected() {
        for bad in ["a..b", ".a", "a.b..", "..", "a. b"] {
            assert!(validate_hostname(bad).is_err(), "{bad}");
        }
        assert!(matches!(validate_hostname("a..b"), Err(NameError::EmptyLabel { .. })));
    }

    #[test]
    fn hyphens() {
        assert!(validate_hostname("a-b.example.com").is_ok());
        assert!(validate_hostname("xn--bcher-kva.example").is_ok());
        assert!(matches!(
            validate_hostname("-a.example"),
            Err(NameError::HyphenAtEdge { .. })
        ));
        assert!(matches!(
            validate_hostname("a-.example"),
            Err(NameError::HyphenAtEdge { .. })
        ));
        assert!(matches!(
            validate_owner_name("_-a.example"),
            Err(NameError::HyphenAtEdge { .. })
        ));
    }

    #[test]
    fn digits_may_start_a_label() {
        assert!(validate_hostname("3com.example").is_ok());
        assert!(validate_hostname("1.2.3.4").is_ok());
    }

    #[test]
    fn underscores_only_in_owner_names_and_only_first() {
        assert!(validate_owner_name("_http._tcp.example.com").is_ok());
        assert!(validate_owner_name("_dmarc.example.com").is_ok());
        let err = validate_hostname("_http._tcp.example.com").unwrap_err();
        assert!(err.to_string().contains("underscores are only allowed"), "{err}");
        assert!(validate_owner_name("a_b.example.com").is_err());
        assert!(validate_owner_name("_.example.com").is_err());
    }

    #[test]
    fn wildcards() {
        assert!(validate_owner_name("*.example.com").is_ok());
        assert!(matches!(
            validate_owner_name("a.*.example.com"),
            Err(NameError::MisplacedWildcard { .. })
        ));
        assert!(validate_owner_name("*a.example.com").is_err());
        assert!(validate_hostname("*.example.com").is_err());
    }

    #[test]
    fn idn_is_rejected_not_converted() {
        let err = validate_hostname("bücher.example").unwrap_err();
        assert!(matches!(err, NameError::NotAscii { .. }));
        assert!(err.to_string().contains("xn--"));
        assert!(validate_label("ü").is_err());
    }

    #[test]
    fn other_characters() {
        for bad in ["a b.com", "a/b.com", "a@b.com", "exa mple"] {
            assert!(
                matches!(validate_hostname(bad), Err(NameError::InvalidCharacter { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn join_checks_the_result() {
        assert_eq!(
            join("nginx.ns.myfed.svc", "Example.com.", NameKind::Hostname).unwrap(),
            "nginx.ns.myfed.svc.example.com"
        );
        let long = name_of(250);
        assert!(matches!(
            join(&long, "example.com", NameKind::Hostname),
            Err(NameError::NameTooLong { .. })
        ));
    }

    #[test]
    fn subdomains() {
        assert!(is_subdomain("a.example.com", "example.com"));
        assert!(is_subdomain("example.com", "example.com"));
        assert!(!is_subdomain("aexample.com", "example.com"));
        assert!(!is_subdomain("com", "example.com"));
    }
}
