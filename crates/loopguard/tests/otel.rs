//! Production traces (docs/traces/) from a real instrumentation: a Pydantic AI agent (from PyPI,
//! driven offline by its scripted `FunctionModel`) instrumented with the OpenTelemetry
//! Python SDK, whose model calls the same tool 25 times.
//!
//! * `loopguard replay` finds the loop in the files the SDK writes: OTLP JSON encoded by the
//!   SDK's own OTLP encoder (base64 ids), the `ConsoleSpanExporter`'s pretty-printed spans,
//!   and Pydantic AI's legacy (version 2) attribute names.
//! * `loopguard serve` receives the same spans from the SDK's OTLP/HTTP exporter
//!   (protobuf, gzip, a bearer token): the loop shows in `/metrics` and the session API.
//! * OTLP JSON posted out of order, in two batches, and a late span.
//! * A real OpenAI Agents SDK agent (scripted `Model`, offline) whose trace processor writes
//!   each trace and span's `export()`: `loopguard replay` reads it as `openai-agents`; the
//!   same run instrumented by OpenInference (`openinference-instrumentation-openai-agents`,
//!   TOOL spans) is read as `otlp`.
//!
//! * What the real Traceloop, Phoenix (OpenInference), Langfuse and LangSmith SDKs send for a
//!   looping agent, captured on loopback (`tests/otel/sdk_exports.py`), replayed.
//! * A real collector (Rotel, from PyPI) between the SDK's exporter and `serve`.
//! * The real Copilot CLI, Codex CLI and Claude Code, offline against scripted models, sending
//!   their own telemetry to `serve` (`/v1/traces`, `/v1/logs`) with no hook installed: the loop
//!   is found with each agent's tool profile. Codex-shaped log events from the Python SDK's
//!   log exporter (protobuf) and as OTLP JSON.
//! * The trace reader maps Copilot's and Codex's tools exactly as their hooks do.
//!
//! Needs the venvs of `scripts/setup-otel.sh` (target/otel-venv and target/otel-sdks-venv, or
//! $LOOPGUARD_OTEL_VENV / $LOOPGUARD_OTEL_SDKS_VENV), Codex and Copilot CLI from
//! `scripts/setup-agents.sh` and Claude Code from `scripts/setup-claude.sh`.

mod agent_e2e;
mod serve_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serve_support::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let venv = std::env::var_os("LOOPGUARD_OTEL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/otel-venv"));
    let py = venv.join("bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup-otel.sh (the OpenTelemetry SDK and Pydantic AI from PyPI)",
        py.display()
    );
    py
}

/// Runs the scripted Pydantic AI agent with `args`; panics with its stderr when it fails.
fn run_agent(args: &[&str]) {
    run_script("pydantic_ai_loop.py", args);
}

/// Runs `tests/otel/<script>` with the venv's Python; it must report 25 tool calls.
fn run_script(name: &str, args: &[&str]) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/otel")
        .join(name);
    let out = Command::new(python())
        .arg("-W")
        .arg("ignore")
        .arg(&script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tool calls: 25"), "{err}");
}

fn replay(path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .arg("replay")
        .arg(path)
        .output()
        .expect("run loopguard replay");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Observe mode (transcripts): finding loops is a report, not a failure.
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn replay_finds_the_loop_in_files_written_by_the_real_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("traces.jsonl");
    let console = dir.path().join("console.json");
    let legacy = dir.path().join("legacy.jsonl");
    let (j, c, l) = (
        json.to_str().unwrap(),
        console.to_str().unwrap(),
        legacy.to_str().unwrap(),
    );
    run_agent(&["--otlp-json-file", j, "--console-file", c]);
    run_agent(&["--version", "2", "--otlp-json-file", l]);
    for path in [&json, &console, &legacy] {
        let text = replay(path);
        assert!(
            text.contains("reading as otlp"),
            "{}: {text}",
            path.display()
        );
        // 25 identical read_file calls: warned at count 10, blocked at count 20.
        assert!(
            text.contains("25 calls, 10 warnings (1 shown to the model), 5 blocks"),
            "{}: {text}",
            path.display()
        );
        assert!(
            text.contains("read_file {\"path\":\"/srv/app/config.yaml\"}"),
            "{text}"
        );
        assert!(text.contains("first warning at line"), "{text}");
        assert!(text.contains("(count 10)"), "{text}");
        assert!(text.contains("first block at line"), "{text}");
        assert!(text.contains("(count 20)"), "{text}");
        // Arguments and results were recorded: no note about missing attributes.
        assert!(!text.contains("judged by tool name only"), "{text}");
    }
}

#[test]
fn replay_finds_the_loop_in_a_real_openai_agents_sdk_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("agents-trace.jsonl");
    run_script("openai_agents_loop.py", &[out.to_str().unwrap()]);
    let text = replay(&out);
    assert!(text.contains("reading as openai-agents"), "{text}");
    assert!(
        text.contains("25 calls, 10 warnings (1 shown to the model), 5 blocks"),
        "{text}"
    );
    assert!(
        text.contains("(count 10)") && text.contains("(count 20)"),
        "{text}"
    );
    assert!(!text.contains("no result"), "{text}");
}

/// The conversation id Pydantic AI gave the run (the session the calls go to).
fn conversation_id(otlp_json_lines: &Path) -> String {
    let text = std::fs::read_to_string(otlp_json_lines).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for rs in v["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for s in ss["spans"].as_array().into_iter().flatten() {
                    for a in s["attributes"].as_array().into_iter().flatten() {
                        if a["key"] == "gen_ai.conversation.id" {
                            return a["value"]["stringValue"].as_str().unwrap().to_string();
                        }
                    }
                }
            }
        }
    }
    panic!("no gen_ai.conversation.id in {}", otlp_json_lines.display())
}

/// Polls `url` (with the bearer token) until `done` accepts the answer.
fn wait_for(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    done: impl Fn(&Answer) -> bool,
) -> Answer {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("authorization", a)])
        .unwrap_or_default();
    let start = Instant::now();
    loop {
        let a = request(agent, "GET", url, &headers, None).expect("an answer");
        if done(&a) {
            return a;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "GET {url}: still {} {}",
            a.status,
            a.body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET /metrics` as tenant `acme` (`tok-acme`): its own series only.
fn tenant_metrics(agent: &ureq::Agent, server: &Serve) -> String {
    let anonymous = get(agent, &server.url("/metrics"));
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    let a = request(
        agent,
        "GET",
        &server.url("/metrics"),
        &[("Authorization", "Bearer tok-acme")],
        None,
    )
    .unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

/// Waits for tenant `tok-acme`'s `session` to count 25 calls, checks it was warned 10 times
/// and blocked 5 times, and that `/metrics` counts a critical trace loop of `service` (five
/// of them when `five`).
fn assert_session_looped(
    agent: &ureq::Agent,
    server: &Serve,
    session: &str,
    service: &str,
    five: bool,
) {
    let answer = wait_for(
        agent,
        &server.url(&format!("/v1/sessions/{session}")),
        Some("tok-acme"),
        |a| a.status == 200 && a.json()["calls"] == 25,
    );
    let s = answer.json();
    assert_eq!(
        (s["warnings"].as_u64(), s["blocks"].as_u64()),
        (Some(10), Some(5)),
        "{s}"
    );
    // With --tokens, a tenant reads its own series of /metrics.
    let metrics = tenant_metrics(agent, server);
    assert!(
        metrics.lines().any(
            |l| l.starts_with("loopguard_trace_loops_total{tenant=\"acme\",")
                && l.contains(&format!("service=\"{service}\""))
                && l.contains("level=\"critical\"")
                && (!five || l.ends_with(" 5"))
        ),
        "{metrics}"
    );
}

#[test]
fn serve_receives_the_real_otlp_http_exporter_protobuf_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-acme\n").unwrap();
    let server = Serve::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--trace-wait",
        "300ms",
    ]);
    let copy = dir.path().join("sent.jsonl");
    run_agent(&[
        "--otlp-http",
        &server.url("/v1/traces"),
        "--gzip",
        "--token",
        "tok-acme",
        "--otlp-json-file",
        copy.to_str().unwrap(),
    ]);
    let session = conversation_id(&copy);
    let agent = agent();
    let answer = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{session}")),
        Some("tok-acme"),
        |a| a.status == 200 && a.json()["calls"] == 25,
    );
    let s = answer.json();
    assert_eq!(s["outcomes"], 25, "{s}");
    // Observe mode: the calls already ran; warned from count 10, "blocked" from count 20.
    assert_eq!(s["warnings"], 10, "{s}");
    assert_eq!(s["blocks"], 5, "{s}");
    // Another tenant does not see it.
    let other = request(
        &agent,
        "GET",
        &server.url(&format!("/v1/sessions/{session}")),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(other.status, 401);
    let metrics = tenant_metrics(&agent, &server);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("loopguard_trace_loops_total{")
                && l.contains("detector=\"generic_repeat\"")
                && l.contains("level=\"critical\"")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(line.contains("service=\"loop-agent\""), "{line}");
    assert!(line.contains("agent=\"looper\""), "{line}");
    assert!(line.ends_with(" 5"), "{line}");
    assert!(
        metrics.contains("loopguard_trace_spans_total{tenant=\"acme\",kind=\"tool\"} 25"),
        "{metrics}"
    );
}

/// The Python of the observability SDKs' venv (`scripts/setup-otel.sh`).
fn sdks_python() -> PathBuf {
    let venv = std::env::var_os("LOOPGUARD_OTEL_SDKS_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/otel-sdks-venv"));
    let py = venv.join("bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup-otel.sh (Traceloop, LangSmith, Langfuse and Phoenix SDKs from PyPI)",
        py.display()
    );
    py
}

/// What the real Traceloop, Arize Phoenix (OpenInference), Langfuse and LangSmith SDKs send
/// for 25 identical tool calls, captured on loopback by `tests/otel/sdk_exports.py`, is
/// read by `loopguard replay` (by structure: OTLP JSON for the OpenTelemetry-based three,
/// LangSmith's run shape for LangSmith) and the loop is found.
#[test]
fn replay_finds_the_loop_in_what_the_real_observability_sdks_send() {
    let dir = tempfile::tempdir().unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otel/sdk_exports.py");
    for (kind, format) in [
        ("traceloop", "otlp"),
        ("phoenix", "otlp"),
        ("langfuse", "otlp"),
        ("langsmith", "langsmith"),
    ] {
        let out_file = dir.path().join(format!("{kind}.out"));
        let out = Command::new(sdks_python())
            .args(["-W", "ignore"])
            .arg(&script)
            .arg(kind)
            .arg(&out_file)
            .output()
            .expect("run python");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.contains("tool calls: 25"),
            "{kind}: {err}"
        );
        let text = replay(&out_file);
        assert!(
            text.contains(&format!("reading as {format} ")),
            "{kind}: {text}"
        );
        assert!(
            text.contains("25 calls, 10 warnings (1 shown to the model), 5 blocks"),
            "{kind}: {text}"
        );
        assert!(
            text.contains("read_file {\"path\":\"/srv/app/config.yaml\"}"),
            "{kind}: {text}"
        );
        assert!(!text.contains("judged by tool name only"), "{kind}: {text}");
        assert!(!text.contains("have no result"), "{kind}: {text}");
    }
}

/// Codex's tool events, live: `serve` receives `codex.tool_result` log records on
/// `/v1/logs` (protobuf and gzip from the Python SDK's OTLP log exporter, and OTLP JSON as
/// Codex's `protocol = "json"` sends) and judges them with Codex's tool profile: the chunk id
/// and wall time that change on every run do not hide the repeat.
#[test]
fn serve_receives_codex_tool_events_on_v1_logs() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-acme\n").unwrap();
    let server = Serve::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--trace-wait",
        "300ms",
    ]);
    let conversation = "0199a7c2-5b1e-7f00-9a3c-1f2e3d4c5b6a";
    run_script(
        "codex_logs.py",
        &[&server.url("/v1/logs"), "tok-acme", conversation],
    );
    let agent = agent();
    assert_session_looped(&agent, &server, conversation, "codex_exec", false);

    // OTLP JSON, as Codex's `protocol = "json"` exporter sends it; a body that is neither
    // is refused with a message naming what was expected.
    let body = r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"codex_cli_rs"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1790000000000000000","attributes":[{"key":"event.name","value":{"stringValue":"codex.tool_result"}},{"key":"tool_name","value":{"stringValue":"write_stdin"}},{"key":"arguments","value":{"stringValue":"{\"session_id\":3,\"chars\":\"\"}"}},{"key":"output","value":{"stringValue":"Process running with session ID 3"}},{"key":"conversation.id","value":{"stringValue":"json-conv"}}]}]}]}]}"#;
    let auth = [
        ("authorization", "Bearer tok-acme"),
        ("content-type", "application/json"),
    ];
    let posted = request(
        &agent,
        "POST",
        &server.url("/v1/logs"),
        &auth,
        Some(body.as_bytes()),
    )
    .unwrap();
    assert_eq!(posted.status, 200, "{}", posted.body);
    let answer = wait_for(
        &agent,
        &server.url("/v1/sessions/json-conv"),
        Some("tok-acme"),
        |a| a.status == 200 && a.json()["calls"] == 1,
    );
    assert_eq!(answer.json()["outcomes"], 1, "{}", answer.body);
    let bad = request(
        &agent,
        "POST",
        &server.url("/v1/logs"),
        &[
            ("authorization", "Bearer tok-acme"),
            ("content-type", "application/x-protobuf"),
        ],
        Some(b"not protobuf at all"),
    )
    .unwrap();
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body.contains("ExportLogsServiceRequest"),
        "{}",
        bad.body
    );
}

/// Waits (60 s at the most) until `serve`'s `/metrics` counts a critical trace loop of five
/// blocks, and returns the metrics and the critical line; `who` and `stderr` name the agent in
/// the failure message.
fn wait_for_critical_loop(server: &Serve, who: &str, stderr: &str) -> (String, String) {
    let agent = agent();
    let start = Instant::now();
    let metrics = loop {
        let m = get(&agent, &server.url("/metrics")).body;
        if m.lines().any(|l| {
            l.starts_with("loopguard_trace_loops_total{")
                && l.contains("level=\"critical\"")
                && l.ends_with(" 5")
        }) {
            break m;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no loop from {who}'s telemetry:\n{m}\nserve: {}\n{who}: {stderr}",
            server.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let line = metrics
        .lines()
        .find(|l| l.starts_with("loopguard_trace_loops_total{") && l.contains("critical"))
        .unwrap_or_default()
        .to_string();
    (metrics, line)
}

/// Runs the agent's `cmd` (10 minutes at the most) and checks that the scripted `model`
/// received the request `finished` accepts (the end of the scripted conversation); returns
/// the agent's stderr, for later failure messages.
fn run_to_the_end(
    cmd: Command,
    model: &agent_e2e::ModelServer,
    who: &str,
    finished: impl Fn(&agent_e2e::Request) -> bool,
) -> String {
    let out = agent_e2e::run_with_timeout(cmd, Duration::from_secs(600)).output;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let requests = model.requests();
    let tools = |r: &agent_e2e::Request| -> Vec<String> {
        let names = r.body["tools"].as_array().cloned().unwrap_or_default();
        names
            .iter()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or(t["name"].as_str())
                    .unwrap_or("?")
                    .to_string()
            })
            .collect()
    };
    assert!(
        requests.iter().any(&finished),
        "{who} did not finish the scripted conversation ({} requests; tools {:?}): {stdout}\n{stderr}",
        requests.len(),
        requests.last().map(tools)
    );
    stderr
}

/// The looping command of the telemetry tests (no hook installed, nothing counts its runs).
const FAILING: &str = "echo FAIL; exit 1";

/// The real Codex CLI (`@openai/codex`, scripts/setup-agents.sh) with its OpenTelemetry log
/// exporter pointed at `serve`'s `/v1/logs` (`protocol = "json"`), driven offline by a
/// scripted model that runs the same failing command 25 times, with no hook installed: the
/// loop is found from Codex's own telemetry (`codex.tool_result`), judged with Codex's tool
/// profile.
#[test]
fn serve_finds_the_loop_in_the_real_codex_telemetry() {
    use agent_e2e::{codex_config, Cli, ModelServer, Request, Trial, CALLS};
    let trial = Trial::new();
    let server = Serve::start(&["--trace-wait", "300ms"]);
    let model = ModelServer::start(|req: &Request| Cli::Codex.answer(req, FAILING));
    std::fs::create_dir_all(trial.home.join(".codex")).unwrap();
    let otel = format!(
        "\n[otel]\nenvironment = \"test\"\nlog_user_prompt = false\nexporter = {{ otlp-http = {{ endpoint = \"{}\", protocol = \"json\" }} }}\n",
        server.url("/v1/logs")
    );
    std::fs::write(
        trial.home.join(".codex/config.toml"),
        codex_config(model.port, &otel),
    )
    .unwrap();
    let cmd = Cli::Codex.cmd(&trial, model.port);
    let stderr = run_to_the_end(cmd, &model, "codex", |r| {
        Cli::Codex.is_turn(r) && Cli::Codex.results(&r.body).len() == CALLS
    });
    let (metrics, line) = wait_for_critical_loop(&server, "Codex", &stderr);
    assert!(line.contains("service=\"codex_exec\""), "{line}");
    // Every tool call arrived as a tool event: 25 calls, each with its outcome.
    assert!(
        metrics.contains("loopguard_trace_spans_total{tenant=\"\",kind=\"tool\"} 25"),
        "{metrics}"
    );
}

/// The real GitHub Copilot CLI (`@github/copilot`, scripts/setup-agents.sh), offline with its
/// own-provider mode (`COPILOT_OFFLINE`, `COPILOT_PROVIDER_BASE_URL`) against a scripted
/// Chat Completions model that runs the same failing `bash` command 25 times, rewording its
/// description each time; its OpenTelemetry traces (`COPILOT_OTEL_ENABLED`, content capture
/// on) go to `serve`. No hook is installed: the loop is found from Copilot's own spans,
/// judged with Copilot's tool profile (the description does not count).
#[test]
fn serve_finds_the_loop_in_the_real_copilot_cli_telemetry() {
    use agent_e2e::{Cli, ModelServer, Request, Trial, CALLS};
    let trial = Trial::new();
    let server = Serve::start(&["--trace-wait", "300ms"]);
    let model = ModelServer::start(|req: &Request| Cli::Copilot.answer(req, FAILING));
    let mut cmd = Cli::Copilot.cmd(&trial, model.port);
    cmd.env("XDG_CONFIG_HOME", trial.home.join(".config"))
        .env("COPILOT_OTEL_ENABLED", "true")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", server.url(""))
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .env("COPILOT_OTEL_CAPTURE_CONTENT", "true");
    let stderr = run_to_the_end(cmd, &model, "copilot", |r| {
        Cli::Copilot.is_turn(r) && Cli::Copilot.results(&r.body).len() == CALLS
    });
    let (_, line) = wait_for_critical_loop(&server, "Copilot", &stderr);
    assert!(line.contains("service=\"github-copilot\""), "{line}");
}

/// The real Claude Code (`@anthropic-ai/claude-code`, scripts/setup-claude.sh), headless
/// against a scripted Messages model that runs the same failing `Bash` command 25 times with
/// a new description each time, exporting its telemetry (`CLAUDE_CODE_ENABLE_TELEMETRY`,
/// OTLP/HTTP protobuf, tool details on) to `serve` with no hook installed. Its tool calls are
/// the `claude_code.tool_result` log events (its beta trace spans carry no arguments): judged
/// with the `claude-code` profile, the description does not count and the loop is blocked.
#[test]
fn serve_finds_the_loop_in_the_real_claude_code_telemetry() {
    use agent_e2e::{ModelServer, Request, Response, Trial, CALLS};
    use serde_json::{json, Value};
    let bin = root().join("target/claude-code/node_modules/.bin/claude");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup-claude.sh (Claude Code from npm)",
        bin.display()
    );
    let trial = Trial::new();
    let server = Serve::start(&["--trace-wait", "300ms"]);
    let tool_uses = |body: &Value| {
        body["messages"].as_array().map_or(0, |m| {
            m.iter()
                .filter(|m| m["role"] == "assistant")
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|b| b["type"] == "tool_use")
                .count()
        })
    };
    let model = ModelServer::start(move |req: &Request| {
        if !req.path.starts_with("/v1/messages") {
            return Response::not_found();
        }
        let model = req.body["model"].as_str().unwrap_or("claude").to_string();
        if req.body["stream"] != true {
            return Response::json(
                &json!({"id": "msg_plain", "type": "message", "role": "assistant",
                "model": model, "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
            );
        }
        let k = tool_uses(&req.body);
        let has_bash = req.body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
        let (block, delta, stop) = if has_bash && k < CALLS {
            let input = json!({"command": FAILING,
                "description": format!("Run the test suite (attempt {})", k + 1)});
            (
                json!({"type": "tool_use", "id": format!("toolu_{:03}", k + 1), "name": "Bash", "input": {}}),
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                "tool_use",
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": "I give up."}),
                "end_turn",
            )
        };
        Response::sse(&[
            (
                Some("message_start"),
                json!({"type": "message_start", "message": {"id": format!("msg_{k}"),
                "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
            (
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ),
            (
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            ),
            (
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                Some("message_delta"),
                json!({"type": "message_delta", "delta": {"stop_reason": stop,
                "stop_sequence": null}, "usage": {"output_tokens": 5}}),
            ),
            (Some("message_stop"), json!({"type": "message_stop"})),
        ])
    });
    let mut cmd = Command::new(&bin);
    cmd.current_dir(&trial.work)
        .env("HOME", &trial.home)
        .env("XDG_CONFIG_HOME", trial.home.join(".config"))
        .env("IS_SANDBOX", "1")
        .env("ANTHROPIC_API_KEY", "dummy")
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        )
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env("OTEL_TRACES_EXPORTER", "none")
        .env("OTEL_METRICS_EXPORTER", "none")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", server.url(""))
        .env("OTEL_LOG_TOOL_DETAILS", "1")
        .env("OTEL_LOGS_EXPORT_INTERVAL", "500")
        .args([
            "-p",
            "Make the tests pass.",
            "--dangerously-skip-permissions",
            "--output-format",
            "json",
        ]);
    let stderr = run_to_the_end(cmd, &model, "claude", |r| {
        r.path.starts_with("/v1/messages") && tool_uses(&r.body) == CALLS
    });
    let (metrics, line) = wait_for_critical_loop(&server, "Claude Code", &stderr);
    assert!(line.contains("service=\"claude-code\""), "{line}");
    assert!(
        metrics.contains("loopguard_trace_spans_total{tenant=\"\",kind=\"tool\"} 25"),
        "{metrics}"
    );
}

/// A running Rotel (`rotel` from PyPI: an OpenTelemetry collector) receiving OTLP/HTTP on
/// `http_port` and exporting OTLP/HTTP (protobuf, gzip) to `export_to`. Killed on drop.
struct Collector {
    child: std::process::Child,
    http_port: u16,
}

impl Collector {
    fn start(export_to: &str, token: &str) -> Collector {
        let out = Command::new(python())
            .args([
                "-c",
                "import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
            ])
            .output()
            .expect("run python");
        let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            out.status.success() && Path::new(&bin).exists(),
            "the Rotel collector is missing from the venv: run scripts/setup-otel.sh ({})",
            String::from_utf8_lossy(&out.stderr)
        );
        let (grpc_port, http_port) = (free_port(), free_port());
        let child = Command::new(&bin)
            .arg("start")
            .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc_port}")])
            .args(["--otlp-http-endpoint", &format!("127.0.0.1:{http_port}")])
            .args(["--exporter", "otlp", "--otlp-exporter-protocol", "http"])
            .args(["--otlp-exporter-endpoint", export_to])
            .args([
                "--otlp-exporter-custom-headers",
                &format!("authorization=Bearer {token}"),
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start rotel-agent");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", http_port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "rotel did not listen on {http_port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Collector { child, http_port }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real collector between the agent and serve: the SDK's OTLP/HTTP exporter sends to
/// Rotel (an OpenTelemetry collector from PyPI), whose OTLP/HTTP exporter forwards the
/// batches (protobuf, gzip, with the tenant's token as a header) to `serve`. The
/// OpenTelemetry Collector itself (`otelcol-contrib`) is not packaged in any registry this
/// project can install from (see docs/traces/live.md).
#[test]
fn serve_receives_traces_through_a_real_collector() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-acme\n").unwrap();
    let server = Serve::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--trace-wait",
        "300ms",
    ]);
    let collector = Collector::start(&server.url(""), "tok-acme");
    let copy = dir.path().join("sent.jsonl");
    run_agent(&[
        "--otlp-http",
        &format!("http://127.0.0.1:{}/v1/traces", collector.http_port),
        "--otlp-json-file",
        copy.to_str().unwrap(),
        "--service",
        "collected-agent",
    ]);
    let session = conversation_id(&copy);
    assert_session_looped(&agent(), &server, &session, "collected-agent", true);
    drop(collector);
}

fn span_json(trace: &str, i: u64) -> String {
    format!(
        r#"{{"traceId":"{trace}","spanId":"{:016x}","name":"execute_tool bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"make test\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"FAILED"}}}}]}}"#,
        i + 1,
        1_700_000_000_000_000_000u64 + i * 1_000_000_000,
        1_700_000_000_000_000_000u64 + i * 1_000_000_000 + 500,
    )
}

fn body(spans: &[String]) -> Vec<u8> {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"ci-bot"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
    .into_bytes()
}

#[test]
fn serve_buffers_a_trace_sent_out_of_order_in_batches_and_counts_late_spans() {
    let server = Serve::start(&["--trace-wait", "1s"]);
    let agent = agent();
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let mut spans: Vec<String> = (0..12).map(|i| span_json(trace, i)).collect();
    spans.reverse();
    // Two batches, newest spans first.
    for half in spans.chunks(6) {
        let a = post_json(&agent, &server.url("/v1/traces"), &body(half));
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body, "{}");
    }
    let s = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{trace}")),
        None,
        // The trace's calls are applied one by one: wait for the last, not the first.
        |a| a.status == 200 && a.json()["calls"] == 12,
    )
    .json();
    // All twelve were applied together, in start order: the 11th and 12th warned.
    assert_eq!(s["calls"], 12, "{s}");
    assert_eq!(s["warnings"], 2, "{s}");
    // A late span: applied after the others, and counted.
    let late = post_json(
        &agent,
        &server.url("/v1/traces"),
        &body(&[span_json(trace, 12)]),
    );
    assert_eq!(late.status, 200);
    let s = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{trace}")),
        None,
        |a| a.json()["calls"] == 13,
    )
    .json();
    assert_eq!(s["warnings"], 3, "{s}");
    let metrics = get(&agent, &server.url("/metrics")).body;
    assert!(
        metrics.contains("loopguard_trace_late_spans_total 1"),
        "{metrics}"
    );
    // Problems are answered, never silent: not JSON, and a wrong content type.
    let bad = post_json(&agent, &server.url("/v1/traces"), b"{nope");
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("not JSON"), "{}", bad.body);
    let wrong = request(
        &agent,
        "POST",
        &server.url("/v1/traces"),
        &[("content-type", "text/plain")],
        Some(b"x"),
    )
    .unwrap();
    assert_eq!(wrong.status, 415, "{}", wrong.body);
    // A record that is not a trace is reported back in partialSuccess.
    let partial = post_json(
        &agent,
        &server.url("/v1/traces"),
        br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","name":"execute_tool x"}]}]}]}"#,
    );
    assert_eq!(partial.status, 200);
    assert!(
        partial.json()["partialSuccess"]["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("traceId")),
        "{}",
        partial.body
    );
}

/// Through a SQLite store (its calls block: applied on the blocking pool), gzip JSON.
#[test]
fn serve_applies_traces_through_a_sqlite_store_with_gzip_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("s.sqlite3").display());
    let server = Serve::start(&["--store", &store, "--trace-wait", "200ms"]);
    let agent = agent();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let spans: Vec<String> = (0..11).map(|i| span_json(trace, i)).collect();
    let mut gz = gzip(&body(&spans));
    let a = request(
        &agent,
        "POST",
        &server.url("/v1/traces"),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        Some(&gz),
    )
    .unwrap();
    assert_eq!(a.status, 200, "{}", a.body);
    let s = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{trace}")),
        None,
        // The trace's calls are applied one by one (each on the blocking pool with SQLite):
        // wait for the last, not the first.
        |a| a.status == 200 && a.json()["calls"] == 11,
    )
    .json();
    assert_eq!(
        (s["calls"].clone(), s["warnings"].clone()),
        (11.into(), 1.into()),
        "{s}"
    );
    // A broken gzip body is a 400 naming the encoding.
    gz.truncate(10);
    let bad = request(
        &agent,
        "POST",
        &server.url("/v1/traces"),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        Some(&gz),
    )
    .unwrap();
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("gzip"), "{}", bad.body);
}

/// Gzip-compresses `data` with the system's `gzip` (a test needs no extra crate for it).
fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip (coreutils) is needed for this test");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// A `Bash` span as Claude Code's telemetry would send it: the same command each time,
/// a reworded `description`, a result whose timing changes.
fn claude_code_span_json(trace: &str, i: u64) -> String {
    format!(
        r#"{{"traceId":"{trace}","spanId":"{:016x}","name":"execute_tool Bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"Bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"npm test\",\"description\":\"Run the tests (try {})\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"{{\"stdout\":\"1 failing\",\"stderr\":\"\",\"interrupted\":false,\"durationMs\":{}}}"}}}}]}}"#,
        i + 1,
        1_700_000_000_000_000_000u64 + i * 1_000_000_000,
        1_700_000_000_000_000_000u64 + i * 1_000_000_000 + 500,
        i + 1,
        100 + i * 37,
    )
}

fn body_from(service: &str, spans: &[String]) -> Vec<u8> {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
    .into_bytes()
}

/// `/v1/traces` hashes Claude Code's spans with the claude-code profile (as its hook
/// would), and the same spans from an unknown service as given.
#[test]
fn serve_judges_claude_code_traces_with_the_claude_code_profile() {
    let server = Serve::start(&["--trace-wait", "200ms"]);
    let agent = agent();
    let cc = "5b8efff798038103d269b633813fc60c";
    let plain = "6c9f0008a9149214e37ac744924fd71d";
    for (service, trace) in [("claude-code", cc), ("ci-bot", plain)] {
        let spans: Vec<String> = (0..25).map(|i| claude_code_span_json(trace, i)).collect();
        let a = post_json(
            &agent,
            &server.url("/v1/traces"),
            &body_from(service, &spans),
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let s = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{cc}")),
        None,
        |a| a.status == 200 && a.json()["calls"] == 25,
    )
    .json();
    // One repeated exec: warned from the 11th call, "blocked" (observe) from the 21st.
    assert_eq!(s["warnings"], 10, "{s}");
    assert_eq!(s["blocks"], 5, "{s}");
    let s = wait_for(
        &agent,
        &server.url(&format!("/v1/sessions/{plain}")),
        None,
        |a| a.status == 200 && a.json()["calls"] == 25,
    )
    .json();
    // Every description differs: 25 different calls, nothing flagged.
    assert_eq!(s["warnings"], 0, "{s}");
    assert_eq!(s["blocks"], 0, "{s}");
}

/// The same call as a hook payload and as a trace span gets the same argument and outcome
/// digests, for every agent whose hook and telemetry loopguard both read (Claude Code,
/// Copilot, Codex): the hook's payload reader with the agent's row of the one tool table,
/// and the trace reader's mapping with the same row, applied by the same guard.
#[test]
fn a_call_seen_by_the_hook_and_in_a_trace_gets_the_same_digests() {
    use loopguard_adapters::spans::TraceAgent;
    use loopguard_agents::{Agent, CallOutcome};
    use loopguard_core::Value;
    use loopguard_guard::{Guard, ToolProfile};
    use serde_json::json;

    fn text(v: &Value<'_>) -> String {
        let mut out = Vec::new();
        loopguard_core::json::write_json_value(&mut out, v);
        String::from_utf8(out).unwrap()
    }
    /// The `argsHash` and `resultHash` of a call and its outcome, as a fresh guard decides them.
    fn digests(tool: &str, args: &str, result: &str) -> (serde_json::Value, serde_json::Value) {
        let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
        let call = format!(
            r#"{{"type":"call","session":"s","callId":"c","tool":{},"args":{args}}}"#,
            json!(tool)
        );
        let outcome = format!(
            r#"{{"type":"outcome","session":"s","callId":"c","tool":{},"args":{args},"result":{result}}}"#,
            json!(tool)
        );
        let c: serde_json::Value =
            serde_json::from_slice(&guard.apply_line(None, call.as_bytes()).unwrap()).unwrap();
        let o: serde_json::Value =
            serde_json::from_slice(&guard.apply_line(None, outcome.as_bytes()).unwrap()).unwrap();
        assert_eq!(c["argsHash"], o["argsHash"]);
        (c["argsHash"].clone(), o["resultHash"].clone())
    }

    let cases: &[(
        Agent,
        TraceAgent,
        &str,
        serde_json::Value,
        serde_json::Value,
    )] = &[
        (
            Agent::ClaudeCode,
            TraceAgent::ClaudeCode,
            "Bash",
            json!({"command":"npm test","description":"x"}),
            json!({"stdout":"FAIL","stderr":"","interrupted":false}),
        ),
        (
            Agent::ClaudeCode,
            TraceAgent::ClaudeCode,
            "Read",
            json!({"file_path":"/a"}),
            json!({"type":"text","file":{"content":"x"}}),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "bash",
            json!({"command":"npm test","description":"x","initial_wait":30,"mode":"sync","sessionId":"main"}),
            json!({"resultType":"success","textResultForLlm":"FAIL\n<shellId: 7 completed with exit code 1>"}),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "powershell",
            json!({"command":"dir","description":"x"}),
            json!(
                "Chunk ID: 1f\nWall time: 1.5 seconds\nProcess exited with code 2\nOutput:\nFAIL"
            ),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "read_bash",
            json!({"sessionId":"7","delay":5}),
            json!("building"),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "write_bash",
            json!({"sessionId":"7","input":"","delay":5}),
            json!("building"),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "write_bash",
            json!({"sessionId":"7","input":"y\n"}),
            json!("ok"),
        ),
        (
            Agent::Copilot,
            TraceAgent::Copilot,
            "view",
            json!({"path":"/a"}),
            json!("contents"),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "exec_command",
            json!({"cmd":"ls","workdir":"/r","yield_time_ms":1000,"max_output_tokens":10,"justification":"j"}),
            json!({"output":"a\nb","metadata":{"exit_code":0}}),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "shell",
            json!({"command":["bash","-lc","ls"],"timeout_ms":1000}),
            json!("Exit code: 1\nWall time: 0.2 seconds\nno such file"),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "write_stdin",
            json!({"session_id":3,"chars":""}),
            json!("Process running with session ID 3\nbuilding"),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "write_stdin",
            json!({"session_id":3,"chars":"q"}),
            json!("bye"),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "exec",
            json!({"code":"const r = await tools.write_stdin({session_id: 12, chars: \"\"});\ntext(r);"}),
            json!("building"),
        ),
        (
            Agent::Codex,
            TraceAgent::Codex,
            "apply_patch",
            json!({"input":"*** Begin Patch"}),
            json!("Done"),
        ),
    ];
    for (hook_agent, trace_agent, tool, args, result) in cases {
        // The hook: the agent's own payload shape, read by its protocol.
        let payload = match hook_agent {
            Agent::Copilot => {
                json!({"sessionId":"s","cwd":"/p","toolName":tool,"toolArgs":args.to_string(),"toolResult":result})
            }
            _ => {
                json!({"session_id":"s","hook_event_name":"PostToolUse","tool_name":tool,"tool_input":args,"tool_use_id":"c","tool_response":result})
            }
        };
        let bytes = payload.to_string();
        let parsed = loopguard_agents::parse_payload(bytes.as_bytes()).unwrap();
        let ev = loopguard_agents::read(hook_agent.protocol(), &parsed).unwrap();
        let t = ev.tool.as_ref().unwrap();
        let Some(CallOutcome::Result(r)) = &ev.outcome else {
            panic!("{tool}: {:?}", ev.outcome)
        };
        let hook = digests(&t.name.to_string_lossy(), &text(&t.input), &text(r));
        // The trace: the span's attributes, mapped by the trace reader.
        let args_v = Value::parse(args.to_string().as_bytes())
            .unwrap()
            .into_owned();
        let (trace_tool, trace_args) = trace_agent.map_call(tool, &args_v);
        let result_v = Value::parse(result.to_string().as_bytes())
            .unwrap()
            .into_owned();
        let trace_result = trace_agent.map_result(&trace_tool, &result_v);
        let trace = digests(&trace_tool, &text(&trace_args), &text(&trace_result));
        assert_eq!(hook, trace, "{hook_agent} {tool}");
        assert!(hook.0.is_string() && hook.1.is_string(), "{hook:?}");
    }
}
