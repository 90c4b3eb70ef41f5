//! # loopguard-core
//!
//! The tool-call loop detector of [OpenClaw](https://github.com/openclaw/openclaw)
//! (`tools.loopDetection`), as a small, pure Rust library: no I/O, no async, no global state.
//!
//! ## The model
//!
//! An agent calls tools. Before each call the runtime asks a [`Session`] whether the call
//! continues a loop; after it, the runtime tells the session what the tool returned. Data
//! flows one way:
//!
//! **call → fingerprint → history → detectors → decision.**
//!
//! * [`fingerprint`]: the arguments are hashed canonically (`argsHash`), byte-compatible
//!   with OpenClaw: keys sorted by UTF-16 code units, JavaScript number formatting, lone
//!   surrogates dropped. [`outcome`] hashes results the same way, ignoring volatile fields
//!   (an exec's pid and duration, a message's fresh id), because a loop is the same call
//!   getting the same answer.
//! * [`history`]: each session keeps its last `historySize` calls; detection only looks at
//!   the calls of the current run, so a new run (a heartbeat, a cron job) starts clean.
//! * [`detectors`]: five detectors in a fixed priority order: unknown-tool repeats, the
//!   global circuit breaker, known polls without progress, ping-pong alternation, and
//!   generic repeats. Repetition alone only warns; blocking needs identical outcomes.
//!   The opt-in `strict` profile (`loopguard` config block, [`config::Profile`]) adds
//!   loopguard's own detectors over an outcome ledger: identical failure and outcome
//!   streaks, one error despite changing arguments, argument churn, loops across
//!   compactions, and a second critical that ends the run.
//! * [`warnings`]: a warning is shown once per bucket of ten, so the model is not drowned.
//! * [`compaction_guard`]: after a context compaction, the same (tool, arguments, result)
//!   `windowSize` times in a row aborts the run with `compaction_loop_persisted`.
//! * [`state`]: a session's state as bytes and back, for runtimes that persist it between
//!   calls (one process per tool call, restarts).
//! * [`config`]: the `tools.loopDetection` block with OpenClaw's defaults, fallbacks,
//!   auto-raise rule and per-agent overrides.
//!
//! ## Example
//!
//! ```
//! use loopguard_core::{Call, Policy, Session, Value, Verdict};
//! use loopguard_core::outcome::Outcome;
//!
//! let policy = Policy::enabled(); // `tools.loopDetection: { enabled: true }`
//! let mut session = Session::new("agent:main:main");
//! let args = Value::parse(br#"{"action":"poll","sessionId":"sess-1"}"#)?;
//! let still_running = Value::parse(
//!     br#"{"content":[{"type":"text","text":"(no new output)"}],"details":{"status":"running"}}"#,
//! )?;
//!
//! let mut warned = 0;
//! for _ in 0..30 {
//!     let call = Call::new("process", &args).run("run-1");
//!     match session.before_call(&policy, &call).verdict {
//!         Verdict::Allow => {}
//!         Verdict::Warn { emitted, .. } => warned += emitted as u32,
//!         Verdict::Block { detection, .. } => {
//!             assert_eq!(detection.detector.as_str(), "known_poll_no_progress");
//!             assert_eq!(detection.count, 20);
//!             break;
//!         }
//!     }
//!     session.after_call(&policy, &call, Outcome::Result(&still_running));
//! }
//! assert_eq!(warned, 1); // shown once, at 10
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The behaviour reproduced is OpenClaw's "R" composite: Era B's configuration surface with
//! Era C's hashing and veto rules; the README's "Parity with OpenClaw" section lists the
//! choices.

pub mod canonical;
pub mod compaction_guard;
pub mod config;
pub mod detectors;
pub mod fingerprint;
pub mod history;
pub mod messages;
pub mod outcome;
pub mod parse;
#[cfg(feature = "serde")]
pub mod serde;
pub mod session;
pub mod state;
pub mod text;
pub mod value;
pub mod warnings;

pub use config::{LoopDetectionConfig, OpenClawConfig, Policy};
pub use detectors::{Detection, Detector, Level};
pub use parse::parse;
pub use session::{Call, CallDecision, Mode, OutcomeDecision, Session, Verdict};
pub use state::StateError;
pub use value::{JsString, Object, Value};
