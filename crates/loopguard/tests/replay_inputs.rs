//! End-to-end: what `loopguard replay` does with its inputs (docs/replay.md; items 5, 7, 8 and
//! 9): nothing read silently as nothing, every skipped file named, each input replayed
//! with its own defaults, times from `ts`, and clean messages.

mod common;
use common::root;

use std::path::PathBuf;
use std::process::{Command, Output};

fn loopguard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .current_dir(root())
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("run loopguard")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lg-inputs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const CLAUDE_LOOP: &str = "tests/fixtures/transcripts/claude-code/loop.jsonl";
const OPENCLAW_LOOP: &str = "tests/fixtures/transcripts/openclaw/read-loop.jsonl";

/// Item 5: a forced format that finds no call in a file full of content is an error
/// naming the file and the format, not "0 events".
#[test]
fn a_wrong_forced_format_is_an_error_naming_file_and_format() {
    let out = loopguard(&["replay", "--format", "openclaw", CLAUDE_LOOP]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "error: {CLAUDE_LOOP}: read as openclaw (forced by --format): no tool call found"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("Choose one with --format"), "{stderr}");
    // Nothing was read: no report pretending the file is clean.
    assert!(
        !text(&out.stdout).contains("0 loops found"),
        "{}",
        text(&out.stdout)
    );
    // The right format still replays and exits 0.
    let ok = loopguard(&["replay", "--format", "claude-code", CLAUDE_LOOP]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
}

/// Item 5: a guessed format that yields no call from lines it cannot read fails too.
#[test]
fn a_guessed_format_that_finds_no_call_in_unreadable_lines_fails() {
    let dir = scratch("guessed");
    let file = dir.join("odd.jsonl");
    let first = std::fs::read_to_string(root().join(CLAUDE_LOOP))
        .unwrap()
        .lines()
        .find(|l| l.contains("\"type\":\"user\""))
        .unwrap()
        .to_string();
    std::fs::write(
        &file,
        format!("{first}\nnot json at all\n{{\"type\":\"mystery\"}}\n"),
    )
    .unwrap();
    let out = loopguard(&["replay", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("odd.jsonl: read as claude-code (recognised from its content): no tool call found, and 2 lines were not understood"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 5: a directory replay names every file it passes over and why; unreadable and
/// unrecognised files make the exit status non-zero, and the report still covers the
/// rest.
#[test]
fn a_directory_replay_names_every_skipped_file_and_fails_on_lost_data() {
    let dir = scratch("dir");
    std::fs::copy(root().join(OPENCLAW_LOOP), dir.join("good.jsonl")).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    std::fs::write(dir.join("sessions.json"), "{}").unwrap();
    std::fs::write(dir.join(".hidden.jsonl"), "{}").unwrap();
    std::fs::write(dir.join("mystery.json"), "{\"hello\": \"world\"}\n").unwrap();
    std::os::unix::fs::symlink(dir.join("gone.jsonl"), dir.join("broken.jsonl")).unwrap();
    let out = loopguard(&["replay", "--color", "never", dir.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    let stdout = text(&out.stdout);
    let d = dir.display();
    for line in [
        format!("{d}/.hidden.jsonl: skipped: hidden"),
        format!("{d}/notes.txt: skipped: not a transcript extension"),
        format!("{d}/sessions.json: skipped: OpenClaw's session index, not a session"),
        format!("{d}/broken.jsonl: skipped: cannot be read: "),
        format!("{d}/mystery.json: skipped: not a transcript format loopguard knows"),
    ] {
        assert!(stderr.contains(&line), "missing {line:?} in\n{stderr}");
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The rest is still replayed and reported.
    assert!(stdout.contains("session good ("), "{stdout}");
    assert!(stdout.contains("generic_repeat"), "{stdout}");
    assert!(
        stdout.contains("2 files could not be replayed (see above)"),
        "{stdout}"
    );

    // Files skipped only for their names do not fail the replay.
    std::fs::remove_file(dir.join("broken.jsonl")).unwrap();
    std::fs::remove_file(dir.join("mystery.json")).unwrap();
    let out = loopguard(&["replay", "--color", "never", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("notes.txt: skipped: not a transcript extension"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 5: a file that cannot be read among several: the others are reported, the exit
/// status says one was lost.
#[test]
fn an_unreadable_document_among_several_is_named_and_fails_the_run() {
    let dir = scratch("unreadable");
    let bad = dir.join("cut.traj");
    // Recognised as SWE-agent from its start, but cut off: the document is not JSON.
    let full =
        std::fs::read_to_string(root().join("tests/fixtures/transcripts/swe-agent/loop.traj"))
            .unwrap();
    std::fs::write(&bad, &full[..full.len() / 2]).unwrap();
    let out = loopguard(&[
        "replay",
        "--color",
        "never",
        bad.to_str().unwrap(),
        OPENCLAW_LOOP,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cut.traj: cannot be read as swe-agent (recognised from its content)"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("session read-loop ("));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn repeated_events(n: usize, ts0: u64, step: u64) -> String {
    let mut s = String::new();
    for i in 0..n {
        let ts = ts0 + i as u64 * step;
        s.push_str(&format!(
            "{{\"type\":\"call\",\"session\":\"ev\",\"run\":\"r\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/a\"}},\"ts\":{ts}}}\n{{\"type\":\"outcome\",\"session\":\"ev\",\"run\":\"r\",\"callId\":\"c{i}\",\"tool\":\"read\",\"args\":{{\"path\":\"/a\"}},\"result\":\"same\",\"ts\":{}}}\n",
            ts + step / 2
        ));
    }
    s
}

/// Item 7: an event stream replays with its own defaults (enforce, OpenClaw's config)
/// whether or not a transcript is replayed with it, and the transcript with its own
/// (observe, detectors on).
#[test]
fn each_input_keeps_its_own_mode_and_config() {
    let dir = scratch("same");
    let events = dir.join("a.events.jsonl");
    std::fs::write(&events, repeated_events(25, 1_788_622_000_000, 1000)).unwrap();
    let ev = events.to_str().unwrap();
    let alone = loopguard(&["replay", "--json", ev]);
    let together = loopguard(&["replay", "--json", ev, CLAUDE_LOOP]);
    assert!(alone.status.success() && together.status.success());
    let of_session = |o: &Output, s: &str| -> Vec<String> {
        text(&o.stdout)
            .lines()
            .filter(|l| l.contains(&format!("\"session\":\"{s}\"")))
            .map(str::to_string)
            .collect()
    };
    let a = of_session(&alone, "ev");
    assert_eq!(a.len(), 50);
    // OpenClaw's defaults: detectors off, so 25 identical calls are all allowed.
    assert!(
        a.iter().all(|l| !l.contains("\"decision\":\"warn\"")),
        "{a:?}"
    );
    assert_eq!(a, of_session(&together, "ev"));
    // The transcript still finds its loop (detectors on) in observe mode: its blocked
    // calls' results are recorded, not ignored.
    let t = of_session(&together, "loop");
    assert!(t.iter().any(|l| l.contains("\"decision\":\"block\"")));
    assert!(!t.iter().any(|l| l.contains("\"decision\":\"ignored\"")));
    let report = loopguard(&["replay", "--color", "never", ev, CLAUDE_LOOP]);
    assert!(
        text(&report.stdout)
            .contains("(mode: enforce for 1 event stream, observe for 1 transcript)"),
        "{}",
        text(&report.stdout)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 8: the `ts` of an event stream gives the report its times and durations.
#[test]
fn event_stream_times_feed_the_report() {
    let dir = scratch("ts");
    let events = dir.join("timed.jsonl");
    std::fs::write(&events, repeated_events(25, 1_788_622_018_000, 2000)).unwrap();
    let cfg = dir.join("cfg.json");
    std::fs::write(&cfg, r#"{"tools":{"loopDetection":{"enabled":true}}}"#).unwrap();
    let out = loopguard(&[
        "replay",
        "--color",
        "never",
        "--config",
        cfg.to_str().unwrap(),
        events.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("from 2026-09-05 15:26:58Z to 2026-09-05 15:27:47Z (49.0s)"),
        "{report}"
    );
    assert!(
        report.contains("first warning at line 21 (count 10) at 2026-09-05 15:27:18Z"),
        "{report}"
    );
    assert!(report.contains("first block at line 41 (count 20) at 2026-09-05 15:27:38Z"));
    // Calls 11 to 25, two seconds apart, from the first warning on.
    assert!(
        report.contains("spent in the loop after the first warning: 15 calls, 28.0s"),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 9: `-v` logs carry no colour codes with `--color never` (and do with `always`).
#[test]
fn verbose_logs_follow_the_color_option() {
    let never = loopguard(&["-v", "replay", "--color", "never", OPENCLAW_LOOP]);
    assert!(never.status.success());
    let stderr = text(&never.stderr);
    assert!(stderr.contains("loopguard::"), "no log lines: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let always = loopguard(&["-v", "replay", "--color", "always", OPENCLAW_LOOP]);
    assert!(text(&always.stderr).contains('\u{1b}'));
}

/// Item 9: skipped lines say "skipped" once; --stop-on-bad-line says it stopped.
#[test]
fn skipped_and_strict_messages_read_well() {
    let out = loopguard(&[
        "replay",
        "--color",
        "never",
        "tests/fixtures/transcripts/claude-code/traps.jsonl",
    ]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("traps.jsonl:5: skipped: unknown line type \"future-thing\"\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("; skipped"), "{stderr}");
    let strict = loopguard(&[
        "replay",
        "--stop-on-bad-line",
        "tests/fixtures/transcripts/openclaw/truncated.jsonl",
    ]);
    assert!(!strict.status.success());
    let stderr = text(&strict.stderr);
    assert!(
        stderr.contains("truncated.jsonl:6: the last line is cut off")
            && stderr.contains("; stopped here because of --stop-on-bad-line"),
        "{stderr}"
    );
    assert!(!stderr.contains("--stop-on-bad-line stops at"), "{stderr}");
}

/// Item 9: an HTML path that cannot be written fails before anything is replayed.
#[test]
fn an_unwritable_html_path_fails_first() {
    let out = loopguard(&[
        "replay",
        "--html",
        "/nonexistent/x.html",
        CLAUDE_LOOP,
        OPENCLAW_LOOP,
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot write /nonexistent/x.html"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("reading as"),
        "replayed before failing: {stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Item 9: one session, one abort, one loop: singular.
#[test]
fn counts_of_one_are_singular() {
    let out = loopguard(&[
        "replay",
        "--color",
        "never",
        "tests/fixtures/transcripts/openclaw/compaction-loop.jsonl",
    ]);
    let report = text(&out.stdout);
    assert!(report.contains(", 1 session, 1 loop found"), "{report}");
    assert!(report.contains(", 1 abort\n"), "{report}");
    assert!(!report.contains("1 sessions") && !report.contains("1 aborts"));
}

/// Item 5: among several inputs, a recognised session that simply made no tool call is not
/// an error: it gets a note, the report and exit status 0. Alone (docs/replay.md: a run that
/// found nothing must not look clean), or with its format forced, it is an error.
#[test]
fn a_recognised_session_without_calls_is_a_note_not_an_error() {
    let dir = scratch("nocalls");
    let file = dir.join("chat.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(
        root().join("tests/fixtures/transcripts/claude-code/healthy.jsonl"),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.contains("tool_use") && !l.contains("tool_result"))
    .map(str::to_string)
    .collect();
    assert!(lines.len() >= 3);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = loopguard(&[
        "replay",
        "--color",
        "never",
        file.to_str().unwrap(),
        CLAUDE_LOOP,
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("chat.jsonl: note: no tool call found"),
        "{stderr}"
    );
    let alone = loopguard(&["replay", "--color", "never", file.to_str().unwrap()]);
    assert!(!alone.status.success());
    assert!(
        text(&alone.stderr).contains(
            "read as claude-code (recognised from its content): no tool call found in its content"
        ),
        "{}",
        text(&alone.stderr)
    );
    assert!(
        text(&out.stdout).contains("session chat ("),
        "{}",
        text(&out.stdout)
    );
    let forced = loopguard(&["replay", "--format", "claude-code", file.to_str().unwrap()]);
    assert!(!forced.status.success());
    assert!(
        text(&forced.stderr).contains(
            "read as claude-code (forced by --format): no tool call found in its content"
        ),
        "{}",
        text(&forced.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file whose format is guessed and that gives no call at all (a real Anthropic
/// Managed Agents export did) fails with the note as the error, as a forced format does;
/// a directory with nothing readable names every file it skipped.
#[test]
fn a_guessed_format_without_any_call_fails_and_an_empty_folder_names_its_files() {
    let dir = scratch("nocall");
    let msg = dir.join("msg.json");
    std::fs::write(
        &msg,
        r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}"#,
    )
    .unwrap();
    let out = loopguard(&["replay", "--color", "never", msg.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: ")
            && err.contains(
                "msg.json: read as anthropic (recognised from its content): no tool call found"
            ),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("0 events"),
        "{}",
        text(&out.stdout)
    );

    let empty = dir.join("folder");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "hello").unwrap();
    std::fs::write(empty.join("README.md"), "# hi").unwrap();
    let out = loopguard(&["replay", empty.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("2 files skipped"), "{err}");
    for f in ["notes.txt", "README.md"] {
        assert!(
            err.contains(&format!("folder/{f}: not a transcript extension")),
            "{f}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
