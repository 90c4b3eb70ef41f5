//! `loopguard replay --agent NAME`: the session logs the coding agents keep on this machine,
//! found in their default folders under HOME (and `CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
//! `XDG_DATA_HOME`), filtered by `--since`, replayed as one report. The logs are the
//! fixtures the real CLIs wrote (tests/fixtures/transcripts/*/guarded-loop*, opencode's
//! database) and a public Cline task history, laid out as each agent lays them out.

mod common;
use common::root;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// (fixture, where the agent keeps it under the fake HOME, the format it is read as)
const LAYOUT: &[(&str, &str, &str)] = &[
    (
        "claude-code/guarded-loop.jsonl",
        "claude/projects/-tmp-work/5e1f.jsonl",
        "claude-code",
    ),
    (
        "codex/rollout-0.171-guarded-loop.jsonl",
        "codex-home/sessions/2026/12/07/rollout-2026-12-07T17-53-15-01a.jsonl",
        "codex",
    ),
    (
        "gemini/guarded-loop.jsonl",
        ".gemini/tmp/work/chats/session-2026-12-07T17-53-cc8ad293.jsonl",
        "gemini",
    ),
    (
        "qwen/guarded-loop.jsonl",
        ".qwen/projects/-tmp-work/chats/79cfd199.jsonl",
        "qwen",
    ),
    (
        "copilot/guarded-loop.events.jsonl",
        ".copilot/session-state/9377cbcb/events.jsonl",
        "copilot",
    ),
    (
        "factory/guarded-loop.jsonl",
        ".factory/sessions/-tmp-work/e6e73d2c.jsonl",
        "factory",
    ),
    (
        "opencode/loop-1.18.33.db",
        "xdg-data/opencode/opencode.db",
        "opencode",
    ),
    (
        "cline/card-architecture-1769064454592.api_conversation_history.json",
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1769064454592/api_conversation_history.json",
        "cline",
    ),
];

fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, at, _) in LAYOUT {
        let to = dir.path().join(at);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join("tests/fixtures/transcripts").join(fixture), &to).unwrap();
    }
    // Files of the agents' folders that are not session logs are passed over.
    std::fs::write(dir.path().join(".gemini/tmp/work/logs.json"), "[]").unwrap();
    std::fs::write(
        dir.path().join(
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1769064454592/ui_messages.json",
        ),
        "[]",
    )
    .unwrap();
    std::fs::write(
        dir.path()
            .join(".copilot/session-state/9377cbcb/workspace.yaml"),
        "id: 9377cbcb\n",
    )
    .unwrap();
    dir
}

fn replay(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .arg("replay")
        .args(args)
        .env("HOME", home)
        .env("CODEX_HOME", home.join("codex-home"))
        .env("CLAUDE_CONFIG_DIR", home.join("claude"))
        .env("XDG_DATA_HOME", home.join("xdg-data"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The file each `--json` decision names, in order of first appearance, with its blocks.
fn sessions(out: &Output) -> Vec<(String, usize)> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let d: Value = serde_json::from_str(line).unwrap();
        let session = d["session"].as_str().unwrap_or_default().to_string();
        let block = usize::from(d["decision"] == "block");
        match seen.iter_mut().find(|(s, _)| *s == session) {
            Some((_, n)) => *n += block,
            None => seen.push((session, block)),
        }
    }
    seen
}

#[test]
fn every_agents_logs_are_found_and_replayed_as_decided_live() {
    let home = home();
    let out = replay(home.path(), &["--agent", "all", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for (_, at, format) in LAYOUT {
        let path: PathBuf = home.path().join(at);
        assert!(
            stderr.contains(&format!("{}: reading as {format} (", path.display())),
            "{at}: {stderr}"
        );
    }
    assert!(!stderr.contains("logs.json"), "{stderr}");
    let found = sessions(&out);
    assert_eq!(found.len(), LAYOUT.len(), "{found:?}");
    // Each guarded loop: the calls the hook refused live are blocks (Claude Code's run
    // asked 26 times, the others 25); opencode's unguarded loop is blocked from call 21 as
    // its plugin would have; the Cline task has no loop.
    let blocks: Vec<usize> = found.iter().map(|(_, b)| *b).collect();
    assert_eq!(blocks, [6, 5, 5, 5, 5, 5, 5, 0], "{found:?}");
    assert!(!stderr.contains("ui_messages.json"), "{stderr}");
    // The text report ends with the table across them.
    let report = replay(home.path(), &["--agent", "all"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("total (8)"), "{text}");
    // Then the loops by agent, tool and detector, most expensive first: Claude Code's
    // loop went on for one call more (its model asked 26 times).
    let (_, by_agent) = text
        .split_once("loops by agent, tool and detector, most expensive first:\n")
        .unwrap_or_else(|| panic!("{text}"));
    let rows: Vec<Vec<&str>> = by_agent
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 7, "{by_agent}");
    assert_eq!(
        rows[0],
        [
            "claude-code",
            "Bash",
            "generic_repeat",
            "1",
            "1",
            "16",
            "96"
        ],
        "{by_agent}"
    );
    let mut agents: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    agents.sort_unstable();
    assert_eq!(
        agents,
        [
            "claude-code",
            "codex",
            "copilot",
            "factory",
            "gemini",
            "opencode",
            "qwen"
        ]
    );
    // Replaying the same files by path gives no agent table.
    let paths: Vec<String> = LAYOUT
        .iter()
        .map(|(_, at, _)| home.path().join(at).display().to_string())
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopguard"));
    let plain = cmd.arg("replay").args(&paths).output().unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("loops by agent"));
}

#[test]
fn since_keeps_the_recent_logs_and_says_when_there_are_none() {
    let home = home();
    let old = SystemTime::now() - Duration::from_secs(3 * 86_400);
    for (_, at, _) in LAYOUT.iter().filter(|(_, _, f)| *f != "copilot") {
        let file = std::fs::File::options()
            .write(true)
            .open(home.path().join(at))
            .unwrap();
        file.set_modified(old).unwrap();
    }
    let out = replay(home.path(), &["--agent", "all", "--since", "1d", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sessions(&out).len(), 1);
    let out = replay(home.path(), &["--agent", "factory", "--since", "1d"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--agent factory: no session log found"),
        "{stderr}"
    );
    let out = replay(
        home.path(),
        &["--agent", "factory", "--since", "7d", "--json"],
    );
    assert_eq!(sessions(&out).len(), 1);
    // --since needs --agent; an unknown agent is refused by name.
    assert!(!replay(home.path(), &["--since", "1d", "x.jsonl"])
        .status
        .success());
    let out = replay(home.path(), &["--agent", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Older opencode versions kept each session as JSON files under `storage/` (the
/// 1.18.33 database's rows laid out that way): `--agent opencode` finds the session files
/// under the data folder, and replaying the storage folder itself reads each session once,
/// its messages and parts with it, as the database's loop is read (blocked from call 21).
#[test]
fn opencode_json_storage_is_found_and_read_session_by_session() {
    let home = tempfile::tempdir().unwrap();
    let storage = home.path().join("xdg-data/opencode/storage");
    copy_tree(
        &root().join("tests/fixtures/transcripts/opencode/storage-1.18.33/storage"),
        &storage,
    );
    // Other records of the storage are not sessions.
    std::fs::create_dir_all(storage.join("session_diff")).unwrap();
    std::fs::write(
        storage.join("session_diff/ses_dadd4052dffe6VdGBbLM7oq61e.json"),
        "[]",
    )
    .unwrap();
    let session = storage.join("session/global/ses_dadd4052dffe6VdGBbLM7oq61e.json");
    let out = replay(home.path(), &["--agent", "opencode", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: reading as opencode-json (",
            session.display()
        )),
        "{stderr}"
    );
    let found = sessions(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, 5, "{found:?}");
    let by_agent = replay(home.path(), &["--agent", "opencode"]);
    assert!(String::from_utf8_lossy(&by_agent.stdout).contains("opencode"));
    // The storage folder by path: one session, no message or part read on its own.
    let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
        .args(["replay", "--json"])
        .arg(&storage)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The message and part folders are listed once, as read with the sessions.
    for folder in ["message", "part", "session_diff"] {
        assert!(
            stderr.contains(&format!(
                "{}: skipped: records of opencode's JSON storage, read with its session files",
                storage.join(folder).display()
            )),
            "{stderr}"
        );
    }
    assert!(!stderr.contains("msg_"), "{stderr}");
    assert!(!stderr.contains("not a transcript format"), "{stderr}");
    assert_eq!(sessions(&out).len(), 1, "{stderr}");
    assert_eq!(sessions(&out)[0].1, 5, "{stderr}");
}

/// A Cline task folder with its panel log: the `api_req_started` figures are the calls'
/// usage, so `costPerRun` stops the run where its spend reaches the cap; the same history
/// without its panel log has no cost to count.
#[test]
fn a_cline_panel_log_gives_the_budgets_the_tasks_cost() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("budget.json5");
    std::fs::write(&config, "{ loopguard: { budgets: { costPerRun: 0.05 } } }").unwrap();
    let task = root().join("tests/fixtures/transcripts/cline/task-with-panel");
    let decide = |input: &Path| -> Vec<String> {
        let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .args(["replay", "--json", "--config"])
            .arg(&config)
            .arg(input)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|d| d["type"] == "call")
            .map(|d| {
                format!(
                    "{} {}",
                    d["decision"].as_str().unwrap(),
                    d["detector"].as_str().unwrap_or("-")
                )
            })
            .collect()
    };
    // The folder: the history is read, the panel log with it.
    let with_panel = decide(&task);
    assert_eq!(with_panel.len(), 12, "{with_panel:?}");
    // 0.0125 a request: the fourth request brings the run's spend to the cap of 0.05
    // (past 80% and 100% at once), so its call and every later one is refused.
    let mut expected = vec!["allow -".to_string(); 3];
    expected.extend(std::iter::repeat_n("block budget".to_string(), 9));
    assert_eq!(with_panel, expected);
    let alone = dir.path().join("api_conversation_history.json");
    std::fs::copy(task.join("api_conversation_history.json"), &alone).unwrap();
    let without = decide(&alone);
    assert_eq!(without.len(), 12);
    assert!(
        without.iter().all(|d| !d.ends_with("budget")),
        "{without:?}"
    );
}
