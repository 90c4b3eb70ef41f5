//! Install → reinstall → reinstall with another command → uninstall gives back the original
//! bytes, for every agent's settings format, on files with comments, odd indentation,
//! CRLF line endings, trailing commas and other hooks; symlinked files stay symlinks.

use std::path::Path;

use loopguard_agents::install::{backup_path, events, install, uninstall, Change};
use loopguard_agents::{Agent, AGENTS};

const JSON_AGENTS: &[Agent] = &[
    Agent::Codex,
    Agent::Gemini,
    Agent::Qwen,
    Agent::Copilot,
    Agent::Cursor,
    Agent::Factory,
    Agent::Windsurf,
    Agent::Kiro,
];

/// Settings files as users have them.
fn originals(agent: Agent) -> Vec<String> {
    let (pre, other) = match agent {
        Agent::Gemini => ("BeforeTool", "SessionStart"),
        Agent::Copilot | Agent::Cursor | Agent::Kiro => ("preToolUse", "sessionStart"),
        Agent::Windsurf => ("pre_run_command", "post_write_code"),
        _ => ("PreToolUse", "Stop"),
    };
    vec![
        "{}\n".to_string(),
        "{}".to_string(),
        "{\n  \"hooks\": {}\n}\n".to_string(),
        // Comments, trailing commas, three-space indentation, another setting.
        format!("// my settings\n{{\n   \"theme\": \"dark\", // dark is best\n   /* block */\n   \"hooks\": {{\n      \"{other}\": [{{\"command\": \"notify-send done\"}}],\n   }},\n}}\n"),
        // Tabs and CRLF, an existing entry in the same event.
        format!("{{\r\n\t\"hooks\": {{\r\n\t\t\"{pre}\": [\r\n\t\t\t{{\"matcher\": \"Write\", \"command\": \"prettier --check\"}}\r\n\t\t]\r\n\t}},\r\n\t\"model\": \"x\"\r\n}}\r\n"),
        // An empty list for one of loopguard's events, and hooks after other keys.
        format!("{{\n    \"a\": 1,\n    \"hooks\": {{\n        \"{pre}\": []\n    }}\n}}"),
    ]
}

fn check_round_trip(agent: Agent, dir: &Path, original: &str) {
    let path = dir.join("settings.json");
    std::fs::write(&path, original).unwrap();
    let _ = std::fs::remove_file(backup_path(&path));
    let cmd = format!("loopguard hook {agent}");
    assert!(matches!(
        install(agent, &path, &cmd).unwrap(),
        Change::Written { .. }
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    for (event, _) in events(agent) {
        assert!(
            text.contains(&format!("\"{event}\"")),
            "{agent}: {event} missing in\n{text}"
        );
    }
    assert_eq!(
        text.matches(&cmd).count(),
        events(agent).len(),
        "{agent}:\n{text}"
    );
    assert_eq!(
        std::fs::read_to_string(backup_path(&path)).unwrap(),
        original
    );
    assert_eq!(
        install(agent, &path, &cmd).unwrap(),
        Change::Unchanged,
        "{agent}:\n{text}"
    );
    let other = format!("/opt/loopguard hook {agent} --mode observe");
    assert!(matches!(
        install(agent, &path, &other).unwrap(),
        Change::Written { .. }
    ));
    let text2 = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text2.matches(&other).count(),
        events(agent).len(),
        "{agent}:\n{text2}"
    );
    assert!(matches!(
        uninstall(agent, &path).unwrap(),
        Change::Written { .. }
    ));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        original,
        "{agent}: from\n{text2}"
    );
    assert_eq!(uninstall(agent, &path).unwrap(), Change::Unchanged);
}

/// Claude Code's `settings.json` (plain JSON: Claude Code reads no comments) through the
/// same facade.
#[test]
fn claude_code_round_trips_keep_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    for original in originals(Agent::ClaudeCode) {
        if original.contains("//") || original.contains(",\n   }") {
            continue;
        }
        check_round_trip(Agent::ClaudeCode, dir.path(), &original);
    }
}

#[test]
fn round_trips_keep_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    for &agent in JSON_AGENTS {
        for original in originals(agent) {
            check_round_trip(agent, dir.path(), &original);
        }
    }
}

#[test]
fn a_new_file_is_created_and_deleted_again() {
    let dir = tempfile::tempdir().unwrap();
    for &agent in JSON_AGENTS {
        let path = dir.path().join(agent.as_str()).join("hooks.json");
        let cmd = format!("loopguard hook {agent}");
        assert_eq!(
            install(agent, &path, &cmd).unwrap(),
            Change::Written { backup: None }
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let first = &events(agent)[0].0;
        assert!(v["hooks"][first].is_array(), "{agent}: {text}");
        if matches!(agent, Agent::Copilot | Agent::Cursor) {
            assert_eq!(v["version"], 1);
        }
        // Reinstalling with another command keeps it a file loopguard created.
        install(
            agent,
            &path,
            &format!("loopguard hook {agent} --mode observe"),
        )
        .unwrap();
        assert!(!backup_path(&path).exists());
        assert_eq!(uninstall(agent, &path).unwrap(), Change::Removed);
        assert!(!path.exists());
    }
}

#[test]
fn a_symlinked_settings_file_stays_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles/settings.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    let original = "{\n  \"theme\": \"dark\"\n}\n";
    std::fs::write(&real, original).unwrap();
    let link = dir.path().join("settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    install(Agent::Gemini, &link, "loopguard hook gemini").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("loopguard hook gemini"));
    uninstall(Agent::Gemini, &link).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), original);
}

#[test]
fn bad_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    for (bad, what) in [
        ("{\"hooks\": [", "not valid JSON"),
        ("[1]", "not a JSON object"),
        ("{\"hooks\": 3}", "`hooks` is not an object"),
    ] {
        std::fs::write(&path, bad).unwrap();
        let e = install(Agent::Gemini, &path, "loopguard hook gemini")
            .unwrap_err()
            .to_string();
        assert!(e.contains("settings.json") && e.contains(what), "{e}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            bad,
            "nothing written"
        );
    }
}

#[test]
fn cline_hooks_are_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("Hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("TaskComplete.bak"), "mine").unwrap();
    assert!(matches!(
        install(Agent::Cline, &hooks, "loopguard hook cline").unwrap(),
        Change::Written { .. }
    ));
    let script = std::fs::read_to_string(hooks.join("PreToolUse")).unwrap();
    assert!(script.starts_with("#!/bin/sh") && script.contains("exec loopguard hook cline"));
    assert_eq!(
        install(Agent::Cline, &hooks, "loopguard hook cline").unwrap(),
        Change::Unchanged
    );
    assert_eq!(uninstall(Agent::Cline, &hooks).unwrap(), Change::Removed);
    let left: Vec<_> = std::fs::read_dir(&hooks)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["TaskComplete.bak"]);
    // Someone else's hook script is not overwritten.
    std::fs::write(hooks.join("PreToolUse"), "#!/bin/sh\necho hi\n").unwrap();
    assert!(install(Agent::Cline, &hooks, "loopguard hook cline").is_err());
}

#[test]
fn every_agent_has_events() {
    for &a in AGENTS {
        assert!(!events(a).is_empty());
    }
}

#[test]
fn codex_config_toml_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let originals = [
        "# my Codex config\nmodel = \"gpt-5\"  # the best\n\n[model_providers.local]\nbase_url = \"http://localhost:1234/v1\"\n",
        "model = \"o3\"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify-send done\"\n\n[tui]\nnotifications = true\n",
        "",
    ];
    for original in originals {
        std::fs::write(&path, original).unwrap();
        let _ = std::fs::remove_file(backup_path(&path));
        install(Agent::Codex, &path, "loopguard hook codex").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(
            doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str(),
            Some("loopguard hook codex"),
            "{text}"
        );
        assert_eq!(
            install(Agent::Codex, &path, "loopguard hook codex").unwrap(),
            Change::Unchanged,
            "{text}"
        );
        install(
            Agent::Codex,
            &path,
            "/opt/loopguard hook codex --mode observe",
        )
        .unwrap();
        uninstall(Agent::Codex, &path).unwrap();
        if original.is_empty() {
            // loopguard wrote an empty file's only content: the file is gone or empty.
            assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), "");
        } else {
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                original,
                "from\n{text}"
            );
        }
    }
}

/// Qwen Code adds `"$version": 4` to a settings file that lacks it when it runs: uninstall
/// removes only loopguard's hooks, keeps that key in a file that was there before, and
/// deletes a file loopguard created that holds nothing else.
#[test]
fn qwen_uninstall_tolerates_the_version_qwen_adds() {
    let dir = tempfile::tempdir().unwrap();
    let qwen_ran = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap();
        let body = text.trim_start().strip_prefix('{').unwrap();
        std::fs::write(path, format!("{{\n  \"$version\": 4,{body}")).unwrap();
    };
    // A file loopguard created.
    let created = dir.path().join("created/settings.json");
    install(Agent::Qwen, &created, "loopguard hook qwen").unwrap();
    qwen_ran(&created);
    uninstall(Agent::Qwen, &created).unwrap();
    assert!(!created.exists(), "{:?}", std::fs::read_to_string(&created));
    // A file the user had.
    let had = dir.path().join("had/settings.json");
    std::fs::create_dir_all(had.parent().unwrap()).unwrap();
    let original = "{\n  // mine\n  \"model\": {\"name\": \"qwen3-coder\"}\n}\n";
    std::fs::write(&had, original).unwrap();
    install(Agent::Qwen, &had, "loopguard hook qwen").unwrap();
    qwen_ran(&had);
    uninstall(Agent::Qwen, &had).unwrap();
    let left = std::fs::read_to_string(&had).unwrap();
    assert_eq!(
        left,
        format!(
            "{{\n  \"$version\": 4,{}",
            original.strip_prefix('{').unwrap()
        )
    );
    assert!(!left.contains("loopguard"), "{left}");
}
