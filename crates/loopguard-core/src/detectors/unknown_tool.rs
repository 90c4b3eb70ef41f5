//! `unknown_tool_repeat`: an agent retrying a tool that does not exist.
//!
//! Walking back from the newest record, the streak continues while records are calls of
//! the same tool whose error named the same missing tool; arguments are ignored, so an
//! agent rewording its arguments does not escape. Critical at `unknownToolThreshold`,
//! whatever the detector switches say.

use super::{reached, Detection, Detector, Level, Probe};
use crate::config::ResolvedConfig;
use crate::history::Record;
use crate::messages;

/// The streak length and the missing tool's name.
pub fn streak<'h>(
    history: impl DoubleEndedIterator<Item = &'h Record>,
    tool: &[u8],
) -> (u64, Option<&'h str>) {
    let mut count = 0;
    let mut name: Option<&str> = None;
    for r in history.rev() {
        let Some(u) = r.unknown_tool.as_deref().filter(|u| !u.is_empty()) else {
            break;
        };
        if r.tool.as_wtf8() != tool {
            break;
        }
        match name {
            None => {
                name = Some(u);
                count = 1;
            }
            Some(n) if n == u => count += 1,
            Some(_) => break,
        }
    }
    (count, name)
}

pub(crate) fn check<'h, H>(probe: &Probe<'h, H>, cfg: &ResolvedConfig) -> Option<Detection>
where
    H: DoubleEndedIterator<Item = &'h Record> + Clone,
{
    let (count, name) = streak(probe.history.clone(), probe.tool);
    if count == 0 || !reached(count, cfg.unknown_tool_threshold) {
        return None;
    }
    let shown = name.map_or(probe.tool, str::as_bytes);
    Some(Detection {
        detector: Detector::UnknownToolRepeat,
        level: Level::Critical,
        count,
        message: messages::unknown_tool(shown, count),
        warning_key: messages::key(&[
            b"unknown-tool:",
            probe.tool,
            b":",
            name.unwrap_or("unknown").as_bytes(),
        ]),
        paired_tool: None,
    })
}
