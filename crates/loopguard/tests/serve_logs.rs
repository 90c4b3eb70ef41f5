//! What `loopguard serve` logs for a loop: one line per loop event (a warning shown, the
//! loop's first block), not the engine's line per detector per call; `--log-format json`
//! makes every line of stderr one JSON object with the event's fields.

mod serve_support;

use std::time::{Duration, Instant};

use serve_support::*;

/// 25 identical reads with identical results: warnings from the 10th call, blocks from the
/// 21st (five of them).
fn loop_of_25(server: &Serve) {
    let agent = agent();
    for i in 0..25 {
        for event in [
            format!(
                r#"{{"type":"call","session":"s1","callId":"c{i}","tool":"read","args":{{"path":"/a"}}}}"#
            ),
            format!(
                r#"{{"type":"outcome","session":"s1","callId":"c{i}","tool":"read","args":{{"path":"/a"}},"result":"same"}}"#
            ),
        ] {
            let a = post_json(&agent, &server.url("/v1/events"), event.as_bytes());
            assert_eq!(a.status, 200, "{}", a.body);
        }
    }
}

/// The server's stderr once it holds `want` lines containing `needle` (or after 20 s).
fn log_with(server: &Serve, needle: &str, want: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = server.stderr.lock().expect("the log").clone();
        if log.matches(needle).count() >= want || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_loop_is_a_few_lines_not_one_per_detector_per_call() {
    let server = Serve::start(&[]);
    loop_of_25(&server);
    let log = log_with(&server, "loop blocked", 1);
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains("listening on"))
        .collect();
    assert_eq!(
        log.matches("loop blocked").count(),
        1,
        "one line for the loop's five blocks:\n{log}"
    );
    assert!(log.contains("loop warning"), "{log}");
    assert!(
        !log.contains("loopguard::detector") && !log.contains("loopguard::tool_loop"),
        "the engine's own lines wait for -v:\n{log}"
    );
    // A warning shown once per bucket and one block: a handful of lines for 25 calls.
    assert!(lines.len() <= 4, "{} lines:\n{log}", lines.len());
    for l in &lines {
        assert!(
            l.contains("session=s1") || l.contains("session=\"s1\""),
            "{l}"
        );
    }
}

#[test]
fn verbose_brings_the_engines_lines_back() {
    let server = Serve::start(&["-v"]);
    loop_of_25(&server);
    let log = log_with(&server, "loopguard::detector", 10);
    assert!(log.matches("loopguard::detector").count() >= 10, "{log}");
}

#[test]
fn json_log_lines_are_json_objects_with_the_loop_fields() {
    let server = Serve::start(&["--log-format", "json"]);
    loop_of_25(&server);
    let log = log_with(&server, "loop blocked", 1);
    let mut blocked = Vec::new();
    for line in log.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\n{log}"));
        if v["message"] == "loop blocked" {
            blocked.push(v);
        }
    }
    assert_eq!(blocked.len(), 1, "{log}");
    let b = &blocked[0];
    assert_eq!(b["session"], "s1", "{b}");
    assert_eq!(b["tool"], "read", "{b}");
    assert_eq!(b["detector"], "generic_repeat", "{b}");
    assert_eq!(b["decision"], "block", "{b}");
    assert_eq!(b["loop_level"], "critical", "{b}");
    assert_eq!(b["level"], "WARN", "{b}");
    assert!(
        log.lines().any(|l| l.contains("listening on http://")),
        "{log}"
    );
}
