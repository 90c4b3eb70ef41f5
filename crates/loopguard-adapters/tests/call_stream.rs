//! The call-stream adapter on realistic documents
//! (`tests/fixtures/transcripts/call-stream/`), through to loopguard's decisions.

#[allow(dead_code)]
mod support;

use loopguard_adapters::call_stream::CallStream;
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter};
use loopguard_core::{Mode, Value};
use loopguard_events::Action;
use loopguard_events::{EventKind, Payload};
use proptest::prelude::*;
use support::{brief, json, not_quiet, replay_decided, text_payload};

const DIR: &str = "call-stream";

fn ctx() -> Context {
    Context {
        session: "agent:main:telegram:group:42".into(),
        agent: Some("main".into()),
    }
}

fn adapt(name: &str) -> Adapted {
    support::adapt_fixture(&CallStream, DIR, name, &ctx())
}

#[test]
fn polling_a_stuck_build_warns_then_blocks() {
    let adapted = adapt("poll-loop.json");
    assert!(adapted.diagnostics.is_empty(), "{:?}", adapted.diagnostics);
    let events = &adapted.events;
    assert_eq!(events.len(), 50);
    let run = "4b1f0c2a-5d6e-4f70-8a91-b2c3d4e5f601";
    assert_eq!(
        brief(&events[0]),
        format!("call 1 {run} functions.exec:0 exec")
    );
    assert_eq!(
        events[0].event.args,
        json(r#"{"command":"npm run build","background":true}"#)
    );
    assert_eq!(events[0].event.timestamp_ms, 1788700002000);
    assert_eq!(events[1].event.timestamp_ms, 1788700002060);
    for n in 1..=24u64 {
        let (call, outcome) = (&events[2 * n as usize], &events[2 * n as usize + 1]);
        let line = n + 1;
        assert_eq!(
            brief(call),
            format!("call {line} {run} functions.process:{n} process")
        );
        assert_eq!(
            brief(outcome),
            format!("outcome {line} {run} functions.process:{n} process")
        );
        assert_eq!(
            call.event.args,
            json(r#"{"action":"poll","sessionId":"bold-otter"}"#)
        );
        assert_eq!(
            outcome.event.payload,
            Some(text_payload("(no new output)\n\nProcess still running."))
        );
        assert_eq!(call.tokens, None);
        // Each label is a session of its own.
        assert_eq!(
            call.event.session.as_ref().unwrap().to_string(),
            format!("{}/stuck-build", ctx().session)
        );
    }
    let flagged = not_quiet(&replay_decided(events, Mode::Observe));
    let mut want = Vec::new();
    for n in 11..=24u64 {
        let action = if n <= 20 { Action::Warn } else { Action::Block };
        want.push((n + 1, action, Some("known_poll_no_progress"), Some(n - 1)));
    }
    assert_eq!(flagged, want);
}

#[test]
fn healthy_stream_reads_labels_in_document_order() {
    let adapted = adapt("healthy.json");
    assert!(adapted.diagnostics.is_empty(), "{:?}", adapted.diagnostics);
    let ra = "0f1e2d3c-0000-4b5a-9687-a5b4c3d2e1f0";
    let rb = "1a2b3c4d-0000-4e5f-8071-8293a4b5c6d7";
    let briefs: Vec<String> = adapted.events.iter().map(brief).collect();
    // "morning" comes first in the document, although "evening" sorts first; its six
    // records are 1-6, so "evening"'s records are 7 and 8.
    assert_eq!(
        briefs,
        [
            format!("call 1 {ra} functions.read:0 read"),
            format!("outcome 1 {ra} functions.read:0 read"),
            format!("call 2 {ra} functions.exec:1 exec"),
            format!("outcome 2 {ra} functions.exec:1 exec"),
            format!("call 3 {ra} functions.read:2 read"),
            format!("outcome 3 {ra} functions.read:2 read"),
            format!("call 4 {ra} functions.read:3 read"),
            format!("outcome 4 {ra} functions.read:3 read"),
            format!("call 5 {ra} functions.apply_patch:4 apply_patch"),
            format!("outcome 5 {ra} functions.apply_patch:4 apply_patch"),
            format!("call 6 {ra} functions.exec:5 exec"),
            format!("outcome 6 {ra} functions.exec:5 exec"),
            format!("call 7 {rb} functions.exec:0 exec"),
            format!("outcome 7 {rb} functions.exec:0 exec"),
            format!("call 8 {rb} functions.message:1 message"),
            format!("outcome 8 {rb} functions.message:1 message"),
        ]
    );
    let events = &adapted.events;
    let sessions: Vec<String> = events
        .iter()
        .map(|e| support::s(&e.event.session))
        .collect();
    let (morning, evening) = sessions.split_at(12);
    assert!(morning
        .iter()
        .all(|s| *s == format!("{}/morning", ctx().session)));
    assert!(evening
        .iter()
        .all(|s| *s == format!("{}/evening", ctx().session)));
    assert_eq!(
        events[7].event.payload,
        Some(Payload::Error(Value::from(
            r#"{"status":"error","tool":"read","error":"File not found: src/dates.md."}"#
        )))
    );
    // A non-zero exit is a result, as OpenClaw reports it.
    assert_eq!(
        events[3].event.payload,
        Some(text_payload(
            "FAIL src/date.test.ts\n\n(Command exited with code 1)"
        ))
    );
    assert_eq!(events[3].event.timestamp_ms, 1788700003000 + 2100);
    assert!(events
        .iter()
        .all(|e| e.event.agent.as_ref().unwrap().as_str() == Some("main")));
    assert!(not_quiet(&replay_decided(events, Mode::Observe)).is_empty());
    assert!(not_quiet(&replay_decided(events, Mode::Enforce)).is_empty());
}

#[test]
fn compaction_record_arms_the_guard_and_the_loop_aborts() {
    let adapted = adapt("compaction-loop.json");
    assert!(adapted.diagnostics.is_empty(), "{:?}", adapted.diagnostics);
    let events = &adapted.events;
    assert_eq!(events.len(), 15);
    let run = "15fa1919-0000-4b9a-83ac-39b1736ab54a";
    let compaction = &events[8];
    assert_eq!(brief(compaction), format!("compaction 5 {run} - -"));
    assert_eq!(compaction.event.timestamp_ms, 1788707230000);
    // Kimi-style ids restart after the compaction; each call is paired with its own result.
    assert_eq!(
        brief(&events[9]),
        format!("call 6 {run} functions.gateway:0 gateway")
    );
    let decisions = replay_decided(events, Mode::Observe);
    assert_eq!(decisions[8], (5, Action::Armed, None, None));
    assert_eq!(
        not_quiet(&decisions),
        [(8, Action::Abort, Some("compaction_loop_persisted"), Some(3))]
    );
}

#[test]
fn edge_cases_are_reported_with_their_record_numbers() {
    let adapted = adapt("edge-cases.json");
    let run = "2c3d4e5f-0000-4a1b-8c2d-3e4f5a6b7c8d";
    let briefs: Vec<String> = adapted.events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            format!("call 1 {run} functions.read:0 read"),
            format!("outcome 1 {run} functions.read:0 read"),
            // No result: replayed without an outcome.
            format!("call 2 {run} functions.exec:1 exec"),
            format!("call 6 {run} functions.exec:3 exec"),
            format!("outcome 6 {run} functions.exec:3 exec"),
            // no `kind`, an empty runId (the label's run is used), a null resultText with
            // a tsResult: an empty result
            format!("call 7 {run} functions.read:4 read"),
            format!("outcome 7 {run} functions.read:4 read"),
        ]
    );
    assert_eq!(adapted.events[2].event.payload, None);
    assert_eq!(
        adapted.events[4].event.payload,
        Some(Payload::Error(Value::from("")))
    );
    assert_eq!(adapted.events[6].event.payload, Some(text_payload("")));
    let kinds = support::kinds(&adapted.diagnostics);
    assert_eq!(
        kinds,
        [
            (2, DiagnosticKind::Unanswered),
            (3, DiagnosticKind::BadField),
            (4, DiagnosticKind::UnknownEntry),
            (5, DiagnosticKind::BadField),
            (0, DiagnosticKind::BadField),
        ]
    );
    assert!(adapted.diagnostics[0].message.contains("functions.exec:1"));
    assert!(adapted.diagnostics[4].message.contains("broken"));
}

/// Two labels with six identical reads each: 12 identical calls in the document, but six
/// in each session, so nothing is flagged; and every record has its own line.
#[test]
fn labels_are_sessions_of_their_own_with_document_wide_record_numbers() {
    let read = r#"{"kind":"call","name":"read","args":{"path":"/same.txt"},"runId":"r","isError":false,"resultText":"same text"}"#;
    let records = [read; 6].join(",");
    let doc = format!(r#"{{"a":{{"calls":[{records}]}},"b":{{"calls":[{records}]}}}}"#);
    let adapted = CallStream.adapt(doc.as_bytes(), &ctx()).unwrap();
    assert!(adapted.diagnostics.is_empty(), "{:?}", adapted.diagnostics);
    let events = &adapted.events;
    assert_eq!(events.len(), 24);
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .collect();
    let lines: Vec<u64> = calls.iter().map(|e| e.line).collect();
    assert_eq!(lines, (1..=12).collect::<Vec<u64>>());
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
    let sessions: Vec<String> = calls.iter().map(|e| support::s(&e.event.session)).collect();
    let session = ctx().session;
    assert_eq!(sessions[..6], vec![format!("{session}/a"); 6][..]);
    assert_eq!(sessions[6..], vec![format!("{session}/b"); 6][..]);
    for mode in [Mode::Observe, Mode::Enforce] {
        assert!(
            not_quiet(&replay_decided(events, mode)).is_empty(),
            "{mode:?}"
        );
    }
    // Without a session in the context, a label is named by itself.
    let bare = CallStream
        .adapt(doc.as_bytes(), &Context::default())
        .unwrap();
    assert_eq!(support::s(&bare.events[12].event.session), "b");
}

#[test]
fn documents_that_are_not_call_streams_are_rejected() {
    for doc in [&b"[1,2]"[..], b"not json", b"{\"a\":", b"", b"\"x\""] {
        let d = CallStream.adapt(doc, &ctx()).unwrap_err();
        assert_eq!(d.kind, DiagnosticKind::NotJson, "{doc:?}");
    }
    let empty = CallStream.adapt(b" {} ", &ctx()).unwrap();
    assert!(empty.events.is_empty() && empty.diagnostics.is_empty());
}

#[test]
fn compaction_is_the_only_kind_that_is_not_a_call() {
    let doc = br#"{"x":{"session_id":"s","calls":[
        {"kind":"compaction","ts":1788700000000},
        {"kind":"call","name":"read","args":{},"runId":"r2","resultText":"a"},
        {"kind":"compaction","ts":1788700001000},
        {"kind":"compaction","runId":"r9"},
        {"kind":42}
    ]}}"#;
    let adapted = CallStream.adapt(doc, &ctx()).unwrap();
    let briefs: Vec<String> = adapted.events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            // before any call: the run of the next call
            "compaction 1 r2 - -",
            "call 2 r2 - read",
            "outcome 2 r2 - read",
            // after the last call: the run of the previous one
            "compaction 3 r2 - -",
            "compaction 4 r9 - -",
        ]
    );
    assert_eq!(adapted.events[0].event.kind, EventKind::Compaction);
    assert_eq!(adapted.diagnostics.len(), 1);
    assert_eq!(
        (adapted.diagnostics[0].line, adapted.diagnostics[0].kind),
        (5, DiagnosticKind::UnknownEntry)
    );
}

// ---- never panics ------------------------------------------------------------------

fn record_strategy() -> impl Strategy<Value = String> {
    let call = (
        prop::option::of(prop_oneof![Just("call"), Just("compaction"), Just("other")]),
        prop::option::of(prop_oneof![
            Just("read".to_string()),
            Just("Bash".to_string()),
            "[A-Za-z -]{0,6}"
        ]),
        prop::option::of("[a-z0-9]{0,4}"),
        prop::option::of(prop_oneof![
            Just("\"ok\"".to_string()),
            Just("null".to_string()),
            Just("7".to_string())
        ]),
        any::<bool>(),
        prop::option::of(prop_oneof![
            Just("1788700000000"),
            Just("-5"),
            Just("\"2026-09-05T15:26:58Z\""),
            Just("1e400")
        ]),
    )
        .prop_map(|(kind, name, run, result, err, ts)| {
            let mut fields = Vec::new();
            if let Some(k) = kind {
                fields.push(format!(r#""kind":"{k}""#));
            }
            if let Some(n) = name {
                fields.push(format!(r#""name":"{n}""#));
            }
            if let Some(r) = run {
                fields.push(format!(r#""runId":"{r}""#));
            }
            if let Some(r) = result {
                fields.push(format!(r#""resultText":{r}"#));
            }
            if let Some(t) = ts {
                fields.push(format!(r#""ts":{t},"tsResult":{t}"#));
            }
            fields.push(format!(r#""isError":{err},"args":{{"p":1}}"#));
            format!("{{{}}}", fields.join(","))
        });
    prop_oneof![
        4 => call,
        1 => Just("null".to_string()),
        1 => Just("[]".to_string()),
        1 => "\\PC{0,8}".prop_map(|s| format!("{:?}", s)),
    ]
}

fn document_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => prop::collection::vec(
            ("[a-z]{0,3}", prop::collection::vec(record_strategy(), 0..12), any::<bool>()),
            0..4,
        )
        .prop_map(|labels| {
            let body: Vec<String> = labels
                .iter()
                .map(|(label, records, with_calls)| {
                    if *with_calls {
                        format!(r#""{label}":{{"session_id":"s","runId":"r","calls":[{}]}}"#, records.join(","))
                    } else {
                        format!(r#""{label}":[{}]"#, records.join(","))
                    }
                })
                .collect();
            format!("{{{}}}", body.join(",")).into_bytes()
        }),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => "\\PC{0,80}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_documents_never_panic(doc in document_strategy()) {
        if let Ok(adapted) = CallStream.adapt(&doc, &ctx()) {
            let mut i = 0;
            let events = &adapted.events;
            // Record numbers are unique across the document.
            prop_assert!(events.windows(2).all(|w| w[0].line <= w[1].line));
            while i < events.len() {
                match events[i].event.kind {
                    EventKind::Compaction => i += 1,
                    EventKind::Call => {
                        prop_assert!(events[i].line >= 1);
                        match events.get(i + 1) {
                            Some(next) if next.event.kind == EventKind::Outcome => {
                                prop_assert_eq!(events[i].line, next.line);
                                i += 2;
                            }
                            // A call without a result, replayed alone, is reported.
                            _ => {
                                let line = events[i].line;
                                let reported = adapted.diagnostics.iter().any(|d| {
                                    d.line == line && d.kind == DiagnosticKind::Unanswered
                                });
                                prop_assert!(reported);
                                i += 1;
                            }
                        }
                    }
                    EventKind::Outcome => prop_assert!(false, "outcome without a call"),
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(doc in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = CallStream.adapt(&doc, &ctx());
    }
}
