//! Sessions in Redis (or Valkey), shared by every replica of a front end.
//!
//! **Key layout.** One key per session, `loopguard:{<tenant>/<session>}` (the braces are a
//! Redis Cluster hash tag, so a session's key has one slot and Cluster can hold it): a hash
//! with two fields, `e`, [`SessionEntry::encode`]'s bytes (the engine state, the counters of
//! every event ever applied, the recent decisions, the front end's bookkeeping), and `v`, a
//! version token that changes on every write. Every update sets the key's expiry to the
//! idle TTL again; an idle session expires on its own.
//!
//! **Consistency.** Updates are optimistic: the entry is read (`HMGET v e`), the event
//! applied, and the result written by a Lua script that compares the version token and
//! writes only if it is still the one read (compare-and-set, atomic in Redis). When another
//! replica wrote in between, the script answers the current version and entry instead, and
//! the update starts again from them, up to [`RedisOptions::max_attempts`] times (each
//! retry is counted, see [`RedisStore::retries`]); then [`StoreError::Contended`]. So every
//! acknowledged event of a session was applied exactly once, on top of every event
//! acknowledged before it, whichever replica handled it. Tokens are unique per write
//! (process, time, counter), so a session deleted and written again never matches an old
//! token. Inside one process, updates of the same session take turns (a lock striped by
//! key), so races, and retries after a short jittered pause, only happen between
//! replicas. A replica keeps the entry it wrote last (bounded by
//! [`RedisOptions::cache_entries`]) and tries the compare-and-set from it directly: while
//! no other replica touched the session, an update is one round trip and no decoding.
//! Durability is Redis's own: an event acknowledged by a primary that fails before
//! replicating it can be lost.
//!
//! A connection that fails is dropped; the next request opens a new one, so service
//! resumes by itself when Redis is back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::{Store, StoreError};
use crate::entry::{SessionEntry, RESTARTED};
use redis::{Commands, ConnectionLike};

/// Settings of a [`RedisStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// Sessions not updated for this long expire.
    pub idle_ttl: Duration,
    /// Optimistic attempts per update before giving up with [`StoreError::Contended`].
    pub max_attempts: u32,
    /// Connect, read and write timeout of one command.
    pub timeout: Duration,
    /// Idle connections kept open for reuse.
    pub pool_size: usize,
    /// Sessions whose last written entry this process keeps, to skip the read when no
    /// other writer changed them.
    pub cache_entries: usize,
}

impl Default for RedisOptions {
    /// 24 hours, 64 attempts, 2 s, 64 connections, 10,000 cached entries.
    fn default() -> Self {
        RedisOptions {
            idle_ttl: Duration::from_secs(24 * 3600),
            max_attempts: 64,
            timeout: Duration::from_secs(2),
            pool_size: 64,
            cache_entries: 10_000,
        }
    }
}

/// Sessions in Redis: see the module documentation for the key layout and the
/// consistency guarantee.
///
/// ```no_run
/// use loopguard_guard::{Guard, RedisOptions, RedisStore};
/// use std::sync::Arc;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(RedisStore::open("redis://127.0.0.1:6379/0", RedisOptions::default())?);
/// let guard = Guard::builder().store(store.clone()).build();
/// guard.apply_line(None, br#"{"type":"call","session":"s1","tool":"read"}"#)?;
/// println!("optimistic retries so far: {}", store.retries());
/// # Ok(())
/// # }
/// ```
pub struct RedisStore {
    client: redis::Client,
    /// The URL without a password, for messages.
    shown: String,
    opts: RedisOptions,
    pool: Mutex<Vec<redis::Connection>>,
    retries: AtomicU64,
    /// Key → (version token, the entry written with it), taken out while an update runs.
    cache: Mutex<HashMap<String, (Vec<u8>, SessionEntry)>>,
    writes: AtomicU64,
    cas: redis::Script,
    /// Updates of one key inside this process take turns (striped by key hash), so
    /// optimistic conflicts only arise between processes.
    stripes: Vec<Mutex<()>>,
}

const STRIPES: usize = 256;

/// Compare-and-set: `KEYS[1]`, `ARGV` = expected token (empty: absent), new token, entry,
/// TTL in ms. Answers 1 when written, else `{current token, current entry}` (nils when
/// absent).
const CAS: &str = r"
local v = redis.call('HGET', KEYS[1], 'v')
if (v or '') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'e', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 1
end
return redis.call('HMGET', KEYS[1], 'v', 'e')
";

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.shown)
            .field("opts", &self.opts)
            .field("retries", &self.retries())
            .finish_non_exhaustive()
    }
}

const PREFIX: &str = "loopguard:{";

/// The Redis key of a store key.
///
/// ```
/// assert_eq!(loopguard_guard::redis_key("acme/s1"), "loopguard:{acme/s1}");
/// ```
pub fn redis_key(key: &str) -> String {
    format!("{PREFIX}{key}}}")
}

impl RedisStore {
    /// A store on `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`, or `rediss://` with TLS
    /// support compiled into the `redis` crate). Redis need not be up yet: connections are
    /// opened when needed.
    pub fn open(url: &str, opts: RedisOptions) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url)
            .map_err(|e| StoreError::Remote(format!("--store {}: {e}", redact(url))))?;
        Ok(RedisStore {
            client,
            shown: redact(url),
            opts,
            pool: Mutex::new(Vec::new()),
            retries: AtomicU64::new(0),
            cache: Mutex::new(HashMap::new()),
            writes: AtomicU64::new(0),
            cas: redis::Script::new(CAS),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        })
    }

    /// Optimistic-concurrency retries so far: updates that found their key changed by
    /// another writer and started again.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    fn remote(&self, e: &redis::RedisError) -> StoreError {
        StoreError::Remote(format!("redis {}: {e}", self.shown))
    }

    fn connection(&self) -> Result<redis::Connection, StoreError> {
        if let Some(c) = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
        {
            return Ok(c);
        }
        let con = self
            .client
            .get_connection_with_timeout(self.opts.timeout)
            .map_err(|e| self.remote(&e))?;
        con.set_read_timeout(Some(self.opts.timeout))
            .and_then(|()| con.set_write_timeout(Some(self.opts.timeout)))
            .map_err(|e| self.remote(&e))?;
        Ok(con)
    }

    /// Runs `f` on a pooled connection; a connection that failed is not reused.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut con = self.connection()?;
        match f(&mut con) {
            Ok(v) => {
                self.give_back(con);
                Ok(v)
            }
            Err(e) => Err(self.remote(&e)),
        }
    }

    fn give_back(&self, con: redis::Connection) {
        if !con.is_open() {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < self.opts.pool_size {
            pool.push(con);
        }
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.opts.idle_ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// A version token no other write ever had.
    fn token(&self) -> Vec<u8> {
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{:x}.{nanos:x}.{n:x}", std::process::id()).into_bytes()
    }

    /// An entry as stored (`None` = absent), or a fresh one that says why when it is
    /// unreadable (as in the SQLite store: it would otherwise fail every later event).
    fn entry_of(&self, key: &str, bytes: Option<Vec<u8>>) -> SessionEntry {
        match bytes {
            None => SessionEntry::default(),
            Some(bytes) => SessionEntry::decode(&bytes).unwrap_or_else(|e| {
                let mut fresh = SessionEntry::default();
                fresh.meta.insert(
                    RESTARTED.to_string(),
                    format!(
                        "session {key} in redis {}: {e}; starting it afresh",
                        self.shown
                    ),
                );
                fresh
            }),
        }
    }

    fn cached(&self, key: &str) -> Option<(Vec<u8>, SessionEntry)> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
    }

    fn keep(&self, key: &str, token: Vec<u8>, entry: SessionEntry) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= self.opts.cache_entries {
            // Bounded: start over rather than track recency (a miss costs one read).
            cache.clear();
        }
        if self.opts.cache_entries > 0 {
            cache.insert(key.to_string(), (token, entry));
        }
    }

    fn forget_cached(&self, key: &str) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    fn update_on(
        &self,
        con: &mut redis::Connection,
        key: &str,
        rkey: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<bool, redis::RedisError> {
        let (mut token, mut entry) = match self.cached(key) {
            Some(c) => c,
            None => {
                let (v, e): (Option<Vec<u8>>, Option<Vec<u8>>) =
                    redis::cmd("HMGET").arg(rkey).arg("v").arg("e").query(con)?;
                (v.unwrap_or_default(), self.entry_of(key, e))
            }
        };
        let mut attempt = 0u64;
        for _ in 0..self.opts.max_attempts {
            apply(&mut entry);
            let next = self.token();
            let answer: redis::Value = self
                .cas
                .key(rkey)
                .arg(&token)
                .arg(&next)
                .arg(entry.encode())
                .arg(self.ttl_ms())
                .invoke(con)?;
            match answer {
                redis::Value::Int(1) => {
                    self.keep(key, next, entry);
                    return Ok(true);
                }
                current => {
                    // Another writer won: start again from what it wrote, after a short
                    // pause that grows with each lost race (at most ~2 ms, jittered) so
                    // contending replicas spread out.
                    let lost = self.retries.fetch_add(1, Ordering::Relaxed);
                    attempt += 1;
                    let jitter =
                        (lost ^ u64::from(std::process::id())).wrapping_mul(0x9E37_79B9) % 200;
                    std::thread::sleep(Duration::from_micros(attempt.min(10) * 200 + jitter));
                    let (v, e): (Option<Vec<u8>>, Option<Vec<u8>>) =
                        redis::from_redis_value(&current)?;
                    token = v.unwrap_or_default();
                    entry = self.entry_of(key, e);
                }
            }
        }
        Ok(false)
    }
}

/// `redis://user:secret@host` → `redis://user:***@host`.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let auth = &url[s + 3..at];
            match auth.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => format!("{}***{}", &url[..s + 3], &url[at..]),
            }
        }
        _ => url.to_string(),
    }
}

impl Store for RedisStore {
    fn update(
        &self,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        let rkey = redis_key(key);
        let stripe = {
            use std::hash::{BuildHasher, BuildHasherDefault};
            let h = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(key);
            &self.stripes[(h as usize) % STRIPES]
        };
        let _turn = stripe.lock().unwrap_or_else(PoisonError::into_inner);
        let mut con = self.connection()?;
        match self.update_on(&mut con, key, &rkey, apply) {
            Ok(true) => {
                self.give_back(con);
                Ok(())
            }
            Ok(false) => {
                self.give_back(con);
                Err(StoreError::Contended {
                    key: key.to_string(),
                    attempts: self.opts.max_attempts,
                })
            }
            Err(e) => Err(self.remote(&e)),
        }
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let bytes: Option<Vec<u8>> = self.with(|c| c.hget(redis_key(key), "e"))?;
        match bytes {
            None => Ok(None),
            Some(b) => SessionEntry::decode(&b)
                .map(Some)
                .map_err(|source| StoreError::Corrupt {
                    key: key.to_string(),
                    source,
                }),
        }
    }

    fn delete(&self, key: &str) -> Result<bool, StoreError> {
        self.forget_cached(key);
        let n: u64 = self.with(|c| c.del(redis_key(key)))?;
        Ok(n > 0)
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let pattern = format!("{PREFIX}*");
        let raw: Vec<String> = self.with(|c| {
            let mut keys = Vec::new();
            let mut cursor = 0u64;
            loop {
                let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query(c)?;
                keys.extend(batch);
                if next == 0 {
                    return Ok(keys);
                }
                cursor = next;
            }
        })?;
        Ok(raw
            .into_iter()
            .filter_map(|k| {
                k.strip_prefix(PREFIX)
                    .and_then(|k| k.strip_suffix('}'))
                    .map(str::to_string)
            })
            .collect())
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| redis::cmd("PING").query::<String>(c).map(|_| ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("redis://:s3cret@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(redact("redis://u:s3cret@h"), "redis://u:***@h");
        assert_eq!(redact("redis://h:6379"), "redis://h:6379");
    }

    #[test]
    fn an_unreachable_redis_is_a_remote_error_not_a_hang() {
        // Port 1 on loopback: nothing listens there.
        let store = RedisStore::open(
            "redis://127.0.0.1:1/0",
            RedisOptions {
                timeout: Duration::from_millis(500),
                ..RedisOptions::default()
            },
        )
        .unwrap();
        let start = std::time::Instant::now();
        assert!(matches!(store.ping(), Err(StoreError::Remote(_))));
        assert!(matches!(
            store.update("-/s", &mut |_| {}),
            Err(StoreError::Remote(_))
        ));
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
