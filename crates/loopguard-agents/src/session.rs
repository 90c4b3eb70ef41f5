//! What an agent's hook event does to its session, the same for every agent: the run
//! path ([`crate::answer`]) hands each [`AgentEvent`] here after reading it with the
//! agent's [`Protocol`](crate::Protocol) and mapping its tools with the agent's row of
//! the tool table.
//!
//! | event | what loopguard does | the answer |
//! |-------|---------------------|------------|
//! | [`Kind::Pre`] | the before-call check ([`loopguard_core::Session::before_call`]) | a block: deny, with the detection message as the reason the model sees; an emitted warning: context for the model |
//! | [`Kind::Post`] | records the outcome ([`loopguard_core::Session::after_call`]) | when the post-compaction guard aborts: stop, naming `compaction_loop_persisted`, the tool and the count |
//! | [`Kind::Batch`] | records the outcome of each call of the batch that no single outcome event recorded (those run first); recorded ones are left alone | a post-compaction abort, as above |
//! | [`Kind::Compact`] | arms the post-compaction guard of the current run, once per compaction (a second event of the same compaction finds it armed and untouched, and changes nothing) | nothing |
//! | [`Kind::Prompt`] | starts a new run (`prompt-N`): calls of earlier prompts no longer count | nothing |
//! | [`Kind::End`] | forgets the session ([`Guard::forget`]); the CLI hook (`loopguard-hook`) first keeps a summary of it | nothing |
//!
//! Every stateful event records the payload's `permission_mode` in the session's `meta`
//! (shown by `loopguard status`).
//!
//! Runs follow OpenClaw's run scoping: each prompt is a run, and calls made inside a
//! subagent form their own run, `prompt-N/<agent_id>`, in a session of their own
//! (`SESSION/<agent_id>`: each sub-agent keeps its own loop state, and the parent's history
//! holds its own calls, among them the sub-agent launches, whose repetition is a loop at
//! the parent). With `loopguard.budgets`, the parent's session counts its sub-agents' calls. After an abort, further calls of
//! the same run are denied until the next prompt. A tool event whose call id was already
//! applied (the hook registered in both the user and the project settings, a retry) is
//! ignored, so each call counts once.

use std::cell::Cell;

use loopguard_core::{JsString, Mode, Value};
use loopguard_events::{Action, Decision, Effect, Event, EventKind, Payload};
use loopguard_guard::{
    Guard, GuardError, LogDecision, LogRow, ParentLink, SessionEntry, RESTARTED,
};

use crate::protocol::{AgentEvent, Answer, CallOutcome, Decided, Kind, ToolUse};

/// Applies one event (read and mapped, its session key final) to its session in `guard`
/// (which should use [`loopguard_guard::ToolProfile::ClaudeCode`], as every hook front
/// end's does). `agent` is the `agents.list[]` id whose settings apply; `config` labels
/// where the config came from (shown by `status`); `notes` receives lines for the user (a
/// session found unreadable and started afresh).
pub(crate) fn apply_event(
    guard: &Guard,
    tenant: Option<&str>,
    ev: &AgentEvent<'_>,
    agent: Option<&str>,
    config: &str,
    now: u64,
    notes: &mut Vec<String>,
) -> Result<Answer, GuardError> {
    if matches!(ev.kind, Kind::Ignore | Kind::Continuation) {
        return Ok(Answer::default());
    }
    if ev.kind == Kind::End {
        // The session's runs are over: its state and decision log go, and its sub-agents'.
        guard.forget(tenant, &ev.session)?;
        return Ok(Answer::default());
    }
    if let (Some(_), Kind::Pre | Kind::Post | Kind::Batch) = (&ev.subagent, ev.kind) {
        return apply_subagent(guard, tenant, ev, agent, config, now, notes);
    }
    if ev.subagent.is_some() && ev.kind == Kind::Prompt {
        // A sub-agent's own prompt (Qwen Code sends one inside a subagent) is its task,
        // part of the parent's prompt going on: no new run of the parent.
        return Ok(Answer::default());
    }
    Ok(apply_to(guard, tenant, ev, agent, config, now, notes, None)?.0)
}

/// A sub-agent's call or outcome: applied to the sub-agent's own session
/// (`SESSION/SUB`, its own loop state, so its calls never crowd the parent's history out
/// of its window), linked to its parent's as every front end links a `parentSession`
/// ([`Guard::link_parent`]): it runs in the parent's current prompt, the parent's session
/// counts the sub-agent's calls that ran toward its `callsPerSession` budget, and the
/// sub-agent's budget check starts from the parent's count.
#[allow(clippy::too_many_arguments)]
fn apply_subagent(
    guard: &Guard,
    tenant: Option<&str>,
    ev: &AgentEvent<'_>,
    agent: Option<&str>,
    config: &str,
    now: u64,
    notes: &mut Vec<String>,
) -> Result<Answer, GuardError> {
    let mut child = ev.clone();
    child.session = session_of(ev).into_owned();
    let link = guard.link_parent(tenant, &ev.session, &child.session)?;
    let (answer, counted) = apply_to(guard, tenant, &child, agent, config, now, notes, Some(link))?;
    if counted {
        guard.count_at_parent(tenant, &ev.session)?;
    }
    Ok(answer)
}

#[allow(clippy::too_many_arguments)]
fn apply_to(
    guard: &Guard,
    tenant: Option<&str>,
    ev: &AgentEvent<'_>,
    agent: Option<&str>,
    config: &str,
    now: u64,
    notes: &mut Vec<String>,
    parent: Option<ParentLink>,
) -> Result<(Answer, bool), GuardError> {
    let ctx = Ctx {
        guard,
        mode: guard.applier().mode,
        agent,
        now,
        counted: Cell::new(false),
    };
    let answer = guard.update(tenant, &ev.session, |entry| {
        if let Some(link) = parent {
            entry.run_seq = link.run_seq;
            entry.inherit_parent_calls(link.calls);
        }
        if let Some(note) = entry.meta.remove(RESTARTED) {
            notes.push(format!("loopguard: {note}"));
        }
        if let Some(cwd) = &ev.cwd {
            entry.meta.insert("cwd".into(), cwd.clone());
        }
        match agent {
            Some(a) => entry.meta.insert("agent".into(), a.to_string()),
            None => entry.meta.remove("agent"),
        };
        entry.meta.insert("config".into(), config.to_string());
        if let Some(mode) = &ev.permission_mode {
            entry.meta.insert(PERMISSION_MODE.into(), mode.clone());
        }
        let before = entry.stats.events;
        let mut answer = apply(entry, ev, &ctx);
        // The log (`loopguard status`, the hook's log) names the agent's own tool, as the
        // model was told it (Gemini CLI's `run_shell_command`, not the table's `Bash`).
        if let (Some(shown), Some(t)) = (&ev.tool_shown, &ev.tool) {
            let mapped = t.name.to_string_lossy();
            for r in entry.recent.iter_mut().filter(|r| r.seq > before) {
                if r.tool.as_deref() == Some(mapped.as_ref()) {
                    r.tool = Some(shown.clone());
                }
                if let Some(m) = &r.message {
                    r.message = ev.in_agents_words(m);
                }
            }
        }
        answer.logged = entry
            .recent
            .iter()
            .filter(|r| r.seq > before)
            .cloned()
            .collect();
        answer
    })?;
    // Whether the parent counts the call (a sub-agent's call that runs, under a budget).
    Ok((answer, parent.is_some() && ctx.counted.get()))
}

/// The session an event's calls are applied to: a sub-agent's own (`SESSION/SUB`), else
/// the event's.
pub(crate) fn session_of<'e>(ev: &'e AgentEvent<'_>) -> std::borrow::Cow<'e, str> {
    match &ev.subagent {
        Some(sub) => format!("{}/{sub}", ev.session).into(),
        None => ev.session.as_str().into(),
    }
}

/// The `meta` key of the last `permission_mode` a payload carried.
pub const PERMISSION_MODE: &str = "permission_mode";

struct Ctx<'c> {
    guard: &'c Guard,
    mode: Mode,
    agent: Option<&'c str>,
    now: u64,
    /// The last call applied is one a parent counts ([`SessionEntry::parent_counts`]).
    counted: Cell<bool>,
}

/// The run the event belongs to: each prompt is a run, and a subagent's calls are a run
/// of their own.
fn run_id(entry: &SessionEntry, ev: &AgentEvent<'_>) -> String {
    match &ev.subagent {
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

fn apply(entry: &mut SessionEntry, ev: &AgentEvent<'_>, ctx: &Ctx<'_>) -> Answer {
    let name = ev.log_name();
    if ev.kind == Kind::Prompt {
        entry.run_seq += 1;
        entry.aborted = None;
        let run = run_id(entry, ev);
        log_hook_event(entry, ctx, hook_row(name, &run, None, LogDecision::NewRun));
        return Answer::default();
    }
    let run = run_id(entry, ev);
    if let Some(tool) = &ev.tool {
        if is_duplicate(entry, ev.kind, tool) {
            // The same hook registered twice (user and project settings), or a retry:
            // each tool call counts once.
            log_hook_event(
                entry,
                ctx,
                hook_row(name, &run, Some(tool), LogDecision::Duplicate),
            );
            return Answer::default();
        }
    }
    if let (Kind::Pre, Some(t), Mode::Enforce) = (ev.kind, &ev.tool, ctx.mode) {
        if let Some(aborted) = entry.aborted.clone().filter(|a| a.run == run) {
            let row = LogRow {
                detector: Some(aborted_detector(&aborted.message).into()),
                message: Some(aborted.message.clone()),
                ..hook_row(name, &run, Some(t), LogDecision::DenyAborted)
            };
            log_hook_event(entry, ctx, row);
            return Answer {
                deny: Some(aborted.message.clone()),
                ..Answer::stop(&aborted.message)
            };
        }
    }
    if ev.kind == Kind::Batch {
        let answer = post_batch(entry, ev, &run, ctx);
        if answer.stop.is_none() && ctx.mode == Mode::Enforce {
            if let Some(aborted) = entry.aborted.as_ref().filter(|a| a.run == run) {
                // Claude Code ignores `continue: false` on a PreToolUse answer that also
                // denies the call (it only stops after a call that ran), but honours it
                // on the PostToolBatch that follows the denied call: the agent stops there.
                return Answer::stop(&aborted.message);
            }
        }
        return answer;
    }
    if ev.kind == Kind::Compact
        && entry
            .session
            .guard(Some(&run))
            .is_some_and(|g| g.is_armed() && g.remaining_attempts() == g.settings().window_size)
    {
        // Claude Code's PostCompact and SessionStart (compact) both follow one compaction:
        // the guard is armed and has watched nothing yet, so this is the same compaction.
        log_hook_event(
            entry,
            ctx,
            hook_row(name, &run, None, LogDecision::AlreadyArmed),
        );
        return Answer::default();
    }
    let event = to_event(ev, &run, ctx);
    let policy = ctx.guard.policy(event.agent.as_ref());
    let d = entry.apply(&policy, ctx.guard.applier(), &event, 0, ctx.now);
    ctx.counted.set(SessionEntry::parent_counts(&policy, &d));
    let mut answer = answer(entry, &d, &run, ctx);
    answer.decided.push(Decided::of(&d, ev, ctx.mode));
    if let Some(row) = entry.recent.back_mut() {
        // The log speaks the hook's event names.
        row.event = name.to_string();
        if d.action == Action::Abort {
            row.message = entry
                .aborted
                .as_ref()
                .map(|a| a.message.clone())
                .or(row.message.take());
        }
    }
    answer
}

/// A batch: the outcome of each call that no single outcome event recorded (those hooks
/// have finished when the batch event fires), from the result the model saw. The first
/// abort stops the agent, as after a single outcome.
fn post_batch(entry: &mut SessionEntry, ev: &AgentEvent<'_>, run: &str, ctx: &Ctx<'_>) -> Answer {
    let name = ev.log_name();
    let (mut recorded, mut skipped) = (0, 0);
    let mut decided = Vec::new();
    for (tool, response) in &ev.batch {
        let Some(response) = response else {
            skipped += 1;
            continue;
        };
        if is_duplicate(entry, Kind::Post, tool) {
            skipped += 1;
            continue;
        }
        let event = Event {
            kind: EventKind::Outcome,
            session: Some(JsString::from(ev.session.clone())),
            run: Some(JsString::from(run.to_string())),
            agent: ctx.agent.map(|a| JsString::from(a.to_string())),
            call_id: tool.id.clone(),
            tool: Some(tool.name.clone()),
            args: tool.input.clone(),
            payload: Some(Payload::Result(response.clone())),
            timestamp_ms: ctx.now,
            usage: None,
            parent_session: None,
        };
        let policy = ctx.guard.policy(event.agent.as_ref());
        let d = entry.apply(&policy, ctx.guard.applier(), &event, 0, ctx.now);
        let answer = answer(entry, &d, run, ctx);
        decided.push(Decided::of(&d, ev, ctx.mode));
        if let Some(row) = entry.recent.back_mut() {
            row.event = name.to_string();
        }
        recorded += 1;
        if d.action == Action::Abort {
            if let Some(row) = entry.recent.back_mut() {
                row.message = entry.aborted.as_ref().map(|a| a.message.clone());
            }
            return Answer { decided, ..answer };
        }
    }
    let decision = LogDecision::Batch { recorded, skipped };
    log_hook_event(entry, ctx, hook_row(name, run, None, decision));
    Answer {
        decided,
        ..Answer::default()
    }
}

/// The event as an events.md event (Claude Code's tool names and shapes: the guard's
/// Claude Code profile maps them).
fn to_event<'p>(ev: &'p AgentEvent<'p>, run: &str, ctx: &Ctx<'_>) -> Event<'p> {
    let (kind, result) = match (ev.kind, &ev.outcome) {
        (Kind::Pre, _) => (EventKind::Call, None),
        (Kind::Post, Some(CallOutcome::Result(r))) => {
            (EventKind::Outcome, Some(Payload::Result(r.clone())))
        }
        (Kind::Post, Some(CallOutcome::Error { text, .. })) => (
            EventKind::Outcome,
            Some(Payload::Error(Value::String(text.clone()))),
        ),
        (Kind::Post, None) => (EventKind::Outcome, Some(Payload::Result(Value::Null))),
        _ => (EventKind::Compaction, None),
    };
    let tool = ev.tool.as_ref();
    Event {
        kind,
        session: Some(JsString::from(ev.session.clone())),
        run: Some(JsString::from(run.to_string())),
        agent: ctx.agent.map(|a| JsString::from(a.to_string())),
        call_id: tool.and_then(|t| t.id.clone()),
        tool: tool.map(|t| t.name.clone()),
        args: tool.map(|t| t.input.clone()).unwrap_or(Value::Null),
        payload: result,
        timestamp_ms: ctx.now,
        usage: None,
        parent_session: None,
    }
}

/// What the agent is told about a decision: its [`Effect`] (the one reading of a decision
/// every front end acts on) in the agent's terms.
fn answer(entry: &mut SessionEntry, d: &Decision<'_>, run: &str, ctx: &Ctx<'_>) -> Answer {
    let tool = d.tool.as_ref().map(lossy).unwrap_or_default();
    let Some(f) = &d.finding else {
        return Answer::default();
    };
    let message = lossy(&f.message);
    let notice = || {
        format!(
            "loopguard blocked {tool}: {} (count {})",
            f.detector, f.count
        )
    };
    match Effect::of(d, ctx.mode) {
        Effect::Proceed => Answer::default(),
        Effect::Notice => Answer::context(&format!("loopguard: {message}")),
        Effect::Refuse => Answer::deny(&message, &notice()),
        // `onCritical: "ask"`: the user decides; if the call runs and the loop goes on,
        // the engine's next critical decision of the run ends it (`EndRun` below).
        Effect::Ask => Answer {
            ask: Some(message),
            notice: Some(format!(
                "loopguard asks before {tool} runs: {} (count {})",
                f.detector, f.count
            )),
            ..Answer::default()
        },
        Effect::EndRun if d.kind == EventKind::Call => {
            // Strict profile: a second critical loop ended this run (the engine refuses
            // the rest of it); the agent is stopped as well, until the next prompt. The
            // run is remembered as aborted: its later calls are denied with the stop, and
            // the batch event after this denied call stops the agent (Claude Code does not
            // stop on a PreToolUse deny, see `apply`).
            let reason = format!("loopguard stopped the agent ({}): {message}", f.detector);
            entry.aborted = Some(loopguard_guard::AbortedRun {
                run: run.to_string(),
                message: reason.clone(),
            });
            Answer {
                deny: Some(message),
                notice: Some(notice()),
                ..Answer::stop(&reason)
            }
        }
        Effect::EndRun => {
            // The post-compaction guard, after a call that ran.
            let reason = format!(
                "loopguard stopped the agent (compaction_loop_persisted): {tool} repeated {} times with identical arguments and results after a context compaction. {message}",
                f.count
            );
            entry.aborted = Some(loopguard_guard::AbortedRun {
                run: run.to_string(),
                message: reason.clone(),
            });
            Answer::stop(&reason)
        }
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

/// `true` when this tool event was already applied: a call whose id is already in the
/// history, or an outcome for a call whose outcome is already recorded.
fn is_duplicate(entry: &SessionEntry, kind: Kind, tool: &ToolUse<'_>) -> bool {
    let Some(id) = tool.id.as_ref().filter(|i| !i.is_empty()) else {
        return false;
    };
    let mut same = entry
        .session
        .history()
        .records()
        .iter()
        .filter(|r| r.call_id.as_ref().map(JsString::as_wtf8) == Some(id.as_wtf8()));
    match kind {
        Kind::Pre => same.next().is_some(),
        _ => same.any(|r| r.result.is_some()),
    }
}
