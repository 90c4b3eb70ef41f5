//! Replays files, directories or globs as `loopguard replay` does and prints the loops of
//! each session, most expensive first.
//!
//! `cargo run -p loopguard-replay --example replay_paths -- tests/fixtures/transcripts/`

use std::path::PathBuf;

use loopguard_replay::{run::Quiet, Plan, ReplayOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let plan = Plan::new(&paths, ReplayOptions::new())?;
    for skipped in &plan.skipped {
        eprintln!("{}: skipped: {}", skipped.path.display(), skipped.reason);
    }
    let report = plan.run(&mut Quiet)?;
    for failed in report.failures() {
        eprintln!("{}", failed.failure_message().unwrap_or_default());
    }
    for s in report.summary.sessions_by_cost() {
        let (calls, tokens, _) = s.cost();
        println!(
            "{}: {} loops, {calls} calls and {tokens} tokens after their first warning",
            s.name,
            s.loops.len()
        );
    }
    if report.lost_data() {
        std::process::exit(1);
    }
    Ok(())
}
