//! `duration(string)` as cel-go has it, on Go's `time.ParseDuration`
//! (`time/format.go`), as an int of nanoseconds (no duration type).

use cel::{ExecutionError, Value};

use super::library::{out, string_arg, Args, Out};

/// `duration(string)`: Go's `time.ParseDuration` (what cel-go's
/// `duration` calls), as an int of nanoseconds. The crate is built
/// without `chrono`, so there is no duration type: comparing two
/// durations (`==`, `!=`, `<`, `>`, ...) behaves as on the API server,
/// which is all the CRDs fedns serves use (gateway-api's HTTPRoute
/// `timeouts` rule); arithmetic mixing durations with numbers is not
/// refused as the API server would.
pub(super) fn duration_fn<'b, 'v>(args: Args<'b, 'v>) -> Out<'b, 'v> {
    let text = string_arg(&args, 0, "duration")?;
    match parse_go_duration(&text) {
        Some(nanos) => out(Value::Int(nanos)),
        None => Err(ExecutionError::function_error(
            "duration",
            format!("time: invalid duration {:?}", text.as_str()),
        )),
    }
}

/// Go's `time.ParseDuration`: an optional sign, then one or more decimal
/// numbers (with an optional fraction) each followed by a unit (`ns`,
/// `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`); `0` alone is zero. Nanoseconds,
/// `None` when malformed or out of range.
fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * scale;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    // Whole nanoseconds, as Go keeps them.
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::parse_go_duration;

    /// Go's `time.ParseDuration` examples and the Gateway API's Duration
    /// shape (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`).
    #[test]
    fn go_durations_parse_as_go_parses_them() {
        for (text, nanos) in [
            ("0", Some(0)),
            ("0s", Some(0)),
            ("1h30m", Some(5_400_000_000_000)),
            ("10s", Some(10_000_000_000)),
            ("500ms", Some(500_000_000)),
            ("1.5h", Some(5_400_000_000_000)),
            ("-2m", Some(-120_000_000_000)),
            ("300us", Some(300_000)),
            ("1h2m3s4ms", Some(3_723_004_000_000)),
            ("", None),
            ("1", None),
            ("s", None),
            ("1d", None),
            ("1..5s", None),
        ] {
            assert_eq!(parse_go_duration(text), nanos, "{text:?}");
        }
    }
}
