//! Sessions in this process's memory, bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{now_ms, Store, StoreError};
use crate::entry::SessionEntry;

/// Bounds of a [`MemoryStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryOptions {
    /// Sessions kept at most; the least recently used is forgotten beyond it.
    pub max_sessions: usize,
    /// A session not updated for this long is forgotten.
    pub idle_ttl: Duration,
}

impl Default for MemoryOptions {
    /// 100,000 sessions, 24 hours.
    fn default() -> Self {
        MemoryOptions {
            max_sessions: 100_000,
            idle_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

#[derive(Debug)]
struct Slot {
    /// The key, shared with the LRU index (no allocation per use).
    key: Arc<str>,
    entry: Arc<Mutex<SessionEntry>>,
    /// Logical clock of the last use, for least-recently-used eviction.
    used: u64,
    /// Wall clock of the last update, for the idle TTL.
    touched_ms: u64,
}

#[derive(Debug, Default)]
struct Inner {
    slots: HashMap<String, Slot>,
    /// Last use → key, oldest first.
    lru: std::collections::BTreeMap<u64, Arc<str>>,
    clock: u64,
}

impl Inner {
    fn touch(&mut self, key: &str, now: u64) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(slot) = self.slots.get_mut(key) {
            self.lru.remove(&slot.used);
            slot.used = clock;
            slot.touched_ms = now;
            self.lru.insert(clock, slot.key.clone());
        }
    }

    fn remove(&mut self, key: &str) -> bool {
        match self.slots.remove(key) {
            Some(slot) => {
                self.lru.remove(&slot.used);
                true
            }
            None => false,
        }
    }

    /// Drops expired sessions from the old end, then the oldest beyond `max`.
    fn evict(&mut self, opts: &MemoryOptions, now: u64, room_for: usize) {
        let ttl = u64::try_from(opts.idle_ttl.as_millis()).unwrap_or(u64::MAX);
        while let Some((_, key)) = self.lru.first_key_value() {
            let key: Arc<str> = key.clone();
            let key = &*key;
            let expired = self
                .slots
                .get(key)
                .is_some_and(|s| now.saturating_sub(s.touched_ms) > ttl);
            let over = self.slots.len() + room_for > opts.max_sessions;
            if !(expired || over) {
                break;
            }
            self.remove(key);
        }
    }
}

/// Sessions in memory: a lock per session (events of different sessions never wait for each
/// other), at most [`MemoryOptions::max_sessions`] of them (the least recently used is
/// forgotten first), each forgotten after [`MemoryOptions::idle_ttl`] without an update.
///
/// ```
/// use loopguard_guard::{MemoryOptions, MemoryStore, Store};
/// # fn main() -> Result<(), loopguard_guard::StoreError> {
/// let store = MemoryStore::new(MemoryOptions { max_sessions: 2, ..MemoryOptions::default() });
/// for key in ["a", "b", "c"] {
///     store.update(key, &mut |e| e.run_seq += 1)?;
/// }
/// assert_eq!(store.len(), 2); // "a" was the least recently used
/// assert!(store.load("a")?.is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    opts: MemoryOptions,
    inner: Mutex<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the data as consistent as any single update
    // would (every update is one closure on one entry); keep serving.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryStore {
    /// An empty store.
    pub fn new(opts: MemoryOptions) -> Self {
        MemoryStore {
            opts: MemoryOptions {
                max_sessions: opts.max_sessions.max(1),
                ..opts
            },
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Sessions held now.
    pub fn len(&self) -> usize {
        lock(&self.inner).slots.len()
    }

    /// `true` when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slot(&self, key: &str, create: bool) -> Option<Arc<Mutex<SessionEntry>>> {
        let now = now_ms();
        let mut inner = lock(&self.inner);
        let ttl = u64::try_from(self.opts.idle_ttl.as_millis()).unwrap_or(u64::MAX);
        // The common case, a live session, in one lookup.
        let Inner { slots, lru, clock } = &mut *inner;
        if let Some(slot) = slots.get_mut(key) {
            if now.saturating_sub(slot.touched_ms) <= ttl {
                *clock += 1;
                lru.remove(&slot.used);
                slot.used = *clock;
                slot.touched_ms = now;
                lru.insert(*clock, slot.key.clone());
                return Some(slot.entry.clone());
            }
            inner.remove(key);
        }
        if !create {
            return None;
        }
        inner.evict(&self.opts, now, 1);
        inner.slots.insert(
            key.to_string(),
            Slot {
                key: Arc::from(key),
                entry: Arc::new(Mutex::new(SessionEntry::default())),
                used: 0,
                touched_ms: now,
            },
        );
        inner.touch(key, now);
        inner.slots.get(key).map(|s| s.entry.clone())
    }
}

impl Store for MemoryStore {
    fn update(
        &self,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        if let Some(entry) = self.slot(key, true) {
            apply(&mut lock(&entry));
        }
        Ok(())
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let Some(entry) = self.slot(key, false) else {
            return Ok(None);
        };
        let e = lock(&entry);
        // A copy through the encoded form: the same bytes a shared store would hold.
        SessionEntry::decode(&e.encode())
            .map(Some)
            .map_err(|source| StoreError::Corrupt {
                key: key.to_string(),
                source,
            })
    }

    fn delete(&self, key: &str) -> Result<bool, StoreError> {
        Ok(lock(&self.inner).remove(key))
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let inner = lock(&self.inner);
        // Most recently used first.
        Ok(inner.lru.values().rev().map(|k| k.to_string()).collect())
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(lock(&self.inner).lru.len() as u64)
    }

    fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_sessions_go_first() {
        let s = MemoryStore::new(MemoryOptions {
            max_sessions: 3,
            ..MemoryOptions::default()
        });
        for k in ["a", "b", "c"] {
            s.update(k, &mut |e| e.run_seq += 1).unwrap();
        }
        s.update("a", &mut |e| e.run_seq += 1).unwrap(); // a is fresh again
        s.update("d", &mut |e| e.run_seq += 1).unwrap(); // b goes
        assert_eq!(s.keys().unwrap(), ["d", "a", "c"]);
        assert_eq!(s.load("a").unwrap().unwrap().run_seq, 2);
        assert!(s.delete("a").unwrap());
        assert!(!s.delete("a").unwrap());
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn idle_sessions_expire() {
        let s = MemoryStore::new(MemoryOptions {
            max_sessions: 10,
            idle_ttl: Duration::from_millis(30),
        });
        s.update("a", &mut |e| e.run_seq = 5).unwrap();
        assert!(s.load("a").unwrap().is_some());
        std::thread::sleep(Duration::from_millis(80));
        assert!(s.load("a").unwrap().is_none());
        s.update("a", &mut |e| e.run_seq += 1).unwrap();
        assert_eq!(s.load("a").unwrap().unwrap().run_seq, 1, "a fresh entry");
    }

    #[test]
    fn concurrent_updates_of_one_session_lose_nothing() {
        let s = Arc::new(MemoryStore::new(MemoryOptions::default()));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        s.update("one", &mut |e| e.run_seq += 1).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.load("one").unwrap().unwrap().run_seq, 4000);
    }
}
