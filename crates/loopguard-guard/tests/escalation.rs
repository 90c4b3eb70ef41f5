//! The escalation ladder (`loopguard.onCritical`) and the budgets (`loopguard.budgets`)
//! through the guard, as every front end applies events: decided from the config file,
//! and kept across a real SQLite store (the session's entry is loaded and saved around
//! every event, so the ladder's rung and the budget counts must survive it).

use std::time::Duration;

use loopguard_core::OpenClawConfig;
use loopguard_guard::{open_store, Guard};
use serde_json::Value;

fn sqlite_guard(dir: &tempfile::TempDir, config: &str) -> Guard {
    let db = dir.path().join("state.sqlite3");
    let store = open_store(
        &format!("sqlite:{}", db.display()),
        Duration::from_secs(3600),
    )
    .unwrap();
    let config = OpenClawConfig::from_json5(config).unwrap().config;
    Guard::builder().config(config).store(store).build()
}

fn apply(guard: &Guard, line: &str) -> Value {
    serde_json::from_slice(&guard.apply_line(None, line.as_bytes()).unwrap()).unwrap()
}

/// One call and, unless it is refused, its outcome; the call's record as
/// `decision:detector`.
fn step(guard: &Guard, run: &str, i: usize, tool: &str, path: &str) -> String {
    let call = format!(
        r#"{{"type":"call","session":"s","run":"{run}","callId":"c{i}","tool":"{tool}","args":{{"path":"{path}"}}}}"#
    );
    let d = apply(guard, &call);
    let decision = d["decision"].as_str().unwrap().to_string();
    if decision != "block" && decision != "abort" {
        let outcome = format!(
            r#"{{"type":"outcome","session":"s","run":"{run}","callId":"c{i}","tool":"{tool}","args":{{"path":"{path}"}},"result":"same"}}"#
        );
        // An asked call's outcome (the user let it run, or the host refused it and reported
        // the refusal) is absorbed as a blocked call's: the loop's streak is unchanged.
        let want = if decision == "ask" {
            "ignored"
        } else {
            "recorded"
        };
        assert_eq!(apply(guard, &outcome)["decision"], want);
    }
    format!("{decision}:{}", d["detector"].as_str().unwrap_or("-"))
}

/// `ask`: the first critical asks; the call runs (its outcome is absorbed as a blocked
/// call's), the loop goes on, and the next critical ends the run; every later
/// call of the run is refused with the run's end. Another run starts at the bottom.
#[test]
fn ask_then_the_loop_goes_on_then_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let guard = sqlite_guard(
        &dir,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{onCritical:"ask"}}"#,
    );
    let got: Vec<String> = (1..=24)
        .map(|i| step(&guard, "r1", i, "read", "/a"))
        .collect();
    assert!(got[..10].iter().all(|d| d == "allow:-"), "{got:?}");
    assert_eq!(got[10], "warn:generic_repeat");
    assert_eq!(got[20], "ask:generic_repeat");
    assert_eq!(got[21], "abort:generic_repeat");
    assert_eq!(got[22], "abort:generic_repeat");
    let d = apply(
        &guard,
        r#"{"type":"call","session":"s","run":"r1","callId":"x","tool":"write","args":{"path":"/b"}}"#,
    );
    assert_eq!(d["decision"], "abort", "{d}");
    assert_eq!(
        d["message"],
        "CRITICAL: This run was ended after a critical loop (generic_repeat); no more tool calls run in it. Stop calling tools and report the task as failed."
    );
    // A new run of the same session is asked again first.
    let got: Vec<String> = (1..=22)
        .map(|i| step(&guard, "r2", 100 + i, "read", "/a"))
        .collect();
    assert_eq!(got[20], "ask:generic_repeat", "{got:?}");
    assert_eq!(got[21], "abort:generic_repeat");
    let info = guard.session(None, "s").unwrap().unwrap();
    assert_eq!(info.stats.aborts, 5, "{:?}", info.stats);
}

/// `end-run`: the first critical ends the run.
#[test]
fn end_run_at_the_first_critical() {
    let dir = tempfile::tempdir().unwrap();
    let guard = sqlite_guard(
        &dir,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{onCritical:"end-run"}}"#,
    );
    let got: Vec<String> = (1..=22)
        .map(|i| step(&guard, "r", i, "read", "/a"))
        .collect();
    assert_eq!(got[20], "abort:generic_repeat", "{got:?}");
    assert_eq!(got[21], "abort:generic_repeat");
}

/// The default (`block`, or no `onCritical`): a critical is a block, every time.
#[test]
fn block_is_the_default() {
    for config in [
        r#"{tools:{loopDetection:{enabled:true}}}"#,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{onCritical:"block",budgets:{callsPerSession:1000}}}"#,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let guard = sqlite_guard(&dir, config);
        let got: Vec<String> = (1..=23)
            .map(|i| step(&guard, "r", i, "read", "/a"))
            .collect();
        assert_eq!(got[20..], ["block:generic_repeat"; 3], "{config}");
    }
}

/// Budgets: per-run calls, per-tool calls and per-session calls, each a warning at 80%
/// (once) and a refusal with detector `budget` past the cap; the counts survive the store.
#[test]
fn budgets_warn_then_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let guard = sqlite_guard(
        &dir,
        r#"{tools:{loopDetection:{enabled:true}},
            loopguard:{budgets:{callsPerRun:5,callsPerSession:8,tools:{web_fetch:2}}}}"#,
    );
    // Different paths: no loop, only the budget.
    let got: Vec<String> = (1..=7)
        .map(|i| step(&guard, "r1", i, "read", &format!("/f{i}")))
        .collect();
    assert_eq!(
        got,
        [
            "allow:-",
            "allow:-",
            "allow:-",
            "warn:budget",
            "allow:-",
            "block:budget",
            "block:budget"
        ]
    );
    let d = apply(
        &guard,
        r#"{"type":"call","session":"s","run":"r1","callId":"z","tool":"read","args":{"path":"/z"}}"#,
    );
    assert_eq!(
        d["message"],
        "CRITICAL: This run has used its budget of 5 tool calls (loopguard.budgets.callsPerRun); the call was not run. Stop calling tools and report the task as failed or ask the user for a larger budget."
    );
    assert_eq!(d["count"], 6);
    // A new run: the run's count starts again; web_fetch has its own cap (2: warned at
    // the second call); the session's cap (8) counts every run: 5 calls ran in r1.
    let got: Vec<String> = (1..=4)
        .map(|i| step(&guard, "r2", 10 + i, "web_fetch", &format!("/u{i}")))
        .collect();
    assert_eq!(
        got,
        ["allow:-", "warn:budget", "block:budget", "block:budget"],
        "{got:?}"
    );
    let got: Vec<String> = (1..=3)
        .map(|i| step(&guard, "r2", 20 + i, "read", &format!("/g{i}")))
        .collect();
    // Session: 7 ran so far (5 + 2); the 8th is warned about (80% of 8 passed while the
    // tool's warning was given), the 9th is refused.
    assert_eq!(
        got,
        ["warn:budget", "block:budget", "block:budget"],
        "{got:?}"
    );
    let d = apply(
        &guard,
        r#"{"type":"call","session":"s","run":"r3","callId":"y","tool":"read","args":{"path":"/y"}}"#,
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("loopguard.budgets.callsPerSession"),
        "{d}"
    );
}

/// Spend budgets read the events' `usage` extension: the run's tokens and cost add up,
/// 80% warns, and once the spend has reached the cap the next call is refused.
#[test]
fn spend_budgets_from_usage() {
    let dir = tempfile::tempdir().unwrap();
    let guard = sqlite_guard(
        &dir,
        r#"{tools:{loopDetection:{enabled:true}},loopguard:{budgets:{tokensPerRun:1000,costPerRun:1}}}"#,
    );
    let call = |i: usize, usage: &str| {
        let d = apply(
            &guard,
            &format!(
                r#"{{"type":"call","session":"s","run":"r","callId":"c{i}","tool":"read","args":{{"path":"/f{i}"}},"usage":{usage}}}"#
            ),
        );
        format!(
            "{}:{}",
            d["decision"].as_str().unwrap(),
            d["detector"].as_str().unwrap_or("-")
        )
    };
    assert_eq!(
        call(1, r#"{"inputTokens":300,"outputTokens":100}"#),
        "allow:-"
    );
    assert_eq!(call(2, r#"{"tokens":450}"#), "warn:budget");
    assert_eq!(call(3, r#"{"tokens":100,"cost":0.5}"#), "allow:-");
    assert_eq!(call(4, r#"{"tokens":150}"#), "block:budget");
    let d = apply(
        &guard,
        r#"{"type":"call","session":"s","run":"r2","callId":"x","tool":"read","args":{"path":"/x"},"usage":{"tokens":10,"cost":1.2}}"#,
    );
    assert_eq!(d["detector"], "budget");
    assert_eq!(
        d["message"],
        "CRITICAL: This run has used its cost budget of 1 (loopguard.budgets.costPerRun); the call was not run. Stop calling tools and report the task as failed or ask the user for a larger budget."
    );
}
