//! What the readers of the coding agents' own session logs share (Gemini CLI, Qwen Code,
//! Copilot CLI, Factory Droid): calls mapped by the agent's row of the guard's tool table
//! (`loopguard_guard::profile::agents`, which the agent's live hook reads too) and judged
//! with the `claude-code` tool profile, results read as the hook reads them, and the calls
//! loopguard refused live read as refusals.
//!
//! * A call: `tools_of(AGENT).map_call(tool, args)` (shell tools as `Bash` without the
//!   fields that change on every call, polls as `BashOutput`, renamed tools under Claude
//!   Code's name); every event carries the `claude-code` profile ([`SourcedEvent::profile`]).
//! * A result: `map_result` of the mapped tool (a shell result's text and exit code
//!   without its volatile lines); a failure: `map_error` (a shell failure leading with its
//!   exit code, as Claude Code's). The notes loopguard's hook added to a result for the
//!   model (`loopguard: WARNING: …`) are dropped first: the hook saw the result without
//!   them.
//! * A refusal: a result or failure whose text is loopguard's own deny message, in the
//!   agent's wording ([`crate::common::loopguard_refusal`]), becomes OpenClaw's loop veto,
//!   which has no outcome hash: the call that was blocked live stays blocked in replay,
//!   and the next identical one is blocked again, as the hook did.

use loopguard_core::Value;
use loopguard_events::Payload;
use loopguard_guard::profile::agents::{tools_of, AgentTools};

use crate::common::{refusal_payload, without_loopguard_notes, Runs};
use crate::pairing::{PendingCall, Tracker};
use crate::{Context, Diagnostic, SourcedEvent};

/// The profile every event of an agent's session log is judged with.
pub(crate) const PROFILE: &str = "claude-code";

/// A turn's token count shared among its `calls` tool calls (the logs give one total per
/// model turn); `None` without a usable count.
pub(crate) fn tokens_per_call(total: Option<f64>, calls: usize) -> Option<u64> {
    total
        .filter(|t| *t >= 0.0)
        .map(|t| t as u64 / calls.max(1) as u64)
}

/// What a log recorded of one call's end.
pub(crate) enum Ended {
    /// The tool's result (text, or the agent's structured result).
    Result(Value<'static>),
    /// A failure, by its text.
    Failed(String),
}

/// One agent's calls and results, paired and mapped.
#[derive(Debug)]
pub(crate) struct AgentLog {
    tools: &'static AgentTools,
    pub(crate) tracker: Tracker,
    pub(crate) runs: Runs,
}

impl AgentLog {
    /// A log of `agent` (as `loopguard hook AGENT` spells it).
    pub(crate) fn new(agent: &str, ctx: &Context) -> Self {
        AgentLog {
            tools: tools_of(agent),
            tracker: Tracker::new(ctx),
            runs: Runs::new("run"),
        }
    }

    /// A call of `tool` with `args`, waiting for its result under `id`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call(
        &mut self,
        line: u64,
        id: Option<String>,
        tool: &str,
        args: &Value<'static>,
        ts: u64,
        tokens: Option<u64>,
        out: &mut Vec<SourcedEvent>,
    ) {
        let (name, mapped) = self.tools.map_call(tool, args);
        let run = self.runs.current();
        let mut call = PendingCall::new(line, &run, id.clone(), &name, mapped);
        call.ts = ts;
        call.tokens = tokens;
        self.runs.used();
        let from = out.len();
        self.tracker.call(id, call, out);
        mark(out, from);
    }

    /// The end of the call `id`: paired with its call (by id, else the oldest waiting).
    pub(crate) fn ended(
        &mut self,
        line: u64,
        id: Option<&str>,
        ended: Ended,
        ts: u64,
        out: &mut Vec<SourcedEvent>,
    ) {
        let from = out.len();
        match self.tracker.take(id) {
            Some(call) => {
                let payload = self.payload(&call.tool, ended);
                self.tracker.emit(call, line, payload, ts, out);
            }
            None => self.tracker.orphan(line, id),
        }
        mark(out, from);
    }

    /// The payload the engine sees for a result of the (mapped) `tool`.
    fn payload(&self, tool: &str, ended: Ended) -> Payload<'static> {
        let text = match &ended {
            Ended::Result(Value::String(s)) => Some(s.to_string_lossy().into_owned()),
            Ended::Result(_) => None,
            Ended::Failed(t) => Some(t.clone()),
        };
        if let Some(p) = text.as_deref().and_then(refusal_payload) {
            return p;
        }
        match ended {
            Ended::Result(Value::String(s)) => {
                let s = s.to_string_lossy();
                let clean = Value::from(without_loopguard_notes(&s).to_string());
                Payload::Result(self.tools.map_result(tool, &clean).into_owned())
            }
            Ended::Result(v) => Payload::Result(self.tools.map_result(tool, &v).into_owned()),
            Ended::Failed(t) => Payload::Error(Value::from(
                self.tools.map_error(tool, without_loopguard_notes(&t)),
            )),
        }
    }

    /// A prompt: a new run when the current one made calls; calls still waiting are
    /// replayed without an outcome.
    pub(crate) fn prompt(&mut self, out: &mut Vec<SourcedEvent>) {
        let from = out.len();
        self.tracker.end_turn(out);
        mark(out, from);
        self.runs.boundary();
    }

    /// A compaction of the current run.
    pub(crate) fn compaction(&mut self, line: u64, ts: u64, out: &mut Vec<SourcedEvent>) {
        let run = self.runs.current();
        self.tracker.compaction(line, &run, ts, out);
    }

    /// The end of the log.
    pub(crate) fn finish(&mut self, out: &mut Vec<SourcedEvent>) -> Vec<Diagnostic> {
        let from = out.len();
        let diags = self.tracker.finish(out);
        mark(out, from);
        diags
    }
}

/// Events from `from` on are judged with the `claude-code` profile.
fn mark(out: &mut [SourcedEvent], from: usize) {
    for e in &mut out[from..] {
        e.profile = Some(PROFILE);
    }
}
