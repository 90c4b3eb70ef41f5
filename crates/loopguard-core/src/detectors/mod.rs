//! The rolling-history detectors and the order they are consulted in.
//!
//! `detect` is OpenClaw's `detectToolCallLoop`: it looks at the current run's history and
//! the call about to be made, and returns the first rule that matches:
//!
//! | # | rule | level |
//! |---|------|-------|
//! | 1 | [`unknown_tool`]: the same missing tool `unknownToolThreshold` times in a row | critical |
//! | 2 | [`global_breaker`]: identical no-progress outcomes `globalCircuitBreakerThreshold` times (ignores the detector switches) | critical |
//! | 3, 4 | [`known_poll`]: a poll with identical outcomes `criticalThreshold` / `warningThreshold` times | critical / warning |
//! | 5, 6 | [`ping_pong`]: two calls alternating (critical only with stable outcomes on both sides) | critical / warning |
//! | 7, 8 | [`generic_repeat`]: identical outcomes `criticalThreshold` times / identical arguments `warningThreshold` times | critical / warning |

pub mod generic_repeat;
pub mod global_breaker;
pub mod known_poll;
pub mod no_progress;
pub mod ping_pong;
pub mod unknown_tool;

use std::fmt;

use crate::config::ResolvedConfig;
use crate::fingerprint::ArgsDigest;
use crate::history::{Name, Record};
use crate::value::Value;

/// Which detector fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
        }
    }

    /// Every detector, in a fixed order.
    pub const ALL: [Detector; 6] = [
        Detector::GenericRepeat,
        Detector::UnknownToolRepeat,
        Detector::KnownPollNoProgress,
        Detector::GlobalCircuitBreaker,
        Detector::PingPong,
        Detector::CompactionLoopPersisted,
    ];
}

impl fmt::Display for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How serious a detection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    pub tool: &'h [u8],
    pub args: ArgsDigest,
    pub params: &'h Value<'h>,
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
    let streak = no_progress::streak(probe.history.clone(), probe.tool, &probe.args);
    if let Some(d) = global_breaker::check(probe, &streak, cfg) {
        return Some(d);
    }
    let known_poll = known_poll::is_known_poll_call(probe.tool, probe.params);
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

/// `count >= threshold`, with OpenClaw's floating-point thresholds.
#[inline]
pub(crate) fn reached(count: u64, threshold: f64) -> bool {
    count as f64 >= threshold
}
