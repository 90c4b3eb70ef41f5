//! The Responses adapter on the fixtures in `tests/fixtures/transcripts/responses/`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::common::text_result;
use loopguard_adapters::responses::Responses;
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter, Format};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use proptest::prelude::*;
use support::{cut_at, detect_fixture, fixture, kinds, repeat_decision, replay_observe, s};

const DIR: &str = "responses";
const NAMES: [&str; 4] = ["loop.json", "healthy.json", "compaction.json", "traps.json"];

fn ctx() -> Context {
    Context {
        session: "resp-1".into(),
        agent: None,
    }
}

fn adapt(name: &str) -> Adapted {
    support::adapt_fixture(&Responses, DIR, name, &ctx())
}

#[test]
fn every_fixture_is_detected_as_responses() {
    for name in NAMES {
        assert_eq!(detect_fixture(DIR, name), Some(Format::Responses), "{name}");
    }
}

#[test]
fn loop_of_25_identical_searches_warns_then_blocks() {
    let a = adapt("loop.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 50);
    let args = Value::parse(br#"{"query":"search API rate limit","max_results":5}"#).unwrap();
    for (i, pair) in a.events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!(
            (call.event.kind, outcome.event.kind),
            (EventKind::Call, EventKind::Outcome)
        );
        // Items: user message 1, then reasoning / function_call / output triples.
        assert_eq!(
            (call.line, outcome.line),
            (3 + 3 * i as u64, 4 + 3 * i as u64)
        );
        assert_eq!(s(&call.event.tool), "search_docs");
        assert_eq!(call.event.args, args);
        assert_eq!(s(&call.event.run), "run-1");
        assert!(s(&call.event.call_id).starts_with("call_"));
        assert_eq!(call.event.call_id, outcome.event.call_id);
        assert_eq!(
            outcome.event.payload,
            Some(Payload::Result(text_result("No results.")))
        );
    }
    let decisions = replay_observe(&a.events);
    let calls: Vec<_> = decisions
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .collect();
    for (i, d) in calls.iter().enumerate() {
        let (want, detector) = repeat_decision(i + 1);
        assert_eq!((d.2, d.3), (want, detector), "call {}", i + 1);
    }
    assert_eq!((calls[10].0, calls[20].0), (33, 63));
}

#[test]
fn healthy_response_with_every_call_kind() {
    let a = adapt("healthy.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let summary: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.line, e.event.kind, s(&e.event.tool)))
        .collect();
    let (c, o) = (EventKind::Call, EventKind::Outcome);
    let want = [
        (2, c, "local_shell"),
        (3, o, "local_shell"),
        (4, c, "apply_patch"),
        (5, o, "apply_patch"),
        (6, c, "create_pull_request"),
        (6, o, "create_pull_request"),
        (8, c, "request_review"),
        (9, o, "request_review"),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(l, k, t)| (*l, *k, t.to_string()))
        .collect();
    assert_eq!(summary, want);
    // Items are dated by the response's `created_at` (seconds).
    assert!(a
        .events
        .iter()
        .all(|e| e.event.timestamp_ms == 1_788_622_018_000));
    assert_eq!(
        a.events[0].event.args,
        Value::parse(
            br#"{"type":"exec","command":["git","status","--short"],"timeout_ms":10000,"working_directory":"/repo","env":{},"user":null}"#
        )
        .unwrap()
    );
    assert_eq!(
        a.events[2].event.args,
        Value::parse(
            br#"{"input":"*** Begin Patch\n*** Update File: src/app.py\n@@\n-DEBUG = True\n+DEBUG = False\n*** End Patch\n"}"#
        )
        .unwrap()
    );
    assert_eq!(
        a.events[5].event.payload,
        Some(Payload::Result(text_result("{\"number\":412}")))
    );
    assert!(s(&a.events[4].event.call_id).starts_with("mcp_"));
    assert_eq!(
        a.events[7].event.payload,
        Some(Payload::Result(text_result("review requested from @lee")))
    );
    assert!(replay_observe(&a.events)
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn a_loop_surviving_compaction_aborts_the_run() {
    let a = adapt("compaction.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let decisions = replay_observe(&a.events);
    assert_eq!(
        decisions[4],
        (6, EventKind::Compaction, Action::Armed, None)
    );
    assert_eq!(s(&a.events[4].event.run), "run-1");
    assert_eq!(
        *decisions.last().unwrap(),
        (
            12,
            EventKind::Outcome,
            Action::Abort,
            Some(Detector::CompactionLoopPersisted)
        )
    );
}

#[test]
fn traps_invalid_arguments_parallel_results_and_mcp_errors() {
    let a = adapt("traps.json");
    let summary: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.line, e.event.kind, e.event.args.clone()))
        .collect();
    let (c, o) = (EventKind::Call, EventKind::Outcome);
    let setup = Value::parse(br#"{"path":"setup.py"}"#).unwrap();
    let readme = Value::from("{\"path\": \"README.md\"");
    let ticket = Value::parse(br#"{"key":"OPS-1"}"#).unwrap();
    assert_eq!(
        summary,
        [
            (3, c, setup.clone()),
            (4, o, setup),
            (2, c, readme.clone()),
            (5, o, readme),
            (6, c, ticket.clone()),
            (6, o, ticket),
            // Calls without a result (an mcp_call with neither output nor error, a
            // function_call never answered) are replayed without an outcome.
            (7, c, Value::parse(br#"{"key":"OPS-2"}"#).unwrap()),
            (10, c, Value::parse(br#"{"path":"LICENSE"}"#).unwrap()),
        ]
    );
    assert_eq!(
        a.events[5].event.payload,
        Some(Payload::Error(Value::from("Tool execution failed: 404")))
    );
    assert_eq!(
        kinds(&a.diagnostics),
        [
            (7, DiagnosticKind::Unanswered),
            (8, DiagnosticKind::Orphan),
            (9, DiagnosticKind::BadField),
            (10, DiagnosticKind::Unanswered),
        ]
    );
}

/// A JSON text built from the vocabulary of Responses items.
fn json_text() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "type",
        "call_id",
        "id",
        "name",
        "arguments",
        "input",
        "output",
        "error",
        "action",
        "role",
        "content",
        "text",
        "items",
        "created_at",
    ]);
    let words = vec![
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "computer_call",
        "computer_call_output",
        "compaction",
        "message",
        "user",
        "reasoning",
        "c1",
        "c2",
        "{\"a\":1}",
        "{oops",
        "",
        "input_text",
    ];
    // `output` and `input` are drawn more often than the other keys.
    let keys = prop_oneof![keys, Just("output"), Just("input")];
    support::json_text(keys, words, 6, 64, 6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random documents and bytes never make the adapter panic.
    #[test]
    fn random_documents_never_panic(doc in json_text(), bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        if let Ok(a) = Responses.adapt(doc.as_bytes(), &ctx()) {
            for e in &a.events {
                prop_assert!(e.event.kind == EventKind::Compaction || e.event.tool.is_some());
            }
        }
        let _ = Responses.adapt(&bytes, &ctx());
    }

    /// Any fixture, cut anywhere, never makes the adapter panic.
    #[test]
    fn cut_fixtures_never_panic(cut in 0usize..14000, pick in 0usize..4) {
        let _ = Responses.adapt(cut_at(&fixture(DIR, NAMES[pick]), cut), &ctx());
    }
}
