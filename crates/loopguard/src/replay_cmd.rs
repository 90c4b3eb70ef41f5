//! `loopguard replay`: replay a recorded session and explain every loop in it.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use loopguard_core::config::OpenClawConfig;
use loopguard_core::Mode;
use loopguard_replay::{replay, Output, ReplayError, Replayer};

#[derive(clap::Args)]
pub struct ReplayArgs {
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
pub enum ModeArg {
    Enforce,
    Observe,
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

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
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
