//! `loop_across_compactions` (strict profile): a loop that resumes after compaction after
//! compaction.
//!
//! OpenClaw's post-compaction guard watches only the first `windowSize` outcomes after each
//! compaction, and forgets everything at the next one. The [ledger](super::ledger) keeps,
//! per run, the calls that were repeating with the same outcome (at least twice) before
//! each compaction. When such a call was repeating before `blockAt` compactions (strict:
//! 2) and, after the latest one, got that same outcome again, its next call is blocked:
//! the loop has already outlived two context resets.

use super::ledger::Ledger;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

pub(crate) fn check<'k>(
    ledger: &Ledger,
    run: Option<&[u8]>,
    tool: &[u8],
    args: &ArgsDigest,
    args_hash: &dyn Fn() -> &'k [u8],
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let state = ledger.run(run)?;
    let mark = state.marks.iter().find(|m| {
        m.args == *args && m.tool.as_wtf8() == tool && u64::from(m.seen) >= cfg.block_at
    })?;
    let resumed = ledger
        .scoped(run)
        .rev()
        .take_while(|e| e.epoch == state.compactions)
        .any(|e| e.same_call(tool, args) && e.result == mark.result);
    if !resumed {
        return None;
    }
    let seen = u64::from(mark.seen);
    Some(Detection {
        detector: Detector::LoopAcrossCompactions,
        level: Level::Critical,
        count: seen,
        message: messages::key(&[
            b"CRITICAL: ",
            tool,
            b" was looping with identical arguments and results before each of the last ",
            seen.to_string().as_bytes(),
            b" context compactions and resumed after them. Compaction does not break this loop; the call is blocked.",
        ]),
        warning_key: messages::key(&[b"compaction-ledger:", args_hash()]),
        paired_tool: None,
    })
}
