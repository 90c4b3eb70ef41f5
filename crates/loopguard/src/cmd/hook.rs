//! `loopguard hook …` and `loopguard status`: live loop protection for Claude Code and the
//! other coding agents.
//!
//! The protocols are the `loopguard-agents` crate's (Claude Code, Codex, Gemini CLI, Qwen
//! Code, Copilot, Cursor, Factory, Cline, Windsurf, Kiro), and so is the one installer of
//! their settings; the `loopguard-hook` crate is the shell around them (the SQLite store,
//! config discovery, fail-open, the log, `status`). This module parses arguments, reads
//! standard input and prints.

use crate::cmd::ModeArg;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use loopguard_agents::install::{self as agent_install, shell_quote, Change};
use loopguard_agents::{Agent, AgentReply};
use loopguard_core::Mode;
use loopguard_guard::advice::policy_notes;
use loopguard_guard::parse_duration;
use loopguard_hook::config::{ConfigSource, HookConfig};
use loopguard_hook::paths::Env;
use loopguard_hook::status::{report, StatusQuery};
use loopguard_hook::{log_line, HookOptions};

/// `loopguard hook …`
#[derive(Subcommand)]
pub enum HookCommand {
    /// Handle one Claude Code hook event: reads the hook's JSON on stdin, answers on
    /// stdout. This is the command `loopguard hook install` registers; it always exits
    /// successfully (errors allow the call and are reported on stderr and in the log).
    ClaudeCode(HookArgs),
    /// Handle one Codex CLI hook event (stdin → answer on stdout).
    Codex(HookArgs),
    /// Handle one Gemini CLI hook event.
    Gemini(HookArgs),
    /// Handle one Qwen Code hook event.
    Qwen(HookArgs),
    /// Handle one GitHub Copilot (CLI or VS Code agent) hook event.
    Copilot(HookArgs),
    /// Handle one Cursor hook event.
    Cursor(HookArgs),
    /// Handle one Factory Droid hook event.
    Factory(HookArgs),
    /// Handle one Cline hook event (always answers with JSON).
    Cline(HookArgs),
    /// Handle one Windsurf (Cascade) hook event (blocks with exit status 2).
    Windsurf(HookArgs),
    /// Handle one Kiro CLI hook event (blocks with exit status 2).
    Kiro(HookArgs),
    /// Add loopguard's hooks to an agent's settings (default: Claude Code's settings.json),
    /// merging with what is there.
    Install(InstallArgs),
    /// Remove loopguard's hooks from an agent's settings (default: Claude Code's).
    Uninstall(UninstallArgs),
}

/// Options of `loopguard hook AGENT`, the same for every agent.
#[derive(clap::Args)]
pub struct HookArgs {
    /// The state database (default: $XDG_STATE_HOME/loopguard/state.sqlite3, shared by every agent).
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
    /// The config file (default: .loopguard.json5 in the project, else
    /// ~/.config/loopguard/config.json5; without any, detection is on with defaults).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The agents.list[] id whose settings apply (default: the payload's agent_type).
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// enforce: deny and stop; observe: record only.
    #[arg(long, value_enum, default_value_t = ModeArg::Enforce)]
    mode: ModeArg,
    /// Delete sessions idle for longer than this (e.g. 7d, 12h).
    #[arg(long, value_name = "DURATION", default_value = "7d")]
    idle_ttl: String,
    /// How long to wait for a parallel hook's transaction before failing open.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    busy_timeout: String,
    /// Arguments this version does not know (reported, never fatal: a hook must not block
    /// the agent because of its own command line).
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    unknown: Vec<String>,
}

/// Where `install` / `uninstall` write.
#[derive(clap::Args)]
pub struct TargetArgs {
    /// Use the project's settings (.claude/settings.json for Claude Code, .codex/hooks.json,
    /// .gemini/settings.json, … for the others: see docs/agents), shared with everyone who
    /// clones it.
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// Use the user's settings (~/.claude/settings.json, ~/.codex/hooks.json, …; the default).
    #[arg(long)]
    user: bool,
    /// The project directory for --project (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "project")]
    project_dir: Option<PathBuf>,
    /// Edit this settings file instead (for Cline, the hooks directory; for Codex, a
    /// config.toml gets `[[hooks.EVENT]]` tables).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["project", "user"])]
    settings: Option<PathBuf>,
}

/// Options of `loopguard hook install`.
#[derive(clap::Args)]
pub struct InstallArgs {
    /// The agent: claude-code, codex, gemini, qwen, copilot, cursor, factory, cline,
    /// windsurf, kiro.
    #[arg(value_name = "AGENT", default_value = "claude-code")]
    agent_name: String,
    #[command(flatten)]
    target: TargetArgs,
    /// The loopguard executable the hook runs (default: this one for the user's settings;
    /// `loopguard`, found through PATH, for --project, which is shared with everyone who
    /// clones the project).
    #[arg(long, value_name = "PATH")]
    exe: Option<PathBuf>,
    /// Passed on to the hook: the state database.
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
    /// Passed on to the hook: the config file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Passed on to the hook: the agent id.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// Passed on to the hook: record only, never deny or stop.
    #[arg(long)]
    observe: bool,
}

/// Options of `loopguard hook uninstall`.
#[derive(clap::Args)]
pub struct UninstallArgs {
    /// The agent (default: claude-code).
    #[arg(value_name = "AGENT", default_value = "claude-code")]
    agent_name: String,
    #[command(flatten)]
    target: TargetArgs,
}

/// Options of `loopguard status`.
#[derive(clap::Args)]
pub struct StatusArgs {
    /// A Claude Code session id (or a unique prefix); without it, every session is listed.
    #[arg(value_name = "SESSION")]
    session: Option<String>,
    /// The state database (default: as for the hook).
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// How many recent events to show.
    #[arg(long, value_name = "N", default_value_t = 20)]
    events: usize,
}

/// Runs a `loopguard hook …` command.
pub fn run(cmd: HookCommand) -> Result<ExitCode> {
    match cmd {
        HookCommand::ClaudeCode(args) => Ok(agent_hook(Agent::ClaudeCode, args)),
        HookCommand::Codex(args) => Ok(agent_hook(Agent::Codex, args)),
        HookCommand::Gemini(args) => Ok(agent_hook(Agent::Gemini, args)),
        HookCommand::Qwen(args) => Ok(agent_hook(Agent::Qwen, args)),
        HookCommand::Copilot(args) => Ok(agent_hook(Agent::Copilot, args)),
        HookCommand::Cursor(args) => Ok(agent_hook(Agent::Cursor, args)),
        HookCommand::Factory(args) => Ok(agent_hook(Agent::Factory, args)),
        HookCommand::Cline(args) => Ok(agent_hook(Agent::Cline, args)),
        HookCommand::Windsurf(args) => Ok(agent_hook(Agent::Windsurf, args)),
        HookCommand::Kiro(args) => Ok(agent_hook(Agent::Kiro, args)),
        HookCommand::Install(args) => install(args.agent_name.parse()?, args),
        HookCommand::Uninstall(args) => uninstall(args.agent_name.parse()?, args),
    }
}

/// The hook's options from its command line, and the problems found in it (reported,
/// never fatal).
fn hook_options(args: HookArgs) -> (HookOptions, Vec<String>) {
    let mut opts = HookOptions {
        state: args.state,
        config: args.config,
        agent: args.agent,
        mode: Mode::from(args.mode),
        env: Env::from_process(),
        ..HookOptions::default()
    };
    let mut problems = Vec::new();
    match parse_duration(&args.idle_ttl) {
        Ok(d) => opts.store.idle_ttl = d,
        Err(e) => problems.push(format!("--idle-ttl: {e}")),
    }
    match parse_duration(&args.busy_timeout) {
        Ok(d) => opts.store.busy_timeout = d,
        Err(e) => problems.push(format!("--busy-timeout: {e}")),
    }
    if !args.unknown.is_empty() {
        problems.push(format!(
            "unknown arguments ignored: {}",
            args.unknown.join(" ")
        ));
    }
    (opts, problems)
}

/// `loopguard hook AGENT` (Claude Code included): one event on stdin, the agent's answer on
/// stdout and in the exit status; any error fails open with the answer the agent reads as
/// "go on".
fn agent_hook(agent: Agent, args: HookArgs) -> ExitCode {
    let (opts, problems) = hook_options(args);
    let mut input = Vec::new();
    let read = std::io::stdin().lock().read_to_end(&mut input);
    let mut stderr = std::io::stderr().lock();
    for p in problems {
        let line = format!("loopguard: hook command line: {p}");
        log_line(&opts, &line);
        let _ = writeln!(stderr, "{line}");
    }
    let (allow, allow_code) = agent.allow();
    let reply = match read {
        Err(e) => {
            let line = format!("loopguard: cannot read the hook payload from stdin: {e}; the call is allowed (fail-open)");
            log_line(&opts, &line);
            AgentReply {
                stdout: allow,
                stderr: vec![line],
                exit_code: allow_code,
                error: Some(e.to_string()),
                ..AgentReply::default()
            }
        }
        Ok(_) => std::panic::catch_unwind(|| loopguard_hook::run(agent, &input, &opts))
            .unwrap_or_else(|_| {
                let line = "loopguard: internal error (panic) while handling the hook; the call is allowed (fail-open)".to_string();
                log_line(&opts, &line);
                AgentReply {
                    stdout: allow,
                    stderr: vec![line],
                    exit_code: allow_code,
                    error: Some("panic".into()),
                    ..AgentReply::default()
                }
            }),
    };
    for line in &reply.stderr {
        let _ = writeln!(stderr, "{line}");
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(reply.stdout.as_bytes());
    let _ = stdout.flush();
    ExitCode::from(u8::try_from(reply.exit_code).unwrap_or(0))
}

/// The settings file `install` / `uninstall` edit for `agent`, and the project directory
/// with `--project`.
fn settings_path(
    agent: Agent,
    target: &TargetArgs,
    env: &Env,
) -> Result<(PathBuf, Option<PathBuf>)> {
    let project = match (target.project, &target.project_dir) {
        (false, _) => None,
        (true, Some(d)) => Some(d.clone()),
        (true, None) => {
            Some(std::env::current_dir().context("cannot determine the current directory")?)
        }
    };
    if let Some(p) = &target.settings {
        return Ok((p.clone(), project));
    }
    let path = agent_install::settings_path(agent, env.home.as_deref(), project.as_deref())
        .context("use --settings FILE")?;
    Ok((path, project))
}

/// How `install` / `uninstall` name the agent.
fn display_name(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "Claude Code",
        other => other.as_str(),
    }
}

/// A path given to `install`, as the hook command names it. For Claude Code's project
/// settings a path inside the project becomes `"${CLAUDE_PROJECT_DIR}"/…`, so the command
/// works wherever the project is cloned; a path outside it is named as it is, with a
/// warning.
fn path_word(p: &Path, project: Option<&Path>, flag: &str) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let Some(project) = project else {
        return shell_quote(&abs.to_string_lossy());
    };
    let root = std::path::absolute(project).unwrap_or_else(|_| project.to_path_buf());
    match abs.strip_prefix(&root) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            format!(
                "\"${{CLAUDE_PROJECT_DIR}}\"/{}",
                shell_quote(&rel.to_string_lossy())
            )
        }
        _ => {
            // A warning about the command being built; install reports its own result.
            let _ = errln!(
                "warning: {flag} {} is outside the project: the shared .claude/settings.json will name a path of this machine",
                abs.display()
            );
            shell_quote(&abs.to_string_lossy())
        }
    }
}

/// `loopguard hook install AGENT`: one installer for every agent's settings
/// (`loopguard_agents::install`).
fn install(agent: Agent, args: InstallArgs) -> Result<ExitCode> {
    let env = Env::from_process();
    let (path, project) = settings_path(agent, &args.target, &env)?;
    // A config the hook could not load would make every call fail open: refuse it now.
    let config = match &args.config {
        Some(c) => Some(
            HookConfig::load(c, ConfigSource::Flag(c.clone()))
                .map_err(|e| anyhow::anyhow!("--config: {e}; nothing was installed"))?,
        ),
        None => None,
    };
    let exe = match (&args.exe, &project) {
        (Some(e), _) => shell_quote(&e.to_string_lossy()),
        // A project's settings are shared: `loopguard` through PATH works everywhere.
        (None, Some(_)) => "loopguard".to_string(),
        (None, None) => shell_quote(
            &std::env::current_exe()
                .context("cannot find the loopguard executable; use --exe PATH")?
                .to_string_lossy(),
        ),
    };
    // Only Claude Code sets `CLAUDE_PROJECT_DIR` for its hook commands.
    let in_project = project.as_deref().filter(|_| agent == Agent::ClaudeCode);
    let mut words = vec![exe, "hook".to_string(), agent.as_str().to_string()];
    for (flag, p) in [("--state", &args.state), ("--config", &args.config)] {
        if let Some(p) = p {
            words.push(flag.into());
            words.push(path_word(p, in_project, flag));
        }
    }
    if let Some(a) = &args.agent {
        words.push("--agent".into());
        words.push(shell_quote(a));
    }
    if args.observe {
        words.push("--mode".into());
        words.push("observe".into());
    }
    let command = words.join(" ");
    let change = agent_install::install(agent, &path, &command)?;
    let what = format!("loopguard's {} hooks installed", display_name(agent));
    outln!("{}", change.describe(&path, &what))?;
    outln!("hook command: {command}")?;
    if agent == Agent::Codex {
        outln!("note: Codex runs a new hook only once you trust it: start `codex` and review it in /hooks. `codex exec` skips untrusted hooks without a word (`--dangerously-bypass-hook-trust` runs them for one invocation).")?;
    }
    // Say where protection is weaker than it looks: the config the hook will load.
    let config = match config {
        Some(c) => Ok(c),
        None => HookConfig::discover(None, project.as_deref(), &env),
    };
    match config {
        Ok(c) => {
            outln!("config: {}", c.source)?;
            for note in policy_notes(&c.policy_for(args.agent.as_deref())) {
                errln!("warning: {note}")?;
            }
        }
        Err(e) => errln!(
            "warning: {e}: until it is fixed, every hook call fails open (nothing is checked)"
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `loopguard hook uninstall AGENT`.
fn uninstall(agent: Agent, args: UninstallArgs) -> Result<ExitCode> {
    let env = Env::from_process();
    let (path, _) = settings_path(agent, &args.target, &env)?;
    let change = agent_install::uninstall(agent, &path)?;
    let what = match change {
        Change::Unchanged => "has no loopguard hooks".to_string(),
        _ => format!("loopguard's {} hooks removed", display_name(agent)),
    };
    outln!("{}", change.describe(&path, &what))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `loopguard status` (the report is `loopguard_hook::status`'s).
pub fn status(args: StatusArgs) -> Result<ExitCode> {
    let query = StatusQuery {
        session: args.session,
        state: args.state,
        json: args.json,
        events: args.events,
    };
    let cwd = std::env::current_dir().ok();
    out!("{}", report(&query, &Env::from_process(), cwd.as_deref())?)?;
    Ok(ExitCode::SUCCESS)
}
