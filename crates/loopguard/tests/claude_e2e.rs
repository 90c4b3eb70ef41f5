//! End to end with the real Claude Code CLI (`@anthropic-ai/claude-code` from npm, the
//! version pinned in scripts/setup-claude.sh, installed into target/claude-code), run
//! headless (`claude -p … --output-format stream-json`) against a scripted Anthropic
//! Messages API server on 127.0.0.1 written here, with loopguard's hook installed into a
//! temporary HOME's `~/.claude/settings.json` by `loopguard hook install`.
//!
//! The scripted model asks for the same Bash call over and over (the command appends a
//! line to a file and prints the same text). With the default profile the command runs
//! exactly 20 times, the warning reaches the model with tool result 11 and the block from
//! call 21. With the strict profile the run is ended (`second_critical_abort`) and the CLI
//! stops: no more requests reach the model. In observe mode nothing is denied, and the
//! record of what would have happened outlives the session.
//!
//! What the CLI does, found by running it against this server: a `GET /` first (any
//! answer will do), then `POST /v1/messages?beta=true` with `stream: true` for every
//! turn; the answer is Anthropic's SSE stream (`message_start`, `content_block_start`,
//! `content_block_delta` with `input_json_delta` or `text_delta`, `content_block_stop`,
//! `message_delta` with the `stop_reason`, `message_stop`). Tool results come back as
//! `tool_result` blocks in the last user message, hook context beside them. Offline:
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, `ANTHROPIC_API_KEY=dummy`, `ANTHROPIC_BASE_URL`
//! pointing here; `IS_SANDBOX=1` when run as root (for `--dangerously-skip-permissions`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Calls the scripted model asks for before it gives up and ends its turn.
const MODEL_CALLS: usize = 26;
/// The most one CLI run may take (the machine is shared and slow; a normal run takes
/// seconds).
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// The `claude` program: `$LOOPGUARD_CLAUDE`, else scripts/setup-claude.sh's install.
fn claude() -> PathBuf {
    let path = std::env::var_os("LOOPGUARD_CLAUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/claude-code/node_modules/.bin/claude")
        });
    assert!(
        path.exists(),
        "Claude Code is not installed at {}: run scripts/setup-claude.sh first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// One request the scripted server received.
#[derive(Clone, Debug)]
struct Seen {
    /// Tool calls the model had made before this request (tool_use blocks in it).
    calls_before: usize,
    /// The last message (the tool result and any hook context), as JSON text.
    last: String,
    /// Every message after the model's last one (the tool result, hook context, reminders
    /// Claude Code adds), as JSON text.
    tail: String,
}

/// The scripted Anthropic Messages API server: every streamed request with the Bash tool
/// is answered with one more identical Bash call, until [`MODEL_CALLS`] calls since the
/// prompt; then a final text. Anything else gets a short text answer.
struct ModelServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl ModelServer {
    fn start(command: String) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let log = log.clone();
                let command = command.clone();
                std::thread::spawn(move || serve_connection(conn, &log, &command));
            }
        });
        ModelServer { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// HTTP/1.1 with keep-alive: requests one after another on the connection.
fn serve_connection(conn: TcpStream, log: &Mutex<Vec<Seen>>, command: &str) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(600)));
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (status, kind, payload) = if request_line.starts_with("POST /v1/messages") {
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            answer(&req, log, command)
        } else {
            ("404 Not Found", "application/json", b"{}".to_vec())
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
            payload.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&payload).is_err() {
            return;
        }
    }
}

fn answer(
    req: &Value,
    log: &Mutex<Vec<Seen>>,
    command: &str,
) -> (&'static str, &'static str, Vec<u8>) {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let has_bash = req["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    let calls_before = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .count();
    let is_prompt = |m: &Value| {
        m["role"] == "user"
            && !m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    };
    let since = messages
        .iter()
        .rposition(is_prompt)
        .map_or(&messages[..], |i| &messages[i..]);
    let calls_this_prompt = since
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .count();
    let model = req["model"].as_str().unwrap_or("claude").to_string();
    if req["stream"] != true {
        let msg = json!({"id": "msg_plain", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}});
        return ("200 OK", "application/json", msg.to_string().into_bytes());
    }
    if has_bash {
        log.lock().unwrap().push(Seen {
            calls_before,
            last: messages.last().map(Value::to_string).unwrap_or_default(),
            tail: messages
                .iter()
                .skip(
                    messages
                        .iter()
                        .rposition(|m| m["role"] == "assistant")
                        .map_or(0, |i| i + 1),
                )
                .map(Value::to_string)
                .collect(),
        });
    }
    // Unique per request: a resumed session's requests repeat earlier call counts.
    let id = format!("msg_{calls_before}_{}", messages.len());
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    )];
    let (block, delta, stop) = if has_bash && calls_this_prompt < MODEL_CALLS {
        let input = json!({"command": command, "description": "Check the service"});
        (
            json!({"type": "tool_use", "id": format!("toolu_{:03}", calls_before + 1), "name": "Bash", "input": {}}),
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
    events.push((
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ));
    events.push((
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    ));
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let sse: String = events
        .iter()
        .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
        .collect();
    ("200 OK", "text/event-stream", sse.into_bytes())
}

/// One headless Claude Code run with loopguard's hook installed.
struct Run {
    /// Times the Bash command ran.
    runs: usize,
    /// What the model was sent.
    seen: Vec<Seen>,
    /// The CLI's stream-json output.
    stdout: String,
    /// `loopguard status --json` after the run.
    status: Value,
    /// The session transcript Claude Code wrote (`~/.claude/projects/…/ID.jsonl`).
    transcript: String,
    /// Under `loopguard run`: its exit status and its verdict.
    wrapped: Option<(Option<i32>, Value)>,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn run_claude(config: &str) -> Run {
    run_claude_with(config, &[], false)
}

/// A temporary HOME with loopguard's hook installed into Claude Code's user settings, and
/// the scripted model; [`Setup::claude`] runs the CLI in it.
struct Setup {
    dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    /// The file the Bash command appends a line to each time it runs.
    ran: PathBuf,
    /// The hook's state database.
    state: PathBuf,
    /// The config the hook was installed with.
    config: PathBuf,
    server: ModelServer,
}

/// What one `claude` process did.
struct Exit {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

impl Setup {
    /// `loopguard hook install` with `config` and extra `install_flags` (`--observe`).
    fn new(config: &str, install_flags: &[&str]) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let ran = dir.path().join("ran.txt");
        let state = dir.path().join("state/loopguard.sqlite3");
        let config_file = dir.path().join("loopguard.json5");
        std::fs::write(&config_file, config).unwrap();
        let server = ModelServer::start(format!(
            "echo ran >> {}; echo service unavailable",
            ran.display()
        ));
        let setup = Setup {
            dir,
            home,
            work,
            ran,
            state,
            config: config_file,
            server,
        };
        let loopguard = env!("CARGO_BIN_EXE_loopguard");
        let out = setup
            .command(loopguard)
            .args(["hook", "install", "--exe", loopguard, "--state"])
            .arg(&setup.state)
            .arg("--config")
            .arg(&setup.config)
            .args(install_flags)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        setup
    }

    /// `program` with the temporary HOME and XDG folders.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("HOME", &self.home)
            .env("XDG_STATE_HOME", self.dir.path().join("xdg-state"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg-config"))
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("LOOPGUARD_LOG");
        c
    }

    /// One headless run, `claude -p PROMPT … ARGS` (under `loopguard run --verdict
    /// VERDICT --` when `verdict` is given), to its end.
    fn claude(&self, prompt: &str, args: &[&str], verdict: Option<&Path>) -> Exit {
        let mut cmd = match verdict {
            Some(file) => {
                let mut c = self.command(env!("CARGO_BIN_EXE_loopguard"));
                c.arg("run")
                    .arg("--verdict")
                    .arg(file)
                    .arg("--")
                    .arg(claude());
                c
            }
            None => self.command(claude()),
        };
        cmd.args([
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
        ])
        .args(args)
        .current_dir(&self.work)
        .env("ANTHROPIC_BASE_URL", &self.server.url)
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if is_root() {
            cmd.env("IS_SANDBOX", "1");
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout_pipe = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let out_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout_pipe.read_to_string(&mut s);
            s
        });
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr_pipe.read_to_string(&mut s);
            s
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > RUN_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "claude did not finish within {RUN_LIMIT:?}; the model was asked {} times",
                    self.server.seen().len()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        Exit {
            status,
            stdout: out_thread.join().unwrap(),
            stderr: err_thread.join().unwrap(),
        }
    }

    /// Times the Bash command ran so far.
    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.ran)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// `loopguard status --json` of the hook's state.
    fn status(&self) -> Value {
        let out = self
            .command(env!("CARGO_BIN_EXE_loopguard"))
            .args(["status", "--json", "--state"])
            .arg(&self.state)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// As [`run_claude`], with extra `loopguard hook install` flags (`--observe`), and the CLI
/// wrapped by `loopguard run --verdict FILE --` when `wrap`.
fn run_claude_with(config: &str, install_flags: &[&str], wrap: bool) -> Run {
    let setup = Setup::new(config, install_flags);
    let verdict_file = setup.dir.path().join("verdict.json");
    let exit = setup.claude(
        "Check the service until it is up.",
        &[],
        wrap.then_some(verdict_file.as_path()),
    );
    let Exit {
        status,
        stdout,
        stderr,
    } = exit;
    let wrapped = wrap.then(|| {
        let text = std::fs::read_to_string(&verdict_file)
            .unwrap_or_else(|e| panic!("no verdict ({e}): {stderr}\n{stdout}"));
        (status.code(), serde_json::from_str::<Value>(&text).unwrap())
    });
    assert!(
        wrap || status.success(),
        "claude failed ({status}): {stderr}\n{stdout}"
    );
    let transcript = transcript_of(&setup.home.join(".claude/projects"));
    if let Some(dir) = std::env::var_os("LOOPGUARD_SAVE_AGENT_LOGS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join("claude-code.jsonl"), &transcript).unwrap();
    }
    Run {
        runs: setup.runs(),
        seen: setup.server.seen(),
        stdout,
        status: setup.status(),
        transcript,
        wrapped,
    }
}

/// The one main session transcript under `dir` (Claude Code's projects folder).
fn transcript_of(dir: &Path) -> String {
    let found = transcripts_under(dir);
    assert_eq!(found.len(), 1, "one transcript expected: {found:?}");
    std::fs::read_to_string(&found[0]).unwrap()
}

/// `loopguard replay --json` of `transcript`: each call's decision and count.
fn replay_calls(transcript: &str) -> Vec<(String, Option<u64>)> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, transcript).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            (
                d["decision"].as_str().unwrap().to_string(),
                d["count"].as_u64(),
            )
        })
        .collect()
}

/// The default profile: the command runs 20 times, the warning comes with tool result 11,
/// the block from call 21; the model goes on being denied until it gives up.
#[test]
fn claude_code_runs_the_command_20_times_warned_at_11_blocked_from_21() {
    let run = run_claude("{ tools: { loopDetection: { enabled: true } } }");
    assert_eq!(
        run.runs, 20,
        "the command ran {} times\n{}",
        run.runs, run.stdout
    );
    let after = |n: usize| {
        run.seen
            .iter()
            .find(|s| s.calls_before == n)
            .unwrap_or_else(|| panic!("no request after call {n}: {:?}", run.seen))
            .last
            .clone()
    };
    for n in 1..=10 {
        assert!(!after(n).contains("loopguard"), "call {n}: {}", after(n));
    }
    let warned = after(11);
    assert!(
        warned.contains("loopguard: WARNING") && warned.contains("10 times"),
        "{warned}"
    );
    for n in 12..=20 {
        assert!(!after(n).contains("CRITICAL"), "call {n}: {}", after(n));
    }
    for n in 21..=MODEL_CALLS {
        let last: Value = serde_json::from_str(&after(n)).unwrap();
        let result = last["content"]
            .as_array()
            .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"))
            .cloned()
            .unwrap_or_else(|| panic!("call {n}: no tool result in {last}"));
        assert_eq!(result["is_error"], true, "call {n}: {result}");
        assert!(
            result["content"].to_string().contains("CRITICAL"),
            "call {n}: {result}"
        );
    }
    // The model gave up by itself: every request reached it.
    assert_eq!(run.seen.len(), MODEL_CALLS + 1, "{:?}", run.seen);
    // SessionEnd left the record of the run.
    let ended = &run.status["ended"][0];
    assert_eq!(ended["calls"], MODEL_CALLS, "{}", run.status);
    assert_eq!(ended["blocks"], MODEL_CALLS - 20, "{}", run.status);
    // The transcript Claude Code wrote replays as the hook decided: the calls it denied
    // (their `tool_result` is loopguard's deny text) are blocks, not new outcomes.
    let replayed = replay_calls(&run.transcript);
    assert_eq!(replayed.len(), MODEL_CALLS, "{replayed:?}");
    for (i, (decision, count)) in replayed.iter().enumerate() {
        let want = match i + 1 {
            1..=10 => "allow",
            11..=20 => "warn",
            _ => "block",
        };
        assert_eq!(decision, want, "call {}: {replayed:?}", i + 1);
        if i + 1 > 20 {
            assert_eq!(*count, Some(20), "call {}", i + 1);
        }
    }
    let warnings = replayed.iter().filter(|(d, _)| d == "warn").count();
    assert_eq!(ended["warnings"], warnings, "{}", run.status);
}

/// The strict profile: after the block, the next identical call ends the run
/// (`second_critical_abort`) and the CLI stops; the model is never asked again.
#[test]
fn claude_code_is_stopped_when_the_strict_profile_ends_the_run() {
    let run = run_claude(
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#,
    );
    assert!(
        run.seen.len() < MODEL_CALLS,
        "the agent was not stopped: the model was asked {} times\n{}",
        run.seen.len(),
        run.stdout
    );
    let blocked = run
        .seen
        .iter()
        .position(|s| s.last.contains("CRITICAL"))
        .expect("a block");
    // The block reached the model; its next identical call ended the run, was denied,
    // and the CLI stopped there: that request was the last one.
    assert_eq!(run.seen.len(), blocked + 1, "{:?}", run.seen);
    assert_eq!(
        run.runs,
        run.seen[blocked].calls_before - 1,
        "{:?}",
        run.seen
    );
    let ended = &run.status["ended"][0];
    assert_eq!(ended["aborts"], 1, "{}", run.status);
}

/// Observe mode (`hook install --observe`): Claude Code is never denied (the command runs
/// every time the model asks), and after the headless run ends (`SessionEnd`) its record says
/// what would have happened, in `loopguard status`.
#[test]
fn claude_code_in_observe_mode_leaves_a_record_after_the_run() {
    let run = run_claude_with(
        "{ tools: { loopDetection: { enabled: true } } }",
        &["--observe"],
        false,
    );
    assert_eq!(
        run.runs, MODEL_CALLS,
        "observe mode denied a call\n{}",
        run.stdout
    );
    assert!(
        run.seen.iter().all(|s| !s.last.contains("loopguard")),
        "observe mode told the model something"
    );
    assert_eq!(run.status["sessions"], json!([]), "{}", run.status);
    let ended = &run.status["ended"][0];
    assert_eq!(ended["mode"], "observe", "{}", run.status);
    assert_eq!(ended["calls"], MODEL_CALLS, "{}", run.status);
    assert_eq!(ended["blocks"], MODEL_CALLS - 20, "{}", run.status);
    let decisions: Vec<&str> = ended["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["decision"].as_str())
        .collect();
    assert!(decisions.contains(&"would-block"), "{decisions:?}");
    assert!(decisions.contains(&"would-warn"), "{decisions:?}");
}

/// `onCritical: "end-run"` under `loopguard run`: the first critical loop ends the run, the
/// CLI stops (the model is not asked again), and the wrapper exits 3 with a verdict naming
/// the loop.
#[test]
fn claude_code_under_loopguard_run_ends_at_the_first_critical_and_exits_3() {
    let run = run_claude_with(
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "end-run" } }"#,
        &[],
        true,
    );
    assert_eq!(run.runs, 20, "{}", run.stdout);
    assert!(
        run.seen.len() < MODEL_CALLS,
        "the agent was not stopped: the model was asked {} times",
        run.seen.len()
    );
    let (code, verdict) = run.wrapped.expect("wrapped");
    assert_eq!(code, Some(3), "{verdict}");
    assert_eq!(verdict["outcome"], "ended");
    assert_eq!(verdict["agentExitCode"], 0);
    let first = &verdict["decisions"][0];
    assert_eq!(first["agent"], "claude-code");
    assert_eq!(first["tool"], "Bash");
    assert_eq!(first["decision"], "abort");
    assert_eq!(first["detector"], "generic_repeat");
    assert_eq!(first["count"], 20);
}

/// `onCritical: "ask"` with the real CLI, headless: call 21 is answered
/// `permissionDecision: "ask"`. With nobody to ask (`-p`), Claude Code does not run the call
/// and gives the model the reason as the call's error; the model asks for the same call
/// again, that next critical ends the run, and the CLI stops.
#[test]
fn claude_code_ask_then_the_next_critical_ends_the_run() {
    let run = run_claude_with(
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "ask" } }"#,
        &[],
        true,
    );
    let (code, verdict) = run.wrapped.expect("wrapped");
    let words: Vec<&str> = verdict["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(words.first(), Some(&"ask"), "{verdict}");
    assert_eq!(words.get(1), Some(&"abort"), "{verdict}");
    assert_eq!(verdict["decisions"][0]["count"], 20);
    assert_eq!(code, Some(3));
    // The asked call did not run: the command ran 20 times.
    assert_eq!(run.runs, 20, "{}", run.stdout);
    let asked = run
        .seen
        .iter()
        .position(|s| s.last.contains("CRITICAL"))
        .expect("the ask's reason reached the model");
    assert!(run.seen[asked].last.contains("\"is_error\":true"));
    assert!(run.seen.len() < MODEL_CALLS, "{}", run.stdout);
}

/// Every `.jsonl` file under `dir`, sorted.
fn transcripts_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

/// `loopguard replay --json --config CONFIG FILE`: the call decisions, each with its call
/// id, the decision in the hook log's words (`warn-quiet`: a warning the model was not
/// shown) and its run.
fn replayed_by_call(file: &Path, config: &Path) -> Vec<(String, String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--config"])
        .arg(config)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            let decision = match (d["decision"].as_str().unwrap(), &d["emitted"]) {
                ("warn", Value::Bool(false)) => "warn-quiet",
                (w, _) => w,
            };
            (
                d["callId"].as_str().unwrap_or_default().to_string(),
                decision.to_string(),
                d["run"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A guarded session that loops, is resumed (`claude --resume ID`, then `claude
/// --continue`, each a new headless process with a new prompt) and loops on, with a
/// session budget (`callsPerSession: 30`). Claude Code goes on writing the session's one
/// transcript. Each prompt is a run, so the repeat detector starts over at each (the
/// command runs 20 times in the first run, blocked from call 21); the hook, whose live
/// state each process's `SessionEnd` ended, takes the session's state back at the resumed
/// prompt, so the budget counts on: 10 more calls run after the first resume, none after
/// the second. Replay of the transcript (one session, a run per prompt) decides every call
/// as the hook did, call for call: the hook's decisions (`loopguard status` after each
/// process: the session's warnings and blocks by call id, the other calls allowed) against
/// replay's.
#[test]
fn claude_code_resumed_session_replays_as_decided_live() {
    let setup = Setup::new(
        "{ tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 30 } } }",
        &[],
    );
    let id = "5f0c1c52-8a3e-4c56-9a51-2f1c0b6f3e01";
    let prompts: [(&str, &[&str]); 3] = [
        ("Check the service until it is up.", &["--session-id", id]),
        ("Check it again.", &["--resume", id]),
        ("Once more.", &["--continue"]),
    ];
    // The hook's notable decisions (warnings, blocks), by call id.
    let mut live = std::collections::BTreeMap::new();
    let mut ran = Vec::new();
    for (prompt, args) in prompts {
        let exit = setup.claude(prompt, args, None);
        assert!(
            exit.status.success(),
            "claude {args:?} failed ({}): {}\n{}",
            exit.status,
            exit.stderr,
            exit.stdout
        );
        ran.push(setup.runs());
        let status = setup.status();
        assert_eq!(status["sessions"], json!([]), "{status}");
        let ended = status["ended"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["sessionId"] == id))
            .unwrap_or_else(|| panic!("session {id} did not end: {status}"));
        for d in ended["decisions"].as_array().unwrap() {
            live.insert(
                d["call_id"].as_str().unwrap().to_string(),
                d["decision"].as_str().unwrap().to_string(),
            );
        }
    }
    // Live: the command ran 20 times in the first run, 10 more (the session's 30) after
    // the first resume, none after the second.
    assert_eq!(ran, [20, 30, 30]);
    let seen = setup.server.seen();
    assert_eq!(seen.len(), 3 * (MODEL_CALLS + 1), "{seen:?}");
    let files = transcripts_under(&setup.home.join(".claude/projects"));
    assert_eq!(files.len(), 1, "one transcript for the session: {files:?}");
    let replayed = replayed_by_call(&files[0], &setup.config);
    assert_eq!(replayed.len(), 3 * MODEL_CALLS, "{replayed:?}");
    for (i, (call, decision, run)) in replayed.iter().enumerate() {
        let n = i + 1;
        assert_eq!(call, &format!("toolu_{n:03}"));
        assert_eq!(run, &format!("run-{}", i / MODEL_CALLS + 1), "call {n}");
        // What the model was sent after the call: its result (loopguard's deny text when
        // the hook refused it) and any warning the hook added.
        let after = seen
            .iter()
            .find(|s| s.tail.contains(&format!("\"{call}\"")))
            .unwrap_or_else(|| panic!("call {n}: its result never reached the model"))
            .tail
            .as_str();
        let shown = if after.contains("CRITICAL") {
            "block"
        } else if after.contains("loopguard: WARNING") {
            "warn"
        } else {
            "allow"
        };
        let quiet = if decision == "warn-quiet" {
            "allow"
        } else {
            decision
        };
        assert_eq!(
            quiet, shown,
            "call {n}: replayed {replayed:?}\nthe model saw {after}"
        );
        // The hook's own word, for the calls its log still held at the session's end
        // (`status` keeps the last 64 events).
        if let Some(word) = live.get(call) {
            assert_eq!(
                decision, word,
                "call {n}: replayed {replayed:?}, live {live:?}"
            );
        }
    }
    assert!(live.len() >= 40, "{live:?}");
    let blocks = replayed.iter().filter(|c| c.1 == "block").count();
    assert_eq!(blocks, 3 * MODEL_CALLS - 30, "{replayed:?}");
}
