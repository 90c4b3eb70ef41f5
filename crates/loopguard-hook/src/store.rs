//! Session state in SQLite.
//!
//! One database file holds every Claude Code session the hook has seen. Each hook process
//! opens it, starts an **immediate** transaction (so it holds the write lock from the
//! start: two processes can never both read the old state and both write a new one), loads
//! its session, applies the event and commits. Parallel tool calls, which Claude Code runs
//! as several hook processes at once, therefore queue up behind each other and no update
//! is lost. The database uses WAL with `synchronous=NORMAL` (a process killed at any
//! point loses nothing it committed) and a busy timeout, after which the hook fails open.
//! Connections do not checkpoint when they close, so a commit costs no `fsync`: the WAL
//! stays beside the database, and a hook that finds it larger than
//! [`WAL_CHECKPOINT_BYTES`] after its commit checkpoints and truncates it.
//!
//! Tables: `loopguard_schema` (the schema version, checked on every open: a database
//! written by a newer loopguard is refused rather than misread), `sessions` (one row per
//! session: the engine state from [`loopguard_core::Session::export_state`], the run
//! counter, an aborted run, counters and times), `events` (the last [`EVENTS_KEPT`] events
//! of each session, for `loopguard status`) and `meta` (when sessions were last pruned).
//! Sessions idle for longer than the configured time are deleted, at most once an hour.
//!
//! ```
//! use loopguard_hook::store::{Store, StoreOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let mut store = Store::open(&dir.path().join("state.sqlite3"), &StoreOptions::default()).unwrap();
//! let mut txn = store.transaction("session-1", 1_000).unwrap();
//! assert!(txn.row.state.is_none()); // a new session
//! txn.row.state = Some(b"{}".to_vec());
//! txn.save(None).unwrap();
//! txn.commit().unwrap();
//! assert_eq!(store.sessions().unwrap().len(), 1);
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

/// The schema this loopguard writes.
pub const SCHEMA_VERSION: i64 = 1;
/// Events kept per session for `loopguard status`.
pub const EVENTS_KEPT: u64 = 200;
/// WAL size above which a hook, after its commit, checkpoints the WAL into the database
/// and truncates it. The first process to open the database after all others closed it
/// reads the whole WAL to rebuild its index, so the WAL is kept short; the checkpoint (a
/// few `fsync`s) then happens about once every 20 hook calls.
pub const WAL_CHECKPOINT_BYTES: u64 = 256 * 1024;
/// Idle sessions are looked for at most this often.
pub const PRUNE_INTERVAL_MS: u64 = 60 * 60 * 1000;

/// How the store behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long to wait for another hook process's transaction before giving up.
    pub busy_timeout: Duration,
    /// Sessions not updated for this long are deleted.
    pub idle_ttl: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            busy_timeout: Duration::from_secs(5),
            idle_ttl: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory for the database could not be created.
    #[error("cannot create the state directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite reported an error.
    #[error("state database {}: {source}{}", path.display(), hint(source))]
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
    /// `loopguard status` was pointed at a file that does not exist.
    #[error("no state database at {}", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
}

fn hint(e: &rusqlite::Error) -> &'static str {
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

/// One session's row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionRow {
    /// Claude Code's `session_id`.
    pub session_id: String,
    /// The engine state ([`loopguard_core::Session::export_state`]); `None` for a session
    /// not stored yet.
    pub state: Option<Vec<u8>>,
    /// Prompts seen (`UserPromptSubmit`): the run number.
    pub run_seq: u64,
    /// The run stopped by the post-compaction guard, and the stop message.
    pub aborted_run: Option<String>,
    /// The stop message of `aborted_run`.
    pub aborted_message: Option<String>,
    /// Events applied to the session.
    pub event_count: u64,
    /// When the session was first stored (ms since the epoch).
    pub created_ms: u64,
    /// When it was last updated.
    pub updated_ms: u64,
    /// The payload's `cwd` of the last event.
    pub cwd: Option<String>,
    /// The agent id the policy was chosen for.
    pub agent: Option<String>,
    /// Where the config of the last event came from.
    pub config: Option<String>,
}

/// One recorded event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventRow {
    /// The session's event number (1 for the first).
    pub seq: u64,
    /// When (ms since the epoch).
    pub ts_ms: u64,
    /// `hook_event_name`.
    pub event: String,
    /// The run.
    pub run: Option<String>,
    /// The Claude Code tool name.
    pub tool: Option<String>,
    /// `tool_use_id`.
    pub tool_use_id: Option<String>,
    /// What loopguard decided (`allow`, `warn`, `block`, `recorded`, `abort`, …).
    pub decision: String,
    /// The detector that fired.
    pub detector: Option<String>,
    /// Its count.
    pub count: Option<u64>,
    /// The message shown to the model or the user.
    pub message: Option<String>,
}

/// An open state database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    opts: StoreOptions,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS loopguard_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    state BLOB NOT NULL,
    run_seq INTEGER NOT NULL DEFAULT 0,
    aborted_run TEXT,
    aborted_message TEXT,
    event_count INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    cwd TEXT,
    agent TEXT,
    config TEXT
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions(updated_ms);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL,
    event TEXT NOT NULL,
    run TEXT,
    tool TEXT,
    tool_use_id TEXT,
    decision TEXT NOT NULL,
    detector TEXT,
    count INTEGER,
    message TEXT,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
";

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path, opts: &StoreOptions) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::CreateDir {
                    path: dir.to_path_buf(),
                    source: e,
                })?;
            }
        }
        Store::open_with(
            path,
            opts,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing database (for `loopguard status`); a missing file is an error.
    pub fn open_existing(path: &Path, opts: &StoreOptions) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        Store::open_with(
            path,
            opts,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    fn open_with(path: &Path, opts: &StoreOptions, flags: OpenFlags) -> Result<Store, StoreError> {
        let err = |e| StoreError::Sqlite {
            path: path.to_path_buf(),
            source: e,
        };
        let conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(opts.busy_timeout).map_err(err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
                .map_err(err)?;
        }
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
        Ok(Store {
            conn,
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

    /// Starts an immediate transaction and loads `session_id` (a fresh row when the session
    /// is new). Creates the schema on first use, checks its version, and prunes idle
    /// sessions when it is time.
    pub fn transaction(
        &mut self,
        session_id: &str,
        now_ms: u64,
    ) -> Result<SessionTxn<'_>, StoreError> {
        let path = self.path.clone();
        let err = |e| StoreError::Sqlite {
            path: path.clone(),
            source: e,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        ensure_schema(&tx, &path)?;
        prune(&tx, session_id, now_ms, &self.opts).map_err(err)?;
        let row = load(&tx, session_id)
            .map_err(err)?
            .unwrap_or_else(|| SessionRow {
                session_id: session_id.to_string(),
                created_ms: now_ms,
                updated_ms: now_ms,
                ..SessionRow::default()
            });
        Ok(SessionTxn {
            tx,
            path,
            row,
            now_ms,
        })
    }

    fn has_schema(&self) -> Result<bool, StoreError> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type='table' AND name='loopguard_schema')",
                [],
                |r| r.get(0),
            )
            .map_err(self.err())?;
        if exists {
            let v: Option<i64> = self
                .conn
                .query_row("SELECT max(version) FROM loopguard_schema", [], |r| {
                    r.get(0)
                })
                .map_err(self.err())?;
            if let Some(found) = v.filter(|v| *v > SCHEMA_VERSION) {
                return Err(StoreError::NewerSchema {
                    path: self.path.clone(),
                    found,
                });
            }
        }
        Ok(exists)
    }

    /// Every session, most recently updated first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        if !self.has_schema()? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{SELECT_SESSION} ORDER BY updated_ms DESC, session_id"
            ))
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], read_session)
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    /// One session.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionRow>, StoreError> {
        if !self.has_schema()? {
            return Ok(None);
        }
        load(&self.conn, session_id).map_err(self.err())
    }

    /// The last `limit` events of a session, oldest first.
    pub fn events(&self, session_id: &str, limit: usize) -> Result<Vec<EventRow>, StoreError> {
        if !self.has_schema()? {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq, ts_ms, event, run, tool, tool_use_id, decision, detector, count, message
                 FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2",
            )
            .map_err(self.err())?;
        let mut rows = stmt
            .query_map(params![session_id, to_i64(limit as u64)], |r| {
                Ok(EventRow {
                    seq: to_u64(r.get(0)?),
                    ts_ms: to_u64(r.get(1)?),
                    event: r.get(2)?,
                    run: r.get(3)?,
                    tool: r.get(4)?,
                    tool_use_id: r.get(5)?,
                    decision: r.get(6)?,
                    detector: r.get(7)?,
                    count: r.get::<_, Option<i64>>(8)?.map(to_u64),
                    message: r.get(9)?,
                })
            })
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        rows.reverse();
        Ok(rows)
    }

    /// Checkpoints the WAL into the database and truncates it when it has grown past
    /// [`WAL_CHECKPOINT_BYTES`]. Never waits: when other hooks are busy with the database
    /// it leaves the work to a later call. Returns whether it checkpointed.
    pub fn checkpoint_if_large(&self) -> Result<bool, StoreError> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        if len < WAL_CHECKPOINT_BYTES {
            return Ok(false);
        }
        self.conn.busy_timeout(Duration::ZERO).map_err(self.err())?;
        let done = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|busy| busy == 0)
            .unwrap_or(false);
        self.conn
            .busy_timeout(self.opts.busy_timeout)
            .map_err(self.err())?;
        Ok(done)
    }

    /// SQLite's `PRAGMA integrity_check`: `"ok"` for a sound database.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(self.err())
    }
}

const SELECT_SESSION: &str =
    "SELECT session_id, state, run_seq, aborted_run, aborted_message, event_count,
    created_ms, updated_ms, cwd, agent, config FROM sessions";

fn read_session(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        session_id: r.get(0)?,
        state: Some(r.get(1)?),
        run_seq: to_u64(r.get(2)?),
        aborted_run: r.get(3)?,
        aborted_message: r.get(4)?,
        event_count: to_u64(r.get(5)?),
        created_ms: to_u64(r.get(6)?),
        updated_ms: to_u64(r.get(7)?),
        cwd: r.get(8)?,
        agent: r.get(9)?,
        config: r.get(10)?,
    })
}

fn load(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<SessionRow>> {
    conn.prepare_cached(&format!("{SELECT_SESSION} WHERE session_id = ?1"))?
        .query_row([session_id], read_session)
        .optional()
}

fn ensure_schema(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type='table' AND name='loopguard_schema')",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if exists {
        let found: Option<i64> = conn
            .query_row("SELECT max(version) FROM loopguard_schema", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        match found {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: path.to_path_buf(),
                    found: v,
                })
            }
            Some(_) => return Ok(()),
            None => {}
        }
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
    opts: &StoreOptions,
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
        "DELETE FROM sessions WHERE updated_ms < ?1 AND session_id <> ?2",
        params![cutoff, current],
    )?;
    conn.execute(
        "DELETE FROM events WHERE session_id NOT IN (SELECT session_id FROM sessions) AND session_id <> ?1",
        [current],
    )?;
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('last_prune_ms', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [to_i64(now_ms)],
    )?;
    Ok(())
}

/// A session loaded inside an immediate transaction: change [`SessionTxn::row`], then
/// [`SessionTxn::save`] and [`SessionTxn::commit`]. Dropping it rolls back.
pub struct SessionTxn<'s> {
    tx: rusqlite::Transaction<'s>,
    path: PathBuf,
    /// The session, as loaded; saved by [`SessionTxn::save`].
    pub row: SessionRow,
    now_ms: u64,
}

impl std::fmt::Debug for SessionTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTxn")
            .field("row", &self.row)
            .finish_non_exhaustive()
    }
}

impl SessionTxn<'_> {
    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| StoreError::Sqlite {
            path: self.path.clone(),
            source: e,
        }
    }

    /// Writes the row (its `state` must be set) and, when given, one event (its `seq` is
    /// assigned here). Counts the event in `row.event_count`.
    pub fn save(&mut self, event: Option<&EventRow>) -> Result<(), StoreError> {
        self.row.updated_ms = self.now_ms;
        if event.is_some() {
            self.row.event_count += 1;
        }
        let r = &self.row;
        let state = r.state.as_deref().unwrap_or(b"");
        self.tx
            .prepare_cached(
                "INSERT INTO sessions (session_id, state, run_seq, aborted_run, aborted_message,
                    event_count, created_ms, updated_ms, cwd, agent, config)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT(session_id) DO UPDATE SET state = excluded.state,
                    run_seq = excluded.run_seq, aborted_run = excluded.aborted_run,
                    aborted_message = excluded.aborted_message, event_count = excluded.event_count,
                    updated_ms = excluded.updated_ms, cwd = excluded.cwd, agent = excluded.agent,
                    config = excluded.config",
            )
            .and_then(|mut s| {
                s.execute(params![
                    r.session_id,
                    state,
                    to_i64(r.run_seq),
                    r.aborted_run,
                    r.aborted_message,
                    to_i64(r.event_count),
                    to_i64(r.created_ms),
                    to_i64(r.updated_ms),
                    r.cwd,
                    r.agent,
                    r.config,
                ])
            })
            .map_err(self.err())?;
        if let Some(e) = event {
            let seq = self.row.event_count;
            self.tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO events (session_id, seq, ts_ms, event, run, tool, tool_use_id,
                        decision, detector, count, message)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        self.row.session_id,
                        to_i64(seq),
                        to_i64(self.now_ms),
                        e.event,
                        e.run,
                        e.tool,
                        e.tool_use_id,
                        e.decision,
                        e.detector,
                        e.count.map(to_i64),
                        e.message,
                    ])
                })
                .map_err(self.err())?;
            if seq.is_multiple_of(64) && seq > EVENTS_KEPT {
                self.tx
                    .execute(
                        "DELETE FROM events WHERE session_id = ?1 AND seq <= ?2",
                        params![self.row.session_id, to_i64(seq - EVENTS_KEPT)],
                    )
                    .map_err(self.err())?;
            }
        }
        Ok(())
    }

    /// Commits.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = self.path;
        self.tx
            .commit()
            .map_err(|e| StoreError::Sqlite { path, source: e })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> StoreOptions {
        StoreOptions {
            busy_timeout: Duration::from_secs(10),
            idle_ttl: Duration::from_secs(3600 * 24),
        }
    }

    fn put(store: &mut Store, id: &str, now: u64, state: &[u8]) {
        let mut t = store.transaction(id, now).unwrap();
        t.row.state = Some(state.to_vec());
        t.save(Some(&EventRow {
            event: "PreToolUse".into(),
            decision: "allow".into(),
            ..Default::default()
        }))
        .unwrap();
        t.commit().unwrap();
    }

    #[test]
    fn round_trip_and_counters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/s.sqlite3");
        let mut store = Store::open(&path, &opts()).unwrap();
        put(&mut store, "a", 10, b"one");
        put(&mut store, "a", 20, b"two");
        let row = store.session("a").unwrap().unwrap();
        assert_eq!(row.state.as_deref(), Some(&b"two"[..]));
        assert_eq!(
            (row.event_count, row.created_ms, row.updated_ms),
            (2, 10, 20)
        );
        assert_eq!(store.events("a", 10).unwrap().len(), 2);
        assert_eq!(store.integrity_check().unwrap(), "ok");
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_dropped_transaction_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s"), &opts()).unwrap();
        put(&mut store, "a", 1, b"kept");
        {
            let mut t = store.transaction("a", 2).unwrap();
            t.row.state = Some(b"lost".to_vec());
            t.save(None).unwrap();
        }
        assert_eq!(
            store.session("a").unwrap().unwrap().state.as_deref(),
            Some(&b"kept"[..])
        );
    }

    #[test]
    fn idle_sessions_are_pruned_hourly() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s"), &opts()).unwrap();
        let (day, min) = (24 * 3600 * 1000, 60 * 1000);
        let ids = |store: &Store| -> Vec<String> {
            store
                .sessions()
                .unwrap()
                .into_iter()
                .map(|s| s.session_id)
                .collect()
        };
        put(&mut store, "old", 0, b"x"); // first prune: nothing to do
        put(&mut store, "fresh", 30 * min, b"x");
        put(&mut store, "now", day + 20 * min, b"x"); // prunes "old"
        assert_eq!(ids(&store), ["now", "fresh"]);
        assert!(store.events("old", 10).unwrap().is_empty());
        put(&mut store, "stale", 40 * min, b"x");
        // Less than an hour after the last prune: nothing happens.
        put(&mut store, "now", day + 50 * min, b"x");
        assert_eq!(ids(&store).len(), 3);
        put(&mut store, "now", day + 81 * min, b"x");
        assert_eq!(ids(&store), ["now"]);
    }

    #[test]
    fn events_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s"), &opts()).unwrap();
        for i in 0..(EVENTS_KEPT + 70) {
            put(&mut store, "a", i, b"x");
        }
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert!(n as u64 <= EVENTS_KEPT + 64, "{n}");
        assert_eq!(
            store.session("a").unwrap().unwrap().event_count,
            EVENTS_KEPT + 70
        );
        let last = store.events("a", 1).unwrap();
        assert_eq!(last[0].seq, EVENTS_KEPT + 70);
    }

    #[test]
    fn a_large_wal_is_checkpointed_and_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let wal = dir.path().join("s-wal");
        let mut store = Store::open(&path, &opts()).unwrap();
        put(&mut store, "a", 1, b"x");
        assert!(!store.checkpoint_if_large().unwrap());
        // Closing does not checkpoint: the WAL stays.
        drop(store);
        assert!(wal.metadata().unwrap().len() > 0);
        let mut store = Store::open(&path, &opts()).unwrap();
        for i in 0..40 {
            put(&mut store, "a", 2 + i, &vec![b'y'; 16 * 1024]);
        }
        assert!(wal.metadata().unwrap().len() >= WAL_CHECKPOINT_BYTES);
        assert!(store.checkpoint_if_large().unwrap());
        assert_eq!(wal.metadata().unwrap().len(), 0);
        drop(store);
        let store = Store::open(&path, &opts()).unwrap();
        assert_eq!(store.session("a").unwrap().unwrap().event_count, 41);
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn newer_schemas_and_garbage_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut store = Store::open(&path, &opts()).unwrap();
        put(&mut store, "a", 1, b"x");
        store
            .conn
            .execute("UPDATE loopguard_schema SET version = 99", [])
            .unwrap();
        drop(store);
        let mut store = Store::open(&path, &opts()).unwrap();
        let e = store.transaction("a", 2).unwrap_err();
        assert!(
            matches!(e, StoreError::NewerSchema { found: 99, .. }),
            "{e}"
        );
        assert!(store.sessions().is_err());

        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![0x42u8; 8192]).unwrap();
        let e = Store::open(&junk, &opts())
            .and_then(|mut s| s.transaction("a", 1).map(|_| ()))
            .unwrap_err();
        assert!(e.to_string().contains("not a database"), "{e}");
        assert!(e.to_string().contains("move it away"), "{e}");
    }

    #[test]
    fn a_held_lock_times_out_as_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut holder = Store::open(&path, &opts()).unwrap();
        let _t = holder.transaction("a", 1).unwrap();
        let mut other = Store::open(
            &path,
            &StoreOptions {
                busy_timeout: Duration::from_millis(50),
                ..opts()
            },
        )
        .unwrap();
        let e = other.transaction("a", 1).unwrap_err();
        assert!(
            e.to_string().contains("locked") || e.to_string().contains("busy"),
            "{e}"
        );
    }
}
