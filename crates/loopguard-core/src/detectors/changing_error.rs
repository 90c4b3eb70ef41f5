//! `same_call_changing_error` (strict profile): the same call failing again and again
//! with a different error text each time (a flaky or shifting failure that a retry will
//! not fix; OpenHands' StuckDetector stops this shape at the third error).
//!
//! The newest outcomes of the run, walked back, must be failures of the proposed call
//! (the same tool and the same arguments, exactly: reading page 1 and page 2 are different
//! calls), in a row, with at least two
//! different failure identities among them (all identical is
//! [`super::failure_streak`]'s). The call warns after `warnAt` (strict: 2) such failures
//! and is blocked after `blockAt` (strict: 3), the fourth attempt.

use super::ledger::{FailureId, Scoped};
use super::sketch::ArgsSketch;
use super::{Detection, Detector};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

pub(crate) fn count(tail: Scoped<'_>, tool: &[u8], digest: &ArgsDigest, args: &ArgsSketch) -> u64 {
    if args.flags & super::sketch::POLL != 0 {
        return 0;
    }
    let mut n = 0u64;
    let mut first: Option<FailureId> = None;
    let mut differ = false;
    for e in tail.rev() {
        let Some(f) = e.failure else { break };
        if !e.same_call(tool, digest) {
            break;
        }
        match first {
            None => first = Some(f),
            Some(x) if x != f => differ = true,
            Some(_) => {}
        }
        n += 1;
    }
    if differ {
        n
    } else {
        0
    }
}

pub(crate) fn check(
    tail: Scoped<'_>,
    tool: &[u8],
    digest: &ArgsDigest,
    args: &ArgsSketch,
    cfg: &ExtraDetector,
) -> Option<Detection> {
    let n = count(tail, tool, digest, args);
    let level = super::failure_streak::level(n, cfg)?;
    let (head, tail): (&[u8], &[u8]) = match level {
        super::Level::Critical => (b"CRITICAL: ", b" The call is blocked."),
        super::Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::ChangingErrorSameCall,
        level,
        count: n,
        message: messages::key(&[
            head,
            tool,
            b" failed ",
            n.to_string().as_bytes(),
            b" times in a row with the same arguments, with a different error each time. Retrying the same call will not fix it: read the errors, change the call or the approach, or report the task as failed.",
            tail,
        ]),
        warning_key: messages::key(&[b"changing-error:", tool]),
        paired_tool: None,
    })
}
