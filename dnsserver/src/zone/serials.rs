//! SOA serials (RFC 1982 arithmetic) and the rules by which a replica
//! chooses the serial it serves for a zone's content.
//!
//! A store either assigns serials itself ([`SerialMode::Assign`]: a new
//! serial whenever the content changes) or follows serials recorded
//! elsewhere ([`SerialMode::Follow`]): one replica records, per zone, the
//! serial of a content fingerprint and the instant from which every
//! replica serves it ([`RecordedSerial`]).
//!
//! A follower serves its records as soon as it has them; the serial is
//! another matter. When its content has a record's fingerprint it builds
//! that version for transfers and holds it; at the record's instant its
//! answers show the serial (the answer path compares the clock itself, so
//! no publishing delay moves the switch) and its transfers move to the held
//! version. A record whose content it never had (it coalesced changes, or
//! started after) is shown all the same once due, while transfers stay at
//! the last version it holds. So a serial names the same content on every
//! replica: an IXFR from a serial another replica served is the right
//! difference or, when this replica never held that version, the whole
//! zone (RFC 1995 §4). Replicas switch at the same instant (within their
//! clocks' skew), never below a recorded serial shown, so clients asking
//! several replicas in turn do not see the serial go backwards; a replica
//! new to a zone shows what the others show (the record's previous serial
//! until it is due; 0 for a zone nothing was recorded for yet). A
//! record's previous serial was due when the record was written (the
//! writer replaces only due records), so a replica never shows less than
//! it, whether or not it applied that serial's own switch in time.

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
    /// The serial shown before it (until `active_from_ms`): the one
    /// recorded before, 0 for a zone's first record.
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
    /// Zones whose serials the writer records, by lower-case fully
    /// qualified apex, with their record (None: none yet); see the module
    /// docs. Zones not listed are assigned serials as in
    /// [`SerialMode::Assign`].
    Follow(BTreeMap<String, Option<RecordedSerial>>),
}

/// What a replica showed for a zone before choosing its serial.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown {
    /// Fingerprint of the content served.
    pub fingerprint: u64,
    /// Serial shown in the SOA (0: none yet).
    pub serial: u32,
    /// The zone's transfers serve the version recorded for `serial`.
    pub confirmed: bool,
    /// `serial` came from a record (not made up by this replica for a
    /// zone nothing was recorded for yet).
    pub from_record: bool,
}

/// What to do with a zone's serial at a publish, or when records change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The serial to show in the SOA.
    pub serial: u32,
    /// See [`Shown::confirmed`].
    pub confirmed: bool,
    /// See [`Shown::from_record`].
    pub from_record: bool,
    /// The version held for a record comes due: transfers move to it.
    pub activate_held: bool,
    /// A record naming the content now served: hold its version (built
    /// from this content); when it is due already, `serial` is its serial
    /// and transfers move to it at once.
    pub capture: Option<RecordedSerial>,
    /// A record not yet due whose serial answers show from its instant:
    /// (serial, Unix time in milliseconds).
    pub pending: Option<(u32, u64)>,
    /// The zone is not followed: its serial was assigned here, and its
    /// transfers move to every new version.
    pub assigned: bool,
}

/// The serial to show for content `fingerprint` of zone `apex` (see the
/// module docs) at `now` (Unix time in seconds and milliseconds). `old`: what was shown before (None: the zone is new
/// here); `held`: the record whose version this replica holds until it is
/// due; `unversioned`: the zone takes part in transfers but has no version
/// yet (transfers were just turned on), so a version is built for the
/// record when the content is its.
///
/// In [`SerialMode::Follow`] the serial shown is the newest due record's
/// (never below a recorded serial shown before), transfers move only to
/// versions whose content had the record's fingerprint when this replica
/// built them, and a zone new here shows what the other replicas show now
/// (the record's previous serial until it is due).
pub(crate) fn choose(
    mode: &SerialMode,
    apex: &str,
    old: Option<Shown>,
    held: Option<&RecordedSerial>,
    unversioned: bool,
    fingerprint: u64,
    (now_s, now_ms): (u32, u64),
) -> Decision {
    let old = old.filter(|o| o.serial != 0);
    let decision = |serial, confirmed, from_record| Decision {
        serial,
        confirmed,
        from_record,
        activate_held: false,
        capture: None,
        pending: None,
        assigned: false,
    };
    let followed = match mode {
        SerialMode::Assign => None,
        SerialMode::Follow(recorded) => recorded.get(apex),
    };
    let Some(record) = followed else {
        let mut d = match old {
            Some(o) if o.fingerprint == fingerprint => decision(o.serial, true, false),
            Some(o) => decision(next_serial(o.serial, now_s), true, false),
            None => decision(now_s, true, false),
        };
        d.assigned = true;
        return d;
    };
    let record = record.as_ref();
    let mut d = match (old, record) {
        (Some(o), _) => decision(o.serial, o.confirmed, o.from_record),
        (None, Some(r)) if r.due(now_ms) => decision(r.serial, false, true),
        (None, Some(r)) => decision(r.previous.unwrap_or(r.serial), false, true),
        // Nothing recorded yet (a new zone): 0, as on every replica, until
        // the first record is due.
        (None, None) => decision(0, false, false),
    };
    // A recorded serial may replace the one shown when it is not older.
    // (0 is no serial yet, whatever RFC 1982 says of its distance.)
    let may_show = |d: &Decision, serial: u32| {
        !d.from_record || d.serial == 0 || serial == d.serial || serial_gt(serial, d.serial)
    };
    // A record's previous serial was due when the record was written (the
    // writer replaces only a due record), so every replica on time shows
    // it or a later one. A replica that had it only as a pending switch
    // (it started while it was pending, with other content) and learns the
    // next record the moment it is written (at that instant, by the
    // writer) would otherwise drop the switch and go on showing the serial
    // before: one whole record behind the others until the next instant.
    if let Some(previous) = record.and_then(|r| r.previous) {
        if previous != 0 && previous != d.serial && may_show(&d, previous) {
            d.serial = previous;
            d.confirmed = false;
            d.from_record = true;
        }
    }
    if let Some(h) = held.filter(|h| h.due(now_ms) && may_show(&d, h.serial)) {
        d.serial = h.serial;
        d.confirmed = true;
        d.from_record = true;
        d.activate_held = true;
    }
    if let Some(r) = record.filter(|r| may_show(&d, r.serial)) {
        let have =
            !unversioned && ((d.serial == r.serial && d.confirmed) || held.is_some_and(|h| h.serial == r.serial));
        if r.content == fingerprint && !have {
            d.capture = Some(*r);
            if r.due(now_ms) {
                d.serial = r.serial;
                d.confirmed = true;
                d.from_record = true;
            }
        } else if r.due(now_ms) && d.serial != r.serial {
            // Due, but this replica never had that content: show the
            // serial all the same (transfers keep their version).
            d.serial = r.serial;
            d.confirmed = false;
            d.from_record = true;
        }
    }
    d.pending = record
        .filter(|r| !r.due(now_ms) && r.serial != d.serial && may_show(&d, r.serial))
        .map(|r| (r.serial, r.active_from_ms));
    d
}

/// A recorded serial this replica learned only after its instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LateRecord {
    /// Lower-case fully qualified apex.
    pub apex: String,
    /// The record's serial.
    pub serial: u32,
    /// The serial this replica showed until now (0: none yet).
    pub shown: u32,
    /// How long after the record's `active_from_ms` it arrived, in
    /// milliseconds.
    pub late_ms: u64,
}

/// The records of `new` that are new since `old` (another serial), due
/// already at `now_ms` and above the serial `shown` gives for their zone
/// (None: the zone is not served here yet, as on a replica's start): the
/// replica showed the previous serial after its instant, while replicas
/// that had the record on time showed the new one.
pub(crate) fn late_records(
    old: &SerialMode,
    new: &SerialMode,
    shown: impl Fn(&str) -> Option<u32>,
    now_ms: u64,
) -> Vec<LateRecord> {
    let SerialMode::Follow(new) = new else {
        return Vec::new();
    };
    let known = |apex: &str| match old {
        SerialMode::Follow(old) => old.get(apex).copied().flatten().map(|r| r.serial),
        SerialMode::Assign => None,
    };
    new.iter()
        .filter_map(|(apex, record)| {
            let record = record.as_ref()?;
            let shown = shown(apex)?;
            let fresh = known(apex) != Some(record.serial);
            let above = shown == 0 || serial_gt(record.serial, shown);
            // An instant of 0 is no instant: such a record (the serials a
            // `dns-server --manifests` reads from its files) applies at
            // once by design, so it is never late.
            let scheduled = record.active_from_ms > 0;
            (fresh && above && scheduled && record.due(now_ms) && now_ms > record.active_from_ms).then(|| LateRecord {
                apex: apex.clone(),
                serial: record.serial,
                shown,
                late_ms: now_ms - record.active_from_ms,
            })
        })
        .collect()
}

/// The earliest `active_from_ms` after `now_ms` among `records` (when a
/// replica must look again), if any.
pub(crate) fn next_due<'a>(records: impl Iterator<Item = &'a RecordedSerial>, now_ms: u64) -> Option<u64> {
    records.filter(|r| !r.due(now_ms)).map(|r| r.active_from_ms).min()
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

    fn record(serial: u32, content: u64, active_from_ms: u64, previous: Option<u32>) -> RecordedSerial {
        RecordedSerial {
            serial,
            content,
            active_from_ms,
            previous,
        }
    }

    fn follow(r: RecordedSerial) -> SerialMode {
        SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), Some(r))]))
    }

    fn shown(fingerprint: u64, serial: u32, confirmed: bool) -> Option<Shown> {
        Some(Shown {
            fingerprint,
            serial,
            confirmed,
            from_record: true,
        })
    }

    const APEX: &str = "example.com.";

    #[test]
    fn a_follower_holds_the_recorded_content_and_switches_at_its_instant() {
        let r = record(20, 0xB, 5_000, Some(10));
        let mode = follow(r);
        // Content B arrives before the instant: still 10, B's version is
        // held (built from this content) for 20.
        let d = choose(&mode, APEX, shown(0xA, 10, true), None, false, 0xB, (1, 4_000));
        assert_eq!((d.serial, d.confirmed, d.capture), (10, true, Some(r)));
        // Content C follows before the instant: still 10, B still held.
        let d = choose(&mode, APEX, shown(0xB, 10, true), Some(&r), false, 0xC, (1, 4_500));
        assert_eq!((d.serial, d.capture, d.activate_held), (10, None, false));
        // The instant: 20, from the held version, though the content is C.
        let d = choose(&mode, APEX, shown(0xC, 10, true), Some(&r), false, 0xC, (1, 5_000));
        assert_eq!(
            (d.serial, d.confirmed, d.activate_held, d.capture),
            (20, true, true, None)
        );
        // Then nothing more to do.
        let d = choose(&mode, APEX, shown(0xC, 20, true), None, false, 0xC, (1, 6_000));
        assert_eq!(
            (d.serial, d.confirmed, d.activate_held, d.capture),
            (20, true, false, None)
        );
    }

    #[test]
    fn a_replica_that_never_had_the_content_shows_the_serial_without_its_version() {
        let mode = follow(record(20, 0xB, 5_000, Some(10)));
        let d = choose(&mode, APEX, shown(0xC, 10, true), None, false, 0xC, (1, 4_000));
        assert_eq!((d.serial, d.confirmed), (10, true));
        let d = choose(&mode, APEX, shown(0xC, 10, true), None, false, 0xC, (1, 5_000));
        assert_eq!((d.serial, d.confirmed, d.capture), (20, false, None));
        // Never below a recorded serial shown.
        let d = choose(&mode, APEX, shown(0xB, 30, true), None, false, 0xB, (1, 9_000));
        assert_eq!((d.serial, d.capture), (30, None));
        // Content B due at once: captured and served.
        let d = choose(&mode, APEX, shown(0xA, 10, false), None, false, 0xB, (1, 9_000));
        assert_eq!((d.serial, d.confirmed), (20, true));
        assert!(d.capture.is_some());
    }

    /// A replica that started while record 20 was pending (other content)
    /// and learns record 30 (previous 20) the moment the writer writes it
    /// at 20's instant, before its own switch to 20 was applied: it shows
    /// 20 at once, not the 10 from before, with 30 pending.
    #[test]
    fn a_record_s_previous_serial_is_shown_at_least() {
        let first = record(20, 0xB, 5_000, Some(10));
        let d = choose(&follow(first), APEX, None, None, false, 0xC, (1, 4_000));
        assert_eq!((d.serial, d.pending), (10, Some((20, 5_000))));
        let next = record(30, 0xC, 7_000, Some(20));
        let old = Some(Shown {
            fingerprint: 0xC,
            serial: 10,
            confirmed: false,
            from_record: true,
        });
        let d = choose(&follow(next), APEX, old, None, false, 0xC, (1, 5_001));
        assert_eq!(
            (d.serial, d.confirmed, d.pending, d.capture),
            (20, false, Some((30, 7_000)), Some(next))
        );
        // Holding 20's version: it is activated (confirmed).
        let d = choose(&follow(next), APEX, old, Some(&first), false, 0xC, (1, 5_001));
        assert_eq!((d.serial, d.confirmed, d.activate_held), (20, true, true));
        // Never below what is shown, and a first record's 0 is no serial.
        let d = choose(&follow(next), APEX, shown(0xC, 25, true), None, false, 0xC, (1, 5_001));
        assert_eq!(d.serial, 25);
        let d = choose(
            &follow(record(30, 0xC, 7_000, Some(0))),
            APEX,
            shown(0xC, 10, true),
            None,
            false,
            0xC,
            (1, 5_001),
        );
        assert_eq!(d.serial, 10);
    }

    #[test]
    fn transfers_turned_on_get_the_version_of_the_record_served() {
        let r = record(20, 0xB, 0, Some(10));
        let d = choose(&follow(r), APEX, shown(0xB, 20, true), None, true, 0xB, (1, 9_000));
        assert_eq!((d.serial, d.confirmed, d.capture), (20, true, Some(r)));
        let d = choose(&follow(r), APEX, shown(0xB, 20, true), None, false, 0xB, (1, 9_000));
        assert_eq!(d.capture, None);
    }

    #[test]
    fn serials_wrap_as_rfc_1982_says() {
        let r = record(5, 0xB, 0, Some(u32::MAX));
        let d = choose(&follow(r), APEX, shown(0xA, u32::MAX, true), None, false, 0xB, (1, 1));
        assert_eq!((d.serial, d.confirmed), (5, true));
    }

    #[test]
    fn records_learned_after_their_instant_are_late() {
        let old = follow(record(10, 0xA, 1_000, Some(5)));
        let new = follow(record(20, 0xB, 5_000, Some(10)));
        let serving = |serial| move |_: &str| Some(serial);
        // On time: not yet due.
        assert!(late_records(&old, &new, serving(10), 4_999).is_empty());
        // 250 ms after its instant, the zone still showing 10.
        assert_eq!(
            late_records(&old, &new, serving(10), 5_250),
            vec![LateRecord {
                apex: APEX.into(),
                serial: 20,
                shown: 10,
                late_ms: 250
            }]
        );
        // Known already (the same record again), the zone not served yet
        // (a replica starting), or showing it already: not late.
        assert!(late_records(&new, &new, serving(10), 5_250).is_empty());
        assert!(late_records(&old, &new, |_: &str| None, 5_250).is_empty());
        assert!(late_records(&old, &new, serving(20), 5_250).is_empty());
        // A zone's first record, late: the zone showed 0.
        let first = follow(record(20, 0xB, 5_000, Some(0)));
        let nothing = SerialMode::Follow(BTreeMap::from([(APEX.to_owned(), None)]));
        assert_eq!(late_records(&nothing, &first, serving(0), 6_000)[0].late_ms, 1_000);
        // A record with no instant (manifest files' serials, applied at
        // once) is never late, however long after 1970 it arrives.
        let unscheduled = follow(record(20, 0xB, 0, None));
        assert!(late_records(&nothing, &unscheduled, serving(0), 1_795_675_520_281).is_empty());
    }

    #[test]
    fn a_late_replica_shows_what_the_others_show() {
        let r = record(20, 0xB, 5_000, Some(10));
        let mode = follow(r);
        let d = choose(&mode, APEX, None, None, false, 0xB, (1, 4_000));
        assert_eq!((d.serial, d.confirmed, d.capture), (10, false, Some(r)));
        let d = choose(&mode, APEX, None, None, false, 0xC, (1, 6_000));
        assert_eq!((d.serial, d.confirmed), (20, false));
        let d = choose(&mode, APEX, None, None, false, 0xB, (1, 6_000));
        assert_eq!((d.serial, d.confirmed), (20, true));
        // A zone nothing was recorded for: its own serial, which gives way
        // to the first record even when that is lower.
        let d = choose(&mode, "other.example.", None, None, false, 0xB, (77, 6_000));
        assert_eq!(
            (d.serial, d.assigned),
            (77, true),
            "a zone not followed is assigned its serial"
        );
        let none = SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), None)]));
        let d = choose(&none, APEX, None, None, false, 0xB, (77, 6_000));
        assert_eq!(
            (d.serial, d.confirmed, d.from_record, d.assigned),
            (0, false, false, false)
        );
        let own = Some(Shown {
            fingerprint: 0xB,
            serial: 77,
            confirmed: false,
            from_record: false,
        });
        let d = choose(&mode, APEX, own, None, false, 0xB, (1, 6_000));
        assert_eq!((d.serial, d.confirmed), (20, true));
        assert_eq!(next_due([r].iter(), 4_000), Some(5_000));
        assert_eq!(next_due([r].iter(), 5_000), None);
    }

    #[test]
    fn assigning_rises_on_every_change() {
        let mode = SerialMode::Assign;
        let serial = |old, f, now| choose(&mode, "a.", old, None, false, f, (now, 0)).serial;
        assert_eq!(serial(None, 1, 100), 100);
        assert_eq!(serial(shown(1, 100, true), 1, 200), 100);
        assert_eq!(serial(shown(1, 100, true), 2, 100), 101);
    }
}
