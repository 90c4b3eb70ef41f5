//! `identical_outcome_streak` (strict profile): the same call getting the same answer, in
//! a row, nothing else in between.
//!
//! The same streak as [`super::failure_streak`], for any outcome: warn at `warnAt`
//! (strict: 5), block at `blockAt` (strict: 8). OpenClaw's `generic_repeat` counts
//! identical outcomes anywhere in the last 30 calls and blocks at 20; re-running the same
//! test between edits is normal there. Back to back, with nothing done in between, the
//! same call cannot give a different answer (polls are OpenClaw's `known_poll_no_progress`
//! and are left to it).

use super::failure_streak::{detection, StreakWords, Trailing};
use super::{Detection, Detector};
use crate::config::ExtraDetector;

const WORDS: StreakWords = StreakWords {
    detector: Detector::IdenticalOutcomeStreak,
    key: b"outcome-streak:",
    critical: [
        b"CRITICAL: Called ",
        b" ",
        b" times in a row with identical arguments and identical outcomes. Nothing changes between these calls; the call is blocked.",
    ],
    warning: [
        b"WARNING: You have called ",
        b" ",
        b" times in a row with identical arguments and got the same result each time. Do something different, or report the task as done or failed.",
    ],
};

pub(crate) fn check<'k>(
    streak: Option<&Trailing<'_>>,
    tool: &[u8],
    args_hash: &dyn Fn() -> &'k [u8],
    cfg: &ExtraDetector,
) -> Option<Detection> {
    detection(streak?, tool, args_hash, cfg, &WORDS)
}
