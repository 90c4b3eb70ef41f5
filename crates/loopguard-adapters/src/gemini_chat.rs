//! Gemini CLI's chat records.
//!
//! Files: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl` (Gemini CLI 0.61; the
//! `tmp` folder moves with `GEMINI_CLI_HOME`). One JSON object per line: a header
//! `{sessionId, projectHash, startTime, lastUpdated, kind}`, then messages
//! `{id, timestamp, type, content, …}` and updates `{"$set": {…}}`. A message is written
//! again, whole, each time it changes (same `id`): a `gemini` message first without its
//! tool calls, then with them, each call carrying its own result once it ran.
//!
//! | record | becomes |
//! |--------|---------|
//! | `gemini` message, `toolCalls[]` entry `{id, name, args, status, result: [{functionResponse: {response}}]}` with a result | a call and its outcome, once per call `id`: `response.output` (or the whole `response`) as the result when `status` is `success`, `response.error` as a failure otherwise |
//! | a `toolCalls` entry without a result yet | waits for the message to be written again; still without one at the next prompt or the end of the file: replayed alone (the hook saw it before it ran) and reported |
//! | `user` message without `functionResponse` parts (a prompt) | a run boundary |
//! | `$set` with `messages` | each message, as above (calls already read are not read again) |
//! | the header, other `$set` updates, `user` messages carrying tool results, `info`, `error`, `warning` messages | ignored |
//! | a record of another shape | an `UnknownEntry` diagnostic |
//!
//! Tools are mapped by Gemini CLI's row of the agents' tool table (`run_shell_command` is
//! `Bash` without its `description`; its `Exit Code:` read, `Process Group PGID:` dropped)
//! and judged with the `claude-code` profile, as `loopguard hook gemini` judges them; a
//! call the hook refused (`Tool execution blocked: CRITICAL: …`) is a refusal (see
//! `agent_log`). Tokens: the message's `tokens.total`, split between its calls.
//!
//! **Sub-agents.** Gemini CLI 0.61 writes a sub-agent's chat to a file of its own,
//! `chats/<parent session id>/<agent id>.jsonl`, whose header says `kind: "subagent"` and
//! whose `sessionId` is the agent's id; the header does not name the parent, the folder does.
//! Such a file's calls are a session of their own, `PARENT/<agent id>`, linked to the parent
//! (`parentSession` = `PARENT`), as Claude Code's sidechains are: the sub-agent keeps its own
//! loop state and the parent's budgets count its calls. `PARENT` is the name replay gives the
//! parent's own file, `chats/session-<time>-<first 8 characters of the id>.jsonl`, its name
//! without `.jsonl` (the one such file beside the folder), else the parent's session id (the
//! folder's name). Read without its path (standard input), a sub-agent's chat keeps the
//! session it was given and says so.
//!
//! Older Gemini CLI versions wrote the same messages as one JSON document, `{sessionId,
//! projectHash, startTime, lastUpdated, messages: […]}` (`session-*.json`):
//! [`GeminiChatFile`] reads it with the same rules, `line` being the message's number.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use loopguard_core::{JsString, Value};

use crate::agent_log::{tokens_per_call, AgentLog, Ended};
use crate::common::object_line;
use crate::common::{arguments, content_text, id_field, str_field, ts_of};
use crate::{
    Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, LineAdapter, SourcedEvent,
};

/// At most this many call ids are remembered (older ones could be read twice).
const SEEN_LIMIT: usize = 65_536;

/// Gemini CLI chat records (JSON Lines).
///
/// ```
/// use loopguard_adapters::{gemini_chat::GeminiChatAdapter, Context, LineAdapter};
/// let mut a = GeminiChatAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"id":"m1","timestamp":"2026-01-01T00:00:00Z","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"ls","description":"List"},"status":"success","result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"Output: a\nProcess Group PGID: 7"}}}]}]}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out[0].event.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
/// assert_eq!(out[0].profile, Some("claude-code"));
/// ```
#[derive(Debug)]
pub struct GeminiChatAdapter {
    log: AgentLog,
    done: HashSet<String>,
    /// Calls written without their result yet.
    waiting: Vec<Waiting>,
    /// The file read, whose folder names a sub-agent's parent.
    file: Option<PathBuf>,
    /// A sub-agent's chat: its session and its parent's.
    link: Option<(String, String)>,
}

/// A call written without its result yet.
#[derive(Debug)]
struct Waiting {
    id: String,
    line: u64,
    tool: String,
    args: Value<'static>,
    ts: u64,
    tokens: Option<u64>,
}

impl GeminiChatAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        GeminiChatAdapter {
            log: AgentLog::new("gemini", &ctx),
            done: HashSet::new(),
            waiting: Vec::new(),
            file: None,
            link: None,
        }
    }

    /// The same, reading the file at `path`: a sub-agent's chat there is linked to its
    /// parent by its folder (see the module's documentation).
    pub fn in_file(mut self, path: &Path) -> Self {
        self.file = Some(path.to_path_buf());
        self
    }

    /// A header: a sub-agent's links its calls to the parent's session.
    fn header(&mut self, no: u64, v: &Value<'_>) -> Result<(), Diagnostic> {
        if str_field(v, "kind") != Some("subagent") {
            return Ok(());
        }
        let agent = id_field(v, "sessionId").unwrap_or_else(|| "subagent".into());
        match self.file.as_deref().and_then(subagent_parent) {
            Some(parent) => {
                self.link = Some((format!("{parent}/{agent}"), parent));
                Ok(())
            }
            None => Err(Diagnostic::new(
                no,
                DiagnosticKind::Partial,
                format!(
                    "sub-agent {agent}: its parent session is named by the folder its chat lies in (`chats/<parent>/<agent>.jsonl`), which is not known here; its calls stay in this session"
                ),
            )),
        }
    }

    /// Moves the events of a sub-agent's chat to its own session, linked to its parent's.
    fn linked(&self, events: &mut [SourcedEvent]) {
        if let Some((session, parent)) = &self.link {
            for e in events {
                e.event.session = Some(JsString::from(session.clone()));
                e.event.parent_session = Some(JsString::from(parent.clone()));
            }
        }
    }

    /// One message (a line, or an entry of `$set.messages` or of an older chat file).
    fn message(&mut self, no: u64, v: &Value<'_>, out: &mut Vec<SourcedEvent>) {
        let ts = ts_of(v, "timestamp");
        match str_field(v, "type") {
            Some("gemini") => self.gemini(no, v, ts, out),
            Some("user") => {
                let results = v
                    .get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()));
                if !results {
                    self.flush_waiting(out);
                    self.log.prompt(out);
                }
            }
            _ => {}
        }
    }

    fn gemini(&mut self, no: u64, v: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        let Some(calls) = v.get("toolCalls").and_then(Value::as_array) else {
            return;
        };
        let tokens = tokens_per_call(
            v.get("tokens")
                .and_then(|t| t.get("total"))
                .and_then(Value::as_f64),
            calls.len(),
        );
        for (i, c) in calls.iter().enumerate() {
            let Some(id) = id_field(c, "id") else {
                self.log.tracker.diagnose(
                    no,
                    DiagnosticKind::BadField,
                    format!("toolCalls[{i}]: no `id`; skipped"),
                );
                continue;
            };
            if self.done.contains(&id) {
                continue;
            }
            let Some(name) = str_field(c, "name") else {
                self.log.tracker.diagnose(
                    no,
                    DiagnosticKind::BadField,
                    format!("toolCalls[{i}] ({id}): no `name`; skipped"),
                );
                self.done.insert(id);
                continue;
            };
            let Some(response) = response_of(c) else {
                // Not run yet: the message is written again when it has.
                if !self.waiting.iter().any(|w| w.id == id) {
                    self.waiting.push(Waiting {
                        id,
                        line: no,
                        tool: name.to_string(),
                        args: arguments(c.get("args")),
                        ts,
                        tokens,
                    });
                }
                continue;
            };
            self.waiting.retain(|w| w.id != id);
            if self.done.len() >= SEEN_LIMIT {
                self.done.clear();
            }
            self.done.insert(id.clone());
            let args = arguments(c.get("args"));
            let call_ts = ts_of(c, "timestamp").max(ts);
            self.log
                .call(no, Some(id.clone()), name, &args, ts, tokens, out);
            let ended = if str_field(c, "status") == Some("success") {
                Ended::Result(
                    response
                        .get("output")
                        .cloned()
                        .unwrap_or_else(|| response.clone())
                        .into_owned(),
                )
            } else {
                let err = response.get("error").unwrap_or(response);
                let text = match err {
                    Value::String(_) | Value::Array(_) => content_text(err),
                    other => str_field(other, "message")
                        .map(str::to_string)
                        .unwrap_or_else(|| {
                            let mut b = Vec::new();
                            crate::common::write_value(&mut b, other);
                            String::from_utf8_lossy(&b).into_owned()
                        }),
                };
                Ended::Failed(text)
            };
            self.log.ended(no, Some(&id), ended, call_ts, out);
        }
    }

    /// Calls still without a result: replayed alone when their turn ends (the pairing
    /// reports them).
    fn flush_waiting(&mut self, out: &mut Vec<SourcedEvent>) {
        for w in std::mem::take(&mut self.waiting) {
            self.done.insert(w.id.clone());
            self.log
                .call(w.line, Some(w.id), &w.tool, &w.args, w.ts, w.tokens, out);
        }
    }
}

/// The `response` of a tool call's first `functionResponse`.
fn response_of<'v>(c: &'v Value<'v>) -> Option<&'v Value<'v>> {
    c.get("result")?
        .as_array()?
        .iter()
        .find_map(|r| r.get("functionResponse"))?
        .get("response")
}

/// The session a sub-agent chat at `path` (`chats/<parent id>/<agent>.jsonl`) is linked to:
/// the name of the parent's own file beside the folder (`chats/session-*-<first 8
/// characters of the parent id>.jsonl`, without `.jsonl`) when exactly one is there, else the
/// parent id. `None` for a file in no folder.
pub fn subagent_parent(path: &Path) -> Option<String> {
    let folder = path.parent()?;
    let id = folder.file_name()?.to_string_lossy().into_owned();
    let short: String = id.chars().take(8).collect();
    let found: Vec<String> = folder
        .parent()
        .and_then(|chats| std::fs::read_dir(chats).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".jsonl")?;
            (stem.starts_with("session-") && stem.ends_with(&format!("-{short}")))
                .then(|| stem.to_string())
        })
        .collect();
    Some(match <[String; 1]>::try_from(found) {
        Ok([stem]) => stem,
        Err(_) => id,
    })
}

/// `true` for a record of Gemini CLI's chat files: the header, a `$set` update, or a
/// message of one of its types.
pub(crate) fn is_record(v: &Value<'_>) -> bool {
    if v.get("$set").is_some() {
        return true;
    }
    if v.get("projectHash").is_some() && v.get("sessionId").is_some() {
        return true;
    }
    v.get("id").is_some()
        && v.get("content").is_some()
        && matches!(str_field(v, "type"), Some("gemini"))
}

impl LineAdapter for GeminiChatAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Gemini CLI chat record")? else {
            return Ok(());
        };
        if let Some(set) = v.get("$set") {
            if let Some(messages) = set.get("messages").and_then(Value::as_array) {
                let start = out.len();
                for m in messages {
                    self.message(no, m, out);
                }
                self.linked(&mut out[start..]);
            }
            return Ok(());
        }
        if v.get("projectHash").is_some() && v.get("sessionId").is_some() {
            return self.header(no, &v);
        }
        match str_field(&v, "type") {
            Some("gemini" | "user") => {
                let start = out.len();
                self.message(no, &v, out);
                self.linked(&mut out[start..]);
            }
            Some("info" | "error" | "warning") => {}
            other => {
                return Err(Diagnostic::new(
                    no,
                    DiagnosticKind::UnknownEntry,
                    format!("unknown Gemini CLI record (type {other:?}); skipped"),
                ))
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let start = out.len();
        self.flush_waiting(out);
        let diagnostics = self.log.finish(out);
        self.linked(&mut out[start..]);
        diagnostics
    }
}

/// Older Gemini CLI chat files: one JSON document with a `messages` array.
#[derive(Clone, Copy, Debug, Default)]
pub struct GeminiChatFile;

/// `true` for an older Gemini CLI chat file (`sessionId`, `projectHash`, `messages`).
pub(crate) fn is_chat_file(v: &Value<'_>) -> bool {
    v.get("projectHash").is_some()
        && v.get("sessionId").is_some()
        && matches!(v.get("messages"), Some(Value::Array(_)))
}

impl DocumentAdapter for GeminiChatFile {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let v =
            loopguard_core::json::parse(doc).map_err(|e| crate::common::document_error(doc, &e))?;
        let Some(messages) = v.get("messages").and_then(Value::as_array) else {
            return Err(Diagnostic::new(
                1,
                DiagnosticKind::BadField,
                "field `messages`: a Gemini CLI chat file needs a `messages` array",
            ));
        };
        let mut a = GeminiChatAdapter::new(ctx.clone());
        let mut events = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            a.message(i as u64 + 1, m, &mut events);
        }
        let diagnostics = a.finish(&mut events);
        Ok(Adapted {
            events,
            diagnostics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn gemini(id: &str, call: &str, result: Option<&str>) -> String {
        let result = result.map_or(String::new(), |r| {
            format!(r#","status":"success","result":[{{"functionResponse":{{"id":"{call}","name":"read_file","response":{{"output":"{r}"}}}}}}]"#)
        });
        format!(
            r#"{{"id":"{id}","timestamp":"2026-01-01T00:00:00Z","type":"gemini","content":"","toolCalls":[{{"id":"{call}","name":"read_file","args":{{"path":"a"}}{result}}}]}}"#
        )
    }

    #[test]
    fn a_call_is_read_once_when_its_message_is_written_again_with_the_result() {
        let lines = [
            gemini("m1", "c1", None),
            gemini("m1", "c1", Some("x")),
            gemini("m1", "c1", Some("x")),
            r#"{"$set":{"lastUpdated":"2026-01-01T00:00:01Z"}}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut a = GeminiChatAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let kinds: Vec<_> = events.iter().map(|e| e.event.kind).collect();
        assert_eq!(kinds, [EventKind::Call, EventKind::Outcome]);
    }

    #[test]
    fn a_call_that_never_got_its_result_is_replayed_alone_at_the_next_prompt() {
        let lines = [
            gemini("m1", "c1", None),
            r#"{"id":"u2","timestamp":"2026-01-01T00:00:02Z","type":"user","content":[{"text":"next"}]}"#.to_string(),
            gemini("m2", "c2", Some("y")),
            r#"{"kind":"main","sessionId":"s","projectHash":"h"}"#.to_string(),
            r#"{"type":"surprise","id":"z"}"#.to_string(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut a = GeminiChatAdapter::new(Context::default());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        let runs: Vec<String> = events
            .iter()
            .map(|e| e.event.run.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(runs, ["run-1", "run-2", "run-2"]);
        let kinds: Vec<_> = diags.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (5, DiagnosticKind::UnknownEntry),
                (1, DiagnosticKind::Unanswered)
            ]
        );
    }

    /// A parent chat and its sub-agent's, laid out as Gemini CLI 0.61 writes them.
    fn chats(dir: &Path, parent_file: bool) -> PathBuf {
        let parent = "9f1c2d3e-1111-4222-8333-444455556666";
        let chats = dir.join("chats");
        std::fs::create_dir_all(chats.join(parent)).unwrap();
        if parent_file {
            std::fs::write(chats.join("session-2026-12-07T17-53-9f1c2d3e.jsonl"), "").unwrap();
        }
        // Another session's file, which must not be taken for the parent's.
        std::fs::write(chats.join("session-2026-12-07T17-50-0a0b0c0d.jsonl"), "").unwrap();
        chats.join(parent).join("a7e0.jsonl")
    }

    fn subagent_lines() -> Vec<String> {
        vec![
            r#"{"sessionId":"a7e0","projectHash":"h","startTime":"2026-12-07T17:54:00.000Z","lastUpdated":"2026-12-07T17:54:00.000Z","kind":"subagent","directories":["/w"]}"#.to_string(),
            r#"{"id":"u1","timestamp":"2026-12-07T17:54:00.000Z","type":"user","content":[{"text":"investigate"}]}"#.to_string(),
            gemini("m1", "c1", None),
            gemini("m1", "c1", Some("x")),
            gemini("m2", "c2", None),
        ]
    }

    fn sessions(events: &[SourcedEvent]) -> Vec<(String, Option<String>)> {
        let s = |v: &Option<JsString>| v.as_ref().map(|s| s.to_string());
        events
            .iter()
            .map(|e| (s(&e.event.session).unwrap(), s(&e.event.parent_session)))
            .collect()
    }

    #[test]
    fn a_subagent_chat_is_a_session_of_its_own_linked_to_its_parents_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = chats(dir.path(), true);
        let lines = subagent_lines();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let ctx = Context {
            session: "a7e0".into(),
            agent: None,
        };
        let mut a = GeminiChatAdapter::new(ctx).in_file(&path);
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        let parent = "session-2026-12-07T17-53-9f1c2d3e";
        let linked = (format!("{parent}/a7e0"), Some(parent.to_string()));
        // c1's call and outcome, then c2 replayed alone at the end (reported).
        assert_eq!(sessions(&events), vec![linked.clone(); 3]);
        assert_eq!(
            diags.iter().map(|d| d.kind).collect::<Vec<_>>(),
            [DiagnosticKind::Unanswered]
        );
    }

    #[test]
    fn without_the_parents_file_the_folder_names_the_parent() {
        let dir = tempfile::tempdir().unwrap();
        let path = chats(dir.path(), false);
        let lines = subagent_lines();
        let lines: Vec<&str> = lines[..4].iter().map(String::as_str).collect();
        let mut a = GeminiChatAdapter::new(Context::default()).in_file(&path);
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        assert!(diags.is_empty(), "{diags:?}");
        let parent = "9f1c2d3e-1111-4222-8333-444455556666";
        assert_eq!(
            sessions(&events),
            vec![(format!("{parent}/a7e0"), Some(parent.to_string())); 2]
        );
    }

    #[test]
    fn a_main_chat_and_a_subagent_chat_without_its_path_stay_unlinked() {
        let mut lines = subagent_lines();
        lines.truncate(4);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let ctx = || Context {
            session: "s".into(),
            agent: None,
        };
        let mut a = GeminiChatAdapter::new(ctx());
        let (events, diags) = crate::feed_lines(&mut a, &lines);
        assert_eq!(sessions(&events), vec![("s".to_string(), None); 2]);
        assert_eq!(
            diags.iter().map(|d| (d.line, d.kind)).collect::<Vec<_>>(),
            [(1, DiagnosticKind::Partial)]
        );
        // A main session's header links nothing, even read from a sub-agent folder's path.
        let mut main = lines.clone();
        let header = main[0].replace(r#""kind":"subagent""#, r#""kind":"main""#);
        main[0] = &header;
        let dir = tempfile::tempdir().unwrap();
        let mut a = GeminiChatAdapter::new(ctx()).in_file(&chats(dir.path(), true));
        let (events, diags) = crate::feed_lines(&mut a, &main);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(sessions(&events), vec![("s".to_string(), None); 2]);
    }
}
