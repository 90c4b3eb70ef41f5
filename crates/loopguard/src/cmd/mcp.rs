//! `loopguard mcp …`: the transparent MCP proxy. The work is done by the `loopguard-mcp`
//! crate; this module parses arguments and prints.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use loopguard_agents::install::mcp as mcp_install;
use loopguard_core::Mode;
use loopguard_mcp::{Endpoints, ProxyOptions};

use crate::cmd::replay::load_config_for_run;
use crate::cmd::ModeArg;

/// `loopguard mcp`
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
    #[command(flatten)]
    proxy: ProxyArgs,
}

#[derive(Subcommand)]
enum McpCommand {
    /// Route every MCP server of a client's config through loopguard (keeps a backup).
    Install(InstallArgs),
    /// Undo `install`: each entry gets back exactly the text it had.
    Uninstall(InstallArgs),
}

/// The proxy's options.
#[derive(Args)]
struct ProxyArgs {
    /// OpenClaw config (default: detection enabled with OpenClaw's defaults).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Session state: memory, sqlite:PATH or redis://HOST:PORT/DB.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    store: String,
    /// The server's name in session names and logs (default: the name the server gives in its
    /// initialize answer, `serverInfo.name`; else the command's file name or the upstream's host).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Group every connection under this session (and run), e.g. one per user.
    #[arg(long, value_name = "KEY")]
    session_key: Option<String>,
    /// Append every decision to FILE as JSON Lines.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// enforce: answer looping calls with the block message; observe: only log.
    #[arg(long, value_enum, default_value_t = ModeArg::Enforce)]
    mode: ModeArg,
    /// A streamable HTTP MCP server to forward to (with --listen: an HTTP proxy; without:
    /// the proxy speaks stdio to the client).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// A header sent to the upstream with every request (`Name: value`; repeatable).
    #[arg(long, value_name = "HEADER", requires = "upstream")]
    header: Vec<String>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8931) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// With --listen and a COMMAND: end a session (and its server process) after this long
    /// without a request or an open stream, e.g. 30s, 10m, 1h (a plain number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = loopguard_guard::parse_duration)]
    idle_ttl: std::time::Duration,
    /// With --listen and a COMMAND: at most this many sessions (server processes); a new
    /// one ends the session idle the longest, or is refused with HTTP 503 when none is idle.
    #[arg(long, value_name = "N", default_value_t = loopguard_mcp::DEFAULT_MAX_SESSIONS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: u64,
    /// With `loopguard.onCritical: "ask"`: how long the user has to answer the proxy's
    /// question (MCP elicitation) about a looping call before it is refused, e.g. 90s, 5m.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = loopguard_guard::parse_duration)]
    ask_timeout: std::time::Duration,
    /// The MCP server command and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// The clients `install` knows.
#[derive(Clone, Copy, ValueEnum)]
enum ClientArg {
    /// Claude Desktop (claude_desktop_config.json, `mcpServers`).
    ClaudeDesktop,
    /// Claude Code (~/.claude.json or a project's .mcp.json, `mcpServers`).
    ClaudeCode,
    /// Cursor (~/.cursor/mcp.json, `mcpServers`).
    Cursor,
    /// VS Code (mcp.json, JSONC, `servers`).
    Vscode,
}

#[derive(Args)]
struct InstallArgs {
    /// Whose config to edit.
    #[arg(long, value_enum)]
    client: ClientArg,
    /// The config file (default: the client's usual place for this user).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// The loopguard command written into the entries (default: `loopguard` when the first
    /// one on PATH is this program, else this executable's absolute path).
    #[arg(long, value_name = "PATH")]
    loopguard: Option<String>,
}

fn client(c: ClientArg) -> mcp_install::Client {
    match c {
        ClientArg::ClaudeDesktop => mcp_install::Client::ClaudeDesktop,
        ClientArg::ClaudeCode => mcp_install::Client::ClaudeCode,
        ClientArg::Cursor => mcp_install::Client::Cursor,
        ClientArg::Vscode => mcp_install::Client::VsCode,
    }
}

/// Runs `loopguard mcp …`.
pub fn run(args: McpArgs) -> Result<ExitCode> {
    match args.command {
        Some(McpCommand::Install(a)) => edit(a, true),
        Some(McpCommand::Uninstall(a)) => edit(a, false),
        None => proxy(args.proxy),
    }
}

fn edit(args: InstallArgs, install: bool) -> Result<ExitCode> {
    let client = client(args.client);
    let path = match args.config {
        Some(p) => p,
        None => mcp_install::default_config_path(client)?,
    };
    let exe = match args.loopguard {
        Some(l) => l,
        None => mcp_install::running_loopguard(),
    };
    let installer = mcp_install::Installer::new(client, &path).loopguard_command(exe);
    let report = if install {
        installer.install()?
    } else {
        installer.uninstall()?
    };
    out!("{}", report.render())?;
    Ok(ExitCode::SUCCESS)
}

fn proxy(args: ProxyArgs) -> Result<ExitCode> {
    let mut builder = ProxyOptions::builder()
        .idle_ttl(args.idle_ttl)
        .ask_timeout(args.ask_timeout)
        .max_sessions(usize::try_from(args.max_sessions).unwrap_or(usize::MAX))
        .store(args.store)
        .mode(Mode::from(args.mode));
    if let Some(path) = &args.config {
        builder = builder.config(load_config_for_run(path)?);
    }
    if let Some(name) = args.name {
        builder = builder.name(name);
    }
    if let Some(key) = args.session_key {
        builder = builder.session_key(key);
    }
    if let Some(log) = args.log {
        builder = builder.log_file(log);
    }
    let options = builder.build();
    let code = loopguard_mcp::run(
        &options,
        Endpoints {
            upstream: args.upstream.as_deref(),
            listen: args.listen.as_deref(),
            command: &args.command,
            headers: &args.header,
        },
    )?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
