//! `same_call_changing_counts` (strict profile): the same call that changes something,
//! made again and again, each time reported as a success, and each answer differing from
//! the last only in its numbers (counts, counters, line numbers). The call "succeeds" and
//! makes things worse: the same line appended or inserted once more, the file one line
//! longer each time.
//!
//! Motivated by a held-out real run reported in the issue that introduced the strict
//! profile's "nothing new" detectors: the same edit applied 20 times, each reported as a
//! success, the answers differing only in counts and line numbers. None of the other rules
//! sees it early: the call is identical but its answer is not, so neither
//! `identical_outcome_streak` nor `near_repeat_no_progress` counts it, and OpenClaw's
//! `generic_repeat` only warns at its 10th call. Public reports of the same shape:
//! Claude Code's Edit tool doubling a trailing comment on every repeated edit until a 5 KB
//! file reached 5.5 MB (anthropics/claude-code#32891 upstream), duplicated actions writing
//! duplicated lines in OpenHands' CLI (OpenHands/software-agent-sdk#840 upstream), and a
//! byte-identical edit re-sent about six times, each answered `ok` (mrdushidush/claudette
//! pull request 77 upstream). The 58 runs of the calibration set
//! (`tests/fixtures/real-transcripts/`) hold no instance of it: no run has two identical
//! commands in a row whose answers differ only in their numbers.
//!
//! Only calls that [mutate](super::sketch::MUTATES) are counted: a write (a content key and
//! a target), or a shell command that appends (`>>`, `tee -a`), edits in place (`sed -i`,
//! `perl -i`) or applies a patch. That is the evidence separating the loop from the healthy
//! repetitions whose answers also change only in their numbers: a poll of a growing log, a
//! `sleep N && tail log` cycle, a heartbeat, a `wc -l` between appends, a browser scrolled
//! down (Roo Code's not-stuck scenario), `ls` listing new files (OpenHands'): there the
//! world moves by itself, and re-reading it is how an agent waits. A call that adds to the
//! world each time is the agent moving it, the same way, again.
//!
//! Walking back from the newest outcome, the proposed call's earlier runs count while they
//! are the same call (same tool, identical arguments), succeeded, and their answers are
//! equal once every number is masked ([`super::sketch::Sketch::counts`]); polls in between
//! are skipped (waiting is not looping), anything else ends the walk: a test rerun after
//! each patch has the patch in between. The answers must have changed at least once (the
//! same answer every time is `identical_outcome_streak`'s). It warns after `warnAt`
//! (strict: 3) such calls and blocks after `blockAt` (strict: 5): the 6th application,
//! five calls after the first. A healthy agent applies an edit once, perhaps twice when it
//! is unsure the first went through. On the calibration set only the self-recovering
//! `sympy__sympy-15976` repeats a changing command: one no-op `sed -i` four times in a
//! row, every answer empty. Its answers never change, so it is not counted here.

use super::ledger::Scoped;
use super::sketch::{ArgsSketch, MUTATES};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// The earlier runs of the proposed call, in a row, whose answers differ only in numbers;
/// 0 when the answers never changed.
pub(crate) fn count(tail: Scoped<'_>, tool: &[u8], digest: &ArgsDigest, args: &ArgsSketch) -> u64 {
    if args.flags & MUTATES == 0 {
        return 0;
    }
    let mut n = 0u64;
    let mut counts = 0u64;
    let mut first = None;
    let mut changed = false;
    for e in tail.rev() {
        let Some(s) = e.sketch.as_deref() else { break };
        if s.poll() {
            continue;
        }
        if !e.same_call(tool, digest) || e.failure.is_some() || s.counts == 0 {
            break;
        }
        if counts == 0 {
            counts = s.counts;
        } else if s.counts != counts {
            break;
        }
        match first {
            None => first = Some(e.result),
            Some(r) => changed |= r != e.result,
        }
        n += 1;
    }
    if changed {
        n
    } else {
        0
    }
}

pub(crate) fn check<'k>(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    args_hash: &dyn Fn() -> &'k [u8],
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let n = count(tail, tool, digest, args);
    let level = super::failure_streak::level(n, cfg)?;
    let (head, tail): (&[u8], &[u8]) = match level {
        Level::Critical => (b"CRITICAL: ", b" This call is blocked."),
        Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::ChangingCountsSameCall,
        level,
        count: n,
        message: messages::key(&[
            head,
            tool,
            b": the same call succeeded ",
            n.to_string().as_bytes(),
            b" times in a row, and each answer differed from the last only in its numbers (counts, line numbers): every run adds the same change again. Stop repeating it: read the target to see what it holds now, remove the duplicates, and then move on.",
            tail,
        ]),
        warning_key: messages::key(&[b"changing-counts:", args_hash()]),
        paired_tool: None,
    })
}
