//! Recognising a transcript's format from its first bytes.

use std::fmt;

use loopguard_core::Value;

use crate::common::str_field;

/// The formats loopguard reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// loopguard's own event stream (events.md).
    Events,
    /// OpenClaw / pi session JSONL.
    OpenClaw,
    /// OpenClaw's SQLite transcript store.
    OpenClawSqlite,
    /// OpenClaw call-stream JSON.
    CallStream,
    /// Claude Code session JSONL.
    ClaudeCode,
    /// OpenAI Chat Completions `messages[]` (JSON).
    ChatCompletions,
    /// OpenAI Responses items (JSON).
    Responses,
    /// Codex CLI rollout JSONL.
    CodexRollout,
    /// SWE-agent `.traj`.
    SweAgent,
    /// mini-swe-agent `.traj.json`.
    MiniSweAgent,
    /// OpenHands event list: V0 `trajectory.json`, or a JSON array of V1 SDK events.
    OpenHands,
    /// OpenHands events as JSON Lines (V1 SDK `ActionEvent`/`ObservationEvent`, or V0).
    OpenHandsEvents,
    /// OpenHands evaluation `output.jsonl`: one run (`instance_id`, `history`) per line.
    OpenHandsEval,
    /// Anthropic Messages: `{role, content:[blocks]}` lists, requests and responses.
    Anthropic,
    /// Wrapped chat logs: records holding a chat message list (tau-bench's `traj`, …).
    ChatLog,
    /// OpenTelemetry traces: OTLP JSON (`resourceSpans`; `resourceLogs` for Codex's tool
    /// events), flat span dumps, Phoenix spans.
    Otlp,
    /// Langfuse observation and trace exports.
    Langfuse,
    /// LangSmith run exports.
    LangSmith,
    /// ATIF trajectories (Harbor).
    Atif,
    /// OpenAI Agents SDK trace exports.
    OpenAiAgents,
    /// Claude Managed Agents session events.
    ManagedAgents,
    /// Gemini CLI chat records (JSON Lines with `$set` updates).
    Gemini,
    /// Gemini CLI chat files of older versions (one JSON document with `messages`).
    GeminiJson,
    /// Qwen Code chat records.
    Qwen,
    /// GitHub Copilot CLI session events (`events.jsonl`).
    Copilot,
    /// Factory Droid sessions.
    Factory,
    /// opencode's SQLite database (`opencode.db`: sessions, messages, parts).
    Opencode,
    /// Cline's and Roo Code's task history (`api_conversation_history.json`).
    Cline,
    /// A session of opencode's older JSON storage (`storage/session/<project>/<id>.json`,
    /// read with its messages and parts).
    OpencodeStorage,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 29] = [
        Format::Events,
        Format::OpenClaw,
        Format::OpenClawSqlite,
        Format::CallStream,
        Format::ClaudeCode,
        Format::ChatCompletions,
        Format::Responses,
        Format::CodexRollout,
        Format::SweAgent,
        Format::MiniSweAgent,
        Format::OpenHands,
        Format::OpenHandsEvents,
        Format::OpenHandsEval,
        Format::Anthropic,
        Format::ChatLog,
        Format::Otlp,
        Format::Langfuse,
        Format::LangSmith,
        Format::Atif,
        Format::OpenAiAgents,
        Format::ManagedAgents,
        Format::Gemini,
        Format::GeminiJson,
        Format::Qwen,
        Format::Copilot,
        Format::Factory,
        Format::Opencode,
        Format::Cline,
        Format::OpencodeStorage,
    ];

    /// The name used by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Events => "events",
            Format::OpenClaw => "openclaw",
            Format::OpenClawSqlite => "openclaw-sqlite",
            Format::CallStream => "call-stream",
            Format::ClaudeCode => "claude-code",
            Format::ChatCompletions => "chat-completions",
            Format::Responses => "responses",
            Format::CodexRollout => "codex",
            Format::SweAgent => "swe-agent",
            Format::MiniSweAgent => "mini-swe-agent",
            Format::OpenHands => "openhands",
            Format::OpenHandsEvents => "openhands-events",
            Format::OpenHandsEval => "openhands-eval",
            Format::Anthropic => "anthropic",
            Format::ChatLog => "chat-log",
            Format::Otlp => "otlp",
            Format::Langfuse => "langfuse",
            Format::LangSmith => "langsmith",
            Format::Atif => "atif",
            Format::OpenAiAgents => "openai-agents",
            Format::ManagedAgents => "managed-agents",
            Format::Gemini => "gemini",
            Format::GeminiJson => "gemini-json",
            Format::Qwen => "qwen",
            Format::Copilot => "copilot",
            Format::Factory => "factory",
            Format::Opencode => "opencode",
            Format::Cline => "cline",
            Format::OpencodeStorage => "opencode-json",
        }
    }

    /// A short description for error messages and `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Events => "loopguard event stream (JSONL of call/outcome/compaction)",
            Format::OpenClaw => "OpenClaw / pi session JSONL (v1-v4)",
            Format::OpenClawSqlite => "OpenClaw SQLite transcript store (transcript_events)",
            Format::CallStream => "OpenClaw call-stream JSON",
            Format::ClaudeCode => "Claude Code session JSONL",
            Format::ChatCompletions => "OpenAI Chat Completions messages (JSON)",
            Format::Responses => "OpenAI Responses items (JSON)",
            Format::CodexRollout => "Codex CLI rollout JSONL",
            Format::SweAgent => "SWE-agent .traj",
            Format::MiniSweAgent => "mini-swe-agent .traj.json",
            Format::OpenHands => "OpenHands event list (V0 trajectory.json, V1 events)",
            Format::OpenHandsEvents => "OpenHands events JSONL (V1 SDK, V0)",
            Format::OpenHandsEval => "OpenHands evaluation output.jsonl (one run per line)",
            Format::Anthropic => "Anthropic Messages (messages, requests, responses)",
            Format::ChatLog => "chat log records (tau-bench traj, messages, history, conversation)",
            Format::Otlp => "OpenTelemetry traces (OTLP JSON, span dumps, Phoenix span exports)",
            Format::Langfuse => "Langfuse observation / trace exports",
            Format::LangSmith => "LangSmith run exports",
            Format::Atif => "ATIF trajectories (Harbor)",
            Format::OpenAiAgents => "OpenAI Agents SDK trace exports",
            Format::ManagedAgents => "Claude Managed Agents session events",
            Format::Gemini => "Gemini CLI chat records (session-*.jsonl)",
            Format::GeminiJson => "Gemini CLI chat file of older versions (session-*.json)",
            Format::Qwen => "Qwen Code chat records",
            Format::Copilot => "GitHub Copilot CLI session events (events.jsonl)",
            Format::Factory => "Factory Droid session JSONL",
            Format::Opencode => "opencode SQLite database (opencode.db: session, message, part)",
            Format::Cline => "Cline / Roo Code task history (api_conversation_history.json)",
            Format::OpencodeStorage => {
                "opencode session of the older JSON storage (storage/session/<project>/<id>.json)"
            }
        }
    }

    /// Looks a format up by its `--format` name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// `true` for formats read line by line.
    pub fn is_line_based(self) -> bool {
        matches!(
            self,
            Format::Events
                | Format::OpenClaw
                | Format::ClaudeCode
                | Format::CodexRollout
                | Format::OpenHandsEvents
                | Format::OpenHandsEval
                | Format::Gemini
                | Format::Qwen
                | Format::Copilot
                | Format::Factory
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Guesses the format of a file from its name and its first bytes (a few kilobytes are
/// enough; the whole file works too).
///
/// ```
/// use loopguard_adapters::{detect, Format};
/// let head = br#"{"type":"session","version":3,"id":"x","timestamp":"2026-09-05T15:26:13.250Z","cwd":"/"}
/// {"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}
/// "#;
/// assert_eq!(detect("s.jsonl", head), Some(Format::OpenClaw));
/// assert_eq!(detect("x.jsonl", br#"{"type":"call","tool":"read"}"#), Some(Format::Events));
/// assert_eq!(detect("db", b"SQLite format 3\0..."), Some(Format::OpenClawSqlite));
/// assert_eq!(detect("x", b"hello"), None);
/// ```
pub fn detect(name: &str, head: &[u8]) -> Option<Format> {
    if head.starts_with(b"SQLite format 3\0") {
        return Some(Format::OpenClawSqlite);
    }
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{FEFF}');
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    // JSON Lines: when the first line is a complete object, the records decide; what the
    // values say (an argument named "trajectory", say) never does.
    if let Some(first) = lines.clone().next() {
        if let Ok(v @ Value::Object(_)) = loopguard_core::json::parse(first.as_bytes()) {
            let votes: Vec<Format> = lines
                .by_ref()
                .take(20)
                .filter_map(|l| loopguard_core::json::parse(l.as_bytes()).ok())
                .filter_map(|v| detect_line(&v))
                .collect();
            // Bare messages: one with Messages API blocks makes the file Anthropic's.
            let vote = if votes.contains(&Format::Anthropic) {
                Some(Format::Anthropic)
            } else {
                votes.first().copied()
            };
            // Otherwise it may be a whole document written on one line.
            return vote
                .or_else(|| classify_document(&v))
                .or_else(|| name_hint(name));
        }
    }
    // Server-sent events of a Managed Agents session stream.
    if (text.starts_with("event:") || text.starts_with("data:"))
        && text
            .lines()
            .any(|l| l.starts_with("data:") && l.contains("\"agent."))
    {
        return Some(Format::ManagedAgents);
    }
    // A JSON document (pretty-printed, or an array), possibly cut off at the end of `head`.
    detect_document(text.trim_start()).or_else(|| name_hint(name))
}

/// File name hints for documents too large to sniff from their start.
fn name_hint(name: &str) -> Option<Format> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".traj.json") {
        Some(Format::MiniSweAgent)
    } else if lower.ends_with(".traj") {
        Some(Format::SweAgent)
    } else {
        None
    }
}

/// One JSONL record's format.
fn detect_line(v: &Value<'_>) -> Option<Format> {
    // The coding agents' own logs first: Copilot's events look like Managed Agents' at a
    // glance, Qwen Code's records like Claude Code's, Droid's messages like OpenClaw's.
    if let Some(f) = agent_log_record(v) {
        return Some(f);
    }
    if let Some(f) = export_record(v) {
        return Some(f);
    }
    let ty = str_field(v, "type");
    if matches!(v.get("history"), Some(Value::Array(_))) && v.get("instance_id").is_some() {
        return Some(Format::OpenHandsEval);
    }
    if is_openhands_event(v) {
        return Some(Format::OpenHandsEvents);
    }
    if is_anthropic_record(v) {
        return Some(Format::Anthropic);
    }
    match ty {
        Some("call" | "outcome" | "compaction") if v.get("message").is_none() => {
            return Some(Format::Events)
        }
        Some("session") if v.get("version").is_some() || v.get("cwd").is_some() => {
            return Some(Format::OpenClaw)
        }
        _ => {}
    }
    if v.get("payload").is_some()
        && matches!(
            ty,
            Some("session_meta" | "turn_context" | "event_msg" | "response_item" | "compacted")
        )
    {
        return Some(Format::CodexRollout);
    }
    if (v.get("uuid").is_some() || v.get("sessionId").is_some() || v.get("parentUuid").is_some())
        && matches!(
            ty,
            Some(
                "user"
                    | "assistant"
                    | "system"
                    | "summary"
                    | "file-history-snapshot"
                    | "progress"
                    | "queue-operation"
            )
        )
    {
        return Some(Format::ClaudeCode);
    }
    // A bare chat message per line (role, no type): Chat Completions as JSON Lines.
    if ty.is_none()
        && v.get("role").is_some()
        && (v.get("content").is_some() || v.get("tool_calls").is_some())
        && v.get("__openclaw").is_none()
    {
        return Some(Format::ChatCompletions);
    }
    if ty == Some("message") && v.get("message").and_then(|m| m.get("role")).is_some() {
        return Some(Format::OpenClaw);
    }
    if matches!(
        ty,
        Some(
            "compaction"
                | "model_change"
                | "thinking_level_change"
                | "custom"
                | "custom_message"
                | "branch_summary"
                | "label"
                | "session_info"
        )
    ) && v.get("id").is_some()
    {
        return Some(Format::OpenClaw);
    }
    None
}

/// A record of a coding agent's own session log: Gemini CLI, Qwen Code, Copilot CLI,
/// Factory Droid.
fn agent_log_record(v: &Value<'_>) -> Option<Format> {
    if crate::copilot_session::is_event(v) {
        Some(Format::Copilot)
    } else if crate::gemini_chat::is_record(v) {
        Some(Format::Gemini)
    } else if crate::qwen::is_record(v) {
        Some(Format::Qwen)
    } else if crate::factory::is_record(v) {
        Some(Format::Factory)
    } else {
        None
    }
}

/// A whole JSON document's format, from its beginning.
fn detect_document(text: &str) -> Option<Format> {
    let first = text.chars().next()?;
    if first != '{' && first != '[' {
        return None;
    }
    // A pretty-printed or single-object document: parse what we have if it is complete;
    // otherwise look for telling keys near the start.
    let whole = loopguard_core::json::parse(text.trim_end().as_bytes()).ok();
    if let Some(v) = &whole {
        if let Some(f) = classify_document(v) {
            return Some(f);
        }
        // One complete JSON object on a single line is a JSONL record, not a document.
        return None;
    }
    let key = |k: &str| text.contains(&format!("\"{k}\""));
    // OTLP JSON cut short, or several pretty-printed documents back to back.
    if text.starts_with('{') || text.starts_with('[') {
        // At most 4096 bytes, cut at a character boundary (a multi-byte character may
        // straddle byte 4096).
        let mut end = text.len().min(4096);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = &text[..end];
        let near = |k: &str| head.contains(&format!("\"{k}\""));
        if near("resourceSpans")
            || near("resource_spans")
            || near("scopeSpans")
            || near("scope_spans")
            || near("resourceLogs")
            || near("resource_logs")
            || (near("context") && near("trace_id") && near("span_id"))
        {
            return Some(Format::Otlp);
        }
    }
    if key("projectHash") && key("sessionId") && key("messages") && text.starts_with('{') {
        return Some(Format::GeminiJson);
    }
    if key("trajectory_format") && text.contains("mini-swe-agent") {
        return Some(Format::MiniSweAgent);
    }
    if key("trajectory")
        && (key("history") || key("info") || key("environment"))
        && !text.starts_with('[')
    {
        return Some(Format::SweAgent);
    }
    if key("calls") && key("session_id") {
        return Some(Format::CallStream);
    }
    if text.starts_with('[') || text.starts_with("{\n") || text.starts_with("{\r") {
        if key("tool_calls")
            || key("tool_call_id")
            || (key("role") && key("content") && !key("call_id"))
        {
            return Some(Format::ChatCompletions);
        }
        if key("function_call_output") || key("call_id") {
            return Some(Format::Responses);
        }
    }
    None
}

/// An OpenHands V0 event (`action` or `observation` with an `id` and a `source`) or V1
/// event (`kind` …Event).
fn is_openhands_event(v: &Value<'_>) -> bool {
    if let Some(kind) = str_field(v, "kind") {
        return matches!(
            kind,
            "ActionEvent"
                | "ObservationEvent"
                | "MessageEvent"
                | "SystemPromptEvent"
                | "AgentErrorEvent"
                | "UserRejectObservation"
                | "Condensation"
                | "ConversationStateUpdateEvent"
        );
    }
    v.get("id").is_some()
        && v.get("source").is_some()
        && v.get("type").is_none()
        && (str_field(v, "action").is_some() || str_field(v, "observation").is_some())
}

/// An Anthropic message with `tool_use`/`tool_result` blocks, a Messages API response, or
/// a request whose messages have such blocks.
fn is_anthropic_record(v: &Value<'_>) -> bool {
    if v.get("role").is_some() && crate::anthropic::has_tool_blocks(v) {
        return true;
    }
    // A Messages API response (Responses API message items have no `stop_reason`).
    if str_field(v, "type") == Some("message")
        && str_field(v, "role") == Some("assistant")
        && v.get("content").and_then(Value::as_array).is_some()
        && v.get("stop_reason").is_some()
    {
        return true;
    }
    let req = v.get("request").unwrap_or(v);
    matches!(req.get("messages"), Some(Value::Array(ms)) if ms.iter().any(crate::anthropic::has_tool_blocks))
}

/// An OTLP JSON record (`TracesData`, `ResourceSpans`, `ScopeSpans`, or `LogsData` such as
/// Codex's tool events) or a flat span (`name` with a `context` holding `trace_id` and
/// `span_id`).
fn is_trace_record(v: &Value<'_>) -> bool {
    let has = |k: &str| v.get(k).is_some();
    if has("resourceSpans")
        || has("resource_spans")
        || has("resourceLogs")
        || has("resource_logs")
        || has("scopeLogs")
        || ((has("scopeSpans") || has("scope_spans")) && !has("name"))
    {
        return true;
    }
    if has("spans") && has("scope") {
        return true;
    }
    has("name")
        && v.get("context")
            .is_some_and(|c| c.get("trace_id").is_some() && c.get("span_id").is_some())
}

/// A record of a trace export format: OTLP, Langfuse, LangSmith, ATIF, OpenAI Agents SDK,
/// Managed Agents.
fn export_record(v: &Value<'_>) -> Option<Format> {
    if is_trace_record(v) {
        Some(Format::Otlp)
    } else if crate::langfuse::is_observation(v) || crate::langfuse::is_trace(v) {
        Some(Format::Langfuse)
    } else if crate::langsmith::is_run(v) {
        Some(Format::LangSmith)
    } else if crate::atif::is_trajectory(v) {
        Some(Format::Atif)
    } else if crate::openai_agents::is_export(v) {
        Some(Format::OpenAiAgents)
    } else if crate::managed_agents::is_event(v) {
        Some(Format::ManagedAgents)
    } else {
        None
    }
}

/// A trace export document: a record, a list of records, or an API answer holding one.
fn export_document(v: &Value<'_>) -> Option<Format> {
    if let Some(f) = export_record(v) {
        return Some(f);
    }
    let items = match v {
        Value::Array(items) => items.as_slice(),
        Value::Object(o) => match ["data", "runs", "observations", "events", "spans"]
            .iter()
            .find_map(|k| v.get(k).and_then(Value::as_array))
        {
            Some(items) => items,
            // Phoenix: spans grouped under names, `{"<trace name>": [spans…], …}`.
            None if !o.is_empty() && o.iter().all(|(_, x)| matches!(x, Value::Array(_))) => {
                let spans = o
                    .iter()
                    .filter_map(|(_, x)| x.as_array())
                    .flat_map(|items| items.iter().take(50));
                return spans
                    .filter(|s| is_trace_record(s))
                    .map(|_| Format::Otlp)
                    .next();
            }
            None => return None,
        },
        _ => return None,
    };
    items.iter().take(50).find_map(export_record)
}

fn classify_document(v: &Value<'_>) -> Option<Format> {
    if crate::opencode::is_storage_session(v) {
        return Some(Format::OpencodeStorage);
    }
    // Before Anthropic's messages, which Cline's are in shape.
    if crate::cline::is_task_history(v) || crate::cline::is_panel_log(v) {
        return Some(Format::Cline);
    }
    if crate::gemini_chat::is_chat_file(v) {
        return Some(Format::GeminiJson);
    }
    if let Some(f) = export_document(v) {
        return Some(f);
    }
    if is_anthropic_record(v) {
        return Some(Format::Anthropic);
    }
    if let Value::Array(items) = v {
        if items.iter().any(is_responses_item) {
            return Some(Format::Responses);
        }
        if items.iter().any(is_openhands_event) {
            return Some(Format::OpenHands);
        }
        if items
            .iter()
            .any(|r| crate::chat_log::record_messages(r).is_some())
        {
            return Some(Format::ChatLog);
        }
        if items.iter().any(is_anthropic_record) {
            return Some(Format::Anthropic);
        }
    }
    if v.get("instance_id").is_some()
        && matches!(v.get("history"), Some(Value::Array(h)) if h.iter().any(|e| is_openhands_event(e) || matches!(e, Value::Array(_))))
    {
        return Some(Format::OpenHands);
    }
    match v {
        Value::Object(o) => {
            if let Some(Value::String(f)) = o.get("trajectory_format") {
                if f.to_string_lossy().starts_with("mini-swe-agent") {
                    return Some(Format::MiniSweAgent);
                }
            }
            if matches!(o.get("trajectory"), Some(Value::Array(_))) {
                return Some(Format::SweAgent);
            }
            if let Some(Value::Array(items)) = o.get("messages") {
                if items.iter().any(|m| m.get("role").is_some()) {
                    return Some(Format::ChatCompletions);
                }
            }
            for key in ["output", "input", "items"] {
                if let Some(Value::Array(items)) = o.get(key) {
                    if items.iter().any(is_responses_item) {
                        return Some(Format::Responses);
                    }
                }
            }
            // Call-stream: `{ label: { session_id, calls: [...] } }` (a broken label among
            // good ones is the adapter's to report).
            if !o.is_empty()
                && o.iter().all(|(_, s)| s.get("calls").is_some())
                && o.iter()
                    .any(|(_, s)| matches!(s.get("calls"), Some(Value::Array(_))))
            {
                return Some(Format::CallStream);
            }
            None
        }
        Value::Array(items) => {
            if items.iter().any(is_responses_item) {
                Some(Format::Responses)
            } else if items.iter().any(|m| m.get("role").is_some()) {
                // mini-swe-agent v1 wrote bare message arrays: its actions are code fences
                // in assistant text, never tool calls.
                let tool_calls = items
                    .iter()
                    .any(|m| m.get("tool_calls").is_some() || m.get("tool_call_id").is_some());
                let fenced = items.iter().any(|m| {
                    str_field(m, "role") == Some("assistant")
                        && str_field(m, "content").is_some_and(|c| c.contains("```"))
                });
                if !tool_calls && fenced {
                    Some(Format::MiniSweAgent)
                } else {
                    Some(Format::ChatCompletions)
                }
            } else {
                None
            }
        }
        _ => None,
    }
}

fn is_responses_item(v: &Value<'_>) -> bool {
    matches!(
        str_field(v, "type"),
        Some(
            "function_call"
                | "function_call_output"
                | "custom_tool_call"
                | "custom_tool_call_output"
                | "local_shell_call"
                | "mcp_call"
                | "compaction"
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_each_format() {
        let cases: &[(&str, &str, Format)] = &[
            (
                "a.jsonl",
                r#"{"type":"outcome","tool":"x","result":1}"#,
                Format::Events,
            ),
            (
                "a.jsonl",
                r#"{"type":"session","id":"x","timestamp":"t","cwd":"/"}"#,
                Format::OpenClaw,
            ),
            (
                "a.jsonl",
                r#"{"type":"message","message":{"role":"assistant","content":[]}}"#,
                Format::OpenClaw,
            ),
            (
                "a.jsonl",
                r#"{"type":"assistant","uuid":"u","sessionId":"s","message":{"content":[]}}"#,
                Format::ClaudeCode,
            ),
            (
                "a.jsonl",
                r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call"}}"#,
                Format::CodexRollout,
            ),
            (
                "a.json",
                r#"[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[]}]"#,
                Format::ChatCompletions,
            ),
            (
                "a.json",
                r#"{"messages":[{"role":"user","content":"hi"}]}"#,
                Format::ChatCompletions,
            ),
            (
                "a.json",
                r#"[{"type":"function_call","call_id":"c","name":"x","arguments":"{}"}]"#,
                Format::Responses,
            ),
            (
                "a.traj",
                r#"{"trajectory":[{"action":"ls","observation":""}],"info":{}}"#,
                Format::SweAgent,
            ),
            (
                "a.traj.json",
                r#"{"trajectory_format":"mini-swe-agent-1","messages":[]}"#,
                Format::MiniSweAgent,
            ),
            (
                "a.json",
                r#"{"run1":{"session_id":"s","calls":[]}}"#,
                Format::CallStream,
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(detect(name, text.as_bytes()), Some(*want), "{text}");
        }
    }

    #[test]
    fn pretty_printed_documents_cut_short() {
        let head = "{\n  \"trajectory\": [\n    {\"action\": \"ls\", \"observation\": \"a\"},\n";
        assert_eq!(detect("run.traj", head.as_bytes()), Some(Format::SweAgent));
        let head = "[\n  {\"role\": \"system\", \"content\": \"x\"},\n  {\"role\": \"assistant\", \"tool_calls\": [";
        assert_eq!(
            detect("chat.json", head.as_bytes()),
            Some(Format::ChatCompletions)
        );
    }

    #[test]
    fn words_inside_values_do_not_decide() {
        // An event whose arguments mention other formats' keys is still an event.
        let events = br#"{"type":"call","tool":"log","args":{"level":"info","name":"trajectory","history":1}}
{"type":"outcome","tool":"log","args":{},"result":{"calls":3,"session_id":"x"}}"#;
        assert_eq!(detect("e.jsonl", events), Some(Format::Events));
        let openclaw = br#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"x","arguments":{"session_id":"x","calls":3}}]}}"#;
        assert_eq!(detect("s.jsonl", openclaw), Some(Format::OpenClaw));
        // A whole document on one line.
        assert_eq!(
            detect(
                "c.json",
                br#"{"messages":[{"role":"user","content":"hi"}]}"#
            ),
            Some(Format::ChatCompletions)
        );
    }

    #[test]
    fn a_character_across_byte_4096_of_a_broken_document_is_no_panic() {
        // Two pretty-printed documents back to back (so not one JSON value), with a
        // three-byte character straddling byte 4096.
        for pad in 4090..4100 {
            let mut text = String::from("{\n  \"a\": \"");
            text.push_str(&"x".repeat(pad - text.len()));
            text.push_str("\u{20ac}\u{20ac}\"\n}\n{\n  \"b\": 1\n}\n");
            assert_eq!(detect("x.json", text.as_bytes()), None, "{pad}");
        }
    }

    #[test]
    fn unknown_content_is_none() {
        assert_eq!(detect("x.txt", b"just text\nmore"), None);
        assert_eq!(detect("x.json", b"{\"a\":1}"), None);
        assert_eq!(detect("x.json", b""), None);
    }
}
