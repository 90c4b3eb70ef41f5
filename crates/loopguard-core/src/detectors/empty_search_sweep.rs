//! `empty_search_sweep` (strict profile): searches with different arguments that all get
//! the same empty or no-match answer. The calls change; the world's answer does not.
//!
//! Motivated by held-out real runs (issue reports of SWE-agent and Codex sessions): `find /
//! -name "<guessed name>*"` with 36 different guesses in a row, every one empty; the same
//! with a typo that hides the shell's error (`find. -name … 2>/dev/null`): dozens of
//! calls, one empty answer. No earlier detector sees them: every call is new, and an empty
//! answer to a *different* call is not a repeat.
//!
//! Walking back from the newest outcome, each search call ([`super::sketch::SEARCH`]: a
//! search or listing tool, or a shell command running `find`, `grep`, `rg`, `ls`, … after
//! any `cd DIR &&`) of the proposed call's tool whose normalised outcome is the newest
//! one's counts, provided the calls differ and that outcome says nothing was found: empty,
//! a short "no matches" / "not found" text, or a failure (`grep` finding nothing exits
//! 1). The same non-empty answer to different searches is not counted: a listing whose
//! only difference is a number the call itself holds (`ls sub3` → `mod_3.py`) normalises
//! alike and is progress. Anything else ends the walk: a
//! successful write, a search that found something, any other call (progress elsewhere
//! breaks a sweep; a poll of a background job waiting is skipped, as waiting is not
//! looping). Only a proposed search is checked. It warns after `warnAt` (strict: 4) such
//! answers and blocks after `blockAt` (strict: 7): the 8th search of a sweep, within eight
//! calls of its start. On the calibration set healthy agents try at most three spellings in
//! a row before reading what they have.

use super::ledger::{same_bytes, Scoped};
use super::sketch::ArgsSketch;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// The earlier searches of the sweep the proposed call would continue.
pub(crate) fn count(tail: Scoped<'_>, tool: &[u8], digest: &ArgsDigest, args: &ArgsSketch) -> u64 {
    if args.flags & super::sketch::SEARCH == 0 || args.flags & super::sketch::POLL != 0 {
        return 0;
    }
    let mut n = 0u64;
    let mut answer: Option<u64> = None;
    let mut empty = false;
    let mut distinct = false;
    let mut first_args: Option<&ArgsDigest> = None;
    for e in tail.rev() {
        let Some(s) = e.sketch.as_deref() else { break };
        if s.poll() {
            continue;
        }
        if !s.search() || !same_bytes(e.tool.as_wtf8(), tool) {
            break;
        }
        match answer {
            None => {
                answer = Some(s.outcome);
                empty = s.nothing_found() || s.shell_error() || e.failure.is_some();
                first_args = Some(&e.args);
            }
            Some(a) if a != s.outcome => break,
            Some(_) => {}
        }
        if first_args.is_some_and(|f| *f != e.args) || e.args != *digest {
            distinct = true;
        }
        n += 1;
    }
    // One answer to different searches (an identical search again is the repeat
    // detectors' job): empty, a no-match failure, or one text for all of them.
    if !distinct || !empty {
        return 0;
    }
    n
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
        Level::Critical => (b"CRITICAL: ", b" This call is blocked."),
        Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::EmptySearchSweep,
        level,
        count: n,
        message: messages::key(&[
            head,
            tool,
            b": your last ",
            n.to_string().as_bytes(),
            b" searches with different arguments all got the same empty or no-match answer. Guessing more names will not find it: look at what exists (list the directory, read the docs or the error) or, if the task is already complete, finish or submit.",
            tail,
        ]),
        warning_key: messages::key(&[b"empty-sweep:", tool]),
        paired_tool: None,
    })
}
