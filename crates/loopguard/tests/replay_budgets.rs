//! Budgets in replay: a Claude Code transcript with a sub-agent's sidechain, replayed with
//! `loopguard.budgets`, shows the parent session's budget: the sub-agent's calls (its own
//! session, `SESSION/<agentId>`, linked to the transcript's as the hook links it, and its own
//! run, `sidechain-<agentId>`) count toward `callsPerSession`, while `callsPerRun` counts
//! each run's own calls. The transcript is the hand-written Claude Code fixture of
//! `tests/fixtures/transcripts/claude-code/healthy.jsonl` (Claude Code 2.0.46's shape).

use std::path::Path;
use std::process::Command;

#[test]
fn a_sidechain_counts_toward_the_sessions_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--config"])
        .arg(root.join("tests/fixtures/budgets/session-and-run.json5"))
        .arg(root.join("tests/fixtures/transcripts/claude-code/healthy.jsonl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            format!(
                "{} {} {} {} {}",
                d["session"].as_str().unwrap(),
                d["run"].as_str().unwrap(),
                d["tool"].as_str().unwrap(),
                d["decision"].as_str().unwrap(),
                d["detector"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            "healthy run-1 Glob allow -",
            "healthy run-1 Read allow -",
            "healthy run-1 Read allow -",
            // The sub-agent's call: its own session and run, counted for the parent's (4 of 6).
            "healthy/7c1d2e3f sidechain-7c1d2e3f Grep allow -",
            // The fourth call of run-1 reaches 80% of callsPerRun (4).
            "healthy run-1 Task warn budget",
            // The fifth is past it.
            "healthy run-1 mcp__github__get_issue block budget",
            // A new run: its own count, but the session's sixth call (sub-agent included)
            // reaches 80% of callsPerSession (6).
            "healthy run-2 Edit warn budget",
        ]
    );
}
