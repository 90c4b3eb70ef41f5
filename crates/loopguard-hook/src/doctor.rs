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

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopguard_agents::install as agent_install;
use loopguard_agents::Agent;

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

/// The report, one line per check (then the serve's, if one was probed), and whether
/// every check answered. MCP configs are not checked, and the report says so.
pub fn render(checks: &[Check], serve: Option<(&str, &Outcome)>) -> (String, bool) {
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
    if let Some((url, outcome)) = serve {
        let line = match outcome {
            Outcome::Answered => "answered".to_string(),
            Outcome::NotFound(why) | Outcome::Failed(why) => format!("FAILED: {why}"),
        };
        ok &= *outcome == Outcome::Answered;
        text.push_str(&format!("serve {url}: {line}\n"));
    }
    text.push_str("mcp: not checked (run the MCP client to see `loopguard mcp` answer)\n");
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
