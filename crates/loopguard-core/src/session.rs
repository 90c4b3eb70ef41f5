//! The API an agent runtime embeds: one [`Session`] per agent session.
//!
//! Call [`Session::before_call`] before a tool runs (it answers allow / warn / block),
//! [`Session::after_call`] with what the tool returned (it records the outcome and may
//! abort the run when a loop survived a compaction), and [`Session::on_compaction`] when
//! the runtime compacted the context. This is OpenClaw's before-tool-call wrapper:
//!
//! * detection runs only when `enabled` is `true`; the call is recorded unless `enabled` is
//!   explicitly `false`; outcomes are always recorded;
//! * a block does not record the call; the veto result is recorded as its outcome, and
//!   since a veto has no hash, the block stays in force for the next identical call;
//! * warnings are returned every time with an `emitted` flag from the bucket
//!   de-duplication, so a runtime shows the model each warning once per ten calls;
//! * the post-compaction guard belongs to a (session, run) pair (decisions.md item 8); a
//!   session keeps the guards of its [`MAX_RUN_GUARDS`] most recently used runs, so its
//!   state does not grow with the number of runs it has seen.
//!
//! Every warning that is emitted, every block and every abort is also reported as a
//! `tracing` event (target `loopguard::tool_loop`) with the fields of OpenClaw's
//! `tool.loop` diagnostic event.

use indexmap::IndexMap;

use crate::compaction_guard::{CompactionGuard, GuardAbort};
use crate::config::{DetectorProfile, Policy};
use crate::detectors::ledger::Ledger;
use crate::detectors::{self, Detection, Detector, Level, Probe};
use crate::fingerprint::{args_digest_wtf8, ArgsDigest};
use crate::history::{normalize_run, History, Name, RecordRef};
use crate::outcome::{hash_outcome, Hashing, Outcome, OutcomeHash, ResultHash};
use crate::value::{JsString, Object, Value};
use crate::warnings::WarningBuckets;

/// Post-compaction guards kept per session: the guards of the least recently used runs
/// beyond this many are evicted.
///
/// A guard belongs to a (session, run) pair (decisions.md item 8), and a finished run never
/// needs its guard again. OpenClaw runs one run at a time per session; subagents and
/// overlapping cron or heartbeat runs add a few more, so 64 runs in use at once is far
/// beyond what a session interleaves, while the bound keeps a session's state (and a
/// snapshot of it, which the hook rewrites on every tool call) at a few kilobytes, however
/// many runs the session has seen. An evicted run that comes back gets a fresh, dormant
/// guard, as a run seen for the first time does.
pub const MAX_RUN_GUARDS: usize = 64;

/// Whether blocks are enforced.
///
/// ```
/// use loopguard_core::{Mode, Session};
/// let saved = Session::new("s").with_mode(Mode::Observe).export_state();
/// assert_eq!(Session::import_state(&saved, "s")?.mode(), Mode::Observe);
/// # Ok::<(), loopguard_core::StateError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// A blocked call does not run (OpenClaw's behaviour).
    #[default]
    Enforce,
    /// Shadow mode: decisions are reported, but every call is treated as if it ran.
    Observe,
}

/// A tool call, as the runtime knows it.
///
/// ```
/// use loopguard_core::{Call, Value};
/// let args = Value::parse(br#"{"path":"/a.txt"}"#)?;
/// let call = Call::new("read", &args).run("run-1").call_id("call-7");
/// assert_eq!(call.tool.as_str(), Some("read"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// Tool name, used as given.
    pub tool: JsString<'a>,
    /// The tool's parameters.
    pub args: &'a Value<'a>,
    /// The provider's tool-call id.
    pub call_id: Option<JsString<'a>>,
    /// The run id (trimmed; blank means none).
    pub run: Option<JsString<'a>>,
    /// The agent id, for diagnostics.
    pub agent: Option<JsString<'a>>,
    /// When the call was made, in milliseconds since the epoch (0 if unknown).
    pub timestamp_ms: u64,
    /// The argument digest, when the caller already has it (see [`Call::with_args_digest`]).
    pub args_digest: Option<ArgsDigest>,
    /// Whether the call is a known poll, when the caller already knows it (see
    /// [`Call::with_known_poll`]).
    pub known_poll: Option<bool>,
}

impl<'a> Call<'a> {
    /// A call of `tool` with `args`.
    pub fn new(tool: impl Into<JsString<'a>>, args: &'a Value<'a>) -> Self {
        Call {
            tool: tool.into(),
            args,
            call_id: None,
            run: None,
            agent: None,
            timestamp_ms: 0,
            args_digest: None,
            known_poll: None,
        }
    }

    /// Reuses the digest [`Session::before_call`] computed (`CallDecision::args`) for the
    /// matching [`Session::after_call`], saving one hash of the arguments. Only valid when
    /// the arguments did not change in between (OpenClaw rehashes because plugins may
    /// rewrite them).
    pub fn with_args_digest(mut self, digest: ArgsDigest) -> Self {
        self.args_digest = Some(digest);
        self
    }

    /// Says whether the call is a known poll
    /// ([`is_known_poll_call`](crate::detection::is_known_poll_call) of its tool and
    /// arguments), computed by the caller, for example on another thread (`loopguard
    /// replay` hashes and classifies calls on its reader thread). Only valid for these
    /// arguments.
    pub fn with_known_poll(mut self, known_poll: bool) -> Self {
        self.known_poll = Some(known_poll);
        self
    }

    fn is_known_poll(&self) -> bool {
        match self.known_poll {
            Some(k) => k,
            None => detectors::known_poll::is_known_poll_call(self.tool.as_wtf8(), self.args),
        }
    }

    fn digest(&self) -> ArgsDigest {
        match self.args_digest {
            Some(d) => d,
            None => args_digest_wtf8(self.tool.as_wtf8(), self.args),
        }
    }

    /// Sets the run id.
    pub fn run(mut self, run: impl Into<JsString<'a>>) -> Self {
        self.run = Some(run.into());
        self
    }

    /// Sets the provider's call id.
    pub fn call_id(mut self, id: impl Into<JsString<'a>>) -> Self {
        self.call_id = Some(id.into());
        self
    }

    /// Sets the agent id.
    pub fn agent(mut self, agent: impl Into<JsString<'a>>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Sets the timestamp.
    pub fn at(mut self, timestamp_ms: u64) -> Self {
        self.timestamp_ms = timestamp_ms;
        self
    }

    fn run_key(&self) -> Option<&[u8]> {
        normalize_run(self.run.as_ref().map(JsString::as_wtf8))
    }
}

/// What to do with a call.
///
/// ```
/// use loopguard_core::{Call, Policy, Session, Value, Verdict};
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let decision = session.before_call(&Policy::enabled(), &Call::new("read", &args));
/// assert_eq!(decision.verdict, Verdict::Allow);
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// No loop.
    Allow,
    /// A loop is forming; the call runs. Show `detection.message` to the model when
    /// `emitted` is true.
    Warn {
        /// The detection.
        detection: Detection,
        /// The de-duplication key (`<run>:` + the detector's key when a run is set).
        key: Name,
        /// `true` when the warning entered a new bucket of ten.
        emitted: bool,
    },
    /// The call must not run; give the model `detection.message` as its result.
    Block {
        /// The detection.
        detection: Detection,
        /// The key, built like a warning's.
        key: Name,
    },
}

/// The answer of [`Session::before_call`].
///
/// ```
/// use loopguard_core::{hashing, Call, Policy, Session, Value};
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let decision = session.before_call(&Policy::enabled(), &Call::new("read", &args));
/// assert!(!decision.is_block() && decision.detection().is_none());
/// assert_eq!(decision.args, hashing::args_digest("read", &args));
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a blocked call must not run: check the verdict"]
pub struct CallDecision {
    /// The argument digest (`argsHash` is `tool:` and its hex).
    pub args: ArgsDigest,
    /// Allow, warn or block.
    pub verdict: Verdict,
    /// `true` when the block also ends the run (`second_critical_abort`, strict profile):
    /// every further call of the run is blocked, and a front end that can stop the agent
    /// should.
    pub ends_run: bool,
}

impl CallDecision {
    /// The detection, when there is one.
    pub fn detection(&self) -> Option<&Detection> {
        match &self.verdict {
            Verdict::Allow => None,
            Verdict::Warn { detection, .. } | Verdict::Block { detection, .. } => Some(detection),
        }
    }

    /// `true` for a block.
    pub fn is_block(&self) -> bool {
        matches!(self.verdict, Verdict::Block { .. })
    }
}

/// The answer of [`Session::after_call`].
///
/// ```
/// use loopguard_core::{Call, Outcome, Policy, Session, Value};
/// let policy = Policy::enabled();
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let call = Call::new("read", &args);
/// let _ = session.before_call(&policy, &call);
/// let recorded = session.after_call(&policy, &call, Outcome::Result(&Value::from("text")));
/// assert!(recorded.result.is_some() && recorded.abort.is_none());
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[must_use = "an abort (a loop that survived a compaction) must stop the run: check `abort`"]
pub struct OutcomeDecision {
    /// The argument digest.
    pub args: ArgsDigest,
    /// The outcome hash, or `None` when nothing was recorded (an `undefined` result or
    /// the loop's own veto).
    pub result: Option<ResultHash>,
    /// Set when the post-compaction guard says the run must abort.
    pub abort: Option<GuardAbort>,
}

/// The answer of [`Session::on_compaction`].
///
/// ```
/// use loopguard_core::{Policy, Session};
/// let mut session = Session::new("s");
/// assert!(session.on_compaction(&Policy::enabled(), None).armed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "`armed` says whether the post-compaction guard watches this run"]
pub struct CompactionDecision {
    /// `false` when the guard is disabled (`enabled: false`).
    pub armed: bool,
}

/// The loop-detection state of one agent session.
///
/// ```
/// use loopguard_core::{Call, Policy, Session, Value, Verdict};
/// use loopguard_core::Outcome;
///
/// let policy = Policy::enabled();
/// let mut session = Session::new("agent:main:main");
/// let args = Value::parse(br#"{"path":"/same.txt"}"#)?;
/// let result = Value::parse(br#"{"content":[{"type":"text","text":"same output"}]}"#)?;
/// let mut blocked_at = None;
/// for i in 1..=25 {
///     let call = Call::new("read", &args);
///     let d = session.before_call(&policy, &call);
///     if let Verdict::Block { detection, .. } = &d.verdict {
///         assert!(detection.message.to_string().contains("identical outcomes"));
///         blocked_at = Some(i);
///         break;
///     }
///     session.after_call(&policy, &call, Outcome::Result(&result));
/// }
/// assert_eq!(blocked_at, Some(21));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct Session {
    id: String,
    mode: Mode,
    hashing: Hashing,
    history: History,
    buckets: WarningBuckets,
    unscoped_guard: Option<CompactionGuard>,
    /// The guards of the most recently used runs, least recently used first (at most
    /// [`MAX_RUN_GUARDS`]).
    run_guards: IndexMap<Box<[u8]>, CompactionGuard>,
    /// The run of the newest entry of `run_guards`, so consecutive events of one run skip
    /// the map.
    last_run: Option<Box<[u8]>>,
    ledger: Ledger,
    /// The drift sketch of the last call checked, for its outcome (saves normalising the
    /// same arguments twice); only with a drift detector on.
    last_sketch: Option<LastSketch>,
    /// The sketch of an outcome the ledger let go: its allocations serve the next call's.
    spare_sketch: Option<Box<crate::detectors::sketch::Sketch>>,
    /// The tool buffer and the numbers' box of the last sketch `after_call` used up, for
    /// the next call's (no allocation per call).
    sketch_buffers: Option<(Vec<u8>, Box<crate::detectors::sketch::Echoed>)>,
    /// The state of the `openclaw-2026.9.6` profile, which has its own engine
    /// ([`crate::openclaw_2026_9_6`]); created by the first event under that profile.
    shipped: Option<Box<crate::openclaw_2026_9_6::ShippedSession>>,
    /// The channel plugins the `openclaw-2026.9.6` profile takes as set up.
    shipped_channels: crate::openclaw_2026_9_6::Channels,
}

/// The drift sketch of the last call checked: its digest, tool, argument sketch and short
/// numbers, made once in `before_call` and used again by `after_call`.
type LastSketch = (
    ArgsDigest,
    Vec<u8>,
    crate::detectors::sketch::ArgsSketch,
    Box<crate::detectors::sketch::Echoed>,
);

// A runtime keeps sessions behind a lock shared by its threads (the guard crate's stores, a
// server's handlers): `Session`, and what it is driven with, must stay `Send + Sync`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Session>();
    send_sync::<Policy>();
    send_sync::<crate::config::OpenClawConfig>();
    send_sync::<CallDecision>();
    send_sync::<OutcomeDecision>();
};

impl Session {
    /// A fresh session; `id` only labels diagnostics.
    pub fn new(id: impl Into<String>) -> Self {
        Session {
            id: id.into(),
            ..Default::default()
        }
    }

    /// Sets enforce or observe mode.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Replaces the outcome-hashing settings (for example the channel-send predicate).
    pub fn with_hashing(mut self, hashing: Hashing) -> Self {
        self.hashing = hashing;
        self
    }

    /// Enforce or observe.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Replaces the session's label (a restored session keeps the name it is stored under).
    pub fn set_id(&mut self, id: impl Into<String>) {
        self.id = id.into();
    }

    /// Replaces the outcome-hashing settings in place (see [`Session::with_hashing`]).
    pub fn set_hashing(&mut self, hashing: Hashing) {
        self.hashing = hashing;
    }

    /// The session's label.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The outcome-hashing settings.
    pub fn hashing(&self) -> &Hashing {
        &self.hashing
    }

    /// The number of runs whose post-compaction guard the session holds (at most
    /// [`MAX_RUN_GUARDS`]).
    pub fn run_guard_count(&self) -> usize {
        self.run_guards.len()
    }

    /// The rolling history, oldest first.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The outcome ledger of loopguard's extra detectors (empty unless one is on).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Replaces the ledger (for [`crate::state`]).
    pub(crate) fn set_ledger(&mut self, ledger: Ledger) {
        self.ledger = ledger;
    }

    /// The post-compaction guard of a run, if one exists yet.
    pub fn guard(&self, run: Option<&str>) -> Option<&CompactionGuard> {
        match normalize_run(run.map(str::as_bytes)) {
            None => self.unscoped_guard.as_ref(),
            Some(r) => self.run_guards.get(r),
        }
    }

    /// Creates the guard of the (normalised) `run` with `policy`'s settings if it does not
    /// exist yet: a guard keeps the settings of the first event that named its run.
    fn ensure_guard(&mut self, policy: &Policy, run: Option<&[u8]>) {
        let settings = policy.guard;
        match run {
            None => {
                self.unscoped_guard
                    .get_or_insert_with(|| CompactionGuard::new(settings));
            }
            Some(r) => {
                // Consecutive events usually share a run; its guard is already the newest.
                if self.last_run.as_deref() == Some(r) {
                    return;
                }
                let last = self.run_guards.len().saturating_sub(1);
                match self.run_guards.get_index_of(r) {
                    Some(i) => self.run_guards.move_index(i, last),
                    None => {
                        self.run_guards
                            .insert(r.into(), CompactionGuard::new(settings));
                        if self.run_guards.len() > MAX_RUN_GUARDS {
                            self.run_guards.shift_remove_index(0);
                        }
                    }
                }
                self.last_run = Some(r.into());
            }
        }
    }

    fn guard_mut(&mut self, run: Option<&[u8]>) -> Option<&mut CompactionGuard> {
        match run {
            None => self.unscoped_guard.as_mut(),
            Some(r) => self.run_guards.get_mut(r),
        }
    }

    /// The session's state, field by field, for [`crate::state`].
    pub(crate) fn parts(&self) -> SessionParts<'_> {
        SessionParts {
            id: &self.id,
            mode: self.mode,
            history: &self.history,
            buckets: &self.buckets,
            unscoped_guard: self.unscoped_guard.as_ref(),
            run_guards: &self.run_guards,
        }
    }

    /// A session rebuilt from its state (for [`crate::state`]); `run_guards` is least
    /// recently used first, and only its newest [`MAX_RUN_GUARDS`] are kept.
    pub(crate) fn from_parts(
        id: String,
        mode: Mode,
        hashing: Hashing,
        history: History,
        buckets: WarningBuckets,
        unscoped_guard: Option<CompactionGuard>,
        mut run_guards: IndexMap<Box<[u8]>, CompactionGuard>,
    ) -> Session {
        let excess = run_guards.len().saturating_sub(MAX_RUN_GUARDS);
        if excess > 0 {
            run_guards.drain(..excess);
        }
        Session {
            id,
            mode,
            hashing,
            history,
            buckets,
            unscoped_guard,
            run_guards,
            last_run: None,
            ledger: Ledger::default(),
            last_sketch: None,
            spare_sketch: None,
            sketch_buffers: None,
            shipped: None,
            shipped_channels: Default::default(),
        }
    }

    /// OpenClaw's `detectToolCallLoop`: the detection for `call` against the history of
    /// its run, without recording anything or de-duplicating warnings. `None` when
    /// `enabled` is not `true` or no rule matches.
    pub fn detect(&self, policy: &Policy, call: &Call<'_>) -> Option<Detection> {
        let args = call.digest();
        self.detect_with(policy, call, args, None)
    }

    fn detect_with(
        &self,
        policy: &Policy,
        call: &Call<'_>,
        args: ArgsDigest,
        sketch: Option<&crate::detectors::sketch::ArgsSketch>,
    ) -> Option<Detection> {
        if !policy.resolved.enabled {
            return None;
        }
        let scope = self.history.scope(call.run_key());
        let known_poll = call.is_known_poll();
        let probe = Probe {
            history: scope.iter(),
            keyed: scope.keyed(),
            tool: call.tool.as_wtf8(),
            args,
            known_poll,
        };
        let base = detectors::detect(&probe, &policy.resolved);
        let extra = &policy.extra;
        if !extra.any() {
            return base;
        }
        let run = call.run_key();
        let proposed = detectors::Proposed {
            run,
            tool: call.tool.as_wtf8(),
            args: &args,
            params: call.args,
            known_poll,
            sketch,
        };
        let found = detectors::detect_extra(base, &self.ledger, &proposed, extra);
        if !extra.second_critical.enabled {
            return found;
        }
        let state = self.ledger.run(run);
        if state.is_some_and(|s| s.ended) {
            let n = state.map_or(0, |s| s.criticals);
            return Some(detectors::second_critical::detection(run, n + 1, None));
        }
        match found {
            Some(d) if d.level == Level::Critical => {
                let before = state.map_or(0, |s| s.criticals);
                if before >= 1 {
                    Some(detectors::second_critical::detection(
                        run,
                        before + 1,
                        Some(&d),
                    ))
                } else {
                    Some(d)
                }
            }
            other => other,
        }
    }

    /// OpenClaw's `recordToolCall`: appends the pending record of a call (whatever
    /// `enabled` says; [`Session::before_call`] applies that rule).
    pub fn record_call(&mut self, policy: &Policy, call: &Call<'_>) {
        let args = call.digest();
        self.record_call_with(policy, call, args);
    }

    fn record_call_with(&mut self, policy: &Policy, call: &Call<'_>, args: ArgsDigest) {
        self.history.push_call(
            &call.tool,
            args,
            call.call_id.as_ref(),
            call.run_key(),
            call.timestamp_ms,
            policy.resolved.history_size,
        );
    }

    /// OpenClaw's `recordToolCallOutcome`: hashes the outcome and attaches it to the
    /// pending record (or appends one), without feeding the post-compaction guard.
    /// Returns the record, or `None` when the outcome has no hash.
    pub fn record_outcome(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        outcome: Outcome<'_, '_>,
    ) -> Option<RecordRef<'_>> {
        let args = call.digest();
        self.record_outcome_with(policy, call, outcome, args)
    }

    fn record_outcome_with(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        outcome: Outcome<'_, '_>,
        args: ArgsDigest,
    ) -> Option<RecordRef<'_>> {
        let hashed = hash_outcome(call.tool.as_wtf8(), call.args, outcome, &self.hashing);
        self.record_hashed(policy, call, &hashed, args)
    }

    /// Attaches an outcome already hashed to its pending record (or appends one).
    fn record_hashed(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        hashed: &OutcomeHash,
        args: ArgsDigest,
    ) -> Option<RecordRef<'_>> {
        let result = hashed.result_hash?;
        Some(self.history.record_outcome(
            call.run_key(),
            call.call_id.as_ref(),
            &call.tool,
            args,
            result,
            hashed.unknown_tool.clone(),
            call.timestamp_ms,
            policy.resolved.history_size,
        ))
    }

    /// The before-call check: detect, de-duplicate warnings, record the call.
    pub fn before_call(&mut self, policy: &Policy, call: &Call<'_>) -> CallDecision {
        if policy.extra.profile == DetectorProfile::OpenClaw2026_9_6 {
            return self.shipped_before_call(policy, call);
        }
        self.ensure_guard(policy, call.run_key());
        let args = call.digest();

        let sketch = (policy.resolved.enabled && policy.extra.drift()).then(|| {
            let tool = call.tool.as_wtf8();
            match self.last_sketch.take() {
                Some(last) if last.0 == args && *last.1 == *tool => last,
                last => {
                    // The buffers are reused from call to call.
                    let (mut t, mut e) = match last {
                        Some(l) => (l.1, l.3),
                        None => self.sketch_buffers.take().unwrap_or_default(),
                    };
                    t.clear();
                    t.extend_from_slice(tool);
                    let tokens = self
                        .spare_sketch
                        .as_mut()
                        .map(|b| std::mem::take(&mut b.args.tokens))
                        .unwrap_or_default();
                    let (s, numbers) =
                        detectors::sketch::args_sketch_reusing(tool, call.args, tokens);
                    *e = numbers;
                    (args, t, s, e)
                }
            }
        });
        let detection = self.detect_with(policy, call, args, sketch.as_ref().map(|s| &s.2));
        self.last_sketch = sketch;
        let mut ends_run = false;
        if policy.extra.second_critical.enabled {
            if let Some(d) = detection.as_ref().filter(|d| d.level == Level::Critical) {
                let run = call.run_key();
                self.ledger.note_critical(run);
                if d.detector == Detector::SecondCriticalAbort {
                    ends_run = !self.ledger.run(run).is_some_and(|s| s.ended);
                    self.ledger.end_run(run);
                }
            }
        }
        let verdict = match detection {
            None => Verdict::Allow,
            Some(detection) => {
                let key = match call.run_key() {
                    Some(r) => crate::messages::key(&[r, b":", detection.warning_key.as_wtf8()]),
                    None => detection.warning_key.clone(),
                };
                match detection.level {
                    Level::Critical => Verdict::Block { detection, key },
                    Level::Warning => {
                        // OpenClaw's buckets never emit counts below 10; the strict
                        // profile's warnings start lower, so their first one is shown and
                        // then one per ten more (their keys are their own).
                        let count = match policy.extra.warn_at(detection.detector) {
                            Some(first) => {
                                detection.count.saturating_sub(first) + crate::warnings::BUCKET_SIZE
                            }
                            None => detection.count,
                        };
                        let emitted = self.buckets.should_emit(key.as_wtf8(), count);
                        Verdict::Warn {
                            detection,
                            key,
                            emitted,
                        }
                    }
                }
            }
        };
        self.report(call, &verdict);

        match &verdict {
            Verdict::Block { .. } if self.mode == Mode::Enforce => {
                // The tool does not run and its call is not recorded. OpenClaw then records
                // the veto result (`veto_result`) as the call's outcome; a loop veto has no
                // outcome hash (Era C), so that step changes nothing and is skipped here.
                // The test `veto_outcome_records_nothing` pins the equivalence.
                // The strict profile (`countVetoes`) counts the blocked call toward its
                // streak in the outcome ledger; OpenClaw's history is untouched.
                // (Not a match guard: a block that is not counted is still not recorded.)
                let counted = policy.resolved.enabled
                    && policy.extra.count_vetoes
                    && policy.extra.records_outcomes();
                if counted {
                    self.ledger.record_veto(
                        call.run_key(),
                        &self.ledger.tool_name(&call.tool),
                        args,
                        self.last_sketch.as_ref().map(|l| &l.2),
                        policy.resolved.history_size,
                    );
                }
            }
            _ if policy.records_calls => self.record_call_with(policy, call, args),
            _ => {}
        }
        CallDecision {
            args,
            verdict,
            ends_run,
        }
    }

    /// The after-call step: hash and record the outcome, feed the post-compaction guard.
    pub fn after_call(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        outcome: Outcome<'_, '_>,
    ) -> OutcomeDecision {
        if policy.extra.profile == DetectorProfile::OpenClaw2026_9_6 {
            return self.shipped_after_call(policy, call, outcome);
        }
        let args = call.digest();
        self.after_call_with(policy, call, outcome, args)
    }

    /// [`Session::after_call`] with the outcome already hashed by
    /// [`hash_outcome`](crate::hashing::hash_outcome) (with this session's
    /// [`Hashing`], the call's tool and arguments): for a caller that hashes outcomes
    /// elsewhere, for example on another thread (`loopguard replay`'s reader).
    ///
    /// `None`, with nothing changed, when `policy` is enabled and switches on one of
    /// loopguard's extra detectors that keep outcomes of their own (the strict profile's
    /// ledger): they need the outcome itself, so call [`Session::after_call`].
    ///
    /// ```
    /// use loopguard_core::{hashing, Call, Hashing, Outcome, Policy, Session, Value};
    /// let policy = Policy::enabled();
    /// let args = Value::parse(br#"{"path":"/a"}"#)?;
    /// let result = Value::from("text");
    /// let call = Call::new("read", &args);
    /// let hashed = hashing::hash_outcome(b"read", &args, Outcome::Result(&result), &Hashing::default());
    /// let mut a = Session::new("a");
    /// let mut b = Session::new("b");
    /// let direct = a.after_call(&policy, &call, Outcome::Result(&result));
    /// assert_eq!(b.after_call_hashed(&policy, &call, &hashed), Some(direct));
    /// # Ok::<(), loopguard_core::json::ParseError>(())
    /// ```
    pub fn after_call_hashed(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        hashed: &OutcomeHash,
    ) -> Option<OutcomeDecision> {
        if (policy.resolved.enabled && policy.extra.records_outcomes())
            || policy.extra.profile == DetectorProfile::OpenClaw2026_9_6
        {
            return None;
        }
        let args = call.digest();
        let run = call.run_key();
        self.ensure_guard(policy, run);
        let recorded = self
            .record_hashed(policy, call, hashed, args)
            .and_then(|r| r.result);
        Some(self.observe_guard(call, args, recorded))
    }

    fn after_call_with(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        outcome: Outcome<'_, '_>,
        args: ArgsDigest,
    ) -> OutcomeDecision {
        let tool = call.tool.as_wtf8();
        let run = call.run_key();
        self.ensure_guard(policy, run);
        let recorded = self
            .record_outcome_with(policy, call, outcome, args)
            .and_then(|r| r.result);
        if let Some(result) = recorded {
            if policy.resolved.enabled && policy.extra.records_outcomes() {
                let o = crate::detectors::ledger::NewOutcome {
                    tool: &call.tool,
                    args,
                    result,
                    failure: crate::detectors::ledger::call_failure_identity(outcome, tool, &args),
                    sketch: policy.extra.drift().then(|| {
                        let (args, echoed) = match self.last_sketch.take() {
                            Some((d, t, s, mut e)) if d == args && *t == *tool => {
                                let echoed = std::mem::take(&mut *e);
                                self.sketch_buffers = Some((t, e));
                                (s, echoed)
                            }
                            _ => detectors::sketch::args_sketch_and_numbers(tool, call.args),
                        };
                        let s = detectors::sketch::sketch(args, &echoed, outcome, &result);
                        match self.spare_sketch.take() {
                            Some(mut spare) => {
                                *spare = s;
                                spare
                            }
                            None => Box::new(s),
                        }
                    }),
                };
                let spare = self.ledger.record(run, o, policy.resolved.history_size);
                if spare.is_some() {
                    self.spare_sketch = spare;
                }
            }
        }
        self.observe_guard(call, args, recorded)
    }

    /// Feeds a recorded outcome to the post-compaction guard of the call's run.
    fn observe_guard(
        &mut self,
        call: &Call<'_>,
        args: ArgsDigest,
        recorded: Option<ResultHash>,
    ) -> OutcomeDecision {
        let tool = call.tool.as_wtf8();
        let run = call.run_key();
        let Some(result) = recorded else {
            return OutcomeDecision {
                args,
                result: None,
                abort: None,
            };
        };
        let Some(guard) = self.guard_mut(run) else {
            return OutcomeDecision {
                args,
                result: Some(result),
                abort: None,
            };
        };
        let verdict = guard.observe(tool, args, result);
        if let Some(abort) = &verdict.abort {
            tracing::error!(
                target: "loopguard::tool_loop",
                session = %self.id,
                run = run.map(String::from_utf8_lossy).as_deref(),
                agent = call.agent.as_ref().map(|a| a.to_string()).as_deref(),
                tool = %call.tool,
                level = "critical",
                action = "abort",
                detector = "compaction_loop_persisted",
                count = abort.count,
                message = %abort.message
            );
        }
        OutcomeDecision {
            args,
            result: Some(result),
            abort: verdict.abort,
        }
    }

    /// A compaction finished: arms the post-compaction guard of the run.
    pub fn on_compaction(
        &mut self,
        policy: &Policy,
        run: Option<&JsString<'_>>,
    ) -> CompactionDecision {
        if policy.extra.profile == DetectorProfile::OpenClaw2026_9_6 {
            let enabled = shipped_enabled(policy);
            let shipped = self.shipped.get_or_insert_with(Default::default);
            return CompactionDecision {
                armed: shipped.on_compaction(enabled, run.map(JsString::as_wtf8)),
            };
        }
        let run = normalize_run(run.map(JsString::as_wtf8));
        self.ensure_guard(policy, run);
        if policy.resolved.enabled && policy.extra.loop_across_compactions.enabled {
            self.ledger.compaction(run);
        }
        match self.guard_mut(run) {
            Some(guard) => {
                guard.arm();
                CompactionDecision {
                    armed: guard.settings().enabled,
                }
            }
            None => CompactionDecision { armed: false },
        }
    }

    fn report(&self, call: &Call<'_>, verdict: &Verdict) {
        let (detection, action) = match verdict {
            Verdict::Warn {
                detection,
                emitted: true,
                ..
            } => (detection, "warn"),
            Verdict::Block { detection, .. } => (detection, "block"),
            _ => return,
        };
        let paired = detection.paired_tool.as_ref().map(|p| p.to_string());
        macro_rules! tool_loop {
            ($lvl:ident) => {
                tracing::$lvl!(
                    target: "loopguard::tool_loop",
                    session = %self.id,
                    run = call.run_key().map(String::from_utf8_lossy).as_deref(),
                    agent = call.agent.as_ref().map(|a| a.to_string()).as_deref(),
                    tool = %call.tool,
                    level = detection.level.as_str(),
                    action,
                    detector = detection.detector.as_str(),
                    count = detection.count,
                    paired_tool = paired.as_deref(),
                    message = %detection.message
                )
            };
        }
        match detection.level {
            Level::Critical => tool_loop!(error),
            Level::Warning => tool_loop!(warn),
        }
    }
}

/// Borrowed views of a session's fields (see [`Session::parts`]).
pub(crate) struct SessionParts<'s> {
    pub(crate) id: &'s str,
    pub(crate) mode: Mode,
    pub(crate) history: &'s History,
    pub(crate) buckets: &'s WarningBuckets,
    pub(crate) unscoped_guard: Option<&'s CompactionGuard>,
    pub(crate) run_guards: &'s IndexMap<Box<[u8]>, CompactionGuard>,
}

/// The tool result a blocked call gives the model (OpenClaw's veto result).
///
/// ```
/// use loopguard_core::veto_result;
/// let v = veto_result(&"CRITICAL: stop".into());
/// assert_eq!(v.get("details").and_then(|d| d.get("deniedReason")).and_then(|r| r.as_str()), Some("tool-loop"));
/// ```
pub fn veto_result(message: &JsString<'_>) -> Value<'static> {
    let msg = Value::String(message.clone().into_owned());
    let text = Value::Object(Object::from_entries(vec![
        ("type".into(), Value::from("text")),
        ("text".into(), msg.clone()),
    ]));
    let details = Value::Object(Object::from_entries(vec![
        ("status".into(), Value::from("blocked")),
        ("deniedReason".into(), Value::from("tool-loop")),
        ("reason".into(), msg),
    ]));
    Value::Object(Object::from_entries(vec![
        ("content".into(), Value::Array(vec![text])),
        ("details".into(), details),
    ]))
    .into_owned()
}

/// The resolved `enabled` as the `openclaw-2026.9.6` profile reads it: `true`, `false`
/// (`records_calls` is `enabled !== false`), or unset.
fn shipped_enabled(policy: &Policy) -> crate::openclaw_2026_9_6::Enabled {
    use crate::openclaw_2026_9_6::Enabled;
    if policy.resolved.enabled {
        Enabled::True
    } else if !policy.records_calls {
        Enabled::False
    } else {
        Enabled::Unset
    }
}

fn shipped_detection(d: crate::openclaw_2026_9_6::ShippedDetection) -> Detection {
    let detector = match d.detector {
        "unknown_tool_repeat" => Detector::UnknownToolRepeat,
        "global_circuit_breaker" => Detector::GlobalCircuitBreaker,
        "known_poll_no_progress" => Detector::KnownPollNoProgress,
        "ping_pong" => Detector::PingPong,
        "argument_churn" => Detector::ArgumentChurn,
        _ => Detector::GenericRepeat,
    };
    Detection {
        detector,
        level: if d.critical {
            Level::Critical
        } else {
            Level::Warning
        },
        count: d.count,
        message: Name::from(d.message),
        warning_key: Name::from(d.warning_key),
        paired_tool: d.paired_tool.map(Name::from),
    }
}

impl Session {
    /// The channel plugins the `openclaw-2026.9.6` profile takes as set up (the release
    /// recognises a channel tool's sends only through a loaded channel plugin; see
    /// [`crate::openclaw_2026_9_6::channels`] to read them from a config).
    pub fn set_shipped_channels(&mut self, channels: crate::openclaw_2026_9_6::Channels) {
        self.shipped_channels = channels;
    }

    /// Replaces the `openclaw-2026.9.6` profile's state (for [`crate::state`]).
    pub(crate) fn set_shipped(&mut self, shipped: crate::openclaw_2026_9_6::ShippedSession) {
        self.shipped = Some(Box::new(shipped));
    }

    /// The `openclaw-2026.9.6` profile's state, when it has seen an event.
    pub fn shipped(&self) -> Option<&crate::openclaw_2026_9_6::ShippedSession> {
        self.shipped.as_deref()
    }

    fn shipped_before_call(&mut self, policy: &Policy, call: &Call<'_>) -> CallDecision {
        use crate::openclaw_2026_9_6::ShippedVerdict;
        let enabled = shipped_enabled(policy);
        let observe = self.mode == Mode::Observe;
        let shipped = self.shipped.get_or_insert_with(Default::default);
        let d = shipped.before_call_in(
            enabled,
            call.tool.as_wtf8(),
            call.args,
            call.call_id.as_ref().map(JsString::as_wtf8),
            call.run.as_ref().map(JsString::as_wtf8),
            observe,
        );
        let args = ArgsDigest(d.args);
        let (verdict, ends_run) = match d.verdict {
            ShippedVerdict::Allow => (Verdict::Allow, false),
            ShippedVerdict::Warn {
                detection,
                key,
                emitted,
                ..
            } => (
                Verdict::Warn {
                    detection: shipped_detection(detection),
                    key: Name::from(key),
                    emitted,
                },
                false,
            ),
            ShippedVerdict::Block {
                detection,
                key,
                ends_run,
                ..
            } => (
                Verdict::Block {
                    detection: shipped_detection(detection),
                    key: Name::from(key),
                },
                ends_run,
            ),
        };
        self.report(call, &verdict);
        CallDecision {
            args,
            verdict,
            ends_run,
        }
    }

    fn shipped_after_call(
        &mut self,
        policy: &Policy,
        call: &Call<'_>,
        outcome: Outcome<'_, '_>,
    ) -> OutcomeDecision {
        let enabled = shipped_enabled(policy);
        let channels = crate::openclaw_2026_9_6::Channels {
            telegram: self.shipped_channels.telegram || policy.shipped_channels.telegram,
        };
        let shipped = self.shipped.get_or_insert_with(Default::default);
        let d = shipped.after_call(
            enabled,
            call.tool.as_wtf8(),
            call.args,
            call.call_id.as_ref().map(JsString::as_wtf8),
            call.run.as_ref().map(JsString::as_wtf8),
            outcome,
            channels,
        );
        let result = d.result;
        let abort = d.abort.map(|a| GuardAbort {
            count: a.count,
            tool: Name::from(String::from_utf8_lossy(&d.tool).into_owned()),
            message: Name::from(a.message),
        });
        OutcomeDecision {
            args: ArgsDigest(d.args),
            result,
            abort,
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn both_profiles_keep_the_same_number_of_runs() {
        assert_eq!(MAX_RUN_GUARDS, crate::openclaw_2026_9_6::MAX_RUNS);
    }

    use super::*;

    /// Found by differential testing: an outcome whose pending record is trimmed away
    /// right after the update (a smaller `historySize`) still reports its hash.
    #[test]
    fn outcome_of_a_record_trimmed_by_a_smaller_history_keeps_its_hash() {
        use crate::config::LoopDetectionConfig;
        let big = Policy::enabled();
        let small = Policy::from_block(Some(LoopDetectionConfig {
            enabled: Some(true),
            history_size: Some(3.0),
            ..Default::default()
        }));
        let mut s = Session::new("t");
        let first = Value::parse(br#"{"n":0}"#).unwrap();
        let _ = s.before_call(&big, &Call::new("read", &first));
        for i in 1..5 {
            let a = Value::parse(format!(r#"{{"n":{i}}}"#).as_bytes())
                .unwrap()
                .into_owned();
            let _ = s.before_call(&big, &Call::new("read", &a));
        }
        let result = Value::from("same");
        let d = s.after_call(&small, &Call::new("read", &first), Outcome::Result(&result));
        assert!(d.result.is_some());
        assert_eq!(s.history().len(), 3);
    }

    /// The enforce path skips recording the veto result because it hashes to nothing.
    #[test]
    fn veto_outcome_records_nothing() {
        let msg: JsString<'_> = "CRITICAL: Called read with identical arguments".into();
        let veto = veto_result(&msg);
        for tool in [
            "read",
            "exec",
            "process",
            "message",
            "update_plan",
            "sessions_send",
        ] {
            let args = Value::parse(br#"{"action":"poll","to":"x"}"#).unwrap();
            let h = hash_outcome(
                tool.as_bytes(),
                &args,
                Outcome::Result(&veto),
                &Hashing::default(),
            );
            assert_eq!(h.result_hash, None, "{tool}");
        }
        let mut s = Session::new("t");
        let args = Value::empty_object();
        let before = s.history().len();
        let d = s.after_call(
            &Policy::enabled(),
            &Call::new("read", &args),
            Outcome::Result(&veto),
        );
        assert_eq!(d.result, None);
        assert_eq!(s.history().len(), before);
    }
}
