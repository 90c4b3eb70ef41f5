//! `loopguard serve`'s alerts end to end: a real receiver on 127.0.0.1 (a plain HTTP server
//! in a thread) gets one alert per loop, however many calls are blocked after it; one
//! configured in the config file (`loopguard.alerts`, Slack's shape) too; and a receiver
//! that is down changes no decision.

mod serve_support;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serve_support::*;

/// A looping session: 40 identical calls; the decisions.
fn run_loop(agent: &ureq::Agent, server: &Serve, session: &str) -> Vec<String> {
    let mut decisions = Vec::new();
    for _ in 0..40 {
        let call = format!(
            r#"{{"type":"call","session":"{session}","agent":"bot","tool":"read","args":{{"p":1}}}}"#
        );
        let answer = post_json(agent, &server.url("/v1/events"), call.as_bytes());
        assert_eq!(answer.status, 200, "{}", answer.body);
        decisions.push(answer.json()["decision"].as_str().unwrap().to_string());
        let outcome = format!(
            r#"{{"type":"outcome","session":"{session}","agent":"bot","tool":"read","args":{{"p":1}},"result":"x"}}"#
        );
        post_json(agent, &server.url("/v1/events"), outcome.as_bytes());
    }
    decisions
}

fn wait_for(bodies: &Arc<Mutex<Vec<serde_json::Value>>>, n: usize) {
    let start = Instant::now();
    while bodies.lock().unwrap().len() < n && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn one_alert_per_loop_reaches_a_webhook_and_the_configs_slack_target() {
    let (hook, hook_bodies) = webhook_receiver();
    let (slack, slack_bodies) = webhook_receiver();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("openclaw.json5");
    std::fs::write(
        &config,
        format!(r#"{{ tools: {{ loopDetection: {{ enabled: true }} }}, loopguard: {{ alerts: [ {{ url: "{slack}", format: "slack", on: ["block"] }} ] }} }}"#),
    )
    .unwrap();
    let server = Serve::start(&[
        "--alert-webhook",
        &hook,
        "--config",
        config.to_str().unwrap(),
    ]);
    let agent = agent();
    let decisions = run_loop(&agent, &server, "looping");
    let blocks = decisions.iter().filter(|d| *d == "block").count();
    assert!(blocks > 1, "{decisions:?}");
    wait_for(&hook_bodies, 1);
    wait_for(&slack_bodies, 1);
    // Give a second alert time to arrive, were one sent.
    std::thread::sleep(Duration::from_millis(500));
    let hooks = hook_bodies.lock().unwrap().clone();
    assert_eq!(
        hooks.len(),
        1,
        "one alert for {blocks} blocked calls: {hooks:#?}"
    );
    assert_eq!(
        (
            hooks[0]["event"].as_str(),
            hooks[0]["session"].as_str(),
            hooks[0]["agent"].as_str()
        ),
        (Some("block"), Some("looping"), Some("bot"))
    );
    let slacks = slack_bodies.lock().unwrap().clone();
    assert_eq!(slacks.len(), 1, "{slacks:#?}");
    assert!(
        slacks[0]["text"]
            .as_str()
            .unwrap()
            .contains("loopguard blocked a loop"),
        "{}",
        slacks[0]
    );
    // A second loop is a second alert.
    run_loop(&agent, &server, "another");
    wait_for(&hook_bodies, 2);
    wait_for(&slack_bodies, 2);
    assert_eq!(hook_bodies.lock().unwrap().len(), 2);
    assert_eq!(slack_bodies.lock().unwrap().len(), 2);
    let metrics = get(&agent, &server.url("/metrics")).body;
    assert!(
        metrics.contains("loopguard_alerts_delivered_total 4"),
        "{metrics}"
    );
}

/// The hook endpoints alert as `POST /v1/events` does: a Claude Code loop posted to
/// `/v1/hooks/claude-code` is one alert, labelled with the agent, however many calls are
/// denied.
#[test]
fn a_loop_posted_to_a_hook_endpoint_is_one_alert() {
    let (hook, hook_bodies) = webhook_receiver();
    let server = Serve::start(&["--alert-webhook", &hook]);
    let agent = agent();
    let mut denied = 0;
    for i in 0..25 {
        let pre = format!(
            r#"{{"session_id":"cc","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"make"}},"tool_use_id":"t{i}"}}"#
        );
        let answer = post_json(&agent, &server.url("/v1/hooks/claude-code"), pre.as_bytes());
        assert_eq!(answer.status, 200, "{}", answer.body);
        if answer.body.contains("\"deny\"") {
            denied += 1;
            continue;
        }
        let post = format!(
            r#"{{"session_id":"cc","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{{"command":"make"}},"tool_use_id":"t{i}","tool_response":{{"stdout":"error","stderr":"","interrupted":false}}}}"#
        );
        post_json(
            &agent,
            &server.url("/v1/hooks/claude-code"),
            post.as_bytes(),
        );
    }
    assert_eq!(denied, 5, "denied from the 21st call on");
    wait_for(&hook_bodies, 1);
    std::thread::sleep(Duration::from_millis(500));
    let bodies = hook_bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    assert_eq!(
        (
            bodies[0]["event"].as_str(),
            bodies[0]["session"].as_str(),
            bodies[0]["agent"].as_str(),
            bodies[0]["tool"].as_str()
        ),
        (Some("block"), Some("cc"), Some("claude-code"), Some("Bash"))
    );
}

/// A spent budget (`loopguard.budgets`) is a `budget` alert, once, to the targets that ask
/// for it: calls that all differ, so no loop detector is involved.
#[test]
fn a_spent_budget_is_one_budget_alert() {
    let (hook, hook_bodies) = webhook_receiver();
    let (blocks_only, blocks_only_bodies) = webhook_receiver();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("openclaw.json5");
    std::fs::write(
        &config,
        format!(r#"{{ tools: {{ loopDetection: {{ enabled: true }} }}, loopguard: {{ budgets: {{ callsPerSession: 5 }}, alerts: [ {{ url: "{hook}", on: ["budget"] }}, {{ url: "{blocks_only}", on: ["block"] }} ] }} }}"#),
    )
    .unwrap();
    let server = Serve::start(&["--config", config.to_str().unwrap()]);
    let agent = agent();
    let mut decisions = Vec::new();
    for i in 0..8 {
        let call = format!(
            r#"{{"type":"call","session":"spender","agent":"bot","tool":"read","args":{{"p":{i}}}}}"#
        );
        let answer = post_json(&agent, &server.url("/v1/events"), call.as_bytes());
        assert_eq!(answer.status, 200, "{}", answer.body);
        let d = answer.json();
        decisions.push((
            d["decision"].as_str().unwrap().to_string(),
            d["detector"].as_str().map(str::to_string),
        ));
        let outcome = format!(
            r#"{{"type":"outcome","session":"spender","agent":"bot","tool":"read","args":{{"p":{i}}},"result":"r{i}"}}"#
        );
        post_json(&agent, &server.url("/v1/events"), outcome.as_bytes());
    }
    let budget_blocks = decisions
        .iter()
        .filter(|(d, det)| d == "block" && det.as_deref() == Some("budget"))
        .count();
    assert!(budget_blocks >= 2, "{decisions:?}");
    wait_for(&hook_bodies, 1);
    std::thread::sleep(Duration::from_millis(500));
    let hooks = hook_bodies.lock().unwrap().clone();
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    assert_eq!(
        (hooks[0]["event"].as_str(), hooks[0]["detector"].as_str()),
        (Some("budget"), Some("budget")),
        "{}",
        hooks[0]
    );
    assert!(
        blocks_only_bodies.lock().unwrap().is_empty(),
        "a target on [\"block\"] gets no budget alert"
    );
}

#[test]
fn a_receiver_that_is_down_changes_no_decision() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let with = Serve::start(&["--alert-webhook", &format!("http://{closed}/alerts")]);
    let without = Serve::start(&[]);
    let agent = agent();
    assert_eq!(
        run_loop(&agent, &with, "s"),
        run_loop(&agent, &without, "s")
    );
    // The refused deliveries are retried, then counted as failed, while decisions went on.
    let start = Instant::now();
    loop {
        let metrics = get(&agent, &with.url("/metrics")).body;
        if metrics.contains("loopguard_alerts_failed_total 1") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{metrics}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_wrong_alert_in_the_config_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("openclaw.json5");
    std::fs::write(
        &config,
        r#"{ loopguard: { alerts: [ { url: "ftp://x", format: "teams" } ] } }"#,
    )
    .unwrap();
    let err = Serve::try_start(&["--config", config.to_str().unwrap()])
        .err()
        .expect("refused");
    assert!(err.contains("loopguard.alerts[0].url"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["serve", "--alert-webhook", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--alert-webhook \"nope\""));
}
