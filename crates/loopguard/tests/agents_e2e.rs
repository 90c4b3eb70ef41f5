//! End to end with the real agent programs from npm (installed by scripts/setup-agents.sh
//! into target/agents): Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4, GitHub Copilot
//! CLI 1.0.102 and Factory's Droid 0.225.2, each driven by a scripted model server on
//! 127.0.0.1 that keeps asking for the same failing shell command, with loopguard's hook
//! installed by `loopguard hook install AGENT` into the agent's own settings under a
//! temporary HOME. Everything runs offline: the agents talk only to the scripted server
//! (Copilot CLI and Droid through their custom-provider settings, without an account).
//! Cursor's CLI and Kiro CLI cannot: each is installed by its vendor's download script and
//! runs its model on the vendor's service (docs/agents/cursor.md, docs/agents/kiro.md).
//!
//! For each agent, with the default profile: the command runs 20 times; the model is sent
//! loopguard's warning with the result of call 11, and the block (the detection message
//! instead of a result) from call 21 on.
//!
//! With the strict profile (`.loopguard.json5` in the project), the loop is blocked early
//! and the next identical call ends the run (`second_critical_abort`). What that does
//! depends on what the agent lets a hook do:
//! - Gemini CLI stops: `BeforeTool` answered with `continue: false` ends its agent loop;
//!   the model is never asked again and the process exits by itself.
//! - Droid stops the same way, on `PreToolUse`'s `continue: false` beside the deny.
//! - Qwen Code stops: a `PreToolUse` deny wins over `continue: false` in Qwen Code 0.24,
//!   so the call is denied; the empty-prompt `UserPromptSubmit` Qwen Code fires before it
//!   sends the tool results back is answered with `continue: false`, which ends the turn
//!   before the model is asked again.
//! - Codex and Copilot CLI cannot be stopped by a hook in the middle of a turn: Codex 0.171
//!   rejects `continue: false` on `PreToolUse` as invalid (and would then run the call), on
//!   `PostToolUse` it only replaces the tool's output, and no other event fires between
//!   tool calls; Copilot CLI's hook answers have no stop field at all. The best they allow
//!   is what the tests check: every later call of the ended run is denied with the stop
//!   reason, so the command never runs again, and the agent exits when the model gives up.
//!
//! Each agent has a small wire description ([`Cli`]): where its tool results are in a
//! request, how the scripted model asks for the call, its settings and command line. The
//! conversations ([`run_loop`]) and the checks are shared.

mod agent_e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent_e2e::{
    agent_bin, agent_file, agents_dir, run_with_timeout, runs, Finished, ModelServer, Request,
    Response,
};
use serde_json::{json, Value};

/// How many calls the scripted model asks for before it gives up.
const CALLS: usize = 25;
/// The bound on one agent run (the machine is loaded; a run takes well under a minute).
const LIMIT: Duration = Duration::from_secs(600);
/// The project config that selects the strict profile.
const STRICT: &str =
    r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#;

fn loopguard() -> &'static str {
    env!("CARGO_BIN_EXE_loopguard")
}

/// The agent CLIs driven here, with what the scripted model server needs to know of each.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cli {
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
    fn hook(self) -> &'static str {
        match self {
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Qwen => "qwen",
            Cli::Copilot => "copilot",
            Cli::Factory => "factory",
        }
    }

    /// The agent's program (scripts/setup-agents.sh installs it).
    fn program(self) -> PathBuf {
        match self {
            // The platform package of @factory/cli: the wrapper's own postinstall would
            // download the binary from Factory's servers.
            Cli::Factory => agent_file("node_modules/@factory/cli-linux-x64/bin/droid"),
            _ => agent_bin(self.hook()),
        }
    }

    /// The agent's settings directory under HOME.
    fn settings_dir(self) -> &'static str {
        match self {
            Cli::Codex => ".codex",
            Cli::Gemini => ".gemini",
            Cli::Qwen => ".qwen",
            Cli::Copilot => ".copilot",
            Cli::Factory => ".factory",
        }
    }

    /// How the block message names the shell tool (Codex reports its shell as `Bash`).
    fn blocked(self) -> &'static str {
        match self {
            Cli::Codex => "Called Bash with identical arguments",
            Cli::Gemini | Cli::Qwen => "Called run_shell_command with identical arguments",
            Cli::Copilot => "Called bash with identical arguments",
            Cli::Factory => "Called Execute with identical arguments",
        }
    }

    /// The looping command, which appends a line to `counter` each time it runs.
    fn command(self, counter: &Path) -> String {
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
    fn results(self, body: &Value) -> Vec<String> {
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
    fn is_turn(self, req: &Request) -> bool {
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
    fn answer(self, req: &Request, command: &str) -> Response {
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
    fn configure(self, home: &Path, port: u16) {
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
    fn cmd(self, trial: &Trial, port: u16) -> Command {
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
fn codex_config(port: u16, extra: &str) -> String {
    format!(
        "model = \"scripted\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n{extra}\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n"
    )
}

/// The output item of a Codex turn: the `k`-th call of `command`, or the final message.
fn codex_item(call: Option<usize>, command: &str) -> Value {
    match call {
        Some(k) => {
            json!({"type":"function_call","id":format!("fc_{k}"),"call_id":format!("call_{k}"),
                "name":"exec_command","arguments":json!({"cmd": command}).to_string()})
        }
        None => json!({"type":"message","id":"msg_1","role":"assistant",
            "content":[{"type":"output_text","text":"I give up."}]}),
    }
}

/// A Responses API stream with one output item, reporting `tokens` of input.
fn codex_sse(item: &Value, tokens: u64) -> Response {
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

fn gemini_answer(req: &Request, call: Option<usize>, command: &str) -> Response {
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
fn chat_answer(req: &Request, call: Option<(usize, &str, Value)>) -> Response {
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
struct Trial {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    counter: PathBuf,
    state: PathBuf,
}

impl Trial {
    fn new() -> Trial {
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
    fn install(&self, cli: Cli, file: &str) {
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
    fn status(&self) -> String {
        let out = Command::new(loopguard())
            .args(["status", "--json", "--events", "40", "--state"])
            .arg(&self.state)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// What a conversation with the scripted model did.
struct Conversation {
    /// The tool results of every turn request, in the order the server received them.
    turns: Vec<Vec<String>>,
    /// Each turn request's whole body, with how many results it carried.
    bodies: Vec<(usize, String)>,
    /// How many times the command ran.
    runs: usize,
    /// Requests the server received in the second after the agent's process ended (none
    /// is expected: nothing of the agent is left asking the model).
    late: usize,
    finished: Finished,
    /// The run's HOME, project and state, kept until the checks are done.
    _trial: Trial,
}

impl Conversation {
    /// The most tool results a turn carried (the last turn the model was asked for).
    fn last(&self) -> &[String] {
        self.turns
            .iter()
            .max_by_key(|t| t.len())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The number of results of the first turn request containing `needle`.
    fn first_turn_with(&self, needle: &str) -> Option<usize> {
        self.bodies
            .iter()
            .find(|(_, b)| b.contains(needle))
            .map(|(k, _)| *k)
    }

    /// The end of the agent's output, for failure messages.
    fn tail(&self) -> String {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let mut from = s.len().saturating_sub(2500);
            while !s.is_char_boundary(from) {
                from += 1;
            }
            s[from..].to_string()
        };
        format!(
            "exit {:?} (killed: {}), {} turns\nstdout: {}\nstderr: {}",
            self.finished.output.status.code(),
            self.finished.killed,
            self.turns.len(),
            tail(&self.finished.output.stdout),
            tail(&self.finished.output.stderr)
        )
    }
}

/// Runs `cli` against the looping model with loopguard installed into `settings` (a file
/// of the agent's settings directory) and, when given, `config` as the project's
/// `.loopguard.json5`.
fn run_loop(cli: Cli, settings: &str, config: Option<&str>) -> Conversation {
    let trial = Trial::new();
    let command = cli.command(&trial.counter);
    let server = ModelServer::start(move |req: &Request| cli.answer(req, &command));
    cli.configure(&trial.home, server.port);
    if let Some(c) = config {
        std::fs::write(trial.work.join(".loopguard.json5"), c).unwrap();
    }
    trial.install(cli, settings);
    let finished = run_with_timeout(cli.cmd(&trial, server.port), LIMIT);
    let at_exit = server.requests().len();
    std::thread::sleep(Duration::from_secs(1));
    let late = server.requests().len() - at_exit;
    let requests: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| cli.is_turn(r))
        .collect();
    Conversation {
        turns: requests.iter().map(|r| cli.results(&r.body)).collect(),
        bodies: requests
            .iter()
            .map(|r| (cli.results(&r.body).len(), r.body.to_string()))
            .collect(),
        runs: runs(&trial.counter),
        late,
        finished,
        _trial: trial,
    }
}

/// The default profile: the command runs 20 times, the warning reaches the model with
/// the result of call 11, every call from 21 on is blocked.
fn assert_warned_then_blocked(cli: Cli, c: &Conversation) {
    assert!(
        c.turns.iter().any(|t| t.len() == CALLS),
        "{cli:?} did not finish the scripted conversation: {}",
        c.tail()
    );
    assert!(!c.finished.killed, "{}", c.tail());
    assert_eq!(c.late, 0, "requests after the agent exited: {}", c.tail());
    assert_eq!(c.runs, 20, "{}", c.tail());
    assert_eq!(c.first_turn_with("loopguard: WARNING"), Some(11));
    let last = c.last();
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains(cli.blocked());
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
    if matches!(cli, Cli::Gemini | Cli::Qwen) {
        // Gemini CLI and Qwen Code show hook context only after a call, in its result: the
        // warning came with the result of call 11 (AfterTool / PostToolUseFailure), not
        // before it. (Droid, which also shows it only after the call, adds it as a message
        // of its own beside the result.)
        assert!(last[10].contains("loopguard: WARNING"), "{}", last[10]);
    }
}

#[test]
fn codex_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Codex, &run_loop(Cli::Codex, "hooks.json", None));
}

/// The same, with the hooks installed as `[[hooks.EVENT]]` tables of Codex's config.toml.
#[test]
fn codex_loop_is_warned_then_blocked_with_config_toml_hooks() {
    assert_warned_then_blocked(Cli::Codex, &run_loop(Cli::Codex, "config.toml", None));
}

#[test]
fn gemini_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Gemini, &run_loop(Cli::Gemini, "settings.json", None));
}

#[test]
fn qwen_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Qwen, &run_loop(Cli::Qwen, "settings.json", None));
}

#[test]
fn copilot_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(
        Cli::Copilot,
        &run_loop(Cli::Copilot, "hooks/loopguard.json", None),
    );
}

#[test]
fn factory_loop_is_warned_then_blocked() {
    assert_warned_then_blocked(Cli::Factory, &run_loop(Cli::Factory, "settings.json", None));
}

/// Copilot CLI reports a tool that failed (here `view` of a missing file) only through
/// `postToolUseFailure` (its `postToolUse` follows successes): with that event installed,
/// the failures are outcomes, and the same failing call is denied from call 21.
#[test]
fn copilot_failing_tool_loop_is_blocked() {
    let trial = Trial::new();
    let path = trial.work.join("missing.rs").display().to_string();
    let server = ModelServer::start(move |req: &Request| {
        let k = Cli::Copilot.results(&req.body).len();
        let call =
            (Cli::Copilot.is_turn(req) && k < CALLS).then(|| (k, "view", json!({"path": path})));
        chat_answer(req, call)
    });
    trial.install(Cli::Copilot, "hooks/loopguard.json");
    let finished = run_with_timeout(Cli::Copilot.cmd(&trial, server.port), LIMIT);
    assert!(!finished.killed, "{:?}", finished.output);
    let last = server
        .requests()
        .iter()
        .filter(|r| Cli::Copilot.is_turn(r))
        .map(|r| Cli::Copilot.results(&r.body))
        .max_by_key(Vec::len)
        .unwrap_or_default();
    assert_eq!(last.len(), CALLS, "{last:?}");
    for (i, o) in last.iter().enumerate() {
        let blocked = o.contains("Called view with identical arguments");
        assert_eq!(blocked, i + 1 > 20, "call {}: {o}", i + 1);
    }
}

/// The strict profile: the loop is blocked (the first critical), and the next identical
/// call ends the run (`second_critical_abort`); the command ran once for each call before
/// the block, `blocked_at - 1` times. Returns the last turn's results.
fn assert_strict_run(cli: Cli, c: &Conversation, blocked_at: usize) -> &[String] {
    assert!(!c.finished.killed, "{cli:?} was killed: {}", c.tail());
    assert_eq!(c.late, 0, "requests after the agent exited: {}", c.tail());
    let last = c.last();
    let first_block = last.iter().position(|o| o.contains("CRITICAL"));
    assert_eq!(first_block, Some(blocked_at - 1), "{last:?}\n{}", c.tail());
    assert_eq!(c.runs, blocked_at - 1, "{}", c.tail());
    last
}

/// Gemini CLI ends its agent loop on `BeforeTool`'s `continue: false`. Gemini reports a
/// failing command as a failure: six identical failures run (`identical_failure_streak`),
/// call 7 is blocked, call 8 ends the run and stops Gemini before it runs; the turn that
/// asked for it was the last request: the model is never asked again, and the process
/// exits by itself.
#[test]
fn gemini_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Gemini, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Gemini, &c, 7);
    assert_eq!(last.len(), 7, "{}", c.tail());
    assert_eq!(c.turns.len(), 8, "{}", c.tail());
}

/// Qwen Code: the same loop (six failures, call 7 blocked); call 8 ends the run and is
/// denied, and the empty-prompt `UserPromptSubmit` Qwen Code fires before sending the
/// results back is answered with `continue: false`: the model is never asked again, and
/// the process exits by itself.
#[test]
fn qwen_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Qwen, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Qwen, &c, 7);
    assert_eq!(last.len(), 7, "{}", c.tail());
    assert_eq!(c.turns.len(), 8, "{}", c.tail());
}

/// Codex cannot be stopped by a hook in the middle of a turn (see the top of this file).
/// Its `PostToolUse` gives the output of a failing command without the exit status, so
/// the loop is four identical calls with identical results (`near_repeat_no_progress`):
/// call 5 is blocked, call 6 ends the run, and every call after it is denied with the
/// stop reason; the command never runs again, and Codex exits when the model gives up.
#[test]
fn codex_denies_every_later_call_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Codex, "hooks.json", Some(STRICT));
    let last = assert_strict_run(Cli::Codex, &c, 5);
    assert_eq!(last.len(), CALLS, "{}", c.tail());
    assert!(
        last[5].contains("A second critical loop in this run"),
        "call 6: {}",
        last[5]
    );
    for (i, o) in last.iter().enumerate().skip(6) {
        assert!(
            o.contains("loopguard stopped the agent (second_critical_abort)"),
            "call {}: {o}",
            i + 1
        );
    }
}

/// Copilot CLI's hook answers cannot end a turn either (see
/// crates/loopguard-agents/src/agents/copilot.rs): with the strict profile, every call
/// after the one that ended the run is denied with the stop reason, the command never
/// runs again, and Copilot exits when the model gives up.
#[test]
fn copilot_denies_every_later_call_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Copilot, "hooks/loopguard.json", Some(STRICT));
    let last = assert_strict_run(Cli::Copilot, &c, 7);
    assert_eq!(last.len(), CALLS, "{}", c.tail());
    assert!(
        last[7].contains("A second critical loop in this run"),
        "call 8: {}",
        last[7]
    );
    for (i, o) in last.iter().enumerate().skip(8) {
        assert!(
            o.contains("loopguard stopped the agent (second_critical_abort)"),
            "call {}: {o}",
            i + 1
        );
    }
}

/// Droid stops on `continue: false` with a `PreToolUse` deny: its loop (identical
/// successful calls with identical output, see [`Cli::command`]) is four near-identical
/// calls (`near_repeat_no_progress`), call 5 is blocked, call 6 ends the run and stops
/// Droid before it runs: the model is never asked again, and the process exits by itself.
#[test]
fn factory_is_stopped_when_the_strict_profile_ends_the_run() {
    let c = run_loop(Cli::Factory, "settings.json", Some(STRICT));
    let last = assert_strict_run(Cli::Factory, &c, 5);
    assert_eq!(last.len(), 5, "{}", c.tail());
    assert_eq!(c.turns.len(), 6, "{}", c.tail());
}

/// A loop that survives a compaction ends the run in Codex (which, as with the strict
/// profile's abort, cannot be stopped mid-turn): three calls, an automatic
/// compaction (the scripted model reports a context over `model_auto_compact_token_limit`),
/// and the same failing call three more times: the post-compaction guard answers the third
/// with `continue: false`. Codex 0.171 does not end its turn on a PostToolUse
/// `continue: false`, so every later call of the run is denied with the stop reason: the
/// command runs six times, whatever the model asks.
#[test]
fn codex_denies_every_later_call_when_a_loop_survives_a_compaction() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let trial = Trial::new();
    let command = Cli::Codex.command(&trial.counter);
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
        if compaction {
            compactions2.fetch_add(1, Ordering::SeqCst);
            let summary = json!({"type":"message","id":"msg_s","role":"assistant",
                "content":[{"type":"output_text","text":"Summary: the tests fail; keep running them."}]});
            return codex_sse(&summary, 10);
        }
        let k = issued2.fetch_add(1, Ordering::SeqCst) + 1;
        let item = codex_item((k <= 12).then_some(k), &command);
        // The answer with the third call reports a context over the compaction limit.
        codex_sse(&item, if k == 3 { 900_000 } else { 10 })
    });
    std::fs::create_dir_all(trial.home.join(".codex")).unwrap();
    std::fs::write(
        trial.home.join(".codex/config.toml"),
        codex_config(
            server.port,
            "model_auto_compact_token_limit = 5000\nmodel_context_window = 1000000\n",
        ),
    )
    .unwrap();
    trial.install(Cli::Codex, "hooks.json");
    let finished = run_with_timeout(Cli::Codex.cmd(&trial, server.port), LIMIT);
    let stdout = String::from_utf8_lossy(&finished.output.stdout);
    assert_eq!(
        compactions.load(Ordering::SeqCst),
        1,
        "one automatic compaction: {stdout}"
    );
    // Three runs before the compaction, three after it; the third after it stops Codex.
    let status = trial.status();
    assert_eq!(runs(&trial.counter), 6, "{status}");
    // Twelve calls asked for, then the final answer: Codex went on asking the model.
    assert_eq!(issued.load(Ordering::SeqCst), 13);
    let last = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| Cli::Codex.results(&r.body))
        .max_by_key(Vec::len)
        .unwrap();
    // After the compaction: three runs, then six calls denied with the stop reason.
    assert!(last.len() >= 9, "{last:?}");
    for o in &last[last.len() - 6..] {
        assert!(o.contains("compaction_loop_persisted"), "{o}");
    }
}
