//! `loopguard run -- CMD…` end to end: the real binary wraps a scripted agent (a shell
//! script standing in for a headless agent) that calls the real `loopguard hook
//! claude-code` for each tool call, as Claude Code runs its hooks, and acts on the
//! answers (a denied call does not run; `continue: false` stops it). The wrapper learns
//! the hooks' decisions from the verdict log it names in the agent's environment.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const LOOPGUARD: &str = env!("CARGO_BIN_EXE_loopguard");

/// A scripted agent: `calls` identical failing `npm test` calls through the hook, then
/// `exit $exit`. It stops early, exit status 0, when the hook says `continue: false`.
fn agent_script(dir: &Path, calls: usize, exit: i32) -> String {
    let cwd = dir.display();
    format!(
        r#"
set -u
for i in $(seq 1 {calls}); do
  pre='{{"session_id":"run-1","transcript_path":"/t.jsonl","cwd":"{cwd}","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"npm test"}},"tool_use_id":"toolu_'$i'"}}'
  answer=$(printf '%s' "$pre" | "{LOOPGUARD}" hook claude-code)
  case "$answer" in *'"continue":false'*) echo "agent: stopped by the hook at call $i"; exit 0;; esac
  case "$answer" in *'"permissionDecision":"deny"'*) continue;; esac
  post='{{"session_id":"run-1","transcript_path":"/t.jsonl","cwd":"{cwd}","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{{"command":"npm test"}},"tool_use_id":"toolu_'$i'","tool_response":{{"stdout":"FAIL","stderr":"","interrupted":false,"isImage":false}}}}'
  printf '%s' "$post" | "{LOOPGUARD}" hook claude-code > /dev/null
done
exit {exit}
"#
    )
}

fn wrapped(dir: &Path, config: &str, script: &str, extra: &[&str]) -> (Option<i32>, String) {
    std::fs::write(dir.join(".loopguard.json5"), config).unwrap();
    let out = Command::new(LOOPGUARD)
        .arg("run")
        .args(extra)
        .args(["--", "bash", "-c", script])
        .env("HOME", dir.join("home"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("LOOPGUARD_VERDICT_LOG")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("error"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

/// The verdict: the last line of standard output (the agent's own lines come first).
fn verdict(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn a_loop_that_ends_the_run_exits_3_with_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        r#"{ tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: "end-run" } }"#;
    let script = agent_script(dir.path(), 30, 0);
    let (code, stdout) = wrapped(dir.path(), config, &script, &[]);
    assert_eq!(code, Some(3), "{stdout}");
    assert!(
        stdout.contains("agent: stopped by the hook at call 21"),
        "{stdout}"
    );
    let v = verdict(&stdout);
    assert_eq!(v["outcome"], "ended");
    assert_eq!(v["agentExitCode"], 0);
    let d = &v["decisions"][0];
    assert_eq!(d["agent"], "claude-code");
    assert_eq!(d["session"], "run-1");
    assert_eq!(d["run"], "prompt-0");
    assert_eq!(d["tool"], "Bash");
    assert_eq!(d["decision"], "abort");
    assert_eq!(d["detector"], "generic_repeat");
    assert_eq!(d["count"], 20);
    assert_eq!(v["decisions"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn refusals_exit_2_and_the_verdict_can_go_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{ tools: { loopDetection: { enabled: true } } }"#;
    let script = agent_script(dir.path(), 23, 0);
    let file = dir.path().join("verdict.json");
    let (code, stdout) = wrapped(
        dir.path(),
        config,
        &script,
        &["--verdict", file.to_str().unwrap()],
    );
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "", "the verdict went to the file");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["outcome"], "blocked");
    let words: Vec<&str> = v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["block", "block", "block"]);
}

#[test]
fn a_clean_run_passes_the_agents_exit_status_through() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{ tools: { loopDetection: { enabled: true } } }"#;
    let script = agent_script(dir.path(), 3, 5);
    let (code, stdout) = wrapped(dir.path(), config, &script, &[]);
    assert_eq!(code, Some(5));
    let v = verdict(&stdout);
    assert_eq!(v["outcome"], "clean");
    assert_eq!(v["agentExitCode"], 5);
    assert_eq!(v["decisions"], serde_json::json!([]));
    // Without a command there is nothing to wrap: clap says so.
    let out = Command::new(LOOPGUARD).arg("run").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
