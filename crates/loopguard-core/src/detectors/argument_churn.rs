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

use super::ledger::Scoped;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;
use crate::outcome::ResultHash;

/// A quick look that rules churn out in the usual case: the walk below stops at the first
/// call of another tool, or at the `maxVariants + 1`-th distinct arguments, so when the
/// newest `maxVariants + 1` calls are all of the tool and all different (or another tool
/// comes first), it covers at most `maxVariants` calls, fewer than `window`. Arguments
/// are told apart by the first 8 bytes of their digests (different there, different
/// digests); any match, or settings where the bound does not hold, leave it to the walk.
fn may_churn(tail: Scoped<'_>, tool: &[u8], cfg: &ExtraDetector) -> bool {
    const MOST: u64 = 8;
    if cfg.max_variants == 0 || cfg.max_variants >= MOST || cfg.window <= cfg.max_variants {
        return true;
    }
    let mut seen = [0u64; MOST as usize];
    for (i, e) in tail.rev().take(cfg.max_variants as usize + 1).enumerate() {
        if !super::ledger::same_bytes(e.tool.as_wtf8(), tool) {
            return false;
        }
        let mut head = [0u8; 8];
        head.copy_from_slice(&e.args.0[..8]);
        let head = u64::from_le_bytes(head);
        if seen[..i].contains(&head) {
            return true;
        }
        seen[i] = head;
    }
    false
}

/// A placeholder for the unused slots of the variants seen.
const NO_RESULT: ResultHash = ResultHash {
    is_error: false,
    digest: [0; 32],
};

pub(crate) fn check(
    tail: Scoped<'_>,
    tool: &[u8],
    args: &ArgsDigest,
    cfg: &ExtraDetector,
) -> Option<Detection> {
    if !may_churn(tail.clone(), tool, cfg) {
        return None;
    }
    let window = usize::try_from(cfg.window).unwrap_or(usize::MAX);
    let longest = usize::try_from(cfg.block_at.max(cfg.window)).unwrap_or(usize::MAX);
    // The variants seen (arguments and their one outcome), on the stack for the usual
    // few (a vector only past 4): a plain scan, one comparison of the digests per variant.
    const INLINE: usize = 4;
    let mut inline: [(&ArgsDigest, &ResultHash); INLINE] = [(args, &NO_RESULT); INLINE];
    let mut spilled: Vec<(&ArgsDigest, &ResultHash)> = Vec::new();
    let mut count = 0usize;
    let mut n = 0usize;
    for e in tail.rev().take(longest) {
        if !super::ledger::same_bytes(e.tool.as_wtf8(), tool) {
            break;
        }
        let seen = if count <= INLINE {
            &inline[..count]
        } else {
            &spilled[..]
        };
        match seen.iter().find(|(a, _)| **a == e.args) {
            Some((_, r)) if **r != e.result => break,
            Some(_) => {}
            None => {
                if count as u64 >= cfg.max_variants {
                    break;
                }
                if count < INLINE {
                    inline[count] = (&e.args, &e.result);
                } else {
                    if spilled.is_empty() {
                        spilled.extend_from_slice(&inline);
                    }
                    spilled.push((&e.args, &e.result));
                }
                count += 1;
            }
        }
        n += 1;
    }
    let seen = if count <= INLINE {
        &inline[..count]
    } else {
        &spilled[..]
    };
    if n < window || count < 2 || !seen.iter().any(|(a, _)| *a == args) {
        return None;
    }
    let variants = count;
    // Variants seen only beyond the warning's window still count once the churn is
    // long enough to block; for a warning the window alone decides, as before.
    let level = if cfg.block_at > 0 && n as u64 >= cfg.block_at {
        Level::Critical
    } else {
        Level::Warning
    };
    let n = if level == Level::Warning { window } else { n };
    let k = variants.to_string();
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
