//! # loopguard-core
//!
//! The tool-call loop detector of [OpenClaw](https://github.com/openclaw/openclaw)
//! (`tools.loopDetection`), as a small, pure Rust library: no I/O, no async, no global state.
//!
//! The engine is at the crate root: [`Session`], [`Call`], [`Outcome`], the decisions
//! ([`Verdict`], [`Detection`], [`GuardAbort`]), [`Value`] (JSON as JavaScript holds it) and
//! the config ([`OpenClawConfig`], [`Policy`]). The plumbing it is built on is grouped in
//! four modules, for front ends that need the same semantics:
//!
//! * [`json`]: `JSON.parse` and `JSON.stringify` as JavaScript does them, the canonical
//!   form, `trim`;
//! * [`json5`]: the config files' JSON5 reader, with positions;
//! * [`hashing`]: the argument and outcome fingerprints, digests and their hex form;
//! * [`detection`]: what the detectors look at (the history, the poll and wait rules, the
//!   ledger of the strict profile).
//!
//! ## The model
//!
//! An agent calls tools. Before each call the runtime asks a [`Session`] whether the call
//! continues a loop; after it, the runtime tells the session what the tool returned; after
//! a context compaction, it says so. Data flows one way:
//!
//! **call → fingerprint → history → detectors → decision.**
//!
//! * **Fingerprints.** The arguments are hashed canonically ([`hashing::args_hash`], `argsHash`),
//!   byte-compatible with OpenClaw: keys sorted by UTF-16 code units, JavaScript number
//!   formatting, lone surrogates dropped. Results are hashed the same way
//!   ([`hashing::hash_outcome`]), without their volatile fields (an exec's pid and duration, a
//!   message's fresh id; which tools are message sends is a [`SendClassifier`]), because a
//!   loop is the same call getting the same answer. [`Value`] holds JSON as JavaScript's
//!   `JSON.parse` does.
//! * **History.** A session keeps its last `historySize` calls ([`detection::History`]); detection
//!   only looks at the calls of the current run, so a new run (a heartbeat, a cron job)
//!   starts clean.
//! * **Detectors**, in a fixed priority order: unknown-tool repeats, the global circuit
//!   breaker, known polls without progress, ping-pong alternation, generic repeats
//!   ([`Detector`]). Repetition alone only warns; blocking needs identical outcomes.
//!   The opt-in `strict` profile (the `loopguard` config block, [`DetectorProfile`]) adds
//!   loopguard's own detectors over an outcome ledger: identical failure and outcome
//!   streaks, one error despite changing arguments, argument churn, loops across
//!   compactions, and a second critical that ends the run.
//! * **Decisions.** [`Session::before_call`] answers allow, warn or block ([`Verdict`]); a
//!   warning is shown to the model once per bucket of ten (`emitted`).
//!   [`Session::after_call`] records the outcome and may abort the run: after a compaction
//!   ([`Session::on_compaction`]) the same (tool, arguments, result) `windowSize` times in a
//!   row means the loop survived it ([`GuardAbort`], `compaction_loop_persisted`). The
//!   decisions are `#[must_use]`: ignoring a block or an abort is a silent bug.
//! * **Config.** [`OpenClawConfig`] reads an OpenClaw config file: [`OpenClawConfig::load_for_run`]
//!   as OpenClaw resolves it at run time (values that are not positive integers fall back
//!   to their defaults, with warnings), [`OpenClawConfig::from_json5`] for checking. A
//!   [`Policy`] is what one agent gets, after per-agent overrides, fallbacks and the
//!   auto-raise of thresholds; [`Policy::with_max_history`] caps `historySize`.
//! * **State.** A session's memory is bounded: `historySize` calls, 256 warning keys and the
//!   post-compaction guards of its [`MAX_RUN_GUARDS`] most recently used runs, however many
//!   runs it has seen. [`Session::export_state`] writes it as bytes (a versioned JSON
//!   document, [`STATE_VERSION`]) for runtimes that keep sessions between processes;
//!   [`Session::restore`] reads it back with the settings that are code, not state (the
//!   hashing settings). A restored session decides exactly as the original would have.
//!
//! `Session` is `Send + Sync`: share it behind a lock. With the `serde` feature,
//! `serde_json::Value`s convert into [`Value`]s with the same hashes as their JSON text.
//!
//! ## Example
//!
//! A runtime's config, one session, and an agent polling a process that never changes:
//!
//! ```
//! use loopguard_core::{Call, OpenClawConfig, Outcome, Session, Value, Verdict};
//!
//! let config = OpenClawConfig::load_for_run("{ tools: { loopDetection: { enabled: true } } }")?;
//! let policy = config.config.policy_for(Some("main"));
//! let mut session = Session::new("agent:main:main");
//! let args = Value::parse(br#"{"action":"poll","sessionId":"sess-1"}"#)?;
//! let still_running = Value::parse(
//!     br#"{"content":[{"type":"text","text":"(no new output)"}],"details":{"status":"running"}}"#,
//! )?;
//!
//! let mut shown = Vec::new();
//! for turn in 1..=30 {
//!     let call = Call::new("process", &args).run("run-1");
//!     match session.before_call(&policy, &call).verdict {
//!         Verdict::Allow => {}
//!         Verdict::Warn { detection, emitted, .. } => {
//!             // The call runs; an emitted warning is shown to the model.
//!             if emitted {
//!                 shown.push((turn, detection.message.to_string()));
//!             }
//!         }
//!         Verdict::Block { detection, .. } => {
//!             // The call does not run: the message is its result.
//!             assert_eq!(detection.detector.as_str(), "known_poll_no_progress");
//!             assert_eq!((turn, detection.count), (21, 20));
//!             break;
//!         }
//!     }
//!     let recorded = session.after_call(&policy, &call, Outcome::Result(&still_running));
//!     if let Some(abort) = recorded.abort {
//!         panic!("stop the run: {}", abort.message);
//!     }
//! }
//! assert_eq!(shown.len(), 1); // once, at the tenth identical poll
//!
//! // Between two tool calls, the session can be saved and restored elsewhere.
//! let saved = session.export_state();
//! let mut restored = Session::restore(&saved).build()?;
//! let call = Call::new("process", &args).run("run-1");
//! assert!(restored.before_call(&policy, &call).is_block());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The behaviour reproduced is OpenClaw's "R" composite: Era B's configuration surface with
//! Era C's hashing and veto rules; the README's "Parity with OpenClaw" section lists the
//! choices.

mod canonical;
mod compaction_guard;
mod config;
mod detectors;
mod fingerprint;
mod from_text;
mod history;
mod messages;
mod outcome;
mod parse;
mod restore;
#[cfg(feature = "serde")]
mod serde;
mod session;
mod state;
mod state_binary;
mod text;
mod value;

pub mod openclaw_2026_9_6;
mod warnings;

// The engine: one session per agent session, driven call by call.
pub use restore::Restore;
pub use session::{
    veto_result, Call, CallDecision, CompactionDecision, Mode, OutcomeDecision, Session, Verdict,
    MAX_RUN_GUARDS,
};
pub use state::{StateError, STATE_FORMAT, STATE_VERSION, STATE_VERSION_MIN};

// What a decision says.
pub use compaction_guard::{CompactionGuard, GuardAbort, GuardVerdict};
pub use detectors::{Detection, Detector, Level};
pub use history::{normalize_run, Name};
pub use warnings::{BUCKET_SIZE, MAX_KEYS as MAX_WARNING_KEYS};

// What a call returned, and how outcomes are hashed.
pub use outcome::{DefaultSendClassifier, Hashing, Outcome, SendClassifier, CHANNEL_TOOLS};

// JSON values as JavaScript holds them: the input of every call.
pub use value::{JsString, Object, Shape, Value};

// `tools.loopDetection` and the `loopguard` block: reading, checking and resolving the config.
pub use config::{
    as_positive_int, normalize_agent_id, unknown_tool_guard_threshold, AgentConfig,
    DetectorSwitches, Diagnostic, DiagnosticKind, GuardSettings, LoadError, Loaded,
    LoopDetectionConfig, OpenClawConfig, Policy, PostCompactionGuardConfig, ResolvedConfig,
    RunConfigError, Severity, DEFAULT_CRITICAL_THRESHOLD, DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
    DEFAULT_HISTORY_SIZE, DEFAULT_UNKNOWN_TOOL_THRESHOLD, DEFAULT_WARNING_THRESHOLD,
    DEFAULT_WINDOW_SIZE,
};
pub use config::{AlertConfig, ALERT_EVENTS, ALERT_FORMATS};
pub use config::{Budgets, Escalation, OnCritical, BUDGET_KEYS};
pub use config::{
    DetectorProfile, ExtraDetector, ExtraDetectorConfig, ExtraPolicy, LoopguardConfig,
    DEFAULT_ARGUMENT_CHURN, DEFAULT_ARGUMENT_CHURN_BLOCK, DEFAULT_CHANGING_ERROR,
    DEFAULT_COMPACTIONS, DEFAULT_CYCLE, DEFAULT_ERROR_CHANGING_ARGS, DEFAULT_FAILURE_STREAK,
    DEFAULT_NEAR_REPEAT, DEFAULT_NEAR_REPEAT_SIMILARITY, DEFAULT_OUTCOME_STREAK,
    EXTRA_DETECTOR_KEYS,
};

pub mod json {
    //! The JSON layer, with JavaScript's semantics: [`parse`] as `JSON.parse` reads (into a
    //! [`Value`](crate::Value)), the writers as `JSON.stringify` writes (string escapes,
    //! number formatting), the canonical form the hashes are taken of, and JavaScript's
    //! `trim`.
    //!
    //! ```
    //! use loopguard_core::json;
    //!
    //! // Numbers and escapes as JavaScript reads and writes them; object keys in UTF-16 order.
    //! let v = json::parse(br#"{"b":1e21,"a":"\u00e9"}"#)?;
    //! assert_eq!(json::to_canonical_string(&v), r#"{"a":"é","b":1e+21}"#);
    //! let mut out = Vec::new();
    //! json::write_json_value(&mut out, &v);
    //! assert_eq!(String::from_utf8(out)?, r#"{"a":"é","b":1e+21}"#);
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::canonical::{
        format_js_number, js_number, to_canonical_string, write_json_string,
        write_json_string_body, write_json_value, Sink,
    };
    pub use crate::parse::{
        parse, parse_object_entries, parse_object_fields, ParseError, ParseErrorKind, MAX_DEPTH,
    };
    pub use crate::text::js_trim;
}

pub mod json5 {
    //! The JSON5 reader of config files, keeping every value's position for diagnostics
    //! ([`OpenClawConfig::from_json5`](crate::OpenClawConfig::from_json5) is built on it).
    //!
    //! ```
    //! use loopguard_core::json5;
    //!
    //! let doc = json5::parse("{ tools: { loopDetection: { enabled: true, } } }")?;
    //! let tools = doc.get("tools").ok_or("no tools")?;
    //! assert_eq!(tools.key_pos.line, 1);
    //! assert!(tools.value.get("loopDetection").is_some());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use crate::config::json5::{parse, Entry, Node, NodeValue, Pos, SyntaxError};
}

pub mod hashing {
    //! Fingerprints as OpenClaw takes them: the canonical hash of a call's arguments
    //! ([`args_hash`], `argsHash`; [`ArgsDigest`] as bytes) and of its outcome
    //! ([`hash_outcome`], without volatile fields), SHA-256 of any [`Value`](crate::Value)'s
    //! canonical form ([`digest_value`]), and their hex form. A front end holding arguments or
    //! a result as JSON text can take the digests from the text without building values
    //! ([`args_digest_from_json`], [`outcome_hash_from_json`]).
    //!
    //! ```
    //! use loopguard_core::{hashing, Value};
    //!
    //! let args = Value::parse(br#"{"path":"/a","n":1}"#)?;
    //! let same = Value::parse(br#"{"n":1.0,"path":"/a"}"#)?;
    //! assert_eq!(hashing::args_hash("read", &args), hashing::args_hash("read", &same));
    //! assert_eq!(hashing::hex(&hashing::digest_value(&args)).len(), 64);
    //! # Ok::<(), loopguard_core::json::ParseError>(())
    //! ```
    pub use crate::canonical::{digest_value, hex, hex_bytes};
    pub use crate::fingerprint::{args_digest, args_digest_wtf8, args_hash, ArgsDigest};
    pub use crate::from_text::{args_digest_from_json, outcome_hash_from_json};
    pub use crate::outcome::{hash_outcome, OutcomeHash, ResultHash};
}

pub mod detection {
    //! What the detectors look at, for front ends that explain a decision or classify a call
    //! as the engine does: the history a session keeps ([`History`], [`Record`]), the
    //! known-poll and wait-call rules, the no-progress streak, and the similarity measure of
    //! `near_repeat`.
    //!
    //! ```
    //! use loopguard_core::{detection, Value};
    //!
    //! let poll = Value::parse(br#"{"action":"poll","sessionId":"s1"}"#)?;
    //! assert!(detection::is_known_poll_call(b"process", &poll));
    //! assert!(!detection::is_known_poll_call(b"read", &poll));
    //! # Ok::<(), loopguard_core::json::ParseError>(())
    //! ```
    pub use crate::detectors::known_poll::is_known_poll_call;
    pub use crate::detectors::no_progress::streak as no_progress_streak;
    pub use crate::detectors::sketch::{is_wait_call, similarity_pct, tool_bookkeeping_keys};
    pub use crate::history::{History, Record};
    // The strict profile's ledger, argument sketches and general bookkeeping list (`Ledger`,
    // `args_sketch`, `failure_identity`, `BOOKKEEPING_KEYS`, …) stay private to the crate:
    // no front end uses them, which leaves room to change how the strict detectors work.
}
