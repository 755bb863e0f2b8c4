//! SOA serials (RFC 1982 arithmetic) and the rules by which a replica
//! chooses the serial it serves for a zone's content.
//!
//! A store either assigns serials itself ([`SerialMode::Assign`]: a new
//! serial whenever the content changes) or follows serials recorded
//! elsewhere ([`SerialMode::Follow`]): one replica records, per zone,
//! the serial of a content fingerprint and the instant from which every
//! replica serves it ([`RecordedSerial`]); each replica serves that
//! serial only once its own content has the recorded fingerprint and the
//! instant has come. Until then it keeps showing the serial it showed
//! before, and its transfers keep answering from the last version whose
//! serial was recorded for it. So a serial names the same content on
//! every replica (an IXFR from a serial another replica served is either
//! the right difference or, when this replica never held that version,
//! the whole zone: RFC 1995 §4), and replicas switch serials at the same
//! instant (within the clocks' skew), so clients asking several replicas
//! in turn do not see the serial go backwards.

use std::collections::BTreeMap;

/// RFC 1982 §3.2: is serial `a` greater than serial `b`?
pub fn serial_gt(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

/// The next serial after `previous`: the current Unix time when that is
/// greater in serial arithmetic (so restarted replicas agree roughly), else
/// `previous + 1` (RFC 1982 §3.1 addition).
pub fn next_serial(previous: u32, unix_seconds: u32) -> u32 {
    if serial_gt(unix_seconds, previous) {
        unix_seconds
    } else {
        previous.wrapping_add(1)
    }
}

/// A serial recorded for one zone's content by the replica that assigns
/// serials (the writer), for every replica to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedSerial {
    /// The SOA serial (RFC 1982).
    pub serial: u32,
    /// Fingerprint of the content it names, as
    /// [`crate::ZoneStore::serial_states`] reports it.
    pub content: u64,
    /// Unix time in milliseconds from which replicas serve it.
    pub active_from_ms: u64,
    /// The serial recorded before it (served until `active_from_ms`), if
    /// any.
    pub previous: Option<u32>,
}

impl RecordedSerial {
    /// True once replicas serve it (`now_ms`: Unix time in milliseconds).
    pub fn due(&self, now_ms: u64) -> bool {
        now_ms >= self.active_from_ms
    }
}

/// How a store chooses serials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SerialMode {
    /// A new serial ([`next_serial`]) whenever a zone's content changes.
    #[default]
    Assign,
    /// The serials recorded by the writer, by lower-case fully qualified
    /// apex (see the module docs).
    Follow(BTreeMap<String, RecordedSerial>),
}

/// What a replica knows of a zone before choosing its serial.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown {
    /// Fingerprint of the content served.
    pub fingerprint: u64,
    /// Serial shown in the SOA (0: none yet).
    pub serial: u32,
    /// The serial names this content on every replica (transfers serve
    /// it).
    pub confirmed: bool,
}

/// The serial to show for content `fingerprint` of zone `apex`, and
/// whether it is confirmed (see [`Shown`]). `old`: what was shown before
/// (None: the zone is new to this replica).
pub(crate) fn choose(
    mode: &SerialMode,
    apex: &str,
    old: Option<Shown>,
    fingerprint: u64,
    now_s: u32,
    now_ms: u64,
) -> (u32, bool) {
    let old = old.filter(|o| o.serial != 0);
    match mode {
        SerialMode::Assign => match old {
            Some(o) if o.fingerprint == fingerprint => (o.serial, true),
            Some(o) => (next_serial(o.serial, now_s), true),
            None => (now_s, true),
        },
        SerialMode::Follow(recorded) => {
            let record = recorded.get(apex);
            if let Some(r) = record {
                // Never below a confirmed serial shown before; an
                // unconfirmed one of our own gives way.
                let newer = old.is_none_or(|o| !o.confirmed || o.serial == r.serial || serial_gt(r.serial, o.serial));
                if r.content == fingerprint && r.due(now_ms) && newer {
                    return (r.serial, true);
                }
            }
            match (old, record) {
                // Unchanged, or waiting for the record of the new content.
                (Some(o), _) => (o.serial, o.confirmed && o.fingerprint == fingerprint),
                // New here: what the other replicas show now.
                (None, Some(r)) if r.due(now_ms) => (r.serial, false),
                (None, Some(r)) => (r.previous.unwrap_or(r.serial), false),
                // Nothing recorded yet (a new zone): a serial of our own,
                // never used for transfers.
                (None, None) => (now_s, false),
            }
        }
    }
}

/// The earliest `active_from_ms` after `now_ms` among `mode`'s records
/// (when a follower must look again), if any.
pub(crate) fn next_due(mode: &SerialMode, now_ms: u64) -> Option<u64> {
    match mode {
        SerialMode::Assign => None,
        SerialMode::Follow(recorded) => recorded
            .values()
            .filter(|r| !r.due(now_ms))
            .map(|r| r.active_from_ms)
            .min(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1982_comparisons() {
        assert!(serial_gt(2, 1));
        assert!(!serial_gt(1, 2));
        assert!(!serial_gt(5, 5));
        assert!(serial_gt(0, u32::MAX)); // wrapped
        assert!(serial_gt(100, u32::MAX - 100));
        assert!(!serial_gt(u32::MAX - 100, 100));
    }

    #[test]
    fn next_serial_rises_even_when_the_clock_does_not() {
        assert_eq!(next_serial(10, 1000), 1000);
        assert_eq!(next_serial(1000, 1000), 1001);
        assert_eq!(next_serial(2000, 1000), 2001);
        assert_eq!(next_serial(u32::MAX, 5), 5); // 5 is after MAX in serial space
    }

    fn follow(serial: u32, content: u64, active_from_ms: u64, previous: Option<u32>) -> SerialMode {
        let record = RecordedSerial {
            serial,
            content,
            active_from_ms,
            previous,
        };
        SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), record)]))
    }

    fn shown(fingerprint: u64, serial: u32, confirmed: bool) -> Option<Shown> {
        Some(Shown {
            fingerprint,
            serial,
            confirmed,
        })
    }

    #[test]
    fn a_follower_serves_a_recorded_serial_only_for_its_content_and_from_its_instant() {
        let mode = follow(20, 0xB, 5_000, Some(10));
        let apex = "example.com.";
        // Content B, before the instant: still 10 (the content A's serial),
        // no longer confirmed (transfers keep serving A at 10).
        assert_eq!(choose(&mode, apex, shown(0xA, 10, true), 0xB, 1, 4_999), (10, false));
        // From the instant: 20, confirmed.
        assert_eq!(choose(&mode, apex, shown(0xB, 10, false), 0xB, 1, 5_000), (20, true));
        // Content C, not recorded: keeps showing 10.
        assert_eq!(choose(&mode, apex, shown(0xA, 10, true), 0xC, 1, 9_000), (10, false));
        // Unchanged A while the record names B: stays confirmed at 10.
        assert_eq!(choose(&mode, apex, shown(0xA, 10, true), 0xA, 1, 9_000), (10, true));
        // Never lower than a confirmed serial shown.
        assert_eq!(choose(&mode, apex, shown(0xA, 30, true), 0xB, 1, 9_000), (30, false));
        // An unconfirmed one of our own (a zone new here) gives way.
        assert_eq!(choose(&mode, apex, shown(0xB, 30, false), 0xB, 1, 9_000), (20, true));
        // Wrapped around: 5 comes after u32::MAX.
        let wrapped = follow(5, 0xB, 0, Some(u32::MAX));
        assert_eq!(choose(&wrapped, apex, shown(0xA, u32::MAX, true), 0xB, 1, 1), (5, true));
    }

    #[test]
    fn a_late_replica_shows_what_the_others_show() {
        let mode = follow(20, 0xB, 5_000, Some(10));
        let apex = "example.com.";
        assert_eq!(choose(&mode, apex, None, 0xB, 1, 4_000), (10, false));
        assert_eq!(choose(&mode, apex, None, 0xC, 1, 6_000), (20, false));
        assert_eq!(choose(&mode, apex, None, 0xB, 1, 6_000), (20, true));
        assert_eq!(choose(&mode, "other.example.", None, 0xB, 77, 6_000), (77, false));
        assert_eq!(next_due(&mode, 4_000), Some(5_000));
        assert_eq!(next_due(&mode, 5_000), None);
    }

    #[test]
    fn assigning_rises_on_every_change() {
        let mode = SerialMode::Assign;
        assert_eq!(choose(&mode, "a.", None, 1, 100, 0), (100, true));
        assert_eq!(choose(&mode, "a.", shown(1, 100, true), 1, 200, 0), (100, true));
        assert_eq!(choose(&mode, "a.", shown(1, 100, true), 2, 100, 0), (101, true));
    }
}
