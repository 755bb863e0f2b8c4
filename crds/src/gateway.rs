//! Gateway API terms fedns shares between its controller and its
//! emulator's stand-in Gateway controller: the hostname intersection of a
//! Gateway listener and a route, as the Gateway API defines it (`site/content/en/docs/concepts/hostnames.md` of
//! kubernetes-sigs/gateway-api v1.6.1, "Hostname Intersection"; the
//! `hostname` fields in `apis/v1/gateway_types.go` and
//! `apis/v1/httproute_types.go`).

/// The intersected hostname of a listener's `hostname` and one of a
/// route's `hostnames` (`None` on either side: unset, which the Gateway
/// API treats as `*`). Names compare without case and without a trailing
/// dot; the result is lower case.
///
/// - two precise names intersect when equal;
/// - a wildcard `*.suffix` takes a precise name with one or more labels
///   before `.suffix` (never `suffix` itself), either side;
/// - two wildcards intersect when one's suffix ends the other: the more
///   specific (longer) wildcard is the result;
/// - `*` (or unset) takes anything, and gives the other side.
///
/// Returns `None` when they do not intersect, or when both sides are
/// unset or `*` (no hostname can be determined: integrators ignore the
/// pair, as the concept doc's "Integrators" section says).
pub fn intersect(listener: Option<&str>, route: Option<&str>) -> Option<String> {
    let norm = |h: Option<&str>| {
        h.map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty() && h != "*")
    };
    match (norm(listener), norm(route)) {
        (None, None) => None,
        (Some(one), None) | (None, Some(one)) => Some(one),
        (Some(a), Some(b)) => {
            if a == b {
                return Some(a);
            }
            // A wildcard `*.suffix` on either side takes the other side when
            // that has one or more whole labels before `.suffix`; that
            // other side is the more specific name (precise, or a longer
            // wildcard), the intersection.
            for (general, specific) in [(&a, &b), (&b, &a)] {
                if let Some(suffix) = general.strip_prefix('*') {
                    if specific.len() > suffix.len() && specific.ends_with(suffix) {
                        return Some(specific.clone());
                    }
                }
            }
            None
        }
    }
}

/// A wildcard hostname (`*.suffix`), which fedns cannot publish as an
/// address record of one name.
pub fn is_wildcard(hostname: &str) -> bool {
    hostname.starts_with("*.")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example table of hostnames.md ("Some examples"), every row.
    #[test]
    fn the_concept_docs_examples() {
        for (listener, route, want) in [
            ("www.example.com", "www.example.com", Some("www.example.com")),
            ("*.example.com", "www.example.com", Some("www.example.com")),
            (
                "*.example.com",
                "sub.domain.example.com",
                Some("sub.domain.example.com"),
            ),
            ("www.example.com", "*.example.com", Some("www.example.com")),
            (
                "sub.domain.example.com",
                "*.example.com",
                Some("sub.domain.example.com"),
            ),
            ("*.example.com", "*.example.com", Some("*.example.com")),
            ("*.com", "*.example.com", Some("*.example.com")),
            ("*", "www.example.com", Some("www.example.com")),
            // `*` with `*`: it intersects, but gives no name to publish.
            ("*", "*", None),
        ] {
            assert_eq!(
                intersect(Some(listener), Some(route)).as_deref(),
                want,
                "{listener} ∩ {route}"
            );
            // Intersection is symmetric.
            assert_eq!(
                intersect(Some(route), Some(listener)).as_deref(),
                want,
                "{route} ∩ {listener}"
            );
        }
    }

    /// The HTTPRoute `hostnames` docs (apis/v1/httproute_types.go) and the
    /// conformance test `httproute-hostname-intersection` (its listeners
    /// `very.specific.com`, `*.wildcard.io`, `*.anotherwildcard.io`).
    #[test]
    fn the_api_docs_and_conformance_cases() {
        // "A Listener with `test.example.com` as the hostname matches
        // HTTPRoutes that have either not specified any hostnames, or have
        // specified at least one of `test.example.com` or `*.example.com`."
        assert_eq!(
            intersect(Some("test.example.com"), None).as_deref(),
            Some("test.example.com")
        );
        assert_eq!(
            intersect(Some("test.example.com"), Some("*.example.com")).as_deref(),
            Some("test.example.com")
        );
        assert_eq!(intersect(Some("test.example.com"), Some("other.example.com")), None);
        // "A Listener with `*.example.com` ... does not match `example.com`."
        assert_eq!(intersect(Some("*.example.com"), Some("example.com")), None);
        assert_eq!(
            intersect(Some("*.example.com"), Some("foo.test.example.com")).as_deref(),
            Some("foo.test.example.com")
        );
        assert_eq!(intersect(Some("*.example.com"), None).as_deref(), Some("*.example.com"));
        // Conformance: no intersection with any of the three listeners.
        for listener in ["very.specific.com", "*.wildcard.io", "*.anotherwildcard.io"] {
            for route in ["specific.but.wrong.com", "wildcard.io"] {
                assert_eq!(intersect(Some(listener), Some(route)), None, "{listener} ∩ {route}");
            }
        }
        assert_eq!(
            intersect(Some("*.wildcard.io"), Some("bar.wildcard.io")).as_deref(),
            Some("bar.wildcard.io")
        );
        assert_eq!(
            intersect(Some("*.wildcard.io"), Some("*.wildcard.io")).as_deref(),
            Some("*.wildcard.io")
        );
        assert_eq!(
            intersect(Some("very.specific.com"), Some("*.specific.com")).as_deref(),
            Some("very.specific.com")
        );
        // A suffix match is by whole labels: `*.example.com` is no
        // wildcard over `badexample.com`.
        assert_eq!(intersect(Some("*.example.com"), Some("www.badexample.com")), None);
        assert_eq!(intersect(Some("*.ample.com"), Some("www.example.com")), None);
        // Case and a trailing dot do not matter; the result is lower case.
        assert_eq!(
            intersect(Some("WWW.Example.COM."), Some("www.example.com")).as_deref(),
            Some("www.example.com")
        );
        // A wildcard takes a precise name of the same length.
        assert_eq!(
            intersect(Some("x.ab.com"), Some("*.ab.com")).as_deref(),
            Some("x.ab.com")
        );
        assert_eq!(
            intersect(Some("*.ab.com"), Some("x.ab.com")).as_deref(),
            Some("x.ab.com")
        );
        // Neither side set: nothing to publish.
        assert_eq!(intersect(None, None), None);
        assert!(is_wildcard("*.example.com") && !is_wildcard("www.example.com"));
    }
}
