//! The Claude Code plugin in `plugins/loopguard/` and its marketplace entry in
//! `.claude-plugin/marketplace.json`: their shapes are checked against what Claude Code's
//! plugin, marketplace and hooks references document (as of Claude Code 2.1.240), and the
//! commands of `hooks/hooks.json` are run, as Claude Code runs them (`sh -c`, with
//! `CLAUDE_PLUGIN_ROOT` set and `loopguard` found through `PATH`, here the binary cargo
//! built), on payloads shaped as the hooks reference shows them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Map, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The hook events of the hooks reference.
const EVENTS: &[&str] = &[
    "SessionStart",
    "Setup",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "MessageDisplay",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
];

/// Events whose matcher the reference documents as absent ("There is no matcher for this
/// event" / no matcher support): a matcher there would be silently ignored.
const NO_MATCHER: &[&str] = &["UserPromptSubmit", "PostToolBatch", "Stop", "TeammateIdle"];

/// Marketplace names reserved for Anthropic.
const RESERVED: &[&str] = &[
    "claude-code-marketplace",
    "claude-code-plugins",
    "claude-plugins-official",
    "claude-plugins-community",
    "claude-community",
    "anthropic-marketplace",
    "anthropic-plugins",
    "agent-skills",
    "anthropic-agent-skills",
    "knowledge-work-plugins",
    "life-sciences",
    "claude-for-legal",
    "claude-for-financial-services",
    "financial-services-plugins",
    "first-party-plugins",
    "healthcare",
];

fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn keys_within(obj: &Map<String, Value>, allowed: &[&str], what: &str) {
    for k in obj.keys() {
        assert!(allowed.contains(&k.as_str()), "{what}: unknown field `{k}`");
    }
}

fn string(v: &Value, what: &str) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} must be a string, is {v}"))
        .to_string()
}

#[test]
fn marketplace_and_manifest_have_the_documented_shapes() {
    let market = read_json(&repo().join(".claude-plugin/marketplace.json"));
    let m = market.as_object().expect("marketplace.json is an object");
    keys_within(
        m,
        &[
            "$schema",
            "name",
            "owner",
            "plugins",
            "description",
            "version",
            "metadata",
        ],
        "marketplace.json",
    );
    let name = string(&m["name"], "marketplace name");
    assert!(
        is_kebab(&name) && !RESERVED.contains(&name.as_str()),
        "{name}"
    );
    let owner = m["owner"].as_object().expect("owner is an object");
    keys_within(owner, &["name", "email", "url"], "owner");
    string(&owner["name"], "owner.name");
    let plugins = m["plugins"].as_array().expect("plugins is an array");
    assert_eq!(plugins.len(), 1);
    let entry = plugins[0].as_object().unwrap();
    keys_within(
        entry,
        &[
            "name",
            "source",
            "displayName",
            "description",
            "version",
            "author",
            "homepage",
            "repository",
            "license",
            "keywords",
            "category",
            "tags",
            "strict",
        ],
        "plugin entry",
    );
    let plugin_name = string(&entry["name"], "plugin entry name");
    assert!(is_kebab(&plugin_name));
    // A relative source: starts with ./, stays inside the marketplace.
    let source = string(&entry["source"], "source");
    assert!(
        source.starts_with("./") && !source.contains(".."),
        "{source}"
    );
    let root = repo().join(&source);
    assert!(
        root.join(".claude-plugin/plugin.json").is_file(),
        "{}",
        root.display()
    );
    assert!(root.join("hooks/hooks.json").is_file());
    // Only plugin.json lives in .claude-plugin/; components are at the plugin root.
    let inside: Vec<_> = std::fs::read_dir(root.join(".claude-plugin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(inside, ["plugin.json"]);

    let manifest = read_json(&root.join(".claude-plugin/plugin.json"));
    let p = manifest.as_object().expect("plugin.json is an object");
    keys_within(
        p,
        &[
            "name",
            "displayName",
            "version",
            "description",
            "author",
            "homepage",
            "repository",
            "license",
            "keywords",
        ],
        "plugin.json",
    );
    assert_eq!(string(&p["name"], "name"), plugin_name);
    let version = string(&p["version"], "version");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the plugin's version is the crate's"
    );
    assert_eq!(entry["version"], p["version"]);
    let author = p["author"].as_object().expect("author is an object");
    keys_within(author, &["name", "email", "url"], "author");
    string(&author["name"], "author.name");
    for k in ["description", "homepage", "repository", "license"] {
        string(&p[k], k);
    }
    assert!(p["keywords"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_string));
}

#[test]
fn hooks_file_has_the_documented_shape_and_matches_install() {
    let hooks = read_json(&repo().join("plugins/loopguard/hooks/hooks.json"));
    let top = hooks.as_object().expect("hooks.json is an object");
    keys_within(top, &["description", "hooks"], "hooks.json");
    string(&top["description"], "description");
    let events = top["hooks"].as_object().expect("hooks is an object");
    for (event, groups) in events {
        assert!(EVENTS.contains(&event.as_str()), "unknown event {event}");
        for g in groups.as_array().expect("an event's value is an array") {
            let g = g.as_object().expect("a matcher group is an object");
            keys_within(g, &["matcher", "hooks"], event);
            if let Some(m) = g.get("matcher") {
                let m = string(m, "matcher");
                assert!(
                    !NO_MATCHER.contains(&event.as_str()),
                    "{event} takes no matcher"
                );
                if event == "SessionStart" {
                    assert!(["startup", "resume", "clear", "compact"].contains(&m.as_str()));
                }
            }
            for h in g["hooks"].as_array().expect("hooks is an array") {
                let h = h.as_object().expect("a handler is an object");
                keys_within(
                    h,
                    &[
                        "type",
                        "command",
                        "args",
                        "timeout",
                        "async",
                        "shell",
                        "statusMessage",
                        "if",
                    ],
                    event,
                );
                assert_eq!(h["type"], "command");
                let cmd = string(&h["command"], "command");
                assert!(h["timeout"].as_u64().is_some_and(|t| t > 0));
                // Never a path of this machine: loopguard through PATH, or the plugin root.
                assert!(
                    cmd.starts_with("loopguard ") || cmd.contains("${CLAUDE_PLUGIN_ROOT}"),
                    "{cmd}"
                );
                assert!(!cmd.split_whitespace().any(|w| w.starts_with('/')), "{cmd}");
            }
        }
    }
    // The plugin registers exactly what `loopguard hook install` does.
    assert_eq!(
        top["hooks"],
        loopguard_agents::install::claude_code::hooks_object(
            loopguard_agents::install::claude_code::PATH_COMMAND
        )
    );
}

/// Runs the hooks file's commands for each payload, as Claude Code would.
struct Plugin {
    dir: tempfile::TempDir,
    root: PathBuf,
    hooks: Value,
    path: String,
    ran: std::collections::BTreeSet<String>,
}

impl Plugin {
    fn new() -> Plugin {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "state", "config", "project"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let bin = Path::new(env!("CARGO_BIN_EXE_loopguard")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let root = repo().join("plugins/loopguard");
        let hooks = read_json(&root.join("hooks/hooks.json"));
        Plugin {
            dir,
            root,
            hooks,
            path,
            ran: Default::default(),
        }
    }

    /// The commands registered for this payload's event whose matcher matches it.
    fn commands(&self, payload: &Value) -> Vec<String> {
        let event = payload["hook_event_name"].as_str().unwrap();
        let subject = match event {
            "SessionStart" => payload["source"].as_str(),
            "PreCompact" | "PostCompact" => payload["trigger"].as_str(),
            "SessionEnd" => payload["reason"].as_str(),
            _ => payload["tool_name"].as_str(),
        };
        let mut out = Vec::new();
        for g in self.hooks["hooks"][event].as_array().into_iter().flatten() {
            let matches = match g["matcher"].as_str() {
                None | Some("") | Some("*") => true,
                Some(m) => subject.is_some_and(|s| m.split('|').any(|alt| alt == s)),
            };
            if matches {
                for h in g["hooks"].as_array().unwrap() {
                    out.push(h["command"].as_str().unwrap().to_string());
                }
            }
        }
        out
    }

    /// Sends one payload; returns each command's stdout parsed as JSON (None when empty).
    fn send(&mut self, payload: Value) -> Vec<Option<Value>> {
        let mut answers = Vec::new();
        for cmd in self.commands(&payload) {
            let mut child = Command::new("sh")
                .args(["-c", &cmd])
                .env("PATH", &self.path)
                .env("CLAUDE_PLUGIN_ROOT", &self.root)
                .env("CLAUDE_PROJECT_DIR", self.dir.path().join("project"))
                .env("HOME", self.dir.path().join("home"))
                .env("XDG_STATE_HOME", self.dir.path().join("state"))
                .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
                .current_dir(self.dir.path().join("project"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{cmd}: {stderr}");
            assert!(stderr.is_empty(), "{cmd}: {stderr}");
            let stdout = String::from_utf8(out.stdout).unwrap();
            answers
                .push((!stdout.trim().is_empty()).then(|| serde_json::from_str(&stdout).unwrap()));
            self.ran
                .insert(payload["hook_event_name"].as_str().unwrap().to_string());
        }
        answers
    }

    fn status(&self, session: &str) -> Option<Value> {
        let out = Command::new(env!("CARGO_BIN_EXE_loopguard"))
            .args(["status", session, "--json"])
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }
}

fn base(event: &str, project: &Path) -> Value {
    json!({
        "session_id": "0a7d1f4e-5b8c-4d2e-9f10-2b3c4d5e6f70",
        "transcript_path": "/home/user/.claude/projects/-p/0a7d1f4e.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": event,
    })
}

fn with(mut v: Value, extra: Value) -> Value {
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn the_hooks_files_commands_protect_a_session() {
    let mut pl = Plugin::new();
    let project = pl.dir.path().join("project");
    let session = "0a7d1f4e-5b8c-4d2e-9f10-2b3c4d5e6f70";
    let ev = |e: &str, extra: Value| with(base(e, &project), extra);
    let bash = json!({"command": "npm test", "description": "Run tests"});
    let out = json!({"stdout": "1 failing", "stderr": "", "interrupted": false, "isImage": false});

    // Startup: the SessionStart handler is registered for `compact` only.
    assert!(pl
        .send(ev(
            "SessionStart",
            json!({"source": "startup", "model": "claude"})
        ))
        .is_empty());
    assert_eq!(
        pl.send(ev(
            "UserPromptSubmit",
            json!({"prompt": "make the tests pass"})
        )),
        [None]
    );
    let mut warned = None;
    let mut denied = None;
    for i in 1..=21 {
        let id = format!("toolu_{i:02}");
        let call = json!({"tool_name": "Bash", "tool_input": bash, "tool_use_id": id});
        let answer = pl.send(ev("PreToolUse", call.clone())).remove(0);
        if let Some(a) = answer {
            let spec = &a["hookSpecificOutput"];
            if spec["permissionDecision"] == "deny" {
                denied = Some(i);
                break;
            }
            warned = warned.or(spec["additionalContext"].as_str().map(|_| i));
        }
        let post = with(call, json!({"tool_response": out, "duration_ms": 812}));
        assert_eq!(pl.send(ev("PostToolUse", post)), [None]);
    }
    assert_eq!((warned, denied), (Some(11), Some(21)));

    // A failing call, and a parallel batch whose results PostToolUse already recorded.
    let fail = json!({"tool_name": "Bash", "tool_input": {"command": "cargo build"}, "tool_use_id": "toolu_f1"});
    assert_eq!(pl.send(ev("PreToolUse", fail.clone())), [None]);
    let failure = with(
        fail,
        json!({"error": "Exit code 101", "is_interrupt": false}),
    );
    assert_eq!(pl.send(ev("PostToolUseFailure", failure)), [None]);
    let read = |id: &str| json!({"tool_name": "Read", "tool_input": {"file_path": "/p/a.rs"}, "tool_use_id": id});
    for id in ["toolu_r1", "toolu_r2"] {
        assert_eq!(pl.send(ev("PreToolUse", read(id))), [None]);
    }
    let resp = json!({"type": "text", "file": {"filePath": "/p/a.rs", "content": "fn main() {}"}});
    assert_eq!(
        pl.send(ev(
            "PostToolUse",
            with(read("toolu_r1"), json!({"tool_response": resp}))
        )),
        [None]
    );
    let batch = json!({"tool_calls": [
        with(read("toolu_r1"), json!({"tool_response": "     1\tfn main() {}"})),
        with(read("toolu_r2"), json!({"tool_response": "     1\tfn main() {}"})),
    ]});
    assert_eq!(pl.send(ev("PostToolBatch", batch)), [None]);

    // A compaction, then the same health check three times: the agent is stopped.
    assert_eq!(
        pl.send(ev("UserPromptSubmit", json!({"prompt": "deploy"}))),
        [None]
    );
    assert!(pl
        .send(ev(
            "PreCompact",
            json!({"trigger": "auto", "custom_instructions": ""})
        ))
        .is_empty());
    assert_eq!(
        pl.send(ev(
            "PostCompact",
            json!({"trigger": "auto", "compact_summary": "We were deploying."})
        )),
        [None]
    );
    assert_eq!(
        pl.send(ev("SessionStart", json!({"source": "compact"}))),
        [None]
    );
    let curl = |i: u32| json!({"tool_name": "Bash", "tool_input": {"command": "curl -s localhost:8080/health"}, "tool_use_id": format!("toolu_c{i}")});
    let mut stopped = None;
    for i in 1..=3 {
        assert_eq!(pl.send(ev("PreToolUse", curl(i))), [None]);
        let post = with(
            curl(i),
            json!({"tool_response": {"stdout": "503", "stderr": "", "interrupted": false}}),
        );
        if let Some(a) = pl.send(ev("PostToolUse", post)).remove(0) {
            stopped = Some((i, a));
        }
    }
    let (i, a) = stopped.expect("the agent is stopped");
    assert_eq!(i, 3);
    assert_eq!(a["continue"], false);
    assert!(a["stopReason"]
        .as_str()
        .unwrap()
        .contains("compaction_loop_persisted"));

    let st = pl.status(session).expect("the session is in the database");
    assert_eq!(st["permissionMode"], "default");
    let decisions: Vec<_> = st["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["decision"].as_str().unwrap().to_string())
        .collect();
    assert!(
        decisions.contains(&"batch: 1 recorded, 1 already recorded".to_string()),
        "{decisions:?}"
    );
    assert!(
        decisions.contains(&"already-armed".to_string()),
        "{decisions:?}"
    );

    // The session ends: its live state goes, a record of it stays.
    assert_eq!(
        pl.send(ev("SessionEnd", json!({"reason": "prompt_input_exit"}))),
        [None]
    );
    let ended = pl.status(session).expect("the ended session's record");
    assert_eq!(ended["ended"], true, "{ended}");
    assert_eq!(ended["reason"], "prompt_input_exit", "{ended}");
    assert_eq!(ended["aborts"], 1, "{ended}");

    // Every event the plugin registers was run on a real payload.
    let registered: std::collections::BTreeSet<String> = pl.hooks["hooks"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(pl.ran, registered);
}
