//! The one run path: an agent's payload in, the agent's answer out, the session's state
//! updated through the guard the front end gives (the CLI hook's SQLite store, a server's
//! store and tenant, memory in tests).

use loopguard_core::{JsString, Value};
use loopguard_guard::profile::agents::tools_of;
use loopguard_guard::{Guard, GuardError, LogRow};

use crate::protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Decided, Fields, Kind, Protocol, Rendered,
};
use crate::session::{apply_event, session_of};
use crate::Agent;

/// The session `meta` key holding a warning decided before a call, for agents that can
/// only show the model a message with the call's result ([`Protocol::defers_warnings`]).
pub const PENDING_CONTEXT: &str = "pending_context";

/// The result of one invocation: print `stdout`, print each `stderr` line to standard
/// error, exit with `exit_code`.
#[derive(Debug, Default)]
pub struct AgentReply {
    /// The agent's answer (JSON), or empty.
    pub stdout: String,
    /// Lines for standard error (for Windsurf and Kiro, a block's reason, which the agent
    /// shows).
    pub stderr: Vec<String>,
    /// The exit status: 0, or 2 where the agent blocks that way (Windsurf, Kiro).
    pub exit_code: i32,
    /// The error that made the hook fail open, if any.
    pub error: Option<String>,
    /// What the event was logged as (a Claude Code `PostToolBatch` logs a row per call it
    /// fills in), the events the engine does not see among them. Not part of the answer.
    pub logged: Vec<LogRow>,
    /// The session the event was applied to, as loopguard names it (`AGENT:ID` for agents
    /// whose ids it prefixes); `None` for an event loopguard ignores. A sub-agent's calls go
    /// to a session of their own, which their [`Decided`] name.
    pub session: Option<String>,
    /// The engine's decisions for the event, each with its
    /// [`Effect`](loopguard_events::Effect): what a server records in its loop history,
    /// logs, counts and alerts on, as it does for `POST /v1/events`. Not part of the answer.
    pub decided: Vec<Decided>,
}

impl AgentReply {
    /// The answer that lets the call go on ([`Protocol::allow`]), with nothing logged.
    pub fn allow(agent: Agent) -> AgentReply {
        AgentReply::from_rendered(agent.protocol().allow())
    }

    fn from_rendered(r: Rendered) -> AgentReply {
        AgentReply {
            stdout: r.stdout,
            stderr: r.stderr,
            exit_code: r.exit_code,
            ..AgentReply::default()
        }
    }

    /// The answer as an HTTP response body (`POST /v1/hooks/{agent}`): the JSON answer,
    /// or `{}` when there is nothing to say (every agent that takes its answer over HTTP
    /// reads an empty object as "go on").
    pub fn http_body(&self) -> &str {
        if self.stdout.trim().is_empty() {
            "{}"
        } else {
            &self.stdout
        }
    }
}

/// Why an event could not be answered (a hook command fails open on any of these; a
/// server answers 400 for [`RunError::Payload`] and for a [`GuardError::Event`], 503
/// otherwise).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The payload is not one of the agent's (the error names the field).
    #[error(transparent)]
    Payload(#[from] AgentError),
    /// The guard (its store) failed.
    #[error(transparent)]
    Guard(#[from] GuardError),
}

impl RunError {
    /// The payload field the error names, if any.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            RunError::Payload(e) => e.field(),
            RunError::Guard(GuardError::Event(e)) => e.field,
            RunError::Guard(_) => None,
        }
    }
}

/// Where an event goes and how it is labelled.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scope<'a> {
    /// The tenant whose sessions these are (a server's); `None` for a local hook.
    pub tenant: Option<&'a str>,
    /// The `agents.list[]` id whose settings apply (`--agent`); default: the payload's
    /// `agent_type` (Claude Code's).
    pub agent_id: Option<&'a str>,
    /// Where the config came from (shown by `loopguard status`).
    pub config: &'a str,
    /// The clock, ms since the epoch.
    pub now: u64,
}

/// Answers one hook payload of `agent` with `guard` (which should use the Claude Code
/// profile, as every front end's does), with the tenant's sessions. `config` labels where
/// the config came from (shown by `loopguard status`); `notes` receives lines for the
/// operator.
///
/// ```
/// use loopguard_agents::{answer, Agent};
/// use loopguard_guard::{Guard, ToolProfile};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
/// let pre = br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"read_file",
///     "tool_input":{"absolute_path":"/a"},"tool_use_id":"t1"}"#;
/// let reply = answer(Agent::Qwen, &guard, Some("team-a"), pre, "built-in", 0, &mut Vec::new())?;
/// assert_eq!(reply.stdout, ""); // allowed, nothing to say
/// assert!(answer(Agent::ClaudeCode, &guard, None, b"not json", "built-in", 0, &mut Vec::new()).is_err());
/// # Ok(())
/// # }
/// ```
pub fn answer(
    agent: Agent,
    guard: &Guard,
    tenant: Option<&str>,
    input: &[u8],
    config: &str,
    now: u64,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    let scope = Scope {
        tenant,
        agent_id: None,
        config,
        now,
    };
    answer_in(agent.protocol(), guard, input, &scope, notes)
}

/// [`answer`] for any [`Protocol`], with every label of the event given ([`Scope`]).
pub fn answer_in(
    protocol: &dyn Protocol,
    guard: &Guard,
    input: &[u8],
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    let payload = Fields::parse(input)?;
    let ev = read(protocol, &payload)?;
    answer_event(protocol, guard, &ev, scope, notes)
}

/// Reads one payload (parsed with [`parse_payload`]) with the agent's protocol and makes it
/// the event the guard sees: the session key (`AGENT:ID` but for agents that keep their
/// ids) and the tools mapped by the agent's row of the tool table. For a shell that needs
/// the event's kind or working directory before it opens its store, as the CLI hook does.
pub fn read<'a>(
    protocol: &dyn Protocol,
    payload: &'a Value<'a>,
) -> Result<AgentEvent<'a>, AgentError> {
    let Value::Object(o) = payload else {
        return Err(AgentError::NotAnObject);
    };
    let mut ev = protocol.read(&Fields(o))?;
    if !protocol.keeps_session_ids() {
        ev.session = format!("{}:{}", protocol.name(), ev.session);
    }
    let tools = tools_of(protocol.name());
    if let Some(t) = &mut ev.tool {
        let shown = t.name.to_string_lossy().into_owned();
        let (name, input) = tools.map_call(&shown, &t.input);
        if name != shown {
            ev.tool_shown = Some(shown);
        }
        t.input = input;
        t.name = JsString::from(name.clone());
        ev.outcome = match ev.outcome.take() {
            Some(CallOutcome::Result(r)) => Some(CallOutcome::Result(tools.map_result(&name, &r))),
            Some(CallOutcome::Error { text, interrupt }) => {
                let mapped = tools.map_error(&name, &text.to_string_lossy());
                Some(CallOutcome::Error {
                    text: if mapped.as_bytes() == text.as_wtf8() {
                        text
                    } else {
                        JsString::from(mapped)
                    },
                    interrupt,
                })
            }
            None => None,
        };
    }
    Ok(ev)
}

/// Parses a payload: one JSON object, read with JavaScript's `JSON.parse` semantics.
pub fn parse_payload(input: &[u8]) -> Result<Value<'_>, AgentError> {
    Fields::parse(input)
}

/// Answers an event already [`read`].
pub fn answer_event(
    protocol: &dyn Protocol,
    guard: &Guard,
    ev: &AgentEvent<'_>,
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    if ev.kind == Kind::Ignore {
        return Ok(AgentReply::from_rendered(protocol.allow()));
    }
    let mut answer = if ev.kind == Kind::Continuation {
        continuation(guard, scope.tenant, ev)?
    } else {
        let agent_id = scope.agent_id.or(ev.agent_type.as_deref());
        apply_event(
            guard,
            scope.tenant,
            ev,
            agent_id,
            scope.config,
            scope.now,
            notes,
        )?
    };
    answer.context = deferred_context(protocol, guard, scope.tenant, ev, &answer)?;
    if !protocol.asks() {
        // A host without an approval flow cannot ask: the call is refused instead.
        if let Some(reason) = answer.ask.take() {
            answer.deny = Some(reason);
        }
    }
    let logged = std::mem::take(&mut answer.logged);
    let decided = std::mem::take(&mut answer.decided);
    let shown = in_agents_words(answer, ev);
    let mut reply = AgentReply::from_rendered(protocol.render(ev, &shown));
    reply.logged = logged;
    reply.session = Some(ev.session.clone());
    reply.decided = decided;
    Ok(reply)
}

/// The answer's texts name the agent's tool, not the name the tool table gave it
/// (`Called run_shell_command with identical arguments`, not `Called Bash …`).
fn in_agents_words(answer: Answer, ev: &AgentEvent<'_>) -> Answer {
    if ev.tool_shown.is_none() {
        return answer;
    }
    let rename = |s: Option<String>| s.map(|text| ev.in_agents_words(&text).unwrap_or(text));
    Answer {
        deny: rename(answer.deny),
        ask: rename(answer.ask),
        context: rename(answer.context),
        stop: rename(answer.stop),
        notice: rename(answer.notice),
        logged: answer.logged,
        decided: answer.decided,
    }
}

/// The agent goes on with its run: when loopguard ended that run, it is stopped now (with
/// the stop reason); otherwise nothing is said. The session is only read.
fn continuation(
    guard: &Guard,
    tenant: Option<&str>,
    ev: &AgentEvent<'_>,
) -> Result<Answer, RunError> {
    // A sub-agent's run is ended in its own session.
    let key = loopguard_guard::session_key(tenant, &session_of(ev));
    let entry = guard.store().load(&key).map_err(GuardError::from)?;
    // A new prompt clears `aborted`, so a recorded abort belongs to the run going on.
    Ok(match entry.and_then(|e| e.aborted) {
        Some(aborted) => Answer::stop(&aborted.message),
        None => Answer::default(),
    })
}

/// For agents that cannot add context before a call: a warning decided before the call is
/// kept in the session and given with the next result.
fn deferred_context(
    protocol: &dyn Protocol,
    guard: &Guard,
    tenant: Option<&str>,
    ev: &AgentEvent<'_>,
    answer: &Answer,
) -> Result<Option<String>, RunError> {
    if !protocol.defers_warnings() {
        return Ok(answer.context.clone());
    }
    // Kept in the session the call was applied to: a sub-agent's warning is given with
    // the sub-agent's next result, not its parent's.
    let session = session_of(ev);
    match ev.kind {
        Kind::Pre => {
            if let Some(c) = &answer.context {
                guard.update(tenant, &session, |e| {
                    e.meta.insert(PENDING_CONTEXT.into(), c.clone());
                })?;
            }
            Ok(None)
        }
        Kind::Post => {
            let mut pending = None;
            guard.update(tenant, &session, |e| {
                pending = e.meta.remove(PENDING_CONTEXT)
            })?;
            Ok(pending.or_else(|| answer.context.clone()))
        }
        _ => Ok(answer.context.clone()),
    }
}
