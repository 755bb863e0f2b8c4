//! Which DNSSEC keys a zone's key store holds, by name: the data keys of
//! its Secret, or the files of `--dnssec-key-dir` named as data keys.
//!
//! * CSK mode: [`DNSSEC_KEY_DATA`] (`key.pkcs8`), the combined signing key.
//! * KSK+ZSK mode: [`DNSSEC_KSK_DATA`] (`ksk.pkcs8`, DNSKEY flags 257) and
//!   [`DNSSEC_ZSK_DATA`] (`zsk.pkcs8`, flags 256).
//! * In either mode every other name ending in `.pkcs8` is a standby key:
//!   published in the DNSKEY RRset, signing nothing (pre-publication,
//!   RFC 6781 §4.1.1), with flags 256 when its name (after a `standby-`
//!   prefix, as key files have) starts with `zsk`, else 257 (see
//!   [`standby_flags`]).
//!
//! Only names and flags are handled here; key bytes are never put in an
//! error message.

use std::collections::BTreeMap;

use fedns_api::DnssecKeyMode;
use fedns_dnsserver::DnssecKey;

/// The data key of the combined signing key (CSK mode), PKCS#8 DER.
pub const DNSSEC_KEY_DATA: &str = "key.pkcs8";
/// The data key of the key-signing key (KSK+ZSK mode), PKCS#8 DER.
pub const DNSSEC_KSK_DATA: &str = "ksk.pkcs8";
/// The data key of the zone-signing key (KSK+ZSK mode), PKCS#8 DER.
pub const DNSSEC_ZSK_DATA: &str = "zsk.pkcs8";
/// What every key's data key (or file name) ends with.
pub const PKCS8_SUFFIX: &str = ".pkcs8";

/// The active keys of `mode` by data key, with their DNSKEY flags: the
/// CSK or the KSK first (it signs the DNSKEY RRset, the parent's DS is
/// its), then the ZSK.
pub fn active_keys(mode: DnssecKeyMode) -> &'static [(&'static str, u16)] {
    match mode {
        DnssecKeyMode::Csk => &[(DNSSEC_KEY_DATA, DnssecKey::SEP_FLAGS)],
        DnssecKeyMode::KskZsk => &[
            (DNSSEC_KSK_DATA, DnssecKey::SEP_FLAGS),
            (DNSSEC_ZSK_DATA, DnssecKey::ZONE_FLAGS),
        ],
    }
}

/// The DNSKEY flags of the standby key named `name`: 256 (ZSK) when the
/// name, without a leading `standby-`, starts with `zsk` (`zsk-next.pkcs8`,
/// `standby-zsk2.pkcs8`), else 257 (`key-next.pkcs8`, `ksk-next.pkcs8`).
pub fn standby_flags(name: &str) -> u16 {
    let bare = name.strip_prefix("standby-").unwrap_or(name);
    if bare.starts_with("zsk") {
        DnssecKey::ZONE_FLAGS
    } else {
        DnssecKey::SEP_FLAGS
    }
}

/// One key to parse: its name in the key store, PKCS#8 DER and flags.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes {
    pub name: String,
    pub pkcs8: Vec<u8>,
    pub flags: u16,
}

impl std::fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyBytes")
            .field("name", &self.name)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

/// A zone's keys by role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    /// The CSK, or the KSK.
    pub primary: KeyBytes,
    /// The ZSK (KSK+ZSK mode).
    pub zone_signing: Option<KeyBytes>,
    /// Published only, in name order.
    pub standby: Vec<KeyBytes>,
}

/// The keys of `data` (name → PKCS#8 DER; names not ending in `.pkcs8`
/// are ignored) for `mode`. Errors list the missing data keys of the mode,
/// e.g. `lacks "ksk.pkcs8", "zsk.pkcs8" (keyMode KSK+ZSK)`.
pub fn key_layout(mode: DnssecKeyMode, data: &BTreeMap<String, Vec<u8>>) -> Result<KeyLayout, String> {
    let active = active_keys(mode);
    let missing: Vec<String> = active
        .iter()
        .filter(|(name, _)| !data.contains_key(*name))
        .map(|(name, _)| format!("{name:?}"))
        .collect();
    if !missing.is_empty() {
        let mode = match mode {
            DnssecKeyMode::Csk => "CSK",
            DnssecKeyMode::KskZsk => "KSK+ZSK",
        };
        return Err(format!("lacks {} (keyMode {mode})", missing.join(", ")));
    }
    let take = |name: &str, flags: u16| {
        data.get(name).map(|pkcs8| KeyBytes {
            name: name.to_owned(),
            pkcs8: pkcs8.clone(),
            flags,
        })
    };
    let mut roles = active.iter().filter_map(|(name, flags)| take(name, *flags));
    let primary = roles.next().ok_or_else(|| "no key for the mode (a bug)".to_owned())?;
    let zone_signing = roles.next();
    let standby = data
        .keys()
        .filter(|name| name.ends_with(PKCS8_SUFFIX) && !active.iter().any(|(a, _)| a == name))
        .filter_map(|name| take(name, standby_flags(name)))
        .collect();
    Ok(KeyLayout {
        primary,
        zone_signing,
        standby,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(names: &[&str]) -> BTreeMap<String, Vec<u8>> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| ((*n).to_owned(), vec![u8::try_from(i).unwrap(); 4]))
            .collect()
    }

    fn names(keys: &[KeyBytes]) -> Vec<(&str, u16)> {
        keys.iter().map(|k| (k.name.as_str(), k.flags)).collect()
    }

    /// CSK: `key.pkcs8` signs; other `.pkcs8` names are standby keys with
    /// flags by name; other data keys are ignored.
    #[test]
    fn csk_layout_and_standby_flags() {
        let layout = key_layout(
            DnssecKeyMode::Csk,
            &data(&["key.pkcs8", "key-next.pkcs8", "zsk-next.pkcs8", "notes.txt"]),
        )
        .unwrap();
        assert_eq!((layout.primary.name.as_str(), layout.primary.flags), ("key.pkcs8", 257));
        assert_eq!(layout.zone_signing, None);
        assert_eq!(
            names(&layout.standby),
            [("key-next.pkcs8", 257), ("zsk-next.pkcs8", 256)]
        );
    }

    /// KSK+ZSK: `ksk.pkcs8` (257) and `zsk.pkcs8` (256), standby keys by
    /// name, a `standby-` prefix (key files) skipped for the flags.
    #[test]
    fn ksk_zsk_layout() {
        let layout = key_layout(
            DnssecKeyMode::KskZsk,
            &data(&[
                "ksk.pkcs8",
                "zsk.pkcs8",
                "zsk2.pkcs8",
                "ksk-next.pkcs8",
                "standby-zsk-b.pkcs8",
                "standby-x.pkcs8",
            ]),
        )
        .unwrap();
        assert_eq!((layout.primary.name.as_str(), layout.primary.flags), ("ksk.pkcs8", 257));
        let zsk = layout.zone_signing.as_ref().unwrap();
        assert_eq!((zsk.name.as_str(), zsk.flags), ("zsk.pkcs8", 256));
        assert_eq!(
            names(&layout.standby),
            [
                ("ksk-next.pkcs8", 257),
                ("standby-x.pkcs8", 257),
                ("standby-zsk-b.pkcs8", 256),
                ("zsk2.pkcs8", 256)
            ]
        );
        // Switching a CSK Secret to KSK+ZSK: key.pkcs8 becomes a standby KSK.
        let layout = key_layout(DnssecKeyMode::KskZsk, &data(&["key.pkcs8", "ksk.pkcs8", "zsk.pkcs8"])).unwrap();
        assert_eq!(names(&layout.standby), [("key.pkcs8", 257)]);
    }

    /// Missing keys are named, with the mode; key bytes never appear.
    #[test]
    fn missing_keys_are_named() {
        let err = key_layout(DnssecKeyMode::KskZsk, &data(&["key.pkcs8"])).unwrap_err();
        assert_eq!(err, r#"lacks "ksk.pkcs8", "zsk.pkcs8" (keyMode KSK+ZSK)"#);
        let err = key_layout(DnssecKeyMode::KskZsk, &data(&["ksk.pkcs8"])).unwrap_err();
        assert_eq!(err, r#"lacks "zsk.pkcs8" (keyMode KSK+ZSK)"#);
        let err = key_layout(DnssecKeyMode::Csk, &data(&["ksk.pkcs8", "zsk.pkcs8"])).unwrap_err();
        assert_eq!(err, r#"lacks "key.pkcs8" (keyMode CSK)"#);
        let err = key_layout(DnssecKeyMode::Csk, &BTreeMap::new()).unwrap_err();
        assert!(err.contains("key.pkcs8"), "{err}");
        let debug = format!("{:?}", key_layout(DnssecKeyMode::Csk, &data(&["key.pkcs8"])).unwrap());
        assert!(!debug.contains("[0, 0"), "{debug}");
    }
}
