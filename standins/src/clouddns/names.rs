//! Owner names as Cloud DNS takes them: absolute, labels of letters,
//! digits, `-` and `_` (a whole `*` first label where wildcards are
//! allowed), and whether a name is at or below a zone's apex.

/// Whether `name` is equal to or below `apex` (both absolute, lower case).
pub fn within(name: &str, apex: &str) -> bool {
    if apex == "." {
        return true;
    }
    name == apex || name.strip_suffix(apex).is_some_and(|head| head.ends_with('.'))
}

/// An absolute DNS name: trailing dot, labels of 1 to 63 letters, digits,
/// `-` or `_`, at most 253 characters before the final dot; `*` is allowed
/// as a whole first label when `wildcard`.
pub fn valid_name(name: &str, wildcard: bool) -> bool {
    if name == "." {
        return true;
    }
    let Some(body) = name.strip_suffix('.') else {
        return false;
    };
    if body.is_empty() || body.len() > 253 {
        return false;
    }
    body.split('.').enumerate().all(|(i, label)| {
        (wildcard && i == 0 && label == "*")
            || (!label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouddns_names() {
        assert!(within("a.example.com.", "example.com."));
        assert!(within("example.com.", "example.com."));
        assert!(!within("badexample.com.", "example.com."));
        assert!(valid_name("*.example.com.", true));
        assert!(!valid_name("a.*.example.com.", true));
        assert!(!valid_name("example.com", true));
        assert!(!valid_name("a..com.", true));
    }
}
