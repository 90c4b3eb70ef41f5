//! `identical_outcome_streak` (strict profile): the same call getting the same answer, in
//! a row, nothing else in between.
//!
//! The same streak as [`super::failure_streak`], for any outcome: warn at `warnAt`
//! (strict: 5), block at `blockAt` (strict: 8). OpenClaw's `generic_repeat` counts
//! identical outcomes anywhere in the last 30 calls and blocks at 20; re-running the same
//! test between edits is normal there. Back to back, with nothing done in between, the
//! same call cannot give a different answer (polls are OpenClaw's `known_poll_no_progress`
//! and are left to it).

use super::failure_streak::{level, Trailing};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::messages;

pub(crate) fn check(
    streak: Option<&Trailing<'_>>,
    tool: &[u8],
    args_hash: &[u8],
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let s = streak?;
    let level = level(s.count, cfg)?;
    let message = match level {
        Level::Critical => messages::key(&[
            b"CRITICAL: Called ",
            tool,
            b" ",
            s.count.to_string().as_bytes(),
            b" times in a row with identical arguments and identical outcomes. Nothing changes between these calls; the call is blocked.",
        ]),
        Level::Warning => messages::key(&[
            b"WARNING: You have called ",
            tool,
            b" ",
            s.count.to_string().as_bytes(),
            b" times in a row with identical arguments and got the same result each time. Do something different, or report the task as done or failed.",
        ]),
    };
    Some(Detection {
        detector: Detector::IdenticalOutcomeStreak,
        level,
        count: s.count,
        message,
        warning_key: messages::key(&[
            b"outcome-streak:",
            args_hash,
            b":",
            s.last.result.to_string().as_bytes(),
        ]),
        paired_tool: None,
    })
}
