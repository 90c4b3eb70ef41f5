//! The Codex CLI rollout adapter on the fixtures in `tests/fixtures/transcripts/codex/`.

use std::path::PathBuf;

use loopguard_adapters::common::text_result;
use loopguard_adapters::responses::CodexRolloutAdapter;
use loopguard_adapters::{
    detect, Context, Diagnostic, DiagnosticKind, Format, LineAdapter, SourcedEvent,
};
use loopguard_core::config::OpenClawConfig;
use loopguard_core::{Detector, Mode, Value};
use loopguard_replay::event::{EventKind, Payload};
use loopguard_replay::{Action, Replayer};
use proptest::prelude::*;

const NAMES: [&str; 4] = ["loop", "healthy", "compaction", "traps"];

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/transcripts/codex")
        .join(format!("rollout-2026-09-05T15-26-13-{name}.jsonl"))
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(path(name)).unwrap()
}

/// Feeds a file line by line as the reader does: a last line without a newline that is
/// not JSON is `Truncated`.
fn feed(bytes: &[u8]) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    let mut adapter = CodexRolloutAdapter::new(Context {
        session: "0199a4c2".into(),
        agent: None,
    });
    let mut events = Vec::new();
    let mut diagnostics = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Err(mut d) = adapter.line(i as u64 + 1, line, &mut events) {
            if i + 1 == lines.len() && d.kind == DiagnosticKind::NotJson {
                d.kind = DiagnosticKind::Truncated;
            }
            diagnostics.push(d);
        }
    }
    diagnostics.extend(adapter.finish(&mut events));
    (events, diagnostics)
}

/// Replays events in observe mode with detection on: `(line, kind, decision, detector)`.
fn replay(events: &[SourcedEvent]) -> Vec<(u64, EventKind, Action, Option<Detector>)> {
    let cfg = OpenClawConfig::from_json5("{tools:{loopDetection:{enabled:true}}}")
        .unwrap()
        .config;
    let mut r = Replayer::new(cfg, Mode::Observe);
    events
        .iter()
        .map(|e| {
            let d = r.process(&e.event, e.line);
            (
                e.line,
                e.event.kind,
                d.action,
                d.finding.as_ref().map(|f| f.detector),
            )
        })
        .collect()
}

fn s(v: &Option<loopguard_core::JsString<'static>>) -> String {
    v.as_ref().map(|s| s.to_string()).unwrap_or_default()
}

fn kinds(d: &[Diagnostic]) -> Vec<(u64, DiagnosticKind)> {
    d.iter().map(|d| (d.line, d.kind)).collect()
}

#[test]
fn every_fixture_is_detected_as_a_codex_rollout() {
    for name in NAMES {
        assert_eq!(
            detect(&path(name).to_string_lossy(), &fixture(name)),
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
        assert_eq!(s(&call.event.tool), "shell");
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
    let decisions = replay(&events);
    let calls: Vec<_> = decisions
        .iter()
        .filter(|d| d.1 == EventKind::Call)
        .collect();
    for (i, d) in calls.iter().enumerate() {
        let (want, detector) = match i + 1 {
            1..=10 => (Action::Allow, None),
            11..=20 => (Action::Warn, Some(Detector::GenericRepeat)),
            _ => (Action::Block, Some(Detector::GenericRepeat)),
        };
        assert_eq!((d.2, d.3), (want, detector), "call {}", i + 1);
    }
    assert_eq!(calls[10].0, 46);
    assert_eq!(calls[20].0, 86);
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
        (6, "shell", "run-1"),
        (8, "shell", "run-1"),
        (9, "apply_patch", "run-1"),
        (10, "apply_patch", "run-1"),
        (12, "update_plan", "run-1"),
        (14, "update_plan", "run-1"),
        (19, "shell", "run-2"),
        (21, "shell", "run-2"),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(l, t, r)| (*l, t.to_string(), r.to_string()))
        .collect();
    assert_eq!(summary, want);
    // A custom tool's raw input is the `input` argument.
    let input = "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-    let app = Router::new()\n+    let app = Router::new().route(\"/health\", get(|| async { \"ok\" }))\n*** End Patch\n";
    assert_eq!(events[2].event.args.get("input"), Some(&Value::from(input)));
    assert!(replay(&events)
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
    let decisions = replay(&events);
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
            (6, Value::from("{\"command\":[\"cat\",\"config/prod.toml\"")),
            (
                5,
                Value::parse(br#"{"command":["cat","config/dev.toml"]}"#).unwrap()
            ),
        ]
    );
    // Content-item output.
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(text_result(
            "[db]\nurl = \"postgres://prod\"\n"
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
    let words = prop::sample::select(vec![
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
    ]);
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        (-5.0e3f64..5.0e12).prop_map(|n| n.to_string()),
        words.prop_map(|w| format!("{w:?}")),
    ];
    leaf.prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                let body: Vec<String> = kv.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random lines never make the adapter panic.
    #[test]
    fn random_lines_never_panic(
        lines in prop::collection::vec(
            prop_oneof![json_text().prop_map(String::into_bytes), prop::collection::vec(any::<u8>(), 0..64)],
            0..24,
        )
    ) {
        let mut bytes = Vec::new();
        for l in &lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        let (events, _) = feed(&bytes);
        for e in &events {
            prop_assert!(e.event.kind == EventKind::Compaction || e.event.tool.is_some());
        }
    }

    /// Any fixture, cut anywhere, never makes the adapter panic.
    #[test]
    fn cut_fixtures_never_panic(cut in 0usize..12000, pick in 0usize..4) {
        let bytes = fixture(NAMES[pick]);
        let cut = cut.min(bytes.len());
        let _ = feed(&bytes[..cut]);
    }
}
