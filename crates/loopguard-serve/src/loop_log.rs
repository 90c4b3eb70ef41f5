//! One log line per loop event, where the engine logs a line per detector per call.
//!
//! By default `loopguard serve` turns the engine's own lines off (`loopguard::detector`,
//! `loopguard::tool_loop`: about 40 for one loop of 25 calls; `-v` brings them back) and
//! writes these instead, at `WARN` under the target `loopguard::serve::loop`, with the
//! fields a log pipeline filters on (`tenant`, `agent`, `session`, `tool`, `detector`,
//! `loop_level`, `decision`, `count`): a warning shown to the model (once per warning
//! bucket, as the model sees it), and the first block (or abort) of a loop (its warning key
//! in its session); the blocks after it in the same loop are counted in `/metrics`, not
//! logged. Every route that decides calls logs here (`POST /v1/events`, the hook routes,
//! the OTLP receiver).

use std::collections::HashSet;
use std::sync::Mutex;

use loopguard_events::{Action, Decision};

/// Loops whose block was logged, remembered up to this many (then forgotten all at once:
/// the worst case is one more line for a loop that is still blocking).
const REMEMBERED: usize = 50_000;

/// What was logged already.
#[derive(Default)]
pub(crate) struct LoopLog {
    blocked: Mutex<HashSet<(String, String, String)>>,
}

impl std::fmt::Debug for LoopLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopLog").finish_non_exhaustive()
    }
}

impl LoopLog {
    /// Logs `d` (decided for `tenant`, sent by `agent` when known) when it is a loop
    /// event. `word` is the decision as the record says it (`block`, `would-block`, …).
    pub(crate) fn decision(
        &self,
        tenant: Option<&str>,
        agent: Option<&str>,
        d: &Decision<'_>,
        word: &str,
    ) {
        let Some(f) = d.finding.as_ref() else {
            return;
        };
        let session = d.session.to_string_lossy();
        let tool = d
            .tool
            .as_ref()
            .map(|t| t.to_string_lossy())
            .unwrap_or_default();
        let blocking = matches!(d.action, Action::Block | Action::Abort);
        if blocking {
            let key = f
                .warning_key
                .as_ref()
                .map(|k| k.to_string())
                .unwrap_or_else(|| f.detector.as_str().to_string());
            let loop_id = (
                tenant.unwrap_or_default().to_string(),
                session.to_string(),
                key,
            );
            let mut seen = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
            if seen.len() >= REMEMBERED {
                seen.clear();
            }
            if !seen.insert(loop_id) {
                return;
            }
        } else if f.emitted != Some(true) {
            return;
        }
        tracing::warn!(
            target: "loopguard::serve::loop",
            tenant = tenant.unwrap_or_default(),
            agent = agent.unwrap_or_default(),
            session = %session,
            tool = %tool,
            detector = f.detector.as_str(),
            loop_level = f.level.as_str(),
            decision = word,
            count = f.count,
            "{}",
            if blocking { "loop blocked" } else { "loop warning" }
        );
    }
}
