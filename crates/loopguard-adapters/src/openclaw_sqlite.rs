//! OpenClaw's SQLite transcript store (`transcript_events`).
//!
//! Newer OpenClaw builds keep transcripts in a per-agent database
//! (`~/.openclaw/agents/<agentId>/agent/openclaw-agent.sqlite`, transcripts.md §1.1), in
//! `transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,
//! PRIMARY KEY(session_id, seq))`. Each row's `event_json` is one entry of the session JSONL
//! (row `seq 0` is the `{"type":"session",…}` header), so a session is read by passing its
//! rows, ordered by `seq`, through an [`OpenClawAdapter`] one at a time. The database is
//! opened read-only: a running OpenClaw can keep writing to it.
//!
//! [`read_session_with`] streams: each event goes to a callback as soon as its row is read,
//! so memory does not grow with the session's length (only the diagnostics of unusable rows
//! are collected, and returned at the end). [`read_session`] collects the events of a
//! session into a `Vec`.
//!
//! Session ids are kept as the store holds them ([`SessionId`]): OpenClaw writes text, but
//! a loosely typed table can hold integers or BLOBs too, and each session is read back with
//! its own value.
//!
//! The `line` of every event and diagnostic is the row's `seq`.

use std::fmt;
use std::path::{Path, PathBuf};

use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::openclaw::OpenClawAdapter;
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// The table holding the transcripts.
const TABLE: &str = "transcript_events";

/// Why a transcript database could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// The file could not be opened (it does not exist, or cannot be read).
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not an SQLite database.
    #[error("{} is not an SQLite database", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The database has no `transcript_events` table.
    #[error(
        "{} has no `transcript_events` table: it is not an OpenClaw agent database \
         (openclaw-agent.sqlite)",
        path.display()
    )]
    MissingTable {
        /// The database file.
        path: PathBuf,
    },
    /// `transcript_events` lacks a column loopguard needs.
    #[error(
        "{}: table `transcript_events` has no `{column}` column (expected session_id, seq, \
         event_json)",
        path.display()
    )]
    MissingColumn {
        /// The database file.
        path: PathBuf,
        /// The missing column.
        column: &'static str,
    },
    /// No row has the requested session id.
    #[error("{}: no session {session:?} in `transcript_events`", path.display())]
    UnknownSession {
        /// The database file.
        path: PathBuf,
        /// The session id asked for (see [`SessionId::name`]).
        session: String,
    },
    /// A query failed (a locked or corrupt database, for example).
    #[error("{}: reading `transcript_events` failed: {source}", path.display())]
    Query {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

impl SqliteError {
    /// The database file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            SqliteError::Open { path, .. }
            | SqliteError::NotADatabase { path }
            | SqliteError::MissingTable { path }
            | SqliteError::MissingColumn { path, .. }
            | SqliteError::UnknownSession { path, .. }
            | SqliteError::Query { path, .. } => path,
        }
    }

    /// What went wrong, without the file's path (for messages that name the file
    /// already). The `Display` form names the file.
    ///
    /// ```
    /// use loopguard_adapters::openclaw_sqlite::SqliteError;
    /// let e = SqliteError::NotADatabase { path: "/tmp/x.sqlite".into() };
    /// assert_eq!(e.to_string(), "/tmp/x.sqlite is not an SQLite database");
    /// assert_eq!(e.reason(), "not an SQLite database");
    /// ```
    pub fn reason(&self) -> String {
        match self {
            SqliteError::Open { source, .. } => format!("cannot open: {source}"),
            SqliteError::NotADatabase { .. } => "not an SQLite database".to_string(),
            SqliteError::MissingTable { .. } => "no `transcript_events` table: it is not an \
                 OpenClaw agent database (openclaw-agent.sqlite)"
                .to_string(),
            SqliteError::MissingColumn { column, .. } => format!(
                "table `transcript_events` has no `{column}` column (expected session_id, seq, \
                 event_json)"
            ),
            SqliteError::UnknownSession { session, .. } => {
                format!("no session {session:?} in `transcript_events`")
            }
            SqliteError::Query { source, .. } => {
                format!("reading `transcript_events` failed: {source}")
            }
        }
    }
}

fn query_error(path: &Path, e: rusqlite::Error) -> SqliteError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => SqliteError::NotADatabase {
            path: path.to_path_buf(),
        },
        _ => SqliteError::Query {
            path: path.to_path_buf(),
            source: e,
        },
    }
}

/// A session id as the store holds it. OpenClaw writes text ids, but SQLite lets any
/// value into a loosely typed column; the id is kept with its type, so its rows are
/// selected with the very value they carry (an integer `42` is not the text `"42"`).
///
/// ```
/// use loopguard_adapters::openclaw_sqlite::SessionId;
/// let id = SessionId::from("0199a4c2");
/// assert_eq!(id.name(), "0199a4c2");
/// assert_eq!(id.to_string(), "0199a4c2");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SessionId(IdValue);

#[derive(Clone, Debug, PartialEq)]
enum IdValue {
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl SessionId {
    /// The session's name: the id's text (an integer or real in decimal; bytes that are not
    /// UTF-8 as an SQL literal, `x'…'` in hexadecimal, so different ids keep different
    /// names).
    pub fn name(&self) -> String {
        let bytes = match &self.0 {
            IdValue::Integer(i) => return i.to_string(),
            IdValue::Real(r) => return r.to_string(),
            IdValue::Text(b) | IdValue::Blob(b) => b,
        };
        match std::str::from_utf8(bytes) {
            Ok(s) => s.to_string(),
            Err(_) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("x'{hex}'")
            }
        }
    }

    /// The id of a row, `None` for NULL.
    fn from_sql(v: ValueRef<'_>) -> Option<SessionId> {
        Some(SessionId(match v {
            ValueRef::Null => return None,
            ValueRef::Integer(i) => IdValue::Integer(i),
            ValueRef::Real(r) => IdValue::Real(r),
            ValueRef::Text(t) => IdValue::Text(t.to_vec()),
            ValueRef::Blob(b) => IdValue::Blob(b.to_vec()),
        }))
    }
}

impl From<&str> for SessionId {
    /// A text id.
    fn from(id: &str) -> Self {
        SessionId(IdValue::Text(id.as_bytes().to_vec()))
    }
}

impl From<&SessionId> for SessionId {
    fn from(id: &SessionId) -> Self {
        id.clone()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl ToSql for SessionId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match &self.0 {
            IdValue::Integer(i) => ValueRef::Integer(*i),
            IdValue::Real(r) => ValueRef::Real(*r),
            IdValue::Text(t) => ValueRef::Text(t),
            IdValue::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// The name of session `id` of a store holding `sessions` sessions, read for `base` (the
/// session name of the [`Context`], for example `loopguard convert --session NAME`): the
/// id itself when `base` is empty, `base` when the store holds a single session, else
/// `<base>/<id>`.
///
/// ```
/// use loopguard_adapters::openclaw_sqlite::{session_name, SessionId};
/// let id = SessionId::from("0199a4c2");
/// assert_eq!(session_name("", &id, 2), "0199a4c2");
/// assert_eq!(session_name("mine", &id, 1), "mine");
/// assert_eq!(session_name("mine", &id, 2), "mine/0199a4c2");
/// ```
pub fn session_name(base: &str, id: &SessionId, sessions: usize) -> String {
    match (base.is_empty(), sessions) {
        (true, _) => id.name(),
        (false, 1) => base.to_string(),
        (false, _) => format!("{base}/{}", id.name()),
    }
}

/// The OpenClaw release that wrote the database, as it records it: `app_version` of its
/// `schema_meta` table (OpenClaw 2026.9.6 writes `2026.9.6` there; the transcript rows
/// themselves name no release). `None` when the table, the column or a value is missing, or
/// the file cannot be read as a database (reading the transcripts says why).
///
/// ```no_run
/// use loopguard_adapters::openclaw_sqlite::recorded_release;
/// let path = std::path::Path::new("openclaw-agent.sqlite");
/// if let Some(version) = recorded_release(path) {
///     println!("written by OpenClaw {version}");
/// }
/// ```
pub fn recorded_release(path: &Path) -> Option<String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ok()?;
    // The newest row that says (one per store role; the primary one in practice).
    conn.query_row(
        "SELECT app_version FROM schema_meta WHERE typeof(app_version) = 'text' AND app_version <> '' ORDER BY updated_at DESC LIMIT 1",
        [],
        |row| row.get::<_, String>(0),
    )
    .ok()
}

/// Opens the database read-only and checks that it holds `transcript_events` with the
/// columns needed. Returns the connection and whether `created_at` is there.
fn open(path: &Path) -> Result<(Connection, bool), SqliteError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        Connection::open_with_flags(path, flags).map_err(|e| match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => SqliteError::NotADatabase {
                path: path.to_path_buf(),
            },
            _ => SqliteError::Open {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
    let columns: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| query_error(path, e))?;
        let names = stmt
            .query_map([TABLE], |row| row.get::<_, String>(0))
            .map_err(|e| query_error(path, e))?;
        names
            .collect::<Result<_, _>>()
            .map_err(|e| query_error(path, e))?
    };
    if columns.is_empty() {
        return Err(SqliteError::MissingTable {
            path: path.to_path_buf(),
        });
    }
    for column in ["session_id", "seq", "event_json"] {
        if !columns.iter().any(|c| c.eq_ignore_ascii_case(column)) {
            return Err(SqliteError::MissingColumn {
                path: path.to_path_buf(),
                column,
            });
        }
    }
    let has_created_at = columns.iter().any(|c| c.eq_ignore_ascii_case("created_at"));
    Ok((conn, has_created_at))
}

/// The session ids in the database, as stored: the session first written first (by
/// `created_at`; by id when the table has no such column). Rows without a session id are
/// not part of any session.
///
/// ```no_run
/// use loopguard_adapters::openclaw_sqlite::session_ids;
/// let path = std::path::Path::new("openclaw-agent.sqlite");
/// for id in session_ids(path)? {
///     println!("{id}");
/// }
/// # Ok::<(), loopguard_adapters::openclaw_sqlite::SqliteError>(())
/// ```
pub fn session_ids(path: &Path) -> Result<Vec<SessionId>, SqliteError> {
    let (conn, has_created_at) = open(path)?;
    let order = if has_created_at {
        "MIN(created_at), session_id"
    } else {
        "session_id"
    };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT session_id FROM transcript_events WHERE session_id IS NOT NULL \
             GROUP BY session_id ORDER BY {order}"
        ))
        .map_err(|e| query_error(path, e))?;
    let ids = stmt
        .query_map([], |row| Ok(SessionId::from_sql(row.get_ref(0)?)))
        .map_err(|e| query_error(path, e))?;
    let mut out = Vec::new();
    for id in ids {
        out.extend(id.map_err(|e| query_error(path, e))?);
    }
    Ok(out)
}

/// The names ([`SessionId::name`]) of the sessions in the database, in the order of
/// [`session_ids`].
///
/// ```no_run
/// use loopguard_adapters::openclaw_sqlite::list_sessions;
/// let path = std::path::Path::new("openclaw-agent.sqlite");
/// for id in list_sessions(path)? {
///     println!("{id}");
/// }
/// # Ok::<(), loopguard_adapters::openclaw_sqlite::SqliteError>(())
/// ```
pub fn list_sessions(path: &Path) -> Result<Vec<String>, SqliteError> {
    Ok(session_ids(path)?.iter().map(SessionId::name).collect())
}

/// Reads one session, streaming: its rows, ordered by `seq`, go one at a time through an
/// [`OpenClawAdapter`] for `ctx` (when `ctx.session` is empty, the session's
/// [`name`](SessionId::name) is used as the session name), and every event is handed to
/// `on_event` as soon as its row is read, with the row's `seq` as its `line`. Memory does
/// not grow with the session's length.
///
/// `session_id` is a text id (`&str`) or a [`SessionId`] from [`session_ids`]. Returns the
/// rows that could not be used and the calls that never got a result, ordered by `seq`.
/// When `on_event` returns `false`, reading stops at once: the diagnostics of the rows
/// read so far are returned, and calls still waiting for a result are not reported.
///
/// ```no_run
/// use loopguard_adapters::{openclaw_sqlite::read_session_with, Context};
/// let path = std::path::Path::new("openclaw-agent.sqlite");
/// let mut calls = 0;
/// let diagnostics = read_session_with(path, "0199a4c2", Context::default(), &mut |e| {
///     calls += u64::from(e.event.kind == loopguard_events::EventKind::Call);
///     true
/// })?;
/// # Ok::<(), loopguard_adapters::openclaw_sqlite::SqliteError>(())
/// ```
pub fn read_session_with(
    path: &Path,
    session_id: impl Into<SessionId>,
    ctx: Context,
    on_event: &mut dyn FnMut(SourcedEvent) -> bool,
) -> Result<Vec<Diagnostic>, SqliteError> {
    let session_id = session_id.into();
    let (conn, _) = open(path)?;
    let ctx = if ctx.session.is_empty() {
        Context {
            session: session_id.name(),
            ..ctx
        }
    } else {
        ctx
    };
    let mut adapter = OpenClawAdapter::new(ctx);
    let mut diagnostics = Vec::new();
    let mut stmt = conn
        .prepare("SELECT seq, event_json FROM transcript_events WHERE session_id = ?1 ORDER BY seq")
        .map_err(|e| query_error(path, e))?;
    let mut rows = stmt
        .query([&session_id])
        .map_err(|e| query_error(path, e))?;
    // The events of one row: a handful at most, handed on before the next row is read.
    let mut out = Vec::new();
    let mut count = 0u64;
    while let Some(row) = rows.next().map_err(|e| query_error(path, e))? {
        count += 1;
        let seq = match row.get_ref(0).map_err(|e| query_error(path, e))? {
            ValueRef::Integer(i) => u64::try_from(i).unwrap_or(0),
            ValueRef::Real(r) if r >= 0.0 => r as u64,
            _ => 0,
        };
        let result = match row.get_ref(1).map_err(|e| query_error(path, e))? {
            ValueRef::Text(json) | ValueRef::Blob(json) => adapter.line(seq, json, &mut out),
            ValueRef::Null => Err(Diagnostic::new(
                seq,
                DiagnosticKind::BadField,
                "`event_json` is NULL",
            )),
            ValueRef::Integer(_) | ValueRef::Real(_) => Err(Diagnostic::new(
                seq,
                DiagnosticKind::NotJson,
                "`event_json` is a number, not a JSON entry",
            )),
        };
        if let Err(d) = result {
            diagnostics.push(d);
        }
        for e in out.drain(..) {
            if !on_event(e) {
                diagnostics.sort_by_key(|d| d.line);
                return Ok(diagnostics);
            }
        }
    }
    if count == 0 {
        return Err(SqliteError::UnknownSession {
            path: path.to_path_buf(),
            session: session_id.name(),
        });
    }
    diagnostics.extend(adapter.finish(&mut out));
    for e in out.drain(..) {
        if !on_event(e) {
            break;
        }
    }
    diagnostics.sort_by_key(|d| d.line);
    Ok(diagnostics)
}

/// Reads one session into `out`: [`read_session_with`], collecting the events (so memory
/// grows with the session; use [`read_session_with`] to stream).
pub fn read_session(
    path: &Path,
    session_id: &str,
    ctx: Context,
    out: &mut Vec<SourcedEvent>,
) -> Result<Vec<Diagnostic>, SqliteError> {
    read_session_with(path, session_id, ctx, &mut |e| {
        out.push(e);
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch database path, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p = std::env::temp_dir().join(format!(
                "loopguard-oc-sqlite-unit-{}-{name}.sqlite",
                std::process::id()
            ));
            let _ = std::fs::remove_file(&p);
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn ctx() -> Context {
        Context {
            session: "s".into(),
            agent: None,
        }
    }

    #[test]
    fn rows_are_read_in_seq_order() {
        let db = Scratch::new("order");
        let conn = Connection::open(&db.0).unwrap();
        conn.execute_batch(
            "CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, \
             event_json TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY(session_id, seq));",
        )
        .unwrap();
        let rows = [
            (
                3,
                r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c","content":[]}}"#,
            ),
            (0, r#"{"type":"session","version":3,"id":"x"}"#),
            (
                2,
                r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"Bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}"#,
            ),
            (
                1,
                r#"{"type":"message","message":{"role":"user","content":"go"}}"#,
            ),
        ];
        for (seq, json) in rows {
            conn.execute(
                "INSERT INTO transcript_events VALUES ('a', ?1, ?2, 0)",
                rusqlite::params![seq, json],
            )
            .unwrap();
        }
        // Another session's rows are not read.
        conn.execute(
            "INSERT INTO transcript_events VALUES ('b', 1, '{\"type\":\"mystery\"}', 5)",
            [],
        )
        .unwrap();
        drop(conn);
        let mut out = Vec::new();
        let diagnostics = read_session(&db.0, "a", ctx(), &mut out).unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].line, out[1].line), (2, 3));
        assert_eq!(out[0].event.tool.as_ref().unwrap().as_str(), Some("exec"));
        assert_eq!(out[0].event.run.as_ref().unwrap().as_str(), Some("run-1"));
        assert_eq!(list_sessions(&db.0).unwrap(), ["a", "b"]);
    }

    #[test]
    fn files_that_are_not_transcript_stores() {
        let db = Scratch::new("notdb");
        std::fs::write(
            &db.0,
            b"this is not a database, just some text\n".repeat(200),
        )
        .unwrap();
        let e = list_sessions(&db.0).unwrap_err();
        assert!(matches!(e, SqliteError::NotADatabase { .. }), "{e:?}");

        let empty = Scratch::new("empty");
        std::fs::write(&empty.0, b"").unwrap();
        let e = list_sessions(&empty.0).unwrap_err();
        assert!(matches!(e, SqliteError::MissingTable { .. }), "{e:?}");

        let e = list_sessions(Path::new("/nonexistent/dir/openclaw-agent.sqlite")).unwrap_err();
        assert!(matches!(e, SqliteError::Open { .. }), "{e:?}");
        assert!(e
            .to_string()
            .contains("/nonexistent/dir/openclaw-agent.sqlite"));
    }
}
