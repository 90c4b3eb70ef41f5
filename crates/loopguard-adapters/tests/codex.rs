//! The Codex CLI rollout adapter on the fixtures in `tests/fixtures/transcripts/codex/`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::responses::CodexRolloutAdapter;
use loopguard_adapters::{Context, Diagnostic, DiagnosticKind, Format, SourcedEvent};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use proptest::prelude::*;
use support::{cut_at, detect_fixture, kinds, repeat_decision, replay_observe, s};

const DIR: &str = "codex";
const NAMES: [&str; 4] = ["loop", "healthy", "compaction", "traps"];

/// The rollout file of fixture `name`.
fn file(name: &str) -> String {
    format!("rollout-2026-09-05T15-26-13-{name}.jsonl")
}

fn fixture(name: &str) -> Vec<u8> {
    support::fixture(DIR, &file(name))
}

/// Feeds a file through a Codex rollout adapter as the reader does (see [`support::feed`]).
fn feed(bytes: &[u8]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    support::feed(
        &mut CodexRolloutAdapter::new(Context {
            session: "0199a4c2".into(),
            agent: None,
        }),
        bytes,
    )
}

#[test]
fn every_fixture_is_detected_as_a_codex_rollout() {
    for name in NAMES {
        assert_eq!(
            detect_fixture(DIR, &file(name)),
            Some(Format::CodexRollout),
            "{name}"
        );
    }
}

#[test]
fn loop_of_25_identical_shell_calls_warns_then_blocks() {
    let (events, diagnostics) = feed(&fixture("loop"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(events.len(), 50);
    let args = Value::parse(
        br#"{"command":["bash","-lc","git fetch -q && git status"],"workdir":"/home/ana/work/api","timeout_ms":20000}"#,
    )
    .unwrap();
    for (i, pair) in events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!(
            (call.event.kind, outcome.event.kind),
            (EventKind::Call, EventKind::Outcome)
        );
        assert_eq!(call.line, 6 + 4 * i as u64);
        assert_eq!(outcome.line, call.line + 2);
        // Codex's row of the tool table: its shell tools are `Bash`, as the hook names them.
        assert_eq!(s(&call.event.tool), "Bash");
        assert_eq!(call.profile, Some("claude-code"));
        assert_eq!(call.event.args, args);
        assert_eq!(s(&call.event.run), "run-1");
        assert_eq!(call.event.call_id, outcome.event.call_id);
        assert!(s(&call.event.call_id).starts_with("call_"));
        assert_eq!(call.tokens, None);
        assert!(
            call.event.timestamp_ms > 0 && call.event.timestamp_ms < outcome.event.timestamp_ms
        );
        assert_eq!(outcome.event.payload, events[1].event.payload);
    }
    let decisions = replay_observe(&events);
    let calls: Vec<_> = decisions
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .collect();
    for (i, d) in calls.iter().enumerate() {
        let (want, detector) = repeat_decision(i + 1);
        assert_eq!((d.2, d.3), (want, detector), "call {}", i + 1);
    }
    assert_eq!(calls[10].0, 46);
    assert_eq!(calls[20].0, 86);
}

/// A rollout of `n` identical `shell` calls whose outputs are `output(i)`.
fn shell_loop(n: usize, output: impl Fn(usize) -> String) -> Vec<u8> {
    let mut lines = vec![
        r#"{"timestamp":"2026-09-05T15:26:13.000Z","type":"event_msg","payload":{"type":"user_message","message":"fix it"}}"#.to_string(),
    ];
    for i in 0..n {
        lines.push(format!(
            r#"{{"timestamp":"2026-09-05T15:27:{:02}.000Z","type":"response_item","payload":{{"type":"function_call","name":"shell","arguments":"{{\"command\":[\"bash\",\"-lc\",\"cargo test\"]}}","call_id":"call_{i}"}}}}"#,
            i % 60
        ));
        lines.push(format!(
            r#"{{"timestamp":"2026-09-05T15:27:{:02}.500Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"call_{i}","output":{}}}}}"#,
            i % 60,
            support::quote(&output(i))
        ));
    }
    (lines.join("\n") + "\n").into_bytes()
}

/// Codex writes a command's wall time into its output; 25 runs of the same command with
/// the same output but different durations are a loop: warned from the 11th call, blocked
/// from the 21st.
#[test]
fn exec_outputs_that_differ_only_in_duration_are_a_loop() {
    let structured = |i: usize| {
        format!(
            r#"{{"output":"test result: FAILED. 41 passed; 1 failed\n","metadata":{{"exit_code":101,"duration_seconds":{}.{}}}}}"#,
            3 + i % 4,
            i % 10
        )
    };
    let freeform = |i: usize| {
        format!(
            "Exit code: 101\nWall time: {}.{} seconds\nOutput:\ntest result: FAILED. 41 passed; 1 failed\n",
            3 + i % 4,
            i % 10
        )
    };
    let timed_out = |i: usize| {
        format!(
            r#"{{"output":"command timed out after {} milliseconds\nrunning 42 tests\n","metadata":{{"exit_code":124,"duration_seconds":{}.0}}}}"#,
            10_000 + i * 7,
            10 + i % 2
        )
    };
    // The command's output alone, as Codex's hook receives it (`tool_response`), read by
    // Codex's row of the tool table.
    let want_structured =
        support::json(r#"{"stdout":"test result: FAILED. 41 passed; 1 failed","stderr":""}"#);
    let want_timed_out =
        support::json(r#"{"stdout":"command timed out\nrunning 42 tests","stderr":""}"#);
    for (form, output, want) in [
        (
            "structured",
            &structured as &dyn Fn(usize) -> String,
            &want_structured,
        ),
        ("freeform", &freeform, &want_structured),
        ("timed out", &timed_out, &want_timed_out),
    ] {
        // The outputs really differ.
        assert_ne!(output(0), output(1), "{form}");
        let (events, diagnostics) = feed(&shell_loop(25, output));
        assert!(diagnostics.is_empty(), "{form}: {diagnostics:?}");
        assert_eq!(events.len(), 50, "{form}");
        for outcome in events.iter().skip(1).step_by(2) {
            assert_eq!(
                outcome.event.payload,
                Some(Payload::Result(want.clone())),
                "{form}"
            );
        }
        let decisions = replay_observe(&events);
        let calls: Vec<_> = decisions
            .iter()
            .filter(|d| d.1 == EventKind::Call)
            .collect();
        assert_eq!(calls.len(), 25, "{form}");
        for (i, d) in calls.iter().enumerate() {
            let (want, detector) = repeat_decision(i + 1);
            assert_eq!((d.2, d.3), (want, detector), "{form}: call {}", i + 1);
        }
        assert_eq!(calls[20].2, Action::Block, "{form}");
    }
}

#[test]
fn healthy_rollout_has_custom_tools_plans_and_two_runs() {
    let (events, diagnostics) = feed(&fixture("healthy"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let summary: Vec<_> = events
        .iter()
        .map(|e| (e.line, s(&e.event.tool), s(&e.event.run)))
        .collect();
    let want = [
        (6, "Bash", "run-1"),
        (8, "Bash", "run-1"),
        (9, "apply_patch", "run-1"),
        (10, "apply_patch", "run-1"),
        (12, "update_plan", "run-1"),
        (14, "update_plan", "run-1"),
        (19, "Bash", "run-2"),
        (21, "Bash", "run-2"),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(l, t, r)| (*l, t.to_string(), r.to_string()))
        .collect();
    assert_eq!(summary, want);
    // A custom tool's raw input is the `input` argument.
    let input = "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-    let app = Router::new()\n+    let app = Router::new().route(\"/health\", get(|| async { \"ok\" }))\n*** End Patch\n";
    assert_eq!(events[2].event.args.get("input"), Some(&Value::from(input)));
    assert!(replay_observe(&events)
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn compacted_and_context_compacted_make_one_compaction_then_the_guard_aborts() {
    let (events, diagnostics) = feed(&fixture("compaction"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let compactions: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Compaction)
        .map(|e| (e.line, s(&e.event.run)))
        .collect();
    assert_eq!(compactions, [(13, "run-1".to_string())]);
    let decisions = replay_observe(&events);
    assert_eq!(
        decisions[4],
        (13, EventKind::Compaction, Action::Armed, None)
    );
    assert_eq!(
        *decisions.last().unwrap(),
        (
            26,
            EventKind::Outcome,
            Action::Abort,
            Some(Detector::CompactionLoopPersisted)
        )
    );
}

#[test]
fn traps_parallel_calls_bad_arguments_unknown_lines_and_a_cut_last_line() {
    let (events, diagnostics) = feed(&fixture("traps"));
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (e.line, e.event.args.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            // Invalid JSON arguments are kept as the raw string.
            // (as Codex's row of the tool table reads a shell tool's string input).
            (
                6,
                Value::parse(br#"{"command":"{\"command\":[\"cat\",\"config/prod.toml\""}"#)
                    .unwrap()
            ),
            (
                5,
                Value::parse(br#"{"command":["cat","config/dev.toml"]}"#).unwrap()
            ),
            // Never answered: replayed without an outcome.
            (12, Value::parse(br#"{"command":["ls"]}"#).unwrap()),
        ]
    );
    // Content-item output: a shell command's text, read by Codex's row of the tool table.
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(support::json(
            r#"{"stdout":"[db]\nurl = \"postgres://prod\"","stderr":""}"#
        )))
    );
    assert_eq!(
        kinds(&diagnostics),
        [
            (9, DiagnosticKind::UnknownEntry),
            (13, DiagnosticKind::Truncated),
            (10, DiagnosticKind::Orphan),
            (12, DiagnosticKind::Unanswered),
        ]
    );
}

/// A JSON text built from the vocabulary of rollout lines.
fn json_text() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "type",
        "payload",
        "timestamp",
        "name",
        "arguments",
        "call_id",
        "id",
        "output",
        "input",
        "action",
        "role",
        "content",
        "message",
        "error",
        "text",
    ]);
    let words = vec![
        "response_item",
        "event_msg",
        "compacted",
        "session_meta",
        "turn_context",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "mcp_call",
        "compaction",
        "message",
        "user",
        "user_message",
        "context_compacted",
        "c1",
        "{\"a\":1}",
        "{oops",
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
            prop_assert!(e.event.kind == EventKind::Compaction || e.event.tool.is_some());
        }
    }

    /// Any fixture, cut anywhere, never makes the adapter panic.
    #[test]
    fn cut_fixtures_never_panic(cut in 0usize..12000, pick in 0usize..4) {
        let _ = feed(cut_at(&fixture(NAMES[pick]), cut));
    }
}
