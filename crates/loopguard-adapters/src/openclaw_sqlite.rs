//! OpenClaw's SQLite transcript store (`transcript_events`).
//!
//! Newer OpenClaw builds keep transcripts in a per-agent database
//! (`~/.openclaw/agents/<agentId>/agent/openclaw-agent.sqlite`, transcripts.md §1.1), in
//! `transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,
//! PRIMARY KEY(session_id, seq))`. Each row's `event_json` is one entry of the session JSONL
//! (row `seq 0` is the `{"type":"session",…}` header), so a session is read by streaming
//! its rows, ordered by `seq`, through [`OpenClawAdapter`]. The database is opened
//! read-only: a running OpenClaw can keep writing to it.
//!
//! The `line` of every event and diagnostic is the row's `seq`.

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::openclaw::OpenClawAdapter;
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// The table holding the transcripts.
const TABLE: &str = "transcript_events";

/// Why a transcript database could not be read.
#[derive(Debug, thiserror::Error)]
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
        /// The session id asked for.
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

/// The session ids in the database: the session first written first (by `created_at`;
/// by id when the table has no such column).
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
        .query_map([], |row| {
            Ok(match row.get_ref(0)? {
                ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                ValueRef::Integer(i) => i.to_string(),
                ValueRef::Real(r) => r.to_string(),
                ValueRef::Null => String::new(),
            })
        })
        .map_err(|e| query_error(path, e))?;
    ids.collect::<Result<_, _>>()
        .map_err(|e| query_error(path, e))
}

/// Reads one session: its rows, ordered by `seq`, go through an [`OpenClawAdapter`] for
/// `ctx` (when `ctx.session` is empty, the session id is used as the session name). Events
/// are appended to `out`, with the row's `seq` as their `line`; the returned diagnostics
/// are the rows that could not be used and the calls that never got a result, ordered by
/// `seq`.
///
/// Rows are streamed: memory does not grow with the session's length.
pub fn read_session(
    path: &Path,
    session_id: &str,
    ctx: Context,
    out: &mut Vec<SourcedEvent>,
) -> Result<Vec<Diagnostic>, SqliteError> {
    let (conn, _) = open(path)?;
    let ctx = if ctx.session.is_empty() {
        Context {
            session: session_id.to_string(),
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
    let mut rows = stmt.query([session_id]).map_err(|e| query_error(path, e))?;
    let mut count = 0u64;
    while let Some(row) = rows.next().map_err(|e| query_error(path, e))? {
        count += 1;
        let seq = match row.get_ref(0).map_err(|e| query_error(path, e))? {
            ValueRef::Integer(i) => u64::try_from(i).unwrap_or(0),
            ValueRef::Real(r) if r >= 0.0 => r as u64,
            _ => 0,
        };
        let result = match row.get_ref(1).map_err(|e| query_error(path, e))? {
            ValueRef::Text(json) | ValueRef::Blob(json) => adapter.line(seq, json, out),
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
    }
    if count == 0 {
        return Err(SqliteError::UnknownSession {
            path: path.to_path_buf(),
            session: session_id.to_string(),
        });
    }
    diagnostics.extend(adapter.finish(out));
    diagnostics.sort_by_key(|d| d.line);
    Ok(diagnostics)
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
