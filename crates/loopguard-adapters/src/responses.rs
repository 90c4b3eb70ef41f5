//! OpenAI Responses items and Codex CLI rollouts.
//!
//! ## Responses items ([`Responses`])
//!
//! Input: a JSON array of items, or an object with `input`, `output` and/or `items`
//! arrays (read in that order: a logged request, then its response; a string `input` is a
//! user prompt). `line` is the 1-based index of the item in that sequence. Timestamps: an
//! item's `created_at`, else the response object's.
//!
//! | item | becomes |
//! |------|---------|
//! | `function_call` (`call_id`, `name`, `arguments` JSON string) | a call; `arguments` parsed leniently |
//! | `custom_tool_call` (`call_id`, `name`, `input` raw string) | a call with args `{"input": input}` |
//! | `local_shell_call` (`call_id`, `action{type:"exec",command[],…}`) | a call of tool `local_shell`, args = `action` |
//! | Codex `write_stdin` with empty `chars`, or a code-mode `exec` whose script only calls `tools.write_stdin({session_id, chars: ""})` | OpenClaw's known poll: tool `process`, args `{action:"poll", sessionId}` |
//! | `mcp_call` (`id`, `name`, `arguments`, `output`, `error`) | a call and its outcome at once: `error` → error, else `output` → result; neither → unanswered |
//! | `function_call_output`, `custom_tool_call_output`, `local_shell_call_output` (`call_id`, `output`) | the result, as [`text_result`] of the output text (a string, content parts, or `{content}`); a Codex exec output (below) without its timing |
//! | any other `<kind>_call` / `<kind>_call_output` with a `call_id` (for example `computer_call`) | a call of tool `<kind>` (args: `arguments`, `action` or `input`) / its result |
//! | `compaction` (also `compaction_summary`) | a compaction |
//! | `message` with role `user` (also a bare `{role, content}`) | a run boundary (`run-1`, `run-2`, …) |
//! | `reasoning`, `web_search_call` without `call_id`, other types | ignored |
//!
//! There is no error flag on function outputs, so they stay results.
//!
//! **Exec outputs.** Codex reports a command's wall time inside its output text, either as
//! the JSON `{"output":"…","metadata":{"exit_code":0,"duration_seconds":1.2}}` or as the
//! text `Exit code: 0\nWall time: 1.2 seconds\nOutput:\n…`. The time changes on every run
//! of the same command, so such an output becomes
//! `{"content":[{"type":"text","text":"…"}],"details":{"exitCode":0}}`: the output and the
//! exit code are hashed, the duration is not (as the README promises), and a command that
//! keeps printing the same thing is seen as a loop. Newer Codex versions (0.171) write
//! `Chunk ID: …\nWall time: …\nProcess exited with code N\nOriginal token count: T\nOutput:\n…`:
//! the same shape is kept, without the chunk id, time and token count.
//!
//! **Refusals.** An output that is loopguard's own deny (`Command blocked by PreToolUse
//! hook: CRITICAL: …`) is OpenClaw's loop veto, which has no hash: a call the hook blocked
//! stays blocked in replay, and the next identical call is blocked again, as live.
//!
//! ## Codex CLI rollouts ([`CodexRolloutAdapter`])
//!
//! `~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`, one
//! `{"timestamp","type","payload"}` per line (`RolloutLine` / `RolloutItem` in
//! `codex-rs/protocol/src/protocol.rs`):
//!
//! * `response_item`: the payload is a Responses item, read as above (Codex's
//!   `ResponseItem`: `function_call`, `function_call_output` whose `output` is a string or
//!   content items, `custom_tool_call`, `custom_tool_call_output`, `local_shell_call`, …);
//! * `compacted` (`{message, replacement_history?}`) and `event_msg`
//!   `{"type":"context_compacted"}`: a compaction. Codex writes both for one compaction,
//!   so a compaction marker that follows another with no call, result or user message in
//!   between is not repeated;
//! * `event_msg` `{"type":"user_message"}` or a `response_item` user message: a run
//!   boundary. Codex writes both for one prompt, and a boundary only starts a new run when
//!   the current run made calls, so they count once;
//! * `session_meta`, `turn_context`, `world_state`, `token_usage_record` (Codex 0.171) and
//!   the other `event_msg` types: ignored;
//! * any other line type: an `UnknownEntry` diagnostic.
//!
//! A rollout's calls are read with Codex's row of the agents' tool table
//! (`loopguard_guard::profile::agents`), as `loopguard hook codex` reads them, and judged
//! with the `claude-code` profile ([`SourcedEvent::profile`]): `exec_command {cmd,
//! yield_time_ms, …}` (and `shell`, `local_shell`, `container.exec`) is `Bash {command}`
//! without the fields Codex's hook payload leaves out (`justification`, `yield_time_ms`,
//! `max_output_tokens`); `write_stdin` with empty `chars` and a code-mode poll are
//! `BashOutput {bash_id}`; a shell command's output is the command's output alone (what the
//! hook receives as `tool_response`: the exec output above without its header, then the
//! volatile lines and any `loopguard: …` note dropped). Other tools' outputs are read as in
//! a Responses document. So a call and its outcome get the same digests live and in replay.
//!
//! Timestamps come from each line's `timestamp`. Codex's `token_count` events arrive after
//! a response's tool calls may already have run, so they are not attributed to calls.
//!
//! A line that cannot be used at all returns its diagnostic; problems inside a usable line
//! and unpaired calls and results are returned by `finish`, in line order.

use loopguard_core::{JsString, Object, Value};
use loopguard_events::Payload;
use loopguard_guard::profile::agents::{tools_of, AgentTools, POLL, SHELL};

use crate::common::{
    arguments, content_text, document_error, each_numbered, empty, id_field, str_field,
    text_result, ts_of, PendingCall, Runs, Tracker,
};
use crate::common::{line_type, object_line};
use crate::{
    Adapted, Context, Diagnostic, DiagnosticKind, DocumentAdapter, LineAdapter, SourcedEvent,
};

/// The state shared by Responses documents and Codex rollouts.
#[derive(Debug)]
struct Items {
    tracker: Tracker,
    runs: Runs,
    /// A compaction was emitted and nothing happened since.
    compacted: bool,
    /// Codex's row of the agents' tool table, for a rollout (`None`: a Responses
    /// document, whose tools are taken as given).
    agent: Option<&'static AgentTools>,
}

/// The result of a tool output: a string, content parts, or an object with `content`, as
/// [`text_result`] of its text, or as [`exec_result`] when the text is a Codex exec output.
fn output_payload(v: Option<&Value<'_>>) -> Value<'static> {
    match v {
        None | Some(Value::Null) => text_result(""),
        Some(v @ (Value::String(_) | Value::Array(_))) => text_payload(&content_text(v)),
        Some(v @ Value::Object(_)) => match v.get("content") {
            Some(c @ (Value::String(_) | Value::Array(_))) => text_payload(&content_text(c)),
            _ => v.clone().into_owned(),
        },
        Some(other) => other.clone().into_owned(),
    }
}

/// The result of an output text: a Codex exec output without its timing, else the text.
/// A call loopguard's hook refused (`Command blocked by PreToolUse hook: CRITICAL: …`) is
/// OpenClaw's loop veto, which has no hash ([`crate::common::loopguard_refusal`]).
fn text_payload(text: &str) -> Value<'static> {
    if let Some(message) = crate::common::loopguard_refusal(text) {
        return loopguard_core::veto_result(&JsString::from(message));
    }
    exec_result(text).unwrap_or_else(|| text_result(text))
}

/// Codex's exec outputs (shell, local shell, apply_patch, …), written by
/// `format_exec_output_for_model_structured` and `…_freeform` in
/// `codex-rs/core/src/tools/mod.rs`, carry the command's wall time, which differs on every
/// run of the same command and would make every outcome look new:
///
/// * structured: the JSON text `{"output":"…","metadata":{"exit_code":N,
///   "duration_seconds":X}}`;
/// * freeform: `Exit code: N\nWall time: X seconds\n[Total output lines: L\n]Output:\n…`.
///
/// Both become `{"content":[{"type":"text","text":output}],"details":{"exitCode":N}}`, so
/// only the output and the exit code (and the other stable fields: other metadata,
/// `totalOutputLines`) are hashed; `duration_seconds`, the wall time and any other timing
/// are dropped. A timed-out command's output starts with `command timed out after MS
/// milliseconds`: that line becomes `"timedOut": true`. `None` when `text` is neither form.
///
/// ```text
/// {"output":"ok\n","metadata":{"exit_code":0,"duration_seconds":1.2}}
///   → {"content":[{"type":"text","text":"ok\n"}],"details":{"exitCode":0}}
/// ```
fn exec_result(text: &str) -> Option<Value<'static>> {
    let (output, mut details) = structured_exec(text)
        .or_else(|| freeform_exec(text))
        .or_else(|| chunked_exec(text))?;
    let output = match strip_timeout(&output) {
        Some(rest) => {
            details.push(("timedOut".into(), Value::Bool(true)));
            rest.to_string()
        }
        None => output,
    };
    let content = text_result(&output)
        .get("content")
        .cloned()
        .unwrap_or(Value::Null);
    Some(Value::Object(Object::from_entries(vec![
        ("content".into(), content),
        (
            "details".into(),
            Value::Object(Object::from_entries(details)),
        ),
    ])))
}

/// The output of a Codex exec output text (any of [`exec_result`]'s forms) without its
/// header: what `loopguard hook codex` receives as the command's `tool_response`.
/// A timed-out command's output keeps `command timed out` without its milliseconds, which
/// differ on every run.
fn exec_output(text: &str) -> Option<String> {
    let (output, _) = structured_exec(text)
        .or_else(|| freeform_exec(text))
        .or_else(|| chunked_exec(text))?;
    Some(match strip_timeout(&output) {
        Some(rest) => format!("command timed out\n{rest}"),
        None => output,
    })
}

/// Details of an exec result.
type ExecDetails = Vec<(JsString<'static>, Value<'static>)>;

/// `true` for metadata keys that measure time rather than progress.
fn is_timing_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["duration", "elapsed", "wall_time", "walltime"]
        .iter()
        .any(|t| k.contains(t))
}

/// The structured form: `{"output": string, "metadata": {"exit_code": number, …}}`.
fn structured_exec(text: &str) -> Option<(String, ExecDetails)> {
    let t = text.trim();
    if !t.starts_with('{') || !t.contains("\"metadata\"") {
        return None;
    }
    let v = loopguard_core::json::parse(t.as_bytes()).ok()?;
    let output = v.get("output")?.as_js_str()?.to_string_lossy().into_owned();
    let metadata = v.get("metadata")?.as_object()?;
    let exit_code = metadata.get("exit_code")?.as_f64()?;
    let mut details: ExecDetails = vec![("exitCode".into(), Value::Number(exit_code))];
    let stable = |k: &JsString<'_>| !k.as_str().is_some_and(is_timing_key);
    for (k, val) in metadata.iter() {
        if k.as_wtf8() != b"exit_code" && stable(k) {
            details.push((k.clone().into_owned(), val.clone().into_owned()));
        }
    }
    for (k, val) in v.as_object()?.iter() {
        if !matches!(k.as_wtf8(), b"output" | b"metadata") && stable(k) {
            details.push((k.clone().into_owned(), val.clone().into_owned()));
        }
    }
    Some((output, details))
}

/// The unified-exec form of newer Codex versions: `Chunk ID: X`, `Wall time: X
/// seconds`, then `Process exited with code N` (or `Process running with session ID N`,
/// kept as `sessionId`), optionally `Original token count: T` and `Total output lines: L`,
/// then `Output:` and the output, one per line. The chunk id, wall time and token count
/// change on every run (they are among the agents' volatile lines) and are dropped.
fn chunked_exec(text: &str) -> Option<(String, ExecDetails)> {
    if !text.starts_with("Chunk ID: ") {
        return None;
    }
    let mut details: ExecDetails = Vec::new();
    let mut rest = text;
    loop {
        let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        if line == "Output:" {
            rest = tail;
            break;
        }
        if let Some(c) = line.strip_prefix("Process exited with code ") {
            details.push((
                "exitCode".into(),
                Value::from(c.trim().parse::<i64>().ok()?),
            ));
        } else if let Some(id) = line.strip_prefix("Process running with session ID ") {
            details.push(("sessionId".into(), Value::from(id.trim().to_string())));
        } else if let Some(n) = line.strip_prefix("Total output lines: ") {
            details.push((
                "totalOutputLines".into(),
                Value::from(n.trim().parse::<i64>().ok()?),
            ));
        } else if !["Chunk ID: ", "Wall time: ", "Original token count: "]
            .iter()
            .any(|p| line.starts_with(p))
        {
            return None;
        }
        if tail.is_empty() {
            return None;
        }
        rest = tail;
    }
    Some((rest.to_string(), details))
}

/// The freeform form: `Exit code: N`, `Wall time: X seconds`, optionally `Total output
/// lines: L`, then `Output:` and the output, one per line.
fn freeform_exec(text: &str) -> Option<(String, ExecDetails)> {
    let rest = text.strip_prefix("Exit code: ")?;
    let (code, rest) = rest.split_once('\n')?;
    let code: i64 = code.trim().parse().ok()?;
    let (wall, rest) = rest.split_once('\n')?;
    let wall = wall.strip_prefix("Wall time: ")?.strip_suffix(" seconds")?;
    wall.trim().parse::<f64>().ok()?;
    let mut details: ExecDetails = vec![("exitCode".into(), Value::from(code))];
    let rest = match rest.strip_prefix("Total output lines: ") {
        Some(r) => {
            let (lines, r) = r.split_once('\n')?;
            let lines: i64 = lines.trim().parse().ok()?;
            details.push(("totalOutputLines".into(), Value::from(lines)));
            r
        }
        None => rest,
    };
    let output = match rest.strip_prefix("Output:") {
        Some("") => "",
        Some(r) => r.strip_prefix('\n')?,
        None => return None,
    };
    Some((output.to_string(), details))
}

/// The output after Codex's `command timed out after MS milliseconds` line, when it has one.
fn strip_timeout(output: &str) -> Option<&str> {
    let rest = output.strip_prefix("command timed out after ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].strip_prefix(" milliseconds")?;
    match rest.strip_prefix('\n') {
        Some(r) => Some(r),
        None if rest.is_empty() => Some(rest),
        None => None,
    }
}

/// A Codex poll of a running command, as OpenClaw's known poll `process`
/// `{action: "poll", sessionId}`: `write_stdin` with empty `chars`, or a code-mode `exec`
/// script (`input`) whose only call is `tools.write_stdin({session_id, chars: ""})`. The
/// hook maps the same calls the same way (`loopguard_guard::profile::agents`), so replay of a
/// rollout and the live hook agree.
pub(crate) fn codex_poll(tool: &str, args: &Value<'_>) -> Option<Value<'static>> {
    let id = match tool {
        "write_stdin" => {
            if !loopguard_core::detection::is_wait_call(b"write_stdin", args) {
                return None;
            }
            args.get("session_id")
                .cloned()
                .unwrap_or(Value::Null)
                .into_owned()
        }
        "exec" => {
            let code = ["input", "code", "script", "source"]
                .iter()
                .find_map(|k| args.get(k).and_then(Value::as_str))?
                .to_string();
            let probe = Value::Object(Object::from_entries(vec![(
                "code".to_string().into(),
                Value::from(code.clone()),
            )]));
            if !loopguard_core::detection::is_wait_call(b"exec", &probe) {
                return None;
            }
            let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
            if squeezed.matches("write_stdin(").count() != 1 {
                return None;
            }
            let at = squeezed.find("session_id")? + "session_id".len();
            let rest = squeezed[at..].trim_start_matches(['"', '\'', ':']);
            let end = rest.find([',', '}', ')']).unwrap_or(rest.len());
            let raw = rest[..end].trim_matches(['"', '\'', '`']);
            match raw.parse::<f64>() {
                Ok(n) => Value::Number(n),
                Err(_) => Value::from(raw.to_string()),
            }
        }
        _ => return None,
    };
    Some(Value::Object(Object::from_entries(vec![
        ("action".to_string().into(), Value::from("poll".to_string())),
        ("sessionId".to_string().into(), id),
    ])))
}

fn bad(no: u64, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(no, DiagnosticKind::BadField, message)
}

impl Items {
    fn new(ctx: &Context) -> Self {
        Items {
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
            compacted: false,
            agent: None,
        }
    }

    /// The payload of a rollout's tool output for the (mapped) `tool`, as `loopguard hook
    /// codex` sees it: a shell command's or poll's output alone (the hook's
    /// `tool_response` is the command's output, without Codex's header), read by Codex's
    /// row; loopguard's own deny is a refusal; any other tool's output as a Responses
    /// document's.
    fn agent_payload(
        tools: &AgentTools,
        tool: &str,
        output: Option<&Value<'_>>,
    ) -> Payload<'static> {
        let text = match output {
            Some(v @ (Value::String(_) | Value::Array(_))) => Some(content_text(v)),
            Some(v @ Value::Object(_)) => match v.get("content") {
                Some(c @ (Value::String(_) | Value::Array(_))) => Some(content_text(c)),
                _ => None,
            },
            _ => None,
        };
        if let Some(p) = text.as_deref().and_then(crate::common::refusal_payload) {
            return p;
        }
        if tool != SHELL && tool != POLL {
            return Payload::Result(output_payload(output));
        }
        let text = text.unwrap_or_default();
        let body = exec_output(&text).unwrap_or(text);
        let body = crate::common::without_loopguard_notes(&body).to_string();
        Payload::Result(tools.map_result(tool, &Value::from(body)).into_owned())
    }

    fn boundary(&mut self, out: &mut Vec<SourcedEvent>) {
        self.tracker.end_turn(out);
        self.runs.boundary();
        self.compacted = false;
    }

    fn compaction(&mut self, no: u64, ts: u64, out: &mut Vec<SourcedEvent>) {
        if !self.compacted {
            self.tracker.compaction(no, &self.runs.current(), ts, out);
            self.compacted = true;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        no: u64,
        key: Option<String>,
        tool: &str,
        args: Value<'static>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        let (tool, args) = match self.agent {
            Some(tools) => tools.map_call(tool, &args),
            None => match codex_poll(tool, &args) {
                Some(poll) => ("process".to_string(), poll),
                None => (tool.to_string(), args),
            },
        };
        let mut call = PendingCall::new(no, &self.runs.current(), key.clone(), &tool, args);
        call.ts = ts;
        self.tracker.call(key, call, out);
        self.runs.used();
        self.compacted = false;
    }

    /// Codex's `exec_command_end` event (`call_id`, `aggregated_output` or `stdout` and
    /// `stderr`, `exit_code`): the outcome of its call if the rollout never writes the
    /// call's `function_call_output` (a session saved mid-turn), in the shape
    /// [`exec_result`] gives exec outputs (the duration left out).
    fn exec_end(&mut self, no: u64, payload: Option<&Value<'_>>, ts: u64) {
        let Some(p) = payload else { return };
        let Some(id) = id_field(p, "call_id") else {
            return;
        };
        let output = match str_field(p, "aggregated_output") {
            Some(o) => o.to_string(),
            None => {
                let out = str_field(p, "stdout").unwrap_or("");
                let err = str_field(p, "stderr").unwrap_or("");
                format!("{out}{err}")
            }
        };
        let output_text = output.clone();
        let block = Value::Object(Object::from_entries(vec![
            ("type".into(), Value::from("text")),
            ("text".into(), Value::from(output)),
        ]));
        let mut fields = vec![("content".into(), Value::Array(vec![block]))];
        if let Some(code) = p.get("exit_code").and_then(Value::as_f64) {
            fields.push((
                "details".into(),
                Value::Object(Object::from_entries(vec![(
                    "exitCode".into(),
                    Value::Number(code),
                )])),
            ));
        }
        let payload = match self.agent {
            Some(tools) => Payload::Result(
                tools
                    .map_result(SHELL, &Value::from(output_text))
                    .into_owned(),
            ),
            None => Payload::Result(Value::Object(Object::from_entries(fields))),
        };
        self.tracker.fallback(no, &id, payload, ts);
    }

    fn result(&mut self, no: u64, item: &Value<'_>, ts: u64, out: &mut Vec<SourcedEvent>) {
        let key = id_field(item, "call_id");
        if let Some(tools) = self.agent {
            // The payload depends on the call's mapped tool: paired first.
            if let Some(call) = self.tracker.take(key.as_deref()) {
                let payload = Self::agent_payload(tools, &call.tool, item.get("output"));
                self.tracker.emit(call, no, payload, ts, out);
                self.compacted = false;
                return;
            }
        }
        let payload = Payload::Result(output_payload(item.get("output")));
        self.tracker.result(no, key.as_deref(), payload, ts, out);
        self.compacted = false;
    }

    /// One item; an unusable item returns a diagnostic and changes nothing.
    fn item(
        &mut self,
        no: u64,
        item: &Value<'_>,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        if item.as_object().is_none() {
            return Err(bad(no, "an item must be a JSON object"));
        }
        let ty = match str_field(item, "type") {
            Some(t) => t,
            None if item.get("role").is_some() => "message",
            None => return Err(bad(no, "field `type`: missing or not a string")),
        };
        let call_id = || id_field(item, "call_id").or_else(|| id_field(item, "id"));
        match ty {
            "message" if str_field(item, "role") == Some("user") => self.boundary(out),
            "function_call" => {
                let name = str_field(item, "name")
                    .ok_or_else(|| bad(no, "function_call: field `name` missing"))?;
                let args = arguments(item.get("arguments"));
                self.call(no, call_id(), name, args, ts, out);
            }
            "custom_tool_call" => {
                let name = str_field(item, "name")
                    .ok_or_else(|| bad(no, "custom_tool_call: field `name` missing"))?;
                let input = item
                    .get("input")
                    .cloned()
                    .unwrap_or(Value::Null)
                    .into_owned();
                let args = Value::Object(Object::from_entries(vec![("input".into(), input)]));
                self.call(no, call_id(), name, args, ts, out);
            }
            "local_shell_call" => {
                let args = match item.get("action") {
                    Some(a @ Value::Object(_)) => a.clone().into_owned(),
                    _ => empty(),
                };
                self.call(no, call_id(), "local_shell", args, ts, out);
            }
            "mcp_call" => {
                let name = str_field(item, "name")
                    .ok_or_else(|| bad(no, "mcp_call: field `name` missing"))?;
                let args = arguments(item.get("arguments"));
                let id = id_field(item, "id");
                let mut call = PendingCall::new(no, &self.runs.current(), id, name, args);
                call.ts = ts;
                self.runs.used();
                self.compacted = false;
                let payload = match (item.get("error"), item.get("output")) {
                    (Some(e), _) if !e.is_null() => Payload::Error(e.clone().into_owned()),
                    (_, Some(o)) if !o.is_null() => Payload::Result(output_payload(Some(o))),
                    _ => {
                        self.tracker.replay_alone(call, out);
                        return Ok(());
                    }
                };
                self.tracker.emit(call, no, payload, ts, out);
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                self.result(no, item, ts, out);
            }
            "compaction" | "compaction_summary" => self.compaction(no, ts, out),
            t if t.ends_with("_call_output") && id_field(item, "call_id").is_some() => {
                self.result(no, item, ts, out);
            }
            t if t.ends_with("_call") && id_field(item, "call_id").is_some() => {
                let tool = &t[..t.len() - "_call".len()];
                let args = if let Some(a) = item.get("arguments") {
                    arguments(Some(a))
                } else if let Some(a) = item.get("action") {
                    a.clone().into_owned()
                } else if let Some(i) = item.get("input") {
                    Value::Object(Object::from_entries(vec![(
                        "input".into(),
                        i.clone().into_owned(),
                    )]))
                } else {
                    empty()
                };
                self.call(no, call_id(), tool, args, ts, out);
            }
            _ => {}
        }
        Ok(())
    }
}

/// OpenAI Responses items as a JSON document.
///
/// ```
/// use loopguard_adapters::{responses::Responses, Context, DocumentAdapter};
/// let doc = br#"[{"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"/a\"}"},
///   {"type":"function_call_output","call_id":"c1","output":"text"}]"#;
/// let a = Responses.adapt(doc, &Context::default()).unwrap();
/// assert_eq!(a.events.len(), 2);
/// assert!(a.diagnostics.is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Responses;

impl DocumentAdapter for Responses {
    fn adapt(&self, doc: &[u8], ctx: &Context) -> Result<Adapted, Diagnostic> {
        let value = loopguard_core::json::parse(doc).map_err(|e| document_error(doc, &e))?;
        let mut lists: Vec<&[Value<'_>]> = Vec::new();
        let mut leading_prompt = false;
        match &value {
            Value::Array(items) => lists.push(items),
            Value::Object(_) => {
                for key in ["input", "output", "items"] {
                    match value.get(key) {
                        Some(Value::Array(items)) => lists.push(items),
                        Some(Value::String(_)) if key == "input" => leading_prompt = true,
                        _ => {}
                    }
                }
                if lists.is_empty() {
                    return Err(bad(
                        1,
                        "expected an array of items or an object with `input`, `output` or `items`",
                    ));
                }
            }
            _ => return Err(bad(1, "expected an array of items or an object")),
        }
        let mut items = Items::new(ctx);
        let mut adapted = Adapted::default();
        if leading_prompt {
            items.boundary(&mut adapted.events);
        }
        // A response object's `created_at` dates its items when they have none.
        let default_ts = ts_of(&value, "created_at");
        each_numbered(
            lists.into_iter().flatten(),
            &mut adapted,
            |no, item, out| {
                let ts = match ts_of(item, "created_at") {
                    0 => default_ts,
                    t => t,
                };
                items.item(no, item, ts, out)
            },
        );
        Ok(items.tracker.finish_document(adapted))
    }
}

/// Codex CLI rollout JSONL (`~/.codex/sessions/…/rollout-*.jsonl`).
///
/// ```
/// use loopguard_adapters::{responses::CodexRolloutAdapter, Context, LineAdapter};
/// let mut a = CodexRolloutAdapter::new(Context::default());
/// let mut out = Vec::new();
/// a.line(1, br#"{"timestamp":"2026-01-02T03:04:09.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#, &mut out).unwrap();
/// a.line(2, br#"{"timestamp":"2026-01-02T03:04:10.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a.txt"}}"#, &mut out).unwrap();
/// assert!(a.finish(&mut out).is_empty());
/// assert_eq!(out.len(), 2);
/// ```
#[derive(Debug)]
pub struct CodexRolloutAdapter {
    items: Items,
}

impl CodexRolloutAdapter {
    /// An adapter for the session and agent of `ctx`.
    pub fn new(ctx: Context) -> Self {
        let mut items = Items::new(&ctx);
        items.agent = Some(tools_of("codex"));
        CodexRolloutAdapter { items }
    }
}

/// Events from `from` on are judged with the `claude-code` profile, as `loopguard hook
/// codex` judges Codex's calls.
fn mark(out: &mut [SourcedEvent], from: usize) {
    for e in &mut out[from..] {
        e.profile = Some(crate::agent_log::PROFILE);
    }
}

impl LineAdapter for CodexRolloutAdapter {
    fn line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let from = out.len();
        let done = self.rollout_line(no, text, out);
        mark(out, from);
        done
    }

    fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let from = out.len();
        let diags = self.items.tracker.finish(out);
        mark(out, from);
        diags
    }
}

impl CodexRolloutAdapter {
    fn rollout_line(
        &mut self,
        no: u64,
        text: &[u8],
        out: &mut Vec<SourcedEvent>,
    ) -> Result<(), Diagnostic> {
        let Some(v) = object_line(no, text, "a rollout line")? else {
            return Ok(());
        };
        let ty = line_type(no, &v, "a rollout line")?;
        let ts = ts_of(&v, "timestamp");
        let payload = v.get("payload");
        match ty {
            // Codex 0.171 adds `world_state` and `token_usage_record` bookkeeping lines.
            "session_meta" | "turn_context" | "world_state" | "token_usage_record" => Ok(()),
            "response_item" => match payload {
                Some(p @ Value::Object(_)) => self.items.item(no, p, ts, out),
                _ => Err(bad(no, "response_item: field `payload` missing")),
            },
            "compacted" => {
                self.items.compaction(no, ts, out);
                Ok(())
            }
            "event_msg" => {
                match payload.and_then(|p| str_field(p, "type")) {
                    Some("user_message") => self.items.boundary(out),
                    Some("context_compacted") => self.items.compaction(no, ts, out),
                    Some("exec_command_end") => self.items.exec_end(no, payload, ts),
                    _ => {}
                }
                Ok(())
            }
            other => Err(Diagnostic::new(
                no,
                DiagnosticKind::UnknownEntry,
                format!("unknown rollout line type {other:?}; skipped"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopguard_events::EventKind;

    fn ctx() -> Context {
        Context {
            session: "s".into(),
            agent: Some("main".into()),
        }
    }

    fn adapt(doc: &str) -> Adapted {
        Responses.adapt(doc.as_bytes(), &ctx()).unwrap()
    }

    fn rollout(lines: &[&str]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
        crate::feed_lines(&mut CodexRolloutAdapter::new(ctx()), lines)
    }

    /// Codex polls (plain and from code mode) become Claude Code's `BashOutput` poll, as
    /// Codex's row of the tool table maps them for the hook (the `claude-code` profile
    /// hashes it as OpenClaw's `process` poll), so 25 unchanged polls are
    /// `known_poll_no_progress`, never `generic_repeat`.
    #[test]
    fn codex_polls_are_process_polls() {
        let mut lines = Vec::new();
        for i in 0..25 {
            let call = if i % 2 == 0 {
                format!(
                    r#"{{"timestamp":"2026-01-02T03:04:09.000Z","type":"response_item","payload":{{"type":"function_call","name":"write_stdin","arguments":"{{\"session_id\":3,\"chars\":\"\"}}","call_id":"c{i}"}}}}"#
                )
            } else {
                format!(
                    r#"{{"timestamp":"2026-01-02T03:04:09.000Z","type":"response_item","payload":{{"type":"custom_tool_call","name":"exec","input":"const r = await tools.write_stdin({{session_id: 3, chars: \"\"}});\ntext(r);","call_id":"c{i}"}}}}"#
                )
            };
            lines.push(call);
            lines.push(format!(r#"{{"timestamp":"2026-01-02T03:04:10.000Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{i}","output":"building..."}}}}"#));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (events, diags) = rollout(&refs);
        assert!(diags.is_empty(), "{diags:?}");
        let calls: Vec<_> = events
            .iter()
            .filter(|e| e.event.tool.is_some() && e.event.kind == EventKind::Call)
            .collect();
        assert_eq!(calls.len(), 25);
        let want = Value::parse(br#"{"bash_id":3}"#).unwrap();
        for c in calls {
            assert_eq!(
                c.event.tool.as_ref().and_then(|t| t.as_str()),
                Some("BashOutput")
            );
            assert_eq!(c.event.args, want);
            assert_eq!(c.profile, Some("claude-code"));
        }
        // Typing something is not a poll.
        let typing = r#"{"timestamp":"2026-01-02T03:04:09.000Z","type":"response_item","payload":{"type":"function_call","name":"write_stdin","arguments":"{\"session_id\":3,\"chars\":\"y\"}","call_id":"t"}}"#;
        let (events, _) = rollout(&[typing]);
        let call = events.iter().find(|e| e.event.kind == EventKind::Call);
        let tool = call
            .and_then(|e| e.event.tool.as_ref())
            .and_then(|t| t.as_str());
        assert_eq!(tool, Some("write_stdin"));
    }

    #[test]
    fn each_call_kind() {
        let a = adapt(
            r#"{"output":[
            {"type":"function_call","id":"fc_1","call_id":"c1","name":"read","arguments":"{\"p\":1}"},
            {"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},
            {"type":"local_shell_call","call_id":"c3","status":"completed","action":{"type":"exec","command":["ls"]}},
            {"type":"mcp_call","id":"m1","server_label":"gh","name":"search","arguments":"{}","output":"found","error":null},
            {"type":"mcp_call","id":"m2","server_label":"gh","name":"search","arguments":"{}","output":null,"error":"boom"},
            {"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"one"}]},
            {"type":"custom_tool_call_output","call_id":"c2","output":"Done!"},
            {"type":"function_call_output","call_id":"c3","output":{"content":"a b","success":true}}]}"#,
        );
        assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
        let tools: Vec<_> = a
            .events
            .iter()
            .map(|e| e.event.tool.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(
            tools,
            [
                "search",
                "search",
                "search",
                "search",
                "read",
                "read",
                "apply_patch",
                "apply_patch",
                "local_shell",
                "local_shell"
            ]
        );
        assert_eq!(
            a.events[3].event.payload,
            Some(Payload::Error(Value::from("boom")))
        );
        assert_eq!(
            a.events[5].event.payload,
            Some(Payload::Result(text_result("one")))
        );
        assert_eq!(
            a.events[6].event.args,
            Value::parse(br#"{"input":"*** Begin Patch"}"#).unwrap()
        );
        assert_eq!(
            a.events[8].event.args,
            Value::parse(br#"{"type":"exec","command":["ls"]}"#).unwrap()
        );
        assert_eq!(
            a.events[9].event.payload,
            Some(Payload::Result(text_result("a b")))
        );
    }

    #[test]
    fn exec_outputs_lose_their_timing_and_other_texts_stay_text() {
        let v = |t: &str| Value::parse(t.as_bytes()).unwrap().into_owned();
        let exec = |text: &str, details: &str| {
            v(&format!(
                r#"{{"content":[{{"type":"text","text":{text:?}}}],"details":{details}}}"#
            ))
        };
        let cases = [
            (
                r#"{"output":"a\n","metadata":{"exit_code":1,"duration_seconds":0.3,"durationMs":300,"elapsed_ms":3,"signal":null},"truncated":false}"#,
                exec("a\n", r#"{"exitCode":1,"signal":null,"truncated":false}"#),
            ),
            (
                "Exit code: 0\nWall time: 12 seconds\nTotal output lines: 900\nOutput:\nlast lines",
                exec("last lines", r#"{"exitCode":0,"totalOutputLines":900}"#),
            ),
            (
                "Exit code: -1\nWall time: 0.5 seconds\nOutput:\n",
                exec("", r#"{"exitCode":-1}"#),
            ),
            (
                "Exit code: 124\nWall time: 10 seconds\nOutput:\ncommand timed out after 10004 milliseconds",
                exec("", r#"{"exitCode":124,"timedOut":true}"#),
            ),
            // Not exec outputs: kept as text.
            (r#"{"output":"x"}"#, text_result(r#"{"output":"x"}"#)),
            (
                r#"{"output":"x","metadata":{"duration_seconds":1}}"#,
                text_result(r#"{"output":"x","metadata":{"duration_seconds":1}}"#),
            ),
            (
                "Exit code: 0\nno wall time\nOutput:\nx",
                text_result("Exit code: 0\nno wall time\nOutput:\nx"),
            ),
            (
                "Exit code: 0\nWall time: 1 seconds\nx",
                text_result("Exit code: 0\nWall time: 1 seconds\nx"),
            ),
            ("{not json \"metadata\"", text_result("{not json \"metadata\"")),
            (
                "command timed out after 5 milliseconds\nx",
                text_result("command timed out after 5 milliseconds\nx"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(output_payload(Some(&Value::from(text))), want, "{text}");
        }
        // `{content}` objects too.
        let wrapped =
            v(r#"{"content":"Exit code: 2\nWall time: 3.1 seconds\nOutput:\nno","success":false}"#);
        assert_eq!(
            output_payload(Some(&wrapped)),
            exec("no", r#"{"exitCode":2}"#)
        );
    }

    #[test]
    fn compaction_and_runs() {
        let a = adapt(
            r#"[{"role":"user","content":"hi"},
            {"type":"function_call","call_id":"c1","name":"x","arguments":"{}"},
            {"type":"function_call_output","call_id":"c1","output":"r"},
            {"type":"compaction","encrypted_content":"..."},
            {"type":"message","role":"user","content":[{"type":"input_text","text":"again"}]},
            {"type":"function_call","call_id":"c2","name":"x","arguments":"{}"},
            {"type":"mcp_call","id":"m","name":"y","arguments":"{}"},
            {"type":"function_call_output","call_id":"zz","output":"r"}]"#,
        );
        assert_eq!(a.events[2].event.kind, EventKind::Compaction);
        assert_eq!(a.events[2].event.run.as_ref().unwrap().to_string(), "run-1");
        let kinds: Vec<_> = a.diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (6, DiagnosticKind::Unanswered),
                (7, DiagnosticKind::Unanswered),
                (8, DiagnosticKind::Orphan)
            ]
        );
    }

    #[test]
    fn codex_compaction_is_counted_once() {
        let (events, diags) = rollout(&[
            r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"x"}}"#,
            r#"{"timestamp":"2026-01-02T03:04:06.000Z","type":"compacted","payload":{"message":"","replacement_history":[]}}"#,
            r#"{"timestamp":"2026-01-02T03:04:06.001Z","type":"event_msg","payload":{"type":"context_compacted"}}"#,
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"mystery","payload":{}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","call_id":"c","arguments":"{}"}}"#,
            r#"not json"#,
        ]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].line, 2);
        assert_eq!(events[0].event.timestamp_ms, 1767323046000);
        let kinds: Vec<_> = diags.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            [
                (4, DiagnosticKind::UnknownEntry),
                (5, DiagnosticKind::BadField),
                (6, DiagnosticKind::NotJson)
            ]
        );
    }

    #[test]
    fn codex_user_message_pair_is_one_boundary() {
        let call = |id: &str| {
            format!(
                r#"{{"type":"response_item","payload":{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{id}"}}}}"#
            )
        };
        let output = |id: &str| {
            format!(
                r#"{{"type":"response_item","payload":{{"type":"function_call_output","call_id":"{id}","output":"ok"}}}}"#
            )
        };
        let user_evt = r#"{"type":"event_msg","payload":{"type":"user_message","message":"go"}}"#;
        let user_item = r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}"#;
        let (c1, o1, c2, o2) = (call("a"), output("a"), call("b"), output("b"));
        let (events, diags) =
            rollout(&[user_evt, user_item, &c1, &o1, user_evt, user_item, &c2, &o2]);
        assert!(diags.is_empty(), "{diags:?}");
        let runs: Vec<_> = events
            .iter()
            .map(|e| e.event.run.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(runs, ["run-1", "run-1", "run-2", "run-2"]);
    }
}
