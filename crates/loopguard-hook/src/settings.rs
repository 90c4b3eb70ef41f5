//! Adding loopguard to Claude Code's `settings.json`, and taking it out again.
//!
//! [`install`] registers one command hook, `… hook claude-code`, for the events loopguard
//! needs:
//!
//! | event | matcher |
//! |-------|---------|
//! | `PreToolUse`, `PostToolUse`, `PostToolUseFailure` | `*` (every tool) |
//! | `UserPromptSubmit`, `PreCompact` | none |
//! | `SessionStart` | `compact` |
//!
//! It merges with what is there: other keys, other events and other hooks are left as they
//! are, in their order; loopguard's own entries are recognised by their command
//! (`loopguard` … `hook claude-code`), kept where they are when they are already right,
//! and replaced when their command changed. A second install changes nothing and writes
//! nothing. Before any write the previous file is copied to `settings.json.loopguard.bak`,
//! and the new file replaces the old one atomically. [`uninstall`] removes exactly
//! loopguard's entries (and the groups and event lists that only held them).
//!
//! ```
//! use loopguard_hook::settings::{install, uninstall, Change};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join(".claude/settings.json");
//! std::fs::create_dir_all(path.parent().unwrap()).unwrap();
//! std::fs::write(&path, r#"{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}]}}"#).unwrap();
//! assert!(matches!(install(&path, "/usr/bin/loopguard hook claude-code").unwrap(), Change::Written { .. }));
//! assert_eq!(install(&path, "/usr/bin/loopguard hook claude-code").unwrap(), Change::Unchanged);
//! uninstall(&path).unwrap();
//! let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
//! assert_eq!(v, serde_json::json!({"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}]}}));
//! ```

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The events and matchers loopguard registers.
pub const EVENTS: &[(&str, Option<&str>)] = &[
    ("PreToolUse", Some("*")),
    ("PostToolUse", Some("*")),
    ("PostToolUseFailure", Some("*")),
    ("UserPromptSubmit", None),
    ("PreCompact", None),
    ("SessionStart", Some("compact")),
];

/// Seconds Claude Code waits for the hook before giving up on it.
pub const HOOK_TIMEOUT_S: u64 = 10;

/// What a change did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The file already said what it should; nothing was written.
    Unchanged,
    /// The file was written; the previous content, if any, is in `backup`.
    Written {
        /// The backup of the previous file.
        backup: Option<PathBuf>,
    },
}

/// Why a settings file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a JSON object (left untouched).
    #[error("{} is not valid settings JSON ({message}); fix it by hand, it was left untouched", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// `true` for a command that runs loopguard's Claude Code hook.
///
/// ```
/// use loopguard_hook::settings::is_loopguard_command;
/// assert!(is_loopguard_command("'/opt/my tools/loopguard' hook claude-code --state /x"));
/// assert!(!is_loopguard_command("prettier --write"));
/// ```
pub fn is_loopguard_command(cmd: &str) -> bool {
    cmd.contains("loopguard") && cmd.contains("hook claude-code")
}

/// Quotes a word for the shell that Claude Code runs hook commands with.
///
/// ```
/// use loopguard_hook::settings::shell_quote;
/// assert_eq!(shell_quote("/usr/bin/loopguard"), "/usr/bin/loopguard");
/// assert_eq!(shell_quote("/opt/my tools/it's"), r"'/opt/my tools/it'\''s'");
/// ```
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn read(path: &Path) -> Result<(Option<String>, Map<String, Value>), SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => {
            return Err(SettingsError::Io {
                path: path.to_path_buf(),
                source: e,
            })
        }
    };
    if text.trim().is_empty() {
        return Ok((Some(text), Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok((Some(text), m)),
        Ok(_) => Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            message: "not a JSON object".into(),
        }),
        Err(e) => Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

fn write(
    path: &Path,
    old: Option<&str>,
    doc: &Map<String, Value>,
) -> Result<Change, SettingsError> {
    let io = |e| SettingsError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| SettingsError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let backup = match old {
        Some(old) => {
            let b = backup_path(path);
            std::fs::write(&b, old).map_err(io)?;
            Some(b)
        }
        None => None,
    };
    let tmp = path.with_extension("json.loopguard.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(Change::Written { backup })
}

/// Where the previous version of a settings file is kept.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".loopguard.bak");
    path.with_file_name(name)
}

fn handler(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S})
}

fn is_ours(h: &Value) -> bool {
    h.get("command")
        .and_then(Value::as_str)
        .is_some_and(is_loopguard_command)
}

/// Removes loopguard's handlers from one event's list, keeping the first one that is
/// exactly `keep` (command and matcher). Returns whether such a handler was kept.
fn strip_event(groups: &mut Vec<Value>, keep: Option<(&Value, Option<&str>)>) -> bool {
    let mut kept = false;
    for group in groups.iter_mut() {
        let matcher = group
            .get("matcher")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        hooks.retain(|h| {
            if !is_ours(h) {
                return true;
            }
            let wanted = keep.is_some_and(|(want, m)| {
                h == want && matcher.as_deref().filter(|s| !s.is_empty()) == m
            });
            if wanted && !kept {
                kept = true;
                return true;
            }
            false
        });
    }
    // Drop groups that only held loopguard's handlers.
    groups.retain(|g| match g.get("hooks").and_then(Value::as_array) {
        Some(h) => !h.is_empty(),
        None => true,
    });
    kept
}

/// Adds loopguard's hooks with `command` to the settings file at `path` (created if
/// missing). See the module documentation.
pub fn install(path: &Path, command: &str) -> Result<Change, SettingsError> {
    let (old, mut doc) = read(path)?;
    let before = Value::Object(doc.clone());
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        return Err(SettingsError::Invalid {
            path: path.to_path_buf(),
            message: "`hooks` is not an object".into(),
        });
    }
    let Some(hooks) = hooks.as_object_mut() else {
        return Ok(Change::Unchanged);
    };
    let want = handler(command);
    // Entries under events loopguard no longer uses go.
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        if EVENTS.iter().any(|(e, _)| e == event) {
            continue;
        }
        if let Some(list) = groups.as_array_mut() {
            let had = !list.is_empty();
            strip_event(list, None);
            if had && list.is_empty() {
                emptied.push(event.clone());
            }
        }
    }
    for e in emptied {
        hooks.shift_remove(&e);
    }
    for (event, matcher) in EVENTS {
        let list = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(groups) = list.as_array_mut() else {
            return Err(SettingsError::Invalid {
                path: path.to_path_buf(),
                message: format!("`hooks.{event}` is not an array"),
            });
        };
        if !strip_event(groups, Some((&want, *matcher))) {
            let mut group = Map::new();
            if let Some(m) = matcher {
                group.insert("matcher".into(), json!(m));
            }
            group.insert("hooks".into(), json!([want.clone()]));
            groups.push(Value::Object(group));
        }
    }
    if Value::Object(doc.clone()) == before && old.is_some() {
        return Ok(Change::Unchanged);
    }
    write(path, old.as_deref(), &doc)
}

/// Removes loopguard's hooks from the settings file at `path`. A missing file, or one
/// without loopguard's hooks, is left alone.
pub fn uninstall(path: &Path) -> Result<Change, SettingsError> {
    let (old, mut doc) = read(path)?;
    if old.is_none() {
        return Ok(Change::Unchanged);
    }
    let before = Value::Object(doc.clone());
    if let Some(hooks) = doc.get_mut("hooks").and_then(Value::as_object_mut) {
        let mut emptied = Vec::new();
        for (event, groups) in hooks.iter_mut() {
            if let Some(list) = groups.as_array_mut() {
                let had = !list.is_empty();
                strip_event(list, None);
                if had && list.is_empty() {
                    emptied.push(event.clone());
                }
            }
        }
        for e in emptied {
            hooks.shift_remove(&e);
        }
        if hooks.is_empty() {
            doc.shift_remove("hooks");
        }
    }
    if Value::Object(doc.clone()) == before {
        return Ok(Change::Unchanged);
    }
    write(path, old.as_deref(), &doc)
}

/// `true` when the settings file registers loopguard for every event it needs.
pub fn is_installed(path: &Path) -> Result<bool, SettingsError> {
    let (_, doc) = read(path)?;
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return Ok(false);
    };
    Ok(EVENTS.iter().all(|(event, _)| {
        hooks
            .get(*event)
            .and_then(Value::as_array)
            .is_some_and(|groups| {
                groups.iter().any(|g| {
                    g.get("hooks")
                        .and_then(Value::as_array)
                        .is_some_and(|hs| hs.iter().any(is_ours))
                })
            })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/local/bin/loopguard hook claude-code";

    fn read_json(p: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    #[test]
    fn install_into_a_missing_file_then_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        assert_eq!(
            install(&path, CMD).unwrap(),
            Change::Written { backup: None }
        );
        assert!(is_installed(&path).unwrap());
        let v = read_json(&path);
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], CMD);
        assert_eq!(v["hooks"]["SessionStart"][0]["matcher"], "compact");
        assert!(v["hooks"]["UserPromptSubmit"][0].get("matcher").is_none());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(install(&path, CMD).unwrap(), Change::Unchanged);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(!backup_path(&path).exists());
    }

    #[test]
    fn other_hooks_and_keys_are_kept_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let original = r#"{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
    ],
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  },
  "model": "sonnet"
}
"#;
        std::fs::write(&path, original).unwrap();
        let change = install(&path, CMD).unwrap();
        assert_eq!(
            change,
            Change::Written {
                backup: Some(backup_path(&path))
            }
        );
        assert_eq!(
            std::fs::read_to_string(backup_path(&path)).unwrap(),
            original
        );
        let v = read_json(&path);
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["permissions", "hooks", "model"]);
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "guard.sh"
        );
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["command"], CMD);
        assert_eq!(
            v["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "prettier --write"
        );
        // Uninstall restores the original document.
        uninstall(&path).unwrap();
        assert_eq!(
            read_json(&path),
            serde_json::from_str::<Value>(original).unwrap()
        );
        assert_eq!(uninstall(&path).unwrap(), Change::Unchanged);
    }

    #[test]
    fn a_changed_command_replaces_the_old_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        install(&path, "/old/loopguard hook claude-code").unwrap();
        install(&path, CMD).unwrap();
        let v = read_json(&path);
        for (event, _) in EVENTS {
            let groups = v["hooks"][*event].as_array().unwrap();
            assert_eq!(groups.len(), 1, "{event}");
            assert_eq!(groups[0]["hooks"][0]["command"], CMD);
        }
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
            read_json(&path),
            json!({"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"audit"}]}]}})
        );
    }

    #[test]
    fn invalid_files_are_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(matches!(
            install(&path, CMD),
            Err(SettingsError::Invalid { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
        std::fs::write(&path, r#"{"hooks":[]}"#).unwrap();
        assert!(install(&path, CMD).is_err());
        std::fs::write(&path, r#"{"hooks":{"PreToolUse":{}}}"#).unwrap();
        assert!(install(&path, CMD).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"hooks":{"PreToolUse":{}}}"#
        );
    }
}
