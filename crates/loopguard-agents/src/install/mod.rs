//! The one installer of every settings file loopguard edits: `loopguard hook install AGENT`
//! / `uninstall AGENT` (loopguard's hook in each agent's own settings, and out again) and
//! `loopguard mcp install` / `uninstall` ([`mcp`]: the MCP clients' server entries routed
//! through the proxy). Every target shares one [`Change`], one [`InstallError`], one backup
//! rule ([`backup_path`]) and one atomic write.
//!
//! | agent | user file | project file | format | events registered |
//! |-------|-----------|--------------|--------|-------------------|
//! | Claude Code (and VS Code's agent, which runs these hooks) | `~/.claude/settings.json` | `.claude/settings.json` | JSON, `hooks` groups with a `timeout`, edited by [`claude_code`] | `PreToolUse`, `PostToolUse`, `PostToolUseFailure` (matcher `*`), `PostToolBatch`, `UserPromptSubmit`, `PostCompact`, `SessionStart` (matcher `compact`), `SessionEnd` |
//! | Codex | `~/.codex/hooks.json` | `.codex/hooks.json` | Claude Code's `hooks` groups (or, with `--settings …/config.toml`, `[[hooks.EVENT]]` tables) | `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `PostCompact` |
//! | Gemini CLI | `~/.gemini/settings.json` | `.gemini/settings.json` | JSONC, `hooks` groups | `BeforeTool`, `AfterTool`, `BeforeAgent`, `PreCompress`, `SessionEnd` |
//! | Qwen Code | `~/.qwen/settings.json` | `.qwen/settings.json` | JSONC, `hooks` groups | `PreToolUse`, `PostToolUse`, `PostToolUseFailure`, `UserPromptSubmit`, `PostCompact`, `SessionEnd` |
//! | Copilot | `~/.copilot/hooks/loopguard.json` | `.github/hooks/loopguard.json` | `{"version":1,"hooks":{…}}`, `bash` commands | `preToolUse`, `postToolUse`, `postToolUseFailure`, `userPromptSubmitted`, `sessionEnd` |
//! | Cursor | `~/.cursor/hooks.json` | `.cursor/hooks.json` | `{"version":1,"hooks":{…}}` | `preToolUse`, `postToolUse`, `postToolUseFailure`, `beforeSubmitPrompt`, `preCompact` |
//! | Factory | `~/.factory/settings.json` | `.factory/settings.json` | Claude Code's `hooks` groups | `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `PreCompact`, `SessionEnd` |
//! | Cline | `~/Documents/Cline/Rules/Hooks/` | `.clinerules/hooks/` | one executable script per hook | `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `TaskStart`, `TaskResume`, `PreCompact`, `TaskComplete`, `TaskCancel` |
//! | Windsurf | `~/.codeium/windsurf/hooks.json` | `.windsurf/hooks.json` | `{"hooks":{…}}` | `pre_run_command`, `post_run_command`, `pre_mcp_tool_use`, `post_mcp_tool_use`, `pre_user_prompt` |
//! | Kiro CLI | the agent's file (`--settings ~/.kiro/agents/NAME.json`) | | `hooks` of the agent config | `preToolUse`, `postToolUse`, `userPromptSubmit` |
//!
//! **The file stays the user's.** Every file is edited as text, so every byte loopguard
//! does not own stays: Claude Code's `settings.json` through [`claude_code`] (plain JSON;
//! loopguard's handlers are appended in the file's style, and a handler of loopguard sharing
//! a group with the user's is removed alone), the MCP configs through [`mcp`] (each entry's
//! text swapped and restored), Codex's `config.toml` through `toml_edit`. The other agents'
//! JSON (and JSONC: comments, trailing commas) files are edited as text: loopguard's entries are inserted at the front of each event's list as
//! one line each, a missing event list or `hooks` object is inserted at the front of its
//! object in the file's own indentation and line endings, and uninstall removes exactly
//! those bytes again; every other byte (comments, key order, other hooks) is left as it
//! was. Entries are recognised by their command (`loopguard … hook AGENT`), so install
//! twice changes nothing, and install with another command replaces the entry.
//! Containers loopguard created (`hooks`, an event's list) are removed when they become
//! empty; those in the file before loopguard first touched it stay, even empty.
//!
//! One backup rule for every file: before the first write, the file as it was is copied to
//! `FILE.loopguard-backup`, which is never overwritten. Writes replace the
//! file atomically (a temporary file in the same directory renamed over it, with its
//! permissions); a symlinked settings file is written through the link, so the link stays
//! a link. A file loopguard created is deleted again when uninstall leaves nothing else in
//! it.
//!
//! ```
//! use loopguard_agents::install::{install, uninstall, Change};
//! use loopguard_agents::Agent;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("settings.json");
//! let original = "{\n    // my theme\n    \"theme\": \"dark\",\n}\n";
//! std::fs::write(&path, original)?;
//! install(Agent::Gemini, &path, "loopguard hook gemini")?;
//! assert!(std::fs::read_to_string(&path)?.contains("\"BeforeTool\": [{"));
//! assert_eq!(install(Agent::Gemini, &path, "loopguard hook gemini")?, Change::Unchanged);
//! uninstall(Agent::Gemini, &path)?;
//! assert_eq!(std::fs::read_to_string(&path)?, original);
//! # Ok(())
//! # }
//! ```

pub mod claude_code;
mod file;
mod jsonspan;
pub mod mcp;

use std::path::{Path, PathBuf};

use jsonc_parser::ast::{Object, ObjectProp, Value as Ast};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, CommentCollectionStrategy, ParseOptions};
use serde_json::{json, Value};

use crate::Agent;
pub use file::{backup_path, shell_quote, Change, InstallError};
use file::{io, read, write};

/// The settings file (for Cline, the hooks directory) of `agent`: the user's under `home`,
/// or the project's under `project`.
///
/// ```
/// use loopguard_agents::{install::settings_path, Agent};
/// use std::path::Path;
/// let p = settings_path(Agent::Gemini, Some(Path::new("/home/u")), None)?;
/// assert_eq!(p, Path::new("/home/u/.gemini/settings.json"));
/// let p = settings_path(Agent::Copilot, None, Some(Path::new("/src/app")))?;
/// assert_eq!(p, Path::new("/src/app/.github/hooks/loopguard.json"));
/// # Ok::<(), loopguard_agents::install::InstallError>(())
/// ```
pub fn settings_path(
    agent: Agent,
    home: Option<&Path>,
    project: Option<&Path>,
) -> Result<PathBuf, InstallError> {
    let (user, proj): (&str, Option<&str>) = match agent {
        Agent::ClaudeCode => (".claude/settings.json", Some(".claude/settings.json")),
        Agent::Codex => (".codex/hooks.json", Some(".codex/hooks.json")),
        Agent::Gemini => (".gemini/settings.json", Some(".gemini/settings.json")),
        Agent::Qwen => (".qwen/settings.json", Some(".qwen/settings.json")),
        Agent::Copilot => (
            ".copilot/hooks/loopguard.json",
            Some(".github/hooks/loopguard.json"),
        ),
        Agent::Cursor => (".cursor/hooks.json", Some(".cursor/hooks.json")),
        Agent::Factory => (".factory/settings.json", Some(".factory/settings.json")),
        Agent::Cline => ("Documents/Cline/Rules/Hooks", Some(".clinerules/hooks")),
        Agent::Windsurf => (".codeium/windsurf/hooks.json", Some(".windsurf/hooks.json")),
        Agent::Kiro => {
            return Err(InstallError::NoDefault(
                "Kiro CLI keeps hooks in each agent's own file: pass --settings ~/.kiro/agents/NAME.json (or .kiro/agents/NAME.json)".into(),
            ))
        }
    };
    match project {
        Some(p) => Ok(p.join(proj.unwrap_or(user))),
        None => home.map(|h| h.join(user)).ok_or_else(|| {
            InstallError::NoDefault(
                "cannot determine the home directory; pass --settings FILE".into(),
            )
        }),
    }
}

/// The events loopguard registers for `agent`, each with its matcher (`None`: every
/// occurrence).
pub fn events(agent: Agent) -> &'static [(&'static str, Option<&'static str>)] {
    match agent {
        Agent::ClaudeCode => claude_code::EVENTS,
        Agent::Codex => &[
            ("PreToolUse", Some("*")),
            ("PostToolUse", Some("*")),
            ("UserPromptSubmit", None),
            ("PostCompact", None),
        ],
        Agent::Gemini => &[
            ("BeforeTool", None),
            ("AfterTool", None),
            ("BeforeAgent", None),
            ("PreCompress", None),
            ("SessionEnd", None),
        ],
        Agent::Qwen => &[
            ("PreToolUse", None),
            ("PostToolUse", None),
            ("PostToolUseFailure", None),
            ("UserPromptSubmit", None),
            ("PostCompact", None),
            ("SessionEnd", None),
        ],
        Agent::Copilot => &[
            ("preToolUse", None),
            ("postToolUse", None),
            ("postToolUseFailure", None),
            ("userPromptSubmitted", None),
            ("sessionEnd", None),
        ],
        Agent::Cursor => &[
            ("preToolUse", None),
            ("postToolUse", None),
            ("postToolUseFailure", None),
            ("beforeSubmitPrompt", None),
            ("preCompact", None),
        ],
        Agent::Factory => &[
            ("PreToolUse", Some("*")),
            ("PostToolUse", Some("*")),
            ("UserPromptSubmit", None),
            ("PreCompact", None),
            ("SessionEnd", None),
        ],
        Agent::Cline => &[
            ("PreToolUse", None),
            ("PostToolUse", None),
            ("UserPromptSubmit", None),
            ("TaskStart", None),
            ("TaskResume", None),
            ("PreCompact", None),
            ("TaskComplete", None),
            ("TaskCancel", None),
        ],
        Agent::Windsurf => &[
            ("pre_run_command", None),
            ("post_run_command", None),
            ("pre_mcp_tool_use", None),
            ("post_mcp_tool_use", None),
            ("pre_user_prompt", None),
        ],
        Agent::Kiro => &[
            ("preToolUse", Some("*")),
            ("postToolUse", Some("*")),
            ("userPromptSubmit", None),
        ],
    }
}

/// The entry loopguard writes into an event's list for `agent`.
///
/// ```
/// use loopguard_agents::{install::entry, Agent};
/// let e = entry(Agent::Cursor, None, "loopguard hook cursor");
/// assert_eq!(e.to_string(), r#"{"command":"loopguard hook cursor"}"#);
/// let e = entry(Agent::Codex, Some("*"), "loopguard hook codex");
/// assert_eq!(e["hooks"][0]["command"], "loopguard hook codex");
/// ```
pub fn entry(agent: Agent, matcher: Option<&str>, command: &str) -> Value {
    match agent {
        Agent::ClaudeCode => claude_code::group(command, matcher),
        Agent::Copilot => json!({"type": "command", "bash": command, "timeoutSec": 10}),
        Agent::Cursor => json!({ "command": command }),
        Agent::Windsurf => json!({"command": command, "show_output": true}),
        Agent::Kiro => match matcher {
            Some(m) => json!({"matcher": m, "command": command}),
            None => json!({ "command": command }),
        },
        _ => {
            let handler = json!({"type": "command", "command": command});
            match matcher {
                Some(m) => json!({"matcher": m, "hooks": [handler]}),
                None => json!({ "hooks": [handler] }),
            }
        }
    }
}

/// `true` when `text` (an entry's source) runs loopguard's hook for `agent`.
pub fn is_loopguard_entry(agent: Agent, text: &str) -> bool {
    text.contains("loopguard") && text.contains(&format!("hook {}", agent.as_str()))
}

/// Adds loopguard's hook, running `command`, to `agent`'s settings at `path` (for Cline,
/// the hooks directory). Installing again with the same command changes nothing; with
/// another, the entries are replaced.
pub fn install(agent: Agent, path: &Path, command: &str) -> Result<Change, InstallError> {
    if agent == Agent::ClaudeCode {
        return claude_code::install(path, command);
    }
    if agent == Agent::Cline {
        return cline_install(path, command);
    }
    if agent == Agent::Codex && is_toml(path) {
        return toml_install(path, command);
    }
    let old = read(path)?;
    let base = match &old {
        Some(t) => remove_entries(agent, path, t, backup_text(path).as_deref())?,
        None => String::new(),
    };
    let new = add_entries(agent, path, &base, command)?;
    if old.as_deref() == Some(new.as_str()) {
        return Ok(Change::Unchanged);
    }
    // The backup keeps the file as it was before loopguard: a file that already holds
    // loopguard's entries (one it created) is not backed up.
    let pristine = old.as_deref().filter(|o| *o == base);
    write(path, pristine, &new)
}

/// Removes loopguard's hook from `agent`'s settings at `path`.
pub fn uninstall(agent: Agent, path: &Path) -> Result<Change, InstallError> {
    if agent == Agent::ClaudeCode {
        return claude_code::uninstall(path);
    }
    if agent == Agent::Cline {
        return cline_uninstall(path);
    }
    if agent == Agent::Codex && is_toml(path) {
        return toml_uninstall(path);
    }
    let Some(old) = read(path)? else {
        return Ok(Change::Unchanged);
    };
    let backup = backup_text(path);
    let new = remove_entries(agent, path, &old, backup.as_deref())?;
    if new == old {
        return Ok(Change::Unchanged);
    }
    let created = !backup_path(path).exists();
    if created && is_empty_doc(path, &new)? {
        return file::remove(path);
    }
    write(path, Some(&old), &new)
}

/// `true` when `agent`'s settings at `path` (for Cline, the hooks directory) hold
/// loopguard's hook: what `uninstall` would remove. A missing file holds none.
///
/// ```
/// use loopguard_agents::{install, Agent};
/// let dir = std::env::temp_dir().join(format!("lg-doc-installed-{}", std::process::id()));
/// let path = dir.join("hooks.json");
/// assert!(!install::is_installed(Agent::Codex, &path)?);
/// install::install(Agent::Codex, &path, "loopguard hook codex")?;
/// assert!(install::is_installed(Agent::Codex, &path)?);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), install::InstallError>(())
/// ```
pub fn is_installed(agent: Agent, path: &Path) -> Result<bool, InstallError> {
    if agent == Agent::ClaudeCode {
        return claude_code::is_installed(path);
    }
    if agent == Agent::Cline {
        for (event, _) in events(Agent::Cline) {
            if let Some(t) = read(&path.join(event))? {
                if is_loopguard_entry(Agent::Cline, &t) {
                    return Ok(true);
                }
            }
        }
        return Ok(false);
    }
    let Some(text) = read(path)? else {
        return Ok(false);
    };
    let rest = if agent == Agent::Codex && is_toml(path) {
        toml_remove(path, &text)?
    } else {
        remove_entries(agent, path, &text, backup_text(path).as_deref())?
    };
    Ok(rest != text)
}

/// The command of loopguard's hook in `agent`'s settings at `path` (for Cline, the hooks
/// directory), read back as the agent will run it: its first pre-tool entry's. `None` when
/// no loopguard hook is installed there.
///
/// ```
/// use loopguard_agents::{install, Agent};
/// let dir = std::env::temp_dir().join(format!("lg-doc-command-{}", std::process::id()));
/// let path = dir.join("settings.json");
/// assert_eq!(install::installed_command(Agent::Gemini, &path)?, None);
/// install::install(Agent::Gemini, &path, "loopguard hook gemini --agent main")?;
/// let cmd = install::installed_command(Agent::Gemini, &path)?;
/// assert_eq!(cmd.as_deref(), Some("loopguard hook gemini --agent main"));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), install::InstallError>(())
/// ```
pub fn installed_command(agent: Agent, path: &Path) -> Result<Option<String>, InstallError> {
    let pre = events(agent)[0].0;
    if agent == Agent::Cline {
        let Some(script) = read(&path.join(pre))? else {
            return Ok(None);
        };
        return Ok(script
            .lines()
            .find_map(|l| l.strip_prefix("exec "))
            .filter(|c| is_loopguard_entry(agent, c))
            .map(str::to_string));
    }
    let Some(text) = read(path)? else {
        return Ok(None);
    };
    if agent == Agent::Codex && is_toml(path) {
        let doc = toml_doc(path, &text)?;
        return Ok(doc
            .get("hooks")
            .and_then(|h| h.get(pre))
            .and_then(|e| e.as_array_of_tables())
            .and_then(|groups| groups.iter().find_map(toml_command))
            .map(str::to_string));
    }
    let Some(root) = parse(path, &text)? else {
        return Ok(None);
    };
    // Every agent's entries sit under `hooks.EVENT`, the command in a `command` (Copilot:
    // `bash`) string somewhere inside.
    let list = prop(&root, "hooks")
        .and_then(|h| h.value.as_object())
        .and_then(|h| prop(h, pre));
    let mut found = None;
    if let Some(list) = list {
        find_command(agent, &list.value, &mut found);
    }
    Ok(found)
}

fn find_command(agent: Agent, v: &Ast<'_>, found: &mut Option<String>) {
    if found.is_some() {
        return;
    }
    match v {
        Ast::Object(o) => {
            for p in &o.properties {
                match (&p.value, p.name.as_str()) {
                    (Ast::StringLit(s), "command" | "bash")
                        if is_loopguard_entry(agent, s.value.as_ref()) =>
                    {
                        *found = Some(s.value.to_string());
                        return;
                    }
                    (other, _) => find_command(agent, other, found),
                }
            }
        }
        Ast::Array(a) => {
            for e in &a.elements {
                find_command(agent, e, found);
            }
        }
        _ => {}
    }
}

fn backup_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(backup_path(path)).ok()
}

fn parse<'a>(path: &Path, text: &'a str) -> Result<Option<Object<'a>>, InstallError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match parse_jsonc(path, text)? {
        Some(Ast::Object(o)) => Ok(Some(o)),
        None => Ok(None),
        Some(_) => Err(InstallError::Invalid {
            path: path.to_path_buf(),
            message: "the top level is not a JSON object".into(),
        }),
    }
}

/// Parses a settings file as the editors and agents read theirs: JSON with comments and
/// trailing commas, nothing looser. The error names the file.
pub(crate) fn parse_jsonc<'a>(path: &Path, text: &'a str) -> Result<Option<Ast<'a>>, InstallError> {
    let collect = CollectOptions {
        comments: CommentCollectionStrategy::Off,
        tokens: false,
    };
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        ..ParseOptions::default()
    };
    let parsed = jsonc_parser::parse_to_ast(text, &collect, &options).map_err(|e| {
        InstallError::Invalid {
            path: path.to_path_buf(),
            message: format!("not valid JSON(C): {e}"),
        }
    })?;
    Ok(parsed.value)
}

fn prop<'o, 'a>(o: &'o Object<'a>, name: &str) -> Option<&'o ObjectProp<'a>> {
    o.properties.iter().find(|p| p.name.as_str() == name)
}

/// The file's line ending and indentation unit (from its first indented line).
fn style(text: &str) -> (&'static str, String) {
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .find_map(|l| {
            let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            (!ws.is_empty() && ws.len() < l.len()).then_some(ws)
        })
        .unwrap_or_else(|| "  ".to_string());
    (nl, unit)
}

/// The indentation of the line `pos` is on.
fn line_indent(text: &str, pos: usize) -> String {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

fn entry_line(agent: Agent, matcher: Option<&str>, command: &str) -> String {
    entry(agent, matcher, command).to_string()
}

fn add_entries(
    agent: Agent,
    path: &Path,
    text: &str,
    command: &str,
) -> Result<String, InstallError> {
    let (nl, unit) = style(text);
    let invalid = |message: String| InstallError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let Some(root) = parse(path, text)? else {
        // A new file.
        let mut hooks = serde_json::Map::new();
        for (event, matcher) in events(agent) {
            hooks.insert(event.to_string(), json!([entry(agent, *matcher, command)]));
        }
        let doc = match agent {
            Agent::Copilot | Agent::Cursor => json!({"version": 1, "hooks": hooks}),
            _ => json!({ "hooks": hooks }),
        };
        let body = render_object(&doc, nl, &unit, "");
        return Ok(format!("{body}{nl}"));
    };
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let root_indent = line_indent(text, root.range.start);
    match prop(&root, "hooks") {
        None => {
            let ind = format!("{root_indent}{unit}");
            let mut lines = Vec::new();
            for (event, matcher) in events(agent) {
                lines.push(format!(
                    "{ind}{unit}{}: [{}]",
                    json!(event),
                    entry_line(agent, *matcher, command)
                ));
            }
            let hooks = format!(
                "\"hooks\": {{{nl}{}{nl}{ind}}}",
                lines.join(&format!(",{nl}"))
            );
            inserts.push(object_insert(text, &root, &ind, nl, &root_indent, &hooks));
        }
        Some(h) => {
            let Ast::Object(hooks) = &h.value else {
                return Err(invalid("`hooks` is not an object".into()));
            };
            let hooks_indent = line_indent(text, h.range.start);
            let ind = format!("{hooks_indent}{unit}");
            let mut missing = Vec::new();
            for (event, matcher) in events(agent) {
                let line = entry_line(agent, *matcher, command);
                match prop(hooks, event) {
                    None => missing.push(format!("{}: [{line}]", json!(event))),
                    Some(p) => {
                        let Ast::Array(a) = &p.value else {
                            return Err(invalid(format!("`hooks.{event}` is not a list")));
                        };
                        let at = a.range.start + 1;
                        if a.elements.is_empty() {
                            inserts.push((at, line));
                        } else {
                            inserts.push((at, format!("{line},")));
                        }
                    }
                }
            }
            if !missing.is_empty() {
                let joined = missing.join(&format!(",{nl}{ind}"));
                inserts.push(object_insert(text, hooks, &ind, nl, &hooks_indent, &joined));
            }
        }
    }
    let mut out = text.to_string();
    inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    for (at, s) in inserts {
        out.insert_str(at, &s);
    }
    Ok(out)
}

/// Text inserting `member` (one or more `"key": value` separated by `,` + newline) at the
/// front of object `o`.
fn object_insert(
    text: &str,
    o: &Object<'_>,
    ind: &str,
    nl: &str,
    closing_indent: &str,
    member: &str,
) -> (usize, String) {
    let at = o.range.start + 1;
    if o.properties.is_empty() {
        let inner = &text[at..o.range.end - 1];
        if inner.trim().is_empty() && inner.is_empty() {
            return (at, format!("{nl}{ind}{member}{nl}{closing_indent}"));
        }
        return (at, format!("{nl}{ind}{member}"));
    }
    (at, format!("{nl}{ind}{member},"))
}

fn render_object(v: &Value, nl: &str, unit: &str, indent: &str) -> String {
    match v {
        Value::Object(o) => {
            let inner = format!("{indent}{unit}");
            let members: Vec<String> = o
                .iter()
                .map(|(k, v)| {
                    let value = match v {
                        Value::Object(_) => render_object(v, nl, unit, &inner),
                        Value::Array(items) => format!(
                            "[{}]",
                            items
                                .iter()
                                .map(Value::to_string)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        other => other.to_string(),
                    };
                    format!("{inner}{}: {value}", json!(k))
                })
                .collect();
            format!("{{{nl}{}{nl}{indent}}}", members.join(&format!(",{nl}")))
        }
        other => other.to_string(),
    }
}

/// Position just after the `,` following `end` (skipping whitespace), if there is one.
fn comma_after(text: &str, end: usize) -> Option<usize> {
    let rest = &text[end..];
    let skipped = rest.len() - rest.trim_start().len();
    rest[skipped..]
        .starts_with(',')
        .then_some(end + skipped + 1)
}

fn remove_entries(
    agent: Agent,
    path: &Path,
    text: &str,
    backup: Option<&str>,
) -> Result<String, InstallError> {
    let Some(root) = parse(path, text)? else {
        return Ok(text.to_string());
    };
    let Some(h) = prop(&root, "hooks") else {
        return Ok(text.to_string());
    };
    let Ast::Object(hooks) = &h.value else {
        return Ok(text.to_string());
    };
    // Which containers were there before loopguard first touched the file.
    let before: Option<(bool, Vec<String>)> = backup.and_then(|b| {
        let root = parse(path, b).ok().flatten()?;
        let events = match prop(&root, "hooks").map(|p| &p.value) {
            Some(Ast::Object(o)) => o
                .properties
                .iter()
                .map(|p| p.name.as_str().to_string())
                .collect(),
            _ => Vec::new(),
        };
        Some((prop(&root, "hooks").is_some(), events))
    });
    let kept_event = |e: &str| {
        before
            .as_ref()
            .is_some_and(|(_, ev)| ev.iter().any(|x| x == e))
    };
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut emptied_props = Vec::new();
    for p in &hooks.properties {
        let Ast::Array(a) = &p.value else { continue };
        let ours: Vec<bool> = a
            .elements
            .iter()
            .map(|e| {
                let r = e.range();
                is_loopguard_entry(agent, &text[r.start..r.end])
            })
            .collect();
        if !ours.iter().any(|o| *o) {
            continue;
        }
        if ours.iter().all(|o| *o) && !kept_event(p.name.as_str()) {
            emptied_props.push(p);
            continue;
        }
        if ours.iter().all(|o| *o) {
            // A list that was there before: back to `[]`.
            cuts.push((a.range.start + 1, a.range.end - 1));
            continue;
        }
        for (i, e) in a.elements.iter().enumerate() {
            if !ours[i] {
                continue;
            }
            let r = e.range();
            let cut = if i + 1 < a.elements.len() {
                (r.start, comma_after(text, r.end).unwrap_or(r.end))
            } else {
                // The last element, after one that is not loopguard's.
                (a.elements[i - 1].range().end, r.end)
            };
            cuts.push(cut);
        }
    }
    let remaining = hooks.properties.len() - emptied_props.len();
    if remaining == 0 && !emptied_props.is_empty() {
        if before.as_ref().is_some_and(|(had, _)| *had) {
            // `hooks` was there before: back to `{}`.
            cuts.push((hooks.range.start + 1, hooks.range.end - 1));
        } else {
            cuts.push(prop_cut(text, &root, h));
        }
    } else {
        for p in emptied_props {
            cuts.push(prop_cut(text, hooks, p));
        }
    }
    let mut out = text.to_string();
    cuts.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (a, b) in cuts {
        out.replace_range(a..b, "");
    }
    Ok(out)
}

/// The range removing property `p` of object `o` as [`object_insert`] added it.
fn prop_cut(text: &str, o: &Object<'_>, p: &ObjectProp<'_>) -> (usize, usize) {
    let idx = o
        .properties
        .iter()
        .position(|q| q.range.start == p.range.start)
        .unwrap_or(0);
    let start = if idx == 0 {
        o.range.start + 1
    } else {
        // After the previous property's comma.
        let prev = &o.properties[idx - 1];
        comma_after(text, prev.range.end).unwrap_or(prev.range.end)
    };
    if idx + 1 < o.properties.len() {
        (start, comma_after(text, p.range.end).unwrap_or(p.range.end))
    } else if idx == 0 {
        // The only property: the object goes back to `{}`.
        (o.range.start + 1, o.range.end - 1)
    } else {
        let prev = &o.properties[idx - 1];
        (prev.range.end, p.range.end)
    }
}

/// `true` when nothing but format versions is left in a file loopguard created: `version`
/// (Copilot's and Cursor's, written by loopguard) and `$version`, which Qwen Code adds to
/// a settings file that lacks it the first time it runs.
fn is_empty_doc(path: &Path, text: &str) -> Result<bool, InstallError> {
    Ok(match parse(path, text)? {
        None => true,
        Some(root) => root
            .properties
            .iter()
            .all(|p| matches!(p.name.as_str(), "version" | "$version")),
    })
}

fn cline_script(command: &str) -> String {
    format!("#!/bin/sh\n# loopguard: tool-call loop protection (loopguard hook uninstall cline removes this file)\nexec {command}\n")
}

fn cline_install(dir: &Path, command: &str) -> Result<Change, InstallError> {
    let mut changed = false;
    for (event, _) in events(Agent::Cline) {
        let file = dir.join(event);
        let want = cline_script(command);
        match read(&file)? {
            Some(t) if t == want => continue,
            Some(t) if !is_loopguard_entry(Agent::Cline, &t) => {
                return Err(InstallError::Invalid {
                    path: file,
                    message: "a hook script that is not loopguard's is already there (Cline runs one script per hook): add `loopguard hook cline` to it by hand".into(),
                })
            }
            _ => {}
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        std::fs::write(&file, want).map_err(io(&file))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))
                .map_err(io(&file))?;
        }
        changed = true;
    }
    Ok(if changed {
        Change::Written { backup: None }
    } else {
        Change::Unchanged
    })
}

fn cline_uninstall(dir: &Path) -> Result<Change, InstallError> {
    let mut removed = false;
    for (event, _) in events(Agent::Cline) {
        let file = dir.join(event);
        if let Some(t) = read(&file)? {
            if t.starts_with("#!/bin/sh\n# loopguard:") && is_loopguard_entry(Agent::Cline, &t) {
                std::fs::remove_file(&file).map_err(io(&file))?;
                removed = true;
            }
        }
    }
    Ok(if removed {
        Change::Removed
    } else {
        Change::Unchanged
    })
}

/// `true` for a Codex `config.toml` (hooks under `[hooks]` as TOML arrays of tables),
/// rather than `hooks.json`.
fn is_toml(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
}

/// Codex's `config.toml`: loopguard's groups are appended to `[[hooks.EVENT]]` (each with
/// its `[[hooks.EVENT.hooks]]` handler) and removed again; the rest of the file (comments,
/// other tables, their order) is kept by `toml_edit`.
fn toml_install(path: &Path, command: &str) -> Result<Change, InstallError> {
    let old = read(path)?;
    if let Some(o) = &old {
        if toml_has(path, o, command)? {
            return Ok(Change::Unchanged);
        }
    }
    let base = match &old {
        Some(t) => toml_remove(path, t)?,
        None => String::new(),
    };
    let mut doc = toml_doc(path, &base)?;
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| InstallError::Invalid {
            path: path.to_path_buf(),
            message: "`hooks` is not a table".into(),
        })?;
    for (event, matcher) in events(Agent::Codex) {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()))
            .as_array_of_tables_mut()
            .ok_or_else(|| InstallError::Invalid {
                path: path.to_path_buf(),
                message: format!("`hooks.{event}` is not an array of tables"),
            })?;
        let mut group = toml_edit::Table::new();
        if let Some(m) = matcher {
            group.insert("matcher", toml_edit::value(*m));
        }
        let mut handler = toml_edit::Table::new();
        handler.insert("type", toml_edit::value("command"));
        handler.insert("command", toml_edit::value(command));
        let mut handlers = toml_edit::ArrayOfTables::new();
        handlers.push(handler);
        group.insert("hooks", toml_edit::Item::ArrayOfTables(handlers));
        groups.push(group);
    }
    let new = doc.to_string();
    if old.as_deref() == Some(new.as_str()) {
        return Ok(Change::Unchanged);
    }
    let pristine = old.as_deref().filter(|o| *o == base);
    write(path, pristine, &new)
}

/// `true` when every event has exactly one loopguard group, running `command`.
fn toml_has(path: &Path, text: &str, command: &str) -> Result<bool, InstallError> {
    let doc = toml_doc(path, text)?;
    let want = toml_edit::value(command).to_string();
    Ok(events(Agent::Codex).iter().all(|(event, _)| {
        let Some(groups) = doc
            .get("hooks")
            .and_then(|h| h.get(event))
            .and_then(|g| g.as_array_of_tables())
        else {
            return false;
        };
        let ours: Vec<_> = groups.iter().filter_map(toml_command).collect();
        ours == [command] && !want.is_empty()
    }))
}

/// The loopguard command of a `[[hooks.EVENT]]` group, if it runs one.
fn toml_command(group: &toml_edit::Table) -> Option<&str> {
    group
        .get("hooks")?
        .as_array_of_tables()?
        .iter()
        .filter_map(|h| h.get("command").and_then(|c| c.as_str()))
        .find(|c| is_loopguard_entry(Agent::Codex, c))
}

fn toml_uninstall(path: &Path) -> Result<Change, InstallError> {
    let Some(old) = read(path)? else {
        return Ok(Change::Unchanged);
    };
    let new = toml_remove(path, &old)?;
    if new == old {
        return Ok(Change::Unchanged);
    }
    if !backup_path(path).exists() && new.trim().is_empty() {
        return file::remove(path);
    }
    write(path, Some(&old), &new)
}

fn toml_doc(path: &Path, text: &str) -> Result<toml_edit::DocumentMut, InstallError> {
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|e| InstallError::Invalid {
            path: path.to_path_buf(),
            message: format!("not valid TOML: {e}"),
        })
}

fn toml_remove(path: &Path, text: &str) -> Result<String, InstallError> {
    let mut doc = toml_doc(path, text)?;
    let Some(hooks) = doc.get_mut("hooks").and_then(|h| h.as_table_mut()) else {
        return Ok(text.to_string());
    };
    let mut changed = false;
    let mut emptied = Vec::new();
    for (event, item) in hooks.iter_mut() {
        let Some(groups) = item.as_array_of_tables_mut() else {
            continue;
        };
        let before = groups.len();
        groups.retain(|g| toml_command(g).is_none());
        if groups.len() != before {
            changed = true;
            if groups.is_empty() {
                emptied.push(event.to_string());
            }
        }
    }
    if !changed {
        return Ok(text.to_string());
    }
    for e in emptied {
        hooks.remove(&e);
    }
    if hooks.is_empty() && hooks.is_implicit() {
        doc.remove("hooks");
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `loopguard doctor` runs what `installed_command` reads back: for every agent's file
    /// shape (JSON groups, Copilot's `bash`, Cline's scripts, Codex's TOML) it is exactly the
    /// command installed, and an uninstalled file has none.
    #[test]
    fn installed_command_reads_back_every_shape() {
        let dir = std::env::temp_dir().join(format!("lg-installed-cmd-{}", std::process::id()));
        for &agent in crate::AGENTS {
            let path = dir.join(agent.as_str()).join("settings.json");
            let command = format!("/opt/lg/loopguard hook {agent} --agent main");
            install(agent, &path, &command).unwrap();
            assert_eq!(
                installed_command(agent, &path).unwrap().as_deref(),
                Some(command.as_str()),
                "{agent}"
            );
            uninstall(agent, &path).unwrap();
            assert_eq!(installed_command(agent, &path).unwrap(), None, "{agent}");
        }
        let toml = dir.join("config.toml");
        install(Agent::Codex, &toml, "loopguard hook codex").unwrap();
        assert_eq!(
            installed_command(Agent::Codex, &toml).unwrap().as_deref(),
            Some("loopguard hook codex")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
