//! One stored object and its JSON encoding, made once.
//!
//! The API server's watch cache keeps each object's serialization beside
//! it, so a watch event sent to many watchers is encoded once. The
//! emulator goes further and keeps it for lists too: every list page was
//! encoded again from the stored `Value`, and in the 1,000,000-shard
//! bench (50 emulated members on the controller's own 2 cores) that was
//! about a quarter of a core (of half a core the emulator took in all)
//! for as long as a restarted controller re-listed its members, taken
//! from the controller being measured. A real member's API server runs on
//! its own machine; this keeps the emulator's share of the bench's cores
//! smaller. The price is memory: each object listed or watched keeps its
//! encoding beside it until it is written again.

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::Value;

/// An object as the store keeps it: never changed after it is stored (a
/// write stores a new one), so its encoding, made at the first read that
/// serializes it, stays valid for as long as the object.
#[derive(Debug)]
pub struct Stored {
    value: Value,
    encoded: OnceLock<Option<Box<RawValue>>>,
}

impl Stored {
    /// `value`, not yet encoded.
    pub fn new(value: Value) -> Self {
        Stored {
            value,
            encoded: OnceLock::new(),
        }
    }

    /// The object.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

impl std::ops::Deref for Stored {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl serde::Serialize for Stored {
    /// The encoding made at the first call (the value itself when it
    /// cannot be encoded, which a `Value` always can: keys are strings).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self
            .encoded
            .get_or_init(|| serde_json::value::to_raw_value(&self.value).ok())
        {
            Some(raw) => raw.serialize(serializer),
            None => self.value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_as_the_value_and_again_from_the_kept_encoding() {
        let value = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a\"b", "labels": {"x": "1"}}, "spec": {"ports": [{"port": 80}]}});
        let stored = Stored::new(value.clone());
        let first = serde_json::to_string(&stored).expect("encodes");
        assert_eq!(first, serde_json::to_string(&value).expect("encodes"));
        // The kept encoding, inside another document (a list page, a
        // watch event) as in one alone.
        let second = serde_json::to_string(&json!({"items": [serde_json::to_value(&stored).expect("to value")]}))
            .expect("encodes");
        assert_eq!(
            second,
            serde_json::to_string(&json!({"items": [value]})).expect("encodes")
        );
        assert_eq!(
            serde_json::to_vec(&[&stored, &stored]).expect("encodes").len(),
            first.len() * 2 + 3
        );
    }
}
