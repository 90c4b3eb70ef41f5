//! # loopguard-events
//!
//! The contract every loopguard front end speaks (`events.md`, format v1): an agent runtime
//! reports what happens as **events** (`call` before a tool runs, `outcome` after it,
//! `compaction` when the context was compacted), and loopguard answers each event with one
//! **decision record**.
//!
//! * [`parse_event`] reads one JSON line into an [`Event`], with errors that name the line
//!   and the field ([`EventError`]);
//! * [`Event::write_json`] writes an event back as a line;
//! * [`Decision`] is the record: [`Decision::write_json`] writes it as `loopguard replay
//!   --json` does (with `line`), [`Decision::write_record`] without `line`, as the live front
//!   ends (`loopguard serve`, the Python package) return it;
//! * [`Effect`] is what a front end does with a decision (proceed, give the model a notice,
//!   refuse the call, end the run), computed once by [`Effect::of`].
//!
//! Events are parsed with JavaScript's JSON semantics (numbers as `f64`, lone surrogates
//! kept, the last duplicate key wins), so the argument and result hashes computed from them
//! are OpenClaw's.
//!
//! ```
//! use loopguard_events::{parse_event, EventKind};
//!
//! # fn main() -> Result<(), loopguard_events::EventError> {
//! let event = parse_event(br#"{"type":"call","session":"s1","tool":"read","args":{"path":"/a"}}"#, 1)?;
//! assert_eq!(event.kind, EventKind::Call);
//! assert_eq!(event.tool.as_ref().map(|t| t.to_string()), Some("read".to_string()));
//!
//! let bad = parse_event(br#"{"type":"outcome","tool":"read","result":1,"error":"x"}"#, 7);
//! assert_eq!(bad.unwrap_err().field, Some("error"));
//! # Ok(())
//! # }
//! ```

mod decision;
mod effect;
mod event;

pub use decision::{Action, Decision, Finding};
pub use effect::Effect;
pub use event::{parse_event, Event, EventError, EventKind, Payload, Usage};
