//! One hook invocation: payload in, Claude Code's answer out, state saved.
//!
//! | event | what loopguard does | what Claude Code is told |
//! |-------|---------------------|--------------------------|
//! | `PreToolUse` | the before-call check ([`loopguard_core::Session::before_call`]) | a block: `permissionDecision: "deny"` with the detection message as the reason the model sees; an emitted warning: `additionalContext`; otherwise nothing |
//! | `PostToolUse`, `PostToolUseFailure` | records the outcome ([`loopguard_core::Session::after_call`]) | when the post-compaction guard aborts: `continue: false` with a `stopReason` naming `compaction_loop_persisted`, the tool and the count |
//! | `PostToolBatch` | records the outcome of each call of the batch that no `PostToolUse` / `PostToolUseFailure` recorded (those run first); recorded ones are left alone | a post-compaction abort, as above |
//! | `PostCompact`, `SessionStart` with `source: "compact"` | arms the post-compaction guard of the current run, once per compaction (the second of the two finds it armed and untouched, and changes nothing) | nothing |
//! | `UserPromptSubmit` | starts a new run (`prompt-N`): calls of earlier prompts no longer count | nothing |
//! | `SessionEnd` | keeps a summary of the session (counts, its last warnings and blocks: [`crate::store::EndedSession`]) in the database and the log, then forgets the session ([`Guard::forget`]) | nothing |
//! | `PreCompact`, `SubagentStart`, `SubagentStop`, anything else | nothing (the database is not opened). `PreCompact` arms nothing because another hook may still block the compaction | nothing |
//!
//! Every stateful event records the payload's `permission_mode` in the session's `meta`
//! (shown by `loopguard status`).
//!
//! Runs follow OpenClaw's run scoping: each prompt is a run, and calls made inside a
//! subagent (payloads with `agent_id`) form their own run, `prompt-N/<agent_id>`. After an
//! abort, further calls of the same run are denied until the next prompt. A tool event
//! whose `tool_use_id` was already applied (the hook registered in both the user and the
//! project settings, a retry) is ignored, so each call counts once.
//!
//! **Fail open**: any error (an unreadable payload, a bad config, a corrupt, locked or
//! unwritable database) gives an empty answer, so the call proceeds, and one line on
//! stderr and in the log file. [`run_claude_code`] never fails and never panics.
//!
//! ```
//! use loopguard_hook::{run_claude_code, HookOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let opts = HookOptions { state: Some(dir.path().join("db.sqlite3")), ..HookOptions::default() };
//! let call = br#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read",
//!     "tool_input":{"file_path":"/a"},"tool_use_id":"t1"}"#;
//! let reply = run_claude_code(call, &opts);
//! assert_eq!(reply.stdout, "");        // allowed, nothing to say
//! assert!(reply.stderr.is_empty());
//! let garbage = run_claude_code(b"not json", &opts);
//! assert_eq!(garbage.stdout, "");      // still allowed
//! assert!(garbage.stderr[0].contains("fail-open"));
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loopguard_core::{JsString, Mode, Value};
use loopguard_events::{Action, Decision, Event, EventKind, Payload};
use loopguard_guard::{Guard, LogRow, SessionEntry, SqliteStore, ToolProfile, RESTARTED};

use crate::config::{ConfigError, HookConfig};
use crate::paths::{log_candidates, Env};
use crate::payload::{HookEvent, HookPayload, PayloadError, ToolUse};
use crate::response::Reply;
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
    /// The clock (ms since the epoch); `None` reads the system clock.
    pub now_ms: Option<u64>,
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
    Payload(#[from] PayloadError),
    /// The config could not be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The live-guard layer failed.
    #[error(transparent)]
    Guard(#[from] loopguard_guard::GuardError),
    /// No state directory could be determined.
    #[error("no state directory (neither XDG_STATE_HOME nor HOME is set); pass --state PATH")]
    NoStateDir,
}

/// The result of one invocation: print `stdout` to standard output and each `stderr`
/// line to standard error, then exit with status 0.
#[derive(Debug, Default)]
pub struct HookReply {
    /// JSON for Claude Code, or empty.
    pub stdout: String,
    /// Lines for the user (already written to the log file).
    pub stderr: Vec<String>,
    /// The error that made the hook fail open, if any.
    pub error: Option<HookError>,
}

/// Handles one Claude Code hook payload. Never fails: errors fail open (see the module
/// documentation).
pub fn run_claude_code(input: &[u8], opts: &HookOptions) -> HookReply {
    let mut notes = Vec::new();
    let mut session_id = None;
    match handle(input, opts, &mut notes, &mut session_id) {
        Ok(reply) => {
            for n in &notes {
                log_line(opts, n);
            }
            HookReply {
                stdout: reply.render(),
                stderr: notes,
                error: None,
            }
        }
        Err(e) => {
            let log = open_log(opts);
            let who = session_id
                .map(|s| format!("session {s}: "))
                .unwrap_or_default();
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
            HookReply {
                stdout: String::new(),
                stderr: notes,
                error: Some(e),
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

/// `true` for the events that change state; the others are answered without opening the
/// database.
fn is_stateful(event: &HookEvent<'_>) -> bool {
    match event {
        HookEvent::SessionStart(source) => source.as_deref() == Some("compact"),
        // Before the compaction, which another hook may still block: PostCompact arms.
        HookEvent::PreCompact => false,
        HookEvent::SubagentStart | HookEvent::SubagentStop | HookEvent::Other(_) => false,
        _ => true,
    }
}

fn handle(
    input: &[u8],
    opts: &HookOptions,
    notes: &mut Vec<String>,
    session_id: &mut Option<String>,
) -> Result<Reply, HookError> {
    let payload = HookPayload::parse(input)?;
    *session_id = Some(payload.session_id.clone());
    if !is_stateful(&payload.event) {
        return Ok(Reply::none(payload.event.name()));
    }
    let path = opts.state_path().ok_or(HookError::NoStateDir)?;
    let ending = matches!(payload.event, HookEvent::SessionEnd(_));
    if ending && !path.is_file() {
        // Nothing stored, nothing to forget (and no database to create).
        return Ok(Reply::none(payload.event.name()));
    }
    // Forgetting a session needs no config (a broken one must not keep it stored).
    let config = if ending {
        HookConfig::builtin()
    } else {
        HookConfig::discover(
            opts.config.as_deref(),
            payload.cwd.as_deref().map(std::path::Path::new),
            &opts.env,
        )?
    };
    let agent = opts.agent.clone().or_else(|| payload.agent_type.clone());
    let store = SqliteStore::open(&path, &opts.store)?;
    if let HookEvent::SessionEnd(reason) = &payload.event {
        // What loopguard did (or, observing, would have done) outlives the session: a
        // bounded summary in the database for `loopguard status`, and a line in the log.
        use loopguard_guard::Store as _;
        if let Some(entry) = store.load(&crate::store::key(&payload.session_id))? {
            let ended = crate::store::EndedSession::of(
                &payload.session_id,
                &entry,
                reason.as_deref(),
                opts.mode,
                opts.now(),
            );
            crate::store::record_ended(&path, &opts.store, &ended)?;
            log_line(opts, &ended.log_line());
        }
    }
    // The hook is a thin shell over the live-guard layer: the Claude Code tool profile,
    // this database, and the events.md events below make the same decisions as replaying
    // the session's transcript or posting the same events to `loopguard serve`.
    let guard = Guard::builder()
        .config(config.openclaw())
        .profile(ToolProfile::ClaudeCode)
        .mode(opts.mode)
        .store(Arc::new(store))
        .log_size(crate::store::EVENTS_KEPT)
        .build();
    let source = config.source.to_string();
    let reply = apply_payload(
        &guard,
        None,
        &payload,
        agent.as_deref(),
        &source,
        opts.now(),
        notes,
    )?;
    if opts.mode == Mode::Observe {
        // Observe mode shows the model nothing: the log is where would-be decisions are
        // reviewed (one line each, as they happen; `SessionEnd` adds the summary).
        for row in reply
            .logged
            .iter()
            .filter(|r| r.decision.starts_with("would-"))
        {
            log_line(
                opts,
                &format!(
                    "loopguard: session {}: {} {} ({}, count {}): {}",
                    payload.session_id,
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

/// Answers one parsed Claude Code hook payload with `guard` (which should use
/// [`ToolProfile::ClaudeCode`] and keep a log for `status`): the hook command's work, for any
/// front end that receives Claude Code hook payloads (the `loopguard serve` HTTP hook
/// endpoint passes its tenant). `config` labels where the config came from (shown by
/// `status`); `notes` receives lines for the user (a session found unreadable and started
/// afresh).
///
/// ```
/// use loopguard_hook::{apply_payload, payload::HookPayload};
/// use loopguard_guard::{Guard, ToolProfile};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
/// let pre = br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1"}"#;
/// let reply = apply_payload(&guard, Some("team-a"), &HookPayload::parse(pre)?, None, "built-in", 0, &mut Vec::new())?;
/// assert_eq!(reply.render(), ""); // allowed, nothing to say
/// # Ok(())
/// # }
/// ```
pub fn apply_payload(
    guard: &Guard,
    tenant: Option<&str>,
    payload: &HookPayload<'_>,
    agent: Option<&str>,
    config: &str,
    now: u64,
    notes: &mut Vec<String>,
) -> Result<Reply, HookError> {
    if !is_stateful(&payload.event) {
        return Ok(Reply::none(payload.event.name()));
    }
    if let HookEvent::SessionEnd(_) = payload.event {
        // The session's runs are over: its state and decision log go.
        guard.forget(tenant, &payload.session_id)?;
        return Ok(Reply::none(payload.event.name()));
    }
    let ctx = Ctx {
        guard,
        mode: guard.applier().mode,
        agent,
        now,
    };
    let reply = guard.update(tenant, &payload.session_id, |entry| {
        if let Some(note) = entry.meta.remove(RESTARTED) {
            notes.push(format!("loopguard: {note}"));
        }
        if let Some(cwd) = &payload.cwd {
            entry.meta.insert("cwd".into(), cwd.clone());
        }
        match agent {
            Some(a) => entry.meta.insert("agent".into(), a.to_string()),
            None => entry.meta.remove("agent"),
        };
        entry.meta.insert("config".into(), config.to_string());
        if let Some(mode) = &payload.permission_mode {
            entry.meta.insert(PERMISSION_MODE.into(), mode.clone());
        }
        let before = entry.stats.events;
        let mut reply = apply(entry, payload, &ctx);
        reply.logged = entry
            .recent
            .iter()
            .filter(|r| r.seq > before)
            .cloned()
            .collect();
        reply
    })?;
    Ok(reply)
}

/// The `meta` key of the last `permission_mode` a payload carried.
pub const PERMISSION_MODE: &str = "permission_mode";

struct Ctx<'c> {
    guard: &'c Guard,
    mode: Mode,
    agent: Option<&'c str>,
    now: u64,
}

/// The run the payload belongs to: each prompt is a run, and a subagent's calls are a run
/// of their own.
fn run_id(entry: &SessionEntry, payload: &HookPayload<'_>) -> String {
    match &payload.agent_id {
        Some(a) => format!("prompt-{}/{a}", entry.run_seq),
        None => format!("prompt-{}", entry.run_seq),
    }
}

fn lossy(s: &JsString<'_>) -> String {
    s.to_string_lossy().into_owned()
}

/// Logs an event that the engine does not see (a new prompt, a duplicate, a denied call of
/// an aborted run).
fn log_hook_event(entry: &mut SessionEntry, ctx: &Ctx<'_>, mut row: LogRow) {
    entry.stats.events += 1;
    row.seq = entry.stats.events;
    row.ts_ms = ctx.now;
    entry.log(row, ctx.guard.applier().log_size);
}

/// A log row for an event the engine does not see.
fn hook_row(name: &str, run: &str, tool: Option<&ToolUse<'_>>, decision: &str) -> LogRow {
    LogRow {
        event: name.into(),
        run: Some(run.to_string()),
        tool: tool.map(|t| lossy(&t.name)),
        call_id: tool.and_then(|t| t.id.as_ref().map(lossy)),
        decision: decision.into(),
        ..LogRow::default()
    }
}

fn apply(entry: &mut SessionEntry, payload: &HookPayload<'_>, ctx: &Ctx<'_>) -> Reply {
    let name = payload.event.name();
    if let HookEvent::UserPromptSubmit = payload.event {
        entry.run_seq += 1;
        entry.aborted = None;
        let run = run_id(entry, payload);
        log_hook_event(entry, ctx, hook_row(name, &run, None, "new-run"));
        return Reply::none(name);
    }
    let run = run_id(entry, payload);
    let tool = payload.event.tool();
    if let Some(tool) = tool {
        if is_duplicate(entry, &payload.event, tool) {
            // The same hook registered twice (user and project settings), or a retry:
            // each tool call counts once.
            log_hook_event(entry, ctx, hook_row(name, &run, Some(tool), "duplicate"));
            return Reply::none(name);
        }
    }
    if let (HookEvent::PreToolUse(t), Mode::Enforce) = (&payload.event, ctx.mode) {
        if let Some(aborted) = entry.aborted.clone().filter(|a| a.run == run) {
            let row = LogRow {
                detector: Some(aborted_detector(&aborted.message).into()),
                message: Some(aborted.message.clone()),
                ..hook_row(name, &run, Some(t), "deny-aborted")
            };
            log_hook_event(entry, ctx, row);
            return Reply {
                deny: Some(aborted.message.clone()),
                ..Reply::stop(name, &aborted.message)
            };
        }
    }
    if let HookEvent::PostToolBatch(calls) = &payload.event {
        let reply = post_batch(entry, payload, calls, &run, ctx);
        if reply.stop.is_none() && ctx.mode == Mode::Enforce {
            if let Some(aborted) = entry.aborted.as_ref().filter(|a| a.run == run) {
                // Claude Code ignores `continue: false` on a PreToolUse answer that also
                // denies the call (it only stops after a call that ran), but honours it
                // on the PostToolBatch that follows the denied call: the agent stops there.
                return Reply::stop(name, &aborted.message);
            }
        }
        return reply;
    }
    let compaction = matches!(
        payload.event,
        HookEvent::PostCompact | HookEvent::SessionStart(_)
    );
    if compaction
        && entry
            .session
            .guard(Some(&run))
            .is_some_and(|g| g.is_armed() && g.remaining_attempts() == g.settings().window_size)
    {
        // PostCompact and SessionStart (compact) both follow one compaction: the guard is
        // armed and has watched nothing yet, so this is the same compaction.
        log_hook_event(entry, ctx, hook_row(name, &run, None, "already-armed"));
        return Reply::none(name);
    }
    let event = to_event(payload, &run, ctx);
    let policy = ctx.guard.policy(event.agent.as_ref());
    let d = entry.apply(&policy, ctx.guard.applier(), &event, 0, ctx.now);
    let reply = answer(entry, &d, &run, ctx, name);
    if let Some(row) = entry.recent.back_mut() {
        // The log speaks Claude Code's event names.
        row.event = name.to_string();
        if d.action == Action::Abort {
            row.message = entry
                .aborted
                .as_ref()
                .map(|a| a.message.clone())
                .or(row.message.take());
        }
    }
    reply
}

/// `PostToolBatch`: the outcome of each call that no `PostToolUse` / `PostToolUseFailure`
/// recorded (those hooks have finished when the batch event fires), from the result the
/// model saw. The first abort stops the agent, as after a single outcome.
fn post_batch(
    entry: &mut SessionEntry,
    payload: &HookPayload<'_>,
    calls: &[(ToolUse<'_>, Option<Value<'_>>)],
    run: &str,
    ctx: &Ctx<'_>,
) -> Reply {
    let name = payload.event.name();
    let (mut recorded, mut skipped) = (0, 0);
    for (tool, response) in calls {
        let Some(response) = response else {
            skipped += 1;
            continue;
        };
        let as_outcome = HookEvent::PostToolUse(tool.clone(), response.clone());
        if is_duplicate(entry, &as_outcome, tool) {
            skipped += 1;
            continue;
        }
        let event = Event {
            kind: EventKind::Outcome,
            session: Some(JsString::from(payload.session_id.clone())),
            run: Some(JsString::from(run.to_string())),
            agent: ctx.agent.map(|a| JsString::from(a.to_string())),
            call_id: tool.id.clone(),
            tool: Some(tool.name.clone()),
            args: tool.input.clone(),
            payload: Some(Payload::Result(response.clone())),
            timestamp_ms: ctx.now,
        };
        let policy = ctx.guard.policy(event.agent.as_ref());
        let d = entry.apply(&policy, ctx.guard.applier(), &event, 0, ctx.now);
        let reply = answer(entry, &d, run, ctx, name);
        if let Some(row) = entry.recent.back_mut() {
            row.event = name.to_string();
        }
        recorded += 1;
        if d.action == Action::Abort {
            if let Some(row) = entry.recent.back_mut() {
                row.message = entry.aborted.as_ref().map(|a| a.message.clone());
            }
            return reply;
        }
    }
    let decision = format!("batch: {recorded} recorded, {skipped} already recorded");
    log_hook_event(entry, ctx, hook_row(name, run, None, &decision));
    Reply::none(name)
}

/// The payload as an events.md event (Claude Code's tool names and shapes: the guard's
/// Claude Code profile maps them).
fn to_event<'p>(payload: &'p HookPayload<'p>, run: &str, ctx: &Ctx<'_>) -> Event<'p> {
    let tool = payload.event.tool();
    let (kind, result) = match &payload.event {
        HookEvent::PreToolUse(_) => (EventKind::Call, None),
        HookEvent::PostToolUse(_, response) => {
            (EventKind::Outcome, Some(Payload::Result(response.clone())))
        }
        HookEvent::PostToolUseFailure(_, error, _) => (
            EventKind::Outcome,
            Some(Payload::Error(Value::String(error.clone()))),
        ),
        _ => (EventKind::Compaction, None),
    };
    Event {
        kind,
        session: Some(JsString::from(payload.session_id.clone())),
        run: Some(JsString::from(run.to_string())),
        agent: ctx.agent.map(|a| JsString::from(a.to_string())),
        call_id: tool.and_then(|t| t.id.clone()),
        tool: tool.map(|t| t.name.clone()),
        args: tool.map(|t| t.input.clone()).unwrap_or(Value::Null),
        payload: result,
        timestamp_ms: ctx.now,
    }
}

/// What Claude Code is told about a decision.
fn answer(
    entry: &mut SessionEntry,
    d: &Decision<'_>,
    run: &str,
    ctx: &Ctx<'_>,
    name: &str,
) -> Reply {
    let enforce = ctx.mode == Mode::Enforce;
    let tool = d.tool.as_ref().map(lossy).unwrap_or_default();
    let Some(f) = &d.finding else {
        return Reply::none(name);
    };
    let message = lossy(&f.message);
    match d.action {
        Action::Warn if enforce && f.emitted == Some(true) => {
            Reply::context(name, &format!("loopguard: {message}"))
        }
        Action::Block if enforce => {
            let notice = format!(
                "loopguard blocked {tool}: {} (count {})",
                f.detector, f.count
            );
            if f.detector == loopguard_core::Detector::SecondCriticalAbort {
                // Strict profile: a second critical loop ended this run (the engine blocks
                // the rest of it); the agent is stopped as well, until the next prompt.
                // The run is remembered as aborted: its later calls are denied with the
                // stop, and the PostToolBatch after this denied call stops the agent
                // (Claude Code does not stop on a PreToolUse deny, see `apply`).
                let reason = format!("loopguard stopped the agent ({}): {message}", f.detector);
                entry.aborted = Some(loopguard_guard::AbortedRun {
                    run: run.to_string(),
                    message: reason.clone(),
                });
                return Reply {
                    deny: Some(message),
                    notice: Some(notice),
                    ..Reply::stop(name, &reason)
                };
            }
            Reply::deny(name, &message, &notice)
        }
        Action::Abort if enforce => {
            let reason = format!(
                "loopguard stopped the agent (compaction_loop_persisted): {tool} repeated {} times with identical arguments and results after a context compaction. {message}",
                f.count
            );
            entry.aborted = Some(loopguard_guard::AbortedRun {
                run: run.to_string(),
                message: reason.clone(),
            });
            Reply::stop(name, &reason)
        }
        _ => Reply::none(name),
    }
}

/// The detector named in an aborted run's stop message (`loopguard stopped the agent
/// (DETECTOR): …`), for the log rows of the calls denied after it.
fn aborted_detector(message: &str) -> &str {
    message
        .strip_prefix("loopguard stopped the agent (")
        .and_then(|rest| rest.split_once(')'))
        .map_or("compaction_loop_persisted", |(d, _)| d)
}

/// `true` when this tool event was already applied: a `PreToolUse` whose `tool_use_id` is
/// already in the history, or an outcome for a call whose outcome is already recorded.
fn is_duplicate(entry: &SessionEntry, event: &HookEvent<'_>, tool: &ToolUse<'_>) -> bool {
    let Some(id) = tool.id.as_ref().filter(|i| !i.is_empty()) else {
        return false;
    };
    let mut same = entry
        .session
        .history()
        .records()
        .iter()
        .filter(|r| r.call_id.as_ref().map(JsString::as_wtf8) == Some(id.as_wtf8()));
    match event {
        HookEvent::PreToolUse(_) => same.next().is_some(),
        _ => same.any(|r| r.result.is_some()),
    }
}

/// Parses a duration such as `7d`, `12h`, `30m`, `90s` or `500ms` (a bare number is
/// seconds).
///
/// ```
/// use loopguard_hook::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
/// assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 7d, 12h, 30m, 90s or 500ms"))?;
    let ms = match unit {
        "ms" => Some(n),
        "" | "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => None,
    }
    .ok_or_else(|| format!("`{s}` is not a duration like 7d, 12h, 30m, 90s or 500ms"))?;
    Ok(Duration::from_millis(ms))
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
        /// The decisions logged for session `s`.
        fn logged(&self) -> Vec<LogRow> {
            use loopguard_guard::Store as _;
            let store = crate::store::SqliteStore::open(
                self.opts.state.as_ref().unwrap(),
                &SqliteOptions::default(),
            )
            .unwrap();
            let entry = store.load(&crate::store::key("s")).unwrap().unwrap();
            entry.recent.into_iter().collect()
        }

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

        fn send(&mut self, json: &str) -> HookReply {
            self.n += 1;
            self.opts.now_ms = Some(1_000_000 + self.n);
            let r = run_claude_code(json.as_bytes(), &self.opts);
            assert!(r.error.is_none(), "{:?}", r.error);
            r
        }

        fn pre(&mut self, tool: &str, input: &str, id: &str) -> Option<Json> {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}"}}"#
            ));
            (!r.stdout.is_empty()).then(|| serde_json::from_str(&r.stdout).unwrap())
        }

        fn post(&mut self, tool: &str, input: &str, id: &str, response: &str) -> Option<Json> {
            let r = self.send(&format!(
                r#"{{"session_id":"s","cwd":"/nonexistent","hook_event_name":"PostToolUse","tool_name":"{tool}","tool_input":{input},"tool_use_id":"{id}","tool_response":{response}}}"#
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

    const SMALL: &str = "{ tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } } }";

    #[test]
    fn a_bash_loop_is_warned_then_denied() {
        // Warnings reach the model once per bucket of ten (at 10, 20, …), as in OpenClaw.
        let mut h = Harness::new(Some(
            "{ tools: { loopDetection: { enabled: true, warningThreshold: 10, criticalThreshold: 12 } } }",
        ));
        let input = r#"{"command":"cargo test","description":"Run tests"}"#;
        let resp =
            r#"{"stdout":"test result: FAILED","stderr":"","interrupted":false,"isImage":false}"#;
        let mut warned = None;
        let mut denied = None;
        for i in 1..=20 {
            let id = format!("t{i}");
            if let Some(out) = h.pre("Bash", input, &id) {
                let spec = &out["hookSpecificOutput"];
                if spec["permissionDecision"] == "deny" {
                    denied = Some((
                        i,
                        spec["permissionDecisionReason"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    ));
                    break;
                }
                if warned.is_none() {
                    warned = Some((i, spec["additionalContext"].as_str().unwrap().to_string()));
                }
            }
            assert!(h.post("Bash", input, &id, resp).is_none());
        }
        let (wi, wmsg) = warned.unwrap();
        assert_eq!(wi, 11); // ten earlier identical calls
        assert!(wmsg.contains("called Bash 10 times"), "{wmsg}");
        let (di, dmsg) = denied.unwrap();
        assert_eq!(di, 13);
        assert!(
            dmsg.contains("Called Bash with identical arguments and identical outcomes 12 times"),
            "{dmsg}"
        );
    }

    #[test]
    fn a_new_prompt_starts_a_new_run() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"file_path":"/a"}"#;
        for i in 0..5 {
            h.pre("Read", input, &format!("a{i}"));
            h.post(
                "Read",
                input,
                &format!("a{i}"),
                r#"{"type":"text","file":{"content":"x"}}"#,
            );
        }
        assert!(h.pre("Read", input, "a5").is_some());
        h.event("UserPromptSubmit", r#","prompt":"try again""#);
        assert!(
            h.pre("Read", input, "b0").is_none(),
            "earlier prompts do not count"
        );
    }

    #[test]
    fn compaction_then_three_identical_calls_stops_the_agent() {
        let mut h = Harness::new(None);
        let input = r#"{"command":"curl localhost:8080/health"}"#;
        let resp = r#"{"stdout":"503","stderr":"","interrupted":false}"#;
        h.event("UserPromptSubmit", r#","prompt":"deploy""#);
        h.pre("Bash", input, "x0");
        h.post("Bash", input, "x0", resp);
        h.event(
            "PreCompact",
            r#","trigger":"auto","custom_instructions":"""#,
        );
        h.event("SessionStart", r#","source":"compact""#);
        let mut stopped = None;
        for i in 1..=3 {
            let id = format!("y{i}");
            assert!(h.pre("Bash", input, &id).is_none());
            if let Some(out) = h.post("Bash", input, &id, resp) {
                stopped = Some((i, out));
            }
        }
        let (i, out) = stopped.unwrap();
        assert_eq!(i, 3);
        assert_eq!(out["continue"], false);
        let reason = out["stopReason"].as_str().unwrap();
        assert!(
            reason.contains("compaction_loop_persisted")
                && reason.contains("Bash")
                && reason.contains("3 times"),
            "{reason}"
        );
        // The run is over: the next call is denied until a new prompt.
        let out = h.pre("Bash", input, "y4").unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        h.event("UserPromptSubmit", r#","prompt":"ok, stop""#);
        assert!(h.pre("Bash", input, "z1").is_none());
    }

    #[test]
    fn post_compact_and_session_start_arm_once() {
        let mut h = Harness::new(None);
        let input = r#"{"command":"curl localhost:8080/health"}"#;
        let resp = r#"{"stdout":"503","stderr":"","interrupted":false}"#;
        h.event("UserPromptSubmit", r#","prompt":"deploy""#);
        // PreCompact arms nothing: another hook may still block the compaction.
        h.event(
            "PreCompact",
            r#","trigger":"auto","custom_instructions":"""#,
        );
        for i in 1..=3 {
            h.pre("Bash", input, &format!("a{i}"));
            assert!(h.post("Bash", input, &format!("a{i}"), resp).is_none());
        }
        h.event("PostCompact", r#","trigger":"auto","compact_summary":"s""#);
        h.event("SessionStart", r#","source":"compact""#);
        let decisions: Vec<_> = h
            .logged()
            .into_iter()
            .filter(|e| e.event.contains("Compact") || e.event == "SessionStart")
            .map(|e| e.decision)
            .collect();
        assert_eq!(decisions, ["armed", "already-armed"]);
        let mut stopped = None;
        for i in 1..=3 {
            let id = format!("b{i}");
            h.pre("Bash", input, &id);
            stopped = stopped.or(h.post("Bash", input, &id, resp).map(|o| (i, o)));
        }
        assert_eq!(stopped.unwrap().0, 3);
    }

    #[test]
    fn post_tool_batch_records_only_what_post_tool_use_missed() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"file_path":"/a"}"#;
        // t1 gets its PostToolUse; t2's PostToolUse hook never ran (timed out, say).
        h.pre("Read", input, "t1");
        h.post(
            "Read",
            input,
            "t1",
            r#"{"type":"text","file":{"content":"x"}}"#,
        );
        h.pre("Read", input, "t2");
        let r = h.send(
            r#"{"session_id":"s","hook_event_name":"PostToolBatch","permission_mode":"plan","tool_calls":[
                {"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1","tool_response":"     1\tx"},
                {"tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t2","tool_response":"     1\tx"}]}"#,
        );
        assert_eq!(r.stdout, "");
        let logged = h.logged();
        let n = logged.len();
        assert_eq!(
            (
                logged[n - 2].event.as_str(),
                logged[n - 2].call_id.as_deref(),
                logged[n - 2].decision.as_str()
            ),
            ("PostToolBatch", Some("t2"), "recorded")
        );
        assert_eq!(
            logged[n - 1].decision,
            "batch: 1 recorded, 1 already recorded"
        );
        // A late PostToolUse for t2 is now a duplicate: the call counts once.
        h.post(
            "Read",
            input,
            "t2",
            r#"{"type":"text","file":{"content":"x"}}"#,
        );
        assert_eq!(h.logged().last().unwrap().decision, "duplicate");
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
            entry.meta.get(PERMISSION_MODE).map(String::as_str),
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

    #[test]
    fn a_subagent_is_its_own_run() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"pattern":"TODO"}"#;
        let resp = r#"{"numFiles":0,"filenames":[]}"#;
        let sub = |h: &mut Harness, ev: &str, id: &str| {
            h.send(&format!(
                r#"{{"session_id":"s","hook_event_name":"{ev}","agent_id":"agent-1","agent_type":"Explore","tool_name":"Grep","tool_input":{input},"tool_use_id":"{id}","tool_response":{resp}}}"#
            ))
        };
        h.event("UserPromptSubmit", r#","prompt":"find TODOs""#);
        for i in 0..4 {
            h.pre("Grep", input, &format!("m{i}"));
            h.post("Grep", input, &format!("m{i}"), resp);
        }
        // The subagent's identical calls do not add to the main thread's four.
        for i in 0..4 {
            assert_eq!(sub(&mut h, "PreToolUse", &format!("s{i}")).stdout, "");
            sub(&mut h, "PostToolUse", &format!("s{i}"));
        }
        h.event(
            "SubagentStop",
            r#","agent_id":"agent-1","agent_type":"Explore""#,
        );
        let runs: std::collections::BTreeSet<_> =
            h.logged().into_iter().filter_map(|e| e.run).collect();
        assert_eq!(
            runs.into_iter().collect::<Vec<_>>(),
            ["prompt-1", "prompt-1/agent-1"]
        );
        // Back in the main thread: the fifth call completes the streak, the sixth is
        // blocked (five identical outcomes), as if the subagent had not run.
        assert!(h.pre("Grep", input, "m4").is_none());
        h.post("Grep", input, "m4", resp);
        let out = h.pre("Grep", input, "m5").unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    }

    #[test]
    fn the_same_event_twice_counts_once() {
        let mut h = Harness::new(Some(SMALL));
        for i in 0..5 {
            let id = format!("d{i}");
            // As if the hook were registered in both the user and the project settings.
            for _ in 0..2 {
                assert!(h.pre("Read", "{}", &id).is_none());
            }
            for _ in 0..2 {
                assert!(h.post("Read", "{}", &id, r#""same""#).is_none());
            }
        }
        // Five calls, not ten: the sixth is the first to be blocked (five identical outcomes).
        assert!(h.pre("Read", "{}", "d5").is_some());
        let dups = h
            .logged()
            .iter()
            .filter(|e| e.decision == "duplicate")
            .count();
        assert_eq!(dups, 10);
    }

    #[test]
    fn observe_mode_never_interferes() {
        let mut h = Harness::new(Some(SMALL));
        h.opts.mode = Mode::Observe;
        for i in 0..10 {
            let id = format!("o{i}");
            assert!(h.pre("Read", "{}", &id).is_none());
            assert!(h.post("Read", "{}", &id, r#""same""#).is_none());
        }
        let events = h.logged();
        assert!(events.iter().any(|e| e.decision == "would-block"));
    }

    #[test]
    fn polling_a_background_shell_is_a_known_poll() {
        let mut h = Harness::new(Some(SMALL));
        let input = r#"{"bash_id":"bash_1"}"#;
        let resp = r#"{"shellId":"bash_1","command":"npm run build","status":"running","exitCode":null,"stdout":"","stderr":"","stdoutLines":0,"stderrLines":0,"timestamp":"T"}"#;
        let mut denied = None;
        for i in 1..=8 {
            let id = format!("p{i}");
            if let Some(out) = h.pre("BashOutput", input, &id) {
                if out["hookSpecificOutput"]["permissionDecision"] == "deny" {
                    denied = Some(
                        out["hookSpecificOutput"]["permissionDecisionReason"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    );
                    break;
                }
            }
            h.post("BashOutput", input, &id, &resp.replace('T', &i.to_string()));
        }
        let msg = denied.unwrap();
        assert!(
            msg.contains("BashOutput") && msg.contains("stuck polling loop"),
            "{msg}"
        );
    }

    #[test]
    fn failures_fail_open_with_one_line() {
        let mut h = Harness::new(Some("{ tools: { loopDetection: { enabeld: true } } }"));
        let r = run_claude_code(
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
        let r = run_claude_code(br#"{"session_id":"s","hook_event_name":"Stop"}"#, &h.opts);
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
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5w").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever arrives, the hook answers (empty or JSON) and never panics.
        #[test]
        fn any_bytes_are_answered(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let dir = tempfile::tempdir().unwrap();
            let opts = HookOptions { state: Some(dir.path().join("db")), ..HookOptions::default() };
            let r = run_claude_code(&bytes, &opts);
            proptest::prop_assert!(r.stdout.is_empty() || serde_json::from_str::<Json>(&r.stdout).is_ok());
        }

        /// Well-formed envelopes with arbitrary tool inputs and responses never panic.
        #[test]
        fn any_tool_values_are_answered(
            event in proptest::sample::select(vec!["PreToolUse", "PostToolUse", "PostToolUseFailure"]),
            tool in proptest::sample::select(vec!["Bash", "BashOutput", "TaskOutput", "TodoWrite", "Read", "mcp__a__b"]),
            input in r#"(\{\}|\[\]|null|1|"x"|\{"todos":[^{}]{0,5}\}|\{"command":1\}|\{"bash_id":\[\]\})"#,
            response in r#"(\{\}|\[\]|null|"\\ud800"|\{"stdout":1,"stderr":\[\],"interrupted":"y"\}|\{"task":1\}|\{"newTodos":\{\}\})"#,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let opts = HookOptions { state: Some(dir.path().join("db")), ..HookOptions::default() };
            let json = format!(
                r#"{{"session_id":"s","hook_event_name":"{event}","tool_name":"{tool}","tool_input":{input},"tool_response":{response},"error":"Exit code x"}}"#
            );
            let r = run_claude_code(json.as_bytes(), &opts);
            proptest::prop_assert!(r.stdout.is_empty() || serde_json::from_str::<Json>(&r.stdout).is_ok());
        }
    }
}
