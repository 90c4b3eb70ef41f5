//! Claude Code's hook protocol (and VS Code's agent running the hooks of
//! `.claude/settings.json`): the payload ([`payload`]), what loopguard does with each event,
//! and the answer ([`response`]). The other agents' modules map their events onto this one,
//! so every agent gets the same runs, duplicates, aborts and post-compaction guard.
//!
//! | event | what loopguard does | what Claude Code is told |
//! |-------|---------------------|--------------------------|
//! | `PreToolUse` | the before-call check ([`loopguard_core::Session::before_call`]) | a block: `permissionDecision: "deny"` with the detection message as the reason the model sees; an emitted warning: `additionalContext`; otherwise nothing |
//! | `PostToolUse`, `PostToolUseFailure` | records the outcome ([`loopguard_core::Session::after_call`]) | when the post-compaction guard aborts: `continue: false` with a `stopReason` naming `compaction_loop_persisted`, the tool and the count |
//! | `PostToolBatch` | records the outcome of each call of the batch that no `PostToolUse` / `PostToolUseFailure` recorded (those run first); recorded ones are left alone | a post-compaction abort, as above |
//! | `PostCompact`, `SessionStart` with `source: "compact"` | arms the post-compaction guard of the current run, once per compaction (the second of the two finds it armed and untouched, and changes nothing) | nothing |
//! | `UserPromptSubmit` | starts a new run (`prompt-N`): calls of earlier prompts no longer count | nothing |
//! | `SessionEnd` | forgets the session ([`Guard::forget`]); the CLI hook (`loopguard-hook`) first keeps a summary of it | nothing |
//! | `PreCompact`, `SubagentStart`, `SubagentStop`, anything else | nothing (the store is not touched). `PreCompact` arms nothing because another hook may still block the compaction | nothing |
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
//! The front ends are thin shells over [`apply_payload`] (or [`crate::answer`] with
//! [`crate::Agent::ClaudeCode`]): `loopguard hook claude-code` and the Claude Code plugin
//! (`loopguard-hook`, with a SQLite store), and `loopguard serve`'s
//! `POST /v1/hooks/claude-code` (with the server's store and tenant).

pub mod payload;
pub mod response;

pub use payload::{HookEvent, HookPayload, PayloadError, ToolUse};
pub use response::Reply;

use loopguard_core::{JsString, Mode, Value};
use loopguard_events::{Action, Decision, Event, EventKind, Payload};
use loopguard_guard::{Guard, GuardError, LogDecision, LogRow, SessionEntry, RESTARTED};

/// Answers one parsed Claude Code hook payload with `guard` (which should use
/// [`loopguard_guard::ToolProfile::ClaudeCode`] and keep a log for `status`): the hook command's work, for any
/// front end that receives Claude Code hook payloads (the `loopguard serve` HTTP hook
/// endpoint passes its tenant). `config` labels where the config came from (shown by
/// `status`); `notes` receives lines for the user (a session found unreadable and started
/// afresh).
///
/// ```
/// use loopguard_agents::claude_code::{apply_payload, HookPayload};
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
) -> Result<Reply, GuardError> {
    if !payload.event.is_stateful() {
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
fn hook_row(name: &str, run: &str, tool: Option<&ToolUse<'_>>, decision: LogDecision) -> LogRow {
    LogRow {
        event: name.into(),
        run: Some(run.to_string()),
        tool: tool.map(|t| lossy(&t.name)),
        call_id: tool.and_then(|t| t.id.as_ref().map(lossy)),
        decision,
        ..LogRow::default()
    }
}

fn apply(entry: &mut SessionEntry, payload: &HookPayload<'_>, ctx: &Ctx<'_>) -> Reply {
    let name = payload.event.name();
    if let HookEvent::UserPromptSubmit = payload.event {
        entry.run_seq += 1;
        entry.aborted = None;
        let run = run_id(entry, payload);
        log_hook_event(entry, ctx, hook_row(name, &run, None, LogDecision::NewRun));
        return Reply::none(name);
    }
    let run = run_id(entry, payload);
    let tool = payload.event.tool();
    if let Some(tool) = tool {
        if is_duplicate(entry, &payload.event, tool) {
            // The same hook registered twice (user and project settings), or a retry:
            // each tool call counts once.
            log_hook_event(
                entry,
                ctx,
                hook_row(name, &run, Some(tool), LogDecision::Duplicate),
            );
            return Reply::none(name);
        }
    }
    if let (HookEvent::PreToolUse(t), Mode::Enforce) = (&payload.event, ctx.mode) {
        if let Some(aborted) = entry.aborted.clone().filter(|a| a.run == run) {
            let row = LogRow {
                detector: Some(aborted_detector(&aborted.message).into()),
                message: Some(aborted.message.clone()),
                ..hook_row(name, &run, Some(t), LogDecision::DenyAborted)
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
        log_hook_event(
            entry,
            ctx,
            hook_row(name, &run, None, LogDecision::AlreadyArmed),
        );
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
    let decision = LogDecision::Batch { recorded, skipped };
    log_hook_event(entry, ctx, hook_row(name, run, None, decision));
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
