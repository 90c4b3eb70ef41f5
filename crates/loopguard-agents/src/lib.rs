//! # loopguard-agents
//!
//! Tool-call loop protection for coding agents through their own hook systems: one agent
//! protocol for Claude Code (and VS Code's agent running Claude Code's hooks), Codex CLI,
//! Gemini CLI, Qwen Code, GitHub Copilot (CLI and the VS Code agent), Cursor, Factory
//! Droid, Cline, Windsurf (Cascade) and Kiro CLI.
//!
//! Every agent here runs a command (or, for Claude Code and Qwen Code, can POST) before and
//! after each tool call with one JSON object, and reads an answer. One run path
//! ([`answer`]) does the same for every agent:
//!
//! 1. the payload is parsed once, with JavaScript's `JSON.parse` semantics (OpenClaw's
//!    hashes need them), and read by the agent's [`Protocol`] into an [`AgentEvent`]
//!    (event names, field spellings, where the session id is);
//! 2. the agent's tools are mapped by its row of the one tool table
//!    ([`loopguard_guard::profile::agents`]): shell tools are hashed as OpenClaw's `exec`
//!    without their free-text labels and without the volatile lines of their results,
//!    polls of a running command are known polls;
//! 3. the event is applied to its session (runs per prompt and subagent, duplicates,
//!    aborts, the post-compaction guard) over the [`loopguard_guard::Guard`] the front
//!    end gives, with the Claude Code tool profile, so a loop gets the same decision
//!    whichever agent runs it;
//! 4. the [`Answer`] is written by the agent's protocol the way it reads answers: Codex,
//!    Qwen Code and Factory take Claude Code's `hookSpecificOutput.permissionDecision`,
//!    Gemini CLI a top-level `decision: "deny"`, Copilot CLI a top-level
//!    `permissionDecision`, Cursor `permission: "deny"`, Cline `cancel: true` (and always
//!    valid JSON), Windsurf and Kiro exit status 2 with the reason on standard error.
//!
//! The front ends are thin shells over [`answer`]: `loopguard hook AGENT` and the Claude
//! Code plugin (`loopguard-hook`: the SQLite store, config discovery, fail-open, the log,
//! `status`) and `loopguard serve`'s `POST /v1/hooks/{agent}` (the server's store and
//! tenants). Adding an agent is a module implementing [`Protocol`] in `agents/`, its row
//! in the tool table if its tools need one, and its line in [`Agent`]'s table
//! (CONTRIBUTING.md walks through it).
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
mod protocol;
mod run;
mod session;

pub use agent::{Agent, UnknownAgent, AGENTS};
pub use agents::claude_code;
pub use protocol::{
    AgentError, AgentEvent, Answer, CallOutcome, Decided, Fields, Kind, Protocol, Rendered, ToolUse,
};
pub use run::{
    answer, answer_event, answer_in, parse_payload, read, AgentReply, RunError, Scope,
    PENDING_CONTEXT,
};
pub use session::PERMISSION_MODE;
