//! # loopguard-agents
//!
//! Tool-call loop protection for coding agents through their own hook systems: one
//! agent-protocol layer for Codex CLI, Gemini CLI, Qwen Code, GitHub Copilot (CLI and the
//! VS Code agent), Cursor, Factory Droid, Cline, Windsurf (Cascade) and Kiro CLI.
//!
//! Every agent here runs a command before and after each tool call with one JSON object on
//! standard input, and reads an answer from standard output and the exit status. Each
//! agent's module turns its payload into the guard's events and the guard's decision into
//! its answer:
//!
//! 1. [`Agent::normalize`] reads the payload in the agent's own shape (event names,
//!    field spellings, where the session id is) and maps its tools onto the shapes the
//!    engine hashes specially, with the agent's tool profile ([`profile`]): shell tools are
//!    hashed as OpenClaw's `exec` without their free-text labels and without the volatile
//!    lines of their results (Gemini's `Process Group PGID: N`, Codex's `Wall time:`),
//!    polls of a running command (Codex `write_stdin` with empty `chars`, Copilot's
//!    `read_bash`) are known polls;
//! 2. the result is handed to the same live-guard layer the Claude Code hook uses
//!    ([`loopguard_hook::apply_payload`] over [`loopguard_guard::Guard`] with the Claude Code
//!    profile, the same SQLite database, the same runs, duplicates and aborts), so a loop
//!    gets the same decision whichever agent runs it;
//! 3. [`Agent`]'s answer renders the decision the way the agent reads it: Codex, Qwen
//!    Code and Factory take Claude Code's `hookSpecificOutput.permissionDecision`, Gemini
//!    CLI a top-level `decision: "deny"`, Copilot CLI a top-level `permissionDecision`,
//!    Cursor `permission: "deny"`, Cline `cancel: true` (and always valid JSON), Windsurf
//!    and Kiro exit status 2 with the reason on standard error.
//!
//! [`run`] is the whole hook command: it never fails and never panics; any error allows the
//! call with the answer each agent reads as "go on" (see [`Agent::allow`]).
//!
//! [`install`] writes loopguard's hook into each agent's own settings file, keeping every
//! other byte of it.
//!
//! ```
//! use loopguard_agents::{run, Agent};
//! use loopguard_hook::HookOptions;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let opts = HookOptions { state: Some(dir.path().join("db.sqlite3")), ..HookOptions::default() };
//! // Gemini CLI's BeforeTool for a shell command (its documented payload shape).
//! let before = br#"{"session_id":"g1","hook_event_name":"BeforeTool","cwd":"/p",
//!     "tool_name":"run_shell_command","tool_input":{"command":"npm test","description":"Run tests"}}"#;
//! let reply = run(Agent::Gemini, before, &opts);
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
pub use run::{answer, run, AgentReply, RunError, PENDING_CONTEXT};
