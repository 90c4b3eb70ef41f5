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
mod redis_loops;
#[cfg(feature = "redis")]
mod redis_store;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use memory::{MemoryOptions, MemoryStore};
#[cfg(feature = "redis")]
pub use redis_store::{redis_key, RedisOptions, RedisStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore, SCHEMA_VERSION, WAL_CHECKPOINT_BYTES};

use crate::entry::SessionEntry;
use crate::loops::{LoopChange, LoopPage, LoopQuery, LoopStep};

/// Sessions behind a key, updated atomically.
pub trait Store: Send + Sync + fmt::Debug {
    /// Atomically loads the entry of `key` (a fresh [`SessionEntry::default`] when absent
    /// or expired), lets `apply` change it, and saves it, refreshing its idle TTL.
    /// `apply` may run more than once when a concurrent writer won the race (optimistic
    /// stores); it must only change the entry it is given.
    fn update(&self, key: &str, apply: &mut dyn FnMut(&mut SessionEntry))
        -> Result<(), StoreError>;

    /// [`Store::update`] when the caller has already read the clock: `now_ms` (milliseconds
    /// since the epoch) is the time of the update, so the memory store does not read the
    /// clock a second time per event. Other stores keep their own time (the default).
    fn update_at(
        &self,
        key: &str,
        now_ms: u64,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        let _ = now_ms;
        self.update(key, apply)
    }

    /// The entry of `key`, if there is one.
    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError>;

    /// Forgets `key`; `true` when it existed.
    fn delete(&self, key: &str) -> Result<bool, StoreError>;

    /// Every key (for `loopguard status`; a shared store may hold many).
    fn keys(&self) -> Result<Vec<String>, StoreError>;

    /// How many sessions the store holds (for metrics), without listing them where the
    /// store can.
    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.keys()?.len() as u64)
    }

    /// `Ok` when the store answers (readiness).
    fn ping(&self) -> Result<(), StoreError>;

    /// The store's non-blocking side, when it has one (network stores): async front ends
    /// such as `loopguard serve` then await it instead of tying up a thread per request.
    /// `None` (the default) for stores whose calls are either short critical sections
    /// (memory) or blocking file I/O (SQLite).
    fn as_async(&self) -> Option<&dyn AsyncStore> {
        None
    }

    /// Loop history: folds one step into its loop's record ([`LoopRecord::fold`]),
    /// atomically, creating the record on the loop's first step, and says what it changed.
    /// Stores without a history answer [`StoreError::Unsupported`] (the default).
    ///
    /// [`LoopRecord::fold`]: crate::LoopRecord::fold
    fn record_loop(&self, step: &LoopStep) -> Result<LoopChange, StoreError> {
        let _ = step;
        Err(StoreError::Unsupported("loop history"))
    }

    /// Loop history: one page of the loops a query selects.
    fn loops(&self, query: &LoopQuery) -> Result<LoopPage, StoreError> {
        let _ = query;
        Err(StoreError::Unsupported("loop history"))
    }

    /// Loop history: forgets the loops whose last step is older than `before_ms` (the
    /// retention); how many it forgot.
    fn prune_loops(&self, before_ms: u64) -> Result<u64, StoreError> {
        let _ = before_ms;
        Ok(0)
    }
}

/// A store operation that can be awaited.
pub type StoreFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What an update does to an entry (see [`Store::update`]); `Send`, so that an awaited
/// update can move between threads.
pub type ApplyFn<'a> = dyn FnMut(&mut SessionEntry) + Send + 'a;

/// The awaitable operations of a network store, with [`Store`]'s meaning and guarantees.
/// The guard's `*_async` methods use them when [`Store::as_async`] offers them.
///
/// ```
/// use loopguard_guard::{MemoryOptions, MemoryStore, Store};
/// // The memory store has no awaitable side: async callers call it in place.
/// assert!(MemoryStore::new(MemoryOptions::default()).as_async().is_none());
/// ```
pub trait AsyncStore: Send + Sync + fmt::Debug {
    /// [`Store::update`], awaited.
    fn update<'a>(&'a self, key: &'a str, apply: &'a mut ApplyFn<'_>) -> StoreFuture<'a, ()>;

    /// [`Store::load`], awaited.
    fn load<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<SessionEntry>>;

    /// [`Store::delete`], awaited.
    fn delete<'a>(&'a self, key: &'a str) -> StoreFuture<'a, bool>;

    /// [`Store::ping`], awaited.
    fn ping(&self) -> StoreFuture<'_, ()>;
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
    #[cfg(feature = "sqlite")]
    #[error("state database {}: {source}{}", path.display(), sqlite::hint(source))]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer loopguard.
    #[cfg(feature = "sqlite")]
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
    /// A Redis URL given to a build without the `redis` feature (the npm and Python
    /// packages): the store exists, just not in this program.
    #[error("store `{0}`: this build of loopguard has no Redis store (only `memory` and `sqlite:PATH`); to share sessions through Redis, run `loopguard serve --store {0}` and use a remote guard")]
    NotBuilt(String),
    /// The store does not keep what was asked of it (a store of an embedder's without a
    /// loop history).
    #[error("this store keeps no {0}")]
    Unsupported(&'static str),
    /// A query the store cannot answer (a cursor no listing returned).
    #[error("{0}")]
    BadQuery(String),
    /// A `--store` value that names no store.
    #[error("--store `{0}`: expected `memory`, `sqlite:PATH`, `redis://HOST:PORT[/DB]` (`rediss://` for TLS) or `redis-cluster://HOST:PORT[,HOST:PORT…]`")]
    BadSpec(String),
}

impl StoreError {
    /// The error of opening the store `spec` names, for people: the spec (its password
    /// hidden) and why, the spec once (the errors about the spec itself name it already).
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = loopguard_guard::open_store("mongodb://x", Duration::from_secs(60)).unwrap_err();
    /// assert_eq!(e.opening("mongodb://x").matches("mongodb://x").count(), 1);
    /// ```
    pub fn opening(&self, spec: &str) -> String {
        match self {
            StoreError::BadSpec(_) | StoreError::NotBuilt(_) => self.to_string(),
            _ => format!("{}: {self}", redact_spec(spec)),
        }
    }
}

/// Builds the store a `--store` value names: `memory`, `sqlite:PATH`, or (with the
/// `redis` feature) `redis://HOST:PORT[/DB]`, `rediss://…` or `redis-cluster://…` (see
/// [`is_redis_spec`]). `idle_ttl` applies to every kind.
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
    #[cfg(feature = "sqlite")]
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
    if is_redis_spec(spec) {
        let opts = RedisOptions {
            idle_ttl,
            ..RedisOptions::default()
        };
        return Ok(Arc::new(RedisStore::open(spec, opts)?));
    }
    #[cfg(not(feature = "redis"))]
    if is_redis_spec(spec) {
        return Err(StoreError::NotBuilt(redact_spec(spec)));
    }
    Err(StoreError::BadSpec(spec.to_string()))
}

/// Whether a `--store` value names Redis: `redis://`, `rediss://`, `redis-cluster://` or
/// `rediss-cluster://`.
///
/// ```
/// assert!(loopguard_guard::is_redis_spec("redis-cluster://10.0.0.1:7000,10.0.0.2:7000"));
/// assert!(!loopguard_guard::is_redis_spec("sqlite:/tmp/state.db"));
/// ```
pub fn is_redis_spec(spec: &str) -> bool {
    [
        "redis://",
        "rediss://",
        "redis-cluster://",
        "rediss-cluster://",
    ]
    .iter()
    .any(|s| spec.starts_with(s))
}

/// A `--store` value fit to show: the password of a Redis URL replaced by `***`.
///
/// ```
/// use loopguard_guard::redact_spec;
/// assert_eq!(redact_spec("redis://user:secret@host:6379/0"), "redis://user:***@host:6379/0");
/// assert_eq!(redact_spec("sqlite:/tmp/state.db"), "sqlite:/tmp/state.db");
/// ```
pub fn redact_spec(url: &str) -> String {
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

/// The time now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A cursor the store cannot read, as a store error.
pub(crate) fn bad_cursor(message: String) -> StoreError {
    StoreError::BadQuery(message)
}
