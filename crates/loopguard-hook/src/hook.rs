//! One hook invocation: payload in, Claude Code's answer out, state saved.
//!
//! | event | what loopguard does | what Claude Code is told |
//! |-------|---------------------|--------------------------|
//! | `PreToolUse` | the before-call check ([`Session::before_call`]) | a block: `permissionDecision: "deny"` with the detection message as the reason the model sees; an emitted warning: `additionalContext`; otherwise nothing |
//! | `PostToolUse`, `PostToolUseFailure` | records the outcome ([`Session::after_call`]) | when the post-compaction guard aborts: `continue: false` with a `stopReason` naming `compaction_loop_persisted`, the tool and the count |
//! | `PreCompact`, `PostCompact`, `SessionStart` with `source: "compact"` | arms the post-compaction guard of the current run | nothing |
//! | `UserPromptSubmit` | starts a new run (`prompt-N`): calls of earlier prompts no longer count | nothing |
//! | anything else | nothing (the database is not opened) | nothing |
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
use std::time::Duration;

use loopguard_core::outcome::Outcome;
use loopguard_core::{Call, JsString, Mode, Policy, Session, Verdict};

use crate::config::{ConfigError, HookConfig};
use crate::paths::{log_file_for, Env};
use crate::payload::{HookEvent, HookPayload, PayloadError, ToolUse};
use crate::profile::{display_message, map_call, map_failure, map_result, MappedOutcome};
use crate::response::Reply;
use crate::store::{EventRow, SessionRow, Store, StoreError, StoreOptions};

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
    pub store: StoreOptions,
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
            store: StoreOptions::default(),
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
    match handle(input, opts, &mut notes) {
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
            let log = opts.state_path().map(|p| log_file_for(&p));
            let line = match &log {
                Some(l) => format!(
                    "loopguard: {e}; the call is allowed (fail-open). Log: {}",
                    l.display()
                ),
                None => format!("loopguard: {e}; the call is allowed (fail-open)"),
            };
            notes.push(line);
            for n in &notes {
                log_line(opts, n);
            }
            HookReply {
                stdout: String::new(),
                stderr: notes,
                error: Some(e),
            }
        }
    }
}

/// Appends a line to the log file beside the database (best effort; the log is rotated
/// at 1 MiB).
pub fn log_line(opts: &HookOptions, line: &str) {
    use std::io::Write;
    let Some(path) = opts.state_path().map(|p| log_file_for(&p)) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 1 << 20) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    let stamp = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = writeln!(f, "{stamp} {line}");
    }
}

/// `true` for the events that change state; the others are answered without opening the
/// database.
fn is_stateful(event: &HookEvent<'_>) -> bool {
    match event {
        HookEvent::SessionStart(source) => source.as_deref() == Some("compact"),
        HookEvent::Other(_) => false,
        _ => true,
    }
}

fn handle(input: &[u8], opts: &HookOptions, notes: &mut Vec<String>) -> Result<Reply, HookError> {
    let payload = HookPayload::parse(input)?;
    if !is_stateful(&payload.event) {
        return Ok(Reply::none(payload.event.name()));
    }
    let config = HookConfig::discover(
        opts.config.as_deref(),
        payload.cwd.as_deref().map(std::path::Path::new),
        &opts.env,
    )?;
    let agent = opts.agent.clone().or_else(|| payload.agent_type.clone());
    let policy = config.policy_for(agent.as_deref());
    let path = opts.state_path().ok_or(HookError::NoStateDir)?;
    let now = opts.now();
    let mut store = Store::open(&path, &opts.store)?;
    let mut txn = store.transaction(&payload.session_id, now)?;
    let label = format!("claude-code:{}", payload.session_id);
    let session = match &txn.row.state {
        None => Session::new(label),
        Some(bytes) => match Session::import_state(bytes, label.clone()) {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!(
                    "loopguard: session {} in {}: {e}; starting it afresh",
                    payload.session_id,
                    path.display()
                ));
                Session::new(label)
            }
        },
    };
    let mut session = session.with_mode(opts.mode);
    txn.row.cwd = payload.cwd.clone().or(txn.row.cwd.take());
    txn.row.agent = agent.clone();
    txn.row.config = Some(config.source.to_string());
    let ctx = Ctx {
        policy: &policy,
        mode: opts.mode,
        agent: agent.as_deref(),
        now,
    };
    let (reply, event) = apply(&mut session, &mut txn.row, &payload, &ctx);
    txn.row.state = Some(session.export_state());
    txn.save(Some(&event))?;
    txn.commit()?;
    // Housekeeping after the commit: a failure here loses nothing.
    if let Err(e) = store.checkpoint_if_large() {
        notes.push(format!(
            "loopguard: {e} (while checkpointing; nothing was lost)"
        ));
    }
    Ok(reply)
}

struct Ctx<'c> {
    policy: &'c Policy,
    mode: Mode,
    agent: Option<&'c str>,
    now: u64,
}

/// The run the payload belongs to.
fn run_id(row: &SessionRow, payload: &HookPayload<'_>) -> String {
    match &payload.agent_id {
        Some(a) => format!("prompt-{}/{a}", row.run_seq),
        None => format!("prompt-{}", row.run_seq),
    }
}

fn lossy(s: &JsString<'_>) -> String {
    s.to_string_lossy().into_owned()
}

fn apply(
    session: &mut Session,
    row: &mut SessionRow,
    payload: &HookPayload<'_>,
    ctx: &Ctx<'_>,
) -> (Reply, EventRow) {
    let name = payload.event.name();
    let mut event = EventRow {
        event: name.to_string(),
        ..EventRow::default()
    };
    if let HookEvent::UserPromptSubmit = payload.event {
        row.run_seq += 1;
        row.aborted_run = None;
        row.aborted_message = None;
        event.run = Some(run_id(row, payload));
        event.decision = "new-run".into();
        return (Reply::none(name), event);
    }
    let run = run_id(row, payload);
    event.run = Some(run.clone());
    if let Some(tool) = payload.event.tool() {
        if is_duplicate(session, &payload.event, tool) {
            // The same hook registered twice (user and project settings), or a retry:
            // each tool call counts once.
            event.tool = Some(lossy(&tool.name));
            event.tool_use_id = tool.id.as_ref().map(lossy);
            event.decision = "duplicate".into();
            return (Reply::none(name), event);
        }
    }
    match &payload.event {
        HookEvent::PreToolUse(t) => {
            let reply = pre_tool(session, row, t, &run, ctx, &mut event);
            (reply, event)
        }
        HookEvent::PostToolUse(t, response) => {
            let outcome = MappedOutcome::Result(map_result(&t.name, response));
            let reply = post_tool(session, row, t, outcome, &run, ctx, &mut event);
            (reply, event)
        }
        HookEvent::PostToolUseFailure(t, error, interrupt) => {
            let outcome = map_failure(&t.name, error, *interrupt);
            let reply = post_tool(session, row, t, outcome, &run, ctx, &mut event);
            (reply, event)
        }
        _ => {
            // A compaction: arm the guard of the current run.
            let armed = session
                .on_compaction(ctx.policy, Some(&JsString::from(run.as_str())))
                .armed;
            event.decision = if armed { "armed" } else { "ignored" }.into();
            (Reply::none(name), event)
        }
    }
}

/// `true` when this tool event was already applied: a `PreToolUse` whose `tool_use_id` is
/// already in the history, or an outcome for a call whose outcome is already recorded.
fn is_duplicate(session: &Session, event: &HookEvent<'_>, tool: &ToolUse<'_>) -> bool {
    let Some(id) = tool.id.as_ref().filter(|i| !i.is_empty()) else {
        return false;
    };
    let mut same = session
        .history()
        .records()
        .iter()
        .filter(|r| r.call_id.as_ref().map(JsString::as_wtf8) == Some(id.as_wtf8()));
    match event {
        HookEvent::PreToolUse(_) => same.next().is_some(),
        _ => same.any(|r| r.result.is_some()),
    }
}

/// A tool call as the engine sees it, with what is needed to talk about it.
struct Prepared<'a> {
    mapped: crate::profile::MappedCall<'a>,
    claude_name: String,
    engine_name: String,
}

impl<'a> Prepared<'a> {
    fn new(tool: &ToolUse<'a>, event: &mut EventRow) -> Prepared<'a> {
        let claude_name = lossy(&tool.name);
        event.tool = Some(claude_name.clone());
        event.tool_use_id = tool.id.as_ref().map(lossy);
        let mapped = map_call(&tool.name, &tool.input);
        let engine_name = lossy(&mapped.tool);
        Prepared {
            mapped,
            claude_name,
            engine_name,
        }
    }

    fn call(&self, tool: &ToolUse<'a>, run: &'a str, ctx: &Ctx<'a>) -> Call<'_> {
        let mut call = Call::new(self.mapped.tool.clone(), &self.mapped.args)
            .run(run)
            .at(ctx.now);
        if let Some(id) = &tool.id {
            call = call.call_id(id.clone());
        }
        if let Some(a) = ctx.agent {
            call = call.agent(a);
        }
        call
    }

    /// A detection message naming the Claude Code tool.
    fn show(&self, m: &JsString<'_>) -> String {
        display_message(&m.to_string_lossy(), &self.engine_name, &self.claude_name)
    }
}

fn pre_tool(
    session: &mut Session,
    row: &SessionRow,
    tool: &ToolUse<'_>,
    run: &str,
    ctx: &Ctx<'_>,
    event: &mut EventRow,
) -> Reply {
    let name = "PreToolUse";
    let enforce = ctx.mode == Mode::Enforce;
    let p = Prepared::new(tool, event);
    if enforce && row.aborted_run.as_deref() == Some(run) {
        let reason = row.aborted_message.clone().unwrap_or_default();
        event.decision = "deny-aborted".into();
        event.detector = Some("compaction_loop_persisted".into());
        event.message = Some(reason.clone());
        return Reply {
            deny: Some(reason.clone()),
            ..Reply::stop(name, &reason)
        };
    }
    let d = session.before_call(ctx.policy, &p.call(tool, run, ctx));
    if let Some(det) = d.detection() {
        event.detector = Some(det.detector.as_str().into());
        event.count = Some(det.count);
        event.message = Some(p.show(&det.message));
    }
    let message = event.message.clone().unwrap_or_default();
    match &d.verdict {
        Verdict::Allow => {
            event.decision = "allow".into();
            Reply::none(name)
        }
        Verdict::Warn { emitted, .. } => {
            event.decision = match (enforce, emitted) {
                (true, true) => "warn",
                (true, false) => "warn-quiet",
                (false, _) => "would-warn",
            }
            .into();
            if enforce && *emitted {
                Reply::context(name, &format!("loopguard: {message}"))
            } else {
                Reply::none(name)
            }
        }
        Verdict::Block { detection, .. } => {
            if enforce {
                event.decision = "block".into();
                let notice = format!(
                    "loopguard blocked {}: {} (count {})",
                    p.claude_name, detection.detector, detection.count
                );
                Reply::deny(name, &message, &notice)
            } else {
                event.decision = "would-block".into();
                Reply::none(name)
            }
        }
    }
}

fn post_tool(
    session: &mut Session,
    row: &mut SessionRow,
    tool: &ToolUse<'_>,
    outcome: MappedOutcome<'_>,
    run: &str,
    ctx: &Ctx<'_>,
    event: &mut EventRow,
) -> Reply {
    let name = event.event.clone();
    let p = Prepared::new(tool, event);
    let outcome = match &outcome {
        MappedOutcome::Result(v) => Outcome::Result(v),
        MappedOutcome::Error(v) => Outcome::Error(v),
    };
    let d = session.after_call(ctx.policy, &p.call(tool, run, ctx), outcome);
    event.decision = if d.result.is_some() {
        "recorded"
    } else {
        "ignored"
    }
    .into();
    let Some(abort) = d.abort else {
        return Reply::none(&name);
    };
    let reason = format!(
        "loopguard stopped the agent (compaction_loop_persisted): {} repeated {} times with identical arguments and results after a context compaction. {}",
        p.claude_name,
        abort.count,
        p.show(&abort.message)
    );
    event.detector = Some("compaction_loop_persisted".into());
    event.count = Some(abort.count);
    event.message = Some(reason.clone());
    if ctx.mode != Mode::Enforce {
        event.decision = "would-abort".into();
        return Reply::none(&name);
    }
    event.decision = "abort".into();
    row.aborted_run = Some(run.to_string());
    row.aborted_message = Some(reason.clone());
    Reply::stop(&name, &reason)
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
        let store = Store::open(h.opts.state.as_ref().unwrap(), &StoreOptions::default()).unwrap();
        let dups = store
            .events("s", 100)
            .unwrap()
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
        let store = Store::open(h.opts.state.as_ref().unwrap(), &StoreOptions::default()).unwrap();
        let events = store.events("s", 100).unwrap();
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
        let log = std::fs::read_to_string(log_file_for(h.opts.state.as_ref().unwrap())).unwrap();
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
            let mut store =
                Store::open(h.opts.state.as_ref().unwrap(), &StoreOptions::default()).unwrap();
            let mut t = store.transaction("s", 5).unwrap();
            t.row.state = Some(b"{garbage".to_vec());
            t.save(None).unwrap();
            t.commit().unwrap();
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
