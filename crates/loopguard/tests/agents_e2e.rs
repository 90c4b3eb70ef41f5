//! End to end with the real agent programs from npm (installed by scripts/setup-agents.sh
//! into target/agents), each driven by a scripted model server on 127.0.0.1 that keeps
//! asking for the same failing shell command, with loopguard's hook installed by
//! `loopguard hook install AGENT` into the agent's own settings under a temporary HOME.
//! Everything runs offline: the agents talk only to the scripted server.
//!
//! For each agent: the command runs 20 times; the model is sent loopguard's warning with
//! the result of call 11, and the block (the detection message instead of a result) from
//! call 21 on.

mod agent_e2e;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent_e2e::{agent_bin, run_with_timeout, runs, ModelServer, Request, Response};
use serde_json::{json, Value};

const CALLS: usize = 25;
const LIMIT: Duration = Duration::from_secs(600);

fn loopguard() -> &'static str {
    env!("CARGO_BIN_EXE_loopguard")
}

fn install(agent: &str, settings: &Path, state: &Path) {
    let out = Command::new(loopguard())
        .args(["hook", "install", agent, "--settings"])
        .arg(settings)
        .arg("--exe")
        .arg(loopguard())
        .arg("--state")
        .arg(state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The text of every request, to find where the warning first reached the model.
fn first_request_with(requests: &[(usize, String)], needle: &str) -> Option<usize> {
    requests
        .iter()
        .find(|(_, t)| t.contains(needle))
        .map(|(k, _)| *k)
}

// ---------------------------------------------------------------------------------------
// Codex CLI: `[model_providers.x]` with `wire_api = "responses"`; `codex exec --json`.

fn codex_outputs(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| match &i["output"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn codex_loop_is_warned_then_blocked() {
    codex_loop("hooks.json");
}

/// The same, with the hooks installed as `[[hooks.EVENT]]` tables of Codex's config.toml.
#[test]
fn codex_loop_is_warned_then_blocked_with_config_toml_hooks() {
    codex_loop("config.toml");
}

fn codex_loop(settings: &str) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let counter = dir.path().join("runs.txt");
    let command = format!("echo run >> {}; echo FAIL; exit 1", counter.display());
    let server = ModelServer::start(move |req: &Request| {
        if !req.path.ends_with("/responses") {
            return Response::not_found();
        }
        let k = codex_outputs(&req.body).len();
        let item = if k < CALLS {
            json!({"type":"function_call","id":format!("fc_{k}"),"call_id":format!("call_{k}"),
                "name":"exec_command","arguments":json!({"cmd": command}).to_string()})
        } else {
            json!({"type":"message","id":"msg_1","role":"assistant",
                "content":[{"type":"output_text","text":"I give up."}]})
        };
        Response::sse(&[
            (
                Some("response.created"),
                json!({"type":"response.created","response":{"id":format!("resp_{k}")}}),
            ),
            (
                Some("response.output_item.done"),
                json!({"type":"response.output_item.done","output_index":0,"item":item}),
            ),
            (
                Some("response.completed"),
                json!({"type":"response.completed","response":{"id":format!("resp_{k}"),
                "usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}}),
            ),
        ])
    });
    std::fs::write(
        home.join(".codex/config.toml"),
        format!(
            "model = \"scripted\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n",
            server.port
        ),
    )
    .unwrap();
    let state = dir.path().join("state.sqlite3");
    install("codex", &home.join(".codex").join(settings), &state);
    let mut cmd = Command::new(agent_bin("codex"));
    cmd.current_dir(&work)
        .env("HOME", &home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("SCRIPTED_API_KEY", "dummy")
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "Make the tests pass.",
        ]);
    let out = run_with_timeout(cmd, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let requests: Vec<(usize, String)> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| (codex_outputs(&r.body).len(), r.body.to_string()))
        .collect();
    assert!(
        requests.iter().any(|(k, _)| *k == CALLS),
        "codex did not finish the scripted conversation: {stdout}\n{stderr}"
    );
    assert_eq!(runs(&counter), 20, "{stdout}\n{stderr}");
    // The warning reaches the model with the result of call 11.
    assert_eq!(
        first_request_with(&requests, "loopguard: WARNING"),
        Some(11),
        "{stdout}"
    );
    let last = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| codex_outputs(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains("Called Bash with identical arguments");
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
}

// ---------------------------------------------------------------------------------------
// Gemini CLI: `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`, `security.auth.selectedType:
// "gemini-api-key"`, `GEMINI_CLI_TRUST_WORKSPACE=true`, `model.disableLoopDetection: true`
// (Gemini CLI's own loop detection would end the session before loopguard is seen).

fn gemini_responses(body: &Value) -> Vec<String> {
    body["contents"]
        .as_array()
        .map(|contents| {
            contents
                .iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter(|p| p.get("functionResponse").is_some())
                .map(|p| p["functionResponse"].to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn gemini_loop_is_warned_then_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let counter = dir.path().join("runs.txt");
    let command = format!("echo run >> {}; echo FAIL; exit 1", counter.display());
    let server = ModelServer::start(move |req: &Request| {
        let k = gemini_responses(&req.body).len();
        let text = |t: &str| {
            json!({"candidates":[{"content":{"role":"model","parts":[{"text":t}]},"finishReason":"STOP","index":0}],
            "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}})
        };
        if req.path.contains(":streamGenerateContent") {
            let body = if k < CALLS {
                // The model rewords the description on every call, as models do.
                json!({"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"run_shell_command",
                    "args":{"command": command, "description": format!("Run the test suite (attempt {})", k + 1)}}}]},
                    "finishReason":"STOP","index":0}],
                    "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}})
            } else {
                text("I give up.")
            };
            Response::sse(&[(None, body)])
        } else if req.path.contains(":generateContent") {
            // Side requests (routing, next-speaker checks) ask for JSON.
            Response::json(&text("{\"next_speaker\":\"user\",\"reasoning\":\"done\"}"))
        } else if req.path.contains(":countTokens") {
            Response::json(&json!({"totalTokens": 10}))
        } else {
            Response::not_found()
        }
    });
    std::fs::write(
        home.join(".gemini/settings.json"),
        "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"model\": {\"disableLoopDetection\": true},\n  \"privacy\": {\"usageStatisticsEnabled\": false}\n}\n",
    )
    .unwrap();
    let state = dir.path().join("state.sqlite3");
    install("gemini", &home.join(".gemini/settings.json"), &state);
    let mut cmd = Command::new(agent_bin("gemini"));
    cmd.current_dir(&work)
        .env("HOME", &home)
        .env("GEMINI_API_KEY", "dummy")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", server.port),
        )
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .args([
            "--model",
            "gemini-2.5-flash",
            "--yolo",
            "--output-format",
            "json",
            "-p",
            "Make the tests pass.",
        ]);
    let out = run_with_timeout(cmd, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let streams: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(":streamGenerateContent"))
        .collect();
    let requests: Vec<(usize, String)> = streams
        .iter()
        .map(|r| (gemini_responses(&r.body).len(), r.body.to_string()))
        .collect();
    assert!(
        requests.iter().any(|(k, _)| *k == CALLS),
        "gemini did not finish the scripted conversation: {stdout}\n{}",
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert_eq!(
        runs(&counter),
        20,
        "{}",
        &stdout[stdout.len().saturating_sub(2000)..]
    );
    assert_eq!(
        first_request_with(&requests, "loopguard: WARNING"),
        Some(11)
    );
    let last = streams
        .iter()
        .map(|r| gemini_responses(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains("Called run_shell_command with identical arguments");
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
    // The warning came with the result of call 11, not before it.
    assert!(last[10].contains("loopguard: WARNING"), "{}", last[10]);
}

// ---------------------------------------------------------------------------------------
// Qwen Code: `OPENAI_BASE_URL`, `--auth-type openai --approval-mode yolo`. Qwen Code stops
// five identical calls itself, so the model rewords the `description` argument on every
// call (as models do); loopguard's profile does not hash it.

fn qwen_tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn qwen_all_text(body: &Value) -> String {
    body["messages"].to_string()
}

#[test]
fn qwen_loop_is_warned_then_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let counter = dir.path().join("runs.txt");
    // Qwen Code 0.24 sometimes reports `Output: (empty)` for a command that exits at once
    // (its output capture races the exit); the pause keeps every result the same, so the
    // loop is the same loop each time.
    let command = format!(
        "echo run >> {}; echo FAIL; sleep 0.3; exit 1",
        counter.display()
    );
    let server = ModelServer::start(move |req: &Request| {
        if !req.path.ends_with("/chat/completions") {
            return Response::not_found();
        }
        let k = qwen_tool_results(&req.body).len();
        let stream = req.body["stream"] == true;
        let usage = json!({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15});
        if k < CALLS && req.body.get("tools").is_some() {
            let args = json!({"command": command, "description": format!("Run the test suite (attempt {})", k + 1), "is_background": false}).to_string();
            if !stream {
                return Response::json(
                    &json!({"id":"c","object":"chat.completion","created":1,"model":"scripted",
                    "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":format!("call_{k}"),"type":"function",
                    "function":{"name":"run_shell_command","arguments":args}}]},"finish_reason":"tool_calls"}],"usage":usage}),
                );
            }
            let chunk1 = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"scripted",
                "choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":format!("call_{k}"),"type":"function",
                "function":{"name":"run_shell_command","arguments":args}}]},"finish_reason":null}]});
            let chunk2 = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"scripted",
                "choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":usage});
            Response::sse_raw(format!(
                "data: {chunk1}\n\ndata: {chunk2}\n\ndata: [DONE]\n\n"
            ))
        } else {
            let text = if req.body.get("tools").is_some() {
                "I give up."
            } else {
                "{}"
            };
            if !stream {
                return Response::json(
                    &json!({"id":"c","object":"chat.completion","created":1,"model":"scripted",
                    "choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"stop"}],"usage":usage}),
                );
            }
            let chunk1 = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"scripted",
                "choices":[{"index":0,"delta":{"role":"assistant","content":text},"finish_reason":null}]});
            let chunk2 = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"scripted",
                "choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":usage});
            Response::sse_raw(format!(
                "data: {chunk1}\n\ndata: {chunk2}\n\ndata: [DONE]\n\n"
            ))
        }
    });
    std::fs::write(
        home.join(".qwen/settings.json"),
        "{\n  \"privacy\": {\"usageStatisticsEnabled\": false}\n}\n",
    )
    .unwrap();
    let state = dir.path().join("state.sqlite3");
    install("qwen", &home.join(".qwen/settings.json"), &state);
    let mut cmd = Command::new(agent_bin("qwen"));
    cmd.current_dir(&work)
        .env("HOME", &home)
        .env("OPENAI_API_KEY", "dummy")
        .env(
            "OPENAI_BASE_URL",
            format!("http://127.0.0.1:{}/v1", server.port),
        )
        .env("OPENAI_MODEL", "scripted")
        .args([
            "--auth-type",
            "openai",
            "--approval-mode",
            "yolo",
            "--output-format",
            "json",
            "-p",
            "Make the tests pass.",
        ]);
    let out = run_with_timeout(cmd, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let chats: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.body.get("tools").is_some())
        .collect();
    let requests: Vec<(usize, String)> = chats
        .iter()
        .map(|r| (qwen_tool_results(&r.body).len(), qwen_all_text(&r.body)))
        .collect();
    assert!(
        requests.iter().any(|(k, _)| *k == CALLS),
        "qwen did not finish the scripted conversation ({} requests): {}\n{}",
        requests.len(),
        &stdout[stdout.len().saturating_sub(3000)..],
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert_eq!(
        runs(&counter),
        20,
        "{}",
        &stdout[stdout.len().saturating_sub(2000)..]
    );
    assert_eq!(
        first_request_with(&requests, "loopguard: WARNING"),
        Some(11)
    );
    let last = chats
        .iter()
        .map(|r| qwen_tool_results(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains("Called run_shell_command with identical arguments");
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
}

/// A loop that survives a compaction ends the run in Codex: three calls, an automatic
/// compaction (the scripted model reports a context over `model_auto_compact_token_limit`),
/// and the same failing call three more times: the post-compaction guard answers the third
/// with `continue: false`. Codex 0.171 does not end its turn on a PostToolUse
/// `continue: false`, so every later call of the run is denied with the stop reason: the
/// command runs six times, whatever the model asks.
#[test]
fn codex_is_stopped_when_a_loop_survives_a_compaction() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let counter = dir.path().join("runs.txt");
    let command = format!("echo run >> {}; echo FAIL; exit 1", counter.display());
    let issued = Arc::new(AtomicUsize::new(0));
    let compactions = Arc::new(AtomicUsize::new(0));
    let (issued2, compactions2) = (issued.clone(), compactions.clone());
    let server = ModelServer::start(move |req: &Request| {
        if !req.path.ends_with("/responses") {
            return Response::not_found();
        }
        let compaction = req
            .body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty));
        let (item, tokens) = if compaction {
            compactions2.fetch_add(1, Ordering::SeqCst);
            (
                json!({"type":"message","id":"msg_s","role":"assistant",
                "content":[{"type":"output_text","text":"Summary: the tests fail; keep running them."}]}),
                10,
            )
        } else {
            let k = issued2.fetch_add(1, Ordering::SeqCst) + 1;
            let item = if k <= 12 {
                json!({"type":"function_call","id":format!("fc_{k}"),"call_id":format!("call_{k}"),
                    "name":"exec_command","arguments":json!({"cmd": command}).to_string()})
            } else {
                json!({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"I give up."}]})
            };
            // The answer with the third call reports a context over the compaction limit.
            (item, if k == 3 { 900_000 } else { 10 })
        };
        Response::sse(&[
            (
                Some("response.created"),
                json!({"type":"response.created","response":{"id":"resp"}}),
            ),
            (
                Some("response.output_item.done"),
                json!({"type":"response.output_item.done","output_index":0,"item":item}),
            ),
            (
                Some("response.completed"),
                json!({"type":"response.completed","response":{"id":"resp",
                "usage":{"input_tokens":tokens,"output_tokens":1,"total_tokens":tokens + 1}}}),
            ),
        ])
    });
    std::fs::write(
        home.join(".codex/config.toml"),
        format!(
            "model = \"scripted\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\nmodel_auto_compact_token_limit = 5000\nmodel_context_window = 1000000\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n",
            server.port
        ),
    )
    .unwrap();
    let state = dir.path().join("state.sqlite3");
    install("codex", &home.join(".codex/hooks.json"), &state);
    let mut cmd = Command::new(agent_bin("codex"));
    cmd.current_dir(&work)
        .env("HOME", &home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("SCRIPTED_API_KEY", "dummy")
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "Make the tests pass.",
        ]);
    let out = run_with_timeout(cmd, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        compactions.load(Ordering::SeqCst),
        1,
        "one automatic compaction: {stdout}"
    );
    // Three runs before the compaction, three after it; the third after it stops Codex.
    let status = Command::new(loopguard())
        .args(["status", "codex:", "--events", "30", "--state"])
        .arg(&state)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert_eq!(runs(&counter), 6, "{status}");
    // Twelve calls asked for, then the final answer: Codex went on asking the model.
    assert_eq!(issued.load(Ordering::SeqCst), 13);
    let last = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| codex_outputs(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    // After the compaction: three runs, then six calls denied with the stop reason.
    assert!(last.len() >= 9, "{last:?}");
    for o in &last[last.len() - 6..] {
        assert!(o.contains("compaction_loop_persisted"), "{o}");
    }
}
