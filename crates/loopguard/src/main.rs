//! `loopguard`: find and stop tool-call loops in AI agents.
//!
//! Every print returns its error (the macros below) instead of panicking as `println!` does;
//! [`main`] is the one place that turns a closed pipe (`loopguard replay … | head`) into a
//! quiet exit, as ripgrep does.

/// `println!` to stdout that returns an `io::Result` instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` to stdout that returns an `io::Result` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        write!(stdout, $($arg)*).and_then(|()| stdout.flush())
    }};
}

/// `eprintln!` that returns an `io::Result` instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stderr().lock(), $($arg)*)
    }};
}

mod cmd;
mod progress;

/// Replay allocates and frees small JSON values at a high rate; mimalloc does that several
/// times faster than the system allocator. Built without transparent huge pages (the
/// workspace's `no_thp` feature): clearing 2 MiB pages cost more than they saved.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Find and stop tool-call loops in AI agents, with OpenClaw's `tools.loopDetection` rules.
#[derive(Parser)]
#[command(name = "loopguard", version, about, long_about = None)]
struct Cli {
    /// Log detector activity to stderr (repeat for more: -v info, -vv debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay recorded sessions (event streams or agent transcripts) and explain every loop in them.
    Replay(cmd::replay::ReplayArgs),
    /// Write a transcript (any supported format) as loopguard's event stream.
    Convert(cmd::convert::ConvertArgs),
    /// Work with OpenClaw config files.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Live loop protection as an agent hook (Claude Code, Codex, Gemini CLI, Qwen Code,
    /// Copilot, Cursor, Factory, Cline, Windsurf, Kiro).
    #[command(subcommand)]
    Hook(cmd::hook::HookCommand),
    /// Show what the hook's state database knows about a session.
    Status(cmd::hook::StatusArgs),
    /// Run one synthetic call through every installed hook, ask every MCP server entry
    /// loopguard wraps for its tools (and probe a running serve); report which answered and
    /// exit 1 when one did not.
    Doctor(cmd::hook::DoctorArgs),
    /// A transparent MCP proxy that stops looping tools/call (stdio or streamable HTTP).
    Mcp(cmd::mcp::McpArgs),
    /// Run the guard as an HTTP service (POST /v1/events, Claude Code http hooks).
    Serve(cmd::serve::ServeArgs),
    /// Deliver the alerts (`loopguard.alerts`) the hooks handed off.
    #[command(subcommand)]
    Alerts(cmd::alerts::AlertsCommand),
    /// Wrap a headless agent run (`loopguard run -- claude -p …`): print a JSON verdict and
    /// exit 3 when a loop ended the run, 2 when loopguard refused calls.
    Run(cmd::run::RunArgs),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate a config file and print the effective loop detection settings per agent.
    Check(cmd::config::CheckArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Log lines are coloured like the report: `--color never` keeps escape codes out of
    // pipes and files, `auto` colours only a terminal.
    let color = match &cli.command {
        Command::Replay(args) => args.color,
        _ => cmd::replay::ColorArg::Auto,
    };
    // A server or a proxy runs unattended: its warnings (a store outage, a session started
    // afresh, a batch answered by the proxy) go to stderr even without -v. (An MCP client
    // shows a stdio server's stderr in its logs; stdout stays the protocol's.)
    // `loopguard mcp` writes one line per warning, block or abort shown to the model (its
    // own); the engine's per-detector lines say the same things again, so they wait for -v.
    // `loopguard serve` writes one line per loop event itself (loopguard::serve::loop); the
    // engine's lines (one per detector per call, some forty for one loop) wait for -v.
    let quiet_level = match &cli.command {
        Command::Serve(_) => Some("warn,loopguard::detector=off,loopguard::tool_loop=off"),
        Command::Mcp(_) => Some("warn,loopguard::detector=off,loopguard::tool_loop=off"),
        _ => None,
    };
    let json = matches!(&cli.command, Command::Serve(args) if args.json_logs());
    init_logging(
        cli.verbose,
        quiet_level,
        color.enabled(io::stderr().is_terminal()),
        json,
    );
    let result = match cli.command {
        Command::Replay(args) => cmd::replay::run(args),
        Command::Convert(args) => cmd::convert::run(args),
        Command::Config(ConfigCommand::Check(args)) => cmd::config::run(args),
        Command::Hook(cmd) => cmd::hook::run(cmd),
        Command::Status(args) => cmd::hook::status(args),
        Command::Doctor(args) => cmd::hook::doctor(args),
        Command::Mcp(args) => cmd::mcp::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Alerts(cmd) => cmd::alerts::run(cmd),
        Command::Run(args) => cmd::run::run(args),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`| head`): nothing is wrong and nobody is left to tell.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Stderr may be the closed pipe itself; the status still says it failed.
            let _ = errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `true` when the error comes from writing to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn init_logging(verbose: u8, quiet_level: Option<&str>, ansi: bool, json: bool) {
    let level = match (verbose, quiet_level) {
        (0, None) => return,
        (0, Some(level)) => level,
        (1, _) => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOOPGUARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("loopguard={level}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr);
    let _ = if json {
        // One JSON object a line, the event's fields at the top level, for log pipelines.
        builder.json().flatten_event(true).try_init()
    } else {
        builder.with_ansi(ansi).try_init()
    };
}
