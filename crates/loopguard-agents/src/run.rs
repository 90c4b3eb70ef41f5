//! One hook invocation: an agent's payload in, the agent's answer out, state saved.

use std::sync::Arc;

use loopguard_guard::{Guard, SqliteStore};
use loopguard_hook::config::HookConfig;
use loopguard_hook::payload::HookPayload;
use loopguard_hook::response::Reply;
use loopguard_hook::{apply_payload, log_line, HookError, HookOptions};

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
}

/// Why an event could not be answered (the hook command fails open on any of these; a
/// server answers 400 for [`RunError::Agent`] and [`RunError::Payload`], 503 otherwise).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The payload is not one of the agent's.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The config, the store or the guard failed.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// The event could not be handed to the guard.
    #[error("the event could not be handed to the guard: {0}")]
    Payload(String),
}

/// Handles one hook payload of `agent`: reads it ([`Agent::normalize`]), applies it to the
/// session in the state database with the same live-guard layer and rules as the Claude
/// Code hook, and answers in the agent's own format. Never fails and never panics: any
/// error allows the call ([`Agent::allow`]) and is reported on standard error and in the
/// log file.
///
/// ```
/// use loopguard_agents::{run, Agent};
/// use loopguard_hook::HookOptions;
/// let dir = tempfile::tempdir().unwrap();
/// let opts = HookOptions { state: Some(dir.path().join("db.sqlite3")), ..HookOptions::default() };
/// let garbage = run(Agent::Cline, b"not json", &opts);
/// assert_eq!(garbage.stdout, "{\"cancel\":false}\n"); // Cline must always get JSON
/// assert!(garbage.error.is_some());
/// ```
pub fn run(agent: Agent, input: &[u8], opts: &HookOptions) -> AgentReply {
    let mut notes = Vec::new();
    match handle(agent, input, opts, &mut notes) {
        Ok(mut reply) => {
            for n in &notes {
                log_line(opts, n);
            }
            reply.stderr.splice(0..0, notes);
            reply
        }
        Err(e) => {
            let line = format!("loopguard: {agent} hook: {e}; the call is allowed (fail-open)");
            let line = match log_line(opts, &line) {
                Some(p) => format!("{line}. Log: {}", p.display()),
                None => line,
            };
            notes.push(line);
            let (stdout, exit_code) = agent.allow();
            AgentReply {
                stdout,
                stderr: notes,
                exit_code,
                error: Some(e.to_string()),
            }
        }
    }
}

fn allow(agent: Agent) -> AgentReply {
    let (stdout, exit_code) = agent.allow();
    AgentReply {
        stdout,
        exit_code,
        ..AgentReply::default()
    }
}

fn handle(
    agent: Agent,
    input: &[u8],
    opts: &HookOptions,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    let n = agent.normalize(input)?;
    if n.kind == Kind::Ignore {
        return Ok(allow(agent));
    }
    let path = opts.state_path().ok_or(HookError::NoStateDir)?;
    if matches!(n.kind, Kind::End | Kind::Continuation) && !path.is_file() {
        return Ok(allow(agent));
    }
    let config = if matches!(n.kind, Kind::End | Kind::Continuation) {
        HookConfig::builtin()
    } else {
        HookConfig::discover(
            opts.config.as_deref(),
            n.cwd.as_deref().map(std::path::Path::new),
            &opts.env,
        )
        .map_err(HookError::from)?
    };
    let store = SqliteStore::open(&path, &opts.store).map_err(HookError::from)?;
    let guard = Guard::builder()
        .config(config.openclaw())
        .profile(loopguard_guard::ToolProfile::ClaudeCode)
        .mode(opts.mode)
        .store(Arc::new(store))
        .log_size(loopguard_hook::store::EVENTS_KEPT)
        .build();
    let source = format!("{} ({agent})", config.source);
    answer_with(
        agent,
        &guard,
        None,
        &n,
        &source,
        now(opts),
        opts.agent.as_deref(),
        notes,
    )
}

fn now(opts: &HookOptions) -> u64 {
    opts.now_ms.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    })
}

/// Answers one hook payload of `agent` with `guard` (which should use the Claude Code
/// profile, as the hook command's does): for front ends that receive agents' hook payloads
/// themselves, such as `loopguard serve`'s `POST /v1/hooks/{agent}` (Qwen Code's
/// `type: "http"` hooks), with the tenant's sessions. `config` labels where the config
/// came from (shown by `loopguard status`); `notes` receives lines for the operator.
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
    let n = agent.normalize(input)?;
    if n.kind == Kind::Ignore {
        return Ok(allow(agent));
    }
    answer_with(agent, guard, tenant, &n, config, now, None, notes)
}

#[allow(clippy::too_many_arguments)]
fn answer_with(
    agent: Agent,
    guard: &Guard,
    tenant: Option<&str>,
    n: &Normalized,
    config: &str,
    now: u64,
    agent_id: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<AgentReply, RunError> {
    let reply = if n.kind == Kind::Continuation {
        continuation(guard, tenant, n)?
    } else {
        apply(guard, tenant, n, config, now, agent_id, notes)?
    };
    let context = deferred_context(agent, guard, tenant, n, &reply)?;
    let r = render(agent, n, &reply, context);
    Ok(AgentReply {
        stdout: r.stdout,
        stderr: r.stderr,
        exit_code: r.exit_code,
        error: None,
    })
}

/// Applies the event to its session as the Claude Code hook would.
fn apply(
    guard: &Guard,
    tenant: Option<&str>,
    n: &Normalized,
    config: &str,
    now: u64,
    agent_id: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Reply, RunError> {
    let cc =
        serde_json::to_vec(&n.to_claude_code()).map_err(|e| RunError::Payload(e.to_string()))?;
    let payload = HookPayload::parse(&cc).map_err(|e| RunError::Payload(e.to_string()))?;
    Ok(apply_payload(
        guard, tenant, &payload, agent_id, config, now, notes,
    )?)
}

/// The agent goes on with its run: when loopguard ended that run, it is stopped now
/// (`continue: false` with the stop reason); otherwise nothing is said. The session is
/// only read: nothing is recorded.
fn continuation(guard: &Guard, tenant: Option<&str>, n: &Normalized) -> Result<Reply, RunError> {
    let key = loopguard_guard::session_key(tenant, &n.session);
    let entry = guard.store().load(&key).map_err(HookError::from)?;
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
                guard
                    .update(tenant, &n.session, |e| {
                        e.meta.insert(PENDING_CONTEXT.into(), c.clone());
                    })
                    .map_err(HookError::from)?;
            }
            Ok(None)
        }
        Kind::Post | Kind::Failure => {
            let mut pending = None;
            guard
                .update(tenant, &n.session, |e| {
                    pending = e.meta.remove(PENDING_CONTEXT)
                })
                .map_err(HookError::from)?;
            Ok(pending.or_else(|| reply.context.clone()))
        }
        _ => Ok(reply.context.clone()),
    }
}
