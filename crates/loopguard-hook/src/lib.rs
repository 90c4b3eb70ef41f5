//! # loopguard-hook
//!
//! Live tool-call loop protection for [Claude Code](https://code.claude.com): the engine
//! behind `loopguard hook claude-code`.
//!
//! Claude Code runs hook commands before and after every tool call and around context
//! compaction, passing one JSON object on standard input. loopguard is such a command: it
//! keeps one [`loopguard_core::Session`] per Claude Code session in a SQLite database,
//! applies the event to it with OpenClaw's rules, and answers in the JSON Claude Code
//! expects: a block denies the call with the detection message as the reason the model
//! sees, an emitted warning reaches the model as added context, and a loop that survives
//! a compaction stops the agent.
//!
//! * [`payload`]: the hook input;
//! * the Claude Code tool profile lives in the live-guard layer
//!   ([`loopguard_guard::profile::claude_code`]), shared with replay (`Bash` as
//!   `exec`, background-shell polling as a `process` poll, …);
//! * [`hook`]: one invocation, event by event, failing open on any error;
//! * [`store`]: the live-guard layer's SQLite store (immediate transactions, WAL, busy
//!   timeout, pruning, schema version);
//! * [`config`]: which config file applies;
//! * [`response`]: the JSON written back;
//! * [`settings`]: installing the hook into Claude Code's `settings.json`;
//! * [`status`]: what `loopguard status` shows;
//! * [`paths`]: where the database, log and config files live;
//! * [`advice`]: where protection is weaker than the config makes it look.
//!
//! ```
//! use loopguard_hook::{run_claude_code, HookOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let opts = HookOptions { state: Some(dir.path().join("state.sqlite3")), ..HookOptions::default() };
//! let pre = |id: u32| format!(r#"{{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read",
//!     "tool_input":{{"file_path":"/log.txt"}},"tool_use_id":"t{id}"}}"#);
//! let post = |id: u32| format!(r#"{{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read",
//!     "tool_input":{{"file_path":"/log.txt"}},"tool_use_id":"t{id}","tool_response":{{"type":"text","file":{{"content":"same"}}}}}}"#);
//! let mut answers = Vec::new();
//! for id in 1..=11 {
//!     answers.push(run_claude_code(pre(id).as_bytes(), &opts).stdout);
//!     run_claude_code(post(id).as_bytes(), &opts);
//! }
//! assert!(answers[..10].iter().all(String::is_empty));
//! // After ten identical reads with identical results, the eleventh is warned about.
//! assert!(answers[10].contains("additionalContext"));
//! ```

pub mod advice;
pub mod config;
pub mod hook;
mod jsonspan;
pub mod paths;
pub mod payload;
pub mod response;
pub mod settings;
pub mod status;
pub mod store;

pub use hook::{
    apply_payload, log_line, parse_duration, run_claude_code, HookError, HookOptions, HookReply,
};
