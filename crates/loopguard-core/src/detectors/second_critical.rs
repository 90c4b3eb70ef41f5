//! `second_critical_abort` (strict profile): after a block, another critical detection in
//! the same run ends the run (OpenClaw Era D: a second critical loop ends the run).
//!
//! The agent was told the call is blocked and looped on anyway (the same call again, or a
//! new loop). From then on every call of that run is blocked with this detector, so a
//! front end that only knows "block" still stops the run; [`crate::CallDecision::ends_run`]
//! says so explicitly.

use super::{Detection, Detector, Level};
use crate::messages;

/// The detection that ends a run; `first` is what triggered it (`None` once ended).
pub(crate) fn detection(
    run: Option<&[u8]>,
    criticals: u64,
    first: Option<&Detection>,
) -> Detection {
    let message = match first {
        Some(d) => messages::key(&[
            b"CRITICAL: A second critical loop in this run (",
            d.detector.as_str().as_bytes(),
            b", after an earlier block): the blocked loop was not abandoned, so this run is ended. Stop calling tools and report the task as failed.",
        ]),
        None => messages::key(&[
            b"CRITICAL: This run was ended after a second critical loop; no more tool calls run in it. Report the task as failed.",
        ]),
    };
    Detection {
        detector: Detector::SecondCriticalAbort,
        level: Level::Critical,
        count: criticals,
        message,
        warning_key: messages::key(&[b"second-critical:", run.unwrap_or(b"none")]),
        paired_tool: None,
    }
}
