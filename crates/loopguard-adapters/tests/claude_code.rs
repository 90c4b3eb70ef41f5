//! The Claude Code adapter on the fixtures in `tests/fixtures/transcripts/claude-code/`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::claude_code::ClaudeCodeAdapter;
use loopguard_adapters::{Context, Diagnostic, DiagnosticKind, Format, SourcedEvent};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_guard::ToolProfile;
use loopguard_replay::Action;
use proptest::prelude::*;
use support::{cut_at, detect_fixture, fixture, kinds, repeat_decision, s};

const DIR: &str = "claude-code";

/// Feeds a file through a Claude Code adapter as the reader does (see [`support::feed`]).
fn feed(bytes: &[u8]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    support::feed(
        &mut ClaudeCodeAdapter::new(Context {
            session: "3f2a9c1e".into(),
            agent: Some("main".into()),
        }),
        bytes,
    )
}

#[test]
fn every_fixture_is_detected_as_claude_code() {
    for name in [
        "loop.jsonl",
        "healthy.jsonl",
        "compaction.jsonl",
        "traps.jsonl",
    ] {
        assert_eq!(
            detect_fixture(DIR, name),
            Some(Format::ClaudeCode),
            "{name}"
        );
    }
}

#[test]
fn loop_of_25_identical_polls_warns_then_blocks() {
    let (events, diagnostics) = feed(&fixture(DIR, "loop.jsonl"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(events.len(), 50);
    let args = Value::parse(
        br#"{"command":"gh run view 18243312 --json status,conclusion","description":"Check CI run status"}"#,
    )
    .unwrap();
    for (i, pair) in events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!(call.event.kind, EventKind::Call);
        assert_eq!(outcome.event.kind, EventKind::Outcome);
        // The tool_use line of iteration i (its text line, sharing message.id, comes first).
        assert_eq!(call.line, 3 * i as u64 + 4);
        assert_eq!(outcome.line, call.line + 1);
        assert_eq!(s(&call.event.tool), "Bash");
        assert_eq!(call.event.args, args);
        assert_eq!(s(&call.event.run), "run-1");
        assert_eq!(s(&call.event.session), "3f2a9c1e");
        assert_eq!(s(&call.event.agent), "main");
        assert_eq!(call.event.call_id, outcome.event.call_id);
        // usage: 4 + 310 + (18000 + 420 i) + 61, the larger of the two split lines.
        assert_eq!(call.tokens, Some(18375 + 420 * i as u64));
        assert!(call.event.timestamp_ms < outcome.event.timestamp_ms);
        assert_eq!(outcome.event.payload, events[1].event.payload);
    }
    assert_eq!(events[0].event.timestamp_ms, 1788621980250);
    // The result is Claude Code's own `toolUseResult`, exactly what the hook's
    // PostToolUse gets as `tool_response`; replay maps it with the same tool profile.
    let out = "{\"conclusion\":\"\",\"status\":\"in_progress\"}";
    let want = format!(
        r#"{{"stdout":{0:?},"stderr":"","interrupted":false,"isImage":false}}"#,
        out
    );
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(Value::parse(want.as_bytes()).unwrap()))
    );

    let decisions = support::replay_observe_as(&events, ToolProfile::ClaudeCode);
    let calls: Vec<_> = decisions
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .collect();
    for (i, d) in calls.iter().enumerate() {
        let (want, detector) = repeat_decision(i + 1);
        assert_eq!((d.2, d.3), (want, detector), "call {}", i + 1);
    }
    assert_eq!(calls[10].0, 34);
    assert_eq!(calls[20].0, 64);
}

/// Claude Code records how long each tool ran (`durationMs`), and a subagent's tokens and
/// duration: 25 identical Glob calls with the same answer but different durations are a
/// loop, warned from the 11th call and blocked from the 21st.
#[test]
fn tool_results_that_differ_only_in_duration_are_a_loop() {
    let mut lines = vec![
        r#"{"type":"user","uuid":"u0","timestamp":"2026-09-05T15:26:00.000Z","message":{"role":"user","content":"find the config"}}"#.to_string(),
    ];
    for i in 0..25 {
        lines.push(format!(
            r#"{{"type":"assistant","uuid":"a{i}","timestamp":"2026-09-05T15:27:{:02}.000Z","message":{{"id":"msg_{i}","role":"assistant","content":[{{"type":"tool_use","id":"toolu_{i}","name":"Glob","input":{{"pattern":"**/config.yml"}}}}],"usage":{{"input_tokens":10,"output_tokens":5}}}}}}"#,
            i % 60
        ));
        lines.push(format!(
            r#"{{"type":"user","uuid":"r{i}","timestamp":"2026-09-05T15:27:{:02}.500Z","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{i}","content":"No files found"}}]}},"toolUseResult":{{"filenames":[],"durationMs":{},"numFiles":0,"truncated":false,"totalTokens":{},"usage":{{"input_tokens":{i}}},"timestamp":"2026-09-05T15:27:{:02}.400Z"}}}}"#,
            i % 60,
            7 + i * 3,
            100 + i,
            i % 60
        ));
    }
    let (events, diagnostics) = feed((lines.join("\n") + "\n").as_bytes());
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(events.len(), 50);
    // Each result is the raw toolUseResult, durations and all: the Claude Code tool
    // profile drops the volatile fields when the replay hashes it, as the hook does.
    for (i, outcome) in events.iter().skip(1).step_by(2).enumerate() {
        let Some(Payload::Result(r)) = &outcome.event.payload else {
            panic!("{outcome:?}");
        };
        assert_eq!(
            r.get("durationMs"),
            Some(&Value::Number((7 + i * 3) as f64))
        );
    }
    let decisions = support::replay_observe_as(&events, ToolProfile::ClaudeCode);
    let calls: Vec<_> = decisions
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .collect();
    assert_eq!(calls.len(), 25);
    for (i, d) in calls.iter().enumerate() {
        let (want, detector) = repeat_decision(i + 1);
        assert_eq!((d.2, d.3), (want, detector), "call {}", i + 1);
    }
    assert_eq!(calls[20].2, Action::Block);
}

#[test]
fn healthy_session_pairs_parallel_calls_sidechains_and_errors() {
    let (events, diagnostics) = feed(&fixture(DIR, "healthy.jsonl"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let summary: Vec<(u64, EventKind, String, String)> = events
        .iter()
        .map(|e| (e.line, e.event.kind, s(&e.event.tool), s(&e.event.run)))
        .collect();
    let c = EventKind::Call;
    let o = EventKind::Outcome;
    let want = [
        (5, c, "Glob", "run-1"),
        (7, o, "Glob", "run-1"),
        (6, c, "Read", "run-1"),
        (8, o, "Read", "run-1"),
        (9, c, "Read", "run-1"),
        (10, o, "Read", "run-1"),
        (13, c, "Grep", "sidechain-7c1d2e3f"),
        (14, o, "Grep", "sidechain-7c1d2e3f"),
        (11, c, "Task", "run-1"),
        (16, o, "Task", "run-1"),
        (17, c, "mcp__github__get_issue", "run-1"),
        (18, o, "mcp__github__get_issue", "run-1"),
        (22, c, "Edit", "run-2"),
        (23, o, "Edit", "run-2"),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(l, k, t, r)| (*l, *k, t.to_string(), r.to_string()))
        .collect();
    assert_eq!(summary, want);
    // One message, split over three lines, with two tool calls: its usage is split.
    assert_eq!(events[0].tokens, Some((4 + 310 + 18000 + 96) / 2));
    assert_eq!(events[2].tokens, events[0].tokens);
    // A failed Read is an error with the tool_result text.
    assert_eq!(
        events[5].event.payload,
        Some(Payload::Error(Value::from(
            "<tool_use_error>File does not exist.</tool_use_error>"
        )))
    );
    // An MCP result whose toolUseResult is an array (not an object) is its text.
    let text = "{\"number\":88,\"title\":\"Totals off by one cent\",\"state\":\"open\"}";
    assert_eq!(
        events[11].event.payload,
        Some(Payload::Result(Value::from(text)))
    );
    let decisions = support::replay_observe_as(&events, ToolProfile::ClaudeCode);
    assert!(decisions
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn a_loop_surviving_compaction_aborts_the_run() {
    let (events, diagnostics) = feed(&fixture(DIR, "compaction.jsonl"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let compaction = events
        .iter()
        .find(|e| e.event.kind == EventKind::Compaction)
        .unwrap();
    assert_eq!(compaction.line, 6);
    assert_eq!(s(&compaction.event.run), "run-1");
    assert_eq!(compaction.event.timestamp_ms, 1788622014250);
    let decisions = support::replay_observe_as(&events, ToolProfile::ClaudeCode);
    assert_eq!(
        decisions[4],
        (6, EventKind::Compaction, Action::Armed, None)
    );
    let last = decisions.last().unwrap();
    assert_eq!(
        *last,
        (
            13,
            EventKind::Outcome,
            Action::Abort,
            Some(Detector::CompactionLoopPersisted)
        )
    );
    // The failing builds are errors (is_error: true), identical every time.
    let errors: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.event.payload, Some(Payload::Error(_))))
        .collect();
    assert_eq!(errors.len(), 3);
    assert!(errors
        .iter()
        .all(|e| e.event.payload == errors[0].event.payload));
}

#[test]
fn traps_split_lines_orphans_unknown_and_truncated_lines() {
    let (events, diagnostics) = feed(&fixture(DIR, "traps.jsonl"));
    // Line 3 repeats line 2's tool_use (same id): one call, not two.
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (e.line, e.event.args.clone(), e.tokens))
        .collect();
    assert_eq!(
        calls,
        [
            (
                3,
                Value::parse(br#"{"command":"npm run typecheck"}"#).unwrap(),
                Some(50)
            ),
            (
                2,
                Value::parse(br#"{"command":"npm run lint"}"#).unwrap(),
                Some(50)
            ),
            // Never answered: replayed without an outcome at the end of the file.
            (
                9,
                Value::parse(br#"{"command":"npm test"}"#).unwrap(),
                Some(18782)
            ),
        ]
    );
    assert_eq!(
        events[3].event.payload,
        Some(Payload::Error(Value::from(
            "[Request interrupted by user for tool use]"
        )))
    );
    assert_eq!(
        kinds(&diagnostics),
        [
            (5, DiagnosticKind::UnknownEntry),
            (6, DiagnosticKind::NotJson),
            (11, DiagnosticKind::Truncated),
            (8, DiagnosticKind::Orphan),
            (9, DiagnosticKind::Unanswered),
        ]
    );
    assert!(!diagnostics[3].kind.is_malformed());
}

/// A JSON text built from the vocabulary of Claude Code lines.
fn json_text() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "type",
        "message",
        "content",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "toolUseResult",
        "isSidechain",
        "agentId",
        "subtype",
        "usage",
        "input_tokens",
        "output_tokens",
        "isMeta",
        "isCompactSummary",
        "timestamp",
        "text",
        "role",
    ]);
    let words = vec![
        "assistant",
        "user",
        "system",
        "tool_use",
        "tool_result",
        "text",
        "compact_boundary",
        "summary",
        "t1",
        "t2",
        "m1",
        "Bash",
        "2026-09-05T15:26:13.250Z",
        "",
    ];
    support::json_text(keys, words, 5, 48, 5)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random lines never make the adapter panic.
    #[test]
    fn random_lines_never_panic(bytes in support::json_lines(json_text())) {
        let (events, _) = feed(&bytes);
        for e in &events {
            prop_assert!(e.event.kind != EventKind::Call || e.event.tool.is_some());
        }
    }

    /// Any fixture line, cut anywhere, never makes the adapter panic.
    #[test]
    fn cut_fixture_lines_never_panic(cut in 0usize..4000, pick in 0usize..4) {
        let name = ["loop.jsonl", "healthy.jsonl", "compaction.jsonl", "traps.jsonl"][pick];
        let _ = feed(cut_at(&fixture(DIR, name), cut));
    }
}
