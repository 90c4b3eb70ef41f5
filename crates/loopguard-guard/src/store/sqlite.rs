//! Sessions in a SQLite file: one machine, many processes.
//!
//! One database file holds every session. Each update opens an **immediate** transaction
//! (so it holds the write lock from the start: two processes can never both read the old
//! state and both write a new one), loads the session, applies the event and commits.
//! Parallel tool calls, which Claude Code runs as several hook processes at once, therefore
//! queue up behind each other and no update is lost. The database uses WAL with
//! `synchronous=NORMAL` (a process killed at any point loses nothing it committed) and a
//! busy timeout, after which the caller fails open. Connections do not checkpoint when they
//! close, so a commit costs no `fsync`: the WAL stays beside the database, and an update
//! that finds it larger than [`WAL_CHECKPOINT_BYTES`] after its commit checkpoints and
//! truncates it.
//!
//! Tables: `loopguard_schema` (the schema version, checked on every open: a database written
//! by a newer loopguard is refused rather than misread; one written by the first hook
//! release, version 1, is replaced, its sessions starting afresh), `sessions` (one row per
//! key: the encoded [`SessionEntry`] and its times) and `meta` (when sessions were last
//! pruned) and `loops` (the loop history: one row per loop, its [`LoopRecord`] as JSON, created
//! on the first loop; a table older loopguards ignore, so the schema version stays). Sessions idle for longer than the configured time are deleted, at most once an
//! hour.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use super::bad_cursor;
use super::{now_ms, Store, StoreError};
use crate::entry::SessionEntry;
use crate::loops::{LoopChange, LoopPage, LoopQuery, LoopRecord, LoopStep};

/// The schema this loopguard writes: `sessions` (the live sessions), `meta` (pruning's
/// bookkeeping) and `ended_sessions` (what the CLI hook keeps of a session after it ended,
/// for `loopguard status`; written by `loopguard-hook`). Version 3 added
/// `ended_sessions` to the schema (version 2 databases get it, their sessions kept).
pub const SCHEMA_VERSION: i64 = 3;
/// WAL size above which an update, after its commit, checkpoints the WAL into the database
/// and truncates it. The first process to open the database after all others closed it
/// reads the whole WAL to rebuild its index, so the WAL is kept short; the checkpoint (a
/// few `fsync`s) then happens about once every 20 hook calls.
pub const WAL_CHECKPOINT_BYTES: u64 = 256 * 1024;
/// Idle sessions are looked for at most this often.
const PRUNE_INTERVAL_MS: u64 = 60 * 60 * 1000;

/// How a [`SqliteStore`] behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long to wait for another process's transaction before giving up.
    pub busy_timeout: Duration,
    /// Sessions not updated for this long are deleted.
    pub idle_ttl: Duration,
}

impl Default for SqliteOptions {
    /// A 5 s busy timeout, sessions kept 7 days.
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
            idle_ttl: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

pub(super) fn hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => {
            " (the file is damaged or not a loopguard database: move it away and loopguard starts a new one)"
        }
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            " (another process held the database longer than the busy timeout)"
        }
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) | Some(ErrorCode::PermissionDenied) => {
            " (check that the file and its directory are writable)"
        }
        _ => "",
    }
}

/// Sessions in a SQLite database file.
///
/// ```
/// use loopguard_guard::{SqliteOptions, SqliteStore, Store};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = SqliteStore::open(&dir.path().join("state.sqlite3"), &SqliteOptions::default())?;
/// store.update("-/session-1", &mut |e| e.run_seq += 1)?;
/// assert_eq!(store.load("-/session-1")?.map(|e| e.run_seq), Some(1));
/// assert_eq!(store.keys()?, ["-/session-1"]);
/// # Ok(())
/// # }
/// ```
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    opts: SqliteOptions,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS loopguard_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    key TEXT PRIMARY KEY,
    entry BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions(updated_ms);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ended_sessions (
    key TEXT PRIMARY KEY,
    ended_ms INTEGER NOT NULL,
    summary TEXT NOT NULL
);
";

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn lock(m: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A transaction that panicked was rolled back when it was dropped.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) the database at `path`.
    pub fn open(path: &Path, opts: &SqliteOptions) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::CreateDir {
                    path: dir.to_path_buf(),
                    source: e,
                })?;
            }
        }
        SqliteStore::open_with(
            path,
            opts,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing database (for `loopguard status`); a missing file is an error.
    pub fn open_existing(path: &Path, opts: &SqliteOptions) -> Result<SqliteStore, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        SqliteStore::open_with(
            path,
            opts,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    fn open_with(
        path: &Path,
        opts: &SqliteOptions,
        flags: OpenFlags,
    ) -> Result<SqliteStore, StoreError> {
        let err = |e| StoreError::Sqlite {
            path: path.to_path_buf(),
            source: e,
        };
        let conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(opts.busy_timeout).map_err(err)?;
        // A new database starts in rollback-journal mode, and turning it to WAL takes an
        // exclusive lock. Several processes opening it at once (Claude Code's parallel hooks
        // on their first call) each hold a shared lock and want that one: SQLite answers
        // some of them "busy" at once instead of waiting, since waiting could deadlock. They
        // try again, within the same busy timeout.
        let wal = retry_busy(opts.busy_timeout, || {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
            }
            Ok(())
        });
        wal.map_err(err)?;
        // NORMAL in WAL mode: a commit survives a killed process (the WAL is written before
        // the commit returns); only a power loss can drop the last commits.
        conn.execute_batch("PRAGMA synchronous=NORMAL")
            .map_err(err)?;
        // Every hook is a short-lived process and usually the only connection: by default
        // SQLite would checkpoint the WAL into the database, fsync both, and delete the WAL
        // on every close, and create (and fsync) a new one on the next write. Instead the
        // WAL stays, commits cost no fsync, and `checkpoint_if_large` empties it now and
        // then.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(err)?;
        conn.execute_batch("PRAGMA wal_autocheckpoint=0")
            .map_err(err)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            opts: opts.clone(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| StoreError::Sqlite {
            path: self.path.clone(),
            source: e,
        }
    }

    /// `false` when the database has no loopguard schema yet; an error when it was written
    /// by a newer loopguard.
    fn has_schema(&self, conn: &Connection) -> Result<bool, StoreError> {
        match schema_version(conn).map_err(self.err())? {
            Some(found) if found > SCHEMA_VERSION => Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found,
            }),
            Some(found) => Ok(found == SCHEMA_VERSION),
            None => Ok(false),
        }
    }

    /// Checkpoints the WAL into the database and truncates it when it has grown past
    /// [`WAL_CHECKPOINT_BYTES`]. Never waits: when other processes are busy with the
    /// database it leaves the work to a later call. Returns whether it checkpointed.
    pub fn checkpoint_if_large(&self) -> Result<bool, StoreError> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        if len < WAL_CHECKPOINT_BYTES {
            return Ok(false);
        }
        let conn = lock(&self.conn);
        conn.busy_timeout(Duration::ZERO).map_err(self.err())?;
        let done = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|busy| busy == 0)
            .unwrap_or(false);
        conn.busy_timeout(self.opts.busy_timeout)
            .map_err(self.err())?;
        Ok(done)
    }

    /// SQLite's `PRAGMA integrity_check`: `"ok"` for a sound database.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        lock(&self.conn)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(self.err())
    }

    /// Creates the schema, or brings an older one up to [`SCHEMA_VERSION`], now (an
    /// update does it too): for a writer of a table of the schema other than `sessions`.
    pub fn ensure_schema(&self) -> Result<(), StoreError> {
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        ensure_schema(&tx, &self.path)?;
        tx.commit().map_err(self.err())
    }

    /// Every key with its last update (ms since the epoch), most recent first.
    pub fn keys_by_update(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = lock(&self.conn);
        if !self.has_schema(&conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn
            .prepare("SELECT key, updated_ms FROM sessions ORDER BY updated_ms DESC, key")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, to_u64(r.get(1)?))))
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }
}

/// Runs `f` again while SQLite answers "busy" without having waited (see `open_with`), until
/// `timeout` has passed; any other answer is returned at once.
fn retry_busy<T>(
    timeout: Duration,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && start.elapsed() < timeout =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

impl Store for SqliteStore {
    fn update(
        &self,
        key: &str,
        apply: &mut dyn FnMut(&mut SessionEntry),
    ) -> Result<(), StoreError> {
        let now = now_ms();
        {
            let mut conn = lock(&self.conn);
            let err = self.err();
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&err)?;
            ensure_schema(&tx, &self.path)?;
            prune(&tx, key, now, &self.opts).map_err(&err)?;
            let stored: Option<Vec<u8>> = tx
                .prepare_cached("SELECT entry FROM sessions WHERE key = ?1")
                .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional())
                .map_err(&err)?;
            let mut entry = match stored {
                None => SessionEntry::default(),
                Some(bytes) => match SessionEntry::decode(&bytes) {
                    Ok(e) => e,
                    // An unreadable entry (a damaged row, a state format from another
                    // version) would otherwise fail every later event of the session: it
                    // starts afresh, and says so through the entry.
                    Err(e) => {
                        let mut fresh = SessionEntry::default();
                        fresh.meta.insert(
                            crate::entry::RESTARTED.to_string(),
                            format!(
                                "session {key} in {}: {e}; starting it afresh",
                                self.path.display()
                            ),
                        );
                        fresh
                    }
                },
            };
            apply(&mut entry);
            let created = if entry.created_ms == 0 {
                now
            } else {
                entry.created_ms
            };
            tx.prepare_cached(
                "INSERT INTO sessions (key, entry, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(key) DO UPDATE SET entry = excluded.entry, updated_ms = excluded.updated_ms",
            )
            .and_then(|mut s| {
                s.execute(params![key, entry.encode(), to_i64(created), to_i64(now)])
            })
            .map_err(&err)?;
            tx.commit().map_err(&err)?;
        }
        // Housekeeping after the commit: a failure here loses nothing.
        if let Err(e) = self.checkpoint_if_large() {
            tracing::debug!(target: "loopguard::store", "{e} (while checkpointing; nothing was lost)");
        }
        Ok(())
    }

    fn load(&self, key: &str) -> Result<Option<SessionEntry>, StoreError> {
        let conn = lock(&self.conn);
        if !self.has_schema(&conn)? {
            return Ok(None);
        }
        let stored: Option<Vec<u8>> = conn
            .prepare_cached("SELECT entry FROM sessions WHERE key = ?1")
            .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional())
            .map_err(self.err())?;
        stored
            .map(|b| {
                SessionEntry::decode(&b).map_err(|source| StoreError::Corrupt {
                    key: key.to_string(),
                    source,
                })
            })
            .transpose()
    }

    fn delete(&self, key: &str) -> Result<bool, StoreError> {
        let conn = lock(&self.conn);
        if !self.has_schema(&conn)? {
            return Ok(false);
        }
        let n = conn
            .execute("DELETE FROM sessions WHERE key = ?1", [key])
            .map_err(self.err())?;
        Ok(n > 0)
    }

    fn keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.keys_by_update()?.into_iter().map(|(k, _)| k).collect())
    }

    fn ping(&self) -> Result<(), StoreError> {
        let conn = lock(&self.conn);
        self.has_schema(&conn).map(|_| ())
    }

    /// One immediate transaction: the record read, folded and written back, so that
    /// processes sharing the file keep one record per loop.
    fn record_loop(&self, step: &LoopStep) -> Result<LoopChange, StoreError> {
        let mut conn = lock(&self.conn);
        let err = self.err();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        tx.execute_batch(LOOPS_SCHEMA).map_err(&err)?;
        let id = step.loop_id();
        let stored: Option<String> = tx
            .prepare_cached("SELECT record FROM loops WHERE id = ?1")
            .and_then(|mut s| s.query_row([&id], |r| r.get(0)).optional())
            .map_err(&err)?;
        // A row this loopguard cannot read starts the loop's record afresh.
        let existing = stored.and_then(|text| LoopRecord::from_json(&text).ok());
        let change = LoopRecord::apply(existing, step);
        let r = &change.record;
        tx.prepare_cached(
            "INSERT INTO loops (id, tenant, session, agent, service, first_ms, last_ms, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(id) DO UPDATE SET agent = excluded.agent, service = excluded.service,
                 last_ms = excluded.last_ms, record = excluded.record",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                r.tenant.as_deref().unwrap_or(NO_TENANT),
                r.session,
                r.agent,
                r.service,
                to_i64(r.first_ms),
                to_i64(r.last_ms),
                r.to_json()
            ])
        })
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(change)
    }

    fn loops(&self, q: &LoopQuery) -> Result<LoopPage, StoreError> {
        let conn = lock(&self.conn);
        let exists: bool = conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type='table' AND name='loops')",
                [],
                |r| r.get(0),
            )
            .map_err(self.err())?;
        if !exists {
            return Ok(LoopPage::default());
        }
        let (after_ms, after_id) = q.after().map_err(bad_cursor)?.unwrap_or((0, String::new()));
        let limit = q.page_size();
        let tenant = q.tenant.as_ref().map(|t| t.as_deref().unwrap_or(NO_TENANT));
        let mut stmt = conn
            .prepare_cached(
                "SELECT record FROM loops
                 WHERE (?1 IS NULL OR tenant = ?1) AND last_ms >= ?2
                   AND (?3 IS NULL OR agent = ?3) AND (?4 IS NULL OR service = ?4)
                   AND (?5 IS NULL OR session = ?5)
                   AND (first_ms > ?6 OR (first_ms = ?6 AND id > ?7))
                 ORDER BY first_ms, id LIMIT ?8",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(
                params![
                    tenant,
                    to_i64(q.since_ms),
                    q.agent,
                    q.service,
                    q.session,
                    to_i64(after_ms),
                    after_id,
                    to_i64(limit as u64 + 1)
                ],
                |r| r.get::<_, String>(0),
            )
            .map_err(self.err())?;
        let mut records = Vec::new();
        for row in rows {
            let text = row.map_err(self.err())?;
            match LoopRecord::from_json(&text) {
                Ok(r) => records.push(r),
                Err(e) => {
                    tracing::warn!(target: "loopguard::store", "{}: a loop record is unreadable and left out: {e}", self.path.display())
                }
            }
        }
        Ok(LoopPage::cut(records, limit))
    }

    fn prune_loops(&self, before_ms: u64) -> Result<u64, StoreError> {
        let conn = lock(&self.conn);
        conn.execute_batch(LOOPS_SCHEMA).map_err(self.err())?;
        let n = conn
            .execute("DELETE FROM loops WHERE last_ms < ?1", [to_i64(before_ms)])
            .map_err(self.err())?;
        Ok(n as u64)
    }
}

/// The `tenant` column of a loop without a tenant.
const NO_TENANT: &str = "-";

/// The loop history's table: created by the first loop, ignored by older loopguards.
const LOOPS_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS loops (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    session TEXT NOT NULL,
    agent TEXT,
    service TEXT,
    first_ms INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS loops_by_start ON loops(tenant, first_ms, id);
CREATE INDEX IF NOT EXISTS loops_by_last ON loops(last_ms);
";

fn schema_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type='table' AND name='loopguard_schema')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    conn.query_row("SELECT max(version) FROM loopguard_schema", [], |r| {
        r.get(0)
    })
}

fn ensure_schema(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    match schema_version(conn).map_err(err)? {
        Some(v) if v > SCHEMA_VERSION => {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: v,
            })
        }
        Some(v) if v == SCHEMA_VERSION => return Ok(()),
        Some(2) => {
            // Version 2 lacked `ended_sessions` in the schema (the hook created it on its
            // own): the sessions are kept, the table added below if it is not there.
            conn.execute("UPDATE loopguard_schema SET version = ?1", [SCHEMA_VERSION])
                .map_err(err)?;
        }
        Some(_) => {
            // Version 1 (the first hook release) kept the engine state in other columns:
            // its sessions start afresh.
            tracing::warn!(
                target: "loopguard::store",
                "state database {}: schema version 1 replaced by {SCHEMA_VERSION}; its sessions start afresh",
                path.display()
            );
            conn.execute_batch(
                "DROP TABLE IF EXISTS sessions; DROP TABLE IF EXISTS events; DELETE FROM loopguard_schema;",
            )
            .map_err(err)?;
        }
        None => {}
    }
    conn.execute_batch(SCHEMA).map_err(err)?;
    conn.execute(
        "INSERT INTO loopguard_schema (version) SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM loopguard_schema)",
        [SCHEMA_VERSION],
    )
    .map_err(err)?;
    Ok(())
}

fn prune(
    conn: &Connection,
    current: &str,
    now_ms: u64,
    opts: &SqliteOptions,
) -> rusqlite::Result<()> {
    let last: Option<i64> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = 'last_prune_ms'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if let Some(last) = last {
        if now_ms.saturating_sub(to_u64(last)) < PRUNE_INTERVAL_MS {
            return Ok(());
        }
    }
    let ttl = u64::try_from(opts.idle_ttl.as_millis()).unwrap_or(u64::MAX);
    let cutoff = to_i64(now_ms.saturating_sub(ttl));
    conn.execute(
        "DELETE FROM sessions WHERE updated_ms < ?1 AND key <> ?2",
        params![cutoff, current],
    )?;
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('last_prune_ms', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [to_i64(now_ms)],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SqliteOptions {
        SqliteOptions {
            busy_timeout: Duration::from_secs(10),
            idle_ttl: Duration::from_secs(3600 * 24),
        }
    }

    /// "Busy" answered without waiting is tried again until the timeout; anything else is
    /// returned at once.
    #[test]
    fn busy_is_tried_again_within_the_timeout() {
        let busy = || {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                None,
            )
        };
        let mut tries = 0;
        let r = retry_busy(Duration::from_secs(10), || {
            tries += 1;
            if tries < 4 {
                Err(busy())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(r.unwrap(), 4);
        let mut tries = 0;
        let r: rusqlite::Result<()> = retry_busy(Duration::from_secs(10), || {
            tries += 1;
            Err(rusqlite::Error::InvalidQuery)
        });
        assert!(r.is_err() && tries == 1);
        let start = std::time::Instant::now();
        let r: rusqlite::Result<()> = retry_busy(Duration::from_millis(30), || Err(busy()));
        assert_eq!(
            r.unwrap_err().sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy)
        );
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn round_trip_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/s.sqlite3");
        let store = SqliteStore::open(&path, &opts()).unwrap();
        store.update("a", &mut |e| e.run_seq += 1).unwrap();
        store.update("a", &mut |e| e.run_seq += 1).unwrap();
        assert_eq!(store.load("a").unwrap().unwrap().run_seq, 2);
        assert_eq!(store.integrity_check().unwrap(), "ok");
        let mode: String = lock(&store.conn)
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert!(store.delete("a").unwrap());
        assert!(store.load("a").unwrap().is_none());
    }

    #[test]
    fn a_panicking_update_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s"), &opts()).unwrap();
        store.update("a", &mut |e| e.run_seq = 1).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store
                .update("a", &mut |e| {
                    e.run_seq = 99;
                    panic!("boom");
                })
                .ok();
        }));
        assert!(r.is_err());
        assert_eq!(store.load("a").unwrap().unwrap().run_seq, 1);
    }

    #[test]
    fn newer_schemas_and_garbage_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = SqliteStore::open(&path, &opts()).unwrap();
        store.update("a", &mut |_| {}).unwrap();
        lock(&store.conn)
            .execute("UPDATE loopguard_schema SET version = 99", [])
            .unwrap();
        drop(store);
        let store = SqliteStore::open(&path, &opts()).unwrap();
        let e = store.update("a", &mut |_| {}).unwrap_err();
        assert!(
            matches!(e, StoreError::NewerSchema { found: 99, .. }),
            "{e}"
        );
        assert!(store.keys().is_err());

        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![0x42u8; 8192]).unwrap();
        let e = SqliteStore::open(&junk, &opts())
            .and_then(|s| s.update("a", &mut |_| {}))
            .unwrap_err();
        assert!(e.to_string().contains("not a database"), "{e}");
        assert!(e.to_string().contains("move it away"), "{e}");
    }

    #[test]
    fn a_version_1_database_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE loopguard_schema (version INTEGER NOT NULL);
                 INSERT INTO loopguard_schema VALUES (1);
                 CREATE TABLE sessions (session_id TEXT PRIMARY KEY, state BLOB NOT NULL);
                 CREATE TABLE events (session_id TEXT, seq INTEGER);",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path, &opts()).unwrap();
        store.update("a", &mut |e| e.run_seq = 3).unwrap();
        assert_eq!(store.load("a").unwrap().unwrap().run_seq, 3);
    }

    #[test]
    fn a_version_2_database_keeps_its_sessions_and_gains_ended_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        {
            let store = SqliteStore::open(&path, &opts()).unwrap();
            store.update("a", &mut |e| e.run_seq = 4).unwrap();
            let c = lock(&store.conn);
            c.execute_batch("DROP TABLE ended_sessions; UPDATE loopguard_schema SET version = 2;")
                .unwrap();
        }
        let store = SqliteStore::open(&path, &opts()).unwrap();
        store.ensure_schema().unwrap();
        assert_eq!(store.load("a").unwrap().unwrap().run_seq, 4);
        let c = lock(&store.conn);
        let version: i64 = c
            .query_row("SELECT max(version) FROM loopguard_schema", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let ended: i64 = c
            .query_row("SELECT count(*) FROM ended_sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ended, 0);
    }

    #[test]
    fn a_damaged_entry_starts_afresh_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s"), &opts()).unwrap();
        store.update("a", &mut |e| e.run_seq = 3).unwrap();
        lock(&store.conn)
            .execute("UPDATE sessions SET entry = x'00010203'", [])
            .unwrap();
        assert!(store.load("a").is_err());
        let mut note = None;
        store
            .update("a", &mut |e| {
                note = e.meta.get(crate::entry::RESTARTED).cloned();
                e.meta.remove(crate::entry::RESTARTED);
            })
            .unwrap();
        assert!(note.unwrap().contains("starting it afresh"));
        assert_eq!(store.load("a").unwrap().unwrap().run_seq, 0);
    }

    #[test]
    fn a_held_lock_times_out_as_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let holder = SqliteStore::open(&path, &opts()).unwrap();
        holder.update("a", &mut |_| {}).unwrap();
        let mut conn = lock(&holder.conn);
        let _t = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let other = SqliteStore::open(
            &path,
            &SqliteOptions {
                busy_timeout: Duration::from_millis(50),
                ..opts()
            },
        )
        .unwrap();
        let e = other.update("a", &mut |_| {}).unwrap_err();
        assert!(
            e.to_string().contains("locked") || e.to_string().contains("busy"),
            "{e}"
        );
    }
}
