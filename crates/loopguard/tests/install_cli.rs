//! `loopguard hook install` / `uninstall` keep the user's settings file byte for byte,
//! `--project` writes a command that works on every machine, a config the hook could not
//! load is refused at install time, and `status` / the log say when protection is weaker
//! than it looks. Through the real binary, in a sandboxed home.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

mod sandbox;
use sandbox::Sandbox;

fn pre(session: &str, cwd: &Path, id: &str) -> Vec<u8> {
    json!({
        "session_id": session, "cwd": cwd, "permission_mode": "acceptEdits",
        "hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": "/p/a"}, "tool_use_id": id,
    })
    .to_string()
    .into_bytes()
}

/// Settings files as people have them; `None` is a missing file.
const FILES: &[(&str, Option<&str>)] = &[
    ("tabs", Some("{\n\t\"model\": \"opus\",\n\t\"env\": {\n\t\t\"DEBUG\": \"1\"\n\t}\n}\n")),
    ("four spaces with hooks", Some("{\n    \"permissions\": {\n        \"allow\": [\n            \"Bash(npm test)\"\n        ]\n    },\n    \"hooks\": {\n        \"PreToolUse\": [\n            {\n                \"matcher\": \"Bash\",\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"~/bin/guard.sh\"\n                    }\n                ]\n            }\n        ],\n        \"Notification\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send claude\"}]}]\n    }\n}")),
    ("CRLF", Some("{\r\n  \"model\": \"sonnet\",\r\n  \"hooks\": {\r\n    \"Stop\": [\r\n      {\r\n        \"hooks\": [\r\n          {\r\n            \"type\": \"command\",\r\n            \"command\": \"say done\"\r\n          }\r\n        ]\r\n      }\r\n    ]\r\n  }\r\n}\r\n")),
    ("no hooks key, odd spacing", Some("{ \"model\" : \"opus\" ,\n  \"statusLine\": {\"type\": \"command\", \"command\": \"~/.claude/status.sh\"}\n}\n")),
    ("empty file", Some("")),
    ("missing file", None),
];

#[test]
fn install_reinstall_uninstall_leaves_every_byte() {
    for (name, original) in FILES {
        let sb = Sandbox::new();
        let settings = sb.path("home/.claude/settings.json");
        if let Some(text) = original {
            std::fs::write(&settings, text).unwrap();
        }
        let (stdout, _) = sb.ok(&["hook", "install"]);
        assert!(stdout.contains("installed"), "{name}: {stdout}");
        let installed = std::fs::read_to_string(&settings).unwrap();
        let v: Value = serde_json::from_str(&installed).unwrap();
        assert!(v["hooks"]["PostCompact"].is_array(), "{name}: {installed}");
        if let Some(text) = original {
            // Everything before loopguard's entries is the original text, unchanged up
            // to where loopguard inserted its first bytes.
            let common = text
                .bytes()
                .zip(installed.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            assert!(common > 0 || text.is_empty(), "{name}");
            if text.contains("\r\n") {
                assert!(
                    !installed.replace("\r\n", "").contains('\n'),
                    "{name}: lone LF"
                );
            }
        }
        // Reinstall with other options: replaced in place, first backup kept.
        sb.ok(&[
            "hook",
            "install",
            "--observe",
            "--state",
            "/tmp/loopguard-elsewhere.db",
        ]);
        let backup = sb.path("home/.claude/settings.json.loopguard-backup");
        match original {
            Some(text) => assert_eq!(&std::fs::read_to_string(&backup).unwrap(), text, "{name}"),
            None => assert!(!backup.exists(), "{name}"),
        }
        let (stdout, _) = sb.ok(&["hook", "uninstall"]);
        assert!(stdout.contains("removed"), "{name}: {stdout}");
        match original {
            Some(text) => assert_eq!(&std::fs::read_to_string(&settings).unwrap(), text, "{name}"),
            None => assert!(
                !settings.exists(),
                "{name}: loopguard created it, so it goes"
            ),
        }
    }
}

#[test]
fn a_project_install_works_wherever_the_project_is_cloned() {
    let sb = Sandbox::new();
    let (stdout, _) = sb.ok(&[
        "hook",
        "install",
        "--project",
        "--state",
        ".loopguard/state.db",
    ]);
    assert!(
        stdout.contains("hook command: loopguard hook claude-code --state"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(sb.path("project/.claude/settings.json")).unwrap();
    assert!(!text.contains(sb.dir.path().to_str().unwrap()), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let cmd = v["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert_eq!(
        cmd,
        r#"loopguard hook claude-code --state "${CLAUDE_PROJECT_DIR}"/.loopguard/state.db"#
    );

    // Another machine: the project cloned elsewhere, loopguard somewhere on its PATH.
    let clone = sb.path("elsewhere/clone");
    std::fs::create_dir_all(&clone).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_loopguard")).parent().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CLAUDE_PROJECT_DIR", &clone)
        .env("HOME", sb.path("home"))
        .env("XDG_STATE_HOME", sb.path("state"))
        .current_dir(&clone)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&pre("s", &clone, "t1"))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(
        clone.join(".loopguard/state.db").is_file(),
        "state in the clone's project"
    );

    // A path outside the project is named as it is, with a warning.
    let (_, stderr) = sb.ok(&["hook", "install", "--project", "--state", "/tmp/lg-abs.db"]);
    assert!(stderr.contains("outside the project"), "{stderr}");
}

#[test]
fn a_config_the_hook_could_not_load_is_refused_at_install() {
    let sb = Sandbox::new();
    let settings = sb.path("home/.claude/settings.json");
    std::fs::write(&settings, "{\"model\": \"opus\"}\n").unwrap();
    let out = sb.run(
        &[
            "hook",
            "install",
            "--config",
            "/nonexistent/loopguard.json5",
        ],
        b"",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("--config: cannot read config /nonexistent/loopguard.json5")
            && stderr.contains("nothing was installed"),
        "{stderr}"
    );
    let bad = sb.path("config/bad.json5");
    std::fs::write(&bad, "{ tools: { loopDetection: { enabeld: true } } }").unwrap();
    let out = sb.run(&["hook", "install", "--config", bad.to_str().unwrap()], b"");
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("enabeld") && stderr.contains("bad.json5"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
    assert!(!sb
        .path("home/.claude/settings.json.loopguard-backup")
        .exists());

    // A readable config whose warnings never reach the model: installed, with a warning.
    let weak = sb.path("config/weak.json5");
    std::fs::write(&weak, "{ tools: { loopDetection: { enabled: true, warningThreshold: 4, criticalThreshold: 8 } } }").unwrap();
    let (stdout, stderr) = sb.ok(&["hook", "install", "--config", weak.to_str().unwrap()]);
    assert!(stdout.contains("installed"), "{stdout}");
    assert!(
        stderr.contains(
            "warning: warningThreshold 4: warnings at counts below 10 are never shown to the model"
        ),
        "{stderr}"
    );
}

#[test]
fn status_says_when_protection_is_off() {
    let sb = Sandbox::new();
    let cfg = sb.path("config/team.json5");
    std::fs::write(
        &cfg,
        "{ tools: { loopDetection: { enabled: true, warningThreshold: 5 } } }",
    )
    .unwrap();
    let project = sb.path("project");
    let args = ["hook", "claude-code", "--config", cfg.to_str().unwrap()];
    let out = sb.run(&args, &pre("sess-1", &project, "t1"));
    assert_eq!((out.status.code(), out.stderr.len()), (Some(0), 0));
    let (stdout, _) = sb.ok(&["status", "sess-1"]);
    assert!(stdout.contains("permission mode: acceptEdits"), "{stdout}");
    assert!(stdout.contains("(--config)"), "{stdout}");
    assert!(stdout.contains("WARNING: warningThreshold 5"), "{stdout}");
    assert!(
        stdout.contains("last fail-open: none in the log"),
        "{stdout}"
    );

    // The config breaks: every call now fails open, and status says so.
    std::fs::write(&cfg, "{ tools: { loopDetection: { enabled: tru } } }").unwrap();
    let out = sb.run(&args, &pre("sess-1", &project, "t2"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr.contains("loopguard: session sess-1: bad config") && stderr.contains("fail-open"),
        "{stderr}"
    );
    let (stdout, _) = sb.ok(&["status", "sess-1"]);
    assert!(
        stdout.contains("WARNING: bad config") && stdout.contains("every hook call fails open"),
        "{stdout}"
    );
    assert!(
        stdout.contains("last fail-open: ") && stdout.contains("session sess-1: bad config"),
        "{stdout}"
    );
    let (stdout, _) = sb.ok(&["status"]);
    assert!(stdout.contains("last fail-open (log "), "{stdout}");
    assert!(
        stdout.contains("WARNING: session sess-1: bad config"),
        "{stdout}"
    );
    let (json, _) = sb.ok(&["status", "sess-1", "--json"]);
    let st: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(st["permissionMode"], "acceptEdits");
    assert!(st["lastFailOpen"].as_str().unwrap().contains("bad config"));
}

#[test]
fn status_checks_the_config_a_new_session_would_load() {
    let sb = Sandbox::new();
    let (stdout, _) = sb.ok(&["status"]);
    assert!(
        stdout.contains("config for a session started here: built-in"),
        "{stdout}"
    );
    std::fs::create_dir_all(sb.path("config/loopguard")).unwrap();
    std::fs::write(
        sb.path("config/loopguard/config.json5"),
        "{ tools: { loopDetection: { enabled: true, warningThreshold: 7 } } }",
    )
    .unwrap();
    let (stdout, _) = sb.ok(&["status"]);
    assert!(
        stdout.contains("(user)") && stdout.contains("WARNING: warningThreshold 7"),
        "{stdout}"
    );
    std::fs::write(
        sb.path("project/.loopguard.json5"),
        "{ tools: { loopDetection: { enabled: 1 } } }",
    )
    .unwrap();
    let (stdout, _) = sb.ok(&["status"]);
    assert!(
        stdout.contains("WARNING: config for a session started here: bad config")
            && stdout.contains(".loopguard.json5")
            && stdout.contains("every hook call fails open"),
        "{stdout}"
    );
}

#[test]
fn the_log_goes_where_it_can_and_says_where() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    // /proc/nope cannot be created, not even by root.
    let out = sb.run(
        &["hook", "claude-code", "--state", "/proc/nope/x.db"],
        &pre("s", &project, "t1"),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let fallback = sb.path("state/loopguard/loopguard.log");
    assert!(
        stderr
            .trim_end()
            .ends_with(&format!("Log: {}", fallback.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("/proc/nope/loopguard.log"), "{stderr}");
    let log = std::fs::read_to_string(&fallback).unwrap();
    assert!(
        log.contains("session s: cannot create the state directory /proc/nope"),
        "{log}"
    );
}
