//! The Claude Code tool profile: Claude Code's tools as OpenClaw-shaped calls and results.
//!
//! loopguard's engine hashes a few OpenClaw tools specially, so that noise does not hide a
//! loop and progress is not mistaken for one. Claude Code's tools are mapped onto those
//! shapes before the engine sees them; every other tool keeps its name.
//!
//! | Claude Code tool | engine tool | arguments hashed | outcome hashed |
//! |------------------|-------------|------------------|----------------|
//! | `Bash` | `exec` | `tool_input` without `description` (the model's free-text label) | exec-shaped: `{content:[text], details:{status, exitCode, aggregated, timedOut}}`; `status` is `completed`, or `failed` when the exit code is non-zero or the command was `interrupted`; `aggregated` is stdout and stderr joined by a newline. The engine hashes only status, exit code, timeout flag and trimmed output, so `backgroundTaskId`, `isImage` and the other fields never count |
//! | `Bash` failing (`PostToolUseFailure`) | `exec` | as above | `{status:"failed", exitCode: N from a leading "Exit code N", aggregated: the rest of the error, timedOut: is_interrupt}` |
//! | `BashOutput`, `TaskOutput`, `AgentOutputTool` (background-shell and task polling) | `process` with `action: "poll"` | `{action:"poll", sessionId: bash_id / shell_id / task_id / agentId, filter?}` (`block` and `timeout` do not make a poll different) | `{content:[output], details:{status, exitCode, aggregated: output}}` from the response (or its `task`); a poll whose answer does not change is a known poll without progress |
//! | `TodoWrite` | `update_plan` | `{plan:[{step: content, status}]}`: the engine keeps only the statuses and the number of steps, so rewording the same list is a repeat | `{details:{plan: newTodos}}`, hashed by shape the same way |
//! | anything else, including `mcp__server__tool` | the same name, whole | `tool_input` as given | a string becomes `{content:[{type:"text",text}]}`, an array `{content: array}`, an object `{content: its content array, details: its other fields}` without the volatile `durationMs`, `duration_ms`, `durationSeconds`, `totalDurationMs`, `totalTokens`, `totalToolUseCount`, `usage`, `timestamp`, and `agentId` (a sub-agent launch's new id) |
//! | anything else failing | the same name | as above | the `error` text, hashed as a thrown error |
//!
//! Messages given to the model name the Claude Code tool (`Bash`, not `exec`): see
//! [`super::display_message`].
//!
//! ```
//! use loopguard_core::Value;
//! use loopguard_guard::profile::claude_code::{map_call, map_result};
//! let input = Value::parse(br#"{"command":"make test","description":"Run the tests"}"#).unwrap();
//! let call = map_call(&"Bash".into(), &input);
//! assert_eq!(call.tool.as_str(), Some("exec"));
//! assert!(call.args.get("description").is_none());
//! let response = Value::parse(br#"{"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false}"#).unwrap();
//! let result = map_result(&"Bash".into(), &response);
//! assert_eq!(result.get("details").and_then(|d| d.get("status")).and_then(Value::as_str), Some("completed"));
//! ```

use loopguard_core::json::write_json_string_body;
use loopguard_core::{JsString, Object, Value};

/// How a Claude Code tool is presented to the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// `Bash`: hashed as OpenClaw's `exec`.
    Bash,
    /// Polling a background shell or task: OpenClaw's `process` poll.
    BackgroundPoll,
    /// `TodoWrite`: OpenClaw's `update_plan`.
    TodoWrite,
    /// Everything else, under its own name.
    Other,
}

/// The Claude Code tools that poll a background shell or task.
pub const POLL_TOOLS: &[&str] = &["BashOutput", "TaskOutput", "AgentOutputTool"];

/// Top-level result fields that change on every call without saying anything about progress.
///
/// The only list of them: replay of Claude Code transcripts maps results with this same
/// profile (`crates/loopguard-adapters/src/claude_code.rs`), so the hook and replay drop the
/// same fields.
pub const VOLATILE_RESULT_KEYS: &[&str] = &[
    "durationMs",
    "duration_ms",
    "durationSeconds",
    "totalDurationMs",
    "totalTokens",
    "totalToolUseCount",
    "usage",
    "timestamp",
    // A sub-agent launch (`Task`, `Agent`) names the sub-agent it started, new on every
    // launch: without it, the same sub-agent spawned with the same task and the same
    // report is a repeated outcome at the parent.
    "agentId",
];

/// Which mapping applies to a tool name.
///
/// ```
/// use loopguard_guard::profile::claude_code::{classify, ToolKind};
/// assert_eq!(classify(b"Bash"), ToolKind::Bash);
/// assert_eq!(classify(b"BashOutput"), ToolKind::BackgroundPoll);
/// assert_eq!(classify(b"mcp__github__get_issue"), ToolKind::Other);
/// ```
pub fn classify(name: &[u8]) -> ToolKind {
    match name {
        b"Bash" => ToolKind::Bash,
        b"TodoWrite" => ToolKind::TodoWrite,
        n if POLL_TOOLS.iter().any(|p| p.as_bytes() == n) => ToolKind::BackgroundPoll,
        _ => ToolKind::Other,
    }
}

/// The name the engine uses for a Claude Code tool.
pub fn engine_name(kind: ToolKind) -> Option<&'static str> {
    match kind {
        ToolKind::Bash => Some("exec"),
        ToolKind::BackgroundPoll => Some("process"),
        ToolKind::TodoWrite => Some("update_plan"),
        ToolKind::Other => None,
    }
}

pub use super::{MappedCall, MappedOutcome};

/// Maps a Claude Code tool call (`tool_name`, `tool_input`).
pub fn map_call<'a>(name: &JsString<'a>, input: &Value<'a>) -> MappedCall<'a> {
    let kind = classify(name.as_wtf8());
    let tool = match engine_name(kind) {
        Some(n) => JsString::from(n),
        None => name.clone(),
    };
    let args = match kind {
        ToolKind::Bash => match input {
            Value::Object(o) => Value::Object(Object::from_entries(
                o.iter()
                    .filter(|(k, _)| k.as_wtf8() != b"description")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )),
            other => other.clone(),
        },
        ToolKind::BackgroundPoll => {
            let id = ["bash_id", "shell_id", "task_id", "agentId"]
                .iter()
                .find_map(|k| input.get(k))
                .cloned()
                .unwrap_or(Value::Null);
            let mut entries = vec![
                (JsString::from("action"), Value::from("poll")),
                (JsString::from("sessionId"), id),
            ];
            if let Some(f) = input.get("filter") {
                entries.push((JsString::from("filter"), f.clone()));
            }
            Value::Object(Object::from_entries(entries))
        }
        ToolKind::TodoWrite => Value::Object(Object::from_entries(vec![(
            JsString::from("plan"),
            plan(input.get("todos")),
        )])),
        ToolKind::Other => input.clone(),
    };
    MappedCall { tool, args }
}

/// Maps what a tool returned (`tool_response` of `PostToolUse`).
pub fn map_result<'a>(name: &JsString<'_>, response: &Value<'a>) -> Value<'a> {
    match classify(name.as_wtf8()) {
        ToolKind::Bash => bash_result(response),
        ToolKind::BackgroundPoll => poll_result(response),
        ToolKind::TodoWrite => obj(vec![(
            "details",
            obj(vec![("plan", plan(response.get("newTodos")))]),
        )]),
        ToolKind::Other => generic_result(response),
    }
}

/// Maps a failure (`error` and `is_interrupt` of `PostToolUseFailure`).
pub fn map_failure<'a>(
    name: &JsString<'_>,
    error: &JsString<'a>,
    interrupted: bool,
) -> MappedOutcome<'a> {
    match classify(name.as_wtf8()) {
        ToolKind::Bash => {
            let (code, rest) = split_exit_code(error);
            MappedOutcome::Result(exec_shaped(
                "failed",
                code.map_or(Value::Null, |c| Value::Number(c as f64)),
                rest,
                interrupted,
            ))
        }
        _ => MappedOutcome::Error(Value::String(error.clone())),
    }
}

fn obj<'a>(entries: Vec<(&'static str, Value<'a>)>) -> Value<'a> {
    Value::Object(Object::from_entries(
        entries
            .into_iter()
            .map(|(k, v)| (JsString::from(k), v))
            .collect(),
    ))
}

fn text_block(text: JsString<'_>) -> Value<'_> {
    Value::Array(vec![obj(vec![
        ("type", Value::from("text")),
        ("text", Value::String(text)),
    ])])
}

fn str_field<'v, 'a>(v: &'v Value<'a>, k: &str) -> Option<&'v JsString<'a>> {
    v.get(k).and_then(Value::as_js_str)
}

/// Joins two strings with a newline when both are non-empty, as JavaScript would (a lone
/// lead surrogate at the end of one and a trail at the start of the other stay apart
/// because of the newline).
fn join<'a>(a: Option<&JsString<'a>>, b: Option<&JsString<'a>>) -> JsString<'a> {
    let a = a.filter(|s| !s.is_empty());
    let b = b.filter(|s| !s.is_empty());
    match (a, b) {
        (None, None) => JsString::from(""),
        (Some(x), None) | (None, Some(x)) => x.clone(),
        (Some(x), Some(y)) => match (x.as_str(), y.as_str()) {
            (Some(x), Some(y)) => JsString::from(format!("{x}\n{y}")),
            _ => {
                // Holds lone surrogates: build the JSON string and let the parser make it.
                let mut json = b"\"".to_vec();
                write_json_string_body(&mut json, x);
                json.extend_from_slice(b"\\n");
                write_json_string_body(&mut json, y);
                json.push(b'"');
                match loopguard_core::json::parse(&json) {
                    Ok(Value::String(s)) => s.into_owned(),
                    _ => {
                        JsString::from(format!("{}\n{}", x.to_string_lossy(), y.to_string_lossy()))
                    }
                }
            }
        },
    }
}

fn exit_code(v: &Value<'_>) -> Option<f64> {
    ["exitCode", "exit_code", "returnCode", "code"]
        .iter()
        .find_map(|k| v.get(k).and_then(Value::as_f64))
}

fn exec_shaped<'a>(
    status: &'static str,
    exit: Value<'a>,
    aggregated: JsString<'a>,
    timed_out: bool,
) -> Value<'a> {
    obj(vec![
        ("content", text_block(aggregated.clone())),
        (
            "details",
            obj(vec![
                ("aggregated", Value::String(aggregated)),
                ("exitCode", exit),
                ("status", Value::from(status)),
                ("timedOut", Value::Bool(timed_out)),
            ]),
        ),
    ])
}

fn bash_result<'a>(response: &Value<'a>) -> Value<'a> {
    match response {
        Value::String(s) => exec_shaped("completed", Value::Number(0.0), s.clone(), false),
        Value::Object(_) => {
            let aggregated = join(str_field(response, "stdout"), str_field(response, "stderr"));
            let interrupted = matches!(response.get("interrupted"), Some(Value::Bool(true)));
            let code = exit_code(response);
            let failed = interrupted || code.is_some_and(|c| c != 0.0);
            let exit = match code {
                Some(c) => Value::Number(c),
                None if failed => Value::Null,
                None => Value::Number(0.0),
            };
            exec_shaped(
                if failed { "failed" } else { "completed" },
                exit,
                aggregated,
                interrupted,
            )
        }
        other => generic_result(other),
    }
}

/// `Exit code 2\nrest` → (2, "rest"); anything else → (None, the whole text).
fn split_exit_code<'a>(error: &JsString<'a>) -> (Option<i64>, JsString<'a>) {
    let bytes = error.as_wtf8();
    let Some(rest) = bytes.strip_prefix(b"Exit code ") else {
        return (None, error.clone());
    };
    let digits = rest
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'-')
        .count();
    let code = std::str::from_utf8(&rest[..digits])
        .ok()
        .and_then(|d| d.parse::<i64>().ok());
    match code {
        Some(c) => {
            let tail = &rest[digits..];
            let tail = tail.strip_prefix(b"\n").unwrap_or(tail);
            let tail = match std::str::from_utf8(tail) {
                Ok(t) => JsString::from(t.to_string()),
                // Lone surrogates: keep the whole message rather than cut inside it.
                Err(_) => error.clone(),
            };
            (Some(c), tail)
        }
        None => (None, error.clone()),
    }
}

fn poll_result<'a>(response: &Value<'a>) -> Value<'a> {
    let src = match response.get("task") {
        Some(t @ Value::Object(_)) => t,
        _ => response,
    };
    let output = match src {
        Value::String(s) => s.clone(),
        _ => match str_field(src, "output") {
            Some(o) => o.clone(),
            None => join(str_field(src, "stdout"), str_field(src, "stderr")),
        },
    };
    let status = src
        .get("status")
        .or_else(|| response.get("retrieval_status"))
        .filter(|s| matches!(s, Value::String(_)))
        .cloned()
        .unwrap_or(Value::Null);
    let exit = exit_code(src).map_or(Value::Null, Value::Number);
    let mut details = vec![
        ("aggregated", Value::String(output.clone())),
        ("exitCode", exit),
        ("status", status),
    ];
    if let Some(e) = src.get("error").filter(|e| !e.is_null()) {
        details.push(("error", e.clone()));
    }
    obj(vec![
        ("content", text_block(output)),
        ("details", obj(details)),
    ])
}

fn plan<'a>(todos: Option<&Value<'a>>) -> Value<'a> {
    let items = todos.and_then(Value::as_array).unwrap_or(&[]);
    Value::Array(
        items
            .iter()
            .map(|t| {
                obj(vec![
                    ("status", t.get("status").cloned().unwrap_or(Value::Null)),
                    ("step", t.get("content").cloned().unwrap_or(Value::Null)),
                ])
            })
            .collect(),
    )
}

fn generic_result<'a>(response: &Value<'a>) -> Value<'a> {
    match response {
        Value::String(s) => obj(vec![("content", text_block(s.clone()))]),
        Value::Array(_) => obj(vec![("content", response.clone())]),
        Value::Object(o) => {
            let mut entries = Vec::with_capacity(2);
            if let Some(c @ Value::Array(_)) = o.get("content") {
                entries.push(("content", c.clone()));
            }
            let details: Vec<_> = o
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_wtf8();
                    k != b"content" && !VOLATILE_RESULT_KEYS.iter().any(|v| v.as_bytes() == k)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            entries.push(("details", Value::Object(Object::from_entries(details))));
            obj(entries)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::display_message;
    use loopguard_core::{hashing::hash_outcome, Hashing, Outcome};

    fn v(s: &str) -> Value<'static> {
        Value::parse(s.as_bytes()).unwrap().into_owned()
    }

    fn hash(tool: &str, input: &str, response: &str) -> String {
        let name = JsString::from(tool);
        let input = v(input);
        let call = map_call(&name, &input);
        let r = map_result(&name, &v(response));
        hash_outcome(
            call.tool.as_wtf8(),
            &call.args,
            Outcome::Result(&r),
            &Hashing::default(),
        )
        .result_hash
        .unwrap()
        .to_string()
    }

    #[test]
    fn bash_hashes_like_exec_without_volatile_fields() {
        let a = hash(
            "Bash",
            r#"{"command":"make"}"#,
            r#"{"stdout":"ok\n","stderr":"","interrupted":false,"isImage":false}"#,
        );
        let b = hash(
            "Bash",
            r#"{"command":"make"}"#,
            r#"{"stdout":"ok","stderr":"","interrupted":false,"isImage":false,"backgroundTaskId":"x1","returnCodeInterpretation":"ok"}"#,
        );
        assert_eq!(a, b, "trailing whitespace and extra fields do not count");
        let c = hash(
            "Bash",
            r#"{"command":"make"}"#,
            r#"{"stdout":"ok","stderr":"warn","interrupted":false}"#,
        );
        assert_ne!(a, c, "stderr counts");
        let d = hash(
            "Bash",
            r#"{"command":"make"}"#,
            r#"{"stdout":"ok","stderr":"","interrupted":true}"#,
        );
        assert_ne!(a, d, "an interrupt counts");
        let e = hash(
            "Bash",
            r#"{"command":"make"}"#,
            r#"{"stdout":"ok","stderr":"","interrupted":false,"exitCode":2}"#,
        );
        assert_ne!(a, e, "the exit status counts");
    }

    #[test]
    fn bash_args_ignore_the_description() {
        let a = map_call(
            &"Bash".into(),
            &v(r#"{"command":"ls","description":"List"}"#),
        );
        let b = map_call(
            &"Bash".into(),
            &v(r#"{"command":"ls","description":"Look"}"#),
        );
        assert_eq!(a, b);
        let c = map_call(&"Bash".into(), &v(r#"{"command":"ls -a"}"#));
        assert_ne!(a, c);
    }

    #[test]
    fn bash_failures_are_failed_exec_results() {
        let MappedOutcome::Result(r) = map_failure(
            &"Bash".into(),
            &JsString::from("Exit code 2\nmake: *** [all] Error 2"),
            false,
        ) else {
            panic!()
        };
        let d = r.get("details").unwrap();
        assert_eq!(d.get("exitCode").unwrap().as_f64(), Some(2.0));
        assert_eq!(d.get("status").unwrap().as_str(), Some("failed"));
        assert_eq!(
            d.get("aggregated").unwrap().as_str(),
            Some("make: *** [all] Error 2")
        );
        let MappedOutcome::Error(e) = map_failure(
            &"Read".into(),
            &JsString::from("File does not exist."),
            false,
        ) else {
            panic!()
        };
        assert_eq!(e.as_str(), Some("File does not exist."));
    }

    #[test]
    fn background_polls_are_known_polls() {
        use loopguard_core::detection::is_known_poll_call;
        for (tool, input) in [
            ("BashOutput", r#"{"bash_id":"b1"}"#),
            (
                "TaskOutput",
                r#"{"task_id":"t1","block":false,"timeout":1000}"#,
            ),
            ("AgentOutputTool", r#"{"agentId":"a1"}"#),
        ] {
            let call = map_call(&tool.into(), &v(input));
            assert!(
                is_known_poll_call(call.tool.as_wtf8(), &call.args),
                "{tool}"
            );
        }
        // The timestamp of a BashOutput answer is noise; new output is progress.
        let a = hash(
            "BashOutput",
            r#"{"bash_id":"b1"}"#,
            r#"{"shellId":"b1","command":"npm run dev","status":"running","exitCode":null,"stdout":"","stderr":"","stdoutLines":0,"stderrLines":0,"timestamp":"2026-01-01T00:00:00Z"}"#,
        );
        let b = hash(
            "BashOutput",
            r#"{"bash_id":"b1"}"#,
            r#"{"shellId":"b1","command":"npm run dev","status":"running","exitCode":null,"stdout":"","stderr":"","stdoutLines":0,"stderrLines":0,"timestamp":"2026-01-01T00:00:09Z"}"#,
        );
        let c = hash(
            "BashOutput",
            r#"{"bash_id":"b1"}"#,
            r#"{"shellId":"b1","status":"running","stdout":"ready on :3000","stderr":""}"#,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        // TaskOutput: the block/timeout arguments do not make polls different.
        let x = map_call(
            &"TaskOutput".into(),
            &v(r#"{"task_id":"t","block":true,"timeout":30000}"#),
        );
        let y = map_call(
            &"TaskOutput".into(),
            &v(r#"{"task_id":"t","block":false,"timeout":5}"#),
        );
        assert_eq!(x, y);
        let t1 = hash(
            "TaskOutput",
            r#"{"task_id":"t"}"#,
            r#"{"retrieval_status":"timeout","task":{"task_id":"t","task_type":"local_bash","status":"running","output":""}}"#,
        );
        let t2 = hash(
            "TaskOutput",
            r#"{"task_id":"t"}"#,
            r#"{"retrieval_status":"success","task":{"task_id":"t","task_type":"local_bash","status":"completed","output":"done","exitCode":0}}"#,
        );
        assert_ne!(t1, t2);
    }

    #[test]
    fn todo_write_is_a_plan_hashed_by_shape() {
        let a = map_call(
            &"TodoWrite".into(),
            &v(r#"{"todos":[{"content":"Fix the bug","status":"pending","activeForm":"Fixing"}]}"#),
        );
        let b = map_call(
            &"TodoWrite".into(),
            &v(
                r#"{"todos":[{"content":"Fix the nasty bug","status":"pending","activeForm":"Fixing it"}]}"#,
            ),
        );
        let c = map_call(
            &"TodoWrite".into(),
            &v(
                r#"{"todos":[{"content":"Fix the bug","status":"completed","activeForm":"Fixing"}]}"#,
            ),
        );
        let h = |m: &MappedCall<'_>| {
            loopguard_core::hashing::args_digest_wtf8(m.tool.as_wtf8(), &m.args)
        };
        assert_eq!(a.tool.as_str(), Some("update_plan"));
        assert_eq!(h(&a), h(&b));
        assert_ne!(h(&a), h(&c));
    }

    #[test]
    fn other_tools_keep_their_names_and_drop_durations() {
        let mcp = map_call(&"mcp__github__get_issue".into(), &v(r#"{"n":1}"#));
        assert_eq!(mcp.tool.as_str(), Some("mcp__github__get_issue"));
        assert_eq!(mcp.args, v(r#"{"n":1}"#));
        let a = hash(
            "WebFetch",
            r#"{"url":"u"}"#,
            r#"{"code":200,"result":"x","durationMs":5}"#,
        );
        let b = hash(
            "WebFetch",
            r#"{"url":"u"}"#,
            r#"{"code":200,"result":"x","durationMs":9}"#,
        );
        let c = hash(
            "WebFetch",
            r#"{"url":"u"}"#,
            r#"{"code":200,"result":"y","durationMs":9}"#,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        // A Read result has neither `content` nor `details`: different files must still
        // hash differently.
        let r1 = hash(
            "Read",
            r#"{"file_path":"/a"}"#,
            r#"{"type":"text","file":{"content":"1"}}"#,
        );
        let r2 = hash(
            "Read",
            r#"{"file_path":"/a"}"#,
            r#"{"type":"text","file":{"content":"2"}}"#,
        );
        assert_ne!(r1, r2);
        let s1 = hash("mcp__x__y", "{}", r#"[{"type":"text","text":"a"}]"#);
        let s2 = hash("mcp__x__y", "{}", r#"[{"type":"text","text":"b"}]"#);
        assert_ne!(s1, s2);
        let t1 = hash("mcp__x__y", "{}", r#""plain""#);
        assert_eq!(t1, hash("mcp__x__y", "{}", r#""plain""#));
    }

    #[test]
    fn joining_keeps_lone_surrogates() {
        let a = v(r#""\ud800""#);
        let b = v(r#""x""#);
        let j = join(a.as_js_str(), b.as_js_str());
        assert!(j.has_lone_surrogates());
        assert_eq!(j.as_wtf8().len(), 3 + 1 + 1);
    }

    #[test]
    fn messages_name_the_claude_code_tool() {
        assert_eq!(
            display_message(
                "WARNING: You have called process 10 times with identical arguments",
                "process",
                "BashOutput"
            ),
            "WARNING: You have called BashOutput 10 times with identical arguments"
        );
        assert_eq!(
            display_message("CRITICAL: x", "exec", "Bash"),
            "CRITICAL: x"
        );
        assert_eq!(
            display_message("Called Read with", "Read", "Read"),
            "Called Read with"
        );
    }
}
