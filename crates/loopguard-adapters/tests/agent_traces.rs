//! Coding agents' telemetry judged with their tool profiles (docs/traces/): GitHub Copilot
//! CLI's spans and Codex's `codex.tool_result` log records.
//!
//! Where each shape comes from (read in those projects' public source and docs; nothing
//! copied):
//! * Copilot CLI: `COPILOT_OTEL_ENABLED=true` exports OTLP/HTTP with
//!   `service.name = github-copilot`; each tool call is a GenAI `execute_tool <tool>` span
//!   (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, and with content
//!   capture `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`) under an
//!   `invoke_agent` span carrying `gen_ai.conversation.id`. The tools and their arguments
//!   are the ones its hooks receive (GitHub's "Copilot CLI hooks reference": `bash` with
//!   `command`, `description`, `sessionId`, `mode`, `initial_wait`; `read_bash` with
//!   `sessionId`, `delay`); a finished command's text ends with
//!   `<shellId: N completed with exit code C>`, N new on every call (as the real Copilot CLI
//!   1.0.102 records it: `crates/loopguard/tests/otel.rs` runs it).
//! * Codex: `[otel]` in `~/.codex/config.toml` exports log records (not spans) for tool
//!   calls: `event.name = codex.tool_result` with `tool_name`, `call_id`, `arguments` (the
//!   JSON text the model sent), `duration_ms`, `success`, `output` (the text the model got)
//!   and the session's `conversation.id`, `model`, `app.version`
//!   (`codex-rs/otel/src/events/session_telemetry.rs` `tool_result_with_tags`, and the
//!   `log_event!` macro in `codex-rs/otel/src/events/shared/log.rs`); the service is
//!   `codex_cli_rs` or `codex_exec`. Unified exec's output text is `Chunk ID`, `Wall time`,
//!   `Process exited with code N` or `Process running with session ID N`,
//!   `Original token count`, then `Output:` and the output. The real Codex CLI's telemetry is
//!   received by `serve` in `crates/loopguard/tests/otel.rs`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::otlp::OtlpJson;
use loopguard_adapters::spans::TraceAgent;
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_guard::ToolProfile;
use loopguard_replay::Action;
use serde_json::json;
use support::{repeat_decision, replay_observe_by_source};

fn ctx() -> Context {
    Context::default()
}

fn attr(key: &str, value: &str) -> serde_json::Value {
    json!({"key": key, "value": {"stringValue": value}})
}

const T0: u64 = 1_790_000_000_000_000_000;

/// One Copilot CLI `execute_tool` span in an OTLP/JSON line.
fn copilot_span(
    service: &str,
    i: u64,
    tool: &str,
    args: serde_json::Value,
    result: &str,
) -> String {
    let start = T0 + i * 2_000_000_000;
    json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", service), attr("service.version", "1.0.81")]},
        "scopeSpans": [{"scope": {"name": "github-copilot"}, "spans": [{
            "traceId": "7d1c4e5f0a9b8c7d6e5f4a3b2c1d0e9f",
            "spanId": format!("{:016x}", 0x100 + i),
            "parentSpanId": "00000000000000aa",
            "name": format!("execute_tool {tool}"),
            "kind": 1,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": (start + 700_000_000).to_string(),
            "attributes": [
                attr("gen_ai.operation.name", "execute_tool"),
                attr("gen_ai.tool.name", tool),
                attr("gen_ai.tool.type", "function"),
                attr("gen_ai.tool.call.id", &format!("toolu_{i:04}")),
                attr("gen_ai.tool.call.arguments", &args.to_string()),
                attr("gen_ai.tool.call.result", result),
            ],
            "status": {"code": 1}
        }]}]
    }]})
    .to_string()
}

fn lines(items: impl IntoIterator<Item = String>) -> Vec<u8> {
    let mut out = String::new();
    for l in items {
        out.push_str(&l);
        out.push('\n');
    }
    out.into_bytes()
}

fn call_actions(a: &Adapted) -> Vec<(Action, Option<Detector>)> {
    replay_observe_by_source(&a.events, ToolProfile::Plain)
        .into_iter()
        .filter(|d| d.1 == EventKind::Call)
        .map(|d| (d.2, d.3))
        .collect()
}

fn copilot_bash_run(service: &str) -> Vec<u8> {
    lines((0..25).map(|i| {
        copilot_span(
            service,
            i,
            "bash",
            json!({"command": "npm test", "description": format!("Run the tests (try {})", i + 1),
                   "sessionId": "main", "mode": "sync", "initial_wait": 30 + i}),
            &format!("> app@1.0.0 test\n1 failing\n<shellId: {i} completed with exit code 1>"),
        )
    }))
}

#[test]
fn copilot_cli_bash_spans_are_judged_as_its_hook_judges_them() {
    let a = OtlpJson
        .adapt(&copilot_bash_run("github-copilot"), &ctx())
        .expect("read");
    assert!(a.events.iter().all(|e| e.profile == Some("claude-code")));
    let first = &a.events[0].event;
    // `bash` is Claude Code's `Bash`, without the free-text description and the wait.
    assert_eq!(first.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
    assert_eq!(
        first.args.get("command").and_then(Value::as_str),
        Some("npm test")
    );
    assert!(first.args.get("description").is_none());
    assert!(first.args.get("initial_wait").is_none());
    let actions = call_actions(&a);
    assert_eq!(actions.len(), 25);
    for (i, got) in actions.iter().enumerate() {
        assert_eq!(
            got.0,
            repeat_decision(i + 1).0,
            "call {}: {actions:?}",
            i + 1
        );
    }
    assert_eq!(actions[20].0, Action::Block);

    // The same spans from a service loopguard does not know: every description differs,
    // so no two calls are the same call and nothing is flagged.
    let plain = OtlpJson
        .adapt(&copilot_bash_run("my-service"), &ctx())
        .expect("read");
    assert!(plain.events.iter().all(|e| e.profile.is_none()));
    assert!(call_actions(&plain).iter().all(|a| a.0 == Action::Allow));
}

#[test]
fn copilot_cli_read_bash_polls_are_known_polls_never_generic_repeats() {
    let doc = lines((0..25).map(|i| {
        copilot_span(
            "github-copilot",
            i,
            "read_bash",
            json!({"sessionId": "7", "delay": 5 + i}),
            "Compiling app v0.1.0\n<command with sessionId: 7 is still running>",
        )
    }));
    let a = OtlpJson.adapt(&doc, &ctx()).expect("read");
    assert_eq!(
        a.events[0].event.tool.as_ref().and_then(|t| t.as_str()),
        Some("BashOutput")
    );
    let actions = call_actions(&a);
    let flagged: Vec<_> = actions.iter().filter(|a| a.0 != Action::Allow).collect();
    assert!(!flagged.is_empty(), "{actions:?}");
    assert!(
        flagged
            .iter()
            .all(|a| a.1 == Some(Detector::KnownPollNoProgress)),
        "{actions:?}"
    );
}

/// One Codex `codex.tool_result` log record in an OTLP/JSON logs line.
fn codex_log(i: u64, tool: &str, arguments: &str, output: &str, success: bool) -> String {
    let time = T0 + i * 3_000_000_000;
    json!({"resourceLogs": [{
        "resource": {"attributes": [attr("service.name", "codex_exec"), attr("service.version", "0.93.0"), attr("env", "dev")]},
        "scopeLogs": [{"scope": {"name": "codex_otel"}, "logRecords": [{
            "timeUnixNano": time.to_string(),
            "observedTimeUnixNano": time.to_string(),
            "severityNumber": 9,
            "severityText": "INFO",
            "attributes": [
                attr("event.name", "codex.tool_result"),
                attr("tool_name", tool),
                attr("call_id", &format!("call_{i:03}")),
                attr("arguments", arguments),
                attr("duration_ms", &(1200 + i * 17).to_string()),
                attr("success", if success { "true" } else { "false" }),
                attr("output", output),
                attr("mcp_server", ""),
                attr("mcp_server_origin", ""),
                attr("event.timestamp", "2026-09-21T10:00:00.000Z"),
                attr("conversation.id", "0199a7c2-5b1e-7f00-9a3c-1f2e3d4c5b6a"),
                attr("app.version", "0.93.0"),
                attr("originator", "codex_exec"),
                attr("terminal.type", "unknown"),
                attr("model", "gpt-5.1-codex"),
                attr("slug", "gpt-5.1-codex"),
            ],
            "traceId": "",
            "spanId": ""
        }]}]
    }]})
    .to_string()
}

#[test]
fn codex_tool_result_logs_are_judged_as_its_hook_judges_them() {
    let doc = lines((0..25).map(|i| {
        codex_log(
            i,
            "exec_command",
            &json!({"cmd": "cargo test", "workdir": "/repo", "yield_time_ms": 10_000 + i,
                    "max_output_tokens": 6000})
            .to_string(),
            &format!(
                "Chunk ID: {:06x}\nWall time: {}.{:04} seconds\nProcess exited with code 101\nOriginal token count: {}\nOutput:\nerror: test failed, to rerun pass `--lib`",
                0xa1b2c3 + i * 7919,
                1 + i % 3,
                (i * 137) % 10_000,
                40 + i
            ),
            false,
        )
    }));
    // Recognised by structure, like every trace form.
    assert_eq!(
        loopguard_adapters::detect("codex-otel.jsonl", &doc),
        Some(loopguard_adapters::Format::Otlp)
    );
    let a = OtlpJson.adapt(&doc, &ctx()).expect("read");
    assert!(a.diagnostics.is_empty(), "{:#?}", a.diagnostics);
    // One session: Codex's conversation id.
    assert!(a
        .events
        .iter()
        .all(|e| e.event.session.as_ref().and_then(|s| s.as_str())
            == Some("0199a7c2-5b1e-7f00-9a3c-1f2e3d4c5b6a")));
    assert!(a.events.iter().all(|e| e.profile == Some("claude-code")));
    let call = &a.events[0].event;
    assert_eq!(call.tool.as_ref().and_then(|t| t.as_str()), Some("Bash"));
    assert_eq!(
        call.args.get("command").and_then(Value::as_str),
        Some("cargo test")
    );
    assert!(call.args.get("yield_time_ms").is_none());
    // A failing command is a result with its exit code, the chunk id, wall time and
    // token count gone.
    let result = a
        .events
        .iter()
        .find_map(|e| match &e.event.payload {
            Some(Payload::Result(v)) => Some(v.clone()),
            _ => None,
        })
        .expect("a result");
    assert_eq!(result.get("exitCode").and_then(Value::as_f64), Some(101.0));
    let stdout = result.get("stdout").and_then(Value::as_str).unwrap_or("");
    assert!(
        !stdout.contains("Chunk ID") && !stdout.contains("Wall time"),
        "{stdout}"
    );
    let actions = call_actions(&a);
    assert_eq!(actions.len(), 25);
    for (i, got) in actions.iter().enumerate() {
        assert_eq!(
            got.0,
            repeat_decision(i + 1).0,
            "call {}: {actions:?}",
            i + 1
        );
    }
}

#[test]
fn codex_write_stdin_polls_are_known_polls_and_failed_tools_errors() {
    let mut records: Vec<String> = (0..25)
        .map(|i| {
            codex_log(
                i,
                "write_stdin",
                &json!({"session_id": 3, "chars": "", "yield_time_ms": 5000 + i}).to_string(),
                &format!(
                    "Chunk ID: {:06x}\nWall time: 5.00{} seconds\nProcess running with session ID 3\nOriginal token count: 0\nOutput:\n",
                    0x100 + i,
                    i % 10
                ),
                true,
            )
        })
        .collect();
    // A tool other than a shell that failed: an error, as a hook's failure would be.
    records.push(codex_log(
        30,
        "apply_patch",
        r#"{"input":"*** Begin Patch\n*** End Patch"}"#,
        "patch rejected: empty patch",
        false,
    ));
    let a = OtlpJson.adapt(&lines(records), &ctx()).expect("read");
    assert_eq!(
        a.events[0].event.tool.as_ref().and_then(|t| t.as_str()),
        Some("BashOutput")
    );
    let actions = call_actions(&a);
    let polls = &actions[..25];
    let flagged: Vec<_> = polls.iter().filter(|a| a.0 != Action::Allow).collect();
    assert!(!flagged.is_empty(), "{actions:?}");
    assert!(
        flagged
            .iter()
            .all(|a| a.1 == Some(Detector::KnownPollNoProgress)),
        "{actions:?}"
    );
    let last = a.events.last().expect("events");
    assert_eq!(
        last.event.payload,
        Some(Payload::Error(Value::from("patch rejected: empty patch")))
    );
}

#[test]
fn the_agent_is_read_from_the_service_name() {
    for (service, agent) in [
        ("github-copilot", Some(TraceAgent::Copilot)),
        ("codex_cli_rs", Some(TraceAgent::Codex)),
        ("codex_exec", Some(TraceAgent::Codex)),
        ("claude-code", Some(TraceAgent::ClaudeCode)),
        ("copilot-chat-proxy", None),
        ("checkout-service", None),
    ] {
        assert_eq!(TraceAgent::from_service(service), agent, "{service}");
    }
}

#[test]
fn bad_codex_log_records_are_reported_never_lost() {
    let good = codex_log(0, "exec_command", r#"{"cmd":"ls"}"#, "Output:\na", true);
    // Arguments that are not JSON, a record without a time, a record list that is not a
    // list, and a record that is not an object.
    let unparseable = codex_log(1, "exec_command", "{cmd: ls", "Output:\na", true);
    let no_time = good
        .replace(&format!("\"{T0}\""), "\"\"")
        .replace("2026-09-21T10:00:00.000Z", "not a time");
    let not_a_list = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":{"oops":1}}]}]}"#.to_string();
    let not_an_object = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[42]}]}]}"#.to_string();
    let doc = lines([good, unparseable, no_time, not_a_list, not_an_object]);
    let a = OtlpJson.adapt(&doc, &ctx()).expect("read");
    let calls = a
        .events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .count();
    assert_eq!(calls, 3, "every tool record is replayed");
    let has = |line: u64, kind: DiagnosticKind, text: &str| {
        a.diagnostics
            .iter()
            .any(|d| d.line == line && d.kind == kind && d.message.contains(text))
    };
    assert!(
        has(2, DiagnosticKind::Partial, "`arguments` is not JSON"),
        "{:#?}",
        a.diagnostics
    );
    assert!(
        has(3, DiagnosticKind::Partial, "no readable time"),
        "{:#?}",
        a.diagnostics
    );
    assert!(has(
        4,
        DiagnosticKind::BadField,
        "`logRecords` is not a list"
    ));
    assert!(has(5, DiagnosticKind::BadField, "not an object"));
}

/// Claude Code's tool events, as Claude Code 2.1.197 sends them (seen in the real run of
/// `crates/loopguard/tests/otel.rs`): body `claude_code.tool_result`, `event.name =
/// tool_result`, `tool_name`, `tool_use_id`, `success`, `error`, `tool_input` (with
/// `OTEL_LOG_TOOL_DETAILS=1`), under `service.name = claude-code`; no output.
#[test]
fn claude_code_tool_events_are_read_with_the_claude_code_profile() {
    let record = |i: u64, input: Option<&str>| {
        let mut attrs = vec![
            attr("event.name", "tool_result"),
            attr("session.id", "1d4c1412-dc93-438d-ab6c-bd42bfa31661"),
            attr("tool_name", "Bash"),
            attr("tool_use_id", &format!("toolu_{i:03}")),
            attr("success", "false"),
            attr("duration_ms", "84"),
            attr("error", "Shell command failed"),
        ];
        if let Some(input) = input {
            attrs.push(attr("tool_input", input));
        }
        json!({"resourceLogs": [{"resource": {"attributes": [attr("service.name", "claude-code")]},
            "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code.events"}, "logRecords": [{
                "timeUnixNano": (T0 + i * 1_000_000_000).to_string(),
                "body": {"stringValue": "claude_code.tool_result"},
                "attributes": attrs,
                "traceId": "225b4b3fb3c19c4c7015b4d19ab21337", "spanId": format!("{:016x}", i + 1)}]}]}]})
        .to_string()
    };
    let doc = lines((0..25).map(|i| {
        let input = json!({"command": "echo FAIL; exit 1", "description": format!("attempt {i}")});
        record(i, Some(&input.to_string()))
    }));
    let a = OtlpJson.adapt(&doc, &ctx()).expect("read");
    assert!(a.events.iter().all(|e| e.profile == Some("claude-code")));
    assert_eq!(
        a.events[1].event.payload,
        Some(Payload::Error(Value::from("Shell command failed")))
    );
    let actions = call_actions(&a);
    assert_eq!(actions.len(), 25);
    assert_eq!(actions[20].0, Action::Block, "{actions:?}");
    // Without OTEL_LOG_TOOL_DETAILS there is no input: judged by name, and said so.
    let a = OtlpJson
        .adapt(&lines([record(0, None)]), &ctx())
        .expect("read");
    assert!(
        a.diagnostics
            .iter()
            .any(|d| d.message.contains("judged by tool name only")
                && d.message.contains("tool_input")),
        "{:#?}",
        a.diagnostics
    );
}
