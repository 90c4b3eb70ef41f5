//! Trace-export formats (docs/traces/): Langfuse, LangSmith, ATIF, OpenAI Agents SDK and Claude
//! Managed Agents, on fixtures written for these tests (not copied) in the published shapes:
//! * Langfuse: the public API's observation objects (`GET /api/public/observations`,
//!   `{"data":[…],"meta":{…}}`; `GET /api/public/traces/{id}` with `observations`), type
//!   `TOOL`, `level`, `statusMessage`.
//! * LangSmith: run objects as `Client.list_runs` yields them (`run_type`, `inputs`,
//!   `outputs`, `error`, `trace_id`, `dotted_order`), written out of order.
//! * ATIF: Harbor's RFC 0001 (`schema_version` `ATIF-v1.4`, `steps[].tool_calls`
//!   `{tool_call_id, function_name, arguments}`, `observation.results`
//!   `{source_call_id, content}`).
//! * OpenAI Agents SDK: `Span.export()` / `Trace.export()` (`object` `trace.span`,
//!   `span_data` `{type:"function", name, input, output, mcp_data}`, `error`
//!   `{message, data}`) in the backend exporter's `{"data":[…]}` batch.
//! * Managed Agents: the session events of the Managed Agents API (`agent.tool_use`,
//!   `agent.mcp_tool_use` + `mcp_server_name`, `agent.custom_tool_use`, their results paired
//!   by `tool_use_id` / `mcp_tool_use_id` / `custom_tool_use_id`, `is_error`,
//!   `processed_at`), as the list answer and as the SSE stream.

#[allow(dead_code)]
mod support;

use loopguard_adapters::atif::Atif;
use loopguard_adapters::langfuse::Langfuse;
use loopguard_adapters::langsmith::LangSmith;
use loopguard_adapters::managed_agents::ManagedAgents;
use loopguard_adapters::openai_agents::OpenAiAgents;
use loopguard_adapters::{Adapted, Context, DiagnosticKind, DocumentAdapter, Format, SourcedEvent};
use loopguard_core::Detector;
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use support::{adapt_fixture, detect_fixture, json, replay_observe, s};

fn ctx() -> Context {
    Context {
        session: "f".into(),
        agent: None,
    }
}

fn calls(a: &Adapted) -> Vec<&SourcedEvent> {
    a.events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .collect()
}

/// The first warning is generic_repeat at the 11th identical call.
fn warns_on_the_eleventh(a: &Adapted) {
    let decided = replay_observe(&a.events);
    let calls: Vec<_> = decided.iter().filter(|d| d.1 == EventKind::Call).collect();
    let first = calls
        .iter()
        .position(|d| d.2 == Action::Warn)
        .expect("a warning");
    assert_eq!(first, 10, "{calls:?}");
    assert_eq!(calls[first].3, Some(Detector::GenericRepeat));
}

fn error_of(e: &SourcedEvent) -> Option<String> {
    match &e.event.payload {
        Some(Payload::Error(v)) => v.as_str().map(str::to_string),
        _ => None,
    }
}

#[test]
fn each_export_is_recognised_by_structure() {
    for (dir, file, want) in [
        ("langfuse", "observations-api.json", Format::Langfuse),
        ("langfuse", "traces.jsonl", Format::Langfuse),
        ("langfuse", "trace-download.json", Format::Langfuse),
        ("langsmith", "runs.jsonl", Format::LangSmith),
        ("atif", "trajectory.json", Format::Atif),
        ("openai-agents", "batch.json", Format::OpenAiAgents),
        ("managed-agents", "events.json", Format::ManagedAgents),
        ("managed-agents", "stream.sse", Format::ManagedAgents),
        ("managed-agents", "wrapped.jsonl", Format::ManagedAgents),
    ] {
        assert_eq!(detect_fixture(dir, file), Some(want), "{dir}/{file}");
    }
    for f in [
        Format::Langfuse,
        Format::LangSmith,
        Format::Atif,
        Format::OpenAiAgents,
        Format::ManagedAgents,
    ] {
        assert_eq!(Format::from_name(f.name()), Some(f));
    }
}

#[test]
fn langfuse_tool_observations() {
    let a = adapt_fixture(&Langfuse, "langfuse", "observations-api.json", &ctx());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 13);
    assert_eq!(s(&c[0].event.session), "f/lf-trace-1");
    assert_eq!(c[0].event.args, json(r#"{"query":"refund policy"}"#));
    // The ERROR observation: its statusMessage is the error, its JSON text input parsed.
    let send = a
        .events
        .iter()
        .filter(|e| s(&e.event.tool) == "send_email")
        .collect::<Vec<_>>();
    assert_eq!(send[0].event.args, json(r#"{"to":"a@example.com"}"#));
    assert_eq!(error_of(send[1]).as_deref(), Some("SMTP timeout"));
    warns_on_the_eleventh(&a);
    // A trace with its observations: sessionId names the session; a TOOL observation
    // without a name is reported by id, one without output is noted.
    let t = adapt_fixture(&Langfuse, "langfuse", "traces.jsonl", &ctx());
    assert_eq!(s(&calls(&t)[0].event.session), "f/lf-session-9");
    assert!(t
        .diagnostics
        .iter()
        .any(|d| d.kind == DiagnosticKind::BadField && d.message.contains("o3")));
}

/// The trace download of Langfuse's UI and API, `{"trace": {…}, "observations": […]}`,
/// with the observations repeated under `trace.observations` and their input and output
/// as JSON text: each call read once, deciding as the observations list does.
#[test]
fn langfuse_trace_downloads_read_each_observation_once() {
    let a = adapt_fixture(&Langfuse, "langfuse", "trace-download.json", &ctx());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 13);
    assert_eq!(s(&c[0].event.session), "f/lf-session-3");
    assert_eq!(c[0].event.args, json(r#"{"query":"refund policy"}"#));
    warns_on_the_eleventh(&a);
}

#[test]
fn langsmith_runs_in_dotted_order() {
    let a = adapt_fixture(&LangSmith, "langsmith", "runs.jsonl", &ctx());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 12);
    // Written newest first; replayed in dotted order (the first tool run is on line 13).
    assert_eq!(c[0].line, 13);
    assert_eq!(
        s(&c[0].event.session),
        "f/1f0a0000-0000-0000-0000-000000000001"
    );
    // `inputs.input` holds Python-repr text: read leniently as JSON5.
    assert_eq!(c[0].event.args, json(r#"{"city":"Paris"}"#));
    let last = a.events.last().expect("events");
    assert_eq!(
        error_of(last).as_deref(),
        Some("ToolException('rate limited')")
    );
    warns_on_the_eleventh(&a);
}

#[test]
fn atif_steps_pair_results_by_source_call_id() {
    let a = adapt_fixture(&Atif, "atif", "trajectory.json", &ctx());
    let c = calls(&a);
    assert_eq!(c.len(), 12);
    assert_eq!(s(&c[0].event.session), "f/atif-run-1");
    assert_eq!(c[0].line, 2); // step 2
    assert_eq!(c[0].event.args, json(r#"{"cmd":"pytest -x"}"#));
    // extra.is_error makes an error; the call without a function_name is reported.
    assert!(a.events.iter().any(|e| error_of(e).is_some()));
    assert!(a.diagnostics.iter().any(|d| d.line == 13
        && d.kind == DiagnosticKind::BadField
        && d.message.contains("function_name")));
    warns_on_the_eleventh(&a);
}

#[test]
fn openai_agents_function_spans() {
    let a = adapt_fixture(&OpenAiAgents, "openai-agents", "batch.json", &ctx());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let c = calls(&a);
    assert_eq!(c.len(), 12);
    assert_eq!(
        s(&c[0].event.session),
        "f/trace_0123456789abcdef0123456789abcdef"
    );
    assert_eq!(c[0].event.args, json(r#"{"city":"Paris"}"#));
    assert_eq!(
        error_of(a.events.last().expect("events")).as_deref(),
        Some("Error running tool")
    );
    warns_on_the_eleventh(&a);
}

#[test]
fn managed_agents_events_pair_by_kind_of_id() {
    let a = adapt_fixture(&ManagedAgents, "managed-agents", "events.json", &ctx());
    let c = calls(&a);
    assert_eq!(c.len(), 13);
    assert_eq!(s(&c[0].event.session), "f");
    let mcp = a
        .events
        .iter()
        .filter(|e| s(&e.event.tool) == "github.search_issues")
        .collect::<Vec<_>>();
    assert_eq!(mcp.len(), 2);
    assert_eq!(error_of(mcp[1]).as_deref(), Some("rate limited"));
    let deploy = a
        .events
        .iter()
        .filter(|e| s(&e.event.tool) == "deploy")
        .collect::<Vec<_>>();
    assert_eq!(
        deploy.len(),
        2,
        "the custom tool's result comes from user.custom_tool_result"
    );
    // The result for an unknown tool use is an orphan, reported.
    assert!(a
        .diagnostics
        .iter()
        .any(|d| d.kind == DiagnosticKind::Orphan && d.message.contains("sevt_nope")));
    warns_on_the_eleventh(&a);
    let sse = adapt_fixture(&ManagedAgents, "managed-agents", "stream.sse", &ctx());
    assert_eq!(calls(&sse).len(), 2);
    // The same events wrapped as `{"role", "kind", "time", "raw"}`, their time on the
    // wrapper only: the same events, at the same times.
    let w = adapt_fixture(&ManagedAgents, "managed-agents", "wrapped.jsonl", &ctx());
    assert_eq!(w.events.len(), a.events.len());
    for (x, y) in w.events.iter().zip(&a.events) {
        assert_eq!(x.event, y.event);
        assert!(x.event.timestamp_ms > 0);
    }
}

#[test]
fn broken_exports_are_errors_or_notes_never_panics() {
    for adapter in [
        &Langfuse as &dyn DocumentAdapter,
        &LangSmith,
        &Atif,
        &OpenAiAgents,
        &ManagedAgents,
    ] {
        // Not JSON at all: an error naming line 1.
        let e = adapter.adapt(b"garbage", &ctx()).unwrap_err();
        assert_eq!(e.line, 1);
        // A record of another kind: reported, not lost silently.
        let a = adapter
            .adapt(b"{\"hello\":1}\n{\"world\":2}\n", &ctx())
            .expect("read");
        assert!(a.events.is_empty());
        assert_eq!(a.diagnostics.len(), 2, "{:?}", a.diagnostics);
        assert!(a
            .diagnostics
            .iter()
            .all(|d| d.kind == DiagnosticKind::UnknownEntry));
        // A line cut off.
        let a = adapter
            .adapt(b"{\"hello\":1}\n{\"cut", &ctx())
            .expect("read");
        assert!(a
            .diagnostics
            .iter()
            .any(|d| d.line == 2 && d.kind == DiagnosticKind::NotJson));
    }
}
