//! # loopguard-guard
//!
//! Live loop protection for many agent sessions: the layer every loopguard front end
//! (the Claude Code hook, `loopguard serve`, `loopguard mcp`, the Python package) is a thin
//! shell over, and the one `loopguard replay` uses too, so identical events get identical
//! decisions everywhere.
//!
//! ## The model
//!
//! A front end turns what its runtime reports into [events.md](loopguard_events) events
//! (`call`, `outcome`, `compaction`) and hands them to a [`Guard`]. The guard
//!
//! 1. finds the event's session in its [`Store`] (in memory, SQLite, or Redis with the
//!    `redis` feature; keys are [`session_key`]s, so tenants never share a session);
//! 2. maps the runtime's tool onto the engine's shapes with the runtime's [`ToolProfile`]
//!    (Claude Code's `Bash` is hashed as OpenClaw's `exec`, without its free-text
//!    `description`);
//! 3. applies the event with [`SessionEntry::apply`]: OpenClaw's detectors through
//!    [`loopguard_core::Session`], the enforce-mode handling of outcomes of blocked calls,
//!    counters of every event, and a short log of recent decisions;
//! 4. saves the session atomically and returns the decision record
//!    ([`loopguard_events::Decision`]).
//!
//! Data flows one way: **runtime event → profile → session (core engine) → decision →
//! store**. Nothing here does I/O beyond the store; printing and protocols belong to the
//! front ends.
//!
//! ```
//! use loopguard_guard::{Guard, ToolProfile};
//!
//! # fn main() -> Result<(), loopguard_guard::GuardError> {
//! // Claude Code's Bash: the description differs on every attempt, the loop does not.
//! let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
//! let mut decisions = Vec::new();
//! for i in 1..=21 {
//!     let call = format!(r#"{{"type":"call","session":"s","tool":"Bash","args":{{"command":"npm test","description":"Run the tests (attempt {i})"}}}}"#);
//!     let outcome = format!(r#"{{"type":"outcome","session":"s","tool":"Bash","args":{{"command":"npm test","description":"Run the tests (attempt {i})"}},"error":"Exit code 1\nFAIL"}}"#);
//!     decisions.push(String::from_utf8_lossy(&guard.apply_line(None, call.as_bytes())?).into_owned());
//!     guard.apply_line(None, outcome.as_bytes())?;
//! }
//! assert!(decisions[10].contains(r#""decision":"warn""#));
//! assert!(decisions[20].contains(r#""decision":"block""#));
//! assert!(decisions[20].contains("Called Bash with identical arguments"));
//! assert!(decisions[20].contains(r#""argsHash":"exec:"#)); // OpenClaw's hash of the exec call
//! # Ok(())
//! # }
//! ```

pub mod advice;
pub mod config_check;
mod duration;
mod entry;
mod escalation;
mod guard;
mod logged;
mod loops;
pub mod profile;
mod store;

pub use duration::parse_duration;
pub use entry::{
    AbortedRun, Applier, EntryError, Input, LogRow, Prehashed, SessionEntry, Stats, RESTARTED,
    SUBAGENTS,
};
pub use guard::{
    enabled_config, session_key, session_key_wtf8, split_key, Guard, GuardBuilder, GuardError,
    ParentLink, SessionInfo,
};
pub use logged::LogDecision;
pub use loops::{
    LoopAction, LoopChange, LoopEnd, LoopPage, LoopQuery, LoopRecord, LoopStep, LOOP_FORMAT,
    MAX_LOOP_PAGE,
};
pub use profile::{ToolProfile, TOOL_PROFILES};
pub use store::{
    is_redis_spec, open_store, redact_spec, ApplyFn, AsyncStore, MemoryOptions, MemoryStore, Store,
    StoreError, StoreFuture,
};
#[cfg(feature = "redis")]
pub use store::{redis_key, RedisOptions, RedisStore};
#[cfg(feature = "sqlite")]
pub use store::{SqliteOptions, SqliteStore, SCHEMA_VERSION, WAL_CHECKPOINT_BYTES};
