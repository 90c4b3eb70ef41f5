//! `loopguard hook AGENT` and `loopguard hook install/uninstall AGENT` through the binary:
//! the agent's answer on stdout and in the exit status; a project's settings run
//! `loopguard` from PATH; install → uninstall gives back the original bytes.

use std::io::Write;
use std::process::{Command, Stdio};

fn loopguard() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loopguard"))
}

/// `PATH` with the directory of the binary under test first: `loopguard` is on it.
fn path_with_loopguard() -> std::ffi::OsString {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_loopguard"))
        .parent()
        .unwrap()
        .to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).unwrap()
}

/// `PATH` without any directory holding a `loopguard`.
fn path_without_loopguard() -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&rest).filter(|d| !d.join("loopguard").exists()))
        .unwrap()
}

fn hook(
    agent: &str,
    state: &std::path::Path,
    home: &std::path::Path,
    input: &str,
) -> (String, i32) {
    let mut child = loopguard()
        .args(["hook", agent, "--state"])
        .arg(state)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

#[test]
fn project_install_without_loopguard_on_path_names_this_executable_and_the_hook_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_without_loopguard();
    let out = loopguard()
        .args(["hook", "install", "gemini", "--project", "--project-dir"])
        .arg(dir.path())
        .env("PATH", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: `loopguard` is not on PATH: the hook command names this executable"
        ),
        "{stderr}"
    );
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".gemini/settings.json")).unwrap(),
    )
    .unwrap();
    let command = settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_loopguard")).unwrap();
    assert!(
        command.starts_with(&*exe.to_string_lossy()) && command.ends_with(" hook gemini"),
        "{command}"
    );
    // The command runs as Gemini CLI runs it (a shell with the same PATH): it answers.
    let payload = r#"{"session_id":"p1","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"path":"a"},"cwd":"/nonexistent","transcript_path":""}"#;
    let mut child = Command::new("sh")
        .args(["-c", &command])
        .env("PATH", &path)
        .env("HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let ran = child.wait_with_output().unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(!String::from_utf8_lossy(&ran.stderr).contains("not found"));
}

#[test]
fn project_install_runs_loopguard_from_path_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = "{\n\t// the team's settings\n\t\"ui\": {\"theme\": \"GitHub\"}\n}\n";
    std::fs::write(&settings, original).unwrap();
    let out = loopguard()
        .args(["hook", "install", "gemini", "--project", "--project-dir"])
        .arg(dir.path())
        .env("PATH", path_with_loopguard())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.contains("\"command\":\"loopguard hook gemini\""),
        "{text}"
    );
    assert!(text.contains("// the team's settings"));
    let out = loopguard()
        .args(["hook", "uninstall", "gemini", "--project", "--project-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), original);
    // Unknown agents are refused, naming the ones there are.
    let out = loopguard()
        .args(["hook", "install", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown agent `nope`"));
}

#[test]
fn windsurf_blocks_with_exit_status_2_and_cline_always_answers_json() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.sqlite3");
    let home = dir.path().join("home");
    let pre = r#"{"agent_action_name":"pre_run_command","trajectory_id":"t1","execution_id":"e","timestamp":"x","tool_info":{"command_line":"make","cwd":"/nonexistent"}}"#;
    let post = r#"{"agent_action_name":"post_run_command","trajectory_id":"t1","execution_id":"e","timestamp":"x","tool_info":{"command_line":"make","cwd":"/nonexistent"}}"#;
    let mut codes = Vec::new();
    for _ in 0..21 {
        let (out, code) = hook("windsurf", &state, &home, pre);
        assert_eq!(out, "");
        codes.push(code);
        if code == 0 {
            hook("windsurf", &state, &home, post);
        }
    }
    assert_eq!(codes[..20], [0; 20]);
    assert_eq!(codes[20], 2);
    let (out, code) = hook("cline", &state, &home, "garbage");
    assert_eq!((out.as_str(), code), ("{\"cancel\":false}\n", 0));
}

/// `loopguard status` with `HOME` and the working directory in `home`.
fn status(state: &std::path::Path, home: &std::path::Path) -> String {
    let out = loopguard()
        .args(["status", "--state"])
        .arg(state)
        .env("HOME", home)
        .current_dir(home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn codex_install_says_how_to_trust_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = loopguard()
        .args(["hook", "install", "codex", "--exe", "loopguard"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("/hooks"), "{said}");
    assert!(said.contains("codex exec"), "{said}");
    assert!(said.contains("--dangerously-bypass-hook-trust"), "{said}");
}

#[test]
fn status_notices_an_installed_hook_that_never_ran() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let state = dir.path().join("state.sqlite3");
    // Nothing installed: no warning.
    let said = status(&state, &home);
    assert!(!said.contains("never ran"), "{said}");
    let out = loopguard()
        .args(["hook", "install", "codex", "--exe", "loopguard"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success());
    let hooks = home.join(".codex/hooks.json");
    // Installed, no database yet.
    let said = status(&state, &home);
    assert!(
        said.contains(&format!(
            "codex: hook installed in {} but never ran: Codex skips untrusted hooks; run /hooks in Codex",
            hooks.display()
        )),
        "{said}"
    );
    // Another front end's session in the database: Codex's hook still never ran.
    let gemini = r#"{"session_id":"g1","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"path":"a"},"cwd":"/nonexistent","transcript_path":""}"#;
    hook("gemini", &state, &home, gemini);
    let said = status(&state, &home);
    assert!(said.contains("gemini (1 session)"), "{said}");
    assert!(said.contains("codex: hook installed in"), "{said}");
    // Once a Codex session is recorded, the warning is gone.
    let codex = r#"{"session_id":"c1","turn_id":"t","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"u1","cwd":"/nonexistent","model":"m","transcript_path":null}"#;
    let (answer, code) = hook("codex", &state, &home, codex);
    assert_eq!(code, 0, "{answer}");
    let said = status(&state, &home);
    assert!(said.contains("codex (1 session)"), "{said}");
    assert!(!said.contains("never ran"), "{said}");
}
