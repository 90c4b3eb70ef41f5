//! Claude Code session JSONL.
//!
//! Files: `~/.claude/projects/<cwd with / replaced by ->/<sessionId>.jsonl`; subagents in
//! `agent-<id>.jsonl` or, in newer versions, `<sessionId>/subagents/agent-<id>.jsonl`. One
//! JSON object per line: `{"type","uuid","parentUuid","sessionId","timestamp","isSidechain",
//! "message":{…},…}`.
//!
//! | line | becomes |
//! |------|---------|
//! | `assistant`, `message.content[]` block `{"type":"tool_use","id","name","input"}` | a call; the name is kept whole (`mcp__server__tool` included), args = `input` |
//! | `user`, block `{"type":"tool_result","tool_use_id","content","is_error"?}` | the outcome of that call, as the hook's `PostToolUse` would carry it: `is_error: true` → an error with the content text, or, when the text is loopguard's own deny (`CRITICAL: …`, see [`crate::common::loopguard_refusal`]), OpenClaw's loop veto, so a call the hook blocked stays blocked in replay; otherwise the line's structured (object) top-level `toolUseResult` when it has one and a single `tool_result` block (Claude Code's `tool_response`), else the content text. Replay maps it with the Claude Code tool profile of `loopguard-guard`, exactly as the hook does (volatile fields such as `durationMs` are dropped there) |
//! | `user` without `tool_result` blocks, not `isMeta`/`isCompactSummary` | a run boundary (`run-1`, `run-2`, …; a new run starts only when the current one made calls) |
//! | `system` with `subtype:"compact_boundary"` | a compaction |
//! | `isMeta` / `isCompactSummary` user lines, other `system` subtypes, `summary`, `file-history-snapshot`, `queue-operation`, `progress`, `attachment` and other bookkeeping types | ignored |
//! | any other type | an `UnknownEntry` diagnostic |
//!
//! * **Split responses.** Claude Code writes one API response as several lines (one per
//!   content block) that share `message.id`, each repeating the message's `usage`; some
//!   versions repeat earlier blocks. A `tool_use` id seen before is not a new call.
//! * **Sidechains.** Lines with `isSidechain: true` belong to a subagent (the Task tool).
//!   They get runs of their own so they never mix with the main run: `sidechain-<agentId>`
//!   when the line names its `agentId`, else `sidechain-1`, `sidechain-2`, … (a new one at
//!   each subagent prompt). Like the hook, which gives a subagent's calls a session of
//!   their own (`SESSION/<agent_id>`), each sidechain is a session of its own,
//!   `SESSION/<agentId>` (else `SESSION/sidechain-N`), whose `parentSession` is the
//!   transcript's: the subagent keeps its own loop state, and the parent's budgets count its
//!   calls.
//! * **Subagents in newer versions** are written to their own file (read it as a session
//!   of its own) and mirrored in the main file as `progress` lines (`data.type:
//!   "agent_progress"`), which are ignored here so the subagent's calls are not counted
//!   twice.
//! * **Parallel calls.** Claude Code sometimes writes the `tool_result` line of a parallel
//!   call before that call's `tool_use` line; results pair with calls by `tool_use_id` in any
//!   order (the shared pairing holds such a result until its call is read). A call still
//!   waiting when the next prompt of its lane (main or subagents) comes, or at the end of
//!   the file, is replayed without an outcome.
//! * `server_tool_use` blocks (tools Anthropic runs server-side, answered inside the same
//!   message) are not tool calls of the agent and are ignored.
//! * **Tokens** of a call: `message.usage` (`input_tokens + output_tokens +
//!   cache_creation_input_tokens + cache_read_input_tokens`, the largest value seen on the
//!   lines of that `message.id`, as split lines may carry a partial count) divided evenly
//!   (rounded down) between the message's tool calls, counted when the call is emitted.
//! * **Timestamps** from each line's ISO `timestamp`.
//!
//! A line that cannot be used at all returns its diagnostic; problems inside a usable line
//! (a `tool_use` without a name) and unpaired calls and results are returned by `finish`,
//! in line order. Memory stays bounded: at most 4096 waiting calls, 4096 remembered
//! `tool_use` ids and 64 remembered messages.

use std::collections::{HashSet, VecDeque};

use loopguard_core::{JsString, Value};
use loopguard_events::Payload;

use crate::common::{
    content_text, id_field, str_field, tool_use_parts, ts_of, usage_tokens, PendingCall, Runs,
    Tracker,
};
use crate::common::{line_type, object_line};
use crate::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};

/// `tool_use` ids remembered for de-duplication.
const SEEN_LIMIT: usize = 4096;
/// Messages whose usage is remembered.
const MESSAGE_LIMIT: usize = 64;

/// Line types that are not conversation.
const BOOKKEEPING: &[&str] = &[
    "summary",
    "file-history-snapshot",
    "file-history-delta",
    "queue-operation",
    "progress",
    "attachment",
    "last-prompt",
    "mode",
    "custom-title",
    "agent-name",
    "tag",
];

/// What is remembered of one model message.
#[derive(Clone, Debug)]
struct MessageUsage {
    id: String,
    tokens: Option<u64>,
    tool_uses: u64,
}

/// A bounded set of recently seen ids.
#[derive(Clone, Debug, Default)]
struct Recent {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Recent {
    /// Adds `id`; `false` when it was already there.
    fn insert(&mut self, id: &str) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() >= SEEN_LIMIT {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.set.insert(id.to_string());
        self.order.push_back(id.to_string());
        true
    }
}

/// Claude Code session JSONL.
///
/// ```
/// use loopguard_adapters::{claude_code::ClaudeCodeAdapter, Context, LineAdapter};
/// let mut a = ClaudeCodeAdapter::new(Context { session: "s".into(), agent: None });
/// let mut out = Vec::new();
/// a.line(1, br#"{"type":"assistant","uuid":"a","timestamp":"2026-01-01T00:00:00Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/a"}}],"usage":{"input_tokens":10,"output_tokens":5}}}"#, &mut out).unwrap();
/// a.line(2, br#"{"type":"user","uuid":"b","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"text"}]}}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// assert_eq!(out[0].tokens, Some(15));
/// ```
#[derive(Debug)]
pub struct ClaudeCodeAdapter {
    session: String,
    tracker: Tracker,
    main: Runs,
    sidechain: Runs,
    seen: Recent,
    messages: VecDeque<MessageUsage>,
}

impl ClaudeCodeAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        ClaudeCodeAdapter {
            session: ctx.session.clone(),
            tracker: Tracker::new(&ctx),
            main: Runs::new("run"),
            sidechain: Runs::new("sidechain"),
            seen: Recent::default(),
            messages: VecDeque::new(),
        }
    }

    /// The run of a line.
    fn run(&self, v: &Value<'_>) -> String {
        if !is_sidechain(v) {
            return self.main.current();
        }
        match id_field(v, "agentId") {
            Some(agent) => format!("sidechain-{agent}"),
            None => self.sidechain.current(),
        }
    }

    fn runs_of(&mut self, v: &Value<'_>) -> &mut Runs {
        if is_sidechain(v) {
            &mut self.sidechain
        } else {
            &mut self.main
        }
    }

    fn message(&mut self, id: &str) -> &mut MessageUsage {
        if let Some(i) = self.messages.iter().position(|m| m.id == id) {
            return &mut self.messages[i];
        }
        if self.messages.len() >= MESSAGE_LIMIT {
            self.messages.pop_front();
        }
        self.messages.push_back(MessageUsage {
            id: id.to_string(),
            tokens: None,
            tool_uses: 0,
        });
        self.messages.back_mut().expect("just pushed")
    }

    fn assistant(&mut self, no: u64, v: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        let Some(msg) = v.get("message") else {
            return;
        };
        let tokens = msg.get("usage").and_then(usage_tokens);
        let group = id_field(msg, "id");
        let Some(content) = msg.get("content").and_then(Value::as_array) else {
            if let (Some(g), Some(t)) = (&group, tokens) {
                let m = self.message(g);
                m.tokens = Some(m.tokens.map_or(t, |old| old.max(t)));
            }
            return;
        };
        let run = self.run(v);
        let mut calls = Vec::new();
        for (i, block) in content.iter().enumerate() {
            if str_field(block, "type") != Some("tool_use") {
                continue;
            }
            let id = id_field(block, "id");
            if let Some(id) = &id {
                if !self.seen.insert(id) {
                    continue;
                }
            }
            let Some((name, args)) =
                tool_use_parts(&mut self.tracker, no, "message.content", i, block)
            else {
                continue;
            };
            let mut call = PendingCall::new(no, &run, id, name, args);
            call.ts = ts;
            call.group = group.clone();
            calls.push(call);
        }
        let count = calls.len() as u64;
        if let Some(g) = &group {
            let m = self.message(g);
            if let Some(t) = tokens {
                m.tokens = Some(m.tokens.map_or(t, |old| old.max(t)));
            }
            m.tool_uses += count;
        }
        for mut call in calls {
            call.tokens = tokens.map(|t| t / count.max(1));
            // A result written before its call (parallel calls) pairs now.
            match self.tracker.take_held(call.call_id.as_deref()) {
                Some(held) => {
                    call.tokens = self.tokens_of(&call);
                    self.tracker
                        .emit(call, held.line, held.payload, held.ts, out);
                }
                None => self.tracker.call(call.call_id.clone(), call, out),
            }
        }
        if count > 0 {
            self.runs_of(v).used();
        }
    }

    /// The tokens of a call when it is emitted: its message's usage split between the
    /// message's calls seen so far.
    fn tokens_of(&self, call: &PendingCall) -> Option<u64> {
        let Some(group) = &call.group else {
            return call.tokens;
        };
        match self.messages.iter().find(|m| &m.id == group) {
            Some(m) => m.tokens.map(|t| t / m.tool_uses.max(1)),
            None => call.tokens,
        }
    }

    fn user(&mut self, no: u64, v: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        if flag(v, "isMeta") || flag(v, "isCompactSummary") {
            return;
        }
        let results: Vec<&Value<'_>> = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter(|b| str_field(b, "type") == Some("tool_result"))
                    .collect()
            })
            .unwrap_or_default();
        if results.is_empty() {
            if !(is_sidechain(v) && id_field(v, "agentId").is_some()) {
                // A prompt ends the turn of its lane (main or subagents): calls of that
                // lane still waiting are replayed without an outcome. Results held for
                // calls not yet read keep waiting until the end of the file.
                let sidechain = is_sidechain(v);
                self.tracker.end_turn_where(
                    out,
                    |c| c.run.as_deref().is_some_and(|r| r.starts_with("sidechain")) == sidechain,
                    false,
                );
                self.runs_of(v).boundary();
            }
            return;
        }
        // What the hook's PostToolUse would have been given: the structured
        // `toolUseResult` (Claude Code's `tool_response`) when the line has one for its
        // single result, else the result's text; a failure is its error text. The guard's
        // Claude Code tool profile maps them (and drops volatile fields) for replay and the
        // hook alike.
        let structured = match v.get("toolUseResult") {
            Some(d @ Value::Object(_)) if results.len() == 1 => Some(d.clone().into_owned()),
            _ => None,
        };
        for r in results {
            let id = id_field(r, "tool_use_id");
            let text = content_text(r.get("content").unwrap_or(&Value::Null));
            let is_error = r.get("is_error").and_then(Value::as_bool) == Some(true);
            let payload = if let Some(refused) = is_error
                .then(|| crate::common::refusal_payload(&text))
                .flatten()
            {
                // loopguard's own deny: a block, not a new outcome.
                refused
            } else if is_error {
                Payload::Error(Value::from(text))
            } else if let Some(d) = &structured {
                Payload::Result(d.clone())
            } else {
                Payload::Result(Value::from(text))
            };
            match self.tracker.take(id.as_deref()) {
                Some(mut call) => {
                    call.tokens = self.tokens_of(&call);
                    self.tracker.emit(call, no, payload, ts, out);
                }
                // Its `tool_use` line may follow (parallel calls): held until then.
                None => match id.as_deref() {
                    Some(id) => self.tracker.hold(no, id, payload, ts),
                    None => self.tracker.orphan(no, None),
                },
            }
        }
    }
}

fn flag(v: &Value<'_>, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

fn is_sidechain(v: &Value<'_>) -> bool {
    flag(v, "isSidechain")
}

impl LineAdapter for ClaudeCodeAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a Claude Code line")? else {
            return Ok(());
        };
        let ty = line_type(no, &v, "a line")?;
        let ts = ts_of(&v, "timestamp");
        let start = out.len();
        match ty {
            "assistant" => self.assistant(no, &v, ts, out),
            "user" => self.user(no, &v, ts, out),
            "system" => {
                if str_field(&v, "subtype") == Some("compact_boundary") {
                    let run = self.run(&v);
                    self.tracker.compaction(no, &run, ts, out);
                }
            }
            t if BOOKKEEPING.contains(&t) => {}
            other => {
                return Err(Diagnostic::new(
                    no,
                    DiagnosticKind::UnknownEntry,
                    format!("unknown line type {other:?}; skipped"),
                ))
            }
        }
        Linked(&self.session).sidechains(&mut out[start..]);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let start = out.len();
        let diagnostics = self.tracker.finish(out);
        Linked(&self.session).sidechains(&mut out[start..]);
        diagnostics
    }
}

/// The transcript's session, which its sidechains name as their parent.
struct Linked<'s>(&'s str);

impl Linked<'_> {
    /// Moves the events of sidechain runs (`sidechain-X`) to the subagent's own session,
    /// `SESSION/X`, linked to the transcript's (`parentSession`).
    fn sidechains(&self, events: &mut [SourcedEvent]) {
        for e in events {
            let Some(run) = e.event.run.as_ref().map(|r| r.to_string_lossy()) else {
                continue;
            };
            let Some(sub) = run.strip_prefix("sidechain-") else {
                continue;
            };
            let sub = if sub.chars().all(|c| c.is_ascii_digit()) {
                run.as_ref()
            } else {
                sub
            };
            let child = format!("{}/{sub}", self.0);
            e.event.session = Some(JsString::from(child));
            e.event.parent_session = Some(JsString::from(self.0.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn feed(lines: &[&str]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
        let mut a = ClaudeCodeAdapter::new(Context {
            session: "s".into(),
            agent: None,
        });
        crate::feed_lines(&mut a, lines)
    }

    fn run(e: &SourcedEvent) -> String {
        e.event.run.as_ref().unwrap().to_string()
    }

    const USER: &str = r#"{"type":"user","uuid":"u","message":{"role":"user","content":"go"}}"#;

    #[test]
    fn split_lines_share_one_message() {
        let (events, diags) = feed(&[
            USER,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"p":1}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"output_tokens":20}}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"p":1}},{"type":"tool_use","id":"t2","name":"mcp__gh__search","input":{}}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"output_tokens":21}}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"B"}]}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A","is_error":true}]}}"#,
        ]);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(events.len(), 4);
        assert_eq!(
            events[0].event.tool.as_ref().unwrap().to_string(),
            "mcp__gh__search"
        );
        assert_eq!(events[0].line, 4);
        assert_eq!(events[0].tokens, Some(62));
        assert_eq!(events[2].tokens, Some(62));
        assert_eq!(
            events[3].event.payload,
            Some(Payload::Error(Value::from("A")))
        );
        assert_eq!(run(&events[0]), "run-1");
    }

    #[test]
    fn tool_use_result_is_the_hooks_tool_response() {
        let (events, _) = feed(&[
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a","is_error":null}]},"toolUseResult":{"stdout":"a","stderr":"","interrupted":false}}"#,
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Read","input":{}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"b"}]}]}}"#,
        ]);
        let want = Value::parse(br#"{"stdout":"a","stderr":"","interrupted":false}"#).unwrap();
        assert_eq!(events[1].event.payload, Some(Payload::Result(want)));
        assert_eq!(
            events[3].event.payload,
            Some(Payload::Result(Value::from("b")))
        );
        assert_eq!(events[0].tokens, None);
    }

    #[test]
    fn huge_token_counts_saturate() {
        let u = |t: &str| Value::parse(t.as_bytes()).unwrap().into_owned();
        assert_eq!(
            usage_tokens(&u(r#"{"input_tokens":1e19,"output_tokens":1e19}"#)),
            Some(u64::MAX)
        );
        assert_eq!(
            usage_tokens(&u(
                r#"{"input_tokens":1e400,"output_tokens":1e19,"cache_creation_input_tokens":18446744073709551615,"cache_read_input_tokens":1}"#
            )),
            Some(u64::MAX)
        );
        // Through the adapter, on the split lines of one message and its two calls.
        let (events, diags) = feed(&[
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}],"usage":{"input_tokens":1e19,"output_tokens":1e19,"cache_read_input_tokens":1e19}}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t2","name":"Read","input":{}}],"usage":{"input_tokens":1e19,"output_tokens":1e19,"cache_read_input_tokens":1e19}}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t2","content":"a"}]}}"#,
        ]);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(events[0].tokens, Some(u64::MAX / 2));
        assert_eq!(events[2].tokens, Some(u64::MAX / 2));
    }

    #[test]
    fn runs_sidechains_and_compaction() {
        let (events, diags) = feed(&[
            USER,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Task","input":{}}]}}"#,
            r#"{"type":"user","isSidechain":true,"message":{"role":"user","content":"sub prompt"}}"#,
            r#"{"type":"assistant","isSidechain":true,"message":{"content":[{"type":"tool_use","id":"s1","name":"Grep","input":{}}]}}"#,
            r#"{"type":"user","isSidechain":true,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"s1","content":"x"}]}}"#,
            r#"{"type":"assistant","isSidechain":true,"agentId":"ab12","message":{"content":[{"type":"tool_use","id":"s2","name":"Grep","input":{}}]}}"#,
            r#"{"type":"user","isSidechain":true,"agentId":"ab12","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"s2","content":"x"}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","timestamp":"2026-01-01T00:00:00.000Z"}"#,
            r#"{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
            r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"<meta>"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"Read","input":{}}]}}"#,
            USER,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t4","name":"Read","input":{}}]}}"#,
            r#"{"type":"summary","summary":"title","leafUuid":"x"}"#,
            r#"{"type":"weird"}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":"?"}]}}"#,
        ]);
        let runs: Vec<_> = events.iter().map(run).collect();
        assert_eq!(
            runs,
            [
                "sidechain-1",
                "sidechain-1",
                "sidechain-ab12",
                "sidechain-ab12",
                "run-1",
                "run-1",
                "run-1",
                // t3, never answered: replayed alone at the next prompt; t4 at the end.
                "run-1",
                "run-2"
            ]
        );
        // Each sidechain is a session of its own, linked to the transcript's (finished calls
        // included: t4 comes out of `finish`).
        let sessions: Vec<_> = events
            .iter()
            .map(|e| {
                let s = |v: &Option<loopguard_core::JsString<'_>>| {
                    v.as_ref().map(|x| x.to_string_lossy().into_owned())
                };
                (s(&e.event.session), s(&e.event.parent_session))
            })
            .collect();
        let linked = |c: &str| (Some(c.to_string()), Some("s".to_string()));
        let own = (Some("s".to_string()), None);
        assert_eq!(
            sessions,
            [
                linked("s/sidechain-1"),
                linked("s/sidechain-1"),
                linked("s/ab12"),
                linked("s/ab12"),
                own.clone(),
                own.clone(),
                own.clone(),
                own.clone(),
                own,
            ]
        );
        assert_eq!(events[6].event.kind, EventKind::Compaction);
        assert_eq!(
            (events[7].line, events[7].event.kind),
            (12, EventKind::Call)
        );
        assert_eq!(
            (events[8].line, events[8].event.kind),
            (14, EventKind::Call)
        );
        assert_eq!(events[6].event.timestamp_ms, 1767225600000);
        let kinds: Vec<_> = diags.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (16, DiagnosticKind::UnknownEntry),
                (12, DiagnosticKind::Unanswered),
                (14, DiagnosticKind::Unanswered),
                (17, DiagnosticKind::Orphan)
            ]
        );
    }
}
