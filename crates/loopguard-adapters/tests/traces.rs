//! Trace formats (docs/traces/): OTLP JSON in its forms, flat span dumps, Phoenix spans, and
//! the tool-span conventions (OpenTelemetry GenAI, Pydantic AI, OpenInference, Traceloop).
//!
//! The fixtures in `tests/fixtures/transcripts/otlp/` were written for these tests (not
//! copied from anywhere), following the published shapes:
//! * OTLP/JSON: the OTLP specification's JSON encoding (hex ids, camelCase, 64-bit
//!   integers as strings) and `opentelemetry-proto`'s `trace.proto` / `common.proto`
//!   (`AnyValue` with `kvlistValue`, `arrayValue`); base64 ids are what protobuf's
//!   generic JSON mapping writes (`google.protobuf.json_format.MessageToJson`).
//! * GenAI: the OpenTelemetry GenAI semantic conventions' `execute_tool` span
//!   (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments`,
//!   `gen_ai.tool.call.result`, `error.type`, `gen_ai.conversation.id`).
//! * Pydantic AI: its documentation's instrumentation settings (version 2: span
//!   `running tool`, `tool_arguments`, `tool_response`).
//! * OpenInference: its specification (`openinference.span.kind = TOOL`, `tool.name`,
//!   `input.value`, `output.value`, `session.id`); Phoenix's span JSON (`context`,
//!   `span_kind`, nested `attributes`).
//! * Traceloop: OpenLLMetry's `traceloop.span.kind`, `traceloop.entity.input/output`.
//!
//! Files produced by the real Python SDK are tested in `crates/loopguard/tests/otel.rs`.

#[allow(dead_code)]
mod support;

use loopguard_adapters::otlp::{decode_id_text, OtlpJson};
use loopguard_adapters::spans::{tool_span, Convention, Span};
use loopguard_adapters::{Context, DiagnosticKind, DocumentAdapter, Format};
use loopguard_core::{Detector, Value};
use loopguard_events::{EventKind, Payload};
use loopguard_guard::ToolProfile;
use loopguard_replay::Action;
use support::{
    adapt_fixture, detect_fixture, fixture, json, repeat_decision, replay_observe,
    replay_observe_by_source, s,
};

fn ctx(session: &str) -> Context {
    Context {
        session: session.into(),
        agent: None,
    }
}

fn calls(a: &loopguard_adapters::Adapted) -> Vec<&loopguard_adapters::SourcedEvent> {
    a.events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .collect()
}

#[test]
fn every_trace_form_is_recognised_by_structure() {
    for file in [
        "genai-file-exporter.jsonl",
        "collector-pretty.json",
        "bare-resource-spans.json",
        "bad-and-partial.jsonl",
        "phoenix-spans.jsonl",
        "phoenix-named.json",
    ] {
        assert_eq!(detect_fixture("otlp", file), Some(Format::Otlp), "{file}");
    }
    // Named anything: the structure decides.
    let body = fixture("otlp", "collector-pretty.json");
    assert_eq!(
        loopguard_adapters::detect("x.txt", &body),
        Some(Format::Otlp)
    );
    // A cut-off head of a pretty-printed export.
    assert_eq!(
        loopguard_adapters::detect("x", &body[..300]),
        Some(Format::Otlp)
    );
    // A bare ScopeSpans on one line; an array of TracesData.
    assert_eq!(
        loopguard_adapters::detect("x", br#"{"scope":{"name":"s"},"spans":[]}"#),
        Some(Format::Otlp)
    );
    assert_eq!(
        loopguard_adapters::detect("x", b"[{\"resourceSpans\":[]}]"),
        Some(Format::Otlp)
    );
    assert_eq!(Format::from_name("otlp"), Some(Format::Otlp));
}

#[test]
fn genai_file_exporter_lines_sessions_order_and_loop() {
    let a = adapt_fixture(&OtlpJson, "otlp", "genai-file-exporter.jsonl", &ctx("f"));
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 14);
    // Trace A: its own session, run = trace id, calls in start order with their ids.
    let a_calls: Vec<_> = c
        .iter()
        .filter(|e| s(&e.event.session) == "f/5b8efff798038103d269b633813fc60c")
        .collect();
    assert_eq!(a_calls.len(), 12);
    assert_eq!(s(&a_calls[0].event.call_id), "call_0");
    assert_eq!(s(&a_calls[0].event.run), "5b8efff798038103d269b633813fc60c");
    assert_eq!(
        a_calls[0].event.args,
        json(r#"{"path":"/srv/app/config.yaml"}"#)
    );
    assert_eq!(a_calls[0].line, 2);
    assert_eq!(a_calls[0].event.timestamp_ms, 1_788_622_019_000);
    // The agent comes from the parent invoke_agent span.
    assert_eq!(s(&a_calls[0].event.agent), "support");
    // Trace B: the conversation id on the parent names the session; the refund (started
    // first) comes first although it is written second; structured arguments decoded.
    let b: Vec<_> = a
        .events
        .iter()
        .filter(|e| s(&e.event.session) == "f/conv-42")
        .collect();
    assert_eq!(b.len(), 4);
    assert_eq!(s(&b[0].event.tool), "refund");
    match &b[1].event.payload {
        Some(Payload::Error(e)) => assert_eq!(e.as_str(), Some("refund not allowed")),
        other => panic!("refund must fail: {other:?}"),
    }
    assert_eq!(s(&b[2].event.tool), "lookup_invoice");
    assert_eq!(
        b[2].event.args,
        json(r#"{"include_lines":true,"invoice":1042}"#)
    );
    match &b[3].event.payload {
        Some(Payload::Result(r)) => assert_eq!(
            r,
            &json(r#"{"content":[{"type":"text","text":"[\"line 1\",12.5]"}]}"#)
        ),
        other => panic!("lookup must succeed: {other:?}"),
    }
    // The 12 identical reads: allowed up to the 10th, warned after.
    let decided = replay_observe(&a.events);
    let read_calls: Vec<_> = decided
        .iter()
        .filter(|d| d.1 == EventKind::Call && d.0 >= 2 && d.0 <= 13)
        .collect();
    assert_eq!(read_calls.len(), 12);
    for (i, d) in read_calls.iter().enumerate() {
        assert_eq!((d.2, d.3), repeat_decision(i + 1), "read {}", i + 1);
    }
}

#[test]
fn pretty_printed_documents_back_to_back_with_base64_ids_and_pydantic_spans() {
    let a = adapt_fixture(&OtlpJson, "otlp", "collector-pretty.json", &ctx(""));
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 3);
    // base64 ids decoded to hex: the session is the hex trace id.
    assert_eq!(s(&c[0].event.session), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(s(&c[0].event.tool), "get_weather");
    assert_eq!(c[0].event.args, json(r#"{"city":"Paris"}"#));
    // Each document starts on its own line.
    let lines: Vec<u64> = c.iter().map(|e| e.line).collect();
    assert_eq!(lines[0], 1);
    assert!(lines[1] > lines[0] && lines[2] > lines[1], "{lines:?}");
    // STATUS_CODE_ERROR by name.
    let last = a.events.last().expect("events");
    assert!(
        matches!(&last.event.payload, Some(Payload::Error(e)) if e.as_str() == Some("ModelRetry: try again"))
    );
}

#[test]
fn openinference_and_traceloop_spans_in_a_bare_resource_spans() {
    let a = adapt_fixture(&OtlpJson, "otlp", "bare-resource-spans.json", &ctx(""));
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 2);
    // OpenInference: session.id names the session; input.value is the arguments.
    assert_eq!(s(&c[0].event.session), "sess-7");
    assert_eq!(s(&c[0].event.tool), "search_docs");
    assert_eq!(c[0].event.args, json(r#"{"query":"reset password"}"#));
    // Traceloop: kwargs unwrapped.
    assert_eq!(s(&c[1].event.tool), "fetch_page");
    assert_eq!(
        c[1].event.args,
        json(r#"{"url":"https://example.com/help"}"#)
    );
}

#[test]
fn phoenix_span_dump_with_nested_attributes() {
    let a = adapt_fixture(&OtlpJson, "otlp", "phoenix-spans.jsonl", &ctx(""));
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 2);
    assert_eq!(s(&c[0].event.tool), "lookup_order");
    assert_eq!(c[0].event.args, json(r#"{"order_id":"A7"}"#));
    assert_eq!(c[1].line, 2);
    assert_eq!(c[0].event.timestamp_ms, 1_788_622_010_000);
}

/// Phoenix spans grouped under names (`{"<trace name>": [spans…], …}`): recognised by
/// the spans in the lists, and read as the same spans one per line are.
#[test]
fn phoenix_named_span_lists() {
    let a = adapt_fixture(&OtlpJson, "otlp", "phoenix-named.json", &ctx(""));
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let flat = adapt_fixture(&OtlpJson, "otlp", "phoenix-spans.jsonl", &ctx(""));
    let c = calls(&a);
    assert_eq!(c.len(), 2);
    for (x, y) in c.iter().zip(calls(&flat)) {
        assert_eq!(x.event, y.event);
    }
}

#[test]
fn bad_and_partial_traces_are_reported_never_lost() {
    let a = adapt_fixture(&OtlpJson, "otlp", "bad-and-partial.jsonl", &ctx(""));
    let c = calls(&a);
    // Lines 1, 2 and 4 hold tool spans: all three are replayed.
    assert_eq!(c.iter().map(|e| e.line).collect::<Vec<_>>(), vec![1, 4, 2]);
    let has = |line: u64, kind: DiagnosticKind, text: &str| {
        a.diagnostics
            .iter()
            .any(|d| d.line == line && d.kind == kind && d.message.contains(text))
    };
    // The broken trace id is kept as written, with a note naming it.
    assert!(
        has(2, DiagnosticKind::Partial, "\"not-a-trace-id\""),
        "{:#?}",
        a.diagnostics
    );
    // The unparseable argument string is the arguments, with a note naming the span.
    assert!(has(2, DiagnosticKind::Partial, "e100000000000002"));
    assert_eq!(c[2].event.args, Value::from("{cmd: ls -la".to_string()));
    // The line cut off is not JSON; the object of another format is skipped by name.
    assert!(has(3, DiagnosticKind::NotJson, "not JSON"));
    assert!(has(5, DiagnosticKind::UnknownEntry, "neither OTLP"));
    // The attribute without a key is reported, the rest of the span read.
    assert!(has(4, DiagnosticKind::BadField, "without a string `key`"));
    // Per input: what was missing, and what that means for the judgement.
    assert!(has(
        0,
        DiagnosticKind::Partial,
        "1 of 3 tool spans have no arguments"
    ));
    assert!(has(0, DiagnosticKind::Partial, "judged by tool name only"));
    assert!(has(
        0,
        DiagnosticKind::Partial,
        "2 of 3 tool spans have no result"
    ));
    // Partial notes are not malformed input: --stop-on-bad-line does not stop on them.
    assert!(!DiagnosticKind::Partial.is_malformed());
}

#[test]
fn input_with_no_json_is_an_error_and_spans_without_tools_say_so() {
    let err = OtlpJson.adapt(b"not json at all", &ctx("x")).unwrap_err();
    assert_eq!((err.line, err.kind), (1, DiagnosticKind::NotJson));
    let a = OtlpJson
        .adapt(
            br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"GET /","startTimeUnixNano":1}]}]}]}"#,
            &ctx("x"),
        )
        .expect("read");
    assert!(a.events.is_empty());
    assert!(a
        .diagnostics
        .iter()
        .any(|d| d.message.contains("none of them a tool execution")));
}

#[test]
fn twenty_five_identical_execute_tool_spans_warn_then_block() {
    let mut lines = String::new();
    for i in 0..25u64 {
        lines.push_str(&format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"{:016x}","name":"execute_tool bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"command\":\"make test\"}}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"FAILED"}}}}]}}]}}]}}]}}"#,
            i + 1,
            1_700_000_000_000_000_000u64 + i * 1_000_000_000,
            1_700_000_000_000_000_000u64 + i * 1_000_000_000 + 500,
        ));
        lines.push('\n');
    }
    let a = OtlpJson.adapt(lines.as_bytes(), &ctx("t")).expect("read");
    let decided = replay_observe(&a.events);
    let call_decisions: Vec<_> = decided.iter().filter(|d| d.1 == EventKind::Call).collect();
    assert_eq!(call_decisions.len(), 25);
    let warned = call_decisions.iter().position(|d| d.2 == Action::Warn);
    let blocked = call_decisions.iter().position(|d| d.2 == Action::Block);
    // Identical calls with identical results: the no-progress detectors and the
    // repeat detector both see the loop; the first warning and block come on time.
    assert!(warned.is_some_and(|w| w <= 10), "{call_decisions:?}");
    assert!(blocked.is_some_and(|b| b <= 20), "{call_decisions:?}");
    assert!(call_decisions
        .iter()
        .any(|d| d.2 == Action::Block && d.3.is_some()));
    let _ = Detector::GenericRepeat;
}

#[test]
fn conventions_and_id_decoding() {
    let span = |name: &str, attrs: &[(&str, &str)]| Span {
        name: name.into(),
        attributes: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(v.to_string())))
            .collect(),
        ..Span::default()
    };
    let t = span(
        "running tool",
        &[("gen_ai.tool.name", "f"), ("tool_arguments", "{}")],
    );
    assert_eq!(
        tool_span(&t).map(|t| t.convention),
        Some(Convention::PydanticAi)
    );
    let t = span("execute_tool f", &[("gen_ai.tool.call.arguments", "{}")]);
    let ts = tool_span(&t).expect("tool");
    assert_eq!((ts.convention, ts.tool.as_str()), (Convention::GenAi, "f"));
    let t = span("x", &[("openinference.span.kind", "TOOL")]);
    assert_eq!(tool_span(&t).map(|t| t.tool), Some("x".to_string()));
    let t = span("chat gpt-4o", &[("gen_ai.operation.name", "chat")]);
    assert!(tool_span(&t).is_none());
    // error.type alone is an error.
    let t = span("execute_tool f", &[("error.type", "TimeoutError")]);
    assert_eq!(
        tool_span(&t).and_then(|t| t.error).as_deref(),
        Some("TimeoutError")
    );
    assert_eq!(
        decode_id_text("S/kvNXezTaajzpKdDg5HNg==", 16).as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(decode_id_text("4bf92f35", 16), None);
}

/// Twenty-five `Bash` calls as Claude Code's telemetry would send them: the same command,
/// a `description` the model rewords each time, and a result whose timing changes.
/// `resource` is the resource's attributes (JSON), `agent` an extra span attribute.
fn claude_code_bash_trace(resource: &str, agent: Option<(&str, &str)>) -> String {
    let mut lines = String::new();
    for i in 0..25u64 {
        let args = format!(
            r#"{{\"command\":\"npm test\",\"description\":\"Run the tests (attempt {})\"}}"#,
            i + 1
        );
        let result = format!(
            r#"{{\"stdout\":\"1 failing\",\"stderr\":\"\",\"interrupted\":false,\"isImage\":false,\"durationMs\":{},\"timestamp\":\"2026-01-01T00:00:{:02}Z\"}}"#,
            100 + i * 37,
            i
        );
        let extra = agent
            .map(|(k, v)| format!(r#",{{"key":"{k}","value":{{"stringValue":"{v}"}}}}"#))
            .unwrap_or_default();
        lines.push_str(&format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{resource}]}},"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"{:016x}","name":"execute_tool Bash","startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"Bash"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{args}"}}}},{{"key":"gen_ai.tool.call.result","value":{{"stringValue":"{result}"}}}}{extra}]}}]}}]}}]}}"#,
            i + 1,
            1_700_000_000_000_000_000u64 + i * 1_000_000_000,
            1_700_000_000_000_000_000u64 + i * 1_000_000_000 + 500,
        ));
        lines.push('\n');
    }
    lines
}

fn call_actions(
    decided: &[(u64, EventKind, Action, Option<Detector>)],
) -> Vec<(Action, Option<Detector>)> {
    decided
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .map(|d| (d.2, d.3))
        .collect()
}

#[test]
fn claude_code_traces_replay_with_the_claude_code_profile() {
    let service = r#"{"key":"service.name","value":{"stringValue":"claude-code"}}"#;
    let a = OtlpJson
        .adapt(claude_code_bash_trace(service, None).as_bytes(), &ctx("cc"))
        .expect("read");
    assert!(a.events.iter().all(|e| e.profile == Some("claude-code")));
    // The result reaches the profile as Claude Code recorded it (its `tool_response`
    // object), not wrapped as text, so stdout, stderr and the exit status count.
    let first_result = a
        .events
        .iter()
        .find_map(|e| match &e.event.payload {
            Some(Payload::Result(v)) => Some(v),
            _ => None,
        })
        .expect("a result");
    assert_eq!(
        first_result.get("stdout").and_then(Value::as_str),
        Some("1 failing")
    );
    let actions = call_actions(&replay_observe_by_source(&a.events, ToolProfile::Plain));
    assert_eq!(actions.len(), 25);
    // The description and the timing do not count: the 25 calls are one repeated exec,
    // warned from the 11th and blocked from the 21st, as Claude Code's hook would.
    for (i, got) in actions.iter().enumerate() {
        assert_eq!(
            got.0,
            repeat_decision(i + 1).0,
            "call {}: {actions:?}",
            i + 1
        );
    }
    assert_eq!(actions[20].0, Action::Block);
    assert!(actions[..20].iter().all(|a| a.0 != Action::Block));

    // Named by the agent instead of the service: the same.
    let other = r#"{"key":"service.name","value":{"stringValue":"ci-runner"}}"#;
    let a = OtlpJson
        .adapt(
            claude_code_bash_trace(other, Some(("gen_ai.agent.name", "Claude Code"))).as_bytes(),
            &ctx("cc"),
        )
        .expect("read");
    let actions = call_actions(&replay_observe_by_source(&a.events, ToolProfile::Plain));
    assert_eq!(actions[20].0, Action::Block, "{actions:?}");
}

#[test]
fn the_same_spans_without_the_source_are_judged_as_given() {
    let other = r#"{"key":"service.name","value":{"stringValue":"ci-runner"}}"#;
    let a = OtlpJson
        .adapt(
            claude_code_bash_trace(other, None).as_bytes(),
            &ctx("plain"),
        )
        .expect("read");
    assert!(a.events.iter().all(|e| e.profile.is_none()));
    let actions = call_actions(&replay_observe_by_source(&a.events, ToolProfile::Plain));
    assert_eq!(actions.len(), 25);
    // Every description differs, so no two calls are the same call: nothing is flagged.
    assert!(actions.iter().all(|a| a.0 == Action::Allow), "{actions:?}");
}
