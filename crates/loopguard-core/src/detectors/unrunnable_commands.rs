//! `unrunnable_commands` (strict profile): prose sent as shell commands. Every action is a
//! reworded paragraph the shell cannot run, and the answer is always one or two shell
//! errors (`command not found`, a syntax error).
//!
//! Motivated by a held-out real run (issue report: a model whose every action, from the
//! first call on, was a paragraph of text, each answered by one of two bash errors). The
//! existing detectors miss it: the commands all differ, and the two errors alternate, so
//! `error_despite_changing_args` (one error) never counts past two.
//!
//! Walking back from the newest outcome, the calls of the proposed call's tool whose
//! outcome was the shell refusing the command ([`super::sketch::SHELL_ERROR`]) count
//! (whichever of the shell's few refusals it is: `command not found` names the first word
//! of each paragraph, so the texts differ while their kind does not); anything else ends the walk
//! (a command that ran, another tool). It warns after `warnAt` (strict: 2) and blocks after
//! `blockAt` (strict: 4). A healthy agent mistypes one command and fixes it; on the
//! calibration set no run has more than one shell error in a row.

use super::ledger::{same_bytes, Scoped};
use super::{Detection, Detector, Level};
use crate::config::ExtraDetector;
use crate::messages;

/// The trailing shell errors of `tool`.
pub(crate) fn count(tail: Scoped<'_>, tool: &[u8]) -> u64 {
    let mut n = 0u64;
    for e in tail.rev() {
        let Some(s) = e.sketch.as_deref() else { break };
        if !s.shell_error() || !same_bytes(e.tool.as_wtf8(), tool) {
            break;
        }
        n += 1;
    }
    n
}

pub(crate) fn check(tail: Scoped<'_>, tool: &[u8], cfg: &ExtraDetector) -> Option<Detection> {
    let n = count(tail, tool);
    let level = super::failure_streak::level(n, cfg)?;
    let (head, tail): (&[u8], &[u8]) = match level {
        Level::Critical => (b"CRITICAL: ", b" This call is blocked."),
        Level::Warning => (b"WARNING: ", b""),
    };
    Some(Detection {
        detector: Detector::UnrunnableCommands,
        level,
        count: n,
        message: messages::key(&[
            head,
            tool,
            b": the shell could not run your last ",
            n.to_string().as_bytes(),
            b" commands (command not found or a syntax error). Send one real shell command, not a description of what to do.",
            tail,
        ]),
        warning_key: messages::key(&[b"unrunnable:", tool]),
        paired_tool: None,
    })
}
