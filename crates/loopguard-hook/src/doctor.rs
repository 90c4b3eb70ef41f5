//! `loopguard doctor`: one synthetic call through every installed hook, to prove it answers.
//!
//! `status` says a hook is installed; only running it says that it works. For each agent
//! whose loopguard hook is in the user's settings (under `env.home`) or the project's (in
//! `cwd`), the same files `status` looks at, the doctor reads the installed command back
//! ([`loopguard_agents::install::installed_command`]), runs it as the agent would (`sh -c
//! COMMAND`, the agent's synthetic pre-tool payload on standard input,
//! [`loopguard_agents::Protocol::probe`]) in a throwaway session `loopguard-doctor-PID`, and
//! checks that it answered with the agent's allow answer within the timeout.
//!
//! The hook's state goes to a throwaway `$XDG_STATE_HOME` (removed afterwards), so a hook
//! using the default database leaves nothing in the user's state; a command written with
//! `--state PATH` writes its throwaway session into that database (the report says so).
//!
//! MCP configs the same way ([`check_mcp`]): every server entry `loopguard mcp install`
//! wrapped, in each client's user and project config
//! ([`loopguard_agents::install::mcp::config_paths`]), is started as its client would start
//! it (its `command`, `args` and `env`, no shell, the throwaway `$XDG_STATE_HOME`), asked
//! `initialize` and `tools/list` over stdio, then closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use loopguard_agents::install as agent_install;
use loopguard_agents::install::mcp::{self as mcp_install, Launch};
use loopguard_agents::Agent;
use serde_json::{json, Value};

use crate::paths::Env;

/// What came of one probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The hook answered with the agent's allow answer.
    Answered,
    /// The shell could not find the command's program (exit status 127).
    NotFound(String),
    /// It ran but failed: the reason (exit status, standard error, the answer it gave).
    Failed(String),
}

/// One installed hook and what its probe gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The agent.
    pub agent: Agent,
    /// The settings file (for Cline, the hooks directory) the command was read from.
    pub settings: PathBuf,
    /// The installed command, as read back.
    pub command: String,
    /// What it did.
    pub outcome: Outcome,
}

/// Every agent's installed hooks, each run once. Settings that cannot be read are a
/// failed check naming the file.
pub fn check_hooks(env: &Env, cwd: Option<&Path>, timeout: Duration) -> Vec<Check> {
    let state = std::env::temp_dir().join(format!("loopguard-doctor-{}", std::process::id()));
    let mut checks = Vec::new();
    for &agent in loopguard_agents::AGENTS {
        for (settings, project) in settings_files(agent, env, cwd) {
            let command = match agent_install::installed_command(agent, &settings) {
                Ok(Some(c)) => c,
                Ok(None) => continue,
                Err(e) => {
                    checks.push(Check {
                        agent,
                        settings,
                        command: String::new(),
                        outcome: Outcome::Failed(format!("cannot read its hook settings: {e}")),
                    });
                    continue;
                }
            };
            let outcome = probe(agent, &command, project.as_deref(), &state, timeout);
            checks.push(Check {
                agent,
                settings,
                command,
                outcome,
            });
        }
    }
    std::fs::remove_dir_all(&state).ok();
    checks
}

/// The user's settings file of `agent`, then the project's in `cwd` (with the project
/// directory), as `status` looks for them.
fn settings_files(agent: Agent, env: &Env, cwd: Option<&Path>) -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut out = Vec::new();
    if let Ok(p) = agent_install::settings_path(agent, env.home.as_deref(), None) {
        out.push((p, None));
    }
    if let Some(d) = cwd {
        if let Ok(p) = agent_install::settings_path(agent, None, Some(d)) {
            if !out.iter().any(|(q, _)| *q == p) {
                out.push((p, Some(d.to_path_buf())));
            }
        }
    }
    out
}

/// Runs `command` as `agent` runs its hook, with the agent's probe on standard input.
fn probe(
    agent: Agent,
    command: &str,
    project: Option<&Path>,
    state: &Path,
    timeout: Duration,
) -> Outcome {
    let session = format!("loopguard-doctor-{}", std::process::id());
    let cwd = project
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(std::env::temp_dir);
    let payload = agent
        .protocol()
        .probe(&session, &cwd.to_string_lossy())
        .to_string();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&cwd)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Claude Code sets this for its hook commands; a project's command names paths by it.
    if agent == Agent::ClaudeCode {
        cmd.env("CLAUDE_PROJECT_DIR", &cwd);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("cannot start sh: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that exits without reading its input closes the pipe: its answer decides.
        let _ = stdin.write_all(payload.as_bytes());
    }
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let out_reader = std::thread::spawn(move || read_all(out.as_mut()));
    let err_reader = std::thread::spawn(move || read_all(err.as_mut()));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::Failed(format!("no answer within {}s", timeout.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Outcome::Failed(format!("cannot wait for the hook: {e}")),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let stderr = stderr.trim();
    let code = status.code();
    if code == Some(127) {
        return Outcome::NotFound(if stderr.is_empty() {
            "exit status 127".into()
        } else {
            stderr.to_string()
        });
    }
    let (allow, allow_code) = agent.allow();
    if code == Some(allow_code) && stdout.trim() == allow.trim() {
        return Outcome::Answered;
    }
    let status = match code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    let mut why = format!(
        "{status}, answer {:?} (expected {:?})",
        stdout.trim(),
        allow.trim()
    );
    if !stderr.is_empty() {
        why.push_str(&format!(": {stderr}"));
    }
    Outcome::Failed(why)
}

fn read_all(r: Option<&mut impl Read>) -> String {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// One wrapped MCP server entry and what its probe gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpCheck {
    /// The client whose config holds it (`cursor`, `claude-code`, …).
    pub client: &'static str,
    /// The config file.
    pub config: PathBuf,
    /// The entry (`mcpServers.NAME`, …).
    pub entry: String,
    /// The command line, as read back (empty when the config could not be read).
    pub command: String,
    /// What it did.
    pub outcome: McpOutcome,
}

/// What came of one MCP probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpOutcome {
    /// It answered `initialize` and `tools/list`, listing this many tools.
    Answered(usize),
    /// The command's program could not be found.
    NotFound(String),
    /// It ran but failed, or did not answer in time: the reason.
    Failed(String),
}

/// The MCP protocol version the probe asks for; `loopguard mcp` passes the server's answer
/// through.
const MCP_PROTOCOL_VERSION: &str = "2025-06-18";

/// Every wrapped server entry of every MCP client's user config (under `env.home` and
/// `env.config_home`) and project config (in `cwd`), each started and asked for its tools
/// once. A config that cannot be read is a failed check naming the file.
pub fn check_mcp(env: &Env, cwd: Option<&Path>, timeout: Duration) -> Vec<McpCheck> {
    let state = std::env::temp_dir().join(format!("loopguard-doctor-mcp-{}", std::process::id()));
    let mut checks = Vec::new();
    let mut seen = Vec::new();
    let paths = mcp_install::config_paths(env.home.as_deref(), env.config_home.as_deref(), cwd);
    for (client, config) in paths {
        if seen.contains(&config) || !config.is_file() {
            continue;
        }
        seen.push(config.clone());
        let project = cwd.filter(|d| config.starts_with(d));
        let entries = match mcp_install::Installer::new(client, &config).wrapped() {
            Ok(e) => e,
            Err(e) => {
                checks.push(McpCheck {
                    client: client.as_str(),
                    config,
                    entry: String::new(),
                    command: String::new(),
                    outcome: McpOutcome::Failed(format!("cannot read the config: {e}")),
                });
                continue;
            }
        };
        for e in entries {
            let (command, outcome) = match &e.launch {
                Ok(l) => (
                    std::iter::once(l.command.as_str())
                        .chain(l.args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" "),
                    probe_mcp(l, e.project.as_deref().or(project), &state, timeout),
                ),
                Err(why) => (String::new(), McpOutcome::Failed(why.clone())),
            };
            checks.push(McpCheck {
                client: client.as_str(),
                config: config.clone(),
                entry: e.entry,
                command,
                outcome,
            });
        }
    }
    std::fs::remove_dir_all(&state).ok();
    checks
}

/// Starts the entry's process and speaks MCP over its stdio: `initialize`,
/// `notifications/initialized`, `tools/list`; then closes its standard input and waits for
/// it to exit (killed after `timeout`).
fn probe_mcp(
    launch: &Launch,
    project: Option<&Path>,
    state: &Path,
    timeout: Duration,
) -> McpOutcome {
    let mut cmd = Command::new(&launch.command);
    cmd.args(&launch.args)
        .envs(&launch.env)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Project entries' servers start in the project, as their client starts them.
    if let Some(p) = project {
        // Else a missing directory would read as a missing command.
        if !p.is_dir() {
            return McpOutcome::Failed(format!("its project directory {} is gone", p.display()));
        }
        cmd.current_dir(p);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return McpOutcome::NotFound(format!("{}: {e}", launch.command))
        }
        Err(e) => return McpOutcome::Failed(format!("cannot start {}: {e}", launch.command)),
    };
    let stdout = child.stdout.take();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        }
    });
    // Standard error is collected as it comes: a server the wrapper started may outlive a
    // killed wrapper and hold the pipe open, and the doctor must not wait for it.
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (err_done, err_end) = mpsc::channel::<()>();
    if let Some(err) = child.stderr.take() {
        let buf = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut b) = buf.lock() {
                    b.push_str(&line);
                    b.push('\n');
                }
            }
            drop(err_done);
        });
    }
    let deadline = Instant::now() + timeout;
    let mut stdin = child.stdin.take();
    let exchange = (|| {
        let mut send = |msg: Value| -> Result<(), String> {
            let w = stdin.as_mut().ok_or("no standard input")?;
            writeln!(w, "{msg}")
                .and_then(|()| w.flush())
                .map_err(|e| format!("cannot write to it: {e}"))
        };
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": MCP_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "loopguard-doctor", "version": env!("CARGO_PKG_VERSION")},
            }}),
        )?;
        answer(&rx, 1, deadline, timeout)?;
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))?;
        let tools = answer(&rx, 2, deadline, timeout)?;
        tools
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::len)
            .ok_or_else(|| format!("tools/list answered without a `tools` list: {tools}"))
    })();
    // Closing standard input is how a stdio MCP client ends the session.
    drop(stdin);
    let status = finish(&mut child, timeout);
    let _ = err_end.recv_timeout(Duration::from_millis(200));
    let stderr = stderr.lock().map(|s| s.clone()).unwrap_or_default();
    match exchange {
        Ok(n) => McpOutcome::Answered(n),
        Err(why) => {
            let mut why = why;
            if let Some(s) = status {
                why.push_str(&format!(
                    " ({})",
                    match s.code() {
                        Some(c) => format!("exit status {c}"),
                        None => "killed by a signal".to_owned(),
                    }
                ));
            }
            let tail = tail(&stderr, 5);
            if !tail.is_empty() {
                why.push_str(&format!(": {tail}"));
            }
            McpOutcome::Failed(why)
        }
    }
}

/// The `result` of the answer to request `id`; other messages (notifications, the
/// server's own requests) are passed over.
fn answer(
    rx: &mpsc::Receiver<String>,
    id: u64,
    deadline: Instant,
    timeout: Duration,
) -> Result<Value, String> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!("no answer within {}s", timeout.as_secs_f64()))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("it closed its standard output without answering".to_owned())
            }
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            return Err(format!("not JSON-RPC on standard output: {}", line.trim()));
        };
        if msg.get("id").and_then(Value::as_u64) != Some(id) || msg.get("method").is_some() {
            continue;
        }
        if let Some(e) = msg.get("error") {
            return Err(format!("request {id} answered with an error: {e}"));
        }
        return msg
            .get("result")
            .cloned()
            .ok_or_else(|| format!("answer without a result: {line}"));
    }
}

/// Waits up to `timeout` for the process to exit, then kills it. Its exit status, when it
/// exited by itself.
fn finish(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The last `n` non-empty lines of `text`, joined with ` | `.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// The report, one line per hook check, then per wrapped MCP entry, then the serve's (if
/// one was probed), and whether every check answered.
pub fn render(
    checks: &[Check],
    mcp: &[McpCheck],
    serve: Option<(&str, &Outcome)>,
) -> (String, bool) {
    let mut text = String::new();
    let mut ok = true;
    if checks.is_empty() {
        text.push_str("hooks: none installed\n");
    }
    for c in checks {
        let (word, detail) = match &c.outcome {
            Outcome::Answered => ("answered", String::new()),
            Outcome::NotFound(why) => ("command not found", format!(": {why}")),
            Outcome::Failed(why) => ("FAILED", format!(": {why}")),
        };
        ok &= c.outcome == Outcome::Answered;
        text.push_str(&format!(
            "{}: {word} ({}; command: {}){detail}\n",
            c.agent,
            c.settings.display(),
            c.command
        ));
    }
    if mcp.is_empty() {
        text.push_str("mcp: no server entry goes through loopguard\n");
    }
    for c in mcp {
        let (word, detail) = match &c.outcome {
            McpOutcome::Answered(n) => (
                format!("answered ({n} tool{})", if *n == 1 { "" } else { "s" }),
                String::new(),
            ),
            McpOutcome::NotFound(why) => ("command not found".to_owned(), format!(": {why}")),
            McpOutcome::Failed(why) => ("FAILED".to_owned(), format!(": {why}")),
        };
        ok &= matches!(c.outcome, McpOutcome::Answered(_));
        text.push_str(&format!(
            "mcp {} {}: {word} ({}; command: {}){detail}\n",
            c.client,
            c.entry,
            c.config.display(),
            c.command
        ));
    }
    if let Some((url, outcome)) = serve {
        let line = match outcome {
            Outcome::Answered => "answered".to_string(),
            Outcome::NotFound(why) | Outcome::Failed(why) => format!("FAILED: {why}"),
        };
        ok &= *outcome == Outcome::Answered;
        text.push_str(&format!("serve {url}: {line}\n"));
    }
    (text, ok)
}

/// A running `loopguard serve` at `url` (`http://HOST:PORT`), probed: `GET /healthz`, then
/// Claude Code's synthetic pre-tool call (`POST /v1/hooks/claude-code`) in a throwaway
/// session `loopguard-doctor-PID`, which must be answered with the allow answer. `token`
/// is sent as a bearer token. The throwaway session stays in the server's store until the
/// server prunes it.
pub fn check_serve(url: &str, token: Option<&str>, timeout: Duration) -> Outcome {
    let base = url.trim_end_matches('/');
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
    let with_token = |r: ureq::Request| match token {
        Some(t) => r.set("Authorization", &format!("Bearer {t}")),
        None => r,
    };
    let describe = |what: &str, e: ureq::Error| match e {
        ureq::Error::Status(code, resp) => {
            let body = resp.into_string().unwrap_or_default();
            Outcome::Failed(format!("{what}: HTTP {code}: {}", body.trim()))
        }
        ureq::Error::Transport(t) => Outcome::Failed(format!("{what}: {t}")),
    };
    let health = format!("{base}/healthz");
    if let Err(e) = with_token(agent.get(&health)).call() {
        return describe(&format!("GET {health}"), e);
    }
    let hook = format!("{base}/v1/hooks/{}", Agent::ClaudeCode);
    let session = format!("loopguard-doctor-{}", std::process::id());
    let payload = Agent::ClaudeCode
        .protocol()
        .probe(&session, &std::env::temp_dir().to_string_lossy())
        .to_string();
    let answer = match with_token(agent.post(&hook))
        .set("Content-Type", "application/json")
        .send_string(&payload)
    {
        Ok(r) => r.into_string().unwrap_or_default(),
        Err(e) => return describe(&format!("POST {hook}"), e),
    };
    // Over HTTP the allow answer is an empty JSON object (or nothing).
    match answer.trim() {
        "" | "{}" => Outcome::Answered,
        other => Outcome::Failed(format!("POST {hook}: unexpected answer {other}")),
    }
}
