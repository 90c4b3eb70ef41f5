//! The subcommands: one module each, clap arguments → a library call → printing.

pub mod alerts;
pub mod config;
pub mod convert;
pub mod hook;
pub mod mcp;
pub mod replay;
pub mod run;
pub mod serve;

use clap::ValueEnum;

/// `--mode`, shared by every subcommand that decides calls (`replay`, `hook`, `mcp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// A blocked call does not run: live front ends deny it, and stop the agent when the run
    /// is ended; replay treats it as not run.
    Enforce,
    /// Nothing is blocked: what would have been done is recorded and reported.
    Observe,
}

impl From<ModeArg> for loopguard_core::Mode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Enforce => loopguard_core::Mode::Enforce,
            ModeArg::Observe => loopguard_core::Mode::Observe,
        }
    }
}
