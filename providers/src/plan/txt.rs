//! TXT targets: what a DNSEndpoint's TXT target means, and the one
//! presentation form every sink compares and publishes.
//!
//! * A target in double quotes is zone-file presentation form (RFC 1035
//!   §5.1): one or more character-strings, each quoted (`"a" "b"`) or a
//!   bare word, with `\"`, `\\` and `\DDD` escapes. This is how
//!   external-dns's own objects carry TXT values (`"v=spf1 -all"`).
//! * Any other target is one string, taken as is and split into
//!   character-strings of at most 255 octets (RFC 1035 §3.3).
//!
//! The canonical form ([`presentation`]) quotes every character-string and
//! escapes `"`, `\` and octets outside printable ASCII as `\DDD`: the form
//! Route53 stores and external-dns writes for a quoted target.
//!
//! Why not hickory's zone lexer: it decodes `\DDD` above 127 into the
//! UTF-8 encoding of a character instead of the octet.

/// Longest character-string (RFC 1035 §3.3), in octets.
pub const MAX_CHARACTER_STRING: usize = 255;

/// The character-strings a TXT target stands for.
///
/// # Errors
/// A quoted target that is not valid presentation form (an unclosed
/// quote, a `\DDD` above 255, a string over 255 octets), named in one line.
pub fn strings_of_target(target: &str) -> Result<Vec<Vec<u8>>, String> {
    if target.trim_start().starts_with('"') {
        return parse_presentation(target);
    }
    Ok(split(target.as_bytes()))
}

/// One text as character-strings of at most 255 octets (an empty text is
/// one empty string).
pub fn split(text: &[u8]) -> Vec<Vec<u8>> {
    if text.is_empty() {
        return vec![Vec::new()];
    }
    text.chunks(MAX_CHARACTER_STRING).map(<[u8]>::to_vec).collect()
}

/// Parses zone-file presentation form: character-strings separated by
/// white space, each `"quoted"` or a bare word.
///
/// # Errors
/// See [`strings_of_target`].
pub fn parse_presentation(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let bytes = text.trim().as_bytes();
    let mut strings = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let quoted = bytes[i] == b'"';
        if quoted {
            i += 1;
        }
        let mut current = Vec::new();
        let mut closed = !quoted;
        while i < bytes.len() {
            let byte = bytes[i];
            if quoted && byte == b'"' {
                closed = true;
                i += 1;
                break;
            }
            if !quoted && (byte.is_ascii_whitespace() || byte == b'"') {
                break;
            }
            if byte == b'\\' {
                let digits = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(u8::is_ascii_digit));
                if let Some(digits) = digits {
                    let value = digits.iter().fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
                    let octet = u8::try_from(value).map_err(|_| format!("escape \\{value} is above 255"))?;
                    current.push(octet);
                    i += 4;
                    continue;
                }
                match bytes.get(i + 1) {
                    Some(next) => current.push(*next),
                    None => return Err("a backslash ends the text".into()),
                }
                i += 2;
                continue;
            }
            current.push(byte);
            i += 1;
        }
        if !closed {
            return Err("a quoted character-string is not closed".into());
        }
        if current.len() > MAX_CHARACTER_STRING {
            return Err(format!(
                "a character-string of {} octets is longer than {MAX_CHARACTER_STRING} (RFC 1035 §3.3); split it into several quoted strings",
                current.len()
            ));
        }
        strings.push(current);
    }
    if strings.is_empty() {
        return Err("no character-string".into());
    }
    Ok(strings)
}

/// The canonical presentation form: every string quoted, `"` and `\`
/// escaped, octets outside printable ASCII as `\DDD`; strings separated
/// by one space.
pub fn presentation<S: AsRef<[u8]>>(strings: &[S]) -> String {
    let mut out = String::new();
    for (index, string) in strings.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        out.push('"');
        for &byte in string.as_ref() {
            match byte {
                b'"' | b'\\' => {
                    out.push('\\');
                    out.push(char::from(byte));
                }
                0x20..=0x7e => out.push(char::from(byte)),
                other => out.push_str(&format!("\\{other:03}")),
            }
        }
        out.push('"');
    }
    out
}

/// The strings of a canonical presentation (or any target) joined into
/// one text: what CoreDNS's etcd plugin stores (`text`) and what the
/// external-dns registry reads. Invalid input is returned as given.
pub fn concatenated(target: &str) -> String {
    match strings_of_target(target) {
        Ok(strings) => String::from_utf8_lossy(&strings.concat()).into_owned(),
        Err(_) => target.to_owned(),
    }
}

/// A target's canonical form ([`presentation`] of [`strings_of_target`]).
///
/// # Errors
/// See [`strings_of_target`].
pub fn canonical(target: &str) -> Result<String, String> {
    strings_of_target(target).map(|s| presentation(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_targets_are_presentation_form() {
        assert_eq!(strings_of_target("\"v=spf1 -all\"").unwrap(), [b"v=spf1 -all".to_vec()]);
        assert_eq!(
            strings_of_target("\"a\" \"b\"").unwrap(),
            [b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(strings_of_target("\"a\"b").unwrap(), [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(
            strings_of_target(r#""say \"hi\" \\ now\007" "\200""#).unwrap(),
            [b"say \"hi\" \\ now\x07".to_vec(), vec![200]]
        );
        assert_eq!(strings_of_target("\"\"").unwrap(), [Vec::<u8>::new()]);
        assert!(strings_of_target("\"open").unwrap_err().contains("not closed"));
        assert!(strings_of_target(r#""\256""#).unwrap_err().contains("above 255"));
        let long = format!("\"{}\"", "x".repeat(256));
        assert!(strings_of_target(&long).unwrap_err().contains("256 octets"));
    }

    #[test]
    fn unquoted_targets_are_one_string_split_at_255() {
        assert_eq!(strings_of_target("hello world").unwrap(), [b"hello world".to_vec()]);
        let long = "k".repeat(600);
        let strings = strings_of_target(&long).unwrap();
        assert_eq!(strings.iter().map(Vec::len).collect::<Vec<_>>(), [255, 255, 90]);
        assert_eq!(strings_of_target("").unwrap(), [Vec::<u8>::new()]);
    }

    #[test]
    fn canonical_form_round_trips() {
        for target in [
            "\"v=spf1 -all\"",
            "\"a\" \"b\"",
            r#""say \"hi\" \\ now\007""#,
            "plain text with \"quotes\" inside",
        ] {
            let once = canonical(target).unwrap();
            assert_eq!(canonical(&once).unwrap(), once, "{target}");
        }
        assert_eq!(canonical("hello").unwrap(), "\"hello\"");
        assert_eq!(canonical("\"a\"   \"b\"").unwrap(), "\"a\" \"b\"");
        assert_eq!(concatenated("\"a\" \"b\""), "ab");
        assert_eq!(concatenated("heritage=external-dns"), "heritage=external-dns");
    }
}
