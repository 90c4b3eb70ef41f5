//! The OpenClaw session JSONL adapter on realistic session files
//! (`tests/fixtures/transcripts/openclaw/`), through to loopguard's decisions.

#[allow(dead_code)]
mod support;

use std::collections::HashSet;

use loopguard_adapters::openclaw::{active_branch_ids, OpenClawAdapter};
use loopguard_adapters::{Context, Diagnostic, DiagnosticKind, LineAdapter, SourcedEvent};
use loopguard_core::{Mode, Value};
use loopguard_events::Action;
use loopguard_events::{EventKind, Payload};
use proptest::prelude::*;
use support::{
    brief, feed, fixture, json, not_quiet, opt_string, quote, replay_decided, text_payload,
};

const DIR: &str = "openclaw";

fn ctx() -> Context {
    Context {
        session: "agent:main:main".into(),
        agent: Some("main".into()),
    }
}

/// A fixture through an OpenClaw adapter, as the reader feeds it (see [`support::feed`]).
fn read(name: &str) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    feed(&mut OpenClawAdapter::new(ctx()), &fixture(DIR, name))
}

/// Every call is followed by its outcome, with the same run, call id, tool and args.
fn assert_paired(events: &[SourcedEvent]) {
    let mut i = 0;
    while i < events.len() {
        let e = &events[i].event;
        match e.kind {
            EventKind::Compaction => i += 1,
            EventKind::Call => {
                let o = &events[i + 1].event;
                assert_eq!(
                    o.kind,
                    EventKind::Outcome,
                    "call at {i} not followed by its outcome"
                );
                assert_eq!((&o.run, &o.call_id, &o.tool), (&e.run, &e.call_id, &e.tool));
                assert_eq!(o.args, e.args);
                assert!(events[i].tokens.is_some() || events[i].tokens.is_none());
                assert_eq!(events[i + 1].tokens, None);
                i += 2;
            }
            EventKind::Outcome => panic!("outcome without its call at {i}"),
        }
    }
}

#[test]
fn read_loop_warns_from_the_eleventh_read_and_blocks_from_the_twenty_first() {
    let (events, diagnostics) = read("read-loop.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(events.len(), 50);
    assert_paired(&events);
    let args = json(r#"{"path":"/home/ana/work/site/ROADMAP.md"}"#);
    let result = text_payload("# Roadmap\n\n- [ ] v0.3: plugin API\n- [ ] v0.4: sync\n");
    for (i, pair) in events.chunks(2).enumerate() {
        let (call, outcome) = (&pair[0], &pair[1]);
        let id = format!("call_rd{i:02}");
        assert_eq!(brief(call), format!("call {} run-1 {id} read", 3 + 2 * i));
        assert_eq!(
            brief(outcome),
            format!("outcome {} run-1 {id} read", 4 + 2 * i)
        );
        assert_eq!(call.event.args, args);
        assert_eq!(
            call.event.session.as_ref().unwrap().as_str(),
            Some("agent:main:main")
        );
        assert_eq!(call.event.agent.as_ref().unwrap().as_str(), Some("main"));
        assert_eq!(call.tokens, Some(12834 + 40 * i as u64));
        assert_eq!(outcome.event.payload.as_ref(), Some(&result));
        // message.timestamp (ms) of the assistant and of the result.
        assert_eq!(call.event.timestamp_ms, 1788622005800 + 1890 * i as u64);
        assert_eq!(outcome.event.timestamp_ms, call.event.timestamp_ms + 90);
    }

    let decisions = replay_decided(&events, Mode::Observe);
    let flagged = not_quiet(&decisions);
    let mut want = Vec::new();
    for n in 11..=25u64 {
        let line = 3 + 2 * (n - 1);
        if n <= 20 {
            want.push((line, Action::Warn, Some("generic_repeat"), Some(n - 1)));
        } else {
            want.push((line, Action::Block, Some("generic_repeat"), Some(n - 1)));
        }
    }
    assert_eq!(flagged, want);
}

#[test]
fn read_loop_in_enforce_mode_ignores_the_outcomes_of_blocked_reads() {
    let (events, _) = read("read-loop.jsonl");
    let decisions = replay_decided(&events, Mode::Enforce);
    // The 21st read is blocked; its outcome (same callId) is absorbed.
    assert_eq!(decisions[40].0, 43);
    assert_eq!(decisions[40].1, Action::Block);
    assert_eq!(decisions[41].1, Action::Ignored);
    assert_eq!(decisions.iter().filter(|d| d.1 == Action::Block).count(), 5);
}

#[test]
fn exec_polling_is_a_known_poll_loop_despite_changing_durations() {
    let (events, diagnostics) = read("exec-poll-loop.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(events.len(), 50);
    assert_paired(&events);
    // `Bash` is OpenClaw's `exec`.
    assert_eq!(brief(&events[0]), "call 3 run-1 call_ex00 exec");
    assert_eq!(
        events[0].event.args,
        json(r#"{"command":"npm run build","background":true}"#)
    );
    assert_eq!(brief(&events[2]), "call 5 run-1 call_pl00 process");
    // The result keeps `details` for the hasher, volatile fields included.
    let Some(Payload::Result(r)) = &events[3].event.payload else {
        panic!("not a result")
    };
    assert_eq!(
        r.get("details").unwrap().get("durationMs"),
        Some(&Value::Number(5000.0))
    );
    assert_eq!(
        r.get("details")
            .unwrap()
            .get("status")
            .and_then(Value::as_str),
        Some("running")
    );

    let flagged = not_quiet(&replay_decided(&events, Mode::Observe));
    assert_eq!(flagged.len(), 14);
    // Poll n (1-based) is on line 5 + 2(n-1); it warns from the 11th poll (10 identical
    // outcomes before it) and blocks from the 21st.
    assert_eq!(
        flagged[0],
        (25, Action::Warn, Some("known_poll_no_progress"), Some(10))
    );
    assert_eq!(
        flagged[10],
        (45, Action::Block, Some("known_poll_no_progress"), Some(20))
    );
    assert_eq!(
        flagged[13],
        (51, Action::Block, Some("known_poll_no_progress"), Some(23))
    );
}

#[test]
fn healthy_session_has_three_runs_and_no_findings() {
    let (events, diagnostics) = read("healthy.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_paired(&events);
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 5 run-1 call_h1 read",
            "outcome 6 run-1 call_h1 read",
            "call 7 run-1 call_h2 exec",
            "outcome 8 run-1 call_h2 exec",
            "call 9 run-1 call_h3 read",
            "outcome 10 run-1 call_h3 read",
            "call 9 run-1 call_h4 read",
            "outcome 11 run-1 call_h4 read",
            "call 12 run-1 call_h5 apply_patch",
            "outcome 13 run-1 call_h5 apply_patch",
            "call 14 run-1 call_h6 exec",
            "outcome 15 run-1 call_h6 exec",
            // line 18: the user's own `!git status` (bashExecution) is not a tool call
            "call 20 run-2 call_h7 exec",
            "outcome 21 run-2 call_h7 exec",
            // line 24: a heartbeat custom_message starts run 3
            "call 25 run-3 call_h8 message",
            "outcome 26 run-3 call_h8 message",
        ]
    );
    // A non-zero exit is not an error: a result with its details.
    let Some(Payload::Result(r)) = &events[3].event.payload else {
        panic!("exit 1 is a result")
    };
    assert_eq!(
        r.get("details").unwrap().get("exitCode"),
        Some(&Value::Number(1.0))
    );
    // A failed read is an error whose message is the result text.
    assert_eq!(
        events[7].event.payload,
        Some(Payload::Error(Value::from(
            r#"{"status":"error","tool":"read","error":"File not found: src/dates.md."}"#
        )))
    );
    // Two calls of one message share its 1061 tokens.
    assert_eq!((events[4].tokens, events[6].tokens), (Some(531), Some(530)));
    assert!(not_quiet(&replay_decided(&events, Mode::Observe)).is_empty());
    assert!(not_quiet(&replay_decided(&events, Mode::Enforce)).is_empty());
}

#[test]
fn crlf_line_endings_and_a_bom_change_nothing() {
    let original = fixture(DIR, "healthy.jsonl");
    let mut crlf = b"\xEF\xBB\xBF".to_vec();
    for line in original.split(|b| *b == b'\n') {
        if !line.is_empty() {
            crlf.extend_from_slice(line);
            crlf.extend_from_slice(b"\r\n");
        }
    }
    let (a, da) = feed(&mut OpenClawAdapter::new(ctx()), &original);
    let (b, db) = feed(&mut OpenClawAdapter::new(ctx()), &crlf);
    assert_eq!(a, b);
    assert_eq!(da, db);
}

#[test]
fn loop_surviving_a_compaction_aborts_the_run() {
    let (events, diagnostics) = read("compaction-loop.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let run = "15fa1919-0000-4b9a-83ac-39b1736ab54a";
    // Every event carries the run id the transcript recorded, the compaction included.
    assert!(events
        .iter()
        .all(|e| opt_string(&e.event.run).as_deref() == Some(run)));
    let compaction = &events[8];
    assert_eq!(compaction.event.kind, EventKind::Compaction);
    assert_eq!(compaction.line, 11);
    assert_eq!(compaction.event.timestamp_ms, 1788632811860); // the entry's ISO timestamp
    assert_eq!(compaction.event.tool, None);
    assert_eq!(events.len(), 15);

    let decisions = replay_decided(&events, Mode::Observe);
    assert_eq!(decisions[8], (11, Action::Armed, None, None));
    assert_eq!(
        not_quiet(&decisions),
        [(
            17,
            Action::Abort,
            Some("compaction_loop_persisted"),
            Some(3)
        )]
    );
}

#[test]
fn version_1_file_without_ids() {
    let (events, diagnostics) = read("v1.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 3 run-1 toolu_01 exec",
            "outcome 4 run-1 toolu_01 exec",
            // the compaction after the turn belongs to the run that just ended
            "compaction 6 run-1 - -",
            // a v1 `hookMessage` starts a run, as a custom_message does
            "call 8 run-2 toolu_02 exec",
            "outcome 9 run-2 toolu_02 exec",
        ]
    );
    // totalTokens 0: input + output.
    assert_eq!(events[0].tokens, Some(320));
    // An empty output is still a result.
    assert_eq!(events[4].event.payload, Some(text_payload("")));
    // No ids: the active branch is the whole file.
    let ids = active_branch_ids(&fixture(DIR, "v1.jsonl")[..]).unwrap();
    assert!(ids.is_empty());
    let (filtered, _) = feed(
        &mut OpenClawAdapter::new(ctx()).with_active_branch(ids),
        &fixture(DIR, "v1.jsonl"),
    );
    assert_eq!(filtered, events);
}

#[test]
fn version_3_run_ids_fallback_run_and_compaction_projection() {
    let (events, diagnostics) = read("v3-run-ids.jsonl");
    let ra = "7c1d2e3f-0000-4a5b-9c8d-1e2f3a4b5c6d";
    let rb = "8d2e3f40-0000-4b6c-8d9e-2f3a4b5c6d7e";
    let rc = "9e3f4051-0000-4c7d-9eaf-3a4b5c6d7e8f";
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            format!("call 3 {ra} call_r1 read"),
            format!("outcome 4 {ra} call_r1 read"),
            // line 5: the send of run A failed with a 429 and never ran
            format!("call 6 {rb} call_r3 message"),
            format!("outcome 7 {rb} call_r3 message"),
            // a compaction right after a new user message belongs to the run that follows
            format!("compaction 10 {rc} - -"),
            format!("call 11 {rc} call_r4 exec"),
            format!("outcome 12 {rc} call_r4 exec"),
            // the gateway's compaction projection, written as a system message
            format!("compaction 13 {rc} - -"),
            format!("call 14 {rc} call_r5 exec"),
            format!("outcome 15 {rc} call_r5 exec"),
        ]
    );
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].line, 5);
    assert_eq!(diagnostics[0].kind, DiagnosticKind::Unanswered);
    assert!(
        diagnostics[0].message.contains("call_r2"),
        "{}",
        diagnostics[0]
    );
    // The send result keeps its details (the send hash strips the message id).
    assert_eq!(
        events[3].event.payload,
        Some(Payload::Result(json(
            r#"{"content":[{"type":"text","text":"Sent."}],"details":{"ok":true,"messageId":5521,"chatId":"@ana"}}"#
        )))
    );
    let decisions = replay_decided(&events, Mode::Observe);
    assert_eq!(decisions[4].1, Action::Armed);
    assert_eq!(decisions[7].1, Action::Armed);
    assert!(not_quiet(&decisions).is_empty());
}

#[test]
fn parallel_calls_pair_by_id_and_share_the_tokens() {
    let (events, diagnostics) = read("parallel.jsonl");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_paired(&events);
    let briefs: Vec<String> = events.iter().map(brief).collect();
    // Results arrive p2, p1, p3: each call is emitted with its result, in result order.
    assert_eq!(
        briefs,
        [
            "call 3 run-1 call_p2 read",
            "outcome 4 run-1 call_p2 read",
            "call 3 run-1 call_p1 read",
            "outcome 5 run-1 call_p1 read",
            "call 3 run-1 call_p3 exec",
            "outcome 6 run-1 call_p3 exec",
        ]
    );
    assert_eq!(events[0].event.args, json(r#"{"path":"config/prod.json"}"#));
    assert_eq!(
        events[1].event.payload,
        Some(text_payload(r#"{"debug":false}"#))
    );
    assert_eq!(events[2].event.args, json(r#"{"path":"config/dev.json"}"#));
    // 1000 tokens over three calls, in block order: 334, 333, 333.
    assert_eq!(
        (events[2].tokens, events[0].tokens, events[4].tokens),
        (Some(334), Some(333), Some(333))
    );
    let total: u64 = events.iter().filter_map(|e| e.tokens).sum();
    assert_eq!(total, 1000);
    // All three calls were made at the assistant message's time.
    assert!(events
        .iter()
        .step_by(2)
        .all(|e| e.event.timestamp_ms == 1788640005800));
}

#[test]
fn aborted_calls_are_reported_and_repeated_ids_pair_with_the_new_call() {
    let (events, diagnostics) = read("aborted.jsonl");
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 5 run-2 functions.read:0 read",
            "outcome 6 run-2 functions.read:0 read",
            "call 7 run-2 functions.exec:1 exec",
            "outcome 8 run-2 functions.exec:1 exec",
        ]
    );
    // The "Aborted" result of a tool killed mid-run is an error.
    assert_eq!(
        events[3].event.payload,
        Some(Payload::Error(Value::from("Aborted")))
    );
    let kinds = support::kinds(&diagnostics);
    assert_eq!(
        kinds,
        [
            (9, DiagnosticKind::Orphan),
            (3, DiagnosticKind::Unanswered),
            (3, DiagnosticKind::Unanswered),
        ]
    );
    assert!(diagnostics[1].message.contains("functions.read:0"));
    assert!(diagnostics[2].message.contains("functions.read:1"));
    assert!(diagnostics.iter().all(|d| !d.kind.is_malformed()));
}

#[test]
fn version_4_entries_and_an_unknown_entry_type() {
    let (events, diagnostics) = read("v4-unknown-entry.jsonl");
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 3 run-1 call_v1 exec",
            "outcome 5 run-1 call_v1 exec",
            "compaction 6 run-1 - -",
        ]
    );
    // v4 entries have epoch-ms timestamps and messages without their own.
    assert_eq!(events[0].event.timestamp_ms, 1788647201000);
    assert_eq!(events[1].event.timestamp_ms, 1788647202000);
    // usage without totalTokens: input + output.
    assert_eq!(events[0].tokens, Some(60));
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].line, 4);
    assert_eq!(diagnostics[0].kind, DiagnosticKind::UnknownEntry);
    assert!(diagnostics[0].message.contains("lane_fork"));
    assert!(diagnostics[0].kind.is_malformed());
}

#[test]
fn truncated_last_line() {
    let bytes = fixture(DIR, "truncated.jsonl");
    assert_ne!(bytes.last(), Some(&b'\n'));
    let (events, diagnostics) = feed(&mut OpenClawAdapter::new(ctx()), &bytes);
    let briefs: Vec<String> = events.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 3 run-1 call_t1 exec",
            "outcome 4 run-1 call_t1 exec",
            // The cut-off result never arrived: the call is replayed without an outcome.
            "call 5 run-1 call_t2 exec"
        ]
    );
    let kinds = support::kinds(&diagnostics);
    assert_eq!(
        kinds,
        [
            (6, DiagnosticKind::Truncated),
            (5, DiagnosticKind::Unanswered)
        ]
    );
}

#[test]
fn active_branch_drops_the_abandoned_path() {
    let bytes = fixture(DIR, "branched.jsonl");
    let (all, diagnostics) = feed(&mut OpenClawAdapter::new(ctx()), &bytes);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let briefs: Vec<String> = all.iter().map(brief).collect();
    assert_eq!(
        briefs,
        [
            "call 3 run-1 call_b1 exec",
            "outcome 4 run-1 call_b1 exec",
            "call 8 run-2 call_b2 exec",
            "outcome 9 run-2 call_b2 exec",
        ]
    );

    let ids = active_branch_ids(&bytes[..]).unwrap();
    let want: HashSet<String> = [
        "9593e66f", "3a8092e9", "289bc393", "20cea1f1", "fa8ea407", "c110e062",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(ids, want);
    let (active, diagnostics) = feed(
        &mut OpenClawAdapter::new(ctx()).with_active_branch(ids),
        &bytes,
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let briefs: Vec<String> = active.iter().map(brief).collect();
    assert_eq!(
        briefs,
        ["call 8 run-2 call_b2 exec", "outcome 9 run-2 call_b2 exec"]
    );
}

#[test]
fn events_survive_the_event_stream_format() {
    // What `loopguard convert` would write reads back as the same events.
    for name in ["healthy.jsonl", "v3-run-ids.jsonl", "compaction-loop.jsonl"] {
        let (events, _) = read(name);
        for e in &events {
            let mut line = Vec::new();
            e.event.write_json(&mut line);
            let mut back = loopguard_events::parse_event(line.trim_ascii_end(), e.line)
                .unwrap()
                .into_owned();
            if back.kind == EventKind::Compaction {
                // A compaction has no args: `Builder` holds null, the parser's default is {}.
                back.args = e.event.args.clone();
            }
            assert_eq!(back, e.event, "{name} line {}", e.line);
        }
    }
}

// ---- never panics ------------------------------------------------------------------

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("read".to_string()),
        Just("Bash".to_string()),
        Just("process".to_string()),
        Just(" APPLY-PATCH ".to_string()),
        "[a-zA-Z_ -]{0,8}",
    ]
}

fn id_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("c1".to_string()),
        Just("c2".to_string()),
        Just("functions.read:0".to_string()),
        Just(String::new()),
    ]
}

/// Lines shaped like session entries, with random and missing fields.
fn entry_strategy() -> impl Strategy<Value = Vec<u8>> {
    let assistant = (
        prop::collection::vec((id_strategy(), name_strategy(), any::<bool>()), 0..4),
        prop_oneof![Just("toolUse"), Just("stop"), Just("error"), Just("aborted")],
        prop::option::of("[a-z0-9-]{0,6}"),
        prop::option::of(0u32..100_000),
    )
        .prop_map(|(calls, stop, run, tokens)| {
            let blocks: Vec<String> = calls
                .iter()
                .map(|(id, name, with_args)| {
                    let args = if *with_args { r#","arguments":{"path":"/a"}"# } else { "" };
                    format!(r#"{{"type":"toolCall","id":{},"name":{}{args}}}"#, quote(id), quote(name))
                })
                .collect();
            let meta = run.map_or_else(String::new, |r| format!(r#","__openclaw":{{"runId":{}}}"#, quote(&r)));
            let usage = tokens.map_or_else(String::new, |t| format!(r#","usage":{{"totalTokens":{t}}}"#));
            format!(
                r#"{{"type":"message","id":"x","parentId":null,"message":{{"role":"assistant","content":[{}],"stopReason":"{stop}"{meta}{usage},"timestamp":1788622018101}}}}"#,
                blocks.join(",")
            )
            .into_bytes()
        });
    let result = (id_strategy(), any::<bool>(), any::<bool>()).prop_map(|(id, err, details)| {
        let details = if details { r#","details":{"status":"running"}"# } else { "" };
        format!(
            r#"{{"type":"message","message":{{"role":"toolResult","toolCallId":{},"toolName":"read","content":[{{"type":"text","text":"x"}}]{details},"isError":{err}}}}}"#,
            quote(&id)
        )
        .into_bytes()
    });
    prop_oneof![
        assistant,
        result,
        Just(br#"{"type":"message","message":{"role":"user","content":"go"}}"#.to_vec()),
        Just(br#"{"type":"compaction","timestamp":"2026-09-05T15:33:59.909Z","summary":"s"}"#.to_vec()),
        Just(br#"{"type":"custom_message","customType":"openclaw.heartbeat","content":"x"}"#.to_vec()),
        Just(br#"{"role":"system","__openclaw":{"kind":"compaction"}}"#.to_vec()),
        Just(br#"{"type":"session","version":9}"#.to_vec()),
        Just(br#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":7}]}}"#.to_vec()),
        Just(br#"{"type":7}"#.to_vec()),
        Just(b"[1,2]".to_vec()),
        prop::collection::vec(any::<u8>(), 0..64),
        "\\PC{0,40}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_lines_never_panic(lines in prop::collection::vec(entry_strategy(), 0..40)) {
        let mut adapter = OpenClawAdapter::new(ctx());
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let before = out.len();
            if let Err(d) = adapter.line(i as u64 + 1, line, &mut out) {
                prop_assert_eq!(d.line, i as u64 + 1);
                // A line that cannot be used changes nothing.
                prop_assert_eq!(out.len(), before);
            }
            seen.push(i as u64 + 1);
        }
        let diagnostics = adapter.finish(&mut out);
        for d in &diagnostics {
            prop_assert!(seen.contains(&d.line));
            prop_assert_eq!(d.kind, DiagnosticKind::Unanswered);
        }
        // An outcome follows its call; a call without one is unanswered (replayed
        // alone); tool names are normalised.
        let unanswered = diagnostics.len();
        let mut alone = 0;
        let mut i = 0;
        while i < out.len() {
            match out[i].event.kind {
                EventKind::Compaction => i += 1,
                EventKind::Call => {
                    let tool = out[i].event.tool.as_ref().unwrap().to_string();
                    prop_assert_eq!(&tool, &tool.trim().to_lowercase());
                    prop_assert!(tool != "bash" && tool != "apply-patch");
                    if out.get(i + 1).map(|e| e.event.kind) == Some(EventKind::Outcome) {
                        i += 2;
                    } else {
                        alone += 1;
                        i += 1;
                    }
                }
                EventKind::Outcome => prop_assert!(false, "outcome without a call"),
            }
        }
        prop_assert!(alone <= unanswered);
    }

    #[test]
    fn random_bytes_never_panic(lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..20)) {
        let mut adapter = OpenClawAdapter::new(ctx());
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let _ = adapter.line(i as u64 + 1, line, &mut out);
        }
        adapter.finish(&mut out);
        let joined = lines.join(&b'\n');
        let _ = active_branch_ids(&joined[..]).unwrap();
    }
}
