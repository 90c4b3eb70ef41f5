//! `loopguard.onCritical: "ask"` through `loopguard mcp`: the proxy asks the user with MCP
//! elicitation, driven by the reference Python SDK's ClientSession (`mcp` from PyPI, installed
//! by scripts/setup-mcp.sh into target/mcp-venv) whose elicitation callback says yes, no,
//! declines, cancels or answers too late, and by a client without the capability, over stdio
//! and streamable HTTP (all three HTTP arrangements). Without that venv these tests fail,
//! naming the script.

mod common;
use common::{bin as loopguard, free_port, mcp_python as python, root, wait_for_port, Running};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const BLOCK: &str = "CRITICAL: Called same with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.";
const UNCHANGED: &str = "contents of /etc/hosts: unchanged";

fn fixtures() -> PathBuf {
    root().join("crates/loopguard-mcp/tests/python")
}

fn server_cmd(py: &Path) -> Vec<String> {
    vec![
        py.display().to_string(),
        fixtures().join("server.py").display().to_string(),
    ]
}

/// A config file with `onCritical: "ask"` in `dir`.
fn ask_config(dir: &Path) -> String {
    let path = dir.join("ask.json5");
    std::fs::write(
        &path,
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "ask" } }"#,
    )
    .expect("write the config");
    path.display().to_string()
}

/// Runs client.py's `ask` scenario: `n` calls of `same`, every question answered with
/// `answer` (`none`: the client declares no elicitation capability).
fn ask_client(py: &Path, answer: &str, n: usize, target: &[String], calls: &Path) -> Value {
    let out = Command::new(py)
        .arg(fixtures().join("client.py"))
        .arg("ask")
        .args(target)
        .env("LOOPGUARD_TEST_ANSWER", answer)
        .env("LOOPGUARD_TEST_N", n.to_string())
        .env("LOOPGUARD_TEST_CALLS", calls)
        .stderr(Stdio::inherit())
        .output()
        .expect("run client.py");
    assert!(
        out.status.success(),
        "client.py ask ({answer}) failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("client.py prints JSON")
}

fn stdio_proxy(extra: &[&str], server: &[String]) -> Vec<String> {
    let mut v = vec!["--".to_owned(), loopguard().to_owned(), "mcp".to_owned()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v.push("--".to_owned());
    v.extend(server.iter().cloned());
    v
}

fn server_calls(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| l.starts_with("same ")).count())
        .unwrap_or(0)
}

fn texts(call: &Value) -> Vec<&str> {
    call["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("text"))
        .collect()
}

/// What the ladder gives 25 identical calls with identical results under `onCritical: "ask"`:
/// calls 1-20 run; the 21st is put to the user once (when the client can be asked), and runs
/// only on a yes; the 22nd, the run's next critical, ends the run, and every later call is
/// refused with the run's end. Returns how many calls ran.
fn assert_ladder(result: &Value, asked: bool, yes: bool) -> usize {
    let calls = result["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 25);
    for (i, c) in calls[..20].iter().enumerate() {
        assert_eq!(c["isError"], false, "call {} runs", i + 1);
        assert_eq!(texts(c)[0], UNCHANGED, "call {}", i + 1);
    }
    let questions = result["questions"].as_array().expect("questions");
    if asked {
        assert_eq!(questions.len(), 1, "one question in the run: {questions:?}");
        let q = &questions[0];
        assert_eq!(q["after_calls"], 20, "asked about the 21st call");
        assert_eq!(q["mode"], "form");
        let message = q["message"].as_str().expect("message");
        for part in ["`same`", BLOCK, "Run it anyway?"] {
            assert!(
                message.contains(part),
                "{part:?} in the question: {message}"
            );
        }
        assert_eq!(q["schema"]["properties"]["run"]["type"], "boolean");
        assert_eq!(q["schema"]["required"], serde_json::json!(["run"]));
    } else {
        assert!(questions.is_empty(), "nobody is asked: {questions:?}");
    }
    let c21 = &calls[20];
    if yes {
        assert_eq!(c21["isError"], false, "the user let call 21 run");
        assert_eq!(texts(c21), vec![UNCHANGED]);
    } else {
        assert_eq!(c21["isError"], true, "call 21 is refused");
        assert_eq!(texts(c21), vec![BLOCK]);
    }
    for (i, c) in calls[21..].iter().enumerate() {
        assert_eq!(c["isError"], true, "call {} is refused", i + 22);
        let t = texts(c);
        assert_eq!(t.len(), 1);
        assert!(t[0].starts_with("CRITICAL: "), "call {}: {t:?}", i + 22);
    }
    let ended = texts(&calls[24])[0];
    assert!(
        ended.starts_with("CRITICAL: This run was ended after a critical loop"),
        "the run is over: {ended}"
    );
    if yes {
        21
    } else {
        20
    }
}

/// A yes over stdio: the asked call reaches the server, the next critical ends the run, and
/// the `--log` records say `ask`, then `abort`.
#[test]
fn stdio_ask_answered_yes_runs_the_call_and_the_next_critical_ends_the_run() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let log = dir.path().join("decisions.jsonl");
    let log_arg = log.display().to_string();
    let target = stdio_proxy(&["--config", &config, "--log", &log_arg], &server_cmd(&py));
    let result = ask_client(&py, "yes", 25, &target, &calls);
    let ran = assert_ladder(&result, true, true);
    assert_eq!(
        server_calls(&calls),
        ran,
        "the server saw the calls that ran"
    );
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the --log file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .filter(|r: &Value| r["type"] == "call")
        .collect();
    let words: Vec<&str> = records
        .iter()
        .map(|r| r["decision"].as_str().expect("decision"))
        .collect();
    assert_eq!(words[20], "ask", "{words:?}");
    assert!(
        words[21..].iter().all(|w| *w == "abort"),
        "the run's end: {words:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&log)
            .expect("log")
            .lines()
            .filter(|l| l.contains("\"type\":\"outcome\""))
            .count(),
        21,
        "the asked call's outcome is recorded too"
    );
}

/// Declined, cancelled and answered no: the asked call is refused with the block message and
/// never reaches the server; the next critical still ends the run.
#[test]
fn stdio_ask_declined_cancelled_or_answered_no_is_refused() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    for answer in ["decline", "cancel", "no"] {
        let calls = dir.path().join(format!("calls-{answer}"));
        let target = stdio_proxy(&["--config", &config], &server_cmd(&py));
        let result = ask_client(&py, answer, 25, &target, &calls);
        let ran = assert_ladder(&result, true, false);
        assert_eq!(
            server_calls(&calls),
            ran,
            "{answer}: the server saw 1-20 only"
        );
    }
}

/// A client without the elicitation capability is never asked: the call is refused, as a
/// block, and the run ends at the next critical.
#[test]
fn stdio_client_without_elicitation_is_refused_without_a_question() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let target = stdio_proxy(&["--config", &config], &server_cmd(&py));
    let result = ask_client(&py, "none", 25, &target, &calls);
    assert_eq!(server_calls(&calls), assert_ladder(&result, false, false));
}

/// No answer within `--ask-timeout`: the call is refused, and the late yes (the callback
/// answers after 5 s) lets nothing run.
#[test]
fn stdio_ask_unanswered_in_time_is_refused() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let target = stdio_proxy(
        &["--config", &config, "--ask-timeout", "1s"],
        &server_cmd(&py),
    );
    let result = ask_client(&py, "slow", 25, &target, &calls);
    assert_eq!(server_calls(&calls), assert_ladder(&result, true, false));
}

fn listen_proxy(args: &[String], calls: &Path) -> (Running, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(loopguard())
        .args(["mcp", "--listen", &addr])
        .args(args)
        .env("LOOPGUARD_TEST_CALLS", calls)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the proxy");
    let running = Running(child);
    wait_for_port(port);
    (running, format!("http://{addr}/mcp"))
}

fn http_server(py: &Path, calls: &Path) -> (Running, String) {
    let port = free_port();
    let child = Command::new(py)
        .arg(fixtures().join("server.py"))
        .args(["--http", &port.to_string()])
        .env("LOOPGUARD_TEST_CALLS", calls)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the HTTP server");
    let running = Running(child);
    wait_for_port(port);
    (running, format!("http://127.0.0.1:{port}/mcp"))
}

/// `--listen ADDR -- COMMAND`: the question goes out on the call's SSE stream, the answer
/// comes back as its own POST; each client is a new session (and server process).
#[test]
fn http_listener_asks_on_the_call_stream() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let mut args = vec!["--config".to_owned(), config];
    args.push("--".to_owned());
    args.extend(server_cmd(&py));
    let (_proxy, url) = listen_proxy(&args, &calls);
    let target = ["--url".to_owned(), url];
    let mut seen = 0;
    for (answer, asked, yes) in [
        ("yes", true, true),
        ("decline", true, false),
        ("none", false, false),
    ] {
        seen += assert_ladder(&ask_client(&py, answer, 25, &target, &calls), asked, yes);
        assert_eq!(server_calls(&calls), seen, "after the {answer} client");
    }
}

/// `--upstream URL --listen ADDR`: the proxy answers the asked call with its own SSE stream
/// (the question, then the upstream's answer or the refusal); the initialize request's
/// capability reaches the session the upstream starts.
#[test]
fn http_upstream_proxy_asks_on_the_call_stream() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let (_server, upstream) = http_server(&py, &calls);
    let args = [
        "--config".to_owned(),
        config,
        "--upstream".to_owned(),
        upstream,
    ];
    let (_proxy, url) = listen_proxy(&args, &calls);
    let target = ["--url".to_owned(), url];
    let mut seen = 0;
    for (answer, asked, yes) in [
        ("yes", true, true),
        ("no", true, false),
        ("none", false, false),
    ] {
        seen += assert_ladder(&ask_client(&py, answer, 25, &target, &calls), asked, yes);
        assert_eq!(server_calls(&calls), seen, "after the {answer} client");
    }
}

/// `--upstream URL` without `--listen`: a stdio client asked, the call sent on over HTTP.
#[test]
fn stdio_client_to_http_upstream_is_asked() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ask_config(dir.path());
    let calls = dir.path().join("calls");
    let (_server, upstream) = http_server(&py, &calls);
    let target = vec![
        "--".to_owned(),
        loopguard().to_owned(),
        "mcp".to_owned(),
        "--config".to_owned(),
        config,
        "--upstream".to_owned(),
        upstream,
    ];
    let mut seen = 0;
    for (answer, asked, yes) in [("yes", true, true), ("decline", true, false)] {
        seen += assert_ladder(&ask_client(&py, answer, 25, &target, &calls), asked, yes);
        assert_eq!(server_calls(&calls), seen, "after the {answer} client");
    }
}
