//! End-to-end tests of `loopguard hook claude-code`, `hook install`/`uninstall` and
//! `status`: the real binary, fed payloads shaped as Claude Code writes them, with its
//! state database, home, state and config directories in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use loopguard_hook::store::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

const SESSION: &str = "3f1c9a52-8d0e-4b7a-9a43-0c6f2e1d7b21";

mod sandbox;
use sandbox::Sandbox;

impl Sandbox {
    /// One hook invocation with the default state location.
    fn hook(&self, payload: &Value, args: &[&str]) -> Answer {
        let mut all = vec!["hook", "claude-code"];
        all.extend_from_slice(args);
        Answer::from(self.run(&all, payload.to_string().as_bytes()))
    }

    fn status_json(&self, session: &str) -> Value {
        let out = self.run(&["status", session, "--json", "--events", "500"], b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// What the hook answered.
#[derive(Debug)]
struct Answer {
    code: i32,
    json: Option<Value>,
    stdout: String,
    stderr: String,
}

impl From<Output> for Answer {
    fn from(o: Output) -> Answer {
        let stdout = String::from_utf8(o.stdout).unwrap();
        Answer {
            code: o.status.code().unwrap_or(-1),
            json: (!stdout.trim().is_empty())
                .then(|| serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))),
            stdout,
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

impl Answer {
    /// Exit 0, nothing on stdout or stderr: Claude Code goes on as if there were no hook.
    fn assert_untouched(&self) {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        assert_eq!(self.stderr, "", "{self:?}");
    }

    /// Exit 0, nothing on stdout, one line on stderr: failed open.
    fn assert_failed_open(&self) -> &str {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        assert_eq!(self.stderr.lines().count(), 1, "{self:?}");
        assert!(self.stderr.contains("fail-open"), "{self:?}");
        &self.stderr
    }

    fn specific(&self) -> &Value {
        &self.json.as_ref().expect("a JSON answer")["hookSpecificOutput"]
    }
}

/// Payloads as Claude Code writes them.
struct Claude {
    session: String,
    cwd: PathBuf,
}

impl Claude {
    fn new(cwd: &Path) -> Claude {
        Claude {
            session: SESSION.to_string(),
            cwd: cwd.to_path_buf(),
        }
    }

    fn base(&self, event: &str) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("session_id".into(), json!(self.session));
        m.insert(
            "transcript_path".into(),
            json!(format!(
                "/home/dev/.claude/projects/-work-app/{}.jsonl",
                self.session
            )),
        );
        m.insert("cwd".into(), json!(self.cwd));
        m.insert("permission_mode".into(), json!("default"));
        m.insert("hook_event_name".into(), json!(event));
        m
    }

    fn prompt(&self, text: &str) -> Value {
        let mut m = self.base("UserPromptSubmit");
        m.insert("prompt".into(), json!(text));
        Value::Object(m)
    }

    fn pre(&self, tool: &str, input: Value, id: &str) -> Value {
        let mut m = self.base("PreToolUse");
        m.insert("tool_name".into(), json!(tool));
        m.insert("tool_input".into(), input);
        m.insert("tool_use_id".into(), json!(id));
        Value::Object(m)
    }

    fn post(&self, tool: &str, input: Value, id: &str, response: Value) -> Value {
        let mut m = self.base("PostToolUse");
        m.insert("tool_name".into(), json!(tool));
        m.insert("tool_input".into(), input);
        m.insert("tool_use_id".into(), json!(id));
        m.insert("tool_response".into(), response);
        Value::Object(m)
    }

    fn failure(&self, tool: &str, input: Value, id: &str, error: &str) -> Value {
        let mut m = self.base("PostToolUseFailure");
        m.insert("tool_name".into(), json!(tool));
        m.insert("tool_input".into(), input);
        m.insert("tool_use_id".into(), json!(id));
        m.insert("error".into(), json!(error));
        m.insert("is_interrupt".into(), json!(false));
        Value::Object(m)
    }

    fn pre_compact(&self) -> Value {
        let mut m = self.base("PreCompact");
        m.insert("trigger".into(), json!("auto"));
        m.insert("custom_instructions".into(), json!(""));
        Value::Object(m)
    }

    fn session_start(&self, source: &str) -> Value {
        let mut m = self.base("SessionStart");
        m.insert("source".into(), json!(source));
        Value::Object(m)
    }
}

fn bash(cmd: &str) -> Value {
    json!({"command": cmd, "description": "Check the service", "timeout": 120000})
}

fn bash_out(stdout: &str) -> Value {
    json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false})
}

/// A loop: warned at the eleventh identical call (ten before it), denied at the
/// twenty-first (twenty identical outcomes), with OpenClaw's default thresholds and no
/// config file at all.
#[test]
fn a_loop_is_warned_then_denied() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    sb.hook(&cc.prompt("why is the build red?"), &[])
        .assert_untouched();
    let input = bash("cargo test -p api 2>&1 | tail -5");
    let response = bash_out("test result: FAILED. 41 passed; 1 failed");
    let mut warned = Vec::new();
    let mut denied = None;
    for i in 1..=25 {
        let id = format!("toolu_01A{i:03}");
        let a = sb.hook(&cc.pre("Bash", input.clone(), &id), &[]);
        assert_eq!(a.code, 0);
        assert_eq!(a.stderr, "");
        if let Some(j) = &a.json {
            let spec = &j["hookSpecificOutput"];
            assert_eq!(spec["hookEventName"], "PreToolUse");
            if spec["permissionDecision"] == "deny" {
                denied = Some((
                    i,
                    spec["permissionDecisionReason"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                ));
                assert!(j["systemMessage"]
                    .as_str()
                    .unwrap()
                    .contains("generic_repeat"));
                break;
            }
            warned.push((i, spec["additionalContext"].as_str().unwrap().to_string()));
        }
        sb.hook(&cc.post("Bash", input.clone(), &id, response.clone()), &[])
            .assert_untouched();
    }
    assert_eq!(warned.len(), 1, "shown once per bucket of ten: {warned:?}");
    assert_eq!(warned[0].0, 11);
    assert!(
        warned[0]
            .1
            .contains("WARNING: You have called Bash 10 times with identical arguments"),
        "{warned:?}"
    );
    let (at, reason) = denied.expect("denied");
    assert_eq!(at, 21);
    assert_eq!(
        reason,
        "CRITICAL: Called Bash with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops."
    );
    // The block is sticky: the next identical call is denied too.
    let again = sb.hook(&cc.pre("Bash", input.clone(), "toolu_01B"), &[]);
    assert_eq!(again.specific()["permissionDecision"], "deny");

    // status shows the calls, the streak and the guard.
    let out = sb.run(&["status", &SESSION[..8]], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("exec"), "{text}");
    assert!(text.contains("20 identical outcomes in a row"), "{text}");
    assert!(text.contains("block"), "{text}");
    assert!(text.contains("post-compaction guard: idle"), "{text}");
    let st = sb.status_json(SESSION);
    assert_eq!(st["run"], "prompt-1");
    let decisions: Vec<_> = st["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["decision"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(decisions.iter().filter(|d| *d == "block").count(), 2);
    assert_eq!(decisions.iter().filter(|d| *d == "warn").count(), 1);
}

/// After a compaction, three identical calls with identical results stop the agent.
#[test]
fn a_loop_that_survives_compaction_stops_the_agent() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    sb.hook(&cc.prompt("deploy and wait until healthy"), &[])
        .assert_untouched();
    let input = bash("curl -s -o /dev/null -w '%{http_code}' localhost:8080/health");
    for i in 0..4 {
        let id = format!("toolu_pre{i}");
        sb.hook(&cc.pre("Bash", input.clone(), &id), &[])
            .assert_untouched();
        sb.hook(&cc.post("Bash", input.clone(), &id, bash_out("503")), &[])
            .assert_untouched();
    }
    sb.hook(&cc.pre_compact(), &[]).assert_untouched();
    sb.hook(&cc.session_start("compact"), &[])
        .assert_untouched();
    let st = sb.status_json(SESSION);
    assert_eq!(st["guard"]["armed"], true);
    let mut stopped = None;
    for i in 1..=3 {
        let id = format!("toolu_post{i}");
        sb.hook(&cc.pre("Bash", input.clone(), &id), &[])
            .assert_untouched();
        let a = sb.hook(&cc.post("Bash", input.clone(), &id, bash_out("503")), &[]);
        assert_eq!(a.code, 0);
        if let Some(j) = a.json {
            stopped = Some((i, j));
        }
    }
    let (at, j) = stopped.expect("stopped");
    assert_eq!(at, 3);
    assert_eq!(j["continue"], false);
    let reason = j["stopReason"].as_str().unwrap();
    assert!(reason.contains("compaction_loop_persisted"), "{reason}");
    assert!(reason.contains("Bash repeated 3 times"), "{reason}");
    // The stopped run stays stopped; a new prompt starts afresh.
    let a = sb.hook(&cc.pre("Bash", input.clone(), "toolu_after"), &[]);
    assert_eq!(a.specific()["permissionDecision"], "deny");
    assert_eq!(a.json.as_ref().unwrap()["continue"], false);
    sb.hook(&cc.prompt("what happened?"), &[])
        .assert_untouched();
    sb.hook(&cc.pre("Bash", input, "toolu_new_run"), &[])
        .assert_untouched();
    let text = String::from_utf8(sb.run(&["status", SESSION], b"").stdout).unwrap();
    assert!(text.contains("abort"), "{text}");
}

/// A healthy session of varied, realistic work is never touched: no output, no stderr.
#[test]
fn a_healthy_session_is_never_touched() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    sb.hook(&cc.session_start("startup"), &[])
        .assert_untouched();
    sb.hook(&cc.prompt("add a --json flag to the report command"), &[])
        .assert_untouched();
    let mut n = 0;
    let mut step = |tool: &str, input: Value, outcome: Result<Value, &str>| {
        n += 1;
        let id = format!("toolu_h{n:03}");
        sb.hook(&cc.pre(tool, input.clone(), &id), &[])
            .assert_untouched();
        let post = match outcome {
            Ok(r) => cc.post(tool, input, &id, r),
            Err(e) => cc.failure(tool, input, &id, e),
        };
        sb.hook(&post, &[]).assert_untouched();
    };
    step(
        "TodoWrite",
        json!({"todos": [{"content": "Find the report command", "status": "in_progress", "activeForm": "Finding"},
                          {"content": "Add --json", "status": "pending", "activeForm": "Adding"}]}),
        Ok(json!({"oldTodos": [], "newTodos": []})),
    );
    step(
        "Glob",
        json!({"pattern": "src/**/*.rs"}),
        Ok(
            json!({"filenames": ["src/main.rs", "src/report.rs"], "durationMs": 4, "numFiles": 2, "truncated": false}),
        ),
    );
    step(
        "Grep",
        json!({"pattern": "fn report", "output_mode": "content"}),
        Ok(
            json!({"mode": "content", "numFiles": 1, "filenames": [], "content": "src/report.rs:12:fn report(", "numLines": 1}),
        ),
    );
    for (i, file) in [
        "src/report.rs",
        "src/main.rs",
        "src/cli.rs",
        "tests/report.rs",
    ]
    .iter()
    .enumerate()
    {
        step(
            "Read",
            json!({"file_path": sb.project().join(file)}),
            Ok(
                json!({"type": "text", "file": {"filePath": file, "content": format!("// file {i}\n"), "numLines": 1, "startLine": 1, "totalLines": 1}}),
            ),
        );
    }
    for i in 0..6 {
        step(
            "Edit",
            json!({"file_path": sb.project().join("src/report.rs"), "old_string": format!("a{i}"), "new_string": format!("b{i}")}),
            Ok(
                json!({"filePath": "src/report.rs", "oldString": format!("a{i}"), "newString": format!("b{i}"), "structuredPatch": [], "userModified": false, "replaceAll": false}),
            ),
        );
        // The tests fail with a different error each time, then pass.
        let error = format!("Exit code 101\nerror[E0308]: mismatched types at line {i}");
        let outcome = if i < 5 {
            Err(error.as_str())
        } else {
            Ok(bash_out("test result: ok. 42 passed"))
        };
        step("Bash", bash("cargo test"), outcome);
    }
    step(
        "mcp__github__create_pull_request",
        json!({"title": "report --json", "base": "main"}),
        Ok(json!([{"type": "text", "text": "PR #42 created"}])),
    );
    step(
        "TodoWrite",
        json!({"todos": [{"content": "Find the report command", "status": "completed", "activeForm": "Finding"},
                          {"content": "Add --json", "status": "completed", "activeForm": "Adding"}]}),
        Ok(json!({"oldTodos": [], "newTodos": []})),
    );
    sb.hook(
        &json!({"session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false}),
        &[],
    )
    .assert_untouched();
    let st = sb.status_json(SESSION);
    for e in st["events"].as_array().unwrap() {
        let d = e["decision"].as_str().unwrap();
        assert!(["allow", "recorded", "new-run"].contains(&d), "{e}");
    }
}

/// Eight hook processes at once on a database none of them has created yet (Claude Code's
/// parallel hooks on their first call), twenty times: every one of them answers. Turning the
/// new database to WAL takes an exclusive lock, and SQLite answered some of the processes
/// "busy" at once rather than let them wait (about one round in twenty failed before the
/// store tried again).
#[test]
fn hooks_opening_a_new_database_at_once_all_answer() {
    const ROUNDS: usize = 20;
    const WORKERS: usize = 8;
    for round in 0..ROUNDS {
        let sb = Sandbox::new();
        let config = sb.path("config.json5");
        std::fs::write(&config, "{ tools: { loopDetection: { enabled: true } } }").unwrap();
        let config = config.to_str().unwrap().to_string();
        std::thread::scope(|s| {
            for w in 0..WORKERS {
                let (sb, config) = (&sb, config.clone());
                s.spawn(move || {
                    let cc = Claude::new(&sb.project());
                    let input = json!({"file_path": format!("/src/w{w}.rs")});
                    let flags = ["--config", config.as_str(), "--busy-timeout", "60s"];
                    let a = sb.hook(&cc.pre("Read", input, &format!("toolu_{w}")), &flags);
                    assert!(
                        a.code == 0 && a.stdout.is_empty() && a.stderr.is_empty(),
                        "round {round}, hook {w}: {a:?}"
                    );
                });
            }
        });
        assert_eq!(sb.status_json(SESSION)["eventCount"], WORKERS as u64);
    }
}

/// Eight hook processes at once on one session, 25 calls (PreToolUse + PostToolUse) each:
/// every event is in the database.
#[test]
fn concurrent_hooks_lose_no_update() {
    let sb = Sandbox::new();
    let config = sb.path("config.json5");
    std::fs::write(
        &config,
        "{ tools: { loopDetection: { enabled: true, historySize: 1000 } } }",
    )
    .unwrap();
    let config = config.to_str().unwrap().to_string();
    const WORKERS: usize = 8;
    const CALLS: usize = 25;
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let sb = &sb;
            let config = config.clone();
            s.spawn(move || {
                let cc = Claude::new(&sb.project());
                for i in 0..CALLS {
                    let id = format!("toolu_w{w}_c{i}");
                    let input = json!({"file_path": format!("/src/w{w}/f{i}.rs")});
                    // What is tested is that no update is lost; a machine busy with other
                    // work may queue the 8 processes longer than the default 5 s, after
                    // which the hook would (rightly) fail open.
                    let flags = ["--config", config.as_str(), "--busy-timeout", "60s"];
                    let a = sb.hook(&cc.pre("Read", input.clone(), &id), &flags);
                    assert!(
                        a.code == 0 && a.stdout.is_empty() && a.stderr.is_empty(),
                        "{a:?}"
                    );
                    let r = json!({"type": "text", "file": {"content": format!("{w}/{i}")}});
                    let a = sb.hook(&cc.post("Read", input, &id, r), &flags);
                    assert!(
                        a.code == 0 && a.stdout.is_empty() && a.stderr.is_empty(),
                        "{a:?}"
                    );
                }
            });
        }
    });
    let st = sb.status_json(SESSION);
    assert_eq!(st["eventCount"], (WORKERS * CALLS * 2) as u64);
    assert_eq!(st["historyLen"], (WORKERS * CALLS) as u64);
    // Every call has its own record, paired with its outcome.
    let store = SqliteStore::open_existing(&sb.db(), &SqliteOptions::default()).unwrap();
    let entry = loopguard_guard::Store::load(&store, &loopguard_hook::store::key(SESSION))
        .unwrap()
        .unwrap();
    let mut ids: Vec<String> = entry
        .session
        .history()
        .records()
        .iter()
        .map(|r| {
            assert!(r.result.is_some(), "{r:?}");
            r.call_id.as_ref().unwrap().to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), WORKERS * CALLS);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// The child half of the kill -9 test: holds an immediate transaction with an
/// uncommitted write until it is killed. Run only by `a_process_killed_mid_transaction…`.
#[test]
#[ignore = "helper process for a_process_killed_mid_transaction_loses_nothing_committed"]
fn kill9_helper_holds_a_transaction() {
    let (Some(db), Some(ready)) = (
        std::env::var_os("LOOPGUARD_TEST_KILL9_DB"),
        std::env::var_os("LOOPGUARD_TEST_KILL9_READY"),
    ) else {
        return;
    };
    // The store's own connection settings (WAL, busy timeout), then a write transaction
    // made by hand so that it can stop between the write and the commit.
    drop(SqliteStore::open(Path::new(&db), &SqliteOptions::default()).unwrap());
    let conn = rusqlite::Connection::open(Path::new(&db)).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    // A large write, so SQLite spills pages to the WAL before any commit.
    conn.execute(
        "UPDATE sessions SET entry = zeroblob(8388608), updated_ms = 1 WHERE key = ?1",
        [loopguard_hook::store::key(SESSION)],
    )
    .unwrap();
    std::fs::write(&ready, b"ready").unwrap();
    std::thread::sleep(Duration::from_secs(120));
    conn.execute_batch("COMMIT").unwrap();
}

/// A process killed (SIGKILL) in the middle of a write transaction: the database reopens
/// with everything committed before it and nothing of the killed write; while the lock
/// was held, the hook failed open instead of blocking the agent.
#[test]
fn a_process_killed_mid_transaction_loses_nothing_committed() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    for i in 0..5 {
        let id = format!("toolu_k{i}");
        let input = json!({"file_path": format!("/f{i}")});
        sb.hook(&cc.pre("Read", input.clone(), &id), &[])
            .assert_untouched();
        sb.hook(&cc.post("Read", input, &id, json!("content")), &[])
            .assert_untouched();
    }
    let before = sb.status_json(SESSION);
    assert_eq!(before["eventCount"], 10);

    let ready = sb.path("ready");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill9_helper_holds_a_transaction",
            "--ignored",
            "--nocapture",
        ])
        .env("LOOPGUARD_TEST_KILL9_DB", sb.db())
        .env("LOOPGUARD_TEST_KILL9_READY", &ready)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "helper never got ready"
        );
        assert!(child.try_wait().unwrap().is_none(), "helper exited early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let wal = PathBuf::from(format!("{}-wal", sb.db().display()));
    assert!(
        wal.metadata().map(|m| m.len()).unwrap_or(0) > 0,
        "the write reached the WAL file"
    );

    // While the write lock is held, a hook gives up after its busy timeout and fails open.
    let started = Instant::now();
    let locked = sb.hook(
        &cc.pre("Read", json!({"file_path": "/locked"}), "toolu_locked"),
        &["--busy-timeout", "300ms"],
    );
    let line = locked.assert_failed_open();
    assert!(line.contains("locked") || line.contains("busy"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(5));

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let after = sb.hook(
        &cc.pre("Read", json!({"file_path": "/f9"}), "toolu_k9"),
        &[],
    );
    after.assert_untouched();
    let st = sb.status_json(SESSION);
    assert_eq!(
        st["eventCount"], 11,
        "10 committed + 1 after, nothing of the killed write"
    );
    assert_eq!(st["historyLen"], 6);
    assert_eq!(st["run"], "prompt-0");
    assert!(st["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["decision"] != "uncommitted"));
    let store = SqliteStore::open_existing(&sb.db(), &SqliteOptions::default()).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// A corrupt database file: the call is allowed, one line on stderr and in the log.
#[test]
fn a_corrupt_database_fails_open() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    let db = sb.path("broken/state.sqlite3");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let mut junk = b"SQLite format 3\0".to_vec();
    junk.extend((0..16384u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8));
    std::fs::write(&db, &junk).unwrap();
    let a = sb.hook(
        &cc.pre("Bash", bash("ls"), "toolu_c1"),
        &["--state", db.to_str().unwrap()],
    );
    let line = a.assert_failed_open().to_string();
    assert!(line.contains(db.to_str().unwrap()), "{line}");
    let log = std::fs::read_to_string(sb.path("broken/loopguard.log")).unwrap();
    assert!(log.contains("fail-open"), "{log}");
    // The file was not touched.
    assert_eq!(std::fs::read(&db).unwrap(), junk);
}

/// Garbage on stdin, a payload missing a field, an unknown flag: always exit 0, allow.
#[test]
fn garbage_payloads_fail_open() {
    let sb = Sandbox::new();
    for input in [
        &b""[..],
        b"not json at all",
        b"\xff\xfe\x00",
        b"[1,2,3]",
        b"{\"session_id\":\"s\"}",
    ] {
        let a = Answer::from(sb.run(&["hook", "claude-code"], input));
        a.assert_failed_open();
    }
    let a = Answer::from(sb.run(
        &["hook", "claude-code"],
        br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{}}"#,
    ));
    assert!(a.assert_failed_open().contains("`tool_name` is missing"));
    let log = std::fs::read_to_string(sb.path("state/loopguard/loopguard.log")).unwrap();
    assert_eq!(log.lines().count(), 6, "{log}");
    // An unknown flag is reported, never fatal.
    let cc = Claude::new(&sb.project());
    let a = sb.hook(
        &cc.pre("Read", json!({}), "t"),
        &["--flag-from-the-future", "x"],
    );
    assert_eq!((a.code, a.stdout.as_str()), (0, ""));
    assert!(a.stderr.contains("unknown arguments ignored"), "{a:?}");
}

/// A bad config is reported like any other error, and the call is allowed.
#[test]
fn a_bad_config_fails_open() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    std::fs::write(
        sb.project().join(".loopguard.json5"),
        "{ tools: { loopDetection: { enabled: true, warningTreshold: 5 } } }",
    )
    .unwrap();
    let a = sb.hook(&cc.pre("Read", json!({}), "t"), &[]);
    let line = a.assert_failed_open();
    assert!(
        line.contains("warningTreshold") && line.contains(".loopguard.json5"),
        "{line}"
    );
}

/// The project's `.loopguard.json5` is found from the payload's cwd and applies.
#[test]
fn project_and_user_configs_apply() {
    let sb = Sandbox::new();
    let sub = sb.project().join("crates/api");
    std::fs::create_dir_all(&sub).unwrap();
    let cc = Claude::new(&sub);
    // The user config lowers the critical threshold to 4 …
    std::fs::create_dir_all(sb.path("config/loopguard")).unwrap();
    std::fs::write(
        sb.path("config/loopguard/config.json5"),
        "{ tools: { loopDetection: { enabled: true, warningThreshold: 2, criticalThreshold: 4 } } }",
    )
    .unwrap();
    let run = |first: usize| -> Option<usize> {
        for i in first..first + 8 {
            let id = format!("t{i}");
            let a = sb.hook(&cc.pre("Read", json!({"file_path": "/x"}), &id), &[]);
            if a.json.is_some() {
                return Some(i - first + 1);
            }
            sb.hook(
                &cc.post("Read", json!({"file_path": "/x"}), &id, json!("same")),
                &[],
            );
        }
        None
    };
    assert_eq!(run(0), Some(5));
    // … and a project config that turns detection off wins over it.
    std::fs::write(
        sb.project().join(".loopguard.json5"),
        "// the team's choice\n{ tools: { loopDetection: { enabled: false } } }",
    )
    .unwrap();
    sb.hook(&cc.prompt("again"), &[]).assert_untouched();
    assert_eq!(run(100), None);
    let st = sb.status_json(SESSION);
    assert!(
        st["config"]
            .as_str()
            .unwrap()
            .contains(".loopguard.json5 (project)"),
        "{st}"
    );
}

/// install / uninstall merge into settings.json in place, keep the first backup, are
/// idempotent, and give back the original bytes.
#[test]
fn install_and_uninstall_merge_with_existing_settings() {
    let sb = Sandbox::new();
    let user_settings = sb.path("home/.claude/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    let original = json!({
        "model": "opus",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]
        }
    });
    let original_text = serde_json::to_string_pretty(&original).unwrap();
    std::fs::write(&user_settings, &original_text).unwrap();

    let out = sb.run(&["hook", "install"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("installed"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&user_settings).unwrap()).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/bin/guard.sh"
    );
    assert_eq!(
        v["hooks"]["Notification"],
        original["hooks"]["Notification"]
    );
    let cmd = v["hooks"]["PreToolUse"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.ends_with("loopguard hook claude-code"), "{cmd}");
    for event in [
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "UserPromptSubmit",
        "PostCompact",
        "SessionEnd",
    ] {
        assert_eq!(v["hooks"][event][0]["hooks"][0]["command"], cmd, "{event}");
    }
    assert_eq!(v["hooks"]["SessionStart"][0]["matcher"], "compact");
    let backup = sb.path("home/.claude/settings.json.loopguard-backup");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original_text);

    // The installed command really works as a hook.
    let payload = Claude::new(&sb.project()).pre("Read", json!({}), "t");
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .env("HOME", sb.path("home"))
        .env("XDG_STATE_HOME", sb.path("state"))
        .env("XDG_CONFIG_HOME", sb.path("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    Answer::from(child.wait_with_output().unwrap()).assert_untouched();

    // Again: nothing changes.
    let snapshot = std::fs::read_to_string(&user_settings).unwrap();
    let out = sb.run(&["hook", "install", "--user"], b"");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("nothing changed"));
    assert_eq!(std::fs::read_to_string(&user_settings).unwrap(), snapshot);

    // Uninstall restores the original file, byte for byte.
    let out = sb.run(&["hook", "uninstall"], b"");
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&user_settings).unwrap(),
        original_text
    );
    let out = sb.run(&["hook", "uninstall"], b"");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("nothing changed"));

    // Project install, with options passed on to the hook.
    let out = sb.run(
        &[
            "hook",
            "install",
            "--project",
            "--observe",
            "--state",
            "db.sqlite3",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value = serde_json::from_str(
        &std::fs::read_to_string(sb.project().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let cmd = p["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        cmd.contains("--mode observe") && cmd.contains("db.sqlite3"),
        "{cmd}"
    );
    // Shared with everyone who clones the project: no path of this machine.
    assert_eq!(
        cmd,
        r#"loopguard hook claude-code --state "${CLAUDE_PROJECT_DIR}"/db.sqlite3 --mode observe"#
    );
    assert!(!cmd.contains(sb.dir.path().to_str().unwrap()), "{cmd}");
}

#[test]
fn status_without_a_database_or_session() {
    let sb = Sandbox::new();
    let out = sb.run(&["status"], b"");
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("no sessions yet"));
    let cc = Claude::new(&sb.project());
    sb.hook(&cc.pre("Read", json!({}), "t"), &[])
        .assert_untouched();
    let out = sb.run(&["status"], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(SESSION));
    // It points to the replay of what the agents wrote themselves.
    assert!(text.contains("loopguard replay --agent all"), "{text}");
    let out = sb.run(&["status", "no-such-session"], b"");
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("no session"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Random bytes on stdin never make the hook exit non-zero or print anything on stdout.
    #[test]
    fn random_payload_bytes_never_fail_the_hook(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let sb = Sandbox::new();
        let out = sb.run(&["hook", "claude-code"], &bytes);
        proptest::prop_assert_eq!(out.status.code(), Some(0));
        proptest::prop_assert!(out.stdout.is_empty());
    }

    /// Well-formed events with random tool values: exit 0, and stdout is empty or JSON.
    #[test]
    fn random_tool_values_never_fail_the_hook(
        event in proptest::sample::select(vec!["PreToolUse", "PostToolUse", "PostToolUseFailure"]),
        tool in proptest::sample::select(vec!["Bash", "BashOutput", "TaskOutput", "TodoWrite", "Read", "mcp__s__t"]),
        value in "[\\[\\]{}\",:0-9a-z\\\\]{0,40}",
    ) {
        let sb = Sandbox::new();
        let payload = format!(
            r#"{{"session_id":"s","hook_event_name":"{event}","tool_name":"{tool}","tool_input":{value},"tool_response":{value},"error":{value}}}"#
        );
        let out = sb.run(&["hook", "claude-code"], payload.as_bytes());
        proptest::prop_assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8(out.stdout).unwrap();
        proptest::prop_assert!(stdout.is_empty() || serde_json::from_str::<Value>(&stdout).is_ok());
    }
}

/// One tool profile serves the hook and replay. 25 identical failing `Bash` calls
/// whose free-text `description` differs on every attempt: the live hook warns at the 11th
/// and denies from the 21st, and replaying the transcript Claude Code wrote for the same
/// calls finds the same loop, call for call.
#[test]
fn replay_of_a_transcript_decides_as_the_live_hook_did() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    let input = |i: usize| json!({"command": "npm test", "description": format!("Run the tests (attempt {i})")});
    let error = "Exit code 1\nFAIL src/app.test.js\n  1 failing";
    let mut hook = Vec::new();
    let mut transcript = String::new();
    transcript.push_str(&format!(
        "{}\n",
        json!({"type":"user","uuid":"u0","sessionId":SESSION,"timestamp":"2026-11-30T10:00:00.000Z","message":{"role":"user","content":"make the tests pass"}})
    ));
    sb.hook(&cc.prompt("make the tests pass"), &[])
        .assert_untouched();
    for i in 1..=25 {
        let id = format!("toolu_{i:02}");
        let a = sb.hook(&cc.pre("Bash", input(i), &id), &[]);
        let decision = if a.stdout.is_empty() {
            "allow"
        } else if a.specific()["permissionDecision"] == "deny" {
            "block"
        } else {
            assert!(a.specific()["additionalContext"].is_string(), "{a:?}");
            "warn"
        };
        hook.push(decision);
        let ts = format!("2026-11-30T10:{:02}:{:02}", i / 60, i % 60);
        transcript.push_str(&format!(
            "{}\n",
            json!({"type":"assistant","uuid":format!("a{i}"),"sessionId":SESSION,"timestamp":format!("{ts}.000Z"),
                "message":{"id":format!("msg_{i}"),"role":"assistant","content":[{"type":"tool_use","id":id,"name":"Bash","input":input(i)}]}})
        ));
        if decision == "block" {
            // Claude Code did not run the call: no PostToolUse, and the transcript holds the
            // denial as the call's error result.
            transcript.push_str(&format!(
                "{}\n",
                json!({"type":"user","uuid":format!("r{i}"),"sessionId":SESSION,"timestamp":format!("{ts}.500Z"),
                    "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":"denied by hook","is_error":true}]}})
            ));
            continue;
        }
        sb.hook(&cc.failure("Bash", input(i), &id, error), &[])
            .assert_untouched();
        transcript.push_str(&format!(
            "{}\n",
            json!({"type":"user","uuid":format!("r{i}"),"sessionId":SESSION,"timestamp":format!("{ts}.500Z"),
                "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":error,"is_error":true}]}})
        ));
    }
    let first = |d: &str| hook.iter().position(|x| *x == d).map(|p| p + 1);
    assert_eq!(
        (first("warn"), first("block")),
        (Some(11), Some(21)),
        "{hook:?}"
    );

    let file = sb.path("project/session.jsonl");
    std::fs::write(&file, transcript).unwrap();
    let out = sb.run(
        &[
            "replay",
            "--json",
            "--mode",
            "enforce",
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            if d["decision"] != "allow" {
                assert!(d["message"].as_str().unwrap().contains("Bash"), "{d}");
                assert!(d["argsHash"].as_str().unwrap().starts_with("exec:"), "{d}");
            }
            // The hook shows the model the warnings that passed the de-duplication
            // (emitted); the others it records quietly.
            match (d["decision"].as_str().unwrap(), d["emitted"].as_bool()) {
                ("warn", Some(false)) => "allow".to_string(),
                (decision, _) => decision.to_string(),
            }
        })
        .collect();
    assert_eq!(replayed, hook, "replay and the live hook disagree");
    assert_eq!(replayed.iter().filter(|d| *d == "warn").count(), 1);
}

/// The strict profile from the project's `.loopguard.json5`: a command failing the same way
/// is denied after 6 identical failures, and retrying it after the block stops the agent
/// (`second_critical_abort`); the next prompt starts clean.
#[test]
fn strict_profile_from_the_project_config_denies_then_stops() {
    let sb = Sandbox::new();
    let cc = Claude::new(&sb.project());
    std::fs::write(
        sb.project().join(".loopguard.json5"),
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { profile: "strict" } }"#,
    )
    .unwrap();
    let mut answers = Vec::new();
    for i in 0..8 {
        let id = format!("f{i}");
        let a = sb.hook(&cc.pre("Bash", bash("npm test"), &id), &[]);
        let denied = a.json.as_ref().and_then(|j| {
            j["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .map(str::to_string)
        });
        answers.push((denied, a.json.clone()));
        if answers.last().unwrap().0.is_none() {
            sb.hook(
                &cc.failure(
                    "Bash",
                    bash("npm test"),
                    &id,
                    "Exit code 1\nError: Cannot find module 'jest'",
                ),
                &[],
            );
        }
    }
    // The warning after 3 identical failures reaches the model (once, not at 4 and 5).
    let context = |i: usize| {
        answers[i].1.as_ref().and_then(|j| {
            j["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .map(str::to_string)
        })
    };
    assert!(answers[..3].iter().all(|(_, j)| j.is_none()), "{answers:?}");
    assert!(
        context(3).is_some_and(|c| c.contains("failed the same way 3 times")),
        "{answers:?}"
    );
    assert_eq!((context(4), context(5)), (None, None));
    let first_deny = answers.iter().position(|(d, _)| d.is_some()).unwrap();
    assert_eq!(first_deny, 6, "{answers:?}");
    let first = answers[6].1.as_ref().unwrap();
    assert!(first.get("continue").is_none(), "{first}");
    assert!(
        first["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("failed the same way 6 times"),
        "{first}"
    );
    let second = answers[7].1.as_ref().unwrap();
    assert_eq!(second["continue"], false, "{second}");
    assert!(
        second["stopReason"]
            .as_str()
            .unwrap()
            .contains("second_critical_abort"),
        "{second}"
    );
    // Claude Code 2.1 goes on after a PreToolUse answer that denies and says
    // `continue: false` (checked with the real CLI, tests/claude_e2e.rs), then runs the
    // PostToolBatch hooks with the denial as the call's response (the shape it sends):
    // that answer stops the agent.
    let reason = second["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string();
    let mut batch = cc.base("PostToolBatch");
    batch.insert(
        "tool_calls".into(),
        json!([{"tool_name": "Bash", "tool_input": bash("npm test"), "tool_use_id": "f7", "tool_response": reason}]),
    );
    let stop = sb.hook(&Value::Object(batch), &[]);
    let stop = stop
        .json
        .as_ref()
        .expect("the batch answer stops the agent");
    assert_eq!(stop["continue"], false, "{stop}");
    assert!(
        stop["stopReason"]
            .as_str()
            .unwrap()
            .contains("second_critical_abort"),
        "{stop}"
    );
    // Any further call of the ended run is denied and stops again.
    let again = sb.hook(&cc.pre("Bash", bash("ls"), "f8"), &[]);
    assert_eq!(again.specific()["permissionDecision"], "deny", "{again:?}");
    assert_eq!(again.json.as_ref().unwrap()["continue"], false);
    let status = sb.status_json(SESSION);
    let denied = status["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["decision"] == "deny-aborted")
        .cloned()
        .unwrap_or_default();
    assert_eq!(denied["detector"], "second_critical_abort", "{status}");
    // A new prompt is a new run.
    sb.hook(&cc.prompt("try something else"), &[])
        .assert_untouched();
    sb.hook(&cc.pre("Bash", bash("npm test"), "n1"), &[])
        .assert_untouched();
}

/// Observe mode: nothing reaches Claude Code, and after `SessionEnd` (the end of every
/// headless run) what would have happened is still there: in `loopguard status` (the
/// list and the session, text and JSON) and in the log, one line per would-be decision
/// and a summary. Enforce mode keeps the same record of what it did.
#[test]
fn an_ended_session_leaves_a_record_in_status_and_the_log() {
    for mode in ["observe", "enforce"] {
        let sb = Sandbox::new();
        let cc = Claude::new(&sb.project());
        sb.hook(&cc.prompt("check the service"), &["--mode", mode]);
        let mut touched = 0;
        for i in 0..22 {
            let id = format!("o{i}");
            let a = sb.hook(
                &cc.pre("Bash", bash("curl localhost:8080"), &id),
                &["--mode", mode],
            );
            touched += usize::from(a.json.is_some());
            sb.hook(
                &cc.post("Bash", bash("curl localhost:8080"), &id, bash_out("503")),
                &["--mode", mode],
            );
        }
        let mut end = cc.base("SessionEnd");
        end.insert("reason".into(), json!("other"));
        sb.hook(&Value::Object(end), &["--mode", mode])
            .assert_untouched();
        let would = if mode == "observe" { "would-" } else { "" };
        if mode == "observe" {
            assert_eq!(touched, 0, "observe mode answered Claude Code");
        }
        // The live session is gone; its record is not.
        let (list, _) = sb.ok(&["status"]);
        assert!(
            list.contains("no live sessions")
                && list.contains("ended sessions")
                && list.contains(SESSION),
            "{list}"
        );
        let all: Value = serde_json::from_str(&sb.ok(&["status", "--json"]).0).unwrap();
        assert_eq!(all["sessions"], json!([]), "{all}");
        let ended = &all["ended"][0];
        assert_eq!(ended["sessionId"], SESSION, "{all}");
        assert_eq!(ended["mode"], mode, "{all}");
        assert_eq!(ended["reason"], "other", "{all}");
        assert_eq!(ended["calls"], 22, "{all}");
        assert!(ended["warnings"].as_u64().unwrap() >= 1, "{all}");
        assert!(ended["blocks"].as_u64().unwrap() >= 1, "{all}");
        let decisions: Vec<&str> = ended["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["decision"].as_str().unwrap())
            .collect();
        assert!(
            decisions.contains(&format!("{would}block").as_str()),
            "{decisions:?}"
        );
        let one = sb.status_json(&SESSION[..8]);
        assert_eq!(one["ended"], true, "{one}");
        let (text, _) = sb.ok(&["status", SESSION]);
        assert!(
            text.contains(&format!("{mode} mode")) && text.contains(&format!("{would}block")),
            "{text}"
        );
        let log = std::fs::read_to_string(sb.path("state/loopguard/loopguard.log"))
            .unwrap_or_else(|e| panic!("no log: {e}"));
        assert!(
            log.contains(&format!(
                "session {SESSION} ended (other; {mode} mode): 22 calls checked"
            )),
            "{log}"
        );
        if mode == "observe" {
            assert!(
                log.contains(&format!("session {SESSION}: would-block Bash")),
                "{log}"
            );
        }
    }
}

/// VS Code's agent runs the hooks of `.claude/settings.json` with camelCase `sessionId`
/// and `hookEventName` (and an ISO `timestamp`) beside snake_case `tool_name`,
/// `tool_input`, `tool_use_id` and `tool_response`: the shapes of VS Code's agent hooks
/// reference ("Common input fields", "PreToolUse input", "PostToolUse input";
/// code.visualstudio.com/docs/agent-customization/hooks). The same install protects it:
/// the warning with the 11th identical call, the deny from the 21st.
#[test]
fn vs_code_payloads_are_guarded_like_claude_code() {
    let sb = Sandbox::new();
    let cwd = sb.project();
    let common = |event: &str| {
        json!({
            "timestamp": "2026-02-09T10:30:00.000Z",
            "cwd": cwd,
            "sessionId": "vscode-session-1",
            "hookEventName": event,
            "transcript_path": "/home/dev/.vscode/transcripts/vscode-session-1.json",
        })
    };
    let input =
        json!({"command": "npm test", "explanation": "Run the tests", "isBackground": false});
    sb.hook(
        &{
            let mut p = common("UserPromptSubmit");
            p["prompt"] = json!("fix the tests");
            p
        },
        &[],
    )
    .assert_untouched();
    let mut answers = Vec::new();
    for i in 1..=25 {
        let id = format!("tool-{i}");
        let mut pre = common("PreToolUse");
        pre["tool_name"] = json!("run_in_terminal");
        pre["tool_input"] = input.clone();
        pre["tool_use_id"] = json!(id);
        let a = sb.hook(&pre, &[]);
        assert_eq!(a.code, 0, "{a:?}");
        assert_eq!(a.stderr, "", "{a:?}");
        let denied = a.json.is_some() && a.specific()["permissionDecision"] == "deny";
        answers.push(a.json.clone());
        if denied {
            continue;
        }
        let mut post = common("PostToolUse");
        post["tool_name"] = json!("run_in_terminal");
        post["tool_input"] = input.clone();
        post["tool_use_id"] = json!(id);
        post["tool_response"] = json!("1 failing\nError: expected 200, got 503");
        sb.hook(&post, &[]).assert_untouched();
    }
    let first = |pred: &dyn Fn(&Value) -> bool| {
        answers
            .iter()
            .position(|a| a.as_ref().is_some_and(pred))
            .map(|i| i + 1)
    };
    let warned = first(&|j| j["hookSpecificOutput"]["additionalContext"].is_string());
    let denied = first(&|j| j["hookSpecificOutput"]["permissionDecision"] == "deny");
    assert_eq!((warned, denied), (Some(11), Some(21)), "{answers:?}");
    assert!(answers[..10].iter().all(Option::is_none), "{answers:?}");
    let st = sb.status_json("vscode-session-1");
    assert_eq!(st["sessionId"], "vscode-session-1", "{st}");
}
