//! The scripted model server, process helpers and agent CLI descriptions ([`Cli`], [`Trial`])
//! of the agent end-to-end tests (agents_e2e.rs) and the agent telemetry tests (otel.rs).
//!
//! The server is a plain HTTP/1.1 server on a free 127.0.0.1 port (std only): each request
//! is recorded and answered by the test's script with a complete body (streaming answers
//! are sent as a whole server-sent-events body), so the agent programs run offline.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One request the agent sent.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// What the script answers.
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(v: &Value) -> Response {
        Response {
            status: 200,
            content_type: "application/json",
            body: v.to_string().into_bytes(),
        }
    }

    pub fn sse(events: &[(Option<&str>, Value)]) -> Response {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(n) = name {
                body.push_str(&format!("event: {n}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn sse_raw(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }

    pub fn not_found() -> Response {
        Response {
            status: 404,
            content_type: "application/json",
            body: b"{}".to_vec(),
        }
    }
}

type Script = dyn Fn(&Request) -> Response + Send + Sync;

/// The scripted model server.
pub struct ModelServer {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl ModelServer {
    pub fn start(script: impl Fn(&Request) -> Response + Send + Sync + 'static) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = script.clone();
                let recorded = recorded.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &*script, &recorded);
                });
            }
        });
        ModelServer { port, requests }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(
    stream: TcpStream,
    script: &Script,
    recorded: &Mutex<Vec<Request>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut length = 0usize;
        let mut chunked = false;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk)?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            body.resize(length, 0);
            reader.read_exact(&mut body)?;
        }
        let req = Request {
            method,
            path,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let resp = script(&req);
        recorded.lock().unwrap().push(req);
        let head = format!(
            "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
            resp.status,
            resp.content_type,
            resp.body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(&resp.body)?;
        stream.flush()?;
    }
}

/// target/agents, where scripts/setup-agents.sh installs the agent CLIs.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/agents")
}

/// A file scripts/setup-agents.sh installs under target/agents; fails the test, naming the
/// script, when it is missing.
pub fn agent_file(relative: &str) -> PathBuf {
    let p = agents_dir().join(relative);
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup-agents.sh (scripts/test.sh does) to install the agent CLIs",
        p.display()
    );
    p
}

/// An agent CLI's command (`node_modules/.bin/NAME`).
pub fn agent_bin(name: &str) -> PathBuf {
    agent_file(&format!("node_modules/.bin/{name}"))
}

/// How an agent's process ended.
pub struct Finished {
    /// Its exit status and output.
    pub output: Output,
    /// `true` when it was still running at the time limit and was killed.
    pub killed: bool,
}

/// Runs `cmd` to completion, killing it after `limit`.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Finished {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child: Child = cmd.spawn().expect("start the agent");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Finished {
        output: Output {
            status,
            stdout: o.join().unwrap(),
            stderr: e.join().unwrap(),
        },
        killed,
    }
}

/// How many times the looping command ran (it appends a line to `counter` each time).
pub fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// How many calls the scripted model asks for before it gives up.
pub const CALLS: usize = 25;

/// The `loopguard` binary under test.
pub fn loopguard() -> &'static str {
    env!("CARGO_BIN_EXE_loopguard")
}

/// The agent CLIs the tests drive, with what the scripted model server needs to know of each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cli {
    /// Codex CLI: `[model_providers.x]` with `wire_api = "responses"`; `codex exec --json`.
    Codex,
    /// Gemini CLI: `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`, `security.auth.selectedType:
    /// "gemini-api-key"`, `GEMINI_CLI_TRUST_WORKSPACE=true`, `model.disableLoopDetection:
    /// true` (its own loop detection would end the session before loopguard is seen).
    Gemini,
    /// Qwen Code: `OPENAI_BASE_URL`, `--auth-type openai --approval-mode yolo`. Qwen Code
    /// stops five identical calls itself, so the model rewords the `description` argument
    /// on every call (as models do); loopguard's profile does not hash it.
    Qwen,
    /// GitHub Copilot CLI with a custom provider (BYOK): `COPILOT_PROVIDER_BASE_URL`,
    /// `COPILOT_MODEL`, `COPILOT_OFFLINE=true` (no GitHub login, nothing sent to GitHub),
    /// `-p … --allow-all`. Its package unpacks itself (about 235 MB) into
    /// `COPILOT_PKG_CACHE_HOME`, shared in target/agents/copilot-cache.
    Copilot,
    /// Factory's Droid with a custom model (BYOK): `customModels` in
    /// `~/.factory/settings.json` with `provider: "generic-chat-completion-api"`, `droid exec
    /// -m custom:scripted --skip-permissions-unsafe`; no Factory login. Its shell tool,
    /// `Execute`, takes a `summary` the model rewords on every call (not hashed).
    Factory,
}

impl Cli {
    /// `loopguard hook AGENT`'s name.
    pub fn hook(self) -> &'static str {
        match self {
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Qwen => "qwen",
            Cli::Copilot => "copilot",
            Cli::Factory => "factory",
        }
    }

    /// The agent's program (scripts/setup-agents.sh installs it).
    pub fn program(self) -> PathBuf {
        match self {
            // The platform package of @factory/cli: the wrapper's own postinstall would
            // download the binary from Factory's servers.
            Cli::Factory => agent_file("node_modules/@factory/cli-linux-x64/bin/droid"),
            _ => agent_bin(self.hook()),
        }
    }

    /// The agent's settings directory under HOME.
    pub fn settings_dir(self) -> &'static str {
        match self {
            Cli::Codex => ".codex",
            Cli::Gemini => ".gemini",
            Cli::Qwen => ".qwen",
            Cli::Copilot => ".copilot",
            Cli::Factory => ".factory",
        }
    }

    /// How the block message names the shell tool (Codex reports its shell as `Bash`).
    pub fn blocked(self) -> &'static str {
        match self {
            Cli::Codex => "Called Bash with identical arguments",
            Cli::Gemini | Cli::Qwen => "Called run_shell_command with identical arguments",
            Cli::Copilot => "Called bash with identical arguments",
            Cli::Factory => "Called Execute with identical arguments",
        }
    }

    /// The looping command, which appends a line to `counter` each time it runs.
    pub fn command(self, counter: &Path) -> String {
        match self {
            // Qwen Code 0.24 sometimes reports `Output: (empty)` for a command that exits
            // at once (its output capture races the exit); the pause keeps every result
            // the same, so the loop is the same loop each time.
            Cli::Qwen => format!(
                "echo run >> {}; echo FAIL; sleep 0.3; exit 1",
                counter.display()
            ),
            // Droid 0.225 fires no hook after a command that fails (`PostToolUse` only
            // follows a success, and `PostToolUseFailure` never comes), so its loop is a
            // command that succeeds and prints the same failure every time.
            Cli::Factory => format!("echo run >> {}; echo FAIL", counter.display()),
            _ => format!("echo run >> {}; echo FAIL; exit 1", counter.display()),
        }
    }

    /// The tool results a request carries, in order.
    pub fn results(self, body: &Value) -> Vec<String> {
        let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
        match self {
            Cli::Codex => items("input")
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| match &i["output"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Cli::Gemini => items("contents")
                .iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .filter(|p| p.get("functionResponse").is_some())
                .map(|p| p["functionResponse"].to_string())
                .collect(),
            Cli::Qwen | Cli::Copilot | Cli::Factory => items("messages")
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].to_string())
                .collect(),
        }
    }

    /// `true` for a turn of the conversation (not a side request: Gemini's routing and
    /// next-speaker checks, Qwen's tool-less requests).
    pub fn is_turn(self, req: &Request) -> bool {
        match self {
            Cli::Codex => req.path.ends_with("/responses"),
            Cli::Gemini => req.path.contains(":streamGenerateContent"),
            Cli::Qwen | Cli::Copilot | Cli::Factory => {
                req.path.ends_with("/chat/completions") && req.body.get("tools").is_some()
            }
        }
    }

    /// The scripted model: asks for the shell command while fewer than [`CALLS`] results
    /// came back, then gives up.
    pub fn answer(self, req: &Request, command: &str) -> Response {
        let k = self.results(&req.body).len();
        let call = (self.is_turn(req) && k < CALLS).then_some(k);
        match self {
            Cli::Codex if !req.path.ends_with("/responses") => Response::not_found(),
            Cli::Codex => codex_sse(&codex_item(call, command), 10),
            Cli::Gemini => gemini_answer(req, call, command),
            Cli::Qwen => {
                let args = |k: usize| json!({"command": command, "description": format!("Run the test suite (attempt {})", k + 1), "is_background": false});
                chat_answer(req, call.map(|k| (k, "run_shell_command", args(k))))
            }
            Cli::Copilot => {
                let args = |k: usize| json!({"command": command, "description": format!("Run the test suite (attempt {})", k + 1)});
                chat_answer(req, call.map(|k| (k, "bash", args(k))))
            }
            Cli::Factory => {
                let args = |k: usize| json!({"command": command, "summary": format!("Run the test suite (attempt {})", k + 1)});
                chat_answer(req, call.map(|k| (k, "Execute", args(k))))
            }
        }
    }

    /// Writes the agent's settings (model provider, auth, no telemetry) under `home`.
    pub fn configure(self, home: &Path, port: u16) {
        let dir = home.join(self.settings_dir());
        std::fs::create_dir_all(&dir).unwrap();
        let (file, text) = match self {
            Cli::Codex => ("config.toml", codex_config(port, "")),
            Cli::Gemini => (
                "settings.json",
                "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"model\": {\"disableLoopDetection\": true},\n  \"privacy\": {\"usageStatisticsEnabled\": false}\n}\n".to_string(),
            ),
            Cli::Qwen => (
                "settings.json",
                "{\n  \"privacy\": {\"usageStatisticsEnabled\": false}\n}\n".to_string(),
            ),
            // Copilot CLI takes its provider from the environment.
            Cli::Copilot => return,
            Cli::Factory => (
                "settings.json",
                format!("{{\n  \"customModels\": [\n    {{\"model\": \"scripted\", \"displayName\": \"Scripted\", \"baseUrl\": \"http://127.0.0.1:{port}/v1\", \"apiKey\": \"dummy\", \"provider\": \"generic-chat-completion-api\", \"maxOutputTokens\": 1024}}\n  ]\n}}\n"),
            ),
        };
        std::fs::write(dir.join(file), text).unwrap();
    }

    /// The headless command line against the scripted server on `port`.
    pub fn cmd(self, trial: &Trial, port: u16) -> Command {
        let mut cmd = Command::new(self.program());
        cmd.current_dir(&trial.work).env("HOME", &trial.home);
        let base = |path: &str| format!("http://127.0.0.1:{port}{path}");
        match self {
            Cli::Codex => cmd
                .env("CODEX_HOME", trial.home.join(".codex"))
                .env("SCRIPTED_API_KEY", "dummy")
                .args([
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-hook-trust",
                    "Make the tests pass.",
                ]),
            Cli::Gemini => cmd
                .env("GEMINI_API_KEY", "dummy")
                .env("GOOGLE_GEMINI_BASE_URL", base(""))
                .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                .args([
                    "--model",
                    "gemini-2.5-flash",
                    "--yolo",
                    "--output-format",
                    "json",
                    "-p",
                    "Make the tests pass.",
                ]),
            Cli::Qwen => cmd
                .env("OPENAI_API_KEY", "dummy")
                .env("OPENAI_BASE_URL", base("/v1"))
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
                ]),
            Cli::Copilot => cmd
                .env("COPILOT_PROVIDER_BASE_URL", base("/v1"))
                .env("COPILOT_PROVIDER_API_KEY", "dummy")
                .env("COPILOT_MODEL", "scripted")
                .env("COPILOT_OFFLINE", "true")
                .env("COPILOT_PKG_CACHE_HOME", agents_dir().join("copilot-cache"))
                .args([
                    "--allow-all",
                    "--no-auto-update",
                    "--output-format",
                    "json",
                    "-p",
                    "Make the tests pass.",
                ]),
            Cli::Factory => cmd.args([
                "exec",
                "--skip-permissions-unsafe",
                "-m",
                "custom:scripted",
                "-o",
                "json",
                "Make the tests pass.",
            ]),
        };
        cmd
    }
}

/// Codex's `config.toml`: the scripted provider, no approvals, no sandbox; `extra` lines
/// go before the provider table.
pub fn codex_config(port: u16, extra: &str) -> String {
    format!(
        "model = \"scripted\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n{extra}\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n"
    )
}

/// The output item of a Codex turn: the `k`-th call of `command`, or the final message.
/// The model asks for a different `yield_time_ms` each time, as models do: Codex's hook
/// payload leaves it out, and replay of the rollout must not hash it either.
pub fn codex_item(call: Option<usize>, command: &str) -> Value {
    match call {
        Some(k) => {
            json!({"type":"function_call","id":format!("fc_{k}"),"call_id":format!("call_{k}"),
                "name":"exec_command","arguments":json!({"cmd": command, "yield_time_ms": 10_000 + k}).to_string()})
        }
        None => json!({"type":"message","id":"msg_1","role":"assistant",
            "content":[{"type":"output_text","text":"I give up."}]}),
    }
}

/// A Responses API stream with one output item, reporting `tokens` of input.
pub fn codex_sse(item: &Value, tokens: u64) -> Response {
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
}

pub fn gemini_answer(req: &Request, call: Option<usize>, command: &str) -> Response {
    let usage = json!({"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15});
    let candidate = |part: Value| {
        json!({"candidates":[{"content":{"role":"model","parts":[part]},"finishReason":"STOP","index":0}],
            "usageMetadata": usage})
    };
    if req.path.contains(":streamGenerateContent") {
        let part = match call {
            // The model rewords the description on every call, as models do.
            Some(k) => {
                json!({"functionCall":{"name":"run_shell_command","args":{"command": command,
                "description": format!("Run the test suite (attempt {})", k + 1)}}})
            }
            None => json!({"text":"I give up."}),
        };
        Response::sse(&[(None, candidate(part))])
    } else if req.path.contains(":generateContent") {
        // Side requests (routing, next-speaker checks) ask for JSON.
        Response::json(&candidate(
            json!({"text":"{\"next_speaker\":\"user\",\"reasoning\":\"done\"}"}),
        ))
    } else if req.path.contains(":countTokens") {
        Response::json(&json!({"totalTokens": 10}))
    } else {
        Response::not_found()
    }
}

/// An OpenAI Chat Completions answer (Qwen Code, Copilot CLI): the `k`-th call of `tool`
/// with `args`, or the final text (`{}` for a tool-less side request).
pub fn chat_answer(req: &Request, call: Option<(usize, &str, Value)>) -> Response {
    if !req.path.ends_with("/chat/completions") {
        return Response::not_found();
    }
    let usage = json!({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15});
    let (message, finish) = match call {
        Some((k, tool, args)) => (
            json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":format!("call_{k}"),
                "type":"function","function":{"name":tool,"arguments":args.to_string()}}]}),
            "tool_calls",
        ),
        None if req.body.get("tools").is_none() => {
            (json!({"role":"assistant","content":"{}"}), "stop")
        }
        None => (json!({"role":"assistant","content":"I give up."}), "stop"),
    };
    if req.body["stream"] != true {
        return Response::json(
            &json!({"id":"c","object":"chat.completion","created":1,"model":"scripted",
            "choices":[{"index":0,"message":message,"finish_reason":finish}],"usage":usage}),
        );
    }
    let chunk = |delta: Value, finish: Value, usage: Option<&Value>| {
        let mut c = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"scripted",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        if let Some(u) = usage {
            c["usage"] = u.clone();
        }
        c
    };
    let first = chunk(message, Value::Null, None);
    let last = chunk(json!({}), json!(finish), Some(&usage));
    Response::sse_raw(format!("data: {first}\n\ndata: {last}\n\ndata: [DONE]\n\n"))
}

/// One agent run's temporary HOME, project and files.
pub struct Trial {
    _dir: tempfile::TempDir,
    /// The agent's HOME.
    pub home: PathBuf,
    /// The project the agent runs in.
    pub work: PathBuf,
    /// The file the looping command appends a line to each time it runs.
    pub counter: PathBuf,
    /// loopguard's state database.
    pub state: PathBuf,
}

impl Trial {
    pub fn new() -> Trial {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        Trial {
            counter: dir.path().join("runs.txt"),
            state: dir.path().join("state.sqlite3"),
            home,
            work,
            _dir: dir,
        }
    }

    /// `loopguard hook install AGENT --settings FILE` (FILE under the agent's settings
    /// directory), with this trial's state database.
    pub fn install(&self, cli: Cli, file: &str) {
        let out = Command::new(loopguard())
            .args(["hook", "install", cli.hook(), "--settings"])
            .arg(self.home.join(cli.settings_dir()).join(file))
            .arg("--exe")
            .arg(loopguard())
            .arg("--state")
            .arg(&self.state)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `loopguard status --json` on this trial's state: its sessions, and those that
    /// ended with what they saw.
    pub fn status(&self) -> String {
        let out = Command::new(loopguard())
            .args(["status", "--json", "--events", "40", "--state"])
            .arg(&self.state)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
