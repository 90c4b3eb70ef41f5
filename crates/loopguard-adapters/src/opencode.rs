//! opencode's sessions.
//!
//! opencode 1.18 keeps every session in one SQLite database,
//! `$XDG_DATA_HOME/opencode/opencode.db` (`~/.local/share/opencode/opencode.db`), with a
//! `session` table (`id`, `parent_id`, `title`, `time_created`, …), a `message` table (`id`,
//! `session_id`, `time_created`, `data`: `{role, time, tokens, finish, …}`) and a `part`
//! table (`id`, `message_id`, `session_id`, `time_created`, `data`: one part of a message,
//! `{type, …}`). The database is opened read-only (a running opencode can keep writing to
//! it) and recognised by those three tables; each session is read on its own, its parts in
//! the order of their messages, then their own.
//!
//! Each part is read with its message as one record, `{"message": …, "part": …}` (each row's
//! `data` with its `id` added; [`OpencodeAdapter`]); `line` is the part's row number in its
//! session (1 for the first part), and every diagnostic names the part's id.
//!
//! | part | becomes |
//! |------|---------|
//! | `tool` `{tool, callID, state: {status: "completed", input, output}}` | a call of `tool` with `input`, and its result: `output` as a text result, without the note the opencode plugin appended to it (a last paragraph starting `WARNING: ` or `CRITICAL: `) |
//! | `tool` with `state.status: "error"` (`error`) | a call and its failure; loopguard's own deny (the plugin throws it, opencode records `Error: CRITICAL: …`) is a refusal, as in the other agents' logs |
//! | `tool` still `pending` or `running` | a call replayed alone, reported |
//! | `text` of a `user` message (the first of each message) | a run boundary |
//! | `compaction` | a compaction |
//! | `step-start`, `step-finish`, `reasoning`, `patch`, `snapshot`, `file`, `agent`, `subtask`, `retry`, other text | ignored |
//!
//! Older opencode versions kept the same objects as JSON files (`storage/session/<project>/
//! <id>.json`, `storage/message/<session>/<id>.json`, `storage/part/<message>/<id>.json`,
//! each with its `id`). A session file is recognised by its content and read with
//! [`read_storage_session_with`]: its messages by `time.created`, each message's parts by
//! id, each part with its message as the same record, through the same adapter.
//!
//! **Sub-agents.** A session with a parent (`parent_id` in the database, `parentID` in a
//! storage session file) is a sub-agent's, run by the parent's `task` tool: its events carry
//! `parentSession`, the parent's session named as this reader names sessions (the session's
//! own name with its id replaced by the parent's: `NAME/<parent id>`, or the parent id), so
//! the sub-agent keeps its own loop state and the parent's budgets count its calls.
//!
//! Tools are taken as given, as the opencode plugin (`plugins/opencode`) hands them to the
//! guard: `bash {command, description}` and the plugin's result `{content: [{type: "text",
//! text: output}]}`. Tokens: the message's `tokens.total`, shared among its tool parts.

use loopguard_core::Value;
use loopguard_events::Payload;

use crate::common::{object_line, refusal_payload, str_field, text_result, PendingCall, Runs};
use crate::pairing::Tracker;
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// opencode's parts, each with its message.
///
/// ```
/// use loopguard_adapters::{opencode::OpencodeAdapter, Context, LineAdapter};
/// let mut a = OpencodeAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"message":{"id":"m1","role":"assistant","tokens":{"total":15}},"part":{"id":"p1","type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"make"},"output":"ok\n","time":{"start":1796674908619,"end":1796674909812}}}}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("bash"));
/// assert_eq!(out[0].tokens, Some(15));
/// ```
#[derive(Debug)]
pub struct OpencodeAdapter {
    tracker: Tracker,
    runs: Runs,
    /// The last user message that started a run.
    prompt: Option<String>,
    /// The parent's session, for a sub-agent's.
    parent: Option<loopguard_core::JsString<'static>>,
}

impl OpencodeAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        OpencodeAdapter {
            tracker: Tracker::new(&ctx),
            runs: Runs::new("run"),
            prompt: None,
            parent: None,
        }
    }

    /// The same for a sub-agent's session: every event names `parent` as its
    /// `parentSession`.
    pub fn with_parent(mut self, parent: Option<String>) -> Self {
        self.parent = parent.map(loopguard_core::JsString::from);
        self
    }

    fn linked(&self, events: &mut [SourcedEvent]) {
        if let Some(parent) = &self.parent {
            for e in events {
                e.event.parent_session = Some(parent.clone());
            }
        }
    }
}

/// The name of the parent `parent` of the session `id` named `name`: `name` with its id
/// replaced by the parent's (`NAME/<id>` gives `NAME/<parent>`), else the parent's id.
fn parent_name(name: &str, id: &str, parent: &str) -> String {
    match name.strip_suffix(id) {
        Some(base) if base.is_empty() || base.ends_with('/') => format!("{base}{parent}"),
        _ => parent.to_string(),
    }
}

/// `output` without the note the opencode plugin appends for the model (`\n\n` and a
/// warning or the message that ended the run): the plugin recorded the output without it.
fn without_plugin_note(output: &str) -> &str {
    match output.rfind("\n\n") {
        Some(i)
            if ["WARNING: ", "CRITICAL: "]
                .iter()
                .any(|p| output[i + 2..].starts_with(p)) =>
        {
            &output[..i]
        }
        _ => output,
    }
}

impl LineAdapter for OpencodeAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let start = out.len();
        let read = self.part(no, text, out);
        self.linked(&mut out[start..]);
        read
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let start = out.len();
        let diagnostics = self.tracker.finish(out);
        self.linked(&mut out[start..]);
        diagnostics
    }
}

impl OpencodeAdapter {
    /// One part with its message.
    fn part(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "an opencode part")? else {
            return Ok(());
        };
        let bad = |m: String| Diagnostic::new(no, DiagnosticKind::BadField, m);
        let message = v.get("message").unwrap_or(&Value::Null);
        let Some(part) = v.get("part").filter(|p| p.as_object().is_some()) else {
            return Err(bad("field `part`: missing or not an object".into()));
        };
        let part_id = str_field(part, "id").unwrap_or("?");
        let role = str_field(message, "role");
        match str_field(part, "type") {
            Some("text") if role == Some("user") => {
                let msg = str_field(message, "id").map(str::to_string);
                if msg.is_none() || msg != self.prompt {
                    self.tracker.end_turn(out);
                    self.runs.boundary();
                    self.prompt = msg;
                }
            }
            Some("compaction") => {
                let ts = part
                    .get("time")
                    .and_then(|t| t.get("created"))
                    .and_then(Value::as_f64)
                    .map_or(0, |t| t as u64);
                self.tracker.compaction(no, &self.runs.current(), ts, out);
            }
            Some("tool") => {
                let Some(tool) = str_field(part, "tool") else {
                    return Err(bad(format!(
                        "part {part_id}: a tool part without `tool`; skipped"
                    )));
                };
                let state = part.get("state").unwrap_or(&Value::Null);
                let input = state
                    .get("input")
                    .cloned()
                    .unwrap_or(Value::Null)
                    .into_owned();
                let time = state.get("time");
                let at = |k: &str| {
                    time.and_then(|t| t.get(k))
                        .and_then(Value::as_f64)
                        .map_or(0, |t| t as u64)
                };
                let id = str_field(part, "callID").map(str::to_string);
                let tokens = message
                    .get("tokens")
                    .and_then(|t| t.get("total"))
                    .and_then(Value::as_f64)
                    .filter(|t| *t >= 0.0)
                    .map(|t| t as u64);
                let run = self.runs.current();
                let mut call = PendingCall::new(no, &run, id.clone(), tool, input);
                call.ts = at("start");
                call.tokens = tokens;
                self.runs.used();
                let payload = match str_field(state, "status") {
                    Some("completed") => {
                        let output = str_field(state, "output").unwrap_or("");
                        Some(refusal_payload(output).unwrap_or_else(|| {
                            Payload::Result(text_result(without_plugin_note(output)))
                        }))
                    }
                    Some("error") => {
                        let error = str_field(state, "error").unwrap_or("");
                        Some(
                            refusal_payload(error)
                                .unwrap_or_else(|| Payload::Error(Value::from(error.to_string()))),
                        )
                    }
                    Some("pending" | "running") => None,
                    other => {
                        return Err(bad(format!(
                            "part {part_id}: unknown tool state {other:?}; skipped"
                        )))
                    }
                };
                match payload {
                    Some(p) => self.tracker.emit(call, no, p, at("end"), out),
                    None => self.tracker.replay_alone(call, out),
                }
            }
            Some(_) => {}
            None => return Err(bad(format!("part {part_id}: field `type` missing"))),
        }
        Ok(())
    }
}

/// The tables an opencode database has.
const TABLES: [&str; 3] = ["session", "message", "part"];

fn open(path: &std::path::Path) -> Result<rusqlite::Connection, String> {
    use rusqlite::{Connection, OpenFlags};
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(path, flags).map_err(|e| format!("cannot open: {e}"))
}

/// `true` when the SQLite database at `path` is an opencode database (it has the
/// `session`, `message` and `part` tables).
pub fn is_opencode_db(path: &std::path::Path) -> bool {
    let Ok(conn) = open(path) else {
        return false;
    };
    TABLES.iter().all(|t| {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n == 1)
    })
}

/// The sessions of an opencode database, oldest first.
pub fn session_ids(path: &std::path::Path) -> Result<Vec<String>, String> {
    let conn = open(path)?;
    let mut stmt = conn
        .prepare("SELECT id FROM session ORDER BY time_created, id")
        .map_err(|e| format!("reading `session` failed: {e}"))?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| format!("reading `session` failed: {e}"))?;
    rows.collect::<Result<_, _>>()
        .map_err(|e| format!("reading `session` failed: {e}"))
}

/// Reads one session of an opencode database, handing each event to `on_event` as soon as
/// its part is read (`false` stops); returns the diagnostics.
pub fn read_session_with(
    path: &std::path::Path,
    session: &str,
    ctx: Context,
    on_event: &mut dyn FnMut(SourcedEvent) -> bool,
) -> Result<Vec<Diagnostic>, String> {
    let conn = open(path)?;
    let failed = |e: rusqlite::Error| format!("reading `part` failed: {e}");
    let mut stmt = conn
        .prepare(
            "SELECT p.id, p.data, m.id, m.data FROM part p JOIN message m ON p.message_id = m.id \
             WHERE p.session_id = ?1 ORDER BY m.time_created, m.id, p.time_created, p.id",
        )
        .map_err(failed)?;
    let mut rows = stmt.query([session]).map_err(failed)?;
    let parent = parent_of(&conn, session)?.map(|p| parent_name(&ctx.session, session, &p));
    let mut adapter = OpencodeAdapter::new(ctx).with_parent(parent);
    let mut diagnostics = Vec::new();
    let mut out = Vec::new();
    let mut no = 0u64;
    while let Some(row) = rows.next().map_err(failed)? {
        no += 1;
        let part_id: String = row.get(0).unwrap_or_default();
        let part: String = row.get(1).unwrap_or_default();
        let message_id: String = row.get(2).unwrap_or_default();
        let message: String = row.get(3).unwrap_or_default();
        let record = match (with_id(&part, &part_id), with_id(&message, &message_id)) {
            (Some(p), Some(m)) => format!(r#"{{"message":{m},"part":{p}}}"#),
            _ => {
                diagnostics.push(Diagnostic::new(
                    no,
                    DiagnosticKind::NotJson,
                    format!("part {part_id} (message {message_id}): its data is not a JSON object; skipped"),
                ));
                continue;
            }
        };
        if let Err(d) = adapter.line(no, record.as_bytes(), &mut out) {
            diagnostics.push(d);
        }
        for e in out.drain(..) {
            if !on_event(e) {
                return Ok(diagnostics);
            }
        }
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

/// The parent of the session `id` (`session.parent_id`); `None` for a main session or a
/// database without the column.
fn parent_of(conn: &rusqlite::Connection, id: &str) -> Result<Option<String>, String> {
    match conn.query_row("SELECT parent_id FROM session WHERE id = ?1", [id], |r| {
        r.get::<_, Option<String>>(0)
    }) {
        Ok(parent) => Ok(parent.filter(|p| !p.is_empty())),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) if e.to_string().contains("no such column") => Ok(None),
        Err(e) => Err(format!("reading `session` failed: {e}")),
    }
}

/// The JSON object `data` with `"id": id` added first; `None` when `data` is not an object.
fn with_id(data: &str, id: &str) -> Option<String> {
    let rest = data.trim_start().strip_prefix('{')?;
    let id = serde_json_string(id);
    Some(if rest.trim_start().starts_with('}') {
        format!("{{\"id\":{id}}}")
    } else {
        format!("{{\"id\":{id},{rest}")
    })
}

/// `s` as a JSON string.
fn serde_json_string(s: &str) -> String {
    let mut out = Vec::new();
    crate::common::write_value(&mut out, &Value::from(s.to_string()));
    String::from_utf8(out).unwrap_or_else(|_| "\"\"".into())
}

/// `true` for a session of opencode's older JSON storage
/// (`storage/session/<project>/<id>.json`): an object with `id`, `projectID`, `title` and
/// `time.created` (a message has `sessionID` and `role` instead, a project `worktree`).
pub(crate) fn is_storage_session(v: &Value<'_>) -> bool {
    v.as_object().is_some()
        && str_field(v, "id").is_some()
        && str_field(v, "projectID").is_some()
        && str_field(v, "title").is_some()
        && v.get("role").is_none()
        && v.get("time")
            .and_then(|t| t.get("created"))
            .and_then(Value::as_f64)
            .is_some()
}

/// A JSON file of the storage, parsed; the error names the file.
fn storage_object(path: &std::path::Path) -> Result<(String, Value<'static>), String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value = loopguard_core::json::parse(&text)
        .map_err(|e| {
            format!(
                "{}: {}",
                path.display(),
                crate::common::document_error(&text, &e)
            )
        })?
        .into_owned();
    if value.as_object().is_none() {
        return Err(format!("{}: not a JSON object", path.display()));
    }
    let text = String::from_utf8_lossy(&text).trim().to_string();
    Ok((text, value))
}

/// The `*.json` files of `dir`, by name; an empty list when `dir` does not exist.
fn json_files(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut files = Vec::new();
    for e in entries {
        let path = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The session id of a session file of opencode's JSON storage, and the storage folder it
/// lies in (`<storage>/session/<project>/<id>.json`).
pub fn storage_session(path: &std::path::Path) -> Result<(String, std::path::PathBuf), String> {
    let (_, session) = storage_object(path)?;
    if !is_storage_session(&session) {
        return Err("not an opencode session (`id`, `projectID`, `title`, `time.created`)".into());
    }
    let id = str_field(&session, "id").unwrap_or_default().to_string();
    let root = path
        .parent()
        .and_then(std::path::Path::parent)
        .filter(|d| d.file_name().is_some_and(|n| n == "session"))
        .and_then(std::path::Path::parent)
        .filter(|root| root.join("message").is_dir())
        .ok_or_else(|| {
            format!(
                "session {id}: not in opencode's storage (`<storage>/session/<project>/<id>.json` beside `<storage>/message`), so its messages cannot be found"
            )
        })?;
    Ok((id, root.to_path_buf()))
}

/// Reads one session of opencode's older JSON storage (`storage/message/<session>/*.json`,
/// `storage/part/<message>/*.json`), its messages in the order of `time.created` (then id)
/// and each message's parts by id (opencode's ids ascend), each part with its message as
/// the one record [`OpencodeAdapter`] reads, as the SQLite reader does. Handing and
/// stopping as [`read_session_with`]; a file that cannot be read or parsed is a
/// diagnostic naming it.
pub fn read_storage_session_with(
    path: &std::path::Path,
    ctx: Context,
    on_event: &mut dyn FnMut(SourcedEvent) -> bool,
) -> Result<Vec<Diagnostic>, String> {
    let (id, root) = storage_session(path)?;
    let parent = storage_object(path)?
        .1
        .get("parentID")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(|p| parent_name(&ctx.session, &id, p));
    let mut diagnostics = Vec::new();
    let mut messages = Vec::new();
    for file in json_files(&root.join("message").join(&id))? {
        match storage_object(&file) {
            Ok((text, m)) => {
                let created = m
                    .get("time")
                    .and_then(|t| t.get("created"))
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                match str_field(&m, "id") {
                    Some(mid) => messages.push((created, mid.to_string(), text)),
                    None => diagnostics.push(Diagnostic::new(
                        0,
                        DiagnosticKind::BadField,
                        format!("{}: field `id` missing; message skipped", file.display()),
                    )),
                }
            }
            Err(e) => diagnostics.push(Diagnostic::new(
                0,
                DiagnosticKind::NotJson,
                format!("{e}; message skipped"),
            )),
        }
    }
    if messages.is_empty() && diagnostics.is_empty() {
        diagnostics.push(Diagnostic::new(
            0,
            DiagnosticKind::Partial,
            format!(
                "session {id}: no message in {}",
                root.join("message").join(&id).display()
            ),
        ));
    }
    messages.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut adapter = OpencodeAdapter::new(ctx).with_parent(parent);
    let mut out = Vec::new();
    let mut no = 0u64;
    for (_, mid, message) in &messages {
        for file in json_files(&root.join("part").join(mid))? {
            no += 1;
            let part = match storage_object(&file) {
                Ok((text, _)) => text,
                Err(e) => {
                    diagnostics.push(Diagnostic::new(
                        no,
                        DiagnosticKind::NotJson,
                        format!("{e}; part skipped"),
                    ));
                    continue;
                }
            };
            let record = format!(r#"{{"message":{message},"part":{part}}}"#);
            if let Err(mut d) = adapter.line(no, record.as_bytes(), &mut out) {
                d.message = format!("{}: {}", file.display(), d.message);
                diagnostics.push(d);
            }
            for e in out.drain(..) {
                if !on_event(e) {
                    return Ok(diagnostics);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugins_note_is_dropped_and_only_it() {
        assert_eq!(
            without_plugin_note("same\n\nWARNING: You have called bash 10 times"),
            "same"
        );
        assert_eq!(without_plugin_note("a\n\nb"), "a\n\nb");
        assert_eq!(without_plugin_note("WARNING: x"), "WARNING: x");
        assert_eq!(with_id("{}", "p").as_deref(), Some(r#"{"id":"p"}"#));
        assert_eq!(
            with_id(r#"{"type":"text"}"#, "p\"").as_deref(),
            Some(r#"{"id":"p\"","type":"text"}"#)
        );
        assert_eq!(with_id("[1]", "p"), None);
    }

    #[test]
    fn storage_sessions_are_recognised_on_one_line_or_many() {
        use crate::Format;
        let one = br#"{"id":"ses_1","projectID":"p","title":"t","time":{"created":1,"updated":2}}"#;
        assert_eq!(crate::detect("x.json", one), Some(Format::OpencodeStorage));
        let pretty = b"{\n  \"id\": \"ses_1\",\n  \"version\": \"0.5.0\",\n  \"projectID\": \"global\",\n  \"title\": \"t\",\n  \"time\": {\n    \"created\": 1\n  }\n}\n";
        assert_eq!(crate::detect("x", pretty), Some(Format::OpencodeStorage));
        // A message of the storage is not a session.
        let message = br#"{"id":"msg_1","sessionID":"ses_1","role":"user","projectID":"p","title":"t","time":{"created":1}}"#;
        assert_ne!(
            crate::detect("x.json", message),
            Some(Format::OpencodeStorage)
        );
    }

    #[test]
    fn unknown_states_and_parts_without_a_type_are_reported() {
        let mut a = OpencodeAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(
            &mut a,
            &[
                r#"{"message":{"id":"m","role":"user"},"part":{"id":"p0","type":"text","text":"go"}}"#,
                r#"{"message":{"id":"m2","role":"assistant"},"part":{"id":"p1","type":"tool","tool":"bash","callID":"c","state":{"status":"weird"}}}"#,
                r#"{"message":{"id":"m2","role":"assistant"},"part":{"id":"p2"}}"#,
                r#"{"message":{"id":"m2","role":"assistant"},"part":{"id":"p3","type":"tool","tool":"bash","callID":"d","state":{"status":"running","input":{}}}}"#,
                r#"{"message":{"id":"m2","role":"assistant"},"part":{"id":"p4","type":"tool","tool":"bash","callID":"e","state":{"status":"error","input":{},"error":"Error: CRITICAL: Called bash with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops."}}}"#,
            ],
        );
        let kinds: Vec<_> = diags.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (2, DiagnosticKind::BadField),
                (3, DiagnosticKind::BadField),
                (4, DiagnosticKind::Unanswered)
            ]
        );
        assert!(diags[0].message.contains("p1"), "{}", diags[0].message);
        // The running call is replayed alone; the refused one reads as a refusal.
        assert_eq!(events.len(), 3);
        let refused = match &events[2].event.payload {
            Some(Payload::Result(v)) => v
                .get("details")
                .and_then(|d| d.get("deniedReason"))
                .and_then(Value::as_str)
                .map(str::to_string),
            _ => None,
        };
        assert_eq!(refused.as_deref(), Some("tool-loop"));
    }

    const TOOL_PART: &str = r#"{"type":"tool","tool":"bash","callID":"CALL","state":{"status":"completed","input":{"command":"npm test"},"output":"1 failing","time":{"start":1,"end":2}}}"#;

    fn read_db(path: &std::path::Path, id: &str, name: &str) -> Vec<(String, Option<String>)> {
        let mut events = Vec::new();
        let ctx = Context {
            session: name.into(),
            agent: None,
        };
        let diags = read_session_with(path, id, ctx, &mut |e| {
            events.push(e);
            true
        })
        .unwrap();
        assert!(diags.is_empty(), "{diags:?}");
        let s = |v: &Option<loopguard_core::JsString>| v.as_ref().map(|s| s.to_string());
        events
            .iter()
            .map(|e| (s(&e.event.session).unwrap(), s(&e.event.parent_session)))
            .collect()
    }

    #[test]
    fn a_task_tools_session_in_the_database_is_linked_to_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT, time_created INTEGER);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
             INSERT INTO session VALUES ('ses_p', NULL, 'main', 1), ('ses_c', 'ses_p', 'task', 2);",
        )
        .unwrap();
        for (session, msg) in [("ses_p", "msg_p"), ("ses_c", "msg_c")] {
            conn.execute(
                "INSERT INTO message VALUES (?1, ?2, 1, '{\"role\":\"assistant\"}')",
                [msg, session],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, 1, ?4)",
                [
                    &format!("prt_{session}"),
                    msg,
                    session,
                    &TOOL_PART.replace("CALL", session),
                ],
            )
            .unwrap();
        }
        drop(conn);
        assert_eq!(session_ids(&path).unwrap(), ["ses_p", "ses_c"]);
        // Named as the reader names a database's sessions: `NAME/<id>`, or the id alone.
        assert_eq!(
            read_db(&path, "ses_p", "db/ses_p"),
            vec![("db/ses_p".into(), None); 2]
        );
        assert_eq!(
            read_db(&path, "ses_c", "db/ses_c"),
            vec![("db/ses_c".into(), Some("db/ses_p".into())); 2]
        );
        assert_eq!(
            read_db(&path, "ses_c", "ses_c"),
            vec![("ses_c".into(), Some("ses_p".into())); 2]
        );
        assert_eq!(parent_name("mine", "ses_c", "ses_p"), "ses_p");
        assert_eq!(parent_name("x-ses_c", "ses_c", "ses_p"), "ses_p");
    }

    #[test]
    fn a_task_tools_session_file_in_the_storage_is_linked_to_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("storage");
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        };
        let mut files = Vec::new();
        for (id, parent) in [("ses_p", ""), ("ses_c", r#","parentID":"ses_p""#)] {
            files.push(write(
                &format!("session/proj/{id}.json"),
                &format!(r#"{{"id":"{id}","projectID":"proj","title":"t"{parent},"time":{{"created":1}}}}"#),
            ));
            write(
                &format!("message/{id}/msg_{id}.json"),
                &format!(
                    r#"{{"id":"msg_{id}","sessionID":"{id}","role":"assistant","time":{{"created":1}}}}"#
                ),
            );
            write(
                &format!("part/msg_{id}/prt_{id}.json"),
                &TOOL_PART
                    .replace("CALL", id)
                    .replacen('{', &format!(r#"{{"id":"prt_{id}","#), 1),
            );
        }
        let read = |path: &std::path::Path, name: &str| {
            let mut events = Vec::new();
            let ctx = Context {
                session: name.into(),
                agent: None,
            };
            let diags = read_storage_session_with(path, ctx, &mut |e| {
                events.push(e);
                true
            })
            .unwrap();
            assert!(diags.is_empty(), "{diags:?}");
            events
                .iter()
                .map(|e| {
                    (
                        e.event.session.as_ref().unwrap().to_string(),
                        e.event.parent_session.as_ref().map(|s| s.to_string()),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            read(&files[0], "ses_p"),
            vec![("ses_p".to_string(), None); 2]
        );
        assert_eq!(
            read(&files[1], "ses_c"),
            vec![("ses_c".to_string(), Some("ses_p".to_string())); 2]
        );
        // A name lengthened by its folders keeps them for the parent, as replay names it.
        assert_eq!(
            read(&files[1], "proj/ses_c"),
            vec![("proj/ses_c".to_string(), Some("proj/ses_p".to_string())); 2]
        );
    }
}
