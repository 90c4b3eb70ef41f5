//! SWE-agent `.traj` and mini-swe-agent `.traj.json`.
//!
//! ## SWE-agent ([`SweAgent`])
//!
//! A `.traj` file is one JSON object: `{"environment", "trajectory":[{"action",
//! "observation", "response", "thought", "state", "execution_time", …}], "history":[…],
//! "info":{…}}`. Each trajectory step is one tool call, emitted with its outcome:
//!
//! * tool = the first word of `action` (an ACI command such as `open`, `edit`,
//!   `find_file`, `submit`, or a shell command), args = `{"command": action}`;
//! * in function-calling runs the `history` assistant messages carry `tool_calls` (Chat
//!   Completions shape) and the same `action`: their real `function.name`, parsed
//!   `function.arguments` and call id are used instead, paired with the trajectory steps in
//!   order (a history message whose `action` differs from the step's is skipped);
//! * result = [`text_result`] of `observation`; SWE-agent has no error flag;
//! * a retry-agent file with `attempts[]` (each a trajectory of its own) gives one run per
//!   attempt (`run-1`, `run-2`, …); its top-level copy of the chosen attempt is not read
//!   twice. Otherwise everything is `run-1`;
//! * no compaction marker, no timestamps, no per-call tokens;
//! * `line` is the 1-based step index (counted across attempts).
//!
//! ## mini-swe-agent ([`MiniSweAgent`])
//!
//! `{"info":{…},"messages":[{role, content, extra?}],"trajectory_format":
//! "mini-swe-agent-1"|"mini-swe-agent-1.1"}` (a bare array of messages, as older versions
//! and the project's own test data have, is read too). `line` is the 1-based message index.
//!
//! * v1 (text actions): the single ```` ```bash ```` (or ```` ```mswea_bash_command ````)
//!   block of an assistant message is a call of tool `bash` with args
//!   `{"command": block}` (trimmed, as mini-swe-agent runs it); its result is the text of
//!   the next user message (`<returncode>N</returncode><output>…</output>`, a timeout
//!   notice, or the submission). A non-zero return code stays a result, as OpenClaw does
//!   for `exec`. When a v1.1 assistant message lists `extra.actions[].command`, those are the
//!   calls, answered by the following user messages in order.
//! * Tool-calling models (v1.1/v2): assistant `tool_calls` are the calls (Chat Completions
//!   shape, arguments parsed leniently) and `{"role":"tool","tool_call_id"}` messages their
//!   results.
//! * **Format errors.** When the model gives no action or several, mini-swe-agent runs
//!   nothing and answers "Please always provide EXACTLY ONE action in triple backticks,
//!   found N actions…" (v1) or "Tool call error: …" (v2). Such a reply is recorded as a call
//!   of the pseudo-tool `format_error` with args `{}` whose outcome is an error with the
//!   reply's text. A model stuck producing the same malformed answer then shows up as the
//!   same call failing the same way again and again, which the repetition detectors catch
//!   (like OpenClaw's `unknown_tool_repeat` path for a missing tool) instead of vanishing
//!   from the replay. A reply is a format error when its text starts with one of those two
//!   phrases, or when the assistant message it answers had no action at all.
//! * A user message that answers no assistant message (the task) is a run boundary.
//! * Tokens: `extra.response.usage` (`total_tokens`, else prompt + completion) split between
//!   the message's calls. Timestamps: `extra.timestamp` or `timestamp` when present.

use std::collections::VecDeque;

use loopguard_core::{Object, Value};
use loopguard_events::Payload;

use crate::common::{
    arguments, content_text, document_error, each_numbered, empty, id_field, str_field,
    text_result, ts_of, PendingCall, Runs, Tracker,
};
use crate::{Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter};

/// The pseudo-tool recording mini-swe-agent format errors.
pub const FORMAT_ERROR_TOOL: &str = "format_error";

fn bad(no: u64, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(no, DiagnosticKind::BadField, message)
}

fn command_args(command: &str) -> Value<'static> {
    Value::Object(Object::from_entries(vec![(
        "command".into(),
        Value::from(command.to_string()),
    )]))
}

/// SWE-agent `.traj` trajectories.
///
/// ```
/// use loopguard_adapters::{swe_agent::SweAgent, Context, DocumentAdapter};
/// let doc = br#"{"environment":"main","trajectory":[{"action":"open \"a.py\"","observation":"[File: a.py]"}],"info":{}}"#;
/// let a = SweAgent.adapt(doc, &Context::default()).unwrap();
/// assert_eq!(a.events.len(), 2);
/// assert_eq!(a.events[0].event.tool.as_ref().unwrap().to_string(), "open");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SweAgent;

/// A function call recorded in a SWE-agent history message.
struct HistoryCall {
    action: Option<String>,
    name: String,
    args: Value<'static>,
    id: Option<String>,
}

fn history_calls(history: Option<&Value<'_>>) -> VecDeque<HistoryCall> {
    let mut calls = VecDeque::new();
    for m in history.and_then(Value::as_array).unwrap_or_default() {
        if str_field(m, "role") != Some("assistant") {
            continue;
        }
        let Some(tc) = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        else {
            continue;
        };
        let function = tc.get("function");
        let Some(name) = function.and_then(|f| str_field(f, "name")) else {
            continue;
        };
        calls.push_back(HistoryCall {
            action: str_field(m, "action").map(str::to_string),
            name: name.to_string(),
            args: arguments(function.and_then(|f| f.get("arguments"))),
            id: id_field(tc, "id"),
        });
    }
    calls
}

impl SweAgent {
    fn attempt(
        &self,
        attempt: &Value<'_>,
        run: &str,
        first_line: u64,
        tracker: &mut Tracker,
        adapted: &mut Adapted,
    ) -> u64 {
        let steps = attempt
            .get("trajectory")
            .and_then(Value::as_array)
            .unwrap_or_default();
        let mut history = history_calls(attempt.get("history"));
        for (i, step) in steps.iter().enumerate() {
            let no = first_line + i as u64;
            let Some(action) = str_field(step, "action").filter(|a| !a.trim().is_empty()) else {
                adapted
                    .diagnostics
                    .push(bad(no, "trajectory step without an `action`; skipped"));
                continue;
            };
            // The history message of this step: the next one with the same action.
            let matched = history.iter().position(|h| {
                h.action
                    .as_deref()
                    .is_none_or(|a| a.trim() == action.trim())
            });
            let mut call = match matched {
                Some(j) => {
                    let h = history.drain(..=j).next_back().expect("drained one");
                    PendingCall::new(no, run, h.id, &h.name, h.args)
                }
                None => {
                    let tool = action.split_whitespace().next().unwrap_or_default();
                    PendingCall::new(no, run, None, tool, command_args(action))
                }
            };
            call.ts = ts_of(step, "timestamp");
            match step.get("observation") {
                Some(o @ (Value::String(_) | Value::Array(_))) => {
                    let payload = Payload::Result(text_result(&content_text(o)));
                    tracker.emit(call, no, payload, 0, &mut adapted.events);
                }
                _ => tracker.replay_alone(call, &mut adapted.events),
            }
        }
        first_line + steps.len() as u64
    }
}

impl DocumentAdapter for SweAgent {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        if value.as_object().is_none() {
            return Err(bad(1, "a .traj file must be a JSON object"));
        }
        let attempts: Vec<&Value<'_>> = value
            .get("attempts")
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter(|a| matches!(a.get("trajectory"), Some(Value::Array(_))))
            .collect();
        let mut tracker = Tracker::new(ctx);
        let mut adapted = Adapted::default();
        if !attempts.is_empty() {
            let mut line = 1;
            for (k, attempt) in attempts.iter().enumerate() {
                let run = format!("run-{}", k + 1);
                line = self.attempt(attempt, &run, line, &mut tracker, &mut adapted);
            }
        } else if matches!(value.get("trajectory"), Some(Value::Array(_))) {
            self.attempt(&value, "run-1", 1, &mut tracker, &mut adapted);
        } else {
            return Err(bad(1, "field `trajectory`: missing or not an array"));
        }
        Ok(tracker.finish_document(adapted))
    }
}

/// mini-swe-agent `.traj.json` trajectories.
///
/// ```
/// use loopguard_adapters::{swe_agent::MiniSweAgent, Context, DocumentAdapter};
/// let doc = br#"{"trajectory_format":"mini-swe-agent-1","messages":[
///   {"role":"system","content":"You are a helpful assistant."},
///   {"role":"user","content":"Fix the bug."},
///   {"role":"assistant","content":"THOUGHT: look\n\n```bash\nls -la\n```"},
///   {"role":"user","content":"<returncode>0</returncode>\n<output>\na.py\n</output>"}]}"#;
/// let a = MiniSweAgent.adapt(doc, &Context::default()).unwrap();
/// assert_eq!(a.events.len(), 2);
/// assert_eq!(a.events[0].event.tool.as_ref().unwrap().to_string(), "bash");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct MiniSweAgent;

/// The fenced code blocks of a text: `(info string, body)`.
fn fenced_blocks(text: &str) -> Vec<(&str, &str)> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let info_end = after
            .find(|c: char| c.is_whitespace())
            .unwrap_or(after.len());
        let info = &after[..info_end];
        let Some(nl) = after[info_end..].find('\n') else {
            break;
        };
        let body_start = info_end + nl + 1;
        let Some(close) = after[body_start..].find("```") else {
            break;
        };
        let body = &after[body_start..body_start + close];
        blocks.push((info, body));
        rest = &after[body_start + close + 3..];
    }
    blocks
}

/// The shell commands of a v1 assistant message, preferring `mswea_bash_command` blocks.
fn bash_actions(text: &str) -> Vec<String> {
    let blocks = fenced_blocks(text);
    for lang in ["mswea_bash_command", "bash"] {
        let found: Vec<String> = blocks
            .iter()
            .filter(|(info, _)| *info == lang)
            .map(|(_, body)| body.trim().to_string())
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

fn is_format_error(text: &str) -> bool {
    let t = text.trim_start().to_ascii_lowercase();
    t.starts_with("please always provide exactly one action") || t.starts_with("tool call error")
}

fn message_tokens(m: &Value<'_>) -> Option<u64> {
    let usage = m.get("extra")?.get("response")?.get("usage")?;
    let n = |k: &str| usage.get(k).and_then(Value::as_f64).filter(|n| *n >= 0.0);
    let total =
        n("total_tokens").or_else(|| match (n("prompt_tokens"), n("completion_tokens")) {
            (None, None) => None,
            (p, c) => Some(p.unwrap_or(0.0) + c.unwrap_or(0.0)),
        })?;
    Some(total as u64)
}

fn message_ts(m: &Value<'_>) -> u64 {
    match m.get("extra") {
        Some(extra) if extra.get("timestamp").is_some() => ts_of(extra, "timestamp"),
        _ => ts_of(m, "timestamp"),
    }
}

/// What an assistant message asked for, waiting for the user messages that answer it.
/// The commands themselves wait in the shared pairing, answered by position.
struct Awaiting {
    line: u64,
    ts: u64,
    tokens: Option<u64>,
    /// Commands still to be answered.
    waiting: usize,
    /// The message had no action: its reply is a format error.
    no_action: bool,
}

struct MiniState {
    tracker: Tracker,
    runs: Runs,
    awaiting: Option<Awaiting>,
}

impl MiniState {
    fn assistant(&mut self, no: u64, m: &Value<'_>, out: &mut Vec<crate::SourcedEvent>) {
        // Calls of the last assistant message that got no reply are replayed alone.
        self.awaiting = None;
        self.tracker.end_turn(out);
        let ts = message_ts(m);
        let tokens = message_tokens(m);
        let run = self.runs.current();
        if let Some(calls) = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            let n = calls.len() as u64;
            for (i, tc) in calls.iter().enumerate() {
                self.tracker
                    .tool_call(no, i, tc, &run, ts, tokens.map(|t| t / n), out);
            }
            self.runs.used();
            return;
        }
        let commands: Vec<(Option<String>, String)> =
            match m.get("extra").and_then(|e| e.get("actions")) {
                Some(Value::Array(actions)) => actions
                    .iter()
                    .filter_map(|a| {
                        let command = str_field(a, "command")?;
                        Some((id_field(a, "tool_call_id"), command.to_string()))
                    })
                    .collect(),
                _ => {
                    let text = content_text(m.get("content").unwrap_or(&Value::Null));
                    let actions = bash_actions(&text);
                    // mini-swe-agent runs an action only when there is exactly one; with
                    // several, its reply tells whether it saw one (its pattern may differ).
                    actions.into_iter().take(1).map(|c| (None, c)).collect()
                }
            };
        let n = commands.len();
        for (id, command) in commands {
            let mut call = PendingCall::new(no, &run, id.clone(), "bash", command_args(&command));
            call.ts = ts;
            call.tokens = tokens.map(|t| t / n as u64);
            self.tracker.call(id, call, out);
        }
        self.awaiting = Some(Awaiting {
            line: no,
            ts,
            tokens,
            waiting: n,
            no_action: n == 0,
        });
    }

    fn user(&mut self, no: u64, m: &Value<'_>, out: &mut Vec<crate::SourcedEvent>) {
        let ts = message_ts(m);
        let Some(mut a) = self.awaiting.take() else {
            self.tracker.end_turn(out);
            self.runs.boundary();
            return;
        };
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        let run = self.runs.current();
        self.runs.used();
        if a.no_action || is_format_error(&text) {
            // mini-swe-agent ran nothing: the commands waiting are withdrawn, and the reply
            // is the outcome of a `format_error` pseudo-call.
            for _ in 0..a.waiting {
                self.tracker.take(None);
            }
            let mut call = PendingCall::new(a.line, &run, None, FORMAT_ERROR_TOOL, empty());
            call.ts = a.ts;
            call.tokens = a.tokens;
            self.tracker
                .emit(call, no, Payload::Error(Value::from(text)), ts, out);
            a.waiting = 0;
        } else if a.waiting > 0 {
            // The next user message answers the oldest waiting command.
            self.tracker
                .result(no, None, Payload::Result(text_result(&text)), ts, out);
            a.waiting -= 1;
        }
        if a.waiting > 0 {
            self.awaiting = Some(a);
        }
    }

    fn message(
        &mut self,
        no: u64,
        m: &Value<'_>,
        out: &mut Vec<crate::SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if m.as_object().is_none() {
            return Err(bad(no, "a message must be a JSON object"));
        }
        match str_field(m, "role") {
            Some("assistant") => self.assistant(no, m, out),
            Some("user") => self.user(no, m, out),
            Some("tool") => self.tracker.tool_message(no, m, message_ts(m), out),
            Some(_) => {}
            None => return Err(bad(no, "field `role`: missing or not a string")),
        }
        Ok(())
    }
}

impl DocumentAdapter for MiniSweAgent {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        let messages = match &value {
            Value::Array(items) => items.as_slice(),
            Value::Object(_) => match value.get("messages") {
                Some(Value::Array(items)) => items.as_slice(),
                _ => return Err(bad(1, "field `messages`: missing or not an array")),
            },
            _ => return Err(bad(1, "a .traj.json file must be a JSON object")),
        };
        let mut state = MiniState {
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
            awaiting: None,
        };
        let mut adapted = Adapted::default();
        each_numbered(messages, &mut adapted, |no, m, out| {
            state.message(no, m, out)
        });
        Ok(state.tracker.finish_document(adapted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn ctx() -> Context {
        Context {
            session: "s".into(),
            agent: None,
        }
    }

    fn tool(e: &crate::SourcedEvent) -> String {
        e.event.tool.as_ref().unwrap().to_string()
    }

    #[test]
    fn blocks_and_format_errors() {
        assert_eq!(
            fenced_blocks("a\n```bash\nls\n```\nb ```python\nx\n```"),
            [("bash", "ls\n"), ("python", "x\n")]
        );
        assert_eq!(bash_actions("```bash\n  ls -la \n```"), ["ls -la"]);
        assert_eq!(
            bash_actions("```bash\nno\n```\n```mswea_bash_command\nyes\n```"),
            ["yes"]
        );
        assert!(bash_actions("```\nplain\n```").is_empty());
        assert!(is_format_error(
            "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
        ));
        assert!(!is_format_error("<returncode>0</returncode>"));
    }

    #[test]
    fn swe_agent_uses_history_tool_calls() {
        let doc = br#"{"trajectory":[
            {"action":"find_file missing_colon.py","observation":"Found 1 matches"},
            {"action":"python reproduce.py","observation":"344"},
            {"action":"","observation":"x"},
            {"action":"submit"}],
          "history":[
            {"role":"assistant","content":"t","action":"find_file missing_colon.py","tool_calls":[{"id":"call_1","type":"function","function":{"name":"find_file","arguments":"{\"file_name\":\"missing_colon.py\"}"}}]},
            {"role":"tool","content":"Found","tool_call_ids":["call_1"]},
            {"role":"assistant","content":"t","action":"python reproduce.py"}],
          "info":{"exit_status":"submitted"}}"#;
        let a = SweAgent.adapt(doc, &ctx()).unwrap();
        // Two calls with their results, and `submit` (no observation) alone.
        assert_eq!(a.events.len(), 5);
        assert_eq!(tool(&a.events[4]), "submit");
        assert_eq!(
            a.events[0].event.args,
            Value::parse(br#"{"file_name":"missing_colon.py"}"#).unwrap()
        );
        assert_eq!(
            a.events[0].event.call_id.as_ref().unwrap().to_string(),
            "call_1"
        );
        assert_eq!(tool(&a.events[2]), "python");
        assert_eq!(
            a.events[2].event.args,
            Value::parse(br#"{"command":"python reproduce.py"}"#).unwrap()
        );
        let kinds: Vec<_> = a.diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (3, DiagnosticKind::BadField),
                (4, DiagnosticKind::Unanswered)
            ]
        );
    }

    #[test]
    fn swe_agent_attempts_are_runs() {
        let step = r#"{"action":"ls","observation":"a"}"#;
        let doc = format!(
            r#"{{"attempts":[{{"trajectory":[{step}]}},{{"trajectory":[{step},{step}]}}],"trajectory":[{step},{step}]}}"#
        );
        let a = SweAgent.adapt(doc.as_bytes(), &ctx()).unwrap();
        let runs: Vec<_> = a
            .events
            .iter()
            .map(|e| (e.line, e.event.run.as_ref().unwrap().to_string()))
            .collect();
        assert_eq!(runs[0], (1, "run-1".to_string()));
        assert_eq!(runs[2], (2, "run-2".to_string()));
        assert_eq!(runs[5], (3, "run-2".to_string()));
        assert_eq!(a.events.len(), 6);
    }

    #[test]
    fn mini_v1_format_error_and_unanswered() {
        let doc = br#"[{"role":"system","content":"s"},{"role":"user","content":"task"},
          {"role":"assistant","content":"```bash\nls\n```\n```bash\npwd\n```"},
          {"role":"user","content":"Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
          {"role":"assistant","content":"no block"},
          {"role":"user","content":"Something else entirely"},
          {"role":"assistant","content":"```bash\nls\n```"},
          {"role":"user","content":"<returncode>1</returncode>\n<output>\nerr\n</output>"},
          {"role":"assistant","content":"```bash\nsleep 99\n```"}]"#;
        let a = MiniSweAgent.adapt(doc, &ctx()).unwrap();
        let tools: Vec<_> = a.events.iter().map(tool).collect();
        assert_eq!(
            tools,
            [
                "format_error",
                "format_error",
                "format_error",
                "format_error",
                "bash",
                "bash",
                // `sleep 99` got no observation: replayed without an outcome.
                "bash"
            ]
        );
        assert_eq!(a.events[6].event.kind, EventKind::Call);
        assert_eq!(a.events[6].line, 9);
        assert_eq!(a.events[0].line, 3);
        assert_eq!(a.events[1].line, 4);
        assert!(matches!(a.events[1].event.payload, Some(Payload::Error(_))));
        assert_eq!(a.events[4].event.kind, EventKind::Call);
        assert!(matches!(
            a.events[5].event.payload,
            Some(Payload::Result(_))
        ));
        let kinds: Vec<_> = a.diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(kinds, [(9, DiagnosticKind::Unanswered)]);
    }

    #[test]
    fn mini_v2_tool_calls_and_actions() {
        let doc = br#"{"trajectory_format":"mini-swe-agent-1.1","messages":[
          {"role":"user","content":"task"},
          {"role":"assistant","content":"","tool_calls":[
             {"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}},
             {"id":"c2","type":"function","function":{"name":"bash","arguments":"{\"command\": \"pwd\"}"}}],
           "extra":{"actions":[{"command":"ls","tool_call_id":"c1"}],"timestamp":1780680349.44,
                    "response":{"usage":{"completion_tokens":76,"prompt_tokens":1689,"total_tokens":1765}}}},
          {"role":"tool","tool_call_id":"c2","content":"<returncode>0</returncode>"},
          {"role":"tool","tool_call_id":"c1","content":"<returncode>0</returncode>"},
          {"role":"assistant","content":"x","extra":{"actions":[{"command":"a"},{"command":"b"}]}},
          {"role":"user","content":"A"},
          {"role":"user","content":"B"},
          {"role":"exit","content":"","extra":{"exit_status":"Submitted"}}]}"#;
        let a = MiniSweAgent.adapt(doc, &ctx()).unwrap();
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        assert_eq!(a.events.len(), 8);
        assert_eq!(a.events[0].tokens, Some(882));
        assert_eq!(a.events[0].event.timestamp_ms, 1780680349440);
        assert_eq!(
            a.events[0].event.call_id.as_ref().unwrap().to_string(),
            "c2"
        );
        assert_eq!(
            a.events[5].event.args,
            Value::parse(br#"{"command":"a"}"#).unwrap()
        );
        assert_eq!(a.events[7].line, 7);
    }
}
