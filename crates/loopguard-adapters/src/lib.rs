//! # loopguard-adapters
//!
//! Turns the session files real agents write into loopguard's event stream (`call`,
//! `outcome`, `compaction`; see [`loopguard_events`]), so `loopguard replay` can explain
//! the loops in them. One module per format:
//!
//! | module | format |
//! |--------|--------|
//! | [`openclaw`] | OpenClaw / pi session JSONL, versions 1 to 4 |
//! | [`openclaw_sqlite`] | OpenClaw's SQLite transcript store (`transcript_events`) |
//! | [`call_stream`] | the OpenClaw call-stream JSON |
//! | [`claude_code`] | Claude Code session JSONL |
//! | [`chat_completions`] | OpenAI Chat Completions `messages[]` |
//! | [`responses`] | OpenAI Responses items and Codex CLI rollouts |
//! | [`swe_agent`] | SWE-agent `.traj` and mini-swe-agent `.traj.json` |
//! | [`openhands`] | OpenHands V0 `trajectory.json`, evaluation `output.jsonl`, V1 SDK events |
//! | [`anthropic`] | Anthropic Messages (messages, requests, responses, proxy logs) |
//! | [`chat_log`] | wrapped chat logs (tau-bench `traj`, `messages`, `history`, `conversation`) |
//! | [`langfuse`] | Langfuse observation and trace exports (`TOOL` observations) |
//! | [`langsmith`] | LangSmith run exports (`run_type: "tool"`, `dotted_order`) |
//! | [`atif`] | ATIF trajectories (Harbor's Agent Trajectory Interchange Format) |
//! | [`openai_agents`] | OpenAI Agents SDK trace exports (`function` spans) |
//! | [`managed_agents`] | Claude Managed Agents session events (`agent.tool_use`, …) |
//! | [`gemini_chat`] | Gemini CLI chat records (`session-*.jsonl`) and older chat files (`session-*.json`) |
//! | [`qwen`] | Qwen Code chat records |
//! | [`copilot_session`] | GitHub Copilot CLI session events (`events.jsonl`) |
//! | [`factory`] | Factory Droid sessions |
//! | [`opencode`] | opencode's SQLite database (sessions, messages, parts), and the older JSON storage of the same objects |
//! | [`cline`] | Cline's and Roo Code's task history (`api_conversation_history.json`, with `ui_messages.json` for usage) |
//! | [`otlp`] | OpenTelemetry traces: OTLP JSON, flat span dumps, Phoenix span exports (tool spans via [`spans`]) |
//!
//! Line-based formats implement [`LineAdapter`] and stream: memory does not grow with the
//! file. Whole-document formats (a single JSON value) implement [`DocumentAdapter`].
//! [`detect::detect`] recognises a format from a file's content, and
//! [`reader::Source`] detects on a kept prefix so pipes can be read after detection.
//!
//! Every adapter follows the same rules:
//! * events come out in file order; a call is emitted when its result is seen, a call that
//!   never got a result is emitted alone when its turn ends (and reported);
//! * one pairing serves every adapter: a result is paired with its call by call id in any
//!   order (a result written before its call waits for it), and by position when ids are
//!   missing or repeat;
//! * each event carries the line (or record number) it came from, its timestamp when the
//!   transcript has one, and the tokens the model spent producing the call, when known;
//! * a line that cannot be used is a [`Diagnostic`] naming the line; the caller decides
//!   whether that is fatal (`--stop-on-bad-line`) or skipped.

mod agent_log;
pub mod anthropic;
pub mod atif;
pub mod call_stream;
pub mod chat_completions;
pub mod chat_log;
pub mod claude_code;
pub mod cline;
pub mod common;
pub mod copilot_session;
pub mod detect;
pub mod events;
pub mod factory;
pub mod gemini_chat;
pub mod langfuse;
pub mod langsmith;
pub mod managed_agents;
pub mod openai_agents;
pub mod openclaw;
pub mod openclaw_sqlite;
pub mod opencode;
pub mod openhands;
pub mod otlp;
mod pairing;
pub mod qwen;
pub mod reader;
mod records;
pub mod responses;
pub mod spans;
pub mod swe_agent;
pub mod synthetic;
mod trace_agents;

use std::fmt;

use loopguard_events::Event;

pub use detect::{detect, Format};

/// One event produced from a transcript, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct SourcedEvent {
    /// The event, in events.md terms (its `timestamp_ms` is set when known).
    pub event: Event<'static>,
    /// 1-based line of the transcript (or record number of a document) it came from.
    pub line: u64,
    /// Tokens the model spent on the message that made this call, when recorded (split
    /// evenly between the calls of one message). Calls only.
    pub tokens: Option<u64>,
    /// The tool profile of the agent that made the call, by name (`claude-code`), when the
    /// source says which agent it was and the format alone does not (trace spans from a
    /// known agent's telemetry: see [`spans::agent_profile`]). Replay and `serve` hash the
    /// call with that profile instead of the format's.
    pub profile: Option<&'static str>,
}

/// What the events belong to: the session's name and agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// Session name used for every event (for example the transcript's session id).
    pub session: String,
    /// Agent id, selecting the per-agent config (for example from
    /// `~/.openclaw/agents/<agentId>/sessions/`).
    pub agent: Option<String>,
}

/// Why a line (or record) was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line (or record number).
    pub line: u64,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// A sentence for people.
    pub message: String,
}

/// The kinds of [`Diagnostic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The line is not JSON (or not the JSON this format has).
    NotJson,
    /// The last line is cut off (no newline and not parseable).
    Truncated,
    /// An entry type the adapter does not know; skipped.
    UnknownEntry,
    /// A known entry with a field missing or of the wrong type.
    BadField,
    /// A call that never got a result: replayed without an outcome (or, when the agent
    /// never ran it, not replayed; the message says which).
    Unanswered,
    /// A result whose call was not found; not replayed.
    Orphan,
    /// A line holding several JSON values (a lost newline): each was read. A note, not a
    /// loss.
    JoinedLine,
    /// The format was read but the file, although it has content, gave no call: the format
    /// is probably not the right one. Line 0.
    NoCalls,
    /// A record was used, but something in it is missing or unreadable (a trace span
    /// without arguments or a result, an id in an unknown encoding): the message says what
    /// was assumed. A note, not a loss: `--stop-on-bad-line` does not stop on it.
    Partial,
}

impl DiagnosticKind {
    /// `true` for problems `--stop-on-bad-line` turns into errors (malformed input); unanswered calls
    /// and orphan results are normal in real transcripts and only reported.
    pub fn is_malformed(self) -> bool {
        matches!(
            self,
            DiagnosticKind::NotJson
                | DiagnosticKind::Truncated
                | DiagnosticKind::UnknownEntry
                | DiagnosticKind::BadField
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Diagnostic {
    /// A diagnostic.
    pub fn new(line: u64, kind: DiagnosticKind, message: impl Into<String>) -> Self {
        Diagnostic {
            line,
            kind,
            message: message.into(),
        }
    }
}

/// A line-based transcript format, fed one line at a time.
pub trait LineAdapter {
    /// Consumes line `no` (1-based, without its newline). Events produced go to `out`;
    /// a line that cannot be used returns a diagnostic and changes nothing.
    fn line(&mut self, no: u64, text: &[u8], out: &mut Vec<SourcedEvent>)
        -> Result<(), Diagnostic>;

    /// The input ended: emits what is still pending and reports calls that never got a
    /// result.
    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic>;
}

/// Feeds `lines` to `adapter` as lines 1, 2, … and finishes it: the events, and the
/// diagnostics of the lines followed by those of [`LineAdapter::finish`]. For unit tests.
#[cfg(test)]
pub(crate) fn feed_lines(
    adapter: &mut dyn LineAdapter,
    lines: &[&str],
) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Err(d) = adapter.line(i as u64 + 1, l.as_bytes(), &mut out) {
            diags.push(d);
        }
    }
    diags.extend(adapter.finish(&mut out));
    (out, diags)
}

/// A whole-document transcript format (one JSON value per file).
pub trait DocumentAdapter {
    /// Converts the document, returning its events and what was skipped.
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic>;
}

/// Events and diagnostics of a document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Adapted {
    /// Events in order.
    pub events: Vec<SourcedEvent>,
    /// Records that were skipped, and why.
    pub diagnostics: Vec<Diagnostic>,
}
