//! The hook's state: the live-guard layer's SQLite store.
//!
//! One database file holds every Claude Code session the hook has seen, as
//! [`loopguard_guard::SqliteStore`] keeps it: each hook process opens it, applies its event
//! inside one `BEGIN IMMEDIATE` transaction and commits, so parallel tool calls (parallel
//! hook processes) lose no update. See [`loopguard_guard::SqliteStore`] for the pragmas,
//! the WAL handling, the schema version and pruning.
//!
//! ```
//! use loopguard_hook::store::{Store, StoreOptions};
//! use loopguard_guard::Store as _;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(&dir.path().join("state.sqlite3"), &StoreOptions::default())?;
//! store.update(&loopguard_hook::store::key("session-1"), &mut |e| e.run_seq += 1)?;
//! assert_eq!(store.keys()?.len(), 1);
//! # Ok(())
//! # }
//! ```

pub use loopguard_guard::{
    SqliteOptions as StoreOptions, SqliteStore as Store, StoreError, SCHEMA_VERSION,
    WAL_CHECKPOINT_BYTES,
};

/// Decisions kept per session for `loopguard status`.
pub const EVENTS_KEPT: usize = 64;

/// The store key of a Claude Code session (no tenant).
pub fn key(session_id: &str) -> String {
    loopguard_guard::session_key(None, session_id)
}
