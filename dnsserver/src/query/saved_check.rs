//! The snapshot file ([`ZoneStore::save_snapshot`],
//! [`ZoneStore::restore_snapshot`]) against the store that wrote it:
//! random zones (CNAME chains, routed names of every policy, two zones)
//! saved and restored answer exactly as before, through the query path
//! too; a whole publish of the same content afterwards keeps them (same
//! serials, nothing rendered), changed content replaces them, and changes
//! name by name then apply like full builds. Files that are cut short,
//! altered, of another build, too old, or whose offsets leave their chunk
//! are refused with nothing served; snapshots holding signed zones or
//! wildcards are never written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{RData, Record};

use super::incremental_check::{
    a, assert_same_answers, assert_same_as_full_build, name, parts_of, pool, random_model, random_owner, small_zone,
    Model, Owner, Rng, APEX,
};
use crate::zone::store::{SnapshotFileError, ZoneChanges, ZoneStore};

/// A fresh path in the system's temporary directory for `test`.
fn file_for(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fedns-saved-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("zones.snapshot")
}

/// `seed`'s random model with 600 more names (several chunks).
fn big_model(seed: u64) -> Model {
    let mut rng = Rng(seed);
    let mut model = random_model(&mut rng, &pool());
    let zone = model.zones.get_mut(APEX).unwrap();
    for i in 0..600u32 {
        let owner = format!("bulk{i}.{APEX}");
        zone.insert(
            owner.clone(),
            Owner {
                records: vec![a(&name(&owner), [10, 0, (i >> 8) as u8, i as u8])],
                routed: None,
            },
        );
    }
    model
}

/// A store serving `model`, published in parts as the publisher does.
fn published(model: &Model) -> Arc<ZoneStore> {
    let store = ZoneStore::new();
    let mut parts = parts_of(model, 50).into_iter();
    store
        .publish_in_parts(model.contents(), &mut || parts.next())
        .expect("no wildcard or delegation");
    store
}

#[test]
fn a_restored_snapshot_answers_as_the_saved_one_and_takes_changes_after_a_whole_publish() {
    for seed in [1u64, 2, 3, 0x5eed] {
        let path = file_for(&format!("round-trip-{seed}"));
        let mut model = big_model(seed);
        let store = published(&model);
        let saved = store.save_snapshot(&path).unwrap();
        let original = store.load();
        assert_eq!(saved.names, original.name_count(), "seed {seed}");
        assert_eq!(saved.zones, original.zones(), "seed {seed}");
        assert_eq!(saved.octets, std::fs::metadata(&path).unwrap().len(), "seed {seed}");

        let restarted = ZoneStore::new();
        let restored = restarted.restore_snapshot(&path, Duration::from_secs(60)).unwrap();
        assert_eq!(restored.zones, original.zones(), "seed {seed}: serials served");
        assert!(restarted.serves_restored() && !store.serves_restored());
        let served = restarted.load();
        let context = format!("seed {seed}: restored");
        assert_same_answers(&served, &original, &context);
        assert_eq!(served.skipped(), original.skipped(), "{context}: skipped");
        assert_eq!(served.routes(), original.routes(), "{context}: routes");
        assert_same_as_full_build(&served, &model, 0, seed);

        // The publisher's first publish after a restart: the same content
        // keeps the restored answers (no new serial, no render).
        let mut parts = parts_of(&model, 50).into_iter();
        let first = restarted
            .publish_in_parts(model.contents(), &mut || parts.next())
            .unwrap();
        assert!(!first.changed, "seed {seed}: the same content republished");
        assert!(!restarted.serves_restored(), "seed {seed}: caught up");
        assert!(
            Arc::ptr_eq(&restarted.load(), &served),
            "seed {seed}: the restored answers kept"
        );
        assert_eq!(restarted.load().zones(), original.zones(), "seed {seed}: serials kept");

        // Names change one by one on the tree that publish built.
        let mut rng = Rng(seed ^ 0xc4a6);
        let pool = pool();
        for step in 1..=5 {
            let owner = &pool[rng.below(pool.len())];
            if owner.ends_with("sub.example.com.") {
                continue;
            }
            let content = random_owner(&mut rng, owner, &pool);
            let change = ZoneChanges {
                apex: name(APEX),
                names: vec![(name(owner), content.records.clone())],
                routed: content.routed.iter().cloned().collect(),
            };
            let zone = model.zones.get_mut(APEX).unwrap();
            if content.records.is_empty() && content.routed.is_none() {
                zone.remove(owner);
            } else {
                zone.insert(owner.clone(), content);
            }
            if restarted.publish_changes(vec![change]).is_none() {
                restarted.publish(model.contents());
            }
            assert_same_as_full_build(&restarted.load(), &model, step, seed);
        }
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn new_content_after_a_restore_replaces_the_restored_answers_with_a_new_serial() {
    let path = file_for("replaced");
    let model = big_model(7);
    let store = published(&model);
    store.save_snapshot(&path).unwrap();
    let before = store.load().zones();

    let restarted = ZoneStore::new();
    restarted.restore_snapshot(&path, Duration::from_secs(60)).unwrap();
    let mut changed = model.contents();
    let www = name(&format!("brand-new.{APEX}"));
    changed[0].records.push(a(&www, [192, 0, 2, 200]));
    let outcome = restarted.publish(changed.clone());
    assert!(outcome.changed);
    let after = restarted.load().zones();
    let (old, new) = (&before[0], &after[0]);
    assert_eq!(old.apex, new.apex);
    assert!(
        crate::zone::store::serial_gt(new.serial, old.serial),
        "{} then {}",
        old.serial,
        new.serial
    );
    let want: Vec<(crate::zone::content::ZoneContent, u32)> =
        changed.into_iter().zip(after.iter().map(|z| z.serial)).collect();
    assert_same_answers(
        &restarted.load(),
        &crate::zone::snapshot::Snapshot::build(&want),
        "after the restore",
    );
    let _ = std::fs::remove_file(&path);
}

/// The octets of a saved file of `model`, and its path.
fn saved_file(test: &str, model: &Model) -> (PathBuf, Vec<u8>) {
    let path = file_for(test);
    published(model).save_snapshot(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// Restores `bytes` (written to `path`) into a fresh store: the error,
/// after checking that nothing is served.
fn refused(path: &PathBuf, bytes: &[u8], max_age: Duration) -> SnapshotFileError {
    std::fs::write(path, bytes).unwrap();
    let store = ZoneStore::new();
    let error = store.restore_snapshot(path, max_age).unwrap_err();
    assert_eq!(store.updates(), 0, "nothing served after: {error}");
    assert!(store.load().zones().is_empty(), "nothing served after: {error}");
    error
}

#[test]
fn files_that_do_not_check_are_refused_and_nothing_is_served() {
    let model = big_model(11);
    let (path, good) = saved_file("refused", &model);
    let minute = Duration::from_secs(60);
    // Cut short anywhere: in the head, in a chunk, in the checksum.
    for len in [0, 5, 40, good.len() / 2, good.len() - 33, good.len() - 1] {
        let error = refused(&path, &good[..len], minute);
        assert!(
            matches!(error, SnapshotFileError::Invalid { .. }),
            "cut at {len}: {error}"
        );
    }
    // One octet changed in the middle: the checksum says so.
    let mut altered = good.clone();
    let middle = altered.len() / 2;
    altered[middle] ^= 0x40;
    let error = refused(&path, &altered, minute);
    assert!(matches!(error, SnapshotFileError::Invalid { .. }), "{error}");
    // Not a snapshot file.
    let mut other = good.clone();
    other[0] = b'X';
    assert!(matches!(
        refused(&path, &other, minute),
        SnapshotFileError::Invalid { .. }
    ));
    // Another build (its identity follows the magic and its length).
    let mut foreign = good.clone();
    foreign[12] ^= 0x01;
    let error = refused(&path, &foreign, minute);
    assert!(matches!(error, SnapshotFileError::OtherBuild { .. }), "{error}");
    // Too old.
    std::thread::sleep(Duration::from_millis(20));
    let error = refused(&path, &good, Duration::from_millis(10));
    assert!(matches!(error, SnapshotFileError::TooOld { .. }), "{error}");
    // Missing.
    let _ = std::fs::remove_file(&path);
    let error = ZoneStore::new().restore_snapshot(&path, minute).unwrap_err();
    assert!(matches!(error, SnapshotFileError::Io { .. }), "{error}");
    // The good file restores; a store that publishes already never does.
    let store = published(&model);
    std::fs::write(&path, &good).unwrap();
    assert!(ZoneStore::new().restore_snapshot(&path, minute).is_ok());
    let error = store.restore_snapshot(&path, minute).unwrap_err();
    assert!(matches!(error, SnapshotFileError::AlreadyPublished), "{error}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn wildcards_and_empty_stores_are_not_saved() {
    let path = file_for("unsaveable");
    let store = ZoneStore::new();
    assert!(matches!(
        store.save_snapshot(&path).unwrap_err(),
        SnapshotFileError::NothingPublished
    ));
    let mut zone = small_zone();
    let wildcard = name(&format!("*.w.{APEX}"));
    zone.records.push(Record::from_rdata(
        wildcard,
        30,
        RData::CNAME(CNAME(name(&format!("www.{APEX}")))),
    ));
    store.publish(vec![zone]);
    let error = store.save_snapshot(&path).unwrap_err();
    assert!(matches!(error, SnapshotFileError::Unsaveable(_)), "{error}");
    assert!(!path.exists());
}
