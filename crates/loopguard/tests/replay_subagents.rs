//! Sub-agents in an event stream (`parentSession`, docs/events.md), replayed by the binary:
//! a sub-agent's session keeps its own loop state (its loop is stopped there, and the
//! parent's identical call is not part of it), while the parent's `callsPerSession` budget
//! counts the sub-agent's calls. Without a budget the link changes no decision.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// A parent (`task`) that reads twice, then a sub-agent (`task/a1`) that runs the same
/// failing test 22 times, then the parent running that test itself three times.
fn stream(with_parent: bool) -> String {
    let mut lines = Vec::new();
    let mut push = |session: &str, n: usize, tool: &str, args: Value, result: &str| {
        let mut call = json!({"type":"call","session":session,"run":"r1","callId":format!("{session}-{n}"),"tool":tool,"args":args});
        if with_parent && session != "task" {
            call["parentSession"] = json!("task");
        }
        let mut outcome = call.clone();
        outcome["type"] = json!("outcome");
        outcome["result"] = json!(result);
        lines.push(call.to_string());
        lines.push(outcome.to_string());
    };
    for n in 0..2 {
        push(
            "task",
            n,
            "read",
            json!({"path": format!("src/{n}.rs")}),
            "fn main() {}",
        );
    }
    for n in 0..22 {
        push(
            "task/a1",
            n,
            "exec",
            json!({"command":"npm test"}),
            "1 failing",
        );
    }
    for n in 2..5 {
        push(
            "task",
            n,
            "exec",
            json!({"command":"npm test"}),
            "1 failing",
        );
    }
    lines.join("\n") + "\n"
}

/// `replay --json` of `events` with `config`: each call's session, decision and detector.
fn replay(dir: &Path, config: &str, events: &str) -> Vec<(String, String, String)> {
    let cfg = dir.join("config.json5");
    std::fs::write(&cfg, config).unwrap();
    let file = dir.join("events.jsonl");
    std::fs::write(&file, events).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--mode", "enforce", "--config"])
        .arg(&cfg)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            (
                d["session"].as_str().unwrap().to_string(),
                d["decision"].as_str().unwrap().to_string(),
                d["detector"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_parent_counts_its_subagents_calls_while_each_keeps_its_own_loop_state() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 24 } } }"#;
    let calls = replay(dir.path(), config, &stream(true));
    assert_eq!(calls.len(), 27);
    let sub: Vec<_> = calls[2..24].iter().collect();
    assert!(sub.iter().all(|(s, ..)| s == "task/a1"));
    // The sub-agent's loop is its own: OpenClaw's warning at its 11th identical call (the
    // engine's warnings leave no room for the budget's at 80%, which its parent gives), and
    // the block at its 21st, within the session's budget (2 + 20 = 22 of 24).
    assert_eq!(sub[10].1, "warn", "{sub:?}");
    assert_ne!(sub[10].2, "budget");
    assert_eq!(sub[20].1, "block", "{sub:?}");
    assert_ne!(sub[20].2, "budget", "a loop, not the budget: {sub:?}");
    // The parent's own state: the same test run by the parent is not the sub-agent's loop;
    // its session counted the sub-agent's 20 calls that ran, so its budget warns at once
    // (2 + 20 + 1 = 23 of 24) and refuses its third call (25 > 24).
    let parent: Vec<_> = calls[24..]
        .iter()
        .map(|(s, d, det)| format!("{s} {d} {det}"))
        .collect();
    assert_eq!(
        parent,
        ["task warn budget", "task allow -", "task block budget"]
    );
}

#[test]
fn without_a_budget_the_parent_link_changes_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    let config = "{ tools: { loopDetection: { enabled: true } } }";
    let linked = replay(dir.path(), config, &stream(true));
    let plain = replay(dir.path(), config, &stream(false));
    assert_eq!(linked, plain);
    // The sub-agent's loop is blocked in its session; the parent's calls are all allowed.
    assert_eq!(linked[22].0, "task/a1");
    assert_eq!(linked[22].1, "block");
    assert!(linked[24..]
        .iter()
        .all(|(s, d, _)| s == "task" && d == "allow"));
}
