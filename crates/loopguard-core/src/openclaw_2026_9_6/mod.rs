//! The `openclaw-2026.9.6` profile: the loop detector of the `openclaw` npm release
//! 2026.9.6 and the tool wrapper around it, byte for byte (docs/decisions.md, "Two eras of
//! OpenClaw").
//!
//! The release differs from the documented `tools.loopDetection` that the default profile
//! follows: only `enabled` is read (history 30, warning 10, critical 20, breaker 30,
//! unknown tool 10 are fixed); argument churn warns; terminal `exec` failures share one
//! identity; a `write` without change is no progress; external-content envelope ids are
//! canonicalised; a block leaves a veto record that extends the streak; the first critical of
//! a run blocks and a later one ends the run; emitted warnings are appended to the tool
//! result; tool names are normalised before hashing. [`ShippedSession`] is one session of it.

mod config;
mod hash;

use std::sync::Arc;

use crate::history::normalize_run;
use crate::outcome::{Outcome, ResultHash};
use crate::value::{utf16_cmp, Value};
use crate::warnings::WarningBuckets;

pub use config::{channels, loop_detection_enabled, normalize_agent_id, Enabled};
pub use hash::{
    args_digest, args_hash, hash_outcome, is_known_poll, Channels, OutcomeKind, ShippedOutcome,
};

/// The release's fixed history size.
pub const HISTORY_SIZE: usize = 30;
/// The release's fixed warning threshold.
pub const WARNING_THRESHOLD: u64 = 10;
/// The release's fixed critical threshold.
pub const CRITICAL_THRESHOLD: u64 = 20;
/// The release's fixed global circuit breaker threshold.
pub const GLOBAL_CIRCUIT_BREAKER_THRESHOLD: u64 = 30;
/// The release's fixed unknown-tool threshold.
pub const UNKNOWN_TOOL_THRESHOLD: u64 = 10;
/// The release's fixed post-compaction window.
pub const WINDOW_SIZE: usize = 3;
/// Calls each argument variant needs before argument churn counts it.
const MIN_STABLE_CALLS_PER_VARIANT: u64 = 3;

/// The release's tool-name normalisation (`normalizeToolPolicyName`, after the wrapper's
/// `name || "tool"`): trimmed, lowercased, `bash` → `exec`, `apply-patch` → `apply_patch`,
/// `cron` → `automations`.
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::normalize_tool_name;
/// assert_eq!(normalize_tool_name(b" Bash "), b"exec");
/// assert_eq!(normalize_tool_name(b""), b"tool");
/// ```
pub fn normalize_tool_name(raw: &[u8]) -> Vec<u8> {
    let raw: &[u8] = if raw.is_empty() { b"tool" } else { raw };
    let alias = |name: &[u8]| -> Option<&'static [u8]> {
        match name {
            b"bash" => Some(b"exec"),
            b"apply-patch" => Some(b"apply_patch"),
            b"cron" => Some(b"automations"),
            _ => None,
        }
    };
    // Nearly every name is already lowercase printable ASCII, which trimming and lowercasing
    // leave as it is: one copy, without building the lowercased string.
    if raw
        .iter()
        .all(|b| b.is_ascii_graphic() && !b.is_ascii_uppercase())
    {
        return alias(raw).unwrap_or(raw).to_vec();
    }
    let trimmed = crate::text::js_trim(raw);
    let lower = match std::str::from_utf8(trimmed) {
        Ok(s) if s.is_ascii() => s.to_ascii_lowercase().into_bytes(),
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => trimmed.to_ascii_lowercase(),
    };
    match alias(&lower) {
        Some(a) => a.to_vec(),
        None => lower,
    }
}

/// The note the release appends to a tool result after an emitted warning of `count`
/// repeated calls (agent-core's `appendToolLoopWarning`: a text block after the result's
/// content).
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::warning_note;
/// assert!(warning_note(10).starts_with("[System note: Tool-loop warning after 10 repeated calls."));
/// ```
pub fn warning_note(count: u64) -> String {
    format!("[System note: Tool-loop warning after {count} repeated calls. Change your approach or stop if you are not making progress.]")
}

/// The tool result the release gives the model instead of a call vetoed by a critical with
/// `message` (agent-core's `completeToolLoopInterventionBatch`, for the call that triggered
/// it): the run's first critical asks the model to reassess; a later one (`ends_run`) says
/// the run is stopping.
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::critical_result;
/// assert!(critical_result("CRITICAL: x", false).starts_with("CRITICAL: x\n\nDo not repeat this exact tool action."));
/// assert!(critical_result("CRITICAL: x", true).ends_with("This run is stopping now."));
/// ```
pub fn critical_result(message: &str, ends_run: bool) -> String {
    if ends_run {
        format!("{message}\n\nCritical tool-loop recovery failed because another critical loop was detected. This run is stopping now.")
    } else {
        format!("{message}\n\nDo not repeat this exact tool action. Reassess the task. You may answer the user, ask for clarification, or continue with a different tool or different arguments.")
    }
}

/// One history record (the release's `ToolCallRecord`).
#[derive(Clone, Debug)]
struct Record {
    /// Shared with the records before it that name the same tool (see
    /// [`ShippedSession::tool_name`]).
    tool: Arc<[u8]>,
    /// The argument digest (`argsHash` is `tool:` and its hex).
    args: [u8; 32],
    call_id: Option<Vec<u8>>,
    /// Shared with the run's state (see [`ShippedSession::run_state`]).
    run: Option<Arc<[u8]>>,
    result: Option<ResultHash>,
    kind: OutcomeKind,
    failure_identity: Option<[u8; 32]>,
    no_progress: bool,
    unknown_tool: Option<String>,
}

/// A detection of the release's detector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShippedDetection {
    /// `generic_repeat`, `known_poll_no_progress`, `ping_pong`, `global_circuit_breaker`,
    /// `unknown_tool_repeat` or `argument_churn`.
    pub detector: &'static str,
    /// `true` for a critical (the call is vetoed), `false` for a warning.
    pub critical: bool,
    /// The count the message names.
    pub count: u64,
    /// The detector's message.
    pub message: String,
    /// The detector's warning key (without the run prefix).
    pub warning_key: String,
    /// The other tool of a ping-pong pair.
    pub paired_tool: Option<String>,
}

/// What the wrapper does with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShippedVerdict {
    /// No loop (or detection off).
    Allow,
    /// A warning; `note` is what is appended to the tool result when it is emitted.
    Warn {
        /// The detection.
        detection: ShippedDetection,
        /// The bucket key (`<run>:` and the detector's key when a run is set).
        key: String,
        /// `true` when the warning entered a new bucket of ten.
        emitted: bool,
        /// The note appended to the tool result the model sees, when emitted.
        note: Option<String>,
    },
    /// A critical: the call does not run. The first of a run blocks; a later one ends the
    /// run (`ends_run`).
    Block {
        /// The detection.
        detection: ShippedDetection,
        /// The key, built like a warning's.
        key: String,
        /// `true` when this critical ends the run (the run saw a critical before).
        ends_run: bool,
        /// The tool result the model is shown instead.
        shown: String,
    },
}

/// The answer to a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShippedCall {
    /// The normalised tool name.
    pub tool: Vec<u8>,
    /// The argument digest ([`ShippedCall::args_hash`] is `tool:` and its hex).
    pub args: [u8; 32],
    /// The verdict.
    pub verdict: ShippedVerdict,
}

/// The post-compaction guard's verdict when a loop survived a compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShippedAbort {
    /// Identical outcomes in the window.
    pub count: u64,
    /// The message (`compaction_loop_persisted`).
    pub message: String,
}

/// The answer to an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShippedOutcomeDecision {
    /// The normalised tool name.
    pub tool: Vec<u8>,
    /// The argument digest ([`ShippedOutcomeDecision::args_hash`] is `tool:` and its hex).
    pub args: [u8; 32],
    /// The recorded outcome hash, if any.
    pub result: Option<ResultHash>,
    /// Set when the post-compaction guard ends the run.
    pub abort: Option<ShippedAbort>,
}

#[derive(Debug, Default)]
struct RunState {
    critical_seen: bool,
    guard_enabled: bool,
    remaining: usize,
    window: Vec<(Vec<u8>, [u8; 32], ResultHash)>,
}

/// `tool:` and the hex digest: the release's `argsHash`.
fn signature(tool: &[u8], args: &[u8; 32]) -> String {
    let mut s = lossy(tool);
    s.push(':');
    s.push_str(&crate::canonical::hex(args));
    s
}

impl ShippedCall {
    /// `argsHash`: the normalised tool, `:` and the hex digest.
    pub fn args_hash(&self) -> String {
        signature(&self.tool, &self.args)
    }
}

impl ShippedOutcomeDecision {
    /// `argsHash`: the normalised tool, `:` and the hex digest.
    pub fn args_hash(&self) -> String {
        signature(&self.tool, &self.args)
    }
}

/// One session of the release: its history, warning buckets and, per run, the one chance
/// to recover and the post-compaction guard.
///
/// ```
/// use loopguard_core::openclaw_2026_9_6::{Channels, Enabled, ShippedSession, ShippedVerdict};
/// use loopguard_core::{Outcome, Value};
/// let mut s = ShippedSession::default();
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let result = Value::parse(br#"{"content":[{"type":"text","text":"same"}]}"#)?;
/// let mut verdicts = Vec::new();
/// for _ in 0..22 {
///     let d = s.before_call(Enabled::True, b"read", &args, None, None);
///     verdicts.push(d.verdict);
///     let _ = s.after_call(Enabled::True, b"read", &args, None, None, Outcome::Result(&result), Channels::default());
/// }
/// assert!(matches!(&verdicts[20], ShippedVerdict::Block { ends_run: false, .. }));
/// assert!(matches!(&verdicts[21], ShippedVerdict::Block { ends_run: true, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct ShippedSession {
    history: Vec<Record>,
    buckets: WarningBuckets,
    runs: Vec<(Option<Arc<[u8]>>, RunState)>,
}

/// Byte equality written as a loop: the names compared on every record of every call are
/// short, and a call into `memcmp` for each cost more than the comparison. Records share
/// their tool and run names ([`ShippedSession::tool_name`], [`ShippedSession::run_state`]),
/// so the same pointer settles most comparisons.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a.iter().zip(b).all(|(x, y)| x == y))
}

/// [`same`] for optional names (a run).
#[inline]
fn same_opt(a: Option<&[u8]>, b: Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The most runs a session keeps the state of: the same bound as the default profile's
/// ([`crate::MAX_RUN_GUARDS`]; a test of the session module keeps the two equal). Kept here
/// so this module depends on nothing that depends on it.
pub(crate) const MAX_RUNS: usize = 64;

impl ShippedSession {
    /// The state of `run`, created on first use; the most recently used run is last, and
    /// beyond [`MAX_RUNS`] runs the least recently used is forgotten (a run that comes back
    /// starts afresh, as a new one does).
    /// Returns its index in `runs` (the last), whose key the records of the run share, so a
    /// call allocates no run name.
    fn run_state(&mut self, enabled: Enabled, run: Option<&[u8]>) -> usize {
        let last = self.runs.len().wrapping_sub(1);
        let i = match self
            .runs
            .iter()
            .rposition(|(k, _)| same_opt(k.as_deref(), run))
        {
            Some(i) if i == last => i,
            Some(i) => {
                let entry = self.runs.remove(i);
                self.runs.push(entry);
                self.runs.len() - 1
            }
            None => {
                if self.runs.len() >= MAX_RUNS {
                    self.runs.remove(0);
                }
                self.runs.push((
                    run.map(Arc::from),
                    RunState {
                        guard_enabled: enabled != Enabled::False,
                        ..Default::default()
                    },
                ));
                self.runs.len() - 1
            }
        };
        i
    }

    /// The state of the run at `i` ([`ShippedSession::run_state`]).
    fn state_at(&mut self, i: usize) -> &mut RunState {
        &mut self.runs[i].1
    }

    /// The tool name a new record holds: the latest record's when it names the same tool
    /// (a loop repeats its tool), so most calls allocate no name.
    fn tool_name(&self, tool: &[u8]) -> Arc<[u8]> {
        match self.history.last() {
            Some(r) if same(&r.tool, tool) => Arc::clone(&r.tool),
            _ => Arc::from(tool),
        }
    }

    fn push(&mut self, record: Record) {
        self.history.push(record);
        if self.history.len() > HISTORY_SIZE {
            let excess = self.history.len() - HISTORY_SIZE;
            self.history.drain(..excess);
        }
    }

    /// The wrapper before a call (`admitToolCallBatch` for a batch of this one call).
    /// `tool` is the name as the runtime gives it; it is normalised here.
    pub fn before_call(
        &mut self,
        enabled: Enabled,
        tool: &[u8],
        args: &Value<'_>,
        call_id: Option<&[u8]>,
        run: Option<&[u8]>,
    ) -> ShippedCall {
        self.before_call_in(enabled, tool, args, call_id, run, false)
    }

    /// [`ShippedSession::before_call`], in shadow mode when `observe` is set: a critical is
    /// reported as in enforce mode, but the call is recorded as if it ran (a pending record,
    /// not a veto record).
    pub fn before_call_in(
        &mut self,
        enabled: Enabled,
        tool: &[u8],
        args: &Value<'_>,
        call_id: Option<&[u8]>,
        run: Option<&[u8]>,
        observe: bool,
    ) -> ShippedCall {
        let tool = normalize_tool_name(tool);
        let digest = hash::args_digest(args);
        let ri = self.run_state(enabled, normalize_run(run));
        let run = self.runs[ri].0.clone();
        if enabled != Enabled::True {
            return ShippedCall {
                tool,
                args: digest,
                verdict: ShippedVerdict::Allow,
            };
        }
        // The record's name, shared with the records before it: comparing it with theirs
        // mostly finds the same pointer.
        let name = self.tool_name(&tool);
        let detection = self.detect(&name, args, &digest, run.as_deref());
        let call_id = call_id.filter(|c| !c.is_empty()).map(<[u8]>::to_vec);
        let prefixed = |key: &str| match &run {
            Some(r) => format!("{}:{key}", lossy(r)),
            None => key.to_owned(),
        };
        let verdict = match detection {
            Some(d) if d.critical => {
                let state = self.state_at(ri);
                let ends_run = state.critical_seen;
                state.critical_seen = true;
                self.push(Record {
                    tool: Arc::clone(&name),
                    args: digest,
                    call_id,
                    run: run.clone(),
                    result: None,
                    kind: if observe {
                        OutcomeKind::None
                    } else {
                        OutcomeKind::Veto
                    },
                    failure_identity: None,
                    no_progress: false,
                    unknown_tool: None,
                });
                let shown = critical_result(&d.message, ends_run);
                ShippedVerdict::Block {
                    key: prefixed(&d.warning_key),
                    detection: d,
                    ends_run,
                    shown,
                }
            }
            found => {
                let verdict = match found {
                    Some(d) => {
                        let key = prefixed(&d.warning_key);
                        let emitted = self.buckets.should_emit(key.as_bytes(), d.count);
                        let note = emitted.then(|| warning_note(d.count));
                        ShippedVerdict::Warn {
                            detection: d,
                            key,
                            emitted,
                            note,
                        }
                    }
                    None => ShippedVerdict::Allow,
                };
                self.push(Record {
                    tool: name,
                    args: digest,
                    call_id,
                    run,
                    result: None,
                    kind: OutcomeKind::None,
                    failure_identity: None,
                    no_progress: false,
                    unknown_tool: None,
                });
                verdict
            }
        };
        ShippedCall {
            tool,
            args: digest,
            verdict,
        }
    }

    /// The wrapper after a call ran: `recordToolCallOutcome` (whatever `enabled` says), then
    /// the post-compaction guard of the run for an outcome with a hash.
    #[allow(clippy::too_many_arguments)]
    pub fn after_call(
        &mut self,
        enabled: Enabled,
        tool: &[u8],
        args: &Value<'_>,
        call_id: Option<&[u8]>,
        run: Option<&[u8]>,
        outcome: Outcome<'_, '_>,
        channels: Channels,
    ) -> ShippedOutcomeDecision {
        let tool = normalize_tool_name(tool);
        let digest = hash::args_digest(args);
        let ri = self.run_state(enabled, normalize_run(run));
        let run = self.runs[ri].0.clone();
        let call_id = call_id.filter(|c| !c.is_empty());
        let hashed = hash::hash_outcome(&tool, args, outcome, channels);
        if hashed.result.is_none() && hashed.kind == OutcomeKind::None {
            return ShippedOutcomeDecision {
                tool,
                args: digest,
                result: None,
                abort: None,
            };
        }
        let pending = self.history.iter_mut().rev().find(|r| {
            same_opt(r.run.as_deref(), run.as_deref())
                && call_id.is_none_or(|c| r.call_id.as_deref() == Some(c))
                && same(&r.tool, &tool)
                && r.args == digest
                && r.result.is_none()
                && r.kind == OutcomeKind::None
        });
        match pending {
            Some(r) => {
                r.kind = hashed.kind;
                r.result = hashed.result;
                r.failure_identity = hashed.failure_identity;
                r.no_progress = hashed.no_progress;
                r.unknown_tool = hashed.unknown_tool.clone();
            }
            None => self.push(Record {
                tool: self.tool_name(&tool),
                args: digest,
                call_id: call_id.map(<[u8]>::to_vec),
                run: run.clone(),
                result: hashed.result,
                kind: hashed.kind,
                failure_identity: hashed.failure_identity,
                no_progress: hashed.no_progress,
                unknown_tool: hashed.unknown_tool.clone(),
            }),
        }
        let mut abort = None;
        if let Some(result) = hashed.result {
            let state = self.state_at(ri);
            if state.guard_enabled && state.remaining > 0 {
                state.remaining -= 1;
                state.window.push((tool.clone(), digest, result));
                let matches = state
                    .window
                    .iter()
                    .filter(|(t, a, r)| *t == tool && *a == digest && *r == result)
                    .count();
                if matches >= WINDOW_SIZE {
                    abort = Some(ShippedAbort {
                        count: matches as u64,
                        message: crate::messages::compaction_loop_persisted(
                            &tool,
                            matches as u64,
                            WINDOW_SIZE as u32,
                        )
                        .to_string(),
                    });
                }
            }
        }
        ShippedOutcomeDecision {
            tool,
            args: digest,
            result: hashed.result,
            abort,
        }
    }

    /// A compaction of the run: arms its post-compaction guard; `false` when the guard is
    /// off (`enabled: false` when the run was first seen).
    pub fn on_compaction(&mut self, enabled: Enabled, run: Option<&[u8]>) -> bool {
        let ri = self.run_state(enabled, normalize_run(run));
        let state = self.state_at(ri);
        state.remaining = WINDOW_SIZE;
        state.window.clear();
        state.guard_enabled
    }

    /// `detectToolCallLoop` of the release, for `tool` (normalised) with `args`.
    fn detect(
        &self,
        tool: &[u8],
        params: &Value<'_>,
        current: &[u8; 32],
        run: Option<&[u8]>,
    ) -> Option<ShippedDetection> {
        let mut history: Vec<&Record> = Vec::with_capacity(self.history.len());
        history.extend(
            self.history
                .iter()
                .filter(|r| same_opt(r.run.as_deref(), run)),
        );
        let name = lossy(tool);
        let unknown = unknown_tool_streak(&history, tool);
        let no_progress = no_progress_streak(&history, tool, current);
        let known_poll = hash::is_known_poll(tool, params);
        // The rest is computed when its rule is reached (the functions are pure, so the
        // release's eager order gives the same result).
        let latest = || {
            no_progress
                .1
                .map_or_else(|| "none".to_owned(), |r| r.to_string())
        };
        let sig = || signature(tool, current);
        let d = |detector, critical, count, message: String, key: String| ShippedDetection {
            detector,
            critical,
            count,
            message,
            warning_key: key,
            paired_tool: None,
        };
        if unknown.0 >= UNKNOWN_TOOL_THRESHOLD {
            let missing = unknown.1.unwrap_or(&name);
            return Some(d(
                "unknown_tool_repeat",
                true,
                unknown.0,
                format!("CRITICAL: attempted unavailable tool {missing} {} times. Stop retrying that missing tool and answer without it.", unknown.0),
                format!("unknown-tool:{name}:{}", unknown.1.unwrap_or("unknown")),
            ));
        }
        let streak = no_progress.0;
        if streak >= GLOBAL_CIRCUIT_BREAKER_THRESHOLD {
            return Some(d(
                "global_circuit_breaker",
                true,
                streak,
                format!("CRITICAL: {name} repeated identical no-progress outcomes {streak} times. Session execution blocked by global circuit breaker to prevent runaway loops."),
                format!("global:{name}:{}:{}", sig(), latest()),
            ));
        }
        if known_poll && streak >= CRITICAL_THRESHOLD {
            return Some(d(
                "known_poll_no_progress",
                true,
                streak,
                format!("CRITICAL: Called {name} with identical arguments and no progress {streak} times. This appears to be a stuck polling loop. Session execution blocked to prevent resource waste."),
                format!("poll:{name}:{}:{}", sig(), latest()),
            ));
        }
        if known_poll && streak >= WARNING_THRESHOLD {
            return Some(d(
                "known_poll_no_progress",
                false,
                streak,
                format!("WARNING: You have called {name} {streak} times with identical arguments and no progress. Stop polling and either (1) increase wait time between checks, or (2) report the task as failed if the process is stuck."),
                format!("poll:{name}:{}:{}", sig(), latest()),
            ));
        }
        let ping_pong = ping_pong(&history, tool, current);
        let pp_key = || match &ping_pong.paired_signature {
            Some(paired) => {
                let (current, paired) = (sig(), signature(&paired.0, &paired.1));
                let (a, b) = if utf16_cmp(current.as_bytes(), paired.as_bytes()).is_le() {
                    (current, paired)
                } else {
                    (paired, current)
                };
                format!("pingpong:{a}|{b}")
            }
            None => format!("pingpong:{name}:{}", sig()),
        };
        if ping_pong.count >= CRITICAL_THRESHOLD && ping_pong.no_progress {
            let mut found = d(
                "ping_pong",
                true,
                ping_pong.count,
                format!("CRITICAL: You are alternating between repeated tool-call patterns ({} consecutive calls) with no progress. This appears to be a stuck ping-pong loop. Session execution blocked to prevent resource waste.", ping_pong.count),
                pp_key(),
            );
            found.paired_tool = ping_pong.paired_tool;
            return Some(found);
        }
        if ping_pong.count >= WARNING_THRESHOLD {
            let mut found = d(
                "ping_pong",
                false,
                ping_pong.count,
                format!("WARNING: You are alternating between repeated tool-call patterns ({} consecutive calls). This looks like a ping-pong loop; stop retrying and report the task as failed.", ping_pong.count),
                pp_key(),
            );
            found.paired_tool = ping_pong.paired_tool;
            return Some(found);
        }
        if !known_poll && streak >= CRITICAL_THRESHOLD {
            return Some(d(
                "generic_repeat",
                true,
                streak,
                format!("CRITICAL: Called {name} with identical outcomes {streak} times. Session execution blocked to prevent runaway loops."),
                format!("generic:{name}:{}:{}", sig(), latest()),
            ));
        }
        let churn = argument_churn(&history, tool, current);
        if churn.0 >= WARNING_THRESHOLD {
            return Some(d(
                "argument_churn",
                false,
                churn.0,
                format!("WARNING: {name} has cycled through {} repeated argument patterns with the same stable outcome {} times. Continued churn is treated as stalled run activity, but this tool call remains allowed.", churn.1, churn.0),
                format!("argument-churn:{name}"),
            ));
        }
        let recent = history
            .iter()
            .filter(|r| r.args == *current && same(&r.tool, tool))
            .count() as u64;
        if !known_poll && recent >= WARNING_THRESHOLD {
            return Some(d(
                "generic_repeat",
                false,
                recent,
                format!("WARNING: You have called {name} {recent} times with identical arguments. If this is not making progress, stop retrying and report the task as failed."),
                format!("generic:{name}:{}", sig()),
            ));
        }
        None
    }
}

fn unknown_tool_streak<'h>(history: &[&'h Record], tool: &[u8]) -> (u64, Option<&'h str>) {
    let mut streak = 0;
    let mut name: Option<&str> = None;
    for r in history.iter().rev() {
        let Some(u) = r.unknown_tool.as_deref().filter(|_| same(&r.tool, tool)) else {
            break;
        };
        match name {
            None => {
                name = Some(u);
                streak = 1;
            }
            Some(n) if n == u => streak += 1,
            Some(_) => break,
        }
    }
    (streak, name)
}

/// `getNoProgressStreak`: the count and the latest result hash.
fn no_progress_streak(
    history: &[&Record],
    tool: &[u8],
    args: &[u8; 32],
) -> (u64, Option<ResultHash>) {
    let repeated = count_no_progress(history, tool, args, false);
    if tool != b"exec" {
        return repeated;
    }
    let failures = count_no_progress(history, tool, args, true);
    if failures.0 > repeated.0 {
        failures
    } else {
        repeated
    }
}

fn count_no_progress(
    history: &[&Record],
    tool: &[u8],
    args: &[u8; 32],
    terminal_only: bool,
) -> (u64, Option<ResultHash>) {
    let mut streak = 0;
    let mut latest: Option<&Record> = None;
    let mut crossed = false;
    let mut pending_vetoes = 0;
    for &r in history.iter().rev() {
        // The digests first: they differ on most records and compare without a loop.
        if !terminal_only && r.args != *args {
            continue;
        }
        if !same(&r.tool, tool) {
            if terminal_only {
                break;
            }
            continue;
        }
        if r.kind == OutcomeKind::Veto {
            pending_vetoes += 1;
            continue;
        }
        let Some(result) = r.result else {
            continue;
        };
        if terminal_only && r.kind != OutcomeKind::TerminalExecFailure {
            break;
        }
        let Some(first) = latest else {
            latest = Some(r);
            crossed = r.args != *args;
            streak = pending_vetoes + 1;
            pending_vetoes = 0;
            continue;
        };
        if terminal_only {
            if crossed && r.args == *args {
                break;
            }
            if r.args != *args {
                crossed = true;
            }
        }
        let same_failure = terminal_only
            && r.failure_identity.is_some()
            && r.failure_identity == first.failure_identity;
        if Some(result) != first.result && !same_failure {
            break;
        }
        streak += pending_vetoes + 1;
        pending_vetoes = 0;
    }
    let count = match latest {
        Some(_) => streak,
        None if terminal_only => 0,
        None => pending_vetoes,
    };
    (count, latest.and_then(|r| r.result))
}

/// `getArgumentChurnNoProgressStreak`: the count and the number of variants.
fn argument_churn(history: &[&Record], tool: &[u8], current: &[u8; 32]) -> (u64, u64) {
    // (argument digest, outcome hash, count), in insertion order; one tool throughout.
    let mut outcomes: Vec<(&[u8; 32], ResultHash, u64)> = Vec::new();
    for r in history.iter().rev() {
        if !same(&r.tool, tool) {
            break;
        }
        let Some(result) = r.result else {
            continue;
        };
        if !r.no_progress {
            break;
        }
        match outcomes.iter_mut().find(|o| *o.0 == r.args) {
            Some(o) if o.1 != result => break,
            Some(o) => o.2 += 1,
            None => outcomes.push((&r.args, result, 1)),
        }
    }
    let count: u64 = outcomes.iter().map(|o| o.2).sum();
    let stable: Vec<_> = outcomes
        .iter()
        .filter(|o| o.2 >= MIN_STABLE_CALLS_PER_VARIANT)
        .collect();
    let shared = stable
        .iter()
        .all(|o| stable.first().is_some_and(|f| f.1 == o.1))
        && !stable.is_empty();
    let only_stable = stable.iter().map(|o| o.2).sum::<u64>() == count;
    let current_count = outcomes.iter().find(|o| o.0 == current).map_or(0, |o| o.2);
    if stable.len() > 1 && only_stable && shared && current_count >= MIN_STABLE_CALLS_PER_VARIANT {
        (count, stable.len() as u64)
    } else {
        (0, 0)
    }
}

struct PingPong {
    count: u64,
    paired_tool: Option<String>,
    paired_signature: Option<(Vec<u8>, [u8; 32])>,
    no_progress: bool,
}

/// The release compares `argsHash`es, `tool:` and the digest: both parts.
fn same_call(a: &Record, b: &Record) -> bool {
    a.args == b.args && same(&a.tool, &b.tool)
}

fn ping_pong(history: &[&Record], tool: &[u8], current: &[u8; 32]) -> PingPong {
    let none = PingPong {
        count: 0,
        paired_tool: None,
        paired_signature: None,
        no_progress: false,
    };
    let Some(last) = history.last() else {
        return none;
    };
    let Some(other) = history[..history.len() - 1]
        .iter()
        .rev()
        .find(|r| !same_call(r, last))
    else {
        return none;
    };
    if other.tool.is_empty() {
        return none;
    }
    let mut tail = 0usize;
    for r in history.iter().rev() {
        let expected = if tail.is_multiple_of(2) { last } else { other };
        if !same_call(r, expected) {
            break;
        }
        tail += 1;
    }
    if tail < 2 || *current != other.args || !same(tool, &other.tool) {
        return none;
    }
    let mut first_a: Option<ResultHash> = None;
    let mut first_b: Option<ResultHash> = None;
    let mut no_progress = true;
    for r in &history[history.len() - tail..] {
        let Some(result) = r.result else {
            no_progress = false;
            break;
        };
        let slot = if same_call(r, last) {
            &mut first_a
        } else if same_call(r, other) {
            &mut first_b
        } else {
            no_progress = false;
            break;
        };
        match slot {
            None => *slot = Some(result),
            Some(f) if *f != result => {
                no_progress = false;
                break;
            }
            Some(_) => {}
        }
    }
    if first_a.is_none() || first_b.is_none() {
        no_progress = false;
    }
    PingPong {
        count: tail as u64 + 1,
        paired_tool: Some(lossy(&last.tool)),
        paired_signature: Some((last.tool.to_vec(), last.args)),
        no_progress,
    }
}

/// A WTF-8 string as a [`JsString`](crate::JsString) for writing (lone surrogates are the
/// bytes `ED A0..BF xx`).
fn js(bytes: &[u8]) -> crate::value::JsString<'_> {
    let lone = bytes
        .windows(2)
        .any(|w| w[0] == 0xED && (0xA0..=0xBF).contains(&w[1]));
    crate::value::JsString::from_wtf8(std::borrow::Cow::Borrowed(bytes), lone)
}

fn write_opt(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        Some(b) => crate::canonical::write_json_string(out, &js(b)),
        None => out.extend_from_slice(b"null"),
    }
}

/// Where a snapshot of a [`ShippedSession`] is wrong: a path and what was expected there.
pub type SnapshotError = (String, &'static str);

impl ShippedSession {
    /// The session's state as JSON (part of [`crate::Session::export_state`]'s snapshot):
    /// `{"history":[…],"warnings":[[key,bucket],…],"runs":[…]}`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"history\":[");
        for (i, r) in self.history.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            crate::canonical::write_json_string(out, &js(&r.tool));
            out.push(b',');
            crate::canonical::write_json_string(out, &js(signature(&r.tool, &r.args).as_bytes()));
            out.push(b',');
            write_opt(out, r.call_id.as_deref());
            out.push(b',');
            write_opt(out, r.run.as_deref());
            out.push(b',');
            let result = r.result.map(|h| h.to_string());
            write_opt(out, result.as_deref().map(str::as_bytes));
            out.push(b',');
            out.push(match r.kind {
                OutcomeKind::None => b'0',
                OutcomeKind::Veto => b'1',
                OutcomeKind::TerminalExecFailure => b'2',
            });
            out.push(b',');
            let failure = r.failure_identity.map(|f| crate::canonical::hex(&f));
            write_opt(out, failure.as_deref().map(str::as_bytes));
            out.push(b',');
            out.extend_from_slice(if r.no_progress { b"true" } else { b"false" });
            out.push(b',');
            write_opt(out, r.unknown_tool.as_deref().map(str::as_bytes));
            out.push(b']');
        }
        out.extend_from_slice(b"],\"warnings\":[");
        for (i, (key, bucket)) in self.buckets.entries().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            crate::canonical::write_json_string(out, &js(key));
            out.push(b',');
            crate::canonical::write_number(out, bucket as f64);
            out.push(b']');
        }
        out.extend_from_slice(b"],\"runs\":[");
        for (i, (run, s)) in self.runs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            write_opt(out, run.as_deref());
            out.extend_from_slice(if s.critical_seen {
                b",true,"
            } else {
                b",false,"
            });
            out.extend_from_slice(if s.guard_enabled { b"true," } else { b"false," });
            crate::canonical::write_number(out, s.remaining as f64);
            out.extend_from_slice(b",[");
            for (j, (t, a, r)) in s.window.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                crate::canonical::write_json_string(out, &js(t));
                out.push(b',');
                crate::canonical::write_json_string(out, &js(signature(t, a).as_bytes()));
                out.push(b',');
                crate::canonical::write_json_string(out, &js(r.to_string().as_bytes()));
                out.push(b']');
            }
            out.extend_from_slice(b"]]");
        }
        out.extend_from_slice(b"]}");
    }

    /// Reads what [`ShippedSession::write_json`] wrote.
    pub fn from_json(v: &Value<'_>) -> Result<ShippedSession, SnapshotError> {
        fn bytes(v: &Value<'_>, path: &str) -> Result<Vec<u8>, SnapshotError> {
            match v {
                Value::String(s) => Ok(s.as_wtf8().to_vec()),
                _ => Err((path.to_owned(), "a string")),
            }
        }
        fn opt(v: &Value<'_>, path: &str) -> Result<Option<Vec<u8>>, SnapshotError> {
            match v {
                Value::Null => Ok(None),
                other => bytes(other, path).map(Some),
            }
        }
        fn text(v: Vec<u8>, path: &str) -> Result<String, SnapshotError> {
            String::from_utf8(v).map_err(|_| (path.to_owned(), "UTF-8 text"))
        }
        /// The 32 bytes of the 64 hex digits that end `s`.
        fn hex32(s: &str, path: &str) -> Result<[u8; 32], SnapshotError> {
            let hex = s
                .len()
                .checked_sub(64)
                .and_then(|at| s.get(at..))
                .ok_or((path.to_owned(), "a hex digest"))?;
            let mut out = [0u8; 32];
            for (k, o) in out.iter_mut().enumerate() {
                *o = u8::from_str_radix(&hex[2 * k..2 * k + 2], 16)
                    .map_err(|_| (path.to_owned(), "a hex digest"))?;
            }
            Ok(out)
        }
        fn result_hash(s: &str, path: &str) -> Result<ResultHash, SnapshotError> {
            let is_error = s.starts_with("error:");
            let len = if is_error { 70 } else { 64 };
            if s.len() != len {
                return Err((path.to_owned(), "an outcome hash"));
            }
            Ok(ResultHash {
                is_error,
                digest: hex32(s, path)?,
            })
        }
        fn array<'v>(
            v: Option<&'v Value<'v>>,
            path: &str,
        ) -> Result<&'v [Value<'v>], SnapshotError> {
            v.and_then(Value::as_array)
                .ok_or((path.to_owned(), "an array"))
        }
        fn count(v: &Value<'_>, path: &str) -> Result<u64, SnapshotError> {
            match v.as_f64() {
                Some(n) if n >= 0.0 && n.fract() == 0.0 && n < 9.0e15 => Ok(n as u64),
                _ => Err((path.to_owned(), "a count")),
            }
        }
        let mut s = ShippedSession::default();
        for (i, r) in array(v.get("history"), "shipped.history")?
            .iter()
            .enumerate()
        {
            let p = format!("shipped.history[{i}]");
            let [tool, args, call_id, run, result, kind, failure, no_progress, unknown] =
                r.as_array().unwrap_or_default()
            else {
                return Err((p, "a record of 9 fields"));
            };
            let failure_identity = match opt(failure, &p)? {
                None => None,
                Some(hex) if hex.len() == 64 => Some(hex32(&text(hex, &p)?, &p)?),
                Some(_) => return Err((p, "a hex digest")),
            };
            s.history.push(Record {
                tool: bytes(tool, &p)?.into(),
                args: hex32(&text(bytes(args, &p)?, &p)?, &p)?,
                call_id: opt(call_id, &p)?,
                run: opt(run, &p)?.map(Arc::from),
                result: match opt(result, &p)? {
                    Some(r) => Some(result_hash(&text(r, &p)?, &p)?),
                    None => None,
                },
                kind: match count(kind, &p)? {
                    0 => OutcomeKind::None,
                    1 => OutcomeKind::Veto,
                    2 => OutcomeKind::TerminalExecFailure,
                    _ => return Err((p, "an outcome kind 0, 1 or 2")),
                },
                failure_identity,
                no_progress: no_progress.as_bool().ok_or((p.clone(), "a boolean"))?,
                unknown_tool: opt(unknown, &p)?.map(|u| text(u, &p)).transpose()?,
            });
        }
        let mut buckets = Vec::new();
        for (i, w) in array(v.get("warnings"), "shipped.warnings")?
            .iter()
            .enumerate()
        {
            let p = format!("shipped.warnings[{i}]");
            let [key, bucket] = w.as_array().unwrap_or_default() else {
                return Err((p, "a [key, bucket] pair"));
            };
            buckets.push((bytes(key, &p)?.into_boxed_slice(), count(bucket, &p)?));
        }
        s.buckets = WarningBuckets::from_entries(buckets);
        for (i, r) in array(v.get("runs"), "shipped.runs")?.iter().enumerate() {
            let p = format!("shipped.runs[{i}]");
            let [run, critical_seen, guard_enabled, remaining, window] =
                r.as_array().unwrap_or_default()
            else {
                return Err((p, "a run of 5 fields"));
            };
            let mut w = Vec::new();
            for t in array(Some(window), &p)? {
                let [tool, args, result] = t.as_array().unwrap_or_default() else {
                    return Err((p, "a [tool, args, result] triple"));
                };
                w.push((
                    bytes(tool, &p)?,
                    hex32(&text(bytes(args, &p)?, &p)?, &p)?,
                    result_hash(&text(bytes(result, &p)?, &p)?, &p)?,
                ));
            }
            s.runs.push((
                opt(run, &p)?.map(Arc::from),
                RunState {
                    critical_seen: critical_seen.as_bool().ok_or((p.clone(), "a boolean"))?,
                    guard_enabled: guard_enabled.as_bool().ok_or((p.clone(), "a boolean"))?,
                    remaining: (count(remaining, &p)? as usize).min(WINDOW_SIZE),
                    window: w,
                },
            ));
        }
        Ok(s)
    }
}
