//! Formats of docs/transcripts.md §2, on fixtures shaped like the real files: OpenHands (V0
//! `trajectory.json`, evaluation `output.jsonl`, V1 SDK events), Anthropic Messages (a
//! proxy log of requests and responses, a request body) and wrapped chat logs
//! (tau-bench's results file).

#[allow(dead_code)]
mod support;

use loopguard_adapters::anthropic::AnthropicMessages;
use loopguard_adapters::chat_log::ChatLog;
use loopguard_adapters::openhands::{OpenHands, OpenHandsEvalAdapter, OpenHandsEventsAdapter};
use loopguard_adapters::{detect, Context, DiagnosticKind, DocumentAdapter, Format, SourcedEvent};
use loopguard_core::Detector;
use loopguard_events::{EventKind, Payload};
use loopguard_replay::Action;
use support::{adapt_fixture, brief, detect_fixture, fixture, json, kinds, replay_observe, s};

fn ctx(session: &str) -> Context {
    Context {
        session: session.into(),
        agent: None,
    }
}

fn calls(events: &[SourcedEvent]) -> usize {
    events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .count()
}

#[test]
fn each_new_file_is_recognised() {
    for (dir, file, want) in [
        ("openhands", "trajectory.json", Format::OpenHands),
        ("openhands", "output.jsonl", Format::OpenHandsEval),
        ("openhands", "events.jsonl", Format::OpenHandsEvents),
        ("anthropic", "proxy-log.jsonl", Format::Anthropic),
        ("anthropic", "request.json", Format::Anthropic),
        ("chat-log", "tau-bench-results.json", Format::ChatLog),
    ] {
        assert_eq!(detect_fixture(dir, file), Some(want), "{dir}/{file}");
    }
    // A bare Anthropic message line, and a Messages API response.
    assert_eq!(
        detect(
            "x.jsonl",
            br#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}"#
        ),
        Some(Format::Anthropic)
    );
    assert_eq!(
        detect(
            "r.json",
            br#"{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#
        ),
        Some(Format::Anthropic)
    );
    // Chat Completions stays Chat Completions.
    assert_eq!(
        detect(
            "c.json",
            br#"[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[]}]"#
        ),
        Some(Format::ChatCompletions)
    );
}

#[test]
fn openhands_v0_trajectory() {
    let a = adapt_fixture(&OpenHands, "openhands", "trajectory.json", &ctx("s"));
    assert_eq!(calls(&a.events), 15);
    // The first call: the model's own arguments (from model_response), not the action's
    // bookkeeping; the observation's pid and host are left out, the exit code kept.
    assert_eq!(
        brief(&a.events[0]),
        "call 4 run-1 toolu_010000 execute_bash"
    );
    assert_eq!(a.events[0].event.args, json(r#"{"command":"ls tests"}"#));
    assert_eq!(
        a.events[1].event.payload,
        Some(Payload::Result(json(
            r#"{"content":[{"type":"text","text":"test_dates.py\n"}],"details":{"exitCode":0}}"#
        )))
    );
    // The read of str_replace_editor, the condensation (a compaction), and `finish`, which
    // never gets an observation: replayed without an outcome.
    let tail: Vec<String> = a.events[a.events.len() - 4..].iter().map(brief).collect();
    assert_eq!(
        tail,
        [
            "call 30 run-1 toolu_edit str_replace_editor",
            "outcome 31 run-1 toolu_edit str_replace_editor",
            "compaction 32 run-1 - -",
            "call 33 run-1 toolu_fin finish",
        ]
    );
    assert_eq!(
        a.events[a.events.len() - 4].event.args,
        json(r#"{"command":"view","path":"/workspace/src/dates.py"}"#)
    );
    assert_eq!(kinds(&a.diagnostics), [(33, DiagnosticKind::Unanswered)]);
    // Twelve identical failing test runs: a loop from the 11th.
    let decided = replay_observe(&a.events);
    assert!(decided
        .iter()
        .any(|d| d.2 == Action::Warn && d.3 == Some(Detector::GenericRepeat)));
}

#[test]
fn openhands_evaluation_output_is_one_session_per_line() {
    let (events, diagnostics) = support::feed(
        &mut OpenHandsEvalAdapter::new(ctx("output")),
        &fixture("openhands", "output.jsonl"),
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let sessions: Vec<(String, u64)> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .map(|e| (s(&e.event.session), e.line))
        .collect();
    assert_eq!(sessions.len(), 15);
    assert_eq!(sessions[0], ("output/django__django-11099".into(), 1));
    assert_eq!(sessions[14], ("output/sympy__sympy-20590".into(), 2));
}

#[test]
fn openhands_v1_events() {
    let (events, diagnostics) = support::feed(
        &mut OpenHandsEventsAdapter::new(ctx("s")),
        &fixture("openhands", "events.jsonl"),
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(calls(&events), 12);
    // Arguments are the tool call's own, exit code kept.
    assert_eq!(
        events[0].event.args,
        json(r#"{"command":"curl -s localhost:8000/health","security_risk":"LOW"}"#)
    );
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(json(
            r#"{"content":[{"type":"text","text":"curl: (7) Failed to connect to localhost port 8000"}],"details":{"exitCode":7}}"#
        )))
    );
    // The last call is answered by an AgentErrorEvent naming its tool call id.
    let last = events.last().unwrap();
    assert_eq!(brief(last), "outcome 26 run-1 call_11 execute_bash");
    assert_eq!(
        last.event.payload,
        Some(Payload::Error("Tool execution timed out".into()))
    );
}

#[test]
fn anthropic_proxy_log_reads_each_call_once() {
    let a = adapt_fixture(
        &AnthropicMessages,
        "anthropic",
        "proxy-log.jsonl",
        &ctx("s"),
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    // Each request repeats the conversation so far: 3 responses of 2 calls, read once.
    let briefs: Vec<String> = a.events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 1 run-1 toolu_P0 get_weather",
            "outcome 2 run-1 toolu_P0 get_weather",
            "call 1 run-1 toolu_L0 get_weather",
            "outcome 2 run-1 toolu_L0 get_weather",
            "call 2 run-1 toolu_P1 get_weather",
            "outcome 3 run-1 toolu_P1 get_weather",
            "call 2 run-1 toolu_L1 get_weather",
            "outcome 3 run-1 toolu_L1 get_weather",
            "call 3 run-1 toolu_P2 get_weather",
            "outcome 4 run-1 toolu_P2 get_weather",
            "call 3 run-1 toolu_L2 get_weather",
            "outcome 4 run-1 toolu_L2 get_weather",
        ]
    );
    assert_eq!(
        a.events[1].event.payload,
        Some(Payload::Error("error: upstream timeout".into()))
    );
    // Tokens of a response are split between its two calls.
    assert_eq!(a.events[0].tokens, Some(230));
    // The request body alone gives the same calls.
    let r = adapt_fixture(&AnthropicMessages, "anthropic", "request.json", &ctx("s"));
    assert_eq!(calls(&r.events), 6);
}

#[test]
fn tau_bench_records_are_sessions_named_by_task_and_trial() {
    let a = adapt_fixture(
        &ChatLog,
        "chat-log",
        "tau-bench-results.json",
        &ctx("results"),
    );
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let mut sessions: Vec<String> = a.events.iter().map(|e| s(&e.event.session)).collect();
    sessions.dedup();
    assert_eq!(
        sessions,
        ["results/3-trial0", "results/3-trial1", "results/7-trial0"]
    );
    assert_eq!(calls(&a.events), 15);
    assert_eq!(a.events[0].event.args, json(r##"{"order_id":"#W3"}"##));
    // A record without a message list is named.
    let bad = ChatLog
        .adapt(
            br#"[{"task_id":1,"traj":[]},{"id":"x","messages":[{"role":"user","content":"hi"}]}]"#,
            &ctx("r"),
        )
        .unwrap();
    assert_eq!(kinds(&bad.diagnostics), [(1, DiagnosticKind::BadField)]);
}

/// OpenHands V0 writes `exit_code: -1` when it could not read a command's exit status (no PS1
/// metadata): unknown is not a failure, so the outcome is the output alone, without an exit
/// code the strict profile would count as a failure.
#[test]
fn openhands_v0_unknown_exit_status_is_not_a_failure() {
    let mut history = Vec::new();
    for i in 0..2 {
        history.push(format!(
            r#"{{"id":{a},"source":"agent","action":"run","args":{{"command":"ls"}},"tool_call_metadata":{{"function_name":"execute_bash","tool_call_id":"t{i}"}}}}"#,
            a = 2 * i
        ));
        history.push(format!(
            r#"{{"id":{o},"cause":{a},"observation":"run","content":"a b","extras":{{"metadata":{{"exit_code":{code}}}}}}}"#,
            o = 2 * i + 1,
            a = 2 * i,
            code = if i == 0 { "-1" } else { "2" }
        ));
    }
    let doc = format!(r#"{{"history":[{}]}}"#, history.join(","));
    let a = OpenHands.adapt(doc.as_bytes(), &ctx("s")).expect("adapted");
    let outcomes: Vec<_> = a
        .events
        .iter()
        .filter(|e| e.event.kind == EventKind::Outcome)
        .map(|e| e.event.payload.clone())
        .collect();
    assert_eq!(
        outcomes,
        [
            Some(Payload::Result(json(
                r#"{"content":[{"type":"text","text":"a b"}]}"#
            ))),
            Some(Payload::Result(json(
                r#"{"content":[{"type":"text","text":"a b"}],"details":{"exitCode":2}}"#
            ))),
        ]
    );
}
