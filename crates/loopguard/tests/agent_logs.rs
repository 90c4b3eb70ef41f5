//! Replay of the session logs the real agent CLIs write while loopguard guards them: each
//! CLI (installed by scripts/setup-agents.sh) runs the standard loop against the scripted
//! model of agents_e2e.rs, under `loopguard hook install AGENT`; then `loopguard replay
//! --json` reads the session log the CLI itself wrote (its format recognised from its
//! content) and must decide as the hook did live: the same 25 calls, the first warning at
//! call 11, calls 21 to 25 blocked (the hook denied them: replay reads loopguard's own deny
//! text as a block, not as a new outcome), and the same counts as `loopguard status` kept
//! for the session.
//!
//! With `LOOPGUARD_SAVE_AGENT_LOGS=DIR`, each log is also copied to `DIR/AGENT.jsonl` (how
//! the fixtures of tests/fixtures/transcripts/ were made).

mod agent_e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent_e2e::{loopguard, run_with_timeout, Cli, ModelServer, Request, Trial, CALLS};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(600);

/// Every `.jsonl` file under `dir` (recursively), sorted.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
}

/// What one guarded run left: the session log the CLI wrote, what the model was sent,
/// and the hook's record.
struct Guarded {
    log: PathBuf,
    /// The tool results of the longest turn request (every call's, in order).
    last: Vec<String>,
    /// The number of results of the first turn request carrying loopguard's warning.
    warned_with: Option<usize>,
    /// `loopguard status --json` for the session.
    status: Value,
    _trial: Trial,
}

/// Runs `cli` through the standard loop with loopguard installed into `settings`, and
/// finds the session log it wrote under `logs` (relative to HOME).
fn run_guarded(cli: Cli, settings: &str, logs: &str) -> Guarded {
    let trial = Trial::new();
    let command = cli.command(&trial.counter);
    let server = ModelServer::start(move |req: &Request| cli.answer(req, &command));
    cli.configure(&trial.home, server.port);
    trial.install(cli, settings);
    let finished = run_with_timeout(cli.cmd(&trial, server.port), LIMIT);
    assert!(!finished.killed, "{cli:?} was killed at the time limit");
    let mut found = Vec::new();
    jsonl_files(&trial.home.join(logs), &mut found);
    assert_eq!(
        found.len(),
        1,
        "{cli:?}: expected one session log under {logs}, found {found:?}; stderr: {}",
        String::from_utf8_lossy(&finished.output.stderr)
    );
    let log = found.remove(0);
    if let Some(dir) = std::env::var_os("LOOPGUARD_SAVE_AGENT_LOGS") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&log, dir.join(format!("{}.jsonl", cli.hook()))).unwrap();
    }
    let turns: Vec<(Vec<String>, String)> = server
        .requests()
        .into_iter()
        .filter(|r| cli.is_turn(r))
        .map(|r| (cli.results(&r.body), r.body.to_string()))
        .collect();
    let last = turns
        .iter()
        .map(|(t, _)| t)
        .max_by_key(|t| t.len())
        .cloned()
        .unwrap_or_default();
    // Where the agent shows hook context differs (in the result, beside it, as a message
    // of its own): the first turn request carrying it anywhere.
    let warned_with = turns
        .iter()
        .find(|(_, body)| body.contains("loopguard: WARNING"))
        .map(|(t, _)| t.len());
    let status = |extra: &[&str]| {
        let out = Command::new(loopguard())
            .args(["status", "--json", "--events", "100", "--state"])
            .arg(&trial.state)
            .args(extra)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    let list = status(&[]);
    let ended = list["ended"].as_array().and_then(|e| e.first()).cloned();
    let status = match ended {
        Some(e) => e,
        None => {
            let id = list["sessions"][0]["sessionId"]
                .as_str()
                .unwrap_or_default();
            status(&[id])
        }
    };
    Guarded {
        log,
        last,
        warned_with,
        status,
        _trial: trial,
    }
}

/// `loopguard replay --json FILE`: the decision of each call, in order.
fn replayed_calls(log: &Path) -> Vec<Value> {
    let out = Command::new(loopguard())
        .args(["replay", "--json"])
        .arg(log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "replay of {} failed: {}\n{stdout}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .collect()
}

/// A call's decision as the hook's log names it (`warn-quiet` is a warning the model was
/// not shown, which replay reports as `warn` with `emitted: false`).
fn logged(decision: &str) -> &str {
    match decision {
        "warn-quiet" => "warn",
        d => d,
    }
}

fn check(cli: Cli, settings: &str, logs: &str) {
    let g = run_guarded(cli, settings, logs);
    let calls = replayed_calls(&g.log);
    let decisions: Vec<&str> = calls
        .iter()
        .map(|d| d["decision"].as_str().unwrap_or("?"))
        .collect();
    // Live, as the model saw it: every call's result, the warning with result 11, the
    // block (the detection message instead of a result) from call 21.
    assert_eq!(g.last.len(), CALLS, "{cli:?}: {:?}", g.last);
    assert_eq!(g.warned_with, Some(11), "{cli:?}");
    assert_eq!(calls.len(), g.last.len(), "{cli:?}: {decisions:?}");
    for (i, (d, seen)) in calls.iter().zip(&g.last).enumerate() {
        let blocked_live = seen.contains(cli.blocked());
        assert_eq!(blocked_live, i + 1 > 20, "{cli:?} call {}: {seen}", i + 1);
        assert_eq!(
            d["decision"] == "block",
            blocked_live,
            "{cli:?} call {}: replay {d} vs live {seen}",
            i + 1
        );
    }
    let first_shown = calls
        .iter()
        .position(|d| d["decision"] == "warn" && d["emitted"] == true);
    assert_eq!(first_shown, Some(10), "{cli:?}: {decisions:?}");
    // The hook's own record: an ended session's counts, or a live session's last logged
    // call decisions, which the replay's last ones must equal call for call.
    if g.status.get("calls").is_some() {
        assert_eq!(g.status["calls"], CALLS, "{}", g.status);
        assert_eq!(g.status["blocks"], CALLS - 20, "{}", g.status);
        let warnings = decisions.iter().filter(|d| **d == "warn").count();
        assert_eq!(g.status["warnings"], warnings, "{}", g.status);
    } else {
        let live: Vec<&str> = g.status["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["decision"].as_str())
            .filter(|d| matches!(*d, "allow" | "warn" | "warn-quiet" | "block"))
            .map(logged)
            .collect();
        assert!(live.len() >= 5, "{cli:?}: {}", g.status);
        assert_eq!(
            live[..],
            decisions[decisions.len() - live.len()..],
            "{cli:?}: {}",
            g.status
        );
    }
}
#[test]
fn gemini_session_log_replays_as_decided_live() {
    check(Cli::Gemini, "settings.json", ".gemini/tmp");
}

#[test]
fn qwen_session_log_replays_as_decided_live() {
    check(Cli::Qwen, "settings.json", ".qwen/projects");
}

#[test]
fn copilot_session_log_replays_as_decided_live() {
    check(
        Cli::Copilot,
        "hooks/loopguard.json",
        ".copilot/session-state",
    );
}

#[test]
fn factory_session_log_replays_as_decided_live() {
    check(Cli::Factory, "settings.json", ".factory/sessions");
}

#[test]
fn codex_rollout_replays_as_decided_live() {
    check(Cli::Codex, "hooks.json", ".codex/sessions");
}
