//! `generic_repeat`: the same call, again and again.
//!
//! It warns on repetition alone (`warningThreshold` identical calls in the run's history,
//! with or without outcomes) and blocks only on evidence: `criticalThreshold` identical
//! outcomes of the identical call. Known poll calls never reach it.

use super::no_progress::{latest_or_none, Streak};
use super::{reached, Detection, Detector, Level, Probe};
use crate::config::ResolvedConfig;
use crate::history::Record;
use crate::messages;

pub(crate) fn check<'h, H>(
    probe: &Probe<'h, H>,
    streak: &Streak,
    cfg: &ResolvedConfig,
) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    if !cfg.generic_repeat {
        return None;
    }
    let tool_lossy = || String::from_utf8_lossy(probe.tool).into_owned();
    let args_hash = || probe.args.args_hash(probe.tool);
    if reached(streak.count, cfg.critical_threshold) {
        tracing::error!(
            target: "loopguard::detector",
            "Critical generic loop detected: {} repeated {} times",
            tool_lossy(),
            streak.count
        );
        return Some(Detection {
            detector: Detector::GenericRepeat,
            level: Level::Critical,
            count: streak.count,
            message: messages::generic_critical(probe.tool, streak.count),
            warning_key: messages::key(&[
                b"generic:",
                probe.tool,
                b":",
                &args_hash(),
                b":",
                latest_or_none(streak).as_bytes(),
            ]),
            paired_tool: None,
        });
    }
    let count = streak.calls;
    if !reached(count, cfg.warning_threshold) {
        return None;
    }
    tracing::warn!(
        target: "loopguard::detector",
        "Loop warning: {} called {} times with identical arguments",
        tool_lossy(),
        count
    );
    Some(Detection {
        detector: Detector::GenericRepeat,
        level: Level::Warning,
        count,
        message: messages::generic_warning(probe.tool, count),
        warning_key: messages::key(&[b"generic:", probe.tool, b":", &args_hash()]),
        paired_tool: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenClaw's `recentCount` as written there, a separate pass: records with the same
    /// tool and arguments, with or without outcomes. The oracle for the streak's `calls`.
    fn recent_count<'h>(
        history: impl Iterator<Item = &'h Record>,
        tool: &[u8],
        args: &crate::fingerprint::ArgsDigest,
    ) -> u64 {
        history.filter(|r| r.same_call(tool, args)).count() as u64
    }
    use crate::config::Policy;
    use crate::outcome::Outcome;
    use crate::{Call, Session, Value};

    #[test]
    fn streak_pass_counts_calls_like_recent_count() {
        let policy = Policy::default(); // records, never detects
        let mut s = Session::new("t");
        let a = Value::parse(br#"{"p":1}"#).unwrap();
        let b = Value::parse(br#"{"p":2}"#).unwrap();
        for i in 0..25u32 {
            let args = if i % 3 == 0 { &b } else { &a };
            let call = Call::new("read", args);
            let _ = s.before_call(&policy, &call);
            if i % 2 == 0 {
                let r = Value::from(f64::from(i % 4));
                let _ = s.after_call(&policy, &call, Outcome::Result(&r));
            }
        }
        for args in [&a, &b] {
            let d = crate::fingerprint::args_digest("read", args);
            let records = s.history().scoped(None);
            let streak = crate::detectors::no_progress::streak(records.clone(), b"read", &d);
            assert_eq!(streak.calls, recent_count(records, b"read", &d));
        }
    }
}
