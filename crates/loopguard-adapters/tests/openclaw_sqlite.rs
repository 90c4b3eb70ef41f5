//! OpenClaw's SQLite transcript store: databases built in the test from the JSONL fixtures
//! (`tests/fixtures/transcripts/openclaw/`), with OpenClaw's schema.

#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use loopguard_adapters::openclaw::OpenClawAdapter;
use loopguard_adapters::openclaw_sqlite::{
    list_sessions, read_session, read_session_with, session_ids, SessionId, SqliteError,
};
use loopguard_adapters::reader::{read_file, Flow, Item, ReadError, ReadOptions};
use loopguard_adapters::{Context, Diagnostic, DiagnosticKind, Format, LineAdapter, SourcedEvent};
use loopguard_core::Mode;
use loopguard_events::Action;
use proptest::prelude::*;
use rusqlite::{params, Connection};
use support::{fixture, not_quiet, replay_decided, Decided};

const DIR: &str = "openclaw";

/// OpenClaw's tables (`src/state/openclaw-agent-schema.sql`), the parts transcripts need.
const SCHEMA: &str = "
CREATE TABLE session_windows (
  session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL,
  previous_session_id TEXT,
  reason TEXT CHECK (reason IS NULL OR reason IN ('initial', 'reset', 'rollover', 'fork', 'rewind', 'switch', 'recovery', 'compaction')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq),
  FOREIGN KEY (session_id) REFERENCES session_windows(session_id) ON DELETE CASCADE
) STRICT;
";

/// A database file removed (with its journal files) when dropped.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> TempDb {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "loopguard-oc-sqlite-{}-{n}-{name}.sqlite",
            std::process::id()
        ));
        let db = TempDb(path);
        db.remove();
        db
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The non-blank lines of a fixture, as `openclaw doctor --fix` would import them: row
/// `seq` i is line i + 1 (the header is seq 0).
fn rows(name: &str) -> Vec<String> {
    String::from_utf8(fixture(DIR, name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn import(conn: &Connection, session_id: &str, lines: &[String], created_at: i64) {
    conn.execute(
        "INSERT INTO session_windows (session_id, session_key, reason, created_at, updated_at) VALUES (?1, ?2, 'initial', ?3, ?3)",
        params![session_id, format!("agent:main:{session_id}"), created_at],
    )
    .unwrap();
    for (seq, line) in lines.iter().enumerate() {
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![session_id, seq as i64, line, created_at + seq as i64],
        )
        .unwrap();
    }
}

/// A database holding the given fixtures as sessions.
fn database(name: &str, sessions: &[(&str, &str, i64)]) -> TempDb {
    let db = TempDb::new(name);
    let conn = Connection::open(db.path()).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    for (id, fixture, created_at) in sessions {
        import(&conn, id, &rows(fixture), *created_at);
    }
    db
}

fn ctx() -> Context {
    Context {
        session: "agent:main:main".into(),
        agent: Some("main".into()),
    }
}

fn read(db: &TempDb, session: &str) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let diagnostics = read_session(db.path(), session, ctx(), &mut out).unwrap();
    (out, diagnostics)
}

/// The same fixture through the JSONL adapter, with lines renumbered as row seqs.
fn via_jsonl(name: &str) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    let mut adapter = OpenClawAdapter::new(ctx());
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    for (seq, line) in rows(name).iter().enumerate() {
        if let Err(d) = adapter.line(seq as u64, line.as_bytes(), &mut out) {
            diagnostics.push(d);
        }
    }
    diagnostics.extend(adapter.finish(&mut out));
    diagnostics.sort_by_key(|d| d.line);
    (out, diagnostics)
}

/// The decisions on `events` in observe mode that are not quiet.
fn flagged(events: &[SourcedEvent]) -> Vec<Decided> {
    not_quiet(&replay_decided(events, Mode::Observe))
}

const LOOP: &str = "0199a4c2-0001-7000-8000-000000000001";
const HEALTHY: &str = "0199a4c2-0002-7000-8000-000000000002";
const COMPACTION: &str = "0199a4c2-0003-7000-8000-000000000003";
const ABORTED: &str = "0199a4c2-0000-7000-8000-000000000004";

fn agent_database(name: &str) -> TempDb {
    // Inserted in this order; `created_at` orders them differently from their ids.
    database(
        name,
        &[
            (HEALTHY, "healthy.jsonl", 1_788_629_200_000),
            (LOOP, "read-loop.jsonl", 1_788_622_000_000),
            (COMPACTION, "compaction-loop.jsonl", 1_788_632_800_000),
            (ABORTED, "aborted.jsonl", 1_788_643_600_000),
        ],
    )
}

#[test]
fn sessions_are_listed_oldest_first() {
    let db = agent_database("list");
    assert_eq!(
        list_sessions(db.path()).unwrap(),
        [LOOP, HEALTHY, COMPACTION, ABORTED]
    );
}

#[test]
fn a_session_reads_as_its_jsonl_with_seq_as_line() {
    let db = agent_database("same");
    for (id, name) in [
        (LOOP, "read-loop.jsonl"),
        (HEALTHY, "healthy.jsonl"),
        (COMPACTION, "compaction-loop.jsonl"),
        (ABORTED, "aborted.jsonl"),
    ] {
        let (events, diagnostics) = read(&db, id);
        let (want, want_diagnostics) = via_jsonl(name);
        assert_eq!(events, want, "{name}");
        assert_eq!(diagnostics, want_diagnostics, "{name}");
    }
    // Rows are not mixed between sessions: the loop session has its 25 reads only.
    let (events, _) = read(&db, LOOP);
    assert_eq!(events.len(), 50);
    assert_eq!(events[0].line, 2); // JSONL line 3, the first assistant message
    assert_eq!(events[1].line, 3);
    assert_eq!(
        events[0].event.call_id.as_ref().unwrap().as_str(),
        Some("call_rd00")
    );
    assert_eq!(events[0].tokens, Some(12834));
}

#[test]
fn the_loop_session_warns_and_blocks_at_its_rows() {
    let db = agent_database("loop");
    let (events, diagnostics) = read(&db, LOOP);
    assert!(diagnostics.is_empty());
    let got = flagged(&events);
    assert_eq!(got.len(), 15);
    // The 11th read is row 22 (JSONL line 23); the 21st is row 42.
    assert_eq!(got[0], (22, Action::Warn, Some("generic_repeat"), Some(10)));
    assert_eq!(
        got[10],
        (42, Action::Block, Some("generic_repeat"), Some(20))
    );
    let (events, _) = read(&db, HEALTHY);
    assert!(flagged(&events).is_empty());
    let (events, _) = read(&db, COMPACTION);
    assert_eq!(
        flagged(&events),
        [(
            16,
            Action::Abort,
            Some("compaction_loop_persisted"),
            Some(3)
        )]
    );
}

#[test]
fn diagnostics_name_the_row() {
    let db = agent_database("diag");
    let (_, diagnostics) = read(&db, ABORTED);
    let kinds = support::kinds(&diagnostics);
    assert_eq!(
        kinds,
        [
            (2, DiagnosticKind::Unanswered),
            (2, DiagnosticKind::Unanswered),
            (8, DiagnosticKind::Orphan),
        ]
    );
}

#[test]
fn an_empty_session_name_uses_the_session_id() {
    let db = agent_database("name");
    let mut out = Vec::new();
    read_session(
        db.path(),
        LOOP,
        Context {
            session: String::new(),
            agent: None,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(out[0].event.session.as_ref().unwrap().as_str(), Some(LOOP));
    assert_eq!(out[0].event.agent, None);
}

#[test]
fn odd_rows_are_diagnostics() {
    let db = TempDb::new("odd");
    let conn = Connection::open(db.path()).unwrap();
    // An older, looser table: no STRICT, no NOT NULL, no created_at.
    conn.execute_batch(
        "CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, PRIMARY KEY(session_id, seq));",
    )
    .unwrap();
    let insert = |seq: i64, v: rusqlite::types::Value| {
        conn.execute(
            "INSERT INTO transcript_events VALUES ('s', ?1, ?2)",
            params![seq, v],
        )
        .unwrap();
    };
    use rusqlite::types::Value as V;
    let call = r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{}}],"stopReason":"toolUse"}}"#;
    let result =
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c","content":[]}}"#;
    insert(
        0,
        V::Text(r#"{"type":"session","version":3,"id":"s"}"#.into()),
    );
    insert(1, V::Null);
    insert(2, V::Integer(7));
    insert(3, V::Text("{cut".into()));
    insert(4, V::Blob(call.as_bytes().to_vec()));
    insert(5, V::Text(result.into()));
    insert(-1, V::Text(r#"{"type":"mystery"}"#.into()));

    let mut out = Vec::new();
    let diagnostics = read_session(db.path(), "s", ctx(), &mut out).unwrap();
    let kinds = support::kinds(&diagnostics);
    assert_eq!(
        kinds,
        [
            (0, DiagnosticKind::UnknownEntry), // seq -1 (ordered first) has no line: 0
            (1, DiagnosticKind::BadField),
            (2, DiagnosticKind::NotJson),
            (3, DiagnosticKind::NotJson),
        ]
    );
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].line, out[1].line), (4, 5));
    // Without created_at, sessions are listed by id.
    assert_eq!(list_sessions(db.path()).unwrap(), ["s"]);
}

#[test]
fn errors_say_what_is_wrong() {
    let missing = TempDb::new("missing");
    let e = list_sessions(missing.path()).unwrap_err();
    assert!(matches!(e, SqliteError::Open { .. }), "{e:?}");
    assert!(e.to_string().starts_with("cannot open "), "{e}");
    // Read-only: nothing was created.
    assert!(!missing.path().exists());

    let text = TempDb::new("text");
    std::fs::write(text.path(), fixture(DIR, "healthy.jsonl")).unwrap();
    let e = list_sessions(text.path()).unwrap_err();
    assert!(matches!(e, SqliteError::NotADatabase { .. }), "{e:?}");
    assert!(e.to_string().ends_with("is not an SQLite database"), "{e}");
    let e = read_session(text.path(), "x", ctx(), &mut Vec::new()).unwrap_err();
    assert!(matches!(e, SqliteError::NotADatabase { .. }), "{e:?}");

    let other = TempDb::new("other");
    Connection::open(other.path())
        .unwrap()
        .execute_batch("CREATE TABLE sessions (id TEXT);")
        .unwrap();
    let e = read_session(other.path(), "x", ctx(), &mut Vec::new()).unwrap_err();
    assert!(matches!(e, SqliteError::MissingTable { .. }), "{e:?}");
    assert!(
        e.to_string().contains("no `transcript_events` table"),
        "{e}"
    );

    let no_json = TempDb::new("nojson");
    Connection::open(no_json.path())
        .unwrap()
        .execute_batch(
            "CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, payload TEXT);",
        )
        .unwrap();
    let e = list_sessions(no_json.path()).unwrap_err();
    assert!(
        matches!(
            e,
            SqliteError::MissingColumn {
                column: "event_json",
                ..
            }
        ),
        "{e:?}"
    );

    let db = agent_database("unknown");
    let e = read_session(db.path(), "nope", ctx(), &mut Vec::new()).unwrap_err();
    assert!(matches!(e, SqliteError::UnknownSession { .. }), "{e:?}");
    assert!(e.to_string().contains("no session \"nope\""), "{e}");
}

#[test]
fn reading_while_openclaw_writes_sees_committed_rows_and_changes_nothing() {
    let db = TempDb::new("live");
    let writer = Connection::open(db.path()).unwrap();
    writer
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    writer.execute_batch(SCHEMA).unwrap();
    let lines = rows("read-loop.jsonl");
    import(&writer, LOOP, &lines[..13], 1);
    // OpenClaw is in the middle of appending the next rows.
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    for (seq, line) in lines.iter().enumerate().skip(13) {
        writer
            .execute(
                "INSERT INTO transcript_events VALUES (?1, ?2, ?3, 0)",
                params![LOOP, seq as i64, line],
            )
            .unwrap();
    }
    let before = std::fs::read(db.path()).unwrap();
    let (events, diagnostics) = read(&db, LOOP);
    // Rows 0-12: the header, the user message, five read/result pairs and the sixth read
    // (row 12), whose result is not committed yet (replayed without an outcome).
    assert_eq!(events.len(), 11);
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(
        (diagnostics[0].line, diagnostics[0].kind),
        (12, DiagnosticKind::Unanswered)
    );
    assert_eq!(std::fs::read(db.path()).unwrap(), before);
    writer.execute_batch("COMMIT").unwrap();
    let (events, diagnostics) = read(&db, LOOP);
    assert_eq!(events.len(), 50);
    assert!(diagnostics.is_empty());
}

/// Everything `read_file` hands on for an SQLite store read with `ctx`.
fn read_store(path: &Path, ctx: &Context) -> Result<Vec<Item>, ReadError> {
    let mut items = Vec::new();
    read_file(
        path,
        Format::OpenClawSqlite,
        ctx,
        &ReadOptions::default(),
        &mut |i| {
            items.push(i);
            Flow::Continue
        },
    )?;
    Ok(items)
}

fn events_of(items: &[Item]) -> Vec<&SourcedEvent> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Event(e) => Some(e),
            Item::Diagnostic(_) => None,
        })
        .collect()
}

/// `(session, number of events)` of each session, in the order read.
fn sessions_read(items: &[Item]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for e in events_of(items) {
        let name = support::s(&e.event.session);
        match out.last_mut() {
            Some((last, n)) if *last == name => *n += 1,
            _ => out.push((name, 1)),
        }
    }
    out
}

/// A store of `sessions` (id, fixture) where reading row `fail.1` of session `fail.0`
/// fails inside SQLite (`abs` of the smallest integer overflows); listing the sessions
/// does not read `event_json`, so it succeeds.
fn failing_store(name: &str, sessions: &[(&str, &str)], fail: (&str, i64)) -> TempDb {
    let db = TempDb::new(name);
    let conn = Connection::open(db.path()).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE rows (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,
           PRIMARY KEY(session_id, seq));
         CREATE VIEW transcript_events AS SELECT session_id, seq, created_at,
           CASE WHEN session_id = '{}' AND seq = {} THEN abs(-9223372036854775807 - 1)
                ELSE event_json END AS event_json
           FROM rows;",
        fail.0, fail.1
    ))
    .unwrap();
    for (n, (id, fixture)) in sessions.iter().enumerate() {
        for (seq, line) in rows(fixture).iter().enumerate() {
            conn.execute(
                "INSERT INTO rows VALUES (?1, ?2, ?3, ?4)",
                params![id, seq as i64, line, n as i64 * 1000 + seq as i64],
            )
            .unwrap();
        }
    }
    db
}

#[test]
fn events_are_handed_on_as_rows_are_read_and_the_callback_can_stop() {
    let db = agent_database("stream");
    let mut seen = Vec::new();
    let diagnostics = read_session_with(db.path(), LOOP, ctx(), &mut |e| {
        seen.push(e.line);
        seen.len() < 3
    })
    .unwrap();
    // Stopped at the third event: nothing more is read, no call is reported unanswered.
    assert_eq!(seen, [2, 3, 4]);
    assert!(diagnostics.is_empty());
    // `read_session` is the same, collected.
    let mut all = Vec::new();
    read_session_with(db.path(), LOOP, ctx(), &mut |e| {
        all.push(e);
        true
    })
    .unwrap();
    assert_eq!(all, read(&db, LOOP).0);
    // The reader stops when its sink says so.
    let mut n = 0;
    let r = read_file(
        db.path(),
        Format::OpenClawSqlite,
        &ctx(),
        &ReadOptions::default(),
        &mut |_| {
            n += 1;
            if n == 5 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        },
    );
    assert!(matches!(r, Err(ReadError::Stopped)), "{r:?}");
    assert_eq!(n, 5);

    // Rows are read as events are handed on: a session whose row 40 cannot be read is
    // read without an error up to its third event, and hands on the events of rows 2-39
    // before failing.
    let late = failing_store("late", &[(LOOP, "read-loop.jsonl")], (LOOP, 40));
    let mut seen = 0;
    read_session_with(late.path(), LOOP, ctx(), &mut |_| {
        seen += 1;
        seen < 3
    })
    .unwrap();
    assert_eq!(seen, 3);
    let mut lines = Vec::new();
    let e = read_session_with(late.path(), LOOP, ctx(), &mut |e| {
        lines.push(e.line);
        true
    })
    .unwrap_err();
    assert!(matches!(e, SqliteError::Query { .. }), "{e:?}");
    assert_eq!(lines.len(), 38);
    assert_eq!((lines[0], lines[37]), (2, 39));
}

/// A table without a declared type keeps integer and BLOB session ids as they are; each
/// session is read back with its own value, next to a normal text id.
#[test]
fn integer_and_blob_session_ids_are_read_like_text_ones() {
    let db = TempDb::new("ids");
    let conn = Connection::open(db.path()).unwrap();
    conn.execute_batch(
        "CREATE TABLE transcript_events (session_id, seq INTEGER, event_json TEXT, created_at INTEGER, PRIMARY KEY(session_id, seq));",
    )
    .unwrap();
    use rusqlite::types::Value as V;
    let sessions = [
        (V::Text(LOOP.into()), "read-loop.jsonl"),
        (V::Integer(42), "healthy.jsonl"),
        (V::Blob(b"blob-id".to_vec()), "compaction-loop.jsonl"),
        (V::Blob(vec![0xff, 0x00, 0x01]), "aborted.jsonl"),
    ];
    for (n, (id, fixture)) in sessions.iter().enumerate() {
        for (seq, line) in rows(fixture).iter().enumerate() {
            conn.execute(
                "INSERT INTO transcript_events VALUES (?1, ?2, ?3, ?4)",
                params![id, seq as i64, line, n as i64 * 1000 + seq as i64],
            )
            .unwrap();
        }
    }
    // The text "42" is another session than the integer 42.
    assert_eq!(
        list_sessions(db.path()).unwrap(),
        [LOOP, "42", "blob-id", "x'ff0001'"]
    );
    let ids = session_ids(db.path()).unwrap();
    assert_ne!(ids[1], SessionId::from("42"));
    let e = read_session(db.path(), "42", ctx(), &mut Vec::new()).unwrap_err();
    assert!(matches!(e, SqliteError::UnknownSession { .. }), "{e:?}");

    // Every session is read, with the events its JSONL has.
    let items = read_store(db.path(), &Context::default()).unwrap();
    let want: Vec<(String, usize)> = [
        (LOOP, "read-loop.jsonl"),
        ("42", "healthy.jsonl"),
        ("blob-id", "compaction-loop.jsonl"),
        ("x'ff0001'", "aborted.jsonl"),
    ]
    .iter()
    .map(|(name, fixture)| (name.to_string(), via_jsonl(fixture).0.len()))
    .collect();
    assert_eq!(sessions_read(&items), want);
    let mut with_id = Vec::new();
    let diagnostics = read_session_with(db.path(), &ids[1], ctx(), &mut |e| {
        with_id.push(e);
        true
    })
    .unwrap();
    assert_eq!((with_id, diagnostics), via_jsonl("healthy.jsonl"));
}

/// A session whose rows cannot be read is a diagnostic for that session (line 0); the
/// other sessions are still read.
#[test]
fn a_session_that_cannot_be_read_is_a_diagnostic_not_the_end() {
    let db = failing_store(
        "onebad",
        &[
            ("ok-1", "read-loop.jsonl"),
            ("bad", "healthy.jsonl"),
            ("ok-2", "compaction-loop.jsonl"),
        ],
        ("bad", 3),
    );
    let items = read_store(db.path(), &Context::default()).unwrap();
    // "bad" fails at row 3, before any of its calls got a result: no events of it.
    let read: Vec<(String, usize)> = sessions_read(&items);
    assert_eq!(
        read,
        [
            ("ok-1".to_string(), via_jsonl("read-loop.jsonl").0.len()),
            (
                "ok-2".to_string(),
                via_jsonl("compaction-loop.jsonl").0.len()
            ),
        ]
    );
    let diagnostics: Vec<(usize, &Diagnostic)> = items
        .iter()
        .enumerate()
        .filter_map(|(n, i)| match i {
            Item::Diagnostic(d) => Some((n, d)),
            Item::Event(_) => None,
        })
        .collect();
    let [(at, d)] = diagnostics[..] else {
        panic!("{diagnostics:?}")
    };
    // Reported in its place: after the first session, before the third.
    assert_eq!(at, read[0].1);
    assert_eq!((d.line, d.kind), (0, DiagnosticKind::BadField));
    assert!(
        d.message.starts_with("session bad could not be read: "),
        "{}",
        d.message
    );
    assert!(d.message.contains("integer overflow"), "{}", d.message);
    // The path is not repeated: the reader names the file.
    assert!(!d.message.contains(&db.path().display().to_string()));
}

#[test]
fn a_store_that_cannot_be_read_names_its_path_once() {
    let text = TempDb::new("notdb-reader");
    std::fs::write(text.path(), fixture(DIR, "healthy.jsonl")).unwrap();
    let e = read_store(text.path(), &ctx()).unwrap_err();
    assert!(matches!(e, ReadError::Sqlite { .. }), "{e:?}");
    let path = text.path().display().to_string();
    let message = e.to_string();
    assert_eq!(message.matches(&path).count(), 1, "{message}");
    assert!(message.ends_with("not an SQLite database"), "{message}");
}

/// `loopguard convert --session NAME` names the sessions of a store after NAME.
#[test]
fn a_session_name_in_the_context_names_the_sessions() {
    let db = agent_database("named");
    let named = Context {
        session: "mine".into(),
        agent: None,
    };
    let items = read_store(db.path(), &named).unwrap();
    let sessions: Vec<String> = sessions_read(&items).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        sessions,
        [LOOP, HEALTHY, COMPACTION, ABORTED].map(|id| format!("mine/{id}"))
    );
    // Without one, the session ids.
    let items = read_store(db.path(), &Context::default()).unwrap();
    let sessions: Vec<String> = sessions_read(&items).into_iter().map(|(s, _)| s).collect();
    assert_eq!(sessions, [LOOP, HEALTHY, COMPACTION, ABORTED]);
    // A store of one session: the name itself.
    let one = database("one", &[(LOOP, "read-loop.jsonl", 1)]);
    let items = read_store(one.path(), &named).unwrap();
    assert_eq!(sessions_read(&items), [("mine".to_string(), 50)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_rows_never_panic(rows in prop::collection::vec(
        prop_oneof![
            "\\PC{0,60}",
            Just(r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read"}],"stopReason":"toolUse"}}"#.to_string()),
            Just(r#"{"type":"message","message":{"role":"toolResult","toolCallId":"a","content":[]}}"#.to_string()),
            Just(r#"{"type":"compaction"}"#.to_string()),
        ],
        1..20,
    )) {
        let db = TempDb::new("prop");
        let conn = Connection::open(db.path()).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        import(&conn, "s", &rows, 0);
        drop(conn);
        let mut out = Vec::new();
        let diagnostics = read_session(db.path(), "s", ctx(), &mut out).unwrap();
        for d in &diagnostics {
            prop_assert!(d.line < rows.len() as u64);
        }
        prop_assert_eq!(list_sessions(db.path()).unwrap(), vec!["s".to_string()]);
    }
}
