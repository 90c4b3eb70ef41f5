//! Reading problems met in real files, each on a fixture shaped like the real file.
//!
//! 1. documents decided by their structure, however large (SWE-agent 1.x with
//!    `environment` last, pretty-printed mini-swe-agent with `trajectory_format` last);
//! 2. Claude Code results written before their calls;
//! 3. calls without a result replayed, Codex `exec_command_end` used as the outcome;
//! 4. two JSON objects on one line (pi v1) both read, with a note;
//! 5. detection through a pipe keeps what it read (also in `all_formats.rs`).

#[allow(dead_code)]
mod support;

use loopguard_adapters::claude_code::ClaudeCodeAdapter;
use loopguard_adapters::reader::{self, Detected, Flow, Item, ReadOptions, Source};
use loopguard_adapters::responses::CodexRolloutAdapter;
use loopguard_adapters::{detect, Context, DiagnosticKind, Format, SourcedEvent};
use loopguard_events::{EventKind, Payload};
use support::{brief, fixture, fixture_path, json, kinds};

fn ctx() -> Context {
    Context {
        session: "s".into(),
        agent: None,
    }
}

/// Reads a fixture through the reader, as `loopguard replay` does.
fn read(
    dir: &str,
    file: &str,
    format: Format,
) -> (Vec<SourcedEvent>, Vec<loopguard_adapters::Diagnostic>) {
    let mut events = Vec::new();
    let mut diagnostics = Vec::new();
    reader::read_file(
        &fixture_path(dir, file),
        format,
        &ctx(),
        &ReadOptions::default(),
        &mut |i| {
            match i {
                Item::Event(e) => events.push(e),
                Item::Diagnostic(d) => diagnostics.push(d),
            }
            Flow::Continue
        },
    )
    .unwrap();
    (events, diagnostics)
}

#[test]
fn found_1_documents_are_decided_by_their_structure_however_large() {
    for (dir, file, want) in [
        ("swe-agent", "v1-environment-last.traj", Format::SweAgent),
        (
            "mini-swe-agent",
            "format-last.traj.json",
            Format::MiniSweAgent,
        ),
    ] {
        let bytes = fixture(dir, file);
        assert!(
            bytes.len() > 64 << 10,
            "{file} must be larger than the old 64 KiB window"
        );
        let mut source = Source::open(&fixture_path(dir, file)).unwrap();
        assert_eq!(source.detect().unwrap(), Detected::Format(want), "{file}");
        // The whole document decides; a cut prefix alone is not what is used.
        assert_eq!(detect(file, &bytes), Some(want), "{file}");
    }
    // And every call is read (24 steps; 20 one-command turns).
    let (events, _) = read("swe-agent", "v1-environment-last.traj", Format::SweAgent);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event.kind == EventKind::Call)
            .count(),
        24
    );
    let (events, _) = read(
        "mini-swe-agent",
        "format-last.traj.json",
        Format::MiniSweAgent,
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event.kind == EventKind::Call)
            .count(),
        20
    );
}

#[test]
fn found_2_claude_code_results_before_their_calls_pair_by_id() {
    let (events, diagnostics) = support::feed(
        &mut ClaudeCodeAdapter::new(ctx()),
        &fixture("claude-code", "parallel-results-first.jsonl"),
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            // B and C were answered (lines 3, 4) before their tool_use lines (5, 6).
            "call 5 run-1 toolu_01B Read",
            "outcome 3 run-1 toolu_01B Read",
            "call 6 run-1 toolu_01C Read",
            "outcome 4 run-1 toolu_01C Read",
            "call 2 run-1 toolu_01A Read",
            "outcome 7 run-1 toolu_01A Read",
        ]
    );
    assert_eq!(
        events[3].event.payload,
        Some(Payload::Error("File does not exist.".into()))
    );
}

#[test]
fn found_3_calls_without_a_result_are_replayed_and_exec_command_end_is_used() {
    let (events, diagnostics) = support::feed(
        &mut CodexRolloutAdapter::new(ctx()),
        &fixture("codex", "rollout-2026-09-05T17-00-00-mid-turn.jsonl"),
    );
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            // Codex's shell tools are `Bash`, as its hook names them.
            "call 4 run-1 call_T1 Bash",
            // No function_call_output: the exec_command_end event is the outcome.
            "outcome 6 run-1 call_T1 Bash",
            // Nothing at all: the call is still replayed, without an outcome.
            "call 7 run-1 call_T2 Bash",
        ]
    );
    // Its output, as Codex's hook receives it (`tool_response`), read by Codex's row of
    // the tool table.
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(json(
            r#"{"stdout":"test result: FAILED. 3 passed; 1 failed","stderr":""}"#
        )))
    );
    assert_eq!(kinds(&diagnostics), [(7, DiagnosticKind::Unanswered)]);
    assert!(diagnostics[0]
        .message
        .contains("replayed without an outcome"));
}

#[test]
fn found_4_two_objects_on_one_line_are_both_read_with_a_note() {
    let (events, diagnostics) = read("openclaw", "v1-joined-line.jsonl", Format::OpenClaw);
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 3 run-1 toolu_v1a exec",
            // pi's `bash` is OpenClaw's `exec`; the result and the next assistant
            // message share line 4.
            "outcome 4 run-1 toolu_v1a exec",
            "call 4 run-1 toolu_v1b exec",
            "outcome 5 run-1 toolu_v1b exec",
        ]
    );
    assert_eq!(kinds(&diagnostics), [(4, DiagnosticKind::JoinedLine)]);
    assert!(!DiagnosticKind::JoinedLine.is_malformed());
}

#[test]
fn a_forced_wrong_format_says_no_calls_were_found() {
    // A Claude Code file read as OpenClaw: every line is unknown, and the reader says that
    // a file with content gave no call.
    let (events, diagnostics) = read("claude-code", "loop.jsonl", Format::OpenClaw);
    assert!(events.iter().all(|e| e.event.kind != EventKind::Call));
    let last = diagnostics.last().unwrap();
    assert_eq!((last.line, last.kind), (0, DiagnosticKind::NoCalls));
    assert!(last.message.contains("openclaw"), "{}", last.message);
}
