//! `near_repeat_no_progress` (strict profile): the same thing tried again and again in
//! slightly different words, with nothing new coming back.
//!
//! Walking back over the run's outcomes (the [ledger](super::ledger)) from the newest,
//! each one that repeats the proposed call *without new information* counts:
//!
//! - a call of the same tool whose [normalised arguments](super::sketch) are similar to
//!   the proposed ones or to the newer repeat (Jaccard similarity of their token sets at
//!   least `similarity`, strict: 0.6; or the same shape), with the same normalised outcome
//!   as the newer repeats. When that outcome is empty (an edit that prints nothing)
//!   similar is not enough: the arguments must be identical, since two different edits
//!   both print nothing;
//! - when the proposed call is an output-only confirmation (`echo`, `printf`, `true`,
//!   `:` and nothing else), every earlier confirmation, whatever its wording.
//!
//! A successful call is never a repeat of a newer one that counts up from it or writes
//! elsewhere ([`ArgsSketch::progresses_from`]): the same shape with other numbers (`ls 3`
//! after `ls 2`, the next page of `view --view_range`, `calculate` with new operands, whose
//! large or decimal answers normalise alike) or a write to another file (a batch writing
//! one text to 30 files). Failures still count across changing numbers: a usage error to
//! drifting line numbers is the same answer. The held-out real runs behind this rule (a
//! `calculate` tool blocked at its 4th call, paging blocked at the 9th, a SWE-agent run
//! whose masked numbers made a progression read as a repeat) and the peers' tests (OpenClaw's
//! one-shot batch of distinct arguments, OpenHands' counting `ls N` / `read fileN.txt`)
//! are in `tests/progressions.rs`.
//!
//! The same call failing the same way is left to `identical_failure_streak` (agents do
//! recover from a few identical malformed turns). Failures of other calls in between (a malformed turn, a failing command) are skipped,
//! at most four in a row; any other call ends the walk, and so does a poll (waiting is
//! not looping: a proposed poll is never counted). The proposed call warns after `warnAt`
//! (strict: 2) such repeats and is blocked after `blockAt` (strict: 4): on the calibration
//! set, self-recovering agents repeat a check at most 3 times in a row before changing
//! course.

use super::ledger::Scoped;
use super::sketch::{similarity_pct, ArgsSketch};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// Failures of other calls skipped in a row before the walk stops.
const MAX_SKIPPED: u32 = 4;

/// Counts the no-progress repeats of the proposed call at the end of the run.
pub(crate) fn count(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    similarity: u64,
) -> (u64, bool) {
    if args.flags & super::sketch::POLL != 0 {
        return (0, false);
    }
    let echo = args.flags & super::sketch::ECHO_ONLY != 0;
    let mut n = 0u64;
    let mut echoes = 0u64;
    let mut reference: Option<u64> = None;
    let mut newer: &[u32] = &args.tokens;
    let mut newer_args = args;
    let mut skipped = 0u32;
    for e in tail.rev() {
        let Some(s) = e.sketch.as_deref() else { break };
        if s.poll() {
            break;
        }
        if echo && s.echo_only() {
            n += 1;
            echoes += 1;
            skipped = 0;
            continue;
        }
        // The same call failing the same way is `identical_failure_streak`'s (with its
        // own, higher thresholds: agents do recover from a few malformed turns).
        // A blocked retry (`countVetoes`) of it counts here, where it was blocked.
        let exact_failure = e.failure.is_some() && e.same_call(tool, digest) && !s.vetoed();
        // The outcome first (one comparison), the similarity only when it can matter; the
        // newer repeat is the proposed call itself until one is found.
        // A call that succeeded and that the newer repeat counts up from (other numbers:
        // the next file, page or operand) or a write to another target is a progression.
        let progression = e.failure.is_none() && !s.vetoed() && newer_args.progresses_from(&s.args);
        let alike = !exact_failure
            && !progression
            && reference.is_none_or(|r| r == s.outcome)
            && super::ledger::same_bytes(e.tool.as_wtf8(), tool)
            && if s.empty_outcome() {
                // Two different edits both print nothing: only the same edit again.
                e.args == *digest
            } else {
                s.args.shape == args.shape
                    || similarity_pct(&s.args.tokens, &args.tokens) >= similarity
                    || (reference.is_some() && similarity_pct(&s.args.tokens, newer) >= similarity)
            };
        if alike {
            reference = Some(s.outcome);
            newer = &s.args.tokens;
            newer_args = &s.args;
            n += 1;
            skipped = 0;
            continue;
        }
        if e.failure.is_some() && skipped < MAX_SKIPPED {
            skipped += 1;
            continue;
        }
        break;
    }
    (n, echo && echoes == n && n > 0)
}

pub(crate) fn check(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    preview: &dyn Fn() -> String,
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let (n, echoes) = count(tail, tool, digest, args, cfg.similarity_pct);
    let level = super::failure_streak::level(n, cfg)?;
    let shown = preview();
    let what: &[u8] = if echoes {
        b" only printed a confirmation, "
    } else {
        b" was called with near-identical arguments, "
    };
    let advice: &[u8] = if echoes {
        b"Printing it again changes nothing. The task may already be complete: finish or submit now."
    } else {
        b"The results bring nothing new. The task may already be complete: finish or submit; otherwise change the approach instead of repeating it."
    };
    let head: &[u8] = match level {
        Level::Critical => b"CRITICAL: ",
        Level::Warning => b"WARNING: ",
    };
    let tail: &[u8] = match level {
        Level::Critical => b" This call is blocked.",
        Level::Warning => b"",
    };
    Some(Detection {
        detector: Detector::NearRepeat,
        level,
        count: n,
        message: messages::key(&[
            head,
            tool,
            what,
            n.to_string().as_bytes(),
            b" times in a row (",
            shown.as_bytes(),
            b"). ",
            advice,
            tail,
        ]),
        warning_key: messages::key(&[
            b"near-repeat:",
            tool,
            b":",
            if echoes {
                b"echo".as_slice()
            } else {
                b"args".as_slice()
            },
        ]),
        paired_tool: None,
    })
}
