//! `generic_repeat`: the same call, again and again.
//!
//! It warns on repetition alone (`warningThreshold` identical calls in the run's history,
//! with or without outcomes) and blocks only on evidence: `criticalThreshold` identical
//! outcomes of the identical call. Known poll calls never reach it.

use super::no_progress::{latest_or_none, Streak};
use super::{reached, Detection, Detector, Level, Probe};
use crate::config::ResolvedConfig;
use crate::fingerprint::ArgsDigest;
use crate::history::Record;
use crate::messages;

/// Records with the same tool and arguments, with or without outcomes.
pub fn recent_count<'h>(
    history: impl Iterator<Item = &'h Record>,
    tool: &[u8],
    args: &ArgsDigest,
) -> u64 {
    history.filter(|r| r.same_call(tool, args)).count() as u64
}

pub(crate) fn check<'h, H>(
    probe: &Probe<'h, H>,
    streak: &Streak,
    cfg: &ResolvedConfig,
) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    if !cfg.generic_repeat {
        return None;
    }
    let tool_lossy = || String::from_utf8_lossy(probe.tool).into_owned();
    let args_hash = || messages::args_hash_bytes(probe.tool, &probe.args);
    if reached(streak.count, cfg.critical_threshold) {
        tracing::error!(
            target: "loopguard::detector",
            "Critical generic loop detected: {} repeated {} times",
            tool_lossy(),
            streak.count
        );
        return Some(Detection {
            detector: Detector::GenericRepeat,
            level: Level::Critical,
            count: streak.count,
            message: messages::generic_critical(probe.tool, streak.count),
            warning_key: messages::key(&[
                b"generic:",
                probe.tool,
                b":",
                &args_hash(),
                b":",
                latest_or_none(streak).as_bytes(),
            ]),
            paired_tool: None,
        });
    }
    let count = recent_count(probe.history.clone(), probe.tool, &probe.args);
    if !reached(count, cfg.warning_threshold) {
        return None;
    }
    tracing::warn!(
        target: "loopguard::detector",
        "Loop warning: {} called {} times with identical arguments",
        tool_lossy(),
        count
    );
    Some(Detection {
        detector: Detector::GenericRepeat,
        level: Level::Warning,
        count,
        message: messages::generic_warning(probe.tool, count),
        warning_key: messages::key(&[b"generic:", probe.tool, b":", &args_hash()]),
        paired_tool: None,
    })
}
