//! Adding loopguard to Claude Code's `settings.json`, and taking it out again.
//!
//! [`install`] registers one command hook, `… hook claude-code`, for the events loopguard
//! needs ([`EVENTS`]):
//!
//! | event | matcher |
//! |-------|---------|
//! | `PreToolUse`, `PostToolUse`, `PostToolUseFailure` | `*` (every tool) |
//! | `PostToolBatch`, `UserPromptSubmit`, `PostCompact`, `SessionEnd` | none |
//! | `SessionStart` | `compact` |
//!
//! **The file stays the user's.** Edits are made in place on the text (see the private
//! `jsonspan` module): loopguard's handlers are appended after what is there, in the
//! file's own indentation, line endings and spacing, and removed again byte for byte;
//! every other byte (key order, formatting, other hooks) is left as it was. So install →
//! install with other options → uninstall gives back the original file, byte for byte.
//! loopguard's entries are recognised by their command (`loopguard` … `hook
//! claude-code`): an entry that is already right stays where it is, one whose command
//! changed is replaced, and a second install changes nothing and writes nothing.
//! Containers loopguard created (`hooks`, an event's list, a matcher group) are removed
//! when they become empty; those that were in the file before loopguard first touched it
//! stay, even empty. A settings file loopguard created is deleted again when uninstall
//! leaves it empty.
//!
//! Before the first write, the file as it was is copied to
//! `settings.json.loopguard-backup`; that backup is never overwritten, so it always holds
//! the file as it was before loopguard ever touched it. Writes replace the file
//! atomically (a temporary file renamed over it, with the original's permissions; a
//! symlinked settings file is written through the link).
//!
//! ```
//! use loopguard_agents::install::claude_code::{install, uninstall};
//! use loopguard_agents::install::Change;
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("settings.json");
//! let original = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]\n    }\n}\n";
//! std::fs::write(&path, original)?;
//! assert!(matches!(install(&path, "loopguard hook claude-code")?, Change::Written { .. }));
//! assert_eq!(install(&path, "loopguard hook claude-code")?, Change::Unchanged);
//! assert!(std::fs::read_to_string(&path)?.contains("\n        \"PreToolUse\": [\n"));
//! install(&path, "loopguard hook claude-code --mode observe")?;
//! uninstall(&path)?;
//! assert_eq!(std::fs::read_to_string(&path)?, original);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

use serde_json::{json, Value};

use super::file::{self, backup_path, Change, InstallError};
use super::jsonspan::{Doc, Edit, Node};

/// The events and matchers loopguard registers (the same list as the plugin's
/// `hooks/hooks.json`).
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("PreToolUse", Some("*")),
    ("PostToolUse", Some("*")),
    ("PostToolUseFailure", Some("*")),
    ("PostToolBatch", None),
    ("UserPromptSubmit", None),
    ("PostCompact", None),
    ("SessionStart", Some("compact")),
    ("SessionEnd", None),
];

/// Seconds Claude Code waits for the hook before giving up on it.
pub const HOOK_TIMEOUT_S: u64 = 10;

/// The command that runs loopguard's hook through `PATH`: what `--project` installs and
/// what the plugin's `hooks/hooks.json` runs, so it works on every machine.
pub const PATH_COMMAND: &str = "loopguard hook claude-code";

/// `true` for a command that runs loopguard's Claude Code hook.
///
/// ```
/// use loopguard_agents::install::claude_code::is_loopguard_command;
/// assert!(is_loopguard_command("'/opt/my tools/loopguard' hook claude-code --state /x"));
/// assert!(is_loopguard_command("loopguard hook claude-code"));
/// assert!(!is_loopguard_command("prettier --write"));
/// ```
pub fn is_loopguard_command(cmd: &str) -> bool {
    cmd.contains("loopguard") && cmd.contains("hook claude-code")
}

/// One handler as loopguard writes it.
///
/// ```
/// use loopguard_agents::install::claude_code::{handler, HOOK_TIMEOUT_S};
/// let h = handler("loopguard hook claude-code");
/// assert_eq!(h["type"], "command");
/// assert_eq!(h["timeout"], HOOK_TIMEOUT_S);
/// ```
pub fn handler(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S})
}

/// The `hooks` object loopguard registers with `command`: one group per event of
/// [`EVENTS`]. The plugin's `hooks/hooks.json` is `{"description": …, "hooks": this}`
/// with [`PATH_COMMAND`].
///
/// ```
/// use loopguard_agents::install::claude_code::hooks_object;
/// let h = hooks_object("loopguard hook claude-code");
/// assert_eq!(h["PreToolUse"][0]["matcher"], "*");
/// assert_eq!(h["PostCompact"][0]["hooks"][0]["command"], "loopguard hook claude-code");
/// ```
pub fn hooks_object(command: &str) -> Value {
    let mut hooks = serde_json::Map::new();
    for (event, matcher) in EVENTS {
        hooks.insert(event.to_string(), json!([group(command, *matcher)]));
    }
    Value::Object(hooks)
}

/// One group of an event's list: `matcher` (if any) and loopguard's handler.
pub(crate) fn group(command: &str, matcher: Option<&str>) -> Value {
    let mut g = serde_json::Map::new();
    if let Some(m) = matcher {
        g.insert("matcher".into(), json!(m));
    }
    g.insert("hooks".into(), json!([handler(command)]));
    Value::Object(g)
}

/// The file's text (`None`: missing) and its parsed document (`{}` for an empty file).
fn read(path: &Path) -> Result<(Option<String>, Doc), InstallError> {
    let text = file::read(path)?;
    let invalid = |message: String| InstallError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let body = match text.as_deref() {
        None => "{}\n".to_string(),
        Some(t) if t.trim().is_empty() => "{}\n".to_string(),
        Some(t) => {
            match serde_json::from_str::<Value>(t.strip_prefix('\u{feff}').unwrap_or(t)) {
                Ok(Value::Object(_)) => {}
                Ok(_) => return Err(invalid("not a JSON object".into())),
                Err(e) => return Err(invalid(e.to_string())),
            }
            t.to_string()
        }
    };
    let doc = Doc::parse(body).map_err(invalid)?;
    Ok((text, doc))
}

/// The file as it was before loopguard first touched it, parsed (`None` if there is no
/// backup or it is not JSON).
fn original(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(backup_path(path)).ok()?;
    if text.trim().is_empty() {
        return Some(json!({}));
    }
    serde_json::from_str(&text).ok()
}

fn is_ours(doc: &Doc, handler: &Node) -> bool {
    let Some((_, cmd)) = handler.member("command") else {
        return false;
    };
    doc.value(&cmd.value)
        .as_ref()
        .and_then(Value::as_str)
        .is_some_and(is_loopguard_command)
}

/// The next removal: the first loopguard handler that is not to be kept, with the
/// smallest container around it that only held it (a container that was in the file
/// before loopguard first touched it is never removed, only emptied).
fn next_removal(
    doc: &Doc,
    keep: Option<&Value>,
    before: Option<&Value>,
    path: &Path,
) -> Result<Option<Edit>, InstallError> {
    let invalid = |message: String| InstallError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let Some((hooks_index, hooks)) = doc.root.member("hooks") else {
        return Ok(None);
    };
    let hooks = &hooks.value;
    let Some(events) = hooks.members() else {
        return Err(invalid("`hooks` is not an object".into()));
    };
    let existed = |keys: &[&str]| -> bool {
        match before {
            // Without a readable backup, containers that become empty are removed.
            None => false,
            Some(v) => keys.iter().try_fold(v, |v, k| v.get(k)).is_some(),
        }
    };
    for (ei, event) in events.iter().enumerate() {
        let Some(groups) = event.value.items() else {
            if EVENTS.iter().any(|(e, _)| *e == event.key) {
                return Err(invalid(format!("`hooks.{}` is not an array", event.key)));
            }
            continue;
        };
        let wanted = keep.and_then(|want| {
            EVENTS
                .iter()
                .find(|(e, _)| *e == event.key)
                .map(|(_, m)| (want, *m))
        });
        let mut kept = false;
        for (gi, group) in groups.iter().enumerate() {
            let Some((_, handlers)) = group.member("hooks") else {
                continue;
            };
            let Some(list) = handlers.value.items() else {
                continue;
            };
            let matcher = group
                .member("matcher")
                .and_then(|(_, m)| doc.value(&m.value))
                .and_then(|m| m.as_str().map(str::to_string))
                .filter(|m| !m.is_empty());
            for (hi, h) in list.iter().enumerate() {
                if !is_ours(doc, h) {
                    continue;
                }
                let right = wanted.is_some_and(|(want, m)| {
                    doc.value(h).as_ref() == Some(want) && matcher.as_deref() == m
                });
                if right && !kept {
                    kept = true;
                    continue;
                }
                // Remove the handler, or the group / event list / `hooks` that only held it.
                let edit = if list.len() > 1 {
                    doc.remove(&handlers.value, hi)
                } else if groups.len() > 1 || existed(&["hooks", &event.key]) {
                    doc.remove(&event.value, gi)
                } else if events.len() > 1 || existed(&["hooks"]) {
                    doc.remove(hooks, ei)
                } else {
                    doc.remove(&doc.root, hooks_index)
                };
                return Ok(edit);
            }
        }
    }
    Ok(None)
}

/// The next addition: a group for the first event of [`EVENTS`] that lacks one.
fn next_addition(doc: &Doc, want: &Value, command: &str) -> Option<Edit> {
    let Some((_, hooks)) = doc.root.member("hooks") else {
        return Some(doc.append(&doc.root, Some("hooks"), &hooks_object(command)));
    };
    for (event, matcher) in EVENTS {
        let Some((_, list)) = hooks.value.member(event) else {
            return Some(doc.append(
                &hooks.value,
                Some(event),
                &json!([group(command, *matcher)]),
            ));
        };
        let present = list.value.items().is_some_and(|groups| {
            groups.iter().any(|g| {
                let m = g
                    .member("matcher")
                    .and_then(|(_, m)| doc.value(&m.value))
                    .and_then(|m| m.as_str().map(str::to_string))
                    .filter(|m| !m.is_empty());
                m.as_deref() == *matcher
                    && g.member("hooks")
                        .and_then(|(_, h)| h.value.items())
                        .is_some_and(|hs| hs.iter().any(|h| doc.value(h).as_ref() == Some(want)))
            })
        });
        if !present {
            return Some(doc.append(&list.value, None, &group(command, *matcher)));
        }
    }
    None
}

/// Edits until nothing is left to do. Each step removes or adds one thing, so the loop
/// ends; the bound only guards against a bug.
fn edit(path: &Path, mut doc: Doc, command: Option<&str>) -> Result<(Doc, bool), InstallError> {
    let before = original(path);
    let want = command.map(handler);
    for round in 0..10_000 {
        let step = match next_removal(&doc, want.as_ref(), before.as_ref(), path)? {
            Some(e) => Some(e),
            None => match (&want, command) {
                (Some(w), Some(c)) => next_addition(&doc, w, c),
                _ => None,
            },
        };
        let Some(step) = step else {
            return Ok((doc, round > 0));
        };
        doc = doc.apply(&step).map_err(|message| InstallError::Invalid {
            path: path.to_path_buf(),
            message: format!("internal edit error: {message}"),
        })?;
    }
    Err(InstallError::Invalid {
        path: path.to_path_buf(),
        message: "internal edit error: the edits did not converge".into(),
    })
}

/// What loopguard starts from when there is no file, or an empty one.
const EMPTY: &str = "{}\n";

/// `true` for a file loopguard created from nothing: without a backup, and its entries
/// removed, it is the `{}` loopguard started from.
fn created_by_loopguard(path: &Path, text: &str) -> bool {
    if backup_path(path).exists() {
        return false;
    }
    let Ok(doc) = Doc::parse(text.to_string()) else {
        return false;
    };
    matches!(edit(path, doc, None), Ok((stripped, true)) if stripped.text == EMPTY)
}

/// Adds loopguard's hooks with `command` to the settings file at `path` (created if
/// missing). See the module documentation.
pub fn install(path: &Path, command: &str) -> Result<Change, InstallError> {
    let (old, doc) = read(path)?;
    let (doc, changed) = edit(path, doc, Some(command))?;
    if !changed {
        return Ok(Change::Unchanged);
    }
    let backup = old
        .as_deref()
        .filter(|old| !created_by_loopguard(path, old));
    file::write(path, backup, &doc.text)
}

/// Removes loopguard's hooks from the settings file at `path`. A missing file, or one
/// without loopguard's hooks, is left alone.
pub fn uninstall(path: &Path) -> Result<Change, InstallError> {
    let (old, doc) = read(path)?;
    let Some(old) = old else {
        return Ok(Change::Unchanged);
    };
    let created = created_by_loopguard(path, &old);
    let (doc, changed) = edit(path, doc, None)?;
    if !changed {
        return Ok(Change::Unchanged);
    }
    if doc.root.members().is_some_and(<[_]>::is_empty) {
        if created {
            return file::remove(path);
        }
        // The file was empty before loopguard first touched it: empty again.
        if let Ok(b) = std::fs::read_to_string(backup_path(path)) {
            if b.trim().is_empty() {
                return file::write(path, None, &b);
            }
        }
    }
    let backup = (!created).then_some(old.as_str());
    file::write(path, backup, &doc.text)
}

/// `true` when the settings file registers loopguard for every event it needs.
pub fn is_installed(path: &Path) -> Result<bool, InstallError> {
    let (_, doc) = read(path)?;
    let Some((_, hooks)) = doc.root.member("hooks") else {
        return Ok(false);
    };
    Ok(EVENTS.iter().all(|(event, _)| {
        hooks
            .value
            .member(event)
            .and_then(|(_, l)| l.value.items())
            .is_some_and(|groups| {
                groups.iter().any(|g| {
                    g.member("hooks")
                        .and_then(|(_, h)| h.value.items())
                        .is_some_and(|hs| hs.iter().any(|h| is_ours(&doc, h)))
                })
            })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/local/bin/loopguard hook claude-code";

    fn read_json(p: &Path) -> Value {
        let text = std::fs::read_to_string(p).unwrap();
        serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap()
    }

    /// Settings files as people have them.
    const FILES: &[(&str, &str)] = &[
        ("two spaces, no hooks", "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\"Bash(npm test)\"]\n  }\n}\n"),
        ("four spaces, other hooks", "{\n    \"hooks\": {\n        \"PreToolUse\": [\n            {\n                \"matcher\": \"Bash\",\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"guard.sh\"\n                    }\n                ]\n            }\n        ],\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]\n    },\n    \"model\": \"sonnet\"\n}"),
        ("tabs and CRLF", "{\r\n\t\"env\": {\r\n\t\t\"A\": \"1\"\r\n\t},\r\n\t\"hooks\": {\r\n\t\t\"PostToolUse\": [\r\n\t\t\t{\r\n\t\t\t\t\"matcher\": \"Edit|Write\",\r\n\t\t\t\t\"hooks\": [\r\n\t\t\t\t\t{\r\n\t\t\t\t\t\t\"type\": \"command\",\r\n\t\t\t\t\t\t\"command\": \"prettier --write\"\r\n\t\t\t\t\t}\r\n\t\t\t\t]\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}\r\n"),
        ("one line", "{\"model\":\"opus\",\"hooks\":{\"Notification\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"say hi\"}]}]}}"),
        ("empty hooks", "{\n  \"hooks\": {},\n  \"x\": [\n    1,\n    2\n  ]\n}\n"),
        ("empty event list", "{\n  \"hooks\": {\n    \"PreToolUse\": []\n  }\n}\n"),
        ("spaces before colons", "{\n  \"model\" : \"opus\"\n}\n"),
        ("empty object", "{}"),
        ("byte order mark", "\u{feff}{\n  \"model\": \"opus\"\n}\n"),
        ("empty file", ""),
        ("whitespace only", "\n\n"),
    ];

    #[test]
    fn install_reinstall_uninstall_gives_back_every_byte() {
        for (name, original) in FILES {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("settings.json");
            std::fs::write(&path, original).unwrap();
            assert!(
                matches!(install(&path, CMD).unwrap(), Change::Written { .. }),
                "{name}"
            );
            let installed = std::fs::read_to_string(&path).unwrap();
            assert!(is_installed(&path).unwrap(), "{name}");
            // Everything that was there is still there, unchanged.
            let before: Value = if original.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(original.trim_start_matches('\u{feff}')).unwrap()
            };
            let after = read_json(&path);
            for (k, v) in before.as_object().unwrap() {
                if k != "hooks" {
                    assert_eq!(&after[k], v, "{name}: {k}");
                }
            }
            if original.contains("\r\n") {
                assert!(
                    !installed.replace("\r\n", "").contains('\n'),
                    "{name}: {installed}"
                );
            }
            if original.contains('\t') {
                assert!(
                    installed.contains("\n\t\t\"PreToolUse\": [\r\n\t\t\t{"),
                    "{name}: {installed}"
                );
            }
            // Twice: nothing written.
            assert_eq!(install(&path, CMD).unwrap(), Change::Unchanged, "{name}");
            // With other options: the entries are replaced.
            let other = "loopguard hook claude-code --mode observe";
            install(&path, other).unwrap();
            let v = read_json(&path);
            for (event, _) in EVENTS {
                let cmds: Vec<_> = v["hooks"][*event]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|g| g["hooks"].as_array().unwrap().iter())
                    .filter_map(|h| h["command"].as_str())
                    .filter(|c| is_loopguard_command(c))
                    .collect();
                assert_eq!(cmds, [other], "{name}: {event}");
            }
            // The first backup holds the original, whatever happened since.
            assert_eq!(
                std::fs::read_to_string(backup_path(&path)).unwrap(),
                *original,
                "{name}"
            );
            uninstall(&path).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), *original, "{name}");
            assert_eq!(uninstall(&path).unwrap(), Change::Unchanged, "{name}");
        }
    }

    #[test]
    fn a_file_loopguard_created_is_deleted_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        assert_eq!(
            install(&path, CMD).unwrap(),
            Change::Written { backup: None }
        );
        let v = read_json(&path);
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], CMD);
        assert_eq!(v["hooks"]["SessionStart"][0]["matcher"], "compact");
        assert!(v["hooks"]["UserPromptSubmit"][0].get("matcher").is_none());
        assert_eq!(v["hooks"], hooks_object(CMD));
        install(&path, "loopguard hook claude-code").unwrap();
        assert!(!backup_path(&path).exists());
        assert_eq!(uninstall(&path).unwrap(), Change::Removed);
        assert!(!path.exists());
        assert_eq!(uninstall(&path).unwrap(), Change::Unchanged);
    }

    #[test]
    fn the_first_backup_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        install(&path, CMD).unwrap();
        // The user edits the file by hand; loopguard's next write keeps the first backup.
        let edited = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("\"a\": 1", "\"a\": 2", 1);
        std::fs::write(&path, &edited).unwrap();
        install(&path, "loopguard hook claude-code").unwrap();
        assert_eq!(
            std::fs::read_to_string(backup_path(&path)).unwrap(),
            "{\"a\": 1}"
        );
        uninstall(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 2}");
    }

    #[test]
    fn a_loopguard_handler_sharing_a_group_is_removed_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(
            &path,
            format!(r#"{{"hooks":{{"PreToolUse":[{{"matcher":"*","hooks":[{{"type":"command","command":"audit"}},{{"type":"command","command":"{CMD}"}}]}}]}}}}"#),
        )
        .unwrap();
        uninstall(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"audit"}]}]}}"#
        );
    }

    #[test]
    fn entries_of_events_no_longer_used_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        // An install by an earlier loopguard registered PreCompact.
        std::fs::write(
            &path,
            format!("{{\n  \"hooks\": {{\n    \"PreCompact\": [\n      {{\n        \"hooks\": [\n          {{\n            \"type\": \"command\",\n            \"command\": \"{CMD}\"\n          }}\n        ]\n      }}\n    ]\n  }}\n}}\n"),
        )
        .unwrap();
        install(&path, CMD).unwrap();
        let v = read_json(&path);
        assert!(v["hooks"].get("PreCompact").is_none(), "{v}");
        assert!(is_installed(&path).unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_file_is_written_through_the_link_with_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{}\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        install(&link, CMD).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::read_to_string(&real)
            .unwrap()
            .contains("PreToolUse"));
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn invalid_files_are_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for bad in [
            "{ not json",
            r#"{"hooks":[]}"#,
            r#"{"hooks":{"PreToolUse":{}}}"#,
            "[1]",
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(
                matches!(install(&path, CMD), Err(InstallError::Invalid { .. })),
                "{bad}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
        }
        assert!(!backup_path(&path).exists());
    }
}
