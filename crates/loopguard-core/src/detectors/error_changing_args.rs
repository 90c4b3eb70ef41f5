//! `error_despite_changing_args` (strict profile): the same tool failing with the same
//! normalised error although its arguments keep changing (OpenClaw #117637: 40
//! `FileNotFoundError` calls with small argument changes, all "not stuck").
//!
//! Walking back over the run's outcomes, the newest ones that are failures of the proposed
//! call's tool with one [normalised identity](super::ledger::failure_identity) form the
//! streak (any other outcome ends it). Its number of distinct argument variants warns at
//! `warnAt` (strict: 4) and blocks only on strong evidence, `blockAt` variants in a row
//! (strict: 8), since trying different arguments is also what a healthy agent does.

use super::ledger::Scoped;
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::fingerprint::ArgsDigest;
use crate::messages;

/// The number of distinct arguments in the trailing same-error streak of `tool`.
pub(crate) fn variants(tail: Scoped<'_>, tool: &[u8]) -> Option<(u64, [u8; 8])> {
    let mut it = tail.rev();
    let last = it.next()?;
    let id = last.failure?;
    if last.tool.as_wtf8() != tool {
        return None;
    }
    let mut seen: Vec<ArgsDigest> = vec![last.args];
    for e in it {
        if e.tool.as_wtf8() != tool || e.failure != Some(id) {
            break;
        }
        if !seen.contains(&e.args) {
            seen.push(e.args);
        }
    }
    Some((seen.len() as u64, id))
}

pub(crate) fn check(tail: Scoped<'_>, tool: &[u8], cfg: &ExtraDetector) -> Option<Detection> {
    let (n, id) = variants(tail, tool)?;
    if n < 2 {
        return None;
    }
    let level = super::failure_streak::level(n, cfg)?;
    let count = n.to_string();
    let message = match level {
        Level::Critical => messages::key(&[
            b"CRITICAL: ",
            tool,
            b" returned the same error for ",
            count.as_bytes(),
            b" different argument variants in a row. Changing the arguments is not fixing it; the call is blocked. Find the cause of the error first.",
        ]),
        Level::Warning => messages::key(&[
            b"WARNING: ",
            tool,
            b" returned the same error for ",
            count.as_bytes(),
            b" different argument variants in a row. Read the error and fix its cause instead of varying the arguments.",
        ]),
    };
    Some(Detection {
        detector: Detector::ErrorDespiteChangingArgs,
        level,
        count: n,
        message,
        warning_key: messages::key(&[b"error-args:", tool, b":", id_hex(&id).as_bytes()]),
        paired_tool: None,
    })
}

fn id_hex(id: &[u8; 8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}
