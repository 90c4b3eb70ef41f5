//! `argument_churn` (strict profile; warning only): cycling among a few argument variants
//! that keep getting the same outcomes (OpenClaw Era D's `argument_churn`).
//!
//! The last `window` outcomes of the run (strict: 10) must all be calls of the proposed
//! tool, with at least 2 and at most `maxVariants` (strict: 3) distinct arguments, each
//! variant always getting one same outcome, and the proposed arguments one of them. Exact
//! repetition of one call is left to the streak detectors.

use super::ledger::Ledger;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;
use crate::outcome::ResultHash;

pub(crate) fn check(
    ledger: &Ledger,
    run: Option<&[u8]>,
    tool: &[u8],
    args: &ArgsDigest,
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let window = usize::try_from(cfg.window).unwrap_or(usize::MAX);
    let mut variants: Vec<(ArgsDigest, ResultHash)> = Vec::new();
    let mut n = 0usize;
    for e in ledger.scoped(run).rev().take(window) {
        n += 1;
        if e.tool.as_wtf8() != tool {
            return None;
        }
        match variants.iter().find(|(a, _)| *a == e.args) {
            Some((_, r)) if *r != e.result => return None,
            Some(_) => {}
            None => {
                variants.push((e.args, e.result));
                if variants.len() as u64 > cfg.max_variants {
                    return None;
                }
            }
        }
    }
    if n < window || variants.len() < 2 || !variants.iter().any(|(a, _)| a == args) {
        return None;
    }
    let k = variants.len().to_string();
    Some(Detection {
        detector: Detector::ArgumentChurn,
        level: Level::Warning,
        count: n as u64,
        message: messages::key(&[
            b"WARNING: Your last ",
            n.to_string().as_bytes(),
            b" calls of ",
            tool,
            b" cycle through ",
            k.as_bytes(),
            b" repeated argument patterns with unchanged results. Cycling does not make progress: change the approach or report the task as failed.",
        ]),
        warning_key: messages::key(&[b"argument-churn:", tool]),
        paired_tool: None,
    })
}
