//! `loopguard hook …` and `loopguard status`: live loop protection for Claude Code and the
//! other coding agents.
//!
//! The protocols are the `loopguard-agents` crate's (Claude Code, Codex, Gemini CLI, Qwen
//! Code, Copilot, Cursor, Factory, Cline, Windsurf, Kiro), and so is the one installer of
//! their settings; the `loopguard-hook` crate is the shell around them (the SQLite store,
//! config discovery, fail-open, the log, `status`'s report, what `install` says). This
//! module parses arguments, reads standard input and prints.

use crate::cmd::ModeArg;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use loopguard_agents::{Agent, AgentReply};
use loopguard_core::Mode;
use loopguard_guard::parse_duration;
use loopguard_hook::install::{install, uninstall, Install, Line, Report, Target};
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

/// `loopguard doctor`.
#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Seconds each hook, MCP server or serve has to answer.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Also probe a running `loopguard serve` at this URL (GET /healthz, one synthetic
    /// call in a throwaway session).
    #[arg(long, value_name = "URL")]
    serve: Option<String>,
    /// A file holding the bearer token for --serve.
    #[arg(long, value_name = "FILE", requires = "serve")]
    token_file: Option<PathBuf>,
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
        HookCommand::Install(args) => {
            let agent = args.agent_name.parse()?;
            let req = Install {
                target: target(args.target),
                exe: args.exe,
                state: args.state,
                config: args.config,
                agent: args.agent,
                observe: args.observe,
            };
            print(install(agent, &req, &Env::from_process()))
        }
        HookCommand::Uninstall(args) => print(uninstall(
            args.agent_name.parse()?,
            &target(args.target),
            &Env::from_process(),
        )),
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

/// Prints what `install` / `uninstall` report, in order; their error comes last. A print
/// error is kept until then (a closed pipe only ends a command that was going to succeed);
/// a warning that cannot be written does not keep what was done from being said on stdout.
fn print(report: Report) -> Result<ExitCode> {
    let mut printed: std::io::Result<()> = Ok(());
    for line in &report.lines {
        let (written, on_stdout) = match line {
            Line::Out(l) => (outln!("{l}"), true),
            Line::Err(l) => (errln!("{l}"), false),
        };
        if let Err(e) = written {
            printed = printed.and(Err(e));
            if on_stdout {
                break;
            }
        }
    }
    report.result?;
    printed?;
    Ok(ExitCode::SUCCESS)
}

/// The settings file `install` / `uninstall` edit.
fn target(args: TargetArgs) -> Target {
    Target {
        project: args.project,
        project_dir: args.project_dir,
        settings: args.settings,
    }
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

/// `loopguard doctor`: every installed hook and wrapped MCP server run once; exit 1 when
/// one did not answer.
pub fn doctor(args: DoctorArgs) -> Result<ExitCode> {
    let timeout = std::time::Duration::try_from_secs_f64(args.timeout)
        .map_err(|e| anyhow::anyhow!("--timeout {}: {e}", args.timeout))?;
    let cwd = std::env::current_dir().ok();
    let env = Env::from_process();
    let checks = loopguard_hook::doctor::check_hooks(&env, cwd.as_deref(), timeout);
    let mcp = loopguard_hook::doctor::check_mcp(&env, cwd.as_deref(), timeout);
    let token = match &args.token_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", p.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let serve = args.serve.as_deref().map(|url| {
        (
            url,
            loopguard_hook::doctor::check_serve(url, token.as_deref(), timeout),
        )
    });
    let (text, ok) =
        loopguard_hook::doctor::render(&checks, &mcp, serve.as_ref().map(|(u, o)| (*u, o)));
    out!("{text}")?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
