//! Sub-agents in an event stream (`parentSession`, docs/events.md), replayed by the binary:
//! a sub-agent's session keeps its own loop state (its loop is stopped there, and the
//! parent's identical call is not part of it), while the parent's `callsPerSession` budget
//! counts the sub-agent's calls. Without a budget the link changes no decision.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// A parent (`task`) that reads twice, then a sub-agent (`task/a1`) that runs the same
/// failing test 22 times, then the parent running that test itself three times.
fn stream(with_parent: bool) -> String {
    let mut lines = Vec::new();
    let mut push = |session: &str, n: usize, tool: &str, args: Value, result: &str| {
        let mut call = json!({"type":"call","session":session,"run":"r1","callId":format!("{session}-{n}"),"tool":tool,"args":args});
        if with_parent && session != "task" {
            call["parentSession"] = json!("task");
        }
        let mut outcome = call.clone();
        outcome["type"] = json!("outcome");
        outcome["result"] = json!(result);
        lines.push(call.to_string());
        lines.push(outcome.to_string());
    };
    for n in 0..2 {
        push(
            "task",
            n,
            "read",
            json!({"path": format!("src/{n}.rs")}),
            "fn main() {}",
        );
    }
    for n in 0..22 {
        push(
            "task/a1",
            n,
            "exec",
            json!({"command":"npm test"}),
            "1 failing",
        );
    }
    for n in 2..5 {
        push(
            "task",
            n,
            "exec",
            json!({"command":"npm test"}),
            "1 failing",
        );
    }
    lines.join("\n") + "\n"
}

/// `replay --json` of `events` with `config`: each call's session, decision and detector.
fn replay(dir: &Path, config: &str, events: &str) -> Vec<(String, String, String)> {
    let cfg = dir.join("config.json5");
    std::fs::write(&cfg, config).unwrap();
    let file = dir.join("events.jsonl");
    std::fs::write(&file, events).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--mode", "enforce", "--config"])
        .arg(&cfg)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            (
                d["session"].as_str().unwrap().to_string(),
                d["decision"].as_str().unwrap().to_string(),
                d["detector"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_parent_counts_its_subagents_calls_while_each_keeps_its_own_loop_state() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 24 } } }"#;
    let calls = replay(dir.path(), config, &stream(true));
    assert_eq!(calls.len(), 27);
    let sub: Vec<_> = calls[2..24].iter().collect();
    assert!(sub.iter().all(|(s, ..)| s == "task/a1"));
    // The sub-agent's loop is its own: OpenClaw's warning at its 11th identical call (the
    // engine's warnings leave no room for the budget's at 80%, which its parent gives), and
    // the block at its 21st, within the session's budget (2 + 20 = 22 of 24).
    assert_eq!(sub[10].1, "warn", "{sub:?}");
    assert_ne!(sub[10].2, "budget");
    assert_eq!(sub[20].1, "block", "{sub:?}");
    assert_ne!(sub[20].2, "budget", "a loop, not the budget: {sub:?}");
    // The parent's own state: the same test run by the parent is not the sub-agent's loop;
    // its session counted the sub-agent's 20 calls that ran, so its budget warns at once
    // (2 + 20 + 1 = 23 of 24) and refuses its third call (25 > 24).
    let parent: Vec<_> = calls[24..]
        .iter()
        .map(|(s, d, det)| format!("{s} {d} {det}"))
        .collect();
    assert_eq!(
        parent,
        ["task warn budget", "task allow -", "task block budget"]
    );
}

#[test]
fn without_a_budget_the_parent_link_changes_no_decision() {
    let dir = tempfile::tempdir().unwrap();
    let config = "{ tools: { loopDetection: { enabled: true } } }";
    let linked = replay(dir.path(), config, &stream(true));
    let plain = replay(dir.path(), config, &stream(false));
    assert_eq!(linked, plain);
    // The sub-agent's loop is blocked in its session; the parent's calls are all allowed.
    assert_eq!(linked[22].0, "task/a1");
    assert_eq!(linked[22].1, "block");
    assert!(linked[24..]
        .iter()
        .all(|(s, d, _)| s == "task" && d == "allow"));
}

/// A Gemini CLI chat line: a `gemini` message reading `path`, with its result.
fn gemini_read(n: usize, path: &str) -> String {
    json!({"id": format!("m{n}"), "timestamp": format!("2026-12-07T17:5{n}:00.000Z"), "type": "gemini", "content": "",
        "toolCalls": [{"id": format!("c{n}"), "name": "read_file", "args": {"file_path": path}, "status": "success",
            "result": [{"functionResponse": {"id": format!("c{n}"), "name": "read_file", "response": {"output": "fn main() {}"}}}]}]})
    .to_string()
}

#[test]
fn a_gemini_subagents_chat_replays_in_a_session_of_its_own_named_after_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    // Laid out as Gemini CLI 0.61 writes them: the main chat, and the sub-agent's chat in a
    // folder named by the main session's id.
    let parent_id = "9f1c2d3e-1111-4222-8333-444455556666";
    let chats = dir.path().join("chats");
    std::fs::create_dir_all(chats.join(parent_id)).unwrap();
    let header = |id: &str, kind: &str| {
        json!({"sessionId": id, "projectHash": "h", "startTime": "2026-12-07T17:53:00.000Z", "lastUpdated": "2026-12-07T17:59:00.000Z", "kind": kind}).to_string()
    };
    let prompt = r#"{"id":"u0","timestamp":"2026-12-07T17:53:00.000Z","type":"user","content":[{"text":"go"}]}"#;
    let main = chats.join("session-2026-12-07T17-53-9f1c2d3e.jsonl");
    let mut lines = vec![header(parent_id, "main"), prompt.to_string()];
    lines.extend((0..3).map(|n| gemini_read(n, &format!("src/{n}.rs"))));
    std::fs::write(&main, lines.join("\n") + "\n").unwrap();
    let sub = chats.join(parent_id).join("a7e0.jsonl");
    let mut lines = vec![header("a7e0", "subagent"), prompt.to_string()];
    lines.extend((3..6).map(|n| gemini_read(n, &format!("lib/{n}.rs"))));
    std::fs::write(&sub, lines.join("\n") + "\n").unwrap();

    let cfg = dir.path().join("config.json5");
    std::fs::write(
        &cfg,
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 4 } } }"#,
    )
    .unwrap();
    let calls = replay_files(&cfg, &[&main, &sub]);
    let mut sessions: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    sessions.dedup();
    assert_eq!(
        sessions,
        [
            "session-2026-12-07T17-53-9f1c2d3e",
            "session-2026-12-07T17-53-9f1c2d3e/a7e0"
        ],
        "{calls:?}"
    );
    // Replay decides each file with an engine of its own; converted to events and replayed
    // as one stream, the sub-agent's calls count at the parent's budget: six different
    // reads, three per session, and only the parent's budget refuses any (the 5th and 6th).
    let mut events = Vec::new();
    for file in [&main, &sub] {
        let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .arg("convert")
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        events.extend(out.stdout);
    }
    let stream = dir.path().join("events.jsonl");
    std::fs::write(&stream, events).unwrap();
    let calls = replay_files(&cfg, &[&stream]);
    let refused: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, (_, d, det))| d == "block" && det == "budget")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(refused, [4, 5], "{calls:?}");
    assert!(
        calls[3..].iter().all(|c| c.0.ends_with("/a7e0")),
        "{calls:?}"
    );
}

/// `replay --json` of `files` with the config file `cfg`: each call's session, decision and
/// detector.
fn replay_files(cfg: &Path, files: &[&Path]) -> Vec<(String, String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json", "--mode", "enforce", "--config"])
        .arg(cfg)
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type"] == "call")
        .map(|d| {
            (
                d["session"].as_str().unwrap().to_string(),
                d["decision"].as_str().unwrap().to_string(),
                d["detector"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

#[test]
fn an_opencode_task_session_counts_at_its_parents_budget() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT, time_created INTEGER);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);
         INSERT INTO session VALUES ('ses_p', NULL, 'main', 1), ('ses_c', 'ses_p', 'task', 2);",
    )
    .unwrap();
    // Three different commands in each session, the parent's first (sessions are read
    // oldest first).
    for (session, n) in [
        ("ses_p", 0),
        ("ses_p", 1),
        ("ses_p", 2),
        ("ses_c", 3),
        ("ses_c", 4),
        ("ses_c", 5),
    ] {
        let msg = format!("msg_{n}");
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, '{\"role\":\"assistant\"}')",
            rusqlite::params![msg, session, n],
        )
        .unwrap();
        let part = json!({"type": "tool", "tool": "bash", "callID": format!("call_{n}"),
            "state": {"status": "completed", "input": {"command": format!("ls dir{n}")}, "output": "a\n", "time": {"start": n, "end": n}}});
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![format!("prt_{n}"), msg, session, n, part.to_string()],
        )
        .unwrap();
    }
    drop(conn);
    let cfg = dir.path().join("config.json5");
    let budget = |n: u32| {
        std::fs::write(
            &cfg,
            format!("{{ tools: {{ loopDetection: {{ enabled: true }} }}, loopguard: {{ budgets: {{ callsPerSession: {n} }} }} }}"),
        )
        .unwrap();
        replay_files(&cfg, &[&db])
    };
    let calls = budget(4);
    let sessions: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        sessions,
        [
            "opencode/ses_p",
            "opencode/ses_p",
            "opencode/ses_p",
            "opencode/ses_c",
            "opencode/ses_c",
            "opencode/ses_c"
        ]
    );
    // Six different commands, three per session: only the parent's budget, counting both
    // sessions' calls, refuses any: the sub-agent's second and third (the parent's 5th
    // and 6th).
    let refused: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, (_, d, det))| d == "block" && det == "budget")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(refused, [4, 5], "{calls:?}");
    // Unlinked, each session makes three calls, within its budget of four.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE session SET parent_id = NULL", [])
        .unwrap();
    let unlinked = budget(4);
    assert_eq!(unlinked.len(), 6);
    assert!(
        unlinked.iter().all(|(_, d, _)| d != "block"),
        "{unlinked:?}"
    );
}
