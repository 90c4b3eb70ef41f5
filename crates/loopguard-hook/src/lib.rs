//! # loopguard-hook
//!
//! The CLI shell of live tool-call loop protection for coding agents: the engine behind
//! `loopguard hook AGENT` (and the Claude Code plugin, which runs
//! `loopguard hook claude-code`) and `loopguard status`.
//!
//! Claude Code (and every other agent of `loopguard-agents`) runs hook commands before and
//! after every tool call and around context compaction, passing one JSON object on
//! standard input. The protocol (what each event does, the answer the agent reads) is
//! `loopguard-agents`'; this crate is what a command needs around it: one
//! [`loopguard_core::Session`] per session in a SQLite database shared by the agent's
//! parallel hook processes, the config that applies, failing open with a line in the log,
//! and what `loopguard status` shows.
//!
//! * [`hook`]: one invocation of any agent's hook ([`run`]), failing open on any
//!   error;
//! * [`store`]: the live-guard layer's SQLite store (immediate transactions, WAL, busy
//!   timeout, pruning, schema version) and what outlives a session;
//! * [`alerts`]: `loopguard.alerts` from the hooks: once per loop, spooled beside the
//!   database and delivered by a detached process (`loopguard alerts deliver`,
//!   [`deliver_alerts`]);
//! * [`config`]: which config file applies;
//! * [`install`]: `loopguard hook install` / `uninstall`, and what they say about the hook
//!   they write (the config it will load);
//! * [`status`]: what `loopguard status` shows;
//! * [`doctor`]: `loopguard doctor`, one synthetic call through every installed hook;
//! * [`paths`]: where the database, log and config files live.
//!
//! ```
//! use loopguard_agents::Agent;
//! use loopguard_hook::{run, HookOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let opts = HookOptions { state: Some(dir.path().join("state.sqlite3")), ..HookOptions::default() };
//! let pre = |id: u32| format!(r#"{{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read",
//!     "tool_input":{{"file_path":"/log.txt"}},"tool_use_id":"t{id}"}}"#);
//! let post = |id: u32| format!(r#"{{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read",
//!     "tool_input":{{"file_path":"/log.txt"}},"tool_use_id":"t{id}","tool_response":{{"type":"text","file":{{"content":"same"}}}}}}"#);
//! let mut answers = Vec::new();
//! for id in 1..=11 {
//!     answers.push(run(Agent::ClaudeCode, pre(id).as_bytes(), &opts).stdout);
//!     run(Agent::ClaudeCode, post(id).as_bytes(), &opts);
//! }
//! assert!(answers[..10].iter().all(String::is_empty));
//! // After ten identical reads with identical results, the eleventh is warned about.
//! assert!(answers[10].contains("additionalContext"));
//! ```

pub mod alerts;
pub mod config;
pub mod doctor;
pub mod hook;
pub mod install;
pub mod paths;
pub mod status;
pub mod store;
pub mod wrap;

pub use hook::{deliver_alerts, log_line, run, HookError, HookOptions};
