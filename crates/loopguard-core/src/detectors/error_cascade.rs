//! `error_cascade` (strict profile): failures in a row across different tools, with no call
//! succeeding in between. One tool failing alike is the streak detectors' job; this is the
//! agent moving from tool to tool with every attempt failing (OpenClaw users' report of an
//! error cascade across tools, #75923 upstream).
//!
//! Walking back from the newest outcome, consecutive failures count (a blocked call too);
//! the first success ends the walk. The cascade must span at least two tools. It warns
//! after `warnAt` (strict: 6) failures and blocks after `blockAt` (strict: 10): failing
//! tests after each patch are not failures of the call (the test command ran), and on the
//! calibration set no healthy or self-recovering run has more than eight failures in a row.

use super::ledger::{same_bytes, Scoped};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::messages;

/// (failures in a row, whether they span more than one tool), the proposed call's tool
/// included.
pub(crate) fn count(tail: Scoped<'_>, tool: &[u8]) -> (u64, bool) {
    let mut n = 0u64;
    let mut tools = false;
    for e in tail.rev() {
        if e.failure.is_none() {
            break;
        }
        if !same_bytes(e.tool.as_wtf8(), tool) {
            tools = true;
        }
        n += 1;
    }
    (n, tools)
}

pub(crate) fn check(tail: Scoped<'_>, tool: &[u8], cfg: &ExtraDetector) -> Option<Detection> {
    let (n, tools) = count(tail, tool);
    if !tools {
        return None;
    }
    let level = super::failure_streak::level(n, cfg)?;
    let (head, tail): (&[u8], &[u8]) = match level {
        Level::Critical => (b"CRITICAL: ", b" This call is blocked."),
        Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::ErrorCascade,
        level,
        count: n,
        message: messages::key(&[
            head,
            b"your last ",
            n.to_string().as_bytes(),
            b" calls all failed, across different tools. Switching tools is not fixing it: stop and find the common cause (a wrong directory, a missing dependency, a wrong assumption) before the next call.",
            tail,
        ]),
        warning_key: messages::key(&[b"error-cascade"]),
        paired_tool: None,
    })
}
