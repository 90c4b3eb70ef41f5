//! `ping_pong`: an agent alternating between two calls (`read a`, `list b`, `read a`, …).
//!
//! The newest record and the nearest older record with a different `argsHash` form the
//! pair; the alternating tail is counted from the newest record back. The call being checked
//! must continue the alternation. A warning needs only the alternation; a block also needs
//! evidence of no progress: every record of the tail has an outcome and each side's
//! outcomes are all identical.

use super::{reached, Detection, Detector, Level, Probe};
use crate::config::ResolvedConfig;
use crate::fingerprint::ArgsDigest;
use crate::history::{Name, Record};
use crate::messages;
use crate::outcome::ResultHash;
use crate::value::utf16_cmp;

/// The alternation the checked call would extend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PingPong<'h> {
    /// Length of the alternating tail plus the checked call (0 when none).
    pub count: u64,
    /// The newest record: the other side of the pair from the checked call.
    pub paired: Option<&'h Record>,
    /// Stable outcomes on both sides.
    pub no_progress_evidence: bool,
}

/// Computes the ping-pong streak for a call of `tool` with `args`.
pub fn streak<'h>(
    history: impl DoubleEndedIterator<Item = &'h Record> + Clone,
    tool: &[u8],
    args: &ArgsDigest,
) -> PingPong<'h> {
    let mut back = history.clone().rev();
    let Some(last) = back.next() else {
        return PingPong::default();
    };
    // OpenClaw also gives up when the other side's tool name is empty (falsy).
    let Some(other) = back
        .find(|r| !r.same_signature(last))
        .filter(|r| !r.tool.is_empty())
    else {
        return PingPong::default();
    };
    let tail = history
        .clone()
        .rev()
        .enumerate()
        .take_while(|(i, r)| r.same_signature(if i % 2 == 0 { last } else { other }))
        .count();
    if tail < 2 || !other.same_call(tool, args) {
        return PingPong::default();
    }
    let mut side_a: Option<ResultHash> = None;
    let mut side_b: Option<ResultHash> = None;
    let mut evidence = true;
    for r in history.rev().take(tail) {
        let Some(h) = r.result else {
            evidence = false;
            break;
        };
        let side = if r.same_signature(last) {
            &mut side_a
        } else {
            &mut side_b
        };
        match side {
            None => *side = Some(h),
            Some(prev) if *prev == h => {}
            Some(_) => {
                evidence = false;
                break;
            }
        }
    }
    PingPong {
        count: tail as u64 + 1,
        paired: Some(last),
        no_progress_evidence: evidence && side_a.is_some() && side_b.is_some(),
    }
}

pub(crate) fn check<'h, H>(probe: &Probe<'h, H>, cfg: &ResolvedConfig) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    if !cfg.ping_pong {
        return None;
    }
    let pp = streak(probe.history.clone(), probe.tool, &probe.args);
    let paired = pp.paired?;
    let tool_lossy = || String::from_utf8_lossy(probe.tool).into_owned();
    let (level, message) = if reached(pp.count, cfg.critical_threshold) && pp.no_progress_evidence {
        tracing::error!(
            target: "loopguard::detector",
            "Critical ping-pong loop detected: alternating calls count={} currentTool={}",
            pp.count,
            tool_lossy()
        );
        (Level::Critical, messages::ping_pong_critical(pp.count))
    } else if reached(pp.count, cfg.warning_threshold) {
        tracing::warn!(
            target: "loopguard::detector",
            "Ping-pong loop warning: alternating calls count={} currentTool={}",
            pp.count,
            tool_lossy()
        );
        (Level::Warning, messages::ping_pong_warning(pp.count))
    } else {
        return None;
    };
    Some(Detection {
        detector: Detector::PingPong,
        level,
        count: pp.count,
        message,
        warning_key: pair_key(probe.tool, &probe.args, paired),
        paired_tool: Some(paired.tool.clone()),
    })
}

/// `pingpong:` and the two argsHash strings sorted, joined by `|`: the same key from
/// either side of the pair, so one warning covers both tools.
fn pair_key(tool: &[u8], args: &ArgsDigest, paired: &Record) -> Name {
    let a = args.args_hash(tool);
    let b = paired.args.args_hash(paired.tool.as_wtf8());
    let (x, y) = if utf16_cmp(&a, &b).is_le() {
        (a, b)
    } else {
        (b, a)
    };
    messages::key(&[b"pingpong:", &x, b"|", &y])
}
