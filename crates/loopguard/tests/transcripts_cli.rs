//! End-to-end: the real binary on each transcript format, with golden reports.
//!
//! Golden files live next to the fixtures as `<name>.report.txt`. After an intended change
//! of the report, regenerate them with `LOOPGUARD_BLESS=1 cargo test -p loopguard --test
//! transcripts_cli` and review the diff.

mod common;
use common::root;

use std::path::PathBuf;
use std::process::{Command, Output};

fn loopguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .current_dir(root())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run loopguard")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// (fixture, expected format name, expected loops, expected detector in the report)
const CASES: &[(&str, &str, usize, &str)] = &[
    (
        "tests/fixtures/transcripts/openclaw/read-loop.jsonl",
        "openclaw",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/openclaw/exec-poll-loop.jsonl",
        "openclaw",
        1,
        "known_poll_no_progress",
    ),
    (
        "tests/fixtures/transcripts/openclaw/compaction-loop.jsonl",
        "openclaw",
        1,
        "compaction_loop_persisted",
    ),
    (
        "tests/fixtures/transcripts/openclaw/healthy.jsonl",
        "openclaw",
        0,
        "",
    ),
    (
        "tests/fixtures/transcripts/call-stream/poll-loop.json",
        "call-stream",
        1,
        "known_poll_no_progress",
    ),
    (
        "tests/fixtures/transcripts/claude-code/loop.jsonl",
        "claude-code",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/claude-code/compaction.jsonl",
        "claude-code",
        1,
        "compaction_loop_persisted",
    ),
    (
        "tests/fixtures/transcripts/claude-code/healthy.jsonl",
        "claude-code",
        0,
        "",
    ),
    (
        "tests/fixtures/transcripts/chat-completions/loop.json",
        "chat-completions",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/responses/loop.json",
        "responses",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/responses/compaction.json",
        "responses",
        1,
        "compaction_loop_persisted",
    ),
    (
        "tests/fixtures/transcripts/codex/rollout-2026-09-05T15-26-13-loop.jsonl",
        "codex",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/codex/rollout-2026-09-05T15-26-13-compaction.jsonl",
        "codex",
        1,
        "compaction_loop_persisted",
    ),
    (
        "tests/fixtures/transcripts/swe-agent/loop.traj",
        "swe-agent",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/mini-swe-agent/loop.traj.json",
        "mini-swe-agent",
        1,
        "generic_repeat",
    ),
    // Documents whose deciding key comes after the first 64 KiB.
    (
        "tests/fixtures/transcripts/swe-agent/v1-environment-last.traj",
        "swe-agent",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/mini-swe-agent/format-last.traj.json",
        "mini-swe-agent",
        1,
        "generic_repeat",
    ),
    // Results before their calls, a rollout cut mid-turn, a joined line.
    (
        "tests/fixtures/transcripts/claude-code/parallel-results-first.jsonl",
        "claude-code",
        0,
        "",
    ),
    (
        "tests/fixtures/transcripts/codex/rollout-2026-09-05T17-00-00-mid-turn.jsonl",
        "codex",
        0,
        "",
    ),
    (
        "tests/fixtures/transcripts/openclaw/v1-joined-line.jsonl",
        "openclaw",
        0,
        "",
    ),
    // More formats (docs/transcripts.md, section 2).
    (
        "tests/fixtures/transcripts/openhands/trajectory.json",
        "openhands",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/openhands/output.jsonl",
        "openhands-eval",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/openhands/events.jsonl",
        "openhands-events",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/anthropic/proxy-log.jsonl",
        "anthropic",
        0,
        "",
    ),
    (
        "tests/fixtures/transcripts/chat-log/tau-bench-results.json",
        "chat-log",
        1,
        "generic_repeat",
    ),
    // The coding agents' own session logs, written by the real CLIs under loopguard's hook.
    (
        "tests/fixtures/transcripts/gemini/guarded-loop.jsonl",
        "gemini",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/gemini-json/session-guarded-loop.json",
        "gemini-json",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/qwen/guarded-loop.jsonl",
        "qwen",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/copilot/guarded-loop.events.jsonl",
        "copilot",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/factory/guarded-loop.jsonl",
        "factory",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/claude-code/guarded-loop.jsonl",
        "claude-code",
        1,
        "generic_repeat",
    ),
    (
        "tests/fixtures/transcripts/codex/rollout-0.171-guarded-loop.jsonl",
        "codex",
        1,
        "generic_repeat",
    ),
];

#[test]
fn every_format_replays_through_the_binary_with_a_golden_report() {
    let bless = std::env::var_os("LOOPGUARD_BLESS").is_some();
    for (fixture, format, loops, detector) in CASES {
        let out = loopguard(&["replay", "--color", "never", fixture]);
        assert!(out.status.success(), "{fixture}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("reading as {format} (")),
            "{fixture}: format not announced: {stderr}"
        );
        let report = text(&out.stdout);
        assert!(
            report.contains(&format!("{loops} loop")),
            "{fixture}: expected {loops} loop(s):\n{report}"
        );
        if !detector.is_empty() {
            assert!(report.contains(detector), "{fixture}:\n{report}");
        }
        let golden = root().join(format!("{fixture}.report.txt"));
        if bless {
            std::fs::write(&golden, &report).unwrap();
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_else(|_| {
            panic!(
                "missing golden {}; run with LOOPGUARD_BLESS=1",
                golden.display()
            )
        });
        assert_eq!(
            report,
            want,
            "{fixture}: report differs from {}",
            golden.display()
        );
    }
}

#[test]
fn json_output_is_the_decision_stream_with_transcript_lines() {
    let out = loopguard(&[
        "replay",
        "--json",
        "tests/fixtures/transcripts/openclaw/read-loop.jsonl",
    ]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 50);
    let warns: Vec<_> = lines.iter().filter(|d| d["decision"] == "warn").collect();
    let blocks: Vec<_> = lines.iter().filter(|d| d["decision"] == "block").collect();
    assert_eq!(warns.len(), 10);
    // Observe mode by default: the blocks are reported, and the calls still "ran".
    assert_eq!(blocks.len(), 5);
    assert!(lines.iter().all(|d| d["decision"] != "ignored"));
    assert_eq!(warns[0]["count"], 10);
    assert_eq!(warns[0]["session"], "read-loop");
    assert_eq!(warns[0]["tool"], "read");
    // Decisions carry the transcript's line numbers.
    assert!(warns[0]["line"].as_u64().unwrap() > 20);
}

#[test]
fn enforce_mode_shows_what_would_have_been_prevented() {
    let out = loopguard(&[
        "replay",
        "--mode",
        "enforce",
        "--json",
        "tests/fixtures/transcripts/claude-code/loop.jsonl",
    ]);
    assert!(out.status.success());
    let decisions: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ignored = decisions
        .iter()
        .filter(|d| d["decision"] == "ignored")
        .count();
    let blocks = decisions
        .iter()
        .filter(|d| d["decision"] == "block")
        .count();
    assert_eq!(blocks, 5);
    assert_eq!(
        ignored, 5,
        "each blocked call's recorded result is absorbed"
    );
}

#[test]
fn directory_replay_ends_with_a_table_and_skips_bad_lines() {
    let out = loopguard(&["replay", "--color", "never", "tests/fixtures/transcripts/"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("calls in loops"), "{report}");
    assert!(report.lines().any(|l| l.starts_with("total (")), "{report}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("truncated.jsonl:6: skipped: the last line is cut off"),
        "{stderr}"
    );
    assert!(
        stderr.contains("v4-unknown-entry.jsonl:4: skipped: unknown entry type"),
        "{stderr}"
    );
}

#[test]
fn strict_mode_stops_at_the_first_malformed_line() {
    let out = loopguard(&[
        "replay",
        "--stop-on-bad-line",
        "tests/fixtures/transcripts/openclaw/truncated.jsonl",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("truncated.jsonl:6:"), "{stderr}");
    assert!(stderr.contains("--stop-on-bad-line"), "{stderr}");
}

#[test]
fn unrecognised_files_name_the_formats_and_how_to_choose() {
    let dir = std::env::temp_dir().join(format!("lg-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("notes.json");
    std::fs::write(&file, "{\"hello\": \"world\"}\n").unwrap();
    let out = loopguard(&["replay", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("cannot tell which format"), "{stderr}");
    assert!(stderr.contains("--format"), "{stderr}");
    assert!(
        stderr.contains("claude-code") && stderr.contains("openclaw-sqlite"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn convert_writes_an_event_stream_that_replays_identically() {
    // Responses items, decided with tools as given. (An agent's own log is judged with the
    // agent's tool profile, which an event stream does not carry: docs/replay.md.)
    let fixture = "tests/fixtures/transcripts/responses/loop.json";
    let converted = loopguard(&["convert", fixture]);
    assert!(converted.status.success(), "{}", text(&converted.stderr));
    let dir = std::env::temp_dir().join(format!("lg-convert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("events.jsonl");
    std::fs::write(&events, &converted.stdout).unwrap();
    // The same decisions (apart from line numbers) from the transcript and from its events.
    let strip = |o: &Output| -> Vec<serde_json::Value> {
        text(&o.stdout)
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("line");
                v
            })
            .collect()
    };
    let cfg = dir.join("cfg.json");
    std::fs::write(&cfg, r#"{"tools":{"loopDetection":{"enabled":true}}}"#).unwrap();
    let a = loopguard(&[
        "replay",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        "--mode",
        "observe",
        fixture,
    ]);
    let b = loopguard(&[
        "replay",
        "--config",
        cfg.to_str().unwrap(),
        "--json",
        "--mode",
        "observe",
        events.to_str().unwrap(),
    ]);
    assert!(a.status.success() && b.status.success());
    let (a, b) = (strip(&a), strip(&b));
    assert_eq!(a.len(), 50);
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sqlite_store_replays_every_session() {
    let dir = std::env::temp_dir().join(format!("lg-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("openclaw-agent.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER, PRIMARY KEY(session_id, seq));",
    )
    .unwrap();
    for (session, fixture) in [("s-loop", "read-loop.jsonl"), ("s-ok", "healthy.jsonl")] {
        let text = std::fs::read_to_string(
            root()
                .join("tests/fixtures/transcripts/openclaw")
                .join(fixture),
        )
        .unwrap();
        for (seq, line) in text.lines().enumerate() {
            conn.execute(
                "INSERT INTO transcript_events VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![session, seq as i64, line, 1_788_622_000_000i64 + seq as i64],
            )
            .unwrap();
        }
    }
    drop(conn);
    let out = loopguard(&["replay", "--color", "never", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(text(&out.stderr).contains("reading as openclaw-sqlite"));
    // Each stored session is a session of its own, named after the store and its id.
    assert!(
        report.contains("session openclaw-agent/s-loop ("),
        "{report}"
    );
    assert!(report.contains("session openclaw-agent/s-ok ("), "{report}");
    assert!(report.contains("generic_repeat"), "{report}");
    // `convert --session` picks one stored session.
    let one = loopguard(&["convert", "--session", "s-loop", db.to_str().unwrap()]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let events = text(&one.stdout);
    assert!(events.lines().count() > 20, "{events}");
    assert!(
        events.lines().all(|l| l.contains("\"session\":\"s-loop\"")),
        "{events}"
    );
    let missing = loopguard(&["convert", "--session", "nope", db.to_str().unwrap()]);
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("it holds: s-loop, s-ok"),
        "{}",
        text(&missing.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn loopguard_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .current_dir(root())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loopguard");
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_transcript_can_come_from_standard_input() {
    let fixture = root().join("tests/fixtures/transcripts/openclaw/read-loop.jsonl");
    let bytes = std::fs::read(&fixture).unwrap();
    let piped = loopguard_stdin(&["replay", "--format", "openclaw", "-"], &bytes);
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    let from_file = loopguard(&["replay", fixture.to_str().unwrap()]);
    // The same loop, found the same way: only the session's name and source differ.
    let loop_line = |out: &Output| {
        text(&out.stdout)
            .lines()
            .find(|l| l.contains("generic_repeat, count up to 24, lines 23-51"))
            .map(str::to_string)
    };
    assert!(loop_line(&piped).is_some(), "{}", text(&piped.stdout));
    assert_eq!(loop_line(&piped), loop_line(&from_file));
    // A document format cannot stream.
    let doc = loopguard_stdin(&["replay", "--format", "swe-agent", "-"], b"{}");
    assert!(!doc.status.success());
    assert!(
        text(&doc.stderr).contains("standard input"),
        "{}",
        text(&doc.stderr)
    );
}

#[test]
fn several_event_streams_keep_the_event_contract() {
    let dir = scratch("streams");
    let good = "{\"type\":\"call\",\"tool\":\"read\",\"args\":{\"path\":\"a\"}}\n";
    std::fs::write(dir.join("a.jsonl"), good).unwrap();
    std::fs::write(dir.join("empty.jsonl"), "").unwrap();
    std::fs::write(
        dir.join("b.jsonl"),
        format!("{good}{{\"type\":\"call\",\"args\":{{}}}}\n"),
    )
    .unwrap();
    let out = loopguard(&["replay", "--json", dir.to_str().unwrap()]);
    // b.jsonl line 2 lacks `tool`: an event stream with a bad line is an error.
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("b.jsonl:2:"), "{stderr}");
    assert!(stderr.contains("tool"), "{stderr}");
    // The files before it were replayed, in the events' own session `default`.
    let first = text(&out.stdout);
    let decisions: Vec<_> = first.lines().collect();
    assert_eq!(decisions.len(), 2, "{first}");
    assert!(decisions[0].contains("\"session\":\"default\""), "{first}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_with_the_same_name_get_distinct_sessions_and_repeats_are_read_once() {
    let dir = scratch("names");
    let fixture = root().join("tests/fixtures/transcripts/openclaw/read-loop.jsonl");
    for sub in ["main/sessions", "ops/sessions"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::copy(&fixture, dir.join(sub).join("s.jsonl")).unwrap();
    }
    let d = dir.to_str().unwrap().to_string();
    // The directory and a glob reach the same two files: each is replayed once.
    let glob = format!("{d}/*/sessions/*.jsonl");
    let out = loopguard(&["replay", "--color", "never", &d, &glob]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("session main/sessions/s ("), "{report}");
    assert!(report.contains("session ops/sessions/s ("), "{report}");
    assert_eq!(
        report.matches("generic_repeat, count up to 24").count(),
        2,
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_long_first_line_is_still_recognised() {
    let dir = scratch("longline");
    let fixture = root().join("tests/fixtures/transcripts/claude-code/loop.jsonl");
    let body = std::fs::read_to_string(&fixture).unwrap();
    // A first line far beyond the 64 KiB the format check reads at first.
    let padding = "x".repeat(200_000);
    let first = format!("{{\"type\":\"summary\",\"summary\":\"{padding}\",\"leafUuid\":\"z\"}}\n");
    let file = dir.join("long.jsonl");
    std::fs::write(&file, format!("{first}{body}")).unwrap();
    let out = loopguard(&["replay", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("reading as claude-code"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inputs read only once (docs/transcripts.md §4). Detection reads a prefix and keeps
/// it, so a FIFO and a pipe given as a path give the same report as the file.
#[test]
fn fifos_and_pipes_read_like_files() {
    use std::io::Write;
    use std::process::Stdio;
    let fixture = "tests/fixtures/transcripts/swe-agent/v1-environment-last.traj";
    let bytes = std::fs::read(root().join(fixture)).unwrap();
    let file_report = text(&loopguard(&["replay", "--color", "never", fixture]).stdout);
    // The report without the session's name and path: its counts and loops.
    let body = |report: &str| {
        let mut lines: Vec<String> = report.lines().map(str::to_string).collect();
        if let Some((_, counts)) = lines.get(2).and_then(|l| l.split_once("): ")) {
            lines[2] = counts.to_string();
        }
        lines
    };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("run.traj");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let writer = {
        let (fifo, bytes) = (fifo.clone(), bytes.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = f.write_all(&bytes);
        })
    };
    let out = loopguard(&["replay", "--color", "never", fifo.to_str().unwrap()]);
    writer.join().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fifo_report = text(&out.stdout);
    assert!(fifo_report.contains("1 loop found"), "{fifo_report}");
    assert_eq!(body(&fifo_report), body(&file_report));
    // `convert /dev/stdin` with a pipe on standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["convert", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("reading as swe-agent"));
    assert_eq!(text(&out.stdout).matches(r#""type":"call""#).count(), 24);
}
