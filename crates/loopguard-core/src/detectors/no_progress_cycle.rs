//! `no_progress_cycle` (strict profile): a cycle of two to four calls going round with
//! unchanged outcomes: two failing spellings of one path in turn, open → search → list,
//! three URLs fetched in turn, and near-alternations (A, B, A', B' with A' and A of the
//! same [shape](super::sketch): differing only in case, spacing, punctuation, quoting,
//! numbers or bookkeeping arguments).
//!
//! For each period P from 2 to 4, the proposed call followed back through the run's
//! outcomes is matched with the call P places earlier (same tool, same shape, and the
//! same normalised outcome for recorded pairs); the calls covered by the cycle are
//! counted, the proposed one included. At least two different shapes must be in the
//! cycle (one repeated call is [`super::near_repeat`]'s). The call warns when the cycle
//! covers `max(warnAt, 2P)` calls (strict: 6), so a short cycle always earns a warning
//! first. It is blocked at `max(blockAt, 2P + 2)` when every call of the cycle is one tool
//! (three URLs fetched in turn: a held-out real run of this shape was stopped 9 calls after
//! its start with `3P`, one call too late; now at its 8th call) and at
//! `max(blockAt, 4P)` when the cycle mixes tools (Gemini CLI's test "should not detect a
//! loop for different tool calls" runs three different calls three times: warned at the
//! 6th, not blocked at the 9th). A two-call ping-pong is stopped at its 8th call either
//! way, well before OpenClaw's 20. Shape equality rather than similarity: a healthy write
//! → build → read cycle with slightly different file contents (seen on the calibration
//! set) is progress; and so is a round whose successful calls count up from the round
//! before (other numbers, or writes to other targets: OpenHands' `ls N` / `read
//! fileN.txt` between condensations), which is a progression, not a cycle.

use super::ledger::{same_bytes, Scoped};
use super::sketch::ArgsSketch;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// The longest cycle looked for.
pub const MAX_PERIOD: usize = 4;

/// The cycles at the end of the run: (period, calls covered) for each period found.
pub(crate) fn cycles(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    limit: usize,
) -> Vec<(usize, u64, bool)> {
    let mut found = Vec::new();
    if args.flags & super::sketch::POLL != 0 {
        return found;
    }
    // No cycle can start when the proposed call repeats none of the calls 2 to 4 back
    // (tool and shape): every period covers fewer calls than it takes to warn. Checked
    // first, without building the sequence (the usual case).
    let mut back = 0;
    for e in tail.clone().rev().take(limit.min(64)) {
        let Some(s) = e.sketch.as_deref() else { break };
        if s.poll() {
            break;
        }
        if s.vetoed() {
            continue;
        }
        back += 1;
        if back >= 2 && s.args.shape == args.shape && same_bytes(e.tool.as_wtf8(), tool) {
            break;
        }
        if back == MAX_PERIOD {
            return found;
        }
    }
    // Newest first: (tool, shape, outcome, exact arguments when the outcome is empty);
    // index 0 is the proposed call. On the stack: at most 64 outcomes are looked at.
    // Each with its numbers and write target, and whether it succeeded (a progression
    // step: [`ArgsSketch::progresses_from`]).
    type Item<'a> = (
        &'a [u8],
        u64,
        Option<u64>,
        Option<&'a ArgsDigest>,
        (u64, u64, bool),
    );
    const CAP: usize = 65;
    let mut buf: [Item<'_>; CAP] = [(&[], 0, None, None, (0, 0, false)); CAP];
    buf[0] = (
        tool,
        args.shape,
        None,
        Some(digest),
        (args.numbers, args.target, false),
    );
    let mut len = 1;
    // Blocked calls of the cycle (`countVetoes`) are looked through, and counted.
    let mut vetoed = 0u64;
    // Enough outcomes to reach the block of the longest period, and no more.
    for e in tail.rev().take(limit.min(CAP - 1)) {
        let Some(s) = e.sketch.as_deref() else { break };
        if s.poll() {
            break;
        }
        if s.vetoed() {
            vetoed += 1;
            continue;
        }
        let exact = s.empty_outcome().then_some(&e.args);
        buf[len] = (
            e.tool.as_wtf8(),
            s.args.shape,
            Some(s.outcome),
            exact,
            (s.args.numbers, s.args.target, e.failure.is_none()),
        );
        len += 1;
        // No cycle can start: the proposed call repeats none of the calls 2 to 4 back
        // (tool and shape), so every period covers fewer calls than it takes to warn.
        if len == MAX_PERIOD + 1
            && !buf[2..len]
                .iter()
                .any(|x| x.1 == args.shape && same_bytes(x.0, tool))
        {
            return found;
        }
    }
    let seq = &buf[..len];
    for p in 2..=MAX_PERIOD {
        if seq.len() < 2 * p {
            break;
        }
        let first = seq[0].1;
        if seq[1..p].iter().all(|x| x.1 == first && x.0 == seq[0].0) {
            continue;
        }
        let mut i = 0;
        while i + p < seq.len() {
            let (a, b) = (&seq[i], &seq[i + p]);
            let same_outcome = match (a.2, b.2) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            };
            // An edit that prints nothing is the same step only with the same arguments.
            let same_args = match (a.3, b.3) {
                (Some(x), Some(y)) if i > 0 => x == y,
                (Some(x), Some(y)) => b.2.is_none() || x == y,
                (None, Some(_)) => false,
                _ => true,
            };
            // The older step succeeded and the newer counts up from it or writes elsewhere:
            // a progression going round, not a cycle.
            let (an, at, _) = a.4;
            let (bn, bt, b_ok) = b.4;
            let progression = b_ok && (an != bn || (at != bt && at != 0));
            if a.1 != b.1 || !same_bytes(a.0, b.0) || !same_outcome || !same_args || progression {
                break;
            }
            i += 1;
        }
        // One tool family: every call of the cycle is the same tool.
        let one_tool = seq[..p].iter().all(|x| same_bytes(x.0, seq[0].0));
        found.push((p, (i + p) as u64 + vetoed, one_tool));
    }
    found
}

pub(crate) fn check(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let level_of = |p: usize, covered: u64, one_tool: bool| {
        let p = p as u64;
        let block = if one_tool {
            cfg.block_at.max(2 * p + 2)
        } else {
            cfg.block_at.max(4 * p)
        };
        if cfg.block_at > 0 && covered >= block {
            Some(Level::Critical)
        } else if cfg.warn_at > 0 && covered >= cfg.warn_at.max(2 * p) {
            Some(Level::Warning)
        } else {
            None
        }
    };
    let (level, p, covered) = cycles(
        tail,
        tool,
        digest,
        args,
        usize::try_from(cfg.block_at.max(cfg.warn_at).max(4 * MAX_PERIOD as u64))
            .unwrap_or(64)
            .min(64),
    )
    .into_iter()
    .filter_map(|(p, c, one)| level_of(p, c, one).map(|l| (l, p, c)))
    .max_by_key(|(l, _, c)| (*l, *c))?;
    let (head, tail): (&[u8], &[u8]) = match level {
        Level::Critical => (b"CRITICAL: ", b" This call is blocked."),
        Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::NoProgressCycle,
        level,
        count: covered,
        message: messages::key(&[
            head,
            b"Your last ",
            covered.to_string().as_bytes(),
            b" calls go round a cycle of ",
            p.to_string().as_bytes(),
            b" calls (",
            tool,
            b" and the others in turn), each getting the same result as the round before. Going round again will not change it: try something different, or if the task is already complete, finish or submit.",
            tail,
        ]),
        warning_key: messages::key(&[b"cycle:", tool, b":", p.to_string().as_bytes()]),
        paired_tool: None,
    })
}
