//! `loopguard alerts deliver`: delivers the alerts the hooks spooled beside their state
//! database. The hook starts it, detached, when it spools an alert or finds one due; it can
//! also be run by hand.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use loopguard_hook::paths::Env;
use loopguard_hook::HookOptions;

/// `loopguard alerts …`
#[derive(Subcommand)]
pub enum AlertsCommand {
    /// Deliver the alerts waiting in the hooks' spool (one try each; a failed one stays for
    /// a later try). Each outcome is printed and written to the hook's log; exits 1 when
    /// one was given up.
    Deliver(DeliverArgs),
}

/// Options of `loopguard alerts deliver`.
#[derive(clap::Args)]
pub struct DeliverArgs {
    /// The hook's state database, whose spool (`DB.alerts/`) is delivered (default: the
    /// hook's default, $XDG_STATE_HOME/loopguard/state.sqlite3).
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
}

/// Runs `loopguard alerts …`.
pub fn run(cmd: AlertsCommand) -> Result<ExitCode> {
    match cmd {
        AlertsCommand::Deliver(args) => {
            let opts = HookOptions {
                state: args.state,
                env: Env::from_process(),
                ..HookOptions::default()
            };
            let outcomes = loopguard_hook::deliver_alerts(&opts)?;
            for o in &outcomes {
                println!("{}", o.log_line());
            }
            Ok(if outcomes.iter().any(|o| o.is_failure()) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}
