//! `loopguard run -- CMD…`: wrap a headless agent run; exit non-zero with a JSON verdict
//! when loopguard refused its calls or ended it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// `loopguard run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// Write the JSON verdict to this file instead of standard output (the agent's own
    /// output stays on standard output).
    #[arg(long, value_name = "FILE")]
    pub verdict: Option<PathBuf>,
    /// The agent's command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Runs the command; prints (or writes) the verdict; exits 3 when a loop ended the run, 2
/// when calls were refused, else with the agent's own status.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let verdict = loopguard_hook::wrap::run_wrapped(&args.command)?;
    let json = serde_json::to_string(&verdict)?;
    match &args.verdict {
        Some(path) => std::fs::write(path, format!("{json}\n"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        None => println!("{json}"),
    }
    Ok(ExitCode::from(verdict.exit_code()))
}
