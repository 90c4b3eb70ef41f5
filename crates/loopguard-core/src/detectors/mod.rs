//! The rolling-history detectors and the order they are consulted in.
//!
//! `detect` is OpenClaw's `detectToolCallLoop`: it looks at the current run's history and
//! the call about to be made, and returns the first rule that matches, in this order:
//!
//! | # | rule | level |
//! |---|------|-------|
//! | 1 | [`unknown_tool`] (`unknown_tool_repeat`): the same missing tool `unknownToolThreshold` times in a row | critical |
//! | 2 | [`global_breaker`] (`global_circuit_breaker`): identical no-progress outcomes `globalCircuitBreakerThreshold` times (ignores the detector switches) | critical |
//! | 3, 4 | [`known_poll`] (`known_poll_no_progress`): a poll with identical outcomes `criticalThreshold` / `warningThreshold` times | critical / warning |
//! | 5, 6 | [`ping_pong`] (`ping_pong`): two calls alternating (critical only with stable outcomes on both sides) | critical / warning |
//! | 7, 8 | [`generic_repeat`] (`generic_repeat`): identical outcomes `criticalThreshold` times / identical arguments `warningThreshold` times | critical / warning |
//!
//! loopguard's extra detectors (the `strict` profile, or switched on one by one in the
//! `loopguard` config block) run after these, over the outcome [`ledger`]; `detect_extra`
//! consults them in this order, and a critical from either side wins over a warning:
//! [`failure_streak`], [`outcome_streak`], [`error_changing_args`],
//! [`loop_across_compactions`], [`changing_error`], [`near_repeat`], [`no_progress_cycle`],
//! [`argument_churn`], [`empty_search_sweep`], [`unrunnable_commands`], [`error_cascade`],
//! [`changing_counts`]; the session applies [`second_critical`] to every critical. The drift
//! detectors work over normalised [`sketch`]es of calls and outcomes kept in the ledger:
//! [`near_repeat`] (near-identical calls, output-only confirmations), [`no_progress_cycle`]
//! (cycles of 2-4 calls), [`changing_error`] (the same call failing differently each
//! time) and [`changing_counts`] (the same change applied again, its answers differing only
//! in numbers).
//!
//! The user's table of every rule, with its strict thresholds, is `docs/detectors.md`;
//! `tests/detectors_doc.rs` checks it against the order of the `check` calls here, against
//! [`Detector`] and against `ExtraPolicy::strict()`.

pub mod argument_churn;
pub mod changing_counts;
pub mod changing_error;
pub mod empty_search_sweep;
pub mod error_cascade;
pub mod error_changing_args;
pub mod failure_streak;
pub mod generic_repeat;
pub mod global_breaker;
pub mod known_poll;
pub mod ledger;
pub mod loop_across_compactions;
pub mod near_repeat;
pub mod no_progress;
pub mod no_progress_cycle;
pub mod outcome_streak;
pub mod ping_pong;
pub mod second_critical;
pub mod sketch;
pub mod unknown_tool;
pub mod unrunnable_commands;

use std::fmt;

use crate::config::{ExtraPolicy, ResolvedConfig};
use crate::fingerprint::ArgsDigest;
use crate::history::{Name, Record};
use crate::value::Value;

/// Which detector fired.
///
/// ```
/// use loopguard_core::{Call, Detector, Level, Outcome, Policy, Session, Value};
/// let policy = Policy::enabled();
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let same = Value::from("same");
/// for _ in 0..10 {
///     let call = Call::new("read", &args);
///     let _ = session.before_call(&policy, &call);
///     let _ = session.after_call(&policy, &call, Outcome::Result(&same));
/// }
/// let decision = session.before_call(&policy, &Call::new("read", &args));
/// let detection = decision.detection().ok_or("no detection")?;
/// assert_eq!((detection.detector, detection.level), (Detector::GenericRepeat, Level::Warning));
/// assert_eq!(detection.detector.as_str(), "generic_repeat");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Detector {
    /// The same call made over and over.
    GenericRepeat,
    /// A tool that does not exist, retried.
    UnknownToolRepeat,
    /// A poll whose answer never changes.
    KnownPollNoProgress,
    /// Identical no-progress outcomes past the global limit.
    GlobalCircuitBreaker,
    /// Two calls alternating.
    PingPong,
    /// The post-compaction guard: the loop survived a compaction.
    CompactionLoopPersisted,
    /// Strict profile: the same call failing the same way, in a row.
    IdenticalFailureStreak,
    /// Strict profile: the same call with the same outcome, in a row.
    IdenticalOutcomeStreak,
    /// Strict profile: the same error from one tool for changing arguments.
    ErrorDespiteChangingArgs,
    /// Strict profile: cycling among a few argument variants with unchanged results.
    ArgumentChurn,
    /// Strict profile: a loop that resumed after several compactions.
    LoopAcrossCompactions,
    /// Strict profile: a second critical detection in a run ends the run.
    SecondCriticalAbort,
    /// Strict profile: near-identical calls (or output-only confirmations) with nothing
    /// new in their outcomes.
    NearRepeat,
    /// Strict profile: a cycle of 2-4 calls with unchanged outcomes.
    NoProgressCycle,
    /// Strict profile: the same call failing with a different error each time.
    ChangingErrorSameCall,
    /// Strict profile: searches with different arguments, one empty or no-match answer.
    EmptySearchSweep,
    /// Strict profile: commands the shell cannot run (prose sent as commands).
    UnrunnableCommands,
    /// Strict profile: failures in a row across different tools.
    ErrorCascade,
    /// Strict profile: the same call changing something, succeeding in a row with answers
    /// that differ only in their numbers (the same line added again each time).
    ChangingCountsSameCall,
    /// Not a detector of the engine: a cap of `loopguard.budgets` reached (a warning at
    /// 80%, a refusal at 100%), decided by the guard layer (`loopguard-guard`), which keeps
    /// the counts.
    Budget,
}

impl Detector {
    /// The name OpenClaw uses (`generic_repeat`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Detector::GenericRepeat => "generic_repeat",
            Detector::UnknownToolRepeat => "unknown_tool_repeat",
            Detector::KnownPollNoProgress => "known_poll_no_progress",
            Detector::GlobalCircuitBreaker => "global_circuit_breaker",
            Detector::PingPong => "ping_pong",
            Detector::CompactionLoopPersisted => "compaction_loop_persisted",
            Detector::IdenticalFailureStreak => "identical_failure_streak",
            Detector::IdenticalOutcomeStreak => "identical_outcome_streak",
            Detector::ErrorDespiteChangingArgs => "error_despite_changing_args",
            Detector::ArgumentChurn => "argument_churn",
            Detector::LoopAcrossCompactions => "loop_across_compactions",
            Detector::SecondCriticalAbort => "second_critical_abort",
            Detector::NearRepeat => "near_repeat_no_progress",
            Detector::NoProgressCycle => "no_progress_cycle",
            Detector::ChangingErrorSameCall => "same_call_changing_error",
            Detector::EmptySearchSweep => "empty_search_sweep",
            Detector::UnrunnableCommands => "unrunnable_commands",
            Detector::ErrorCascade => "error_cascade",
            Detector::ChangingCountsSameCall => "same_call_changing_counts",
            Detector::Budget => "budget",
        }
    }

    /// OpenClaw's detectors, in a fixed order.
    pub const ALL: [Detector; 6] = [
        Detector::GenericRepeat,
        Detector::UnknownToolRepeat,
        Detector::KnownPollNoProgress,
        Detector::GlobalCircuitBreaker,
        Detector::PingPong,
        Detector::CompactionLoopPersisted,
    ];

    /// loopguard's extra detectors (the `strict` profile). Not their priority order, which is
    /// `detect_extra`'s (the table of `docs/detectors.md`), but the order the OpenAPI
    /// document and the Python package list their names in.
    pub const EXTRA: [Detector; 13] = [
        Detector::IdenticalFailureStreak,
        Detector::IdenticalOutcomeStreak,
        Detector::ErrorDespiteChangingArgs,
        Detector::ArgumentChurn,
        Detector::LoopAcrossCompactions,
        Detector::SecondCriticalAbort,
        Detector::NearRepeat,
        Detector::NoProgressCycle,
        Detector::ChangingErrorSameCall,
        Detector::EmptySearchSweep,
        Detector::UnrunnableCommands,
        Detector::ErrorCascade,
        Detector::ChangingCountsSameCall,
    ];

    /// Parses a name written by [`Detector::as_str`].
    ///
    /// ```
    /// use loopguard_core::Detector;
    /// for d in Detector::ALL.into_iter().chain(Detector::EXTRA) {
    ///     assert_eq!(Detector::from_name(d.as_str()), Some(d));
    /// }
    /// ```
    pub fn from_name(name: &str) -> Option<Detector> {
        Detector::ALL
            .into_iter()
            .chain(Detector::EXTRA)
            .find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a detection is.
///
/// ```
/// use loopguard_core::Level;
/// assert_eq!(Level::Warning.as_str(), "warning");
/// assert_eq!(Level::Critical.as_str(), "critical");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Level {
    /// Reported; the call still runs.
    Warning,
    /// The call is blocked (or the run aborted).
    Critical,
}

impl Level {
    /// `"warning"` or `"critical"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Warning => "warning",
            Level::Critical => "critical",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A loop found in the history.
///
/// ```
/// use loopguard_core::{Call, Outcome, Policy, Session, Value};
/// let policy = Policy::enabled();
/// let mut session = Session::new("s");
/// let args = Value::parse(br#"{"path":"/a"}"#)?;
/// let same = Value::from("same");
/// for _ in 0..10 {
///     let call = Call::new("read", &args);
///     let _ = session.before_call(&policy, &call);
///     let _ = session.after_call(&policy, &call, Outcome::Result(&same));
/// }
/// let decision = session.before_call(&policy, &Call::new("read", &args));
/// let detection = decision.detection().ok_or("no detection")?;
/// assert!(detection.count >= 10 && detection.paired_tool.is_none());
/// assert!(!detection.message.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    /// Which detector.
    pub detector: Detector,
    /// Warning or critical.
    pub level: Level,
    /// The detector's count (streak length, alternation length, …).
    pub count: u64,
    /// The message for the model.
    pub message: Name,
    /// The de-duplication key, without the run prefix.
    pub warning_key: Name,
    /// For ping-pong: the tool of the other side of the pair.
    pub paired_tool: Option<Name>,
}

/// The call being checked, with the history it is checked against.
pub(crate) struct Probe<'h, H>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    pub history: H,
    /// The whole history with its digest keys, when `history` is all of it (for
    /// [`no_progress::streak_keyed`]).
    pub keyed: Option<crate::history::Keyed<'h>>,
    pub tool: &'h [u8],
    pub args: ArgsDigest,
    /// [`known_poll::is_known_poll_call`] of the call's tool and parameters.
    pub known_poll: bool,
}

/// Runs the detectors in priority order (OpenClaw's `detectToolCallLoop`, after the
/// `enabled` check, which the caller makes).
pub(crate) fn detect<'h, H>(probe: &Probe<'h, H>, cfg: &ResolvedConfig) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    if let Some(d) = unknown_tool::check(probe, cfg) {
        return Some(d);
    }
    let streak = match probe.keyed {
        Some(keyed) => no_progress::streak_keyed(keyed, probe.tool, &probe.args),
        None => no_progress::streak(probe.history.clone(), probe.tool, &probe.args),
    };
    if let Some(d) = global_breaker::check(probe, &streak, cfg) {
        return Some(d);
    }
    let known_poll = probe.known_poll;
    if known_poll {
        if let Some(d) = known_poll::check(probe, &streak, cfg) {
            return Some(d);
        }
    }
    if let Some(d) = ping_pong::check(probe, cfg) {
        return Some(d);
    }
    if !known_poll {
        return generic_repeat::check(probe, &streak, cfg);
    }
    None
}

/// The call the extra detectors look at.
#[derive(Clone, Copy)]
pub(crate) struct Proposed<'a> {
    /// The normalised run.
    pub run: Option<&'a [u8]>,
    /// The tool.
    pub tool: &'a [u8],
    /// The argument digest.
    pub args: &'a ArgsDigest,
    /// The arguments.
    pub params: &'a Value<'a>,
    /// Whether OpenClaw counts it as a poll.
    pub known_poll: bool,
    /// Its drift sketch, when the caller has it.
    pub sketch: Option<&'a sketch::ArgsSketch>,
}

/// loopguard's extra detectors for the proposed call, combined with OpenClaw's result
/// `base`: a critical wins over a warning, OpenClaw's first (so the default detectors
/// keep their names where both fire). The extra detectors are consulted in the order of
/// the `consider!` calls below; the first critical wins at once, else OpenClaw's warning,
/// else the first extra warning.
pub(crate) fn detect_extra(
    base: Option<Detection>,
    ledger: &ledger::Ledger,
    proposed: &Proposed<'_>,
    extra: &ExtraPolicy,
) -> Option<Detection> {
    let Proposed {
        run,
        tool,
        args,
        params,
        known_poll,
        ..
    } = *proposed;
    if base.as_ref().is_some_and(|d| d.level == Level::Critical) {
        return base;
    }
    let drift = match proposed.sketch {
        Some(s) => Some(std::borrow::Cow::Borrowed(s)),
        None => extra
            .drift()
            .then(|| std::borrow::Cow::Owned(sketch::args_sketch(tool, params))),
    };
    // Waiting is not looping: the strict profile recognises more polls than OpenClaw.
    let known_poll = known_poll || drift.as_ref().is_some_and(|s| s.flags & sketch::POLL != 0);
    let preview = || sketch::preview(tool, params);
    // `tool:hex` is only needed for a detection's key: made at most once, on demand.
    let args_hash = std::cell::OnceCell::new();
    let args_hash = || args_hash.get_or_init(|| args.args_hash(tool)).as_slice();
    // The run's outcomes, found once for every detector's walk.
    let tail = ledger.scoped(run);
    let streak = failure_streak::trailing(tail.clone(), tool, args);
    // The two detectors of failures with changing parts look at nothing when the run's
    // newest outcome is not a failure (the usual case): one look for both.
    let newest_failed = tail
        .clone()
        .next_back()
        .is_some_and(|e| e.failure.is_some());
    // In order; the first critical wins at once, else OpenClaw's warning, else the first
    // extra warning. Nothing after a critical is looked at.
    let mut first_warning = None;
    macro_rules! consider {
        ($detector:expr, |$cfg:ident| $check:expr) => {
            if $detector.enabled {
                let $cfg = &$detector;
                if let Some(d) = $check {
                    if d.level == Level::Critical {
                        report_extra(tool, &d);
                        return Some(d);
                    }
                    if first_warning.is_none() {
                        first_warning = Some(d);
                    }
                }
            }
        };
    }
    consider!(extra.failure_streak, |cfg| failure_streak::check(
        streak.as_ref(),
        tool,
        &args_hash,
        cfg
    ));
    // A poll waiting for a long job legitimately gets the same answer many times in a
    // row; polls are `known_poll_no_progress`'s (OpenClaw's thresholds).
    consider!(extra.outcome_streak, |cfg| if known_poll {
        None
    } else {
        outcome_streak::check(streak.as_ref(), tool, &args_hash, cfg)
    });
    consider!(extra.error_changing_args, |cfg| if newest_failed {
        error_changing_args::check(tail.clone(), tool, cfg)
    } else {
        None
    });
    consider!(extra.loop_across_compactions, |cfg| {
        loop_across_compactions::check(ledger, run, tool, args, &args_hash, cfg)
    });
    consider!(extra.changing_error, |cfg| match drift.as_ref() {
        Some(drift) if newest_failed => changing_error::check(tail.clone(), tool, args, drift, cfg),
        _ => None,
    });
    consider!(extra.near_repeat, |cfg| match drift.as_ref() {
        Some(drift) => near_repeat::check(tail.clone(), tool, args, drift, &preview, cfg),
        None => None,
    });
    consider!(extra.cycle, |cfg| match drift.as_ref() {
        Some(drift) => no_progress_cycle::check(tail.clone(), tool, args, drift, cfg),
        None => None,
    });
    consider!(extra.argument_churn, |cfg| argument_churn::check(
        tail.clone(),
        tool,
        args,
        cfg
    ));
    consider!(extra.empty_search_sweep, |cfg| match drift.as_ref() {
        Some(drift) => empty_search_sweep::check(tail.clone(), tool, args, drift, cfg),
        None => None,
    });
    consider!(extra.unrunnable_commands, |cfg| if newest_failed
        || tail
            .clone()
            .next_back()
            .and_then(|e| e.sketch.as_deref())
            .is_some_and(|s| s.shell_error())
    {
        unrunnable_commands::check(tail.clone(), tool, cfg)
    } else {
        None
    });
    consider!(extra.error_cascade, |cfg| if newest_failed {
        error_cascade::check(tail.clone(), tool, cfg)
    } else {
        None
    });
    consider!(extra.changing_counts, |cfg| match drift.as_ref() {
        Some(drift) => changing_counts::check(tail.clone(), tool, args, drift, &args_hash, cfg),
        None => None,
    });
    if base.is_some() {
        return base;
    }
    let d = first_warning?;
    report_extra(tool, &d);
    Some(d)
}

/// The detector's own log line, as OpenClaw's detectors write theirs (not de-duplicated).
fn report_extra(tool: &[u8], d: &Detection) {
    let tool = String::from_utf8_lossy(tool);
    match d.level {
        Level::Critical => tracing::error!(
            target: "loopguard::detector",
            "Critical loop detected ({}): {} count={}",
            d.detector,
            tool,
            d.count
        ),
        Level::Warning => tracing::warn!(
            target: "loopguard::detector",
            "Loop warning ({}): {} count={}",
            d.detector,
            tool,
            d.count
        ),
    }
}

/// `count >= threshold`, with OpenClaw's floating-point thresholds.
#[inline]
pub(crate) fn reached(count: u64, threshold: f64) -> bool {
    count as f64 >= threshold
}
