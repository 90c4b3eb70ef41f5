//! Sessions in Redis (or Valkey), shared by every replica of a front end.
//!
//! **Key layout.** One key per session, `loopguard:{<tenant>/<session>}` (the braces are a
//! Redis Cluster hash tag, so a session's key has one slot and Cluster can hold it), whose
//! value is [`SessionEntry::encode`]'s bytes: the engine state, the counters of every event
//! ever applied, the recent decisions and the front end's bookkeeping. Every update sets
//! the key's expiry to the idle TTL again (`SET … PX`); an idle session expires on its own.
//!
//! **Consistency.** Updates are optimistic: `WATCH key`, `GET`, apply the event, then
//! `MULTI; SET key value PX ttl; EXEC`. When another replica changed the key in between,
//! `EXEC` does nothing and the update starts again from the new value, up to
//! [`RedisOptions::max_attempts`] times (each retry is counted, see
//! [`RedisStore::retries`]); then [`StoreError::Contended`]. So every acknowledged event
//! of a session was applied exactly once, on top of every event acknowledged before it,
//! whichever replica handled it, and events of one session are serialised by Redis. The
//! guarantee is Redis's own: with a replicated Redis, an event acknowledged by a primary
//! that fails before replicating it can be lost (use `WAIT`-free Redis persistence
//! settings that match your needs).
//!
//! A connection that fails is dropped; the next request opens a new one, so service
//! resumes by itself when Redis is back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::{Commands, ConnectionLike};

use super::{Store, StoreError};
use crate::entry::{SessionEntry, RESTARTED};

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
}

impl Default for RedisOptions {
    /// 24 hours, 64 attempts, 2 s, 64 connections.
    fn default() -> Self {
        RedisOptions {
            idle_ttl: Duration::from_secs(24 * 3600),
            max_attempts: 64,
            timeout: Duration::from_secs(2),
            pool_size: 64,
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
}

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

    /// One optimistic attempt: `Some(())` when it committed, `None` when another writer
    /// changed the key first.
    fn attempt(
        &self,
        con: &mut redis::Connection,
        key: &str,
        rkey: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> redis::RedisResult<Option<()>> {
        // WATCH and GET in one round trip.
        let (stored,): (Option<Vec<u8>>,) = redis::pipe()
            .cmd("WATCH")
            .arg(rkey)
            .ignore()
            .get(rkey)
            .query(con)?;
        let mut entry = match stored {
            None => SessionEntry::default(),
            Some(bytes) => match SessionEntry::decode(&bytes) {
                Ok(e) => e,
                // As in the SQLite store: an unreadable entry would fail every later
                // event of the session, so it starts afresh and says so.
                Err(e) => {
                    let mut fresh = SessionEntry::default();
                    fresh.meta.insert(
                        RESTARTED.to_string(),
                        format!(
                            "session {key} in redis {}: {e}; starting it afresh",
                            self.shown
                        ),
                    );
                    fresh
                }
            },
        };
        apply(&mut entry);
        let committed: Option<(redis::Value,)> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(rkey)
            .arg(entry.encode())
            .arg("PX")
            .arg(self.ttl_ms())
            .query(con)?;
        Ok(committed.map(|_| ()))
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
        let mut con = self.connection()?;
        for attempt in 0..self.opts.max_attempts {
            match self.attempt(&mut con, key, &rkey, apply) {
                Ok(Some(())) => {
                    self.give_back(con);
                    return Ok(());
                }
                Ok(None) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    // Back off a little, more after each lost race, so contending
                    // replicas spread out (at most ~2 ms).
                    let spin = (u64::from(attempt) + 1).min(20) * 100;
                    let jitter =
                        u64::from(std::process::id() ^ attempt.wrapping_mul(2654435761)) % 100;
                    std::thread::sleep(Duration::from_micros(spin + jitter));
                }
                Err(e) => return Err(self.remote(&e)),
            }
        }
        // Leave the connection clean for the next user.
        let _ = redis::cmd("UNWATCH").query::<()>(&mut con);
        self.give_back(con);
        Err(StoreError::Contended {
            key: key.to_string(),
            attempts: self.opts.max_attempts,
        })
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let bytes: Option<Vec<u8>> = self.with(|c| c.get(redis_key(key)))?;
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
