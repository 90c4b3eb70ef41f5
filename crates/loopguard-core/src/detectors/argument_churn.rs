//! `argument_churn` (strict profile): cycling among a few argument variants that keep
//! getting the same outcomes (OpenClaw Era D's `argument_churn`, which only warns; the
//! strict profile blocks it too).
//!
//! The newest outcomes of the run, walked back, must all be calls of the proposed tool,
//! with at least 2 and at most `maxVariants` (strict: 3) distinct arguments, each variant
//! always getting one same outcome, and the proposed arguments one of them. It warns when
//! that churn covers `window` outcomes (strict: 10) and blocks at `blockAt` (strict: 14;
//! `0` keeps it warning only). Exact repetition of one call is left to the streak
//! detectors.

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
    let longest = usize::try_from(cfg.block_at.max(cfg.window)).unwrap_or(usize::MAX);
    let mut variants: Vec<(ArgsDigest, ResultHash)> = Vec::new();
    let mut n = 0usize;
    for e in ledger.scoped(run).rev().take(longest) {
        if e.tool.as_wtf8() != tool {
            break;
        }
        match variants.iter().find(|(a, _)| *a == e.args) {
            Some((_, r)) if *r != e.result => break,
            Some(_) => {}
            None => {
                if variants.len() as u64 >= cfg.max_variants {
                    break;
                }
                variants.push((e.args, e.result));
            }
        }
        n += 1;
    }
    if n < window || variants.len() < 2 || !variants.iter().any(|(a, _)| a == args) {
        return None;
    }
    // Variants seen only beyond the warning's window still count once the churn is
    // long enough to block; for a warning the window alone decides, as before.
    let level = if cfg.block_at > 0 && n as u64 >= cfg.block_at {
        Level::Critical
    } else {
        Level::Warning
    };
    let n = if level == Level::Warning { window } else { n };
    let k = variants.len().to_string();
    Some(Detection {
        detector: Detector::ArgumentChurn,
        level,
        count: n as u64,
        message: messages::key(&[
            if level == Level::Critical {
                b"CRITICAL: Your last ".as_slice()
            } else {
                b"WARNING: Your last ".as_slice()
            },
            n.to_string().as_bytes(),
            b" calls of ",
            tool,
            b" cycle through ",
            k.as_bytes(),
            b" repeated argument patterns with unchanged results. Cycling does not make progress: change the approach or report the task as failed.",
            if level == Level::Critical {
                b" The call is blocked.".as_slice()
            } else {
                b"".as_slice()
            },
        ]),
        warning_key: messages::key(&[b"argument-churn:", tool]),
        paired_tool: None,
    })
}
