//! `loopguard mcp install` / `uninstall`: route each server entry of a client's MCP config
//! through loopguard, editing only the text of the entries.
//!
//! The file is read with a JSONC parser that reports byte ranges (so VS Code's comments and
//! trailing commas are fine), and each entry's value is replaced in place; every other byte
//! of the file stays. The text each entry had, and the text it was given, are kept next to
//! the config (`<config>.loopguard-mcp.json`), so `uninstall` puts back exactly what was
//! there, entry by entry, and leaves alone an entry edited since. The file is written with
//! the installers' one backup rule and atomic write ([`super::backup_path`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use jsonc_parser::ast::{Object, ObjectProp, Value};
use jsonc_parser::common::Ranged;
use serde::{Deserialize, Serialize};

use super::file::{self, io, Change, InstallError};

/// The command `loopguard mcp install` writes into client configs when none is given: `loopguard`
/// when the first `loopguard` on `PATH` is this very program (the same file, through any
/// symlinks), so the entry survives upgrades and reads as a user would write it; else this
/// executable's absolute path (e.g. a build directory when run through cargo).
pub fn running_loopguard() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "loopguard".to_owned();
    };
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("loopguard"))
            .find(|c| c.is_file())
    });
    if on_path.is_some_and(|found| same_file(&found, &exe)) {
        return "loopguard".to_owned();
    }
    exe.to_string_lossy().into_owned()
}

/// `true` when both paths lead to the same file (device and inode, symlinks followed).
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// `true` when both paths lead to the same file (symlinks followed).
#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// An MCP client whose config `install` can edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Desktop: `claude_desktop_config.json`, servers under `mcpServers`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json` (top-level and per-project `mcpServers`) or a
    /// project's `.mcp.json`.
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json` or a project's `.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// VS Code: `mcp.json` (JSONC), servers under `servers`.
    VsCode,
}

impl Client {
    /// The client's name as `--client` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
        }
    }

    fn servers_key(self) -> &'static str {
        match self {
            Client::VsCode => "servers",
            _ => "mcpServers",
        }
    }
}

/// Where the client keeps its user-level MCP config on this system.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let path = loopguard_agents::install::mcp::default_config_path(loopguard_agents::install::mcp::Client::Cursor)?;
/// assert!(path.ends_with(".cursor/mcp.json"));
/// # Ok(()) }
/// ```
pub fn default_config_path(client: Client) -> Result<PathBuf, InstallError> {
    let home = || {
        dirs::home_dir().ok_or_else(|| {
            InstallError::NoDefault("cannot find the home directory; give --config".into())
        })
    };
    let config = || {
        dirs::config_dir().ok_or_else(|| {
            InstallError::NoDefault("cannot find the config directory; give --config".into())
        })
    };
    Ok(match client {
        Client::ClaudeDesktop | Client::VsCode => {
            user_config_path(client, Path::new(""), &config()?)
        }
        Client::ClaudeCode | Client::Cursor => user_config_path(client, &home()?, Path::new("")),
    })
}

/// The client's user-level config under `home` or the config directory `config`.
fn user_config_path(client: Client, home: &Path, config: &Path) -> PathBuf {
    match client {
        Client::ClaudeDesktop => config.join("Claude").join("claude_desktop_config.json"),
        Client::ClaudeCode => home.join(".claude.json"),
        Client::Cursor => home.join(".cursor").join("mcp.json"),
        Client::VsCode => config.join("Code").join("User").join("mcp.json"),
    }
}

/// Every MCP config a client would read: each client's user-level file (under `home` and
/// the config directory `config`), then the project's in `project` (Claude Code's
/// `.mcp.json`, Cursor's `.cursor/mcp.json`, VS Code's `.vscode/mcp.json`). Files that do
/// not exist are listed too; the caller looks.
pub fn config_paths(
    home: Option<&Path>,
    config: Option<&Path>,
    project: Option<&Path>,
) -> Vec<(Client, PathBuf)> {
    let mut out = Vec::new();
    for client in [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
    ] {
        let base = match client {
            Client::ClaudeDesktop | Client::VsCode => config,
            Client::ClaudeCode | Client::Cursor => home,
        };
        if let Some(base) = base {
            out.push((client, user_config_path(client, base, base)));
        }
    }
    if let Some(p) = project {
        out.push((Client::ClaudeCode, p.join(".mcp.json")));
        out.push((Client::Cursor, p.join(".cursor").join("mcp.json")));
        out.push((Client::VsCode, p.join(".vscode").join("mcp.json")));
    }
    out
}

/// A server entry that goes through `loopguard mcp`, as its client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedEntry {
    /// `mcpServers.name`, `servers.name` or `projects.<dir>.mcpServers.name`.
    pub entry: String,
    /// The project directory a per-project entry of `~/.claude.json` belongs to (Claude
    /// Code starts it there).
    pub project: Option<PathBuf>,
    /// How the client starts it, or why it could not as written (e.g. `args` holding a
    /// number).
    pub launch: Result<Launch, String>,
}

/// The process a client starts for a stdio server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// `command`.
    pub command: String,
    /// `args`.
    pub args: Vec<String>,
    /// `env`, added to the client's environment.
    pub env: BTreeMap<String, String>,
}

/// What happened to one server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// A stdio entry now starts loopguard, which starts the original command.
    WrappedCommand(String),
    /// A URL entry now starts loopguard, which forwards to the URL.
    WrappedUrl(String),
    /// The entry already goes through loopguard.
    AlreadyInstalled,
    /// The entry got back the text it had before `install`.
    Restored,
    /// The entry was edited after `install`; left as it is.
    EditedSinceInstall,
    /// The entry was not changed, for this reason.
    Skipped(String),
}

/// One line of the report: what happened to one server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryChange {
    /// The entry's path in the file, e.g. `mcpServers.files`.
    pub entry: String,
    /// What happened.
    pub kind: ChangeKind,
}

/// What `install` or `uninstall` did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The config file.
    pub path: PathBuf,
    /// What happened to the file.
    pub change: Change,
    /// Per entry.
    pub changes: Vec<EntryChange>,
}

impl Report {
    /// `true` when the file was rewritten.
    pub fn changed(&self) -> bool {
        self.change != Change::Unchanged
    }

    /// The file as it was before loopguard first touched it, if it was kept.
    pub fn backup(&self) -> Option<&Path> {
        match &self.change {
            Change::Written { backup } => backup.as_deref(),
            _ => None,
        }
    }

    /// The report as text, one line per entry.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.path.display());
        if self.changes.is_empty() {
            let _ = writeln!(out, "  no MCP servers in this file");
        }
        for c in &self.changes {
            let what = match &c.kind {
                ChangeKind::WrappedCommand(cmd) => format!("now runs through loopguard ({cmd})"),
                ChangeKind::WrappedUrl(url) => format!("now reaches {url} through loopguard"),
                ChangeKind::AlreadyInstalled => "already through loopguard (unchanged)".to_owned(),
                ChangeKind::Restored => "restored as it was before install".to_owned(),
                ChangeKind::EditedSinceInstall => "edited since install; left as it is".to_owned(),
                ChangeKind::Skipped(why) => format!("skipped: {why}"),
            };
            let _ = writeln!(out, "  {}: {what}", c.entry);
        }
        match (&self.change, self.backup()) {
            (Change::Unchanged, _) => {
                let _ = writeln!(out, "  file unchanged");
            }
            (_, Some(b)) => {
                let _ = writeln!(
                    out,
                    "  the file as it was before loopguard first touched it: {}",
                    b.display()
                );
            }
            (_, None) => {
                let _ = writeln!(out, "  file written");
            }
        }
        out
    }
}

/// Edits one client's config file.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use loopguard_agents::install::mcp::{Client, Installer};
/// let report = Installer::new(Client::VsCode, ".vscode/mcp.json").install()?;
/// print!("{}", report.render());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Installer {
    client: Client,
    path: PathBuf,
    loopguard: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: u32,
    entries: BTreeMap<String, RecordEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RecordEntry {
    original: String,
    installed: String,
}

/// A server entry found in the file.
struct Entry<'a> {
    /// `mcpServers.name` or `projects.<dir>.mcpServers.name`.
    key: String,
    name: String,
    /// `<dir>` of `projects.<dir>.mcpServers`.
    project: Option<String>,
    start: usize,
    end: usize,
    value: &'a Value<'a>,
}

impl Installer {
    /// An installer for `client`'s config at `path`, writing `loopguard` as the command.
    pub fn new(client: Client, path: impl AsRef<Path>) -> Self {
        Installer {
            client,
            path: path.as_ref().to_owned(),
            loopguard: "loopguard".to_owned(),
        }
    }

    /// The command written into the entries (default `loopguard`, found on `PATH`).
    pub fn loopguard_command(mut self, command: impl Into<String>) -> Self {
        self.loopguard = command.into();
        self
    }

    fn record_path(&self) -> PathBuf {
        sibling(&self.path, ".loopguard-mcp.json")
    }

    /// Rewrites every server entry to go through loopguard. Running it twice changes nothing.
    pub fn install(&self) -> Result<Report, InstallError> {
        let text = self.read()?;
        let root = self.parse(&text)?;
        let mut record = self.read_record()?;
        let mut edits = Vec::new();
        let mut changes = Vec::new();
        for entry in self.entries(&root) {
            let original = &text[entry.start..entry.end];
            let kind = match self.wrap(&entry, original) {
                Ok(Some((installed, kind))) => {
                    record.entries.insert(
                        entry.key.clone(),
                        RecordEntry {
                            original: original.to_owned(),
                            installed: installed.clone(),
                        },
                    );
                    edits.push((entry.start, entry.end, installed));
                    kind
                }
                Ok(None) => ChangeKind::AlreadyInstalled,
                Err(why) => ChangeKind::Skipped(why),
            };
            changes.push(EntryChange {
                entry: entry.key,
                kind,
            });
        }
        let change = self.write(&text, edits)?;
        if change != Change::Unchanged {
            record.version = 1;
            self.write_record(&record)?;
        }
        Ok(Report {
            path: self.path.clone(),
            change,
            changes,
        })
    }

    /// Gives each entry `install` changed the exact text it had, unless it was edited since.
    pub fn uninstall(&self) -> Result<Report, InstallError> {
        let text = self.read()?;
        let root = self.parse(&text)?;
        let mut record = self.read_record()?;
        let mut edits = Vec::new();
        let mut changes = Vec::new();
        for entry in self.entries(&root) {
            let current = &text[entry.start..entry.end];
            let Some(saved) = record.entries.get(&entry.key) else {
                if self.is_wrapped(entry.value) {
                    changes.push(EntryChange {
                        entry: entry.key,
                        kind: ChangeKind::Skipped(format!(
                            "goes through loopguard but {} has no record of it",
                            self.record_path().display()
                        )),
                    });
                }
                continue;
            };
            let kind = if current == saved.installed {
                edits.push((entry.start, entry.end, saved.original.clone()));
                ChangeKind::Restored
            } else {
                ChangeKind::EditedSinceInstall
            };
            record.entries.remove(&entry.key);
            changes.push(EntryChange {
                entry: entry.key,
                kind,
            });
        }
        let change = self.write(&text, edits)?;
        // Entries removed from the file since install have nothing left to restore.
        let keys: Vec<String> = self.entries(&root).into_iter().map(|e| e.key).collect();
        record.entries.retain(|k, _| keys.contains(k));
        if record.entries.is_empty() {
            match std::fs::remove_file(self.record_path()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&self.record_path())(e)),
            }
        } else {
            self.write_record(&record)?;
        }
        Ok(Report {
            path: self.path.clone(),
            change,
            changes,
        })
    }

    /// The entries of the config that go through loopguard (stdio entries whose command is
    /// loopguard with `mcp` first; `install` turns URL entries into such too), in file
    /// order.
    pub fn wrapped(&self) -> Result<Vec<WrappedEntry>, InstallError> {
        let text = self.read()?;
        let root = self.parse(&text)?;
        Ok(self
            .entries(&root)
            .into_iter()
            .filter(|e| self.is_wrapped(e.value))
            .map(|e| WrappedEntry {
                launch: launch(e.value),
                project: e.project.map(PathBuf::from),
                entry: e.key,
            })
            .collect())
    }

    fn read(&self) -> Result<String, InstallError> {
        // A missing config is an error here (install edits the client's entries, it creates
        // no config): the OS error says so.
        std::fs::read_to_string(&self.path).map_err(io(&self.path))
    }

    fn parse<'a>(&self, text: &'a str) -> Result<Value<'a>, InstallError> {
        match super::parse_jsonc(&self.path, text)? {
            Some(v @ Value::Object(_)) => Ok(v),
            _ => Err(InstallError::Invalid {
                path: self.path.clone(),
                message: "not a JSON object".into(),
            }),
        }
    }

    fn read_record(&self) -> Result<Record, InstallError> {
        let path = self.record_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| InstallError::Invalid {
                path: path.clone(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Record::default()),
            Err(e) => Err(io(&path)(e)),
        }
    }

    fn write_record(&self, record: &Record) -> Result<(), InstallError> {
        let mut text = serde_json::to_string_pretty(record).map_err(|e| InstallError::Invalid {
            path: self.record_path(),
            message: format!("cannot encode the install record: {e}"),
        })?;
        text.push('\n');
        file::write(&self.record_path(), None, &text).map(|_| ())
    }

    /// Applies the edits (non-overlapping ranges) with the installers' one backup rule and
    /// atomic write.
    fn write(
        &self,
        text: &str,
        mut edits: Vec<(usize, usize, String)>,
    ) -> Result<Change, InstallError> {
        if edits.is_empty() {
            return Ok(Change::Unchanged);
        }
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        let mut out = text.to_owned();
        for (start, end, replacement) in edits {
            out.replace_range(start..end, &replacement);
        }
        if out == text {
            return Ok(Change::Unchanged);
        }
        file::write(&self.path, Some(text), &out)
    }

    /// The server entries: `mcpServers` / `servers` at the top, and for Claude Code the
    /// per-project `projects.<dir>.mcpServers` of `~/.claude.json`.
    fn entries<'a>(&self, root: &'a Value<'a>) -> Vec<Entry<'a>> {
        let Value::Object(root) = root else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let key = self.client.servers_key();
        collect_entries(root, key, key, None, &mut out);
        if self.client == Client::ClaudeCode {
            if let Some(Value::Object(projects)) = prop(root, "projects").map(|p| &p.value) {
                for project in &projects.properties {
                    if let Value::Object(p) = &project.value {
                        let prefix = format!("projects.{}.{key}", project.name.as_str());
                        let dir = Some(project.name.as_str());
                        collect_entries(p, key, &prefix, dir, &mut out);
                    }
                }
            }
        }
        out
    }

    fn is_wrapped(&self, value: &Value<'_>) -> bool {
        let Value::Object(o) = value else {
            return false;
        };
        let command = prop_str(o, "command");
        let first_arg = match prop(o, "args").map(|p| &p.value) {
            Some(Value::Array(a)) => a
                .elements
                .first()
                .and_then(|e| e.as_string_lit())
                .map(|s| s.value.as_ref()),
            _ => None,
        };
        match command {
            Some(c) => {
                let file = Path::new(c)
                    .file_name()
                    .and_then(|f| f.to_str())
                    .unwrap_or(c);
                (c == self.loopguard || file == "loopguard" || file.starts_with("loopguard."))
                    && first_arg == Some("mcp")
            }
            None => false,
        }
    }

    /// The entry's new text, or `None` when it already goes through loopguard.
    fn wrap(
        &self,
        entry: &Entry<'_>,
        original: &str,
    ) -> Result<Option<(String, ChangeKind)>, String> {
        let Value::Object(o) = entry.value else {
            return Err("not an object".to_owned());
        };
        if self.is_wrapped(entry.value) {
            return Ok(None);
        }
        let base = o.range.start;
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut args = vec!["mcp".to_owned(), "--name".to_owned(), entry.name.clone()];
        let kind;
        if let Some(command) = prop(o, "command") {
            let Some(cmd) = command.value.as_string_lit() else {
                return Err("`command` is not a string".to_owned());
            };
            let mut original_args = Vec::new();
            let args_prop = prop(o, "args");
            if let Some(a) = args_prop {
                let Value::Array(array) = &a.value else {
                    return Err("`args` is not an array".to_owned());
                };
                for e in &array.elements {
                    match e.as_string_lit() {
                        Some(s) => original_args.push(s.value.to_string()),
                        None => return Err("`args` holds a value that is not a string".to_owned()),
                    }
                }
            }
            args.push("--".to_owned());
            args.push(cmd.value.to_string());
            kind = ChangeKind::WrappedCommand(
                std::iter::once(cmd.value.to_string())
                    .chain(original_args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            args.extend(original_args);
            let cmd_range = command.value.range();
            edits.push((cmd_range.start, cmd_range.end, json(&self.loopguard)));
            match args_prop {
                Some(a) => {
                    let r = a.value.range();
                    edits.push((r.start, r.end, json_array(&args)));
                }
                None => edits.push((
                    cmd_range.end,
                    cmd_range.end,
                    format!(", \"args\": {}", json_array(&args)),
                )),
            }
        } else if let Some(url) = prop(o, "url") {
            let Some(u) = url.value.as_string_lit() else {
                return Err("`url` is not a string".to_owned());
            };
            let ty = prop(o, "type");
            if let Some(t) = ty {
                let t = t
                    .value
                    .as_string_lit()
                    .map(|s| s.value.to_string())
                    .unwrap_or_default();
                if !matches!(t.as_str(), "http" | "streamable-http" | "streamableHttp") {
                    return Err(format!(
                        "transport type {t:?} is not proxied (streamable HTTP and stdio are)"
                    ));
                }
            }
            args.push("--upstream".to_owned());
            args.push(u.value.to_string());
            let headers = prop(o, "headers");
            if let Some(h) = headers {
                let Value::Object(h) = &h.value else {
                    return Err("`headers` is not an object".to_owned());
                };
                for p in &h.properties {
                    let Some(v) = p.value.as_string_lit() else {
                        return Err("a header value is not a string".to_owned());
                    };
                    args.push("--header".to_owned());
                    args.push(format!("{}: {}", p.name.as_str(), v.value));
                }
            }
            kind = ChangeKind::WrappedUrl(u.value.to_string());
            edits.push((
                url.range.start,
                url.range.end,
                format!(
                    "\"command\": {}, \"args\": {}",
                    json(&self.loopguard),
                    json_array(&args)
                ),
            ));
            if let Some(t) = ty {
                let r = t.value.range();
                edits.push((r.start, r.end, "\"stdio\"".to_owned()));
            }
            if let Some(h) = headers {
                edits.push(remove_prop(o, h));
            }
        } else {
            return Err("neither `command` nor `url`".to_owned());
        }
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        let mut text = original.to_owned();
        for (start, end, replacement) in edits {
            text.replace_range(start - base..end - base, &replacement);
        }
        Ok(Some((text, kind)))
    }
}

/// The command, arguments and environment of a stdio entry.
fn launch(value: &Value<'_>) -> Result<Launch, String> {
    let Value::Object(o) = value else {
        return Err("not an object".to_owned());
    };
    let command = prop_str(o, "command")
        .ok_or("`command` is not a string")?
        .to_owned();
    let mut args = Vec::new();
    match prop(o, "args").map(|p| &p.value) {
        None => {}
        Some(Value::Array(a)) => {
            for e in &a.elements {
                let s = e
                    .as_string_lit()
                    .ok_or("`args` holds a value that is not a string")?;
                args.push(s.value.to_string());
            }
        }
        Some(_) => return Err("`args` is not an array".to_owned()),
    }
    let mut env = BTreeMap::new();
    match prop(o, "env").map(|p| &p.value) {
        None => {}
        Some(Value::Object(vars)) => {
            for p in &vars.properties {
                let v = p
                    .value
                    .as_string_lit()
                    .ok_or_else(|| format!("`env.{}` is not a string", p.name.as_str()))?;
                env.insert(p.name.as_str().to_owned(), v.value.to_string());
            }
        }
        Some(_) => return Err("`env` is not an object".to_owned()),
    }
    Ok(Launch { command, args, env })
}

fn collect_entries<'a>(
    obj: &'a Object<'a>,
    key: &str,
    prefix: &str,
    project: Option<&str>,
    out: &mut Vec<Entry<'a>>,
) {
    if let Some(Value::Object(servers)) = prop(obj, key).map(|p| &p.value) {
        for server in &servers.properties {
            let r = server.value.range();
            out.push(Entry {
                key: format!("{prefix}.{}", server.name.as_str()),
                name: server.name.as_str().to_owned(),
                project: project.map(str::to_owned),
                start: r.start,
                end: r.end,
                value: &server.value,
            });
        }
    }
}

fn prop<'a>(o: &'a Object<'a>, name: &str) -> Option<&'a ObjectProp<'a>> {
    o.properties.iter().find(|p| p.name.as_str() == name)
}

fn prop_str<'a>(o: &'a Object<'a>, name: &str) -> Option<&'a str> {
    prop(o, name)
        .and_then(|p| p.value.as_string_lit())
        .map(|s| s.value.as_ref())
}

/// The range that removes a property with one of the commas beside it.
fn remove_prop(o: &Object<'_>, p: &ObjectProp<'_>) -> (usize, usize, String) {
    let i = o
        .properties
        .iter()
        .position(|q| q.range == p.range)
        .unwrap_or(0);
    if let Some(next) = o.properties.get(i + 1) {
        (p.range.start, next.range.start, String::new())
    } else if i > 0 {
        (o.properties[i - 1].range.end, p.range.end, String::new())
    } else {
        (p.range.start, p.range.end, String::new())
    }
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn json_array(items: &[String]) -> String {
    format!(
        "[{}]",
        items.iter().map(|s| json(s)).collect::<Vec<_>>().join(", ")
    )
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_program_is_named_by_its_path_unless_path_finds_it() {
        // The test binary is not the `loopguard` PATH finds (if any).
        let exe = std::env::current_exe().unwrap();
        assert_eq!(running_loopguard(), exe.to_string_lossy());
    }

    #[cfg(unix)]
    #[test]
    fn same_file_follows_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("loopguard");
        let other = dir.path().join("other");
        std::fs::write(&real, "a").unwrap();
        std::fs::write(&other, "a").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(same_file(&link, &real));
        assert!(!same_file(&other, &real));
        assert!(!same_file(&dir.path().join("missing"), &real));
    }

    #[test]
    fn wrapped_reads_back_what_the_client_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"], "env": {"K": "v"}},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp"}},
              "projects": {"/p": {"mcpServers": {"mine": {"command": "loopguard",
                "args": ["mcp", 3]}}}}}"#,
        )
        .unwrap();
        let installer = Installer::new(Client::ClaudeCode, &path);
        let before = installer.wrapped().unwrap();
        // Only the already wrapped project entry, whose args cannot be started as written.
        assert_eq!(before.len(), 1, "{before:?}");
        assert_eq!(before[0].entry, "projects./p.mcpServers.mine");
        assert_eq!(before[0].project.as_deref(), Some(Path::new("/p")));
        assert_eq!(
            before[0].launch,
            Err("`args` holds a value that is not a string".to_owned())
        );
        installer.install().unwrap();
        let after = installer.wrapped().unwrap();
        let keys: Vec<&str> = after.iter().map(|e| e.entry.as_str()).collect();
        assert_eq!(
            keys,
            [
                "mcpServers.fs",
                "mcpServers.web",
                "projects./p.mcpServers.mine"
            ]
        );
        assert_eq!(after[0].project, None);
        let fs = after[0].launch.as_ref().unwrap();
        assert_eq!(fs.command, "loopguard");
        assert_eq!(fs.args, ["mcp", "--name", "fs", "--", "npx", "-y", "fs"]);
        assert_eq!(fs.env.get("K").map(String::as_str), Some("v"));
        let web = after[1].launch.as_ref().unwrap();
        assert_eq!(
            web.args,
            [
                "mcp",
                "--name",
                "web",
                "--upstream",
                "http://127.0.0.1:1/mcp"
            ]
        );
    }

    #[test]
    fn config_paths_name_each_clients_user_and_project_file() {
        let paths = config_paths(
            Some(Path::new("/h")),
            Some(Path::new("/c")),
            Some(Path::new("/p")),
        );
        let paths: Vec<(&str, &Path)> = paths
            .iter()
            .map(|(c, p)| (c.as_str(), p.as_path()))
            .collect();
        assert_eq!(
            paths,
            [
                (
                    "claude-desktop",
                    Path::new("/c/Claude/claude_desktop_config.json")
                ),
                ("claude-code", Path::new("/h/.claude.json")),
                ("cursor", Path::new("/h/.cursor/mcp.json")),
                ("vscode", Path::new("/c/Code/User/mcp.json")),
                ("claude-code", Path::new("/p/.mcp.json")),
                ("cursor", Path::new("/p/.cursor/mcp.json")),
                ("vscode", Path::new("/p/.vscode/mcp.json")),
            ]
        );
    }
}
