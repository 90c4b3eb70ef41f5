//! `identical_failure_streak` (strict profile): the same call failing the same way, in a
//! row.
//!
//! Walking back over the run's outcomes (the [ledger](super::ledger)), the newest ones
//! that are the proposed call with one identical outcome form the streak; any other
//! outcome in between ends it. When that outcome is a failure (an error, a non-zero exit)
//! the call warns at `warnAt` (strict: 3) and is blocked at `blockAt` (strict: 6).
//! Unlike `generic_repeat`, nothing else may happen in between: an agent that edits
//! something and then re-runs the same failing test is not in this streak.

use super::ledger::{LedgerEntry, Scoped};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// The newest identical outcomes of one call in a row, and the newest of them.
pub(crate) struct Trailing<'l> {
    pub(crate) last: &'l LedgerEntry,
    pub(crate) count: u64,
}

/// The streak of identical outcomes at the end of `run`'s ledger, if its call is
/// `tool`/`args`.
pub(crate) fn trailing<'l>(
    tail: Scoped<'l>,
    tool: &[u8],
    args: &ArgsDigest,
) -> Option<Trailing<'l>> {
    let mut it = tail.rev();
    let last = it.next()?;
    if !last.same_call(tool, args) {
        return None;
    }
    let more = it
        .take_while(|e| e.same_call(tool, args) && e.result == last.result)
        .count() as u64;
    Some(Trailing {
        last,
        count: 1 + more,
    })
}

/// Warning or critical for a streak of `count` against `cfg`'s thresholds.
pub(crate) fn level(count: u64, cfg: &ExtraDetector) -> Option<Level> {
    if cfg.block_at > 0 && count >= cfg.block_at {
        Some(Level::Critical)
    } else if cfg.warn_at > 0 && count >= cfg.warn_at {
        Some(Level::Warning)
    } else {
        None
    }
}

/// What a streak detector says: its name, its warning key's prefix, and at each level the
/// words of its message around the tool and the count: `[before tool, between, after]`.
pub(crate) struct StreakWords {
    pub(crate) detector: Detector,
    pub(crate) key: &'static [u8],
    pub(crate) critical: [&'static [u8]; 3],
    pub(crate) warning: [&'static [u8]; 3],
}

/// The detection `words` make of streak `s` at `cfg`'s thresholds, if it reaches one.
pub(crate) fn detection<'k>(
    s: &Trailing<'_>,
    tool: &[u8],
    args_hash: &dyn Fn() -> &'k [u8],
    cfg: &ExtraDetector,
    words: &StreakWords,
) -> Option<Detection> {
    let level = level(s.count, cfg)?;
    let [before, between, after] = match level {
        Level::Critical => words.critical,
        Level::Warning => words.warning,
    };
    Some(Detection {
        detector: words.detector,
        level,
        count: s.count,
        message: messages::key(&[before, tool, between, s.count.to_string().as_bytes(), after]),
        warning_key: messages::key(&[
            words.key,
            args_hash(),
            b":",
            s.last.result.to_string().as_bytes(),
        ]),
        paired_tool: None,
    })
}

const WORDS: StreakWords = StreakWords {
    detector: Detector::IdenticalFailureStreak,
    key: b"failure-streak:",
    critical: [
        b"CRITICAL: ",
        b" failed the same way ",
        b" times in a row with identical arguments. Retrying will not fix it; the call is blocked. Change the approach or report the task as failed.",
    ],
    warning: [
        b"WARNING: ",
        b" failed the same way ",
        b" times in a row with identical arguments. Do not retry it unchanged: read the error and change the approach, or report the task as failed.",
    ],
};

pub(crate) fn check<'k>(
    streak: Option<&Trailing<'_>>,
    tool: &[u8],
    args_hash: &dyn Fn() -> &'k [u8],
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let s = streak?;
    s.last.failure?;
    detection(s, tool, args_hash, cfg, &WORDS)
}
