//! Alerts from `loopguard hook claude-code` and `loopguard mcp` end to end
//! (`loopguard.alerts` in the config file): the real binary, a real HTTP receiver on
//! 127.0.0.1 in a thread of the test, a real `notify-send` script on `PATH`, and for the
//! proxy the MCP reference SDK's client and server (`scripts/setup-mcp.sh`). The receiver is up (exactly one alert per loop,
//! however many calls are denied after its first block), slow (the hook has exited while
//! the receiver still holds the alert unanswered), and down (the alert is kept in the spool
//! and delivered by a later hook invocation once the receiver is up).
//!
//! No assertion depends on the machine's speed: waits are for a condition, with generous
//! limits; "the hook did not wait" is shown by the receiver still holding its answer when
//! the hook process has ended.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// What the receiver has seen.
#[derive(Default)]
struct Seen {
    /// Requests read (bodies, in order).
    bodies: Vec<Value>,
    /// Requests answered.
    answered: usize,
}

/// An HTTP receiver on 127.0.0.1 that keeps the bodies it is posted. While its gate is
/// closed it reads requests but holds their answers; `delay` is how long it takes to
/// answer once the gate is open (a slow receiver).
struct Receiver {
    url: String,
    seen: Arc<Mutex<Seen>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Receiver {
    fn start(listener: TcpListener, open: bool, delay: Duration) -> Receiver {
        let url = format!("http://{}/alerts", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let gate = Arc::new((Mutex::new(open), Condvar::new()));
        let (seen2, gate2) = (seen.clone(), gate.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (seen, gate) = (seen2.clone(), gate2.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap();
                            }
                        }
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    seen.lock()
                        .unwrap()
                        .bodies
                        .push(serde_json::from_slice(&body).unwrap());
                    let (open, cv) = &*gate;
                    let mut g = open.lock().unwrap();
                    while !*g {
                        g = cv.wait(g).unwrap();
                    }
                    drop(g);
                    std::thread::sleep(delay);
                    if stream
                        .write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .is_ok()
                    {
                        seen.lock().unwrap().answered += 1;
                    }
                });
            }
        });
        Receiver { url, seen, gate }
    }

    fn up() -> Receiver {
        Receiver::start(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            true,
            Duration::ZERO,
        )
    }

    fn open_gate(&self) {
        let (open, cv) = &*self.gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }

    fn bodies(&self) -> Vec<Value> {
        self.seen.lock().unwrap().bodies.clone()
    }

    fn answered(&self) -> usize {
        self.seen.lock().unwrap().answered
    }
}

/// Waits (60 s at most) until `cond` holds; fails naming `what`.
fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    wait_saying(what, cond, String::new);
}

/// [`wait_until`], with `more` (the hook's log) in the failure's message.
fn wait_saying(what: &str, mut cond: impl FnMut() -> bool, more: impl Fn() -> String) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting until {what}\n{}",
            more()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A sandbox: home, state and config directories, a config file, the state database.
struct Hook {
    dir: tempfile::TempDir,
    path_env: Option<String>,
}

impl Hook {
    fn new(alerts: &str) -> Hook {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "state", "config", "project"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(
            dir.path().join("config.json5"),
            format!(
                r#"{{ tools: {{ loopDetection: {{ enabled: true, warningThreshold: 3, criticalThreshold: 5, globalCircuitBreakerThreshold: 30 }} }}, loopguard: {{ alerts: [ {alerts} ] }} }}"#
            ),
        )
        .unwrap();
        Hook {
            dir,
            path_env: None,
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("state/db.sqlite3")
    }

    fn spool(&self) -> PathBuf {
        self.dir.path().join("state/db.sqlite3.alerts")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("state/loopguard.log")).unwrap_or_default()
    }

    /// Deliveries waiting in the spool (or being sent).
    fn pending(&self) -> usize {
        std::fs::read_dir(self.spool())
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.ends_with(".alert") || n.ends_with(".sending")
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// One hook invocation, to its end (the process's exit, its stdout closed).
    fn run(&self, payload: &Value) -> Output {
        let mut cmd = Command::new(common::bin());
        cmd.args(["hook", "claude-code", "--state"])
            .arg(self.db())
            .arg("--config")
            .arg(self.dir.path().join("config.json5"))
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("CLAUDE_PROJECT_DIR", self.dir.path().join("project"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(p) = &self.path_env {
            cmd.env("PATH", p);
        }
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        // A watchdog, not a timing threshold: a hook that waited for a receiver holding its
        // answer would never end.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        let out = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the hook process did not end")
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        out
    }

    fn pre(&self, session: &str, id: &str) -> Output {
        self.run(&json!({
            "session_id": session, "cwd": self.dir.path().join("project"),
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "cargo test -p api"}, "tool_use_id": id
        }))
    }

    fn post(&self, session: &str, id: &str) -> Output {
        self.run(&json!({
            "session_id": session, "cwd": self.dir.path().join("project"),
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": "cargo test -p api"}, "tool_use_id": id,
            "tool_response": {"stdout": "test result: FAILED. 1 failed", "stderr": "", "interrupted": false}
        }))
    }

    /// Identical calls with identical results until one is denied; returns the denied
    /// call's invocation (the one that spools the loop's alert).
    fn loop_until_denied(&self, session: &str) -> (usize, Output) {
        for i in 1..=20 {
            let id = format!("toolu_{session}_{i}");
            let out = self.pre(session, &id);
            if String::from_utf8_lossy(&out.stdout).contains("\"deny\"") {
                return (i, out);
            }
            self.post(session, &id);
        }
        panic!("session {session} was never denied");
    }

    /// `n` more denied calls of the same loop.
    fn denied_again(&self, session: &str, n: usize) {
        for i in 0..n {
            let out = self.pre(session, &format!("toolu_{session}_again_{i}"));
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("\"deny\""),
                "{out:?}"
            );
        }
    }
}

/// A receiver that is up gets exactly one alert per loop: the first block of each loop,
/// in loopguard's JSON, however many calls of it are denied after; the spool ends empty
/// and the log says it was delivered.
#[test]
fn one_alert_per_loop_from_the_hook() {
    let receiver = Receiver::up();
    let hook = Hook::new(&format!(r#"{{ url: "{}", on: ["block"] }}"#, receiver.url));
    let (at, _) = hook.loop_until_denied("s1");
    assert_eq!(
        at, 6,
        "criticalThreshold 5: the sixth identical call is denied"
    );
    hook.denied_again("s1", 4);
    let (_, _) = hook.loop_until_denied("s2");
    hook.denied_again("s2", 2);
    wait_until("both alerts arrived and the spool is empty", || {
        receiver.bodies().len() >= 2 && hook.pending() == 0
    });
    // A straggler would have had every chance to arrive: every hook invocation above had
    // ended, and the spool is empty.
    let bodies = receiver.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    let mut sessions: Vec<&str> = bodies
        .iter()
        .map(|b| b["session"].as_str().unwrap())
        .collect();
    sessions.sort_unstable();
    assert_eq!(sessions, ["s1", "s2"]);
    for b in &bodies {
        assert_eq!(b["source"], "loopguard");
        assert_eq!(b["event"], "block");
        assert_eq!(b["agent"], "claude-code");
        assert_eq!(b["tool"], "Bash");
        assert_eq!(b["detector"], "generic_repeat");
        assert_eq!(b["observe"], false);
        assert!(
            b["summary"].as_str().unwrap().starts_with(
                "loopguard blocked a loop: agent claude-code called Bash in session s"
            ),
            "{b}"
        );
        assert!(
            b["message"].as_str().unwrap().starts_with("CRITICAL:"),
            "{b}"
        );
    }
    let log = hook.log();
    assert_eq!(log.matches("delivered to").count(), 2, "{log}");
}

/// A slow receiver: it reads the alert and holds its answer. The hook invocation that
/// spooled the alert has ended before the receiver answered (and the denied calls after it
/// end too, sending nothing more); once the receiver answers, seconds later, the alert is
/// delivered once.
#[test]
fn the_hook_exits_before_a_slow_receiver_answers() {
    let receiver = Receiver::start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        false,
        Duration::from_secs(2),
    );
    let hook = Hook::new(&format!(r#"{{ url: "{}" }}"#, receiver.url));
    let (_, denied) = hook.loop_until_denied("slow");
    assert!(String::from_utf8_lossy(&denied.stdout).contains("\"deny\""));
    // The hook process has ended and its answer was read: the receiver has not answered
    // (it cannot: its gate is closed).
    assert_eq!(receiver.answered(), 0);
    wait_until("the receiver has read the alert", || {
        receiver.bodies().len() == 1
    });
    // Further denied calls of the loop end while the alert is in flight, adding nothing.
    hook.denied_again("slow", 3);
    assert_eq!(receiver.answered(), 0);
    receiver.open_gate();
    wait_until("the receiver answered and the spool is empty", || {
        receiver.answered() == 1 && hook.pending() == 0
    });
    assert_eq!(receiver.bodies().len(), 1, "{:#?}", receiver.bodies());
    // Delivered at the first try: nobody gave up waiting for the slow answer.
    let log = hook.log();
    assert!(
        log.contains("delivered to") && log.contains("(try 1)"),
        "{log}"
    );
    assert!(!log.contains("not delivered"), "{log}");
}

/// A receiver that is down (the connection refused): the failed delivery is logged and
/// the alert kept in the spool; once the receiver is up, a later hook invocation (of any
/// session) hands it to a delivery process, and it arrives once.
#[test]
fn a_down_receivers_alert_is_delivered_at_a_later_invocation() {
    let reserved = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = reserved.local_addr().unwrap();
    drop(reserved); // nothing listens there now: connections are refused
    let hook = Hook::new(&format!(r#"{{ url: "http://{addr}/alerts" }}"#));
    hook.loop_until_denied("down");
    wait_until("the failed delivery is logged", || {
        hook.log().contains("not delivered (try 1 of 8)")
    });
    assert!(hook.log().contains("Connection refused"), "{}", hook.log());
    assert_eq!(hook.pending(), 1, "kept for a later try");
    let receiver = Receiver::start(TcpListener::bind(addr).unwrap(), true, Duration::ZERO);
    // Hook invocations of an unrelated, healthy session go on; one of them, once the
    // retry is due, starts the delivery.
    let mut n = 0;
    wait_saying(
        "the alert arrived at the receiver that is now up",
        || {
            n += 1;
            // A different command each time: this session never loops.
            hook.run(&json!({
                "session_id": "other", "cwd": hook.dir.path().join("project"),
                "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": format!("echo {n}")}, "tool_use_id": format!("toolu_other_{n}")
            }));
            receiver.bodies().len() == 1 && hook.pending() == 0
        },
        || hook.log(),
    );
    assert!(n > 1, "delivered by a later invocation");
    let bodies = receiver.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    assert_eq!(bodies[0]["session"], "down");
    let log = hook.log();
    assert!(log.contains("delivered to"), "{log}");
    assert!(!log.contains("given up"), "{log}");
}

/// `format: "desktop"`: the machine's `notify-send` is run with the alert (a real script on
/// `PATH` records its arguments); without one on `PATH`, a warning in the log.
#[test]
fn a_desktop_notification_runs_notify_send_and_a_missing_one_is_a_warning() {
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("argv.txt");
    let script = bin.path().join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}.tmp && mv {}.tmp {}\n",
            record.display(),
            record.display(),
            record.display()
        ),
    )
    .unwrap();
    make_executable(&script);
    let mut hook = Hook::new(r#"{ format: "desktop", on: ["block"] }"#);
    hook.path_env = Some(format!("{}:/usr/bin:/bin", bin.path().display()));
    hook.loop_until_denied("desk");
    wait_until("notify-send ran", || {
        record.is_file() && hook.pending() == 0
    });
    let argv: Vec<String> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(argv.len(), 3, "{argv:?}");
    assert_eq!(argv[0], "--app-name=loopguard");
    assert_eq!(argv[1], "loopguard blocked a loop");
    assert!(
        argv[2]
            .starts_with("loopguard blocked a loop: agent claude-code called Bash in session desk"),
        "{argv:?}"
    );
    assert!(
        hook.log().contains("delivered to desktop"),
        "{}",
        hook.log()
    );

    // No notifier on PATH: a warning naming the command, and the hook unaffected.
    let empty = tempfile::tempdir().unwrap();
    let mut bare = Hook::new(r#"{ format: "desktop" }"#);
    bare.path_env = Some(empty.path().display().to_string());
    let (_, denied) = bare.loop_until_denied("nodesk");
    assert!(denied.stderr.is_empty(), "{denied:?}");
    wait_until("the missing notifier is logged", || {
        bare.log().contains("notify-send: not found on PATH")
    });
    assert_eq!(bare.pending(), 0);
}

/// `loopguard mcp` with `loopguard.alerts`: a 25-call loop of the SDK's client through the
/// proxy (blocked from its 21st call on) reaches the receiver as one alert.
#[test]
fn the_mcp_proxy_sends_one_alert_per_loop() {
    let py = common::mcp_python();
    let receiver = Receiver::up();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("openclaw.json5");
    std::fs::write(
        &config,
        format!(
            r#"{{ tools: {{ loopDetection: {{ enabled: true }} }}, loopguard: {{ alerts: [ {{ url: "{}", format: "slack" }} ] }} }}"#,
            receiver.url
        ),
    )
    .unwrap();
    let fixtures = common::root().join("crates/loopguard-mcp/tests/python");
    let out = Command::new(&py)
        .arg(fixtures.join("client.py"))
        .args([
            "loop",
            "--",
            common::bin(),
            "mcp",
            "--name",
            "files",
            "--config",
        ])
        .arg(&config)
        .arg("--")
        .arg(&py)
        .arg(fixtures.join("server.py"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let calls: Value = serde_json::from_slice(&out.stdout).unwrap();
    let blocked = calls
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["isError"] == true)
        .count();
    assert_eq!(blocked, 5, "{calls}");
    wait_until("the alert arrived", || !receiver.bodies().is_empty());
    // The proxy has exited (the client waited for it), its queue flushed first.
    let bodies = receiver.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    let text = bodies[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("loopguard blocked a loop: an agent called same in session mcp:files:"),
        "{text}"
    );
}

#[cfg(unix)]
fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}
