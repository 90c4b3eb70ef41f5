//! End-to-end tests: the real `loopguard` binary on event files.

mod common;
use common::fixtures;

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn loopguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(args)
        .output()
        .expect("run loopguard")
}

fn loopguard_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loopguard");
    // loopguard may exit before reading everything (a bad config): a broken pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

fn json_lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Every parity case: the decision stream OpenClaw produced, field for field.
#[test]
fn parity_sample_decisions_match_openclaw() {
    let dir = fixtures().join("parity");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 15, "parity fixtures missing");
    for case in cases {
        let config = dir.join(format!("{case}.config.json"));
        let events = dir.join(format!("{case}.events.jsonl"));
        let out = loopguard(&[
            "replay",
            "--config",
            config.to_str().unwrap(),
            "--json",
            events.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = json_lines(&out.stdout);
        let want = json_lines(&std::fs::read(dir.join(format!("{case}.expected.jsonl"))).unwrap());
        assert_eq!(got.len(), want.len(), "{case}: number of decisions");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{case}: line {}", w["line"]);
        }
    }
}

#[test]
fn output_is_byte_identical_to_json_stringify_field_order() {
    // The expected files were written by JSON.stringify; loopguard writes the same bytes.
    let dir = fixtures().join("parity");
    let out = loopguard(&[
        "replay",
        "--config",
        dir.join("pingpong_critical_stable.config.json")
            .to_str()
            .unwrap(),
        "--json",
        dir.join("pingpong_critical_stable.events.jsonl")
            .to_str()
            .unwrap(),
    ]);
    let want = std::fs::read(dir.join("pingpong_critical_stable.expected.jsonl")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&want)
    );
}

#[test]
fn stdin_and_blank_lines() {
    let input = "\n{\"type\":\"call\",\"tool\":\"read\"}\n   \n{\"type\":\"compaction\",\"run\":\" r \"}\r\n";
    let out = loopguard_stdin(&["replay", "--json", "-"], input);
    assert!(out.status.success());
    let d = json_lines(&out.stdout);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["line"], 2);
    assert_eq!(
        d[0]["argsHash"],
        "read:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    assert_eq!(d[1]["line"], 4);
    assert_eq!(d[1]["decision"], "armed");
    assert_eq!(d[1]["run"], " r ");
    assert!(d[1].get("tool").is_none());
}

#[test]
fn bad_input_names_line_and_field_and_fails() {
    let cases = [
        ("{\"type\":\"call\"}\n", "stdin:1:", "`tool`"),
        (
            "{\"type\":\"call\",\"tool\":\"a\"}\n{\"type\":\"outcome\",\"tool\":\"a\"}\n",
            "stdin:2:",
            "`result`",
        ),
        (
            "{\"type\":\"outcome\",\"tool\":\"a\",\"result\":1,\"error\":2}\n",
            "stdin:1:",
            "not both",
        ),
        ("{\"type\":\"nap\",\"tool\":\"a\"}\n", "stdin:1:", "`type`"),
        ("not json\n", "stdin:1:", "not valid JSON"),
        ("[]\n", "stdin:1:", "JSON object"),
        (
            "{\"type\":\"call\",\"tool\":\"a\",\"run\":5}\n",
            "stdin:1:",
            "`run`",
        ),
    ];
    for (input, line, field) in cases {
        let out = loopguard_stdin(&["replay", "--json", "-"], input);
        assert!(!out.status.success(), "{input}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(line) && err.contains(field), "{input}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Decisions before the bad line were already written.
    let out = loopguard_stdin(
        &["replay", "--json", "-"],
        "{\"type\":\"call\",\"tool\":\"a\"}\n{oops\n",
    );
    assert!(!out.status.success());
    assert_eq!(json_lines(&out.stdout).len(), 1);
}

#[test]
fn invalid_utf8_is_an_error_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"type\":\"call\",\"tool\":\"\xff\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stdin:1:") && err.contains("UTF-8"), "{err}");
}

fn reads(n: usize, with_outcomes: bool) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "{{\"type\":\"call\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/same.txt\"}}}}\n"
        ));
        if with_outcomes {
            s.push_str(&format!("{{\"type\":\"outcome\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/same.txt\"}},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"same output\"}}]}}}}\n"));
        }
    }
    s
}

fn enabled_config() -> tempfile_lite::TempFile {
    tempfile_lite::TempFile::new(
        "cfg.json5",
        "{ tools: { loopDetection: { enabled: true } } } // on\n",
    )
}

#[test]
fn enforce_blocks_and_absorbs_observe_runs_everything() {
    let cfg = enabled_config();
    let input = reads(25, true);
    let enforce = json_lines(
        &loopguard_stdin(&["replay", "--config", cfg.path(), "--json", "-"], &input).stdout,
    );
    let decisions: Vec<_> = enforce
        .iter()
        .map(|d| d["decision"].as_str().unwrap().to_string())
        .collect();
    // Call 21 (line 41) is the first block; its outcome (line 42) is ignored.
    assert_eq!(decisions[40], "block");
    assert_eq!(decisions[41], "ignored");
    assert!(enforce[41]["resultHash"].is_null());
    assert_eq!(enforce[40]["count"], 20);
    // The block is sticky.
    assert_eq!(decisions.iter().filter(|d| *d == "block").count(), 5);

    let observe = json_lines(
        &loopguard_stdin(
            &[
                "replay",
                "--config",
                cfg.path(),
                "--mode",
                "observe",
                "--json",
                "-",
            ],
            &input,
        )
        .stdout,
    );
    // In observe mode every outcome is recorded, so the streak keeps growing and the
    // global circuit breaker takes over at 30 identical outcomes... but only 25 calls ran:
    // calls 21..25 are blocks by generic_repeat with growing counts.
    assert!(observe.iter().all(|d| d["decision"] != "ignored"));
    let counts: Vec<_> = observe
        .iter()
        .filter(|d| d["decision"] == "block")
        .map(|d| d["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [20, 21, 22, 23, 24]);
}

#[test]
fn human_summary_lists_loops() {
    let cfg = enabled_config();
    let out = loopguard_stdin(&["replay", "--config", cfg.path(), "-"], &reads(22, true));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("session default: 22 calls"), "{text}");
    assert!(text.contains("read"), "{text}");
    assert!(text.contains("generic_repeat"), "{text}");
    assert!(
        text.contains("first warning at line 21 (count 10)"),
        "{text}"
    );
    assert!(text.contains("first block at line 41 (count 20)"), "{text}");
}

#[test]
fn replay_refuses_a_config_openclaw_would_reject() {
    let cfg = tempfile_lite::TempFile::new(
        "bad.json5",
        "{\n  tools: {\n    loopDetection: {\n      enabled: true,\n      repeatThreshold: 3,\n    },\n  },\n}\n",
    );
    let out = loopguard_stdin(
        &["replay", "--config", cfg.path(), "--json", "-"],
        &reads(1, false),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 5") && err.contains("repeatThreshold"),
        "{err}"
    );
}

/// docs/decisions.md item 3: numbers of any wrong type fall back to their defaults at run time, as
/// OpenClaw's resolver does, with a warning naming the field, the value found and the value
/// used; the replay runs and decides with the defaults.
#[test]
fn replay_runs_with_the_defaults_for_numbers_that_are_not_positive_integers() {
    let cfg = tempfile_lite::TempFile::new(
        "odd.json5",
        "{\n  tools: {\n    loopDetection: {\n      enabled: true,\n      globalCircuitBreakerThreshold: \"5\",\n      historySize: 0,\n      unknownToolThreshold: null,\n      warningThreshold: 2.5,\n      criticalThreshold: true,\n    },\n  },\n}\n",
    );
    let out = loopguard_stdin(
        &["replay", "--config", cfg.path(), "--json", "-"],
        &reads(25, true),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for (line, field, found, used) in [
        (5, "globalCircuitBreakerThreshold", "\"5\"", "30"),
        (6, "historySize", "0", "30"),
        (7, "unknownToolThreshold", "null", "10"),
        (8, "warningThreshold", "2.5", "10"),
        (9, "criticalThreshold", "true", "20"),
    ] {
        let want = format!(
            "odd.json5: warning: line {line}, column 7: tools.loopDetection.{field}: {found} is not a positive integer, so the default {used} is used at run time"
        );
        assert!(err.contains(&want), "{want}\n{err}");
    }
    // The defaults decide: the first warning at the 11th call (count 10), the first block
    // at the 21st (count 20).
    let decisions = json_lines(&out.stdout);
    assert_eq!(decisions[18]["decision"], "allow");
    assert_eq!(decisions[20]["decision"], "warn");
    assert_eq!(decisions[20]["count"], 10);
    assert_eq!(decisions[40]["decision"], "block");
    assert_eq!(decisions[40]["count"], 20);
}

/// Runs loopguard with stdout and stderr in one pipe whose reader is gone before loopguard
/// has anything to say (it first waits for `input` on stdin): every write meets a closed
/// pipe, as `loopguard … 2>&1 | head -0` would.
fn with_closed_output(args: &[&str], input: &[u8]) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = cmd.spawn().expect("spawn loopguard");
    drop(cmd);
    drop(reader);
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait().unwrap()
}

/// A closed pipe: `loopguard replay DIR 2>&1 | head -3` once panicked (status 101) when the
/// reader left. A closed pipe now ends a run that would succeed quietly, with status 0,
/// on stdout (the report) as on stderr (the skipped-line notes), and a failing run still
/// fails.
#[test]
fn a_closed_pipe_is_a_quiet_exit_not_a_panic() {
    let transcript =
        std::fs::read(fixtures().join("transcripts/openclaw/read-loop.jsonl")).unwrap();
    let mut noisy = b"this line is not JSON\n".to_vec();
    noisy.extend_from_slice(&transcript);
    for args in [
        &["replay", "--format", "openclaw", "-"][..],
        &["replay", "--format", "openclaw", "--json", "-"],
    ] {
        for input in [&transcript, &noisy] {
            let status = with_closed_output(args, input);
            assert_eq!(status.code(), Some(0), "{args:?}: {status}");
        }
    }
    // `convert` reads a file; it waits for nothing, so the reader may still be there for
    // its first lines, but not for the rest.
    let file = tempfile_lite::TempFile::new("noisy.jsonl", &String::from_utf8(noisy).unwrap());
    let status = with_closed_output(&["convert", "--format", "openclaw", file.path()], b"");
    assert_eq!(status.code(), Some(0), "convert: {status}");
    // A bad line in an event stream fails the replay, pipe or no pipe.
    let status = with_closed_output(&["replay", "--json", "-"], b"{\"type\":\"nope\"}\n");
    assert_eq!(status.code(), Some(1));

    // The reported pipeline: three lines read, then the reader leaves.
    use std::io::BufRead;
    let (reader, writer) = std::io::pipe().unwrap();
    let dir = fixtures().join("transcripts");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
    cmd.args(["replay", dir.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = cmd.spawn().expect("spawn loopguard");
    drop(cmd);
    let mut lines = std::io::BufReader::new(reader).lines();
    for _ in 0..3 {
        assert!(lines.next().unwrap().is_ok());
    }
    drop(lines);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// A tiny self-cleaning temporary file (tests must not depend on the environment).
mod tempfile_lite {
    use std::path::PathBuf;

    pub struct TempFile(PathBuf);

    impl TempFile {
        pub fn new(name: &str, contents: &str) -> Self {
            use std::sync::atomic::{AtomicUsize, Ordering};
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "loopguard-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(name);
            std::fs::write(&path, contents).unwrap();
            TempFile(path)
        }

        pub fn path(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// A stream of more than 1 MB is parsed ahead on worker threads by default when there are
/// two cores or more (docs/replay.md): the decisions are byte for byte those of one thread
/// (`--no-parse-ahead`) and of three workers, and a bad line near the end stops all three
/// after the same decisions, naming the file and line.
#[test]
fn parsing_ahead_or_not_writes_the_same_decisions_and_stops_at_the_same_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = enabled_config();
    let mut text = String::new();
    for i in 0..12_000u32 {
        text.push_str(&format!(
            "{{\"type\":\"call\",\"session\":\"s{}\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/f{}\"}}}}\n",
            i % 40,
            i % 40 % 3
        ));
        text.push_str(&format!(
            "{{\"type\":\"outcome\",\"session\":\"s{}\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/f{}\"}},\"result\":\"same {}\"}}\n",
            i % 40,
            i % 40 % 3,
            i % 40 % 2
        ));
    }
    assert!(text.len() > 1 << 20);
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, &text).unwrap();
    text.push_str("{\"type\":\"call\",\"tool\":7}\n");
    text.push_str(&"{\"type\":\"call\",\"tool\":\"read\"}\n".repeat(50));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, &text).unwrap();
    let run = |how: &[&str], path: &std::path::Path| {
        let mut args = vec!["replay", "--config", cfg.path(), "--json"];
        args.extend_from_slice(how);
        args.push(path.to_str().unwrap());
        loopguard(&args)
    };
    let ways: [&[&str]; 3] = [
        &["--no-parse-ahead"],
        &[],
        &["--parse-ahead", "--parse-threads", "3"],
    ];
    let one = run(ways[0], &good);
    assert!(one.status.success());
    assert_eq!(one.stdout.iter().filter(|&&b| b == b'\n').count(), 24_000);
    assert!(String::from_utf8_lossy(&one.stdout).contains(r#""decision":"block""#));
    let one_bad = run(ways[0], &bad);
    assert!(!one_bad.status.success());
    let err = String::from_utf8_lossy(&one_bad.stderr);
    assert!(
        err.contains("bad.jsonl:24001:") && err.contains("`tool`"),
        "{err}"
    );
    for way in &ways[1..] {
        let out = run(way, &good);
        assert!(out.status.success(), "{way:?}");
        assert!(out.stdout == one.stdout, "{way:?}: decisions differ");
        let out = run(way, &bad);
        assert_eq!(out.status.code(), one_bad.status.code(), "{way:?}");
        assert!(out.stdout == one_bad.stdout, "{way:?}: decisions differ");
        assert_eq!(out.stderr, one_bad.stderr, "{way:?}");
    }
    let both = loopguard(&["replay", "--parse-ahead", "--no-parse-ahead", "x.jsonl"]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
}
