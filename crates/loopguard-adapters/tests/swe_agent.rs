//! The SWE-agent and mini-swe-agent adapters on the fixtures in
//! `tests/fixtures/transcripts/swe-agent/` and `…/mini-swe-agent/`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::common::text_result;
use loopguard_adapters::swe_agent::{MiniSweAgent, SweAgent, FORMAT_ERROR_TOOL};
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter, Format, SourcedEvent};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use proptest::prelude::*;
use support::{cut_at, detect_fixture, fixture, kinds, repeat_decision, replay_observe, s};

fn ctx() -> Context {
    Context {
        session: "astropy__astropy-12907".into(),
        agent: None,
    }
}

fn swe(name: &str) -> Adapted {
    support::adapt_fixture(&SweAgent, "swe-agent", name, &ctx())
}

fn mini(name: &str) -> Adapted {
    support::adapt_fixture(&MiniSweAgent, "mini-swe-agent", name, &ctx())
}

/// The decisions of the calls, by call number (1-based).
fn call_decisions(events: &[SourcedEvent]) -> Vec<(u64, Action, Option<Detector>)> {
    replay_observe(events)
        .into_iter()
        .filter(|d| d.1 == EventKind::Call)
        .map(|d| (d.0, d.2, d.3))
        .collect()
}

#[test]
fn every_fixture_is_detected() {
    for name in ["loop.traj", "healthy.traj", "traps.traj"] {
        assert_eq!(
            detect_fixture("swe-agent", name),
            Some(Format::SweAgent),
            "{name}"
        );
    }
    for name in [
        "loop.traj.json",
        "healthy.traj.json",
        "format-errors.traj.json",
        "toolcalls.traj.json",
    ] {
        assert_eq!(
            detect_fixture("mini-swe-agent", name),
            Some(Format::MiniSweAgent),
            "{name}"
        );
    }
}

#[test]
fn swe_agent_loop_uses_the_function_calls_and_warns_then_blocks() {
    let a = swe("loop.traj");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 52);
    assert_eq!(s(&a.events[0].event.tool), "create");
    assert_eq!(
        a.events[0].event.args,
        Value::parse(br#"{"filename":"reproduce.py"}"#).unwrap()
    );
    let args = Value::parse(br#"{"command":"python reproduce.py"}"#).unwrap();
    for (i, pair) in a.events[2..].chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!((call.line, outcome.line), (i as u64 + 2, i as u64 + 2));
        assert_eq!(s(&call.event.tool), "bash");
        assert_eq!(call.event.args, args);
        assert!(s(&call.event.call_id).starts_with("call_"));
        assert_eq!(s(&call.event.run), "run-1");
        assert_eq!(
            outcome.event.payload,
            Some(Payload::Result(text_result("344")))
        );
    }
    let calls = call_decisions(&a.events);
    assert_eq!(calls[0].1, Action::Allow);
    for (i, d) in calls[1..].iter().enumerate() {
        let want = repeat_decision(i + 1);
        assert_eq!((d.1, d.2), want, "repeat {}", i + 1);
    }
}

#[test]
fn swe_agent_healthy_run_takes_the_first_word_as_the_tool() {
    let a = swe("healthy.traj");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let tools: Vec<_> = a
        .events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (e.line, s(&e.event.tool)))
        .collect();
    let want = [
        (1, "find_file"),
        (2, "open"),
        (3, "edit"),
        (4, "python"),
        (5, "rm"),
        (6, "submit"),
    ];
    let want: Vec<_> = want.iter().map(|(l, t)| (*l, t.to_string())).collect();
    assert_eq!(tools, want);
    assert_eq!(
        a.events[4].event.args.get("command"),
        Some(&Value::from(
            "edit 1475:1475\n        return int(round(value.total_seconds() / base_unit.total_seconds()))\nend_of_edit"
        ))
    );
    assert!(replay_observe(&a.events)
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn swe_agent_traps_invalid_arguments_and_missing_fields() {
    let a = swe("traps.traj");
    let calls: Vec<_> = a
        .events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (e.line, s(&e.event.tool), e.event.args.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                1,
                "open".to_string(),
                Value::from("{\"path\": \"src/app.py\"")
            ),
            (
                2,
                "goto".to_string(),
                Value::parse(br#"{"line_number":30}"#).unwrap()
            ),
            // No observation: replayed without an outcome.
            (
                3,
                "bash".to_string(),
                Value::parse(br#"{"command":"python -m pytest -q"}"#).unwrap()
            ),
            (5, "submit".to_string(), Value::parse(b"{}").unwrap()),
        ]
    );
    assert_eq!(
        kinds(&a.diagnostics),
        [
            (3, DiagnosticKind::Unanswered),
            (4, DiagnosticKind::BadField)
        ]
    );
}

#[test]
fn mini_loop_of_25_identical_commands_warns_then_blocks() {
    let a = mini("loop.traj.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 50);
    let args = Value::parse(br#"{"command":"cd /testbed && python reproduce_issue.py"}"#).unwrap();
    for (i, pair) in a.events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!(
            (call.line, outcome.line),
            (3 + 2 * i as u64, 4 + 2 * i as u64)
        );
        assert_eq!(s(&call.event.tool), "bash");
        assert_eq!(call.event.args, args);
        assert!(call.event.call_id.is_none());
        assert!(matches!(&outcome.event.payload, Some(Payload::Result(r))
            if r == &text_result("<returncode>0</returncode>\n<output>\n[[ True  True False False]\n [ True  True False False]\n [False False  True  True]\n [False False  True  True]]\n</output>")));
    }
    let calls = call_decisions(&a.events);
    for (i, d) in calls.iter().enumerate() {
        let want = repeat_decision(i + 1);
        assert_eq!((d.1, d.2), want, "call {}", i + 1);
    }
}

#[test]
fn mini_healthy_run_has_no_loop() {
    let a = mini("healthy.traj.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 10);
    assert_eq!(
        a.events[8].event.args,
        Value::parse(
            br#"{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"}"#
        )
        .unwrap()
    );
    // A non-zero return code is a result, not an error.
    assert!(matches!(
        a.events[7].event.payload,
        Some(Payload::Result(_))
    ));
    assert!(replay_observe(&a.events)
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn mini_repeated_format_errors_are_a_repeated_failing_pseudo_call() {
    let a = mini("format-errors.traj.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 26);
    let errors: Vec<_> = a.events[2..].iter().collect();
    for pair in errors.chunks(2) {
        assert_eq!(s(&pair[0].event.tool), FORMAT_ERROR_TOOL);
        assert_eq!(pair[0].event.args, Value::parse(b"{}").unwrap());
        assert!(
            matches!(&pair[1].event.payload, Some(Payload::Error(Value::String(t)))
            if t.to_string().starts_with("Please always provide EXACTLY ONE action in triple backticks, found 2 actions."))
        );
    }
    let calls = call_decisions(&a.events);
    let warned: Vec<_> = calls
        .iter()
        .filter(|c| c.1 == Action::Warn)
        .map(|c| (c.0, c.2))
        .collect();
    // The 11th and 12th malformed answers are flagged as a repetition.
    assert_eq!(
        warned,
        [
            (25, Some(Detector::GenericRepeat)),
            (27, Some(Detector::GenericRepeat))
        ]
    );
}

#[test]
fn mini_tool_calling_trajectory() {
    let a = mini("toolcalls.traj.json");
    let summary: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.line, e.event.kind, s(&e.event.tool), e.tokens))
        .collect();
    let (c, o) = (EventKind::Call, EventKind::Outcome);
    assert_eq!(
        summary,
        [
            (3, c, "bash".to_string(), Some(882)),
            (4, o, "bash".to_string(), None),
            (3, c, "bash".to_string(), Some(882)),
            (5, o, "bash".to_string(), None),
            (6, c, "bash".to_string(), Some(1852)),
            (7, o, "bash".to_string(), None),
            (8, c, FORMAT_ERROR_TOOL.to_string(), Some(1912)),
            (9, o, FORMAT_ERROR_TOOL.to_string(), None),
            // The last call got no result: replayed without an outcome.
            (10, c, "bash".to_string(), Some(2120)),
        ]
    );
    assert_eq!(a.events[0].event.timestamp_ms, 1780680349441);
    assert_eq!(a.events[1].event.timestamp_ms, 1780680349630);
    // Cut-off arguments stay a string.
    assert_eq!(
        a.events[4].event.args,
        Value::from("{\"command\": \"cd /testbed && python -c 'print(1)'\"")
    );
    // The submission's tool call has no tool message before the exit.
    assert_eq!(kinds(&a.diagnostics), [(10, DiagnosticKind::Unanswered)]);
}

/// A JSON text built from the vocabulary of SWE-agent and mini-swe-agent files.
fn json_text() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "trajectory",
        "history",
        "attempts",
        "action",
        "observation",
        "role",
        "content",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "id",
        "tool_call_id",
        "messages",
        "extra",
        "actions",
        "command",
        "trajectory_format",
        "response",
        "usage",
        "total_tokens",
        "timestamp",
    ]);
    let words = vec![
        "assistant",
        "user",
        "tool",
        "system",
        "exit",
        "ls -la",
        "```bash\nls\n```",
        "```bash\na\n```\n```bash\nb\n```",
        "```mswea_bash_command\nx\n```",
        "```bash\nunterminated",
        "Please always provide EXACTLY ONE action in triple backticks, found 0 actions.",
        "Tool call error:",
        "mini-swe-agent-1",
        "c1",
        "{\"command\":\"ls\"}",
        "{oops",
        "",
    ];
    support::json_text(keys, words, 6, 64, 6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random documents and bytes never make either adapter panic.
    #[test]
    fn random_documents_never_panic(doc in json_text(), bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        for adapter in [&SweAgent as &dyn DocumentAdapter, &MiniSweAgent] {
            if let Ok(a) = adapter.adapt(doc.as_bytes(), &ctx()) {
                for e in &a.events {
                    prop_assert!(e.event.tool.is_some());
                }
            }
            let _ = adapter.adapt(&bytes, &ctx());
        }
    }

    /// Any fixture, cut anywhere, never makes the adapters panic.
    #[test]
    fn cut_fixtures_never_panic(cut in 0usize..32000, pick in 0usize..7) {
        let (dir, name) = [
            ("swe-agent", "loop.traj"), ("swe-agent", "healthy.traj"), ("swe-agent", "traps.traj"),
            ("mini-swe-agent", "loop.traj.json"), ("mini-swe-agent", "healthy.traj.json"),
            ("mini-swe-agent", "format-errors.traj.json"), ("mini-swe-agent", "toolcalls.traj.json"),
        ][pick];
        let bytes = fixture(dir, name);
        let cut = cut_at(&bytes, cut);
        let _ = SweAgent.adapt(cut, &ctx());
        let _ = MiniSweAgent.adapt(cut, &ctx());
    }
}
