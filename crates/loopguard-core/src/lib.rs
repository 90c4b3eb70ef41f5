//! # loopguard-core
//!
//! The tool-call loop detector of [OpenClaw](https://github.com/openclaw/openclaw)
//! (`tools.loopDetection`), as a small, pure Rust library: no I/O, no async, no global state.
//! Everything it offers is at the crate root.
//!
//! ## The model
//!
//! An agent calls tools. Before each call the runtime asks a [`Session`] whether the call
//! continues a loop; after it, the runtime tells the session what the tool returned; after
//! a context compaction, it says so. Data flows one way:
//!
//! **call → fingerprint → history → detectors → decision.**
//!
//! * **Fingerprints.** The arguments are hashed canonically ([`args_hash`], `argsHash`),
//!   byte-compatible with OpenClaw: keys sorted by UTF-16 code units, JavaScript number
//!   formatting, lone surrogates dropped. Results are hashed the same way
//!   ([`hash_outcome`]), without their volatile fields (an exec's pid and duration, a
//!   message's fresh id; which tools are message sends is a [`SendClassifier`]), because a
//!   loop is the same call getting the same answer. [`Value`] holds JSON as JavaScript's
//!   `JSON.parse` does.
//! * **History.** A session keeps its last `historySize` calls ([`History`]); detection
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
mod warnings;

// The engine: one session per agent session, driven call by call.
pub use restore::Restore;
pub use session::{
    veto_result, Call, CallDecision, CompactionDecision, Mode, OutcomeDecision, Session, Verdict,
    MAX_RUN_GUARDS,
};
pub use state::{StateError, STATE_FORMAT, STATE_VERSION, STATE_VERSION_MIN};

// What a decision says and what a session holds.
pub use compaction_guard::{CompactionGuard, GuardAbort, GuardVerdict};
pub use detectors::known_poll::is_known_poll_call;
pub use detectors::ledger::{
    failure_identity, normalize_failure_text, FailureId, Ledger, LedgerEntry, LoopMark, RunState,
};
pub use detectors::no_progress::{streak as no_progress_streak, Streak};
pub use detectors::sketch::{
    args_sketch, is_echo_only, is_wait_call, similarity_pct, tool_bookkeeping_keys, ArgsSketch,
    Sketch, BOOKKEEPING_KEYS, TOOL_BOOKKEEPING,
};
pub use detectors::{Detection, Detector, Level};
pub use history::{normalize_run, History, Name, Record, RecordRef};
pub use warnings::{BUCKET_SIZE, MAX_KEYS as MAX_WARNING_KEYS};

// Hashing calls and outcomes as OpenClaw does.
pub use fingerprint::{args_digest, args_digest_wtf8, args_hash, ArgsDigest};
pub use outcome::{
    hash_outcome, DefaultSendClassifier, Hashing, Outcome, OutcomeHash, ResultHash, SendClassifier,
    CHANNEL_TOOLS,
};

// `tools.loopDetection`: reading, checking and resolving the config.
pub use config::json5::{
    parse as parse_json5, Entry as Json5Entry, Node as Json5Node, NodeValue as Json5Value, Pos,
    SyntaxError,
};
pub use config::{
    as_positive_int, normalize_agent_id, unknown_tool_guard_threshold, AgentConfig,
    DetectorSwitches, Diagnostic, DiagnosticKind, GuardSettings, LoadError, Loaded,
    LoopDetectionConfig, OpenClawConfig, Policy, PostCompactionGuardConfig, ResolvedConfig,
    RunConfigError, Severity, DEFAULT_CRITICAL_THRESHOLD, DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
    DEFAULT_HISTORY_SIZE, DEFAULT_UNKNOWN_TOOL_THRESHOLD, DEFAULT_WARNING_THRESHOLD,
    DEFAULT_WINDOW_SIZE,
};
pub use config::{
    DetectorProfile, ExtraDetector, ExtraDetectorConfig, ExtraPolicy, LoopguardConfig,
    DEFAULT_ARGUMENT_CHURN, DEFAULT_ARGUMENT_CHURN_BLOCK, DEFAULT_CHANGING_ERROR,
    DEFAULT_COMPACTIONS, DEFAULT_CYCLE, DEFAULT_ERROR_CHANGING_ARGS, DEFAULT_FAILURE_STREAK,
    DEFAULT_NEAR_REPEAT, DEFAULT_NEAR_REPEAT_SIMILARITY, DEFAULT_OUTCOME_STREAK,
    EXTRA_DETECTOR_KEYS,
};

// JSON with JavaScript's semantics, and its canonical and output forms.
pub use canonical::{
    digest_value, format_js_number, hex, hex_bytes, js_number, to_canonical_string,
    write_json_string, write_json_string_body, write_json_value, Sink,
};
pub use parse::{
    parse, parse_object_entries, ParseError, ParseErrorKind, MAX_DEPTH as MAX_JSON_DEPTH,
};
pub use text::js_trim;
pub use value::{JsString, Object, Value};
