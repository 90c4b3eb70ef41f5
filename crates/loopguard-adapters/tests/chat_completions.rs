//! The Chat Completions adapters on the fixtures in
//! `tests/fixtures/transcripts/chat-completions/`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::chat_completions::{ChatCompletions, ChatCompletionsLines};
use loopguard_adapters::common::text_result;
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter, Format, LineAdapter};
use loopguard_core::Value;
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use proptest::prelude::*;
use support::{cut_at, detect_fixture, fixture, kinds, repeat_decision, replay_observe, s};

const DIR: &str = "chat-completions";

fn ctx() -> Context {
    Context {
        session: "support-7".into(),
        agent: Some("support".into()),
    }
}

fn adapt(name: &str) -> Adapted {
    support::adapt_fixture(&ChatCompletions, DIR, name, &ctx())
}

#[test]
fn every_document_fixture_is_detected_as_chat_completions() {
    for name in ["loop.json", "healthy.json", "traps.json"] {
        assert_eq!(
            detect_fixture(DIR, name),
            Some(Format::ChatCompletions),
            "{name}"
        );
    }
    // JSON Lines of bare messages (a role, no type) are recognised too.
    let name = "messages.jsonl";
    assert_eq!(detect_fixture(DIR, name), Some(Format::ChatCompletions));
}

#[test]
fn loop_of_25_identical_lookups_warns_then_blocks() {
    let a = adapt("loop.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert_eq!(a.events.len(), 50);
    let args = Value::parse(br#"{"order_id":"A-1001"}"#).unwrap();
    let result =
        text_result("{\"order_id\":\"A-1001\",\"status\":\"processing\",\"carrier\":null}");
    for (i, pair) in a.events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        assert_eq!(
            (call.event.kind, outcome.event.kind),
            (EventKind::Call, EventKind::Outcome)
        );
        // Messages: system 1, user 2, then assistant/tool pairs.
        assert_eq!(
            (call.line, outcome.line),
            (3 + 2 * i as u64, 4 + 2 * i as u64)
        );
        assert_eq!(s(&call.event.tool), "get_order_status");
        assert_eq!(call.event.args, args);
        assert_eq!(s(&call.event.run), "run-1");
        assert_eq!(s(&call.event.session), "support-7");
        assert_eq!(s(&call.event.agent), "support");
        assert_eq!(call.event.call_id, outcome.event.call_id);
        assert_eq!(outcome.event.payload, Some(Payload::Result(result.clone())));
        assert_eq!((call.tokens, call.event.timestamp_ms), (None, 0));
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
    assert_eq!((calls[10].0, calls[20].0), (23, 43));
}

#[test]
fn healthy_conversation_with_parallel_and_legacy_calls() {
    let a = adapt("healthy.json");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let summary: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.line, e.event.kind, s(&e.event.tool), s(&e.event.run)))
        .collect();
    let (c, o) = (EventKind::Call, EventKind::Outcome);
    let want = [
        (3, c, "get_weather", "run-1"),
        (4, o, "get_weather", "run-1"),
        (3, c, "get_weather", "run-1"),
        (5, o, "get_weather", "run-1"),
        (8, c, "search_trains", "run-2"),
        (9, o, "search_trains", "run-2"),
        (10, c, "book_train", "run-2"),
        (11, o, "book_train", "run-2"),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(l, k, t, r)| (*l, *k, t.to_string(), r.to_string()))
        .collect();
    assert_eq!(summary, want);
    assert_eq!(
        a.events[2].event.args,
        Value::parse(br#"{"city":"Porto","day":"tomorrow"}"#).unwrap()
    );
    // Content parts are read as text.
    assert_eq!(
        a.events[3].event.payload,
        Some(Payload::Result(text_result(
            "{\"city\":\"Porto\",\"high_c\":19,\"rain\":0.4}"
        )))
    );
    // The legacy function call has no id.
    assert!(a.events[4].event.call_id.is_none());
    assert!(replay_observe(&a.events)
        .iter()
        .all(|d| matches!(d.2, Action::Allow | Action::Recorded)));
}

#[test]
fn traps_invalid_arguments_out_of_order_results_and_missing_pieces() {
    let a = adapt("traps.json");
    let calls: Vec<_> = a
        .events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (e.line, s(&e.event.tool), e.event.args.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            // An empty arguments string is `{}`; results pair by id, not by position.
            (2, "list_dir".to_string(), Value::parse(b"{}").unwrap()),
            // Single quotes and a trailing comma: read as JSON5.
            (
                2,
                "delete_file".to_string(),
                Value::parse(br#"{"path":"/tmp/a.log"}"#).unwrap()
            ),
            // Cut-off arguments, no result: still a call, replayed without an outcome.
            (
                2,
                "delete_file".to_string(),
                Value::from("{\"path\": \"/tmp/b.log\"")
            ),
        ]
    );
    assert_eq!(
        kinds(&a.diagnostics),
        [
            // The call with cut-off arguments never got a result before the next user turn.
            (2, DiagnosticKind::Unanswered),
            (5, DiagnosticKind::Orphan),
            (6, DiagnosticKind::BadField),
            (8, DiagnosticKind::BadField),
        ]
    );
    assert!(a.diagnostics[0].message.contains("delete_file"));
}

#[test]
fn json_lines_of_messages_with_a_cut_last_line() {
    // Through the line adapter, as the reader feeds it.
    let bytes = fixture(DIR, "messages.jsonl");
    let (events, diagnostics) = support::feed(&mut ChatCompletionsLines::new(ctx()), &bytes);
    assert_eq!(kinds(&diagnostics), [(5, DiagnosticKind::Truncated)]);
    assert_eq!(events.len(), 2);
    assert_eq!((events[0].line, events[1].line), (2, 3));
    assert_eq!(
        events[0].event.args,
        Value::parse(br#"{"tz":"Asia/Tokyo"}"#).unwrap()
    );
    // The document adapter falls back to JSON Lines and gives the same result.
    let a = ChatCompletions.adapt(&bytes, &ctx()).unwrap();
    assert_eq!(a.events, events);
    assert_eq!(a.diagnostics, diagnostics);
}

/// A JSON text built from the vocabulary of chat messages.
fn json_text() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "role",
        "content",
        "tool_calls",
        "id",
        "type",
        "function",
        "name",
        "arguments",
        "tool_call_id",
        "function_call",
        "messages",
        "timestamp",
        "text",
    ]);
    let words = vec![
        "assistant",
        "user",
        "tool",
        "function",
        "system",
        "call_1",
        "call_2",
        "read",
        "{\"path\":\"/a\"}",
        "{'a': 1,}",
        "{oops",
        "",
        "text",
    ];
    support::json_text(keys, words, 6, 64, 6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random documents never make the adapter panic.
    #[test]
    fn random_documents_never_panic(doc in json_text()) {
        if let Ok(a) = ChatCompletions.adapt(doc.as_bytes(), &ctx()) {
            for e in &a.events {
                prop_assert!(e.event.tool.is_some());
            }
        }
    }

    /// Random bytes and random JSON Lines never make either adapter panic.
    #[test]
    fn random_bytes_and_lines_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        lines in prop::collection::vec(json_text(), 0..12),
    ) {
        let _ = ChatCompletions.adapt(&bytes, &ctx());
        let jsonl = lines.join("\n");
        let _ = ChatCompletions.adapt(jsonl.as_bytes(), &ctx());
        let mut adapter = ChatCompletionsLines::new(ctx());
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let _ = adapter.line(i as u64 + 1, l.as_bytes(), &mut out);
        }
        let _ = adapter.finish(&mut out);
    }

    /// Any fixture, cut anywhere, never makes the adapter panic.
    #[test]
    fn cut_fixtures_never_panic(cut in 0usize..14000, pick in 0usize..4) {
        let name = ["loop.json", "healthy.json", "traps.json", "messages.jsonl"][pick];
        let _ = ChatCompletions.adapt(cut_at(&fixture(DIR, name), cut), &ctx());
    }
}
