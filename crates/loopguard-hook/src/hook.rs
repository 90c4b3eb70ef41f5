//! One hook invocation of the CLI: payload in, the agent's answer out, state saved in the
//! SQLite database. The protocol itself (what each event does, each agent's answer) is
//! `loopguard-agents`'; this module is the shell around it: the database, the config that
//! applies, fail-open with one line on stderr and in the log, and what outlives a session
//! (the session's end keeps a summary of it, [`crate::store::EndedSession`], before the
//! protocol forgets it).
//!
//! **Fail open**: any error (an unreadable payload, a bad config, a corrupt, locked or
//! unwritable database) gives the answer that lets the call go on, and one line on stderr
//! and in the log file. [`run`] never fails and never panics.
//!
//! ```
//! use loopguard_agents::Agent;
//! use loopguard_hook::{run, HookOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let opts = HookOptions { state: Some(dir.path().join("db.sqlite3")), ..HookOptions::default() };
//! let call = br#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read",
//!     "tool_input":{"file_path":"/a"},"tool_use_id":"t1"}"#;
//! let reply = run(Agent::ClaudeCode, call, &opts);
//! assert_eq!(reply.stdout, "");        // allowed, nothing to say
//! assert!(reply.stderr.is_empty());
//! let garbage = run(Agent::ClaudeCode, b"not json", &opts);
//! assert_eq!(garbage.stdout, "");      // still allowed
//! assert!(garbage.stderr[0].contains("fail-open"));
//! let cline = run(Agent::Cline, b"not json", &opts);
//! assert_eq!(cline.stdout, "{\"cancel\":false}\n"); // Cline must always get JSON
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use loopguard_agents::{Agent, AgentError, AgentReply, Kind, RunError, Scope};
use loopguard_core::Mode;
use loopguard_guard::{Guard, SqliteStore, ToolProfile};

use crate::config::{ConfigError, HookConfig};
use crate::paths::{log_candidates, Env};
use crate::store::{SqliteOptions, StoreError};

/// How the hook runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookOptions {
    /// The database (`--state`); default: see [`crate::paths`].
    pub state: Option<PathBuf>,
    /// The config file (`--config`); default: discovered, see [`crate::config`].
    pub config: Option<PathBuf>,
    /// The agent id whose `agents.list[]` entry applies (`--agent`); default: the
    /// payload's `agent_type`, else none.
    pub agent: Option<String>,
    /// `Enforce` blocks and stops; `Observe` only records what it would have done.
    pub mode: Mode,
    /// Database behaviour (busy timeout, idle-session pruning).
    pub store: SqliteOptions,
    /// Where home, state and config directories are.
    pub env: Env,
    /// The clock (ms since the epoch); `None` reads the system clock. (The alert spool
    /// always reads the system clock: its due times are for another process.)
    pub now_ms: Option<u64>,
    /// The program started, detached, to deliver spooled alerts, as `PROGRAM alerts
    /// deliver --state DB` ([`crate::alerts`]); `None`: this executable, which is
    /// `loopguard` when the hook runs as `loopguard hook AGENT`.
    pub deliverer: Option<PathBuf>,
}

impl Default for HookOptions {
    fn default() -> Self {
        HookOptions {
            state: None,
            config: None,
            agent: None,
            mode: Mode::Enforce,
            store: SqliteOptions::default(),
            env: Env::default(),
            now_ms: None,
            deliverer: None,
        }
    }
}

impl HookOptions {
    /// The database path these options resolve to.
    pub fn state_path(&self) -> Option<PathBuf> {
        self.state.clone().or_else(|| self.env.default_state_db())
    }

    fn now(&self) -> u64 {
        self.now_ms.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0)
        })
    }
}

/// Anything that makes the hook fail open.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The payload could not be read.
    #[error(transparent)]
    Payload(#[from] AgentError),
    /// The config could not be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The live-guard layer failed.
    #[error(transparent)]
    Guard(#[from] loopguard_guard::GuardError),
    /// The agent's protocol could not answer the event.
    #[error(transparent)]
    Agent(#[from] RunError),
    /// No state directory could be determined.
    #[error("no state directory (neither XDG_STATE_HOME nor HOME is set); pass --state PATH")]
    NoStateDir,
}

/// Handles one hook payload of `agent` (`loopguard hook AGENT`): the agent's protocol
/// ([`loopguard_agents::answer_event`]) over this database, with the config found from the
/// event's working directory. Never fails and never panics: any error gives the answer the
/// agent reads as "go on" ([`Agent::allow`]), and one line on stderr and in the log naming
/// the session when it is known.
pub fn run(agent: Agent, input: &[u8], opts: &HookOptions) -> AgentReply {
    let mut notes = Vec::new();
    let mut session = None;
    let mut spooled = false;
    let result = handle(agent, input, opts, &mut notes, &mut session, &mut spooled);
    // Alerts spooled now, or due from an earlier failed delivery: handed to a detached
    // delivery process (never waited for).
    if let Some(db) = opts.state_path() {
        let now = crate::alerts::now_ms();
        if let Some(line) = crate::alerts::hand_off(&db, opts.deliverer.as_deref(), now, spooled) {
            log_line(opts, &line);
        }
    }
    match result {
        Ok(mut reply) => {
            for n in &notes {
                log_line(opts, n);
            }
            reply.stderr.splice(0..0, notes);
            reply
        }
        Err(e) => {
            let log = open_log(opts);
            let who = match session {
                Some(s) => format!("session {s}: "),
                None => format!("{agent} hook: "),
            };
            let line = match &log {
                Some((path, _)) => format!(
                    "loopguard: {who}{e}; the call is allowed (fail-open). Log: {}",
                    path.display()
                ),
                None => format!(
                    "loopguard: {who}{e}; the call is allowed (fail-open). No log file could be written ({})",
                    log_candidates(opts.state_path().as_deref(), &opts.env)
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            notes.push(line);
            if let Some((_, mut f)) = log {
                for n in &notes {
                    write_stamped(&mut f, n);
                }
            }
            AgentReply {
                stderr: notes,
                error: Some(e.to_string()),
                ..AgentReply::allow(agent)
            }
        }
    }
}

/// The log file, opened for appending: beside the database if its directory exists or
/// can be created, else in the state directory, else in the temporary directory (see
/// [`log_candidates`]). The log is rotated at 1 MiB.
fn open_log(opts: &HookOptions) -> Option<(PathBuf, std::fs::File)> {
    log_candidates(opts.state_path().as_deref(), &opts.env)
        .into_iter()
        .find_map(|path| {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).ok()?;
            }
            if std::fs::metadata(&path).is_ok_and(|m| m.len() > 1 << 20) {
                let _ = std::fs::rename(&path, path.with_extension("log.1"));
            }
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .ok()?;
            Some((path, f))
        })
}

fn write_stamped(f: &mut std::fs::File, line: &str) {
    use std::io::Write;
    let stamp = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let _ = writeln!(f, "{stamp} {line}");
}

/// Appends a line to the log file (best effort) and says where it went: beside the
/// database, or where [`log_candidates`] falls back to when that directory cannot exist.
pub fn log_line(opts: &HookOptions, line: &str) -> Option<PathBuf> {
    let (path, mut f) = open_log(opts)?;
    write_stamped(&mut f, line);
    Some(path)
}

/// `loopguard alerts deliver`: one try for every alert due in the spool of the hook's
/// database ([`crate::alerts`]), each outcome a line in the hook's log, and returned for
/// the command to print.
pub fn deliver_alerts(
    opts: &HookOptions,
) -> Result<Vec<loopguard_alerts::SpoolOutcome>, HookError> {
    let db = opts.state_path().ok_or(HookError::NoStateDir)?;
    let outcomes = crate::alerts::deliver(&db);
    for o in &outcomes {
        log_line(opts, &o.log_line());
    }
    Ok(outcomes)
}

fn handle(
    agent: Agent,
    input: &[u8],
    opts: &HookOptions,
    notes: &mut Vec<String>,
    session: &mut Option<String>,
    spooled: &mut bool,
) -> Result<AgentReply, HookError> {
    let protocol = agent.protocol();
    let payload = loopguard_agents::parse_payload(input)?;
    let ev = loopguard_agents::read(protocol, &payload)?;
    *session = Some(ev.session.clone());
    if ev.kind == Kind::Ignore {
        return Ok(AgentReply::allow(agent));
    }
    let path = opts.state_path().ok_or(HookError::NoStateDir)?;
    // Ending a session, or going on with a run, needs no database where there is none, and
    // no config (a broken one must not keep a session from being forgotten, or a stop from
    // being said).
    let reads_only = matches!(ev.kind, Kind::End | Kind::Continuation);
    if reads_only && !path.is_file() {
        return Ok(AgentReply::allow(agent));
    }
    let config = if reads_only {
        HookConfig::builtin()
    } else {
        HookConfig::discover(
            opts.config.as_deref(),
            ev.cwd.as_deref().map(std::path::Path::new),
            &opts.env,
        )?
    };
    let targets = crate::alerts::targets(&config.config);
    let store = SqliteStore::open(&path, &opts.store)?;
    if ev.kind == Kind::Prompt {
        resume_ended(&store, &path, opts, &ev.session)?;
    }
    if ev.kind == Kind::End {
        // Claude Code names why in `reason`; the others' own end event says it (Cline's
        // `TaskCancel`, Gemini's `SessionEnd`).
        let reason = match agent {
            Agent::ClaudeCode => payload
                .get("reason")
                .and_then(loopguard_core::Value::as_str)
                .map(str::to_string),
            _ => Some(format!("{agent} {}", ev.event)),
        };
        keep_ended(&store, &path, opts, &ev.session, reason.as_deref())?;
    }
    // The hook is a thin shell over the agents layer's protocol and the live-guard layer:
    // the Claude Code tool profile and this database make the same decisions as replaying
    // the session's transcript or posting the same payloads to `loopguard serve`.
    let guard = Guard::builder()
        .config(config.openclaw())
        .profile(ToolProfile::ClaudeCode)
        .mode(opts.mode)
        .store(Arc::new(store))
        .log_size(crate::store::EVENTS_KEPT)
        .build();
    // Claude Code's sessions are labelled with the config's source alone, as they always
    // were; the other agents' name the agent.
    let source = match agent {
        Agent::ClaudeCode => config.source.to_string(),
        _ => format!("{} ({agent})", config.source),
    };
    let scope = Scope {
        tenant: None,
        agent_id: opts.agent.as_deref(),
        config: &source,
        now: opts.now(),
    };
    let reply = loopguard_agents::answer_event(protocol, &guard, &ev, &scope, notes)?;
    // The loop history's steps of the decisions with a finding (the alerts' input), keyed
    // as `serve` keys them.
    let loops: Vec<_> = reply
        .decided
        .iter()
        .filter_map(|d| {
            loopguard_guard::LoopStep::of(None, &d.decision, opts.mode == Mode::Observe, scope.now)
        })
        .map(|mut step| {
            step.agent = opts.agent.clone();
            step
        })
        .collect();
    if !targets.is_empty() && !loops.is_empty() {
        *spooled = crate::alerts::spool_steps(
            guard.store().as_ref(),
            &path,
            &targets,
            loops,
            protocol.name(),
            crate::alerts::now_ms(),
            notes,
        ) > 0;
    }
    // Under `loopguard run`, the wrapper learns the critical decisions from its log.
    if let Err(e) = crate::wrap::record(protocol.name(), &ev.session, &reply.logged) {
        log_line(
            opts,
            &format!("loopguard: session {}: verdict log: {e}", ev.session),
        );
    }
    if opts.mode == Mode::Observe {
        // Observe mode shows the model nothing: the log is where would-be decisions are
        // reviewed (one line each, as they happen; the session's end adds the summary).
        for row in reply.logged.iter().filter(|r| r.decision.is_observed()) {
            log_line(
                opts,
                &format!(
                    "loopguard: session {}: {} {} ({}, count {}): {}",
                    ev.session,
                    row.decision,
                    row.tool.as_deref().unwrap_or("-"),
                    row.detector.as_deref().unwrap_or("-"),
                    row.count.unwrap_or(0),
                    row.message.as_deref().unwrap_or("")
                ),
            );
        }
    }
    Ok(reply)
}

/// A prompt of a session that has no live state but ended here before (`claude --resume
/// ID`, `claude --continue`, a resumed Cline task): the state it ended with is put back, so
/// the resumed session goes on with its loop state, one session, as replay of its
/// transcript reads it.
fn resume_ended(
    store: &SqliteStore,
    path: &std::path::Path,
    opts: &HookOptions,
    session: &str,
) -> Result<(), HookError> {
    use loopguard_guard::Store as _;
    let key = crate::store::key(session);
    if store.load(&key)?.is_some() {
        return Ok(());
    }
    if let Some(entry) = crate::store::take_ended_state(path, &opts.store, session)? {
        let mut entry = Some(entry);
        store.update(&key, &mut |e| {
            if let Some(resumed) = entry.take() {
                *e = resumed;
            }
        })?;
        log_line(
            opts,
            &format!("loopguard: session {session} resumed with the loop state it ended with"),
        );
    }
    Ok(())
}

/// What loopguard did (or, observing, would have done) outlives the session: before the
/// session's state is forgotten, a bounded summary goes into the database for `loopguard
/// status`, and a line into the log. Every agent's session end does this.
fn keep_ended(
    store: &SqliteStore,
    path: &std::path::Path,
    opts: &HookOptions,
    session: &str,
    reason: Option<&str>,
) -> Result<(), HookError> {
    use loopguard_guard::Store as _;
    if let Some(entry) = store.load(&crate::store::key(session))? {
        let ended = crate::store::EndedSession::of(session, &entry, reason, opts.mode, opts.now());
        crate::store::record_ended(path, &opts.store, &ended)?;
        log_line(opts, &ended.log_line());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    struct Harness {
        _dir: tempfile::TempDir,
        opts: HookOptions,
        n: u64,
    }

    impl Harness {
        fn new(config: Option<&str>) -> Harness {
            let dir = tempfile::tempdir().unwrap();
            let config = config.map(|c| {
                let p = dir.path().join("config.json5");
                std::fs::write(&p, c).unwrap();
                p
            });
            let opts = HookOptions {
                state: Some(dir.path().join("state/db.sqlite3")),
                config,
                env: Env {
                    home: Some(dir.path().join("home")),
                    ..Env::default()
                },
                now_ms: Some(1_000_000),
                ..HookOptions::default()
            };
            Harness {
                _dir: dir,
                opts,
                n: 0,
            }
        }

        fn send(&mut self, json: &str) -> AgentReply {
            self.n += 1;
            self.opts.now_ms = Some(1_000_000 + self.n);
            let r = run(Agent::ClaudeCode, json.as_bytes(), &self.opts);
            assert!(r.error.is_none(), "{:?}", r.error);
            r
        }

        fn pre(&mut self, tool: &str, input: &str, id: &str) -> Option<Json> {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}"}}"#
            ));
            (!r.stdout.is_empty()).then(|| serde_json::from_str(&r.stdout).unwrap())
        }

        fn event(&mut self, name: &str, extra: &str) {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"{name}"{extra}}}"#
            ));
            assert_eq!(r.stdout, "");
        }
    }

    #[test]
    fn permission_mode_is_recorded() {
        use loopguard_guard::Store as _;
        let mut h = Harness::new(None);
        h.send(r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","permission_mode":"acceptEdits","prompt":"go"}"#);
        // An event without the field keeps the last one.
        h.pre("Read", "{}", "a");
        let store = crate::store::SqliteStore::open(
            h.opts.state.as_ref().unwrap(),
            &SqliteOptions::default(),
        )
        .unwrap();
        let entry = store.load(&crate::store::key("s")).unwrap().unwrap();
        assert_eq!(
            entry
                .meta
                .get(loopguard_agents::PERMISSION_MODE)
                .map(String::as_str),
            Some("acceptEdits")
        );
    }

    #[test]
    fn session_end_forgets_the_session() {
        use loopguard_guard::Store as _;
        let mut h = Harness::new(None);
        // Without a database, ending a session creates none.
        h.event("SessionEnd", r#","reason":"clear""#);
        assert!(!h.opts.state.as_ref().unwrap().exists());
        h.pre("Read", "{}", "a");
        let store = crate::store::SqliteStore::open(
            h.opts.state.as_ref().unwrap(),
            &SqliteOptions::default(),
        )
        .unwrap();
        assert!(store.load(&crate::store::key("s")).unwrap().is_some());
        // A broken config does not keep the session from being forgotten.
        std::fs::write(
            h.opts.state.as_ref().unwrap().with_file_name("bad.json5"),
            "{ nope",
        )
        .unwrap();
        h.opts.config = Some(h.opts.state.as_ref().unwrap().with_file_name("bad.json5"));
        h.event("SessionEnd", r#","reason":"other""#);
        assert!(store.load(&crate::store::key("s")).unwrap().is_none());
    }

    /// `claude --resume ID` / `--continue`: the session ended (its state forgotten, its
    /// summary kept), then a prompt under the same id takes the state back, and the session
    /// goes on where it stopped: its `callsPerSession` budget counts the calls made before
    /// the resume. `status` never shows the kept state.
    #[test]
    fn a_resumed_session_goes_on_with_the_state_it_ended_with() {
        use loopguard_guard::Store as _;
        let mut h = Harness::new(Some(
            "{ tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 10 } } }",
        ));
        let call = |h: &mut Harness, i: usize| {
            let id = format!("t{i}");
            let input = format!(r#"{{"file_path":"/a{i}"}}"#);
            let answer = h.pre("Read", &input, &id);
            h.send(&format!(
                r#"{{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{input},"tool_use_id":"{id}","tool_response":"text {i}"}}"#
            ));
            answer
        };
        let denied = |a: &Option<Json>| {
            a.as_ref()
                .is_some_and(|a| a["hookSpecificOutput"]["permissionDecision"] == "deny")
        };
        h.event("UserPromptSubmit", r#","prompt":"go""#);
        for i in 1..=9 {
            assert!(!denied(&call(&mut h, i)), "call {i}");
        }
        h.event("SessionEnd", r#","reason":"other""#);
        let path = h.opts.state.clone().unwrap();
        let store = crate::store::SqliteStore::open(&path, &SqliteOptions::default()).unwrap();
        assert!(store.load(&crate::store::key("s")).unwrap().is_none());
        let status = crate::status::report(
            &crate::status::StatusQuery {
                session: None,
                state: Some(path.clone()),
                json: true,
                events: 10,
            },
            &h.opts.env,
            None,
        )
        .unwrap();
        assert!(status.contains("\"ended\":[{"), "{status}");
        assert!(!status.contains("\"state\""), "{status}");
        // Resumed: the session's 10th call may run, its 11th is past the budget.
        h.event("UserPromptSubmit", r#","prompt":"again""#);
        let entry = store.load(&crate::store::key("s")).unwrap().unwrap();
        assert_eq!(entry.stats.calls, 9);
        assert_eq!(entry.run_seq, 2);
        assert!(!denied(&call(&mut h, 10)));
        let refused = call(&mut h, 11);
        assert!(denied(&refused), "{refused:?}");
        assert!(
            refused.unwrap().to_string().contains("callsPerSession"),
            "the session budget refused it"
        );
        // The state was taken once; the record keeps its summary.
        let ended = crate::store::ended_sessions(&path, &SqliteOptions::default()).unwrap();
        assert_eq!(ended[0].state, None);
        assert_eq!(ended[0].calls, 9);
    }

    #[test]
    fn failures_fail_open_with_one_line() {
        let mut h = Harness::new(Some("{ tools: { loopDetection: { enabeld: true } } }"));
        let r = run(
            Agent::ClaudeCode,
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}"#,
            &h.opts,
        );
        assert_eq!(r.stdout, "");
        assert_eq!(r.stderr.len(), 1);
        assert!(
            r.stderr[0].contains("enabeld") && r.stderr[0].contains("fail-open"),
            "{}",
            r.stderr[0]
        );
        let log =
            std::fs::read_to_string(crate::paths::log_file_for(h.opts.state.as_ref().unwrap()))
                .unwrap();
        assert!(log.contains("enabeld"));
        // Events that need no state never read the config.
        h.n = 0;
        let r = run(
            Agent::ClaudeCode,
            br#"{"session_id":"s","hook_event_name":"Stop"}"#,
            &h.opts,
        );
        assert!(r.error.is_none());
    }

    #[test]
    fn a_damaged_session_row_starts_afresh_loudly() {
        let mut h = Harness::new(None);
        h.pre("Read", "{}", "a");
        {
            let conn = rusqlite::Connection::open(h.opts.state.as_ref().unwrap()).unwrap();
            conn.execute("UPDATE sessions SET entry = x'7b67617262616765'", [])
                .unwrap();
        }
        let r = h.send(r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}"#);
        assert_eq!(r.stdout, "");
        assert!(r.stderr[0].contains("starting it afresh"), "{:?}", r.stderr);
    }

    #[test]
    fn every_agent_fails_open_with_its_go_on_answer() {
        for &agent in loopguard_agents::AGENTS {
            let h = Harness::new(None);
            for bad in [&b"not json"[..], b"[1,2]", b"", b"{\"hook_event_name\":5}"] {
                let r = run(agent, bad, &h.opts);
                assert_eq!(
                    (r.stdout.as_str(), r.exit_code),
                    (agent.allow().0.as_str(), 0),
                    "{agent}"
                );
                assert!(r.error.is_some(), "{agent}");
                assert!(r.stderr[0].contains("fail-open"), "{:?}", r.stderr);
            }
        }
        let h = Harness::new(Some("{ nope"));
        let r = run(
            Agent::Gemini,
            br#"{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{}}"#,
            &h.opts,
        );
        assert!(r.error.is_some() && r.stdout.is_empty(), "{r:?}");
    }

    #[test]
    fn every_agents_session_end_keeps_a_summary() {
        let h = Harness::new(None);
        let send = |json: &str| {
            let r = run(Agent::Gemini, json.as_bytes(), &h.opts);
            assert!(r.error.is_none(), "{r:?}");
            r
        };
        let call = r#"{"session_id":"g1","cwd":"/nonexistent","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"absolute_path":"/a"}}"#;
        let done = r#"{"session_id":"g1","cwd":"/nonexistent","hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{"absolute_path":"/a"},"tool_response":{"llmContent":"same"}}"#;
        for _ in 0..12 {
            send(call);
            send(done);
        }
        send(
            r#"{"session_id":"g1","cwd":"/nonexistent","hook_event_name":"SessionEnd","reason":"exit"}"#,
        );
        let path = h.opts.state.as_ref().unwrap();
        let ended = crate::store::ended_sessions(path, &SqliteOptions::default()).unwrap();
        assert_eq!(ended.len(), 1, "{ended:?}");
        let e = &ended[0];
        assert_eq!(e.session_id, "gemini:g1");
        assert_eq!(e.reason.as_deref(), Some("gemini SessionEnd"));
        // Warnings count shown and held-back ones alike (counts 10 and 11).
        assert_eq!((e.calls, e.warnings, e.blocks), (12, 2, 0), "{e:?}");
        assert!(
            e.decisions
                .iter()
                .any(|d| d.detector.as_deref() == Some("generic_repeat")),
            "{:?}",
            e.decisions
        );
        // The live state is gone, as with Claude Code.
        use loopguard_guard::Store as _;
        let store = crate::store::SqliteStore::open(path, &SqliteOptions::default()).unwrap();
        assert!(store
            .load(&crate::store::key("gemini:g1"))
            .unwrap()
            .is_none());
        let log = std::fs::read_to_string(crate::paths::log_file_for(path)).unwrap();
        assert!(
            log.contains("session gemini:g1 ended (gemini SessionEnd"),
            "{log}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever arrives, the hook answers (empty or JSON) and never panics.
        #[test]
        fn any_bytes_are_answered(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let dir = tempfile::tempdir().unwrap();
            let opts = HookOptions { state: Some(dir.path().join("db")), ..HookOptions::default() };
            let r = run(Agent::ClaudeCode, &bytes, &opts);
            proptest::prop_assert!(r.stdout.is_empty() || serde_json::from_str::<Json>(&r.stdout).is_ok());
        }
    }
}
