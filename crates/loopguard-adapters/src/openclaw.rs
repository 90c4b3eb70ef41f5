//! OpenClaw / pi session JSONL (versions 1 to 3; 4 and unknown entry types tolerated).
//!
//! One line is one entry (transcripts.md §1.2). What becomes an event:
//!
//! * `toolCall` blocks of `assistant` messages are calls; the `toolResult` message that
//!   answers one is its outcome. The call is emitted together with its outcome, when the
//!   result is read; a call that never got a result is replayed without an outcome when
//!   its turn ends (the next assistant turn, or the end of the file) and reported as
//!   [`DiagnosticKind::Unanswered`].
//! * `compaction` entries (and the gateway's `{"role":"system", "__openclaw":{"kind":
//!   "compaction"}}` projection) are compactions.
//! * Everything else (user messages, `bashExecution`, model changes, labels, …) only moves
//!   the run boundaries or is ignored.
//!
//! Runs come from `message.__openclaw.runId` when the transcript has it; otherwise they are
//! inferred (§1.3): a run starts at a `user` message (or a `custom_message` entry, or its
//! message forms `custom` and v1's `hookMessage`) and lasts until an assistant message whose
//! `stopReason` is not `"toolUse"`; an assistant message outside any run starts one. Inferred
//! runs are named `run-1`, `run-2`, … in file order. A result belongs to the run of its call.
//! A compaction belongs to the run it happened in: the run of the last assistant message,
//! or, when a user message has started a new run since, the run of the next assistant
//! message (the compaction event is then emitted when that message is read, still with the
//! compaction's own line).
//!
//! Results are paired with calls by the pairing all adapters share: by call id, and by
//! position when the id is missing. When an assistant message is read, the calls of
//! earlier turns that are still waiting will get no result (the agent loop appends results
//! before the next turn): they are replayed without an outcome and reported, so a provider
//! id reused later (`functions.read:0`) pairs with the new call; only calls of another
//! explicitly named run keep waiting, since runs can interleave.
//!
//! ```
//! use loopguard_adapters::{openclaw::OpenClawAdapter, Context, LineAdapter};
//! let lines = [
//!     r#"{"type":"session","version":3,"id":"s","timestamp":"2026-09-05T15:26:13.250Z","cwd":"/"}"#,
//!     r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi","timestamp":1788622000000}}"#,
//!     r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"Bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","usage":{"totalTokens":120},"timestamp":1788622001000}}"#,
//!     r#"{"type":"message","id":"c","parentId":"b","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a.txt"}],"isError":false,"timestamp":1788622002000}}"#,
//! ];
//! let mut adapter = OpenClawAdapter::new(Context { session: "s".into(), agent: None });
//! let mut out = Vec::new();
//! for (i, l) in lines.iter().enumerate() {
//!     adapter.line(i as u64 + 1, l.as_bytes(), &mut out).unwrap();
//! }
//! assert!(adapter.finish(&mut out).is_empty());
//! assert_eq!(out.len(), 2);
//! assert_eq!(out[0].event.tool.as_ref().unwrap().as_str(), Some("exec"));
//! assert_eq!(out[0].event.run.as_ref().unwrap().as_str(), Some("run-1"));
//! assert_eq!((out[0].line, out[1].line), (3, 4));
//! assert_eq!(out[0].tokens, Some(120));
//! ```

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use loopguard_core::{Object, Value};
use loopguard_events::Payload;

use crate::common::{content_text, parse_line, str_field, timestamp_ms, Builder};
use crate::pairing::{PendingCall, Tracker};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// Entry types that are part of the format but carry no tool calls.
const IGNORED_ENTRY_TYPES: &[&str] = &[
    "branch_summary",
    "model_change",
    "thinking_level_change",
    "custom",
    "label",
    "session_info",
    "active_tools_change",
];

/// An OpenClaw tool name as OpenClaw's tool policy normalises it: trimmed, lower-cased,
/// `bash` → `exec`, `apply-patch` → `apply_patch` (decisions.md item 7).
///
/// ```
/// use loopguard_adapters::openclaw::normalize_tool_name;
/// assert_eq!(normalize_tool_name("Bash"), "exec");
/// assert_eq!(normalize_tool_name(" apply-patch "), "apply_patch");
/// assert_eq!(normalize_tool_name("Read"), "read");
/// ```
pub fn normalize_tool_name(name: &str) -> String {
    let trimmed = std::str::from_utf8(loopguard_core::json::js_trim(name.as_bytes()))
        .unwrap_or(name)
        .to_lowercase();
    match trimmed.as_str() {
        "bash" => "exec".to_string(),
        "apply-patch" => "apply_patch".to_string(),
        _ => trimmed,
    }
}

/// The ids of the entries on the active branch of a session file: the leaf is the last
/// entry with an `id` (the session header excepted), and the branch is the leaf with its
/// ancestors through `parentId`.
///
/// v1 files have no ids: the set is empty, and [`OpenClawAdapter::with_active_branch`]
/// keeps every entry without an id, so the whole (linear) file is used. Lines that are
/// not JSON are skipped here; the adapter reports them.
///
/// ```
/// use loopguard_adapters::openclaw::active_branch_ids;
/// let file = br#"{"type":"session","version":3,"id":"s"}
/// {"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}
/// {"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"y"}}
/// {"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"z"}}
/// "#;
/// let ids = active_branch_ids(&file[..]).unwrap();
/// assert!(ids.contains("a") && ids.contains("c") && !ids.contains("b"));
/// ```
pub fn active_branch_ids(mut reader: impl BufRead) -> std::io::Result<HashSet<String>> {
    let mut parents: HashMap<String, Option<String>> = HashMap::new();
    let mut leaf: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let Ok(v) = loopguard_core::json::parse(strip_bom(&buf)) else {
            continue;
        };
        if str_field(&v, "type") == Some("session") {
            continue;
        }
        let Some(id) = str_field(&v, "id") else {
            continue;
        };
        let parent = str_field(&v, "parentId").map(str::to_string);
        parents.insert(id.to_string(), parent);
        leaf = Some(id.to_string());
    }
    let mut branch = HashSet::new();
    let mut current = leaf;
    while let Some(id) = current {
        let Some(parent) = parents.get(&id) else {
            break; // a parent that is not in the file
        };
        let parent = parent.clone();
        if !branch.insert(id) {
            break; // a cycle: stop rather than loop
        }
        current = parent;
    }
    Ok(branch)
}

fn strip_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text)
}

/// Reads OpenClaw / pi session JSONL, one entry per line (see the module documentation).
#[derive(Debug)]
pub struct OpenClawAdapter {
    builder: Builder,
    active: Option<HashSet<String>>,
    tracker: Tracker,
    /// Inferred runs started so far.
    runs: u64,
    /// The inferred run in progress.
    open_run: Option<String>,
    /// A run was started by a user message and no assistant message has been read since.
    fresh_run: bool,
    /// The run of the last assistant message; `None` before the first.
    last_run: Option<String>,
    /// Compactions whose run is not known yet (line, timestamp).
    deferred: Vec<(u64, u64)>,
}

impl OpenClawAdapter {
    /// An adapter producing events for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        OpenClawAdapter {
            builder: Builder::new(&ctx),
            active: None,
            tracker: Tracker::new(&ctx),
            runs: 0,
            open_run: None,
            fresh_run: false,
            last_run: None,
            deferred: Vec::new(),
        }
    }

    /// Uses only the entries whose `id` is in `ids` (see [`active_branch_ids`]). The
    /// session header and entries without an `id` (v1) are always used.
    pub fn with_active_branch(mut self, ids: HashSet<String>) -> Self {
        self.active = Some(ids);
        self
    }

    fn start_run(&mut self) -> String {
        self.runs += 1;
        let run = format!("run-{}", self.runs);
        self.open_run = Some(run.clone());
        run
    }

    fn flush_deferred(&mut self, run: Option<&str>, out: &mut Vec<SourcedEvent>) {
        for (line, ts) in self.deferred.drain(..) {
            out.push(self.builder.compaction(line, run, ts));
        }
    }

    fn compaction(&mut self, no: u64, ts: u64, out: &mut Vec<SourcedEvent>) {
        match &self.last_run {
            // The compaction happened inside the run of the last assistant message.
            Some(run) if !self.fresh_run => {
                let run = run.clone();
                out.push(self.builder.compaction(no, Some(&run), ts));
            }
            // A new run started (or none yet): its id is known at its first assistant
            // message, which may carry `__openclaw.runId`.
            _ => self.deferred.push((no, ts)),
        }
    }

    fn message(
        &mut self,
        no: u64,
        m: &Value<'_>,
        entry_ts: Option<u64>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if m.as_object().is_none() {
            return Err(bad(no, "`message` is not an object"));
        }
        let ts = m
            .get("timestamp")
            .and_then(timestamp_ms)
            .or(entry_ts)
            .unwrap_or(0);
        let meta = m.get("__openclaw");
        let run_id = meta
            .and_then(|o| str_field(o, "runId"))
            .filter(|r| !r.trim().is_empty());
        match m.get("role") {
            Some(Value::String(role)) => match role.as_wtf8() {
                b"user" | b"custom" | b"hookMessage" => {
                    self.start_run();
                    self.fresh_run = true;
                    Ok(())
                }
                b"assistant" => self.assistant(no, m, ts, run_id, out),
                b"toolResult" => self.tool_result(no, m, ts, out),
                b"system" => {
                    if meta.and_then(|o| str_field(o, "kind")) == Some("compaction") {
                        self.compaction(no, ts, out);
                    }
                    Ok(())
                }
                // bashExecution (a user's `!cmd`), branch and compaction summaries, …:
                // not tool calls of the model.
                _ => Ok(()),
            },
            Some(_) => Err(bad(no, "`message.role` is not a string")),
            None => Err(bad(no, "message without a `role`")),
        }
    }

    fn assistant(
        &mut self,
        no: u64,
        m: &Value<'_>,
        ts: u64,
        run_id: Option<&str>,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        // Read every tool call first: a bad one rejects the line before anything changes.
        let mut calls = Vec::new();
        if let Some(Value::Array(blocks)) = m.get("content") {
            for block in blocks {
                if str_field(block, "type") != Some("toolCall") {
                    continue;
                }
                let name = match block.get("name") {
                    Some(Value::String(s)) => normalize_tool_name(&s.to_string_lossy()),
                    _ => return Err(bad(no, "a `toolCall` block without a `name` string")),
                };
                let id = match block.get("id") {
                    Some(Value::String(s)) if !s.is_empty() => {
                        Some(s.to_string_lossy().into_owned())
                    }
                    _ => None,
                };
                let args = match block.get("arguments") {
                    Some(a) => a.clone().into_owned(),
                    None => Value::empty_object(),
                };
                calls.push((id, name, args));
            }
        }

        let explicit = run_id.is_some();
        let run = match run_id {
            Some(r) => r.to_string(),
            None => match &self.open_run {
                Some(r) => r.clone(),
                None => self.start_run(),
            },
        };

        // Calls of earlier assistant turns of this run that are still waiting will get no
        // result (the agent loop appends results before the next turn): they are replayed
        // without an outcome. Only calls of another, explicitly named run may still be
        // answered: runs can interleave.
        self.tracker.end_turn_where(
            out,
            |call| !(call.explicit_run && explicit && call.run.as_deref() != Some(run.as_str())),
            true,
        );
        self.flush_deferred(Some(&run), out);

        let tokens = usage_tokens(m.get("usage"));
        let n = calls.len() as u64;
        let stop = m.get("stopReason").and_then(Value::as_str);
        // A reply that failed or was aborted while streaming: the agent loop runs none of
        // its tool calls, so OpenClaw's hooks never saw them (a call is replayed when it
        // was made, with or without a result; these were not made).
        if let Some(reason @ ("error" | "aborted")) = stop {
            for (id, tool, _) in &calls {
                let id = id.as_deref().map(|i| format!(" ({i})")).unwrap_or_default();
                self.tracker.diagnose(
                    no,
                    DiagnosticKind::Unanswered,
                    format!(
                        "call of {tool}{id} is in a reply that ended with stopReason {reason:?}: the agent never ran it; not replayed"
                    ),
                );
            }
            self.open_run = None;
            self.last_run = Some(run);
            self.fresh_run = false;
            return Ok(());
        }
        for (i, (id, tool, args)) in calls.into_iter().enumerate() {
            let tokens = tokens.map(|t| t / n + u64::from((i as u64) < t % n));
            let mut call = PendingCall::new(no, &run, id.clone(), &tool, args);
            call.explicit_run = explicit;
            call.ts = ts;
            call.tokens = tokens;
            self.tracker.call(id, call, out);
        }

        let continues = match stop {
            Some(reason) => reason == "toolUse",
            None => n > 0,
        };
        if !continues {
            self.open_run = None;
        }
        self.last_run = Some(run);
        self.fresh_run = false;
        Ok(())
    }

    fn tool_result(
        &mut self,
        no: u64,
        m: &Value<'_>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let id = str_field(m, "toolCallId").filter(|i| !i.is_empty());
        let Some(call) = self.tracker.take(id) else {
            let tool = str_field(m, "toolName").unwrap_or("?");
            let what = id.map_or_else(String::new, |id| format!(" {id:?}"));
            return Err(Diagnostic::new(
                no,
                DiagnosticKind::Orphan,
                format!("result{what} of {tool} answers no waiting call; not replayed"),
            ));
        };
        let content = m
            .get("content")
            .map(|c| c.clone().into_owned())
            .unwrap_or_else(|| Value::Array(Vec::new()));
        let payload = if m.get("isError").and_then(Value::as_bool) == Some(true) {
            Payload::Error(Value::from(content_text(&content)))
        } else {
            let mut fields = vec![("content".into(), content)];
            if let Some(details) = m.get("details") {
                fields.push(("details".into(), details.clone().into_owned()));
            }
            Payload::Result(Value::Object(Object::from_entries(fields)))
        };
        let run = call.run.clone();
        self.flush_deferred(run.as_deref(), out);
        self.tracker.emit(call, no, payload, ts, out);
        Ok(())
    }
}

/// Tokens of an assistant message: `usage.totalTokens`, else `input + output`.
fn usage_tokens(usage: Option<&Value<'_>>) -> Option<u64> {
    let usage = usage?;
    let num = |k: &str| {
        usage
            .get(k)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n.round() as u64)
    };
    match num("totalTokens") {
        Some(t) if t > 0 => Some(t),
        _ => match (num("input"), num("output")) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0).saturating_add(o.unwrap_or(0))),
        },
    }
}

fn bad(no: u64, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(no, DiagnosticKind::BadField, message)
}

impl LineAdapter for OpenClawAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let text = strip_bom(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let v = parse_line(no, text)?;
        if v.as_object().is_none() {
            return Err(Diagnostic::new(
                no,
                DiagnosticKind::NotJson,
                "not a session entry: expected a JSON object",
            ));
        }
        let ty = match v.get("type") {
            None => None,
            Some(Value::String(s)) => Some(s.to_string_lossy()),
            Some(_) => return Err(bad(no, "`type` is not a string")),
        };
        if let (Some(active), Some(id)) = (&self.active, str_field(&v, "id")) {
            if ty.as_deref() != Some("session") && !active.contains(id) {
                return Ok(()); // not on the active branch
            }
        }
        let entry_ts = v.get("timestamp").and_then(timestamp_ms);
        match ty.as_deref() {
            Some("session") => match v.get("version") {
                None => Ok(()), // v1
                Some(Value::Number(n)) if [1.0, 2.0, 3.0, 4.0].contains(n) => Ok(()),
                Some(other) => Err(bad(
                    no,
                    format!(
                        "session header with unsupported version {}; versions 1 to 4 are read",
                        crate_json(other)
                    ),
                )),
            },
            Some("message") => match v.get("message") {
                Some(m) => self.message(no, m, entry_ts, out),
                None => Err(bad(no, "message entry without a `message`")),
            },
            Some("compaction") => {
                self.compaction(no, entry_ts.unwrap_or(0), out);
                Ok(())
            }
            Some("custom_message") => {
                self.start_run();
                self.fresh_run = true;
                Ok(())
            }
            Some(t) if IGNORED_ENTRY_TYPES.contains(&t) => Ok(()),
            Some(t) => Err(Diagnostic::new(
                no,
                DiagnosticKind::UnknownEntry,
                format!("unknown entry type {t:?}; skipped"),
            )),
            // A bare message, as the gateway's `chat.history` projection writes them.
            None if v.get("role").is_some() => self.message(no, &v, entry_ts, out),
            None => Err(bad(no, "entry without a `type`")),
        }
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        // Calls still waiting are replayed (without an outcome) before a compaction that
        // follows them.
        self.tracker.end_turn(out);
        let run = self.open_run.clone().or_else(|| self.last_run.clone());
        self.flush_deferred(run.as_deref(), out);
        self.tracker.finish(out)
    }
}

/// A short JSON rendering of a value for messages.
fn crate_json(v: &Value<'_>) -> String {
    let mut out = Vec::new();
    loopguard_core::json::write_json_value(&mut out, v);
    let s = String::from_utf8_lossy(&out).into_owned();
    if s.len() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed_lines;
    use loopguard_events::EventKind;

    fn adapter() -> OpenClawAdapter {
        OpenClawAdapter::new(Context {
            session: "s".into(),
            agent: None,
        })
    }

    fn brief(e: &SourcedEvent) -> String {
        let s = |v: &Option<loopguard_core::JsString<'static>>| {
            v.as_ref().map_or("-".to_string(), |s| s.to_string())
        };
        format!(
            "{} {} {} {} {}",
            e.event.kind.as_str(),
            e.line,
            s(&e.event.run),
            s(&e.event.call_id),
            s(&e.event.tool)
        )
    }

    fn assistant(calls: &[(&str, &str)], stop: &str, run: Option<&str>) -> String {
        let blocks: Vec<String> = calls
            .iter()
            .map(|(id, name)| {
                format!(r#"{{"type":"toolCall","id":"{id}","name":"{name}","arguments":{{}}}}"#)
            })
            .collect();
        let meta = run.map_or_else(String::new, |r| {
            format!(r#","__openclaw":{{"runId":"{r}"}}"#)
        });
        format!(
            r#"{{"type":"message","message":{{"role":"assistant","content":[{}],"stopReason":"{stop}"{meta}}}}}"#,
            blocks.join(",")
        )
    }

    fn result(id: &str) -> String {
        format!(
            r#"{{"type":"message","message":{{"role":"toolResult","toolCallId":"{id}","toolName":"x","content":[{{"type":"text","text":"ok"}}],"isError":false}}}}"#
        )
    }

    const USER: &str = r#"{"type":"message","message":{"role":"user","content":"go"}}"#;

    #[test]
    fn tool_names_are_normalised_as_openclaw_does() {
        assert_eq!(normalize_tool_name("bash"), "exec");
        assert_eq!(normalize_tool_name("BASH"), "exec");
        assert_eq!(normalize_tool_name("\u{a0}Bash\u{2028}"), "exec");
        assert_eq!(normalize_tool_name("Apply-Patch"), "apply_patch");
        assert_eq!(normalize_tool_name("apply_patch"), "apply_patch");
        assert_eq!(normalize_tool_name("Sessions_Send"), "sessions_send");
        assert_eq!(normalize_tool_name("bash2"), "bash2");
        assert_eq!(normalize_tool_name(""), "");
    }

    #[test]
    fn session_headers_of_versions_1_to_4_are_accepted() {
        let mut a = adapter();
        let mut out = Vec::new();
        for (no, v) in [
            "",
            r#","version":1"#,
            r#","version":2"#,
            r#","version":3"#,
            r#","version":4"#,
        ]
        .iter()
        .enumerate()
        {
            let line = format!(r#"{{"type":"session"{v},"id":"x","cwd":"/","extra":{{"new":1}}}}"#);
            assert_eq!(a.line(no as u64 + 1, line.as_bytes(), &mut out), Ok(()));
        }
        for bad in [
            r#"{"type":"session","version":5}"#,
            r#"{"type":"session","version":"3"}"#,
        ] {
            let d = a.line(9, bad.as_bytes(), &mut out).unwrap_err();
            assert_eq!(d.kind, DiagnosticKind::BadField, "{bad}");
            assert!(d.message.contains("version"), "{}", d.message);
        }
        assert!(out.is_empty());
    }

    #[test]
    fn unusable_lines_name_their_problem_and_change_nothing() {
        let mut a = adapter();
        let mut out = Vec::new();
        let cases = [
            ("{not json", DiagnosticKind::NotJson),
            ("[1]", DiagnosticKind::NotJson),
            (r#""text""#, DiagnosticKind::NotJson),
            (r#"{"type":3}"#, DiagnosticKind::BadField),
            (r#"{"id":"a"}"#, DiagnosticKind::BadField),
            (r#"{"type":"message"}"#, DiagnosticKind::BadField),
            (
                r#"{"type":"message","message":[]}"#,
                DiagnosticKind::BadField,
            ),
            (
                r#"{"type":"message","message":{"content":"x"}}"#,
                DiagnosticKind::BadField,
            ),
            (
                r#"{"type":"message","message":{"role":1}}"#,
                DiagnosticKind::BadField,
            ),
            (
                r#"{"type":"mystery","id":"a"}"#,
                DiagnosticKind::UnknownEntry,
            ),
            (
                r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read"},{"type":"toolCall","id":"b"}]}}"#,
                DiagnosticKind::BadField,
            ),
        ];
        for (line, kind) in cases {
            let d = a.line(4, line.as_bytes(), &mut out).unwrap_err();
            assert_eq!((d.line, d.kind), (4, kind), "{line}: {}", d.message);
        }
        // The rejected assistant message registered no call: its result is an orphan.
        let d = a.line(5, result("a").as_bytes(), &mut out).unwrap_err();
        assert_eq!(d.kind, DiagnosticKind::Orphan);
        assert!(out.is_empty());
        assert!(a.finish(&mut out).is_empty());
        assert!(out.is_empty());
        // Blank lines are nothing.
        assert_eq!(a.line(6, b"  \r", &mut out), Ok(()));
    }

    #[test]
    fn ignored_entries_and_roles_are_not_tool_calls() {
        let lines = [
            r#"{"type":"model_change","id":"1","provider":"p","modelId":"m"}"#,
            r#"{"type":"thinking_level_change","id":"2","thinkingLevel":"high"}"#,
            r#"{"type":"label","id":"3","targetId":"1","label":"x"}"#,
            r#"{"type":"session_info","id":"4","name":"n"}"#,
            r#"{"type":"custom","id":"5","customType":"c","data":{}}"#,
            r#"{"type":"branch_summary","id":"6","fromId":"1","summary":"s"}"#,
            r#"{"type":"active_tools_change","id":"7","tools":["read"]}"#,
            r#"{"type":"message","id":"8","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":0}}"#,
            r#"{"type":"message","id":"9","message":{"role":"compactionSummary","summary":"s","tokensBefore":1}}"#,
            r#"{"type":"message","id":"10","message":{"role":"system","content":"You are helpful."}}"#,
        ];
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(out.is_empty());
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn bare_gateway_messages_are_read_too() {
        let lines = [
            r#"{"role":"user","content":"hi","__openclaw":{"id":"a","seq":1}}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"/a"}}],"stopReason":"toolUse","timestamp":1788622018101,"__openclaw":{"id":"b","seq":2}}"#,
            r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"A"}],"isError":false,"timestamp":1788622018169}"#,
            r#"{"role":"system","content":[{"type":"text","text":"Compaction"}],"timestamp":1788622019000,"__openclaw":{"kind":"compaction","id":"0a42ff07","seq":28}}"#,
        ];
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let briefs: Vec<String> = out.iter().map(brief).collect();
        assert_eq!(
            briefs,
            [
                "call 2 run-1 c read",
                "outcome 3 run-1 c read",
                "compaction 4 run-1 - -"
            ]
        );
        assert_eq!(out[2].event.timestamp_ms, 1788622019000);
    }

    #[test]
    fn explicit_runs_may_interleave() {
        let lines = [
            assistant(&[("a1", "read")], "toolUse", Some("A")),
            assistant(&[("b1", "read")], "toolUse", Some("B")),
            result("b1"),
            result("a1"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let briefs: Vec<String> = out.iter().map(brief).collect();
        assert_eq!(
            briefs,
            [
                "call 2 B b1 read",
                "outcome 3 B b1 read",
                "call 1 A a1 read",
                "outcome 4 A a1 read"
            ]
        );
    }

    #[test]
    fn a_later_turn_of_the_same_run_gives_up_on_waiting_calls() {
        let lines = [
            USER.to_string(),
            assistant(&[("c1", "read"), ("c2", "read")], "toolUse", None),
            result("c1"),
            assistant(&[("c2", "read")], "toolUse", None),
            result("c2"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        let briefs: Vec<String> = out.iter().map(brief).collect();
        assert_eq!(
            briefs,
            [
                "call 2 run-1 c1 read",
                "outcome 3 run-1 c1 read",
                // The first c2 got no result before the next turn: replayed alone.
                "call 2 run-1 c2 read",
                "call 4 run-1 c2 read",
                "outcome 5 run-1 c2 read"
            ]
        );
        assert_eq!(diags.len(), 1);
        assert_eq!(
            (diags[0].line, diags[0].kind),
            (2, DiagnosticKind::Unanswered)
        );
    }

    #[test]
    fn runs_are_inferred_from_user_messages_and_stop_reasons() {
        let lines = [
            // An assistant message before any user message opens a run of its own.
            assistant(&[("a", "read")], "toolUse", None),
            result("a"),
            assistant(&[], "stop", None),
            // A turn that ended without a user message in between: a new run.
            assistant(&[("b", "read")], "toolUse", None),
            result("b"),
            assistant(&[("c", "read")], "length", None),
            result("c"),
            USER.to_string(),
            // No stopReason, but tool calls: the run goes on.
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"d","name":"read","arguments":{}}]}}"#.to_string(),
            result("d"),
            assistant(&[("e", "read")], "toolUse", None),
            result("e"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let runs: Vec<String> = out
            .iter()
            .step_by(2)
            .map(|e| e.event.run.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(runs, ["run-1", "run-2", "run-2", "run-3", "run-3"]);
    }

    #[test]
    fn compactions_before_any_assistant_wait_for_their_run() {
        // A compaction with nothing after it is emitted by `finish`, in the open run.
        let lines = [
            USER.to_string(),
            r#"{"type":"compaction","timestamp":"2026-09-05T15:33:59.909Z"}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(diags.is_empty());
        assert_eq!(out.len(), 1);
        assert_eq!(brief(&out[0]), "compaction 2 run-1 - -");
        assert_eq!(out[0].event.timestamp_ms, 1788622439909);

        // Before anything at all: no run.
        let (out, _) = feed_lines(&mut adapter(), &[r#"{"type":"compaction"}"#]);
        assert_eq!(brief(&out[0]), "compaction 1 - - -");

        // Followed by an assistant message with a run id: that run.
        let lines = [
            USER.to_string(),
            r#"{"type":"compaction"}"#.to_string(),
            assistant(&[("a", "read")], "toolUse", Some("R")),
            result("a"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, _) = feed_lines(&mut adapter(), &lines);
        let briefs: Vec<String> = out.iter().map(brief).collect();
        assert_eq!(
            briefs,
            [
                "compaction 2 R - -",
                "call 3 R a read",
                "outcome 4 R a read"
            ]
        );
    }

    #[test]
    fn results_keep_details_and_errors_are_their_text() {
        let lines = [
            assistant(&[("a", "exec"), ("b", "read"), ("c", "read")], "toolUse", None),
            r#"{"type":"message","message":{"role":"toolResult","toolCallId":"a","content":[{"type":"text","text":"x"}],"details":{"status":"completed","exitCode":0},"isError":false}}"#.to_string(),
            r#"{"type":"message","message":{"role":"toolResult","toolCallId":"b","content":[{"type":"text","text":"one"},{"type":"image","data":"…"},{"type":"text","text":"two"}],"isError":true}}"#.to_string(),
            // No content, no id: the oldest waiting call.
            r#"{"type":"message","message":{"role":"toolResult","isError":false}}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, diags) = feed_lines(&mut adapter(), &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let want = Value::parse(
            br#"{"content":[{"type":"text","text":"x"}],"details":{"status":"completed","exitCode":0}}"#,
        )
        .unwrap()
        .into_owned();
        assert_eq!(out[1].event.payload, Some(Payload::Result(want)));
        assert_eq!(
            out[3].event.payload,
            Some(Payload::Error(Value::from("one\ntwo")))
        );
        assert_eq!(brief(&out[4]), "call 1 run-1 c read");
        assert_eq!(
            out[5].event.payload,
            Some(Payload::Result(
                Value::parse(br#"{"content":[]}"#).unwrap().into_owned()
            ))
        );
    }

    #[test]
    fn tokens_are_split_evenly_between_the_calls_of_a_message() {
        assert_eq!(usage_tokens(None), None);
        let u = |s: &str| Value::parse(s.as_bytes()).unwrap().into_owned();
        assert_eq!(usage_tokens(Some(&u(r#"{"totalTokens":10}"#))), Some(10));
        assert_eq!(usage_tokens(Some(&u(r#"{"input":3,"output":4}"#))), Some(7));
        assert_eq!(
            usage_tokens(Some(&u(r#"{"totalTokens":0,"input":3}"#))),
            Some(3)
        );
        assert_eq!(usage_tokens(Some(&u(r#"{"totalTokens":-1}"#))), None);
        assert_eq!(usage_tokens(Some(&u(r#""lots""#))), None);

        let line = r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"x"},{"type":"toolCall","id":"b","name":"x"},{"type":"toolCall","id":"c","name":"x"}],"usage":{"totalTokens":10},"stopReason":"toolUse"}}"#;
        let lines = [line.to_string(), result("a"), result("b"), result("c")];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (out, _) = feed_lines(&mut adapter(), &lines);
        let tokens: Vec<Option<u64>> = out.iter().map(|e| e.tokens).collect();
        assert_eq!(tokens, [Some(4), None, Some(3), None, Some(3), None]);
        // Arguments missing: {}.
        assert_eq!(out[0].event.args, Value::empty_object());
    }

    #[test]
    fn too_many_waiting_calls_are_replayed_early_not_kept() {
        use crate::pairing::PENDING_LIMIT;
        let calls: Vec<(String, &str)> = (0..=PENDING_LIMIT)
            .map(|i| (format!("c{i}"), "read"))
            .collect();
        let calls: Vec<(&str, &str)> = calls.iter().map(|(i, n)| (i.as_str(), *n)).collect();
        let line = assistant(&calls, "toolUse", None);
        let mut a = adapter();
        let mut out = Vec::new();
        a.line(1, line.as_bytes(), &mut out).unwrap();
        let d = a.line(2, result("c0").as_bytes(), &mut out).unwrap_err();
        assert_eq!(d.kind, DiagnosticKind::Orphan);
        a.line(3, result("c1").as_bytes(), &mut out).unwrap();
        let diags = a.finish(&mut out);
        assert_eq!(diags.len(), PENDING_LIMIT);
        assert!(diags.iter().all(|d| d.kind == DiagnosticKind::Unanswered));
        // c0 replayed alone when the queue overflowed, c1 with its result, the rest alone.
        assert_eq!(out.len(), 1 + 2 + (PENDING_LIMIT - 1));
        assert_eq!(out[0].event.call_id.as_ref().unwrap().as_str(), Some("c0"));
    }

    #[test]
    fn active_branch_filter_keeps_the_header_and_entries_without_ids() {
        let lines = [
            r#"{"type":"session","version":3,"id":"not-in-the-set"}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read"}],"stopReason":"toolUse"}}"#,
            r#"{"type":"message","id":"c","parentId":"b","message":{"role":"toolResult","toolCallId":"c1","content":[]}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"read"}],"stopReason":"toolUse"}}"#,
            r#"{"type":"message","message":{"role":"toolResult","toolCallId":"c2","content":[]}}"#,
        ];
        let ids: HashSet<String> = ["a".to_string()].into_iter().collect();
        let (out, diags) = feed_lines(&mut adapter().with_active_branch(ids), &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let briefs: Vec<String> = out.iter().map(brief).collect();
        assert_eq!(briefs, ["call 5 run-1 c2 read", "outcome 6 run-1 c2 read"]);
    }

    #[test]
    fn active_branch_ids_survive_cycles_and_bad_lines() {
        let file = b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"b\"}\nnot json\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n\xff\n";
        let ids = active_branch_ids(&file[..]).unwrap();
        assert_eq!(ids.len(), 2);
        // A parent that is not in the file ends the walk.
        let file = br#"{"type":"message","id":"z","parentId":"gone"}"#;
        let ids = active_branch_ids(&file[..]).unwrap();
        assert_eq!(ids, ["z".to_string()].into_iter().collect());
        assert!(active_branch_ids(&b""[..]).unwrap().is_empty());
    }

    #[test]
    fn compaction_events_have_no_tool() {
        let (out, _) = feed_lines(
            &mut adapter(),
            &[r#"{"type":"compaction","id":"x","timestamp":1788622018101}"#],
        );
        assert_eq!(out[0].event.kind, EventKind::Compaction);
        assert_eq!(out[0].event.tool, None);
        assert_eq!(out[0].event.timestamp_ms, 1788622018101);
    }
}
