//! The coding agents' own session logs (docs/transcripts.md): Gemini CLI's chat records
//! (and the older chat files), Qwen Code's chat records, Copilot CLI's session events,
//! Factory Droid's sessions, a Codex 0.171 rollout and a Claude Code 2.1.197 transcript.
//!
//! Each `guarded-loop` fixture was written by the real CLI (Gemini CLI 0.61.0, Qwen Code
//! 0.24.4, Copilot CLI 1.0.102, Droid 0.225.2, Codex 0.171.0) in the standard loop of
//! `crates/loopguard/tests/agent_logs.rs`: a scripted model asks 25 times for the same
//! failing shell command while `loopguard hook AGENT` guards the agent, which warned with
//! the result of call 11 and refused calls 21 to 25. The older Gemini chat file
//! (`gemini-json/session-guarded-loop.json`) holds the same messages in the one-document
//! shape older Gemini CLI versions wrote (`{sessionId, projectHash, startTime,
//! lastUpdated, messages}`), each message in its last written form.
//!
//! Replayed with the profile each event names (`claude-code`, as the hooks judge the
//! agents' tools), every one decides as the hook did live: allowed to 10, warned from 11,
//! blocked from 21, the refused calls read as refusals (blocks that stay blocks) rather
//! than as new outcomes.

#[allow(dead_code)]
mod support;

use loopguard_adapters::{
    claude_code::ClaudeCodeAdapter, copilot_session::CopilotSessionAdapter,
    factory::FactoryAdapter, gemini_chat::GeminiChatAdapter, gemini_chat::GeminiChatFile,
    qwen::QwenAdapter, responses::CodexRolloutAdapter, Context, Diagnostic, DocumentAdapter,
    Format, LineAdapter, SourcedEvent,
};
use loopguard_events::{EventKind, Payload};
use loopguard_guard::ToolProfile;
use loopguard_replay::Action;
use support::{detect_fixture, feed, fixture, repeat_decision, replay_observe_by_source};

fn ctx() -> Context {
    Context {
        session: "s".into(),
        agent: None,
    }
}

/// The decisions on the calls of `events`, replayed as `loopguard replay` does.
fn call_decisions(events: &[SourcedEvent]) -> Vec<(Action, Option<loopguard_core::Detector>)> {
    replay_observe_by_source(events, ToolProfile::Plain)
        .into_iter()
        .filter(|d| d.1 == EventKind::Call)
        .map(|d| (d.2, d.3))
        .collect()
}

/// The decisions on the calls of `events`, every event through `profile`.
fn call_decisions_as(
    events: &[SourcedEvent],
    profile: ToolProfile,
) -> Vec<(Action, Option<loopguard_core::Detector>)> {
    replay_observe_by_source(events, profile)
        .into_iter()
        .filter(|d| d.1 == EventKind::Call)
        .map(|d| (d.2, d.3))
        .collect()
}

/// The standard guarded loop: 25 calls of one shell command, each with its outcome, the
/// last five refused live; replay warns from 11 and blocks from 21, as the hook did.
fn assert_guarded_loop(name: &str, events: &[SourcedEvent], diags: &[Diagnostic], tool: &str) {
    assert!(diags.is_empty(), "{name}: {diags:?}");
    let calls: Vec<&SourcedEvent> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .collect();
    assert_eq!(calls.len(), 25, "{name}");
    assert_eq!(events.len(), 50, "{name}: a call and its outcome each");
    for c in &calls {
        assert_eq!(c.profile, Some("claude-code"), "{name}");
        assert_eq!(
            c.event.tool.as_ref().map(|t| t.to_string()),
            Some(tool.into())
        );
    }
    // The refused calls' outcomes are OpenClaw's loop veto.
    let refused = events
        .iter()
        .filter(|e| match &e.event.payload {
            Some(Payload::Result(v)) => {
                v.get("details")
                    .and_then(|d| d.get("deniedReason"))
                    .and_then(|r| r.as_str())
                    == Some("tool-loop")
            }
            _ => false,
        })
        .count();
    assert_eq!(refused, 5, "{name}");
    let decided = call_decisions(events);
    for (i, d) in decided.iter().enumerate() {
        assert_eq!(*d, repeat_decision(i + 1), "{name}: call {}", i + 1);
    }
}

fn line_fixture(
    adapter: &mut dyn LineAdapter,
    dir: &str,
    file: &str,
) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    feed(adapter, &fixture(dir, file))
}

#[test]
fn gemini_chat_records_replay_as_decided_live() {
    assert_eq!(
        detect_fixture("gemini", "guarded-loop.jsonl"),
        Some(Format::Gemini)
    );
    let (events, diags) = line_fixture(
        &mut GeminiChatAdapter::new(ctx()),
        "gemini",
        "guarded-loop.jsonl",
    );
    assert_guarded_loop("gemini", &events, &diags, "Bash");
    // The rewording model's `description` is not hashed, nor Gemini's process group id.
    assert!(events[0].event.args.get("description").is_none());
    // The message that made each call: 15 tokens (`tokens.total`).
    assert_eq!(events[0].tokens, Some(15));
}

#[test]
fn older_gemini_chat_files_replay_the_same() {
    assert_eq!(
        detect_fixture("gemini-json", "session-guarded-loop.json"),
        Some(Format::GeminiJson)
    );
    let adapted = GeminiChatFile
        .adapt(&fixture("gemini-json", "session-guarded-loop.json"), &ctx())
        .unwrap();
    assert_guarded_loop("gemini-json", &adapted.events, &adapted.diagnostics, "Bash");
}

#[test]
fn qwen_chat_records_replay_as_decided_live() {
    assert_eq!(
        detect_fixture("qwen", "guarded-loop.jsonl"),
        Some(Format::Qwen)
    );
    let (events, diags) = line_fixture(&mut QwenAdapter::new(ctx()), "qwen", "guarded-loop.jsonl");
    assert_guarded_loop("qwen", &events, &diags, "Bash");
    // Qwen Code reports a failing command as a failure; loopguard's warning, appended to
    // the 11th, is not part of it.
    let errors: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event.payload {
            Some(Payload::Error(v)) => Some(v.as_str().unwrap_or_default().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 20);
    assert!(errors.iter().all(|e| e == &errors[0]), "{errors:#?}");
    assert!(errors[0].starts_with("Exit code 1\n"), "{}", errors[0]);
}

#[test]
fn copilot_session_events_replay_as_decided_live() {
    assert_eq!(
        detect_fixture("copilot", "guarded-loop.events.jsonl"),
        Some(Format::Copilot)
    );
    let (events, diags) = line_fixture(
        &mut CopilotSessionAdapter::new(ctx()),
        "copilot",
        "guarded-loop.events.jsonl",
    );
    assert_guarded_loop("copilot", &events, &diags, "Bash");
    // `<shellId: N completed with exit code 1>`: the id dropped, the exit code kept.
    let Some(Payload::Result(first)) = &events[1].event.payload else {
        panic!("{:?}", events[1]);
    };
    assert_eq!(first.get("exitCode").and_then(|c| c.as_f64()), Some(1.0));
}

#[test]
fn factory_sessions_replay_as_decided_live() {
    assert_eq!(
        detect_fixture("factory", "guarded-loop.jsonl"),
        Some(Format::Factory)
    );
    let (events, diags) = line_fixture(
        &mut FactoryAdapter::new(ctx()),
        "factory",
        "guarded-loop.jsonl",
    );
    assert_guarded_loop("factory", &events, &diags, "Bash");
    assert!(events[0].event.args.get("summary").is_none());
}

/// Codex 0.171's unified exec output starts with a chunk id and a wall time that change
/// on every run, and the calls its hook refused read `Command blocked by PreToolUse hook:
/// CRITICAL: …`: without both, every outcome looked new and no call was blocked.
///
/// The calls are read with Codex's row of the tool table, as `loopguard hook codex` reads
/// them: `exec_command {cmd}` is `Bash {command}` (what Codex's hook payload holds as
/// `tool_input`), and its output is the command's output alone (the hook's
/// `tool_response` is `"FAIL\n"`, without Codex's header), so a call and its outcome get
/// the same digests live and in replay.
#[test]
fn codex_0_171_rollouts_replay_as_decided_live() {
    let file = "rollout-0.171-guarded-loop.jsonl";
    assert_eq!(detect_fixture("codex", file), Some(Format::CodexRollout));
    let (events, diags) = line_fixture(&mut CodexRolloutAdapter::new(ctx()), "codex", file);
    assert_guarded_loop("codex", &events, &diags, "Bash");
    let codex = loopguard_guard::profile::agents::tools_of("codex");
    let hook_input = loopguard_core::Value::parse(
        br#"{"command":"echo run >> /tmp/.tmpDizi9Y/runs.txt; echo FAIL; exit 1"}"#,
    )
    .unwrap();
    let (tool, args) = codex.map_call("Bash", &hook_input);
    assert_eq!(
        events[0].event.tool.as_ref().map(|t| t.to_string()),
        Some(tool.clone())
    );
    assert_eq!(events[0].event.args, args);
    let hook_response = codex.map_result(&tool, &loopguard_core::Value::from("FAIL\n"));
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(hook_response))
    );
}

/// Claude Code 2.1.197 records the calls its hook denied as `tool_result` blocks with
/// `is_error: true` and loopguard's message as their text: refusals, so calls 21 to 26 are
/// all blocked (count 20) instead of the first alone.
#[test]
fn claude_code_transcripts_keep_the_hooks_refusals() {
    let (events, diags) = line_fixture(
        &mut ClaudeCodeAdapter::new(ctx()),
        "claude-code",
        "guarded-loop.jsonl",
    );
    assert!(diags.is_empty(), "{diags:?}");
    let decided = call_decisions_as(&events, ToolProfile::ClaudeCode);
    assert_eq!(decided.len(), 26);
    for (i, d) in decided.iter().enumerate() {
        assert_eq!(*d, repeat_decision(i + 1), "call {}", i + 1);
    }
}

/// opencode 1.18.33 keeps its sessions in an SQLite database (`opencode.db`), recognised by
/// its `session`, `message` and `part` tables. The fixture is the database the real
/// opencode wrote, unguarded, while a scripted model asked 25 times for the same failing
/// `bash` command (every call ran): replayed as the opencode plugin's guard decides (tools
/// as given), it warns from call 11 and blocks from 21.
#[test]
fn opencode_databases_are_read_part_by_part() {
    use loopguard_adapters::reader::{self, Flow, Item, ReadOptions, Source};
    let path = support::fixture_path("opencode", "loop-1.18.33.db");
    let mut source = Source::open(&path).unwrap();
    assert!(matches!(
        source.detect().unwrap(),
        reader::Detected::Format(Format::Opencode)
    ));
    let mut events = Vec::new();
    let mut diags = Vec::new();
    let ctx = Context {
        session: "loop".into(),
        agent: None,
    };
    reader::read_file(
        &path,
        Format::Opencode,
        &ctx,
        &ReadOptions::default(),
        &mut |i| {
            match i {
                Item::Event(e) => events.push(e),
                Item::Diagnostic(d) => diags.push(d),
            }
            Flow::Continue
        },
    )
    .unwrap();
    assert!(diags.is_empty(), "{diags:?}");
    // An independent count: the tool parts in the database.
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let parts: i64 = conn
        .query_row(
            "SELECT count(*) FROM part WHERE json_extract(data, '$.type') = 'tool'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(parts, 25);
    assert_eq!(events.len(), 50);
    let session = events[0].event.session.as_ref().map(|s| s.to_string());
    assert!(
        session.as_deref().unwrap_or("").starts_with("loop/ses_"),
        "{session:?}"
    );
    let call = &events[0];
    assert_eq!(
        call.event.tool.as_ref().map(|t| t.to_string()).as_deref(),
        Some("bash")
    );
    assert_eq!(
        call.event.args,
        loopguard_core::Value::parse(
            br#"{"command":"echo FAIL; exit 1","description":"Repeat the command"}"#
        )
        .unwrap()
    );
    assert_eq!(call.tokens, Some(15));
    // The result as the plugin hands it to the guard.
    assert_eq!(
        events[1].event.payload,
        Some(Payload::Result(loopguard_adapters::common::text_result(
            "FAIL\n"
        )))
    );
    let decided = call_decisions(&events);
    assert_eq!(decided.len(), 25);
    for (i, d) in decided.iter().enumerate() {
        assert_eq!(*d, repeat_decision(i + 1), "call {}", i + 1);
    }
    // An OpenClaw store is still an OpenClaw store.
    let mut other = Source::open(&support::fixture_path("openclaw", "healthy.jsonl")).unwrap();
    assert!(!matches!(
        other.detect().unwrap(),
        reader::Detected::Format(Format::Opencode)
    ));
}

/// Cline's task histories, as real users committed them (tests/fixtures/transcripts/cline/
/// README.md), are recognised from their content and read completely: every `tool_use` a
/// call, each paired with the result text that follows (Cline writes no ids on them), the
/// calls Cline refused to run (`Tool [read_file] was not executed…`) failures, and a
/// `[TASK RESUMPTION]` a new run of the same session.
#[test]
fn cline_task_histories_are_read_completely() {
    use loopguard_adapters::cline::ClineHistory;
    for (file, calls, unanswered, runs) in [
        (
            "card-architecture-1769064454592.api_conversation_history.json",
            9,
            0,
            1,
        ),
        ("marine-response.api_conversation_history.json", 17, 2, 3),
    ] {
        assert_eq!(detect_fixture("cline", file), Some(Format::Cline), "{file}");
        let doc = fixture("cline", file);
        // An independent count: the `tool_use` blocks of the file.
        let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        let uses = v
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_use")
            .count();
        assert_eq!(uses, calls, "{file}");
        let adapted = ClineHistory.adapt(&doc, &ctx()).unwrap();
        let read: Vec<&SourcedEvent> = adapted
            .events
            .iter()
            .filter(|e| e.event.kind == EventKind::Call)
            .collect();
        assert_eq!(read.len(), calls, "{file}");
        assert!(read.iter().all(|c| c.profile == Some("claude-code")));
        let kinds: Vec<_> = adapted.diagnostics.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            vec![loopguard_adapters::DiagnosticKind::Unanswered; unanswered],
            "{file}: {:?}",
            adapted.diagnostics
        );
        let mut seen: Vec<String> = read
            .iter()
            .filter_map(|c| c.event.run.as_ref().map(|r| r.to_string()))
            .collect();
        seen.dedup();
        assert_eq!(seen.len(), runs, "{file}: {seen:?}");
    }
    // The three calls Cline did not run are failures with its words.
    let adapted = ClineHistory
        .adapt(
            &fixture(
                "cline",
                "card-architecture-1769064454592.api_conversation_history.json",
            ),
            &ctx(),
        )
        .unwrap();
    let refused = adapted
        .events
        .iter()
        .filter(|e| matches!(&e.event.payload, Some(Payload::Error(t)) if t.as_str().is_some_and(|t| t.contains("was not executed"))))
        .count();
    assert_eq!(refused, 3);
}

/// A resumed session is one session. Codex 0.171 (`codex exec resume --last`) and Gemini
/// CLI 0.61 (`gemini --resume latest`) both go on writing the file of the session they
/// resume: Codex appends the new turn; Gemini appends a second header and `$set` records
/// repeating the conversation so far, whose calls are not read twice. Each fixture: two
/// calls of a failing command, then the session resumed with a new prompt and more calls,
/// written by the real CLI against a scripted model.
#[test]
fn resumed_codex_and_gemini_sessions_are_one_session() {
    let (codex, diags) = line_fixture(
        &mut CodexRolloutAdapter::new(ctx()),
        "codex",
        "rollout-0.171-resumed.jsonl",
    );
    assert!(diags.is_empty(), "{diags:?}");
    let (gemini, gdiags) = line_fixture(
        &mut GeminiChatAdapter::new(ctx()),
        "gemini",
        "resumed.jsonl",
    );
    assert!(gdiags.is_empty(), "{gdiags:?}");
    for (name, events, before, after) in [("codex", &codex, 2, 2), ("gemini", &gemini, 2, 4)] {
        let runs: Vec<String> = events
            .iter()
            .filter(|e| e.event.kind == EventKind::Call)
            .map(|e| e.event.run.as_ref().unwrap().to_string())
            .collect();
        let mut want = vec!["run-1".to_string(); before];
        want.extend(vec!["run-2".to_string(); after]);
        assert_eq!(runs, want, "{name}");
        // Every call has its outcome.
        assert_eq!(events.len(), 2 * (before + after), "{name}");
    }
}

/// A chat file the real Gemini CLI 0.20.0 wrote (`session-*.json`, one document), against a
/// scripted model asking three times for `echo FAIL`: that version refused each command
/// here (`Command rejected because it could not be parsed safely`, its shell parser not
/// loading offline), so the file holds three calls with their failures, all read. (The
/// guarded-loop file beside it is the current CLI's messages in the older shape.)
#[test]
fn a_gemini_0_20_chat_file_is_read_completely() {
    let file = "session-0.20.0-rejected.json";
    assert_eq!(
        detect_fixture("gemini-json", file),
        Some(Format::GeminiJson)
    );
    let adapted = GeminiChatFile
        .adapt(&fixture("gemini-json", file), &ctx())
        .unwrap();
    assert!(adapted.diagnostics.is_empty(), "{:?}", adapted.diagnostics);
    let doc: serde_json::Value = serde_json::from_slice(&fixture("gemini-json", file)).unwrap();
    let calls = doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["toolCalls"].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    assert_eq!(calls, 3);
    assert_eq!(adapted.events.len(), 2 * calls);
    for pair in adapted.events.chunks(2) {
        assert_eq!(pair[0].event.kind, EventKind::Call);
        assert_eq!(
            pair[0]
                .event
                .tool
                .as_ref()
                .map(|t| t.to_string())
                .as_deref(),
            Some("Bash")
        );
        assert!(
            matches!(&pair[1].event.payload, Some(Payload::Error(e)) if e.as_str().is_some_and(|t| t.contains("could not be parsed safely"))),
            "{:?}",
            pair[1].event.payload
        );
    }
}

/// Everything `path` gives read as `format`: events and diagnostics.
fn read_all(
    path: &std::path::Path,
    format: Format,
    session: &str,
) -> (Vec<SourcedEvent>, Vec<Diagnostic>) {
    use loopguard_adapters::reader::{self, Flow, Item, ReadOptions};
    let mut events = Vec::new();
    let mut diags = Vec::new();
    let ctx = Context {
        session: session.into(),
        agent: None,
    };
    reader::read_file(path, format, &ctx, &ReadOptions::default(), &mut |i| {
        match i {
            Item::Event(e) => events.push(e),
            Item::Diagnostic(d) => diags.push(d),
        }
        Flow::Continue
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (events, diags)
}

/// opencode before its SQLite database kept the same session, message and part objects as
/// JSON files (`storage/session/<project>/<id>.json`, `storage/message/<session>/<id>.json`,
/// `storage/part/<message>/<id>.json`). The fixture holds the rows of `loop-1.18.33.db`
/// laid out that way (tests/fixtures/transcripts/opencode/README.md): the session file is
/// recognised from its content and replays event for event as the database does.
#[test]
fn opencode_json_storage_reads_as_the_database_does() {
    use loopguard_adapters::reader::{Detected, Source};
    let storage = support::fixture_path("opencode", "storage-1.18.33/storage");
    let session = storage.join("session/global/ses_dadd4052dffe6VdGBbLM7oq61e.json");
    assert_eq!(
        Source::open(&session).unwrap().detect().unwrap(),
        Detected::Format(Format::OpencodeStorage)
    );
    // A message or a part alone is not a session.
    let message =
        storage.join("message/ses_dadd4052dffe6VdGBbLM7oq61e/msg_2522c053c001aGb2INR4bl0jEh.json");
    assert_ne!(
        Source::open(&message).unwrap().detect().unwrap(),
        Detected::Format(Format::OpencodeStorage)
    );
    let (from_files, diags) = read_all(&session, Format::OpencodeStorage, "");
    assert!(diags.is_empty(), "{diags:?}");
    let db = support::fixture_path("opencode", "loop-1.18.33.db");
    let (from_db, diags) = read_all(&db, Format::Opencode, "");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(from_files.len(), 50);
    assert_eq!(from_files, from_db);
    let decided = call_decisions(&from_files);
    assert_eq!(decided.len(), 25);
    for (i, d) in decided.iter().enumerate() {
        assert_eq!(*d, repeat_decision(i + 1), "call {}", i + 1);
    }
}

/// A broken part or message file is a diagnostic naming it, the rest of the session is
/// read; a session file outside the storage layout is an error saying why.
#[test]
fn opencode_json_storage_names_the_files_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    let write = |rel: &str, text: &str| {
        let p = storage.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "session/prj/ses_1.json",
        r#"{"id":"ses_1","projectID":"prj","title":"t","time":{"created":1,"updated":2}}"#,
    );
    write(
        "message/ses_1/msg_1.json",
        r#"{"id":"msg_1","sessionID":"ses_1","role":"assistant","time":{"created":5},"tokens":{"total":8}}"#,
    );
    write("message/ses_1/msg_2.json", r#"{"role":"assistant""#);
    write(
        "part/msg_1/prt_1.json",
        r#"{"id":"prt_1","type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a\n"}}"#,
    );
    write("part/msg_1/prt_2.json", "[1]");
    write("part/msg_1/prt_3.json", r#"{"id":"prt_3","type":"tool"}"#);
    let session = storage.join("session/prj/ses_1.json");
    let (events, diags) = read_all(&session, Format::OpencodeStorage, "");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].tokens, Some(8));
    let messages: Vec<_> = diags.iter().map(|d| d.to_string()).collect();
    assert_eq!(diags.len(), 3, "{messages:?}");
    assert!(
        messages.iter().any(|m| m.contains("msg_2.json")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("prt_2.json") && m.contains("not a JSON object")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("prt_3.json") && m.contains("without `tool`")),
        "{messages:?}"
    );
    // The same session file elsewhere: its messages cannot be found, and it says so.
    let alone = dir.path().join("ses_1.json");
    std::fs::copy(&session, &alone).unwrap();
    let err = loopguard_adapters::reader::read_file(
        &alone,
        Format::OpencodeStorage,
        &Context::default(),
        &loopguard_adapters::reader::ReadOptions::default(),
        &mut |_| loopguard_adapters::reader::Flow::Continue,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("ses_1.json") && err.contains("messages cannot be found"),
        "{err}"
    );
}

/// A Cline task folder holding both files: the history gives the calls, the panel log's
/// `api_req_started` records their tokens and cost (request `n` answered by assistant
/// message `n`), so replay's budgets see what the task spent. The panel log alone is
/// refused with an error that says which file to replay.
#[test]
fn cline_panel_log_gives_the_calls_their_usage() {
    use loopguard_adapters::reader::{Detected, ReadError, Source};
    let dir = support::fixture_path("cline", "task-with-panel");
    let history = dir.join("api_conversation_history.json");
    let panel = dir.join("ui_messages.json");
    let (events, diags) = read_all(&history, Format::Cline, "task");
    assert!(diags.is_empty(), "{diags:?}");
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e.event.kind == EventKind::Call)
        .collect();
    assert_eq!(calls.len(), 12);
    // An independent count from the panel log: every request's figures, in order.
    let ui: serde_json::Value = serde_json::from_slice(&std::fs::read(&panel).unwrap()).unwrap();
    let requests: Vec<(u64, f64)> = ui
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["say"] == "api_req_started")
        .map(|r| {
            let t: serde_json::Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
            let n = |k: &str| t[k].as_u64().unwrap_or(0);
            (
                n("tokensIn") + n("tokensOut") + n("cacheWrites") + n("cacheReads"),
                t["cost"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(requests.len(), 12);
    for (call, (tokens, cost)) in calls.iter().zip(&requests) {
        let usage = call.event.usage.expect("usage from the panel log");
        assert_eq!((usage.tokens, usage.cost), (*tokens, *cost));
        assert_eq!(call.tokens, Some(*tokens));
    }
    // The history alone (copied away from its panel log) has no usage.
    let away = tempfile::tempdir().unwrap();
    let lone = away.path().join("api_conversation_history.json");
    std::fs::copy(&history, &lone).unwrap();
    let (events, _) = read_all(&lone, Format::Cline, "task");
    assert!(events.iter().all(|e| e.event.usage.is_none()));
    // The panel log alone: recognised, and refused with the way out.
    let mut source = Source::open(&panel).unwrap();
    assert_eq!(source.detect().unwrap(), Detected::Format(Format::Cline));
    let err = source
        .read(
            Format::Cline,
            &Context::default(),
            &Default::default(),
            &mut |_| loopguard_adapters::reader::Flow::Continue,
        )
        .unwrap_err();
    assert!(matches!(err, ReadError::Document { .. }));
    let text = err.to_string();
    assert!(
        text.contains("ui_messages.json") && text.contains("api_conversation_history.json"),
        "{text}"
    );
}
