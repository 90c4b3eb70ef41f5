//! Sessions in this process's memory, bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::bad_cursor;
use super::{now_ms, Store, StoreError};
use crate::entry::SessionEntry;
use crate::loops::{LoopBook, LoopChange, LoopPage, LoopQuery, LoopStep};

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
    /// The clock the slot is filed under in [`Inner::lru`] (`used` or older: a use only
    /// stamps the slot; the index catches up when eviction or a listing walks it).
    filed: u64,
    /// Wall clock of the last update, for the idle TTL.
    touched_ms: u64,
}

/// The sessions and their use order.
///
/// The order is kept lazily: every event of a live session stamps its slot with the next
/// clock value, and only the slot's filing in `lru` (a B-tree insert and remove) waits until
/// eviction or [`Store::keys`] reaches it, so the common case costs one hash lookup. A slot
/// filed under an older clock than its last use is moved to its place when met; then the
/// oldest filing is the least recently used session, as with eager bookkeeping.
#[derive(Debug, Default)]
struct Inner {
    slots: HashMap<String, Slot>,
    /// Filing clock → key, oldest first; one filing per slot.
    lru: std::collections::BTreeMap<u64, Arc<str>>,
    clock: u64,
}

impl Inner {
    fn remove(&mut self, key: &str) -> bool {
        match self.slots.remove(key) {
            Some(slot) => {
                self.lru.remove(&slot.filed);
                true
            }
            None => false,
        }
    }

    /// Files every slot under its last use (before walking `lru` in order).
    fn refile_all(&mut self) {
        let Inner { slots, lru, .. } = self;
        for slot in slots.values_mut() {
            if slot.filed != slot.used {
                lru.remove(&slot.filed);
                lru.insert(slot.used, slot.key.clone());
                slot.filed = slot.used;
            }
        }
    }

    /// The least recently used slot's key, filing the slots met on the way under their
    /// last use.
    fn oldest(&mut self) -> Option<Arc<str>> {
        loop {
            let (&filed, key) = self.lru.first_key_value()?;
            let key = key.clone();
            match self.slots.get_mut(&*key) {
                Some(slot) if slot.used != filed => {
                    self.lru.remove(&filed);
                    self.lru.insert(slot.used, key);
                    slot.filed = slot.used;
                }
                Some(_) => return Some(key),
                None => {
                    // Not reachable (a removed slot takes its filing along); heal anyway.
                    self.lru.remove(&filed);
                }
            }
        }
    }

    /// Drops expired sessions from the old end, then the oldest beyond `max`.
    fn evict(&mut self, opts: &MemoryOptions, now: u64, room_for: usize) {
        let ttl = u64::try_from(opts.idle_ttl.as_millis()).unwrap_or(u64::MAX);
        while let Some(key) = self.oldest() {
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
    /// The loop history: its own lock, so that it never holds up an event.
    loops: Mutex<LoopBook>,
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
            loops: Mutex::new(LoopBook::default()),
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

    fn slot(&self, key: &str, create: bool, now: u64) -> Option<Arc<Mutex<SessionEntry>>> {
        let mut inner = lock(&self.inner);
        let ttl = u64::try_from(self.opts.idle_ttl.as_millis()).unwrap_or(u64::MAX);
        // The common case, a live session: one lookup and a stamp (see `Inner`).
        let Inner { slots, clock, .. } = &mut *inner;
        if let Some(slot) = slots.get_mut(key) {
            if now.saturating_sub(slot.touched_ms) <= ttl {
                *clock += 1;
                slot.used = *clock;
                slot.touched_ms = now;
                return Some(slot.entry.clone());
            }
            inner.remove(key);
        }
        if !create {
            return None;
        }
        inner.evict(&self.opts, now, 1);
        inner.clock += 1;
        let clock = inner.clock;
        let shared: Arc<str> = Arc::from(key);
        let entry = Arc::new(Mutex::new(SessionEntry::default()));
        inner.lru.insert(clock, shared.clone());
        inner.slots.insert(
            key.to_string(),
            Slot {
                key: shared,
                entry: entry.clone(),
                used: clock,
                filed: clock,
                touched_ms: now,
            },
        );
        Some(entry)
    }
}

impl Store for MemoryStore {
    fn update(
        &self,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        self.update_at(key, now_ms(), apply)
    }

    fn update_at(
        &self,
        key: &str,
        now_ms: u64,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        if let Some(entry) = self.slot(key, true, now_ms) {
            apply(&mut lock(&entry));
        }
        Ok(())
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let Some(entry) = self.slot(key, false, now_ms()) else {
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
        let mut inner = lock(&self.inner);
        inner.refile_all();
        // Most recently used first.
        Ok(inner.lru.values().rev().map(|k| k.to_string()).collect())
    }

    fn count(&self) -> Result<u64, StoreError> {
        Ok(lock(&self.inner).lru.len() as u64)
    }

    fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Loop history in memory: at most 100,000 loops (the oldest go first), lost when the
    /// process ends.
    fn record_loop(&self, step: &LoopStep) -> Result<LoopChange, StoreError> {
        Ok(lock(&self.loops).record(step))
    }

    fn loops(&self, query: &LoopQuery) -> Result<LoopPage, StoreError> {
        lock(&self.loops).page(query).map_err(bad_cursor)
    }

    fn prune_loops(&self, before_ms: u64) -> Result<u64, StoreError> {
        Ok(lock(&self.loops).prune(before_ms))
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
    fn lazy_use_order_evicts_as_a_strict_lru_would() {
        // The order is kept lazily (see `Inner`): check it against a plain list, most
        // recent last, over a long mixed sequence of uses with evictions.
        let s = MemoryStore::new(MemoryOptions {
            max_sessions: 4,
            ..MemoryOptions::default()
        });
        let mut model: Vec<String> = Vec::new();
        let mut x = 7u32;
        for step in 0..400 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let key = format!("k{}", (x >> 16) % 9);
            if step % 37 == 36 {
                let existed = model.contains(&key);
                model.retain(|k| *k != key);
                assert_eq!(s.delete(&key).unwrap(), existed);
                continue;
            }
            s.update(&key, &mut |e| e.run_seq += 1).unwrap();
            model.retain(|k| *k != key);
            model.push(key);
            if model.len() > 4 {
                model.remove(0);
            }
            if step % 5 == 0 {
                let expected: Vec<String> = model.iter().rev().cloned().collect();
                assert_eq!(s.keys().unwrap(), expected, "step {step}");
            }
            assert_eq!(s.len(), model.len());
            assert_eq!(s.count().unwrap(), model.len() as u64);
        }
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
