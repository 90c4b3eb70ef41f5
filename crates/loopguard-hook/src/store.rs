//! The hook's state: the live-guard layer's SQLite store.
//!
//! One database file holds every Claude Code session the hook has seen, as
//! [`loopguard_guard::SqliteStore`] keeps it: each hook process opens it, applies its event
//! inside one `BEGIN IMMEDIATE` transaction and commits, so parallel tool calls (parallel
//! hook processes) lose no update. See [`loopguard_guard::SqliteStore`] for the pragmas,
//! the WAL handling, the schema version and pruning.
//!
//! ```
//! use loopguard_hook::store::{SqliteStore, SqliteOptions};
//! use loopguard_guard::Store as _;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("state.sqlite3"), &SqliteOptions::default())?;
//! store.update(&loopguard_hook::store::key("session-1"), &mut |e| e.run_seq += 1)?;
//! assert_eq!(store.keys()?.len(), 1);
//! # Ok(())
//! # }
//! ```

pub use loopguard_guard::{
    SqliteOptions, SqliteStore, StoreError, SCHEMA_VERSION, WAL_CHECKPOINT_BYTES,
};

/// Decisions kept per session for `loopguard status`.
pub const EVENTS_KEPT: usize = 64;

/// The store key of a Claude Code session (no tenant).
pub fn key(session_id: &str) -> String {
    loopguard_guard::session_key(None, session_id)
}

/// Ended sessions kept in the database for `loopguard status` (the oldest are dropped).
pub const ENDED_KEPT: usize = 200;
/// Decisions kept per ended session: its most recent warnings, blocks and stops (would-be
/// ones in observe mode).
pub const ENDED_DECISIONS_KEPT: usize = 32;

/// What remains of a session after its agent ended it (`SessionEnd`, Cline's `TaskComplete`, …): the live state is
/// deleted, but what loopguard did (or, with `--observe`, would have done) stays
/// reviewable, in `loopguard status` and the log. The state itself is kept too
/// ([`EndedSession::state`]): an agent can resume an ended session under the same id
/// (`claude --resume ID`, `claude --continue`), and the resumed session goes on with the
/// loop state it ended with ([`take_ended_state`]), as replay of its transcript, one
/// session, does.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndedSession {
    /// The session id: Claude Code's own, or `AGENT:id` for the other agents.
    pub session_id: String,
    /// When the session ended (ms since the epoch).
    pub ended_ms: u64,
    /// The `reason` of the `SessionEnd` payload (`prompt_input_exit`, `clear`, …).
    pub reason: Option<String>,
    /// `enforce`, or `observe` when the hook only recorded (`--observe`).
    pub mode: String,
    /// When the session was first seen.
    pub created_ms: u64,
    /// Events applied.
    pub event_count: u64,
    /// Tool calls checked.
    pub calls: u64,
    /// Warnings (emitted or not; in observe mode, would-be warnings).
    pub warnings: u64,
    /// Blocked calls (in observe mode, would-be blocks).
    pub blocks: u64,
    /// Runs stopped (post-compaction abort, strict profile's second critical).
    pub aborts: u64,
    /// The working directory of the last event.
    pub cwd: Option<String>,
    /// Where the config came from.
    pub config: Option<String>,
    /// The last `permission_mode` a payload carried.
    pub permission_mode: Option<String>,
    /// The last [`ENDED_DECISIONS_KEPT`] warnings, blocks and stops, oldest first.
    pub decisions: Vec<loopguard_guard::LogRow>,
    /// The session's state when it ended ([`loopguard_guard::SessionEntry::encode`], in
    /// base64), until a resume takes it back; `loopguard status` does not show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl EndedSession {
    /// The summary of a stored session that ends now.
    pub fn of(
        session_id: &str,
        entry: &loopguard_guard::SessionEntry,
        reason: Option<&str>,
        mode: loopguard_core::Mode,
        now_ms: u64,
    ) -> EndedSession {
        let mut decisions: Vec<_> = entry
            .recent
            .iter()
            .filter(|r| r.decision.is_notable())
            .cloned()
            .collect();
        let skip = decisions.len().saturating_sub(ENDED_DECISIONS_KEPT);
        decisions.drain(..skip);
        EndedSession {
            session_id: session_id.to_string(),
            ended_ms: now_ms,
            reason: reason.map(str::to_string),
            mode: match mode {
                loopguard_core::Mode::Observe => "observe",
                _ => "enforce",
            }
            .to_string(),
            created_ms: entry.created_ms,
            event_count: entry.stats.events,
            calls: entry.stats.calls,
            warnings: entry.stats.warnings,
            blocks: entry.stats.blocks,
            aborts: entry.stats.aborts,
            cwd: entry.meta.get("cwd").cloned(),
            config: entry.meta.get("config").cloned(),
            permission_mode: entry.meta.get(loopguard_agents::PERMISSION_MODE).cloned(),
            decisions,
            state: Some(base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                entry.encode(),
            )),
        }
    }

    /// One line for the log: the counts, and in observe mode what would have happened.
    pub fn log_line(&self) -> String {
        let would = if self.mode == "observe" { "would-" } else { "" };
        let mut line = format!(
            "loopguard: session {} ended ({}; {} mode): {} calls checked, {} {would}warnings, {} {would}blocks, {} {would}stops",
            self.session_id,
            self.reason.as_deref().unwrap_or("no reason given"),
            self.mode,
            self.calls,
            self.warnings,
            self.blocks,
            self.aborts,
        );
        for d in &self.decisions {
            let _ = std::fmt::Write::write_fmt(
                &mut line,
                format_args!(
                    "; {} {} ({} {})",
                    d.decision,
                    d.tool.as_deref().unwrap_or("-"),
                    d.detector.as_deref().unwrap_or("-"),
                    d.count.unwrap_or(0)
                ),
            );
        }
        line
    }
}

/// The ended-session table, `ended_sessions`, part of the guard store's schema
/// ([`SCHEMA_VERSION`]), written through a connection of its own: one row per ended
/// session, keyed like `sessions`, with the end time and the [`EndedSession`] as JSON. At
/// most [`ENDED_KEPT`] rows are kept: each insert deletes the oldest beyond that, in the
/// same immediate transaction.
fn ended_conn(
    path: &std::path::Path,
    opts: &SqliteOptions,
) -> Result<rusqlite::Connection, StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(opts.busy_timeout).map_err(err)?;
    Ok(conn)
}

/// Records an ended session in the database at `path` (which the live store created),
/// replacing an earlier record of the same session and dropping the oldest beyond
/// [`ENDED_KEPT`].
pub fn record_ended(
    path: &std::path::Path,
    opts: &SqliteOptions,
    ended: &EndedSession,
) -> Result<(), StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    // The table is the guard store's: an older database gets it here.
    SqliteStore::open(path, opts)?.ensure_schema()?;
    let mut conn = ended_conn(path, opts)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err)?;
    let summary = serde_json::to_string(ended).unwrap_or_default();
    tx.execute(
        "INSERT INTO ended_sessions (key, ended_ms, summary) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET ended_ms = excluded.ended_ms, summary = excluded.summary",
        rusqlite::params![
            key(&ended.session_id),
            i64::try_from(ended.ended_ms).unwrap_or(i64::MAX),
            summary
        ],
    )
    .map_err(err)?;
    tx.execute(
        "DELETE FROM ended_sessions WHERE key NOT IN
         (SELECT key FROM ended_sessions ORDER BY ended_ms DESC, key LIMIT ?1)",
        [i64::try_from(ENDED_KEPT).unwrap_or(i64::MAX)],
    )
    .map_err(err)?;
    tx.commit().map_err(err)
}

/// The ended sessions recorded in the database at `path`, most recent first (none when the
/// table does not exist yet). A row that cannot be read is an error naming the session.
pub fn ended_sessions(
    path: &std::path::Path,
    opts: &SqliteOptions,
) -> Result<Vec<EndedSession>, StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    let conn = ended_conn(path, opts)?;
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ended_sessions')",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if !exists {
        return Ok(Vec::new());
    }
    let mut stmt = conn
        .prepare("SELECT key, summary FROM ended_sessions ORDER BY ended_ms DESC, key")
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rows.into_iter()
        .map(|(k, json)| {
            serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
                key: format!("ended session {k}"),
                source: loopguard_guard::EntryError::Meta(e),
            })
        })
        .collect()
}

/// The state an ended session `session_id` ended with, taken back for a resumed session:
/// the record keeps its summary, without the state. `None` when the session never ended
/// here (or its state was taken already, or its record was dropped). A state that cannot
/// be read is an error naming the session.
pub fn take_ended_state(
    path: &std::path::Path,
    opts: &SqliteOptions,
    session_id: &str,
) -> Result<Option<loopguard_guard::SessionEntry>, StoreError> {
    let err = |e| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: e,
    };
    let corrupt = |source| StoreError::Corrupt {
        key: format!("the state of ended session {session_id}"),
        source,
    };
    let mut conn = ended_conn(path, opts)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err)?;
    let exists: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ended_sessions')",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if !exists {
        return Ok(None);
    }
    let k = key(session_id);
    let summary: Option<String> = tx
        .query_row(
            "SELECT summary FROM ended_sessions WHERE key = ?1",
            [&k],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(err(e)),
        })?;
    let Some(summary) = summary else {
        return Ok(None);
    };
    let mut ended: EndedSession =
        serde_json::from_str(&summary).map_err(|e| StoreError::Corrupt {
            key: format!("ended session {session_id}"),
            source: loopguard_guard::EntryError::Meta(e),
        })?;
    let Some(state) = ended.state.take() else {
        return Ok(None);
    };
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &state)
        .map_err(|_| corrupt(loopguard_guard::EntryError::Header))?;
    let entry = loopguard_guard::SessionEntry::decode(&bytes).map_err(corrupt)?;
    tx.execute(
        "UPDATE ended_sessions SET summary = ?2 WHERE key = ?1",
        rusqlite::params![k, serde_json::to_string(&ended).unwrap_or_default()],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(Some(entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_guard::Store as _;

    #[test]
    fn ended_sessions_are_bounded_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let opts = SqliteOptions::default();
        // No table yet: nothing ended.
        SqliteStore::open(&path, &opts)
            .unwrap()
            .update(&key("live"), &mut |e| e.run_seq += 1)
            .unwrap();
        assert!(ended_sessions(&path, &opts).unwrap().is_empty());
        let entry = loopguard_guard::SessionEntry::default();
        for i in 0..(ENDED_KEPT as u64 + 5) {
            let e = EndedSession::of(
                &format!("s{i}"),
                &entry,
                Some("other"),
                loopguard_core::Mode::Observe,
                1_000 + i,
            );
            record_ended(&path, &opts, &e).unwrap();
        }
        // The same session ending again replaces its record.
        let again = EndedSession::of("s3", &entry, None, loopguard_core::Mode::Enforce, 9_999);
        record_ended(&path, &opts, &again).unwrap();
        let ended = ended_sessions(&path, &opts).unwrap();
        assert_eq!(ended.len(), ENDED_KEPT);
        assert_eq!(ended[0], again);
        assert_eq!(ended[1].session_id, format!("s{}", ENDED_KEPT + 4));
        assert!(!ended.iter().any(|e| e.session_id == "s5"));
        // The live store is untouched.
        let store = SqliteStore::open(&path, &opts).unwrap();
        assert_eq!(store.keys().unwrap(), [key("live")]);
    }
}
