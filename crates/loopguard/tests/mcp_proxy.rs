//! `loopguard mcp` with real components: the reference Python SDK's MCPServer and
//! ClientSession (`mcp` from PyPI, installed by scripts/setup-mcp.sh into target/mcp-venv).
//! Without that venv these tests fail, naming the script.

mod common;
use common::{bin as loopguard, free_port, mcp_python as python, root, wait_for_port, Running};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const WARNING: &str = "WARNING: You have called same 10 times with identical arguments. If this is not making progress, stop retrying and report the task as failed.";
const BLOCK: &str = "CRITICAL: Called same with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.";

fn fixtures() -> PathBuf {
    root().join("crates/loopguard-mcp/tests/python")
}

fn server_cmd(py: &Path) -> Vec<String> {
    vec![
        py.display().to_string(),
        fixtures().join("server.py").display().to_string(),
    ]
}

/// Runs the SDK client on a scenario and returns what it printed.
fn client(py: &Path, scenario: &str, target: &[String], envs: &[(&str, &Path)]) -> Value {
    let mut cmd = Command::new(py);
    cmd.arg(fixtures().join("client.py"))
        .arg(scenario)
        .args(target);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("run client.py");
    assert!(
        out.status.success(),
        "client.py {scenario} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("client.py prints JSON")
}

fn raw(py: &Path, scenario: &str, version: &str, command: &[String]) -> Value {
    let out = Command::new(py)
        .arg(fixtures().join("raw.py"))
        .args([scenario, version, "--"])
        .args(command)
        .stderr(Stdio::inherit())
        .output()
        .expect("run raw.py");
    assert!(out.status.success(), "raw.py {scenario} failed");
    serde_json::from_slice(&out.stdout).expect("raw.py prints JSON")
}

fn stdio_target(command: &[String]) -> Vec<String> {
    std::iter::once("--".to_owned())
        .chain(command.iter().cloned())
        .collect()
}

fn proxied(extra: &[&str], server: &[String]) -> Vec<String> {
    let mut v = vec![loopguard().to_owned(), "mcp".to_owned()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v.push("--".to_owned());
    v.extend(server.iter().cloned());
    v
}

/// Asserts the 25-call loop: 1-20 reach the server, the 11th carries one warning item, 21-25
/// are the block.
fn assert_loop(calls: &Value) {
    let calls = calls.as_array().expect("25 results");
    assert_eq!(calls.len(), 25);
    for (i, c) in calls.iter().enumerate() {
        let n = i + 1;
        let texts: Vec<&str> = c["texts"]
            .as_array()
            .expect("texts")
            .iter()
            .map(|t| t.as_str().expect("text"))
            .collect();
        match n {
            1..=20 => {
                assert_eq!(c["isError"], false, "call {n}");
                assert_eq!(texts[0], "contents of /etc/hosts: unchanged", "call {n}");
                if n == 11 {
                    assert_eq!(
                        texts,
                        vec!["contents of /etc/hosts: unchanged", WARNING],
                        "call 11 carries the warning"
                    );
                } else {
                    assert_eq!(texts.len(), 1, "call {n} has no warning item");
                }
            }
            _ => {
                assert_eq!(c["isError"], true, "call {n} is blocked");
                assert_eq!(texts, vec![BLOCK], "call {n}");
            }
        }
    }
}

fn server_calls(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| l.starts_with("same ")).count())
        .unwrap_or(0)
}

#[test]
fn stdio_loop_warns_at_11_blocks_at_21_and_the_server_never_sees_21() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let log = dir.path().join("decisions.jsonl");
    let log_arg = log.display().to_string();
    let target = stdio_target(&proxied(
        &["--log", &log_arg, "--name", "files"],
        &server_cmd(&py),
    ));
    let result = client(&py, "loop", &target, &[("LOOPGUARD_TEST_CALLS", &calls)]);
    assert_loop(&result);
    assert_eq!(server_calls(&calls), 20, "the server saw calls 1-20 only");

    // --log: one decision per call and per outcome, in events.md's shape.
    let text = std::fs::read_to_string(&log).expect("log written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let calls: Vec<&Value> = lines.iter().filter(|d| d["type"] == "call").collect();
    assert_eq!(calls.len(), 25);
    assert_eq!(lines.iter().filter(|d| d["type"] == "outcome").count(), 20);
    assert_eq!(calls[10]["decision"], "warn");
    assert_eq!(calls[10]["emitted"], true);
    assert_eq!(calls[20]["decision"], "block");
    assert_eq!(calls[20]["detector"], "generic_repeat");
    assert_eq!(calls[20]["message"], BLOCK);
    assert!(calls[0]["session"]
        .as_str()
        .expect("session")
        .starts_with("mcp:files:"));
}

#[test]
fn counter_tool_is_never_blocked() {
    let py = python();
    let result = client(
        &py,
        "counter",
        &stdio_target(&proxied(&[], &server_cmd(&py))),
        &[],
    );
    let calls = result.as_array().expect("results");
    assert_eq!(calls.len(), 25);
    for (i, c) in calls.iter().enumerate() {
        let n = i + 1;
        assert_eq!(c["isError"], false, "call {n} is never blocked");
        assert_eq!(
            c["texts"][0],
            format!("count {n}"),
            "call {n} reached the server"
        );
        // Repetition alone warns (generic_repeat needs no outcomes), once per bucket of ten;
        // it never blocks, because the outcomes change.
        let items = c["texts"].as_array().map_or(0, Vec::len);
        assert_eq!(items, if n == 11 || n == 21 { 2 } else { 1 }, "call {n}");
    }
}

#[test]
fn stdio_transparency_same_answers_as_direct() {
    let py = python();
    let direct = client(&py, "transparency", &stdio_target(&server_cmd(&py)), &[]);
    let through = client(
        &py,
        "transparency",
        &stdio_target(&proxied(&[], &server_cmd(&py))),
        &[],
    );
    assert_eq!(direct, through);
    // And the scenario really exercised each feature.
    assert_eq!(through["progress"].as_array().map(Vec::len), Some(3));
    assert_eq!(through["cancellation"], "cancelled");
    assert_eq!(through["after_cancel"]["texts"][0], "count 1");
    assert_eq!(through["sampling"]["texts"][0], "the model said: forty-two");
    assert_eq!(through["roots"]["texts"][0], "file:///work/project");
    assert_eq!(through["elicitation"]["texts"][0], "accept: Ana");
    assert_eq!(through["log_messages"][0]["data"], "hello from the server");
    let notifications = through["notifications"].as_array().expect("notifications");
    assert!(notifications
        .iter()
        .any(|n| n == "ToolListChangedNotification"));
    assert!(through["tools_after_change"]
        .as_array()
        .expect("tools")
        .iter()
        .any(|t| t == "added"));
    assert_eq!(
        through["resource"]["contents"][0]["text"],
        "hello, resource"
    );
    assert_eq!(
        through["completion"]["completion"]["values"],
        serde_json::json!(["print(1)", "print(2)"])
    );
    assert_eq!(through["weather"]["structuredContent"]["celsius"], 21.5);
}

#[test]
fn older_protocol_revisions_byte_for_byte_and_guarded() {
    let py = python();
    for version in ["2025-06-18", "2025-11-25"] {
        let direct = raw(&py, "listing", version, &server_cmd(&py));
        let through = raw(&py, "listing", version, &proxied(&[], &server_cmd(&py)));
        // Every answer, tools/list included, is the server's bytes.
        assert_eq!(direct, through, "revision {version}");
        assert!(through["tools/list"]
            .as_str()
            .expect("tools/list")
            .contains("\"name\":\"same\""));
        let looped = raw(&py, "loop", version, &proxied(&[], &server_cmd(&py)));
        assert_eq!(looped["negotiated"], version);
        assert_eq!(looped["calls"][10]["texts"][1], WARNING);
        assert_eq!(looped["calls"][20]["isError"], true);
        assert_eq!(looped["calls"][20]["texts"][0], BLOCK);
        assert_eq!(looped["exit"], 0, "the proxy exits as the server did");
    }
}

#[test]
fn server_crash_mid_call_is_an_error_and_the_proxy_exits_nonzero() {
    let py = python();
    let r = raw(&py, "crash", "2025-11-25", &proxied(&[], &server_cmd(&py)));
    assert_eq!(r["reply"]["error"]["code"], -32000);
    assert!(r["reply"]["error"]["message"]
        .as_str()
        .expect("message")
        .contains("exited"));
    assert_eq!(r["exit"], 3, "the proxy exits with the server's status");
    let sdk = client(
        &py,
        "crash",
        &stdio_target(&proxied(&[], &server_cmd(&py))),
        &[],
    );
    assert_eq!(sdk["outcome"], "error");
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

fn http_proxy(args: &[&str]) -> (Running, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(loopguard())
        .args(["mcp", "--listen", &addr])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the proxy");
    let running = Running(child);
    wait_for_port(port);
    (running, format!("http://{addr}/mcp"))
}

#[test]
fn streamable_http_upstream_loop_and_transparency() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let (_server, url) = http_server(&py, &calls);
    let (_proxy, proxy_url) = http_proxy(&["--upstream", &url]);
    let result = client(&py, "loop", &["--url".to_owned(), proxy_url.clone()], &[]);
    assert_loop(&result);
    assert_eq!(server_calls(&calls), 20, "the server saw calls 1-20 only");

    // Transparency over HTTP, each side against a fresh server (the counter is per process).
    let (_s1, direct_url) = http_server(&py, &dir.path().join("c1"));
    let direct = client(&py, "transparency", &["--url".to_owned(), direct_url], &[]);
    let (_s2, url2) = http_server(&py, &dir.path().join("c2"));
    let (_p2, proxy_url2) = http_proxy(&["--upstream", &url2]);
    let through = client(&py, "transparency", &["--url".to_owned(), proxy_url2], &[]);
    assert_eq!(direct, through);
    assert_eq!(through["progress"].as_array().map(Vec::len), Some(3));
    assert_eq!(through["sampling"]["texts"][0], "the model said: forty-two");
}

#[test]
fn streamable_http_listener_in_front_of_a_stdio_server() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let mut args = vec!["--".to_owned()];
    args.extend(server_cmd(&py));
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(loopguard())
        .args(["mcp", "--listen", &addr])
        .args(&args)
        .env("LOOPGUARD_TEST_CALLS", &calls)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the proxy");
    let _proxy = Running(child);
    wait_for_port(port);
    let url = format!("http://{addr}/mcp");
    assert_loop(&client(
        &py,
        "loop",
        &["--url".to_owned(), url.clone()],
        &[],
    ));
    assert_eq!(server_calls(&calls), 20);
    let direct = client(&py, "transparency", &stdio_target(&server_cmd(&py)), &[]);
    let through = client(&py, "transparency", &["--url".to_owned(), url.clone()], &[]);
    assert_eq!(direct, through, "a new session gets a new server process");
    let crashed = client(&py, "crash", &["--url".to_owned(), url], &[]);
    assert_eq!(
        crashed["outcome"], "error",
        "a crash mid-call is an error for the client"
    );
}

#[test]
fn stdio_client_to_http_upstream() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = dir.path().join("calls");
    let (_server, url) = http_server(&py, &calls);
    let target = vec![
        "--".to_owned(),
        loopguard().to_owned(),
        "mcp".to_owned(),
        "--upstream".to_owned(),
        url,
    ];
    assert_loop(&client(&py, "loop", &target, &[]));
    assert_eq!(server_calls(&calls), 20);
}

#[test]
fn shared_sqlite_store_and_session_key_see_a_loop_across_connections() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = format!("sqlite:{}", dir.path().join("mcp.sqlite3").display());
    let calls = dir.path().join("calls");
    let args = ["--store", store.as_str(), "--session-key", "alice"];
    // 15 calls on one connection, then a reconnection (a new proxy process): the loop goes on.
    let first = client_n(
        &py,
        15,
        &stdio_target(&proxied(&args, &server_cmd(&py))),
        &calls,
    );
    assert!(first.iter().all(|c| c["isError"] == false));
    let second = client_n(
        &py,
        10,
        &stdio_target(&proxied(&args, &server_cmd(&py))),
        &calls,
    );
    assert_eq!(second[4]["isError"], false, "call 20 overall");
    assert_eq!(second[5]["isError"], true, "call 21 overall is blocked");
    assert_eq!(second[5]["texts"][0], BLOCK);
    assert_eq!(server_calls(&calls), 20);
    // `loopguard status` shows the MCP session of the shared store.
    let db = dir.path().join("mcp.sqlite3");
    let status = Command::new(loopguard())
        .args(["status", "alice", "--state"])
        .arg(&db)
        .output()
        .expect("status");
    assert!(status.status.success());
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("session alice"), "{text}");
    assert!(text.contains("block        generic_repeat (20)"), "{text}");
    // It speaks of the front end that wrote the session, not of a Claude Code run, and
    // finds the repeats of the run the proxy named (the session key).
    assert!(text.contains("front end: guard events"), "{text}");
    assert!(!text.contains("Claude Code"), "{text}");
    assert!(text.contains("current run alice"), "{text}");
    assert!(
        text.contains("repeated calls in this run (engine tool names):")
            && text.contains(" calls, "),
        "{text}"
    );
    // Without the key, each connection is its own session.
    let alone = client_n(
        &py,
        10,
        &stdio_target(&proxied(&["--store", store.as_str()], &server_cmd(&py))),
        &calls,
    );
    assert!(alone.iter().all(|c| c["isError"] == false));
    // The list names each session's front end: the proxy's own session is `mcp`.
    let list = Command::new(loopguard())
        .args(["status", "--json", "--state"])
        .arg(&db)
        .output()
        .expect("status");
    assert!(list.status.success());
    let v: Value = serde_json::from_slice(&list.stdout).expect("status JSON");
    let mut fronts: Vec<(String, String)> = v["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| {
            (
                s["sessionId"].as_str().unwrap_or("").to_string(),
                s["frontEnd"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    fronts.sort();
    assert_eq!(fronts.len(), 2, "{fronts:?}");
    assert_eq!(
        (fronts[0].0.as_str(), fronts[0].1.as_str()),
        ("alice", "events")
    );
    assert!(
        fronts[1].0.starts_with("mcp:") && fronts[1].1 == "mcp",
        "{fronts:?}"
    );
    let text = Command::new(loopguard())
        .args(["status", "--state"])
        .arg(&db)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("front ends: events (1 session), mcp (1 session)"),
        "{text}"
    );
    let one = Command::new(loopguard())
        .args(["status", &fronts[1].0, "--state"])
        .arg(&db)
        .output()
        .expect("status");
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(one.contains("front end: MCP proxy"), "{one}");
    assert!(!one.contains("Claude Code"), "{one}");
}

fn client_n(py: &Path, n: usize, target: &[String], calls: &Path) -> Vec<Value> {
    let mut cmd = Command::new(py);
    cmd.arg(fixtures().join("client.py"))
        .arg("repeat")
        .args(target);
    cmd.env("LOOPGUARD_TEST_N", n.to_string())
        .env("LOOPGUARD_TEST_CALLS", calls);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("run client.py");
    assert!(out.status.success(), "client.py repeat failed");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v.as_array().expect("array").clone()
}

#[test]
fn a_bad_store_is_an_error_naming_the_option() {
    let out = Command::new(loopguard())
        .args(["mcp", "--store", "bogus:x", "--", "true"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--store bogus:x"), "{err}");
    let none = Command::new(loopguard())
        .args(["mcp"])
        .output()
        .expect("run");
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no MCP server"));
}

#[test]
fn installed_entry_runs_through_the_proxy_and_uninstall_restores_it() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mcp.json");
    let original = format!(
        "{{\n  \"mcpServers\": {{\n    \"files\": {{\n      \"command\": {},\n      \"args\": [{}]\n    }}\n  }}\n}}\n",
        serde_json::to_string(&py.display().to_string()).expect("json"),
        serde_json::to_string(&fixtures().join("server.py").display().to_string()).expect("json"),
    );
    std::fs::write(&config, &original).expect("write");
    let out = Command::new(loopguard())
        .args(["mcp", "install", "--client", "cursor", "--config"])
        .arg(&config)
        .output()
        .expect("install");
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("mcpServers.files: now runs through loopguard"),
        "{printed}"
    );
    // Start the entry exactly as the client would.
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("read")).expect("JSON");
    let entry = &installed["mcpServers"]["files"];
    assert_eq!(entry["command"], loopguard());
    let mut target = vec![
        "--".to_owned(),
        entry["command"].as_str().expect("command").to_owned(),
    ];
    target.extend(
        entry["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("arg").to_owned()),
    );
    let calls = dir.path().join("calls");
    assert_loop(&client(
        &py,
        "loop",
        &target,
        &[("LOOPGUARD_TEST_CALLS", &calls)],
    ));
    assert_eq!(server_calls(&calls), 20);
    let out = Command::new(loopguard())
        .args(["mcp", "uninstall", "--client", "cursor", "--config"])
        .arg(&config)
        .output()
        .expect("uninstall");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcpServers.files: restored"));
    assert_eq!(std::fs::read_to_string(&config).expect("read"), original);
}

#[test]
fn the_server_is_closed_when_the_client_goes_away() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pid");
    // A server that ignores both the end of its stdin and SIGTERM.
    let script = format!(
        "echo $$ > {}; trap '' TERM; while :; do sleep 1; done",
        pidfile.display()
    );
    let mut proxy = Command::new(loopguard())
        .args(["mcp", "--", "sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start the proxy");
    let start = Instant::now();
    while !pidfile.exists()
        || std::fs::read_to_string(&pidfile).map_or(true, |p| p.trim().is_empty())
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .to_owned();
    let mut stdin = proxy.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .expect("write");
    drop(stdin); // the client goes away
    let start = Instant::now();
    let status = loop {
        if let Some(status) = proxy.try_wait().expect("wait") {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the proxy did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "the proxy ended the server as asked: {status}"
    );
    // stdin closed, SIGTERM ignored, then SIGKILL: the server is gone.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still runs"
    );
}

#[test]
fn config_thresholds_apply_and_a_bad_config_is_refused() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("openclaw.json5");
    std::fs::write(
        &config,
        "{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } } }",
    )
    .expect("write");
    let config_arg = config.display().to_string();
    let calls = dir.path().join("calls");
    let results = client_n(
        &py,
        6,
        &stdio_target(&proxied(&["--config", &config_arg], &server_cmd(&py))),
        &calls,
    );
    // (Warnings below 10 are not shown: OpenClaw's buckets emit at 10, 20, ...)
    assert!(results[..5].iter().all(|r| r["isError"] == false));
    assert_eq!(results[5]["isError"], true, "blocked at the 6th call");
    assert_eq!(server_calls(&calls), 5);

    let bad = dir.path().join("bad.json5");
    std::fs::write(&bad, "{ tools: { loopDetection: { warningTreshold: 3 } } }").expect("write");
    let out = Command::new(loopguard())
        .args(["mcp", "--config"])
        .arg(&bad)
        .args(["--", "true"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json5") && err.contains("warningThreshold"),
        "{err}"
    );
}

/// JSON-RPC batches (MCP 2025-03-26) through the stdio proxy, against a real server process
/// that answers batches: ten batches with an unknown-tool call reach the server and their
/// errors are recorded; the batch with the 11th is answered whole by the proxy (the block,
/// and "not sent" for the other request) and the server never receives it.
#[test]
fn batches_are_guarded_and_a_batch_with_a_blocked_call_never_reaches_the_server() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().expect("temp dir");
    let received = dir.path().join("received.log");
    let mut proxy = Command::new(loopguard())
        .args(["mcp", "--", "python3"])
        .arg(fixtures().join("batch_server.py"))
        .arg(&received)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start loopguard mcp");
    let mut to_proxy = proxy.stdin.take().expect("stdin");
    let mut from_proxy = BufReader::new(proxy.stdout.take().expect("stdout"));
    let mut exchange = |line: &str| -> Value {
        writeln!(to_proxy, "{line}").expect("write");
        to_proxy.flush().expect("flush");
        let mut answer = String::new();
        from_proxy.read_line(&mut answer).expect("read");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    };
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    for i in 1..=10 {
        let answer = exchange(&format!(
            r#"[{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"nope","arguments":{{}}}}}},{{"jsonrpc":"2.0","method":"notifications/progress","params":{{}}}}]"#
        ));
        assert_eq!(
            answer[0]["error"]["message"], "Unknown tool: nope",
            "batch {i}: {answer}"
        );
    }
    let answer = exchange(
        r#"[{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"nope","arguments":{}}},{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"fine","arguments":{}}}]"#,
    );
    let items = answer.as_array().expect("a batch answer");
    assert_eq!(items.len(), 2, "{answer}");
    assert_eq!(items[0]["id"], 11);
    assert_eq!(items[0]["result"]["isError"], true, "{answer}");
    assert_eq!(items[1]["id"], 12);
    assert!(
        items[1]["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("not sent"),
        "{answer}"
    );
    // A batch without a call to block still goes through.
    let answer = exchange(
        r#"[{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"fine","arguments":{}}}]"#,
    );
    assert_eq!(answer[0]["result"]["content"][0]["text"], "ok", "{answer}");
    drop(to_proxy);
    let mut stderr = String::new();
    use std::io::Read;
    proxy
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let _ = proxy.wait();
    let log = std::fs::read_to_string(&received).expect("received log");
    assert_eq!(
        log.lines().count(),
        12,
        "initialize, 10 batches and the last one: {log}"
    );
    assert!(
        !log.contains(r#""id":11"#) && !log.contains(r#""id": 11"#),
        "{log}"
    );
    assert!(
        stderr.contains("blocked tools/call"),
        "the whole-batch answer is logged: {stderr}"
    );
}

/// The proxy's stderr in a 25-call loop: one line for the warning shown with call 11 and one
/// per blocked call (21-25); nothing for the warnings the de-duplication kept back (12-20),
/// no second line from the engine's own log targets, and the session written one way, named
/// after the server's `serverInfo.name`.
#[test]
fn stderr_has_one_line_per_warning_or_block_shown_and_the_rest_waits_for_v() {
    let py = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |extra: &[&str]| {
        let out = Command::new(&py)
            .arg(fixtures().join("client.py"))
            .arg("loop")
            .args(stdio_target(&proxied(extra, &server_cmd(&py))))
            .env("LOOPGUARD_TEST_CALLS", dir.path().join("calls"))
            .env("NO_COLOR", "1")
            .output()
            .expect("run client.py");
        assert!(out.status.success(), "client.py loop failed");
        assert_loop(&serde_json::from_slice(&out.stdout).expect("client.py prints JSON"));
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("loopguard"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let lines = run(&[]);
    assert_eq!(
        lines.len(),
        6,
        "one line per warning or block shown: {lines:#?}"
    );
    assert!(
        lines[0].contains("WARN") && lines[0].contains(WARNING),
        "{}",
        lines[0]
    );
    for l in &lines[1..] {
        assert!(l.contains("ERROR") && l.contains(BLOCK), "{l}");
    }
    for l in &lines {
        assert!(
            l.contains(" in mcp:loopguard-test-server:"),
            "the session is named after serverInfo.name, one way: {l}"
        );
        assert!(!l.contains("-/mcp:"), "{l}");
    }
    // -v adds the rest: the warnings kept back (calls 12-20) among them.
    let verbose = run(&["-v"]);
    let kept_back = verbose.iter().filter(|l| l.contains("not shown")).count();
    assert_eq!(kept_back, 9, "{verbose:#?}");
    // --name wins over the server's name.
    let named = run(&["--name", "files"]);
    assert!(
        named.iter().all(|l| l.contains(" in mcp:files:")),
        "{named:#?}"
    );
}

/// `mcp install` writes `loopguard` when the first `loopguard` on PATH is this very program,
/// else the absolute path of the binary that ran it; a missing config file's error states
/// its cause once.
#[test]
fn install_writes_loopguard_from_path_when_it_is_the_same_program() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("mcp.json");
    let install = |path_dir: &Path| {
        std::fs::write(
            &config,
            "{\"mcpServers\":{\"files\":{\"command\":\"npx\",\"args\":[\"-y\",\"server\"]}}}\n",
        )
        .expect("write");
        let out = Command::new(loopguard())
            .args(["mcp", "install", "--client", "cursor", "--config"])
            .arg(&config)
            .env(
                "PATH",
                std::env::join_paths([path_dir, Path::new("/usr/bin"), Path::new("/bin")])
                    .expect("PATH"),
            )
            .output()
            .expect("install");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let installed: Value =
            serde_json::from_str(&std::fs::read_to_string(&config).expect("read")).expect("JSON");
        installed["mcpServers"]["files"]["command"]
            .as_str()
            .expect("command")
            .to_owned()
    };
    let same = dir.path().join("same");
    std::fs::create_dir(&same).expect("mkdir");
    std::os::unix::fs::symlink(loopguard(), same.join("loopguard")).expect("symlink");
    assert_eq!(install(&same), "loopguard", "the same program is on PATH");

    let other = dir.path().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("loopguard"), "#!/bin/sh\nexit 0\n").expect("write");
    assert_eq!(
        install(&other),
        loopguard(),
        "another program named loopguard is not ours"
    );

    let out = Command::new(loopguard())
        .args(["mcp", "install", "--client", "cursor", "--config"])
        .arg(dir.path().join("missing.json"))
        .output()
        .expect("install");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.json"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}
