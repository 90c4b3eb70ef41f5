//! `loopguard config check`: validate a config and show what each agent gets (the report is
//! `loopguard_guard::config_check`'s).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use loopguard_guard::config_check::check_config;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The OpenClaw config file (JSON5 or JSON).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Show only the effective settings of this agent id.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// Treat warnings (auto-raised thresholds, fallbacks, ignored entries) as errors.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let name = args.file.display().to_string();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {name}"))?;
    let report = check_config(&name, &text, args.agent.as_deref(), args.strict);
    // Print errors are kept until the end: a config with errors fails even when nobody
    // reads the output (a closed pipe only ends a run that was going to succeed).
    let mut printed: std::io::Result<()> = Ok(());
    for line in &report.notes {
        printed = printed.and_then(|()| errln!("{line}"));
    }
    if let Some(verdict) = &report.verdict {
        printed = printed
            .and_then(|()| out!("{}", report.settings))
            .and_then(|()| errln!("{verdict}"));
    }
    if report.failed() {
        return Ok(ExitCode::FAILURE);
    }
    printed?;
    Ok(ExitCode::SUCCESS)
}
