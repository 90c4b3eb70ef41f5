//! # loopguard-agents
//!
//! Tool-call loop protection for coding agents through their own hook systems: the one
//! agent-protocol layer for Claude Code (and VS Code's agent running Claude Code's hooks),
//! Codex CLI, Gemini CLI, Qwen Code, GitHub Copilot (CLI and the VS Code agent), Cursor,
//! Factory Droid, Cline, Windsurf (Cascade) and Kiro CLI.
//!
//! Every agent here runs a command (or, for Claude Code and Qwen Code, can POST) before and
//! after each tool call with one JSON object, and reads an answer. Each agent's module
//! turns its payload into the guard's events and the guard's decision into its answer:
//!
//! 1. [`claude_code`] is Claude Code's protocol: its payload ([`claude_code::HookPayload`]),
//!    what each event does to the session (runs per prompt and subagent, duplicates,
//!    aborts, the post-compaction guard: [`claude_code::apply_payload`]) and its answer
//!    ([`claude_code::Reply`]);
//! 2. [`Agent::normalize`] reads another agent's payload in its own shape (event names,
//!    field spellings, where the session id is) and maps its tools onto the shapes the
//!    engine hashes specially, with the agent's tool profile ([`profile`]): shell tools are
//!    hashed as OpenClaw's `exec` without their free-text labels and without the volatile
//!    lines of their results (Gemini's `Process Group PGID: N`, Codex's `Wall time:`),
//!    polls of a running command (Codex `write_stdin` with empty `chars`, Copilot's
//!    `read_bash`) are known polls; the event is then applied by Claude Code's protocol
//!    over the same [`loopguard_guard::Guard`] with the Claude Code profile, so a loop gets
//!    the same decision whichever agent runs it;
//! 3. the answer renders the decision the way the agent reads it: Codex, Qwen Code and
//!    Factory take Claude Code's `hookSpecificOutput.permissionDecision`, Gemini CLI a
//!    top-level `decision: "deny"`, Copilot CLI a top-level `permissionDecision`, Cursor
//!    `permission: "deny"`, Cline `cancel: true` (and always valid JSON), Windsurf and Kiro
//!    exit status 2 with the reason on standard error.
//!
//! [`answer`] is the whole protocol over a guard the front end gives; the front ends are
//! thin shells over it: `loopguard hook AGENT` and the Claude Code plugin
//! (`loopguard-hook`: the SQLite store, config discovery, fail-open, the log, `status`)
//! and `loopguard serve`'s `POST /v1/hooks/{agent}` (the server's store and tenants).
//!
//! [`install`] is the one installer of every settings file loopguard edits: each agent's
//! hook settings (Claude Code's `settings.json` included) and the MCP clients' configs,
//! keeping every other byte of them.
//!
//! ```
//! use loopguard_agents::{answer, Agent};
//! use loopguard_guard::{Guard, ToolProfile};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
//! // Gemini CLI's BeforeTool for a shell command (its documented payload shape).
//! let before = br#"{"session_id":"g1","hook_event_name":"BeforeTool","cwd":"/p",
//!     "tool_name":"run_shell_command","tool_input":{"command":"npm test","description":"Run tests"}}"#;
//! let reply = answer(Agent::Gemini, &guard, None, before, "built-in", 0, &mut Vec::new())?;
//! assert_eq!(reply.stdout, "");   // allowed, nothing to say
//! assert_eq!(reply.exit_code, 0);
//! # Ok(())
//! # }
//! ```

mod agent;
mod agents;
pub mod install;
pub mod profile;
mod render;
mod run;

pub use agent::{Agent, AgentError, Kind, Normalized, ToolCall, UnknownAgent, AGENTS};
pub use agents::claude_code;
pub use run::{answer, answer_in, answer_normalized, AgentReply, RunError, Scope, PENDING_CONTEXT};
