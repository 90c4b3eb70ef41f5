//! `global_circuit_breaker`: the last line of defence.
//!
//! Identical calls with identical outcomes `globalCircuitBreakerThreshold` times block the
//! call even when every detector switch is off.

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
    if !reached(streak.count, cfg.global_circuit_breaker_threshold) {
        return None;
    }
    tracing::error!(
        target: "loopguard::detector",
        "Global circuit breaker triggered: {} repeated {} times with no progress",
        String::from_utf8_lossy(probe.tool),
        streak.count
    );
    let args_hash = probe.args.args_hash(probe.tool);
    Some(Detection {
        detector: Detector::GlobalCircuitBreaker,
        level: Level::Critical,
        count: streak.count,
        message: messages::global_breaker(probe.tool, streak.count),
        warning_key: messages::key(&[
            b"global:",
            probe.tool,
            b":",
            &args_hash,
            b":",
            latest_or_none(streak).as_bytes(),
        ]),
        paired_tool: None,
    })
}
