//! `known_poll_no_progress`: polling a process whose answer never changes.
//!
//! Known poll calls are `command_status`, and `process` with `action` `poll` or `log`.
//! They warn at `warningThreshold` and block at `criticalThreshold` identical outcomes, and
//! never reach the generic detector (polling the same arguments is their normal use).

use super::no_progress::{latest_or_none, Streak};
use super::{reached, Detection, Detector, Level, Probe};
use crate::config::ResolvedConfig;
use crate::history::Record;
use crate::messages;
use crate::value::Value;

/// OpenClaw's `isKnownPollToolCall`.
///
/// ```
/// use loopguard_core::{detection::is_known_poll_call, Value};
/// let poll = Value::parse(br#"{"action":"poll","sessionId":"s"}"#)?;
/// assert!(is_known_poll_call(b"process", &poll));
/// assert!(is_known_poll_call(b"command_status", &Value::Null));
/// assert!(!is_known_poll_call(b"exec", &poll));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn is_known_poll_call(tool: &[u8], params: &Value<'_>) -> bool {
    if tool == b"command_status" {
        return true;
    }
    tool == b"process"
        && matches!(params.get("action"), Some(Value::String(a)) if a.as_wtf8() == b"poll" || a.as_wtf8() == b"log")
}

pub(crate) fn check<'h, H>(
    probe: &Probe<'h, H>,
    streak: &Streak,
    cfg: &ResolvedConfig,
) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    if !cfg.known_poll_no_progress {
        return None;
    }
    let tool_lossy = || String::from_utf8_lossy(probe.tool).into_owned();
    let (level, message) = if reached(streak.count, cfg.critical_threshold) {
        tracing::error!(
            target: "loopguard::detector",
            "Critical polling loop detected: {} repeated {} times",
            tool_lossy(),
            streak.count
        );
        (
            Level::Critical,
            messages::poll_critical(probe.tool, streak.count),
        )
    } else if reached(streak.count, cfg.warning_threshold) {
        tracing::warn!(
            target: "loopguard::detector",
            "Polling loop warning: {} repeated {} times",
            tool_lossy(),
            streak.count
        );
        (
            Level::Warning,
            messages::poll_warning(probe.tool, streak.count),
        )
    } else {
        return None;
    };
    let args_hash = probe.args.args_hash(probe.tool);
    Some(Detection {
        detector: Detector::KnownPollNoProgress,
        level,
        count: streak.count,
        message,
        warning_key: messages::key(&[
            b"poll:",
            probe.tool,
            b":",
            &args_hash,
            b":",
            latest_or_none(streak).as_bytes(),
        ]),
        paired_tool: None,
    })
}
