//! `loopguard doctor` runs every installed hook once, as its agent would, and says which
//! answered: through the real binary, in a sandboxed home, with hooks written by the real
//! `hook install`.

mod common;
mod sandbox;
use sandbox::Sandbox;
mod serve_support;
use serve_support::{free_port, Serve};

fn doctor(sb: &Sandbox) -> (String, Option<i32>) {
    let out = sb.run(&["doctor", "--timeout", "30"], b"");
    let text = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    (text, out.status.code())
}

#[test]
fn installed_hooks_answer_and_a_broken_one_is_named() {
    let sb = Sandbox::new();
    sb.ok(&["hook", "install", "gemini"]);
    sb.ok(&["hook", "install", "copilot", "--project"]);

    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(0), "{text}");
    let gemini = sb.path("home/.gemini/settings.json");
    let copilot = sb.project().join(".github/hooks/loopguard.json");
    assert!(
        text.contains(&format!("gemini: answered ({}", gemini.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("copilot: answered ({}", copilot.display())),
        "{text}"
    );
    assert_eq!(text.matches("answered").count(), 2, "{text}");
    // The probe ran in a throwaway state: nothing was written into the user's.
    assert!(!sb.path("state/loopguard").exists(), "{text}");

    // Point the Gemini hook at a binary that is not there, as after a move or uninstall.
    let exe = env!("CARGO_BIN_EXE_loopguard");
    let settings = std::fs::read_to_string(&gemini).unwrap();
    assert!(settings.contains(exe), "{settings}");
    std::fs::write(&gemini, settings.replace(exe, "/nonexistent/bin/loopguard")).unwrap();
    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("gemini: command not found"), "{text}");
    assert!(text.contains("/nonexistent/bin/loopguard"), "{text}");
    assert!(text.contains("copilot: answered"), "{text}");
}

#[test]
fn a_hook_that_answers_wrong_fails() {
    let sb = Sandbox::new();
    sb.ok(&["hook", "install", "codex"]);
    // A command that runs but is not a hook: it exits 3 with a message.
    let path = sb.path("home/.codex/hooks.json");
    let exe = env!("CARGO_BIN_EXE_loopguard");
    let settings = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        settings.replace(exe, "echo broken >&2; exit 3; loopguard"),
    )
    .unwrap();
    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("codex: FAILED"), "{text}");
    assert!(text.contains("exit status 3"), "{text}");
    assert!(text.contains("broken"), "{text}");
}

#[test]
fn nothing_installed_is_said() {
    let sb = Sandbox::new();
    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("hooks: none installed"), "{text}");
}

#[test]
fn a_running_serve_answers_and_a_stopped_one_fails() {
    let sb = Sandbox::new();
    let tokens = sb.path("tokens");
    std::fs::write(&tokens, "team-a s3cret\n").unwrap();
    std::fs::write(sb.path("token"), "s3cret\n").unwrap();
    let server = Serve::start(&["--tokens", tokens.to_str().unwrap()]);
    let url = server.url("");
    let token = sb.path("token");
    let out = sb.run(
        &[
            "doctor",
            "--serve",
            &url,
            "--token-file",
            token.to_str().unwrap(),
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("serve {url}: answered")), "{text}");
    assert!(
        text.contains("mcp: no server entry goes through loopguard"),
        "{text}"
    );

    // Without the token the server refuses, and the doctor says so.
    let out = sb.run(&["doctor", "--serve", &url], b"");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAILED"), "{text}");
    assert!(text.contains("401"), "{text}");

    // Nothing listening.
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = sb.run(&["doctor", "--serve", &url, "--timeout", "5"], b"");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("serve {url}: FAILED")), "{text}");
}

#[test]
fn a_hook_that_hangs_is_cut_off() {
    let sb = Sandbox::new();
    sb.ok(&["hook", "install", "codex"]);
    let path = sb.path("home/.codex/hooks.json");
    let exe = env!("CARGO_BIN_EXE_loopguard");
    let settings = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, settings.replace(exe, "sleep 5; loopguard")).unwrap();
    let out = sb.run(&["doctor", "--timeout", "0.5"], b"");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("codex: FAILED"), "{text}");
    assert!(text.contains("no answer within 0.5s"), "{text}");
}

/// A Cursor config whose one server is the reference Python SDK's test server (from
/// scripts/setup-mcp.sh), wrapped by the real `mcp install`: the doctor starts it through
/// `loopguard mcp` and lists its tools; pointed at a missing program, it fails.
#[test]
fn a_wrapped_mcp_server_answers_and_a_broken_one_fails() {
    let py = common::mcp_python();
    let server = common::root().join("crates/loopguard-mcp/tests/python/server.py");
    let source = std::fs::read_to_string(&server).unwrap();
    let tools = source.matches("@server.tool(").count();
    assert!(tools > 0, "{}", server.display());

    let sb = Sandbox::new();
    let config = sb.path("home/.cursor/mcp.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let entry = serde_json::json!({"mcpServers": {"test": {
        "command": py,
        "args": [server],
        "env": {"LOOPGUARD_TEST_CALLS": sb.path("calls")},
    }}});
    std::fs::write(&config, entry.to_string()).unwrap();
    sb.ok(&["mcp", "install", "--client", "cursor"]);
    let wrapped = std::fs::read_to_string(&config).unwrap();
    assert!(wrapped.contains(r#""loopguard""#), "{wrapped}");

    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!(
            "mcp cursor mcpServers.test: answered ({tools} tools) ({}",
            config.display()
        )),
        "{text}"
    );
    // Listing tools calls none.
    assert!(!sb.path("calls").exists(), "{text}");
    assert!(!sb.path("state/loopguard").exists(), "{text}");

    // The real server moved away: loopguard starts, its upstream does not.
    let py = py.to_str().unwrap();
    std::fs::write(&config, wrapped.replace(py, "/nonexistent/bin/python")).unwrap();
    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("mcp cursor mcpServers.test: FAILED"),
        "{text}"
    );
    assert!(text.contains("/nonexistent/bin/python"), "{text}");

    // loopguard itself gone.
    std::fs::write(
        &config,
        wrapped.replace(r#""loopguard""#, r#""/nonexistent/bin/loopguard""#),
    )
    .unwrap();
    let (text, code) = doctor(&sb);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("mcp cursor mcpServers.test: command not found"),
        "{text}"
    );
}

#[test]
fn a_wrapped_mcp_server_that_hangs_is_cut_off() {
    let sb = Sandbox::new();
    let config = sb.project().join(".mcp.json");
    // A server that never answers (it reads nothing and sleeps).
    std::fs::write(
        &config,
        r#"{"mcpServers": {"slow": {"command": "sleep", "args": ["5"]}}}"#,
    )
    .unwrap();
    sb.ok(&[
        "mcp",
        "install",
        "--client",
        "claude-code",
        "--config",
        config.to_str().unwrap(),
    ]);
    let out = sb.run(&["doctor", "--timeout", "0.5"], b"");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("mcp claude-code mcpServers.slow: FAILED"),
        "{text}"
    );
    assert!(text.contains("no answer within 0.5s"), "{text}");
}
