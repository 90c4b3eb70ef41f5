//! Warning de-duplication (`toolLoopWarningBuckets`).
//!
//! A warning fires on every call past the threshold, but it is *emitted* (shown, logged)
//! only when its count enters a new bucket of ten: at 10, then 20, 30, … The key includes
//! the run and the detector's key, so a new outcome or a new run starts a fresh sequence.
//! At most 256 keys are kept; the oldest-inserted goes first, and updating a key does not
//! move it (JavaScript `Map.set` semantics).

use indexmap::IndexMap;

/// Bucket width; fixed, independent of `warningThreshold`.
pub const BUCKET_SIZE: u64 = 10;
/// Keys kept before the oldest is evicted.
pub const MAX_KEYS: usize = 256;

/// The per-session bucket map.
#[derive(Clone, Debug, Default)]
pub struct WarningBuckets {
    last: IndexMap<Box<[u8]>, u64>,
}

impl WarningBuckets {
    /// Decides whether a warning with `count` under `key` is emitted, and records it if so.
    pub fn should_emit(&mut self, key: &[u8], count: u64) -> bool {
        let bucket = count / BUCKET_SIZE;
        let last = self.last.get(key).copied().unwrap_or(0);
        if bucket <= last {
            return false;
        }
        match self.last.get_mut(key) {
            Some(v) => *v = bucket,
            None => {
                self.last.insert(key.into(), bucket);
            }
        }
        if self.last.len() > MAX_KEYS {
            self.last.shift_remove_index(0);
        }
        true
    }

    /// The keys and their last emitted bucket, oldest-inserted first (for [`crate::state`]).
    pub(crate) fn entries(&self) -> impl ExactSizeIterator<Item = (&[u8], u64)> {
        self.last.iter().map(|(k, v)| (&**k, *v))
    }

    /// Buckets holding `entries` in the given (insertion) order; a repeated key keeps its
    /// first position and its last bucket, and only the newest [`MAX_KEYS`] are kept.
    pub(crate) fn from_entries(entries: impl IntoIterator<Item = (Box<[u8]>, u64)>) -> Self {
        let mut last = IndexMap::new();
        for (k, v) in entries {
            last.insert(k, v);
        }
        while last.len() > MAX_KEYS {
            last.shift_remove_index(0);
        }
        WarningBuckets { last }
    }

    /// The number of keys held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_per_bucket_of_ten() {
        let mut b = WarningBuckets::default();
        assert!(!b.should_emit(b"k", 9)); // bucket 0 is never emitted
        assert!(b.should_emit(b"k", 10));
        assert!(!b.should_emit(b"k", 19));
        assert!(b.should_emit(b"k", 20));
    }

    #[test]
    fn evicts_oldest_inserted_and_updates_in_place() {
        let mut b = WarningBuckets::default();
        assert!(b.should_emit(b"first", 10));
        for i in 0..255u32 {
            assert!(b.should_emit(format!("k{i}").as_bytes(), 10));
        }
        assert_eq!(b.len(), 256);
        // Updating "first" keeps its position, so it is still the oldest.
        assert!(b.should_emit(b"first", 20));
        assert!(b.should_emit(b"new", 10));
        assert_eq!(b.len(), 256);
        // "first" was evicted: a count in bucket 1 is emitted again.
        assert!(b.should_emit(b"first", 10));
    }
}
