//! Where sessions live: the [`Store`] trait and the stores loopguard ships.
//!
//! A store maps a key (`"<tenant>/<session>"`, see [`crate::session_key`]) to a
//! [`SessionEntry`] and applies changes to it atomically: [`Store::update`] loads the entry,
//! lets the guard apply one event to it, and saves it, so two events of one session never
//! both start from the same old state.
//!
//! | store | for | concurrency |
//! |-------|-----|-------------|
//! | [`MemoryStore`] | one process (`loopguard serve` by default, the MCP proxy, Python) | a lock per session; bounded by a session count (least recently used evicted) and an idle TTL |
//! | [`SqliteStore`] | one machine, many processes (the Claude Code hook) | one `BEGIN IMMEDIATE` transaction per update |
//! | `RedisStore` (feature `redis`) | many machines | optimistic: the update is retried when another writer changed the key |
//!
//! [`open_store`] builds one from the `--store` option every front end takes.

mod memory;
#[cfg(feature = "redis")]
mod redis_store;
mod sqlite;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use memory::{MemoryOptions, MemoryStore};
#[cfg(feature = "redis")]
pub use redis_store::{redis_key, RedisOptions, RedisStore};
pub use sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION, WAL_CHECKPOINT_BYTES};

use crate::entry::SessionEntry;

/// Sessions behind a key, updated atomically.
pub trait Store: Send + Sync + fmt::Debug {
    /// Atomically loads the entry of `key` (a fresh [`SessionEntry::default`] when absent
    /// or expired), lets `apply` change it, and saves it, refreshing its idle TTL.
    /// `apply` may run more than once when a concurrent writer won the race (optimistic
    /// stores); it must only change the entry it is given.
    fn update(&self, key: &str, apply: &mut dyn FnMut(&mut SessionEntry))
        -> Result<(), StoreError>;

    /// The entry of `key`, if there is one.
    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError>;

    /// Forgets `key`; `true` when it existed.
    fn delete(&self, key: &str) -> Result<bool, StoreError>;

    /// Every key (for `loopguard status`; a shared store may hold many).
    fn keys(&self) -> Result<Vec<String>, StoreError>;

    /// `Ok` when the store answers (readiness).
    fn ping(&self) -> Result<(), StoreError>;
}

/// Why a store failed. Front ends fail open on it: a store that cannot be reached never
/// blocks an agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory for a database could not be created.
    #[error("cannot create the state directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite reported an error.
    #[error("state database {}: {source}{}", path.display(), sqlite::hint(source))]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer loopguard.
    #[error("state database {} has schema version {found}, newer than this loopguard's {SCHEMA_VERSION}; upgrade loopguard or use another --state", path.display())]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
    },
    /// A read-only open of a database that does not exist.
    #[error("no state database at {}", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// A stored entry could not be read.
    #[error(
        "session {key}: {source} (the entry is unreadable; forget the session to start it afresh)"
    )]
    Corrupt {
        /// The key.
        key: String,
        /// Why.
        source: crate::entry::EntryError,
    },
    /// A remote store (Redis) failed or could not be reached.
    #[error("{0}")]
    Remote(String),
    /// Optimistic updates kept conflicting.
    #[error("session {key}: {attempts} concurrent updates in a row won the race; giving up")]
    Contended {
        /// The key.
        key: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A `--store` value that names no store.
    #[error("--store `{0}`: expected `memory`, `sqlite:PATH` or `redis://HOST:PORT[/DB]`")]
    BadSpec(String),
}

/// Builds the store a `--store` value names: `memory`, `sqlite:PATH`, or (with the
/// `redis` feature) `redis://HOST:PORT[/DB]`. `idle_ttl` applies to every kind.
///
/// ```
/// use std::time::Duration;
/// # fn main() -> Result<(), loopguard_guard::StoreError> {
/// let store = loopguard_guard::open_store("memory", Duration::from_secs(3600))?;
/// store.ping()?;
/// assert!(loopguard_guard::open_store("floppy:/a", Duration::from_secs(1)).is_err());
/// # Ok(())
/// # }
/// ```
pub fn open_store(spec: &str, idle_ttl: Duration) -> Result<Arc<dyn Store>, StoreError> {
    if spec == "memory" {
        return Ok(Arc::new(MemoryStore::new(MemoryOptions {
            idle_ttl,
            ..MemoryOptions::default()
        })));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        if path.is_empty() {
            return Err(StoreError::BadSpec(spec.to_string()));
        }
        let opts = SqliteOptions {
            idle_ttl,
            ..SqliteOptions::default()
        };
        return Ok(Arc::new(SqliteStore::open(path.as_ref(), &opts)?));
    }
    #[cfg(feature = "redis")]
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        let opts = RedisOptions {
            idle_ttl,
            ..RedisOptions::default()
        };
        return Ok(Arc::new(RedisStore::open(spec, opts)?));
    }
    Err(StoreError::BadSpec(spec.to_string()))
}

/// The time now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
