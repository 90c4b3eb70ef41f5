//! The no-progress streak: how many times the same call returned the same outcome.
//!
//! Walking back from the newest record, records of other calls and records without an
//! outcome are **skipped**, not treated as a break (OpenClaw did not adopt contiguous "tail"
//! semantics, #71671). The first outcome found sets the reference; the first different
//! outcome ends the streak.

use crate::fingerprint::ArgsDigest;
use crate::history::{Keyed, Record};
use crate::outcome::ResultHash;

/// The streak and the outcome it repeats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Streak {
    /// Identical outcomes of identical calls.
    pub count: u64,
    /// The repeated outcome.
    pub latest: Option<ResultHash>,
    /// Every record of the identical call, with or without an outcome (the generic
    /// detector's `recentCount`). Counted in the same pass because every check needs it.
    pub calls: u64,
}

/// Computes the streak for `tool` with `args` over `history` (oldest first).
pub fn streak<'h>(
    history: impl DoubleEndedIterator<Item = &'h Record>,
    tool: &[u8],
    args: &ArgsDigest,
) -> Streak {
    let mut s = Streak::default();
    let mut ended = false;
    for r in history.rev() {
        if !r.same_call(tool, args) {
            continue;
        }
        s.calls += 1;
        if ended {
            continue;
        }
        let Some(h) = r.result else { continue };
        match s.latest {
            None => {
                s.latest = Some(h);
                s.count = 1;
            }
            Some(l) if l == h => s.count += 1,
            Some(_) => ended = true,
        }
    }
    s
}

/// [`streak`] over a whole history, reading only the records whose digest key (the first
/// eight bytes of the argument digest) is the call's: a record with another key has other
/// arguments, which [`streak`] skips, so the result is the same while most records (cold in
/// a guard of many sessions) are never touched.
pub(crate) fn streak_keyed(h: Keyed<'_>, tool: &[u8], args: &ArgsDigest) -> Streak {
    debug_assert_eq!(h.keys.len(), h.records.len());
    let key = args.key();
    let matching = h
        .keys
        .iter()
        .zip(h.records.iter())
        .filter(move |(k, _)| **k == key)
        .map(|(_, r)| r);
    streak(matching, tool, args)
}

/// `latestResultHash ?? "none"` as it appears in warning keys.
pub(crate) fn latest_or_none(s: &Streak) -> String {
    s.latest
        .map_or_else(|| "none".to_string(), |h| h.to_string())
}
