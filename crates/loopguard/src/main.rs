//! `loopguard`: find and stop tool-call loops in AI agents.

#![forbid(unsafe_code)]

mod config_check;

/// Replay allocates and frees small JSON values at a high rate; mimalloc does that several
/// times faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use loopguard_core::config::OpenClawConfig;
use loopguard_core::Mode;
use loopguard_replay::{replay, Output, ReplayError, Replayer};

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
    /// Replay a recorded event stream and explain every loop in it.
    Replay(ReplayArgs),
    /// Work with OpenClaw config files.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// An OpenClaw config file (JSON5 or JSON) with `tools.loopDetection`; without it the
    /// defaults apply (detectors off, post-compaction guard on).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// `enforce`: blocked calls do not run; `observe`: report only, as if every call ran.
    #[arg(long, value_enum, default_value_t = ModeArg::Enforce)]
    mode: ModeArg,
    /// Write one JSON decision per event instead of the summary.
    #[arg(long)]
    json: bool,
    /// The event stream (JSON Lines), or `-` for standard input.
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Enforce,
    Observe,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate a config file and print the effective loop detection settings per agent.
    Check(config_check::CheckArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        Command::Replay(args) => run_replay(args),
        Command::Config(ConfigCommand::Check(args)) => config_check::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: u8) {
    if verbose == 0 {
        return;
    }
    let level = if verbose == 1 { "info" } else { "debug" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOOPGUARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("loopguard={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .try_init();
}

/// Loads a config file for running (not checking): fatal problems stop, the rest is
/// reported on stderr and the runtime fallbacks apply.
pub(crate) fn load_config_for_run(path: &Path) -> Result<OpenClawConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let loaded = OpenClawConfig::from_json5(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let fatal: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.is_fatal_at_runtime())
        .collect();
    for d in &loaded.diagnostics {
        if !d.is_fatal_at_runtime() {
            eprintln!("{}: {d}", path.display());
        }
    }
    if !fatal.is_empty() {
        for d in &fatal {
            eprintln!("{}: {d}", path.display());
        }
        bail!(
            "{}: OpenClaw would reject this config; run `loopguard config check {}` for details",
            path.display(),
            path.display()
        );
    }
    Ok(loaded.config)
}

fn run_replay(args: ReplayArgs) -> Result<ExitCode> {
    let config = match &args.config {
        Some(p) => load_config_for_run(p)?,
        None => OpenClawConfig::default(),
    };
    let mode = match args.mode {
        ModeArg::Enforce => Mode::Enforce,
        ModeArg::Observe => Mode::Observe,
    };
    let mut replayer = Replayer::new(config, mode);
    let output = if args.json {
        Output::Json
    } else {
        Output::SummaryOnly
    };
    let stdout = io::stdout();
    let name = args.input.display().to_string();
    let result = if args.input.as_os_str() == "-" {
        replay(io::stdin().lock(), stdout.lock(), &mut replayer, output)
    } else {
        let file = File::open(&args.input).with_context(|| format!("cannot open {}", name))?;
        replay(
            BufReader::with_capacity(1 << 20, file),
            stdout.lock(),
            &mut replayer,
            output,
        )
    };
    match result {
        Ok(summary) => {
            if !args.json {
                let mode = match mode {
                    Mode::Enforce => "enforce",
                    Mode::Observe => "observe",
                };
                let text = summary.render(mode);
                let mut out = stdout.lock();
                let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
                match written {
                    Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(e.into()),
                    _ => {}
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ReplayError::Event(e)) => {
            eprintln!("error: {name}: {e}");
            if io::stderr().is_terminal() {
                eprintln!("hint: the event format is described in the README (\"Event stream\")");
            }
            Ok(ExitCode::FAILURE)
        }
        Err(ReplayError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(ReplayError::Io(e)) => Err(e).with_context(|| format!("while replaying {name}")),
    }
}
