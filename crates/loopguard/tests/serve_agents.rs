//! `POST /v1/hooks/{agent}`: other agents' hook payloads answered by `loopguard serve` as
//! `loopguard hook AGENT` answers them (Qwen Code's `type: "http"` hooks post there).

mod serve_support;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;
use serve_support::{agent, post_json, Serve};

/// Qwen Code's PreToolUse / PostToolUseFailure for a failing shell command (shapes from
/// the real CLI, see crates/loopguard/tests/agents_e2e.rs).
fn qwen(i: usize, post: bool) -> String {
    let mut v = json!({"session_id":"qwen-http","cwd":"/nonexistent","permission_mode":"yolo",
        "tool_name":"run_shell_command",
        "tool_input":{"command":"npm test","description":format!("Run the tests ({i})")},
        "tool_use_id":format!("toolu_{i}"),"tool_call_id":format!("call_{i}")});
    if post {
        v["hook_event_name"] = json!("PostToolUseFailure");
        v["error"] = json!("Command: npm test\nDirectory: (root)\nOutput: FAIL\nError: (none)\nExit Code: 1\nSignal: (none)\nProcess Group PGID: (none)");
        v["is_interrupt"] = json!(false);
    } else {
        v["hook_event_name"] = json!("PreToolUse");
    }
    v.to_string()
}

#[test]
fn qwen_http_hook_answers_as_the_command_does() {
    let server = Serve::start(&[]);
    let http = agent();
    let url = server.url("/v1/hooks/qwen");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let command = |input: &str| -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .args(["hook", "qwen", "--state", db.to_str().unwrap()])
            .env("HOME", dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let mut denied = Vec::new();
    for i in 1..=25 {
        for post in [false, true] {
            let input = qwen(i, post);
            let a = post_json(&http, &url, input.as_bytes());
            assert_eq!(a.status, 200, "{}", a.body);
            // The same answer; nothing to say is `{}` over HTTP, as for every agent.
            let printed = command(&input);
            let expected = if printed.trim().is_empty() {
                "{}".to_string()
            } else {
                printed
            };
            assert_eq!(a.body, expected, "call {i}, post {post}");
            if !post && a.body.contains("\"permissionDecision\":\"deny\"") {
                denied.push(i);
            }
        }
    }
    assert_eq!(denied, (21..=25).collect::<Vec<_>>());
}

#[test]
fn agents_that_cannot_be_answered_over_http_are_named() {
    let server = Serve::start(&[]);
    let http = agent();
    for (path, status, needle) in [
        ("/v1/hooks/windsurf", 404, "exit status"),
        ("/v1/hooks/kiro", 404, "exit status"),
        ("/v1/hooks/nope", 404, "unknown agent"),
        ("/v1/hooks/gemini", 400, "not valid JSON"),
    ] {
        let a = post_json(&http, &server.url(path), b"not json");
        assert_eq!(a.status, status, "{path}: {}", a.body);
        assert!(
            a.json()["error"].as_str().unwrap().contains(needle),
            "{path}: {}",
            a.body
        );
    }
}

/// `loopguard.onCritical: "ask"` through `POST /v1/hooks/claude-code` (Claude Code's
/// `type: "http"` hooks): the same Protocol renders the ask (`permissionDecision: "ask"`) at
/// the first critical, and the next critical ends the run; Qwen Code's route, whose hooks
/// cannot ask, refuses instead.
#[test]
fn the_hook_routes_render_the_ask_of_their_agent() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("ask.json5");
    std::fs::write(
        &config,
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "ask" } }"#,
    )
    .unwrap();
    let server = Serve::start(&["--config", config.to_str().unwrap()]);
    let http = agent();
    let url = server.url("/v1/hooks/claude-code");
    let mut answers = Vec::new();
    for i in 1..=22 {
        let base = json!({"session_id":"cc-http","transcript_path":"/t.jsonl","cwd":"/nonexistent",
            "tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":format!("toolu_{i}")});
        let mut pre = base.clone();
        pre["hook_event_name"] = json!("PreToolUse");
        let a = post_json(&http, &url, pre.to_string().as_bytes());
        assert_eq!(a.status, 200, "{}", a.body);
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        answers.push(
            v["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .unwrap_or("-")
                .to_string(),
        );
        let mut post = base;
        post["hook_event_name"] = json!("PostToolUse");
        post["tool_response"] =
            json!({"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false});
        post_json(&http, &url, post.to_string().as_bytes());
        if i == 22 {
            assert_eq!(v["continue"], false, "{v}");
        }
    }
    assert_eq!(answers[20], "ask");
    assert_eq!(answers[21], "deny");
    let url = server.url("/v1/hooks/qwen");
    let mut refused = None;
    for i in 1..=21 {
        for post in [false, true] {
            let a = post_json(&http, &url, qwen(i, post).as_bytes());
            if !post && a.body.contains("\"permissionDecision\":\"deny\"") {
                refused.get_or_insert(i);
            }
        }
    }
    assert_eq!(refused, Some(21));
}
