//! `loopguard status`: what the database knows about the sessions it protects. [`report`]
//! is the whole command's output (the binary prints it); the pieces it is made of are
//! public too.
//!
//! Without a session id: every session, most recent first, with its event count and run.
//! With one: its recent hook events (tool, decision, detector, count, message), the
//! repeated calls of the current run with their no-progress streaks, the state of the
//! run's post-compaction guard, its permission mode, the config in force, and the last
//! time the hook failed open for it.
//!
//! **Weaker than it looks**: the config the session's hook last loaded is read again; if
//! it cannot be read now, every hook call fails open and the status says so, and
//! otherwise it carries the [`loopguard_guard::advice`] notes for its policy (detectors off,
//! warnings the model never sees). The last fail-open comes from the log file (see
//! [`crate::paths::log_candidates`]), whose fail-open lines name the session.
//!
//! ```
//! use loopguard_agents::Agent;
//! use loopguard_hook::{run, HookOptions};
//! use loopguard_hook::status::session_status;
//! use loopguard_hook::store::{SqliteStore, SqliteOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let opts = HookOptions { state: Some(dir.path().join("db")), ..HookOptions::default() };
//! run(Agent::ClaudeCode, br#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}"#, &opts);
//! let store = SqliteStore::open_existing(&dir.path().join("db"), &SqliteOptions::default()).unwrap();
//! let st = session_status(&store, "s1", 20).unwrap().unwrap();
//! assert_eq!(st.events.len(), 1);
//! assert_eq!(st.events[0].decision, "allow");
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use loopguard_core::detection::no_progress_streak;
use serde::Serialize;

use loopguard_agents::install as agent_install;
use loopguard_agents::Agent;
use loopguard_guard::advice::policy_notes;
use loopguard_guard::{LogRow, SessionEntry, Store as _};

use crate::config::HookConfig;
use crate::paths::{existing_log, Env};
use crate::store::{ended_sessions, key, SqliteOptions, SqliteStore, StoreError};

/// The front end that wrote a stored session: `status` speaks of it, not of Claude Code
/// for every session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEnd {
    /// An agent's hook (`loopguard hook AGENT`, or `loopguard serve`'s
    /// `POST /v1/hooks/AGENT`): runs are the agent's prompts (`prompt-N`).
    Hook(Agent),
    /// The MCP proxy (`loopguard mcp`): sessions `mcp:SERVER:CONNECTION`, a run per
    /// connection.
    Mcp,
    /// Events applied through the guard's API (`loopguard serve`'s `/v1/events`, the Python
    /// or Node packages, `loopguard mcp --session-key`): runs as the caller named them.
    Events,
}

impl FrontEnd {
    /// The front end of a session, from its key and what the hook protocol records in its
    /// `meta` (the config it loaded): the agents' hooks key their sessions `AGENT:ID`, the
    /// MCP proxy `mcp:SERVER:CONNECTION`, and Claude Code's hook keeps Claude Code's ids.
    ///
    /// ```
    /// use loopguard_agents::Agent;
    /// use loopguard_hook::status::FrontEnd;
    /// let hook_meta = [("config".to_string(), "built-in".to_string())].into_iter().collect();
    /// assert_eq!(FrontEnd::of("codex:019a", &Default::default()), FrontEnd::Hook(Agent::Codex));
    /// assert_eq!(FrontEnd::of("mcp:files:c1", &Default::default()), FrontEnd::Mcp);
    /// assert_eq!(FrontEnd::of("9f1c-uuid", &hook_meta), FrontEnd::Hook(Agent::ClaudeCode));
    /// assert_eq!(FrontEnd::of("my-key", &Default::default()), FrontEnd::Events);
    /// ```
    pub fn of(session_id: &str, meta: &std::collections::BTreeMap<String, String>) -> FrontEnd {
        match session_id.split_once(':').map(|(p, _)| p) {
            Some("mcp") => return FrontEnd::Mcp,
            Some(p) => {
                if let Ok(agent) = p.parse::<Agent>() {
                    if agent != Agent::ClaudeCode {
                        return FrontEnd::Hook(agent);
                    }
                }
            }
            None => {}
        }
        if meta.contains_key("config") {
            FrontEnd::Hook(Agent::ClaudeCode)
        } else {
            FrontEnd::Events
        }
    }

    /// A short name: the agent's (`claude-code`, `codex`, …), `mcp` or `events`.
    pub fn key(self) -> &'static str {
        match self {
            FrontEnd::Hook(a) => a.as_str(),
            FrontEnd::Mcp => "mcp",
            FrontEnd::Events => "events",
        }
    }

    /// What `status` calls it.
    pub fn describe(self) -> String {
        match self {
            FrontEnd::Hook(Agent::ClaudeCode) => {
                "Claude Code hook (`loopguard hook claude-code`)".to_string()
            }
            FrontEnd::Hook(a) => format!("{a} hook (`loopguard hook {a}`)"),
            FrontEnd::Mcp => "MCP proxy (`loopguard mcp`): a run per client connection".to_string(),
            FrontEnd::Events => "guard events (`loopguard serve` /v1/events, the Python or Node package, or `loopguard mcp --session-key`)".to_string(),
        }
    }
}

/// One session in the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id (for the agents' hooks `AGENT:ID`, for the MCP proxy
    /// `mcp:SERVER:CONNECTION`).
    pub session_id: String,
    /// The front end that wrote it ([`FrontEnd::key`]).
    pub front_end: &'static str,
    /// Events applied.
    pub event_count: u64,
    /// The current run.
    pub run: String,
    /// Last update (ms since the epoch).
    pub updated_ms: u64,
    /// The working directory of the last event.
    pub cwd: Option<String>,
    /// `true` when the current run was stopped by the post-compaction guard.
    pub stopped: bool,
    /// The last `permission_mode` a payload carried.
    pub permission_mode: Option<String>,
    /// Where the config of the last event came from.
    pub config: Option<String>,
    /// The agent id the policy was chosen for.
    pub agent: Option<String>,
}

/// Every session of the database, most recently updated first.
pub fn list_sessions(store: &SqliteStore) -> Result<Vec<SessionSummary>, StoreError> {
    let mut out = Vec::new();
    for (k, updated_ms) in store.keys_by_update()? {
        let Some(entry) = store.load(&k)? else {
            continue;
        };
        let (_, id) = loopguard_guard::split_key(&k);
        let front = FrontEnd::of(id, &entry.meta);
        let run = current_run(&entry, front);
        out.push(SessionSummary {
            session_id: id.to_string(),
            front_end: front.key(),
            event_count: entry.stats.events,
            stopped: entry.aborted.as_ref().is_some_and(|a| a.run == run),
            run,
            updated_ms,
            cwd: entry.meta.get("cwd").cloned(),
            permission_mode: entry.meta.get(loopguard_agents::PERMISSION_MODE).cloned(),
            config: entry.meta.get("config").cloned(),
            agent: entry.meta.get("agent").cloned(),
        });
    }
    Ok(out)
}

/// One logged hook event, as `loopguard status --json` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow(pub LogRow);

impl std::ops::Deref for EventRow {
    type Target = LogRow;
    fn deref(&self) -> &LogRow {
        &self.0
    }
}

/// A repeated call of the current run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Repeat {
    /// The engine's tool name (`exec` for `Bash`, `process` for background polls,
    /// `update_plan` for `TodoWrite`).
    pub tool: String,
    /// The first 12 hex digits of the argument hash.
    pub args: String,
    /// Calls with these arguments in the run's history.
    pub calls: u64,
    /// Identical outcomes in a row (the no-progress streak).
    pub identical_outcomes: u64,
}

/// The post-compaction guard of the current run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardState {
    /// Watching outcomes after a compaction.
    pub armed: bool,
    /// Outcomes still to watch.
    pub remaining: u32,
    /// `postCompactionGuard.windowSize`.
    pub window_size: u32,
}

/// Everything `loopguard status SESSION` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// The session id.
    pub session_id: String,
    /// The front end that wrote it ([`FrontEnd::key`]).
    pub front_end: &'static str,
    /// What `status` calls that front end ([`FrontEnd::describe`]).
    pub front_end_description: String,
    /// The current run.
    pub run: String,
    /// Events applied.
    pub event_count: u64,
    /// First and last update (ms since the epoch).
    pub created_ms: u64,
    /// Last update.
    pub updated_ms: u64,
    /// The working directory of the last event.
    pub cwd: Option<String>,
    /// Where the config came from.
    pub config: Option<String>,
    /// Where that config is weaker than it looks, or why it cannot be read now.
    pub config_notes: Vec<String>,
    /// The last `permission_mode` a payload carried.
    pub permission_mode: Option<String>,
    /// The last fail-open line of the log naming this session (set by the caller with
    /// [`last_fail_open`]).
    pub last_fail_open: Option<String>,
    /// The run stopped by the post-compaction guard, if it is the current one.
    pub aborted: Option<String>,
    /// Records in the session's history (all runs).
    pub history_len: usize,
    /// Repeated calls of the current run, most repeated first.
    pub repeats: Vec<Repeat>,
    /// The current run's guard, if it exists.
    pub guard: Option<GuardState>,
    /// The most recent hook events, oldest first.
    pub events: Vec<EventRow>,
    /// Set when the stored state could not be read.
    pub state_error: Option<String>,
}

impl Serialize for EventRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("EventRow", 10)?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("tsMs", &self.ts_ms)?;
        st.serialize_field("event", &self.event)?;
        st.serialize_field("run", &self.run)?;
        st.serialize_field("tool", &self.tool)?;
        st.serialize_field("toolUseId", &self.call_id)?;
        st.serialize_field("decision", &self.decision)?;
        st.serialize_field("detector", &self.detector)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// The current run of a stored session: for a hook, the prompt (subagent runs are not
/// listed separately); for the other front ends, the run of the last call recorded.
fn current_run(entry: &SessionEntry, front: FrontEnd) -> String {
    match front {
        FrontEnd::Hook(_) => format!("prompt-{}", entry.run_seq),
        FrontEnd::Mcp | FrontEnd::Events => entry
            .session
            .history()
            .records()
            .back()
            .and_then(|r| r.run.as_ref())
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// Builds the status of one session; `None` when the database does not know it.
pub fn session_status(
    store: &SqliteStore,
    session_id: &str,
    events: usize,
) -> Result<Option<SessionStatus>, StoreError> {
    let k = key(session_id);
    let entry = match store.load(&k) {
        Ok(Some(e)) => e,
        Ok(None) => return Ok(None),
        Err(StoreError::Corrupt { source, .. }) => {
            let front = FrontEnd::of(session_id, &Default::default());
            return Ok(Some(SessionStatus {
                session_id: session_id.to_string(),
                front_end: front.key(),
                front_end_description: front.describe(),
                run: String::new(),
                event_count: 0,
                created_ms: 0,
                updated_ms: 0,
                cwd: None,
                config: None,
                config_notes: Vec::new(),
                permission_mode: None,
                last_fail_open: None,
                aborted: None,
                history_len: 0,
                repeats: Vec::new(),
                guard: None,
                events: Vec::new(),
                state_error: Some(source.to_string()),
            }));
        }
        Err(e) => return Err(e),
    };
    let front = FrontEnd::of(session_id, &entry.meta);
    let run = current_run(&entry, front);
    // A session without runs (events that named none) is scoped as one.
    let scope = (!run.is_empty()).then_some(run.as_bytes());
    let skip = entry.recent.len().saturating_sub(events);
    let events = entry
        .recent
        .iter()
        .skip(skip)
        .cloned()
        .map(EventRow)
        .collect();
    let mut st = SessionStatus {
        session_id: session_id.to_string(),
        front_end: front.key(),
        front_end_description: front.describe(),
        run: run.clone(),
        event_count: entry.stats.events,
        created_ms: entry.created_ms,
        updated_ms: entry.last_seen_ms,
        cwd: entry.meta.get("cwd").cloned(),
        config: entry.meta.get("config").cloned(),
        config_notes: config_notes(
            entry.meta.get("config").map(String::as_str),
            entry.meta.get("agent").map(String::as_str),
        ),
        permission_mode: entry.meta.get(loopguard_agents::PERMISSION_MODE).cloned(),
        last_fail_open: None,
        aborted: entry
            .aborted
            .as_ref()
            .filter(|a| a.run == run)
            .map(|a| a.message.clone()),
        history_len: 0,
        repeats: Vec::new(),
        guard: None,
        events,
        state_error: None,
    };
    let session = &entry.session;
    let history = session.history();
    st.history_len = history.len();
    let mut seen: Vec<(String, loopguard_core::hashing::ArgsDigest)> = Vec::new();
    for r in history.scoped(scope) {
        let tool = r.tool.to_string_lossy().into_owned();
        if !seen.iter().any(|(t, a)| *t == tool && *a == r.args) {
            seen.push((tool, r.args));
        }
    }
    for (tool, args) in seen {
        let s = no_progress_streak(history.scoped(scope), tool.as_bytes(), &args);
        if s.calls > 1 {
            st.repeats.push(Repeat {
                args: args.to_string()[..12].to_string(),
                tool,
                calls: s.calls,
                identical_outcomes: s.count,
            });
        }
    }
    st.repeats
        .sort_by_key(|r| std::cmp::Reverse((r.calls, r.identical_outcomes)));
    st.guard = session
        .guard(scope.map(|_| run.as_str()))
        .map(|g| GuardState {
            armed: g.is_armed(),
            remaining: g.remaining_attempts(),
            window_size: g.settings().window_size,
        });
    Ok(Some(st))
}

/// Reads the config a session's hook last loaded (its `config` meta, as
/// [`crate::config::ConfigSource`] displays it) again and says where it is weaker than it
/// looks, or that it cannot be read.
///
/// ```
/// use loopguard_hook::status::config_notes;
/// assert!(config_notes(Some("built-in (no config file: enabled with defaults)"), None).is_empty());
/// let n = config_notes(Some("/nonexistent/c.json5 (--config)"), None);
/// assert!(n[0].contains("cannot read config /nonexistent/c.json5"), "{n:?}");
/// ```
pub fn config_notes(config: Option<&str>, agent: Option<&str>) -> Vec<String> {
    use crate::config::{ConfigSource, HookConfig};
    type Make = fn(std::path::PathBuf) -> ConfigSource;
    let Some(config) = config else {
        return Vec::new();
    };
    let kinds: [(&str, Make); 3] = [
        (" (--config)", ConfigSource::Flag),
        (" (project)", ConfigSource::Project),
        (" (user)", ConfigSource::User),
    ];
    let Some((path, source)) = kinds.iter().find_map(|(suffix, make)| {
        config
            .strip_suffix(suffix)
            .map(|p| (std::path::PathBuf::from(p), make(p.into())))
    }) else {
        return Vec::new();
    };
    match HookConfig::load(&path, source) {
        Ok(c) => loopguard_guard::advice::policy_notes(&c.policy_for(agent)),
        Err(e) => vec![format!(
            "{e}: every hook call fails open (the call is allowed, nothing is checked)"
        )],
    }
}

/// The last line of the log that reports a fail-open, for one session (`Some(id)`) or any.
///
/// ```
/// use loopguard_hook::status::last_fail_open;
/// let dir = tempfile::tempdir()?;
/// let log = dir.path().join("loopguard.log");
/// std::fs::write(&log, "2026-11-30T10:00:00Z loopguard: session a: bad config; the call is allowed (fail-open). Log: x\n")?;
/// assert!(last_fail_open(&log, Some("a")).unwrap().contains("bad config"));
/// assert_eq!(last_fail_open(&log, Some("b")), None);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn last_fail_open(log: &std::path::Path, session: Option<&str>) -> Option<String> {
    let needle = session.map(|s| format!("loopguard: session {s}: "));
    let rotated = log.with_extension("log.1");
    [log, rotated.as_path()].iter().find_map(|p| {
        let text = std::fs::read_to_string(p).ok()?;
        text.lines()
            .rev()
            .find(|l| {
                l.contains("(fail-open)") && needle.as_ref().is_none_or(|n| l.contains(n.as_str()))
            })
            .map(str::to_string)
    })
}

fn when(ms: u64) -> String {
    i64::try_from(ms / 1000)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ms.to_string())
}

/// The session list as text.
pub fn render_list(rows: &[SessionSummary]) -> String {
    if rows.is_empty() {
        return "no live sessions\n".to_string();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<38} {:<12} {:>7} {:<10} {:<20} cwd",
        "session", "front end", "events", "run", "updated"
    );
    for r in rows {
        let aborted = if r.stopped { " (stopped)" } else { "" };
        let _ = writeln!(
            out,
            "{:<38} {:<12} {:>7} {:<10} {:<20} {}{aborted}",
            r.session_id,
            r.front_end,
            r.event_count,
            r.run,
            when(r.updated_ms),
            r.cwd.as_deref().unwrap_or("-"),
        );
    }
    out
}

/// The ended sessions (kept by `SessionEnd`, see [`crate::store::EndedSession`]) as text.
pub fn render_ended_list(rows: &[crate::store::EndedSession]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ended sessions (the last {} kept):\n{:<38} {:<8} {:>6} {:>8} {:>6} {:>6} {:<20} reason",
        crate::store::ENDED_KEPT,
        "session",
        "mode",
        "calls",
        "warnings",
        "blocks",
        "stops",
        "ended"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<38} {:<8} {:>6} {:>8} {:>6} {:>6} {:<20} {}",
            r.session_id,
            r.mode,
            r.calls,
            r.warnings,
            r.blocks,
            r.aborts,
            when(r.ended_ms),
            r.reason.as_deref().unwrap_or("-")
        );
    }
    out
}

/// One ended session as text: its counts and its last warnings, blocks and stops.
pub fn render_ended(r: &crate::store::EndedSession) -> String {
    let would = if r.mode == "observe" { "would-" } else { "" };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "session {} (ended {}: {}; {} mode)",
        r.session_id,
        when(r.ended_ms),
        r.reason.as_deref().unwrap_or("no reason given"),
        r.mode
    );
    let _ = writeln!(
        out,
        "  {} events, {} calls checked: {} {would}warnings, {} {would}blocks, {} {would}stops",
        r.event_count, r.calls, r.warnings, r.blocks, r.aborts
    );
    if let Some(c) = &r.cwd {
        let _ = writeln!(out, "  cwd: {c}");
    }
    if let Some(c) = &r.config {
        let _ = writeln!(out, "  config: {c}");
    }
    if r.decisions.is_empty() {
        let _ = writeln!(out, "  no warning, block or stop");
    } else {
        let _ = writeln!(out, "  last warnings, blocks and stops:");
        for d in &r.decisions {
            let _ = writeln!(
                out,
                "    {:>4} {:<20} {:<12} {:<14} {} {}",
                d.seq,
                when(d.ts_ms),
                d.decision,
                d.tool.as_deref().unwrap_or("-"),
                d.detector.as_deref().unwrap_or("-"),
                d.message.as_deref().unwrap_or("")
            );
        }
    }
    out
}

/// One session's status as text.
pub fn render_session(st: &SessionStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "session {}", st.session_id);
    let _ = writeln!(out, "  front end: {}", st.front_end_description);
    let _ = writeln!(
        out,
        "  {} events, {} calls in history; current run {}; updated {}",
        st.event_count,
        st.history_len,
        st.run,
        when(st.updated_ms)
    );
    if let Some(c) = &st.cwd {
        let _ = writeln!(out, "  cwd: {c}");
    }
    if let Some(c) = &st.config {
        let _ = writeln!(out, "  config: {c}");
    }
    for n in &st.config_notes {
        let _ = writeln!(out, "  WARNING: {n}");
    }
    if let Some(m) = &st.permission_mode {
        let _ = writeln!(out, "  permission mode: {m}");
    }
    match &st.last_fail_open {
        Some(l) => {
            let _ = writeln!(out, "  last fail-open: {l}");
        }
        None => {
            let _ = writeln!(out, "  last fail-open: none in the log");
        }
    }
    if let Some(e) = &st.state_error {
        let _ = writeln!(out, "  state unreadable: {e}");
    }
    if let Some(a) = &st.aborted {
        let _ = writeln!(out, "  STOPPED: {a}");
    }
    match &st.guard {
        Some(g) if g.armed => {
            let _ = writeln!(
                out,
                "  post-compaction guard: armed, {} of {} outcomes left to watch",
                g.remaining, g.window_size
            );
        }
        Some(g) => {
            let _ = writeln!(
                out,
                "  post-compaction guard: idle (window {})",
                g.window_size
            );
        }
        None => {
            let _ = writeln!(out, "  post-compaction guard: idle");
        }
    }
    if st.repeats.is_empty() {
        let _ = writeln!(out, "  repeated calls in this run: none");
    } else {
        let _ = writeln!(out, "  repeated calls in this run (engine tool names):");
        for r in st.repeats.iter().take(8) {
            let _ = writeln!(
                out,
                "    {:<24} args {}  {} calls, {} identical outcomes in a row",
                r.tool, r.args, r.calls, r.identical_outcomes
            );
        }
    }
    let _ = writeln!(out, "  recent events:");
    for e in &st.events {
        let mut line = format!(
            "    #{:<5} {} {:<18} {:<14} {:<12}",
            e.seq,
            when(e.ts_ms),
            e.event,
            e.tool.as_deref().unwrap_or("-"),
            e.decision
        );
        if let (Some(d), Some(c)) = (&e.detector, e.count) {
            let _ = write!(line, " {d} ({c})");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// What `loopguard status` is asked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusQuery {
    /// A session id or a unique prefix of one; `None` lists every session.
    pub session: Option<String>,
    /// The state database (`--state`); default: [`Env::default_state_db`].
    pub state: Option<PathBuf>,
    /// JSON instead of text (`--json`).
    pub json: bool,
    /// How many recent events a session's status shows (`--events`).
    pub events: usize,
}

/// Why `loopguard status` has nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// Neither `--state` nor a state directory.
    #[error("cannot determine the state directory; use --state PATH")]
    NoStateDir,
    /// The database could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No live or ended session has this id or prefix.
    #[error("no session {session} in {}", database.display())]
    NoSession {
        /// The id or prefix asked for.
        session: String,
        /// The database.
        database: PathBuf,
    },
    /// The prefix matches several live sessions.
    #[error("{prefix} matches {} sessions: {}", ids.len(), ids.join(", "))]
    Ambiguous {
        /// The prefix asked for.
        prefix: String,
        /// The sessions it matches.
        ids: Vec<String>,
    },
    /// The prefix matches no live session but several ended ones.
    #[error("{prefix} matches {} ended sessions: {}", ids.len(), ids.join(", "))]
    AmbiguousEnded {
        /// The prefix asked for.
        prefix: String,
        /// The ended sessions it matches.
        ids: Vec<String>,
    },
    /// A status could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Everything `loopguard status` prints on standard output, for `query` in the environment
/// `env` with the current directory `cwd` (where a new session's config and the project's
/// hook settings are looked for).
///
/// Without a session: the database, how many sessions each front end has, the session list
/// ([`render_list`]) and the ended sessions ([`render_ended_list`]), the last fail-open of
/// the log, each session's config notes, the installed hooks that never ran, and the config
/// a session started here would get. With one (an id or a unique prefix): its status
/// ([`render_session`]), or what remains of it once ended ([`render_ended`]). A missing
/// database is not an error: the text says the hook has not run yet.
///
/// ```
/// use loopguard_hook::paths::Env;
/// use loopguard_hook::status::{report, StatusQuery};
/// let dir = tempfile::tempdir()?;
/// let query = StatusQuery { state: Some(dir.path().join("db")), events: 20, ..StatusQuery::default() };
/// let text = report(&query, &Env::default(), None)?;
/// assert!(text.starts_with("no sessions yet: "), "{text}");
/// assert!(text.ends_with("config for a session started here: built-in (no config file: enabled with defaults)\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn report(query: &StatusQuery, env: &Env, cwd: Option<&Path>) -> Result<String, StatusError> {
    let path = match query.state.clone().or_else(|| env.default_state_db()) {
        Some(p) => p,
        None => return Err(StatusError::NoStateDir),
    };
    let mut out = String::new();
    let store = match SqliteStore::open_existing(&path, &SqliteOptions::default()) {
        Ok(s) => s,
        Err(StoreError::Missing { .. }) => {
            missing_database(&mut out, &path, query.json, env, cwd);
            return Ok(out);
        }
        Err(e) => return Err(e.into()),
    };
    let log = existing_log(Some(&path), env);
    let mut ended = ended_sessions(&path, &SqliteOptions::default())?;
    // The state kept for a resume is not for reading.
    for e in &mut ended {
        e.state = None;
    }
    let Some(wanted) = &query.session else {
        let rows = list_sessions(&store)?;
        let last = log.as_deref().and_then(|l| last_fail_open(l, None));
        if query.json {
            let _ = writeln!(
                out,
                "{}",
                serde_json::json!({ "database": path, "log": log, "lastFailOpen": last, "sessions": rows, "ended": ended })
            );
        } else {
            let _ = writeln!(out, "database: {}", path.display());
            let _ = writeln!(
                out,
                "front ends: {}",
                front_end_counts(
                    rows.iter().map(|r| r.front_end),
                    ended.iter().map(ended_front_end)
                )
            );
            out.push_str(&render_list(&rows));
            out.push_str(&render_ended_list(&ended));
            let _ = match (&log, &last) {
                (Some(l), Some(line)) => {
                    writeln!(out, "last fail-open (log {}): {line}", l.display())
                }
                (Some(l), None) => writeln!(out, "log: {} (no fail-open in it)", l.display()),
                (None, _) => writeln!(out, "log: none written yet"),
            };
            let _ = writeln!(
                out,
                "the agents' own session logs: loopguard replay --agent all --since 7d (docs/replay.md)"
            );
            // The config each session's hook loads: unreadable means unprotected.
            for r in &rows {
                for n in config_notes(r.config.as_deref(), r.agent.as_deref()) {
                    let _ = writeln!(out, "WARNING: session {}: {n}", r.session_id);
                }
            }
            let ran = rows
                .iter()
                .map(|r| r.front_end)
                .chain(ended.iter().map(ended_front_end));
            for n in never_ran_notes(env, cwd, ran) {
                let _ = writeln!(out, "WARNING: {n}");
            }
            config_here(&mut out, env, cwd);
        }
        return Ok(out);
    };
    let rows = list_sessions(&store)?;
    let id = if rows.iter().any(|r| r.session_id == *wanted) {
        wanted.clone()
    } else {
        let matches: Vec<_> = rows
            .into_iter()
            .filter(|r| r.session_id.starts_with(wanted.as_str()))
            .map(|r| r.session_id)
            .collect();
        match matches.as_slice() {
            [one] => one.clone(),
            [] => {
                // An ended session: what remains of it (SessionEnd keeps a summary).
                let found: Vec<_> = ended
                    .iter()
                    .filter(|e| e.session_id.starts_with(wanted.as_str()))
                    .collect();
                let found = match found.iter().find(|e| e.session_id == *wanted) {
                    Some(exact) => vec![*exact],
                    None => found,
                };
                match found.as_slice() {
                    [one] if query.json => {
                        let mut v = serde_json::to_value(one)?;
                        v["ended"] = serde_json::json!(true);
                        let _ = writeln!(out, "{v}");
                    }
                    [one] => out.push_str(&render_ended(one)),
                    [] => {
                        return Err(StatusError::NoSession {
                            session: wanted.clone(),
                            database: path,
                        })
                    }
                    many => {
                        return Err(StatusError::AmbiguousEnded {
                            prefix: wanted.clone(),
                            ids: many.iter().map(|e| e.session_id.clone()).collect(),
                        })
                    }
                }
                return Ok(out);
            }
            _ => {
                return Err(StatusError::Ambiguous {
                    prefix: wanted.clone(),
                    ids: matches,
                })
            }
        }
    };
    let Some(mut st) = session_status(&store, &id, query.events)? else {
        return Err(StatusError::NoSession {
            session: id,
            database: path,
        });
    };
    st.last_fail_open = log.as_deref().and_then(|l| last_fail_open(l, Some(&id)));
    if query.json {
        let _ = writeln!(out, "{}", serde_json::to_string(&st)?);
    } else {
        out.push_str(&render_session(&st));
    }
    Ok(out)
}

/// What `status` says when the database does not exist yet.
fn missing_database(out: &mut String, path: &Path, json: bool, env: &Env, cwd: Option<&Path>) {
    if json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::json!({ "database": path, "sessions": [] })
        );
    } else {
        let _ = writeln!(
            out,
            "no sessions yet: {} does not exist (the hook has not run, or failed before it could create it)",
            path.display()
        );
    }
    if let Some(l) = existing_log(Some(path), env) {
        if let Some(line) = last_fail_open(&l, None) {
            let _ = writeln!(out, "last fail-open (log {}): {line}", l.display());
        }
    }
    if !json {
        for n in never_ran_notes(env, cwd, std::iter::empty()) {
            let _ = writeln!(out, "WARNING: {n}");
        }
        config_here(out, env, cwd);
    }
}

/// The config a hook started in `cwd` would load, and where it is weaker than it looks (a
/// new session gets it).
fn config_here(out: &mut String, env: &Env, cwd: Option<&Path>) {
    match HookConfig::discover(None, cwd, env) {
        Ok(c) => {
            let _ = writeln!(out, "config for a session started here: {}", c.source);
            for n in policy_notes(&c.policy_for(None)) {
                let _ = writeln!(out, "WARNING: {n}");
            }
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "WARNING: config for a session started here: {e}: every hook call fails open (nothing is checked)"
            );
        }
    }
}

/// How many sessions each front end has in the database, live and ended (a front end whose
/// sessions all ended did run: an agent that ends its sessions, as Gemini CLI, Copilot CLI
/// and Droid do, leaves no live one behind).
fn front_end_counts<'a>(
    live: impl Iterator<Item = &'a str>,
    ended: impl Iterator<Item = &'a str>,
) -> String {
    let mut counts: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for name in live {
        counts.entry(name).or_default().0 += 1;
    }
    for name in ended {
        counts.entry(name).or_default().1 += 1;
    }
    if counts.is_empty() {
        return "none yet".into();
    }
    counts
        .iter()
        .map(|(k, &(live, ended))| match (live, ended) {
            (n, 0) => format!("{k} ({n} session{})", if n == 1 { "" } else { "s" }),
            (0, e) => format!("{k} ({e} ended)"),
            (n, e) => format!(
                "{k} ({n} session{}, {e} ended)",
                if n == 1 { "" } else { "s" }
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The front end of an ended session ([`FrontEnd::of`], with the config its hook recorded).
fn ended_front_end(e: &crate::store::EndedSession) -> &'static str {
    let mut meta = std::collections::BTreeMap::new();
    if let Some(c) = &e.config {
        meta.insert("config".to_string(), c.clone());
    }
    FrontEnd::of(&e.session_id, &meta).key()
}

/// Agents whose hook is installed (in the user's settings under `env.home`, or the
/// project's in `cwd`) while no session of theirs is among `front_ends`: the hook never
/// ran. For Codex the usual cause is trust: Codex runs a new hook only once the user
/// reviewed it, and `codex exec` skips an untrusted one without a word.
fn never_ran_notes<'a>(
    env: &Env,
    cwd: Option<&Path>,
    front_ends: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    let seen: std::collections::HashSet<Agent> =
        front_ends.filter_map(|f| f.parse::<Agent>().ok()).collect();
    let mut notes = Vec::new();
    for &agent in loopguard_agents::AGENTS {
        // Claude Code runs every hook it finds (no trust step), and the plugin installs it
        // without a settings file: nothing to notice there.
        if seen.contains(&agent) || agent == Agent::ClaudeCode {
            continue;
        }
        let mut paths = Vec::new();
        if let Ok(p) = agent_install::settings_path(agent, env.home.as_deref(), None) {
            paths.push(p);
        }
        if let Some(d) = cwd {
            if let Ok(p) = agent_install::settings_path(agent, None, Some(d)) {
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
        for p in paths {
            match agent_install::is_installed(agent, &p) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    notes.push(format!("{agent}: cannot read its hook settings: {e}"));
                    continue;
                }
            }
            let why = match agent {
                Agent::Codex => "Codex skips untrusted hooks; run /hooks in Codex to trust it (`codex exec` skips it without a word; `--dangerously-bypass-hook-trust` runs it for one invocation)".to_string(),
                _ => format!("no {agent} session has used it yet (or its hook command writes to another --state database)"),
            };
            notes.push(format!(
                "{agent}: hook installed in {} but never ran: {why}",
                p.display()
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run, HookOptions};
    use loopguard_agents::Agent;

    #[test]
    fn status_shows_streaks_and_guard() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let opts = HookOptions {
            state: Some(db.clone()),
            ..HookOptions::default()
        };
        let send = |j: String| run(Agent::ClaudeCode, j.as_bytes(), &opts);
        send(r#"{"session_id":"s","hook_event_name":"UserPromptSubmit"}"#.into());
        for i in 0..4 {
            for ev in ["PreToolUse", "PostToolUse"] {
                send(format!(
                    r#"{{"session_id":"s","hook_event_name":"{ev}","tool_name":"Bash","tool_input":{{"command":"ls"}},"tool_use_id":"t{i}","tool_response":{{"stdout":"a","stderr":"","interrupted":false}}}}"#
                ));
            }
        }
        send(r#"{"session_id":"s","hook_event_name":"PostCompact","trigger":"manual","compact_summary":"…"}"#.into());
        let store = SqliteStore::open_existing(&db, &Default::default()).unwrap();
        let st = session_status(&store, "s", 50).unwrap().unwrap();
        assert_eq!(st.run, "prompt-1");
        assert_eq!(st.event_count, 10);
        assert_eq!(
            st.repeats,
            vec![Repeat {
                tool: "exec".into(),
                args: st.repeats[0].args.clone(),
                calls: 4,
                identical_outcomes: 4
            }]
        );
        assert_eq!(
            st.guard,
            Some(GuardState {
                armed: true,
                remaining: 3,
                window_size: 3
            })
        );
        let text = render_session(&st);
        assert!(text.contains("armed, 3 of 3"), "{text}");
        assert!(text.contains("4 calls, 4 identical outcomes"), "{text}");
        assert!(render_list(&list_sessions(&store).unwrap()).contains("prompt-1"));
        assert!(session_status(&store, "nope", 5).unwrap().is_none());
        let json = serde_json::to_value(&st).unwrap();
        assert_eq!(json["events"][0]["event"], "UserPromptSubmit");
    }

    /// A sandbox: home, state and config directories under one temporary directory.
    fn sandbox() -> (tempfile::TempDir, Env) {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            home: Some(dir.path().join("home")),
            state_home: Some(dir.path().join("state")),
            config_home: Some(dir.path().join("config")),
            project_dir: None,
            path: None,
        };
        (dir, env)
    }

    fn query(session: Option<&str>, json: bool) -> StatusQuery {
        StatusQuery {
            session: session.map(str::to_string),
            json,
            events: 20,
            ..StatusQuery::default()
        }
    }

    #[test]
    fn a_missing_database_says_why_and_what_would_run() {
        let (dir, env) = sandbox();
        let db = env.default_state_db().unwrap();
        // A Codex hook installed for the user, a Gemini one in the project, neither ran.
        let codex = agent_install::settings_path(Agent::Codex, env.home.as_deref(), None).unwrap();
        agent_install::install(Agent::Codex, &codex, "loopguard hook codex").unwrap();
        let work = dir.path().join("work");
        let gemini = agent_install::settings_path(Agent::Gemini, None, Some(&work)).unwrap();
        agent_install::install(Agent::Gemini, &gemini, "loopguard hook gemini").unwrap();
        std::fs::write(
            work.join(".loopguard.json5"),
            "{ tools: { loopDetection: { enabled: false } } }",
        )
        .unwrap();
        let text = report(&query(None, false), &env, Some(&work)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            format!("no sessions yet: {} does not exist (the hook has not run, or failed before it could create it)", db.display())
        );
        assert_eq!(
            lines[1],
            format!("WARNING: codex: hook installed in {} but never ran: Codex skips untrusted hooks; run /hooks in Codex to trust it (`codex exec` skips it without a word; `--dangerously-bypass-hook-trust` runs it for one invocation)", codex.display())
        );
        assert_eq!(
            lines[2],
            format!("WARNING: gemini: hook installed in {} but never ran: no gemini session has used it yet (or its hook command writes to another --state database)", gemini.display())
        );
        assert_eq!(
            lines[3],
            format!(
                "config for a session started here: {} (project)",
                work.join(".loopguard.json5").display()
            )
        );
        assert!(
            lines[4].starts_with("WARNING: enabled is not true"),
            "{text}"
        );
        assert_eq!(lines.len(), 5, "{text}");
        // Without the current directory, the project's hook and config are not looked for;
        // a broken user config means every call fails open.
        let user = env.user_config().unwrap();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, "{ nope").unwrap();
        let text = report(&query(None, false), &env, None).unwrap();
        assert!(!text.contains("gemini"), "{text}");
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(&format!(
                "WARNING: config for a session started here: bad config {}",
                user.display()
            )) && last.ends_with(": every hook call fails open (nothing is checked)"),
            "{last}"
        );
        // JSON: the database and no sessions, then the log's last fail-open.
        let log = crate::paths::log_file_for(&db);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(
            &log,
            "t loopguard: session s: bad; the call is allowed (fail-open). Log: x\n",
        )
        .unwrap();
        let text = report(&query(None, true), &env, Some(&work)).unwrap();
        assert_eq!(
            text,
            format!(
                "{}\nlast fail-open (log {}): t loopguard: session s: bad; the call is allowed (fail-open). Log: x\n",
                serde_json::json!({ "database": db, "sessions": [] }),
                log.display()
            )
        );
    }

    #[test]
    fn sessions_are_listed_found_by_prefix_and_ended() {
        let (dir, env) = sandbox();
        let opts = HookOptions {
            env: env.clone(),
            ..HookOptions::default()
        };
        let send = |j: String| run(Agent::ClaudeCode, j.as_bytes(), &opts);
        for id in ["abc-1", "abc-2", "end-1", "end-2"] {
            send(format!(
                r#"{{"session_id":"{id}","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{{}}}}"#
            ));
        }
        for id in ["end-1", "end-2"] {
            send(format!(
                r#"{{"session_id":"{id}","hook_event_name":"SessionEnd","reason":"clear"}}"#
            ));
        }
        let db = env.default_state_db().unwrap();
        let text = report(&query(None, false), &env, Some(dir.path())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("database: {}", db.display()));
        assert_eq!(lines[1], "front ends: claude-code (2 sessions, 2 ended)");
        assert!(lines[2].starts_with("session "), "{text}");
        assert!(text.contains("ended sessions (the last "), "{text}");
        let log = crate::paths::log_file_for(&db);
        assert!(
            text.contains(&format!("\nlog: {} (no fail-open in it)\n", log.display())),
            "{text}"
        );
        assert_eq!(
            lines.last(),
            Some(&"config for a session started here: built-in (no config file: enabled with defaults)")
        );
        let json: serde_json::Value =
            serde_json::from_str(&report(&query(None, true), &env, None).unwrap()).unwrap();
        assert_eq!(json["sessions"].as_array().unwrap().len(), 2);
        assert_eq!(json["ended"].as_array().unwrap().len(), 2);
        assert_eq!(json["log"], serde_json::json!(log));
        assert_eq!(json["lastFailOpen"], serde_json::Value::Null);

        let one = report(&query(Some("abc-1"), false), &env, None).unwrap();
        assert!(
            one.starts_with("session abc-1\n  front end: Claude Code hook"),
            "{one}"
        );
        let e = report(&query(Some("abc"), false), &env, None).unwrap_err();
        assert_eq!(e.to_string(), "abc matches 2 sessions: abc-2, abc-1");
        let e = report(&query(Some("end"), false), &env, None).unwrap_err();
        assert_eq!(e.to_string(), "end matches 2 ended sessions: end-2, end-1");
        let e = report(&query(Some("nope"), false), &env, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("no session nope in {}", db.display())
        );
        let ended = report(&query(Some("end-1"), false), &env, None).unwrap();
        assert!(ended.starts_with("session end-1 (ended "), "{ended}");
        let ended: serde_json::Value =
            serde_json::from_str(&report(&query(Some("end-2"), true), &env, None).unwrap())
                .unwrap();
        assert_eq!(ended["ended"], true);
        assert_eq!(ended["sessionId"], "end-2");
    }

    #[test]
    fn no_state_directory_and_an_unreadable_database_are_errors() {
        let e = report(&query(None, false), &Env::default(), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot determine the state directory; use --state PATH"
        );
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, "not a database".repeat(100)).unwrap();
        let q = StatusQuery {
            state: Some(garbage),
            ..query(None, false)
        };
        assert!(matches!(
            report(&q, &Env::default(), None),
            Err(StatusError::Store(_))
        ));
    }

    #[test]
    fn an_agent_whose_sessions_ended_ran_and_is_not_never_seen() {
        let (dir, env) = sandbox();
        let work = dir.path().join("work");
        let gemini = agent_install::settings_path(Agent::Gemini, None, Some(&work)).unwrap();
        agent_install::install(Agent::Gemini, &gemini, "loopguard hook gemini").unwrap();
        let opts = HookOptions {
            env: env.clone(),
            ..HookOptions::default()
        };
        for event in [
            r#"{"session_id":"g1","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"path":"a"},"cwd":"/w","transcript_path":""}"#,
            r#"{"session_id":"g1","hook_event_name":"SessionEnd","reason":"exit","cwd":"/w","transcript_path":""}"#,
        ] {
            run(Agent::Gemini, event.as_bytes(), &opts);
        }
        let text = report(&query(None, false), &env, Some(&work)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "front ends: gemini (1 ended)", "{text}");
        assert!(!text.contains("never ran"), "{text}");
        // Installed and never seen is still said.
        let codex = agent_install::settings_path(Agent::Codex, env.home.as_deref(), None).unwrap();
        agent_install::install(Agent::Codex, &codex, "loopguard hook codex").unwrap();
        let text = report(&query(None, false), &env, Some(&work)).unwrap();
        assert!(text.contains("WARNING: codex: hook installed in"), "{text}");
        assert!(!text.contains("gemini: hook installed"), "{text}");
    }

    #[test]
    fn front_ends_are_counted() {
        assert_eq!(
            front_end_counts(std::iter::empty(), std::iter::empty()),
            "none yet"
        );
        assert_eq!(
            front_end_counts(["mcp", "codex", "mcp"].into_iter(), std::iter::empty()),
            "codex (1 session), mcp (2 sessions)"
        );
        assert_eq!(
            front_end_counts(["codex"].into_iter(), ["gemini", "codex"].into_iter()),
            "codex (1 session, 1 ended), gemini (1 ended)"
        );
    }
}
