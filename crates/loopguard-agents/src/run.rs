//! One hook event answered: an agent's payload in, the agent's answer out, the session's
//! state updated through the guard the front end gives (the CLI hook's SQLite store, a
//! server's store and tenant, memory in tests).

use loopguard_guard::{Guard, GuardError, LogRow};

use crate::claude_code::{apply_payload, HookPayload, PayloadError, Reply};
use crate::render::render;
use crate::{Agent, AgentError, Kind, Normalized};

/// The session `meta` key holding a warning decided before a call, for agents that can
/// only show the model a message with the call's result ([`Agent::defers_warnings`]).
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
    /// fills in): for a server's decision metrics. Not part of the answer.
    pub logged: Vec<LogRow>,
}

impl AgentReply {
    /// The answer that lets the call go on ([`Agent::allow`]), with nothing logged.
    pub fn allow(agent: Agent) -> AgentReply {
        let (stdout, exit_code) = agent.allow();
        AgentReply {
            stdout,
            exit_code,
            ..AgentReply::default()
        }
    }
}

/// Why an event could not be answered (a hook command fails open on any of these; a
/// server answers 400 for [`RunError::Agent`] and [`RunError::Payload`], and for a
/// [`GuardError::Event`], 503 otherwise).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The payload is not one of the agent's.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// A Claude Code payload could not be read (the error names the field).
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The guard (its store) failed.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The event could not be handed to the guard.
    #[error("the event could not be handed to the guard: {0}")]
    Convert(String),
}

/// Where an event goes and how it is labelled.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scope<'a> {
    /// The tenant whose sessions these are (a server's); `None` for a local hook.
    pub tenant: Option<&'a str>,
    /// The `agents.list[]` id whose settings apply (`--agent`); for Claude Code, default:
    /// the payload's `agent_type`.
    pub agent_id: Option<&'a str>,
    /// Where the config came from (shown by `loopguard status`).
    pub config: &'a str,
    /// The clock, ms since the epoch.
    pub now: u64,
}

/// Answers one hook payload of `agent` with `guard` (which should use the Claude Code
/// profile, as every front end's does): for front ends that receive agents' hook payloads
/// themselves, such as `loopguard serve`'s `POST /v1/hooks/{agent}` (Claude Code's and
/// Qwen Code's `type: "http"` hooks), with the tenant's sessions. `config` labels where
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
    answer_in(agent, guard, input, &scope, notes)
}

/// [`answer`] with every label of the event given ([`Scope`]).
pub fn answer_in(
    agent: Agent,
    guard: &Guard,
    input: &[u8],
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    if agent == Agent::ClaudeCode {
        // Claude Code's payload is read with loopguard's own JSON parser (OpenClaw's hashes
        // need JavaScript's `JSON.parse` semantics), not through `normalize`.
        let payload = HookPayload::parse(input)?;
        let agent_id = scope.agent_id.or(payload.agent_type.as_deref());
        let reply = apply_payload(
            guard,
            scope.tenant,
            &payload,
            agent_id,
            scope.config,
            scope.now,
            notes,
        )?;
        return Ok(AgentReply {
            stdout: reply.render(),
            logged: reply.logged,
            ..AgentReply::default()
        });
    }
    let n = agent.normalize(input)?;
    answer_normalized(agent, guard, &n, scope, notes)
}

/// Answers an event already read with [`Agent::normalize`] (a shell that needs the event's
/// working directory or kind before it opens its store, as the CLI hook does).
pub fn answer_normalized(
    agent: Agent,
    guard: &Guard,
    n: &Normalized,
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    if n.kind == Kind::Ignore {
        return Ok(AgentReply::allow(agent));
    }
    let reply = if n.kind == Kind::Continuation {
        continuation(guard, scope.tenant, n)?
    } else {
        apply(guard, n, scope, notes)?
    };
    let context = deferred_context(agent, guard, scope.tenant, n, &reply)?;
    let r = render(agent, n, &reply, context);
    Ok(AgentReply {
        stdout: r.stdout,
        stderr: r.stderr,
        exit_code: r.exit_code,
        error: None,
        logged: reply.logged,
    })
}

/// Applies the event to its session as Claude Code's protocol does.
fn apply(
    guard: &Guard,
    n: &Normalized,
    scope: &Scope<'_>,
    notes: &mut Vec<String>,
) -> Result<Reply, RunError> {
    let cc =
        serde_json::to_vec(&n.to_claude_code()).map_err(|e| RunError::Convert(e.to_string()))?;
    let payload = HookPayload::parse(&cc).map_err(|e| RunError::Convert(e.to_string()))?;
    Ok(apply_payload(
        guard,
        scope.tenant,
        &payload,
        scope.agent_id,
        scope.config,
        scope.now,
        notes,
    )?)
}

/// The agent goes on with its run: when loopguard ended that run, it is stopped now
/// (`continue: false` with the stop reason); otherwise nothing is said. The session is
/// only read: nothing is recorded.
fn continuation(guard: &Guard, tenant: Option<&str>, n: &Normalized) -> Result<Reply, RunError> {
    let key = loopguard_guard::session_key(tenant, &n.session);
    let entry = guard.store().load(&key).map_err(GuardError::from)?;
    // A new prompt clears `aborted`, so a recorded abort belongs to the run going on.
    Ok(match entry.and_then(|e| e.aborted) {
        Some(aborted) => Reply::stop(&n.event, &aborted.message),
        None => Reply::none(&n.event),
    })
}

/// For agents that cannot add context before a call: a warning decided before the call is
/// kept in the session and given with the next result.
fn deferred_context(
    agent: Agent,
    guard: &Guard,
    tenant: Option<&str>,
    n: &Normalized,
    reply: &Reply,
) -> Result<Option<String>, RunError> {
    if !agent.defers_warnings() {
        return Ok(reply.context.clone());
    }
    match n.kind {
        Kind::Pre => {
            if let Some(c) = &reply.context {
                guard.update(tenant, &n.session, |e| {
                    e.meta.insert(PENDING_CONTEXT.into(), c.clone());
                })?;
            }
            Ok(None)
        }
        Kind::Post | Kind::Failure => {
            let mut pending = None;
            guard.update(tenant, &n.session, |e| {
                pending = e.meta.remove(PENDING_CONTEXT)
            })?;
            Ok(pending.or_else(|| reply.context.clone()))
        }
        _ => Ok(reply.context.clone()),
    }
}
